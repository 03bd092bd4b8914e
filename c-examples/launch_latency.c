/* launch_latency: launch `empty_kernel`, signal, submit and wait on the CPU, many times; prints
 * the p50 / p99 / max round trip and checks that the signal advanced with every launch.
 * usage: launch_latency [device-spec] [iterations] */
#include "common.h"

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    tg_device_info info;
    tg_device *dev = open_device(argc, argv, &info);
    unsigned iters = argc > 2 ? (unsigned)strtoul(argv[2], NULL, 0) : 1000u;
    char path[4096];
    tg_module *mod = NULL;
    tg_kernel *k = NULL;
    tg_queue *q = NULL;
    tg_signal *sig = NULL;
    tg_launch_config cfg = launch_config(1, 1, 1, 1, 0);
    uint64_t *lat, value = 0, t0;
    unsigned i, bad = 0;

    if (iters == 0) iters = 1;
    lat = calloc(iters, sizeof *lat);
    if (lat == NULL) return 1;
    fixture_cubin(&info, path, sizeof path);
    CHECK(tg_module_load_file(dev, path, &mod));
    CHECK(tg_module_get_kernel(mod, "empty_kernel", &k));
    CHECK(tg_queue_create(dev, TG_QUEUE_COMPUTE, &q));
    CHECK(tg_signal_create(dev, 0, &sig));

    for (i = 0; i < iters; i++) {
        uint64_t before = 0, after = 0;
        CHECK(tg_signal_value(sig, &before));
        if (before != (uint64_t)i) { fprintf(stderr, "before launch %u the signal is %llu\n", i, (unsigned long long)before); bad++; }
        t0 = now_ns();
        CHECK(tg_launch(q, k, &cfg, NULL, 0));
        CHECK(tg_queue_signal(q, sig, i + 1));
        CHECK(tg_queue_submit(q));
        CHECK(tg_signal_wait(sig, i + 1, TIMEOUT_NS));
        lat[i] = now_ns() - t0;
        CHECK(tg_signal_value(sig, &after));
        if (after != (uint64_t)i + 1) { fprintf(stderr, "after launch %u the signal is %llu\n", i, (unsigned long long)after); bad++; }
    }
    CHECK(tg_signal_value(sig, &value));
    if (value != iters) { fprintf(stderr, "final signal value %llu, want %u\n", (unsigned long long)value, iters); bad++; }

    qsort(lat, iters, sizeof *lat, cmp_u64);
    printf("launch_latency: %u launches of empty_kernel (launch + signal + submit + CPU wait): "
           "p50 %.1f us, p99 %.1f us, max %.1f us%s\n",
           iters, (double)lat[iters / 2] / 1e3, (double)lat[(iters * 99) / 100 < iters ? (iters * 99) / 100 : iters - 1] / 1e3,
           (double)lat[iters - 1] / 1e3, info.emulated ? " (emulated)" : "");
    free(lat);
    CHECK(tg_signal_destroy(sig));
    CHECK(tg_queue_destroy(q));
    CHECK(tg_kernel_destroy(k));
    CHECK(tg_module_destroy(mod));
    CHECK(tg_device_close(dev));
    if (bad) {
        fprintf(stderr, "launch_latency: FAIL (%u signal mismatches)\n", bad);
        return 1;
    }
    printf("launch_latency: OK (signal advanced with every launch)\n");
    return 0;
}
