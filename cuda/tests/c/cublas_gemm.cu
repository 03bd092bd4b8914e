// cuBLAS SGEMM and DGEMM from a program with the CUDA runtime linked in, checked against the CPU
// (scripts/torch-device-run.sh builds it with nvcc and runs it on NVIDIA's libcuda and on ours).
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <vector>
#include <cuda_runtime.h>
#include <cublas_v2.h>
#define CK(x) do { cudaError_t e = (x); if (e) { printf("FAIL %s: %s\n", #x, cudaGetErrorString(e)); return 1; } } while (0)
#define CB(x) do { cublasStatus_t e = (x); if (e) { printf("FAIL %s: cublas status %d\n", #x, (int)e); return 1; } } while (0)
template <class T> int run(cublasHandle_t h, int n, cudaStream_t s) {
  std::vector<T> a(n * n), b(n * n), c(n * n), r(n * n);
  for (int i = 0; i < n * n; i++) { a[i] = (T)((i * 7 % 13) - 6) / 4; b[i] = (T)((i * 5 % 11) - 5) / 4; }
  T *da, *db, *dc;
  CK(cudaMalloc(&da, n * n * sizeof(T))); CK(cudaMalloc(&db, n * n * sizeof(T))); CK(cudaMalloc(&dc, n * n * sizeof(T)));
  CK(cudaMemcpy(da, a.data(), n * n * sizeof(T), cudaMemcpyHostToDevice));
  CK(cudaMemcpy(db, b.data(), n * n * sizeof(T), cudaMemcpyHostToDevice));
  T one = 1, zero = 0;
  CB(cublasSetStream(h, s));
  if (sizeof(T) == 4) CB(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, (float*)&one, (float*)da, n, (float*)db, n, (float*)&zero, (float*)dc, n));
  else CB(cublasDgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, (double*)&one, (double*)da, n, (double*)db, n, (double*)&zero, (double*)dc, n));
  CK(cudaStreamSynchronize(s));
  CK(cudaMemcpy(c.data(), dc, n * n * sizeof(T), cudaMemcpyDeviceToHost));
  double maxerr = 0;
  for (int i = 0; i < n; i++) for (int j = 0; j < n; j++) {
    double acc = 0; for (int k = 0; k < n; k++) acc += (double)a[k * n + i] * b[j * n + k];
    maxerr = fmax(maxerr, fabs(acc - c[j * n + i]));
  }
  printf("%s n=%d max error %g\n", sizeof(T) == 4 ? "sgemm" : "dgemm", n, maxerr);
  cudaFree(da); cudaFree(db); cudaFree(dc);
  return maxerr < 1e-2 ? 0 : 1;
}
int main() {
  cublasHandle_t h; CB(cublasCreate(&h));
  cudaStream_t s; CK(cudaStreamCreate(&s));
  int bad = 0;
  bad |= run<float>(h, 64, 0);
  bad |= run<float>(h, 257, s);
  bad |= run<double>(h, 128, s);
  CB(cublasDestroy(h));
  printf(bad ? "BLAS FAILED\n" : "BLAS OK\n");
  return bad;
}
