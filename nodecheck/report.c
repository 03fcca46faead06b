/* The report on stdout: schema "skypool-nodecheck/1", documented in docs/nodecheck.md. */
#include "json.h"
#include "names.h"
#include "nodecheck.h"

#include <stdio.h>

#ifndef NC_VERSION
#define NC_VERSION "0.0.0"
#endif

/* NVML's clock event (throttle) reason bits, nvmlClocksEventReason* in nvml.h. */
static const struct {
    unsigned long long bit;
    const char *name;
} throttle_names[] = {
    {0x1ULL, "gpu_idle"},
    {0x2ULL, "applications_clocks_setting"},
    {0x4ULL, "sw_power_cap"},
    {0x8ULL, "hw_slowdown"},
    {0x10ULL, "sync_boost"},
    {0x20ULL, "sw_thermal_slowdown"},
    {0x40ULL, "hw_thermal_slowdown"},
    {0x80ULL, "hw_power_brake_slowdown"},
    {0x100ULL, "display_clock_setting"},
};

static const char *result_name(nc_result r)
{
    return r == NC_PASS ? "pass" : r == NC_FAIL ? "fail" : "skipped";
}

static void string_or_null(nc_json *w, const char *key, const char *s)
{
    nc_json_string(w, key, s && s[0] ? s : NULL);
}

static void int_or_null(nc_json *w, const char *key, long long v)
{
    if (v < 0)
        nc_json_null(w, key);
    else
        nc_json_int(w, key, v);
}

static void gbps(nc_json *w, const char *key, double v)
{
    if (v < 0)
        nc_json_null(w, key);
    else
        nc_json_fixed(w, key, v, 1);
}

static void write_mig(nc_json *w, const nc_device *d)
{
    static const char *const modes[] = {"unsupported", "disabled", "enabled"};
    nc_json_object_begin(w, "mig");
    nc_json_string(w, "mode", modes[d->mig_mode]);
    nc_json_array_begin(w, "instances");
    for (size_t i = 0; i < d->n_mig; i++) {
        nc_json_object_begin(w, NULL);
        nc_json_string(w, "profile", d->mig[i].profile);
        string_or_null(w, "uuid", d->mig[i].uuid);
        nc_json_uint(w, "memory_mib", d->mig[i].memory_mib);
        nc_json_object_end(w);
    }
    nc_json_array_end(w);
    nc_json_object_end(w);
}

static void write_health(nc_json *w, const nc_device *d)
{
    static const char *const ecc_keys[] = {"volatile_corrected", "volatile_uncorrected",
                                           "aggregate_corrected", "aggregate_uncorrected"};
    static const char *const clock_keys[] = {"sm_mhz", "mem_mhz", "sm_max_mhz", "mem_max_mhz"};
    if (d->has_ecc) {
        nc_json_object_begin(w, "ecc");
        for (int i = 0; i < 4; i++)
            nc_json_uint(w, ecc_keys[i], d->ecc[i]);
        nc_json_object_end(w);
    } else {
        nc_json_null(w, "ecc");
    }
    if (d->has_throttle) {
        nc_json_array_begin(w, "throttle_reasons");
        unsigned long long left = d->throttle;
        for (size_t i = 0; i < sizeof(throttle_names) / sizeof(throttle_names[0]); i++)
            if (d->throttle & throttle_names[i].bit) {
                nc_json_string(w, NULL, throttle_names[i].name);
                left &= ~throttle_names[i].bit;
            }
        if (left) {
            char other[40];
            snprintf(other, sizeof(other), "other_0x%llx", left);
            nc_json_string(w, NULL, other);
        }
        nc_json_array_end(w);
    } else {
        nc_json_null(w, "throttle_reasons");
    }
    nc_json_object_begin(w, "clocks");
    for (int i = 0; i < 4; i++)
        int_or_null(w, clock_keys[i], d->clocks[i]);
    nc_json_object_end(w);
}

