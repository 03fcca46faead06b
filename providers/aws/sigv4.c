/*
 * AWS Signature Version 4.
 *
 * The canonical request follows aws-c-auth (whose test suite it passes byte for byte) and
 * botocore: the path is encoded once more as it stands in the URL (so an already-encoded path is
 * double-encoded, as every service but S3 expects), query keys and values are percent-decoded
 * and re-encoded, header values are trimmed and their inner whitespace folded.
 */
#include "sigv4.h"

#include "crypto.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define ALGORITHM "AWS4-HMAC-SHA256"
#define DEFAULT_EXPIRES 3600u
#define MAX_EXPIRES 604800u /* seven days: the most any service accepts */

/* ---- A growable string that wipes what it held ----------------------------------------------- */

typedef struct sbuf {
    char *p;
    size_t len, cap;
    bool oom;
} sbuf;

static void free_secret(char *p)
{
    if (p) {
        aws_cleanse(p, strlen(p));
        free(p);
    }
}

static void sb_free(sbuf *b)
{
    if (b->p) {
        aws_cleanse(b->p, b->cap);
        free(b->p);
    }
    memset(b, 0, sizeof(*b));
}

/* Grows by copying rather than realloc, so that no copy of a token is left behind unwiped. */
static bool sb_reserve(sbuf *b, size_t need)
{
    if (b->oom)
        return false;
    if (need <= b->cap)
        return true;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < need)
        cap *= 2;
    char *p = malloc(cap);
    if (!p) {
        b->oom = true;
        return false;
    }
    if (b->p) {
        memcpy(p, b->p, b->len + 1);
        aws_cleanse(b->p, b->cap);
        free(b->p);
    }
    b->p = p;
    b->cap = cap;
    return true;
}

static void sb_putn(sbuf *b, const char *s, size_t n)
{
    if (!sb_reserve(b, b->len + n + 1))
        return;
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

static void sb_puts(sbuf *b, const char *s)
{
    sb_putn(b, s, strlen(s));
}

static void sb_putc(sbuf *b, char c)
{
    sb_putn(b, &c, 1);
}

/* Hands the string over: "" when nothing was written, NULL when out of memory. */
static char *sb_take(sbuf *b)
{
    sb_putn(b, "", 0);
    if (b->oom) {
        sb_free(b);
        return NULL;
    }
    char *p = b->p;
    memset(b, 0, sizeof(*b));
    return p;
}

/* ---- Encoding -------------------------------------------------------------------------------- */

static bool unreserved(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
           c == '-' || c == '_' || c == '.' || c == '~';
}

static void sb_encode(sbuf *b, const char *s, size_t n, bool keep_slash)
{
    static const char hex[] = "0123456789ABCDEF";
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (unreserved(c) || (keep_slash && c == '/')) {
            sb_putc(b, (char)c);
        } else {
            char e[3] = {'%', hex[c >> 4], hex[c & 15]};
            sb_putn(b, e, 3);
        }
    }
}

static int hex_value(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* %XX to bytes; a '%' that starts no valid escape stays as it is. '+' stays '+'. */
static void sb_decode(sbuf *b, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        int hi = i + 2 < n && s[i] == '%' ? hex_value(s[i + 1]) : -1;
        int lo = hi >= 0 ? hex_value(s[i + 2]) : -1;
        if (lo >= 0) {
            sb_putc(b, (char)(hi * 16 + lo));
            i += 2;
        } else {
            sb_putc(b, s[i]);
        }
    }
}

/* Decodes then encodes, so that "%E1%88%B4" and the raw UTF-8 sign alike. */
static char *reencode(const char *s, size_t n)
{
    sbuf raw = {0}, enc = {0};
    sb_decode(&raw, s, n);
    if (raw.oom) {
        sb_free(&raw);
        return NULL;
    }
    sb_encode(&enc, raw.p ? raw.p : "", raw.len, false);
    sb_free(&raw);
    return sb_take(&enc);
}

