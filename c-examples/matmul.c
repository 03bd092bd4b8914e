/* matmul: C = A * B (n x n, row-major) with the fixture kernel `matmul_tiled` (16 x 16 tiles in
 * static shared memory, 2-D grid and block), checked against a CPU product.
 * usage: matmul [device-spec] [n] */
#include "common.h"

int main(int argc, char **argv) {
    tg_device_info info;
    tg_device *dev = open_device(argc, argv, &info);
    char path[4096];
    unsigned n = argc > 2 ? (unsigned)strtoul(argv[2], NULL, 0) : 200u;
    uint64_t bytes;
    tg_module *mod = NULL;
    tg_kernel *k = NULL;
    tg_kernel_attributes attrs;
    tg_queue *q = NULL;
    tg_signal *done = NULL;
    tg_buf *a = NULL, *b = NULL, *c = NULL;
    float *pa, *pb, *pc;
    uint64_t va_a, va_b, va_c;
    void *args[4];
    tg_launch_config cfg;
    unsigned i, j, kk, errors = 0;

    if (n == 0 || n > 4096) { fprintf(stderr, "n must be in 1..4096\n"); return 1; }
    bytes = (uint64_t)n * n * sizeof(float);
    fixture_cubin(&info, path, sizeof path);
    CHECK(tg_module_load_file(dev, path, &mod));
    CHECK(tg_module_get_kernel(mod, "matmul_tiled", &k));
    memset(&attrs, 0, sizeof attrs);
    attrs.struct_size = sizeof attrs;
    CHECK(tg_kernel_get_attributes(k, &attrs));
    /* Two 16 x 16 float tiles. */
    if (attrs.static_shared_bytes != 2 * 16 * 16 * 4) {
        fprintf(stderr, "matmul: static_shared_bytes %u, want 2048\n", attrs.static_shared_bytes);
        return 1;
    }

    CHECK(tg_buf_alloc(dev, bytes, 0, &a));
    CHECK(tg_buf_alloc(dev, bytes, 0, &b));
    CHECK(tg_buf_alloc(dev, bytes, TG_BUF_ZEROED, &c));
    pa = buf_ptr(a); pb = buf_ptr(b); pc = buf_ptr(c);
    /* Small integers keep every partial sum exact in float, whatever the summation order. */
    for (i = 0; i < n * n; i++) {
        pa[i] = (float)((int)(i % 7) - 3);
        pb[i] = (float)((int)(i % 5) - 2);
    }
    va_a = buf_va(a); va_b = buf_va(b); va_c = buf_va(c);
    args[0] = &va_a; args[1] = &va_b; args[2] = &va_c; args[3] = &n;

    CHECK(tg_queue_create(dev, TG_QUEUE_COMPUTE, &q));
    CHECK(tg_signal_create(dev, 0, &done));
    cfg = launch_config((n + 15) / 16, (n + 15) / 16, 16, 16, 0);
    CHECK(tg_launch_args(q, k, &cfg, args, 4));
    CHECK(tg_queue_signal(q, done, 1));
    CHECK(tg_queue_submit(q));
    CHECK(tg_signal_wait(done, 1, TIMEOUT_NS));

    for (i = 0; i < n; i++) {
        for (j = 0; j < n; j++) {
            float want = 0.0f;
            for (kk = 0; kk < n; kk++) want += pa[i * n + kk] * pb[kk * n + j];
            if (pc[i * n + j] != want) {
                if (errors < 10)
                    fprintf(stderr, "C[%u][%u] = %g, want %g\n", i, j, (double)pc[i * n + j],
                            (double)want);
                errors++;
            }
        }
    }
    CHECK(tg_signal_destroy(done));
    CHECK(tg_queue_destroy(q));
    CHECK(tg_kernel_destroy(k));
    CHECK(tg_module_destroy(mod));
    CHECK(tg_buf_free(a)); CHECK(tg_buf_free(b)); CHECK(tg_buf_free(c));
    CHECK(tg_device_close(dev));
    if (errors) {
        fprintf(stderr, "matmul: FAIL, %u of %u elements wrong\n", errors, n * n);
        return 1;
    }
    printf("matmul: OK (%u x %u verified)\n", n, n);
    return 0;
}
