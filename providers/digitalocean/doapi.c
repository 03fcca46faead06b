/*
 * DigitalOcean's API v2 over the host's HTTP service: JSON bodies, a bearer token, rate limits
 * (ratelimit-* headers, 429 with retry-after), retries with full-jitter backoff, pagination,
 * and errors ({"id": "...", "message": "..."}) classified into sp_status.
 */
#include "doapi.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define DEFAULT_MAX_ATTEMPTS 5
#define DEFAULT_BACKOFF_BASE_MS 250
#define DEFAULT_BACKOFF_CAP_MS 8000
#define DEFAULT_MAX_WAIT_S 60
#define TOKEN_URL "https://cloud.digitalocean.com/account/api/tokens"
/* Under this share of the hourly limit left, requests wait for the reset (in percent). */
#define LOW_REMAINING_PERCENT 5
#define MAX_PAGES 1000

/* ---- Small helpers --------------------------------------------------------------------------- */

unsigned do_setting(const sp_host *host, const char *name, unsigned dflt, unsigned lo,
                    unsigned hi)
{
    const char *v = host->getenv(host, name);
    char *end;
    unsigned long n = v && *v ? strtoul(v, &end, 10) : 0;
    if (!v || !*v || *end || n < lo || n > hi)
        return dflt;
    return (unsigned)n;
}

void do_sleep_ms(unsigned ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0)
        ;
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

const char *do_str(const json_t *obj, const char *key)
{
    const char *s = json_string_value(json_object_get(obj, key));
    return s ? s : "";
}

long long do_int(const json_t *obj, const char *key, long long dflt)
{
    const json_t *v = json_object_get(obj, key);
    if (json_is_integer(v))
        return (long long)json_integer_value(v);
    if (json_is_real(v) && json_real_value(v) >= -9e15 && json_real_value(v) <= 9e15)
        return (long long)json_real_value(v);
    return dflt;
}

void do_scrub(char *msg, const char *token)
{
    size_t n = token ? strlen(token) : 0;
    if (n < 4) /* nothing that short is a token, and "***" would then blot out words */
        return;
    for (char *p = strstr(msg, token); p; p = strstr(p + 3, token)) {
        memcpy(p, "***", 3);
        memmove(p + 3, p + n, strlen(p + n) + 1);
    }
}

void do_query_add(char *buf, size_t size, const char *name, const char *value)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t len = strlen(buf);
    int n = snprintf(buf + len, size - len, "%s%s=", len ? "&" : "", name);
    if (n < 0 || (size_t)n >= size - len)
        return;
    len += (size_t)n;
    for (const unsigned char *c = (const unsigned char *)value; *c && len + 4 < size; c++) {
        if (isalnum(*c) || *c == '-' || *c == '_' || *c == '.' || *c == '~')
            buf[len++] = (char)*c;
        else {
            buf[len++] = '%';
            buf[len++] = hex[*c >> 4];
            buf[len++] = hex[*c & 15];
        }
    }
    buf[len] = '\0';
}

/* ---- The context ----------------------------------------------------------------------------- */

static int base_url(do_ctx *ctx, sp_err *err)
{
    const char *url = ctx->host->getenv(ctx->host, "DIGITALOCEAN_API_URL");
    if (!url || !*url)
        url = DO_DEFAULT_URL;
    size_t n = strlen(url);
    while (n && url[n - 1] == '/')
        n--;
    if (n >= sizeof(ctx->base_url))
        return sp_err_set(err, SP_E_INVALID, "digitalocean: DIGITALOCEAN_API_URL is too long");
    if (strncmp(url, "https://", 8) != 0 && strncmp(url, "http://", 7) != 0)
        return sp_err_set(err, SP_E_INVALID,
                          "digitalocean: DIGITALOCEAN_API_URL must start with https:// (or "
                          "http:// for a local test server), not '%.100s'",
                          url);
    memcpy(ctx->base_url, url, n);
    ctx->base_url[n] = '\0';
    return SP_OK;
}

