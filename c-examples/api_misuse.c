/* api_misuse: call every exported function with NULL pointers, NULL / destroyed / wrong-type /
 * made-up handles, zero and huge sizes and launches that do not fit the kernel. Each call must
 * return the documented status, tg_last_error_message() must name the call and the values, out-
 * parameters must stay untouched, and nothing may crash (meson also builds this file with
 * -fsanitize=address as api_misuse_asan).
 *
 * usage: api_misuse [device-spec]   (default: TEGRAGPU_DEVICE, else "emu")
 * Prints "N passed, N failed" and exits non-zero if any check failed. */
#include "common.h"

#include <unistd.h>

static unsigned passed, failed;

static void check_status(int line, const char *expr, tg_status got, tg_status want,
                         const char *call, const char *n1, const char *n2) {
    const char *msg = tg_last_error_message();
    int ok = got == want;
    if (ok && want != TG_OK) {
        size_t cl = strlen(call);
        if (strncmp(msg, call, cl) != 0 || msg[cl] != ':') ok = 0;
        if (n1 && !strstr(msg, n1)) ok = 0;
        if (n2 && !strstr(msg, n2)) ok = 0;
    }
    if (ok) {
        passed++;
    } else {
        failed++;
        fprintf(stderr, "FAIL line %d: %s\n  got %s, want %s\n  message: \"%s\"\n  expected it to start with \"%s:\"%s%s%s%s\n",
                line, expr, tg_status_str(got), tg_status_str(want), msg, call,
                n1 ? " and contain \"" : "", n1 ? n1 : "", n2 ? "\", \"" : "", n2 ? n2 : "");
    }
}

static void check_true(int line, const char *what, int cond) {
    if (cond) {
        passed++;
    } else {
        failed++;
        fprintf(stderr, "FAIL line %d: %s\n", line, what);
    }
}

/* EXPECT(call, status, "tg_name", needle or NULL, needle or NULL) */
#define EXPECT(expr, want, call, n1, n2) check_status(__LINE__, #expr, (expr), (want), (call), (n1), (n2))
#define EXPECT_OK(expr) check_status(__LINE__, #expr, (expr), TG_OK, "", NULL, NULL)
#define TRUE(cond) check_true(__LINE__, #cond, (cond))

#define NULL_H TG_ERROR_INVALID_HANDLE
#define SENTINEL ((void *)(uintptr_t)0x5eb7)

static unsigned char *read_all(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    long n;
    unsigned char *p;
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    p = malloc((size_t)n);
    if (p && fread(p, 1, (size_t)n, f) != (size_t)n) { free(p); p = NULL; }
    fclose(f);
    *len = (size_t)n;
    return p;
}

