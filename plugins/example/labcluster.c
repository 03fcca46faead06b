/*
 * labcluster: an example skypool provider for an on-premises GPU cluster.
 *
 * It shows the whole contract a third party needs: include <skypool/provider.h> and nothing
 * else from skypool, export sp_provider_init, hand back a table that starts with the ABI major
 * and its own size, and answer operations through the host's services. Its machines are a
 * static list here; a real one would ask its cluster's scheduler through host->http.
 */
#include <skypool/provider.h>

#include <stdbool.h>
#include <string.h>

typedef struct lab_machine {
    const char *rack;
    const char *accelerator; /* skypool model key, see `skypool accelerators` */
    uint32_t count;
    uint32_t mem_mib;
    uint32_t vcpus;
    uint32_t host_mem_gib;
    double price; /* internal chargeback, USD per hour */
} lab_machine;

static const lab_machine machines[] = {
    {"rack-a", "H100-SXM", 8, 81920, 192, 2048, 12.0},
    {"rack-b", "A100-80GB", 8, 81920, 96, 1152, 7.5},
    {"rack-c", "L40S", 4, 46068, 64, 512, 3.2},
};

typedef struct lab_ctx {
    const sp_host *host;
    const char *region;
} lab_ctx;

static bool wanted(const sp_offer_query *q, const lab_machine *m)
{
    if (m->count < q->count_min || m->count > q->count_max || m->mem_mib < q->mem_min_mib)
        return false;
    if (q->n_models == 0)
        return true;
    for (size_t i = 0; i < q->n_models; i++)
        if (strcmp(q->models[i], m->accelerator) == 0)
            return true;
    return false;
}

static int lab_offers(void *ctx, const sp_offer_query *q, sp_offer_sink *sink, sp_err *err)
{
    lab_ctx *c = ctx;
    (void)err;
    if (q->want_spot)
        return sink->note(sink, "the lab cluster has no spot market");
    for (size_t i = 0; i < sizeof(machines) / sizeof(machines[0]); i++) {
        const lab_machine *m = &machines[i];
        if (!wanted(q, m))
            continue;
        sp_offer o = {.struct_size = sizeof(o), .region = c->region, .zone = m->rack,
                      .instance_type = m->rack, .accelerator = m->accelerator,
                      .accel_count = m->count, .accel_mem_mib = m->mem_mib, .vcpus = m->vcpus,
                      .mem_mib = m->host_mem_gib * 1024, .price_on_demand = m->price,
                      .price_spot = SP_PRICE_UNKNOWN, .arch = "x86_64"};
        int rc = sink->offer(sink, &o);
        if (rc)
            return rc;
    }
    return SP_OK;
}

static void lab_fini(void *ctx)
{
    lab_ctx *c = ctx;
    c->host->free(c->host, c);
}

static const sp_provider lab_table = {
    .abi_major = SP_PROVIDER_ABI_MAJOR,
    .struct_size = sizeof(sp_provider),
    .name = "labcluster",
    .version = "1.0.0",
    .description = "Example: an on-premises GPU cluster",
    .kind = SP_KIND_VM_SSH,
    .fini = lab_fini,
    .offers = lab_offers,
};

SP_EXPORT int sp_provider_init(const sp_host *host, const sp_provider **table, void **ctx,
                               char **errmsg)
{
    (void)errmsg;
    if (host->abi_major != SP_PROVIDER_ABI_MAJOR)
        return SP_E_ABI;
    lab_ctx *c = host->alloc(host, sizeof(*c));
    if (!c)
        return SP_E_NOMEM;
    c->host = host;
    /* Settings come through the host, never straight from the environment. */
    const char *region = host->getenv(host, "LABCLUSTER_SITE");
    c->region = region && *region ? region : "lab-1";
    *table = &lab_table;
    *ctx = c;
    return SP_OK;
}
