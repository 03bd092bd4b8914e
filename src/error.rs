//! Library error type and stable status codes.

use std::fmt;

/// Stable status codes. Values are part of the C ABI: never renumber, never reuse.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Status {
    /// Success.
    Ok = 0,
    /// An argument is out of range, malformed or inconsistent.
    InvalidArgument = 1,
    /// A required pointer argument was NULL.
    NullPointer = 2,
    /// A handle is NULL, destroyed, or of the wrong type.
    InvalidHandle = 3,
    /// Host or GPU memory (or VA space, or a ring) is exhausted.
    OutOfMemory = 4,
    /// A named object (device, kernel, file, symbol) does not exist.
    NotFound = 5,
    /// The operation is not supported by this device, backend or build.
    NotSupported = 6,
    /// A wait ran past its timeout.
    Timeout = 7,
    /// The GPU reported a fault (MMU fault, exception, channel error). Sticky per device.
    DeviceFault = 8,
    /// A system call to the kernel driver failed (the message names the call and errno).
    Os = 9,
    /// A cubin (CUDA ELF) is malformed, truncated or for another GPU.
    InvalidCubin = 10,
    /// A launch does not fit the kernel: block, shared memory, parameter size.
    InvalidLaunch = 11,
    /// Run-time compilation (libnvrtc) failed; the message carries the compiler log.
    CompileError = 12,
    /// An optional shared library (libnvrtc, libcuda) is not installed.
    LibraryMissing = 13,
    /// The kernel driver's version or branch is not supported.
    UnsupportedDriver = 14,
    /// A bug in libtegragpu (a caught panic or a broken invariant).
    Internal = 15,
    /// The device is lost after an earlier fault; close it and open it again.
    DeviceLost = 16,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Ok => "TG_OK: success",
            Status::InvalidArgument => "TG_ERROR_INVALID_ARGUMENT: invalid argument",
            Status::NullPointer => "TG_ERROR_NULL_POINTER: NULL pointer argument",
            Status::InvalidHandle => {
                "TG_ERROR_INVALID_HANDLE: NULL, destroyed or wrong-type handle"
            }
            Status::OutOfMemory => "TG_ERROR_OUT_OF_MEMORY: out of memory",
            Status::NotFound => "TG_ERROR_NOT_FOUND: not found",
            Status::NotSupported => "TG_ERROR_NOT_SUPPORTED: not supported",
            Status::Timeout => "TG_ERROR_TIMEOUT: timed out",
            Status::DeviceFault => "TG_ERROR_DEVICE_FAULT: the GPU reported a fault",
            Status::Os => "TG_ERROR_OS: a system call failed",
            Status::InvalidCubin => "TG_ERROR_INVALID_CUBIN: malformed or incompatible cubin",
            Status::InvalidLaunch => "TG_ERROR_INVALID_LAUNCH: launch does not fit the kernel",
            Status::CompileError => "TG_ERROR_COMPILE: run-time compilation failed",
            Status::LibraryMissing => {
                "TG_ERROR_LIBRARY_MISSING: an optional library is not installed"
            }
            Status::UnsupportedDriver => {
                "TG_ERROR_UNSUPPORTED_DRIVER: kernel driver version not supported"
            }
            Status::Internal => "TG_ERROR_INTERNAL: internal error in libtegragpu",
            Status::DeviceLost => "TG_ERROR_DEVICE_LOST: device unusable after an earlier fault",
        }
    }
}

/// An error: a status code, the errno when a system call failed, and a message that names the
/// call and the values involved.
#[derive(Clone, PartialEq, Eq)]
pub struct Error {
    pub status: Status,
    pub errno: Option<i32>,
    pub message: String,
}

impl Error {
    pub fn new(status: Status, message: impl Into<String>) -> Self {
        Error {
            status,
            errno: None,
            message: message.into(),
        }
    }
    /// A failed system call: `what` names the call and its values, e.g.
    /// `"NVGPU_GPU_IOCTL_ALLOC_AS(big_page_size=65536)"`.
    pub fn os(what: impl fmt::Display, errno: i32) -> Self {
        Error {
            status: Status::Os,
            errno: Some(errno),
            message: format!(
                "{what} failed: {} ({})",
                errno_name(errno),
                std::io::Error::from_raw_os_error(errno)
            ),
        }
    }
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(Status::InvalidArgument, message)
    }
    /// Prefix the message with the public call that failed, e.g. `tg_buf_alloc`.
    pub fn context(mut self, call: &str) -> Self {
        self.message = format!("{call}: {}", self.message);
        self
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}
impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}: {}", self.status, self.message)
    }
}
impl std::error::Error for Error {}

pub type Result<T> = std::result::Result<T, Error>;

/// Symbolic name of an errno value ("EINVAL"), for messages: the name `nix` gives it, "E?" for a
/// value it does not know.
pub fn errno_name(e: i32) -> String {
    match nix::errno::Errno::from_raw(e) {
        nix::errno::Errno::UnknownErrno => "E?".to_string(),
        n => format!("{n:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errno_names_and_os_messages() {
        assert_eq!(errno_name(libc::EAGAIN), "EAGAIN");
        assert_eq!(errno_name(libc::EWOULDBLOCK), "EAGAIN");
        assert_eq!(errno_name(libc::EMFILE), "EMFILE");
        assert_eq!(errno_name(libc::EOWNERDEAD), "EOWNERDEAD");
        assert_eq!(errno_name(0), "E?");
        assert_eq!(errno_name(-1), "E?");
        assert_eq!(errno_name(100_000), "E?");
        let e = Error::os(
            "NVGPU_GPU_IOCTL_ALLOC_AS(big_page_size=65536)",
            libc::EINVAL,
        );
        assert_eq!(e.status, Status::Os);
        assert_eq!(e.errno, Some(libc::EINVAL));
        assert_eq!(
            e.message,
            "NVGPU_GPU_IOCTL_ALLOC_AS(big_page_size=65536) failed: EINVAL (Invalid argument (os \
             error 22))"
        );
    }
}
