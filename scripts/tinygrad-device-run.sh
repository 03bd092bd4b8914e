#!/usr/bin/env bash
# tinygrad's test_ops through libcuda (DEV=CUDA) and through libtegragpu (DEV=TEGRA, the device
# of python/tegragpu/tinygrad_device/) in one run on a machine with an NVIDIA GPU, then a
# comparison: every test that passes on CUDA must pass on TEGRA.
#
# Needs (the device machine has them): python3 >= 3.11 with numpy, torch and pytest; libcuda;
# libnvrtc (CUDA toolkit or the nvidia-cuda-nvrtc wheel); `timeout`. No network. From the
# working tree: .device/lib/libtegragpu.so.0 (or $TEGRAGPU_LIBRARY), python/ (the tegragpu
# package), .device/tinygrad/whl/tinygrad-0.14.0-py3-none-any.whl and .device/tinygrad/test/
# (tinygrad's test/backend/test_ops.py, test_jit.py and what they import). Tests that need a
# second GPU (test_multitensor.py, test_graph.py: DEV:1) use TEGRA:1 / CUDA:1 as they are; the
# hypothesis wheel in .device/tinygrad/whl is installed when hypothesis is missing.
# scripts/tinygrad-multi-run.sh runs the multi-GPU suites with this script.
#
#   OUT=/some/dir bash scripts/tinygrad-device-run.sh
#
# Environment:
#   TG_SUITES      test files, relative to .device/tinygrad (default: test/backend/test_ops.py
#                  test/backend/test_jit.py)
#   TG_K           a pytest -k expression (to run part of the suites)
#   TG_SHARDS      processes per device (default 3): tests are dealt round-robin
#   TG_CONCURRENT  1 (default): CUDA and TEGRA shards all run at once; 0: CUDA first, then TEGRA
#   TG_TIMEOUT     seconds per pytest process (default 300; killed 5 s later)
#   TG_TEST_TIMEOUT  seconds per test (default 120; SIGALRM fails the test, the run goes on)
#   TG_DEVS        devices to run (default "CUDA TEGRA")
#   TG_BENCH=1     also run scripts/tinygrad-bench.py afterwards
#   TEGRAGPU_DEVICE  the libtegragpu device TEGRA opens (default: the GPU of this machine)
# Output ($OUT, default build/tinygrad-run; at most 6 files): preflight.txt (versions, both
# devices' self-checks), ops_cuda.txt / ops_tegra.txt (pytest -rA output of every shard),
# compare.txt (counts and every test that passed on CUDA but not on TEGRA), results.json (every
# test's outcome on each device), bench.json (with TG_BENCH=1). Exit status 0 when nothing
# passed on CUDA failed on TEGRA and every pytest process finished.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
OUT="${OUT:-$ROOT/build/tinygrad-run}"
mkdir -p "$OUT"
PY="${PYTHON:-python3}"
TGDIR="$ROOT/.device/tinygrad"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/tinygrad-run.XXXXXX")"
SITE="$WORK/site"
SUITES="${TG_SUITES:-test/backend/test_ops.py test/backend/test_jit.py}"
SHARDS="${TG_SHARDS:-3}"
TO="${TG_TIMEOUT:-300}"
DEVS="${TG_DEVS:-CUDA TEGRA}"
T0=$(date +%s)
log() { printf '\n=== %s (+%ss)\n' "$*" "$(( $(date +%s) - T0 ))"; }

# ---------------------------------------------------------------------------------------------
log "set-up in $WORK"
WHL="$(ls "$TGDIR"/whl/tinygrad-*.whl 2>/dev/null | head -n1)"
[ -n "$WHL" ] || { echo "no tinygrad wheel in $TGDIR/whl"; exit 2; }
[ -d "$TGDIR/test" ] || { echo "no tinygrad tests in $TGDIR/test"; exit 2; }
mkdir -p "$SITE"
if ! "$PY" -m pip install -q --no-index --no-deps --no-compile --target "$SITE" "$WHL" 2>"$WORK/pip.err"; then
  echo "pip failed ($(tail -n1 "$WORK/pip.err")); unpacking the wheel"
  "$PY" -m zipfile -e "$WHL" "$SITE" || exit 2
