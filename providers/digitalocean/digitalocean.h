/* The DigitalOcean provider's operations (internal). Each file implements a group of them. */
#ifndef SKYPOOL_DO_H
#define SKYPOOL_DO_H

#include "doapi.h"

/* dooffers.c: live offers from /v2/sizes (and /v2/regions). */
int do_refresh_offers(void *ctx, const char *const *regions, size_t n_regions,
                      sp_offer_sink *sink, sp_err *err);

/* A DigitalOcean GPU model ("nvidia_h100", "amd_mi300x"), or a size slug's model part when the
 * size has no gpu_info.model, as a skypool model key; NULL for models skypool does not know.
 * *nominal_gib is the model's memory per device. */
const char *do_model_key(const char *model, unsigned *nominal_gib);

/* What one size of /v2/sizes sells, when it is a GPU size skypool knows. */
typedef struct do_size {
    char slug[64];
    const char *accel;         /* model key */
    char model[64];            /* DigitalOcean's name for it */
    unsigned count;
    unsigned accel_mem_mib;    /* per device */
    unsigned vcpus;
    unsigned mem_mib;
    double price_hourly;       /* SP_PRICE_UNKNOWN when absent */
    bool available;
    const json_t *regions;     /* the size's region slugs (borrowed from the answer) */
} do_size;

/* Reads a size object. SP_OK for a GPU size of a known model; SP_E_NOTFOUND for a size without
 * GPUs; SP_E_UNSUPPORTED for a GPU model skypool does not know (s->model names it). */
int do_read_size(const json_t *size, do_size *s);
bool do_size_in_region(const do_size *s, const char *region);

/* doquota.c */
int do_quota(void *ctx, const sp_quota_query *q, sp_quota_report *r, sp_err *err);
int do_availability(void *ctx, const sp_offer *offer, sp_market market, sp_err *err);

/* donodes.c */
int do_launch(void *ctx, const sp_launch_request *req, sp_node *node, sp_err *err);
int do_launch_batch(void *ctx, const sp_launch_request *const *reqs, size_t n, sp_node *nodes,
                    sp_err *errs);
int do_describe_nodes(void *ctx, const sp_node_filter *f, sp_node_sink *sink, sp_err *err);
int do_terminate(void *ctx, const sp_node *node, sp_err *err);
int do_ssh_target(void *ctx, const sp_node *node, sp_ssh_target *t, sp_err *err);

/* The most droplets one create call makes (the API's limit for `names`). */
#define DO_BATCH_MAX 10

/* A host tag as a DigitalOcean tag: "key:value", every character other than letters, digits,
 * ':', '-' and '_' replaced by '_', at most 255 characters (the API's tag name pattern
 * ^[a-zA-Z0-9_\-\:]+$, maxLength 255). */
void do_tag_encode(const sp_tag *tag, char *out, size_t size);

/* A droplet object as a node. */
void do_read_droplet(const json_t *droplet, sp_node *node);

/* The image a launch boots when the pool names none (see donodes.c for the rule). */
const char *do_default_image(const sp_offer *offer);

/* The account's SSH key for an OpenSSH public key line: found by fingerprint, else imported.
 * Remembered per process. */
int do_ensure_key(do_ctx *ctx, const char *public_key, long long *id, sp_err *err);

/* DELETE /v2/droplets?tag_name=TAG: every droplet with the (encoded) tag. For cleanup. */
int do_delete_tagged(do_ctx *ctx, const char *tag, sp_err *err);

#endif
