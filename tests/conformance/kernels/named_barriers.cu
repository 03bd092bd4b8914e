// A kernel that declares NB named barriers (the highest barrier id it uses, plus one): how many
// barriers a block holds limits how many blocks an SM runs at once (occupancy). Built with
// -DNB=<n>; the block must have 32 threads (bar.sync's thread count).
#define TG_STR2(x) #x
#define TG_STR(x) TG_STR2(x)
extern "C" __global__ void named_barriers(const int* __restrict__ in, int* __restrict__ out) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    int v = in[t];
    asm volatile("bar.sync " TG_STR(NB) " - 1, 32;" ::: "memory");
    out[t] = v * 2 + NB;
}
