# Sourced by scripts/test-all.sh and scripts/run-main.sh: installs what the build and tests need
# and exports the environment. Everything Python goes into a venv under build/ (git-ignored):
#   meson, ninja, numpy, pytest, the pinned libnvrtc wheel (same pin as scripts/gen_cubins.py) and
#   the libnvJitLink wheel of the same CUDA release (PTX JIT tests), and the CUDA header wheels
#   of that release (cuda_runtime, cccl, nvcc's crt/) so the conformance corpus kernels that
#   include <cuda_fp16.h>, <mma.h>, <cooperative_groups.h> or <cuda/barrier> compile with nvrtc.
# Usage: source scripts/env.sh [minimal]     ("minimal": meson + ninja only)

TG_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TG_VENV="$TG_ROOT/build/venv"
TG_NVRTC_PIP="nvidia-cuda-nvrtc-cu12"
TG_NVRTC_PIN="$(sed -n 's/^PIP_VERSION = "\(.*\)"/\1/p' "$TG_ROOT/scripts/gen_cubins.py" 2>/dev/null | head -n1)"
TG_NVRTC_PIN="${TG_NVRTC_PIN:-12.9.86}"
# nvJitLink for the PTX JIT tests (src/ptxjit.rs), same CUDA release as the nvrtc pin.
TG_NVJITLINK_PIP="nvidia-nvjitlink-cu12"
TG_NVJITLINK_PIN="12.9.86"
# CUDA headers for nvrtc (tests/conformance_load.rs finds them beside libnvrtc), same release.
TG_CUDA_HEADER_PIPS=("nvidia-cuda-runtime-cu12==12.9.79" "nvidia-cuda-cccl-cu12==12.9.27" "nvidia-cuda-nvcc-cu12==12.9.86")

tg_log() { printf '\n=== %s\n' "$*"; }

tg_as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null 2>&1; then sudo -n "$@"; else return 1; fi
}

tg_apt_install() {
  command -v apt-get >/dev/null 2>&1 || return 1
  if [ -z "${TG_APT_UPDATED:-}" ]; then
    tg_as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null || return 1
    TG_APT_UPDATED=1
  fi
  tg_as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

tg_make_venv() {
  [ -x "$TG_VENV/bin/python" ] && return 0
  mkdir -p "$TG_ROOT/build"
  if ! python3 -m venv "$TG_VENV" >/dev/null 2>&1; then
    rm -rf "$TG_VENV"
    # Debian's python3 needs python3-venv for ensurepip.
    tg_log "installing python3-venv (apt)"
    tg_apt_install python3-venv || true
    python3 -m venv "$TG_VENV" || return 1
  fi
}

tg_setup() {
  local mode="${1:-full}"
  command -v cargo >/dev/null 2>&1 || { echo "cargo not found: install Rust (https://rustup.rs)" >&2; return 1; }
  command -v cc >/dev/null 2>&1 || { tg_log "installing gcc (apt)"; tg_apt_install gcc libc6-dev || { echo "no C compiler" >&2; return 1; }; }
  if [ "$mode" != minimal ] && ! command -v c++ >/dev/null 2>&1; then
    tg_log "installing g++ for the C++ header check (apt; optional)"
    tg_apt_install g++ || echo "g++ not available: the C++ header check is skipped"
  fi
  tg_make_venv || { echo "cannot create a Python venv in $TG_VENV" >&2; return 1; }
  local pkgs=(meson ninja)
  if [ "$mode" != minimal ]; then
    pkgs+=(numpy pytest "$TG_NVRTC_PIP==$TG_NVRTC_PIN" "$TG_NVJITLINK_PIP==$TG_NVJITLINK_PIN" "${TG_CUDA_HEADER_PIPS[@]}")
    # The tinygrad device (python/tegragpu/tinygrad_device/) supports tinygrad 0.14.0, which
    # needs Python >= 3.11.
    if "$TG_VENV/bin/python" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
      pkgs+=("tinygrad==0.14.0")
    fi
  fi
  tg_log "pip install ${pkgs[*]} (into $TG_VENV)"
  "$TG_VENV/bin/python" -m pip install -q --disable-pip-version-check "${pkgs[@]}" || return 1
  export VIRTUAL_ENV="$TG_VENV"
  export PATH="$TG_VENV/bin:$PATH"
  local nvrtc
  nvrtc="$(ls "$TG_VENV"/lib/python3*/site-packages/nvidia/cuda_nvrtc/lib/libnvrtc.so.12 2>/dev/null | head -n1 || true)"
  if [ -n "$nvrtc" ] && [ -z "${TEGRAGPU_NVRTC:-}" ]; then
    export TEGRAGPU_NVRTC="$nvrtc"
  fi
  local nvjitlink
  nvjitlink="$(ls "$TG_VENV"/lib/python3*/site-packages/nvidia/nvjitlink/lib/libnvJitLink.so.12 2>/dev/null | head -n1 || true)"
  if [ -n "$nvjitlink" ] && [ -z "${TEGRAGPU_PTXJIT:-}" ]; then
    export TEGRAGPU_PTXJIT="$nvjitlink"
  fi
  return 0
}
