/*
 * Live offers: every GPU size of /v2/sizes in every region it lists, at its price_hourly.
 * DigitalOcean has no spot market and no zones. /v2/regions says which regions exist and take
 * new droplets now, so that a region asked for that is neither gets a note, not silence.
 */
#include "digitalocean.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- GPU models ------------------------------------------------------------------------------ */

/* DigitalOcean's GPU model names with the vendor and punctuation dropped ("nvidia_h100" ->
 * "h100", "nvidia_rtx_4000_ada_generation" -> "rtx4000ada"), and the model part of size slugs
 * ("gpu-mi300x1-192gb" -> "mi300"). H100 droplets run on HGX (SXM) boards. */
static const struct model_def {
    const char *name;
    const char *key;
    unsigned gib;
} model_defs[] = {
    {"h100", "H100-SXM", 80},        {"h200", "H200", 141},
    {"l40s", "L40S", 48},            {"l4", "L4", 24},
    {"rtx4000ada", "RTX4000-Ada", 20}, {"4000ada", "RTX4000-Ada", 20},
    {"rtx6000ada", "RTX6000-Ada", 48}, {"6000ada", "RTX6000-Ada", 48},
    {"mi300x", "MI300X", 192},       {"mi300", "MI300X", 192},
    {"b200", "B200", 180},           {"b300", "B300", 288},
};

static void normalize(const char *model, char *out, size_t size)
{
    size_t n = 0;
    for (const unsigned char *c = (const unsigned char *)model; *c && n + 1 < size; c++)
        if (isalnum(*c))
            out[n++] = (char)tolower(*c);
    out[n] = '\0';
    static const char *const vendors[] = {"nvidia", "amd"};
    for (size_t i = 0; i < 2; i++) {
        size_t v = strlen(vendors[i]);
        if (!strncmp(out, vendors[i], v) && out[v])
            memmove(out, out + v, strlen(out + v) + 1);
    }
    size_t len = strlen(out);
    if (len > 10 && !strcmp(out + len - 10, "generation"))
        out[len - 10] = '\0';
}

const char *do_model_key(const char *model, unsigned *nominal_gib)
{
    char name[64];
    normalize(model ? model : "", name, sizeof(name));
    for (size_t i = 0; i < sizeof(model_defs) / sizeof(model_defs[0]); i++)
        if (!strcmp(name, model_defs[i].name)) {
            if (nominal_gib)
                *nominal_gib = model_defs[i].gib;
            return model_defs[i].key;
        }
    return NULL;
}

/* "gpu-h100x8-640gb": model "h100", count 8. False for other slugs. */
static bool parse_slug(const char *slug, char *model, size_t size, unsigned *count)
{
    if (strncmp(slug, "gpu-", 4) != 0)
        return false;
    const char *start = slug + 4, *end = strchr(start, '-');
    if (!end)
        end = start + strlen(start);
    for (const char *x = end; x-- > start;) {
        if (*x != 'x' || !isdigit((unsigned char)x[1]))
            continue;
        char *stop;
        unsigned long n = strtoul(x + 1, &stop, 10);
        if (stop != end || x == start || (size_t)(x - start) >= size || !n || n > 64)
            return false;
        memcpy(model, start, (size_t)(x - start));
        model[x - start] = '\0';
        *count = (unsigned)n;
        return true;
    }
    return false;
}

/* VRAM in MiB from {"amount": 80, "unit": "gib"}; 0 when absent. */
static unsigned long long vram_mib(const json_t *vram)
{
    const json_t *a = json_object_get(vram, "amount");
    double amount = json_is_number(a) ? json_number_value(a) : 0;
    const char *unit = do_str(vram, "unit");
    double mib = amount * 1024.0;
    if (!strcasecmp(unit, "mib") || !strcasecmp(unit, "mb"))
        mib = amount;
    else if (!strcasecmp(unit, "tib") || !strcasecmp(unit, "tb"))
        mib = amount * 1024.0 * 1024.0;
    return mib > 0 && mib < 1e9 ? (unsigned long long)mib : 0;
}

/* ---- Sizes ----------------------------------------------------------------------------------- */

static unsigned clamp_u(long long v)
{
    return v > 0 && v < (long long)UINT32_MAX ? (unsigned)v : 0;
}

/* gpu_info.vram is per device on the 1-GPU sizes; on the 8-GPU sizes it may be the total (the
 * slugs name totals: gpu-h100x8-640gb). A figure that only fits the whole board is divided. */
static unsigned per_device_mib(const json_t *gpu, unsigned count, unsigned nominal_gib)
{
    unsigned long long mib = vram_mib(json_object_get(gpu, "vram"));
    if (!mib)
        return nominal_gib * 1024u;
    if (count > 1 && mib * 10 >= (unsigned long long)count * nominal_gib * 1024u * 9)
        mib /= count;
    return mib < UINT32_MAX ? (unsigned)mib : 0;
}

int do_read_size(const json_t *size, do_size *s)
{
    memset(s, 0, sizeof(*s));
    snprintf(s->slug, sizeof(s->slug), "%s", do_str(size, "slug"));
    const json_t *gpu = json_object_get(size, "gpu_info");
    s->count = clamp_u(do_int(gpu, "count", 0));
    snprintf(s->model, sizeof(s->model), "%s", do_str(gpu, "model"));
    char slug_model[64];
    unsigned slug_count = 0;
    if (parse_slug(s->slug, slug_model, sizeof(slug_model), &slug_count)) {
        if (!s->model[0])
            snprintf(s->model, sizeof(s->model), "%s", slug_model);
        if (!s->count && !gpu)
            s->count = slug_count;
    }
    if (!s->count || !s->slug[0])
        return SP_E_NOTFOUND;
    unsigned gib = 0;
    if (!(s->accel = do_model_key(s->model, &gib)))
        return SP_E_UNSUPPORTED;
    s->accel_mem_mib = per_device_mib(gpu, s->count, gib);
    s->vcpus = clamp_u(do_int(size, "vcpus", 0));
    s->mem_mib = clamp_u(do_int(size, "memory", 0)); /* "megabytes": MiB, as droplets report */
    const json_t *price = json_object_get(size, "price_hourly");
    s->price_hourly = json_is_number(price) && json_number_value(price) >= 0
                          ? json_number_value(price)
                          : SP_PRICE_UNKNOWN;
    s->available = !json_is_false(json_object_get(size, "available"));
    s->regions = json_object_get(size, "regions");
    return SP_OK;
}

