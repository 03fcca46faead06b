/*
 * EC2's Query API and Service Quotas' JSON 1.1 protocol over the host's HTTP service: encoding,
 * SigV4 signing, error parsing and classification, and retries with full-jitter backoff.
 */
#include "ec2.h"

#include <ctype.h>
#include <jansson.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define AWS_BODY_MAX (256u << 10) /* request bodies we build; responses are the host's limit */

/* ---- Parameters ---------------------------------------------------------------------------- */

void aws_params_init(aws_params *p)
{
    memset(p, 0, sizeof(*p));
}

void aws_params_free(aws_params *p)
{
    for (size_t i = 0; i < p->n; i++) {
        free(p->keys[i]);
        free(p->values[i]);
    }
    free(p->keys);
    free(p->values);
    aws_params_init(p);
}

static char *dup_str(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}

void aws_params_add(aws_params *p, const char *key, const char *value)
{
    if (p->oom)
        return;
    if (p->n == p->cap) {
        size_t cap = p->cap ? p->cap * 2 : 16;
        char **k = realloc(p->keys, cap * sizeof(char *));
        if (k)
            p->keys = k;
        char **v = k ? realloc(p->values, cap * sizeof(char *)) : NULL;
        if (!k || !v) {
            p->oom = true;
            return;
        }
        p->values = v;
        p->cap = cap;
    }
    p->keys[p->n] = dup_str(key);
    p->values[p->n] = dup_str(value);
    if (!p->keys[p->n] || !p->values[p->n]) {
        free(p->keys[p->n]);
        free(p->values[p->n]);
        p->oom = true;
        return;
    }
    p->n++;
}

void aws_params_addf(aws_params *p, const char *key, const char *fmt, ...)
{
    char value[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(value, sizeof(value), fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof(value))
        p->oom = true;
    else
        aws_params_add(p, key, value);
}

void aws_params_filter(aws_params *p, unsigned n, const char *name, const char *const *values,
                       size_t n_values)
{
    char key[64];
    snprintf(key, sizeof(key), "Filter.%u.Name", n);
    aws_params_add(p, key, name);
    for (size_t i = 0; i < n_values; i++) {
        snprintf(key, sizeof(key), "Filter.%u.Value.%zu", n, i + 1);
        aws_params_add(p, key, values[i]);
    }
}

/* Appends s percent-encoded: all but RFC 3986's unreserved characters, as botocore's form
 * encoder does. False when out is full. */
static bool form_encode(char *out, size_t size, size_t *len, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        if (*len + 4 > size)
            return false;
        if (isalnum(*c) || *c == '-' || *c == '_' || *c == '.' || *c == '~')
            out[(*len)++] = (char)*c;
        else {
            out[(*len)++] = '%';
            out[(*len)++] = hex[*c >> 4];
            out[(*len)++] = hex[*c & 15];
        }
    }
    out[*len] = '\0';
    return true;
}

static bool append_char(char *out, size_t size, size_t *len, char ch)
{
    if (*len + 2 > size)
        return false;
    out[(*len)++] = ch;
    out[*len] = '\0';
    return true;
}

char *aws_params_encode(const aws_params *p)
{
    if (p->oom)
        return NULL;
    char *out = malloc(AWS_BODY_MAX);
    size_t len = 0;
    if (!out)
        return NULL;
    out[0] = '\0';
    for (size_t i = 0; i < p->n; i++) {
        bool ok = (i == 0 || append_char(out, AWS_BODY_MAX, &len, '&')) &&
                  form_encode(out, AWS_BODY_MAX, &len, p->keys[i]) &&
                  append_char(out, AWS_BODY_MAX, &len, '=') &&
                  form_encode(out, AWS_BODY_MAX, &len, p->values[i]);
        if (!ok) {
            free(out);
            return NULL;
        }
    }
    return out;
}

unsigned aws_page(const aws_ctx *ctx, unsigned max)
{
    return ctx->page_size && ctx->page_size < max ? ctx->page_size : max;
}

/* ---- Errors -------------------------------------------------------------------------------- */

static bool code_in(const char *code, const char *const *set)
{
    for (; *set; set++)
        if (strcmp(code, *set) == 0)
            return true;
    return false;
}

