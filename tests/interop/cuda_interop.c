/* CUDA interop on a desktop GPU: NVIDIA's libcuda and libtegragpu in one process, sharing
 * memory through file descriptors (tg_buf_export_fd / tg_buf_import_fd) and ordering their GPU
 * work through semaphore words in that memory (tg_signal_create_in_buffer on our side,
 * cuStreamWriteValue64 / cuStreamWaitValue64 on CUDA's). docs/api.md, "Sharing memory with
 * CUDA and other processes", says what is expected.
 *
 * usage: cuda_interop <interop_kernels.cubin>
 * Built and run by scripts/interop-device-run.sh (gcc against the toolkit's cuda.h, linked with
 * NVIDIA's libcuda and libtegragpu; the cubin from tests/interop/interop_kernels.cu).
 *
 * Parts:
 *   1. CUDA's own export fds (cuMemCreate + cuMemExportToShareableHandle, POSIX fd): what RM
 *      says of them (NV0000_CTRL_CMD_OS_UNIX_GET_EXPORT_OBJECT_INFO: device instance, slots,
 *      the 64 metadata bytes), for two sizes; and whether cuImportExternalMemory(OPAQUE_FD)
 *      accepts CUDA's own fd.
 *   2. libtegragpu imports CUDA's memory (tg_buf_import_fd); data both ways; then the ordering
 *      test: CUDA kernel -> CUDA release -> our wait -> our kernel -> our release -> CUDA wait
 *      -> CUDA kernel, checked element by element; and the same without our wait (a control
 *      that shows the check sees misordering); our import keeps CUDA's memory after CUDA
 *      released its allocation.
 *   3. libtegragpu imports its own export (video and host memory): the RM round trip.
 *   4. CUDA imports our export: every variant (memory kind x size x metadata x CUDA call),
 *      one RESULT line each with CUDA's answer; the first variant that maps runs the data and
 *      ordering tests.
 *
 * Output: "PASS name", "FAIL name: why", "RESULT name: ..." (experiments; never a failure),
 * "INFO ...". Every wait has a deadline, and a watchdog ends a hung run (exit 3, naming the
 * step). Exit status 0 when nothing failed, 1 otherwise, 2 when the set-up failed. */
#define _GNU_SOURCE
#include <cuda.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "tegragpu.h"

#define MIB (1024ull * 1024ull)
#define DATA_WORDS 65536u            /* 256 KiB of data at the start of the shared memory */
#define SEM_OFFSET (1024ull * 1024ull) /* the semaphore words, 1 MiB in */
#define SPIN_NS 50000000ull          /* CUDA's writer spins 50 ms first */
#define WAIT_S 30.0

static const char *volatile g_step = "start";
static int g_pass, g_fail;

static void on_alarm(int sig) {
    static const char m[] = "\nTIMEOUT: the watchdog fired in step: ";
    const char *s = g_step;
    (void)sig;
    if (write(2, m, sizeof m - 1) < 0 || write(2, s, strlen(s)) < 0 || write(2, "\n", 1) < 0) {
    }
    _exit(3);
}

static void step(const char *s) {
    g_step = s;
    printf("--- %s\n", s);
    fflush(stdout);
}

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static const char *cu_name(CUresult r) {
    const char *n = NULL;
    if (cuGetErrorName(r, &n) != CUDA_SUCCESS || !n) return "?";
    return n;
}

/* A CUDA call: prints the call and CUDA's answer when it fails. */
#define CU(call) cu_ok(#call, (call))
static CUresult g_last_cu; /* the last failing CU() call's answer */
static int cu_ok(const char *what, CUresult r) {
    if (r != CUDA_SUCCESS) {
        printf("  cuda: %s -> %d %s\n", what, (int)r, cu_name(r));
        g_last_cu = r;
    }
    return r == CUDA_SUCCESS;
}

/* A libtegragpu call: prints the call, the status and the library's message when it fails. */
#define TG(call) tg_ok(#call, (call))
static int tg_ok(const char *what, tg_status s) {
    if (s != TG_OK) printf("  tg: %s -> %s: %s\n", what, tg_status_str(s), tg_last_error_message());
    return s == TG_OK;
}

static void pass(const char *name) {
    printf("PASS %s\n", name);
    g_pass++;
}

static void fail(const char *name, const char *why) {
    printf("FAIL %s: %s\n", name, why);
    g_fail++;
}

static void hex(const uint8_t *b, size_t n, char *out) {
    size_t i;
    for (i = 0; i < n; i++) sprintf(out + 2 * i, "%02x", b[i]);
    out[2 * n] = 0;
}

/* ------------------------------------------------------------------------------------------
 * Raw RM, for part 1 only: a root client of our own on a /dev/nvidiactl fd of our own.
 * Layouts: NVOS21/NVOS54 and NV0000_CTRL_OS_UNIX_GET_EXPORT_OBJECT_INFO_PARAMS (80 bytes). */
