//! `tg_device_*`: opening, describing, synchronizing and closing a device, and its fault report.
//! (Device-wide limits are in `limits.rs`.)

use super::boundary::{
    c_str, check_out_struct_size, device, fill_c_string, out_ptr, register, run,
};
use super::handles::{self, Kind, Object};
use super::{tg_backend, tg_device, tg_device_info, tg_fault_report, tg_status};
use crate::core::Device;
use crate::error::{Error, Status};
use std::ffi::c_char;

/// Open a device.
///
/// - `spec`: `"emu"` = the emulated Orin (no hardware needed), `"nvgpu"` (Jetson Orin), `"rm"`
///   (desktop NVIDIA driver, its first GPU), `"rm:N"` (its N-th GPU, from 0, in the order
///   `nvidia-smi` lists them; `TG_ERROR_NOT_FOUND` when there is no such GPU). NULL or `""` = the default device: the one the environment
///   variable `TEGRAGPU_DEVICE` names when it is set and non-empty, else the GPU found on this
///   machine (nvgpu on Jetson Orin, else the desktop NVIDIA driver). An explicit spec always
///   wins: `TEGRAGPU_DEVICE` only picks the device for callers that name none.
/// - `out`: receives the new device handle on success.
///
/// At log level info, one message says which backend was opened and why (see
/// `tg_set_log_callback()`).
///
/// Returns `TG_OK`; `TG_ERROR_NULL_POINTER` (`out` NULL); `TG_ERROR_INVALID_ARGUMENT` (unknown
/// spec, or, for a NULL spec, `TEGRAGPU_DEVICE` set to an unknown spec or to a value that is not
/// valid UTF-8: the message lists the valid specs); `TG_ERROR_NOT_FOUND` (no spec and no NVIDIA
/// GPU on this machine, or no N-th GPU for `"rm:N"`); `TG_ERROR_OS` / `TG_ERROR_UNSUPPORTED_DRIVER` (driver refused);
/// `TG_ERROR_NOT_SUPPORTED`.
///
/// Ownership: the caller owns `*out` and releases it with `tg_device_close()`.
/// Thread safety: any thread.
///
/// # Safety
/// `spec` is NULL or a NUL-terminated string; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tg_device_open(
    spec: *const c_char,
    out: *mut *mut tg_device,
) -> tg_status {
    run("tg_device_open", || {
        let out = out_ptr(out, "out")?;
        let spec = if spec.is_null() {
            None
        } else {
            Some(c_str(spec, "spec")?)
        };
        let dev = Device::open(spec)?;
        let h = register(Object::Device(dev))?;
        out.write(h as *mut tg_device);
        Ok(())
    })
}

/// A C handle for a device opened through the Rust API, so that one program can measure the C
/// API beside the Rust API on the same device (`tegragpu-bench`). Not part of the C API: the
/// header does not declare it. Release the handle with `tg_device_close`.
#[doc(hidden)]
pub fn device_handle(dev: &Device) -> crate::error::Result<*mut tg_device> {
    Ok(register(Object::Device(dev.clone()))? as *mut tg_device)
}

/// Close a device handle. Objects created from it stay valid and keep the device open until
/// they are destroyed; the device's resources are released with the last of them.
/// NULL is a no-op (`TG_OK`).
///
/// Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE` (destroyed or not a device).
/// Thread safety: any thread; the handle must not be used after this call.
///
/// # Safety
/// None beyond the handle contract (any value is checked).
#[no_mangle]
pub unsafe extern "C" fn tg_device_close(dev: *mut tg_device) -> tg_status {
    run("tg_device_close", || {
        handles::remove(dev as usize, Kind::Device, "dev").map(|_| ())
    })
}

