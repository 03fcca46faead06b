/*
 * `up`: plan, check quotas, launch the missing nodes in parallel, failing over zone -> region ->
 * provider on capacity errors and skipping what quota forbids, within the budget; then wait for
 * them to run. Every launch is journaled before it is made, with a client token that is the
 * same for the same (pool, node, attempt).
 */
#include "lifecycle.h"

#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define DEFAULT_PARALLEL 16
#define DEFAULT_WAIT_S 600
#define MAX_BLOCKED 512

typedef struct up_run {
    sp_registry *reg;
    sp_state *st;
    const sp_pool *pool;
    const sp_pool_row *row;
    const sp_up_opts *opts;
    sp_offer_set set;
    pthread_mutex_t lock;
    char *blocked[MAX_BLOCKED];   /* offers or places that refused: "aws|us-east-1|..." */
    size_t n_blocked;
    double committed_usd;         /* the hourly price of the nodes launched or kept */
    unsigned next;                /* next entry of todo for a worker to take */
    unsigned *todo;               /* node indices to launch */
    unsigned n_todo;
    sp_up_result *res;
    sp_err first_err;
} up_run;

static void emit(up_run *u, sp_event_kind kind, int node, const sp_node_row *row,
                 const char *text)
{
    if (!u->opts->on_event)
        return;
    sp_event ev = {kind, node, row, text};
    pthread_mutex_lock(&u->lock);
    u->opts->on_event(u->opts->event_ctx, &ev);
    pthread_mutex_unlock(&u->lock);
}

/* ---- What refused ------------------------------------------------------------------------- */

/* Capacity: that offer in that zone. Quota: the family in that region and market. Auth: the
 * whole provider. */
static void block_key(const sp_cand *c, int status, char *key, size_t size)
{
    const sp_offer *o = &c->offer;
    char family[32];
    snprintf(family, sizeof(family), "%s", o->instance_type);
    char *dot = strchr(family, '.');
    if (dot)
        *dot = '\0';
    const char *market = c->market == SP_MARKET_SPOT ? "spot" : "on-demand";
    if (status == SP_E_AUTH)
        snprintf(key, size, "%s", o->provider);
    else if (status == SP_E_QUOTA)
        snprintf(key, size, "%s|%s|%s|%s", o->provider, o->region, market, family);
    else
        snprintf(key, size, "%s|%s|%s|%s|%s", o->provider, o->region, o->zone,
                 o->instance_type, market);
}

static bool is_blocked(up_run *u, const sp_cand *c)
{
    static const int kinds[] = {SP_E_AUTH, SP_E_QUOTA, SP_E_CAPACITY};
    bool hit = false;
    pthread_mutex_lock(&u->lock);
    for (size_t k = 0; k < 3 && !hit; k++) {
        char key[256];
        block_key(c, kinds[k], key, sizeof(key));
        for (size_t i = 0; i < u->n_blocked && !hit; i++)
            hit = strcmp(u->blocked[i], key) == 0;
    }
    pthread_mutex_unlock(&u->lock);
    return hit;
}

static void block(up_run *u, const sp_cand *c, int status)
{
    char key[256];
    block_key(c, status, key, sizeof(key));
    pthread_mutex_lock(&u->lock);
    bool known = false;
    for (size_t i = 0; i < u->n_blocked && !known; i++)
        known = strcmp(u->blocked[i], key) == 0;
    if (!known && u->n_blocked < MAX_BLOCKED)
        u->blocked[u->n_blocked++] = sp_strdup(key);
    pthread_mutex_unlock(&u->lock);
}

/* The budget is for the whole pool: a node is launched only if its price still fits. */
static bool reserve_budget(up_run *u, double price)
{
    double max = u->pool->max_hourly_usd;
    pthread_mutex_lock(&u->lock);
    bool ok = max <= 0 || u->committed_usd + price <= max + 1e-9;
    if (ok)
        u->committed_usd += price;
    pthread_mutex_unlock(&u->lock);
    return ok;
}

static void release_budget(up_run *u, double price)
{
    pthread_mutex_lock(&u->lock);
    u->committed_usd -= price;
    pthread_mutex_unlock(&u->lock);
}

/* ---- One launch ---------------------------------------------------------------------------- */

