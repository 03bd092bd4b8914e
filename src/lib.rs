//! libtegragpu: usermode GPU compute dispatch for NVIDIA Jetson Orin (nvgpu + nvmap) and
//! desktop NVIDIA GPUs (nvidia.ko + nvidia-uvm), with no libcuda.
//!
//! Layers (dependencies point down only):
//! `capi` → `core` → `hw`, `cubin`, `backend` → `sys`, `os`; `emu` sits under the `os::Sys` seam.

pub mod backend;
pub mod builtin;
pub mod capi;
pub mod core;
pub mod cubin;
pub mod emu;
pub mod error;
pub mod hw;
pub(crate) mod libsearch;
pub mod log;
pub mod nvrtc;
pub mod os;
pub mod ptxjit;
pub mod selftest;
pub mod sys;

pub use error::{Error, Result, Status};
