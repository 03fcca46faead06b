/* Helpers shared by the subcommands: errors, usage, registry, lists, tables, JSON. */
#include "cli.h"

#include "util.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

int cli_fail(int code, const char *fmt, ...)
{
    va_list ap;
    fputs("skypool: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return code;
}

int cli_exit_code(int status)
{
    switch (status) {
    case SP_OK: return EXIT_OK;
    case SP_E_INVALID: return EXIT_INVALID;
    case SP_E_BUDGET: return EXIT_OVER_BUDGET;
    default: return EXIT_FAILURE_;
    }
}

void cli_usage(const sp_cmd *cmd, FILE *out)
{
    fprintf(out, "usage: skypool %s %s", cmd->name, cmd->usage);
}

bool cli_wants_help(const sp_cmd *cmd, int argc, char **argv)
{
    for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            cli_usage(cmd, stdout);
            return true;
        }
    return false;
}

int cli_open_registry(sp_registry *reg, bool quiet)
{
    sp_err err = {0};
    int rc = sp_registry_open(reg, &err);
    if (rc)
        return cli_fail(EXIT_FAILURE_, "%s", err.msg);
    for (size_t i = 0; !quiet && i < reg->n_refused; i++)
        fprintf(stderr, "skypool: warning: %s\n", reg->refused[i]);
    return EXIT_OK;
}

bool cli_split_list(const char *arg, char ***list, size_t *n)
{
    char *copy = sp_strdup(arg), *save = NULL;
    if (!copy)
        return false;
    bool ok = true;
    for (char *w = strtok_r(copy, ",", &save); w && ok; w = strtok_r(NULL, ",", &save)) {
        char **grown = realloc(*list, (*n + 1) * sizeof(char *));
        ok = grown && (grown[*n] = sp_strdup(w));
        if (grown)
            *list = grown;
        if (ok)
            (*n)++;
    }
    free(copy);
    return ok;
}

void cli_free_list(char **list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(list[i]);
    free(list);
}

struct cli_table {
    size_t columns;
    char **cells; /* rows * columns, the header row first */
    size_t rows, cap;
};

cli_table *cli_table_new(size_t columns, const char *const *headers)
{
    cli_table *t = calloc(1, sizeof(*t));
    if (!t)
        return NULL;
    t->columns = columns;
    cli_table_add(t, headers);
    return t;
}

void cli_table_add(cli_table *t, const char *const *cells)
{
    if (!t)
        return;
    if (t->rows == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 16;
        char **grown = realloc(t->cells, cap * t->columns * sizeof(char *));
        if (!grown)
            return;
        t->cells = grown;
        t->cap = cap;
    }
    for (size_t c = 0; c < t->columns; c++)
        t->cells[t->rows * t->columns + c] = sp_strdup(cells[c] ? cells[c] : "");
    t->rows++;
}

void cli_table_print(cli_table *t, FILE *out)
{
    if (!t)
        return;
    size_t width[32] = {0};
    for (size_t r = 0; r < t->rows; r++)
        for (size_t c = 0; c < t->columns && c < 32; c++) {
            const char *s = t->cells[r * t->columns + c];
            size_t w = s ? strlen(s) : 0;
            if (w > width[c])
                width[c] = w;
        }
    for (size_t r = 0; r < t->rows; r++) {
        for (size_t c = 0; c < t->columns && c < 32; c++) {
            const char *s = t->cells[r * t->columns + c];
            if (c + 1 == t->columns)
                fputs(s ? s : "", out);
            else
                fprintf(out, "%-*s  ", (int)width[c], s ? s : "");
        }
        fputc('\n', out);
    }
}

void cli_table_free(cli_table *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->rows * t->columns; i++)
        free(t->cells[i]);
    free(t->cells);
    free(t);
}

int cli_print_json(json_t *j)
{
    if (!j)
        return cli_fail(EXIT_FAILURE_, "out of memory building JSON");
    int rc = json_dumpf(j, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(12));
    fputc('\n', stdout);
    json_decref(j);
    return rc == 0 ? EXIT_OK : EXIT_FAILURE_;
}

int cli_open_state(sp_state **st)
{
    sp_err err = {0};
    if (sp_state_open(NULL, st, &err) != SP_OK)
        return cli_fail(EXIT_FAILURE_, "%s", err.msg);
    return EXIT_OK;
}

int cli_print_json_line(json_t *j)
{
    if (!j)
        return cli_fail(EXIT_FAILURE_, "out of memory building JSON");
    int rc = json_dumpf(j, stdout, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(12));
    fputc('\n', stdout);
    fflush(stdout);
    json_decref(j);
    return rc == 0 ? EXIT_OK : EXIT_FAILURE_;
}
