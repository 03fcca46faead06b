/*
 * libskypool: the core library behind the skypool command.
 *
 * Conventions: functions return sp_status (SP_OK = 0) and fill a caller-owned sp_err; objects
 * returned through an out-pointer are freed with the matching *_free function.
 */
#ifndef SKYPOOL_SKYPOOL_H
#define SKYPOOL_SKYPOOL_H

#include "provider.h"

#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

const char *sp_strerror(int status);
const char *sp_version(void);

/* ---- Accelerator models --------------------------------------------------------------- */

typedef enum sp_vendor {
    SP_VENDOR_NVIDIA = 0,
    SP_VENDOR_AMD = 1,
    SP_VENDOR_AWS = 2,   /* Trainium, Inferentia */
    SP_VENDOR_HABANA = 3 /* Gaudi */
} sp_vendor;

typedef struct sp_accel_model {
    const char *key;      /* stable id used in catalogs and offers: "H100-SXM" */
    const char *family;   /* "H100", "A100", "V100", "Trainium" */
    const char *display;  /* printed form without count: "NVIDIA H100 80GB SXM5" */
    sp_vendor vendor;
    unsigned mem_gib;     /* nominal memory per device */
    sp_form_factor ff;
    const char *ff_name;  /* "SXM5", "PCIe", "NVL", "OAM", "" */
    unsigned neuron_cores; /* NeuronCores per device; 0 for GPUs */
    bool mig;             /* supports Multi-Instance GPU */
} sp_accel_model;

/* All known models, in a stable order; *n receives the count. */
const sp_accel_model *sp_accel_models(size_t *n);
/* By exact key (case-insensitive), or NULL. */
const sp_accel_model *sp_accel_by_key(const char *key);

/* ---- Accelerator spec grammar --------------------------------------------------------- */

#define SP_SPEC_MAX_MODELS 24
#define SP_SPEC_MAX_TERMS 16

/* One accelerator request: "H100-SXM:8", "A100:80GB", "24GB+:4", "H100!:1..8". */
typedef struct sp_spec_term {
    const sp_accel_model *models[SP_SPEC_MAX_MODELS]; /* candidates; never empty once parsed */
    unsigned n_models;
    unsigned count_min;   /* devices per node */
    unsigned count_max;
    unsigned mem_gib;     /* memory constraint per device; 0 = none */
    bool mem_at_least;    /* "80GB+" rather than "80GB" */
    bool exact;           /* "!" */
    char name[32];        /* the name as the user wrote it, for messages */
} sp_spec_term;

typedef enum sp_spec_kind {
    SP_SPEC_ONE = 0,      /* a single term */
    SP_SPEC_ORDERED = 1,  /* "[a, b]" or "a, b": try in order */
    SP_SPEC_ANY_OF = 2    /* "{a, b}": any, cheapest wins */
} sp_spec_kind;

typedef struct sp_spec {
    sp_spec_kind kind;
    unsigned n_terms;
    sp_spec_term terms[SP_SPEC_MAX_TERMS];
} sp_spec;

/* Parses the whole grammar. On error err->msg names the column and, for unknown names, a
 * suggestion: "column 1: unknown accelerator 'H10'; did you mean H100?". */
int sp_spec_parse(const char *text, sp_spec *spec, sp_err *err);
/* Parses a single term (no lists). */
int sp_spec_term_parse(const char *text, sp_spec_term *term, sp_err *err);
/* Canonical printed form: "NVIDIA H100 80GB SXM5 x8", "{NVIDIA ... x8, AMD ... x8}". Returns
 * the length that was (or would have been) written, as snprintf does. */
int sp_spec_term_format(const sp_spec_term *term, char *buf, size_t size);
int sp_spec_format(const sp_spec *spec, char *buf, size_t size);
/* Whether an offer's accelerators satisfy the term. */
bool sp_spec_term_matches(const sp_spec_term *term, const sp_offer *offer);
/* Suggests the closest known accelerator name to an unknown one, or NULL. */
const char *sp_accel_suggest(const char *name);

/* ---- MIG ------------------------------------------------------------------------------ */

typedef struct sp_mig_profile {
    const char *name;         /* "3g.40gb" */
    unsigned compute_slices;  /* the "Ng" */
    unsigned mem_slices;      /* of 8 */
    unsigned mem_gib;
    unsigned max_instances;   /* per GPU */
    uint8_t placements;       /* bit i set: may start at memory slice i */
    unsigned span;            /* memory slices occupied by one placement */
} sp_mig_profile;

#define SP_MIG_MAX_INSTANCES 7

