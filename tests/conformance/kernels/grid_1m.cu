// A grid of 2^20 blocks in x (one value per block, warp-reduced).
extern "C" __global__ void grid_1m(unsigned* __restrict__ out, unsigned salt) {
    unsigned b = blockIdx.x;
    unsigned h = (b * 32u + threadIdx.x) * 2654435761u ^ salt;
    h ^= h >> 15;
    unsigned s = __reduce_add_sync(0xffffffffu, h);
    if (threadIdx.x == 0) out[b] = s ^ gridDim.x;
}
