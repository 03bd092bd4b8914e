//! The system-call seam. Every call the backends make to a kernel driver goes through [`Sys`]:
//! [`LinuxSys`] issues the real system calls (through nix: `open`, `close`, `mmap`, `munmap`,
//! errno; the ioctl itself is libc's, as nix only generates one typed function per request);
//! the emulated Orin kernel (the `emu` module) implements the same trait so that CI runs the
//! real backend code against a strict model of the driver.

pub mod fork;
pub mod lock;

use crate::error::Error;
use std::ffi::CStr;
use std::os::fd::RawFd;
use std::time::Duration;

/// A raw errno value (positive, e.g. `libc::EINVAL`).
pub type Errno = i32;

/// What the kernel told us about a GPU fault, where the driver makes it available
/// (the emulator always does; real nvgpu only logs MMU fault addresses to dmesg).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelFaultRecord {
    /// Work-submit token of the faulting channel.
    pub token: u32,
    /// Faulting GPU virtual address, when known.
    pub address: Option<u64>,
    /// nvgpu notifier error code (31 = MMU fault, 13 = GR exception, 32 = PBDMA error, ...).
    pub code: u32,
    /// Human-readable description ("MMU fault: write to unmapped VA 0x...").
    pub what: String,
}

/// The system calls the library issues. All methods return `Err(errno)` on failure.
///
/// # Safety
/// `ioctl`, `mmap` and `munmap` take raw pointers and have the same contracts as the libc calls.
pub trait Sys: Send + Sync {
    /// `open(path, flags)`; the library always passes `O_CLOEXEC`.
    fn open(&self, path: &CStr, flags: i32) -> Result<RawFd, Errno>;
    /// `close(fd)`.
    fn close(&self, fd: RawFd) -> Result<(), Errno>;
    /// `ioctl(fd, request, arg)`, one system call; `arg` is a pointer to the argument struct or,
    /// for requests that take a value (e.g. `NVMAP_IOC_FREE`), the value itself. Returns the
    /// ioctl's non-negative return value. EINTR and EAGAIN come back like any other errno: the
    /// backends call [`ioctl_retrying`], which retries them a bounded number of times and writes
    /// the trace record of each ioctl (so [`LinuxSys`] and the emulated kernel are logged the
    /// same way, and implementations of this method log nothing themselves).
    ///
    /// # Safety
    /// `arg` must point to memory valid for the request's size and direction.
    unsafe fn ioctl(&self, fd: RawFd, request: u64, arg: usize) -> Result<i32, Errno>;
    /// `mmap(addr, len, prot, flags, fd, offset)`.
    ///
    /// # Safety
    /// As for `libc::mmap`; `MAP_FIXED` may replace existing mappings.
    unsafe fn mmap(
        &self,
        addr: *mut u8,
        len: usize,
        prot: i32,
        flags: i32,
        fd: RawFd,
        offset: i64,
    ) -> Result<*mut u8, Errno>;
    /// `munmap(addr, len)`.
    ///
    /// # Safety
    /// As for `libc::munmap`.
    unsafe fn munmap(&self, addr: *mut u8, len: usize) -> Result<(), Errno>;
    /// Whether this is an emulated kernel.
    fn is_emulated(&self) -> bool {
        false
    }
    /// Fault records the kernel exposes (emulator only; the real driver logs them to dmesg).
    fn fault_log(&self) -> Vec<KernelFaultRecord> {
        Vec::new()
    }
}

/// The real Linux system calls.
#[derive(Debug, Default, Clone, Copy)]
pub struct LinuxSys;

/// The raw errno of a nix error.
fn raw(e: nix::errno::Errno) -> Errno {
    e as Errno
}

