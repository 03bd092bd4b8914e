// __launch_bounds__(128) launched with 100 threads per block: the last warp is partial; warp
// intrinsics with __activemask() as the member mask.
extern "C" __global__ void __launch_bounds__(128) partial_warp(const int* __restrict__ in,
                                                               int* __restrict__ out) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    int v = in[t];
    unsigned m = __activemask();
    int s = v;
    for (int d = 16; d > 0; d >>= 1) {
        int o = __shfl_xor_sync(m, s, d);
        if (m & (1u << ((threadIdx.x & 31) ^ d))) s += o;
    }
    out[t * 3] = s;
    out[t * 3 + 1] = (int)m;
    out[t * 3 + 2] = (int)__ballot_sync(m, v & 1);
}
