/* skypool offers SPEC: ranked offers across providers, from the catalogs. */
#include "cli.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_LIMIT 20

typedef struct offers_args {
    const char *spec;
    bool spot, json, all, live;
    unsigned nodes;
    long limit;
    char **providers, **regions, **mig;
    size_t n_providers, n_regions, n_mig;
} offers_args;

static int parse_args(int argc, char **argv, offers_args *a)
{
    static const struct option opts[] = {
        {"spot", no_argument, NULL, 's'},     {"json", no_argument, NULL, 'j'},
        {"live", no_argument, NULL, 'L'},
        {"all", no_argument, NULL, 'a'},      {"provider", required_argument, NULL, 'p'},
        {"region", required_argument, NULL, 'r'}, {"nodes", required_argument, NULL, 'n'},
        {"limit", required_argument, NULL, 'l'},  {"mig", required_argument, NULL, 'm'},
        {NULL, 0, NULL, 0}};
    int ch;
    char *end;
    optind = 1;
    while ((ch = getopt_long(argc, argv, "sjap:r:n:l:m:", opts, NULL)) != -1) {
        switch (ch) {
        case 's': a->spot = true; break;
        case 'j': a->json = true; break;
        case 'a': a->all = true; break;
        case 'L': a->live = true; break;
        case 'p':
            if (!cli_split_list(optarg, &a->providers, &a->n_providers))
                return cli_fail(EXIT_FAILURE_, "out of memory");
            break;
        case 'r':
            if (!cli_split_list(optarg, &a->regions, &a->n_regions))
                return cli_fail(EXIT_FAILURE_, "out of memory");
            break;
        case 'm':
            if (!cli_split_list(optarg, &a->mig, &a->n_mig))
                return cli_fail(EXIT_FAILURE_, "out of memory");
            break;
        case 'n':
            a->nodes = (unsigned)strtoul(optarg, &end, 10);
            if (*end || a->nodes < 1 || a->nodes > 1024)
                return cli_fail(EXIT_USAGE, "--nodes: '%s' is not a count from 1 to 1024", optarg);
            break;
        case 'l':
            a->limit = strtol(optarg, &end, 10);
            if (*end || a->limit < 1)
                return cli_fail(EXIT_USAGE, "--limit: '%s' is not a positive count", optarg);
            break;
        default: return cli_fail(EXIT_USAGE, "see skypool offers --help");
        }
    }
    if (optind != argc - 1)
        return cli_fail(EXIT_USAGE, "offers takes one accelerator spec, like H100:8; see "
                                    "skypool offers --help");
    a->spec = argv[optind];
    return EXIT_OK;
}

static int print_text(const sp_offer_set *set, const offers_args *a, const char *canon)
{
    printf("%s, %s, %u node%s\n", canon, a->spot ? "spot" : "on-demand", a->nodes,
           a->nodes == 1 ? "" : "s");
    size_t shown = a->all ? set->n : (size_t)(a->limit ? a->limit : DEFAULT_LIMIT);
    cli_print_cands(set, shown, "#", false, stdout);
    cli_print_notes(set, stdout);
    if (!set->n)
        printf("no offers match %s\n", canon);
    return set->n ? EXIT_OK : EXIT_NO_OFFERS;
}

static int print_json(const sp_offer_set *set, const offers_args *a, const char *canon,
                      json_t *live)
{
    json_t *offers = json_array();
    for (size_t i = 0; offers && i < set->n; i++)
        json_array_append_new(offers, cli_cand_json(&set->items[i], i + 1));
    int rc = cli_print_json(json_pack("{s:s, s:s, s:s, s:I, s:o, s:o, s:o}", "spec", a->spec,
                                      "canonical", canon, "market",
                                      a->spot ? "spot" : "on-demand", "nodes",
                                      (json_int_t)a->nodes, "offers", offers, "notes",
                                      cli_notes_json(set), "live",
                                      live ? live : json_null()));
    return rc ? rc : (set->n ? EXIT_OK : EXIT_NO_OFFERS);
}

