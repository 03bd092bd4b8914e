// Texture objects read with tex2Dgather (the four texels bilinear filtering would blend, one
// component each: TLD4), tex2DLod (an explicit level of detail: TEX.LL) and tex2D of a float2
// texture fetched as float2. The harness creates the texture as for texture_sampling.cu.
extern "C" __global__ void tex2d_gather(unsigned long long tex, float4* out, int ow, int oh, float su,
                                        float sv, float u0, float v0) {
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
    if (x < ow && y < oh) {
        float u = u0 + x * su, v = v0 + y * sv;
        float4 a = tex2Dgather<float4>(tex, u, v, 0);
        float4 b = tex2Dgather<float4>(tex, u, v, 1);
        out[(y * ow + x) * 2] = a;
        out[(y * ow + x) * 2 + 1] = b;
    }
}
extern "C" __global__ void tex2d_lod(unsigned long long tex, float2* out, int ow, int oh, float su,
                                     float sv, float u0, float v0) {
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
    if (x < ow && y < oh) {
        float u = u0 + x * su, v = v0 + y * sv;
        float2 a = tex2DLod<float2>(tex, u, v, 0.0f);
        float2 b = tex2D<float2>(tex, u + 0.25f, v - 0.5f);
        out[y * ow + x] = make_float2(a.x + b.y, a.y - b.x);
    }
}
