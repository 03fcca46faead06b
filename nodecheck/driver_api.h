/*
 * The parts of the CUDA driver API (libcuda.so.1) and NVML (libnvidia-ml.so.1) that nodecheck
 * calls, declared here rather than taken from cuda.h and nvml.h so that the program builds on a
 * machine without the CUDA toolkit. Values and layouts are NVIDIA's: cuda.h of CUDA 13.0 for the
 * driver API, the NVML API reference (nvml.h, R550) for NVML. They are ABI, which NVIDIA does not
 * renumber.
 *
 * Both libraries are opened with dlopen at run time, and every function is looked up by the
 * versioned name the ABI exports (cuMemAlloc_v2, not the cuMemAlloc macro of cuda.h), so one
 * binary runs with any driver from R450 on.
 */
#ifndef SKYPOOL_NODECHECK_DRIVER_API_H
#define SKYPOOL_NODECHECK_DRIVER_API_H

#include <stdbool.h>
#include <stddef.h>

/* ---- CUDA driver API -------------------------------------------------------------------- */

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr; /* 64-bit on every platform nodecheck runs on */
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUevent_st *CUevent;
typedef struct CUstream_st *CUstream;
typedef struct CUuuid_st {
    char bytes[16];
} CUuuid;

#define CUDA_SUCCESS 0
#define CUDA_ERROR_OUT_OF_MEMORY 2
#define CUDA_ERROR_NOT_INITIALIZED 3
#define CUDA_ERROR_NO_DEVICE 100
#define CUDA_ERROR_NOT_FOUND 500

#define CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT 16
#define CU_DEVICE_ATTRIBUTE_PCI_BUS_ID 33
#define CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID 34
#define CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID 50
#define CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR 75
#define CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR 76

#define CU_EVENT_DEFAULT 0

typedef struct nc_cuda {
    CUresult (*Init)(unsigned flags);
    CUresult (*DriverGetVersion)(int *version);
    CUresult (*DeviceGetCount)(int *count);
    CUresult (*DeviceGet)(CUdevice *dev, int ordinal);
    CUresult (*DeviceGetName)(char *name, int len, CUdevice dev);
    CUresult (*DeviceTotalMem)(size_t *bytes, CUdevice dev);
    CUresult (*DeviceGetAttribute)(int *value, int attrib, CUdevice dev);
    CUresult (*DeviceGetUuid)(CUuuid *uuid, CUdevice dev);
    CUresult (*CtxCreate)(CUcontext *ctx, unsigned flags, CUdevice dev);
    CUresult (*CtxDestroy)(CUcontext ctx);
    CUresult (*CtxSynchronize)(void);
    CUresult (*MemAlloc)(CUdeviceptr *dptr, size_t bytes);
    CUresult (*MemFree)(CUdeviceptr dptr);
    CUresult (*MemAllocHost)(void **pp, size_t bytes);
    CUresult (*MemFreeHost)(void *p);
    CUresult (*MemcpyHtoD)(CUdeviceptr dst, const void *src, size_t bytes);
    CUresult (*MemcpyDtoH)(void *dst, CUdeviceptr src, size_t bytes);
    CUresult (*MemcpyDtoD)(CUdeviceptr dst, CUdeviceptr src, size_t bytes);
    CUresult (*MemsetD32)(CUdeviceptr dst, unsigned value, size_t n);
    CUresult (*EventCreate)(CUevent *ev, unsigned flags);
    CUresult (*EventRecord)(CUevent ev, CUstream stream);
    CUresult (*EventSynchronize)(CUevent ev);
    CUresult (*EventElapsedTime)(float *ms, CUevent start, CUevent end);
    CUresult (*ModuleLoadData)(CUmodule *mod, const void *image);
    CUresult (*ModuleGetFunction)(CUfunction *fn, CUmodule mod, const char *name);
    CUresult (*LaunchKernel)(CUfunction fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                             unsigned by, unsigned bz, unsigned shared_bytes, CUstream stream,
                             void **params, void **extra);
    CUresult (*GetErrorString)(CUresult rc, const char **text);
    /* Optional: absent from no driver nodecheck supports, but not needed to run. */
    CUresult (*EventDestroy)(CUevent ev);
    CUresult (*ModuleUnload)(CUmodule mod);
} nc_cuda;

