#!/usr/bin/env bash
# NVIDIA's driver-API cuda-samples on NVIDIA's libcuda and on libtegragpu's libcuda.so.1 (the
# cuda/ crate), on the device machine (x86_64, NVIDIA driver, CUDA 13 toolkit: nvcc, g++, nvrtc,
# nvJitLink, libNVVM):
#   1. builds each sample copied by scripts/cuda-samples-prep.sh into .device/cuda-samples/
#      directly (no CMake): kernels with nvcc to the fatbin the sample loads, for this GPU's
#      architecture; host code with g++/gcc against the toolkit's headers and Common/, linked with
#      -lcuda (the toolkit's stub) and without the CUDA runtime; the CUDA runtime samples with
#      nvcc, which links the runtime in (it loads libcuda.so.1 at run time);
#   2. runs each sample twice, with NVIDIA's libcuda and with ours (its directory first on
#      LD_LIBRARY_PATH), from a directory holding the executable, its kernel files and data (the
#      samples look for them next to the executable), under `timeout -k 5 60`. The dynamic
#      linker's trace (LD_DEBUG=files) names the libcuda.so.1 each run initialized; a run that
#      loaded the other library counts as failed;
#   3. a run passes when the sample exits with 0 and prints its own pass line where it has one
#      (`Result = PASS`, `Test passed`, ...); a sample that exits with 2 (the samples' EXIT_WAIVED:
#      it needs something this machine lacks, such as a second GPU) is `waived`.
# With the sweep copied (`scripts/cuda-samples-prep.sh --all`), the samples listed in SWEEP too,
# each built by one generic recipe (nvcc, its sources and libraries from RECIPES, relocatable
# device code as their CMake files ask) and judged by its exit status alone. Builds run in
# parallel (CS_JOBS, default the CPU count), runs one at a time. CS_ONLY=REGEX keeps the samples
# whose group/name matches (to split a long run). CS_OURS_LOG=LEVEL sets TEGRAGPU_LOG for the
# runs on ours; CS_KEEP=1 keeps the work folder (each run's whole output is
# <work>/<name>.{nvidia,ours}.txt) and prints where it is.
# Needs from scripts/device-build.sh: .device/lib/cuda/libcuda.so.1.
#
#   OUT=/some/dir bash scripts/cuda-samples-device-run.sh
#
# Output ($OUT, default build/cuda-samples-run): cuda-samples.log (every build and run with its
# output), cuda-samples.summary.txt (the table and the summary line
# `cuda-samples: N built; NVIDIA passed P1; ours passed P2; passed on NVIDIA but failed on ours: F (names)`,
# and with the sweep the same line for it, `cuda-samples sweep: ...`, which also counts the
# samples that did not build and those waived on each library).
# Exit status 0 when every listed sample built (sweep samples may fail to build: a toolkit
# library can be missing) and every sample that passed on NVIDIA's libcuda passed on ours; 1
# otherwise; 2 when something needed is missing.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
OUT="${OUT:-$ROOT/build/cuda-samples-run}"
mkdir -p "$OUT"
D="$ROOT/.device"
S="$D/cuda-samples"
OURS="${CS_LIBCUDA:-$D/lib/cuda/libcuda.so.1}"
CUDA_HOME="${CUDA_HOME:-/usr/local/cuda}"
NVCC="${NVCC:-$CUDA_HOME/bin/nvcc}"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/cuda-samples.XXXXXX")"
LOG="$OUT/cuda-samples.log"
SUM="$OUT/cuda-samples.summary.txt"
: >"$LOG"
say() { echo "$*" | tee -a "$LOG"; }

[ -f "$S/SAMPLES" ] || { echo "no $S (run scripts/cuda-samples-prep.sh)"; exit 2; }
[ -f "$OURS" ] || { echo "no $OURS (run scripts/device-build.sh)"; exit 2; }
[ -x "$NVCC" ] || { echo "no nvcc at $NVCC (set CUDA_HOME or NVCC)"; exit 2; }
NVIDIA="${CS_NVIDIA_LIBCUDA:-}"
if [ -z "$NVIDIA" ]; then
  NVIDIA="$(ldconfig -p 2>/dev/null | awk '/libcuda\.so\.1 .*x86-64/ {print $NF; exit}')"
