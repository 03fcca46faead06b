/*
 * Pool files: the YAML reader and validator.
 *
 * Two passes. libyaml's events build a small tree, with an explicit stack rather than recursion,
 * that keeps every node's mark; the validator then walks the tree with one table of fields per
 * mapping. A tree rather than a streaming state machine because one rule spans sections
 * (check.mig depends on resources.accelerators, which may come later in the file).
 *
 * The rules are those of schemas/pool.schema.json: change both together. Scalars are typed as
 * YAML 1.2's core schema types them, which is what the schema's validators see (a plain 12.4 is
 * a number, "12.4" a string, true a boolean, an empty value null), but only the text is kept, so
 * min_cuda: 12.10 stays 12.10.
 */
#include "util.h"

#include <skypool/skypool.h>

#include <yaml.h>

#include <errno.h>
#include <locale.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define POOL_MAX_BYTES (1024 * 1024)
#define POOL_MAX_DEPTH 32     /* a pool file needs four levels; the rest is mischief */
#define KEY_PATH_MAX 320
#define FIELDS_MAX 12
#define NAME_MAX_LEN 63
#define NODES_MAX 1024
#define CPUS_MAX 9999
#define REGIONS_MAX 64
#define IMAGE_MAX 512
#define SSH_USER_MAX 32
#define SSH_KEY_MAX 4096
#define SSH_PROXY_MAX 1024
#define MIG_NAMES_MAX 7
/* AWS allows 50 tags per resource, and skypool adds its own. */
#define TAGS_MAX 32
#define TAG_KEY_MAX 128
#define TAG_VALUE_MAX 256

#define DIGITS "0123456789"
#define LOWER "abcdefghijklmnopqrstuvwxyz"
#define UPPER "ABCDEFGHIJKLMNOPQRSTUVWXYZ"

/*
 * The providers skypool ships. Third-party plugins exist, so this belongs to the loader once it
 * can tell the reader which plugins it found; until then only these pass.
 */
static const char *const known_providers[] = {"aws", "digitalocean", "modal"};

/* ---- The node tree ---------------------------------------------------------------------- */

typedef enum node_kind { NODE_SCALAR, NODE_SEQ, NODE_MAP } node_kind;

typedef struct node {
    node_kind kind;
    unsigned line, col;   /* 1-based, of the node's first character */
    char *text;           /* scalars: the value, NUL-terminated (it may hold a NUL of its own) */
    size_t len;
    bool plain;           /* unquoted: typed by the core schema */
    bool verbatim;        /* the text is the source's characters on one line: columns add up */
    unsigned text_col;    /* the column of the text's first character */
    struct node **kids;   /* a sequence's items; a mapping's keys and values, alternating */
    size_t n, cap;
} node;

static void node_free(node *n)
{
    if (!n)
        return;
    for (size_t i = 0; i < n->n; i++)
        node_free(n->kids[i]);
    free(n->kids);
    free(n->text);
    free(n);
}

static node *node_new(node_kind kind, yaml_mark_t mark)
{
    node *n = calloc(1, sizeof(*n));
    if (n) {
        n->kind = kind;
        n->line = (unsigned)mark.line + 1;
        n->col = (unsigned)mark.column + 1;
    }
    return n;
}

static bool node_add(node *parent, node *kid)
{
    if (parent->n == parent->cap) {
        size_t cap = parent->cap ? parent->cap * 2 : 4;
        node **kids = realloc(parent->kids, cap * sizeof(*kids));
        if (!kids)
            return false;
        parent->kids = kids;
        parent->cap = cap;
    }
    parent->kids[parent->n++] = kid;
    return true;
}

/* ---- Errors ----------------------------------------------------------------------------- */

typedef struct ctx {
    const char *file;
    sp_err *err;
    sp_pool *pool;
    const node *mig;      /* check.mig, checked once the accelerators are known */
    char path[KEY_PATH_MAX];
    size_t path_len;
} ctx;

/* "<file>:<line>:<column>: <key path>: <what is wrong>; <what to do>". */
static int report(ctx *c, unsigned line, unsigned col, const char *what)
{
    if (c->path_len)
        return sp_err_set(c->err, SP_E_INVALID, "%s:%u:%u: %s: %s", c->file, line, col, c->path,
                          what);
    return sp_err_set(c->err, SP_E_INVALID, "%s:%u:%u: %s", c->file, line, col, what);
}

static SP_PRINTF(4, 0) int vfail_at(ctx *c, unsigned line, unsigned col, const char *fmt,
                                    va_list ap)
{
    char what[SP_ERR_MSG_MAX];
    vsnprintf(what, sizeof(what), fmt, ap);
    return report(c, line, col, what);
}

static SP_PRINTF(4, 5) int fail_at(ctx *c, unsigned line, unsigned col, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = vfail_at(c, line, col, fmt, ap);
    va_end(ap);
    return rc;
}

static SP_PRINTF(3, 4) int fail(ctx *c, const node *at, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = vfail_at(c, at->line, at->col, fmt, ap);
    va_end(ap);
    return rc;
}

static int oom(ctx *c)
{
    return sp_err_set(c->err, SP_E_NOMEM, "%s: out of memory while reading the pool file",
                      c->file);
}

/* A path too long for the buffer is cut short: it only ever appears in messages. */
static void path_grew(ctx *c, size_t old, int n)
{
    bool cut = n < 0 || (size_t)n >= sizeof(c->path) - old;
    c->path_len = cut ? sizeof(c->path) - 1 : old + (size_t)n;
}

static size_t path_push_key(ctx *c, const char *key)
{
    size_t old = c->path_len;
    int n = snprintf(c->path + old, sizeof(c->path) - old, "%s%s", old ? "." : "", key);
    path_grew(c, old, n);
    return old;
}

static size_t path_push_index(ctx *c, size_t i)
{
    size_t old = c->path_len;
    int n = snprintf(c->path + old, sizeof(c->path) - old, "[%zu]", i);
    path_grew(c, old, n);
    return old;
}

static void path_pop(ctx *c, size_t old)
{
    c->path_len = old;
    c->path[old] = '\0';
}

/* ---- Reading: libyaml events into the tree ---------------------------------------------- */

typedef struct reader {
    ctx *c;
    const char *buf;
    size_t len;
    node *root;
    node *stack[POOL_MAX_DEPTH]; /* the open collections */
    size_t depth;
    unsigned docs;
} reader;

