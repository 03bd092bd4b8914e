//! RM backend: nvidia.ko + nvidia-uvm (desktop Ampere/Ada/Hopper/Blackwell GPUs, Jetson Thor).
//!
//! Bring-up follows rm-kernel-interface.md §2.2 (the path tinygrad's `NVKIface` takes, with the
//! Hopper classes): version check, root client, card info, the UVM address space (initialised,
//! or shared with a device of another GPU: `uvm_space.rs`), `/dev/nvidiaN` with REGISTER_FD,
//! device, subdevice, class list, usermode (doorbell) mapping, GR/FB info,
//! `FERMI_VASPACE_A` (UVM-owned, page-faulting), UVM REGISTER_GPU and REGISTER_GPU_VASPACE,
//! TSG (engine GRAPHICS), context share (ASYNC). Compute channels are created in that TSG on
//! demand (`Backend::create_channel`).
//!
//! **Copy channels** run on an asynchronous logical copy engine (LCE) in a TSG of their own
//! (`engineType = NV2080_ENGINE_TYPE_COPY(n)`, own SYNC context share on the same VA space:
//! RM allows an ASYNC subcontext only on GR and a GRCE,
//! `HOPPER_DMA_COPY_A` allocated with `NVB0B5_ALLOCATION_PARAMETERS { version 1, engineType }`).
//! At open the LCEs are listed (`NV2080_CTRL_CMD_GPU_GET_ENGINES_V2`) with their caps
//! (`CE_GET_CAPS_V2`) and PCE masks (`CE_GET_CE_PCE_MASK`); [`select_copy_engine`] picks the
//! non-GRCE LCE with the most PCEs (H200: LCE4, PCE mask 0xfff). [`COPY_ENGINE_ENV`]
//! overrides the choice (`grce`, `auto`, or an LCE index). If the LCE channel cannot be built,
//! the channel falls back to the GR copy engine in the GRAPHICS TSG (with a compute object, as
//! UVM_REGISTER_CHANNEL needs a GR context there). [H200: every configuration, GRCE, each
//! LCE, and one copy split over 2 or 3 LCEs, plateaus at ~94.5 GB/s device-to-device.]
//!
//! **Driver versions.** The loaded module's version is read from `/sys/module/nvidia/version`
//! (and checked against `/sys/module/nvidia_uvm/version` and the `NV_ESC_CHECK_VERSION_STR`
//! QUERY answer) before any RM_ALLOC or UVM call; major branches outside
//! [`crate::sys::rm::SUPPORTED_RM_BRANCHES`] are refused with `Status::UnsupportedDriver`,
//! because RM_ALLOC class parameters and UVM structs are not size-checked by the kernel (§6).
//!
//! **Memory.** Every allocation gets a GPU address from the process-wide window
//! [`va::LOW_VA_BASE`, `va::LOW_VA_END`) (below 2^40) and a CPU mapping at the same address
//! where the process has room there, elsewhere otherwise (AddressSanitizer's shadow, a second
//! copy of the library: see [`va`]):
//! * sizes round up to 4 KiB, or to 2 MiB from 8 MiB up (2 MiB pages);
//! * default and `write_combined` → video memory (`NV01_MEMORY_LOCAL_USER`, 2 MiB pages from
//!   8 MiB up, else 4 KiB), CPU-mapped through BAR1 (a fresh `/dev/nvidiaN` fd per buffer,
//!   `NV_ESC_RM_MAP_MEMORY`, `mmap`). With default flags (neither `write_combined` nor
//!   `zeroed`) the BAR1 mapping is made on first CPU access
//!   ([`Backend::map_cpu`]; `Allocation::cpu` is null until then), because the mmap of a
//!   256 MiB BAR1 window alone costs ~250 µs on H200; `TEGRAGPU_RM_EAGER_CPU_MAP=1` restores
//!   eager mapping. `TEGRAGPU_RM_TIMING=1` logs each allocation step's time (info level). CPU writes are fast (write-combined);
//!   CPU **reads** cross PCIe uncached and are very slow (H200 in a VM: ~6 MiB/s, writes
//!   ~8 GB/s): read results back through host memory or a copy. BAR1 size bounds how much
//!   vidmem can be CPU-visible at once; a failing BAR1 map is reported with the BAR1 size.
//!   `zeroed` video memory is cleared by CPU writes through BAR1.
//! * `cpu_cached` (without `write_combined`) → host memory: anonymous shared pages, pinned
//!   and GPU-mapped through an OS descriptor (`NV01_MEMORY_SYSTEM_OS_DESCRIPTOR`).
//!   CPU access is cached and coherent; GPU access crosses PCIe. Use it for signals/readback.
//! * GPU mapping for both: UVM `CREATE_EXTERNAL_RANGE` + `MAP_EXTERNAL_ALLOCATION` at the GPU
//!   address.
//!
//! GPFIFO rings and USERD live in one video-memory allocation per channel (as tinygrad does).
//! `export_dmabuf` is not implemented for RM (`Status::NotSupported`); memory is shared through
//! RM export fds instead (`export_fd` / `import_fd`, see `share.rs`).
//!
//! **Errors.** Each channel gets a 4 KiB `NV01_MEMORY_SYSTEM` error notifier as its
//! `hObjectError` (RM writes the robust-channel error into entry 0: `NvNotification.status =
//! 0xffff`, `info32` = the Xid type, e.g. 31 for an MMU fault, `info16` = engine type). It is
//! CPU-mapped, so polling costs no system call; on the first error, [`Channel::error`] also
//! asks RM for the channel's MMU fault info (`NV906F_CTRL_CMD_GET_MMU_FAULT_INFO`) so that
//! MMU faults carry the faulting GPU VA, and records the error for `Backend::fault_log`.
//! [H200-verified: a host semaphore release to an unmapped VA was reported ~140 ms later as
//! Xid 31 "FAULT_PDE" at the right address; the device reopened and worked afterwards.]
//!
//! **DeviceInfo.** `name`: `NV2080_CTRL_CMD_GPU_GET_NAME_STRING` ("NVIDIA H200"); `arch`:
//! `MC_GET_ARCH_INFO` architecture | implementation (0x180 = GH100); SM version and warps per SM:
//! GR info `SM_VERSION` / `MAX_WARPS_PER_SM`; `sm_count`: enabled TPCs (`GR_GET_GPC_MASK`, then
//! `GR_GET_TPC_MASK` per GPC) × `LITTER_NUM_SM_PER_TPC` (H200: 66 × 2 = 132; GR info
//! `MAX_SP_PER_SM` reads 0 there, so `GPU_CORE_COUNT / SP` is only a fallback); the
//! `max_*` fields are the full-die "litter" values (8 GPCs × 9 TPCs × 2 SMs); `memory_bytes`:
//! FB info `HEAP_SIZE` (H200: 143155 MiB); `va_bits` 49: the size of the `FERMI_VASPACE_A`
//! we allocate (0x1_FFFF_FB00_0000), although every buffer lives below 2^37 in practice.
//!
//! **Logging** ([`crate::log`]): each bring-up step is a debug message (`TEGRAGPU_LOG=debug`),
//! every RM escape and UVM ioctl a trace record naming the control command or class and the
//! RM status (`TEGRAGPU_LOG=trace`). `TEGRAGPU_RM_TRACE=1`, which used to print the bring-up
//! steps, is kept as an alias for `TEGRAGPU_LOG=trace` (when `TEGRAGPU_LOG` is unset).
//!
//! **Files**, one per object: `bringup.rs` (device bring-up, [`RmDetails`]), `state.rs` (the
//! device state shared with channels and its teardown), `memory.rs`, `usermode.rs` (doorbell),
//! `tsg.rs`, `channel.rs` (channels and their errors), `engines.rs` (class and copy-engine
//! choice), `facts.rs` (attributes and free memory beyond bring-up; listing the GPUs without
//! bringing one up), `rmapi.rs` (typed escapes and UVM ioctls), `va.rs` (the GPU VA window and CPU
//! placement), `uvm_space.rs` (the process's UVM address spaces: devices of different GPUs
//! share one), `peer.rs` (peer capabilities, peer access and peer mappings), `share.rs` (memory
//! shared through export fds). No file imports
//! this one; everything public is re-exported here.