aws_err_class aws_classify(const char *code, long http_status)
{
    static const char *const capacity[] = {
        "InsufficientInstanceCapacity", "InsufficientCapacity", "InsufficientHostCapacity",
        "UnfulfillableCapacity", "Unsupported", "InsufficientCapacityOnHost",
        "SpotMaxPriceTooLow", NULL};
    static const char *const quota[] = {"VcpuLimitExceeded", "InstanceLimitExceeded",
                                        "MaxSpotInstanceCountExceeded", NULL};
    static const char *const throttle[] = {
        "RequestLimitExceeded", "Throttling", "ThrottlingException", "TooManyRequestsException",
        "RequestThrottled", "RequestThrottledException", "SlowDown", NULL};
    static const char *const auth[] = {
        "AuthFailure", "UnauthorizedOperation", "InvalidClientTokenId", "SignatureDoesNotMatch",
        "AccessDenied", "AccessDeniedException", "ExpiredToken", "ExpiredTokenException",
        "MissingAuthenticationToken", "MissingAuthenticationTokenException",
        "UnrecognizedClientException", "IncompleteSignature", "OptInRequired",
        "AuthFailure.ServiceLinkedRoleCreationNotPermitted", NULL};
    size_t n = strlen(code);
    if (code_in(code, capacity))
        return AWS_ERR_CAPACITY;
    if (code_in(code, quota))
        return AWS_ERR_QUOTA;
    if (code_in(code, throttle) || http_status == 429)
        return AWS_ERR_THROTTLE;
    if (code_in(code, auth) || http_status == 401 || (http_status == 403 && !*code))
        return AWS_ERR_AUTH;
    if ((n > 8 && strcmp(code + n - 8, "NotFound") == 0) ||
        strcmp(code, "NoSuchResourceException") == 0)
        return AWS_ERR_NOTFOUND;
    if (http_status >= 500 || strcmp(code, "InternalError") == 0 ||
        strcmp(code, "Unavailable") == 0 || strcmp(code, "ServiceUnavailable") == 0)
        return AWS_ERR_SERVER;
    return AWS_ERR_CLIENT;
}

int aws_class_status(aws_err_class cls)
{
    switch (cls) {
    case AWS_ERR_NONE: return SP_OK;
    case AWS_ERR_CAPACITY: return SP_E_CAPACITY;
    case AWS_ERR_QUOTA: return SP_E_QUOTA;
    case AWS_ERR_THROTTLE: return SP_E_THROTTLED;
    case AWS_ERR_AUTH: return SP_E_AUTH;
    case AWS_ERR_NOTFOUND: return SP_E_NOTFOUND;
    case AWS_ERR_SERVER: return SP_E_NETWORK;
    case AWS_ERR_CLIENT: break;
    }
    return SP_E_INVALID;
}

int aws_fail(sp_err *err, int status, const char *service, const char *action,
             const char *region, const aws_error *e)
{
    return sp_err_set(err, status, "%s %s in %s: %s%s%s", service, action, region,
                      e->code[0] ? e->code : "HTTP error", e->message[0] ? ": " : "",
                      e->message);
}

/* ---- XML ----------------------------------------------------------------------------------- */

aws_xml_node *aws_xml_child(const aws_xml_node *parent, const char *name)
{
    for (aws_xml_node *c = aws_xml_first(parent); c; c = aws_xml_next(c))
        if (strcmp(aws_xml_name(c), name) == 0)
            return c;
    return NULL;
}

aws_xml_node *aws_xml_path(const aws_xml_node *parent, const char *path)
{
    char part[128];
    const aws_xml_node *node = parent;
    while (node && *path) {
        const char *slash = strchr(path, '/');
        size_t n = slash ? (size_t)(slash - path) : strlen(path);
        if (n >= sizeof(part))
            return NULL;
        memcpy(part, path, n);
        part[n] = '\0';
        node = aws_xml_child(node, part);
        path += n + (slash != NULL);
    }
    return (aws_xml_node *)node;
}

const char *aws_xml_text(const aws_xml_node *parent, const char *path, char *buf, size_t size)
{
    snprintf(buf, size, "%s", aws_xml_content(aws_xml_path(parent, path)));
    return buf;
}

unsigned long long aws_xml_ull(const aws_xml_node *parent, const char *path)
{
    char buf[32];
    return strtoull(aws_xml_text(parent, path, buf, sizeof(buf)), NULL, 10);
}

