/*
 * What the node has: the driver, and each GPU's identity and state.
 *
 * NVML is the source of the device list when it loads: it sees every GPU, whatever
 * CUDA_VISIBLE_DEVICES says, and it alone knows MIG instances, ECC counters, clocks and board
 * part numbers. The CUDA driver API then supplies what only CUDA knows (SM count, and whether
 * CUDA can use the device at all), matched to NVML's devices by PCI address. Without NVML the
 * list comes from CUDA alone.
 */
#include "names.h"
#include "nodecheck.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#define MIB (1024ULL * 1024ULL)

static void copy(char *dst, size_t size, const char *src)
{
    snprintf(dst, size, "%s", src ? src : "");
}

/* The driver version from the kernel module, for when NVML is missing:
 * "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 ..." */
static void driver_version_from_proc(char *out, size_t size)
{
    FILE *f = fopen("/proc/driver/nvidia/version", "r");
    char line[512];
    if (!f)
        return;
    if (fgets(line, sizeof(line), f)) {
        const char *p = strstr(line, "Module");
        for (p = p ? p : line; *p; p++) {
            if (!isdigit((unsigned char)*p) || (p > line && !isspace((unsigned char)p[-1])))
                continue;
            size_t n = strspn(p, "0123456789.");
            if (n > 2 && memchr(p, '.', n)) {
                snprintf(out, size, "%.*s", (int)n, p);
                break;
            }
        }
    }
    fclose(f);
}

static void nvml_mig(const nc_nvml *nv, nvmlDevice_t h, nc_device *d)
{
    unsigned current = 0, pending = 0, max = 0;
    d->mig_mode = NC_MIG_UNSUPPORTED;
    if (!nv->DeviceGetMigMode || nv->DeviceGetMigMode(h, &current, &pending) != NVML_SUCCESS)
        return;
    d->mig_mode = current == NVML_DEVICE_MIG_ENABLE ? NC_MIG_ENABLED : NC_MIG_DISABLED;
    if (d->mig_mode != NC_MIG_ENABLED || !nv->DeviceGetMaxMigDeviceCount ||
        !nv->DeviceGetMigDeviceHandleByIndex ||
        nv->DeviceGetMaxMigDeviceCount(h, &max) != NVML_SUCCESS)
        return;
    for (unsigned i = 0; i < max && d->n_mig < NC_MAX_MIG; i++) {
        nvmlDevice_t mh;
        char name[NC_NVML_STRING] = "";
        nvmlMemory_t mem = {0, 0, 0};
        /* NOT_FOUND: no MIG device at this index; the indices need not be dense. */
        if (nv->DeviceGetMigDeviceHandleByIndex(h, i, &mh) != NVML_SUCCESS)
            continue;
        nc_mig_instance *m = &d->mig[d->n_mig++];
        nv->DeviceGetName(mh, name, sizeof(name));
        const char *profile = nc_mig_profile_of(name);
        copy(m->profile, sizeof(m->profile), profile ? profile : "unknown");
        if (nv->DeviceGetUUID(mh, m->uuid, sizeof(m->uuid)) != NVML_SUCCESS)
            m->uuid[0] = '\0';
        if (nv->DeviceGetMemoryInfo(mh, &mem) == NVML_SUCCESS)
            m->memory_mib = mem.total / MIB;
    }
}

static void nvml_health(const nc_nvml *nv, nvmlDevice_t h, nc_device *d)
{
    static const int ecc_kind[4][2] = {
        {NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_VOLATILE_ECC},
        {NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC},
        {NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_AGGREGATE_ECC},
        {NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_AGGREGATE_ECC},
    };
    /* NOT_SUPPORTED where ECC is off or absent (GeForce, some L4 setups): reported as null. */
    d->has_ecc = nv->DeviceGetTotalEccErrors != NULL;
    for (int i = 0; i < 4 && d->has_ecc; i++)
        d->has_ecc = nv->DeviceGetTotalEccErrors(h, ecc_kind[i][0], ecc_kind[i][1],
                                                 &d->ecc[i]) == NVML_SUCCESS;
    d->has_throttle = nv->DeviceGetClocksEventReasons &&
                      nv->DeviceGetClocksEventReasons(h, &d->throttle) == NVML_SUCCESS;
    for (int i = 0; i < 4; i++) {
        unsigned mhz = 0;
        int type = i % 2 == 0 ? NVML_CLOCK_SM : NVML_CLOCK_MEM;
        nvmlReturn_t (*get)(nvmlDevice_t, int, unsigned *) =
            i < 2 ? nv->DeviceGetClockInfo : nv->DeviceGetMaxClockInfo;
        d->clocks[i] = get && get(h, type, &mhz) == NVML_SUCCESS ? (int)mhz : -1;
    }
}

