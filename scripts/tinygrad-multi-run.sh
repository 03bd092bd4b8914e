#!/usr/bin/env bash
# Several GPUs through tinygrad: DEV=CUDA (libcuda) against DEV=TEGRA (libtegragpu) on a machine
# with two or more NVIDIA GPUs. Four parts, each reported as it finishes:
#
#   1. .device/tests/peer (the library's peer-access test on rm:0 and rm:1: copies both ways,
#      kernels over the other GPU's memory, a queue waiting on the other GPU's signal);
#   2. a check of TEGRA's multi-GPU paths (python, below): the peer link both ways (access and
#      GPU waits), a 256 MiB copy TEGRA -> TEGRA:1 and back (correct bytes, time beside CUDA's),
#      a sharded all-reduce, and a TinyJit whose batch holds copies between the GPUs (the graph
#      must be TegraGraph with copy steps, the results equal to CUDA's); then the two-GPU tests
#      of python/tests/test_tinygrad_multi.py (transfers and a batch with fixture kernels);
#   3. tinygrad's test/backend/test_multitensor.py and test/backend/test_graph.py on both
#      devices through scripts/tinygrad-device-run.sh (every test that passes on CUDA must pass
#      on TEGRA);
#   4. scripts/tinygrad-bench.py --models allreduce,dp (an all-reduce and a data-parallel mnist
#      training step over TG_BENCH_GPUS GPUs; ratio TEGRA/CUDA, target <= 1.0).
#
#   OUT=/some/dir bash scripts/tinygrad-multi-run.sh
#
# The whole run takes about 15-20 minutes; where one command may run 10 minutes at most, run
# the parts one by one into the same OUT: TG_SKIP="3 4", then TG_SKIP="1 2 4", then
# TG_SKIP="1 2 3" (each part stays under 9 minutes with the default limits below).
#
# Needs what scripts/tinygrad-device-run.sh needs (its header), plus in .device/tinygrad/test
# tinygrad's test/backend/test_multitensor.py and test_graph.py, and hypothesis (importable, or
# its wheel and sortedcontainers' in .device/tinygrad/whl; docs/tinygrad.md lists the files).
# Environment: TG_SKIP="1 2 3 4" skips parts; TG_BENCH_GPUS (default: all GPUs, at most 4);
# TG_BENCH_STEPS (default 30); TG_MULTI_COPY_MIB (part 2's copy, default 256); everything scripts/tinygrad-device-run.sh reads (TG_SHARDS
# default 2 here, TG_K, TG_TIMEOUT default 420 here, ...).
# Output ($OUT, default build/tinygrad-multi): multi_check.txt, peer_test.txt, tests/ (the
# device run's files: compare.txt, ops_*.txt, results.json, preflight.txt), bench.txt,
# bench.json, summary.txt. Exit status 0 when every part that ran passed.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
OUT="${OUT:-$ROOT/build/tinygrad-multi}"
mkdir -p "$OUT"
PY="${PYTHON:-python3}"
SKIP=" ${TG_SKIP:-} "
T0=$(date +%s)
log() { printf '\n=== %s (+%ss)\n' "$*" "$(( $(date +%s) - T0 ))"; }
summary=()
note() { summary+=("$1"); printf '%s\n' "$1"; }

ngpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | wc -l)
log "GPUs: $ngpu"
nvidia-smi --query-gpu=index,name,pci.bus_id,driver_version --format=csv,noheader 2>&1 || true
nvidia-smi topo -m 2>/dev/null | head -n 12 || true
if [ "$ngpu" -lt 2 ]; then
  note "SKIP everything: this machine has $ngpu GPU(s); the multi-GPU run needs 2 or more"
  printf '%s\n' "${summary[@]}" > "$OUT/summary.txt"
  exit 0
fi
export TEGRAGPU_LIBRARY="${TEGRAGPU_LIBRARY:-$ROOT/.device/lib/libtegragpu.so.0}"
status=0

# ---------------------------------------------------------------------------------------------
if [[ "$SKIP" != *" 1 "* ]]; then
  log "1. the library's peer test (.device/tests/peer)"
  if [ -x .device/tests/peer ]; then
    timeout -k 5 300 .device/tests/peer --test-threads=1 --nocapture > "$OUT/peer_test.txt" 2>&1
    rc=$?
    grep -E "^peer: |test result|panicked|FAILED" "$OUT/peer_test.txt"
    if [ $rc = 0 ]; then note "1. peer test: passed (peer_test.txt)"
    else note "1. peer test: FAILED, exit status $rc (peer_test.txt)"; status=1; fi
  else
    note "1. peer test: SKIP (no .device/tests/peer: run scripts/device-build.sh first)"
  fi
fi

