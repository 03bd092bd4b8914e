#!/usr/bin/env bash
# Memory shared with CUDA, on the device machine (x86_64, NVIDIA driver, nvcc, gcc, python3; torch
# and tinygrad for step 4) — docs/api.md, "Sharing memory with CUDA and other processes":
#   1. build: tests/interop/interop_kernels.cu → a cubin for this GPU (nvcc -cubin), and
#      tests/interop/cuda_interop.c → cuda_interop (gcc against the toolkit's cuda.h, linked with
#      NVIDIA's libcuda and libtegragpu);
#   2. cuda_interop: both drivers in one process — CUDA's export fds as RM sees them, our import
#      of CUDA memory, our own export/import round trip, CUDA's import of our export (every
#      variant, with CUDA's answer), and the GPU-side ordering test through semaphore words in the
#      shared memory, in both directions where the import works;
#   3. tests/interop/rm_share.py: the Python package: export/import round trips, an export
#      imported by another process, torch tensor memory imported (with
#      PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True) and refused (torch's default allocator);
#   4. tinygrad's torch interop tests (test/backend/test_interop.py of tinygrad's master at
#      a9069c177a, which .device/tinygrad/test/backend/ must hold, with the tinygrad wheel in
#      .device/tinygrad/whl as for scripts/tinygrad-device-run.sh) on DEV=CUDA and on DEV=TEGRA;
#      the copy run here lets TEGRA in (the file skips every device but METAL and CUDA) and gives
#      TEGRA torch's "cuda" device.
# Needs .device/lib/libtegragpu.so.0 from scripts/device-build.sh (or TEGRAGPU_LIBRARY).
#
#   OUT=/some/dir bash scripts/interop-device-run.sh
#   STEPS="2 4" OUT=/some/dir bash scripts/interop-device-run.sh    # only these steps (default 2 3 4)
#
# Time limits: cuda_interop 330 s (its own watchdog ends a hung run after 300 s, naming the
# step), rm_share 150 + 60 s, each tinygrad pytest 150 s; a normal run takes a few minutes.
#
# Output ($OUT, default build/interop-run): cuda_interop.txt (the program's report: PASS/FAIL/
# RESULT lines), cuda_interop.log (its stderr: the library's debug log, which names every export
# and import with the fd's metadata), rm_share.txt, tinygrad_interop.txt, summary.txt. Exit status
# 0 when every step ran and nothing failed (RESULT lines are findings, never failures).
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
OUT="${OUT:-$ROOT/build/interop-run}"
mkdir -p "$OUT"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/interop-run.XXXXXX")"
CUDA_HOME="${CUDA_HOME:-/usr/local/cuda}"
NVCC="${NVCC:-$CUDA_HOME/bin/nvcc}"
PY="${PYTHON:-python3}"
LIB="${TEGRAGPU_LIBRARY:-$ROOT/.device/lib/libtegragpu.so.0}"
[ -f "$LIB" ] || LIB="$ROOT/target/release/libtegragpu.so"
[ -f "$LIB" ] || { echo "no libtegragpu (run scripts/device-build.sh)"; exit 2; }
LIB="$(readlink -f "$LIB")"
LIBDIR="$WORK/lib"
mkdir -p "$LIBDIR"
# One name for the linker, one for the loader, both the library above.
ln -sf "$LIB" "$LIBDIR/libtegragpu.so"
ln -sf "$LIB" "$LIBDIR/libtegragpu.so.0"
export TEGRAGPU_LIBRARY="$LIB"
export PYTHONPATH="$ROOT/python${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
unset TEGRAGPU_DEVICE
STEPS="${STEPS:-2 3 4}"
want() { case " $STEPS " in *" $1 "*) return 0;; *) return 1;; esac; }
rc=0
declare -a SUMMARY
note() { SUMMARY+=("$*"); echo "$*"; }
log() { printf '\n=== %s\n' "$*"; }

log "1. build"
nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader 2>/dev/null | head -n1
CC_ARCH="$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -n1 | tr -d ' .')"
CC_ARCH="${CC_ARCH:-90}"
built=1
"$NVCC" -cubin -arch="sm_$CC_ARCH" -o "$WORK/interop_kernels.cubin" tests/interop/interop_kernels.cu || built=0
# Link libcuda through the toolkit's stub when there is one, else the driver's library itself;
# at run time the loader takes the driver's libcuda.so.1 either way.
CUDA_LINK=""
for stubs in "$CUDA_HOME/lib64/stubs" "$CUDA_HOME/targets/x86_64-linux/lib/stubs"; do
  [ -f "$stubs/libcuda.so" ] && { CUDA_LINK="-L$stubs -lcuda"; break; }
done
if [ -z "$CUDA_LINK" ]; then
  drv="$(ldconfig -p 2>/dev/null | awk '/libcuda\.so\.1 .*x86-64/ {print $NF; exit}')"
  [ -n "$drv" ] && CUDA_LINK="$drv"
fi
[ -n "$CUDA_LINK" ] || { echo "no libcuda to link (toolkit stub or driver library)"; built=0; }
# shellcheck disable=SC2086
gcc -std=c11 -O1 -g -Wall -Wextra -I"$CUDA_HOME/include" -Iinclude tests/interop/cuda_interop.c \
  -o "$WORK/cuda_interop" -L"$LIBDIR" -ltegragpu -Wl,-rpath,"$LIBDIR" $CUDA_LINK || built=0
