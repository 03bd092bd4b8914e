// __constant__ arrays written by the harness before the launch (cuModuleGetGlobal +
// cuMemcpyHtoD for libcuda, tg_module_get_global's CPU mapping for libtegragpu), read with
// uniform and divergent indices.
__constant__ float coef[64];
__constant__ int ctab[256];
extern "C" __global__ void constant_written(const float* __restrict__ in, float* __restrict__ out,
                                            int* __restrict__ iout) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    float x = in[t];
    float acc = 0.0f;
    for (int i = 0; i < 8; i++) acc = acc * x + coef[i];      // uniform index
    acc += coef[8 + (t & 55)];                                  // divergent index
    out[t] = acc;
    iout[t] = ctab[t & 255] ^ ctab[blockIdx.x & 255];
}
