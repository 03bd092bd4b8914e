// Butterfly reductions with __shfl_xor_sync: int sum, float sum (fixed order), double max, width 4.
extern "C" __global__ void warp_shfl_xor(const float* __restrict__ in, unsigned* __restrict__ out) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    const unsigned full = 0xffffffffu;
    float f = in[t];
    int i = __float_as_int(f) >> 7;
    double d = (double)f * 3.0;
    int isum = i;
    float fsum = f;
    double dmax = d;
    for (int m = 16; m > 0; m >>= 1) {
        isum += __shfl_xor_sync(full, isum, m);
        fsum += __shfl_xor_sync(full, fsum, m);
        dmax = fmax(dmax, __shfl_xor_sync(full, dmax, m));
    }
    float q = f;
    q += __shfl_xor_sync(full, q, 1, 4);
    q += __shfl_xor_sync(full, q, 2, 4);
    unsigned* o = out + t * 5;
    o[0] = (unsigned)isum;
    o[1] = __float_as_uint(fsum);
    o[2] = (unsigned)__double2loint(dmax);
    o[3] = (unsigned)__double2hiint(dmax);
    o[4] = __float_as_uint(q);
}
