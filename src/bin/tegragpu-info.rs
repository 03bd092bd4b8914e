//! `tegragpu-info`: prints what the nvgpu driver reports about the GPU.
//!
//! Usage: `tegragpu-info [--abi] [--selftest [--report FILE]] [emu|nvgpu|rm|rm:N]` (see
//! `USAGE`; parsed with lexopt). The device: the argument, else `TEGRAGPU_DEVICE`, else the GPU
//! of this machine (nvgpu, then RM), else the emulated Orin; the first output line says which
//! backend was opened and why. Errors are one line;
//! `TEGRAGPU_LOG=debug` adds the details and the bring-up steps on stderr.
//! `--abi` prints every ioctl request number and argument-struct size the library uses
//! (`NAME 0x%08x` / `struct NAME SIZE`).
//!
//! `--selftest-competitor MS [DEVICE]` (not in the usage text) is the other process the self-test
//! starts for its `long_kernel_with_other_process` check: it runs small kernels on the device for
//! MS milliseconds and prints what it saw (`tegragpu::selftest::run_competitor`).

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::io::Write as _;
use std::process::ExitCode;
use std::sync::Arc;

use tegragpu::backend::nvgpu::NvgpuBackend;
use tegragpu::backend::{is_device_spec, Backend, DeviceChoice, DeviceKind, NVGPU_CTRL_NODE};
use tegragpu::log::Level;
use tegragpu::os::{LinuxSys, Sys};
use tegragpu::sys::nvgpu::{nvgpu_gpu_characteristics, nvgpu_notification, ALL_REQUESTS};

/// Writes `s` to stdout; a closed pipe (`| head`) is not an error worth a panic.
fn emit(s: &str) {
    let _ = std::io::stdout().lock().write_all(s.as_bytes());
}

fn abi_text() -> String {
    let mut o = String::new();
    for e in ALL_REQUESTS {
        let _ = writeln!(o, "{} {:#010x}", e.name, e.request);
    }
    let mut structs: BTreeSet<(&str, usize)> = ALL_REQUESTS
        .iter()
        .filter(|e| !e.struct_name.is_empty() && e.struct_name != "int")
        .map(|e| (e.struct_name, e.size))
        .collect();
    structs.insert((
        "nvgpu_gpu_characteristics",
        std::mem::size_of::<nvgpu_gpu_characteristics>(),
    ));
    structs.insert((
        "nvgpu_notification",
        std::mem::size_of::<nvgpu_notification>(),
    ));
    for (name, size) in structs {
        let _ = writeln!(o, "struct {name} {size}");
    }
    o
}

/// Details for `TEGRAGPU_LOG=debug` (target `tegragpu-info`).
fn debug(msg: std::fmt::Arguments<'_>) {
    if tegragpu::log::enabled(Level::Debug) {
        tegragpu::log::emit(Level::Debug, "tegragpu-info", msg);
    }
}

/// The valid device names, for messages: `emu, nvgpu, rm`.
fn specs_list() -> String {
    tegragpu::backend::device_specs_text()
}

const USAGE: &str = "usage: tegragpu-info [--abi] [--selftest [--report FILE]] [emu|nvgpu|rm|rm:N]

Prints what the kernel driver reports about the GPU.

  emu      the emulated Jetson Orin (no GPU needed)
  nvgpu    the Jetson's GPU (/dev/nvgpu/igpu0/ctrl)
  rm       the desktop NVIDIA driver's GPU (/dev/nvidiactl); rm:N the N-th GPU (from 0)
           (default: TEGRAGPU_DEVICE if set, else nvgpu, else rm, else emu;
           the argument wins over TEGRAGPU_DEVICE)
  --abi    print every ioctl request number and argument-struct size the library uses
  --selftest     run the self-test on the device (signals, waits, kernels embedded for
                 sm_87/sm_90/sm_100, copies, fault reporting; queues made and destroyed
                 during a long kernel, the queue limit, a fault on one of several queues, a
                 long kernel while another process uses the GPU) and write a report for bug
                 reports: device, L4T release, kernel, driver, the bring-up system calls and
                 each check with PASS/FAIL, its time and what it observed; exit status 1 if
                 a check failed (it takes about 10 s)
  --report FILE  where --selftest writes its report (default tegragpu-selftest.txt)
  --help, -h     this text
  --version, -V  the library version

