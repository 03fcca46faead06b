/*
 * `up`: plan, check quotas, launch the missing nodes in parallel, failing over zone -> region ->
 * provider on capacity errors and skipping what quota forbids, within the budget; then wait for
 * them to run. Every launch is journaled before it is made, with a client token that is the
 * same for the same (pool, node, attempt).
 */
#include "lifecycle.h"

#include "bootstrap.h"
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
#define SP_UP_MAX_BATCH 16  /* nodes per provider batch call, at most */
#define SP_UP_MAX_CHUNK 16  /* nodes a worker takes at once, at most */

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
    size_t chunk;                 /* nodes a worker takes at once */
    bool have_set;                /* the plan's offers are collected */
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
    snprintf(r->accel, sizeof(r->accel), "%s", c->offer.accelerator ? c->offer.accelerator : "");
    r->accel_count = c->offer.accel_count;
    r->accel_mem_mib = c->offer.accel_mem_mib;
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
    req->ssh_public_key = u->opts->ssh_public_key;
}

/* One node's part of a launch call: its request and the journal entry of its intent. */
typedef struct launch_slot {
    sp_node_row *row;
    char token[80], name[128], idx[16];
    sp_tag tags[36];
    sp_launch_request req;
    int64_t op_id;
    sp_node node;
    sp_err err;
} launch_slot;

/* Journals the intent before the call is made. */
static int slot_begin(up_run *u, const sp_cand *c, launch_slot *s, sp_err *call)
{
    sp_node_row *r = s->row;
    /* A node left "launching" by a crash retries with that launch's token: if the call did
     * take effect, the cloud answers with the instance it made instead of a second one. */
    if (strcmp(r->state, "launching") != 0 || !r->attempt)
        r->attempt++;
    sp_state_client_token(u->row->id, r->idx, r->attempt, s->token, sizeof(s->token));
    launch_request(u, c, r, s->token, s->name, sizeof(s->name), s->idx, s->tags, &s->req);
    sp_op_row op = {.node_idx = (int)r->idx};
    snprintf(op.pool_id, sizeof(op.pool_id), "%s", u->row->id);
    snprintf(op.kind, sizeof(op.kind), "launch");
    snprintf(op.provider, sizeof(op.provider), "%s", c->offer.provider);
    snprintf(op.region, sizeof(op.region), "%s", c->offer.region);
    snprintf(op.token, sizeof(op.token), "%s", s->token);
    fill_row(r, c);
    snprintf(r->state, sizeof(r->state), "launching");
    sp_err db = {0};
    if (sp_state_node_put(u->st, r, &db) || sp_state_op_begin(u->st, &op, &s->op_id, &db))
        return sp_err_set(call, SP_E_IO, "%s", db.msg);
    memset(&s->node, 0, sizeof(s->node));
    s->node.struct_size = sizeof(s->node);
    s->err = (sp_err){0};
    emit(u, SP_EV_LAUNCHING, (int)r->idx, r, NULL);
    return SP_OK;
}

/* Journals the outcome and records the node. */
static int slot_end(up_run *u, launch_slot *s, int rc, sp_err *call)
{
    sp_node_row *r = s->row;
    sp_err db = {0};
    sp_state_op_end(u->st, s->op_id, rc ? "error" : "ok", s->node.id, rc ? s->err.msg : "", &db);
    if (rc) {
        /* Settled: the next try is a new attempt with a new token. */
        snprintf(r->state, sizeof(r->state), "wanted");
        *call = s->err;
        call->code = rc;
        return rc;
    }
    snprintf(r->cloud_id, sizeof(r->cloud_id), "%s", s->node.id);
    snprintf(r->public_ip, sizeof(r->public_ip), "%s", s->node.public_ip);
    snprintf(r->private_ip, sizeof(r->private_ip), "%s", s->node.private_ip);
    snprintf(r->state, sizeof(r->state), s->node.state == SP_NODE_RUNNING ? "running" : "pending");
    if (sp_state_node_put(u->st, r, &db))
        return sp_err_set(call, SP_E_IO, "%s", db.msg);
    emit(u, SP_EV_LAUNCHED, (int)r->idx, r, NULL);
    return SP_OK;
}

