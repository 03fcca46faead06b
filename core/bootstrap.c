/*
 * The node check, from the core's side: expectations, the check program's flags, running it
 * over SSH with the system OpenSSH client (so the user's ssh config, agent and keys apply),
 * the nvidia-smi fallback, and reading reports into verdicts.
 */
#include "bootstrap.h"

#include "names.h"
#include "proc.h"
#include "registry.h"
#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#define PROBE_TIMEOUT_MS 90000u
#define CHECK_TIMEOUT_MS 300000u
#define NODECHECK_SCHEMA "skypool-nodecheck/1"
#define MEM_TOLERANCE 0.92 /* T4 and A10G show about 94% of their memory: ECC reserves it */

/* ---- Expectations ----------------------------------------------------------------------- */

unsigned sp_check_mem_test_mib(void)
{
    const char *v = getenv("SKYPOOL_CHECK_MEM_TEST_MIB");
    unsigned long n = v && *v ? strtoul(v, NULL, 10) : 0;
    return n <= 1u << 20 ? (unsigned)n : 0;
}

static const char *ff_word(sp_form_factor ff)
{
    return ff == SP_FF_SXM ? "sxm" : ff == SP_FF_PCIE ? "pcie" : ff == SP_FF_NVL ? "nvl" : NULL;
}

/* The form factor all the models share, or NULL. */
static const char *common_ff(const sp_check_expect *e)
{
    const char *ff = NULL;
    for (size_t i = 0; i < e->n_models; i++) {
        const sp_accel_model *m = sp_accel_by_key(e->models[i]);
        const char *w = m ? ff_word(m->ff) : NULL;
        if (!w || (ff && strcmp(ff, w)))
            return NULL;
        ff = w;
    }
    return ff;
}

static void add_model(sp_check_expect *e, const char *key)
{
    for (size_t i = 0; i < e->n_models; i++)
        if (!strcmp(e->models[i], key))
            return;
    if (e->n_models < SP_SPEC_MAX_MODELS)
        e->models[e->n_models++] = key;
}

static int expect_mig(const sp_pool *pool, const char *model, sp_check_expect *e, sp_err *err)
{
    sp_mig_layout layout;
    int rc = sp_mig_layout_parse(model, (const char *const *)pool->mig, pool->n_mig, &layout,
                                 err);
    size_t at = 0;
    for (unsigned i = 0; !rc && i < layout.n; i++)
        at += (size_t)snprintf(e->mig + at, at < sizeof(e->mig) ? sizeof(e->mig) - at : 0,
                               "%s%s", i ? "," : "", layout.profiles[i]->name);
    return rc;
}

int sp_check_expect_of_node(const sp_pool *pool, const sp_node_row *node, sp_check_expect *e,
                            sp_err *err)
{
    memset(e, 0, sizeof(*e));
    const sp_accel_model *m = node->accel[0] ? sp_accel_by_key(node->accel) : NULL;
    if (m) {
        add_model(e, m->key);
        e->count = node->accel_count;
        e->mem_mib = node->accel_mem_mib;
    } else {
        /* A node adopted after a crash: what the pool allows, without a count. */
        for (unsigned t = 0; t < pool->accelerators.n_terms; t++)
            for (unsigned i = 0; i < pool->accelerators.terms[t].n_models; i++)
                add_model(e, pool->accelerators.terms[t].models[i]->key);
    }
    e->form_factor = common_ff(e);
    e->mem_test_mib = sp_check_mem_test_mib();
    e->cuda_major = pool->cuda_major;
    e->cuda_minor = pool->cuda_minor;
    if (pool->n_mig && m && m->mig)
        return expect_mig(pool, m->key, e, err);
    return SP_OK;
}

void sp_check_expect_of_term(const sp_spec_term *term, sp_check_expect *e)
{
    memset(e, 0, sizeof(*e));
    for (unsigned i = 0; i < term->n_models; i++)
        add_model(e, term->models[i]->key);
    e->count = term->count_min == term->count_max ? term->count_min : 0;
    /* "A100:80GB" asks for that memory; a bare model asks for what the model has. */
    unsigned gib = term->mem_gib;
    if (!gib && e->n_models == 1)
        gib = term->models[0]->mem_gib;
    e->mem_mib = gib * 1024u;
    e->form_factor = common_ff(e);
    e->mem_test_mib = sp_check_mem_test_mib();
}

