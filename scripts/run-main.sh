#!/usr/bin/env bash
# The main job on a fresh machine: install meson + ninja (pip, into build/venv), build
# libtegragpu and the C examples with meson, and run a vector add on this machine's NVIDIA GPU
# (Jetson Orin through nvgpu, or a desktop GPU through the RM driver). Without a GPU it runs on
# the emulated Orin instead; the output says which.
#
#   ./scripts/run-main.sh          # or: TEGRAGPU_DEVICE=emu ./scripts/run-main.sh
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/env.sh
source scripts/env.sh
tg_setup minimal
if [ -f build/meson/build.ninja ]; then
  meson configure build/meson -Dcargo_target_dir="${CARGO_TARGET_DIR:-$PWD/target}" >/dev/null
else
  meson setup build/meson -Dcargo_target_dir="${CARGO_TARGET_DIR:-$PWD/target}" >/dev/null
fi
tg_log "building (cargo build --release through meson)"
meson compile -C build/meson
tg_log "vector_add"
exec build/meson/c-examples/vector_add "$@"
