/*
 * AWS credentials, region and endpoints, as botocore (and so the AWS CLI) finds them.
 *
 * The shared files are read as botocore reads them, with Python's configparser.RawConfigParser
 * (strict): '#' and ';' start comment lines only (not inline), '=' or ':' separates a key from
 * its value, keys are case-insensitive, a more indented line continues the value above it
 * (botocore's nested "s3 =" blocks), [DEFAULT] is inherited by every section, and a section or
 * key that appears twice in one file makes the whole file unreadable, as it does for the CLI.
 */
#include "config.h"

#include "crypto.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

/* A note for the user, cut short at the buffer's end if it must be: a long path is no error. */
static SP_PRINTF(3, 4) void note(char *buf, size_t size, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, size, fmt, ap);
    va_end(ap);
    (void)n;
}

/* ---- An INI file ----------------------------------------------------------------------------- */

typedef struct ini_kv {
    char *key;                 /* lower case */
    char *value;
    unsigned line;
} ini_kv;

typedef struct ini_section {
    char *name;
    ini_kv *kv;
    size_t n, cap;
} ini_section;

typedef struct ini_file {
    const char *path;
    bool present;
    ini_section *sec;
    size_t n, cap;
    ini_section defaults;      /* [DEFAULT] */
} ini_file;

static void section_free(ini_section *s)
{
    for (size_t i = 0; i < s->n; i++) {
        free(s->kv[i].key);
        if (s->kv[i].value) {
            aws_cleanse(s->kv[i].value, strlen(s->kv[i].value));
            free(s->kv[i].value);
        }
    }
    free(s->kv);
    free(s->name);
    memset(s, 0, sizeof(*s));
}

static void ini_free(ini_file *f)
{
    for (size_t i = 0; i < f->n; i++)
        section_free(&f->sec[i]);
    free(f->sec);
    section_free(&f->defaults);
    f->sec = NULL;
    f->n = f->cap = 0;
}

static const ini_kv *section_get(const ini_section *s, const char *key)
{
    for (size_t i = 0; s && i < s->n; i++)
        if (strcmp(s->kv[i].key, key) == 0)
            return &s->kv[i];
    return NULL;
}

/* A key of a section, or of [DEFAULT] (configparser's inheritance). */
static const ini_kv *ini_get(const ini_file *f, const ini_section *s, const char *key)
{
    if (!s)
        return NULL;
    const ini_kv *kv = section_get(s, key);
    return kv ? kv : section_get(&f->defaults, key);
}

static const ini_section *ini_section_named(const ini_file *f, const char *name)
{
    for (size_t i = 0; i < f->n; i++)
        if (strcmp(f->sec[i].name, name) == 0)
            return &f->sec[i];
    return NULL;
}

/* ---- Parsing, line by line as configparser does ---------------------------------------------- */

typedef struct ini_parser {
    ini_file *f;
    long cur;                  /* section index; -1 none yet; -2 [DEFAULT] */
    long opt;                  /* key index in the current section; -1 none */
    size_t indent_level;
    unsigned blanks;           /* empty lines since the current key's last line */
    unsigned line;
    sp_err *err;
} ini_parser;

#define CUR_NONE (-1)
#define CUR_DEFAULTS (-2)

static bool py_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

static ini_section *cur_section(const ini_parser *p)
{
    if (p->cur == CUR_DEFAULTS)
        return &p->f->defaults;
    return p->cur >= 0 ? &p->f->sec[p->cur] : NULL;
}

static int parse_error(const ini_parser *p, int code, const char *what)
{
    return sp_err_set(p->err, code, "cannot use the AWS shared file %s: line %u: %s (the AWS "
                      "CLI refuses this file too)", p->f->path, p->line, what);
}

static int oom(sp_err *err)
{
    return sp_err_set(err, SP_E_NOMEM, "out of memory while reading the AWS configuration");
}

static bool grow(void **v, size_t *cap, size_t n, size_t elem)
{
    if (n < *cap)
        return true;
    size_t c = *cap ? *cap * 2 : 8;
    void *nv = realloc(*v, c * elem);
    if (!nv)
        return false;
    *v = nv;
    *cap = c;
    return true;
}