/* Hangs a new node under the innermost open collection, or makes it the root. */
static int attach(reader *r, node *n)
{
    if (!n)
        return oom(r->c);
    if (r->depth == 0)
        r->root = n;
    else if (!node_add(r->stack[r->depth - 1], n)) {
        node_free(n);
        return oom(r->c);
    }
    return SP_OK;
}

/* Anchors and aliases would let a small file expand without bound; tags would change types. */
static int refuse_props(reader *r, const yaml_event_t *ev, const yaml_char_t *anchor,
                        const yaml_char_t *tag)
{
    unsigned line = (unsigned)ev->start_mark.line + 1, col = (unsigned)ev->start_mark.column + 1;
    const char *t = (const char *)tag, *core = "tag:yaml.org,2002:";
    bool short_form = t && strncmp(t, core, strlen(core)) == 0;
    if (anchor)
        return fail_at(r->c, line, col,
                       "YAML anchors (&%.64s) are not supported; write the value out in full",
                       (const char *)anchor);
    if (tag)
        return fail_at(r->c, line, col,
                       "YAML tags (%s%.64s) are not supported; remove it, and quote the value "
                       "if it must be a string",
                       short_form ? "!!" : "", short_form ? t + strlen(core) : t);
    return SP_OK;
}

/* Whether the scalar's text is its source, character for character, on one line. */
static bool scalar_verbatim(const yaml_event_t *ev)
{
    yaml_scalar_style_t style = ev->data.scalar.style;
    size_t quotes = style == YAML_PLAIN_SCALAR_STYLE ? 0 : 2;
    if (style != YAML_PLAIN_SCALAR_STYLE && style != YAML_SINGLE_QUOTED_SCALAR_STYLE &&
        style != YAML_DOUBLE_QUOTED_SCALAR_STYLE)
        return false;
    return ev->start_mark.line == ev->end_mark.line &&
           ev->end_mark.column - ev->start_mark.column == ev->data.scalar.length + quotes;
}

static int on_scalar(reader *r, const yaml_event_t *ev)
{
    int rc = refuse_props(r, ev, ev->data.scalar.anchor, ev->data.scalar.tag);
    if (rc)
        return rc;
    node *n = node_new(NODE_SCALAR, ev->start_mark);
    if (n) {
        n->len = ev->data.scalar.length;
        n->text = sp_strndup((const char *)ev->data.scalar.value, n->len);
        n->plain = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
        n->verbatim = scalar_verbatim(ev);
        n->text_col = n->col + (n->plain ? 0 : 1);
        if (!n->text) {
            free(n);
            n = NULL;
        }
    }
    return attach(r, n);
}

static int on_open(reader *r, const yaml_event_t *ev, node_kind kind, const yaml_char_t *anchor,
                   const yaml_char_t *tag)
{
    int rc = refuse_props(r, ev, anchor, tag);
    if (rc)
        return rc;
    if (r->depth == POOL_MAX_DEPTH)
        return fail_at(r->c, (unsigned)ev->start_mark.line + 1,
                       (unsigned)ev->start_mark.column + 1,
                       "nested more than %d levels deep; a pool file needs four at most",
                       POOL_MAX_DEPTH);
    node *n = node_new(kind, ev->start_mark);
    if ((rc = attach(r, n)))
        return rc;
    r->stack[r->depth++] = n;
    return SP_OK;
}

static int on_event(reader *r, const yaml_event_t *ev)
{
    switch (ev->type) {
    case YAML_DOCUMENT_START_EVENT:
        if (r->docs++)
            return fail_at(r->c, (unsigned)ev->start_mark.line + 1,
                           (unsigned)ev->start_mark.column + 1,
                           "a second YAML document; a pool file holds one, so remove this "
                           "'---' and what follows, or put it in a file of its own");
        return SP_OK;
    case YAML_ALIAS_EVENT:
        return fail_at(r->c, (unsigned)ev->start_mark.line + 1,
                       (unsigned)ev->start_mark.column + 1,
                       "YAML aliases (*%.64s) are not supported; write the value out in full",
                       (const char *)ev->data.alias.anchor);
    case YAML_SCALAR_EVENT:
        return on_scalar(r, ev);
    case YAML_SEQUENCE_START_EVENT:
        return on_open(r, ev, NODE_SEQ, ev->data.sequence_start.anchor,
                       ev->data.sequence_start.tag);
    case YAML_MAPPING_START_EVENT:
        return on_open(r, ev, NODE_MAP, ev->data.mapping_start.anchor,
                       ev->data.mapping_start.tag);
    case YAML_SEQUENCE_END_EVENT:
    case YAML_MAPPING_END_EVENT:
        r->depth--;
        return SP_OK;
    default:
        return SP_OK;
    }
}

/* Reader errors (bad UTF-8, control characters) come with a byte offset rather than a mark. */
static void offset_mark(const char *buf, size_t len, size_t offset, unsigned *line, unsigned *col)
{
    *line = 1;
    *col = 1;
    for (size_t i = 0; i < offset && i < len; i++) {
        if (buf[i] == '\n') {
            (*line)++;
            *col = 1;
        } else if (((unsigned char)buf[i] & 0xC0) != 0x80)
            (*col)++;
    }
}

static int syntax_error(reader *r, const yaml_parser_t *p)
{
    unsigned line = (unsigned)p->problem_mark.line + 1, col = (unsigned)p->problem_mark.column + 1;
    const char *problem = p->problem ? p->problem : "malformed YAML";
    if (p->error == YAML_MEMORY_ERROR)
        return oom(r->c);
    if (p->error == YAML_READER_ERROR) {
        offset_mark(r->buf, r->len, p->problem_offset, &line, &col);
        return fail_at(r->c, line, col, "not valid YAML text: %s; save the file as UTF-8 text",
                       problem);
    }
    if (p->context)
        return fail_at(r->c, line, col,
                       "YAML syntax error: %s (%s at line %u); check the indentation and quoting",
                       problem, p->context, (unsigned)p->context_mark.line + 1);
    return fail_at(r->c, line, col, "YAML syntax error: %s; check the indentation and quoting",
                   problem);
}

static int pump(reader *r, yaml_parser_t *parser)
{
    for (;;) {
        yaml_event_t ev;
        if (!yaml_parser_parse(parser, &ev))
            return syntax_error(r, parser);
        bool end = ev.type == YAML_STREAM_END_EVENT;
        int rc = on_event(r, &ev);
        yaml_event_delete(&ev);
        if (rc || end)
            return rc;
    }
}

