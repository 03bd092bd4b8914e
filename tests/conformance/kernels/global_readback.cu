// A kernel with no parameters that writes __device__ globals; the harness reads them back
// through cuModuleGetGlobal / tg_module_get_global.
__device__ unsigned g_flag;
__device__ unsigned g_table[32];
__device__ double g_sum = 0.25;
extern "C" __global__ void global_readback() {
    unsigned t = threadIdx.x;
    g_table[t] = t * t + 7u;
    if (t == 0) {
        g_flag = 0xC0FFEEu;
        g_sum += 1.0;
    }
}
