// sm_90a (architecture-specific target): setmaxnreg in a warp-specialised kernel. Built with
// -arch=sm_90a; the cubin's e_flags carry the 'a' variant.
extern "C" __global__ void __launch_bounds__(256, 1) sm90a_setmaxnreg(const int* __restrict__ in,
                                                                      int* __restrict__ out) {
    int tid = threadIdx.x;
    int v = in[blockIdx.x * 256 + tid];
    if (tid < 128) {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
        out[blockIdx.x * 256 + tid] = v * 5 + 1;
    } else {
        asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
        int acc = v;
        for (int i = 0; i < 16; i++) acc = acc * 1664525 + 1013904223 + i;
        out[blockIdx.x * 256 + tid] = acc;
    }
}
