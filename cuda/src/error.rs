//! Results: tegragpu errors → `CUresult`, the guard every entry point runs in (a panic becomes
//! `CUDA_ERROR_UNKNOWN`, never an unwind into C), logging through libtegragpu's log
//! (`TEGRAGPU_LOG`), and `cuGetErrorName` / `cuGetErrorString`.

use crate::types::*;
use std::ffi::c_char;
use std::sync::atomic::{AtomicBool, Ordering};
use tegragpu::log::Level;
use tegragpu::{Error, Status};

/// Log target of this library's records.
pub const TARGET: &str = "tegragpu::cuda";

/// A record of this library at `level`, where `TEGRAGPU_LOG` (or `tg_set_log_level`) lets it
/// through.
pub fn log(level: Level, args: std::fmt::Arguments<'_>) {
    if tegragpu::log::enabled(level) {
        tegragpu::log::emit(level, TARGET, args);
    }
}

/// A failed call: the result code and, where there is one, what went wrong.
pub struct Fail(pub CUresult, pub Option<String>);

pub type R<T = ()> = std::result::Result<T, Fail>;

impl From<Error> for Fail {
    fn from(e: Error) -> Fail {
        Fail(code_of(&e), Some(e.message))
    }
}

/// A failure with a message.
pub fn fail(code: CUresult, msg: impl Into<String>) -> Fail {
    Fail(code, Some(msg.into()))
}

/// `CUDA_ERROR_INVALID_VALUE` with a message.
pub fn invalid(msg: impl Into<String>) -> Fail {
    fail(CUDA_ERROR_INVALID_VALUE, msg)
}

/// The `CUresult` for a libtegragpu error.
pub fn code_of(e: &Error) -> CUresult {
    match e.status {
        Status::Ok => CUDA_SUCCESS,
        Status::InvalidArgument | Status::NullPointer => CUDA_ERROR_INVALID_VALUE,
        Status::InvalidHandle => CUDA_ERROR_INVALID_HANDLE,
        Status::OutOfMemory => CUDA_ERROR_OUT_OF_MEMORY,
        Status::NotFound => CUDA_ERROR_NOT_FOUND,
        Status::NotSupported => CUDA_ERROR_NOT_SUPPORTED,
        Status::Timeout => CUDA_ERROR_LAUNCH_TIMEOUT,
        Status::DeviceFault | Status::DeviceLost => {
            // A failed device-side assert (core/device.rs names it in the fault's message).
            if e.message.contains("device-side assertion failed") {
                CUDA_ERROR_ASSERT
            } else if e.message.contains("MMU") || e.message.contains("error code 31") {
                CUDA_ERROR_ILLEGAL_ADDRESS
            } else {
                CUDA_ERROR_LAUNCH_FAILED
            }
        }
        Status::InvalidCubin => {
            if e.message.contains("no code for") || e.message.contains("SM version") {
                CUDA_ERROR_NO_BINARY_FOR_GPU
            } else {
                CUDA_ERROR_INVALID_IMAGE
            }
        }
        Status::InvalidLaunch => {
            if e.message.contains("register") || e.message.contains("shared memory") {
                CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES
            } else {
                CUDA_ERROR_INVALID_VALUE
            }
        }
        Status::CompileError => CUDA_ERROR_INVALID_PTX,
        Status::LibraryMissing => CUDA_ERROR_JIT_COMPILER_NOT_FOUND,
        Status::UnsupportedDriver | Status::Os | Status::Internal => CUDA_ERROR_UNKNOWN,
    }
}

/// Run an entry point: its result code; a failure is logged (debug level) with its message, a
/// panic is caught and logged (error level) and answers `CUDA_ERROR_UNKNOWN`.
#[inline(always)]
pub fn guard(name: &'static str, f: impl FnOnce() -> R) -> CUresult {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(Ok(())) => CUDA_SUCCESS,
        Ok(Err(Fail(code, msg))) => report(name, code, msg),
        Err(p) => {
            let what = p
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| p.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            log(
                Level::Error,
                format_args!("{name}: internal error (panic: {what})"),
            );
            CUDA_ERROR_UNKNOWN
        }
    }
}

#[cold]
#[inline(never)]
fn report(name: &str, code: CUresult, msg: Option<String>) -> CUresult {
    let lvl = if matches!(code, CUDA_ERROR_NOT_READY) {
        Level::Trace
    } else if matches!(
        code,
        CUDA_ERROR_ILLEGAL_ADDRESS | CUDA_ERROR_LAUNCH_FAILED | CUDA_ERROR_UNKNOWN
    ) {
        Level::Warn
    } else {
        Level::Debug
    };
    log(
        lvl,
        format_args!(
            "{name}: {} ({code}){}",
            error_name(code).unwrap_or("?"),
            msg.map(|m| format!(": {m}")).unwrap_or_default()
        ),
    );
    code
}

