// half and half2 arithmetic from cuda_fp16.h: add/sub/mul/fma/div/sqrt/compare/convert.
#include <cuda_fp16.h>
extern "C" __global__ void half_arith(const __half* __restrict__ a, const __half* __restrict__ b,
                                      __half* __restrict__ out, float* __restrict__ outf) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    __half x = a[t], y = b[t];
    __half* o = out + t * 12;
    o[0] = __hadd(x, y);
    o[1] = __hsub(x, y);
    o[2] = __hmul(x, y);
    o[3] = __hfma(x, y, x);
    o[4] = __hdiv(x, y);
    o[5] = hsqrt(__habs(x));
    o[6] = __hmax(x, y);
    o[7] = __float2half_rn(__half2float(x) * 3.1f);
    __half2 p = __halves2half2(x, y);
    __half2 q = __hfma2(p, p, __float2half2_rn(0.5f));
    q = __hmul2_sat(q, __halves2half2(y, x));
    o[8] = __low2half(q);
    o[9] = __high2half(q);
    o[10] = hexp(__hmul(x, __float2half(0.25f)));
    o[11] = __hlt(x, y) ? x : hrcp(y);
    outf[t] = __half2float(x) + __half2float(y) * 1024.0f;
}