char *aws_uri_encode(const char *s, size_t len, bool keep_slash)
{
    sbuf b = {0};
    sb_encode(&b, s, len, keep_slash);
    return sb_take(&b);
}

static void to_hex(const unsigned char *in, size_t n, char *out)
{
    static const char hex[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = hex[in[i] >> 4];
        out[2 * i + 1] = hex[in[i] & 15];
    }
    out[2 * n] = '\0';
}

/* ---- Hashes ---------------------------------------------------------------------------------- */

int aws_sha256_hex(const void *data, size_t len, char out[65])
{
    unsigned char md[32];
    if (aws_sha256(data, len, md))
        return -1;
    to_hex(md, 32, out);
    return 0;
}

static bool hmac_sha256(const void *key, size_t key_len, const char *msg, unsigned char out[32])
{
    return aws_hmac_sha256(key, key_len, msg, strlen(msg), out) == 0;
}

/* The signing key chain, then the signature of string_to_sign. Wipes every derived key. */
static bool compute_signature(const char *secret, const char *day, const char *region,
                              const char *service, const char *string_to_sign, char hex[65])
{
    char k_secret[4 + sizeof(((aws_credentials *)0)->secret_access_key)];
    unsigned char k[32], sig[32];
    int n = snprintf(k_secret, sizeof(k_secret), "AWS4%s", secret);
    bool ok = n > 0 && (size_t)n < sizeof(k_secret) &&
              hmac_sha256(k_secret, (size_t)n, day, k) && hmac_sha256(k, 32, region, k) &&
              hmac_sha256(k, 32, service, k) && hmac_sha256(k, 32, "aws4_request", k) &&
              hmac_sha256(k, 32, string_to_sign, sig);
    if (ok)
        to_hex(sig, 32, hex);
    aws_cleanse(k_secret, sizeof(k_secret));
    aws_cleanse(k, sizeof(k));
    aws_cleanse(sig, sizeof(sig));
    return ok;
}

/* ---- The URL --------------------------------------------------------------------------------- */

typedef struct url_parts {
    const char *host;          /* authority, default port dropped */
    size_t host_len;
    const char *path;
    size_t path_len;
    const char *query;         /* after '?'; NULL when the URL has no '?' */
    size_t query_len;
} url_parts;

/* The URL up to its query, which may carry a presigned token: never in a message. */
static int bad_url(sp_err *err, const char *url, const char *why)
{
    int shown = (int)strcspn(url, "?#");
    return sp_err_set(err, SP_E_INVALID, "cannot sign a request to '%.*s%s': %s",
                      shown > 200 ? 200 : shown, url, shown > 200 ? "..." : "", why);
}

static bool bad_authority(const char *a, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)a[i] <= 0x20 || a[i] == 0x7f || a[i] == '@' || a[i] == '\\')
            return true;
    return false;
}

static size_t default_port_len(const char *a, size_t n, bool https)
{
    const char *port = https ? ":443" : ":80";
    size_t pl = strlen(port);
    return n > pl && memcmp(a + n - pl, port, pl) == 0 ? pl : 0;
}

static int parse_url(const char *url, url_parts *u, sp_err *err)
{
    const char *sep = strstr(url, "://");
    if (!sep)
        return bad_url(err, url, "no scheme://host");
    size_t slen = (size_t)(sep - url);
    bool https = slen == 5 && strncasecmp(url, "https", 5) == 0;
    if (!https && !(slen == 4 && strncasecmp(url, "http", 4) == 0))
        return bad_url(err, url, "only http and https URLs are signed");
    const char *auth = sep + 3;
    size_t alen = strcspn(auth, "/?#");
    if (alen == 0)
        return bad_url(err, url, "no host");
    if (alen > 300)
        return bad_url(err, url, "the host part is longer than 300 characters");
    if (bad_authority(auth, alen))
        return bad_url(err, url, "the host part holds whitespace, a control character or "
                                 "user info");
    if (strchr(auth + alen, '#'))
        return bad_url(err, url, "a fragment (#...) is never sent; remove it");
    u->host = auth;
    u->host_len = alen - default_port_len(auth, alen, https);
    u->path = auth + alen;
    u->path_len = strcspn(u->path, "?");
    u->query = u->path[u->path_len] == '?' ? u->path + u->path_len + 1 : NULL;
    u->query_len = u->query ? strlen(u->query) : 0;
    return SP_OK;
}

