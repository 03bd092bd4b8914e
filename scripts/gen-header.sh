#!/usr/bin/env bash
# Regenerate include/tegragpu.h from src/capi/ (entry point mod.rs) with cbindgen (config: cbindgen.toml),
# then docs/api-reference.md from the header.
# The same test fails in CI when the committed header is stale.
set -euo pipefail
cd "$(dirname "$0")/.."
TEGRAGPU_BLESS=1 cargo test --release --test header header_is_fresh -- --quiet
echo "include/tegragpu.h regenerated"
# The API reference is rendered from the header (tests/api_docs.rs checks it).
python3 scripts/gen-api-docs.py
echo "docs/api-reference.md regenerated"
