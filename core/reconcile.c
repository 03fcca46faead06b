/*
 * What the clouds say about a pool, against what the state says: adoption of instances the
 * state lacks (a crash between a launch and its record), nodes gone from the clouds, the end
 * of journal entries a crash left open, and teardown.
 */
#include "lifecycle.h"

#include "util.h"

#include <stdlib.h>
#include <string.h>

#define MAX_PLACES 64
#define MAX_ROWS 1024

typedef struct place {
    char provider[33];
    char region[64];
} place;

typedef struct pool_view {
    const sp_pool_row *pool;
    sp_node_row *rows;        /* the state's nodes, by position */
    size_t n_rows;
    place places[MAX_PLACES]; /* where the pool has, or may have, instances */
    size_t n_places;
} pool_view;

static void add_place(pool_view *v, const char *provider, const char *region)
{
    if (!*provider || !*region)
        return;
    for (size_t i = 0; i < v->n_places; i++)
        if (!strcmp(v->places[i].provider, provider) && !strcmp(v->places[i].region, region))
            return;
    if (v->n_places == MAX_PLACES)
        return;
    snprintf(v->places[v->n_places].provider, sizeof(v->places[0].provider), "%s", provider);
    snprintf(v->places[v->n_places].region, sizeof(v->places[0].region), "%s", region);
    v->n_places++;
}

static int collect_row(void *ctx, const sp_node_row *r)
{
    pool_view *v = ctx;
    if (v->n_rows == MAX_ROWS)
        return SP_OK;
    v->rows[v->n_rows++] = *r;
    add_place(v, r->provider, r->region);
    return SP_OK;
}

static int collect_op_place(void *ctx, const sp_op_row *r)
{
    add_place(ctx, r->provider, r->region);
    return SP_OK;
}

static int view_load(sp_state *st, const sp_pool_row *pool, pool_view *v, sp_err *err)
{
    memset(v, 0, sizeof(*v));
    v->pool = pool;
    v->rows = calloc(MAX_ROWS, sizeof(*v->rows));
    if (!v->rows)
        return sp_err_set(err, SP_E_NOMEM, "out of memory");
    int rc = sp_state_nodes(st, pool->id, collect_row, v, err);
    if (!rc)
        rc = sp_state_ops_unfinished(st, pool->id, collect_op_place, v, err);
    return rc;
}

static sp_node_row *row_of(pool_view *v, unsigned idx)
{
    for (size_t i = 0; i < v->n_rows; i++)
        if (v->rows[i].idx == idx)
            return &v->rows[i];
    return NULL;
}

/* Node names are "<pool>-<index>": the index is what follows the last '-'. */
static bool node_index(const char *name, unsigned *idx)
{
    const char *dash = strrchr(name, '-');
    char *end;
    if (!dash || !dash[1])
        return false;
    unsigned long n = strtoul(dash + 1, &end, 10);
    if (*end || n > 100000)
        return false;
    *idx = (unsigned)n;
    return true;
}

typedef struct seen_ctx {
    pool_view *v;
    sp_state *st;
    const place *where;
    sp_refresh_result *res;
    sp_event_fn on_event;
    void *event_ctx;
    char *seen_ids;           /* "\n"-joined cloud ids seen, for "gone" */
    size_t seen_len, seen_cap;
    sp_err *err;
} seen_ctx;

static void remember(seen_ctx *c, const char *id)
{
    size_t n = strlen(id);
    if (c->seen_len + n + 2 > c->seen_cap) {
        size_t cap = (c->seen_cap + n + 2) * 2;
        char *grown = realloc(c->seen_ids, cap);
        if (!grown)
            return;
        c->seen_ids = grown;
        c->seen_cap = cap;
    }
    c->seen_ids[c->seen_len++] = '\n';
    memcpy(c->seen_ids + c->seen_len, id, n);
    c->seen_len += n;
    c->seen_ids[c->seen_len] = '\0';
}

static bool was_seen(const seen_ctx *c, const char *id)
{
    if (!c->seen_ids || !*id)
        return false;
    size_t n = strlen(id);
    for (const char *p = strstr(c->seen_ids, id); p; p = strstr(p + 1, id))
        if (p[-1] == '\n' && (p[n] == '\n' || p[n] == '\0'))
            return true;
    return false;
}

static const char *state_name(sp_node_state s)
{
    switch (s) {
    case SP_NODE_PENDING: return "pending";
    case SP_NODE_RUNNING: return "running";
    case SP_NODE_STOPPING: return "stopping";
    case SP_NODE_GONE: return "gone";
    case SP_NODE_UNKNOWN: break;
    }
    return "unknown";
}

static void emit(sp_event_fn fn, void *ctx, sp_event_kind kind, int node, const sp_node_row *row,
                 const char *text)
{
    if (fn) {
        sp_event ev = {kind, node, row, text};
        fn(ctx, &ev);
    }
}

