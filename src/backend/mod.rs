//! Backends: the kernel-driver specific part of a device. `core` sees only this trait.
//!
//! A backend opens the GPU, allocates memory that is GPU-mapped (and CPU-mapped, at the same
//! address where the driver allows it), creates channels (GPFIFO ring + USERD + doorbell + token)
//! and reports errors. Everything above it (pushbuffers, QMDs, signals) is backend-independent.

pub mod nvgpu;
pub mod peer;
pub mod pool;
pub mod rm;

pub use peer::{PeerInfo, PeerLink};

use crate::error::{Error, Result};
use crate::os::{KernelFaultRecord, Sys};
use std::os::fd::RawFd;

/// Which kernel driver a device is driven through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BackendKind {
    /// Jetson Orin: nvgpu.ko + nvmap.ko (real or emulated).
    Nvgpu,
    /// Desktop NVIDIA / Jetson Thor: nvidia.ko + nvidia-uvm.ko.
    Rm,
}

/// Static facts about a device, read from the driver at open time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceInfo {
    /// Chip or product name: "ga10b", "NVIDIA H200".
    pub name: String,
    /// The kernel driver the device is driven through.
    pub backend: BackendKind,
    /// True when the kernel driver is the in-process emulated Orin.
    pub emulated: bool,
    /// Architecture id as the driver reports it (nvgpu: 0x170 = GA10B; RM: e.g. 0x180 = GH100).
    pub arch: u32,
    /// SM version, e.g. (8, 7) for Orin, (9, 0) for Hopper.
    pub sm_major: u32,
    /// SM minor version (the 7 of sm_87).
    pub sm_minor: u32,
    /// Enabled SMs.
    pub sm_count: u32,
    /// Upper bounds for sizing local memory (full die, not the floorswept count).
    pub max_gpc_count: u32,
    /// TPCs per GPC (upper bound, as `max_gpc_count`).
    pub max_tpc_per_gpc: u32,
    /// SMs per TPC.
    pub sm_per_tpc: u32,
    /// Warps one SM holds at once.
    pub warps_per_sm: u32,
    /// Memory usable for allocations, bytes (Orin: system memory shared with the CPU).
    pub memory_bytes: u64,
    /// Width of the GPU virtual address space, bits.
    pub va_bits: u32,
    /// Compute engine class (e.g. 0xc7c0 = AMPERE_COMPUTE_B on Orin).
    pub compute_class: u32,
    /// Copy engine class.
    pub copy_class: u32,
    /// GPFIFO (channel) class.
    pub gpfifo_class: u32,
    /// Kernel driver version string, where the driver reports one.
    pub driver_version: String,
    /// Base of the shader shared-memory window (reserved in the GPU VA space).
    pub shared_window: u64,
    /// Base of the shader local-memory window (reserved in the GPU VA space).
    pub local_window: u64,
    /// CPU pointers of buffers equal their GPU addresses (nvgpu: where the driver allows it,
    /// probed at open; RM: when the process mapped nothing in the free part of the GPU VA window
    /// at open, see `backend::rm::va`). Never required: the API keeps the two apart.
    pub unified_addresses: bool,
}

/// Facts about a device beyond [`DeviceInfo`] that its driver reports; each `None` where the
/// driver does not say (see `core::DeviceAttribute` for how the library fills the rest).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BackendFacts {
    /// Maximum GPU clock, kHz (nvgpu: `max_freq`).
    pub clock_khz: Option<u32>,
    /// L2 cache, bytes.
    pub l2_cache_bytes: Option<u64>,
    /// Memory bus width, bits.
    pub memory_bus_width_bits: Option<u32>,
    /// Whether ECC is enabled on the device's memory.
    pub ecc_enabled: Option<bool>,
    /// The GPU shares the CPU's memory (Jetson).
    pub integrated: bool,
    /// PCI domain, bus, device (slot) and function.
    pub pci_location: Option<[u32; 4]>,
    /// PCI vendor id, device id, subsystem vendor id, subsystem device id.
    pub pci_ids: Option<[u16; 4]>,
    /// The GPU's UUID (RM: as the driver reports it; nvgpu: built from the driver's
    /// per-device identifier, see `core::list_devices`).
    pub uuid: Option<[u8; 16]>,
    /// SMs of each group of multiprocessors a thread-block cluster runs within (RM: the
    /// virtual GPCs of the whole GPU's skyline, `NV2080_CTRL_CMD_GPU_GET_SKYLINE_INFO`, singletons
    /// included); `None` where the driver does not say.
    pub cluster_sm_groups: Option<Vec<u32>>,
}

