/*
 * MIG (Multi-Instance GPU) profile tables and the layout validator.
 *
 * The facts come from NVIDIA's Multi-Instance GPU User Guide ("Supported MIG Profiles", and the
 * `nvidia-smi mig -lgipp` placements in "Getting Started with MIG"); docs/mig-profiles.md cites
 * them and shows these tables. A GPU has 8 memory slices and 7 compute slices. A GPU instance
 * occupies `span` consecutive memory slices from one of its profile's allowed starts, and no two
 * instances may share a memory slice: NVML's nvmlGpuInstancePlacement_t is exactly {start, size}
 * in memory slices, so the placement columns below transcribe -lgipp output.
 */
#include "util.h"

#include <skypool/skypool.h>

#include <stdio.h>
#include <string.h>
#include <strings.h>

/* Allowed starts (bit i: memory slice i), as -lgipp prints them for every GPU below. */
#define AT_0_TO_6 0x7f /* {0,1,2,3,4,5,6}:1 */
#define AT_EVEN 0x55   /* {0,2,4,6}:2, the 1g profiles with twice the memory */
#define AT_0_2_4 0x15  /* {0,2,4}:2 */
#define AT_0_4 0x11    /* {0,4}:4 */
#define AT_0 0x01      /* {0}:4 (4g) and {0}:8 (7g) */

/* name, compute slices, memory slices, GB, max instances, starts, span */
static const sp_mig_profile a100_40gb[] = {
    {"1g.5gb", 1, 1, 5, 7, AT_0_TO_6, 1},
    {"1g.5gb+me", 1, 1, 5, 1, AT_0_TO_6, 1},
    {"1g.10gb", 1, 2, 10, 4, AT_EVEN, 2},
    {"2g.10gb", 2, 2, 10, 3, AT_0_2_4, 2},
    {"3g.20gb", 3, 4, 20, 2, AT_0_4, 4},
    {"4g.20gb", 4, 4, 20, 1, AT_0, 4},
    {"7g.40gb", 7, 8, 40, 1, AT_0, 8},
};

/* A100 80GB and H100 80GB (SXM5 and PCIe) have the same table. */
static const sp_mig_profile gpu_80gb[] = {
    {"1g.10gb", 1, 1, 10, 7, AT_0_TO_6, 1},
    {"1g.10gb+me", 1, 1, 10, 1, AT_0_TO_6, 1},
    {"1g.20gb", 1, 2, 20, 4, AT_EVEN, 2},
    {"2g.20gb", 2, 2, 20, 3, AT_0_2_4, 2},
    {"3g.40gb", 3, 4, 40, 2, AT_0_4, 4},
    {"4g.40gb", 4, 4, 40, 1, AT_0, 4},
    {"7g.80gb", 7, 8, 80, 1, AT_0, 8},
};

static const sp_mig_profile h100_94gb[] = {
    {"1g.12gb", 1, 1, 12, 7, AT_0_TO_6, 1},
    {"1g.12gb+me", 1, 1, 12, 1, AT_0_TO_6, 1},
    {"1g.24gb", 1, 2, 24, 4, AT_EVEN, 2},
    {"2g.24gb", 2, 2, 24, 3, AT_0_2_4, 2},
    {"3g.47gb", 3, 4, 47, 2, AT_0_4, 4},
    {"4g.47gb", 4, 4, 47, 1, AT_0, 4},
    {"7g.94gb", 7, 8, 94, 1, AT_0, 8},
};

static const sp_mig_profile h200_141gb[] = {
    {"1g.18gb", 1, 1, 18, 7, AT_0_TO_6, 1},
    {"1g.18gb+me", 1, 1, 18, 1, AT_0_TO_6, 1},
    {"1g.35gb", 1, 2, 35, 4, AT_EVEN, 2},
    {"2g.35gb", 2, 2, 35, 3, AT_0_2_4, 2},
    {"3g.71gb", 3, 4, 71, 2, AT_0_4, 4},
    {"4g.71gb", 4, 4, 71, 1, AT_0, 4},
    {"7g.141gb", 7, 8, 141, 1, AT_0, 8},
};

