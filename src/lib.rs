//! GPU compute on NVIDIA Jetson Orin (nvgpu + nvmap) and desktop NVIDIA GPUs (nvidia.ko +
//! nvidia-uvm) without libcuda: open the GPU, allocate memory the CPU and the GPU share, load
//! CUDA kernels (cubins, fatbinaries, PTX, or CUDA C compiled at run time through libnvrtc),
//! launch them, copy, and wait on timeline signals. Work is submitted from user space with no
//! system call on the launch path. The crate carries an emulated Orin (`"emu"`): the real
//! nvgpu backend against an in-process model of the driver and the GPU, for development and
//! tests without a board.
//!
//! This is the Rust API. The same library is also a C library (`libtegragpu.so`, header
//! `include/tegragpu.h`) and a Python package; all three share one runtime.
//!
//! # Example
//!
//! `c = a + b` with the `vector_add` kernel of the test fixtures (`tests/fixtures/kernels.cu`,
//! built for the emulated Orin's sm_87):
//!
//! ```
//! use tegragpu::{Device, Result};
//!
//! fn main() -> Result<()> {
//!     let dev = Device::open("emu")?; // "" = this machine's GPU (or $TEGRAGPU_DEVICE)
//!     let module = dev.load_module(include_bytes!("../tests/fixtures/cubin/kernels.sm_87.cubin"))?;
//!     // extern "C" __global__ void vector_add(const float* a, const float* b, float* c, unsigned n)
//!     let vector_add = module.kernel("vector_add")?;
//!
//!     let n = 1 << 20;
//!     let a = dev.alloc_from(&vec![1.0f32; n])?;
//!     let b = dev.alloc_from(&(0..n).map(|i| i as f32).collect::<Vec<_>>())?;
//!     let mut c = dev.alloc::<f32>(n)?;
//!
//!     let mut queue = dev.queue()?;
//!     // SAFETY: vector_add reads a[0..n] and b[0..n] and writes c[0..n], nothing else.
//!     unsafe {
//!         queue
//!             .launch(&vector_add)
//!             .grid((n as u32).div_ceil(256))
//!             .block(256)
//!             .arg(&a)
//!             .arg(&b)
//!             .arg_mut(&mut c)
//!             .arg(&(n as u32))
//!             .record()?;
//!     }
//!     queue.synchronize()?;
//!
//!     let c = c.as_slice()?; // the GPU is done with c: a view of the shared memory
//!     assert!(c.iter().enumerate().all(|(i, &x)| x == 1.0 + i as f32));
//!     Ok(())
//! }
//! ```
//!
//! # The objects
//!
//! - [`Device`]: an open GPU; creates everything else.
//! - [`DeviceBuffer<T>`]: GPU memory holding `len` values of a [`bytemuck::Pod`] type, with
//!   host views ([`DeviceBuffer::as_slice`], [`DeviceBuffer::as_mut_slice`]) and copies in and
//!   out.
//! - [`Module`] and [`Kernel`]: loaded GPU code, and a kernel with its parameter layout.
//! - [`Queue`]: records launches ([`Queue::launch`] → [`Launch`]), copies, signals and waits,
//!   and submits them.
//! - [`Signal`]: a 64-bit timeline value that queues and the CPU write and wait for.
//! - [`CmdBuf`]: work recorded once and replayed many times.
//! - [`Error`]: a [`Status`] code and a message naming the call and the values.
//!
//! # Safety model
//!
//! Host views wait until the GPU work recorded so far that uses the buffer is done, and
//! borrow the buffer, so the GPU never writes memory a view shows: launches and copies that
//! write a buffer take it by `&mut`, and command-buffer replays check live views at run time.
//! Launching a kernel ([`Launch::record`]) is `unsafe`, because the library cannot see what
//! the kernel's code does: the caller guarantees it accesses only the memory it is given and
//! writes only the buffers passed with [`Launch::arg_mut`]. The argument count, sizes and
//! alignments are checked against the kernel's parameters, and the launch shape against the
//! kernel and the device.
//!
//! # Threads
//!
//! [`Device`], [`DeviceBuffer`], [`Module`], [`Kernel`], [`Signal`] and [`CmdBuf`] are `Send`
//! and `Sync`; a [`Queue`] is `Send` and records through `&mut self` (one queue per thread to
//! record in parallel).
//!
//! # Logging
//!
//! The library logs through the [`log`] module: `TEGRAGPU_LOG=info` names the backend
//! each device open chose and why; a program that installed a `log` logger receives the
//! records.

