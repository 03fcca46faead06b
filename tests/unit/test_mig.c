/*
 * MIG profile tables and layout validation.
 *
 * The expected values are NVIDIA's, not ours: the profile rows are the "Supported MIG Profiles"
 * tables of the MIG User Guide (see docs/mig-profiles.md), the valid layouts are mig-parted's
 * shipped configs and combinations the guide's placement diagram allows, and the starts are the
 * only ones `nvidia-smi mig -lgipp` leaves for them.
 *
 * Layout strings: "4g.20gb + 3g.20gb"; "1g.10gb*4" is four instances. A layout of one name asks
 * for as many of that profile as fit (the pool-file meaning of `mig: 3g.40gb`).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <skypool/skypool.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NAMES_MAX 9
#define CHECK(cond, label)                                                                      \
    do {                                                                                        \
        if (!(cond))                                                                            \
            fail_msg("%s: check failed: %s", label, #cond);                                     \
    } while (0)
#define CHECK_MSG(err, want, label)                                                             \
    do {                                                                                        \
        if (!strstr((err).msg, want))                                                           \
            fail_msg("%s: message lacks \"%s\": %s", label, want, (err).msg);                   \
    } while (0)

/* ---- Helpers ---------------------------------------------------------------------------- */

typedef struct names {
    char text[NAMES_MAX][40];
    const char *ptr[NAMES_MAX];
    size_t n;
} names;

/* "a + b*3" -> a, b, b, b (names may contain '+': "1g.10gb+me") */
static void split(const char *layout, names *out)
{
    out->n = 0;
    for (const char *p = layout; *p;) {
        const char *sep = strstr(p, " + ");
        int len = sep ? (int)(sep - p) : (int)strlen(p), times = 1;
        char tok[40];
        snprintf(tok, sizeof(tok), "%.*s", len, p);
        char *star = strchr(tok, '*');
        if (star) {
            times = atoi(star + 1);
            *star = '\0';
        }
        for (int i = 0; i < times && out->n < NAMES_MAX; i++) {
            snprintf(out->text[out->n], sizeof(out->text[0]), "%s", tok);
            out->ptr[out->n] = out->text[out->n];
            out->n++;
        }
        p += len + (sep ? 3 : 0);
    }
}

static int parse(const char *model, const char *layout, sp_mig_layout *l, sp_err *err)
{
    names nm;
    split(layout, &nm);
    memset(err, 0, sizeof(*err));
    return sp_mig_layout_parse(model, nm.ptr, nm.n, l, err);
}

/* Starts are allowed for their profile, inside the GPU, and never share a memory slice. */
static void check_placement(const sp_mig_layout *l, const char *label)
{
    unsigned used = 0, compute = 0;
    for (unsigned i = 0; i < l->n; i++) {
        const sp_mig_profile *p = l->profiles[i];
        unsigned s = l->starts[i], mask = ((1u << p->span) - 1u) << s;
        CHECK(s < 8 && (p->placements & (1u << s)), label);
        CHECK(s + p->span <= 8, label);
        CHECK((used & mask) == 0, label);
        used |= mask;
        compute += p->compute_slices;
    }
    CHECK(compute <= 7, label);
}

static int cmp_unsigned(const void *a, const void *b)
{
    unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;
    return (x > y) - (x < y);
}

/* The starts as a set, sorted: "0 2 4 6". */
static void starts_text(const sp_mig_layout *l, char *buf, size_t size)
{
    unsigned s[SP_MIG_MAX_INSTANCES];
    memcpy(s, l->starts, l->n * sizeof(s[0]));
    qsort(s, l->n, sizeof(s[0]), cmp_unsigned);
    buf[0] = '\0';
    for (unsigned i = 0; i < l->n; i++) {
        size_t len = strlen(buf);
        snprintf(buf + len, size - len, "%s%u", i ? " " : "", s[i]);
    }
}

static const char *display(const char *key)
{
    const sp_accel_model *m = sp_accel_by_key(key);
    return m ? m->display : "(no such model)";
}

/* ---- The per-GPU tables ----------------------------------------------------------------- */

typedef struct profile_row {
    const char *model;
    const char *name;
    unsigned compute, mem_slices, gib, max;
    const char *lgipp;    /* the placements as `nvidia-smi mig -lgipp` prints them */
    const char *starts;   /* of the most instances */
    const char *one_more; /* why max + 1 instances do not fit */
} profile_row;