int do_ctx_init(do_ctx *ctx, const sp_host *host)
{
    memset(ctx, 0, sizeof(*ctx));
    ctx->host = host;
    pthread_mutex_init(&ctx->lock, NULL);
    pthread_mutex_init(&ctx->key_lock, NULL);
    ctx->max_attempts = do_setting(host, "DIGITALOCEAN_MAX_ATTEMPTS", DEFAULT_MAX_ATTEMPTS, 1, 20);
    ctx->backoff_base_ms = do_setting(host, "SKYPOOL_DO_BACKOFF_MS", DEFAULT_BACKOFF_BASE_MS, 0,
                                      60000);
    ctx->backoff_cap_ms = DEFAULT_BACKOFF_CAP_MS;
    ctx->max_wait_s = do_setting(host, "SKYPOOL_DO_MAX_WAIT_S", DEFAULT_MAX_WAIT_S, 0, 3600);
    ctx->per_page = do_setting(host, "SKYPOOL_DO_PER_PAGE", DO_PER_PAGE_MAX, 1, DO_PER_PAGE_MAX);
    ctx->cfg_status = base_url(ctx, &ctx->cfg_err);
    if (!ctx->cfg_status)
        ctx->cfg_status = do_config_load(host, &ctx->cfg, &ctx->cfg_err);
    return SP_OK;
}

void do_ctx_fini(do_ctx *ctx)
{
    do_config_wipe(&ctx->cfg);
    pthread_mutex_destroy(&ctx->lock);
    pthread_mutex_destroy(&ctx->key_lock);
}

/* ---- Rate limits ----------------------------------------------------------------------------- */

static const char *header(const sp_http_response *resp, const char *name)
{
    for (size_t i = 0; i < resp->n_headers; i++)
        if (resp->headers[i].name && !strcasecmp(resp->headers[i].name, name))
            return resp->headers[i].value;
    return NULL;
}

/* A header's whole number, or -1. */
static long long header_num(const sp_http_response *resp, const char *name)
{
    const char *v = header(resp, name);
    char *end;
    if (!v)
        return -1;
    while (*v == ' ')
        v++;
    long long n = strtoll(v, &end, 10);
    while (*end == ' ')
        end++;
    return end != v && !*end && n >= 0 ? n : -1;
}

/* ratelimit-reset is a Unix time; a small number is read as seconds from now. */
static int64_t reset_at_ms(long long reset, int64_t now)
{
    return reset < 1000000000LL ? now + reset * 1000 : (int64_t)reset * 1000;
}

/* No request before until_ms (bounded by max_wait_s from now), for every thread. */
static void pause_until(do_ctx *ctx, int64_t until_ms, int64_t now)
{
    int64_t cap = now + (int64_t)ctx->max_wait_s * 1000;
    if (until_ms > cap)
        until_ms = cap;
    pthread_mutex_lock(&ctx->lock);
    if (until_ms > ctx->pause_until_ms)
        ctx->pause_until_ms = until_ms;
    pthread_mutex_unlock(&ctx->lock);
}

static void note_limits(do_ctx *ctx, const sp_http_response *resp)
{
    long long limit = header_num(resp, "ratelimit-limit");
    long long left = header_num(resp, "ratelimit-remaining");
    long long reset = header_num(resp, "ratelimit-reset");
    if (limit <= 0 || left < 0 || left * 100 >= limit * LOW_REMAINING_PERCENT)
        return;
    int64_t now = now_ms();
    int64_t until = reset >= 0 ? reset_at_ms(reset, now) : now + 1000;
    if (until <= now)
        return;
    if (ctx->host->log) {
        char msg[160];
        snprintf(msg, sizeof(msg), "rate limit nearly spent (%lld of %lld left): waiting %.1f s",
                 left, limit, (double)(until - now) / 1000.0);
        ctx->host->log(ctx->host, SP_LOG_INFO, "digitalocean", msg);
    }
    pause_until(ctx, until, now);
}

static void wait_turn(do_ctx *ctx)
{
    pthread_mutex_lock(&ctx->lock);
    int64_t until = ctx->pause_until_ms;
    pthread_mutex_unlock(&ctx->lock);
    int64_t now = now_ms();
    if (until > now)
        do_sleep_ms((unsigned)(until - now));
}

/* How long a 429 asks to wait: retry-after, else the rate-limit reset, else one second. */
static int64_t retry_after_ms(const sp_http_response *resp, int64_t now)
{
    long long after = header_num(resp, "retry-after");
    if (after >= 0)
        return now + after * 1000;
    long long reset = header_num(resp, "ratelimit-reset");
    return reset >= 0 ? reset_at_ms(reset, now) : now + 1000;
}

static unsigned jitter_ms(const do_ctx *ctx, unsigned attempt)
{
    static __thread unsigned seed;
    if (!seed)
        seed = (unsigned)time(NULL) ^ (unsigned)(uintptr_t)&seed;
    unsigned long ceiling = ctx->backoff_base_ms;
    for (unsigned i = 0; i < attempt && ceiling < ctx->backoff_cap_ms; i++)
        ceiling *= 2;
    if (ceiling > ctx->backoff_cap_ms)
        ceiling = ctx->backoff_cap_ms;
    return ceiling ? (unsigned)(rand_r(&seed) % (ceiling + 1)) : 0;
}

