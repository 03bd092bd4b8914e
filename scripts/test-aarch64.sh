#!/usr/bin/env bash
# The library, its tools, the C examples and the test suite built for aarch64-unknown-linux-gnu
# (the Jetson Orin's CPU) and run on the emulated Orin under qemu-user, on an x86-64 Debian 12
# machine. Installs what it needs (Debian packages; the CUDA compiler wheels of scripts/env.sh for
# aarch64 from PyPI) and can be run again at any time:
#
#   0. set-up: arm64 as a dpkg foreign architecture; rustc-web, cargo-web, rust-web-clippy and
#      libstd-rust-web-dev:arm64 (Debian's Rust for the cross build: rustup's toolchain has no
#      aarch64 std, and a std of another rustc version cannot be used); the cross gcc/g++ and
#      libc; qemu-user, qemu-user-static and the binfmt_misc entry for qemu-aarch64, so aarch64
#      programs (test binaries, and the programs they start) run like native ones. qemu gets no
#      -L / QEMU_LD_PREFIX: the programs use the multiarch glibc (libc6:arm64); a second glibc
#      from a sysroot would mix with it.
#   1. cargo clippy --all-targets --release -D warnings for aarch64 (CI lints both targets).
#   2. cargo test --release for aarch64 under qemu, every test binary, with
#      TEGRAGPU_EMU_MEMFD_BACKING=1 (qemu-user cannot mremap() with old size 0, which the emulated
#      kernel uses otherwise to map buffers) and the aarch64 libnvrtc / libnvJitLink / CUDA headers
#      (required, as in CI). The tests in QEMU_SKIPS below are skipped by name, each with its
#      reason printed and counted.
#   3. meson cross build (scripts/meson-cross-aarch64.ini): the library, the tools, the C examples
#      and api_misuse, and `meson test` runs them under qemu.
#
# Ends with "N passed, N failed, N skipped" alone on a line (skipped: the QEMU_SKIPS, README blocks
# the README check skipped, and tests that print a skip notice, each listed above that line) and
# exits non-zero if anything failed. The Python package is not tested here (it needs an aarch64
# Python; scripts/test-all.sh tests it on x86-64).
#
# Environment: TEGRAGPU_AARCH64_TARGET_DIR  cargo target dir (default: target-aarch64/)
#              TEGRAGPU_AARCH64_SKIP_CLIPPY=1  skip step 1 (counted as a skip)
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
TRIPLE=aarch64-unknown-linux-gnu
LOGS="$ROOT/build/test-logs-aarch64"
mkdir -p "$LOGS"
T0=$(date +%s)
log() { printf '\n=== [%ss] %s\n' "$(($(date +%s) - T0))" "$*"; }
die() { echo "test-aarch64: $*" >&2; echo "0 passed, 1 failed"; exit 1; }