/* ---- Canonical URI --------------------------------------------------------------------------- */

/* Dot segments and empty segments removed; a trailing '/' kept (botocore's normpath rule). */
static void normalize_path(sbuf *out, const char *path, size_t len)
{
    size_t i = 0;
    while (i < len) {
        size_t seg = i;
        while (i < len && path[i] != '/')
            i++;
        size_t n = i - seg;
        if (n == 2 && memcmp(path + seg, "..", 2) == 0) {
            while (out->len > 0 && out->p[out->len - 1] != '/')
                out->len--;
            if (out->len > 0)
                out->len--;
            if (out->p)
                out->p[out->len] = '\0';
        } else if (n > 0 && !(n == 1 && path[seg] == '.')) {
            sb_putc(out, '/');
            sb_putn(out, path + seg, n);
        }
        i++;
    }
    if (out->len == 0 || path[len - 1] == '/')
        sb_putc(out, '/');
}

static void canonical_uri(sbuf *b, const char *path, size_t len, bool normalize)
{
    if (len == 0) {
        sb_putc(b, '/');
        return;
    }
    if (!normalize) {
        sb_encode(b, path, len, true);
        return;
    }
    sbuf norm = {0};
    normalize_path(&norm, path, len);
    if (norm.oom)
        b->oom = true;
    else
        sb_encode(b, norm.p, norm.len, true);
    sb_free(&norm);
}

/* ---- Headers --------------------------------------------------------------------------------- */

typedef struct hdr {
    char *name;                /* lower case */
    char *value;               /* trimmed, inner whitespace folded */
    size_t order;
} hdr;

typedef struct hdr_list {
    hdr *v;
    size_t n, cap;
    bool oom;
} hdr_list;

static bool http_space(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f';
}

static char *fold_value(const char *v)
{
    sbuf b = {0};
    bool pending_space = false;
    for (; *v; v++) {
        if (http_space(*v)) {
            pending_space = b.len > 0;
            continue;
        }
        if (pending_space)
            sb_putc(&b, ' ');
        pending_space = false;
        sb_putc(&b, *v);
    }
    return sb_take(&b);
}

static char *lower_dup(const char *s)
{
    char *d = strdup(s);
    for (char *p = d; p && *p; p++)
        if (*p >= 'A' && *p <= 'Z')
            *p = (char)(*p - 'A' + 'a');
    return d;
}

static void hl_add(hdr_list *l, const char *lname, const char *value)
{
    if (l->oom)
        return;
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 16;
        hdr *v = realloc(l->v, cap * sizeof(*v));
        if (!v) {
            l->oom = true;
            return;
        }
        l->v = v;
        l->cap = cap;
    }
    hdr *h = &l->v[l->n];
    h->name = strdup(lname);
    h->value = fold_value(value);
    h->order = l->n;
    if (!h->name || !h->value) {
        free(h->name);
        free_secret(h->value);
        l->oom = true;
        return;
    }
    l->n++;
}

static void hl_free(hdr_list *l)
{
    for (size_t i = 0; i < l->n; i++) {
        free(l->v[i].name);
        free_secret(l->v[i].value);
    }
    free(l->v);
    memset(l, 0, sizeof(*l));
}

static int hdr_cmp(const void *a, const void *b)
{
    const hdr *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    return c ? c : (x->order < y->order ? -1 : x->order > y->order);
}

