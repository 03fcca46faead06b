/*
 * The DigitalOcean API v2 client (internal to the provider): JSON over the host's HTTP service,
 * bearer token, rate limits, bounded retries with full-jitter backoff, and errors classified
 * into sp_status with messages that say what failed, where, and what to do.
 */
#ifndef SKYPOOL_DO_API_H
#define SKYPOOL_DO_API_H

#include "doconfig.h"

#include <jansson.h>
#include <pthread.h>
#include <skypool/provider.h>
#include <stdbool.h>
#include <stdint.h>

#define DO_DEFAULT_URL "https://api.digitalocean.com"
#define DO_PER_PAGE_MAX 200

typedef struct do_key_entry {
    char fingerprint[64];
    long long id;
} do_key_entry;

typedef struct do_ctx {
    const sp_host *host;
    do_config cfg;
    int cfg_status;            /* do_config_load's result; its message in cfg_err */
    sp_err cfg_err;
    char base_url[512];        /* DIGITALOCEAN_API_URL without trailing '/' */
    unsigned max_attempts;     /* DIGITALOCEAN_MAX_ATTEMPTS (default 5): tries per request */
    unsigned backoff_base_ms;  /* first retry waits up to this; doubles, capped */
    unsigned backoff_cap_ms;
    unsigned max_wait_s;       /* the longest a retry-after or a rate-limit reset is waited */
    unsigned per_page;         /* page size of listings (SKYPOOL_DO_PER_PAGE; tests page early) */
    pthread_mutex_t lock;      /* guards pause_until_ms and keys */
    int64_t pause_until_ms;    /* rate limit nearly spent: no request before (Unix ms) */
    do_key_entry keys[16];     /* SSH keys found or imported by this process */
    size_t n_keys;
    pthread_mutex_t key_lock;  /* one key lookup or import at a time */
} do_ctx;

/* Sets up a context from the host's settings; missing credentials are not an error here
 * (offers from the catalog need none). */
int do_ctx_init(do_ctx *ctx, const sp_host *host);
void do_ctx_fini(do_ctx *ctx);

/* What an API error said. */
typedef struct do_error {
    long status;               /* HTTP status; 0 for a transport failure */
    char id[64];               /* "unprocessable_entity" */
    char message[384];
} do_error;

typedef struct do_request {
    const char *method;        /* "GET", "POST", "DELETE" */
    const char *path;          /* "/v2/droplets" */
    const char *query;         /* already encoded, without '?'; NULL for none */
    const json_t *body;        /* sent as JSON; NULL for none */
    const char *where;         /* for messages: "in nyc2 (gpu-h100x1-80gb)"; NULL for none */
    bool once;                 /* not idempotent (create): 5xx and transport failures are not
                                  retried here, since the first try may have taken effect */
} do_request;

/*
 * One API request, retried as the API allows: 429 after retry-after (or the rate-limit reset),
 * 5xx and transport failures with full-jitter backoff, at most ctx->max_attempts tries. Waits
 * first when an earlier answer said the rate limit is nearly spent.
 * On success *out holds the answer's JSON object (json_decref), or NULL for an empty answer.
 * On failure: the sp_status (401 SP_E_AUTH, 403 SP_E_PERM, 404 SP_E_NOTFOUND, 422 about
 * capacity SP_E_CAPACITY, 422 about the droplet limit SP_E_QUOTA, other 4xx SP_E_INVALID,
 * 429 SP_E_THROTTLED, 5xx and transport SP_E_NETWORK, an answer that is not JSON
 * SP_E_PROTOCOL), *e (if given) what the API said, and err a message that never holds the token.
 */
int do_api(do_ctx *ctx, const do_request *r, json_t **out, do_error *e, sp_err *err);

/* Whether text contains word, ignoring case. */
bool do_contains(const char *text, const char *word);

/* Classifies a 422's message: SP_E_CAPACITY, SP_E_QUOTA, or SP_E_INVALID. */
int do_classify_422(const char *message);

/* Calls fn for every item of a paginated listing: GET path?query&per_page=N&page=P, the items
 * in the answer's `key` array, following links.pages.next (or page numbers while meta.total
 * says more) until done. fn returning non-zero stops with that status. *total (if given)
 * gets meta.total of the first page, or -1. */
typedef int (*do_item_fn)(const json_t *item, void *arg);
int do_list(do_ctx *ctx, const char *path, const char *query, const char *key, const char *where,
            do_item_fn fn, void *arg, long long *total, sp_err *err);

/* meta.total of a listing, asked for with one item per page. */
int do_count(do_ctx *ctx, const char *path, const char *query, long long *total, sp_err *err);

/* Appends "name=value" (value percent-encoded) to a query string being built in buf. */
void do_query_add(char *buf, size_t size, const char *name, const char *value);

/* Replaces every occurrence of the token in msg with "***": messages from servers and
 * transports are never trusted to leave it out. */
void do_scrub(char *msg, const char *token);

/* A whole number setting from the host, within [lo, hi], else dflt. */
unsigned do_setting(const sp_host *host, const char *name, unsigned dflt, unsigned lo,
                    unsigned hi);

void do_sleep_ms(unsigned ms);

/* json helpers: a string member or "", an integer member or dflt. */
const char *do_str(const json_t *obj, const char *key);
long long do_int(const json_t *obj, const char *key, long long dflt);

#endif
