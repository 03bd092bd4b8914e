// A dense 32-way switch (compiled to an indexed branch through a jump table).
__device__ __noinline__ unsigned pick(unsigned sel, unsigned x) {
    switch (sel) {
    case 0: return x + 1;             case 1: return x * 3;
    case 2: return x ^ 0xdeadbeefu;   case 3: return x >> 3;
    case 4: return x << 5;            case 5: return ~x;
    case 6: return x * x;             case 7: return x - 12345u;
    case 8: return (x << 7) | (x >> 25);  case 9: return x & 0xff00ff00u;
    case 10: return x | 0x11111111u;  case 11: return x / 7u;
    case 12: return x % 1000u;        case 13: return __popc(x);
    case 14: return __clz(x);         case 15: return __brev(x);
    case 16: return x * 2654435761u;  case 17: return x + (x >> 16);
    case 18: return x ^ (x << 13);    case 19: return x ^ (x >> 17);
    case 20: return x * 0x9e3779b9u;  case 21: return x - (x >> 1);
    case 22: return (x & 1) ? x : 0u; case 23: return x * 5u + 7u;
    case 24: return x / 13u + x;      case 25: return __byte_perm(x, 0, 0x0123);
    case 26: return x ^ 0x55555555u;  case 27: return x + 0x7fffffffu;
    case 28: return x % 97u * 3u;     case 29: return x >> (x & 7);
    case 30: return x << (x & 7);     default: return 42u;
    }
}
extern "C" __global__ void switch_jumptable(const unsigned* __restrict__ in, unsigned* __restrict__ out) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned x = in[t];
    unsigned acc = x;
    for (int i = 0; i < 4; i++) acc = pick((acc + (unsigned)i) & 31u, acc ^ x);
    out[t] = acc;
}
