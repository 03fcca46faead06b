/* skypool status [POOL] [--refresh]: pools and nodes as the state store (or the clouds) say. */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

typedef struct node_list {
    cli_table *t;
    json_t *arr;
    double usd;
    unsigned alive, total;
    sp_state *st;        /* set: the node checks' summaries are shown too */
    json_t *checks;      /* text lines, for after the table */
} node_list;

/* The node's latest check: its summary and workers, into the node's JSON and the text lines. */
static void add_check(node_list *l, const sp_node_row *r, json_t *node)
{
    sp_check_row c;
    sp_err err;
    if (!l->st || !r->check[0] ||
        sp_state_check_last(l->st, r->pool_id, r->idx, &c, NULL, &err) != SP_OK)
        return;
    json_t *workers = c.workers_copy ? json_loads(c.workers_copy, 0, NULL) : NULL;
    json_object_set_new(node, "check_summary", json_string(c.summary));
    json_object_set_new(node, "checked_at", json_integer(c.checked_at));
    json_object_set_new(node, "workers", workers ? workers : json_array());
    char line[700];
    snprintf(line, sizeof(line), "node %u: %s: %s", r->idx, c.verdict, c.summary);
    json_array_append_new(l->checks, json_string(line));
    free(c.workers_copy);
}

static int add_node(void *ctx, const sp_node_row *r)
{
    node_list *l = ctx;
    char idx[16], price[32];
    snprintf(idx, sizeof(idx), "%u", r->idx);
    snprintf(price, sizeof(price), "%.2f", r->price);
    const char *row[] = {idx, r->state, r->provider, r->region, r->zone, r->instance_type,
                         r->market, price, r->cloud_id, r->public_ip,
                         r->check[0] ? r->check : "-"};
    cli_table_add(l->t, row);
    json_t *node = json_pack("{s:I, s:s, s:s, s:s, s:s, s:s, s:s, s:f, s:s, s:s, s:s, s:s}",
                                    "node", (json_int_t)r->idx, "state", r->state, "provider",
                                    r->provider, "region", r->region, "zone", r->zone,
                                    "instance_type", r->instance_type, "market", r->market,
                                    "price", r->price, "instance_id", r->cloud_id, "public_ip",
                                    r->public_ip, "private_ip", r->private_ip, "check",
                                    r->check);
    add_check(l, r, node);
    json_array_append_new(l->arr, node);
    bool up = !strcmp(r->state, "running") || !strcmp(r->state, "pending");
    l->alive += up;
    l->usd += up ? r->price : 0;
    l->total++;
    return SP_OK;
}

static int show_pool(sp_state *st, const sp_pool_row *p, bool json)
{
    static const char *h[] = {"NODE", "STATE", "PROVIDER", "REGION", "ZONE", "INSTANCE",
                              "MARKET", "$/H", "ID", "PUBLIC IP", "CHECK"};
    node_list l = {cli_table_new(11, h), json_array(), 0, 0, 0, st, json_array()};
    sp_err err = {0};
    int rc = sp_state_nodes(st, p->id, add_node, &l, &err);
    if (rc)
        rc = cli_fail(EXIT_FAILURE_, "%s", err.msg);
    else if (json)
        rc = cli_print_json(json_pack("{s:s, s:s, s:s, s:I, s:I, s:f, s:O}", "pool", p->name,
                                      "id", p->id, "state", p->state, "wanted",
                                      (json_int_t)p->nodes_wanted, "running",
                                      (json_int_t)l.alive, "hourly_usd", l.usd, "nodes",
                                      l.arr));
    else {
        printf("pool %s (%s): %s, %u of %u node%s up, $%.2f/h\n", p->name, p->id, p->state,
               l.alive, p->nodes_wanted, p->nodes_wanted == 1 ? "" : "s", l.usd);
        if (l.total)
            cli_table_print(l.t, stdout);
        size_t i;
        json_t *line;
        json_array_foreach(l.checks, i, line)
            printf("%s\n", json_string_value(line));
    }
    cli_table_free(l.t);
    json_decref(l.arr);
    json_decref(l.checks);
    return rc;
}

typedef struct pool_list {
    sp_state *st;
    cli_table *t;
    json_t *arr;
} pool_list;

