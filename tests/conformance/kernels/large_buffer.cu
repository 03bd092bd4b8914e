// A 64 MiB grid-stride transform (int4 loads/stores), 2-D grid.
extern "C" __global__ void large_buffer(const int4* __restrict__ in, int4* __restrict__ out,
                                        unsigned long long n) {
    unsigned long long stride = (unsigned long long)gridDim.x * gridDim.y * blockDim.x;
    for (unsigned long long i = ((unsigned long long)blockIdx.y * gridDim.x + blockIdx.x) * blockDim.x + threadIdx.x;
         i < n; i += stride) {
        int4 v = in[i];
        out[i] = make_int4(v.w + (int)i, v.z ^ (int)(i >> 3), v.y * 3, v.x - 1);
    }
}
