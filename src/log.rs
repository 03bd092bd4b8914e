//! Logging: the library's own small dispatcher, on the types of the `log` crate.
//!
//! **Level.** `TEGRAGPU_LOG` = `error`, `warn`, `info`, `debug`, `trace` or `off`
//! (case-insensitive), read once: at the first device open, the first [`set_callback`] /
//! [`set_level`], or the first message, whichever comes first. Unset or empty: `warn`. Any
//! other value: `warn`, and one warning naming the valid values. Older variables, honoured when
//! `TEGRAGPU_LOG` is unset: `TEGRAGPU_RM_TRACE=1` = `trace`; `TEGRAGPU_RM_TIMING=1` = `info`
//! (the RM backend's allocation timings are info messages then). [`set_level`]
//! (`tg_set_log_level`) overrides the variable at any time.
//!
//! What each level shows: `error`/`warn` — problems the library works around or reports;
//! `info` — one line per device open naming the backend and why it was chosen; `debug` —
//! bring-up steps (nodes opened, classes, address space, channel/TSG creation, USERD and
//! doorbell mappings); `trace` — every ioctl (target `tegragpu::ioctl`) with its name, key
//! arguments, result (`ok` or the errno name, plus the RM status where there is one) and its
//! duration in microseconds.
//!
//! **Where messages go**, first match:
//! 1. the callback set with [`set_callback`] (`tg_set_log_callback` in C);
//! 2. the Rust program's own `log` logger, when the program linked the `rlib` and installed one
//!    (detected as `log::max_level() != Off`, which every `log` logger sets when installed).
//!    The program's filter then applies on top of ours (`TEGRAGPU_LOG` still gates first);
//! 3. stderr, one line per message: `tegragpu[LEVEL] target: message`.
//!
//! The library never calls `log::set_logger`: installing a global logger from a library would
//! make a later `env_logger::init()` (or any `log::set_logger`) of the host program fail or
//! panic. In the C library (`libtegragpu.so`) the `log` crate is a private copy that nobody else
//! can install a logger into, so messages go to the callback or to stderr.
//!
//! **Cost.** A message whose level is off costs one relaxed atomic load and a compare at its
//! call site: nothing is formatted. The launch/submit hot path (recording, GPFIFO, doorbell)
//! logs nothing at any level.

use parking_lot::RwLock;
use std::cell::Cell;
use std::fmt;
use std::io::Write as _;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::Once;

pub use ::log::{Level, LevelFilter};

/// The environment variable holding the level.
pub const LOG_ENV: &str = "TEGRAGPU_LOG";
/// The values `TEGRAGPU_LOG` accepts, for messages.
pub const VALID_LEVELS: &str = "error, warn, info, debug, trace, off";
/// Level when `TEGRAGPU_LOG` is unset.
pub const DEFAULT_LEVEL: LevelFilter = LevelFilter::Warn;

/// `LEVEL` before the environment was read. Larger than every level, so that `enabled` takes
/// its slow path (reading the environment) exactly while this is stored.
const UNINIT: u8 = u8::MAX;
/// The current level as `LevelFilter as u8` (Off = 0 ... Trace = 5), or `UNINIT`.
static LEVEL: AtomicU8 = AtomicU8::new(UNINIT);
static ENV_ONCE: Once = Once::new();

/// A Rust-level message sink: `(level, target, message)`. Called from any thread, possibly
/// concurrently.
pub type Callback = Box<dyn Fn(Level, &str, &str) + Send + Sync>;

static CALLBACK: RwLock<Option<Callback>> = RwLock::new(None);
/// Mirrors `CALLBACK.is_some()` so that the common case takes no lock.
static HAS_CALLBACK: AtomicBool = AtomicBool::new(false);

thread_local! {
    /// Set while this thread runs the callback: messages logged from inside it (the callback
    /// calling into the library) go to stderr instead of recursing.
    static IN_CALLBACK: Cell<bool> = const { Cell::new(false) };
}

