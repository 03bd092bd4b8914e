#!/usr/bin/env bash
# numba-cuda's test suite on the device machine (x86_64, NVIDIA driver, H100/H200, python3 with
# numba, numba-cuda, cuda-bindings, cuda-core and the NVVM / nvJitLink / NVRTC they compile with),
# once on NVIDIA's libcuda and once on ours (libtegragpu's libcuda.so.1, the cuda/ crate), each
# in its own processes; the per-test outcomes are compared:
#
#   numba-cuda: N tests; NVIDIA passed P1; ours passed P2; passed on NVIDIA but failed on ours: F
#
# and the F tests are listed with the reason ours gave. numba-cuda uses no CUDA runtime
# (libcudart): it reaches the driver through cuda-bindings (dlopen of libcuda.so.1, then
# cuGetProcAddress for every function) and ctypes (libcuda.so), compiles with NVVM and links with
# nvJitLink, and loads the result with cuLibraryLoadData.
#
# The selection (NB_TESTS, packages of the installed numba-cuda): numba.cuda.tests.cudadrv (the
# driver wrapper: contexts, memory, streams, events, modules, linking), numba.cuda.tests.cudapy
# (kernels compiled from Python: the language, arrays, atomics, intrinsics, math, ufuncs, caching,
# streams, cooperative groups, printing), numba.cuda.tests.nrt (the device runtime) and
# numba.cuda.tests.doc_examples. Left out: cudasim (the simulator, no driver), nocuda (no driver
# at all), benchmarks, and NB_DESELECT (pytest -k): test_fork (a test of fork detection whose
# result does not depend on the driver). Tests that use what ours refuses by design run and
# are reported: managed memory, host memory registered with CU_MEMHOSTREGISTER_DEVICEMAP, grid
# synchronization of cooperative groups (the driver's __cuda_syscall_CGS_sync, which ours does
# not provide).
#
# Needs: .device/lib/cuda/libcuda.so.1 (scripts/device-build.sh; NB_LIBCUDA names another);
# pytest (>= 8.1) and filecheck importable by $PYTHON, else in NB_PYDEPS (default .device/pydeps,
# put first on PYTHONPATH when it exists; pure-Python wheels, made where there is a network with
#   python3 -m pip install --target .device/pydeps --python-version 3.12 --only-binary=:all: \
#     pytest filecheck
# and carried); cffi where installed (test_cuda_driver imports it).
#
#   OUT=/some/dir bash scripts/numba-cuda-device-run.sh
#
# Environment: NB_LIBS (default "nvidia ours": which runs; one at a time fits a shorter command,
# the comparison uses the results kept in NB_STATE from an earlier call), NB_PARALLEL (default 1:
# the two runs at once, in separate processes; 0: one after the other), NB_TIMEOUT (seconds per
# library, default 480), NB_TEST_TIMEOUT (seconds per test, default 60: a test that runs longer
# ends its process, is counted as failed, and the run goes on from the next module),
# NB_TESTS, NB_DESELECT, PYTHON (default python3).
#
# Output ($OUT, default build/numba-cuda-run): summary.txt (the summary line, the lists),
# outcomes.tsv (test, NVIDIA's outcome, ours), log.nvidia.txt and log.ours.txt (pytest's output,
# our library's warnings: the name of each unimplemented function it was asked for), precheck.txt.
# NB_STATE (default build/numba-cuda-state) keeps each library's results between calls.
# Exit status 0 when both runs completed (failures of ours are reported, not fatal).
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
OUT="${OUT:-$ROOT/build/numba-cuda-run}"
STATE="${NB_STATE:-$ROOT/build/numba-cuda-state}"
mkdir -p "$OUT" "$STATE"
D="$ROOT/.device"
PY="${PYTHON:-python3}"
OURS="${NB_LIBCUDA:-$D/lib/cuda/libcuda.so.1}"
LIBS="${NB_LIBS:-nvidia ours}"
PARALLEL="${NB_PARALLEL:-1}"
TMO="${NB_TIMEOUT:-480}"
TEST_TMO="${NB_TEST_TIMEOUT:-60}"
TESTS="${NB_TESTS:-numba.cuda.tests.cudadrv numba.cuda.tests.cudapy numba.cuda.tests.nrt numba.cuda.tests.doc_examples}"
DESELECT="${NB_DESELECT:-not test_fork}"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/numba-cuda.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
rc=0
log() { printf '\n=== %s\n' "$*"; }