/* Opens libcuda.so.1 and resolves every function; false with a message in err otherwise. */
bool nc_cuda_load(nc_cuda *cu, char *err, size_t err_size);
/* "CUDA_ERROR_NO_DEVICE (100): no CUDA-capable device is detected" style text. */
const char *nc_cuda_error(const nc_cuda *cu, CUresult rc, char *buf, size_t size);

/* ---- NVML ------------------------------------------------------------------------------- */

typedef int nvmlReturn_t;
typedef struct nvmlDevice_st *nvmlDevice_t;

#define NVML_SUCCESS 0
#define NVML_ERROR_NOT_SUPPORTED 3
#define NVML_ERROR_NOT_FOUND 6
#define NVML_ERROR_FUNCTION_NOT_FOUND 13

#define NVML_DEVICE_MIG_DISABLE 0
#define NVML_DEVICE_MIG_ENABLE 1

#define NVML_CLOCK_SM 1
#define NVML_CLOCK_MEM 2

#define NVML_MEMORY_ERROR_TYPE_CORRECTED 0
#define NVML_MEMORY_ERROR_TYPE_UNCORRECTED 1
#define NVML_VOLATILE_ECC 0
#define NVML_AGGREGATE_ECC 1

/* Buffer sizes: nvml.h's _V2 sizes (96) and its part-number and driver-version sizes (80). */
#define NC_NVML_STRING 96

typedef struct nvmlMemory_st {
    unsigned long long total;
    unsigned long long free;
    unsigned long long used;
} nvmlMemory_t;

typedef struct nvmlPciInfo_st {
    char busIdLegacy[16];
    unsigned domain;
    unsigned bus;
    unsigned device;
    unsigned pciDeviceId;
    unsigned pciSubSystemId;
    char busId[32];
} nvmlPciInfo_t;

typedef struct nc_nvml {
    nvmlReturn_t (*Init)(void);
    nvmlReturn_t (*Shutdown)(void);
    const char *(*ErrorString)(nvmlReturn_t rc);
    nvmlReturn_t (*SystemGetDriverVersion)(char *version, unsigned len);
    nvmlReturn_t (*DeviceGetCount)(unsigned *count);
    nvmlReturn_t (*DeviceGetHandleByIndex)(unsigned index, nvmlDevice_t *dev);
    nvmlReturn_t (*DeviceGetName)(nvmlDevice_t dev, char *name, unsigned len);
    nvmlReturn_t (*DeviceGetUUID)(nvmlDevice_t dev, char *uuid, unsigned len);
    nvmlReturn_t (*DeviceGetMemoryInfo)(nvmlDevice_t dev, nvmlMemory_t *mem);
    nvmlReturn_t (*DeviceGetPciInfo)(nvmlDevice_t dev, nvmlPciInfo_t *pci);
    /* Optional from here on: a missing one leaves its field unreported. */
    nvmlReturn_t (*DeviceGetMigMode)(nvmlDevice_t dev, unsigned *current, unsigned *pending);
    nvmlReturn_t (*DeviceGetMaxMigDeviceCount)(nvmlDevice_t dev, unsigned *count);
    nvmlReturn_t (*DeviceGetMigDeviceHandleByIndex)(nvmlDevice_t dev, unsigned index,
                                                    nvmlDevice_t *mig);
    nvmlReturn_t (*DeviceGetTotalEccErrors)(nvmlDevice_t dev, int error_type, int counter_type,
                                            unsigned long long *count);
    /* nvmlDeviceGetCurrentClocksEventReasons (R535 on), else the older ...ThrottleReasons. */
    nvmlReturn_t (*DeviceGetClocksEventReasons)(nvmlDevice_t dev, unsigned long long *reasons);
    nvmlReturn_t (*DeviceGetClockInfo)(nvmlDevice_t dev, int type, unsigned *mhz);
    nvmlReturn_t (*DeviceGetMaxClockInfo)(nvmlDevice_t dev, int type, unsigned *mhz);
    nvmlReturn_t (*DeviceGetBoardPartNumber)(nvmlDevice_t dev, char *part, unsigned len);
    nvmlReturn_t (*DeviceGetCudaComputeCapability)(nvmlDevice_t dev, int *major, int *minor);
} nc_nvml;

bool nc_nvml_load(nc_nvml *nv, char *err, size_t err_size);
const char *nc_nvml_error(const nc_nvml *nv, nvmlReturn_t rc, char *buf, size_t size);

#endif