TEGRAGPU_LOG=debug prints the bring-up steps, TEGRAGPU_LOG=trace every ioctl, to stderr.
";

/// What the command line asks for.
struct Args {
    /// The device argument (`emu`, `nvgpu`, `rm`, `rm:N`).
    spec: Option<String>,
    abi: bool,
    selftest: bool,
    report_path: Option<String>,
    /// `--selftest-competitor MS`: be the self-test's competing process for MS milliseconds.
    competitor_ms: Option<u64>,
}

/// `arg` as it was written, for messages.
fn arg_text(arg: &lexopt::Arg<'_>) -> String {
    match arg {
        lexopt::Arg::Short(c) => format!("-{c}"),
        lexopt::Arg::Long(l) => format!("--{l}"),
        lexopt::Arg::Value(v) => v.to_string_lossy().into_owned(),
    }
}

/// Parses the command line. `Err` carries the exit status once `--help` / `--version` are
/// answered (0) or a usage error is reported on stderr (2).
fn parse_args() -> Result<Args, ExitCode> {
    use lexopt::prelude::*;
    let usage_error = |msg: String| {
        eprintln!("tegragpu-info: {msg}\n\n{USAGE}");
        Err(ExitCode::from(2))
    };
    let mut a = Args {
        spec: None,
        abi: false,
        selftest: false,
        report_path: None,
        competitor_ms: None,
    };
    let mut parser = lexopt::Parser::from_env();
    loop {
        let arg = match parser.next() {
            Ok(Some(arg)) => arg,
            Ok(None) => break,
            // `--abi=1`: a value given to an option that takes none.
            Err(lexopt::Error::UnexpectedValue { option, value }) => {
                let value = value.to_string_lossy();
                return usage_error(format!("unexpected argument \"{option}={value}\""));
            }
            Err(e) => return usage_error(e.to_string()),
        };
        match arg {
            Long("selftest") => a.selftest = true,
            Long("report") => match parser.value().ok().and_then(|v| v.into_string().ok()) {
                Some(p) if !p.is_empty() => a.report_path = Some(p),
                _ => return usage_error("--report needs a file name".to_string()),
            },
            Long("help") | Short('h') => {
                emit(USAGE);
                return Err(ExitCode::SUCCESS);
            }
            Long("version") | Short('V') => {
                emit(&format!("tegragpu-info {}\n", env!("CARGO_PKG_VERSION")));
                return Err(ExitCode::SUCCESS);
            }
            Long("abi") => a.abi = true,
            Long("selftest-competitor") => {
                match parser.value().ok().and_then(|v| v.into_string().ok()) {
                    Some(v) => match v.parse::<u64>() {
                        Ok(ms) if ms <= 60_000 => a.competitor_ms = Some(ms),
                        _ => {
                            return usage_error(format!(
                                "--selftest-competitor {v:?}: expected milliseconds, at most 60000"
                            ))
                        }
                    },
                    None => return usage_error("--selftest-competitor needs milliseconds".into()),
                }
            }
            Value(ref v) if a.spec.is_none() => {
                let s = v.to_string_lossy();
                if is_device_spec(&s) {
                    a.spec = Some(s.into_owned());
                } else if !s.starts_with('-') {
                    eprintln!(
                        "tegragpu-info: unknown device \"{s}\"; valid devices: {}",
                        specs_list()
                    );
                    return Err(ExitCode::from(2));
                } else {
                    return usage_error(format!("unexpected argument \"{s}\""));
                }
            }
            other => return usage_error(format!("unexpected argument \"{}\"", arg_text(&other))),
        }
    }
    Ok(a)
}

