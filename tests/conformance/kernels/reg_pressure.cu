// Register-pressure kernel without launch bounds: 96 live floats per thread, more than any
// register budget holds, so ptxas uses every register --maxrregcount allows and spills the rest.
extern "C" __global__ void reg_pressure(const float* __restrict__ in, float* __restrict__ out) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    float r[96];
#pragma unroll
    for (int i = 0; i < 96; i++) r[i] = in[t * 96 + i];
#pragma unroll
    for (int k = 0; k < 4; k++) {
#pragma unroll
        for (int i = 0; i < 96; i++) r[i] = fmaf(r[i], r[(i * 5 + k + 1) % 96], r[(i * 11 + k) % 96]);
    }
#pragma unroll
    for (int i = 0; i < 96; i++) out[t * 96 + i] = r[i];
}
