/*
 * Modal provider: a container cloud. A container gets 1 to 8 GPUs of one type, billed per
 * second at on-demand prices; Modal may run a request on a bigger GPU unless the type ends in
 * "!". Offers come from the host's catalog for "modal". Sandboxes and exec are not in this
 * plugin yet: those slots are NULL.
 */
#include <skypool/provider.h>

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#define MODAL_MAX_GPUS 8

typedef struct modal_ctx {
    const sp_host *host;
} modal_ctx;

static bool asks_for(const sp_offer_query *q, const char *model)
{
    for (size_t i = 0; i < q->n_models; i++)
        if (strcmp(q->models[i], model) == 0)
            return true;
    return false;
}

/* Modal's documented upgrades: H100 may run on H200, A100-40GB on A100-80GB. */
static int upgrade_note(const sp_offer_query *q, sp_offer_sink *sink)
{
    if (q->exact)
        return SP_OK;
    if (asks_for(q, "H100-SXM"))
        return sink->note(sink, "Modal may run H100 requests on H200; write "
                                "H100! to forbid the upgrade");
    if (asks_for(q, "A100-40GB"))
        return sink->note(sink, "Modal may run A100-40GB requests on A100-80GB; write A100! to "
                                "forbid the upgrade");
    return SP_OK;
}

static int modal_offers(void *ctx, const sp_offer_query *q, sp_offer_sink *sink, sp_err *err)
{
    const sp_host *host = ((modal_ctx *)ctx)->host;
    if (!sp_catalog_count_any(host, "modal", q))
        return SP_OK; /* no such GPU here at all: the host says so */
    if (q->want_spot)
        return sink->note(sink, "Modal has no spot market: GPUs are billed per second at one "
                                "price; use spot: spot-then-on-demand or on-demand to include it");
    if (q->count_min > MODAL_MAX_GPUS) {
        char msg[128];
        snprintf(msg, sizeof(msg),
                 "Modal gives a container at most %d GPUs, not %u; use more nodes of :%d",
                 MODAL_MAX_GPUS, q->count_min, MODAL_MAX_GPUS);
        return sink->note(sink, msg);
    }
    int rc = host->catalog_query(host, "modal", q, sink, err);
    return rc ? rc : upgrade_note(q, sink);
}

static void modal_fini(void *ctx)
{
    modal_ctx *c = ctx;
    c->host->free(c->host, c);
}

static const sp_provider modal_table = {
    .abi_major = SP_PROVIDER_ABI_MAJOR,
    .struct_size = sizeof(sp_provider),
    .name = "modal",
    .version = "0.1.0",
    .description = "Modal serverless GPU containers, 1 to 8 GPUs each, billed per second",
    .kind = SP_KIND_CONTAINER_EXEC,
    .caps = 0,
    .fini = modal_fini,
    .offers = modal_offers,
};

SP_EXPORT int sp_provider_init(const sp_host *host, const sp_provider **table, void **ctx,
                               char **errmsg)
{
    (void)errmsg;
    if (host->abi_major != SP_PROVIDER_ABI_MAJOR)
        return SP_E_ABI;
    modal_ctx *c = host->alloc(host, sizeof(*c));
    if (!c)
        return SP_E_NOMEM;
    c->host = host;
    *table = &modal_table;
    *ctx = c;
    return SP_OK;
}
