/* The AWS provider's EC2 Query API client (internal to the provider). */
#ifndef SKYPOOL_AWS_EC2_H
#define SKYPOOL_AWS_EC2_H

#include "config.h"
#include "sigv4.h"
#include "xml.h"

#include <pthread.h>
#include <skypool/provider.h>
#include <stdbool.h>

#define AWS_EC2_VERSION "2016-11-15"

typedef struct aws_ctx {
    const sp_host *host;
    aws_config cfg;
    int cfg_status;            /* aws_config_load's result; its message in cfg_err */
    sp_err cfg_err;
    unsigned max_attempts;     /* AWS_MAX_ATTEMPTS, as the SDKs read it (default 5) */
    unsigned backoff_base_ms;  /* first retry waits up to this; doubles, capped */
    unsigned backoff_cap_ms;
    unsigned page_size;        /* MaxResults ceiling (SKYPOOL_AWS_PAGE_SIZE; tests page early) */
    /* What launches in a region share (image, key pair, SSH group), found or made once per
     * process: concurrent launches would otherwise race to create the same group. */
    pthread_mutex_t setup_lock;
    struct aws_region_setup {
        char key[160];         /* "region|what|arg" */
        char value[128];
    } setup[64];
    size_t n_setup;
} aws_ctx;

/* MaxResults for a paginated call whose API allows at most max. */
unsigned aws_page(const aws_ctx *ctx, unsigned max);

/* Form parameters of one call, in the order added. */
typedef struct aws_params {
    char **keys;
    char **values;
    size_t n, cap;
    bool oom;
} aws_params;

void aws_params_init(aws_params *p);
void aws_params_free(aws_params *p);
void aws_params_add(aws_params *p, const char *key, const char *value);
__attribute__((format(printf, 3, 4))) void aws_params_addf(aws_params *p, const char *key,
                                                           const char *fmt, ...);
/* Filter.N.Name / Filter.N.Value.M */
void aws_params_filter(aws_params *p, unsigned n, const char *name, const char *const *values,
                       size_t n_values);
/* The x-www-form-urlencoded body, as botocore writes it. Caller frees. */
char *aws_params_encode(const aws_params *p);

/* What an EC2 (or JSON 1.1) error said, and how skypool treats it. */
typedef enum aws_err_class {
    AWS_ERR_NONE = 0,
    AWS_ERR_CAPACITY,   /* try the next zone, region or provider */
    AWS_ERR_QUOTA,      /* skip this family in this region, name the quota */
    AWS_ERR_THROTTLE,   /* back off and retry */
    AWS_ERR_AUTH,       /* stop; name the credential source */
    AWS_ERR_NOTFOUND,   /* e.g. InvalidInstanceID.NotFound */
    AWS_ERR_SERVER,     /* 5xx: retry */
    AWS_ERR_CLIENT      /* any other 4xx: the request is wrong */
} aws_err_class;

typedef struct aws_error {
    long http_status;
    char code[96];
    char message[384];
    aws_err_class cls;
} aws_error;

/* Classifies an error code (and HTTP status) the way skypool acts on it. */
aws_err_class aws_classify(const char *code, long http_status);
/* The sp_status for a class. */
int aws_class_status(aws_err_class cls);

/*
 * One EC2 call in a region: encodes, signs (SigV4, service "ec2"), sends through the host, and
 * retries throttling, 5xx and transport failures with full-jitter exponential backoff, at most
 * ctx->max_attempts tries in all. retry_not_found also retries *.NotFound errors (eventual
 * consistency just after a launch). On success *doc holds the response (aws_xml_free).
 * On failure: an sp_status, err says "ec2 ACTION in REGION: CODE: message", and *e (if given)
 * holds the parsed error.
 */
int aws_ec2_call(aws_ctx *ctx, const char *region, const char *action, aws_params *params,
                 bool retry_not_found, aws_xml_doc **doc, aws_error *e, sp_err *err);

/* A JSON 1.1 call (Service Quotas): target like "ServiceQuotasV20190624.GetServiceQuota".
 * On success *body is the response JSON (free()). Retries as aws_ec2_call. */
int aws_json_call(aws_ctx *ctx, const char *service, const char *region, const char *target,
                  const char *json_body, char **body, aws_error *e, sp_err *err);

/* Helpers over xml.h's tree. A child by its name (local: prefixes are dropped). */
aws_xml_node *aws_xml_child(const aws_xml_node *parent, const char *name);
/* Follows a path of child names separated by '/': "gpuInfo/gpus". */
aws_xml_node *aws_xml_path(const aws_xml_node *parent, const char *path);
/* The text of a child (by path) into buf; "" when absent. Returns buf. */
const char *aws_xml_text(const aws_xml_node *parent, const char *path, char *buf, size_t size);
unsigned long long aws_xml_ull(const aws_xml_node *parent, const char *path);
/* The next <item> sibling after prev (or the first child <item> of set when prev is NULL). */
aws_xml_node *aws_xml_item(const aws_xml_node *set, const aws_xml_node *prev);

/* The calls' messages never carry secrets; this formats one for a failed call. */
int aws_fail(sp_err *err, int status, const char *service, const char *action,
             const char *region, const aws_error *e);

#endif
