// Differential test of a libcuda: `difftest <libcuda path> <kernels.cubin> <kernels.ptx>
// <kernels.fatbin>` loads the library by path, drives the CUDA driver API and prints one line per
// observation (`key value`). scripts/cuda-facade-device-run.sh runs it on NVIDIA's libcuda and on
// libtegragpu's and compares the two outputs line by line. Values that legitimately differ
// between two runs of one driver (addresses, times) are printed as facts about them (non-zero,
// non-negative) instead.
//
// Built on the device machine against the CUDA toolkit's cuda.h:
//   gcc -O1 -I/usr/local/cuda/include difftest.c -o difftest -ldl
#define _GNU_SOURCE
#include <cuda.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
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

#define OUT(key, fmt, ...) printf("%s " fmt "\n", key, __VA_ARGS__)
#define R(key, call) OUT(key, "%d", (int)(call))

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

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: difftest <libcuda> <kernels.cubin> <kernels.ptx> <kernels.fatbin>\n");
        return 2;
    }
    lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
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
    size_t mfree = 0, mtotal = 0;
    R("cuMemGetInfo", F(cuMemGetInfo)(&mfree, &mtotal));
    OUT("mem_info", "%d %d", mtotal == total, mfree > 0 && mfree <= mtotal);
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
    const char *paths[3] = {argv[2], argv[3], argv[4]};
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
    R("cuModuleLoad.file", F(cuModuleLoad)(&mf, argv[2]));
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
