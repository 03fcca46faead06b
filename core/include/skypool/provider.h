/*
 * skypool provider plugin ABI.
 *
 * This is the only header a provider plugin includes, ours or a third party's.
 *
 * A plugin is a shared object that exports one symbol, SP_PROVIDER_ENTRY, of type
 * sp_provider_init_fn. The host passes in its services table (sp_host); the plugin passes out
 * its provider table (sp_provider) and an opaque context, or an error message.
 *
 * Versioning rules (they are the whole point of this file):
 *  - Both tables start with abi_major and struct_size.
 *  - A change of abi_major means an incompatible ABI: the host refuses such plugins.
 *  - Within one major, fields are only ever appended, each group marked with the minor version
 *    that added it. The host copies min(struct_size, sizeof) bytes of a plugin's table into a
 *    zeroed struct, so a field that an older plugin does not have reads as NULL = unsupported.
 *    A plugin must likewise check host->struct_size before using a field newer than 1.0.
 *  - Every struct that crosses the boundary carries struct_size for the same reason.
 *  - Status codes (sp_status) are append-only and never renumbered.
 *  - Plugins never link against host symbols: everything they need from the host is in sp_host.
 */
#ifndef SKYPOOL_PROVIDER_H
#define SKYPOOL_PROVIDER_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SP_PROVIDER_ABI_MAJOR 1
#define SP_PROVIDER_ABI_MINOR 2
#define SP_PROVIDER_ENTRY "sp_provider_init"

#if defined(__GNUC__)
#define SP_EXPORT __attribute__((visibility("default")))
#define SP_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define SP_EXPORT
#define SP_PRINTF(f, a)
#endif

/* Status codes. SP_OK is 0. Append only; never renumber, never remove. */
typedef enum sp_status {
    SP_OK = 0,
    SP_E_INVALID = 1,     /* bad input: a spec, a pool file, an argument */
    SP_E_NOMEM = 2,
    SP_E_IO = 3,          /* a file could not be read or written */
    SP_E_NOTFOUND = 4,    /* no such pool, provider, offer, node */
    SP_E_UNSUPPORTED = 5, /* the provider does not offer this operation or request */
    SP_E_ABI = 6,         /* a plugin of another ABI, or a malformed one */
    SP_E_PERM = 7,        /* unsafe permissions, or the cloud denied access */
    SP_E_AUTH = 8,        /* no usable credentials */
    SP_E_NETWORK = 9,     /* transport failure */
    SP_E_CAPACITY = 10,   /* the cloud has no capacity for this offer now */
    SP_E_QUOTA = 11,      /* a quota forbids the request */
    SP_E_THROTTLED = 12,  /* rate limited; retry later */
    SP_E_BUDGET = 13,     /* the request exceeds the pool's budget */
    SP_E_PROTOCOL = 14,   /* the peer answered something we cannot understand */
    SP_E_INTERNAL = 15,
    SP_E_CANCELLED = 16
} sp_status;

/*
 * The error convention, everywhere in skypool and across this ABI: a caller-owned sp_err.
 * A function that fails returns a non-zero sp_status and, when err is not NULL, stores the same
 * code and a message that says what failed, where, and what to do about it.
 */
#define SP_ERR_MSG_MAX 512
typedef struct sp_err {
    int code;
    char msg[SP_ERR_MSG_MAX];
} sp_err;

static inline SP_PRINTF(3, 0) int sp_err_vset(sp_err *err, int code, const char *fmt, va_list ap)
{
    if (err) {
        err->code = code;
        vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
    }
    return code;
}

static inline SP_PRINTF(3, 4) int sp_err_set(sp_err *err, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    sp_err_vset(err, code, fmt, ap);
    va_end(ap);
    return code;
}

/* ---- Offers ---------------------------------------------------------------------------- */

typedef enum sp_market {
    SP_MARKET_ON_DEMAND = 0,
    SP_MARKET_SPOT = 1
} sp_market;

typedef enum sp_form_factor {
    SP_FF_UNKNOWN = 0,
    SP_FF_PCIE = 1,
    SP_FF_SXM = 2, /* SXM2/4/5/6: the generation follows from the model */
    SP_FF_NVL = 3,
    SP_FF_OAM = 4, /* OCP accelerator module (AMD Instinct, Gaudi) */
    SP_FF_CHIP = 5 /* AWS Neuron devices: not a card */
} sp_form_factor;

#define SP_PRICE_UNKNOWN (-1.0)

/*
 * One way to buy accelerators: an instance type (or container size) in one place.
 * Strings are owned by whoever emits the offer and valid only during the sink call.
 */
