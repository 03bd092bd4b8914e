// libcu++ cuda::barrier<thread_scope_block> with arrive_and_wait and cuda::memcpy_async.
#include <cuda/barrier>
#pragma nv_diag_suppress static_var_with_dynamic_init
extern "C" __global__ void cuda_barrier(const int* __restrict__ in, int* __restrict__ out) {
    using barrier_t = cuda::barrier<cuda::thread_scope_block>;
    __shared__ barrier_t bar;
    __shared__ __align__(16) int s[512];
    int tid = threadIdx.x;  // 128 threads
    if (tid == 0) init(&bar, blockDim.x);
    __syncthreads();
    const int* src = in + blockIdx.x * 512;
    cuda::memcpy_async(&s[tid * 4], &src[tid * 4], cuda::aligned_size_t<16>(16), bar);
    bar.arrive_and_wait();
    int v = s[(tid * 13) & 511] + s[511 - tid];
    bar.arrive_and_wait();
    s[tid] = v * 2;
    bar.arrive_and_wait();
    out[blockIdx.x * 128 + tid] = s[127 - tid] ^ v;
}
