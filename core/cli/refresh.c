/* `--live`: refresh providers' catalogs from their APIs before answering. */
#include "cli.h"

#include "util.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_LIVE_REGIONS 64

static bool has(const char *const *list, size_t n, const char *s)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(list[i], s) == 0)
            return true;
    return false;
}

/* The regions where the catalog in use sells the request: where a live look is worth it. */
static size_t catalog_regions(const sp_offer_set *offline, const char *provider,
                              const char **out, size_t max)
{
    size_t n = 0;
    for (size_t i = 0; i < offline->n && n < max; i++) {
        const sp_offer *o = &offline->items[i].offer;
        if (strcmp(o->provider, provider) == 0 && *o->region && strcmp(o->region, "-") != 0 &&
            !has(out, n, o->region))
            out[n++] = o->region;
    }
    return n;
}

static double seconds_since(const struct timespec *t0)
{
    struct timespec t1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return (double)(t1.tv_sec - t0->tv_sec) + (double)(t1.tv_nsec - t0->tv_nsec) / 1e9;
}

static json_t *refresh_one(sp_registry *reg, const sp_plugin *p, const char **regions, size_t n,
                           bool quiet)
{
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    size_t rows = 0, n_notes = 0;
    char **notes = NULL;
    sp_err err = {0};
    int rc = sp_live_refresh(reg, p, regions, n, &rows, &notes, &n_notes, &err);
    double secs = seconds_since(&t0);
    json_t *j = json_pack("{s:s, s:I, s:I, s:f, s:b}", "provider", p->table.name, "regions",
                          (json_int_t)n, "rows", (json_int_t)rows, "seconds", secs, "ok", rc == 0);
    json_t *warn = json_array();
    for (size_t i = 0; i < n_notes; i++) {
        json_array_append_new(warn, json_string(notes[i]));
        if (!quiet)
            fprintf(stderr, "skypool: warning: %s: %s\n", p->table.name, notes[i]);
    }
    if (rc) {
        json_array_append_new(warn, json_string(err.msg));
        if (!quiet)
            fprintf(stderr, "skypool: warning: live offers from %s failed, using its catalog: "
                            "%s\n",
                    p->table.name, err.msg);
    } else if (!quiet)
        fprintf(stderr, "skypool: live: %s: %zu offers from %zu region%s in %.2f s\n",
                p->table.name, rows, n, n == 1 ? "" : "s", secs);
    json_object_set_new(j, "warnings", warn);
    sp_live_notes_free(notes, n_notes);
    return j;
}

json_t *cli_refresh_live(sp_registry *reg, const sp_offers_request *req, bool quiet)
{
    json_t *report = json_array();
    sp_offer_set offline;
    sp_err err = {0};
    if (sp_offers_collect(reg, req, &offline, &err) != SP_OK)
        return report; /* the caller's own collect reports the same error */
    for (size_t i = 0; i < reg->n_plugins; i++) {
        const sp_plugin *p = &reg->plugins[i];
        if (!p->table.refresh_offers ||
            (req->n_providers && !has(req->providers, req->n_providers, p->table.name)))
            continue;
        const char *regions[MAX_LIVE_REGIONS];
        size_t n = req->n_regions ? req->n_regions : catalog_regions(&offline, p->table.name,
                                                                     regions, MAX_LIVE_REGIONS);
        for (size_t r = 0; req->n_regions && r < n && r < MAX_LIVE_REGIONS; r++)
            regions[r] = req->regions[r];
        if (n)
            json_array_append_new(report, refresh_one(reg, p, regions, n, quiet));
    }
    sp_offer_set_free(&offline);
    return report;
}
