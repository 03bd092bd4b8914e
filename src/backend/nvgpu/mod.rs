//! nvgpu + nvmap backend (Jetson Orin), real or over the emulated kernel.

/// Placeholder until the nvgpu backend lands (branch `nvgpu`).
pub struct NvgpuBackend;
impl NvgpuBackend {
    pub fn open(_sys: std::sync::Arc<dyn crate::os::Sys>) -> crate::Result<crate::core::DeviceInfoStub> {
        Err(crate::Error::new(crate::Status::NotSupported, "nvgpu backend not built yet"))
    }
}
