//! The usermode (doorbell) region: the BAR0 usermode page (PTIMER, doorbell) and, on Hopper and
//! later, the write-only BAR1 doorbell page, each an RM object mapped into the CPU
//! (`RM_ALLOC` + `NV_ESC_RM_MAP_MEMORY` + `mmap`).

use super::state::{Inner, RegionMap};
use crate::error::{Error, Result};
use crate::log::debug;
use crate::sys::rm::*;

/// Bytes of the usermode (doorbell) region RM maps.
pub const USERMODE_MAP_SIZE: u64 = 0x10000;
/// Offset of `NV_USERMODE_NOTIFY_CHANNEL_PENDING` (the doorbell) in the usermode region.
pub const DOORBELL_OFFSET: usize = 0x90;

/// Whether the doorbell goes through BAR1 (`TEGRAGPU_RM_DOORBELL=bar0` keeps BAR0).
///
/// RM offers the doorbell page through BAR1 on Hopper and later; NVIDIA's own kernel-mode
/// submitters (UVM, nvidia-push) use it. A BAR1 doorbell travels the same path as the BAR1
/// USERD write of GP_PUT that it announces.
pub(super) fn doorbell_over_bar1(usermode_class: u32) -> bool {
    usermode_class >= HOPPER_USERMODE_A
        && std::env::var("TEGRAGPU_RM_DOORBELL").map_or(true, |v| v != "bar0")
}

impl Inner {
    /// Allocate a usermode object of `class` under the subdevice and map
    /// [`USERMODE_MAP_SIZE`] bytes of it; on failure nothing is left behind.
    pub(super) fn map_region<T: bytemuck::Pod>(
        &self,
        class: u32,
        params: Option<&mut T>,
        flags: u32,
    ) -> Result<RegionMap> {
        let mut r = RegionMap::default();
        let res = (|| -> Result<()> {
            r.handle = self.api.alloc(self.subdevice, class, params)?;
            r.fd = self.new_dev_fd()?;
            r.linear =
                self.api
                    .map_memory(self.device, r.handle, USERMODE_MAP_SIZE, flags, r.fd)?;
            r.mapped = true;
            let prot = if flags == NVOS33_FLAGS_ACCESS_WRITE_ONLY {
                libc::PROT_WRITE
            } else {
                libc::PROT_READ | libc::PROT_WRITE
            };
            // SAFETY: maps the RM mmap context of r.fd; no fixed address.
            let p = unsafe {
                self.sys().mmap(
                    std::ptr::null_mut(),
                    USERMODE_MAP_SIZE as usize,
                    prot,
                    libc::MAP_SHARED,
                    r.fd,
                    0,
                )
            }
            .map_err(|e| {
                Error::os(
                    format!("mmap(usermode {class:#x}, len={USERMODE_MAP_SIZE:#x})"),
                    e,
                )
            })?;
            r.ptr = p as usize;
            debug!(
                "usermode {class:#x} (handle {:#x}, flags {flags:#x}) mapped at {p:p}",
                r.handle
            );
            Ok(())
        })();
        match res {
            Ok(()) => Ok(r),
            Err(e) => {
                self.unmap_region(r);
                Err(e)
            }
        }
    }

    /// Undo [`Inner::map_region`] (each step only if it was made).
    pub(super) fn unmap_region(&self, r: RegionMap) {
        if r.ptr != 0 {
            // SAFETY: a mapping made by map_region.
            let _ = unsafe {
                self.sys()
                    .munmap(r.ptr as *mut u8, USERMODE_MAP_SIZE as usize)
            };
        }
        if r.mapped {
            let _ = self.api.unmap_memory(self.device, r.handle, r.linear);
        }
        if r.fd >= 0 {
            let _ = self.sys().close(r.fd);
        }
        if r.handle != 0 {
            let _ = self.api.free(self.subdevice, r.handle);
        }
    }
}
