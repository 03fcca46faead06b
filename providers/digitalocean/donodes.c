/*
 * Droplets: the SSH key a launch needs (found by fingerprint, else imported), POST /v2/droplets
 * for one droplet or up to ten (`names`), listing by tag, DELETE by id.
 *
 * DigitalOcean has no client token: a create the network lost may or may not have made its
 * droplets, and repeating it blindly could make them twice. So a create is never retried
 * blindly: after a 5xx or a transport failure the droplets are looked for by the request's
 * shared tag (the pool ID) and name, and only the ones not found are asked for again. Beyond
 * that the core journals every launch and adopts droplets it finds by tag after a crash; the
 * droplet's name (<pool>-<index>) tells it which node a droplet is.
 */
#include "digitalocean.h"
#include "docrypto.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define USER_DATA_MAX (64 * 1024) /* the API's limit for user_data */
#define TAG_LEN 256               /* 255 characters and a NUL */
#define MAX_TAGS 64

/* ---- Tags and images ------------------------------------------------------------------------- */

void do_tag_encode(const sp_tag *tag, char *out, size_t size)
{
    if (size > TAG_LEN)
        size = TAG_LEN;
    snprintf(out, size, "%s:%s", tag->key ? tag->key : "", tag->value ? tag->value : "");
    for (char *c = out; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
              *c == ':' || *c == '-' || *c == '_'))
            *c = '_';
}

/*
 * The image a GPU droplet boots when the pool names none: DigitalOcean's AI/ML-ready images
 * (drivers, CUDA or ROCm preinstalled). Assumed rule, from DigitalOcean's GPU Droplet docs
 * ("AI/ML-ready images": slugs gpu-h100x1-base for single-GPU and gpu-h100x8-base for 8-GPU
 * NVIDIA droplets) and the image column of /work/shared/reference/digitalocean-gpu-sizes.csv,
 * which also gives gpu-amd-base for AMD Instinct; the OpenAPI spec's GPU droplet example boots
 * gpu-h100x1-base on gpu-h100x1-80gb. Despite its name, gpu-h100x1-base serves every 1-GPU
 * NVIDIA size (H200, L40S, RTX 4000/6000 Ada).
 */
const char *do_default_image(const sp_offer *offer)
{
    if (offer->accelerator && !strncmp(offer->accelerator, "MI", 2))
        return "gpu-amd-base";
    return offer->accel_count >= 8 ? "gpu-h100x8-base" : "gpu-h100x1-base";
}

/* ---- Droplets as nodes ----------------------------------------------------------------------- */

static sp_node_state state_of(const char *status)
{
    if (!strcmp(status, "new"))
        return SP_NODE_PENDING;
    if (!strcmp(status, "active"))
        return SP_NODE_RUNNING;
    if (!strcmp(status, "off"))
        return SP_NODE_STOPPING;
    if (!strcmp(status, "archive"))
        return SP_NODE_GONE;
    return SP_NODE_UNKNOWN;
}

static void read_networks(const json_t *d, sp_node *n)
{
    size_t i;
    const json_t *net;
    json_array_foreach(json_object_get(json_object_get(d, "networks"), "v4"), i, net) {
        const char *type = do_str(net, "type"), *ip = do_str(net, "ip_address");
        char *slot = !strcmp(type, "public")    ? n->public_ip
                     : !strcmp(type, "private") ? n->private_ip
                                                : NULL;
        if (slot && !slot[0] && ip[0])
            snprintf(slot, sizeof(n->public_ip), "%s", ip);
    }
}

void do_read_droplet(const json_t *d, sp_node *n)
{
    memset(n, 0, sizeof(*n));
    n->struct_size = sizeof(*n);
    const json_t *id = json_object_get(d, "id");
    if (json_is_integer(id))
        snprintf(n->id, sizeof(n->id), "%lld", (long long)json_integer_value(id));
    else if (json_is_string(id))
        snprintf(n->id, sizeof(n->id), "%s", json_string_value(id));
    snprintf(n->name, sizeof(n->name), "%s", do_str(d, "name"));
    const json_t *region = json_object_get(d, "region");
    snprintf(n->region, sizeof(n->region), "%s",
             json_is_string(region) ? json_string_value(region) : do_str(region, "slug"));
    const char *size = do_str(d, "size_slug");
    snprintf(n->instance_type, sizeof(n->instance_type), "%s",
             *size ? size : do_str(json_object_get(d, "size"), "slug"));
    read_networks(d, n);
    n->state = state_of(do_str(d, "status"));
    n->market = SP_MARKET_ON_DEMAND;
}

