/* skypool quota SPEC|POOL.yaml: per provider and region, whether the account's quota lets the
 * request run, and the exact increase to ask for when it does not. */
#include "cli.h"

#include "util.h"

#include <getopt.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MAX_TASKS 128

typedef struct quota_args {
    const char *what;
    bool spot, json;
    unsigned nodes;
    char **providers, **regions;
    size_t n_providers, n_regions;
} quota_args;

/* One question to one provider: the first-ranked offer of a (provider, region, market). */
typedef struct task {
    const sp_plugin *plugin;
    const sp_cand *cand;
    unsigned nodes;
    sp_quota_report report;
    int rc;
    sp_err err;
} task;

static void *run_task(void *arg)
{
    task *t = arg;
    sp_quota_query q = {sizeof(q), &t->cand->offer, t->nodes, t->cand->market};
    t->rc = t->plugin->table.quota(t->plugin->ctx, &q, &t->report, &t->err);
    return NULL;
}

static bool seen(const task *tasks, size_t n, const sp_cand *c)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(tasks[i].cand->offer.provider, c->offer.provider) == 0 &&
            strcmp(tasks[i].cand->offer.region, c->offer.region) == 0 &&
            tasks[i].cand->market == c->market)
            return true;
    return false;
}

static size_t plan_tasks(sp_registry *reg, const sp_offer_set *set, unsigned nodes, task *tasks,
                         json_t *unsupported)
{
    size_t n = 0;
    for (size_t i = 0; i < set->n && n < MAX_TASKS; i++) {
        const sp_cand *c = &set->items[i];
        const sp_plugin *p = sp_registry_find(reg, c->offer.provider);
        if (!p->table.quota) {
            json_t *name = json_string(c->offer.provider);
            bool listed = false;
            size_t k;
            json_t *v;
            json_array_foreach(unsupported, k, v) listed |= json_equal(v, name);
            if (!listed)
                json_array_append(unsupported, name);
            json_decref(name);
            continue;
        }
        if (seen(tasks, n, c))
            continue;
        memset(&tasks[n], 0, sizeof(tasks[n]));
        tasks[n].plugin = p;
        tasks[n].cand = c;
        tasks[n].nodes = nodes;
        n++;
    }
    return n;
}

/* Providers answer for their regions in parallel: each answer is a few round trips. */
static void run_tasks(task *tasks, size_t n)
{
    pthread_t threads[MAX_TASKS];
    bool started[MAX_TASKS] = {false};
    for (size_t i = 0; i < n; i++) {
        started[i] = pthread_create(&threads[i], NULL, run_task, &tasks[i]) == 0;
        if (!started[i])
            run_task(&tasks[i]);
    }
    for (size_t i = 0; i < n; i++)
        if (started[i])
            pthread_join(threads[i], NULL);
}

static const char *verdict_of(const task *t)
{
    if (t->rc)
        return "error";
    return t->report.verdict == SP_VERDICT_OK      ? "ok"
           : t->report.verdict == SP_VERDICT_SHORT ? "short"
                                                   : "unknown";
}

static void print_text(const task *tasks, size_t n, json_t *unsupported)
{
    const char *h[] = {"PROVIDER", "REGION", "MARKET", "INSTANCE", "QUOTA", "LIMIT", "USED",
                       "NEEDED", "VERDICT"};
    cli_table *t = cli_table_new(9, h);
    for (size_t i = 0; i < n; i++) {
        const task *k = &tasks[i];
        const sp_quota_report *r = &k->report;
        char quota[192] = "-", lim[32] = "-", used[32] = "-", need[32] = "-";
        if (!k->rc) {
            snprintf(quota, sizeof(quota), "%s %s", r->quota_code, r->quota_name);
            snprintf(lim, sizeof(lim), "%.0f %s", r->limit, r->unit);
            snprintf(used, sizeof(used), "%.0f", r->used);
            snprintf(need, sizeof(need), "%.0f", r->needed);
        }
        const char *row[] = {k->cand->offer.provider, k->cand->offer.region,
                             k->cand->market == SP_MARKET_SPOT ? "spot" : "on-demand",
                             k->cand->offer.instance_type, quota, lim, used, need,
                             verdict_of(k)};
        cli_table_add(t, row);
    }
    cli_table_print(t, stdout);
    cli_table_free(t);
    for (size_t i = 0; i < n; i++) {
        if (tasks[i].rc)
            printf("error: %s %s: %s\n", tasks[i].cand->offer.provider,
                   tasks[i].cand->offer.region, tasks[i].err.msg);
        else if (tasks[i].report.verdict == SP_VERDICT_SHORT)
            printf("fix: %s\n", tasks[i].report.fix);
    }
    size_t k;
    json_t *v;
    json_array_foreach(unsupported, k, v)
        printf("note: %s: quota checks are not supported by this provider yet\n",
               json_string_value(v));
}

