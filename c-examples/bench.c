/* bench: the tegragpu-bench rows measured through the C API, with libcuda's figures beside ours
 * when libcuda is installed (loaded with dlopen into the same process; cuda_side.h): empty-kernel
 * launch + wait p50/p99, a signal-only round trip, CPU cost per launch (submit each / one
 * submit for the burst), a burst of dependent launches until the last completes, copy
 * bandwidth (copy engine and SM copy kernel), replay of a 100-kernel chain (command buffer
 * against a CUDA graph), and allocate + free. Each row prints ours, libcuda's, the ratio and
 * the target. Checks every result it relies on.
 * usage: bench [device-spec] [burst]   (burst defaults to 10000; 1000 on the emulated Orin)
 * TEGRAGPU_BENCH_CUDA=0 leaves libcuda out; it is always left out on the emulated Orin. */
#include "common.h"
#include "cuda_side.h"

#define CHAIN 100u

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static double pct(uint64_t *v, unsigned n, unsigned p) {
    unsigned i = (n * p) / 100;
    qsort(v, n, sizeof *v, cmp_u64);
    return (double)v[i < n ? i : n - 1] / 1e3;
}

/* One row: ours, libcuda's (< 0: none), the ratio, and the target on that ratio (`limit` <= 0:
 * no target; `at_least`: ratio >= limit passes, else ratio <= limit). */
