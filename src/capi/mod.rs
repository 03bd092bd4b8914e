//! The C API: `extern "C"` functions over [`crate::core`], declared in `include/tegragpu.h`.
//!
//! The header is generated from this module by cbindgen (configuration: `cbindgen.toml`); the doc
//! comments here and in the modules below are the header's documentation. `tests/header.rs`
//! fails when the committed header is stale; `TEGRAGPU_BLESS=1 cargo test --test header` (or
//! `scripts/gen-header.sh`) rewrites it.
//!
//! Layout: this file holds the types and constants the header declares; each C object has its
//! module with its functions (`device.rs`: `tg_device_*`, `buffer.rs`: `tg_buf_*`, `module.rs`:
//! `tg_module_*` and `tg_kernel_*`, `limits.rs`: `tg_device_set_limit` / `tg_device_get_limit`,
//! `queue.rs`: `tg_queue_*` and `tg_launch*`, `signal.rs`: `tg_signal_*`, `log.rs`:
//! `tg_set_log_*`, `peer.rs`: `tg_device_can_access_peer` / `tg_device_enable_peer_access`,
//! `library.rs`: `tg_version`, `tg_status_str`, `tg_last_error_message`);
//! `boundary/` is the call boundary every function goes through and `handles.rs` the handle
//! table. Everything C sees is re-exported here, so `tegragpu::capi::*` names the whole API.
//!
//! Order: cbindgen emits the constants of this file in source order, then the functions of the
//! modules in the order they are declared below (`[fn] sort_by = "None"`), which is the
//! header's order: keep it when adding modules, and append new ones at the end, after a blank
//! line (rustfmt sorts adjacent `mod` lines).
//!
//! Conventions (they hold for every function):
//! - Every fallible function returns a [`tg_status`]; outputs go through out-parameters that are
//!   written only on success.
//! - On failure, [`tg_last_error_message`] (thread-local) names the call and the values involved.
//! - No input crashes the library: NULL pointers give `TG_ERROR_NULL_POINTER`; NULL, destroyed and
//!   wrong-type handles give `TG_ERROR_INVALID_HANDLE` (see `handles.rs` for the design); every
//!   body runs inside `catch_unwind` (a panic gives `TG_ERROR_INTERNAL`; see `boundary/mod.rs`).
//! - Destroying NULL is a no-op.

#![allow(non_camel_case_types)]

mod boundary;
pub(crate) mod handles;
mod lock;

// The C functions, one module per C object, in header order (see "Order" above; the blank
// lines keep rustfmt from sorting them).
mod library; // tg_version, tg_status_str, tg_last_error_message

mod device; // tg_device_* (open, close, info, synchronize, fault)

mod buffer; // tg_buf_*

mod module; // tg_module_*, tg_kernel_*

mod limits; // tg_device_set_limit, tg_device_get_limit

mod queue; // tg_queue_*, tg_launch, tg_launch_args

mod signal; // tg_signal_*

mod cmdbuf; // tg_cmdbuf_*, tg_queue_replay

mod texture; // tg_texture_*

mod log; // tg_set_log_callback, tg_set_log_level

mod peer; // tg_device_can_access_peer, tg_device_enable_peer_access

pub use buffer::*;
pub use cmdbuf::*;
pub use device::*;
pub use library::*;
pub use limits::*;
pub use log::*;
pub use module::*;
pub use peer::*;
pub use queue::*;
pub use signal::*;
pub use texture::*;

#[doc(hidden)]
pub use handles::hold_table_lock_for;
pub use handles::live_handles;

use std::ffi::{c_char, c_void};

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

/// A command buffer: launches, copies, signals, waits and barriers recorded once and replayed on
/// compute queues many times (`tg_queue_replay()`), with parameters and signal values updated
/// between replays. Thread safety: any thread; calls on one command buffer are serialized.
pub struct tg_cmdbuf {
    _opaque: [u8; 0],
}

