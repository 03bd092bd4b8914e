//! `--record-only N`: records and submits N empty-kernel launches (or N replays of a 10-launch
//! command buffer) and exits, for instruction counts (scripts/bench-instructions.sh).

use super::cli::Opts;
use super::cubin_for;
use super::ours::{one, Ours};
use tegragpu::core::Device;

/// Runs `--record-only N` (with `o.replay`, `o.capi`, `o.owned`) and exits 0; `Err` for N out of
/// range or a failed call (`main` prints it and exits 1).
pub fn run(o: &Opts, n: u64) -> tegragpu::Result<()> {
    if n > 900 {
        return Err(tegragpu::Error::invalid(
            "--record-only N: N must be at most 900 (the rings hold them without waiting)",
        ));
    }
    if o.replay && n > 400 {
        return Err(tegragpu::Error::invalid(
            "--record-only N --replay: N must be at most 400 (two ring entries each)",
        ));
    }
    if o.capi {
        record_only_capi(o.device.as_deref().unwrap_or("emu"), n, o.owned, o.replay)?;
        std::process::exit(0)
    }
    let mut ours = Ours::new(o.device.as_deref().or(Some("emu")))?;
    if o.replay {
        let mut cb = ours.dev.create_cmdbuf()?;
        for _ in 0..10 {
            cb.launch(&ours.empty, &one(), &[])?;
        }
        cb.finish()?;
        for _ in 0..n {
            ours.q.replay(&mut cb)?;
            ours.q.submit()?;
        }
        std::process::exit(0)
    }
    for _ in 0..n {
        ours.q.launch(&ours.empty, &one(), &[])?;
        ours.q.submit()?;
    }
    // Exit without waiting: the count must not include polling for the GPU.
    std::process::exit(0)
}

/// `--record-only N --capi`: the same launches through the C API (`tg_launch`,
/// `tg_queue_submit`), as a C program makes them.
fn record_only_capi(spec: &str, n: u64, owned: bool, replay: bool) -> tegragpu::Result<()> {
    use tegragpu::capi::*;
    use tegragpu::Status;
    let check = |what: &str, s: tg_status| -> tegragpu::Result<()> {
        if s == tg_status::TG_OK {
            Ok(())
        } else {
            Err(tegragpu::Error::new(
                Status::Internal,
                format!("{what} failed: {s:?}"),
            ))
        }
    };
    let spec = std::ffi::CString::new(spec)
        .map_err(|_| tegragpu::Error::invalid("--device: contains NUL"))?;
    let (mut dev, mut m, mut k, mut q) = (
        std::ptr::null_mut(),
        std::ptr::null_mut(),
        std::ptr::null_mut(),
        std::ptr::null_mut(),
    );
    // SAFETY: every pointer passed is valid for the call; handles come from the calls before.
    unsafe {
        // The cubin for the device's SM (the Rust device is closed before the C one opens).
        let cubin = cubin_for(&Device::open(Some(spec.to_str().unwrap_or("emu")))?);
        check("tg_device_open", tg_device_open(spec.as_ptr(), &mut dev))?;
        check(
            "tg_module_load",
            tg_module_load(dev, cubin.as_ptr().cast(), cubin.len(), &mut m),
        )?;
        check(
            "tg_module_get_kernel",
            tg_module_get_kernel(m, c"empty_kernel".as_ptr(), &mut k),
        )?;
        if owned {
            check(
                "tg_queue_create_owned",
                tg_queue_create_owned(dev, tg_queue_kind_arg(0), 0, &mut q),
            )?;
        } else {
            check(
                "tg_queue_create",
                tg_queue_create(dev, tg_queue_kind_arg(0), &mut q),
            )?;
        }
        let cfg = tg_launch_config {
            struct_size: std::mem::size_of::<tg_launch_config>() as u32,
            grid: [1, 1, 1],
            block: [32, 1, 1],
            dynamic_shared_bytes: 0,
            flags: 0,
            cluster: [0; 3],
        };
        if replay {
            let mut cb = std::ptr::null_mut();
            if owned {
                check(
                    "tg_cmdbuf_create_owned",
                    tg_cmdbuf_create_owned(dev, &mut cb),
                )?;
            } else {
                check("tg_cmdbuf_create", tg_cmdbuf_create(dev, &mut cb))?;
            }
            for _ in 0..10 {
                check(
                    "tg_cmdbuf_launch",
                    tg_cmdbuf_launch(cb, k, &cfg, std::ptr::null(), 0, std::ptr::null_mut()),
                )?;
            }
            check("tg_cmdbuf_finish", tg_cmdbuf_finish(cb))?;
            for _ in 0..n {
                check("tg_queue_replay_submit", tg_queue_replay_submit(q, cb))?;
            }
            return Ok(());
        }
        for _ in 0..n {
            check("tg_launch", tg_launch(q, k, &cfg, std::ptr::null(), 0))?;
            check("tg_queue_submit", tg_queue_submit(q))?;
        }
    }
    Ok(())
}
