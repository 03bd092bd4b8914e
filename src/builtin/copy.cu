// Built-in kernels of libtegragpu, compiled to cubins by scripts/gen_cubins.py and embedded in
// the library (src/builtin/mod.rs). The emulated GPU has a reference implementation of each
// (src/emu/kernels.rs), identified by the exact code bytes.

// tg_copy: dst[0..n) = src[0..n) (ranges must not overlap), for copies on compute queues
// (the SM copy path). The range is cut into 4 KiB chunks and each 256-thread block copies whole
// chunks (chunk blockIdx.x, then every gridDim.x-th after it), so any grid of at least one block
// copies everything; the host launches one block per chunk, which keeps the chunks in flight
// close together in memory (measured on the H200: ~2.14 TB/s at 1 GiB against ~2.0 TB/s for a
// grid-stride loop over a grid of a few blocks per SM). A full chunk moves as one 16-byte
// vector per thread when both addresses are 16-byte aligned, four 4-byte words per thread when
// 4-byte aligned, else sixteen bytes per thread; the last, partial chunk uses the widest vector
// that the alignment allows and bytes for its tail.
typedef unsigned long long u64;

#define TG_COPY_BLOCK 256
#define TG_COPY_CHUNK 4096

// Copy len bytes (len <= TG_COPY_CHUNK) of one chunk whose addresses are aligned as `align` says.
__device__ __forceinline__ void copy_partial(unsigned char* __restrict__ d,
                                             const unsigned char* __restrict__ s, unsigned len,
                                             u64 align) {
    unsigned t = threadIdx.x, done = 0;
    if ((align & 15) == 0) {
        for (unsigned i = t; i < len / 16; i += TG_COPY_BLOCK)
            ((uint4*)d)[i] = ((const uint4*)s)[i];
        done = len & ~15u;
    } else if ((align & 3) == 0) {
        for (unsigned i = t; i < len / 4; i += TG_COPY_BLOCK)
            ((unsigned*)d)[i] = ((const unsigned*)s)[i];
        done = len & ~3u;
    }
    for (unsigned i = done + t; i < len; i += TG_COPY_BLOCK) d[i] = s[i];
}

extern "C" __global__ void __launch_bounds__(TG_COPY_BLOCK)
tg_copy(unsigned char* __restrict__ dst, const unsigned char* __restrict__ src, u64 n) {
    const u64 chunks = (n + TG_COPY_CHUNK - 1) / TG_COPY_CHUNK;
    const u64 align = (u64)dst | (u64)src;
    const unsigned t = threadIdx.x;
    for (u64 c = blockIdx.x; c < chunks; c += gridDim.x) {
        const u64 base = c * TG_COPY_CHUNK;
        unsigned char* __restrict__ d = dst + base;
        const unsigned char* __restrict__ s = src + base;
        if (n - base < TG_COPY_CHUNK) {
            copy_partial(d, s, (unsigned)(n - base), align);
        } else if ((align & 15) == 0) {
            ((uint4*)d)[t] = ((const uint4*)s)[t];
        } else if ((align & 3) == 0) {
            const unsigned* s4 = (const unsigned*)s;
            unsigned* d4 = (unsigned*)d;
            unsigned a = s4[t], b = s4[t + 256], e = s4[t + 512], f = s4[t + 768];
            d4[t] = a;
            d4[t + 256] = b;
            d4[t + 512] = e;
            d4[t + 768] = f;
        } else {
            unsigned char v[16];
#pragma unroll
            for (int k = 0; k < 16; k++) v[k] = s[t + 256 * k];
#pragma unroll
            for (int k = 0; k < 16; k++) d[t + 256 * k] = v[k];
        }
    }
}
