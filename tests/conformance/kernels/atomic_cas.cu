// atomicCAS 32- and 64-bit: a CAS loop that builds a sum (order-independent result), and a CAS
// election (exactly one winner per slot).
extern "C" __global__ void atomic_cas(const int* __restrict__ in, unsigned* s32,
                                      unsigned long long* s64, unsigned* winners) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned v = (unsigned)in[t];
    unsigned* p = &s32[t & 3];
    unsigned old = *p, assumed;
    do {
        assumed = old;
        old = atomicCAS(p, assumed, assumed + (v & 0xffff));
    } while (old != assumed);
    unsigned long long* q = &s64[t & 3];
    unsigned long long o64 = *q, a64;
    do {
        a64 = o64;
        o64 = atomicCAS(q, a64, a64 + ((unsigned long long)v << 8));
    } while (o64 != a64);
    // election: slot starts at 0, the first thread to CAS it to 1 wins
    unsigned won = atomicCAS(&winners[4 + (t & 3)], 0u, 1u) == 0u;
    atomicAdd(&winners[t & 3], won);
}