static int read_tree(ctx *c, const char *buf, size_t len, node **root)
{
    reader r = {.c = c, .buf = buf, .len = len};
    yaml_parser_t parser;
    if (!yaml_parser_initialize(&parser))
        return oom(c);
    yaml_parser_set_input_string(&parser, (const unsigned char *)buf, len);
    int rc = pump(&r, &parser);
    yaml_parser_delete(&parser);
    if (rc == SP_OK && !r.root)
        rc = fail_at(c, 1, 1,
                     "the file is empty; a pool file needs at least name and "
                     "resources.accelerators (see examples/quickstart.yaml)");
    if (rc) {
        node_free(r.root);
        return rc;
    }
    *root = r.root;
    return SP_OK;
}

/* ---- Scalar types (YAML 1.2 core schema) ------------------------------------------------ */

typedef enum scalar_type { T_NULL, T_BOOL, T_INT, T_FLOAT, T_STRING } scalar_type;

static bool is_one_of(const char *s, const char *const *set, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(s, set[i]) == 0)
            return true;
    return false;
}

static bool is_int_text(const char *s)
{
    if (s[0] == '0' && (s[1] == 'x' || s[1] == 'o')) {
        const char *set = s[1] == 'x' ? DIGITS "abcdefABCDEF" : "01234567";
        size_t n = strspn(s + 2, set);
        return n > 0 && s[2 + n] == '\0';
    }
    s += *s == '+' || *s == '-';
    size_t n = strspn(s, DIGITS);
    return n > 0 && s[n] == '\0';
}

/* [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?, less the integers, or inf/nan. */
static bool is_float_text(const char *s)
{
    static const char *const special[] = {".nan", ".NaN", ".NAN"};
    static const char *const inf[] = {".inf", ".Inf", ".INF"};
    if (is_one_of(s, special, 3))
        return true;
    s += *s == '+' || *s == '-';
    if (is_one_of(s, inf, 3))
        return true;
    size_t whole = strspn(s, DIGITS), frac = 0;
    s += whole;
    if (*s == '.') {
        frac = strspn(s + 1, DIGITS);
        s += 1 + frac;
    }
    if (whole == 0 && frac == 0)
        return false;
    if (*s == 'e' || *s == 'E') {
        s++;
        s += *s == '+' || *s == '-';
        size_t exp = strspn(s, DIGITS);
        if (exp == 0)
            return false;
        s += exp;
    }
    return *s == '\0';
}

static scalar_type type_of(const node *v)
{
    static const char *const nulls[] = {"", "~", "null", "Null", "NULL"};
    static const char *const bools[] = {"true", "True", "TRUE", "false", "False", "FALSE"};
    if (!v->plain)
        return T_STRING;
    if (is_one_of(v->text, nulls, 5))
        return T_NULL;
    if (is_one_of(v->text, bools, 6))
        return T_BOOL;
    if (is_int_text(v->text))
        return T_INT;
    if (is_float_text(v->text))
        return T_FLOAT;
    return T_STRING;
}

static const char *found(const node *v)
{
    if (v->kind == NODE_MAP)
        return "a mapping";
    if (v->kind == NODE_SEQ)
        return "a list";
    switch (type_of(v)) {
    case T_NULL:
        return "an empty value";
    case T_BOOL:
        return "a boolean";
    case T_INT:
    case T_FLOAT:
        return "a number";
    default:
        return "a string";
    }
}

/* strtod in the C locale, whatever the program has set: a pool file reads the same everywhere. */
static double c_strtod(const char *s)
{
    locale_t cl = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
    locale_t old = cl ? uselocale(cl) : (locale_t)0;
    double d = strtod(s, NULL);
    if (cl) {
        uselocale(old);
        freelocale(cl);
    }
    return d;
}

/* The value of a number scalar (an integer or a float to the core schema); false otherwise. */
static bool number_of(const node *v, double *out)
{
    const char *s = v->text;
    scalar_type t = v->kind == NODE_SCALAR ? type_of(v) : T_STRING;
    if (t != T_INT && t != T_FLOAT)
        return false;
    const char *u = s + (*s == '+' || *s == '-');
    if (u[0] == '.' && (u[1] == 'i' || u[1] == 'I'))
        *out = *s == '-' ? -INFINITY : INFINITY;
    else if (u[0] == '.' && (u[1] == 'n' || u[1] == 'N'))
        *out = NAN;
    else if (s[0] == '0' && s[1] == 'o')
        *out = (double)strtoull(s + 2, NULL, 8);
    else
        *out = c_strtod(s);
    return true;
}

static size_t utf8_length(const char *s)
{
    size_t n = 0;
    for (; *s; s++)
        n += ((unsigned char)*s & 0xC0) != 0x80;
    return n;
}

static bool has_control(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f)
            return true;
    return false;
}

static bool all_in(const char *s, const char *set)
{
    return s[strspn(s, set)] == '\0';
}

/* ---- Fields ------------------------------------------------------------------------------ */

typedef struct field field;
typedef int (*field_fn)(ctx *c, const node *v, const field *f);

struct field {
    const char *key;
    field_fn read;
    bool required;
    const char *example;  /* shown when the key is missing or its value has the wrong type */
};

typedef struct choices {
    const char *noun;     /* "provider" */
    const char *const *names;
    size_t n;
} choices;

static int type_error(ctx *c, const node *v, const char *want, const field *f)
{
    return fail(c, v, "expected %s, found %s; write it like '%s'", want, found(v), f->example);
}

static int dup_into(ctx *c, const char *s, char **out)
{
    *out = sp_strdup(s);
    return *out ? SP_OK : oom(c);
}

static int want_string(ctx *c, const node *v, const field *f)
{
    if (v->kind == NODE_SCALAR && type_of(v) != T_STRING && type_of(v) != T_NULL)
        return fail(c, v, "expected a string, found %s; quote it: \"%.64s\"", found(v), v->text);
    if (v->kind != NODE_SCALAR || type_of(v) != T_STRING)
        return type_error(c, v, "a string", f);
    if (strlen(v->text) != v->len)
        return fail(c, v, "contains a NUL character; remove it");
    return SP_OK;
}

/* A free-form string of min..max characters without control characters. */
static int read_text(ctx *c, const node *v, const field *f, size_t min, size_t max, char **out)
{
    int rc = want_string(c, v, f);
    if (rc)
        return rc;
    if (utf8_length(v->text) < min)
        return fail(c, v, "is empty; give a value or remove the key");
    if (has_control(v->text))
        return fail(c, v, "contains a control character (a tab or a line break); remove it");
    if (utf8_length(v->text) > max)
        return fail(c, v, "is longer than %zu characters; shorten it", max);
    return dup_into(c, v->text, out);
}

