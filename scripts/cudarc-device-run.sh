#!/usr/bin/env bash
# cudarc's own unit tests on the device machine (x86_64, NVIDIA driver, CUDA 13 toolkit for
# libnvrtc, cuBLAS, cuBLASLt and cuRAND), once on NVIDIA's libcuda and once on ours, test by test:
#   - each test binary in .device/cudarc/ (built here by scripts/cudarc-build.sh) runs under the
#     libtest harness (--test-threads=1, plain output; `timeout -k 5 120` per run) with a
#     directory holding libcuda.so and libcuda.so.1 first on LD_LIBRARY_PATH (cudarc opens
#     "libcuda.so" before "libcuda.so.1"): links to NVIDIA's library, then to ours;
#   - a test whose process crashed or timed out gets that as its result, and the tests after it
#     run in a new process; tests the crate marks #[ignore] ("must be executed by itself", "with
#     multiple gpus") run each in a process of its own (--include-ignored --exact NAME);
#   - prints a table (test, NVIDIA, ours) and the summary line
#     `cudarc: N tests; NVIDIA passed P1; ours passed P2; passed on NVIDIA but failed on ours: F (names)`.
# Needs: .device/cudarc/ (scripts/cudarc-build.sh), .device/lib/cuda/libcuda.so.1
# (scripts/device-build.sh).
#
#   OUT=/some/dir bash scripts/cudarc-device-run.sh
#
# Output ($OUT, default build/cudarc-run): <binary>.<nvidia|ours>.<n>.out / .err (the harness's
# output and stderr of each process), results.tsv (test, NVIDIA, ours), table.txt (the table and
# the summary), unimplemented.txt (the functions ours logged as not implemented). Exit status 0
# when both runs completed (test failures are reported, not fatal), 2 when something is missing.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
OUT="${OUT:-$ROOT/build/cudarc-run}"
mkdir -p "$OUT"
D="$ROOT/.device"
OURS="${CF_LIBCUDA:-$D/lib/cuda/libcuda.so.1}"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/cudarc-run.XXXXXX")"
CUDA_HOME="${CUDA_HOME:-/usr/local/cuda}"
TIMEOUT="${CUDARC_TIMEOUT:-120}"

[ -f "$OURS" ] || { echo "no $OURS (run scripts/device-build.sh)"; exit 2; }
ls "$D"/cudarc/cudarc-* >/dev/null 2>&1 || { echo "no test binaries in $D/cudarc (run scripts/cudarc-build.sh)"; exit 2; }
NVIDIA="${CF_NVIDIA_LIBCUDA:-}"
if [ -z "$NVIDIA" ]; then
  NVIDIA="$(ldconfig -p 2>/dev/null | awk '/libcuda\.so\.1 .*x86-64/ {print $NF; exit}')"
fi
[ -n "$NVIDIA" ] && [ -f "$NVIDIA" ] || NVIDIA="$(ls /usr/lib/x86_64-linux-gnu/libcuda.so.1 /usr/lib64/libcuda.so.1 2>/dev/null | head -n1)"
[ -f "$NVIDIA" ] || { echo "NVIDIA's libcuda.so.1 not found (set CF_NVIDIA_LIBCUDA)"; exit 2; }
NVIDIA="$(readlink -f "$NVIDIA")"
OURS="$(readlink -f "$OURS")"
for lib in nvidia ours; do
  mkdir -p "$WORK/$lib"
  target="$NVIDIA"; [ "$lib" = ours ] && target="$OURS"
  ln -sf "$target" "$WORK/$lib/libcuda.so.1"
  ln -sf "$target" "$WORK/$lib/libcuda.so"
done
# libnvrtc.so.13, libcublas.so.13, ... of the toolkit (cudarc opens them by name).
TK=""
for d in "$CUDA_HOME/lib64" "$CUDA_HOME/targets/x86_64-linux/lib"; do [ -d "$d" ] && TK="$TK:$d"; done
[ -f "$D/cudarc/BUILD.txt" ] && head -n 2 "$D/cudarc/BUILD.txt"
echo "NVIDIA's libcuda: $NVIDIA"
echo "ours:             $OURS"

# run_tests BIN LIB TAG ARGS...: one harness process; appends "name<TAB>result" to $WORK/res.
# Returns the harness's exit status (124/137: timed out).
run_tests() {
  local bin="$1" lib="$2" tag="$3"
  shift 3
  local base="$OUT/$(basename "$bin").$lib.$tag"
  (export LD_LIBRARY_PATH="$WORK/$lib$TK${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
   unset TEGRAGPU_DEVICE
   export TEGRAGPU_LOG="${TEGRAGPU_LOG:-warn}" RUST_BACKTRACE=0
   timeout -k 5 "$TIMEOUT" "$bin" --test-threads=1 --format pretty --color never "$@") \
    >"$base.out" 2>"$base.err"
  local r=$?
  sed -nE 's/^test ([^ ]+)( - should panic)? \.\.\. (ok|FAILED|ignored).*$/\1\t\3/p' "$base.out" >>"$WORK/res"
  return $r
}

