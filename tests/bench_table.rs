//! `scripts/bench-table.py` (the results table of docs/performance.md) on a device run's log:
//! the bench and C bench steps of an H200 run (`tests/fixtures/device-run/h200-bench.log`).
//! Skips when python3 is not installed.

mod common;

use std::process::Command;

fn run(log: impl AsRef<std::ffi::OsStr>) -> Option<std::process::Output> {
    Command::new("python3")
        .arg(common::repo_path("scripts/bench-table.py"))
        .arg(log)
        .output()
        .ok()
}

#[test]
fn prints_each_row_with_both_benchmarks() {
    let log = common::repo_path("tests/fixtures/device-run/h200-bench.log");
    let Some(out) = run(log) else {
        eprintln!("python3 not found: skipped");
        return;
    };
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let table = String::from_utf8(out.stdout).expect("utf-8");
    for row in [
        "| empty launch + wait, p50 (µs) | 4.253 | 9.927 | 0.428 | ≤ 0.5× | pass | 4.672 / 9.133 (0.512) | 1.10 |",
        "| launch + wait − floor, p50 (µs) | 1.457 | – | – | ≤ 1.0 µs | miss | 1.580 | 1.08 |",
        "| the same, C API / Rust (median of per-round ratios) | 1.065 | – | – | ≤ 1.1 | pass | – | – |",
        "| CPU per launch, `TG_LAUNCH_SUBMIT` (µs) | – | – | – | ≤ 0.15× | – | 0.738 / 3.784 (0.195) | – |",
        "| D2D copy 64 MiB, SM copy kernel (GB/s) | 1,980.3 | 1,774.2 | 1.116 | ≥ 0.95× | pass | 1,800.3 / 1,619.8 (1.111) | 0.91 |",
        "| D2D copy 1 GiB, copy engine (GB/s) | 94.667 | (SM kernel) | – | – | see below | 94.635 / 2,097.5 (0.045) | 1.00 |",
        "| replay of a 100-kernel chain: CPU per replay (µs) | 0.536 | 2.414 (`cuGraphLaunch`) | 0.222 | ≤ 0.1× | miss | 0.522 / 2.103 (0.248) | 0.97 |",
        "| alloc + free 256 MiB, p50 (µs) | 347.906 | 288.676 | 1.205 | ≤ 1× | miss | 203.755 / 246.089 (0.828) | 0.59 |",
    ] {
        assert!(table.lines().any(|l| l == row), "missing row {row}\n{table}");
    }
    // A header, its rule and one line per row of the script's list.
    assert_eq!(table.lines().count(), 2 + 26, "{table}");
}

#[test]
fn refuses_a_log_without_the_bench_steps() {
    let dir = std::env::temp_dir().join(format!("bench-table-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let log = dir.join("run.log");
    std::fs::write(&log, "=== info\nsomething\n=== c:bench\n").expect("write log");
    let Some(out) = run(&log) else {
        eprintln!("python3 not found: skipped");
        return;
    };
    let _ = std::fs::remove_dir_all(&dir);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no '=== bench' step"), "{err}");
}