case " $LIBS " in *" ours "*)
  [ -f "$OURS" ] || { echo "no $OURS (run scripts/device-build.sh)"; exit 2; }
  OURS="$(readlink -f "$OURS")"
  # Ours must not load NVIDIA's libcuda.
  if ldd "$OURS" | grep -q 'libcuda\.so'; then echo "FAIL: $OURS depends on a libcuda"; exit 2; fi
  echo "ours: $OURS";;
esac

# Python packages: the carried ones first.
PYDEPS="${NB_PYDEPS:-$D/pydeps}"
[ -d "$PYDEPS" ] && export PYTHONPATH="$PYDEPS${PYTHONPATH:+:$PYTHONPATH}"
if ! "$PY" -c 'import numba_cuda, numba.cuda, cuda.bindings, cuda.core' 2>"$WORK/imp.err"; then
  cat "$WORK/imp.err"; echo "FAIL: numba-cuda is not importable by $PY"; exit 2
fi
if ! "$PY" -c 'import filecheck, _pytest.pathlib as p; p.resolve_pkg_root_and_module_name' 2>"$WORK/imp.err"; then
  cat "$WORK/imp.err"
  echo "FAIL: pytest >= 8.1 and filecheck are needed (numba.cuda.testing imports them): install them, or"
  echo "      python3 -m pip install --target .device/pydeps pytest filecheck  (and carry .device/pydeps)"
  exit 2
fi
"$PY" -c 'import numba_cuda, numba, cuda.bindings, cuda.core, pytest, sys
print("python", sys.version.split()[0], "numba", numba.__version__, "numba-cuda", numba_cuda.__version__,
      "cuda-bindings", cuda.bindings.__version__, "cuda-core", cuda.core.__version__, "pytest", pytest.__version__)' |
  tee "$OUT/precheck.txt"
SITE="$("$PY" -c 'import numba_cuda, os; print(os.path.dirname(os.path.dirname(numba_cuda.__file__)))')"
# The packages of the selection this numba-cuda has (pytest stops at one it cannot find).
TESTS="$("$PY" - $TESTS <<'PYEOF'
import importlib.util, sys
have = []
for name in sys.argv[1:]:
    try:
        spec = importlib.util.find_spec(name)
    except ImportError:
        spec = None
    (have.append(name) if spec else print(f"not in this numba-cuda: {name}", file=sys.stderr))
print(" ".join(have))
PYEOF
)"
[ -n "$TESTS" ] || { echo "FAIL: none of the selected test packages is installed"; exit 2; }
echo "selection: $TESTS (deselected: $DESELECT)" | tee -a "$OUT/precheck.txt"

# A pytest plugin: the installed tests need the option and fixture of numba-cuda's own conftest;
# their modules are named numba.cuda.tests.* (numba_cuda/numba has no __init__.py: pytest would
# name them cuda.tests.*, which the tests' child processes cannot import); a test running longer
# than NB_TEST_TIMEOUT ends the process (faulthandler prints where it was).
mkdir -p "$WORK/plugin"
cat >"$WORK/plugin/nbcuda_device_plugin.py" <<'PYEOF'
import faulthandler
import os
from pathlib import Path

import _pytest.pathlib as _pl
import pytest

_resolve = _pl.resolve_pkg_root_and_module_name
_MARK = os.sep + os.path.join("numba_cuda", "numba", "cuda") + os.sep