static const sp_mig_profile b200_180gb[] = {
    {"1g.23gb", 1, 1, 23, 7, AT_0_TO_6, 1},
    {"1g.23gb+me", 1, 1, 23, 1, AT_0_TO_6, 1},
    {"1g.45gb", 1, 2, 45, 4, AT_EVEN, 2},
    {"2g.45gb", 2, 2, 45, 3, AT_0_2_4, 2},
    {"3g.90gb", 3, 4, 90, 2, AT_0_4, 4},
    {"4g.90gb", 4, 4, 90, 1, AT_0, 4},
    {"7g.180gb", 7, 8, 180, 1, AT_0, 8},
};

typedef struct mig_model {
    const char *key;                /* sp_accel_model key */
    const sp_mig_profile *profiles;
    size_t n;
    unsigned compute_slices;
    unsigned mem_slices;            /* at most 8: placements is a uint8_t */
} mig_model;

#define MIG_MODEL(key, table) {key, table, sizeof(table) / sizeof(table[0]), 7, 8}

static const mig_model models[] = {
    MIG_MODEL("A100-40GB", a100_40gb),
    MIG_MODEL("A100-80GB", gpu_80gb),
    MIG_MODEL("H100-SXM", gpu_80gb),
    MIG_MODEL("H100-PCIe", gpu_80gb),
    MIG_MODEL("H100-NVL", h100_94gb),
    MIG_MODEL("H200", h200_141gb),
    MIG_MODEL("B200", b200_180gb),
};

#define N_MODELS (sizeof(models) / sizeof(models[0]))
#define LIST_MAX 192 /* a list of profile names, or a layout */

/* ---- Text helpers ----------------------------------------------------------------------- */

static void append(char *buf, size_t size, const char *s)
{
    size_t len = strlen(buf);
    if (len + 1 < size)
        snprintf(buf + len, size - len, "%s", s);
}

static void join_profiles(char *buf, size_t size, const sp_mig_profile *const *profs, unsigned n,
                          const char *sep)
{
    buf[0] = '\0';
    for (unsigned i = 0; i < n; i++) {
        if (i > 0)
            append(buf, size, sep);
        append(buf, size, profs[i]->name);
    }
}

static void model_profile_names(const mig_model *m, char *buf, size_t size)
{
    buf[0] = '\0';
    for (size_t i = 0; i < m->n; i++) {
        if (i > 0)
            append(buf, size, ", ");
        append(buf, size, m->profiles[i].name);
    }
}

static void mig_model_keys(char *buf, size_t size)
{
    buf[0] = '\0';
    for (size_t i = 0; i < N_MODELS; i++) {
        if (i > 0)
            append(buf, size, ", ");
        append(buf, size, models[i].key);
    }
}

/* ---- Models and profiles ---------------------------------------------------------------- */

static const mig_model *model_find(const char *key)
{
    for (size_t i = 0; key && i < N_MODELS; i++)
        if (sp_streq_nocase(models[i].key, key))
            return &models[i];
    return NULL;
}

static const char *display_name(const mig_model *m)
{
    const sp_accel_model *a = sp_accel_by_key(m->key);
    return a ? a->display : m->key;
}

static int model_resolve(const char *key, const mig_model **out, sp_err *err)
{
    char keys[LIST_MAX];
    *out = model_find(key);
    if (*out)
        return SP_OK;
    mig_model_keys(keys, sizeof(keys));
    const sp_accel_model *a = key ? sp_accel_by_key(key) : NULL;
    if (!a)
        return sp_err_set(err, SP_E_INVALID,
                          "unknown accelerator model '%s'; MIG-capable models: %s",
                          key ? key : "(none)", keys);
    if (a->mig)
        return sp_err_set(err, SP_E_INTERNAL, "skypool has no MIG profile table for %s",
                          a->display);
    return sp_err_set(err, SP_E_INVALID, "%s does not support MIG; MIG-capable models: %s",
                      a->display, keys);
}

const sp_mig_profile *sp_mig_profiles(const char *model_key, size_t *n)
{
    const mig_model *m = model_find(model_key);
    if (n)
        *n = m ? m->n : 0;
    return m ? m->profiles : NULL;
}

