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

/// Write an error record into a channel's 16-byte `nvgpu_notification` unless it already holds
/// one (status 0xffff): linux-channel.c:nvgpu_set_err_notifier_if_empty, ga10b's
/// channel.set_error_notifier. Time stamp (CLOCK_REALTIME ns), info32 = `code`, info16 = 0, and
/// the status half-word last with Release ordering (the driver's nvgpu_wmb() before it), so a
/// reader that sees the status sees the rest. Returns whether it wrote.
pub fn post_notifier_if_empty(p: HostPtr, code: u32) -> bool {
    // SAFETY: `p` points at a 16-byte, 4-aligned record inside a live kernel mapping (checked at
    // SET_ERROR_NOTIFIER: offset + 16 <= size; nvmap buffers are page-aligned and the record
    // offset is the application's, so alignment is checked here).
    unsafe {
        let w = |off: usize| &*(p.0.add(off) as *const std::sync::atomic::AtomicU32);
        if p.0 as usize % 4 != 0 {
            // An unaligned record: plain copies (no atomics on unaligned addresses).
            let mut cur = [0u8; 16];
            std::ptr::copy(p.0, cur.as_mut_ptr(), 16);
            if u16::from_le_bytes([cur[14], cur[15]]) == 0xffff {
                return false;
            }
            let ns = realtime_ns();
            let mut rec = [0u8; 16];
            rec[0..8].copy_from_slice(&ns.to_le_bytes());
            rec[8..12].copy_from_slice(&code.to_le_bytes());
            rec[12..16].copy_from_slice(&0xffff_0000u32.to_le_bytes());
            std::ptr::copy(rec.as_ptr(), p.0, 16);
            return true;
        }
        if w(12).load(Ordering::Acquire) >> 16 == 0xffff {
            return false;
        }
        let ns = realtime_ns();
        w(0).store(ns as u32, Ordering::Relaxed);
        w(4).store((ns >> 32) as u32, Ordering::Relaxed);
        w(8).store(code, Ordering::Relaxed);
        // info16 = 0, status = 0xffff.
        w(12).store(0xffff_0000, Ordering::Release);
    }
    true
}

/// CLOCK_REALTIME in nanoseconds (ktime_get_real_ts64, what the driver stamps notifiers with).
fn realtime_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid out-pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
    (ts.tv_sec as u64)
        .wrapping_mul(1_000_000_000)
        .wrapping_add(ts.tv_nsec as u64)
}