static int read_choice(ctx *c, const node *v, const field *f, const choices *ch, size_t *index)
{
    int rc = want_string(c, v, f);
    if (rc)
        return rc;
    for (size_t i = 0; i < ch->n; i++)
        if (strcmp(v->text, ch->names[i]) == 0) {
            *index = i;
            return SP_OK;
        }
    const char *hint = sp_suggest(v->text, ch->names, ch->n);
    if (hint)
        return fail(c, v, "unknown %s '%.64s'; did you mean %s?", ch->noun, v->text, hint);
    sp_buf all;
    sp_buf_init(&all);
    for (size_t i = 0; i < ch->n; i++)
        sp_buf_printf(&all, "%s%s", i ? ", " : "", ch->names[i]);
    rc = fail(c, v, "unknown %s '%.64s'; use one of %s", ch->noun, v->text,
              all.data ? all.data : "");
    sp_buf_free(&all);
    return rc;
}

static int read_whole(ctx *c, const node *v, const field *f, long lo, long hi, long *out)
{
    double d = 0;
    if (!number_of(v, &d))
        return type_error(c, v, "a whole number", f);
    if (!isfinite(d) || d != floor(d))
        return fail(c, v, "%.64s is not a whole number; write it like '%s'", v->text, f->example);
    if (d < (double)lo || d > (double)hi)
        return fail(c, v, "%.64s is out of range; use %ld to %ld", v->text, lo, hi);
    *out = (long)d;
    return SP_OK;
}

/* ---- Mappings ---------------------------------------------------------------------------- */

static int unknown_key(ctx *c, const node *key, const field *fields, size_t n)
{
    const char *names[FIELDS_MAX];
    for (size_t i = 0; i < n; i++)
        names[i] = fields[i].key;
    const char *hint = sp_suggest(key->text, names, n);
    if (hint)
        return fail(c, key, "unknown key '%.64s'; did you mean %s?", key->text, hint);
    sp_buf all;
    sp_buf_init(&all);
    for (size_t i = 0; i < n; i++)
        sp_buf_printf(&all, "%s%s", i ? ", " : "", names[i]);
    int rc = fail(c, key, "unknown key '%.64s'; the keys here are %s", key->text,
                  all.data ? all.data : "");
    sp_buf_free(&all);
    return rc;
}

static int find_field(ctx *c, const node *key, const field *fields, size_t n, size_t *index)
{
    if (key->kind != NODE_SCALAR)
        return fail(c, key, "a key must be a name, not %s; check the indentation", found(key));
    for (size_t i = 0; i < n; i++)
        if (strcmp(key->text, fields[i].key) == 0) {
            *index = i;
            return SP_OK;
        }
    return unknown_key(c, key, fields, n);
}

static int read_pair(ctx *c, const node *key, const node *value, const field *fields, size_t n,
                     const node **seen)
{
    size_t i = 0;
    int rc = find_field(c, key, fields, n, &i);
    if (rc)
        return rc;
    if (seen[i])
        return fail(c, key, "duplicate key '%s' (first at %u:%u); keep one", fields[i].key,
                    seen[i]->line, seen[i]->col);
    seen[i] = key;
    size_t old = path_push_key(c, fields[i].key);
    rc = fields[i].read(c, value, &fields[i]);
    path_pop(c, old);
    return rc;
}

static int missing(ctx *c, const node *map, const field *f)
{
    size_t old = path_push_key(c, f->key);
    int rc = fail(c, map, "required key is missing; add it, like '%s'", f->example);
    path_pop(c, old);
    return rc;
}

/* A mapping of known keys: unknown, duplicate and missing required keys are errors. */
static int read_fields(ctx *c, const node *map, const field *self, const field *fields, size_t n)
{
    const node *seen[FIELDS_MAX] = {0};
    if (map->kind != NODE_MAP)
        return type_error(c, map, "a mapping", self);
    int rc = SP_OK;
    for (size_t i = 0; rc == SP_OK && i + 1 < map->n; i += 2)
        rc = read_pair(c, map->kids[i], map->kids[i + 1], fields, n, seen);
    for (size_t i = 0; rc == SP_OK && i < n; i++)
        if (fields[i].required && !seen[i])
            rc = missing(c, map, &fields[i]);
    return rc;
}

/* ---- Lists of names ---------------------------------------------------------------------- */

typedef int (*item_fn)(ctx *c, const node *item, const field *f);

typedef struct list_rule {
    size_t max;
    bool unique;
    item_fn check;        /* after the item is known to be a string */
} list_rule;

static int read_item(ctx *c, const node *list, size_t i, const field *f, const list_rule *rule,
                     char **done)
{
    const node *v = list->kids[i];
    int rc = want_string(c, v, f);
    if (rc || (rule->check && (rc = rule->check(c, v, f))))
        return rc;
    for (size_t j = 0; rule->unique && j < i; j++)
        if (strcmp(done[j], v->text) == 0)
            return fail(c, v, "'%.64s' is listed twice (first at %u:%u); list it once",
                        v->text, list->kids[j]->line, list->kids[j]->col);
    return dup_into(c, v->text, &done[i]);
}

static int read_list(ctx *c, const node *v, const field *f, const list_rule *rule, char ***out,
                     size_t *n_out)
{
    if (v->kind != NODE_SEQ)
        return type_error(c, v, "a list", f);
    if (v->n == 0)
        return fail(c, v, "is an empty list; list at least one, or remove the key");
    if (v->n > rule->max)
        return fail(c, v->kids[rule->max], "more than %zu entries; list at most %zu", rule->max,
                    rule->max);
    if (!(*out = calloc(v->n, sizeof(char *))))
        return oom(c);
    for (size_t i = 0; i < v->n; i++) {
        size_t old = path_push_index(c, i);
        int rc = read_item(c, v, i, f, rule, *out);
        path_pop(c, old);
        if (rc)
            return rc;
        *n_out = i + 1;
    }
    return SP_OK;
}

/* ---- name, nodes, spot, providers, regions, max_hourly_usd, image ------------------------ */

/* [a-z][a-z0-9-]{0,max-1} */
static bool is_slug(const char *s, size_t max)
{
    size_t n = strlen(s);
    return n >= 1 && n <= max && s[0] >= 'a' && s[0] <= 'z' && all_in(s, LOWER DIGITS "-");
}

