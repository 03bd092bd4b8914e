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

// Spins until *flag is non-zero or max_ns of GPU time pass (stream-order checks).
extern "C" __global__ void spin(const volatile unsigned* flag, unsigned long long max_ns) {
    unsigned long long t0, t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    do {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    } while (*flag == 0u && t - t0 < max_ns);
}

// Texture objects: out[i] = 2 * tex[i] + tex[i + n] (1-D, tex1Dfetch); out[y*w + x] =
// tex(x, y) + 3 * tex(x - 3, y + 1) (2-D, nearest-point at texel centers).
extern "C" __global__ void tex_read(unsigned long long tex, float* out, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = 2.0f * tex1Dfetch<float>(tex, (int)i) + tex1Dfetch<float>(tex, (int)(i + n));
}

extern "C" __global__ void tex2d_read(unsigned long long tex, float* out, unsigned w, unsigned h) {
    unsigned x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
    if (x < w && y < h)
        out[y * w + x] = tex2D<float>(tex, x + 0.5f, y + 0.5f) +
                         3.0f * tex2D<float>(tex, (float)x - 2.5f, (float)y + 1.5f);
}

// A __managed__ variable: managed memory of its own, reached by the kernel through its address
// table and by the host through the address cuModuleGetGlobal gives.
__managed__ unsigned g_managed[4] = {5u, 6u, 7u, 8u};

extern "C" __global__ void bump_managed(unsigned k) {
    if (blockIdx.x == 0 && threadIdx.x == 0) g_managed[k & 3u] += 100u;
}
