/*
 * libFuzzer target: the DigitalOcean provider's handling of what the API answers. The input is
 * split at "\n--\n" into successive HTTP answers; the first byte of each chooses the status and
 * the headers (rate limits, retry-after, malformed ones), the rest is the body. A fake host
 * hands them out in order, so the fuzzer can build multi-call flows (pages of sizes, a key
 * import before a create, a lost create looked for by tag). Every operation runs once per
 * input, and the whole input is also read as doctl's config file.
 */
#include "digitalocean.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct script {
    const char *data;
    size_t size, pos;
} script;

static script current;

static const long statuses[] = {200, 200, 200, 201, 202, 204, 401, 403,
                                404, 422, 429, 500, 503, 302};
#define N_STATUSES (sizeof(statuses) / sizeof(statuses[0]))

static const sp_http_header header_sets[4][3] = {
    {{NULL, NULL}},
    {{"ratelimit-limit", "100"}, {"ratelimit-remaining", "1"}, {"ratelimit-reset", "1"}},
    {{"retry-after", "0"}, {"ratelimit-reset", "99999999999999999999"}},
    {{"RateLimit-Limit", "x"}, {"retry-after", "-5"}, {"ratelimit-remaining", ""}},
};

static int fake_http(const sp_host *host, const sp_http_request *req, sp_http_response *resp,
                     sp_err *err)
{
    (void)host;
    (void)req;
    memset(resp, 0, sizeof(*resp));
    if (current.pos >= current.size)
        return sp_err_set(err, SP_E_NETWORK, "script exhausted");
    const char *start = current.data + current.pos;
    size_t left = current.size - current.pos;
    const char *sep = NULL;
    for (size_t i = 0; i + 4 <= left; i++)
        if (memcmp(start + i, "\n--\n", 4) == 0) {
            sep = start + i;
            break;
        }
    size_t len = sep ? (size_t)(sep - start) : left;
    current.pos += len + (sep ? 4 : 0);
    unsigned char first = len ? (unsigned char)start[0] : 0;
    resp->status = statuses[first % N_STATUSES];
    const sp_http_header *hs = header_sets[(first / N_STATUSES) % 4];
    size_t nh = 0;
    while (nh < 3 && hs[nh].name)
        nh++;
    if (nh) {
        resp->headers = malloc(nh * sizeof(sp_http_header));
        if (!resp->headers)
            return SP_E_NOMEM;
        memcpy(resp->headers, hs, nh * sizeof(sp_http_header));
        resp->n_headers = nh;
    }
    resp->body = malloc(len + 1);
    if (!resp->body) {
        free(resp->headers);
        return SP_E_NOMEM;
    }
    if (len > 1)
        memcpy(resp->body, start + 1, len - 1);
    resp->body_len = len > 1 ? len - 1 : 0;
    resp->body[resp->body_len] = '\0';
    return SP_OK;
}

static void fake_free(const sp_host *host, sp_http_response *resp)
{
    (void)host;
    free(resp->body);
    free(resp->headers);
    memset(resp, 0, sizeof(*resp));
}

static const char *fake_getenv(const sp_host *host, const char *name)
{
    (void)host;
    static const char *const env[][2] = {
        {"DIGITALOCEAN_TOKEN", "dop_v1_fuzz0123456789abcdef0123456789abcdef0123456789abcdef0123"},
        {"DIGITALOCEAN_API_URL", "http://127.0.0.1:9"},
        {"DIGITALOCEAN_MAX_ATTEMPTS", "2"},
        {"SKYPOOL_DO_BACKOFF_MS", "0"},
        {"SKYPOOL_DO_MAX_WAIT_S", "0"}, /* rate-limit waits are capped to nothing */
        {"HOME", "/nonexistent"},
    };
    for (size_t i = 0; i < sizeof(env) / sizeof(env[0]); i++)
        if (!strcmp(name, env[i][0]))
            return env[i][1];
    return NULL;
}

static int no_catalog(const sp_host *h, const char *p, const sp_offer_query *q,
                      sp_offer_sink *s, sp_err *e)
{
    (void)h, (void)p, (void)q, (void)s;
    return sp_err_set(e, SP_E_IO, "no catalog");
}

