// atomicAdd on __nv_bfloat162 and __nv_bfloat16 with values whose partial sums stay exactly
// representable in bfloat16 (integers <= 256), so the result is compared exactly.
#include <cuda_bf16.h>
extern "C" __global__ void atomic_bf162(const int* __restrict__ in, __nv_bfloat162* b2,
                                        __nv_bfloat16* b) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    int v = in[t] & 1;
    atomicAdd(&b2[t & 7], __halves2bfloat162(__int2bfloat16_rn(v), __int2bfloat16_rn(1)));
    atomicAdd(&b[t & 7], __int2bfloat16_rn(1 - v));
}