static void nvml_device(const nc_nvml *nv, nvmlDevice_t h, nc_device *d)
{
    nvmlMemory_t mem = {0, 0, 0};
    nvmlPciInfo_t pci;
    memset(&pci, 0, sizeof(pci));
    if (nv->DeviceGetName(h, d->name, sizeof(d->name)) != NVML_SUCCESS)
        d->name[0] = '\0';
    if (nv->DeviceGetUUID(h, d->uuid, sizeof(d->uuid)) != NVML_SUCCESS)
        d->uuid[0] = '\0';
    if (nv->DeviceGetMemoryInfo(h, &mem) == NVML_SUCCESS)
        d->memory_mib = mem.total / MIB;
    if (nv->DeviceGetPciInfo(h, &pci) == NVML_SUCCESS) {
        copy(d->pci_bus_id, sizeof(d->pci_bus_id), pci.busId);
        d->pci_domain = pci.domain;
        d->pci_bus = pci.bus;
        d->pci_device = pci.device;
    }
    if (!nv->DeviceGetBoardPartNumber ||
        nv->DeviceGetBoardPartNumber(h, d->board_part, sizeof(d->board_part)) != NVML_SUCCESS)
        d->board_part[0] = '\0';
    if (nv->DeviceGetCudaComputeCapability &&
        nv->DeviceGetCudaComputeCapability(h, &d->cc_major, &d->cc_minor) != NVML_SUCCESS)
        d->cc_major = d->cc_minor = -1;
    d->model = nc_model_key_board(d->name, d->memory_mib, d->board_part, &d->form_factor);
    nvml_mig(nv, h, d);
    nvml_health(nv, h, d);
}

static void device_defaults(nc_device *d, unsigned index)
{
    memset(d, 0, sizeof(*d));
    d->index = index;
    d->sm_count = d->cc_major = d->cc_minor = -1;
    d->cuda_ordinal = -1;
    for (int i = 0; i < 4; i++)
        d->clocks[i] = -1;
    d->tests.d2d_gbps = d->tests.h2d_gbps = -1;
}

static void probe_nvml(nc_report *r)
{
    nc_nvml nv;
    char err[NC_TEXT];
    unsigned count = 0;
    nvmlReturn_t rc;
    if (!nc_nvml_load(&nv, r->nvml_error, sizeof(r->nvml_error)))
        return;
    if ((rc = nv.Init()) != NVML_SUCCESS) {
        snprintf(r->nvml_error, sizeof(r->nvml_error), "nvmlInit: %s",
                 nc_nvml_error(&nv, rc, err, sizeof(err)));
        return;
    }
    r->nvml_loaded = true;
    if (nv.SystemGetDriverVersion(r->driver_version, sizeof(r->driver_version)) != NVML_SUCCESS)
        r->driver_version[0] = '\0';
    if ((rc = nv.DeviceGetCount(&count)) != NVML_SUCCESS)
        snprintf(r->nvml_error, sizeof(r->nvml_error), "nvmlDeviceGetCount: %s",
                 nc_nvml_error(&nv, rc, err, sizeof(err)));
    for (unsigned i = 0; i < count && r->n_devices < NC_MAX_DEVICES; i++) {
        nvmlDevice_t h;
        nc_device *d = &r->devices[r->n_devices];
        device_defaults(d, i);
        if ((rc = nv.DeviceGetHandleByIndex(i, &h)) != NVML_SUCCESS) {
            /* A GPU NVML cannot open is still a GPU that was paid for: list it, nameless. */
            snprintf(d->tests.why, sizeof(d->tests.why), "NVML cannot open it: %s",
                     nc_nvml_error(&nv, rc, err, sizeof(err)));
            r->n_devices++;
            continue;
        }
        nvml_device(&nv, h, d);
        r->n_devices++;
    }
    nv.Shutdown();
}

static void format_uuid(const CUuuid *u, const char *prefix, char *out, size_t size)
{
    const unsigned char *b = (const unsigned char *)u->bytes;
    snprintf(out, size,
             "%s%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", prefix,
             b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12],
             b[13], b[14], b[15]);
}

static int attribute(const nc_cuda *cu, CUdevice dev, int attrib)
{
    int v = -1;
    return cu->DeviceGetAttribute(&v, attrib, dev) == CUDA_SUCCESS ? v : -1;
}

/* The NVML device at the same PCI address (a MIG device reports its GPU's) or, failing that,
 * with the same UUID; else a new entry for a device only CUDA lists. */