# Tests that cannot be meaningful under qemu-user, by exact name, with the reason; they run
# natively in scripts/test-all.sh. (The emulated kernel's copy_from_user/copy_to_user go through a
# pipe where qemu-user lacks process_vm_readv/writev, so bad user pointers still give EFAULT.)
QEMU_SKIPS=(
  "creating_a_buffer_needs_one_free_fd_for_a_moment|buffer_fds|counts descriptors: with TEGRAGPU_EMU_MEMFD_BACKING=1 (needed: qemu-user cannot mremap with old size 0) every emulated buffer holds a memfd"
  "more_live_buffers_than_the_fd_limit|buffer_fds|counts descriptors: every emulated buffer holds a memfd under TEGRAGPU_EMU_MEMFD_BACKING=1"
  "emu_leaves_rlimit_nofile_alone_and_running_out_fails_clearly|emu_rlimit|counts descriptors: every emulated buffer holds a memfd under TEGRAGPU_EMU_MEMFD_BACKING=1"
  "import_refuses_what_it_cannot_map_and_leaves_nothing|share_fd|counts descriptors (no fd left open after refused imports): every emulated buffer holds a memfd under TEGRAGPU_EMU_MEMFD_BACKING=1"
  "emulator_holds_no_private_fds|emu_kernel|checks that buffers hold no descriptor: every emulated buffer holds a memfd under TEGRAGPU_EMU_MEMFD_BACKING=1"
  "module_load_mutants|fuzz_smoke|hung under qemu-aarch64 in 2 of 3 full runs (one input past the 120 s watchdog while capi_sequence_mutants ran beside it; that input replays in 0.1 s, and the test passes on its own under qemu): not diagnosed yet"
  "a_long_kernel_survives_a_competing_context|queue_pool|under qemu-aarch64 (3 of 3 runs) the fault report of the 3,000 ms case has error code 0 (the channel seen through GET_TIMEDOUT) instead of the notifier's 8, and so it does for the x86-64 build under qemu-x86_64 (1 of 2); passes natively with and without memfd backing: a timing-dependent report, not diagnosed yet"
  "readme_code_blocks_run|readme|the README's Python blocks need an aarch64 Python with the package, and its C quick start run from an empty directory needs an aarch64 libnvrtc beside the library (the cross-built library sits in target-aarch64 with no Python environment beside it); the README check runs natively in scripts/test-all.sh"
  "fork_child_gets_clear_errors_and_its_own_device|fork|a child forked from a threaded process cannot run threads under qemu-user (x86-64 build under qemu-x86_64: qemu's assertion rcu_read_unlock in the child; under qemu-aarch64 the child's emulated-GPU thread never runs and its wait times out)"
)

# --- 0. set-up ---------------------------------------------------------------------------------
# shellcheck source=scripts/env.sh
source scripts/env.sh
as_root() { tg_as_root "$@"; }
APT_UPDATED=
apt_install() {
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} = 0 ] && return 0
  if [ -z "$APT_UPDATED" ]; then
    as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null || return 1
    APT_UPDATED=1
  fi
  echo "apt-get install ${missing[*]}"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
    -o DPkg::Lock::Timeout=600 "${missing[@]}" >"$LOGS/apt.log" 2>&1 || { tail -20 "$LOGS/apt.log"; return 1; }
}

log "0. set-up (Debian packages, binfmt_misc, aarch64 CUDA compiler wheels)"
command -v dpkg >/dev/null && command -v apt-get >/dev/null || die "needs a Debian system (dpkg, apt-get)"
[ "$(dpkg --print-architecture)" = amd64 ] || die "runs on x86-64 (amd64) Debian"
if ! dpkg --print-foreign-architectures | grep -qx arm64; then
  as_root dpkg --add-architecture arm64 || die "dpkg --add-architecture arm64 failed"
  APT_UPDATED=
fi
apt_install rustc-web cargo-web rust-web-clippy libstd-rust-web-dev:arm64 \
  gcc-aarch64-linux-gnu g++-aarch64-linux-gnu libc6-dev-arm64-cross libc6:arm64 \
  libasan8:arm64 qemu-user qemu-user-static binfmt-support || die "installing the packages failed"

# Debian's Rust: /usr/bin/{cargo,rustc}, whatever comes first on PATH (rustup's, in CI).
RUSTC_V="$(/usr/bin/rustc --version | awk '{print $2}')"
STD_V="$(dpkg-query -W -f='${Version}' libstd-rust-web-dev:arm64 | sed 's/+.*//')"
[ "$RUSTC_V" = "$STD_V" ] || die "rustc $RUSTC_V (rustc-web) and libstd-rust-web-dev:arm64 $STD_V differ"
ls /usr/lib/rustlib/$TRIPLE/lib/libstd-*.rlib >/dev/null 2>&1 || die "no aarch64 std in /usr/lib/rustlib/$TRIPLE"
export PATH="/usr/bin:$PATH"
export RUSTC=/usr/bin/rustc RUSTDOC=/usr/bin/rustdoc
unset RUSTUP_TOOLCHAIN RUSTC_WRAPPER RUSTC_WORKSPACE_WRAPPER CARGO_BUILD_TARGET
export CARGO_TARGET_DIR="${TEGRAGPU_AARCH64_TARGET_DIR:-$ROOT/target-aarch64}"
export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER=aarch64-linux-gnu-gcc
# Build scripts and proc macros stay x86-64 (and `cc` may point at the cross compiler below).
export CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_LINKER=x86_64-linux-gnu-gcc
export CC_aarch64_unknown_linux_gnu=aarch64-linux-gnu-gcc CXX_aarch64_unknown_linux_gnu=aarch64-linux-gnu-g++
export CARGO_TERM_COLOR=never
echo "rust: $(/usr/bin/cargo --version), $(/usr/bin/rustc --version); qemu: $(qemu-aarch64 --version | head -n1)"

