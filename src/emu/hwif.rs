//! The boundary between the emulated kernel driver and the emulated GPU.

use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// A host pointer that may be shared between the CPU threads and the GPU thread. The memory it
/// points to is a shared mapping owned by the emulated kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostPtr(pub *mut u8);
// SAFETY: points into MAP_SHARED memory whose lifetime the emulated kernel manages; concurrent
// access is the same as CPU/GPU sharing memory on hardware.
unsafe impl Send for HostPtr {}
unsafe impl Sync for HostPtr {}

/// An MMU fault raised by the GPU model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MmuFault {
    pub address: u64,
    pub write: bool,
    pub what: String,
}

/// A GPU address space as the GPU sees it (the page tables of one nvgpu VM).
pub trait Mmu: Send + Sync {
    /// Host pointer to `[va, va + len)` if the whole range lies inside one live mapping that
    /// allows the access (`write` = needs write permission); `None` = MMU fault.
    fn translate(&self, va: u64, len: u64, write: bool) -> Option<HostPtr>;
}

/// Copy `buf.len()` bytes from GPU VA `va`.
pub fn gpu_read(mmu: &dyn Mmu, va: u64, buf: &mut [u8]) -> Result<(), MmuFault> {
    let p = mmu
        .translate(va, buf.len() as u64, false)
        .ok_or_else(|| MmuFault {
            address: va,
            write: false,
            what: format!("read of {} bytes at unmapped GPU VA {va:#x}", buf.len()),
        })?;
    // SAFETY: translate guarantees the range is mapped; the memory may change concurrently,
    // so a plain byte copy is what hardware would do.
    unsafe { std::ptr::copy(p.0, buf.as_mut_ptr(), buf.len()) };
    Ok(())
}

/// Copy `data` to GPU VA `va`.
pub fn gpu_write(mmu: &dyn Mmu, va: u64, data: &[u8]) -> Result<(), MmuFault> {
    let p = mmu
        .translate(va, data.len() as u64, true)
        .ok_or_else(|| MmuFault {
            address: va,
            write: true,
            what: format!(
                "write of {} bytes to unmapped or read-only GPU VA {va:#x}",
                data.len()
            ),
        })?;
    // SAFETY: as in gpu_read.
    unsafe { std::ptr::copy(data.as_ptr(), p.0, data.len()) };
    Ok(())
}

/// What the GPU needs to run one channel (the RAMFC the kernel writes at SETUP_BIND, plus the
/// objects bound with ALLOC_OBJ_CTX and the error notifier from SET_ERROR_NOTIFIER).
pub struct HwChannel {
    /// Work-submit token (`chid | runlist << 16`).
    pub token: u32,
    /// Host pointer to the channel's USERD (GP_GET at +0x88, GP_PUT at +0x8c).
    pub userd: HostPtr,
    /// GPU VA of the GPFIFO ring and its entry count.
    pub gpfifo_va: u64,
    pub entries: u32,
    /// The channel's address space.
    pub mmu: Arc<dyn Mmu>,
    /// Engine classes allocated on this channel with ALLOC_OBJ_CTX.
    pub classes: Mutex<Vec<u32>>,
    /// Host pointer to the 16-byte `nvgpu_notification` record, when one is set.
    pub notifier: Mutex<Option<HostPtr>>,
    /// Set once an error has been posted: the channel executes nothing more.
    pub dead: AtomicBool,
}

impl HwChannel {
    pub fn is_dead(&self) -> bool {
        self.dead.load(Ordering::Acquire)
    }
}

/// A fault the GPU model reports to the kernel model (which posts the notifier and logs it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GpuFault {
    pub token: u32,
    /// nvgpu notifier code: 31 MMU fault, 13 GR exception, 32 PBDMA error, 37 unimplemented method.
    pub code: u32,
    pub address: Option<u64>,
    pub what: String,
}
