/*
 * A scripted host for the DigitalOcean provider's unit tests: settings, a queue of canned HTTP
 * answers (status, headers, body, or a transport failure), and a log of every request with the
 * time it was made. Included by the test_digitalocean_*.c files; everything is static inline so
 * that each file uses what it needs.
 */
#ifndef SKYPOOL_TEST_DIGITALOCEAN_FAKE_H
#define SKYPOOL_TEST_DIGITALOCEAN_FAKE_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "digitalocean.h"
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define DOF_MAX 64
#define DOF_TOKEN "dop_v1_unittest0123456789abcdef0123456789abcdef0123456789abcdef0123"

typedef struct dof_answer {
    long status;
    char *body;
    const char *headers[6][2];
    size_t n_headers;
    bool transport_failure;
    char failure[256];
} dof_answer;

typedef struct dof_request {
    char method[8];
    char url[2560];
    char *body;
    char auth[1200];
    bool has_content_type;
    int64_t at_ms;             /* CLOCK_MONOTONIC */
} dof_request;

typedef struct dof_state {
    sp_host host;
    const char *env[32][2];
    size_t n_env;
    dof_answer answers[DOF_MAX];
    size_t n_answers, next;
    dof_request log[DOF_MAX];
    size_t n_log;
    char logged[8][SP_ERR_MSG_MAX]; /* host->log messages */
    size_t n_logged;
} dof_state;

static dof_state dof;

/* The plugin's entry point, linked in from its objects. */
int sp_provider_init(const sp_host *host, const sp_provider **table, void **ctx, char **errmsg);

static inline int64_t dof_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static inline const char *dof_getenv(const sp_host *h, const char *name)
{
    (void)h;
    for (size_t i = 0; i < dof.n_env; i++)
        if (!strcmp(dof.env[i][0], name))
            return dof.env[i][1];
    return NULL;
}

static inline void dof_log(const sp_host *h, sp_log_level l, const char *p, const char *m)
{
    (void)h;
    (void)l;
    (void)p;
    if (dof.n_logged < 8)
        snprintf(dof.logged[dof.n_logged++], SP_ERR_MSG_MAX, "%s", m);
}

static inline const char *dof_header(const sp_http_request *req, const char *name)
{
    for (size_t i = 0; i < req->n_headers; i++)
        if (!strcmp(req->headers[i].name, name))
            return req->headers[i].value;
    return NULL;
}

static inline int dof_http(const sp_host *h, const sp_http_request *req, sp_http_response *resp,
                           sp_err *err)
{
    (void)h;
    if (dof.n_log == DOF_MAX)
        fail_msg("more than %d requests", DOF_MAX);
    dof_request *r = &dof.log[dof.n_log++];
    snprintf(r->method, sizeof(r->method), "%s", req->method);
    snprintf(r->url, sizeof(r->url), "%s", req->url);
    const char *auth = dof_header(req, "Authorization");
    snprintf(r->auth, sizeof(r->auth), "%s", auth ? auth : "");
    r->has_content_type = dof_header(req, "Content-Type") != NULL;
    r->body = NULL;
    if (req->body) {
        r->body = calloc(1, req->body_len + 1);
        memcpy(r->body, req->body, req->body_len);
    }
    r->at_ms = dof_now_ms();
    if (dof.next == dof.n_answers)
        fail_msg("no answer scripted for %s %s", req->method, req->url);
    dof_answer *a = &dof.answers[dof.next++];
    memset(resp, 0, sizeof(*resp));
    if (a->transport_failure)
        return sp_err_set(err, SP_E_NETWORK, "%s", a->failure);
    resp->status = a->status;
    resp->body = strdup(a->body ? a->body : "");
    resp->body_len = strlen(resp->body);
    resp->headers = calloc(a->n_headers + 1, sizeof(sp_http_header));
    for (size_t i = 0; i < a->n_headers; i++)
        resp->headers[i] = (sp_http_header){a->headers[i][0], a->headers[i][1]};
    resp->n_headers = a->n_headers;
    return SP_OK;
}