static int read_name(ctx *c, const node *v, const field *f)
{
    int rc = want_string(c, v, f);
    if (rc)
        return rc;
    if (!is_slug(v->text, NAME_MAX_LEN))
        return fail(c, v,
                    "'%.64s' is not a valid pool name; use up to %d lower-case letters, digits "
                    "and '-', starting with a letter",
                    v->text, NAME_MAX_LEN);
    return dup_into(c, v->text, &c->pool->name);
}

static int read_nodes(ctx *c, const node *v, const field *f)
{
    long n = 0;
    int rc = read_whole(c, v, f, 1, NODES_MAX, &n);
    if (rc == SP_OK)
        c->pool->nodes = (unsigned)n;
    return rc;
}

static int read_spot(ctx *c, const node *v, const field *f)
{
    /* In sp_spot_policy's order. */
    static const char *const names[] = {"on-demand", "spot", "spot-then-on-demand"};
    static const choices ch = {"spot policy", names, 3};
    size_t i;
    int rc = read_choice(c, v, f, &ch, &i);
    if (rc == SP_OK)
        c->pool->spot = (sp_spot_policy)i;
    return rc;
}

static int check_provider(ctx *c, const node *v, const field *f)
{
    static const choices ch = {"provider", known_providers,
                               sizeof(known_providers) / sizeof(known_providers[0])};
    size_t i;
    return read_choice(c, v, f, &ch, &i);
}

static int read_providers(ctx *c, const node *v, const field *f)
{
    static const list_rule rule = {sizeof(known_providers) / sizeof(known_providers[0]), true,
                                   check_provider};
    return read_list(c, v, f, &rule, &c->pool->providers, &c->pool->n_providers);
}

static int check_region(ctx *c, const node *v, const field *f)
{
    if (is_slug(v->text, NAME_MAX_LEN))
        return SP_OK;
    return fail(c, v,
                "'%.64s' is not a region name; write the provider's own name, like us-east-1 "
                "or nyc2",
                v->text);
}

static int read_regions(ctx *c, const node *v, const field *f)
{
    static const list_rule rule = {REGIONS_MAX, true, check_region};
    return read_list(c, v, f, &rule, &c->pool->regions, &c->pool->n_regions);
}

static int read_budget(ctx *c, const node *v, const field *f)
{
    double d = 0;
    if (!number_of(v, &d))
        return type_error(c, v, "a number of US dollars", f);
    if (!isfinite(d) || d <= 0)
        return fail(c, v, "%.64s is not a budget; give the most the pool may cost per hour, "
                    "in US dollars, like 200", v->text);
    c->pool->max_hourly_usd = d;
    return SP_OK;
}

static int read_image(ctx *c, const node *v, const field *f)
{
    return read_text(c, v, f, 1, IMAGE_MAX, &c->pool->image);
}

/* ---- resources --------------------------------------------------------------------------- */

/*
 * The spec parser reports "column N: ..." within the string; when the string sits verbatim on
 * one line of the file, that becomes the file's column.
 */
static int spec_error(ctx *c, const node *v, const sp_err *e)
{
    unsigned at = 0, col = v->col;
    int used = 0;
    const char *msg = e->msg;
    if (sscanf(msg, "column %u: %n", &at, &used) == 1 && used > 0) {
        msg += used;
        if (v->verbatim && at >= 1 && at <= v->len + 1)
            col = v->text_col + at - 1;
    }
    return fail_at(c, v->line, col, "%s", msg);
}

/* Parses one spec string (the whole grammar, or a single term) into spec or term. */
static int parse_spec(ctx *c, const node *v, const field *f, sp_spec *spec, sp_spec_term *term)
{
    sp_err e = {0};
    int rc = want_string(c, v, f);
    if (rc)
        return rc;
    if (has_control(v->text))
        return fail(c, v, "contains a control character (a tab or a line break); write the "
                    "spec on one line, like H100:8");
    if ((spec ? sp_spec_parse(v->text, spec, &e) : sp_spec_term_parse(v->text, term, &e)))
        return spec_error(c, v, &e);
    return SP_OK;
}

static int read_terms(ctx *c, const node *v, const field *f, sp_spec_kind kind)
{
    sp_spec *spec = &c->pool->accelerators;
    if (v->kind != NODE_SEQ)
        return type_error(c, v, "a list", f);
    if (v->n == 0)
        return fail(c, v, "is an empty list; list at least one accelerator, like H100:8");
    if (v->n > SP_SPEC_MAX_TERMS)
        return fail(c, v->kids[SP_SPEC_MAX_TERMS], "more than %d accelerators; list at most %d",
                    SP_SPEC_MAX_TERMS, SP_SPEC_MAX_TERMS);
    spec->kind = kind;
    for (size_t i = 0; i < v->n; i++) {
        size_t old = path_push_index(c, i);
        int rc = parse_spec(c, v->kids[i], f, NULL, &spec->terms[i]);
        path_pop(c, old);
        if (rc)
            return rc;
        spec->n_terms = (unsigned)i + 1;
    }
    return SP_OK;
}

static int read_any_of(ctx *c, const node *v, const field *f)
{
    return read_terms(c, v, f, SP_SPEC_ANY_OF);
}

/* {H100:8, A100:8} unquoted is a YAML mapping, not the spec grammar's any-of set. */
static int read_accel_map(ctx *c, const node *v, const field *f)
{
    static const field fields[] = {
        {"any_of", read_any_of, true, "any_of: [H100:8, H200:8]"},
    };
    const node *key = v->n ? v->kids[0] : NULL;
    if (key && key->kind == NODE_SCALAR && strcmp(key->text, "any_of") != 0 &&
        v->kids[1]->kind == NODE_SCALAR && type_of(v->kids[1]) == T_NULL)
        return fail(c, key,
                    "'%.64s' reads as a YAML key; for a set of alternatives write "
                    "{any_of: [H100:8, H200:8]}, or quote the spec: \"{H100:8, H200:8}\"",
                    key->text);
    return read_fields(c, v, f, fields, 1);
}

static int read_accelerators(ctx *c, const node *v, const field *f)
{
    if (v->kind == NODE_SEQ)
        return read_terms(c, v, f, SP_SPEC_ORDERED);
    if (v->kind == NODE_MAP)
        return read_accel_map(c, v, f);
    return parse_spec(c, v, f, &c->pool->accelerators, NULL);
}