fn main() -> ExitCode {
    let Args {
        spec,
        abi,
        selftest,
        report_path,
        competitor_ms,
    } = match parse_args() {
        Ok(a) => a,
        Err(code) => return code,
    };
    if abi {
        emit(&abi_text());
        return ExitCode::SUCCESS;
    }
    tegragpu::log::init();
    if let Some(ms) = competitor_ms {
        let ok = tegragpu::selftest::run_competitor(
            spec.as_deref().unwrap_or(""),
            &embedded_cubin,
            std::time::Duration::from_millis(ms),
            &mut |l: &str| {
                let mut o = std::io::stdout().lock();
                let _ = writeln!(o, "{l}");
                let _ = o.flush();
            },
        );
        return if ok {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        };
    }
    // The argument wins; TEGRAGPU_DEVICE picks the device only when there is none.
    let env = match spec {
        Some(_) => None,
        None => match tegragpu::core::device_from_env() {
            Ok(v) => v,
            Err(e) => {
                eprintln!(
                    "tegragpu-info: TEGRAGPU_DEVICE is not valid UTF-8; valid devices: {}",
                    specs_list()
                );
                debug(format_args!("{e}"));
                return ExitCode::FAILURE;
            }
        },
    };
    if let Some(v) = env.as_deref().filter(|v| !is_device_spec(v)) {
        eprintln!(
            "tegragpu-info: unknown device \"{}\" (from TEGRAGPU_DEVICE); valid devices: {}",
            v.escape_debug(),
            specs_list()
        );
        return ExitCode::FAILURE;
    }
    let choice = match tegragpu::backend::choose_device_or_emulator(spec.as_deref(), env.as_deref())
    {
        Ok(c) => c,
        Err(e) => {
            eprintln!("tegragpu-info: {e}");
            return ExitCode::FAILURE;
        }
    };
    debug(format_args!(
        "chose {}: {}",
        choice.kind.spec(),
        choice.reason
    ));
    if selftest {
        return run_selftest(&choice, report_path.as_deref());
    }
    if report_path.is_some() {
        eprintln!("tegragpu-info: --report goes with --selftest");
        return ExitCode::from(2);
    }
    let sys: Arc<dyn Sys> = match choice.kind {
        DeviceKind::Rm => return print_rm(&choice),
        DeviceKind::Emu => tegragpu::emu::EmuSys::new(),
        DeviceKind::Nvgpu => {
            if !std::path::Path::new(NVGPU_CTRL_NODE).exists() {
                eprintln!(
                    "tegragpu-info: device nvgpu: {NVGPU_CTRL_NODE} does not exist (not a Jetson with \
                     the nvgpu driver); use \"emu\" for the emulated Orin"
                );
                return ExitCode::FAILURE;
            }
            Arc::new(LinuxSys)
        }
    };
    let dev = match NvgpuBackend::open(sys) {
        Ok(d) => d,
        Err(e) => {
            eprintln!(
                "tegragpu-info: opening {} failed: {e}{}",
                choice.kind.spec(),
                debug_hint()
            );
            return ExitCode::FAILURE;
        }
    };
    let i = dev.info();
    let mut o = backend_line(&choice);
    let c = dev.characteristics();
    let _ = writeln!(
        o,
        "device:          {} ({})",
        i.name,
        if i.emulated { "emulated" } else { "real" }
    );
    let _ = writeln!(o, "driver:          {}", i.driver_version);
    let _ = writeln!(
        o,
        "arch:            {:#x} impl {:#x} rev {:#x}",
        c.arch, c.r#impl, c.rev
    );
    let _ = writeln!(
        o,
        "SM version:      {}.{} (sm_arch_sm_version {:#x})",
        i.sm_major, i.sm_minor, c.sm_arch_sm_version
    );
    let _ = writeln!(
        o,
        "SMs:             {} ({} per TPC, {} warps each)",
        i.sm_count, i.sm_per_tpc, i.warps_per_sm
    );
    let _ = writeln!(
        o,
        "GPCs:            {} enabled (mask {:#x}), max {}",
        c.num_gpc, c.gpc_mask, i.max_gpc_count
    );
    let _ = writeln!(o, "TPCs per GPC:    {} (max)", c.num_tpc_per_gpc);
    let _ = writeln!(o, "compute class:   {:#x}", i.compute_class);
    let _ = writeln!(o, "copy class:      {:#x}", i.copy_class);
    let _ = writeln!(o, "gpfifo class:    {:#x}", i.gpfifo_class);
    let _ = writeln!(o, "VA bits:         {}", i.va_bits);
    let _ = writeln!(o, "L2 cache:        {} KiB", c.L2_cache_size / 1024);
    let _ = writeln!(o, "memory:          {} MiB", i.memory_bytes >> 20);
    let _ = writeln!(o, "max freq:        {} MHz", c.max_freq / 1_000_000);
    let _ = writeln!(o, "flags:           {:#018x}", c.flags);
    let _ = writeln!(o, "unified VA:      {}", i.unified_addresses);
    emit(&o);
    ExitCode::SUCCESS
}

