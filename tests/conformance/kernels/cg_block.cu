// cooperative_groups thread_block: sync, thread_rank, group_index, thread_index, dim_threads, size.
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
extern "C" __global__ void cg_block(const int* __restrict__ in, unsigned* __restrict__ out) {
    __shared__ int s[256];
    cg::thread_block b = cg::this_thread_block();
    unsigned r = b.thread_rank();
    int gbl = (blockIdx.y * gridDim.x + blockIdx.x) * b.size() + r;
    s[r] = in[gbl];
    b.sync();
    int v = s[(r * 11 + 5) % b.size()];
    b.sync();
    unsigned* o = out + gbl * 4;
    o[0] = (unsigned)v;
    o[1] = b.group_index().x | (b.group_index().y << 16);
    o[2] = b.thread_index().x | (b.thread_index().y << 8) | (b.thread_index().z << 16);
    o[3] = b.dim_threads().x * 10000 + b.size();
}
