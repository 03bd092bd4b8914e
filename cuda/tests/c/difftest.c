// Differential test of a libcuda: `difftest <libcuda path> <kernels.cubin> <kernels.ptx>
// <kernels.fatbin>` loads the library by path (RTLD_LOCAL), drives the CUDA driver API and prints
// one line per observation (`key value`). `difftest <libcuda A> <libcuda B> <kernels.cubin>
// <kernels.ptx> <kernels.fatbin> <out A> <out B>` does the same for both libraries in one process,
// A first, then B while A stays loaded, writing A's observations to <out A> and B's to <out B>.
// scripts/cuda-facade-device-run.sh runs it with NVIDIA's libcuda as A and libtegragpu's as B
// (and once more as two processes) and compares the outputs line by line. Values that legitimately differ
// between two runs of one driver (addresses, times) are printed as facts about them (non-zero,
// non-negative) instead.
//
// Built on the device machine against the CUDA toolkit's cuda.h:
//   gcc -O1 -I/usr/local/cuda/include difftest.c -o difftest -ldl
#define _GNU_SOURCE
#include <ctype.h>
#include <cuda.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

static void *lib;

static void *sym(const char *name) {
    void *p = dlsym(lib, name);
    if (!p) {
        fprintf(stderr, "difftest: %s is not exported\n", name);
        exit(3);
    }
    return p;
}

#define STR_(x) #x
#define STR(x) STR_(x)
// F(cuMemAlloc) is NVIDIA's cuMemAlloc_v2 (cuda.h's macros give the versioned name).
#define F(name) ((__typeof__(&name))sym(STR(name)))

static unsigned long long fnv(const void *p, size_t n) {
    const unsigned char *b = p;
    unsigned long long h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

static FILE *g_out;
#define OUT(key, fmt, ...) (fprintf(g_out, "%s " fmt "\n", key, __VA_ARGS__), fflush(g_out))
#define R(key, call) OUT(key, "%d", (int)(call))

// The parameters of a conditional node (cuGraphAddNode).
static CUgraphNodeParams cond_params(CUgraphConditionalHandle h, int type, unsigned size, CUcontext ctx) {
    CUgraphNodeParams cp;
    memset(&cp, 0, sizeof cp);
    cp.type = CU_GRAPH_NODE_TYPE_CONDITIONAL;
    cp.conditional.handle = h;
    cp.conditional.type = (CUgraphConditionalNodeType)type;
    cp.conditional.size = size;
    cp.conditional.ctx = ctx;
    return cp;
}

static void *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc(n + 1);
    if (fread(b, 1, n, f) != (size_t)n) n = 0;
    b[n] = 0;
    fclose(f);
    *len = n;
    return b;
}

// One library's observations into g_out. The library stays loaded (NVIDIA's libcuda does not
// support being unloaded).
/// One int-sized range attribute of managed memory: the result and the value.
static void range_int(const char *k, CUmem_range_attribute attr, CUdeviceptr p, size_t n) {
    int v = 12345;
    int r = F(cuMemRangeGetAttribute)(&v, 4, attr, p, n);
    OUT(k, "%d %d", r, v);
}

/// Whether the CPU may read (and write) `addr`: "rw", "r-", or "no" (not mapped, or mapped
/// without access: NVIDIA's libcuda keeps reserved ranges mapped without access).
static const char *cpu_perms(unsigned long long addr) {
    const char *out = "no";
    FILE *f = fopen("/proc/self/maps", "r");
    char line[512];
    while (f && fgets(line, sizeof line, f)) {
        unsigned long long a, b;
        char p[8];
        if (sscanf(line, "%llx-%llx %7s", &a, &b, p) == 3 && addr >= a && addr < b && p[0] == 'r')
            out = p[1] == 'w' ? "rw" : "r-";
    }
    if (f) fclose(f);
    return out;
}

