// Shared-memory atomics (int add, float add of integers, CAS, min/max), block results written out.
extern "C" __global__ void atomic_shared(const int* __restrict__ in, int* __restrict__ out) {
    __shared__ int si[8];
    __shared__ float sf[4];
    __shared__ unsigned long long sl[2];
    if (threadIdx.x < 8) si[threadIdx.x] = threadIdx.x == 3 ? 0x7fffffff : 0;
    if (threadIdx.x < 4) sf[threadIdx.x] = 0.0f;
    if (threadIdx.x < 2) sl[threadIdx.x] = 0;
    __syncthreads();
    int v = in[blockIdx.x * blockDim.x + threadIdx.x];
    atomicAdd(&si[0], v);
    atomicAdd(&sf[threadIdx.x & 3], (float)(v & 63));
    atomicMax(&si[2], v);
    atomicMin(&si[3], v);
    atomicOr(&si[4], 1 << (v & 31));
    unsigned old = atomicCAS((unsigned*)&si[5], 0u, (unsigned)threadIdx.x + 1u);
    atomicAdd(&si[6], old == 0u);
    atomicAdd(&sl[0], (unsigned long long)(unsigned)v);
    atomicMax(&sl[1], (unsigned long long)(unsigned)v << 3);
    __syncthreads();
    int* o = out + blockIdx.x * 16;
    if (threadIdx.x < 8) o[threadIdx.x] = threadIdx.x == 5 ? (si[5] != 0) : si[threadIdx.x];
    if (threadIdx.x < 4) o[8 + threadIdx.x] = __float_as_int(sf[threadIdx.x]);
    if (threadIdx.x < 2) {
        o[12 + threadIdx.x * 2] = (int)sl[threadIdx.x];
        o[13 + threadIdx.x * 2] = (int)(sl[threadIdx.x] >> 32);
    }
}
