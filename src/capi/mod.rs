//! The C API: `extern "C"` functions over [`crate::core`], declared in `include/tegragpu.h`.
//!
//! The header is generated from this file by cbindgen (configuration: `cbindgen.toml`); the doc
//! comments here are the header's documentation. `tests/header.rs` fails when the committed header
//! is stale; `TEGRAGPU_BLESS=1 cargo test --test header` (or `scripts/gen-header.sh`) rewrites it.
//!
//! Conventions (they hold for every function below):
//! - Every fallible function returns a [`tg_status`]; outputs go through out-parameters that are
//!   written only on success.
//! - On failure, [`tg_last_error_message`] (thread-local) names the call and the values involved.
//! - No input crashes the library: NULL pointers give `TG_ERROR_NULL_POINTER`; NULL, destroyed and
//!   wrong-type handles give `TG_ERROR_INVALID_HANDLE` (see `handles.rs` for the design); every
//!   body runs inside `catch_unwind` (a panic gives `TG_ERROR_INTERNAL`).
//! - Destroying NULL is a no-op.

#![allow(non_camel_case_types)]

pub(crate) mod handles;

#[doc(hidden)]
pub use handles::hold_table_lock_for;
pub use handles::live_handles;

use crate::core::{
    Buffer, Device, Kernel, LaunchConfig, MemFlags, Module, Queue, QueueKind, Signal,
};
use crate::error::{Error, Result, Status};
use handles::{Kind, Object};
use parking_lot::Mutex;
use std::cell::RefCell;
use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

// ---------------------------------------------------------------------------------------------
// Version

/// Major version of the library this header belongs to. Incompatible ABI changes bump it (and
/// the soname, `libtegragpu.so.<major>`).
pub const TG_VERSION_MAJOR: u32 = 0;
/// Minor version: backwards-compatible additions.
pub const TG_VERSION_MINOR: u32 = 1;
/// Patch version: fixes only.
pub const TG_VERSION_PATCH: u32 = 0;

/// Wait without a deadline (pass as `timeout_ns`).
pub const TG_TIMEOUT_INFINITE: u64 = 0xFFFF_FFFF_FFFF_FFFF;

// ---------------------------------------------------------------------------------------------
// Status codes

/// Result of every fallible call. The values are stable: never renumbered, never reused.
///
/// After any status other than `TG_OK`, `tg_last_error_message()` describes the failure.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum tg_status {
    /// Success.
    TG_OK = 0,
    /// An argument is out of range, malformed or inconsistent (zero size, unknown flag bits,
    /// wrong `struct_size`, range outside a buffer, ...).
    TG_ERROR_INVALID_ARGUMENT = 1,
    /// A required pointer argument was NULL.
    TG_ERROR_NULL_POINTER = 2,
    /// A handle is NULL, destroyed, or of the wrong type.
    TG_ERROR_INVALID_HANDLE = 3,
    /// Host or GPU memory (or GPU virtual address space, or a ring) is exhausted, or a size is
    /// larger than the library accepts.
    TG_ERROR_OUT_OF_MEMORY = 4,
    /// A named object (device, kernel, file) does not exist; also: no fault to report.
    TG_ERROR_NOT_FOUND = 5,
    /// The operation is not supported by this device, backend or build.
    TG_ERROR_NOT_SUPPORTED = 6,
    /// A wait ran past its timeout.
    TG_ERROR_TIMEOUT = 7,
    /// The GPU reported a fault (MMU fault, exception, channel error). Sticky per device: see
    /// `tg_device_get_fault()`.
    TG_ERROR_DEVICE_FAULT = 8,
    /// A system call to the kernel driver failed (the message names the call and errno).
    TG_ERROR_OS = 9,
    /// A cubin (CUDA ELF) is malformed, truncated or built for another GPU.
    TG_ERROR_INVALID_CUBIN = 10,
    /// A launch does not fit the kernel: block size, shared memory, parameter size or count.
    TG_ERROR_INVALID_LAUNCH = 11,
    /// Run-time compilation (libnvrtc) failed; the message carries the compiler log.
    TG_ERROR_COMPILE = 12,
    /// An optional shared library (libnvrtc) is not installed.
    TG_ERROR_LIBRARY_MISSING = 13,
    /// The kernel driver's version or branch is not supported.
    TG_ERROR_UNSUPPORTED_DRIVER = 14,
    /// A bug in libtegragpu (a caught panic or a broken invariant).
    TG_ERROR_INTERNAL = 15,
    /// The device is unusable after an earlier fault; close it and open it again.
    TG_ERROR_DEVICE_LOST = 16,
}

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

/// A `tg_status` received from C, where any integer may arrive. Appears as `tg_status` in the
/// header (see `cbindgen.toml`); `#[repr(transparent)]` over `i32`, the C enum's ABI.
#[repr(transparent)]
#[derive(Debug, Clone, Copy)]
pub struct tg_status_arg(pub i32);

/// A `tg_queue_kind` received from C (any integer may arrive); appears as `tg_queue_kind`.
#[repr(transparent)]
#[derive(Debug, Clone, Copy)]
pub struct tg_queue_kind_arg(pub i32);

// ---------------------------------------------------------------------------------------------
// Opaque handles

/// An open GPU (real or emulated).
///
/// Thread safety: all `tg_device_*` functions may be called from any thread concurrently.
/// Closing a device while its buffers, modules, kernels, queues or signals are alive is allowed:
/// they keep the device open until the last of them is destroyed.
pub struct tg_device {
    _opaque: [u8; 0],
}

/// GPU memory that the CPU can access through `tg_buf_cpu_ptr()` (on Orin the memory is shared:
/// no copy is needed).
///
/// Thread safety: all `tg_buf_*` functions may be called from any thread concurrently. The
/// memory itself is not synchronized: the caller orders CPU accesses against GPU work (signals,
/// `tg_queue_synchronize()`).
pub struct tg_buf {
    _opaque: [u8; 0],
}

/// A loaded cubin. Thread safety: any thread, concurrently.
pub struct tg_module {
    _opaque: [u8; 0],
}

/// A kernel of a module; keeps its module loaded. Thread safety: any thread, concurrently; one
/// kernel may be launched on several queues.
pub struct tg_kernel {
    _opaque: [u8; 0],
}

/// A command queue (one GPU channel). Launches, copies, signals, waits and barriers are recorded
/// and made visible to the GPU by `tg_queue_submit()`; commands on one queue run in order.
///
/// Thread safety: every function may be called from any thread; calls on the same queue are
/// serialized by a lock inside the queue (`tg_queue_synchronize()` holds it while it waits).
/// For parallel recording, use one queue per thread.
pub struct tg_queue {
    _opaque: [u8; 0],
}

/// A 64-bit timeline signal in GPU-visible memory: GPU queues write and wait for it, the CPU
/// reads, sets and waits for it. Thread safety: any thread, concurrently.
pub struct tg_signal {
    _opaque: [u8; 0],
}

// ---------------------------------------------------------------------------------------------
// Plain types

/// Which kernel driver a device is driven through.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum tg_backend {
    /// Jetson Orin: nvgpu.ko + nvmap.ko (or the emulated Orin).
    TG_BACKEND_NVGPU = 0,
    /// Desktop NVIDIA driver: nvidia.ko + nvidia-uvm.ko.
    TG_BACKEND_RM = 1,
}

/// Which engine a queue feeds.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum tg_queue_kind {
    /// Kernel launches and SM copies with `tg_queue_copy()` (and signals, waits, barriers).
    TG_QUEUE_COMPUTE = 0,
    /// Copy-engine transfers with `tg_queue_copy()` (and signals, waits, barriers; no launches).
    TG_QUEUE_COPY = 1,
}

