// nvcuda::wmma 16x16x16 half -> float: D = A(16x64) * B(64x16) + C, one warp per tile, 4 k-steps.
#include <cuda_fp16.h>
#include <mma.h>
using namespace nvcuda;
extern "C" __global__ void wmma_16x16x16(const half* __restrict__ A, const half* __restrict__ B,
                                         const float* __restrict__ C, float* __restrict__ D) {
    int tile = blockIdx.x;
    const half* a = A + tile * 16 * 64;   // row-major 16 x 64
    const half* b = B + tile * 64 * 16;   // col-major 64 x 16 (ld = 64)
    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    wmma::load_matrix_sync(acc, C + tile * 256, 16, wmma::mem_row_major);
    for (int k = 0; k < 64; k += 16) {
        wmma::load_matrix_sync(fa, a + k, 64);
        wmma::load_matrix_sync(fb, b + k, 64);
        wmma::mma_sync(acc, fa, fb, acc);
    }
    wmma::store_matrix_sync(D + tile * 256, acc, 16, wmma::mem_row_major);
}
