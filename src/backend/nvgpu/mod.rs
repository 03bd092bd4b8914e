//! nvgpu + nvmap backend (Jetson Orin), real or over the emulated kernel.
//!
//! Everything goes through [`crate::os::Sys`], so the same code runs on the board
//! ([`crate::os::LinuxSys`]) and in CI against the emulated kernel (`crate::emu::EmuSys`).
//! The sequence and every argument value follow `docs/nvgpu-kernel-interface.md` §4–§6:
//!
//! * **Open** — `open(ctrl)`, `open(/dev/nvmap)`, `GET_CHARACTERISTICS` (all classes come from
//!   it), optional `NUM_VSMS`/`GET_TPC_MASKS`/`GET_MEMORY_STATE` (any error tolerated),
//!   `ALLOC_AS` (no big pages, unified VA, `[0x200000, 0xFF00000000)`), `ALLOC_SPACE` of the
//!   shader shared/local windows (FIXED, before any mapping), `OPEN_TSG`,
//!   `CREATE_SUBCONTEXT(ASYNC)`, `mmap` of the usermode doorbell page.
//! * **Memory** — nvmap `CREATE` → `ALLOC` (IOVMM, cache mode from [`MemFlags`], tag
//!   [`NVMAP_TAG`]) → `GET_FD` → `MAP_BUFFER_EX` (kind pitch, no CACHEABLE flag) → `mmap` of
//!   the dma-buf at the GPU VA (`MAP_FIXED_NOREPLACE`; any address if refused) → `close` of
//!   the dma-buf fd. A live buffer holds **no file descriptor**: the nvmap client's handle
//!   reference, the GPU mapping and the CPU mapping each hold the dma-buf (see
//!   `docs/design.md`, "File descriptors held by buffers"). Free: `munmap` → `UNMAP_BUFFER`
//!   → `NVMAP_IOC_FREE`.
//! * **Channels** — see [`channel`].
//! * **Teardown** — the §6 order: channels (they hold the device alive), then TSG, buffers,
//!   VA windows, AS, doorbell, ctrl, nvmap.

pub mod channel;

use std::collections::HashMap;
use std::ffi::CStr;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use crate::backend::{Allocation, Backend, BackendKind, Channel, DeviceInfo, Engine, MemFlags};
use crate::error::{Error, Result, Status};
use crate::log::debug;
use crate::os::{KernelFaultRecord, Sys};
use crate::sys::nvgpu::*;
use crate::sys::nvmap::*;

pub use channel::NvgpuChannel;

/// The nvgpu control node.
pub const CTRL_PATH: &CStr = c"/dev/nvgpu/igpu0/ctrl";
/// The nvmap node.
pub const NVMAP_PATH: &CStr = c"/dev/nvmap";
/// First GPU VA of the user address space (2 MiB aligned, as the seeds and tinygrad use).
pub const VA_RANGE_START: u64 = 0x20_0000;
/// End of the user address space: 2^40 − 4 GiB, so that the kernel's 4 GiB VMA placed directly
/// above it stays below 2^40 (§4.1).
pub const VA_RANGE_END: u64 = 0xFF_0000_0000;
/// Shader shared-memory window (reserved with ALLOC_SPACE at open; tinygrad's value).
pub const SHARED_WINDOW: u64 = 0xFE_0000_0000;
/// Shader local-memory window.
pub const LOCAL_WINDOW: u64 = 0xFD_0000_0000;
/// Size of each window.
pub const WINDOW_SIZE: u64 = 1 << 30;
/// Small page size; the only GMMU page size on ga10b (big pages are off).
pub const PAGE_SIZE: u64 = 4096;
/// Largest single allocation accepted (1 TiB); larger requests are rejected before any syscall.
pub const MAX_ALLOC: u64 = 1 << 40;
/// nvmap allocation tag (flags bits 31:16). Tags only label allocations in nvmap's debugfs;
/// without one nvmap logs a warning per client. 0x0900 is the value tinygrad uses.
pub const NVMAP_TAG: u32 = 0x0900;
/// MAP_BUFFER_EX flags for every mapping: none. Without `NVGPU_AS_MAP_BUFFER_FLAGS_CACHEABLE`
/// the PTE is volatile, so the GPU L2 never keeps stale copies of system memory the CPU
/// rewrites (Orin is only one-way coherent, §4.3 item 12); this costs GPU L2 hits, and is
/// the safe default until L2 maintenance is in place.
pub const MAP_FLAGS: u32 = 0;

