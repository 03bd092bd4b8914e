// SM copy-kernel variants against libcuda's cudaMemcpyAsync D2D, same process, same buffers
// (compiled on the device machine with nvcc). Best of N by CUDA events.
#include <cstdio>
#include <cstdlib>
#include <cuda.h>
#include <cuda_runtime.h>
typedef unsigned long long u64;
#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
  printf("%s:%d %s -> %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); exit(1); } } while (0)

// Current library kernel: grid-stride, 4 x 16 B in flight.
__global__ void __launch_bounds__(256) stride4(uint4 *__restrict__ d, const uint4 *__restrict__ s, u64 n) {
  u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x, st = (u64)gridDim.x * blockDim.x;
  for (; i + 3 * st < n; i += 4 * st) {
    uint4 a = s[i], b = s[i + st], c = s[i + 2 * st], e = s[i + 3 * st];
    d[i] = a; d[i + st] = b; d[i + 2 * st] = c; d[i + 3 * st] = e;
  }
  for (; i < n; i += st) d[i] = s[i];
}

// One block per contiguous chunk of K x 256 elements of T; thread t copies t, t+256, ...
template <typename T, int K>
__global__ void __launch_bounds__(256) chunk(T *__restrict__ d, const T *__restrict__ s, u64 n) {
  u64 base = ((u64)blockIdx.y * gridDim.x + blockIdx.x) * (256 * K) + threadIdx.x;
  T v[K];
  if (base + (K - 1) * 256 < n) {
#pragma unroll
    for (int k = 0; k < K; k++) v[k] = s[base + k * 256];
#pragma unroll
    for (int k = 0; k < K; k++) d[base + k * 256] = v[k];
  } else {
    for (int k = 0; k < K; k++) if (base + k * 256 < n) d[base + k * 256] = s[base + k * 256];
  }
}

static float timeit(void (*go)(void *, void *, u64, void *), void *d, void *s, u64 n, void *ctx, int reps) {
  cudaEvent_t e0, e1; CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
  for (int i = 0; i < 3; i++) go(d, s, n, ctx);
  CK(cudaDeviceSynchronize());
  float best = 1e30f;
  for (int i = 0; i < reps; i++) {
    CK(cudaEventRecord(e0)); go(d, s, n, ctx); CK(cudaEventRecord(e1)); CK(cudaEventSynchronize(e1));
    float ms; CK(cudaEventElapsedTime(&ms, e0, e1)); if (ms < best) best = ms;
  }
  CK(cudaGetLastError());
  cudaEventDestroy(e0); cudaEventDestroy(e1);
  return n / (best * 1e6f);
}

static int sms;
static void go_cuda(void *d, void *s, u64 n, void *) { CK(cudaMemcpyAsync(d, s, n, cudaMemcpyDeviceToDevice)); }
static void go_stride(void *d, void *s, u64 n, void *ctx) {
  int bpsm = (int)(size_t)ctx; stride4<<<sms * bpsm, 256>>>((uint4 *)d, (const uint4 *)s, n / 16);
}
// A kernel from a cubin given on the command line (e.g. one extracted from libcuda for comparison;
// not shipped): f(dst, src), 256 threads, one block per 4 KiB, no bounds check.
static CUfunction ext_fn;
static void go_ext(void *d, void *s, u64 n, void *) {
  void *args[] = {&d, &s};
  if (cuLaunchKernel(ext_fn, (unsigned)(n / 4096), 1, 1, 256, 1, 1, 0, 0, args, 0) != CUDA_SUCCESS) {
    printf("cuLaunchKernel failed\n"); exit(1);
  }
}
// ctx = resident blocks per SM wanted (0: no limit), enforced with dynamic shared memory.
template <typename T, int K> static void go_chunk(void *d, void *s, u64 n, void *ctx) {
  u64 per = 256ull * K * sizeof(T), blocks = (n + per - 1) / per;
  dim3 g((unsigned)blocks, 1);
  int k = (int)(size_t)ctx;
  // 228 KiB of shared memory per SM, 1 KiB of it reserved per block.
  size_t smem = k ? (228 * 1024) / k - 1024 - 16 : 0;
  static bool set[64];
  if (k && !set[k]) {
    CK(cudaFuncSetAttribute(chunk<T, K>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    CK(cudaFuncSetAttribute(chunk<T, K>, cudaFuncAttributePreferredSharedMemoryCarveout, 100));
    set[k] = true;
  }
  chunk<T, K><<<g, 256, smem>>>((T *)d, (const T *)s, n / sizeof(T));
}

int main(int argc, char **argv) {
  int reps = argc > 1 ? atoi(argv[1]) : 10;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  u64 big = 1ull << 30; void *a, *b;
  CK(cudaMalloc(&a, big)); CK(cudaMalloc(&b, big));
  CK(cudaMemset(a, 1, big)); CK(cudaMemset(b, 2, big));
  if (argc > 3) {
    CUmodule m;
    if (cuModuleLoad(&m, argv[2]) != CUDA_SUCCESS || cuModuleGetFunction(&ext_fn, m, argv[3]) != CUDA_SUCCESS) {
      printf("cannot load %s:%s\n", argv[2], argv[3]); return 1;
    }
  }
  struct V { const char *name; void (*go)(void *, void *, u64, void *); void *ctx; } vs[] = {
    {"cudaMemcpyAsync", go_cuda, 0},
    {"stride4 2/SM (shipped)", go_stride, (void *)2},
    {"external kernel (argv[2]:argv[3])", go_ext, 0},
    {"chunk u32 x4 (4 KiB/block)", go_chunk<unsigned, 4>, 0},
    {"chunk u128 x1 (4 KiB/block)", go_chunk<uint4, 1>, 0},
    {"chunk u32 x8 (8 KiB/block)", go_chunk<unsigned, 8>, 0},
    {"chunk u64 x4 (8 KiB/block)", go_chunk<unsigned long long, 4>, 0},
    {"chunk u64 x2 (4 KiB/block)", go_chunk<unsigned long long, 2>, 0},
    {"chunk u128 x2 (8 KiB/block)", go_chunk<uint4, 2>, 0},
    {"chunk u128 x4 (16 KiB/block)", go_chunk<uint4, 4>, 0},
    {"external kernel (again)", go_ext, 0},
    {"cudaMemcpyAsync (again)", go_cuda, 0},
  };
  u64 sizes[] = {64ull << 20, 256ull << 20, 1ull << 30};
  for (int round = 0; round < 2; round++)
    for (auto &v : vs) {
      printf("%-32s", v.name);
      for (u64 n : sizes) printf("  %4llu MiB %7.1f", n >> 20, timeit(v.go, b, a, n, v.ctx, reps));
      printf("\n");
    }
  // Check the chunk kernels copy exactly (odd element count).
  u64 n = (64ull << 20) + 4 * 37;
  CK(cudaMemset(b, 0, big));
  go_chunk<unsigned, 4>(b, a, n, 0);
  CK(cudaDeviceSynchronize());
  unsigned char *h = (unsigned char *)malloc(n + 64);
  CK(cudaMemcpy(h, b, n + 64, cudaMemcpyDeviceToHost));
  u64 bad = 0; for (u64 i = 0; i < n + 64; i++) bad += h[i] != (i < n ? 1 : 0);
  printf("chunk u32 x4 check: %llu bad bytes\n", bad);
  return 0;
}
