// tinygrad-style max reduction (fmaxf) and an integer sum, 64 rows x 256, 32 threads per row.
extern "C" __global__ void __launch_bounds__(32) r_64_32_max(float* data0, int* data1,
                                                            const float* __restrict__ data2) {
  __shared__ __align__(16) float temp0[32];
  __shared__ __align__(16) int temp1[32];
  int gidx0 = blockIdx.x; /* 64 */
  int lidx0 = threadIdx.x; /* 32 */
  float acc0 = -__int_as_float(0x7f800000);
  int acc1 = 0;
  for (int ridx0 = 0; ridx0 < 8; ridx0++) {
    float val0 = data2[(gidx0 * 256) + (ridx0 * 32) + lidx0];
    acc0 = fmaxf(acc0, val0);
    acc1 = (acc1 + ((int)(val0 * 100.0f)));
  }
  temp0[lidx0] = acc0;
  temp1[lidx0] = acc1;
  __syncthreads();
  if (lidx0 == 0) {
    float acc2 = -__int_as_float(0x7f800000);
    int acc3 = 0;
    for (int ridx1 = 0; ridx1 < 32; ridx1++) {
      acc2 = fmaxf(acc2, temp0[ridx1]);
      acc3 = (acc3 + temp1[ridx1]);
    }
    data0[gidx0] = acc2;
    data1[gidx0] = acc3;
  }
}
