// sm_90: thread-block clusters given at launch time (4x1x1, no __cluster_dims__), used through
// inline PTX only: %cluster_ctarank, %cluster_nctarank, %clusterid, barrier.cluster, mapa and
// ld.shared::cluster (distributed shared memory).
__device__ __forceinline__ unsigned smem_u32(const void* p) {
    unsigned r;
    asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(r) : "l"(p));
    return r;
}
extern "C" __global__ void cluster_ptx(const int* __restrict__ in, unsigned* __restrict__ out) {
    __shared__ int s[128];
    int tid = threadIdx.x;
    unsigned rank, nrank, cid, ncid, cctaid;
    asm("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
    asm("mov.u32 %0, %%cluster_nctarank;" : "=r"(nrank));
    asm("mov.u32 %0, %%clusterid.x;" : "=r"(cid));
    asm("mov.u32 %0, %%nclusterid.x;" : "=r"(ncid));
    asm("mov.u32 %0, %%cluster_ctaid.x;" : "=r"(cctaid));
    s[tid] = in[blockIdx.x * 128 + tid];
    asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
    unsigned remote, target = (rank + 1) % nrank;
    asm("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(smem_u32(&s[127 - tid])), "r"(target));
    int v;
    asm volatile("ld.shared::cluster.u32 %0, [%1];" : "=r"(v) : "r"(remote) : "memory");
    asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
    unsigned* o = out + (blockIdx.x * 128 + tid) * 2;
    o[0] = (unsigned)v + rank;
    o[1] = rank | (nrank << 4) | (cid << 8) | (ncid << 16) | (cctaid << 24);
}
