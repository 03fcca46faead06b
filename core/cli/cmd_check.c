/* skypool check: which providers have credentials their cloud accepts, and why not. */
#include "cli.h"

#include <string.h>

static int check_exec(int argc, char **argv)
{
    bool json = argc == 2 && strcmp(argv[1], "--json") == 0;
    if (argc > 2 || (argc == 2 && !json))
        return cli_fail(EXIT_USAGE, "see skypool check --help");
    sp_registry reg;
    int rc = cli_open_registry(&reg, json);
    if (rc)
        return rc;
    const char *h[] = {"PROVIDER", "CREDENTIALS", "DETAIL"};
    cli_table *t = cli_table_new(3, h);
    json_t *arr = json_array();
    size_t usable = 0;
    for (size_t i = 0; i < reg.n_plugins; i++) {
        const sp_plugin *p = &reg.plugins[i];
        char source[256] = "";
        sp_err err = {0};
        const char *state, *detail;
        if (!p->table.check_credentials) {
            state = "-";
            detail = "credential checks are not supported by this provider yet";
        } else if (p->table.check_credentials(p->ctx, source, sizeof(source), &err) == SP_OK) {
            state = "ok";
            detail = source;
            usable++;
        } else {
            state = err.code == SP_E_AUTH ? "missing or refused" : "error";
            detail = err.msg;
        }
        const char *row[] = {p->table.name, state, detail};
        cli_table_add(t, row);
        json_array_append_new(arr, json_pack("{s:s, s:s, s:s}", "provider", p->table.name,
                                             "credentials", state, "detail", detail));
    }
    if (json)
        rc = cli_print_json(json_pack("{s:o}", "providers", arr));
    else {
        cli_table_print(t, stdout);
        json_decref(arr);
    }
    cli_table_free(t);
    sp_registry_close(&reg);
    return rc ? rc : usable ? EXIT_OK : EXIT_FAILURE_;
}

const sp_cmd cmd_check = {
    "check",
    "which providers have usable credentials, and why not",
    "[--json]\n"
    "\n"
    "For each provider: where its credentials come from (as its own tools would find them) and\n"
    "whether its cloud accepts them (AWS: a signed DescribeRegions call). Secrets are never\n"
    "printed.\n"
    "\n"
    "exit codes: 0 at least one provider is usable, 1 none is\n",
    check_exec,
};