# ---------------------------------------------------------------------------------------------
# tinygrad for parts 2 and 4 (part 3's script installs its own)
WORK="$(mktemp -d "${TMPDIR:-/tmp}/tinygrad-multi.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
if ! "$PY" -c 'import tinygrad' 2>/dev/null; then
  WHL="$(ls "$ROOT"/.device/tinygrad/whl/tinygrad-*.whl 2>/dev/null | head -n1)"
  if [ -n "$WHL" ]; then
    "$PY" -m pip install -q --no-index --no-deps --no-compile --target "$WORK/site" "$WHL" \
      2>/dev/null || "$PY" -m zipfile -e "$WHL" "$WORK/site"
  fi
fi
export PYTHONPATH="$WORK/site:$ROOT/python${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
export TEGRA_TIMEOUT_S="${TEGRA_TIMEOUT_S:-60}"
# tinygrad's CPU device (numpy inputs pass through it) compiles with $CC, default "clang".
cc_clang="$(command -v clang || ls /usr/bin/clang-[0-9]* 2>/dev/null | sort -V | tail -n1)"
if [ -n "$cc_clang" ]; then export CC="$cc_clang"; else unset CC; fi

if [[ "$SKIP" != *" 2 "* ]]; then
  log "2. TEGRA's multi-GPU paths (beside CUDA)"
  timeout -k 5 300 "$PY" - > "$OUT/multi_check.txt" 2>&1 <<'PYEOF'
import os, sys, time, traceback
import numpy as np
import tegragpu.tinygrad_device as td
from tinygrad import Device, Tensor, TinyJit
from tinygrad.engine.realize import graph_cache

fails = []
def check(what, ok, detail=""):
    print(f"  {'ok  ' if ok else 'FAIL'} {what}{': ' + detail if detail else ''}", flush=True)
    if not ok:
        fails.append(what)

