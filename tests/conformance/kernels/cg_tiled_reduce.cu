// cooperative_groups tiled_partition<32> and <16>: shfl_down reductions, cg::reduce with plus,
// greater and bit_xor, tile any/all/ballot, meta_group_rank.
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
namespace cg = cooperative_groups;
extern "C" __global__ void cg_tiled_reduce(const int* __restrict__ in, int* __restrict__ out) {
    cg::thread_block b = cg::this_thread_block();
    cg::thread_block_tile<32> t32 = cg::tiled_partition<32>(b);
    cg::thread_block_tile<16> t16 = cg::tiled_partition<16>(b);
    int g = blockIdx.x * blockDim.x + threadIdx.x;
    int v = in[g];
    int s = v;
    for (int d = t32.size() / 2; d > 0; d /= 2) s += t32.shfl_down(s, d);
    int* o = out + g * 8;
    o[0] = t32.thread_rank() == 0 ? s : -1;
    o[1] = cg::reduce(t32, v, cg::plus<int>());
    o[2] = cg::reduce(t16, v, cg::greater<int>());
    o[3] = cg::reduce(t16, v, cg::bit_xor<int>());
    o[4] = (int)t32.ballot(v & 1);
    o[5] = t16.any(v == 0) | (t16.all(v != 3) << 1);
    o[6] = (int)(t16.meta_group_rank() | (t16.meta_group_size() << 8) | (t32.meta_group_rank() << 16));
    o[7] = t16.shfl(v, 15 - t16.thread_rank());
}
