//! `tegragpu-bench` as a user runs it, in quick mode: `--json` prints one JSON object (the
//! device, the configuration, the rows) as `--help` says, and with no device named on a machine
//! without an NVIDIA GPU it benchmarks the emulated Orin after a notice, as `tegragpu-info` does.

use serde_json::Value;
use std::process::{Command, Output};

const BENCH: &str = env!("CARGO_BIN_EXE_tegragpu-bench");

fn bench(args: &[&str]) -> Output {
    Command::new(BENCH)
        .args(args)
        .env_remove("TEGRAGPU_DEVICE")
        .output()
        .expect("tegragpu-bench runs")
}

/// This machine has an NVIDIA GPU node (Jetson or desktop driver).
fn has_gpu() -> bool {
    ["/dev/nvgpu/igpu0/ctrl", "/dev/nvidiactl"]
        .iter()
        .any(|p| std::path::Path::new(p).exists())
}

/// stdout parsed as exactly one JSON object with the keys `--help` lists.
fn report(out: &Output) -> Value {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(0),
        "stdout:\n{stdout}\nstderr:\n{stderr}"
    );
    let v: Value = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("stdout is not one JSON value ({e}):\n{stdout}"));
    let o = v.as_object().expect("one JSON object");
    let mut keys: Vec<&str> = o.keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(keys, ["config", "device", "rows"], "{stdout}");
    for k in [
        "spec", "name", "sm", "sm_count", "emulated", "backend", "driver",
    ] {
        assert!(v["device"].get(k).is_some(), "device.{k} missing: {stdout}");
    }
    assert_eq!(v["config"]["quick"], Value::Bool(true), "{stdout}");
    assert!(v["config"]["libcuda"].is_boolean(), "{stdout}");
    assert_eq!(
        v["config"]["version"],
        env!("CARGO_PKG_VERSION"),
        "{stdout}"
    );
    let rows = v["rows"].as_array().expect("rows is an array");
    assert!(rows.len() >= 10, "{} rows: {stdout}", rows.len());
    for r in rows {
        let mut keys: Vec<&str> = r.as_object().unwrap().keys().map(String::as_str).collect();
        keys.sort_unstable();
        assert_eq!(
            keys,
            ["libcuda", "name", "ours", "pass", "ratio", "target", "unit"],
            "{r}"
        );
        assert!(r["name"].is_string() && r["unit"].is_string(), "{r}");
        assert!(r["ours"].is_number() || r["ours"].is_null(), "{r}");
    }
    assert!(
        rows.iter().any(|r| r["name"] == "empty launch + wait, p50"),
        "{stdout}"
    );
    v
}

#[test]
fn json_is_one_object_with_the_device_the_config_and_the_rows() {
    let out = bench(&["--device", "emu", "--quick", "--json"]);
    let v = report(&out);
    assert_eq!(v["device"]["spec"], "emu");
    assert_eq!(v["device"]["emulated"], Value::Bool(true));
    assert_eq!(v["device"]["sm"], "sm_87");
    assert_eq!(v["config"]["libcuda"], Value::Bool(false), "never on emu");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !stderr.contains("falling back") && !stderr.contains("fallback"),
        "{stderr}"
    );
}

#[test]
fn no_device_and_no_gpu_falls_back_to_the_emulated_orin() {
    if has_gpu() {
        eprintln!("NOTICE: skipped: this machine has an NVIDIA GPU node");
        return;
    }
    let out = bench(&["--quick", "--json", "--no-cuda"]);
    let v = report(&out);
    assert_eq!(v["device"]["spec"], "emu");
    assert_eq!(v["device"]["emulated"], Value::Bool(true));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr
            .starts_with("tegragpu-bench: fallback to the emulator: no NVIDIA GPU found (neither ")
            && stderr.contains("benchmarking the emulated Orin (\"emu\")"),
        "{stderr}"
    );
    // The table too (exit 0, rows on stdout).
    let out = bench(&["--quick", "--no-cuda"]);
    assert_eq!(out.status.code(), Some(0));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.starts_with("benchmark "), "{stdout}");
}

