/*
 * The checks that need the GPU to work, not just to answer: an arithmetic kernel whose every
 * result the host recomputes, a memory pattern test over a slice of device memory, and the
 * device-to-device and host-to-device bandwidth.
 *
 * One thread per device, each with its own context, so that CUDA's per-device start-up costs
 * overlap on an 8-GPU node. Host-to-device copies share the host's memory and PCIe root ports,
 * so they are timed one device at a time.
 */
#include "kernels.h"
#include "nodecheck.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MIB (1024ULL * 1024ULL)
#define STAGING_MAX (64 * MIB) /* pinned host buffer: H2D timing, driver-API verification */
#define SLICE_FLOOR_MIB 16     /* the least the memory test shrinks to when memory is short */
#define D2D_ITERS 10
#define H2D_ITERS 4
#define CUDA_ERROR_DEVICE_UNAVAILABLE 46 /* exclusive-process mode, another process has it */

#ifdef NC_NO_KERNELS
bool nc_kernels_built(void)
{
    return false;
}

const char *nc_kernels_why(void)
{
    return "built without a CUDA toolkit";
}
#else
extern const char nc_kernels_ptx[]; /* generated from kernels.cu at build time */

bool nc_kernels_built(void)
{
    return true;
}

const char *nc_kernels_why(void)
{
    return NULL;
}
#endif

static pthread_mutex_t h2d_lock = PTHREAD_MUTEX_INITIALIZER;

typedef struct run {
    const nc_cuda *cu;
    nc_device *d;
    unsigned mem_test_mib;
    pthread_t thread;
    bool threaded;
    CUmodule mod;
    CUdeviceptr a, b; /* two slices of `bytes` each: pattern test, then copy source and target */
    size_t bytes;
    void *staging;
    size_t staging_bytes;
    bool broken;      /* a CUDA call failed other than for want of memory: the device is bad */
    char err[NC_TEXT]; /* the first failed call */
} run;

__attribute__((format(printf, 2, 3))) static void note(nc_tests *t, const char *fmt, ...)
{
    size_t len = strlen(t->why);
    if (len && len + 2 < sizeof(t->why)) {
        memcpy(t->why + len, "; ", 3);
        len += 2;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t->why + len, sizeof(t->why) - len, fmt, ap);
    va_end(ap);
}

static bool ok(run *x, CUresult rc, const char *call)
{
    if (rc == CUDA_SUCCESS)
        return true;
    if (!x->err[0]) {
        char e[NC_TEXT];
        snprintf(x->err, sizeof(x->err), "%s: %s", call, nc_cuda_error(x->cu, rc, e, sizeof(e)));
    }
    if (rc != CUDA_ERROR_OUT_OF_MEMORY && rc != CUDA_ERROR_DEVICE_UNAVAILABLE)
        x->broken = true;
    return false;
}

/* A test that could not finish failed if the device misbehaved, and was skipped if it only
 * lacked memory or was taken by another process. */
static nc_result unfinished(const run *x)
{
    return x->broken ? NC_FAIL : NC_SKIPPED;
}

static bool launch(run *x, CUfunction fn, unsigned grid, unsigned block, void **params)
{
    return ok(x, x->cu->LaunchKernel(fn, grid, 1, 1, block, 1, 1, 0, NULL, params, NULL),
              "cuLaunchKernel");
}

static bool function(run *x, CUfunction *fn, const char *name)
{
    return ok(x, x->cu->ModuleGetFunction(fn, x->mod, name), "cuModuleGetFunction");
}

/* ---- Arithmetic --------------------------------------------------------------------------- */

static nc_result compare_arith(run *x, const unsigned *hi, const float *hf)
{
    size_t wrong = 0, first = 0;
    unsigned want_i = 0;
    for (size_t t = 0; t < NC_ARITH_THREADS; t++) {
        unsigned wi;
        float wf;
        nc_arith_ref((unsigned)t, NC_ARITH_ITERS, &wi, &wf);
        /* Bits, not values: a NaN from a broken FPU must not compare "unequal but fine". */
        if (hi[t] != wi || memcmp(&hf[t], &wf, sizeof(wf)) != 0) {
            if (wrong++ == 0) {
                first = t;
                want_i = wi;
            }
        }
    }
    if (wrong)
        note(&x->d->tests, "arith: %zu of %u results wrong (first: thread %zu, 0x%08x where 0x%08x)",
             wrong, NC_ARITH_THREADS, first, hi[first], want_i);
    return wrong ? NC_FAIL : NC_PASS;
}

