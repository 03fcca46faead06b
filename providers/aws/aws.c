/*
 * AWS provider. Offers come from the host's catalog for "aws" (bundled, or refreshed live).
 * Quota, launch and the node operations are not in this plugin yet: their slots are NULL, which
 * the host reports as "not supported by this provider".
 */
#include <skypool/provider.h>

#include <stdlib.h>

typedef struct aws_ctx {
    const sp_host *host;
} aws_ctx;

static int aws_offers(void *ctx, const sp_offer_query *q, sp_offer_sink *sink, sp_err *err)
{
    const sp_host *host = ((aws_ctx *)ctx)->host;
    return host->catalog_query(host, "aws", q, sink, err);
}

static void aws_fini(void *ctx)
{
    aws_ctx *c = ctx;
    c->host->free(c->host, c);
}

static const sp_provider aws_table = {
    .abi_major = SP_PROVIDER_ABI_MAJOR,
    .struct_size = sizeof(sp_provider),
    .name = "aws",
    .version = "0.1.0",
    .description = "Amazon EC2: GPU, Trainium and Inferentia instances, on-demand and spot",
    .kind = SP_KIND_VM_SSH,
    .caps = SP_CAP_SPOT | SP_CAP_ZONES | SP_CAP_MIG,
    .fini = aws_fini,
    .offers = aws_offers,
};

SP_EXPORT int sp_provider_init(const sp_host *host, const sp_provider **table, void **ctx,
                               char **errmsg)
{
    (void)errmsg;
    if (host->abi_major != SP_PROVIDER_ABI_MAJOR)
        return SP_E_ABI;
    aws_ctx *c = host->alloc(host, sizeof(*c));
    if (!c)
        return SP_E_NOMEM;
    c->host = host;
    *table = &aws_table;
    *ctx = c;
    return SP_OK;
}
