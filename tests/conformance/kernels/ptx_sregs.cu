// Inline PTX special registers whose values are fixed for a launch: %laneid, %lanemask_*,
// %tid, %ntid, %ctaid, %nctaid, %nsmid, %nwarpid, %dynamic_smem_size, %total_smem_size.
// (%smid, %warpid, %clock and %globaltimer are left out: they differ between runs.)
extern "C" __global__ void ptx_sregs(unsigned* __restrict__ out) {
    extern __shared__ unsigned dyn[];
    unsigned r[12];
    asm("mov.u32 %0, %%laneid;" : "=r"(r[0]));
    asm("mov.u32 %0, %%lanemask_lt;" : "=r"(r[1]));
    asm("mov.u32 %0, %%lanemask_ge;" : "=r"(r[2]));
    asm("mov.u32 %0, %%lanemask_eq;" : "=r"(r[3]));
    asm("mov.u32 %0, %%tid.y;" : "=r"(r[4]));
    asm("mov.u32 %0, %%ntid.x;" : "=r"(r[5]));
    asm("mov.u32 %0, %%ctaid.y;" : "=r"(r[6]));
    asm("mov.u32 %0, %%nctaid.x;" : "=r"(r[7]));
    asm("mov.u32 %0, %%nsmid;" : "=r"(r[8]));
    asm("mov.u32 %0, %%nwarpid;" : "=r"(r[9]));
    asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(r[10]));
    asm("mov.u32 %0, %%total_smem_size;" : "=r"(r[11]));
    unsigned lin = threadIdx.y * blockDim.x + threadIdx.x;
    dyn[lin] = r[0];
    __syncthreads();
    unsigned g = (blockIdx.y * gridDim.x + blockIdx.x) * (blockDim.x * blockDim.y) + lin;
    for (int i = 0; i < 12; i++) out[g * 13 + i] = r[i];
    out[g * 13 + 12] = dyn[(lin + 1) % (blockDim.x * blockDim.y)];
}
