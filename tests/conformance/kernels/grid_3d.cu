// 3-D grid and 3-D block indexing: every thread writes its own coordinates and the dimensions.
extern "C" __global__ void grid_3d(unsigned* __restrict__ out) {
    unsigned bl = (blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
    unsigned tl = (threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;
    unsigned g = bl * (blockDim.x * blockDim.y * blockDim.z) + tl;
    out[g * 3] = blockIdx.x | (blockIdx.y << 10) | (blockIdx.z << 20);
    out[g * 3 + 1] = threadIdx.x | (threadIdx.y << 10) | (threadIdx.z << 20);
    out[g * 3 + 2] = gridDim.x ^ (gridDim.y << 8) ^ (gridDim.z << 16) ^ (blockDim.x << 24) ^ (blockDim.y << 4) ^ (blockDim.z << 12);
}