/// `mmap` protection/flags used for all CPU views.
const PROT_RW: i32 = libc::PROT_READ | libc::PROT_WRITE;

/// Turns an errno into an [`Error`] naming the call; ENOMEM becomes `OutOfMemory`.
pub(crate) fn os_err(what: impl std::fmt::Display, errno: i32) -> Error {
    out_of_memory_status(Error::os(what, errno), errno)
}

/// The error of an ioctl made through [`crate::os::ioctl_retrying`].
pub(crate) fn ioctl_err(what: impl std::fmt::Display, errno: i32) -> Error {
    out_of_memory_status(crate::os::ioctl_error(what, errno), errno)
}

fn out_of_memory_status(mut e: Error, errno: i32) -> Error {
    if errno == libc::ENOMEM || errno == libc::ENOSPC {
        e.status = Status::OutOfMemory;
    }
    e
}

/// One nvmap buffer as the backend tracks it. Fields record which steps succeeded so that a
/// partially built buffer can be torn down with the same code.
#[derive(Debug)]
pub(crate) struct NvBuf {
    /// nvmap handle ID (0 = none).
    pub handle: u32,
    /// dma-buf fd from GET_FD while the buffer is being set up or bound (-1 = none). Closed
    /// as soon as the kernel holds its own references (GPU mapping, CPU mapping, SETUP_BIND,
    /// SET_ERROR_NOTIFIER), so that a live buffer costs no file descriptor.
    pub fd: RawFd,
    /// Size in bytes (4 KiB multiple).
    pub size: u64,
    /// CPU view (null = none).
    pub cpu: *mut u8,
    /// GPU VA from MAP_BUFFER_EX, when mapped by us.
    pub gpu_va: Option<u64>,
}
// SAFETY: `cpu` is a MAP_SHARED mapping owned by this record; access is synchronised by users.
unsafe impl Send for NvBuf {}
unsafe impl Sync for NvBuf {}

impl NvBuf {
    fn empty(size: u64) -> Self {
        NvBuf {
            handle: 0,
            fd: -1,
            size,
            cpu: std::ptr::null_mut(),
            gpu_va: None,
        }
    }
}

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
    pub next_id: AtomicU64,
}
// SAFETY: `usermode` is a device mapping that lives as long as Device; writes to it are
// single 32-bit stores, as on hardware.
unsafe impl Send for Device {}
unsafe impl Sync for Device {}

