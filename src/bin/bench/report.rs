//! The output of tegragpu-bench: the table, or with `--json` one JSON object (layout in
//! `super::cli::USAGE`).

use super::cli::Opts;
use super::Row;

/// A figure as `--json` gives it: rounded to 4 decimals, `None` (JSON `null`) for NaN and
/// infinities, which JSON has no numbers for.
fn json_num(x: f64) -> Option<f64> {
    x.is_finite().then(|| (x * 1e4).round() / 1e4)
}

/// The `--json` output (its layout is in `USAGE`): one object with the device, the
/// configuration and the rows, keys in that order.
#[derive(serde::Serialize)]
struct JsonReport<'a> {
    device: JsonDevice<'a>,
    config: JsonConfig,
    rows: Vec<JsonRow>,
}

#[derive(serde::Serialize)]
struct JsonDevice<'a> {
    spec: Option<&'a str>,
    name: &'a str,
    sm: String,
    sm_count: u32,
    emulated: bool,
    backend: String,
    driver: &'a str,
}

#[derive(serde::Serialize)]
struct JsonConfig {
    quick: bool,
    libcuda: bool,
    version: &'static str,
}

#[derive(serde::Serialize)]
struct JsonRow {
    name: &'static str,
    unit: &'static str,
    ours: Option<f64>,
    libcuda: Option<f64>,
    ratio: Option<f64>,
    target: Option<&'static str>,
    pass: Option<bool>,
}

pub fn json_report(
    o: &Opts,
    info: &tegragpu::backend::DeviceInfo,
    libcuda: bool,
    rows: &[Row],
) -> String {
    let report = JsonReport {
        device: JsonDevice {
            spec: o.device.as_deref(),
            name: &info.name,
            sm: format!("sm_{}{}", info.sm_major, info.sm_minor),
            sm_count: info.sm_count,
            emulated: info.emulated,
            backend: format!("{:?}", info.backend),
            driver: &info.driver_version,
        },
        config: JsonConfig {
            quick: o.quick,
            libcuda,
            version: env!("CARGO_PKG_VERSION"),
        },
        rows: rows
            .iter()
            .map(|r| JsonRow {
                name: r.name,
                unit: r.unit,
                ours: json_num(r.ours),
                libcuda: r.cuda.and_then(json_num),
                ratio: r.cuda.and_then(|c| json_num(r.ours / c)),
                target: r.target.map(|t| t.0),
                pass: pass(r),
            })
            .collect(),
    };
    // Strings, numbers and plain structs only: serialising cannot fail.
    serde_json::to_string_pretty(&report).expect("the --json report serialises")
}

pub fn print_rows(rows: &[Row]) {
    println!(
        "{:<46} {:>12} {:>12} {:>8} {:>12} {:>6}",
        "benchmark", "tegragpu", "libcuda", "ratio", "target", "result"
    );
    for r in rows {
        let c = r.cuda.map(|c| format!("{c:.3}")).unwrap_or("-".into());
        let ratio = r
            .cuda
            .map(|c| format!("{:.3}", r.ours / c))
            .unwrap_or("-".into());
        let res = match pass(r) {
            Some(true) => "pass",
            Some(false) => "MISS",
            None => "-",
        };
        println!(
            "{:<46} {:>12} {:>12} {:>8} {:>12} {:>6}",
            format!("{} [{}]", r.name, r.unit),
            format!("{:.3}", r.ours),
            c,
            ratio,
            r.target.map(|t| t.0).unwrap_or("-"),
            res
        );
    }
    if rows
        .iter()
        .any(|r| r.name.starts_with("D2D copy") && r.cuda.is_some())
    {
        println!(
            "libcuda's D2D column is cuMemcpyDtoD, which runs a kernel on the SMs on desktop GPUs \
             (it has no copy-engine D2D path there; see docs/performance.md)"
        );
    }
    for n in super::take_notes() {
        println!("{n}");
    }
}

fn pass(r: &Row) -> Option<bool> {
    let (_, lim) = r.target?;
    let ratio = if r.absolute { r.ours } else { r.ours / r.cuda? };
    Some(if r.lower_is_better {
        ratio <= lim
    } else {
        ratio >= lim
    })
}
