#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "fake_host.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fake_catalog_query(const sp_host *host, const char *provider,
                              const sp_offer_query *q, sp_offer_sink *sink, sp_err *err)
{
    (void)host;
    (void)err;
    check_expected(provider);
    check_expected(q->count_min);
    check_expected(q->count_max);
    check_expected(q->want_spot);
    int n = mock_type(int);
    sp_offer o = {.struct_size = sizeof(o), .region = "r1", .zone = "z1", .instance_type = "t",
                  .accelerator = "H100-SXM", .accel_count = q->count_min,
                  .accel_mem_mib = 81920, .price_on_demand = 1, .price_spot = -1, .arch = "x86_64"};
    for (int i = 0; i < n; i++) {
        int rc = sink->offer(sink, &o);
        if (rc)
            return rc;
    }
    return SP_OK;
}

static void fake_log(const sp_host *h, sp_log_level l, const char *p, const char *m)
{
    (void)h;
    (void)l;
    (void)p;
    (void)m;
}

static const char *fake_getenv(const sp_host *h, const char *name)
{
    (void)h;
    (void)name;
    return NULL;
}

static void *fake_alloc(const sp_host *h, size_t n)
{
    (void)h;
    return malloc(n);
}

static void fake_free(const sp_host *h, void *p)
{
    (void)h;
    free(p);
}

void fake_host_init(sp_registry *reg)
{
    memset(reg, 0, sizeof(*reg));
    reg->host.abi_major = SP_PROVIDER_ABI_MAJOR;
    reg->host.struct_size = sizeof(reg->host);
    reg->host.opaque = reg;
    reg->host.log = fake_log;
    reg->host.getenv = fake_getenv;
    reg->host.catalog_query = fake_catalog_query;
    reg->host.alloc = fake_alloc;
    reg->host.free = fake_free;
}

void fake_host_load(sp_registry *reg, const char *name, sp_plugin *plugin)
{
    char path[4096];
    const char *build = getenv("SKYPOOL_BUILD_DIR");
    snprintf(path, sizeof(path), "%s/providers/%s.so", build ? build : "build", name);
    sp_err err = {0};
    if (sp_plugin_load(reg, path, plugin, &err) != SP_OK)
        fail_msg("%s", err.msg);
}

static int on_offer(sp_offer_sink *sink, const sp_offer *o)
{
    (void)o;
    ((fake_sink *)sink->opaque)->offers++;
    return SP_OK;
}

static int on_note(sp_offer_sink *sink, const char *msg)
{
    fake_sink *s = sink->opaque;
    if (s->n_notes < 8)
        snprintf(s->notes[s->n_notes++], SP_ERR_MSG_MAX, "%s", msg);
    return SP_OK;
}

void fake_sink_init(fake_sink *s)
{
    memset(s, 0, sizeof(*s));
    s->sink = (sp_offer_sink){sizeof(s->sink), s, on_offer, on_note};
}