static void row(const char *name, double ours, double cuda, const char *target, double limit,
                int at_least) {
    char cbuf[32] = "-", rbuf[32] = "-";
    const char *result = "-";
    if (cuda > 0) {
        double r = ours / cuda;
        snprintf(cbuf, sizeof cbuf, "%.3f", cuda);
        snprintf(rbuf, sizeof rbuf, "%.3f", r);
        if (limit > 0) result = (at_least ? r >= limit : r <= limit) ? "pass" : "miss";
    }
    printf("  %-52s %10.3f %10s %7s  %-10s %s\n", name, ours, cbuf, rbuf, target ? target : "-", result);
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The median of v[0..n) (sorts v). */
static double median(double *v, unsigned n) {
    qsort(v, n, sizeof *v, cmp_double);
    return v[n / 2];
}

/* Rounds of the CPU-cost rows: the sides take turns, ROUNDS times, burst / ROUNDS launches (or
 * replays) each, the first of each turn rotating; each row is the median of its rounds. */
#define ROUNDS 8u

/* Ours: a command buffer of CHAIN dependent increments of one counter and a signal, replayed
 * (libcuda's side, cuda_chain in cuda_side.h, does the same with a graph), one step at a time. */
typedef struct {
    tg_queue *q;
    tg_kernel *inc;
    tg_buf *counter;
    tg_cmdbuf *cb;
    tg_signal *done;
    uint32_t sig_node;
    uint64_t va, next, expect;
} our_chain;

static void our_chain_open(our_chain *g, tg_device *dev, tg_queue *q, tg_kernel *inc) {
    tg_launch_config one = launch_config(1, 1, 32, 1, 0);
    uint64_t p[2];
    memset(g, 0, sizeof *g);
    g->q = q;
    g->inc = inc;
    CHECK(tg_buf_alloc(dev, 4096, TG_BUF_DEVICE_LOCAL | TG_BUF_ZEROED, &g->counter));
    CHECK(tg_buf_gpu_address(g->counter, &g->va));
    CHECK(tg_signal_create(dev, 0, &g->done));
    CHECK(tg_cmdbuf_create_owned(dev, &g->cb));
    p[0] = g->va;
    p[1] = 1;
    for (unsigned i = 0; i < CHAIN; i++) CHECK(tg_cmdbuf_launch(g->cb, inc, &one, p, sizeof p, NULL));
    CHECK(tg_cmdbuf_signal(g->cb, g->done, 0, &g->sig_node));
    CHECK(tg_cmdbuf_finish(g->cb));
}

/* CPU µs per replay + submit over n replays, not waiting (the queue is drained after). */
static double our_chain_cpu(our_chain *g, unsigned n) {
    uint64_t t0 = now_ns();
    for (unsigned i = 0; i < n; i++, g->expect += CHAIN) {
        CHECK(tg_queue_replay_submit(g->q, g->cb));
    }
    double us = (double)(now_ns() - t0) / 1e3 / n;
    CHECK(tg_queue_synchronize(g->q, TIMEOUT_NS));
    return us;
}

/* µs from the replay to the CPU seeing the chain's signal. */
static double our_chain_wall(our_chain *g) {
    CHECK(tg_cmdbuf_set_value(g->cb, g->sig_node, ++g->next));
    uint64_t t0 = now_ns();
    CHECK(tg_queue_replay_submit(g->q, g->cb));
    CHECK(tg_signal_wait(g->done, g->next, TIMEOUT_NS));
    g->expect += CHAIN;
    return (double)(now_ns() - t0) / 1e3;
}

/* CPU µs of setting the middle launch's increment to `by`, then replay + submit. */
static double our_chain_update(our_chain *g, uint64_t by) {
    uint64_t np[2] = {g->va, by};
    CHECK(tg_cmdbuf_set_value(g->cb, g->sig_node, ++g->next));
    uint64_t t0 = now_ns();
    CHECK(tg_cmdbuf_set_params(g->cb, CHAIN / 2, g->inc, np, sizeof np));
    CHECK(tg_queue_replay_submit(g->q, g->cb));
    double us = (double)(now_ns() - t0) / 1e3;
    CHECK(tg_signal_wait(g->done, g->next, TIMEOUT_NS));
    g->expect += CHAIN - 1 + by;
    return us;
}

/* 0 when the counter holds every increment so far; destroys the chain's objects. */
static int our_chain_close(our_chain *g) {
    uint64_t got = 0;
    void *cpu = NULL;
    CHECK(tg_queue_synchronize(g->q, TIMEOUT_NS));
    CHECK(tg_buf_cpu_ptr(g->counter, &cpu));
    memcpy(&got, cpu, sizeof got);
    CHECK(tg_cmdbuf_destroy(g->cb));
    CHECK(tg_signal_destroy(g->done));
    CHECK(tg_buf_free(g->counter));
    if (got != g->expect) {
        fprintf(stderr, "bench: replay counter %llu, expected %llu\n", (unsigned long long)got,
                (unsigned long long)g->expect);
        return -1;
    }
    return 0;
}

/* The replay rows: ours and libcuda's graph (when `cu` is not NULL) take turns: 20 untimed
 * replays each, the CPU cost in ROUNDS rounds of reps / ROUNDS replays, then replays to
 * completion and updates + replays one at a time, in the same rounds. out[0] = CPU µs per replay (median of
 * the rounds), out[1] = p50 µs to completion, out[2] = p50 CPU µs of update + replay; cout[] the
 * same for libcuda (-1 when it failed). `scratch` holds 2 * reps doubles. */
static int replay_rows(tg_device *dev, tg_queue *q, tg_kernel *inc, cuda_side *cu, unsigned reps,
                       double *scratch, double out[3], double cout[3]) {
    our_chain g;
    cuda_chain cg;
    unsigned i, j, r, per = reps / ROUNDS, cn = 0;
    double *mine = scratch, *theirs = scratch + reps;
    int cok = cu != NULL && cuda_chain_open(cu, &cg, CHAIN) == 0, rc;
    if (cu != NULL && !cok) fprintf(stderr, "bench: libcuda's graph could not be built\n");
    our_chain_open(&g, dev, q, inc);
    cout[0] = cout[1] = cout[2] = -1;
    for (i = 0; i < 20; i++) {
        our_chain_wall(&g);
        if (cok && cuda_chain_wall(cu, &cg) < 0) cok = 0;
    }
    for (r = 0; r < ROUNDS; r++) {
        if (r % 2 == 0) mine[r] = our_chain_cpu(&g, per);
        if (cok && (theirs[r] = cuda_chain_cpu(cu, &cg, per)) < 0) cok = 0;
        if (r % 2 == 1) mine[r] = our_chain_cpu(&g, per);
    }
    out[0] = median(mine, ROUNDS);
    if (cok) cout[0] = median(theirs, ROUNDS);
    /* Replays to completion and updates in blocks of `per` per side: the GPU switches between
     * the libraries' contexts only between blocks. */
    for (r = 0, i = 0; r < ROUNDS; r++) {
        if (r % 2 == 0)
            for (j = 0; j < per; j++) mine[i + j] = our_chain_wall(&g);
        for (j = 0; j < per && cok; j++)
            if ((theirs[i + j] = cuda_chain_wall(cu, &cg)) < 0) cok = 0;
        if (r % 2 == 1)
            for (j = 0; j < per; j++) mine[i + j] = our_chain_wall(&g);
        i += per;
    }
    out[1] = median(mine, i);
    if (cok) cout[1] = median(theirs, i);
    for (r = 0, i = 0; r < ROUNDS; r++) {
        if (r % 2 == 0)
            for (j = 0; j < per; j++) mine[i + j] = our_chain_update(&g, 1 + j % 2);
        for (j = 0; j < per && cok; j++)
            if ((theirs[i + j] = cuda_chain_update(cu, &cg, 1 + j % 2)) < 0) cok = 0;
        if (r % 2 == 1)
            for (j = 0; j < per; j++) mine[i + j] = our_chain_update(&g, 1 + j % 2);
        i += per;
        cn = i;
    }
    out[2] = median(mine, cn);
    if (cok) cout[2] = median(theirs, cn);
    if (cok && cuda_chain_check(cu, &cg) != 0) cout[0] = cout[1] = cout[2] = -1;
    if (cu != NULL) cuda_chain_close(cu, &cg);
    rc = our_chain_close(&g);
    if (!cok) cout[0] = cout[1] = cout[2] = -1;
    return rc;
}

/* Ours: copy `bytes` on `xq` (copy engine on a copy queue, SM copy kernel on a compute queue):
 * CPU wall time of copy + signal + wait, best of 5 after one untimed; GB/s. */
static double copy_ours(tg_device *dev, tg_queue *xq, tg_signal *sig, uint64_t *next, uint64_t bytes,
                        int *bad, const char *what) {
    tg_buf *a = NULL, *b = NULL;
    double best = 1e30;
    unsigned char *pa, *pb;
    CHECK(tg_buf_alloc(dev, bytes, TG_BUF_DEVICE_LOCAL, &a));
    CHECK(tg_buf_alloc(dev, bytes, TG_BUF_DEVICE_LOCAL, &b));
    pa = buf_ptr(a);
    pb = buf_ptr(b);
    pa[0] = 0x5a;
    pa[bytes - 1] = 0xa5;
    pb[0] = 0;
    pb[bytes - 1] = 0;
    for (int i = 0; i < 6; i++) {
        uint64_t t0 = now_ns();
        CHECK(tg_queue_copy(xq, b, 0, a, 0, bytes));
        CHECK(tg_queue_signal(xq, sig, ++*next));
        CHECK(tg_queue_submit(xq));
        CHECK(tg_signal_wait(sig, *next, TIMEOUT_NS));
        double s = (double)(now_ns() - t0) / 1e9;
        if (i > 0 && s < best) best = s;
    }
    if (pb[0] != 0x5a || pb[bytes - 1] != 0xa5) {
        fprintf(stderr, "bench: copy (%s) did not copy\n", what);
        *bad = 1;
    }
    CHECK(tg_buf_free(a));
    CHECK(tg_buf_free(b));
    return (double)bytes / best / 1e9;
}

int main(int argc, char **argv) {
    tg_device_info info;
    tg_device *dev = open_device(argc, argv, &info);
    unsigned burst = argc > 2 ? (unsigned)strtoul(argv[2], NULL, 0) : (info.emulated ? 1000u : 10000u);
    unsigned reps = info.emulated ? 200u : 2000u, rreps = info.emulated ? 24u : 400u, i;
    char path[4096];
    tg_module *mod = NULL;
    tg_kernel *k = NULL, *inc = NULL;
    tg_queue *q = NULL, *lq = NULL, *cq = NULL;
    tg_signal *sig = NULL;
    tg_launch_config cfg = launch_config(1, 1, 32, 1, 0);
    uint64_t next = 0, t0, *lat, value = 0;
    double c50 = -1, c99 = -1, o50, o99, floor50, cpu_each, cpu_fused, cpu_one, dep, ccpu = -1, cdep = -1;
    double rep_o[3] = {0, 0, 0}, rep_c[3] = {-1, -1, -1}, *rscratch = NULL;
    int bad = 0, have_cuda = 0;
    const char *no_cuda = getenv("TEGRAGPU_BENCH_CUDA");
    cuda_side cu;
    void *cubin = NULL;

    if (burst < 16) burst = 16;
    lat = calloc(reps > burst ? reps : burst, sizeof *lat);
    rscratch = calloc(2 * rreps, sizeof *rscratch);
    if (lat == NULL || rscratch == NULL) return 1;
    fixture_cubin(&info, path, sizeof path);
    CHECK(tg_module_load_file(dev, path, &mod));
    CHECK(tg_module_get_kernel(mod, "empty_kernel", &k));
    CHECK(tg_module_get_kernel(mod, "increment", &inc));
    /* Deep enough for the whole burst: the CPU-cost rows time recording, not ring waits. Owned
     * by this thread (no lock per call), as tegragpu-bench's queue is; the shared-queue row
     * below shows the cost of a queue any thread may use. */
    CHECK(tg_queue_create_owned(dev, TG_QUEUE_COMPUTE, 16384, &q));
    /* The latency rows run on a queue of the default depth, as an application's: a launch + wait
     * then reuses the same few QMD slots and ring pages. On the 16384-deep queue every launch
     * takes a slot the GPU has not read before, which lengthens the tail (docs/performance.md). */
    CHECK(tg_queue_create_owned(dev, TG_QUEUE_COMPUTE, 0, &lq));
    CHECK(tg_signal_create(dev, 0, &sig));

    if (!info.emulated && !(no_cuda != NULL && strcmp(no_cuda, "0") == 0)) {
        FILE *f = fopen(path, "rb");
        long size = 0;
        if (f != NULL && fseek(f, 0, SEEK_END) == 0 && (size = ftell(f)) > 0 && fseek(f, 0, SEEK_SET) == 0) {
            cubin = malloc((size_t)size);
            if (cubin != NULL && fread(cubin, 1, (size_t)size, f) == (size_t)size)
                have_cuda = cuda_side_open(&cu, cubin) == 0;
        }
        if (f != NULL) fclose(f);
    }
    printf("bench: %s (sm_%u%u, %u SMs, %s); libcuda: %s\n", info.name, info.sm_major, info.sm_minor,
           info.sm_count, backend_name(&info), have_cuda ? "same process" : "not used");
    printf("  %-52s %10s %10s %7s  %-10s %s\n", "row", "tegragpu", "libcuda", "ratio", "target", "result");

    /* 1. Empty launch + wait. */
    for (i = 0; i < reps + 50; i++) {
        t0 = now_ns();
        CHECK(tg_launch(lq, k, &cfg, NULL, 0));
        CHECK(tg_queue_signal(lq, sig, ++next));
        CHECK(tg_queue_submit(lq));
        CHECK(tg_signal_wait(sig, next, TIMEOUT_NS));
        if (i >= 50) lat[i - 50] = now_ns() - t0;
    }
    o50 = pct(lat, reps, 50);
    o99 = pct(lat, reps, 99);
    if (have_cuda && cuda_side_latency(&cu, lat, reps) == 0) {
        c50 = pct(lat, reps, 50);
        c99 = pct(lat, reps, 99);
    }
    row("empty launch + wait, p50 (us)", o50, c50, "<= 0.5x", 0.5, 0);
    row("empty launch + wait, p99 (us; libcuda: its p50)", o99, c50, "<= 1x", 1.0, 0);
    if (c99 > 0) printf("  %-52s %10s %10.3f\n", "  (libcuda p99)", "", c99);

    /* 2. Floor: a signal-only round trip. */
    for (i = 0; i < reps; i++) {
        t0 = now_ns();
        CHECK(tg_queue_signal(lq, sig, ++next));
        CHECK(tg_queue_submit(lq));
        CHECK(tg_signal_wait(sig, next, TIMEOUT_NS));
        lat[i] = now_ns() - t0;
    }
    floor50 = pct(lat, reps, 50);
    row("floor: signal only + wait, p50 (us)", floor50, -1, NULL, 0, 0);
    printf("  %-52s %10.3f %10s %7s  %-10s %s\n", "launch + wait - floor, p50 (us)", o50 - floor50, "-", "-",
           "<= 1.0 us", info.emulated ? "-" : o50 - floor50 <= 1.0 ? "pass" : "miss");
    printf("  %-52s %10.3f %10s %7s  %-10s %s\n", "launch + wait, p99 / p50", o99 / o50, "-", "-",
           "<= 1.5", info.emulated ? "-" : o99 / o50 <= 1.5 ? "pass" : "miss");

    /* 3. CPU cost per launch: a submit each (tg_launch + tg_queue_submit), tg_launch with
     * TG_LAUNCH_SUBMIT and libcuda's cuLaunchKernel take turns in ROUNDS rounds of
     * burst / ROUNDS launches, the first of each turn rotating, so that all see the same CPU
     * state (a burst timed later in a run came out ~25% cheaper than the same burst timed
     * first); each row is the median of its rounds. Then one submit for the whole burst. */
    CHECK(tg_device_synchronize(dev, TIMEOUT_NS));
    {
        double r_each[ROUNDS], r_fused[ROUNDS], r_cuda[ROUNDS];
        unsigned r, j, per = burst / ROUNDS;
        int cok = have_cuda;
        for (r = 0; r < ROUNDS; r++) {
            for (j = 0; j < 3; j++) {
                unsigned side = (r + j) % 3;
                if (side == 0) {
                    cfg.flags = 0;
                    t0 = now_ns();
                    for (i = 0; i < per; i++) {
                        CHECK(tg_launch(q, k, &cfg, NULL, 0));
                        CHECK(tg_queue_submit(q));
                    }
                    r_each[r] = (double)(now_ns() - t0) / 1e3 / per;
                    CHECK(tg_queue_synchronize(q, TIMEOUT_NS));
                } else if (side == 1) {
                    cfg.flags = TG_LAUNCH_SUBMIT;
                    t0 = now_ns();
                    for (i = 0; i < per; i++) CHECK(tg_launch(q, k, &cfg, NULL, 0));
                    r_fused[r] = (double)(now_ns() - t0) / 1e3 / per;
                    CHECK(tg_queue_synchronize(q, TIMEOUT_NS));
                } else if (cok) { /* libcuda's cuLaunchKernel in the same turns */
                    if ((r_cuda[r] = cuda_side_launch_cpu(&cu, per)) <= 0) cok = 0;
                }
            }
        }
        cfg.flags = 0;
        cpu_each = median(r_each, ROUNDS);
        cpu_fused = median(r_fused, ROUNDS);
        if (cok) ccpu = median(r_cuda, ROUNDS);
    }
    t0 = now_ns();
    for (i = 0; i < burst; i++) CHECK(tg_launch(q, k, &cfg, NULL, 0));
    CHECK(tg_queue_submit(q));
    cpu_one = (double)(now_ns() - t0) / 1e3 / burst;
    CHECK(tg_device_synchronize(dev, TIMEOUT_NS));
    row("CPU per launch, submit each (us; libcuda: launch)", cpu_each, ccpu, "<= 0.15x", 0.15, 0);
    row("CPU per launch, TG_LAUNCH_SUBMIT (us)", cpu_fused, ccpu, "<= 0.15x", 0.15, 0);
    row("CPU per launch, one submit (us; libcuda: launch)", cpu_one, ccpu, "<= 0.1x", 0.1, 0);

    /* 4. Dependent launches until the last is done. */
    t0 = now_ns();
    for (i = 0; i < burst; i++) CHECK(tg_launch(q, k, &cfg, NULL, 0));
    CHECK(tg_queue_signal(q, sig, ++next));
    CHECK(tg_queue_submit(q));
    CHECK(tg_signal_wait(sig, next, TIMEOUT_NS));
    dep = (double)(now_ns() - t0) / 1e6;
    CHECK(tg_signal_value(sig, &value));
    if (value != next) {
        fprintf(stderr, "bench: signal %llu, want %llu\n", (unsigned long long)value, (unsigned long long)next);
        bad = 1;
    }
    if (have_cuda) cdep = cuda_side_dependent(&cu, burst);
    {
        char name[64];
        snprintf(name, sizeof name, "%u dependent launches until done (ms)", burst);
        row(name, dep, cdep, "<= 1x", 1.0, 0);
    }

    /* 5. Device-to-device copies: copy engine (copy queue) and SM copy kernel (compute queue),
     * CPU wall time of copy + signal + wait, best of 5; libcuda: cuMemcpyDtoDAsync (an SM
     * kernel in libcuda) + synchronize, the same way. 1 GiB only on real GPUs. */
    CHECK(tg_queue_create(dev, TG_QUEUE_COPY, &cq));
    for (int size_i = 0; size_i < (info.emulated ? 1 : 2); size_i++) {
        uint64_t bytes = size_i == 0 ? 64ull << 20 : 1ull << 30;
        const char *label = size_i == 0 ? "64 MiB" : "1 GiB";
        double ce = copy_ours(dev, cq, sig, &next, bytes, &bad, "copy engine");
        double sm = copy_ours(dev, q, sig, &next, bytes, &bad, "SM copy kernel");
        double cc = have_cuda ? cuda_side_copy(&cu, bytes) : -1;
        char name[64];
        snprintf(name, sizeof name, "copy %s, copy engine (GB/s)", label);
        row(name, ce, cc, NULL, 0, 1);
        snprintf(name, sizeof name, "copy %s, SM copy kernel (GB/s)", label);
        row(name, sm, cc, ">= 0.95x", 0.95, 1);
    }

    /* 6. Replay of a 100-kernel chain: command buffer against a CUDA graph, taking turns, on a
     * queue of its own as deep as tegragpu-bench's (4096). */
    {
        tg_queue *rq;
        CHECK(tg_queue_create_owned(dev, TG_QUEUE_COMPUTE, 4096, &rq));
        if (replay_rows(dev, rq, inc, have_cuda ? &cu : NULL, rreps, rscratch, rep_o, rep_c) != 0) bad = 1;
        CHECK(tg_queue_destroy(rq));
    }
    row("replay 100-kernel chain: CPU per replay (us)", rep_o[0], rep_c[0], "<= 0.1x", 0.1, 0);
    row("replay 100-kernel chain: to completion, p50 (us)", rep_o[1], rep_c[1], "<= 0.8x", 0.8, 0);
    row("update one argument + replay: CPU, p50 (us)", rep_o[2], rep_c[2], "<= 0.1x", 0.1, 0);

    /* 7. Allocate + free 256 MiB: 3 untimed rounds, then 20 (reps >= 200), ours and libcuda's
     * alternating so that drift in the driver's state hits both alike. */
    {
        uint64_t *clat = lat + 20;
        unsigned cn = 0;
        for (int r = -3; r < 20; r++) {
            tg_buf *t = NULL;
            t0 = now_ns();
            CHECK(tg_buf_alloc(dev, 256ull << 20, TG_BUF_DEVICE_LOCAL, &t));
            CHECK(tg_buf_free(t));
            if (r >= 0) lat[r] = now_ns() - t0;
            if (have_cuda) {
                double us = cuda_side_alloc_free(&cu, 256ull << 20);
                if (r >= 0 && us > 0) clat[cn++] = (uint64_t)(us * 1e3);
            }
        }
        double ca = cn == 20 ? pct(clat, 20, 50) : -1;
        row("alloc + free 256 MiB, p50 (us)", pct(lat, 20, 50), ca, "<= 1x", 1.0, 0);
    }

    /* 8. CPU per launch with a submit each on a shared queue (any thread may use it; a lock
     * and reference counting per call), last so that its queue cannot affect other rows. */
    {
        tg_queue *sq = NULL;
        double shared_each, shared_fused;
        CHECK(tg_queue_create_with_depth(dev, TG_QUEUE_COMPUTE, 16384, &sq));
        for (i = 0; i < 64; i++) CHECK(tg_launch(sq, k, &cfg, NULL, 0));
        CHECK(tg_queue_submit(sq));
        CHECK(tg_queue_synchronize(sq, TIMEOUT_NS));
        {
            double r_each[ROUNDS], r_fused[ROUNDS];
            unsigned r, per = burst / ROUNDS;
            for (r = 0; r < ROUNDS; r++) {
                for (unsigned j = 0; j < 2; j++) {
                    cfg.flags = (r + j) % 2 ? TG_LAUNCH_SUBMIT : 0;
                    t0 = now_ns();
                    for (i = 0; i < per; i++) {
                        CHECK(tg_launch(sq, k, &cfg, NULL, 0));
                        if (cfg.flags == 0) CHECK(tg_queue_submit(sq));
                    }
                    (cfg.flags ? r_fused : r_each)[r] = (double)(now_ns() - t0) / 1e3 / per;
                    CHECK(tg_queue_synchronize(sq, TIMEOUT_NS));
                }
            }
            cfg.flags = 0;
            shared_each = median(r_each, ROUNDS);
            shared_fused = median(r_fused, ROUNDS);
        }
        CHECK(tg_queue_destroy(sq));
        row("CPU per launch, submit each, shared queue (us)", shared_each, ccpu, "<= 0.15x", 0.15, 0);
        row("CPU per launch, TG_LAUNCH_SUBMIT, shared queue (us)", shared_fused, ccpu, "<= 0.15x",
            0.15, 0);
    }

    free(lat);
    free(rscratch);
    free(cubin);
    CHECK(tg_queue_destroy(cq));
    CHECK(tg_signal_destroy(sig));
    CHECK(tg_queue_destroy(lq));
    CHECK(tg_queue_destroy(q));
    CHECK(tg_kernel_destroy(inc));
    CHECK(tg_kernel_destroy(k));
    CHECK(tg_module_destroy(mod));
    CHECK(tg_device_close(dev));
    printf(bad ? "bench: FAILED\n" : "bench: OK\n");
    return bad;
}