#define ROWS_OF(model, a, b, c, d, e, f, g, gib1, gib2, gib3, gib4)                              \
    {model, a, 1, 1, gib1, 7, "{0,1,2,3,4,5,6}:1", "0 1 2 3 4 5 6",                             \
     "8 MIG instances listed; at most 7 fit"},                                                  \
    {model, b, 1, 1, gib1, 1, "{0,1,2,3,4,5,6}:1", "0",                                         \
     "at most 1 instance of " b " per GPU, not 2"},                                             \
    {model, c, 1, 2, gib2, 4, "{0,2,4,6}:2", "0 2 4 6", "memory slices 10 > 8"},                \
    {model, d, 2, 2, gib2, 3, "{0,2,4}:2", "0 2 4", "compute slices 8 > 7"},                    \
    {model, e, 3, 4, gib3, 2, "{0,4}:4", "0 4", "compute slices 9 > 7"},                        \
    {model, f, 4, 4, gib3, 1, "{0}:4", "0", "compute slices 8 > 7"},                            \
    {model, g, 7, 8, gib4, 1, "{0}:8", "0", "compute slices 14 > 7"}

static const profile_row profile_rows[] = {
    ROWS_OF("A100-40GB", "1g.5gb", "1g.5gb+me", "1g.10gb", "2g.10gb", "3g.20gb", "4g.20gb",
            "7g.40gb", 5, 10, 20, 40),
    ROWS_OF("A100-80GB", "1g.10gb", "1g.10gb+me", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb",
            "7g.80gb", 10, 20, 40, 80),
    ROWS_OF("H100-SXM", "1g.10gb", "1g.10gb+me", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb",
            "7g.80gb", 10, 20, 40, 80),
    ROWS_OF("H100-PCIe", "1g.10gb", "1g.10gb+me", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb",
            "7g.80gb", 10, 20, 40, 80),
    ROWS_OF("H100-NVL", "1g.12gb", "1g.12gb+me", "1g.24gb", "2g.24gb", "3g.47gb", "4g.47gb",
            "7g.94gb", 12, 24, 47, 94),
    ROWS_OF("H200", "1g.18gb", "1g.18gb+me", "1g.35gb", "2g.35gb", "3g.71gb", "4g.71gb",
            "7g.141gb", 18, 35, 71, 141),
    ROWS_OF("B200", "1g.23gb", "1g.23gb+me", "1g.45gb", "2g.45gb", "3g.90gb", "4g.90gb",
            "7g.180gb", 23, 45, 90, 180),
};

#define N_PROFILE_ROWS (sizeof(profile_rows) / sizeof(profile_rows[0]))

static const sp_mig_profile *table_entry(const char *model, const char *name)
{
    size_t n = 0;
    const sp_mig_profile *t = sp_mig_profiles(model, &n);
    for (size_t i = 0; t && i < n; i++)
        if (strcmp(t[i].name, name) == 0)
            return &t[i];
    return NULL;
}

/* "{0,2,4,6}:2" */
static void lgipp_text(const sp_mig_profile *p, char *buf, size_t size)
{
    snprintf(buf, size, "{");
    for (unsigned s = 0; s < 8; s++) {
        size_t len = strlen(buf);
        if (p->placements & (1u << s))
            snprintf(buf + len, size - len, "%s%u", buf[1] ? "," : "", s);
    }
    size_t len = strlen(buf);
    snprintf(buf + len, size - len, "}:%u", p->span);
}

static void test_profile_tables(void **state)
{
    (void)state;
    for (size_t i = 0; i < N_PROFILE_ROWS; i++) {
        const profile_row *r = &profile_rows[i];
        const sp_mig_profile *p = table_entry(r->model, r->name);
        char label[96], lgipp[48];
        snprintf(label, sizeof(label), "%s %s", r->model, r->name);
        CHECK(p != NULL, label);
        CHECK(p->compute_slices == r->compute, label);
        CHECK(p->mem_slices == r->mem_slices && p->span == r->mem_slices, label);
        CHECK(p->mem_gib == r->gib, label);
        CHECK(p->max_instances == r->max, label);
        lgipp_text(p, lgipp, sizeof(lgipp));
        if (strcmp(lgipp, r->lgipp) != 0)
            fail_msg("%s: placements %s, want %s", label, lgipp, r->lgipp);
    }
    /* Nothing more than the guide lists: seven profiles on each GPU. */
    for (size_t i = 0; i < N_PROFILE_ROWS; i += 7) {
        size_t n = 0;
        CHECK(sp_mig_profiles(profile_rows[i].model, &n) && n == 7, profile_rows[i].model);
    }
}

static void test_profile_alone_gives_most_that_fit(void **state)
{
    (void)state;
    for (size_t i = 0; i < N_PROFILE_ROWS; i++) {
        const profile_row *r = &profile_rows[i];
        sp_mig_layout l;
        sp_err err;
        char label[96], got[64];
        snprintf(label, sizeof(label), "%s %s", r->model, r->name);
        int rc = parse(r->model, r->name, &l, &err);
        if (rc != SP_OK)
            fail_msg("%s: refused: %s", label, err.msg);
        CHECK(l.n == r->max, label);
        for (unsigned k = 0; k < l.n; k++)
            CHECK(l.profiles[k] == table_entry(r->model, r->name), label);
        check_placement(&l, label);
        starts_text(&l, got, sizeof(got));
        if (strcmp(got, r->starts) != 0)
            fail_msg("%s: starts %s, want %s", label, got, r->starts);
    }
}