static void fill_row(sp_node_row *r, const sp_cand *c)
{
    snprintf(r->provider, sizeof(r->provider), "%s", c->offer.provider);
    snprintf(r->region, sizeof(r->region), "%s", c->offer.region);
    snprintf(r->zone, sizeof(r->zone), "%s", c->offer.zone);
    snprintf(r->instance_type, sizeof(r->instance_type), "%s", c->offer.instance_type);
    snprintf(r->market, sizeof(r->market), "%s",
             c->market == SP_MARKET_SPOT ? "spot" : "on-demand");
    r->price = c->node_price;
}

static void launch_request(up_run *u, const sp_cand *c, sp_node_row *r, const char *token,
                           char *name, size_t nsize, char *idx_text, sp_tag *tags,
                           sp_launch_request *req)
{
    snprintf(name, nsize, "%s-%u", u->pool->name, r->idx);
    snprintf(idx_text, 16, "%u", r->idx);
    tags[0] = (sp_tag){SP_TAG_POOL, u->pool->name};
    tags[1] = (sp_tag){SP_TAG_POOL_ID, u->row->id};
    tags[2] = (sp_tag){SP_TAG_NODE, idx_text};
    size_t n = 3;
    for (size_t i = 0; i < u->pool->n_tags && n < 35; i++)
        tags[n++] = (sp_tag){u->pool->tag_keys[i], u->pool->tag_values[i]};
    memset(req, 0, sizeof(*req));
    req->struct_size = sizeof(*req);
    req->offer = &c->offer;
    req->market = c->market;
    req->name = name;
    req->client_token = token;
    req->tags = tags;
    req->n_tags = n;
    req->image = u->pool->image;
    req->ssh_user = u->pool->ssh_user;
}

/* Journal the intent, make the call, journal the outcome, record the node. */
static int try_offer(up_run *u, const sp_cand *c, sp_node_row *r, sp_err *call)
{
    const sp_plugin *p = sp_registry_find(u->reg, c->offer.provider);
    if (!p || !p->table.launch)
        return sp_err_set(call, SP_E_UNSUPPORTED, "%s cannot launch nodes yet",
                          c->offer.provider);
    char token[80], name[128], idx[16];
    sp_tag tags[36];
    sp_launch_request req;
    /* A node left "launching" by a crash retries with that launch's token: if the call did
     * take effect, the cloud answers with the instance it made instead of a second one. */
    if (strcmp(r->state, "launching") != 0 || !r->attempt)
        r->attempt++;
    sp_state_client_token(u->row->id, r->idx, r->attempt, token, sizeof(token));
    launch_request(u, c, r, token, name, sizeof(name), idx, tags, &req);
    sp_op_row op = {.node_idx = (int)r->idx};
    snprintf(op.pool_id, sizeof(op.pool_id), "%s", u->row->id);
    snprintf(op.kind, sizeof(op.kind), "launch");
    snprintf(op.provider, sizeof(op.provider), "%s", c->offer.provider);
    snprintf(op.region, sizeof(op.region), "%s", c->offer.region);
    snprintf(op.token, sizeof(op.token), "%s", token);
    fill_row(r, c);
    snprintf(r->state, sizeof(r->state), "launching");
    int64_t id;
    sp_err db = {0};
    if (sp_state_node_put(u->st, r, &db) || sp_state_op_begin(u->st, &op, &id, &db))
        return sp_err_set(call, SP_E_IO, "%s", db.msg);
    emit(u, SP_EV_LAUNCHING, (int)r->idx, r, NULL);
    sp_node node = {.struct_size = sizeof(node)};
    int rc = p->table.launch(p->ctx, &req, &node, call);
    sp_state_op_end(u->st, id, rc ? "error" : "ok", node.id, rc ? call->msg : "", &db);
    if (rc) {
        /* Settled: the next try is a new attempt with a new token. */
        snprintf(r->state, sizeof(r->state), "wanted");
        return rc;
    }
    snprintf(r->cloud_id, sizeof(r->cloud_id), "%s", node.id);
    snprintf(r->public_ip, sizeof(r->public_ip), "%s", node.public_ip);
    snprintf(r->private_ip, sizeof(r->private_ip), "%s", node.private_ip);
    snprintf(r->state, sizeof(r->state), node.state == SP_NODE_RUNNING ? "running" : "pending");
    if (sp_state_node_put(u->st, r, &db))
        return sp_err_set(call, SP_E_IO, "%s", db.msg);
    emit(u, SP_EV_LAUNCHED, (int)r->idx, r, NULL);
    return SP_OK;
}

