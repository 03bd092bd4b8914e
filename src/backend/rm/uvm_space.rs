//! The UVM address spaces of the process (one `/dev/nvidia-uvm` va_space each: an fd that got
//! `UVM_INITIALIZE`, and a second fd that pinned the mm with `UVM_MM_INITIALIZE`).
//!
//! Devices of **different** GPUs opened through the real driver share one space: peer mappings
//! need both GPUs registered in the same va_space (`UVM_MAP_EXTERNAL_ALLOCATION` of one GPU's
//! memory for the other GPU looks the owner up there, and the pair's peer access is a property
//! of the va_space). Buffers already get their GPU addresses from the process-wide window
//! ([`super::va`]), so one GPU's buffer address is free in the other's VA space too.
//!
//! UVM registers a GPU once per va_space (a second `UVM_REGISTER_GPU` of the same GPU fails
//! with `NV_ERR_INVALID_DEVICE`), so a GPU opened a second time in the process joins the next
//! space that does not hold it yet, or a new one. A device that cannot join a shared space (UVM
//! refuses to mix some GPUs, e.g. coherent and non-coherent ones) falls back to a space of its
//! own. A space is closed when the last device in it is dropped. A child process after
//! `fork()` never joins its parent's spaces.

use super::rmapi::{open_node, uvm_ioctl};
use crate::error::Result;
use crate::log::debug;
use crate::os::lock::ForkMutex;
use crate::os::Sys;
use crate::sys::rm::*;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};

/// One UVM va_space.
pub(crate) struct UvmSpace {
    sys: Arc<dyn Sys>,
    /// The va_space fd (`UVM_INITIALIZE` was sent on it); every UVM call goes here.
    pub(super) fd: RawFd,
    /// The fd that sent `UVM_MM_INITIALIZE`.
    mm_fd: RawFd,
    /// The process that created it.
    pid: u32,
    /// Other devices may join (only spaces of devices opened through the real driver).
    shared: bool,
    /// Number in creation order, for messages.
    pub(super) serial: u64,
    /// The GPUs (card-info `gpu_id`) of the devices in the space.
    members: parking_lot::Mutex<Vec<u32>>,
    /// The GPU pairs whose PCIe peer access was enabled here (`UVM_ENABLE_PEER_ACCESS`), by UUID.
    pub(super) pcie_peers: parking_lot::Mutex<Vec<(NvProcessorUuid, NvProcessorUuid)>>,
}

impl Drop for UvmSpace {
    fn drop(&mut self) {
        debug!("closing UVM address space #{}", self.serial);
        for fd in [self.fd, self.mm_fd] {
            if fd >= 0 {
                let _ = self.sys.close(fd);
            }
        }
    }
}

impl UvmSpace {
    /// Open `/dev/nvidia-uvm` twice: `UVM_INITIALIZE` on the first, `UVM_MM_INITIALIZE` (not
    /// fatal) on the second.
    fn create(sys: &Arc<dyn Sys>, shared: bool) -> Result<UvmSpace> {
        static SERIAL: AtomicU64 = AtomicU64::new(1);
        let mut s = UvmSpace {
            sys: sys.clone(),
            fd: -1,
            mm_fd: -1,
            pid: std::process::id(),
            shared,
            serial: SERIAL.fetch_add(1, Ordering::Relaxed),
            members: parking_lot::Mutex::new(Vec::new()),
            pcie_peers: parking_lot::Mutex::new(Vec::new()),
        };
        // On an error below, dropping `s` closes what was opened.
        s.fd = open_node(&**sys, "/dev/nvidia-uvm")?;
        let mut ui = UVM_INITIALIZE_PARAMS::default();
        uvm_ioctl(
            &**sys,
            s.fd,
            UVM_INITIALIZE,
            &mut ui,
            |p| p.rmStatus,
            &|| "UVM_INITIALIZE(flags=0)".into(),
        )?;
        s.mm_fd = open_node(&**sys, "/dev/nvidia-uvm")?;
        let mut mm = UVM_MM_INITIALIZE_PARAMS {
            uvmFd: s.fd,
            rmStatus: 0,
        };
        let r = uvm_ioctl(
            &**sys,
            s.mm_fd,
            UVM_MM_INITIALIZE,
            &mut mm,
            |p| p.rmStatus,
            &|| "UVM_MM_INITIALIZE".into(),
        );
        debug!(
            "UVM address space #{} ({}) on /dev/nvidia-uvm fd {} (MM fd {}); UVM_MM_INITIALIZE: {:?} (errors are not fatal)",
            s.serial,
            if shared { "shared by the devices of different GPUs" } else { "this device's own" },
            s.fd,
            s.mm_fd,
            r.err()
        );
        Ok(s)
    }

    /// Whether the space may take other devices.
    pub(super) fn is_shared(&self) -> bool {
        self.shared
    }

    /// `UVM address space #2 (shared)`, for messages.
    pub(super) fn label(&self) -> String {
        format!(
            "UVM address space #{} ({})",
            self.serial,
            if self.shared { "shared" } else { "own" }
        )
    }
}

/// A device's place in a space: holds the space open and its GPU's slot in it.
pub(crate) struct UvmMembership {
    pub(super) space: Arc<UvmSpace>,
    gpu_id: u32,
}

impl Drop for UvmMembership {
    fn drop(&mut self) {
        let mut m = self.space.members.lock();
        if let Some(i) = m.iter().position(|&g| g == self.gpu_id) {
            m.swap_remove(i);
        }
    }
}

impl UvmMembership {
    /// The va_space fd.
    pub(super) fn fd(&self) -> RawFd {
        self.space.fd
    }

    /// Other devices are in the space too.
    pub(super) fn has_others(&self) -> bool {
        self.space.members.lock().len() > 1
    }
}

/// The shared spaces of this process (weak: a space lives as long as its devices).
static SPACES: ForkMutex<Vec<Weak<UvmSpace>>> = ForkMutex::new(Vec::new());

/// The list's lock, held across `fork()` (see `crate::os::fork`). Nothing else is taken while
/// it is held.
pub(crate) static FORK_LOCK: crate::os::fork::ForkLock = crate::os::fork::ForkLock {
    order: 6,
    lock: || std::mem::forget(SPACES.lock()),
    // SAFETY (of the call): the caller took the lock with `lock` and forgot its guard.
    unlock: || unsafe { SPACES.force_unlock() },
};

/// A place for the device of GPU `gpu_id`: with `share`, the first shared space of this process
/// that does not hold the GPU yet, else a new shared one; without, a new space of its own.
pub(super) fn join(sys: &Arc<dyn Sys>, share: bool, gpu_id: u32) -> Result<UvmMembership> {
    if !share {
        let space = Arc::new(UvmSpace::create(sys, false)?);
        space.members.lock().push(gpu_id);
        return Ok(UvmMembership { space, gpu_id });
    }
    crate::os::fork::register(&FORK_LOCK);
    let pid = std::process::id();
    let mut list = SPACES.lock();
    list.retain(|w| w.strong_count() > 0);
    for w in list.iter() {
        let Some(space) = w.upgrade() else { continue };
        if space.pid != pid {
            continue;
        }
        let mut m = space.members.lock();
        if !m.contains(&gpu_id) {
            m.push(gpu_id);
            drop(m);
            debug!("GPU id {gpu_id:#x} joins {}", space.label());
            return Ok(UvmMembership { space, gpu_id });
        }
    }
    let space = Arc::new(UvmSpace::create(sys, true)?);
    space.members.lock().push(gpu_id);
    list.push(Arc::downgrade(&space));
    Ok(UvmMembership { space, gpu_id })
}