fi
if ! "$PY" -c 'import pytest' 2>/dev/null; then
  "$PY" -m pip install -q --no-index --no-deps --no-compile --target "$SITE" "$ROOT"/.device/whl/*.whl || exit 2
fi
# test_multitensor.py imports hypothesis: its wheel (and sortedcontainers') from the tinygrad
# folder when the machine has none.
if ! "$PY" -c 'import hypothesis' 2>/dev/null; then
  hyp=("$TGDIR"/whl/hypothesis-*.whl "$TGDIR"/whl/sortedcontainers-*.whl)
  if [ -e "${hyp[0]}" ]; then
    "$PY" -m pip install -q --no-index --no-deps --no-compile --target "$SITE" "${hyp[@]}" \
      || echo "installing hypothesis from $TGDIR/whl failed"
  fi
fi
export PYTHONPATH="$SITE:$ROOT/python${PYTHONPATH:+:$PYTHONPATH}"
export TEGRAGPU_LIBRARY="${TEGRAGPU_LIBRARY:-$ROOT/.device/lib/libtegragpu.so.0}"
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
# Several pytest processes share the CPUs: keep torch (the tests' reference) to a few threads.
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-2}" MKL_NUM_THREADS="${MKL_NUM_THREADS:-2}"
# tinygrad's CPU device (used by tests that move data through CPU tensors) compiles with clang's
# flags through $CC, default "clang". A machine whose CC names gcc, or that has only a versioned
# clang, fails those tests on both devices: point CC at a clang.
cc_clang="$(command -v clang || ls /usr/bin/clang-[0-9]* 2>/dev/null | sort -V | tail -n1)"
if [ -n "$cc_clang" ]; then export CC="$cc_clang"; else unset CC; fi
# The library waits at most this long for the GPU (a hang fails one test, not the run).
export TEGRA_TIMEOUT_S="${TEGRA_TIMEOUT_S:-60}"
# Compile workers per pytest process (tinygrad compiles kernels in a process pool).
NPROC=$(nproc 2>/dev/null || echo 8)
ndev=$(echo $DEVS | wc -w)
if [ "${TG_CONCURRENT:-1}" = 1 ]; then nproc_run=$((SHARDS * ndev)); else nproc_run=$SHARDS; fi
export PARALLEL="${PARALLEL:-$(( NPROC / nproc_run > 1 ? NPROC / nproc_run : 1 ))}"

# tinygrad looks for libnvrtc and libcuda in a few places of its own; point it at them when
# they lie elsewhere (the CUDA toolkit, pip's nvidia packages, the driver's folder).
"$PY" - "$WORK/libs.env" <<'PYEOF'
import glob, os, sys, sysconfig
out = []
from tinygrad.runtime.support.c import DLL
mach = sysconfig.get_config_vars().get("MULTIARCH", "").rsplit("-", 1)[0]
nvrtc_default = [f"/{p}/cuda/targets/{t}/lib" for p in ("opt", "usr/local") for t in (mach, "sbsa-linux")]
def find(pats):
    for pat in pats:
        for p in sorted(glob.glob(pat), reverse=True):
            if os.path.isfile(p):
                return p
    return None
sp = [p for p in sys.path if p.endswith("-packages")]
if not os.environ.get("NVRTC_PATH") and DLL.findlib("nvrtc", ["nvrtc"] + nvrtc_default) is None:
    p = find(["/usr/local/cuda/lib64/libnvrtc.so*", "/usr/local/cuda*/targets/*/lib/libnvrtc.so*",
              "/usr/local/cuda*/lib64/libnvrtc.so*", "/usr/lib/x86_64-linux-gnu/libnvrtc.so*"] +
             [f"{s}/nvidia/*/lib/libnvrtc.so*" for s in sp] + [f"{s}/nvidia/*/*/lib/libnvrtc.so*" for s in sp])
    if p: out.append(f"export NVRTC_PATH={p}")