/* [1-9][0-9]{0,3}\+? as a string, or a whole number 1..9999. */
static int read_cpus(ctx *c, const node *v, const field *f)
{
    sp_amount *a = &c->pool->cpus;
    const char *s = v->text;
    double d = 0;
    if (v->kind == NODE_SCALAR && number_of(v, &d)) {
        long n = 0;
        int rc = read_whole(c, v, f, 1, CPUS_MAX, &n);
        a->value = rc ? 0 : (unsigned)n;
        return rc;
    }
    int rc = want_string(c, v, f);
    if (rc)
        return rc;
    size_t n = strspn(s, DIGITS);
    if (n < 1 || n > 4 || s[0] == '0' || (s[n] && strcmp(s + n, "+") != 0))
        return fail(c, v, "'%.64s' is not a CPU count; write a number like 32, or 32+ for at "
                    "least 32", s);
    a->value = (unsigned)strtoul(s, NULL, 10);
    a->at_least = s[n] == '+';
    return SP_OK;
}

/* [1-9][0-9]{0,5}(GB|GiB|TB|TiB)\+? */
static bool parse_size(const char *s, sp_amount *a)
{
    static const char *const units[] = {"GB", "GiB", "TB", "TiB"};
    size_t n = strspn(s, DIGITS), ulen = strlen(s + n);
    if (n < 1 || n > 6 || s[0] == '0')
        return false;
    a->at_least = ulen > 0 && s[n + ulen - 1] == '+';
    char unit[4] = {0};
    if (ulen - a->at_least > 3)
        return false;
    memcpy(unit, s + n, ulen - a->at_least);
    if (!is_one_of(unit, units, 4))
        return false;
    a->value = (unsigned)strtoul(s, NULL, 10) * (unit[0] == 'T' ? 1024u : 1u);
    return true;
}

static int read_size(ctx *c, const node *v, const field *f, sp_amount *out)
{
    double d = 0;
    if (v->kind == NODE_SCALAR && number_of(v, &d))
        return fail(c, v, "%.64s has no unit; write it like '%s'", v->text, f->example);
    int rc = want_string(c, v, f);
    if (rc)
        return rc;
    if (!parse_size(v->text, out))
        return fail(c, v, "'%.64s' is not a size; write a number and GB, GiB, TB or TiB, "
                    "with '+' for at least, like 256GB+", v->text);
    return SP_OK;
}

static int read_memory(ctx *c, const node *v, const field *f)
{
    return read_size(c, v, f, &c->pool->memory_gib);
}

static int read_disk(ctx *c, const node *v, const field *f)
{
    return read_size(c, v, f, &c->pool->disk_gib);
}

static int read_resources(ctx *c, const node *v, const field *f)
{
    static const field fields[] = {
        {"accelerators", read_accelerators, true, "accelerators: H100:8"},
        {"cpus", read_cpus, false, "cpus: 32+"},
        {"memory", read_memory, false, "memory: 256GB+"},
        {"disk", read_disk, false, "disk: 500GB"},
    };
    return read_fields(c, v, f, fields, sizeof(fields) / sizeof(fields[0]));
}

/* ---- ssh --------------------------------------------------------------------------------- */

static int read_ssh_user(ctx *c, const node *v, const field *f)
{
    const char *s = v->text;
    int rc = want_string(c, v, f);
    if (rc)
        return rc;
    if (!*s || strlen(s) > SSH_USER_MAX || !strchr(LOWER UPPER "_", s[0]) ||
        !all_in(s, LOWER UPPER DIGITS "_.-"))
        return fail(c, v, "'%.64s' is not a user name; use up to %d letters, digits, '_', '.' "
                    "and '-', starting with a letter or '_'", s, SSH_USER_MAX);
    return dup_into(c, s, &c->pool->ssh_user);
}

static int read_ssh_key(ctx *c, const node *v, const field *f)
{
    return read_text(c, v, f, 1, SSH_KEY_MAX, &c->pool->ssh_key);
}

static int read_ssh_proxy(ctx *c, const node *v, const field *f)
{
    return read_text(c, v, f, 1, SSH_PROXY_MAX, &c->pool->ssh_proxy);
}

static int read_ssh(ctx *c, const node *v, const field *f)
{
    static const field fields[] = {
        {"user", read_ssh_user, false, "user: ubuntu"},
        {"key", read_ssh_key, false, "key: ~/.ssh/id_ed25519"},
        {"proxy", read_ssh_proxy, false, "proxy: ssh -W %h:%p bastion"},
    };
    return read_fields(c, v, f, fields, sizeof(fields) / sizeof(fields[0]));
}

/* ---- check ------------------------------------------------------------------------------- */

/* [1-9][0-9]?(\.[0-9]{1,2})? */
static bool parse_version(const char *s, unsigned *major, unsigned *minor)
{
    size_t a = strspn(s, DIGITS), b = 0;
    if (a < 1 || a > 2 || s[0] == '0')
        return false;
    if (s[a] == '.') {
        b = strspn(s + a + 1, DIGITS);
        if (b < 1 || b > 2)
            return false;
    }
    if (s[a + (b ? 1 + b : 0)] != '\0')
        return false;
    *major = (unsigned)strtoul(s, NULL, 10);
    *minor = b ? (unsigned)strtoul(s + a + 1, NULL, 10) : 0;
    return true;
}

static int read_min_cuda(ctx *c, const node *v, const field *f)
{
    scalar_type t = v->kind == NODE_SCALAR ? type_of(v) : T_NULL;
    if (v->kind != NODE_SCALAR || t == T_NULL || t == T_BOOL)
        return type_error(c, v, "a version", f);
    if (!parse_version(v->text, &c->pool->cuda_major, &c->pool->cuda_minor))
        return fail(c, v, "'%.64s' is not a CUDA version; write MAJOR.MINOR, like \"12.4\"",
                    v->text);
    return SP_OK;
}

static int read_mig(ctx *c, const node *v, const field *f)
{
    static const list_rule rule = {MIG_NAMES_MAX, false, NULL};
    sp_pool *p = c->pool;
    c->mig = v;
    if (v->kind == NODE_SEQ)
        return read_list(c, v, f, &rule, &p->mig, &p->n_mig);
    int rc = want_string(c, v, f);
    if (rc)
        return rc;
    if (!(p->mig = calloc(1, sizeof(char *))))
        return oom(c);
    if ((rc = dup_into(c, v->text, &p->mig[0])) == SP_OK)
        p->n_mig = 1;
    return rc;
}

static int read_on_fail(ctx *c, const node *v, const field *f)
{
    /* In sp_on_fail's order. */
    static const char *const names[] = {"replace", "fail", "warn"};
    static const choices ch = {"on_fail action", names, 3};
    size_t i;
    int rc = read_choice(c, v, f, &ch, &i);
    if (rc == SP_OK)
        c->pool->on_fail = (sp_on_fail)i;
    return rc;
}

