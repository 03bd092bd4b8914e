// 12 bytes of static shared memory, updated with shared-memory atomics.
extern "C" __global__ void smem_static_12(const int* __restrict__ in, int* __restrict__ out) {
    __shared__ int s[3];
    if (threadIdx.x < 3) s[threadIdx.x] = 0;
    __syncthreads();
    int v = in[blockIdx.x * blockDim.x + threadIdx.x];
    atomicAdd(&s[0], v);
    atomicXor(&s[1], v);
    atomicMax(&s[2], v);
    __syncthreads();
    if (threadIdx.x < 3) out[blockIdx.x * 3 + threadIdx.x] = s[threadIdx.x];
}