static void test_one_more_than_the_most_is_refused(void **state)
{
    (void)state;
    for (size_t i = 0; i < N_PROFILE_ROWS; i++) {
        const profile_row *r = &profile_rows[i];
        sp_mig_layout l;
        sp_err err;
        char label[96], layout[64];
        snprintf(label, sizeof(label), "%s %s*%u", r->model, r->name, r->max + 1);
        snprintf(layout, sizeof(layout), "%s*%u", r->name, r->max + 1);
        CHECK(parse(r->model, layout, &l, &err) == SP_E_INVALID, label);
        CHECK(err.code == SP_E_INVALID, label);
        CHECK_MSG(err, r->one_more, label);
        CHECK(l.n == 0, label);
    }
}

/* ---- Layouts that fit --------------------------------------------------------------------- */

typedef struct valid_row {
    const char *model;
    const char *layout;
    const char *starts; /* the only starts -lgipp allows for it, as a sorted set; NULL: several */
} valid_row;

static const valid_row valid_rows[] = {
    /* A100 40GB: the guide's placement diagram, mig-parted's all-balanced */
    {"A100-40GB", "4g.20gb + 3g.20gb", "0 4"},
    {"A100-40GB", "3g.20gb + 4g.20gb", "0 4"},
    {"A100-40GB", "3g.20gb + 3g.20gb", "0 4"},
    {"A100-40GB", "4g.20gb + 2g.10gb + 1g.5gb", "0 4 6"},
    {"A100-40GB", "4g.20gb + 1g.5gb*3", "0 4 5 6"},
    {"A100-40GB", "4g.20gb + 1g.10gb*2", "0 4 6"},
    {"A100-40GB", "3g.20gb + 2g.10gb + 1g.5gb", NULL},
    {"A100-40GB", "3g.20gb + 1g.5gb*4", "0 1 2 3 4"},
    {"A100-40GB", "2g.10gb*2 + 3g.20gb", "0 2 4"},
    {"A100-40GB", "1g.5gb*2 + 2g.10gb + 3g.20gb", NULL},
    {"A100-40GB", "2g.10gb*3 + 1g.5gb", "0 2 4 6"},
    {"A100-40GB", "2g.10gb*2 + 1g.5gb*3", NULL},
    {"A100-40GB", "2g.10gb + 1g.5gb*5", NULL},
    {"A100-40GB", "1g.10gb + 2g.10gb*3", "0 2 4 6"},
    {"A100-40GB", "1g.5gb+me + 1g.5gb*6", "0 1 2 3 4 5 6"},
    {"A100-40GB", "1g.10gb + 1g.5gb*5", NULL},
    {"A100-40GB", "7g.40gb", "0"},
    /* A100 80GB */
    {"A100-80GB", "4g.40gb + 3g.40gb", "0 4"},
    {"A100-80GB", "1g.10gb*2 + 2g.20gb + 3g.40gb", NULL},
    {"A100-80GB", "1g.10gb*4 + 1g.20gb*2", NULL},
    {"A100-80GB", "2g.20gb*3 + 1g.10gb+me", "0 2 4 6"},
    {"A100-80GB", "1g.20gb*4", "0 2 4 6"},
    {"A100-80GB", "3g.40gb + 1g.20gb*2", NULL},
    /* H100 80GB SXM5 */
    {"H100-SXM", "4g.40gb + 3g.40gb", "0 4"},
    {"H100-SXM", "3g.40gb + 3g.40gb", "0 4"},
    {"H100-SXM", "1g.10gb*2 + 2g.20gb + 3g.40gb", NULL},
    {"H100-SXM", "1g.10gb*4 + 1g.20gb*2", NULL},
    {"H100-SXM", "1g.10gb+me + 1g.10gb*6", "0 1 2 3 4 5 6"},
    {"H100-SXM", "2g.20gb*2 + 3g.40gb", "0 2 4"},
    {"H100-SXM", "1g.20gb + 2g.20gb*3", "0 2 4 6"},
    {"H100-SXM", "4g.40gb + 1g.20gb*2", "0 4 6"},
    {"H100-SXM", "3g.40gb + 2g.20gb + 1g.10gb*2", NULL},
    /* H100 80GB PCIe */
    {"H100-PCIe", "4g.40gb + 2g.20gb + 1g.10gb", "0 4 6"},
    {"H100-PCIe", "1g.20gb + 2g.20gb + 4g.40gb", "0 4 6"},
    {"H100-PCIe", "3g.40gb + 2g.20gb + 1g.10gb + 1g.10gb+me", NULL},
    {"H100-PCIe", "2g.20gb + 1g.10gb*5", NULL},
    /* H100 NVL 94GB */
    {"H100-NVL", "1g.12gb*2 + 2g.24gb + 3g.47gb", NULL},
    {"H100-NVL", "4g.47gb + 3g.47gb", "0 4"},
    {"H100-NVL", "1g.12gb+me + 2g.24gb*3", "0 2 4 6"},
    {"H100-NVL", "1g.24gb*2 + 3g.47gb", NULL},
    {"H100-NVL", "1g.24gb + 1g.12gb*6", "0 1 2 3 4 5 6"},
    /* H200 141GB */
    {"H200", "1g.18gb*2 + 2g.35gb + 3g.71gb", NULL},
    {"H200", "4g.71gb + 1g.35gb*2", "0 4 6"},
    {"H200", "1g.18gb+me + 1g.18gb + 2g.35gb + 3g.71gb", NULL},
    {"H200", "3g.71gb + 3g.71gb", "0 4"},
    {"H200", "1g.35gb*3 + 1g.18gb*2", NULL},
    /* B200 180GB */
    {"B200", "1g.23gb*2 + 2g.45gb + 3g.90gb", NULL},
    {"B200", "4g.90gb + 3g.90gb", "0 4"},
    {"B200", "2g.45gb*3 + 1g.45gb", "0 2 4 6"},
    {"B200", "1g.45gb*3 + 1g.23gb", NULL},
    {"B200", "1g.23gb+me + 1g.23gb*3 + 3g.90gb", "0 1 2 3 4"},
};

