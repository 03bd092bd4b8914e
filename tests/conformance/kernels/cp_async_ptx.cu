// cp.async (sm_80+) through inline PTX: 4-, 8- and 16-byte copies (.ca and .cg), zero-fill with
// a partial source size, two commit groups waited for one at a time.
__device__ __forceinline__ unsigned smem_u32(const void* p) {
    unsigned r;
    asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(r) : "l"(p));
    return r;
}
extern "C" __global__ void cp_async_ptx(const int4* __restrict__ in16, const int2* __restrict__ in8,
                                        const int* __restrict__ in4, int* __restrict__ out) {
    __shared__ __align__(16) int4 s16[256];
    __shared__ __align__(16) int4 sz[256];
    __shared__ __align__(8) int2 s8[256];
    __shared__ int s4[256];
    int tid = threadIdx.x;
    int g = blockIdx.x * 256 + tid;
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"(smem_u32(&s16[tid])), "l"(in16 + g) : "memory");
    asm volatile("cp.async.ca.shared.global [%0], [%1], 8;" :: "r"(smem_u32(&s8[tid])), "l"(in8 + g) : "memory");
    asm volatile("cp.async.commit_group;" ::: "memory");
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" :: "r"(smem_u32(&s4[tid])), "l"(in4 + g) : "memory");
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" :: "r"(smem_u32(&sz[tid])), "l"(in16 + g), "r"(tid & 15) : "memory");
    asm volatile("cp.async.commit_group;" ::: "memory");
    asm volatile("cp.async.wait_group 1;" ::: "memory");
    __syncthreads();
    int first = s16[255 - tid].x + s16[tid].w + s8[(tid * 5) & 255].y;
    asm volatile("cp.async.wait_group 0;" ::: "memory");
    __syncthreads();
    int* o = out + g * 8;
    o[0] = first;
    o[1] = s4[(tid + 1) & 255];
    o[2] = sz[tid].x; o[3] = sz[tid].y; o[4] = sz[tid].z; o[5] = sz[tid].w;
    o[6] = s8[tid].x;
    o[7] = s16[(tid * 3) & 255].z;
}
