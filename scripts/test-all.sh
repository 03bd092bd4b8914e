#!/usr/bin/env bash
# Every test of libtegragpu, on a fresh machine (installs what it needs; see scripts/env.sh):
#   1. Rust: cargo test --release --workspace (unit, integration, contract suite on the emulated Orin, and the
#      header check: include/tegragpu.h fresh + compiles as C99 and C++)
#   2. C: meson builds the library (reusing target/ from step 1), the examples and api_misuse
#      (plain and -fsanitize=address); `meson test` runs them all on the emulated Orin
#   3. Python: pytest python/tests (against the library meson built) and tests/conformance (the
#      conformance manifest and the foreign-module finder, no GPU); then
#      scripts/check-python-package.sh (pip install ./python into a clean venv, tests again)
# Prints a closing "N passed, N failed[, N skipped]" line; exits non-zero if anything failed.
#
# Environment: TEGRAGPU_REQUIRE_NVRTC=1 makes a missing libnvrtc a failure instead of a skip.
#              TEGRAGPU_MESON_DEVICE=<spec> runs the C examples on another device (default emu).
set -uo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/env.sh
source scripts/env.sh
tg_setup || { echo "set-up failed"; exit 1; }

ROOT="$PWD"
LOGS="$ROOT/build/test-logs"
mkdir -p "$LOGS"
failed_stages=()
export CARGO_TERM_COLOR=never
# The header must compile as C and C++: make a missing compiler a failure, not a skip, whenever
# set-up could provide both.
if command -v cc >/dev/null 2>&1 && command -v c++ >/dev/null 2>&1; then
  export TEGRAGPU_REQUIRE_CC=1
else
  echo "note: no C++ compiler; the C++ header check is skipped"
fi

tg_log "1/3 Rust: cargo test --release --workspace --no-fail-fast"
cargo test --release --workspace --no-fail-fast 2>&1 | tee "$LOGS/cargo.log"
[ "${PIPESTATUS[0]}" = 0 ] || failed_stages+=(cargo)

tg_log "2/3 C: meson (examples, api_misuse; api_misuse, vector_add and library_copies under ASan) on ${TEGRAGPU_MESON_DEVICE:-emu}"
asan=enabled
[ "${TEGRAGPU_ASAN:-1}" = 0 ] && asan=disabled
{
  if [ -f build/meson/build.ninja ]; then
    meson configure build/meson -Dcargo_target_dir="${CARGO_TARGET_DIR:-$ROOT/target}" -Dasan_misuse=$asan \
      -Ddevice="${TEGRAGPU_MESON_DEVICE:-emu}"
  else
    meson setup build/meson -Dcargo_target_dir="${CARGO_TARGET_DIR:-$ROOT/target}" -Dasan_misuse=$asan \
      -Ddevice="${TEGRAGPU_MESON_DEVICE:-emu}"
  fi && meson compile -C build/meson && meson test -C build/meson --print-errorlogs
} 2>&1 | tee "$LOGS/meson.log"
[ "${PIPESTATUS[0]}" = 0 ] || failed_stages+=(meson)

tg_log "3/3 Python: pytest python/tests tests/conformance"
TEGRAGPU_LIBRARY="$ROOT/build/meson/libtegragpu.so" python -m pytest -q -rs python/tests tests/conformance 2>&1 | tee "$LOGS/pytest.log"
[ "${PIPESTATUS[0]}" = 0 ] || failed_stages+=(pytest)
# The package installed with pip into a clean venv, its tests run again against the installed
# copy, and a wheel with the library bundled (not counted: the counts above come from pytest.log).
tg_log "3/3 Python: clean-venv install (scripts/check-python-package.sh)"
TEGRAGPU_LIBRARY="$ROOT/build/meson/libtegragpu.so" bash scripts/check-python-package.sh 2>&1 | tee "$LOGS/python-package.log"
[ "${PIPESTATUS[0]}" = 0 ] || failed_stages+=(python-package)

python - "$LOGS" "${failed_stages[@]+"${failed_stages[@]}"}" <<'PYEOF'
import re, sys, os
logs, failed_stages = sys.argv[1], sys.argv[2:]
p = f = s = 0
def read(name):
    try:
        return open(os.path.join(logs, name), errors="replace").read()
    except OSError:
        return ""
for m in re.finditer(r"test result: \w+\. (\d+) passed; (\d+) failed; (\d+) ignored", read("cargo.log")):
    p += int(m[1]); f += int(m[2]); s += int(m[3])
meson = read("meson.log")
for key, val in re.findall(r"^(Ok|Fail|Skipped|Expected Fail|Unexpected Pass|Timeout):\s+(\d+)", meson, re.M):
    if key == "Ok" or key == "Expected Fail": p += int(val)
    elif key == "Skipped": s += int(val)
    else: f += int(val)
py = read("pytest.log")
for n, what in re.findall(r"(\d+) (passed|failed|skipped|error|errors)\b", py.splitlines()[-1] if py.strip() else ""):
    if what == "passed": p += int(n)
    elif what == "skipped": s += int(n)
    else: f += int(n)
if failed_stages:
    print("failed stages: " + ", ".join(failed_stages))
    f = max(f, len(failed_stages))
print(f"{p} passed, {f} failed, {s} skipped")
sys.exit(1 if failed_stages or f else 0)
PYEOF
