#!/usr/bin/env bash
# libtegragpu's libcuda.so.1 (the cuda/ crate) on the device machine (x86_64, NVIDIA driver 580,
# H100/H200, nvcc, gcc, python3):
#   1. the differential test: cuda/tests/c/difftest.c, built here with gcc against the toolkit's
#      cuda.h, runs NVIDIA's libcuda and then ours in one process (both loaded RTLD_LOCAL), each
#      printing one `key value` line per observation (result codes, device facts, every
#      attribute, hashes of copy, memset, launch and graph results); the outputs are compared
#      line by line: `N compared, N equal, N differ` and every difference. Each library also
#      runs alone in a process of its own, and the script says whether its observations match;
#   2. the Rust tests of the driver API (cuda/tests/driver/, .device/tests/driver) and the
#      launch hot-path test (cuda/tests/cuda_hot_path.rs) and the free-memory accounting test
#      (cuda/tests/mem_accounting.rs) on this GPU;
#   3. with CF_TINYGRAD=1 and tinygrad carried in .device/tinygrad: tinygrad's test_ops and
#      test_jit with DEV=CUDA through our libcuda (scripts/tinygrad-device-run.sh with TG_DEVS=CUDA
#      and our library first on the library path); CF_TINYGRAD_BASELINE=1 also runs them on
#      NVIDIA's libcuda for comparison.
# Needs from scripts/device-build.sh: .device/lib/cuda/libcuda.so.1, .device/tests/driver.
#
#   OUT=/some/dir bash scripts/cuda-facade-device-run.sh
#
# Output ($OUT, default build/cuda-facade-run): difftest.nvidia.txt, difftest.ours.txt,
# difftest.diff.txt (the summary line, then `key: nvidia | ours` per difference),
# difftest.alone.{nvidia,ours,diff}.txt (the same with each library alone in its own process),
# difftest.notes.txt (the raw numbers behind some observations), driver.txt,
# cuda_hot_path.txt, mem_accounting.txt,
# tinygrad-ours/ and tinygrad-nvidia/ (with CF_TINYGRAD). Exit status 0 when every step ran and the
# Rust tests passed (differences are reported, not fatal: the summary says how many).
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
OUT="${OUT:-$ROOT/build/cuda-facade-run}"
mkdir -p "$OUT"
D="$ROOT/.device"
OURS="${CF_LIBCUDA:-$D/lib/cuda/libcuda.so.1}"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/cuda-facade.XXXXXX")"
CUDA_HOME="${CUDA_HOME:-/usr/local/cuda}"
NVCC="${NVCC:-$CUDA_HOME/bin/nvcc}"
rc=0
log() { printf '\n=== %s\n' "$*"; }

[ -f "$OURS" ] || { echo "no $OURS (run scripts/device-build.sh)"; exit 2; }
NVIDIA="${CF_NVIDIA_LIBCUDA:-}"
if [ -z "$NVIDIA" ]; then
  NVIDIA="$(ldconfig -p 2>/dev/null | awk '/libcuda\.so\.1 .*x86-64/ {print $NF; exit}')"
fi
[ -n "$NVIDIA" ] && [ -f "$NVIDIA" ] || NVIDIA="$(ls /usr/lib/x86_64-linux-gnu/libcuda.so.1 /usr/lib64/libcuda.so.1 2>/dev/null | head -n1)"
[ -f "$NVIDIA" ] || { echo "NVIDIA's libcuda.so.1 not found (set CF_NVIDIA_LIBCUDA)"; exit 2; }
NVIDIA="$(readlink -f "$NVIDIA")"
OURS="$(readlink -f "$OURS")"
echo "NVIDIA's libcuda: $NVIDIA"
echo "ours:             $OURS"
# Ours must not load NVIDIA's libcuda: it has no libcuda in its dependencies.
if ldd "$OURS" | grep -q 'libcuda\.so'; then echo "FAIL: $OURS depends on a libcuda"; rc=1; fi

