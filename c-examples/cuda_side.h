/* libcuda's side of the C benchmark (`bench.c`): the same measurements through the CUDA driver
 * API, in the same process, so that every row can show libcuda's figure beside ours.
 *
 * libcuda is loaded with dlopen("libcuda.so.1") at run time; the examples never link it. When
 * it is missing (CI, a machine without the NVIDIA driver), cannot initialise, or a call fails,
 * the functions return a negative value and the benchmark prints "-" in libcuda's column.
 * The declarations below are the driver API's documented C signatures and the layout of
 * CUDA_KERNEL_NODE_PARAMS (v1); nothing from the CUDA headers is needed to build. */
#ifndef TEGRAGPU_EXAMPLES_CUDA_SIDE_H
#define TEGRAGPU_EXAMPLES_CUDA_SIDE_H

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef int cu_result;
typedef void *cu_handle;
typedef unsigned long long cu_ptr;

typedef struct {
    cu_handle func;
    unsigned grid[3], block[3], shared_bytes;
    void **params;
    void **extra;
} cu_kernel_node_params;

typedef struct {
    void *lib;
    cu_handle ctx, module, empty, increment, stream;
    cu_result (*launch)(cu_handle, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                        unsigned, cu_handle, void **, void **);
    cu_result (*sync)(cu_handle);
    cu_result (*alloc)(cu_ptr *, size_t);
    cu_result (*free)(cu_ptr);
    cu_result (*dtod)(cu_ptr, cu_ptr, size_t, cu_handle);
    cu_result (*memset8)(cu_ptr, unsigned char, size_t);
    cu_result (*dtoh)(void *, cu_ptr, size_t);
    cu_result (*begin_capture)(cu_handle, int);
    cu_result (*end_capture)(cu_handle, cu_handle *);
    cu_result (*instantiate)(cu_handle *, cu_handle, unsigned long long);
    cu_result (*graph_launch)(cu_handle, cu_handle);
    cu_result (*graph_nodes)(cu_handle, cu_handle *, size_t *);
    cu_result (*set_node_params)(cu_handle, cu_handle, const cu_kernel_node_params *);
    cu_result (*graph_exec_destroy)(cu_handle);
    cu_result (*graph_destroy)(cu_handle);
} cuda_side;

static inline uint64_t cuda_side_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline void *cuda_side_sym(void *lib, const char *name, int *missing) {
    void *p = dlsym(lib, name);
    if (p == NULL) {
        fprintf(stderr, "libcuda: no %s\n", name);
        *missing = 1;
    }
    return p;
}

/* Load libcuda, create a context on device 0 and load `cubin` (the fixture module, which has
 * `empty_kernel` and `increment`). Returns 0 on success, -1 (with a note on stderr) otherwise. */
static inline int cuda_side_open(cuda_side *c, const void *cubin) {
    cu_result (*init)(unsigned);
    cu_result (*device_get)(int *, int);
    cu_result (*primary_retain)(cu_handle *, int);
    cu_result (*set_current)(cu_handle);
    cu_result (*module_load)(cu_handle *, const void *);
    cu_result (*get_function)(cu_handle *, cu_handle, const char *);
    cu_result (*stream_create)(cu_handle *, unsigned);
    int missing = 0, dev = 0;

    memset(c, 0, sizeof *c);
    c->lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (c->lib == NULL) return -1;
#define CUDA_SIDE_SYM(field, name) *(void **)(&(field)) = cuda_side_sym(c->lib, name, &missing)
    CUDA_SIDE_SYM(init, "cuInit");
    CUDA_SIDE_SYM(device_get, "cuDeviceGet");
    CUDA_SIDE_SYM(primary_retain, "cuDevicePrimaryCtxRetain");
    CUDA_SIDE_SYM(set_current, "cuCtxSetCurrent");
    CUDA_SIDE_SYM(module_load, "cuModuleLoadData");
    CUDA_SIDE_SYM(get_function, "cuModuleGetFunction");
    CUDA_SIDE_SYM(stream_create, "cuStreamCreate");
    CUDA_SIDE_SYM(c->launch, "cuLaunchKernel");
    CUDA_SIDE_SYM(c->sync, "cuStreamSynchronize");
    CUDA_SIDE_SYM(c->alloc, "cuMemAlloc_v2");
    CUDA_SIDE_SYM(c->free, "cuMemFree_v2");
    CUDA_SIDE_SYM(c->dtod, "cuMemcpyDtoDAsync_v2");
    CUDA_SIDE_SYM(c->memset8, "cuMemsetD8_v2");
    CUDA_SIDE_SYM(c->dtoh, "cuMemcpyDtoH_v2");
    CUDA_SIDE_SYM(c->begin_capture, "cuStreamBeginCapture_v2");
    CUDA_SIDE_SYM(c->end_capture, "cuStreamEndCapture");
    CUDA_SIDE_SYM(c->instantiate, "cuGraphInstantiateWithFlags");
    CUDA_SIDE_SYM(c->graph_launch, "cuGraphLaunch");
    CUDA_SIDE_SYM(c->graph_nodes, "cuGraphGetNodes");
    CUDA_SIDE_SYM(c->set_node_params, "cuGraphExecKernelNodeSetParams");
    CUDA_SIDE_SYM(c->graph_exec_destroy, "cuGraphExecDestroy");
    CUDA_SIDE_SYM(c->graph_destroy, "cuGraphDestroy");
#undef CUDA_SIDE_SYM
    if (missing) goto fail;
    if (init(0) != 0 || device_get(&dev, 0) != 0 || primary_retain(&c->ctx, dev) != 0 ||
        set_current(c->ctx) != 0) {
        fprintf(stderr, "libcuda: no usable device 0 (cuInit / cuDevicePrimaryCtxRetain failed)\n");
        goto fail;
    }
    /* CU_STREAM_NON_BLOCKING = 1 */
    if (module_load(&c->module, cubin) != 0 || get_function(&c->empty, c->module, "empty_kernel") != 0 ||
        get_function(&c->increment, c->module, "increment") != 0 || stream_create(&c->stream, 1) != 0) {
        fprintf(stderr, "libcuda: loading the fixture module failed\n");
        goto fail;
    }
    return 0;
fail:
    dlclose(c->lib);
    c->lib = NULL;
    return -1;
}

