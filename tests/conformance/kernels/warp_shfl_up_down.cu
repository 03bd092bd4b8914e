// __shfl_up_sync / __shfl_down_sync with several deltas and widths (out-of-range lanes keep their value).
extern "C" __global__ void warp_shfl_up_down(const int* __restrict__ in, int* __restrict__ out) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    const unsigned full = 0xffffffffu;
    int v = in[t];
    int* o = out + t * 8;
    o[0] = __shfl_up_sync(full, v, 1);
    o[1] = __shfl_up_sync(full, v, 3, 8);
    o[2] = __shfl_down_sync(full, v, 2);
    o[3] = __shfl_down_sync(full, v, 5, 16);
    float f = (float)v / 7.0f;
    o[4] = __float_as_int(__shfl_down_sync(full, f, 31));
    o[5] = __float_as_int(__shfl_up_sync(full, f, 16));
    // inclusive prefix sum with shfl_up (Hillis-Steele)
    int s = v;
    for (int d = 1; d < 32; d <<= 1) {
        int n = __shfl_up_sync(full, s, d);
        if ((threadIdx.x & 31) >= d) s += n;
    }
    o[6] = s;
    // suffix max with shfl_down
    int m = v;
    for (int d = 1; d < 32; d <<= 1) {
        int n = __shfl_down_sync(full, m, d);
        if ((threadIdx.x & 31) + d < 32) m = max(m, n);
    }
    o[7] = m;
}
