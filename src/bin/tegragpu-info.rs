//! `tegragpu-info`: prints what the nvgpu driver reports about the GPU.
//!
//! Usage: `tegragpu-info [--abi] [emu|nvgpu|rm]` (see `USAGE`). The device: the argument, else
//! `TEGRAGPU_DEVICE`, else the GPU of this machine (nvgpu, then RM), else the emulated Orin; the
//! first output line says which backend was opened and why. Errors are one line;
//! `TEGRAGPU_LOG=debug` adds the details and the bring-up steps on stderr.
//! `--abi` prints every ioctl request number and argument-struct size the library uses
//! (`NAME 0x%08x` / `struct NAME SIZE`).

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
                 sm_87/sm_90/sm_100, copies, fault reporting) and write a report for bug
                 reports: device, L4T release, kernel, driver, the bring-up system calls and
                 each check with PASS/FAIL and its time; exit status 1 if a check failed
  --report FILE  where --selftest writes its report (default tegragpu-selftest.txt)
  --help, -h     this text
  --version, -V  the library version

TEGRAGPU_LOG=debug prints the bring-up steps, TEGRAGPU_LOG=trace every ioctl, to stderr.
";

fn main() -> ExitCode {
    let mut spec: Option<String> = None;
    let mut abi = false;
    let mut selftest = false;
    let mut report_path: Option<String> = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--selftest" => selftest = true,
            "--report" => match args.next() {
                Some(p) if !p.is_empty() => report_path = Some(p),
                _ => {
                    eprintln!("tegragpu-info: --report needs a file name\n\n{USAGE}");
                    return ExitCode::from(2);
                }
            },
            "--help" | "-h" => {
                emit(USAGE);
                return ExitCode::SUCCESS;
            }
            "--version" | "-V" => {
                emit(&format!("tegragpu-info {}\n", env!("CARGO_PKG_VERSION")));
                return ExitCode::SUCCESS;
            }
            "--abi" => abi = true,
            s if is_device_spec(s) && spec.is_none() => spec = Some(s.to_string()),
            s if !s.starts_with('-') && spec.is_none() => {
                eprintln!(
                    "tegragpu-info: unknown device \"{s}\"; valid devices: {}",
                    specs_list()
                );
                return ExitCode::from(2);
            }
            other => {
                eprintln!("tegragpu-info: unexpected argument \"{other}\"\n\n{USAGE}");
                return ExitCode::from(2);
            }
        }
    }
    if abi {
        emit(&abi_text());
        return ExitCode::SUCCESS;
    }
    tegragpu::log::init();
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
    let dev = match RmBackend::open_ordinal(Arc::new(LinuxSys), choice.index) {
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
    let _ = writeln!(o, "compute class:   {:#x}", i.compute_class);
    let _ = writeln!(o, "copy class:      {:#x}", i.copy_class);
    let _ = writeln!(o, "gpfifo class:    {:#x}", i.gpfifo_class);
    let _ = writeln!(o, "VA bits:         {}", i.va_bits);
    let _ = writeln!(o, "memory:          {} MiB", i.memory_bytes >> 20);
    let _ = writeln!(o, "unified VA:      {}", i.unified_addresses);
    emit(&o);
    ExitCode::SUCCESS
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
    let report = tegragpu::selftest::run(Some(&spec), &embedded_cubin);
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

/// The current UTC time as `YYYY-MM-DD HH:MM:SS UTC`.
fn utc_now() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02} UTC",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}
