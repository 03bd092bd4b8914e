//! tegragpu-bench: launch latency, submission cost, copy bandwidth and allocation cost of
//! libtegragpu, side by side with libcuda (loaded at run time with libloading) when present;
//! with two GPUs of the desktop driver, peer copies between them (`bench/peer.rs`).
//!
//! Usage: tegragpu-bench [--device SPEC] [--json] [--quick] [--no-cuda] [--peer-only] [--cuda-facade PATH] [--record-only N [--replay] [--capi [--owned]]]
//! (see `USAGE`; parsed with lexopt).
//!
//! `--record-only N` records and submits N empty-kernel launches and exits (used by
//! scripts/bench-instructions.sh to count instructions per launch under callgrind); with
//! `--capi` it makes them through the C API.
//!
//! The parts, in `bench/`: `cli.rs` (the command line), `ours.rs` (the rows), `record_only.rs`
//! (`--record-only`), `report.rs` (the table and `--json`), `capi.rs` (the C API side),
//! `replay.rs` (command replay), `peer.rs` (peer copies), `cuda.rs` (libcuda, loaded at run time),
//! `facade.rs` (`--cuda-facade`: libtegragpu's libcuda.so.1 against NVIDIA's).

use tegragpu::core::Device;

#[path = "bench/capi.rs"]
mod capi;
#[path = "bench/cli.rs"]
mod cli;
#[path = "bench/cuda.rs"]
mod cuda;
#[path = "bench/facade.rs"]
mod facade;
#[path = "bench/ours.rs"]
mod ours;
#[path = "bench/peer.rs"]
mod peer;
#[path = "bench/peer_matrix.rs"]
mod peer_matrix;
#[path = "bench/record_only.rs"]
mod record_only;
#[path = "bench/replay.rs"]
mod replay;
#[path = "bench/report.rs"]
mod report;

const CUBIN_SM87: &[u8] = include_bytes!("../../tests/fixtures/cubin/kernels.sm_87.cubin");
const CUBIN_SM90: &[u8] = include_bytes!("../../tests/fixtures/cubin/kernels.sm_90.cubin");

fn percentile(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
    if v.is_empty() {
        return f64::NAN;
    }
    let i = ((v.len() - 1) as f64 * p).round() as usize;
    v[i.min(v.len() - 1)]
}

/// One table row: value in `unit`; `better` = "lower" or "higher"; target as a factor of libcuda.
struct Row {
    name: &'static str,
    unit: &'static str,
    ours: f64,
    cuda: Option<f64>,
    target: Option<(&'static str, f64)>, // (description, ratio limit: ours/cuda <= limit (lower) or >= (higher))
    lower_is_better: bool,
    /// The target applies to `ours` itself (a µs budget or a ratio between two of our own
    /// figures), not to `ours / cuda`.
    absolute: bool,
}

fn cubin_for(dev: &Device) -> &'static [u8] {
    if dev.info().sm_major >= 9 {
        CUBIN_SM90
    } else {
        CUBIN_SM87
    }
}

const TO: u64 = 10_000_000_000;

/// Lines printed under the table (on stderr with `--json`): what ran the rows.
static NOTES: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

/// Add a line under the table.
fn note(line: String) {
    NOTES.lock().unwrap_or_else(|e| e.into_inner()).push(line);
}

fn take_notes() -> Vec<String> {
    std::mem::take(&mut *NOTES.lock().unwrap_or_else(|e| e.into_inner()))
}

fn main() {
    let mut o = match cli::parse_args() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("tegragpu-bench: {e}");
            std::process::exit(2)
        }
    };
    if let Some(n) = o.record_only {
        if let Err(e) = record_only::run(&o, n) {
            eprintln!("tegragpu-bench: {e}");
            std::process::exit(1)
        }
        return;
    }
    if let Some(path) = o.cuda_facade.clone() {
        match facade::run(&path, o.quick, o.cuda) {
            Ok(rows) => report::print_rows(&rows),
            Err(e) => {
                eprintln!("tegragpu-bench: {e}");
                std::process::exit(1)
            }
        }
        return;
    }
    o.device = cli::device_or_emulator(o.device.take());
    if o.peer_only {
        match peer_matrix::run(o.device.as_deref(), o.quick, o.cuda) {
            Ok(rows) => report::print_rows(&rows),
            Err(e) => {
                eprintln!("tegragpu-bench: {e}");
                std::process::exit(1)
            }
        }
        return;
    }
    let mut cuda = if o.cuda && o.device.as_deref() != Some("emu") {
        cuda::Cuda::load()
    } else {
        None
    };
    eprintln!(
        "libcuda: {}",
        if cuda.is_some() {
            "loaded, measured in the same run"
        } else {
            "not present (our numbers only)"
        }
    );
    let mut rows = Vec::new();
    let info = match ours::bench_ours(&o, &mut rows, &mut cuda) {
        Ok(i) => i,
        Err(e) => {
            eprintln!("tegragpu-bench: {e}");
            std::process::exit(1)
        }
    };
    if o.json {
        println!("{}", report::json_report(&o, &info, cuda.is_some(), &rows));
        for n in take_notes() {
            eprintln!("note: {n}");
        }
    } else {
        report::print_rows(&rows);
    }
}