# --------------------------------------------------------------------------------------------
log "1. differential test"
CC_ARCH="$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -n1 | tr -d ' .')"
CC_ARCH="${CC_ARCH:-90}"
K="$ROOT/cuda/tests/c/difftest_kernels.cu"
if ! { "$NVCC" -cubin -arch="sm_$CC_ARCH" -o "$WORK/k.cubin" "$K" &&
       "$NVCC" -ptx -arch="compute_$CC_ARCH" -o "$WORK/k.ptx" "$K" &&
       "$NVCC" -fatbin -gencode "arch=compute_$CC_ARCH,code=[sm_$CC_ARCH,compute_$CC_ARCH]" -o "$WORK/k.fatbin" "$K"; }; then
  echo "FAIL: nvcc"; rc=1
fi
if ! gcc -O1 -I"$CUDA_HOME/include" "$ROOT/cuda/tests/c/difftest.c" -o "$WORK/difftest" -ldl 2>"$WORK/gcc.err"; then
  cat "$WORK/gcc.err"; echo "FAIL: gcc"; rc=1
fi
if [ -x "$WORK/difftest" ]; then
  # The comparison: both libraries in one process (NVIDIA's first, then ours beside it).
  (unset TEGRAGPU_DEVICE; timeout -k 5 300 "$WORK/difftest" "$NVIDIA" "$OURS" "$WORK/k.cubin" "$WORK/k.ptx" \
     "$WORK/k.fatbin" "$OUT/difftest.nvidia.txt" "$OUT/difftest.ours.txt" 2>"$WORK/difftest.err")
  r=$?
  echo "difftest, both libraries in one process: exit $r, $(wc -l <"$OUT/difftest.nvidia.txt") and $(wc -l <"$OUT/difftest.ours.txt") lines"
  [ $r = 0 ] || { tail -n 20 "$WORK/difftest.err"; rc=1; }
  grep -a '^difftest: ' "$WORK/difftest.err" >"$OUT/difftest.notes.txt" 2>/dev/null
  # A cross-check: each library alone in its own process gives the same observations.
  run_dt() { # library, output
    (unset TEGRAGPU_DEVICE; timeout -k 5 300 "$WORK/difftest" "$1" "$WORK/k.cubin" "$WORK/k.ptx" "$WORK/k.fatbin" >"$2" 2>"$2.err")
    local r=$?
    echo "difftest on $1 alone: exit $r, $(wc -l <"$2") lines"
    [ $r = 0 ] || { tail -n 20 "$2.err"; }
    return $r
  }
  run_dt "$NVIDIA" "$WORK/alone.nvidia.txt" || rc=1
  run_dt "$OURS" "$WORK/alone.ours.txt" || rc=1
  for who in nvidia ours; do
    if cmp -s "$WORK/alone.$who.txt" "$OUT/difftest.$who.txt"; then
      echo "$who: the same observations alone as beside the other library"
    else
      echo "$who: observations differ between one process and two:"
      diff "$WORK/alone.$who.txt" "$OUT/difftest.$who.txt" | head -n 20
    fi
  done
  # The comparison, for the libraries in one process and for each alone in a process of its own
  # (where each has the whole address space: host memory in reserved ranges, for example).
  compare() { # nvidia observations, ours, output
  python3 - "$1" "$2" "$3" <<'PYEOF'
import sys
def load(p):
    d, order = {}, []
    for line in open(p, errors="replace"):
        k, _, v = line.rstrip("\n").partition(" ")
        if k and k not in d:
            d[k] = v; order.append(k)
    return d, order
a, order = load(sys.argv[1])
b, order_b = load(sys.argv[2])
keys = order + [k for k in order_b if k not in a]
diffs = [(k, a.get(k, "(missing)"), b.get(k, "(missing)")) for k in keys if a.get(k) != b.get(k)]
summary = f"{len(keys)} compared, {len(keys) - len(diffs)} equal, {len(diffs)} differ"
with open(sys.argv[3], "w") as f:
    f.write(summary + "\n")
    for k, x, y in diffs:
        f.write(f"{k}: {x} | {y}\n")
print(summary)
for k, x, y in diffs[:200]:
    print(f"  {k}: nvidia {x} | ours {y}")
PYEOF
  }
  echo "one process:"
  compare "$OUT/difftest.nvidia.txt" "$OUT/difftest.ours.txt" "$OUT/difftest.diff.txt"
  cp "$WORK/alone.nvidia.txt" "$OUT/difftest.alone.nvidia.txt"
  cp "$WORK/alone.ours.txt" "$OUT/difftest.alone.ours.txt"
  echo "each alone:"
  compare "$OUT/difftest.alone.nvidia.txt" "$OUT/difftest.alone.ours.txt" "$OUT/difftest.alone.diff.txt"
