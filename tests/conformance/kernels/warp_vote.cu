// __ballot_sync, __any_sync, __all_sync with full and partial masks (inside a branch).
extern "C" __global__ void warp_vote(const int* __restrict__ in, unsigned* __restrict__ out) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    int lane = threadIdx.x & 31;
    const unsigned full = 0xffffffffu;
    int v = in[t];
    unsigned* o = out + t * 8;
    o[0] = __ballot_sync(full, v & 1);
    o[1] = __ballot_sync(full, v > 0);
    o[2] = __any_sync(full, (v & 0xff) == 7);
    o[3] = __all_sync(full, v != 12345);
    o[4] = __all_sync(full, v & 1);
    unsigned pb = 0xdeadu, pa = 0xbeefu, pl = 0xcafeu;
    if (lane < 20) {
        pb = __ballot_sync(0x000fffffu, v & 2);
        pa = __any_sync(0x000fffffu, (v & 0xf) == 3);
        pl = __all_sync(0x000fffffu, lane < 20);
    }
    o[5] = pb;
    o[6] = pa;
    o[7] = pl;
}
