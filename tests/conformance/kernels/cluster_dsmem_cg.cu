// sm_90: compile-time thread-block clusters (__cluster_dims__(2,1,1)) with cooperative groups:
// cluster.sync() and distributed shared memory through map_shared_rank.
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
extern "C" __global__ void __cluster_dims__(2, 1, 1) cluster_dsmem_cg(const int* __restrict__ in,
                                                                      int* __restrict__ out) {
    __shared__ int s[256];
    cg::cluster_group cluster = cg::this_cluster();
    unsigned rank = cluster.block_rank();
    int tid = threadIdx.x;
    s[tid] = in[blockIdx.x * 256 + tid];
    cluster.sync();
    int* peer = cluster.map_shared_rank(s, rank ^ 1u);
    int v = peer[255 - tid] * 2 + (int)rank + (int)cluster.num_blocks() * 1000;
    cluster.sync();  // keep this block's shared memory alive until the peer has read it
    out[blockIdx.x * 256 + tid] = v;
}
