// The CUDA system calls a user's cubin may import (undefined symbols that the CUDA driver
// provides): device-side printf (`vprintf`), assert (`__assertfail`), the device heap
// (`malloc`, `free`) and the condition of graph conditional nodes (`cudaGraphSetConditional`).
// libtegragpu loads this module once per device and writes the addresses of its tg_sys_*
// functions where a user's cubin has relocations against those symbols (constant bank 4); the caller reaches them with CALL.ABS
// and they return with RET.ABS.
//
// Built with -rdc=true (so both are extern functions with the standard calling convention,
// not specialized to one caller) and --maxrregcount=24 (ptxas gives every kernel that calls a
// syscall at least 24 registers), then device-linked with nvJitLink (scripts/gen_cubins.py).
// Neither may use a stack frame: tests/cubin.rs checks EIATTR_FRAME_SIZE and EIATTR_REGCOUNT.
//
// The layout of tg_sys_area and of printf records is shared with src/core/syscalls.rs.

#define TG_HEAP_CLASSES 40u

struct tg_sys_area {
    // The first failing assertion: state 0 none, 1 being written, 2 complete.
    unsigned int assert_state;       // 0
    unsigned int assert_line;        // 4
    unsigned int assert_block[3];    // 8
    unsigned int assert_thread[3];   // 20
    // printf ring: records of 8-byte multiples; head and tail count bytes modulo 2^32.
    unsigned int printf_head;        // 32: bytes reserved (GPU atomics)
    unsigned int printf_tail;        // 36: bytes consumed (written by the host)
    unsigned int printf_cap;         // 40: ring bytes, a multiple of 8 (written by the host)
    unsigned int printf_dropped;     // 44: records that did not fit
    unsigned long long printf_ring;  // 48: GPU address of the ring (written by the host)
    char assert_message[256];        // 56
    char assert_file[256];           // 312
    char assert_function[256];       // 568
    // Device heap (malloc/free), written by the host when a module that imports them loads.
    unsigned long long heap_base;    // 824: GPU address (0: no heap)
    unsigned long long heap_size;    // 832: bytes
    unsigned long long heap_top;     // 840: bytes handed out from the top (GPU atomics)
    unsigned long long heap_free[TG_HEAP_CLASSES];  // 848: freed blocks of 2^c bytes, a list
    unsigned int heap_lock[TG_HEAP_CLASSES];        // 1168: one spin lock per list
};

// Set by the host after loading the module.
__device__ tg_sys_area* tg_sys;

#define TG_REC_PRINTF 1u
#define TG_REC_FILL 2u
#define TG_FMT_MAX 4096u
#define TG_STR_MAX 4096u

__device__ __forceinline__ unsigned tg_strlen(const char* s, unsigned cap) {
    unsigned n = 0;
    if (s) {
#pragma unroll 1
        while (n < cap && s[n]) n++;
    }
    return n;
}

__device__ __forceinline__ void tg_copy(char* dst, const char* src, unsigned n) {
#pragma unroll 1
    for (unsigned i = 0; i < n; i++) dst[i] = src[i];
}

// Walks the format as the C printf does and returns the bytes of the caller's argument buffer
// it uses (each argument at its natural alignment: 4 bytes for int-sized values, 8 for double,
// 64-bit integers and pointers). *strings gets the bytes of the %s strings (each with its NUL);
// with out set, those strings are copied there in order. *count gets the number of conversions.
__device__ __forceinline__ unsigned tg_printf_walk(const char* fmt, unsigned fmt_len, const char* args,
                                                char* out, unsigned* strings, unsigned* count) {
    unsigned a = 0, s = 0, n = 0, i = 0;
#pragma unroll 1
    while (i < fmt_len) {
        if (fmt[i++] != '%') continue;
        char c = fmt[i];
        if (c == '%') {
            i++;
            continue;
        }
#pragma unroll 1
        while (c == '-' || c == '+' || c == ' ' || c == '#' || c == '0') c = fmt[++i];
        if (c == '*') {
            a = ((a + 3u) & ~3u) + 4u;
            c = fmt[++i];
        }
#pragma unroll 1
        while (c >= '0' && c <= '9') c = fmt[++i];
        if (c == '.') {
            c = fmt[++i];
            if (c == '*') {
                a = ((a + 3u) & ~3u) + 4u;
                c = fmt[++i];
            }
#pragma unroll 1
            while (c >= '0' && c <= '9') c = fmt[++i];
        }
        unsigned wide = 0;
#pragma unroll 1
        while (c == 'h' || c == 'l' || c == 'L' || c == 'z' || c == 'j' || c == 't' || c == 'q') {
            if (c != 'h') wide = 1;
            c = fmt[++i];
        }
        if (c == 0) break;
        i++;
        unsigned size = 4u;
        if (wide || c == 'f' || c == 'F' || c == 'e' || c == 'E' || c == 'g' || c == 'G' ||
            c == 'a' || c == 'A' || c == 's' || c == 'p' || c == 'n')
            size = 8u;
        a = (a + size - 1u) & ~(size - 1u);
        if (c == 's') {
            const char* str = *(const char* const*)(args + a);
            unsigned l = tg_strlen(str, TG_STR_MAX);
            if (out) {
                tg_copy(out + s, str, l);
                out[s + l] = 0;
            }
            s += l + 1u;
        }
        a += size;
        n++;
    }
    *strings = s;
    *count = n;
    return a;
}

