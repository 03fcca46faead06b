/*
 * DigitalOcean provider: GPU droplets (NVIDIA and AMD), 1 or 8 GPUs each, on-demand only.
 *
 * Offers come from the host's catalog for "digitalocean"; refresh_offers fetches them live from
 * /v2/sizes. Every request goes through the host's HTTP service with the API token doctl would
 * use (doconfig.c); the client (doapi.c) handles rate limits, retries and errors.
 */
#include "digitalocean.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

static int do_offers(void *vctx, const sp_offer_query *q, sp_offer_sink *sink, sp_err *err)
{
    const sp_host *host = ((do_ctx *)vctx)->host;
    if (!sp_catalog_count_any(host, "digitalocean", q))
        return SP_OK; /* no such GPU here at all: the host says so */
    if (q->want_spot)
        return sink->note(sink, "DigitalOcean has no spot market: spot is not offered, GPU "
                                "droplets are on-demand only; use spot: spot-then-on-demand or "
                                "on-demand to include it");
    bool one = q->count_min <= 1 && 1 <= q->count_max;
    bool eight = q->count_min <= 8 && 8 <= q->count_max;
    if (!one && !eight) {
        char msg[160];
        if (q->count_min == q->count_max)
            snprintf(msg, sizeof(msg),
                     "DigitalOcean GPU droplets have 1 or 8 GPUs, not %u; ask for :1 or :8",
                     q->count_min);
        else
            snprintf(msg, sizeof(msg),
                     "DigitalOcean GPU droplets have 1 or 8 GPUs, not %u..%u; ask for :1 or :8",
                     q->count_min, q->count_max);
        return sink->note(sink, msg);
    }
    return host->catalog_query(host, "digitalocean", q, sink, err);
}

/* The token is usable when the API accepts it: GET /v2/account is the cheapest call. */
static int do_check_credentials(void *vctx, char *source, size_t size, sp_err *err)
{
    do_ctx *ctx = vctx;
    if (ctx->cfg_status)
        return sp_err_set(err, ctx->cfg_status, "%s", ctx->cfg_err.msg);
    if (!ctx->cfg.token[0])
        return sp_err_set(err, SP_E_AUTH, "%s", ctx->cfg.why_none);
    snprintf(source, size, "%s", ctx->cfg.source);
    do_request r = {"GET", "/v2/account", NULL, NULL, NULL, false};
    json_t *j;
    int rc = do_api(ctx, &r, &j, NULL, err);
    if (rc)
        return rc;
    const json_t *account = json_object_get(j, "account");
    if (!strcmp(do_str(account, "status"), "locked"))
        rc = sp_err_set(err, SP_E_PERM,
                        "digitalocean: the account of the token from %s is locked: %.200s; see "
                        "https://cloud.digitalocean.com/account",
                        ctx->cfg.source, do_str(account, "status_message"));
    json_decref(j);
    return rc;
}

static void do_fini(void *vctx)
{
    do_ctx *ctx = vctx;
    const sp_host *host = ctx->host;
    do_ctx_fini(ctx); /* no token left in freed memory */
    host->free(host, ctx);
}

static const sp_provider do_table = {
    .abi_major = SP_PROVIDER_ABI_MAJOR,
    .struct_size = sizeof(sp_provider),
    .name = "digitalocean",
    .version = "0.2.0",
    .description = "DigitalOcean GPU droplets (NVIDIA and AMD), on-demand",
    .kind = SP_KIND_VM_SSH,
    /* root on a VM with whole GPUs passed through: MIG is the user's to set up */
    .caps = SP_CAP_LIVE_OFFERS | SP_CAP_QUOTA | SP_CAP_LAUNCH | SP_CAP_MIG,
    .fini = do_fini,
    .offers = do_offers,
    .refresh_offers = do_refresh_offers,
    .quota = do_quota,
    .availability = do_availability,
    .launch = do_launch,
    .describe_nodes = do_describe_nodes,
    .terminate = do_terminate,
    .ssh_target = do_ssh_target,
    .check_credentials = do_check_credentials,
    .launch_batch = do_launch_batch,
    .launch_batch_max = DO_BATCH_MAX,
};

SP_EXPORT int sp_provider_init(const sp_host *host, const sp_provider **table, void **vctx,
                               char **errmsg)
{
    (void)errmsg;
    if (host->abi_major != SP_PROVIDER_ABI_MAJOR)
        return SP_E_ABI;
    do_ctx *ctx = host->alloc(host, sizeof(*ctx));
    if (!ctx)
        return SP_E_NOMEM;
    do_ctx_init(ctx, host); /* missing credentials are not an error: the catalog needs none */
    *table = &do_table;
    *vctx = ctx;
    return SP_OK;
}
