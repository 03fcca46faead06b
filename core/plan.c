/* Offers from every allowed provider for every term, filtered and ranked. */
#include "plan.h"

#include "strpool.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

#define COUNT_PROBE_MAX 1024

typedef struct collect_ctx {
    sp_offer_set *set;
    const sp_offers_request *req;
    const sp_plugin *plugin;
    unsigned term;
    sp_market market;
    unsigned provider_rank;
    size_t emitted;
    size_t noted;
    bool quiet;                /* a pass whose notes the next pass makes moot */
    int status;
} collect_ctx;

static unsigned region_rank(const sp_offers_request *req, const char *region)
{
    for (size_t i = 0; i < req->n_regions; i++)
        if (strcmp(req->regions[i], region) == 0)
            return (unsigned)i;
    return (unsigned)req->n_regions;
}

static bool big_enough(const sp_offers_request *req, const sp_offer *o)
{
    /* An unknown figure (0) is not held against the offer: the provider did not say. */
    if (req->cpus.value && o->vcpus && o->vcpus < req->cpus.value)
        return false;
    if (req->cpus.value && !req->cpus.at_least && o->vcpus && o->vcpus != req->cpus.value)
        return false;
    unsigned mem_gib = o->mem_mib / 1024;
    if (req->memory_gib.value && o->mem_mib && mem_gib < req->memory_gib.value)
        return false;
    return true;
}

static bool takes_mig_layout(const sp_offers_request *req, const sp_offer *o)
{
    if (!req->n_mig)
        return true;
    sp_mig_layout layout;
    sp_err ignored;
    return sp_mig_layout_parse(o->accelerator, req->mig, req->n_mig, &layout, &ignored) == SP_OK;
}

static bool set_reserve(sp_offer_set *set)
{
    if (set->n < set->cap)
        return true;
    size_t cap = set->cap ? set->cap * 2 : 64;
    sp_cand *items = realloc(set->items, cap * sizeof(*items));
    if (!items)
        return false;
    set->items = items;
    set->cap = cap;
    return true;
}

static bool intern_offer(sp_strpool *sp, sp_offer *o)
{
    const char **fields[] = {&o->provider, &o->region, &o->zone, &o->instance_type,
                             &o->accelerator, &o->arch};
    for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
        const char *s = *fields[i] ? *fields[i] : "";
        if (!(*fields[i] = sp_strpool_intern(sp, s)))
            return false;
    }
    return true;
}

static int on_offer(sp_offer_sink *sink, const sp_offer *offer)
{
    collect_ctx *c = sink->opaque;
    c->emitted++;
    double price = c->market == SP_MARKET_SPOT ? offer->price_spot : offer->price_on_demand;
    if (price < 0) {
        c->set->unpriced++;
        return SP_OK;
    }
    if (!big_enough(c->req, offer)) {
        c->set->too_small++;
        return SP_OK;
    }
    if (!takes_mig_layout(c->req, offer)) {
        c->set->no_mig++;
        return SP_OK;
    }
    if (!set_reserve(c->set))
        return c->status = SP_E_NOMEM;
    sp_cand *k = &c->set->items[c->set->n];
    memset(k, 0, sizeof(*k));
    k->offer = *offer;
    k->offer.struct_size = sizeof(k->offer);
    k->offer.provider = c->plugin->table.name;
    if (!intern_offer(c->set->strings, &k->offer))
        return c->status = SP_E_NOMEM;
    k->term = c->term;
    k->market = c->market;
    k->node_price = price;
    k->pool_price = price * c->req->nodes;
    k->over_budget = c->req->max_hourly_usd > 0 && k->pool_price > c->req->max_hourly_usd + 1e-9;
    k->provider_rank = c->provider_rank;
    k->region_rank = region_rank(c->req, k->offer.region);
    c->set->n++;
    return SP_OK;
}

static int add_note(sp_offer_set *set, const char *provider, const char *msg)
{
    sp_buf b;
    sp_buf_init(&b);
    sp_buf_printf(&b, "%s: %s", provider, msg);
    char *note = sp_buf_take(&b);
    if (!note)
        return SP_E_NOMEM;
    for (size_t i = 0; i < set->n_notes; i++)
        if (strcmp(set->notes[i], note) == 0) {
            free(note);
            return SP_OK;
        }
    if (set->n_notes == set->cap_notes) {
        size_t cap = set->cap_notes ? set->cap_notes * 2 : 8;
        char **notes = realloc(set->notes, cap * sizeof(*notes));
        if (!notes) {
            free(note);
            return SP_E_NOMEM;
        }
        set->notes = notes;
        set->cap_notes = cap;
    }
    set->notes[set->n_notes++] = note;
    return SP_OK;
}

static int on_note(sp_offer_sink *sink, const char *message)
{
    collect_ctx *c = sink->opaque;
    c->noted++;
    if (c->quiet)
        return SP_OK;
    int rc = add_note(c->set, c->plugin->table.name, message);
    return rc ? (c->status = rc) : SP_OK;
}

