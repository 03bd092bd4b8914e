// atomicAdd on float and double with integer-valued inputs: every partial sum is exactly
// representable, so the result does not depend on the order and is compared exactly.
extern "C" __global__ void atomic_add_float_exact(const int* __restrict__ in, float* fs, double* ds) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    int v = in[t] & 0x3ff;  // 0..1023, 4096 threads: sums < 2^22
    atomicAdd(&fs[t & 3], (float)v);
    atomicAdd(&ds[t & 3], (double)v * 0.5);
}
