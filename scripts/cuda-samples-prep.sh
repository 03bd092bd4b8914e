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
#   bash scripts/cuda-samples-prep.sh --all /path/to/cuda-samples  # and the sweep
#
# A git directory is read at CUDA_SAMPLES_REV (default HEAD) with `git show`; a checkout's work
# tree is copied as it is. The copy keeps the samples' layout (Common/, Samples/<group>/<name>/)
# and leaves out what the runs do not need (documentation, IDE files); it is about 2 MiB.
#
# With --all, also every other sample of groups 0 to 6 whose CMakeLists.txt needs nothing beyond
# the CUDA toolkit (no OpenGL, GLUT, EGL, Vulkan, Direct3D, X11, NvSci, FreeImage, NPP, nvJPEG,
# OpenMP or MPI): the sweep, listed in SWEEP, with each one's sources (its add_executable list)
# toolkit libraries (its CUDA:: targets) and include folders in RECIPES as
# `group/name|sources|libraries|-Ifolders`, which
# the run script builds with one generic nvcc recipe. About 25 MiB more.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
ALL=0
if [ "${1:-}" = --all ]; then ALL=1; shift; fi
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
    git --git-dir="$GIT" show "$REV:$1" >"$DEST/$1" ||
      { echo "skipped (unreadable here): $1"; rm -f "$DEST/$1"; return 0; }
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

if [ "$ALL" = 1 ]; then
  show() { # a file inside the repository
    if [ "$MODE" = git ]; then git --git-dir="$GIT" show "$REV:$1"; else cat "$SRC/$1"; fi
  }
  dirs() { # the sample folders of a group
    if [ "$MODE" = git ]; then
      git --git-dir="$GIT" ls-tree -d --name-only "$REV" -- "Samples/$1/"
    else
      (cd "$SRC" && find "Samples/$1" -mindepth 1 -maxdepth 1 -type d | sort)
    fi
  }
  : >"$DEST/SWEEP"
  : >"$DEST/RECIPES"
  for g in 0_Introduction 1_Utilities 2_Concepts_and_Techniques 3_CUDA_Features \
    4_CUDA_Libraries 5_Domain_Specific 6_Performance; do
    while IFS= read -r d; do
      rel="${d#Samples/}"
      printf '%s\n' "${SAMPLES[@]}" | grep -qxF "$rel" && continue
      cm="$(show "$d/CMakeLists.txt" 2>/dev/null)" || continue
      grep -qE 'OpenGL|GLUT|GLEW|EGL|Vulkan|D3D|X11|NVSCI|NvSci|FreeImage|npp|nvjpeg|cudla|OpenMP|find_package\(MPI' <<<"$cm" && continue
      name="$(basename "$d")"
      srcs="$(tr '\n' ' ' <<<"$cm" | { grep -oE "add_executable\($name [^)]*\)" || true; } | head -n1 |
        sed -e "s/^add_executable($name //" -e 's/)$//')"
      [ -n "$srcs" ] || continue
      libs="$({ grep -oE 'CUDA::[A-Za-z_]+' <<<"$cm" || true; } | sort -u | sed -n \
        -e 's/^CUDA::cuda_driver$/-lcuda/p' -e 's/^CUDA::cudart$//' \
        -e 's/^CUDA::\(cublas\|cublasLt\|curand\|cusparse\|cusolver\|cufft\|nvrtc\|nvJitLink\)$/-l\1/p' \
        -e 's/^CUDA::cufft_static$/-lcufft_static -lculibos/p' | tr '\n' ' ')"
      # cuSolver's samples call cuSPARSE too.
      grep -q -- -lcusolver <<<"$libs" && libs="$libs -lcusparse"
      # Relative include folders of target_include_directories (inc/, ...).
      incs="$(tr '\n' ' ' <<<"$cm" | { grep -oE "target_include_directories\($name [^)]*\)" || true; } |
        sed -e "s/^target_include_directories($name//" -e 's/)$//' | tr ' ' '\n' |
        { grep -vE '^$|^\$|^(PRIVATE|PUBLIC|INTERFACE)$' || true; } | sed 's/^/-I/' | tr '\n' ' ')"
      while IFS= read -r f; do copy_path "$f"; done < <(list "$d")
      echo "$rel" >>"$DEST/SWEEP"
      echo "$rel|$srcs|$libs|$incs" >>"$DEST/RECIPES"
    done < <(dirs "$g")
  done
  echo "sweep: $(wc -l <"$DEST/SWEEP") more samples"
fi
echo "cuda-samples $(cat "$DEST/REVISION"): $n files, $(du -sh "$DEST" | cut -f1) in $DEST"
