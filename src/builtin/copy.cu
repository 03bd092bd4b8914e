// Built-in kernels of libtegragpu, compiled to cubins by scripts/gen_cubins.py and embedded in
// the library (src/builtin/mod.rs). The emulated GPU has a reference implementation of each
// (src/emu/kernels.rs), identified by the exact code bytes.

// tg_copy: dst[0..n) = src[0..n) (ranges must not overlap), for copies on compute queues
// (the SM copy path). Every thread walks the range with a grid-wide stride, so any grid of at
// least one block copies everything; the host picks the grid for bandwidth. 16-byte loads and
// stores when both addresses are 16-byte aligned, 4-byte when 4-byte aligned, else bytes; the
// tail past the last whole vector is copied byte by byte.
typedef unsigned long long u64;

template <typename T>
__device__ __forceinline__ u64 copy_vec(T* __restrict__ d, const T* __restrict__ s, u64 count,
                                        u64 tid, u64 stride) {
    u64 i = tid;
    for (; i + 3 * stride < count; i += 4 * stride) {
        T a = s[i];
        T b = s[i + stride];
        T c = s[i + 2 * stride];
        T e = s[i + 3 * stride];
        d[i] = a;
        d[i + stride] = b;
        d[i + 2 * stride] = c;
        d[i + 3 * stride] = e;
    }
    for (; i < count; i += stride) d[i] = s[i];
    return count * sizeof(T);
}

extern "C" __global__ void __launch_bounds__(256)
tg_copy(unsigned char* __restrict__ dst, const unsigned char* __restrict__ src, u64 n) {
    u64 tid = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    u64 stride = (u64)gridDim.x * blockDim.x;
    u64 align = (u64)dst | (u64)src;
    u64 done = 0;
    if ((align & 15) == 0) {
        done = copy_vec((uint4*)dst, (const uint4*)src, n >> 4, tid, stride);
    } else if ((align & 3) == 0) {
        done = copy_vec((unsigned*)dst, (const unsigned*)src, n >> 2, tid, stride);
    }
    for (u64 i = done + tid; i < n; i += stride) dst[i] = src[i];
}

