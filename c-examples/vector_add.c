/* vector_add: c = a + b on the GPU with the fixture kernel `vector_add`, checked on the CPU.
 * usage: vector_add [device-spec] [n]
 * With no device spec, TEGRAGPU_DEVICE and no NVIDIA GPU, it runs on the emulated Orin and says
 * so. The kernel comes from tests/fixtures/cubin/kernels.sm_<major><minor>.cubin. */
#include "common.h"

int main(int argc, char **argv) {
    tg_device_info info;
    tg_device *dev = open_device(argc, argv, &info);
    char path[4096];
    unsigned n = argc > 2 ? (unsigned)strtoul(argv[2], NULL, 0) : 1000003u;
    uint64_t bytes = (uint64_t)n * sizeof(float);
    tg_module *mod = NULL;
    tg_kernel *k = NULL;
    tg_queue *q = NULL;
    tg_signal *done = NULL;
    tg_buf *a = NULL, *b = NULL, *c = NULL;
    float *pa, *pb, *pc;
    uint64_t va_a, va_b, va_c, t0, t1;
    void *args[4];
    tg_launch_config cfg;
    unsigned i, errors = 0;

    if (n == 0) { fprintf(stderr, "n must be > 0\n"); return 1; }
    fixture_cubin(&info, path, sizeof path);
    CHECK(tg_module_load_file(dev, path, &mod));
    CHECK(tg_module_get_kernel(mod, "vector_add", &k));
    CHECK(tg_buf_alloc(dev, bytes, 0, &a));
    CHECK(tg_buf_alloc(dev, bytes, 0, &b));
    CHECK(tg_buf_alloc(dev, bytes, TG_BUF_ZEROED, &c));
    pa = buf_ptr(a); pb = buf_ptr(b); pc = buf_ptr(c);
    for (i = 0; i < n; i++) {
        pa[i] = (float)i * 0.5f;
        pb[i] = 1000.0f - (float)(i % 1000);
    }
    va_a = buf_va(a); va_b = buf_va(b); va_c = buf_va(c);

    CHECK(tg_queue_create(dev, TG_QUEUE_COMPUTE, &q));
    CHECK(tg_signal_create(dev, 0, &done));
    /* cuLaunchKernel style: one pointer per parameter. */
    args[0] = &va_a; args[1] = &va_b; args[2] = &va_c; args[3] = &n;
    cfg = launch_config((n + 255) / 256, 1, 256, 1, 0);
    t0 = now_ns();
    CHECK(tg_launch_args(q, k, &cfg, args, 4));
    CHECK(tg_queue_signal(q, done, 1));
    CHECK(tg_queue_submit(q));
    CHECK(tg_signal_wait(done, 1, TIMEOUT_NS));
    t1 = now_ns();

    for (i = 0; i < n; i++) {
        float want = pa[i] + pb[i];
        if (pc[i] != want) {
            if (errors < 10) fprintf(stderr, "c[%u] = %g, want %g\n", i, (double)pc[i], (double)want);
            errors++;
        }
    }
    printf("vector_add: n = %u, %.3f ms launch-to-signal on %s\n", n, (double)(t1 - t0) / 1e6,
           info.emulated ? "the emulated Orin" : info.name);

    CHECK(tg_signal_destroy(done));
    CHECK(tg_queue_destroy(q));
    CHECK(tg_kernel_destroy(k));
    CHECK(tg_module_destroy(mod));
    CHECK(tg_buf_free(a)); CHECK(tg_buf_free(b)); CHECK(tg_buf_free(c));
    CHECK(tg_device_close(dev));
    if (errors) {
        fprintf(stderr, "vector_add: FAIL, %u of %u elements wrong\n", errors, n);
        return 1;
    }
    printf("vector_add: OK (%u elements verified)\n", n);
    return 0;
}