fn in_callback() -> bool {
    IN_CALLBACK.try_with(|c| c.get()).unwrap_or(false)
}

fn filter_from_u8(v: u8) -> LevelFilter {
    match v {
        0 => LevelFilter::Off,
        1 => LevelFilter::Error,
        2 => LevelFilter::Warn,
        3 => LevelFilter::Info,
        4 => LevelFilter::Debug,
        _ => LevelFilter::Trace,
    }
}

/// Parses a `TEGRAGPU_LOG` value (case-insensitive, surrounding blanks ignored).
pub fn parse_level(s: &str) -> Option<LevelFilter> {
    s.trim().parse().ok()
}

fn env_flag(name: &str) -> bool {
    std::env::var_os(name).is_some_and(|v| !v.is_empty() && v != "0")
}

/// The level the environment asks for, and a complaint when `TEGRAGPU_LOG` is not a level.
fn level_from_env() -> (LevelFilter, Option<String>) {
    match std::env::var_os(LOG_ENV) {
        Some(v) if !v.is_empty() => match v.to_str().and_then(parse_level) {
            Some(f) => (f, None),
            None => (
                DEFAULT_LEVEL,
                Some(format!(
                    "{LOG_ENV}={v:?} is not a log level; valid values: {VALID_LEVELS} (using warn)"
                )),
            ),
        },
        _ if env_flag("TEGRAGPU_RM_TRACE") => (LevelFilter::Trace, None),
        _ if env_flag("TEGRAGPU_RM_TIMING") => (LevelFilter::Info, None),
        _ => (DEFAULT_LEVEL, None),
    }
}

/// Reads `TEGRAGPU_LOG` (once per process; later calls do nothing). Called at device open and
/// callback registration; [`enabled`] calls it on first use too.
pub fn init() {
    ENV_ONCE.call_once(|| {
        let (filter, complaint) = level_from_env();
        LEVEL.store(filter as usize as u8, Ordering::Relaxed);
        if let Some(c) = complaint {
            if enabled(Level::Warn) {
                emit(Level::Warn, "tegragpu::log", format_args!("{c}"));
            }
        }
    });
}

/// Whether messages of `level` are on. One relaxed load and a compare once initialised.
#[inline]
pub fn enabled(level: Level) -> bool {
    let cur = LEVEL.load(Ordering::Relaxed);
    if cur < level as usize as u8 {
        return false;
    }
    cur != UNINIT || enabled_after_init(level)
}

#[cold]
#[inline(never)]
fn enabled_after_init(level: Level) -> bool {
    init();
    LEVEL.load(Ordering::Relaxed) >= level as usize as u8
}

/// The current level (reads the environment first if nothing did yet).
pub fn level() -> LevelFilter {
    init();
    filter_from_u8(LEVEL.load(Ordering::Relaxed))
}

/// Sets the level, overriding `TEGRAGPU_LOG` (`tg_set_log_level`).
pub fn set_level(level: LevelFilter) {
    init();
    LEVEL.store(level as usize as u8, Ordering::Relaxed);
}

/// Routes messages to `cb` (`None`: back to the default, see the module docs). Thread-safe:
/// waits for calls of the previous callback that are running on other threads, so that once this
/// returns the previous callback is never called again. Refused (`InvalidArgument`) from inside
/// the callback itself.
pub fn set_callback(cb: Option<Callback>) -> crate::Result<()> {
    if in_callback() {
        return Err(crate::Error::invalid(
            "the log callback cannot be changed from inside the log callback",
        ));
    }
    init();
    let old = {
        let mut slot = CALLBACK.write();
        HAS_CALLBACK.store(cb.is_some(), Ordering::Release);
        std::mem::replace(&mut *slot, cb)
    };
    drop(old);
    Ok(())
}

