// 33 scalar parameters of mixed types (many small parameters, odd offsets).
extern "C" __global__ void param_many(
    int a0, float a1, char a2, long long a3, short a4, double a5, int a6, unsigned char a7,
    float a8, int a9, long long a10, char a11, int a12, float a13, short a14, int a15,
    double a16, int a17, char a18, unsigned a19, float a20, long long a21, int a22, short a23,
    char a24, int a25, float a26, double a27, int a28, unsigned short a29, int a30, char a31,
    unsigned* __restrict__ out) {
    int t = threadIdx.x;
    long long acc = 0;
    acc = acc * 31 + a0; acc = acc * 31 + __float_as_int(a1); acc = acc * 31 + a2;
    acc = acc * 31 + a3; acc = acc * 31 + a4; acc = acc * 31 + __double_as_longlong(a5);
    acc = acc * 31 + a6; acc = acc * 31 + a7; acc = acc * 31 + __float_as_int(a8);
    acc = acc * 31 + a9; acc = acc * 31 + a10; acc = acc * 31 + a11; acc = acc * 31 + a12;
    acc = acc * 31 + __float_as_int(a13); acc = acc * 31 + a14; acc = acc * 31 + a15;
    acc = acc * 31 + __double_as_longlong(a16); acc = acc * 31 + a17; acc = acc * 31 + a18;
    acc = acc * 31 + a19; acc = acc * 31 + __float_as_int(a20); acc = acc * 31 + a21;
    acc = acc * 31 + a22; acc = acc * 31 + a23; acc = acc * 31 + a24; acc = acc * 31 + a25;
    acc = acc * 31 + __float_as_int(a26); acc = acc * 31 + __double_as_longlong(a27);
    acc = acc * 31 + a28; acc = acc * 31 + a29; acc = acc * 31 + a30; acc = acc * 31 + a31;
    out[t * 2] = (unsigned)(acc + t);
    out[t * 2 + 1] = (unsigned)((acc + t) >> 32);
}