/* ---- The program's flags ------------------------------------------------------------------- */

typedef struct argbuf {
    const char **argv;
    size_t max, n;
    char *buf;
    size_t size, used;
} argbuf;

static void arg(argbuf *a, const char *fmt, ...) SP_PRINTF(2, 3);
static void arg(argbuf *a, const char *fmt, ...)
{
    if (a->n + 1 >= a->max || a->used >= a->size)
        return;
    va_list ap;
    va_start(ap, fmt);
    int len = vsnprintf(a->buf + a->used, a->size - a->used, fmt, ap);
    va_end(ap);
    if (len < 0 || (size_t)len >= a->size - a->used)
        return;
    a->argv[a->n++] = a->buf + a->used;
    a->argv[a->n] = NULL;
    a->used += (size_t)len + 1;
}

size_t sp_check_args(const sp_check_expect *e, const char **argv, size_t max, char *buf,
                     size_t size)
{
    argbuf a = {argv, max, 0, buf, size, 0};
    if (e->count) {
        arg(&a, "--expect-count");
        arg(&a, "%u", e->count);
    }
    if (e->n_models) {
        char models[512] = "";
        size_t at = 0;
        for (size_t i = 0; i < e->n_models && at < sizeof(models); i++)
            at += (size_t)snprintf(models + at, sizeof(models) - at, "%s%s", i ? "," : "",
                                   e->models[i]);
        arg(&a, "--expect-model");
        arg(&a, "%s", models);
    }
    if (e->mem_mib) {
        arg(&a, "--expect-mem-mib");
        arg(&a, "%u", e->mem_mib);
    }
    if (e->form_factor) {
        arg(&a, "--expect-form-factor");
        arg(&a, "%s", e->form_factor);
    }
    if (e->mig[0]) {
        arg(&a, "--expect-mig");
        arg(&a, "%s", e->mig);
    }
    if (e->cuda_major) {
        arg(&a, "--min-cuda");
        arg(&a, "%u.%u", e->cuda_major, e->cuda_minor);
    }
    if (e->mem_test_mib) {
        arg(&a, "--mem-test-mib");
        arg(&a, "%u", e->mem_test_mib);
    }
    if (e->no_tests)
        arg(&a, "--no-tests");
    return a.n;
}

/* ---- Reports ---------------------------------------------------------------------------------- */

void sp_check_result_free(sp_check_result *r)
{
    free(r->report);
    free(r->workers);
    r->report = r->workers = NULL;
}

bool sp_check_verdict_passes(const char *verdict)
{
    return !strcmp(verdict, "ok") || !strcmp(verdict, "partial");
}

static void set_verdict(sp_check_result *r, const char *verdict, const char *fmt, ...)
    SP_PRINTF(3, 4);
static void set_verdict(sp_check_result *r, const char *verdict, const char *fmt, ...)
{
    snprintf(r->verdict, sizeof(r->verdict), "%s", verdict);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->summary, sizeof(r->summary), fmt, ap);
    va_end(ap);
}

/* "8 x NVIDIA H100 80GB HBM3, driver 550.54.15 (CUDA 12.4)" */
static void summarize_ok(json_t *rep, sp_check_result *r)
{
    json_t *devs = json_object_get(rep, "devices");
    json_t *first = json_array_get(devs, 0);
    const char *name = json_string_value(json_object_get(first, "name"));
    json_t *drv = json_object_get(rep, "driver");
    const char *ver = json_string_value(json_object_get(drv, "version"));
    const char *cuda = json_string_value(json_object_get(drv, "cuda_max"));
    json_t *tests = json_object_get(first, "tests");
    double d2d = json_number_value(json_object_get(tests, "d2d_gbps"));
    int at = snprintf(r->summary, sizeof(r->summary), "%zu x %s, driver %s (CUDA %s)",
                      json_array_size(devs), name ? name : "device", ver ? ver : "?",
                      cuda ? cuda : "?");
    if (d2d > 0 && at > 0 && (size_t)at < sizeof(r->summary))
        snprintf(r->summary + at, sizeof(r->summary) - (size_t)at, ", %.0f GB/s on device",
                 d2d);
}