/* A layout for one GPU: the profiles of its instances, as the user listed them. */
typedef struct sp_mig_layout {
    const sp_mig_profile *profiles[SP_MIG_MAX_INSTANCES];
    unsigned n;
    unsigned starts[SP_MIG_MAX_INSTANCES]; /* a valid placement, filled by sp_mig_layout_check */
} sp_mig_layout;

/* The profile table of a model (by sp_accel_model key), or NULL if it has no MIG. */
const sp_mig_profile *sp_mig_profiles(const char *model_key, size_t *n);
/* Resolves "3g.40gb" (N identical instances, as many as fit) or a list of names into a layout
 * and checks it fits the GPU (slices and placement). The error names the valid profiles. */
int sp_mig_layout_parse(const char *model_key, const char *const *names, size_t n_names,
                        sp_mig_layout *layout, sp_err *err);
int sp_mig_layout_check(const char *model_key, sp_mig_layout *layout, sp_err *err);

/* ---- Pool files ------------------------------------------------------------------------ */

typedef enum sp_spot_policy {
    SP_SPOT_ON_DEMAND = 0,
    SP_SPOT_ONLY = 1,
    SP_SPOT_THEN_ON_DEMAND = 2
} sp_spot_policy;

typedef enum sp_on_fail {
    SP_ON_FAIL_REPLACE = 0,
    SP_ON_FAIL_FAIL = 1,
    SP_ON_FAIL_WARN = 2
} sp_on_fail;

typedef struct sp_amount {    /* "8", "32+", "64GB", "500GB+" */
    unsigned value;           /* 0 = not given */
    bool at_least;
} sp_amount;

typedef struct sp_pool {
    char *path;               /* as given to sp_pool_load, or the name given to sp_pool_parse */
    char *name;
    unsigned nodes;
    sp_spec accelerators;
    sp_amount cpus;           /* per node */
    sp_amount memory_gib;
    sp_amount disk_gib;
    sp_spot_policy spot;
    char **providers;         /* allowed, in order of preference; n == 0: all loaded */
    size_t n_providers;
    char **regions;           /* allowed, in order of preference; n == 0: all */
    size_t n_regions;
    double max_hourly_usd;    /* for the whole pool; 0 = no budget */
    char *image;
    char *ssh_user;
    char *ssh_key;
    char *ssh_proxy;
    unsigned cuda_major;      /* minimum CUDA version; 0.0 = none */
    unsigned cuda_minor;
    char **mig;               /* MIG profile names per GPU (one name: as many as fit) */
    size_t n_mig;
    sp_on_fail on_fail;
    char **tag_keys;
    char **tag_values;
    size_t n_tags;
} sp_pool;

/* Errors: "pool.yaml:7:5: resources.accelerators[1]: unknown accelerator 'H10'; did you mean
 * H100?". */
int sp_pool_load(const char *path, sp_pool **pool, sp_err *err);
int sp_pool_parse(const char *buf, size_t len, const char *name, sp_pool **pool, sp_err *err);
void sp_pool_free(sp_pool *pool);

/* ---- Offer catalog --------------------------------------------------------------------- */

typedef struct sp_catalog sp_catalog;

typedef struct sp_catalog_info {
    const char *provider;
    const char *path;         /* the file the rows came from */
    const char *source;       /* where its facts come from */
    const char *date;         /* when they were read (YYYY-MM-DD) */
    bool live;                /* from the live cache rather than the bundled file */
    size_t n_rows;
    long long age_s;          /* live cache age; -1 for the bundled file */
} sp_catalog_info;

/*
 * Loads one provider's catalog: "<cache_dir>/<provider>.tsv" when it exists and is younger than
 * ttl_s, else "<bundled_dir>/<provider>.tsv". cache_dir may be NULL.
 */
int sp_catalog_load(const char *provider, const char *bundled_dir, const char *cache_dir,
                    long long ttl_s, sp_catalog **catalog, sp_err *err);
void sp_catalog_free(sp_catalog *catalog);
void sp_catalog_info_get(const sp_catalog *catalog, sp_catalog_info *info);
/* Emits the rows that match (model in query->models, count in range, memory, spot, regions). */
int sp_catalog_query(const sp_catalog *catalog, const sp_offer_query *query, sp_offer_sink *sink,
                     sp_err *err);
/* Writes a catalog file (for the live cache): atomically, via a temporary file and rename. */
int sp_catalog_write(const char *path, const char *provider, const char *source,
                     const char *date, const sp_offer *offers, size_t n, sp_err *err);

#ifdef __cplusplus
}
#endif

#endif
