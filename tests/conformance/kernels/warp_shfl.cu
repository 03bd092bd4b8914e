// Warp shuffles by index: full width, sub-widths 16 and 8, 32/64-bit and float/double payloads.
extern "C" __global__ void warp_shfl(const int* __restrict__ in, unsigned* __restrict__ out) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    int lane = threadIdx.x & 31;
    const unsigned full = 0xffffffffu;
    int v = in[t];
    int a = __shfl_sync(full, v, (lane * 7 + 3) & 31);
    int b = __shfl_sync(full, v, lane ^ 5, 16);
    int c = __shfl_sync(full, v, 2, 8);
    float f = (float)v * 0.125f;
    float fa = __shfl_sync(full, f, 31 - lane);
    long long w = ((long long)v << 32) | (unsigned)(~v);
    long long wa = __shfl_sync(full, w, (lane + 9) & 31);
    double d = (double)v * 0.0625;
    double da = __shfl_sync(full, d, (lane * 3) & 31);
    unsigned* o = out + t * 8;
    o[0] = (unsigned)a;
    o[1] = (unsigned)b;
    o[2] = (unsigned)c;
    o[3] = __float_as_uint(fa);
    o[4] = (unsigned)wa;
    o[5] = (unsigned)(wa >> 32);
    o[6] = (unsigned)__double2loint(da);
    o[7] = (unsigned)__double2hiint(da);
}