/* RFC 9110 token characters. */
static bool token_name(const char *s)
{
    if (!*s)
        return false;
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (!unreserved(c) && !strchr("!#$%&'*+^`|", c))
            return false;
    }
    return true;
}

/* Headers that HTTP stacks and proxies add or rewrite: signing them breaks signatures. */
static bool unsigned_header(const char *lname)
{
    static const char *const skip[] = {"user-agent", "expect", "transfer-encoding",
                                       "connection", "upgrade", "x-amzn-trace-id", NULL};
    for (const char *const *s = skip; *s; s++)
        if (strcmp(lname, *s) == 0)
            return true;
    return false;
}

/* ---- The signing context --------------------------------------------------------------------- */

typedef struct sig_ctx {
    const aws_request *req;
    const aws_credentials *creds;
    const aws_signing *how;
    bool presign;
    bool with_token;           /* a session token is present */
    url_parts url;
    char amz_date[17];
    char day[9];
    char payload_hash[65];
    char expires[16];
    char *scope;               /* day/region/service/aws4_request */
    char *credential;          /* access key id/scope */
    char *canonical_headers;
    char *signed_headers;
    char *canonical_query;
    hdr_list headers;
} sig_ctx;

static void ctx_free(sig_ctx *c)
{
    free(c->scope);
    free(c->credential);
    free_secret(c->canonical_headers);
    free(c->signed_headers);
    free_secret(c->canonical_query);
    hl_free(&c->headers);
}

/* Names the signer adds itself: the caller must not send them too. */
static bool reserved_header(const sig_ctx *c, const char *lname)
{
    if (strcmp(lname, "authorization") == 0)
        return true;
    if (c->presign)
        return false;
    return strcmp(lname, "x-amz-date") == 0 ||
           (c->with_token && strcmp(lname, "x-amz-security-token") == 0) ||
           (c->how->sign_body && strcmp(lname, "x-amz-content-sha256") == 0);
}

static int add_caller_header(sig_ctx *c, const sp_http_header *h, bool *have_host, sp_err *err)
{
    if (!h->name || !token_name(h->name))
        return sp_err_set(err, SP_E_INVALID, "cannot sign: header name '%.64s' is not a valid "
                          "HTTP token", h->name ? h->name : "(null)");
    if (!h->value)
        return sp_err_set(err, SP_E_INVALID, "cannot sign: header %.64s has no value", h->name);
    char *lname = lower_dup(h->name);
    if (!lname)
        return sp_err_set(err, SP_E_NOMEM, "out of memory while signing");
    int rc = SP_OK;
    if (reserved_header(c, lname))
        rc = sp_err_set(err, SP_E_INVALID, "cannot sign: the request already carries %.64s, "
                        "which the signer adds itself", h->name);
    else if (!unsigned_header(lname))
        hl_add(&c->headers, lname, h->value);
    if (strcmp(lname, "host") == 0)
        *have_host = true;
    free(lname);
    return rc;
}

static int collect_headers(sig_ctx *c, sp_err *err)
{
    bool have_host = false;
    for (size_t i = 0; i < c->req->n_headers; i++) {
        int rc = add_caller_header(c, &c->req->headers[i], &have_host, err);
        if (rc)
            return rc;
    }
    if (!have_host) {
        char host[320];
        snprintf(host, sizeof(host), "%.*s", (int)c->url.host_len, c->url.host);
        hl_add(&c->headers, "host", host);
    }
    if (!c->presign) {
        hl_add(&c->headers, "x-amz-date", c->amz_date);
        if (c->with_token && !c->how->omit_session_token)
            hl_add(&c->headers, "x-amz-security-token", c->creds->session_token);
        if (c->how->sign_body)
            hl_add(&c->headers, "x-amz-content-sha256", c->payload_hash);
    }
    if (c->headers.oom)
        return sp_err_set(err, SP_E_NOMEM, "out of memory while signing");
    return SP_OK;
}