mod bringup;
mod channel;
mod engines;
mod facts;
mod memory;
mod peer;
mod rmapi;
mod share;
mod state;
mod tsg;
mod usermode;
mod uvm_space;
pub mod va;

use crate::backend::{Allocation, Backend, Channel, DeviceInfo, Engine, MemFlags};
use crate::error::{Error, Result, Status};
use crate::log::debug;
use crate::os::{KernelFaultRecord, LinuxSys, Sys};
use memory::eager_cpu_map;
use rmapi::{open_node, RmApi};
use state::{Inner, MemKind};
use std::os::fd::RawFd;
use std::sync::atomic::Ordering;
use std::sync::Arc;

pub use bringup::{
    check_driver_version, RmDetails, LOCAL_WINDOW, SHARED_WINDOW, VASPACE_SIZE, VA_BITS,
};
pub use channel::{
    RmChannel, CHANNEL_UVM_RANGE, MAX_GPFIFO_ENTRIES, MIN_GPFIFO_ENTRIES, USERD_SIZE,
};
pub use engines::{
    describe_copy_engine, resolve_copy_engine, select_classes, select_copy_engine,
    CopyEngineChoice, CopyEngineInfo, RmClasses, COPY_ENGINE_ENV,
};
pub use facts::{list_gpus, parse_gpu_uuid, pci_bus_id, RmGpuListing, NVIDIA_PCI_VENDOR_ID};
pub use memory::{HUGE_PAGE_THRESHOLD, NOTIFIER_SIZE};
pub use peer::{uuid_text, FabricProbe, RmP2pCaps};
pub use share::{parse_export_metadata, EXPORT_METADATA_ENV};
pub use usermode::{DOORBELL_OFFSET, USERMODE_MAP_SIZE};

