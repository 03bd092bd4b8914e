#!/usr/bin/env bash
# Libraries built on NVIDIA's CUDA runtime, on libtegragpu's libcuda.so.1, on the device machine
# (x86_64, NVIDIA driver, nvcc with cuBLAS, python3 with torch):
#   1. cuda/tests/c/cublas_gemm.cu, built with nvcc (the CUDA runtime linked in, cuBLAS): SGEMM
#      and DGEMM checked against the CPU;
#   2. cuda/tests/torch/checks.py: PyTorch's matrix products (cuBLAS, cuBLASLt), convolutions
#      (cuDNN), a training loop, a Transformer layer, attention and torch.compile (Triton),
#      checked against the CPU;
# each once with NVIDIA's libcuda and once with ours (first on LD_LIBRARY_PATH; each run prints
# the library its process loaded). Prints
#   cublas: NVIDIA ok|FAILED; ours ok|FAILED
#   torch: N checks; NVIDIA passed P1; ours passed P2; passed on NVIDIA but failed on ours: F (names)
# Needs .device/lib/cuda/libcuda.so.1 (scripts/device-build.sh; TORCH_LIBCUDA names another).
#
#   OUT=/some/dir bash scripts/torch-device-run.sh
#
# Output ($OUT, default build/torch-run): cublas.<nvidia|ours>.txt, torch.<nvidia|ours>.txt and
# summary.txt. Exit status 0 when every run completed (failures of ours are reported, not fatal),
# 2 when something is missing.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
OUT="${OUT:-$ROOT/build/torch-run}"
mkdir -p "$OUT"
OURS="${TORCH_LIBCUDA:-$ROOT/.device/lib/cuda/libcuda.so.1}"
PY="${PYTHON:-python3}"
[ -f "$OURS" ] || { echo "no $OURS (scripts/device-build.sh)"; exit 2; }
WORK="$(mktemp -d "${TMPDIR:-/tmp}/torch-run.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK/ours"
ln -s "$OURS" "$WORK/ours/libcuda.so.1"
ln -s "$OURS" "$WORK/ours/libcuda.so"

run() { # run <nvidia|ours> <command...>: the command with that library
  local which=$1
  shift
  if [ "$which" = ours ]; then
    LD_LIBRARY_PATH="$WORK/ours${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" TEGRAGPU_LOG=warn \
      TORCHINDUCTOR_CACHE_DIR="$WORK/inductor.ours" timeout -k 5 300 "$@"
  else
    TORCHINDUCTOR_CACHE_DIR="$WORK/inductor.nvidia" timeout -k 5 300 "$@"
  fi
}

summary=()
if command -v nvcc >/dev/null; then
  if nvcc -O2 -o "$WORK/cublas_gemm" cuda/tests/c/cublas_gemm.cu -lcublas >"$OUT/nvcc.txt" 2>&1; then
    line="cublas:"
    for which in nvidia ours; do
      run "$which" "$WORK/cublas_gemm" >"$OUT/cublas.$which.txt" 2>&1
      if grep -q '^BLAS OK' "$OUT/cublas.$which.txt"; then r=ok; else r=FAILED; fi
      line="$line $which $r;"
    done
    summary+=("${line%;}")
  else
    summary+=("cublas: nvcc failed (nvcc.txt)")
  fi
else
  summary+=("cublas: no nvcc")
fi

if "$PY" -c 'import torch' 2>/dev/null; then
  for which in nvidia ours; do
    run "$which" "$PY" cuda/tests/torch/checks.py >"$OUT/torch.$which.txt" 2>&1
    echo "$which: exit status $?, $(grep '^libcuda' "$OUT/torch.$which.txt")"
  done
  summary+=("$("$PY" - "$OUT/torch.nvidia.txt" "$OUT/torch.ours.txt" <<'EOF'
import sys
def outcomes(path):
    r = {}
    for line in open(path):
        f = line.split()
        if len(f) >= 2 and f[1] in ("ok", "FAILED", "ERROR"):
            r[f[0]] = f[1] == "ok"
    return r
nv, ours = outcomes(sys.argv[1]), outcomes(sys.argv[2])
names = sorted(set(nv) | set(ours))
lost = [n for n in names if nv.get(n) and not ours.get(n)]
print(f"torch: {len(names)} checks; NVIDIA passed {sum(nv.values())}; ours passed "
      f"{sum(ours.values())}; passed on NVIDIA but failed on ours: {len(lost)}"
      + (f" ({', '.join(lost)})" if lost else ""))
EOF
)")
else
  summary+=("torch: not installed for $PY")
fi
printf '%s\n' "${summary[@]}" | tee "$OUT/summary.txt"
