/* Collecting offers from providers, ranking them, and planning a pool (internal). */
#ifndef SKYPOOL_PLAN_H
#define SKYPOOL_PLAN_H

#include "registry.h"

typedef struct sp_cand {
    sp_offer offer;            /* strings are interned in the set's pool */
    unsigned term;             /* which term of the spec it answers */
    sp_market market;
    double node_price;         /* USD/h for one node in that market */
    double pool_price;         /* node_price * nodes */
    bool over_budget;
    unsigned provider_rank;    /* order of preference */
    unsigned region_rank;
} sp_cand;

typedef struct sp_strpool sp_strpool;

typedef struct sp_offer_set {
    sp_cand *items;
    size_t n, cap;
    char **notes;              /* "provider: message", each once */
    size_t n_notes, cap_notes;
    size_t unpriced;           /* offers left out because the market has no price for them */
    size_t too_small;          /* offers left out by the pool's cpus/memory */
    size_t no_mig;             /* offers left out because their GPU cannot take the MIG layout */
    sp_strpool *strings;
} sp_offer_set;

typedef struct sp_offers_request {
    const sp_spec *spec;
    sp_spot_policy spot;
    const char *const *providers; /* allowed, in order of preference; n == 0: all loaded */
    size_t n_providers;
    const char *const *regions;   /* allowed, in order of preference; n == 0: all */
    size_t n_regions;
    unsigned nodes;               /* >= 1 */
    double max_hourly_usd;        /* 0: no budget */
    sp_amount cpus;
    sp_amount memory_gib;
    const char *const *mig;       /* MIG layout per GPU; offers whose GPU cannot take it are
                                     left out */
    size_t n_mig;
} sp_offers_request;

/* The request a pool file makes. */
void sp_offers_request_of_pool(const sp_pool *pool, sp_offers_request *req);

/* Asks every allowed provider for offers for every term and market the request allows, then
 * ranks them: by term for ordered specs, spot before on-demand for spot-then-on-demand, then by
 * price, provider and region preference. Unknown provider names fail with a suggestion. */
int sp_offers_collect(sp_registry *reg, const sp_offers_request *req, sp_offer_set *set,
                      sp_err *err);
void sp_offer_set_free(sp_offer_set *set);

/* The first candidate within budget, or NULL. */
const sp_cand *sp_offer_set_first(const sp_offer_set *set);

#endif
