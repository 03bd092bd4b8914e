// Device-side malloc/free (device heap syscalls); libtegragpu may refuse it.
extern "C" __global__ void malloc_device(const int* __restrict__ in, int* __restrict__ out) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    int* p = (int*)malloc(16 * sizeof(int));
    int r = -1;
    if (p) {
        for (int i = 0; i < 16; i++) p[i] = in[t] * i;
        r = 0;
        for (int i = 0; i < 16; i++) r += p[(i * 5) & 15];
        free(p);
    }
    out[t] = r;
}
