/*
 * skypool-nodecheck: proves that a cloud node's accelerators are what was paid for.
 *
 * Runs on the node with nothing but the GPU driver installed; prints a JSON report (schema
 * "skypool-nodecheck/1") and exits with a code the core acts on. The command line, the report
 * and the exit codes are a contract with the core: see docs/nodecheck.md.
 */
#include "names.h"
#include "nodecheck.h"

#include <errno.h>
#include <locale.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#ifndef NC_VERSION
#define NC_VERSION "0.0.0"
#endif

#define PROG "skypool-nodecheck"
#define MEM_TEST_DEFAULT_MIB 256
#define MEM_TEST_MAX_MIB (1u << 20)

static const char usage_text[] =
    "usage: " PROG " [--expect-count N] [--expect-model KEY[,KEY...]] [--expect-mem-mib N]\n"
    "       [--expect-form-factor sxm|pcie|nvl] [--expect-mig PROFILE[,PROFILE...]]\n"
    "       [--min-cuda MAJOR.MINOR] [--no-tests] [--mem-test-mib N] [--pretty]\n"
    "       [--version] [--help]\n";

static const char help_text[] =
    "\n"
    "Checks this node's GPUs (or AWS Neuron devices) against what was paid for, runs a short\n"
    "arithmetic, memory and bandwidth test on each GPU, and prints a JSON report.\n"
    "\n"
    "  --expect-count N          exactly N GPUs (or Neuron devices)\n"
    "  --expect-model KEYS       each device is one of these skypool model keys\n"
    "  --expect-mem-mib N        each device has at least 92% of N MiB\n"
    "  --expect-form-factor F    each GPU is sxm, pcie or nvl\n"
    "  --expect-mig PROFILES     each GPU carries exactly this MIG layout (e.g. 3g.40gb,3g.40gb)\n"
    "  --min-cuda MAJOR.MINOR    the driver supports at least this CUDA version\n"
    "  --no-tests                identify only; run no kernels or copies\n"
    "  --mem-test-mib N          memory test slice and copy size per GPU (default 256)\n"
    "  --pretty                  indent the JSON\n"
    "\n"
    "Exit status: 0 all as expected, 1 internal error, 2 usage, 3 no driver, 4 no device,\n"
    "5 driver too old, 6 hardware mismatch, 7 MIG layout wrong, 8 a test failed.\n";

