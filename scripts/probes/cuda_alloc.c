// Device machine: what libcuda's cuMemAlloc + cuMemFree of 256 MiB do at the driver boundary.
// Run with LD_PRELOAD=libioctl_trace.so; prints each ioctl of three alloc/free rounds after a
// warm-up, and the wall time of each call.
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <time.h>

static double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

#define CK(x) do { CUresult r_ = (x); if (r_) { fprintf(stderr, "%s: %d\n", #x, r_); return 1; } } while (0)

int main(int argc, char **argv) {
    size_t size = (size_t)256 << 20;
    void (*trace)(int) = (void (*)(int))dlsym(RTLD_DEFAULT, "ioctl_trace_enable");
    CUdevice dev; CUcontext ctx; CUdeviceptr p;
    CK(cuInit(0)); CK(cuDeviceGet(&dev, 0)); CK(cuDevicePrimaryCtxRetain(&ctx, dev)); CK(cuCtxSetCurrent(ctx));
    for (int i = 0; i < 20; i++) { CK(cuMemAlloc(&p, size)); CK(cuMemFree(p)); }
    for (int round = 0; round < 3; round++) {
        if (trace) trace(1);
        double t0 = now_us();
        CK(cuMemAlloc(&p, size));
        double t1 = now_us();
        fprintf(stderr, "round %d: cuMemAlloc %.1f us (ptr %#llx)\n", round, t1 - t0, (unsigned long long)p);
        CK(cuMemFree(p));
        double t2 = now_us();
        fprintf(stderr, "round %d: cuMemFree %.1f us\n", round, t2 - t1);
        if (trace) trace(0);
    }
    // Timing without the tracer's printing.
    double best = 1e9;
    for (int i = 0; i < 50; i++) {
        double t0 = now_us();
        CK(cuMemAlloc(&p, size)); CK(cuMemFree(p));
        double d = now_us() - t0; if (d < best) best = d;
    }
    fprintf(stderr, "untraced alloc+free best of 50: %.1f us\n", best);
    return 0;
}