#define NV_REQ(nr, size) ((unsigned long)(0xC0000000u | ((unsigned)(size) << 16) | ('F' << 8) | (nr)))
typedef struct { uint32_t hRoot, hObjectParent, hObjectNew, hClass; uint64_t pAllocParms; uint32_t paramsSize, status; } nvos21;
typedef struct { uint32_t hClient, hObject, cmd, flags; uint64_t params; uint32_t paramsSize, status; } nvos54;
typedef struct { uint32_t cmd, reply; char version[64]; } nv_version;
typedef struct {
    int32_t fd;
    uint32_t deviceInstance, gpuInstanceId;
    uint16_t maxObjects;
    uint8_t metadata[64];
    uint8_t pad[2];
} export_info;

_Static_assert(sizeof(nvos21) == 32 && sizeof(nvos54) == 32 && sizeof(nv_version) == 72, "RM escapes");
_Static_assert(sizeof(export_info) == 80, "NV0000_CTRL_OS_UNIX_GET_EXPORT_OBJECT_INFO_PARAMS");

static int g_rm_fd = -1;
static uint32_t g_rm_client;

static int rm_open(void) {
    nv_version v;
    nvos21 a;
    g_rm_fd = open("/dev/nvidiactl", O_RDWR | O_CLOEXEC);
    if (g_rm_fd < 0) { printf("  rm: open(/dev/nvidiactl): %s\n", strerror(errno)); return 0; }
    memset(&v, 0, sizeof v);
    v.cmd = '2'; /* QUERY */
    if (ioctl(g_rm_fd, NV_REQ(210, sizeof v), &v) < 0) { printf("  rm: CHECK_VERSION_STR: %s\n", strerror(errno)); return 0; }
    memset(&a, 0, sizeof a);
    a.hClass = 0x41; /* NV01_ROOT_CLIENT */
    if (ioctl(g_rm_fd, NV_REQ(0x2B, sizeof a), &a) < 0 || a.status != 0) {
        printf("  rm: RM_ALLOC(NV01_ROOT_CLIENT): errno %d status %#x\n", errno, a.status);
        return 0;
    }
    g_rm_client = a.hObjectNew;
    printf("INFO driver %s, raw RM client %#x\n", v.version, g_rm_client);
    return 1;
}

/* GET_EXPORT_OBJECT_INFO of `fd`: the RM status (0 = NV_OK). */
static uint32_t rm_export_info(int fd, export_info *out) {
    nvos54 c;
    memset(out, 0, sizeof *out);
    out->fd = fd;
    memset(&c, 0, sizeof c);
    c.hClient = g_rm_client;
    c.hObject = g_rm_client;
    c.cmd = 0x3D08;
    c.params = (uint64_t)(uintptr_t)out;
    c.paramsSize = sizeof *out;
    if (ioctl(g_rm_fd, NV_REQ(0x2A, sizeof c), &c) < 0) return 0xFFFFFFFFu;
    return c.status;
}

/* ------------------------------------------------------------------------------------------
 * CUDA memory */
typedef struct {
    CUmemGenericAllocationHandle h;
    CUdeviceptr ptr;
    size_t size;
    int mapped;
} vmm;

static CUdevice g_cu_dev;
static size_t g_granularity;

static void vmm_prop(CUmemAllocationProp *p) {
    memset(p, 0, sizeof *p);
    p->type = CU_MEM_ALLOCATION_TYPE_PINNED;
    p->location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    p->location.id = g_cu_dev;
    p->requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
}

/* Reserve, map and allow access to `size` bytes of handle `h` (already in v->h). */
static int vmm_map(vmm *v, size_t size) {
    CUmemAccessDesc acc;
    v->size = size;
    if (!CU(cuMemAddressReserve(&v->ptr, size, 0, 0, 0))) return 0;
    if (!CU(cuMemMap(v->ptr, size, 0, v->h, 0))) { cuMemAddressFree(v->ptr, size); v->ptr = 0; return 0; }
    memset(&acc, 0, sizeof acc);
    acc.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    acc.location.id = g_cu_dev;
    acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    if (!CU(cuMemSetAccess(v->ptr, size, &acc, 1))) {
        cuMemUnmap(v->ptr, size);
        cuMemAddressFree(v->ptr, size);
        v->ptr = 0;
        return 0;
    }
    v->mapped = 1;
    return 1;
}

static int vmm_alloc(size_t size, vmm *v) {
    CUmemAllocationProp p;
    memset(v, 0, sizeof *v);
    vmm_prop(&p);
    if (!CU(cuMemCreate(&v->h, size, &p, 0))) return 0;
    if (!vmm_map(v, size)) { cuMemRelease(v->h); return 0; }
    return 1;
}

static int g_cuda_stuck;

static void vmm_free(vmm *v) {
    if (g_cuda_stuck) return; /* CUDA calls could block: leave it to the process's exit */
    if (v->mapped) {
        cuMemUnmap(v->ptr, v->size);
        cuMemAddressFree(v->ptr, v->size);
    }
    if (v->h) cuMemRelease(v->h);
    memset(v, 0, sizeof *v);
}

/* ------------------------------------------------------------------------------------------
 * The two drivers' objects */
