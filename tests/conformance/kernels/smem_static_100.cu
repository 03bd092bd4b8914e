// 100 bytes of static shared memory.
extern "C" __global__ void smem_static_100(const int* __restrict__ in, int* __restrict__ out) {
    __shared__ int s[25];
    if (threadIdx.x < 25) s[threadIdx.x] = in[blockIdx.x * 25 + threadIdx.x];
    __syncthreads();
    int v = s[(threadIdx.x * 7) % 25] + s[24 - threadIdx.x % 25];
    out[blockIdx.x * blockDim.x + threadIdx.x] = v;
}