/// Allocation flags. With neither `cpu_cached` nor `write_combined` the backend places the memory
/// for the GPU: Orin: CPU-cached shared memory (as `cpu_cached`); desktop: video memory, mapped
/// for the CPU (BAR1) on first CPU access.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MemFlags {
    /// CPU-cached memory (Orin: nvmap CACHEABLE; desktop: pinned host memory). Fast CPU reads.
    pub cpu_cached: bool,
    /// Write-combined CPU mapping (for rings and command memory the CPU only writes).
    pub write_combined: bool,
    /// Zero the memory before returning it.
    pub zeroed: bool,
}

/// The granularity of reservations, physical allocations and their mappings (2 MiB, the
/// large page of every GPU the library drives).
pub const VMM_GRANULE: u64 = 2 << 20;

fn foreign_unsupported(label: &str) -> crate::error::Error {
    crate::error::Error::new(
        crate::error::Status::NotSupported,
        format!("{label} cannot map memory the library did not allocate for the GPU"),
    )
}

fn vmm_unsupported(info: &DeviceInfo) -> crate::error::Error {
    crate::error::Error::new(
        crate::error::Status::NotSupported,
        format!(
            "{}: this backend does not map memory at reserved GPU addresses",
            info.name
        ),
    )
}

/// `mmap` of `[offset, offset + size)` of `fd` at exactly `va` (`MAP_SHARED`), read-write or
/// read-only: the CPU view of [`Backend::map_physical_cpu`]. `replace`: over the library's own
/// placeholder there (`MAP_FIXED`); otherwise never over a mapping (`MAP_FIXED_NOREPLACE`).
pub(crate) fn map_fixed_cpu_view(
    sys: &dyn Sys,
    fd: RawFd,
    offset: u64,
    va: u64,
    size: u64,
    writable: bool,
    replace: bool,
) -> Result<()> {
    let prot = if writable {
        libc::PROT_READ | libc::PROT_WRITE
    } else {
        libc::PROT_READ
    };
    let what = || {
        format!(
            "CPU view at {va:#x}: mmap(addr={va:#x}, len={size:#x}, {}, MAP_SHARED|{}, fd={fd}, offset={offset:#x})",
            if writable { "PROT_READ|PROT_WRITE" } else { "PROT_READ" },
            if replace { "MAP_FIXED" } else { "MAP_FIXED_NOREPLACE" }
        )
    };
    let len = usize::try_from(size).map_err(|_| Error::invalid(what()))?;
    let off = i64::try_from(offset).map_err(|_| Error::invalid(what()))?;
    let fixed = if replace {
        libc::MAP_FIXED
    } else {
        libc::MAP_FIXED_NOREPLACE
    };
    // SAFETY: MAP_FIXED_NOREPLACE never replaces an existing mapping; MAP_FIXED replaces only
    // the caller's placeholder.
    let p = unsafe { sys.mmap(va as *mut u8, len, prot, libc::MAP_SHARED | fixed, fd, off) }
        .map_err(|e| {
            let mut err = Error::os(what(), e);
            if e == libc::EEXIST {
                err.message
                    .push_str(": the process already maps something at that address");
            }
            err
        })?;
    if p as u64 != va {
        // A kernel before 4.17 takes the address as a hint.
        // SAFETY: the mapping just made, at the kernel's address.
        let _ = unsafe { sys.munmap(p, len) };
        return Err(Error::new(
            crate::error::Status::NotSupported,
            format!("{}: the kernel placed it at {p:p}", what()),
        ));
    }
    Ok(())
}

/// `munmap` of a view of [`map_fixed_cpu_view`].
pub(crate) fn unmap_fixed_cpu_view(sys: &dyn Sys, va: u64, size: u64) -> Result<()> {
    // SAFETY: `[va, va + size)` is a view this library mapped with map_fixed_cpu_view.
    unsafe { sys.munmap(va as *mut u8, size as usize) }
        .map_err(|e| Error::os(format!("munmap({va:#x}, {size:#x})"), e))
}

