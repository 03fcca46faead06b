/*
 * The DigitalOcean API token, as doctl finds it.
 *
 * doctl's config file is YAML written by viper:
 *
 *   access-token: dop_v1_...          # the "default" context's token
 *   auth-contexts:
 *     work: dop_v1_...                # other contexts' tokens
 *   context: default                  # the current context
 *
 * It is read with libyaml's event parser (the same library the core reads pool files with; the
 * plugin links it itself, never the host's symbols). Keys other than these three are skipped
 * whatever their shape: doctl keeps more settings in the same file.
 */
#include "doconfig.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml.h>

#define TOKEN_URL "https://cloud.digitalocean.com/account/api/tokens"

void do_cleanse(void *p, size_t n)
{
    volatile unsigned char *v = p;
    while (n--)
        *v++ = 0;
}

void do_config_wipe(do_config *cfg)
{
    do_cleanse(cfg, sizeof(*cfg));
}

/* A note or a path, cut short at the buffer's end if it must be: a long path is no error. */
static SP_PRINTF(3, 4) void put(char *buf, size_t size, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, size, fmt, ap);
    va_end(ap);
    (void)n;
}

static void free_secret(char *s)
{
    if (s) {
        do_cleanse(s, strlen(s));
        free(s);
    }
}

/* ---- doctl's file, as parsed ----------------------------------------------------------------- */

typedef struct named_token {
    char *name;
    char *token;
} named_token;

typedef struct doctl_file {
    char *access_token;
    char *context;
    named_token *contexts;
    size_t n, cap;
} doctl_file;

static void doctl_free(doctl_file *f)
{
    free_secret(f->access_token);
    free(f->context);
    for (size_t i = 0; i < f->n; i++) {
        free(f->contexts[i].name);
        free_secret(f->contexts[i].token);
    }
    free(f->contexts);
    memset(f, 0, sizeof(*f));
}

typedef struct reader {
    yaml_parser_t parser;
    const char *path;
    sp_err *err;
} reader;

static int syntax_error(reader *r)
{
    const yaml_parser_t *p = &r->parser;
    return sp_err_set(r->err, SP_E_INVALID, "%s:%u:%u: not YAML doctl can read: %s", r->path,
                      (unsigned)p->problem_mark.line + 1, (unsigned)p->problem_mark.column + 1,
                      p->problem ? p->problem : "syntax error");
}

static int shape_error(reader *r, const yaml_event_t *ev, const char *what)
{
    return sp_err_set(r->err, SP_E_INVALID, "%s:%u:%u: %s", r->path,
                      (unsigned)ev->start_mark.line + 1, (unsigned)ev->start_mark.column + 1,
                      what);
}

static int next(reader *r, yaml_event_t *ev)
{
    if (!yaml_parser_parse(&r->parser, ev))
        return syntax_error(r);
    return SP_OK;
}

/* The text of a scalar; plain "~", "null" and "" are no value (NULL, SP_OK). */
static int scalar_dup(const yaml_event_t *ev, char **out)
{
    const char *v = (const char *)ev->data.scalar.value;
    size_t n = ev->data.scalar.length;
    bool plain = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
    *out = NULL;
    if (n == 0 || (plain && ((n == 1 && v[0] == '~') || (n == 4 && !memcmp(v, "null", 4)))))
        return SP_OK;
    *out = malloc(n + 1);
    if (!*out)
        return SP_E_NOMEM;
    memcpy(*out, v, n);
    (*out)[n] = '\0';
    return SP_OK;
}

/* Skips the node that ev opens, whatever it holds. */
static int skip_node(reader *r, const yaml_event_t *first)
{
    int depth = first->type == YAML_MAPPING_START_EVENT || first->type == YAML_SEQUENCE_START_EVENT;
    while (depth > 0) {
        yaml_event_t ev;
        int rc = next(r, &ev);
        if (rc)
            return rc;
        if (ev.type == YAML_MAPPING_START_EVENT || ev.type == YAML_SEQUENCE_START_EVENT)
            depth++;
        else if (ev.type == YAML_MAPPING_END_EVENT || ev.type == YAML_SEQUENCE_END_EVENT)
            depth--;
        bool end = ev.type == YAML_STREAM_END_EVENT;
        yaml_event_delete(&ev);
        if (end)
            break;
    }
    return SP_OK;
}

