/* library_copies: two copies of libtegragpu in one process, each with its own device, buffers and
 * queue, as when a program and a plugin each bring the library. The first copy is the one the
 * program links; the second is the same file copied under another name and loaded with dlopen
 * (RTLD_LOCAL), so it has its own state, among it its own allocator of GPU addresses, which hands
 * out the same addresses as the first copy's. Both copies allocate host (CPU-cached) and device
 * buffers, keep them alive together, run vector_add with different inputs, and check their own
 * results: a copy whose buffers shared CPU memory with the other's would read the other's data.
 * (meson also builds this file with -fsanitize=address as library_copies_asan.)
 *
 * usage: library_copies [device-spec] [n]   (default: TEGRAGPU_DEVICE, else this machine's GPU,
 * else the emulated Orin) */
#define _GNU_SOURCE
#include "common.h"

#include <dlfcn.h>
#include <unistd.h>

/* The calls used, looked up in each copy. */
#define API_LIST(X)                                                                          \
    X(tg_status_str) X(tg_last_error_message) X(tg_device_open) X(tg_device_get_info)        \
    X(tg_device_close) X(tg_module_load_file) X(tg_module_get_kernel) X(tg_module_destroy)   \
    X(tg_kernel_destroy) X(tg_buf_alloc) X(tg_buf_free) X(tg_buf_cpu_ptr)                    \
    X(tg_buf_gpu_address) X(tg_queue_create) X(tg_queue_destroy) X(tg_signal_create)         \
    X(tg_signal_destroy) X(tg_launch_args) X(tg_queue_signal) X(tg_queue_submit)             \
    X(tg_signal_wait)

typedef struct api {
#define API_FIELD(f) __typeof__(&f) f;
    API_LIST(API_FIELD)
#undef API_FIELD
} api;

typedef struct copy {
    const char *label;
    api t;
    tg_device *dev;
    tg_device_info info;
    tg_module *mod;
    tg_kernel *k;
    tg_queue *q;
    tg_signal *done;
    tg_buf *a, *b, *c;
    float *pa, *pb, *pc;
    uint64_t va_a, va_b, va_c;
} copy;

/* Abort (exit 1) when a call into copy `cp` does not return TG_OK. */
#define ACHECK(cp, call)                                                                   \
    do {                                                                                   \
        tg_status st_ = (cp)->t.call;                                                      \
        if (st_ != TG_OK) {                                                                \
            fprintf(stderr, "%s: %s:%d: %s\n  -> %s\n  -> %s\n", (cp)->label, __FILE__,    \
                    __LINE__, #call, (cp)->t.tg_status_str(st_),                           \
                    (cp)->t.tg_last_error_message());                                      \
            exit(1);                                                                       \
        }                                                                                  \
    } while (0)

/* Path of the libtegragpu this program linked. */
static const char *linked_library_path(void) {
    union {
        __typeof__(&tg_device_open) f;
        void *p;
    } sym;
    Dl_info di;
    sym.f = tg_device_open;
    if (dladdr(sym.p, &di) == 0 || di.dli_fname == NULL) {
        fprintf(stderr, "dladdr(tg_device_open) failed\n");
        exit(1);
    }
    return di.dli_fname;
}

/* Copy `from` to a fresh file, load it with dlopen (RTLD_LOCAL) and remove the file again (the
 * mapping stays). */
static void *load_second_copy(const char *from) {
    const char *tmp = getenv("TMPDIR");
    char dir[4096], path[4200], buf[1 << 16];
    FILE *in, *out;
    size_t n;
    void *h;
    snprintf(dir, sizeof dir, "%s/tegragpu-copy-XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
    if (mkdtemp(dir) == NULL) {
        perror("mkdtemp");
        exit(1);
    }
    snprintf(path, sizeof path, "%s/libtegragpu-second-copy.so", dir);
    in = fopen(from, "rb");
    out = fopen(path, "wb");
    if (in == NULL || out == NULL) {
        fprintf(stderr, "cannot copy %s to %s\n", from, path);
        exit(1);
    }
    while ((n = fread(buf, 1, sizeof buf, in)) > 0) {
        if (fwrite(buf, 1, n, out) != n) {
            fprintf(stderr, "writing %s failed\n", path);
            exit(1);
        }
    }
    fclose(in);
    if (fclose(out) != 0) {
        fprintf(stderr, "writing %s failed\n", path);
        exit(1);
    }
    h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) {
        fprintf(stderr, "dlopen(%s): %s\n", path, dlerror());
        exit(1);
    }
    unlink(path);
    rmdir(dir);
    return h;
}