/// One GPU allocation. `cpu` is a CPU pointer to the whole allocation, or null where the
/// backend maps it lazily (then [`Backend::map_cpu`] maps it).
#[derive(Debug)]
pub struct Allocation {
    pub gpu_va: u64,
    pub cpu: *mut u8,
    pub size: u64,
    /// Backend's identifier for `free` / `export_dmabuf`.
    pub id: u64,
}
// SAFETY: the pointer refers to a shared mapping owned by the backend until `free`.
unsafe impl Send for Allocation {}
unsafe impl Sync for Allocation {}

/// The engine a channel feeds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Engine {
    Compute,
    Copy,
}

/// Which copy engine a copy queue's channel runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CopyEngine {
    /// The backend's choice. RM: `TEGRAGPU_RM_COPY_ENGINE` when set, else the asynchronous
    /// logical copy engine with the most physical copy engines; where a channel cannot be
    /// made there, the GR copy engine ([`crate::core::Queue::engine`] says which ran).
    #[default]
    Auto,
    /// The GR copy engine (RM), in the device's graphics channel group.
    Grce,
    /// Logical copy engine `n` (RM: `NV2080_ENGINE_TYPE_COPY(n)`), in a channel group of its
    /// own. No fallback: a channel the driver refuses there is an error naming the engine.
    Lce(u32),
}

impl std::fmt::Display for CopyEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CopyEngine::Auto => f.write_str("auto"),
            CopyEngine::Grce => f.write_str("GRCE"),
            CopyEngine::Lce(n) => write!(f, "LCE{n}"),
        }
    }
}

/// The CPU-side view of a channel, for user-mode submission. All pointers stay valid until the
/// channel is dropped.
#[derive(Debug, Clone, Copy)]
pub struct ChannelRaw {
    /// CPU pointer to the GPFIFO ring (`entries` 64-bit entries).
    pub gpfifo: *mut u64,
    pub entries: u32,
    /// CPU pointer to USERD (GP_GET at byte 0x88, GP_PUT at byte 0x8c).
    pub userd: *mut u32,
    /// CPU pointer to the doorbell register (usermode page + 0x90).
    pub doorbell: *mut u32,
    /// Work-submit token to write to the doorbell.
    pub token: u32,
    /// Engine class bound to the channel (compute or copy class id).
    pub class: u32,
    /// Subchannel the engine is bound to (1 compute, 4 copy).
    pub subchannel: u32,
}
// SAFETY: the pointers refer to shared device mappings that live as long as the channel.
unsafe impl Send for ChannelRaw {}
unsafe impl Sync for ChannelRaw {}

/// A channel error reported by the driver (nvgpu error notifier, RM RC error).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChannelError {
    /// Driver error code (nvgpu notifier info32: 31 MMU fault, 13 GR exception, 8 idle timeout...).
    pub code: u32,
    pub what: String,
    /// Faulting address where the driver reports it.
    pub address: Option<u64>,
}

/// One channel: ring, USERD, doorbell, bound engine object. Dropping it tears the channel down.
pub trait Channel: Send + Sync {
    fn raw(&self) -> ChannelRaw;
    /// The driver's error state for this channel, if it has posted one.
    fn error(&self) -> Option<ChannelError>;
    /// The GPFIFO index at which the queue's first entry goes: 0 for a new channel, the
    /// previous user's GP_PUT for a channel taken from a pool.
    fn ring_start(&self) -> u32 {
        0
    }
    /// The queue abandons its work (`tg_queue_abort`): close the channel when it is dropped,
    /// even where it would otherwise be kept for reuse.
    fn discard(&self) {}
    /// The engine the channel runs on, in words (RM: `LCE4 (12 PCEs, PCE mask 0xfff)`, `GRCE`,
    /// or the GR copy engine with the reason a requested LCE was not used). Empty where the
    /// backend does not say.
    fn engine_label(&self) -> String {
        String::new()
    }
}