/* One instance the cloud reports: update its row, or adopt it. */
static int on_instance(sp_node_sink *sink, const sp_node *n)
{
    seen_ctx *c = sink->opaque;
    unsigned idx;
    /* Alive is what costs money; an instance shutting down is on its way out. */
    c->res->seen += n->state == SP_NODE_PENDING || n->state == SP_NODE_RUNNING;
    remember(c, n->id);
    if (!node_index(n->name, &idx))
        return SP_OK;
    sp_node_row *r = row_of(c->v, idx);
    bool adopt = !r || strcmp(r->cloud_id, n->id) != 0;
    if (!r && c->v->n_rows < MAX_ROWS) {
        r = &c->v->rows[c->v->n_rows++];
        memset(r, 0, sizeof(*r));
        snprintf(r->pool_id, sizeof(r->pool_id), "%s", c->v->pool->id);
        r->idx = idx;
    }
    if (!r)
        return SP_OK;
    if (adopt && r->cloud_id[0] && strcmp(r->state, "gone") != 0)
        return SP_OK; /* a second instance for one node: left for teardown to find */
    snprintf(r->cloud_id, sizeof(r->cloud_id), "%s", n->id);
    snprintf(r->provider, sizeof(r->provider), "%s", c->where->provider);
    snprintf(r->region, sizeof(r->region), "%s", c->where->region);
    if (!r->zone[0]) /* offers name zones by ID, instances by name: keep the plan's */
        snprintf(r->zone, sizeof(r->zone), "%s", n->zone);
    snprintf(r->instance_type, sizeof(r->instance_type), "%s", n->instance_type);
    snprintf(r->public_ip, sizeof(r->public_ip), "%s", n->public_ip);
    snprintf(r->private_ip, sizeof(r->private_ip), "%s", n->private_ip);
    snprintf(r->state, sizeof(r->state), "%s", state_name(n->state));
    if (!r->market[0])
        snprintf(r->market, sizeof(r->market), "%s",
                 n->market == SP_MARKET_SPOT ? "spot" : "on-demand");
    int rc = sp_state_node_put(c->st, r, c->err);
    if (!rc && adopt) {
        c->res->adopted++;
        emit(c->on_event, c->event_ctx, SP_EV_ADOPTED, (int)idx, r,
             "found in the cloud by its tags, and adopted");
    }
    return rc;
}

static int describe_place(sp_registry *reg, seen_ctx *c, const place *p, sp_err *err)
{
    const sp_plugin *plugin = sp_registry_find(reg, p->provider);
    if (!plugin)
        return sp_err_set(err, SP_E_NOTFOUND,
                          "pool %s has nodes on provider '%s', which is not loaded here; see "
                          "skypool providers",
                          c->v->pool->name, p->provider);
    if (!plugin->table.describe_nodes)
        return sp_err_set(err, SP_E_UNSUPPORTED, "%s cannot list instances yet",
                          p->provider);
    sp_tag tags[] = {{SP_TAG_POOL_ID, c->v->pool->id}};
    const char *regions[] = {p->region};
    sp_node_filter f = {sizeof(f), tags, 1, regions, 1};
    sp_node_sink sink = {sizeof(sink), c, on_instance};
    c->where = p;
    return plugin->table.describe_nodes(plugin->ctx, &f, &sink, err);
}

/* Nodes the state has in a place it just looked in, but the cloud did not show: gone. */
static int mark_gone(seen_ctx *c, const bool *looked)
{
    for (size_t i = 0; i < c->v->n_rows; i++) {
        sp_node_row *r = &c->v->rows[i];
        bool here = false;
        for (size_t k = 0; k < c->v->n_places; k++)
            here |= looked[k] && !strcmp(c->v->places[k].provider, r->provider) &&
                    !strcmp(c->v->places[k].region, r->region);
        if (!here || !r->cloud_id[0] || !strcmp(r->state, "gone") || was_seen(c, r->cloud_id))
            continue;
        snprintf(r->state, sizeof(r->state), "gone");
        int rc = sp_state_node_put(c->st, r, c->err);
        if (rc)
            return rc;
        c->res->gone++;
    }
    return SP_OK;
}

typedef struct ending {
    sp_state *st;
    pool_view *v;
    sp_err *err;
} ending;

/* A journal entry a crash left open: the instance is there (adopted) or the call never took. */
static int end_open_op(void *ctx, const sp_op_row *op)
{
    ending *e = ctx;
    sp_node_row *r = op->node_idx >= 0 ? row_of(e->v, (unsigned)op->node_idx) : NULL;
    bool took = r && r->cloud_id[0] && strcmp(r->state, "gone") != 0;
    if (!strcmp(op->kind, "terminate"))
        took = !r || !strcmp(r->state, "gone");
    return sp_state_op_end(e->st, op->id, took ? "ok" : "error", r ? r->cloud_id : "",
                           took ? "settled after a crash: it took effect"
                                : "settled after a crash: it did not take effect",
                           e->err);
}