static inline void dof_http_free(const sp_host *h, sp_http_response *resp)
{
    (void)h;
    free(resp->body);
    free(resp->headers);
    memset(resp, 0, sizeof(*resp));
}

static inline int dof_catalog(const sp_host *h, const char *p, const sp_offer_query *q,
                              sp_offer_sink *s, sp_err *e)
{
    (void)h, (void)p, (void)q, (void)s, (void)e;
    return SP_OK;
}

static inline void *dof_alloc(const sp_host *h, size_t n)
{
    (void)h;
    return malloc(n);
}

static inline void dof_dealloc(const sp_host *h, void *p)
{
    (void)h;
    free(p);
}

/* Drops the script and the log. */
static inline void dof_reset(void)
{
    for (size_t i = 0; i < dof.n_answers; i++)
        free(dof.answers[i].body);
    for (size_t i = 0; i < dof.n_log; i++)
        free(dof.log[i].body);
    dof.n_answers = dof.next = dof.n_log = dof.n_logged = 0;
}

/* A fresh host: no settings but those given later, a token, no retries' waiting. */
static inline void dof_init(void)
{
    dof_reset();
    memset(&dof, 0, sizeof(dof));
    dof.host = (sp_host){.abi_major = SP_PROVIDER_ABI_MAJOR, .struct_size = sizeof(sp_host),
                         .log = dof_log, .getenv = dof_getenv, .http = dof_http,
                         .http_response_free = dof_http_free, .catalog_query = dof_catalog,
                         .alloc = dof_alloc, .free = dof_dealloc};
}

static inline void dof_env(const char *name, const char *value)
{
    for (size_t i = 0; i < dof.n_env; i++)
        if (!strcmp(dof.env[i][0], name)) {
            dof.env[i][1] = value;
            return;
        }
    dof.env[dof.n_env][0] = name;
    dof.env[dof.n_env++][1] = value;
}

/* The usual test settings: a token, a local URL, three tries, no backoff. */
static inline void dof_defaults(void)
{
    dof_env("DIGITALOCEAN_TOKEN", DOF_TOKEN);
    dof_env("DIGITALOCEAN_API_URL", "http://127.0.0.1:9/");
    dof_env("DIGITALOCEAN_MAX_ATTEMPTS", "3");
    dof_env("SKYPOOL_DO_BACKOFF_MS", "0");
    dof_env("HOME", "/nonexistent");
    dof_env("XDG_CONFIG_HOME", "/nonexistent");
}

/* Queues an answer; headers come as name, value pairs ending with NULL. */
static inline dof_answer *dof_answer_h(long status, const char *body, ...)
{
    if (dof.n_answers == DOF_MAX)
        fail_msg("more than %d answers", DOF_MAX);
    dof_answer *a = &dof.answers[dof.n_answers++];
    memset(a, 0, sizeof(*a));
    a->status = status;
    a->body = strdup(body ? body : "");
    va_list ap;
    va_start(ap, body);
    for (const char *name; (name = va_arg(ap, const char *)) && a->n_headers < 6;) {
        a->headers[a->n_headers][0] = name;
        a->headers[a->n_headers++][1] = va_arg(ap, const char *);
    }
    va_end(ap);
    return a;
}

static inline void dof_reply(long status, const char *body)
{
    dof_answer_h(status, body, (const char *)NULL);
}

static inline void dof_transport_failure(const char *message)
{
    dof_answer *a = dof_answer_h(0, "", (const char *)NULL);
    a->transport_failure = true;
    snprintf(a->failure, sizeof(a->failure), "%s", message);
}

/* The body of a file under tests/fixtures/digitalocean/ (static; the next call overwrites). */
static inline const char *dof_fixture(const char *name)
{
    static char *text;
    char rel[256];
    free(text);
    snprintf(rel, sizeof(rel), "tests/fixtures/digitalocean/%s", name);
    text = tu_read_file(tu_source_path(rel), NULL);
    if (!text)
        fail_msg("cannot read %s", rel);
    return text;
}

