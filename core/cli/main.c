#include "cli.h"

#include "util.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static const sp_cmd *const commands[] = {
    &cmd_offers, &cmd_plan, &cmd_quota, &cmd_up,  &cmd_status,    &cmd_down,
    &cmd_ls,     &cmd_validate, &cmd_check, &cmd_check_node, &cmd_providers, &cmd_catalog,
    &cmd_accelerators,
};
#define N_COMMANDS (sizeof(commands) / sizeof(commands[0]))

static void usage(FILE *out)
{
    fprintf(out, "usage: skypool [--version] [--help] <command> [<args>]\n\n"
                 "Cloud GPU pools: find, price and plan accelerators across providers.\n\n"
                 "commands:\n");
    for (size_t i = 0; i < N_COMMANDS; i++)
        fprintf(out, "  %-14s %s\n", commands[i]->name, commands[i]->summary);
    fprintf(out, "\nRun 'skypool <command> --help' for a command's options.\n\n"
                 "exit codes: 0 success, 1 runtime failure, 2 bad command line, 3 invalid spec\n"
                 "or pool file, 4 no matching offers, 5 nothing within the pool's budget, 6 no quota\n"
                 "has room, 7 up got only some of the nodes, 8 a node failed its check\n");
}

/* Exact name, else the one command that the word begins (git's and tmux's rule). */
static const sp_cmd *find_command(const char *word, int *ambiguous)
{
    const sp_cmd *found = NULL;
    *ambiguous = 0;
    for (size_t i = 0; i < N_COMMANDS; i++) {
        if (strcmp(commands[i]->name, word) == 0)
            return commands[i];
        if (strncmp(commands[i]->name, word, strlen(word)) == 0) {
            *ambiguous += found != NULL;
            found = commands[i];
        }
    }
    return *ambiguous ? NULL : found;
}

static int unknown_command(const char *word, int ambiguous)
{
    if (ambiguous)
        return cli_fail(EXIT_USAGE, "'%s' is ambiguous; see skypool --help", word);
    const char *names[N_COMMANDS];
    for (size_t i = 0; i < N_COMMANDS; i++)
        names[i] = commands[i]->name;
    const char *hint = sp_suggest(word, names, N_COMMANDS);
    if (hint)
        return cli_fail(EXIT_USAGE, "unknown command '%s'; did you mean %s?", word, hint);
    return cli_fail(EXIT_USAGE, "unknown command '%s'; see skypool --help", word);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return EXIT_USAGE;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "help") == 0) {
        int amb;
        const sp_cmd *c = argc > 2 ? find_command(argv[2], &amb) : NULL;
        if (c)
            cli_usage(c, stdout);
        else
            usage(stdout);
        return EXIT_OK;
    }
    if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "version") == 0) {
        printf("skypool %s (provider ABI %d.%d)\n", sp_version(), SP_PROVIDER_ABI_MAJOR,
               SP_PROVIDER_ABI_MINOR);
        return EXIT_OK;
    }
    int ambiguous;
    const sp_cmd *cmd = find_command(argv[1], &ambiguous);
    if (!cmd)
        return unknown_command(argv[1], ambiguous);
    if (cli_wants_help(cmd, argc - 1, argv + 1))
        return EXIT_OK;
    return cmd->exec(argc - 1, argv + 1);
}
