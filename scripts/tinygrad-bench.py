#!/usr/bin/env python3
"""TinyJit step benchmark: tinygrad on libtegragpu (DEV=TEGRA) against libcuda (DEV=CUDA).

    python3 scripts/tinygrad-bench.py [--models mnist,gpt] [--devs CUDA,TEGRA] [--steps 50]

Runs every (model, device) in its own process (DEV set before tinygrad is imported; for TEGRA
the process imports tegragpu.tinygrad_device first), one after the other, and prints ms/step for
each and the ratio TEGRA/CUDA (target: <= 1.0). Models (random data, no downloads):

* mnist: the CNN of tinygrad's examples/beautiful_mnist.py, a training step (forward,
  backward, Adam) on a batch of BS=512 28x28 images drawn with Tensor.randint inside the JIT.
* gpt: inference of a 4-layer GPT-style transformer block stack (d=512, 8 heads, T=256,
  batch 8, causal attention), output reduced to a scalar (TG_BENCH_GPT="d,heads,T,B,layers").

Timing, after two warm-up calls (the second captures the JIT) and a third replay:
* step: median wall time of one JIT call followed by Device.synchronize() (the latency of a
  step, which is what the ratio uses);
* pipelined: wall time of --steps calls with one synchronize at the end, divided by --steps.
Both devices start from the same seed (Tensor.manual_seed), so their losses should agree; the
first losses are printed and compared.

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


MODELS = {"mnist": _mnist, "gpt": _gpt, "tiny": _tiny}


def child(model, dev, steps):
    if dev.split(":")[0] == "TEGRA":
        import tegragpu.tinygrad_device as _td  # registers TEGRA
        assert _td.DEVICE_NAME == "TEGRA"
    from tinygrad import Device, GlobalCounters
    from tinygrad.engine.jit import graph_class
    device = Device[dev]
    t_setup = time.perf_counter()
    fn, desc = MODELS[model](steps)

    def item(t):
        if dev.split(":")[0] == "NULL":  # tinygrad's NULL device (a smoke test) has no copyout
            return float("nan")
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
    for _ in range(steps):
        t = time.perf_counter()
        out = fn()
        device.synchronize()
        times.append(time.perf_counter() - t)
    losses.append(item(out))
    t = time.perf_counter()
    for _ in range(steps):
        out = fn()
    device.synchronize()
    pipelined = (time.perf_counter() - t) / steps
    losses.append(item(out))
    g = graph_class(device) if device.graph is not None else None
    from tinygrad.engine.realize import graph_cache
    notes = sorted({str(getattr(r, "cmdbuf_note", None)) for r in graph_cache.values()
                    if getattr(r, "cmdbuf_note", None)})
    return {
        "model": model, "desc": desc, "dev": dev, "steps": steps,
        "step_ms": statistics.median(times) * 1e3, "step_ms_mean": statistics.mean(times) * 1e3,
        "step_ms_min": min(times) * 1e3, "pipelined_ms": pipelined * 1e3,
        "warmup_s": warm_s, "setup_s": t0 - t_setup, "calls_per_step": kernels,
        "graph": getattr(g, "__name__", None), "graph_notes": notes,
        "renderer": type(device.renderer).__name__,
        "arch": getattr(device, "arch", None), "losses": losses,
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


def run_child(model, dev, steps, timeout):
    env = dict(os.environ)
    env["DEV"] = dev
    root = os.path.dirname(HERE)
    lib = os.path.join(root, ".device", "lib", "libtegragpu.so.0")
    if not env.get("TEGRAGPU_LIBRARY") and os.path.exists(lib):
        env["TEGRAGPU_LIBRARY"] = lib  # the device machine's copy
    paths = [os.path.join(root, "python")]
    if tinygrad_site():
        paths.insert(0, tinygrad_site())
    env["PYTHONPATH"] = os.pathsep.join(paths + [env.get("PYTHONPATH", "")])
    cmd = [sys.executable, os.path.abspath(__file__), "--child", model, dev, "--steps", str(steps)]
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
    ap.add_argument("--models", default=os.environ.get("TG_BENCH_MODELS", "mnist,gpt"))
    ap.add_argument("--devs", default=os.environ.get("TG_BENCH_DEVS", "CUDA,TEGRA"))
    ap.add_argument("--steps", type=int, default=int(os.environ.get("TG_BENCH_STEPS", "50")))
    ap.add_argument("--timeout", type=int, default=int(os.environ.get("TG_BENCH_TIMEOUT", "150")))
    ap.add_argument("--child", nargs=2, metavar=("MODEL", "DEV"), help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        res = child(a.child[0], a.child[1], a.steps)
        print("BENCH_RESULT " + json.dumps(res), flush=True)
        return 0

    models = [m for m in a.models.split(",") if m]
    devs = [d for d in a.devs.split(",") if d]
    results = []
    for m in models:
        for d in devs:
            r = run_child(m, d, a.steps, a.timeout)
            results.append(r)
            if "error" in r:
                print(f"{m} on {d}: FAILED ({r['error']})\n{r['log_tail']}", flush=True)
            else:
                print(f"{m} on {d}: step {r['step_ms']:.3f} ms (median; "
                      f"mean {r['step_ms_mean']:.3f}, "
                      f"min {r['step_ms_min']:.3f}), pipelined {r['pipelined_ms']:.3f} ms/step, "
                      f"{r['calls_per_step']} calls/step (a graph batch counts once), "
                      f"graph {r['graph']} {r.get('graph_notes') or ''}, "
                      f"{r['renderer']} {r['arch']}, warm-up {r['warmup_s']:.1f} s", flush=True)

    print("\nmodel   " + "".join(f"{d:>14}" for d in devs) + "   ratio (ms/step, " +
          f"{devs[-1]}/{devs[0]}; target <= 1.0)")
    summary = []
    for m in models:
        rs = {r["dev"]: r for r in results if r["model"] == m}
        cells, vals = [], []
        for d in devs:
            r = rs.get(d, {})
            v = r.get("step_ms")
            vals.append(v)
            cells.append(f"{v:14.3f}" if v is not None else f"{'FAILED':>14}")
        line = f"{m:8s}" + "".join(cells)
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