/* nvidia-smi prints "MIG 1g.10gb"; Kubernetes resources are "nvidia.com/mig-1g.10gb". */
static const char *strip_prefix(const char *name)
{
    if (strncasecmp(name, "nvidia.com/", 11) == 0)
        name += 11;
    if (strncasecmp(name, "mig-", 4) == 0 || strncasecmp(name, "mig ", 4) == 0)
        name += 4;
    return name;
}

static const sp_mig_profile *profile_find(const mig_model *m, const char *name)
{
    name = strip_prefix(name);
    for (size_t i = 0; i < m->n; i++)
        if (sp_streq_nocase(m->profiles[i].name, name))
            return &m->profiles[i];
    return NULL;
}

/* "+me"; mig-parted's config names spell it ".me" ("all-1g.10gb.me"). */
static bool has_media(const char *name)
{
    size_t n = strlen(name);
    return n >= 3 && (name[n - 3] == '+' || name[n - 3] == '.') &&
           sp_streq_nocase(name + n - 2, "me");
}

/* The "N" of "Ng.Mgb", or 0. */
static unsigned compute_of(const char *name)
{
    unsigned g = 0;
    for (; *name >= '0' && *name <= '9' && g < 100; name++)
        g = g * 10 + (unsigned)(*name - '0');
    return (*name == 'g' || *name == 'G') ? g : 0;
}

/*
 * "3g.20gb" on an H100 is most likely another card's name for its 3g profile, so a profile with
 * the same compute slices (and media extensions or not) beats a closer spelling such as 2g.20gb.
 */
static const char *profile_suggest(const mig_model *m, const char *name)
{
    const char *names[16], *best = NULL;
    size_t best_d = (size_t)-1, n = m->n < 16 ? m->n : 16;
    unsigned g = compute_of(name);
    for (size_t i = 0; i < n; i++) {
        const sp_mig_profile *p = &m->profiles[i];
        size_t d = sp_edit_distance(name, p->name);
        names[i] = p->name;
        if (p->compute_slices == g && has_media(p->name) == has_media(name) && d < best_d) {
            best = p->name;
            best_d = d;
        }
    }
    return best ? best : sp_suggest(name, names, n);
}

static int unknown_profile(const mig_model *m, const char *name, sp_err *err)
{
    char valid[LIST_MAX], mean[64] = "";
    const char *s = profile_suggest(m, strip_prefix(name));
    model_profile_names(m, valid, sizeof(valid));
    if (s)
        snprintf(mean, sizeof(mean), "; did you mean %s?", s);
    return sp_err_set(err, SP_E_INVALID, "unknown MIG profile '%s' for %s%s valid profiles: %s",
                      name, display_name(m), s ? mean : ";", valid);
}

/* ---- Fitting ---------------------------------------------------------------------------- */

/* The instances in placement order: larger spans first, identical profiles next to each other. */
typedef struct placer {
    const sp_mig_profile *prof[SP_MIG_MAX_INSTANCES];
    unsigned orig[SP_MIG_MAX_INSTANCES]; /* index in the caller's layout */
    unsigned start[SP_MIG_MAX_INSTANCES];
    unsigned n;
    unsigned slices;
} placer;

static bool goes_before(const sp_mig_profile *a, const sp_mig_profile *b)
{
    /* Both point into the same model table, so comparing them orders by table position. */
    return a->span > b->span || (a->span == b->span && a < b);
}

static void placer_init(placer *p, const mig_model *m, const sp_mig_profile *const *profs,
                        unsigned n)
{
    p->n = n;
    p->slices = m->mem_slices;
    for (unsigned i = 0; i < n; i++) {
        unsigned j = i;
        for (; j > 0 && goes_before(profs[i], p->prof[j - 1]); j--) {
            p->prof[j] = p->prof[j - 1];
            p->orig[j] = p->orig[j - 1];
        }
        p->prof[j] = profs[i];
        p->orig[j] = i;
    }
}

/* Backtracking over allowed starts; identical instances take increasing starts (no repeats). */
static bool place_from(placer *p, unsigned i, unsigned used)
{
    if (i == p->n)
        return true;
    const sp_mig_profile *pr = p->prof[i];
    unsigned first = (i > 0 && p->prof[i - 1] == pr) ? p->start[i - 1] + 1 : 0;
    for (unsigned s = first; s + pr->span <= p->slices; s++) {
        unsigned mask = ((1u << pr->span) - 1u) << s;
        if (!(pr->placements & (1u << s)) || (used & mask))
            continue;
        p->start[i] = s;
        if (place_from(p, i + 1, used | mask))
            return true;
    }
    return false;
}

