// Dynamic shared memory of a size given at launch (nwords 32-bit words); used for a small odd
// size and for the largest size the device allows.
extern "C" __global__ void smem_dynamic(const unsigned* __restrict__ in, unsigned* __restrict__ out,
                                        unsigned nwords) {
    extern __shared__ unsigned dyn[];
    const unsigned* src = in + (size_t)blockIdx.x * nwords;
    for (unsigned i = threadIdx.x; i < nwords; i += blockDim.x) dyn[i] = src[i] + i;
    __syncthreads();
    unsigned* dst = out + (size_t)blockIdx.x * nwords;
    for (unsigned i = threadIdx.x; i < nwords; i += blockDim.x)
        dst[i] = dyn[(unsigned)(((unsigned long long)i * 31 + 7) % nwords)] ^ dyn[nwords - 1 - i];
}