fi
[ -n "$NVIDIA" ] && [ -f "$NVIDIA" ] || NVIDIA="$(ls /usr/lib/x86_64-linux-gnu/libcuda.so.1 /usr/lib64/libcuda.so.1 2>/dev/null | head -n1)"
[ -f "$NVIDIA" ] || { echo "NVIDIA's libcuda.so.1 not found (set CS_NVIDIA_LIBCUDA)"; exit 2; }
NVIDIA="$(readlink -f "$NVIDIA")"
OURS="$(readlink -f "$OURS")"
OURDIR="$WORK/ourlib"
mkdir -p "$OURDIR" && ln -sf "$OURS" "$OURDIR/libcuda.so.1"
say "cuda-samples revision: $(cat "$S/REVISION" 2>/dev/null)"
say "NVIDIA's libcuda: $NVIDIA"
say "ours:             $OURS"
ARCH="$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -n1 | tr -d ' .')"
ARCH="${ARCH:-90}"
say "GPU: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -n1), sm_$ARCH"

CXXFLAGS=(-O2 -std=c++17 -I"$S/Common" -I"$CUDA_HOME/include")
# Link against the toolkit's stub (soname libcuda.so.1): which libcuda.so.1 runs is decided at
# run time by the library path. Toolkit libraries (nvrtc, nvJitLink, libNVVM) by rpath.
LDCUDA=(-L"$CUDA_HOME/lib64/stubs" -L"$CUDA_HOME/lib64" -lcuda
        -Wl,-rpath,"$CUDA_HOME/lib64" -Wl,-rpath,"$CUDA_HOME/nvvm/lib64")
FATBIN=(-fatbin -gencode "arch=compute_$ARCH,code=[sm_$ARCH,compute_$ARCH]" -I"$S/Common")

# The pass line a sample prints on success (empty: its exit status alone decides).
marker() {
  case "$1" in
    vectorAddDrv | vectorAddMMAP | matrixMulDrv | matrixMul_nvrtc | deviceQueryDrv) echo 'Result = PASS' ;;
    vectorAdd_nvrtc) echo 'Test PASSED' ;;
    BlackScholes_nvrtc | binomialOptions_nvrtc) echo 'Test passed' ;;
    jitLto) echo 'PASSED!' ;;
    inlinePTX_nvrtc) echo 'Successful' ;;
    matrixMulDynlinkJIT) echo 'Test run success!' ;;
    simpleAtomicIntrinsics_nvrtc) echo 'completed, returned OK' ;;
    simpleAssert_nvrtc | simpleAssert) echo 'Device assert failed as expected' ;;
    vectorAdd | simpleOccupancy) echo 'Test PASSED' ;;
    uvmlite) echo 'The final value checked in the host' ;; # else it skipped (no managed memory)
    *) echo '' ;;
  esac
}