/* "name:v1,v2\n" per distinct name, sorted; and "name;name" for SignedHeaders. */
static int render_headers(sig_ctx *c, sp_err *err)
{
    hdr_list *l = &c->headers;
    qsort(l->v, l->n, sizeof(*l->v), hdr_cmp);
    sbuf canon = {0}, names = {0};
    for (size_t i = 0; i < l->n; i++) {
        bool same = i > 0 && strcmp(l->v[i].name, l->v[i - 1].name) == 0;
        if (same) {
            sb_putc(&canon, ',');
        } else {
            if (i > 0) {
                sb_putc(&canon, '\n');
                sb_putc(&names, ';');
            }
            sb_puts(&canon, l->v[i].name);
            sb_putc(&canon, ':');
            sb_puts(&names, l->v[i].name);
        }
        sb_puts(&canon, l->v[i].value);
    }
    sb_putc(&canon, '\n');
    c->canonical_headers = sb_take(&canon);
    c->signed_headers = sb_take(&names);
    if (!c->canonical_headers || !c->signed_headers)
        return sp_err_set(err, SP_E_NOMEM, "out of memory while signing");
    return SP_OK;
}

/* ---- Query ----------------------------------------------------------------------------------- */

typedef struct qparam {
    char *key;                 /* encoded */
    char *value;               /* encoded */
} qparam;

typedef struct qlist {
    qparam *v;
    size_t n, cap;
    bool oom;
} qlist;

/* Takes ownership of key and value. */
static void ql_push(qlist *l, char *key, char *value)
{
    if (!l->oom && l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 16;
        qparam *v = realloc(l->v, cap * sizeof(*v));
        if (v) {
            l->v = v;
            l->cap = cap;
        } else {
            l->oom = true;
        }
    }
    if (l->oom || !key || !value) {
        l->oom = true;
        free(key);
        free_secret(value);
        return;
    }
    l->v[l->n++] = (qparam){key, value};
}

static void ql_free(qlist *l)
{
    for (size_t i = 0; i < l->n; i++) {
        free(l->v[i].key);
        free_secret(l->v[i].value);
    }
    free(l->v);
    memset(l, 0, sizeof(*l));
}

static int qparam_cmp(const void *a, const void *b)
{
    const qparam *x = a, *y = b;
    int c = strcmp(x->key, y->key);
    return c ? c : strcmp(x->value, y->value);
}

/* The URL's own parameters: "a=1&b&c=" gives a=1, b=, c=. Empty pieces are dropped. */
static void parse_query(qlist *l, const char *q, size_t len)
{
    size_t i = 0;
    while (i < len) {
        size_t start = i;
        while (i < len && q[i] != '&')
            i++;
        const char *piece = q + start;
        size_t n = i - start;
        const char *eq = memchr(piece, '=', n);
        size_t klen = eq ? (size_t)(eq - piece) : n;
        if (n > 0)
            ql_push(l, reencode(piece, klen),
                    eq ? reencode(eq + 1, n - klen - 1) : strdup(""));
        i++;
    }
}

static void add_presign_params(const sig_ctx *c, qlist *l)
{
    ql_push(l, strdup("X-Amz-Algorithm"), strdup(ALGORITHM));
    ql_push(l, strdup("X-Amz-Credential"),
            aws_uri_encode(c->credential, strlen(c->credential), false));
    ql_push(l, strdup("X-Amz-Date"), strdup(c->amz_date));
    ql_push(l, strdup("X-Amz-Expires"), strdup(c->expires));
    if (c->with_token && !c->how->omit_session_token)
        ql_push(l, strdup("X-Amz-Security-Token"),
                aws_uri_encode(c->creds->session_token, strlen(c->creds->session_token), false));
    ql_push(l, strdup("X-Amz-SignedHeaders"),
            aws_uri_encode(c->signed_headers, strlen(c->signed_headers), false));
}

