//! RM backend: nvidia.ko + nvidia-uvm (desktop Ampere/Ada/Hopper/Blackwell GPUs, Jetson Thor).
//!
//! Bring-up follows rm-kernel-interface.md §2.2 (the path tinygrad's `NVKIface` takes, with the
//! Hopper classes): version check, root client, UVM initialise, card info, `/dev/nvidiaN` with
//! REGISTER_FD, device, subdevice, class list, usermode (doorbell) mapping, GR/FB info,
//! `FERMI_VASPACE_A` (UVM-owned, page-faulting), UVM REGISTER_GPU and REGISTER_GPU_VASPACE,
//! TSG (engine GRAPHICS), context share (ASYNC). Compute channels are created in that TSG on
//! demand (`Backend::create_channel`).
//!
//! **Copy channels** run on an asynchronous logical copy engine (LCE) in a TSG of their own
//! (`engineType = NV2080_ENGINE_TYPE_COPY(n)`, own ASYNC context share on the same VA space,
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
//! **Memory.** Every allocation is mapped at the same address on the CPU and the GPU, chosen
//! from the process-wide window [`va::LOW_VA_BASE`, `va::LOW_VA_END`):
//! * sizes round up to 4 KiB, or to 2 MiB from 8 MiB up (2 MiB pages);
//! * default and `write_combined` → video memory (`NV01_MEMORY_LOCAL_USER`, 2 MiB pages from
//!   8 MiB up, else 4 KiB), CPU-mapped through BAR1 (a fresh `/dev/nvidiaN` fd per buffer,
//!   `NV_ESC_RM_MAP_MEMORY`, `mmap(MAP_FIXED_NOREPLACE)`). With default flags (neither
//!   `write_combined` nor `zeroed`) the BAR1 mapping is made on first CPU access
//!   ([`Backend::map_cpu`]; `Allocation::cpu` is null until then), because the mmap of a
//!   256 MiB BAR1 window alone costs ~250 µs on H200; `TEGRAGPU_RM_EAGER_CPU_MAP=1` restores
//!   eager mapping. `TEGRAGPU_RM_TIMING=1` logs each allocation step's time (info level). CPU writes are fast (write-combined);
//!   CPU **reads** cross PCIe uncached and are very slow (H200 in a VM: ~6 MiB/s, writes
//!   ~8 GB/s): read results back through host memory or a copy. BAR1 size bounds how much
//!   vidmem can be CPU-visible at once; a failing BAR1 map is reported with the BAR1 size.
//!   `zeroed` video memory is cleared by CPU writes through BAR1.
//! * `cpu_cached` (without `write_combined`) → host memory: anonymous pages at the chosen VA,
//!   pinned and GPU-mapped through an OS descriptor (`NV01_MEMORY_SYSTEM_OS_DESCRIPTOR`).
//!   CPU access is cached and coherent; GPU access crosses PCIe. Use it for signals/readback.
//! * GPU mapping for both: UVM `CREATE_EXTERNAL_RANGE` + `MAP_EXTERNAL_ALLOCATION` at the VA.
//!
//! GPFIFO rings and USERD live in one video-memory allocation per channel (as tinygrad does).
//! `export_dmabuf` is not implemented for RM yet (`Status::NotSupported`).
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

mod channel;
mod rmapi;
pub mod va;

use crate::backend::{Allocation, Backend, BackendKind, Channel, DeviceInfo, Engine, MemFlags};
use crate::error::{Error, Result, Status};
use crate::log::debug;
use crate::os::{KernelFaultRecord, LinuxSys, Sys};
use crate::sys::rm::*;
use parking_lot::Mutex;
use rmapi::{open_node, uvm_ioctl, RmApi};
use std::collections::HashMap;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

pub use channel::{RmChannel, MAX_GPFIFO_ENTRIES, MIN_GPFIFO_ENTRIES, USERD_SIZE};

/// Base of the shader shared-memory window used on Hopper and later (4 GiB aligned).
pub const SHARED_WINDOW: u64 = 0x7294_0000_0000;
/// Base of the shader local-memory window.
pub const LOCAL_WINDOW: u64 = 0x7293_0000_0000;
/// Bytes of the usermode (doorbell) region RM maps.
pub const USERMODE_MAP_SIZE: u64 = 0x10000;
/// Offset of `NV_USERMODE_NOTIFY_CHANNEL_PENDING` (the doorbell) in the usermode region.
pub const DOORBELL_OFFSET: usize = 0x90;
/// Size of the VA range registered with UVM for each channel's context buffers.
pub const CHANNEL_UVM_RANGE: u64 = 64 << 20;
/// Allocations of at least this size use 2 MiB pages.
pub const HUGE_PAGE_THRESHOLD: u64 = 8 << 20;
/// Size of the FERMI_VASPACE_A VA space (tinygrad's value, just under 2^49).
pub const VASPACE_SIZE: u64 = 0x1_FFFF_FB00_0000;
/// Width of the GPU VA space we allocate, bits.
pub const VA_BITS: u32 = 49;
/// Size of each channel's error notifier.
pub const NOTIFIER_SIZE: u64 = 4096;

const PAGE_4K: u64 = 4096;
const PAGE_2M: u64 = 2 << 20;

/// `TEGRAGPU_RM_TIMING=1`: log the duration of each allocation step, at info level (the
/// variable also makes info the default level, see [`crate::log`]). Every ioctl's own duration
/// is in its trace record anyway.
fn timing_enabled() -> bool {
    static T: OnceLock<bool> = OnceLock::new();
    *T.get_or_init(|| std::env::var_os("TEGRAGPU_RM_TIMING").is_some_and(|v| v != "0"))
}

fn timing_start() -> Option<std::time::Instant> {
    (timing_enabled() && crate::log::enabled(crate::log::Level::Info)).then(std::time::Instant::now)
}

fn timing_step(t: Option<std::time::Instant>, what: &str, size: u64) {
    if let Some(t) = t {
        crate::log::info!(
            target: "tegragpu::backend::rm::timing",
            "{what} ({size:#x} bytes): {:.1} us",
            t.elapsed().as_secs_f64() * 1e6
        );
    }
}

/// Allocations with default flags are CPU-mapped on first access ([`Backend::map_cpu`]);
/// `TEGRAGPU_RM_EAGER_CPU_MAP=1` maps them at allocation as before.
fn eager_cpu_map() -> bool {
    std::env::var_os("TEGRAGPU_RM_EAGER_CPU_MAP").is_some_and(|v| v != "0")
}

/// Whether the doorbell goes through BAR1 (`TEGRAGPU_RM_DOORBELL=bar0` keeps BAR0).
///
/// RM offers the doorbell page through BAR1 on Hopper and later; NVIDIA's own kernel-mode
/// submitters (UVM, nvidia-push) use it. A BAR1 doorbell travels the same path as the BAR1
/// USERD write of GP_PUT that it announces.
fn doorbell_over_bar1(usermode_class: u32) -> bool {
    usermode_class >= HOPPER_USERMODE_A
        && std::env::var("TEGRAGPU_RM_DOORBELL").map_or(true, |v| v != "bar0")
}

/// `size` bytes (aligned to `align`) of the shared CPU/GPU VA window.
fn window_alloc(size: u64, align: u64) -> Result<u64> {
    let mut w = va::low_va().lock();
    w.alloc(size, align).ok_or_else(|| {
        Error::new(
            Status::OutOfMemory,
            format!(
                "no {size:#x}-byte range left in the CPU/GPU VA window [{:#x}, {:#x}) ({} MiB free, fragmented or in use)",
                va::LOW_VA_BASE,
                va::LOW_VA_END,
                w.free_bytes() >> 20
            ),
        )
    })
}

/// One RM object mapped into the CPU (`RM_ALLOC` + `NV_ESC_RM_MAP_MEMORY` + `mmap`). The
/// default is "nothing made" (`fd` -1), which [`Inner::unmap_region`] leaves alone.
#[derive(Debug, PartialEq, Eq)]
struct RegionMap {
    handle: u32,
    fd: RawFd,
    linear: u64,
    mapped: bool,
    ptr: usize,
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

fn round_up(x: u64, a: u64) -> Option<u64> {
    Some(x.checked_add(a - 1)? & !(a - 1))
}

/// The engine classes picked from the GPU's class list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RmClasses {
    pub gpfifo: u32,
    pub compute: u32,
    pub copy: u32,
    pub usermode: u32,
}