static int run(const char *libpath, const char *cubin_path, const char *ptx_path,
               const char *fatbin_path) {
    lib = dlopen(libpath, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        fprintf(stderr, "difftest: %s\n", dlerror());
        return 2;
    }
    char key[128];
    int v = 0;
    // Before cuInit.
    CUdevice dev;
    R("before_init.cuDeviceGet", F(cuDeviceGet)(&dev, 0));
    R("cuDriverGetVersion", F(cuDriverGetVersion)(&v));
    OUT("driver_version", "%d", v);
    R("cuInit.bad_flags", F(cuInit)(1));
    R("cuInit", F(cuInit)(0));
    int count = 0;
    R("cuDeviceGetCount", F(cuDeviceGetCount)(&count));
    OUT("device_count", "%d", count);
    R("cuDeviceGet.out_of_range", F(cuDeviceGet)(&dev, count));
    R("cuDeviceGet", F(cuDeviceGet)(&dev, 0));
    char name[256] = {0};
    R("cuDeviceGetName", F(cuDeviceGetName)(name, sizeof name, dev));
    OUT("device_name", "%s", name);
    size_t total = 0;
    R("cuDeviceTotalMem", F(cuDeviceTotalMem)(&total, dev));
    OUT("total_mem", "%zu", total);
    char bus[64] = {0};
    R("cuDeviceGetPCIBusId", F(cuDeviceGetPCIBusId)(bus, sizeof bus, dev));
    OUT("pci_bus_id", "%s", bus);
    CUuuid uuid;
    R("cuDeviceGetUuid", F(cuDeviceGetUuid)(&uuid, dev));
    OUT("uuid", "%016llx", fnv(&uuid, sizeof uuid));
    for (int a = 0; a < 200; a++) {
        int val = -12345;
        int r = F(cuDeviceGetAttribute)(&val, (CUdevice_attribute)a, dev);
        snprintf(key, sizeof key, "attribute.%d", a);
        OUT(key, "%d %d", r, r == 0 ? val : 0);
    }
    int major = 0, minor = 0;
    R("cuDeviceComputeCapability", F(cuDeviceComputeCapability)(&major, &minor, dev));
    OUT("compute_capability", "%d.%d", major, minor);

    // Error names and strings (the strings are each library's own words: only their presence).
    for (int e = 0; e < 1000; e++) {
        const char *s = NULL;
        int r = F(cuGetErrorName)((CUresult)e, &s);
        if (r != 0 && e != 0) continue;
        snprintf(key, sizeof key, "error_name.%d", e);
        OUT(key, "%d %s", r, s ? s : "(null)");
        s = NULL;
        r = F(cuGetErrorString)((CUresult)e, &s);
        snprintf(key, sizeof key, "error_string.%d", e);
        OUT(key, "%d %d", r, s != NULL && s[0] != 0);
    }

    // cuGetProcAddress for the names this test uses and a few others.
    const char *names[] = {"cuInit", "cuMemAlloc", "cuMemcpyHtoD", "cuLaunchKernel", "cuCtxCreate",
                           "cuGraphInstantiate", "cuStreamQuery", "cuGetProcAddress", "cuNoSuchName"};
    for (unsigned i = 0; i < sizeof names / sizeof *names; i++) {
        for (int ver = 11000; ver <= 13000; ver += 1000) {
            for (int fl = 0; fl < 3; fl++) {
                void *p = NULL;
                CUdriverProcAddressQueryResult st = -1;
                int r = ((CUresult(*)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *))sym(
                    "cuGetProcAddress_v2"))(names[i], &p, ver, fl, &st);
                Dl_info info = {0};
                const char *what = "(null)";
                if (p && dladdr(p, &info) && info.dli_sname) what = info.dli_sname;
                snprintf(key, sizeof key, "procaddr.%s.%d.%d", names[i], ver, fl);
                OUT(key, "%d %d %s", r, (int)st, what);
            }
        }
    }

    // Contexts.
    CUcontext c0 = NULL, c1 = NULL, cur = NULL;
    R("cuCtxGetCurrent.none", F(cuCtxGetCurrent)(&cur));
    OUT("current.none", "%d", cur == NULL);
    CUdeviceptr dp = 0;
    R("cuMemAlloc.no_context", F(cuMemAlloc)(&dp, 16));
    R("cuCtxCreate_v2", ((CUresult(*)(CUcontext *, unsigned, CUdevice))sym("cuCtxCreate_v2"))(&c0, 0, dev));
    R("cuCtxCreate_v2.second", ((CUresult(*)(CUcontext *, unsigned, CUdevice))sym("cuCtxCreate_v2"))(&c1, 0, dev));
    R("cuCtxGetCurrent", F(cuCtxGetCurrent)(&cur));
    OUT("current.is_second", "%d", cur == c1);
    CUcontext popped = NULL;
    R("cuCtxPopCurrent", F(cuCtxPopCurrent)(&popped));
    OUT("popped.is_second", "%d", popped == c1);
    R("cuCtxGetCurrent.after_pop", F(cuCtxGetCurrent)(&cur));
    OUT("current.is_first", "%d", cur == c0);
    R("cuCtxPushCurrent", F(cuCtxPushCurrent)(c1));
    R("cuCtxDestroy.second", F(cuCtxDestroy)(c1));
    R("cuCtxGetCurrent.after_destroy", F(cuCtxGetCurrent)(&cur));
    OUT("current.after_destroy_is_first", "%d", cur == c0);
    CUcontext prim = NULL;
    R("cuDevicePrimaryCtxRetain", F(cuDevicePrimaryCtxRetain)(&prim, dev));
    unsigned pflags = 99;
    int active = -1;
    R("cuDevicePrimaryCtxGetState", F(cuDevicePrimaryCtxGetState)(dev, &pflags, &active));
    OUT("primary.state", "%u %d", pflags, active);
    R("cuDevicePrimaryCtxRelease", F(cuDevicePrimaryCtxRelease)(dev));
    CUdevice cd = -1;
    R("cuCtxGetDevice", F(cuCtxGetDevice)(&cd));
    OUT("ctx_device", "%d", cd);

    // Memory.
    enum { N = 1 << 16 };
    unsigned *h = malloc(N * 4), *h2 = malloc(N * 4);
    for (unsigned i = 0; i < N; i++) h[i] = i * 2654435761u;
    CUdeviceptr d = 0, d2 = 0;
    R("cuMemAlloc", F(cuMemAlloc)(&d, N * 4));
    R("cuMemAlloc.zero", F(cuMemAlloc)(&d2, 0));
    R("cuMemAlloc.second", F(cuMemAlloc)(&d2, N * 4));
    R("cuMemcpyHtoD", F(cuMemcpyHtoD)(d, h, N * 4));
    memset(h2, 0, N * 4);
    R("cuMemcpyDtoH", F(cuMemcpyDtoH)(h2, d, N * 4));
    OUT("roundtrip", "%016llx", fnv(h2, N * 4));
    R("cuMemcpyDtoD", F(cuMemcpyDtoD)(d2 + 64, d, N * 4 - 64));
    R("cuMemcpyDtoH.dtod", F(cuMemcpyDtoH)(h2, d2 + 64, N * 4 - 64));
    OUT("dtod", "%016llx", fnv(h2, N * 4 - 64));
    R("cuMemsetD32", F(cuMemsetD32)(d, 0xdeadbeef, N));
    R("cuMemsetD16", F(cuMemsetD16)(d + 6, 0x1234, 5));
    R("cuMemsetD8", F(cuMemsetD8)(d + 3, 0x5a, 9));
    R("cuMemcpyDtoH.memset", F(cuMemcpyDtoH)(h2, d, 64));
    OUT("memset", "%016llx", fnv(h2, 64));
    R("cuMemsetD8Async", F(cuMemsetD8Async)(d, 0x11, 100, 0));
    R("cuMemcpyDtoH.memset_async", F(cuMemcpyDtoH)(h2, d, 128));
    OUT("memset_async", "%016llx", fnv(h2, 128));
    CUdeviceptr base = 0;
    size_t size = 0;
    R("cuMemGetAddressRange", F(cuMemGetAddressRange)(&base, &size, d + 100));
    OUT("address_range", "%d %zu", base == d, size);
    // dma-buf fds of device memory (cuMemGetHandleForAddressRange): bad arguments, then a page,
    // the whole 2 MiB allocation and a page with the PCIe mapping type.
    {
        CUdeviceptr dd = 0;
        int fd = -1;
        const size_t two_mib = 2u << 20;
        R("cuMemAlloc.dmabuf", F(cuMemAlloc)(&dd, two_mib));
        OUT("dmabuf.base_aligned", "%d", (int)(dd % 4096 == 0));
        R("dmabuf.null_handle", F(cuMemGetHandleForAddressRange)(NULL, dd, 4096, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0));
        R("dmabuf.type2", F(cuMemGetHandleForAddressRange)(&fd, dd, 4096, (CUmemRangeHandleType)2, 0));
        R("dmabuf.flags2", F(cuMemGetHandleForAddressRange)(&fd, dd, 4096, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 2));
        R("dmabuf.unaligned", F(cuMemGetHandleForAddressRange)(&fd, dd + 1, 4096, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0));
        R("dmabuf.size100", F(cuMemGetHandleForAddressRange)(&fd, dd, 100, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0));
        R("dmabuf.size0", F(cuMemGetHandleForAddressRange)(&fd, dd, 0, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0));
        R("dmabuf.past_end", F(cuMemGetHandleForAddressRange)(&fd, dd, two_mib + 4096, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0));
        R("dmabuf.not_allocated", F(cuMemGetHandleForAddressRange)(&fd, 0x1000, 4096, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0));
        OUT("dmabuf.untouched", "%d", fd == -1);
        R("dmabuf.page", F(cuMemGetHandleForAddressRange)(&fd, dd + 4096, 4096, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0));
        OUT("dmabuf.page_fd", "%d", fd >= 0);
        if (fd >= 0) close(fd);
        fd = -1;
        R("dmabuf.whole", F(cuMemGetHandleForAddressRange)(&fd, dd, two_mib, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0));
        OUT("dmabuf.whole_fd", "%d", fd >= 0);
        if (fd >= 0) close(fd);
        fd = -1;
        R("dmabuf.pcie", F(cuMemGetHandleForAddressRange)(&fd, dd, 4096, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, CU_MEM_RANGE_FLAG_DMA_BUF_MAPPING_TYPE_PCIE));
        OUT("dmabuf.pcie_fd", "%d", fd >= 0);
        if (fd >= 0) close(fd);
        R("cuMemFree.dmabuf", F(cuMemFree)(dd));
    }
    size_t mfree = 0, mtotal = 0;
    R("cuMemGetInfo", F(cuMemGetInfo)(&mfree, &mtotal));
    OUT("mem_info", "%d %d", mtotal == total, mfree > 0 && mfree <= mtotal);
    // A small allocation's free (after a synchronize) gives back what it took (cudarc's
    // test_post_alloc_memory; whether the allocation itself lowers the figure depends on the
    // allocator: NVIDIA's carves small ones out of 2 MiB it may already hold).
    {
        size_t f1 = 0, f2 = 0, f3 = 0, t = 0;
        CUdeviceptr s = 0;
        R("cuMemGetInfo.before_small", F(cuMemGetInfo)(&f1, &t));
        R("cuMemAlloc.small", F(cuMemAlloc)(&s, 20));
        R("cuMemcpyHtoDAsync.small", F(cuMemcpyHtoDAsync)(s, h, 20, 0));
        R("cuMemGetInfo.small", F(cuMemGetInfo)(&f2, &t));
        R("cuMemFree.small", F(cuMemFree)(s));
        R("cuCtxSynchronize.small", F(cuCtxSynchronize)());
        R("cuMemGetInfo.after_small", F(cuMemGetInfo)(&f3, &t));
        OUT("mem_info.small_alloc_free", "%d %d", f2 <= f1, f3 == f1);
        fprintf(stderr, "difftest: %s: small allocation: free %zu, %zu after, %zu after its free\n",
                libpath, f1, f2, f3);
    }
    void *pinned = NULL;
    R("cuMemHostAlloc", F(cuMemHostAlloc)(&pinned, N * 4, 0));
    memcpy(pinned, h, N * 4);
    R("cuMemcpyHtoDAsync.pinned", F(cuMemcpyHtoDAsync)(d, pinned, N * 4, 0));
    R("cuStreamSynchronize", F(cuStreamSynchronize)(0));
    memset(pinned, 0, N * 4);
    R("cuMemcpyDtoHAsync.pinned", F(cuMemcpyDtoHAsync)(pinned, d, N * 4, 0));
    R("cuCtxSynchronize", F(cuCtxSynchronize)());
    OUT("pinned_roundtrip", "%016llx", fnv(pinned, N * 4));
    CUdeviceptr hp = 0;
    R("cuMemHostGetDevicePointer", F(cuMemHostGetDevicePointer)(&hp, pinned, 0));
    OUT("host_device_pointer_nonzero", "%d", hp != 0);
    unsigned mtype = 0;
    R("cuPointerGetAttribute.type", F(cuPointerGetAttribute)(&mtype, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, d + 8));
    OUT("pointer_type", "%u", mtype);
    R("cuMemFree.inside", F(cuMemFree)(d + 4));

    // Modules and launches.
    const char *paths[3] = {cubin_path, ptx_path, fatbin_path};
    const char *kinds[3] = {"cubin", "ptx", "fatbin"};
    CUmodule mods[3] = {0};
    for (int k = 0; k < 3; k++) {
        size_t len = 0;
        void *img = read_file(paths[k], &len);
        snprintf(key, sizeof key, "cuModuleLoadData.%s", kinds[k]);
        R(key, img ? F(cuModuleLoadData)(&mods[k], img) : -1);
        free(img);
    }
    CUmodule m = mods[0];
    CUmodule mf = NULL;
    R("cuModuleLoad.file", F(cuModuleLoad)(&mf, cubin_path));
    R("cuModuleLoad.missing", F(cuModuleLoad)(&mf, "/nonexistent/x.cubin"));
    CUfunction axpy = NULL, inc = NULL, iota = NULL, bsum = NULL, rt = NULL, nf = NULL;
    R("cuModuleGetFunction.axpy", F(cuModuleGetFunction)(&axpy, m, "axpy"));
    R("cuModuleGetFunction.inc", F(cuModuleGetFunction)(&inc, m, "inc"));
    R("cuModuleGetFunction.iota", F(cuModuleGetFunction)(&iota, m, "iota"));
    R("cuModuleGetFunction.block_sum", F(cuModuleGetFunction)(&bsum, m, "block_sum"));
    R("cuModuleGetFunction.read_table", F(cuModuleGetFunction)(&rt, m, "read_table"));
    R("cuModuleGetFunction.missing", F(cuModuleGetFunction)(&nf, m, "nope"));
    CUfunction again = NULL;
    F(cuModuleGetFunction)(&again, m, "axpy");
    OUT("same_function_handle", "%d", again == axpy);
    for (int a = 0; a <= 15; a++) {
        int val = -1;
        int r = F(cuFuncGetAttribute)(&val, (CUfunction_attribute)a, bsum);
        snprintf(key, sizeof key, "func_attribute.block_sum.%d", a);
        // Registers and versions depend on the compiler's choices per load path; print all.
        OUT(key, "%d %d", r, val);
    }
    R("cuFuncSetAttribute.max_dynamic_shared", F(cuFuncSetAttribute)(bsum, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 64 * 1024));
    R("cuFuncSetAttribute.too_much", F(cuFuncSetAttribute)(bsum, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 1 << 30));
    R("cuFuncSetCacheConfig", F(cuFuncSetCacheConfig)(axpy, CU_FUNC_CACHE_PREFER_L1));
    for (int bs = 32; bs <= 1024; bs *= 2) {
        int nb = -1;
        int r = F(cuOccupancyMaxActiveBlocksPerMultiprocessor)(&nb, axpy, bs, 0);
        snprintf(key, sizeof key, "occupancy.axpy.%d", bs);
        OUT(key, "%d %d", r, nb);
    }
    // kernelParams.
    unsigned n = N;
    CUdeviceptr dx = d, dy = d2;
    float a = 2.5f;
    float *fx = malloc(N * 4), *fy = malloc(N * 4);
    for (unsigned i = 0; i < N; i++) fx[i] = (float)i, fy[i] = (float)(i % 7);
    F(cuMemcpyHtoD)(dx, fx, N * 4);
    F(cuMemcpyHtoD)(dy, fy, N * 4);
    void *args[] = {&a, &dx, &dy, &n};
    R("cuLaunchKernel.axpy", F(cuLaunchKernel)(axpy, N / 256, 1, 1, 256, 1, 1, 0, 0, args, NULL));
    R("cuMemcpyDtoH.axpy", F(cuMemcpyDtoH)(fy, dy, N * 4));
    OUT("axpy", "%016llx", fnv(fy, N * 4));
    // extra.
    struct { CUdeviceptr p; unsigned base, n; } ia = {dx, 1000, N};
    size_t ias = sizeof ia;
    void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &ia, CU_LAUNCH_PARAM_BUFFER_SIZE, &ias, CU_LAUNCH_PARAM_END};
    R("cuLaunchKernel.extra", F(cuLaunchKernel)(iota, N / 128, 1, 1, 128, 1, 1, 0, 0, NULL, extra));
    R("cuMemcpyDtoH.iota", F(cuMemcpyDtoH)(h2, dx, N * 4));
    OUT("iota", "%016llx", fnv(h2, N * 4));
    R("cuLaunchKernel.block_too_big", F(cuLaunchKernel)(axpy, 1, 1, 1, 2048, 1, 1, 0, 0, args, NULL));
    // Dynamic shared memory (opted in above to 64 KiB).
    void *bargs[] = {&dx, &dy};
    R("cuLaunchKernel.block_sum", F(cuLaunchKernel)(bsum, N / 256, 1, 1, 256, 1, 1, 1024, 0, bargs, NULL));
    R("cuLaunchKernel.block_sum_over_optin", F(cuLaunchKernel)(bsum, 1, 1, 1, 256, 1, 1, 65 * 1024 + 4, 0, bargs, NULL));
    R("cuMemcpyDtoH.block_sum", F(cuMemcpyDtoH)(h2, dy, (N / 256) * 4));
    OUT("block_sum", "%016llx", fnv(h2, (N / 256) * 4));
    // Globals.
    CUdeviceptr gt = 0;
    size_t gts = 0;
    R("cuModuleGetGlobal", F(cuModuleGetGlobal)(&gt, &gts, m, "g_table"));
    OUT("global_size", "%zu", gts);
    unsigned table[16];
    for (int i = 0; i < 16; i++) table[i] = 100 + i;
    R("cuMemcpyHtoD.global", F(cuMemcpyHtoD)(gt, table, sizeof table));
    void *rargs[] = {&dy};
    R("cuLaunchKernel.read_table", F(cuLaunchKernel)(rt, 1, 1, 1, 32, 1, 1, 0, 0, rargs, NULL));
    R("cuMemcpyDtoH.read_table", F(cuMemcpyDtoH)(h2, dy, 32 * 4));
    OUT("read_table", "%016llx", fnv(h2, 32 * 4));
    // A __managed__ variable: managed memory of its own at one address for host and kernel.
    {
        CUdeviceptr mg = 0, rb = 0;
        size_t mgs = 0, rs = 0;
        unsigned im = 9, mt = 0, hf = 0;
        void *hp = NULL;
        R("managed_var.cuModuleGetGlobal", F(cuModuleGetGlobal)(&mg, &mgs, m, "g_managed"));
        OUT("managed_var.size", "%zu", mgs);
        R("managed_var.cuPointerGetAttribute.is_managed", F(cuPointerGetAttribute)(&im, CU_POINTER_ATTRIBUTE_IS_MANAGED, mg));
        OUT("managed_var.is_managed", "%u", im);
        R("managed_var.host_pointer", F(cuPointerGetAttribute)(&hp, CU_POINTER_ATTRIBUTE_HOST_POINTER, mg));
        OUT("managed_var.host_is_device", "%d", mg != 0 && hp == (void *)mg);
        R("managed_var.range_start", F(cuPointerGetAttribute)(&rb, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, mg));
        OUT("managed_var.range_start_is_var", "%d", mg != 0 && rb == mg);
        R("managed_var.cuPointerGetAttribute.range_size", F(cuPointerGetAttribute)(&rs, CU_POINTER_ATTRIBUTE_RANGE_SIZE, mg));
        OUT("managed_var.range_size", "%zu", rs);
        R("managed_var.cuPointerGetAttribute.memory_type", F(cuPointerGetAttribute)(&mt, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, mg));
        OUT("managed_var.memory_type", "%u", mt);
        R("managed_var.cuMemHostGetFlags", F(cuMemHostGetFlags)(&hf, (void *)mg));
        OUT("managed_var.host_flags", "%u", hf);
        CUfunction bm = NULL;
        R("managed_var.cuModuleGetFunction", F(cuModuleGetFunction)(&bm, m, "bump_managed"));
        if (mg && im == 1) {
            volatile unsigned *p = (volatile unsigned *)mg;
            OUT("managed_var.init", "%u %u %u %u", p[0], p[1], p[2], p[3]);
            p[0] += 1;
            unsigned k = 2;
            void *ka[] = {&k};
            R("managed_var.launch", bm ? F(cuLaunchKernel)(bm, 1, 1, 1, 1, 1, 1, 0, 0, ka, NULL) : -1);
            R("managed_var.sync", F(cuCtxSynchronize)());
            OUT("managed_var.after", "%u %u %u %u", p[0], p[1], p[2], p[3]);
            unsigned back[4] = {0};
            R("managed_var.cuMemcpyDtoH", F(cuMemcpyDtoH)(back, mg, sizeof back));
            OUT("managed_var.copied", "%u %u %u %u", back[0], back[1], back[2], back[3]);
        }
    }
    // PTX and fatbin modules run the same kernel.
    for (int k = 1; k < 3; k++) {
        CUfunction f2 = NULL;
        snprintf(key, sizeof key, "cuModuleGetFunction.iota.%s", kinds[k]);
        R(key, mods[k] ? F(cuModuleGetFunction)(&f2, mods[k], "iota") : -1);
        struct { CUdeviceptr p; unsigned base, n; } ib = {dx, 7 + k, N};
        void *ex[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &ib, CU_LAUNCH_PARAM_BUFFER_SIZE, &ias, CU_LAUNCH_PARAM_END};
        snprintf(key, sizeof key, "cuLaunchKernel.iota.%s", kinds[k]);
        R(key, f2 ? F(cuLaunchKernel)(f2, N / 128, 1, 1, 128, 1, 1, 0, 0, NULL, ex) : -1);
        F(cuMemcpyDtoH)(h2, dx, N * 4);
        snprintf(key, sizeof key, "iota.%s", kinds[k]);
        OUT(key, "%016llx", fnv(h2, N * 4));
    }

    // Streams and events.
    CUstream s1 = NULL, s2 = NULL;
    R("cuStreamCreate", F(cuStreamCreate)(&s1, 0));
    R("cuStreamCreate.non_blocking", F(cuStreamCreate)(&s2, CU_STREAM_NON_BLOCKING));
    unsigned sflags = 9;
    R("cuStreamGetFlags", F(cuStreamGetFlags)(s2, &sflags));
    OUT("stream_flags", "%u", sflags);
    CUevent e1 = NULL, e2 = NULL, e3 = NULL;
    R("cuEventCreate", F(cuEventCreate)(&e1, 0));
    R("cuEventCreate.2", F(cuEventCreate)(&e2, 0));
    R("cuEventCreate.no_timing", F(cuEventCreate)(&e3, CU_EVENT_DISABLE_TIMING));
    CUdeviceptr ctr = d;
    F(cuMemsetD32)(ctr, 0, 2);
    unsigned long long by = 1, by2 = 1000;
    void *iargs[] = {&ctr, &by}, *iargs2[] = {&ctr, &by2};
    R("cuEventRecord", F(cuEventRecord)(e1, s1));
    for (int i = 0; i < 100; i++) F(cuLaunchKernel)(inc, 1, 1, 1, 32, 1, 1, 0, s1, iargs, NULL);
    R("cuEventRecord.2", F(cuEventRecord)(e2, s1));
    R("cuStreamWaitEvent", F(cuStreamWaitEvent)(s2, e2, 0));
    R("cuLaunchKernel.s2", F(cuLaunchKernel)(inc, 1, 1, 1, 32, 1, 1, 0, s2, iargs2, NULL));
    R("cuStreamSynchronize.s2", F(cuStreamSynchronize)(s2));
    R("cuStreamQuery.s2", F(cuStreamQuery)(s2));
    unsigned long long cv = 0;
    F(cuMemcpyDtoH)(&cv, ctr, 8);
    OUT("counter.after_wait_event", "%llu", cv);
    R("cuEventSynchronize", F(cuEventSynchronize)(e2));
    R("cuEventQuery", F(cuEventQuery)(e2));
    float ms = -1;
    R("cuEventElapsedTime", F(cuEventElapsedTime)(&ms, e1, e2));
    OUT("elapsed_nonnegative", "%d", ms >= 0);
    R("cuEventRecord.no_timing", F(cuEventRecord)(e3, s1));
    F(cuEventSynchronize)(e3);
    R("cuEventElapsedTime.no_timing", F(cuEventElapsedTime)(&ms, e1, e3));
    // The legacy default stream waits for blocking streams.
    for (int i = 0; i < 50; i++) F(cuLaunchKernel)(inc, 1, 1, 1, 32, 1, 1, 0, s1, iargs, NULL);
    F(cuLaunchKernel)(inc, 1, 1, 1, 32, 1, 1, 0, 0, iargs2, NULL);
    R("cuStreamSynchronize.legacy", F(cuStreamSynchronize)(0));
    F(cuMemcpyDtoH)(&cv, ctr, 8);
    OUT("counter.after_legacy", "%llu", cv);
    R("cuLaunchKernel.per_thread", F(cuLaunchKernel)(inc, 1, 1, 1, 32, 1, 1, 0, CU_STREAM_PER_THREAD, iargs, NULL));
    R("cuStreamSynchronize.per_thread", F(cuStreamSynchronize)(CU_STREAM_PER_THREAD));
    F(cuMemcpyDtoH)(&cv, ctr, 8);
    OUT("counter.after_per_thread", "%llu", cv);
    R("cuStreamDestroy.legacy", F(cuStreamDestroy)(0));

    // Graphs, as tinygrad builds them.
    CUgraph g = NULL;
    R("cuGraphCreate", F(cuGraphCreate)(&g, 0));
    F(cuMemsetD32)(ctr, 0, 2);
    struct { CUdeviceptr p; unsigned base, n; } ga = {dx, 5, N};
    size_t gas = sizeof ga;
    void *gextra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &ga, CU_LAUNCH_PARAM_BUFFER_SIZE, &gas, CU_LAUNCH_PARAM_END};
    CUDA_KERNEL_NODE_PARAMS_v1 kp1 = {iota, N / 128, 1, 1, 128, 1, 1, 0, NULL, gextra};
    CUgraphNode na = NULL, nb = NULL, nc = NULL;
    R("cuGraphAddKernelNode.v1", ((CUresult(*)(CUgraphNode *, CUgraph, const CUgraphNode *, size_t, const CUDA_KERNEL_NODE_PARAMS_v1 *))sym(
                                    "cuGraphAddKernelNode"))(&na, g, NULL, 0, &kp1));
    CUDA_KERNEL_NODE_PARAMS kp2 = {0};
    kp2.func = inc;
    kp2.gridDimX = kp2.gridDimY = kp2.gridDimZ = 1;
    kp2.blockDimX = 32, kp2.blockDimY = kp2.blockDimZ = 1;
    kp2.kernelParams = iargs;
    R("cuGraphAddKernelNode.v2", F(cuGraphAddKernelNode)(&nb, g, &na, 1, &kp2));
    CUDA_MEMCPY3D cp = {0};
    cp.srcMemoryType = CU_MEMORYTYPE_DEVICE, cp.srcDevice = dx, cp.srcPitch = N * 4, cp.srcHeight = 1;
    cp.dstMemoryType = CU_MEMORYTYPE_DEVICE, cp.dstDevice = dy, cp.dstPitch = N * 4, cp.dstHeight = 1;
    cp.WidthInBytes = N * 4, cp.Height = 1, cp.Depth = 1;
    // The copy reads dx, which the inc node also writes (ctr is dx): it depends on both, or
    // the two nodes race and either order is CUDA's (NVIDIA's driver copies first, this
    // library increments first).
    CUgraphNode nc_deps[2] = {na, nb};
    R("cuGraphAddMemcpyNode", F(cuGraphAddMemcpyNode)(&nc, g, nc_deps, 2, &cp, c0));
    CUgraphExec ge = NULL, ge2 = NULL;
    R("cuGraphInstantiate_v2", ((CUresult(*)(CUgraphExec *, CUgraph, CUgraphNode *, char *, size_t))sym("cuGraphInstantiate_v2"))(
                                   &ge, g, NULL, NULL, 0));
    R("cuGraphInstantiateWithFlags", F(cuGraphInstantiateWithFlags)(&ge2, g, 0));
    for (int i = 0; i < 3; i++) F(cuGraphLaunch)(ge, 0);
    R("cuGraphLaunch", F(cuGraphLaunch)(ge2, s1));
    R("cuCtxSynchronize.graph", F(cuCtxSynchronize)());
    F(cuMemcpyDtoH)(&cv, ctr, 8);
    OUT("graph.counter", "%llu", cv);
    F(cuMemcpyDtoH)(h2, dy, N * 4);
    OUT("graph.copy", "%016llx", fnv(h2, N * 4));
    by = 77;
    R("cuGraphExecKernelNodeSetParams.v2", F(cuGraphExecKernelNodeSetParams)(ge, nb, &kp2));
    ga.base = 9;
    kp1.gridDimX = N / 256;
    kp1.blockDimX = 256;
    R("cuGraphExecKernelNodeSetParams.v1", ((CUresult(*)(CUgraphExec, CUgraphNode, const CUDA_KERNEL_NODE_PARAMS_v1 *))sym(
                                               "cuGraphExecKernelNodeSetParams"))(ge, na, &kp1));
    R("cuGraphLaunch.updated", F(cuGraphLaunch)(ge, 0));
    F(cuCtxSynchronize)();
    F(cuMemcpyDtoH)(&cv, ctr, 8);
    OUT("graph.counter_updated", "%llu", cv);
    F(cuMemcpyDtoH)(h2, dy, N * 4);
    OUT("graph.copy_updated", "%016llx", fnv(h2, N * 4));
    R("cuGraphExecDestroy", F(cuGraphExecDestroy)(ge));
    R("cuGraphExecDestroy.2", F(cuGraphExecDestroy)(ge2));
    R("cuGraphDestroy", F(cuGraphDestroy)(g));

    // Graph structure: root nodes, edges, dependencies and dependents, removing edges, a child
    // graph node, memset node parameters, finding a node in a clone, the instantiate flags.
    {
        // The CUDA 12.0 forms by their exported names (cuda.h may map these names to _v2).
        typedef CUresult (*edges_t)(CUgraph, CUgraphNode *, CUgraphNode *, size_t *);
        typedef CUresult (*nodes_of_t)(CUgraphNode, CUgraphNode *, size_t *);
        typedef CUresult (*remove_t)(CUgraph, const CUgraphNode *, const CUgraphNode *, size_t);
        edges_t get_edges = (edges_t)sym("cuGraphGetEdges");
        nodes_of_t get_deps = (nodes_of_t)sym("cuGraphNodeGetDependencies");
        nodes_of_t get_dependents = (nodes_of_t)sym("cuGraphNodeGetDependentNodes");
        remove_t remove_deps = (remove_t)sym("cuGraphRemoveDependencies");
        CUgraph gs = NULL, gch = NULL, gcl = NULL, ginner = NULL;
        F(cuGraphCreate)(&gs, 0);
        F(cuGraphCreate)(&gch, 0);
        CUgraphNode a = NULL, b = NULL, c = NULL, d = NULL, cm = NULL, found = NULL;
        CUDA_MEMSET_NODE_PARAMS ms = {0};
        ms.dst = dy, ms.value = 0x51, ms.elementSize = 4, ms.width = N, ms.height = 1;
        R("gq.child_memset", F(cuGraphAddMemsetNode)(&cm, gch, NULL, 0, &ms, c0));
        F(cuGraphAddEmptyNode)(&a, gs, NULL, 0);
        ms.dst = dx, ms.value = 7;
        R("gq.memset", F(cuGraphAddMemsetNode)(&b, gs, &a, 1, &ms, c0));
        F(cuGraphAddEmptyNode)(&c, gs, &a, 1);
        CUgraphNode bc[2] = {b, c};
        R("gq.cuGraphAddChildGraphNode", F(cuGraphAddChildGraphNode)(&d, gs, bc, 2, gch));
        CUgraphNodeType t = (CUgraphNodeType)99;
        F(cuGraphNodeGetType)(d, &t);
        OUT("gq.child_type", "%d", (int)t);
        R("gq.child_get_graph", F(cuGraphChildGraphNodeGetGraph)(d, &ginner));
        OUT("gq.child_is_a_copy", "%d", (int)(ginner != NULL && ginner != gch));
        size_t k = 0;
        R("gq.roots.count", F(cuGraphGetRootNodes)(gs, NULL, &k));
        OUT("gq.roots.count.value", "%zu", k);
        CUgraphNode lst[4] = {0, 0, 0, 0};
        lst[1] = lst[2] = (CUgraphNode)1;
        k = 3;
        R("gq.roots.list", F(cuGraphGetRootNodes)(gs, lst, &k));
        OUT("gq.roots.list.value", "%zu %d %d %d", k, lst[0] == a, lst[1] == NULL, lst[2] == NULL);
        k = 0;
        R("gq.edges.count", get_edges(gs, NULL, NULL, &k));
        OUT("gq.edges.count.value", "%zu", k);
        k = 2;
        R("gq.deps", get_deps(d, lst, &k));
        OUT("gq.deps.value", "%zu %d %d", k, lst[0] == b, lst[1] == c);
        k = 4;
        R("gq.dependents", get_dependents(a, lst, &k));
        OUT("gq.dependents.value", "%zu %d %d", k, lst[0] == b || lst[1] == b, lst[0] == c || lst[1] == c);
        R("gq.remove", remove_deps(gs, &c, &d, 1));
        R("gq.remove.again", remove_deps(gs, &c, &d, 1));
        k = 0;
        get_edges(gs, NULL, NULL, &k);
        OUT("gq.edges.after_remove", "%zu", k);
        CUDA_MEMSET_NODE_PARAMS back;
        memset(&back, 0, sizeof back);
        R("gq.memset_get", F(cuGraphMemsetNodeGetParams)(b, &back));
        OUT("gq.memset_get.value", "%d %u %u %zu %zu", back.dst == dx, back.value, back.elementSize, back.width,
            back.height);
        R("gq.memset_get.empty_node", F(cuGraphMemsetNodeGetParams)(a, &back));
        ms.value = 9;
        R("gq.memset_set", F(cuGraphMemsetNodeSetParams)(b, &ms));
        R("gq.clone", F(cuGraphClone)(&gcl, gs));
        R("gq.find_in_clone", F(cuGraphNodeFindInClone)(&found, b, gcl));
        t = (CUgraphNodeType)99;
        if (found) F(cuGraphNodeGetType)(found, &t);
        OUT("gq.find_in_clone.type", "%d %d", (int)t, found != b);
        R("gq.find_in_other", F(cuGraphNodeFindInClone)(&found, b, gch));
        CUgraphExec gx = NULL;
        R("gq.instantiate", F(cuGraphInstantiateWithFlags)(&gx, gs, CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH));
        cuuint64_t fl = 99;
        R("gq.exec_flags", F(cuGraphExecGetFlags)(gx, &fl));
        OUT("gq.exec_flags.value", "%llu", (unsigned long long)fl);
        unsigned en = 9;
        R("gq.enabled", F(cuGraphNodeGetEnabled)(gx, b, &en));
        OUT("gq.enabled.value", "%u", en);
        R("gq.disable", F(cuGraphNodeSetEnabled)(gx, b, 0));
        en = 9;
        F(cuGraphNodeGetEnabled)(gx, b, &en);
        OUT("gq.disabled.value", "%u", en);
        R("gq.disable.empty_node", F(cuGraphNodeSetEnabled)(gx, a, 0));
        F(cuMemsetD32)(dx, 0, N);
        R("gq.launch.disabled", F(cuGraphLaunch)(gx, 0));
        F(cuCtxSynchronize)();
        F(cuMemcpyDtoH)(h2, dx, N * 4);
        OUT("gq.disabled_memset_value", "%016llx", fnv(h2, N * 4));
        R("gq.enable", F(cuGraphNodeSetEnabled)(gx, b, 1));
        // The generic call: a memset node.
        CUgraphNodeParams np;
        memset(&np, 0, sizeof np);
        np.type = CU_GRAPH_NODE_TYPE_MEMSET;
        np.memset.dst = dy, np.memset.value = 3, np.memset.elementSize = 4, np.memset.width = N, np.memset.height = 1;
        CUgraphNode gn = NULL;
        R("gq.add_node.memset", ((CUresult(*)(CUgraphNode *, CUgraph, const CUgraphNode *, size_t, CUgraphNodeParams *))sym(
                                     "cuGraphAddNode"))(&gn, gcl, NULL, 0, &np));
        t = (CUgraphNodeType)99;
        if (gn) F(cuGraphNodeGetType)(gn, &t);
        OUT("gq.add_node.memset.type", "%d", (int)t);
        np.type = (CUgraphNodeType)99;
        R("gq.add_node.type99", ((CUresult(*)(CUgraphNode *, CUgraph, const CUgraphNode *, size_t, CUgraphNodeParams *))sym(
                                     "cuGraphAddNode"))(&gn, gcl, NULL, 0, &np));
        // cuGraphExecUpdate from a clone (the same shape) and from a graph of another shape.
        {
            CUgraph gu = NULL, gt = NULL;
            F(cuGraphClone)(&gu, gs);
            CUgraphExecUpdateResultInfo ui;
            memset(&ui, 0, sizeof ui);
            ui.result = (CUgraphExecUpdateResult)99;
            R("gq.exec_update.clone", F(cuGraphExecUpdate)(gx, gu, &ui));
            OUT("gq.exec_update.clone.result", "%d %d", (int)ui.result, ui.errorNode == NULL);
            F(cuGraphCreate)(&gt, 0);
            CUgraphNode x = NULL;
            F(cuGraphAddEmptyNode)(&x, gt, NULL, 0);
            memset(&ui, 0, sizeof ui);
            R("gq.exec_update.other", F(cuGraphExecUpdate)(gx, gt, &ui));
            OUT("gq.exec_update.other.result", "%d", (int)ui.result);
            F(cuGraphDestroy)(gu);
            F(cuGraphDestroy)(gt);
        }
        // Event record and wait nodes.
        {
            CUevent ev1 = NULL;
            F(cuEventCreate)(&ev1, 0);
            CUgraph gev = NULL;
            F(cuGraphCreate)(&gev, 0);
            CUgraphNode er = NULL, ew = NULL, enull = NULL;
            R("gq.event_record_node", F(cuGraphAddEventRecordNode)(&er, gev, NULL, 0, ev1));
            R("gq.event_wait_node", F(cuGraphAddEventWaitNode)(&ew, gev, &er, 1, ev1));
            R("gq.event_record_node.null", F(cuGraphAddEventRecordNode)(&enull, gev, NULL, 0, NULL));
            CUgraphNodeType t1 = (CUgraphNodeType)99, t2 = (CUgraphNodeType)99;
            F(cuGraphNodeGetType)(er, &t1);
            F(cuGraphNodeGetType)(ew, &t2);
            OUT("gq.event_node_types", "%d %d", (int)t1, (int)t2);
            CUevent back_ev = NULL;
            R("gq.event_record_node.get", F(cuGraphEventRecordNodeGetEvent)(er, &back_ev));
            OUT("gq.event_record_node.get.same", "%d", back_ev == ev1);
            R("gq.event_wait_node.get_as_record", F(cuGraphEventRecordNodeGetEvent)(ew, &back_ev));
            CUgraphExec gxe = NULL;
            R("gq.event_graph.instantiate", F(cuGraphInstantiateWithFlags)(&gxe, gev, 0));
            R("gq.event_graph.launch", F(cuGraphLaunch)(gxe, 0));
            R("gq.event_graph.sync", F(cuCtxSynchronize)());
            R("gq.event_graph.query", F(cuEventQuery)(ev1));
            F(cuGraphExecDestroy)(gxe);
            F(cuGraphDestroy)(gev);
            F(cuEventDestroy)(ev1);
        }
        // Kernel nodes read back: parameters and attributes.
        {
            CUgraph gk = NULL;
            F(cuGraphCreate)(&gk, 0);
            void *kargs[] = {&a, &dx, &dy, &n};
            CUDA_KERNEL_NODE_PARAMS kp;
            memset(&kp, 0, sizeof kp);
            kp.func = axpy, kp.gridDimX = N / 128, kp.gridDimY = kp.gridDimZ = 1;
            kp.blockDimX = 128, kp.blockDimY = kp.blockDimZ = 1, kp.kernelParams = kargs;
            CUgraphNode kn = NULL, en = NULL;
            R("kn.add", F(cuGraphAddKernelNode)(&kn, gk, NULL, 0, &kp));
            CUDA_KERNEL_NODE_PARAMS kb;
            memset(&kb, 0x5a, sizeof kb);
            R("kn.get_params", F(cuGraphKernelNodeGetParams)(kn, &kb));
            int same_x = kb.kernelParams && kb.kernelParams[1] && *(CUdeviceptr *)kb.kernelParams[1] == dx;
            OUT("kn.get_params.values", "%d %u %u %u %d %d %d", kb.func == axpy, kb.gridDimX, kb.blockDimX,
                kb.sharedMemBytes, kb.extra == NULL, kb.kern == NULL, same_x);
            CUlaunchAttributeValue av;
            memset(&av, 0x5a, sizeof av);
            R("kn.attr.cooperative", F(cuGraphKernelNodeGetAttribute)(kn, CU_LAUNCH_ATTRIBUTE_COOPERATIVE, &av));
            OUT("kn.attr.cooperative.value", "%d", av.cooperative);
            memset(&av, 0x5a, sizeof av);
            R("kn.attr.priority", F(cuGraphKernelNodeGetAttribute)(kn, CU_LAUNCH_ATTRIBUTE_PRIORITY, &av));
            OUT("kn.attr.priority.value", "%d", av.priority);
            memset(&av, 0x5a, sizeof av);
            R("kn.attr.cluster", F(cuGraphKernelNodeGetAttribute)(kn, CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION, &av));
            OUT("kn.attr.cluster.value", "%u %u %u", av.clusterDim.x, av.clusterDim.y, av.clusterDim.z);
            R("kn.attr.sync_policy", F(cuGraphKernelNodeGetAttribute)(kn, CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY, &av));
            memset(&av, 0, sizeof av);
            av.priority = -1;
            R("kn.attr.set_priority", F(cuGraphKernelNodeSetAttribute)(kn, CU_LAUNCH_ATTRIBUTE_PRIORITY, &av));
            memset(&av, 0, sizeof av);
            F(cuGraphKernelNodeGetAttribute)(kn, CU_LAUNCH_ATTRIBUTE_PRIORITY, &av);
            OUT("kn.attr.priority.after_set", "%d", av.priority);
            memset(&av, 0, sizeof av);
            av.cooperative = 1;
            R("kn.attr.set_cooperative", F(cuGraphKernelNodeSetAttribute)(kn, CU_LAUNCH_ATTRIBUTE_COOPERATIVE, &av));
            memset(&av, 0, sizeof av);
            av.clusterDim.x = 3, av.clusterDim.y = 1, av.clusterDim.z = 1;
            R("kn.attr.set_cluster3", F(cuGraphKernelNodeSetAttribute)(kn, CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION, &av));
            R("kn.set_params", F(cuGraphKernelNodeSetParams)(kn, &kp));
            memset(&av, 0, sizeof av);
            F(cuGraphKernelNodeGetAttribute)(kn, CU_LAUNCH_ATTRIBUTE_COOPERATIVE, &av);
            OUT("kn.attr.cooperative.after_set_params", "%d", av.cooperative);
            F(cuGraphAddEmptyNode)(&en, gk, NULL, 0);
            R("kn.get_params.empty_node", F(cuGraphKernelNodeGetParams)(en, &kb));
            CUgraphNode kn2 = NULL;
            F(cuGraphAddKernelNode)(&kn2, gk, NULL, 0, &kp);
            R("kn.copy_attributes", F(cuGraphKernelNodeCopyAttributes)(kn2, kn));
            memset(&av, 0, sizeof av);
            F(cuGraphKernelNodeGetAttribute)(kn2, CU_LAUNCH_ATTRIBUTE_PRIORITY, &av);
            OUT("kn.copy_attributes.priority", "%d", av.priority);
            F(cuGraphDestroy)(gk);
        }
        // Conditional nodes: the calls' results, and an if node whose handle takes its default
        // (1) at each launch, with a memset in its first body. (Kernels that set a condition run
        // in the graphConditionalNodes sample.)
        {
            typedef CUresult (*AddNodeFn)(CUgraphNode *, CUgraph, const CUgraphNode *, size_t, CUgraphNodeParams *);
            AddNodeFn add_node = (AddNodeFn)sym("cuGraphAddNode");
            CUgraph gc = NULL, go = NULL;
            F(cuGraphCreate)(&gc, 0);
            F(cuGraphCreate)(&go, 0);
            CUgraphConditionalHandle ch = 0, cx = 0;
            R("cond.handle", F(cuGraphConditionalHandleCreate)(&ch, gc, c0, 1, CU_GRAPH_COND_ASSIGN_DEFAULT));
            OUT("cond.handle.nonzero", "%d", ch != 0);
            R("cond.handle.flags2", F(cuGraphConditionalHandleCreate)(&cx, gc, c0, 0, 2));
            R("cond.handle.null_graph", F(cuGraphConditionalHandleCreate)(&cx, NULL, c0, 0, 0));
            struct {
                int type;
                unsigned size;
                const char *key;
            } cases[] = {{CU_GRAPH_COND_TYPE_WHILE, 2, "cond.while2"},   {CU_GRAPH_COND_TYPE_IF, 3, "cond.if3"},
                         {CU_GRAPH_COND_TYPE_IF, 0, "cond.if0"},        {CU_GRAPH_COND_TYPE_SWITCH, 0, "cond.switch0"},
                         {3, 1, "cond.type3"},                          {CU_GRAPH_COND_TYPE_SWITCH, 5, "cond.switch5"}};
            CUgraphNode cn = NULL;
            CUgraph if_body = NULL;
            for (unsigned i = 0; i < sizeof cases / sizeof cases[0]; i++) {
                CUgraphNodeParams cp = cond_params(ch, cases[i].type, cases[i].size, c0);
                cn = NULL;
                R(cases[i].key, add_node(&cn, gc, NULL, 0, &cp));
            }
            // A handle serves one conditional node: the switch node took ch.
            CUgraphConditionalHandle ch2 = 0;
            R("cond.handle2", F(cuGraphConditionalHandleCreate)(&ch2, gc, c0, 1, CU_GRAPH_COND_ASSIGN_DEFAULT));
            {
                CUgraphNodeParams cp = cond_params(ch, CU_GRAPH_COND_TYPE_IF, 1, c0);
                CUgraphNode reused = NULL;
                R("cond.handle_reused", add_node(&reused, gc, NULL, 0, &cp));
                cp = cond_params(ch2, CU_GRAPH_COND_TYPE_IF, 2, c0);
                cn = NULL;
                R("cond.if2", add_node(&cn, gc, NULL, 0, &cp));
                if (cn) if_body = cp.conditional.phGraph_out[0];
            }
            t = (CUgraphNodeType)99;
            if (cn) F(cuGraphNodeGetType)(cn, &t);
            OUT("cond.node_type", "%d", (int)t);
            {
                CUgraphNodeParams cp = cond_params(ch, CU_GRAPH_COND_TYPE_IF, 1, c0);
                R("cond.other_graph", add_node(&cn, go, NULL, 0, &cp));
            }
            CUgraph gcc = NULL;
            R("cond.clone", F(cuGraphClone)(&gcc, gc));
            CUgraphNode bm = NULL;
            CUDA_MEMSET_NODE_PARAMS cm;
            memset(&cm, 0, sizeof cm);
            cm.dst = dy, cm.value = 0x5a5a5a5a, cm.elementSize = 4, cm.width = N, cm.height = 1;
            if (if_body) R("cond.body_memset", F(cuGraphAddMemsetNode)(&bm, if_body, NULL, 0, &cm, c0));
            F(cuMemsetD32)(dy, 0, N);
            CUgraphExec gcx = NULL;
            R("cond.instantiate", F(cuGraphInstantiateWithFlags)(&gcx, gc, 0));
            R("cond.launch", F(cuGraphLaunch)(gcx, 0));
            R("cond.sync", F(cuCtxSynchronize)());
            unsigned first = 0;
            F(cuMemcpyDtoH)(&first, dy, 4);
            OUT("cond.body_ran", "%08x", first);
            // Capture into the program's graph: a memset captured into a new graph after its node.
            CUgraph gt = NULL;
            F(cuGraphCreate)(&gt, 0);
            CUgraphNode root = NULL;
            F(cuGraphAddEmptyNode)(&root, gt, NULL, 0);
            CUstream cs = NULL;
            F(cuStreamCreate)(&cs, CU_STREAM_NON_BLOCKING);
            R("cond.capture_to_graph", F(cuStreamBeginCaptureToGraph)(cs, gt, &root, NULL, 1, CU_STREAM_CAPTURE_MODE_GLOBAL));
            R("cond.capture_to_graph.memset", F(cuMemsetD32Async)(dy, 7, N, cs));
            CUgraph back_g = NULL;
            R("cond.capture_to_graph.end", F(cuStreamEndCapture)(cs, &back_g));
            size_t nn = 0;
            F(cuGraphGetNodes)(gt, NULL, &nn);
            OUT("cond.capture_to_graph.result", "%d %zu", back_g == gt, nn);
            R("cond.capture_to_graph.again", F(cuStreamBeginCaptureToGraph)(cs, gt, NULL, NULL, 0, CU_STREAM_CAPTURE_MODE_GLOBAL));
            R("cond.capture_to_graph.end_null", F(cuStreamEndCapture)(cs, NULL));
            F(cuStreamDestroy)(cs);
            F(cuGraphDestroy)(gt);
            if (gcx) F(cuGraphExecDestroy)(gcx);
            if (gcc) F(cuGraphDestroy)(gcc);
            F(cuGraphDestroy)(gc);
            F(cuGraphDestroy)(go);
        }
        // New parameters for the child graph node in the executable graph: a graph of the
        // same shape, a node that is not a child graph node, graphs of other shapes, NULL.
        {
            CUgraph cg1 = NULL, cg2 = NULL, cg3 = NULL;
            CUgraphNode x1 = NULL, x2 = NULL, x3 = NULL;
            CUDA_MEMSET_NODE_PARAMS cms = {0};
            cms.dst = dy, cms.value = 0x52, cms.elementSize = 4, cms.width = N, cms.height = 1;
            F(cuGraphCreate)(&cg1, 0);
            F(cuGraphAddMemsetNode)(&x1, cg1, NULL, 0, &cms, c0);
            F(cuGraphCreate)(&cg2, 0);
            F(cuGraphAddMemsetNode)(&x2, cg2, NULL, 0, &cms, c0);
            F(cuGraphAddMemsetNode)(&x3, cg2, &x2, 1, &cms, c0);
            F(cuGraphCreate)(&cg3, 0);
            F(cuGraphAddEmptyNode)(&x3, cg3, NULL, 0);
            R("gq.child_set.not_child", F(cuGraphExecChildGraphNodeSetParams)(gx, b, cg1));
            R("gq.child_set.two_nodes", F(cuGraphExecChildGraphNodeSetParams)(gx, d, cg2));
            R("gq.child_set.other_type", F(cuGraphExecChildGraphNodeSetParams)(gx, d, cg3));
            R("gq.child_set.null", F(cuGraphExecChildGraphNodeSetParams)(gx, d, NULL));
            R("gq.child_set", F(cuGraphExecChildGraphNodeSetParams)(gx, d, cg1));
            F(cuGraphDestroy)(cg1);
            F(cuGraphDestroy)(cg2);
            F(cuGraphDestroy)(cg3);
        }
        // Destroying a node of the graph: its edges go; the executable graph keeps it.
        R("gq.destroy_node", F(cuGraphDestroyNode)(c));
        k = 0;
        get_edges(gs, NULL, NULL, &k);
        OUT("gq.edges.after_destroy", "%zu", k);
        k = 0;
        F(cuGraphGetNodes)(gs, NULL, &k);
        OUT("gq.nodes.after_destroy", "%zu", k);
        F(cuMemsetD32)(dy, 0, N);
        R("gq.launch", F(cuGraphLaunch)(gx, 0));
        R("gq.sync", F(cuCtxSynchronize)());
        F(cuMemcpyDtoH)(h2, dx, N * 4);
        OUT("gq.memset_value", "%016llx", fnv(h2, N * 4));
        F(cuMemcpyDtoH)(h2, dy, N * 4);
        OUT("gq.child_value", "%016llx", fnv(h2, N * 4));
        F(cuGraphExecDestroy)(gx);
        F(cuGraphDestroy)(gcl);
        F(cuGraphDestroy)(gs);
        F(cuGraphDestroy)(gch);
    }

    // Memsets behind a kernel that spins until the host sets a flag: recorded in stream order
    // without waiting (the stream is still busy after them), applied after the kernels before
    // them; a pageable copy after them.
    {
        void *flagp = NULL;
        R("ordering.cuMemHostAlloc", F(cuMemHostAlloc)(&flagp, 4, 0));
        *(volatile unsigned *)flagp = 0;
        CUdeviceptr flagd = 0;
        F(cuMemHostGetDevicePointer)(&flagd, flagp, 0);
        CUfunction spin = NULL;
        R("cuModuleGetFunction.spin", F(cuModuleGetFunction)(&spin, m, "spin"));
        CUstream so = NULL;
        R("ordering.cuStreamCreate", F(cuStreamCreate)(&so, CU_STREAM_NON_BLOCKING));
        struct { CUdeviceptr p; unsigned base, n; } io = {dx, 3, N};
        size_t ios = sizeof io;
        void *iex[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &io, CU_LAUNCH_PARAM_BUFFER_SIZE, &ios, CU_LAUNCH_PARAM_END};
        R("ordering.iota", F(cuLaunchKernel)(iota, N / 128, 1, 1, 128, 1, 1, 0, so, NULL, iex));
        unsigned long long maxns = 10000000000ull;
        void *sargs[] = {&flagd, &maxns};
        R("ordering.spin", F(cuLaunchKernel)(spin, 1, 1, 1, 32, 1, 1, 0, so, sargs, NULL));
        R("ordering.cuMemsetD32Async", F(cuMemsetD32Async)(dx + 64, 0x01020304, 1000, so));
        R("ordering.cuMemsetD8Async", F(cuMemsetD8Async)(dx + 3, 0xee, 5, so));
        R("ordering.cuMemsetD16Async", F(cuMemsetD16Async)(dx + 8190, 0xabcd, 3, so));
        R("ordering.query_while_spinning", F(cuStreamQuery)(so));
        *(volatile unsigned *)flagp = 1;
        unsigned pg[8] = {11, 22, 33, 44, 55, 66, 77, 88};
        R("ordering.cuMemcpyHtoDAsync.pageable", F(cuMemcpyHtoDAsync)(dx + 4096, pg, sizeof pg, so));
        memset(pg, 0, sizeof pg);
        R("ordering.cuMemsetD32Async.after", F(cuMemsetD32Async)(dx + 4100, 5, 2, so));
        R("ordering.cuStreamSynchronize", F(cuStreamSynchronize)(so));
        F(cuMemcpyDtoH)(h2, dx, N * 4);
        OUT("ordering.result", "%016llx", fnv(h2, N * 4));
        R("ordering.cuStreamDestroy", F(cuStreamDestroy)(so));
        R("ordering.cuMemFreeHost", F(cuMemFreeHost)(flagp));
    }

    // Pitched copies (2D, 3D) between device, pageable and pinned host memory.
    {
        enum { W = 300, H = 7, SP = 512, DP = 384 };
        size_t slen = SP * (H + 3), dlen = DP * (H + 4);
        unsigned char *hs = malloc(slen), *hd = malloc(dlen);
        for (size_t i = 0; i < slen; i++) hs[i] = (unsigned char)((i * 131) ^ (i >> 3));
        CUdeviceptr ds = 0, dd = 0;
        size_t dpitch = 0;
        R("memcpy2d.cuMemAllocPitch", F(cuMemAllocPitch)(&ds, &dpitch, W + 16, H + 3, 4));
        OUT("memcpy2d.pitch", "%zu", dpitch);
        R("memcpy2d.cuMemAlloc", F(cuMemAlloc)(&dd, dlen));
        F(cuMemsetD8)(dd, 0x11, dlen);
        F(cuMemsetD8)(ds, 0x22, dpitch * (H + 3));
        CUDA_MEMCPY2D c2 = {0};
        c2.srcMemoryType = CU_MEMORYTYPE_HOST, c2.srcHost = hs, c2.srcPitch = SP, c2.srcXInBytes = 5, c2.srcY = 2;
        c2.dstMemoryType = CU_MEMORYTYPE_DEVICE, c2.dstDevice = dd, c2.dstPitch = DP, c2.dstXInBytes = 60, c2.dstY = 3;
        c2.WidthInBytes = W, c2.Height = H;
        R("memcpy2d.htod", F(cuMemcpy2D)(&c2));
        F(cuMemcpyDtoH)(hd, dd, dlen);
        OUT("memcpy2d.htod.result", "%016llx", fnv(hd, dlen));
        CUDA_MEMCPY2D c3 = {0};
        c3.srcMemoryType = CU_MEMORYTYPE_DEVICE, c3.srcDevice = dd, c3.srcPitch = DP, c3.srcXInBytes = 60, c3.srcY = 3;
        c3.dstMemoryType = CU_MEMORYTYPE_DEVICE, c3.dstDevice = ds, c3.dstPitch = dpitch;
        c3.WidthInBytes = W, c3.Height = H;
        R("memcpy2d.dtod", F(cuMemcpy2D)(&c3));
        unsigned char *hp = malloc(dpitch * (H + 3));
        F(cuMemcpyDtoH)(hp, ds, dpitch * (H + 3));
        OUT("memcpy2d.dtod.result", "%016llx", fnv(hp, dpitch * (H + 3)));
        memset(hd, 0x33, dlen);
        CUDA_MEMCPY2D c4 = {0};
        c4.srcMemoryType = CU_MEMORYTYPE_DEVICE, c4.srcDevice = ds, c4.srcPitch = dpitch;
        c4.dstMemoryType = CU_MEMORYTYPE_HOST, c4.dstHost = hd, c4.dstPitch = DP, c4.dstXInBytes = 10, c4.dstY = 1;
        c4.WidthInBytes = W, c4.Height = H;
        R("memcpy2d.dtoh", F(cuMemcpy2D)(&c4));
        OUT("memcpy2d.dtoh.result", "%016llx", fnv(hd, dlen));
        void *pin = NULL;
        F(cuMemHostAlloc)(&pin, dlen, 0);
        memset(pin, 0x44, dlen);
        CUDA_MEMCPY2D c5 = c4;
        c5.dstMemoryType = CU_MEMORYTYPE_UNIFIED, c5.dstDevice = (CUdeviceptr)pin, c5.dstHost = NULL;
        CUstream s5 = NULL;
        F(cuStreamCreate)(&s5, 0);
        R("memcpy2d.async_to_pinned", F(cuMemcpy2DAsync)(&c5, s5));
        R("memcpy2d.async_to_pinned.sync", F(cuStreamSynchronize)(s5));
        OUT("memcpy2d.async_to_pinned.result", "%016llx", fnv(pin, dlen));
        CUDA_MEMCPY2D bad = c3;
        bad.srcPitch = 100;
        R("memcpy2d.pitch_too_small", F(cuMemcpy2D)(&bad));
        // 3D: 3 slices of 5 rows of 40 bytes, between two pitched volumes.
        CUdeviceptr v1 = 0, v2 = 0;
        F(cuMemAlloc)(&v1, 64 * 9 * 4);
        F(cuMemAlloc)(&v2, 128 * 6 * 5);
        F(cuMemcpyHtoD)(v1, hs, 64 * 9 * 4);
        F(cuMemsetD8)(v2, 0x55, 128 * 6 * 5);
        CUDA_MEMCPY3D c6 = {0};
        c6.srcMemoryType = CU_MEMORYTYPE_DEVICE, c6.srcDevice = v1, c6.srcPitch = 64, c6.srcHeight = 9;
        c6.srcXInBytes = 3, c6.srcY = 2, c6.srcZ = 1;
        c6.dstMemoryType = CU_MEMORYTYPE_DEVICE, c6.dstDevice = v2, c6.dstPitch = 128, c6.dstHeight = 6;
        c6.dstXInBytes = 70, c6.dstY = 1, c6.dstZ = 2;
        c6.WidthInBytes = 40, c6.Height = 5, c6.Depth = 3;
        R("memcpy3d.dtod", F(cuMemcpy3D)(&c6));
        unsigned char *hv = malloc(128 * 6 * 5);
        F(cuMemcpyDtoH)(hv, v2, 128 * 6 * 5);
        OUT("memcpy3d.dtod.result", "%016llx", fnv(hv, 128 * 6 * 5));
        CUDA_MEMCPY3D c7 = c6;
        c7.dstMemoryType = CU_MEMORYTYPE_HOST, c7.dstHost = hv, c7.dstDevice = 0;
        memset(hv, 0x66, 128 * 6 * 5);
        R("memcpy3d.async_to_host", F(cuMemcpy3DAsync)(&c7, s5));
        F(cuStreamSynchronize)(s5);
        OUT("memcpy3d.async_to_host.result", "%016llx", fnv(hv, 128 * 6 * 5));
        F(cuStreamDestroy)(s5);
        F(cuMemFreeHost)(pin);
        F(cuMemFree)(v1), F(cuMemFree)(v2), F(cuMemFree)(ds), F(cuMemFree)(dd);
        free(hs), free(hd), free(hp), free(hv);
    }

    // Interprocess handles, in one process (another process opens them in the driver tests).
    {
        CUdeviceptr ip = 0, ipo = 0, im = 0, ipa = 0;
        void *ih = NULL;
        CUipcMemHandle h1, h2, hz;
        CUipcEventHandle eh1, eh2, ehz;
        memset(&h1, 0, sizeof h1);
        memset(&h2, 0, sizeof h2);
        memset(&hz, 0, sizeof hz);
        memset(&eh1, 0, sizeof eh1);
        memset(&eh2, 0, sizeof eh2);
        memset(&ehz, 0, sizeof ehz);
        R("ipc.cuMemAlloc", F(cuMemAlloc)(&ip, 1 << 20));
        R("ipc.cuIpcGetMemHandle", F(cuIpcGetMemHandle)(&h1, ip));
        R("ipc.cuIpcGetMemHandle.again", F(cuIpcGetMemHandle)(&h2, ip));
        OUT("ipc.same_handle", "%d", !memcmp(&h1, &h2, sizeof h1));
        R("ipc.cuIpcGetMemHandle.inside", F(cuIpcGetMemHandle)(&h2, ip + 256));
        OUT("ipc.inside_same_handle", "%d", !memcmp(&h1, &h2, sizeof h1));
        R("ipc.cuIpcGetMemHandle.null_ptr", F(cuIpcGetMemHandle)(&h2, 0));
        R("ipc.cuIpcGetMemHandle.null_out", F(cuIpcGetMemHandle)(NULL, ip));
        unsigned cap = 9;
        R("ipc.cuPointerGetAttribute.legacy_capable", F(cuPointerGetAttribute)(&cap, CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE, ip));
        OUT("ipc.legacy_capable", "%u", cap);
        R("ipc.cuMemAllocHost", F(cuMemAllocHost)(&ih, 4096));
        R("ipc.cuIpcGetMemHandle.host", F(cuIpcGetMemHandle)(&h2, (CUdeviceptr)ih));
        R("ipc.cuMemAllocManaged", F(cuMemAllocManaged)(&im, 4096, CU_MEM_ATTACH_GLOBAL));
        R("ipc.cuIpcGetMemHandle.managed", F(cuIpcGetMemHandle)(&h2, im));
        cap = 9;
        R("ipc.cuPointerGetAttribute.legacy_capable.managed", F(cuPointerGetAttribute)(&cap, CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE, im));
        OUT("ipc.legacy_capable.managed", "%u", cap);
        R("ipc.cuMemAllocAsync", F(cuMemAllocAsync)(&ipa, 4096, 0));
        R("ipc.cuStreamSynchronize", F(cuStreamSynchronize)(0));
        R("ipc.cuIpcGetMemHandle.pool", F(cuIpcGetMemHandle)(&h2, ipa));
        R("ipc.cuIpcOpenMemHandle.own", F(cuIpcOpenMemHandle)(&ipo, h1, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS));
        R("ipc.cuIpcOpenMemHandle.zero", F(cuIpcOpenMemHandle)(&ipo, hz, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS));
        memset(&hz, 0x5a, sizeof hz);
        R("ipc.cuIpcOpenMemHandle.garbage", F(cuIpcOpenMemHandle)(&ipo, hz, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS));
        R("ipc.cuIpcOpenMemHandle.null_out", F(cuIpcOpenMemHandle)(NULL, h1, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS));
        R("ipc.cuIpcCloseMemHandle.not_opened", F(cuIpcCloseMemHandle)(ip));
        R("ipc.cuIpcCloseMemHandle.null", F(cuIpcCloseMemHandle)(0));
        CUevent ie1 = NULL, ie2 = NULL, ie3 = NULL, ieo = NULL;
        R("ipc.cuEventCreate.interprocess_timing", F(cuEventCreate)(&ie1, CU_EVENT_INTERPROCESS));
        R("ipc.cuEventCreate.interprocess", F(cuEventCreate)(&ie2, CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING));
        R("ipc.cuEventCreate.plain", F(cuEventCreate)(&ie3, CU_EVENT_DISABLE_TIMING));
        R("ipc.cuIpcGetEventHandle.plain", F(cuIpcGetEventHandle)(&eh1, ie3));
        R("ipc.cuIpcGetEventHandle.null_out", F(cuIpcGetEventHandle)(NULL, ie2));
        R("ipc.cuIpcGetEventHandle", F(cuIpcGetEventHandle)(&eh1, ie2));
        R("ipc.cuIpcGetEventHandle.again", F(cuIpcGetEventHandle)(&eh2, ie2));
        OUT("ipc.same_event_handle", "%d", !memcmp(&eh1, &eh2, sizeof eh1));
        R("ipc.cuIpcOpenEventHandle.own", F(cuIpcOpenEventHandle)(&ieo, eh1));
        R("ipc.cuIpcOpenEventHandle.zero", F(cuIpcOpenEventHandle)(&ieo, ehz));
        R("ipc.cuEventQuery.unrecorded", F(cuEventQuery)(ie2));
        R("ipc.cuEventRecord", F(cuEventRecord)(ie2, 0));
        R("ipc.cuEventSynchronize", F(cuEventSynchronize)(ie2));
        R("ipc.cuEventQuery", F(cuEventQuery)(ie2));
        float ims = 0;
        R("ipc.cuEventElapsedTime", F(cuEventElapsedTime)(&ims, ie2, ie2));
        if (ie2) R("ipc.cuEventDestroy", F(cuEventDestroy)(ie2));
        if (ie3) F(cuEventDestroy)(ie3);
        R("ipc.cuMemFree", F(cuMemFree)(ip));
        if (ipa) F(cuMemFree)(ipa);
        if (im) F(cuMemFree)(im);
        if (ih) F(cuMemFreeHost)(ih);
    }

    // Identity and configuration queries of contexts, streams, modules and devices.
    {
        CUcontext qc = NULL, qc2 = NULL, qcs = NULL, qcs2 = NULL;
        CUstream qs1 = NULL, qs2 = NULL;
        unsigned long long id1 = 0, id2 = 0, idl = 0, cid = 0, cid2 = 0;
        R("query.cuCtxGetCurrent", F(cuCtxGetCurrent)(&qc));
        R("query.cuStreamCreate", F(cuStreamCreate)(&qs1, CU_STREAM_NON_BLOCKING));
        R("query.cuStreamCreate.2", F(cuStreamCreate)(&qs2, 0));
        R("query.cuStreamGetId", F(cuStreamGetId)(qs1, &id1));
        R("query.cuStreamGetId.2", F(cuStreamGetId)(qs2, &id2));
        R("query.cuStreamGetId.legacy", F(cuStreamGetId)(CU_STREAM_LEGACY, &idl));
        R("query.cuStreamGetId.null_out", F(cuStreamGetId)(qs1, NULL));
        OUT("query.stream_ids", "%d %d %d", id1 != id2, id2 > id1, idl != id1 && idl != id2);
        unsigned long long id1b = 0;
        F(cuStreamGetId)(qs1, &id1b);
        OUT("query.stream_id_stable", "%d", id1b == id1);
        R("query.cuCtxGetId", F(cuCtxGetId)(qc, &cid));
        R("query.cuCtxGetId.current", F(cuCtxGetId)(NULL, &cid2));
        OUT("query.ctx_id", "%d %d", cid != 0, cid == cid2);
        R("query.cuCtxGetId.null_out", F(cuCtxGetId)(qc, NULL));
        CUdevice qd = -1, qd2 = -1;
        R("query.cuStreamGetDevice", F(cuStreamGetDevice)(qs1, &qd));
        OUT("query.stream_device", "%d", qd);
        R("query.cuStreamGetDevice.null_out", F(cuStreamGetDevice)(qs1, NULL));
        R("query.cuCtxGetDevice_v2", F(cuCtxGetDevice_v2)(&qd2, qc));
        OUT("query.ctx_device", "%d", qd2);
        qd2 = -1;
        R("query.cuCtxGetDevice_v2.current", F(cuCtxGetDevice_v2)(&qd2, NULL));
        OUT("query.ctx_device.current", "%d", qd2);
        R("query.cuCtxSynchronize_v2", F(cuCtxSynchronize_v2)(qc));
        R("query.cuCtxSynchronize_v2.current", F(cuCtxSynchronize_v2)(NULL));
        void *green = (void *)1;
        R("query.cuStreamGetCtx_v2", F(cuStreamGetCtx_v2)(qs1, &qcs, (CUgreenCtx *)&green));
        OUT("query.stream_ctx_v2", "%d %d", qcs == qc, green == NULL);
        R("query.cuStreamGetCtx_v2.legacy", F(cuStreamGetCtx_v2)(CU_STREAM_LEGACY, &qcs2, (CUgreenCtx *)&green));
        OUT("query.stream_ctx_v2.legacy", "%d", qcs2 == qc);
        // cuCtxRecordEvent / cuCtxWaitEvent: the event covers the context's work so far.
        CUevent qe = NULL;
        R("query.cuEventCreate", F(cuEventCreate)(&qe, CU_EVENT_DISABLE_TIMING));
        R("query.cuCtxRecordEvent", F(cuCtxRecordEvent)(qc, qe));
        R("query.cuEventSynchronize", F(cuEventSynchronize)(qe));
        R("query.cuEventQuery", F(cuEventQuery)(qe));
        R("query.cuCtxWaitEvent", F(cuCtxWaitEvent)(qc, qe));
        R("query.cuCtxRecordEvent.null_ctx", F(cuCtxRecordEvent)(NULL, qe));
        R("query.cuCtxRecordEvent.null_event", F(cuCtxRecordEvent)(qc, NULL));
        R("query.cuCtxWaitEvent.null_event", F(cuCtxWaitEvent)(qc, NULL));
        R("query.cuCtxSynchronize", F(cuCtxSynchronize)());
        // Cache and shared-memory configuration of the context.
        CUfunc_cache cc = (CUfunc_cache)-1;
        R("query.cuCtxGetCacheConfig", F(cuCtxGetCacheConfig)(&cc));
        OUT("query.cache_config", "%d", (int)cc);
        R("query.cuCtxSetCacheConfig", F(cuCtxSetCacheConfig)(CU_FUNC_CACHE_PREFER_SHARED));
        cc = (CUfunc_cache)-1;
        F(cuCtxGetCacheConfig)(&cc);
        OUT("query.cache_config.after", "%d", (int)cc);
        R("query.cuCtxSetCacheConfig.bad", F(cuCtxSetCacheConfig)((CUfunc_cache)9));
        F(cuCtxSetCacheConfig)(CU_FUNC_CACHE_PREFER_NONE);
        R("query.cuCtxGetCacheConfig.null", F(cuCtxGetCacheConfig)(NULL));
        CUsharedconfig sc = (CUsharedconfig)-1;
        R("query.cuCtxGetSharedMemConfig", F(cuCtxGetSharedMemConfig)(&sc));
        OUT("query.shared_config", "%d", (int)sc);
        R("query.cuCtxSetSharedMemConfig", F(cuCtxSetSharedMemConfig)(CU_SHARED_MEM_CONFIG_EIGHT_BYTE_BANK_SIZE));
        sc = (CUsharedconfig)-1;
        F(cuCtxGetSharedMemConfig)(&sc);
        OUT("query.shared_config.after", "%d", (int)sc);
        R("query.cuCtxSetSharedMemConfig.bad", F(cuCtxSetSharedMemConfig)((CUsharedconfig)7));
        F(cuCtxSetSharedMemConfig)(CU_SHARED_MEM_CONFIG_DEFAULT_BANK_SIZE);
        unsigned cf = 0;
        F(cuCtxGetFlags)(&cf);
        R("query.cuCtxSetFlags", F(cuCtxSetFlags)(CU_CTX_SCHED_YIELD));
        unsigned cf2 = 0;
        F(cuCtxGetFlags)(&cf2);
        OUT("query.ctx_flags", "%u %u", cf, cf2);
        R("query.cuCtxSetFlags.bad", F(cuCtxSetFlags)(0x1000000));
        R("query.cuCtxSetFlags.map_host", F(cuCtxSetFlags)(CU_CTX_MAP_HOST));
        F(cuCtxSetFlags)(cf);
        R("query.cuCtxResetPersistingL2Cache", F(cuCtxResetPersistingL2Cache)());
        {
            CUcontext fc4 = NULL, pc = NULL, popped = NULL;
            unsigned f4 = 0, fp = 0;
            R("query.cuCtxCreate.blocking_sync", F(cuCtxCreate)(&fc4, NULL, CU_CTX_SCHED_BLOCKING_SYNC, dev));
            F(cuCtxGetFlags)(&f4);
            OUT("query.ctx_flags.blocking_sync", "%u", f4);
            F(cuCtxPopCurrent)(&popped);
            if (fc4) F(cuCtxDestroy)(fc4);
            R("query.cuDevicePrimaryCtxRetain", F(cuDevicePrimaryCtxRetain)(&pc, dev));
            F(cuCtxPushCurrent)(pc);
            F(cuCtxGetFlags)(&fp);
            OUT("query.ctx_flags.primary", "%u", fp);
            F(cuCtxPopCurrent)(&popped);
            F(cuDevicePrimaryCtxRelease)(dev);
        }
        // Modules: the functions, the loading mode.
        unsigned fc = 0;
        R("query.cuModuleGetFunctionCount", F(cuModuleGetFunctionCount)(&fc, m));
        OUT("query.function_count", "%u", fc);
        CUfunction fl[64] = {0};
        R("query.cuModuleEnumerateFunctions", F(cuModuleEnumerateFunctions)(fl, fc < 64 ? fc : 64, m));
        int found_axpy = 0, named = 0;
        for (unsigned i = 0; i < fc && i < 64; i++) {
            const char *fnm = NULL;
            if (fl[i] && F(cuFuncGetName)(&fnm, fl[i]) == 0 && fnm) named++;
            if (fl[i] == axpy) found_axpy = 1;
        }
        OUT("query.enumerated", "%d %d", named, found_axpy);
        R("query.cuModuleEnumerateFunctions.too_many", F(cuModuleEnumerateFunctions)(fl, fc + 1, m));
        R("query.cuModuleEnumerateFunctions.null", F(cuModuleEnumerateFunctions)(NULL, fc, m));
        CUmoduleLoadingMode lm = (CUmoduleLoadingMode)0;
        R("query.cuModuleGetLoadingMode", F(cuModuleGetLoadingMode)(&lm));
        OUT("query.loading_mode", "%d", (int)lm);
        CUfunctionLoadingState ls = (CUfunctionLoadingState)9;
        R("query.cuFuncIsLoaded", F(cuFuncIsLoaded)(&ls, axpy));
        OUT("query.func_loaded", "%d", (int)ls);
        R("query.cuFuncLoad", F(cuFuncLoad)(axpy));
        R("query.cuFuncLoad.null", F(cuFuncLoad)(NULL));
        // Occupancy: dynamic shared memory left for N blocks per SM.
        size_t dsm = 0;
        R("query.cuOccupancyAvailableDynamicSMemPerBlock", F(cuOccupancyAvailableDynamicSMemPerBlock)(&dsm, bsum, 1, 256));
        OUT("query.avail_dyn_smem.1x256", "%zu", dsm);
        dsm = 0;
        F(cuOccupancyAvailableDynamicSMemPerBlock)(&dsm, bsum, 4, 256);
        OUT("query.avail_dyn_smem.4x256", "%zu", dsm);
        dsm = 0;
        F(cuOccupancyAvailableDynamicSMemPerBlock)(&dsm, axpy, 8, 128);
        OUT("query.avail_dyn_smem.axpy.8x128", "%zu", dsm);
        dsm = 0;
        R("query.cuOccupancyAvailableDynamicSMemPerBlock.too_many", F(cuOccupancyAvailableDynamicSMemPerBlock)(&dsm, axpy, 64, 1024));
        OUT("query.avail_dyn_smem.too_many", "%zu", dsm);
        R("query.cuOccupancyAvailableDynamicSMemPerBlock.big_block", F(cuOccupancyAvailableDynamicSMemPerBlock)(&dsm, axpy, 1, 2048));
        // Devices.
        CUdevice bd = -1;
        R("query.cuDeviceGetByPCIBusId", F(cuDeviceGetByPCIBusId)(&bd, bus));
        OUT("query.device_by_bus", "%d", bd);
        char lower[64] = {0};
        for (int i = 0; bus[i] && i < 63; i++) lower[i] = (char)tolower((unsigned char)bus[i]);
        bd = -1;
        R("query.cuDeviceGetByPCIBusId.lower", F(cuDeviceGetByPCIBusId)(&bd, lower));
        OUT("query.device_by_bus.lower", "%d", bd);
        R("query.cuDeviceGetByPCIBusId.short", F(cuDeviceGetByPCIBusId)(&bd, bus + 5));
        R("query.cuDeviceGetByPCIBusId.bad", F(cuDeviceGetByPCIBusId)(&bd, "ffff:ff:1f.7"));
        R("query.cuDeviceGetByPCIBusId.garbage", F(cuDeviceGetByPCIBusId)(&bd, "nope"));
        size_t lw = 0;
        R("query.cuDeviceGetTexture1DLinearMaxWidth", F(cuDeviceGetTexture1DLinearMaxWidth)(&lw, CU_AD_FORMAT_FLOAT, 4, dev));
        OUT("query.tex1d_linear_max.float4", "%zu", lw);
        lw = 0;
        F(cuDeviceGetTexture1DLinearMaxWidth)(&lw, CU_AD_FORMAT_UNSIGNED_INT8, 1, dev);
        OUT("query.tex1d_linear_max.u8x1", "%zu", lw);
        const struct { CUarray_format f; unsigned c; const char *k; } tf[] = {
            {CU_AD_FORMAT_UNSIGNED_INT16, 1, "u16x1"}, {CU_AD_FORMAT_UNSIGNED_INT16, 2, "u16x2"},
            {CU_AD_FORMAT_HALF, 4, "halfx4"}, {CU_AD_FORMAT_FLOAT, 2, "floatx2"},
            {CU_AD_FORMAT_SIGNED_INT32, 1, "s32x1"}, {CU_AD_FORMAT_UNSIGNED_INT8, 4, "u8x4"}};
        for (int i = 0; i < 6; i++) {
            lw = 0;
            int r = F(cuDeviceGetTexture1DLinearMaxWidth)(&lw, tf[i].f, tf[i].c, dev);
            snprintf(key, sizeof key, "query.tex1d_linear_max.%s", tf[i].k);
            OUT(key, "%d %zu", r, lw);
        }
        R("query.cuDeviceGetTexture1DLinearMaxWidth.bad", F(cuDeviceGetTexture1DLinearMaxWidth)(&lw, CU_AD_FORMAT_FLOAT, 3, dev));
        CUdevprop dp;
        memset(&dp, 0, sizeof dp);
        R("query.cuDeviceGetProperties", F(cuDeviceGetProperties)(&dp, dev));
        OUT("query.devprop", "%d %d %d %d %d %d %d %d %d %d %d %d %d %d", dp.maxThreadsPerBlock,
            dp.maxThreadsDim[0], dp.maxThreadsDim[1], dp.maxThreadsDim[2], dp.maxGridSize[0],
            dp.maxGridSize[1], dp.maxGridSize[2], dp.sharedMemPerBlock, dp.totalConstantMemory,
            dp.SIMDWidth, dp.memPitch, dp.regsPerBlock, dp.clockRate, dp.textureAlign);
        // Pointer attributes that can be set.
        CUdeviceptr pd = 0;
        F(cuMemAlloc)(&pd, 4096);
        unsigned one = 1, got = 9;
        R("query.cuPointerSetAttribute.sync_memops", F(cuPointerSetAttribute)(&one, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, pd));
        F(cuPointerGetAttribute)(&got, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, pd);
        OUT("query.sync_memops", "%u", got);
        R("query.cuPointerSetAttribute.other", F(cuPointerSetAttribute)(&one, CU_POINTER_ATTRIBUTE_IS_MANAGED, pd));
        R("query.cuPointerSetAttribute.unknown_ptr", F(cuPointerSetAttribute)(&one, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, 16));
        // 2-D memsets.
        R("query.cuMemsetD8.clear", F(cuMemsetD8)(pd, 0, 4096));
        R("query.cuMemsetD2D8", F(cuMemsetD2D8)(pd, 512, 0x11, 100, 4));
        R("query.cuMemsetD2D16", F(cuMemsetD2D16)(pd + 2048, 512, 0x2233, 50, 2));
        R("query.cuMemsetD2D32Async", F(cuMemsetD2D32Async)(pd + 3072, 256, 0x44556677u, 30, 3, qs1));
        R("query.cuStreamSynchronize", F(cuStreamSynchronize)(qs1));
        unsigned char md[4096];
        memset(md, 0, sizeof md);
        F(cuMemcpyDtoH)(md, pd, sizeof md);
        OUT("query.memset2d", "%016llx", fnv(md, sizeof md));
        R("query.cuMemsetD2D8.pitch_too_small", F(cuMemsetD2D8)(pd, 50, 0x11, 100, 4));
        R("query.cuMemsetD2D32.misaligned", F(cuMemsetD2D32)(pd + 2, 256, 1, 4, 2));
        R("query.cuMemsetD2D8Async.zero", F(cuMemsetD2D8Async)(pd, 512, 0x11, 0, 4, qs1));
        // Stream attributes.
        CUstreamAttrValue av;
        memset(&av, 0x5a, sizeof av);
        R("query.cuStreamGetAttribute.priority", F(cuStreamGetAttribute)(qs1, CU_LAUNCH_ATTRIBUTE_PRIORITY, &av));
        OUT("query.stream_attr.priority", "%d", av.priority);
        memset(&av, 0x5a, sizeof av);
        R("query.cuStreamGetAttribute.sync_policy", F(cuStreamGetAttribute)(qs1, CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY, &av));
        OUT("query.stream_attr.sync_policy", "%d", (int)av.syncPolicy);
        memset(&av, 0x5a, sizeof av);
        R("query.cuStreamGetAttribute.access_policy", F(cuStreamGetAttribute)(qs1, CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW, &av));
        OUT("query.stream_attr.access_policy", "%llx %zu %f %d %d", (unsigned long long)av.accessPolicyWindow.base_ptr, av.accessPolicyWindow.num_bytes, av.accessPolicyWindow.hitRatio, (int)av.accessPolicyWindow.hitProp, (int)av.accessPolicyWindow.missProp);
        memset(&av, 0, sizeof av);
        av.syncPolicy = CU_SYNC_POLICY_BLOCKING_SYNC;
        R("query.cuStreamSetAttribute.sync_policy", F(cuStreamSetAttribute)(qs1, CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY, &av));
        memset(&av, 0x5a, sizeof av);
        F(cuStreamGetAttribute)(qs1, CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY, &av);
        OUT("query.stream_attr.sync_policy.after", "%d", (int)av.syncPolicy);
        memset(&av, 0, sizeof av);
        av.accessPolicyWindow.base_ptr = (void *)pd;
        av.accessPolicyWindow.num_bytes = 4096;
        av.accessPolicyWindow.hitRatio = 0.5f;
        av.accessPolicyWindow.hitProp = CU_ACCESS_PROPERTY_PERSISTING;
        av.accessPolicyWindow.missProp = CU_ACCESS_PROPERTY_STREAMING;
        R("query.cuStreamSetAttribute.access_policy", F(cuStreamSetAttribute)(qs1, CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW, &av));
        memset(&av, 0x5a, sizeof av);
        F(cuStreamGetAttribute)(qs1, CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW, &av);
        OUT("query.stream_attr.access_policy.after", "%d %zu %f %d %d", av.accessPolicyWindow.base_ptr == (void *)pd, av.accessPolicyWindow.num_bytes, av.accessPolicyWindow.hitRatio, (int)av.accessPolicyWindow.hitProp, (int)av.accessPolicyWindow.missProp);
        memset(&av, 0, sizeof av);
        av.priority = -1;
        R("query.cuStreamSetAttribute.priority", F(cuStreamSetAttribute)(qs1, CU_LAUNCH_ATTRIBUTE_PRIORITY, &av));
        memset(&av, 0x5a, sizeof av);
        F(cuStreamGetAttribute)(qs1, CU_LAUNCH_ATTRIBUTE_PRIORITY, &av);
        OUT("query.stream_attr.priority.after", "%d", av.priority);
        R("query.cuStreamCopyAttributes", F(cuStreamCopyAttributes)(qs2, qs1));
        memset(&av, 0x5a, sizeof av);
        F(cuStreamGetAttribute)(qs2, CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY, &av);
        OUT("query.stream_attr.copied_sync_policy", "%d", (int)av.syncPolicy);
        R("query.cuStreamGetAttribute.bad", F(cuStreamGetAttribute)(qs1, (CUstreamAttrID)77, &av));
        F(cuMemFree)(pd);
        if (qe) F(cuEventDestroy)(qe);
        if (qs1) F(cuStreamDestroy)(qs1);
        if (qs2) F(cuStreamDestroy)(qs2);
        (void)qc2;
    }

    // Copies to and from one-dimensional arrays.
    {
        CUDA_ARRAY_DESCRIPTOR ad = {256, 0, CU_AD_FORMAT_FLOAT, 1};
        CUDA_ARRAY_DESCRIPTOR ad2 = {16, 16, CU_AD_FORMAT_FLOAT, 1};
        CUarray aa = NULL, ab = NULL, a2 = NULL;
        R("acopy.cuArrayCreate", F(cuArrayCreate)(&aa, &ad));
        R("acopy.cuArrayCreate.b", F(cuArrayCreate)(&ab, &ad));
        R("acopy.cuArrayCreate.2d", F(cuArrayCreate)(&a2, &ad2));
        unsigned asrc[64], aback[64];
        for (int i = 0; i < 64; i++) asrc[i] = 0x1000 + i;
        CUdeviceptr ad_mem = 0;
        F(cuMemAlloc)(&ad_mem, 1024);
        R("acopy.cuMemcpyHtoA", F(cuMemcpyHtoA)(aa, 128, asrc, 256));
        memset(aback, 0, sizeof aback);
        R("acopy.cuMemcpyAtoH", F(cuMemcpyAtoH)(aback, aa, 128, 256));
        OUT("acopy.htoa_atoh", "%016llx", fnv(aback, sizeof aback));
        R("acopy.cuMemcpyAtoA", F(cuMemcpyAtoA)(ab, 0, aa, 128, 256));
        R("acopy.cuMemcpyAtoD", F(cuMemcpyAtoD)(ad_mem, ab, 0, 256));
        memset(aback, 0, sizeof aback);
        F(cuMemcpyDtoH)(aback, ad_mem, 256);
        OUT("acopy.atoa_atod", "%016llx", fnv(aback, sizeof aback));
        R("acopy.cuMemcpyDtoA", F(cuMemcpyDtoA)(aa, 512, ad_mem, 256));
        memset(aback, 0, sizeof aback);
        R("acopy.cuMemcpyAtoHAsync", F(cuMemcpyAtoHAsync)(aback, aa, 512, 256, 0));
        R("acopy.cuStreamSynchronize", F(cuStreamSynchronize)(0));
        OUT("acopy.dtoa", "%016llx", fnv(aback, sizeof aback));
        R("acopy.cuMemcpyHtoAAsync", F(cuMemcpyHtoAAsync)(ab, 768, asrc, 256, 0));
        R("acopy.cuStreamSynchronize.2", F(cuStreamSynchronize)(0));
        R("acopy.past_end", F(cuMemcpyHtoA)(aa, 900, asrc, 256));
        R("acopy.two_d", F(cuMemcpyHtoA)(a2, 32, asrc, 128));
        unsigned whole[256];
        memset(whole, 0, sizeof whole);
        CUDA_MEMCPY2D dn;
        memset(&dn, 0, sizeof dn);
        dn.srcMemoryType = CU_MEMORYTYPE_ARRAY;
        dn.srcArray = a2;
        dn.dstMemoryType = CU_MEMORYTYPE_HOST;
        dn.dstHost = whole;
        dn.dstPitch = 64;
        dn.WidthInBytes = 64;
        dn.Height = 16;
        R("acopy.two_d.cuMemcpy2D", F(cuMemcpy2D)(&dn));
        OUT("acopy.two_d_layout", "%016llx", fnv(whole, sizeof whole));
        memset(aback, 0, sizeof aback);
        R("acopy.cuMemcpyAtoH.two_d", F(cuMemcpyAtoH)(aback, a2, 32, 128));
        OUT("acopy.two_d_atoh", "%016llx", fnv(aback, 128));
        R("acopy.two_d_past_end", F(cuMemcpyHtoA)(a2, 1000, asrc, 64));
        R("acopy.two_d_second_row", F(cuMemcpyHtoA)(a2, 64, asrc, 64));
        R("acopy.two_d_first_row", F(cuMemcpyHtoA)(a2, 0, asrc, 64));
        memset(whole, 0, sizeof whole);
        F(cuMemcpy2D)(&dn);
        OUT("acopy.two_d_first_row_layout", "%016llx", fnv(whole, sizeof whole));
        R("acopy.cuMemcpyDtoA.two_d", F(cuMemcpyDtoA)(a2, 60, ad_mem, 16));
        R("acopy.zero_bytes", F(cuMemcpyHtoA)(aa, 0, asrc, 0));
        if (aa) F(cuArrayDestroy)(aa);
        if (ab) F(cuArrayDestroy)(ab);
        if (a2) F(cuArrayDestroy)(a2);
        F(cuMemFree)(ad_mem);
    }

    // The CUDA 12 loading API.
    {
        size_t len = 0;
        void *img = read_file(cubin_path, &len);
        CUlibrary lib = NULL;
        R("library.cuLibraryLoadData", img ? F(cuLibraryLoadData)(&lib, img, NULL, NULL, 0, NULL, NULL, 0) : -1);
        free(img);
        unsigned kc = 0;
        R("library.cuLibraryGetKernelCount", F(cuLibraryGetKernelCount)(&kc, lib));
        OUT("library.kernel_count", "%u", kc);
        CUkernel kio = NULL, kmiss = NULL;
        R("library.cuLibraryGetKernel", F(cuLibraryGetKernel)(&kio, lib, "iota"));
        R("library.cuLibraryGetKernel.missing", F(cuLibraryGetKernel)(&kmiss, lib, "nope"));
        const char *kn = NULL;
        R("library.cuKernelGetName", F(cuKernelGetName)(&kn, kio));
        OUT("library.kernel_name", "%s", kn ? kn : "(null)");
        int kv = -1;
        R("library.cuKernelGetAttribute", F(cuKernelGetAttribute)(&kv, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, kio, dev));
        OUT("library.max_threads", "%d", kv);
        size_t po = 0, ps = 0;
        R("library.cuKernelGetParamInfo", F(cuKernelGetParamInfo)(kio, 2, &po, &ps));
        OUT("library.param2", "%zu %zu", po, ps);
        struct { CUdeviceptr p; unsigned base, n; } lk = {dx, 11, N};
        size_t lks = sizeof lk;
        void *lex[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &lk, CU_LAUNCH_PARAM_BUFFER_SIZE, &lks, CU_LAUNCH_PARAM_END};
        R("library.launch_kernel", F(cuLaunchKernel)((CUfunction)kio, N / 128, 1, 1, 128, 1, 1, 0, 0, NULL, lex));
        F(cuMemcpyDtoH)(h2, dx, N * 4);
        OUT("library.iota", "%016llx", fnv(h2, N * 4));
        CUfunction kf = NULL, mf = NULL;
        R("library.cuKernelGetFunction", F(cuKernelGetFunction)(&kf, kio));
        CUmodule lm = NULL;
        R("library.cuLibraryGetModule", F(cuLibraryGetModule)(&lm, lib));
        F(cuModuleGetFunction)(&mf, lm, "iota");
        OUT("library.same_function", "%d", kf != NULL && kf == mf);
        CUdeviceptr lg = 0;
        size_t lgs = 0;
        R("library.cuLibraryGetGlobal", F(cuLibraryGetGlobal)(&lg, &lgs, lib, "g_table"));
        OUT("library.global_size", "%zu", lgs);
        CUdeviceptr lmg = 0, lmx = 0;
        size_t lmgs = 0, lmxs = 0;
        R("library.cuLibraryGetManaged", F(cuLibraryGetManaged)(&lmg, &lmgs, lib, "g_managed"));
        OUT("library.managed_size", "%zu", lmgs);
        OUT("library.managed_value", "%u", lmg ? *(volatile unsigned *)lmg : 0);
        R("library.cuLibraryGetManaged.plain", F(cuLibraryGetManaged)(&lmx, &lmxs, lib, "g_table"));
        R("library.cuLibraryGetManaged.missing", F(cuLibraryGetManaged)(&lmx, &lmxs, lib, "nope"));
        R("library.cuLibraryUnload", F(cuLibraryUnload)(lib));
    }

    // The JIT linker on the PTX.
    {
        size_t plen = 0;
        char *ptx = read_file(ptx_path, &plen);
        char elog[4096] = {0};
        CUjit_option lo[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
        void *lv[] = {elog, (void *)(uintptr_t)sizeof elog};
        CUlinkState ls = NULL;
        R("link.cuLinkCreate", F(cuLinkCreate)(2, lo, lv, &ls));
        R("link.cuLinkAddData.ptx", ptx ? F(cuLinkAddData)(ls, CU_JIT_INPUT_PTX, ptx, plen + 1, "k.ptx", 0, NULL, NULL) : -1);
        void *cub = NULL;
        size_t cubs = 0;
        R("link.cuLinkComplete", F(cuLinkComplete)(ls, &cub, &cubs));
        OUT("link.nonempty", "%d", cubs > 0);
        CUmodule lkm = NULL;
        R("link.cuModuleLoadData", cub ? F(cuModuleLoadData)(&lkm, cub) : -1);
        R("link.cuLinkDestroy", F(cuLinkDestroy)(ls));
        CUfunction lf = NULL;
        R("link.cuModuleGetFunction", lkm ? F(cuModuleGetFunction)(&lf, lkm, "iota") : -1);
        struct { CUdeviceptr p; unsigned base, n; } li = {dx, 21, N};
        size_t lis = sizeof li;
        void *liex[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &li, CU_LAUNCH_PARAM_BUFFER_SIZE, &lis, CU_LAUNCH_PARAM_END};
        R("link.launch", lf ? F(cuLaunchKernel)(lf, N / 128, 1, 1, 128, 1, 1, 0, 0, NULL, liex) : -1);
        F(cuMemcpyDtoH)(h2, dx, N * 4);
        OUT("link.iota", "%016llx", fnv(h2, N * 4));
        free(ptx);
    }

    // Texture objects over linear and pitch-2D memory.
    {
        enum { TN = 512, TW = 40, TH = 12, TP = 256 };
        // 2 * TN floats (4096 bytes) cover both the linear texture and the TH rows of TP bytes.
        float *tf = malloc(2 * TN * 4);
        for (int i = 0; i < 2 * TN; i++) tf[i] = (float)(i % 997) * 0.25f + 1.0f;
        CUdeviceptr tl = 0, t2 = 0;
        F(cuMemAlloc)(&tl, 2 * TN * 4);
        F(cuMemAlloc)(&t2, TH * TP);
        F(cuMemcpyHtoD)(tl, tf, 2 * TN * 4);
        F(cuMemcpyHtoD)(t2, tf, TH * TP);
        CUDA_RESOURCE_DESC rd = {0};
        rd.resType = CU_RESOURCE_TYPE_LINEAR;
        rd.res.linear.devPtr = tl, rd.res.linear.format = CU_AD_FORMAT_FLOAT, rd.res.linear.numChannels = 1;
        rd.res.linear.sizeInBytes = 2 * TN * 4;
        CUDA_TEXTURE_DESC tdsc = {0};
        CUtexObject to = 0, to2 = 0;
        R("texture.linear.cuTexObjectCreate", F(cuTexObjectCreate)(&to, &rd, &tdsc, NULL));
        CUfunction ktr = NULL, kt2 = NULL;
        R("cuModuleGetFunction.tex_read", F(cuModuleGetFunction)(&ktr, m, "tex_read"));
        R("cuModuleGetFunction.tex2d_read", F(cuModuleGetFunction)(&kt2, m, "tex2d_read"));
        unsigned tn = TN;
        void *targs[] = {&to, &dy, &tn};
        R("texture.linear.launch", F(cuLaunchKernel)(ktr, TN / 128, 1, 1, 128, 1, 1, 0, 0, targs, NULL));
        F(cuMemcpyDtoH)(h2, dy, TN * 4);
        OUT("texture.linear.result", "%016llx", fnv(h2, TN * 4));
        CUDA_RESOURCE_DESC back;
        memset(&back, 0x7f, sizeof back);
        R("texture.cuTexObjectGetResourceDesc", F(cuTexObjectGetResourceDesc)(&back, to));
        OUT("texture.resource_desc", "%d %d %d %u %zu", (int)back.resType, back.res.linear.devPtr == tl,
            (int)back.res.linear.format, back.res.linear.numChannels, back.res.linear.sizeInBytes);
        CUDA_RESOURCE_DESC rd2 = {0};
        rd2.resType = CU_RESOURCE_TYPE_PITCH2D;
        rd2.res.pitch2D.devPtr = t2, rd2.res.pitch2D.format = CU_AD_FORMAT_FLOAT, rd2.res.pitch2D.numChannels = 1;
        rd2.res.pitch2D.width = TW, rd2.res.pitch2D.height = TH, rd2.res.pitch2D.pitchInBytes = TP;
        CUDA_TEXTURE_DESC td2 = {0};
        td2.addressMode[0] = td2.addressMode[1] = CU_TR_ADDRESS_MODE_CLAMP;
        R("texture.pitch2d.cuTexObjectCreate", F(cuTexObjectCreate)(&to2, &rd2, &td2, NULL));
        unsigned tw = TW, th = TH;
        void *t2args[] = {&to2, &dy, &tw, &th};
        R("texture.pitch2d.launch", F(cuLaunchKernel)(kt2, 1, TH, 1, 64, 1, 1, 0, 0, t2args, NULL));
        F(cuMemcpyDtoH)(h2, dy, TW * TH * 4);
        OUT("texture.pitch2d.result", "%016llx", fnv(h2, TW * TH * 4));
        CUDA_TEXTURE_DESC tback;
        memset(&tback, 0x7f, sizeof tback);
        R("texture.cuTexObjectGetTextureDesc", F(cuTexObjectGetTextureDesc)(&tback, to2));
        OUT("texture.texture_desc", "%d %d %d %u", (int)tback.addressMode[0], (int)tback.addressMode[1],
            (int)tback.filterMode, tback.flags);
        R("texture.cuTexObjectDestroy", F(cuTexObjectDestroy)(to));
        R("texture.cuTexObjectDestroy.2", F(cuTexObjectDestroy)(to2));
        F(cuMemFree)(tl), F(cuMemFree)(t2);
        free(tf);
    }

    // Stream memory operations (on the legacy stream; every wait below is already satisfied).
    {
        typedef CUresult (*wv32_t)(CUstream, CUdeviceptr, cuuint32_t, unsigned);
        typedef CUresult (*wv64_t)(CUstream, CUdeviceptr, cuuint64_t, unsigned);
        typedef CUresult (*batch_t)(CUstream, unsigned, CUstreamBatchMemOpParams *, unsigned);
        wv32_t w32 = (wv32_t)sym("cuStreamWriteValue32_v2"), q32 = (wv32_t)sym("cuStreamWaitValue32_v2");
        wv64_t w64 = (wv64_t)sym("cuStreamWriteValue64_v2"), q64 = (wv64_t)sym("cuStreamWaitValue64_v2");
        batch_t bm = (batch_t)sym("cuStreamBatchMemOp_v2");
        CUdeviceptr m = 0;
        R("memops.alloc", F(cuMemAlloc)(&m, 64));
        R("memops.memset", F(cuMemsetD8)(m, 0, 64));
        // A write without the memory barrier may pass earlier writes (the memset's): wait for
        // them first, and for it before anything waits on its word.
        R("memops.sync.memset", F(cuCtxSynchronize)());
        R("memops.write32", w32(0, m, 7, 0));
        R("memops.write64", w64(0, m + 8, 0x100000002ull, 0));
        // Writes that may pass earlier work: nothing below waits on their words.
        R("memops.write32_no_barrier", w32(0, m + 24, 5, CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER));
        R("memops.write64_no_barrier", w64(0, m + 32, 0x300000004ull, CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER));
        R("memops.sync.writes", F(cuCtxSynchronize)());
        R("memops.wait32_geq", q32(0, m, 7, CU_STREAM_WAIT_VALUE_GEQ));
        R("memops.wait64_eq", q64(0, m + 8, 0x100000002ull, CU_STREAM_WAIT_VALUE_EQ));
        R("memops.wait32_and", q32(0, m, 3, CU_STREAM_WAIT_VALUE_AND));
        R("memops.wait32_nor", q32(0, m + 16, 1, CU_STREAM_WAIT_VALUE_NOR));
        CUstreamBatchMemOpParams ops[3];
        memset(ops, 0, sizeof ops);
        ops[0].writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_32;
        ops[0].writeValue.address = m + 20;
        ops[0].writeValue.value = 9;
        ops[1].memoryBarrier.operation = CU_STREAM_MEM_OP_BARRIER;
        ops[1].memoryBarrier.flags = CU_STREAM_MEMORY_BARRIER_TYPE_SYS;
        ops[2].waitValue.operation = CU_STREAM_MEM_OP_WAIT_VALUE_32;
        ops[2].waitValue.address = m + 20;
        ops[2].waitValue.value = 9;
        ops[2].waitValue.flags = CU_STREAM_WAIT_VALUE_EQ;
        R("memops.batch", bm(0, 3, ops, 0));
        R("memops.sync", F(cuCtxSynchronize)());
        unsigned got[10] = {0};
        R("memops.read", F(cuMemcpyDtoH)(got, m, sizeof got));
        OUT("memops.values", "%u %u %u %u %u %u", got[0], got[1], got[2], got[3], got[4], got[5]);
        OUT("memops.values_no_barrier", "%u %u %u", got[6], got[8], got[9]);
        // Calls the API itself must refuse (nothing reaches the GPU).
        R("memops.batch.flags", bm(0, 1, ops, 1));
        R("memops.batch.empty", bm(0, 0, ops, 0));
        CUstreamBatchMemOpParams flush;
        memset(&flush, 0, sizeof flush);
        flush.flushRemoteWrites.operation = CU_STREAM_MEM_OP_FLUSH_REMOTE_WRITES;
        R("memops.batch.flush_remote_writes", bm(0, 1, &flush, 0));
        R("memops.sync.after", F(cuCtxSynchronize)());
        // Batch memory operation nodes: a write, then a wait on its word; read back, changed in
        // the executable graph, added through cuGraphAddNode, captured; the refusals.
        {
            CUgraph bg = NULL, cg = NULL;
            CUgraphExec bx = NULL, cx = NULL;
            CUgraphNode bn = NULL, bn2 = NULL, bn3 = NULL;
            CUstreamBatchMemOpParams bo[2];
            memset(bo, 0, sizeof bo);
            bo[0].writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_32;
            bo[0].writeValue.address = m + 40;
            bo[0].writeValue.value = 41;
            bo[1].waitValue.operation = CU_STREAM_MEM_OP_WAIT_VALUE_32;
            bo[1].waitValue.address = m + 40;
            bo[1].waitValue.value = 41;
            bo[1].waitValue.flags = CU_STREAM_WAIT_VALUE_EQ;
            CUDA_BATCH_MEM_OP_NODE_PARAMS bp;
            memset(&bp, 0, sizeof bp);
            bp.ctx = c0, bp.count = 2, bp.paramArray = bo, bp.flags = 0;
            F(cuGraphCreate)(&bg, 0);
            R("bmnode.add", F(cuGraphAddBatchMemOpNode)(&bn, bg, NULL, 0, &bp));
            CUgraphNodeType bt = (CUgraphNodeType)99;
            if (bn) F(cuGraphNodeGetType)(bn, &bt);
            OUT("bmnode.type", "%d", (int)bt);
            CUDA_BATCH_MEM_OP_NODE_PARAMS bb;
            memset(&bb, 0, sizeof bb);
            R("bmnode.get", F(cuGraphBatchMemOpNodeGetParams)(bn, &bb));
            OUT("bmnode.get.values", "%d %u %d %u", bb.ctx == c0, bb.count, bb.paramArray != NULL && bb.paramArray != bo,
                bb.flags);
            if (bb.paramArray && bb.count == 2)
                OUT("bmnode.get.ops", "%d %d %u %d %u %u", (int)bb.paramArray[0].operation,
                    bb.paramArray[0].writeValue.address == m + 40, bb.paramArray[0].writeValue.value,
                    (int)bb.paramArray[1].operation, bb.paramArray[1].waitValue.value, bb.paramArray[1].waitValue.flags);
            bp.ctx = NULL;
            R("bmnode.add.null_ctx", F(cuGraphAddBatchMemOpNode)(&bn2, bg, &bn, 1, &bp));
            bp.ctx = c0, bp.count = 0;
            R("bmnode.add.count0", F(cuGraphAddBatchMemOpNode)(&bn3, bg, NULL, 0, &bp));
            bp.count = 2, bp.flags = 1;
            R("bmnode.add.flags1", F(cuGraphAddBatchMemOpNode)(&bn3, bg, NULL, 0, &bp));
            bp.flags = 0;
            R("bmnode.get.null_node", F(cuGraphBatchMemOpNodeGetParams)(NULL, &bb));
            R("bmnode.instantiate", F(cuGraphInstantiateWithFlags)(&bx, bg, 0));
            R("bmnode.launch", F(cuGraphLaunch)(bx, 0));
            R("bmnode.sync", F(cuCtxSynchronize)());
            unsigned bv[4] = {0};
            F(cuMemcpyDtoH)(bv, m + 40, sizeof bv);
            OUT("bmnode.values", "%u %u %u %u", bv[0], bv[1], bv[2], bv[3]);
            bo[0].writeValue.value = 42, bo[1].waitValue.value = 42;
            R("bmnode.exec_set", F(cuGraphExecBatchMemOpNodeSetParams)(bx, bn, &bp));
            bp.count = 1;
            R("bmnode.exec_set.count", F(cuGraphExecBatchMemOpNodeSetParams)(bx, bn, &bp));
            bp.count = 2;
            bo[1].writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_32;
            bo[1].writeValue.address = m + 44;
            bo[1].writeValue.flags = 0;
            R("bmnode.exec_set.type", F(cuGraphExecBatchMemOpNodeSetParams)(bx, bn, &bp));
            R("bmnode.set", F(cuGraphBatchMemOpNodeSetParams)(bn, &bp));
            R("bmnode.launch.2", F(cuGraphLaunch)(bx, 0));
            R("bmnode.sync.2", F(cuCtxSynchronize)());
            F(cuMemcpyDtoH)(bv, m + 40, sizeof bv);
            OUT("bmnode.values.2", "%u %u %u %u", bv[0], bv[1], bv[2], bv[3]);
            memset(&bb, 0, sizeof bb);
            F(cuGraphBatchMemOpNodeGetParams)(bn, &bb);
            if (bb.paramArray && bb.count == 2)
                OUT("bmnode.set.ops", "%d %u", (int)bb.paramArray[1].operation, bb.paramArray[1].writeValue.value);
            // Through cuGraphAddNode.
            CUgraphNodeParams gp;
            memset(&gp, 0, sizeof gp);
            gp.type = CU_GRAPH_NODE_TYPE_BATCH_MEM_OP;
            gp.memOp.ctx = c0, gp.memOp.count = 1, gp.memOp.paramArray = bo, gp.memOp.flags = 0;
            R("bmnode.add_node",
              ((CUresult(*)(CUgraphNode *, CUgraph, const CUgraphNode *, size_t, CUgraphNodeParams *))sym("cuGraphAddNode"))(
                  &bn3, bg, NULL, 0, &gp));
            // Captured: a write and a batch of one write.
            CUstream bs = NULL;
            F(cuStreamCreate)(&bs, CU_STREAM_NON_BLOCKING);
            R("bmnode.capture.begin", F(cuStreamBeginCapture)(bs, CU_STREAM_CAPTURE_MODE_GLOBAL));
            R("bmnode.capture.write32", w32(bs, m + 48, 49, 0));
            bo[0].writeValue.address = m + 52, bo[0].writeValue.value = 53;
            R("bmnode.capture.batch", bm(bs, 1, bo, 0));
            R("bmnode.capture.end", F(cuStreamEndCapture)(bs, &cg));
            size_t cn = 0;
            if (cg) F(cuGraphGetNodes)(cg, NULL, &cn);
            CUgraphNode cns[4] = {0};
            CUgraphNodeType ct0 = (CUgraphNodeType)99, ct1 = (CUgraphNodeType)99;
            if (cn == 2) {
                F(cuGraphGetNodes)(cg, cns, &cn);
                F(cuGraphNodeGetType)(cns[0], &ct0);
                F(cuGraphNodeGetType)(cns[1], &ct1);
            }
            OUT("bmnode.capture.nodes", "%zu %d %d", cn, (int)ct0, (int)ct1);
            if (cg) R("bmnode.capture.instantiate", F(cuGraphInstantiateWithFlags)(&cx, cg, 0));
            if (cx) R("bmnode.capture.launch", F(cuGraphLaunch)(cx, bs));
            R("bmnode.capture.sync", F(cuStreamSynchronize)(bs));
            F(cuMemcpyDtoH)(bv, m + 48, 8);
            OUT("bmnode.capture.values", "%u %u", bv[0], bv[1]);
            if (cx) F(cuGraphExecDestroy)(cx);
            if (cg) F(cuGraphDestroy)(cg);
            F(cuStreamDestroy)(bs);
            if (bx) F(cuGraphExecDestroy)(bx);
            F(cuGraphDestroy)(bg);
        }
        R("memops.free", F(cuMemFree)(m));
    }

    // Registered host memory.
    {
        unsigned *reg = aligned_alloc(4096, N * 4);
        for (unsigned i = 0; i < N; i++) reg[i] = i * 2246822519u;
        R("hostreg.cuMemHostRegister", F(cuMemHostRegister)(reg, N * 4, CU_MEMHOSTREGISTER_PORTABLE));
        R("hostreg.register_again", F(cuMemHostRegister)(reg, N * 4, 0));
        R("hostreg.cuMemcpyHtoDAsync", F(cuMemcpyHtoDAsync)(dy, reg, N * 4, 0));
        R("hostreg.sync", F(cuStreamSynchronize)(0));
        F(cuMemcpyDtoH)(h2, dy, N * 4);
        OUT("hostreg.htod", "%016llx", fnv(h2, N * 4));
        F(cuMemsetD32)(dy, 0x0f0f0f0f, 16);
        memset(reg, 0, N * 4);
        R("hostreg.cuMemcpyDtoHAsync", F(cuMemcpyDtoHAsync)(reg, dy, N * 4, 0));
        F(cuStreamSynchronize)(0);
        OUT("hostreg.dtoh", "%016llx", fnv(reg, N * 4));
        CUdeviceptr rp = 0;
        // This library gives registered memory no device address (CUDA_ERROR_NOT_SUPPORTED).
        R("hostreg.cuMemHostGetDevicePointer", F(cuMemHostGetDevicePointer)(&rp, reg, 0));
        R("hostreg.cuMemHostUnregister", F(cuMemHostUnregister)(reg));
        R("hostreg.unregister_again", F(cuMemHostUnregister)(reg));
        free(reg);
    }

    // Managed memory: one address for the CPU and the GPU.
    {
        enum { MN = 3000 };
        CUdeviceptr md = 0, mbad = 0;
        R("managed.size0", F(cuMemAllocManaged)(&mbad, 0, CU_MEM_ATTACH_GLOBAL));
        R("managed.flags0", F(cuMemAllocManaged)(&mbad, 64, 0));
        R("managed.flags3", F(cuMemAllocManaged)(&mbad, 64, 3));
        R("managed.flags_single", F(cuMemAllocManaged)(&mbad, 64, CU_MEM_ATTACH_SINGLE));
        R("managed.null", F(cuMemAllocManaged)(NULL, 64, CU_MEM_ATTACH_GLOBAL));
        OUT("managed.bad_left_alone", "%d", (int)(mbad == 0));
        R("managed.cuMemAllocManaged", F(cuMemAllocManaged)(&md, MN * 4, CU_MEM_ATTACH_GLOBAL));
        unsigned *mh = (unsigned *)(uintptr_t)md;
        if (md) {
            for (unsigned i = 0; i < MN; i++) mh[i] = i * 7u;
            OUT("managed.cpu_written", "%016llx", fnv(mh, MN * 4));
            CUdeviceptr mp = md + 400;
            unsigned base = 1000, cnt = 256;
            void *ma[] = {&mp, &base, &cnt};
            R("managed.launch", F(cuLaunchKernel)(iota, 2, 1, 1, 128, 1, 1, 0, 0, ma, NULL));
            R("managed.cuCtxSynchronize", F(cuCtxSynchronize)());
            OUT("managed.after_kernel", "%016llx", fnv(mh, MN * 4));
            memset(h2, 0, N * 4);
            R("managed.dtoh", F(cuMemcpyDtoH)(h2, md + 396, 16));
            OUT("managed.dtoh.result", "%u %u %u %u", h2[0], h2[1], h2[2], h2[3]);
            R("managed.memset", F(cuMemsetD32)(md, 5, 4));
            OUT("managed.memset.cpu", "%u %u %u %u %u", mh[0], mh[1], mh[2], mh[3], mh[4]);
            unsigned u = 9;
            int iv = 9;
            unsigned long long pv = 0;
            for (int a = 1; a <= 13; a++) {
                if (a == 5 || a == 7 || a == 10) continue;
                pv = 0;
                int r = F(cuPointerGetAttribute)(&pv, (CUpointer_attribute)a, md + 8);
                snprintf(key, sizeof key, "managed.pointer_attribute.%d", a);
                if (a == 1)
                    OUT(key, "%d %d", r, (int)((CUcontext)(uintptr_t)pv == c0));
                else if (a == 3 || a == 4)
                    OUT(key, "%d %d", r, (int)(pv == md + 8));
                else if (a == 11)
                    OUT(key, "%d %d", r, (int)(pv == md));
                else
                    OUT(key, "%d %llu", r, pv);
            }
            CUdeviceptr mdp = 0;
            R("managed.cuMemHostGetDevicePointer", F(cuMemHostGetDevicePointer)(&mdp, mh, 0));
            u = 12345;
            R("managed.cuMemHostGetFlags", F(cuMemHostGetFlags)(&u, mh));
            OUT("managed.cuMemHostGetFlags.value", "%u", u);
            R("managed.cuMemFreeHost", F(cuMemFreeHost)(mh));
            CUdeviceptr gb = 0;
            size_t gs = 0;
            R("managed.cuMemGetAddressRange", F(cuMemGetAddressRange)(&gb, &gs, md + 100));
            OUT("managed.address_range", "%d %zu", (int)(gb == md), gs);
            // Advice and the range attributes.
            typedef CUresult (*adv1_t)(CUdeviceptr, size_t, CUmem_advise, CUdevice);
            typedef CUresult (*adv2_t)(CUdeviceptr, size_t, CUmem_advise, CUmemLocation);
            typedef CUresult (*pf1_t)(CUdeviceptr, size_t, CUdevice, CUstream);
            typedef CUresult (*pf2_t)(CUdeviceptr, size_t, CUmemLocation, unsigned, CUstream);
            adv1_t adv1 = (adv1_t)sym("cuMemAdvise");
            adv2_t adv2 = (adv2_t)sym("cuMemAdvise_v2");
            pf1_t pf1 = (pf1_t)sym("cuMemPrefetchAsync");
            pf2_t pf2 = (pf2_t)sym("cuMemPrefetchAsync_v2");
            CUmemLocation lhost = {0}, ldev = {0}, lbad = {0};
            lhost.type = CU_MEM_LOCATION_TYPE_HOST;
            ldev.type = CU_MEM_LOCATION_TYPE_DEVICE, ldev.id = dev;
            lbad.type = CU_MEM_LOCATION_TYPE_DEVICE, lbad.id = 99;
#define RANGE_INT(k, attr, p, n) range_int(k, attr, p, n)
            RANGE_INT("managed.range.read_mostly.none", CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, md, MN * 4);
            RANGE_INT("managed.range.preferred.none", CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION, md, MN * 4);
            RANGE_INT("managed.range.preferred_type.none", CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_TYPE, md, MN * 4);
            RANGE_INT("managed.range.preferred_id.none", CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_ID, md, MN * 4);
            RANGE_INT("managed.range.last_prefetch.none", CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION, md, MN * 4);
            R("managed.advise.read_mostly", adv1(md, 4096, CU_MEM_ADVISE_SET_READ_MOSTLY, dev));
            RANGE_INT("managed.range.read_mostly.first_page", CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, md, 4096);
            RANGE_INT("managed.range.read_mostly.all", CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, md, MN * 4);
            R("managed.advise.unset_read_mostly", adv1(md, 4096, CU_MEM_ADVISE_UNSET_READ_MOSTLY, dev));
            RANGE_INT("managed.range.read_mostly.unset", CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, md, 4096);
            R("managed.advise.preferred_cpu", adv1(md, MN * 4, CU_MEM_ADVISE_SET_PREFERRED_LOCATION, CU_DEVICE_CPU));
            RANGE_INT("managed.range.preferred.cpu", CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION, md, MN * 4);
            RANGE_INT("managed.range.preferred_type.cpu", CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_TYPE, md, MN * 4);
            R("managed.advise_v2.preferred_device", adv2(md, 4096, CU_MEM_ADVISE_SET_PREFERRED_LOCATION, ldev));
            RANGE_INT("managed.range.preferred.device", CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION, md, 4096);
            RANGE_INT("managed.range.preferred_id.device", CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_ID, md, 4096);
            RANGE_INT("managed.range.preferred.mixed", CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION, md, MN * 4);
            R("managed.advise.unset_preferred", adv1(md, MN * 4, CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION, dev));
            RANGE_INT("managed.range.preferred.unset", CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION, md, MN * 4);
            R("managed.advise.accessed_by", adv1(md, MN * 4, CU_MEM_ADVISE_SET_ACCESSED_BY, dev));
            int by[3] = {7, 7, 7};
            R("managed.range.accessed_by", F(cuMemRangeGetAttribute)(by, sizeof by, CU_MEM_RANGE_ATTRIBUTE_ACCESSED_BY, md, MN * 4));
            OUT("managed.range.accessed_by.values", "%d %d %d", by[0], by[1], by[2]);
            R("managed.advise.unset_accessed_by", adv1(md, MN * 4, CU_MEM_ADVISE_UNSET_ACCESSED_BY, dev));
            R("managed.advise.device_memory", adv1(dy, 64, CU_MEM_ADVISE_SET_READ_MOSTLY, dev));
            R("managed.advise.count0", adv1(md, 0, CU_MEM_ADVISE_SET_READ_MOSTLY, dev));
            R("managed.advise.past_end", adv1(md, MN * 4 + 1, CU_MEM_ADVISE_SET_READ_MOSTLY, dev));
            R("managed.advise.bad_advice", adv1(md, 64, (CUmem_advise)7, dev));
            R("managed.advise.bad_device", adv1(md, 64, CU_MEM_ADVISE_SET_PREFERRED_LOCATION, 99));
            R("managed.advise_v2.bad_device", adv2(md, 64, CU_MEM_ADVISE_SET_PREFERRED_LOCATION, lbad));
            R("managed.range.size8", F(cuMemRangeGetAttribute)(&pv, 8, CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, md, 64));
            R("managed.range.null", F(cuMemRangeGetAttribute)(NULL, 4, CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, md, 64));
            R("managed.range.bad_attribute", F(cuMemRangeGetAttribute)(&iv, 4, (CUmem_range_attribute)99, md, 64));
            // Prefetches.
            R("managed.prefetch.cpu", pf1(md, MN * 4, CU_DEVICE_CPU, 0));
            RANGE_INT("managed.range.last_prefetch.cpu", CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION, md, MN * 4);
            R("managed.prefetch.device", pf1(md, 4096, dev, s1));
            F(cuStreamSynchronize)(s1);
            RANGE_INT("managed.range.last_prefetch.device", CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION, md, 4096);
            RANGE_INT("managed.range.last_prefetch.mixed", CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION, md, MN * 4);
            R("managed.prefetch_v2.host", pf2(md, MN * 4, lhost, 0, 0));
            RANGE_INT("managed.range.last_prefetch_type.host", CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_TYPE, md, MN * 4);
            R("managed.prefetch_v2.device", pf2(md, MN * 4, ldev, 0, 0));
            F(cuCtxSynchronize)();
            RANGE_INT("managed.range.last_prefetch_id.device", CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_ID, md, MN * 4);
            OUT("managed.after_prefetch", "%016llx", fnv(mh, MN * 4));
            R("managed.prefetch.device_memory", pf1(dy, 64, CU_DEVICE_CPU, 0));
            R("managed.prefetch.count0", pf1(md, 0, CU_DEVICE_CPU, 0));
            R("managed.prefetch.bad_device", pf1(md, 64, 99, 0));
            R("managed.prefetch_v2.flags1", pf2(md, 64, lhost, 1, 0));
            R("managed.prefetch_v2.bad_device", pf2(md, 64, lbad, 0, 0));
            // Stream attachment.
            R("managed.attach.single", F(cuStreamAttachMemAsync)(s1, md, 0, CU_MEM_ATTACH_SINGLE));
            R("managed.attach.host_whole", F(cuStreamAttachMemAsync)(s1, md, MN * 4, CU_MEM_ATTACH_HOST));
            R("managed.attach.single_legacy", F(cuStreamAttachMemAsync)(0, md, 0, CU_MEM_ATTACH_SINGLE));
            R("managed.attach.inside", F(cuStreamAttachMemAsync)(s1, md + 4, 0, CU_MEM_ATTACH_GLOBAL));
            R("managed.attach.part", F(cuStreamAttachMemAsync)(s1, md, 8, CU_MEM_ATTACH_GLOBAL));
            R("managed.attach.flags8", F(cuStreamAttachMemAsync)(s1, md, 0, 8));
            R("managed.attach.device_memory", F(cuStreamAttachMemAsync)(s1, dy, 0, CU_MEM_ATTACH_GLOBAL));
            R("managed.attach.global", F(cuStreamAttachMemAsync)(s1, md, 0, CU_MEM_ATTACH_GLOBAL));
            F(cuStreamSynchronize)(s1);
#undef RANGE_INT
        }
        R("managed.cuMemFree.inside", F(cuMemFree)(md + 4));
        R("managed.cuMemFree", F(cuMemFree)(md));
        R("managed.cuMemFree.again", F(cuMemFree)(md));
        CUdeviceptr mh2 = 0;
        R("managed.host_attached", F(cuMemAllocManaged)(&mh2, 100000, CU_MEM_ATTACH_HOST));
        if (mh2) {
            ((unsigned *)(uintptr_t)mh2)[1000] = 77;
            unsigned got = 0;
            F(cuMemcpyDtoH)(&got, mh2 + 4000, 4);
            OUT("managed.host_attached.read", "%u", got);
        }
        R("managed.host_attached.free", F(cuMemFree)(mh2));
    }

    // Graph memory attributes: the error codes (the figures differ by design: this library
    // counts graph memory from its allocation node's creation, NVIDIA's from the first launch).
    {
        cuuint64_t v = 5, zero = 0;
        R("graph_mem.get.attr4", F(cuDeviceGetGraphMemAttribute)(dev, (CUgraphMem_attribute)4, &v));
        R("graph_mem.get.null", F(cuDeviceGetGraphMemAttribute)(dev, CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT, NULL));
        R("graph_mem.get.device99", F(cuDeviceGetGraphMemAttribute)(99, CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT, &v));
        R("graph_mem.get.high", F(cuDeviceGetGraphMemAttribute)(dev, CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH, &v));
        R("graph_mem.set.current", F(cuDeviceSetGraphMemAttribute)(dev, CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT, &zero));
        R("graph_mem.set.high5", F(cuDeviceSetGraphMemAttribute)(dev, CU_GRAPH_MEM_ATTR_USED_MEM_HIGH, &v));
        R("graph_mem.set.high0", F(cuDeviceSetGraphMemAttribute)(dev, CU_GRAPH_MEM_ATTR_USED_MEM_HIGH, &zero));
        R("graph_mem.set.null", F(cuDeviceSetGraphMemAttribute)(dev, CU_GRAPH_MEM_ATTR_USED_MEM_HIGH, NULL));
        R("graph_mem.trim", F(cuDeviceGraphMemTrim)(dev));
        R("graph_mem.trim.device99", F(cuDeviceGraphMemTrim)(99));
    }

    // Memory pools and stream-ordered allocation.
    {
        CUmemoryPool def = NULL, cur = NULL, pool = NULL, small = NULL, bad = NULL;
        R("pools.cuDeviceGetDefaultMemPool", F(cuDeviceGetDefaultMemPool)(&def, dev));
        R("pools.cuDeviceGetMemPool", F(cuDeviceGetMemPool)(&cur, dev));
        OUT("pools.current_is_default", "%d", (int)(def != NULL && def == cur));
        int pa = -1;
        for (int a = 1; a <= 3; a++) {
            pa = -1;
            int r = F(cuMemPoolGetAttribute)(def, (CUmemPool_attribute)a, &pa);
            snprintf(key, sizeof key, "pools.default_attribute.%d", a);
            OUT(key, "%d %d", r, pa);
        }
        cuuint64_t th = 99;
        R("pools.default_threshold", F(cuMemPoolGetAttribute)(def, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &th));
        OUT("pools.default_threshold.value", "%llu", (unsigned long long)th);
        CUdeviceptr pd = 0, pz = 1;
        R("pools.cuMemAllocAsync", F(cuMemAllocAsync)(&pd, N * 4, s1));
        unsigned base = 77, cnt = N;
        void *pargs[] = {&pd, &base, &cnt};
        R("pools.launch", F(cuLaunchKernel)(iota, N / 128, 1, 1, 128, 1, 1, 0, s1, pargs, NULL));
        R("pools.dtoh", F(cuMemcpyDtoHAsync)(h2, pd, N * 4, s1));
        F(cuStreamSynchronize)(s1);
        OUT("pools.iota", "%016llx", fnv(h2, N * 4));
        CUmemoryPool owner = NULL;
        R("pools.pointer_attribute.mempool", F(cuPointerGetAttribute)(&owner, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, pd + 8));
        OUT("pools.pointer_attribute.mempool.is_default", "%d", (int)(owner == def));
        R("pools.free_inside", F(cuMemFreeAsync)(pd + 4, s1));
        R("pools.cuMemFreeAsync", F(cuMemFreeAsync)(pd, s1));
        R("pools.zero_bytes", F(cuMemAllocAsync)(&pz, 0, s1));
        OUT("pools.zero_bytes.pointer", "%llu", (unsigned long long)pz);
        R("pools.free_null", F(cuMemFreeAsync)(0, s1));
        R("pools.null_dptr", F(cuMemAllocAsync)(NULL, 64, s1));
        F(cuStreamSynchronize)(s1);
        CUdeviceptr plain = 0;
        F(cuMemAlloc)(&plain, 4096);
        R("pools.free_async_of_cuMemAlloc", F(cuMemFreeAsync)(plain, s1));
        F(cuStreamSynchronize)(s1);
        CUmemPoolProps pp;
        memset(&pp, 0, sizeof pp);
        pp.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
        pp.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
        pp.location.id = dev;
        R("pools.cuMemPoolCreate", F(cuMemPoolCreate)(&pool, &pp));
        cuuint64_t big = ~0ull, v64 = 0;
        R("pools.set_threshold", F(cuMemPoolSetAttribute)(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &big));
        CUdeviceptr a = 0, b = 0;
        R("pools.from_pool", F(cuMemAllocFromPoolAsync)(&a, 100000, pool, s1));
        cuuint64_t used = 0, resv = 0;
        F(cuMemPoolGetAttribute)(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &used);
        F(cuMemPoolGetAttribute)(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &resv);
        OUT("pools.used_covers", "%d %d", (int)(used >= 100000), (int)(resv >= used));
        R("pools.free_to_pool", F(cuMemFreeAsync)(a, s1));
        F(cuMemPoolGetAttribute)(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &used);
        F(cuMemPoolGetAttribute)(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &resv);
        OUT("pools.kept", "%llu %d", (unsigned long long)used, (int)(resv >= 100000));
        R("pools.again_same_stream", F(cuMemAllocFromPoolAsync)(&b, 100000, pool, s1));
        OUT("pools.reused_in_stream_order", "%d", (int)(a == b));
        R("pools.free_again", F(cuMemFreeAsync)(b, s1));
        F(cuStreamSynchronize)(s1);
        F(cuMemPoolGetAttribute)(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &resv);
        OUT("pools.kept_after_sync", "%d", (int)(resv > 0));
        R("pools.cuMemPoolTrimTo", F(cuMemPoolTrimTo)(pool, 0));
        F(cuMemPoolGetAttribute)(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &resv);
        OUT("pools.trimmed", "%llu", (unsigned long long)resv);
        v64 = 5;
        R("pools.set_high_nonzero", F(cuMemPoolSetAttribute)(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH, &v64));
        v64 = 0;
        R("pools.set_high_zero", F(cuMemPoolSetAttribute)(pool, CU_MEMPOOL_ATTR_USED_MEM_HIGH, &v64));
        R("pools.set_reserved_current", F(cuMemPoolSetAttribute)(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &v64));
        R("pools.get_bad_attribute", F(cuMemPoolGetAttribute)(pool, (CUmemPool_attribute)99, &v64));
        CUmemAccess_flags af = (CUmemAccess_flags)9;
        CUmemLocation here = {0};
        here.type = CU_MEM_LOCATION_TYPE_DEVICE, here.id = dev;
        R("pools.cuMemPoolGetAccess", F(cuMemPoolGetAccess)(&af, pool, &here));
        OUT("pools.access", "%d", (int)af);
        CUmemAccessDesc ad = {0};
        ad.location = here, ad.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
        R("pools.set_access_rw", F(cuMemPoolSetAccess)(pool, &ad, 1));
        ad.flags = CU_MEM_ACCESS_FLAGS_PROT_NONE;
        R("pools.set_access_none", F(cuMemPoolSetAccess)(pool, &ad, 1));
        R("pools.cuDeviceSetMemPool", F(cuDeviceSetMemPool)(dev, pool));
        CUdeviceptr c = 0;
        R("pools.from_current", F(cuMemAllocAsync)(&c, 256, s1));
        owner = NULL;
        F(cuPointerGetAttribute)(&owner, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, c);
        OUT("pools.from_current.owner", "%d", (int)(owner == pool));
        R("pools.cuMemFree_of_pool_memory", F(cuMemFree)(c));
        R("pools.destroy_default", F(cuMemPoolDestroy)(def));
        R("pools.cuMemPoolDestroy", F(cuMemPoolDestroy)(pool));
        F(cuDeviceGetMemPool)(&cur, dev);
        OUT("pools.current_after_destroy_is_default", "%d", (int)(cur == def));
        pp.maxSize = 4 << 20;
        R("pools.create_max", F(cuMemPoolCreate)(&small, &pp));
        CUdeviceptr m1 = 0, m2 = 0;
        R("pools.max.first", F(cuMemAllocFromPoolAsync)(&m1, 3 << 20, small, s1));
        R("pools.max.second", F(cuMemAllocFromPoolAsync)(&m2, 3 << 20, small, s1));
        F(cuMemPoolGetAttribute)(small, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &resv);
        fprintf(stderr, "difftest: pools.max: RESERVED_MEM_CURRENT %llu after two 3 MiB allocations (maxSize 4 MiB)\n",
                (unsigned long long)resv);
        CUdeviceptr m3 = 0;
        R("pools.max.over", F(cuMemAllocFromPoolAsync)(&m3, 8 << 20, small, s1));
        F(cuMemFreeAsync)(m1, s1);
        if (m2) F(cuMemFreeAsync)(m2, s1);
        if (m3) F(cuMemFreeAsync)(m3, s1);
        F(cuStreamSynchronize)(s1);
        R("pools.destroy_max", F(cuMemPoolDestroy)(small));
        pp.maxSize = 32 << 20;
        R("pools.create_max32", F(cuMemPoolCreate)(&small, &pp));
        m1 = m2 = 0;
        R("pools.max32.first", F(cuMemAllocFromPoolAsync)(&m1, 20 << 20, small, s1));
        R("pools.max32.second", F(cuMemAllocFromPoolAsync)(&m2, 20 << 20, small, s1));
        F(cuMemFreeAsync)(m1, s1);
        if (m2) F(cuMemFreeAsync)(m2, s1);
        F(cuStreamSynchronize)(s1);
        R("pools.destroy_max32", F(cuMemPoolDestroy)(small));
        // Pools with shareable handles (POSIX file descriptors), in one process.
        {
            CUmemoryPool sp = NULL, sp2 = NULL, ip = NULL;
            pp.maxSize = 0;
            pp.handleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
            R("pools.ipc.create", F(cuMemPoolCreate)(&sp, &pp));
            pp.handleTypes = CU_MEM_HANDLE_TYPE_FABRIC;
            R("pools.ipc.create_fabric", F(cuMemPoolCreate)(&sp2, &pp));
            if (sp2) F(cuMemPoolDestroy)(sp2), sp2 = NULL;
            pp.handleTypes = CU_MEM_HANDLE_TYPE_NONE;
            CUdeviceptr ia = 0, ib = 0, ic = 0;
            R("pools.ipc.alloc", F(cuMemAllocFromPoolAsync)(&ia, 4096, sp, s1));
            R("pools.ipc.alloc_2m", F(cuMemAllocFromPoolAsync)(&ib, 2 << 20, sp, s1));
            R("pools.ipc.alloc_64m", F(cuMemAllocFromPoolAsync)(&ic, 64 << 20, sp, s1));
            F(cuStreamSynchronize)(s1);
            CUmemPoolPtrExportData ed;
            memset(&ed, 0, sizeof ed);
            R("pools.ipc.export_pointer", F(cuMemPoolExportPointer)(&ed, ia));
            R("pools.ipc.export_pointer.2m", F(cuMemPoolExportPointer)(&ed, ib));
            R("pools.ipc.export_pointer.inside", F(cuMemPoolExportPointer)(&ed, ic + 4));
            R("pools.ipc.export_pointer.64m", F(cuMemPoolExportPointer)(&ed, ic));
            int pfd = -1;
            R("pools.ipc.export_fd", F(cuMemPoolExportToShareableHandle)(&pfd, sp, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
            OUT("pools.ipc.export_fd.valid", "%d", pfd >= 0);
            // Once the pool was exported.
            R("pools.ipc.export_pointer.after_fd", F(cuMemPoolExportPointer)(&ed, ic));
            R("pools.ipc.export_pointer.after_fd.4k", F(cuMemPoolExportPointer)(&ed, ia));
            int pfd2 = -1;
            R("pools.ipc.export_fd.fabric", F(cuMemPoolExportToShareableHandle)(&pfd2, sp, CU_MEM_HANDLE_TYPE_FABRIC, 0));
            R("pools.ipc.export_fd.plain_pool", F(cuMemPoolExportToShareableHandle)(&pfd2, def, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
            if (pfd >= 0) {
                R("pools.ipc.import", F(cuMemPoolImportFromShareableHandle)(&ip, (void *)(long)pfd, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
                CUdeviceptr ix = 0;
                if (ip) R("pools.ipc.alloc_from_import", F(cuMemAllocFromPoolAsync)(&ix, 64, ip, s1));
                if (ip) R("pools.ipc.import_pointer.own", F(cuMemPoolImportPointer)(&ix, ip, &ed));
                R("pools.ipc.import_pointer.not_imported", F(cuMemPoolImportPointer)(&ix, sp, &ed));
                if (ip) R("pools.ipc.destroy_import", F(cuMemPoolDestroy)(ip));
                close(pfd);
            }
            R("pools.ipc.free", F(cuMemFreeAsync)(ia, s1));
            F(cuMemFreeAsync)(ib, s1);
            F(cuMemFreeAsync)(ic, s1);
            F(cuStreamSynchronize)(s1);
            R("pools.ipc.destroy", F(cuMemPoolDestroy)(sp));
        }
        pp.maxSize = 0;
        pp.allocType = (CUmemAllocationType)0;
        R("pools.create.type0", F(cuMemPoolCreate)(&bad, &pp));
        pp.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
        pp.location.id = 99;
        R("pools.create.device99", F(cuMemPoolCreate)(&bad, &pp));
        R("pools.create.null_props", F(cuMemPoolCreate)(&bad, NULL));
        CUmemLocation d99 = {0};
        d99.type = CU_MEM_LOCATION_TYPE_DEVICE, d99.id = 99;
        // CUDA 13's location forms.
        typedef CUresult (*getpool_t)(CUmemoryPool *, CUmemLocation *, CUmemAllocationType);
        getpool_t gdef = (getpool_t)sym("cuMemGetDefaultMemPool"), gcur = (getpool_t)sym("cuMemGetMemPool");
        R("pools.cuMemGetDefaultMemPool", gdef(&cur, &here, CU_MEM_ALLOCATION_TYPE_PINNED));
        OUT("pools.cuMemGetDefaultMemPool.is_default", "%d", (int)(cur == def));
        R("pools.cuMemGetMemPool", gcur(&cur, &here, CU_MEM_ALLOCATION_TYPE_PINNED));
        R("pools.cuMemGetDefaultMemPool.device99", gdef(&cur, &d99, CU_MEM_ALLOCATION_TYPE_PINNED));
        // Host pools.
        CUmemLocation hloc = {0};
        hloc.type = CU_MEM_LOCATION_TYPE_HOST;
        R("pools.cuMemGetDefaultMemPool.host", gdef(&cur, &hloc, CU_MEM_ALLOCATION_TYPE_PINNED));
        for (int lt = 2; lt <= 3; lt++) {
            CUmemoryPool hp = NULL;
            CUmemPoolProps hpp;
            memset(&hpp, 0, sizeof hpp);
            hpp.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
            hpp.location.type = (CUmemLocationType)lt;
            hpp.location.id = 0;
            snprintf(key, sizeof key, "pools.host%d.create", lt);
            R(key, F(cuMemPoolCreate)(&hp, &hpp));
            if (!hp) continue;
            CUmemAccess_flags hf = (CUmemAccess_flags)9;
            snprintf(key, sizeof key, "pools.host%d.get_access", lt);
            int r = F(cuMemPoolGetAccess)(&hf, hp, &here);
            OUT(key, "%d %d", r, (int)hf);
            CUmemAccessDesc had = {0};
            had.location = here, had.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
            snprintf(key, sizeof key, "pools.host%d.set_access", lt);
            R(key, F(cuMemPoolSetAccess)(hp, &had, 1));
            hf = (CUmemAccess_flags)9;
            r = F(cuMemPoolGetAccess)(&hf, hp, &here);
            snprintf(key, sizeof key, "pools.host%d.get_access_after", lt);
            OUT(key, "%d %d", r, (int)hf);
            CUdeviceptr hd = 0;
            snprintf(key, sizeof key, "pools.host%d.alloc", lt);
            R(key, F(cuMemAllocFromPoolAsync)(&hd, N * 4, hp, s1));
            F(cuStreamSynchronize)(s1);
            if (hd) {
                unsigned *hh = (unsigned *)(uintptr_t)hd;
                for (unsigned i = 0; i < N; i++) hh[i] = 3 * i;
                CUdeviceptr hk = hd + 256;
                unsigned b2 = 40, c2 = 128;
                void *ha[] = {&hk, &b2, &c2};
                snprintf(key, sizeof key, "pools.host%d.launch", lt);
                R(key, F(cuLaunchKernel)(iota, 1, 1, 1, 128, 1, 1, 0, s1, ha, NULL));
                F(cuStreamSynchronize)(s1);
                snprintf(key, sizeof key, "pools.host%d.cpu_sees", lt);
                OUT(key, "%016llx", fnv(hh, N * 4));
                unsigned mt = 0;
                snprintf(key, sizeof key, "pools.host%d.memory_type", lt);
                r = F(cuPointerGetAttribute)(&mt, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, hd);
                OUT(key, "%d %u", r, mt);
                snprintf(key, sizeof key, "pools.host%d.free", lt);
                R(key, F(cuMemFreeAsync)(hd, s1));
                F(cuStreamSynchronize)(s1);
            }
            snprintf(key, sizeof key, "pools.host%d.destroy", lt);
            R(key, F(cuMemPoolDestroy)(hp));
        }
        {
            CUmemoryPool hp = NULL;
            CUmemPoolProps hpp;
            memset(&hpp, 0, sizeof hpp);
            hpp.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
            hpp.location.type = CU_MEM_LOCATION_TYPE_HOST_NUMA;
            hpp.location.id = 999;
            R("pools.host_numa999.create", F(cuMemPoolCreate)(&hp, &hpp));
        }
    }

    // Virtual memory management.
    {
        const size_t MB2 = 2u << 20;
        CUmemAllocationProp vp;
        memset(&vp, 0, sizeof vp);
        vp.type = CU_MEM_ALLOCATION_TYPE_PINNED;
        vp.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
        vp.location.id = dev;
        size_t gmin = 0, grec = 0, gbad = 0;
        R("vmm.granularity.minimum", F(cuMemGetAllocationGranularity)(&gmin, &vp, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
        R("vmm.granularity.recommended", F(cuMemGetAllocationGranularity)(&grec, &vp, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED));
        OUT("vmm.granularity", "%zu %zu", gmin, grec);
        R("vmm.granularity.option2", F(cuMemGetAllocationGranularity)(&gbad, &vp, (CUmemAllocationGranularity_flags)2));
        R("vmm.granularity.null_prop", F(cuMemGetAllocationGranularity)(&gbad, NULL, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
        CUmemGenericAllocationHandle vh = 0, vbad = 0, vh2 = 0;
        R("vmm.cuMemCreate", F(cuMemCreate)(&vh, 2 * MB2, &vp, 0));
        R("vmm.create.unaligned", F(cuMemCreate)(&vbad, MB2 / 2, &vp, 0));
        R("vmm.create.size0", F(cuMemCreate)(&vbad, 0, &vp, 0));
        R("vmm.create.flags", F(cuMemCreate)(&vbad, MB2, &vp, 1));
        CUmemAllocationProp vp2 = vp;
        vp2.location.id = 99;
        R("vmm.create.device99", F(cuMemCreate)(&vbad, MB2, &vp2, 0));
        vp2 = vp;
        vp2.type = (CUmemAllocationType)0;
        R("vmm.create.type0", F(cuMemCreate)(&vbad, MB2, &vp2, 0));
        // Compression: whether it is granted is the driver's choice (the note records it).
        vp2 = vp;
        vp2.allocFlags.compressionType = CU_MEM_ALLOCATION_COMP_GENERIC;
        CUmemGenericAllocationHandle vc = 0;
        R("vmm.create.compression", F(cuMemCreate)(&vc, MB2, &vp2, 0));
        if (vc) {
            CUmemAllocationProp cp;
            memset(&cp, 0, sizeof cp);
            F(cuMemGetAllocationPropertiesFromHandle)(&cp, vc);
            fprintf(stderr, "difftest: vmm.create.compression: compressionType granted %d\n",
                    (int)cp.allocFlags.compressionType);
            F(cuMemRelease)(vc);
        }
        vp2.allocFlags.compressionType = 2;
        R("vmm.create.compression2", F(cuMemCreate)(&vbad, MB2, &vp2, 0));
        vp2 = vp;
        vp2.allocFlags.usage = 1;
        R("vmm.create.usage1", F(cuMemCreate)(&vbad, MB2, &vp2, 0));
        if (vbad) F(cuMemRelease)(vbad), vbad = 0;
        vp2.allocFlags.usage = 2;
        R("vmm.create.usage2", F(cuMemCreate)(&vbad, MB2, &vp2, 0));
        if (vbad) F(cuMemRelease)(vbad), vbad = 0;
        CUmemAllocationProp back;
        memset(&back, 0x5a, sizeof back);
        R("vmm.properties", F(cuMemGetAllocationPropertiesFromHandle)(&back, vh));
        OUT("vmm.properties.values", "%d %d %d %d", (int)back.type, (int)back.requestedHandleTypes,
            (int)back.location.type, back.location.id);
        CUdeviceptr vr = 0, vbadr = 0;
        R("vmm.cuMemAddressReserve", F(cuMemAddressReserve)(&vr, 6 * MB2, 0, 0, 0));
        OUT("vmm.reserve.aligned", "%d", (int)(vr % MB2 == 0));
        R("vmm.reserve.unaligned", F(cuMemAddressReserve)(&vbadr, MB2 / 2, 0, 0, 0));
        R("vmm.reserve.size0", F(cuMemAddressReserve)(&vbadr, 0, 0, 0, 0));
        R("vmm.cuMemMap", F(cuMemMap)(vr, 2 * MB2, 0, vh, 0));
        R("vmm.map.overlap", F(cuMemMap)(vr + MB2, 2 * MB2, 0, vh, 0));
        R("vmm.map.offset", F(cuMemMap)(vr + 2 * MB2, MB2, MB2, vh, 0));
        R("vmm.map.past_allocation", F(cuMemMap)(vr + 2 * MB2, 3 * MB2, 0, vh, 0));
        R("vmm.map.flags", F(cuMemMap)(vr + 2 * MB2, 2 * MB2, 0, vh, 1));
        R("vmm.map.alias", F(cuMemMap)(vr + 2 * MB2, 2 * MB2, 0, vh, 0));
        CUmemLocation vloc = {0};
        vloc.type = CU_MEM_LOCATION_TYPE_DEVICE, vloc.id = dev;
        unsigned long long vflags = 99;
        R("vmm.get_access.before", F(cuMemGetAccess)(&vflags, &vloc, vr));
        OUT("vmm.get_access.before.value", "%llu", vflags);
        CUmemAccessDesc vad = {0};
        vad.location = vloc, vad.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
        R("vmm.cuMemSetAccess", F(cuMemSetAccess)(vr, 2 * MB2, &vad, 1));
        R("vmm.set_access.alias", F(cuMemSetAccess)(vr + 2 * MB2, 2 * MB2, &vad, 1));
        R("vmm.set_access.part", F(cuMemSetAccess)(vr, MB2, &vad, 1));
        R("vmm.set_access.unmapped", F(cuMemSetAccess)(vr + 4 * MB2, MB2, &vad, 1));
        R("vmm.set_access.both", F(cuMemSetAccess)(vr, 4 * MB2, &vad, 1));
        R("vmm.set_access.count0", F(cuMemSetAccess)(vr, 2 * MB2, &vad, 0));
        vflags = 99;
        R("vmm.cuMemGetAccess", F(cuMemGetAccess)(&vflags, &vloc, vr + 100));
        OUT("vmm.get_access.value", "%llu", vflags);
        R("vmm.get_access.unmapped", F(cuMemGetAccess)(&vflags, &vloc, vr + 4 * MB2));
        R("vmm.memset", F(cuMemsetD32)(vr + MB2, 0xabcd, N));
        unsigned base = 5, cnt = N;
        CUdeviceptr vp0 = vr + MB2 + 4096;
        void *vargs[] = {&vp0, &base, &cnt};
        R("vmm.launch", F(cuLaunchKernel)(iota, N / 128, 1, 1, 128, 1, 1, 0, 0, vargs, NULL));
        R("vmm.dtoh.alias", F(cuMemcpyDtoH)(h2, vr + 3 * MB2 + 4096, N * 4));
        OUT("vmm.alias.result", "%016llx", fnv(h2, N * 4));
        R("vmm.dtoh.alias_memset", F(cuMemcpyDtoH)(h2, vr + 3 * MB2, 16));
        OUT("vmm.alias_memset.result", "%u %u", h2[0], h2[3]);
        R("vmm.cuMemRetainAllocationHandle", F(cuMemRetainAllocationHandle)(&vh2, (void *)(uintptr_t)(vr + 100)));
        OUT("vmm.retained_same", "%d", (int)(vh2 == vh));
        R("vmm.release.retained", F(cuMemRelease)(vh2));
        R("vmm.cuMemRelease", F(cuMemRelease)(vh));
        R("vmm.dtoh.after_release", F(cuMemcpyDtoH)(h2, vr + MB2 + 4096, 16));
        OUT("vmm.after_release.result", "%u %u", h2[0], h2[3]);
        R("vmm.unmap.part", F(cuMemUnmap)(vr, MB2));
        R("vmm.cuMemUnmap", F(cuMemUnmap)(vr, 2 * MB2));
        R("vmm.unmap.alias", F(cuMemUnmap)(vr + 2 * MB2, 2 * MB2));
        R("vmm.address_free.size", F(cuMemAddressFree)(vr, MB2));
        R("vmm.cuMemAddressFree", F(cuMemAddressFree)(vr, 6 * MB2));
        // A POSIX file descriptor of the memory, imported in the same process.
        CUmemAllocationProp vps = vp;
        vps.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
        CUmemGenericAllocationHandle hs = 0, hp = 0, hi = 0;
        int vfd = -1;
        R("vmm.create.posix", F(cuMemCreate)(&hs, MB2, &vps, 0));
        R("vmm.create.plain", F(cuMemCreate)(&hp, MB2, &vp, 0));
        R("vmm.export.plain", F(cuMemExportToShareableHandle)(&vfd, hp, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
        R("vmm.cuMemExportToShareableHandle", F(cuMemExportToShareableHandle)(&vfd, hs, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
        OUT("vmm.export.fd", "%d", (int)(vfd >= 0));
        R("vmm.cuMemImportFromShareableHandle",
          F(cuMemImportFromShareableHandle)(&hi, (void *)(uintptr_t)vfd, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
        if (vfd >= 0) close(vfd);
        memset(&back, 0x5a, sizeof back);
        R("vmm.import.properties", F(cuMemGetAllocationPropertiesFromHandle)(&back, hi));
        OUT("vmm.import.properties.values", "%d %d %d %d", (int)back.type, (int)back.requestedHandleTypes,
            (int)back.location.type, back.location.id);
        CUdeviceptr vs = 0;
        R("vmm.share.reserve", F(cuMemAddressReserve)(&vs, 2 * MB2, 0, 0, 0));
        R("vmm.share.map", F(cuMemMap)(vs, MB2, 0, hs, 0));
        R("vmm.share.map_import", F(cuMemMap)(vs + MB2, MB2, 0, hi, 0));
        R("vmm.share.access", F(cuMemSetAccess)(vs, 2 * MB2, &vad, 1));
        R("vmm.share.memset", F(cuMemsetD32)(vs + 64, 0x1234, 16));
        memset(h2, 0, 64);
        R("vmm.share.dtoh", F(cuMemcpyDtoH)(h2, vs + MB2 + 64, 64));
        OUT("vmm.share.result", "%u %u", h2[0], h2[15]);
        R("vmm.share.unmap", F(cuMemUnmap)(vs, 2 * MB2));
        R("vmm.share.free", F(cuMemAddressFree)(vs, 2 * MB2));
        R("vmm.share.release", F(cuMemRelease)(hs));
        R("vmm.share.release_import", F(cuMemRelease)(hi));
        R("vmm.share.release_plain", F(cuMemRelease)(hp));
    }

    // Context limits (every CUlimit and two past them).
    for (int l = 0; l < 12; l++) {
        size_t lv = 12345;
        int r = F(cuCtxGetLimit)(&lv, (CUlimit)l);
        snprintf(key, sizeof key, "limit.%d", l);
        OUT(key, "%d %zu", r, r == 0 ? lv : 0);
    }
    // Thread-block cluster occupancy of a 128-thread kernel, cluster sizes 1 to 17, and the
    // largest cluster a launch may use (Hopper and later).
    {
        CUlaunchAttribute ca;
        memset(&ca, 0, sizeof ca);
        ca.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
        CUlaunchConfig cc;
        memset(&cc, 0, sizeof cc);
        cc.gridDimX = 64, cc.gridDimY = 1, cc.gridDimZ = 1;
        cc.blockDimX = 128, cc.blockDimY = 1, cc.blockDimZ = 1;
        cc.attrs = &ca, cc.numAttrs = 1;
        for (unsigned cs = 1; cs <= 17; cs += (cs < 9 ? 1 : 8)) {
            ca.value.clusterDim.x = cs, ca.value.clusterDim.y = 1, ca.value.clusterDim.z = 1;
            int nc = -1;
            int r = F(cuOccupancyMaxActiveClusters)(&nc, iota, &cc);
            snprintf(key, sizeof key, "cluster.occupancy.%u", cs);
            OUT(key, "%d %d", r, r == 0 ? nc : 0);
        }
        cc.numAttrs = 0;
        int nc = -1;
        R("cluster.occupancy.no_shape", F(cuOccupancyMaxActiveClusters)(&nc, iota, &cc));
        int mc = -1;
        int r = F(cuOccupancyMaxPotentialClusterSize)(&mc, iota, &cc);
        OUT("cluster.max_potential", "%d %d", r, r == 0 ? mc : 0);
        R("cluster.set_non_portable", F(cuFuncSetAttribute)(iota, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1));
        r = F(cuOccupancyMaxPotentialClusterSize)(&mc, iota, &cc);
        OUT("cluster.max_potential.non_portable", "%d %d", r, r == 0 ? mc : 0);
        int fv = -1;
        r = F(cuFuncGetAttribute)(&fv, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, iota);
        OUT("cluster.non_portable", "%d %d", r, fv);
        // With non-portable sizes allowed: every cluster size from 1 to 16 blocks, for 8, 4, 2
        // and 1 blocks per multiprocessor (128, 512 and 1024 threads; 1024 threads with 150 KB of
        // dynamic shared memory).
        R("cluster.occupancy.smem_optin", F(cuFuncSetAttribute)(iota, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 150 * 1024));
        static const unsigned occ_shape[4][2] = {{128, 0}, {512, 0}, {1024, 0}, {1024, 150 * 1024}};
        for (unsigned k = 0; k < 4; k++) {
            cc.blockDimX = occ_shape[k][0], cc.sharedMemBytes = occ_shape[k][1];
            cc.attrs = &ca, cc.numAttrs = 1;
            for (unsigned cs = 1; cs <= 16; cs++) {
                ca.value.clusterDim.x = cs, ca.value.clusterDim.y = 1, ca.value.clusterDim.z = 1;
                cc.gridDimX = 16 * 9 * 5 * 7 * 11 * 13;
                int n = -1;
                r = F(cuOccupancyMaxActiveClusters)(&n, iota, &cc);
                snprintf(key, sizeof key, "cluster.occupancy.np.%u.%u.%u", occ_shape[k][0], occ_shape[k][1], cs);
                OUT(key, "%d %d", r, r == 0 ? n : 0);
            }
        }
        cc.gridDimX = 64, cc.blockDimX = 128, cc.sharedMemBytes = 0, cc.numAttrs = 0;
        // A launch in clusters of 16 blocks (non-portable), then again with the portable limit.
        CUdeviceptr cbuf = 0;
        unsigned cbase = 11, ccount = 64 * 128;
        R("cluster.alloc", F(cuMemAlloc)(&cbuf, ccount * 4));
        void *cargs[] = {&cbuf, &cbase, &ccount};
        ca.value.clusterDim.x = 16, ca.value.clusterDim.y = 1, ca.value.clusterDim.z = 1;
        cc.attrs = &ca, cc.numAttrs = 1;
        R("cluster.launch16", F(cuLaunchKernelEx)(&cc, iota, cargs, NULL));
        R("cluster.launch16.sync", F(cuCtxSynchronize)());
        static unsigned chost[64 * 128];
        memset(chost, 0, sizeof chost);
        R("cluster.launch16.dtoh", F(cuMemcpyDtoH)(chost, cbuf, sizeof chost));
        OUT("cluster.launch16.result", "%016llx", fnv(chost, sizeof chost));
        R("cluster.set_non_portable.2", F(cuFuncSetAttribute)(iota, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 2));
        R("cluster.set_non_portable.0", F(cuFuncSetAttribute)(iota, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 0));
        R("cluster.launch16.portable", F(cuLaunchKernelEx)(&cc, iota, cargs, NULL));
        R("cluster.launch16.portable.sync", F(cuCtxSynchronize)());
        R("cluster.free", F(cuMemFree)(cbuf));
        cc.numAttrs = 0;
        R("cluster.set_policy", F(cuFuncSetAttribute)(iota, CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE, 1));
        R("cluster.set_policy.3", F(cuFuncSetAttribute)(iota, CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE, 3));
        R("cluster.set_policy.0", F(cuFuncSetAttribute)(iota, CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE, 0));
    }

    // Host memory in virtual memory management (CU_MEM_LOCATION_TYPE_HOST, _HOST_NUMA).
    {
        const size_t MB2 = 2u << 20;
        CUmemAllocationProp hp;
        memset(&hp, 0, sizeof hp);
        hp.type = CU_MEM_ALLOCATION_TYPE_PINNED;
        int ltypes[3] = {CU_MEM_LOCATION_TYPE_HOST, CU_MEM_LOCATION_TYPE_HOST_NUMA,
                         CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT};
        for (int t = 0; t < 3; t++) {
            CUmemAllocationProp q = hp;
            q.location.type = (CUmemLocationType)ltypes[t];
            size_t g = 0;
            snprintf(key, sizeof key, "hvmm.granularity.%d", ltypes[t]);
            int r = F(cuMemGetAllocationGranularity)(&g, &q, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
            OUT(key, "%d %zu", r, g);
            CUmemGenericAllocationHandle hb = 0;
            snprintf(key, sizeof key, "hvmm.create.%d.64k", ltypes[t]);
            r = F(cuMemCreate)(&hb, 64 << 10, &q, 0);
            OUT(key, "%d", r);
            if (r == 0) F(cuMemRelease)(hb);
            CUmemAllocationProp q2 = q;
            q2.location.id = 999;
            snprintf(key, sizeof key, "hvmm.create.%d.id999", ltypes[t]);
            r = F(cuMemCreate)(&hb, MB2, &q2, 0);
            OUT(key, "%d", r);
            if (r == 0) F(cuMemRelease)(hb);
            q2 = q;
            q2.allocFlags.gpuDirectRDMACapable = 1;
            snprintf(key, sizeof key, "hvmm.create.%d.rdma", ltypes[t]);
            r = F(cuMemCreate)(&hb, MB2, &q2, 0);
            OUT(key, "%d", r);
            if (r == 0) F(cuMemRelease)(hb);
        }
        CUmemAllocationProp hpx = hp;
        hpx.location.type = CU_MEM_LOCATION_TYPE_HOST;
        hpx.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
        CUmemGenericAllocationHandle hh = 0, hn = 0, hd = 0, hr = 0;
        R("hvmm.create.host_posix", F(cuMemCreate)(&hh, MB2, &hpx, 0));
        hpx.requestedHandleTypes = 0;
        R("hvmm.create.host", F(cuMemCreate)(&hh, MB2, &hpx, 0));
        CUmemAllocationProp hpn = hp;
        hpn.location.type = CU_MEM_LOCATION_TYPE_HOST_NUMA;
        R("hvmm.create.numa0", F(cuMemCreate)(&hn, MB2, &hpn, 0));
        CUmemAllocationProp hpd = hp;
        hpd.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
        hpd.location.id = dev;
        R("hvmm.create.device", F(cuMemCreate)(&hd, MB2, &hpd, 0));
        CUmemAllocationProp back;
        memset(&back, 0x5a, sizeof back);
        R("hvmm.properties", F(cuMemGetAllocationPropertiesFromHandle)(&back, hh));
        OUT("hvmm.properties.values", "%d %d %d %d %d", (int)back.type, (int)back.requestedHandleTypes,
            (int)back.location.type, back.location.id, (int)back.allocFlags.gpuDirectRDMACapable);
        CUdeviceptr hv = 0;
        R("hvmm.reserve", F(cuMemAddressReserve)(&hv, 6 * MB2, 0, 0, 0));
        R("hvmm.map.host", F(cuMemMap)(hv, MB2, 0, hh, 0));
        R("hvmm.map.numa0", F(cuMemMap)(hv + MB2, MB2, 0, hn, 0));
        R("hvmm.map.device", F(cuMemMap)(hv + 2 * MB2, MB2, 0, hd, 0));
        int locs[4] = {CU_MEM_LOCATION_TYPE_DEVICE, CU_MEM_LOCATION_TYPE_HOST,
                       CU_MEM_LOCATION_TYPE_HOST_NUMA, CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT};
#define HVMM_ACCESS(tag, ptr)                                                            \
        for (int l = 0; l < 4; l++) {                                                      \
            CUmemLocation hl = {0};                                                        \
            hl.type = (CUmemLocationType)locs[l];                                          \
            hl.id = locs[l] == CU_MEM_LOCATION_TYPE_DEVICE ? dev : 0;                      \
            unsigned long long hf = 99;                                                    \
            int r = F(cuMemGetAccess)(&hf, &hl, ptr);                                      \
            snprintf(key, sizeof key, "hvmm.access.%s.%d", tag, locs[l]);                  \
            OUT(key, "%d %llu", r, r == 0 ? hf : 99);                                      \
        }
        HVMM_ACCESS("before", hv)
        CUmemAccessDesc hd1 = {0};
        hd1.location.type = CU_MEM_LOCATION_TYPE_DEVICE, hd1.location.id = dev;
        hd1.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
        R("hvmm.set.device", F(cuMemSetAccess)(hv, 3 * MB2, &hd1, 1));
        CUmemAccessDesc hd2 = hd1;
        hd2.location.type = CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT, hd2.location.id = 0;
        R("hvmm.set.numa_current", F(cuMemSetAccess)(hv, 2 * MB2, &hd2, 1));
        hd2.location.type = CU_MEM_LOCATION_TYPE_HOST_NUMA, hd2.location.id = 0;
        R("hvmm.set.host_on_device", F(cuMemSetAccess)(hv + 2 * MB2, MB2, &hd2, 1));
        R("hvmm.set.host_on_all", F(cuMemSetAccess)(hv, 3 * MB2, &hd2, 1));
        hd2.location.id = 7;
        hd2.flags = CU_MEM_ACCESS_FLAGS_PROT_READ;
        R("hvmm.set.read", F(cuMemSetAccess)(hv, 2 * MB2, &hd2, 1));
        HVMM_ACCESS("read", hv + MB2)
        hd2.location.type = CU_MEM_LOCATION_TYPE_HOST;
        hd2.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
        R("hvmm.set.host", F(cuMemSetAccess)(hv, 2 * MB2, &hd2, 1));
        HVMM_ACCESS("readwrite", hv + 100)
        HVMM_ACCESS("device", hv + 2 * MB2)
        OUT("hvmm.cpu.perms", "%s %s %s", cpu_perms(hv), cpu_perms(hv + MB2), cpu_perms(hv + 2 * MB2));
        // The CPU touches the memory only where the process maps it read-write.
        int hw = strcmp(cpu_perms(hv), "rw") == 0 && strcmp(cpu_perms(hv + MB2), "rw") == 0;
        R("hvmm.memset.two_allocations", F(cuMemsetD32)(hv, 0x11223344, MB2 / 2));
        R("hvmm.memset", F(cuMemsetD32)(hv, 0x11223344, MB2 / 4));
        R("hvmm.memset.numa0", F(cuMemsetD32)(hv + MB2, 0x11223344, MB2 / 4));
        R("hvmm.sync", F(cuCtxSynchronize)());
        static unsigned hz[(2u << 20) / 2];
        volatile unsigned *hc = hw ? (volatile unsigned *)(uintptr_t)hv : hz;
        OUT("hvmm.cpu.read", "%x %x", hc[0], hc[MB2 / 2 - 1]);
        hc[5] = 0xdeadbeef;
        hc[MB2 / 4 + 7] = 77;
        unsigned hx[8] = {0};
        R("hvmm.dtoh", F(cuMemcpyDtoH)(hx, hv, 32));
        OUT("hvmm.gpu.sees", "%x", hx[5]);
        R("hvmm.dtod", F(cuMemcpyDtoD)(hv + 2 * MB2, hv, MB2));
        R("hvmm.dtoh.device", F(cuMemcpyDtoH)(hx, hv + 2 * MB2 + 16, 8));
        OUT("hvmm.device.result", "%x %x", hx[0], hx[1]);
        unsigned hbase = 3, hcnt = 1024;
        CUdeviceptr hk = hv + MB2 + 4096;
        void *hargs[] = {&hk, &hbase, &hcnt};
        R("hvmm.launch", F(cuLaunchKernel)(iota, 8, 1, 1, 128, 1, 1, 0, 0, hargs, NULL));
        R("hvmm.sync2", F(cuCtxSynchronize)());
        OUT("hvmm.cpu.after_kernel", "%u %u %u", hc[MB2 / 4 + 1024], hc[MB2 / 4 + 1024 + 1023], hc[MB2 / 4 + 7]);
        // Pointer attributes of host and device memory at reserved addresses.
        int pattrs[] = {2, 3, 4, 6, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19};
        CUdeviceptr pptrs[2] = {hv + MB2 + 100, hv + 2 * MB2 + 100};
        for (int w = 0; w < 2; w++) {
            for (size_t a = 0; a < sizeof pattrs / sizeof pattrs[0]; a++) {
                unsigned long long pv = 0;
                int r = F(cuPointerGetAttribute)(&pv, (CUpointer_attribute)pattrs[a], pptrs[w]);
                unsigned long long shown = pv;
                if (pattrs[a] == 3 || pattrs[a] == 4 || pattrs[a] == 11 || pattrs[a] == 19)
                    shown = pv - pptrs[w] + 100; // offsets from the reservation's mapping
                if (pattrs[a] == 17) shown = pv != 0;
                snprintf(key, sizeof key, "hvmm.pointer.%s.%d", w ? "device" : "host", pattrs[a]);
                OUT(key, "%d %llu", r, r == 0 ? shown : 0);
            }
            CUdeviceptr rb = 0;
            size_t rs = 0;
            int r = F(cuMemGetAddressRange)(&rb, &rs, pptrs[w]);
            fprintf(stderr, "difftest: hvmm.address_range.%s: base %#llx size %zu for %#llx (reserved at %#llx)\n",
                    w ? "device" : "host", (unsigned long long)rb, rs, (unsigned long long)pptrs[w],
                    (unsigned long long)hv);
            snprintf(key, sizeof key, "hvmm.address_range.%s", w ? "device" : "host");
            OUT(key, "%d %lld %zu", r, r == 0 ? (long long)(pptrs[w] - rb) : 0, rs);
        }
        R("hvmm.retain", F(cuMemRetainAllocationHandle)(&hr, (void *)(uintptr_t)(hv + MB2 + 8)));
        OUT("hvmm.retain.same", "%d", (int)(hr == hn));
        memset(&back, 0x5a, sizeof back);
        R("hvmm.retain.properties", F(cuMemGetAllocationPropertiesFromHandle)(&back, hr));
        OUT("hvmm.retain.properties.values", "%d %d %d %d", (int)back.type, (int)back.requestedHandleTypes,
            (int)back.location.type, back.location.id);
        R("hvmm.release.retained", F(cuMemRelease)(hr));
        hd2.location.type = CU_MEM_LOCATION_TYPE_HOST_NUMA;
        hd2.flags = CU_MEM_ACCESS_FLAGS_PROT_NONE;
        R("hvmm.set.none", F(cuMemSetAccess)(hv + MB2, MB2, &hd2, 1));
        HVMM_ACCESS("none", hv + MB2)
        HVMM_ACCESS("kept", hv)
        OUT("hvmm.cpu.perms.after_none", "%s %s", cpu_perms(hv), cpu_perms(hv + MB2));
#undef HVMM_ACCESS
        R("hvmm.release.host", F(cuMemRelease)(hh));
        R("hvmm.release.numa0", F(cuMemRelease)(hn));
        R("hvmm.release.device", F(cuMemRelease)(hd));
        OUT("hvmm.cpu.after_release", "%x", hc[5]);
        R("hvmm.unmap", F(cuMemUnmap)(hv, 3 * MB2));
        OUT("hvmm.cpu.perms.after_unmap", "%s", cpu_perms(hv));
        R("hvmm.free", F(cuMemAddressFree)(hv, 6 * MB2));
    }

    // Stream capture is never active here.
    {
        CUstreamCaptureStatus cs = (CUstreamCaptureStatus)9;
        R("capture.cuStreamIsCapturing", F(cuStreamIsCapturing)(s1, &cs));
        OUT("capture.status", "%d", (int)cs);
    }

    // Peer access: with one GPU only the refusals for a device and itself.
    {
        int can = -1, pv = -1;
        R("peer.cuDeviceCanAccessPeer.self", F(cuDeviceCanAccessPeer)(&can, dev, dev));
        R("peer.cuDeviceGetP2PAttribute.self", F(cuDeviceGetP2PAttribute)(&pv, CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED, dev, dev));
        OUT("peer.two_devices", "%d", count >= 2);
        if (count >= 2) {
            CUdevice d1 = 0;
            F(cuDeviceGet)(&d1, 1);
            R("peer.cuDeviceCanAccessPeer", F(cuDeviceCanAccessPeer)(&can, dev, d1));
            OUT("peer.can_access", "%d", can);
            for (int a = 1; a <= 4; a++) {
                pv = -1;
                int r = F(cuDeviceGetP2PAttribute)(&pv, (CUdevice_P2PAttribute)a, dev, d1);
                snprintf(key, sizeof key, "peer.p2p_attribute.%d", a);
                OUT(key, "%d %d", r, pv);
            }
            CUcontext pc1 = NULL;
            R("peer.cuCtxCreate", ((CUresult(*)(CUcontext *, unsigned, CUdevice))sym("cuCtxCreate_v2"))(&pc1, 0, d1));
            CUdeviceptr p1 = 0;
            R("peer.cuMemAlloc", F(cuMemAlloc)(&p1, N * 4));
            R("peer.cuMemcpyHtoD", F(cuMemcpyHtoD)(p1, h, N * 4));
            F(cuCtxSetCurrent)(c0);
            F(cuMemsetD32)(dy, 0, N);
            R("peer.dtod_without_access", F(cuMemcpyDtoD)(dy, p1, N * 4));
            F(cuMemcpyDtoH)(h2, dy, N * 4);
            OUT("peer.dtod_without_access.result", "%016llx", fnv(h2, N * 4));
            F(cuMemsetD32)(dy, 0, N);
            R("peer.cuMemcpyPeer", F(cuMemcpyPeer)(dy, c0, p1, pc1, N * 4));
            F(cuMemcpyDtoH)(h2, dy, N * 4);
            OUT("peer.cuMemcpyPeer.result", "%016llx", fnv(h2, N * 4));
            if (can) {
                R("peer.cuCtxEnablePeerAccess", F(cuCtxEnablePeerAccess)(pc1, 0));
                R("peer.cuCtxEnablePeerAccess.again", F(cuCtxEnablePeerAccess)(pc1, 0));
                F(cuMemsetD32)(dy, 0, N);
                R("peer.dtod_with_access", F(cuMemcpyDtoD)(dy, p1, N * 4));
                F(cuMemcpyDtoH)(h2, dy, N * 4);
                OUT("peer.dtod_with_access.result", "%016llx", fnv(h2, N * 4));
                R("peer.cuCtxDisablePeerAccess", F(cuCtxDisablePeerAccess)(pc1));
                R("peer.cuCtxDisablePeerAccess.again", F(cuCtxDisablePeerAccess)(pc1));
            }
            F(cuCtxSetCurrent)(pc1);
            R("peer.cuMemFree", F(cuMemFree)(p1));
            R("peer.cuCtxDestroy", F(cuCtxDestroy)(pc1));
            F(cuCtxSetCurrent)(c0);
        }
    }

    R("cuEventDestroy", F(cuEventDestroy)(e1));
    R("cuStreamDestroy", F(cuStreamDestroy)(s1));
    R("cuStreamDestroy.non_blocking", F(cuStreamDestroy)(s2));
    R("cuMemFreeHost", F(cuMemFreeHost)(pinned));
    R("cuModuleUnload", F(cuModuleUnload)(m));
    R("cuMemFree", F(cuMemFree)(d));
    R("cuMemFree.again", F(cuMemFree)(d));
    R("cuMemFree.second", F(cuMemFree)(d2));
    R("cuCtxDestroy", F(cuCtxDestroy)(c0));
    return 0;
}

int main(int argc, char **argv) {
    if (argc == 5) {
        g_out = stdout;
        return run(argv[1], argv[2], argv[3], argv[4]);
    }
    if (argc == 8) {
        for (int i = 0; i < 2; i++) {
            g_out = fopen(argv[6 + i], "w");
            if (!g_out) {
                perror(argv[6 + i]);
                return 2;
            }
            fprintf(stderr, "difftest: %s (in this process: %s)\n", argv[1 + i],
                    i ? argv[1] : "nothing else");
            int r = run(argv[1 + i], argv[3], argv[4], argv[5]);
            fclose(g_out);
            if (r) return r;
        }
        return 0;
    }
    fprintf(stderr,
            "usage: difftest <libcuda> <kernels.cubin> <kernels.ptx> <kernels.fatbin>\n"
            "       difftest <libcuda A> <libcuda B> <kernels.cubin> <kernels.ptx> <kernels.fatbin> "
            "<out A> <out B>\n");
    return 2;
}
