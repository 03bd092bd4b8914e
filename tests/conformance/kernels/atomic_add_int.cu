// atomicAdd on int and unsigned (global), atomicAdd_block, atomicSub; integer sums are
// order-independent, so the results are exact.
extern "C" __global__ void atomic_add_int(const int* __restrict__ in, int* sums, unsigned* usums) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    int v = in[t];
    atomicAdd(&sums[t & 15], v);
    atomicAdd(&usums[t % 7], (unsigned)v * 3u);
    atomicAdd_block(&sums[16 + blockIdx.x % 8], 1);
    atomicSub(&sums[24], v & 0xff);
    atomicAdd_system(&usums[7], 1u);
}