int main(int argc, char **argv) {
    const char *spec = argc > 1 ? argv[1] : getenv("TEGRAGPU_DEVICE");
    tg_device *dev = NULL, *dead_dev = NULL;
    tg_device_info info;
    tg_fault_report fault;
    tg_kernel_attributes attrs;
    tg_buf *buf = NULL, *buf2 = NULL, *dead_buf = NULL, *out_buf = (tg_buf *)SENTINEL;
    tg_module *mod = NULL, *dead_mod = NULL, *out_mod = (tg_module *)SENTINEL;
    tg_kernel *vadd = NULL, *bounded = NULL, *mm = NULL, *empty = NULL, *dead_k = NULL;
    tg_kernel *out_k = (tg_kernel *)SENTINEL;
    tg_queue *cq = NULL, *xq = NULL, *dead_q = NULL, *out_q = (tg_queue *)SENTINEL;
    tg_signal *sig = NULL, *dead_sig = NULL, *out_sig = (tg_signal *)SENTINEL;
    tg_cmdbuf *cb = NULL, *ocb = NULL, *dead_cb = NULL, *out_cb = (tg_cmdbuf *)SENTINEL;
    uint32_t node = 0x5eb7;
    tg_launch_config cfg, bad_cfg;
    char path[4096];
    unsigned char garbage[64], params[64];
    unsigned char *cubin;
    size_t cubin_len = 0;
    void *ptr = SENTINEL;
    uint64_t u64 = 0x5eb7, va = 0;
    uint32_t off = 0x5eb7, sz = 0x5eb7;
    int fd = -7;
    unsigned n = 16, i;
    void *args[4];
    const char *opts_null[1] = {NULL};
    const char *opts_ok[1] = {"--std=c++17"};
    int fake_object = 0;
    tg_device *made_up = (tg_device *)(void *)&fake_object; /* a valid address, not a handle */
    tg_status st;

    if (spec == NULL || spec[0] == '\0') spec = "emu";
    /* TEGRAGPU_DEVICE only applies to a NULL spec; clear it so the NULL-spec cases below do not
     * depend on the caller's environment. */
    setenv("TEGRAGPU_DEVICE_FOR_MISUSE", spec, 1);
    unsetenv("TEGRAGPU_DEVICE");

    /* ---- library -------------------------------------------------------------------------- */
    TRUE((tg_version() >> 16) == TG_VERSION_MAJOR);
    TRUE(tg_last_error_message() != NULL);
    for (i = 0; i <= 16; i++) TRUE(strncmp(tg_status_str((tg_status)i), "TG_", 3) == 0);
    TRUE(strcmp(tg_status_str((tg_status)99), "unknown tg_status") == 0);
    TRUE(strcmp(tg_status_str((tg_status)-1), "unknown tg_status") == 0);

    /* ---- device --------------------------------------------------------------------------- */
    EXPECT(tg_device_open(spec, NULL), TG_ERROR_NULL_POINTER, "tg_device_open", "out is NULL", NULL);
    EXPECT(tg_device_open("no-such-device", &dead_dev), TG_ERROR_INVALID_ARGUMENT, "tg_device_open", "no-such-device", NULL);
    TRUE(dead_dev == NULL);
    EXPECT_OK(tg_device_open(spec, &dev));
    if (dev == NULL) { fprintf(stderr, "cannot open %s: %s\n", spec, tg_last_error_message()); return 1; }
    EXPECT_OK(tg_device_open(spec, &dead_dev));
    EXPECT_OK(tg_device_close(dead_dev));
    EXPECT(tg_device_close(dead_dev), NULL_H, "tg_device_close", "dev 0x", "not a live tg_device");
    EXPECT_OK(tg_device_close(NULL));
    EXPECT(tg_device_close(made_up), NULL_H, "tg_device_close", "not a live tg_device", NULL);

    memset(&info, 0x5a, sizeof info);
    info.struct_size = 3;
    EXPECT(tg_device_get_info(dev, &info), TG_ERROR_INVALID_ARGUMENT, "tg_device_get_info", "struct_size is 3", "sizeof(tg_device_info)");
    TRUE(info.sm_major == 0x5a5a5a5au); /* untouched on failure */
    info.struct_size = sizeof info;
    EXPECT(tg_device_get_info(NULL, &info), NULL_H, "tg_device_get_info", "dev is NULL", NULL);
    EXPECT(tg_device_get_info(dead_dev, &info), NULL_H, "tg_device_get_info", "not a live tg_device", NULL);
    EXPECT(tg_device_get_info(made_up, &info), NULL_H, "tg_device_get_info", NULL, NULL);
    EXPECT(tg_device_get_info(dev, NULL), TG_ERROR_NULL_POINTER, "tg_device_get_info", "out is NULL", NULL);
    EXPECT_OK(tg_device_get_info(dev, &info));
    TRUE(info.struct_size == sizeof info && info.name[0] != '\0' && info.sm_count > 0);

    EXPECT(tg_device_synchronize(NULL, 0), NULL_H, "tg_device_synchronize", "dev is NULL", NULL);
    EXPECT(tg_device_synchronize(dead_dev, 0), NULL_H, "tg_device_synchronize", NULL, NULL);
    EXPECT_OK(tg_device_synchronize(dev, TIMEOUT_NS));

    memset(&fault, 0, sizeof fault);
    fault.struct_size = sizeof fault;
    EXPECT(tg_device_get_fault(dev, &fault), TG_ERROR_NOT_FOUND, "tg_device_get_fault", "not faulted", NULL);
    EXPECT(tg_device_get_fault(NULL, &fault), NULL_H, "tg_device_get_fault", "dev is NULL", NULL);
    EXPECT(tg_device_get_fault(dev, NULL), TG_ERROR_NULL_POINTER, "tg_device_get_fault", "out is NULL", NULL);
    fault.struct_size = 0;
    EXPECT(tg_device_get_fault(dev, &fault), TG_ERROR_INVALID_ARGUMENT, "tg_device_get_fault", "struct_size is 0", NULL);

    /* ---- buffers -------------------------------------------------------------------------- */
    EXPECT(tg_buf_alloc(dev, 0, 0, &out_buf), TG_ERROR_INVALID_ARGUMENT, "tg_buf_alloc", "size_bytes is 0", NULL);
    EXPECT(tg_buf_alloc(dev, 1ull << 62, 0, &out_buf), TG_ERROR_OUT_OF_MEMORY, "tg_buf_alloc", "4611686018427387904", NULL);
    EXPECT(tg_buf_alloc(dev, UINT64_MAX, 0, &out_buf), TG_ERROR_OUT_OF_MEMORY, "tg_buf_alloc", "18446744073709551615", NULL);
    EXPECT(tg_buf_alloc(dev, 4096, 16, &out_buf), TG_ERROR_INVALID_ARGUMENT, "tg_buf_alloc", "0x10", "unknown bits");
    EXPECT(tg_buf_alloc(dev, 4096, 0xffffffffu, &out_buf), TG_ERROR_INVALID_ARGUMENT, "tg_buf_alloc", "0xfffffff0", NULL);
    EXPECT(tg_buf_alloc(dev, 4096, TG_BUF_DEVICE_LOCAL | TG_BUF_CPU_CACHED, &out_buf), TG_ERROR_INVALID_ARGUMENT, "tg_buf_alloc", "mutually exclusive", NULL);
    EXPECT(tg_buf_alloc(dev, 4096, TG_BUF_CPU_CACHED | TG_BUF_WRITE_COMBINED, &out_buf), TG_ERROR_INVALID_ARGUMENT, "tg_buf_alloc", "mutually exclusive", NULL);
    EXPECT(tg_buf_alloc(NULL, 4096, 0, &out_buf), NULL_H, "tg_buf_alloc", "dev is NULL", NULL);
    EXPECT(tg_buf_alloc(dead_dev, 4096, 0, &out_buf), NULL_H, "tg_buf_alloc", "not a live tg_device", NULL);
    EXPECT(tg_buf_alloc(dev, 4096, 0, NULL), TG_ERROR_NULL_POINTER, "tg_buf_alloc", "out is NULL", NULL);
    TRUE(out_buf == (tg_buf *)SENTINEL); /* never written on failure */
    EXPECT_OK(tg_buf_alloc(dev, 1 << 20, TG_BUF_ZEROED, &buf));
    EXPECT_OK(tg_buf_alloc(dev, 1 << 20, TG_BUF_WRITE_COMBINED, &buf2));
    EXPECT_OK(tg_buf_alloc(dev, 100, 0, &dead_buf));
    EXPECT_OK(tg_buf_free(dead_buf));
    EXPECT(tg_buf_free(dead_buf), NULL_H, "tg_buf_free", "not a live tg_buf", NULL);
    EXPECT_OK(tg_buf_free(NULL));
    /* A wrong-type handle is refused and the object it names survives. */
    EXPECT(tg_buf_free((tg_buf *)(void *)dev), NULL_H, "tg_buf_free", "is a tg_device, expected a tg_buf", NULL);
    EXPECT_OK(tg_device_get_info(dev, &info));

    EXPECT(tg_buf_cpu_ptr(NULL, &ptr), NULL_H, "tg_buf_cpu_ptr", "buf is NULL", NULL);
    EXPECT(tg_buf_cpu_ptr(dead_buf, &ptr), NULL_H, "tg_buf_cpu_ptr", "not a live tg_buf", NULL);
    EXPECT(tg_buf_cpu_ptr(buf, NULL), TG_ERROR_NULL_POINTER, "tg_buf_cpu_ptr", "out is NULL", NULL);
    TRUE(ptr == SENTINEL);
    EXPECT_OK(tg_buf_cpu_ptr(buf, &ptr));
    TRUE(ptr != SENTINEL && ptr != NULL && ((unsigned char *)ptr)[12345] == 0); /* TG_BUF_ZEROED */
    EXPECT(tg_buf_gpu_address(NULL, &u64), NULL_H, "tg_buf_gpu_address", "buf is NULL", NULL);
    EXPECT(tg_buf_gpu_address(dead_buf, &u64), NULL_H, "tg_buf_gpu_address", NULL, NULL);
    EXPECT(tg_buf_gpu_address(buf, NULL), TG_ERROR_NULL_POINTER, "tg_buf_gpu_address", "out is NULL", NULL);
    TRUE(u64 == 0x5eb7);
    EXPECT_OK(tg_buf_gpu_address(buf, &va));
    TRUE(va != 0);
    EXPECT(tg_buf_size(NULL, &u64), NULL_H, "tg_buf_size", "buf is NULL", NULL);
    EXPECT(tg_buf_size((tg_buf *)(void *)made_up, &u64), NULL_H, "tg_buf_size", NULL, NULL);
    EXPECT(tg_buf_size(buf, NULL), TG_ERROR_NULL_POINTER, "tg_buf_size", "out is NULL", NULL);
    EXPECT_OK(tg_buf_size(buf, &u64));
    TRUE(u64 == (1u << 20));
    EXPECT(tg_buf_export_dmabuf(NULL, &fd), NULL_H, "tg_buf_export_dmabuf", "buf is NULL", NULL);
    EXPECT(tg_buf_export_dmabuf(dead_buf, &fd), NULL_H, "tg_buf_export_dmabuf", NULL, NULL);
    EXPECT(tg_buf_export_dmabuf(buf, NULL), TG_ERROR_NULL_POINTER, "tg_buf_export_dmabuf", "fd_out is NULL", NULL);
    TRUE(fd == -7);
    st = tg_buf_export_dmabuf(buf, &fd);
    TRUE(st == TG_OK || st == TG_ERROR_NOT_SUPPORTED);
    if (st == TG_OK) { TRUE(fd >= 0); close(fd); }
    /* Sharing through file descriptors. */
    fd = -7;
    u64 = 0x5eb7;
    EXPECT(tg_buf_export_fd(NULL, &fd, &u64), NULL_H, "tg_buf_export_fd", "buf is NULL", NULL);
    EXPECT(tg_buf_export_fd(dead_buf, &fd, &u64), NULL_H, "tg_buf_export_fd", NULL, NULL);
    EXPECT(tg_buf_export_fd(buf, NULL, &u64), TG_ERROR_NULL_POINTER, "tg_buf_export_fd", "fd_out is NULL", NULL);
    EXPECT(tg_buf_export_fd(buf, &fd, NULL), TG_ERROR_NULL_POINTER, "tg_buf_export_fd", "size_out is NULL", NULL);
    TRUE(fd == -7 && u64 == 0x5eb7);
    EXPECT(tg_buf_import_fd(NULL, 0, 0, 0, &out_buf), NULL_H, "tg_buf_import_fd", "dev is NULL", NULL);
    EXPECT(tg_buf_import_fd(dead_dev, 0, 0, 0, &out_buf), NULL_H, "tg_buf_import_fd", "not a live tg_device", NULL);
    EXPECT(tg_buf_import_fd(dev, 0, 0, 0, NULL), TG_ERROR_NULL_POINTER, "tg_buf_import_fd", "out is NULL", NULL);
    EXPECT(tg_buf_import_fd(dev, -1, 0, 0, &out_buf), TG_ERROR_INVALID_ARGUMENT, "tg_buf_import_fd", "fd -1", NULL);
    EXPECT(tg_buf_import_fd(dev, 0, 0, 1, &out_buf), TG_ERROR_INVALID_ARGUMENT, "tg_buf_import_fd", "flags 0x1", NULL);
    EXPECT(tg_buf_import_fd(dev, 0, UINT64_MAX, 0, &out_buf), TG_ERROR_INVALID_ARGUMENT, "tg_buf_import_fd", "18446744073709551615", NULL);
    TRUE(out_buf == (tg_buf *)SENTINEL);
    st = tg_buf_export_fd(buf, &fd, &u64);
    TRUE(st == TG_OK || st == TG_ERROR_NOT_SUPPORTED);
    if (st == TG_OK) {
        tg_buf *imp = NULL;
        TRUE(fd >= 0 && u64 >= (1u << 20));
        EXPECT(tg_buf_import_fd(dev, fd, u64 + 1, 0, &out_buf), TG_ERROR_INVALID_ARGUMENT, "tg_buf_import_fd", "exceeds", NULL);
        TRUE(out_buf == (tg_buf *)SENTINEL);
        EXPECT_OK(tg_buf_import_fd(dev, fd, 0, 0, &imp));
        close(fd);
        EXPECT_OK(tg_buf_size(imp, &u64));
        TRUE(u64 >= (1u << 20));
        EXPECT_OK(tg_buf_free(imp));
    }

    /* ---- modules and kernels -------------------------------------------------------------- */
    fixture_cubin(&info, path, sizeof path);
    cubin = read_all(path, &cubin_len);
    TRUE(cubin != NULL && cubin_len > 256);
    memset(garbage, 0x42, sizeof garbage);
    EXPECT(tg_module_load(dev, NULL, 64, &out_mod), TG_ERROR_NULL_POINTER, "tg_module_load", "data is NULL", NULL);
    EXPECT(tg_module_load(dev, garbage, 0, &out_mod), TG_ERROR_INVALID_ARGUMENT, "tg_module_load", "size_bytes is 0", NULL);
    EXPECT(tg_module_load(dev, garbage, SIZE_MAX, &out_mod), TG_ERROR_INVALID_ARGUMENT, "tg_module_load", "18446744073709551615", NULL);
    EXPECT(tg_module_load(dev, garbage, sizeof garbage, &out_mod), TG_ERROR_INVALID_CUBIN, "tg_module_load", NULL, NULL);
    if (cubin) EXPECT(tg_module_load(dev, cubin, 100, &out_mod), TG_ERROR_INVALID_CUBIN, "tg_module_load", NULL, NULL);
    EXPECT(tg_module_load(NULL, garbage, sizeof garbage, &out_mod), NULL_H, "tg_module_load", "dev is NULL", NULL);
    EXPECT(tg_module_load(dev, garbage, sizeof garbage, NULL), TG_ERROR_NULL_POINTER, "tg_module_load", "out is NULL", NULL);
    EXPECT(tg_module_load_file(dev, "/nonexistent/k.cubin", &out_mod), TG_ERROR_NOT_FOUND, "tg_module_load_file", "/nonexistent/k.cubin", NULL);
    EXPECT(tg_module_load_file(dev, "/", &out_mod), TG_ERROR_INVALID_ARGUMENT, "tg_module_load_file", "\"/\" is a directory", NULL);
    EXPECT(tg_module_load_file(dev, "/dev/zero", &out_mod), TG_ERROR_INVALID_ARGUMENT, "tg_module_load_file", "\"/dev/zero\" is a character device", NULL);
    EXPECT(tg_module_load_file(dev, NULL, &out_mod), TG_ERROR_NULL_POINTER, "tg_module_load_file", "path is NULL", NULL);
    EXPECT(tg_module_load_file(dead_dev, path, &out_mod), NULL_H, "tg_module_load_file", NULL, NULL);
    EXPECT(tg_module_load_file(dev, path, NULL), TG_ERROR_NULL_POINTER, "tg_module_load_file", "out is NULL", NULL);
    EXPECT(tg_module_compile_cuda(dev, NULL, NULL, 0, &out_mod), TG_ERROR_NULL_POINTER, "tg_module_compile_cuda", "source is NULL", NULL);
    EXPECT(tg_module_compile_cuda(dev, "x", NULL, 2, &out_mod), TG_ERROR_NULL_POINTER, "tg_module_compile_cuda", "num_options is 2", NULL);
    EXPECT(tg_module_compile_cuda(dev, "x", opts_null, 1, &out_mod), TG_ERROR_NULL_POINTER, "tg_module_compile_cuda", "options[0] is NULL", NULL);
    EXPECT(tg_module_compile_cuda(dev, "x", opts_ok, SIZE_MAX, &out_mod), TG_ERROR_INVALID_ARGUMENT, "tg_module_compile_cuda", "18446744073709551615", NULL);
    EXPECT(tg_module_compile_cuda(NULL, "x", NULL, 0, &out_mod), NULL_H, "tg_module_compile_cuda", "dev is NULL", NULL);
    EXPECT(tg_module_compile_cuda(dev, "x", NULL, 0, NULL), TG_ERROR_NULL_POINTER, "tg_module_compile_cuda", "out is NULL", NULL);
    st = tg_module_compile_cuda(dev, "this is not CUDA", opts_ok, 1, &out_mod);
    TRUE(st == TG_ERROR_COMPILE || st == TG_ERROR_LIBRARY_MISSING);
    TRUE(strncmp(tg_last_error_message(), "tg_module_compile_cuda:", 23) == 0);
    TRUE(out_mod == (tg_module *)SENTINEL);

    EXPECT_OK(tg_module_load_file(dev, path, &mod));
    EXPECT_OK(tg_module_load_file(dev, path, &dead_mod));
    EXPECT_OK(tg_module_destroy(dead_mod));
    EXPECT(tg_module_destroy(dead_mod), NULL_H, "tg_module_destroy", "not a live tg_module", NULL);
    EXPECT_OK(tg_module_destroy(NULL));
    EXPECT(tg_module_get_kernel(mod, "no_such_kernel", &out_k), TG_ERROR_NOT_FOUND, "tg_module_get_kernel", "no_such_kernel", "vector_add");
    EXPECT(tg_module_get_kernel(mod, NULL, &out_k), TG_ERROR_NULL_POINTER, "tg_module_get_kernel", "name is NULL", NULL);
    EXPECT(tg_module_get_kernel(NULL, "vector_add", &out_k), NULL_H, "tg_module_get_kernel", "module is NULL", NULL);
    EXPECT(tg_module_get_kernel(dead_mod, "vector_add", &out_k), NULL_H, "tg_module_get_kernel", "not a live tg_module", NULL);
    EXPECT(tg_module_get_kernel((tg_module *)(void *)buf, "vector_add", &out_k), NULL_H, "tg_module_get_kernel", "is a tg_buf, expected a tg_module", NULL);
    EXPECT(tg_module_get_kernel(mod, "vector_add", NULL), TG_ERROR_NULL_POINTER, "tg_module_get_kernel", "out is NULL", NULL);
    TRUE(out_k == (tg_kernel *)SENTINEL);
    EXPECT_OK(tg_module_get_kernel(mod, "vector_add", &vadd));
    EXPECT_OK(tg_module_get_kernel(mod, "bounded_128", &bounded));
    EXPECT_OK(tg_module_get_kernel(mod, "matmul_tiled", &mm));
    EXPECT_OK(tg_module_get_kernel(mod, "empty_kernel", &empty));
    EXPECT_OK(tg_module_get_kernel(mod, "fill_u32", &dead_k));
    EXPECT_OK(tg_kernel_destroy(dead_k));
    EXPECT(tg_kernel_destroy(dead_k), NULL_H, "tg_kernel_destroy", "not a live tg_kernel", NULL);
    EXPECT_OK(tg_kernel_destroy(NULL));

    memset(&attrs, 0, sizeof attrs);
    attrs.struct_size = 8;
    EXPECT(tg_kernel_get_attributes(vadd, &attrs), TG_ERROR_INVALID_ARGUMENT, "tg_kernel_get_attributes", "struct_size is 8", NULL);
    attrs.struct_size = sizeof attrs;
    EXPECT(tg_kernel_get_attributes(NULL, &attrs), NULL_H, "tg_kernel_get_attributes", "kernel is NULL", NULL);
    EXPECT(tg_kernel_get_attributes(dead_k, &attrs), NULL_H, "tg_kernel_get_attributes", NULL, NULL);
    EXPECT(tg_kernel_get_attributes(vadd, NULL), TG_ERROR_NULL_POINTER, "tg_kernel_get_attributes", "out is NULL", NULL);
    EXPECT_OK(tg_kernel_get_attributes(vadd, &attrs));
    /* vector_add(const float*, const float*, float*, unsigned): 3 x 8 + 4 bytes. */
    TRUE(attrs.num_params == 4 && attrs.param_bytes == 28);
    EXPECT_OK(tg_kernel_get_attributes(bounded, &attrs));
    TRUE(attrs.max_threads_per_block == 128); /* __launch_bounds__(128) */
    EXPECT(tg_kernel_get_param(vadd, 4, &off, &sz), TG_ERROR_INVALID_ARGUMENT, "tg_kernel_get_param", "index 4", "4 parameters");
    EXPECT(tg_kernel_get_param(vadd, 0xffffffffu, &off, &sz), TG_ERROR_INVALID_ARGUMENT, "tg_kernel_get_param", "4294967295", NULL);
    EXPECT(tg_kernel_get_param(vadd, 0, NULL, &sz), TG_ERROR_NULL_POINTER, "tg_kernel_get_param", "offset is NULL", NULL);
    EXPECT(tg_kernel_get_param(vadd, 0, &off, NULL), TG_ERROR_NULL_POINTER, "tg_kernel_get_param", "size is NULL", NULL);
    EXPECT(tg_kernel_get_param(NULL, 0, &off, &sz), NULL_H, "tg_kernel_get_param", "kernel is NULL", NULL);
    TRUE(off == 0x5eb7 && sz == 0x5eb7);
    EXPECT_OK(tg_kernel_get_param(vadd, 3, &off, &sz));
    TRUE(off == 24 && sz == 4);

    /* ---- queues and launches -------------------------------------------------------------- */
    EXPECT(tg_queue_create(dev, (tg_queue_kind)7, &out_q), TG_ERROR_INVALID_ARGUMENT, "tg_queue_create", "kind 7", NULL);
    EXPECT(tg_queue_create(dev, (tg_queue_kind)-1, &out_q), TG_ERROR_INVALID_ARGUMENT, "tg_queue_create", "kind -1", NULL);
    EXPECT(tg_queue_create(NULL, TG_QUEUE_COMPUTE, &out_q), NULL_H, "tg_queue_create", "dev is NULL", NULL);
    EXPECT(tg_queue_create(dev, TG_QUEUE_COMPUTE, NULL), TG_ERROR_NULL_POINTER, "tg_queue_create", "out is NULL", NULL);
    TRUE(out_q == (tg_queue *)SENTINEL);
    EXPECT(tg_queue_create_with_depth(dev, TG_QUEUE_COMPUTE, 100, &out_q), TG_ERROR_INVALID_ARGUMENT, "tg_queue_create_with_depth", "depth 100", NULL);
    EXPECT(tg_queue_create_with_depth(dev, TG_QUEUE_COMPUTE, 0, &out_q), TG_ERROR_INVALID_ARGUMENT, "tg_queue_create_with_depth", "depth 0", NULL);
    EXPECT(tg_queue_create_with_depth(dev, TG_QUEUE_COPY, 1u << 20, &out_q), TG_ERROR_INVALID_ARGUMENT, "tg_queue_create_with_depth", "depth 1048576", NULL);
    EXPECT(tg_queue_create_with_depth(dev, (tg_queue_kind)9, 64, &out_q), TG_ERROR_INVALID_ARGUMENT, "tg_queue_create_with_depth", "kind 9", NULL);
    EXPECT(tg_queue_create_with_depth(NULL, TG_QUEUE_COMPUTE, 64, &out_q), NULL_H, "tg_queue_create_with_depth", "dev is NULL", NULL);
    EXPECT(tg_queue_create_with_depth(dev, TG_QUEUE_COMPUTE, 64, NULL), TG_ERROR_NULL_POINTER, "tg_queue_create_with_depth", "out is NULL", NULL);
    TRUE(out_q == (tg_queue *)SENTINEL);
    EXPECT_OK(tg_queue_create_with_depth(dev, TG_QUEUE_COMPUTE, 16, &dead_q));
    EXPECT_OK(tg_queue_destroy(dead_q));
    EXPECT_OK(tg_queue_create(dev, TG_QUEUE_COMPUTE, &cq));
    EXPECT_OK(tg_queue_create(dev, TG_QUEUE_COPY, &xq));
    EXPECT_OK(tg_queue_create(dev, TG_QUEUE_COPY, &dead_q));
    EXPECT_OK(tg_queue_destroy(dead_q));
    EXPECT(tg_queue_destroy(dead_q), NULL_H, "tg_queue_destroy", "not a live tg_queue", NULL);
    EXPECT_OK(tg_queue_destroy(NULL));
    EXPECT_OK(tg_signal_create(dev, 0, &sig));

    cfg = launch_config(1, 1, 32, 1, 0);
    args[0] = &va; args[1] = &va; args[2] = &va; args[3] = &n;
    memset(params, 0, sizeof params);
    memcpy(params + 0, &va, 8);
    memcpy(params + 8, &va, 8);
    memcpy(params + 16, &va, 8);
    memcpy(params + 24, &n, 4);
    EXPECT(tg_launch(NULL, vadd, &cfg, params, 28), NULL_H, "tg_launch", "queue is NULL", NULL);
    EXPECT(tg_launch(dead_q, vadd, &cfg, params, 28), NULL_H, "tg_launch", "not a live tg_queue", NULL);
    EXPECT(tg_launch(cq, NULL, &cfg, params, 28), NULL_H, "tg_launch", "kernel is NULL", NULL);
    EXPECT(tg_launch(cq, dead_k, &cfg, params, 28), NULL_H, "tg_launch", "not a live tg_kernel", NULL);
    EXPECT(tg_launch(cq, (tg_kernel *)(void *)sig, &cfg, params, 28), NULL_H, "tg_launch", "is a tg_signal, expected a tg_kernel", NULL);
    EXPECT(tg_launch(cq, vadd, NULL, params, 28), TG_ERROR_NULL_POINTER, "tg_launch", "cfg is NULL", NULL);
    bad_cfg = cfg;
    bad_cfg.struct_size = 4;
    EXPECT(tg_launch(cq, vadd, &bad_cfg, params, 28), TG_ERROR_INVALID_ARGUMENT, "tg_launch", "struct_size is 4", NULL);
    /* Parameter size that does not match the kernel (28 bytes). */
    EXPECT(tg_launch(cq, vadd, &cfg, params, 24), TG_ERROR_INVALID_LAUNCH, "tg_launch", "28", "24");
    EXPECT(tg_launch(cq, vadd, &cfg, params, SIZE_MAX), TG_ERROR_INVALID_LAUNCH, "tg_launch", "18446744073709551615", NULL);
    EXPECT(tg_launch(cq, vadd, &cfg, NULL, 28), TG_ERROR_NULL_POINTER, "tg_launch", "params is NULL", NULL);
    EXPECT(tg_launch(cq, empty, &cfg, params, 4), TG_ERROR_INVALID_LAUNCH, "tg_launch", "empty_kernel", NULL);
    /* A block larger than the kernel allows: bounded_128 with 256 threads. */
    bad_cfg = launch_config(1, 1, 256, 1, 0);
    EXPECT(tg_launch(cq, bounded, &bad_cfg, params, 8), TG_ERROR_INVALID_LAUNCH, "tg_launch", "256", "128");
    /* Too much shared memory. */
    bad_cfg = launch_config(1, 1, 16, 16, 1u << 20);
    EXPECT(tg_launch(cq, mm, &bad_cfg, params, 28), TG_ERROR_INVALID_LAUNCH, "tg_launch", "1048576", "matmul_tiled");
    bad_cfg = launch_config(0, 1, 32, 1, 0);
    EXPECT(tg_launch(cq, vadd, &bad_cfg, params, 28), TG_ERROR_INVALID_LAUNCH, "tg_launch", "(0,1,1)", NULL);
    bad_cfg = launch_config(1, 1, 2048, 1, 0);
    EXPECT(tg_launch(cq, vadd, &bad_cfg, params, 28), TG_ERROR_INVALID_LAUNCH, "tg_launch", "2048", NULL);
    EXPECT(tg_launch(xq, vadd, &cfg, params, 28), TG_ERROR_INVALID_ARGUMENT, "tg_launch", "copy queue", NULL);

    EXPECT(tg_launch_args(cq, vadd, &cfg, args, 3), TG_ERROR_INVALID_LAUNCH, "tg_launch_args", "4 parameters", "num_args is 3");
    EXPECT(tg_launch_args(cq, vadd, &cfg, args, SIZE_MAX), TG_ERROR_INVALID_LAUNCH, "tg_launch_args", "18446744073709551615", NULL);
    EXPECT(tg_launch_args(cq, vadd, &cfg, NULL, 4), TG_ERROR_NULL_POINTER, "tg_launch_args", "args is NULL", NULL);
    args[2] = NULL;
    EXPECT(tg_launch_args(cq, vadd, &cfg, args, 4), TG_ERROR_NULL_POINTER, "tg_launch_args", "args[2] is NULL", NULL);
    args[2] = &va;
    EXPECT(tg_launch_args(NULL, vadd, &cfg, args, 4), NULL_H, "tg_launch_args", "queue is NULL", NULL);
    EXPECT(tg_launch_args(cq, NULL, &cfg, args, 4), NULL_H, "tg_launch_args", "kernel is NULL", NULL);
    EXPECT(tg_launch_args(cq, vadd, NULL, args, 4), TG_ERROR_NULL_POINTER, "tg_launch_args", "cfg is NULL", NULL);
    bad_cfg = launch_config(1, 1, 256, 1, 0);
    args[0] = &va;
    EXPECT(tg_launch_args(cq, bounded, &bad_cfg, args, 1), TG_ERROR_INVALID_LAUNCH, "tg_launch_args", "256", "128");

    EXPECT(tg_queue_copy(cq, buf, 0, buf, 8, 16), TG_ERROR_INVALID_ARGUMENT, "tg_queue_copy", "overlap", NULL);
    EXPECT(tg_queue_copy(xq, buf, 64, buf, 56, 16), TG_ERROR_INVALID_ARGUMENT, "tg_queue_copy", "overlap", NULL);
    EXPECT(tg_queue_copy(xq, buf, 0, buf2, 0, UINT64_MAX), TG_ERROR_INVALID_ARGUMENT, "tg_queue_copy", "18446744073709551615", NULL);
    EXPECT(tg_queue_copy(xq, buf, UINT64_MAX, buf2, 0, 16), TG_ERROR_INVALID_ARGUMENT, "tg_queue_copy", "dst", "18446744073709551615");
    EXPECT(tg_queue_copy(xq, buf, 0, buf2, (1u << 20) - 8, 16), TG_ERROR_INVALID_ARGUMENT, "tg_queue_copy", "src", "1048568");
    EXPECT(tg_queue_copy(xq, NULL, 0, buf2, 0, 16), NULL_H, "tg_queue_copy", "dst is NULL", NULL);
    EXPECT(tg_queue_copy(xq, buf, 0, NULL, 0, 16), NULL_H, "tg_queue_copy", "src is NULL", NULL);
    EXPECT(tg_queue_copy(xq, buf, 0, dead_buf, 0, 16), NULL_H, "tg_queue_copy", "src 0x", "not a live tg_buf");
    EXPECT(tg_queue_copy(NULL, buf, 0, buf2, 0, 16), NULL_H, "tg_queue_copy", "queue is NULL", NULL);
    EXPECT(tg_queue_copy(dead_q, buf, 0, buf2, 0, 16), NULL_H, "tg_queue_copy", "not a live tg_queue", NULL);
    EXPECT_OK(tg_queue_copy(xq, buf, 0, buf2, 0, 0));

    EXPECT(tg_queue_signal(NULL, sig, 1), NULL_H, "tg_queue_signal", "queue is NULL", NULL);
    EXPECT(tg_queue_signal(cq, NULL, 1), NULL_H, "tg_queue_signal", "signal is NULL", NULL);
    EXPECT(tg_queue_wait(NULL, sig, 1), NULL_H, "tg_queue_wait", "queue is NULL", NULL);
    EXPECT(tg_queue_wait(cq, NULL, 1), NULL_H, "tg_queue_wait", "signal is NULL", NULL);
    EXPECT(tg_queue_barrier(NULL), NULL_H, "tg_queue_barrier", "queue is NULL", NULL);
    EXPECT(tg_queue_barrier(dead_q), NULL_H, "tg_queue_barrier", NULL, NULL);
    EXPECT(tg_queue_submit(NULL), NULL_H, "tg_queue_submit", "queue is NULL", NULL);
    EXPECT(tg_queue_submit(dead_q), NULL_H, "tg_queue_submit", NULL, NULL);
    EXPECT(tg_queue_synchronize(NULL, 0), NULL_H, "tg_queue_synchronize", "queue is NULL", NULL);
    EXPECT(tg_queue_synchronize((tg_queue *)(void *)mod, 0), NULL_H, "tg_queue_synchronize", "is a tg_module, expected a tg_queue", NULL);

    /* ---- signals -------------------------------------------------------------------------- */
    EXPECT(tg_signal_create(NULL, 0, &out_sig), NULL_H, "tg_signal_create", "dev is NULL", NULL);
    EXPECT(tg_signal_create(dev, 0, NULL), TG_ERROR_NULL_POINTER, "tg_signal_create", "out is NULL", NULL);
    TRUE(out_sig == (tg_signal *)SENTINEL);
    EXPECT(tg_signal_create_in_buffer(NULL, 0, &out_sig), NULL_H, "tg_signal_create_in_buffer", "buf is NULL", NULL);
    EXPECT(tg_signal_create_in_buffer(dead_buf, 0, &out_sig), NULL_H, "tg_signal_create_in_buffer", NULL, NULL);
    EXPECT(tg_signal_create_in_buffer(buf, 0, NULL), TG_ERROR_NULL_POINTER, "tg_signal_create_in_buffer", "out is NULL", NULL);
    EXPECT(tg_signal_create_in_buffer(buf, 8, &out_sig), TG_ERROR_INVALID_ARGUMENT, "tg_signal_create_in_buffer", "offset 8", NULL);
    EXPECT(tg_signal_create_in_buffer(buf, 1u << 20, &out_sig), TG_ERROR_INVALID_ARGUMENT, "tg_signal_create_in_buffer", "1048576", NULL);
    EXPECT(tg_signal_create_in_buffer(buf, UINT64_MAX - 15, &out_sig), TG_ERROR_INVALID_ARGUMENT, "tg_signal_create_in_buffer", NULL, NULL);
    TRUE(out_sig == (tg_signal *)SENTINEL);
    EXPECT_OK(tg_signal_create(dev, 5, &dead_sig));
    EXPECT_OK(tg_signal_destroy(dead_sig));
    EXPECT(tg_signal_destroy(dead_sig), NULL_H, "tg_signal_destroy", "not a live tg_signal", NULL);
    EXPECT_OK(tg_signal_destroy(NULL));
    EXPECT(tg_signal_value(NULL, &u64), NULL_H, "tg_signal_value", "signal is NULL", NULL);
    EXPECT(tg_signal_value(dead_sig, &u64), NULL_H, "tg_signal_value", NULL, NULL);
    EXPECT(tg_signal_value(sig, NULL), TG_ERROR_NULL_POINTER, "tg_signal_value", "out is NULL", NULL);
    EXPECT(tg_signal_timestamp(NULL, &u64), NULL_H, "tg_signal_timestamp", "signal is NULL", NULL);
    EXPECT(tg_signal_timestamp(dead_sig, &u64), NULL_H, "tg_signal_timestamp", NULL, NULL);
    EXPECT(tg_signal_timestamp(sig, NULL), TG_ERROR_NULL_POINTER, "tg_signal_timestamp", "out is NULL", NULL);
    EXPECT(tg_signal_set(NULL, 1), NULL_H, "tg_signal_set", "signal is NULL", NULL);
    EXPECT(tg_signal_set(dead_sig, 1), NULL_H, "tg_signal_set", NULL, NULL);
    EXPECT(tg_signal_wait(NULL, 1, 0), NULL_H, "tg_signal_wait", "signal is NULL", NULL);
    EXPECT(tg_signal_wait(dead_sig, 1, 0), NULL_H, "tg_signal_wait", NULL, NULL);
    EXPECT(tg_signal_wait(sig, 100, 1000000), TG_ERROR_TIMEOUT, "tg_signal_wait", "100", NULL);
    EXPECT(tg_queue_signal(cq, dead_sig, 1), NULL_H, "tg_queue_signal", "not a live tg_signal", NULL);
    EXPECT(tg_queue_wait(cq, dead_sig, 1), NULL_H, "tg_queue_wait", "not a live tg_signal", NULL);

    /* ---- command buffers ------------------------------------------------------------------ */
    EXPECT(tg_cmdbuf_create(NULL, &out_cb), NULL_H, "tg_cmdbuf_create", "dev is NULL", NULL);
    EXPECT(tg_cmdbuf_create(dev, NULL), TG_ERROR_NULL_POINTER, "tg_cmdbuf_create", "out is NULL", NULL);
    EXPECT(tg_cmdbuf_create_owned(dead_dev, &out_cb), NULL_H, "tg_cmdbuf_create_owned", "not a live tg_device", NULL);
    EXPECT(tg_cmdbuf_create_owned(dev, NULL), TG_ERROR_NULL_POINTER, "tg_cmdbuf_create_owned", "out is NULL", NULL);
    TRUE(out_cb == (tg_cmdbuf *)SENTINEL);
    EXPECT_OK(tg_cmdbuf_create(dev, &dead_cb));
    EXPECT_OK(tg_cmdbuf_destroy(dead_cb));
    EXPECT(tg_cmdbuf_destroy(dead_cb), NULL_H, "tg_cmdbuf_destroy", "not a live tg_cmdbuf", NULL);
    EXPECT_OK(tg_cmdbuf_destroy(NULL));
    EXPECT_OK(tg_cmdbuf_create(dev, &cb));
    EXPECT_OK(tg_cmdbuf_create_owned(dev, &ocb));
    for (i = 0; i < 2; i++) {
        tg_cmdbuf *c = i ? ocb : cb;
        tg_launch_config huge = cfg;
        tg_launch_config coop = cfg, clustered = cfg;
        huge.block[0] = 4096;
        coop.flags = TG_LAUNCH_COOPERATIVE;
        clustered.grid[0] = 2;
        clustered.cluster[0] = 2;
        clustered.cluster[1] = 1;
        clustered.cluster[2] = 1;
        node = 0x5eb7;
        EXPECT(tg_cmdbuf_launch(NULL, empty, &cfg, NULL, 0, &node), NULL_H, "tg_cmdbuf_launch", "cmdbuf is NULL", NULL);
        EXPECT(tg_cmdbuf_launch(dead_cb, empty, &cfg, NULL, 0, &node), NULL_H, "tg_cmdbuf_launch", "not a live tg_cmdbuf", NULL);
        EXPECT(tg_cmdbuf_launch((tg_cmdbuf *)(void *)sig, empty, &cfg, NULL, 0, &node), NULL_H, "tg_cmdbuf_launch", "is a tg_signal, expected a tg_cmdbuf", NULL);
        EXPECT(tg_cmdbuf_launch(c, NULL, &cfg, NULL, 0, &node), NULL_H, "tg_cmdbuf_launch", "kernel is NULL", NULL);
        EXPECT(tg_cmdbuf_launch(c, dead_k, &cfg, NULL, 0, &node), NULL_H, "tg_cmdbuf_launch", "not a live tg_kernel", NULL);
        EXPECT(tg_cmdbuf_launch(c, empty, NULL, NULL, 0, &node), TG_ERROR_NULL_POINTER, "tg_cmdbuf_launch", "cfg", NULL);
        EXPECT(tg_cmdbuf_launch(c, bounded, &bad_cfg, params, 8, &node), TG_ERROR_INVALID_LAUNCH, "tg_cmdbuf_launch", "256", "128");
        EXPECT(tg_cmdbuf_launch(c, empty, &cfg, NULL, 8, &node), TG_ERROR_NULL_POINTER, "tg_cmdbuf_launch", "params is NULL", "8");
        TRUE(node == 0x5eb7);
        EXPECT(tg_cmdbuf_signal(c, NULL, 1, &node), NULL_H, "tg_cmdbuf_signal", "signal is NULL", NULL);
        EXPECT(tg_cmdbuf_wait(c, dead_sig, 1, &node), NULL_H, "tg_cmdbuf_wait", "not a live tg_signal", NULL);
        EXPECT(tg_cmdbuf_copy(c, buf, 0, buf, 8, 16, &node), TG_ERROR_INVALID_ARGUMENT, "tg_cmdbuf_copy", "overlap", NULL);
        EXPECT(tg_cmdbuf_copy(c, buf, 0, dead_buf, 0, 16, &node), NULL_H, "tg_cmdbuf_copy", "src", "not a live tg_buf");
        EXPECT(tg_cmdbuf_finish(c), TG_ERROR_INVALID_ARGUMENT, "tg_cmdbuf_finish", "nothing", NULL);
        EXPECT(tg_queue_replay(cq, c), TG_ERROR_INVALID_ARGUMENT, "tg_queue_replay", "not finished", NULL);
        EXPECT(tg_cmdbuf_set_value(c, 0, 1), TG_ERROR_INVALID_ARGUMENT, "tg_cmdbuf_set_value", "not finished", NULL);
        TRUE(node == 0x5eb7);
        EXPECT_OK(tg_cmdbuf_launch(c, empty, &cfg, NULL, 0, &node));
        TRUE(node == 0);
        EXPECT_OK(tg_cmdbuf_signal(c, sig, 1, &node));
        TRUE(node == 1);
        EXPECT_OK(tg_cmdbuf_finish(c));
        EXPECT(tg_cmdbuf_finish(c), TG_ERROR_INVALID_ARGUMENT, "tg_cmdbuf_finish", "finished", NULL);
        EXPECT(tg_cmdbuf_barrier(c, &node), TG_ERROR_INVALID_ARGUMENT, "tg_cmdbuf_barrier", "finished", NULL);
        EXPECT(tg_cmdbuf_set_value(c, 0, 1), TG_ERROR_INVALID_ARGUMENT, "tg_cmdbuf_set_value", "node 0", "a launch");
        EXPECT(tg_cmdbuf_set_value(c, 99, 1), TG_ERROR_INVALID_ARGUMENT, "tg_cmdbuf_set_value", "node 99", "2 nodes");
        EXPECT(tg_cmdbuf_set_params(c, 0, vadd, NULL, 0), TG_ERROR_INVALID_ARGUMENT, "tg_cmdbuf_set_params", "node 0", NULL);
        EXPECT(tg_cmdbuf_set_params(c, 1, empty, NULL, 0), TG_ERROR_INVALID_ARGUMENT, "tg_cmdbuf_set_params", "node 1", "a signal");
        EXPECT(tg_cmdbuf_set_launch(c, 0, empty, &huge), TG_ERROR_INVALID_LAUNCH, "tg_cmdbuf_set_launch", "4096", NULL);
        /* A plain launch stays plain: the cooperative bit and cluster-ness cannot change. */
        EXPECT(tg_cmdbuf_set_launch(c, 0, empty, &coop), TG_ERROR_INVALID_ARGUMENT, "tg_cmdbuf_set_launch", "TG_LAUNCH_COOPERATIVE", "node 0");
        EXPECT(tg_cmdbuf_set_launch(c, 0, empty, &clustered), TG_ERROR_INVALID_ARGUMENT, "tg_cmdbuf_set_launch", "cluster", "node 0");
        EXPECT(tg_queue_replay(xq, c), TG_ERROR_INVALID_ARGUMENT, "tg_queue_replay", "copy queue", NULL);
        EXPECT(tg_queue_replay_submit(xq, c), TG_ERROR_INVALID_ARGUMENT, "tg_queue_replay_submit", "copy queue", NULL);
        EXPECT(tg_queue_replay_submit(dead_q, c), NULL_H, "tg_queue_replay_submit", "not a live tg_queue", NULL);
        EXPECT(tg_queue_replay_submit(cq, dead_cb), NULL_H, "tg_queue_replay_submit", "not a live tg_cmdbuf", NULL);
        EXPECT(tg_queue_replay_submit(cq, NULL), NULL_H, "tg_queue_replay_submit", "cmdbuf is NULL", NULL);
    }
    {
        /* A command buffer with a cooperative launch replays on one queue at a time. */
        tg_cmdbuf *cc = NULL;
        tg_queue *cq2 = NULL;
        tg_launch_config coop = cfg;
        coop.flags = TG_LAUNCH_COOPERATIVE;
        EXPECT_OK(tg_queue_create(dev, TG_QUEUE_COMPUTE, &cq2));
        EXPECT_OK(tg_cmdbuf_create(dev, &cc));
        EXPECT_OK(tg_cmdbuf_launch(cc, empty, &coop, NULL, 0, NULL));
        EXPECT_OK(tg_cmdbuf_finish(cc));
        EXPECT_OK(tg_queue_replay(cq, cc));
        EXPECT(tg_queue_replay(cq2, cc), TG_ERROR_INVALID_ARGUMENT, "tg_queue_replay", "cooperative", "another queue");
        EXPECT(tg_queue_replay_submit(cq2, cc), TG_ERROR_INVALID_ARGUMENT, "tg_queue_replay_submit", "cooperative", NULL);
        EXPECT_OK(tg_queue_submit(cq));
        EXPECT_OK(tg_queue_synchronize(cq, TIMEOUT_NS));
        EXPECT_OK(tg_queue_replay_submit(cq2, cc));
        EXPECT_OK(tg_queue_synchronize(cq2, TIMEOUT_NS));
        EXPECT_OK(tg_cmdbuf_destroy(cc));
        EXPECT_OK(tg_queue_destroy(cq2));
    }

    /* ---- after all that misuse, real work still runs -------------------------------------- */
    EXPECT_OK(tg_launch(cq, empty, &cfg, NULL, 0));
    EXPECT_OK(tg_queue_signal(cq, sig, 1));
    EXPECT_OK(tg_queue_submit(cq));
    EXPECT_OK(tg_signal_wait(sig, 1, TIMEOUT_NS));
    EXPECT_OK(tg_signal_value(sig, &u64));
    TRUE(u64 == 1);
    EXPECT_OK(tg_cmdbuf_set_value(ocb, 1, 2));
    EXPECT_OK(tg_queue_replay_submit(cq, ocb));
    EXPECT_OK(tg_signal_wait(sig, 2, TIMEOUT_NS));
    EXPECT_OK(tg_cmdbuf_set_value(cb, 1, 3));
    EXPECT_OK(tg_queue_replay(cq, cb));
    EXPECT_OK(tg_queue_submit(cq));
    EXPECT_OK(tg_signal_wait(sig, 3, TIMEOUT_NS));
    EXPECT_OK(tg_cmdbuf_destroy(cb));
    EXPECT_OK(tg_cmdbuf_destroy(ocb));
    EXPECT_OK(tg_signal_timestamp(sig, &u64));
    TRUE(u64 != 0);
    EXPECT_OK(tg_signal_set(sig, 7));
    EXPECT_OK(tg_queue_wait(xq, sig, 7));
    EXPECT_OK(tg_queue_copy(xq, buf2, 0, buf, 0, 4096));
    EXPECT_OK(tg_queue_barrier(xq));
    EXPECT_OK(tg_queue_signal(xq, sig, 8));
    EXPECT_OK(tg_queue_submit(xq));
    EXPECT_OK(tg_queue_synchronize(xq, TIMEOUT_NS));
    EXPECT_OK(tg_signal_value(sig, &u64));
    TRUE(u64 == 8);
    fault.struct_size = sizeof fault;
    EXPECT(tg_device_get_fault(dev, &fault), TG_ERROR_NOT_FOUND, "tg_device_get_fault", NULL, NULL);

    /* ---- teardown in an unusual order: the device first --------------------------------- */
    EXPECT_OK(tg_device_close(dev));
    EXPECT(tg_device_close(dev), NULL_H, "tg_device_close", NULL, NULL);
    EXPECT_OK(tg_buf_size(buf, &u64)); /* children keep the device open */
    EXPECT_OK(tg_signal_destroy(sig));
    EXPECT_OK(tg_queue_destroy(cq));
    EXPECT_OK(tg_queue_destroy(xq));
    EXPECT_OK(tg_kernel_destroy(vadd));
    EXPECT_OK(tg_kernel_destroy(bounded));
    EXPECT_OK(tg_module_destroy(mod));
    EXPECT_OK(tg_kernel_get_attributes(mm, &attrs)); /* kernels keep their module */
    EXPECT_OK(tg_kernel_destroy(mm));
    EXPECT_OK(tg_kernel_destroy(empty));
    EXPECT_OK(tg_buf_free(buf));
    EXPECT_OK(tg_buf_free(buf2));
    EXPECT(tg_buf_free(buf2), NULL_H, "tg_buf_free", NULL, NULL);
    free(cubin);

    printf("api_misuse: %u passed, %u failed\n", passed, failed);
    return failed ? 1 : 0;
}
