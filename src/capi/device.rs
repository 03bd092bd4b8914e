//! `tg_device_*`: opening, describing, synchronizing and closing a device, and its fault report.
//! (Device-wide limits are in `limits.rs`.)

use super::boundary::{
    c_str, check_out_struct_size, device, fill_c_string, out_ptr, register, run,
};
use super::handles::{self, Kind, Object};
use super::{tg_backend, tg_device, tg_device_info, tg_device_listing, tg_fault_report, tg_status};
use crate::core::{Device, DeviceAttribute};
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

/// Read an optional spec argument (NULL or "" = the default, as `tg_device_open()` takes it).
///
/// # Safety
/// `spec` is NULL or a NUL-terminated string.
unsafe fn spec_arg<'a>(spec: *const c_char) -> crate::error::Result<Option<&'a str>> {
    if spec.is_null() {
        Ok(None)
    } else {
        c_str(spec, "spec").map(Some)
    }
}

/// Count the GPUs `tg_device_list()` lists, without opening any.
///
/// - `spec`: NULL or `""` = the GPUs a program that names no device can use: the one
///   `TEGRAGPU_DEVICE` names when it is set (`"rm"`: every GPU of the desktop driver; `"rm:N"`:
///   only its N-th, none if there is no N-th; `"nvgpu"`, `"emu"`: one), else the GPUs of this
///   machine (the Jetson's GPU, else every GPU of the desktop driver, else none: `*out` = 0).
///   A spec lists what it names, as `tg_device_open()` would open it.
/// - `out`: receives the count.
///
/// Returns `TG_OK`; `TG_ERROR_NULL_POINTER` (`out`); `TG_ERROR_INVALID_ARGUMENT` (unknown spec,
/// from the argument or `TEGRAGPU_DEVICE`); `TG_ERROR_OS` / `TG_ERROR_UNSUPPORTED_DRIVER` (the
/// driver refused the query). Thread safety: any thread.
///
/// # Safety
/// `spec` is NULL or a NUL-terminated string; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tg_device_count(spec: *const c_char, out: *mut u32) -> tg_status {
    run("tg_device_count", || {
        let out = out_ptr(out, "out")?;
        let n = crate::core::list_devices_for(spec_arg(spec)?)?.len() as u32;
        out.write_unaligned(n);
        Ok(())
    })
}

/// List the GPUs without opening them (no channel, no memory; on the desktop driver not even
/// the GPUs' device nodes), in the order of `"rm:N"`: `out[i].spec` opens the i-th.
///
/// - `spec`: which GPUs, as for `tg_device_count()`.
/// - `out`, `capacity`: caller-allocated array of `capacity` elements; set
///   `out[0].struct_size = sizeof(tg_device_listing)`. The first `min(capacity, count)`
///   elements are written. `out` may be NULL when `capacity` is 0 (to ask for the count).
/// - `count`: receives how many GPUs there are (may exceed `capacity`).
///
/// Returns `TG_OK`; `TG_ERROR_NULL_POINTER` (`count`, or `out` with a `capacity`);
/// `TG_ERROR_INVALID_ARGUMENT` (`struct_size` too small, unknown spec); `TG_ERROR_OS` /
/// `TG_ERROR_UNSUPPORTED_DRIVER`. Thread safety: any thread.
///
/// # Safety
/// `spec` is NULL or a NUL-terminated string; `out` is NULL or points to `capacity` writable
/// elements of `out[0].struct_size` bytes each; `count` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tg_device_list(
    spec: *const c_char,
    out: *mut tg_device_listing,
    capacity: u32,
    count: *mut u32,
) -> tg_status {
    run("tg_device_list", || {
        let count = out_ptr(count, "count")?;
        let stride = if capacity > 0 {
            let first = out_ptr(out, "out")?;
            check_out_struct_size(first, "out[0]", "tg_device_listing")?;
            std::ptr::read_unaligned(first as *const u32) as usize
        } else {
            0
        };
        let list = crate::core::list_devices_for(spec_arg(spec)?)?;
        for (i, l) in list.iter().take(capacity as usize).enumerate() {
            let mut e = tg_device_listing {
                struct_size: std::mem::size_of::<tg_device_listing>() as u32,
                name: [0; 64],
                uuid: l.uuid,
                pci_bus_id: [0; 32],
                backend: match l.backend {
                    crate::core::BackendKind::Nvgpu => tg_backend::TG_BACKEND_NVGPU,
                    crate::core::BackendKind::Rm => tg_backend::TG_BACKEND_RM,
                },
                emulated: l.emulated,
                spec: [0; 32],
            };
            fill_c_string(&mut e.name, &l.name);
            fill_c_string(&mut e.pci_bus_id, &l.pci_bus_id);
            fill_c_string(&mut e.spec, &l.spec);
            // Elements are `out[0].struct_size` bytes apart (a larger struct from a newer
            // header keeps its tail).
            let dst = (out as *mut u8).add(i * stride) as *mut tg_device_listing;
            dst.write_unaligned(e);
        }
        count.write_unaligned(list.len() as u32);
        Ok(())
    })
}

/// Read one attribute of a device (`TG_DEVICE_ATTR_*`, like `cuDeviceGetAttribute`).
///
/// Values come from the kernel driver where it reports them, from values NVIDIA's driver
/// reports for the GPU's PCI id (the H200), from the architecture, and from the limits the
/// library itself enforces. An attribute none of these knows for the device (for example the
/// memory clock of a Jetson) is `TG_ERROR_NOT_SUPPORTED`, never a guess. The first call may ask
/// the driver; later calls read a cache.
///
/// Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_NULL_POINTER` (`value`);
/// `TG_ERROR_INVALID_ARGUMENT` (unknown attribute); `TG_ERROR_NOT_SUPPORTED`. Thread safety:
/// any thread.
///
/// # Safety
/// `value` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tg_device_get_attribute(
    dev: *const tg_device,
    attr: u32,
    value: *mut i64,
) -> tg_status {
    run("tg_device_get_attribute", || {
        let d = device(dev, "dev")?;
        let value = out_ptr(value, "value")?;
        let a = DeviceAttribute::from_u32(attr).ok_or_else(|| {
            Error::invalid(format!(
                "attr {attr} is not a TG_DEVICE_ATTR_* value (1..={})",
                DeviceAttribute::ALL.len()
            ))
        })?;
        value.write_unaligned(d.attribute(a)?);
        Ok(())
    })
}

/// Free and total bytes of the memory the device's buffers come from, now (like
/// `cuMemGetInfo`). Jetson Orin: nvmap's IOVMM heap, which is the system memory the CPU shares
/// (the emulated Orin: `TEGRAGPU_EMU_MEMORY_BYTES`, less what its buffers hold); desktop GPUs:
/// the video memory heap.
///
/// Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_NULL_POINTER` (`free_bytes` or
/// `total_bytes`); `TG_ERROR_OS`; `TG_ERROR_NOT_SUPPORTED`. Thread safety: any thread.
///
/// # Safety
/// `free_bytes` and `total_bytes` are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tg_device_memory_info(
    dev: *const tg_device,
    free_bytes: *mut u64,
    total_bytes: *mut u64,
) -> tg_status {
    run("tg_device_memory_info", || {
        let d = device(dev, "dev")?;
        let free_bytes = out_ptr(free_bytes, "free_bytes")?;
        let total_bytes = out_ptr(total_bytes, "total_bytes")?;
        let (free, total) = d.memory_info()?;
        free_bytes.write_unaligned(free);
        total_bytes.write_unaligned(total);
        Ok(())
    })
}