/// Delivers one message (call only after [`enabled`] said yes: this formats unconditionally).
pub fn emit(level: Level, target: &str, args: fmt::Arguments<'_>) {
    if HAS_CALLBACK.load(Ordering::Acquire) && !in_callback() {
        let slot = CALLBACK.read();
        if let Some(cb) = slot.as_ref() {
            let msg = fmt::format(args);
            let _ = IN_CALLBACK.try_with(|c| c.set(true));
            // A panicking Rust callback must not unwind through the library.
            let _ =
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| cb(level, target, &msg)));
            let _ = IN_CALLBACK.try_with(|c| c.set(false));
            return;
        }
    }
    if ::log::max_level() != LevelFilter::Off {
        // The (Rust) host program installed a `log` logger: it decides.
        ::log::logger().log(
            &::log::Record::builder()
                .level(level)
                .target(target)
                .args(args)
                .build(),
        );
        return;
    }
    let line = format!("tegragpu[{level}] {target}: {args}\n");
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
}

/// Logs at `level` (with `target: "..."`, or the calling module's path as the target). Nothing
/// is evaluated or formatted unless the level is on.
macro_rules! log_at {
    ($lvl:expr, target: $target:expr, $($arg:tt)+) => {{
        let lvl: $crate::log::Level = $lvl;
        if $crate::log::enabled(lvl) {
            $crate::log::emit(lvl, $target, ::core::format_args!($($arg)+));
        }
    }};
    ($lvl:expr, $($arg:tt)+) => {
        $crate::log::log_at!($lvl, target: ::core::module_path!(), $($arg)+)
    };
}

/// Logs an error (see [`log_at`]).
#[allow(unused_macros)]
macro_rules! error {
    ($($arg:tt)+) => { $crate::log::log_at!($crate::log::Level::Error, $($arg)+) };
}
/// Logs a warning (see [`log_at`]). (Defined as `warn_` and re-exported as `warn`: a
/// `macro_rules!` named `warn` cannot be re-exported by that name, which is also a built-in
/// attribute; use it as `crate::log::warn!`.)
macro_rules! warn_ {
    ($($arg:tt)+) => { $crate::log::log_at!($crate::log::Level::Warn, $($arg)+) };
}
/// Logs at info level (see [`log_at`]).
macro_rules! info {
    ($($arg:tt)+) => { $crate::log::log_at!($crate::log::Level::Info, $($arg)+) };
}
/// Logs at debug level: bring-up steps (see [`log_at`]).
macro_rules! debug {
    ($($arg:tt)+) => { $crate::log::log_at!($crate::log::Level::Debug, $($arg)+) };
}
/// Logs at trace level: ioctls (see [`log_at`]).
macro_rules! trace {
    ($($arg:tt)+) => { $crate::log::log_at!($crate::log::Level::Trace, $($arg)+) };
}

#[allow(unused_imports)]
pub(crate) use {debug, error, info, log_at, trace, warn_ as warn};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_parse_case_insensitively() {
        assert_eq!(parse_level("TRACE"), Some(LevelFilter::Trace));
        assert_eq!(parse_level(" Warn "), Some(LevelFilter::Warn));
        assert_eq!(parse_level("off"), Some(LevelFilter::Off));
        assert_eq!(parse_level("verbose"), None);
        assert_eq!(parse_level(""), None);
    }

    #[test]
    fn filter_numbers_round_trip() {
        for f in [
            LevelFilter::Off,
            LevelFilter::Error,
            LevelFilter::Warn,
            LevelFilter::Info,
            LevelFilter::Debug,
            LevelFilter::Trace,
        ] {
            assert_eq!(filter_from_u8(f as usize as u8), f);
        }
        // The fast-path compare relies on Level and LevelFilter sharing numbers.
        assert_eq!(Level::Error as usize, LevelFilter::Error as usize);
        assert_eq!(Level::Trace as usize, LevelFilter::Trace as usize);
    }
}