impl Device {
    fn new(sys: Arc<dyn Sys>) -> Self {
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

    fn close_fd(&self, fd: RawFd, what: &str) -> Result<()> {
        self.sys
            .close(fd)
            .map_err(|e| os_err(format!("close({what} fd={fd})"), e))
    }

    /// Closes the buffer's dma-buf fd, if it still has one. The fd is forgotten whatever
    /// `close` answers: Linux releases the descriptor even when `close` reports an error, and
    /// closing the number again could close another thread's new file.
    pub fn close_dmabuf_fd(&self, b: &mut NvBuf) -> Result<()> {
        if b.fd < 0 {
            return Ok(());
        }
        let fd = std::mem::replace(&mut b.fd, -1);
        self.close_fd(fd, "dmabuf")
    }

    /// Creates an nvmap buffer: CREATE → ALLOC → GET_FD, then optionally MAP_BUFFER_EX and a
    /// CPU mapping (at the GPU VA when `at_gpu_va`). Unless `keep_fd`, the dma-buf fd is
    /// closed at the end (the client's handle reference and the mappings keep the buffer).
    /// On failure everything done is undone.
    pub fn create_buffer(
        &self,
        size: u64,
        cache: u32,
        zeroed: bool,
        gpu_map: bool,
        at_gpu_va: bool,
        keep_fd: bool,
    ) -> Result<NvBuf> {
        let mut b = NvBuf::empty(size);
        let built = self
            .build_buffer(&mut b, cache, zeroed, gpu_map, at_gpu_va)
            .and_then(|()| {
                if keep_fd {
                    Ok(())
                } else {
                    self.close_dmabuf_fd(&mut b)
                }
            });
        match built {
            Ok(()) => Ok(b),
            Err(e) => {
                let _ = self.release_buffer(&mut b);
                Err(e)
            }
        }
    }

    fn build_buffer(
        &self,
        b: &mut NvBuf,
        cache: u32,
        zeroed: bool,
        gpu_map: bool,
        at_gpu_va: bool,
    ) -> Result<()> {
        let size = b.size;
        let len = usize::try_from(size)
            .map_err(|_| Error::invalid(format!("size {size:#x} does not fit usize")))?;
        // CREATE (CREATE_64 from 4 GiB up).
        let mut c = if size < (1 << 32) {
            nvmap_create_handle::create(size as u32)
        } else {
            nvmap_create_handle::create_64(size)
        };
        if size < (1 << 32) {
            self.ioctl(self.nvmap_fd, NVMAP_IOC_CREATE, &mut c, || {
                format!("NVMAP_IOC_CREATE(size={size:#x})")
            })?;
            b.handle = c.handle;
        } else {
            self.ioctl(self.nvmap_fd, NVMAP_IOC_CREATE_64, &mut c, || {
                format!("NVMAP_IOC_CREATE_64(size64={size:#x})")
            })?;
            b.handle = c.handle64();
        }
        if b.handle == 0 {
            return Err(Error::new(
                Status::Os,
                format!("NVMAP_IOC_CREATE(size={size:#x}) returned handle 0"),
            ));
        }
        // ALLOC.
        let flags = (cache & NVMAP_HANDLE_CACHE_FLAG)
            | if zeroed { NVMAP_HANDLE_ZEROED_PAGES } else { 0 }
            | (NVMAP_TAG << NVMAP_HANDLE_TAG_SHIFT);
        let mut a = nvmap_alloc_handle {
            handle: b.handle,
            heap_mask: NVMAP_HEAP_IOVMM,
            flags,
            align: PAGE_SIZE as u32,
            numa_nid: NVMAP_NUMA_NO_NODE,
        };
        let h = b.handle;
        self.ioctl(self.nvmap_fd, NVMAP_IOC_ALLOC, &mut a, || {
            format!(
                "NVMAP_IOC_ALLOC(handle={h:#x}, heap_mask={NVMAP_HEAP_IOVMM:#x}, flags={flags:#x}, align={PAGE_SIZE}, numa_nid=-1, size={size:#x})"
            )
        })?;
        // GET_FD.
        let mut g = nvmap_create_handle::get_fd(h);
        self.ioctl(self.nvmap_fd, NVMAP_IOC_GET_FD, &mut g, || {
            format!("NVMAP_IOC_GET_FD(handle={h:#x})")
        })?;
        if g.fd() < 0 {
            return Err(Error::new(
                Status::Os,
                format!("NVMAP_IOC_GET_FD(handle={h:#x}) returned fd {}", g.fd()),
            ));
        }
        b.fd = g.fd();
        let fd = b.fd;
        // MAP_BUFFER_EX.
        if gpu_map {
            let mut m = nvgpu_as_map_buffer_ex_args {
                flags: MAP_FLAGS,
                compr_kind: NV_KIND_INVALID,
                incompr_kind: NV_KIND_PITCH,
                dmabuf_fd: fd as u32,
                page_size: PAGE_SIZE as u32,
                buffer_offset: 0,
                mapping_size: 0,
                offset: 0,
            };
            self.ioctl(self.as_fd, NVGPU_AS_IOCTL_MAP_BUFFER_EX, &mut m, || {
                format!(
                    "NVGPU_AS_IOCTL_MAP_BUFFER_EX(dmabuf_fd={fd}, flags={MAP_FLAGS:#x}, compr_kind=-1, incompr_kind=0, size={size:#x})"
                )
            })?;
            b.gpu_va = Some(m.offset);
        }
        // CPU view.
        let want = match (at_gpu_va, b.gpu_va) {
            (true, Some(va)) => Some(va),
            _ => None,
        };
        let mut cpu = None;
        if let Some(va) = want {
            // SAFETY: MAP_FIXED_NOREPLACE never replaces an existing mapping.
            let r = unsafe {
                self.sys.mmap(
                    va as *mut u8,
                    len,
                    PROT_RW,
                    libc::MAP_SHARED | libc::MAP_FIXED_NOREPLACE,
                    fd,
                    0,
                )
            };
            if let Ok(p) = r {
                cpu = Some(p);
            }
        }
        let p = match cpu {
            Some(p) => p,
            // SAFETY: a fresh mapping at an address of the kernel's choice.
            None => unsafe {
                self.sys
                    .mmap(std::ptr::null_mut(), len, PROT_RW, libc::MAP_SHARED, fd, 0)
            }
            .map_err(|e| {
                os_err(
                    format!("mmap(dmabuf_fd={fd}, len={len:#x}, PROT_READ|PROT_WRITE, MAP_SHARED)"),
                    e,
                )
            })?,
        };
        b.cpu = p;
        Ok(())
    }

    /// Tears a buffer down: munmap, UNMAP_BUFFER, close the dma-buf fd (if still open),
    /// NVMAP_IOC_FREE. Runs every step that applies even if one fails, and never retries one
    /// (a failed munmap leaves that CPU view mapped, which keeps only this dma-buf alive; a
    /// failed UNMAP_BUFFER or FREE is undone by the kernel when the AS or nvmap fd closes);
    /// returns the first error.
    pub fn release_buffer(&self, b: &mut NvBuf) -> Result<()> {
        let mut first: Option<Error> = None;
        let mut keep = |r: Result<()>| {
            if let Err(e) = r {
                first.get_or_insert(e);
            }
        };
        if !b.cpu.is_null() {
            let len = b.size as usize;
            let p = b.cpu;
            // SAFETY: `p` is the mapping this buffer created, `len` its length.
            keep(
                unsafe { self.sys.munmap(p, len) }
                    .map_err(|e| os_err(format!("munmap({p:p}, {len:#x})"), e)),
            );
            b.cpu = std::ptr::null_mut();
        }
        if let Some(va) = b.gpu_va.take() {
            let mut u = nvgpu_as_unmap_buffer_args { offset: va };
            keep(
                self.ioctl(self.as_fd, NVGPU_AS_IOCTL_UNMAP_BUFFER, &mut u, || {
                    format!("NVGPU_AS_IOCTL_UNMAP_BUFFER(offset={va:#x})")
                })
                .map(|_| ()),
            );
        }
        keep(self.close_dmabuf_fd(b));
        if b.handle != 0 {
            let h = b.handle;
            // SAFETY: NVMAP_IOC_FREE takes the handle ID by value; no memory is passed.
            keep(
                unsafe {
                    crate::os::ioctl_retrying_described(
                        &*self.sys,
                        self.nvmap_fd,
                        NVMAP_IOC_FREE,
                        h as usize,
                        &|| format!("NVMAP_IOC_FREE(handle={h:#x})"),
                    )
                }
                .map(|_| ())
                .map_err(|e| ioctl_err(format!("NVMAP_IOC_FREE(handle={h:#x})"), e)),
            );
            b.handle = 0;
        }
        match first {
            Some(e) => Err(e),
            None => Ok(()),
        }
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

/// The nvgpu backend. Cheap to share; channels keep the device alive until they are dropped.
pub struct NvgpuBackend {
    dev: Arc<Device>,
    info: DeviceInfo,
}

impl std::fmt::Debug for NvgpuBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NvgpuBackend")
            .field("info", &self.info)
            .finish()
    }
}

fn meminfo_total() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = s.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kb.checked_mul(1024)
}