/// `--peer-only` on the emulated Orin runs the peer-copy matrix with A and B the same device
/// (a check of the bench itself): every candidate prints a line with both sizes and checked
/// data, the engine choices the emulator cannot make are refused with the reason, and the
/// summary names the fastest.
#[test]
fn peer_only_on_the_emulated_orin_checks_every_candidate() {
    let out = bench(&["--device", "emu", "--peer-only", "--quick", "--no-cuda"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(0),
        "stdout:\n{stdout}\nstderr:\n{stderr}"
    );
    let lines: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("peer matrix | "))
        .collect();
    assert!(lines.len() >= 20, "{stdout}");
    let measured: Vec<&&str> = lines.iter().filter(|l| l.contains("GB/s")).collect();
    for l in &measured {
        assert!(l.contains("| data ok |"), "{l}");
        assert!(l.contains("1 MiB") && l.contains("4 MiB"), "{l}");
        assert!(l.contains("ran on: "), "{l}");
    }
    for want in [
        "write A->B",
        "read B->A",
        "local A->A",
        "both ways",
        "pipelined",
        "multi-line",
        "4 queues",
        "SM: tg_copy, 4 x 8 SMs blocks",
    ] {
        assert!(
            measured.iter().any(|l| l.contains(want)),
            "no measured line with {want:?}:\n{stdout}"
        );
    }
    assert!(
        lines.iter().any(|l| l.contains("GRCE")
            && l.contains("refused: ")
            && l.contains("cannot be chosen")),
        "{stdout}"
    );
    assert!(
        stdout.contains("peer matrix: fastest write #1: "),
        "{stdout}"
    );
    assert!(
        !stdout.contains("FAILED") && !stdout.contains("WRONG"),
        "{stdout}"
    );
}

/// `--peer-only` names what it needs where the device cannot take part.
#[test]
fn peer_only_needs_a_device() {
    let out = bench(&["--device", "nosuch", "--peer-only"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.starts_with("tegragpu-bench: "), "{stderr}");
}

/// The libcuda.so.1 of the workspace's `cuda/` crate (`cargo test --workspace` builds it):
/// `$TEGRAGPU_CUDA_LIB`, else next to this test's executable's directory; `None` when this
/// build has none (a build of the root package alone, as the aarch64 run under qemu makes).
fn facade_path() -> Option<std::path::PathBuf> {
    if let Some(p) = std::env::var_os("TEGRAGPU_CUDA_LIB").filter(|v| !v.is_empty()) {
        return Some(p.into());
    }
    let exe = std::env::current_exe().expect("the test's path");
    let dir = exe
        .parent()
        .and_then(|d| d.parent())
        .expect("target/<profile>");
    let p = dir.join("libcuda.so");
    p.exists().then_some(p)
}

/// `--cuda-facade` on the emulated Orin: the facade's four rows (launch + sync, CPU per launch,
/// a 100-node graph's CPU and wall time) with figures, no libcuda column (NVIDIA's is not
/// loaded with `--no-cuda`), and the graph's counter checked (a wrong count exits 1).
#[test]
fn cuda_facade_rows_on_the_emulated_orin() {
    let Some(lib) = facade_path() else {
        eprintln!(
            "NOTICE: cuda_facade_rows_on_the_emulated_orin skipped: this build has no libcuda.so (build the workspace's cuda crate: cargo build --release -p tegragpu-cuda)"
        );
        return;
    };
    let out = Command::new(BENCH)
        .args([
            "--cuda-facade",
            lib.to_str().unwrap(),
            "--quick",
            "--no-cuda",
        ])
        .env("TEGRAGPU_DEVICE", "emu")
        .output()
        .expect("tegragpu-bench runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    for name in [
        "facade: cuLaunchKernel + cuStreamSynchronize, p50 [us]",
        "facade: CPU per cuLaunchKernel [us]",
        "facade: cuGraphLaunch (100 nodes), CPU [us]",
        "facade: cuGraphLaunch (100 nodes) + sync, p50 [us]",
    ] {
        let line = stdout
            .lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("no row {name:?} in\n{stdout}"));
        let ours: f64 = line[name.len()..]
            .split_whitespace()
            .next()
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no figure in {line:?}"));
        assert!(ours.is_finite() && ours > 0.0, "{line}");
    }
}

/// `--cuda-facade` with a path that is no library: exit 1 and the path in the message.
#[test]
fn cuda_facade_names_a_bad_path() {
    let out = Command::new(BENCH)
        .args(["--cuda-facade", "/nonexistent/libcuda.so.1", "--no-cuda"])
        .env("TEGRAGPU_DEVICE", "emu")
        .output()
        .expect("tegragpu-bench runs");
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("/nonexistent/libcuda.so.1"), "{stderr}");
}