/* ---- Errors ---------------------------------------------------------------------------------- */

bool do_contains(const char *text, const char *word)
{
    size_t n = strlen(word);
    for (const char *p = text; *p; p++)
        if (!strncasecmp(p, word, n))
            return true;
    return false;
}

int do_classify_422(const char *message)
{
    static const char *const quota[] = {"droplet limit", "exceed your", "gpu limit", "quota"};
    static const char *const capacity[] = {"not available", "unavailable", "capacity",
                                           "out of stock", "sold out", "no available"};
    for (size_t i = 0; i < sizeof(quota) / sizeof(quota[0]); i++)
        if (do_contains(message, quota[i]))
            return SP_E_QUOTA;
    for (size_t i = 0; i < sizeof(capacity) / sizeof(capacity[0]); i++)
        if (do_contains(message, capacity[i]))
            return SP_E_CAPACITY;
    return SP_E_INVALID;
}

/* {"id": "...", "message": "..."}, or the start of whatever else came back. */
static void parse_error(const sp_http_response *resp, do_error *e)
{
    memset(e, 0, sizeof(*e));
    e->status = resp->status;
    json_t *j = resp->body && resp->body_len ? json_loadb(resp->body, resp->body_len, 0, NULL)
                                             : NULL;
    if (json_is_object(j)) {
        snprintf(e->id, sizeof(e->id), "%s", do_str(j, "id"));
        snprintf(e->message, sizeof(e->message), "%s", do_str(j, "message"));
    } else if (resp->body && resp->body_len) {
        size_t n = resp->body_len < 160 ? resp->body_len : 160;
        for (size_t i = 0; i < n && resp->body[i]; i++)
            e->message[i] = (unsigned char)resp->body[i] < ' ' ? ' ' : resp->body[i];
    }
    json_decref(j);
    for (char *p = e->id; *p; p++)
        if ((unsigned char)*p < ' ')
            *p = ' ';
    for (char *p = e->message; *p; p++)
        if ((unsigned char)*p < ' ')
            *p = ' ';
}

static int status_of(const do_error *e)
{
    long s = e->status;
    if (s == 401)
        return SP_E_AUTH;
    if (s == 403)
        return SP_E_PERM;
    if (s == 404)
        return SP_E_NOTFOUND;
    if (s == 422)
        return do_classify_422(e->message);
    if (s == 429)
        return SP_E_THROTTLED;
    if (s >= 500 && s < 600)
        return SP_E_NETWORK;
    if (s >= 400 && s < 500)
        return SP_E_INVALID;
    return SP_E_PROTOCOL;
}

/* What to do about it, in a clause. */
static void advice(const do_ctx *ctx, int status, unsigned tries, char *out, size_t size)
{
    const char *src = ctx->cfg.source;
    switch (status) {
    case SP_E_AUTH:
        snprintf(out, size, "the token from %s was refused; check it, or create a new one at "
                            TOKEN_URL, src);
        break;
    case SP_E_PERM:
        snprintf(out, size, "the token from %s may not do this; give it read and write scopes "
                            "(droplet, ssh_key, tag, sizes, regions, account)", src);
        break;
    case SP_E_CAPACITY:
        snprintf(out, size, "DigitalOcean has no capacity for it there now; try another region "
                            "or size");
        break;
    case SP_E_QUOTA:
        snprintf(out, size, "ask DigitalOcean support for a higher droplet limit");
        break;
    case SP_E_THROTTLED:
        snprintf(out, size, "still rate limited after %u %s; wait a minute and retry", tries,
                 tries == 1 ? "try" : "tries");
        break;
    case SP_E_NETWORK:
        snprintf(out, size, "gave up after %u %s; DigitalOcean may be having trouble "
                            "(status.digitalocean.com)", tries, tries == 1 ? "try" : "tries");
        break;
    default:
        out[0] = '\0';
    }
}

static int fail(const do_ctx *ctx, const do_request *r, const do_error *e, int status,
                unsigned tries, sp_err *err)
{
    char what[320];
    advice(ctx, status, tries, what, sizeof(what));
    sp_err_set(err, status, "digitalocean: %s %s%s%s: HTTP %ld%s%s%s%s%s%s", r->method, r->path,
               r->where ? " " : "", r->where ? r->where : "", e->status, e->id[0] ? " " : "",
               e->id, e->message[0] ? ": " : "", e->message, what[0] ? "; " : "", what);
    do_scrub(err->msg, ctx->cfg.token);
    return status;
}

