// Kernels for the differential test of libtegragpu's libcuda against NVIDIA's
// (cuda/tests/c/difftest.c); compiled on the device machine by scripts/cuda-facade-device-run.sh.

extern "C" __global__ void axpy(float a, const float* x, float* y, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}

extern "C" __global__ void inc(unsigned long long* p, unsigned long long by) {
    if (blockIdx.x == 0 && threadIdx.x == 0) p[0] += by;
}

extern "C" __global__ void iota(unsigned* p, unsigned base, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) p[i] = base + i * 3u;
}

// out[blockIdx.x] = sum of in over the block; blockDim.x * 4 bytes of dynamic shared memory.
extern "C" __global__ void block_sum(const unsigned* in, unsigned* out) {
    extern __shared__ unsigned s[];
    unsigned t = threadIdx.x;
    s[t] = in[blockIdx.x * blockDim.x + t];
    __syncthreads();
    for (unsigned k = blockDim.x / 2; k > 0; k >>= 1) {
        if (t < k) s[t] += s[t + k];
        __syncthreads();
    }
    if (t == 0) out[blockIdx.x] = s[0];
}

__device__ unsigned g_table[16];

extern "C" __global__ void read_table(unsigned* out) {
    out[threadIdx.x] = g_table[threadIdx.x & 15u] * 2u;
}