def timed_copy(src, dst, n):
    a = Tensor(np.arange(n // 4, dtype=np.int32), device=src).realize()
    Device[src].synchronize()
    ts = []
    for _ in range(5):
        t = time.perf_counter()
        b = a.to(dst).realize()
        Device[dst].synchronize(); Device[src].synchronize()
        ts.append(time.perf_counter() - t)
    ok = bool((b[:1000].numpy() == np.arange(1000)).all() and
              (b[-1000:].numpy() == np.arange(n // 4 - 1000, n // 4)).all())
    return min(ts), ok

results = {}
for dev in os.environ.get("TG_DEVS", "CUDA TEGRA").split():
    print(f"--- {dev}", flush=True)
    d0, d1 = dev, f"{dev}:1"
    try:
        Device[d0], Device[d1]
    except Exception as e:
        check(f"{dev}: open {d0} and {d1}", False, f"{type(e).__name__}: {e}")
        continue
    if dev == "TEGRA":
        a, b = Device[d0], Device[d1]
        for x, y in ((a, b), (b, a)):
            can, why = x.tdev.peer_access_info(y.tdev)
            print(f"  {x.device} -> {y.device}: can_access_peer {can}: {why}")
        for x, y in ((a, b), (b, a)):
            lk = td._peer.link(x, y)
            check(f"peer link {x.device} -> {y.device} (access, GPU waits)", lk.access and lk.waits,
                  repr(lk))
        print(f"  graph class {Device[d0].graph.__name__}, a MultiGraphRunner: "
              f"{issubclass(Device[d0].graph, __import__('tinygrad.engine.jit', fromlist=['x']).MultiGraphRunner)}")
    n = int(os.environ.get("TG_MULTI_COPY_MIB", "256")) << 20
    for s, t in ((d0, d1), (d1, d0)):
        sec, ok = timed_copy(s, t, n)
        results[(dev, s.split(":")[-1] if ":" in s else "0")] = sec
        check(f"{dev}: {n >> 20} MiB {s} -> {t} bytes correct", ok,
              f"best of 5 {sec * 1e3:.2f} ms ({n / sec / 1e9:.1f} GB/s)")
    # all-reduce of a sharded tensor (tinygrad's naive allreduce on 2 GPUs)
    x = np.random.default_rng(0).standard_normal((2, n >> 8)).astype(np.float32)
    t = Tensor(x, device=d0).shard((d0, d1), axis=0).realize()
    got = t.sum(0).numpy()
    check(f"{dev}: all-reduce of 2 x {n >> 8} float32", bool(np.allclose(got, x.sum(0), rtol=1e-5, atol=1e-5)))
    # a TinyJit whose batch holds copies between the GPUs
    graph_cache.clear()
    @TinyJit
    def f(p, q):
        r = (p * 2 + 1).to(d1) + q
        return (r.to(d0) * 3).realize()
    p = Tensor(np.arange(4096, dtype=np.float32), device=d0).realize()
    q = Tensor(np.ones(4096, dtype=np.float32), device=d1).realize()
    want = ((np.arange(4096, dtype=np.float32) * 2 + 1) + 1) * 3
    outs = []
    for i in range(5):
        outs.append(f(p, q).numpy())
    check(f"{dev}: TinyJit with copies between the GPUs: results", all(np.array_equal(o, want) for o in outs))
    runners = [r for r in graph_cache.values() if hasattr(r, "calls")]
    copies = sum(1 for r in runners for (_, ast, _, _) in r.calls if ast.op.name == "COPY")
    notes = sorted({str(getattr(r, "cmdbuf_note", "")) for r in runners})
    print(f"  {dev}: {len(runners)} graph batch(es), {copies} copies inside them {notes}")
    if dev == "TEGRA":
        check("TEGRA: the JIT graph holds the copies between the GPUs", copies >= 2,
              f"{copies} copies in {len(runners)} batches")
for k in ("0", "1"):
    if ("CUDA", k) in results and ("TEGRA", k) in results:
        r = results[("TEGRA", k)] / results[("CUDA", k)]
        print(f"  the copy from GPU {k}: TEGRA / CUDA time = {r:.2f}")
print("RESULT:", "OK" if not fails else f"FAILED: {fails}")
sys.exit(1 if fails else 0)
PYEOF
  rc=$?
  # the TEGRA device's own two-GPU tests (fixture kernels, no tinygrad kernels)
  echo "--- python/tests/test_tinygrad_multi.py -k two_gpus (TEGRAGPU_DEVICE=rm)" >> "$OUT/multi_check.txt"
  TEGRAGPU_DEVICE="${TEGRAGPU_DEVICE:-rm}" timeout -k 5 240 "$PY" -m pytest -q -s -rfEs \
    -p no:cacheprovider -k "two_gpus or plan_steps" python/tests/test_tinygrad_multi.py \
    >> "$OUT/multi_check.txt" 2>&1 || rc=1
  cat "$OUT/multi_check.txt"
  if [ $rc = 0 ]; then note "2. multi-GPU check: passed (multi_check.txt)"
  else note "2. multi-GPU check: FAILED (multi_check.txt)"; status=1; fi
fi

# ---------------------------------------------------------------------------------------------
if [[ "$SKIP" != *" 3 "* ]]; then
  log "3. test_multitensor.py and test_graph.py, CUDA and TEGRA"
  mkdir -p "$OUT/tests"
  TG_SUITES="${TG_SUITES:-test/backend/test_multitensor.py test/backend/test_graph.py}" \
    TG_SHARDS="${TG_SHARDS:-2}" TG_TIMEOUT="${TG_TIMEOUT:-420}" OUT="$OUT/tests" \
    bash scripts/tinygrad-device-run.sh > "$OUT/tests/run.txt" 2>&1
  rc=$?
  tail -n 40 "$OUT/tests/compare.txt" 2>/dev/null || tail -n 40 "$OUT/tests/run.txt"
  res=$(grep '^RESULT' "$OUT/tests/compare.txt" 2>/dev/null || echo "RESULT: no comparison")
  if [ $rc = 0 ]; then note "3. tinygrad multi-GPU tests: $res (tests/compare.txt)"
  else note "3. tinygrad multi-GPU tests: exit status $rc: $res (tests/compare.txt, tests/run.txt)"; status=1; fi
fi

# ---------------------------------------------------------------------------------------------
if [[ "$SKIP" != *" 4 "* ]]; then
  gpus=${TG_BENCH_GPUS:-$(( ngpu > 4 ? 4 : ngpu ))}
  log "4. benchmark: all-reduce and data-parallel step over $gpus GPUs"
  TG_BENCH_GPUS=$gpus OUT="$OUT" timeout -k 5 "${TG_BENCH_TIMEOUT_TOTAL:-500}" "$PY" \
    scripts/tinygrad-bench.py --models "${TG_BENCH_MODELS:-allreduce,dp}" \
    --steps "${TG_BENCH_STEPS:-30}" > "$OUT/bench.txt" 2>&1
  rc=$?
  cat "$OUT/bench.txt"
  rows=$(grep -E '^(allreduce|dp) ' "$OUT/bench.txt" | tr -s ' ' | paste -sd ';' -)
  if [ $rc = 0 ]; then note "4. benchmark over $gpus GPUs (ms/step CUDA TEGRA ratio): $rows"
  else note "4. benchmark: exit status $rc: $rows (bench.txt)"; status=1; fi
fi

log "summary"
printf '%s\n' "${summary[@]}" | tee "$OUT/summary.txt"
echo "exit status $status"
exit $status
