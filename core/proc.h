/* Child processes with bounded output and a deadline (internal). */
#ifndef SKYPOOL_PROC_H
#define SKYPOOL_PROC_H

#include <skypool/skypool.h>

#include <stdbool.h>
#include <stddef.h>

#define SP_PROC_MAX_OUT (8u << 20) /* default bound on what stdout may bring */
#define SP_PROC_MAX_ERR (64u << 10)

typedef struct sp_proc_opts {
    const unsigned char *stdin_data; /* fed to the child, then its stdin is closed */
    size_t stdin_len;
    unsigned timeout_ms;             /* 0: none; past it the child's process group is killed */
    size_t max_out;                  /* 0: SP_PROC_MAX_OUT */
} sp_proc_opts;

typedef struct sp_proc_result {
    int exit_code;                   /* 128 + signal when killed; -1 when unknown */
    char *out, *err;                 /* NUL-terminated, or NULL when empty */
    size_t out_len, err_len;
    bool truncated;                  /* stdout passed max_out */
    bool timed_out;
} sp_proc_result;

/* Runs argv (argv[0] looked up on PATH). SP_OK once the child has ended, whatever its exit
 * code; SP_E_NOTFOUND when the program is missing; SP_E_NETWORK past the deadline. */
int sp_proc_run(const char *const *argv, const sp_proc_opts *opts, sp_proc_result *res,
                sp_err *err);
void sp_proc_result_free(sp_proc_result *res);
/* The last line of the child's stderr, for messages. */
const char *sp_proc_err_tail(const sp_proc_result *res, char *buf, size_t size);

#endif
