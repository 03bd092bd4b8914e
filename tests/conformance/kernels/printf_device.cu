// Device printf (a vprintf syscall in the cubin). The harness passes flag=0, so nothing is printed
// at run time; the call still has to resolve to a vprintf that returns.
extern "C" __global__ void printf_device(const int* __restrict__ in, int* __restrict__ out, int flag) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (flag) printf("conformance printf_device: thread %d value %d\n", t, in[t]);
    out[t] = in[t] + 1;
}