if [ "$built" = 1 ]; then note "build: ok (sm_$CC_ARCH)"; else note "build: FAILED"; rc=1; fi

if [ "$built" = 1 ] && want 2; then
  log "2. cuda_interop (both drivers in one process)"
  # The loader must find NVIDIA's libcuda.so.1, never the toolkit's stub.
  echo "libcuda: $(ldd "$WORK/cuda_interop" | awk '/libcuda/ {print $3}')  libtegragpu: $(ldd "$WORK/cuda_interop" | awk '/libtegragpu/ {print $3}')"
  TEGRAGPU_LOG=debug timeout -k 10 330 "$WORK/cuda_interop" "$WORK/interop_kernels.cubin" \
    >"$OUT/cuda_interop.txt" 2>"$OUT/cuda_interop.log"
  prc=$?
  cat "$OUT/cuda_interop.txt"
  if [ $prc -ne 0 ]; then echo "--- last lines of the library log:"; tail -n 40 "$OUT/cuda_interop.log"; fi
  note "cuda_interop: rc=$prc, $(grep -c '^PASS' "$OUT/cuda_interop.txt") PASS, $(grep -c '^FAIL' "$OUT/cuda_interop.txt") FAIL, $(grep -c '^RESULT' "$OUT/cuda_interop.txt") RESULT"
  [ $prc -eq 0 ] || rc=1
fi

if want 3; then
log "3. rm_share.py (Python package)"
{
  echo "--- with torch's expandable segments"
  PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True timeout -k 10 150 "$PY" tests/interop/rm_share.py
  a=$?
  echo "rc=$a"
  echo "--- with torch's default allocator (the refusal)"
  env -u PYTORCH_CUDA_ALLOC_CONF timeout -k 10 60 "$PY" - <<'PYEOF'
import runpy, sys
sys.argv = ["rm_share.py"]
m = runpy.run_path("tests/interop/rm_share.py")
m["torch_checks"]("rm")
sys.exit(min(m["torch_checks"].__globals__["FAILS"], 100))
PYEOF
  b=$?
  echo "rc=$b"
  exit $(( a != 0 || b != 0 ))
} 2>&1 | tee "$OUT/rm_share.txt"
prc=${PIPESTATUS[0]}
note "rm_share: rc=$prc, $(grep -c '^PASS' "$OUT/rm_share.txt") PASS, $(grep -c '^FAIL' "$OUT/rm_share.txt") FAIL"
[ "$prc" -eq 0 ] || rc=1
fi

if want 4; then
log "4. tinygrad's torch interop tests"
TGDIR="$ROOT/.device/tinygrad"
SRC="$TGDIR/test/backend/test_interop.py"
WHL="$(ls "$TGDIR"/whl/tinygrad-*.whl 2>/dev/null | head -n1)"
if [ ! -f "$SRC" ] || [ -z "$WHL" ]; then
  note "tinygrad interop: not run (needs $SRC and a wheel in $TGDIR/whl)"
  rc=1
else
  SITE="$WORK/site"
  mkdir -p "$SITE"
  "$PY" -m pip install -q --no-index --no-deps --no-compile --target "$SITE" "$WHL" 2>/dev/null ||
    "$PY" -m zipfile -e "$WHL" "$SITE"
  if ! "$PY" -c 'import pytest' 2>/dev/null; then
    "$PY" -m pip install -q --no-index --no-deps --no-compile --target "$SITE" "$ROOT"/.device/whl/*.whl
  fi
  # The test tree (test/__init__.py, test/helpers.py, ...) with the interop file let in on TEGRA.
  cp -r "$TGDIR/test" "$WORK/test"
  sed -e 's/Device.DEFAULT not in \["METAL", "CUDA"\]/Device.DEFAULT not in ["METAL", "CUDA", "TEGRA"]/' \
      -e 's/if Device.DEFAULT == "CUDA": self.torch_device = "cuda"/if Device.DEFAULT in ("CUDA", "TEGRA"): self.torch_device = "cuda"/' \
      "$SRC" >"$WORK/test/backend/test_interop.py"
  if ! grep -q '"TEGRA"' "$WORK/test/backend/test_interop.py"; then
    note "tinygrad interop: the skip condition of $SRC was not found; the file differs from a9069c177a"
    rc=1
  fi
  {
    for dev in CUDA TEGRA; do
      echo "--- DEV=$dev"
      (cd "$WORK" && PYTHONPATH="$SITE:$ROOT/python" DEV=$dev PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True \
        timeout -k 10 150 "$PY" -m pytest -p tegragpu.tinygrad_device -rA -q test/backend/test_interop.py)
      echo "rc=$?"
    done
  } 2>&1 | tee "$OUT/tinygrad_interop.txt"
  tpass=$(grep -c '^PASSED' "$OUT/tinygrad_interop.txt")
  tfail=$(grep -cE '^(FAILED|ERROR)' "$OUT/tinygrad_interop.txt")
  tskip=$(grep -c '^SKIPPED' "$OUT/tinygrad_interop.txt")
  note "tinygrad interop: $tpass passed, $tfail failed, $tskip skipped (CUDA and TEGRA, 2 tests each)"
  [ "$tfail" -eq 0 ] && [ "$tskip" -eq 0 ] && [ "$tpass" -eq 4 ] || rc=1
fi
fi

printf '%s\n' "${SUMMARY[@]}" "exit status: $rc" | tee "$OUT/summary.txt"
rm -rf "$WORK"
exit $rc