static bool has_tag(const json_t *d, const char *tag)
{
    size_t i;
    const json_t *t;
    json_array_foreach(json_object_get(d, "tags"), i, t) {
        if (json_is_string(t) && !strcasecmp(json_string_value(t), tag)) /* tags ignore case */
            return true;
    }
    return false;
}

/* ---- Listing droplets by tag ----------------------------------------------------------------- */

typedef int (*droplet_fn)(const json_t *droplet, void *arg);

typedef struct scan {
    const char *tag;
    droplet_fn fn;
    void *arg;
    long long *ids;            /* droplets already handed on: the two listings may overlap */
    size_t n_ids, cap;
} scan;

static int scan_item(const json_t *d, void *arg)
{
    scan *s = arg;
    long long id = do_int(d, "id", -1);
    for (size_t i = 0; i < s->n_ids; i++)
        if (s->ids[i] == id)
            return SP_OK;
    if (s->n_ids == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 64;
        long long *ids = realloc(s->ids, cap * sizeof(*ids));
        if (!ids)
            return SP_E_NOMEM;
        s->ids = ids;
        s->cap = cap;
    }
    s->ids[s->n_ids++] = id;
    if (s->tag && !has_tag(d, s->tag))
        return SP_OK;
    return s->fn(d, s->arg);
}

/*
 * Every droplet with the (encoded) tag, or every droplet when tag is NULL. GPU droplets are
 * only listed with type=gpus, and the API reference says type cannot be combined with
 * tag_name; so the tagged droplets come from ?tag_name=TAG and the GPU ones from ?type=gpus,
 * checked for the tag here. The answers of both are checked, whatever the server filtered.
 */
static int scan_droplets(do_ctx *ctx, const char *tag, const char *where, droplet_fn fn,
                         void *arg, sp_err *err)
{
    scan s = {.tag = tag, .fn = fn, .arg = arg};
    char q[1024] = ""; /* a tag of 255 characters, each %XX at worst */
    if (tag)
        do_query_add(q, sizeof(q), "tag_name", tag);
    int rc = do_list(ctx, "/v2/droplets", q, "droplets", where, scan_item, &s, NULL, err);
    if (!rc)
        rc = do_list(ctx, "/v2/droplets", "type=gpus", "droplets", where, scan_item, &s, NULL,
                     err);
    if (rc == SP_E_NOMEM)
        sp_err_set(err, rc, "out of memory");
    free(s.ids);
    return rc;
}

typedef struct describe {
    const sp_node_filter *f;
    char tags[MAX_TAGS][TAG_LEN];
    size_t n_tags;
    sp_node_sink *sink;
} describe;

static bool in_regions(const sp_node_filter *f, const char *region)
{
    for (size_t i = 0; i < f->n_regions; i++)
        if (!strcmp(f->regions[i], region))
            return true;
    return f->n_regions == 0;
}

static int describe_one(const json_t *d, void *arg)
{
    describe *ds = arg;
    for (size_t i = 0; i < ds->n_tags; i++)
        if (!has_tag(d, ds->tags[i]))
            return SP_OK;
    sp_node n;
    do_read_droplet(d, &n);
    if (!in_regions(ds->f, n.region))
        return SP_OK;
    return ds->sink->node(ds->sink, &n);
}

int do_describe_nodes(void *vctx, const sp_node_filter *f, sp_node_sink *sink, sp_err *err)
{
    describe *ds = calloc(1, sizeof(*ds));
    if (!ds)
        return sp_err_set(err, SP_E_NOMEM, "out of memory");
    ds->f = f;
    ds->sink = sink;
    size_t primary = 0; /* the most selective tag goes to the server: the pool ID */
    for (size_t i = 0; i < f->n_tags && ds->n_tags < MAX_TAGS; i++) {
        do_tag_encode(&f->tags[i], ds->tags[ds->n_tags], TAG_LEN);
        if (f->tags[i].key && !strcmp(f->tags[i].key, "skypool:pool-id"))
            primary = ds->n_tags;
        ds->n_tags++;
    }
    int rc = scan_droplets(vctx, ds->n_tags ? ds->tags[primary] : NULL, NULL, describe_one, ds,
                           err);
    free(ds);
    return rc;
}

/* ---- SSH keys -------------------------------------------------------------------------------- */

typedef struct key_match {
    const char *fingerprint;
    long long id;
} key_match;

