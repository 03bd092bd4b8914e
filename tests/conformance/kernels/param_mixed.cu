// Scalars of every size and alignment, vector types with 16-byte alignment, padding between them.
struct __align__(16) V4 { float x, y, z, w; };
struct D2 { double x, y; };
extern "C" __global__ void param_mixed(char c, short s, int i, long long ll, float f, double d,
                                       const int* p, V4 v4, unsigned char uc, D2 d2, char c2,
                                       unsigned long long ull, unsigned* __restrict__ out) {
    if (threadIdx.x != 0 || blockIdx.x != 0) return;
    out[0] = (unsigned)(int)c;
    out[1] = (unsigned)(int)s;
    out[2] = (unsigned)i;
    out[3] = (unsigned)ll;
    out[4] = (unsigned)(ll >> 32);
    out[5] = __float_as_uint(f);
    out[6] = (unsigned)__double2loint(d);
    out[7] = (unsigned)__double2hiint(d);
    out[8] = (unsigned)p[0];
    out[9] = (unsigned)p[1];
    out[10] = __float_as_uint(v4.x);
    out[11] = __float_as_uint(v4.y);
    out[12] = __float_as_uint(v4.z);
    out[13] = __float_as_uint(v4.w);
    out[14] = uc;
    out[15] = (unsigned)__double2loint(d2.x);
    out[16] = (unsigned)__double2hiint(d2.y);
    out[17] = (unsigned)(int)c2;
    out[18] = (unsigned)ull;
    out[19] = (unsigned)(ull >> 32);
}
