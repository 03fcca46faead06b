/*
 * The device side of skypool-nodecheck. Compiled to PTX for compute_75 at build time only
 * (nodecheck/CMakeLists.txt), then embedded as text; the driver on the node JIT-compiles it.
 * The arithmetic lives in kernels.h, shared with the host that checks it.
 */
#include "kernels.h"

extern "C" __global__ void nc_arith(unsigned *iout, float *fout, unsigned iters)
{
    unsigned t = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned h;
    float x;
    nc_arith_ref(t, iters, &h, &x);
    iout[t] = h;
    fout[t] = x;
}

extern "C" __global__ void nc_mem_write(unsigned *buf, unsigned long long nwords, unsigned kind)
{
    unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
         i < nwords; i += stride)
        buf[i] = nc_mem_pattern((unsigned long long)(buf + i), i, kind);
}

extern "C" __global__ void nc_mem_verify(const unsigned *buf, unsigned long long nwords,
                                         unsigned kind, unsigned long long *errors)
{
    unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    unsigned long long bad = 0;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
         i < nwords; i += stride)
        bad += buf[i] != nc_mem_pattern((unsigned long long)(buf + i), i, kind);
    if (bad)
        atomicAdd(errors, bad);
}
