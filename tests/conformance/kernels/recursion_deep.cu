// Deep recursion with a local array in every frame: needs several KiB of stack per thread, so the
// harness raises the stack limit (CU_LIMIT_STACK_SIZE / TG_LIMIT_STACK_SIZE) to 8 KiB first.
__device__ __noinline__ unsigned deep(unsigned depth, unsigned seed) {
    volatile unsigned local[24];
    for (int i = 0; i < 24; i++) local[i] = seed * (i + 1) + depth;
    unsigned r = 0;
    if (depth > 0) r = deep(depth - 1, seed ^ local[depth % 24]);
    for (int i = 0; i < 24; i++) r += local[i] * (unsigned)(i | 1);
    return r;
}
extern "C" __global__ void recursion_deep(const unsigned* __restrict__ in, unsigned* __restrict__ out,
                                          unsigned depth) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    out[t] = deep(depth, in[t]);
}