/* The mismatches' messages, joined; else the driver's error; else the status itself. */
static void summarize_failure(json_t *rep, const char *status, sp_check_result *r)
{
    json_t *mm = json_object_get(rep, "mismatches");
    size_t at = 0, i;
    json_t *m;
    r->summary[0] = '\0';
    json_array_foreach(mm, i, m) {
        const char *msg = json_string_value(json_object_get(m, "message"));
        if (msg && at < sizeof(r->summary))
            at += (size_t)snprintf(r->summary + at, sizeof(r->summary) - at, "%s%s",
                                   at ? "; " : "", msg);
    }
    const char *drv_err =
        json_string_value(json_object_get(json_object_get(rep, "driver"), "error"));
    if (!r->summary[0])
        snprintf(r->summary, sizeof(r->summary), "%s", drv_err ? drv_err : status);
}

int sp_check_read_report(const char *out, size_t len, int exit_code, sp_check_result *r,
                         sp_err *err)
{
    memset(r, 0, sizeof(*r));
    r->exit_code = exit_code;
    json_error_t jerr;
    json_t *rep = out && len ? json_loadb(out, len, JSON_REJECT_DUPLICATES, &jerr) : NULL;
    const char *schema = json_string_value(json_object_get(rep, "schema"));
    const char *status = json_string_value(json_object_get(rep, "status"));
    if (!rep || !schema || strcmp(schema, NODECHECK_SCHEMA) || !status) {
        json_decref(rep);
        return sp_err_set(err, SP_E_PROTOCOL, "the check program's output is not a %s report",
                          NODECHECK_SCHEMA);
    }
    snprintf(r->verdict, sizeof(r->verdict), "%s", status);
    r->devices = (unsigned)json_array_size(json_object_get(rep, "devices"));
    if (!strcmp(status, "ok"))
        summarize_ok(rep, r);
    else
        summarize_failure(rep, status, r);
    json_t *workers = json_object_get(rep, "workers");
    r->workers = json_is_array(workers) ? json_dumps(workers, JSON_COMPACT) : NULL;
    r->report = json_dumps(rep, JSON_COMPACT);
    json_decref(rep);
    return SP_OK;
}

/* ---- The nvidia-smi fallback ---------------------------------------------------------------- */

/* The first CUDA version each driver branch supports (NVIDIA's CUDA release notes, table 3). */
static void cuda_of_driver(unsigned major, unsigned *cmaj, unsigned *cmin)
{
    static const struct {
        unsigned driver, cuda_major, cuda_minor;
    } table[] = {{580, 13, 0}, {575, 12, 9}, {570, 12, 8}, {565, 12, 7}, {560, 12, 6},
                 {555, 12, 5}, {550, 12, 4}, {545, 12, 3}, {535, 12, 2}, {530, 12, 1},
                 {525, 12, 0}, {520, 11, 8}, {515, 11, 7}, {510, 11, 6}, {495, 11, 5},
                 {470, 11, 4}, {465, 11, 3}, {460, 11, 2}, {455, 11, 1}, {450, 11, 0}};
    *cmaj = *cmin = 0;
    for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
        if (major >= table[i].driver) {
            *cmaj = table[i].cuda_major;
            *cmin = table[i].cuda_minor;
            return;
        }
}

typedef struct smi_gpu {
    char name[128], uuid[96], driver[32];
    unsigned long long mem_mib;
} smi_gpu;

static char *trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    size_t n = strlen(s);
    while (n && isspace((unsigned char)s[n - 1]))
        s[--n] = '\0';
    return s;
}

static bool smi_line(char *line, smi_gpu *g)
{
    char *f[5];
    size_t n = 0;
    for (char *save = NULL, *t = strtok_r(line, ",", &save); t && n < 5;
         t = strtok_r(NULL, ",", &save))
        f[n++] = trim(t);
    if (n < 4 || !*f[0])
        return false;
    snprintf(g->name, sizeof(g->name), "%s", f[0]);
    snprintf(g->uuid, sizeof(g->uuid), "%s", f[1]);
    g->mem_mib = strtoull(f[2], NULL, 10);
    snprintf(g->driver, sizeof(g->driver), "%s", f[3]);
    return true;
}