static void test_valid_layouts(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(valid_rows) / sizeof(valid_rows[0]); i++) {
        const valid_row *r = &valid_rows[i];
        sp_mig_layout l;
        sp_err err;
        names nm;
        char label[128], got[64];
        snprintf(label, sizeof(label), "%s %s", r->model, r->layout);
        split(r->layout, &nm);
        if (parse(r->model, r->layout, &l, &err) != SP_OK)
            fail_msg("%s: refused: %s", label, err.msg);
        CHECK(l.n == (nm.n == 1 ? 1 : nm.n), label);
        for (unsigned k = 0; k < l.n; k++)
            CHECK(l.profiles[k] == table_entry(r->model, nm.ptr[k < nm.n ? k : 0]), label);
        check_placement(&l, label);
        starts_text(&l, got, sizeof(got));
        if (r->starts && strcmp(got, r->starts) != 0)
            fail_msg("%s: starts %s, want %s", label, got, r->starts);
    }
}

/* ---- Layouts that do not fit ------------------------------------------------------------ */

typedef struct invalid_row {
    const char *model;
    const char *layout;
    const char *why;   /* the limit it breaks */
    const char *would; /* what the message offers instead */
} invalid_row;

static const invalid_row invalid_rows[] = {
    {"A100-40GB", "4g.20gb + 4g.20gb", "compute slices 8 > 7",
     "this would fit: 4g.20gb, with room for one more of 1g.5gb, 1g.5gb+me, 1g.10gb, 2g.10gb, "
     "3g.20gb"},
    /* 3g takes 4 of the 8 memory slices: two of them leave no room for a 1g */
    {"A100-40GB", "3g.20gb + 3g.20gb + 1g.5gb", "memory slices 9 > 8",
     "this would fit: 3g.20gb + 3g.20gb"},
    {"A100-40GB", "3g.20gb*3", "compute slices 9 > 7", "this would fit: 3g.20gb + 3g.20gb"},
    {"A100-40GB", "7g.40gb + 1g.5gb", "compute slices 8 > 7", "this would fit: 7g.40gb"},
    {"A100-40GB", "1g.5gb + 7g.40gb", "compute slices 8 > 7",
     "this would fit: 1g.5gb, with room for one more of 1g.5gb, 1g.5gb+me, 1g.10gb, 2g.10gb, "
     "3g.20gb, 4g.20gb"},
    {"A100-40GB", "1g.5gb+me + 1g.5gb+me", "at most 1 instance of 1g.5gb+me per GPU, not 2",
     "this would fit: 1g.5gb+me, with room for one more of 1g.5gb, 1g.10gb, 2g.10gb, 3g.20gb, "
     "4g.20gb"},
    {"A100-40GB", "1g.10gb*5", "memory slices 10 > 8",
     "this would fit: 1g.10gb + 1g.10gb + 1g.10gb + 1g.10gb"},
    {"A100-40GB", "1g.10gb*4 + 1g.5gb", "memory slices 9 > 8",
     "this would fit: 1g.10gb + 1g.10gb + 1g.10gb + 1g.10gb"},
    {"A100-40GB", "4g.20gb + 2g.10gb*2", "compute slices 8 > 7",
     "this would fit: 4g.20gb + 2g.10gb, with room for one more of 1g.5gb, 1g.5gb+me, 1g.10gb"},
    {"A100-40GB", "2g.10gb*4", "compute slices 8 > 7",
     "this would fit: 2g.10gb + 2g.10gb + 2g.10gb, with room for one more of 1g.5gb, "
     "1g.5gb+me, 1g.10gb"},
    {"A100-40GB", "3g.20gb + 2g.10gb*2 + 1g.5gb", "compute slices 8 > 7",
     "this would fit: 3g.20gb + 2g.10gb + 2g.10gb"},
    {"A100-40GB", "1g.5gb*8", "8 MIG instances listed; at most 7 fit on one NVIDIA A100", ""},
    {"A100-80GB", "1g.10gb+me + 3g.40gb + 3g.40gb", "memory slices 9 > 8",
     "this would fit: 1g.10gb+me + 3g.40gb, with room for one more of 1g.10gb, 1g.20gb, "
     "2g.20gb"},
    {"A100-80GB", "1g.20gb*5", "memory slices 10 > 8", "this would fit: 1g.20gb + 1g.20gb"},
    {"A100-80GB", "4g.40gb + 4g.40gb", "compute slices 8 > 7", "this would fit: 4g.40gb,"},
    {"H100-SXM", "4g.40gb + 4g.40gb", "compute slices 8 > 7",
     "this would fit: 4g.40gb, with room for one more of 1g.10gb, 1g.10gb+me, 1g.20gb, 2g.20gb, "
     "3g.40gb"},
    {"H100-SXM", "3g.40gb*3", "compute slices 9 > 7", "this would fit: 3g.40gb + 3g.40gb"},
    {"H100-SXM", "1g.10gb+me*2", "at most 1 instance of 1g.10gb+me per GPU, not 2",
     "this would fit: 1g.10gb+me, with room"},
    {"H100-SXM", "7g.80gb + 1g.10gb", "compute slices 8 > 7", "this would fit: 7g.80gb"},
    {"H100-SXM", "2g.20gb*3 + 1g.20gb + 1g.10gb", "compute slices 8 > 7",
     "this would fit: 2g.20gb + 2g.20gb + 2g.20gb + 1g.20gb"},
    {"H100-SXM", "1g.20gb*4 + 1g.10gb", "memory slices 9 > 8",
     "this would fit: 1g.20gb + 1g.20gb + 1g.20gb + 1g.20gb"},
    {"H100-SXM", "1g.10gb*8", "8 MIG instances listed; at most 7 fit on one NVIDIA H100", ""},
    {"H100-PCIe", "3g.40gb + 3g.40gb + 1g.10gb", "memory slices 9 > 8",
     "this would fit: 3g.40gb + 3g.40gb"},
    {"H100-PCIe", "4g.40gb + 3g.40gb + 1g.10gb", "compute slices 8 > 7",
     "this would fit: 4g.40gb + 3g.40gb"},
    {"H100-NVL", "3g.47gb + 3g.47gb + 1g.12gb", "memory slices 9 > 8",
     "this would fit: 3g.47gb + 3g.47gb"},
    {"H100-NVL", "1g.12gb+me*2", "at most 1 instance of 1g.12gb+me per GPU, not 2", ""},
    {"H100-NVL", "4g.47gb*2", "compute slices 8 > 7", "this would fit: 4g.47gb,"},
    {"H200", "1g.18gb+me + 1g.35gb + 2g.35gb + 3g.71gb", "memory slices 9 > 8",
     "this would fit: 1g.18gb+me + 1g.35gb + 2g.35gb, with room for one more of 1g.18gb"},
    {"H200", "7g.141gb + 7g.141gb", "compute slices 14 > 7", "this would fit: 7g.141gb"},
    {"H200", "1g.35gb*5", "memory slices 10 > 8", ""},
    {"B200", "4g.90gb + 4g.90gb", "compute slices 8 > 7", "this would fit: 4g.90gb,"},
    {"B200", "3g.90gb*2 + 1g.23gb+me", "memory slices 9 > 8",
     "this would fit: 3g.90gb + 3g.90gb"},
    {"B200", "1g.23gb+me*2", "at most 1 instance of 1g.23gb+me per GPU, not 2", ""},
    {"B200", "2g.45gb*4", "compute slices 8 > 7",
     "this would fit: 2g.45gb + 2g.45gb + 2g.45gb, with room for one more of 1g.23gb, "
     "1g.23gb+me, 1g.45gb"},
};