/// `tg_buf_alloc()` flag: CPU-cached mapping (fast CPU reads). The default when none of
/// `TG_BUF_CPU_CACHED`, `TG_BUF_WRITE_COMBINED`, `TG_BUF_DEVICE_LOCAL` is given. On Orin: shared
/// memory, cached. On desktop GPUs: pinned host memory (the GPU reaches it over PCIe).
pub const TG_BUF_CPU_CACHED: u32 = 1;
/// `tg_buf_alloc()` flag: write-combined CPU mapping (for data the CPU only writes). On desktop
/// GPUs: video memory, mapped for the CPU through BAR1 at allocation (CPU reads are very slow).
pub const TG_BUF_WRITE_COMBINED: u32 = 2;
/// `tg_buf_alloc()` flag: zero the memory before returning it.
pub const TG_BUF_ZEROED: u32 = 4;
/// `tg_buf_alloc()` flag: memory placed for the GPU. On desktop GPUs: video memory (full GPU
/// bandwidth), CPU-mapped through BAR1 only when `tg_buf_cpu_ptr()` is first called (CPU writes
/// fast, reads very slow); allocation is fastest. On Orin the same as `TG_BUF_CPU_CACHED`.
pub const TG_BUF_DEVICE_LOCAL: u32 = 8;
const TG_BUF_KNOWN_FLAGS: u32 =
    TG_BUF_CPU_CACHED | TG_BUF_WRITE_COMBINED | TG_BUF_ZEROED | TG_BUF_DEVICE_LOCAL;

/// Static facts about a device (`tg_device_get_info()`).
///
/// Set `struct_size = sizeof(tg_device_info)` before the call; on success the library sets it to
/// the number of bytes it filled.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct tg_device_info {
    /// In: `sizeof(tg_device_info)`. Out: bytes filled.
    pub struct_size: u32,
    /// Chip or product name, NUL-terminated (truncated to 63 bytes): "ga10b", "NVIDIA H200".
    pub name: [c_char; 64],
    /// Architecture id as the driver reports it (nvgpu: 0x170 = GA10B; RM: e.g. 0x180 = GH100).
    pub arch: u32,
    /// SM version major, e.g. 8 for Orin (sm_87), 9 for Hopper (sm_90).
    pub sm_major: u32,
    /// SM version minor, e.g. 7 for Orin (sm_87).
    pub sm_minor: u32,
    /// Number of enabled SMs.
    pub sm_count: u32,
    /// Memory usable for allocations, bytes (Orin: system memory shared with the CPU).
    pub memory_bytes: u64,
    /// Width of the GPU virtual address space, bits.
    pub va_bits: u32,
    /// Kernel driver the device is driven through.
    pub backend: tg_backend,
    /// True when the device is the in-process emulated Orin.
    pub emulated: bool,
}

/// A GPU fault (`tg_device_get_fault()`). Set `struct_size = sizeof(tg_fault_report)` before
/// the call; on success the library sets it to the number of bytes it filled.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct tg_fault_report {
    /// In: `sizeof(tg_fault_report)`. Out: bytes filled.
    pub struct_size: u32,
    /// Driver error code (nvgpu notifier: 31 = MMU fault, 13 = graphics exception, 8 = timeout).
    pub code: u32,
    /// Whether `address` holds the faulting GPU virtual address.
    pub has_address: bool,
    /// Faulting GPU virtual address (valid when `has_address`).
    pub address: u64,
    /// Description naming the queue and what happened, NUL-terminated (truncated to 255 bytes).
    pub message: [c_char; 256],
}

/// What a kernel needs and allows (`tg_kernel_get_attributes()`). Set
/// `struct_size = sizeof(tg_kernel_attributes)` before the call; on success the library sets it
/// to the number of bytes it filled.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct tg_kernel_attributes {
    /// In: `sizeof(tg_kernel_attributes)`. Out: bytes filled.
    pub struct_size: u32,
    /// Number of parameters (see `tg_kernel_get_param()`).
    pub num_params: u32,
    /// Total bytes of the packed parameter block `tg_launch()` takes.
    pub param_bytes: u32,
    /// Registers per thread.
    pub registers: u32,
    /// Static shared memory the kernel declares, bytes.
    pub static_shared_bytes: u32,
    /// Local memory (stack) per thread, bytes.
    pub local_bytes_per_thread: u32,
    /// Largest block (threads, x*y*z) a launch may use.
    pub max_threads_per_block: u32,
    /// Largest `dynamic_shared_bytes` a launch may request.
    pub max_dynamic_shared_bytes: u32,
}

/// Grid, block and dynamic shared memory of one launch. Set
/// `struct_size = sizeof(tg_launch_config)`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct tg_launch_config {
    /// `sizeof(tg_launch_config)`.
    pub struct_size: u32,
    /// Blocks in x, y, z (each at least 1; x ≤ 2^31-1, y and z ≤ 65535).
    pub grid: [u32; 3],
    /// Threads per block in x, y, z (each at least 1; x, y ≤ 1024, z ≤ 64; the product at most
    /// the kernel's `max_threads_per_block`).
    pub block: [u32; 3],
    /// Dynamic shared memory per block, bytes (at most the kernel's `max_dynamic_shared_bytes`).
    pub dynamic_shared_bytes: u32,
    /// `TG_LAUNCH_*` bits; 0 for an ordinary launch. (Present when `struct_size` ≥ 36; callers
    /// built against the 32-byte struct of version 0.1 keep working.)
    pub flags: u32,
    /// Thread-block cluster shape; `{0, 0, 0}` (or `{1, 1, 1}`) for none. Clusters are not
    /// supported yet: any other value returns `TG_ERROR_NOT_SUPPORTED`. (Present when
    /// `struct_size` ≥ 48.)
    pub cluster: [u32; 3],
}

/// `tg_launch_config.flags`: launch the grid cooperatively (`cuLaunchCooperativeKernel`), for
/// kernels that synchronise the whole grid (`cooperative_groups::this_grid().sync()`). Every
/// block must be resident at once: a grid larger than `tg_kernel_max_active_blocks()` × the SM
/// count returns `TG_ERROR_INVALID_LAUNCH`.
pub const TG_LAUNCH_COOPERATIVE: u32 = 1;
const TG_LAUNCH_KNOWN_FLAGS: u32 = TG_LAUNCH_COOPERATIVE;
/// Size of `tg_launch_config` in version 0.1 (no `flags`, no `cluster`).
const LAUNCH_CONFIG_V1_SIZE: usize = 32;

/// `tg_device_set_limit()` / `tg_device_get_limit()`: stack bytes per GPU thread
/// (`CU_LIMIT_STACK_SIZE`); 1024 by default.
pub const TG_LIMIT_STACK_SIZE: u32 = 0;

// ---------------------------------------------------------------------------------------------
// Call boundary: panic catching, last-error text, argument helpers

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
fn run(call: &str, body: impl FnOnce() -> Result<()>) -> tg_status {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => tg_status::TG_OK,
        Ok(Err(e)) => {
            set_last_error(&with_call(call, &e.message));
            e.status.into()
        }
        Err(payload) => {
            let what = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".to_string());
            set_last_error(&format!("{call}: internal error (panic: {what})"));
            tg_status::TG_ERROR_INTERNAL
        }
    }
}

fn null(what: &str) -> Error {
    Error::new(Status::NullPointer, format!("{what} is NULL"))
}

