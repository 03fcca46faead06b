/* skypool ls: the pools known here. */
#include "cli.h"

#include <string.h>

static int ls_exec(int argc, char **argv)
{
    bool json = argc == 2 && !strcmp(argv[1], "--json");
    if (argc > 2 || (argc == 2 && !json))
        return cli_fail(EXIT_USAGE, "see skypool ls --help");
    sp_state *st = NULL;
    int rc = cli_open_state(&st);
    if (rc)
        return rc;
    rc = cli_list_pools(st, json);
    sp_state_close(st);
    return rc;
}

const sp_cmd cmd_ls = {
    "ls",
    "the pools known here",
    "[--json]\n"
    "\n"
    "The pools in the state store ($SKYPOOL_STATE_DIR, else $XDG_STATE_HOME/skypool, else\n"
    "~/.local/state/skypool), with their nodes up and wanted and their hourly price.\n",
    ls_exec,
};