def _numba_cuda_module(path, *args, **kwargs):
    p = str(path)
    i = p.find(_MARK)
    if i >= 0 and p.endswith(".py"):
        parts = p[i + len(os.sep + "numba_cuda" + os.sep):-3].split(os.sep)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        return Path(p[:i]), ".".join(parts)
    return _resolve(path, *args, **kwargs)


_pl.resolve_pkg_root_and_module_name = _numba_cuda_module
_TIMEOUT = float(os.environ.get("NB_TEST_TIMEOUT", "60"))


def pytest_addoption(parser):
    parser.addoption("--dump-failed-filechecks", action="store_true", default=False)


@pytest.fixture(scope="class")
def initialize_from_pytest_config(request):
    request.cls._dump_failed_filechecks = request.config.getoption("dump_failed_filechecks")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    faulthandler.dump_traceback_later(_TIMEOUT, exit=True)
    try:
        yield
    finally:
        faulthandler.cancel_dump_traceback_later()
PYEOF
printf '[pytest]\n' >"$WORK/pytest.ini"
export PYTHONPATH="$WORK/plugin${PYTHONPATH:+:$PYTHONPATH}"

# Our library first on the library path, under both names numba loads (ctypes: libcuda.so;
# cuda-bindings: libcuda.so.1).
ourdir="$WORK/ourlib"
mkdir -p "$ourdir"
[ -f "$OURS" ] && ln -sf "$OURS" "$ourdir/libcuda.so.1" && ln -sf "$OURS" "$ourdir/libcuda.so"

# Runs a command with one library's environment.
with_lib() { # lib, command...
  local lib="$1"; shift
  if [ "$lib" = ours ]; then
    env -u TEGRAGPU_DEVICE LD_LIBRARY_PATH="$ourdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
      TEGRAGPU_LOG="${TEGRAGPU_LOG:-warn}" "$@"
  else
    env LD_LIBRARY_PATH="${LD_LIBRARY_PATH:-}" "$@"
  fi
}

# The libcuda a numba process really uses: initialize CUDA, read /proc/self/maps.
precheck() { # lib
  with_lib "$1" "$PY" - "$1" "$OURS" <<'PYEOF'
import os, re, sys
lib, ours = sys.argv[1], os.path.realpath(sys.argv[2]) if os.path.exists(sys.argv[2]) else ""
from numba import cuda
cuda.current_context()
dev = cuda.get_current_device()
maps = {os.path.realpath(l.split()[-1]) for l in open("/proc/self/maps")
        if len(l.split()) >= 6 and re.match(r"libcuda[.-]", os.path.basename(l.split()[-1]))}
print(f"{lib}: device {dev.name.decode() if isinstance(dev.name, bytes) else dev.name}, "
      f"cc {dev.compute_capability}, libcuda mapped: {sorted(maps)}")
if lib == "ours" and maps != {ours}:
    sys.exit(f"FAIL: the ours run maps {sorted(maps)}, not only {ours}")
if lib == "nvidia" and (not maps or ours in maps):
    sys.exit(f"FAIL: the nvidia run maps {sorted(maps)}")
PYEOF
}