static int run(const offers_args *a)
{
    sp_spec spec;
    sp_err err = {0};
    if (sp_spec_parse(a->spec, &spec, &err) != SP_OK)
        return cli_fail(EXIT_INVALID, "accelerator spec '%s': %s", a->spec, err.msg);
    char canon[1024];
    sp_spec_format(&spec, canon, sizeof(canon));
    sp_registry reg;
    int rc = cli_open_registry(&reg, a->json);
    if (rc)
        return rc;
    sp_offers_request req = {.spec = &spec,
                             .spot = a->spot ? SP_SPOT_ONLY : SP_SPOT_ON_DEMAND,
                             .providers = (const char *const *)a->providers,
                             .n_providers = a->n_providers,
                             .regions = (const char *const *)a->regions,
                             .n_regions = a->n_regions,
                             .nodes = a->nodes,
                             .mig = (const char *const *)a->mig,
                             .n_mig = a->n_mig};
    json_t *live = a->live ? cli_refresh_live(&reg, &req, a->json) : NULL;
    sp_offer_set set;
    if ((rc = sp_offers_collect(&reg, &req, &set, &err)) != SP_OK) {
        rc = cli_fail(rc == SP_E_NOTFOUND ? EXIT_USAGE : cli_exit_code(rc), "%s", err.msg);
        json_decref(live);
    } else {
        rc = a->json ? print_json(&set, a, canon, live) : print_text(&set, a, canon);
        if (!a->json)
            json_decref(live);
        sp_offer_set_free(&set);
    }
    sp_registry_close(&reg);
    return rc;
}

static int offers_exec(int argc, char **argv)
{
    offers_args a = {.nodes = 1};
    int rc = parse_args(argc, argv, &a);
    if (rc == EXIT_OK)
        rc = run(&a);
    cli_free_list(a.providers, a.n_providers);
    cli_free_list(a.regions, a.n_regions);
    cli_free_list(a.mig, a.n_mig);
    return rc;
}

const sp_cmd cmd_offers = {
    "offers",
    "ranked offers for an accelerator spec across providers",
    "SPEC [--spot] [--live] [--provider P[,P]] [--region R[,R]] [--nodes N] [--mig LAYOUT]\n"
    "       [--limit N | --all] [--json]\n"
    "\n"
    "Lists every offer that matches SPEC, cheapest first, from the providers' catalogs.\n"
    "\n"
    "SPEC is an accelerator spec: H100:8, A100-80GB:8, A100:80GB, H100-PCIe:2, 24GB+:4,\n"
    "H100!:1..8 (exact model, 1 to 8 per node), trn1:16; [A:8, B:8] tries A then B;\n"
    "{A:8, B:8} takes the cheaper. Names: see skypool accelerators.\n"
    "\n"
    "  --spot          rank by spot price; only offers sold as spot\n"
    "  --live          first refresh the offers from the providers' APIs (needs credentials),\n"
    "                  for --region's regions, else where the catalog sells SPEC; the result\n"
    "                  is cached (see skypool catalog) and used for 6 hours\n"
    "  --provider P    only these providers, in this order of preference\n"
    "  --region R      only these regions, in this order of preference\n"
    "  --nodes N       price N nodes (the $/H TOTAL column)\n"
    "  --mig LAYOUT    only GPUs that can be split so: 3g.40gb (as many as fit) or a\n"
    "                  comma-separated list of profiles per GPU (4g.40gb,3g.40gb)\n"
    "  --limit N       show the first N offers (default 20); --all shows every one\n"
    "  --json          machine-readable output (every offer)\n"
    "\n"
    "exit codes: 0 offers found, 2 bad arguments, 3 invalid spec, 4 no offer matches\n",
    offers_exec,
};
