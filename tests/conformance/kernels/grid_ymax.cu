// Grid with y = 65535 (the maximum) and z = 2.
extern "C" __global__ void grid_ymax(unsigned* __restrict__ out) {
    unsigned idx = blockIdx.z * gridDim.y + blockIdx.y;
    unsigned v = __reduce_xor_sync(0xffffffffu, threadIdx.x * idx + blockIdx.z);
    if (threadIdx.x == 0) out[idx] = v ^ (idx << 1) ^ (gridDim.y << 3);
}