static CUstream g_stream;
static CUfunction g_cu_fill, g_cu_scale;
static tg_device *g_dev;
static tg_queue *g_q, *g_cq;
static tg_kernel *g_tg_scale;
static int g_wait64 = 1; /* cuStreamWaitValue64 works (else the 32-bit forms) */
/* g_cuda_stuck (above): CUDA's stream did not drain after a failed ordering test; every later
 * CUDA call could block (cuCtxSynchronize), so the CUDA parts are skipped and the program ends
 * without tearing down. */

static int cu_launch(CUfunction f, void **args) {
    return CU(cuLaunchKernel(f, DATA_WORDS / 256, 1, 1, 256, 1, 1, 0, g_stream, args, NULL));
}

static int cu_write_value(CUdeviceptr p, uint64_t v) {
    if (g_wait64) return CU(cuStreamWriteValue64(g_stream, p, v, CU_STREAM_WRITE_VALUE_DEFAULT));
    return CU(cuStreamWriteValue32(g_stream, p, (cuuint32_t)v, CU_STREAM_WRITE_VALUE_DEFAULT));
}

static int cu_wait_value(CUdeviceptr p, uint64_t v) {
    if (g_wait64) return CU(cuStreamWaitValue64(g_stream, p, v, CU_STREAM_WAIT_VALUE_GEQ));
    return CU(cuStreamWaitValue32(g_stream, p, (cuuint32_t)v, CU_STREAM_WAIT_VALUE_GEQ));
}

/* Wait for `ev` with a deadline: 1 done, 0 timed out or failed. */
static int cu_event_wait(CUevent ev, double seconds) {
    double t0 = now_s();
    for (;;) {
        CUresult r = cuEventQuery(ev);
        if (r == CUDA_SUCCESS) return 1;
        if (r != CUDA_ERROR_NOT_READY) { cu_ok("cuEventQuery", r); return 0; }
        if (now_s() - t0 > seconds) return 0;
        usleep(200);
    }
}

/* The ordering test over memory both drivers map: `cb` is CUDA's address, `tb` our buffer
 * (both of at least SEM_OFFSET + 4096 bytes). With `tg_waits` 0 our queue does not wait for
 * CUDA's release (the control). Returns the number of wrong elements, or -1 when the test could
 * not run. */
static long ordering_run(const char *name, CUdeviceptr cb, tg_buf *tb, int tg_waits) {
    unsigned n = DATA_WORDS, i;
    unsigned three = 3, one = 1, two = 2, zero = 0, thousand = 1000;
    unsigned long long spin = SPIN_NS;
    CUdeviceptr data = cb, go_p = cb + SEM_OFFSET, done_p = cb + SEM_OFFSET + 16;
    void *fill_args[5] = {&data, &n, &three, &one, &spin};
    void *final_args[4] = {&data, &n, &one, &thousand};
    uint64_t tb_va = 0, v_go = 0, v_done = 0, stamp = 0;
    void *tg_args[4];
    tg_signal *go = NULL, *done = NULL;
    tg_launch_config cfg;
    CUevent ev = NULL;
    unsigned *host = NULL;
    long wrong = -1;
    double t0;
    char what[160];

    if (g_cuda_stuck) { printf("  skipped: CUDA's stream is stuck from an earlier test\n"); return -1; }
    snprintf(what, sizeof what, "%s: set-up", name);
    step(what);
    if (!CU(cuMemsetD32(cb, 0, n)) || !CU(cuMemsetD8(cb + SEM_OFFSET, 0, 4096)) ||
        !CU(cuCtxSynchronize()))
        return -1;
    if (!TG(tg_buf_gpu_address(tb, &tb_va)) ||
        !TG(tg_signal_create_in_buffer(tb, SEM_OFFSET, &go)) ||
        !TG(tg_signal_create_in_buffer(tb, SEM_OFFSET + 16, &done)))
        goto out;
    if (!CU(cuEventCreate(&ev, CU_EVENT_DEFAULT))) goto out;

    /* Ours first: wait for CUDA's release, then p = p * 2, then release `done`. */
    snprintf(what, sizeof what, "%s: record and submit ours", name);
    step(what);
    memset(&cfg, 0, sizeof cfg);
    cfg.struct_size = sizeof cfg;
    cfg.grid[0] = n / 256; cfg.grid[1] = cfg.grid[2] = 1;
    cfg.block[0] = 256; cfg.block[1] = cfg.block[2] = 1;
    tg_args[0] = &tb_va; tg_args[1] = &n; tg_args[2] = &two; tg_args[3] = &zero;
    if (tg_waits && !TG(tg_queue_wait(g_q, go, 1))) goto out;
    if (!TG(tg_launch_args(g_q, g_tg_scale, &cfg, tg_args, 4)) || !TG(tg_queue_signal(g_q, done, 1)) ||
        !TG(tg_queue_submit(g_q)))
        goto out;

    /* CUDA: slow fill p = 3i + 1, release `go`, wait for `done`, p = p + 1000. */
    snprintf(what, sizeof what, "%s: enqueue CUDA's", name);
    step(what);
    t0 = now_s();
    if (!cu_launch(g_cu_fill, fill_args) || !cu_write_value(go_p, 1) || !cu_wait_value(done_p, 1) ||
        !cu_launch(g_cu_scale, final_args) || !CU(cuEventRecord(ev, g_stream)))
        goto unblock;

    snprintf(what, sizeof what, "%s: wait for both", name);
    step(what);
    if (!cu_event_wait(ev, WAIT_S)) {
        tg_signal_value(go, &v_go);
        tg_signal_value(done, &v_done);
        printf("  CUDA's stream has not finished after %.0f s: go = %llu, done = %llu\n", WAIT_S,
               (unsigned long long)v_go, (unsigned long long)v_done);
        goto unblock;
    }
    if (!TG(tg_queue_synchronize(g_q, (uint64_t)(WAIT_S * 1e9)))) goto unblock;
    printf("  both sides done %.1f ms after CUDA's work was enqueued (its writer spins %.0f ms)\n",
           (now_s() - t0) * 1e3, SPIN_NS / 1e6);

    host = malloc((size_t)n * 4);
    if (!host || !CU(cuMemcpyDtoH(host, cb, (size_t)n * 4))) goto out;
    wrong = 0;
    for (i = 0; i < n; i++) {
        unsigned want = (3 * i + 1) * 2 + 1000;
        if (host[i] != want) {
            if (wrong < 4 && tg_waits)
                printf("  p[%u] = %u, want %u\n", i, host[i], want);
            wrong++;
        }
    }
    tg_signal_value(go, &v_go);
    tg_signal_value(done, &v_done);
    tg_signal_timestamp(done, &stamp);
    printf("  go = %llu, done = %llu (our release's GPU timestamp %llu), %ld of %u elements wrong\n",
           (unsigned long long)v_go, (unsigned long long)v_done, (unsigned long long)stamp, wrong, n);
    if (v_go != 1 || v_done != 1 || stamp == 0) wrong += 1000000;
    goto out;

unblock:
    /* Release both sides from the CPU so that neither queue waits forever, then drain. */
    printf("  releasing both semaphore words from the CPU to drain the queues\n");
    if (go) tg_signal_set(go, 1);
    if (done) tg_signal_set(done, 1);
    if (ev && !cu_event_wait(ev, 10.0)) {
        printf("  CUDA's stream did not drain either: the CUDA parts after this one are skipped\n");
        g_cuda_stuck = 1;
    }
    tg_queue_synchronize(g_q, 10000000000ull);
    wrong = -1;
out:
    free(host);
    if (ev && !g_cuda_stuck) cuEventDestroy(ev);
    if (go) tg_signal_destroy(go);
    if (done) tg_signal_destroy(done);
    return wrong;
}