// Layers (dependencies point down only): `api` (the curated Rust API, re-exported below) and
// `capi` → `core` → `hw`, `cubin`, `backend` → `sys`, `os`; `emu` sits under the `os::Sys` seam.
// The internal layers are public for this repository's tests, tools, fuzz targets and binaries
// (and crates built on `core`), and hidden from the documentation; their doc comments are notes
// for developers, which may link private items.
#[doc(hidden)]
#[allow(rustdoc::private_intra_doc_links, rustdoc::broken_intra_doc_links)]
pub mod backend;
#[doc(hidden)]
#[allow(rustdoc::private_intra_doc_links, rustdoc::broken_intra_doc_links)]
pub mod builtin;
#[doc(hidden)]
#[allow(rustdoc::private_intra_doc_links, rustdoc::broken_intra_doc_links)]
pub mod capi;
#[doc(hidden)]
#[allow(rustdoc::private_intra_doc_links, rustdoc::broken_intra_doc_links)]
pub mod core;
#[doc(hidden)]
#[allow(rustdoc::private_intra_doc_links, rustdoc::broken_intra_doc_links)]
pub mod cubin;
#[doc(hidden)]
#[allow(rustdoc::private_intra_doc_links, rustdoc::broken_intra_doc_links)]
pub mod emu;
#[doc(hidden)]
#[allow(rustdoc::private_intra_doc_links, rustdoc::broken_intra_doc_links)]
pub mod error;
#[doc(hidden)]
#[allow(rustdoc::private_intra_doc_links, rustdoc::broken_intra_doc_links)]
pub mod hw;
pub(crate) mod libsearch;
pub mod log;
#[doc(hidden)]
#[allow(rustdoc::private_intra_doc_links, rustdoc::broken_intra_doc_links)]
pub mod nvrtc;
#[doc(hidden)]
#[allow(rustdoc::private_intra_doc_links, rustdoc::broken_intra_doc_links)]
pub mod os;
#[doc(hidden)]
#[allow(rustdoc::private_intra_doc_links, rustdoc::broken_intra_doc_links)]
pub mod ptxjit;
#[doc(hidden)]
#[allow(rustdoc::private_intra_doc_links, rustdoc::broken_intra_doc_links)]
pub mod selftest;
#[doc(hidden)]
#[allow(rustdoc::private_intra_doc_links, rustdoc::broken_intra_doc_links)]
pub mod sys;

mod api;

pub use crate::backend::{BackendKind, DeviceInfo, MemFlags};
pub use crate::core::{FaultReport, KernelAttributes, LaunchConfig, ParamAttr, QueueKind};
/// `Result<T, Error>`: what every fallible call of the library returns.
pub use crate::error::Result;
pub use crate::error::{Error, Status};
#[doc(hidden)]
pub use api::BufferArg;
pub use api::{
    CmdBuf, Device, DeviceBuffer, DeviceRepr, Dim3, HostSlice, HostSliceMut, Kernel, Launch,
    Module, Queue, Signal,
};
/// The crate [`DeviceBuffer`]'s `Pod` bound and [`DeviceRepr`]'s blanket implementation come
/// from: derive `Pod` for the `#[repr(C)]` structs kernels take by value.
pub use bytemuck;

/// The README's Rust code blocks, run as doctests (`cargo test --doc`).
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
