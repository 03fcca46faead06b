/*
 * The node check: what a node must have (from the offer it was bought as and the pool's check
 * section), running skypool-nodecheck there over SSH (or here, for check-node), and reading its
 * report into a verdict. Internal to the core.
 */
#ifndef SKYPOOL_BOOTSTRAP_H
#define SKYPOOL_BOOTSTRAP_H

#include "state.h"

#include <skypool/skypool.h>

#define SP_CHECK_MAX_MIG 64 /* MIG instances listed for one GPU, as a comma list */

typedef struct sp_check_expect {
    unsigned count;                      /* devices; 0 = not checked */
    const char *models[SP_SPEC_MAX_MODELS]; /* any of these model keys */
    size_t n_models;
    unsigned mem_mib;                    /* per device, as sold; 0 = not checked */
    const char *form_factor;             /* "sxm", "pcie", "nvl"; NULL = not checked */
    char mig[512];                       /* "3g.40gb,3g.40gb": every GPU's layout; "" = none */
    unsigned cuda_major, cuda_minor;     /* 0.0 = not checked */
    unsigned mem_test_mib;               /* 0: the program's default */
    bool no_tests;
} sp_check_expect;

/* How much memory per GPU the check's pattern test covers: $SKYPOOL_CHECK_MEM_TEST_MIB, else 0
 * (the program's default, 256 MiB). */
unsigned sp_check_mem_test_mib(void);

/* What the node was bought as, and what the pool asks of it. A MIG request is resolved into
 * the layout of the node's model. */
int sp_check_expect_of_node(const sp_pool *pool, const sp_node_row *node, sp_check_expect *e,
                            sp_err *err);
/* From a spec term (check-node --expect): its first candidate count, models and memory. */
void sp_check_expect_of_term(const sp_spec_term *term, sp_check_expect *e);

/* The check program's flags for an expectation: argv entries (pointing into buf) after the
 * program name. Returns how many were written. */
size_t sp_check_args(const sp_check_expect *e, const char **argv, size_t max, char *buf,
                     size_t size);

typedef struct sp_check_result {
    char verdict[24];   /* see sp_check_row */
    char summary[512];
    char *report;       /* the program's JSON (allocated), or NULL */
    char *workers;      /* JSON array of {uuid, device, profile} (allocated), or NULL */
    unsigned devices;
    int exit_code;      /* the program's, or -1 */
} sp_check_result;

void sp_check_result_free(sp_check_result *r);
/* A verdict that passes: ok, or partial (the fallback could only compare names and counts). */
bool sp_check_verdict_passes(const char *verdict);

/* Reads skypool-nodecheck's report (and exit code) into a result. SP_E_PROTOCOL when out is
 * not such a report. */
int sp_check_read_report(const char *out, size_t len, int exit_code, sp_check_result *r,
                         sp_err *err);
/* The partial check from `nvidia-smi --query-gpu=name,uuid,memory.total,driver_version,
 * pci.bus_id --format=csv,noheader,nounits` output, for nodes that cannot run the program. */
void sp_check_read_smi(const char *csv, const sp_check_expect *e, sp_check_result *r);

/* Where the check program for an architecture ("x86_64", "aarch64") is: $SKYPOOL_NODECHECK
 * (a file, for the host's own architecture), the build tree, or the install's libexec dir. */
int sp_nodecheck_path(const char *arch, char *buf, size_t size, sp_err *err);

typedef struct sp_ssh_opts {
    const char *user;        /* NULL: the target's, else ssh's own default */
    const char *key;         /* private key file; NULL: ssh's defaults */
    const char *proxy;       /* ProxyCommand; NULL: none (the user's ssh config may set one) */
    const char *known_hosts; /* file for the nodes' host keys (trust on first use) */
    unsigned connect_timeout_s;
} sp_ssh_opts;

/* The ssh command line for a target: argv (pointing into buf, NULL-terminated) up to and
 * including the destination; the caller appends the remote command. Returns argc. */
size_t sp_ssh_argv(const sp_ssh_target *t, const sp_ssh_opts *o, const char **argv,
                   size_t max, char *buf, size_t size);

/* Where ssh connects for a target once the user's ssh config is applied (ssh -G): host and
 * port; *proxied when a ProxyCommand or ProxyJump stands between (the port then says nothing). */
int sp_ssh_resolve(const sp_ssh_target *t, const sp_ssh_opts *o, char *host, size_t size,
                   unsigned *port, bool *proxied);

/* Runs the check on a VM node: learns its architecture, copies the matching program, sets up
 * MIG when the expectation has a layout, runs it, and reads the report; falls back to
 * nvidia-smi (verdict "partial" at best) when the program cannot run there. A node that cannot
 * be reached gives SP_OK with verdict "unreachable"; errors are for what is wrong here. */
int sp_bootstrap_ssh(const sp_ssh_target *t, const sp_ssh_opts *o, const sp_check_expect *e,
                     sp_check_result *r, sp_err *err);

/* Runs the check program on this machine (check-node). */
int sp_check_local(const sp_check_expect *e, sp_check_result *r, sp_err *err);

#endif
