// atomicAdd on unsigned long long.
extern "C" __global__ void atomic_add_u64(const unsigned long long* __restrict__ in,
                                          unsigned long long* sums) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned long long v = in[t];
    atomicAdd(&sums[t & 7], v);
    atomicAdd(&sums[8], v >> 20);
    atomicAdd(&sums[9], 1ull);
}
