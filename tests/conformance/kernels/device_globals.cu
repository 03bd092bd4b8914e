// __device__ globals: zero-initialised (.nv.global), initialised (.nv.global.init), a pointer
// initialised with the address of another global (a relocation in the initialiser), and a
// global counter updated with atomics.
__device__ int g_zero[64];
__device__ int g_init[8] = {3, 1, 4, 1, 5, 9, 2, 6};
__device__ float g_scale = 1.5f;
__device__ int* g_ptr = &g_init[2];
__device__ unsigned long long g_counter;
extern "C" __global__ void device_globals(const int* __restrict__ in, int* __restrict__ out) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    int v = in[t];
    atomicAdd(&g_zero[t & 63], v & 0xffff);
    atomicAdd(&g_counter, 1ull);
    int r = (int)((float)g_init[t & 7] * g_scale) + g_ptr[t & 3] * 100;
    out[t] = r;
    __threadfence();
    if (t == 0) {
        out[blockDim.x * gridDim.x] = g_init[7];
        out[blockDim.x * gridDim.x + 1] = (int)((unsigned long long)g_ptr - (unsigned long long)g_init);
    }
}