/// The RM backend. Channels keep the device alive; dropping the last reference tears the
/// device down (freeing any allocation still outstanding).
pub struct RmBackend {
    inner: Arc<Inner>,
    info: DeviceInfo,
    details: RmDetails,
}

fn read_sysfs(path: &str) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
}

impl RmBackend {
    /// The process's pages `[ptr, ptr + size)` pinned and mapped for the GPU at their own
    /// addresses; `owned`: the library unmaps them once they are freed.
    fn register(&self, ptr: u64, size: u64, owned: bool) -> Result<Allocation> {
        if size == 0 || ptr % 4096 != 0 || size % 4096 != 0 {
            return Err(Error::invalid(format!(
                "register: [{ptr:#x}, +{size:#x}) is not whole 4 KiB pages"
            )));
        }
        let rec = self.inner.register_host(ptr, size, owned)?;
        let id = self.inner.next_id.fetch_add(1, Ordering::Relaxed);
        let a = Allocation {
            gpu_va: rec.va,
            cpu: ptr as *mut u8,
            size: rec.size,
            id,
        };
        debug!(
            "register {size:#x} bytes of the process's memory at {ptr:#x} id {id} (owned: {owned})"
        );
        self.inner.mem.lock().insert(id, rec);
        Ok(a)
    }

    /// A record of memory mapped nowhere (physical memory for `map_physical`) as an
    /// allocation of this device.
    fn record_unmapped(&self, rec: state::MemRecord) -> Allocation {
        let id = self.inner.next_id.fetch_add(1, Ordering::Relaxed);
        let a = Allocation {
            gpu_va: 0,
            cpu: std::ptr::null_mut(),
            size: rec.size,
            id,
        };
        self.inner.mem.lock().insert(id, rec);
        a
    }

    /// Open the `ordinal`-th GPU (in card-info order) of the real driver. Devices of different
    /// GPUs opened this way share one UVM address space, which peer access needs
    /// (`uvm_space.rs`); `Device::open` opens RM devices this way.
    pub fn open_linux(ordinal: u32) -> Result<RmBackend> {
        RmBackend::open_with(Arc::new(LinuxSys), ordinal, true)
    }

    /// Open the first GPU through `sys` (see [`RmBackend::open_ordinal`]).
    pub fn open(sys: Arc<dyn Sys>) -> Result<RmBackend> {
        RmBackend::open_ordinal(sys, 0)
    }

    /// Open the `ordinal`-th GPU (in card-info order) through `sys`, in a UVM address space of
    /// its own (no peer access). Refuses unsupported driver branches with
    /// `Status::UnsupportedDriver` before any RM_ALLOC or UVM call.
    pub fn open_ordinal(sys: Arc<dyn Sys>, ordinal: u32) -> Result<RmBackend> {
        RmBackend::open_with(sys, ordinal, false)
    }