typedef struct sp_offer {
    uint32_t struct_size;
    /* 1.0 */
    const char *provider;      /* set by the host */
    const char *region;        /* provider's region name; "" where the provider has none */
    const char *zone;          /* zone or zone ID; "" where the provider places by region only */
    const char *instance_type; /* instance type, droplet size slug, or container GPU string */
    const char *accelerator;   /* skypool model key, e.g. "H100-SXM", "A100-80GB", "Trainium2" */
    uint32_t accel_count;      /* devices per node (GPUs, or Neuron devices) */
    uint32_t accel_mem_mib;    /* memory per device */
    uint32_t vcpus;            /* 0 = unknown */
    uint32_t mem_mib;          /* host memory; 0 = unknown */
    double price_on_demand;    /* USD per hour per node; SP_PRICE_UNKNOWN where not sold so */
    double price_spot;         /* USD per hour per node; SP_PRICE_UNKNOWN where no spot */
    const char *arch;          /* "x86_64", "arm64" */
} sp_offer;

/* What the core asks a provider for: one accelerator term of a spec, already resolved. */
typedef struct sp_offer_query {
    uint32_t struct_size;
    /* 1.0 */
    const char *const *models; /* candidate model keys; n_models == 0 means any accelerator */
    size_t n_models;
    uint32_t count_min;        /* devices per node */
    uint32_t count_max;
    uint32_t mem_min_mib;      /* per device; 0 = no constraint */
    int exact;                 /* "!": no automatic upgrade to a bigger model */
    int want_spot;             /* 1: only offers with a spot price */
    const char *const *regions; /* allowed regions; n_regions == 0 means all */
    size_t n_regions;
} sp_offer_query;

/*
 * Where a provider sends offers and notes. A note explains, in a sentence a user can act on,
 * why the provider has nothing for (part of) the query: "DigitalOcean sells H100 droplets with
 * 1 or 8 GPUs, not 4". Both return SP_OK to continue, anything else to stop.
 */
typedef struct sp_offer_sink {
    uint32_t struct_size;
    /* 1.0 */
    void *opaque;
    int (*offer)(struct sp_offer_sink *sink, const sp_offer *offer);
    int (*note)(struct sp_offer_sink *sink, const char *message);
} sp_offer_sink;

/* ---- Quota and availability ------------------------------------------------------------ */

typedef struct sp_quota_query {
    uint32_t struct_size;
    /* 1.0 */
    const sp_offer *offer;     /* the offer to be launched */
    uint32_t nodes;            /* how many nodes of it */
    sp_market market;
} sp_quota_query;

typedef enum sp_verdict {
    SP_VERDICT_UNKNOWN = 0,
    SP_VERDICT_OK = 1,
    SP_VERDICT_SHORT = 2
} sp_verdict;

typedef struct sp_quota_report {
    uint32_t struct_size;
    /* 1.0 */
    char quota_name[128];      /* e.g. "Running On-Demand P instances" */
    char quota_code[32];       /* e.g. "L-417A185B"; "" where the provider has no codes */
    char unit[16];             /* "vCPU", "droplets", "GPUs" */
    double limit;
    double used;
    double needed;
    sp_verdict verdict;
    char fix[256];             /* what to ask for when short */
} sp_quota_report;

/* ---- Nodes ------------------------------------------------------------------------------ */

typedef enum sp_node_state {
    SP_NODE_UNKNOWN = 0,
    SP_NODE_PENDING = 1,
    SP_NODE_RUNNING = 2,
    SP_NODE_STOPPING = 3,
    SP_NODE_GONE = 4
} sp_node_state;

typedef struct sp_tag {
    const char *key;
    const char *value;
} sp_tag;

typedef struct sp_launch_request {
    uint32_t struct_size;
    /* 1.0 */
    const sp_offer *offer;
    sp_market market;
    const char *name;          /* node name */
    const char *client_token;  /* deterministic per (pool, node, attempt): retries never duplicate */
    const sp_tag *tags;
    size_t n_tags;
    const char *image;         /* NULL: the provider picks a GPU-ready image */
    const char *ssh_user;
    const char *ssh_public_key; /* OpenSSH public key line */
    const char *user_data;
} sp_launch_request;

typedef struct sp_node {
    uint32_t struct_size;
    /* 1.0 */
    char id[128];              /* provider's node id */
    char name[128];
    char region[64];
    char zone[64];
    char instance_type[64];
    char public_ip[64];
    char private_ip[64];
    sp_node_state state;
    sp_market market;
} sp_node;

typedef struct sp_node_filter {
    uint32_t struct_size;
    /* 1.0 */
    const sp_tag *tags;        /* nodes carrying all of these tags */
    size_t n_tags;
    const char *const *regions;
    size_t n_regions;
} sp_node_filter;