static int build_query(sig_ctx *c, sp_err *err)
{
    qlist l = {0};
    if (c->url.query)
        parse_query(&l, c->url.query, c->url.query_len);
    if (c->presign)
        add_presign_params(c, &l);
    sbuf b = {0};
    if (!l.oom) {
        if (l.n)
            qsort(l.v, l.n, sizeof(*l.v), qparam_cmp);
        for (size_t i = 0; i < l.n; i++) {
            if (i > 0)
                sb_putc(&b, '&');
            sb_puts(&b, l.v[i].key);
            sb_putc(&b, '=');
            sb_puts(&b, l.v[i].value);
        }
    }
    bool oom = l.oom;
    ql_free(&l);
    c->canonical_query = oom ? NULL : sb_take(&b);
    sb_free(&b);
    if (!c->canonical_query)
        return sp_err_set(err, SP_E_NOMEM, "out of memory while signing");
    return SP_OK;
}

/* ---- Checks ---------------------------------------------------------------------------------- */

static bool scope_word(const char *s)
{
    if (!s || !*s || strlen(s) > 64)
        return false;
    for (; *s; s++)
        if (!unreserved((unsigned char)*s))
            return false;
    return true;
}

static bool terminated(const char *s, size_t size)
{
    return memchr(s, '\0', size) != NULL;
}

/* Printable, no spaces, nothing that would end the Credential= field. */
static bool key_id_ok(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s <= 0x20 || (unsigned char)*s >= 0x7f || *s == '/' || *s == ',')
            return false;
    return true;
}

static int check_creds(const aws_credentials *cr, sp_err *err)
{
    if (!terminated(cr->access_key_id, sizeof(cr->access_key_id)) ||
        !terminated(cr->secret_access_key, sizeof(cr->secret_access_key)) ||
        !terminated(cr->session_token, sizeof(cr->session_token)) ||
        !terminated(cr->source, sizeof(cr->source)))
        return sp_err_set(err, SP_E_INVALID, "cannot sign: malformed AWS credentials");
    if (!cr->access_key_id[0] || !cr->secret_access_key[0])
        return sp_err_set(err, SP_E_AUTH, "no AWS credentials to sign with%s%s%s: export "
                          "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or set a profile up "
                          "with 'aws configure'", cr->source[0] ? " (from " : "", cr->source,
                          cr->source[0] ? ")" : "");
    if (!key_id_ok(cr->access_key_id))
        return sp_err_set(err, SP_E_AUTH, "the AWS access key id%s%s holds spaces, control "
                          "characters, '/' or ','", cr->source[0] ? " from " : "", cr->source);
    return SP_OK;
}

static int check_inputs(const aws_request *req, const aws_credentials *creds,
                        const aws_signing *how, bool presign, sp_err *err)
{
    if (!req || !creds || !how || !req->method || !req->url ||
        (req->n_headers && !req->headers) || (req->body_len && !req->body))
        return sp_err_set(err, SP_E_INVALID, "cannot sign: incomplete request");
    if (!token_name(req->method))
        return sp_err_set(err, SP_E_INVALID, "cannot sign: '%.32s' is not an HTTP method",
                          req->method);
    if (!scope_word(how->region))
        return sp_err_set(err, SP_E_INVALID, "cannot sign: '%.64s' is not an AWS region",
                          how->region ? how->region : "");
    if (!scope_word(how->service))
        return sp_err_set(err, SP_E_INVALID, "cannot sign: '%.64s' is not an AWS service "
                          "signing name", how->service ? how->service : "");
    if (presign && how->expires_s > MAX_EXPIRES)
        return sp_err_set(err, SP_E_INVALID, "cannot presign for %u s: AWS accepts at most "
                          "%u s (7 days)", (unsigned)how->expires_s, MAX_EXPIRES);
    return check_creds(creds, err);
}

/* ---- Assembly -------------------------------------------------------------------------------- */