static int add_pool(void *ctx, const sp_pool_row *p)
{
    pool_list *l = ctx;
    node_list n = {cli_table_new(11, (const char *const[11]){0}), json_array(), 0, 0, 0, NULL,
                   NULL};
    sp_err err;
    sp_state_nodes(l->st, p->id, add_node, &n, &err);
    char nodes[32], usd[32];
    snprintf(nodes, sizeof(nodes), "%u/%u", n.alive, p->nodes_wanted);
    snprintf(usd, sizeof(usd), "%.2f", n.usd);
    const char *row[] = {p->name, p->state, nodes, usd, p->path};
    cli_table_add(l->t, row);
    json_array_append_new(l->arr, json_pack("{s:s, s:s, s:s, s:I, s:I, s:f, s:s}", "pool",
                                            p->name, "id", p->id, "state", p->state, "wanted",
                                            (json_int_t)p->nodes_wanted, "running",
                                            (json_int_t)n.alive, "hourly_usd", n.usd, "path",
                                            p->path));
    cli_table_free(n.t);
    json_decref(n.arr);
    return SP_OK;
}

int cli_list_pools(sp_state *st, bool json)
{
    static const char *h[] = {"POOL", "STATE", "NODES", "$/H", "FILE"};
    pool_list l = {st, cli_table_new(5, h), json_array()};
    sp_err err = {0};
    int rc = sp_state_pools(st, add_pool, &l, &err);
    if (rc)
        rc = cli_fail(EXIT_FAILURE_, "%s", err.msg);
    else if (json)
        rc = cli_print_json(json_pack("{s:s, s:O}", "state", sp_state_path(st), "pools", l.arr));
    else if (json_array_size(l.arr))
        cli_table_print(l.t, stdout);
    else
        printf("no pools (state: %s)\n", sp_state_path(st));
    cli_table_free(l.t);
    json_decref(l.arr);
    return rc;
}

static int refresh(sp_state *st, const sp_pool_row *p, bool json)
{
    sp_registry reg;
    int rc = cli_open_registry(&reg, json);
    if (rc)
        return rc;
    sp_refresh_result r;
    sp_err err = {0};
    cli_progress prog;
    cli_progress_init(&prog, json, 0);
    if (sp_reconcile(&reg, st, p, cli_progress_event, &prog, &r, &err) != SP_OK)
        rc = cli_fail(cli_exit_code(err.code), "%s", err.msg);
    else if (!json)
        printf("refreshed: %u instance%s alive in the clouds, %u adopted, %u gone\n", r.seen,
               r.seen == 1 ? "" : "s", r.adopted, r.gone);
    cli_progress_done(&prog);
    sp_registry_close(&reg);
    return rc;
}

static int status_exec(int argc, char **argv)
{
    bool json = false, do_refresh = false;
    const char *name = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json"))
            json = true;
        else if (!strcmp(argv[i], "--refresh"))
            do_refresh = true;
        else if (argv[i][0] == '-' || name)
            return cli_fail(EXIT_USAGE, "see skypool status --help");
        else
            name = argv[i];
    }
    sp_state *st = NULL;
    int rc = cli_open_state(&st);
    if (rc)
        return rc;
    if (!name) {
        rc = do_refresh ? cli_fail(EXIT_USAGE, "--refresh needs a pool name")
                        : cli_list_pools(st, json);
        sp_state_close(st);
        return rc;
    }
    sp_pool_row p;
    sp_err err = {0};
    if (sp_state_pool_find(st, name, &p, &err) != SP_OK)
        rc = cli_fail(err.code == SP_E_NOTFOUND ? EXIT_USAGE : EXIT_FAILURE_, "%s", err.msg);
    if (!rc && do_refresh)
        rc = refresh(st, &p, json);
    if (!rc)
        rc = show_pool(st, &p, json);
    sp_state_close(st);
    return rc;
}

const sp_cmd cmd_status = {
    "status",
    "pools and nodes: state, provider, zone, price, check verdict",
    "[POOL] [--refresh] [--json]\n"
    "\n"
    "Without POOL, the pools known here; with it, its nodes. --refresh first asks the clouds:\n"
    "instances carrying the pool's tags that the state lacks are adopted, and nodes the clouds\n"
    "no longer have are marked gone.\n",
    status_exec,
};
