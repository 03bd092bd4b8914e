// sm_90: constant bank 0 holds its own GPU address at 0xc0 and the parameter block's at 0x198
// (cuBLASLt's sm_90 GEMM kernels read their TMA descriptors through the word at 0xc0). The
// kernel finds the bank 0x210 below the address of a __grid_constant__ parameter and writes,
// per thread, each word minus the address it should hold: 0 and 0 where the launch wrote both.
extern "C" __global__ void cbank_self_address(const __grid_constant__ unsigned long long tag,
                                              unsigned long long* __restrict__ out) {
    const char* param = (const char*)&tag;
    const char* bank = param - 0x210;
    unsigned long long self = *(const unsigned long long*)(bank + 0xc0);
    unsigned long long block = *(const unsigned long long*)(bank + 0x198);
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    out[2 * i] = self - (unsigned long long)bank;
    out[2 * i + 1] = (block - (unsigned long long)param) + tag;
}
