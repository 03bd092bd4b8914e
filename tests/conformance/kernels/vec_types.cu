// Vector loads/stores of every width: char4, short2, int2, int4, float4, double2, longlong2 and
// __ldg read-only loads.
extern "C" __global__ void vec_types(const int4* __restrict__ in, int4* __restrict__ out) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    int4 v = __ldg(&in[t]);
    const char4* c4 = (const char4*)&in[t];
    const short2* s2 = (const short2*)&in[t];
    const int2* i2 = (const int2*)&in[t];
    const double2* d2 = (const double2*)&in[t];
    const longlong2* l2 = (const longlong2*)&in[t];
    char4 c = c4[1];
    short2 s = s2[3];
    int2 i = __ldg(&i2[1]);
    double2 d = *d2;
    longlong2 l = __ldg(l2);
    int4 r;
    r.x = v.x + c.x + c.y * 3 + c.z * 5 + c.w * 7;
    r.y = v.y ^ (s.x * 11 + s.y);
    r.z = i.x - i.y + (int)(l.x >> 40) + (int)l.y;
    r.w = (d.x == d.x ? 1 : 2) + (d.y == d.y ? 4 : 8);
    out[t * 2] = r;
    float4 f = make_float4((float)r.x, (float)r.y * 0.5f, (float)r.z, __int_as_float(v.w & 0x3fffffff));
    ((float4*)out)[t * 2 + 1] = f;
}
