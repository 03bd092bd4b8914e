// Block of 4 x 4 x 64 threads (z at its maximum, 1024 in all) and a 2-D block of 32 x 32.
extern "C" __global__ void block_3d_max(const int* __restrict__ in, int* __restrict__ out) {
    __shared__ int s[1024];
    int tl = (threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;
    int n = blockDim.x * blockDim.y * blockDim.z;
    s[tl] = in[blockIdx.x * n + tl];
    __syncthreads();
    int v = s[(tl * 29 + threadIdx.z) % n] - s[n - 1 - tl];
    out[blockIdx.x * n + tl] = v + (int)(threadIdx.z * 1000 + threadIdx.y * 10 + threadIdx.x);
}
