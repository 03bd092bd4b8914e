// __nv_bfloat16 / __nv_bfloat162 arithmetic and conversions from cuda_bf16.h.
#include <cuda_bf16.h>
extern "C" __global__ void bf16_arith(const __nv_bfloat16* __restrict__ a,
                                      const __nv_bfloat16* __restrict__ b,
                                      __nv_bfloat16* __restrict__ out, float* __restrict__ outf) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    __nv_bfloat16 x = a[t], y = b[t];
    __nv_bfloat16* o = out + t * 10;
    o[0] = __hadd(x, y);
    o[1] = __hsub(x, y);
    o[2] = __hmul(x, y);
    o[3] = __hfma(x, y, x);
    o[4] = __hdiv(x, y);
    o[5] = hsqrt(__habs(x));
    o[6] = __hmin(x, y);
    __nv_bfloat162 p = __halves2bfloat162(x, y);
    __nv_bfloat162 q = __hfma2(p, p, __float2bfloat162_rn(0.75f));
    o[7] = __low2bfloat16(q);
    o[8] = __high2bfloat16(q);
    o[9] = __float2bfloat16_rn(__bfloat162float(x) / 3.0f);
    outf[t * 2] = __bfloat162float(x) * __bfloat162float(y);
    outf[t * 2 + 1] = (float)__bfloat162int_rn(__hmul(x, __float2bfloat16(100.0f)));
}
