// f16 / f16x2 / bf16x2 arithmetic through inline PTX only (no headers): fma.rn.f16x2,
// cvt.rn.f16.f32, min/max, and the bf16x2 fma.
extern "C" __global__ void half_ptx(const unsigned* __restrict__ a, const unsigned* __restrict__ b,
                                    const float* __restrict__ f, unsigned* __restrict__ out) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned x = a[t], y = b[t], r0, r1, r2, r3, r4;
    asm("fma.rn.f16x2 %0, %1, %2, %3;" : "=r"(r0) : "r"(x), "r"(y), "r"(x));
    asm("mul.rn.f16x2 %0, %1, %2;" : "=r"(r1) : "r"(x), "r"(y));
    asm("max.f16x2 %0, %1, %2;" : "=r"(r2) : "r"(x), "r"(y));
    unsigned short h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f[t]));
    float back;
    asm("cvt.f32.f16 %0, %1;" : "=f"(back) : "h"((unsigned short)(x & 0xffff)));
    unsigned xb = x & 0x3fff3fffu, yb = y & 0x3fff3fffu;  // keep bf16 values finite
    asm("fma.rn.bf16x2 %0, %1, %2, %3;" : "=r"(r3) : "r"(xb), "r"(yb), "r"(yb));
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r4) : "f"(f[t]), "f"(back));
    unsigned* o = out + t * 7;
    o[0] = r0;
    o[1] = r1;
    o[2] = r2;
    o[3] = h;
    o[4] = __float_as_uint(back);
    o[5] = r3;
    o[6] = r4;
}
