// Recursive device function (stack depth known only at run time); runs within the default
// 1 KiB stack per thread.
__device__ __noinline__ int fib(int n) {
    if (n < 2) return n;
    return fib(n - 1) + fib(n - 2);
}
extern "C" __global__ void recursion_fib(const int* __restrict__ in, int* __restrict__ out) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    out[t] = fib(in[t]);
}