static inline int cuda_side_empty(cuda_side *c) {
    return c->launch(c->empty, 1, 1, 1, 32, 1, 1, 0, c->stream, NULL, NULL) == 0 ? 0 : -1;
}

/* Launch + cuStreamSynchronize of the empty kernel, `reps` times after 50 untimed; latencies in
 * ns into `lat`. */
static inline int cuda_side_latency(cuda_side *c, uint64_t *lat, unsigned reps) {
    for (unsigned i = 0; i < reps + 50; i++) {
        uint64_t t0 = cuda_side_now_ns();
        if (cuda_side_empty(c) != 0 || c->sync(c->stream) != 0) return -1;
        if (i >= 50) lat[i - 50] = cuda_side_now_ns() - t0;
    }
    return 0;
}

/* CPU µs per cuLaunchKernel over `n` launches, not waiting (the stream is drained after). */
static inline double cuda_side_launch_cpu(cuda_side *c, unsigned n) {
    uint64_t t0 = cuda_side_now_ns();
    for (unsigned i = 0; i < n; i++)
        if (cuda_side_empty(c) != 0) return -1;
    double us = (double)(cuda_side_now_ns() - t0) / 1e3 / n;
    return c->sync(c->stream) == 0 ? us : -1;
}

/* ms from the first of `n` launches until the stream has run them all. */
static inline double cuda_side_dependent(cuda_side *c, unsigned n) {
    uint64_t t0 = cuda_side_now_ns();
    for (unsigned i = 0; i < n; i++)
        if (cuda_side_empty(c) != 0) return -1;
    if (c->sync(c->stream) != 0) return -1;
    return (double)(cuda_side_now_ns() - t0) / 1e6;
}

/* GB/s of cuMemcpyDtoDAsync of `bytes`: CPU wall time of copy + synchronize, best of 5 (the
 * same method as ours in bench.c). */
static inline double cuda_side_copy(cuda_side *c, uint64_t bytes) {
    cu_ptr a = 0, b = 0;
    double best = 1e30;
    if (c->alloc(&a, bytes) != 0) return -1;
    if (c->alloc(&b, bytes) != 0) {
        c->free(a);
        return -1;
    }
    for (int i = 0; i < 6; i++) { /* the first one untimed */
        uint64_t t0 = cuda_side_now_ns();
        if (c->dtod(b, a, bytes, c->stream) != 0 || c->sync(c->stream) != 0) {
            best = -1;
            break;
        }
        double s = (double)(cuda_side_now_ns() - t0) / 1e9;
        if (i > 0 && s < best) best = s;
    }
    c->free(a);
    c->free(b);
    return best > 0 ? (double)bytes / best / 1e9 : -1;
}

/* µs of one cuMemAlloc + cuMemFree of `bytes`. */
static inline double cuda_side_alloc_free(cuda_side *c, uint64_t bytes) {
    cu_ptr p = 0;
    uint64_t t0 = cuda_side_now_ns();
    if (c->alloc(&p, bytes) != 0) return -1;
    if (c->free(p) != 0) return -1;
    return (double)(cuda_side_now_ns() - t0) / 1e3;
}

