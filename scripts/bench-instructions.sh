#!/usr/bin/env bash
# CPU cost of recording + submitting one launch on the emulated Orin, through the Rust API and
# through the C API, in instructions, counted by callgrind (repeatable: independent of machine load). Runs tegragpu-bench --record-only with two
# launch counts and divides the difference, so setup and teardown cancel out. The emulated GPU's
# thread is excluded (callgrind counts per thread; we take the main thread's total).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v valgrind >/dev/null || { echo "valgrind not installed (apt-get install valgrind)"; exit 1; }
cargo build --release --bin tegragpu-bench >/dev/null 2>&1
bin=target/release/tegragpu-bench
tmp=$(mktemp -d)
count() { # N [options] -> instructions of the main thread
  # The emulator duplicates mappings with mremap(old_size 0), which valgrind refuses: keep
  # buffer pages in memfds instead.
  local out="$tmp/cg.$1${2:-}"
  out="${out// /_}"
  TEGRAGPU_EMU_MEMFD_BACKING=1 valgrind --tool=callgrind --separate-threads=yes --callgrind-out-file="$out" "$bin" --record-only "$1" ${2:-} >/dev/null 2>&1
  # Thread 1 is the main thread.
  grep -h '^summary:' "$out-01" 2>/dev/null | awk '{print $2}' || grep -h '^summary:' "$out"* | head -1 | awk '{print $2}'
}
per_launch() { # label [--capi]
  local a b
  a=$(count 100 "${2:-}"); b=$(count 900 "${2:-}")
  if [ -z "$a" ] || [ -z "$b" ] || [ "$a" = "$b" ]; then
    echo "instruction count unavailable ($1): the bench did not run under valgrind (100 launches: ${a:-?}, 900: ${b:-?})"
    return 1
  fi
  echo "instructions per recorded+submitted launch, $1 (emulated Orin, main thread): $(( (b - a) / 800 ))"
  echo "  (100 launches: $a instructions, 900 launches: $b; no waiting: all fit in the rings)"
}
per_replay() { # label [options]: replays of a 10-launch command buffer, each submitted
  local a b
  a=$(count 100 "--replay ${2:-}"); b=$(count 300 "--replay ${2:-}")
  if [ -z "$a" ] || [ -z "$b" ] || [ "$a" = "$b" ]; then
    echo "instruction count unavailable ($1)"
    return 1
  fi
  echo "instructions per replay + submit, $1 (emulated Orin, main thread): $(( (b - a) / 200 ))"
}
per_launch "Rust API (Queue::launch + submit)"
per_launch "C API (tg_launch + tg_queue_submit)" --capi
per_launch "C API, owned queue (tg_queue_create_owned)" "--capi --owned"
per_replay "Rust API (Queue::replay + submit)"
per_replay "C API, owned queue and command buffer (tg_queue_replay_submit)" "--capi --owned"
rm -rf "$tmp"