/// Check an out-pointer; returns it for the final write.
fn out_ptr<T>(p: *mut T, what: &str) -> Result<*mut T> {
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
unsafe fn c_str<'a>(p: *const c_char, what: &str) -> Result<&'a str> {
    if p.is_null() {
        return Err(null(what));
    }
    CStr::from_ptr(p)
        .to_str()
        .map_err(|e| Error::invalid(format!("{what} is not valid UTF-8 ({e})")))
}

fn device(h: *const tg_device, arg: &str) -> Result<Device> {
    match handles::get(h as usize, Kind::Device, arg)? {
        Object::Device(d) => Ok(d),
        _ => Err(Error::new(Status::Internal, "handle table kind mismatch")),
    }
}

fn buffer(h: *const tg_buf, arg: &str) -> Result<Arc<Buffer>> {
    match handles::get(h as usize, Kind::Buf, arg)? {
        Object::Buf(b) => Ok(b),
        _ => Err(Error::new(Status::Internal, "handle table kind mismatch")),
    }
}

fn module(h: *const tg_module, arg: &str) -> Result<Module> {
    match handles::get(h as usize, Kind::Module, arg)? {
        Object::Module(m) => Ok(m),
        _ => Err(Error::new(Status::Internal, "handle table kind mismatch")),
    }
}

fn kernel(h: *const tg_kernel, arg: &str) -> Result<Kernel> {
    match handles::get(h as usize, Kind::Kernel, arg)? {
        Object::Kernel(k) => Ok(k),
        _ => Err(Error::new(Status::Internal, "handle table kind mismatch")),
    }
}

fn queue(h: *const tg_queue, arg: &str) -> Result<Arc<Mutex<Queue>>> {
    match handles::get(h as usize, Kind::Queue, arg)? {
        Object::Queue(q) => Ok(q),
        _ => Err(Error::new(Status::Internal, "handle table kind mismatch")),
    }
}

fn signal(h: *const tg_signal, arg: &str) -> Result<Arc<Signal>> {
    match handles::get(h as usize, Kind::Signal, arg)? {
        Object::Signal(s) => Ok(s),
        _ => Err(Error::new(Status::Internal, "handle table kind mismatch")),
    }
}

fn same_device(a: &Device, b: &Device) -> bool {
    Arc::ptr_eq(&a.inner, &b.inner)
}

/// Check the `struct_size` the caller put at the start of an output struct.
///
/// # Safety
/// `out` points to at least 4 readable bytes.
unsafe fn check_out_struct_size<T>(out: *const T, what: &str, c_type: &str) -> Result<()> {
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
fn fill_c_string(dst: &mut [c_char], s: &str) {
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

fn mem_flags(flags: u32) -> Result<MemFlags> {
    let unknown = flags & !TG_BUF_KNOWN_FLAGS;
    if unknown != 0 {
        return Err(Error::invalid(format!(
            "flags {flags:#x} has unknown bits {unknown:#x} (known: TG_BUF_CPU_CACHED=1, TG_BUF_WRITE_COMBINED=2, TG_BUF_ZEROED=4, TG_BUF_DEVICE_LOCAL=8)"
        )));
    }
    let placement = flags & (TG_BUF_CPU_CACHED | TG_BUF_WRITE_COMBINED | TG_BUF_DEVICE_LOCAL);
    if placement.count_ones() > 1 {
        return Err(Error::invalid(format!(
            "flags {flags:#x}: TG_BUF_CPU_CACHED, TG_BUF_WRITE_COMBINED and TG_BUF_DEVICE_LOCAL are mutually exclusive"
        )));
    }
    Ok(MemFlags {
        cpu_cached: flags & (TG_BUF_WRITE_COMBINED | TG_BUF_DEVICE_LOCAL) == 0,
        write_combined: flags & TG_BUF_WRITE_COMBINED != 0,
        zeroed: flags & TG_BUF_ZEROED != 0,
    })
}

/// Read and check a launch configuration.
///
/// # Safety
/// `cfg` is NULL or points to a `tg_launch_config` whose first 4 bytes are `struct_size`.
unsafe fn launch_config(cfg: *const tg_launch_config) -> Result<LaunchConfig> {
    if cfg.is_null() {
        return Err(null("cfg"));
    }
    let size = std::ptr::read_unaligned(cfg as *const u32) as usize;
    let full = std::mem::size_of::<tg_launch_config>();
    if size != LAUNCH_CONFIG_V1_SIZE && size != LAUNCH_CONFIG_V1_SIZE + 4 && size < full {
        return Err(Error::invalid(format!(
            "cfg->struct_size is {size}; set it to sizeof(tg_launch_config) ({full})"
        )));
    }
    // Read only the bytes the caller's struct has.
    let mut c = tg_launch_config {
        struct_size: 0,
        grid: [0; 3],
        block: [0; 3],
        dynamic_shared_bytes: 0,
        flags: 0,
        cluster: [0; 3],
    };
    std::ptr::copy_nonoverlapping(
        cfg as *const u8,
        &mut c as *mut tg_launch_config as *mut u8,
        size.min(full),
    );
    let unknown = c.flags & !TG_LAUNCH_KNOWN_FLAGS;
    if unknown != 0 {
        return Err(Error::invalid(format!(
            "cfg->flags {:#x} has unknown bits {unknown:#x} (known: TG_LAUNCH_COOPERATIVE=1)",
            c.flags
        )));
    }
    if c.cluster != [0; 3] && c.cluster != [1; 3] {
        return Err(Error::new(
            Status::NotSupported,
            format!(
                "cfg->cluster is {:?}: thread-block clusters are not supported by libtegragpu",
                c.cluster
            ),
        ));
    }
    Ok(LaunchConfig {
        grid: c.grid,
        block: c.block,
        dynamic_shared_bytes: c.dynamic_shared_bytes,
        cooperative: c.flags & TG_LAUNCH_COOPERATIVE != 0,
    })
}

fn register(obj: Object) -> Result<usize> {
    handles::insert(obj)
}

// ---------------------------------------------------------------------------------------------
// Library

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
    static EMPTY: &CStr = c"";
    catch_unwind(|| {
        LAST_ERROR.try_with(|s| s.try_borrow().map(|c| c.as_ptr()).unwrap_or(EMPTY.as_ptr()))
    })
    .ok()
    .and_then(|r| r.ok())
    .unwrap_or(EMPTY.as_ptr())
}

// ---------------------------------------------------------------------------------------------
// Device

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

/// Wait until all work submitted on every queue of the device has completed.
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

// ---------------------------------------------------------------------------------------------
// Buffers

/// Allocate GPU memory that the CPU can access.
///
/// - `size_bytes`: at least 1 (rounded up to whole pages internally; `tg_buf_size()` reports the
///   requested size).
/// - `flags`: at most one of `TG_BUF_CPU_CACHED`, `TG_BUF_WRITE_COMBINED`, `TG_BUF_DEVICE_LOCAL`
///   (placement; see each flag), plus `TG_BUF_ZEROED`; 0 = CPU-cached, not zeroed.
/// - `out`: receives the new buffer handle.
///
/// Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_NULL_POINTER`;
/// `TG_ERROR_INVALID_ARGUMENT` (`size_bytes` 0, unknown flag bits, conflicting flags);
/// `TG_ERROR_OUT_OF_MEMORY` (too large or memory exhausted); `TG_ERROR_DEVICE_FAULT`;
/// `TG_ERROR_OS`.
///
/// Ownership: the caller owns `*out` and releases it with `tg_buf_free()`. The buffer keeps its
/// device open. Thread safety: any thread.
///
/// # Safety
/// `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tg_buf_alloc(
    dev: *const tg_device,
    size_bytes: u64,
    flags: u32,
    out: *mut *mut tg_buf,
) -> tg_status {
    run("tg_buf_alloc", || {
        let d = device(dev, "dev")?;
        let out = out_ptr(out, "out")?;
        let flags = mem_flags(flags)?;
        let b = d.alloc(size_bytes, flags)?;
        let h = register(Object::Buf(Arc::new(b)))?;
        out.write(h as *mut tg_buf);
        Ok(())
    })
}

/// Free a buffer. The memory is released once GPU work already submitted no longer uses it;
/// CPU pointers from `tg_buf_cpu_ptr()` must not be used after this call. NULL is a no-op.
///
/// Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE` (destroyed or not a buffer).
/// Thread safety: any thread; the handle must not be used after this call.
///
/// # Safety
/// None beyond the handle contract.
#[no_mangle]
pub unsafe extern "C" fn tg_buf_free(buf: *mut tg_buf) -> tg_status {
    run("tg_buf_free", || {
        handles::remove(buf as usize, Kind::Buf, "buf").map(|_| ())
    })
}

/// The CPU address of the buffer's first byte. Valid until `tg_buf_free()`; the size is
/// `tg_buf_size()`. On Orin the memory is shared with the CPU. On desktop GPUs video memory is
/// mapped for the CPU (through BAR1) on the first call: CPU writes are fast, CPU reads are slow
/// (use `TG_BUF_CPU_CACHED` for buffers the CPU reads back).
///
/// Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_NULL_POINTER`; `TG_ERROR_OS` or
/// `TG_ERROR_OUT_OF_MEMORY` when the CPU mapping cannot be made (BAR1 space exhausted).
/// Thread safety: any thread.
///
/// # Safety
/// `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tg_buf_cpu_ptr(buf: *const tg_buf, out: *mut *mut c_void) -> tg_status {
    run("tg_buf_cpu_ptr", || {
        let b = buffer(buf, "buf")?;
        let out = out_ptr(out, "out")?;
        // Desktop video memory is CPU-mapped (BAR1) on first use; report a failed mapping.
        out.write(b.map_cpu()? as *mut c_void);
        Ok(())
    })
}

