/* Loading the CUDA driver API and NVML at run time: see driver_api.h. */
#include "driver_api.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

/* A function pointer from dlsym without the object-to-function pointer cast ISO C lacks. */
static bool resolve(void *dl, void *fn, const char *name)
{
    void *sym = dlsym(dl, name);
    memcpy(fn, &sym, sizeof(sym));
    return sym != NULL;
}

/* The first of two names that resolves (a versioned name, then the name older drivers had). */
static bool resolve2(void *dl, void *fn, const char *name, const char *fallback)
{
    return resolve(dl, fn, name) || resolve(dl, fn, fallback);
}

typedef struct sym {
    size_t offset; /* of the function pointer in the table */
    const char *name;
    const char *fallback; /* NULL: none */
} sym;

#define CU(field, name) {offsetof(nc_cuda, field), name, NULL}
#define CU2(field, name, old) {offsetof(nc_cuda, field), name, old}

static const sym cuda_required[] = {
    CU(Init, "cuInit"),
    CU(DriverGetVersion, "cuDriverGetVersion"),
    CU(DeviceGetCount, "cuDeviceGetCount"),
    CU(DeviceGet, "cuDeviceGet"),
    CU(DeviceGetName, "cuDeviceGetName"),
    CU(DeviceTotalMem, "cuDeviceTotalMem_v2"),
    CU(DeviceGetAttribute, "cuDeviceGetAttribute"),
    /* _v2 (R470 on) returns a MIG device's own UUID; the older call only the parent GPU's. */
    CU2(DeviceGetUuid, "cuDeviceGetUuid_v2", "cuDeviceGetUuid"),
    CU(CtxCreate, "cuCtxCreate_v2"),
    CU(CtxDestroy, "cuCtxDestroy_v2"),
    CU(CtxSynchronize, "cuCtxSynchronize"),
    CU(MemAlloc, "cuMemAlloc_v2"),
    CU(MemFree, "cuMemFree_v2"),
    CU(MemAllocHost, "cuMemAllocHost_v2"),
    CU(MemFreeHost, "cuMemFreeHost"),
    CU(MemcpyHtoD, "cuMemcpyHtoD_v2"),
    CU(MemcpyDtoH, "cuMemcpyDtoH_v2"),
    CU(MemcpyDtoD, "cuMemcpyDtoD_v2"),
    CU(MemsetD32, "cuMemsetD32_v2"),
    CU(EventCreate, "cuEventCreate"),
    CU(EventRecord, "cuEventRecord"),
    CU(EventSynchronize, "cuEventSynchronize"),
    CU(EventElapsedTime, "cuEventElapsedTime"),
    CU(ModuleLoadData, "cuModuleLoadData"),
    CU(ModuleGetFunction, "cuModuleGetFunction"),
    CU(LaunchKernel, "cuLaunchKernel"),
    CU(GetErrorString, "cuGetErrorString"),
};

static const sym cuda_optional[] = {
    CU2(EventDestroy, "cuEventDestroy_v2", "cuEventDestroy"),
    CU(ModuleUnload, "cuModuleUnload"),
};

#define NV(field, name) {offsetof(nc_nvml, field), name, NULL}
#define NV2(field, name, old) {offsetof(nc_nvml, field), name, old}

static const sym nvml_required[] = {
    NV(Init, "nvmlInit_v2"),
    NV(Shutdown, "nvmlShutdown"),
    NV(ErrorString, "nvmlErrorString"),
    NV(SystemGetDriverVersion, "nvmlSystemGetDriverVersion"),
    NV(DeviceGetCount, "nvmlDeviceGetCount_v2"),
    NV(DeviceGetHandleByIndex, "nvmlDeviceGetHandleByIndex_v2"),
    NV(DeviceGetName, "nvmlDeviceGetName"),
    NV(DeviceGetUUID, "nvmlDeviceGetUUID"),
    NV(DeviceGetMemoryInfo, "nvmlDeviceGetMemoryInfo"),
    NV(DeviceGetPciInfo, "nvmlDeviceGetPciInfo_v3"),
};

