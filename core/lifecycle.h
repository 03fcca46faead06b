/* Pools in the clouds: up (plan, quota, launch with failover, wait), down, reconcile. */
#ifndef SKYPOOL_LIFECYCLE_H
#define SKYPOOL_LIFECYCLE_H

#include "plan.h"
#include "state.h"

/* Tags on every instance skypool makes; reconciliation and teardown find them by these. */
#define SP_TAG_POOL "skypool:pool"
#define SP_TAG_POOL_ID "skypool:pool-id"
#define SP_TAG_NODE "skypool:node"

typedef enum sp_event_kind {
    SP_EV_INFO = 0,     /* a line about the pool */
    SP_EV_LAUNCHING,    /* node: a launch call is about to be made */
    SP_EV_LAUNCHED,     /* node: the cloud accepted it */
    SP_EV_FAILOVER,     /* node: that offer refused; trying the next */
    SP_EV_RUNNING,      /* node: running */
    SP_EV_FAILED,       /* node: no offer left */
    SP_EV_TERMINATED,   /* node: terminated */
    SP_EV_ADOPTED,      /* node: found in the cloud after a crash, and kept */
    SP_EV_CHECKING,     /* node: the node check starts */
    SP_EV_CHECKED,      /* node: its verdict (row->check), text: the summary */
    SP_EV_REPLACING     /* node: failed its check; terminated, to be launched again */
} sp_event_kind;

typedef struct sp_event {
    sp_event_kind kind;
    int node;           /* -1 for pool-wide events */
    const sp_node_row *row;  /* the node's row, where there is one */
    const char *text;
} sp_event;

typedef void (*sp_event_fn)(void *ctx, const sp_event *ev);

typedef struct sp_up_opts {
    unsigned parallel;       /* concurrent launches (default 16) */
    unsigned wait_s;         /* how long to wait for nodes to run (default 600) */
    bool check_quota;        /* ask providers for quota first (default on) */
    bool wait_ssh;           /* then wait until VM nodes answer on their SSH port */
    bool bootstrap;          /* then run the node check on every node (implies wait_ssh) */
    const char *ssh_public_key; /* OpenSSH public key line for new nodes; NULL: none */
    sp_event_fn on_event;
    void *event_ctx;
    volatile int *interrupted; /* set by a signal handler: launch no more */
} sp_up_opts;

typedef struct sp_up_result {
    unsigned wanted, running, launched_now, adopted, failed;
    unsigned reachable;      /* answered on SSH (when wait_ssh) */
    unsigned checked, check_passed, check_failed, unreachable, replaced;
    double hourly_usd;       /* the pool's nodes, summed */
    bool nothing_to_do;      /* the pool was complete already */
    bool interrupted;
} sp_up_result;

/* Brings a pool to its node count. The pool row is created on first use. */
int sp_up(sp_registry *reg, sp_state *st, const sp_pool *pool, const sp_up_opts *opts,
          sp_up_result *res, sp_err *err);

/* Terminates one node (journaled) and marks it gone. */
int sp_node_terminate(sp_registry *reg, sp_state *st, sp_node_row *row, sp_err *err);

typedef struct sp_check_opts {
    unsigned parallel;       /* nodes checked at once (default 16) */
    bool recheck;            /* also nodes that have a verdict already */
    sp_event_fn on_event;
    void *event_ctx;
} sp_check_opts;

typedef struct sp_check_summary {
    unsigned checked, passed, failed, unreachable;
    unsigned *failed_idx;    /* the failing nodes' indices (allocated; the caller frees it) */
} sp_check_summary;

/* Runs the node check on every running node of the pool (those without a verdict, unless
 * recheck) and records each verdict in the state. */
int sp_pool_check(sp_registry *reg, sp_state *st, const sp_pool *pool, const sp_pool_row *row,
                  const sp_check_opts *opts, sp_check_summary *sum, sp_err *err);

typedef struct sp_down_result {
    unsigned terminated, failed;
} sp_down_result;

/* Terminates every instance of the pool that the state or the clouds know (by tags), then
 * forgets the pool when none is left. */
int sp_down(sp_registry *reg, sp_state *st, const sp_pool_row *pool, sp_event_fn on_event,
            void *event_ctx, sp_down_result *res, sp_err *err);

typedef struct sp_refresh_result {
    unsigned seen, adopted, gone;
} sp_refresh_result;

/* Reconciles the state with the clouds: instances tagged with the pool that the state lacks are
 * adopted; nodes the clouds no longer have are marked gone. */
int sp_reconcile(sp_registry *reg, sp_state *st, const sp_pool_row *pool, sp_event_fn on_event,
                 void *event_ctx, sp_refresh_result *res, sp_err *err);

#endif
