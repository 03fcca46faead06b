/*
 * AWS provider: EC2 GPU, Trainium and Inferentia instances, on-demand and spot.
 *
 * Offers come from the host's catalog for "aws"; refresh_offers fetches them live from EC2.
 * Every request goes through the host's HTTP service, signed with SigV4 (sigv4.c) using the
 * credentials the AWS SDKs would find (config.c).
 */
#include "aws.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_MAX_ATTEMPTS 5
#define DEFAULT_BACKOFF_BASE_MS 200
#define DEFAULT_BACKOFF_CAP_MS 5000

static int aws_offers(void *ctx, const sp_offer_query *q, sp_offer_sink *sink, sp_err *err)
{
    const sp_host *host = ((aws_ctx *)ctx)->host;
    return host->catalog_query(host, "aws", q, sink, err);
}

/* A whole number from the environment within [lo, hi], else dflt. */
static unsigned env_uint(const sp_host *host, const char *name, unsigned dflt, unsigned lo,
                         unsigned hi)
{
    const char *v = host->getenv(host, name);
    char *end;
    unsigned long n = v && *v ? strtoul(v, &end, 10) : 0;
    if (!v || !*v || *end || n < lo || n > hi)
        return dflt;
    return (unsigned)n;
}

/* Credentials are usable when EC2 accepts them: DescribeRegions is the cheapest signed call. */
static int aws_check_credentials(void *vctx, char *source, size_t size, sp_err *err)
{
    aws_ctx *ctx = vctx;
    if (ctx->cfg_status != SP_OK)
        return sp_err_set(err, ctx->cfg_status, "%s", ctx->cfg_err.msg);
    if (!ctx->cfg.creds.access_key_id[0])
        return sp_err_set(err, SP_E_AUTH, "%s", ctx->cfg.why_no_creds);
    snprintf(source, size, "%s", ctx->cfg.creds.source);
    const char *region = ctx->cfg.region[0] ? ctx->cfg.region : "us-east-1";
    aws_xml_doc *doc = NULL;
    aws_error e;
    sp_err call_err = {0};
    int rc = aws_ec2_call(ctx, region, "DescribeRegions", NULL, false, &doc, &e, &call_err);
    aws_xml_free(doc);
    if (rc == SP_E_AUTH)
        return sp_err_set(err, rc, "credentials from %s were refused: %s", ctx->cfg.creds.source,
                          call_err.msg);
    if (rc)
        *err = call_err;
    return rc;
}

static void aws_fini(void *vctx)
{
    aws_ctx *ctx = vctx;
    const sp_host *host = ctx->host;
    memset(&ctx->cfg, 0, sizeof(ctx->cfg)); /* no secrets left in freed memory */
    pthread_mutex_destroy(&ctx->setup_lock);
    host->free(host, ctx);
}

static const sp_provider aws_table = {
    .abi_major = SP_PROVIDER_ABI_MAJOR,
    .struct_size = sizeof(sp_provider),
    .name = "aws",
    .version = "0.2.0",
    .description = "Amazon EC2: GPU, Trainium and Inferentia instances, on-demand and spot",
    .kind = SP_KIND_VM_SSH,
    .caps = SP_CAP_SPOT | SP_CAP_ZONES | SP_CAP_MIG | SP_CAP_LIVE_OFFERS | SP_CAP_QUOTA |
            SP_CAP_LAUNCH,
    .fini = aws_fini,
    .offers = aws_offers,
    .refresh_offers = aws_refresh_offers,
    .quota = aws_quota,
    .availability = aws_availability,
    .launch = aws_launch,
    .describe_nodes = aws_describe_nodes,
    .terminate = aws_terminate,
    .ssh_target = aws_ssh_target,
    .check_credentials = aws_check_credentials,
};

SP_EXPORT int sp_provider_init(const sp_host *host, const sp_provider **table, void **vctx,
                               char **errmsg)
{
    (void)errmsg;
    if (host->abi_major != SP_PROVIDER_ABI_MAJOR)
        return SP_E_ABI;
    aws_ctx *ctx = host->alloc(host, sizeof(*ctx));
    if (!ctx)
        return SP_E_NOMEM;
    memset(ctx, 0, sizeof(*ctx));
    ctx->host = host;
    pthread_mutex_init(&ctx->setup_lock, NULL);
    /* Missing credentials are not an error here: offers from the catalog need none. */
    ctx->cfg_status = aws_config_load(host, &ctx->cfg, &ctx->cfg_err);
    ctx->max_attempts = env_uint(host, "AWS_MAX_ATTEMPTS", DEFAULT_MAX_ATTEMPTS, 1, 20);
    ctx->backoff_base_ms = env_uint(host, "SKYPOOL_AWS_BACKOFF_MS", DEFAULT_BACKOFF_BASE_MS, 0,
                                    60000);
    ctx->backoff_cap_ms = DEFAULT_BACKOFF_CAP_MS;
    ctx->page_size = env_uint(host, "SKYPOOL_AWS_PAGE_SIZE", 0, 5, 1000);
    *table = &aws_table;
    *vctx = ctx;
    return SP_OK;
}
