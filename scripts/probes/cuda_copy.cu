// Device-to-device copy paths of libcuda on this GPU (compiled on the device machine with nvcc).
// For each path: bandwidth (best of N, CUDA events) and whether the copy still runs while a
// kernel occupies every SM (a copy-engine copy does; an SM copy waits for the kernel).
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
  printf("%s:%d %s -> %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); return 1; } } while (0)

__global__ void spin(long long cycles) {
  long long t0 = clock64();
  while (clock64() - t0 < cycles) { }
}

enum Path { SM_MEMCPY, BATCH_OVERLAP, MEMCPY_2D, NPATHS };
static const char *names[] = {"cudaMemcpyAsync D2D", "cudaMemcpyBatchAsync PreferOverlapWithCompute",
                              "cudaMemcpy2DAsync D2D (pitch != width)"};

static cudaError_t issue(Path p, char *dst, char *src, size_t n, cudaStream_t s) {
  switch (p) {
  case SM_MEMCPY: return cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToDevice, s);
  case BATCH_OVERLAP: {
    const void *d[1] = {dst}; const void *sr[1] = {src}; size_t sz[1] = {n};
    cudaMemcpyAttributes a = {};
    a.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
    a.flags = cudaMemcpyFlagPreferOverlapWithCompute;
    size_t idx[1] = {0};
#if CUDART_VERSION >= 13000
    return cudaMemcpyBatchAsync((const void **)d, (const void **)sr, sz, 1, &a, idx, 1, s);
#else
    size_t fail = 0;
    return cudaMemcpyBatchAsync((void **)d, (void **)sr, sz, 1, &a, idx, 1, &fail, s);
#endif
  }
  case MEMCPY_2D: {
    size_t w = 1 << 20, pitch = w + 512, h = n / pitch;
    return cudaMemcpy2DAsync(dst, pitch, src, pitch, w, h, cudaMemcpyDeviceToDevice, s);
  }
  default: return cudaErrorInvalidValue;
  }
}

int main(int argc, char **argv) {
  int reps = argc > 1 ? atoi(argv[1]) : 10;
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  printf("%s, %d SMs, CUDA runtime %d\n", prop.name, prop.multiProcessorCount, CUDART_VERSION);
  size_t big = 1ull << 30;
  char *a, *b;
  CK(cudaMalloc(&a, big + (2 << 20)));
  CK(cudaMalloc(&b, big + (2 << 20)));
  CK(cudaMemset(a, 1, big));
  CK(cudaMemset(b, 2, big));
  cudaStream_t s, k;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CK(cudaStreamCreateWithFlags(&k, cudaStreamNonBlocking));
  cudaEvent_t e0, e1, k0, k1;
  CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1)); CK(cudaEventCreate(&k0)); CK(cudaEventCreate(&k1));
  size_t sizes[] = {64ull << 20, 1ull << 30};
  for (int p = 0; p < NPATHS; p++) {
    for (size_t n : sizes) {
      // Warm-up.
      for (int i = 0; i < 3; i++) CK(issue((Path)p, b, a, n, s));
      CK(cudaStreamSynchronize(s));
      float best = 1e30f;
      for (int i = 0; i < reps; i++) {
        CK(cudaEventRecord(e0, s));
        CK(issue((Path)p, b, a, n, s));
        CK(cudaEventRecord(e1, s));
        CK(cudaEventSynchronize(e1));
        float ms; CK(cudaEventElapsedTime(&ms, e0, e1));
        if (ms < best) best = ms;
      }
      size_t moved = p == MEMCPY_2D ? (n / ((1 << 20) + 512)) * (size_t)(1 << 20) : n;
      printf("%-48s %5zu MiB  %8.1f GB/s  (%.3f ms)\n", names[p], n >> 20, moved / (best * 1e6), best);
    }
    // Concurrency: a kernel filling every SM for ~40 ms on stream k, then the copy on stream s.
    int clk; CK(cudaDeviceGetAttribute(&clk, cudaDevAttrClockRate, 0));
    long long cycles = (long long)clk * 40;  // clk in kHz -> 40 ms
    CK(cudaEventRecord(k0, k));
    spin<<<prop.multiProcessorCount * 2, 1024, 0, k>>>(cycles);
    CK(cudaGetLastError());
    CK(cudaEventRecord(k1, k));
    CK(cudaEventRecord(e0, s));
    CK(issue((Path)p, b, a, 64ull << 20, s));
    CK(cudaEventRecord(e1, s));
    CK(cudaDeviceSynchronize());
    float kms, cms, gap;
    CK(cudaEventElapsedTime(&kms, k0, k1));
    CK(cudaEventElapsedTime(&cms, e0, e1));
    CK(cudaEventElapsedTime(&gap, k0, e1));
    printf("%-48s concurrent with an all-SM kernel (%.1f ms): copy 64 MiB took %.2f ms, done %.2f ms after kernel start -> %s\n",
           names[p], kms, cms, gap, gap < kms * 0.9f ? "copy engine (overlaps)" : "waits for SMs");
  }
  return 0;
}
