/*
 * The kernels' contract, shared by the device code (kernels.cu), the host that checks their
 * results (tests.c) and the fake driver the tests run against (tests/fixtures/gpu/fake_cuda.c):
 * entry names, parameter lists, launch shapes, and the arithmetic itself, written once so that
 * the host recomputes exactly what the device computed.
 *
 * Exactness: the float chain uses only fmaf (one IEEE-754 rounding on the device and in C99's
 * fmaf alike), conversions of integers below 2^24 and multiplications by powers of two, which
 * are exact. No other float operation may enter, or host and device could round differently.
 */
#ifndef SKYPOOL_NODECHECK_KERNELS_H
#define SKYPOOL_NODECHECK_KERNELS_H

#ifdef __CUDACC__
#define NC_HD __host__ __device__ static inline
#else
#include <math.h>
#define NC_HD static inline
#endif

/* nc_arith(unsigned *iout, float *fout, unsigned iters): one result pair per thread. */
#define NC_KERNEL_ARITH "nc_arith"
/* nc_mem_write(unsigned *buf, unsigned long long nwords, unsigned kind) */
#define NC_KERNEL_MEM_WRITE "nc_mem_write"
/* nc_mem_verify(const unsigned *buf, unsigned long long nwords, unsigned kind,
 *               unsigned long long *errors): adds the number of wrong words to *errors. */
#define NC_KERNEL_MEM_VERIFY "nc_mem_verify"

#define NC_ARITH_BLOCK 256u
#define NC_ARITH_GRID 64u
#define NC_ARITH_THREADS (NC_ARITH_BLOCK * NC_ARITH_GRID)
#define NC_ARITH_ITERS 256u
#define NC_MEM_BLOCK 256u

/* Memory patterns, each written over the whole slice and then read back. */
enum {
    NC_PAT_ADDRESS = 0,  /* each word holds its own address: catches address-line faults */
    NC_PAT_INVERTED = 1, /* the complement of that, so every bit is seen as 0 and as 1 */
    NC_PAT_WALK1 = 2,    /* a single one bit walking across the word */
    NC_PAT_WALK0 = 3,    /* a single zero bit walking across the word */
    NC_PAT_COUNT = 4
};

NC_HD unsigned nc_mem_pattern(unsigned long long addr, unsigned long long index, unsigned kind)
{
    unsigned a = (unsigned)addr ^ (unsigned)(addr >> 32);
    unsigned walk = 1u << (unsigned)(index & 31u);
    switch (kind) {
    case NC_PAT_ADDRESS:
        return a;
    case NC_PAT_INVERTED:
        return ~a;
    case NC_PAT_WALK1:
        return walk;
    default:
        return ~walk;
    }
}

/* What thread t of nc_arith computes: an integer hash chain and a float FMA chain. */
NC_HD void nc_arith_ref(unsigned t, unsigned iters, unsigned *iout, float *fout)
{
    unsigned h = t * 0x9E3779B9u + 0x7F4A7C15u;
    float x = (float)(t & 1023u) * 0.0009765625f; /* t/1024, exact */
    for (unsigned i = 0; i < iters; i++) {
        h ^= h >> 16;
        h *= 0x85EBCA6Bu;
        h ^= h >> 13;
        h *= 0xC2B2AE35u;
        h ^= h >> 16;
        h += i;
        /* x stays within [0, 1.1]: no overflow, no subnormals. */
        x = fmaf(x, 0.99951171875f, (float)(h & 0xFFu) * 0.00000095367431640625f);
    }
    *iout = h;
    *fout = x;
}

#endif