if DLL.findlib("cuda", ["cuda"]) is None:
    p = find(["/usr/local/nvidia/lib64/libcuda.so*", "/usr/lib64/libcuda.so*", "/usr/local/cuda/compat/libcuda.so*"])
    if p: out.append(f"export LD_LIBRARY_PATH={os.path.dirname(p)}:${{LD_LIBRARY_PATH:-}}")
if not os.path.isdir("/usr/local/cuda/include") and not os.environ.get("CUDA_PATH"):
    inc = find(["/usr/local/cuda*/include/cuda_fp16.h"] + [f"{s}/nvidia/*/include/cuda_fp16.h" for s in sp])
    if inc: out.append(f"export CUDA_PATH={os.path.dirname(os.path.dirname(inc))}")
open(sys.argv[1], "w").write("\n".join(out) + "\n")
PYEOF
cat "$WORK/libs.env"
# shellcheck disable=SC1090
source "$WORK/libs.env"

# The tests run from a copy (pytest writes caches; the imports need the folder holding test/).
mkdir -p "$WORK/tg"
cp -r "$TGDIR/test" "$WORK/tg/"
printf '[pytest]\naddopts = -p no:cacheprovider\n' > "$WORK/tg/pytest.ini"

# A pytest plugin: shard TG_SHARD=i/n (round-robin over the collected tests), a per-test timeout
# (SIGALRM), and every test's outcome appended to TG_RESULTS as it finishes (kept if the process
# is killed).
cat > "$SITE/tg_run_plugin.py" <<'PYEOF'
import json, os, signal
import pytest

_i, _n = (int(x) for x in os.environ.get("TG_SHARD", "0/1").split("/"))
_results = os.environ.get("TG_RESULTS")
_timeout = float(os.environ.get("TG_TEST_TIMEOUT", "0") or 0)
_state = {}


@pytest.hookimpl(trylast=True)  # after -k / -m deselection
def pytest_collection_modifyitems(config, items):
    keep = [it for k, it in enumerate(items) if k % _n == _i]
    drop = [it for k, it in enumerate(items) if k % _n != _i]
    if drop:
        config.hook.pytest_deselected(items=drop)
    items[:] = keep
    if _results:
        with open(_results + ".collected", "w") as f:
            f.write("\n".join(it.nodeid for it in keep) + "\n")


class TestTimeout(Exception):
    pass


def _alarm(signum, frame):
    raise TestTimeout(f"test ran longer than TG_TEST_TIMEOUT={_timeout:g} s")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    old = None
    if _timeout > 0:
        old = signal.signal(signal.SIGALRM, _alarm)
        signal.setitimer(signal.ITIMER_REAL, _timeout)
    try:
        yield
    finally:
        if _timeout > 0:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, old)


def _msg(report):
    lr = report.longrepr
    if isinstance(lr, tuple) and len(lr) == 3:
        return str(lr[2])
    text = getattr(report, "longreprtext", "") or str(lr or "")
    lines = [ln for ln in text.splitlines() if ln.startswith("E ")] or text.splitlines()[-3:]
    return " | ".join(ln.strip() for ln in lines[:6])[:600]


def pytest_runtest_logreport(report):
    st = _state.setdefault(report.nodeid, {"outcome": "passed", "duration": 0.0, "message": ""})
    st["duration"] += report.duration
    if hasattr(report, "wasxfail"):
        st["outcome"] = "xfailed" if report.skipped else "xpassed"
    elif report.failed:
        if st["outcome"] not in ("failed", "error"):
            st["outcome"] = "failed" if report.when == "call" else "error"
            st["message"] = _msg(report)
    elif report.skipped and st["outcome"] == "passed":
        st["outcome"] = "skipped"
        st["message"] = _msg(report)
    if report.when == "teardown" and _results:
        with open(_results, "a") as f:
            f.write(json.dumps({"nodeid": report.nodeid, **st}) + "\n")
PYEOF