/* A value that must be a string: *out is the text, or NULL when the value is empty. */
static int read_string(reader *r, const char *key, char **out)
{
    yaml_event_t ev;
    int rc = next(r, &ev);
    if (rc)
        return rc;
    char what[96];
    snprintf(what, sizeof(what), "%s must be a string", key);
    rc = ev.type == YAML_SCALAR_EVENT ? scalar_dup(&ev, out) : shape_error(r, &ev, what);
    yaml_event_delete(&ev);
    return rc;
}

static int add_context(doctl_file *f, char *name, char *token)
{
    if (f->n == f->cap) {
        size_t cap = f->cap ? f->cap * 2 : 8;
        named_token *c = realloc(f->contexts, cap * sizeof(*c));
        if (!c)
            return SP_E_NOMEM;
        f->contexts = c;
        f->cap = cap;
    }
    f->contexts[f->n++] = (named_token){name, token};
    return SP_OK;
}

/* auth-contexts: a mapping of context names to tokens (or empty). */
static int read_contexts(reader *r, doctl_file *f)
{
    yaml_event_t ev;
    int rc = next(r, &ev);
    if (rc)
        return rc;
    if (ev.type == YAML_SCALAR_EVENT && ev.data.scalar.length == 0) {
        yaml_event_delete(&ev);
        return SP_OK;
    }
    if (ev.type != YAML_MAPPING_START_EVENT) {
        rc = shape_error(r, &ev, "auth-contexts must map context names to tokens");
        yaml_event_delete(&ev);
        return rc;
    }
    yaml_event_delete(&ev);
    for (;;) {
        if ((rc = next(r, &ev)))
            return rc;
        if (ev.type == YAML_MAPPING_END_EVENT) {
            yaml_event_delete(&ev);
            return SP_OK;
        }
        char *name = NULL, *token = NULL;
        rc = ev.type == YAML_SCALAR_EVENT
                 ? scalar_dup(&ev, &name)
                 : shape_error(r, &ev, "auth-contexts must map context names to tokens");
        yaml_event_delete(&ev);
        if (!rc)
            rc = read_string(r, "a token under auth-contexts", &token);
        if (!rc && name)
            rc = add_context(f, name, token);
        else {
            free(name);
            free_secret(token);
        }
        if (rc)
            return rc;
    }
}

static int read_pair(reader *r, doctl_file *f, const char *key)
{
    char **slot = !strcmp(key, "access-token") ? &f->access_token
                  : !strcmp(key, "context")    ? &f->context
                                               : NULL;
    if (slot) {
        char *v = NULL;
        int rc = read_string(r, key, &v);
        if (rc)
            return rc;
        free_secret(*slot); /* a repeated key: the last one wins, as in viper */
        *slot = v;
        return SP_OK;
    }
    if (!strcmp(key, "auth-contexts"))
        return read_contexts(r, f);
    yaml_event_t ev;
    int rc = next(r, &ev);
    if (!rc)
        rc = skip_node(r, &ev);
    yaml_event_delete(&ev);
    return rc;
}

static int read_top(reader *r, doctl_file *f)
{
    for (;;) {
        yaml_event_t ev;
        int rc = next(r, &ev);
        if (rc)
            return rc;
        if (ev.type == YAML_MAPPING_END_EVENT) {
            yaml_event_delete(&ev);
            return SP_OK;
        }
        if (ev.type != YAML_SCALAR_EVENT) {
            rc = shape_error(r, &ev, "doctl's settings must have plain names as keys");
            yaml_event_delete(&ev);
            return rc;
        }
        char key[64];
        size_t n = ev.data.scalar.length < sizeof(key) - 1 ? ev.data.scalar.length
                                                           : sizeof(key) - 1;
        memcpy(key, ev.data.scalar.value, n);
        key[n] = '\0';
        rc = read_pair(r, f, key);
        yaml_event_delete(&ev);
        if (rc)
            return rc;
    }
}

