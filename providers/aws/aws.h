/* The AWS provider's operations (internal). Each file implements a group of them. */
#ifndef SKYPOOL_AWS_H
#define SKYPOOL_AWS_H

#include "ec2.h"

/* Map an EC2 accelerator (GpuInfo / NeuronInfo / InferenceAcceleratorInfo name and per-device
 * memory) to a skypool model key, or NULL for accelerators skypool does not offer. */
const char *aws_model_key(const char *name, unsigned long long mem_mib);

/* offers.c: live refresh of the catalog across regions, concurrently. */
int aws_refresh_offers(void *ctx, const char *const *regions, size_t n_regions,
                       sp_offer_sink *sink, sp_err *err);

/* quota.c */
int aws_quota(void *ctx, const sp_quota_query *q, sp_quota_report *r, sp_err *err);
int aws_availability(void *ctx, const sp_offer *offer, sp_market market, sp_err *err);

/* The vCPU-based quota that governs an instance type in a market, or NULL. */
typedef struct aws_quota_def {
    const char *family;        /* "P", "G and VT", "Trn", "Inf", "DL", "P5" */
    const char *code;          /* "L-417A185B" */
    const char *name;          /* "Running On-Demand P instances" */
    const char *const *prefixes; /* instance type prefixes it covers */
} aws_quota_def;
const aws_quota_def *aws_quota_for(const char *instance_type, sp_market market);

/* nodes.c */
int aws_launch(void *ctx, const sp_launch_request *req, sp_node *node, sp_err *err);
int aws_describe_nodes(void *ctx, const sp_node_filter *f, sp_node_sink *sink, sp_err *err);
int aws_terminate(void *ctx, const sp_node *node, sp_err *err);
int aws_ssh_target(void *ctx, const sp_node *node, sp_ssh_target *t, sp_err *err);
/* The image to boot for an instance type when the pool names none: the newest GPU-ready
 * (Deep Learning Base) AMI for its architecture, owned by Amazon. */
int aws_find_image(aws_ctx *ctx, const char *region, const char *arch, bool neuron, char *ami,
                   size_t size, sp_err *err);
int aws_console_output(aws_ctx *ctx, const char *region, const char *instance_id, char **text,
                       sp_err *err);
int aws_ensure_key_pair(aws_ctx *ctx, const char *region, const char *name,
                        const char *public_key, sp_err *err);
int aws_ensure_ssh_group(aws_ctx *ctx, const char *region, const char *name, char *group_id,
                         size_t size, sp_err *err);

#endif