static bool failover_status(int rc)
{
    return rc == SP_E_CAPACITY || rc == SP_E_QUOTA || rc == SP_E_AUTH ||
           rc == SP_E_UNSUPPORTED || rc == SP_E_THROTTLED || rc == SP_E_NETWORK ||
           rc == SP_E_PROTOCOL || rc == SP_E_NOTFOUND || rc == SP_E_INVALID;
}

/* Walks the plan in order until one offer takes the node. */
static int launch_node(up_run *u, sp_node_row *r)
{
    sp_err call = {0};
    for (size_t i = 0; i < u->set.n; i++) {
        const sp_cand *c = &u->set.items[i];
        if (c->over_budget || is_blocked(u, c))
            continue;
        if (u->opts->interrupted && *u->opts->interrupted)
            return SP_E_CANCELLED;
        if (!reserve_budget(u, c->node_price))
            continue;
        int rc = try_offer(u, c, r, &call);
        if (rc == SP_OK)
            return SP_OK;
        release_budget(u, c->node_price);
        if (rc == SP_E_IO || !failover_status(rc)) {
            u->first_err = call;
            return rc;
        }
        block(u, c, rc == SP_E_AUTH || rc == SP_E_UNSUPPORTED ? SP_E_AUTH : rc);
        emit(u, SP_EV_FAILOVER, (int)r->idx, r, call.msg);
    }
    snprintf(r->state, sizeof(r->state), "failed");
    sp_err db;
    sp_state_node_put(u->st, r, &db);
    emit(u, SP_EV_FAILED, (int)r->idx, r,
         call.msg[0] ? call.msg : "no offer within the budget is left to try");
    return SP_E_CAPACITY;
}

/* ---- Workers --------------------------------------------------------------------------------- */

typedef struct worker {
    up_run *u;
    sp_node_row *rows; /* indexed by node index */
} worker;

static bool take(up_run *u, unsigned *idx)
{
    pthread_mutex_lock(&u->lock);
    bool got = u->next < u->n_todo;
    if (got)
        *idx = u->todo[u->next++];
    pthread_mutex_unlock(&u->lock);
    return got;
}

static void *work(void *arg)
{
    worker *w = arg;
    unsigned idx;
    while (take(w->u, &idx)) {
        int rc = launch_node(w->u, &w->rows[idx]);
        pthread_mutex_lock(&w->u->lock);
        if (rc == SP_OK)
            w->u->res->launched_now++;
        else if (rc == SP_E_CANCELLED)
            w->u->res->interrupted = true;
        else
            w->u->res->failed++;
        pthread_mutex_unlock(&w->u->lock);
    }
    sp_http_thread_done();
    return NULL;
}

static void run_workers(up_run *u, sp_node_row *rows)
{
    unsigned n = u->opts->parallel ? u->opts->parallel : DEFAULT_PARALLEL;
    if (n > u->n_todo)
        n = u->n_todo;
    pthread_t threads[64];
    bool started[64] = {false};
    worker w = {u, rows};
    for (unsigned i = 0; i < n && i < 64; i++)
        started[i] = pthread_create(&threads[i], NULL, work, &w) == 0;
    if (n && !started[0])
        work(&w);
    for (unsigned i = 0; i < n && i < 64; i++)
        if (started[i])
            pthread_join(threads[i], NULL);
}

/* ---- The pool --------------------------------------------------------------------------------- */

static bool alive(const sp_node_row *r)
{
    return r->cloud_id[0] && (!strcmp(r->state, "running") || !strcmp(r->state, "pending"));
}

typedef struct rows_ctx {
    sp_node_row *rows;
    unsigned n;
} rows_ctx;

static int keep_row(void *ctx, const sp_node_row *r)
{
    rows_ctx *c = ctx;
    if (r->idx < c->n)
        c->rows[r->idx] = *r;
    return SP_OK;
}

static int load_rows(up_run *u, sp_node_row *rows, sp_err *err)
{
    for (unsigned i = 0; i < u->pool->nodes; i++) {
        memset(&rows[i], 0, sizeof(rows[i]));
        snprintf(rows[i].pool_id, sizeof(rows[i].pool_id), "%s", u->row->id);
        rows[i].idx = i;
        snprintf(rows[i].state, sizeof(rows[i].state), "wanted");
    }
    rows_ctx c = {rows, u->pool->nodes};
    return sp_state_nodes(u->st, u->row->id, keep_row, &c, err);
}

