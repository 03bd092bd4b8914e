// sm_90: TMA tensor copy (cp.async.bulk.tensor.2d) of a 32x32 float tile per block from a
// 128x128 row-major matrix described by a CUtensorMap passed as a __grid_constant__ parameter.
// The harness encodes the tensor map with libcuda's cuTensorMapEncodeTiled for each side's buffer.
struct __align__(64) TensorMap { unsigned long long opaque[16]; };
__device__ __forceinline__ unsigned smem_u32(const void* p) {
    unsigned r;
    asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(r) : "l"(p));
    return r;
}
extern "C" __global__ void tma_tensor_2d(const __grid_constant__ TensorMap tmap, float* __restrict__ out) {
    __shared__ __align__(128) float tile[32 * 32];
    __shared__ __align__(8) unsigned long long bar;
    int tid = threadIdx.x;
    unsigned b = smem_u32(&bar);
    if (tid == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(b) : "memory");
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    int x0 = blockIdx.x * 32, y0 = blockIdx.y * 32;
    if (tid == 0) {
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(b), "r"(4096) : "memory");
        asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
                     :: "r"(smem_u32(tile)), "l"(&tmap), "r"(x0), "r"(y0), "r"(b) : "memory");
    }
    unsigned done = 0;
    while (!done) {
        asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                     : "=r"(done) : "r"(b), "r"(0) : "memory");
    }
    // transpose the tile into the output
    for (int i = tid; i < 1024; i += blockDim.x) {
        int r = i >> 5, c = i & 31;
        out[(x0 + r) * 128 + (y0 + c)] = tile[c * 32 + r];
    }
}
