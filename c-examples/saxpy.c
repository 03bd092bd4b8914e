/* saxpy: y = a*x + y with the `saxpy` kernel compiled from CUDA C at run time through libnvrtc.
 * usage: saxpy [device-spec]
 *
 * The CUDA C is the full text of tests/fixtures/kernels.cu (path from TEGRAGPU_KERNELS_CU, else
 * compiled in by meson), compiled with the same options as scripts/gen_cubins.py
 * ("--std=c++17"; the library adds --gpu-architecture for the device). The emulated Orin
 * recognizes kernels by their exact code bytes, so it needs exactly that source and the pinned
 * nvrtc (pip install nvidia-cuda-nvrtc-cu12==12.9.86).
 *
 * Without libnvrtc the example is skipped (exit 77), unless TEGRAGPU_REQUIRE_NVRTC=1. */
#include "common.h"

static char *read_file(const char *path) {
    FILE *f = fopen(path, "rb");
    long len;
    char *s;
    if (f == NULL) return NULL;
    if (fseek(f, 0, SEEK_END) != 0 || (len = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
        fclose(f);
        return NULL;
    }
    s = malloc((size_t)len + 1);
    if (s != NULL && fread(s, 1, (size_t)len, f) != (size_t)len) {
        free(s);
        s = NULL;
    }
    if (s != NULL) s[len] = '\0';
    fclose(f);
    return s;
}

int main(int argc, char **argv) {
    tg_device_info info;
    tg_device *dev = open_device(argc, argv, &info);
    const char *path = getenv("TEGRAGPU_KERNELS_CU");
    const char *options[] = {"--std=c++17"};
    const char *require = getenv("TEGRAGPU_REQUIRE_NVRTC");
    char *source;
    tg_module *mod = NULL;
    tg_kernel *k = NULL;
    tg_kernel_attributes attrs;
    tg_queue *q = NULL;
    tg_signal *done = NULL;
    tg_buf *x = NULL, *y = NULL;
    float *px, *py, a = 2.0f;
    uint64_t va_x, va_y;
    unsigned n = 1u << 20, i, errors = 0;
    uint32_t off[4], size[4];
    unsigned char params[64];
    tg_launch_config cfg;
    tg_status st;

    if (path == NULL || path[0] == '\0') path = TG_KERNELS_CU;
    source = read_file(path);
    if (source == NULL) {
        path = "tests/fixtures/kernels.cu";
        source = read_file(path);
    }
    if (source == NULL) {
        fprintf(stderr, "saxpy: cannot read %s\n", path);
        return 1;
    }
    st = tg_module_compile_cuda(dev, source, options, 1, &mod);
    free(source);
    if (st == TG_ERROR_LIBRARY_MISSING && !(require && strcmp(require, "1") == 0)) {
        printf("SKIP: %s\n", tg_last_error_message());
        return EXIT_SKIP;
    }
    CHECK(st);
    CHECK(tg_module_get_kernel(mod, "saxpy", &k));

    /* saxpy(float a, const float* x, float* y, unsigned n): pack the parameter block by the
     * offsets the kernel declares. */
    memset(&attrs, 0, sizeof attrs);
    attrs.struct_size = sizeof attrs;
    CHECK(tg_kernel_get_attributes(k, &attrs));
    if (attrs.num_params != 4 || attrs.param_bytes > sizeof params) {
        fprintf(stderr, "saxpy: unexpected signature (%u params, %u bytes)\n", attrs.num_params,
                attrs.param_bytes);
        return 1;
    }
    for (i = 0; i < 4; i++) CHECK(tg_kernel_get_param(k, i, &off[i], &size[i]));
    if (size[0] != 4 || size[1] != 8 || size[2] != 8 || size[3] != 4) {
        fprintf(stderr, "saxpy: unexpected parameter sizes %u %u %u %u\n", size[0], size[1],
                size[2], size[3]);
        return 1;
    }

    CHECK(tg_buf_alloc(dev, (uint64_t)n * 4, 0, &x));
    CHECK(tg_buf_alloc(dev, (uint64_t)n * 4, 0, &y));
    px = buf_ptr(x); py = buf_ptr(y);
    /* Small integers: a*x + y is exact with or without fused multiply-add. */
    for (i = 0; i < n; i++) {
        px[i] = (float)(i % 1024);
        py[i] = (float)(i % 77) - 30.0f;
    }
    va_x = buf_va(x); va_y = buf_va(y);
    memset(params, 0, sizeof params);
    memcpy(params + off[0], &a, 4);
    memcpy(params + off[1], &va_x, 8);
    memcpy(params + off[2], &va_y, 8);
    memcpy(params + off[3], &n, 4);

    CHECK(tg_queue_create(dev, TG_QUEUE_COMPUTE, &q));
    CHECK(tg_signal_create(dev, 0, &done));
    cfg = launch_config((n + 127) / 128, 1, 128, 1, 0);
    CHECK(tg_launch(q, k, &cfg, params, attrs.param_bytes));
    CHECK(tg_queue_signal(q, done, 1));
    CHECK(tg_queue_submit(q));
    CHECK(tg_signal_wait(done, 1, TIMEOUT_NS));

    for (i = 0; i < n; i++) {
        float want = a * (float)(i % 1024) + ((float)(i % 77) - 30.0f);
        if (py[i] != want) {
            if (errors < 10) fprintf(stderr, "y[%u] = %g, want %g\n", i, (double)py[i], (double)want);
            errors++;
        }
    }
    CHECK(tg_signal_destroy(done));
    CHECK(tg_queue_destroy(q));
    CHECK(tg_kernel_destroy(k));
    CHECK(tg_module_destroy(mod));
    CHECK(tg_buf_free(x));
    CHECK(tg_buf_free(y));
    CHECK(tg_device_close(dev));
    if (errors) {
        fprintf(stderr, "saxpy: FAIL, %u of %u elements wrong\n", errors, n);
        return 1;
    }
    printf("saxpy: OK (%u elements verified, kernel compiled at run time)\n", n);
    return 0;
}