static bool model_allowed(const sp_check_expect *e, const char *key)
{
    if (!e->n_models)
        return true;
    for (size_t i = 0; key && i < e->n_models; i++)
        if (!strcasecmp(e->models[i], key))
            return true;
    return false;
}

/* Compares what nvidia-smi lists with the expectation: names, count, memory, CUDA. */
static void smi_compare(const smi_gpu *g, size_t n, const sp_check_expect *e,
                        sp_check_result *r)
{
    int ff = 0;
    const char *key = nc_model_key(g[0].name, g[0].mem_mib, &ff);
    unsigned cmaj, cmin;
    cuda_of_driver((unsigned)strtoul(g[0].driver, NULL, 10), &cmaj, &cmin);
    if (e->count && n != e->count)
        set_verdict(r, "hardware_mismatch", "%zu GPUs where %u were bought (nvidia-smi)", n,
                    e->count);
    else if (!model_allowed(e, key))
        set_verdict(r, "hardware_mismatch", "%s (%s) where %s was bought (nvidia-smi)",
                    g[0].name, key ? key : "unknown model", e->models[0]);
    else if (e->mem_mib && (double)g[0].mem_mib < MEM_TOLERANCE * e->mem_mib)
        set_verdict(r, "hardware_mismatch", "%llu MiB per GPU where %u MiB were bought",
                    g[0].mem_mib, e->mem_mib);
    else if (e->cuda_major && (cmaj < e->cuda_major ||
                               (cmaj == e->cuda_major && cmin < e->cuda_minor)))
        set_verdict(r, "driver_too_old",
                    "driver %s runs CUDA up to %u.%u; the pool needs %u.%u: use an image with "
                    "a newer driver",
                    g[0].driver, cmaj, cmin, e->cuda_major, e->cuda_minor);
    else
        set_verdict(r, "partial",
                    "%zu x %s, driver %s (CUDA %u.%u by its branch); the check program could "
                    "not run here, so only nvidia-smi's names were compared%s",
                    n, g[0].name, g[0].driver, cmaj, cmin,
                    e->mig[0] ? "; the MIG layout was not verified" : "");
}

void sp_check_read_smi(const char *csv, const sp_check_expect *e, sp_check_result *r)
{
    memset(r, 0, sizeof(*r));
    r->exit_code = -1;
    char *copy = sp_strdup(csv ? csv : "");
    smi_gpu g[64];
    size_t n = 0;
    for (char *save = NULL, *line = strtok_r(copy, "\n", &save); line && n < 64;
         line = strtok_r(NULL, "\n", &save))
        n += smi_line(line, &g[n]);
    free(copy);
    if (!n) {
        set_verdict(r, "no_device", "nvidia-smi lists no GPU");
        return;
    }
    r->devices = (unsigned)n;
    smi_compare(g, n, e, r);
    json_t *workers = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(workers, json_pack("{s:s, s:I, s:n}", "uuid", g[i].uuid,
                                                 "device", (json_int_t)i, "profile"));
    r->workers = json_dumps(workers, JSON_COMPACT);
    json_decref(workers);
}

/* ---- Finding the program ----------------------------------------------------------------------- */

static const char *host_arch(void)
{
    static struct utsname u;
    return uname(&u) == 0 ? u.machine : "unknown";
}

int sp_nodecheck_path(const char *arch, char *buf, size_t size, sp_err *err)
{
    const char *env = getenv("SKYPOOL_NODECHECK");
    if (env && *env && !strcmp(arch, host_arch())) {
        snprintf(buf, size, "%s", env);
        return access(buf, X_OK) == 0
                   ? SP_OK
                   : sp_err_set(err, SP_E_NOTFOUND, "SKYPOOL_NODECHECK=%s is not an executable "
                                                    "file",
                                env);
    }
    snprintf(buf, size, "%s/%s/skypool-nodecheck", sp_nodecheck_dir(), arch);
    if (access(buf, X_OK) == 0)
        return SP_OK;
    return sp_err_set(err, SP_E_NOTFOUND,
                      "no skypool-nodecheck for %s nodes (looked for %s); build skypool on such "
                      "a machine and install it there, or set SKYPOOL_NODECHECK",
                      arch, buf);
}