/// The GPU virtual address of the buffer's first byte: pass it to kernels as a pointer.
///
/// Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_NULL_POINTER`.
/// Thread safety: any thread.
///
/// # Safety
/// `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tg_buf_gpu_address(buf: *const tg_buf, out: *mut u64) -> tg_status {
    run("tg_buf_gpu_address", || {
        let b = buffer(buf, "buf")?;
        let out = out_ptr(out, "out")?;
        out.write_unaligned(b.gpu_va());
        Ok(())
    })
}

/// The buffer's size in bytes, as requested from `tg_buf_alloc()`.
///
/// Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_NULL_POINTER`.
/// Thread safety: any thread.
///
/// # Safety
/// `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tg_buf_size(buf: *const tg_buf, out: *mut u64) -> tg_status {
    run("tg_buf_size", || {
        let b = buffer(buf, "buf")?;
        let out = out_ptr(out, "out")?;
        out.write_unaligned(b.size());
        Ok(())
    })
}

/// Export the buffer as a dma-buf file descriptor (for sharing with other drivers/processes).
///
/// Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_NULL_POINTER`;
/// `TG_ERROR_NOT_SUPPORTED` (backend without dma-buf export); `TG_ERROR_OS`.
///
/// Ownership: the caller owns `*fd_out` and closes it with `close()`.
/// Thread safety: any thread.
///
/// # Safety
/// `fd_out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tg_buf_export_dmabuf(buf: *const tg_buf, fd_out: *mut c_int) -> tg_status {
    run("tg_buf_export_dmabuf", || {
        let b = buffer(buf, "buf")?;
        let out = out_ptr(fd_out, "fd_out")?;
        let fd = b.export_dmabuf()?;
        out.write_unaligned(fd);
        Ok(())
    })
}

// ---------------------------------------------------------------------------------------------
// Modules and kernels

/// Load GPU code from memory: what `cuModuleLoadData` takes.
///
/// - `data`, `size_bytes`: a cubin (`nvcc -cubin`, nvrtc, `nvlink`); a fatbin (`nvcc -fatbin`),
///   or a host object or shared library that holds one (its `.nv_fatbin` section): the SASS
///   for the device's SM is chosen (same major version, highest minor not above the device's),
///   else the newest PTX not above it is compiled for the device; or PTX text (`nvcc -ptx`),
///   compiled for the device. PTX is compiled with the NVIDIA driver's PTX compiler
///   (`libnvidia-ptxjitcompiler.so.1`) or nvJitLink (`TEGRAGPU_PTXJIT` names either). The
///   library copies what it needs, so the memory may be freed after the call.
/// - `out`: receives the new module handle.
///
/// Kernels that need a feature libtegragpu lacks (textures, clusters, device printf, dynamic
/// parallelism) do not stop the module from loading: `tg_module_get_kernel()` refuses them
/// with `TG_ERROR_NOT_SUPPORTED` naming the feature.
///
/// Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_NULL_POINTER`;
/// `TG_ERROR_INVALID_ARGUMENT` (`size_bytes` 0); `TG_ERROR_INVALID_CUBIN` (malformed, or no
/// code for the device's SM version); `TG_ERROR_NOT_SUPPORTED` (e.g. unlinked `-rdc` objects);
/// `TG_ERROR_LIBRARY_MISSING` (PTX to compile and no PTX compiler installed);
/// `TG_ERROR_COMPILE` (PTX rejected; the message carries the log); `TG_ERROR_OUT_OF_MEMORY`;
/// `TG_ERROR_DEVICE_FAULT`.
///
/// Ownership: the caller owns `*out` and releases it with `tg_module_destroy()`.
/// Thread safety: any thread.
///
/// # Safety
/// `data` is NULL or readable for `size_bytes` bytes; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tg_module_load(
    dev: *const tg_device,
    data: *const c_void,
    size_bytes: usize,
    out: *mut *mut tg_module,
) -> tg_status {
    run("tg_module_load", || {
        let d = device(dev, "dev")?;
        if data.is_null() {
            return Err(null("data"));
        }
        let out = out_ptr(out, "out")?;
        if size_bytes == 0 {
            return Err(Error::invalid("size_bytes is 0"));
        }
        if size_bytes > isize::MAX as usize {
            return Err(Error::invalid(format!(
                "size_bytes {size_bytes} is larger than any object"
            )));
        }
        let bytes = std::slice::from_raw_parts(data as *const u8, size_bytes);
        let m = d.load_module(bytes)?;
        let h = register(Object::Module(m))?;
        out.write(h as *mut tg_module);
        Ok(())
    })
}

/// The largest file `tg_module_load_file()` reads: 1 GiB (the largest cubins and fatbins are a
/// few hundred MiB).
const MODULE_FILE_MAX_BYTES: u64 = 1 << 30;

/// Read a module file for `tg_module_load_file()`: open with `O_NONBLOCK` (a FIFO cannot block),
/// `fstat`, refuse anything that is not a regular file or is larger than
/// [`MODULE_FILE_MAX_BYTES`], then read at most that many bytes (the file may grow meanwhile).
fn read_module_file(path: &str) -> Result<Vec<u8>> {
    use std::io::Read;
    use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
    let io_err = |op: &str, e: std::io::Error| match e.kind() {
        std::io::ErrorKind::NotFound => {
            Error::new(Status::NotFound, format!("cannot read \"{path}\": {e}"))
        }
        _ => match e.raw_os_error() {
            Some(errno) => Error::os(format!("{op}(\"{path}\")"), errno),
            None => Error::new(Status::Os, format!("cannot read \"{path}\": {e}")),
        },
    };
    let too_big = |size: &dyn std::fmt::Display| {
        Error::invalid(format!(
            "\"{path}\" is {size} bytes, larger than the {MODULE_FILE_MAX_BYTES} bytes (1 GiB) \
             a module file may have"
        ))
    };
    // std adds O_CLOEXEC; O_NOCTTY keeps a terminal from becoming the controlling one.
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(|e| io_err("open", e))?;
    let md = f.metadata().map_err(|e| io_err("fstat", e))?;
    let ft = md.file_type();
    if !ft.is_file() {
        let kind = if ft.is_dir() {
            "a directory"
        } else if ft.is_fifo() {
            "a FIFO (named pipe)"
        } else if ft.is_char_device() {
            "a character device"
        } else if ft.is_block_device() {
            "a block device"
        } else if ft.is_socket() {
            "a socket"
        } else {
            "of an unknown file type"
        };
        return Err(Error::invalid(format!(
            "\"{path}\" is {kind}, not a regular file"
        )));
    }
    if md.len() > MODULE_FILE_MAX_BYTES {
        return Err(too_big(&md.len()));
    }
    let mut bytes = Vec::with_capacity(md.len() as usize);
    f.take(MODULE_FILE_MAX_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| io_err("read", e))?;
    if bytes.len() as u64 > MODULE_FILE_MAX_BYTES {
        return Err(too_big(&format_args!("more than {MODULE_FILE_MAX_BYTES}")));
    }
    Ok(bytes)
}