static int match_key(const json_t *k, void *arg)
{
    key_match *m = arg;
    if (m->id < 0 && !strcasecmp(do_str(k, "fingerprint"), m->fingerprint))
        m->id = do_int(k, "id", -1);
    return SP_OK;
}

static int find_key(do_ctx *ctx, const char *fingerprint, long long *id, sp_err *err)
{
    key_match m = {fingerprint, -1};
    int rc = do_list(ctx, "/v2/account/keys", NULL, "ssh_keys", NULL, match_key, &m, NULL, err);
    *id = m.id;
    return rc;
}

/* The public key line without its line ending. */
static json_t *key_body(const char *public_key, const char *fingerprint)
{
    char name[32], hex[9];
    size_t k = 0;
    for (const char *c = fingerprint; *c && k < 8; c++)
        if (*c != ':')
            hex[k++] = *c;
    hex[k] = '\0';
    snprintf(name, sizeof(name), "skypool-%s", hex);
    size_t n = strcspn(public_key, "\r\n");
    return json_pack("{s:s, s:s%}", "name", name, "public_key", public_key, n);
}

static int import_key(do_ctx *ctx, const char *public_key, const char *fingerprint,
                      long long *id, sp_err *err)
{
    json_t *body = key_body(public_key, fingerprint);
    if (!body)
        return sp_err_set(err, SP_E_NOMEM, "out of memory");
    do_request r = {"POST", "/v2/account/keys", NULL, body, NULL, false};
    json_t *j;
    do_error e;
    int rc = do_api(ctx, &r, &j, &e, err);
    json_decref(body);
    if (!rc) {
        *id = do_int(json_object_get(j, "ssh_key"), "id", -1);
        json_decref(j);
        return *id >= 0 ? SP_OK
                        : sp_err_set(err, SP_E_PROTOCOL,
                                     "digitalocean: POST /v2/account/keys: no ssh_key.id in the "
                                     "answer");
    }
    if (e.status != 422) /* 422: "already in use": imported by someone a moment ago */
        return rc;
    sp_err again;
    if (find_key(ctx, fingerprint, id, &again) == SP_OK && *id >= 0)
        return SP_OK;
    return rc;
}

/* Forgets a key this process found or imported: someone deleted it from the account. */
static void forget_key(do_ctx *ctx, long long id)
{
    pthread_mutex_lock(&ctx->lock);
    for (size_t i = 0; i < ctx->n_keys;)
        if (ctx->keys[i].id == id)
            ctx->keys[i] = ctx->keys[--ctx->n_keys];
        else
            i++;
    pthread_mutex_unlock(&ctx->lock);
}

int do_ensure_key(do_ctx *ctx, const char *public_key, long long *id, sp_err *err)
{
    char fp[64];
    int rc = do_key_fingerprint(public_key, fp, sizeof(fp), err);
    if (rc)
        return rc;
    pthread_mutex_lock(&ctx->key_lock);
    *id = -1;
    pthread_mutex_lock(&ctx->lock);
    for (size_t i = 0; i < ctx->n_keys; i++)
        if (!strcmp(ctx->keys[i].fingerprint, fp))
            *id = ctx->keys[i].id;
    pthread_mutex_unlock(&ctx->lock);
    bool known = *id >= 0;
    if (!known && !(rc = find_key(ctx, fp, id, err)) && *id < 0)
        rc = import_key(ctx, public_key, fp, id, err);
    if (!rc && !known) {
        pthread_mutex_lock(&ctx->lock);
        if (ctx->n_keys < sizeof(ctx->keys) / sizeof(ctx->keys[0])) {
            snprintf(ctx->keys[ctx->n_keys].fingerprint, sizeof(ctx->keys[0].fingerprint), "%s",
                     fp);
            ctx->keys[ctx->n_keys++].id = *id;
        }
        pthread_mutex_unlock(&ctx->lock);
    }
    pthread_mutex_unlock(&ctx->key_lock);
    return rc;
}

/* ---- Creating droplets ----------------------------------------------------------------------- */

typedef struct batch {
    do_ctx *ctx;
    const sp_launch_request *const *reqs;
    size_t n;
    sp_node *nodes;
    sp_err *errs;
    bool done[DO_BATCH_MAX];
    char tags[MAX_TAGS][TAG_LEN]; /* the tags every request has */
    size_t n_tags;
    long long key_id;          /* -1: no SSH key */
    char where[192];
} batch;

