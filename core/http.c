/*
 * The host's HTTP service, on libcurl. TLS peer and host verification stay on (libcurl's
 * defaults; nothing here turns them off). Bodies and headers are never logged: they carry
 * credentials.
 *
 * libcurl is loaded on the first request, not linked: loading it and the thirty libraries it
 * needs costs about 5 ms, most of the run time of an offline command such as `skypool offers`,
 * which never makes a request.
 */
#include "registry.h"
#include "util.h"

#include <ctype.h>
#include <curl/curl.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define BODY_MAX (64u << 20)
#define HEADERS_MAX 128
#define DEFAULT_TIMEOUT_MS 30000

typedef struct exchange {
    sp_buf body;
    sp_http_header headers[HEADERS_MAX];
    size_t n_headers;
    bool too_big;
} exchange;

/* The libcurl functions we use, resolved from libcurl.so.4 at first use. */
static struct {
    CURLcode (*global_init)(long flags);
    CURL *(*easy_init)(void);
    CURLcode (*setopt)(CURL *c, CURLoption opt, ...);
    CURLcode (*perform)(CURL *c);
    CURLcode (*getinfo)(CURL *c, CURLINFO info, ...);
    const char *(*strerror)(CURLcode rc);
    void (*cleanup)(CURL *c);
    void (*reset)(CURL *c);
    struct curl_slist *(*slist_append)(struct curl_slist *l, const char *s);
    void (*slist_free_all)(struct curl_slist *l);
} lc;

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static char curl_load_error[256];
/* One handle per thread, kept between requests: its connections are reused (keep-alive,
 * TLS sessions), which saves a handshake per call to the same endpoint. */
static pthread_key_t handle_key;
static bool handle_key_ready;

static bool resolve(void *dl, void *fn, const char *name)
{
    void *sym = dlsym(dl, name);
    memcpy(fn, &sym, sizeof(sym));
    return sym != NULL;
}

static void free_handle(void *handle)
{
    if (handle && lc.cleanup)
        lc.cleanup(handle);
}

static void curl_init_once(void)
{
    if (pthread_key_create(&handle_key, free_handle) != 0) {
        snprintf(curl_load_error, sizeof(curl_load_error), "no thread-local storage left");
        return;
    }
    handle_key_ready = true;
    void *dl = dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);
    if (!dl) {
        snprintf(curl_load_error, sizeof(curl_load_error),
                 "cannot load libcurl.so.4 (%s); install libcurl4", dlerror());
        return;
    }
    bool ok = resolve(dl, &lc.global_init, "curl_global_init") &&
              resolve(dl, &lc.easy_init, "curl_easy_init") &&
              resolve(dl, &lc.setopt, "curl_easy_setopt") &&
              resolve(dl, &lc.perform, "curl_easy_perform") &&
              resolve(dl, &lc.getinfo, "curl_easy_getinfo") &&
              resolve(dl, &lc.strerror, "curl_easy_strerror") &&
              resolve(dl, &lc.cleanup, "curl_easy_cleanup") &&
              resolve(dl, &lc.reset, "curl_easy_reset") &&
              resolve(dl, &lc.slist_append, "curl_slist_append") &&
              resolve(dl, &lc.slist_free_all, "curl_slist_free_all");
    if (!ok)
        snprintf(curl_load_error, sizeof(curl_load_error), "libcurl.so.4 lacks a function we need");
    else if (lc.global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
        snprintf(curl_load_error, sizeof(curl_load_error), "libcurl failed to start");
}

static size_t on_body(char *data, size_t size, size_t nmemb, void *userp)
{
    exchange *x = userp;
    size_t n = size * nmemb;
    if (x->body.len + n > BODY_MAX) {
        x->too_big = true;
        return 0;
    }
    sp_buf_append(&x->body, data, n);
    return x->body.oom ? 0 : n;
}

/* Keeps "name: value" header lines, names lower-cased; a new status line starts afresh. */
static size_t on_header(char *data, size_t size, size_t nmemb, void *userp)
{
    exchange *x = userp;
    size_t n = size * nmemb;
    if (n >= 5 && strncmp(data, "HTTP/", 5) == 0) {
        for (size_t i = 0; i < x->n_headers; i++) {
            free((char *)x->headers[i].name);
            free((char *)x->headers[i].value);
        }
        x->n_headers = 0;
        return n;
    }
    const char *colon = memchr(data, ':', n);
    if (!colon || x->n_headers == HEADERS_MAX)
        return n;
    const char *v = colon + 1, *end = data + n;
    while (v < end && isspace((unsigned char)*v))
        v++;
    while (end > v && isspace((unsigned char)end[-1]))
        end--;
    char *name = sp_strndup(data, (size_t)(colon - data));
    char *value = sp_strndup(v, (size_t)(end - v));
    if (!name || !value) {
        free(name);
        free(value);
        return 0;
    }
    for (char *p = name; *p; p++)
        *p = (char)tolower((unsigned char)*p);
    x->headers[x->n_headers++] = (sp_http_header){name, value};
    return n;
}

static struct curl_slist *request_headers(const sp_http_request *req, bool *oom)
{
    struct curl_slist *list = NULL;
    for (size_t i = 0; i < req->n_headers; i++) {
        sp_buf line;
        sp_buf_init(&line);
        sp_buf_printf(&line, "%s: %s", req->headers[i].name, req->headers[i].value);
        struct curl_slist *next = line.oom ? NULL : lc.slist_append(list, line.data);
        sp_buf_free(&line);
        if (!next) {
            *oom = true;
            break;
        }
        list = next;
    }
    /* libcurl adds "Expect: 100-continue" to large POSTs; servers and fakes differ on it. */
    struct curl_slist *next = lc.slist_append(list, "Expect:");
    if (next)
        list = next;
    return list;
}

