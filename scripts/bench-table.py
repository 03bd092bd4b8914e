#!/usr/bin/env python3
"""The results table of docs/performance.md from one device run's log.

    python3 scripts/bench-table.py run.log > table.md

run.log is the output of `BENCH=1 scripts/device-run.sh` (its `c:bench` step: the C benchmark,
`c-examples/bench`; its `bench` step: `tegragpu-bench`). Every row of `tegragpu-bench` becomes a
table row with ours, libcuda's, the ratio, the target and the result, and beside it the C
benchmark's figure for the same row (ours / libcuda's, ratio) and the two benchmarks' ratio.
Rows either benchmark lacks are left as "–"; a log without one of the steps fails.
"""
import re
import sys

# (tegragpu-bench label prefix, C bench label prefix, table label, libcuda note)
ROWS = [
    ("empty launch + wait, p50", "empty launch + wait, p50", "empty launch + wait, p50 (µs)", ""),
    ("empty launch + wait, p99", "empty launch + wait, p99", "empty launch + wait, p99 (µs)", " (p50)"),
    ("floor: signal only + wait", "floor: signal only + wait", "floor: signal only + wait, p50 (µs)", ""),
    ("launch + wait minus floor", "launch + wait - floor", "launch + wait − floor, p50 (µs)", ""),
    ("launch + wait, p99 / p50", "launch + wait, p99 / p50", "launch + wait, p99 / p50", ""),
    ("CPU cost per launch (record+submit each)", "CPU per launch, submit each (us",
     "CPU per launch, record + submit each (µs)", ""),
    ("CPU per launch, submit each, C API [", None,
     "the same, C API (`tg_launch` + `tg_queue_submit`, owned queue) (µs)", ""),
    ("CPU per launch, submit each, C API / Rust", None,
     "the same, C API / Rust (median of per-round ratios)", ""),
    (None, "CPU per launch, TG_LAUNCH_SUBMIT (us)", "CPU per launch, `TG_LAUNCH_SUBMIT` (µs)", ""),
    ("CPU cost per launch (record, one submit)", "CPU per launch, one submit",
     "CPU per launch, record, one submit (µs)", ""),
    ("back-to-back launches", "10000 dependent launches",
     "10,000 dependent launches, wall until the last is done (ms)", ""),
    ("D2D copy 64 MiB (SM copy kernel)", "copy 64 MiB, SM copy kernel",
     "D2D copy 64 MiB, SM copy kernel (GB/s)", ""),
    ("D2D copy 1 GiB (SM copy kernel)", "copy 1 GiB, SM copy kernel",
     "D2D copy 1 GiB, SM copy kernel (GB/s)", ""),
    ("D2D copy 64 MiB (copy engine)", "copy 64 MiB, copy engine",
     "D2D copy 64 MiB, copy engine (GB/s)", "ce"),
    ("D2D copy 1 GiB (copy engine)", "copy 1 GiB, copy engine",
     "D2D copy 1 GiB, copy engine (GB/s)", "ce"),
    ("SM fill 1 GiB", None, "SM fill 1 GiB (GB/s)", ""),
    ("replay 100-kernel chain: CPU per replay", "replay 100-kernel chain: CPU per replay",
     "replay of a 100-kernel chain: CPU per replay (µs)", " (`cuGraphLaunch`)"),
    ("replay 100-kernel chain: CPU, C API [", None,
     "the same, C API (`tg_queue_replay_submit`, owned queue and command buffer) (µs)", ""),
    ("replay 100-kernel chain: CPU, C API / Rust", None,
     "the same, C API / Rust (median of per-round ratios)", ""),
    ("replay 100-kernel chain: to completion", "replay 100-kernel chain: to completion",
     "replay of a 100-kernel chain: to completion, p50 (µs)", ""),
    ("update 1 kernel argument + replay", "update one argument + replay",
     "update one kernel argument + replay: CPU, p50 (µs)", ""),
    ("update 1 argument + replay: CPU, C API", None, "the same, C API (µs)", ""),
    ("update 1 argument + replay: C API / Rust", None,
     "the same, C API / Rust (median of per-round ratios)", ""),
    ("alloc + free 256 MiB", "alloc + free 256 MiB", "alloc + free 256 MiB, p50 (µs)", ""),
    (None, "CPU per launch, submit each, shared queue", "CPU per launch, submit each, shared queue (µs)", ""),
    (None, "CPU per launch, TG_LAUNCH_SUBMIT, shared queue",
     "CPU per launch, `TG_LAUNCH_SUBMIT`, shared queue (µs)", ""),
]


