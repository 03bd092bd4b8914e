// sm_90: bulk async copies (cp.async.bulk, the TMA's non-tensor form) global -> shared completing
// on an mbarrier (expect_tx / try_wait.parity), and shared -> global with a bulk group.
__device__ __forceinline__ unsigned smem_u32(const void* p) {
    unsigned r;
    asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(r) : "l"(p));
    return r;
}
extern "C" __global__ void tma_bulk(const int* __restrict__ in, int* __restrict__ out) {
    __shared__ __align__(128) int buf[2048];  // 8 KiB: two 4 KiB bulk copies
    __shared__ __align__(8) unsigned long long bar;
    int tid = threadIdx.x;
    unsigned b = smem_u32(&bar);
    if (tid == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(b) : "memory");
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    const int* src = in + blockIdx.x * 2048;
    if (tid == 0) {
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(b), "r"(8192) : "memory");
        asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                     :: "r"(smem_u32(buf)), "l"(src), "r"(4096), "r"(b) : "memory");
        asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                     :: "r"(smem_u32(buf + 1024)), "l"(src + 1024), "r"(4096), "r"(b) : "memory");
    }
    unsigned done = 0;
    while (!done) {
        asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                     : "=r"(done) : "r"(b), "r"(0) : "memory");
    }
    for (int i = tid; i < 2048; i += blockDim.x) buf[i] = buf[i] * 3 + buf[2047 - i];
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();
    if (tid == 0) {
        asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;"
                     :: "l"(out + blockIdx.x * 2048), "r"(smem_u32(buf)), "r"(8192) : "memory");
        asm volatile("cp.async.bulk.commit_group;" ::: "memory");
        asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
    }
}