# binfmt_misc: aarch64 ELF files run through qemu-aarch64-static (flags F: the interpreter is
# opened at registration, so it also works in other mount namespaces).
BINFMT=/proc/sys/fs/binfmt_misc
if [ ! -e "$BINFMT/status" ]; then
  as_root mount -t binfmt_misc binfmt_misc "$BINFMT" || die "cannot mount binfmt_misc on $BINFMT"
fi
if ! head -n1 "$BINFMT/qemu-aarch64" 2>/dev/null | grep -qx enabled; then
  as_root update-binfmts --enable qemu-aarch64 >/dev/null 2>&1 || true
fi
if ! head -n1 "$BINFMT/qemu-aarch64" 2>/dev/null | grep -qx enabled; then
  # The entry update-binfmts would write (qemu-user-static's), written by hand.
  printf '%s' ':qemu-aarch64:M::\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\xb7\x00:\xff\xff\xff\xff\xff\xff\xff\x00\xff\xff\xff\xff\xff\xff\xff\xff\xfe\xff\xff\xff:/usr/bin/qemu-aarch64-static:F' \
    | as_root tee "$BINFMT/register" >/dev/null || true
fi
head -n1 "$BINFMT/qemu-aarch64" 2>/dev/null | grep -qx enabled || die "the binfmt_misc entry qemu-aarch64 is not enabled"
HELLO="$(mktemp -d)"
printf '#include <stdio.h>\n#include <pthread.h>\nstatic void *t(void *a) { return a; }\nint main(void) { pthread_t x; void *r; pthread_create(&x, 0, t, "aarch64 ok"); pthread_join(x, &r); puts(r); return 0; }\n' >"$HELLO/h.c"
aarch64-linux-gnu-gcc -O1 -pthread "$HELLO/h.c" -o "$HELLO/h" || die "the cross compiler cannot build a program"
[ "$(timeout 60 "$HELLO/h")" = "aarch64 ok" ] || die "an aarch64 program does not run through binfmt_misc + qemu-aarch64"
rm -rf "$HELLO"

# meson + ninja (scripts/env.sh's venv), and the aarch64 builds of the CUDA compiler wheels
# (same pins as scripts/env.sh) in build/aarch64-py.
tg_setup minimal >"$LOGS/setup.log" 2>&1 || { cat "$LOGS/setup.log"; die "scripts/env.sh set-up failed"; }
PYDIR="$ROOT/build/aarch64-py"
PINS=("$TG_NVRTC_PIP==$TG_NVRTC_PIN" "$TG_NVJITLINK_PIP==$TG_NVJITLINK_PIN" "${TG_CUDA_HEADER_PIPS[@]}")
if [ "$(cat "$PYDIR/.pins" 2>/dev/null)" != "${PINS[*]}" ]; then
  rm -rf "$PYDIR"
  echo "pip install --platform manylinux2014_aarch64 ${PINS[*]} (into $PYDIR)"
  "$TG_VENV/bin/python" -m pip install -q --disable-pip-version-check --target "$PYDIR" \
    --platform manylinux2014_aarch64 --only-binary=:all: --no-deps "${PINS[@]}" \
    || die "pip could not fetch the aarch64 CUDA wheels"
  echo "${PINS[*]}" >"$PYDIR/.pins"