static nc_result test_arith(run *x)
{
    const nc_cuda *cu = x->cu;
    size_t bytes = NC_ARITH_THREADS * sizeof(unsigned);
    unsigned iters = NC_ARITH_ITERS;
    CUfunction fn;
    CUdeviceptr di = 0, df = 0;
    unsigned *hi = malloc(bytes);
    float *hf = malloc(bytes);
    nc_result res = NC_SKIPPED;
    if (!hi || !hf) {
        note(&x->d->tests, "arith: out of host memory");
    } else if (function(x, &fn, NC_KERNEL_ARITH) && ok(x, cu->MemAlloc(&di, bytes), "cuMemAlloc") &&
               ok(x, cu->MemAlloc(&df, bytes), "cuMemAlloc")) {
        void *params[] = {&di, &df, &iters};
        bool done = launch(x, fn, NC_ARITH_GRID, NC_ARITH_BLOCK, params) &&
                    ok(x, cu->CtxSynchronize(), "cuCtxSynchronize (arith)") &&
                    ok(x, cu->MemcpyDtoH(hi, di, bytes), "cuMemcpyDtoH") &&
                    ok(x, cu->MemcpyDtoH(hf, df, bytes), "cuMemcpyDtoH");
        res = done ? compare_arith(x, hi, hf) : unfinished(x);
    } else {
        res = unfinished(x);
    }
    if (di)
        cu->MemFree(di);
    if (df)
        cu->MemFree(df);
    free(hi);
    free(hf);
    return res;
}

/* ---- Memory ------------------------------------------------------------------------------- */

static bool memory_kernels(run *x, unsigned long long *errors)
{
    const nc_cuda *cu = x->cu;
    CUfunction wr, vf;
    CUdeviceptr de = 0;
    unsigned long long nwords = x->bytes / 4;
    unsigned long long blocks = (nwords + NC_MEM_BLOCK - 1) / NC_MEM_BLOCK;
    unsigned grid = x->d->sm_count > 0 ? (unsigned)x->d->sm_count * 8 : 1024;
    if (blocks < grid)
        grid = (unsigned)blocks;
    bool fine = function(x, &wr, NC_KERNEL_MEM_WRITE) && function(x, &vf, NC_KERNEL_MEM_VERIFY) &&
                ok(x, cu->MemAlloc(&de, sizeof(*errors)), "cuMemAlloc") &&
                ok(x, cu->MemsetD32(de, 0, 2), "cuMemsetD32");
    /* All of a pattern is written before any of it is read, so a write that lands at the
     * wrong address shows up where it overwrote another word. */
    for (unsigned kind = 0; fine && kind < NC_PAT_COUNT; kind++) {
        void *wp[] = {&x->a, &nwords, &kind};
        void *vp[] = {&x->a, &nwords, &kind, &de};
        fine = launch(x, wr, grid, NC_MEM_BLOCK, wp) && launch(x, vf, grid, NC_MEM_BLOCK, vp);
    }
    fine = fine && ok(x, cu->CtxSynchronize(), "cuCtxSynchronize (memory)") &&
           ok(x, cu->MemcpyDtoH(errors, de, sizeof(*errors)), "cuMemcpyDtoH");
    if (de)
        cu->MemFree(de);
    return fine;
}

/* Reads src back through the staging buffer and counts words that differ from what want()
 * says word i (at device address addr) should hold. */
typedef unsigned (*expect_fn)(CUdeviceptr addr, size_t i, unsigned arg);

static bool read_back(run *x, CUdeviceptr src, CUdeviceptr addr_base, expect_fn want,
                      unsigned arg, unsigned long long *errors)
{
    const unsigned *h = x->staging;
    for (size_t off = 0; off < x->bytes; off += x->staging_bytes) {
        size_t len = x->bytes - off < x->staging_bytes ? x->bytes - off : x->staging_bytes;
        if (!ok(x, x->cu->MemcpyDtoH(x->staging, src + off, len), "cuMemcpyDtoH"))
            return false;
        for (size_t j = 0; j < len / 4; j++) {
            size_t i = off / 4 + j;
            *errors += h[j] != want(addr_base + 4 * i, i, arg);
        }
    }
    return true;
}

static unsigned want_fill(CUdeviceptr addr, size_t i, unsigned fill)
{
    (void)addr;
    (void)i;
    return fill;
}

