/* skypool down POOL: terminate every node of the pool, found by state and by tags. */
#include "cli.h"

#include <string.h>

static int down_exec(int argc, char **argv)
{
    bool yes = false, json = false;
    const char *name = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--yes") || !strcmp(argv[i], "-y"))
            yes = true;
        else if (!strcmp(argv[i], "--json"))
            json = true;
        else if (argv[i][0] == '-' || name)
            return cli_fail(EXIT_USAGE, "see skypool down --help");
        else
            name = argv[i];
    }
    if (!name)
        return cli_fail(EXIT_USAGE, "down takes a pool name; `skypool ls` lists them");
    sp_state *st = NULL;
    int rc = cli_open_state(&st);
    if (rc)
        return rc;
    sp_pool_row pool;
    sp_err err = {0};
    if (sp_state_pool_find(st, name, &pool, &err) != SP_OK) {
        sp_state_close(st);
        return cli_fail(err.code == SP_E_NOTFOUND ? EXIT_USAGE : EXIT_FAILURE_, "%s", err.msg);
    }
    char question[160];
    snprintf(question, sizeof(question), "terminate every node of pool %s?", name);
    if (!cli_confirm(question, yes)) {
        sp_state_close(st);
        return EXIT_USAGE;
    }
    sp_registry reg;
    if ((rc = cli_open_registry(&reg, json)) != EXIT_OK) {
        sp_state_close(st);
        return rc;
    }
    cli_progress prog;
    cli_progress_init(&prog, json, 0);
    sp_down_result res;
    rc = sp_down(&reg, st, &pool, cli_progress_event, &prog, &res, &err);
    cli_progress_done(&prog);
    if (rc)
        rc = cli_fail(cli_exit_code(rc), "%s", err.msg);
    else if (json)
        rc = cli_print_json_line(json_pack("{s:s, s:s, s:I}", "event", "down", "pool", name,
                                      "terminated", (json_int_t)res.terminated));
    else
        printf("pool %s is down: %u node%s terminated\n", name, res.terminated,
               res.terminated == 1 ? "" : "s");
    sp_registry_close(&reg);
    sp_state_close(st);
    return rc;
}

const sp_cmd cmd_down = {
    "down",
    "terminate every node of a pool",
    "POOL [--yes] [--json]\n"
    "\n"
    "Finds the pool's instances in the state store and, by the pool's tags, in the clouds (an\n"
    "instance a crash left unrecorded included), terminates each (journaled), checks that none\n"
    "is left, and then forgets the pool. Asks first unless --yes.\n"
    "\n"
    "exit codes: 0 down, 1 some node could not be terminated (the pool is kept; run it again),\n"
    "2 unknown pool or not confirmed\n",
    down_exec,
};