// int vprintf(const char* format, void* args): appends a record to the ring, which the host
// prints at its next synchronization point. Returns the number of conversions, -1 for a NULL
// format, -2 when the ring is full (the record is dropped and counted).
//
// Record: u32 bytes (written last), u32 kind, u32 format bytes (with NUL), u32 argument bytes,
// then the format, the argument bytes and the %s strings, each padded to 8 bytes.
extern "C" __device__ __noinline__ int tg_sys_vprintf(const char* fmt, const char* args) {
    tg_sys_area* sys = tg_sys;
    if (!sys || !fmt) return -1;
    unsigned fmt_len = tg_strlen(fmt, TG_FMT_MAX);
    unsigned strings, count;
    unsigned arg_bytes = tg_printf_walk(fmt, fmt_len, args, 0, &strings, &count);
    unsigned f8 = (fmt_len + 8u) & ~7u;  // the format and its NUL
    unsigned a8 = (arg_bytes + 7u) & ~7u;
    unsigned bytes = 16u + f8 + a8 + ((strings + 7u) & ~7u);
    volatile tg_sys_area* v = sys;
    unsigned cap = v->printf_cap;
    if (bytes > cap) {
        atomicAdd(&sys->printf_dropped, 1u);
        return -2;
    }
    unsigned head = v->printf_head, start, fill;
#pragma unroll 1
    while (true) {
        unsigned pos = head % cap;
        fill = pos + bytes > cap ? cap - pos : 0u;
        if (head + fill + bytes - v->printf_tail > cap) {
            atomicAdd(&sys->printf_dropped, 1u);
            return -2;
        }
        unsigned seen = atomicCAS(&sys->printf_head, head, head + fill + bytes);
        if (seen == head) break;
        head = seen;
    }
    char* ring = (char*)v->printf_ring;
    if (fill) {
        unsigned* f = (unsigned*)(ring + head % cap);
        f[1] = TG_REC_FILL;
        __threadfence_system();
        *(volatile unsigned*)f = fill;
    }
    start = (head + fill) % cap;
    char* rec = ring + start;
    unsigned* h = (unsigned*)rec;
    h[1] = TG_REC_PRINTF;
    h[2] = fmt_len + 1u;
    h[3] = arg_bytes;
    tg_copy(rec + 16, fmt, fmt_len);
    rec[16 + fmt_len] = 0;
    tg_copy(rec + 16 + f8, args, arg_bytes);
    tg_printf_walk(fmt, fmt_len, args, rec + 16 + f8 + a8, &strings, &count);
    __threadfence_system();
    *(volatile unsigned*)h = bytes;
    return (int)count;
}

