// cooperative_groups grid-wide barrier: cg::this_grid().sync() between phases that read values
// written by other blocks. Needs a cooperative launch (cuLaunchCooperativeKernel /
// TG_LAUNCH_COOPERATIVE) with all blocks co-resident.
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
extern "C" __global__ void cg_grid_sync(int* buf, int* __restrict__ out, int iters) {
    cg::grid_group grid = cg::this_grid();
    unsigned n = (unsigned)grid.size();
    unsigned i = (unsigned)grid.thread_rank();
    buf[i] = (int)(i * 3 + 1);
    for (int it = 0; it < iters; it++) {
        grid.sync();
        int v = buf[(i + 977u * (unsigned)(it + 1)) % n];
        grid.sync();
        buf[i] = v * 2 + it;
    }
    grid.sync();
    out[i] = buf[n - 1 - i] + (grid.is_valid() ? 0x1000000 : 0);
}