static void test_invalid_layouts(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(invalid_rows) / sizeof(invalid_rows[0]); i++) {
        const invalid_row *r = &invalid_rows[i];
        sp_mig_layout l;
        sp_err err;
        char label[128];
        snprintf(label, sizeof(label), "%s %s", r->model, r->layout);
        CHECK(parse(r->model, r->layout, &l, &err) == SP_E_INVALID, label);
        CHECK(err.code == SP_E_INVALID, label);
        CHECK_MSG(err, r->why, label);
        CHECK_MSG(err, r->would, label);
        CHECK_MSG(err, display(r->model), label);
        CHECK(l.n == 0, label);
    }
}

/* Two 3g leave no memory slice for anything else: nothing to offer beyond them. */
static void test_full_gpu_offers_no_room(void **state)
{
    (void)state;
    sp_mig_layout l;
    sp_err err;
    assert_int_equal(parse("A100-40GB", "3g.20gb + 3g.20gb + 1g.5gb", &l, &err), SP_E_INVALID);
    assert_null(strstr(err.msg, "room"));
    assert_string_equal(err.msg, "MIG layout 3g.20gb + 3g.20gb + 1g.5gb does not fit on one "
                                 "NVIDIA A100 40GB SXM4: memory slices 9 > 8; this would fit: "
                                 "3g.20gb + 3g.20gb");
}

