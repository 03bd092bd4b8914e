//! `tg_signal_*`: 64-bit timeline signals the GPU and the CPU write, read and wait for.

use super::boundary::{buffer, device, out_ptr, register, run, signal};
use super::handles::{self, Kind, Object};
use super::{tg_buf, tg_device, tg_signal, tg_status};
use std::sync::Arc;

/// Create a timeline signal with value `initial`.
///
/// Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_NULL_POINTER`;
/// `TG_ERROR_OUT_OF_MEMORY`.
///
/// Ownership: the caller owns `*out` and releases it with `tg_signal_destroy()`.
/// Thread safety: any thread.
///
/// # Safety
/// `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tg_signal_create(
    dev: *const tg_device,
    initial: u64,
    out: *mut *mut tg_signal,
) -> tg_status {
    run("tg_signal_create", || {
        let d = device(dev, "dev")?;
        let out = out_ptr(out, "out")?;
        let s = d.create_signal(initial)?;
        let h = register(Object::Signal(Arc::new(s)))?;
        out.write(h as *mut tg_signal);
        Ok(())
    })
}

/// Create a signal whose value lives in a buffer: the little-endian 64-bit word at `offset` of
/// `buf`. Use it to order work with another driver or process that shares the buffer
/// (`tg_buf_export_fd()`, `tg_buf_import_fd()`): the other side writes the word to release
/// waits of this library (`tg_queue_wait()`, `tg_signal_wait()`) and waits for the word to
/// reach the values this library releases (`tg_queue_signal()`), e.g. with CUDA's
/// `cuStreamWriteValue64()` / `cuStreamWaitValue64(..., CU_STREAM_WAIT_VALUE_GEQ)`. Waits
/// compare unsigned 64-bit, "value ≥ target", on both sides.
///
/// - `offset`: a multiple of 16, with `offset + 16` inside the buffer: a GPU release of this
///   library writes the value at `offset` and its GPU timestamp at `offset + 8`
///   (`tg_signal_timestamp()`), so keep other data out of those 16 bytes.
/// - The buffer's memory is not written: the signal's value is whatever the word holds
///   (zero it before sharing, e.g. allocate with `TG_BUF_ZEROED`; or `tg_signal_set()`).
/// - The signal needs the buffer's CPU mapping (made here on first use, as
///   `tg_buf_cpu_ptr()`); CPU reads of desktop video memory are slow, so prefer waits on the
///   GPU, or a host-memory buffer for values the CPU polls.
///
/// Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_NULL_POINTER`;
/// `TG_ERROR_INVALID_ARGUMENT` (`offset` not a multiple of 16, or outside the buffer);
/// `TG_ERROR_NOT_SUPPORTED` or `TG_ERROR_OS` (the buffer cannot be mapped for the CPU).
///
/// Ownership: the caller owns `*out` and releases it with `tg_signal_destroy()`. The signal
/// keeps the buffer's memory alive (`tg_buf_free()` of the buffer is allowed meanwhile).
/// Thread safety: any thread.
///
/// # Safety
/// `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tg_signal_create_in_buffer(
    buf: *const tg_buf,
    offset: u64,
    out: *mut *mut tg_signal,
) -> tg_status {
    run("tg_signal_create_in_buffer", || {
        let b = buffer(buf, "buf")?;
        let out = out_ptr(out, "out")?;
        let s = crate::core::Signal::in_buffer(b, offset)?;
        let h = register(Object::Signal(Arc::new(s)))?;
        out.write(h as *mut tg_signal);
        Ok(())
    })
}

/// Destroy a signal. Its memory is reused only after work already submitted can no longer write
/// it. NULL is a no-op.
///
/// Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`. Thread safety: any thread; the handle must not be
/// used after this call.
///
/// # Safety
/// None beyond the handle contract.
#[no_mangle]
pub unsafe extern "C" fn tg_signal_destroy(signal: *mut tg_signal) -> tg_status {
    run("tg_signal_destroy", || {
        handles::remove(signal as usize, Kind::Signal, "signal").map(|_| ())
    })
}

/// Read the signal's current value.
///
/// Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_NULL_POINTER`.
/// Thread safety: any thread.
///
/// # Safety
/// `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tg_signal_value(signal: *const tg_signal, out: *mut u64) -> tg_status {
    run("tg_signal_value", || {
        let s = self::signal(signal, "signal")?;
        let out = out_ptr(out, "out")?;
        out.write_unaligned(s.value());
        Ok(())
    })
}

