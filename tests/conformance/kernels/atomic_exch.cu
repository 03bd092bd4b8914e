// atomicExch (32-bit, 64-bit, float): per-thread slots (deterministic old values) and a contended
// flag where exactly one thread sees the initial value.
extern "C" __global__ void atomic_exch(const int* __restrict__ in, int* slots, unsigned* oldv,
                                       unsigned long long* slots64, float* fslots, unsigned* winners) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    int v = in[t];
    oldv[t] = (unsigned)atomicExch(&slots[t], v);
    unsigned long long o = atomicExch(&slots64[t], (unsigned long long)v * 0x100000001ull);
    oldv[t] ^= (unsigned)(o >> 7);
    float fo = atomicExch(&fslots[t], (float)v);
    oldv[t] += __float_as_uint(fo);
    unsigned prev = atomicExch(&winners[1], 7u);
    atomicAdd(&winners[0], prev == 0u);
}