    /// [`RmBackend::open_ordinal`]; with `share_uvm`, in the process's shared UVM address space
    /// (only for `sys` = the real kernel: every device in a space must reach the same driver).
    fn open_with(sys: Arc<dyn Sys>, ordinal: u32, share_uvm: bool) -> Result<RmBackend> {
        let sysfs_nvidia = read_sysfs("/sys/module/nvidia/version");
        let sysfs_uvm = read_sysfs("/sys/module/nvidia_uvm/version");
        let ctl_fd = open_node(&*sys, "/dev/nvidiactl")?;
        debug!(
            "opened /dev/nvidiactl (fd {ctl_fd}); sysfs versions: nvidia {:?}, nvidia_uvm {:?}",
            sysfs_nvidia.as_deref().unwrap_or("?"),
            sysfs_uvm.as_deref().unwrap_or("?")
        );
        let checked = RmApi::query_version(&*sys, ctl_fd)
            .and_then(|q| check_driver_version(&q, sysfs_nvidia.as_deref(), sysfs_uvm.as_deref()));
        let (version, branch) = match checked {
            Ok(v) => v,
            Err(e) => {
                let _ = sys.close(ctl_fd);
                return Err(e);
            }
        };
        debug!("driver {} → branch {}", version.text, branch.major());
        let mut inner = Inner::empty(sys, ctl_fd, branch);
        bringup::bring_up(&mut inner, version, ordinal, share_uvm).map(|(info, details)| {
            RmBackend {
                inner: Arc::new(inner),
                info,
                details,
            }
        })
        // On error `inner` drops here and undoes what was built.
    }

    /// RM-specific facts (versions, PCI location, UUID, class list, FB/BAR1 sizes, handles).
    pub fn details(&self) -> &RmDetails {
        &self.details
    }

    /// CPU pointer to the usermode region (doorbell at +0x90, PTIMER at +0x80/+0x84).
    pub fn usermode_ptr(&self) -> *mut u32 {
        self.inner.usermode.ptr as *mut u32
    }

    /// [`Backend::create_channel`] returning the concrete channel type (RM handle, ring VA).
    pub fn create_rm_channel(&self, engine: Engine, entries: u32) -> Result<RmChannel> {
        RmChannel::create(
            &self.inner,
            engine,
            entries,
            self.details.bar1_kib,
            crate::backend::CopyEngine::Auto,
        )
    }

    /// Number of allocations currently outstanding.
    pub fn allocation_count(&self) -> usize {
        self.inner.mem.lock().len()
    }
}

impl Backend for RmBackend {
    fn info(&self) -> &DeviceInfo {
        &self.info
    }

    fn alloc(&self, size: u64, flags: MemFlags) -> Result<Allocation> {
        if size == 0 {
            return Err(Error::invalid("alloc: size 0"));
        }
        if size > va::LOW_VA_END - va::LOW_VA_BASE {
            return Err(Error::new(
                Status::OutOfMemory,
                format!(
                    "alloc: {size:#x} bytes exceeds the {} GiB GPU VA window",
                    (va::LOW_VA_END - va::LOW_VA_BASE) >> 30
                ),
            ));
        }
        let host = flags.cpu_cached && !flags.write_combined;
        // Default-flag video memory is CPU-mapped lazily (BAR1 mapping is most of the cost of
        // an allocation and GPU-only buffers never need it); write-combined and zeroed buffers
        // are mapped now.
        let cpu_map = flags.write_combined || flags.zeroed || eager_cpu_map();
        let rec = if host {
            self.inner.alloc_host(size)?
        } else {
            self.inner
                .alloc_vidmem(size, false, cpu_map, self.details.bar1_kib)?
        };
        if flags.zeroed && rec.kind == MemKind::Vidmem {
            // SAFETY: cpu..cpu+size is the buffer's live CPU mapping. (Host pages come zeroed.)
            unsafe { std::ptr::write_bytes(rec.cpu as *mut u8, 0, rec.size as usize) };
        }
        let id = self.inner.next_id.fetch_add(1, Ordering::Relaxed);
        let a = Allocation {
            gpu_va: rec.va,
            cpu: rec.cpu as *mut u8,
            size: rec.size,
            id,
        };
        debug!(
            "alloc {:#x} bytes ({:?}) at {:#x} id {id}",
            rec.size, rec.kind, rec.va
        );
        self.inner.mem.lock().insert(id, rec);
        Ok(a)
    }

    fn register_host(&self, ptr: u64, size: u64) -> Result<Allocation> {
        self.register(ptr, size, false)
    }

    fn adopt_host(&self, ptr: u64, size: u64) -> Result<Allocation> {
        self.register(ptr, size, true)
    }

    fn free(&self, alloc: &Allocation) -> Result<()> {
        let rec = {
            let mut m = self.inner.mem.lock();
            match m.get(&alloc.id) {
                Some(r) if r.va == alloc.gpu_va && r.size == alloc.size => m.remove(&alloc.id),
                _ => None,
            }
        };
        let rec = rec.ok_or_else(|| {
            Error::new(
                Status::InvalidHandle,
                format!(
                    "free: no allocation id {} at {:#x} (size {:#x})",
                    alloc.id, alloc.gpu_va, alloc.size
                ),
            )
        })?;
        self.inner.free_record(rec)
    }

