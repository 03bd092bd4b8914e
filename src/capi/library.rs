//! The library as a whole: its version, status descriptions and the last error message.

use super::boundary::last_error_ptr;
use super::{tg_status, tg_status_arg, TG_VERSION_MAJOR, TG_VERSION_MINOR, TG_VERSION_PATCH};
use crate::error::Status;
use std::ffi::{c_char, CStr};

/// The library's version, `(major << 16) | (minor << 8) | patch`. Compare
/// `tg_version() >> 16` with `TG_VERSION_MAJOR` to check that the loaded library matches the
/// header. Thread safety: any thread.
#[no_mangle]
pub extern "C" fn tg_version() -> u32 {
    (TG_VERSION_MAJOR << 16) | (TG_VERSION_MINOR << 8) | TG_VERSION_PATCH
}

/// A static, NUL-terminated description of a status, e.g.
/// "TG_ERROR_INVALID_ARGUMENT: invalid argument". Never NULL; values outside the enum give
/// "unknown tg_status". The string must not be freed. Thread safety: any thread.
#[no_mangle]
pub extern "C" fn tg_status_str(status: tg_status_arg) -> *const c_char {
    fn lookup(v: i32) -> &'static CStr {
        match tg_status::from_raw(v) {
            Some(Status::Ok) => c"TG_OK: success",
            Some(Status::InvalidArgument) => c"TG_ERROR_INVALID_ARGUMENT: invalid argument",
            Some(Status::NullPointer) => c"TG_ERROR_NULL_POINTER: NULL pointer argument",
            Some(Status::InvalidHandle) => {
                c"TG_ERROR_INVALID_HANDLE: NULL, destroyed or wrong-type handle"
            }
            Some(Status::OutOfMemory) => c"TG_ERROR_OUT_OF_MEMORY: out of memory",
            Some(Status::NotFound) => c"TG_ERROR_NOT_FOUND: not found",
            Some(Status::NotSupported) => c"TG_ERROR_NOT_SUPPORTED: not supported",
            Some(Status::Timeout) => c"TG_ERROR_TIMEOUT: timed out",
            Some(Status::DeviceFault) => c"TG_ERROR_DEVICE_FAULT: the GPU reported a fault",
            Some(Status::Os) => c"TG_ERROR_OS: a system call failed",
            Some(Status::InvalidCubin) => {
                c"TG_ERROR_INVALID_CUBIN: malformed or incompatible cubin"
            }
            Some(Status::InvalidLaunch) => {
                c"TG_ERROR_INVALID_LAUNCH: launch does not fit the kernel"
            }
            Some(Status::CompileError) => c"TG_ERROR_COMPILE: run-time compilation failed",
            Some(Status::LibraryMissing) => {
                c"TG_ERROR_LIBRARY_MISSING: an optional library is not installed"
            }
            Some(Status::UnsupportedDriver) => {
                c"TG_ERROR_UNSUPPORTED_DRIVER: kernel driver version not supported"
            }
            Some(Status::Internal) => c"TG_ERROR_INTERNAL: internal error in libtegragpu",
            Some(Status::DeviceLost) => {
                c"TG_ERROR_DEVICE_LOST: device unusable after an earlier fault"
            }
            None => c"unknown tg_status",
        }
    }
    lookup(status.0).as_ptr()
}

/// The message of the most recent failed call on the calling thread, e.g.
/// "tg_buf_alloc: size_bytes is 0". Names the call and the values involved (and, for system
/// calls, the ioctl and errno). Never NULL: "" when no call has failed on this thread yet.
///
/// Ownership: the string belongs to the library and stays valid until the next failing call on
/// the same thread; successful calls leave it unchanged. Thread safety: thread-local.
#[no_mangle]
pub extern "C" fn tg_last_error_message() -> *const c_char {
    last_error_ptr()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_strings_agree_with_core() {
        for v in 0..=16 {
            let s = tg_status::from_raw(v).expect("status");
            // SAFETY: tg_status_str returns a static NUL-terminated string.
            let c = unsafe { CStr::from_ptr(tg_status_str(tg_status_arg(v))) }
                .to_str()
                .expect("utf8");
            assert_eq!(c, s.as_str());
        }
        // SAFETY: as above.
        let unknown = unsafe { CStr::from_ptr(tg_status_str(tg_status_arg(1234))) };
        assert_eq!(unknown.to_str().expect("utf8"), "unknown tg_status");
    }

    #[test]
    fn version_matches_cargo() {
        assert_eq!(
            TG_VERSION_MAJOR.to_string(),
            env!("CARGO_PKG_VERSION_MAJOR")
        );
        assert_eq!(
            TG_VERSION_MINOR.to_string(),
            env!("CARGO_PKG_VERSION_MINOR")
        );
        assert_eq!(
            TG_VERSION_PATCH.to_string(),
            env!("CARGO_PKG_VERSION_PATCH")
        );
        assert_eq!(
            tg_version(),
            (TG_VERSION_MAJOR << 16) | (TG_VERSION_MINOR << 8) | TG_VERSION_PATCH
        );
    }
}
