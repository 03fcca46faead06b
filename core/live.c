/*
 * Live refresh of a provider's catalog: the provider fetches current offers for some regions,
 * and they replace those regions' rows in its cached catalog file; other regions' rows are kept
 * from the catalog in use (the bundled one, or an earlier refresh).
 */
#include "registry.h"
#include "strpool.h"
#include "util.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct collected {
    sp_offer *rows;
    size_t n, cap;
    sp_strpool *strings;
    char **notes;
    size_t n_notes;
    const char *const *regions;   /* the refreshed regions: old rows of these are dropped */
    size_t n_regions;
    bool keeping;                 /* collecting old rows rather than live ones */
    int status;
} collected;

static bool refreshed(const collected *c, const char *region)
{
    for (size_t i = 0; i < c->n_regions; i++)
        if (strcmp(c->regions[i], region) == 0)
            return true;
    return false;
}

static int keep_row(sp_offer_sink *sink, const sp_offer *o)
{
    collected *c = sink->opaque;
    if (c->keeping && refreshed(c, o->region))
        return SP_OK;
    if (c->n == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 256;
        sp_offer *rows = realloc(c->rows, cap * sizeof(*rows));
        if (!rows)
            return c->status = SP_E_NOMEM;
        c->rows = rows;
        c->cap = cap;
    }
    sp_offer *r = &c->rows[c->n];
    *r = *o;
    const char **f[] = {&r->region, &r->zone, &r->instance_type, &r->accelerator, &r->arch};
    for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++)
        if (!(*f[i] = sp_strpool_intern(c->strings, *f[i] && **f[i] ? *f[i] : "-")))
            return c->status = SP_E_NOMEM;
    r->provider = NULL;
    c->n++;
    return SP_OK;
}

static int keep_note(sp_offer_sink *sink, const char *message)
{
    collected *c = sink->opaque;
    char **notes = realloc(c->notes, (c->n_notes + 1) * sizeof(char *));
    if (!notes)
        return c->status = SP_E_NOMEM;
    c->notes = notes;
    if (!(c->notes[c->n_notes] = sp_strdup(message)))
        return c->status = SP_E_NOMEM;
    c->n_notes++;
    return SP_OK;
}

/* "live: aws API for us-east-1, us-west-2 (2026-11-21); other rows: <old source>" */
static char *live_source(const collected *c, const char *provider, const char *old_source)
{
    sp_buf b;
    sp_buf_init(&b);
    sp_buf_printf(&b, "live: %s API for ", provider);
    for (size_t i = 0; i < c->n_regions; i++)
        sp_buf_printf(&b, "%s%s", i ? ", " : "", c->regions[i]);
    /* An earlier live source is not nested in the new one: keep only what it carried over. */
    const char *tail = strstr(old_source, "other rows: ");
    sp_buf_printf(&b, "; other rows: %s", tail ? tail + 12 : old_source);
    return sp_buf_take(&b);
}

static int store(sp_registry *reg, const char *provider, collected *c, sp_err *err)
{
    const sp_catalog *cat = sp_host_catalog(reg, provider, err);
    sp_catalog_info info = {0};
    if (cat) {
        sp_catalog_info_get(cat, &info);
        sp_offer_sink sink = {sizeof(sink), c, keep_row, keep_note};
        sp_offer_query all = {.struct_size = sizeof(all), .count_min = 1,
                              .count_max = UINT32_MAX};
        c->keeping = true;
        if (sp_catalog_query(cat, &all, &sink, err) != SP_OK || c->status)
            return c->status ? c->status : err->code;
    }
    char dir[PATH_MAX - 64], path[PATH_MAX], date[16];
    if (sp_cache_catalog_dir(dir, sizeof(dir), true) != 0)
        return sp_err_set(err, SP_E_IO, "no cache directory for the live catalog (set "
                                        "XDG_CACHE_HOME or HOME)");
    snprintf(path, sizeof(path), "%s/%s.tsv", dir, provider);
    time_t now = time(NULL);
    strftime(date, sizeof(date), "%Y-%m-%d", gmtime(&now));
    char *source = live_source(c, provider, info.source ? info.source : "none");
    int rc = source ? sp_catalog_write(path, provider, source, date, c->rows, c->n, err)
                    : sp_err_set(err, SP_E_NOMEM, "out of memory");
    free(source);
    sp_host_catalog_forget(reg, provider);
    return rc;
}

void sp_live_notes_free(char **notes, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(notes[i]);
    free(notes);
}

int sp_live_refresh(sp_registry *reg, const sp_plugin *plugin, const char *const *regions,
                    size_t n_regions, size_t *rows, char ***notes, size_t *n_notes, sp_err *err)
{
    *rows = 0;
    *notes = NULL;
    *n_notes = 0;
    if (!plugin->table.refresh_offers)
        return sp_err_set(err, SP_E_UNSUPPORTED, "%s: no live offers yet; the catalog is used",
                          plugin->table.name);
    collected c = {.regions = regions, .n_regions = n_regions, .strings = sp_strpool_new()};
    if (!c.strings)
        return sp_err_set(err, SP_E_NOMEM, "out of memory");
    sp_offer_sink sink = {sizeof(sink), &c, keep_row, keep_note};
    int rc = plugin->table.refresh_offers(plugin->ctx, regions, n_regions, &sink, err);
    if (!rc && c.status)
        rc = sp_err_set(err, c.status, "%s", sp_strerror(c.status));
    *rows = c.n;
    if (!rc)
        rc = store(reg, plugin->table.name, &c, err);
    *notes = c.notes;
    *n_notes = c.n_notes;
    free(c.rows);
    sp_strpool_free(c.strings);
    return rc;
}