/* ---- Unknown profiles ------------------------------------------------------------------- */

typedef struct unknown_row {
    const char *model;
    const char *layout;
    const char *bad;     /* the name the message quotes */
    const char *mean;    /* the suggestion, or NULL for none */
} unknown_row;

static const unknown_row unknown_rows[] = {
    /* another card's name for the same slice count */
    {"H100-SXM", "3g.20gb", "3g.20gb", "3g.40gb"},
    {"H100-SXM", "7g.40gb", "7g.40gb", "7g.80gb"},
    {"A100-40GB", "3g.40gb", "3g.40gb", "3g.20gb"},
    {"A100-40GB", "7g.80gb", "7g.80gb", "7g.40gb"},
    {"A100-80GB", "1g.5gb", "1g.5gb", "1g.10gb"},
    {"A100-80GB", "1g.5gb+me", "1g.5gb+me", "1g.10gb+me"},
    {"H100-NVL", "3g.48gb", "3g.48gb", "3g.47gb"},
    {"H100-NVL", "7g.96gb", "7g.96gb", "7g.94gb"},
    {"H100-NVL", "1g.10gb", "1g.10gb", "1g.12gb"},
    {"H200", "7g.140gb", "7g.140gb", "7g.141gb"},
    {"H200", "4g.70gb", "4g.70gb", "4g.71gb"},
    {"H200", "1g.18gb.me", "1g.18gb.me", "1g.18gb+me"},
    {"B200", "3g.80gb", "3g.80gb", "3g.90gb"},
    {"B200", "2g.40gb", "2g.40gb", "2g.45gb"},
    {"B200", "7g.192gb", "7g.192gb", "7g.180gb"},
    /* typos */
    {"H100-SXM", "3g40gb", "3g40gb", "3g.40gb"},
    {"H100-PCIe", "2g.20bg", "2g.20bg", "2g.20gb"},
    {"B200", "1g.45g", "1g.45g", "1g.45gb"},
    /* one bad name in a list */
    {"H100-SXM", "3g.40gb + 3g.20gb", "3g.20gb", "3g.40gb"},
    {"A100-40GB", "4g.20gb + 3g.20gb + 1g.6gb", "1g.6gb", "1g.5gb"},
    /* nothing close */
    {"H100-SXM", "banana", "banana", NULL},
    {"B200", "large", "large", NULL},
};

static void test_unknown_profiles(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(unknown_rows) / sizeof(unknown_rows[0]); i++) {
        const unknown_row *r = &unknown_rows[i];
        sp_mig_layout l;
        sp_err err;
        char label[128], want[160];
        snprintf(label, sizeof(label), "%s %s", r->model, r->layout);
        CHECK(parse(r->model, r->layout, &l, &err) == SP_E_INVALID, label);
        snprintf(want, sizeof(want), "unknown MIG profile '%s' for %s", r->bad, display(r->model));
        CHECK_MSG(err, want, label);
        CHECK_MSG(err, "valid profiles: ", label);
        CHECK_MSG(err, sp_mig_profiles(r->model, NULL)[6].name, label);
        if (r->mean) {
            snprintf(want, sizeof(want), "did you mean %s?", r->mean);
            CHECK_MSG(err, want, label);
        } else {
            CHECK(strstr(err.msg, "did you mean") == NULL, label);
        }
        CHECK(l.n == 0, label);
    }
}

static void test_unknown_profile_message(void **state)
{
    (void)state;
    sp_mig_layout l;
    sp_err err;
    char want[SP_ERR_MSG_MAX];
    assert_int_equal(parse("H100-SXM", "3g.20gb", &l, &err), SP_E_INVALID);
    snprintf(want, sizeof(want),
             "unknown MIG profile '3g.20gb' for %s; did you mean 3g.40gb? valid profiles: "
             "1g.10gb, 1g.10gb+me, 1g.20gb, 2g.20gb, 3g.40gb, 4g.40gb, 7g.80gb",
             display("H100-SXM"));
    assert_string_equal(err.msg, want);
}

/* ---- Spellings ---------------------------------------------------------------------------- */

typedef struct spelling_row {
    const char *model;
    const char *name;
    const char *canonical;
    unsigned n;
} spelling_row;

