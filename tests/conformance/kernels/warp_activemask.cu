// __activemask() in converged code, after an early exit of some lanes, and in both sides of a
// data-dependent branch; __syncwarp with a partial mask.
extern "C" __global__ void warp_activemask(const int* __restrict__ in, unsigned* __restrict__ out) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    int lane = threadIdx.x & 31;
    unsigned* o = out + t * 4;
    o[0] = __activemask();
    if (lane >= 24) {
        o[1] = 0xffffffffu;
        o[2] = 0xffffffffu;
        o[3] = 0xffffffffu;
        return;
    }
    o[1] = __activemask();
    int v = in[t];
    unsigned m;
    if (v & 1) {
        m = __activemask();
    } else {
        m = __activemask() ^ 0x80000000u;
    }
    o[2] = m;
    __syncwarp(0x00ffffffu);
    o[3] = __activemask();
}