/// `open(path, O_RDWR|O_CLOEXEC)`, restarted when a signal interrupts it (EINTR; a driver's
/// open may sleep interruptibly, e.g. while the GPU powers on), a bounded number of times
/// like [`crate::os::ioctl_retrying`]. Other errors come back naming the call.
fn open_node(sys: &dyn Sys, path: &CStr) -> Result<RawFd> {
    let what = || format!("open({path:?}, O_RDWR|O_CLOEXEC)");
    let mut restarts = 0u32;
    loop {
        match sys.open(path, libc::O_RDWR | libc::O_CLOEXEC) {
            Ok(fd) => return Ok(fd),
            Err(libc::EINTR) if restarts < crate::os::IOCTL_EINTR_RETRIES => restarts += 1,
            Err(libc::EINTR) => {
                let mut e = os_err(what(), libc::EINTR);
                e.message
                    .push_str(&format!("; still EINTR after {restarts} restarts"));
                return Err(e);
            }
            Err(e) => return Err(os_err(what(), e)),
        }
    }
}

impl NvgpuBackend {
    /// Opens the GPU through `sys` and brings up the address space, VA windows, TSG,
    /// subcontext and doorbell (§4.1–§4.2). Fails with an error naming the call that failed.
    pub fn open(sys: Arc<dyn Sys>) -> Result<NvgpuBackend> {
        let emulated = sys.is_emulated();
        let mut d = Device::new(sys.clone());
        d.ctrl_fd = open_node(&*sys, CTRL_PATH)?;
        d.nvmap_fd = open_node(&*sys, NVMAP_PATH)?;
        debug!(
            "opened {CTRL_PATH:?} (fd {}) and {NVMAP_PATH:?} (fd {}){}",
            d.ctrl_fd,
            d.nvmap_fd,
            if emulated {
                " of the emulated kernel"
            } else {
                ""
            }
        );

        // GET_CHARACTERISTICS.
        let mut chars = nvgpu_gpu_characteristics::default();
        let mut gc = nvgpu_gpu_get_characteristics {
            gpu_characteristics_buf_size: NVGPU_GPU_CHARACTERISTICS_SIZE as u64,
            gpu_characteristics_buf_addr: &mut chars as *mut _ as u64,
        };
        d.ioctl(d.ctrl_fd, NVGPU_GPU_IOCTL_GET_CHARACTERISTICS, &mut gc, || {
            format!("NVGPU_GPU_IOCTL_GET_CHARACTERISTICS(buf_size={NVGPU_GPU_CHARACTERISTICS_SIZE})")
        })?;
        if chars.compute_class == 0 || chars.gpfifo_class == 0 {
            return Err(Error::new(
                Status::UnsupportedDriver,
                format!(
                    "NVGPU_GPU_IOCTL_GET_CHARACTERISTICS reported no compute/gpfifo class (compute_class={:#x}, gpfifo_class={:#x}, buf_size={})",
                    chars.compute_class, chars.gpfifo_class, gc.gpu_characteristics_buf_size
                ),
            ));
        }
        if chars.flags & NVGPU_GPU_FLAGS_SUPPORT_USERMODE_SUBMIT == 0 {
            return Err(Error::new(
                Status::UnsupportedDriver,
                format!(
                    "nvgpu does not support usermode submit (characteristics flags={:#x})",
                    chars.flags
                ),
            ));
        }
        d.chars = chars;
        debug!(
            "GET_CHARACTERISTICS: {} arch {:#x} impl {:#x} sm_{}{}, compute class {:#x}, copy \
             class {:#x}, gpfifo class {:#x}, flags {:#x}, {} GPC(s), VA {} bits",
            chars.chipname_str(),
            chars.arch,
            chars.r#impl,
            chars.sm_arch_sm_version >> 8,
            chars.sm_arch_sm_version & 0xff,
            chars.compute_class,
            chars.dma_copy_class,
            chars.gpfifo_class,
            chars.flags,
            chars.num_gpc,
            chars.gpu_va_bit_count
        );

        // Optional queries: any error (ENOTTY on a driver without them) is tolerated.
        let mut nv = nvgpu_gpu_num_vsms::default();
        let num_vsms = d
            .ioctl(d.ctrl_fd, NVGPU_GPU_IOCTL_NUM_VSMS, &mut nv, || {
                "NVGPU_GPU_IOCTL_NUM_VSMS (optional)".to_string()
            })
            .ok()
            .map(|_| nv.num_vsms);
        let gpc_slots = chars.max_gpc_count.max(chars.num_gpc).clamp(1, 64);
        let mut masks = vec![0u32; gpc_slots as usize];
        let mut tm = nvgpu_gpu_get_tpc_masks_args {
            mask_buf_size: 4 * gpc_slots,
            reserved: 0,
            mask_buf_addr: masks.as_mut_ptr() as u64,
        };
        let tpcs = d
            .ioctl(d.ctrl_fd, NVGPU_GPU_IOCTL_GET_TPC_MASKS, &mut tm, || {
                format!(
                    "NVGPU_GPU_IOCTL_GET_TPC_MASKS(mask_buf_size={}) (optional)",
                    4 * gpc_slots
                )
            })
            .ok()
            .map(|_| masks.iter().map(|m| m.count_ones()).sum::<u32>())
            .filter(|&t| t > 0);
        let mut ms = nvgpu_gpu_get_memory_state_args::default();
        let mem_state = d
            .ioctl(d.ctrl_fd, NVGPU_GPU_IOCTL_GET_MEMORY_STATE, &mut ms, || {
                "NVGPU_GPU_IOCTL_GET_MEMORY_STATE (optional)".to_string()
            })
            .ok()
            .map(|_| ms.total_free_bytes)
            .filter(|&m| m > 0);

        // ALLOC_AS.
        let mut aa = nvgpu_alloc_as_args {
            big_page_size: 0,
            flags: NVGPU_GPU_IOCTL_ALLOC_AS_FLAGS_UNIFIED_VA,
            va_range_start: VA_RANGE_START,
            va_range_end: VA_RANGE_END,
            va_range_split: 0,
            ..Default::default()
        };
        d.ioctl(d.ctrl_fd, NVGPU_GPU_IOCTL_ALLOC_AS, &mut aa, || {
            format!(
                "NVGPU_GPU_IOCTL_ALLOC_AS(big_page_size=0, flags=UNIFIED_VA, va_range_start={VA_RANGE_START:#x}, va_range_end={VA_RANGE_END:#x}, va_range_split=0)"
            )
        })?;
        d.as_fd = aa.as_fd;
        debug!(
            "address space: fd {}, VA [{VA_RANGE_START:#x}, {VA_RANGE_END:#x}), unified, 4 KiB pages",
            d.as_fd
        );

        // Reserve the shader windows before any mapping.
        for win in [SHARED_WINDOW, LOCAL_WINDOW] {
            let pages = WINDOW_SIZE / PAGE_SIZE;
            let mut s = nvgpu_as_alloc_space_args {
                pages,
                page_size: PAGE_SIZE as u32,
                flags: NVGPU_AS_ALLOC_SPACE_FLAGS_FIXED_OFFSET,
                o_a: win,
                padding: [0; 2],
            };
            d.ioctl(d.as_fd, NVGPU_AS_IOCTL_ALLOC_SPACE, &mut s, || {
                format!(
                    "NVGPU_AS_IOCTL_ALLOC_SPACE(pages={pages:#x}, page_size={PAGE_SIZE}, flags=FIXED_OFFSET, offset={win:#x})"
                )
            })?;
            if s.o_a != win {
                d.areas.push(s.o_a);
                return Err(Error::new(
                    Status::Os,
                    format!("NVGPU_AS_IOCTL_ALLOC_SPACE(FIXED_OFFSET, offset={win:#x}) reserved {:#x} instead", s.o_a),
                ));
            }
            d.areas.push(win);
        }
        debug!(
            "shader windows reserved: shared {SHARED_WINDOW:#x}, local {LOCAL_WINDOW:#x} ({} MiB each)",
            WINDOW_SIZE >> 20
        );

        // TSG + subcontext.
        let mut ot = nvgpu_gpu_open_tsg_args::default();
        d.ioctl(d.ctrl_fd, NVGPU_GPU_IOCTL_OPEN_TSG, &mut ot, || {
            "NVGPU_GPU_IOCTL_OPEN_TSG(flags=0, source_device_instance_id=0, share_token=0)"
                .to_string()
        })?;
        d.tsg_fd = ot.tsg_fd as RawFd;
        let as_fd = d.as_fd;
        let mut sc = nvgpu_tsg_create_subcontext_args {
            r#type: NVGPU_TSG_SUBCONTEXT_TYPE_ASYNC,
            as_fd,
            veid: 0,
            reserved: 0,
        };
        d.ioctl(d.tsg_fd, NVGPU_TSG_IOCTL_CREATE_SUBCONTEXT, &mut sc, || {
            format!("NVGPU_TSG_IOCTL_CREATE_SUBCONTEXT(type=ASYNC, as_fd={as_fd})")
        })?;
        d.veid = sc.veid;
        debug!("TSG fd {}, ASYNC subcontext veid {}", d.tsg_fd, d.veid);

        // Doorbell page.
        let ctrl = d.ctrl_fd;
        // SAFETY: a fresh shared mapping of the ctrl node's usermode region.
        d.usermode = unsafe {
            sys.mmap(std::ptr::null_mut(), NVGPU_USERMODE_MAP_SIZE, PROT_RW, libc::MAP_SHARED, ctrl, 0)
        }
        .map_err(|e| {
            os_err(format!("mmap(ctrl_fd={ctrl}, len={NVGPU_USERMODE_MAP_SIZE:#x}, MAP_SHARED, offset=0) (doorbell)"), e)
        })?;
        debug!(
            "usermode page mapped at {:p} ({NVGPU_USERMODE_MAP_SIZE:#x} bytes; doorbell at +{NVGPU_USERMODE_DOORBELL_OFFSET:#x})",
            d.usermode
        );

        let dev = Arc::new(d);

        // Probe whether CPU views can sit at their GPU VAs.
        let unified = {
            let mut b =
                dev.create_buffer(PAGE_SIZE, NVMAP_HANDLE_CACHEABLE, true, true, true, false)?;
            let u = b.gpu_va == Some(b.cpu as u64);
            dev.release_buffer(&mut b)?;
            u
        };
        debug!(
            "CPU views {} at their GPU addresses",
            if unified { "sit" } else { "cannot sit" }
        );

        let sm_per_tpc = if chars.arch >= 0x140 { 2 } else { 1 };
        let sm_count = num_vsms
            .filter(|&n| n > 0)
            .or(tpcs.map(|t| t * sm_per_tpc))
            .unwrap_or(
                chars
                    .num_gpc
                    .saturating_mul(chars.num_tpc_per_gpc)
                    .saturating_mul(sm_per_tpc),
            );
        let memory_bytes = mem_state.or_else(meminfo_total).unwrap_or(0);
        let driver_version = if emulated {
            "emulated nvgpu (r36 interface)".to_string()
        } else {
            std::fs::read_to_string("/sys/module/nvgpu/version")
                .map(|s| format!("nvgpu {}", s.trim()))
                .unwrap_or_else(|_| "nvgpu (version not reported)".to_string())
        };
        let info = DeviceInfo {
            name: chars.chipname_str(),
            backend: BackendKind::Nvgpu,
            emulated,
            arch: chars.arch,
            sm_major: chars.sm_arch_sm_version >> 8,
            sm_minor: chars.sm_arch_sm_version & 0xff,
            sm_count,
            max_gpc_count: chars.max_gpc_count.max(chars.num_gpc),
            max_tpc_per_gpc: chars.num_tpc_per_gpc,
            sm_per_tpc,
            warps_per_sm: chars.sm_arch_warp_count,
            memory_bytes,
            va_bits: u32::from(chars.gpu_va_bit_count),
            compute_class: chars.compute_class,
            copy_class: chars.dma_copy_class,
            gpfifo_class: chars.gpfifo_class,
            driver_version,
            shared_window: SHARED_WINDOW,
            local_window: LOCAL_WINDOW,
            unified_addresses: unified,
        };
        debug!(
            "nvgpu device ready: {} ({}), {} SMs, {} MiB, driver {:?}",
            info.name,
            if emulated { "emulated" } else { "real" },
            info.sm_count,
            info.memory_bytes >> 20,
            info.driver_version
        );
        Ok(NvgpuBackend { dev, info })
    }

