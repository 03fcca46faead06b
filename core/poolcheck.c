/*
 * The node check for a whole pool: every running node, in parallel, over SSH for VM clouds;
 * each verdict recorded in the state (the node's verdict, and the whole report in checks).
 */
#include "bootstrap.h"
#include "lifecycle.h"
#include "util.h"

#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define DEFAULT_PARALLEL 16

typedef struct check_run {
    sp_registry *reg;
    sp_state *st;
    const sp_pool *pool;
    const sp_pool_row *row;
    const sp_check_opts *opts;
    sp_node_row *rows;
    size_t n_rows, next;
    char key[PATH_MAX];
    char known_hosts[PATH_MAX];
    pthread_mutex_t lock;
    sp_check_summary *sum;
    sp_err first_err;
} check_run;

static void emit(check_run *c, sp_event_kind kind, const sp_node_row *r, const char *text)
{
    if (!c->opts->on_event)
        return;
    sp_event ev = {kind, (int)r->idx, r, text};
    pthread_mutex_lock(&c->lock);
    c->opts->on_event(c->opts->event_ctx, &ev);
    pthread_mutex_unlock(&c->lock);
}

/* "~/.ssh/id_ed25519" with $HOME. */
static void expand_home(const char *path, char *out, size_t size)
{
    const char *home = getenv("HOME");
    if (path[0] == '~' && path[1] == '/' && home)
        snprintf(out, size, "%s%s", home, path + 1);
    else
        snprintf(out, size, "%s", path);
}

/* The pool's known_hosts file beside the state database: <dir>/ssh/<pool id>.known_hosts. */
static void known_hosts_path(check_run *c)
{
    char dir[PATH_MAX];
    snprintf(dir, sizeof(dir), "%s", sp_state_path(c->st));
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = '\0';
    size_t n = strlen(dir);
    snprintf(dir + n, sizeof(dir) - n, "/ssh");
    mkdir(dir, 0700);
    snprintf(c->known_hosts, sizeof(c->known_hosts), "%s/%s.known_hosts", dir, c->row->id);
}

static void record(check_run *c, sp_node_row *r, const sp_check_result *res)
{
    sp_check_row cr = {.idx = r->idx, .workers = res->workers, .report = res->report};
    snprintf(cr.pool_id, sizeof(cr.pool_id), "%s", r->pool_id);
    snprintf(cr.cloud_id, sizeof(cr.cloud_id), "%s", r->cloud_id);
    snprintf(cr.verdict, sizeof(cr.verdict), "%s", res->verdict);
    snprintf(cr.summary, sizeof(cr.summary), "%s", res->summary);
    snprintf(r->check, sizeof(r->check), "%s", res->verdict);
    sp_err err = {0};
    if (sp_state_check_put(c->st, &cr, &err) || sp_state_node_put(c->st, r, &err)) {
        pthread_mutex_lock(&c->lock);
        if (!c->first_err.code)
            c->first_err = err;
        pthread_mutex_unlock(&c->lock);
    }
}

static void tally(check_run *c, const sp_node_row *r, const sp_check_result *res)
{
    pthread_mutex_lock(&c->lock);
    c->sum->checked++;
    if (sp_check_verdict_passes(res->verdict))
        c->sum->passed++;
    else if (!strcmp(res->verdict, "unreachable"))
        c->sum->unreachable++;
    else
        c->sum->failed_idx[c->sum->failed++] = r->idx;
    pthread_mutex_unlock(&c->lock);
}