aws_xml_node *aws_xml_item(const aws_xml_node *set, const aws_xml_node *prev)
{
    aws_xml_node *c = prev ? aws_xml_next(prev) : aws_xml_first(set);
    for (; c; c = aws_xml_next(c))
        if (strcmp(aws_xml_name(c), "item") == 0)
            return c;
    return NULL;
}

/* <Response><Errors><Error><Code/><Message/></Error></Errors></Response> */
static void parse_xml_error(const char *body, size_t len, long status, aws_error *e)
{
    memset(e, 0, sizeof(*e));
    e->http_status = status;
    aws_xml_doc *doc = body && len ? aws_xml_parse(body, len) : NULL;
    aws_xml_node *root = aws_xml_root(doc);
    aws_xml_node *error = root ? aws_xml_path(root, "Errors/Error") : NULL;
    if (!error && root)
        error = aws_xml_child(root, "Error");
    if (error) {
        aws_xml_text(error, "Code", e->code, sizeof(e->code));
        aws_xml_text(error, "Message", e->message, sizeof(e->message));
    }
    aws_xml_free(doc);
    if (!e->code[0] && status == 503)
        snprintf(e->code, sizeof(e->code), "ServiceUnavailable");
    e->cls = aws_classify(e->code, status);
}

/* {"__type": "...#NoSuchResourceException", "message": "..."} */
static void parse_json_error(const char *body, long status, aws_error *e)
{
    memset(e, 0, sizeof(*e));
    e->http_status = status;
    json_t *j = body ? json_loads(body, 0, NULL) : NULL;
    const char *type = json_string_value(json_object_get(j, "__type"));
    const char *msg = json_string_value(json_object_get(j, "message"));
    if (!msg)
        msg = json_string_value(json_object_get(j, "Message"));
    if (type) {
        const char *hash = strrchr(type, '#');
        snprintf(e->code, sizeof(e->code), "%s", hash ? hash + 1 : type);
    }
    if (msg)
        snprintf(e->message, sizeof(e->message), "%s", msg);
    json_decref(j);
    if (!e->code[0] && status == 503)
        snprintf(e->code, sizeof(e->code), "ServiceUnavailable");
    e->cls = aws_classify(e->code, status);
}

/* ---- Sending, with retries ----------------------------------------------------------------- */

typedef struct call {
    aws_ctx *ctx;
    const char *service;       /* signing name */
    const char *endpoint_id;   /* for aws_endpoint */
    const char *region;
    const char *action;        /* for messages */
    const char *content_type;
    const char *target;        /* X-Amz-Target, JSON 1.1 only */
    const char *body;
    bool json;
    bool retry_not_found;
} call;

static unsigned jitter_ms(unsigned attempt, const aws_ctx *ctx)
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

static void sleep_ms(unsigned ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0)
        ;
}

/* One signed exchange. Returns SP_OK with resp filled, or a transport failure. */
static int send_once(const call *c, const char *url, sp_http_response *resp, sp_err *err)
{
    const aws_ctx *ctx = c->ctx;
    sp_http_header hdrs[3] = {{"Content-Type", c->content_type}};
    size_t n = 1;
    if (c->target)
        hdrs[n++] = (sp_http_header){"X-Amz-Target", c->target};
    aws_request req = {"POST", url, hdrs, n, c->body, strlen(c->body)};
    aws_signing how = {.region = c->region, .service = c->service, .now = time(NULL),
                       .normalize_path = true};
    aws_signed sig;
    memset(&sig, 0, sizeof(sig));
    int rc = aws_sigv4_sign(&req, &ctx->cfg.creds, &how, &sig, err);
    if (rc) {
        aws_signed_free(&sig);
        return rc;
    }
    sp_http_header all[8];
    size_t total = 0;
    for (size_t i = 0; i < n; i++)
        all[total++] = hdrs[i];
    for (size_t i = 0; i < sig.n_add && total < 8; i++)
        all[total++] = sig.add[i];
    sp_http_request hr = {.struct_size = sizeof(hr), .method = "POST", .url = url,
                          .headers = all, .n_headers = total, .body = c->body,
                          .body_len = strlen(c->body)};
    rc = ctx->host->http(ctx->host, &hr, resp, err);
    aws_signed_free(&sig);
    return rc;
}