# ---------------------------------------------------------------------------------------------
log "preflight"
{
  date -u
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 || true
  "$PY" -c 'import sys, numpy, torch, pytest; print("python", sys.version.split()[0], "numpy", numpy.__version__, "torch", torch.__version__, "pytest", pytest.__version__)'
  "$PY" -c 'import tinygrad, importlib.metadata as m; print("tinygrad", m.version("tinygrad"), "from", tinygrad.__file__)'
  echo "TEGRAGPU_LIBRARY=$TEGRAGPU_LIBRARY TEGRAGPU_DEVICE=${TEGRAGPU_DEVICE:-} PARALLEL=$PARALLEL shards=$SHARDS suites=$SUITES CC=${CC:-}"
  echo "--- TEGRA: python3 -m tegragpu.tinygrad_device --info"
  DEV=TEGRA timeout -k 5 120 "$PY" -m tegragpu.tinygrad_device --info 2>&1; echo "rc=$?"
  echo "--- CUDA"
  DEV=CUDA timeout -k 5 120 "$PY" -c '
from tinygrad import Device, Tensor
d = Device["CUDA"]
print("CUDA", d.arch, type(d.renderer).__name__, (Tensor([1, 2, 3]) * 2 + 1).tolist())' 2>&1; echo "rc=$?"
  echo "--- python/tests/test_tinygrad_device.py python/tests/test_tinygrad_multi.py (TEGRAGPU_DEVICE=${TEGRAGPU_DEVICE:-rm})"
  TEGRAGPU_DEVICE="${TEGRAGPU_DEVICE:-rm}" timeout -k 5 180 "$PY" -m pytest -q -rfEs \
    -p no:cacheprovider python/tests/test_tinygrad_device.py python/tests/test_tinygrad_multi.py 2>&1 | tail -n 40
} > "$OUT/preflight.txt" 2>&1
cat "$OUT/preflight.txt"

# ---------------------------------------------------------------------------------------------
run_shard() { # dev shard
  local dev=$1 i=$2 name
  name=$(echo "$dev" | tr 'A-Z:' 'a-z_')
  local extra=()
  [ "${dev%%:*}" = TEGRA ] && extra=(-p tegragpu.tinygrad_device)
  local kargs=()
  [ -n "${TG_K:-}" ] && kargs=(-k "$TG_K")
  (
    cd "$WORK/tg" || exit 2
    # shellcheck disable=SC2086
    DEV=$dev TG_SHARD="$i/$SHARDS" TG_RESULTS="$WORK/res_${name}_$i.jsonl" \
      TG_TEST_TIMEOUT="${TG_TEST_TIMEOUT:-120}" \
      timeout -k 5 "$TO" "$PY" -m pytest -q -rA -p tg_run_plugin "${extra[@]}" \
      --junitxml="$WORK/junit_${name}_$i.xml" "${kargs[@]}" $SUITES \
      > "$WORK/ops_${name}_$i.txt" 2>&1
    echo $? > "$WORK/rc_${name}_$i"
  )
}

pids=()
for dev in $DEVS; do
  log "pytest DEV=$dev: $SHARDS processes, timeout ${TO}s each"
  for i in $(seq 0 $((SHARDS - 1))); do
    run_shard "$dev" "$i" &
    pids+=($!)
  done
  if [ "${TG_CONCURRENT:-1}" != 1 ]; then wait "${pids[@]}"; pids=(); fi
