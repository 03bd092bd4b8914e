// Register-heavy kernel without launch bounds; built with --maxrregcount=32 it spills to local
// memory.
extern "C" __global__ void reg_heavy(const float* __restrict__ in, float* __restrict__ out) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    float r[48];
#pragma unroll
    for (int i = 0; i < 48; i++) r[i] = in[t * 48 + i];
#pragma unroll
    for (int k = 0; k < 8; k++) {
#pragma unroll
        for (int i = 0; i < 48; i++) r[i] = r[i] * r[(i + k + 1) % 48] + r[(i * 7 + k) % 48] * 0.5f;
    }
#pragma unroll
    for (int i = 0; i < 48; i++) out[t * 48 + i] = r[i];
}