/// Read the GPU timestamp written with the signal's last GPU release (`tg_queue_signal()`): the
/// GPU's nanosecond timer at the moment the work recorded before that release was complete.
/// 0 until the GPU first releases the signal; `tg_signal_set()` does not change it.
///
/// Use it to time GPU work: record `tg_queue_signal(q, start, v)`, the launches, then
/// `tg_queue_signal(q, end, v)`; after `tg_signal_wait(end, v, ...)` the difference of the two
/// timestamps is the GPU time of the launches in nanoseconds (including the wait for earlier work
/// on the queue to finish before `start` was released). Timestamps of one device compare with
/// each other, not with CPU clocks. Read it after waiting for the value you care about: a later
/// release overwrites it.
///
/// Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_NULL_POINTER`.
/// Thread safety: any thread.
///
/// # Safety
/// `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tg_signal_timestamp(signal: *const tg_signal, out: *mut u64) -> tg_status {
    run("tg_signal_timestamp", || {
        let s = self::signal(signal, "signal")?;
        let out = out_ptr(out, "out")?;
        out.write_unaligned(s.timestamp());
        Ok(())
    })
}

/// Set the signal's value from the CPU: releases every GPU (`tg_queue_wait()`) and CPU
/// (`tg_signal_wait()`) wait for a value ≤ `value`. Setting a lower value than before does not
/// undo waits that already passed.
///
/// Signal values compare as unsigned 64-bit integers, on the GPU (`tg_queue_wait()`) and on the
/// CPU (`tg_signal_wait()`) alike: a wait for `v` is satisfied once the value is ≥ `v`. Nothing
/// wraps around: `UINT64_MAX` satisfies every wait, and a wait for a value above the current one
/// blocks however far above it is (e.g. a wait for 2^63 + 1 blocks at 0).
///
/// Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`. Thread safety: any thread.
///
/// # Safety
/// None beyond the handle contract.
#[no_mangle]
pub unsafe extern "C" fn tg_signal_set(signal: *const tg_signal, value: u64) -> tg_status {
    run("tg_signal_set", || {
        self::signal(signal, "signal")?.set(value);
        Ok(())
    })
}

/// Wait on the CPU until the signal's value is ≥ `value`.
///
/// Signal values compare as unsigned 64-bit integers, on the GPU (`tg_queue_wait()`) and on the
/// CPU (`tg_signal_wait()`) alike: a wait for `v` is satisfied once the value is ≥ `v`. Nothing
/// wraps around: `UINT64_MAX` satisfies every wait, and a wait for a value above the current one
/// blocks however far above it is (e.g. a wait for 2^63 + 1 blocks at 0).
///
/// - `timeout_ns`: deadline in nanoseconds (`TG_TIMEOUT_INFINITE` = none); 0 = just test.
///
/// Unsubmitted work: when the value is not reached yet and the last release recorded for the
/// signal (`tg_queue_signal()`, or a `tg_queue_replay()` of a command buffer with
/// `tg_cmdbuf_signal()`) is of a value ≥ `value` but its queue has not submitted it, the wait
/// first submits that queue (as `tg_queue_submit()` would; an owned queue only when the caller
/// is its owner thread, a shared queue once its lock is free within 200 ms). So
/// `tg_queue_signal(q, s, 1)` followed by `tg_signal_wait(s, 1, ...)` completes.
///
/// A wait that returns `TG_OK` prints device-side `printf` output written so far to `stdout`.
///
/// Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_TIMEOUT` (the message gives the value
/// reached and where the release stands: none recorded, recorded but not submitted on a named
/// queue, or submitted on a named queue that has not completed it); `TG_ERROR_DEVICE_FAULT` (the device faulted while waiting; a failed device-side
/// `assert` puts libcuda's assertion line in the message).
/// Thread safety: any thread; several threads may wait on one signal.
///
/// # Safety
/// None beyond the handle contract.
#[no_mangle]
pub unsafe extern "C" fn tg_signal_wait(
    signal: *const tg_signal,
    value: u64,
    timeout_ns: u64,
) -> tg_status {
    run("tg_signal_wait", || {
        self::signal(signal, "signal")?.wait(value, timeout_ns)
    })
}
