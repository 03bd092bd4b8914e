// Device machine: the ioctls behind tg_buf_alloc + tg_buf_free of 256 MiB of video memory,
// for comparison with cuda_alloc.c (same tracer, same rounds).
#include <dlfcn.h>
#include <stdlib.h>
#include <stdio.h>
#include <time.h>
#include "tegragpu.h"

static double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

int main(int argc, char **argv) {
    // "anchor": keep one more buffer alive next to the measured one; "queue": a compute queue
    // (its rings) exists while measuring.
    int anchor = argc > 1 && argv[1][0] == 'a', queue = argc > 1 && argv[1][0] == 'q';
    void (*trace)(int) = (void (*)(int))dlsym(RTLD_DEFAULT, "ioctl_trace_enable");
    struct tg_device *dev;
    struct tg_buf *b;
    if (tg_device_open("rm", &dev) != TG_OK) { fprintf(stderr, "%s\n", tg_last_error_message()); return 1; }
    if (argc > 1 && argv[1][0] == 'b') { /* "big": 10 GiB buffers until 100 GiB or a failure */
        struct tg_buf *bufs[10];
        int n = 0;
        if (getenv("WITH_CUDA")) { /* libcuda in the same process, with a context and 1 GiB */
            void *cu = dlopen("libcuda.so.1", RTLD_NOW);
            int (*init)(unsigned) = cu ? (int (*)(unsigned))dlsym(cu, "cuInit") : NULL;
            int (*get)(int *, int) = cu ? (int (*)(int *, int))dlsym(cu, "cuDeviceGet") : NULL;
            int (*retain)(void **, int) = cu ? (int (*)(void **, int))dlsym(cu, "cuDevicePrimaryCtxRetain") : NULL;
            int (*set)(void *) = cu ? (int (*)(void *))dlsym(cu, "cuCtxSetCurrent") : NULL;
            int (*alloc)(unsigned long long *, size_t) = cu ? (int (*)(unsigned long long *, size_t))dlsym(cu, "cuMemAlloc_v2") : NULL;
            int d = 0; void *ctx = NULL; unsigned long long cp = 0;
            if (!alloc || init(0) || get(&d, 0) || retain(&ctx, d) || set(ctx) || alloc(&cp, 1ull << 30)) {
                fprintf(stderr, "libcuda setup failed\n");
                return 1;
            }
            printf("big: libcuda context and a 1 GiB cuMemAlloc at %#llx\n", cp);
        }
        for (; n < 10; n++) {
            if (tg_buf_alloc(dev, 10ull << 30, TG_BUF_DEVICE_LOCAL, &bufs[n]) != TG_OK) {
                fprintf(stderr, "buffer %d: %s\n", n, tg_last_error_message());
                break;
            }
        }
        printf("big: %d x 10 GiB allocated\n", n);
        int rc = n == 10 ? 0 : 1;
        if (n > 0) { /* CPU access to the last (highest) one */
            void *vp = NULL;
            volatile unsigned char *p = tg_buf_cpu_ptr(bufs[n - 1], &vp) == TG_OK ? vp : NULL;
            if (!p) { fprintf(stderr, "tg_buf_cpu_ptr: %s\n", tg_last_error_message()); rc = 1; }
            else {
                p[0] = 1; p[(10ull << 30) - 1] = 2;
                printf("big: buffer %d CPU-mapped at %p, first/last byte %d/%d\n", n - 1, (void *)p, p[0], p[(10ull << 30) - 1]);
                if (p[0] != 1 || p[(10ull << 30) - 1] != 2) rc = 1;
            }
        }
        while (n > 0) tg_buf_free(bufs[--n]);
        tg_device_close(dev);
        return rc;
    }
    struct tg_buf *keep = NULL;
    if (anchor && tg_buf_alloc(dev, 256u << 20, TG_BUF_DEVICE_LOCAL, &keep) != TG_OK) return 1;
    struct tg_queue *q = NULL;
    if (queue && tg_queue_create(dev, TG_QUEUE_COMPUTE, &q) != TG_OK) return 1;
    for (int i = 0; i < 20; i++) {
        if (tg_buf_alloc(dev, 256u << 20, TG_BUF_DEVICE_LOCAL, &b) != TG_OK) { fprintf(stderr, "%s\n", tg_last_error_message()); return 1; }
        tg_buf_free(b);
    }
    for (int round = 0; round < 3; round++) {
        if (trace) trace(1);
        double t0 = now_us();
        tg_buf_alloc(dev, 256u << 20, TG_BUF_DEVICE_LOCAL, &b);
        double t1 = now_us();
        fprintf(stderr, "round %d: tg_buf_alloc %.1f us\n", round, t1 - t0);
        tg_buf_free(b);
        fprintf(stderr, "round %d: tg_buf_free %.1f us\n", round, now_us() - t1);
        if (trace) trace(0);
    }
    double best = 1e9;
    for (int i = 0; i < 50; i++) {
        double t0 = now_us();
        tg_buf_alloc(dev, 256u << 20, TG_BUF_DEVICE_LOCAL, &b);
        tg_buf_free(b);
        double d = now_us() - t0; if (d < best) best = d;
    }
    fprintf(stderr, "untraced alloc+free best of 50: %.1f us\n", best);
    if (keep) tg_buf_free(keep);
    if (q) tg_queue_destroy(q);
    tg_device_close(dev);
    return 0;
}