/* Launches the slots on one offer: in batches where the provider takes them, else one by one.
 * rcs[i] receives each node's outcome. */
static void try_offer(up_run *u, const sp_cand *c, launch_slot *slots, size_t n, int *rcs)
{
    const sp_plugin *p = sp_registry_find(u->reg, c->offer.provider);
    size_t batch = p && p->table.launch_batch && p->table.launch_batch_max > 1
                       ? p->table.launch_batch_max
                       : 1;
    batch = batch > SP_UP_MAX_BATCH ? SP_UP_MAX_BATCH : batch;
    for (size_t first = 0; first < n; first += batch) {
        size_t k = n - first < batch ? n - first : batch, begun = 0;
        const sp_launch_request *reqs[SP_UP_MAX_BATCH];
        sp_node nodes[SP_UP_MAX_BATCH];
        sp_err errs[SP_UP_MAX_BATCH];
        for (size_t i = first; i < first + k; i++) {
            rcs[i] = !p || (!p->table.launch && !p->table.launch_batch)
                         ? sp_err_set(&slots[i].err, SP_E_UNSUPPORTED,
                                      "%s cannot launch nodes yet", c->offer.provider)
                         : slot_begin(u, c, &slots[i], &slots[i].err);
            if (rcs[i] == SP_OK) {
                reqs[begun] = &slots[i].req;
                nodes[begun] = slots[i].node;
                errs[begun++] = (sp_err){0};
            }
        }
        if (begun > 1 || (begun == 1 && !p->table.launch))
            p->table.launch_batch(p->ctx, reqs, begun, nodes, errs);
        else if (begun == 1)
            errs[0].code = p->table.launch(p->ctx, reqs[0], &nodes[0], &errs[0]);
        for (size_t i = first, b = 0; i < first + k; i++) {
            if (rcs[i] != SP_OK)
                continue;
            slots[i].node = nodes[b];
            slots[i].err = errs[b];
            int rc = errs[b++].code;
            if (rc == SP_OK && !slots[i].node.id[0])
                rc = sp_err_set(&slots[i].err, SP_E_PROTOCOL,
                                "%s accepted the launch of %s but named no instance",
                                c->offer.provider, slots[i].name);
            rcs[i] = slot_end(u, &slots[i], rc, &slots[i].err);
        }
    }
}

static bool failover_status(int rc)
{
    return rc == SP_E_CAPACITY || rc == SP_E_QUOTA || rc == SP_E_AUTH ||
           rc == SP_E_UNSUPPORTED || rc == SP_E_THROTTLED || rc == SP_E_NETWORK ||
           rc == SP_E_PROTOCOL || rc == SP_E_NOTFOUND || rc == SP_E_INVALID;
}

/* The nodes of a chunk still without an instance, and their budget reservations. */
static size_t reserve_group(up_run *u, const sp_cand *c, launch_slot *slots, bool *done,
                            size_t n, launch_slot *group, size_t *map)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (done[i] || !reserve_budget(u, c->node_price))
            continue;
        group[k] = slots[i];
        map[k++] = i;
    }
    return k;
}

static void mark_failed(up_run *u, sp_node_row *r, const sp_err *call)
{
    snprintf(r->state, sizeof(r->state), "failed");
    sp_err db;
    sp_state_node_put(u->st, r, &db);
    emit(u, SP_EV_FAILED, (int)r->idx, r,
         call->msg[0] ? call->msg : "no offer within the budget is left to try");
}

/* Walks the plan in order until every node of the chunk has an instance: all nodes walk the
 * same plan, so the nodes still missing go together to the next offer. outcome[i] receives
 * each node's end: SP_OK, SP_E_CANCELLED, or why it has no instance. Returns how many launched. */