fi

# --------------------------------------------------------------------------------------------
log "2. Rust tests of the driver API on this GPU"
if [ -x "$D/tests/driver" ]; then
  (unset TEGRAGPU_DEVICE; TEGRAGPU_CUDA_LIB="$OURS" TEGRAGPU_REPO_ROOT="$ROOT" \
    timeout -k 5 300 "$D/tests/driver" --test-threads=1) >"$OUT/driver.txt" 2>&1
  r=$?
  tail -n 5 "$OUT/driver.txt"
  [ $r = 0 ] || { echo "FAIL: driver tests (exit $r)"; grep -E "panicked|FAILED" "$OUT/driver.txt" | head -20; rc=1; }
else
  echo "no $D/tests/driver (scripts/device-build.sh copies it)"
fi
# cuLaunchKernel through the library makes no system call and no heap allocation (on this GPU).
if [ -x "$D/tests/cuda_hot_path" ]; then
  (unset TEGRAGPU_DEVICE; TEGRAGPU_CUDA_LIB="$OURS" TEGRAGPU_REPO_ROOT="$ROOT" \
    timeout -k 5 120 "$D/tests/cuda_hot_path" --test-threads=1) >"$OUT/cuda_hot_path.txt" 2>&1
  r=$?
  tail -n 3 "$OUT/cuda_hot_path.txt"
  [ $r = 0 ] || { echo "FAIL: cuda_hot_path (exit $r)"; grep -E "panicked|FAILED" "$OUT/cuda_hot_path.txt" | head; rc=1; }
fi
# Free memory after a free and a synchronize is what it was before the allocation (its own
# process: the figure is device-wide).
if [ -x "$D/tests/mem_accounting" ]; then
  (unset TEGRAGPU_DEVICE; TEGRAGPU_CUDA_LIB="$OURS" TEGRAGPU_REPO_ROOT="$ROOT" \
    timeout -k 5 120 "$D/tests/mem_accounting") >"$OUT/mem_accounting.txt" 2>&1
  r=$?
  tail -n 3 "$OUT/mem_accounting.txt"
  [ $r = 0 ] || { echo "FAIL: mem_accounting (exit $r)"; grep -E -A3 "panicked|FAILED" "$OUT/mem_accounting.txt" | head; rc=1; }
fi

# --------------------------------------------------------------------------------------------
if [ "${CF_TINYGRAD:-0}" = 1 ]; then
  log "3. tinygrad (DEV=CUDA) through our libcuda"
  if [ -d "$D/tinygrad/test" ]; then
    ourdir="$WORK/ourlib"
    mkdir -p "$ourdir" && ln -sf "$OURS" "$ourdir/libcuda.so.1"
    (export LD_LIBRARY_PATH="$ourdir:${LD_LIBRARY_PATH:-}"
     unset TEGRAGPU_DEVICE
     TG_DEVS=CUDA OUT="$OUT/tinygrad-ours" bash scripts/tinygrad-device-run.sh) 2>&1 | tail -n 30
    if [ "${CF_TINYGRAD_BASELINE:-0}" = 1 ]; then
      log "3b. tinygrad (DEV=CUDA) on NVIDIA's libcuda"
      TG_DEVS=CUDA OUT="$OUT/tinygrad-nvidia" bash scripts/tinygrad-device-run.sh 2>&1 | tail -n 30
    fi
  else
    echo "no tinygrad in $D/tinygrad (scripts/tinygrad-device-run.sh describes what it needs)"
  fi
fi
rm -rf "$WORK"
exit $rc