    /// The raw characteristics the driver reported.
    pub fn characteristics(&self) -> &nvgpu_gpu_characteristics {
        &self.dev.chars
    }

    /// The VEID of the device's subcontext.
    pub fn veid(&self) -> u32 {
        self.dev.veid
    }

    /// `NVGPU_GPU_IOCTL_FLUSH_L2` on the ctrl fd: write back (and optionally invalidate) the GPU
    /// L2 and flush the FB. Invalid combinations are rejected before the call (§3).
    pub fn flush_l2(&self, invalidate: bool, fb_flush: bool) -> Result<()> {
        let mut a = nvgpu_gpu_l2_fb_args::new(true, invalidate, fb_flush);
        self.dev
            .ioctl(self.dev.ctrl_fd, NVGPU_GPU_IOCTL_FLUSH_L2, &mut a, || {
                format!(
                    "NVGPU_GPU_IOCTL_FLUSH_L2(l2_flush=1, l2_invalidate={}, fb_flush={})",
                    invalidate as u8, fb_flush as u8
                )
            })
            .map(|_| ())
    }

    /// Number of live allocations (for leak checks).
    pub fn live_allocations(&self) -> usize {
        self.dev.buffers.lock().len()
    }
}

impl Backend for NvgpuBackend {
    fn info(&self) -> &DeviceInfo {
        &self.info
    }

