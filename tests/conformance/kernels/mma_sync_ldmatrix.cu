// Inline PTX tensor-core path: ldmatrix (.x4, .x2, .x2.trans) from shared memory and
// mma.sync.aligned.m16n8k16 (f16 and bf16 inputs, f32 accumulators). One warp per tile.
// Tile inputs (16-bit elements): A 16x16 row-major, Bt 8x16 (B column-major), Br 16x8 (B row-major).
__device__ __forceinline__ unsigned smem_u32(const void* p) {
    unsigned r;
    asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(r) : "l"(p));
    return r;
}
extern "C" __global__ void mma_sync_ldmatrix(const unsigned short* __restrict__ A,
                                             const unsigned short* __restrict__ Bt,
                                             const unsigned short* __restrict__ Br,
                                             const float* __restrict__ C,
                                             float* __restrict__ D, unsigned* __restrict__ regs) {
    __shared__ __align__(128) unsigned short sA[16 * 16];
    __shared__ __align__(128) unsigned short sBt[8 * 16];
    __shared__ __align__(128) unsigned short sBr[16 * 8];
    int lane = threadIdx.x;
    int tile = blockIdx.x;
    for (int i = lane; i < 256; i += 32) sA[i] = A[tile * 256 + i];
    for (int i = lane; i < 128; i += 32) { sBt[i] = Bt[tile * 128 + i]; sBr[i] = Br[tile * 128 + i]; }
    __syncwarp();
    unsigned a0, a1, a2, a3, b0, b1, c0, c1;
    int arow = (lane & 7) + 8 * ((lane >> 3) & 1);
    int acol = 8 * (lane >> 4);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(a0), "=r"(a1), "=r"(a2), "=r"(a3) : "r"(smem_u32(&sA[arow * 16 + acol])));
    int l16 = lane & 15;
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];"
                 : "=r"(b0), "=r"(b1) : "r"(smem_u32(&sBt[(l16 & 7) * 16 + 8 * (l16 >> 3)])));
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0,%1}, [%2];"
                 : "=r"(c0), "=r"(c1) : "r"(smem_u32(&sBr[l16 * 8])));
    unsigned* r = regs + (tile * 32 + lane) * 8;
    r[0] = a0; r[1] = a1; r[2] = a2; r[3] = a3; r[4] = b0; r[5] = b1; r[6] = c0; r[7] = c1;
    int gid = lane >> 2, tig = lane & 3;
    const float* c = C + tile * 128;
    float d0 = c[gid * 8 + tig * 2], d1 = c[gid * 8 + tig * 2 + 1];
    float d2 = c[(gid + 8) * 8 + tig * 2], d3 = c[(gid + 8) * 8 + tig * 2 + 1];
    float e0 = d0, e1 = d1, e2 = d2, e3 = d3;
    float g0 = d0, g1 = d1, g2 = d2, g3 = d3;
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                 : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3)
                 : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                 : "+f"(e0), "+f"(e1), "+f"(e2), "+f"(e3)
                 : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(c0), "r"(c1));
    // Same registers read as bf16 (bits masked so every value stays finite).
    unsigned m = 0x3fff3fffu;
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                 : "+f"(g0), "+f"(g1), "+f"(g2), "+f"(g3)
                 : "r"(a0 & m), "r"(a1 & m), "r"(a2 & m), "r"(a3 & m), "r"(b0 & m), "r"(b1 & m));
    float* d = D + tile * 384;
    d[gid * 8 + tig * 2] = d0; d[gid * 8 + tig * 2 + 1] = d1;
    d[(gid + 8) * 8 + tig * 2] = d2; d[(gid + 8) * 8 + tig * 2 + 1] = d3;
    d += 128;
    d[gid * 8 + tig * 2] = e0; d[gid * 8 + tig * 2 + 1] = e1;
    d[(gid + 8) * 8 + tig * 2] = e2; d[(gid + 8) * 8 + tig * 2 + 1] = e3;
    d += 128;
    d[gid * 8 + tig * 2] = g0; d[gid * 8 + tig * 2 + 1] = g1;
    d[(gid + 8) * 8 + tig * 2] = g2; d[(gid + 8) * 8 + tig * 2 + 1] = g3;
}
