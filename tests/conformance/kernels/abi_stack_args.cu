// Non-inlined device functions with many arguments and large by-value structs (arguments passed
// partly on the stack), returning a struct by value.
struct S64 { int v[16]; };
struct R { long long a; int b; float c; };
__device__ __noinline__ R callee(S64 s, int a0, int a1, int a2, int a3, int a4, int a5, int a6,
                                 int a7, double d0, double d1, S64 u, int a8) {
    R r;
    long long acc = 0;
    for (int i = 0; i < 16; i++) acc = acc * 7 + s.v[i] - u.v[15 - i];
    r.a = acc + a0 + a1 * 2 + a2 * 3 + a3 * 4 + a4 * 5 + a5 * 6 + a6 * 7 + a7 * 8 + a8 * 9;
    r.b = (int)(d0 * 10.0) ^ (int)(d1 * 100.0);
    r.c = (float)(d0 + d1) + (float)a8;
    return r;
}
extern "C" __global__ void abi_stack_args(const int* __restrict__ in, unsigned* __restrict__ out) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    S64 s, u;
    int x = in[t];
    for (int i = 0; i < 16; i++) { s.v[i] = x * (i + 1); u.v[i] = x ^ (i * 977); }
    R r = callee(s, x, x + 1, x + 2, x + 3, x + 4, x + 5, x + 6, x + 7, x * 0.5, x * 0.25, u, t);
    out[t * 4] = (unsigned)r.a;
    out[t * 4 + 1] = (unsigned)(r.a >> 32);
    out[t * 4 + 2] = (unsigned)r.b;
    out[t * 4 + 3] = __float_as_uint(r.c);
}