typedef struct sp_node_sink {
    uint32_t struct_size;
    /* 1.0 */
    void *opaque;
    int (*node)(struct sp_node_sink *sink, const sp_node *node);
} sp_node_sink;

/* How the host reaches a VM node to run the check: SSH with the system OpenSSH client. */
typedef struct sp_ssh_target {
    uint32_t struct_size;
    /* 1.0 */
    char host[256];
    uint16_t port;
    char user[64];
} sp_ssh_target;

/* A command run on a node by a container provider's own exec API. */
typedef struct sp_exec_request {
    uint32_t struct_size;
    /* 1.0 */
    const char *const *argv;   /* NULL-terminated */
    const unsigned char *stdin_data;
    size_t stdin_len;
    uint32_t timeout_ms;
} sp_exec_request;

typedef struct sp_exec_result {
    uint32_t struct_size;
    /* 1.0 */
    int exit_code;
    char *stdout_data;         /* allocated with host->alloc; the host frees it */
    size_t stdout_len;
} sp_exec_result;

/* ---- Host services: the host's table, passed in ------------------------------------------ */

typedef enum sp_log_level {
    SP_LOG_ERROR = 0,
    SP_LOG_WARN = 1,
    SP_LOG_INFO = 2,
    SP_LOG_DEBUG = 3
} sp_log_level;

typedef struct sp_http_header {
    const char *name;
    const char *value;
} sp_http_header;

typedef struct sp_http_request {
    uint32_t struct_size;
    /* 1.0 */
    const char *method;        /* "GET", "POST", ... */
    const char *url;
    const sp_http_header *headers;
    size_t n_headers;
    const void *body;
    size_t body_len;
    uint32_t timeout_ms;       /* 0: the host's default */
    /* 1.2 */
    uint32_t flags;            /* SP_HTTP_* */
} sp_http_request;

/* The request must never reach the server twice: the host sends it on a connection of its own,
 * since an HTTP client may silently resend a request whose reused connection died (a create
 * call on a cloud with no client token would make a second machine). */
#define SP_HTTP_NO_REPLAY (1u << 0)

typedef struct sp_http_response {
    uint32_t struct_size;
    /* 1.0 */
    long status;
    char *body;                /* NUL-terminated; release with host->http_response_free */
    size_t body_len;
    sp_http_header *headers;   /* lower-cased names */
    size_t n_headers;
} sp_http_response;

typedef struct sp_host sp_host;
struct sp_host {
    uint32_t abi_major;
    uint32_t struct_size;
    /* 1.0 */
    void *opaque;              /* the host's; plugins pass the table back, never this */
    void (*log)(const sp_host *host, sp_log_level level, const char *provider, const char *msg);
    /* A secret or setting by name (environment, or the host's secret store). NULL if unset.
     * Values are the host's; a plugin copies what it keeps. Never log them. */
    const char *(*getenv)(const sp_host *host, const char *name);
    /* Synchronous HTTP(S) with TLS verification on. Returns SP_OK when a response arrived,
     * whatever its status; a transport failure returns SP_E_NETWORK with err set. */
    int (*http)(const sp_host *host, const sp_http_request *req, sp_http_response *resp,
                sp_err *err);
    void (*http_response_free)(const sp_host *host, sp_http_response *resp);
    /* The provider's offer catalog: the live cache when fresh, else the bundled copy. Emits the
     * rows that match the query, in catalog order. */
    int (*catalog_query)(const sp_host *host, const char *provider, const sp_offer_query *query,
                         sp_offer_sink *sink, sp_err *err);
    /* Where a provider may keep files of its own (created on first use, mode 0700). */
    const char *(*cache_dir)(const sp_host *host, const char *provider);
    void *(*alloc)(const sp_host *host, size_t size);
    void (*free)(const sp_host *host, void *ptr);
};

/* A convenience for providers: how many rows of the provider's catalog match the query's models
 * at any count, in any market. A provider asks this before explaining why it cannot sell a
 * count or a market, so that it stays silent about models it does not sell at all. */
typedef struct sp_count_sink {
    sp_offer_sink sink;
    size_t n;
} sp_count_sink;

static inline int sp_count_offer_(sp_offer_sink *sink, const sp_offer *offer)
{
    (void)offer;
    ((sp_count_sink *)sink->opaque)->n++;
    return 0;
}

static inline int sp_count_note_(sp_offer_sink *sink, const char *message)
{
    (void)sink;
    (void)message;
    return 0;
}

