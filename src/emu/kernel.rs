//! The emulated nvgpu + nvmap kernel driver (implements `crate::os::Sys`).

/// Placeholder until the emulated kernel lands.
pub struct EmuSys;
