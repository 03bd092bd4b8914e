// Fast-math intrinsics (__expf, __sinf, __cosf, __logf, __powf, __fdividef, ...) and the
// explicitly rounded float operations; deterministic on one GPU, compared exactly.
extern "C" __global__ void fast_math(const float* __restrict__ a, const float* __restrict__ b,
                                     float* __restrict__ out) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    float x = a[t], y = b[t];
    float* o = out + t * 16;
    o[0] = __expf(x);
    o[1] = __sinf(x);
    o[2] = __cosf(y);
    o[3] = __logf(fabsf(y) + 1.0f);
    o[4] = __log2f(fabsf(x) + 1.0f);
    o[5] = __powf(fabsf(x), y);
    o[6] = __fdividef(x, y);
    o[7] = __tanf(x * 0.25f);
    o[8] = __saturatef(x);
    o[9] = __frcp_rn(y);
    o[10] = __fsqrt_rn(fabsf(x));
    o[11] = __fmul_rz(x, y);
    o[12] = __fadd_rd(x, y);
    o[13] = __fmaf_ru(x, y, 1.0f);
    o[14] = __frsqrt_rn(fabsf(y) + 1.0f);
    o[15] = __exp10f(x * 0.1f);
}
