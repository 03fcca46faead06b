/* skypool validate POOL.yaml...: check pool files without planning. */
#include "cli.h"

#include <string.h>

static int validate_exec(int argc, char **argv)
{
    bool json = argc > 1 && strcmp(argv[1], "--json") == 0;
    int first = json ? 2 : 1, worst = EXIT_OK;
    if (first >= argc)
        return cli_fail(EXIT_USAGE, "validate takes one or more pool files; see skypool "
                                    "validate --help");
    json_t *results = json ? json_array() : NULL;
    for (int i = first; i < argc; i++) {
        sp_pool *pool = NULL;
        sp_err err = {0};
        int rc = sp_pool_load(argv[i], &pool, &err);
        if (json)
            json_array_append_new(results,
                                  json_pack("{s:s, s:b, s:s?}", "path", argv[i], "valid", rc == 0,
                                            "error", rc ? err.msg : NULL));
        else if (rc)
            fprintf(stderr, "%s\n", err.msg);
        else
            printf("%s: ok (pool %s, %u node%s)\n", argv[i], pool->name, pool->nodes,
                   pool->nodes == 1 ? "" : "s");
        if (rc && worst == EXIT_OK)
            worst = cli_exit_code(rc);
        sp_pool_free(pool);
    }
    if (json) {
        int rc = cli_print_json(results);
        if (rc)
            return rc;
    }
    return worst;
}

const sp_cmd cmd_validate = {
    "validate",
    "check pool files: errors with file:line:column and the key path",
    "[--json] POOL.yaml...\n"
    "\n"
    "Checks each pool file against the pool schema (schemas/pool.schema.json) and the\n"
    "accelerator and MIG rules, and prints each error as file:line:column: key.path: message.\n"
    "\n"
    "exit codes: 0 all valid, 1 a file could not be read, 3 a file is invalid\n",
    validate_exec,
};
