// atomicMin / atomicMax on int, unsigned, long long and unsigned long long.
extern "C" __global__ void atomic_minmax(const int* __restrict__ in, int* i32, unsigned* u32,
                                         long long* i64, unsigned long long* u64) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    int v = in[t];
    atomicMin(&i32[t & 3], v);
    atomicMax(&i32[4 + (t & 3)], v);
    atomicMin(&u32[t & 3], (unsigned)v);
    atomicMax(&u32[4 + (t & 3)], (unsigned)v);
    long long w = (long long)v * 0x12345ll;
    atomicMin(&i64[t & 3], w);
    atomicMax(&i64[4 + (t & 3)], w);
    atomicMin(&u64[t & 3], (unsigned long long)w);
    atomicMax(&u64[4 + (t & 3)], (unsigned long long)w);
}
