/*
 * DigitalOcean provider. GPU droplets come with 1 or 8 GPUs and only at on-demand prices; offers
 * come from the host's catalog for "digitalocean". The API calls (sizes, droplets, account) are
 * not in this plugin yet: those slots are NULL.
 */
#include <skypool/provider.h>

#include <stdbool.h>
#include <stdio.h>

typedef struct do_ctx {
    const sp_host *host;
} do_ctx;

static int do_offers(void *ctx, const sp_offer_query *q, sp_offer_sink *sink, sp_err *err)
{
    const sp_host *host = ((do_ctx *)ctx)->host;
    if (!sp_catalog_count_any(host, "digitalocean", q))
        return SP_OK; /* no such GPU here at all: the host says so */
    if (q->want_spot)
        return sink->note(sink, "DigitalOcean has no spot market: GPU droplets are on-demand "
                                "only; use spot: spot-then-on-demand or on-demand to include it");
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

static void do_fini(void *ctx)
{
    do_ctx *c = ctx;
    c->host->free(c->host, c);
}

static const sp_provider do_table = {
    .abi_major = SP_PROVIDER_ABI_MAJOR,
    .struct_size = sizeof(sp_provider),
    .name = "digitalocean",
    .version = "0.1.0",
    .description = "DigitalOcean GPU droplets (NVIDIA and AMD), on-demand",
    .kind = SP_KIND_VM_SSH,
    .caps = SP_CAP_MIG, /* root on a VM with whole GPUs passed through */
    .fini = do_fini,
    .offers = do_offers,
};

SP_EXPORT int sp_provider_init(const sp_host *host, const sp_provider **table, void **ctx,
                               char **errmsg)
{
    (void)errmsg;
    if (host->abi_major != SP_PROVIDER_ABI_MAJOR)
        return SP_E_ABI;
    do_ctx *c = host->alloc(host, sizeof(*c));
    if (!c)
        return SP_E_NOMEM;
    c->host = host;
    *table = &do_table;
    *ctx = c;
    return SP_OK;
}
