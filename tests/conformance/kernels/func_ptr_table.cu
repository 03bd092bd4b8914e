// Indirect calls through a __device__ table of function pointers (initialised with function
// addresses) and through a pointer chosen in the kernel.
typedef int (*binop_t)(int, int);
__device__ __noinline__ int op_add(int a, int b) { return a + b; }
__device__ __noinline__ int op_sub(int a, int b) { return a - b; }
__device__ __noinline__ int op_mul(int a, int b) { return a * b; }
__device__ __noinline__ int op_xor(int a, int b) { return a ^ b; }
__device__ __noinline__ int op_min(int a, int b) { return a < b ? a : b; }
__device__ __noinline__ int op_shl(int a, int b) { return a << (b & 15); }
__device__ binop_t ops[6] = {op_add, op_sub, op_mul, op_xor, op_min, op_shl};
extern "C" __global__ void func_ptr_table(const int* __restrict__ sel, const int* __restrict__ a,
                                          const int* __restrict__ b, int* __restrict__ out) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    int s = sel[t] & 0xffff;
    int r = ops[s % 6](a[t], b[t]);
    binop_t local = (a[t] & 1) ? op_mul : op_xor;
    out[t * 2] = r;
    out[t * 2 + 1] = local(r, b[t]);
}