static int read_check(ctx *c, const node *v, const field *f)
{
    static const field fields[] = {
        {"min_cuda", read_min_cuda, false, "min_cuda: \"12.4\""},
        {"mig", read_mig, false, "mig: 3g.40gb"},
        {"on_fail", read_on_fail, false, "on_fail: replace"},
    };
    return read_fields(c, v, f, fields, sizeof(fields) / sizeof(fields[0]));
}

/* ---- tags -------------------------------------------------------------------------------- */

/* [A-Za-z0-9_.:/=+@-]{1,128}: what AWS accepts, less spaces. */
static bool is_tag_key(const char *s)
{
    size_t n = strlen(s);
    return n >= 1 && n <= TAG_KEY_MAX && all_in(s, LOWER UPPER DIGITS "_.:/=+@-");
}

static int read_tag(ctx *c, const node *map, size_t i, const field *f)
{
    sp_pool *p = c->pool;
    const node *k = map->kids[2 * i];
    char *value = NULL;
    if (k->kind != NODE_SCALAR || strlen(k->text) != k->len || !is_tag_key(k->text))
        return fail(c, k, "'%.64s' is not a tag key; use 1 to %d letters, digits and _ . : / = "
                    "+ - @", k->kind == NODE_SCALAR ? k->text : found(k), TAG_KEY_MAX);
    for (size_t j = 0; j < i; j++)
        if (strcmp(p->tag_keys[j], k->text) == 0)
            return fail(c, k, "duplicate key '%s' (first at %u:%u); keep one", k->text,
                        map->kids[2 * j]->line, map->kids[2 * j]->col);
    size_t old = path_push_key(c, k->text);
    int rc = read_text(c, map->kids[2 * i + 1], f, 0, TAG_VALUE_MAX, &value);
    path_pop(c, old);
    if (rc)
        return rc;
    if (!(p->tag_keys[i] = sp_strdup(k->text))) {
        free(value);
        return oom(c);
    }
    p->tag_values[i] = value;
    p->n_tags = i + 1;
    return SP_OK;
}

static int read_tags(ctx *c, const node *v, const field *f)
{
    sp_pool *p = c->pool;
    size_t n = v->n / 2;
    if (v->kind != NODE_MAP)
        return type_error(c, v, "a mapping", f);
    if (n > TAGS_MAX)
        return fail(c, v->kids[2 * TAGS_MAX], "more than %d tags; keep at most %d", TAGS_MAX,
                    TAGS_MAX);
    if (n == 0)
        return SP_OK;
    p->tag_keys = calloc(n, sizeof(char *));
    p->tag_values = calloc(n, sizeof(char *));
    if (!p->tag_keys || !p->tag_values)
        return oom(c);
    for (size_t i = 0; i < n; i++) {
        int rc = read_tag(c, v, i, f);
        if (rc)
            return rc;
    }
    return SP_OK;
}

/* ---- MIG against the accelerators -------------------------------------------------------- */

#define CANDIDATES_MAX (SP_SPEC_MAX_TERMS * SP_SPEC_MAX_MODELS)

static size_t candidate_models(const sp_spec *spec, const sp_accel_model **out)
{
    size_t n = 0;
    for (unsigned t = 0; t < spec->n_terms; t++)
        for (unsigned m = 0; m < spec->terms[t].n_models; m++) {
            const sp_accel_model *model = spec->terms[t].models[m];
            size_t j = 0;
            while (j < n && out[j] != model)
                j++;
            if (j == n && n < CANDIDATES_MAX)
                out[n++] = model;
        }
    return n;
}

static const char *vendor_name(sp_vendor v)
{
    static const char *const names[] = {"NVIDIA", "AMD", "AWS", "Habana"};
    return (size_t)v < sizeof(names) / sizeof(names[0]) ? names[v] : "";
}

/* Appends "NVIDIA L4", once per family, joined with ", " (or " or " before the last). */
static void list_families(sp_buf *b, const sp_accel_model *const *models, size_t n,
                          bool vendor, const char *last_sep)
{
    const char *fam[CANDIDATES_MAX];
    size_t nf = 0;
    for (size_t i = 0; i < n; i++) {
        size_t j = 0;
        while (j < nf && strcmp(fam[j], models[i]->family) != 0)
            j++;
        if (j == nf)
            fam[nf++] = models[i]->family;
    }
    for (size_t i = 0; i < nf; i++) {
        const sp_accel_model *m = NULL;
        for (size_t j = 0; !m; j++)
            m = strcmp(models[j]->family, fam[i]) == 0 ? models[j] : NULL;
        sp_buf_printf(b, "%s%s%s%s", i == 0 ? "" : i + 1 == nf ? last_sep : ", ",
                      vendor ? vendor_name(m->vendor) : "", vendor ? " " : "", fam[i]);
    }
}

static int no_mig(ctx *c, const sp_accel_model **models, size_t n)
{
    size_t n_all, n_mig = 0;
    const sp_accel_model *all = sp_accel_models(&n_all);
    const sp_accel_model *mig[CANDIDATES_MAX];
    for (size_t i = 0; i < n_all && n_mig < CANDIDATES_MAX; i++)
        if (sp_mig_profiles(all[i].key, &(size_t){0}))
            mig[n_mig++] = &all[i];
    sp_buf have, need;
    sp_buf_init(&have);
    sp_buf_init(&need);
    list_families(&have, models, n, true, ", ");
    list_families(&need, mig, n_mig, false, " or ");
    bool one = !strchr(have.data ? have.data : "", ',');
    int rc = fail(c, c->mig, "%s%s %s MIG; MIG needs %s", one ? "" : "none of ",
                  have.data ? have.data : "", one ? "does not support" : "supports",
                  need.data ? need.data : "");
    sp_buf_free(&have);
    sp_buf_free(&need);
    return rc;
}

/* Whether the layout fits one of the models; *first gets the first model's complaint. */
static bool mig_fits(const sp_accel_model **models, size_t n, const char *const *names,
                     size_t n_names, sp_err *first)
{
    for (size_t i = 0; i < n; i++) {
        sp_mig_layout layout;
        sp_err e = {0};
        if (sp_mig_layout_parse(models[i]->key, names, n_names, &layout, &e) == SP_OK)
            return true;
        if (i == 0)
            *first = e;
    }
    return false;
}

