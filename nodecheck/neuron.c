/*
 * AWS Neuron devices (Inferentia, Trainium), as `neuron-ls --json-output` lists them: an array
 * with one object per device, e.g. (trn1.2xlarge, aws-neuronx-tools 2.28)
 *
 *   [{"neuron_device": 0, "bdf": "0000:00:1e.0", "cpu_affinity": "0-7", "numa_node": "-1",
 *     "connected_to": null, "nc_count": 2, "memory_size": 34359738368,
 *     "neuroncore_ids": [0, 1], "neuron_processes": []}]
 *
 * memory_size is in bytes. Tools that print an object instead (Neuron 2.34 announces a new
 * format) are read if the array sits under "neuron_devices" or "devices". If the JSON output
 * fails, the device and core counts are read from the plain table.
 */
#include "nodecheck.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define OUTPUT_MAX (4u << 20)
#define TIMEOUT_MS 20000
#define JSON_DEPTH_MAX 32

extern char **environ;

/* ---- Running neuron-ls -------------------------------------------------------------------- */

static bool find_tool(char *out, size_t size)
{
    const char *path = getenv("PATH");
    while (path && *path) {
        size_t n = strcspn(path, ":");
        if (n > 0 && (size_t)snprintf(out, size, "%.*s/neuron-ls", (int)n, path) < size &&
            access(out, X_OK) == 0)
            return true;
        path += n + (path[n] == ':');
    }
    /* The Neuron packages install here; non-login SSH sessions often lack it on PATH. */
    snprintf(out, size, "/opt/aws/neuron/bin/neuron-ls");
    return access(out, X_OK) == 0;
}

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static bool drain(int fd, char **out, size_t *len)
{
    size_t cap = 0;
    long long deadline = now_ms() + TIMEOUT_MS;
    for (;;) {
        long long left = deadline - now_ms();
        struct pollfd p = {fd, POLLIN, 0};
        int ready = left > 0 ? poll(&p, 1, (int)left) : 0;
        if (ready < 0 && errno == EINTR)
            continue;
        if (ready <= 0)
            return false;
        if (*len + 4096 + 1 > cap) {
            if (cap >= OUTPUT_MAX)
                return false;
            cap = cap ? cap * 2 : 65536;
            char *grown = realloc(*out, cap);
            if (!grown)
                return false;
            *out = grown;
        }
        ssize_t got = read(fd, *out + *len, cap - *len - 1);
        if (got == 0)
            return true;
        if (got < 0 && errno != EINTR)
            return false;
        if (got > 0) {
            *len += (size_t)got;
            (*out)[*len] = '\0';
        }
    }
}

/* Runs tool with up to two arguments (NULL-terminated); its stdout in *out (caller frees). */
static bool run_tool(const char *tool, const char *arg1, const char *arg2, char **out, char *err,
                     size_t err_size)
{
    int fds[2];
    pid_t pid;
    char *argv[] = {(char *)tool, (char *)arg1, arg1 ? (char *)arg2 : NULL, NULL};
    posix_spawn_file_actions_t fa;
    size_t len = 0;
    *out = NULL;
    if (pipe(fds) != 0) {
        snprintf(err, err_size, "pipe: %s", strerror(errno));
        return false;
    }
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fds[1], STDOUT_FILENO);
    posix_spawn_file_actions_addclose(&fa, fds[0]);
    posix_spawn_file_actions_addclose(&fa, fds[1]);
    posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
    int rc = posix_spawn(&pid, tool, &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(fds[1]);
    if (rc != 0) {
        close(fds[0]);
        snprintf(err, err_size, "cannot run %s: %s", tool, strerror(rc));
        return false;
    }
    bool read_all = drain(fds[0], out, &len);
    close(fds[0]);
    if (!read_all)
        kill(pid, SIGKILL);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (!read_all || !WIFEXITED(status) || WEXITSTATUS(status) != 0 || !*out) {
        snprintf(err, err_size, "%s%s%s failed (%s)", tool, arg1 ? " " : "", arg1 ? arg1 : "",
                 !read_all ? "timed out or too much output"
                 : WIFEXITED(status) ? "non-zero exit status" : "killed by a signal");
        free(*out);
        *out = NULL;
        return false;
    }
    return true;
}

