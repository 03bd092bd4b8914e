//! The emulated nvgpu + nvmap kernel driver (implements `crate::os::Sys`).

/// Placeholder until the emulated kernel lands.
pub struct EmuSys;
impl EmuSys {
    pub fn new() -> std::sync::Arc<dyn crate::os::Sys> {
        std::sync::Arc::new(crate::os::LinuxSys)
    }
}
