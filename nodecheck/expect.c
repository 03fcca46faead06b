/*
 * Expectations against findings. Every broken expectation becomes one entry of "mismatches";
 * the status and exit code follow from the worst of them, in the contract's order: no driver
 * (3), no device (4), driver too old (5), hardware (6), MIG layout (7), tests (8).
 */
#include "names.h"
#include "nodecheck.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* A device passes the memory check with at least this share of the catalog's figure: ECC
 * reservations leave a T4 or an A10G about 94% of its nominal memory. */
#define MEM_PERCENT_MIN 92

void nc_add_mismatch(nc_report *r, const char *what, int device, const char *expected,
                     const char *found, const char *fmt, ...)
{
    nc_mismatch *grown = realloc(r->mismatches, (r->n_mismatches + 1) * sizeof(*grown));
    if (!grown) {
        r->internal_error = true;
        snprintf(r->internal_why, sizeof(r->internal_why), "out of memory listing mismatches");
        return;
    }
    r->mismatches = grown;
    nc_mismatch *m = &r->mismatches[r->n_mismatches++];
    m->what = what;
    m->device = device;
    snprintf(m->expected, sizeof(m->expected), "%s", expected);
    snprintf(m->found, sizeof(m->found), "%s", found);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m->message, sizeof(m->message), fmt, ap);
    va_end(ap);
}

static void join(char *buf, size_t size, const char *const *items, size_t n, const char *sep)
{
    size_t len = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < n && len < size; i++)
        len += (size_t)snprintf(buf + len, size - len, "%s%s", i ? sep : "", items[i]);
}

static bool model_expected(const nc_options *o, const char *key)
{
    for (size_t i = 0; key && i < o->n_models; i++)
        if (strcmp(o->expect_models[i], key) == 0)
            return true;
    return false;
}

static void check_count(nc_report *r, long found, const char *noun)
{
    char want[32], got[32];
    if (r->opt.expect_count < 0 || found == r->opt.expect_count)
        return;
    snprintf(want, sizeof(want), "%ld", r->opt.expect_count);
    snprintf(got, sizeof(got), "%ld", found);
    nc_add_mismatch(r, "count", -1, want, got, "%ld %s expected, %ld found", r->opt.expect_count,
                    noun, found);
}

static void check_memory(nc_report *r, int index, const char *noun, unsigned long long mib)
{
    unsigned long long want = r->opt.expect_mem_mib;
    char w[32], f[32];
    if (!want || mib * 100 >= want * MEM_PERCENT_MIN)
        return;
    snprintf(w, sizeof(w), "%llu", want);
    snprintf(f, sizeof(f), "%llu", mib);
    nc_add_mismatch(r, "memory", index, w, f,
                    "%s %d has %llu MiB, less than %d%% of the %llu MiB expected (%llu MiB)", noun,
                    index, mib, MEM_PERCENT_MIN, want, want * MEM_PERCENT_MIN / 100);
}

static void check_gpu(nc_report *r, const nc_device *d)
{
    const nc_options *o = &r->opt;
    char models[NC_TEXT];
    int i = (int)d->index;
    join(models, sizeof(models), o->expect_models, o->n_models, ",");
    if (o->n_models && !model_expected(o, d->model))
        nc_add_mismatch(r, "model", i, models, d->model ? d->model : d->name,
                        "GPU %d is %s (%s), not %s", i, d->name[0] ? d->name : "unnamed",
                        d->model ? d->model : "no skypool model", models);
    check_memory(r, i, "GPU", d->memory_mib);
    if (o->expect_ff >= 0 && d->form_factor != o->expect_ff)
        nc_add_mismatch(r, "form_factor", i, nc_form_factor_name(o->expect_ff),
                        nc_form_factor_name(d->form_factor), "GPU %d (%s) is %s, not %s", i,
                        d->name, d->form_factor ? nc_form_factor_name(d->form_factor)
                                                : "of an unknown form factor",
                        nc_form_factor_name(o->expect_ff));
}

static int cmp_names(const void *a, const void *b)
{
    return strcasecmp(*(const char *const *)a, *(const char *const *)b);
}

/* The layout as a multiset: 3g.40gb,1g.10gb equals 1g.10gb,3g.40gb. */
static bool same_layout(const char **want, size_t n_want, const nc_device *d)
{
    const char *have[NC_MAX_MIG];
    if (n_want != d->n_mig)
        return false;
    for (size_t i = 0; i < d->n_mig; i++)
        have[i] = d->mig[i].profile;
    qsort(want, n_want, sizeof(*want), cmp_names);
    qsort(have, d->n_mig, sizeof(*have), cmp_names);
    for (size_t i = 0; i < n_want; i++)
        if (strcasecmp(want[i], have[i]) != 0)
            return false;
    return true;
}

static void check_mig(nc_report *r, const nc_device *d)
{
    const nc_options *o = &r->opt;
    const char *want[NC_MAX_LIST], *have[NC_MAX_MIG];
    char expected[NC_TEXT], found[NC_TEXT];
    int i = (int)d->index;
    if (!o->n_mig)
        return;
    memcpy(want, o->expect_mig, o->n_mig * sizeof(*want));
    join(expected, sizeof(expected), want, o->n_mig, ",");
    if (d->mig_mode != NC_MIG_ENABLED) {
        const char *state = d->mig_mode == NC_MIG_DISABLED ? "MIG disabled" : "no MIG support";
        nc_add_mismatch(r, "mig", i, expected, state, "GPU %d (%s) has %s; expected MIG layout %s",
                        i, d->name, state, expected);
        return;
    }
    if (same_layout(want, o->n_mig, d))
        return;
    for (size_t k = 0; k < d->n_mig; k++)
        have[k] = d->mig[k].profile;
    join(found, sizeof(found), have, d->n_mig, ",");
    nc_add_mismatch(r, "mig", i, expected, d->n_mig ? found : "no MIG instances",
                    "GPU %d (%s) carries MIG layout [%s], expected [%s]", i, d->name,
                    d->n_mig ? found : "none", expected);
}

