//! The state shared by the backend and its channels: file descriptors, the ioctl wrapper and
//! the §6 teardown.

use std::collections::HashMap;
use std::os::fd::RawFd;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use parking_lot::Mutex;

use super::{ioctl_err, os_err, NvBuf, PAGE_SIZE, WINDOW_SIZE};
use crate::error::Result;
use crate::os::Sys;
use crate::sys::nvgpu::*;

/// State shared by the backend and its channels. Dropping it (after the last channel) tears
/// the device down in the §6 order.
pub(crate) struct Device {
    pub sys: Arc<dyn Sys>,
    pub ctrl_fd: RawFd,
    pub nvmap_fd: RawFd,
    pub as_fd: RawFd,
    pub tsg_fd: RawFd,
    pub veid: u32,
    /// Usermode page (doorbell at +0x90), null until mapped.
    pub usermode: *mut u8,
    /// VA windows reserved with ALLOC_SPACE (their start offsets).
    pub areas: Vec<u64>,
    pub chars: nvgpu_gpu_characteristics,
    /// Live allocations by id.
    pub buffers: Mutex<HashMap<u64, NvBuf>>,
    /// Reservations of `reserve_va`: their aligned start → (the ALLOC_SPACE area's start, its
    /// pages).
    pub vmm_areas: Mutex<HashMap<u64, (u64, u64)>>,
    pub next_id: AtomicU64,
}
// SAFETY: `usermode` is a device mapping that lives as long as Device; writes to it are
// single 32-bit stores, as on hardware.
unsafe impl Send for Device {}
unsafe impl Sync for Device {}

impl Device {
    pub(super) fn new(sys: Arc<dyn Sys>) -> Self {
        Device {
            sys,
            ctrl_fd: -1,
            nvmap_fd: -1,
            as_fd: -1,
            tsg_fd: -1,
            veid: 0,
            usermode: std::ptr::null_mut(),
            areas: Vec::new(),
            chars: nvgpu_gpu_characteristics::default(),
            buffers: Mutex::new(HashMap::new()),
            vmm_areas: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(1),
        }
    }

    /// `ioctl(fd, request, &mut arg)`; `what` names the call with its key arguments: it builds
    /// the message on failure and, at log level trace, the ioctl's trace record ("" = the bare
    /// request name).
    pub fn ioctl<T: AbiPod>(
        &self,
        fd: RawFd,
        request: u64,
        arg: &mut T,
        what: impl Fn() -> String,
    ) -> Result<i32> {
        // SAFETY: `arg` is a valid, exclusively borrowed T; every request passed here encodes
        // size_of::<T>() (checked by tests/abi.rs against the kernel headers).
        unsafe {
            crate::os::ioctl_retrying_described(
                &*self.sys,
                fd,
                request,
                arg as *mut T as usize,
                &what,
            )
        }
        .map_err(|e| {
            let mut err = ioctl_err(what(), e);
            if e == libc::EMFILE {
                err.message.push_str(
                    " (the process has no free file descriptor below its RLIMIT_NOFILE soft \
                         limit: live buffers hold none, but creating one needs a descriptor for \
                         a moment; close descriptors or raise the limit, e.g. `ulimit -n`)",
                );
            }
            err
        })
    }

    /// `NVGPU_AS_IOCTL_FREE_SPACE` of the area at `offset` (`pages` 4 KiB pages).
    pub(super) fn free_space(&self, offset: u64, pages: u64) -> Result<()> {
        let mut f = nvgpu_as_free_space_args {
            offset,
            pages,
            page_size: PAGE_SIZE as u32,
            padding: [0; 3],
        };
        self.ioctl(self.as_fd, NVGPU_AS_IOCTL_FREE_SPACE, &mut f, || {
            format!("NVGPU_AS_IOCTL_FREE_SPACE(offset={offset:#x}, pages={pages:#x})")
        })
        .map(|_| ())
    }

    pub(super) fn close_fd(&self, fd: RawFd, what: &str) -> Result<()> {
        self.sys
            .close(fd)
            .map_err(|e| os_err(format!("close({what} fd={fd})"), e))
    }
}

impl Drop for Device {
    fn drop(&mut self) {
        // Channels are gone (each holds an Arc<Device>). §6 order from step 3.
        if self.tsg_fd >= 0 {
            let _ = self.sys.close(self.tsg_fd);
            self.tsg_fd = -1;
        }
        let leftovers: Vec<NvBuf> = self.buffers.lock().drain().map(|(_, b)| b).collect();
        for mut b in leftovers {
            let _ = self.release_buffer(&mut b);
        }
        let vmm: Vec<(u64, u64)> = self.vmm_areas.lock().drain().map(|(_, a)| a).collect();
        for (off, pages) in vmm {
            let _ = self.free_space(off, pages);
        }
        for off in std::mem::take(&mut self.areas) {
            let mut f = nvgpu_as_free_space_args {
                offset: off,
                pages: WINDOW_SIZE / PAGE_SIZE,
                page_size: PAGE_SIZE as u32,
                padding: [0; 3],
            };
            let _ = self.ioctl(self.as_fd, NVGPU_AS_IOCTL_FREE_SPACE, &mut f, || {
                format!("NVGPU_AS_IOCTL_FREE_SPACE(offset={off:#x})")
            });
        }
        if self.as_fd >= 0 {
            let _ = self.sys.close(self.as_fd);
            self.as_fd = -1;
        }
        if !self.usermode.is_null() {
            // SAFETY: the doorbell mapping made at open.
            let _ = unsafe { self.sys.munmap(self.usermode, NVGPU_USERMODE_MAP_SIZE) };
            self.usermode = std::ptr::null_mut();
        }
        if self.ctrl_fd >= 0 {
            let _ = self.sys.close(self.ctrl_fd);
            self.ctrl_fd = -1;
        }
        if self.nvmap_fd >= 0 {
            let _ = self.sys.close(self.nvmap_fd);
            self.nvmap_fd = -1;
        }
    }
}