# Builds sample $1 (group/name) into run directory $2; returns the build's status.
build() {
  local rel="$1" dir="$2" name src
  name="$(basename "$rel")"
  src="$S/Samples/$rel"
  cp -r "$src/." "$dir/"
  (
    set -e
    cd "$dir"
    case "$name" in
      vectorAddDrv)
        "$NVCC" "${FATBIN[@]}" -o vectorAdd_kernel64.fatbin vectorAdd_kernel.cu
        g++ "${CXXFLAGS[@]}" vectorAddDrv.cpp -o "$name" "${LDCUDA[@]}" ;;
      vectorAddMMAP)
        "$NVCC" "${FATBIN[@]}" -o vectorAdd_kernel64.fatbin vectorAdd_kernel.cu
        g++ "${CXXFLAGS[@]}" vectorAddMMAP.cpp multidevicealloc_memmap.cpp -o "$name" "${LDCUDA[@]}" ;;
      matrixMulDrv)
        "$NVCC" "${FATBIN[@]}" -o matrixMul_kernel64.fatbin matrixMul_kernel.cu
        g++ "${CXXFLAGS[@]}" matrixMulDrv.cpp -o "$name" "${LDCUDA[@]}" ;;
      simpleTextureDrv)
        "$NVCC" "${FATBIN[@]}" -o simpleTexture_kernel64.fatbin simpleTexture_kernel.cu
        g++ "${CXXFLAGS[@]}" simpleTextureDrv.cpp -o "$name" "${LDCUDA[@]}" ;;
      threadMigration)
        "$NVCC" "${FATBIN[@]}" -o threadMigration_kernel64.fatbin threadMigration_kernel.cu
        g++ "${CXXFLAGS[@]}" threadMigration.cpp -o "$name" "${LDCUDA[@]}" -lpthread ;;
      deviceQueryDrv)
        g++ "${CXXFLAGS[@]}" deviceQueryDrv.cpp -o "$name" "${LDCUDA[@]}" ;;
      memMapIPCDrv)
        # A parent process hands POSIX fds of cuMemCreate memory to child processes (itself).
        "$NVCC" -ptx -arch="compute_$ARCH" -o memMapIpc_kernel64.ptx memMapIpc_kernel.cu
        g++ "${CXXFLAGS[@]}" memMapIpc.cpp "$S/Common/helper_multiprocess.cpp" -o "$name" "${LDCUDA[@]}" -lrt ;;
      matrixMulDynlinkJIT)
        # Loads libcuda.so.1 itself (dlopen) and resolves every function by name.
        gcc -O2 -I. -I"$S/Common" -c cuda_drvapi_dynlink.c -o dynlink.o
        gcc -O2 -I. -c matrixMul_kernel_32_ptxdump.c -o ptx32.o
        gcc -O2 -I. -c matrixMul_kernel_64_ptxdump.c -o ptx64.o
        g++ -O2 -std=c++17 -I. -I"$S/Common" matrixMulDynlinkJIT.cpp matrixMul_gold.cpp dynlink.o ptx32.o ptx64.o \
          -o "$name" -ldl ;;
      *_nvrtc)
        # The kernel source is compiled at run time by nvrtc; it is found next to the executable.
        local cpps
        cpps="$(ls ./*.cpp)"
        # shellcheck disable=SC2086
        g++ "${CXXFLAGS[@]}" -I. $cpps -o "$name" "${LDCUDA[@]}" -lnvrtc
        if [ "$name" = matrixMul_nvrtc ]; then
          cp "$CUDA_HOME/include/cooperative_groups.h" .
          cp -r "$CUDA_HOME/include/cooperative_groups" .
          cp -r "$CUDA_HOME/include/cccl/nv" nv
          cp -r "$CUDA_HOME/include/cccl/cuda" cuda
        fi ;;
      jitLto)
        g++ "${CXXFLAGS[@]}" jitLto.cpp -o "$name" "${LDCUDA[@]}" -lnvrtc -lnvJitLink ;;
      simple | uvmlite | device-side-launch)
        local c defs=(-DLIBDEVICE_MAJOR_VERSION=1 -DLIBDEVICE_MINOR_VERSION=0)
        c="$(ls ./*.c)"
        [ "$name" = device-side-launch ] && defs+=("-DLIBCUDADEVRT=\"$CUDA_HOME/lib64/libcudadevrt.a\"")
        # shellcheck disable=SC2086
        gcc -O2 "${defs[@]}" -I"$CUDA_HOME/nvvm/include" -I"$CUDA_HOME/include" \
          -I"$S/Samples/7_libNVVM/common/include" $c -o "$name" \
          -L"$CUDA_HOME/nvvm/lib64" -lnvvm "${LDCUDA[@]}" -lm ;;
      simpleDrvRuntime)
        # The driver API loads the kernels; the CUDA runtime does the rest.
        "$NVCC" "${FATBIN[@]}" -o vectorAdd_kernel64.fatbin vectorAdd_kernel.cu
        "$NVCC" -O2 -std=c++17 -I"$S/Common" simpleDrvRuntime.cpp -o "$name" \
          -L"$CUDA_HOME/lib64/stubs" -lcuda ;;
      vectorAdd | matrixMul | asyncAPI | clock | simpleStreams | simpleCallback | \
        simpleAtomicIntrinsics | simpleVoteIntrinsics | simpleOccupancy | simpleZeroCopy | \
        simplePrintf | simpleCooperativeGroups | simpleAssert)
        # The CUDA runtime, linked in by nvcc, loads libcuda.so.1 at run time.
        local srcs
        srcs="$(ls ./*.cu ./*.cpp 2>/dev/null || true)"
        # shellcheck disable=SC2086
        "$NVCC" -O2 -std=c++17 -arch="sm_$ARCH" -I"$S/Common" -I. $srcs -o "$name" -lpthread ;;
      *)
        # A sweep sample: its sources and libraries as its CMake file names them.
        local recipe srcs libs incs
        recipe="$(grep -m1 "^$rel|" "$S/RECIPES" 2>/dev/null)" || { echo "no build recipe for $name"; exit 1; }
        IFS='|' read -r _ srcs libs incs <<<"$recipe"
        # Sources of Common/ are named from the sample's folder in the repository.
        srcs="${srcs//..\/..\/..\/Common\//$S/Common/}"
        # shellcheck disable=SC2086
        "$NVCC" -O2 -std=c++17 --extended-lambda -rdc=true -arch="sm_$ARCH" -I"$S/Common" -I. $incs \
          $srcs -o "$name" -L"$CUDA_HOME/lib64/stubs" $libs -lpthread ;;
    esac
  )
}