/// Load a cubin from a file.
///
/// The file must be a regular file of at most 1 GiB (2^30 bytes). It is opened with
/// `O_NONBLOCK`, so a FIFO cannot block the call, and checked with `fstat` before anything is
/// read: directories, FIFOs, character and block devices (e.g. `/dev/zero`) and sockets are
/// refused, as are larger files.
///
/// Returns what `tg_module_load()` returns, and `TG_ERROR_NOT_FOUND` (no such file),
/// `TG_ERROR_INVALID_ARGUMENT` (not a regular file: the message names the path and its type; or
/// larger than 1 GiB: the message names the path and its size) or `TG_ERROR_OS` (other open or
/// read errors; the message names the path and errno).
///
/// Ownership: the caller owns `*out` and releases it with `tg_module_destroy()`.
/// Thread safety: any thread.
///
/// # Safety
/// `path` is NULL or a NUL-terminated string; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tg_module_load_file(
    dev: *const tg_device,
    path: *const c_char,
    out: *mut *mut tg_module,
) -> tg_status {
    run("tg_module_load_file", || {
        let d = device(dev, "dev")?;
        let path = c_str(path, "path")?;
        let out = out_ptr(out, "out")?;
        let bytes = read_module_file(path)?;
        if bytes.is_empty() {
            return Err(Error::new(
                Status::InvalidCubin,
                format!("\"{path}\" is empty"),
            ));
        }
        let m = d.load_module(&bytes).map_err(|e| Error {
            message: format!("\"{path}\": {}", e.message),
            ..e
        })?;
        let h = register(Object::Module(m))?;
        out.write(h as *mut tg_module);
        Ok(())
    })
}

/// Compile CUDA C source at run time with libnvrtc (loaded on first use; never linked) for this
/// device's SM version, and load the result.
///
/// - `source`: NUL-terminated CUDA C. Kernels should be `extern "C"` so their names are not
///   mangled.
/// - `options`, `num_options`: extra nvrtc options (e.g. `"--std=c++17"`); the target
///   architecture is added by the library. `options` may be NULL when `num_options` is 0.
///
/// Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_NULL_POINTER` (`source`, `out`,
/// `options` or one of its elements NULL); `TG_ERROR_LIBRARY_MISSING` (libnvrtc not installed:
/// `pip install nvidia-cuda-nvrtc-cu12`, or set `TEGRAGPU_NVRTC` to the library's path);
/// `TG_ERROR_COMPILE` (the message carries the compiler log); the statuses of
/// `tg_module_load()`.
///
/// Ownership: the caller owns `*out` and releases it with `tg_module_destroy()`.
/// Thread safety: any thread.
///
/// # Safety
/// `source` is NULL or NUL-terminated; `options` is NULL or points to `num_options` pointers,
/// each NULL or NUL-terminated; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tg_module_compile_cuda(
    dev: *const tg_device,
    source: *const c_char,
    options: *const *const c_char,
    num_options: usize,
    out: *mut *mut tg_module,
) -> tg_status {
    run("tg_module_compile_cuda", || {
        let d = device(dev, "dev")?;
        let src = c_str(source, "source")?;
        let out = out_ptr(out, "out")?;
        if options.is_null() && num_options != 0 {
            return Err(Error::new(
                Status::NullPointer,
                format!("options is NULL but num_options is {num_options}"),
            ));
        }
        if num_options > 4096 {
            return Err(Error::invalid(format!(
                "num_options {num_options} is more than 4096"
            )));
        }
        let mut opts = Vec::with_capacity(num_options);
        for i in 0..num_options {
            opts.push(c_str(*options.add(i), &format!("options[{i}]"))?);
        }
        let m = d.compile_cuda(src, &opts)?;
        let h = register(Object::Module(m))?;
        out.write(h as *mut tg_module);
        Ok(())
    })
}

/// Destroy a module handle. Kernels taken from it stay valid (they keep the code loaded); GPU
/// memory is released once no kernel handle and no submitted work uses it. NULL is a no-op.
///
/// Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`. Thread safety: any thread; the handle must not be
/// used after this call.
///
/// # Safety
/// None beyond the handle contract.
#[no_mangle]
pub unsafe extern "C" fn tg_module_destroy(module: *mut tg_module) -> tg_status {
    run("tg_module_destroy", || {
        handles::remove(module as usize, Kind::Module, "module").map(|_| ())
    })
}

/// Look up a kernel by name (the `extern "C"` name, or the mangled name).
///
/// Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_NULL_POINTER`;
/// `TG_ERROR_NOT_FOUND` (the message lists the module's kernels); `TG_ERROR_NOT_SUPPORTED`
/// (the kernel needs a feature libtegragpu lacks; the message names it and the attribute that
/// says so); `TG_ERROR_OUT_OF_MEMORY` (the kernel's local memory cannot be provided).
///
/// Ownership: the caller owns `*out` and releases it with `tg_kernel_destroy()`; the kernel keeps
/// its module loaded. Thread safety: any thread.
///
/// # Safety
/// `name` is NULL or NUL-terminated; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tg_module_get_kernel(
    module: *const tg_module,
    name: *const c_char,
    out: *mut *mut tg_kernel,
) -> tg_status {
    run("tg_module_get_kernel", || {
        let m = self::module(module, "module")?;
        let name = c_str(name, "name")?;
        let out = out_ptr(out, "out")?;
        let k = m.kernel(name)?;
        let h = register(Object::Kernel(k))?;
        out.write(h as *mut tg_kernel);
        Ok(())
    })
}

/// Destroy a kernel handle. NULL is a no-op.
///
/// Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`. Thread safety: any thread; the handle must not be
/// used after this call.
///
/// # Safety
/// None beyond the handle contract.
#[no_mangle]
pub unsafe extern "C" fn tg_kernel_destroy(kernel: *mut tg_kernel) -> tg_status {
    run("tg_kernel_destroy", || {
        handles::remove(kernel as usize, Kind::Kernel, "kernel").map(|_| ())
    })
}

/// What a kernel needs and allows.
///
/// - `out`: caller-allocated; set `out->struct_size = sizeof(tg_kernel_attributes)` first.
///
/// Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_NULL_POINTER`;
/// `TG_ERROR_INVALID_ARGUMENT` (`struct_size` too small). Thread safety: any thread.
///
/// # Safety
/// `out` is NULL or points to a writable `tg_kernel_attributes`.
#[no_mangle]
pub unsafe extern "C" fn tg_kernel_get_attributes(
    kernel: *const tg_kernel,
    out: *mut tg_kernel_attributes,
) -> tg_status {
    run("tg_kernel_get_attributes", || {
        let k = self::kernel(kernel, "kernel")?;
        let out = out_ptr(out, "out")?;
        check_out_struct_size(out, "out", "tg_kernel_attributes")?;
        let a = k.attributes();
        out.write_unaligned(tg_kernel_attributes {
            struct_size: std::mem::size_of::<tg_kernel_attributes>() as u32,
            num_params: a.params.len() as u32,
            param_bytes: a.param_bytes,
            registers: a.registers,
            static_shared_bytes: a.static_shared_bytes,
            local_bytes_per_thread: a.local_bytes_per_thread,
            max_threads_per_block: a.max_threads_per_block,
            max_dynamic_shared_bytes: a.max_dynamic_shared_bytes,
        });
        Ok(())
    })
}