static void check_tests(nc_report *r, const nc_device *d)
{
    const nc_tests *t = &d->tests;
    int i = (int)d->index;
    if (t->arith == NC_FAIL || t->memory == NC_FAIL) {
        const char *which = t->arith == NC_FAIL && t->memory == NC_FAIL ? "arith and memory"
                            : t->arith == NC_FAIL                       ? "arith"
                                                                        : "memory";
        char found[64];
        snprintf(found, sizeof(found), "%s failed", which);
        nc_add_mismatch(r, "test", i, "pass", found, "GPU %d %s test failed: %s", i, which,
                        t->why[0] ? t->why : "no detail");
    }
}

static void check_cuda(nc_report *r)
{
    const nc_options *o = &r->opt;
    char want[32], have[32];
    if (o->min_cuda_major < 0)
        return;
    int major = r->cuda_version / 1000, minor = r->cuda_version % 1000 / 10;
    if (r->cuda_version > 0 &&
        (major > o->min_cuda_major || (major == o->min_cuda_major && minor >= o->min_cuda_minor)))
        return;
    snprintf(want, sizeof(want), "%d.%d", o->min_cuda_major, o->min_cuda_minor);
    if (r->cuda_version > 0)
        snprintf(have, sizeof(have), "%d.%d", major, minor);
    else
        snprintf(have, sizeof(have), "unknown");
    nc_add_mismatch(r, "cuda", -1, want, have,
                    "driver %s supports CUDA up to %s; CUDA %s or newer is required",
                    r->driver_version[0] ? r->driver_version : "(version unknown)", have, want);
}

static void check_gpus(nc_report *r)
{
    if (r->no_driver)
        return;
    check_count(r, (long)r->n_devices, "GPUs");
    if (r->no_device)
        return;
    check_cuda(r);
    for (size_t i = 0; i < r->n_devices; i++) {
        check_gpu(r, &r->devices[i]);
        check_mig(r, &r->devices[i]);
        check_tests(r, &r->devices[i]);
    }
}

static bool neuron_model_ok(const nc_options *o, const nc_neuron_device *d)
{
    return model_expected(o, d->model) || model_expected(o, d->candidates[0]) ||
           model_expected(o, d->candidates[1]);
}

static void check_neuron(nc_report *r)
{
    const nc_options *o = &r->opt;
    const nc_neuron *n = &r->neuron;
    char models[NC_TEXT];
    r->no_driver = !n->present || n->error[0];
    r->no_device = !r->no_driver && n->n_devices == 0;
    if (r->no_driver) {
        snprintf(r->driver_error, sizeof(r->driver_error), "Neuron: %s",
                 n->present ? n->error : "neuron-ls is not on PATH nor in /opt/aws/neuron/bin");
        return;
    }
    check_count(r, (long)n->n_devices, "Neuron devices");
    join(models, sizeof(models), o->expect_models, o->n_models, ",");
    for (size_t i = 0; i < n->n_devices; i++) {
        const nc_neuron_device *d = &n->devices[i];
        if (o->n_models && !neuron_model_ok(o, d))
            nc_add_mismatch(r, "model", (int)i, models, d->model ? d->model : "unknown",
                            "Neuron device %zu (%llu MiB, %ld cores) is %s, not %s", i,
                            d->memory_mib, d->cores,
                            d->model ? d->model
                            : d->candidates[0] ? "Inferentia2 or Trainium"
                                               : "of an unknown model",
                            models);
        check_memory(r, (int)i, "Neuron device", d->memory_mib);
    }
    if (o->expect_ff >= 0)
        nc_add_mismatch(r, "form_factor", -1, nc_form_factor_name(o->expect_ff), "neuron",
                        "Neuron devices have no GPU form factor");
    if (o->n_mig)
        nc_add_mismatch(r, "mig", -1, "MIG layout", "neuron", "Neuron devices have no MIG");
}

static void decide(nc_report *r)
{
    bool cuda = false, hw = false, mig = false, test = false;
    for (size_t i = 0; i < r->n_mismatches; i++) {
        const char *w = r->mismatches[i].what;
        cuda |= strcmp(w, "cuda") == 0;
        mig |= strcmp(w, "mig") == 0;
        test |= strcmp(w, "test") == 0;
        hw |= strcmp(w, "count") == 0 || strcmp(w, "model") == 0 || strcmp(w, "memory") == 0 ||
              strcmp(w, "form_factor") == 0;
    }
    static const struct {
        int exit;
        const char *status;
    } order[] = {
        {NC_EXIT_NO_DRIVER, "no_driver"}, {NC_EXIT_NO_DEVICE, "no_device"},
        {NC_EXIT_DRIVER_TOO_OLD, "driver_too_old"}, {NC_EXIT_HARDWARE, "hardware_mismatch"},
        {NC_EXIT_MIG, "mig_mismatch"}, {NC_EXIT_TEST, "test_failed"},
        {NC_EXIT_INTERNAL, "error"},
    };
    bool hit[] = {r->no_driver, r->no_device, cuda, hw, mig, test, r->internal_error};
    r->status_exit = NC_EXIT_OK;
    r->status = "ok";
    for (size_t i = 0; i < sizeof(hit) / sizeof(hit[0]); i++)
        if (hit[i]) {
            r->status_exit = order[i].exit;
            r->status = order[i].status;
            return;
        }
}

void nc_check(nc_report *r)
{
    if (r->neuron_node)
        check_neuron(r);
    else
        check_gpus(r);
    decide(r);
}