static inline do_ctx *dof_ctx(void)
{
    do_ctx *ctx = calloc(1, sizeof(*ctx));
    do_ctx_init(ctx, &dof.host);
    return ctx;
}

static inline void dof_ctx_free(do_ctx *ctx)
{
    do_ctx_fini(ctx);
    free(ctx);
}

/* The request body of request i, parsed (json_decref). */
static inline json_t *dof_body(size_t i)
{
    if (i >= dof.n_log || !dof.log[i].body)
        fail_msg("request %zu has no body", i);
    json_t *j = json_loads(dof.log[i].body, 0, NULL);
    if (!j)
        fail_msg("request %zu's body is not JSON: %s", i, dof.log[i].body);
    return j;
}

/* The path and query of request i (after the base URL). */
static inline const char *dof_path(size_t i)
{
    if (i >= dof.n_log)
        fail_msg("there is no request %zu (%zu made)", i, dof.n_log);
    const char *u = dof.log[i].url;
    const char *p = strstr(u, "://");
    p = p ? strchr(p + 3, '/') : u;
    return p ? p : "";
}

static inline void dof_expect_request(size_t i, const char *method, const char *path)
{
    assert_string_equal(dof.log[i].method, method);
    assert_string_equal(dof_path(i), path);
}

/* Collecting offers, notes and nodes. */
typedef struct dof_offers {
    sp_offer_sink sink;
    sp_offer items[64];
    char strings[64][4][64];
    size_t n;
    char notes[8][SP_ERR_MSG_MAX];
    size_t n_notes;
} dof_offers;

static inline int dof_on_offer(sp_offer_sink *sink, const sp_offer *o)
{
    dof_offers *c = sink->opaque;
    if (c->n == 64)
        return SP_OK;
    c->items[c->n] = *o;
    const char *src[4] = {o->region, o->instance_type, o->accelerator, o->arch};
    for (int k = 0; k < 4; k++)
        snprintf(c->strings[c->n][k], 64, "%s", src[k] ? src[k] : "");
    c->items[c->n].region = c->strings[c->n][0];
    c->items[c->n].instance_type = c->strings[c->n][1];
    c->items[c->n].accelerator = c->strings[c->n][2];
    c->items[c->n].arch = c->strings[c->n][3];
    c->n++;
    return SP_OK;
}

static inline int dof_on_note(sp_offer_sink *sink, const char *m)
{
    dof_offers *c = sink->opaque;
    if (c->n_notes < 8)
        snprintf(c->notes[c->n_notes++], SP_ERR_MSG_MAX, "%s", m);
    return SP_OK;
}

static inline void dof_offers_init(dof_offers *c)
{
    memset(c, 0, sizeof(*c));
    c->sink = (sp_offer_sink){sizeof(c->sink), c, dof_on_offer, dof_on_note};
}

typedef struct dof_nodes {
    sp_node_sink sink;
    sp_node items[32];
    size_t n;
} dof_nodes;

static inline int dof_on_node(sp_node_sink *sink, const sp_node *n)
{
    dof_nodes *c = sink->opaque;
    if (c->n < 32)
        c->items[c->n++] = *n;
    return SP_OK;
}

static inline void dof_nodes_init(dof_nodes *c)
{
    memset(c, 0, sizeof(*c));
    c->sink = (sp_node_sink){sizeof(c->sink), c, dof_on_node};
}

/* Asserts that no error message, log line or request URL holds the token. */
static inline void dof_assert_secret_kept(const sp_err *err, const char *token)
{
    if (strstr(err->msg, token))
        fail_msg("the token is in an error message: %s", err->msg);
    for (size_t i = 0; i < dof.n_logged; i++)
        if (strstr(dof.logged[i], token))
            fail_msg("the token is in a log line: %s", dof.logged[i]);
    for (size_t i = 0; i < dof.n_log; i++)
        if (strstr(dof.log[i].url, token) || (dof.log[i].body && strstr(dof.log[i].body, token)))
            fail_msg("the token is in request %zu's URL or body", i);
}

#endif