/// Where parameter `index` (0-based, declaration order) lies in the packed parameter block that
/// `tg_launch()` takes: `*offset` bytes from the start, `*size` bytes long.
///
/// Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_NULL_POINTER` (`offset` or `size`
/// NULL); `TG_ERROR_INVALID_ARGUMENT` (`index` ≥ `num_params`). Thread safety: any thread.
///
/// # Safety
/// `offset` and `size` are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tg_kernel_get_param(
    kernel: *const tg_kernel,
    index: u32,
    offset: *mut u32,
    size: *mut u32,
) -> tg_status {
    run("tg_kernel_get_param", || {
        let k = self::kernel(kernel, "kernel")?;
        let offset = out_ptr(offset, "offset")?;
        let size = out_ptr(size, "size")?;
        let a = k.attributes();
        let p = a.params.get(index as usize).ok_or_else(|| {
            Error::invalid(format!(
                "index {index} is out of range: kernel \"{}\" has {} parameters",
                a.name,
                a.params.len()
            ))
        })?;
        offset.write_unaligned(p.offset);
        size.write_unaligned(p.size);
        Ok(())
    })
}

/// How many blocks of `block_threads` threads using `dynamic_shared_bytes` of dynamic shared
/// memory one SM runs at once (like `cuOccupancyMaxActiveBlocksPerMultiprocessor`): the
/// smallest of the limits set by warps, registers, shared memory and the SM's block limit.
/// Multiply by `tg_device_info.sm_count` for the largest cooperative grid.
///
/// Returns `TG_OK` (`*out` is 0 when `dynamic_shared_bytes` is above the kernel's
/// `max_dynamic_shared_bytes`); `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_NULL_POINTER`;
/// `TG_ERROR_INVALID_ARGUMENT` (`block_threads` 0 or above the kernel's
/// `max_threads_per_block`). Thread safety: any thread.
///
/// # Safety
/// `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tg_kernel_max_active_blocks(
    kernel: *const tg_kernel,
    block_threads: u32,
    dynamic_shared_bytes: u32,
    out: *mut u32,
) -> tg_status {
    run("tg_kernel_max_active_blocks", || {
        let k = self::kernel(kernel, "kernel")?;
        let out = out_ptr(out, "out")?;
        let n = k.max_active_blocks(block_threads, dynamic_shared_bytes)?;
        out.write_unaligned(n);
        Ok(())
    })
}

/// Find a `__device__` or `__constant__` variable of a module by name (like
/// `cuModuleGetGlobal`). Any of the out pointers may be NULL.
///
/// - `gpu_address`: the variable's GPU virtual address (pass it to kernels, copy to it).
/// - `cpu_ptr`: a CPU pointer to the same memory, valid while the module is loaded: write
///   initial values before the launches that read them, read results after they finish.
/// - `size_bytes`: the variable's size.
///
/// Names are as in the cubin: C++ variables are mangled unless declared `extern "C"`.
/// Each call makes every queue drop the GPU's constant and data caches before its next launch,
/// so call it again after changing through `cpu_ptr` a `__constant__` that launches already read.
///
/// Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_NULL_POINTER` (`name`);
/// `TG_ERROR_NOT_FOUND` (the message lists the module's variables). Thread safety: any thread.
///
/// # Safety
/// `name` is NULL or NUL-terminated; each out pointer is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tg_module_get_global(
    module: *const tg_module,
    name: *const c_char,
    gpu_address: *mut u64,
    cpu_ptr: *mut *mut c_void,
    size_bytes: *mut u64,
) -> tg_status {
    run("tg_module_get_global", || {
        let m = self::module(module, "module")?;
        if name.is_null() {
            return Err(null("name"));
        }
        let name = CStr::from_ptr(name)
            .to_str()
            .map_err(|_| Error::invalid("name is not valid UTF-8"))?;
        let (va, cpu, size) = m.global(name)?;
        if !gpu_address.is_null() {
            gpu_address.write_unaligned(va);
        }
        if !cpu_ptr.is_null() {
            cpu_ptr.write_unaligned(cpu as *mut c_void);
        }
        if !size_bytes.is_null() {
            size_bytes.write_unaligned(size);
        }
        Ok(())
    })
}

/// Set a device-wide limit (like `cuCtxSetLimit`).
///
/// - `TG_LIMIT_STACK_SIZE`: stack bytes per GPU thread (default 1024, as in libcuda). Each
///   launch recorded after the call gets the larger of this and the stack its kernel needs;
///   recursion and other calls whose depth the compiler cannot bound run in it. The device
///   reserves this much for every thread the GPU can hold (on an H100: about 300 MB per KiB),
///   allocated by this call when the limit grows (`TG_ERROR_OUT_OF_MEMORY` if it cannot be).
///
/// Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_INVALID_ARGUMENT` (unknown limit,
/// value too large). Thread safety: any thread.
///
/// # Safety
/// None beyond the handle contract.
#[no_mangle]
pub unsafe extern "C" fn tg_device_set_limit(
    dev: *const tg_device,
    limit: u32,
    value: u64,
) -> tg_status {
    run("tg_device_set_limit", || {
        let d = device(dev, "dev")?;
        match limit {
            TG_LIMIT_STACK_SIZE => d.set_stack_limit(value),
            other => Err(Error::invalid(format!(
                "limit {other} is unknown (known: TG_LIMIT_STACK_SIZE=0)"
            ))),
        }
    })
}

/// Read a device-wide limit (see `tg_device_set_limit()`).
///
/// Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_NULL_POINTER`;
/// `TG_ERROR_INVALID_ARGUMENT` (unknown limit). Thread safety: any thread.
///
/// # Safety
/// `value` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tg_device_get_limit(
    dev: *const tg_device,
    limit: u32,
    value: *mut u64,
) -> tg_status {
    run("tg_device_get_limit", || {
        let d = device(dev, "dev")?;
        let value = out_ptr(value, "value")?;
        match limit {
            TG_LIMIT_STACK_SIZE => {
                value.write_unaligned(u64::from(d.stack_limit()));
                Ok(())
            }
            other => Err(Error::invalid(format!(
                "limit {other} is unknown (known: TG_LIMIT_STACK_SIZE=0)"
            ))),
        }
    })
}

// ---------------------------------------------------------------------------------------------
// Queues

/// Create a command queue (a GPU channel).
///
/// - `kind`: `TG_QUEUE_COMPUTE` (launches) or `TG_QUEUE_COPY` (copy engine).
///
/// Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_NULL_POINTER`;
/// `TG_ERROR_INVALID_ARGUMENT` (unknown kind); `TG_ERROR_OUT_OF_MEMORY`; `TG_ERROR_OS`;
/// `TG_ERROR_DEVICE_FAULT`.
///
/// Ownership: the caller owns `*out` and releases it with `tg_queue_destroy()`.
/// Thread safety: any thread.
///
/// # Safety
/// `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tg_queue_create(
    dev: *const tg_device,
    kind: tg_queue_kind_arg,
    out: *mut *mut tg_queue,
) -> tg_status {
    run("tg_queue_create", || {
        create_queue(dev, kind, crate::core::QueueConfig::default().depth, out)
    })
}

/// Create a command queue with `depth` in-flight units instead of the default 1024: GPFIFO
/// entries (submissions) and, on compute queues, QMD slots (launches) that can be queued before
/// recording waits for the GPU. A power of two from 16 to 65536; each unit costs 8 bytes of
/// ring plus, on compute queues, 2 KiB of GPU memory.
///
/// Returns what `tg_queue_create()` returns; `TG_ERROR_INVALID_ARGUMENT` for a bad `depth`.
///
/// Ownership: the caller owns `*out` and releases it with `tg_queue_destroy()`.
/// Thread safety: any thread.
///
/// # Safety
/// `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tg_queue_create_with_depth(
    dev: *const tg_device,
    kind: tg_queue_kind_arg,
    depth: u32,
    out: *mut *mut tg_queue,
) -> tg_status {
    run("tg_queue_create_with_depth", || {
        create_queue(dev, kind, depth, out)
    })
}

