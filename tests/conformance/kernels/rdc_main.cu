// Separate compilation (-rdc=true) + device link: the kernel calls a __device__ function and
// reads a __device__ global that are defined in rdc_lib.cu.
extern __device__ int rdc_helper(int x, int y);
extern __device__ int rdc_table[16];
extern "C" __global__ void rdc_main(const int* __restrict__ in, int* __restrict__ out) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    int v = in[t];
    out[t] = rdc_helper(v, t) + rdc_table[v & 15];
}