static void fill_query(const sp_offers_request *req, const sp_spec_term *t, sp_market market,
                       const char **keys, sp_offer_query *q)
{
    memset(q, 0, sizeof(*q));
    q->struct_size = sizeof(*q);
    for (unsigned i = 0; i < t->n_models; i++)
        keys[i] = t->models[i]->key;
    q->models = keys;
    q->n_models = t->n_models;
    q->count_min = t->count_min;
    q->count_max = t->count_max;
    q->exact = t->exact;
    q->want_spot = market == SP_MARKET_SPOT;
    q->regions = req->regions;
    q->n_regions = req->n_regions;
}

/* Counts a provider does sell for the term's models, as "1, 8", to explain an empty answer. */
typedef struct probe_ctx {
    bool seen[COUNT_PROBE_MAX + 1];
} probe_ctx;

static int on_probe(sp_offer_sink *sink, const sp_offer *offer)
{
    probe_ctx *p = sink->opaque;
    if (offer->accel_count <= COUNT_PROBE_MAX)
        p->seen[offer->accel_count] = true;
    return SP_OK;
}

static int on_probe_note(sp_offer_sink *sink, const char *message)
{
    (void)sink;
    (void)message;
    return SP_OK;
}

static int explain_empty(collect_ctx *c, const sp_offer_query *q0, const sp_spec_term *t)
{
    sp_offer_query q = *q0;
    q.count_min = 1;
    q.count_max = COUNT_PROBE_MAX;
    probe_ctx *p = calloc(1, sizeof(*p));
    if (!p)
        return SP_E_NOMEM;
    sp_offer_sink sink = {sizeof(sink), p, on_probe, on_probe_note};
    sp_err ignored = {0};
    c->plugin->table.offers(c->plugin->ctx, &q, &sink, &ignored);
    sp_buf b;
    sp_buf_init(&b);
    for (unsigned n = 1; n <= COUNT_PROBE_MAX; n++)
        if (p->seen[n])
            sp_buf_printf(&b, "%s%u", b.len ? ", " : "", n);
    free(p);
    char msg[SP_ERR_MSG_MAX], asked[32];
    const char *where = q.n_regions ? " in the allowed regions" : "";
    const char *market = q.want_spot ? " on spot" : "";
    if (t->count_min == t->count_max)
        snprintf(asked, sizeof(asked), "%u", t->count_min);
    else
        snprintf(asked, sizeof(asked), "%u..%u", t->count_min, t->count_max);
    if (b.len)
        snprintf(msg, sizeof(msg), "has %s%s%s only with %s per node, not %s", t->name, market,
                 where, b.data, asked);
    else
        snprintf(msg, sizeof(msg), "has no %s%s%s", t->name, market, where);
    sp_buf_free(&b);
    return add_note(c->set, c->plugin->table.name, msg);
}

static int ask_provider(collect_ctx *c, const sp_spec_term *t, sp_err *err)
{
    const char *keys[SP_SPEC_MAX_MODELS];
    sp_offer_query q;
    fill_query(c->req, t, c->market, keys, &q);
    if (!c->plugin->table.offers)
        return add_note(c->set, c->plugin->table.name, "serves no offers");
    if (c->req->n_mig && !(c->plugin->table.caps & SP_CAP_MIG))
        return add_note(c->set, c->plugin->table.name,
                        "cannot partition GPUs with MIG, so it was left out");
    sp_offer_sink sink = {sizeof(sink), c, on_offer, on_note};
    c->emitted = c->noted = 0;
    c->status = SP_OK;
    int rc = c->plugin->table.offers(c->plugin->ctx, &q, &sink, err);
    if (c->status)
        return sp_err_set(err, c->status, "%s", sp_strerror(c->status));
    if (rc) {
        /* One provider failing (a bad catalog, say) must not hide the others' offers. */
        return add_note(c->set, c->plugin->table.name, err ? err->msg : sp_strerror(rc));
    }
    return c->emitted || c->noted || c->quiet ? SP_OK : explain_empty(c, &q, t);
}

static int find_provider(sp_registry *reg, const char *name, const sp_plugin **out, sp_err *err)
{
    if ((*out = sp_registry_find(reg, name)))
        return SP_OK;
    const char *names[SP_REGISTRY_MAX_PLUGINS];
    for (size_t i = 0; i < reg->n_plugins; i++)
        names[i] = reg->plugins[i].table.name;
    const char *hint = sp_suggest(name, names, reg->n_plugins);
    sp_buf known;
    sp_buf_init(&known);
    for (size_t i = 0; i < reg->n_plugins; i++)
        sp_buf_printf(&known, "%s%s", i ? ", " : "", names[i]);
    int rc = hint ? sp_err_set(err, SP_E_NOTFOUND, "unknown provider '%s'; did you mean %s?",
                               name, hint)
                  : sp_err_set(err, SP_E_NOTFOUND,
                               "unknown provider '%s'; loaded providers: %s (see skypool "
                               "providers)",
                               name, known.data ? known.data : "none");
    sp_buf_free(&known);
    return rc;
}

