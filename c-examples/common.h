/* Shared helpers for the libtegragpu C examples.
 *
 * Device selection: argv[1] if given, else TEGRAGPU_DEVICE (handled by the library), else the
 * GPU of this machine. With neither argv[1] nor TEGRAGPU_DEVICE and no NVIDIA GPU on the machine,
 * the examples fall back to the emulated Orin ("emu") and say so.
 *
 * Exit codes: 0 = result verified, 1 = failure (wrong result or an unexpected error),
 * 77 = skipped (meson's skip code: e.g. no fixture cubin for this GPU, no libnvrtc).
 */
#ifndef TEGRAGPU_EXAMPLES_COMMON_H
#define TEGRAGPU_EXAMPLES_COMMON_H

#include "tegragpu.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifndef TG_FIXTURE_DIR
#define TG_FIXTURE_DIR "tests/fixtures/cubin"
#endif
#ifndef TG_KERNELS_CU
#define TG_KERNELS_CU "tests/fixtures/kernels.cu"
#endif

#define EXIT_SKIP 77

/* Abort the example (exit 1) when a call does not return TG_OK. */
#define CHECK(call)                                                                        \
    do {                                                                                   \
        tg_status check_st_ = (call);                                                      \
        if (check_st_ != TG_OK) {                                                          \
            fprintf(stderr, "%s:%d: %s\n  -> %s\n  -> %s\n", __FILE__, __LINE__, #call,    \
                    tg_status_str(check_st_), tg_last_error_message());                    \
            exit(1);                                                                       \
        }                                                                                  \
    } while (0)

static inline uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline const char *backend_name(const tg_device_info *info) {
    if (info->emulated) return "emulated Orin (nvgpu backend over the in-process emulator)";
    return info->backend == TG_BACKEND_NVGPU ? "real GPU via nvgpu (Jetson)"
                                             : "real GPU via the NVIDIA RM driver";
}

/* Open the device chosen by argv[1] / TEGRAGPU_DEVICE / this machine (see above) and print it. */
static inline tg_device *open_device(int argc, char **argv, tg_device_info *info) {
    const char *spec = (argc > 1 && argv[1][0] != '\0') ? argv[1] : NULL;
    const char *env = getenv("TEGRAGPU_DEVICE");
    tg_device *dev = NULL;
    tg_status st = tg_device_open(spec, &dev);
    if (st == TG_ERROR_NOT_FOUND && spec == NULL && (env == NULL || env[0] == '\0')) {
        printf("%s\n-> falling back to the emulated Orin (\"emu\")\n", tg_last_error_message());
        spec = "emu";
        st = tg_device_open(spec, &dev);
    }
    if (st != TG_OK) {
        fprintf(stderr, "tg_device_open(%s): %s\n  -> %s\n", spec ? spec : "NULL",
                tg_status_str(st), tg_last_error_message());
        exit(1);
    }
    memset(info, 0, sizeof *info);
    info->struct_size = sizeof *info;
    CHECK(tg_device_get_info(dev, info));
    printf("device: %s, sm_%u%u, %u SMs, %s\n", info->name, info->sm_major, info->sm_minor,
           info->sm_count, backend_name(info));
    return dev;
}

/* Path of the fixture cubin for this device's SM version, from TEGRAGPU_CUBIN_DIR or the
 * directory meson compiled in, else ./tests/fixtures/cubin. Exits with EXIT_SKIP when there is
 * no fixture for this GPU. */
static inline void fixture_cubin(const tg_device_info *info, char *path, size_t size) {
    /* $TEGRAGPU_CUBIN_DIR, the source tree meson was configured in, then ./tests/... */
    const char *dirs[3];
    int i;
    dirs[0] = getenv("TEGRAGPU_CUBIN_DIR");
    dirs[1] = TG_FIXTURE_DIR;
    dirs[2] = "tests/fixtures/cubin";
    for (i = 0; i < 3; i++) {
        FILE *f;
        if (dirs[i] == NULL || dirs[i][0] == '\0') continue;
        snprintf(path, size, "%s/kernels.sm_%u%u.cubin", dirs[i], info->sm_major, info->sm_minor);
        f = fopen(path, "rb");
        if (f != NULL) {
            fclose(f);
            return;
        }
    }
    printf("SKIP: no fixture cubin kernels.sm_%u%u.cubin (set TEGRAGPU_CUBIN_DIR)\n",
           info->sm_major, info->sm_minor);
    exit(EXIT_SKIP);
}

static inline tg_launch_config launch_config(uint32_t gx, uint32_t gy, uint32_t bx,
                                             uint32_t by, uint32_t dynamic_shared_bytes) {
    tg_launch_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.struct_size = sizeof cfg;
    cfg.grid[0] = gx;
    cfg.grid[1] = gy;
    cfg.grid[2] = 1;
    cfg.block[0] = bx;
    cfg.block[1] = by;
    cfg.block[2] = 1;
    cfg.dynamic_shared_bytes = dynamic_shared_bytes;
    return cfg;
}

static inline void *buf_ptr(tg_buf *buf) {
    void *p = NULL;
    CHECK(tg_buf_cpu_ptr(buf, &p));
    return p;
}

static inline uint64_t buf_va(tg_buf *buf) {
    uint64_t va = 0;
    CHECK(tg_buf_gpu_address(buf, &va));
    return va;
}

#define TIMEOUT_NS (30ull * 1000000000ull)

#endif
