/* skypool plan POOL.yaml: what `up` would launch, where, at what price, within budget or not. */
#include "cli.h"

#include <getopt.h>
#include <string.h>

#define DEFAULT_SHOWN 15

static const char *spot_policy_name(sp_spot_policy p)
{
    switch (p) {
    case SP_SPOT_ONLY: return "spot";
    case SP_SPOT_THEN_ON_DEMAND: return "spot-then-on-demand";
    case SP_SPOT_ON_DEMAND: break;
    }
    return "on-demand";
}

static const char *const unknown_offline[] = {
    "quota: whether your accounts may run these instances (skypool quota)",
    "capacity: whether the zone has the instances free right now",
    "prices: spot prices move; catalog prices are from the catalog's date (skypool catalog)",
};

static void print_verdict(const sp_pool *pool, const sp_offer_set *set)
{
    const sp_cand *first = sp_offer_set_first(set);
    if (first)
        printf("first choice: %u x %s (%s) in %s %s%s%s at $%.2f/h for the pool\n", pool->nodes,
               first->offer.instance_type, first->market == SP_MARKET_SPOT ? "spot" : "on-demand",
               first->offer.provider, first->offer.region, *first->offer.zone ? " " : "",
               first->offer.zone, first->pool_price);
    if (pool->max_hourly_usd <= 0)
        printf("budget: none set (max_hourly_usd)\n");
    else if (first)
        printf("budget: within $%.2f/h\n", pool->max_hourly_usd);
    else if (set->n)
        printf("budget: OVER: the cheapest option costs $%.2f/h for the pool, above "
               "max_hourly_usd $%.2f; raise the budget, use fewer nodes or allow spot\n",
               set->items[0].pool_price, pool->max_hourly_usd);
}

static int print_text(const sp_pool *pool, const sp_offer_set *set, bool all)
{
    char canon[1024];
    sp_spec_format(&pool->accelerators, canon, sizeof(canon));
    printf("pool %s (%s): %u node%s of %s, %s\n", pool->name, pool->path, pool->nodes,
           pool->nodes == 1 ? "" : "s", canon, spot_policy_name(pool->spot));
    cli_print_cands(set, all ? set->n : DEFAULT_SHOWN, "TRY", true, stdout);
    cli_print_notes(set, stdout);
    if (!set->n) {
        printf("no offers match this pool\n");
        return EXIT_NO_OFFERS;
    }
    print_verdict(pool, set);
    printf("unknown offline:\n");
    for (size_t i = 0; i < sizeof(unknown_offline) / sizeof(unknown_offline[0]); i++)
        printf("  %s\n", unknown_offline[i]);
    return sp_offer_set_first(set) ? EXIT_OK : EXIT_OVER_BUDGET;
}

static int print_json(const sp_pool *pool, const sp_offer_set *set)
{
    char canon[1024];
    sp_spec_format(&pool->accelerators, canon, sizeof(canon));
    json_t *cands = json_array(), *unknown = json_array();
    for (size_t i = 0; cands && i < set->n; i++)
        json_array_append_new(cands, cli_cand_json(&set->items[i], i + 1));
    for (size_t i = 0; unknown && i < sizeof(unknown_offline) / sizeof(unknown_offline[0]); i++)
        json_array_append_new(unknown, json_string(unknown_offline[i]));
    const sp_cand *first = sp_offer_set_first(set);
    const char *verdict = !set->n ? "no-offers" : first ? "within" : "over";
    if (first && pool->max_hourly_usd <= 0)
        verdict = "no-budget";
    int rc = cli_print_json(json_pack(
        "{s:s, s:s, s:I, s:s, s:s, s:o, s:s, s:o, s:o, s:o, s:o}", "pool", pool->name, "path",
        pool->path, "nodes", (json_int_t)pool->nodes, "accelerators", canon, "spot",
        spot_policy_name(pool->spot), "max_hourly_usd",
        pool->max_hourly_usd > 0 ? json_real(pool->max_hourly_usd) : json_null(), "budget",
        verdict, "total_hourly_usd", first ? json_real(first->pool_price) : json_null(),
        "candidates", cands, "notes", cli_notes_json(set), "unknown_offline", unknown));
    if (rc)
        return rc;
    return !set->n ? EXIT_NO_OFFERS : first ? EXIT_OK : EXIT_OVER_BUDGET;
}

static int plan_pool(const sp_pool *pool, bool json, bool all)
{
    sp_registry reg;
    int rc = cli_open_registry(&reg, json);
    if (rc)
        return rc;
    sp_offers_request req;
    sp_offers_request_of_pool(pool, &req);
    sp_offer_set set;
    sp_err err = {0};
    if ((rc = sp_offers_collect(&reg, &req, &set, &err)) != SP_OK)
        rc = cli_fail(rc == SP_E_NOTFOUND ? EXIT_INVALID : cli_exit_code(rc), "%s: %s",
                      pool->path, err.msg);
    else {
        rc = json ? print_json(pool, &set) : print_text(pool, &set, all);
        sp_offer_set_free(&set);
    }
    sp_registry_close(&reg);
    return rc;
}

static int plan_exec(int argc, char **argv)
{
    static const struct option opts[] = {{"json", no_argument, NULL, 'j'},
                                         {"all", no_argument, NULL, 'a'},
                                         {NULL, 0, NULL, 0}};
    bool json = false, all = false;
    int ch;
    optind = 1;
    while ((ch = getopt_long(argc, argv, "ja", opts, NULL)) != -1) {
        if (ch == 'j')
            json = true;
        else if (ch == 'a')
            all = true;
        else
            return cli_fail(EXIT_USAGE, "see skypool plan --help");
    }
    if (optind != argc - 1)
        return cli_fail(EXIT_USAGE, "plan takes one pool file; see skypool plan --help");
    sp_pool *pool = NULL;
    sp_err err = {0};
    int rc = sp_pool_load(argv[optind], &pool, &err);
    if (rc)
        return cli_fail(cli_exit_code(rc), "%s", err.msg);
    rc = plan_pool(pool, json, all);
    sp_pool_free(pool);
    return rc;
}

const sp_cmd cmd_plan = {
    "plan",
    "what `up` would launch for a pool file, where, at what price",
    "POOL.yaml [--all] [--json]\n"
    "\n"
    "Resolves the pool's accelerators, ranks every candidate offer in the order `up` would try\n"
    "them (ordered specs by position, spot before on-demand for spot-then-on-demand, then by\n"
    "price and the pool's provider and region preference), prices the whole pool and checks it\n"
    "against max_hourly_usd. Works offline from the catalogs; quota and live capacity are not\n"
    "known to it.\n"
    "\n"
    "  --all     list every candidate (default: the first 15)\n"
    "  --json    machine-readable output\n"
    "\n"
    "exit codes: 0 a plan within budget, 3 invalid pool file, 4 no offers, 5 over budget\n",
    plan_exec,
};