static int check_mig_names(ctx *c, const sp_accel_model **models, size_t n)
{
    const sp_pool *p = c->pool;
    bool list = c->mig->kind == NODE_SEQ;
    sp_err e = {0};
    for (size_t i = 0; i < p->n_mig; i++) {
        if (mig_fits(models, n, (const char *const *)&p->mig[i], 1, &e))
            continue;
        size_t old = list ? path_push_index(c, i) : c->path_len;
        int rc = fail(c, list ? c->mig->kids[i] : c->mig, "%s", e.msg);
        path_pop(c, old);
        return rc;
    }
    if (p->n_mig > 1 && !mig_fits(models, n, (const char *const *)p->mig, p->n_mig, &e))
        return fail(c, c->mig, "%s", e.msg);
    return SP_OK;
}

/* Every name in check.mig must make a valid layout on a MIG-capable candidate model. */
static int check_mig(ctx *c)
{
    const sp_accel_model *all[CANDIDATES_MAX], *mig[CANDIDATES_MAX];
    if (!c->mig)
        return SP_OK;
    size_t n = candidate_models(&c->pool->accelerators, all), n_mig = 0;
    for (size_t i = 0; i < n; i++)
        if (sp_mig_profiles(all[i]->key, &(size_t){0}))
            mig[n_mig++] = all[i];
    path_push_key(c, "check.mig");
    int rc = n_mig ? check_mig_names(c, mig, n_mig) : no_mig(c, all, n);
    path_pop(c, 0);
    return rc;
}

/* ---- The pool ---------------------------------------------------------------------------- */

static const field top_fields[] = {
    {"name", read_name, true, "name: train-h100"},
    {"nodes", read_nodes, false, "nodes: 4"},
    {"resources", read_resources, true, "resources: {accelerators: H100:8}"},
    {"spot", read_spot, false, "spot: spot-then-on-demand"},
    {"providers", read_providers, false, "providers: [aws, digitalocean]"},
    {"regions", read_regions, false, "regions: [us-east-1, nyc2]"},
    {"max_hourly_usd", read_budget, false, "max_hourly_usd: 200"},
    {"image", read_image, false, "image: ubuntu-22-04-x64"},
    {"ssh", read_ssh, false, "ssh: {user: ubuntu}"},
    {"check", read_check, false, "check: {min_cuda: \"12.4\"}"},
    {"tags", read_tags, false, "tags: {team: ml}"},
};

static int read_pool(ctx *c, const node *root)
{
    static const field self = {"", NULL, true, "name: train-h100"};
    if (root->kind == NODE_SCALAR && type_of(root) == T_NULL)
        return fail(c, root, "the document is empty; a pool file needs at least name and "
                    "resources.accelerators (see examples/quickstart.yaml)");
    if (root->kind != NODE_MAP)
        return fail(c, root, "expected a mapping of keys, found %s; start the file like '%s' "
                    "(see examples/quickstart.yaml)", found(root), self.example);
    int rc = read_fields(c, root, &self, top_fields, sizeof(top_fields) / sizeof(top_fields[0]));
    return rc ? rc : check_mig(c);
}

static void free_strings(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

void sp_pool_free(sp_pool *pool)
{
    if (!pool)
        return;
    free(pool->path);
    free(pool->name);
    free_strings(pool->providers, pool->n_providers);
    free_strings(pool->regions, pool->n_regions);
    free(pool->image);
    free(pool->ssh_user);
    free(pool->ssh_key);
    free(pool->ssh_proxy);
    free_strings(pool->mig, pool->n_mig);
    free_strings(pool->tag_keys, pool->n_tags);
    free_strings(pool->tag_values, pool->n_tags);
    free(pool);
}

static sp_pool *pool_new(const char *path)
{
    sp_pool *p = calloc(1, sizeof(*p));
    if (!p)
        return NULL;
    p->nodes = 1;
    p->spot = SP_SPOT_ON_DEMAND;
    p->on_fail = SP_ON_FAIL_REPLACE;
    if (!(p->path = sp_strdup(path))) {
        free(p);
        return NULL;
    }
    return p;
}

int sp_pool_parse(const char *buf, size_t len, const char *name, sp_pool **pool, sp_err *err)
{
    ctx c = {.file = name ? name : "<input>", .err = err};
    node *root = NULL;
    if (pool)
        *pool = NULL;
    if (!buf || !pool)
        return sp_err_set(err, SP_E_INVALID, "sp_pool_parse: no input or no place for the pool");
    if (len > POOL_MAX_BYTES)
        return sp_err_set(err, SP_E_INVALID, "%s: the file is larger than 1 MiB; a pool file is "
                          "a few lines of YAML, so check that this is the right file", c.file);
    int rc = read_tree(&c, buf, len, &root);
    if (rc)
        return rc;
    if (!(c.pool = pool_new(c.file))) {
        node_free(root);
        return oom(&c);
    }
    rc = read_pool(&c, root);
    node_free(root);
    if (rc) {
        sp_pool_free(c.pool);
        return rc;
    }
    *pool = c.pool;
    return SP_OK;
}

/* Reads at most POOL_MAX_BYTES + 1 bytes, so that a larger file is noticed, not truncated. */
static int slurp(const char *path, char **out, size_t *len, sp_err *err)
{
    struct stat st;
    FILE *f = fopen(path, "rb");
    if (!f)
        return sp_err_set(err, SP_E_IO, "%s: cannot open the pool file: %s; check the path",
                          path, strerror(errno));
    if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
        fclose(f);
        return sp_err_set(err, SP_E_IO, "%s: is a directory; give the pool file's path", path);
    }
    char *buf = malloc(POOL_MAX_BYTES + 1);
    size_t n = buf ? fread(buf, 1, POOL_MAX_BYTES + 1, f) : 0;
    bool failed = buf && ferror(f);
    fclose(f);
    if (!buf)
        return sp_err_set(err, SP_E_NOMEM, "%s: out of memory", path);
    if (failed) {
        free(buf);
        return sp_err_set(err, SP_E_IO, "%s: cannot read the pool file; check the disk and "
                          "the permissions", path);
    }
    *out = buf;
    *len = n;
    return SP_OK;
}

int sp_pool_load(const char *path, sp_pool **pool, sp_err *err)
{
    char *buf = NULL;
    size_t len = 0;
    if (pool)
        *pool = NULL;
    if (!path || !pool)
        return sp_err_set(err, SP_E_INVALID, "sp_pool_load: no path or no place for the pool");
    int rc = slurp(path, &buf, &len, err);
    if (rc)
        return rc;
    rc = sp_pool_parse(buf, len, path, pool, err);
    free(buf);
    return rc;
}