static int any_offer(sp_offer_sink *s, const sp_offer *o)
{
    (void)s, (void)o;
    return SP_OK;
}

static int any_note(sp_offer_sink *s, const char *m)
{
    (void)s, (void)m;
    return SP_OK;
}

static int any_node(sp_node_sink *s, const sp_node *n)
{
    (void)s, (void)n;
    return SP_OK;
}

static void *fake_alloc(const sp_host *h, size_t n)
{
    (void)h;
    return malloc(n);
}

static void fake_dealloc(const sp_host *h, void *p)
{
    (void)h;
    free(p);
}

#define KEY "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIDnnFbrBt7kNdBq20219J3PukjXZkYKmYLjVsVGcBZpu f"

static void run_launches(do_ctx *ctx, sp_offer *o)
{
    sp_tag tags[3][3];
    const char *names[] = {"f-0", "f-1", "f-2"}, *idx[] = {"0", "1", "2"};
    sp_launch_request reqs[3];
    const sp_launch_request *ptrs[3];
    for (int i = 0; i < 3; i++) {
        tags[i][0] = (sp_tag){"skypool:pool", "f"};
        tags[i][1] = (sp_tag){"skypool:pool-id", "pid"};
        tags[i][2] = (sp_tag){"skypool:node", idx[i]};
        reqs[i] = (sp_launch_request){.struct_size = sizeof(sp_launch_request), .offer = o,
                                      .name = names[i], .tags = tags[i], .n_tags = 3,
                                      .ssh_public_key = KEY, .user_data = "x"};
        ptrs[i] = &reqs[i];
    }
    sp_node nodes[3];
    sp_err errs[3];
    do_launch(ctx, &reqs[0], &nodes[0], &errs[0]);
    do_launch_batch(ctx, ptrs, 3, nodes, errs);
}

static void run_all(do_ctx *ctx)
{
    const char *regions[] = {"nyc2"};
    sp_offer_sink sink = {sizeof(sink), NULL, any_offer, any_note};
    sp_err err;
    do_refresh_offers(ctx, NULL, 0, &sink, &err);
    do_refresh_offers(ctx, regions, 1, &sink, &err);
    sp_offer o = {.struct_size = sizeof(o), .region = "nyc2", .zone = "",
                  .instance_type = "gpu-h100x8-640gb", .accelerator = "H100-SXM",
                  .accel_count = 8, .arch = "x86_64"};
    sp_quota_query q = {sizeof(q), &o, 2, SP_MARKET_ON_DEMAND};
    sp_quota_report r;
    do_quota(ctx, &q, &r, &err);
    do_availability(ctx, &o, SP_MARKET_ON_DEMAND, &err);
    run_launches(ctx, &o);
    sp_tag tags[] = {{"skypool:pool", "f"}, {"skypool:pool-id", "pid"}};
    sp_node_filter f = {sizeof(f), tags, 2, regions, 1};
    sp_node_sink ns = {sizeof(ns), NULL, any_node};
    do_describe_nodes(ctx, &f, &ns, &err);
    sp_node n = {.struct_size = sizeof(n), .id = "3164444", .region = "nyc2"};
    sp_ssh_target t;
    do_ssh_target(ctx, &n, &t, &err); /* no address: GET /v2/droplets/<id> */
    do_terminate(ctx, &n, &err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static sp_host host;
    static do_ctx ctx;
    if (!host.struct_size) {
        host = (sp_host){.abi_major = SP_PROVIDER_ABI_MAJOR, .struct_size = sizeof(host),
                         .getenv = fake_getenv, .http = fake_http,
                         .http_response_free = fake_free, .catalog_query = no_catalog,
                         .alloc = fake_alloc, .free = fake_dealloc};
        do_ctx_init(&ctx, &host);
    }
    ctx.n_keys = 0; /* every input imports its key afresh */
    ctx.pause_until_ms = 0;
    current = (script){(const char *)data, size, 0};
    run_all(&ctx);
    do_config cfg;
    sp_err err;
    do_doctl_parse((const char *)data, size, NULL, "fuzz", &cfg, &err);
    do_config_wipe(&cfg);
    return 0;
}
