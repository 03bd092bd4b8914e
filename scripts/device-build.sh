#!/usr/bin/env bash
# Build everything the device machine needs (it has no Rust toolchain) into .device/:
# release library + binaries, the research probes (tools/probes, a cargo package of its own), the
# Rust integration-test binaries, the C examples (meson), and the Python package. Run here; then
# `scripts/device-run.sh` runs there (see docs/hardware.md).
set -euo pipefail
cd "$(dirname "$0")/.."
out=.device
# Only what this script makes is replaced (.device/tinygrad, from scripts/tinygrad-device-run.sh's
# set-up, stays).
rm -rf "$out/bin" "$out/tests" "$out/lib" "$out/c" "$out/whl" "$out/tests.txt"
mkdir -p "$out/bin" "$out/tests" "$out/lib"
cargo build --release --lib --bins
# libtegragpu's libcuda.so.1 (cuda/, a member of the workspace), kept apart from .device/lib: the
# device run puts .device/lib first on the library path, where it would replace NVIDIA's libcuda.
cargo build --release -p tegragpu-cuda
# The probes: their own package, lock file and target directory (tools/probes/README.md).
cargo build --release --manifest-path tools/probes/Cargo.toml --bins
probes=${CARGO_TARGET_DIR:-tools/probes/target}/release
cargo test --release --workspace --no-run --message-format=json 2>/dev/null \
  | python3 -c 'import json,sys
for l in sys.stdin:
    try: m=json.loads(l)
    except Exception: continue
    if m.get("reason")=="compiler-artifact" and m.get("profile",{}).get("test") and m.get("executable"):
        print(m["target"]["name"], m["executable"])' > "$out/tests.txt"
while read -r name exe; do cp "$exe" "$out/tests/$name"; strip "$out/tests/$name"; done < "$out/tests.txt"
cp target/release/tegragpu-info target/release/tegragpu-bench target/release/tegragpu-cuda "$out/bin/"
for p in latency_probe copy_probe doorbell_probe wc_probe tail_probe rmperf_probe tegragpu-rmprobe; do
  cp "$probes/$p" "$out/bin/"
done
strip "$out"/bin/*
cp target/release/libtegragpu.so "$out/lib/libtegragpu.so.0"
ln -sf libtegragpu.so.0 "$out/lib/libtegragpu.so"
mkdir -p "$out/lib/cuda"
cp target/release/libcuda.so "$out/lib/cuda/libcuda.so.1"
strip --strip-debug "$out/lib/cuda/libcuda.so.1"
# C examples through meson (meson + ninja from pip, as scripts/env.sh sets them up).
# shellcheck source=scripts/env.sh
set +eu +o pipefail
source scripts/env.sh
tg_setup minimal || exit 1
set -euo pipefail
rm -rf build-device
meson setup build-device -Dcargo_target_dir="${CARGO_TARGET_DIR:-$PWD/target}" >/dev/null
meson compile -C build-device >/dev/null
mkdir -p "$out/c"
find build-device/c-examples -maxdepth 1 -type f -executable -exec cp {} "$out/c/" \;
strip "$out"/c/* 2>/dev/null || true
# The examples built with -fsanitize=address need this compiler's ASan runtime there.
for lib in $(ldd "$out"/c/*_asan 2>/dev/null | awk '/libasan/ {print $3}' | sort -u); do
  cp -L "$lib" "$out/lib/"
done
# pytest for the device machine (it has numpy but may lack pytest; no network there).
mkdir -p "$out/whl"
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux2014_x86_64 --platform any -d "$out/whl" pytest pluggy iniconfig packaging >/dev/null 2>&1 \
  || echo "could not download pytest wheels; the device run will use its own pytest if any"
du -sh "$out"
