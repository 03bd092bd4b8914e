//! `tegragpu-info`: prints what the nvgpu driver reports about the GPU.
//!
//! Usage: `tegragpu-info [--abi] [emu|nvgpu|rm]` (see `USAGE`). The device: the argument, else
//! `TEGRAGPU_DEVICE`, else the GPU of this machine (nvgpu, then RM), else the emulated Orin.
//! `--abi` prints every ioctl request number and argument-struct size the library uses
//! (`NAME 0x%08x` / `struct NAME SIZE`).

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::io::Write as _;
use std::process::ExitCode;
use std::sync::Arc;

use tegragpu::backend::nvgpu::NvgpuBackend;
use tegragpu::backend::Backend;
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

fn emulated_sys() -> Result<Arc<dyn Sys>, String> {
    Ok(tegragpu::emu::EmuSys::new())
}

fn choose_sys(env: &str) -> Result<Arc<dyn Sys>, String> {
    let forced = env == "emu";
    if !forced && std::path::Path::new("/dev/nvgpu/igpu0/ctrl").exists() {
        Ok(Arc::new(LinuxSys))
    } else {
        emulated_sys()
    }
}

const USAGE: &str = "usage: tegragpu-info [--abi] [emu|nvgpu|rm]

Prints what the kernel driver reports about the GPU.

  emu      the emulated Jetson Orin (no GPU needed)
  nvgpu    the Jetson's GPU (/dev/nvgpu/igpu0/ctrl)
  rm       the desktop NVIDIA driver's GPU (/dev/nvidiactl)
           (default: TEGRAGPU_DEVICE if set, else nvgpu, else rm, else emu)
  --abi    print every ioctl request number and argument-struct size the library uses
  --help, -h     this text
  --version, -V  the library version
";

const SPECS: [&str; 3] = ["emu", "nvgpu", "rm"];

fn main() -> ExitCode {
    let mut spec: Option<String> = None;
    let mut abi = false;
    for a in std::env::args().skip(1) {
        match a.as_str() {
            "--help" | "-h" => {
                emit(USAGE);
                return ExitCode::SUCCESS;
            }
            "--version" | "-V" => {
                emit(&format!("tegragpu-info {}\n", env!("CARGO_PKG_VERSION")));
                return ExitCode::SUCCESS;
            }
            "--abi" => abi = true,
            s if SPECS.contains(&s) && spec.is_none() => spec = Some(s.to_string()),
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
    let env = match spec {
        Some(s) => s,
        None => match tegragpu::core::device_from_env() {
            Ok(v) => v.unwrap_or_default(),
            Err(e) => {
                eprintln!("tegragpu-info: {e}");
                return ExitCode::FAILURE;
            }
        },
    };
    if !env.is_empty() && !SPECS.contains(&env.as_str()) {
        eprintln!(
            "tegragpu-info: unknown device \"{env}\" (from TEGRAGPU_DEVICE); expected emu, nvgpu or rm"
        );
        return ExitCode::FAILURE;
    }
    if env == "nvgpu" && !std::path::Path::new("/dev/nvgpu/igpu0/ctrl").exists() {
        eprintln!(
            "tegragpu-info: device nvgpu: /dev/nvgpu/igpu0/ctrl does not exist (not a Jetson with \
             the nvgpu driver); use \"emu\" for the emulated Orin"
        );
        return ExitCode::FAILURE;
    }
    let want_rm = env == "rm"
        || (env.is_empty()
            && !std::path::Path::new("/dev/nvgpu/igpu0/ctrl").exists()
            && std::path::Path::new("/dev/nvidiactl").exists());
    if want_rm {
        return print_rm();
    }
    let sys = match choose_sys(&env) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("tegragpu-info: {e}");
            return ExitCode::FAILURE;
        }
    };
    let dev = match NvgpuBackend::open(sys) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("tegragpu-info: opening nvgpu failed: {e}");
            return ExitCode::FAILURE;
        }
    };
    let i = dev.info();
    let mut o = String::new();
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

/// The desktop driver (nvidia.ko + nvidia-uvm): print what the RM backend reports.
fn print_rm() -> ExitCode {
    use tegragpu::backend::rm::RmBackend;
    use tegragpu::backend::Backend;
    let dev = match RmBackend::open(Arc::new(LinuxSys)) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("tegragpu-info: opening the NVIDIA RM driver failed: {e}");
            return ExitCode::FAILURE;
        }
    };
    let i = dev.info();
    let mut o = String::new();
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
