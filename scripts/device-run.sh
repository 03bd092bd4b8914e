#!/usr/bin/env bash
# Runs on the device machine (H100/H200, driver 580): the contract suite and kernel tests on the
# RM backend, every C example, the Python tests, libtegragpu's libcuda.so.1 against NVIDIA's
# (scripts/cuda-facade-device-run.sh; CUDA_FACADE=0 skips it) with cudarc's tests, the driver-API
# cuda-samples and numba-cuda's tests on it (CLIENTS=0 skips them), the differential conformance suite against
# libcuda, directly on a queue and through command buffers (tests/conformance; NO_CONFORMANCE=1
# skips it), the foreign-module sweep
# (tests/conformance/foreign.py; FOREIGN=0 skips it), tegragpu-info and tegragpu-bench (BENCH=1), the
# latency, copy, doorbell, write-combining and tail probes (tools/probes, copied to .device/bin by scripts/device-build.sh)
# and scripts/probes/alloc-trace.sh (PROBES=1). Every step has a timeout; results go to stdout and
# $OUT (when set).
set -uo pipefail
cd "$(dirname "$0")/.."
D=.device
export TEGRAGPU_TEST_DEVICE=rm TEGRAGPU_DEVICE=rm
export LD_LIBRARY_PATH="$PWD/$D/lib:${LD_LIBRARY_PATH:-}"
export TEGRAGPU_LIBRARY="$PWD/$D/lib/libtegragpu.so.0"
export TEGRAGPU_CUBIN_DIR="$PWD/tests/fixtures/cubin" TEGRAGPU_KERNELS_CU="$PWD/tests/fixtures/kernels.cu"
# The Rust test binaries read their fixtures (tests/fixtures, tests/conformance) from here, not
# from the build machine's tree (tests/common/mod.rs).
export TEGRAGPU_REPO_ROOT="$PWD"
if [ -d "$D/whl" ] && ls "$D"/whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site "$D"/whl/*.whl >/dev/null 2>&1 && export PYTHONPATH=/tmp/site:$PWD/python
fi
log=${OUT:-/tmp}/device-run.log
pass=0; fail=0
step() { # name, timeout, command...
  local name=$1 t=$2; shift 2
  echo "=== $name"
  if timeout -k 5 "$t" "$@"; then echo "--- PASS $name"; pass=$((pass+1)); else echo "--- FAIL $name (rc=$?)"; fail=$((fail+1)); fi
}
{
  date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true
  step info 60 "$D/bin/tegragpu-info"
  for t in ${TESTS:-contract kernels module_load}; do
    step "rust:$t" 300 "$D/tests/$t" --test-threads=1 --nocapture
  done
  if [ -d "$D/c" ]; then
    for ex in device_info vector_add saxpy matmul memcpy_bandwidth launch_latency bench api_misuse texture \
      library_copies api_misuse_asan vector_add_asan library_copies_asan; do
      [ -x "$D/c/$ex" ] && step "c:$ex" 120 "$D/c/$ex" rm
    done
  fi
  if [ -d python/tests ]; then
    step python 300 python3 -m pytest -q python/tests
  fi
  # The differential conformance suite: every corpus kernel through libcuda and libtegragpu
  # (needs nvcc; the attributes libcuda reports go to $OUT for tests/conformance/fixtures).
  if [ -z "${NO_CONFORMANCE:-}" ] && [ -x /usr/local/cuda/bin/nvcc ]; then
    step conformance 500 env PYTHONPATH="$PWD/python" PYTHONUNBUFFERED=1 python3 tests/conformance/run.py \
      --out /tmp/conformance --fixture "${OUT:-/tmp}/cuda_attrs.sm_90.json"
    # The same cases, each launched from a command buffer between two chained copies.
    step conformance_cmdbuf 500 env PYTHONPATH="$PWD/python" PYTHONUNBUFFERED=1 python3 \
      tests/conformance/run.py --out /tmp/conformance --cmdbuf
  fi
  # Other people's modules (torch, cuBLAS, cuDNN, the CUDA toolkit's libraries) loaded through
  # both libraries, attributes compared (tests/conformance/foreign.py); FOREIGN=0 skips it.
  if [ "${FOREIGN:-1}" != 0 ]; then
    step foreign 400 env PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}" python3 \
      tests/conformance/foreign.py --max-seconds "${FOREIGN_SECONDS:-300}"
  fi
  # libtegragpu's libcuda.so.1 (cuda/) against NVIDIA's: the differential C test and the driver
  # API tests on this GPU (scripts/cuda-facade-device-run.sh); CUDA_FACADE=0 skips it.
  if [ "${CUDA_FACADE:-1}" != 0 ] && [ -f "$D/lib/cuda/libcuda.so.1" ]; then
    step cuda_facade 700 env OUT="${OUT:-/tmp}/cuda-facade" bash scripts/cuda-facade-device-run.sh
    # Other people's programs on it, each beside NVIDIA's libcuda (CLIENTS=0 skips them): cudarc's
    # tests (.device/cudarc from scripts/cudarc-build.sh), the driver-API cuda-samples
    # (.device/cuda-samples from scripts/cuda-samples-prep.sh) and numba-cuda's tests (the
    # machine's numba-cuda). Each prints its `N tests; NVIDIA passed ...; ours passed ...` line.
    if [ "${CLIENTS:-1}" != 0 ]; then
      [ -d "$D/cudarc" ] && step cudarc 600 env OUT="${OUT:-/tmp}/cudarc" bash scripts/cudarc-device-run.sh
      [ -d "$D/cuda-samples" ] && step cuda_samples 600 env OUT="${OUT:-/tmp}/cuda-samples" bash scripts/cuda-samples-device-run.sh
      step numba_cuda 1100 env OUT="${OUT:-/tmp}/numba-cuda" bash scripts/numba-cuda-device-run.sh
    fi
  fi
  [ -n "${BENCH:-}" ] && step bench 300 "$D/bin/tegragpu-bench" --device rm
  # Research probes (tools/probes/README.md; tegragpu-rmprobe and rmperf_probe are run by hand).
  if [ -n "${PROBES:-}" ]; then
    step latency_probe 120 "$D/bin/latency_probe" 2000
    step copy_probe 120 "$D/bin/copy_probe" cuda ce
    step doorbell_probe 120 "$D/bin/doorbell_probe" 3
    step wc_probe 120 "$D/bin/wc_probe" 20000
    step tail_probe 120 "$D/bin/tail_probe" 5000
    step alloc_trace 120 bash scripts/probes/alloc-trace.sh
  fi
  echo "SUMMARY: $pass passed, $fail failed"
} 2>&1 | tee "$log"
