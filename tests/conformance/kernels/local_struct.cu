// An array of structs on the stack, written and read through data-dependent indices, plus a
// local double array (8-byte aligned stack slots).
struct Rec { int a; short b; char c; double d; };
extern "C" __global__ void local_struct(const int* __restrict__ in, unsigned* __restrict__ out) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    Rec recs[20];
    double acc[12];
    int x = in[t];
    for (int i = 0; i < 20; i++) {
        recs[i].a = x + i * 17;
        recs[i].b = (short)(x >> (i & 7));
        recs[i].c = (char)(i * 3 + x);
        recs[i].d = (double)(x ^ i) * 0.5;
    }
    for (int i = 0; i < 12; i++) acc[i] = 0.0;
    for (int k = 0; k < 40; k++) {
        int j = (x + k * 7) % 20;
        if (j < 0) j += 20;
        Rec r = recs[j];
        acc[(r.a & 0x7fffffff) % 12] += r.d + r.b + r.c;
        recs[(j + 3) % 20].a ^= r.b;
    }
    double s = 0;
    for (int i = 0; i < 12; i++) s = s * 1.5 + acc[i];
    out[t * 2] = (unsigned)__double2loint(s);
    out[t * 2 + 1] = (unsigned)__double2hiint(s);
}
