// sm_90 warp-level instructions: elect.sync, stmatrix (the inverse of ldmatrix), and
// redux.sync through inline PTX.
__device__ __forceinline__ unsigned smem_u32(const void* p) {
    unsigned r;
    asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(r) : "l"(p));
    return r;
}
extern "C" __global__ void sm90_misc(const unsigned* __restrict__ in, unsigned* __restrict__ out) {
    __shared__ __align__(128) unsigned short m[4 * 64];
    int lane = threadIdx.x & 31;
    int g = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned v = in[g];
    unsigned elected, leader;
    asm volatile("{ .reg .pred p; .reg .b32 l; elect.sync l|p, 0xffffffff; selp.u32 %0, 1, 0, p; mov.u32 %1, l; }"
                 : "=r"(elected), "=r"(leader));
    unsigned rsum, rmax;
    asm volatile("redux.sync.add.u32 %0, %1, 0xffffffff;" : "=r"(rsum) : "r"(v));
    asm volatile("redux.sync.max.s32 %0, %1, 0xffffffff;" : "=r"(rmax) : "r"(v));
    // stmatrix x4: each lane holds one 32-bit register per 8x8 matrix; lanes 8i..8i+7 give row addresses.
    unsigned r0 = v, r1 = v * 3u, r2 = ~v, r3 = v ^ 0x5a5a5a5au;
    if (threadIdx.x < 32) {
        int mi = lane >> 3, row = lane & 7;
        asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1,%2,%3,%4};"
                     :: "r"(smem_u32(&m[mi * 64 + row * 8])), "r"(r0), "r"(r1), "r"(r2), "r"(r3) : "memory");
    }
    __syncthreads();
    unsigned* o = out + g * 6;
    o[0] = elected;
    o[1] = leader;
    o[2] = rsum;
    o[3] = rmax;
    o[4] = m[(threadIdx.x * 2) & 255] | ((unsigned)m[(threadIdx.x * 2 + 1) & 255] << 16);
    o[5] = m[255 - (threadIdx.x & 255)];
}