static int read_file(const char *path, unsigned char **data, size_t *len, sp_err *err)
{
    FILE *f = fopen(path, "rb");
    struct stat st;
    if (!f || fstat(fileno(f), &st) || st.st_size <= 0 || st.st_size > (64 << 20)) {
        if (f)
            fclose(f);
        return sp_err_set(err, SP_E_IO, "cannot read %s: %s", path,
                          f ? "not a usable file" : strerror(errno));
    }
    *data = malloc((size_t)st.st_size);
    *len = *data ? fread(*data, 1, (size_t)st.st_size, f) : 0;
    fclose(f);
    if (*len != (size_t)st.st_size) {
        free(*data);
        *data = NULL;
        return sp_err_set(err, SP_E_IO, "cannot read %s", path);
    }
    return SP_OK;
}

/* ---- SSH ------------------------------------------------------------------------------------- */

size_t sp_ssh_argv(const sp_ssh_target *t, const sp_ssh_opts *o, const char **argv,
                   size_t max, char *buf, size_t size)
{
    argbuf a = {argv, max, 0, buf, size, 0};
    const char *ssh = getenv("SKYPOOL_SSH");
    const char *config = getenv("SKYPOOL_SSH_CONFIG");
    arg(&a, "%s", ssh && *ssh ? ssh : "ssh");
    if (config && *config) {
        arg(&a, "-F");
        arg(&a, "%s", config);
    }
    arg(&a, "-T");
    arg(&a, "-o");
    arg(&a, "BatchMode=yes");
    arg(&a, "-o");
    arg(&a, "ConnectTimeout=%u", o->connect_timeout_s ? o->connect_timeout_s : 15);
    /* Fresh cloud nodes have host keys nobody has seen: trust each on first use, in a file of
     * the pool's own, so a cloud address reused by a later node cannot clash with it. */
    arg(&a, "-o");
    arg(&a, "StrictHostKeyChecking=accept-new");
    if (o->known_hosts) {
        arg(&a, "-o");
        arg(&a, "UserKnownHostsFile=%s", o->known_hosts);
    }
    arg(&a, "-o");
    arg(&a, "LogLevel=ERROR");
    if (o->key) {
        arg(&a, "-i");
        arg(&a, "%s", o->key);
        arg(&a, "-o");
        arg(&a, "IdentitiesOnly=yes");
    }
    if (o->proxy) {
        arg(&a, "-o");
        arg(&a, "ProxyCommand=%s", o->proxy);
    }
    /* Port 22 is left to the user's ssh config, which may say otherwise for the host. */
    if (t->port && t->port != 22) {
        arg(&a, "-p");
        arg(&a, "%u", (unsigned)t->port);
    }
    const char *user = o->user && *o->user ? o->user : t->user;
    if (user && *user) {
        arg(&a, "-l");
        arg(&a, "%s", user);
    }
    arg(&a, "%s", t->host);
    return a.n;
}

/* Single-quotes a word for the remote POSIX shell. */
static void shell_quote(const char *word, char *out, size_t size)
{
    size_t at = 0;
    if (size < 3)
        return;
    out[at++] = '\'';
    for (const char *p = word; *p && at + 5 < size; p++) {
        if (*p == '\'') {
            memcpy(out + at, "'\\''", 4);
            at += 4;
        } else
            out[at++] = *p;
    }
    out[at++] = '\'';
    out[at] = '\0';
}

/* MIG mode on, old instances gone, the layout made on every GPU (as root: sudo -n where the
 * login is not). Failures are reported on stderr; the check then names what is missing. */
static void mig_script(const sp_check_expect *e, char *out, size_t size)
{
    char layout[600];
    shell_quote(e->mig, layout, sizeof(layout));
    snprintf(out, size,
             "s=; [ \"$(id -u)\" = 0 ] || s='sudo -n'\n"
             "{ $s nvidia-smi -mig 1 && { $s nvidia-smi mig -dci; $s nvidia-smi mig -dgi; "
             "true; } && $s nvidia-smi mig -cgi %s -C; } >&2 ||\n"
             "  echo 'skypool: MIG setup failed' >&2\n",
             layout);
}