unsafe fn create_queue(
    dev: *const tg_device,
    kind: tg_queue_kind_arg,
    depth: u32,
    out: *mut *mut tg_queue,
) -> Result<()> {
    let d = device(dev, "dev")?;
    let out = out_ptr(out, "out")?;
    let kind = match kind.0 {
        0 => QueueKind::Compute,
        1 => QueueKind::Copy,
        k => {
            return Err(Error::invalid(format!(
                "kind {k} is not a tg_queue_kind (TG_QUEUE_COMPUTE=0, TG_QUEUE_COPY=1)"
            )))
        }
    };
    let q = d.create_queue_with(kind, crate::core::QueueConfig { depth })?;
    let h = register(Object::Queue(Arc::new(Mutex::new(q))))?;
    out.write(h as *mut tg_queue);
    Ok(())
}

/// Destroy a queue: submits what was recorded, waits (up to 10 s) for the queue's work to
/// finish, then releases the channel. NULL is a no-op.
///
/// Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`. Thread safety: any thread; the handle must not be
/// used after this call.
///
/// # Safety
/// None beyond the handle contract.
#[no_mangle]
pub unsafe extern "C" fn tg_queue_destroy(queue: *mut tg_queue) -> tg_status {
    run("tg_queue_destroy", || {
        handles::remove(queue as usize, Kind::Queue, "queue").map(|_| ())
    })
}

/// Abandon a queue's work and destroy the queue at once: what was recorded is not submitted,
/// nothing is waited for, and the queue's hardware channel is torn down, so the GPU stops the
/// running kernel and drops the queued work. The recovery for a kernel that does not end:
/// `tg_signal_wait` / `tg_queue_synchronize` return `TG_ERROR_TIMEOUT`, then `tg_queue_abort`
/// and a new queue; the device, its other queues and its buffers stay usable. Memory the
/// abandoned work held (buffers freed meanwhile, the queue's rings) is released once the
/// channel is gone; signals the work would have written keep their values. NULL is a no-op.
///
/// Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`. Thread safety: any thread; returns after calls
/// on this queue running in other threads (e.g. a `tg_queue_synchronize`) have returned; the
/// handle must not be used after this call.
///
/// # Safety
/// None beyond the handle contract.
#[no_mangle]
pub unsafe extern "C" fn tg_queue_abort(queue: *mut tg_queue) -> tg_status {
    run("tg_queue_abort", || {
        if let Some(Object::Queue(q)) = handles::take(queue as usize, Kind::Queue, "queue")? {
            q.lock().abandon_on_drop();
        }
        Ok(())
    })
}

/// Record a kernel launch with a packed parameter block.
///
/// - `cfg`: grid, block and dynamic shared memory; `cfg->struct_size = sizeof(tg_launch_config)`.
/// - `params`, `params_size_bytes`: the parameters laid out as the kernel declares them
///   (`tg_kernel_get_param()` gives each offset and size); `params_size_bytes` must equal the
///   kernel's `param_bytes`. `params` may be NULL when the kernel takes no parameters. The
///   bytes are copied: the memory may be reused after the call.
///
/// The launch runs after `tg_queue_submit()`, in order with the queue's other commands.
///
/// Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_NULL_POINTER`;
/// `TG_ERROR_INVALID_ARGUMENT` (copy queue, kernel of another device, `struct_size`);
/// `TG_ERROR_INVALID_LAUNCH` (parameter size, zero or too large grid/block, block above the
/// kernel's `max_threads_per_block`, too much shared memory); `TG_ERROR_DEVICE_FAULT`;
/// `TG_ERROR_TIMEOUT` (no ring space within 10 s).
///
/// Thread safety: any thread; serialized per queue.
///
/// # Safety
/// `cfg` is NULL or readable; `params` is NULL or readable for `params_size_bytes` bytes.
#[no_mangle]
pub unsafe extern "C" fn tg_launch(
    queue: *const tg_queue,
    kernel: *const tg_kernel,
    cfg: *const tg_launch_config,
    params: *const c_void,
    params_size_bytes: usize,
) -> tg_status {
    run("tg_launch", || {
        let q = self::queue(queue, "queue")?;
        let k = self::kernel(kernel, "kernel")?;
        let cfg = launch_config(cfg)?;
        let a = k.attributes();
        if params_size_bytes != a.param_bytes as usize {
            return Err(Error::new(
                Status::InvalidLaunch,
                format!("kernel \"{}\" takes {} bytes of parameters, params_size_bytes is {params_size_bytes}", a.name, a.param_bytes),
            ));
        }
        let bytes: &[u8] = if params_size_bytes == 0 {
            &[]
        } else if params.is_null() {
            return Err(Error::new(
                Status::NullPointer,
                format!("params is NULL but params_size_bytes is {params_size_bytes}"),
            ));
        } else {
            std::slice::from_raw_parts(params as *const u8, params_size_bytes)
        };
        let mut g = q.lock();
        g.launch(&k, &cfg, bytes)
    })
}

/// Record a kernel launch with one pointer per parameter, like `cuLaunchKernel`'s
/// `kernelParams`: `args[i]` points to the value of parameter `i` (its size is the parameter's
/// size, see `tg_kernel_get_param()`).
///
/// - `num_args`: must equal the kernel's `num_params`; `args` may be NULL when it is 0.
///
/// Returns what `tg_launch()` returns; `TG_ERROR_INVALID_LAUNCH` when `num_args` differs from the
/// kernel's parameter count; `TG_ERROR_NULL_POINTER` when `args` or an element is NULL.
///
/// Thread safety: any thread; serialized per queue.
///
/// # Safety
/// `args` is NULL or points to `num_args` pointers, each NULL or readable for its parameter's
/// size.
#[no_mangle]
pub unsafe extern "C" fn tg_launch_args(
    queue: *const tg_queue,
    kernel: *const tg_kernel,
    cfg: *const tg_launch_config,
    args: *mut *mut c_void,
    num_args: usize,
) -> tg_status {
    run("tg_launch_args", || {
        let q = self::queue(queue, "queue")?;
        let k = self::kernel(kernel, "kernel")?;
        let cfg = launch_config(cfg)?;
        let a = k.attributes();
        if num_args != a.params.len() {
            return Err(Error::new(
                Status::InvalidLaunch,
                format!(
                    "kernel \"{}\" has {} parameters, num_args is {num_args}",
                    a.name,
                    a.params.len()
                ),
            ));
        }
        let ptrs: Vec<*const u8> = if num_args == 0 {
            Vec::new()
        } else if args.is_null() {
            return Err(Error::new(
                Status::NullPointer,
                format!("args is NULL but num_args is {num_args}"),
            ));
        } else {
            (0..num_args).map(|i| *args.add(i) as *const u8).collect()
        };
        if let Some(i) = ptrs.iter().position(|p| p.is_null()) {
            return Err(Error::new(
                Status::NullPointer,
                format!("args[{i}] is NULL"),
            ));
        }
        let mut g = q.lock();
        g.launch_ptrs(&k, &cfg, &ptrs)
    })
}

/// Record a copy of `size_bytes` from `src` at `src_offset` to `dst` at `dst_offset`. On a copy
/// queue the copy engine moves the bytes; on a compute queue the library's built-in copy kernel
/// does (the SMs: full memory bandwidth, ordered after earlier launches on the queue like any
/// kernel; this is how libcuda copies device to device). Both ranges must lie inside their
/// buffers and must not overlap; the buffers must belong to the queue's device; a zero size
/// records nothing.
///
/// Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_INVALID_ARGUMENT` (range outside a
/// buffer, overlapping ranges, buffer of another device); `TG_ERROR_NOT_SUPPORTED` (compute
/// queue on a GPU without a built-in copy kernel); `TG_ERROR_DEVICE_FAULT`; `TG_ERROR_TIMEOUT`.
///
/// Thread safety: any thread; serialized per queue.
///
/// # Safety
/// None beyond the handle contract.
#[no_mangle]
pub unsafe extern "C" fn tg_queue_copy(
    queue: *const tg_queue,
    dst: *const tg_buf,
    dst_offset: u64,
    src: *const tg_buf,
    src_offset: u64,
    size_bytes: u64,
) -> tg_status {
    run("tg_queue_copy", || {
        let q = self::queue(queue, "queue")?;
        let d = buffer(dst, "dst")?;
        let s = buffer(src, "src")?;
        let mut g = q.lock();
        if !same_device(g.device(), d.device()) || !same_device(g.device(), s.device()) {
            return Err(Error::invalid(
                "dst and src must belong to the queue's device",
            ));
        }
        g.copy(&d, dst_offset, &s, src_offset, size_bytes)
    })
}