static int fail_transport(const do_ctx *ctx, const do_request *r, const sp_err *how,
                          unsigned tries, sp_err *err)
{
    sp_err_set(err, SP_E_NETWORK, "digitalocean: %s %s%s%s: %s; gave up after %u %s",
               r->method, r->path, r->where ? " " : "", r->where ? r->where : "", how->msg,
               tries, tries == 1 ? "try" : "tries");
    do_scrub(err->msg, ctx->cfg.token);
    return SP_E_NETWORK;
}

/* ---- Sending --------------------------------------------------------------------------------- */

typedef struct wire {
    char url[2560];
    char auth[sizeof(((do_config *)0)->token) + 16];
    char *body;
} wire;

static int send_once(do_ctx *ctx, const do_request *r, const wire *w, sp_http_response *resp,
                     sp_err *err)
{
    sp_http_header hdrs[3] = {{"Authorization", w->auth}, {"Accept", "application/json"}};
    size_t n = 2;
    if (w->body)
        hdrs[n++] = (sp_http_header){"Content-Type", "application/json"};
    sp_http_request req = {.struct_size = sizeof(req), .method = r->method, .url = w->url,
                           .headers = hdrs, .n_headers = n, .body = w->body,
                           .body_len = w->body ? strlen(w->body) : 0,
                           .flags = r->once ? SP_HTTP_NO_REPLAY : 0};
    memset(resp, 0, sizeof(*resp));
    resp->struct_size = sizeof(*resp);
    return ctx->host->http(ctx->host, &req, resp, err);
}

/* A 2xx answer: its JSON object, or NULL when empty. */
static int take_body(do_ctx *ctx, const do_request *r, sp_http_response *resp, json_t **out,
                     sp_err *err)
{
    *out = NULL;
    size_t n = resp->body ? resp->body_len : 0;
    while (n && isspace((unsigned char)resp->body[n - 1]))
        n--;
    if (n) {
        json_error_t je;
        *out = json_loadb(resp->body, n, 0, &je);
        if (!json_is_object(*out)) {
            json_decref(*out);
            *out = NULL;
            ctx->host->http_response_free(ctx->host, resp);
            return sp_err_set(err, SP_E_PROTOCOL,
                              "digitalocean: %s %s%s%s: the answer is not a JSON object "
                              "(HTTP %ld)",
                              r->method, r->path, r->where ? " " : "", r->where ? r->where : "",
                              resp->status);
        }
    }
    ctx->host->http_response_free(ctx->host, resp);
    return SP_OK;
}

static int prepare(do_ctx *ctx, const do_request *r, wire *w, sp_err *err)
{
    memset(w, 0, sizeof(*w));
    if (ctx->cfg_status)
        return sp_err_set(err, ctx->cfg_status, "%s", ctx->cfg_err.msg);
    if (!ctx->cfg.token[0])
        return sp_err_set(err, SP_E_AUTH, "%s", ctx->cfg.why_none);
    int n = snprintf(w->url, sizeof(w->url), "%s%s%s%s", ctx->base_url, r->path,
                     r->query && *r->query ? "?" : "", r->query ? r->query : "");
    if (n < 0 || (size_t)n >= sizeof(w->url))
        return sp_err_set(err, SP_E_INVALID, "digitalocean: %s %s: the URL is too long",
                          r->method, r->path);
    snprintf(w->auth, sizeof(w->auth), "Bearer %s", ctx->cfg.token);
    if (r->body && !(w->body = json_dumps(r->body, JSON_COMPACT)))
        return sp_err_set(err, SP_E_NOMEM, "out of memory");
    return SP_OK;
}

static void release(wire *w)
{
    do_cleanse(w->auth, sizeof(w->auth));
    free(w->body);
}

static int perform(do_ctx *ctx, const do_request *r, const wire *w, json_t **out, do_error *e,
                   sp_err *err)
{
    for (unsigned attempt = 0;; attempt++) {
        bool last = attempt + 1 >= ctx->max_attempts;
        sp_http_response resp;
        sp_err how = {0};
        wait_turn(ctx);
        if (send_once(ctx, r, w, &resp, &how) != SP_OK) {
            if (r->once || last)
                return fail_transport(ctx, r, &how, attempt + 1, err);
            do_sleep_ms(jitter_ms(ctx, attempt));
            continue;
        }
        note_limits(ctx, &resp);
        if (resp.status >= 200 && resp.status < 300)
            return take_body(ctx, r, &resp, out, err);
        parse_error(&resp, e);
        int64_t again = resp.status == 429 ? retry_after_ms(&resp, now_ms()) : 0;
        ctx->host->http_response_free(ctx->host, &resp);
        int status = status_of(e);
        bool retry = !last && (status == SP_E_THROTTLED || (status == SP_E_NETWORK && !r->once));
        if (!retry)
            return fail(ctx, r, e, status, attempt + 1, err);
        if (status == SP_E_THROTTLED)
            pause_until(ctx, again, now_ms());
        else
            do_sleep_ms(jitter_ms(ctx, attempt));
    }
}