# Runs the sample in $2 with library directory $3 ("" for NVIDIA's), output $4; prints the verdict
# (pass/fail: reason) and which libcuda.so.1 it initialized.
run_one() {
  local name="$1" dir="$2" libdir="$3" out="$4" expect="$5" r m trace lib
  trace="$WORK/ld.$name.$RANDOM"
  (
    cd "$dir"
    unset TEGRAGPU_DEVICE
    if [ -n "$libdir" ]; then
      export LD_LIBRARY_PATH="$libdir:${LD_LIBRARY_PATH:-}"
      if [ -n "${CS_OURS_LOG:-}" ]; then export TEGRAGPU_LOG="$CS_OURS_LOG"; fi
    fi
    LD_DEBUG=files LD_DEBUG_OUTPUT="$trace" timeout -k 5 60 "./$name"
  ) >"$out" 2>&1
  r=$?
  lib="$(cat "$trace".* 2>/dev/null | sed -n 's/.*calling init: \(.*libcuda\.so[.0-9]*\)$/\1/p' | head -n1)"
  rm -f "$trace".*
  if [ -n "$lib" ]; then lib="$(readlink -f "$lib")"; else lib="no libcuda.so.1"; fi
  m="$(marker "$name")"
  if [ "$lib" != "$expect" ]; then
    echo "fail: loaded $lib"
  elif [ $r = 124 ] || [ $r = 137 ]; then
    echo "fail: timed out (60 s)"
  elif [ $r = 2 ]; then
    echo "waived"
  elif [ $r != 0 ]; then
    echo "fail: exit $r"
  elif [ -n "$m" ] && ! grep -qF "$m" "$out"; then
    echo "fail: no '$m' in the output"
  else
    echo "pass"
  fi
}

only() { [ -z "${CS_ONLY:-}" ] || grep -qE "$CS_ONLY" <<<"$1"; }
SAMPLES=() SWEEP=()
while IFS= read -r rel; do only "$rel" && SAMPLES+=("$rel"); done <"$S/SAMPLES"
if [ -f "$S/SWEEP" ]; then
  while IFS= read -r rel; do only "$rel" && SWEEP+=("$rel"); done <"$S/SWEEP"
fi

# Build every sample, CS_JOBS at a time; each one's build output goes to its own log.
JOBS="${CS_JOBS:-$(nproc 2>/dev/null || echo 4)}"
say ""
say "=== building ${#SAMPLES[@]} samples and ${#SWEEP[@]} sweep samples, $JOBS at a time"
for rel in "${SAMPLES[@]}" "${SWEEP[@]}"; do
  name="$(basename "$rel")"
  mkdir -p "$WORK/run/$name"
  while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n; done
  (
    # Called as a plain command (not in an `if`), so `set -e` inside build's subshell applies.
    build "$rel" "$WORK/run/$name" >"$WORK/build.$name.log" 2>&1
    echo $? >"$WORK/build.$name.rc"
  ) &