# run_all BIN LIB: every test of BIN on LIB; results in $WORK/results.BIN.LIB (name<TAB>result).
run_all() {
  local bin="$1" lib="$2" n=0 r name
  local all="$WORK/list" ign="$WORK/ignored"
  "$bin" --list 2>/dev/null | sed -n 's/: test$//p' >"$all"
  "$bin" --list --ignored 2>/dev/null | sed -n 's/: test$//p' >"$ign"
  : >"$WORK/res"
  # The tests that are not ignored, in one process while none crashes (libtest runs them in
  # name order with one thread; --list gives the same order).
  grep -vxF -f "$ign" "$all" >"$WORK/todo" || true
  while [ -s "$WORK/todo" ]; do
    n=$((n + 1))
    mapfile -t todo <"$WORK/todo"
    run_tests "$bin" "$lib" "$n" --exact "${todo[@]}"
    r=$?
    cut -f1 "$WORK/res" | sort -u >"$WORK/done"
    grep -vxF -f "$WORK/done" "$WORK/todo" >"$WORK/rest" || true
    [ -s "$WORK/rest" ] || break
    # The first test without a result is the one the process ended in.
    name="$(head -n1 "$WORK/rest")"
    if [ $r = 124 ] || [ $r = 137 ]; then
      printf '%s\ttimeout\n' "$name" >>"$WORK/res"
    else
      printf '%s\tcrash(%s)\n' "$name" "$r" >>"$WORK/res"
    fi
    tail -n +2 "$WORK/rest" >"$WORK/todo"
  done
  # Ignored tests: each in a process of its own.
  while read -r name; do
    [ -n "$name" ] || continue
    n=$((n + 1))
    run_tests "$bin" "$lib" "$n" --include-ignored --exact "$name"
    r=$?
    if ! cut -f1 "$WORK/res" | grep -qxF "$name"; then
      if [ $r = 124 ] || [ $r = 137 ]; then printf '%s\ttimeout\n' "$name" >>"$WORK/res"
      else printf '%s\tcrash(%s)\n' "$name" "$r" >>"$WORK/res"; fi
    fi
  done <"$ign"
  sort -u -t$'\t' -k1,1 "$WORK/res" >"$WORK/results.$(basename "$bin").$lib"
}

for bin in "$D"/cudarc/cudarc-*; do
  [ -x "$bin" ] || continue
  for lib in nvidia ours; do
    echo "running $(basename "$bin") on $lib"
    run_all "$bin" "$lib"
  done
  # Which libcuda the tests opened (a check that the library path chose the intended one).
  for lib in nvidia ours; do
    (export LD_LIBRARY_PATH="$WORK/$lib$TK"; unset TEGRAGPU_DEVICE
     LD_DEBUG=files timeout -k 5 60 "$bin" --test-threads=1 --exact \
       driver::safe::core::tests::test_transmutes) 2>&1 >/dev/null \
      | grep -oE 'file=/[^ ]*libcuda[^ ]*' | sort -u | sed "s/^/$lib: opened /"
  done
done

python3 - "$WORK" "$OUT" <<'PYEOF'
import glob, os, re, sys
work, out = sys.argv[1], sys.argv[2]
rows = {}
for path in sorted(glob.glob(os.path.join(work, "results.*"))):
    binname, lib = os.path.basename(path)[len("results."):].rsplit(".", 1)
    for line in open(path):
        name, _, res = line.rstrip("\n").partition("\t")
        rows.setdefault((binname, name), {})[lib] = res
names = sorted(rows)
w = max([len(n) for _, n in names] + [4])
lines = [f"{'test':<{w}}  {'NVIDIA':<10}  ours", f"{'-' * w}  {'-' * 10}  {'-' * 10}"]
p1 = p2 = 0
regress = []
for key in names:
    r = rows[key]
    a, b = r.get("nvidia", "missing"), r.get("ours", "missing")
    lines.append(f"{key[1]:<{w}}  {a:<10}  {b}")
    p1 += a == "ok"
    p2 += b == "ok"
    if a == "ok" and b != "ok":
        regress.append(key[1])
summary = (f"cudarc: {len(names)} tests; NVIDIA passed {p1}; ours passed {p2}; "
           f"passed on NVIDIA but failed on ours: {len(regress)}"
           + (f" ({', '.join(regress)})" if regress else ""))
lines.append("")
lines.append(summary)
with open(os.path.join(out, "table.txt"), "w") as f:
    f.write("\n".join(lines) + "\n")
with open(os.path.join(out, "results.tsv"), "w") as f:
    f.write("test\tnvidia\tours\n")
    for key in names:
        r = rows[key]
        f.write(f"{key[1]}\t{r.get('nvidia', 'missing')}\t{r.get('ours', 'missing')}\n")
# The functions ours logged as not implemented (TEGRAGPU_LOG=warn).
un = set()
for p in glob.glob(os.path.join(out, "*.ours.*.err")):
    un.update(re.findall(r"(cu\w+) is not implemented by this libcuda", open(p, errors="replace").read()))
with open(os.path.join(out, "unimplemented.txt"), "w") as f:
    f.write("".join(n + "\n" for n in sorted(un)))
print("\n".join(lines))
print("not implemented by ours, called: " + (" ".join(sorted(un)) or "none"))
PYEOF
r=$?
rm -rf "$WORK"
exit $r
