// Kernels of the CUDA interop test (tests/interop/cuda_interop.c): compiled once to a cubin
// for the GPU there (nvcc -cubin), loaded both by NVIDIA's libcuda (cuModuleLoad) and by
// libtegragpu (tg_module_load_file), so that both drivers run the same code on the same memory.

// The GPU's nanosecond timer.
__device__ static unsigned long long now_ns() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

// p[i] = i * mul + add for i < n, after each block has spun for `spin_ns` nanoseconds: a slow
// writer, so that a reader that does not wait for it sees the old values.
extern "C" __global__ void fill_affine(unsigned *p, unsigned n, unsigned mul, unsigned add,
                                       unsigned long long spin_ns) {
    if (spin_ns) {
        unsigned long long t0 = now_ns();
        while (now_ns() - t0 < spin_ns) {
        }
    }
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        p[i] = i * mul + add;
}

// p[i] = p[i] * mul + add for i < n.
extern "C" __global__ void scale_add(unsigned *p, unsigned n, unsigned mul, unsigned add) {
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        p[i] = p[i] * mul + add;
}
