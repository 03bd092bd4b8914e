// LD_PRELOAD shim for the device machine: prints every ioctl (and mmap/munmap) a process makes
// while tracing is switched on through `ioctl_trace_enable(1)` (found with dlsym), with its
// duration. It decodes the arguments we need to compare allocation paths with libcuda:
// RM_ALLOC (class, memory allocation params), RM_CONTROL (cmd), RM_FREE, RM_MAP_MEMORY(_DMA),
// and the UVM ioctls by number. Measurement only: nothing here ships in the library.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

static int on;
void ioctl_trace_enable(int v) { on = v; }

static double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static void decode(unsigned long req, void *arg, char *buf, size_t n) {
    unsigned type = (req >> 8) & 0xff, nr = req & 0xff;
    buf[0] = 0;
    if (type != 'F') {
        snprintf(buf, n, "uvm %lu", req);
        if (req == 33 && arg) { // UVM_MAP_EXTERNAL_ALLOCATION: base, length, offset
            uint64_t *p = arg;
            uint32_t *a = (uint32_t *)(p + 3) + 4; // perGpuAttributes[0] after the 16-byte UUID
            snprintf(buf, n, "UVM_MAP_EXTERNAL_ALLOCATION base=%#lx len=%#lx off=%#lx map=%u cache=%u fmt=%u bits=%u compr=%u",
                     p[0], p[1], p[2], a[0], a[1], a[2], a[3], a[4]);
        } else if (req == 73 && arg) {
            uint64_t *p = arg;
            snprintf(buf, n, "UVM_CREATE_EXTERNAL_RANGE base=%#lx len=%#lx", p[0], p[1]);
        } else if (req == 34 && arg) {
            uint64_t *p = arg;
            snprintf(buf, n, "UVM_FREE base=%#lx len=%#lx", p[0], p[1]);
        } else if (req == 66 && arg) {
            uint64_t *p = arg;
            snprintf(buf, n, "UVM_UNMAP_EXTERNAL base=%#lx len=%#lx", p[0], p[1]);
        }
        return;
    }
    uint32_t *w = arg;
    switch (nr) {
    case 0x2B: { // NV_ESC_RM_ALLOC: hRoot, hParent, hNew, hClass, pAllocParms, ...
        uint64_t pp; memcpy(&pp, w + 4, 8);
        unsigned argsize = (req >> 16) & 0x3fff; // NVOS21 (32 bytes) or NVOS64 (48)
        uint32_t size = argsize >= 48 ? w[8] : w[6];
        int k = snprintf(buf, n, "RM_ALLOC argsize=%u parent=%#x new=%#x class=%#x psize=%u", argsize, w[1], w[2], w[3], size);
        if (w[3] == 0x40 && size == 0 && pp) size = 128; // read the params anyway
        if ((w[3] == 0x40 || w[3] == 0x3e || w[3] == 0x71) && pp && size >= 88) {
            uint32_t *m = (uint32_t *)pp; // NV_MEMORY_ALLOCATION_PARAMS
            uint64_t sz, al; memcpy(&sz, m + 16, 8); memcpy(&al, m + 18, 8);
            snprintf(buf + k, n - k, " owner=%#x type=%u flags=%#x attr=%#x attr2=%#x size=%#lx align=%#lx hVASpace=%#x internal=%#x",
                     m[0], m[1], m[2], m[6], m[7], sz, al, m[27], m[28]);
        } else if (pp && size >= 4) {
            uint32_t *m = (uint32_t *)pp;
            k += snprintf(buf + k, n - k, " p=");
            for (unsigned i = 0; i < size / 4 && i < 12 && k < (int)n - 12; i++) k += snprintf(buf + k, n - k, "%x,", m[i]);
        }
        break;
    }
    case 0x2A: { // NV_ESC_RM_CONTROL: hClient, hObject, cmd, flags, params, paramsSize
        snprintf(buf, n, "RM_CONTROL obj=%#x cmd=%#x size=%u", w[1], w[2], w[6]);
        break;
    }
    case 0x29: snprintf(buf, n, "RM_FREE parent=%#x obj=%#x", w[1], w[2]); break;
    case 0x4E: snprintf(buf, n, "RM_MAP_MEMORY mem=%#x", w[2]); break;
    case 0x4F: snprintf(buf, n, "RM_UNMAP_MEMORY mem=%#x", w[2]); break;
    case 0x57: snprintf(buf, n, "RM_MAP_MEMORY_DMA dma=%#x mem=%#x", w[2], w[3]); break;
    case 0x58: snprintf(buf, n, "RM_UNMAP_MEMORY_DMA dma=%#x mem=%#x", w[2], w[3]); break;
    case 0x4A: snprintf(buf, n, "RM_VID_HEAP_CONTROL function=%u", w[3]); break;
    default: snprintf(buf, n, "nv esc %#x", nr);
    }
}

int ioctl(int fd, unsigned long req, ...) {
    static int (*real)(int, unsigned long, void *);
    if (!real) real = (int (*)(int, unsigned long, void *))dlsym(RTLD_NEXT, "ioctl");
    va_list ap;
    va_start(ap, req);
    void *arg = va_arg(ap, void *);
    va_end(ap);
    if (!on) return real(fd, req, arg);
    char before[512];
    decode(req, arg, before, sizeof before);
    double t0 = now_us();
    int r = real(fd, req, arg);
    double t1 = now_us();
    fprintf(stderr, "  ioctl fd=%d %-9.1f us  %s -> %d\n", fd, t1 - t0, before, r);
    return r;
}

void *mmap(void *a, size_t len, int prot, int flags, int fd, off_t off) {
    static void *(*real)(void *, size_t, int, int, int, off_t);
    if (!real) real = (void *(*)(void *, size_t, int, int, int, off_t))dlsym(RTLD_NEXT, "mmap");
    if (!on) return real(a, len, prot, flags, fd, off);
    double t0 = now_us();
    void *r = real(a, len, prot, flags, fd, off);
    fprintf(stderr, "  mmap fd=%d len=%#zx prot=%d flags=%#x %-9.1f us -> %p\n", fd, len, prot, flags, now_us() - t0, r);
    return r;
}

int munmap(void *a, size_t len) {
    static int (*real)(void *, size_t);
    if (!real) real = (int (*)(void *, size_t))dlsym(RTLD_NEXT, "munmap");
    if (!on) return real(a, len);
    double t0 = now_us();
    int r = real(a, len);
    fprintf(stderr, "  munmap %p len=%#zx %-9.1f us\n", a, len, now_us() - t0);
    return r;
}
