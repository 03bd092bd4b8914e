// 16-bit atomicCAS on unsigned short (sm_70+): CAS loops incrementing 16-bit counters that share
// 32-bit words with their neighbours.
extern "C" __global__ void atomic_cas16(const int* __restrict__ in, unsigned short* c) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned short inc = (unsigned short)(in[t] & 7);
    unsigned short* p = &c[t & 7];
    unsigned short old = *p, assumed;
    do {
        assumed = old;
        old = atomicCAS(p, assumed, (unsigned short)(assumed + inc));
    } while (old != assumed);
}