static void setup(CURL *c, const sp_http_request *req, exchange *x, struct curl_slist *hdrs)
{
    lc.setopt(c, CURLOPT_URL, req->url);
    lc.setopt(c, CURLOPT_CUSTOMREQUEST, req->method);
    if (req->body || strcmp(req->method, "POST") == 0 || strcmp(req->method, "PUT") == 0) {
        lc.setopt(c, CURLOPT_POSTFIELDS, req->body ? req->body : "");
        lc.setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)req->body_len);
    }
    if (strcmp(req->method, "HEAD") == 0)
        lc.setopt(c, CURLOPT_NOBODY, 1L);
    /* A reused connection that dies before the answer makes libcurl send the request again. */
    bool no_replay = req->struct_size >= offsetof(sp_http_request, flags) + sizeof(req->flags) &&
                     (req->flags & SP_HTTP_NO_REPLAY);
    lc.setopt(c, CURLOPT_FRESH_CONNECT, no_replay ? 1L : 0L);
    lc.setopt(c, CURLOPT_HTTPHEADER, hdrs);
    lc.setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    lc.setopt(c, CURLOPT_WRITEDATA, x);
    lc.setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    lc.setopt(c, CURLOPT_HEADERDATA, x);
    lc.setopt(c, CURLOPT_TIMEOUT_MS,
                     (long)(req->timeout_ms ? req->timeout_ms : DEFAULT_TIMEOUT_MS));
    lc.setopt(c, CURLOPT_NOSIGNAL, 1L);
    lc.setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    lc.setopt(c, CURLOPT_USERAGENT, "skypool/" SKYPOOL_VERSION);
    /* Another set of trusted CAs (a company's TLS proxy): more to trust, never less checking. */
    const char *ca = getenv("SSL_CERT_FILE");
    if (!ca || !*ca)
        ca = getenv("CURL_CA_BUNDLE");
    if (ca && *ca)
        lc.setopt(c, CURLOPT_CAINFO, ca);
}

static void exchange_free(exchange *x)
{
    sp_buf_free(&x->body);
    for (size_t i = 0; i < x->n_headers; i++) {
        free((char *)x->headers[i].name);
        free((char *)x->headers[i].value);
    }
}

static int hand_over(exchange *x, CURL *c, sp_http_response *resp, sp_err *err)
{
    size_t len = x->body.len;
    char *body = sp_buf_take(&x->body);
    sp_http_header *h = x->n_headers ? malloc(x->n_headers * sizeof(*h)) : NULL;
    if (!body || (x->n_headers && !h)) {
        free(body);
        free(h);
        exchange_free(x);
        return sp_err_set(err, SP_E_NOMEM, "out of memory reading an HTTP response");
    }
    memcpy(h, x->headers, x->n_headers * sizeof(*h));
    lc.getinfo(c, CURLINFO_RESPONSE_CODE, &resp->status);
    resp->body = body;
    resp->body_len = len;
    resp->headers = h;
    resp->n_headers = x->n_headers;
    return SP_OK;
}

/* The URL without its query, for messages: queries can carry presigned credentials. */
static void url_for_message(const char *url, char *buf, size_t size)
{
    sp_strlcpy(buf, url, size);
    char *q = strpbrk(buf, "?#");
    if (q)
        *q = '\0';
}

int sp_host_http(const sp_host *host, const sp_http_request *req, sp_http_response *resp,
                 sp_err *err)
{
    (void)host;
    memset(resp, 0, sizeof(*resp));
    resp->struct_size = sizeof(*resp);
    pthread_once(&curl_once, curl_init_once);
    if (curl_load_error[0])
        return sp_err_set(err, SP_E_NETWORK, "%s", curl_load_error);
    CURL *c = pthread_getspecific(handle_key);
    if (c)
        lc.reset(c); /* options go, the connection cache stays */
    else if (!(c = lc.easy_init()) || pthread_setspecific(handle_key, c) != 0) {
        if (c)
            lc.cleanup(c);
        return sp_err_set(err, SP_E_NOMEM, "libcurl could not make a handle");
    }
    exchange x;
    memset(&x, 0, sizeof(x));
    bool oom = false;
    struct curl_slist *hdrs = request_headers(req, &oom);
    setup(c, req, &x, hdrs);
    CURLcode rc = oom ? CURLE_OUT_OF_MEMORY : lc.perform(c);
    int status = SP_OK;
    if (rc != CURLE_OK) {
        char where[512];
        url_for_message(req->url, where, sizeof(where));
        status = sp_err_set(err, SP_E_NETWORK, "%s %s: %s", req->method, where,
                            x.too_big ? "response larger than 64 MiB" : lc.strerror(rc));
        exchange_free(&x);
    } else
        status = hand_over(&x, c, resp, err);
    lc.slist_free_all(hdrs);
    return status;
}

void sp_host_http_free(const sp_host *host, sp_http_response *resp)
{
    (void)host;
    if (!resp)
        return;
    free(resp->body);
    for (size_t i = 0; i < resp->n_headers; i++) {
        free((char *)resp->headers[i].name);
        free((char *)resp->headers[i].value);
    }
    free(resp->headers);
    memset(resp, 0, sizeof(*resp));
}

void sp_http_thread_done(void)
{
    if (handle_key_ready && lc.cleanup) {
        void *c = pthread_getspecific(handle_key);
        if (c) {
            lc.cleanup(c);
            pthread_setspecific(handle_key, NULL);
        }
    }
}