/// A texture object: a read-only view of buffer memory that kernels sample with `tex1Dfetch`,
/// `tex2D`, ... through a `cudaTextureObject_t` parameter (`tg_texture_create()`). Thread safety:
/// any thread, concurrently.
pub struct tg_texture {
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

/// `tg_queue_write_value()` / `tg_queue_wait_value()` flag: the word is 64 bits wide (8-byte
/// aligned); without it, 32 bits (4-byte aligned).
pub const TG_VALUE_64: u32 = 1;
/// `tg_queue_write_value()` flag: the write may pass earlier work of the queue (no wait for it
/// to complete, no memory barrier), like `CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER`.
pub const TG_VALUE_NO_BARRIER: u32 = 2;
/// `tg_queue_wait_value()` condition: the word equals the value.
pub const TG_VALUE_EQ: u32 = 0;
/// `tg_queue_wait_value()` condition: the word is at least the value (unsigned).
pub const TG_VALUE_GEQ: u32 = 1;
/// `tg_queue_wait_value()` condition: `(signed)(word - value) >= 0` in the word's width, i.e.
/// at least the value across wrap-around (`CU_STREAM_WAIT_VALUE_GEQ`).
pub const TG_VALUE_GEQ_WRAPPING: u32 = 2;
/// `tg_queue_wait_value()` condition: `word & value` is not 0.
pub const TG_VALUE_AND: u32 = 3;
/// `tg_queue_wait_value()` condition: `~(word | value)` is not 0 in the word's width
/// (`CU_STREAM_WAIT_VALUE_NOR`).
pub const TG_VALUE_NOR: u32 = 4;

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
    /// Thread-block cluster shape (`cudaLaunchAttributeClusterDimension`); `{0, 0, 0}` (or
    /// `{1, 1, 1}`) for none. sm_90 (Hopper) only, at most 8 blocks, each dimension dividing the
    /// grid's; a kernel with a compile-time shape (`__cluster_dims__`) always runs with it, and
    /// a different shape here is refused. Other GPUs: `TG_ERROR_NOT_SUPPORTED`. In command
    /// buffers too. (Present when `struct_size` ≥ 48.)
    pub cluster: [u32; 3],
}

/// `tg_launch_config.flags`: launch the grid cooperatively (`cuLaunchCooperativeKernel`), for
/// kernels that synchronise the whole grid (`cooperative_groups::this_grid().sync()`). Every
/// block must be resident at once: a grid larger than `tg_kernel_max_active_blocks()` × the SM
/// count returns `TG_ERROR_INVALID_LAUNCH`.
pub const TG_LAUNCH_COOPERATIVE: u32 = 1;

/// `tg_launch_config.flags`: the launch may run concurrently with the launch recorded just
/// before it on the queue or command buffer (and with what that one may run concurrently
/// with): it waits only for what that launch waited for, not for that launch. Set it on
/// kernels that neither read nor write memory the other launches of the group write (as a
/// CUDA graph runs nodes without a dependency between them). A launch without the flag waits
/// for every earlier launch. Not with `TG_LAUNCH_COOPERATIVE`.
pub const TG_LAUNCH_CONCURRENT: u32 = 2;

/// `tg_launch_config.flags`: submit the queue after recording the launch, in the same call
/// (`tg_launch()` + `tg_queue_submit()` in one, like `cuLaunchKernel`, which starts the work
/// at once). Cheaper than the two calls: one handle lookup, and on a shared queue one lock
/// instead of two (on x86 each lock after writing the rings drains the CPU's write-combining
/// buffers). Queues only: a command buffer refuses it (`tg_cmdbuf_launch()`).
pub const TG_LAUNCH_SUBMIT: u32 = 4;

/// `tg_device_set_limit()` / `tg_device_get_limit()`: stack bytes per GPU thread
/// (`CU_LIMIT_STACK_SIZE`); 1024 by default.
pub const TG_LIMIT_STACK_SIZE: u32 = 0;
/// `tg_device_set_limit()` / `tg_device_get_limit()`: bytes of the heap that `malloc` in kernels
/// allocates from (`CU_LIMIT_MALLOC_HEAP_SIZE`, the same value 2); 8 MiB by default. Set it
/// before loading a module that calls `malloc` or `free`: the heap is allocated then.
pub const TG_LIMIT_MALLOC_HEAP_SIZE: u32 = 2;

// ---------------------------------------------------------------------------------------------
// Device listing and attributes

