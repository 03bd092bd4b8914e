// tinygrad-style reduction with float4 loads: 32 rows of 128 floats, 8 threads per row.
extern "C" __global__ void __launch_bounds__(8) r_32_8_4(float* data0, const float* __restrict__ data1) {
  __shared__ __align__(16) float temp0[8];
  int gidx0 = blockIdx.x; /* 32 */
  int lidx0 = threadIdx.x; /* 8 */
  float acc0 = 0.0f;
  for (int ridx0 = 0; ridx0 < 4; ridx0++) {
    float4 val0 = *((const float4*)((data1 + ((gidx0 * 128) + (lidx0 * 16) + (ridx0 * 4)))));
    acc0 = (acc0 + ((val0.x * val0.x) + (val0.y * val0.y) + (val0.z * val0.z) + (val0.w * val0.w)));
  }
  temp0[lidx0] = acc0;
  __syncthreads();
  if (lidx0 == 0) {
    float acc1 = 0.0f;
    for (int ridx1 = 0; ridx1 < 8; ridx1++) {
      acc1 = (acc1 + temp0[ridx1]);
    }
    data0[gidx0] = sqrtf(acc1);
  }
}