    fn alloc(&self, size: u64, flags: MemFlags) -> Result<Allocation> {
        if size == 0 {
            return Err(Error::invalid("alloc: size is 0"));
        }
        if size > MAX_ALLOC {
            return Err(Error::invalid(format!(
                "alloc: size {size:#x} exceeds the limit {MAX_ALLOC:#x} (1 TiB)"
            )));
        }
        if flags.cpu_cached && flags.write_combined {
            return Err(Error::invalid(
                "alloc: MemFlags.cpu_cached and MemFlags.write_combined are exclusive",
            ));
        }
        let size = size.div_ceil(PAGE_SIZE) * PAGE_SIZE;
        let cache = if flags.write_combined {
            NVMAP_HANDLE_WRITE_COMBINE
        } else {
            NVMAP_HANDLE_CACHEABLE
        };
        let b = self
            .dev
            .create_buffer(size, cache, flags.zeroed, true, true, false)?;
        let gpu_va = b.gpu_va.unwrap_or(0);
        let cpu = b.cpu;
        let id = self.dev.next_id.fetch_add(1, Ordering::Relaxed);
        self.dev.buffers.lock().insert(id, b);
        Ok(Allocation {
            gpu_va,
            cpu,
            size,
            id,
        })
    }

    fn free(&self, alloc: &Allocation) -> Result<()> {
        let mut map = self.dev.buffers.lock();
        match map.get(&alloc.id) {
            Some(b) if b.gpu_va == Some(alloc.gpu_va) && b.cpu == alloc.cpu => {}
            Some(b) => {
                return Err(Error::new(
                    Status::InvalidHandle,
                    format!(
                        "free: allocation id={} does not match (gpu_va={:#x} cpu={:p}, expected gpu_va={:#x} cpu={:p})",
                        alloc.id,
                        alloc.gpu_va,
                        alloc.cpu,
                        b.gpu_va.unwrap_or(0),
                        b.cpu
                    ),
                ))
            }
            None => {
                return Err(Error::new(
                    Status::InvalidHandle,
                    format!("free: unknown or already freed allocation id={} gpu_va={:#x}", alloc.id, alloc.gpu_va),
                ))
            }
        }
        let Some(mut b) = map.remove(&alloc.id) else {
            return Err(Error::new(
                Status::Internal,
                "free: allocation vanished under the lock",
            ));
        };
        drop(map);
        self.dev.release_buffer(&mut b)
    }