__attribute__((format(printf, 1, 2))) static int usage_error(const char *fmt, ...)
{
    va_list ap;
    fputs(PROG ": ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputs("\n", stderr);
    fputs(usage_text, stderr);
    return NC_EXIT_USAGE;
}

/* A decimal number in [min, max], digits only: no sign, no spaces, no locale. */
static bool parse_number(const char *s, unsigned long long min, unsigned long long max,
                         unsigned long long *out)
{
    unsigned long long v = 0;
    if (!s || !*s)
        return false;
    for (; *s; s++) {
        if (*s < '0' || *s > '9' || v > (max - (unsigned)(*s - '0')) / 10)
            return false;
        v = v * 10 + (unsigned)(*s - '0');
    }
    if (v < min)
        return false;
    *out = v;
    return true;
}

/* Splits a comma-separated list in place (buf is the caller's copy). */
static size_t split_list(char *buf, const char **items, size_t max, bool *too_many)
{
    size_t n = 0;
    *too_many = false;
    for (char *p = buf; p;) {
        char *comma = strchr(p, ',');
        if (comma)
            *comma = '\0';
        if (n == max) {
            *too_many = true;
            break;
        }
        items[n++] = p;
        p = comma ? comma + 1 : NULL;
    }
    return n;
}

static size_t digits(const char *p)
{
    size_t n = 0;
    while (p[n] >= '0' && p[n] <= '9')
        n++;
    return n;
}

/* "3g.40gb", "1g.10gb+me", "1c.3g.20gb": [<n>c.]<n>g.<n>gb[+<suffix>] */
static bool valid_profile(const char *p)
{
    size_t n = digits(p);
    if (n && p[n] == 'c' && p[n + 1] == '.')
        p += n + 2;
    n = digits(p);
    if (!n || p[n] != 'g' || p[n + 1] != '.')
        return false;
    p += n + 2;
    n = digits(p);
    if (!n || strncmp(p + n, "gb", 2) != 0)
        return false;
    p += n + 2;
    if (*p == '\0')
        return true;
    if (*p != '+' || !p[1])
        return false;
    for (p++; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9')))
            return false;
    return true;
}

static int parse_models(nc_options *o, const char *arg)
{
    char buf[NC_TEXT];
    const char *items[NC_MAX_LIST];
    bool too_many;
    if (strlen(arg) >= sizeof(buf))
        return usage_error("--expect-model: the list is too long");
    snprintf(buf, sizeof(buf), "%s", arg);
    size_t n = split_list(buf, items, NC_MAX_LIST, &too_many);
    if (too_many)
        return usage_error("--expect-model: more than %d models", NC_MAX_LIST);
    for (size_t i = 0; i < n; i++) {
        const char *key = nc_model_key_canonical(items[i]);
        if (!key) {
            char known[NC_TEXT * 2] = "";
            size_t nk, len = 0;
            const char *const *keys = nc_model_keys(&nk);
            for (size_t k = 0; k < nk; k++)
                len += (size_t)snprintf(known + len, sizeof(known) - len, "%s%s", k ? " " : "",
                                        keys[k]);
            return usage_error("--expect-model: unknown model key '%s' (known: %s)", items[i],
                               known);
        }
        o->expect_models[i] = key;
    }
    o->n_models = n;
    return 0;
}

static int parse_mig(nc_options *o, const char *arg)
{
    bool too_many;
    if (strlen(arg) >= sizeof(o->expect_mig_buf))
        return usage_error("--expect-mig: the list is too long");
    snprintf(o->expect_mig_buf, sizeof(o->expect_mig_buf), "%s", arg);
    o->n_mig = split_list(o->expect_mig_buf, o->expect_mig, NC_MAX_LIST, &too_many);
    if (too_many)
        return usage_error("--expect-mig: more than %d instances", NC_MAX_LIST);
    for (size_t i = 0; i < o->n_mig; i++)
        if (!valid_profile(o->expect_mig[i]))
            return usage_error("--expect-mig: '%s' is not a MIG profile name such as 3g.40gb",
                               o->expect_mig[i]);
    return 0;
}

static int parse_cuda(nc_options *o, const char *arg)
{
    char major[16], minor[16];
    const char *dot = strchr(arg, '.');
    unsigned long long ma, mi;
    if (!dot || (size_t)(dot - arg) >= sizeof(major) || strlen(dot + 1) >= sizeof(minor))
        return usage_error("--min-cuda: '%s' is not MAJOR.MINOR (e.g. 12.4)", arg);
    snprintf(major, sizeof(major), "%.*s", (int)(dot - arg), arg);
    snprintf(minor, sizeof(minor), "%s", dot + 1);
    if (!parse_number(major, 1, 999, &ma) || !parse_number(minor, 0, 99, &mi))
        return usage_error("--min-cuda: '%s' is not MAJOR.MINOR (e.g. 12.4)", arg);
    o->min_cuda_major = (int)ma;
    o->min_cuda_minor = (int)mi;
    return 0;
}

/* One option (one of takes_value's) with its value; returns 0, or a usage error's exit code. */
static int parse_valued(nc_options *o, const char *flag, const char *value)
{
    unsigned long long n;
    if (strcmp(flag, "--expect-count") == 0) {
        if (!parse_number(value, 1, 1u << 16, &n))
            return usage_error("--expect-count: '%s' is not a count of 1 or more", value);
        o->expect_count = (long)n;
    } else if (strcmp(flag, "--expect-model") == 0) {
        return parse_models(o, value);
    } else if (strcmp(flag, "--expect-mem-mib") == 0) {
        if (!parse_number(value, 1, 1ULL << 40, &n))
            return usage_error("--expect-mem-mib: '%s' is not a number of MiB", value);
        o->expect_mem_mib = n;
    } else if (strcmp(flag, "--expect-form-factor") == 0) {
        o->expect_ff = nc_form_factor_parse(value);
        if (o->expect_ff < 0)
            return usage_error("--expect-form-factor: '%s' is not sxm, pcie or nvl", value);
    } else if (strcmp(flag, "--expect-mig") == 0) {
        return parse_mig(o, value);
    } else if (strcmp(flag, "--min-cuda") == 0) {
        return parse_cuda(o, value);
    } else if (strcmp(flag, "--mem-test-mib") == 0) {
        if (!parse_number(value, 1, MEM_TEST_MAX_MIB, &n))
            return usage_error("--mem-test-mib: '%s' is not a number of MiB from 1 to %u",
                               value, MEM_TEST_MAX_MIB);
        o->mem_test_mib = (unsigned)n;
    }
    return 0;
}

static bool takes_value(const char *flag)
{
    static const char *const flags[] = {"--expect-count", "--expect-model", "--expect-mem-mib",
                                        "--expect-form-factor", "--expect-mig", "--min-cuda",
                                        "--mem-test-mib"};
    for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++)
        if (strcmp(flag, flags[i]) == 0)
            return true;
    return false;
}

enum { RUN = -1, DONE_OK = 0 };

/* Returns RUN to go on, or the exit code to stop with (--help, --version, usage errors). */
static int parse_args(int argc, char **argv, nc_options *o)
{
    memset(o, 0, sizeof(*o));
    o->expect_count = -1;
    o->expect_ff = -1;
    o->min_cuda_major = o->min_cuda_minor = -1;
    o->mem_test_mib = MEM_TEST_DEFAULT_MIB;
    for (int i = 1; i < argc; i++) {
        char flag[64];
        const char *arg = argv[i], *value = NULL, *eq = strchr(arg, '=');
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            fputs(usage_text, stdout);
            fputs(help_text, stdout);
            return DONE_OK;
        }
        if (strcmp(arg, "--version") == 0) {
            printf("%s %s (report schema %s, kernels %s)\n", PROG, NC_VERSION, NC_SCHEMA,
                   nc_kernels_built() ? "built in" : "not built");
            return DONE_OK;
        }
        if (strcmp(arg, "--no-tests") == 0) {
            o->no_tests = true;
            continue;
        }
        if (strcmp(arg, "--pretty") == 0) {
            o->pretty = true;
            continue;
        }
        if (strncmp(arg, "--", 2) != 0)
            return usage_error("unexpected argument '%s'", arg);
        snprintf(flag, sizeof(flag), "%.*s", eq ? (int)(eq - arg) : (int)strlen(arg), arg);
        if (!takes_value(flag))
            return usage_error("unknown option '%s'", flag);
        if (eq)
            value = eq + 1;
        else if (i + 1 < argc)
            value = argv[++i];
        else
            return usage_error("%s needs a value", flag);
        int rc = parse_valued(o, flag, value);
        if (rc != 0)
            return rc;
    }
    return RUN;
}

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void identify_host(nc_report *r)
{
    struct utsname u;
    if (gethostname(r->hostname, sizeof(r->hostname)) != 0)
        r->hostname[0] = '\0';
    r->hostname[sizeof(r->hostname) - 1] = '\0';
    if (uname(&u) == 0)
        snprintf(r->arch, sizeof(r->arch), "%s", u.machine);
}