# One library's run: pytest over the selection; when a process ends without its summary line
# (a crash, or a test past NB_TEST_TIMEOUT), the run goes on from the next module.
run_lib() { # lib
  local lib="$1" st="$STATE/$1" deadline=$(( $(date +%s) + TMO )) part=0
  rm -rf "$st"; mkdir -p "$st"
  if ! precheck "$lib" >>"$st/precheck.txt" 2>&1; then
    cat "$st/precheck.txt"; echo "FAIL: precheck ($lib)"; echo precheck-failed >"$st/status"; return 1
  fi
  local args=(--pyargs $TESTS)
  while :; do
    local left=$(( deadline - $(date +%s) ))
    [ "$left" -gt 20 ] || { echo "$lib: out of time" >>"$st/log.txt"; echo timeout >"$st/status"; return 1; }
    (cd "$WORK" && with_lib "$lib" env NB_TEST_TIMEOUT="$TEST_TMO" timeout -k 10 "$left" \
      "$PY" -m pytest -p nbcuda_device_plugin -p no:cacheprovider -c "$WORK/pytest.ini" \
      --rootdir="$SITE" --continue-on-collection-errors -v -rfE \
      --junitxml="$st/junit$part.xml" -o junit_logging=system-err -o junit_family=xunit1 \
      -k "$DESELECT" "${args[@]}") >"$st/part$part.txt" 2>&1
    cat "$st/part$part.txt" >>"$st/log.txt"
    if tail -n 3 "$st/part$part.txt" | grep -qE '^=+ .*(passed|failed|error|skipped|deselected).* in [0-9.]+s'; then
      echo done >"$st/status"; return 0
    fi
    # Ended early: the last test started is counted as failed (crashed); go on after its module.
    local next
    next="$("$PY" - "$st/part$part.txt" "$SITE" $TESTS <<'PYEOF'
import os, re, sys
log, site, pkgs = sys.argv[1], sys.argv[2], sys.argv[3:]
started = [m.group(1) for m in re.finditer(r"^(\S+\.py::\S+)", open(log, errors="replace").read(), re.M)]
if not started:
    sys.exit(0)
last = started[-1]
print("CRASHED", last)
path = last.split("::")[0]
mod = os.path.join(site, path[path.index("numba_cuda/"):]) if "numba_cuda/" in path else path
files = []
for p in pkgs:
    d = os.path.join(site, "numba_cuda", *p.split("."))
    if not os.path.isdir(d):
        continue
    files += sorted(os.path.join(d, f) for f in os.listdir(d) if f.startswith("test_") and f.endswith(".py"))
if mod in files:
    for f in files[files.index(mod) + 1:]:
        print(f)
PYEOF
)"
    local crashed; crashed="$(printf '%s\n' "$next" | sed -n 's/^CRASHED //p')"
    [ -n "$crashed" ] && printf '%s CRASHED\n' "$crashed" >>"$st/crashed.txt"
    mapfile -t rest < <(printf '%s\n' "$next" | grep -v '^CRASHED ' | grep .)
    part=$((part + 1))
    if [ -z "$crashed" ] || [ "${#rest[@]}" = 0 ] || [ "$part" -gt 8 ]; then echo done-early >"$st/status"; return 0; fi
    args=("${rest[@]}")
  done
}

for lib in $LIBS; do log "precheck and run: $lib"; done
if [ "$PARALLEL" = 1 ]; then
  pids=()
  for lib in $LIBS; do run_lib "$lib" & pids+=($!); done
  for p in "${pids[@]}"; do wait "$p" || rc=1; done
else
  for lib in $LIBS; do run_lib "$lib" || rc=1; done
fi
for lib in $LIBS; do
  echo "$lib: $(cat "$STATE/$lib/status" 2>/dev/null), $(tail -n 1 "$STATE/$lib/log.txt" 2>/dev/null)"
  cat "$STATE/$lib/precheck.txt" >>"$OUT/precheck.txt" 2>/dev/null
  cp "$STATE/$lib/log.txt" "$OUT/log.$lib.txt" 2>/dev/null
done

# --------------------------------------------------------------------------------------------
log "comparison"
if [ -f "$STATE/nvidia/log.txt" ] && [ -f "$STATE/ours/log.txt" ]; then
  "$PY" - "$STATE/nvidia" "$STATE/ours" "$OUT" <<'PYEOF' | tee "$OUT/summary.txt"
