// cp.async through cuda_pipeline.h primitives: a two-stage pipeline over a 16 KiB input per block.
#include <cuda_pipeline.h>
extern "C" __global__ void cp_async_pipeline(const float4* __restrict__ in, float* __restrict__ out) {
    __shared__ __align__(16) float4 stage[2][128];
    int tid = threadIdx.x;  // 128 threads
    const float4* src = in + blockIdx.x * 1024;  // 8 chunks of 128 float4
    float acc = 0.0f;
    __pipeline_memcpy_async(&stage[0][tid], &src[tid], sizeof(float4));
    __pipeline_commit();
    for (int c = 0; c < 8; c++) {
        if (c + 1 < 8)
            __pipeline_memcpy_async(&stage[(c + 1) & 1][tid], &src[(c + 1) * 128 + tid], sizeof(float4));
        __pipeline_commit();
        __pipeline_wait_prior(1);
        __syncthreads();
        float4 v = stage[c & 1][(tid * 7) & 127];
        acc = acc * 0.5f + v.x + v.y * 2.0f + v.z * 3.0f + v.w * 4.0f;
        __syncthreads();
    }
    out[blockIdx.x * 128 + tid] = acc;
}
