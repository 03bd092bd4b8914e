// mbarrier (sm_80+) through inline PTX: init, arrive (returning the state), test_wait loops,
// reused for three phases.
__device__ __forceinline__ unsigned smem_u32(const void* p) {
    unsigned r;
    asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(r) : "l"(p));
    return r;
}
extern "C" __global__ void mbarrier_ptx(const int* __restrict__ in, int* __restrict__ out) {
    __shared__ __align__(8) unsigned long long bar;
    __shared__ int s[256];
    int tid = threadIdx.x;
    unsigned b = smem_u32(&bar);
    if (tid == 0) asm volatile("mbarrier.init.shared.b64 [%0], %1;" :: "r"(b), "r"(blockDim.x) : "memory");
    __syncthreads();
    int v = in[blockIdx.x * blockDim.x + tid];
    for (int phase = 0; phase < 3; phase++) {
        s[tid] = v + phase;
        unsigned long long state;
        asm volatile("mbarrier.arrive.shared.b64 %0, [%1];" : "=l"(state) : "r"(b) : "memory");
        unsigned done = 0;
        while (!done) {
            asm volatile("{ .reg .pred p; mbarrier.test_wait.shared.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                         : "=r"(done) : "r"(b), "l"(state) : "memory");
        }
        v = v * 3 + s[(tid + 37 * (phase + 1)) % blockDim.x];
        __syncthreads();  // nobody overwrites s before everyone has read it
    }
    out[blockIdx.x * blockDim.x + tid] = v;
}
