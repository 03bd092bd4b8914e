// tinygrad-style generated reduction: 16 rows of 64 floats, 16 threads per row.
extern "C" __global__ void __launch_bounds__(16) r_16_16(float* data0, const float* __restrict__ data1) {
  __shared__ __align__(16) float temp0[16];
  int gidx0 = blockIdx.x; /* 16 */
  int lidx0 = threadIdx.x; /* 16 */
  float acc0 = 0.0f;
  for (int ridx0 = 0; ridx0 < 4; ridx0++) {
    float val0 = data1[(gidx0 * 64) + (lidx0 * 4) + ridx0];
    acc0 = (acc0 + val0);
  }
  temp0[lidx0] = acc0;
  __syncthreads();
  if (lidx0 == 0) {
    float acc1 = 0.0f;
    for (int ridx1 = 0; ridx1 < 16; ridx1++) {
      float val1 = temp0[ridx1];
      acc1 = (acc1 + val1);
    }
    data0[gidx0] = acc1;
  }
}