static int markets_of(sp_spot_policy p, sp_market *m)
{
    if (p == SP_SPOT_ONLY) {
        m[0] = SP_MARKET_SPOT;
        return 1;
    }
    if (p == SP_SPOT_THEN_ON_DEMAND) {
        m[0] = SP_MARKET_SPOT;
        m[1] = SP_MARKET_ON_DEMAND;
        return 2;
    }
    m[0] = SP_MARKET_ON_DEMAND;
    return 1;
}

static int collect_provider(sp_registry *reg, collect_ctx *c, const sp_spec *spec, sp_err *err)
{
    sp_market markets[2];
    int n_markets = markets_of(c->req->spot, markets);
    (void)reg;
    for (unsigned t = 0; t < spec->n_terms; t++)
        for (int m = 0; m < n_markets; m++) {
            c->term = t;
            c->market = markets[m];
            /* Spot, then on-demand: why a provider has no spot is moot if on-demand follows. */
            c->quiet = m + 1 < n_markets;
            int rc = ask_provider(c, &spec->terms[t], err);
            if (rc)
                return rc;
        }
    return SP_OK;
}

static sp_spec_kind g_sort_kind;

static int cmp_double(double a, double b)
{
    return a < b ? -1 : a > b;
}

static int cmp_cand(const void *pa, const void *pb)
{
    const sp_cand *a = pa, *b = pb;
    int d;
    if (a->over_budget != b->over_budget) /* never tried, so listed last */
        return a->over_budget ? 1 : -1;
    if (g_sort_kind == SP_SPEC_ORDERED && a->term != b->term)
        return a->term < b->term ? -1 : 1;
    if (a->market != b->market) /* spot is tried first when both are allowed */
        return a->market == SP_MARKET_SPOT ? -1 : 1;
    if ((d = cmp_double(a->node_price, b->node_price)))
        return d;
    if (a->provider_rank != b->provider_rank)
        return a->provider_rank < b->provider_rank ? -1 : 1;
    if (a->region_rank != b->region_rank)
        return a->region_rank < b->region_rank ? -1 : 1;
    if ((d = strcmp(a->offer.region, b->offer.region)))
        return d;
    if ((d = strcmp(a->offer.zone, b->offer.zone)))
        return d;
    return strcmp(a->offer.instance_type, b->offer.instance_type);
}

static int collect_all(sp_registry *reg, const sp_offers_request *req, sp_offer_set *set,
                       sp_err *err)
{
    collect_ctx c = {.set = set, .req = req};
    size_t n = req->n_providers ? req->n_providers : reg->n_plugins;
    for (size_t i = 0; i < n; i++) {
        const sp_plugin *p = &reg->plugins[i];
        if (req->n_providers) {
            int rc = find_provider(reg, req->providers[i], &p, err);
            if (rc)
                return rc;
        }
        c.plugin = p;
        c.provider_rank = (unsigned)i;
        int rc = collect_provider(reg, &c, req->spec, err);
        if (rc)
            return rc;
    }
    return SP_OK;
}

int sp_offers_collect(sp_registry *reg, const sp_offers_request *req, sp_offer_set *set,
                      sp_err *err)
{
    memset(set, 0, sizeof(*set));
    if (!(set->strings = sp_strpool_new()))
        return sp_err_set(err, SP_E_NOMEM, "out of memory");
    int rc = collect_all(reg, req, set, err);
    if (rc) {
        sp_offer_set_free(set);
        return rc;
    }
    /* qsort takes no context argument; the kind is set just before and read only inside. */
    g_sort_kind = req->spec->kind;
    if (set->n > 1)
        qsort(set->items, set->n, sizeof(set->items[0]), cmp_cand);
    return SP_OK;
}

void sp_offer_set_free(sp_offer_set *set)
{
    free(set->items);
    for (size_t i = 0; i < set->n_notes; i++)
        free(set->notes[i]);
    free(set->notes);
    sp_strpool_free(set->strings);
    memset(set, 0, sizeof(*set));
}

const sp_cand *sp_offer_set_first(const sp_offer_set *set)
{
    for (size_t i = 0; i < set->n; i++)
        if (!set->items[i].over_budget)
            return &set->items[i];
    return NULL;
}

void sp_offers_request_of_pool(const sp_pool *pool, sp_offers_request *req)
{
    memset(req, 0, sizeof(*req));
    req->spec = &pool->accelerators;
    req->spot = pool->spot;
    req->providers = (const char *const *)pool->providers;
    req->n_providers = pool->n_providers;
    req->regions = (const char *const *)pool->regions;
    req->n_regions = pool->n_regions;
    req->nodes = pool->nodes;
    req->max_hourly_usd = pool->max_hourly_usd;
    req->cpus = pool->cpus;
    req->memory_gib = pool->memory_gib;
    req->mig = (const char *const *)pool->mig;
    req->n_mig = pool->n_mig;
}