/// A kernel-driver backend.
pub trait Backend: Send + Sync {
    fn info(&self) -> &DeviceInfo;
    /// Allocate `size` bytes (rounded up to 4 KiB) of GPU-mapped, CPU-mapped memory.
    fn alloc(&self, size: u64, flags: MemFlags) -> Result<Allocation>;
    /// CPU pointer to `alloc`, creating the CPU mapping on first use where the backend maps
    /// lazily (RM video memory allocated with default flags has `alloc.cpu` null until then).
    /// The pointer stays valid until `free`. Default: `alloc.cpu`.
    fn map_cpu(&self, alloc: &Allocation) -> Result<*mut u8> {
        Ok(alloc.cpu)
    }
    /// Free an allocation made by `alloc` (unmaps GPU and CPU views).
    fn free(&self, alloc: &Allocation) -> Result<()>;
    /// Reserve `size` bytes of GPU virtual addresses aligned to `align` (both multiples of
    /// [`VMM_GRANULE`]), with no memory behind them; the start. Default: not supported.
    fn reserve_va(&self, size: u64, align: u64) -> Result<u64> {
        let _ = (size, align);
        Err(vmm_unsupported(self.info()))
    }
    /// Give back a reservation of [`Backend::reserve_va`] (its mappings are gone).
    fn release_va(&self, va: u64, size: u64) -> Result<()> {
        let _ = (va, size);
        Err(vmm_unsupported(self.info()))
    }
    /// Device memory with no GPU or CPU mapping (`gpu_va` 0, `cpu` null), for
    /// [`Backend::map_physical`]; `size` a multiple of [`VMM_GRANULE`]. Freed by `free`.
    fn alloc_physical(&self, size: u64) -> Result<Allocation> {
        let _ = size;
        Err(vmm_unsupported(self.info()))
    }
    /// Map `[offset, offset + size)` of physical allocation `alloc` at `va`, inside a
    /// reservation, read-write for this device's queues.
    fn map_physical(&self, alloc: &Allocation, offset: u64, va: u64, size: u64) -> Result<()> {
        let _ = (alloc, offset, va, size);
        Err(vmm_unsupported(self.info()))
    }
    /// Memory another allocation exported with [`Backend::export_fd`] (the caller keeps `fd`)
    /// as physical memory for [`Backend::map_physical`]. Default: not supported.
    fn import_physical(&self, fd: RawFd) -> Result<Allocation> {
        let _ = fd;
        Err(vmm_unsupported(self.info()))
    }
    /// Undo one [`Backend::map_physical`] (the one made at `va`, `size` bytes).
    fn unmap_physical(&self, va: u64, size: u64) -> Result<()> {
        let _ = (va, size);
        Err(vmm_unsupported(self.info()))
    }
    /// Host memory with no GPU or CPU mapping, as [`Backend::alloc_physical`] makes device
    /// memory (`numa`: the host NUMA node its pages come from; `None`: any). Default: not
    /// supported.
    fn alloc_physical_host(&self, size: u64, numa: Option<u32>) -> Result<Allocation> {
        let _ = (size, numa);
        Err(vmm_unsupported(self.info()))
    }
    /// A CPU view of `[offset, offset + size)` of physical host memory `alloc` at exactly `va`
    /// (read-write, or read-only), where the process maps nothing yet. Default: not supported.
    fn map_physical_cpu(
        &self,
        alloc: &Allocation,
        offset: u64,
        va: u64,
        size: u64,
        writable: bool,
    ) -> Result<()> {
        let _ = (alloc, offset, va, size, writable);
        Err(vmm_unsupported(self.info()))
    }
    /// Undo one [`Backend::map_physical_cpu`] (the one made at `va`, `size` bytes).
    fn unmap_physical_cpu(&self, va: u64, size: u64) -> Result<()> {
        let _ = (va, size);
        Err(vmm_unsupported(self.info()))
    }
    /// Export an allocation as a new dma-buf fd owned by the caller.
    fn export_dmabuf(&self, alloc: &Allocation) -> Result<RawFd>;
    /// Export `size` bytes from `offset` of an allocation as a new dma-buf fd owned by the
    /// caller (`pcie`: importers map it over PCIe). By default only the whole allocation,
    /// without `pcie`; `call` names the API call in errors.
    fn export_dmabuf_range(
        &self,
        call: &str,
        alloc: &Allocation,
        offset: u64,
        size: u64,
        pcie: bool,
    ) -> Result<RawFd> {
        if offset == 0 && size == alloc.size && !pcie {
            return self.export_dmabuf(alloc);
        }
        Err(crate::error::Error::new(
            crate::error::Status::NotSupported,
            format!(
                "{call}: this device exports whole allocations only, with the driver's mapping type (asked for {size:#x} bytes from {offset:#x} of {:#x}{})",
                alloc.size,
                if pcie { ", mapped over PCIe" } else { "" }
            ),
        ))
    }
    /// Export an allocation for another driver (CUDA) or process: a new fd owned by the caller
    /// (nvgpu: a dma-buf; RM: an export fd of `/dev/nvidiactl`) and the size of the memory
    /// object it carries (the allocation's size).
    fn export_fd(&self, alloc: &Allocation) -> Result<(RawFd, u64)> {
        let _ = alloc;
        Err(crate::error::Error::new(
            crate::error::Status::NotSupported,
            format!("tg_buf_export_fd: {} cannot export memory", self.label()),
        ))
    }
    /// Import memory exported as `fd` (by [`Backend::export_fd`] or another driver; the caller
    /// keeps `fd`): an allocation mapping the whole object into the GPU (and the CPU, now or
    /// through [`Backend::map_cpu`]), freed with [`Backend::free`] like any other, and the size
    /// the buffer reports: `size`, or the object's size when `size` is 0.
    fn import_fd(&self, fd: RawFd, size: u64) -> Result<(Allocation, u64)> {
        let _ = (fd, size);
        Err(crate::error::Error::new(
            crate::error::Status::NotSupported,
            format!("tg_buf_import_fd: {} cannot import memory", self.label()),
        ))
    }
    /// Map the process's own memory `[ptr, ptr + size)` (whole 4 KiB pages) for the GPU at the
    /// GPU address equal to `ptr`, pinning it (`cuMemHostRegister`): an allocation whose `cpu`
    /// is `ptr` and which [`Backend::free`] unmaps and unpins without touching the memory.
    fn register_host(&self, ptr: u64, size: u64) -> Result<Allocation> {
        let _ = (ptr, size);
        Err(foreign_unsupported(&self.label()))
    }
    /// As [`Backend::register_host`], for an anonymous mapping of the process handed to the
    /// library: freeing the allocation also unmaps the pages (after the driver has released
    /// them). Default: not supported.
    fn adopt_host(&self, ptr: u64, size: u64) -> Result<Allocation> {
        let _ = (ptr, size);
        Err(foreign_unsupported(&self.label()))
    }
    /// The backend as `Any`, so that a backend can recognise a peer of its own kind.
    fn as_any(&self) -> Option<&dyn std::any::Any> {
        None
    }
    /// The GPU in words for messages: its name and where the backend can tell, its PCI
    /// location and UUID.
    fn label(&self) -> String {
        let i = self.info();
        format!("{}{}", i.name, if i.emulated { " (emulated)" } else { "" })
    }
    /// Whether this device can access `peer`'s memory, and why (not). Backends without peer
    /// access answer no, with the reason.
    fn peer_info(&self, peer: &dyn Backend) -> Result<PeerInfo> {
        Ok(PeerInfo::refused(peer::no_peer_backend(
            self.info(),
            &self.label(),
            peer,
        )))
    }
    /// Prepare this device for access to `peer`'s memory (the driver-side part of
    /// `tg_device_enable_peer_access`; the buffers are mapped with [`Backend::map_peer`]).
    fn enable_peer(&self, peer: &dyn Backend) -> Result<PeerInfo> {
        Err(crate::error::Error::new(
            crate::error::Status::NotSupported,
            peer::no_peer_backend(self.info(), &self.label(), peer),
        ))
    }
    /// Map this device's allocation into `peer`'s GPU at the same address (`atomics`: with the
    /// atomic permission). Freeing the allocation removes the mapping.
    fn map_peer(&self, alloc: &Allocation, peer: &dyn Backend, atomics: bool) -> Result<()> {
        let _ = (alloc, atomics);
        Err(crate::error::Error::new(
            crate::error::Status::NotSupported,
            peer::no_peer_backend(self.info(), &self.label(), peer),
        ))
    }
    /// Remove a mapping made by [`Backend::map_peer`] before the allocation is freed.
    fn unmap_peer(&self, alloc: &Allocation, peer: &dyn Backend) -> Result<()> {
        let _ = (alloc, peer);
        Ok(())
    }
    /// Create a channel for `engine` with a GPFIFO ring of at least `entries` entries (power of
    /// two). `device_idle`: every queue of the device has completed the work it submitted (a
    /// backend whose channel setup preempts running work refuses to set up a channel otherwise).
    fn create_channel(
        &self,
        engine: Engine,
        entries: u32,
        device_idle: bool,
    ) -> Result<Box<dyn Channel>>;
    /// A copy channel on a chosen copy engine ([`CopyEngine::Auto`]: as `create_channel`).
    /// Backends that cannot choose refuse any other engine with `NotSupported`.
    fn create_copy_channel(
        &self,
        engine: CopyEngine,
        entries: u32,
        device_idle: bool,
    ) -> Result<Box<dyn Channel>> {
        match engine {
            CopyEngine::Auto => self.create_channel(Engine::Copy, entries, device_idle),
            other => Err(crate::error::Error::new(
                crate::error::Status::NotSupported,
                format!(
                    "tg_queue_create: {} has one copy engine for queues; {other} cannot be chosen (only the desktop driver's backend chooses copy engines)",
                    self.label()
                ),
            )),
        }
    }
    /// The logical copy engines the driver lists (RM), by index; empty where the backend does
    /// not list them.
    fn copy_engines(&self) -> Vec<rm::CopyEngineInfo> {
        Vec::new()
    }
    /// Fault records the kernel driver exposes (with addresses), newest last.
    fn fault_log(&self) -> Vec<KernelFaultRecord> {
        Vec::new()
    }
    /// Whether setting up a channel of `engine` now may preempt the device's running work
    /// (nvgpu: the whole TSG, and only when no channel of the pool is free); then queue creation
    /// first lets short running work finish (see `create_channel`).
    fn channel_setup_preempts(&self, _engine: Engine) -> bool {
        false
    }
    /// Facts beyond [`DeviceInfo`] (may ask the driver; called once per device).
    fn facts(&self) -> BackendFacts {
        BackendFacts::default()
    }
    /// (free, total) bytes of the memory allocations come from, as the driver reports them now.
    fn memory_info(&self) -> Result<(u64, u64)> {
        Err(crate::error::Error::new(
            crate::error::Status::NotSupported,
            "tg_device_memory_info: this backend does not report free memory",
        ))
    }
}