/* One node: its SSH target from the provider, then the check. */
static void check_node(check_run *c, sp_node_row *r)
{
    const sp_plugin *p = sp_registry_find(c->reg, r->provider);
    sp_check_result res = {0};
    sp_check_expect e;
    sp_err err = {0};
    sp_ssh_target t = {.struct_size = sizeof(t)};
    sp_node n = {.struct_size = sizeof(n)};
    snprintf(n.id, sizeof(n.id), "%s", r->cloud_id);
    snprintf(n.region, sizeof(n.region), "%s", r->region);
    snprintf(n.public_ip, sizeof(n.public_ip), "%s", r->public_ip);
    snprintf(n.private_ip, sizeof(n.private_ip), "%s", r->private_ip);
    emit(c, SP_EV_CHECKING, r, NULL);
    int rc = sp_check_expect_of_node(c->pool, r, &e, &err);
    if (!rc && (!p || !p->table.ssh_target))
        rc = sp_err_set(&err, SP_E_UNSUPPORTED, "%s offers no SSH access to its nodes, and "
                                                "checks through its exec API are not built",
                        r->provider);
    if (!rc)
        rc = p->table.ssh_target(p->ctx, &n, &t, &err);
    if (!rc) {
        sp_ssh_opts o = {c->pool->ssh_user, c->key[0] ? c->key : NULL, c->pool->ssh_proxy,
                         c->known_hosts, 15};
        rc = sp_bootstrap_ssh(&t, &o, &e, &res, &err);
    }
    if (rc) {
        snprintf(res.verdict, sizeof(res.verdict), "error");
        snprintf(res.summary, sizeof(res.summary), "%s", err.msg);
    }
    record(c, r, &res);
    tally(c, r, &res);
    emit(c, SP_EV_CHECKED, r, res.summary);
    sp_check_result_free(&res);
}

static void *work(void *arg)
{
    check_run *c = arg;
    for (;;) {
        pthread_mutex_lock(&c->lock);
        size_t i = c->next < c->n_rows ? c->next++ : SIZE_MAX;
        pthread_mutex_unlock(&c->lock);
        if (i == SIZE_MAX)
            break;
        check_node(c, &c->rows[i]);
    }
    return NULL;
}

typedef struct pick_ctx {
    check_run *c;
    size_t cap;
} pick_ctx;

static int pick(void *ctx, const sp_node_row *r)
{
    pick_ctx *pc = ctx;
    check_run *c = pc->c;
    bool running = r->cloud_id[0] && !strcmp(r->state, "running");
    if (!running || (r->check[0] && !c->opts->recheck))
        return SP_OK;
    if (c->n_rows == pc->cap) {
        size_t cap = pc->cap ? pc->cap * 2 : 16;
        sp_node_row *grown = realloc(c->rows, cap * sizeof(*grown));
        if (!grown)
            return SP_E_NOMEM;
        c->rows = grown;
        pc->cap = cap;
    }
    c->rows[c->n_rows++] = *r;
    return SP_OK;
}

static void run_threads(check_run *c)
{
    unsigned n = c->opts->parallel ? c->opts->parallel : DEFAULT_PARALLEL;
    sp_run_threads(n > c->n_rows ? (unsigned)c->n_rows : n, work, c);
}

int sp_pool_check(sp_registry *reg, sp_state *st, const sp_pool *pool, const sp_pool_row *row,
                  const sp_check_opts *opts, sp_check_summary *sum, sp_err *err)
{
    memset(sum, 0, sizeof(*sum));
    check_run c = {.reg = reg, .st = st, .pool = pool, .row = row, .opts = opts, .sum = sum};
    pick_ctx pc = {&c, 0};
    int rc = sp_state_nodes(st, row->id, pick, &pc, err);
    if (rc) {
        free(c.rows);
        return rc;
    }
    sum->failed_idx = calloc(c.n_rows + 1, sizeof(*sum->failed_idx));
    if (!sum->failed_idx) {
        free(c.rows);
        return sp_err_set(err, SP_E_NOMEM, "out of memory");
    }
    if (pool->ssh_key)
        expand_home(pool->ssh_key, c.key, sizeof(c.key));
    known_hosts_path(&c);
    pthread_mutex_init(&c.lock, NULL);
    run_threads(&c);
    pthread_mutex_destroy(&c.lock);
    free(c.rows);
    if (c.first_err.code)
        return sp_err_set(err, c.first_err.code, "%s", c.first_err.msg);
    return SP_OK;
}
