// Exactly 4096 bytes of parameters: a 4088-byte struct and a pointer.
struct P4088 { int v[1022]; };
extern "C" __global__ void param_4096(P4088 s, int* __restrict__ out) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < 1022) out[i] = s.v[i] - s.v[1021 - i];
}
