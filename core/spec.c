/*
 * The accelerator spec grammar, shared by CLI arguments and pool files.
 *
 *   spec   := term | '[' list ']' | '{' list '}' | list
 *   list   := term (',' term)*               ordered unless in braces
 *   term   := head ('!')? (':' item)*
 *   head   := NAME | MEM                     MEM alone: any NVIDIA GPU with that memory
 *   item   := COUNT | COUNT '..' COUNT | MEM
 *   MEM    := INT ('GB' | 'GiB' | 'TB') '+'?
 *
 * Names are case-insensitive. A term without a count asks for one device.
 */
#include "accel.h"
#include "util.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define COUNT_LIMIT 1024
#define TERM_TEXT_MAX 128

typedef struct cursor {
    const char *text; /* the whole spec, for columns */
    const char *p;
    const char *end;
} cursor;

static int col(const cursor *c, const char *at)
{
    return (int)(at - c->text) + 1;
}

/* Every message from here is a constant phrase or "%s" of one: fmt is checked by callers. */
__attribute__((format(printf, 4, 5))) static int fail(sp_err *err, const cursor *c,
                                                      const char *at, const char *fmt, ...)
{
    char what[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    return sp_err_set(err, SP_E_INVALID, "column %d: %s", col(c, at), what);
}

/* Reads digits into *v; false when there are none or the number is absurd. */
static bool read_uint(const char **p, const char *end, unsigned *v)
{
    const char *s = *p;
    unsigned long n = 0;
    while (s < end && isdigit((unsigned char)*s)) {
        n = n * 10 + (unsigned long)(*s - '0');
        if (n > 1000000)
            return false;
        s++;
    }
    if (s == *p)
        return false;
    *v = (unsigned)n;
    *p = s;
    return true;
}

static bool unit_is(const char *s, size_t n, const char *unit)
{
    return strlen(unit) == n && strncasecmp(s, unit, n) == 0;
}

/* MEM at [s, e): "80GB", "24GB+", "1TB". Sets gib and at_least; false if it is not one. */
static bool parse_mem(const char *s, const char *e, unsigned *gib, bool *at_least)
{
    unsigned v;
    const char *p = s;
    if (!read_uint(&p, e, &v))
        return false;
    *at_least = e > p && e[-1] == '+';
    const char *ue = *at_least ? e - 1 : e;
    size_t un = (size_t)(ue - p);
    if (unit_is(p, un, "GB") || unit_is(p, un, "GiB") || unit_is(p, un, "G"))
        *gib = v;
    else if (unit_is(p, un, "TB") || unit_is(p, un, "TiB"))
        *gib = v * 1024;
    else
        return false;
    return *gib > 0;
}

static bool is_name_char(char ch)
{
    return isalnum((unsigned char)ch) || ch == '-' || ch == '_' || ch == '.';
}

/* Fills term->models from a known name, or fails with a suggestion. */
static int resolve_name(sp_spec_term *t, const cursor *c, const char *at, sp_err *err)
{
    const sp_accel_alias *a = sp_accel_alias_find(t->name);
    if (!a) {
        const char *hint = sp_accel_suggest(t->name);
        char msg[160];
        if (hint)
            snprintf(msg, sizeof(msg), "unknown accelerator '%s'; did you mean %s?", t->name,
                     hint);
        else
            snprintf(msg, sizeof(msg),
                     "unknown accelerator '%s'; `skypool accelerators` lists the known names",
                     t->name);
        return fail(err, c, at, "%s", msg);
    }
    /* A memory constraint chooses within the family ("A100:80GB"); otherwise the alias decides. */
    if (t->mem_gib && a->family)
        t->n_models = (unsigned)sp_accel_family(a->family, t->models, SP_SPEC_MAX_MODELS);
    else if (a->model) {
        t->models[0] = sp_accel_by_key(a->model);
        t->n_models = 1;
    } else
        t->n_models = (unsigned)sp_accel_family(a->family, t->models, SP_SPEC_MAX_MODELS);
    return SP_OK;
}

/* A name-less term ("24GB+"): every NVIDIA GPU whose memory fits. */
static void resolve_memory_only(sp_spec_term *t)
{
    size_t n;
    const sp_accel_model *all = sp_accel_models(&n);
    t->n_models = 0;
    for (size_t i = 0; i < n && t->n_models < SP_SPEC_MAX_MODELS; i++)
        if (all[i].vendor == SP_VENDOR_NVIDIA)
            t->models[t->n_models++] = &all[i];
}

static bool mem_fits(const sp_spec_term *t, const sp_accel_model *m)
{
    if (!t->mem_gib)
        return true;
    return t->mem_at_least ? m->mem_gib >= t->mem_gib : m->mem_gib == t->mem_gib;
}

/* Keeps only the candidates the memory constraint allows. */
static int apply_memory(sp_spec_term *t, const cursor *c, const char *at, sp_err *err)
{
    unsigned kept = 0;
    for (unsigned i = 0; i < t->n_models; i++)
        if (mem_fits(t, t->models[i]))
            t->models[kept++] = t->models[i];
    if (kept)
        t->n_models = kept;
    else {
        char msg[200];
        bool named = sp_accel_alias_find(t->name) != NULL;
        snprintf(msg, sizeof(msg), "no %s has %s%uGB of memory per device",
                 named ? t->name : "NVIDIA GPU", t->mem_at_least ? "at least " : "", t->mem_gib);
        return fail(err, c, at, "%s", msg);
    }
    return SP_OK;
}

/* One ':'-separated item: a count, a count range, or a memory constraint. */
static int parse_item(sp_spec_term *t, const cursor *c, const char *s, const char *e,
                      bool *have_count, sp_err *err)
{
    unsigned lo, hi;
    bool at_least;
    const char *p = s;
    if (s == e)
        return fail(err, c, s, "%s", "empty item after ':'; write a count (H100:8) or memory (A100:80GB)");
    if (parse_mem(s, e, &lo, &at_least)) {
        if (t->mem_gib)
            return fail(err, c, s, "%s", "memory given twice");
        t->mem_gib = lo;
        t->mem_at_least = at_least;
        return SP_OK;
    }
    if (!read_uint(&p, e, &lo))
        return sp_err_set(err, SP_E_INVALID,
                          "column %d: '%.*s' is neither a count nor a memory size "
                          "(like 8, 1..8 or 80GB)",
                          col(c, s), (int)(e - s), s);
    hi = lo;
    if (p + 2 <= e && p[0] == '.' && p[1] == '.') {
        p += 2;
        if (!read_uint(&p, e, &hi))
            return fail(err, c, p, "%s", "a count range needs an upper bound, like 1..8");
    }
    if (p != e)
        return sp_err_set(err, SP_E_INVALID,
                          "column %d: unexpected '%.*s' after the count", col(c, p),
                          (int)(e - p), p);
    if (*have_count)
        return fail(err, c, s, "%s", "count given twice");
    if (lo < 1 || hi < lo || hi > COUNT_LIMIT)
        return sp_err_set(err, SP_E_INVALID,
                          "column %d: count must be 1 to %d, with the range's low end first",
                          col(c, s), COUNT_LIMIT);
    t->count_min = lo;
    t->count_max = hi;
    *have_count = true;
    return SP_OK;
}

static int parse_head(sp_spec_term *t, const cursor *c, const char **p, const char *e,
                      bool *memory_only, sp_err *err)
{
    const char *s = *p, *q = s;
    while (q < e && (is_name_char(*q) || *q == '+'))
        q++;
    if (q == s)
        return fail(err, c, s, "%s", "expected an accelerator name such as H100 or A100-80GB");
    if ((size_t)(q - s) >= sizeof(t->name))
        return fail(err, c, s, "%s", "accelerator name too long");
    memcpy(t->name, s, (size_t)(q - s));
    t->name[q - s] = '\0';
    *memory_only = parse_mem(s, q, &t->mem_gib, &t->mem_at_least);
    if (!*memory_only && strchr(t->name, '+'))
        return fail(err, c, s + (strchr(t->name, '+') - t->name), "%s",
                    "'+' belongs after a memory size, like 24GB+");
    *p = q;
    return SP_OK;
}

static int parse_term_at(const cursor *c, const char *s, const char *e, sp_spec_term *t,
                         sp_err *err)
{
    memset(t, 0, sizeof(*t));
    t->count_min = t->count_max = 1;
    const char *p = s;
    bool memory_only, have_count = false;
    int rc = parse_head(t, c, &p, e, &memory_only, err);
    if (rc)
        return rc;
    if (p < e && *p == '!') {
        t->exact = true;
        p++;
    }
    const char *items_at = p;
    while (p < e) {
        if (*p != ':')
            return sp_err_set(err, SP_E_INVALID, "column %d: unexpected '%c'; items follow ':'",
                              col(c, p), *p);
        const char *is = ++p;
        while (p < e && *p != ':')
            p++;
        if ((rc = parse_item(t, c, is, p, &have_count, err)))
            return rc;
    }
    if (memory_only)
        resolve_memory_only(t);
    else if ((rc = resolve_name(t, c, s, err)))
        return rc;
    return apply_memory(t, c, items_at < e ? items_at + 1 : s, err);
}

static void trim(const char **s, const char **e)
{
    while (*s < *e && isspace((unsigned char)**s))
        (*s)++;
    while (*e > *s && isspace((unsigned char)(*e)[-1]))
        (*e)--;
}

int sp_spec_term_parse(const char *text, sp_spec_term *term, sp_err *err)
{
    cursor c = {text, text, text + strlen(text)};
    const char *s = text, *e = c.end;
    trim(&s, &e);
    if (s == e)
        return sp_err_set(err, SP_E_INVALID, "empty accelerator spec; write one like H100:8");
    for (const char *q = s; q < e; q++)
        if (*q == ',' || *q == '[' || *q == '{' || isspace((unsigned char)*q))
            return fail(err, &c, q, "%s", "one accelerator here, like H100:8 (no lists)");
    return parse_term_at(&c, s, e, term, err);
}

/* Strips matching brackets and sets the kind. */
static int list_bounds(const cursor *c, const char **s, const char **e, sp_spec *spec,
                       sp_err *err)
{
    char open = **s, close = (*e)[-1];
    spec->kind = SP_SPEC_ONE;
    if (open == '[' || open == '{') {
        char want = open == '[' ? ']' : '}';
        if (close != want || *e - *s < 2)
            return sp_err_set(err, SP_E_INVALID, "column %d: '%c' is not closed by '%c'",
                              col(c, *s), open, want);
        spec->kind = open == '[' ? SP_SPEC_ORDERED : SP_SPEC_ANY_OF;
        (*s)++;
        (*e)--;
    } else if (close == ']' || close == '}')
        return sp_err_set(err, SP_E_INVALID, "column %d: '%c' has no opening bracket",
                          col(c, *e - 1), close);
    return SP_OK;
}

int sp_spec_parse(const char *text, sp_spec *spec, sp_err *err)
{
    memset(spec, 0, sizeof(*spec));
    cursor c = {text, text, text + strlen(text)};
    const char *s = text, *e = c.end;
    trim(&s, &e);
    if (s == e)
        return sp_err_set(err, SP_E_INVALID, "empty accelerator spec; write one like H100:8");
    int rc = list_bounds(&c, &s, &e, spec, err);
    if (rc)
        return rc;
    while (s <= e) {
        const char *comma = memchr(s, ',', (size_t)(e - s));
        const char *te = comma ? comma : e, *ts = s;
        trim(&ts, &te);
        if (ts == te)
            return fail(err, &c, ts, "%s", "empty entry in the list");
        if (spec->n_terms == SP_SPEC_MAX_TERMS)
            return sp_err_set(err, SP_E_INVALID, "column %d: more than %d accelerators in one spec",
                              col(&c, ts), SP_SPEC_MAX_TERMS);
        for (const char *q = ts; q < te; q++)
            if (strchr("[]{} \t", *q))
                return sp_err_set(err, SP_E_INVALID, "column %d: unexpected '%c'", col(&c, q),
                                  *q);
        if ((rc = parse_term_at(&c, ts, te, &spec->terms[spec->n_terms++], err)))
            return rc;
        if (!comma)
            break;
        s = comma + 1;
    }
    if (spec->n_terms > 1 && spec->kind == SP_SPEC_ONE)
        spec->kind = SP_SPEC_ORDERED;
    return SP_OK;
}
