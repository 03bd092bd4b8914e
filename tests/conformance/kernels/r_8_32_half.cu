// tinygrad-style reduction over half inputs (half2 loads), float accumulation, half output.
#include <cuda_fp16.h>
extern "C" __global__ void __launch_bounds__(32) r_8_32_half(half* data0, float* data1,
                                                            const half* __restrict__ data2) {
  __shared__ __align__(16) float temp0[32];
  int gidx0 = blockIdx.x; /* 8 */
  int lidx0 = threadIdx.x; /* 32 */
  float acc0 = 0.0f;
  for (int ridx0 = 0; ridx0 < 4; ridx0++) {
    half2 val0 = *((const half2*)((data2 + ((gidx0 * 256) + (lidx0 * 8) + (ridx0 * 2)))));
    float2 f = __half22float2(val0);
    acc0 = (acc0 + (f.x * f.y));
  }
  temp0[lidx0] = acc0;
  __syncthreads();
  if (lidx0 == 0) {
    float acc1 = 0.0f;
    for (int ridx1 = 0; ridx1 < 32; ridx1++) {
      acc1 = (acc1 + temp0[ridx1]);
    }
    data0[gidx0] = (half)(acc1);
    data1[gidx0] = acc1;
  }
}