fi
export TEGRAGPU_NVRTC="$PYDIR/nvidia/cuda_nvrtc/lib/libnvrtc.so.12"
export TEGRAGPU_PTXJIT="$PYDIR/nvidia/nvjitlink/lib/libnvJitLink.so.12"
export TEGRAGPU_REQUIRE_NVRTC=1 TEGRAGPU_REQUIRE_PTXJIT=1 TEGRAGPU_REQUIRE_CUDA_HEADERS=1 TEGRAGPU_REQUIRE_CC=1
unset TEGRAGPU_LIBRARY TEGRAGPU_DEVICE

failed_stages=()
skip_lines=()
CARGO=(/usr/bin/cargo)

# --- 1. clippy for aarch64 ---------------------------------------------------------------------
if [ "${TEGRAGPU_AARCH64_SKIP_CLIPPY:-0}" = 1 ]; then
  skip_lines+=("clippy for $TRIPLE: TEGRAGPU_AARCH64_SKIP_CLIPPY=1")
else
  log "1. cargo clippy --target $TRIPLE --all-targets --release -- -D warnings"
  "${CARGO[@]}" clippy --target $TRIPLE --all-targets --release -- -D warnings 2>&1 | tee "$LOGS/clippy.log" | grep -E '^(warning|error)' | head -40
  [ "${PIPESTATUS[0]}" = 0 ] || failed_stages+=(clippy)
fi

# --- 2. cargo test under qemu ------------------------------------------------------------------
log "2. cargo test --release --target $TRIPLE (build)"
"${CARGO[@]}" test --release --target $TRIPLE --no-run 2>&1 | tee "$LOGS/cargo-build.log" | grep -E '^(warning|error)|Finished' | head -40
[ "${PIPESTATUS[0]}" = 0 ] || { failed_stages+=(cargo-build); }

skip_args=()
all_tests="$("${CARGO[@]}" test --release --target $TRIPLE -q -- --list 2>/dev/null | sed -n 's/: test$//p')"
for s in "${QEMU_SKIPS[@]}"; do
  name="${s%%|*}"; rest="${s#*|}"; bin="${rest%%|*}"; why="${rest#*|}"
  if ! grep -qx "$name" <<<"$all_tests"; then
    echo "QEMU_SKIPS names $bin::$name, which is no test (any more): fix the list"
    failed_stages+=("skip-list")
    continue
  fi
  skip_args+=(--skip "$name")
  skip_lines+=("$bin::$name: skipped under qemu-user: $why")
done

# cc / c++ for the tests that compile C (the header check, the README's C quick start): the
# cross compilers, so what they build links against the aarch64 library.
WRAP="$ROOT/build/aarch64-cc"
mkdir -p "$WRAP"
printf '#!/bin/sh\nexec aarch64-linux-gnu-gcc "$@"\n' >"$WRAP/cc"
printf '#!/bin/sh\nexec aarch64-linux-gnu-g++ "$@"\n' >"$WRAP/c++"
chmod +x "$WRAP/cc" "$WRAP/c++"

log "2. cargo test --release --target $TRIPLE (run under qemu-aarch64; ${#skip_args[@]} arguments of skips)"
PATH="$WRAP:$PATH" TEGRAGPU_EMU_MEMFD_BACKING=1 TEGRAGPU_UNDER_QEMU=1 \
  "${CARGO[@]}" test --release --target $TRIPLE --no-fail-fast -- --nocapture --exact "${skip_args[@]}" \
  >"$LOGS/cargo.log" 2>&1
cargo_rc=$?
grep -E '^\s+Running |^test result:|^test .* FAILED|^failures:|panicked at|^qemu: ' "$LOGS/cargo.log" | grep -v '^\s*$' | head -200
[ "$cargo_rc" = 0 ] || failed_stages+=(cargo)

# --- 3. meson: the C examples under qemu -------------------------------------------------------
log "3. meson cross build (scripts/meson-cross-aarch64.ini) and meson test"
MB="$ROOT/build/meson-aarch64"
# The AddressSanitizer builds (api_misuse_asan, vector_add_asan, library_copies_asan) are not
# made: under qemu-user ASan's shadow memory does not cover the buffers the emulated Orin maps at
# GPU addresses (from 0xfd00000000), and the first access to one is a SEGV in the shadow check.
# The plain builds of the three run.
for t in api_misuse_asan vector_add_asan library_copies_asan; do
  skip_lines+=("meson test $t: not built under qemu-user (-Dasan_misuse=disabled): AddressSanitizer's shadow memory does not cover the buffers mapped at GPU addresses (SEGV in the shadow check); ${t%_asan} runs")