static size_t launch_chunk(up_run *u, launch_slot *slots, size_t n, int *outcome)
{
    bool done[SP_UP_MAX_CHUNK] = {false};
    launch_slot group[SP_UP_MAX_CHUNK];
    size_t map[SP_UP_MAX_CHUNK], launched = 0;
    int rcs[SP_UP_MAX_CHUNK];
    sp_err last = {0};
    for (size_t ci = 0; ci < u->set.n && launched < n; ci++) {
        const sp_cand *c = &u->set.items[ci];
        if (c->over_budget || is_blocked(u, c))
            continue;
        if (u->opts->interrupted && *u->opts->interrupted) {
            for (size_t i = 0; i < n; i++)
                outcome[i] = done[i] ? SP_OK : SP_E_CANCELLED;
            return launched;
        }
        size_t k = reserve_group(u, c, slots, done, n, group, map);
        if (!k)
            continue;
        try_offer(u, c, group, k, rcs);
        int refusal = SP_OK;
        for (size_t g = 0; g < k; g++) {
            size_t i = map[g];
            slots[i] = group[g];
            if (rcs[g] == SP_OK) {
                done[i] = true;
                outcome[i] = SP_OK;
                launched++;
                continue;
            }
            release_budget(u, c->node_price);
            last = group[g].err;
            last.code = rcs[g];
            if (rcs[g] == SP_E_IO || !failover_status(rcs[g])) {
                pthread_mutex_lock(&u->lock);
                if (!u->first_err.code)
                    u->first_err = last;
                pthread_mutex_unlock(&u->lock);
                for (size_t j = 0; j < n; j++)
                    if (!done[j])
                        outcome[j] = rcs[g];
                return launched;
            }
            refusal = rcs[g];
            emit(u, SP_EV_FAILOVER, (int)slots[i].row->idx, slots[i].row, last.msg);
        }
        if (refusal)
            block(u, c, refusal == SP_E_AUTH || refusal == SP_E_UNSUPPORTED ? SP_E_AUTH
                                                                            : refusal);
    }
    for (size_t i = 0; i < n; i++)
        if (!done[i]) {
            outcome[i] = SP_E_CAPACITY;
            mark_failed(u, slots[i].row, &last);
        }
    return launched;
}

/* ---- Workers --------------------------------------------------------------------------------- */

typedef struct worker {
    up_run *u;
    sp_node_row *rows; /* indexed by node index */
} worker;

/* Up to `chunk` node indices for one worker. */
static size_t take(up_run *u, unsigned *idx, size_t chunk)
{
    pthread_mutex_lock(&u->lock);
    size_t k = 0;
    while (k < chunk && u->next < u->n_todo)
        idx[k++] = u->todo[u->next++];
    pthread_mutex_unlock(&u->lock);
    return k;
}

static void *work(void *arg)
{
    worker *w = arg;
    unsigned idx[SP_UP_MAX_CHUNK];
    launch_slot *slots = calloc(SP_UP_MAX_CHUNK, sizeof(*slots));
    int outcome[SP_UP_MAX_CHUNK];
    size_t k;
    while (slots && (k = take(w->u, idx, w->u->chunk)) > 0) {
        for (size_t i = 0; i < k; i++)
            slots[i].row = &w->rows[idx[i]];
        launch_chunk(w->u, slots, k, outcome);
        pthread_mutex_lock(&w->u->lock);
        for (size_t i = 0; i < k; i++) {
            if (outcome[i] == SP_OK)
                w->u->res->launched_now++;
            else if (outcome[i] == SP_E_CANCELLED)
                w->u->res->interrupted = true;
            else
                w->u->res->failed++;
        }
        pthread_mutex_unlock(&w->u->lock);
    }
    free(slots);
    sp_http_thread_done();
    return NULL;
}

/* How many nodes a worker takes at once: one, unless a provider in the plan launches several
 * per call; then enough to give every worker a share, up to that provider's batch size. */