static void write_tests(nc_json *w, const nc_tests *t)
{
    nc_json_object_begin(w, "tests");
    nc_json_string(w, "arith", result_name(t->arith));
    nc_json_string(w, "memory", result_name(t->memory));
    nc_json_uint(w, "memory_errors", t->memory_errors);
    nc_json_uint(w, "memory_tested_mib", t->memory_tested_mib);
    nc_json_string(w, "memory_method", t->memory_method);
    gbps(w, "d2d_gbps", t->d2d_gbps);
    gbps(w, "h2d_gbps", t->h2d_gbps);
    string_or_null(w, "tested_uuid", t->tested_uuid);
    string_or_null(w, "why", t->why);
    nc_json_object_end(w);
}

static void write_device(nc_json *w, const nc_device *d)
{
    char cc[24];
    nc_json_object_begin(w, NULL);
    nc_json_uint(w, "index", d->index);
    string_or_null(w, "name", d->name);
    nc_json_string(w, "model", d->model);
    string_or_null(w, "uuid", d->uuid);
    nc_json_uint(w, "memory_mib", d->memory_mib);
    int_or_null(w, "sm_count", d->sm_count);
    if (d->cc_major >= 0 && d->cc_minor >= 0) {
        snprintf(cc, sizeof(cc), "%d.%d", d->cc_major, d->cc_minor);
        nc_json_string(w, "compute_capability", cc);
    } else {
        nc_json_null(w, "compute_capability");
    }
    string_or_null(w, "pci_bus_id", d->pci_bus_id);
    nc_json_string(w, "form_factor", nc_form_factor_name(d->form_factor));
    string_or_null(w, "board_part_number", d->board_part);
    int_or_null(w, "cuda_ordinal", d->cuda_ordinal);
    write_mig(w, d);
    write_health(w, d);
    write_tests(w, &d->tests);
    nc_json_object_end(w);
}

/* What CUDA_VISIBLE_DEVICES takes: each MIG device where MIG is on, else each GPU. */
static void write_workers(nc_json *w, const nc_report *r)
{
    nc_json_array_begin(w, "workers");
    for (size_t i = 0; i < r->n_devices; i++) {
        const nc_device *d = &r->devices[i];
        size_t n = d->mig_mode == NC_MIG_ENABLED ? d->n_mig : 1;
        for (size_t k = 0; k < n; k++) {
            nc_json_object_begin(w, NULL);
            if (d->mig_mode == NC_MIG_ENABLED) {
                string_or_null(w, "uuid", d->mig[k].uuid);
                nc_json_uint(w, "device", d->index);
                nc_json_string(w, "profile", d->mig[k].profile);
            } else {
                string_or_null(w, "uuid", d->uuid);
                nc_json_uint(w, "device", d->index);
                nc_json_null(w, "profile");
            }
            nc_json_object_end(w);
        }
    }
    nc_json_array_end(w);
}

static void write_neuron(nc_json *w, const nc_neuron *n)
{
    long cores = 0;
    if (!n->present) {
        nc_json_null(w, "neuron");
        return;
    }
    nc_json_object_begin(w, "neuron");
    nc_json_string(w, "tool", n->tool);
    string_or_null(w, "error", n->error);
    nc_json_uint(w, "device_count", n->n_devices);
    for (size_t i = 0; i < n->n_devices; i++)
        cores += n->devices[i].cores > 0 ? n->devices[i].cores : 0;
    nc_json_int(w, "core_count", cores);
    nc_json_array_begin(w, "devices");
    for (size_t i = 0; i < n->n_devices; i++) {
        const nc_neuron_device *d = &n->devices[i];
        nc_json_object_begin(w, NULL);
        int_or_null(w, "index", d->index);
        int_or_null(w, "cores", d->cores);
        nc_json_uint(w, "memory_mib", d->memory_mib);
        string_or_null(w, "bdf", d->bdf);
        nc_json_string(w, "model", d->model);
        nc_json_array_begin(w, "model_candidates");
        for (int k = 0; k < 2 && d->candidates[k]; k++)
            nc_json_string(w, NULL, d->candidates[k]);
        nc_json_array_end(w);
        nc_json_object_end(w);
    }
    nc_json_array_end(w);
    nc_json_object_end(w);
}