static int add_section(ini_parser *p, const char *name, size_t len)
{
    ini_file *f = p->f;
    char *n = strndup(name, len);
    if (!n || !grow((void **)&f->sec, &f->cap, f->n, sizeof(*f->sec))) {
        free(n);
        return oom(p->err);
    }
    if (strcmp(n, "DEFAULT") == 0) {
        free(n);
        p->cur = CUR_DEFAULTS;
    } else if (ini_section_named(f, n)) {
        char what[192];
        snprintf(what, sizeof(what), "section [%.128s] appears twice", n);
        free(n);
        return parse_error(p, SP_E_INVALID, what);
    } else {
        f->sec[f->n] = (ini_section){.name = n};
        p->cur = (long)f->n++;
    }
    p->opt = -1;
    return SP_OK;
}

static int add_option(ini_parser *p, const char *key, size_t klen, const char *value, size_t vlen)
{
    ini_section *s = cur_section(p);
    char *k = strndup(key, klen), *v = strndup(value, vlen);
    if (!k || !v || !grow((void **)&s->kv, &s->cap, s->n, sizeof(*s->kv))) {
        free(k);
        free(v);
        return oom(p->err);
    }
    for (char *c = k; *c; c++)
        if (*c >= 'A' && *c <= 'Z')
            *c = (char)(*c - 'A' + 'a');
    if (section_get(s, k)) {
        char what[192];
        snprintf(what, sizeof(what), "key '%.128s' appears twice in one section", k);
        free(k);
        free(v);
        return parse_error(p, SP_E_INVALID, what);
    }
    s->kv[s->n] = (ini_kv){k, v, p->line};
    p->opt = (long)s->n++;
    p->blanks = 0;
    return SP_OK;
}

/* A more indented line continues the current key's value: joined with '\n', as configparser
 * joins it, empty lines in between kept. */
static int continue_value(ini_parser *p, const char *text, size_t len)
{
    ini_kv *kv = &cur_section(p)->kv[p->opt];
    size_t old = strlen(kv->value), need = old + p->blanks + 1 + len + 1;
    char *v = malloc(need);
    if (!v)
        return oom(p->err);
    memcpy(v, kv->value, old);
    memset(v + old, '\n', p->blanks + 1);
    memcpy(v + old + p->blanks + 1, text, len);
    v[need - 1] = '\0';
    aws_cleanse(kv->value, old);
    free(kv->value);
    kv->value = v;
    p->blanks = 0;
    return SP_OK;
}

/* "[name]": the name runs to the line's last ']' (configparser's greedy pattern). */
static bool section_line(const char *s, size_t len, const char **name, size_t *name_len)
{
    if (len < 3 || s[0] != '[')
        return false;
    const char *close = NULL;
    for (size_t i = len; i-- > 2;)
        if (s[i] == ']') {
            close = s + i;
            break;
        }
    if (!close)
        return false;
    *name = s + 1;
    *name_len = (size_t)(close - s - 1);
    return true;
}

static int option_line(ini_parser *p, const char *s, size_t len)
{
    size_t d = strcspn(s, "=:");
    if (d >= len)
        return parse_error(p, SP_E_INVALID, "neither a [section] nor 'key = value'");
    size_t klen = d;
    while (klen > 0 && py_space(s[klen - 1]))
        klen--;
    if (klen == 0)
        return parse_error(p, SP_E_INVALID, "a value without a key");
    const char *v = s + d + 1, *end = s + len;
    while (v < end && py_space(*v))
        v++;
    return add_option(p, s, klen, v, (size_t)(end - v));
}