/* The ordering test and its control: PASS/FAIL lines under `name`. */
static void ordering_test(const char *name, CUdeviceptr cb, tg_buf *tb) {
    char n2[160];
    long wrong = ordering_run(name, cb, tb, 1);
    if (wrong == 0) pass(name);
    else if (wrong < 0) fail(name, "could not run (see above)");
    else fail(name, "elements or semaphore words wrong (see above)");
    snprintf(n2, sizeof n2, "%s (control: without our wait)", name);
    wrong = ordering_run(n2, cb, tb, 0);
    printf("INFO %s: %ld elements wrong (a check that sees misordering reports most of the %u)\n",
           n2, wrong, DATA_WORDS);
}

/* Data both ways between our buffer `tb` and CUDA's address `cb` of the same memory. */
static int data_both_ways(const char *name, CUdeviceptr cb, tg_buf *tb) {
    unsigned buf[1024], i, bad = 0;
    step(name);
    if (g_cuda_stuck) { printf("  skipped: CUDA's stream is stuck from an earlier test\n"); return 0; }
    if (!TG(tg_queue_fill(g_cq, tb, 0, 0xA5A5F00Du, 4, 1024)) || !TG(tg_queue_synchronize(g_cq, 10000000000ull)))
        return 0;
    if (!CU(cuMemcpyDtoH(buf, cb, sizeof buf))) return 0;
    for (i = 0; i < 1024; i++) bad += buf[i] != 0xA5A5F00Du;
    if (bad) { printf("  CUDA reads %u of 1024 words wrong after our fill (first %#x)\n", bad, buf[0]); return 0; }
    if (!CU(cuMemsetD32(cb, 0x5EEDu, 1024)) || !CU(cuCtxSynchronize())) return 0;
    memset(buf, 0, sizeof buf);
    if (!TG(tg_queue_read(g_cq, buf, tb, 0, sizeof buf))) return 0;
    for (i = 0; i < 1024; i++) bad += buf[i] != 0x5EEDu;
    if (bad) { printf("  we read %u of 1024 words wrong after CUDA's memset (first %#x)\n", bad, buf[0]); return 0; }
    return 1;
}

/* ------------------------------------------------------------------------------------------ */

/* Part 1. The metadata of CUDA's export of a `size`-byte allocation, into `md` (1 when read). */
static int cuda_export_metadata(size_t size, uint8_t md[64]) {
    vmm v;
    int fd = -1, ok = 0;
    export_info info;
    uint32_t st;
    char h[129];
    if (!vmm_alloc(size, &v)) return 0;
    if (CU(cuMemExportToShareableHandle(&fd, v.h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0))) {
        st = g_rm_fd >= 0 ? rm_export_info(fd, &info) : 0xFFFFFFFFu;
        if (st == 0) {
            hex(info.metadata, 64, h);
            printf("RESULT cuda-export-info size=%zu: deviceInstance %u gpuInstanceId %#x maxObjects %u metadata %s\n",
                   size, info.deviceInstance, info.gpuInstanceId, info.maxObjects, h);
            memcpy(md, info.metadata, 64);
            ok = 1;
        } else {
            printf("RESULT cuda-export-info size=%zu: GET_EXPORT_OBJECT_INFO status %#x\n", size, st);
        }
        close(fd);
    }
    vmm_free(&v);
    return ok;
}