/* The first document: a mapping, or nothing at all. */
static int read_file(reader *r, doctl_file *f)
{
    for (;;) {
        yaml_event_t ev;
        int rc = next(r, &ev);
        if (rc)
            return rc;
        yaml_event_type_t t = ev.type;
        if (t == YAML_MAPPING_START_EVENT) {
            yaml_event_delete(&ev);
            return read_top(r, f);
        }
        char *text = NULL;
        if (t == YAML_SCALAR_EVENT && !(rc = scalar_dup(&ev, &text)) && text)
            rc = shape_error(r, &ev, "doctl's config must be a mapping of settings");
        else if (t == YAML_SEQUENCE_START_EVENT)
            rc = shape_error(r, &ev, "doctl's config must be a mapping of settings");
        free(text);
        yaml_event_delete(&ev);
        if (rc || t == YAML_STREAM_END_EVENT || t == YAML_DOCUMENT_END_EVENT ||
            t == YAML_SCALAR_EVENT)
            return rc;
    }
}

/* ---- Choosing the token ---------------------------------------------------------------------- */

/* Trims surrounding white space into cfg->token; refuses what no token holds (a line break
 * would end the Authorization header early). */
static int take_token(do_config *cfg, const char *value, sp_err *err)
{
    while (*value == ' ' || *value == '\t' || *value == '\r' || *value == '\n')
        value++;
    size_t n = strlen(value);
    while (n && (value[n - 1] == ' ' || value[n - 1] == '\t' || value[n - 1] == '\r' ||
                 value[n - 1] == '\n'))
        n--;
    if (n >= sizeof(cfg->token))
        return sp_err_set(err, SP_E_INVALID,
                          "digitalocean: the token from %s is too long to be an API token; "
                          "create a new one at " TOKEN_URL,
                          cfg->source);
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)value[i] <= ' ' || (unsigned char)value[i] >= 0x7f)
            return sp_err_set(err, SP_E_INVALID,
                              "digitalocean: the token from %s has spaces or control "
                              "characters, which API tokens never have; set it again",
                              cfg->source);
    memcpy(cfg->token, value, n);
    cfg->token[n] = '\0';
    return SP_OK;
}

static const char *context_token(const doctl_file *f, const char *name)
{
    for (size_t i = f->n; i-- > 0;)
        if (!strcmp(f->contexts[i].name, name))
            return f->contexts[i].token;
    return NULL;
}

static int choose(const doctl_file *f, const char *context, const char *path, do_config *cfg,
                  sp_err *err)
{
    const char *ctx = context && *context ? context : f->context ? f->context : "default";
    const char *token = !strcmp(ctx, "default") && f->access_token ? f->access_token
                                                                   : context_token(f, ctx);
    snprintf(cfg->source, sizeof(cfg->source), "doctl config (context %.64s)", ctx);
    if (token && *token)
        return take_token(cfg, token, err);
    if (!strcmp(ctx, "default"))
        put(cfg->why_none, sizeof(cfg->why_none),
                 "no DigitalOcean API token: DIGITALOCEAN_TOKEN and DIGITALOCEAN_ACCESS_TOKEN "
                 "are unset and doctl's config %.400s has no access-token; run `doctl auth "
                 "init`, or set DIGITALOCEAN_TOKEN to a token from " TOKEN_URL,
                 path);
    else
        put(cfg->why_none, sizeof(cfg->why_none),
                 "no DigitalOcean API token: doctl's current context '%.64s' has no token under "
                 "auth-contexts in %.300s; run `doctl auth init --context %.64s`, or set "
                 "DIGITALOCEAN_TOKEN",
                 ctx, path, ctx);
    return SP_OK;
}

int do_doctl_parse(const char *text, size_t len, const char *context, const char *path,
                   do_config *cfg, sp_err *err)
{
    doctl_file f;
    memset(&f, 0, sizeof(f));
    cfg->token[0] = cfg->source[0] = cfg->why_none[0] = '\0';
    reader r = {.path = path, .err = err};
    if (!yaml_parser_initialize(&r.parser))
        return sp_err_set(err, SP_E_NOMEM, "out of memory");
    yaml_parser_set_input_string(&r.parser, (const unsigned char *)text, len);
    int rc = read_file(&r, &f);
    yaml_parser_delete(&r.parser);
    if (rc == SP_E_NOMEM)
        sp_err_set(err, rc, "out of memory");
    if (!rc)
        rc = choose(&f, context, path, cfg, err);
    doctl_free(&f);
    return rc;
}

