//! RM backend: nvidia.ko + nvidia-uvm (desktop GPUs, Jetson Thor).

/// Placeholder until the RM backend lands (branch `rm`).
pub struct RmBackend;
impl RmBackend {
    pub fn open(_sys: std::sync::Arc<dyn crate::os::Sys>) -> crate::Result<crate::core::DeviceInfoStub> {
        Err(crate::Error::new(crate::Status::NotSupported, "rm backend not built yet"))
    }
}
