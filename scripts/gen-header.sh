#!/usr/bin/env bash
# Regenerate include/tegragpu.h from src/capi/mod.rs with cbindgen (config: cbindgen.toml).
# The same test fails in CI when the committed header is stale.
set -euo pipefail
cd "$(dirname "$0")/.."
TEGRAGPU_BLESS=1 cargo test --release --test header header_is_fresh -- --quiet
echo "include/tegragpu.h regenerated"