/* Receives the program on stdin into the login's cache, then runs it. */
static void check_script(const sp_check_expect *e, char *out, size_t size)
{
    const char *args[40];
    char abuf[2048], mig[800] = "", quoted[640];
    size_t n = sp_check_args(e, args, 40, abuf, sizeof(abuf));
    if (e->mig[0])
        mig_script(e, mig, sizeof(mig));
    int at = snprintf(out, size,
                      "umask 077\n"
                      "d=\"${XDG_CACHE_HOME:-$HOME/.cache}/skypool\"\n"
                      "mkdir -p \"$d\" || exit 97\n"
                      "t=\"$d/nodecheck.$$\"\n"
                      "cat > \"$t\" && chmod 700 \"$t\" && mv -f \"$t\" \"$d/skypool-nodecheck\""
                      " || { rm -f \"$t\"; exit 97; }\n"
                      "%s"
                      "exec \"$d/skypool-nodecheck\"",
                      mig);
    for (size_t i = 0; i < n && at > 0 && (size_t)at < size; i++) {
        shell_quote(args[i], quoted, sizeof(quoted));
        at += snprintf(out + at, size - (size_t)at, " %s", quoted);
    }
}

static int ssh_run(const sp_ssh_target *t, const sp_ssh_opts *o, const char *command,
                   const unsigned char *in, size_t in_len, unsigned timeout_ms,
                   sp_proc_result *res, sp_err *err)
{
    const char *argv[48];
    char buf[4096];
    size_t n = sp_ssh_argv(t, o, argv, 46, buf, sizeof(buf));
    argv[n++] = command;
    argv[n] = NULL;
    sp_proc_opts po = {in, in_len, timeout_ms, 0};
    return sp_proc_run(argv, &po, res, err);
}

/* ssh's own failures exit 255: the node was not reached (or refused us). */
static bool unreachable(const sp_proc_result *res, sp_check_result *r, const char *host)
{
    if (res->exit_code != 255 && !res->timed_out)
        return false;
    char tail[256];
    set_verdict(r, "unreachable", "cannot reach %s over SSH: %s", host,
                res->timed_out ? "timed out" : sp_proc_err_tail(res, tail, sizeof(tail)));
    return true;
}

static int fallback_smi(const sp_ssh_target *t, const sp_ssh_opts *o, const sp_check_expect *e,
                        const char *why, sp_check_result *r, sp_err *err)
{
    char cmd[1024], mig[800] = "";
    if (e->mig[0])
        mig_script(e, mig, sizeof(mig));
    snprintf(cmd, sizeof(cmd),
             "%snvidia-smi --query-gpu=name,uuid,memory.total,driver_version,pci.bus_id "
             "--format=csv,noheader,nounits",
             mig);
    sp_proc_result res;
    int rc = ssh_run(t, o, cmd, NULL, 0, PROBE_TIMEOUT_MS, &res, err);
    if (rc == SP_E_NOTFOUND) /* no ssh here */
        return rc;
    if (!unreachable(&res, r, t->host)) {
        if (res.exit_code == 127)
            set_verdict(r, "no_driver", "no nvidia-smi on the node (%s)", why);
        else if (res.exit_code != 0) {
            char tail[256];
            set_verdict(r, "no_driver", "nvidia-smi failed: %s",
                        sp_proc_err_tail(&res, tail, sizeof(tail)));
        } else
            sp_check_read_smi(res.out, e, r);
    }
    sp_proc_result_free(&res);
    return SP_OK;
}

static void trim_line(char *s)
{
    size_t n = s ? strlen(s) : 0;
    while (n && isspace((unsigned char)s[n - 1]))
        s[--n] = '\0';
}

