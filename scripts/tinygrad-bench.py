#!/usr/bin/env python3
"""TinyJit step benchmark: tinygrad on libtegragpu (DEV=TEGRA) against libcuda (DEV=CUDA).

    python3 scripts/tinygrad-bench.py [--models mnist,gpt,allreduce,dp] [--devs CUDA,TEGRA]
                                      [--steps 50]

Runs every (model, device) in its own process (DEV set before tinygrad is imported; for TEGRA
the process imports tegragpu.tinygrad_device first), one after the other, and prints ms/step for
each and the ratio TEGRA/CUDA (target: <= 1.0). Models (random data, no downloads):

* mnist: the CNN of tinygrad's examples/beautiful_mnist.py, a training step (forward,
  backward, Adam) on a batch of BS=512 28x28 images drawn with Tensor.randint inside the JIT.
* gpt: inference of a 4-layer GPT-style transformer block stack (d=512, 8 heads, T=256,
  batch 8, causal attention), output reduced to a scalar (TG_BENCH_GPT="d,heads,T,B,layers").
* mlp: a launch-bound training step (an 8-layer MLP of width 64, Adam, batch 32): about 100
  kernels of a few microseconds each.

Multi-GPU models, on DEV, DEV:1, ... (TG_BENCH_GPUS devices, default 2; a SKIP row naming the
device that cannot be opened where there are fewer):

* allreduce: tinygrad's all-reduce (sum) of a tensor sharded over the devices, 2^24 float32
  (64 MiB) per device (TG_BENCH_ALLREDUCE elements): copies between the GPUs and the adds.
* dp: a data-parallel training step of the mnist CNN: weights replicated, the batch (BS=512)
  split over the devices, gradients all-reduced.

Timing, after two warm-up calls (the second captures the JIT) and a third replay:
* step: median wall time of one JIT call followed by Device.synchronize() (the latency of a
  step, which is what the ratio uses);
* pipelined: wall time of --steps calls with one synchronize at the end, divided by --steps.
Both devices start from the same seed (Tensor.manual_seed), so their losses should agree; the
first losses are printed and compared.

--kernel-times: instead of the JIT benchmark, time every kernel of one step on its own (tinygrad's
per-kernel path with JIT=0, each launch with wait=True: GPU time from CUDA events on CUDA, from
signal timestamps on TEGRA; median over --reps steps after two warm-up steps) and print, per
kernel of the step in order, both devices' times, their sums and the kernels that differ most.
The same renderer and compiler build the same code for both devices, so the kernels pair up by
position and name.

--interleave: both devices in one process, one model instance each, steps alternating between
them (A B, B A, A B, ...), each step timed as in the JIT benchmark; prints both medians, the
median of the per-pair ratios and its 95% bootstrap interval. Drift of the machine (clocks,
other tenants) then hits both devices alike, which separate processes cannot guarantee.
Multi-GPU models too: each device kind opens its TG_BENCH_GPUS devices in the one process.
Device CUDB (with --interleave) is tinygrad's CUDA backend bound to the libcuda that
TG_BENCH_CUDB names: `--interleave --devs CUDA,CUDB` with TG_BENCH_CUDB=<libtegragpu's
libcuda.so.1> compares NVIDIA's libcuda and libtegragpu's under the same tinygrad code, in one
process (with JIT=0: tinygrad's per-kernel path).

Environment: everything tinygrad reads (BS, JIT_BATCH_SIZE, DEBUG, ...), TEGRAGPU_LIBRARY
(default: .device/lib/libtegragpu.so.0 when it exists), TEGRAGPU_DEVICE. Without an importable
tinygrad, the wheel in .device/tinygrad/whl is installed into a temporary folder first (as on
the device machine). Output: a table on stdout; with $OUT set, also $OUT/bench.json.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


# ---------------------------------------------------------------------------------------------
# child: one model on one device

def _mnist(steps_for_losses):
    from tinygrad import Tensor, TinyJit, nn
    from tinygrad.helpers import Context, getenv
    try:
        from tinygrad import function
    except ImportError:  # older tinygrad
        def function(f):
            return f

    class Model:
        def __init__(self):
            self.layers = [
                nn.Conv2d(1, 32, 5), Tensor.relu,
                nn.Conv2d(32, 32, 5), Tensor.relu,
                nn.BatchNorm(32), Tensor.max_pool2d,
                nn.Conv2d(32, 64, 3), Tensor.relu,
                nn.Conv2d(64, 64, 3), Tensor.relu,
                nn.BatchNorm(64), Tensor.max_pool2d,
                lambda x: x.flatten(1), nn.Linear(576, 10)]

        @function
        def __call__(self, x):
            return x.sequential(self.layers)

    Tensor.manual_seed(0)
    bs = getenv("BS", 512)
    n = max(8 * bs, 64)  # the "dataset" the batches are drawn from
    X = (Tensor.rand(n, 1, 28, 28) * 2 - 1).contiguous().realize()
    Y = Tensor.randint(n, high=10).contiguous().realize()
    model = Model()
    opt = nn.optim.Adam(nn.state.get_parameters(model))

    @TinyJit
    @Context(TRAINING=1)
    def step(X, Y):
        opt.zero_grad()
        samples = Tensor.randint(bs, high=X.shape[0])
        loss = model(X[samples]).sparse_categorical_crossentropy(Y[samples]).backward()
        return loss.realize(*opt.schedule_step())

    return lambda: step(X, Y), f"beautiful_mnist CNN train step, BS={bs}"


def _gpt(steps_for_losses):
    from tinygrad import Tensor, TinyJit, nn

    d, heads, T, B, layers = (int(v) for v in
                              os.environ.get("TG_BENCH_GPT", "512,8,256,8,4").split(","))

    class Block:
        def __init__(self):
            self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
            self.fc1, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

        def __call__(self, x):
            q, k, v = self.qkv(self.ln1(x)).chunk(3, dim=-1)
            q, k, v = [t.reshape(B, T, heads, d // heads).transpose(1, 2) for t in (q, k, v)]
            a = q.scaled_dot_product_attention(k, v, is_causal=True)
            x = x + self.proj(a.transpose(1, 2).reshape(B, T, d))
            return x + self.fc2(self.fc1(self.ln2(x)).gelu())

    Tensor.manual_seed(0)
    blocks = [Block() for _ in range(layers)]
    x = Tensor.randn(B, T, d).contiguous().realize()

    @TinyJit
    def step(x):
        y = x
        for b in blocks:
            y = b(y)
        return (y * y).mean().realize()

    return lambda: step(x), f"GPT-style inference, {layers} blocks d={d} heads={heads} T={T} B={B}"


def _tiny(steps_for_losses):
    # A two-layer MLP training step: a smoke test of this script (e.g. on DEV=PYTHON).
    from tinygrad import Tensor, TinyJit, nn
    from tinygrad.helpers import Context
    Tensor.manual_seed(0)
    l1, l2 = nn.Linear(16, 32), nn.Linear(32, 4)
    opt = nn.optim.SGD(nn.state.get_parameters([l1, l2]), lr=0.01)
    X, Y = Tensor.randn(8, 16).realize(), Tensor.randint(8, high=4).realize()

    @TinyJit
    @Context(TRAINING=1)
    def step(X, Y):
        opt.zero_grad()
        loss = l2(l1(X).relu()).sparse_categorical_crossentropy(Y).backward()
        return loss.realize(*opt.schedule_step())

    return lambda: step(X, Y), "tiny MLP train step (smoke test)"


def _mlp(steps_for_losses):
    # Launch-bound: an 8-layer MLP of width 64 trained with Adam on a batch of 32. Every tensor
    # is a few KiB, so each kernel runs for a few microseconds and a step is many small launches.
    from tinygrad import Tensor, TinyJit, nn
    from tinygrad.helpers import Context
    Tensor.manual_seed(0)
    layers = [nn.Linear(64, 64) for _ in range(7)] + [nn.Linear(64, 10)]
    opt = nn.optim.Adam(nn.state.get_parameters(layers))
    X, Y = Tensor.randn(32, 64).realize(), Tensor.randint(32, high=10).realize()

    @TinyJit
    @Context(TRAINING=1)
    def step(X, Y):
        opt.zero_grad()
        x = X
        for i, l in enumerate(layers):
            x = l(x) if i == len(layers) - 1 else l(x).relu()
        loss = x.sparse_categorical_crossentropy(Y).backward()
        return loss.realize(*opt.schedule_step())

    return lambda: step(X, Y), "8-layer MLP (width 64) Adam train step, batch 32 (launch-bound)"


def _allreduce(steps_for_losses, devs):
    # An all-reduce (sum) across the devices: tinygrad's allreduce of a tensor sharded on its
    # first axis (one row per device), reduced over that axis; the result is on every device.
    from tinygrad import Tensor, TinyJit
    n = int(os.environ.get("TG_BENCH_ALLREDUCE", str(1 << 24)))
    Tensor.manual_seed(0)
    x = Tensor.rand(len(devs), n).shard(devs, axis=0).contiguous().realize()

    @TinyJit
    def step(x):
        return x.sum(0).realize()

    return lambda: step(x), (f"all-reduce (sum) of {n} float32 per device "
                             f"({n * 4 / 2**20:.0f} MiB) across {len(devs)} devices")


def _mnist_dp(steps_for_losses, devs):
    # Data-parallel training of the beautiful_mnist CNN: weights replicated on every device,
    # the batch split across them (gradients all-reduced by tinygrad).
    from tinygrad import Tensor, TinyJit, nn
    from tinygrad.helpers import Context, getenv

    class Model:
        def __init__(self):
            self.layers = [
                nn.Conv2d(1, 32, 5), Tensor.relu,
                nn.Conv2d(32, 32, 5), Tensor.relu,
                nn.BatchNorm(32), Tensor.max_pool2d,
                nn.Conv2d(32, 64, 3), Tensor.relu,
                nn.Conv2d(64, 64, 3), Tensor.relu,
                nn.BatchNorm(64), Tensor.max_pool2d,
                lambda x: x.flatten(1), nn.Linear(576, 10)]

        def __call__(self, x):
            return x.sequential(self.layers)

    Tensor.manual_seed(0)
    bs = getenv("BS", 512)
    bs -= bs % len(devs)
    n = max(8 * bs, 64)
    X = (Tensor.rand(n, 1, 28, 28) * 2 - 1).contiguous().realize()
    Y = Tensor.randint(n, high=10).contiguous().realize()
    model = Model()
    for p in nn.state.get_parameters(model):
        p.to_(devs)
    opt = nn.optim.Adam(nn.state.get_parameters(model))

    @TinyJit
    @Context(TRAINING=1)
    def step(X, Y):
        opt.zero_grad()
        samples = Tensor.randint(bs, high=X.shape[0])
        xs, ys = X[samples].shard(devs, axis=0), Y[samples].shard(devs, axis=0)
        loss = model(xs).sparse_categorical_crossentropy(ys).backward()
        return loss.realize(*opt.schedule_step())

    return lambda: step(X, Y), (f"beautiful_mnist CNN data-parallel train step, BS={bs} split "
                                f"over {len(devs)} devices")


MODELS = {"mnist": _mnist, "gpt": _gpt, "tiny": _tiny, "mlp": _mlp}
# Models over several devices of one kind: f(steps, devices).
MULTI = {"allreduce": _allreduce, "dp": _mnist_dp}


def multi_devices(dev):
    """The devices of a multi-device model on `dev`: DEV, DEV:1, ... (TG_BENCH_GPUS of them,
    default 2), opened; raises RuntimeError naming the one that cannot be opened."""
    from tinygrad import Device
    n = int(os.environ.get("TG_BENCH_GPUS", "2"))
    if n < 2:
        raise RuntimeError(f"TG_BENCH_GPUS={n}: a multi-device model needs 2 or more")
    devs = [dev] + [f"{dev}:{i}" for i in range(1, n)]
    for d in devs:
        try:
            Device[d]
        except Exception as e:
            raise RuntimeError(f"needs {n} devices ({', '.join(devs)}); opening {d} failed: "
                               f"{type(e).__name__}: {str(e)[:300]}") from e
    return devs


def child_kernels(model, dev, reps):
    """GPU time of every kernel launch of one step, with JIT=0 (set by the parent)."""
    if dev.split(":")[0] == "TEGRA":
        import tegragpu.tinygrad_device as _td  # registers TEGRA
        assert _td.DEVICE_NAME == "TEGRA"
    from tinygrad import Device
    device = Device[dev]
    prog_cls = device.runtime_t
    orig = prog_cls.__call__
    record = []

    def timed(self, *args, **kw):
        kw["wait"] = True
        t = orig(self, *args, **kw)
        record.append((getattr(self, "name", "?"), t))
        return t

    prog_cls.__call__ = timed
    fn, desc = MODELS[model](reps)
    for _ in range(2):
        fn()
    device.synchronize()
    steps = []
    for _ in range(reps):
        record.clear()
        fn()
        device.synchronize()
        steps.append(list(record))
    names = [n for n, _ in steps[0]]
    if any([n for n, _ in s] != names for s in steps):
        raise SystemExit("the kernels of a step differ between steps")
    med = [statistics.median(s[i][1] for s in steps) * 1e6 for i in range(len(names))]
    return {"model": model, "desc": desc, "dev": dev, "reps": reps,
            "kernels": [[n, m] for n, m in zip(names, med)],
            "step_us": [sum(t for _, t in s) * 1e6 for s in steps]}


def register_cudb(path):
    """Registers tinygrad device CUDB: tinygrad's own CUDA backend (ops_cuda) bound to the
    libcuda at `path` instead of the one DEV=CUDA loads, so that two libcudas (NVIDIA's and
    libtegragpu's) run the same backend code side by side in one process (--interleave
    --devs CUDA,CUDB with TG_BENCH_CUDB=path)."""
    import importlib.util
    import types
    import tinygrad.runtime
    from tinygrad.device import Device as _TinyDevice
    import tinygrad.runtime.ops_cuda  # noqa: F401  (DEV=CUDA's binding stays as it is)
    pkg = os.path.dirname(tinygrad.runtime.__file__)

    def load(name, file):
        spec = importlib.util.spec_from_file_location(name, os.path.join(pkg, file))
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod

    from tinygrad.helpers import getenv
    saved = os.environ.get("CUDA_PATH")
    os.environ["CUDA_PATH"] = path  # tinygrad's DLL loader takes <NAME>_PATH first
    getenv.cache_clear()  # tinygrad caches what it read from the environment
    try:
        cuda = load("tinygrad_bench_cudb_binding", "autogen/cuda.py")
    finally:
        if saved is None:
            os.environ.pop("CUDA_PATH")
        else:
            os.environ["CUDA_PATH"] = saved
        getenv.cache_clear()
    if os.path.realpath(cuda.dll._name) != os.path.realpath(path):
        raise RuntimeError(f"CUDB bound {cuda.dll._name}, not {path}")
    autogen = sys.modules["tinygrad.runtime.autogen"]
    orig = autogen.cuda
    sys.modules["tinygrad.runtime.autogen.cuda"], autogen.cuda = cuda, cuda
    try:
        ops = load("tinygrad.runtime.ops_cudb", "ops_cuda.py")
        graph = load("tinygrad_bench_cudb_graph", "graph/cuda.py")
    finally:
        sys.modules["tinygrad.runtime.autogen.cuda"], autogen.cuda = orig, orig

    def init(self, device):
        # CUDADevice imports its graph class when it is made: give it the one on this binding.
        key = "tinygrad.runtime.graph.cuda"
        saved = sys.modules.get(key)
        sys.modules[key] = graph
        try:
            ops.CUDADevice.__init__(self, device)
        finally:
            if saved is None:
                sys.modules.pop(key)
            else:
                sys.modules[key] = saved
    mod = types.ModuleType("tinygrad.runtime.ops_cudb")
    mod.CudbDevice = type("CudbDevice", (ops.CUDADevice,), {"__init__": init})
    mod.binding = cuda
    sys.modules["tinygrad.runtime.ops_cudb"] = mod
    setattr(tinygrad.runtime, "ops_cudb", mod)
    if "CUDB" not in _TinyDevice._devices:
        _TinyDevice._devices.append("CUDB")


def child_interleave(model, devs, steps, lib_times=False):
    """Step times of `model` on every device of `devs`, alternating in one process."""
    import tegragpu.tinygrad_device as _td  # registers TEGRA
    assert _td.DEVICE_NAME == "TEGRA"
    if "CUDB" in devs:
        register_cudb(os.environ["TG_BENCH_CUDB"])
    lts = {}
    if lib_times:
        for d in devs:
            if d.split(":")[0] == "CUDA":
                lts[d] = LibTimes()
            elif d.split(":")[0] == "CUDB":
                lts[d] = LibTimes(sys.modules["tinygrad.runtime.ops_cudb"].binding)
    from tinygrad import Device
    from tinygrad.helpers import Context
    fns, groups = {}, {}
    for d in devs:
        with Context(DEV=d):
            if model in MULTI:  # d, d:1, ...: TG_BENCH_GPUS devices of each kind
                group = multi_devices(d)
                fn, desc = MULTI[model](steps, group)
            else:
                group = [d]
                fn, desc = MODELS[model](steps)
            groups[d] = [Device[x] for x in group]
            for _ in range(3):
                fn()
            for x in groups[d]:
                x.synchronize()
        fns[d] = fn
    times = {d: [] for d in devs}
    issue = {d: [] for d in devs}
    for i in range(steps):
        for d in (devs if i % 2 == 0 else devs[::-1]):
            with Context(DEV=d):
                if d in lts:
                    lts[d].on = True
                t = time.perf_counter()
                fns[d]()
                t1 = time.perf_counter()
                for x in groups[d]:
                    x.synchronize()
                times[d].append(time.perf_counter() - t)
                issue[d].append(t1 - t)
                if d in lts:
                    lts[d].on = False
    return {"model": model, "desc": desc, "devs": devs, "steps": steps,
            "step_s": times, "issue_s": issue,
            "lib": {d: lt.summary(steps) for d, lt in lts.items()}}


def interleave_summary(res):
    """Medians, the median paired ratio (last device / first) and its 95% bootstrap interval."""
    import random
    a, b = res["devs"][0], res["devs"][-1]
    ta, tb = res["step_s"][a], res["step_s"][b]
    ratios = [y / x for x, y in zip(ta, tb)]
    rng = random.Random(1)
    boot = sorted(statistics.median(rng.choices(ratios, k=len(ratios))) for _ in range(2000))
    return {"model": res["model"], a: statistics.median(ta) * 1e3, b: statistics.median(tb) * 1e3,
            "issue_ms": {d: statistics.median(v) * 1e3 for d, v in res["issue_s"].items()},
            "ratio_of_medians": statistics.median(tb) / statistics.median(ta),
            "median_pair_ratio": statistics.median(ratios),
            "ci95": [boot[50], boot[1949]], "pairs": len(ratios)}


def compare_kernels(model, a, b, top):
    """Print the per-kernel comparison of two child_kernels results; return a summary."""
    ka, kb = a["kernels"], b["kernels"]
    if [n for n, _ in ka] != [n for n, _ in kb]:
        print(f"{model}: the two devices ran different kernels ({len(ka)} vs {len(kb)})")
        return {"model": model, "error": "kernels differ"}
    ta, tb = sum(t for _, t in ka), sum(t for _, t in kb)
    print(f"\n{model}: {len(ka)} kernels per step; sum of per-kernel medians "
          f"{a['dev']} {ta:.1f} us, {b['dev']} {tb:.1f} us, ratio {tb / ta:.4f}")
    big = [i for i in range(len(ka)) if min(ka[i][1], kb[i][1]) >= 100]
    if big:
        sa, sb = sum(ka[i][1] for i in big), sum(kb[i][1] for i in big)
        print(f"  the {len(big)} kernels of >= 100 us on both: {a['dev']} {sa:.1f} us, "
              f"{b['dev']} {sb:.1f} us, ratio {sb / sa:.4f} (the timing methods' own overheads "
              "differ: CUDA events vs signal timestamps; they dominate short kernels)")
    rows = sorted(range(len(ka)), key=lambda i: -abs(kb[i][1] - ka[i][1]))[:top]
    print(f"  {'#':>4} {'kernel':40s} {a['dev']:>10} {b['dev']:>10} {'ratio':>7}")
    for i in rows:
        print(f"  {i:4d} {ka[i][0][:40]:40s} {ka[i][1]:10.2f} {kb[i][1]:10.2f} "
              f"{kb[i][1] / max(ka[i][1], 1e-9):7.3f}")
    by_name = {}
    for (n, x), (_, y) in zip(ka, kb):
        s = by_name.setdefault(n, [0, 0.0, 0.0])
        s[0] += 1
        s[1] += x
        s[2] += y
    return {"model": model, "kernels": len(ka), a["dev"]: ta, b["dev"]: tb, "ratio": tb / ta,
            "by_name": by_name}


class LibTimes:
    """--lib-times (DEV=CUDA): wraps every function of tinygrad's libcuda binding and adds up
    the calls and the wall time spent inside the library, per function."""

    def __init__(self, cuda=None):
        if cuda is None:
            from tinygrad.runtime.autogen import cuda
        self.calls, self.secs, self.on = {}, {}, False
        for name in dir(cuda):
            f = getattr(cuda, name)
            if name.startswith("cu") and callable(f) and hasattr(f, "argtypes"):
                setattr(cuda, name, self._wrap(name, f))

    def _wrap(self, name, f):
        clock, calls, secs = time.perf_counter, self.calls, self.secs

        def wrapper(*args):
            if not self.on:
                return f(*args)
            t = clock()
            try:
                return f(*args)
            finally:
                secs[name] = secs.get(name, 0.0) + clock() - t
                calls[name] = calls.get(name, 0) + 1
        return wrapper

    def summary(self, steps):
        top = sorted(self.secs, key=self.secs.get, reverse=True)[:10]
        return {"lib_ms_per_step": sum(self.secs.values()) * 1e3 / steps,
                "lib_calls_per_step": sum(self.calls.values()) / steps,
                "lib_top": [(n, self.calls[n] / steps, self.secs[n] * 1e3 / steps) for n in top]}


def child(model, dev, steps, lib_times=False):
    lt = LibTimes() if lib_times and dev.split(":")[0] == "CUDA" else None
    if dev.split(":")[0] == "TEGRA":
        import tegragpu.tinygrad_device as _td  # registers TEGRA
        assert _td.DEVICE_NAME == "TEGRA"
    from tinygrad import Device, GlobalCounters
    from tinygrad.engine.jit import graph_class
    device = Device[dev]
    t_setup = time.perf_counter()
    if model in MULTI:
        try:
            devs = multi_devices(dev)
        except RuntimeError as e:
            return {"model": model, "dev": dev, "skip": str(e)}
        fn, desc = MULTI[model](steps, devs)
    else:
        devs = [dev]
        fn, desc = MODELS[model](steps)
    devices = [Device[d] for d in devs]

    class _AllDevices:
        @staticmethod
        def synchronize():
            for d in devices:
                d.synchronize()

    device = _AllDevices if len(devices) > 1 else device

    def item(t):
        if dev.split(":")[0] == "NULL":  # tinygrad's NULL device (a smoke test) has no copyout
            return float("nan")
        if t.numel() != 1:  # the all-reduce: a checksum of its first elements
            return t.reshape(-1)[:4096].sum().item()
        return t.item()

    losses = []
    t0 = time.perf_counter()
    for _ in range(3):  # ignore, capture, first replay
        losses.append(item(fn()))
    device.synchronize()
    warm_s = time.perf_counter() - t0
    GlobalCounters.reset()
    fn()
    device.synchronize()
    kernels = GlobalCounters.kernel_count
    times = []
    if lt:
        lt.on = True
    for _ in range(steps):
        t = time.perf_counter()
        out = fn()
        device.synchronize()
        times.append(time.perf_counter() - t)
    if lt:
        lt.on = False
    losses.append(item(out))
    t = time.perf_counter()
    for _ in range(steps):
        out = fn()
    device.synchronize()
    pipelined = (time.perf_counter() - t) / steps
    losses.append(item(out))
    g = graph_class(devices[0]) if devices[0].graph is not None else None
    from tinygrad.engine.realize import graph_cache
    notes = sorted({str(getattr(r, "cmdbuf_note", None)) for r in graph_cache.values()
                    if getattr(r, "cmdbuf_note", None)})
    return {
        "model": model, "desc": desc, "dev": dev, "steps": steps,
        "step_ms": statistics.median(times) * 1e3, "step_ms_mean": statistics.mean(times) * 1e3,
        "step_ms_min": min(times) * 1e3, "pipelined_ms": pipelined * 1e3,
        "warmup_s": warm_s, "setup_s": t0 - t_setup, "calls_per_step": kernels,
        "graph": getattr(g, "__name__", None), "graph_notes": notes,
        "renderer": type(devices[0].renderer).__name__,
        "arch": getattr(devices[0], "arch", None), "losses": losses, "devices": devs,
        **(lt.summary(steps) if lt else {}),
    }


# ---------------------------------------------------------------------------------------------
# parent

_SITE = []


def tinygrad_site():
    """A folder to put on PYTHONPATH for tinygrad: None when tinygrad imports already, else the
    wheel in .device/tinygrad/whl installed into a temporary folder (the device machine)."""
    if _SITE:
        return _SITE[0]
    import importlib.util
    if importlib.util.find_spec("tinygrad") is not None:
        site = None
    else:
        import atexit
        import glob
        import shutil
        import tempfile
        import zipfile
        whl = sorted(glob.glob(os.path.join(os.path.dirname(HERE), ".device", "tinygrad", "whl",
                                            "tinygrad-*.whl")))
        if not whl:
            raise SystemExit("tinygrad is not installed and .device/tinygrad/whl has no wheel")
        site = tempfile.mkdtemp(prefix="tinygrad-bench-site.")
        atexit.register(shutil.rmtree, site, True)
        r = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-index",
                            "--no-deps", "--no-compile", "--target", site, whl[-1]])
        if r.returncode != 0:
            zipfile.ZipFile(whl[-1]).extractall(site)
        print(f"tinygrad from {whl[-1]} (installed into {site})", flush=True)
    _SITE.append(site)
    return site


def run_child(model, dev, steps, timeout, kernel_times=False, interleave=False, lib_times=False):
    env = dict(os.environ)
    env["DEV"] = dev.split(",")[0]
    if kernel_times:
        env["JIT"] = "0"
    root = os.path.dirname(HERE)
    lib = os.path.join(root, ".device", "lib", "libtegragpu.so.0")
    if not env.get("TEGRAGPU_LIBRARY") and os.path.exists(lib):
        env["TEGRAGPU_LIBRARY"] = lib  # the device machine's copy
    paths = [os.path.join(root, "python")]
    if tinygrad_site():
        paths.insert(0, tinygrad_site())
    env["PYTHONPATH"] = os.pathsep.join(paths + [env.get("PYTHONPATH", "")])
    cmd = [sys.executable, os.path.abspath(__file__), "--child", model, dev, "--steps", str(steps)]
    if kernel_times:
        cmd.append("--kernel-times")
    if interleave:
        cmd.append("--interleave")
    if lib_times:
        cmd.append("--lib-times")
    t = time.perf_counter()
    try:
        r = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           universal_newlines=True, timeout=timeout)
        out, rc = r.stdout, r.returncode
    except subprocess.TimeoutExpired as e:
        out, rc = (e.stdout or "") if isinstance(e.stdout, str) else "", "timeout"
    res = None
    for line in out.splitlines():
        if line.startswith("BENCH_RESULT "):
            res = json.loads(line[len("BENCH_RESULT "):])
    if res is None:
        res = {"model": model, "dev": dev, "error": f"rc={rc}", "log_tail": out[-3000:]}
    res["wall_s"] = time.perf_counter() - t
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models",
                    default=os.environ.get("TG_BENCH_MODELS", "mnist,gpt,allreduce,dp"))
    ap.add_argument("--devs", default=os.environ.get("TG_BENCH_DEVS", "CUDA,TEGRA"))
    ap.add_argument("--steps", type=int, default=int(os.environ.get("TG_BENCH_STEPS", "50")))
    ap.add_argument("--timeout", type=int, default=int(os.environ.get("TG_BENCH_TIMEOUT", "150")))
    ap.add_argument("--kernel-times", action="store_true",
                    help="time each kernel of a step on its own (--steps is the number of steps)")
    ap.add_argument("--interleave", action="store_true",
                    help="alternate the devices' steps in one process (--steps pairs)")
    ap.add_argument("--top", type=int, default=15, help="--kernel-times: kernels listed")
    ap.add_argument("--lib-times", action="store_true",
                    help="DEV=CUDA: add up the calls into libcuda and the time inside them")
    ap.add_argument("--child", nargs=2, metavar=("MODEL", "DEV"), help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        if a.kernel_times:
            res = child_kernels(a.child[0], a.child[1], a.steps)
        elif a.interleave:
            res = child_interleave(a.child[0], a.child[1].split(","), a.steps, a.lib_times)
        else:
            res = child(a.child[0], a.child[1], a.steps, a.lib_times)
        print("BENCH_RESULT " + json.dumps(res), flush=True)
        return 0

    models = [m for m in a.models.split(",") if m]
    devs = [d for d in a.devs.split(",") if d]
    unknown = [m for m in models if m not in MODELS and m not in MULTI]
    if unknown:
        raise SystemExit(f"unknown models {unknown}; known: {sorted(MODELS) + sorted(MULTI)}")
    if a.kernel_times:
        for m in [m for m in models if m in MULTI]:
            print(f"{m}: SKIP (--kernel-times takes one-device models)")
        models = [m for m in models if m not in MULTI]
    if a.interleave:
        results, summary = [], []
        for m in models:
            r = run_child(m, ",".join(devs), a.steps, a.timeout, interleave=True,
                          lib_times=a.lib_times)
            results.append(r)
            if "error" in r:
                print(f"{m}: FAILED ({r['error']})\n{r['log_tail']}", flush=True)
                continue
            s = interleave_summary(r)
            summary.append(s)
            d0, d1 = devs[0], devs[-1]
            print(f"{m}: {s['pairs']} interleaved pairs, median step {d0} {s[d0]:.3f} ms, "
                  f"{d1} {s[d1]:.3f} ms; ratio {d1}/{d0}: of medians {s['ratio_of_medians']:.4f}, "
                  f"median per pair {s['median_pair_ratio']:.4f} "
                  f"(95% interval {s['ci95'][0]:.4f}-{s['ci95'][1]:.4f}; target <= 1.0); "
                  f"CPU time of the call before the synchronize, median: "
                  f"{d0} {s['issue_ms'][d0]:.3f} ms, {d1} {s['issue_ms'][d1]:.3f} ms", flush=True)
            for d, lt in r.get("lib", {}).items():
                top = ", ".join(f"{n} {c:g}x {ms:.3f} ms" for n, c, ms in lt["lib_top"][:6])
                print(f"  {d} in libcuda: {lt['lib_ms_per_step']:.3f} ms/step over "
                      f"{lt['lib_calls_per_step']:g} calls ({top})", flush=True)
        out = os.environ.get("OUT")
        if out:
            with open(os.path.join(out, "interleave.json"), "w") as f:
                json.dump({"results": results, "summary": summary}, f, indent=1)
        return 0 if all("error" not in r for r in results) else 1
    if a.kernel_times:
        results, summary = [], []
        for m in models:
            rs = [run_child(m, d, a.steps, a.timeout, kernel_times=True) for d in devs]
            results += rs
            bad = [r for r in rs if "error" in r]
            for r in bad:
                print(f"{m} on {r['dev']}: FAILED ({r['error']})\n{r['log_tail']}", flush=True)
            if not bad and len(rs) >= 2:
                summary.append(compare_kernels(m, rs[0], rs[-1], a.top))
        out = os.environ.get("OUT")
        if out:
            with open(os.path.join(out, "kernel_times.json"), "w") as f:
                json.dump({"results": results, "summary": summary}, f, indent=1)
        return 0 if all("error" not in r for r in results) else 1
    results = []
    for m in models:
        for d in devs:
            r = run_child(m, d, a.steps, a.timeout, lib_times=a.lib_times)
            results.append(r)
            if "error" in r:
                print(f"{m} on {d}: FAILED ({r['error']})\n{r['log_tail']}", flush=True)
            elif "skip" in r:
                print(f"{m} on {d}: SKIP ({r['skip']})", flush=True)
            else:
                print(f"{m} on {d}: step {r['step_ms']:.3f} ms (median; "
                      f"mean {r['step_ms_mean']:.3f}, "
                      f"min {r['step_ms_min']:.3f}), pipelined {r['pipelined_ms']:.3f} ms/step, "
                      f"{r['calls_per_step']} calls/step (a graph batch counts once), "
                      f"graph {r['graph']} {r.get('graph_notes') or ''}, "
                      f"{r['renderer']} {r['arch']}, warm-up {r['warmup_s']:.1f} s", flush=True)
                if "lib_ms_per_step" in r:
                    top = ", ".join(f"{n} {c:g}x {ms:.3f} ms" for n, c, ms in r["lib_top"][:6])
                    print(f"  in libcuda: {r['lib_ms_per_step']:.3f} ms/step over "
                          f"{r['lib_calls_per_step']:g} calls ({top})", flush=True)

    print("\nmodel     " + "".join(f"{d:>14}" for d in devs) + "   ratio (ms/step, " +
          f"{devs[-1]}/{devs[0]}; target <= 1.0)")
    summary = []
    for m in models:
        rs = {r["dev"]: r for r in results if r["model"] == m}
        cells, vals = [], []
        for d in devs:
            r = rs.get(d, {})
            v = r.get("step_ms")
            vals.append(v)
            cells.append(f"{v:14.3f}" if v is not None else
                         f"{'SKIP' if 'skip' in r else 'FAILED':>14}")
        line = f"{m:10s}" + "".join(cells)
        entry = {"model": m, **{d: rs.get(d, {}).get("step_ms") for d in devs}}
        if len(devs) >= 2 and None not in (vals[0], vals[-1]):
            ratio = vals[-1] / vals[0]
            p0, p1 = rs[devs[0]]["pipelined_ms"], rs[devs[-1]]["pipelined_ms"]
            l0, l1 = rs[devs[0]]["losses"], rs[devs[-1]]["losses"]
            diff = max(abs(x - y) / max(abs(x), abs(y), 1e-12) for x, y in zip(l0, l1))
            line += (f"   {ratio:.3f}{'  OK' if ratio <= 1.0 else '  ABOVE TARGET'}"
                     f"  (pipelined {p1 / p0:.3f}; losses {'match' if diff < 1e-3 else 'DIFFER'}:"
                     f" max rel diff {diff:.2e})")
            entry.update(ratio=ratio, pipelined_ratio=p1 / p0, loss_max_rel_diff=diff)
        summary.append(entry)
        print(line)
    out = os.environ.get("OUT")
    if out:
        with open(os.path.join(out, "bench.json"), "w") as f:
            json.dump({"results": results, "summary": summary}, f, indent=1)
    ok = all("error" not in r for r in results)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