/// What an export that is not implemented answers: `CUDA_ERROR_NOT_SUPPORTED`, its name logged
/// once (warn level).
#[cold]
pub fn not_supported(name: &str, once: &AtomicBool) -> CUresult {
    if !once.swap(true, Ordering::Relaxed) {
        tegragpu::log::init();
        log(
            Level::Warn,
            format_args!("{name} is not implemented by this libcuda: CUDA_ERROR_NOT_SUPPORTED"),
        );
    }
    CUDA_ERROR_NOT_SUPPORTED
}

/// `(code, name)`: the result codes of the CUDA driver API (data/errors.tsv).
fn error_table() -> &'static [(u32, &'static str)] {
    static T: std::sync::OnceLock<Vec<(u32, &'static str)>> = std::sync::OnceLock::new();
    T.get_or_init(|| {
        include_str!("../data/errors.tsv")
            .lines()
            .filter_map(|l| {
                let (c, n) = l.split_once('\t')?;
                Some((c.trim().parse().ok()?, n.trim()))
            })
            .collect()
    })
}

pub fn error_name(code: CUresult) -> Option<&'static str> {
    error_table()
        .iter()
        .find(|(c, _)| *c == code)
        .map(|(_, n)| *n)
}

/// A description of `code`: this library's wording, NUL-terminated, static.
fn error_string(code: CUresult) -> Option<&'static [u8]> {
    static T: std::sync::OnceLock<Vec<(u32, Vec<u8>)>> = std::sync::OnceLock::new();
    let t = T.get_or_init(|| {
        error_table()
            .iter()
            .map(|&(c, n)| {
                let mut s = describe(c, n);
                s.push('\0');
                (c, s.into_bytes())
            })
            .collect()
    });
    t.iter().find(|(c, _)| *c == code).map(|(_, s)| &s[..])
}

fn describe(code: u32, name: &str) -> String {
    let own = match code {
        0 => "no error",
        1 => "an argument is out of range or invalid",
        2 => "out of memory: the allocation could not be made",
        3 => "the driver is not initialized: call cuInit first",
        100 => "no CUDA-capable device was found",
        101 => "the device ordinal is not a valid device",
        200 => "the module image is not valid for this device",
        201 => "there is no current context, or the context handle is not valid",
        209 => "the module has no code for this device's architecture",
        218 => "the PTX could not be compiled",
        221 => "no PTX compiler is installed",
        400 => "the handle is not valid for this call",
        500 => "the named symbol was not found",
        600 => "the work is not complete yet",
        700 => "a kernel accessed an invalid memory address",
        701 => "the launch asks for more resources than the device has",
        702 => "the operation did not complete in time",
        719 => "a kernel failed while running; the context cannot be used further",
        801 => "this operation is not supported",
        999 => "an unexpected internal error",
        _ => "",
    };
    if !own.is_empty() {
        return own.to_string();
    }
    name.trim_start_matches("CUDA_ERROR_")
        .trim_start_matches("CUDA_")
        .to_ascii_lowercase()
        .replace('_', " ")
}

#[no_mangle]
pub unsafe extern "C" fn cuGetErrorName(error: CUresult, pstr: *mut *const c_char) -> CUresult {
    if pstr.is_null() {
        return CUDA_ERROR_INVALID_VALUE;
    }
    static NAMES: std::sync::OnceLock<Vec<(u32, Vec<u8>)>> = std::sync::OnceLock::new();
    let t = NAMES.get_or_init(|| {
        error_table()
            .iter()
            .map(|&(c, n)| (c, format!("{n}\0").into_bytes()))
            .collect()
    });
    match t.iter().find(|(c, _)| *c == error) {
        Some((_, s)) => {
            *pstr = s.as_ptr() as *const c_char;
            CUDA_SUCCESS
        }
        None => {
            *pstr = std::ptr::null();
            CUDA_ERROR_INVALID_VALUE
        }
    }
}

#[no_mangle]
pub unsafe extern "C" fn cuGetErrorString(error: CUresult, pstr: *mut *const c_char) -> CUresult {
    if pstr.is_null() {
        return CUDA_ERROR_INVALID_VALUE;
    }
    match error_string(error) {
        Some(s) => {
            *pstr = s.as_ptr() as *const c_char;
            CUDA_SUCCESS
        }
        None => {
            *pstr = std::ptr::null();
            CUDA_ERROR_INVALID_VALUE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_faults_map_to_cuda_codes() {
        let f = |m: &str| code_of(&Error::new(Status::DeviceFault, m.to_string()));
        assert_eq!(
            f("device fault: device-side assertion failed: k.cu:3: void k(): block: [0,0,0], thread: [0,0,0] Assertion `x` failed. (error code 13)"),
            CUDA_ERROR_ASSERT
        );
        assert_eq!(
            f("compute queue: error code 31 at GPU address 0x0: MMU fault"),
            CUDA_ERROR_ILLEGAL_ADDRESS
        );
        assert_eq!(f("compute queue: error code 13"), CUDA_ERROR_LAUNCH_FAILED);
    }
}
