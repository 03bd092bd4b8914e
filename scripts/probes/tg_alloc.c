// Device machine: the ioctls behind tg_buf_alloc + tg_buf_free of 256 MiB of video memory,
// for comparison with cuda_alloc.c (same tracer, same rounds).
#include <dlfcn.h>
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