static bool place(const mig_model *m, const sp_mig_profile *const *profs, unsigned n,
                  unsigned *starts)
{
    placer p;
    placer_init(&p, m, profs, n);
    if (!place_from(&p, 0, 0))
        return false;
    for (unsigned i = 0; starts && i < n; i++)
        starts[p.orig[i]] = p.start[i];
    return true;
}

static const sp_mig_profile *over_max(const sp_mig_profile *const *profs, unsigned n,
                                      unsigned *count)
{
    for (unsigned i = 0; i < n; i++) {
        unsigned c = 0;
        for (unsigned j = 0; j < n; j++)
            c += profs[j] == profs[i];
        if (c > profs[i]->max_instances) {
            *count = c;
            return profs[i];
        }
    }
    return NULL;
}

/* Whether the instances fit on one GPU; if not, why says which limit they break. */
static bool fits(const mig_model *m, const sp_mig_profile *const *profs, unsigned n,
                 unsigned *starts, char *why, size_t why_size)
{
    char scratch[128];
    unsigned compute = 0, mem = 0, count = 0;
    if (!why) {
        why = scratch;
        why_size = sizeof(scratch);
    }
    for (unsigned i = 0; i < n; i++) {
        compute += profs[i]->compute_slices;
        mem += profs[i]->mem_slices;
    }
    const sp_mig_profile *over = over_max(profs, n, &count);
    if (compute > m->compute_slices)
        snprintf(why, why_size, "compute slices %u > %u", compute, m->compute_slices);
    else if (mem > m->mem_slices)
        snprintf(why, why_size, "memory slices %u > %u", mem, m->mem_slices);
    else if (over)
        snprintf(why, why_size, "at most %u instance%s of %s per GPU, not %u",
                 over->max_instances, over->max_instances == 1 ? "" : "s", over->name, count);
    else if (!place(m, profs, n, starts))
        snprintf(why, why_size, "no placement keeps their memory slices apart");
    else
        return true;
    return false;
}

/* What to offer instead: the instances, in the user's order, that fit together. */
static unsigned greedy_fit(const mig_model *m, const sp_mig_profile *const *profs, unsigned n,
                           const sp_mig_profile **kept)
{
    unsigned k = 0;
    for (unsigned i = 0; i < n; i++) {
        kept[k] = profs[i];
        if (fits(m, kept, k + 1, NULL, NULL, 0))
            k++;
    }
    return k;
}

/* The profiles that one more instance of would still fit next to kept. */
static void room_for(const mig_model *m, const sp_mig_profile **kept, unsigned k, char *buf,
                     size_t size)
{
    buf[0] = '\0';
    for (size_t i = 0; k < SP_MIG_MAX_INSTANCES && i < m->n; i++) {
        kept[k] = &m->profiles[i];
        if (!fits(m, kept, k + 1, NULL, NULL, 0))
            continue;
        append(buf, size, buf[0] ? ", " : "");
        append(buf, size, m->profiles[i].name);
    }
}

static int does_not_fit(const mig_model *m, const sp_mig_profile *const *profs, unsigned n,
                        const char *why, sp_err *err)
{
    const sp_mig_profile *kept[SP_MIG_MAX_INSTANCES];
    char layout[LIST_MAX], would[LIST_MAX], room[LIST_MAX], extra[LIST_MAX + 32] = "";
    unsigned k = greedy_fit(m, profs, n, kept);
    join_profiles(layout, sizeof(layout), profs, n, " + ");
    join_profiles(would, sizeof(would), kept, k, " + ");
    room_for(m, kept, k, room, sizeof(room));
    if (room[0])
        snprintf(extra, sizeof(extra), ", with room for one more of %s", room);
    return sp_err_set(err, SP_E_INVALID,
                      "MIG layout %s does not fit on one %s: %s; this would fit: %s%s", layout,
                      display_name(m), why, would, extra);
}

/* ---- Public API ------------------------------------------------------------------------- */