done
wait

# Runs every built sample of a list on both libraries; sets built/p_nv/p_ours/w_nv/w_ours/
# regress/rows/nobuild.
run_list() {
  built=0 p_nv=0 p_ours=0 w_nv=0 w_ours=0 regress=() rows=() nobuild=()
  local rel name dir v_nv v_ours
  for rel in "$@"; do
    name="$(basename "$rel")"
    dir="$WORK/run/$name"
    say ""
    say "=== $rel: build"
    cat "$WORK/build.$name.log" >>"$LOG"
    if [ "$(cat "$WORK/build.$name.rc" 2>/dev/null)" != 0 ]; then
      say "build failed"
      nobuild+=("$name")
      rows+=("$(printf '%-30s %-8s %-40s %s' "$name" no - -)")
      continue
    fi
    built=$((built + 1))
    v_nv="$(run_one "$name" "$dir" "" "$WORK/$name.nvidia.txt" "$NVIDIA")"
    say "=== $rel on NVIDIA's libcuda: $v_nv"
    tail -n 40 "$WORK/$name.nvidia.txt" >>"$LOG"
    v_ours="$(run_one "$name" "$dir" "$OURDIR" "$WORK/$name.ours.txt" "$OURS")"
    say "=== $rel on ours: $v_ours"
    tail -n 40 "$WORK/$name.ours.txt" >>"$LOG"
    [ "$v_nv" = pass ] && p_nv=$((p_nv + 1))
    [ "$v_ours" = pass ] && p_ours=$((p_ours + 1))
    [ "$v_nv" = waived ] && w_nv=$((w_nv + 1))
    [ "$v_ours" = waived ] && w_ours=$((w_ours + 1))
    [ "$v_nv" = pass ] && [ "$v_ours" != pass ] && regress+=("$name")
    rows+=("$(printf '%-30s %-8s %-40s %s' "$name" yes "$v_nv" "$v_ours")")
  done
}

run_list "${SAMPLES[@]}"
n_listed="${#SAMPLES[@]}"
{
  printf '%-30s %-8s %-40s %s\n' sample built "NVIDIA's libcuda" ours
  printf '%s\n' "${rows[@]}"
  echo
  f="${#regress[@]}"
  names=""
  [ "$f" -gt 0 ] && names=" (${regress[*]})"
  echo "cuda-samples: $built built; NVIDIA passed $p_nv; ours passed $p_ours; passed on NVIDIA but failed on ours: $f$names"
} | tee "$SUM" | tee -a "$LOG"
rc=0
[ "$built" = "$n_listed" ] || rc=1
[ "${#regress[@]}" = 0 ] || rc=1

if [ "${#SWEEP[@]}" -gt 0 ]; then
  run_list "${SWEEP[@]}"
  {
    echo
    printf '%-30s %-8s %-40s %s\n' "sweep sample" built "NVIDIA's libcuda" ours
    printf '%s\n' "${rows[@]}"
    echo
    f="${#regress[@]}"
    names=""
    [ "$f" -gt 0 ] && names=" (${regress[*]})"
    nb=""
    [ "${#nobuild[@]}" -gt 0 ] && nb=" (${nobuild[*]})"
    echo "cuda-samples sweep: ${#SWEEP[@]} listed; $built built, ${#nobuild[@]} did not$nb; NVIDIA passed $p_nv, waived $w_nv; ours passed $p_ours, waived $w_ours; passed on NVIDIA but failed on ours: $f$names"
  } | tee -a "$SUM" | tee -a "$LOG"
  [ "${#regress[@]}" = 0 ] || rc=1
fi
if [ "${CS_KEEP:-0}" = 1 ]; then echo "work folder kept: $WORK"; else rm -rf "$WORK"; fi
exit $rc