/* Neuron expectations: every expected model is a Neuron key. */
static bool expects_neuron(const nc_options *o)
{
    for (size_t i = 0; i < o->n_models; i++)
        if (!nc_model_is_neuron(o->expect_models[i]))
            return false;
    return o->n_models > 0;
}

int main(int argc, char **argv)
{
    long long t0 = now_ms();
    static nc_report report; /* ~100 KiB: not on the stack */
    nc_report *r = &report;
    nc_cuda cu;
    /* The user's locale for anything the C library words for us; the JSON writer formats its
     * own numbers and so does not care (a loaded driver library could set it as well). */
    setlocale(LC_ALL, "");
    int rc = parse_args(argc, argv, &r->opt);
    if (rc != RUN)
        return rc;
    identify_host(r);
    nc_probe_neuron(&r->neuron);
    bool want_neuron = expects_neuron(&r->opt);
    if (!want_neuron) {
        nc_probe_gpus(r, &cu);
        if (!r->opt.no_tests && r->driver_loaded && !r->no_device)
            nc_run_tests(r, &cu);
    }
    /* A node with Neuron devices and no NVIDIA GPU is a Neuron node, unless GPUs were asked
     * for by model. */
    r->neuron_node = want_neuron || (r->opt.n_models == 0 && (r->no_driver || r->no_device) &&
                                     r->neuron.n_devices > 0);
    nc_check(r);
    if (!nc_write_report(r, now_ms() - t0)) {
        fprintf(stderr, PROG ": cannot write the report: %s\n", strerror(errno));
        free(r->mismatches);
        return NC_EXIT_INTERNAL;
    }
    free(r->mismatches);
    return r->status_exit;
}