static bool in_table(const mig_model *m, const sp_mig_profile *p)
{
    for (size_t i = 0; i < m->n; i++)
        if (p == &m->profiles[i])
            return true;
    return false;
}

static int layout_validate(const mig_model *m, const sp_mig_layout *layout, sp_err *err)
{
    char valid[LIST_MAX];
    if (layout->n == 0 || layout->n > SP_MIG_MAX_INSTANCES)
        return sp_err_set(err, SP_E_INVALID,
                          "a MIG layout has 1 to %d instances per GPU, not %u",
                          SP_MIG_MAX_INSTANCES, layout->n);
    for (unsigned i = 0; i < layout->n; i++) {
        if (layout->profiles[i] && in_table(m, layout->profiles[i]))
            continue;
        model_profile_names(m, valid, sizeof(valid));
        return sp_err_set(err, SP_E_INVALID,
                          "MIG instance %u is not a profile of %s; valid profiles: %s", i + 1,
                          display_name(m), valid);
    }
    return SP_OK;
}

int sp_mig_layout_check(const char *model_key, sp_mig_layout *layout, sp_err *err)
{
    const mig_model *m;
    char why[128];
    int rc = model_resolve(model_key, &m, err);
    if (rc != SP_OK)
        return rc;
    if (!layout)
        return sp_err_set(err, SP_E_INVALID, "no MIG layout given");
    rc = layout_validate(m, layout, err);
    if (rc != SP_OK)
        return rc;
    unsigned starts[SP_MIG_MAX_INSTANCES];
    if (!fits(m, layout->profiles, layout->n, starts, why, sizeof(why)))
        return does_not_fit(m, layout->profiles, layout->n, why, err);
    memcpy(layout->starts, starts, layout->n * sizeof(starts[0]));
    return SP_OK;
}

/* The most instances of one profile that fit on a GPU. */
static unsigned most_that_fit(const mig_model *m, const sp_mig_profile *p, sp_mig_layout *layout)
{
    unsigned k = p->max_instances < SP_MIG_MAX_INSTANCES ? p->max_instances
                                                          : SP_MIG_MAX_INSTANCES;
    for (unsigned i = 0; i < k; i++)
        layout->profiles[i] = p;
    while (k > 0 && !fits(m, layout->profiles, k, NULL, NULL, 0))
        k--;
    return k;
}

static int resolve_names(const mig_model *m, const char *const *names, size_t n_names,
                         sp_mig_layout *layout, sp_err *err)
{
    for (size_t i = 0; i < n_names; i++) {
        const sp_mig_profile *p = names[i] ? profile_find(m, names[i]) : NULL;
        if (!p)
            return unknown_profile(m, names[i] ? names[i] : "", err);
        if (i < SP_MIG_MAX_INSTANCES)
            layout->profiles[i] = p;
    }
    if (n_names > SP_MIG_MAX_INSTANCES)
        return sp_err_set(err, SP_E_INVALID,
                          "%zu MIG instances listed; at most %d fit on one %s", n_names,
                          SP_MIG_MAX_INSTANCES, display_name(m));
    layout->n = n_names == 1 ? most_that_fit(m, layout->profiles[0], layout) : (unsigned)n_names;
    return SP_OK;
}

static int no_profiles(const mig_model *m, sp_err *err)
{
    char valid[LIST_MAX];
    model_profile_names(m, valid, sizeof(valid));
    return sp_err_set(err, SP_E_INVALID, "no MIG profile given for %s; valid profiles: %s",
                      display_name(m), valid);
}

int sp_mig_layout_parse(const char *model_key, const char *const *names, size_t n_names,
                        sp_mig_layout *layout, sp_err *err)
{
    const mig_model *m;
    if (!layout)
        return sp_err_set(err, SP_E_INVALID, "no MIG layout given");
    memset(layout, 0, sizeof(*layout));
    int rc = model_resolve(model_key, &m, err);
    if (rc != SP_OK)
        return rc;
    if (!names || n_names == 0)
        return no_profiles(m, err);
    rc = resolve_names(m, names, n_names, layout, err);
    if (rc == SP_OK)
        rc = sp_mig_layout_check(model_key, layout, err);
    if (rc != SP_OK)
        memset(layout, 0, sizeof(*layout));
    return rc;
}
