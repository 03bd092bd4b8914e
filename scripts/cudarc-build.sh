#!/usr/bin/env bash
# Build cudarc's own unit tests (the crate's library test binary) for scripts/cudarc-device-run.sh,
# which runs them on the device machine once on NVIDIA's libcuda and once on ours. Run here (the
# device machine has no Rust toolchain); no CUDA installation is needed: the features below load
# libcuda, libnvrtc, cuBLAS, cuBLASLt and cuRAND at run time (dlopen), so the binary links none.
#
#   bash scripts/cudarc-build.sh
#
# Pinned: cudarc CUDARC_VERSION (default 0.19.10, the crate's sha256 is checked), built with
#   --no-default-features --features std,driver,nvrtc,cublas,cublaslt,curand,dynamic-loading,cuda-13000
# with the crate's own Cargo.lock (--locked). Output: .device/cudarc/cudarc-<version> (the test
# binary, stripped), .device/cudarc/BUILD.txt (version, features, toolchain, test list).
# The crate is unpacked and built in CUDARC_BUILD_DIR (default build/cudarc, ignored by git); the
# unpacked crate gets an empty [workspace] table so that cargo does not take it for a member of ours.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
VERSION="${CUDARC_VERSION:-0.19.10}"
SHA256_0_19_10=7359bf1de037ddada72729c3acec9b040f3468400c6e9e740b01ba0cd2e89562
FEATURES="std,driver,nvrtc,cublas,cublaslt,curand,dynamic-loading,cuda-13000"
WORK="${CUDARC_BUILD_DIR:-$ROOT/build/cudarc}"
out="$ROOT/.device/cudarc"
mkdir -p "$WORK"

# Fetch the crate through cargo (a throw-away package that depends on exactly this version).
fetcher="$WORK/fetch"
mkdir -p "$fetcher/src"
: >"$fetcher/src/lib.rs"
cat >"$fetcher/Cargo.toml" <<EOF
[package]
name = "cudarc-fetch"
version = "0.0.0"
edition = "2021"
publish = false

[dependencies]
cudarc = { version = "=$VERSION", default-features = false, features = ["driver", "dynamic-loading", "cuda-13000"] }

[workspace]
EOF
cargo fetch --manifest-path "$fetcher/Cargo.toml" >/dev/null
crate="$(ls "${CARGO_HOME:-$HOME/.cargo}"/registry/cache/*/"cudarc-$VERSION.crate" | head -n1)"
[ -f "$crate" ] || { echo "cudarc-$VERSION.crate not found in cargo's cache"; exit 1; }
sum="$(sha256sum "$crate" | cut -d' ' -f1)"
if [ "$VERSION" = 0.19.10 ] && [ "$sum" != "$SHA256_0_19_10" ]; then
  echo "cudarc-$VERSION.crate: sha256 $sum, expected $SHA256_0_19_10"; exit 1
fi
rm -rf "$WORK/cudarc-$VERSION"
tar -xzf "$crate" -C "$WORK"
src="$WORK/cudarc-$VERSION"
printf '\n[workspace]\n' >>"$src/Cargo.toml"

# The library's unit tests only (--lib: the examples need libraries this build leaves out).
exe="$(cd "$src" && cargo test --release --locked --lib --no-run --no-default-features \
  --features "$FEATURES" --message-format=json 2>/dev/null | python3 -c 'import json,sys
for l in sys.stdin:
    try: m = json.loads(l)
    except Exception: continue
    if m.get("reason") == "compiler-artifact" and m.get("profile", {}).get("test") and m.get("executable"):
        print(m["executable"])' | tail -n1)"
[ -x "$exe" ] || { echo "the cudarc test build failed:"; (cd "$src" && cargo test --release --locked \
  --lib --no-run --no-default-features --features "$FEATURES" 2>&1 | tail -n 30); exit 1; }

rm -rf "$out"
mkdir -p "$out"
cp "$exe" "$out/cudarc-$VERSION"
strip "$out/cudarc-$VERSION"
{
  echo "cudarc $VERSION (crates.io, sha256 $sum)"
  echo "features: --no-default-features --features $FEATURES"
  echo "toolchain: $(rustc --version)"
  echo "binary: cudarc-$VERSION ($(stat -c %s "$out/cudarc-$VERSION") bytes, stripped)"
  echo "tests:"
  "$out/cudarc-$VERSION" --list 2>/dev/null | sed -n 's/: test$//p' | sed 's/^/  /'
} >"$out/BUILD.txt"
head -n 4 "$out/BUILD.txt"
echo "$(grep -c '^  ' "$out/BUILD.txt") tests in $out/cudarc-$VERSION"