/// ` (TEGRAGPU_LOG=debug shows the steps)` unless debug logging is already on.
fn debug_hint() -> &'static str {
    if tegragpu::log::enabled(Level::Debug) {
        ""
    } else {
        " (TEGRAGPU_LOG=debug shows the steps)"
    }
}

/// `backend:         emu (...): spec "emu" from the argument` — which backend and why.
fn backend_line(choice: &DeviceChoice) -> String {
    let what = match choice.kind {
        DeviceKind::Emu => "emu (nvgpu backend over the emulated Orin kernel)",
        DeviceKind::Nvgpu => "nvgpu (Jetson nvgpu + nvmap driver)",
        DeviceKind::Rm => "rm (NVIDIA RM driver, nvidia.ko + nvidia-uvm)",
    };
    format!("backend:         {what}: {}\n", choice.reason)
}

/// The desktop driver (nvidia.ko + nvidia-uvm): print what the RM backend reports.
fn print_rm(choice: &DeviceChoice) -> ExitCode {
    use tegragpu::backend::rm::RmBackend;
    let dev = match RmBackend::open_linux(choice.index) {
        Ok(d) => d,
        Err(e) => {
            eprintln!(
                "tegragpu-info: opening the NVIDIA RM driver failed: {e}{}",
                debug_hint()
            );
            return ExitCode::FAILURE;
        }
    };
    let i = dev.info();
    let mut o = backend_line(choice);
    let _ = writeln!(o, "device:          {} (real, RM backend)", i.name);
    let _ = writeln!(o, "driver:          {}", i.driver_version);
    let _ = writeln!(o, "arch:            {:#x}", i.arch);
    let _ = writeln!(o, "SM version:      {}.{}", i.sm_major, i.sm_minor);
    let _ = writeln!(
        o,
        "SMs:             {} ({} per TPC, {} warps each)",
        i.sm_count, i.sm_per_tpc, i.warps_per_sm
    );
    let _ = writeln!(
        o,
        "GPCs (max):      {} x {} TPCs",
        i.max_gpc_count, i.max_tpc_per_gpc
    );
    let _ = match dev.facts().cluster_sm_groups {
        Some(g) => writeln!(
            o,
            "cluster groups:  {} SMs (the skyline's virtual GPCs)",
            g.iter().map(u32::to_string).collect::<Vec<_>>().join(", ")
        ),
        None => writeln!(o, "cluster groups:  not reported{}", debug_hint()),
    };
    let _ = writeln!(o, "compute class:   {:#x}", i.compute_class);
    let _ = writeln!(o, "copy class:      {:#x}", i.copy_class);
    let _ = writeln!(o, "gpfifo class:    {:#x}", i.gpfifo_class);
    let _ = writeln!(o, "VA bits:         {}", i.va_bits);
    let _ = writeln!(o, "memory:          {} MiB", i.memory_bytes >> 20);
    let _ = writeln!(o, "unified VA:      {}", i.unified_addresses);
    o.push_str(&peer_matrix(dev, choice.index));
    emit(&o);
    ExitCode::SUCCESS
}

/// With two or more GPUs: which can access which (`peer access:` table, row = the device
/// that accesses, column = the memory's GPU), then one line per pair with what the driver
/// reported and, where there is no access, why. Empty with one GPU.
fn peer_matrix(first: tegragpu::backend::rm::RmBackend, first_index: u32) -> String {
    use tegragpu::backend::rm::RmBackend;
    let mut devs: Vec<(u32, RmBackend)> = Vec::new();
    let mut first = Some(first);
    let mut o = String::new();
    for i in 0..32u32 {
        if i == first_index {
            if let Some(f) = first.take() {
                devs.push((i, f));
            }
            continue;
        }
        match RmBackend::open_linux(i) {
            Ok(d) => devs.push((i, d)),
            Err(e) if e.status == tegragpu::Status::NotFound => break,
            Err(e) => {
                let _ = writeln!(o, "rm:{i}:            not opened: {e}");
            }
        }
    }
    if devs.len() < 2 {
        return o;
    }
    let _ = writeln!(o, "GPUs:");
    for (i, d) in &devs {
        let _ = writeln!(o, "  rm:{i}  {} [{}]", d.gpu_label(), d.uvm_space_label());
    }
    let _ = writeln!(
        o,
        "peer access (row: the GPU that accesses; column: the GPU whose memory):"
    );
    let _ = write!(o, "{:>8}", "");
    for (j, _) in &devs {
        let _ = write!(o, " {:>14}", format!("rm:{j}"));
    }
    o.push('\n');
    let mut lines = Vec::new();
    for (i, a) in &devs {
        let _ = write!(o, "{:>8}", format!("rm:{i}"));
        for (j, b) in &devs {
            let cell = if i == j {
                "-".to_string()
            } else {
                match a.rm_peer_info(b) {
                    Ok(p) => {
                        lines.push(if p.can_access {
                            format!("  rm:{i} -> rm:{j}: {}; {}", p.summary(), p.detail)
                        } else {
                            format!("  rm:{i} -> rm:{j}: no peer access: {}", p.reason)
                        });
                        if p.can_access {
                            format!(
                                "{}{}",
                                p.link.name(),
                                if p.atomics { "+atomics" } else { "" }
                            )
                        } else {
                            "no".to_string()
                        }
                    }
                    Err(e) => {
                        lines.push(format!("  rm:{i} -> rm:{j}: query failed: {e}"));
                        "error".to_string()
                    }
                }
            };
            let _ = write!(o, " {cell:>14}");
        }
        o.push('\n');
    }
    for l in lines {
        o.push_str(&l);
        o.push('\n');
    }
    o
}

