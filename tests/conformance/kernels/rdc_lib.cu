// Second translation unit of the rdc_dlink case (see rdc_main.cu).
__device__ int rdc_table[16] = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768};
__device__ __noinline__ int rdc_helper(int x, int y) {
    int r = x;
    for (int i = 0; i < (y & 7); i++) r = r * 31 + i;
    return r ^ y;
}