/// Preference order (newest first) for each kind of class, from rm-kernel-interface.md §4.1.
const GPFIFO_CLASSES: [u32; 5] = [
    BLACKWELL_CHANNEL_GPFIFO_B,
    BLACKWELL_CHANNEL_GPFIFO_A,
    HOPPER_CHANNEL_GPFIFO_A,
    AMPERE_CHANNEL_GPFIFO_B,
    AMPERE_CHANNEL_GPFIFO_A,
];
const COMPUTE_CLASSES: [u32; 6] = [
    BLACKWELL_COMPUTE_B,
    BLACKWELL_COMPUTE_A,
    HOPPER_COMPUTE_A,
    ADA_COMPUTE_A,
    AMPERE_COMPUTE_B,
    AMPERE_COMPUTE_A,
];
const COPY_CLASSES: [u32; 5] = [
    BLACKWELL_DMA_COPY_B,
    BLACKWELL_DMA_COPY_A,
    HOPPER_DMA_COPY_A,
    AMPERE_DMA_COPY_B,
    AMPERE_DMA_COPY_A,
];
const USERMODE_CLASSES: [u32; 4] = [
    BLACKWELL_USERMODE_A,
    HOPPER_USERMODE_A,
    AMPERE_USERMODE_A,
    TURING_USERMODE_A,
];

/// Pick the newest supported GPFIFO, compute, copy and usermode classes the GPU reports.
pub fn select_classes(list: &[u32]) -> Result<RmClasses> {
    let pick = |prefs: &[u32], what: &str| -> Result<u32> {
        prefs
            .iter()
            .copied()
            .find(|c| list.contains(c))
            .ok_or_else(|| {
                Error::new(
                    Status::NotSupported,
                    format!(
                    "the GPU reports no supported {what} class (known: {}); it reports {} classes",
                    prefs.iter().map(|c| format!("{c:#x}")).collect::<Vec<_>>().join(", "),
                    list.len()
                ),
                )
            })
    };
    Ok(RmClasses {
        gpfifo: pick(&GPFIFO_CLASSES, "GPFIFO channel")?,
        compute: pick(&COMPUTE_CLASSES, "compute")?,
        copy: pick(&COPY_CLASSES, "copy-engine")?,
        usermode: pick(&USERMODE_CLASSES, "usermode (doorbell)")?,
    })
}

/// Check the driver version strings and return the branch. `sysfs_nvidia` / `sysfs_uvm` are
/// the contents of `/sys/module/{nvidia,nvidia_uvm}/version` when readable; `query` is the
/// `NV_ESC_CHECK_VERSION_STR` QUERY answer (authoritative).
pub fn check_driver_version(
    query: &str,
    sysfs_nvidia: Option<&str>,
    sysfs_uvm: Option<&str>,
) -> Result<(RmVersion, RmBranch)> {
    let v = RmVersion::parse(query)?;
    for (name, s) in [
        ("/sys/module/nvidia/version", sysfs_nvidia),
        ("/sys/module/nvidia_uvm/version", sysfs_uvm),
    ] {
        if let Some(s) = s {
            let s = s.trim();
            if s != v.text {
                return Err(Error::new(
                    Status::UnsupportedDriver,
                    format!(
                        "NVIDIA driver version mismatch: {name} says {s:?} but the loaded nvidia.ko answers {:?} (reload the modules)",
                        v.text
                    ),
                ));
            }
        }
    }
    let b = RmBranch::for_version(&v)?;
    Ok((v, b))
}

/// One logical copy engine (LCE) as RM reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CopyEngineInfo {
    /// LCE index n (`NV2080_ENGINE_TYPE_COPY(n)`).
    pub index: u32,
    /// `NV2080_ENGINE_TYPE_COPY(n)`.
    pub engine_type: u32,
    /// `NV2080_CTRL_CMD_CE_GET_CAPS_V2` caps bytes (0 when the control failed).
    pub caps: [u8; NV2080_CTRL_CE_CAPS_TBL_SIZE],
    /// Physical copy engines behind this LCE (`NV2080_CTRL_CMD_CE_GET_CE_PCE_MASK`; 0 when
    /// the control failed).
    pub pce_mask: u32,
}

impl CopyEngineInfo {
    /// The LCE is a GR copy engine (synchronous with graphics; `CE_CAPS_CE_GRCE`).
    pub fn is_grce(&self) -> bool {
        self.caps[0] & NV2080_CTRL_CE_CAPS_CE_GRCE != 0
    }
    /// Number of physical copy engines behind the LCE.
    pub fn pce_count(&self) -> u32 {
        self.pce_mask.count_ones()
    }
}

/// Where copy channels run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CopyEngineChoice {
    /// The GR copy engine, in the GRAPHICS TSG next to compute (one PCE on H200: ~94 GB/s).
    Grce,
    /// An asynchronous logical copy engine, in its own TSG (`NV2080_ENGINE_TYPE_*`).
    Lce(u32),
}

/// Environment variable overriding the copy engine: `grce`, `auto` (default) or an LCE index.
pub const COPY_ENGINE_ENV: &str = "TEGRAGPU_RM_COPY_ENGINE";

/// Pick the copy engine for copy channels. `request` is the [`COPY_ENGINE_ENV`] value:
/// `None`/`"auto"` → the async (non-GRCE) LCE with the most PCEs (lowest index on ties),
/// or the GRCE when none is known; `"grce"` → GRCE; `"<n>"` → LCE n when the GPU lists it.
pub fn select_copy_engine(
    engines: &[CopyEngineInfo],
    request: Option<&str>,
) -> Result<CopyEngineChoice> {
    match request.map(str::trim) {
        None | Some("") | Some("auto") => Ok(engines
            .iter()
            .filter(|e| !e.is_grce() && (e.pce_mask != 0 || e.caps[0] != 0))
            .fold(None::<&CopyEngineInfo>, |best, e| match best {
                Some(b) if b.pce_count() >= e.pce_count() => Some(b),
                _ => Some(e),
            })
            .map_or(CopyEngineChoice::Grce, |e| {
                CopyEngineChoice::Lce(e.engine_type)
            })),
        Some("grce") => Ok(CopyEngineChoice::Grce),
        Some(n) => {
            let idx: u32 = n.parse().map_err(|_| {
                Error::invalid(format!(
                    "{COPY_ENGINE_ENV}={n:?}: expected \"auto\", \"grce\" or an LCE index"
                ))
            })?;
            engines
                .iter()
                .find(|e| e.index == idx)
                .map(|e| CopyEngineChoice::Lce(e.engine_type))
                .ok_or_else(|| {
                    Error::new(
                        Status::NotFound,
                        format!(
                            "{COPY_ENGINE_ENV}={idx}: the GPU lists LCEs {:?}",
                            engines.iter().map(|e| e.index).collect::<Vec<_>>()
                        ),
                    )
                })
        }
    }
}