static void setup(copy *cp, const char *spec, unsigned n, unsigned k) {
    const char *env = getenv("TEGRAGPU_DEVICE");
    char path[4096];
    uint64_t bytes = (uint64_t)n * sizeof(float);
    unsigned i;
    tg_status st = cp->t.tg_device_open(spec, &cp->dev);
    if (st == TG_ERROR_NOT_FOUND && spec == NULL && (env == NULL || env[0] == '\0')) {
        printf("%s: %s\n-> falling back to the emulated Orin (\"emu\")\n", cp->label,
               cp->t.tg_last_error_message());
        st = cp->t.tg_device_open("emu", &cp->dev);
    }
    if (st != TG_OK) {
        fprintf(stderr, "%s: tg_device_open(%s): %s\n  -> %s\n", cp->label, spec ? spec : "NULL",
                cp->t.tg_status_str(st), cp->t.tg_last_error_message());
        exit(1);
    }
    memset(&cp->info, 0, sizeof cp->info);
    cp->info.struct_size = sizeof cp->info;
    ACHECK(cp, tg_device_get_info(cp->dev, &cp->info));
    printf("%s: %s, sm_%u%u, %s\n", cp->label, cp->info.name, cp->info.sm_major,
           cp->info.sm_minor, backend_name(&cp->info));
    fixture_cubin(&cp->info, path, sizeof path);
    ACHECK(cp, tg_module_load_file(cp->dev, path, &cp->mod));
    ACHECK(cp, tg_module_get_kernel(cp->mod, "vector_add", &cp->k));
    /* Host memory, device memory (CPU-mapped on first access) and zeroed host memory. */
    ACHECK(cp, tg_buf_alloc(cp->dev, bytes, TG_BUF_CPU_CACHED, &cp->a));
    ACHECK(cp, tg_buf_alloc(cp->dev, bytes, TG_BUF_DEVICE_LOCAL, &cp->b));
    ACHECK(cp, tg_buf_alloc(cp->dev, bytes, TG_BUF_CPU_CACHED | TG_BUF_ZEROED, &cp->c));
    ACHECK(cp, tg_buf_cpu_ptr(cp->a, (void **)&cp->pa));
    ACHECK(cp, tg_buf_cpu_ptr(cp->b, (void **)&cp->pb));
    ACHECK(cp, tg_buf_cpu_ptr(cp->c, (void **)&cp->pc));
    ACHECK(cp, tg_buf_gpu_address(cp->a, &cp->va_a));
    ACHECK(cp, tg_buf_gpu_address(cp->b, &cp->va_b));
    ACHECK(cp, tg_buf_gpu_address(cp->c, &cp->va_c));
    for (i = 0; i < n; i++) {
        cp->pa[i] = (float)i * 0.5f + (float)(k * 100000u);
        cp->pb[i] = 1000.0f - (float)(i % 1000);
    }
    ACHECK(cp, tg_queue_create(cp->dev, TG_QUEUE_COMPUTE, &cp->q));
    ACHECK(cp, tg_signal_create(cp->dev, 0, &cp->done));
    printf("%s: a at CPU %p / GPU 0x%llx, b at CPU %p / GPU 0x%llx, c at CPU %p / GPU 0x%llx\n",
           cp->label, (void *)cp->pa, (unsigned long long)cp->va_a, (void *)cp->pb,
           (unsigned long long)cp->va_b, (void *)cp->pc, (unsigned long long)cp->va_c);
}

