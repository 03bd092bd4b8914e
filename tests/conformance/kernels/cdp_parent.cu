// Dynamic parallelism (CDP2): a kernel launching a child grid. Built with -rdc=true and linked
// with cudadevrt into a final cubin; libtegragpu is expected to refuse it.
extern "C" __global__ void cdp_child(int* out, int base, int scale) {
    out[base + threadIdx.x] = base * scale + (int)threadIdx.x;
}
extern "C" __global__ void cdp_parent(int* out, int scale) {
    if (threadIdx.x == 0) cdp_child<<<1, 32>>>(out, (int)blockIdx.x * 32, scale);
}
