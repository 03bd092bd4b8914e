#!/usr/bin/env bash
# Build everything the device machine needs (it has no Rust toolchain) into .device/:
# release library + binaries, the Rust integration-test binaries, the C examples (meson), and the
# Python package. Run here; then `scripts/device-run.sh` runs there (see docs/hardware.md).
set -euo pipefail
cd "$(dirname "$0")/.."
out=.device
rm -rf "$out"; mkdir -p "$out/bin" "$out/tests" "$out/lib"
cargo build --release --bins
cargo test --release --no-run --message-format=json 2>/dev/null \
  | python3 -c 'import json,sys
for l in sys.stdin:
    try: m=json.loads(l)
    except Exception: continue
    if m.get("reason")=="compiler-artifact" and m.get("profile",{}).get("test") and m.get("executable"):
        print(m["target"]["name"], m["executable"])' > "$out/tests.txt"
while read -r name exe; do cp "$exe" "$out/tests/$name"; strip "$out/tests/$name"; done < "$out/tests.txt"
cp target/release/tegragpu-info target/release/tegragpu-bench "$out/bin/"; strip "$out"/bin/*
cp target/release/libtegragpu.so "$out/lib/libtegragpu.so.0"
ln -sf libtegragpu.so.0 "$out/lib/libtegragpu.so"
if command -v meson >/dev/null 2>&1 && [ -f meson.build ]; then
  rm -rf build-device
  meson setup build-device -Dbuildtype=release >/dev/null
  meson compile -C build-device >/dev/null
  mkdir -p "$out/c"
  find build-device/c-examples -maxdepth 1 -type f -executable -exec cp {} "$out/c/" \;
fi
du -sh "$out"
