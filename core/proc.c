/*
 * Child processes with bounded output and a deadline: the system OpenSSH client for the node
 * bootstrap, and the check program itself for `skypool check-node`. posix_spawn, pipes and
 * poll; the child gets its own process group so that a deadline kills ssh and what it started.
 */
/* pipe2: pipes must be close-on-exec from birth, since checks spawn from several threads. */
#define _GNU_SOURCE
#include "proc.h"

#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Appends what a pipe has to a bounded buffer; what does not fit is read and dropped, and
 * counted, so that a chatty child never blocks on a full pipe. */
static bool drain(int fd, char **buf, size_t *len, size_t max, size_t *dropped)
{
    char chunk[16384];
    ssize_t n = read(fd, chunk, sizeof(chunk));
    if (n < 0)
        return errno == EINTR || errno == EAGAIN;
    if (n == 0)
        return false;
    size_t keep = *len + (size_t)n <= max ? (size_t)n : max - *len;
    if (keep) {
        char *grown = realloc(*buf, *len + keep + 1);
        if (!grown)
            return false;
        memcpy(grown + *len, chunk, keep);
        *len += keep;
        grown[*len] = '\0';
        *buf = grown;
    }
    *dropped += (size_t)n - keep;
    return true;
}

static int spawn(const char *const *argv, int in[2], int out[2], int errp[2], pid_t *pid,
                 sp_err *err)
{
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    posix_spawn_file_actions_init(&fa);
    posix_spawnattr_init(&attr);
    posix_spawn_file_actions_adddup2(&fa, in[0], STDIN_FILENO);
    posix_spawn_file_actions_adddup2(&fa, out[1], STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&fa, errp[1], STDERR_FILENO);
    int fds[] = {in[0], in[1], out[0], out[1], errp[0], errp[1]};
    for (size_t i = 0; i < 6; i++)
        posix_spawn_file_actions_addclose(&fa, fds[i]);
    posix_spawnattr_setpgroup(&attr, 0);
    sigset_t dflt;
    sigemptyset(&dflt);
    sigaddset(&dflt, SIGPIPE);
    sigaddset(&dflt, SIGINT);
    posix_spawnattr_setsigdefault(&attr, &dflt);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF);
    int rc = posix_spawnp(pid, argv[0], &fa, &attr, (char *const *)argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    if (rc)
        return sp_err_set(err, rc == ENOENT ? SP_E_NOTFOUND : SP_E_IO, "cannot run %s: %s%s",
                          argv[0], strerror(rc),
                          rc == ENOENT ? " (is it installed and on PATH?)" : "");
    return SP_OK;
}

static void close_all(int *fds, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (fds[i] >= 0) {
            close(fds[i]);
            fds[i] = -1;
        }
}

/* Feeds stdin, collects stdout and stderr, and enforces the deadline. */
static void pump(const sp_proc_opts *o, int in_fd, int out_fd, int err_fd, pid_t pid,
                 sp_proc_result *res)
{
    size_t sent = 0, dropped = 0, err_dropped = 0;
    long long deadline = o->timeout_ms ? now_ms() + o->timeout_ms : 0;
    int fds[3] = {in_fd, out_fd, err_fd};
    if (!o->stdin_len)
        close_all(&fds[0], 1);
    while (fds[1] >= 0 || fds[2] >= 0) {
        struct pollfd p[3];
        nfds_t n = 0;
        int which[3];
        short ev[3] = {POLLOUT, POLLIN, POLLIN};
        for (int i = 0; i < 3; i++)
            if (fds[i] >= 0) {
                p[n] = (struct pollfd){fds[i], ev[i], 0};
                which[n++] = i;
            }
        int wait = 1000;
        if (deadline) {
            long long left = deadline - now_ms();
            if (left <= 0) {
                kill(-pid, SIGKILL);
                res->timed_out = true;
                break;
            }
            wait = left < 1000 ? (int)left : 1000;
        }
        if (poll(p, n, wait) < 0 && errno != EINTR)
            break;
        for (nfds_t k = 0; k < n; k++) {
            int i = which[k];
            if (!p[k].revents)
                continue;
            if (i == 0) {
                ssize_t w = write(fds[0], o->stdin_data + sent, o->stdin_len - sent);
                if (w > 0)
                    sent += (size_t)w;
                if ((w < 0 && errno != EINTR && errno != EAGAIN) || sent == o->stdin_len)
                    close_all(&fds[0], 1);
            } else if (i == 1 && !drain(fds[1], &res->out, &res->out_len,
                                        o->max_out ? o->max_out : SP_PROC_MAX_OUT, &dropped))
                close_all(&fds[1], 1);
            else if (i == 2 && !drain(fds[2], &res->err, &res->err_len, SP_PROC_MAX_ERR,
                                      &err_dropped))
                close_all(&fds[2], 1);
        }
    }
    close_all(fds, 3);
    res->truncated = dropped > 0;
}

int sp_proc_run(const char *const *argv, const sp_proc_opts *o, sp_proc_result *res,
                sp_err *err)
{
    memset(res, 0, sizeof(*res));
    res->exit_code = -1;
    int in[2] = {-1, -1}, out[2] = {-1, -1}, errp[2] = {-1, -1};
    if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC) || pipe2(errp, O_CLOEXEC)) {
        int all[] = {in[0], in[1], out[0], out[1], errp[0], errp[1]};
        close_all(all, 6);
        return sp_err_set(err, SP_E_IO, "cannot make pipes for %s: %s", argv[0],
                          strerror(errno));
    }
    pid_t pid;
    int rc = spawn(argv, in, out, errp, &pid, err);
    int child_ends[] = {in[0], out[1], errp[1]};
    close_all(child_ends, 3);
    if (rc) {
        int ours[] = {in[1], out[0], errp[0]};
        close_all(ours, 3);
        return rc;
    }
    fcntl(in[1], F_SETFL, O_NONBLOCK);
    pump(o, in[1], out[0], errp[0], pid, res);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (WIFEXITED(status))
        res->exit_code = WEXITSTATUS(status);
    else if (WIFSIGNALED(status))
        res->exit_code = 128 + WTERMSIG(status);
    if (res->timed_out)
        return sp_err_set(err, SP_E_NETWORK, "%s did not finish within %u s", argv[0],
                          o->timeout_ms / 1000);
    return SP_OK;
}

void sp_proc_result_free(sp_proc_result *res)
{
    free(res->out);
    free(res->err);
    res->out = res->err = NULL;
    res->out_len = res->err_len = 0;
}

const char *sp_proc_err_tail(const sp_proc_result *res, char *buf, size_t size)
{
    if (!res->err_len) {
        snprintf(buf, size, "no message");
        return buf;
    }
    /* The last non-empty line is what ssh and most tools use for the reason. */
    const char *e = res->err, *end = e + res->err_len;
    while (end > e && (end[-1] == '\n' || end[-1] == '\r'))
        end--;
    const char *start = end;
    while (start > e && start[-1] != '\n')
        start--;
    snprintf(buf, size, "%.*s", (int)(end - start), start);
    return buf;
}