static void launch(copy *cp, unsigned *n) {
    void *args[4];
    tg_launch_config cfg = launch_config((*n + 255) / 256, 1, 256, 1, 0);
    args[0] = &cp->va_a;
    args[1] = &cp->va_b;
    args[2] = &cp->va_c;
    args[3] = n;
    ACHECK(cp, tg_launch_args(cp->q, cp->k, &cfg, args, 4));
    ACHECK(cp, tg_queue_signal(cp->q, cp->done, 1));
    ACHECK(cp, tg_queue_submit(cp->q));
}

static unsigned check(copy *cp, unsigned n, unsigned k) {
    unsigned i, errors = 0;
    ACHECK(cp, tg_signal_wait(cp->done, 1, TIMEOUT_NS));
    for (i = 0; i < n; i++) {
        float want = ((float)i * 0.5f + (float)(k * 100000u)) + (1000.0f - (float)(i % 1000));
        if (cp->pc[i] != want) {
            if (errors < 10)
                fprintf(stderr, "%s: c[%u] = %g, want %g\n", cp->label, i, (double)cp->pc[i],
                        (double)want);
            errors++;
        }
    }
    return errors;
}

static void teardown(copy *cp) {
    ACHECK(cp, tg_signal_destroy(cp->done));
    ACHECK(cp, tg_queue_destroy(cp->q));
    ACHECK(cp, tg_kernel_destroy(cp->k));
    ACHECK(cp, tg_module_destroy(cp->mod));
    ACHECK(cp, tg_buf_free(cp->a));
    ACHECK(cp, tg_buf_free(cp->b));
    ACHECK(cp, tg_buf_free(cp->c));
    ACHECK(cp, tg_device_close(cp->dev));
}

int main(int argc, char **argv) {
    const char *spec = (argc > 1 && argv[1][0] != '\0') ? argv[1] : NULL;
    unsigned n = argc > 2 ? (unsigned)strtoul(argv[2], NULL, 0) : 100003u;
    const char *linked = linked_library_path();
    void *h;
    copy cp[2];
    unsigned k, errors[2];
    int missing = 0;

    if (n == 0) {
        fprintf(stderr, "n must be > 0\n");
        return 1;
    }
    memset(cp, 0, sizeof cp);
    cp[0].label = "first copy";
    cp[1].label = "second copy";
#define API_LINKED(f) cp[0].t.f = f;
    API_LIST(API_LINKED)
#undef API_LINKED
    h = load_second_copy(linked);
#define API_DLSYM(f)                                                                       \
    *(void **)(&cp[1].t.f) = dlsym(h, #f);                                                 \
    if (cp[1].t.f == NULL) {                                                               \
        fprintf(stderr, "second copy: no %s\n", #f);                                       \
        missing = 1;                                                                       \
    }
    API_LIST(API_DLSYM)
#undef API_DLSYM
    if (missing) return 1;
    printf("first copy: %s; second copy: a copy of it loaded with dlopen\n", linked);

    /* Both copies' buffers are alive together: their allocators hand out the same GPU
     * addresses, so at most one copy can have its CPU mappings there. */
    for (k = 0; k < 2; k++) setup(&cp[k], spec, n, k);
    for (k = 0; k < 2; k++) launch(&cp[k], &n);
    for (k = 0; k < 2; k++) errors[k] = check(&cp[k], n, k);
    for (k = 0; k < 2; k++) teardown(&cp[k]);
    /* The second copy stays loaded: a Rust library registers thread-local destructors, which
     * keep it from being unloaded anyway. */
    for (k = 0; k < 2; k++) {
        if (errors[k]) {
            fprintf(stderr, "library_copies: FAIL, %s: %u of %u elements wrong\n", cp[k].label,
                    errors[k], n);
            return 1;
        }
    }
    printf("library_copies: OK (%u elements verified in each of 2 copies)\n", n);
    return 0;
}
