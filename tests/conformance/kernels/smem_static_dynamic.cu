// 2064 bytes of static shared memory plus dynamic shared memory (launched with the device
// maximum minus the static part): checks that the two regions do not overlap.
extern "C" __global__ void smem_static_dynamic(const unsigned* __restrict__ in,
                                               unsigned* __restrict__ out, unsigned nwords) {
    __shared__ unsigned stat[516];
    extern __shared__ unsigned dyn[];
    for (unsigned i = threadIdx.x; i < 516; i += blockDim.x) stat[i] = 0xA5A50000u + i;
    const unsigned* src = in + (size_t)blockIdx.x * nwords;
    for (unsigned i = threadIdx.x; i < nwords; i += blockDim.x) dyn[i] = src[i];
    __syncthreads();
    unsigned* dst = out + (size_t)blockIdx.x * nwords;
    for (unsigned i = threadIdx.x; i < nwords; i += blockDim.x)
        dst[i] = dyn[nwords - 1 - i] + stat[i % 516];
}