static int prepare(sig_ctx *c, sp_err *err)
{
    struct tm tm;
    time_t now = c->how->now;
    if (!gmtime_r(&now, &tm) ||
        strftime(c->amz_date, sizeof(c->amz_date), "%Y%m%dT%H%M%SZ", &tm) != 16)
        return sp_err_set(err, SP_E_INVALID, "cannot sign: the signing time is out of range");
    memcpy(c->day, c->amz_date, 8);
    c->day[8] = '\0';
    snprintf(c->expires, sizeof(c->expires), "%u",
             c->how->expires_s ? (unsigned)c->how->expires_s : DEFAULT_EXPIRES);
    int rc = aws_crypto_ready(err);
    if (rc)
        return rc;
    if (aws_sha256_hex(c->req->body, c->req->body_len, c->payload_hash))
        return sp_err_set(err, SP_E_INTERNAL, "cannot sign: SHA-256 failed in libcrypto");
    sbuf scope = {0}, cred = {0};
    sb_puts(&scope, c->day);
    sb_putc(&scope, '/');
    sb_puts(&scope, c->how->region);
    sb_putc(&scope, '/');
    sb_puts(&scope, c->how->service);
    sb_puts(&scope, "/aws4_request");
    sb_puts(&cred, c->creds->access_key_id);
    sb_putc(&cred, '/');
    sb_puts(&cred, scope.p ? scope.p : "");
    c->scope = sb_take(&scope);
    c->credential = sb_take(&cred);
    if (!c->scope || !c->credential)
        return sp_err_set(err, SP_E_NOMEM, "out of memory while signing");
    return SP_OK;
}

static int build_canonical_request(const sig_ctx *c, aws_signed *out, sp_err *err)
{
    sbuf b = {0};
    sb_puts(&b, c->req->method);
    sb_putc(&b, '\n');
    canonical_uri(&b, c->url.path, c->url.path_len, c->how->normalize_path);
    sb_putc(&b, '\n');
    sb_puts(&b, c->canonical_query);
    sb_putc(&b, '\n');
    sb_puts(&b, c->canonical_headers);
    sb_putc(&b, '\n');
    sb_puts(&b, c->signed_headers);
    sb_putc(&b, '\n');
    sb_puts(&b, c->payload_hash);
    out->canonical_request = sb_take(&b);
    if (!out->canonical_request)
        return sp_err_set(err, SP_E_NOMEM, "out of memory while signing");
    return SP_OK;
}

static int build_string_to_sign(const sig_ctx *c, aws_signed *out, sp_err *err)
{
    char hash[65];
    if (aws_sha256_hex(out->canonical_request, strlen(out->canonical_request), hash))
        return sp_err_set(err, SP_E_INTERNAL, "cannot sign: SHA-256 failed in libcrypto");
    sbuf b = {0};
    sb_puts(&b, ALGORITHM "\n");
    sb_puts(&b, c->amz_date);
    sb_putc(&b, '\n');
    sb_puts(&b, c->scope);
    sb_putc(&b, '\n');
    sb_puts(&b, hash);
    out->string_to_sign = sb_take(&b);
    if (!out->string_to_sign)
        return sp_err_set(err, SP_E_NOMEM, "out of memory while signing");
    if (!compute_signature(c->creds->secret_access_key, c->day, c->how->region,
                           c->how->service, out->string_to_sign, out->signature))
        return sp_err_set(err, SP_E_INTERNAL, "cannot sign: HMAC-SHA256 failed in libcrypto");
    return SP_OK;
}

static void add_header(aws_signed *out, const char *name, const char *value)
{
    out->add[out->n_add++] = (sp_http_header){name, value};
}

