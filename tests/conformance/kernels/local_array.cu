// A local array indexed with run-time values (lives in local memory / the stack).
extern "C" __global__ void local_array(const int* __restrict__ idx, const int* __restrict__ in,
                                       int* __restrict__ out) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    int arr[64];
    int x = in[t];
    for (int i = 0; i < 64; i++) arr[i] = (x * (i + 1)) ^ i;
    int s = 0;
    int k0 = idx[t];
    for (int k = 0; k < 16; k++) {
        int j = (k0 + k * 13) & 63;
        arr[j] += s;
        s ^= arr[(j * 7 + k) & 63];
    }
    out[t] = s + arr[k0 & 63];
}