static bool req_has_tag(const sp_launch_request *req, const char *enc)
{
    char t[TAG_LEN];
    for (size_t i = 0; i < req->n_tags; i++) {
        do_tag_encode(&req->tags[i], t, sizeof(t));
        if (!strcasecmp(t, enc))
            return true;
    }
    return false;
}

/* One tag set serves the whole call: the tags all requests share (the pool, its ID, the
 * user's), not the ones that differ (the node index). The node's name tells them apart. */
static void shared_tags(batch *b)
{
    const sp_launch_request *first = b->reqs[0];
    for (size_t i = 0; i < first->n_tags && b->n_tags < MAX_TAGS; i++) {
        char *t = b->tags[b->n_tags];
        do_tag_encode(&first->tags[i], t, TAG_LEN);
        bool keep = t[0] != '\0';
        for (size_t k = 0; keep && k < b->n_tags; k++)
            keep = strcasecmp(b->tags[k], t) != 0;
        for (size_t r = 1; keep && r < b->n; r++)
            keep = req_has_tag(b->reqs[r], t);
        b->n_tags += keep;
    }
}

/* The tag a lost create's droplets are looked for by: the pool ID's, else any shared one. */
static const char *lookup_tag(const batch *b)
{
    char id_prefix[] = "skypool:pool-id:";
    for (size_t i = 0; i < b->n_tags; i++)
        if (!strncasecmp(b->tags[i], id_prefix, sizeof(id_prefix) - 1))
            return b->tags[i];
    return b->n_tags ? b->tags[0] : NULL;
}

static int check_requests(batch *b, sp_err *err)
{
    const sp_launch_request *first = b->reqs[0];
    const sp_offer *o = first->offer;
    if (!o || !o->region || !*o->region || !o->instance_type || !*o->instance_type)
        return sp_err_set(err, SP_E_INVALID, "digitalocean: a launch needs a size and a region");
    if (first->market == SP_MARKET_SPOT)
        return sp_err_set(err, SP_E_UNSUPPORTED,
                          "digitalocean: spot is not offered; GPU droplets are on-demand only");
    if (first->user_data && strlen(first->user_data) > USER_DATA_MAX)
        return sp_err_set(err, SP_E_INVALID,
                          "digitalocean: user_data is over DigitalOcean's limit of 64 KiB");
    for (size_t i = 0; i < b->n; i++) {
        const sp_offer *oi = b->reqs[i]->offer;
        if (!b->reqs[i]->name || !*b->reqs[i]->name)
            return sp_err_set(err, SP_E_INVALID, "digitalocean: a droplet needs a name");
        if (!oi || !oi->region || !oi->instance_type || strcmp(oi->region, o->region) ||
            strcmp(oi->instance_type, o->instance_type))
            return sp_err_set(err, SP_E_INVALID,
                              "digitalocean: one create call takes one size in one region");
    }
    return SP_OK;
}

static json_t *image_value(const sp_launch_request *req)
{
    const char *image = req->image && *req->image ? req->image : do_default_image(req->offer);
    size_t digits = strspn(image, "0123456789");
    if (digits && !image[digits] && digits < 16) /* an image ID, not a slug */
        return json_integer(strtoll(image, NULL, 10));
    return json_string(image);
}

/* The create body for the requests not done yet; *m is how many it names. */
static json_t *create_body(const batch *b, size_t *m)
{
    const sp_launch_request *first = b->reqs[0];
    json_t *body = json_object(), *names = json_array(), *tags = json_array();
    *m = 0;
    for (size_t i = 0; i < b->n; i++)
        if (!b->done[i] && !json_array_append_new(names, json_string(b->reqs[i]->name)))
            (*m)++;
    for (size_t i = 0; i < b->n_tags; i++)
        json_array_append_new(tags, json_string(b->tags[i]));
    if (*m == 1)
        json_object_set(body, "name", json_array_get(names, 0));
    else
        json_object_set(body, "names", names);
    json_decref(names);
    json_object_set_new(body, "region", json_string(first->offer->region));
    json_object_set_new(body, "size", json_string(first->offer->instance_type));
    json_object_set_new(body, "image", image_value(first));
    if (b->key_id >= 0)
        json_object_set_new(body, "ssh_keys", json_pack("[I]", (json_int_t)b->key_id));
    json_object_set_new(body, "tags", tags);
    if (first->user_data && *first->user_data)
        json_object_set_new(body, "user_data", json_string(first->user_data));
    if (json_object_size(body) < 5) { /* a json_*() above ran out of memory */
        json_decref(body);
        return NULL;
    }
    return body;
}

