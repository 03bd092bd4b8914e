//! `tg_set_log_callback` and `tg_set_log_level`: where the library's log messages go and which
//! are produced (the dispatch itself is `crate::log`).

use super::boundary::run;
use super::{tg_log_fn, tg_log_level, tg_log_level_arg, tg_status};
use crate::error::Error;
use std::ffi::{c_void, CString};

/// `user` of `tg_set_log_callback`, carried to any thread (the caller vouches for it).
struct LogUser(*mut c_void);
// SAFETY: the pointer is only handed back to the caller's callback, which the caller declares
// thread-safe (tg_set_log_callback's contract).
unsafe impl Send for LogUser {}
unsafe impl Sync for LogUser {}
impl LogUser {
    fn get(&self) -> *mut c_void {
        self.0
    }
}

fn c_log_level(level: crate::log::Level) -> tg_log_level {
    match level {
        crate::log::Level::Error => tg_log_level::TG_LOG_ERROR,
        crate::log::Level::Warn => tg_log_level::TG_LOG_WARN,
        crate::log::Level::Info => tg_log_level::TG_LOG_INFO,
        crate::log::Level::Debug => tg_log_level::TG_LOG_DEBUG,
        crate::log::Level::Trace => tg_log_level::TG_LOG_TRACE,
    }
}

/// A C string for the callback (an inner NUL, which no message should contain, is escaped).
fn log_c_string(s: &str) -> CString {
    CString::new(s).unwrap_or_else(|_| CString::new(s.replace('\0', "\\0")).unwrap_or_default())
}

/// Route the library's log messages to `cb` instead of stderr, like `wgpuSetLogCallback`.
///
/// - `cb`: called once per message (see `tg_log_fn`); NULL restores the default, one line per
///   message on stderr: `tegragpu[LEVEL] target: message`.
/// - `user`: passed to every call of `cb` unchanged; may be NULL.
///
/// Which messages are produced is set by `tg_set_log_level()` or, until that is called, the
/// environment variable `TEGRAGPU_LOG` (`error`, `warn`, `info`, `debug`, `trace`, `off`;
/// default `warn`), read at the first device open or the first call of this function.
///
/// Returns `TG_OK`; `TG_ERROR_INVALID_ARGUMENT` (called from inside the callback).
/// Thread safety: any thread. Replacing or removing a callback waits until calls of the old
/// one running on other threads have returned: after this function returns, the old callback
/// is never called again and its `user` may be freed.
///
/// # Safety
/// `cb`, if not NULL, is a function with the `tg_log_fn` signature, callable from any thread
/// until it is replaced.
#[no_mangle]
pub unsafe extern "C" fn tg_set_log_callback(cb: tg_log_fn, user: *mut c_void) -> tg_status {
    run("tg_set_log_callback", || {
        let sink: Option<crate::log::Callback> = cb.map(|f| {
            let user = LogUser(user);
            Box::new(
                move |level: crate::log::Level, target: &str, message: &str| {
                    let t = log_c_string(target);
                    let m = log_c_string(message);
                    // SAFETY: the caller registered `f` as a thread-safe tg_log_fn; both
                    // strings are NUL-terminated and outlive the call.
                    unsafe { f(c_log_level(level), t.as_ptr(), m.as_ptr(), user.get()) }
                },
            ) as crate::log::Callback
        });
        crate::log::set_callback(sink)
    })
}

/// Set the log level, overriding the environment variable `TEGRAGPU_LOG`: messages of `level`
/// and of the levels above it are produced; `TG_LOG_OFF` silences the library. Takes effect
/// at once, on every thread.
///
/// Cost: a message whose level is off is skipped with one atomic load and a compare, before
/// anything is formatted; `TG_LOG_TRACE` formats a line for every ioctl (device open, buffer
/// allocation, channel creation, fault polling during waits). Launches and submits log nothing
/// at any level.
///
/// Returns `TG_OK`; `TG_ERROR_INVALID_ARGUMENT` (not a `tg_log_level`). Thread safety: any
/// thread.
#[no_mangle]
pub extern "C" fn tg_set_log_level(level: tg_log_level_arg) -> tg_status {
    run("tg_set_log_level", || {
        use crate::log::LevelFilter;
        let f = match level.0 {
            0 => LevelFilter::Off,
            1 => LevelFilter::Error,
            2 => LevelFilter::Warn,
            3 => LevelFilter::Info,
            4 => LevelFilter::Debug,
            5 => LevelFilter::Trace,
            v => {
                return Err(Error::invalid(format!(
                    "level {v} is not a tg_log_level (TG_LOG_OFF = 0 ... TG_LOG_TRACE = 5)"
                )))
            }
        };
        crate::log::set_level(f);
        Ok(())
    })
}