static int parse_line(ini_parser *p, const char *line, size_t len)
{
    size_t indent = 0;
    while (indent < len && py_space(line[indent]))
        indent++;
    size_t end = len;
    while (end > indent && py_space(line[end - 1]))
        end--;
    const char *s = line + indent;
    size_t n = end - indent;
    if (n > 0 && (s[0] == '#' || s[0] == ';'))
        return SP_OK;
    if (n == 0) {
        if (p->opt >= 0)
            p->blanks++;
        return SP_OK;
    }
    if (p->cur != CUR_NONE && p->opt >= 0 && indent > p->indent_level)
        return continue_value(p, s, n);
    p->indent_level = indent;
    const char *name;
    size_t name_len;
    if (section_line(s, n, &name, &name_len))
        return add_section(p, name, name_len);
    if (p->cur == CUR_NONE)
        return parse_error(p, SP_E_INVALID, "a key before any [section]");
    return option_line(p, s, n);
}

/* botocore reads a value that starts on the next line as "key = value" lines. */
static int check_nested_section(const ini_file *f, const ini_section *s, sp_err *err)
{
    for (size_t i = 0; i < s->n; i++) {
        const char *v = s->kv[i].value;
        if (v[0] != '\n')
            continue;
        for (const char *l = v + 1; l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
            size_t n = strcspn(l, "\n");
            if (n > 0 && !memchr(l, '=', n))
                return sp_err_set(err, SP_E_INVALID, "cannot use the AWS shared file %s: line "
                                  "%u: the block under '%.64s' has a line without '=' (the "
                                  "AWS CLI refuses this file too)", f->path, s->kv[i].line,
                                  s->kv[i].key);
        }
    }
    return SP_OK;
}

static int check_nested(const ini_file *f, sp_err *err)
{
    int rc = check_nested_section(f, &f->defaults, err);
    for (size_t i = 0; !rc && i < f->n; i++)
        rc = check_nested_section(f, &f->sec[i], err);
    return rc;
}

/* Lines end at "\n", "\r\n" or "\r" (Python's universal newlines). */
static int ini_parse(ini_file *f, const char *text, size_t len, sp_err *err)
{
    ini_parser p = {.f = f, .cur = CUR_NONE, .opt = -1, .err = err};
    size_t i = 0;
    while (i < len) {
        size_t n = strcspn(text + i, "\r\n");
        p.line++;
        int rc = parse_line(&p, text + i, n);
        if (rc)
            return rc;
        i += n;
        if (i < len && text[i] == '\r' && i + 1 < len && text[i + 1] == '\n')
            i++;
        i++;
    }
    return check_nested(f, err);
}

/* ---- Reading the files ----------------------------------------------------------------------- */

static int file_error(sp_err *err, int code, const char *path, const char *why)
{
    return sp_err_set(err, code, "cannot read the AWS shared file %s: %s", path, why);
}

static int slurp(FILE *fp, const char *path, char **text, size_t *len, sp_err *err)
{
    char *buf = malloc(AWS_CONFIG_FILE_MAX + 1);
    if (!buf)
        return oom(err);
    size_t n = fread(buf, 1, AWS_CONFIG_FILE_MAX + 1, fp);
    int rc = SP_OK;
    if (ferror(fp))
        rc = file_error(err, SP_E_IO, path, strerror(errno));
    else if (n > AWS_CONFIG_FILE_MAX)
        rc = file_error(err, SP_E_INVALID, path, "larger than 1 MiB, which is not a "
                        "credentials or config file");
    else if (memchr(buf, '\0', n))
        rc = file_error(err, SP_E_INVALID, path, "it holds NUL bytes, so it is not a text file");
    if (rc) {
        aws_cleanse(buf, n);
        free(buf);
        return rc;
    }
    buf[n] = '\0';
    *text = buf;
    *len = n;
    return SP_OK;
}

