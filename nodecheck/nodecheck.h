/* skypool-nodecheck's internals: the options, the report, and the steps that fill it. */
#ifndef SKYPOOL_NODECHECK_H
#define SKYPOOL_NODECHECK_H

#include "driver_api.h"

#include <stdbool.h>
#include <stddef.h>

#define NC_SCHEMA "skypool-nodecheck/1"
#define NC_MAX_DEVICES 64
#define NC_MAX_MIG 16   /* MIG devices per GPU: at most 7 today */
#define NC_MAX_LIST 16  /* entries of --expect-model and --expect-mig */
#define NC_MAX_NEURON 64
#define NC_TEXT 256

/* Exit codes: a contract with the core (docs/nodecheck.md). */
enum nc_exit {
    NC_EXIT_OK = 0,
    NC_EXIT_INTERNAL = 1,
    NC_EXIT_USAGE = 2,
    NC_EXIT_NO_DRIVER = 3,
    NC_EXIT_NO_DEVICE = 4,
    NC_EXIT_DRIVER_TOO_OLD = 5,
    NC_EXIT_HARDWARE = 6,
    NC_EXIT_MIG = 7,
    NC_EXIT_TEST = 8,
};

typedef struct nc_options {
    long expect_count; /* -1: not given */
    const char *expect_models[NC_MAX_LIST]; /* canonical keys */
    size_t n_models;
    unsigned long long expect_mem_mib; /* 0: not given */
    int expect_ff;                     /* NC_FF_*, -1: not given */
    char expect_mig_buf[NC_TEXT];      /* the profiles, split in place */
    const char *expect_mig[NC_MAX_LIST];
    size_t n_mig;
    int min_cuda_major, min_cuda_minor; /* -1: not given */
    bool no_tests;
    bool pretty;
    unsigned mem_test_mib;
} nc_options;

typedef enum nc_result { NC_SKIPPED = 0, NC_PASS, NC_FAIL } nc_result;

typedef struct nc_tests {
    nc_result arith;
    nc_result memory;
    unsigned long long memory_errors;
    unsigned long long memory_tested_mib;
    const char *memory_method; /* "kernel", "driver_api" or NULL */
    double d2d_gbps;           /* < 0: not measured */
    double h2d_gbps;
    char tested_uuid[NC_NVML_STRING]; /* what CUDA ran the tests on: a GPU, or a MIG device */
    char why[NC_TEXT];                /* why something was skipped or failed; "" if nothing */
} nc_tests;

typedef struct nc_mig_instance {
    char profile[32];
    char uuid[NC_NVML_STRING];
    unsigned long long memory_mib;
} nc_mig_instance;

enum { NC_MIG_UNSUPPORTED = 0, NC_MIG_DISABLED, NC_MIG_ENABLED };

typedef struct nc_device {
    unsigned index;
    char name[NC_NVML_STRING];
    const char *model; /* a key from names.c, or NULL */
    char uuid[NC_NVML_STRING];
    unsigned long long memory_mib;
    int sm_count;           /* -1: unknown */
    int cc_major, cc_minor; /* -1: unknown */
    char pci_bus_id[32];
    unsigned pci_domain, pci_bus, pci_device;
    int form_factor;
    char board_part[NC_NVML_STRING];
    int mig_mode;
    nc_mig_instance mig[NC_MAX_MIG];
    size_t n_mig;
    bool has_ecc;
    unsigned long long ecc[4]; /* volatile corrected, volatile uncorrected, aggregate ... */
    bool has_throttle;
    unsigned long long throttle;
    int clocks[4]; /* sm, mem, sm max, mem max; -1: unknown */
    int cuda_ordinal; /* -1: CUDA does not see it */
    nc_tests tests;
} nc_device;

typedef struct nc_neuron_device {
    long index;
    long cores;
    unsigned long long memory_mib;
    char bdf[32];
    const char *model;         /* a key, when the memory size tells */
    const char *candidates[2]; /* else the keys it may be */
} nc_neuron_device;

typedef struct nc_neuron {
    bool present; /* neuron-ls was found */
    char tool[NC_TEXT];
    char error[NC_TEXT];
    nc_neuron_device devices[NC_MAX_NEURON];
    size_t n_devices;
} nc_neuron;

typedef struct nc_mismatch {
    const char *what; /* count, model, memory, form_factor, mig, cuda, test */
    int device;       /* -1: the node as a whole */
    char expected[NC_TEXT];
    char found[NC_TEXT];
    char message[NC_TEXT * 2];
} nc_mismatch;

typedef struct nc_report {
    nc_options opt;
    char hostname[NC_TEXT];
    char arch[NC_TEXT];
    bool driver_loaded; /* libcuda loaded and cuInit succeeded (or found no device) */
    bool nvml_loaded;
    char driver_version[NC_NVML_STRING];
    int cuda_version; /* cuDriverGetVersion: 12040 = 12.4; 0 unknown */
    char driver_error[NC_TEXT * 2];
    char nvml_error[NC_TEXT * 2];
    bool no_driver;
    bool no_device;
    bool neuron_node; /* the expectations are about Neuron devices, or only they were found */
    nc_device devices[NC_MAX_DEVICES];
    size_t n_devices;
    nc_neuron neuron;
    nc_mismatch *mismatches;
    size_t n_mismatches;
    bool internal_error;
    char internal_why[NC_TEXT];
    int status_exit; /* filled by nc_decide */
    const char *status;
} nc_report;

/* gpu.c: driver, devices and their properties, from NVML and the CUDA driver API. */
void nc_probe_gpus(nc_report *r, nc_cuda *cu);
/* tests.c: kernels, memory test and bandwidth on each device CUDA sees. */
void nc_run_tests(nc_report *r, const nc_cuda *cu);
bool nc_kernels_built(void);
const char *nc_kernels_why(void);
/* neuron.c: AWS Neuron devices from neuron-ls. */
void nc_probe_neuron(nc_neuron *n);
/* expect.c: expectations -> mismatches, status and exit code. */
void nc_check(nc_report *r);
void nc_add_mismatch(nc_report *r, const char *what, int device, const char *expected,
                     const char *found, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));
/* report.c */
bool nc_write_report(const nc_report *r, long long elapsed_ms);

#endif
