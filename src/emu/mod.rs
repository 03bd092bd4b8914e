//! The emulated Orin: a strict model of the nvgpu + nvmap kernel interface ([`kernel`]) that
//! implements [`crate::os::Sys`], and a GPU model ([`gpu`]) that runs the channels' work
//! asynchronously on its own thread, like hardware.
//!
//! The two halves meet in [`hwif`]: the kernel model owns address spaces, dma-bufs and channels
//! and hands the GPU model what real hardware would see (page tables → [`hwif::Mmu`], RAMFC/USERD
//! → [`hwif::HwChannel`], the usermode doorbell page).

pub mod gpu;
pub mod hwif;
pub mod kernel;
pub mod kernels;
pub mod texture;

pub use kernel::{EmuNvmap, EmuSys};
