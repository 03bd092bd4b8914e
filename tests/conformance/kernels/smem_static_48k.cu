// Exactly 48 KiB (49152 bytes) of static shared memory, the static maximum.
extern "C" __global__ void smem_static_48k(const float* __restrict__ in, float* __restrict__ out) {
    __shared__ float s[12288];
    const float* src = in + blockIdx.x * 12288;
    for (int i = threadIdx.x; i < 12288; i += blockDim.x) s[i] = src[i];
    __syncthreads();
    for (int i = threadIdx.x; i < 12288; i += blockDim.x)
        out[blockIdx.x * 12288 + i] = s[12287 - i] * 2.0f + s[(i * 97) % 12288];
}