static bool retryable(const call *c, const aws_error *e)
{
    return e->cls == AWS_ERR_THROTTLE || e->cls == AWS_ERR_SERVER ||
           (c->retry_not_found && e->cls == AWS_ERR_NOTFOUND);
}

/* Sends with retries; on success hands the response body over (caller frees). */
static int perform(const call *c, char **body, size_t *body_len, aws_error *e, sp_err *err)
{
    aws_ctx *ctx = c->ctx;
    char url[1024];
    if (ctx->cfg_status != SP_OK || !ctx->cfg.creds.access_key_id[0])
        return sp_err_set(err, SP_E_AUTH, "%s", ctx->cfg_err.msg[0] ? ctx->cfg_err.msg
                                                                    : ctx->cfg.why_no_creds);
    int rc = aws_endpoint(ctx->host, c->endpoint_id, c->region, url, sizeof(url) - 1, err);
    if (rc)
        return rc;
    if (url[strlen(url) - 1] != '/')
        strcat(url, "/");
    for (unsigned attempt = 0;; attempt++) {
        sp_http_response resp;
        rc = send_once(c, url, &resp, err);
        bool last = attempt + 1 >= ctx->max_attempts;
        if (rc == SP_E_NETWORK && !last) {
            sleep_ms(jitter_ms(attempt, ctx));
            continue;
        }
        if (rc)
            return rc;
        if (resp.status >= 200 && resp.status < 300) {
            *body = resp.body;
            *body_len = resp.body_len;
            resp.body = NULL;
            ctx->host->http_response_free(ctx->host, &resp);
            memset(e, 0, sizeof(*e));
            return SP_OK;
        }
        if (c->json)
            parse_json_error(resp.body, resp.status, e);
        else
            parse_xml_error(resp.body, resp.body_len, resp.status, e);
        ctx->host->http_response_free(ctx->host, &resp);
        if (e->cls == AWS_ERR_AUTH) /* which credentials were refused, never what they are */
            return sp_err_set(err, SP_E_AUTH, "%s %s in %s: %s: %s (credentials from %s)",
                              c->service, c->action, c->region, e->code, e->message,
                              ctx->cfg.creds.source);
        if (!retryable(c, e) || last)
            return aws_fail(err, aws_class_status(e->cls), c->service, c->action, c->region, e);
        sleep_ms(jitter_ms(attempt, ctx));
    }
}

int aws_ec2_call(aws_ctx *ctx, const char *region, const char *action, aws_params *params,
                 bool retry_not_found, aws_xml_doc **doc, aws_error *e, sp_err *err)
{
    aws_error local;
    if (!e)
        e = &local;
    memset(e, 0, sizeof(*e));
    *doc = NULL;
    aws_params full;
    aws_params_init(&full);
    aws_params_add(&full, "Action", action);
    aws_params_add(&full, "Version", AWS_EC2_VERSION);
    for (size_t i = 0; params && i < params->n; i++)
        aws_params_add(&full, params->keys[i], params->values[i]);
    char *form = aws_params_encode(&full);
    aws_params_free(&full);
    if (!form || (params && params->oom)) {
        free(form);
        return sp_err_set(err, SP_E_NOMEM, "ec2 %s: request too large or out of memory", action);
    }
    call c = {ctx, "ec2", "ec2", region, action,
              "application/x-www-form-urlencoded; charset=utf-8", NULL, form, false,
              retry_not_found};
    char *body = NULL;
    size_t len = 0;
    int rc = perform(&c, &body, &len, e, err);
    free(form);
    if (rc)
        return rc;
    *doc = aws_xml_parse(body, len);
    free(body);
    if (!*doc)
        return sp_err_set(err, SP_E_PROTOCOL, "ec2 %s in %s: the answer is not XML", action,
                          region);
    return SP_OK;
}

int aws_json_call(aws_ctx *ctx, const char *service, const char *region, const char *target,
                  const char *json_body, char **body, aws_error *e, sp_err *err)
{
    aws_error local;
    if (!e)
        e = &local;
    memset(e, 0, sizeof(*e));
    const char *action = strrchr(target, '.') ? strrchr(target, '.') + 1 : target;
    call c = {ctx, service, service, region, action, "application/x-amz-json-1.1", target,
              json_body, true, false};
    size_t len;
    return perform(&c, body, &len, e, err);
}