done
MESON_OPTS=(-Dcargo_target_dir="$CARGO_TARGET_DIR" -Dasan_misuse=disabled)
{
  if [ -f "$MB/build.ninja" ]; then
    meson configure "$MB" "${MESON_OPTS[@]}"
  else
    meson setup "$MB" --cross-file scripts/meson-cross-aarch64.ini "${MESON_OPTS[@]}"
  fi && meson compile -C "$MB" && TEGRAGPU_EMU_MEMFD_BACKING=1 meson test -C "$MB" --print-errorlogs
} >"$LOGS/meson.log" 2>&1
meson_rc=$?
grep -E '^ *[0-9]+/[0-9]+ |^(Ok|Fail|Skipped|Timeout|Expected Fail|Unexpected Pass):|ERROR|error:' "$LOGS/meson.log" | head -60
[ "$meson_rc" = 0 ] || { tail -30 "$LOGS/meson.log"; failed_stages+=(meson); }

# --- summary -----------------------------------------------------------------------------------
log "summary ($(($(date +%s) - T0)) s)"
printf '%s\n' "${skip_lines[@]+"${skip_lines[@]}"}" >"$LOGS/skips.txt"
python3 - "$LOGS" "${failed_stages[@]+"${failed_stages[@]}"}" <<'PYEOF'
import os, re, sys
logs, failed_stages = sys.argv[1], sys.argv[2:]
def read(name):
    try:
        return open(os.path.join(logs, name), errors="replace").read()
    except OSError:
        return ""
p = f = s = 0
skips = [l for l in read("skips.txt").splitlines() if l.strip()]
cargo = read("cargo.log")
# Per test binary: its results, or a failure if it died before printing them.
binary = None
results = {}
for line in cargo.splitlines():
    m = re.match(r"\s+Running (?:unittests )?(\S+)", line)
    if m:
        binary = m[1]
        results.setdefault(binary, None)
        continue
    m = re.match(r"test result: \w+\. (\d+) passed; (\d+) failed; (\d+) ignored", line)
    if m and binary:
        results[binary] = tuple(int(x) for x in m.groups())
for b, r in results.items():
    if r is None:
        print(f"FAILED: {b} ended without results (crashed)")
        f += 1
    else:
        p += r[0]; f += r[1]; s += r[2]
        if r[2]:
            skips.append(f"{b}: {r[2]} test(s) #[ignore]d")
# Skips inside passing tests (their output is not captured: --nocapture): README blocks the
# README check could not run, and skip notices.
for line in cargo.splitlines():
    if re.match(r"README\.md:\d+ +\S+ +skip ", line):
        skips.append(f"readme_code_blocks_run: {line.strip()}")
    elif re.search(r"NOTICE: .*skipped|^skipped: |: skipped \(|not found: skipped", line):
        skips.append(f"skip notice: {line.strip()}")
s = len(skips) - sum(1 for x in skips if "#[ignore]d" in x) + s
meson = read("meson.log")
for key, val in re.findall(r"^(Ok|Fail|Skipped|Expected Fail|Unexpected Pass|Timeout):\s+(\d+)", meson, re.M):
    if key in ("Ok", "Expected Fail"):
        p += int(val)
    elif key == "Skipped":
        s += int(val)
        skips.append(f"meson test: {val} skipped (see {logs}/meson.log)")
    else:
        f += int(val)
for x in skips:
    print("skip: " + x)
if failed_stages:
    print("failed stages: " + ", ".join(failed_stages))
    f = max(f, len(failed_stages))
print(f"{p} passed, {f} failed, {s} skipped")
sys.exit(1 if failed_stages or f else 0)
PYEOF
