// A 32000-byte struct parameter, then a pointer and a trailing int: 32012 bytes of parameters
// (the sm_70+ limit with CUDA 12.1+ is 32764).
struct Big32000 { int v[8000]; };
extern "C" __global__ void param_32000(Big32000 s, int* __restrict__ out, int tail) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < 8000; i += blockDim.x * gridDim.x)
        out[i] = s.v[i] ^ tail;
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        out[8000] = tail;
        out[8001] = s.v[7999] + s.v[4000];
    }
}
