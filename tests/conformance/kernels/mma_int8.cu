// Inline PTX mma.sync.aligned.m16n8k32 s8 x s8 -> s32 (exact integer results), fragments loaded
// straight from global memory. A 16x32 row-major, Bt 8x32 (B column-major), C/D 16x8 int.
extern "C" __global__ void mma_int8(const signed char* __restrict__ A, const signed char* __restrict__ Bt,
                                    const int* __restrict__ C, int* __restrict__ D) {
    int lane = threadIdx.x, tile = blockIdx.x;
    int gid = lane >> 2, tig = lane & 3;
    const signed char* a = A + tile * 512;
    const signed char* b = Bt + tile * 256;
    const int* c = C + tile * 128;
    unsigned a0 = *(const unsigned*)(a + gid * 32 + tig * 4);
    unsigned a1 = *(const unsigned*)(a + (gid + 8) * 32 + tig * 4);
    unsigned a2 = *(const unsigned*)(a + gid * 32 + 16 + tig * 4);
    unsigned a3 = *(const unsigned*)(a + (gid + 8) * 32 + 16 + tig * 4);
    unsigned b0 = *(const unsigned*)(b + gid * 32 + tig * 4);
    unsigned b1 = *(const unsigned*)(b + gid * 32 + 16 + tig * 4);
    int d0 = c[gid * 8 + tig * 2], d1 = c[gid * 8 + tig * 2 + 1];
    int d2 = c[(gid + 8) * 8 + tig * 2], d3 = c[(gid + 8) * 8 + tig * 2 + 1];
    asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                 : "+r"(d0), "+r"(d1), "+r"(d2), "+r"(d3)
                 : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
    int* d = D + tile * 128;
    d[gid * 8 + tig * 2] = d0; d[gid * 8 + tig * 2 + 1] = d1;
    d[(gid + 8) * 8 + tig * 2] = d2; d[(gid + 8) * 8 + tig * 2 + 1] = d3;
}
