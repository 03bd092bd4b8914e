#!/usr/bin/env bash
# CPU cost of recording + submitting one launch on the emulated Orin, in instructions, counted by
# callgrind (repeatable: independent of machine load). Runs tegragpu-bench --record-only with two
# launch counts and divides the difference, so setup and teardown cancel out. The emulated GPU's
# thread is excluded (callgrind counts per thread; we take the main thread's total).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v valgrind >/dev/null || { echo "valgrind not installed (apt-get install valgrind)"; exit 1; }
cargo build --release --bin tegragpu-bench >/dev/null 2>&1
bin=target/release/tegragpu-bench
tmp=$(mktemp -d)
count() { # N -> instructions of the main thread
  # The emulator duplicates mappings with mremap(old_size 0), which valgrind refuses: keep
  # buffer pages in memfds instead.
  TEGRAGPU_EMU_MEMFD_BACKING=1 valgrind --tool=callgrind --separate-threads=yes --callgrind-out-file="$tmp/cg.$1" "$bin" --record-only "$1" >/dev/null 2>&1
  # Thread 1 is the main thread.
  grep -h '^summary:' "$tmp/cg.$1-01" 2>/dev/null | awk '{print $2}' || grep -h '^summary:' "$tmp"/cg."$1"* | head -1 | awk '{print $2}'
}
a=$(count 100); b=$(count 900)
if [ -z "$a" ] || [ -z "$b" ] || [ "$a" = "$b" ]; then
  echo "instruction count unavailable: the bench did not run under valgrind (100 launches: ${a:-?}, 900: ${b:-?})"
  exit 1
fi
per=$(( (b - a) / 800 ))
echo "instructions per recorded+submitted launch (emulated Orin, main thread): $per"
echo "  (100 launches: $a instructions, 900 launches: $b; no waiting: all fit in the rings)"
rm -rf "$tmp"