int sp_reconcile(sp_registry *reg, sp_state *st, const sp_pool_row *pool, sp_event_fn on_event,
                 void *event_ctx, sp_refresh_result *res, sp_err *err)
{
    memset(res, 0, sizeof(*res));
    pool_view v;
    int rc = view_load(st, pool, &v, err);
    seen_ctx c = {&v, st, NULL, res, on_event, event_ctx, NULL, 0, 0, err};
    bool looked[MAX_PLACES] = {false};
    for (size_t i = 0; !rc && i < v.n_places; i++) {
        rc = describe_place(reg, &c, &v.places[i], err);
        looked[i] = rc == SP_OK;
        if (rc == SP_E_UNSUPPORTED)
            rc = SP_OK;
    }
    if (!rc)
        rc = mark_gone(&c, looked);
    ending e = {st, &v, err};
    if (!rc)
        rc = sp_state_ops_unfinished(st, pool->id, end_open_op, &e, err);
    free(c.seen_ids);
    free(v.rows);
    return rc;
}

/* ---- Teardown ------------------------------------------------------------------------------ */

int sp_node_terminate(sp_registry *reg, sp_state *st, sp_node_row *r, sp_err *err)
{
    const sp_plugin *p = sp_registry_find(reg, r->provider);
    if (!p || !p->table.terminate)
        return sp_err_set(err, SP_E_UNSUPPORTED, "node %u: provider '%s' cannot terminate it",
                          r->idx, r->provider);
    sp_op_row op = {.node_idx = (int)r->idx};
    snprintf(op.pool_id, sizeof(op.pool_id), "%s", r->pool_id);
    snprintf(op.kind, sizeof(op.kind), "terminate");
    snprintf(op.provider, sizeof(op.provider), "%s", r->provider);
    snprintf(op.region, sizeof(op.region), "%s", r->region);
    snprintf(op.cloud_id, sizeof(op.cloud_id), "%s", r->cloud_id);
    int64_t id;
    int rc = sp_state_op_begin(st, &op, &id, err);
    if (rc)
        return rc;
    sp_node node = {.struct_size = sizeof(node)};
    snprintf(node.id, sizeof(node.id), "%s", r->cloud_id);
    snprintf(node.region, sizeof(node.region), "%s", r->region);
    sp_err call = {0};
    int crc = p->table.terminate(p->ctx, &node, &call);
    rc = sp_state_op_end(st, id, crc ? "error" : "ok", "", crc ? call.msg : "", err);
    if (!rc && !crc) {
        snprintf(r->state, sizeof(r->state), "gone");
        rc = sp_state_node_put(st, r, err);
    }
    if (!rc && crc)
        rc = sp_err_set(err, crc, "node %u (%s): %s", r->idx, r->cloud_id, call.msg);
    return rc;
}

typedef struct down_ctx {
    sp_registry *reg;
    sp_state *st;
    sp_down_result *res;
    sp_event_fn on_event;
    void *event_ctx;
    sp_err first;
} down_ctx;

static int down_row(void *ctx, const sp_node_row *row)
{
    down_ctx *d = ctx;
    if (!row->cloud_id[0] || !strcmp(row->state, "gone"))
        return SP_OK;
    sp_node_row r = *row;
    sp_err err = {0};
    if (sp_node_terminate(d->reg, d->st, &r, &err) == SP_OK) {
        d->res->terminated++;
        emit(d->on_event, d->event_ctx, SP_EV_TERMINATED, (int)r.idx, &r, NULL);
    } else {
        if (!d->res->failed++)
            d->first = err;
        emit(d->on_event, d->event_ctx, SP_EV_FAILED, (int)r.idx, &r, err.msg);
    }
    return SP_OK;
}

int sp_down(sp_registry *reg, sp_state *st, const sp_pool_row *pool, sp_event_fn on_event,
            void *event_ctx, sp_down_result *res, sp_err *err)
{
    memset(res, 0, sizeof(*res));
    sp_refresh_result seen;
    /* First find everything, the instances a crash left unrecorded included. */
    int rc = sp_reconcile(reg, st, pool, on_event, event_ctx, &seen, err);
    if (rc)
        return rc;
    down_ctx d = {reg, st, res, on_event, event_ctx, {0}};
    rc = sp_state_nodes(st, pool->id, down_row, &d, err);
    if (rc)
        return rc;
    if (res->failed)
        return sp_err_set(err, d.first.code, "%u node%s could not be terminated; the pool is "
                                             "kept: run skypool down %s again (%s)",
                          res->failed, res->failed == 1 ? "" : "s", pool->name, d.first.msg);
    /* Look once more: only when the clouds show nothing of the pool is it forgotten. */
    rc = sp_reconcile(reg, st, pool, on_event, event_ctx, &seen, err);
    if (!rc && seen.seen)
        return sp_err_set(err, SP_E_INTERNAL, "%u instance%s of pool %s still listed after "
                                              "termination; run skypool down %s again",
                          seen.seen, seen.seen == 1 ? "" : "s", pool->name, pool->name);
    return rc ? rc : sp_state_pool_delete(st, pool->id, err);
}