/// Record a GPU write of `value` to `signal` once all earlier work on the queue has completed
/// and its writes are visible.
///
/// Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_INVALID_ARGUMENT` (signal of another
/// device); `TG_ERROR_DEVICE_FAULT`; `TG_ERROR_TIMEOUT`. Thread safety: any thread; serialized
/// per queue.
///
/// # Safety
/// None beyond the handle contract.
#[no_mangle]
pub unsafe extern "C" fn tg_queue_signal(
    queue: *const tg_queue,
    signal: *const tg_signal,
    value: u64,
) -> tg_status {
    run("tg_queue_signal", || {
        let q = self::queue(queue, "queue")?;
        let s = self::signal(signal, "signal")?;
        let mut g = q.lock();
        if !same_device(g.device(), s.device()) {
            return Err(Error::invalid(
                "signal belongs to another device than queue",
            ));
        }
        g.signal(&s, value)
    })
}

/// Record a GPU wait: later commands on the queue start only once `signal` ≥ `value`.
///
/// Signal values compare as unsigned 64-bit integers, on the GPU (`tg_queue_wait()`) and on the
/// CPU (`tg_signal_wait()`) alike: a wait for `v` is satisfied once the value is ≥ `v`. Nothing
/// wraps around: `UINT64_MAX` satisfies every wait, and a wait for a value above the current one
/// blocks however far above it is (e.g. a wait for 2^63 + 1 blocks at 0).
///
/// Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_INVALID_ARGUMENT` (signal of another
/// device); `TG_ERROR_DEVICE_FAULT`; `TG_ERROR_TIMEOUT`. Thread safety: any thread; serialized
/// per queue.
///
/// # Safety
/// None beyond the handle contract.
#[no_mangle]
pub unsafe extern "C" fn tg_queue_wait(
    queue: *const tg_queue,
    signal: *const tg_signal,
    value: u64,
) -> tg_status {
    run("tg_queue_wait", || {
        let q = self::queue(queue, "queue")?;
        let s = self::signal(signal, "signal")?;
        let mut g = q.lock();
        if !same_device(g.device(), s.device()) {
            return Err(Error::invalid(
                "signal belongs to another device than queue",
            ));
        }
        g.wait(&s, value)
    })
}

/// Record a full barrier: earlier work on the queue completes and its writes are visible to the
/// CPU and other engines before later work starts.
///
/// Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_DEVICE_FAULT`; `TG_ERROR_TIMEOUT`.
/// Thread safety: any thread; serialized per queue.
///
/// # Safety
/// None beyond the handle contract.
#[no_mangle]
pub unsafe extern "C" fn tg_queue_barrier(queue: *const tg_queue) -> tg_status {
    run("tg_queue_barrier", || {
        self::queue(queue, "queue")?.lock().barrier()
    })
}

/// Make everything recorded on the queue visible to the GPU (no system call: a GPFIFO entry and
/// a doorbell write). Returns immediately; use signals or `tg_queue_synchronize()` to wait.
///
/// Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_DEVICE_FAULT`; `TG_ERROR_TIMEOUT` (the
/// ring stayed full for 10 s). Thread safety: any thread; serialized per queue.
///
/// # Safety
/// None beyond the handle contract.
#[no_mangle]
pub unsafe extern "C" fn tg_queue_submit(queue: *const tg_queue) -> tg_status {
    run("tg_queue_submit", || {
        self::queue(queue, "queue")?.lock().submit()
    })
}

/// Wait until everything submitted on the queue has completed (commands recorded but not yet
/// submitted are not waited for).
///
/// - `timeout_ns`: deadline in nanoseconds (`TG_TIMEOUT_INFINITE` = none).
///
/// Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_TIMEOUT`; `TG_ERROR_DEVICE_FAULT`.
/// Thread safety: any thread; holds the queue's lock while waiting.
///
/// # Safety
/// None beyond the handle contract.
#[no_mangle]
pub unsafe extern "C" fn tg_queue_synchronize(
    queue: *const tg_queue,
    timeout_ns: u64,
) -> tg_status {
    run("tg_queue_synchronize", || {
        self::queue(queue, "queue")?.lock().synchronize(timeout_ns)
    })
}

// ---------------------------------------------------------------------------------------------
// Signals

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
/// Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_TIMEOUT` (the message gives the value
/// reached); `TG_ERROR_DEVICE_FAULT` (the device faulted while waiting).
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

// ---------------------------------------------------------------------------------------------
// Logging

/// Log levels, from quiet to verbose (`tg_set_log_level()`, `tg_log_fn`). A level shows its own
/// messages and those of every level above it in this list.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum tg_log_level {
    /// No messages (a level to set; messages never carry it).
    TG_LOG_OFF = 0,
    /// Failures the library reports or cannot recover from.
    TG_LOG_ERROR = 1,
    /// Problems the library works around (the default level).
    TG_LOG_WARN = 2,
    /// One line per device open: which backend was opened and why.
    TG_LOG_INFO = 3,
    /// Bring-up steps: device nodes, classes, address space, channels, USERD/doorbell mappings.
    TG_LOG_DEBUG = 4,
    /// Every ioctl with its name, key arguments, result and duration.
    TG_LOG_TRACE = 5,
}

/// A `tg_log_level` received from C (any integer may arrive); appears as `tg_log_level`.
#[repr(transparent)]
#[derive(Debug, Clone, Copy)]
pub struct tg_log_level_arg(pub i32);

/// Receives the library's log messages (`tg_set_log_callback()`).
///
/// - `level`: `TG_LOG_ERROR` ... `TG_LOG_TRACE` (never `TG_LOG_OFF`).
/// - `target`: the part of the library that wrote it, e.g. `"tegragpu::ioctl"` (ioctl records),
///   `"tegragpu::backend::nvgpu"`, `"tegragpu::core::device"`.
/// - `message`: one line, without a trailing newline.
/// - `user`: the pointer given to `tg_set_log_callback()`.
///
/// Both strings are NUL-terminated and valid only for the duration of the call: copy what you
/// keep. The callback runs on whichever thread logs (application threads inside `tg_*` calls,
/// the library's own threads), possibly on several at once: it must be thread-safe. It must
/// not call `tg_set_log_callback()` (refused there); messages from other `tg_*` calls it makes
/// go to stderr.
pub type tg_log_fn = Option<
    unsafe extern "C" fn(
        level: tg_log_level,
        target: *const c_char,
        message: *const c_char,
        user: *mut c_void,
    ),
>;

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

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn flags_map_and_reject_unknown_bits() {
        let f = mem_flags(0).expect("0 is valid");
        assert!(f.cpu_cached && !f.write_combined && !f.zeroed);
        let f = mem_flags(TG_BUF_WRITE_COMBINED | TG_BUF_ZEROED).expect("valid");
        assert!(!f.cpu_cached && f.write_combined && f.zeroed);
        let f = mem_flags(TG_BUF_DEVICE_LOCAL).expect("valid");
        assert!(!f.cpu_cached && !f.write_combined && !f.zeroed);
        let e = mem_flags(16).expect_err("bit 4 is unknown");
        assert_eq!(e.status, Status::InvalidArgument);
        assert!(e.message.contains("0x10"), "{}", e.message);
        for both in [
            TG_BUF_DEVICE_LOCAL | TG_BUF_CPU_CACHED,
            TG_BUF_DEVICE_LOCAL | TG_BUF_WRITE_COMBINED,
        ] {
            assert_eq!(
                mem_flags(both).expect_err("exclusive").status,
                Status::InvalidArgument
            );
        }
        assert_eq!(
            mem_flags(3).expect_err("exclusive").status,
            Status::InvalidArgument
        );
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
}