static const sym nvml_optional[] = {
    NV(DeviceGetMigMode, "nvmlDeviceGetMigMode"),
    NV(DeviceGetMaxMigDeviceCount, "nvmlDeviceGetMaxMigDeviceCount"),
    NV(DeviceGetMigDeviceHandleByIndex, "nvmlDeviceGetMigDeviceHandleByIndex"),
    NV(DeviceGetTotalEccErrors, "nvmlDeviceGetTotalEccErrors"),
    NV2(DeviceGetClocksEventReasons, "nvmlDeviceGetCurrentClocksEventReasons",
        "nvmlDeviceGetCurrentClocksThrottleReasons"),
    NV(DeviceGetClockInfo, "nvmlDeviceGetClockInfo"),
    NV(DeviceGetMaxClockInfo, "nvmlDeviceGetMaxClockInfo"),
    NV(DeviceGetBoardPartNumber, "nvmlDeviceGetBoardPartNumber"),
    NV(DeviceGetCudaComputeCapability, "nvmlDeviceGetCudaComputeCapability"),
};

static bool resolve_all(void *dl, void *table, const sym *syms, size_t n, bool required,
                        const char *lib, char *err, size_t err_size)
{
    for (size_t i = 0; i < n; i++) {
        void *fn = (char *)table + syms[i].offset;
        bool ok = syms[i].fallback ? resolve2(dl, fn, syms[i].name, syms[i].fallback)
                                   : resolve(dl, fn, syms[i].name);
        if (!ok && required) {
            snprintf(err, err_size, "%s has no %s: the driver is too old or not NVIDIA's", lib,
                     syms[i].name);
            return false;
        }
    }
    return true;
}

#define N(a) (sizeof(a) / sizeof(a[0]))

/* The libraries stay loaded until exit: unloading a GPU driver library mid-process is a known
 * source of crashes in its atexit handlers, and the process ends soon anyway. */
static void *open_lib(const char *lib, char *err, size_t err_size)
{
    void *dl = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!dl) {
        const char *why = dlerror();
        snprintf(err, err_size, "cannot load %s: %s", lib, why ? why : "not found");
    }
    return dl;
}

bool nc_cuda_load(nc_cuda *cu, char *err, size_t err_size)
{
    memset(cu, 0, sizeof(*cu));
    void *dl = open_lib("libcuda.so.1", err, err_size);
    return dl &&
           resolve_all(dl, cu, cuda_required, N(cuda_required), true, "libcuda.so.1", err,
                       err_size) &&
           resolve_all(dl, cu, cuda_optional, N(cuda_optional), false, NULL, err, err_size);
}

bool nc_nvml_load(nc_nvml *nv, char *err, size_t err_size)
{
    memset(nv, 0, sizeof(*nv));
    void *dl = open_lib("libnvidia-ml.so.1", err, err_size);
    return dl &&
           resolve_all(dl, nv, nvml_required, N(nvml_required), true, "libnvidia-ml.so.1", err,
                       err_size) &&
           resolve_all(dl, nv, nvml_optional, N(nvml_optional), false, NULL, err, err_size);
}

const char *nc_cuda_error(const nc_cuda *cu, CUresult rc, char *buf, size_t size)
{
    const char *text = NULL;
    if (!cu->GetErrorString || cu->GetErrorString(rc, &text) != CUDA_SUCCESS || !text)
        text = "unknown error";
    snprintf(buf, size, "%s (CUDA error %d)", text, rc);
    return buf;
}

const char *nc_nvml_error(const nc_nvml *nv, nvmlReturn_t rc, char *buf, size_t size)
{
    const char *text = nv->ErrorString ? nv->ErrorString(rc) : NULL;
    snprintf(buf, size, "%s (NVML error %d)", text ? text : "unknown error", rc);
    return buf;
}