static inline size_t sp_catalog_count_any(const sp_host *host, const char *provider,
                                          const sp_offer_query *query)
{
    sp_offer_query q = *query;
    sp_count_sink c = {{sizeof(sp_offer_sink), &c, sp_count_offer_, sp_count_note_}, 0};
    sp_err ignored;
    q.count_min = 1;
    q.count_max = UINT32_MAX;
    q.want_spot = 0;
    host->catalog_query(host, provider, &q, &c.sink, &ignored);
    return c.n;
}

/* ---- The provider's table, passed out ------------------------------------------------------ */

typedef enum sp_provider_kind {
    SP_KIND_VM_SSH = 1,        /* VM cloud: nodes are machines reached over SSH */
    SP_KIND_CONTAINER_EXEC = 2 /* container cloud: commands run through the provider's exec API */
} sp_provider_kind;

/* Capability bits, for `skypool providers`. */
#define SP_CAP_SPOT (1u << 0)
#define SP_CAP_ZONES (1u << 1)
#define SP_CAP_LIVE_OFFERS (1u << 2)
#define SP_CAP_QUOTA (1u << 3)
#define SP_CAP_LAUNCH (1u << 4)
#define SP_CAP_MIG (1u << 5)

/*
 * Any operation may be NULL: the host then treats it as SP_E_UNSUPPORTED and says so. Each
 * returns SP_OK or an sp_status with err set.
 */
typedef struct sp_provider {
    uint32_t abi_major;
    uint32_t struct_size;
    /* 1.0 */
    const char *name;          /* "aws": lower case, [a-z0-9-], unique among loaded plugins */
    const char *version;       /* the plugin's own version */
    const char *description;
    sp_provider_kind kind;
    uint32_t caps;
    void (*fini)(void *ctx);
    /* Offers for one resolved term, from the catalog (or the provider's own knowledge). */
    int (*offers)(void *ctx, const sp_offer_query *query, sp_offer_sink *sink, sp_err *err);
    /* Live refresh: fetch current offers from the cloud and emit them all; the host stores
     * them as this provider's cached catalog. */
    int (*refresh_offers)(void *ctx, const char *const *regions, size_t n_regions,
                          sp_offer_sink *sink, sp_err *err);
    int (*quota)(void *ctx, const sp_quota_query *query, sp_quota_report *report, sp_err *err);
    /* Whether the offer can be launched now (capacity, offerings): SP_OK, SP_E_CAPACITY. */
    int (*availability)(void *ctx, const sp_offer *offer, sp_market market, sp_err *err);
    int (*launch)(void *ctx, const sp_launch_request *req, sp_node *node, sp_err *err);
    int (*describe_nodes)(void *ctx, const sp_node_filter *filter, sp_node_sink *sink,
                          sp_err *err);
    int (*terminate)(void *ctx, const sp_node *node, sp_err *err);
    /* SP_KIND_VM_SSH: where the host should ssh to run the node check. */
    int (*ssh_target)(void *ctx, const sp_node *node, sp_ssh_target *target, sp_err *err);
    /* SP_KIND_CONTAINER_EXEC: run a command (the node check) in the node. */
    int (*exec)(void *ctx, const sp_node *node, const sp_exec_request *req,
                sp_exec_result *result, sp_err *err);
    /* 1.1 */
    /* Whether the provider has credentials the cloud accepts: SP_OK and where they came from
     * ("environment (AWS_ACCESS_KEY_ID)"), or SP_E_AUTH and why not. Never the secret. */
    int (*check_credentials)(void *ctx, char *source, size_t size, sp_err *err);
    /* 1.2 */
    /* Several nodes of one offer in one cloud call (DigitalOcean creates up to 10 droplets per
     * request). The host only batches requests that share offer, market, image, ssh_user,
     * ssh_public_key and user_data; they differ in name, client_token and the values of tags.
     * A provider whose call takes one tag set keeps the tags all requests share and drops the
     * rest: the node's name always identifies it. nodes[i] and errs[i] answer reqs[i]:
     * errs[i].code is SP_OK for a node launched. Returns SP_OK when every node was launched,
     * else the status of the first failure. At most launch_batch_max requests per call. */
    int (*launch_batch)(void *ctx, const sp_launch_request *const *reqs, size_t n,
                        sp_node *nodes, sp_err *errs);
    uint32_t launch_batch_max;
} sp_provider;

/*
 * The entry point. On success: *table points to the plugin's static table, *ctx to its context
 * (may be NULL), and SP_OK is returned. On failure: an sp_status, and *errmsg may point to a
 * message allocated with host->alloc (the host frees it).
 */
typedef int (*sp_provider_init_fn)(const sp_host *host, const sp_provider **table, void **ctx,
                                   char **errmsg);

#ifdef __cplusplus
}
#endif

#endif