/* A droplet the API made: which request it answers, by name. */
static void take_droplet(batch *b, const json_t *d, bool only_one)
{
    sp_node n;
    do_read_droplet(d, &n);
    for (size_t i = 0; i < b->n; i++) {
        if (b->done[i] || (!only_one && strcmp(n.name, b->reqs[i]->name) != 0))
            continue;
        if (!n.name[0])
            snprintf(n.name, sizeof(n.name), "%s", b->reqs[i]->name);
        if (!n.region[0])
            snprintf(n.region, sizeof(n.region), "%s", b->reqs[i]->offer->region);
        if (n.id[0]) {
            b->nodes[i] = n;
            b->done[i] = true;
            b->errs[i].code = SP_OK;
            b->errs[i].msg[0] = '\0';
        }
        return;
    }
}

static int post(batch *b, sp_err *err)
{
    size_t m;
    json_t *body = create_body(b, &m);
    if (!body)
        return sp_err_set(err, SP_E_NOMEM, "out of memory");
    do_request r = {"POST", "/v2/droplets", NULL, body, b->where, true};
    json_t *j;
    int rc = do_api(b->ctx, &r, &j, NULL, err);
    json_decref(body);
    if (rc)
        return rc;
    const json_t *one = json_object_get(j, "droplet"), *d;
    size_t i;
    if (json_is_object(one))
        take_droplet(b, one, m == 1);
    json_array_foreach(json_object_get(j, "droplets"), i, d) {
        take_droplet(b, d, false);
    }
    json_decref(j);
    return SP_OK;
}

static int find_lost(const json_t *d, void *arg)
{
    batch *b = arg;
    const char *status = do_str(d, "status");
    if (!strcmp(status, "new") || !strcmp(status, "active"))
        take_droplet(b, d, false);
    return SP_OK;
}

static bool all_done(const batch *b)
{
    for (size_t i = 0; i < b->n; i++)
        if (!b->done[i])
            return false;
    return true;
}

/* Creates, and after a lost answer looks before asking again (see the top of the file). */
static int create(batch *b, sp_err *err)
{
    const char *tag = lookup_tag(b);
    for (unsigned attempt = 0;; attempt++) {
        int rc = post(b, err);
        if (rc != SP_E_NETWORK || !tag || attempt + 1 >= b->ctx->max_attempts)
            return rc;
        do_sleep_ms(b->ctx->backoff_base_ms << (attempt < 5 ? attempt : 5));
        sp_err look;
        if (scan_droplets(b->ctx, tag, b->where, find_lost, b, &look) != SP_OK)
            return rc;
        if (all_done(b))
            return SP_OK;
    }
}

/* Creates; when the remembered SSH key was deleted from the account meanwhile ("<id> are
 * invalid key identifiers"), finds or imports it again and creates once more. */
static int create_with_key(batch *b, const char *public_key, sp_err *err)
{
    int rc = SP_OK;
    if (public_key && *public_key)
        rc = do_ensure_key(b->ctx, public_key, &b->key_id, err);
    if (!rc)
        rc = create(b, err);
    if (rc == SP_E_INVALID && b->key_id >= 0 && do_contains(err->msg, "key")) {
        forget_key(b->ctx, b->key_id);
        rc = do_ensure_key(b->ctx, public_key, &b->key_id, err);
        if (!rc)
            rc = create(b, err);
    }
    return rc;
}

static int launch_chunk(do_ctx *ctx, const sp_launch_request *const *reqs, size_t n,
                        sp_node *nodes, sp_err *errs)
{
    batch *b = calloc(1, sizeof(*b));
    sp_err err = {0};
    int rc;
    if (!b)
        rc = sp_err_set(&err, SP_E_NOMEM, "out of memory");
    else {
        *b = (batch){.ctx = ctx, .reqs = reqs, .n = n, .nodes = nodes, .errs = errs,
                     .key_id = -1};
        const sp_offer *o = reqs[0]->offer;
        if (!(rc = check_requests(b, &err))) {
            snprintf(b->where, sizeof(b->where), "in %.64s (%.64s)", o->region,
                     o->instance_type);
            shared_tags(b);
            rc = create_with_key(b, reqs[0]->ssh_public_key, &err);
        }
    }
    int first = rc;
    for (size_t i = 0; i < n; i++) {
        if (b && b->done[i])
            continue;
        memset(&nodes[i], 0, sizeof(nodes[i]));
        nodes[i].struct_size = sizeof(nodes[i]);
        errs[i] = err;
        if (!rc) /* the call went through, but this droplet is not in its answer */
            sp_err_set(&errs[i], SP_E_PROTOCOL,
                       "digitalocean: POST /v2/droplets %s: no droplet named %s in the answer",
                       b->where, reqs[i]->name);
        if (!first)
            first = errs[i].code;
    }
    free(b);
    return first;
}

