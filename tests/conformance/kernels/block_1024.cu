// 1024-thread blocks: shared-memory tree reduction, __syncthreads_count/_and/_or.
extern "C" __global__ void block_1024(const int* __restrict__ in, int* __restrict__ out) {
    __shared__ int s[1024];
    int tid = threadIdx.x;
    int v = in[blockIdx.x * 1024 + tid];
    s[tid] = v;
    __syncthreads();
    for (int d = 512; d > 0; d >>= 1) {
        if (tid < d) s[tid] += s[tid + d];
        __syncthreads();
    }
    int cnt = __syncthreads_count(v & 1);
    int all = __syncthreads_and(v != 77);
    int any = __syncthreads_or((v & 0xfff) == 5);
    if (tid == 0) {
        out[blockIdx.x * 4] = s[0];
        out[blockIdx.x * 4 + 1] = cnt;
        out[blockIdx.x * 4 + 2] = all;
        out[blockIdx.x * 4 + 3] = any;
    }
}