// ---------------------------------------------------------------------------------------------
// Device selection

/// The nvgpu control node: its presence means a Jetson with the nvgpu driver.
pub const NVGPU_CTRL_NODE: &str = "/dev/nvgpu/igpu0/ctrl";
/// The RM control node: its presence means the desktop NVIDIA driver.
pub const NVIDIACTL_NODE: &str = "/dev/nvidiactl";
/// The device specs `tg_device_open` / `Device::open` accept.
pub const DEVICE_SPECS: [&str; 3] = ["emu", "nvgpu", "rm"];
/// The environment variable that picks the device when the caller names none.
pub const DEVICE_ENV: &str = "TEGRAGPU_DEVICE";

/// What to open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeviceKind {
    /// The emulated Orin (nvgpu backend over the in-process emulator).
    Emu,
    /// nvgpu on a Jetson.
    Nvgpu,
    /// The desktop NVIDIA driver.
    Rm,
}

impl DeviceKind {
    /// The spec that names it: "emu", "nvgpu", "rm".
    pub fn spec(self) -> &'static str {
        match self {
            DeviceKind::Emu => "emu",
            DeviceKind::Nvgpu => "nvgpu",
            DeviceKind::Rm => "rm",
        }
    }
}

/// Where a device choice came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChoiceSource {
    /// The caller's spec (`tg_device_open(spec)`, the command-line argument).
    Argument,
    /// `TEGRAGPU_DEVICE`, because the caller named no device.
    Environment,
    /// Neither: the device node found on this machine.
    Probe,
    /// Neither, and no NVIDIA GPU on this machine: the emulator (only where the caller opts in,
    /// as `tegragpu-info` and the C examples do; `tg_device_open(NULL)` returns
    /// `TG_ERROR_NOT_FOUND` instead).
    Fallback,
}