done
[ ${#pids[@]} -gt 0 ] && wait "${pids[@]}"
log "pytest done"

for dev in $DEVS; do
  name=$(echo "$dev" | tr 'A-Z:' 'a-z_')
  for i in $(seq 0 $((SHARDS - 1))); do
    rc=$(cat "$WORK/rc_${name}_$i" 2>/dev/null || echo '?')
    case $rc in 124|137) rc="$rc (timed out)";; esac
    echo "===== DEV=$dev shard $i/$SHARDS: pytest exit status $rc: $(tail -n1 "$WORK/ops_${name}_$i.txt" 2>/dev/null)" | tee /dev/stderr
    cat "$WORK/ops_${name}_$i.txt" 2>/dev/null
  done > "$OUT/ops_$name.txt"
done

# ---------------------------------------------------------------------------------------------
log "compare"
"$PY" - "$WORK" "$OUT" "$SHARDS" $DEVS <<'PYEOF'
import collections, json, os, sys
work, out, shards, devs = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]
results, procs = {}, {}
for dev in devs:
    name = dev.lower().replace(":", "_")
    res, collected, rcs = {}, set(), []
    for i in range(shards):
        base = os.path.join(work, f"res_{name}_{i}.jsonl")
        try:
            collected |= set(open(base + ".collected").read().split())
        except OSError:
            pass
        try:
            for line in open(base):
                r = json.loads(line)
                res[r["nodeid"]] = r
        except OSError:
            pass
        try:
            rcs.append(open(os.path.join(work, f"rc_{name}_{i}")).read().strip())
        except OSError:
            rcs.append("?")
    for nid in collected - set(res):
        res[nid] = {"nodeid": nid, "outcome": "not run", "duration": 0.0,
                    "message": "the pytest process ended (crash or timeout) before this test"}
    results[dev], procs[dev] = res, rcs

lines = []
def say(s=""):
    lines.append(s)
    print(s)

for dev in devs:
    c = collections.Counter(r["outcome"] for r in results[dev].values())
    say(f"{dev}: {len(results[dev])} tests: " + ", ".join(f"{n} {k}" for k, n in sorted(c.items())) +
        f"; pytest exit statuses {procs[dev]}")
    by_file = collections.defaultdict(collections.Counter)
    for nid, r in results[dev].items():
        by_file[nid.split("::")[0]][r["outcome"]] += 1
    for f, c in sorted(by_file.items()):
        say(f"    {f}: " + ", ".join(f"{n} {k}" for k, n in sorted(c.items())))
regressions = []
if len(devs) >= 2:
    ref, tst = devs[0], devs[-1]
    ok = {n for n, r in results[ref].items() if r["outcome"] == "passed"}
    regressions = sorted(n for n in ok if results[tst].get(n, {}).get("outcome") != "passed")
    better = sorted(n for n, r in results[tst].items() if r["outcome"] == "passed" and
                    results[ref].get(n, {}).get("outcome") != "passed")
    say()
    say(f"passed on {ref} but not on {tst}: {len(regressions)}")
    for n in regressions:
        r = results[tst].get(n, {"outcome": "missing", "message": "not collected"})
        say(f"  {n}: {r['outcome']}: {r.get('message', '')}")
    say()
    say(f"passed on {tst} but not on {ref}: {len(better)}")
    for n in better:
        r = results[ref].get(n, {"outcome": "missing", "message": ""})
        say(f"  {n}: {ref} {r['outcome']}: {r.get('message', '')[:200]}")
    tr = sum(r["duration"] for r in results[ref].values())
    tt = sum(r["duration"] for r in results[tst].values())
    say()
    say(f"summed test durations: {ref} {tr:.1f} s, {tst} {tt:.1f} s")
    say(f"RESULT: {'OK' if not regressions else 'REGRESSIONS'}: every test that passed on {ref} "
        f"{'also passed' if not regressions else 'did NOT all pass'} on {tst} "
        f"({len(ok) - len(regressions)}/{len(ok)})")
open(os.path.join(out, "compare.txt"), "w").write("\n".join(lines) + "\n")
json.dump({"devices": devs, "shards": shards, "exit_statuses": procs, "regressions": regressions,
           "results": {d: sorted(results[d].values(), key=lambda r: r["nodeid"]) for d in devs}},
          open(os.path.join(out, "results.json"), "w"), indent=0)
finished = all(rc in ("0", "1") for rcs in procs.values() for rc in rcs)
if not finished:
    print("note: a pytest process did not finish normally (exit statuses above; 124/137 = timeout)")
sys.exit(0 if not regressions and finished else 1)
PYEOF
status=$?

if [ "${TG_BENCH:-0}" = 1 ]; then
  log "benchmark (scripts/tinygrad-bench.py)"
  OUT="$OUT" timeout -k 5 "${TG_BENCH_TIMEOUT_TOTAL:-400}" "$PY" scripts/tinygrad-bench.py || status=1
fi
log "done: exit status $status"
rm -rf "$WORK"
exit $status