/* Absent files are not an error (the SDKs skip them); unreadable ones are. */
static int ini_load(ini_file *f, unsigned *mode, sp_err *err)
{
    if (!f->path[0])
        return SP_OK;
    FILE *fp = fopen(f->path, "rb");
    if (!fp)
        return errno == ENOENT || errno == ENOTDIR
                   ? SP_OK
                   : file_error(err, SP_E_IO, f->path, strerror(errno));
    struct stat st;
    int rc = SP_OK;
    if (fstat(fileno(fp), &st) != 0)
        rc = file_error(err, SP_E_IO, f->path, strerror(errno));
    else if (!S_ISREG(st.st_mode))
        rc = file_error(err, SP_E_IO, f->path, "not a regular file");
    char *text = NULL;
    size_t len = 0;
    if (!rc)
        rc = slurp(fp, f->path, &text, &len, err);
    fclose(fp);
    if (rc)
        return rc;
    *mode = (unsigned)st.st_mode & 0777u;
    f->present = true;
    rc = ini_parse(f, text, len, err);
    aws_cleanse(text, len);
    free(text);
    return rc;
}

/* ---- Profiles -------------------------------------------------------------------------------- */

/* Python's shlex.split, as botocore splits "[profile NAME]": returns the number of words and
 * copies the second into second; -1 for an unclosed quote or a trailing backslash. */
static int shlex_second(const char *s, char *second, size_t size)
{
    int words = 0;
    size_t n = 0;
    while (*s) {
        while (*s == ' ' || *s == '\t' || *s == '\r' || *s == '\n')
            s++;
        if (!*s)
            break;
        words++;
        n = 0;
        char quote = 0;
        for (; *s && (quote || !(*s == ' ' || *s == '\t' || *s == '\r' || *s == '\n')); s++) {
            char c = *s;
            if (!quote && (c == '\'' || c == '"')) {
                quote = c;
                continue;
            }
            if (quote && c == quote) {
                quote = 0;
                continue;
            }
            bool escapes = quote != '\'' && c == '\\' &&
                           (!quote || s[1] == '\\' || s[1] == '"');
            if (escapes) {
                if (!s[1])
                    return -1;
                c = *++s;
            }
            if (words == 2 && n + 1 < size)
                second[n++] = c;
        }
        if (quote)
            return -1;
        if (words == 2)
            second[n] = '\0';
    }
    return words;
}

/* The config file's section for a profile: "[profile NAME]", or "[default]"; the last one
 * wins, as in botocore's build_profile_map. */
static const ini_section *config_profile(const ini_file *f, const char *profile)
{
    const ini_section *found = NULL;
    for (size_t i = 0; i < f->n; i++) {
        const char *name = f->sec[i].name;
        char second[128];
        if (strncmp(name, "profile", 7) == 0) {
            if (shlex_second(name, second, sizeof(second)) == 2 && strcmp(second, profile) == 0)
                found = &f->sec[i];
        } else if (strcmp(name, "default") == 0 && strcmp(profile, "default") == 0) {
            found = &f->sec[i];
        }
    }
    return found;
}

/* ---- Loading --------------------------------------------------------------------------------- */

typedef struct loader {
    const sp_host *host;
    aws_config *cfg;
    sp_err *err;
    ini_file cred_file, conf_file;
    const ini_section *cred_sec, *conf_sec;
    const char *profile_var;   /* the variable that named the profile; NULL for "default" */
    unsigned cred_mode;
} loader;

static const char *env(const sp_host *host, const char *name)
{
    const char *v = host && host->getenv ? host->getenv(host, name) : NULL;
    return v && *v ? v : NULL;
}

/* A key of the profile as botocore's merged view has it: the credentials file over the
 * config file. Sets *file to where it was found. */
static const ini_kv *profile_get(const loader *l, const char *key, const char **file)
{
    const ini_kv *kv = ini_get(&l->cred_file, l->cred_sec, key);
    *file = l->cred_file.path;
    if (!kv) {
        kv = ini_get(&l->conf_file, l->conf_sec, key);
        *file = l->conf_file.path;
    }
    return kv;
}

static int choose_profile(loader *l)
{
    const char *vars[] = {"AWS_PROFILE", "AWS_DEFAULT_PROFILE"};
    const char *p = NULL;
    for (size_t i = 0; i < 2 && !p; i++)
        if ((p = env(l->host, vars[i])) != NULL)
            l->profile_var = vars[i];
    if (!p)
        p = "default";
    if (strlen(p) >= sizeof(l->cfg->profile))
        return sp_err_set(l->err, SP_E_INVALID, "the AWS profile name in %s is longer than %zu "
                          "characters", l->profile_var, sizeof(l->cfg->profile) - 1);
    snprintf(l->cfg->profile, sizeof(l->cfg->profile), "%s", p);
    return SP_OK;
}

