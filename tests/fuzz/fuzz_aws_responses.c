/*
 * libFuzzer target: the AWS provider's handling of what EC2 and Service Quotas answer. The
 * input is split at "\n--\n" into successive HTTP answers (a first byte chooses the status);
 * a fake host hands them out in order, so the fuzzer can build multi-call flows (pagination,
 * errors after success). Every operation runs once per input.
 */
#include "aws.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct script {
    const char *data;
    size_t size, pos;
} script;

static script current;

static const long statuses[] = {200, 200, 200, 200, 400, 401, 403, 404, 429, 500, 503};

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
    resp->status = len ? statuses[(unsigned char)start[0] % 11] : 200;
    resp->body = malloc(len + 1);
    if (!resp->body)
        return SP_E_NOMEM;
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
    memset(resp, 0, sizeof(*resp));
}

static const char *fake_getenv(const sp_host *host, const char *name)
{
    (void)host;
    if (!strcmp(name, "AWS_ACCESS_KEY_ID"))
        return "AKIDEXAMPLE";
    if (!strcmp(name, "AWS_SECRET_ACCESS_KEY"))
        return "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";
    if (!strcmp(name, "AWS_REGION"))
        return "us-east-1";
    if (!strcmp(name, "AWS_ENDPOINT_URL"))
        return "http://127.0.0.1:9";
    if (!strcmp(name, "AWS_CONFIG_FILE") || !strcmp(name, "AWS_SHARED_CREDENTIALS_FILE"))
        return "/nonexistent";
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

static void run_all(aws_ctx *ctx)
{
    const char *regions[] = {"us-east-1"};
    sp_offer_sink sink = {sizeof(sink), NULL, any_offer, any_note};
    sp_err err;
    aws_refresh_offers(ctx, regions, 1, &sink, &err);
    sp_offer o = {.struct_size = sizeof(o), .region = "us-east-1", .zone = "use1-az4",
                  .instance_type = "p5.48xlarge", .accelerator = "H100-SXM", .accel_count = 8,
                  .vcpus = 192, .arch = "x86_64"};
    sp_quota_query q = {sizeof(q), &o, 2, SP_MARKET_SPOT};
    sp_quota_report r;
    aws_quota(ctx, &q, &r, &err);
    aws_availability(ctx, &o, SP_MARKET_ON_DEMAND, &err);
    sp_tag tags[] = {{"skypool:pool", "f"}};
    sp_launch_request lr = {.struct_size = sizeof(lr), .offer = &o, .market = SP_MARKET_SPOT,
                            .name = "f", .client_token = "t", .tags = tags, .n_tags = 1,
                            .ssh_public_key = "ssh-ed25519 AAAA f", .user_data = "x"};
    sp_node node;
    aws_launch(ctx, &lr, &node, &err);
    sp_node_filter f = {sizeof(f), tags, 1, regions, 1};
    sp_node_sink ns = {sizeof(ns), NULL, any_node};
    aws_describe_nodes(ctx, &f, &ns, &err);
    char *text = NULL;
    if (aws_console_output(ctx, "us-east-1", "i-1", &text, &err) == SP_OK)
        free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static sp_host host;
    static aws_ctx ctx;
    if (!host.struct_size) {
        host = (sp_host){.abi_major = SP_PROVIDER_ABI_MAJOR, .struct_size = sizeof(host),
                         .getenv = fake_getenv, .http = fake_http,
                         .http_response_free = fake_free, .catalog_query = no_catalog,
                         .alloc = fake_alloc, .free = fake_dealloc};
        ctx.host = &host;
        ctx.cfg_status = aws_config_load(&host, &ctx.cfg, &ctx.cfg_err);
        ctx.max_attempts = 2;
        ctx.backoff_base_ms = 0;
    }
    current = (script){(const char *)data, size, 0};
    run_all(&ctx);
    return 0;
}
