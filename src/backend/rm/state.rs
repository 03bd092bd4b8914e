//! The device state the backend and its channels share ([`Inner`]) and the records of the RM
//! objects it owns (memory, usermode regions, TSGs). The methods that build and free each
//! object live with the object (`memory.rs`, `usermode.rs`, `tsg.rs`); dropping [`Inner`]
//! tears everything down in the reverse order of creation (rm-kernel-interface.md §5).

use super::engines::{CopyEngineInfo, RmClasses};
use super::rmapi::{open_node, uvm_ioctl, RmApi};
use crate::error::Result;
use crate::os::{KernelFaultRecord, Sys};
use crate::sys::rm::*;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicU32, AtomicU64};
use std::sync::Arc;

/// One RM object mapped into the CPU (`RM_ALLOC` + `NV_ESC_RM_MAP_MEMORY` + `mmap`). The
/// default is "nothing made" (`fd` -1), which [`Inner::unmap_region`] leaves alone.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct RegionMap {
    pub(super) handle: u32,
    pub(super) fd: RawFd,
    pub(super) linear: u64,
    pub(super) mapped: bool,
    pub(super) ptr: usize,
}

impl Default for RegionMap {
    fn default() -> Self {
        RegionMap {
            handle: 0,
            fd: -1,
            linear: 0,
            mapped: false,
            ptr: 0,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum MemKind {
    /// NV01_MEMORY_LOCAL_USER, CPU-mapped through BAR1.
    Vidmem,
    /// Anonymous host pages pinned through an OS descriptor.
    Host,
    /// NV01_MEMORY_SYSTEM, CPU-mapped anywhere through a fresh control fd (no GPU mapping).
    Notifier,
    /// Video memory imported from an export fd (`share.rs`), CPU-mapped through BAR1 on first
    /// CPU access.
    ImportedVidmem,
    /// System memory imported from an export fd, CPU-mapped through a fresh control fd on first
    /// CPU access.
    ImportedSysmem,
    /// The process's own pages (`cuMemHostRegister`), pinned through an OS descriptor and
    /// GPU-mapped at their CPU address; the record holds no CPU mapping of its own.
    Registered,
}

/// One RM memory object and its mappings. Every field that is set is undone by
/// [`Inner::free_record`], so a half-built record can be freed too.
#[derive(Debug)]
pub(super) struct MemRecord {
    pub(super) kind: MemKind,
    pub(super) handle: u32,
    pub(super) va: u64,
    pub(super) size: u64,
    /// CPU address (0 = not mapped).
    pub(super) cpu: usize,
    /// fd holding the RM mmap context (-1 = none).
    pub(super) map_fd: RawFd,
    /// pLinearAddress token of the RM CPU mapping.
    pub(super) linear: u64,
    pub(super) rm_mapped: bool,
    pub(super) uvm_mapped: bool,
    /// `va` came from the low VA allocator.
    pub(super) va_owned: bool,
    /// The RM parent of `handle` when it is not the device (an import under the subdevice).
    pub(super) parent: Option<u32>,
}

impl MemRecord {
    pub(super) fn new(kind: MemKind) -> MemRecord {
        MemRecord {
            kind,
            handle: 0,
            va: 0,
            size: 0,
            cpu: 0,
            map_fd: -1,
            linear: 0,
            rm_mapped: false,
            uvm_mapped: false,
            va_owned: false,
            parent: None,
        }
    }
}

/// The device state shared by the backend and its channels. Dropping it tears everything down
/// in the reverse order of creation (rm-kernel-interface.md §5).
pub(crate) struct Inner {
    pub(super) api: RmApi,
    pub(super) branch: RmBranch,
    pub(super) layout: RmLayout,
    /// The fd of the UVM address space the device is in (`uvm`'s; not closed by the device).
    pub(super) uvm_fd: RawFd,
    /// The device's place in a UVM address space of the process ([`super::uvm_space`]).
    pub(super) uvm: Option<super::uvm_space::UvmMembership>,
    pub(super) dev_fd: RawFd,
    pub(super) minor: u32,
    /// The device instance `device` was allocated for (export fds name it).
    pub(super) device_instance: u32,
    pub(super) device: u32,
    pub(super) subdevice: u32,
    /// The usermode region through BAR0 (registers: PTIMER, doorbell; readable).
    pub(super) usermode: RegionMap,
    /// The doorbell page through BAR1 (Hopper and later, write-only), when RM gave one: the
    /// doorbell then takes the same path as the USERD writes it announces.
    pub(super) doorbell_bar1: RegionMap,
    /// CPU address of `NV_USERMODE_NOTIFY_CHANNEL_PENDING` (0 = not mapped).
    pub(super) doorbell_ptr: usize,
    pub(super) vaspace: u32,
    pub(super) uuid: NvProcessorUuid,
    pub(super) uvm_gpu_registered: bool,
    pub(super) uvm_vaspace_registered: bool,
    pub(super) classes: Option<RmClasses>,
    pub(super) mem: Mutex<HashMap<u64, MemRecord>>,
    pub(super) next_id: AtomicU64,
    pub(super) next_handle: AtomicU32,
    /// One TSG (with its context share) per engine type: GRAPHICS for compute (and the GR
    /// copy engine), `COPY(n)` for each async copy engine used. The lock serialises channel
    /// creation and teardown.
    pub(super) sched: Mutex<HashMap<u32, TsgState>>,
    /// The logical copy engines the GPU exposes (best effort; empty when the controls fail).
    pub(super) copy_engines: Vec<CopyEngineInfo>,
    /// Channel errors seen so far (with MMU fault addresses where RM reports them).
    pub(super) faults: Mutex<Vec<KernelFaultRecord>>,
}

impl Inner {
    pub(super) fn empty(sys: Arc<dyn Sys>, ctl_fd: RawFd, branch: RmBranch) -> Inner {
        Inner {
            api: RmApi {
                sys,
                ctl_fd,
                client: 0,
            },
            branch,
            layout: branch.layout(),
            uvm_fd: -1,
            uvm: None,
            dev_fd: -1,
            minor: 0,
            device_instance: 0,
            device: 0,
            subdevice: 0,
            usermode: RegionMap::default(),
            doorbell_bar1: RegionMap::default(),
            doorbell_ptr: 0,
            vaspace: 0,
            uuid: NvProcessorUuid::default(),
            uvm_gpu_registered: false,
            uvm_vaspace_registered: false,
            classes: None,
            mem: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(1),
            // Caller-chosen handles (OS descriptors); RM's own handles look like 0xc1d0_00xx,
            // 0xcaf0_00xx, far from this range.
            next_handle: AtomicU32::new(0x5447_0000),
            sched: Mutex::new(HashMap::new()),
            copy_engines: Vec::new(),
            faults: Mutex::new(Vec::new()),
        }
    }

    pub(super) fn sys(&self) -> &dyn Sys {
        &*self.api.sys
    }

    /// A fresh `/dev/nvidiaN` fd linked to the control fd.
    pub(super) fn new_dev_fd(&self) -> Result<RawFd> {
        let fd = open_node(self.sys(), &format!("/dev/nvidia{}", self.minor))?;
        if let Err(e) = self.api.register_fd(fd) {
            let _ = self.sys().close(fd);
            return Err(e);
        }
        Ok(fd)
    }
}

/// One TSG and its context share, and how many channels live in it.
#[derive(Debug, Default)]
pub(super) struct TsgState {
    /// `NV2080_ENGINE_TYPE_*` the TSG was allocated for.
    pub(super) engine_type: u32,
    pub(super) tsg: u32,
    pub(super) ctxshare: u32,
    pub(super) subctx_id: u32,
    /// Channels currently allocated in the TSG.
    pub(super) live: u32,
    /// A channel was ever allocated in this TSG.
    pub(super) used: bool,
    pub(super) scheduled: bool,
}

impl Drop for Inner {
    fn drop(&mut self) {
        let recs: Vec<MemRecord> = self.mem.lock().drain().map(|(_, r)| r).collect();
        for r in recs {
            let _ = self.free_record(r);
        }
        let tsgs: Vec<TsgState> = self.sched.get_mut().drain().map(|(_, t)| t).collect();
        for mut st in tsgs {
            self.free_tsg(&mut st);
        }
        if self.uvm_vaspace_registered {
            let mut p = UVM_UNREGISTER_GPU_VASPACE_PARAMS {
                gpuUuid: self.uuid,
                rmStatus: 0,
            };
            let _ = uvm_ioctl(
                self.sys(),
                self.uvm_fd,
                UVM_UNREGISTER_GPU_VASPACE,
                &mut p,
                |p| p.rmStatus,
                &|| "UVM_UNREGISTER_GPU_VASPACE".into(),
            );
        }
        if self.vaspace != 0 {
            let _ = self.api.free(self.device, self.vaspace);
        }
        if self.uvm_gpu_registered {
            // PCIe peer access this GPU has in a shared space ends with it.
            self.leave_peers();
            let mut p = UVM_UNREGISTER_GPU_PARAMS {
                gpu_uuid: self.uuid,
                rmStatus: 0,
            };
            let _ = uvm_ioctl(
                self.sys(),
                self.uvm_fd,
                UVM_UNREGISTER_GPU,
                &mut p,
                |p| p.rmStatus,
                &|| "UVM_UNREGISTER_GPU".into(),
            );
        }
        let doorbell_bar1 = core::mem::take(&mut self.doorbell_bar1);
        self.unmap_region(doorbell_bar1);
        let usermode = core::mem::take(&mut self.usermode);
        self.unmap_region(usermode);
        if self.subdevice != 0 {
            let _ = self.api.free(self.device, self.subdevice);
        }
        if self.device != 0 {
            let _ = self.api.free(self.api.client, self.device);
        }
        if self.api.client != 0 {
            let _ = self.api.free(0, self.api.client);
        }
        // The UVM fds belong to the address space, closed here when this was its last device
        // (before the device fds, as a device of its own closes them).
        drop(self.uvm.take());
        for fd in [self.dev_fd, self.api.ctl_fd] {
            if fd >= 0 {
                let _ = self.sys().close(fd);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::RegionMap;

    #[test]
    fn an_unmade_region_holds_no_descriptor() {
        // Teardown closes `fd` when it is >= 0; a region that was never mapped (the BAR1
        // doorbell on older GPUs, or an open that failed early) must not close fd 0.
        let r = RegionMap::default();
        assert_eq!(r.fd, -1);
        assert_eq!((r.handle, r.ptr, r.mapped), (0, 0, false));
    }
}
