// A struct parameter of 8000 bytes (more than the classic 4 KiB parameter limit), read with a
// run-time index, followed by a pointer.
struct Big8000 { int v[2000]; };
extern "C" __global__ void param_8000(Big8000 s, int* __restrict__ out) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < 2000; i += blockDim.x * gridDim.x)
        out[i] = s.v[i] * 3 + i;
    if (blockIdx.x == 0 && threadIdx.x == 0) out[2000] = s.v[1999] ^ s.v[0];
}
