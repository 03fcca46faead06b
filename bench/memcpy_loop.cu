// The peer of skypool-nodecheck's device-to-device bandwidth figure: a plain cudaMemcpy loop
// with the CUDA runtime, the same size, warm-up and number of copies, timed the same way (CUDA
// events on the default stream) and counted the same way (2 x bytes per second, read + write,
// as NVIDIA's bandwidthTest counts; 1 GB = 1e9 bytes). Prints the GB/s figure alone.
//
//   memcpy_loop [MIB=256] [COPIES=10] [DEVICE=0]
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

#define CHECK(call)                                                                             \
    do {                                                                                        \
        cudaError_t rc_ = (call);                                                               \
        if (rc_ != cudaSuccess) {                                                               \
            std::fprintf(stderr, "memcpy_loop: %s: %s\n", #call, cudaGetErrorString(rc_));      \
            return 1;                                                                           \
        }                                                                                       \
    } while (0)

int main(int argc, char **argv)
{
    size_t mib = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 256;
    int copies = argc > 2 ? std::atoi(argv[2]) : 10;
    int device = argc > 3 ? std::atoi(argv[3]) : 0;
    size_t bytes = mib << 20;
    void *src = nullptr, *dst = nullptr;
    cudaEvent_t start, stop;
    float ms = 0;

    CHECK(cudaSetDevice(device));
    CHECK(cudaMalloc(&src, bytes));
    CHECK(cudaMalloc(&dst, bytes));
    CHECK(cudaMemset(src, 0x5a, bytes));
    CHECK(cudaEventCreate(&start));
    CHECK(cudaEventCreate(&stop));
    CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToDevice)); // warm-up
    CHECK(cudaEventRecord(start));
    for (int i = 0; i < copies; i++)
        CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToDevice));
    CHECK(cudaEventRecord(stop));
    CHECK(cudaEventSynchronize(stop));
    CHECK(cudaEventElapsedTime(&ms, start, stop));
    std::printf("%.1f\n", 2.0 * (double)bytes * copies / (ms / 1e3) / 1e9);
    CHECK(cudaFree(src));
    CHECK(cudaFree(dst));
    return 0;
}
