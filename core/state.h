/*
 * The state store: pools, their nodes, and a journal of every mutating cloud call, in SQLite
 * (WAL, file mode 0600) under $XDG_STATE_HOME/skypool (default ~/.local/state/skypool), or
 * $SKYPOOL_STATE_DIR. An intent row is committed before each call and its outcome after, so
 * whatever instant a crash comes at, the journal says which calls may have taken effect.
 */
#ifndef SKYPOOL_STATE_H
#define SKYPOOL_STATE_H

#include <skypool/skypool.h>

#include <stdint.h>

typedef struct sp_state sp_state;

#define SP_POOL_ID_LEN 16 /* hex characters */
#define SP_STATE_SCHEMA 2 /* PRAGMA user_version of the database this code writes */

typedef struct sp_pool_row {
    char id[SP_POOL_ID_LEN + 1];
    char name[64];
    char path[512];
    char state[16];       /* planning, launching, ready, partial, failed, down */
    unsigned nodes_wanted;
    long long created_at;
    long long updated_at;
} sp_pool_row;

typedef struct sp_node_row {
    char pool_id[SP_POOL_ID_LEN + 1];
    unsigned idx;
    unsigned attempt;
    char state[16];       /* wanted, launching, pending, running, failed, terminating, gone */
    char provider[33];
    char region[64];
    char zone[64];
    char instance_type[64];
    char market[16];      /* spot, on-demand */
    double price;         /* USD/h */
    char cloud_id[128];
    char public_ip[64];
    char private_ip[64];
    char check[24];       /* node check verdict: "" (not checked), or a sp_check_row verdict */
    long long updated_at;
    char accel[32];       /* what the node was bought as: model key, devices, memory each */
    unsigned accel_count;
    unsigned accel_mem_mib;
} sp_node_row;

/* One run of the node check on a node: its verdict, a line for people, the workers it found
 * (JSON list of {uuid, device, profile}) and the check program's whole report (JSON). */
typedef struct sp_check_row {
    char pool_id[SP_POOL_ID_LEN + 1];
    unsigned idx;
    char cloud_id[128];
    long long checked_at;
    char verdict[24];     /* ok, partial, no_driver, no_device, driver_too_old,
                             hardware_mismatch, mig_mismatch, test_failed, unreachable, error */
    char summary[512];
    const char *workers;  /* in: what to store; NULL = none */
    const char *report;
    char *workers_copy;   /* out (check_last): allocated; the caller frees it */
} sp_check_row;

typedef struct sp_op_row {
    int64_t id;
    char pool_id[SP_POOL_ID_LEN + 1];
    int node_idx;         /* -1: the pool as a whole */
    char kind[16];        /* launch, terminate */
    char provider[33];
    char region[64];
    char token[80];       /* the client token the call carried */
    char cloud_id[128];
    long long started_at;
    long long finished_at; /* 0: in flight, or the process died during the call */
    char outcome[16];     /* "", ok, error */
    char detail[256];
} sp_op_row;

/* dir NULL: $SKYPOOL_STATE_DIR, else $XDG_STATE_HOME/skypool, else ~/.local/state/skypool. */
int sp_state_open(const char *dir, sp_state **st, sp_err *err);
void sp_state_close(sp_state *st);
const char *sp_state_path(const sp_state *st);

/* The deterministic client token of a launch: the same (pool, node, attempt) always gives the
 * same token, so a retried launch can never make a second instance. */
void sp_state_client_token(const char *pool_id, unsigned idx, unsigned attempt, char *buf,
                           size_t size);

int sp_state_pool_create(sp_state *st, const char *name, const char *path, unsigned nodes,
                         sp_pool_row *row, sp_err *err);
int sp_state_pool_find(sp_state *st, const char *name, sp_pool_row *row, sp_err *err);
int sp_state_pool_set(sp_state *st, const char *pool_id, const char *state, sp_err *err);
int sp_state_pool_delete(sp_state *st, const char *pool_id, sp_err *err);
typedef int (*sp_pool_fn)(void *ctx, const sp_pool_row *row);
int sp_state_pools(sp_state *st, sp_pool_fn fn, void *ctx, sp_err *err);

int sp_state_node_put(sp_state *st, const sp_node_row *row, sp_err *err);
typedef int (*sp_node_fn)(void *ctx, const sp_node_row *row);
int sp_state_nodes(sp_state *st, const char *pool_id, sp_node_fn fn, void *ctx, sp_err *err);

int sp_state_check_put(sp_state *st, const sp_check_row *check, sp_err *err);
/* The node's latest check (SP_E_NOTFOUND if none); *report, when asked, is the whole report,
 * allocated (or NULL). */
int sp_state_check_last(sp_state *st, const char *pool_id, unsigned idx, sp_check_row *check,
                        char **report, sp_err *err);

/* Journal: op_begin commits the intent (and returns its id) before the cloud call is made;
 * op_end records what came of it. */
int sp_state_op_begin(sp_state *st, const sp_op_row *intent, int64_t *id, sp_err *err);
int sp_state_op_end(sp_state *st, int64_t id, const char *outcome, const char *cloud_id,
                    const char *detail, sp_err *err);
/* Calls begun and never ended: the process died during them. */
typedef int (*sp_op_fn)(void *ctx, const sp_op_row *row);
int sp_state_ops_unfinished(sp_state *st, const char *pool_id, sp_op_fn fn, void *ctx,
                            sp_err *err);

#endif