    /// Addresses of the library's GPU VA window (`va.rs`); no UVM range until a mapping.
    fn reserve_va(&self, size: u64, align: u64) -> Result<u64> {
        if size == 0 || size > va::LOW_VA_END - va::LOW_VA_BASE {
            return Err(Error::new(
                Status::OutOfMemory,
                format!(
                    "reserve_va: {size:#x} bytes (the GPU VA window holds {} GiB)",
                    (va::LOW_VA_END - va::LOW_VA_BASE) >> 30
                ),
            ));
        }
        // Prefer a range whose CPU addresses are free as well (a few tries): a placeholder
        // holds them for views of host memory (`map_physical_cpu`).
        let align = align.max(crate::backend::VMM_GRANULE);
        let mut taken = Vec::new();
        let found = loop {
            match memory::window_alloc(size, align) {
                Ok(v) if taken.len() < 8 && !memory::hold_cpu_range(self.inner.sys(), v, size) => {
                    taken.push(v)
                }
                r => break r,
            }
        };
        let mut w = va::low_va().lock();
        for v in taken {
            w.free(v, size);
        }
        found
    }

    fn release_va(&self, va: u64, size: u64) -> Result<()> {
        memory::release_cpu_range(self.inner.sys(), va);
        va::low_va().lock().free(va, size);
        Ok(())
    }

    /// `NV01_MEMORY_LOCAL_USER` in 2 MiB pages, mapped nowhere.
    fn alloc_physical(&self, size: u64) -> Result<Allocation> {
        let rec = self.inner.alloc_vidmem_unmapped(size)?;
        Ok(self.record_unmapped(rec))
    }

    fn map_physical(&self, alloc: &Allocation, offset: u64, va: u64, size: u64) -> Result<()> {
        let handle = match self.inner.mem.lock().get(&alloc.id) {
            Some(r) if r.va == 0 && r.size == alloc.size => r.handle,
            _ => {
                return Err(Error::new(
                    Status::InvalidHandle,
                    format!("map_physical: no physical allocation id {}", alloc.id),
                ))
            }
        };
        self.inner.uvm_map_at(va, size, handle, offset)
    }

    fn unmap_physical(&self, va: u64, size: u64) -> Result<()> {
        self.inner.uvm_free(va, size)
    }

    /// Host pages in a memfd, pinned through an OS descriptor, mapped nowhere.
    fn alloc_physical_host(&self, size: u64, numa: Option<u32>) -> Result<Allocation> {
        let rec = self.inner.alloc_host_unmapped(size, numa)?;
        Ok(self.record_unmapped(rec))
    }

    /// `mmap` of the allocation's memfd at `va`.
    fn map_physical_cpu(
        &self,
        alloc: &Allocation,
        offset: u64,
        va: u64,
        size: u64,
        writable: bool,
    ) -> Result<()> {
        self.inner
            .map_host_view(alloc.id, offset, va, size, writable)
    }

    fn unmap_physical_cpu(&self, va: u64, size: u64) -> Result<()> {
        self.inner.unmap_host_view(va, size)
    }

    /// Slot 0 of an RM export fd duplicated into this device, mapped nowhere (`share.rs`).
    fn import_physical(&self, fd: RawFd) -> Result<Allocation> {
        let (rec, _) = self.inner.import_fd_as(fd, 0, &self.gpu_label(), false)?;
        Ok(self.record_unmapped(rec))
    }

    /// The CPU pointer (equal to the GPU VA where the process had room there); video memory
    /// allocated with default flags gets its BAR1 mapping here on first use.
    fn map_cpu(&self, alloc: &Allocation) -> Result<*mut u8> {
        if !alloc.cpu.is_null() {
            return Ok(alloc.cpu);
        }
        self.inner
            .map_cpu(alloc.id, alloc.gpu_va, alloc.size, self.details.bar1_kib)
    }

    /// `NV_ESC_EXPORT_TO_DMABUF_FD` of the whole allocation (`share.rs`).
    fn export_dmabuf(&self, alloc: &Allocation) -> Result<RawFd> {
        self.inner.export_dmabuf(
            "tg_buf_export_dmabuf",
            alloc.id,
            alloc.gpu_va,
            0,
            alloc.size,
            false,
        )
    }