/* libcuda's graph of `chain` dependent increments of one counter (stream capture, instantiated
 * once), driven one step at a time so that bench.c can alternate it with ours. */
typedef struct {
    cu_ptr counter;
    cu_handle graph, exec, middle;
    unsigned chain;
    unsigned long long expect;
} cuda_chain;

/* Build the graph. Returns 0, or -1 when a call failed (the graph is then unusable). */
static inline int cuda_chain_open(cuda_side *c, cuda_chain *g, unsigned chain) {
    unsigned long long a0, a1 = 1;
    void *args[2] = {&a0, &a1};
    cu_handle *nodes = NULL;
    size_t n = 0;
    int rc = -1;
    memset(g, 0, sizeof *g);
    g->chain = chain;
    if (c->alloc(&g->counter, 4096) != 0) return -1;
    a0 = g->counter;
    if (c->memset8(g->counter, 0, 4096) != 0) return -1;
    if (c->begin_capture(c->stream, 2 /* CU_STREAM_CAPTURE_MODE_RELAXED */) != 0) return -1;
    for (unsigned i = 0; i < chain; i++)
        if (c->launch(c->increment, 1, 1, 1, 32, 1, 1, 0, c->stream, args, NULL) != 0) {
            c->end_capture(c->stream, &g->graph);
            return -1;
        }
    if (c->end_capture(c->stream, &g->graph) != 0 || c->instantiate(&g->exec, g->graph, 0) != 0)
        return -1;
    if (c->graph_nodes(g->graph, NULL, &n) != 0 || n != chain) return -1;
    nodes = calloc(n, sizeof *nodes);
    if (nodes != NULL && c->graph_nodes(g->graph, nodes, &n) == 0) {
        g->middle = nodes[chain / 2];
        rc = 0;
    }
    free(nodes);
    return rc;
}

/* CPU µs per cuGraphLaunch over `n` launches, not waiting (the stream is drained after); -1 on
 * failure. */
static inline double cuda_chain_cpu(cuda_side *c, cuda_chain *g, unsigned n) {
    uint64_t t0 = cuda_side_now_ns();
    for (unsigned i = 0; i < n; i++, g->expect += g->chain)
        if (c->graph_launch(g->exec, c->stream) != 0) return -1;
    double us = (double)(cuda_side_now_ns() - t0) / 1e3 / n;
    return c->sync(c->stream) == 0 ? us : -1;
}

/* µs from cuGraphLaunch to the end of cuStreamSynchronize; -1 on failure. */
static inline double cuda_chain_wall(cuda_side *c, cuda_chain *g) {
    uint64_t t0 = cuda_side_now_ns();
    if (c->graph_launch(g->exec, c->stream) != 0 || c->sync(c->stream) != 0) return -1;
    g->expect += g->chain;
    return (double)(cuda_side_now_ns() - t0) / 1e3;
}

/* CPU µs of cuGraphExecKernelNodeSetParams (the middle node adds `by`) + cuGraphLaunch; the
 * stream is drained after; -1 on failure. */
static inline double cuda_chain_update(cuda_side *c, cuda_chain *g, unsigned long long by) {
    unsigned long long b0 = g->counter, b1 = by;
    void *bargs[2] = {&b0, &b1};
    cu_kernel_node_params p = {c->increment, {1, 1, 1}, {32, 1, 1}, 0, bargs, NULL};
    uint64_t t0 = cuda_side_now_ns();
    if (c->set_node_params(g->exec, g->middle, &p) != 0 || c->graph_launch(g->exec, c->stream) != 0)
        return -1;
    double us = (double)(cuda_side_now_ns() - t0) / 1e3;
    if (c->sync(c->stream) != 0) return -1;
    g->expect += g->chain - 1 + by;
    return us;
}

/* 0 when the counter holds every increment so far, else -1 (with a note on stderr). */
static inline int cuda_chain_check(cuda_side *c, cuda_chain *g) {
    unsigned long long got = 0;
    if (c->sync(c->stream) != 0 || c->dtoh(&got, g->counter, sizeof got) != 0) return -1;
    if (got != g->expect) {
        fprintf(stderr, "libcuda graph: counter %llu, expected %llu\n", got, g->expect);
        return -1;
    }
    return 0;
}

static inline void cuda_chain_close(cuda_side *c, cuda_chain *g) {
    if (g->exec != NULL) c->graph_exec_destroy(g->exec);
    if (g->graph != NULL) c->graph_destroy(g->graph);
    if (g->counter != 0) c->free(g->counter);
    memset(g, 0, sizeof *g);
}

#endif