static nc_device *device_for(nc_report *r, const int pci[3], const char *uuid, bool *is_new)
{
    *is_new = false;
    for (size_t i = 0; i < r->n_devices; i++) {
        nc_device *d = &r->devices[i];
        if (d->cuda_ordinal < 0 && d->pci_bus_id[0] && (int)d->pci_domain == pci[0] &&
            (int)d->pci_bus == pci[1] && (int)d->pci_device == pci[2])
            return d;
    }
    for (size_t i = 0; uuid[0] && i < r->n_devices; i++)
        if (r->devices[i].cuda_ordinal < 0 && strcmp(r->devices[i].uuid, uuid) == 0)
            return &r->devices[i];
    if (r->n_devices >= NC_MAX_DEVICES)
        return NULL;
    *is_new = true;
    nc_device *d = &r->devices[r->n_devices];
    device_defaults(d, (unsigned)r->n_devices);
    r->n_devices++;
    return d;
}

/* CUDA names a MIG device by its MIG UUID, but cannot say it is one: NVML's list can. */
static void tested_uuid(nc_device *d, const CUuuid *u)
{
    char plain[NC_NVML_STRING];
    format_uuid(u, "", plain, sizeof(plain));
    for (size_t i = 0; i < d->n_mig; i++)
        if (strncmp(d->mig[i].uuid, "MIG-", 4) == 0 && strcmp(d->mig[i].uuid + 4, plain) == 0) {
            copy(d->tests.tested_uuid, sizeof(d->tests.tested_uuid), d->mig[i].uuid);
            return;
        }
    format_uuid(u, "GPU-", d->tests.tested_uuid, sizeof(d->tests.tested_uuid));
}

static void cuda_device(nc_report *r, const nc_cuda *cu, int ordinal)
{
    CUdevice dev;
    CUuuid uuid;
    bool is_new;
    char gpu_uuid[NC_NVML_STRING] = "";
    if (cu->DeviceGet(&dev, ordinal) != CUDA_SUCCESS)
        return;
    int pci[3] = {attribute(cu, dev, CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID),
                  attribute(cu, dev, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID),
                  attribute(cu, dev, CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID)};
    bool have_uuid = cu->DeviceGetUuid(&uuid, dev) == CUDA_SUCCESS;
    if (have_uuid)
        format_uuid(&uuid, "GPU-", gpu_uuid, sizeof(gpu_uuid));
    nc_device *d = device_for(r, pci, gpu_uuid, &is_new);
    if (!d)
        return;
    d->cuda_ordinal = ordinal;
    d->sm_count = attribute(cu, dev, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
    d->cc_major = attribute(cu, dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
    d->cc_minor = attribute(cu, dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
    if (have_uuid)
        tested_uuid(d, &uuid);
    if (!is_new)
        return;
    size_t bytes = 0;
    if (cu->DeviceGetName(d->name, (int)sizeof(d->name), dev) != CUDA_SUCCESS)
        d->name[0] = '\0';
    if (cu->DeviceTotalMem(&bytes, dev) == CUDA_SUCCESS)
        d->memory_mib = bytes / MIB;
    copy(d->uuid, sizeof(d->uuid), gpu_uuid);
    if (pci[0] >= 0 && pci[1] >= 0 && pci[2] >= 0) {
        snprintf(d->pci_bus_id, sizeof(d->pci_bus_id), "%08X:%02X:%02X.0", (unsigned)pci[0],
                 (unsigned)pci[1], (unsigned)pci[2]);
        d->pci_domain = (unsigned)pci[0];
        d->pci_bus = (unsigned)pci[1];
        d->pci_device = (unsigned)pci[2];
    }
    d->model = nc_model_key(d->name, d->memory_mib, &d->form_factor);
}

void nc_probe_gpus(nc_report *r, nc_cuda *cu)
{
    char err[NC_TEXT];
    int count = 0;
    probe_nvml(r);
    if (!nc_cuda_load(cu, r->driver_error, sizeof(r->driver_error))) {
        r->no_driver = true;
        return;
    }
    CUresult rc = cu->Init(0);
    if (rc != CUDA_SUCCESS && rc != CUDA_ERROR_NO_DEVICE) {
        snprintf(r->driver_error, sizeof(r->driver_error), "cuInit: %s",
                 nc_cuda_error(cu, rc, err, sizeof(err)));
        r->no_driver = true;
        return;
    }
    r->driver_loaded = true;
    if (cu->DriverGetVersion(&r->cuda_version) != CUDA_SUCCESS)
        r->cuda_version = 0;
    if (!r->driver_version[0])
        driver_version_from_proc(r->driver_version, sizeof(r->driver_version));
    if (rc == CUDA_SUCCESS && cu->DeviceGetCount(&count) != CUDA_SUCCESS)
        count = 0;
    for (int i = 0; i < count; i++)
        cuda_device(r, cu, i);
    /* NVML can list GPUs that CUDA cannot use (CUDA_VISIBLE_DEVICES, MIG on without an
     * instance): those are devices, and the expectations are checked against them. */
    r->no_device = r->n_devices == 0;
}
