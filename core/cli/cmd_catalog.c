/* skypool catalog: where each provider's offers come from, and how old they are. */
#include "cli.h"

#include <string.h>

static int catalog_exec(int argc, char **argv)
{
    bool json = argc == 2 && strcmp(argv[1], "--json") == 0;
    if (argc > 2 || (argc == 2 && !json))
        return cli_fail(EXIT_USAGE, "see skypool catalog --help");
    sp_registry reg;
    int rc = cli_open_registry(&reg, json);
    if (rc)
        return rc;
    const char *h[] = {"PROVIDER", "ROWS", "DATE", "KIND", "SOURCE", "FILE"};
    cli_table *t = cli_table_new(6, h);
    json_t *arr = json ? json_array() : NULL;
    for (size_t i = 0; i < reg.n_plugins; i++) {
        sp_err err = {0};
        const sp_catalog *cat = sp_host_catalog(&reg, reg.plugins[i].table.name, &err);
        if (!cat) {
            fprintf(stderr, "skypool: %s: %s\n", reg.plugins[i].table.name, err.msg);
            rc = EXIT_FAILURE_;
            continue;
        }
        sp_catalog_info ci;
        sp_catalog_info_get(cat, &ci);
        char rows[32];
        snprintf(rows, sizeof(rows), "%zu", ci.n_rows);
        const char *row[] = {ci.provider, rows, ci.date, ci.live ? "live" : "bundled",
                             ci.source, ci.path};
        cli_table_add(t, row);
        if (arr)
            json_array_append_new(arr, json_pack("{s:s, s:I, s:s, s:b, s:s, s:s, s:I}",
                                                 "provider", ci.provider, "rows",
                                                 (json_int_t)ci.n_rows, "date", ci.date, "live",
                                                 ci.live, "source", ci.source, "path", ci.path,
                                                 "age_seconds", (json_int_t)ci.age_s));
    }
    if (arr)
        cli_print_json(json_pack("{s:s, s:o}", "catalog_dir", sp_catalog_dir(), "catalogs", arr));
    else
        cli_table_print(t, stdout);
    cli_table_free(t);
    sp_registry_close(&reg);
    return rc;
}

const sp_cmd cmd_catalog = {
    "catalog",
    "the offer catalogs: source, date, rows, bundled or live",
    "[--json]\n"
    "\n"
    "Shows, for each provider, the catalog its offers come from: the bundled file (built by\n"
    "tools/build-catalog.py from dated public price lists) or a live cache refreshed from the\n"
    "provider's API, with its source and date. Set SKYPOOL_CATALOG_DIR to use other files.\n",
    catalog_exec,
};