/// One GPU as `tg_device_list()` lists it, without opening it. Set `struct_size =
/// sizeof(tg_device_listing)` in the first element of the array; on success the library sets
/// it in every element it filled.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct tg_device_listing {
    /// In (first element): `sizeof(tg_device_listing)`. Out: bytes filled.
    pub struct_size: u32,
    /// The name `tg_device_get_info()` reports once it is open, NUL-terminated: "NVIDIA H200"
    /// (desktop driver: the model name), "ga10b" (Jetson Orin and the emulated Orin).
    pub name: [c_char; 64],
    /// The GPU's UUID. Desktop driver: as the driver reports it (zeros for a GPU the driver has
    /// not initialised and whose procfs entry shows none). nvgpu, which reports none: built from
    /// the driver's per-device identifier, chip and revision (stable for one board).
    pub uuid: [u8; 16],
    /// PCI location "domain:bus:device.function", NUL-terminated: "0000:00:06.0";
    /// "0000:00:00.0" for the integrated GPU of a Jetson.
    pub pci_bus_id: [c_char; 32],
    /// Kernel driver the GPU is driven through.
    pub backend: tg_backend,
    /// True for the in-process emulated Orin.
    pub emulated: bool,
    /// The spec `tg_device_open()` takes to open exactly this GPU, NUL-terminated: "rm:0",
    /// "rm:1", ..., "nvgpu", "emu".
    pub spec: [c_char; 32],
}