/* ---- Files and the environment --------------------------------------------------------------- */

static void config_path(const sp_host *host, do_config *cfg)
{
    const char *xdg = host->getenv(host, "XDG_CONFIG_HOME");
    const char *home = host->getenv(host, "HOME");
    if (xdg && *xdg)
        put(cfg->path, sizeof(cfg->path), "%.1000s/doctl/config.yaml", xdg);
    else if (home && *home)
#ifdef __APPLE__
        put(cfg->path, sizeof(cfg->path),
                 "%.980s/Library/Application Support/doctl/config.yaml", home);
#else
        put(cfg->path, sizeof(cfg->path), "%.1000s/.config/doctl/config.yaml", home);
#endif
    else
        cfg->path[0] = '\0';
}

/* Reads the whole file: SP_OK with *text (NULL when there is no such file). */
static int slurp(const char *path, char **text, size_t *len, sp_err *err)
{
    *text = NULL;
    *len = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT || errno == ENOTDIR
                   ? SP_OK
                   : sp_err_set(err, SP_E_IO, "cannot read doctl's config %s: %s", path,
                                strerror(errno));
    struct stat st;
    int rc = SP_OK;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
        rc = sp_err_set(err, SP_E_IO, "doctl's config %s is not a regular file", path);
    else if (st.st_size > DO_CONFIG_FILE_MAX)
        rc = sp_err_set(err, SP_E_INVALID, "doctl's config %s is over 1 MiB; it is not doctl's",
                        path);
    else if (!(*text = malloc((size_t)st.st_size + 1)))
        rc = sp_err_set(err, SP_E_NOMEM, "out of memory");
    while (!rc && *len < (size_t)st.st_size) {
        ssize_t got = read(fd, *text + *len, (size_t)st.st_size - *len);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            rc = sp_err_set(err, SP_E_IO, "cannot read doctl's config %s: %s", path,
                            got < 0 ? strerror(errno) : "it shrank while read");
        else
            *len += (size_t)got;
    }
    close(fd);
    if (rc) {
        free(*text);
        *text = NULL;
    } else
        (*text)[*len] = '\0';
    return rc;
}

static int from_env(const sp_host *host, do_config *cfg, bool *found, sp_err *err)
{
    static const char *const names[] = {"DIGITALOCEAN_TOKEN", "DIGITALOCEAN_ACCESS_TOKEN"};
    *found = false;
    for (size_t i = 0; i < 2; i++) {
        const char *v = host->getenv(host, names[i]);
        if (!v || !*v)
            continue;
        snprintf(cfg->source, sizeof(cfg->source), "environment (%s)", names[i]);
        *found = true;
        return take_token(cfg, v, err);
    }
    return SP_OK;
}

int do_config_load(const sp_host *host, do_config *cfg, sp_err *err)
{
    memset(cfg, 0, sizeof(*cfg));
    bool found;
    int rc = from_env(host, cfg, &found, err);
    if (rc || found)
        return rc;
    config_path(host, cfg);
    char *text = NULL;
    size_t len = 0;
    if (cfg->path[0] && (rc = slurp(cfg->path, &text, &len, err)))
        return rc;
    if (!text) {
        put(cfg->why_none, sizeof(cfg->why_none),
                 "no DigitalOcean API token: DIGITALOCEAN_TOKEN and DIGITALOCEAN_ACCESS_TOKEN "
                 "are unset and there is no doctl config%s%.400s; set DIGITALOCEAN_TOKEN to a "
                 "token from " TOKEN_URL ", or run `doctl auth init`",
                 cfg->path[0] ? " at " : "", cfg->path);
        return SP_OK;
    }
    rc = do_doctl_parse(text, len, host->getenv(host, "DIGITALOCEAN_CONTEXT"), cfg->path, cfg,
                        err);
    do_cleanse(text, len);
    free(text);
    return rc;
}