impl Sys for LinuxSys {
    fn open(&self, path: &CStr, flags: i32) -> Result<RawFd, Errno> {
        nix::fcntl::open(
            path,
            nix::fcntl::OFlag::from_bits_retain(flags),
            nix::sys::stat::Mode::empty(),
        )
        .map_err(raw)
    }
    fn close(&self, fd: RawFd) -> Result<(), Errno> {
        nix::unistd::close(fd).map_err(raw)
    }
    unsafe fn ioctl(&self, fd: RawFd, request: u64, arg: usize) -> Result<i32, Errno> {
        // nix's `ioctl_*!` macros define one typed function per request; the seam carries the
        // request number and the argument as values, so the call itself is libc's.
        nix::errno::Errno::result(libc::ioctl(fd, request as _, arg)).map_err(raw)
    }
    unsafe fn mmap(
        &self,
        addr: *mut u8,
        len: usize,
        prot: i32,
        flags: i32,
        fd: RawFd,
        offset: i64,
    ) -> Result<*mut u8, Errno> {
        use nix::sys::mman::{MapFlags, ProtFlags};
        use std::num::NonZeroUsize;
        let len = NonZeroUsize::new(len).ok_or(libc::EINVAL)?;
        let at = NonZeroUsize::new(addr as usize);
        let prot = ProtFlags::from_bits_retain(prot);
        let flags = MapFlags::from_bits_retain(flags);
        let p = if flags.contains(MapFlags::MAP_ANONYMOUS) {
            nix::sys::mman::mmap_anonymous(at, len, prot, flags)
        } else if fd < 0 {
            // What the kernel answers for a file mapping without a file.
            return Err(libc::EBADF);
        } else {
            // SAFETY: fd is non-negative and stays open for the call (the caller's contract).
            let fd = std::os::fd::BorrowedFd::borrow_raw(fd);
            nix::sys::mman::mmap(at, len, prot, flags, fd, offset as libc::off_t)
        };
        p.map(|p| p.as_ptr().cast()).map_err(raw)
    }
    unsafe fn munmap(&self, addr: *mut u8, len: usize) -> Result<(), Errno> {
        match std::ptr::NonNull::new(addr.cast()) {
            Some(a) => nix::sys::mman::munmap(a, len).map_err(raw),
            // munmap(NULL, len) is a valid call (it unmaps whatever lies at page 0).
            None => nix::errno::Errno::result(libc::munmap(addr.cast(), len))
                .map(drop)
                .map_err(raw),
        }
    }
}

/// How many times [`ioctl_retrying`] retries an ioctl that answers EAGAIN (the driver is
/// temporarily busy) before it returns EAGAIN: with the pauses of [`eagain_pause`], about 0.9 s.
pub const IOCTL_EAGAIN_RETRIES: u32 = 100;

/// How many times [`ioctl_retrying`] restarts an ioctl interrupted by a signal (EINTR) before it
/// returns EINTR. Restarting at once is standard practice (`TEMP_FAILURE_RETRY`); the bound is
/// only there so that a driver that keeps answering EINTR cannot spin the caller forever.
pub const IOCTL_EINTR_RETRIES: u32 = 10_000;

/// The pause before EAGAIN retry `n` (0-based): 10 µs doubling up to 10 ms.
pub fn eagain_pause(n: u32) -> Duration {
    Duration::from_micros((10u64 << n.min(10)).min(10_000))
}

/// The pauses of all [`IOCTL_EAGAIN_RETRIES`] retries together.
pub fn eagain_budget() -> Duration {
    (0..IOCTL_EAGAIN_RETRIES).map(eagain_pause).sum()
}

/// `sys.ioctl(fd, request, arg)` with the library's retry policy: EINTR is restarted at once,
/// EAGAIN after a short pause ([`eagain_pause`]), each a bounded number of times
/// ([`IOCTL_EINTR_RETRIES`], [`IOCTL_EAGAIN_RETRIES`]); then the errno is returned (build the
/// error with [`ioctl_error`]). Every ioctl of the backends goes through here (or through
/// [`ioctl_retrying_described`] / [`ioctl_retrying_untraced`]).
///
/// At log level trace, writes one record (target `tegragpu::ioctl`) naming the request
/// ([`crate::sys::request_name`]), the fd, the result and the duration; see [`IoctlTrace`].
///
/// # Safety
/// As for [`Sys::ioctl`].
pub unsafe fn ioctl_retrying(
    sys: &dyn Sys,
    fd: RawFd,
    request: u64,
    arg: usize,
) -> Result<i32, Errno> {
    ioctl_retrying_described(sys, fd, request, arg, &String::new)
}

/// [`ioctl_retrying`] whose trace record shows `describe()` — the call with its key arguments,
/// e.g. `NVGPU_GPU_IOCTL_ALLOC_AS(big_page_size=0, ...)` — instead of the bare request name.
/// `describe` runs only when tracing is on (and may return "" for the bare name).
///
/// # Safety
/// As for [`Sys::ioctl`].
pub unsafe fn ioctl_retrying_described(
    sys: &dyn Sys,
    fd: RawFd,
    request: u64,
    arg: usize,
    describe: &dyn Fn() -> String,
) -> Result<i32, Errno> {
    let t = IoctlTrace::start();
    let r = ioctl_retrying_untraced(sys, fd, request, arg);
    t.finish(fd, request, arg, describe, &r, None);
    r
}

/// [`ioctl_retrying`] without the trace record, for callers that write their own with
/// [`IoctlTrace`] (the RM backend adds the RM status that the ioctl's struct returns).
///
/// # Safety
/// As for [`Sys::ioctl`].
pub unsafe fn ioctl_retrying_untraced(
    sys: &dyn Sys,
    fd: RawFd,
    request: u64,
    arg: usize,
) -> Result<i32, Errno> {
    let mut eintr = 0u32;
    let mut eagain = 0u32;
    loop {
        match sys.ioctl(fd, request, arg) {
            Err(libc::EINTR) if eintr < IOCTL_EINTR_RETRIES => {
                eintr += 1;
                crate::log::trace!(
                    target: IOCTL_LOG_TARGET,
                    "{} fd={fd} -> EINTR, restart {eintr}",
                    crate::sys::request_name(request)
                );
            }
            Err(libc::EAGAIN) if eagain < IOCTL_EAGAIN_RETRIES => {
                crate::log::trace!(
                    target: IOCTL_LOG_TARGET,
                    "{} fd={fd} -> EAGAIN, retry {} after {} us",
                    crate::sys::request_name(request),
                    eagain + 1,
                    eagain_pause(eagain).as_micros()
                );
                std::thread::sleep(eagain_pause(eagain));
                eagain += 1;
            }
            r => return r,
        }
    }
}

