// The device heap under load: every thread allocates blocks of several sizes, fills and reads
// them, frees them and allocates again (freed blocks come back); the returned pointers are
// 16-byte aligned; a request larger than the heap returns NULL.
extern "C" __global__ void malloc_stress(const unsigned* __restrict__ in, unsigned* __restrict__ out) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned acc = 0, nulls = 0;
    for (int round = 0; round < 3; round++) {
        unsigned n = 4 + ((in[t] + round * 7) % 29);  // 4 .. 32 words
        unsigned* p = (unsigned*)malloc(n * sizeof(unsigned));
        if (!p) {
            nulls++;
            continue;
        }
        if (((unsigned long long)p & 15) != 0) acc |= 0x80000000u;
        for (unsigned i = 0; i < n; i++) p[i] = in[t] * (i + 1) + round;
        for (unsigned i = 0; i < n; i++) acc += p[(i * 3) % n];
        free(p);
    }
    void* big = malloc((size_t)1 << 30);  // more than the default 8 MiB heap
    if (big) {
        nulls += 100;
        free(big);
    }
    out[t] = acc;
    out[blockDim.x * gridDim.x + t] = nulls;
}
