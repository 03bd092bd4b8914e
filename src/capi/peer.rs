//! Peer access between two devices (`tg_device_can_access_peer`,
//! `tg_device_enable_peer_access`; like `cuDeviceCanAccessPeer` and `cuCtxEnablePeerAccess`).

use super::boundary::{device, fill_c_string, out_ptr, run};
use super::{tg_device, tg_status};
use std::ffi::c_char;

/// Whether `dev` can read and write the memory of `peer` once peer access is enabled
/// (`tg_device_enable_peer_access()`): two GPUs of the desktop driver joined by NVLink or by a
/// PCIe path the driver allows peer transfers over.
///
/// - `out_can_access`: receives the answer.
/// - `reason`: NULL, or a buffer of `reason_size` bytes that receives a NUL-terminated
///   explanation (truncated to fit): why not, naming both GPUs and what the driver reported;
///   or, when it can, the link (`"peer access over NVLink (atomics supported)"`).
///
/// A device is not its own peer (`false`). On Jetson Orin (nvgpu, one GPU) and the emulated
/// Orin the answer is always `false`.
///
/// Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_NULL_POINTER` (`out_can_access` NULL);
/// `TG_ERROR_OS` (the driver refused the query). Thread safety: any thread.
///
/// # Safety
/// `out_can_access` is NULL or writable; `reason` is NULL or writable for `reason_size` bytes.
#[no_mangle]
pub unsafe extern "C" fn tg_device_can_access_peer(
    dev: *const tg_device,
    peer: *const tg_device,
    out_can_access: *mut bool,
    reason: *mut c_char,
    reason_size: usize,
) -> tg_status {
    run("tg_device_can_access_peer", || {
        let d = device(dev, "dev")?;
        let p = device(peer, "peer")?;
        let out = out_ptr(out_can_access, "out_can_access")?;
        let info = d.peer_info(&p)?;
        if !reason.is_null() && reason_size > 0 {
            // SAFETY: the caller provides `reason_size` writable bytes at `reason`.
            let buf = std::slice::from_raw_parts_mut(reason, reason_size);
            let text = if info.can_access {
                info.summary()
            } else {
                info.reason.clone()
            };
            fill_c_string(buf, &text);
        }
        out.write(info.can_access);
        Ok(())
    })
}

/// Let `dev`'s queues and kernels read and write `peer`'s memory: every buffer of `peer`, those
/// allocated later included, is mapped into `dev`'s GPU at its own address
/// (`tg_buf_gpu_address()`). Afterwards `tg_queue_copy()` on a queue of `dev` accepts buffers of
/// `peer` (the copy runs on `dev`'s engine), and kernels on `dev` may take `peer`'s buffer
/// addresses. Access is one-way: enable `peer` → `dev` too for copies on `peer`'s queues.
/// Enabling an enabled pair does nothing; access lasts as long as both devices.
///
/// A buffer of `peer` that is freed while queued work of `dev` may still use it is released
/// once that work is done, as for the device's own queues.
///
/// Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_INVALID_ARGUMENT` (`dev` and `peer`
/// are the same device); `TG_ERROR_NOT_SUPPORTED` (no peer path between the two GPUs, or a
/// backend without peer access such as nvgpu: the message names both GPUs and the reason, as
/// `tg_device_can_access_peer()` gives it); `TG_ERROR_OS` (a driver call failed: the message
/// names it and the driver's status); `TG_ERROR_DEVICE_FAULT`. Thread safety: any thread.
///
/// # Safety
/// None beyond the handle contract.
#[no_mangle]
pub unsafe extern "C" fn tg_device_enable_peer_access(
    dev: *const tg_device,
    peer: *const tg_device,
) -> tg_status {
    run("tg_device_enable_peer_access", || {
        let d = device(dev, "dev")?;
        let p = device(peer, "peer")?;
        d.enable_peer_access(&p)
    })
}