/// Largest block, threads (x·y·z).
pub const TG_DEVICE_ATTR_MAX_THREADS_PER_BLOCK: u32 = 1;
/// Largest block x dimension.
pub const TG_DEVICE_ATTR_MAX_BLOCK_DIM_X: u32 = 2;
/// Largest block y dimension.
pub const TG_DEVICE_ATTR_MAX_BLOCK_DIM_Y: u32 = 3;
/// Largest block z dimension.
pub const TG_DEVICE_ATTR_MAX_BLOCK_DIM_Z: u32 = 4;
/// Largest grid x dimension (2^31 - 1).
pub const TG_DEVICE_ATTR_MAX_GRID_DIM_X: u32 = 5;
/// Largest grid y dimension.
pub const TG_DEVICE_ATTR_MAX_GRID_DIM_Y: u32 = 6;
/// Largest grid z dimension.
pub const TG_DEVICE_ATTR_MAX_GRID_DIM_Z: u32 = 7;
/// Shared memory a block may use without opting in, bytes (48 KiB).
pub const TG_DEVICE_ATTR_MAX_SHARED_MEMORY_PER_BLOCK: u32 = 8;
/// Shared memory a block may use in all (static + dynamic), bytes: the largest carveout
/// less the 1 KiB the hardware reserves per block.
pub const TG_DEVICE_ATTR_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: u32 = 9;
/// Shared memory the hardware reserves per block, bytes.
pub const TG_DEVICE_ATTR_RESERVED_SHARED_MEMORY_PER_BLOCK: u32 = 10;
/// Shared memory of one SM (the largest carveout), bytes.
pub const TG_DEVICE_ATTR_MAX_SHARED_MEMORY_PER_SM: u32 = 11;
/// Constant memory for `__constant__` data, bytes.
pub const TG_DEVICE_ATTR_TOTAL_CONSTANT_MEMORY: u32 = 12;
/// Threads per warp.
pub const TG_DEVICE_ATTR_WARP_SIZE: u32 = 13;
/// 32-bit registers a block may use.
pub const TG_DEVICE_ATTR_MAX_REGISTERS_PER_BLOCK: u32 = 14;
/// 32-bit registers of one SM.
pub const TG_DEVICE_ATTR_MAX_REGISTERS_PER_SM: u32 = 15;
/// Resident threads per SM.
pub const TG_DEVICE_ATTR_MAX_THREADS_PER_SM: u32 = 16;
/// Resident blocks per SM.
pub const TG_DEVICE_ATTR_MAX_BLOCKS_PER_SM: u32 = 17;
/// Enabled SMs.
pub const TG_DEVICE_ATTR_SM_COUNT: u32 = 18;
/// SM version major (compute capability).
pub const TG_DEVICE_ATTR_COMPUTE_CAPABILITY_MAJOR: u32 = 19;
/// SM version minor.
pub const TG_DEVICE_ATTR_COMPUTE_CAPABILITY_MINOR: u32 = 20;
/// Maximum GPU clock, kHz.
pub const TG_DEVICE_ATTR_CLOCK_RATE_KHZ: u32 = 21;
/// Peak memory clock, kHz.
pub const TG_DEVICE_ATTR_MEMORY_CLOCK_RATE_KHZ: u32 = 22;
/// Memory bus width, bits.
pub const TG_DEVICE_ATTR_MEMORY_BUS_WIDTH_BITS: u32 = 23;
/// L2 cache, bytes.
pub const TG_DEVICE_ATTR_L2_CACHE_BYTES: u32 = 24;
/// Memory usable for allocations, bytes (as `tg_device_info`'s `memory_bytes`).
pub const TG_DEVICE_ATTR_TOTAL_MEMORY_BYTES: u32 = 25;
/// 1 when the GPU shares the CPU's memory (Jetson), else 0.
pub const TG_DEVICE_ATTR_INTEGRATED: u32 = 26;
/// 1: buffers are mapped for the CPU and the GPU alike.
pub const TG_DEVICE_ATTR_CAN_MAP_HOST_MEMORY: u32 = 27;
/// 1 when every buffer's CPU pointer equals its GPU address, else 0.
pub const TG_DEVICE_ATTR_UNIFIED_ADDRESSING: u32 = 28;
/// 1: kernels of different queues may run at once.
pub const TG_DEVICE_ATTR_CONCURRENT_KERNELS: u32 = 29;
/// Copy engines that work alongside kernels (as NVIDIA's driver counts them).
pub const TG_DEVICE_ATTR_ASYNC_ENGINE_COUNT: u32 = 30;
/// 1 when ECC is enabled on the device's memory, else 0.
pub const TG_DEVICE_ATTR_ECC_ENABLED: u32 = 31;
/// PCI domain (0 for the integrated GPU of a Jetson).
pub const TG_DEVICE_ATTR_PCI_DOMAIN_ID: u32 = 32;
/// PCI bus (0 for the integrated GPU of a Jetson).
pub const TG_DEVICE_ATTR_PCI_BUS_ID: u32 = 33;
/// PCI device (slot) (0 for the integrated GPU of a Jetson).
pub const TG_DEVICE_ATTR_PCI_DEVICE_ID: u32 = 34;
/// PCI device id << 16 | PCI vendor id (0x233510DE for the H200).
pub const TG_DEVICE_ATTR_PCI_VENDOR_DEVICE_ID: u32 = 35;
/// PCI subsystem device id << 16 | subsystem vendor id.
pub const TG_DEVICE_ATTR_PCI_SUBSYSTEM_ID: u32 = 36;
/// 1: cooperative launches (grid-wide sync) are supported.
pub const TG_DEVICE_ATTR_COOPERATIVE_LAUNCH: u32 = 37;
/// 1 when thread-block clusters are supported (sm_90 and later), else 0.
pub const TG_DEVICE_ATTR_CLUSTER_LAUNCH: u32 = 38;
/// 1 when kernels have a run-time limit, else 0 (0: the library imposes none).
pub const TG_DEVICE_ATTR_KERNEL_EXEC_TIMEOUT: u32 = 39;
/// 0: any number of processes may use the device.
pub const TG_DEVICE_ATTR_COMPUTE_MODE: u32 = 40;
/// Largest pitch of a pitched copy, bytes.
pub const TG_DEVICE_ATTR_MAX_PITCH: u32 = 41;
/// Alignment a texture's base address needs, bytes.
pub const TG_DEVICE_ATTR_TEXTURE_ALIGNMENT: u32 = 42;
/// Alignment a pitched texture's pitch needs, bytes.
pub const TG_DEVICE_ATTR_TEXTURE_PITCH_ALIGNMENT: u32 = 43;
/// Largest 1-D linear texture, elements.
pub const TG_DEVICE_ATTR_MAX_TEXTURE_1D_LINEAR_WIDTH: u32 = 44;
/// Largest pitched 2-D texture width, elements.
pub const TG_DEVICE_ATTR_MAX_TEXTURE_2D_LINEAR_WIDTH: u32 = 45;
/// Largest pitched 2-D texture height, rows.
pub const TG_DEVICE_ATTR_MAX_TEXTURE_2D_LINEAR_HEIGHT: u32 = 46;
/// Largest pitched 2-D texture pitch, bytes.
pub const TG_DEVICE_ATTR_MAX_TEXTURE_2D_LINEAR_PITCH: u32 = 47;
/// 1: global loads may be cached in L1.
pub const TG_DEVICE_ATTR_GLOBAL_L1_CACHE_SUPPORTED: u32 = 48;
/// 1: local memory may be cached in L1.
pub const TG_DEVICE_ATTR_LOCAL_L1_CACHE_SUPPORTED: u32 = 49;
/// Width of the GPU virtual address space, bits.
pub const TG_DEVICE_ATTR_VIRTUAL_ADDRESS_BITS: u32 = 50;

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
