/* The skypool command: one file per subcommand, one table of commands (main.c). */
#ifndef SKYPOOL_CLI_H
#define SKYPOOL_CLI_H

#include "lifecycle.h"
#include "plan.h"
#include "registry.h"

#include <jansson.h>
#include <stdio.h>
#include <time.h>

/* Exit codes, documented in README.md and `skypool --help`. */
enum {
    EXIT_OK = 0,
    EXIT_FAILURE_ = 1,   /* a runtime failure: I/O, plugins, the network */
    EXIT_USAGE = 2,      /* bad command line */
    EXIT_INVALID = 3,    /* bad input: an accelerator spec or a pool file */
    EXIT_NO_OFFERS = 4,  /* nothing matches the request */
    EXIT_OVER_BUDGET = 5, /* offers exist, but none within the pool's budget */
    EXIT_QUOTA = 6,       /* every region answered, and no quota has room */
    EXIT_PARTIAL = 7,     /* up: some nodes run, others could not be had (or not reached) */
    EXIT_CHECK = 8        /* up: a node failed its check; check-node: the machine did */
};

typedef struct sp_cmd {
    const char *name;
    const char *summary;
    const char *usage;   /* full --help text after the "usage:" line */
    int (*exec)(int argc, char **argv);
} sp_cmd;

extern const sp_cmd cmd_offers, cmd_plan, cmd_validate, cmd_providers, cmd_catalog,
    cmd_accelerators, cmd_quota, cmd_check, cmd_check_node, cmd_up, cmd_down, cmd_status,
    cmd_ls;

/* Prints "skypool: <msg>" to stderr and returns code. */
__attribute__((format(printf, 2, 3))) int cli_fail(int code, const char *fmt, ...);
/* The exit code that goes with an sp_status. */
int cli_exit_code(int status);
/* Prints the command's usage to out. */
void cli_usage(const sp_cmd *cmd, FILE *out);
/* Handles -h/--help in argv for a command: prints usage and returns true. */
bool cli_wants_help(const sp_cmd *cmd, int argc, char **argv);

/* Opens the plugin registry and prints refused plugins as warnings (unless quiet). */
int cli_open_registry(sp_registry *reg, bool quiet);

/* Splits a comma-separated argument into a list (appended to *list); false on out of memory. */
bool cli_split_list(const char *arg, char ***list, size_t *n);
void cli_free_list(char **list, size_t n);

/* Plain-text tables: cells are copied; columns are sized to fit. */
typedef struct cli_table cli_table;
cli_table *cli_table_new(size_t columns, const char *const *headers);
void cli_table_add(cli_table *t, const char *const *cells);
void cli_table_print(cli_table *t, FILE *out);
void cli_table_free(cli_table *t);

/* Shared rendering of offers (offers, plan). */
void cli_cand_cells(const sp_cand *c, char cells[][64]);
extern const char *const cli_cand_headers[];
#define CLI_CAND_COLUMNS 9
json_t *cli_cand_json(const sp_cand *c, size_t rank);
/* The first `shown` candidates as a table, ranked; the budget column only when with_budget. */
void cli_print_cands(const sp_offer_set *set, size_t shown, const char *rank_header,
                     bool with_budget, FILE *out);
void cli_print_notes(const sp_offer_set *set, FILE *out);
json_t *cli_notes_json(const sp_offer_set *set);
/* --live: refreshes the allowed providers that can, for the request's regions (else where their
 * catalog sells the request), printing progress to stderr unless quiet. Returns a JSON report. */
json_t *cli_refresh_live(sp_registry *reg, const sp_offers_request *req, bool quiet);

/* Progress of up and down (progress.c). */
typedef struct cli_live_line {
    char text[160];
    time_t since;
} cli_live_line;

typedef struct cli_progress {
    bool json, live, drawn;
    unsigned nodes;
    time_t started;
    cli_live_line *lines;
} cli_progress;

void cli_progress_init(cli_progress *p, bool json, unsigned nodes);
void cli_progress_done(cli_progress *p);
void cli_progress_event(void *ctx, const sp_event *ev);
/* Asks a yes/no question on the terminal; without one, only --yes confirms. */
bool cli_confirm(const char *question, bool yes);
/* The pools table of status and ls. */
int cli_list_pools(sp_state *st, bool json);
/* Opens the state store, printing the error; returns an exit code. */
int cli_open_state(sp_state **st);

/* Prints JSON (indented) to stdout and frees it. */
int cli_print_json(json_t *j);
/* One JSON object on one line (event streams), then frees it. */
int cli_print_json_line(json_t *j);

#endif
