// Inline PTX multi-word arithmetic with carries: 128-bit add/sub (add.cc/addc/sub.cc/subc),
// mul.hi/mul.wide/mad.wide, and mad.lo.cc chains.
extern "C" __global__ void ptx_addc(const unsigned* __restrict__ a, const unsigned* __restrict__ b,
                                    unsigned* __restrict__ out) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    const unsigned* x = a + t * 4;
    const unsigned* y = b + t * 4;
    unsigned s0, s1, s2, s3, d0, d1, d2, d3;
    asm("add.cc.u32 %0, %4, %8;\n\t"
        "addc.cc.u32 %1, %5, %9;\n\t"
        "addc.cc.u32 %2, %6, %10;\n\t"
        "addc.u32 %3, %7, %11;"
        : "=r"(s0), "=r"(s1), "=r"(s2), "=r"(s3)
        : "r"(x[0]), "r"(x[1]), "r"(x[2]), "r"(x[3]), "r"(y[0]), "r"(y[1]), "r"(y[2]), "r"(y[3]));
    asm("sub.cc.u32 %0, %4, %8;\n\t"
        "subc.cc.u32 %1, %5, %9;\n\t"
        "subc.cc.u32 %2, %6, %10;\n\t"
        "subc.u32 %3, %7, %11;"
        : "=r"(d0), "=r"(d1), "=r"(d2), "=r"(d3)
        : "r"(x[0]), "r"(x[1]), "r"(x[2]), "r"(x[3]), "r"(y[0]), "r"(y[1]), "r"(y[2]), "r"(y[3]));
    unsigned hi, lo2, hi2;
    asm("mul.hi.u32 %0, %1, %2;" : "=r"(hi) : "r"(x[0]), "r"(y[0]));
    unsigned long long wide;
    asm("mul.wide.u32 %0, %1, %2;" : "=l"(wide) : "r"(x[1]), "r"(y[1]));
    unsigned long long mw;
    asm("mad.wide.s32 %0, %1, %2, %3;" : "=l"(mw) : "r"(x[2]), "r"(y[2]), "l"(wide));
    asm("mad.lo.cc.u32 %0, %2, %3, %4;\n\tmadc.hi.u32 %1, %2, %3, %5;"
        : "=r"(lo2), "=r"(hi2) : "r"(x[3]), "r"(y[3]), "r"(x[0]), "r"(y[0]));
    unsigned* o = out + t * 14;
    o[0] = s0; o[1] = s1; o[2] = s2; o[3] = s3;
    o[4] = d0; o[5] = d1; o[6] = d2; o[7] = d3;
    o[8] = hi; o[9] = (unsigned)wide; o[10] = (unsigned)(wide >> 32);
    o[11] = (unsigned)(mw ^ (mw >> 32));
    o[12] = lo2; o[13] = hi2;
}