bool do_size_in_region(const do_size *s, const char *region)
{
    size_t i;
    const json_t *r;
    json_array_foreach(s->regions, i, r) {
        if (json_is_string(r) && !strcmp(json_string_value(r), region))
            return true;
    }
    return false;
}

/* ---- Regions --------------------------------------------------------------------------------- */

typedef struct region_info {
    char slug[32];
    bool available;
} region_info;

typedef struct refresh {
    do_ctx *ctx;
    const char *const *regions;
    size_t n_regions;
    sp_offer_sink *sink;
    region_info *known;
    size_t n_known, cap_known;
    char unknown_models[8][64];
    size_t n_unknown;
    size_t emitted;
} refresh;

static int read_region(const json_t *item, void *arg)
{
    refresh *r = arg;
    if (r->n_known == r->cap_known) {
        size_t cap = r->cap_known ? r->cap_known * 2 : 32;
        region_info *k = realloc(r->known, cap * sizeof(*k));
        if (!k)
            return SP_E_NOMEM;
        r->known = k;
        r->cap_known = cap;
    }
    region_info *ri = &r->known[r->n_known++];
    snprintf(ri->slug, sizeof(ri->slug), "%s", do_str(item, "slug"));
    ri->available = !json_is_false(json_object_get(item, "available"));
    return SP_OK;
}

static const region_info *known_region(const refresh *r, const char *slug)
{
    for (size_t i = 0; i < r->n_known; i++)
        if (!strcmp(r->known[i].slug, slug))
            return &r->known[i];
    return NULL;
}

static bool wanted(const refresh *r, const char *region)
{
    if (!r->n_regions)
        return true;
    for (size_t i = 0; i < r->n_regions; i++)
        if (!strcmp(r->regions[i], region))
            return true;
    return false;
}

/* Regions asked for that DigitalOcean does not have, or that take no new droplets now. */
static int note_regions(refresh *r)
{
    for (size_t i = 0; i < r->n_regions; i++) {
        const region_info *ri = known_region(r, r->regions[i]);
        char msg[256];
        if (!ri)
            snprintf(msg, sizeof(msg),
                     "DigitalOcean has no region '%.64s' (GET /v2/regions lists the slugs)",
                     r->regions[i]);
        else if (!ri->available)
            snprintf(msg, sizeof(msg), "DigitalOcean region %.64s takes no new droplets now",
                     r->regions[i]);
        else
            continue;
        int rc = r->sink->note(r->sink, msg);
        if (rc)
            return rc;
    }
    return SP_OK;
}

/* ---- Emitting -------------------------------------------------------------------------------- */

static int note_unknown_model(refresh *r, const do_size *s)
{
    for (size_t i = 0; i < r->n_unknown; i++)
        if (!strcmp(r->unknown_models[i], s->model))
            return SP_OK;
    if (r->n_unknown < 8)
        snprintf(r->unknown_models[r->n_unknown++], 64, "%s", s->model);
    char msg[256];
    snprintf(msg, sizeof(msg),
             "DigitalOcean size %.64s has GPU model '%.64s', which skypool does not know; "
             "skipped",
             s->slug, s->model);
    return r->sink->note(r->sink, msg);
}

static int emit_size(const json_t *item, void *arg)
{
    refresh *r = arg;
    do_size s;
    int rc = do_read_size(item, &s);
    if (rc == SP_E_UNSUPPORTED)
        return note_unknown_model(r, &s);
    if (rc || !s.available)
        return SP_OK;
    size_t i;
    const json_t *reg;
    json_array_foreach(s.regions, i, reg) {
        const char *region = json_string_value(reg);
        const region_info *ri = region ? known_region(r, region) : NULL;
        if (!region || !wanted(r, region) || (ri && !ri->available))
            continue;
        sp_offer o = {.struct_size = sizeof(o), .region = region, .zone = "",
                      .instance_type = s.slug, .accelerator = s.accel, .accel_count = s.count,
                      .accel_mem_mib = s.accel_mem_mib, .vcpus = s.vcpus, .mem_mib = s.mem_mib,
                      .price_on_demand = s.price_hourly, .price_spot = SP_PRICE_UNKNOWN,
                      .arch = "x86_64"};
        if ((rc = r->sink->offer(r->sink, &o)))
            return rc;
        r->emitted++;
    }
    return SP_OK;
}

int do_refresh_offers(void *vctx, const char *const *regions, size_t n_regions,
                      sp_offer_sink *sink, sp_err *err)
{
    refresh r = {.ctx = vctx, .regions = regions, .n_regions = n_regions, .sink = sink};
    int rc = do_list(r.ctx, "/v2/regions", NULL, "regions", NULL, read_region, &r, NULL, err);
    if (rc == SP_E_NOMEM)
        sp_err_set(err, rc, "out of memory");
    if (!rc)
        rc = note_regions(&r);
    if (!rc)
        rc = do_list(r.ctx, "/v2/sizes", NULL, "sizes", NULL, emit_size, &r, NULL, err);
    free(r.known);
    return rc;
}
