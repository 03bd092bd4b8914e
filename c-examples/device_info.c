/* device_info: open a device, print what the library reports, and check that it is sane.
 * usage: device_info [device-spec]     (e.g. "emu"; default: TEGRAGPU_DEVICE, else this GPU) */
#include "common.h"

int main(int argc, char **argv) {
    tg_device_info info;
    tg_device *dev = open_device(argc, argv, &info);
    uint32_t v = tg_version();
    int bad = 0;

    printf("libtegragpu %u.%u.%u (header %d.%d.%d)\n", v >> 16, (v >> 8) & 0xff, v & 0xff,
           TG_VERSION_MAJOR, TG_VERSION_MINOR, TG_VERSION_PATCH);
    printf("  name          %s\n", info.name);
    printf("  arch          0x%x\n", info.arch);
    printf("  sm            %u.%u\n", info.sm_major, info.sm_minor);
    printf("  sm_count      %u\n", info.sm_count);
    printf("  memory        %llu MiB\n", (unsigned long long)(info.memory_bytes >> 20));
    printf("  va_bits       %u\n", info.va_bits);
    printf("  backend       %s\n", info.backend == TG_BACKEND_NVGPU ? "nvgpu" : "rm");
    printf("  emulated      %s\n", info.emulated ? "yes" : "no");

    if ((v >> 16) != TG_VERSION_MAJOR) { fprintf(stderr, "FAIL: library major != header major\n"); bad = 1; }
    if (info.struct_size != sizeof info) { fprintf(stderr, "FAIL: struct_size %u\n", info.struct_size); bad = 1; }
    if (info.name[0] == '\0') { fprintf(stderr, "FAIL: empty name\n"); bad = 1; }
    if (info.sm_major < 5 || info.sm_major > 12) { fprintf(stderr, "FAIL: sm_major %u\n", info.sm_major); bad = 1; }
    if (info.sm_count == 0) { fprintf(stderr, "FAIL: sm_count 0\n"); bad = 1; }
    if (info.memory_bytes == 0) { fprintf(stderr, "FAIL: memory_bytes 0\n"); bad = 1; }
    if (info.va_bits < 32 || info.va_bits > 64) { fprintf(stderr, "FAIL: va_bits %u\n", info.va_bits); bad = 1; }
    if (info.emulated) {
        /* The emulated device is a Jetson AGX Orin GPU: ga10b, sm_87, nvgpu backend. */
        if (info.backend != TG_BACKEND_NVGPU || info.sm_major != 8 || info.sm_minor != 7) {
            fprintf(stderr, "FAIL: emulated Orin should be nvgpu sm_87\n");
            bad = 1;
        }
    }
    CHECK(tg_device_close(dev));
    if (!bad) printf("device_info: OK\n");
    return bad;
}