/// Which device to open and why ([`choose_device`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceChoice {
    pub kind: DeviceKind,
    /// Which GPU of that kind: `N` of `"rm:N"` (card-info order, as `nvidia-smi` lists them);
    /// 0 otherwise.
    pub index: u32,
    pub source: ChoiceSource,
    /// Why, in words: `spec "emu" from the argument`, `spec "rm" from TEGRAGPU_DEVICE`,
    /// `no spec: found /dev/nvidiactl`, `fallback to the emulator: no NVIDIA GPU found ...`.
    pub reason: String,
}

/// `"emu", "nvgpu", "rm" or "rm:N"`, for messages.
pub fn device_specs_text() -> String {
    let q: Vec<String> = DEVICE_SPECS.iter().map(|s| format!("\"{s}\"")).collect();
    format!(
        "{}, {}, {} or \"rm:N\" (the N-th GPU, from 0)",
        q[0], q[1], q[2]
    )
}

/// Whether `spec` names a device: "emu", "nvgpu", "rm" or "rm:N".
pub fn is_device_spec(spec: &str) -> bool {
    parse_spec(spec).is_some()
}

/// A spec and the GPU index it names: "rm:2" → (Rm, 2).
fn parse_spec(spec: &str) -> Option<(DeviceKind, u32)> {
    match spec {
        "emu" => Some((DeviceKind::Emu, 0)),
        "nvgpu" => Some((DeviceKind::Nvgpu, 0)),
        "rm" => Some((DeviceKind::Rm, 0)),
        _ => {
            let n = spec.strip_prefix("rm:")?;
            // Digits only: no sign, no spaces, no empty index.
            if n.is_empty() || !n.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            n.parse().ok().map(|i| (DeviceKind::Rm, i))
        }
    }
}