static int find_or_create(sp_state *st, const sp_pool *pool, sp_pool_row *row, sp_err *err)
{
    int rc = sp_state_pool_find(st, pool->name, row, err);
    if (rc == SP_E_NOTFOUND)
        rc = sp_state_pool_create(st, pool->name, pool->path, pool->nodes, row, err);
    return rc;
}

/* Regions whose quota cannot hold the missing nodes are skipped, with the quota named. */
static void check_quotas(up_run *u, unsigned missing)
{
    char done[32][128];
    size_t n_done = 0;
    for (size_t i = 0; i < u->set.n && n_done < 32; i++) {
        const sp_cand *c = &u->set.items[i];
        const sp_plugin *p = sp_registry_find(u->reg, c->offer.provider);
        char key[128];
        snprintf(key, sizeof(key), "%s|%s|%d", c->offer.provider, c->offer.region, c->market);
        bool seen = false;
        for (size_t k = 0; k < n_done && !seen; k++)
            seen = !strcmp(done[k], key);
        if (seen || c->over_budget || !p || !p->table.quota)
            continue;
        snprintf(done[n_done++], sizeof(done[0]), "%s", key);
        sp_quota_query q = {sizeof(q), &c->offer, missing, c->market};
        sp_quota_report r;
        sp_err err = {0};
        if (p->table.quota(p->ctx, &q, &r, &err) != SP_OK || r.verdict != SP_VERDICT_SHORT)
            continue;
        block(u, c, SP_E_QUOTA);
        char text[SP_ERR_MSG_MAX + 256];
        snprintf(text, sizeof(text), "skipping %s %s (%s): quota %s allows %.0f %s, %.0f in use, "
                                     "%.0f needed; %s",
                 c->offer.provider, c->offer.region,
                 c->market == SP_MARKET_SPOT ? "spot" : "on-demand", r.quota_code, r.limit,
                 r.unit, r.used, r.needed, r.fix);
        emit(u, SP_EV_INFO, -1, NULL, text);
    }
}

static unsigned count_alive(const sp_node_row *rows, unsigned n, double *usd)
{
    unsigned alive_n = 0;
    *usd = 0;
    for (unsigned i = 0; i < n; i++)
        if (alive(&rows[i])) {
            alive_n++;
            *usd += rows[i].price;
        }
    return alive_n;
}

