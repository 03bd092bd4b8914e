// __reduce_{add,min,max,and,or,xor}_sync (sm_80+), signed and unsigned, full and partial mask.
extern "C" __global__ void warp_reduce(const int* __restrict__ in, unsigned* __restrict__ out) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    int lane = threadIdx.x & 31;
    const unsigned full = 0xffffffffu;
    int v = in[t];
    unsigned u = (unsigned)v;
    unsigned* o = out + t * 10;
    o[0] = __reduce_add_sync(full, u);
    o[1] = __reduce_min_sync(full, u);
    o[2] = __reduce_max_sync(full, u);
    o[3] = (unsigned)__reduce_min_sync(full, v);
    o[4] = (unsigned)__reduce_max_sync(full, v);
    o[5] = __reduce_and_sync(full, u | 0x0f0f0000u);
    o[6] = __reduce_or_sync(full, u & 0x00ff00ffu);
    o[7] = __reduce_xor_sync(full, u);
    unsigned pa = 0x1234u, pm = 0x5678u;
    if (lane < 16) {
        pa = __reduce_add_sync(0x0000ffffu, u);
        pm = (unsigned)__reduce_max_sync(0x0000ffffu, v);
    }
    o[8] = pa;
    o[9] = pm;
}