/// Picks the device to open. Precedence, as a default-selection variable works (like
/// `CUDA_VISIBLE_DEVICES` for a program that names no device):
/// 1. `arg`, when it is `Some` and not empty: an explicit choice always wins;
/// 2. `env` (the value of `TEGRAGPU_DEVICE`), when it is `Some` and not empty;
/// 3. the GPU of this machine: nvgpu if [`NVGPU_CTRL_NODE`] exists, else RM if
///    [`NVIDIACTL_NODE`] exists; else `NotFound`.
///
/// An unknown spec is `InvalidArgument`, naming where it came from and the valid specs. Only
/// decides; opening (and failing to open) is the caller's.
pub fn choose_device(arg: Option<&str>, env: Option<&str>) -> Result<DeviceChoice> {
    use crate::error::{Error, Status};
    let arg = arg.filter(|s| !s.is_empty());
    let env = env.filter(|s| !s.is_empty());
    let named = match (arg, env) {
        (Some(a), _) => Some((a, ChoiceSource::Argument, "the argument".to_string())),
        (None, Some(e)) => Some((e, ChoiceSource::Environment, DEVICE_ENV.to_string())),
        (None, None) => None,
    };
    if let Some((spec, source, from)) = named {
        return match parse_spec(spec) {
            Some((kind, index)) => Ok(DeviceChoice {
                kind,
                index,
                source,
                reason: format!("spec \"{spec}\" from {from}"),
            }),
            None => Err(Error::invalid(format!(
                "unknown device spec \"{}\" (from {from}); valid specs: {}; or none for the GPU of this machine",
                spec.escape_debug(),
                device_specs_text()
            ))),
        };
    }
    let exists = |p: &str| std::path::Path::new(p).exists();
    if exists(NVGPU_CTRL_NODE) {
        Ok(DeviceChoice {
            kind: DeviceKind::Nvgpu,
            index: 0,
            source: ChoiceSource::Probe,
            reason: format!("no spec: found {NVGPU_CTRL_NODE}"),
        })
    } else if exists(NVIDIACTL_NODE) {
        Ok(DeviceChoice {
            kind: DeviceKind::Rm,
            index: 0,
            source: ChoiceSource::Probe,
            reason: format!("no spec: found {NVIDIACTL_NODE} (no {NVGPU_CTRL_NODE})"),
        })
    } else {
        Err(Error::new(
            Status::NotFound,
            format!("no NVIDIA GPU found on this machine (neither {NVGPU_CTRL_NODE} nor {NVIDIACTL_NODE} exists); open \"emu\" for the emulated Orin"),
        ))
    }
}

/// [`choose_device`], falling back to the emulator when the caller named no device and the
/// machine has no NVIDIA GPU (what `tegragpu-info` does).
pub fn choose_device_or_emulator(arg: Option<&str>, env: Option<&str>) -> Result<DeviceChoice> {
    match choose_device(arg, env) {
        Err(e) if e.status == crate::error::Status::NotFound => Ok(DeviceChoice {
            kind: DeviceKind::Emu,
            index: 0,
            source: ChoiceSource::Fallback,
            reason: format!(
                "fallback to the emulator: no NVIDIA GPU found (neither {NVGPU_CTRL_NODE} nor {NVIDIACTL_NODE} exists)"
            ),
        }),
        r => r,
    }
}