/* Polls the clouds until every launched node runs, or the wait is over. */
static int wait_running(up_run *u, sp_node_row *rows, sp_err *err)
{
    unsigned wait_s = u->opts->wait_s ? u->opts->wait_s : DEFAULT_WAIT_S;
    time_t until = time(NULL) + (time_t)wait_s;
    for (unsigned delay_ms = 250;; delay_ms = delay_ms < 4000 ? delay_ms * 2 : 5000) {
        sp_refresh_result seen;
        int rc = sp_reconcile(u->reg, u->st, u->row, NULL, NULL, &seen, err);
        if (!rc)
            rc = load_rows(u, rows, err);
        if (rc)
            return rc;
        unsigned pending = 0;
        for (unsigned i = 0; i < u->pool->nodes; i++)
            pending += !strcmp(rows[i].state, "pending");
        if (!pending || time(NULL) >= until)
            return SP_OK;
        struct timespec ts = {delay_ms / 1000, (long)(delay_ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
    }
}

/* Whether host:port accepts a TCP connection within timeout_ms. */
static bool port_open(const char *host, unsigned port, int timeout_ms)
{
    char service[8];
    snprintf(service, sizeof(service), "%u", port);
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai = NULL;
    if (getaddrinfo(host, service, &hints, &ai) != 0 || !ai)
        return false;
    int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    bool open_ = false;
    if (fd >= 0) {
        int rc = connect(fd, ai->ai_addr, ai->ai_addrlen);
        struct pollfd p = {fd, POLLOUT, 0};
        int soerr = 0;
        socklen_t len = sizeof(soerr);
        open_ = rc == 0 || (errno == EINPROGRESS && poll(&p, 1, timeout_ms) == 1 &&
                            getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) == 0 && !soerr);
        close(fd);
    }
    freeaddrinfo(ai);
    return open_;
}

/* VM nodes are ready for the node check when their SSH port answers. */
static unsigned wait_ssh(up_run *u, sp_node_row *rows)
{
    unsigned wait_s = u->opts->wait_s ? u->opts->wait_s : DEFAULT_WAIT_S, ready = 0;
    time_t until = time(NULL) + (time_t)wait_s;
    bool *done = calloc(u->pool->nodes, sizeof(*done));
    for (bool first = true; done && (first || time(NULL) < until); first = false) {
        unsigned left = 0;
        for (unsigned i = 0; i < u->pool->nodes; i++) {
            const sp_plugin *p = sp_registry_find(u->reg, rows[i].provider);
            if (done[i] || !alive(&rows[i]) || !p || !p->table.ssh_target)
                continue;
            sp_node n = {.struct_size = sizeof(n)};
            snprintf(n.id, sizeof(n.id), "%s", rows[i].cloud_id);
            snprintf(n.public_ip, sizeof(n.public_ip), "%s", rows[i].public_ip);
            snprintf(n.private_ip, sizeof(n.private_ip), "%s", rows[i].private_ip);
            sp_ssh_target t;
            sp_err err;
            if (p->table.ssh_target(p->ctx, &n, &t, &err) == SP_OK &&
                port_open(t.host, t.port, 2000)) {
                done[i] = true;
                ready++;
                emit(u, SP_EV_RUNNING, (int)i, &rows[i], "answers on SSH");
            } else
                left++;
        }
        if (!left)
            break;
        sleep(2);
    }
    free(done);
    return ready;
}

static int launch_missing(up_run *u, sp_node_row *rows, sp_err *err)
{
    unsigned *todo = calloc(u->pool->nodes, sizeof(*todo));
    if (!todo)
        return sp_err_set(err, SP_E_NOMEM, "out of memory");
    for (unsigned i = 0; i < u->pool->nodes; i++)
        if (!alive(&rows[i]))
            todo[u->n_todo++] = i;
    u->todo = todo;
    sp_offers_request req;
    sp_offers_request_of_pool(u->pool, &req);
    int rc = sp_offers_collect(u->reg, &req, &u->set, err);
    if (!rc && u->opts->check_quota)
        check_quotas(u, u->n_todo);
    if (!rc)
        run_workers(u, rows);
    if (!rc && u->first_err.code)
        rc = sp_err_set(err, u->first_err.code, "%s", u->first_err.msg);
    return rc;
}

static void settle(up_run *u, sp_node_row *rows, sp_up_result *res)
{
    res->running = count_alive(rows, u->pool->nodes, &res->hourly_usd);
    const char *state = res->running == u->pool->nodes ? "ready"
                        : res->running                 ? "partial"
                                                       : "failed";
    sp_err ignored;
    sp_state_pool_set(u->st, u->row->id, state, &ignored);
}

int sp_up(sp_registry *reg, sp_state *st, const sp_pool *pool, const sp_up_opts *opts,
          sp_up_result *res, sp_err *err)
{
    memset(res, 0, sizeof(*res));
    res->wanted = pool->nodes;
    sp_pool_row row;
    int rc = find_or_create(st, pool, &row, err);
    if (rc)
        return rc;
    up_run u = {.reg = reg, .st = st, .pool = pool, .row = &row, .opts = opts, .res = res};
    pthread_mutex_init(&u.lock, NULL);
    sp_node_row *rows = calloc(pool->nodes, sizeof(*rows));
    sp_refresh_result rec = {0};
    if (!rows)
        rc = sp_err_set(err, SP_E_NOMEM, "out of memory");
    /* What an earlier run left, crashed or not, is found first: never launched twice. */
    if (!rc)
        rc = sp_reconcile(reg, st, &row, opts->on_event, opts->event_ctx, &rec, err);
    res->adopted = rec.adopted;
    if (!rc)
        rc = load_rows(&u, rows, err);
    if (!rc && count_alive(rows, pool->nodes, &u.committed_usd) == pool->nodes)
        res->nothing_to_do = true;
    else if (!rc) {
        sp_state_pool_set(st, row.id, "launching", err);
        rc = launch_missing(&u, rows, err);
        if (!rc && res->launched_now)
            rc = wait_running(&u, rows, err);
    }
    if (!rc && opts->wait_ssh)
        res->reachable = wait_ssh(&u, rows);
    if (rows)
        settle(&u, rows, res);
    free(rows);
    free(u.todo);
    sp_offer_set_free(&u.set);
    for (size_t i = 0; i < u.n_blocked; i++)
        free(u.blocked[i]);
    pthread_mutex_destroy(&u.lock);
    return rc;
}
