// 2064 bytes of static shared memory (not a multiple of 128), byte-granular permuted reads.
extern "C" __global__ void smem_static_2064(const unsigned char* __restrict__ in,
                                            unsigned char* __restrict__ out) {
    __shared__ unsigned char buf[2064];
    const unsigned char* src = in + blockIdx.x * 2064;
    for (int i = threadIdx.x; i < 2064; i += blockDim.x) buf[i] = src[i];
    __syncthreads();
    for (int i = threadIdx.x; i < 2064; i += blockDim.x)
        out[blockIdx.x * 2064 + i] = buf[(i * 37 + 11) % 2064] ^ (unsigned char)i;
}