int sp_bootstrap_ssh(const sp_ssh_target *t, const sp_ssh_opts *o, const sp_check_expect *e,
                     sp_check_result *r, sp_err *err)
{
    memset(r, 0, sizeof(*r));
    r->exit_code = -1;
    sp_proc_result res;
    int rc = ssh_run(t, o, "uname -m", NULL, 0, PROBE_TIMEOUT_MS, &res, err);
    if (rc == SP_E_NOTFOUND)
        return rc;
    if (rc == SP_OK && unreachable(&res, r, t->host)) {
        sp_proc_result_free(&res);
        return SP_OK;
    }
    char arch[64] = "unknown", path[4096];
    if (res.out) {
        trim_line(res.out);
        snprintf(arch, sizeof(arch), "%s", res.out);
    }
    sp_proc_result_free(&res);
    unsigned char *prog = NULL;
    size_t prog_len = 0;
    sp_err why = {0};
    if (sp_nodecheck_path(arch, path, sizeof(path), &why) ||
        read_file(path, &prog, &prog_len, &why))
        return fallback_smi(t, o, e, why.msg, r, err);
    char script[8192];
    check_script(e, script, sizeof(script));
    rc = ssh_run(t, o, script, prog, prog_len, CHECK_TIMEOUT_MS, &res, err);
    free(prog);
    if (rc == SP_OK && !unreachable(&res, r, t->host) &&
        sp_check_read_report(res.out, res.out_len, res.exit_code, r, &why) != SP_OK) {
        char tail[256];
        snprintf(why.msg, sizeof(why.msg), "the check program did not run: %s",
                 sp_proc_err_tail(&res, tail, sizeof(tail)));
        rc = fallback_smi(t, o, e, why.msg, r, err);
    }
    sp_proc_result_free(&res);
    return rc == SP_E_NETWORK ? (set_verdict(r, "unreachable", "%s", err->msg), SP_OK) : rc;
}

int sp_check_local(const sp_check_expect *e, sp_check_result *r, sp_err *err)
{
    memset(r, 0, sizeof(*r));
    char path[4096], abuf[2048];
    int rc = sp_nodecheck_path(host_arch(), path, sizeof(path), err);
    if (rc)
        return rc;
    const char *argv[42] = {path};
    size_t n = 1 + sp_check_args(e, argv + 1, 40, abuf, sizeof(abuf));
    argv[n] = NULL;
    sp_proc_opts po = {NULL, 0, CHECK_TIMEOUT_MS, 0};
    sp_proc_result res;
    rc = sp_proc_run(argv, &po, &res, err);
    if (!rc)
        rc = sp_check_read_report(res.out, res.out_len, res.exit_code, r, err);
    if (rc == SP_E_PROTOCOL) {
        char tail[256];
        sp_err_set(err, rc, "%s exited %d without a report: %s", path, res.exit_code,
                   sp_proc_err_tail(&res, tail, sizeof(tail)));
    }
    sp_proc_result_free(&res);
    return rc;
}

int sp_ssh_resolve(const sp_ssh_target *t, const sp_ssh_opts *o, char *host, size_t size,
                   unsigned *port, bool *proxied)
{
    snprintf(host, size, "%s", t->host);
    *port = t->port ? t->port : 22;
    *proxied = o->proxy && *o->proxy;
    const char *argv[48];
    char buf[4096];
    size_t n = sp_ssh_argv(t, o, argv, 46, buf, sizeof(buf));
    argv[n] = argv[n - 1];
    argv[n - 1] = "-G";
    argv[n + 1] = NULL;
    sp_proc_opts po = {NULL, 0, 10000, 1u << 20};
    sp_proc_result res;
    sp_err err;
    int rc = sp_proc_run(argv, &po, &res, &err);
    if (!rc && res.exit_code == 0 && res.out) {
        for (char *save = NULL, *line = strtok_r(res.out, "\n", &save); line;
             line = strtok_r(NULL, "\n", &save)) {
            char *value = strchr(line, ' ');
            if (!value)
                continue;
            *value++ = '\0';
            if (!strcmp(line, "hostname"))
                snprintf(host, size, "%s", value);
            else if (!strcmp(line, "port"))
                *port = (unsigned)strtoul(value, NULL, 10);
            else if ((!strcmp(line, "proxycommand") || !strcmp(line, "proxyjump")) &&
                     strcmp(value, "none"))
                *proxied = true;
        }
    }
    sp_proc_result_free(&res);
    return rc;
}
