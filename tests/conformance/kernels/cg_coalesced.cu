// cooperative_groups coalesced_threads() in data-dependent branches: rank, size, shfl, and a
// warp-aggregated atomic (one atomic per coalesced group).
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
extern "C" __global__ void cg_coalesced(const int* __restrict__ in, int* __restrict__ out,
                                        int* __restrict__ counters) {
    int g = blockIdx.x * blockDim.x + threadIdx.x;
    int v = in[g];
    int* o = out + g * 3;
    o[0] = o[1] = o[2] = -1;
    if (v % 3 == 0) {
        cg::coalesced_group c = cg::coalesced_threads();
        o[0] = (int)(c.thread_rank() | (c.size() << 8));
        o[1] = c.shfl(v, c.size() - 1);
        int base = 0;
        if (c.thread_rank() == 0) base = atomicAdd(&counters[0], (int)c.size());
        (void)c.shfl(base, 0);
        o[2] = c.num_threads();
    } else {
        atomicAdd(&counters[1 + (v & 3)], 1);
    }
}