static int shared_path(loader *l, const char *var, const char *leaf, char *out, size_t size)
{
    const char *v = env(l->host, var), *home = env(l->host, "HOME");
    int n;
    if (v && v[0] == '~' && v[1] == '/' && home)
        n = snprintf(out, size, "%s%s", home, v + 1);
    else if (v)
        n = snprintf(out, size, "%s", v);
    else if (home)
        n = snprintf(out, size, "%s/.aws/%s", home, leaf);
    else
        n = snprintf(out, size, "%s", "");
    if (n < 0 || (size_t)n >= size)
        return sp_err_set(l->err, SP_E_INVALID, "the path of the AWS %s file (from %s or HOME) "
                          "is too long", leaf, var);
    return SP_OK;
}

static int load_files(loader *l)
{
    aws_config *cfg = l->cfg;
    int rc = shared_path(l, "AWS_SHARED_CREDENTIALS_FILE", "credentials", cfg->credentials_file,
                         sizeof(cfg->credentials_file));
    if (!rc)
        rc = shared_path(l, "AWS_CONFIG_FILE", "config", cfg->config_file,
                         sizeof(cfg->config_file));
    l->cred_file.path = cfg->credentials_file;
    l->conf_file.path = cfg->config_file;
    unsigned conf_mode = 0;
    if (!rc)
        rc = ini_load(&l->cred_file, &l->cred_mode, l->err);
    if (!rc)
        rc = ini_load(&l->conf_file, &conf_mode, l->err);
    if (rc)
        return rc;
    l->cred_sec = ini_section_named(&l->cred_file, cfg->profile);
    l->conf_sec = config_profile(&l->conf_file, cfg->profile);
    if (l->cred_file.present && (l->cred_mode & 077u))
        note(cfg->warning, sizeof(cfg->warning), "the AWS credentials file %s can be read by "
             "group or others (mode %04o): chmod 600 it", cfg->credentials_file, l->cred_mode);
    return SP_OK;
}

static const char *file_state(const ini_file *f)
{
    return !f->path[0] ? " (no path: HOME is unset)" : f->present ? "" : " (no such file)";
}

/* A profile named explicitly must exist, as botocore insists (ProfileNotFound). */
static int check_profile_exists(const loader *l)
{
    if (!l->profile_var || l->cred_sec || l->conf_sec)
        return SP_OK;
    const char *p = l->cfg->profile;
    return sp_err_set(l->err, SP_E_AUTH, "AWS profile '%s' (from %s) is not in %s%s nor in %s"
                      "%s: add [%s] to the credentials file or [profile %s] to the config file, "
                      "or unset %s", p, l->profile_var, l->cred_file.path,
                      file_state(&l->cred_file), l->conf_file.path, file_state(&l->conf_file), p,
                      p, l->profile_var);
}

/* ---- Credentials ----------------------------------------------------------------------------- */

static bool key_chars_ok(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s <= 0x20 || (unsigned char)*s == 0x7f)
            return false;
    return true;
}

/* Copies one credential, checking it without ever quoting it. */
static int put_cred(const loader *l, char *dst, size_t size, const char *value, const char *name,
                    const char *where)
{
    if (!value[0])
        return sp_err_set(l->err, SP_E_AUTH, "%s is empty (%s)", name, where);
    if (strlen(value) >= size)
        return sp_err_set(l->err, SP_E_AUTH, "%s is longer than %zu characters (%s)", name,
                          size - 1, where);
    if (!key_chars_ok(value))
        return sp_err_set(l->err, SP_E_AUTH, "%s holds spaces or control characters (%s); "
                          "note that '#' comments must stand on their own line", name, where);
    memcpy(dst, value, strlen(value) + 1);
    return SP_OK;
}

