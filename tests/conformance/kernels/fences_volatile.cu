// Memory fences and volatile accesses: __threadfence_block/__threadfence, volatile shared-memory
// flag handshake between two warps, __syncwarp.
extern "C" __global__ void fences_volatile(const int* __restrict__ in, int* __restrict__ out) {
    __shared__ int data[32];
    __shared__ volatile int flag;
    int tid = threadIdx.x;  // 64 threads: warp 0 produces, warp 1 consumes
    if (tid == 0) flag = 0;
    __syncthreads();
    if (tid < 32) {
        data[tid] = in[blockIdx.x * 32 + tid] * 5;
        __threadfence_block();
        __syncwarp();
        if (tid == 0) flag = 1;
    } else {
        while (flag == 0) { }
        __threadfence_block();
        out[blockIdx.x * 32 + (tid - 32)] = data[63 - tid] + 1;
    }
    __threadfence();
}