/* Part 1, last: does cuImportExternalMemory(OPAQUE_FD) take CUDA's own VMM export fd? */
static void cuda_imports_its_own_fd(size_t size) {
    vmm v;
    int fd = -1;
    CUDA_EXTERNAL_MEMORY_HANDLE_DESC md;
    CUexternalMemory ext = NULL;
    CUresult r;
    if (!vmm_alloc(size, &v)) return;
    if (CU(cuMemExportToShareableHandle(&fd, v.h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0))) {
        memset(&md, 0, sizeof md);
        md.type = CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD;
        md.handle.fd = fd;
        md.size = size;
        r = cuImportExternalMemory(&ext, &md);
        printf("RESULT cuImportExternalMemory(OPAQUE_FD) of CUDA's own cuMemExportToShareableHandle fd, size %zu: %d %s\n",
               size, (int)r, cu_name(r));
        if (r == CUDA_SUCCESS) cuDestroyExternalMemory(ext); /* it owns the fd now */
        else close(fd);
    }
    vmm_free(&v);
}

/* Part 2: we import CUDA's memory. */
static void part2_we_import_cuda_memory(void) {
    vmm v;
    int fd = -1;
    tg_buf *tb = NULL;
    uint64_t size = 0, va = 0;
    size_t want = 4 * MIB;
    step("part 2: cuMemCreate + cuMemExportToShareableHandle");
    if (want % g_granularity) want += g_granularity - want % g_granularity;
    if (!vmm_alloc(want, &v)) { fail("tg-imports-cuda", "cuMemCreate failed"); return; }
    if (!CU(cuMemExportToShareableHandle(&fd, v.h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0))) {
        fail("tg-imports-cuda", "cuMemExportToShareableHandle failed");
        vmm_free(&v);
        return;
    }
    step("part 2: tg_buf_import_fd of CUDA's fd");
    if (!TG(tg_buf_import_fd(g_dev, fd, 0, 0, &tb))) {
        fail("tg-imports-cuda", "tg_buf_import_fd failed (see above)");
        close(fd);
        vmm_free(&v);
        return;
    }
    close(fd); /* the import holds the memory */
    tg_buf_size(tb, &size);
    tg_buf_gpu_address(tb, &va);
    printf("INFO imported CUDA's %zu bytes: size %llu at GPU address %#llx (CUDA's %#llx)\n", want,
           (unsigned long long)size, (unsigned long long)va, (unsigned long long)v.ptr);
    if (size == want) pass("tg-imports-cuda: size");
    else fail("tg-imports-cuda: size", "tg_buf_size differs from CUDA's allocation");
    if (data_both_ways("tg-imports-cuda: data both ways", v.ptr, tb)) pass("tg-imports-cuda: data both ways");
    else fail("tg-imports-cuda: data both ways", "see above");
    {
        /* Our CPU view of CUDA's memory (BAR1). */
        void *p = NULL;
        unsigned w = 0;
        step("tg-imports-cuda: CPU view");
        if (TG(tg_buf_cpu_ptr(tb, &p)) && CU(cuMemsetD32(v.ptr, 0xC0FFEEu, 16)) && CU(cuCtxSynchronize())) {
            w = ((volatile unsigned *)p)[15];
            if (w == 0xC0FFEEu) pass("tg-imports-cuda: CPU view");
            else { printf("  CPU read %#x\n", w); fail("tg-imports-cuda: CPU view", "wrong value"); }
        } else {
            fail("tg-imports-cuda: CPU view", "see above");
        }
    }
    ordering_test("tg-imports-cuda: ordering through semaphores", v.ptr, tb);
    step("part 2: free");
    /* Our buffer first: CUDA's memory stays CUDA's. */
    TG(tg_buf_free(tb));
    TG(tg_device_synchronize(g_dev, 10000000000ull));
    vmm_free(&v);
}