static json_t *task_json(const task *k)
{
    const sp_quota_report *r = &k->report;
    json_t *j = json_pack("{s:s, s:s, s:s, s:s, s:s}", "provider", k->cand->offer.provider,
                          "region", k->cand->offer.region, "market",
                          k->cand->market == SP_MARKET_SPOT ? "spot" : "on-demand",
                          "instance_type", k->cand->offer.instance_type, "verdict",
                          verdict_of(k));
    if (k->rc)
        json_object_set_new(j, "error", json_string(k->err.msg));
    else
        json_object_update(j, json_pack("{s:s, s:s, s:s, s:f, s:f, s:f, s:s?}", "quota_code",
                                        r->quota_code, "quota_name", r->quota_name, "unit",
                                        r->unit, "limit", r->limit, "used", r->used, "needed",
                                        r->needed, "fix", r->fix[0] ? r->fix : NULL));
    return j;
}

static int exit_code(const task *tasks, size_t n)
{
    size_t ok = 0, short_ = 0;
    for (size_t i = 0; i < n; i++) {
        ok += !tasks[i].rc && tasks[i].report.verdict == SP_VERDICT_OK;
        short_ += !tasks[i].rc && tasks[i].report.verdict == SP_VERDICT_SHORT;
    }
    if (ok)
        return EXIT_OK;
    return short_ ? EXIT_QUOTA : EXIT_FAILURE_;
}

static int report(sp_registry *reg, const sp_offer_set *set, const quota_args *a,
                  unsigned nodes)
{
    task *tasks = calloc(MAX_TASKS, sizeof(*tasks));
    json_t *unsupported = json_array();
    if (!tasks || !unsupported) {
        free(tasks);
        json_decref(unsupported);
        return cli_fail(EXIT_FAILURE_, "out of memory");
    }
    size_t n = plan_tasks(reg, set, nodes, tasks, unsupported);
    run_tasks(tasks, n);
    int rc = n ? exit_code(tasks, n) : EXIT_NO_OFFERS;
    if (a->json) {
        json_t *arr = json_array();
        for (size_t i = 0; i < n; i++)
            json_array_append_new(arr, task_json(&tasks[i]));
        int prc = cli_print_json(json_pack("{s:I, s:o, s:O}", "nodes", (json_int_t)nodes,
                                           "regions", arr, "unsupported", unsupported));
        rc = prc ? prc : rc;
    } else if (n)
        print_text(tasks, n, unsupported);
    else
        printf("no offers to check quota for\n");
    json_decref(unsupported);
    free(tasks);
    return rc;
}

static bool is_pool_file(const char *what)
{
    size_t n = strlen(what);
    struct stat st;
    return (n > 5 && strcmp(what + n - 5, ".yaml") == 0) ||
           (n > 4 && strcmp(what + n - 4, ".yml") == 0) || (stat(what, &st) == 0 &&
                                                            S_ISREG(st.st_mode));
}

