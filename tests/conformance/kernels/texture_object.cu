// Texture object (cudaTextureObject_t parameter) over linear memory: tex1Dfetch<float>. The
// harness creates it with cuTexObjectCreate for libcuda; libtegragpu has no texture objects.
extern "C" __global__ void texture_object(unsigned long long tex, float* __restrict__ out, int n) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t < n) out[t] = tex1Dfetch<float>(tex, (t * 7) % n) * 2.0f + tex1Dfetch<float>(tex, t);
}