static unsigned want_address(CUdeviceptr addr, size_t i, unsigned unused)
{
    (void)unused;
    return nc_mem_pattern(addr, i, NC_PAT_ADDRESS);
}

/* Without kernels: fills by cuMemsetD32, then an address pattern written from the host,
 * copied on the device and read back from the copy, all checked on the host. */
static bool memory_driver_api(run *x, unsigned long long *errors)
{
    static const unsigned fills[] = {0x00000000u, 0xFFFFFFFFu, 0xAAAAAAAAu, 0x55555555u};
    const nc_cuda *cu = x->cu;
    size_t nwords = x->bytes / 4;
    for (size_t k = 0; k < sizeof(fills) / sizeof(fills[0]); k++)
        if (!ok(x, cu->MemsetD32(x->a, fills[k], nwords), "cuMemsetD32") ||
            !read_back(x, x->a, x->a, want_fill, fills[k], errors))
            return false;
    unsigned *h = x->staging;
    for (size_t off = 0; off < x->bytes; off += x->staging_bytes) {
        size_t len = x->bytes - off < x->staging_bytes ? x->bytes - off : x->staging_bytes;
        for (size_t j = 0; j < len / 4; j++)
            h[j] = want_address(x->a + off + 4 * j, off / 4 + j, 0);
        if (!ok(x, cu->MemcpyHtoD(x->a + off, h, len), "cuMemcpyHtoD"))
            return false;
    }
    return ok(x, cu->MemcpyDtoD(x->b, x->a, x->bytes), "cuMemcpyDtoD") &&
           read_back(x, x->b, x->a, want_address, 0, errors);
}

static nc_result test_memory(run *x)
{
    nc_tests *t = &x->d->tests;
    unsigned long long errors = 0;
    t->memory_method = x->mod ? "kernel" : "driver_api";
    bool done = x->mod ? memory_kernels(x, &errors) : memory_driver_api(x, &errors);
    if (!done)
        return unfinished(x);
    t->memory_errors = errors;
    t->memory_tested_mib = x->bytes / MIB;
    if (errors)
        note(t, "memory: %llu wrong words in %llu MiB", errors, t->memory_tested_mib);
    return errors ? NC_FAIL : NC_PASS;
}

/* ---- Bandwidth ---------------------------------------------------------------------------- */

static bool copy_once(run *x, bool d2d, size_t bytes)
{
    const nc_cuda *cu = x->cu;
    return d2d ? ok(x, cu->MemcpyDtoD(x->b, x->a, bytes), "cuMemcpyDtoD")
               : ok(x, cu->MemcpyHtoD(x->a, x->staging, bytes), "cuMemcpyHtoD");
}

/* GB/s (1e9 bytes) over iters copies after one warm-up copy, timed by CUDA events; a
 * device-to-device copy counts its bytes twice (read and write), as NVIDIA's bandwidthTest
 * does. -1 if not measured. */
static double timed_copies(run *x, bool d2d, size_t bytes, int iters)
{
    const nc_cuda *cu = x->cu;
    CUevent e0 = NULL, e1 = NULL;
    float ms = 0;
    bool fine = ok(x, cu->EventCreate(&e0, CU_EVENT_DEFAULT), "cuEventCreate") &&
                ok(x, cu->EventCreate(&e1, CU_EVENT_DEFAULT), "cuEventCreate") &&
                copy_once(x, d2d, bytes) && ok(x, cu->EventRecord(e0, NULL), "cuEventRecord");
    for (int i = 0; fine && i < iters; i++)
        fine = copy_once(x, d2d, bytes);
    fine = fine && ok(x, cu->EventRecord(e1, NULL), "cuEventRecord") &&
           ok(x, cu->EventSynchronize(e1), "cuEventSynchronize") &&
           ok(x, cu->EventElapsedTime(&ms, e0, e1), "cuEventElapsedTime");
    if (cu->EventDestroy) {
        if (e0)
            cu->EventDestroy(e0);
        if (e1)
            cu->EventDestroy(e1);
    }
    if (!fine || ms <= 0)
        return -1;
    return (d2d ? 2.0 : 1.0) * (double)bytes * iters / ((double)ms / 1e3) / 1e9;
}

