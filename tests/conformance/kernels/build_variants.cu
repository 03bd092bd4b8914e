// Shared by the build-flag cases (-G, -lineinfo, --maxrregcount=32): loops, a device function,
// a local array, a shared array, mixed int/float math.
__device__ __noinline__ float mix(float a, int b) { return a * 0.75f + (float)(b & 255); }
extern "C" __global__ void build_variants(const float* __restrict__ in, const int* __restrict__ idx,
                                          float* __restrict__ out) {
    __shared__ float s[128];
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    float loc[24];
    float x = in[t];
    for (int i = 0; i < 24; i++) loc[i] = x * (float)(i + 1) - (float)i;
    s[threadIdx.x] = x;
    __syncthreads();
    float acc = 0.0f;
    int k = idx[t];
    for (int i = 0; i < 32; i++) {
        acc = mix(acc + loc[(k + i) % 24], k + i);
        acc += s[(threadIdx.x + i) & 127] * 0.125f;
    }
    float r[16];
    for (int i = 0; i < 16; i++) r[i] = acc * (float)i + loc[i];
    float m = 0.0f;
    for (int i = 0; i < 16; i++) m = fmaxf(m, r[i] * r[15 - i]);
    out[t] = acc + m;
}
