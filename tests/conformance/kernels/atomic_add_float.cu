// atomicAdd on float and double with random real inputs: the rounding of each step depends on
// the (unspecified) order in which the atomics land, so the manifest compares with a tolerance.
extern "C" __global__ void atomic_add_float(const float* __restrict__ in, float* fs, double* ds) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    float v = in[t];
    atomicAdd(&fs[t & 7], v);
    atomicAdd(&ds[t & 7], (double)v * 1.000001);
}
