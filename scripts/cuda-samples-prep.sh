#!/usr/bin/env bash
# Copies the driver-API samples and some CUDA runtime samples of NVIDIA's cuda-samples (the CUDA
# 13 release) that
# scripts/cuda-samples-device-run.sh builds and runs, and the samples' Common/ headers, into
# .device/cuda-samples/ (ignored by git: the samples' code is never part of this repository).
#
#   bash scripts/cuda-samples-prep.sh /path/to/cuda-samples        # a checkout, or
#   bash scripts/cuda-samples-prep.sh /path/to/cuda-samples.git    # a bare git directory
#   CUDA_SAMPLES=/path/... bash scripts/cuda-samples-prep.sh
#
# A git directory is read at CUDA_SAMPLES_REV (default HEAD) with `git show`; a checkout's work
# tree is copied as it is. The copy keeps the samples' layout (Common/, Samples/<group>/<name>/)
# and leaves out what the runs do not need (documentation, IDE files); it is about 2 MiB.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
SRC="${1:-${CUDA_SAMPLES:-}}"
REV="${CUDA_SAMPLES_REV:-HEAD}"
DEST="$ROOT/.device/cuda-samples"
[ -n "$SRC" ] || { echo "usage: $0 CUDA_SAMPLES_DIR (a checkout or its git directory)"; exit 2; }

# The samples scripts/cuda-samples-device-run.sh runs (docs/cuda-driver-api.md lists them).
SAMPLES=(
  0_Introduction/vectorAddDrv
  0_Introduction/vectorAddMMAP
  0_Introduction/matrixMulDrv
  0_Introduction/simpleTextureDrv
  0_Introduction/matrixMulDynlinkJIT
  0_Introduction/clock_nvrtc
  0_Introduction/matrixMul_nvrtc
  0_Introduction/simpleAssert_nvrtc
  0_Introduction/simpleAtomicIntrinsics_nvrtc
  0_Introduction/vectorAdd_nvrtc
  1_Utilities/deviceQueryDrv
  2_Concepts_and_Techniques/inlinePTX_nvrtc
  2_Concepts_and_Techniques/threadMigration
  3_CUDA_Features/memMapIPCDrv
  4_CUDA_Libraries/jitLto
  5_Domain_Specific/BlackScholes_nvrtc
  5_Domain_Specific/binomialOptions_nvrtc
  5_Domain_Specific/quasirandomGenerator_nvrtc
  7_libNVVM/simple
  7_libNVVM/uvmlite
  7_libNVVM/device-side-launch
  # Programs built on the CUDA runtime (nvcc links it in; it loads libcuda.so.1 at run time).
  0_Introduction/vectorAdd
  0_Introduction/matrixMul
  0_Introduction/asyncAPI
  0_Introduction/clock
  0_Introduction/simpleStreams
  0_Introduction/simpleCallback
  0_Introduction/simpleAtomicIntrinsics
  0_Introduction/simpleVoteIntrinsics
  0_Introduction/simpleOccupancy
  0_Introduction/simpleZeroCopy
  0_Introduction/simplePrintf
  0_Introduction/simpleCooperativeGroups
  0_Introduction/simpleAssert
  0_Introduction/simpleDrvRuntime
)
# What a sample needs: sources, headers, IR, data; not documentation or IDE settings.
keep() {
  case "$1" in
    */.vscode/* | */doc/* | *.md | *.txt | *.sln | *.vcxproj* | *.bat | */extras/*) return 1 ;;
    *_out.pgm) return 1 ;;
  esac
  return 0
}

if git --git-dir="$SRC" rev-parse --verify -q "$REV^{commit}" >/dev/null 2>&1 && [ ! -d "$SRC/Samples" ]; then
  MODE=git GIT="$SRC"
elif [ -d "$SRC/Samples" ] && [ -d "$SRC/Common" ]; then
  MODE=tree
else
  echo "$SRC is neither a cuda-samples checkout (Samples/, Common/) nor its git directory"; exit 2
fi

rm -rf "$DEST"
mkdir -p "$DEST"
n=0
copy_path() { # path inside the repository
  keep "$1" || return 0
  mkdir -p "$DEST/$(dirname "$1")"
  if [ "$MODE" = git ]; then
    git --git-dir="$GIT" show "$REV:$1" >"$DEST/$1"
  else
    cp "$SRC/$1" "$DEST/$1"
  fi
  n=$((n + 1))
}
list() { # folder inside the repository: its files, recursively
  if [ "$MODE" = git ]; then
    git --git-dir="$GIT" ls-tree -r --name-only "$REV" -- "$1/"
  else
    (cd "$SRC" && find "$1" -type f | sort)
  fi
}

# Common/: the helper headers and helper_multiprocess.cpp (not its libraries, data or GL headers).
while IFS= read -r f; do
  case "$f" in Common/*/*) ;; Common/*.h | Common/helper_multiprocess.cpp) copy_path "$f" ;; esac
done < <(list Common)
# The libNVVM samples' shared headers.
while IFS= read -r f; do copy_path "$f"; done < <(list Samples/7_libNVVM/common)
for s in "${SAMPLES[@]}"; do
  files="$(list "Samples/$s")"
  [ -n "$files" ] || { echo "missing: Samples/$s"; exit 1; }
  while IFS= read -r f; do copy_path "$f"; done <<<"$files"
done
if [ "$MODE" = git ]; then
  git --git-dir="$GIT" rev-parse "$REV" >"$DEST/REVISION"
else
  git -C "$SRC" rev-parse HEAD >"$DEST/REVISION" 2>/dev/null || echo unknown >"$DEST/REVISION"
fi
printf '%s\n' "${SAMPLES[@]}" >"$DEST/SAMPLES"
echo "cuda-samples $(cat "$DEST/REVISION"): $n files, $(du -sh "$DEST" | cut -f1) in $DEST"
