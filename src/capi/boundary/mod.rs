//! The call boundary of the C API: every `extern "C"` body runs inside [`run`], which catches
//! panics (`TG_ERROR_INTERNAL`), turns a [`crate::error::Error`] into its [`tg_status`] and keeps
//! the message for `tg_last_error_message()` (thread-local); plus the helpers every C function
//! uses on its arguments: out-pointers, C strings, `struct_size` checks, fixed C string fields,
//! and handle lookups in the handle table (`handles.rs`), which give `TG_ERROR_INVALID_HANDLE`
//! for NULL, destroyed and wrong-type handles.
//!
//! Nothing here is part of the C API: no `extern "C"` function lives in this module.
//!
//! Queues and command buffers, shared or owned by one thread, are looked up in `queue` and
//! `cmdbuf`; what owned objects share (the owner check, the per-thread tables, the handle
//! caches) is in `owned`.

use super::handles::{self, Kind, Object};
use super::{tg_buf, tg_device, tg_kernel, tg_module, tg_queue, tg_signal, tg_status};
use crate::core::{Buffer, Device, Kernel, Module, Signal};
use crate::error::{Error, Result, Status};
use std::cell::RefCell;
use std::ffi::{c_char, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

mod cmdbuf;
mod owned;
mod queue;

pub(crate) use cmdbuf::CmdBufCell;
pub(super) use cmdbuf::{destroy_cmdbuf, register_cmdbuf, with_cmdbuf};
pub(crate) use queue::QueueCell;
pub(super) use queue::{register_queue, take_queue, with_queue, with_queue_cmdbuf};

// ---------------------------------------------------------------------------------------------
// Status mapping

impl From<Status> for tg_status {
    fn from(s: Status) -> tg_status {
        // Exhaustive on purpose: a new `Status` must get a C value here.
        match s {
            Status::Ok => tg_status::TG_OK,
            Status::InvalidArgument => tg_status::TG_ERROR_INVALID_ARGUMENT,
            Status::NullPointer => tg_status::TG_ERROR_NULL_POINTER,
            Status::InvalidHandle => tg_status::TG_ERROR_INVALID_HANDLE,
            Status::OutOfMemory => tg_status::TG_ERROR_OUT_OF_MEMORY,
            Status::NotFound => tg_status::TG_ERROR_NOT_FOUND,
            Status::NotSupported => tg_status::TG_ERROR_NOT_SUPPORTED,
            Status::Timeout => tg_status::TG_ERROR_TIMEOUT,
            Status::DeviceFault => tg_status::TG_ERROR_DEVICE_FAULT,
            Status::Os => tg_status::TG_ERROR_OS,
            Status::InvalidCubin => tg_status::TG_ERROR_INVALID_CUBIN,
            Status::InvalidLaunch => tg_status::TG_ERROR_INVALID_LAUNCH,
            Status::CompileError => tg_status::TG_ERROR_COMPILE,
            Status::LibraryMissing => tg_status::TG_ERROR_LIBRARY_MISSING,
            Status::UnsupportedDriver => tg_status::TG_ERROR_UNSUPPORTED_DRIVER,
            Status::Internal => tg_status::TG_ERROR_INTERNAL,
            Status::DeviceLost => tg_status::TG_ERROR_DEVICE_LOST,
        }
    }
}

impl tg_status {
    /// The `Status` with the same value, for any raw integer (`None` outside 0..=16).
    pub fn from_raw(v: i32) -> Option<Status> {
        const ALL: [Status; 17] = [
            Status::Ok,
            Status::InvalidArgument,
            Status::NullPointer,
            Status::InvalidHandle,
            Status::OutOfMemory,
            Status::NotFound,
            Status::NotSupported,
            Status::Timeout,
            Status::DeviceFault,
            Status::Os,
            Status::InvalidCubin,
            Status::InvalidLaunch,
            Status::CompileError,
            Status::LibraryMissing,
            Status::UnsupportedDriver,
            Status::Internal,
            Status::DeviceLost,
        ];
        ALL.iter().copied().find(|s| *s as i32 == v)
    }
}

// ---------------------------------------------------------------------------------------------
// Panic catching and the last-error text

thread_local! {
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

fn set_last_error(msg: &str) {
    let c = CString::new(msg.replace('\0', "\\0")).unwrap_or_default();
    // `try_with`: during thread teardown the slot may be gone; the status still reports.
    let _ = LAST_ERROR.try_with(|slot| {
        if let Ok(mut s) = slot.try_borrow_mut() {
            *s = c;
        }
    });
}

/// The calling thread's last error message for `tg_last_error_message()`: never NULL, `""`
/// when no call has failed on this thread yet (or the thread-local is gone in thread teardown).
pub(super) fn last_error_ptr() -> *const c_char {
    static EMPTY: &CStr = c"";
    catch_unwind(|| {
        LAST_ERROR.try_with(|s| s.try_borrow().map(|c| c.as_ptr()).unwrap_or(EMPTY.as_ptr()))
    })
    .ok()
    .and_then(|r| r.ok())
    .unwrap_or(EMPTY.as_ptr())
}

/// Prefix `msg` with the call name unless the core already did.
fn with_call(call: &str, msg: &str) -> String {
    if msg.starts_with(call) && msg[call.len()..].starts_with(':') {
        return msg.to_string();
    }
    // The queue reports launch errors as "tg_launch: ..."; name the variant that was called.
    if let Some(rest) = msg.strip_prefix("tg_launch: ") {
        return format!("{call}: {rest}");
    }
    format!("{call}: {msg}")
}

/// Run one C API body: catch panics, turn errors into a status and the last-error text.
/// Inlined into each C function, with the error paths out of line: the successful call then
/// costs no extra call frame (each frame is stores to the stack, and on the submit paths every
/// store waits behind the previous doorbell's uncached store).
#[inline]
pub(super) fn run(call: &str, body: impl FnOnce() -> Result<()>) -> tg_status {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => tg_status::TG_OK,
        Ok(Err(e)) => failed(call, e),
        Err(payload) => panicked(call, payload),
    }
}

#[cold]
#[inline(never)]
fn failed(call: &str, e: Error) -> tg_status {
    set_last_error(&with_call(call, &e.message));
    e.status.into()
}

#[cold]
#[inline(never)]
fn panicked(call: &str, payload: Box<dyn std::any::Any + Send>) -> tg_status {
    let what = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".to_string());
    set_last_error(&format!("{call}: internal error (panic: {what})"));
    tg_status::TG_ERROR_INTERNAL
}

// ---------------------------------------------------------------------------------------------
// Argument helpers

/// The error for a required pointer argument `what` that is NULL.
pub(super) fn null(what: &str) -> Error {
    Error::new(Status::NullPointer, format!("{what} is NULL"))
}

/// Check an out-pointer; returns it for the final write.
pub(super) fn out_ptr<T>(p: *mut T, what: &str) -> Result<*mut T> {
    if p.is_null() {
        Err(null(what))
    } else {
        Ok(p)
    }
}

/// Read a NUL-terminated UTF-8 string argument.
///
/// # Safety
/// `p` is NULL or points to a NUL-terminated string.
pub(super) unsafe fn c_str<'a>(p: *const c_char, what: &str) -> Result<&'a str> {
    if p.is_null() {
        return Err(null(what));
    }
    CStr::from_ptr(p)
        .to_str()
        .map_err(|e| Error::invalid(format!("{what} is not valid UTF-8 ({e})")))
}

/// Check the `struct_size` the caller put at the start of an output struct.
///
/// # Safety
/// `out` points to at least 4 readable bytes.
pub(super) unsafe fn check_out_struct_size<T>(
    out: *const T,
    what: &str,
    c_type: &str,
) -> Result<()> {
    let given = std::ptr::read_unaligned(out as *const u32);
    let need = std::mem::size_of::<T>();
    if (given as usize) < need {
        return Err(Error::invalid(format!(
            "{what}->struct_size is {given}; set it to sizeof({c_type}) ({need})"
        )));
    }
    Ok(())
}

/// Copy `s` into a fixed C string field, truncating at a character boundary and terminating.
pub(super) fn fill_c_string(dst: &mut [c_char], s: &str) {
    let max = dst.len().saturating_sub(1);
    let mut end = s.len().min(max);
    while end > 0 && !s.is_char_boundary(end) {
        end -= 1;
    }
    for (d, b) in dst.iter_mut().zip(s.as_bytes()[..end].iter()) {
        *d = *b as c_char;
    }
    for d in dst.iter_mut().skip(end) {
        *d = 0;
    }
}

// ---------------------------------------------------------------------------------------------
// Handle lookups (the table is `handles.rs`): the object behind a handle of each C type, or
// `TG_ERROR_INVALID_HANDLE` naming the argument `arg` (NULL, destroyed, or another type).

pub(super) fn device(h: *const tg_device, arg: &str) -> Result<Device> {
    match handles::get(h as usize, Kind::Device, arg)? {
        Object::Device(d) => Ok(d),
        _ => Err(Error::new(Status::Internal, "handle table kind mismatch")),
    }
}

pub(super) fn buffer(h: *const tg_buf, arg: &str) -> Result<Arc<Buffer>> {
    match handles::get(h as usize, Kind::Buf, arg)? {
        Object::Buf(b) => Ok(b),
        _ => Err(Error::new(Status::Internal, "handle table kind mismatch")),
    }
}

pub(super) fn module(h: *const tg_module, arg: &str) -> Result<Module> {
    match handles::get(h as usize, Kind::Module, arg)? {
        Object::Module(m) => Ok(m),
        _ => Err(Error::new(Status::Internal, "handle table kind mismatch")),
    }
}

thread_local! {
    static KERNEL_LOOKUP: handles::LookupCache<Kernel, 32> = const { RefCell::new([const { None }; 32]) };
    static QUEUE_LOOKUP: handles::LookupCache<QueueCell, 4> = const { RefCell::new([const { None }; 4]) };
    static SIGNAL_LOOKUP: handles::LookupCache<Signal, 8> = const { RefCell::new([const { None }; 8]) };
}

pub(super) fn kernel(h: *const tg_kernel, arg: &str) -> Result<Arc<Kernel>> {
    handles::get_cached(&KERNEL_LOOKUP, h as usize, Kind::Kernel, arg, |o| match o {
        Object::Kernel(k) => Some(k),
        _ => None,
    })
}

fn queue_cell(h: *const tg_queue, arg: &str) -> Result<Arc<QueueCell>> {
    handles::get_cached(&QUEUE_LOOKUP, h as usize, Kind::Queue, arg, |o| match o {
        Object::Queue(q) => Some(q),
        _ => None,
    })
}

pub(super) fn signal(h: *const tg_signal, arg: &str) -> Result<Arc<Signal>> {
    handles::get_cached(&SIGNAL_LOOKUP, h as usize, Kind::Signal, arg, |o| match o {
        Object::Signal(s) => Some(s),
        _ => None,
    })
}

/// Whether two objects were created from the same open device.
pub(super) fn same_device(a: &Device, b: &Device) -> bool {
    Arc::ptr_eq(&a.inner, &b.inner)
}

/// Put a new object into the handle table; its handle value for C.
pub(super) fn register(obj: Object) -> Result<usize> {
    handles::insert(obj)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capi::tg_last_error_message;

    #[test]
    fn status_values_match_core_status() {
        for v in 0..=16 {
            let s = tg_status::from_raw(v).expect("0..=16 are statuses");
            assert_eq!(tg_status::from(s) as i32, v);
            assert_eq!(s as i32, v);
        }
        assert!(tg_status::from_raw(17).is_none());
        assert!(tg_status::from_raw(-1).is_none());
        // Fixed numbers from the C API contract.
        assert_eq!(tg_status::TG_OK as i32, 0);
        assert_eq!(tg_status::TG_ERROR_INVALID_ARGUMENT as i32, 1);
        assert_eq!(tg_status::TG_ERROR_INVALID_HANDLE as i32, 3);
        assert_eq!(tg_status::TG_ERROR_INTERNAL as i32, 15);
        assert_eq!(tg_status::TG_ERROR_DEVICE_LOST as i32, 16);
    }

    #[test]
    fn c_string_fields_truncate_and_terminate() {
        let mut b = [1 as c_char; 4];
        fill_c_string(&mut b, "abcdef");
        assert_eq!(b, [b'a' as c_char, b'b' as c_char, b'c' as c_char, 0]);
        // "é" is two bytes: never cut a character in half.
        let mut b = [1 as c_char; 3];
        fill_c_string(&mut b, "aé");
        assert_eq!(b, [b'a' as c_char, 0, 0]);
    }

    #[test]
    fn panics_become_internal_errors_with_a_message() {
        let st = run("tg_test_call", || panic!("boom {}", 7));
        assert_eq!(st, tg_status::TG_ERROR_INTERNAL);
        // SAFETY: static/thread-local NUL-terminated string.
        let m = unsafe { CStr::from_ptr(tg_last_error_message()) }
            .to_str()
            .expect("utf8")
            .to_string();
        assert_eq!(m, "tg_test_call: internal error (panic: boom 7)");
    }

    #[test]
    fn messages_are_prefixed_once() {
        assert_eq!(
            with_call("tg_buf_alloc", "size_bytes is 0"),
            "tg_buf_alloc: size_bytes is 0"
        );
        assert_eq!(
            with_call("tg_queue_copy", "tg_queue_copy: dst: x"),
            "tg_queue_copy: dst: x"
        );
        assert_eq!(
            with_call("tg_launch_args", "tg_launch: kernel \"k\""),
            "tg_launch_args: kernel \"k\""
        );
    }

    /// A thread's cached lookup neither keeps a handle usable after another thread destroyed it
    /// nor keeps its object alive: the object goes when the handle is destroyed.
    #[test]
    fn cached_lookups_do_not_outlive_a_destroy() {
        let dev = Device::open(Some("emu")).expect("emulated device");
        let sig = Arc::new(dev.create_signal(7).expect("signal"));
        // The object outlives its handle here (as it does while a call on another thread uses
        // it): the destroyed handle must still be refused.
        let keep = sig.clone();
        let h = register(Object::Signal(sig)).expect("register") as *const tg_signal as usize;
        let (looked, destroyed) = (std::sync::mpsc::channel(), std::sync::mpsc::channel());
        let user = std::thread::spawn(move || {
            for _ in 0..2 {
                let s = signal(h as *const tg_signal, "signal").expect("live handle");
                assert_eq!(s.value(), 7);
            }
            looked.0.send(()).expect("main thread");
            destroyed.1.recv().expect("main thread");
            let e = signal(h as *const tg_signal, "signal").expect_err("destroyed handle");
            assert_eq!(e.status, Status::InvalidHandle);
        });
        looked.1.recv().expect("user thread");
        assert!(handles::remove(h, Kind::Signal, "signal").expect("remove"));
        assert_eq!(
            Arc::strong_count(&keep),
            1,
            "the user thread's cached lookup holds the signal"
        );
        destroyed.0.send(()).expect("user thread");
        user.join().expect("user thread");
    }
}
