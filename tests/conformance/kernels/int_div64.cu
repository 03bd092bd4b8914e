// Integer division and remainder (32/64-bit, signed/unsigned, run-time divisors), 64-bit
// multiply-high, 64-bit bit counts and shifts.
extern "C" __global__ void int_div64(const long long* __restrict__ a, const long long* __restrict__ b,
                                     long long* __restrict__ out) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    long long x = a[t], y = b[t];
    if (y == 0) y = 1;
    int xi = (int)x, yi = (int)(y >> 20);
    if (yi == 0) yi = -3;
    unsigned long long ux = (unsigned long long)x, uy = (unsigned long long)y;
    long long* o = out + t * 12;
    o[0] = x / y;
    o[1] = x % y;
    o[2] = (long long)(ux / uy);
    o[3] = (long long)(ux % uy);
    o[4] = xi / yi;
    o[5] = xi % yi;
    o[6] = (long long)((unsigned)xi / (unsigned)yi);
    o[7] = (long long)__umul64hi(ux, uy);
    o[8] = __mul64hi(x, y);
    o[9] = __popcll(ux) + 100 * __clzll(uy) + 10000 * __ffsll(x);
    o[10] = (long long)(ux >> (uy & 63)) ^ (x << (y & 63)) ^ (x >> (xi & 63));
    o[11] = (long long)__brevll(ux) + x * y;
}