/// The fixture kernels (tests/fixtures/kernels.cu) for the SMs the tool carries.
fn embedded_cubin(major: u32, minor: u32) -> Option<&'static [u8]> {
    match (major, minor) {
        (8, 7) => Some(include_bytes!(
            "../../tests/fixtures/cubin/kernels.sm_87.cubin"
        )),
        (9, 0) => Some(include_bytes!(
            "../../tests/fixtures/cubin/kernels.sm_90.cubin"
        )),
        (10, 0) => Some(include_bytes!(
            "../../tests/fixtures/cubin/kernels.sm_100.cubin"
        )),
        _ => None,
    }
}

fn run_selftest(choice: &DeviceChoice, report_path: Option<&str>) -> ExitCode {
    let spec = match choice.kind {
        DeviceKind::Rm if choice.index > 0 => format!("rm:{}", choice.index),
        k => k.spec().to_string(),
    };
    emit(&format!(
        "{}\nrunning the self-test on {spec} ...\n",
        backend_line(choice).trim_end()
    ));
    // The other process of the long_kernel_with_other_process check: this program again.
    let competitor = |spec: &str, window: std::time::Duration| {
        let exe = std::env::current_exe().unwrap_or_else(|_| "tegragpu-info".into());
        let mut c = std::process::Command::new(exe);
        c.arg("--selftest-competitor")
            .arg(window.as_millis().to_string());
        if !spec.is_empty() {
            c.arg(spec);
        }
        c
    };
    let opts = tegragpu::selftest::Options {
        competitor: Some(&competitor),
    };
    let report = tegragpu::selftest::run_with(Some(&spec), &embedded_cubin, &opts);
    let mut text = report.to_text();
    text.insert_str(
        text.find('\n').map_or(0, |i| i + 1),
        &format!(
            "date               {}\nselected           {}\n",
            utc_now(),
            choice.reason
        ),
    );
    let path = report_path.unwrap_or("tegragpu-selftest.txt");
    emit(&text);
    match std::fs::write(path, &text) {
        Ok(()) => emit(&format!("report written to {path}\n")),
        Err(e) => {
            eprintln!("tegragpu-info: writing the report to {path}: {e}");
            return ExitCode::FAILURE;
        }
    }
    if report.failed() == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// The current UTC time as `YYYY-MM-DD HH:MM:SS UTC` (the epoch if the clock cannot be read).
fn utc_now() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let t = libc::time_t::try_from(secs).unwrap_or(0);
    // SAFETY: `libc::tm` is plain data (integers, and a pointer for which null is valid).
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    // SAFETY: both pointers are valid for the call; gmtime_r writes only `tm`.
    if unsafe { libc::gmtime_r(&t, &mut tm) }.is_null() {
        return "1970-01-01 00:00:00 UTC".to_string();
    }
    format!(
        "{:04}-{:02}-{:02} {:02}:{:02}:{:02} UTC",
        i64::from(tm.tm_year) + 1900,
        tm.tm_mon + 1,
        tm.tm_mday,
        tm.tm_hour,
        tm.tm_min,
        tm.tm_sec
    )
}