// void __assertfail(const char* message, const char* file, unsigned line, const char* function,
// size_t char_size): records the first failing assertion (text, line, block and thread) for
// the host's fault report, then traps: the kernel stops and the device reports a fault.
extern "C" __device__ __noinline__ void tg_sys_assertfail(const char* message, const char* file,
                                                          unsigned line, const char* function,
                                                          unsigned long long char_size) {
    tg_sys_area* sys = tg_sys;
    if (sys && atomicCAS(&sys->assert_state, 0u, 1u) == 0u) {
        sys->assert_line = line;
        sys->assert_block[0] = blockIdx.x;
        sys->assert_block[1] = blockIdx.y;
        sys->assert_block[2] = blockIdx.z;
        sys->assert_thread[0] = threadIdx.x;
        sys->assert_thread[1] = threadIdx.y;
        sys->assert_thread[2] = threadIdx.z;
        unsigned n = tg_strlen(message, 255u);
        tg_copy(sys->assert_message, message, n);
        sys->assert_message[n] = 0;
        n = tg_strlen(file, 255u);
        tg_copy(sys->assert_file, file, n);
        sys->assert_file[n] = 0;
        n = tg_strlen(function, 255u);
        tg_copy(sys->assert_function, function, n);
        sys->assert_function[n] = 0;
        __threadfence_system();
        *(volatile unsigned*)&sys->assert_state = 2u;
    }
    __trap();
}

// The device heap. A block of 2^c bytes (c >= 4) starts with a 16-byte header (c, and the
// next block while it sits in a free list); malloc returns the 16-byte aligned bytes after it.
// Blocks come from the free list of their size class, else from the top of the heap; free puts
// a block back on its list. NULL when the heap cannot hold the block (as CUDA's malloc).
__device__ __forceinline__ void tg_heap_lock(unsigned* l) {
#pragma unroll 1
    while (atomicCAS(l, 0u, 1u) != 0u) __nanosleep(64);
    __threadfence();
}

__device__ __forceinline__ void tg_heap_unlock(unsigned* l) {
    __threadfence();
    atomicExch(l, 0u);
}

extern "C" __device__ __noinline__ void* tg_sys_malloc(unsigned long long n) {
    tg_sys_area* sys = tg_sys;
    if (!sys || n == 0) return 0;
    unsigned long long size = *(volatile unsigned long long*)&sys->heap_size;
    if (n > size) return 0;
    unsigned c = 4;
#pragma unroll 1
    while ((1ull << c) < n + 16ull) c++;
    if (c >= TG_HEAP_CLASSES) return 0;
    unsigned long long bytes = 1ull << c;
    volatile unsigned long long* head = &sys->heap_free[c];
    tg_heap_lock(&sys->heap_lock[c]);
    unsigned long long blk = *head;
    if (blk) *head = *(volatile unsigned long long*)(blk + 8);
    tg_heap_unlock(&sys->heap_lock[c]);
    if (!blk) {
        unsigned long long off = atomicAdd(&sys->heap_top, bytes);
        if (off + bytes > size) return 0;
        blk = *(volatile unsigned long long*)&sys->heap_base + off;
        *(volatile unsigned long long*)blk = c;
    }
    return (void*)(blk + 16);
}

extern "C" __device__ __noinline__ void tg_sys_free(void* p) {
    tg_sys_area* sys = tg_sys;
    if (!sys || !p) return;
    unsigned long long blk = (unsigned long long)p - 16;
    unsigned long long c = *(volatile unsigned long long*)blk;
    if (c < 4 || c >= TG_HEAP_CLASSES) return;  // not a heap block
    volatile unsigned long long* head = &sys->heap_free[c];
    tg_heap_lock(&sys->heap_lock[c]);
    *(volatile unsigned long long*)(blk + 8) = *head;
    __threadfence();
    *head = blk;
    tg_heap_unlock(&sys->heap_lock[c]);
}

// `cudaGraphSetConditional(handle, value)`: a conditional node's handle is the GPU address of
// its 32-bit condition value (host memory the library reads when the node is reached).
extern "C" __device__ __noinline__ void tg_sys_set_conditional(unsigned long long handle,
                                                               unsigned value) {
    if (!handle) return;
    *(volatile unsigned*)handle = value;
    __threadfence_system();
}

// Keeps the functions through the device link (it drops code no kernel reaches). Never
// launched; it takes their addresses without calling them.
extern "C" __global__ void tg_sys_keep(void** out) {
    out[0] = (void*)&tg_sys_vprintf;
    out[1] = (void*)&tg_sys_assertfail;
    out[2] = (void*)&tg_sys_malloc;
    out[3] = (void*)&tg_sys_free;
    out[4] = (void*)&tg_sys_set_conditional;
}
