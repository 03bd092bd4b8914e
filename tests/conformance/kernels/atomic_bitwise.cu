// atomicAnd / atomicOr / atomicXor on 32- and 64-bit words, atomicInc / atomicDec wrap-around.
extern "C" __global__ void atomic_bitwise(const int* __restrict__ in, unsigned* w32,
                                          unsigned long long* w64) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned v = (unsigned)in[t];
    atomicAnd(&w32[0], v | 0x80000001u);
    atomicOr(&w32[1], v & 0x01010101u << (t & 7));
    atomicXor(&w32[2], v);
    atomicInc(&w32[3], 100u);
    atomicDec(&w32[4], 77u);
    unsigned long long x = ((unsigned long long)v << 32) | (v * 2654435761u);
    atomicAnd(&w64[0], x | 0x8000000000000001ull);
    atomicOr(&w64[1], x & (0x0101010101010101ull << (t & 7)));
    atomicXor(&w64[2], x);
}