/* Part 2, last: our import holds CUDA's memory after CUDA released its allocation. */
static void part2_import_outlives_cuda(void) {
    const char *name = "tg-imports-cuda: the import outlives cuMemRelease";
    vmm v;
    int fd = -1;
    tg_buf *tb = NULL;
    unsigned words[256], i, bad = 0;
    step(name);
    if (g_cuda_stuck) { printf("  skipped: CUDA's stream is stuck\n"); return; }
    if (!vmm_alloc(g_granularity, &v)) { fail(name, "cuMemCreate failed"); return; }
    if (!CU(cuMemsetD32(v.ptr, 0xD00Du, 256)) || !CU(cuCtxSynchronize()) ||
        !CU(cuMemExportToShareableHandle(&fd, v.h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0))) {
        fail(name, "CUDA set-up failed");
        vmm_free(&v);
        return;
    }
    if (!TG(tg_buf_import_fd(g_dev, fd, 0, 0, &tb))) {
        fail(name, "tg_buf_import_fd failed");
        close(fd);
        vmm_free(&v);
        return;
    }
    close(fd);
    vmm_free(&v); /* CUDA lets go: unmapped, released */
    memset(words, 0, sizeof words);
    if (!TG(tg_queue_read(g_cq, words, tb, 0, sizeof words))) { fail(name, "tg_queue_read"); tg_buf_free(tb); return; }
    for (i = 0; i < 256; i++) bad += words[i] != 0xD00Du;
    if (bad) { printf("  %u of 256 words wrong (first %#x)\n", bad, words[0]); fail(name, "the memory changed"); }
    else pass(name);
    tg_buf_free(tb);
}

/* Part 3: we import our own export. */
static void part3_round_trip(const char *kind, uint32_t flags, uint64_t bytes) {
    char name[128];
    tg_buf *a = NULL, *b = NULL;
    int fd = -1;
    uint64_t size = 0, va_a = 0, va_b = 0;
    void *pa = NULL, *pb = NULL;
    unsigned words[64], i, bad = 0;
    snprintf(name, sizeof name, "tg-round-trip %s %llu bytes", kind, (unsigned long long)bytes);
    step(name);
    if (!TG(tg_buf_alloc(g_dev, bytes, flags | TG_BUF_ZEROED, &a))) { fail(name, "tg_buf_alloc"); return; }
    if (!TG(tg_buf_export_fd(a, &fd, &size))) { fail(name, "tg_buf_export_fd"); tg_buf_free(a); return; }
    printf("  exported fd %d, object size %llu\n", fd, (unsigned long long)size);
    if (!TG(tg_buf_import_fd(g_dev, fd, 0, 0, &b))) {
        fail(name, "tg_buf_import_fd");
        close(fd);
        tg_buf_free(a);
        return;
    }
    close(fd);
    tg_buf_gpu_address(a, &va_a);
    tg_buf_gpu_address(b, &va_b);
    printf("  original at %#llx, import at %#llx\n", (unsigned long long)va_a, (unsigned long long)va_b);
    /* CPU writes through the original's view, a GPU read through the import; a GPU fill
     * through the import, CPU reads through the original's view. */
    if (!TG(tg_buf_cpu_ptr(a, &pa))) { fail(name, "tg_buf_cpu_ptr of the original"); goto out; }
    if (flags & TG_BUF_CPU_CACHED) {
        /* Page-locked user memory: the driver maps an import of it for GPUs only. */
        tg_status st = tg_buf_cpu_ptr(b, &pb);
        if (st != TG_ERROR_NOT_SUPPORTED || !strstr(tg_last_error_message(), "does not map")) {
            fail(name, "tg_buf_cpu_ptr of the import: expected TG_ERROR_NOT_SUPPORTED with the reason");
            goto out;
        }
        printf("  the import has no CPU view, as documented: %s\n", tg_last_error_message());
    } else if (!TG(tg_buf_cpu_ptr(b, &pb))) {
        fail(name, "tg_buf_cpu_ptr of the import");
        goto out;
    }
    for (i = 0; i < 64; i++) ((volatile unsigned *)pa)[i] = 0xAB000000u + i;
    memset(words, 0, sizeof words);
    if (!TG(tg_queue_read(g_cq, words, b, 0, sizeof words))) { fail(name, "tg_queue_read"); goto out; }
    for (i = 0; i < 64; i++) bad += words[i] != 0xAB000000u + i;
    if (!TG(tg_queue_fill(g_cq, b, 4096, 0x77u, 4, 16)) || !TG(tg_queue_synchronize(g_cq, 10000000000ull))) {
        fail(name, "tg_queue_fill");
        goto out;
    }
    for (i = 0; i < 16; i++) bad += ((volatile unsigned *)pa)[1024 + i] != 0x77u;
    if (bad) fail(name, "data differs between the two views");
    else pass(name);
out:
    tg_buf_free(a);
    tg_buf_free(b);
}

/* Part 4: CUDA imports our export. One variant: returns CUDA's address (and fills `ext`/`v`)
 * when it mapped. `how`: 0 cuImportExternalMemory, 1 the same with CUDA_EXTERNAL_MEMORY_DEDICATED,
 * 2 cuMemImportFromShareableHandle + cuMemMap. */
static const char *g_import_stage; /* which call of cuda_import gave *res */

