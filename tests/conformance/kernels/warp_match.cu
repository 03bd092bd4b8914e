// __match_any_sync / __match_all_sync on 32- and 64-bit keys (sm_70+).
extern "C" __global__ void warp_match(const int* __restrict__ in, unsigned* __restrict__ out) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    int lane = threadIdx.x & 31;
    const unsigned full = 0xffffffffu;
    int v = in[t];
    unsigned* o = out + t * 6;
    o[0] = __match_any_sync(full, v & 3);
    o[1] = __match_any_sync(full, (unsigned long long)(v & 7) << 40);
    int p0 = -1, p1 = -1;
    o[2] = __match_all_sync(full, (int)blockIdx.x, &p0);
    o[3] = (unsigned)p0;
    o[4] = __match_all_sync(full, lane < 16, &p1);
    o[5] = (unsigned)p1;
}