int do_launch_batch(void *vctx, const sp_launch_request *const *reqs, size_t n, sp_node *nodes,
                    sp_err *errs)
{
    int first = SP_OK;
    for (size_t at = 0; at < n; at += DO_BATCH_MAX) {
        size_t m = n - at < DO_BATCH_MAX ? n - at : DO_BATCH_MAX;
        int rc = launch_chunk(vctx, reqs + at, m, nodes + at, errs + at);
        if (rc && !first)
            first = rc;
    }
    return first;
}

int do_launch(void *vctx, const sp_launch_request *req, sp_node *node, sp_err *err)
{
    sp_err local;
    return do_launch_batch(vctx, &req, 1, node, err ? err : &local);
}

/* ---- Deleting -------------------------------------------------------------------------------- */

/* "/v2/droplets/<id>", for an ID that is a droplet's (digits only). */
static int droplet_path(const char *id, char *path, size_t size, sp_err *err)
{
    size_t digits = strspn(id, "0123456789");
    if (!digits || id[digits] || digits > 19)
        return sp_err_set(err, SP_E_INVALID, "digitalocean: '%.64s' is not a droplet ID", id);
    snprintf(path, size, "/v2/droplets/%.20s", id);
    return SP_OK;
}

int do_terminate(void *vctx, const sp_node *node, sp_err *err)
{
    char path[64], where[96];
    int rc = droplet_path(node->id, path, sizeof(path), err);
    if (rc)
        return rc;
    snprintf(where, sizeof(where), "in %.64s", node->region[0] ? node->region : "any region");
    do_request r = {"DELETE", path, NULL, NULL, where, false};
    json_t *j;
    rc = do_api(vctx, &r, &j, NULL, err);
    json_decref(j);
    return rc == SP_E_NOTFOUND ? SP_OK : rc; /* already gone is what was asked for */
}

int do_delete_tagged(do_ctx *ctx, const char *tag, sp_err *err)
{
    char q[1024] = "";
    do_query_add(q, sizeof(q), "tag_name", tag);
    do_request r = {"DELETE", "/v2/droplets", q, NULL, NULL, false};
    json_t *j;
    int rc = do_api(ctx, &r, &j, NULL, err);
    json_decref(j);
    return rc == SP_E_NOTFOUND ? SP_OK : rc;
}

/* GET /v2/droplets/<id>: the droplet as it is now. */
static int fetch_droplet(do_ctx *ctx, const char *id, sp_node *n, sp_err *err)
{
    char path[64];
    int rc = droplet_path(id, path, sizeof(path), err);
    if (rc)
        return rc;
    do_request r = {"GET", path, NULL, NULL, NULL, false};
    json_t *j;
    if ((rc = do_api(ctx, &r, &j, NULL, err)))
        return rc;
    do_read_droplet(json_object_get(j, "droplet"), n);
    json_decref(j);
    return n->id[0] ? SP_OK
                    : sp_err_set(err, SP_E_PROTOCOL,
                                 "digitalocean: GET %s: no droplet in the answer", path);
}

/* The node's address, or the droplet's now if the node was seen before it had one. */
int do_ssh_target(void *vctx, const sp_node *node, sp_ssh_target *t, sp_err *err)
{
    sp_node now;
    if (!node->public_ip[0] && !node->private_ip[0]) {
        int rc = fetch_droplet(vctx, node->id, &now, err);
        if (rc)
            return rc;
        node = &now;
    }
    const char *ip = node->public_ip[0] ? node->public_ip : node->private_ip;
    if (!ip[0])
        return sp_err_set(err, SP_E_NOTFOUND, "digitalocean: droplet %s has no IP address yet",
                          node->id);
    memset(t, 0, sizeof(*t));
    t->struct_size = sizeof(*t);
    snprintf(t->host, sizeof(t->host), "%s", ip);
    t->port = 22;
    snprintf(t->user, sizeof(t->user), "root"); /* DigitalOcean's images log in as root */
    return SP_OK;
}