static CUdeviceptr cuda_import(int fd, uint64_t size, int how, CUexternalMemory *ext, vmm *v, CUresult *res) {
    CUdeviceptr p = 0;
    g_import_stage = how <= 1 ? "cuImportExternalMemory" : "cuMemImportFromShareableHandle";
    memset(v, 0, sizeof *v);
    *ext = NULL;
    if (how <= 1) {
        CUDA_EXTERNAL_MEMORY_HANDLE_DESC md;
        CUDA_EXTERNAL_MEMORY_BUFFER_DESC bd;
        int dfd = dup(fd); /* CUDA owns the fd it imports on success */
        memset(&md, 0, sizeof md);
        md.type = CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD;
        md.handle.fd = dfd;
        md.size = size;
        md.flags = how == 1 ? CUDA_EXTERNAL_MEMORY_DEDICATED : 0;
        *res = cuImportExternalMemory(ext, &md);
        if (*res != CUDA_SUCCESS) { close(dfd); *ext = NULL; return 0; }
        memset(&bd, 0, sizeof bd);
        bd.offset = 0;
        bd.size = size;
        g_import_stage = "cuExternalMemoryGetMappedBuffer";
        *res = cuExternalMemoryGetMappedBuffer(&p, *ext, &bd);
        if (*res != CUDA_SUCCESS) { cuDestroyExternalMemory(*ext); *ext = NULL; return 0; }
        return p;
    }
    *res = cuMemImportFromShareableHandle(&v->h, (void *)(uintptr_t)fd, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
    if (*res != CUDA_SUCCESS) { v->h = 0; return 0; }
    g_import_stage = "cuMemAddressReserve/cuMemMap/cuMemSetAccess";
    if (!vmm_map(v, size)) { *res = g_last_cu; cuMemRelease(v->h); v->h = 0; return 0; }
    return v->ptr;
}

static void cuda_unimport(CUdeviceptr p, CUexternalMemory ext, vmm *v) {
    if (g_cuda_stuck) return;
    if (ext) { cuMemFree(p); cuDestroyExternalMemory(ext); }
    else vmm_free(v);
}

static const char *HOW[3] = {"cuImportExternalMemory(OPAQUE_FD)", "cuImportExternalMemory(OPAQUE_FD, DEDICATED)",
                             "cuMemImportFromShareableHandle(POSIX_FD)+cuMemMap"};

static int g_ordering_done;

static void part4_variant(const char *kind, uint32_t flags, uint64_t bytes, const uint8_t *md) {
    tg_buf *tb = NULL;
    int fd = -1, how;
    uint64_t size = 0;
    char mdhex[129], name[256];
    if (md) {
        hex(md, 64, mdhex);
        setenv("TEGRAGPU_RM_EXPORT_METADATA", mdhex, 1);
    } else {
        unsetenv("TEGRAGPU_RM_EXPORT_METADATA");
    }
    snprintf(name, sizeof name, "part 4: %s %llu bytes, %s metadata", kind, (unsigned long long)bytes,
             md ? "CUDA's" : "zero");
    step(name);
    if (!TG(tg_buf_alloc(g_dev, bytes, flags | TG_BUF_ZEROED, &tb))) goto out;
    for (how = 0; how < 3; how++) {
        CUexternalMemory ext = NULL;
        vmm v;
        CUresult r = CUDA_SUCCESS;
        CUdeviceptr p;
        if (!TG(tg_buf_export_fd(tb, &fd, &size))) {
            printf("RESULT cuda-imports-tg %s %llu %s-metadata %s: our export failed\n", kind,
                   (unsigned long long)bytes, md ? "cuda" : "zero", HOW[how]);
            break;
        }
        p = cuda_import(fd, size, how, &ext, &v, &r);
        close(fd);
        printf("RESULT cuda-imports-tg %s %llu (object %llu) %s-metadata %s: %d %s%s%s\n", kind,
               (unsigned long long)bytes, (unsigned long long)size, md ? "cuda" : "zero", HOW[how], (int)r,
               cu_name(r), r == CUDA_SUCCESS ? "" : " at ", r == CUDA_SUCCESS ? "" : g_import_stage);
        if (!p) continue;
        snprintf(name, sizeof name, "cuda-imports-tg %s %llu %s-metadata via %s: data both ways", kind,
                 (unsigned long long)bytes, md ? "cuda" : "zero", HOW[how]);
        if (data_both_ways(name, p, tb)) pass(name);
        else fail(name, "see above");
        if (!g_ordering_done && size >= SEM_OFFSET + 4096) {
            g_ordering_done = 1;
            snprintf(name, sizeof name, "cuda-imports-tg %s via %s: ordering through semaphores", kind, HOW[how]);
            ordering_test(name, p, tb);
        }
        cuda_unimport(p, ext, &v);
    }
out:
    unsetenv("TEGRAGPU_RM_EXPORT_METADATA");
    if (tb) tg_buf_free(tb);
}

/* ------------------------------------------------------------------------------------------ */

static int open_tg_device_of(CUdevice d) {
    CUuuid u;
    tg_device_listing l[16];
    uint32_t count = 0, i;
    tg_device_info info;
    memset(l, 0, sizeof l);
    l[0].struct_size = sizeof l[0];
    if (!CU(cuDeviceGetUuid(&u, d))) return 0;
    if (!TG(tg_device_list("rm", l, 16, &count))) return 0;
    for (i = 0; i < count && i < 16; i++) {
        if (memcmp(l[i].uuid, u.bytes, 16) == 0) {
            printf("INFO CUDA device %d is %s (%s), libtegragpu spec \"%s\"\n", (int)d, l[i].name,
                   l[i].pci_bus_id, l[i].spec);
            if (!TG(tg_device_open(l[i].spec, &g_dev))) return 0;
            memset(&info, 0, sizeof info);
            info.struct_size = sizeof info;
            return TG(tg_device_get_info(g_dev, &info));
        }
    }
    printf("  no libtegragpu device has the UUID of CUDA device %d\n", (int)d);
    return 0;
}

int main(int argc, char **argv) {
    CUcontext ctx;
    CUmodule mod;
    tg_module *tmod = NULL;
    CUmemAllocationProp prop;
    int drv = 0;
    uint8_t md2[64], md4[64];
    int have_md2 = 0, have_md4 = 0;
    CUresult r;
    char name[64];

    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc < 2) {
        fprintf(stderr, "usage: %s <interop_kernels.cubin>\n", argv[0]);
        return 2;
    }
    signal(SIGALRM, on_alarm);
    alarm(300);

    step("set-up: CUDA");
    if (!CU(cuInit(0)) || !CU(cuDeviceGet(&g_cu_dev, 0)) || !CU(cuDevicePrimaryCtxRetain(&ctx, g_cu_dev)) ||
        !CU(cuCtxSetCurrent(ctx)))
        return 2;
    cuDriverGetVersion(&drv);
    cuDeviceGetName(name, sizeof name, g_cu_dev);
    printf("INFO CUDA driver API %d, device 0: %s\n", drv, name);
    if (!CU(cuModuleLoad(&mod, argv[1])) || !CU(cuModuleGetFunction(&g_cu_fill, mod, "fill_affine")) ||
        !CU(cuModuleGetFunction(&g_cu_scale, mod, "scale_add")) ||
        !CU(cuStreamCreate(&g_stream, CU_STREAM_NON_BLOCKING)))
        return 2;
    vmm_prop(&prop);
    if (!CU(cuMemGetAllocationGranularity(&g_granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM))) return 2;
    printf("INFO cuMemCreate granularity %zu bytes\n", g_granularity);
    {
        int a64 = 0;
        r = cuDeviceGetAttribute(&a64, CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS, g_cu_dev);
        g_wait64 = r == CUDA_SUCCESS && a64;
        printf("INFO 64-bit stream memory operations: %s\n", g_wait64 ? "yes" : "no (the 32-bit forms are used)");
    }

    step("set-up: libtegragpu");
    if (!open_tg_device_of(g_cu_dev)) return 2;
    if (!TG(tg_module_load_file(g_dev, argv[1], &tmod)) || !TG(tg_module_get_kernel(tmod, "scale_add", &g_tg_scale)) ||
        !TG(tg_queue_create(g_dev, TG_QUEUE_COMPUTE, &g_q)) || !TG(tg_queue_create(g_dev, TG_QUEUE_COPY, &g_cq)))
        return 2;

    step("part 1: CUDA's export fds");
    if (!rm_open()) printf("INFO raw RM client not available: no metadata dump\n");
    have_md2 = cuda_export_metadata(2 * MIB, md2);
    have_md4 = cuda_export_metadata(4 * MIB, md4);
    cuda_imports_its_own_fd(2 * MIB);

    part2_we_import_cuda_memory();
    part2_import_outlives_cuda();
    if (g_cuda_stuck) printf("INFO part 4 is skipped: CUDA's stream is stuck\n");

    part3_round_trip("video memory (TG_BUF_DEVICE_LOCAL)", TG_BUF_DEVICE_LOCAL, 4 * MIB);
    part3_round_trip("host memory (TG_BUF_CPU_CACHED)", TG_BUF_CPU_CACHED, 64 * 1024);

    step("part 4: CUDA imports our export");
    {
        static const struct { const char *kind; uint32_t flags; } kinds[2] = {
            {"video", TG_BUF_DEVICE_LOCAL}, {"host", TG_BUF_CPU_CACHED}};
        static const uint64_t sizes[3] = {4 * MIB, 2 * MIB, 64 * 1024};
        int k, s;
        for (k = 0; k < 2 && !g_cuda_stuck; k++) {
            for (s = 0; s < 3; s++) {
                part4_variant(kinds[k].kind, kinds[k].flags, sizes[s], NULL);
                if (sizes[s] == 2 * MIB && have_md2) part4_variant(kinds[k].kind, kinds[k].flags, sizes[s], md2);
                if (sizes[s] == 4 * MIB && have_md4) part4_variant(kinds[k].kind, kinds[k].flags, sizes[s], md4);
            }
        }
        if (!g_ordering_done)
            printf("RESULT cuda-imports-tg: no variant mapped in CUDA; the ordering test through our export did not run\n");
    }

    if (g_cuda_stuck) {
        printf("cuda_interop: %d passed, %d failed (CUDA's stream stuck: no tear-down)\n", g_pass, g_fail);
        fflush(stdout);
        _exit(1);
    }
    step("tear-down");
    tg_queue_destroy(g_q);
    tg_queue_destroy(g_cq);
    tg_kernel_destroy(g_tg_scale);
    tg_module_destroy(tmod);
    tg_device_close(g_dev);
    cuStreamDestroy(g_stream);
    cuModuleUnload(mod);
    cuDevicePrimaryCtxRelease(g_cu_dev);
    printf("cuda_interop: %d passed, %d failed\n", g_pass, g_fail);
    return g_fail ? 1 : 0;
}
