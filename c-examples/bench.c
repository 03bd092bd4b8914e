/* bench: the tegragpu-bench rows measured through the C API (our numbers; tegragpu-bench adds
 * libcuda's side by side): empty-kernel launch + wait p50/p99, a signal-only round trip, CPU cost
 * per launch (submit each / one submit for the burst), a burst of dependent launches until the
 * last completes, copy bandwidth (copy engine and SM copy kernel), and allocate + free. Checks
 * every result it relies on.
 * usage: bench [device-spec] [burst]   (burst defaults to 10000; 1000 on the emulated Orin) */
#include "common.h"

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static double pct(uint64_t *v, unsigned n, unsigned p) {
    unsigned i = (n * p) / 100;
    qsort(v, n, sizeof *v, cmp_u64);
    return (double)v[i < n ? i : n - 1] / 1e3;
}

int main(int argc, char **argv) {
    tg_device_info info;
    tg_device *dev = open_device(argc, argv, &info);
    unsigned burst = argc > 2 ? (unsigned)strtoul(argv[2], NULL, 0) : (info.emulated ? 1000u : 10000u);
    unsigned reps = info.emulated ? 200u : 2000u, i;
    char path[4096];
    tg_module *mod = NULL;
    tg_kernel *k = NULL;
    tg_queue *q = NULL, *cq = NULL;
    tg_signal *sig = NULL;
    tg_buf *a = NULL, *b = NULL;
    tg_launch_config cfg = launch_config(1, 1, 32, 1, 0);
    uint64_t next = 0, t0, *lat, copy_bytes = 64ull << 20, value = 0;
    int bad = 0;

    if (burst < 16) burst = 16;
    lat = calloc(reps, sizeof *lat);
    if (lat == NULL) return 1;
    fixture_cubin(&info, path, sizeof path);
    CHECK(tg_module_load_file(dev, path, &mod));
    CHECK(tg_module_get_kernel(mod, "empty_kernel", &k));
    /* Deep enough for the whole burst: the CPU-cost rows time recording, not ring waits. */
    CHECK(tg_queue_create_with_depth(dev, TG_QUEUE_COMPUTE, 16384, &q));
    CHECK(tg_signal_create(dev, 0, &sig));
    printf("bench: %s (sm_%u%u, %u SMs, %s)\n", info.name, info.sm_major, info.sm_minor, info.sm_count, backend_name(&info));

    for (i = 0; i < reps + 50; i++) {
        t0 = now_ns();
        CHECK(tg_launch(q, k, &cfg, NULL, 0));
        CHECK(tg_queue_signal(q, sig, ++next));
        CHECK(tg_queue_submit(q));
        CHECK(tg_signal_wait(sig, next, TIMEOUT_NS));
        if (i >= 50) lat[i - 50] = now_ns() - t0;
    }
    printf("  empty launch + wait           p50 %8.3f us   p99 %8.3f us\n", pct(lat, reps, 50), pct(lat, reps, 99));
    for (i = 0; i < reps; i++) {
        t0 = now_ns();
        CHECK(tg_queue_signal(q, sig, ++next));
        CHECK(tg_queue_submit(q));
        CHECK(tg_signal_wait(sig, next, TIMEOUT_NS));
        lat[i] = now_ns() - t0;
    }
    printf("  floor: signal only + wait     p50 %8.3f us\n", pct(lat, reps, 50));

    t0 = now_ns();
    for (i = 0; i < burst; i++) {
        CHECK(tg_launch(q, k, &cfg, NULL, 0));
        CHECK(tg_queue_submit(q));
    }
    printf("  CPU per launch, submit each       %8.3f us  (%u launches)\n", (double)(now_ns() - t0) / 1e3 / burst, burst);
    CHECK(tg_device_synchronize(dev, TIMEOUT_NS));
    t0 = now_ns();
    for (i = 0; i < burst; i++) CHECK(tg_launch(q, k, &cfg, NULL, 0));
    CHECK(tg_queue_submit(q));
    printf("  CPU per launch, one submit        %8.3f us\n", (double)(now_ns() - t0) / 1e3 / burst);
    CHECK(tg_device_synchronize(dev, TIMEOUT_NS));
    t0 = now_ns();
    for (i = 0; i < burst; i++) CHECK(tg_launch(q, k, &cfg, NULL, 0));
    CHECK(tg_queue_signal(q, sig, ++next));
    CHECK(tg_queue_submit(q));
    CHECK(tg_signal_wait(sig, next, TIMEOUT_NS));
    printf("  %u dependent launches until done %8.3f ms\n", burst, (double)(now_ns() - t0) / 1e6);
    CHECK(tg_signal_value(sig, &value));
    if (value != next) { fprintf(stderr, "bench: signal %llu, want %llu\n", (unsigned long long)value, (unsigned long long)next); bad = 1; }

    /* Device-to-device copy bandwidth, copy engine (copy queue) and built-in SM copy kernel
     * (compute queue): CPU wall time of copy + signal + wait, the best of 5. */
    CHECK(tg_queue_create(dev, TG_QUEUE_COPY, &cq));
    CHECK(tg_buf_alloc(dev, copy_bytes, TG_BUF_DEVICE_LOCAL, &a));
    CHECK(tg_buf_alloc(dev, copy_bytes, TG_BUF_DEVICE_LOCAL, &b));
    memset(buf_ptr(a), 0x5a, copy_bytes);
    for (int pass = 0; pass < 2; pass++) {
        tg_queue *xq = pass == 0 ? cq : q;
        double best = 1e30;
        unsigned char *pb = buf_ptr(b);
        pb[0] = 0; pb[copy_bytes - 1] = 0;
        for (i = 0; i < 5; i++) {
            t0 = now_ns();
            CHECK(tg_queue_copy(xq, b, 0, a, 0, copy_bytes));
            CHECK(tg_queue_signal(xq, sig, ++next));
            CHECK(tg_queue_submit(xq));
            CHECK(tg_signal_wait(sig, next, TIMEOUT_NS));
            double s = (double)(now_ns() - t0) / 1e9;
            if (s < best) best = s;
        }
        printf("  copy 64 MiB, %-14s     %8.3f GB/s\n", pass == 0 ? "copy engine" : "SM copy kernel", (double)copy_bytes / best / 1e9);
        if (pb[copy_bytes - 1] != 0x5a || pb[0] != 0x5a) {
            fprintf(stderr, "bench: copy (%s) did not copy\n", pass == 0 ? "copy engine" : "SM copy kernel");
            bad = 1;
        }
    }
    CHECK(tg_buf_free(a));
    CHECK(tg_buf_free(b));
    for (int k = -3; k < 20; k++) { /* 3 untimed warm-up rounds, then 20 (reps >= 200) */
        tg_buf *t = NULL;
        t0 = now_ns();
        CHECK(tg_buf_alloc(dev, 256ull << 20, TG_BUF_DEVICE_LOCAL, &t));
        CHECK(tg_buf_free(t));
        if (k >= 0) lat[k] = now_ns() - t0;
    }
    printf("  alloc + free 256 MiB          p50 %8.3f us\n", pct(lat, 20, 50));

    free(lat);
    CHECK(tg_queue_destroy(cq));
    CHECK(tg_signal_destroy(sig));
    CHECK(tg_queue_destroy(q));
    CHECK(tg_kernel_destroy(k));
    CHECK(tg_module_destroy(mod));
    CHECK(tg_device_close(dev));
    printf(bad ? "bench: FAILED\n" : "bench: OK\n");
    return bad;
}