static const spelling_row spelling_rows[] = {
    {"h100-sxm", "3G.40GB", "3g.40gb", 2},
    {"H100-PCIE", "1G.10GB+ME", "1g.10gb+me", 1},
    {"a100-40gb", "2G.10Gb", "2g.10gb", 3},
    {"A100-80GB", "MIG 1g.10gb", "1g.10gb", 7},
    {"h200", "mig-7g.141gb", "7g.141gb", 1},
    {"B200", "nvidia.com/mig-1g.45gb", "1g.45gb", 4},
    {"h100-nvl", "Mig 3g.47GB", "3g.47gb", 2},
};

static void test_spellings(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(spelling_rows) / sizeof(spelling_rows[0]); i++) {
        const spelling_row *r = &spelling_rows[i];
        const char *one[1] = {r->name};
        sp_mig_layout l;
        sp_err err = {0};
        char label[96];
        snprintf(label, sizeof(label), "%s %s", r->model, r->name);
        if (sp_mig_layout_parse(r->model, one, 1, &l, &err) != SP_OK)
            fail_msg("%s: refused: %s", label, err.msg);
        CHECK(l.n == r->n, label);
        CHECK(strcmp(l.profiles[0]->name, r->canonical) == 0, label);
    }
}

/* ---- Models ------------------------------------------------------------------------------- */

static const char *const no_mig_keys[] = {"T4", "L4", "L40S", "A10G", "V100", "V100-32GB",
                                          "t4", "l40s", "RTX6000-Ada", "MI300X", "Trainium2"};

static void check_refused_model(const char *key, const char *want)
{
    const char *one[1] = {"1g.10gb"};
    sp_mig_layout l;
    sp_err err = {0};
    size_t n = 99;
    CHECK(sp_mig_profiles(key, &n) == NULL && n == 0, key);
    CHECK(sp_mig_layout_parse(key, one, 1, &l, &err) == SP_E_INVALID, key);
    CHECK(err.code == SP_E_INVALID, key);
    CHECK_MSG(err, want, key);
    CHECK_MSG(err, "MIG-capable models: A100-40GB, A100-80GB, H100-SXM, H100-PCIe, H100-NVL, "
                   "H200, B200", key);
}

static void test_models_without_mig(void **state)
{
    (void)state;
    char want[128];
    for (size_t i = 0; i < sizeof(no_mig_keys) / sizeof(no_mig_keys[0]); i++) {
        snprintf(want, sizeof(want), "%s does not support MIG", display(no_mig_keys[i]));
        check_refused_model(no_mig_keys[i], want);
    }
    CHECK(strcmp(display("T4"), "(no such model)") != 0, "T4 is a known model");
    check_refused_model("H100-SMX", "unknown accelerator model 'H100-SMX'");
    check_refused_model("", "unknown accelerator model ''");
    check_refused_model(NULL, "unknown accelerator model '(none)'");
}

/* The catalog's mig flag and these tables must agree, model by model. */
static void test_every_mig_model_has_a_table(void **state)
{
    (void)state;
    size_t n_models = 0, with_table = 0;
    const sp_accel_model *models = sp_accel_models(&n_models);
    for (size_t i = 0; i < n_models; i++) {
        size_t n = 0;
        bool has = sp_mig_profiles(models[i].key, &n) != NULL;
        if (has != models[i].mig)
            fail_msg("%s: catalog says mig=%d, profile table %s", models[i].key, models[i].mig,
                     has ? "present" : "absent");
        with_table += has;
    }
    assert_int_equal(with_table, 7);
}

/* Every table is self-consistent: spans inside 8 slices, starts allowed, no empty rows. */
static void test_tables_are_well_formed(void **state)
{
    (void)state;
    static const char *const keys[] = {"A100-40GB", "A100-80GB", "H100-SXM", "H100-PCIe",
                                       "H100-NVL",  "H200",      "B200"};
    for (size_t k = 0; k < 7; k++) {
        size_t n = 0;
        const sp_mig_profile *t = sp_mig_profiles(keys[k], &n);
        CHECK(t != NULL, keys[k]);
        for (size_t i = 0; i < n; i++) {
            unsigned last = 0;
            for (unsigned s = 0; s < 8; s++)
                if (t[i].placements & (1u << s))
                    last = s;
            CHECK(t[i].placements != 0 && last + t[i].span <= 8, t[i].name);
            CHECK(t[i].max_instances >= 1 && t[i].max_instances <= 7, t[i].name);
            CHECK(t[i].compute_slices >= 1 && t[i].compute_slices <= 7, t[i].name);
        }
    }
}

/* ---- sp_mig_layout_check and argument errors ----------------------------------------------- */