static void bandwidth(run *x)
{
    nc_tests *t = &x->d->tests;
    t->d2d_gbps = timed_copies(x, true, x->bytes, D2D_ITERS);
    pthread_mutex_lock(&h2d_lock);
    t->h2d_gbps = timed_copies(x, false, x->staging_bytes, H2D_ITERS);
    pthread_mutex_unlock(&h2d_lock);
}

/* ---- One device --------------------------------------------------------------------------- */

static bool alloc_slices(run *x)
{
    const nc_cuda *cu = x->cu;
    size_t mib = x->mem_test_mib;
    size_t floor = mib < SLICE_FLOOR_MIB ? mib : SLICE_FLOOR_MIB;
    for (;;) {
        CUresult rc = cu->MemAlloc(&x->a, mib * MIB);
        if (rc == CUDA_SUCCESS) {
            rc = cu->MemAlloc(&x->b, mib * MIB);
            if (rc == CUDA_SUCCESS)
                break;
            cu->MemFree(x->a);
            x->a = 0;
        }
        if (rc != CUDA_ERROR_OUT_OF_MEMORY || mib <= floor)
            return ok(x, rc, "cuMemAlloc");
        mib = mib / 2 < floor ? floor : mib / 2;
    }
    x->bytes = mib * MIB;
    x->staging_bytes = x->bytes < STAGING_MAX ? x->bytes : STAGING_MAX;
    return ok(x, cu->MemAllocHost(&x->staging, x->staging_bytes), "cuMemAllocHost");
}

static void load_kernels(run *x)
{
#ifdef NC_NO_KERNELS
    (void)x;
#else
    char e[NC_TEXT];
    CUresult rc = x->cu->ModuleLoadData(&x->mod, nc_kernels_ptx);
    if (rc != CUDA_SUCCESS) {
        /* Not a hardware fault: compute_75 PTX does not run on a V100 (sm_70), for one. */
        x->mod = NULL;
        note(&x->d->tests, "kernels did not load (%s): arith skipped, memory tested through the "
             "driver API", nc_cuda_error(x->cu, rc, e, sizeof(e)));
    }
#endif
}

static void release(run *x, CUcontext ctx)
{
    const nc_cuda *cu = x->cu;
    if (x->a)
        cu->MemFree(x->a);
    if (x->b)
        cu->MemFree(x->b);
    if (x->staging)
        cu->MemFreeHost(x->staging);
    if (x->mod && cu->ModuleUnload)
        cu->ModuleUnload(x->mod);
    cu->CtxDestroy(ctx);
}

static void *device_main(void *arg)
{
    run *x = arg;
    const nc_cuda *cu = x->cu;
    nc_tests *t = &x->d->tests;
    CUdevice dev;
    CUcontext ctx = NULL;
    if (!ok(x, cu->DeviceGet(&dev, x->d->cuda_ordinal), "cuDeviceGet") ||
        !ok(x, cu->CtxCreate(&ctx, 0, dev), "cuCtxCreate")) {
        t->arith = t->memory = unfinished(x);
        note(t, "%s", x->err);
        return NULL;
    }
    load_kernels(x);
    t->arith = x->mod ? test_arith(x) : NC_SKIPPED;
    if (!x->broken && alloc_slices(x)) {
        t->memory = test_memory(x);
        if (!x->broken)
            bandwidth(x);
    } else {
        t->memory = unfinished(x);
    }
    if (x->err[0])
        note(t, "%s", x->err);
    release(x, ctx);
    return NULL;
}

void nc_run_tests(nc_report *r, const nc_cuda *cu)
{
    run *runs = calloc(r->n_devices ? r->n_devices : 1, sizeof(*runs));
    if (!runs) {
        r->internal_error = true;
        snprintf(r->internal_why, sizeof(r->internal_why), "out of memory starting the tests");
        return;
    }
    for (size_t i = 0; i < r->n_devices; i++) {
        run *x = &runs[i];
        x->cu = cu;
        x->d = &r->devices[i];
        x->mem_test_mib = r->opt.mem_test_mib;
        if (x->d->cuda_ordinal < 0)
            note(&x->d->tests, "CUDA does not see this GPU: CUDA_VISIBLE_DEVICES hides it, or "
                 "MIG is on and CUDA lists a single MIG device per process");
        else if (pthread_create(&x->thread, NULL, device_main, x) == 0)
            x->threaded = true;
        else
            device_main(x);
    }
    for (size_t i = 0; i < r->n_devices; i++)
        if (runs[i].threaded)
            pthread_join(runs[i].thread, NULL);
    free(runs);
}