int do_api(do_ctx *ctx, const do_request *r, json_t **out, do_error *e, sp_err *err)
{
    do_error local;
    if (!e)
        e = &local;
    memset(e, 0, sizeof(*e));
    *out = NULL;
    wire w;
    int rc = prepare(ctx, r, &w, err);
    if (!rc)
        rc = perform(ctx, r, &w, out, e, err);
    release(&w);
    return rc;
}

/* ---- Listings -------------------------------------------------------------------------------- */

/* The page= parameter of a next-page link, or 0. */
static long page_param(const char *link)
{
    const char *q = strchr(link, '?');
    for (const char *p = q; p && *p; p = strchr(p + 1, '&')) {
        if (!strncmp(p + 1, "page=", 5)) {
            char *end;
            long n = strtol(p + 6, &end, 10);
            return end != p + 6 && n > 0 ? n : 0;
        }
    }
    return 0;
}

/* The page after `page`, or 0 when done. A link to a page we have had ends it: a server that
 * keeps sending the same link (a mock's example) cannot make us loop. */
static unsigned next_page(const json_t *j, unsigned page, size_t count, long long total,
                          long long seen)
{
    const json_t *links = json_object_get(json_object_get(j, "links"), "pages");
    const char *next = json_string_value(json_object_get(links, "next"));
    if (!count)
        return 0;
    if (next) {
        long p = page_param(next);
        return p > (long)page && p <= MAX_PAGES ? (unsigned)p : 0;
    }
    return total >= 0 && seen < total && page < MAX_PAGES ? page + 1 : 0;
}

static long long meta_total(const json_t *j)
{
    return do_int(json_object_get(j, "meta"), "total", -1);
}

int do_list(do_ctx *ctx, const char *path, const char *query, const char *key, const char *where,
            do_item_fn fn, void *arg, long long *total, sp_err *err)
{
    long long first_total = -1, seen = 0;
    unsigned page = 1;
    int rc = SP_OK;
    for (unsigned n = 0; page && n < MAX_PAGES; n++) {
        char q[2048], num[16];
        snprintf(q, sizeof(q), "%s", query ? query : "");
        snprintf(num, sizeof(num), "%u", ctx->per_page);
        do_query_add(q, sizeof(q), "per_page", num);
        snprintf(num, sizeof(num), "%u", page);
        do_query_add(q, sizeof(q), "page", num);
        do_request r = {"GET", path, q, NULL, where, false};
        json_t *j;
        if ((rc = do_api(ctx, &r, &j, NULL, err)))
            break;
        json_t *items = json_object_get(j, key);
        if (!json_is_array(items)) {
            json_decref(j);
            rc = sp_err_set(err, SP_E_PROTOCOL, "digitalocean: GET %s: no '%s' list in the answer",
                            path, key);
            break;
        }
        long long t = meta_total(j);
        if (n == 0)
            first_total = t;
        size_t i;
        json_t *it;
        json_array_foreach(items, i, it) {
            if ((rc = fn(it, arg)))
                break;
        }
        seen += (long long)json_array_size(items);
        unsigned next = rc ? 0 : next_page(j, page, json_array_size(items), t, seen);
        json_decref(j);
        page = next;
    }
    if (total)
        *total = first_total;
    return rc;
}

static int count_item(const json_t *item, void *arg)
{
    (void)item;
    (*(long long *)arg)++;
    return SP_OK;
}

int do_count(do_ctx *ctx, const char *path, const char *query, long long *total, sp_err *err)
{
    char q[1024];
    snprintf(q, sizeof(q), "%s", query ? query : "");
    do_query_add(q, sizeof(q), "per_page", "1");
    do_request r = {"GET", path, q, NULL, NULL, false};
    json_t *j;
    int rc = do_api(ctx, &r, &j, NULL, err);
    if (rc)
        return rc;
    *total = meta_total(j);
    json_decref(j);
    if (*total >= 0)
        return SP_OK;
    /* No meta.total: count them the long way. */
    long long n = 0;
    const char *key = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    rc = do_list(ctx, path, query, key, NULL, count_item, &n, NULL, err);
    *total = n;
    return rc;
}