static int header_outputs(const sig_ctx *c, aws_signed *out, sp_err *err)
{
    memcpy(out->amz_date, c->amz_date, sizeof(out->amz_date));
    memcpy(out->content_sha256, c->payload_hash, sizeof(out->content_sha256));
    sbuf b = {0};
    sb_puts(&b, ALGORITHM " Credential=");
    sb_puts(&b, c->credential);
    sb_puts(&b, ", SignedHeaders=");
    sb_puts(&b, c->signed_headers);
    sb_puts(&b, ", Signature=");
    sb_puts(&b, out->signature);
    out->authorization = sb_take(&b);
    if (c->with_token)
        out->security_token = strdup(c->creds->session_token);
    if (!out->authorization || (c->with_token && !out->security_token))
        return sp_err_set(err, SP_E_NOMEM, "out of memory while signing");
    if (c->with_token)
        add_header(out, "X-Amz-Security-Token", out->security_token);
    add_header(out, "X-Amz-Date", out->amz_date);
    if (c->how->sign_body)
        add_header(out, "x-amz-content-sha256", out->content_sha256);
    add_header(out, "Authorization", out->authorization);
    return SP_OK;
}

static void put_param(sbuf *b, const char *key, const char *value)
{
    sb_putc(b, '&');
    sb_puts(b, key);
    sb_putc(b, '=');
    sb_encode(b, value, strlen(value), false);
}

/* The URL as given, then the X-Amz-* parameters in the order the AWS SDKs write them. */
static int presign_outputs(const sig_ctx *c, aws_signed *out, sp_err *err)
{
    sbuf b = {0};
    sb_puts(&b, c->req->url);
    if (!c->url.query)
        sb_putc(&b, '?');
    else if (c->url.query_len)
        sb_putc(&b, '&');
    sb_puts(&b, "X-Amz-Algorithm=" ALGORITHM);
    put_param(&b, "X-Amz-Credential", c->credential);
    put_param(&b, "X-Amz-Date", c->amz_date);
    put_param(&b, "X-Amz-SignedHeaders", c->signed_headers);
    put_param(&b, "X-Amz-Expires", c->expires);
    if (c->with_token)
        put_param(&b, "X-Amz-Security-Token", c->creds->session_token);
    put_param(&b, "X-Amz-Signature", out->signature);
    out->presigned_url = sb_take(&b);
    if (!out->presigned_url)
        return sp_err_set(err, SP_E_NOMEM, "out of memory while signing");
    return SP_OK;
}

static int sign_common(const aws_request *req, const aws_credentials *creds,
                       const aws_signing *how, bool presign, aws_signed *out, sp_err *err)
{
    if (!out)
        return sp_err_set(err, SP_E_INVALID, "cannot sign: no output");
    memset(out, 0, sizeof(*out));
    int rc = check_inputs(req, creds, how, presign, err);
    if (rc)
        return rc;
    sig_ctx c = {.req = req, .creds = creds, .how = how, .presign = presign,
                 .with_token = creds->session_token[0] != '\0'};
    rc = parse_url(req->url, &c.url, err);
    if (!rc)
        rc = prepare(&c, err);
    if (!rc)
        rc = collect_headers(&c, err);
    if (!rc)
        rc = render_headers(&c, err);
    if (!rc)
        rc = build_query(&c, err);
    if (!rc)
        rc = build_canonical_request(&c, out, err);
    if (!rc)
        rc = build_string_to_sign(&c, out, err);
    if (!rc)
        rc = presign ? presign_outputs(&c, out, err) : header_outputs(&c, out, err);
    ctx_free(&c);
    if (rc)
        aws_signed_free(out);
    return rc;
}

int aws_sigv4_sign(const aws_request *req, const aws_credentials *creds, const aws_signing *how,
                   aws_signed *out, sp_err *err)
{
    return sign_common(req, creds, how, false, out, err);
}

int aws_sigv4_presign(const aws_request *req, const aws_credentials *creds,
                      const aws_signing *how, aws_signed *out, sp_err *err)
{
    return sign_common(req, creds, how, true, out, err);
}

void aws_signed_free(aws_signed *s)
{
    if (!s)
        return;
    free_secret(s->canonical_request);
    free_secret(s->string_to_sign);
    free_secret(s->presigned_url);
    free(s->authorization);
    free_secret(s->security_token);
    aws_cleanse(s, sizeof(*s));
}
