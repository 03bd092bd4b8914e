// Surface object (cudaSurfaceObject_t parameter) over a 1-D CUDA array: surf1Dwrite. The harness
// creates the array and the surface with the driver API for libcuda; libtegragpu has none.
extern "C" __global__ void surface_object(unsigned long long surf, const float* __restrict__ in, int n) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t < n) surf1Dwrite<float>(in[t] * 3.0f + 1.0f, surf, t * 4);
}