    fn export_dmabuf(&self, alloc: &Allocation) -> Result<RawFd> {
        let handle = match self.dev.buffers.lock().get(&alloc.id) {
            Some(b) => b.handle,
            None => {
                return Err(Error::new(
                    Status::InvalidHandle,
                    format!(
                        "export_dmabuf: unknown allocation id={} gpu_va={:#x}",
                        alloc.id, alloc.gpu_va
                    ),
                ))
            }
        };
        let mut g = nvmap_create_handle::get_fd(handle);
        self.dev
            .ioctl(self.dev.nvmap_fd, NVMAP_IOC_GET_FD, &mut g, || {
                format!("NVMAP_IOC_GET_FD(handle={handle:#x})")
            })?;
        Ok(g.fd())
    }

    fn create_channel(&self, engine: Engine, entries: u32) -> Result<Box<dyn Channel>> {
        Ok(Box::new(NvgpuChannel::create(
            self.dev.clone(),
            engine,
            entries,
        )?))
    }

    fn fault_log(&self) -> Vec<KernelFaultRecord> {
        self.dev.sys.fault_log()
    }
}

#[allow(dead_code)]
fn _assert_send_sync() {
    fn is<T: Send + Sync>() {}
    is::<NvgpuBackend>();
    is::<NvgpuChannel>();
}