static void test_check_fills_starts(void **state)
{
    (void)state;
    sp_mig_layout l = {0};
    sp_err err = {0};
    l.profiles[0] = table_entry("H100-SXM", "3g.40gb");
    l.profiles[1] = table_entry("H100-SXM", "4g.40gb");
    l.n = 2;
    l.starts[0] = l.starts[1] = 99;
    assert_int_equal(sp_mig_layout_check("H100-SXM", &l, &err), SP_OK);
    assert_int_equal(l.starts[0], 4);
    assert_int_equal(l.starts[1], 0);
}

static void test_check_rejects_other_cards_profiles(void **state)
{
    (void)state;
    sp_mig_layout l = {0};
    sp_err err = {0};
    l.profiles[0] = table_entry("H100-SXM", "3g.40gb");
    l.profiles[1] = table_entry("A100-40GB", "3g.20gb");
    l.n = 2;
    assert_int_equal(sp_mig_layout_check("H100-SXM", &l, &err), SP_E_INVALID);
    assert_non_null(strstr(err.msg, "MIG instance 2 is not a profile of NVIDIA H100 80GB SXM5"));
    assert_non_null(strstr(err.msg, "valid profiles: 1g.10gb,"));
    l.profiles[1] = NULL;
    assert_int_equal(sp_mig_layout_check("H100-SXM", &l, &err), SP_E_INVALID);
    assert_non_null(strstr(err.msg, "MIG instance 2 is not a profile"));
}

static void test_check_counts(void **state)
{
    (void)state;
    sp_mig_layout l = {0};
    sp_err err = {0};
    assert_int_equal(sp_mig_layout_check("H200", &l, &err), SP_E_INVALID);
    assert_non_null(strstr(err.msg, "1 to 7 instances per GPU, not 0"));
    for (unsigned i = 0; i < SP_MIG_MAX_INSTANCES; i++)
        l.profiles[i] = table_entry("H200", "1g.18gb");
    l.n = 8;
    assert_int_equal(sp_mig_layout_check("H200", &l, &err), SP_E_INVALID);
    assert_non_null(strstr(err.msg, "not 8"));
    assert_int_equal(sp_mig_layout_check("H200", NULL, &err), SP_E_INVALID);
    l.n = 7;
    assert_int_equal(sp_mig_layout_check("H200", &l, NULL), SP_OK);
    assert_int_equal(sp_mig_layout_check("L4", &l, NULL), SP_E_INVALID);
}

static void test_parse_argument_errors(void **state)
{
    (void)state;
    sp_mig_layout l;
    sp_err err = {0};
    const char *one[1] = {"1g.10gb"};
    assert_int_equal(sp_mig_layout_parse("H100-SXM", NULL, 0, &l, &err), SP_E_INVALID);
    assert_non_null(strstr(err.msg, "no MIG profile given for NVIDIA H100 80GB SXM5; valid "
                                    "profiles: 1g.10gb, 1g.10gb+me,"));
    assert_int_equal(sp_mig_layout_parse("H100-SXM", one, 0, &l, &err), SP_E_INVALID);
    assert_int_equal(sp_mig_layout_parse("H100-SXM", one, 1, NULL, &err), SP_E_INVALID);
    const char *with_null[2] = {"1g.10gb", NULL};
    assert_int_equal(sp_mig_layout_parse("H100-SXM", with_null, 2, &l, &err), SP_E_INVALID);
    assert_non_null(strstr(err.msg, "unknown MIG profile ''"));
    assert_int_equal(sp_mig_layout_parse("H100-SXM", one, 1, &l, NULL), SP_OK);
    assert_int_equal(l.n, 7);
}

/* A refused layout is left empty, so a caller cannot use half of it by mistake. */
static void test_refused_layout_is_cleared(void **state)
{
    (void)state;
    sp_mig_layout l;
    sp_err err;
    assert_int_equal(parse("B200", "3g.90gb", &l, &err), SP_OK);
    assert_int_equal(l.n, 2);
    assert_int_equal(parse("B200", "3g.90gb*3", &l, &err), SP_E_INVALID);
    assert_int_equal(l.n, 0);
    assert_null(l.profiles[0]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_profile_tables),
        cmocka_unit_test(test_profile_alone_gives_most_that_fit),
        cmocka_unit_test(test_one_more_than_the_most_is_refused),
        cmocka_unit_test(test_valid_layouts),
        cmocka_unit_test(test_invalid_layouts),
        cmocka_unit_test(test_full_gpu_offers_no_room),
        cmocka_unit_test(test_unknown_profiles),
        cmocka_unit_test(test_unknown_profile_message),
        cmocka_unit_test(test_spellings),
        cmocka_unit_test(test_models_without_mig),
        cmocka_unit_test(test_every_mig_model_has_a_table),
        cmocka_unit_test(test_tables_are_well_formed),
        cmocka_unit_test(test_check_fills_starts),
        cmocka_unit_test(test_check_rejects_other_cards_profiles),
        cmocka_unit_test(test_check_counts),
        cmocka_unit_test(test_parse_argument_errors),
        cmocka_unit_test(test_refused_layout_is_cleared),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