/// The log target of the ioctl trace records.
pub const IOCTL_LOG_TARGET: &str = "tegragpu::ioctl";

/// Times one ioctl for its trace record; costs one relaxed atomic load when tracing is off.
///
/// Record format: `DESCRIPTION fd=N -> RESULT, T us`, where DESCRIPTION is the caller's
/// description or `NAME(arg=0x...)`, RESULT is `ok` (`ok = N` for a positive return value) or
/// the errno name (`EINVAL`), followed by the driver status where the caller passes one.
#[derive(Debug)]
pub struct IoctlTrace(Option<std::time::Instant>);

impl IoctlTrace {
    /// Starts timing if trace logging is on.
    #[inline]
    pub fn start() -> IoctlTrace {
        IoctlTrace(crate::log::enabled(crate::log::Level::Trace).then(std::time::Instant::now))
    }

    /// Writes the record (when started with tracing on). `status` adds the driver-level
    /// result, e.g. `RM status NV_ERR_INVALID_ARGUMENT (0x1f)`.
    pub fn finish(
        self,
        fd: RawFd,
        request: u64,
        arg: usize,
        describe: &dyn Fn() -> String,
        result: &Result<i32, Errno>,
        status: Option<&dyn Fn() -> Option<String>>,
    ) {
        let Some(t0) = self.0 else { return };
        let us = t0.elapsed().as_secs_f64() * 1e6;
        let mut desc = describe();
        if desc.is_empty() {
            desc = format!("{}(arg={arg:#x})", crate::sys::request_name(request));
        }
        let res = match result {
            Ok(0) => "ok".to_string(),
            Ok(v) => format!("ok = {v}"),
            Err(e) => crate::error::errno_name(*e),
        };
        let st = status
            .and_then(|f| f())
            .map(|s| format!(", {s}"))
            .unwrap_or_default();
        crate::log::trace!(
            target: IOCTL_LOG_TARGET,
            "{desc} fd={fd} -> {res}{st}, {us:.1} us"
        );
    }
}

/// The error for an ioctl that failed through [`ioctl_retrying`]: `what` names the ioctl and its
/// arguments; for EAGAIN and EINTR the message says that the retries ran out.
pub fn ioctl_error(what: impl std::fmt::Display, errno: Errno) -> Error {
    let mut e = Error::os(what, errno);
    match errno {
        libc::EAGAIN => e.message.push_str(&format!(
            "; still EAGAIN after {IOCTL_EAGAIN_RETRIES} retries over {} ms",
            eagain_budget().as_millis()
        )),
        libc::EINTR => e.message.push_str(&format!(
            "; still EINTR after {IOCTL_EINTR_RETRIES} restarts"
        )),
        _ => {}
    }
    e
}

/// Number of open file descriptors of this process (for leak tests).
pub fn open_fd_count() -> usize {
    std::fs::read_dir("/proc/self/fd")
        .map(|d| d.count())
        .unwrap_or(0)
}

/// Number of memory mappings of this process (for leak tests).
pub fn mapping_count() -> usize {
    std::fs::read_to_string("/proc/self/maps")
        .map(|s| s.lines().count())
        .unwrap_or(0)
}

/// `mbind(2)` with `MPOL_BIND`: the pages of `[ptr, ptr + len)` not yet allocated come from
/// host NUMA node `node` (below 1024).
///
/// # Safety
/// `[ptr, ptr + len)` is a mapping of the caller's.
pub unsafe fn bind_to_numa_node(ptr: *mut u8, len: usize, node: u32) -> Result<(), Errno> {
    const MPOL_BIND: libc::c_long = 2;
    if node >= 1024 {
        return Err(libc::EINVAL);
    }
    let mut mask = [0u64; 16];
    mask[node as usize / 64] |= 1 << (node % 64);
    // SAFETY: mbind reads `mask` (1024 bits) and changes the policy of the caller's mapping.
    let r = unsafe {
        libc::syscall(
            libc::SYS_mbind,
            ptr,
            len,
            MPOL_BIND,
            mask.as_ptr(),
            1025 as libc::c_ulong,
            0 as libc::c_uint,
        )
    };
    if r != 0 {
        return Err(std::io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EINVAL));
    }
    Ok(())
}
