// Texture objects sampled the ways CUDA code does: tex2D over pitch-linear memory (point and
// linear filtering, normalized and unnormalized coordinates, every address mode) and tex1Dfetch
// over linear memory, for float, half, 8- and 16-bit integer (as integers and as normalized
// floats) and vector element types. The harness creates the texture (cuTexObjectCreate for
// libcuda, tg_texture_create for libtegragpu) from the case's description.
template <typename T>
__device__ void sample2d(unsigned long long tex, T* out, int ow, int oh, float su, float sv, float u0,
                         float v0) {
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
    if (x < ow && y < oh) out[y * ow + x] = tex2D<T>(tex, u0 + x * su, v0 + y * sv);
}
extern "C" __global__ void tex2d_f1(unsigned long long tex, float* out, int ow, int oh, float su,
                                  float sv, float u0, float v0) {
    sample2d(tex, out, ow, oh, su, sv, u0, v0);
}
extern "C" __global__ void tex2d_f4(unsigned long long tex, float4* out, int ow, int oh, float su,
                                  float sv, float u0, float v0) {
    sample2d(tex, out, ow, oh, su, sv, u0, v0);
}
extern "C" __global__ void tex2d_s2(unsigned long long tex, short2* out, int ow, int oh, float su,
                                  float sv, float u0, float v0) {
    sample2d(tex, out, ow, oh, su, sv, u0, v0);
}
extern "C" __global__ void tex2d_i1(unsigned long long tex, int* out, int ow, int oh, float su,
                                  float sv, float u0, float v0) {
    sample2d(tex, out, ow, oh, su, sv, u0, v0);
}

// out[i] = element i - 5 (the first five fetches are before the start, the last ones past the
// end of a texture shorter than n).
template <typename T>
__device__ void fetch1d(unsigned long long tex, T* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = tex1Dfetch<T>(tex, i - 5);
}
extern "C" __global__ void tex1d_f1(unsigned long long tex, float* out, int n) { fetch1d(tex, out, n); }
extern "C" __global__ void tex1d_f2(unsigned long long tex, float2* out, int n) { fetch1d(tex, out, n); }
extern "C" __global__ void tex1d_f4(unsigned long long tex, float4* out, int n) { fetch1d(tex, out, n); }
extern "C" __global__ void tex1d_uc4(unsigned long long tex, uchar4* out, int n) { fetch1d(tex, out, n); }