static void write_driver(nc_json *w, const nc_report *r)
{
    char cuda[24];
    nc_json_object_begin(w, "driver");
    nc_json_bool(w, "loaded", r->driver_loaded);
    string_or_null(w, "version", r->driver_version);
    if (r->cuda_version > 0) {
        snprintf(cuda, sizeof(cuda), "%d.%d", r->cuda_version / 1000,
                 r->cuda_version % 1000 / 10);
        nc_json_string(w, "cuda_max", cuda);
    } else {
        nc_json_null(w, "cuda_max");
    }
    string_or_null(w, "error", r->driver_error);
    nc_json_bool(w, "nvml_loaded", r->nvml_loaded);
    string_or_null(w, "nvml_error", r->nvml_error);
    nc_json_object_end(w);
}

static void write_expected(nc_json *w, const nc_options *o)
{
    char cuda[24];
    nc_json_object_begin(w, "expected");
    if (o->expect_count >= 0)
        nc_json_int(w, "count", o->expect_count);
    if (o->n_models) {
        nc_json_array_begin(w, "models");
        for (size_t i = 0; i < o->n_models; i++)
            nc_json_string(w, NULL, o->expect_models[i]);
        nc_json_array_end(w);
    }
    if (o->expect_mem_mib)
        nc_json_uint(w, "memory_mib", o->expect_mem_mib);
    if (o->expect_ff >= 0)
        nc_json_string(w, "form_factor", nc_form_factor_name(o->expect_ff));
    if (o->n_mig) {
        nc_json_array_begin(w, "mig");
        for (size_t i = 0; i < o->n_mig; i++)
            nc_json_string(w, NULL, o->expect_mig[i]);
        nc_json_array_end(w);
    }
    if (o->min_cuda_major >= 0) {
        snprintf(cuda, sizeof(cuda), "%d.%d", o->min_cuda_major, o->min_cuda_minor);
        nc_json_string(w, "min_cuda", cuda);
    }
    nc_json_object_end(w);
}

static void write_mismatches(nc_json *w, const nc_report *r)
{
    nc_json_array_begin(w, "mismatches");
    for (size_t i = 0; i < r->n_mismatches; i++) {
        const nc_mismatch *m = &r->mismatches[i];
        nc_json_object_begin(w, NULL);
        nc_json_string(w, "what", m->what);
        int_or_null(w, "device", m->device);
        nc_json_string(w, "expected", m->expected);
        nc_json_string(w, "found", m->found);
        nc_json_string(w, "message", m->message);
        nc_json_object_end(w);
    }
    nc_json_array_end(w);
}

static void write_conventions(nc_json *w)
{
    nc_json_object_begin(w, "bandwidth_convention");
    nc_json_string(w, "d2d_gbps", "2 x bytes copied per second (read + write, as NVIDIA's "
                                  "bandwidthTest counts), 1 GB = 1e9 bytes");
    nc_json_string(w, "h2d_gbps", "bytes copied per second from pinned host memory, "
                                  "1 GB = 1e9 bytes");
    nc_json_object_end(w);
}

bool nc_write_report(const nc_report *r, long long elapsed_ms)
{
    nc_json w;
    nc_json_init(&w, r->opt.pretty);
    nc_json_object_begin(&w, NULL);
    nc_json_string(&w, "schema", NC_SCHEMA);
    nc_json_string(&w, "version", NC_VERSION);
    string_or_null(&w, "hostname", r->hostname);
    string_or_null(&w, "arch", r->arch);
    nc_json_int(&w, "elapsed_ms", elapsed_ms);
    nc_json_string(&w, "status", r->status);
    nc_json_int(&w, "exit_code", r->status_exit);
    string_or_null(&w, "error", r->internal_why);
    write_driver(&w, r);
    nc_json_array_begin(&w, "devices");
    for (size_t i = 0; i < r->n_devices; i++)
        write_device(&w, &r->devices[i]);
    nc_json_array_end(&w);
    write_workers(&w, r);
    write_neuron(&w, &r->neuron);
    nc_json_object_begin(&w, "kernels");
    nc_json_bool(&w, "built", nc_kernels_built());
    nc_json_string(&w, "why", nc_kernels_why());
    nc_json_object_end(&w);
    write_conventions(&w);
    write_expected(&w, &r->opt);
    write_mismatches(&w, r);
    nc_json_object_end(&w);
    bool fine = nc_json_finish(&w) &&
                fwrite(w.data, 1, w.len, stdout) == w.len && fflush(stdout) == 0;
    nc_json_free(&w);
    return fine;
}