def step(log, name):
    """The lines of one `=== name` step of the device run."""
    m = re.search(r"^=== " + re.escape(name) + r"\n(.*?)(?=^=== |\Z)", log, re.S | re.M)
    if not m:
        sys.exit(f"bench-table: no '=== {name}' step in the log")
    return m.group(1).splitlines()


def find(lines, prefix):
    for line in lines:
        if line.strip().startswith(prefix):
            return line.strip()
    return None


def num(s):
    return float(s.replace(",", ""))


def fmt(s):
    """A figure as the tables print it: thousands separated, one decimal from 1,000 up."""
    if s in ("-", "–"):
        return "–"
    v = num(s)
    return f"{v:,.1f}" if v >= 1000 else s


def rust_row(line):
    # "<label> [unit]  ours  cuda  ratio  target...  result"
    tail = line.split("]", 1)[1].split()
    ours, cuda, ratio = tail[0], tail[1], tail[2]
    result = tail[-1]
    target = " ".join(tail[3:-1])
    return ours, cuda, ratio, target, result


C_TAIL = re.compile(r"\s(-?[\d.,]+|-)\s+(-?[\d.,]+|-)\s+(-?[\d.,]+|-)\s+(<=.*?|>=.*?|-)\s+(\S+)$")


def c_row(line):
    # "<label> [(unit)]  ours  cuda  ratio  target  result"
    m = C_TAIL.search(line)
    if not m:
        sys.exit(f"bench-table: cannot read the C benchmark row {line!r}")
    return m.group(1), m.group(2), m.group(3), m.group(4)


TARGET = {"<=": "≤ ", ">=": "≥ "}


def target_text(t):
    t = t.replace("cuda p50", "libcuda p50")
    for a, b in TARGET.items():
        t = t.replace(a + " ", b)
    return re.sub(r"(\d)x\b", r"\1×", t).replace(" us", " µs")


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    log = open(sys.argv[1], encoding="utf-8", errors="replace").read()
    rust, cb = step(log, "bench"), step(log, "c:bench")
    print("| row | tegragpu | libcuda | ratio | target | result | C bench: tegragpu / libcuda (ratio) "
          "| C bench / tegragpu-bench |")
    print("|---|---:|---:|---:|---|---|---|---:|")
    for rp, cp, label, note in ROWS:
        r = find(rust, rp) if rp else None
        c = find(cb, cp) if cp else None
        ours = cuda = ratio = target = result = "–"
        if r:
            ours, cuda, ratio, target, result = rust_row(r)
            target = target_text(target)
            result = result.lower() if result in ("MISS", "PASS") else result
        cells = "–"
        across = "–"
        if c:
            co, cc, cr, ct = c_row(c)
            if not r and ct != "-":
                target = target_text(ct)
            cells = fmt(co) if cc == "-" else f"{fmt(co)} / {fmt(cc)} ({cr})"
            if r and ours != "-" and co != "-" and num(ours) > 0:
                across = f"{num(co) / num(ours):.2f}"
        if note == "ce":
            cuda, ratio, target, result = "(SM kernel)", "–", "–", "see below"
        elif cuda not in ("-", "–") and note:
            cuda = f"{fmt(cuda)}{note}"
        else:
            cuda = fmt(cuda)
        vals = [fmt(ours), cuda, ratio, target, result]
        vals = ["–" if v == "-" else v for v in vals]
        print(f"| {label} | " + " | ".join(vals) + f" | {cells} | {across} |")


if __name__ == "__main__":
    main()