/// Facts about the RM device beyond [`DeviceInfo`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RmDetails {
    pub version: RmVersion,
    pub branch: RmBranch,
    /// RM GPU id (from card info).
    pub gpu_id: u32,
    /// Minor number: the device node is `/dev/nvidia<minor>`.
    pub minor: u32,
    pub pci_domain: u32,
    pub pci_bus: u8,
    pub pci_slot: u8,
    pub pci_device_id: u16,
    /// GPU UUID (binary) as UVM knows it.
    pub uuid: [u8; 16],
    /// Every class the device reports.
    pub class_list: Vec<u32>,
    pub classes: RmClasses,
    /// GR info `GPU_CORE_COUNT` and `MAX_SP_PER_SM` (the latter reads 0 on H200 / 580).
    pub gpu_core_count: u32,
    pub sp_per_sm: u32,
    /// Enabled TPCs (sum of `GR_GET_TPC_MASK` over `GR_GET_GPC_MASK`); sm_count = this ×
    /// `LITTER_NUM_SM_PER_TPC`.
    pub tpc_count: u32,
    /// FB info in KiB (0 when the control failed).
    pub fb_ram_kib: u32,
    pub fb_heap_kib: u32,
    pub fb_heap_free_kib: u32,
    pub bar1_kib: u32,
    pub bar1_avail_kib: u32,
    /// `NV2080_CTRL_CMD_MC_GET_ARCH_INFO` implementation (arch = architecture | implementation).
    pub arch_implementation: u32,
    /// RM handles (for diagnostics).
    pub client: u32,
    pub device: u32,
    pub subdevice: u32,
    pub vaspace: u32,
    /// TSG and context share as allocated at open (a TSG whose channels were all freed is
    /// replaced by a new one when the next channel is created).
    pub tsg: u32,
    pub ctxshare: u32,
    /// Subcontext id of the context share.
    pub subctx_id: u32,
    /// The logical copy engines (`GPU_GET_ENGINES_V2`, caps, PCE masks; best effort).
    pub copy_engines: Vec<CopyEngineInfo>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum MemKind {
    /// NV01_MEMORY_LOCAL_USER, CPU-mapped through BAR1.
    Vidmem,
    /// Anonymous host pages pinned through an OS descriptor.
    Host,
    /// NV01_MEMORY_SYSTEM, CPU-mapped anywhere through a fresh control fd (no GPU mapping).
    Notifier,
}

/// One RM memory object and its mappings. Every field that is set is undone by
/// [`Inner::free_record`], so a half-built record can be freed too.
#[derive(Debug)]
struct MemRecord {
    kind: MemKind,
    handle: u32,
    va: u64,
    size: u64,
    /// CPU address (0 = not mapped).
    cpu: usize,
    /// fd holding the RM mmap context (-1 = none).
    map_fd: RawFd,
    /// pLinearAddress token of the RM CPU mapping.
    linear: u64,
    rm_mapped: bool,
    uvm_mapped: bool,
    /// `va` came from the low VA allocator.
    va_owned: bool,
}

impl MemRecord {
    fn new(kind: MemKind) -> MemRecord {
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
        }
    }
}

/// The device state shared by the backend and its channels. Dropping it tears everything down
/// in the reverse order of creation (rm-kernel-interface.md §5).
pub(crate) struct Inner {
    api: RmApi,
    branch: RmBranch,
    layout: RmLayout,
    uvm_fd: RawFd,
    uvm_mm_fd: RawFd,
    dev_fd: RawFd,
    minor: u32,
    device: u32,
    subdevice: u32,
    /// The usermode region through BAR0 (registers: PTIMER, doorbell; readable).
    usermode: RegionMap,
    /// The doorbell page through BAR1 (Hopper and later, write-only), when RM gave one: the
    /// doorbell then takes the same path as the USERD writes it announces.
    doorbell_bar1: RegionMap,
    /// CPU address of `NV_USERMODE_NOTIFY_CHANNEL_PENDING` (0 = not mapped).
    doorbell_ptr: usize,
    vaspace: u32,
    uuid: NvProcessorUuid,
    uvm_gpu_registered: bool,
    uvm_vaspace_registered: bool,
    classes: Option<RmClasses>,
    mem: Mutex<HashMap<u64, MemRecord>>,
    next_id: AtomicU64,
    next_handle: AtomicU32,
    /// One TSG (with its context share) per engine type: GRAPHICS for compute (and the GR
    /// copy engine), `COPY(n)` for each async copy engine used. The lock serialises channel
    /// creation and teardown.
    sched: Mutex<HashMap<u32, TsgState>>,
    /// The logical copy engines the GPU exposes (best effort; empty when the controls fail).
    copy_engines: Vec<CopyEngineInfo>,
    /// Channel errors seen so far (with MMU fault addresses where RM reports them).
    faults: Mutex<Vec<KernelFaultRecord>>,
}

