/*
 * DigitalOcean's one quota that governs a launch: the account's droplet limit (GET /v2/account),
 * against every droplet the account has. GET /v2/droplets leaves GPU droplets out unless asked
 * with type=gpus (the API reference, "List All Droplets": "By default, only non-GPU Droplets are
 * returned"), so the use is meta.total of both listings. Availability is /v2/sizes: the size
 * must be available and list the region.
 */
#include "digitalocean.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int droplet_limit(do_ctx *ctx, double *limit, sp_err *err)
{
    do_request r = {"GET", "/v2/account", NULL, NULL, NULL, false};
    json_t *j;
    int rc = do_api(ctx, &r, &j, NULL, err);
    if (rc)
        return rc;
    long long v = do_int(json_object_get(j, "account"), "droplet_limit", -1);
    json_decref(j);
    if (v < 0)
        return sp_err_set(err, SP_E_PROTOCOL,
                          "digitalocean: GET /v2/account: no account.droplet_limit in the answer");
    *limit = (double)v;
    return SP_OK;
}

/* Every droplet of the account: the plain listing's total plus the GPU listing's. */
static int droplets_in_use(do_ctx *ctx, double *used, sp_err *err)
{
    long long plain = 0, gpus = 0;
    int rc = do_count(ctx, "/v2/droplets", NULL, &plain, err);
    if (!rc)
        rc = do_count(ctx, "/v2/droplets", "type=gpus", &gpus, err);
    *used = (double)(plain + gpus);
    return rc;
}

static void fill_report(sp_quota_report *r, const sp_quota_query *q, double limit, double used)
{
    r->struct_size = sizeof(*r);
    snprintf(r->quota_name, sizeof(r->quota_name), "Droplet limit");
    r->quota_code[0] = '\0';
    snprintf(r->unit, sizeof(r->unit), "droplets");
    r->limit = limit;
    r->used = used;
    r->needed = q->nodes;
    r->verdict = used + r->needed <= limit ? SP_VERDICT_OK : SP_VERDICT_SHORT;
    if (r->verdict == SP_VERDICT_SHORT)
        snprintf(r->fix, sizeof(r->fix),
                 "ask DigitalOcean support for a droplet limit of at least %.0f (now %.0f, %.0f in "
                 "use): open a ticket at https://cloud.digitalocean.com/support/tickets",
                 used + r->needed, limit, used);
    else
        r->fix[0] = '\0';
}

int do_quota(void *vctx, const sp_quota_query *q, sp_quota_report *r, sp_err *err)
{
    do_ctx *ctx = vctx;
    memset(r, 0, sizeof(*r));
    if (q->market == SP_MARKET_SPOT)
        return sp_err_set(err, SP_E_UNSUPPORTED,
                          "digitalocean: no spot market, so no spot quota; GPU droplets are "
                          "on-demand only");
    double limit = 0, used = 0;
    int rc = droplet_limit(ctx, &limit, err);
    if (!rc)
        rc = droplets_in_use(ctx, &used, err);
    if (!rc)
        fill_report(r, q, limit, used);
    return rc;
}

typedef struct finder {
    const char *slug;
    bool found;
    do_size size;
    json_t *regions;           /* a copy: the listing's page is gone once found */
} finder;

static int find_size(const json_t *item, void *arg)
{
    finder *f = arg;
    if (f->found || strcmp(do_str(item, "slug"), f->slug) != 0)
        return SP_OK;
    f->found = true;
    do_read_size(item, &f->size);
    f->size.available = !json_is_false(json_object_get(item, "available"));
    f->regions = json_deep_copy(json_object_get(item, "regions"));
    f->size.regions = f->regions;
    return SP_OK;
}

/* "nyc2, tor1" into buf. */
static void list_regions(const json_t *regions, char *buf, size_t size)
{
    size_t i, len = 0;
    const json_t *r;
    buf[0] = '\0';
    json_array_foreach(regions, i, r) {
        const char *s = json_string_value(r);
        if (!s || len + strlen(s) + 3 >= size)
            continue;
        len += (size_t)snprintf(buf + len, size - len, "%s%s", len ? ", " : "", s);
    }
}

int do_availability(void *vctx, const sp_offer *offer, sp_market market, sp_err *err)
{
    do_ctx *ctx = vctx;
    if (market == SP_MARKET_SPOT)
        return sp_err_set(err, SP_E_CAPACITY, "digitalocean: spot is not offered; GPU droplets "
                                              "are on-demand only");
    finder f = {.slug = offer->instance_type};
    int rc = do_list(ctx, "/v2/sizes", NULL, "sizes", NULL, find_size, &f, NULL, err);
    if (rc) {
        json_decref(f.regions);
        return rc;
    }
    char where[256];
    list_regions(f.regions, where, sizeof(where));
    if (!f.found)
        rc = sp_err_set(err, SP_E_CAPACITY, "digitalocean: size %s is not sold any more",
                        offer->instance_type);
    else if (!f.size.available)
        rc = sp_err_set(err, SP_E_CAPACITY,
                        "digitalocean: size %s takes no new droplets now in any region",
                        offer->instance_type);
    else if (!do_size_in_region(&f.size, offer->region))
        rc = sp_err_set(err, SP_E_CAPACITY,
                        "digitalocean: size %s is not available in %s now%s%s",
                        offer->instance_type, offer->region, where[0] ? "; it is in " : "",
                        where);
    json_decref(f.regions);
    return rc;
}