static size_t chunk_size(up_run *u, unsigned workers)
{
    uint32_t most = 1;
    for (size_t i = 0; i < u->set.n; i++) {
        const sp_plugin *p = sp_registry_find(u->reg, u->set.items[i].offer.provider);
        if (p && p->table.launch_batch && p->table.launch_batch_max > most)
            most = p->table.launch_batch_max;
    }
    size_t share = workers ? (u->n_todo + workers - 1) / workers : 1;
    size_t k = share < most ? share : most;
    k = k < 1 ? 1 : k;
    return k > SP_UP_MAX_CHUNK ? SP_UP_MAX_CHUNK : k;
}

static void run_workers(up_run *u, sp_node_row *rows)
{
    unsigned n = u->opts->parallel ? u->opts->parallel : DEFAULT_PARALLEL;
    if (n > u->n_todo)
        n = u->n_todo;
    worker w = {u, rows};
    u->chunk = chunk_size(u, n);
    unsigned chunks = (unsigned)((u->n_todo + u->chunk - 1) / u->chunk);
    sp_run_threads(chunks < n ? chunks : n, work, &w);
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

/* Where a node's SSH answers, the user's ssh config applied; proxied nodes are taken as ready
 * (the check's own connection then tells). */
typedef struct ssh_addr {
    bool known, proxied;
    char host[256];
    unsigned port;
} ssh_addr;

static bool ssh_ready(up_run *u, const sp_node_row *r, ssh_addr *a)
{
    const sp_plugin *p = sp_registry_find(u->reg, r->provider);
    if (!a->known) {
        sp_node n = {.struct_size = sizeof(n)};
        snprintf(n.id, sizeof(n.id), "%s", r->cloud_id);
        snprintf(n.region, sizeof(n.region), "%s", r->region);
        snprintf(n.public_ip, sizeof(n.public_ip), "%s", r->public_ip);
        snprintf(n.private_ip, sizeof(n.private_ip), "%s", r->private_ip);
        sp_ssh_target t = {.struct_size = sizeof(t)};
        sp_err err;
        if (p->table.ssh_target(p->ctx, &n, &t, &err) != SP_OK || !t.host[0])
            return false;
        sp_ssh_opts o = {u->pool->ssh_user, u->pool->ssh_key, u->pool->ssh_proxy, NULL, 15};
        sp_ssh_resolve(&t, &o, a->host, sizeof(a->host), &a->port, &a->proxied);
        a->known = true;
    }
    return a->proxied || port_open(a->host, a->port, 2000);
}

/* VM nodes are ready for the node check when their SSH port answers. */
static unsigned wait_ssh(up_run *u, sp_node_row *rows)
{
    unsigned wait_s = u->opts->wait_s ? u->opts->wait_s : DEFAULT_WAIT_S, ready = 0;
    time_t until = time(NULL) + (time_t)wait_s;
    bool *done = calloc(u->pool->nodes, sizeof(*done));
    ssh_addr *addr = calloc(u->pool->nodes, sizeof(*addr));
    for (bool first = true; done && addr && (first || time(NULL) < until); first = false) {
        unsigned left = 0;
        for (unsigned i = 0; i < u->pool->nodes; i++) {
            const sp_plugin *p = sp_registry_find(u->reg, rows[i].provider);
            if (done[i] || !alive(&rows[i]) || !p || !p->table.ssh_target)
                continue;
            if (ssh_ready(u, &rows[i], &addr[i])) {
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
    free(addr);
    return ready;
}

static int launch_missing(up_run *u, sp_node_row *rows, sp_err *err)
{
    free(u->todo);
    u->n_todo = u->next = 0;
    u->todo = calloc(u->pool->nodes, sizeof(*u->todo));
    if (!u->todo)
        return sp_err_set(err, SP_E_NOMEM, "out of memory");
    for (unsigned i = 0; i < u->pool->nodes; i++)
        if (!alive(&rows[i]))
            u->todo[u->n_todo++] = i;
    int rc = SP_OK;
    if (!u->have_set) {
        sp_offers_request req;
        sp_offers_request_of_pool(u->pool, &req);
        rc = sp_offers_collect(u->reg, &req, &u->set, err);
        u->have_set = rc == SP_OK;
    }
    if (!rc && u->opts->check_quota)
        check_quotas(u, u->n_todo);
    if (!rc)
        run_workers(u, rows);
    if (!rc && u->first_err.code)
        rc = sp_err_set(err, u->first_err.code, "%s", u->first_err.msg);
    return rc;
}

/* ---- The node check ---------------------------------------------------------------------- */

#define MAX_REPLACE_ROUNDS 2

/* A node that failed its check is terminated and launched again elsewhere: the same instance
 * type in that region is not tried again (a wrong GPU or driver there is rarely a one-off). */
static int replace_node(up_run *u, sp_node_row *r, sp_err *err)
{
    for (size_t i = 0; i < u->set.n; i++) {
        const sp_cand *c = &u->set.items[i];
        if (!strcmp(c->offer.provider, r->provider) && !strcmp(c->offer.region, r->region) &&
            !strcmp(c->offer.instance_type, r->instance_type))
            block(u, c, SP_E_CAPACITY);
    }
    emit(u, SP_EV_REPLACING, (int)r->idx, r, r->check);
    int rc = sp_node_terminate(u->reg, u->st, r, err);
    if (rc)
        return rc;
    release_budget(u, r->price);
    snprintf(r->state, sizeof(r->state), "wanted");
    r->check[0] = '\0';
    r->cloud_id[0] = r->public_ip[0] = r->private_ip[0] = '\0';
    u->res->replaced++;
    return sp_state_node_put(u->st, r, err);
}

static void count_verdicts(up_run *u, const sp_node_row *rows)
{
    sp_up_result *res = u->res;
    res->checked = res->check_passed = res->check_failed = res->unreachable = 0;
    for (unsigned i = 0; i < u->pool->nodes; i++) {
        const char *v = rows[i].check;
        if (!alive(&rows[i]) || !v[0])
            continue;
        res->checked++;
        if (sp_check_verdict_passes(v))
            res->check_passed++;
        else if (!strcmp(v, "unreachable"))
            res->unreachable++;
        else
            res->check_failed++;
    }
}

/* Checks every running node; under on_fail: replace, what fails is replaced (twice at most). */
static int check_nodes(up_run *u, sp_node_row *rows, sp_err *err)
{
    int rc = SP_OK;
    for (unsigned round = 0; !rc; round++) {
        sp_check_opts co = {u->opts->parallel, false, u->opts->on_event, u->opts->event_ctx};
        sp_check_summary sum;
        rc = sp_pool_check(u->reg, u->st, u->pool, u->row, &co, &sum, err);
        if (!rc)
            rc = load_rows(u, rows, err);
        bool again = !rc && sum.failed && u->pool->on_fail == SP_ON_FAIL_REPLACE &&
                     round < MAX_REPLACE_ROUNDS && !(u->opts->interrupted && *u->opts->interrupted);
        for (unsigned i = 0; again && !rc && i < sum.failed; i++)
            rc = replace_node(u, &rows[sum.failed_idx[i]], err);
        free(sum.failed_idx);
        if (!again || rc)
            break;
        unsigned before = u->res->launched_now;
        rc = launch_missing(u, rows, err);
        if (!rc && u->res->launched_now > before)
            rc = wait_running(u, rows, err);
        if (!rc)
            u->res->reachable = wait_ssh(u, rows);
    }
    count_verdicts(u, rows);
    return rc;
}

static void settle(up_run *u, sp_node_row *rows, sp_up_result *res)
{
    res->running = count_alive(rows, u->pool->nodes, &res->hourly_usd);
    bool bad_check = res->check_failed && u->pool->on_fail == SP_ON_FAIL_FAIL;
    const char *state = bad_check                       ? "failed"
                        : res->running == u->pool->nodes ? "ready"
                        : res->running                   ? "partial"
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
    if (!rc && (opts->wait_ssh || opts->bootstrap))
        res->reachable = wait_ssh(&u, rows);
    if (!rc && opts->bootstrap)
        rc = check_nodes(&u, rows, err);
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