/* ---- A JSON reader just large enough for neuron-ls ----------------------------------------- */

typedef struct cursor {
    const char *p;
    int depth;
    bool bad;
} cursor;

static void ws(cursor *c)
{
    while (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r')
        c->p++;
}

static bool eat(cursor *c, char ch)
{
    ws(c);
    if (*c->p != ch)
        return false;
    c->p++;
    return true;
}

/* A string into buf (escapes other than \" and \\ kept as they are: keys and BDFs have none). */
static void string(cursor *c, char *buf, size_t size)
{
    size_t n = 0;
    if (!eat(c, '"')) {
        c->bad = true;
        return;
    }
    while (*c->p && *c->p != '"') {
        if (*c->p == '\\' && c->p[1])
            c->p++;
        if (n + 1 < size)
            buf[n++] = *c->p;
        c->p++;
    }
    if (size)
        buf[n] = '\0';
    c->bad |= !eat(c, '"');
}

static void skip_value(cursor *c);

static void skip_container(cursor *c, char close, bool object)
{
    char key[8];
    if (++c->depth > JSON_DEPTH_MAX) {
        c->bad = true;
        return;
    }
    if (!eat(c, close)) {
        do {
            if (object) {
                string(c, key, sizeof(key));
                c->bad |= !eat(c, ':');
            }
            skip_value(c);
        } while (!c->bad && eat(c, ','));
        c->bad |= !eat(c, close);
    }
    c->depth--;
}

static void skip_value(cursor *c)
{
    char tmp[2];
    ws(c);
    if (c->bad)
        return;
    if (*c->p == '"')
        string(c, tmp, sizeof(tmp));
    else if (eat(c, '{'))
        skip_container(c, '}', true);
    else if (eat(c, '['))
        skip_container(c, ']', false);
    else if (*c->p && strchr("-0123456789tfn", *c->p))
        c->p += strspn(c->p, "+-0123456789.eEtruefalsn");
    else
        c->bad = true;
}

/* A non-negative integer, digit by digit (no strtoll: it is not the place for locale games). */
static bool integer(cursor *c, unsigned long long *v)
{
    ws(c);
    if (*c->p < '0' || *c->p > '9')
        return false;
    *v = 0;
    while (*c->p >= '0' && *c->p <= '9')
        *v = *v * 10 + (unsigned long long)(*c->p++ - '0');
    return true;
}

static void device_field(cursor *c, const char *key, nc_neuron_device *d)
{
    unsigned long long v;
    if (strcmp(key, "bdf") == 0 && (ws(c), *c->p == '"'))
        string(c, d->bdf, sizeof(d->bdf));
    else if (strcmp(key, "neuron_device") == 0 && integer(c, &v))
        d->index = (long)v;
    else if (strcmp(key, "nc_count") == 0 && integer(c, &v))
        d->cores = (long)v;
    else if (strcmp(key, "memory_size") == 0 && integer(c, &v))
        d->memory_mib = v / (1024 * 1024);
    else
        skip_value(c);
}

static void device_object(cursor *c, nc_neuron *n)
{
    char key[64];
    nc_neuron_device scratch, *d = n->n_devices < NC_MAX_NEURON ? &n->devices[n->n_devices] : &scratch;
    memset(d, 0, sizeof(*d));
    d->index = d->cores = -1;
    if (!eat(c, '{')) {
        c->bad = true;
        return;
    }
    if (!eat(c, '}')) {
        do {
            string(c, key, sizeof(key));
            c->bad |= !eat(c, ':');
            if (!c->bad)
                device_field(c, key, d);
        } while (!c->bad && eat(c, ','));
        c->bad |= !eat(c, '}');
    }
    if (!c->bad && d != &scratch)
        n->n_devices++;
}

static void device_array(cursor *c, nc_neuron *n)
{
    if (eat(c, ']'))
        return;
    do
        device_object(c, n);
    while (!c->bad && eat(c, ','));
    c->bad |= !eat(c, ']');
}

static bool parse_json(const char *text, nc_neuron *n)
{
    cursor c = {text, 0, false};
    char key[64];
    bool found = false;
    if (eat(&c, '[')) {
        device_array(&c, n);
        found = true;
    } else if (eat(&c, '{') && !eat(&c, '}')) {
        do {
            string(&c, key, sizeof(key));
            c.bad |= !eat(&c, ':');
            if (!c.bad && !found &&
                (strcmp(key, "neuron_devices") == 0 || strcmp(key, "devices") == 0) &&
                eat(&c, '[')) {
                device_array(&c, n);
                found = true;
            } else {
                skip_value(&c);
            }
        } while (!c.bad && eat(&c, ','));
    }
    return found && !c.bad;
}

/* The plain table's rows, "| 0      | 2      | 32 GB  | ..." (older tools) or
 * "| 0      | 8      | 0-7      | 96 GB  | ..." (newer): device and cores are the first two
 * cells, the memory is the first cell that reads "<n> GB". */
static void table_row(const char *line, nc_neuron *n)
{
    long dev, cores;
    char end;
    if (sscanf(line, "| %ld | %ld %c", &dev, &cores, &end) != 3 || end != '|' ||
        n->n_devices >= NC_MAX_NEURON)
        return;
    nc_neuron_device *d = &n->devices[n->n_devices++];
    memset(d, 0, sizeof(*d));
    d->index = dev;
    d->cores = cores;
    const char *eol = strchr(line, '\n');
    for (const char *cell = strchr(line + 1, '|'); cell && (!eol || cell < eol);
         cell = strchr(cell + 1, '|')) {
        unsigned long long gb;
        char unit[3];
        if (sscanf(cell, "| %llu %2[GB] |", &gb, unit) == 2 && strcmp(unit, "GB") == 0) {
            d->memory_mib = gb * 1024;
            break;
        }
    }
}

static void parse_table(const char *text, nc_neuron *n)
{
    for (const char *line = text; *line;) {
        table_row(line, n);
        const char *next = strchr(line, '\n');
        if (!next)
            break;
        line = next + 1;
    }
}

/* Only memory tells these chips apart in neuron-ls's output: Inferentia has 8 GiB, Trainium2
 * 96 GiB, and Inferentia2 and Trainium both 32 GiB: then the model stays NULL and both are
 * candidates. */
static void neuron_model(nc_neuron_device *d)
{
    unsigned long long mib = d->memory_mib;
    if (mib == 0)
        return;
    if (mib <= 12 * 1024)
        d->model = "Inferentia";
    else if (mib >= 24 * 1024 && mib <= 48 * 1024) {
        d->candidates[0] = "Inferentia2";
        d->candidates[1] = "Trainium";
    } else if (mib >= 64 * 1024 && mib <= 128 * 1024)
        d->model = "Trainium2";
}

void nc_probe_neuron(nc_neuron *n)
{
    char *out = NULL;
    memset(n, 0, sizeof(*n));
    if (!find_tool(n->tool, sizeof(n->tool))) {
        n->tool[0] = '\0';
        return;
    }
    n->present = true;
    /* --json-output until Neuron 2.33; --output-format json from 2.34; else the table. */
    static const char *const tries[][2] = {{"--json-output", NULL}, {"--output-format", "json"}};
    bool parsed = false;
    for (size_t i = 0; i < 2 && !parsed; i++) {
        free(out);
        out = NULL;
        n->n_devices = 0;
        parsed = run_tool(n->tool, tries[i][0], tries[i][1], &out, n->error, sizeof(n->error)) &&
                 parse_json(out, n);
    }
    if (!parsed) {
        free(out);
        out = NULL;
        n->n_devices = 0;
        parsed = run_tool(n->tool, NULL, NULL, &out, n->error, sizeof(n->error));
        if (parsed)
            parse_table(out, n);
    }
    if (parsed)
        n->error[0] = '\0';
    free(out);
    for (size_t i = 0; i < n->n_devices; i++)
        neuron_model(&n->devices[i]);
}
