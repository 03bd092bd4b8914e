// Inline PTX bit manipulation: prmt (several modes), lop3 with different truth tables, bfe/bfi,
// brev, popc, clz, bfind, shf (funnel shifts), plus the matching CUDA intrinsics.
extern "C" __global__ void ptx_bits(const unsigned* __restrict__ a, const unsigned* __restrict__ b,
                                    unsigned* __restrict__ out) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned x = a[t], y = b[t], z = x * 2654435761u ^ y;
    unsigned r[16];
    asm("prmt.b32 %0, %1, %2, 0x5140;" : "=r"(r[0]) : "r"(x), "r"(y));
    asm("prmt.b32 %0, %1, %2, %3;" : "=r"(r[1]) : "r"(x), "r"(y), "r"(z & 0xffff));
    asm("prmt.b32.ecl %0, %1, %2, %3;" : "=r"(r[2]) : "r"(x), "r"(y), "r"(z));
    asm("prmt.b32.rc16 %0, %1, %2, %3;" : "=r"(r[3]) : "r"(x), "r"(y), "r"(z));
    asm("lop3.b32 %0, %1, %2, %3, 0x96;" : "=r"(r[4]) : "r"(x), "r"(y), "r"(z));
    asm("lop3.b32 %0, %1, %2, %3, 0xe8;" : "=r"(r[5]) : "r"(x), "r"(y), "r"(z));
    asm("lop3.b32 %0, %1, %2, %3, 0x1b;" : "=r"(r[6]) : "r"(x), "r"(y), "r"(z));
    asm("bfe.u32 %0, %1, %2, %3;" : "=r"(r[7]) : "r"(x), "r"(y & 31), "r"(z & 31));
    asm("bfe.s32 %0, %1, %2, %3;" : "=r"(r[8]) : "r"(x), "r"(y & 15), "r"((z & 15) + 1));
    asm("bfi.b32 %0, %1, %2, %3, %4;" : "=r"(r[9]) : "r"(x), "r"(y), "r"(z & 31), "r"((z >> 5) & 31));
    asm("brev.b32 %0, %1;" : "=r"(r[10]) : "r"(x));
    asm("popc.b32 %0, %1;" : "=r"(r[11]) : "r"(y));
    asm("bfind.u32 %0, %1;" : "=r"(r[12]) : "r"(z));
    asm("shf.l.wrap.b32 %0, %1, %2, %3;" : "=r"(r[13]) : "r"(x), "r"(y), "r"(z));
    r[14] = __byte_perm(x, y, z) ^ __funnelshift_r(x, y, z) ^ __clz(x) ^ __ffs(y);
    r[15] = __brev(z) + __popc(x ^ y) + __sad(x, y, z) + __usad(x & 0xff, y & 0xff, 3);
    for (int i = 0; i < 16; i++) out[t * 16 + i] = r[i];
}