static int run(const quota_args *a)
{
    sp_pool *pool = NULL;
    sp_spec spec;
    sp_err err = {0};
    sp_offers_request req = {.spec = &spec, .nodes = a->nodes,
                             .spot = a->spot ? SP_SPOT_ONLY : SP_SPOT_ON_DEMAND};
    if (is_pool_file(a->what)) {
        if (sp_pool_load(a->what, &pool, &err) != SP_OK)
            return cli_fail(EXIT_INVALID, "%s", err.msg);
        sp_offers_request_of_pool(pool, &req);
    } else if (sp_spec_parse(a->what, &spec, &err) != SP_OK)
        return cli_fail(EXIT_INVALID, "accelerator spec '%s': %s", a->what, err.msg);
    if (a->n_providers) {
        req.providers = (const char *const *)a->providers;
        req.n_providers = a->n_providers;
    }
    if (a->n_regions) {
        req.regions = (const char *const *)a->regions;
        req.n_regions = a->n_regions;
    }
    sp_registry reg;
    int rc = cli_open_registry(&reg, a->json);
    sp_offer_set set;
    if (!rc && (rc = sp_offers_collect(&reg, &req, &set, &err)) != SP_OK)
        rc = cli_fail(rc == SP_E_NOTFOUND ? EXIT_USAGE : cli_exit_code(rc), "%s", err.msg);
    else if (!rc) {
        rc = report(&reg, &set, a, req.nodes);
        sp_offer_set_free(&set);
    }
    sp_registry_close(&reg);
    sp_pool_free(pool);
    return rc;
}

static int parse_args(int argc, char **argv, quota_args *a)
{
    static const struct option opts[] = {
        {"spot", no_argument, NULL, 's'},        {"json", no_argument, NULL, 'j'},
        {"provider", required_argument, NULL, 'p'}, {"region", required_argument, NULL, 'r'},
        {"nodes", required_argument, NULL, 'n'}, {NULL, 0, NULL, 0}};
    int ch;
    char *end;
    optind = 1;
    while ((ch = getopt_long(argc, argv, "sjp:r:n:", opts, NULL)) != -1) {
        if (ch == 's')
            a->spot = true;
        else if (ch == 'j')
            a->json = true;
        else if (ch == 'p' && !cli_split_list(optarg, &a->providers, &a->n_providers))
            return cli_fail(EXIT_FAILURE_, "out of memory");
        else if (ch == 'r' && !cli_split_list(optarg, &a->regions, &a->n_regions))
            return cli_fail(EXIT_FAILURE_, "out of memory");
        else if (ch == 'n' && ((a->nodes = (unsigned)strtoul(optarg, &end, 10)) < 1 || *end ||
                               a->nodes > 1024))
            return cli_fail(EXIT_USAGE, "--nodes: '%s' is not a count from 1 to 1024", optarg);
        else if (ch == '?' || ch == ':')
            return cli_fail(EXIT_USAGE, "see skypool quota --help");
    }
    if (optind != argc - 1)
        return cli_fail(EXIT_USAGE, "quota takes an accelerator spec or a pool file; see skypool "
                                    "quota --help");
    a->what = argv[optind];
    return EXIT_OK;
}

static int quota_exec(int argc, char **argv)
{
    quota_args a = {.nodes = 1};
    int rc = parse_args(argc, argv, &a);
    if (rc == EXIT_OK)
        rc = run(&a);
    cli_free_list(a.providers, a.n_providers);
    cli_free_list(a.regions, a.n_regions);
    return rc;
}

const sp_cmd cmd_quota = {
    "quota",
    "whether your accounts' quotas allow a request, per region, and the fix",
    "SPEC|POOL.yaml [--spot] [--provider P[,P]] [--region R[,R]] [--nodes N] [--json]\n"
    "\n"
    "For each provider and region that sells the request (the cheapest offer of each), asks the\n"
    "provider for the quota that governs it (AWS: the vCPU quota of the instance family and\n"
    "market, from Service Quotas) and what the account uses now, and says whether the request\n"
    "fits. When it does not, prints the exact increase to ask for. A pool file brings its own\n"
    "nodes, markets, providers and regions. Needs credentials (see skypool check).\n"
    "\n"
    "exit codes: 0 some region has room, 6 every region answered and none has room, 1 no\n"
    "answer (credentials, network), 3 invalid spec or pool file, 4 no offers\n",
    quota_exec,
};
