//! The emulated nvgpu + nvmap kernel driver (implements `crate::os::Sys`).

pub mod buddy;

/// Placeholder until the emulated kernel lands.
pub struct EmuSys;
