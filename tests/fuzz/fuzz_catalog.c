/*
 * libFuzzer target for the catalog reader: any input must be refused with a message or parsed;
 * what parses must answer queries, and must survive sp_catalog_write and a second parse with
 * the same rows (the writer never produces what the reader refuses).
 */
#include "catalog.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct rows {
    sp_offer_sink sink;
    sp_offer *offers;
    char **strings; /* five per offer, owned */
    size_t n, cap;
} rows;

static char *dup_or_die(const char *s)
{
    char *d = strdup(s);
    if (!d)
        abort();
    return d;
}

static int keep_offer(sp_offer_sink *sink, const sp_offer *o)
{
    rows *r = sink->opaque;
    if (r->n == r->cap) {
        r->cap = r->cap ? r->cap * 2 : 16;
        r->offers = realloc(r->offers, r->cap * sizeof(*r->offers));
        r->strings = realloc(r->strings, r->cap * 5 * sizeof(*r->strings));
        if (!r->offers || !r->strings)
            abort();
    }
    char **s = &r->strings[r->n * 5];
    sp_offer *copy = &r->offers[r->n++];
    *copy = *o;
    copy->instance_type = s[0] = dup_or_die(o->instance_type);
    copy->accelerator = s[1] = dup_or_die(o->accelerator);
    copy->region = s[2] = dup_or_die(o->region);
    copy->zone = s[3] = dup_or_die(o->zone);
    copy->arch = s[4] = dup_or_die(o->arch);
    return 0;
}

static int count_offer(sp_offer_sink *sink, const sp_offer *o)
{
    size_t *n = sink->opaque;
    if (o->accel_count == 0 || !o->provider || strcmp(o->provider, "aws") != 0)
        abort();
    return ++*n == 5 ? 1 : 0; /* and stop early once */
}

static void rows_free(rows *r)
{
    for (size_t i = 0; i < r->n * 5; i++)
        free(r->strings[i]);
    free(r->strings);
    free(r->offers);
}

static void some_queries(const sp_catalog *cat)
{
    static const char *const models[] = {"H100-SXM", "l4"};
    static const char *const regions[] = {"us-east-1"};
    size_t n = 0;
    sp_offer_sink sink = {.struct_size = sizeof(sink), .opaque = &n, .offer = count_offer};
    sp_offer_query q = {.struct_size = sizeof(q), .models = models, .n_models = 2,
                        .count_min = 1, .count_max = 8, .mem_min_mib = 1024, .want_spot = 1,
                        .regions = regions, .n_regions = 1};
    sp_err err;
    sp_catalog_query(cat, &q, &sink, &err);
    q = (sp_offer_query){.struct_size = sizeof(q)};
    sp_catalog_query(cat, &q, &sink, &err);
}

/* Everything that parsed is written out and parsed again: the row count must hold. */
static void round_trip(const sp_catalog *cat)
{
    sp_catalog_info info;
    sp_catalog_info_get(cat, &info);
    rows r = {.sink = {.struct_size = sizeof(r.sink), .opaque = &r, .offer = keep_offer}};
    sp_offer_query all = {.struct_size = sizeof(all)};
    sp_err err;
    if (sp_catalog_query(cat, &all, &r.sink, &err) != SP_OK || r.n != info.n_rows)
        abort();
    char dir[] = "/tmp/fuzz-catalog-XXXXXX", path[64];
    if (!mkdtemp(dir))
        abort();
    snprintf(path, sizeof(path), "%s/aws.tsv", dir);
    int rc = sp_catalog_write(path, "aws", info.source, info.date, r.offers, r.n, &err);
    if (rc != SP_OK) {
        fprintf(stderr, "write refused what the reader accepted: %s\n", err.msg);
        abort();
    }
    sp_catalog *again = NULL;
    rc = sp_catalog_load("aws", dir, NULL, 0, &again, &err);
    unlink(path);
    rmdir(dir);
    if (rc != SP_OK) {
        fprintf(stderr, "reader refused what the writer wrote: %s\n", err.msg);
        abort();
    }
    sp_catalog_info_get(again, &info);
    if (info.n_rows != r.n)
        abort();
    sp_catalog_free(again);
    rows_free(&r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *buf = malloc(size + 1);
    if (!buf)
        return 0;
    memcpy(buf, data, size);
    buf[size] = '\0';
    sp_catalog *cat = NULL;
    sp_err err;
    if (sp_catalog_parse("aws", "fuzz", buf, size, &cat, &err) != SP_OK) {
        if (cat || strncmp(err.msg, "fuzz:", 5) != 0)
            abort();
        return 0;
    }
    some_queries(cat);
    round_trip(cat);
    sp_catalog_free(cat);
    return 0;
}