import os, re, sys
nv_dir, ours_dir, out = sys.argv[1:4]
import glob
import xml.etree.ElementTree as ET
RANK = {"PASSED": 0, "SKIPPED": 1, "XPASS": 2, "FAILED": 3, "ERROR": 3, "CRASHED": 4}
LINE = re.compile(r"^(\S+\.py::\S+)\s+(PASSED|FAILED|SKIPPED|XFAIL|XPASS|ERROR)\b")
def key(nodeid):  # as junit names a test: numba_cuda.numba.cuda.tests.<module>.<class>.<test>
    i = nodeid.find("numba_cuda/")
    return nodeid[max(i, 0):].replace(".py::", ".").replace("/", ".").replace("::", ".")
def put(res, why, t, o, w=""):
    if t not in res or RANK[o] > RANK[res[t]]:
        res[t] = o
        if w:
            why[t] = w[:160]
def load(d):
    """Outcomes by test: from each part's junit XML, or (a part that ended early) its -v lines."""
    res, why, err = {}, {}, []
    for part in sorted(glob.glob(os.path.join(d, "part*.txt"))):
        xml = os.path.join(d, os.path.basename(part).replace("part", "junit").replace(".txt", ".xml"))
        try:
            cases = list(ET.parse(xml).iter("testcase"))
        except (OSError, ET.ParseError):
            cases = None
        if cases is not None:
            for c in cases:
                t = f"{c.get('classname')}.{c.get('name')}"
                o, w = "PASSED", ""
                for e in c:
                    if e.tag in ("failure", "error"):
                        o, w = ("FAILED" if e.tag == "failure" else "ERROR"), (e.get("message") or e.tag)
                    elif e.tag == "skipped" and o == "PASSED":
                        o, w = "SKIPPED", e.get("message") or ""
                    elif e.tag == "system-err":
                        err.append(e.text or "")
                put(res, why, t, o, w.replace("\n", " "))
        else:
            for line in open(part, errors="replace"):
                m = LINE.match(line)
                if m:
                    o = m.group(2)
                    put(res, why, key(m.group(1)), "SKIPPED" if o == "XFAIL" else o)
        err.append(open(part, errors="replace").read())
    p = os.path.join(d, "crashed.txt")
    if os.path.exists(p):
        for line in open(p):
            put(res, why, key(line.split()[0]), "CRASHED",
                "the process ended in this test (crash or NB_TEST_TIMEOUT)")
    return res, why, "\n".join(err)
nv, nv_why, _ = load(nv_dir)
ours, ours_why, ours_err = load(ours_dir)
ok = lambda o: o == "PASSED"
tests = sorted(set(nv) | set(ours))
p1 = sum(ok(nv.get(t, "")) for t in tests)
p2 = sum(ok(ours.get(t, "")) for t in tests)
regress = [t for t in tests if ok(nv.get(t, "")) and not ok(ours.get(t, "NOT RUN"))]
better = [t for t in tests if ok(ours.get(t, "")) and not ok(nv.get(t, "NOT RUN"))]
short = lambda t: t.split("numba.cuda.tests.", 1)[-1]
print(f"numba-cuda: {len(tests)} tests; NVIDIA passed {p1}; ours passed {p2}; "
      f"passed on NVIDIA but failed on ours: {len(regress)}")
for t in regress:
    print(f"  {short(t)}: {ours.get(t, 'NOT RUN')}: {ours_why.get(t, '')}")
if better:
    print(f"passed on ours but not on NVIDIA: {len(better)}")
    for t in better:
        print(f"  {short(t)}: NVIDIA {nv.get(t, 'NOT RUN')}: {nv_why.get(t, '')}")
names = sorted(set(re.findall(r"tegragpu::cuda: (cu\w+) is not implemented", ours_err)))
print("functions ours was asked for and does not implement:", " ".join(names) or "none")
with open(os.path.join(out, "outcomes.tsv"), "w") as f:
    f.write("test\tnvidia\tours\n")
    for t in tests:
        f.write(f"{short(t)}\t{nv.get(t, 'NOT RUN')}\t{ours.get(t, 'NOT RUN')}\n")
PYEOF
else
  echo "no comparison: results of both libraries are needed in $STATE (NB_LIBS ran: $LIBS)"
fi
exit $rc