    fn export_dmabuf_range(
        &self,
        call: &str,
        alloc: &Allocation,
        offset: u64,
        size: u64,
        pcie: bool,
    ) -> Result<RawFd> {
        self.inner
            .export_dmabuf(call, alloc.id, alloc.gpu_va, offset, size, pcie)
    }

    /// A fresh `/dev/nvidiactl` fd carrying the allocation's memory object (`share.rs`).
    fn export_fd(&self, alloc: &Allocation) -> Result<(RawFd, u64)> {
        self.inner.export_fd(alloc.id, alloc.gpu_va)
    }

    /// Slot 0 of an RM export fd, duplicated into this device and mapped at a new GPU address
    /// (`share.rs`); the CPU mapping is made on first CPU access.
    fn import_fd(&self, fd: RawFd, size: u64) -> Result<(Allocation, u64)> {
        let (rec, reported) = self.inner.import_fd(fd, size, &self.gpu_label())?;
        let id = self.inner.next_id.fetch_add(1, Ordering::Relaxed);
        let a = Allocation {
            gpu_va: rec.va,
            cpu: std::ptr::null_mut(),
            size: rec.size,
            id,
        };
        self.inner.mem.lock().insert(id, rec);
        Ok((a, reported))
    }

    fn as_any(&self) -> Option<&dyn std::any::Any> {
        Some(self)
    }

    fn label(&self) -> String {
        self.gpu_label()
    }

    /// `NV0000_CTRL_CMD_SYSTEM_GET_P2P_CAPS_V2` and the UVM address spaces (`peer.rs`).
    fn peer_info(&self, peer: &dyn Backend) -> Result<crate::backend::PeerInfo> {
        self.peer_info_dyn(peer)
    }

    fn enable_peer(&self, peer: &dyn Backend) -> Result<crate::backend::PeerInfo> {
        self.enable_peer_dyn(peer)
    }

    fn map_peer(&self, alloc: &Allocation, peer: &dyn Backend, atomics: bool) -> Result<()> {
        self.map_peer_dyn(alloc, peer, atomics)
    }

    fn unmap_peer(&self, alloc: &Allocation, peer: &dyn Backend) -> Result<()> {
        self.unmap_peer_dyn(alloc, peer)
    }

    /// A new channel. RM (H200, driver 580) times the allocation of a channel out, after about
    /// 2.4 s, with `NV_ERR_TIMEOUT` while a kernel of the device's channel group runs
    /// (`tests/queue_lifecycle.rs`), so that is refused at once while the device is busy.
    fn create_channel(
        &self,
        engine: Engine,
        entries: u32,
        device_idle: bool,
    ) -> Result<Box<dyn Channel>> {
        if !device_idle {
            return Err(Error::new(
                Status::NotSupported,
                "tg_queue_create: the device is running work, and the RM driver cannot add a channel to the device's channel group while a kernel runs (it gives up after about 2.4 s with NV_ERR_TIMEOUT); create queues while the device is idle",
            ));
        }
        Ok(Box::new(RmChannel::create(
            &self.inner,
            engine,
            entries,
            self.details.bar1_kib,
            crate::backend::CopyEngine::Auto,
        )?))
    }

    /// A copy channel on `engine`; see [`RmChannel::create`].
    fn create_copy_channel(
        &self,
        engine: crate::backend::CopyEngine,
        entries: u32,
        device_idle: bool,
    ) -> Result<Box<dyn Channel>> {
        if !device_idle {
            return self.create_channel(Engine::Copy, entries, device_idle);
        }
        Ok(Box::new(RmChannel::create(
            &self.inner,
            Engine::Copy,
            entries,
            self.details.bar1_kib,
            engine,
        )?))
    }

    fn copy_engines(&self) -> Vec<CopyEngineInfo> {
        self.inner.copy_engines.clone()
    }

    fn channel_setup_preempts(&self, _engine: Engine) -> bool {
        true
    }

    fn facts(&self) -> crate::backend::BackendFacts {
        self.query_facts()
    }

    fn memory_info(&self) -> Result<(u64, u64)> {
        self.query_memory_info()
    }

    /// Channel errors reported so far through [`Channel::error`], with the MMU fault address
    /// RM gives (`NV906F_CTRL_CMD_GET_MMU_FAULT_INFO`), oldest first.
    fn fault_log(&self) -> Vec<KernelFaultRecord> {
        self.inner.faults.lock().clone()
    }
}