typedef struct cred_names {
    const char *key, *secret, *token;
} cred_names;

static int set_creds(loader *l, const char *ak, const char *sk, const char *token,
                     const cred_names *names, const char *where)
{
    aws_credentials *c = &l->cfg->creds;
    int rc = put_cred(l, c->access_key_id, sizeof(c->access_key_id), ak, names->key, where);
    if (!rc)
        rc = put_cred(l, c->secret_access_key, sizeof(c->secret_access_key), sk, names->secret,
                      where);
    if (!rc && token && token[0])
        rc = put_cred(l, c->session_token, sizeof(c->session_token), token, names->token, where);
    if (!rc)
        note(c->source, sizeof(c->source), "%s", where);
    return rc;
}

static int env_creds(loader *l, bool *found)
{
    const sp_host *h = l->host;
    const char *ak = env(h, "AWS_ACCESS_KEY_ID"), *sk = env(h, "AWS_SECRET_ACCESS_KEY");
    if (!ak && !sk)
        return SP_OK;
    if (!ak || !sk) {
        const char *set = ak ? "AWS_ACCESS_KEY_ID" : "AWS_SECRET_ACCESS_KEY";
        const char *unset = ak ? "AWS_SECRET_ACCESS_KEY" : "AWS_ACCESS_KEY_ID";
        return sp_err_set(l->err, SP_E_AUTH, "%s is set but %s is not: export both, or unset "
                          "%s to use profile '%s'", set, unset, set, l->cfg->profile);
    }
    /* botocore's order: the legacy name first. */
    const char *token_var = env(h, "AWS_SECURITY_TOKEN") ? "AWS_SECURITY_TOKEN"
                                                          : "AWS_SESSION_TOKEN";
    cred_names names = {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", token_var};
    *found = true;
    return set_creds(l, ak, sk, env(h, token_var), &names, "environment (AWS_ACCESS_KEY_ID)");
}

/* Static keys from one file's section, when it has aws_access_key_id. */
static int file_creds(loader *l, const ini_file *f, const ini_section *s, bool *found)
{
    const ini_kv *ak = ini_get(f, s, "aws_access_key_id");
    if (!ak)
        return SP_OK;
    char where[256];
    note(where, sizeof(where), "profile '%s' in %s", l->cfg->profile, f->path);
    const ini_kv *sk = ini_get(f, s, "aws_secret_access_key");
    if (!sk)
        return sp_err_set(l->err, SP_E_AUTH, "%s has aws_access_key_id but no "
                          "aws_secret_access_key: add it, or remove the key id", where);
    const ini_kv *tok = ini_get(f, s, "aws_security_token");
    if (!tok)
        tok = ini_get(f, s, "aws_session_token");
    cred_names names = {"aws_access_key_id", "aws_secret_access_key",
                        tok ? tok->key : "aws_session_token"};
    *found = true;
    return set_creds(l, ak->value, sk->value, tok ? tok->value : NULL, &names, where);
}

#define WHY_EXPORT "export AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (`aws configure " \
                   "export-credentials --profile %s --format env` prints them) or use a " \
                   "profile with static keys"

static void why_unsupported(loader *l, const char *what, const char *file)
{
    const char *p = l->cfg->profile;
    note(l->cfg->why_no_creds, sizeof(l->cfg->why_no_creds),
         "profile '%s' (%s) uses %s, which skypool does not support yet; " WHY_EXPORT, p, file,
         what, p);
}

/* Profiles that botocore would resolve another way before it looks at static keys. */
static bool unsupported_before_keys(loader *l)
{
    const char *file;
    const ini_kv *role = profile_get(l, "role_arn", &file);
    if (role) {
        why_unsupported(l, profile_get(l, "web_identity_token_file", &file)
                               ? "web_identity_token_file (assume role with web identity)"
                               : "role_arn (assume role with source_profile or "
                                 "credential_source)", file);
        return true;
    }
    if (env(l->host, "AWS_WEB_IDENTITY_TOKEN_FILE") && env(l->host, "AWS_ROLE_ARN")) {
        why_unsupported(l, "AWS_WEB_IDENTITY_TOKEN_FILE (assume role with web identity)",
                        "environment");
        return true;
    }
    static const char *const sso[] = {"sso_session", "sso_start_url", NULL};
    for (const char *const *k = sso; *k; k++)
        if (profile_get(l, *k, &file)) {
            why_unsupported(l, "IAM Identity Center (SSO) sign-in", file);
            return true;
        }
    return false;
}

static void why_none(loader *l)
{
    aws_config *cfg = l->cfg;
    const char *container = env(l->host, "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI") ||
                                    env(l->host, "AWS_CONTAINER_CREDENTIALS_FULL_URI")
                                ? "AWS_CONTAINER_CREDENTIALS_* is set, but "
                                : "";
    note(cfg->why_no_creds, sizeof(cfg->why_no_creds),
         "no AWS credentials: AWS_ACCESS_KEY_ID is not set, and profile '%s' has no "
         "aws_access_key_id in %s%s or %s%s; %sinstance metadata (IMDS) and container "
         "credentials are not supported: export AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY "
         "or run 'aws configure'", cfg->profile,
         cfg->credentials_file[0] ? cfg->credentials_file : "~/.aws/credentials",
         file_state(&l->cred_file), cfg->config_file[0] ? cfg->config_file : "~/.aws/config",
         file_state(&l->conf_file), container);
}

/* botocore's chain after the environment: assume role, web identity, SSO, the credentials
 * file, credential_process, the config file, then containers and IMDS. */
static int profile_creds(loader *l)
{
    if (unsupported_before_keys(l))
        return SP_OK;
    bool found = false;
    int rc = file_creds(l, &l->cred_file, l->cred_sec, &found);
    if (rc || found)
        return rc;
    const char *file;
    if (profile_get(l, "credential_process", &file)) {
        why_unsupported(l, "credential_process", file);
        return SP_OK;
    }
    rc = file_creds(l, &l->conf_file, l->conf_sec, &found);
    if (!rc && !found)
        why_none(l);
    return rc;
}

/* ---- Region ---------------------------------------------------------------------------------- */

static bool region_name_ok(const char *r)
{
    if (!r || !*r || *r == '-' || strlen(r) >= 64)
        return false;
    for (; *r; r++)
        if (!((*r >= 'a' && *r <= 'z') || (*r >= '0' && *r <= '9') || *r == '-'))
            return false;
    return true;
}

static int load_region(loader *l)
{
    aws_config *cfg = l->cfg;
    const char *vars[] = {"AWS_REGION", "AWS_DEFAULT_REGION"}, *r = NULL, *file = NULL;
    for (size_t i = 0; i < 2 && !r; i++)
        if ((r = env(l->host, vars[i])) != NULL)
            snprintf(cfg->region_source, sizeof(cfg->region_source), "environment (%s)",
                     vars[i]);
    if (!r) {
        const ini_kv *kv = profile_get(l, "region", &file);
        if (!kv || !kv->value[0])
            return SP_OK;
        r = kv->value;
        note(cfg->region_source, sizeof(cfg->region_source), "profile '%s' in %s", cfg->profile,
             file);
    }
    if (!region_name_ok(r) && !key_chars_ok(r)) /* more than a word: never quoted */
        return sp_err_set(l->err, SP_E_INVALID, "the AWS region from %s holds spaces or more "
                          "than one line, so it is not a region name like us-east-1 (a '#' "
                          "comment must stand on its own line)", cfg->region_source);
    if (!region_name_ok(r))
        return sp_err_set(l->err, SP_E_INVALID, "AWS region '%.64s' from %s is not a region "
                          "name like us-east-1", r, cfg->region_source);
    snprintf(cfg->region, sizeof(cfg->region), "%s", r);
    return SP_OK;
}

int aws_config_load(const sp_host *host, aws_config *cfg, sp_err *err)
{
    if (!cfg)
        return sp_err_set(err, SP_E_INVALID, "aws_config_load: no config to fill");
    memset(cfg, 0, sizeof(*cfg));
    loader l = {.host = host, .cfg = cfg, .err = err};
    bool found = false;
    int rc = choose_profile(&l);
    if (!rc)
        rc = load_files(&l);
    if (!rc)
        rc = check_profile_exists(&l);
    if (!rc)
        rc = load_region(&l);
    if (!rc)
        rc = env_creds(&l, &found);
    if (!rc && !found)
        rc = profile_creds(&l);
    ini_free(&l.cred_file);
    ini_free(&l.conf_file);
    if (rc)
        aws_cleanse(&cfg->creds, sizeof(cfg->creds));
    return rc;
}

void aws_config_wipe(aws_config *cfg)
{
    if (cfg)
        aws_cleanse(cfg, sizeof(*cfg));
}

/* ---- Endpoints ------------------------------------------------------------------------------- */

typedef struct aws_service_id {
    const char *service;       /* our name, and the endpoint's prefix */
    const char *env_id;        /* AWS_ENDPOINT_URL_<env_id> */
} aws_service_id;

static const aws_service_id services[] = {
    {"ec2", "EC2"},
    {"servicequotas", "SERVICE_QUOTAS"},
    {"sts", "STS"},
};

static int copy_endpoint(const char *url, const char *var, char *buf, size_t size, sp_err *err)
{
    size_t scheme = strncasecmp(url, "https://", 8) == 0 ? 8
                    : strncasecmp(url, "http://", 7) == 0 ? 7
                                                          : 0;
    size_t len = strlen(url);
    while (len > scheme && url[len - 1] == '/')
        len--;
    bool spaces = false;
    for (size_t i = 0; i < len; i++)
        spaces |= (unsigned char)url[i] <= 0x20 || url[i] == 0x7f;
    if (!scheme || len == scheme || spaces)
        return sp_err_set(err, SP_E_INVALID, "%s is not an http:// or https:// URL", var);
    if (len >= size)
        return sp_err_set(err, SP_E_INVALID, "%s is longer than %zu characters", var, size - 1);
    memcpy(buf, url, len);
    buf[len] = '\0';
    return SP_OK;
}

static bool ignore_configured_endpoints(const sp_host *host)
{
    const char *v = env(host, "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS");
    return v && strcasecmp(v, "true") == 0;
}

int aws_endpoint(const sp_host *host, const char *service, const char *region, char *buf,
                 size_t size, sp_err *err)
{
    const aws_service_id *s = NULL;
    for (size_t i = 0; service && i < sizeof(services) / sizeof(services[0]); i++)
        if (strcmp(service, services[i].service) == 0)
            s = &services[i];
    if (!s || !buf || size == 0)
        return sp_err_set(err, SP_E_INVALID, "no AWS endpoint for service '%s'",
                          service ? service : "(null)");
    if (!ignore_configured_endpoints(host)) {
        char var[64];
        snprintf(var, sizeof(var), "AWS_ENDPOINT_URL_%s", s->env_id);
        const char *url = env(host, var);
        if (url)
            return copy_endpoint(url, var, buf, size, err);
        if ((url = env(host, "AWS_ENDPOINT_URL")) != NULL)
            return copy_endpoint(url, "AWS_ENDPOINT_URL", buf, size, err);
    }
    if (!region || !*region)
        return sp_err_set(err, SP_E_INVALID, "no AWS region for %s: set AWS_REGION, or region "
                          "in your AWS profile", s->service);
    if (!region_name_ok(region))
        return sp_err_set(err, SP_E_INVALID, "'%.64s' is not an AWS region name", region);
    const char *suffix = strncmp(region, "cn-", 3) == 0 ? "amazonaws.com.cn" : "amazonaws.com";
    int n = snprintf(buf, size, "https://%s.%s.%s", s->service, region, suffix);
    if (n < 0 || (size_t)n >= size)
        return sp_err_set(err, SP_E_INVALID, "the %s endpoint does not fit in %zu bytes",
                          s->service, size);
    return SP_OK;
}