/// Describe a device.
///
/// - `out`: caller-allocated; set `out->struct_size = sizeof(tg_device_info)` first.
///
/// Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_NULL_POINTER` (`out` NULL);
/// `TG_ERROR_INVALID_ARGUMENT` (`struct_size` too small). Thread safety: any thread.
///
/// # Safety
/// `out` is NULL or points to a writable `tg_device_info`.
#[no_mangle]
pub unsafe extern "C" fn tg_device_get_info(
    dev: *const tg_device,
    out: *mut tg_device_info,
) -> tg_status {
    run("tg_device_get_info", || {
        let d = device(dev, "dev")?;
        let out = out_ptr(out, "out")?;
        check_out_struct_size(out, "out", "tg_device_info")?;
        let i = d.info();
        let mut info = tg_device_info {
            struct_size: std::mem::size_of::<tg_device_info>() as u32,
            name: [0; 64],
            arch: i.arch,
            sm_major: i.sm_major,
            sm_minor: i.sm_minor,
            sm_count: i.sm_count,
            memory_bytes: i.memory_bytes,
            va_bits: i.va_bits,
            backend: match i.backend {
                crate::core::BackendKind::Nvgpu => tg_backend::TG_BACKEND_NVGPU,
                crate::core::BackendKind::Rm => tg_backend::TG_BACKEND_RM,
            },
            emulated: i.emulated,
        };
        fill_c_string(&mut info.name, &i.name);
        out.write_unaligned(info);
        Ok(())
    })
}

/// Submit what is recorded on the device's queues, wait until all work submitted on every queue
/// of the device has completed, then print what kernels wrote with device-side `printf` to
/// `stdout` (docs/cuda-support.md), as `cuCtxSynchronize` after `cuLaunchKernel` does.
///
/// Which queues it submits: every shared queue (once its lock is free within 200 ms; a queue
/// whose lock another thread holds longer is waited for as submitted so far), and the owned
/// queues of the calling thread. An owned queue of another thread is waited for as submitted
/// so far: its owner submits it.
///
/// - `timeout_ns`: deadline in nanoseconds (`TG_TIMEOUT_INFINITE` = none).
///
/// Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_TIMEOUT`; `TG_ERROR_DEVICE_FAULT` (the
/// device faulted: see `tg_device_get_fault()`). Thread safety: any thread.
///
/// # Safety
/// None beyond the handle contract.
#[no_mangle]
pub unsafe extern "C" fn tg_device_synchronize(
    dev: *const tg_device,
    timeout_ns: u64,
) -> tg_status {
    run("tg_device_synchronize", || {
        device(dev, "dev")?.synchronize(timeout_ns)
    })
}

/// Report the device's sticky fault, if it has faulted.
///
/// - `out`: caller-allocated; set `out->struct_size = sizeof(tg_fault_report)` first.
///
/// Returns `TG_OK` (fault written to `*out`); `TG_ERROR_NOT_FOUND` (the device has not faulted;
/// `*out` untouched); `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_NULL_POINTER`;
/// `TG_ERROR_INVALID_ARGUMENT` (`struct_size` too small). Thread safety: any thread.
///
/// # Safety
/// `out` is NULL or points to a writable `tg_fault_report`.
#[no_mangle]
pub unsafe extern "C" fn tg_device_get_fault(
    dev: *const tg_device,
    out: *mut tg_fault_report,
) -> tg_status {
    run("tg_device_get_fault", || {
        let d = device(dev, "dev")?;
        let out = out_ptr(out, "out")?;
        check_out_struct_size(out, "out", "tg_fault_report")?;
        let f = d
            .fault_report()
            .ok_or_else(|| Error::new(Status::NotFound, "the device has not faulted"))?;
        let mut r = tg_fault_report {
            struct_size: std::mem::size_of::<tg_fault_report>() as u32,
            code: f.code,
            has_address: f.address.is_some(),
            address: f.address.unwrap_or(0),
            message: [0; 256],
        };
        fill_c_string(&mut r.message, &f.what);
        out.write_unaligned(r);
        Ok(())
    })
}
