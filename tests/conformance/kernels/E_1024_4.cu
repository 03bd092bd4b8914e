// tinygrad-style elementwise kernel: float4 loads and stores, 256 threads, fused math.
extern "C" __global__ void __launch_bounds__(256) E_1024_4(float* data0, const float* __restrict__ data1,
                                                          const float* __restrict__ data2) {
  int gidx0 = blockIdx.x; /* 4 */
  int lidx0 = threadIdx.x; /* 256 */
  int alu0 = ((gidx0 * 1024) + (lidx0 * 4));
  float4 val0 = *((const float4*)((data1 + alu0)));
  float4 val1 = *((const float4*)((data2 + alu0)));
  float4 r;
  r.x = (val0.x * val1.x) + exp2f(val0.x * 0.5f);
  r.y = (val0.y > val1.y) ? val0.y : (val1.y * 0.25f);
  r.z = sqrtf(fabsf(val0.z)) - val1.z;
  r.w = 1.0f / (1.0f + exp2f(-val0.w * 1.442695f));
  *((float4*)((data0 + alu0))) = r;
}