impl Inner {
    fn empty(sys: Arc<dyn Sys>, ctl_fd: RawFd, branch: RmBranch) -> Inner {
        Inner {
            api: RmApi {
                sys,
                ctl_fd,
                client: 0,
            },
            branch,
            layout: branch.layout(),
            uvm_fd: -1,
            uvm_mm_fd: -1,
            dev_fd: -1,
            minor: 0,
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

    fn sys(&self) -> &dyn Sys {
        &*self.api.sys
    }

    /// Allocate a usermode object of `class` under the subdevice and map
    /// [`USERMODE_MAP_SIZE`] bytes of it; on failure nothing is left behind.
    fn map_region<T: Copy>(
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
    fn unmap_region(&self, r: RegionMap) {
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

    /// A fresh `/dev/nvidiaN` fd linked to the control fd.
    fn new_dev_fd(&self) -> Result<RawFd> {
        let fd = open_node(self.sys(), &format!("/dev/nvidia{}", self.minor))?;
        if let Err(e) = self.api.register_fd(fd) {
            let _ = self.sys().close(fd);
            return Err(e);
        }
        Ok(fd)
    }

    fn uvm_map(&self, va: u64, size: u64, handle: u32) -> Result<()> {
        let t = timing_start();
        let mut r = UVM_CREATE_EXTERNAL_RANGE_PARAMS {
            base: va,
            length: size,
            ..Default::default()
        };
        uvm_ioctl(
            self.sys(),
            self.uvm_fd,
            UVM_CREATE_EXTERNAL_RANGE,
            &mut r,
            |p| p.rmStatus,
            &|| format!("UVM_CREATE_EXTERNAL_RANGE(base={va:#x}, length={size:#x})"),
        )?;
        timing_step(t, "UVM_CREATE_EXTERNAL_RANGE", size);
        let t = timing_start();
        let mut m = Box::<UVM_MAP_EXTERNAL_ALLOCATION_PARAMS>::default();
        m.base = va;
        m.length = size;
        m.offset = 0;
        m.perGpuAttributes[0] = UvmGpuMappingAttributes {
            gpuUuid: self.uuid,
            gpuMappingType: UvmGpuMappingTypeReadWriteAtomic,
            ..Default::default()
        };
        m.gpuAttributesCount = 1;
        m.rmCtrlFd = self.api.ctl_fd;
        m.hClient = self.api.client;
        m.hMemory = handle;
        let res = uvm_ioctl(
            self.sys(),
            self.uvm_fd,
            UVM_MAP_EXTERNAL_ALLOCATION,
            &mut *m,
            |p| p.rmStatus,
            &|| {
                format!("UVM_MAP_EXTERNAL_ALLOCATION(base={va:#x}, length={size:#x}, hMemory={handle:#x})")
            },
        );
        timing_step(t, "UVM_MAP_EXTERNAL_ALLOCATION", size);
        if let Err(e) = res {
            let _ = self.uvm_free(va, size);
            return Err(e);
        }
        Ok(())
    }

    /// UVM_FREE in the branch's layout.
    fn uvm_free(&self, va: u64, size: u64) -> Result<()> {
        let what = || format!("UVM_FREE(base={va:#x}, length={size:#x})");
        if self.layout.uvm_free_params_size == core::mem::size_of::<UVM_FREE_PARAMS_V590>() {
            let mut p = UVM_FREE_PARAMS_V590 {
                base: va,
                ..Default::default()
            };
            uvm_ioctl(
                self.sys(),
                self.uvm_fd,
                UVM_FREE,
                &mut p,
                |p| p.rmStatus,
                &what,
            )
        } else {
            let mut p = UVM_FREE_PARAMS {
                base: va,
                length: size,
                ..Default::default()
            };
            uvm_ioctl(
                self.sys(),
                self.uvm_fd,
                UVM_FREE,
                &mut p,
                |p| p.rmStatus,
                &what,
            )
        }
    }

    fn mem_params(
        &self,
        size: u64,
        page: u64,
        vidmem: bool,
        contiguous: bool,
    ) -> NV_MEMORY_ALLOCATION_PARAMS {
        let huge = page >= PAGE_2M;
        let phys = if contiguous {
            NVOS32_ATTR_PHYSICALITY_CONTIGUOUS
        } else {
            NVOS32_ATTR_PHYSICALITY_ALLOW_NONCONTIGUOUS
        };
        let (type_, flags, attr, attr2) = if vidmem {
            (
                NVOS32_TYPE_IMAGE,
                NVOS32_ALLOC_FLAGS_IGNORE_BANK_PLACEMENT
                    | NVOS32_ALLOC_FLAGS_ALIGNMENT_FORCE
                    | NVOS32_ALLOC_FLAGS_MEMORY_HANDLE_PROVIDED
                    | NVOS32_ALLOC_FLAGS_MAP_NOT_REQUIRED
                    | NVOS32_ALLOC_FLAGS_PERSISTENT_VIDMEM,
                phys | NVOS32_ATTR_LOCATION_VIDMEM
                    | if huge { NVOS32_ATTR_PAGE_SIZE_HUGE } else { 0 },
                NVOS32_ATTR2_ZBC_PREFER_NO_ZBC
                    | NVOS32_ATTR2_GPU_CACHEABLE_YES
                    | if huge {
                        NVOS32_ATTR2_PAGE_SIZE_HUGE_2MB
                    } else {
                        0
                    },
            )
        } else {
            (
                NVOS32_TYPE_NOTIFIER,
                NVOS32_ALLOC_FLAGS_IGNORE_BANK_PLACEMENT
                    | NVOS32_ALLOC_FLAGS_ALIGNMENT_FORCE
                    | NVOS32_ALLOC_FLAGS_MEMORY_HANDLE_PROVIDED
                    | NVOS32_ALLOC_FLAGS_MAP_NOT_REQUIRED,
                phys | NVOS32_ATTR_LOCATION_PCI,
                NVOS32_ATTR2_ZBC_PREFER_NO_ZBC | NVOS32_ATTR2_GPU_CACHEABLE_NO,
            )
        };
        NV_MEMORY_ALLOCATION_PARAMS {
            owner: self.api.client,
            type_,
            flags,
            attr,
            attr2,
            format: NV_MMU_PTE_KIND_GENERIC_MEMORY,
            size,
            alignment: page,
            limit: size - 1,
            ..Default::default()
        }
    }

    /// Video memory and its UVM GPU mapping at one VA; with `cpu_map`, also the BAR1 CPU
    /// mapping at the same VA (otherwise [`Inner::map_cpu`] makes it on first CPU access).
    fn alloc_vidmem(
        &self,
        size: u64,
        contiguous: bool,
        cpu_map: bool,
        bar1_kib: u32,
    ) -> Result<MemRecord> {
        let page = if size >= HUGE_PAGE_THRESHOLD {
            PAGE_2M
        } else {
            PAGE_4K
        };
        let size = round_up(size, page)
            .ok_or_else(|| Error::invalid(format!("allocation size {size:#x} overflows")))?;
        let mut rec = MemRecord::new(MemKind::Vidmem);
        let res = (|| -> Result<()> {
            rec.va = window_alloc(size, page)?;
            rec.va_owned = true;
            rec.size = size;
            let mut p = self.mem_params(size, page, true, contiguous);
            let t = timing_start();
            rec.handle = self
                .api
                .alloc(self.device, NV01_MEMORY_LOCAL_USER, Some(&mut p))?;
            timing_step(t, "RM_ALLOC(NV01_MEMORY_LOCAL_USER)", size);
            if cpu_map {
                self.map_bar1(&mut rec, bar1_kib)?;
            }
            self.uvm_map(rec.va, size, rec.handle)?;
            rec.uvm_mapped = true;
            Ok(())
        })();
        match res {
            Ok(()) => Ok(rec),
            Err(e) => {
                let _ = self.free_record(rec);
                Err(e)
            }
        }
    }

    /// The BAR1 CPU mapping of a video-memory record at its VA (a fresh `/dev/nvidiaN` fd,
    /// `NV_ESC_RM_MAP_MEMORY`, `mmap(MAP_FIXED_NOREPLACE)`).
    fn map_bar1(&self, rec: &mut MemRecord, bar1_kib: u32) -> Result<()> {
        let size = rec.size;
        let t = timing_start();
        rec.map_fd = self.new_dev_fd()?;
        timing_step(t, "open /dev/nvidiaN + REGISTER_FD", size);
        let t = timing_start();
        rec.linear = self.api.map_memory(self.device, rec.handle, size, 0, rec.map_fd).map_err(|mut e| {
            e.message = format!(
                "BAR1 CPU mapping of {size:#x} bytes of video memory failed (BAR1 is {} MiB, {} MiB free): {}",
                bar1_kib / 1024,
                self.bar1_avail_kib() / 1024,
                e.message
            );
            e
        })?;
        rec.rm_mapped = true;
        timing_step(t, "RM_MAP_MEMORY (BAR1)", size);
        let t = timing_start();
        rec.cpu = self.mmap_fixed(rec.va, size, rec.map_fd, libc::MAP_SHARED)?;
        timing_step(t, "mmap", size);
        Ok(())
    }

    /// CPU pointer of allocation `id` (at `va`, `size` bytes), BAR1-mapping video memory
    /// that was allocated without a CPU mapping.
    fn map_cpu(&self, id: u64, va: u64, size: u64, bar1_kib: u32) -> Result<*mut u8> {
        let mut m = self.mem.lock();
        let rec = match m.get_mut(&id) {
            Some(r) if r.va == va && r.size == size => r,
            _ => {
                return Err(Error::new(
                    Status::InvalidHandle,
                    format!("map_cpu: no allocation id {id} at {va:#x} (size {size:#x})"),
                ))
            }
        };
        if rec.cpu == 0 {
            if rec.kind != MemKind::Vidmem {
                return Err(Error::new(
                    Status::Internal,
                    format!(
                        "map_cpu: allocation id {id} ({:?}) has no CPU mapping",
                        rec.kind
                    ),
                ));
            }
            if let Err(e) = self.map_bar1(rec, bar1_kib) {
                // Undo the partial mapping so that a later call can try again.
                if rec.rm_mapped {
                    let _ = self.api.unmap_memory(self.device, rec.handle, rec.linear);
                    rec.rm_mapped = false;
                }
                if rec.map_fd >= 0 {
                    let _ = self.sys().close(rec.map_fd);
                    rec.map_fd = -1;
                }
                return Err(e);
            }
        }
        Ok(rec.cpu as *mut u8)
    }

    /// Host pages at one VA, pinned through an OS descriptor and UVM-mapped.
    fn alloc_host(&self, size: u64) -> Result<MemRecord> {
        let size = round_up(size, PAGE_4K)
            .ok_or_else(|| Error::invalid(format!("allocation size {size:#x} overflows")))?;
        let align = if size >= HUGE_PAGE_THRESHOLD {
            PAGE_2M
        } else {
            PAGE_4K
        };
        let mut rec = MemRecord::new(MemKind::Host);
        let res = (|| -> Result<()> {
            rec.va = window_alloc(size, align)?;
            rec.va_owned = true;
            rec.size = size;
            rec.cpu = self.mmap_fixed(rec.va, size, -1, libc::MAP_SHARED | libc::MAP_ANONYMOUS)?;
            let handle = self.next_handle.fetch_add(1, Ordering::Relaxed);
            self.api
                .alloc_os_descriptor(self.dev_fd, self.device, handle, rec.va, size)?;
            rec.handle = handle;
            self.uvm_map(rec.va, size, rec.handle)?;
            rec.uvm_mapped = true;
            Ok(())
        })();
        match res {
            Ok(()) => Ok(rec),
            Err(e) => {
                let _ = self.free_record(rec);
                Err(e)
            }
        }
    }

    /// A small NV01_MEMORY_SYSTEM buffer for RM to write notifications into, CPU-mapped
    /// through a fresh control fd (it needs no GPU mapping).
    fn alloc_notifier(&self) -> Result<MemRecord> {
        let mut rec = MemRecord::new(MemKind::Notifier);
        let res = (|| -> Result<()> {
            rec.size = NOTIFIER_SIZE;
            let mut p = self.mem_params(NOTIFIER_SIZE, PAGE_4K, false, false);
            rec.handle = self
                .api
                .alloc(self.device, NV01_MEMORY_SYSTEM, Some(&mut p))?;
            rec.map_fd = open_node(self.sys(), "/dev/nvidiactl")?;
            rec.linear =
                self.api
                    .map_memory(self.device, rec.handle, NOTIFIER_SIZE, 0, rec.map_fd)?;
            rec.rm_mapped = true;
            // SAFETY: a fresh shared mapping of the RM mmap context; no fixed address.
            let p = unsafe {
                self.sys().mmap(
                    std::ptr::null_mut(),
                    NOTIFIER_SIZE as usize,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_SHARED,
                    rec.map_fd,
                    0,
                )
            }
            .map_err(|e| {
                Error::os(
                    format!("mmap(notifier, fd={}, len={NOTIFIER_SIZE:#x})", rec.map_fd),
                    e,
                )
            })?;
            rec.cpu = p as usize;
            Ok(())
        })();
        match res {
            Ok(()) => Ok(rec),
            Err(e) => {
                let _ = self.free_record(rec);
                Err(e)
            }
        }
    }

    /// mmap at exactly `va` (MAP_FIXED_NOREPLACE; fails rather than replacing a mapping).
    fn mmap_fixed(&self, va: u64, size: u64, fd: RawFd, flags: i32) -> Result<usize> {
        let len = usize::try_from(size)
            .map_err(|_| Error::invalid(format!("size {size:#x} too large")))?;
        // SAFETY: MAP_FIXED_NOREPLACE never replaces an existing mapping.
        let p = unsafe {
            self.sys().mmap(
                va as *mut u8,
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                flags | libc::MAP_FIXED_NOREPLACE,
                fd,
                0,
            )
        }
        .map_err(|e| {
            Error::os(
                format!("mmap(addr={va:#x}, len={size:#x}, fd={fd}, MAP_FIXED_NOREPLACE)"),
                e,
            )
        })?;
        if p as u64 != va {
            // A kernel without MAP_FIXED_NOREPLACE treats the address as a hint.
            // SAFETY: p is the mapping just created.
            let _ = unsafe { self.sys().munmap(p, len) };
            return Err(Error::new(
                Status::OutOfMemory,
                format!(
                    "mmap at {va:#x} returned {:#x}: the address range is taken",
                    p as u64
                ),
            ));
        }
        Ok(p as usize)
    }

    fn bar1_avail_kib(&self) -> u32 {
        let mut list = [NV2080_CTRL_FB_INFO {
            index: NV2080_CTRL_FB_INFO_INDEX_BAR1_AVAIL_SIZE,
            data: 0,
        }];
        let mut p = NV2080_CTRL_FB_GET_INFO_PARAMS {
            fbInfoListSize: 1,
            _pad: 0,
            fbInfoList: list.as_mut_ptr() as u64,
        };
        match self
            .api
            .control(self.subdevice, NV2080_CTRL_CMD_FB_GET_INFO, &mut p)
        {
            Ok(()) => list[0].data,
            Err(_) => 0,
        }
    }

    /// Undo everything a record holds (§5 order: munmap, RM unmap, close, UVM_FREE, RM_FREE).
    /// Continues past failures and returns the first.
    fn free_record(&self, rec: MemRecord) -> Result<()> {
        let mut first: Option<Error> = None;
        let mut note = |r: Result<()>| {
            if let Err(e) = r {
                first.get_or_insert(e);
            }
        };
        let len = rec.size as usize;
        if rec.kind != MemKind::Host && rec.cpu != 0 {
            // SAFETY: cpu/len is a mapping this record created.
            note(
                unsafe { self.sys().munmap(rec.cpu as *mut u8, len) }
                    .map_err(|e| Error::os(format!("munmap({:#x}, {len:#x})", rec.cpu), e)),
            );
        }
        if rec.rm_mapped {
            let t = timing_start();
            note(self.api.unmap_memory(self.device, rec.handle, rec.linear));
            timing_step(t, "free: RM_UNMAP_MEMORY", rec.size);
        }
        if rec.map_fd >= 0 {
            note(
                self.sys()
                    .close(rec.map_fd)
                    .map_err(|e| Error::os(format!("close({})", rec.map_fd), e)),
            );
        }
        if rec.uvm_mapped {
            let t = timing_start();
            note(self.uvm_free(rec.va, rec.size));
            timing_step(t, "free: UVM_FREE", rec.size);
        }
        if rec.handle != 0 {
            let t = timing_start();
            note(self.api.free(self.device, rec.handle));
            timing_step(t, "free: RM_FREE", rec.size);
        }
        if rec.kind == MemKind::Host && rec.cpu != 0 {
            // SAFETY: as above; unmapped only after RM released its pin.
            note(
                unsafe { self.sys().munmap(rec.cpu as *mut u8, len) }
                    .map_err(|e| Error::os(format!("munmap({:#x}, {len:#x})", rec.cpu), e)),
            );
        }
        if rec.va_owned {
            va::low_va().lock().free(rec.va, rec.size);
        }
        match first {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Allocate the TSG (engine `st.engine_type`) and its context share (ASYNC) into `st`.
    fn alloc_tsg(&self, st: &mut TsgState) -> Result<()> {
        let mut tp = NV_CHANNEL_GROUP_ALLOCATION_PARAMETERS {
            engineType: st.engine_type,
            ..Default::default()
        };
        st.tsg = self
            .api
            .alloc(self.device, KEPLER_CHANNEL_GROUP_A, Some(&mut tp))?;
        let mut cp = NV_CTXSHARE_ALLOCATION_PARAMETERS {
            hVASpace: self.vaspace,
            flags: NV_CTXSHARE_ALLOCATION_FLAGS_SUBCONTEXT_ASYNC,
            subctxId: 0,
        };
        st.ctxshare = self
            .api
            .alloc(st.tsg, FERMI_CONTEXT_SHARE_A, Some(&mut cp))?;
        st.subctx_id = cp.subctxId;
        st.used = false;
        st.scheduled = false;
        debug!(
            "TSG {:#x} (engine type {:#x}), context share {:#x} (subctx {})",
            st.tsg, st.engine_type, st.ctxshare, st.subctx_id
        );
        Ok(())
    }

    /// Ask for compute instruction-level preemption (CILP) on a GR TSG once its context
    /// exists (after the first compute object, before scheduling), as libcuda does for each
    /// context: without it (wait-for-idle) a kernel that does not end cannot be switched out,
    /// so other contexts stall until RM gives up (Xid 109, CTX SWITCH TIMEOUT) and stops every
    /// channel of the TSG. Not fatal if refused.
    fn set_compute_preemption(&self, st: &TsgState) {
        if st.engine_type == NV2080_ENGINE_TYPE_GRAPHICS {
            let mut pp = NV2080_CTRL_GR_SET_CTXSW_PREEMPTION_MODE_PARAMS {
                flags: NV2080_CTRL_GR_SET_CTXSW_PREEMPTION_MODE_FLAGS_CILP_SET,
                hChannel: st.tsg,
                cilpPreemptMode: NV2080_CTRL_SET_CTXSW_PREEMPTION_MODE_COMPUTE_CILP,
                ..Default::default()
            };
            match self.api.control(
                self.subdevice,
                NV2080_CTRL_CMD_GR_SET_CTXSW_PREEMPTION_MODE,
                &mut pp,
            ) {
                Ok(()) => debug!("TSG {:#x}: compute preemption CILP", st.tsg),
                Err(e) => debug!("TSG {:#x}: compute preemption CILP refused: {e}", st.tsg),
            }
        }
    }

    fn free_tsg(&self, st: &mut TsgState) {
        if st.ctxshare != 0 {
            let _ = self.api.free(st.tsg, st.ctxshare);
            st.ctxshare = 0;
        }
        if st.tsg != 0 {
            let _ = self.api.free(self.device, st.tsg);
            st.tsg = 0;
        }
    }

    /// A TSG whose channels have all been freed does not accept new channels
    /// (RM_ALLOC fails with NV_ERR_INVALID_STATE [H200]): replace it with a fresh one.
    fn fresh_tsg_if_emptied(&self, st: &mut TsgState) -> Result<()> {
        if st.live == 0 && st.used {
            debug!("TSG {:#x} emptied; allocating a new one", st.tsg);
            self.free_tsg(st);
            self.alloc_tsg(st)?;
        }
        Ok(())
    }

    /// GPFIFO_SCHEDULE(enable) on the TSG, after each new channel (re-enabling a running TSG
    /// is accepted [H200]).
    fn schedule_tsg(&self, st: &mut TsgState) -> Result<()> {
        if !st.scheduled {
            self.set_compute_preemption(st);
        }
        let size = self.layout.gpfifo_schedule_params_size;
        let mut p = NVA06C_CTRL_GPFIFO_SCHEDULE_PARAMS {
            bEnable: 1,
            bSkipSubmit: 0,
            bSkipEnable: 0,
        };
        let r = self
            .api
            .control_sized(st.tsg, NVA06C_CTRL_CMD_GPFIFO_SCHEDULE, &mut p, size);
        match r {
            Ok(()) => {
                debug!("GPFIFO_SCHEDULE(enable) on TSG {:#x}: ok", st.tsg);
                st.scheduled = true;
                Ok(())
            }
            Err(e) if st.scheduled => {
                // Already scheduled: disable and enable again so the new channel joins.
                debug!("GPFIFO_SCHEDULE(enable) again failed ({e}); disabling and re-enabling");
                let mut d = NVA06C_CTRL_GPFIFO_SCHEDULE_PARAMS {
                    bEnable: 0,
                    bSkipSubmit: 0,
                    bSkipEnable: 0,
                };
                self.api
                    .control_sized(st.tsg, NVA06C_CTRL_CMD_GPFIFO_SCHEDULE, &mut d, size)?;
                let mut p = NVA06C_CTRL_GPFIFO_SCHEDULE_PARAMS {
                    bEnable: 1,
                    bSkipSubmit: 0,
                    bSkipEnable: 0,
                };
                self.api
                    .control_sized(st.tsg, NVA06C_CTRL_CMD_GPFIFO_SCHEDULE, &mut p, size)
            }
            Err(e) => Err(e),
        }
    }
}

/// One TSG and its context share, and how many channels live in it.
#[derive(Debug, Default)]
struct TsgState {
    /// `NV2080_ENGINE_TYPE_*` the TSG was allocated for.
    engine_type: u32,
    tsg: u32,
    ctxshare: u32,
    subctx_id: u32,
    /// Channels currently allocated in the TSG.
    live: u32,
    /// A channel was ever allocated in this TSG.
    used: bool,
    scheduled: bool,
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
        for fd in [self.uvm_fd, self.uvm_mm_fd, self.dev_fd, self.api.ctl_fd] {
            if fd >= 0 {
                let _ = self.sys().close(fd);
            }
        }
    }
}

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
    /// Open the `ordinal`-th GPU (in card-info order) of the real driver.
    pub fn open_linux(ordinal: u32) -> Result<RmBackend> {
        RmBackend::open_ordinal(Arc::new(LinuxSys), ordinal)
    }

    /// Open the first GPU through `sys` (see [`RmBackend::open_ordinal`]).
    pub fn open(sys: Arc<dyn Sys>) -> Result<RmBackend> {
        RmBackend::open_ordinal(sys, 0)
    }

    /// Open the `ordinal`-th GPU (in card-info order) through `sys`. Refuses unsupported driver
    /// branches with `Status::UnsupportedDriver` before any RM_ALLOC or UVM call.
    pub fn open_ordinal(sys: Arc<dyn Sys>, ordinal: u32) -> Result<RmBackend> {
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
        Self::bring_up(&mut inner, version, ordinal).map(|(info, details)| RmBackend {
            inner: Arc::new(inner),
            info,
            details,
        })
        // On error `inner` drops here and undoes what was built.
    }

    fn bring_up(
        inner: &mut Inner,
        version: RmVersion,
        ordinal: u32,
    ) -> Result<(DeviceInfo, RmDetails)> {
        let client = inner.api.alloc_client()?;
        debug!("root client {client:#x}");

        // Cross-check the branch with the size-checked build-version control.
        let mut bv = Box::<NV0000_CTRL_SYSTEM_GET_BUILD_VERSION_V2_PARAMS>::default();
        let bsize = inner.layout.build_version_v2_size;
        inner
            .api
            .control_sized(
                client,
                NV0000_CTRL_CMD_SYSTEM_GET_BUILD_VERSION_V2,
                &mut *bv,
                bsize,
            )
            .map_err(|e| {
                Error::new(
                    Status::UnsupportedDriver,
                    format!(
                        "driver {} does not answer GET_BUILD_VERSION_V2 in the {}-byte layout: {e}",
                        version.text, bsize
                    ),
                )
            })?;
        let dv = c_string(&bv.driverVersionBuffer);
        debug!(
            "GET_BUILD_VERSION_V2: driver {dv:?} branch {:?}",
            c_string(&bv.driverBranch)
        );
        if RmVersion::parse(&dv).is_ok_and(|b| b.major != version.major) {
            return Err(Error::new(
                Status::UnsupportedDriver,
                format!(
                    "GET_BUILD_VERSION_V2 reports driver {dv:?} but the version query said {:?}",
                    version.text
                ),
            ));
        }

        // UVM: INITIALIZE on one fd, MM_INITIALIZE on a second.
        inner.uvm_fd = open_node(inner.sys(), "/dev/nvidia-uvm")?;
        let mut ui = UVM_INITIALIZE_PARAMS::default();
        uvm_ioctl(
            inner.sys(),
            inner.uvm_fd,
            UVM_INITIALIZE,
            &mut ui,
            |p| p.rmStatus,
            &|| "UVM_INITIALIZE(flags=0)".into(),
        )?;
        inner.uvm_mm_fd = open_node(inner.sys(), "/dev/nvidia-uvm")?;
        debug!(
            "UVM initialised on /dev/nvidia-uvm (fd {}; MM fd {})",
            inner.uvm_fd, inner.uvm_mm_fd
        );
        let mut mm = UVM_MM_INITIALIZE_PARAMS {
            uvmFd: inner.uvm_fd,
            rmStatus: 0,
        };
        let r = uvm_ioctl(
            inner.sys(),
            inner.uvm_mm_fd,
            UVM_MM_INITIALIZE,
            &mut mm,
            |p| p.rmStatus,
            &|| "UVM_MM_INITIALIZE".into(),
        );
        debug!("UVM_MM_INITIALIZE: {:?} (errors are not fatal)", r.err());

        // Card info → the GPU.
        let cards = inner.api.card_info()?;
        let card = *cards.get(ordinal as usize).ok_or_else(|| {
            Error::new(
                Status::NotFound,
                format!(
                    "GPU ordinal {ordinal} not found: the driver lists {} GPU(s)",
                    cards.len()
                ),
            )
        })?;
        inner.minor = card.minor_number;
        debug!(
            "card: gpu_id {:#x} minor {} pci {:04x}:{:02x}:{:02x} device {:#06x}",
            card.gpu_id,
            card.minor_number,
            card.pci_info.domain,
            card.pci_info.bus,
            card.pci_info.slot,
            card.pci_info.device_id
        );
        inner.dev_fd = inner.new_dev_fd()?;
        debug!(
            "opened /dev/nvidia{} (fd {}), linked to the control fd",
            inner.minor, inner.dev_fd
        );

        let mut id = NV0000_CTRL_GPU_GET_ID_INFO_V2_PARAMS {
            gpuId: card.gpu_id,
            ..Default::default()
        };
        inner
            .api
            .control(client, NV0000_CTRL_CMD_GPU_GET_ID_INFO_V2, &mut id)?;
        let mut dp = NV0080_ALLOC_PARAMETERS {
            deviceId: id.deviceInstance,
            hClientShare: client,
            ..Default::default()
        };
        inner.device = inner.api.alloc(client, NV01_DEVICE_0, Some(&mut dp))?;
        let mut sp = NV2080_ALLOC_PARAMETERS { subDeviceId: 0 };
        inner.subdevice = inner
            .api
            .alloc(inner.device, NV20_SUBDEVICE_0, Some(&mut sp))?;
        debug!(
            "device {:#x} (instance {}), subdevice {:#x}",
            inner.device, id.deviceInstance, inner.subdevice
        );

        // Class list.
        let mut cl = NV0080_CTRL_GPU_GET_CLASSLIST_PARAMS::default();
        inner
            .api
            .control(inner.device, NV0080_CTRL_CMD_GPU_GET_CLASSLIST, &mut cl)?;
        let n = cl.numClasses as usize;
        if n == 0 || n > 4096 {
            return Err(Error::new(
                Status::Os,
                format!("NV0080_CTRL_CMD_GPU_GET_CLASSLIST returned {n} classes"),
            ));
        }
        let mut list = vec![0u32; n];
        cl.classList = list.as_mut_ptr() as u64;
        inner
            .api
            .control(inner.device, NV0080_CTRL_CMD_GPU_GET_CLASSLIST, &mut cl)?;
        list.truncate((cl.numClasses as usize).min(n));
        let classes = select_classes(&list)?;
        inner.classes = Some(classes);
        debug!("{} classes; picked {classes:x?}", list.len());

        // Usermode (doorbell) region.
        inner.usermode =
            inner.map_region::<()>(classes.usermode, None, NVOS33_FLAGS_ACCESS_READ_WRITE)?;
        inner.doorbell_ptr = inner.usermode.ptr + DOORBELL_OFFSET;
        if doorbell_over_bar1(classes.usermode) {
            let mut p = NV_HOPPER_USERMODE_A_PARAMS {
                bBar1Mapping: 1,
                bPriv: 0,
            };
            match inner.map_region(
                classes.usermode,
                Some(&mut p),
                NVOS33_FLAGS_ACCESS_WRITE_ONLY,
            ) {
                Ok(r) => {
                    inner.doorbell_ptr = r.ptr + DOORBELL_OFFSET;
                    inner.doorbell_bar1 = r;
                }
                Err(e) => debug!("BAR1 doorbell unavailable, using BAR0: {e}"),
            }
        }

        // GR info.
        let idx = [
            NV2080_CTRL_GR_INFO_INDEX_SM_VERSION,
            NV2080_CTRL_GR_INFO_INDEX_MAX_WARPS_PER_SM,
            NV2080_CTRL_GR_INFO_INDEX_MAX_SP_PER_SM,
            NV2080_CTRL_GR_INFO_INDEX_GPU_CORE_COUNT,
            NV2080_CTRL_GR_INFO_INDEX_LITTER_NUM_GPCS,
            NV2080_CTRL_GR_INFO_INDEX_LITTER_NUM_TPC_PER_GPC,
            NV2080_CTRL_GR_INFO_INDEX_LITTER_NUM_SM_PER_TPC,
        ];
        let mut gr: Vec<NV2080_CTRL_GR_INFO> = idx
            .iter()
            .map(|&i| NV2080_CTRL_GR_INFO { index: i, data: 0 })
            .collect();
        let mut gp = NV2080_CTRL_GR_GET_INFO_PARAMS {
            grInfoListSize: gr.len() as u32,
            grInfoList: gr.as_mut_ptr() as u64,
            ..Default::default()
        };
        inner
            .api
            .control(inner.subdevice, NV2080_CTRL_CMD_GR_GET_INFO, &mut gp)?;
        let [sm_version, warps, sp_per_sm, cores, gpcs, tpc_per_gpc, sm_per_tpc] =
            [0, 1, 2, 3, 4, 5, 6].map(|i| gr[i].data);
        // Enabled SMs: enabled TPCs (GPC mask, then each GPC's TPC mask) × SMs per TPC. The
        // GR info "litter" values describe the full die; MAX_SP_PER_SM reads 0 on H200.
        let tpc_count = Self::enabled_tpcs(inner).unwrap_or_else(|e| {
            debug!("GPC/TPC masks unavailable ({e})");
            0
        });
        let sm_count = if tpc_count != 0 && sm_per_tpc != 0 {
            tpc_count * sm_per_tpc
        } else if sp_per_sm != 0 && cores != 0 {
            cores / sp_per_sm
        } else {
            gpcs * tpc_per_gpc * sm_per_tpc
        };
        debug!(
            "GR: sm_version {sm_version:#x} warps {warps} sp/sm {sp_per_sm} cores {cores} gpcs {gpcs} tpc/gpc {tpc_per_gpc} sm/tpc {sm_per_tpc}; enabled TPCs {tpc_count} → {sm_count} SMs"
        );

        // Name, architecture, framebuffer (best effort).
        let mut np = NV2080_CTRL_GPU_GET_NAME_STRING_PARAMS::default();
        let name = match inner.api.control(
            inner.subdevice,
            NV2080_CTRL_CMD_GPU_GET_NAME_STRING,
            &mut np,
        ) {
            Ok(()) => c_string(&np.gpuNameString[..NV2080_GPU_MAX_NAME_STRING_LENGTH]),
            Err(e) => {
                debug!("GET_NAME_STRING failed: {e}");
                String::new()
            }
        };
        let name = if name.is_empty() {
            format!("NVIDIA GPU (PCI device {:#06x})", card.pci_info.device_id)
        } else {
            name
        };
        let mut ap = NV2080_CTRL_MC_GET_ARCH_INFO_PARAMS::default();
        let (arch, arch_impl) =
            match inner
                .api
                .control(inner.subdevice, NV2080_CTRL_CMD_MC_GET_ARCH_INFO, &mut ap)
            {
                Ok(()) => (ap.architecture | ap.implementation, ap.implementation),
                Err(e) => {
                    debug!("MC_GET_ARCH_INFO failed: {e}");
                    (0, 0)
                }
            };
        let fb_idx = [
            NV2080_CTRL_FB_INFO_INDEX_RAM_SIZE,
            NV2080_CTRL_FB_INFO_INDEX_HEAP_SIZE,
            NV2080_CTRL_FB_INFO_INDEX_HEAP_FREE,
            NV2080_CTRL_FB_INFO_INDEX_BAR1_SIZE,
            NV2080_CTRL_FB_INFO_INDEX_BAR1_AVAIL_SIZE,
        ];
        let mut fb: Vec<NV2080_CTRL_FB_INFO> = fb_idx
            .iter()
            .map(|&i| NV2080_CTRL_FB_INFO { index: i, data: 0 })
            .collect();
        let mut fp = NV2080_CTRL_FB_GET_INFO_PARAMS {
            fbInfoListSize: fb.len() as u32,
            _pad: 0,
            fbInfoList: fb.as_mut_ptr() as u64,
        };
        let [ram_kib, heap_kib, heap_free_kib, bar1_kib, bar1_avail_kib] =
            match inner
                .api
                .control(inner.subdevice, NV2080_CTRL_CMD_FB_GET_INFO, &mut fp)
            {
                Ok(()) => [0, 1, 2, 3, 4].map(|i| fb[i].data),
                Err(e) => {
                    debug!("FB_GET_INFO failed: {e}");
                    [0; 5]
                }
            };

        // Copy engines (best effort: without them copies use the GR copy engine).
        inner.copy_engines = Self::query_copy_engines(inner).unwrap_or_else(|e| {
            debug!("copy-engine query failed ({e}); copies use the GR copy engine");
            Vec::new()
        });
        for e in &inner.copy_engines {
            debug!(
                "LCE{} (engine type {:#x}): caps {:02x?}{} PCE mask {:#x}",
                e.index,
                e.engine_type,
                e.caps,
                if e.is_grce() { " GRCE" } else { "" },
                e.pce_mask
            );
        }

        // UVM-owned VA space.
        let mut vp = NV_VASPACE_ALLOCATION_PARAMETERS {
            index: NV_VASPACE_ALLOCATION_INDEX_GPU_NEW,
            flags: NV_VASPACE_ALLOCATION_FLAGS_ENABLE_PAGE_FAULTING
                | NV_VASPACE_ALLOCATION_FLAGS_IS_EXTERNALLY_OWNED,
            vaSize: VASPACE_SIZE,
            vaBase: 0x1000,
            ..Default::default()
        };
        inner.vaspace = inner
            .api
            .alloc(inner.device, FERMI_VASPACE_A, Some(&mut vp))?;

        let mut gid = NV2080_CTRL_GPU_GET_GID_INFO_PARAMS {
            index: 0,
            flags: NV2080_GPU_CMD_GPU_GET_GID_FLAGS_FORMAT_BINARY,
            length: 16,
            ..Default::default()
        };
        inner
            .api
            .control(inner.subdevice, NV2080_CTRL_CMD_GPU_GET_GID_INFO, &mut gid)?;
        inner.uuid.uuid.copy_from_slice(&gid.data[..16]);

        let mut rg = UVM_REGISTER_GPU_PARAMS {
            gpu_uuid: inner.uuid,
            rmCtrlFd: -1,
            ..Default::default()
        };
        uvm_ioctl(
            inner.sys(),
            inner.uvm_fd,
            UVM_REGISTER_GPU,
            &mut rg,
            |p| p.rmStatus,
            &|| "UVM_REGISTER_GPU".into(),
        )?;
        inner.uvm_gpu_registered = true;
        let mut rv = UVM_REGISTER_GPU_VASPACE_PARAMS {
            gpuUuid: inner.uuid,
            rmCtrlFd: inner.api.ctl_fd,
            hClient: client,
            hVaSpace: inner.vaspace,
            rmStatus: 0,
        };
        uvm_ioctl(
            inner.sys(),
            inner.uvm_fd,
            UVM_REGISTER_GPU_VASPACE,
            &mut rv,
            |p| p.rmStatus,
            &|| format!("UVM_REGISTER_GPU_VASPACE(hVaSpace={:#x})", inner.vaspace),
        )?;
        inner.uvm_vaspace_registered = true;
        debug!("VA space {:#x} registered with UVM", inner.vaspace);

        // TSG + context share.
        let (tsg, ctxshare, subctx_id) = {
            let mut st = TsgState {
                engine_type: NV2080_ENGINE_TYPE_GRAPHICS,
                ..Default::default()
            };
            let r = inner.alloc_tsg(&mut st);
            let ids = (st.tsg, st.ctxshare, st.subctx_id);
            inner.sched.lock().insert(NV2080_ENGINE_TYPE_GRAPHICS, st);
            r?;
            ids
        };

        let info = DeviceInfo {
            name,
            backend: BackendKind::Rm,
            emulated: inner.sys().is_emulated(),
            arch,
            sm_major: (sm_version >> 8) & 0xff,
            sm_minor: sm_version & 0xff,
            sm_count,
            max_gpc_count: gpcs,
            max_tpc_per_gpc: tpc_per_gpc,
            sm_per_tpc,
            warps_per_sm: warps,
            memory_bytes: heap_kib as u64 * 1024,
            va_bits: VA_BITS,
            compute_class: classes.compute,
            copy_class: classes.copy,
            gpfifo_class: classes.gpfifo,
            driver_version: version.text.clone(),
            shared_window: SHARED_WINDOW,
            local_window: LOCAL_WINDOW,
            unified_addresses: true,
        };
        let details = RmDetails {
            version,
            branch: inner.branch,
            gpu_id: card.gpu_id,
            minor: card.minor_number,
            pci_domain: card.pci_info.domain,
            pci_bus: card.pci_info.bus,
            pci_slot: card.pci_info.slot,
            pci_device_id: card.pci_info.device_id,
            uuid: inner.uuid.uuid,
            class_list: list,
            classes,
            gpu_core_count: cores,
            sp_per_sm,
            tpc_count,
            fb_ram_kib: ram_kib,
            fb_heap_kib: heap_kib,
            fb_heap_free_kib: heap_free_kib,
            bar1_kib,
            bar1_avail_kib,
            arch_implementation: arch_impl,
            client,
            device: inner.device,
            subdevice: inner.subdevice,
            vaspace: inner.vaspace,
            tsg,
            ctxshare,
            subctx_id,
            copy_engines: inner.copy_engines.clone(),
        };
        Ok((info, details))
    }

    /// The COPY engines of `GPU_GET_ENGINES_V2` with their caps and PCE masks.
    fn query_copy_engines(inner: &Inner) -> Result<Vec<CopyEngineInfo>> {
        let mut p = NV2080_CTRL_GPU_GET_ENGINES_V2_PARAMS::default();
        inner
            .api
            .control(inner.subdevice, NV2080_CTRL_CMD_GPU_GET_ENGINES_V2, &mut p)?;
        let n = (p.engineCount as usize).min(NV2080_GPU_MAX_ENGINES_LIST_SIZE);
        let mut out = Vec::new();
        for &t in &p.engineList[..n] {
            let Some(index) = NV2080_ENGINE_TYPE_COPY_IDX(t) else {
                continue;
            };
            let mut c = NV2080_CTRL_CE_GET_CAPS_V2_PARAMS {
                ceEngineType: t,
                ..Default::default()
            };
            let caps =
                match inner
                    .api
                    .control(inner.subdevice, NV2080_CTRL_CMD_CE_GET_CAPS_V2, &mut c)
                {
                    Ok(()) => c.capsTbl,
                    Err(e) => {
                        debug!("CE_GET_CAPS_V2(LCE{index}): {e}");
                        [0; NV2080_CTRL_CE_CAPS_TBL_SIZE]
                    }
                };
            let mut m = NV2080_CTRL_CE_GET_CE_PCE_MASK_PARAMS {
                ceEngineType: t,
                pceMask: 0,
            };
            let pce_mask =
                match inner
                    .api
                    .control(inner.subdevice, NV2080_CTRL_CMD_CE_GET_CE_PCE_MASK, &mut m)
                {
                    Ok(()) => m.pceMask,
                    Err(e) => {
                        debug!("CE_GET_CE_PCE_MASK(LCE{index}): {e}");
                        0
                    }
                };
            out.push(CopyEngineInfo {
                index,
                engine_type: t,
                caps,
                pce_mask,
            });
        }
        out.sort_by_key(|e| e.index);
        Ok(out)
    }

    /// Enabled TPCs summed over the enabled GPCs.
    fn enabled_tpcs(inner: &Inner) -> Result<u32> {
        let mut g = NV2080_CTRL_GR_GET_GPC_MASK_PARAMS::default();
        inner
            .api
            .control(inner.subdevice, NV2080_CTRL_CMD_GR_GET_GPC_MASK, &mut g)?;
        let mut n = 0;
        for gpc in 0..32 {
            if g.gpcMask & (1 << gpc) != 0 {
                let mut t = NV2080_CTRL_GR_GET_TPC_MASK_PARAMS {
                    gpcId: gpc,
                    ..Default::default()
                };
                inner
                    .api
                    .control(inner.subdevice, NV2080_CTRL_CMD_GR_GET_TPC_MASK, &mut t)?;
                n += t.tpcMask.count_ones();
            }
        }
        Ok(n)
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
        RmChannel::create(&self.inner, engine, entries, self.details.bar1_kib)
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
                    "alloc: {size:#x} bytes exceeds the {} GiB CPU/GPU VA window",
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

    /// The CPU pointer (equal to the GPU VA); video memory allocated with default flags gets
    /// its BAR1 mapping here on first use.
    fn map_cpu(&self, alloc: &Allocation) -> Result<*mut u8> {
        if !alloc.cpu.is_null() {
            return Ok(alloc.cpu);
        }
        self.inner
            .map_cpu(alloc.id, alloc.gpu_va, alloc.size, self.details.bar1_kib)
    }

    fn export_dmabuf(&self, _alloc: &Allocation) -> Result<RawFd> {
        Err(Error::new(
            Status::NotSupported,
            "export_dmabuf is not implemented for the RM backend yet",
        ))
    }

    fn create_channel(&self, engine: Engine, entries: u32) -> Result<Box<dyn Channel>> {
        Ok(Box::new(RmChannel::create(
            &self.inner,
            engine,
            entries,
            self.details.bar1_kib,
        )?))
    }

    /// Channel errors reported so far through [`Channel::error`], with the MMU fault address
    /// RM gives (`NV906F_CTRL_CMD_GET_MMU_FAULT_INFO`), oldest first.
    fn fault_log(&self) -> Vec<KernelFaultRecord> {
        self.inner.faults.lock().clone()
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
