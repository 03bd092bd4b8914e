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
mod device;
mod memory;
mod open;

use std::ffi::CStr;
use std::os::fd::RawFd;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use crate::backend::{Allocation, Backend, Channel, DeviceInfo, Engine, MemFlags};
use crate::error::{Error, Result, Status};
use crate::os::KernelFaultRecord;
use crate::sys::nvgpu::{
    nvgpu_as_alloc_space_args, nvgpu_as_map_buffer_ex_args, nvgpu_as_unmap_buffer_args,
    NVGPU_AS_IOCTL_ALLOC_SPACE, NVGPU_AS_IOCTL_MAP_BUFFER_EX, NVGPU_AS_IOCTL_UNMAP_BUFFER,
    NVGPU_AS_MAP_BUFFER_FLAGS_FIXED_OFFSET, NV_KIND_INVALID, NV_KIND_PITCH,
};
use crate::sys::nvmap::*;

pub use channel::NvgpuChannel;
pub(crate) use device::Device;
pub(crate) use memory::NvBuf;
pub use open::read_characteristics;

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

/// The nvgpu backend. Cheap to share; channels keep the device alive until they are dropped.
pub struct NvgpuBackend {
    dev: Arc<Device>,
    info: DeviceInfo,
    pool: Arc<crate::backend::pool::Pool>,
    cilp: bool,
}

/// Channels one TSG holds: `common/fifo/tsg.c:nvgpu_tsg_bind_channel` refuses the 129th with
/// EINVAL (`ram_rl_entry_tsg_length_max_v()` = 0x80 on ga10b).
pub const TSG_MAX_CHANNELS: u32 = 128;

impl NvgpuBackend {
    /// Channels of the device that exist (made at open or later, free or in use by queues).
    pub fn channels_live(&self) -> u32 {
        self.pool.live()
    }
    /// Free channels of `engine` in the device's pool.
    pub fn channels_free(&self, engine: Engine) -> usize {
        self.pool.free_count(engine)
    }
    /// Whether the device's compute channels asked for CILP preemption (see
    /// [`crate::backend::pool`]).
    pub fn uses_cilp(&self) -> bool {
        self.cilp
    }
}

impl Drop for NvgpuBackend {
    fn drop(&mut self) {
        // The free channels hold the device; queues (and so channels in use) are gone by now.
        self.pool.drain();
    }
}

impl std::fmt::Debug for NvgpuBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NvgpuBackend")
            .field("info", &self.info)
            .finish()
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
            Some(b) if b.gpu_va.unwrap_or(0) == alloc.gpu_va && b.cpu == alloc.cpu => {}
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

    /// `NVGPU_AS_IOCTL_ALLOC_SPACE` of `size + align - 4 KiB` (nvgpu takes no alignment:
    /// `o_a` is the offset only with FIXED_OFFSET), the aligned part handed out.
    fn reserve_va(&self, size: u64, align: u64) -> Result<u64> {
        let align = align.max(crate::backend::VMM_GRANULE);
        let span = size
            .checked_add(align - PAGE_SIZE)
            .filter(|_| size > 0 && size % PAGE_SIZE == 0 && align.is_power_of_two())
            .ok_or_else(|| {
                Error::invalid(format!("reserve_va: size {size:#x}, alignment {align:#x}"))
            })?;
        let pages = span / PAGE_SIZE;
        let mut s = nvgpu_as_alloc_space_args {
            pages,
            page_size: PAGE_SIZE as u32,
            flags: 0,
            o_a: 0,
            padding: [0; 2],
        };
        self.dev
            .ioctl(self.dev.as_fd, NVGPU_AS_IOCTL_ALLOC_SPACE, &mut s, || {
                format!(
                    "NVGPU_AS_IOCTL_ALLOC_SPACE(pages={pages:#x}, page_size={PAGE_SIZE}, flags=0)"
                )
            })?;
        let va = s.o_a.next_multiple_of(align);
        self.dev.vmm_areas.lock().insert(va, (s.o_a, pages));
        Ok(va)
    }

    fn release_va(&self, va: u64, size: u64) -> Result<()> {
        let (off, pages) = self.dev.vmm_areas.lock().remove(&va).ok_or_else(|| {
            Error::new(
                Status::InvalidHandle,
                format!("release_va: no reservation at {va:#x} ({size:#x} bytes)"),
            )
        })?;
        self.dev.free_space(off, pages)
    }

    /// An nvmap buffer (CACHEABLE, as `alloc` makes them) with no GPU or CPU mapping; its
    /// dma-buf fd is kept for the fixed mappings.
    fn alloc_physical(&self, size: u64) -> Result<Allocation> {
        if size == 0 || size % PAGE_SIZE != 0 || size > MAX_ALLOC {
            return Err(Error::invalid(format!("alloc_physical: size {size:#x}")));
        }
        let mut b =
            self.dev
                .create_buffer(size, NVMAP_HANDLE_CACHEABLE, false, false, false, true)?;
        // No CPU view: `free` matches the allocation's null `cpu` (and CPU views come from
        // `map_physical_cpu`).
        let len = size as usize;
        // SAFETY: the view create_buffer made, `len` bytes.
        if let Err(e) = unsafe { self.dev.sys.munmap(b.cpu, len) } {
            let _ = self.dev.release_buffer(&mut b);
            return Err(os_err(format!("munmap({:p}, {len:#x})", b.cpu), e));
        }
        b.cpu = std::ptr::null_mut();
        let id = self.dev.next_id.fetch_add(1, Ordering::Relaxed);
        self.dev.buffers.lock().insert(id, b);
        Ok(Allocation {
            gpu_va: 0,
            cpu: std::ptr::null_mut(),
            size,
            id,
        })
    }

    /// `NVGPU_AS_IOCTL_MAP_BUFFER_EX` with `FIXED_OFFSET` at `va`, `buffer_offset` and
    /// `mapping_size` naming the part (nvgpu-kernel-interface.md §4.3).
    fn map_physical(&self, alloc: &Allocation, offset: u64, va: u64, size: u64) -> Result<()> {
        let fd = match self.dev.buffers.lock().get(&alloc.id) {
            Some(b) if b.gpu_va.is_none() && b.fd >= 0 => b.fd,
            _ => {
                return Err(Error::new(
                    Status::InvalidHandle,
                    format!("map_physical: no physical allocation id {}", alloc.id),
                ))
            }
        };
        let flags = MAP_FLAGS | NVGPU_AS_MAP_BUFFER_FLAGS_FIXED_OFFSET;
        let mut m = nvgpu_as_map_buffer_ex_args {
            flags,
            compr_kind: NV_KIND_INVALID,
            incompr_kind: NV_KIND_PITCH,
            dmabuf_fd: fd as u32,
            page_size: PAGE_SIZE as u32,
            buffer_offset: offset,
            mapping_size: size,
            offset: va,
        };
        self.dev
            .ioctl(self.dev.as_fd, NVGPU_AS_IOCTL_MAP_BUFFER_EX, &mut m, || {
                format!(
                    "NVGPU_AS_IOCTL_MAP_BUFFER_EX(dmabuf_fd={fd}, flags={flags:#x}, offset={va:#x}, buffer_offset={offset:#x}, mapping_size={size:#x})"
                )
            })?;
        Ok(())
    }

    /// Jetson's memory is host memory: the same nvmap buffer as [`Backend::alloc_physical`]
    /// (the SoC has one NUMA node, 0).
    fn alloc_physical_host(&self, size: u64, numa: Option<u32>) -> Result<Allocation> {
        if let Some(n) = numa.filter(|n| *n != 0) {
            return Err(Error::invalid(format!(
                "alloc_physical_host: host NUMA node {n}: Jetson has node 0 only"
            )));
        }
        self.alloc_physical(size)
    }

    /// `mmap` of the buffer's dma-buf fd at `va` (nvmap maps every view shared).
    fn map_physical_cpu(
        &self,
        alloc: &Allocation,
        offset: u64,
        va: u64,
        size: u64,
        writable: bool,
    ) -> Result<()> {
        let fd = match self.dev.buffers.lock().get(&alloc.id) {
            Some(b) if b.gpu_va.is_none() && b.fd >= 0 => b.fd,
            _ => {
                return Err(Error::new(
                    Status::InvalidHandle,
                    format!("map_physical_cpu: no physical allocation id {}", alloc.id),
                ))
            }
        };
        super::map_fixed_cpu_view(&*self.dev.sys, fd, offset, va, size, writable, false)
    }

    fn unmap_physical_cpu(&self, va: u64, size: u64) -> Result<()> {
        super::unmap_fixed_cpu_view(&*self.dev.sys, va, size)
    }

    fn unmap_physical(&self, va: u64, size: u64) -> Result<()> {
        let mut u = nvgpu_as_unmap_buffer_args { offset: va };
        self.dev
            .ioctl(self.dev.as_fd, NVGPU_AS_IOCTL_UNMAP_BUFFER, &mut u, || {
                format!("NVGPU_AS_IOCTL_UNMAP_BUFFER(offset={va:#x}, {size:#x} bytes)")
            })
            .map(|_| ())
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
        if handle == 0 {
            return Err(Error::new(
                Status::NotSupported,
                format!(
                    "the buffer at {:#x} was imported from a dma-buf of another driver; export the original dma-buf instead",
                    alloc.gpu_va
                ),
            ));
        }
        let mut g = nvmap_create_handle::get_fd(handle);
        self.dev
            .ioctl(self.dev.nvmap_fd, NVMAP_IOC_GET_FD, &mut g, || {
                format!("NVMAP_IOC_GET_FD(handle={handle:#x})")
            })?;
        Ok(g.fd())
    }

    /// A new dma-buf fd (`NVMAP_IOC_GET_FD`, as [`Backend::export_dmabuf`]) and the buffer's
    /// size.
    fn export_fd(&self, alloc: &Allocation) -> Result<(RawFd, u64)> {
        self.export_dmabuf(alloc)
            .map(|fd| (fd, alloc.size))
            .map_err(|mut e| {
                e.message = e.message.replacen("export_dmabuf", "tg_buf_export_fd", 1);
                e
            })
    }

    /// A dma-buf: nvmap's (of this or another process), or another exporter's that nvgpu
    /// accepts; see [`Device::import_buffer`].
    fn import_fd(&self, fd: RawFd, size: u64) -> Result<(Allocation, u64)> {
        let b = self.dev.import_buffer(fd)?;
        if size > b.size {
            let total = b.size;
            let mut b = b;
            let _ = self.dev.release_buffer(&mut b);
            return Err(Error::invalid(format!(
                "tg_buf_import_fd: size {size} exceeds the {total} bytes of dma-buf fd {fd}"
            )));
        }
        let a = Allocation {
            gpu_va: b.gpu_va.unwrap_or(0),
            cpu: b.cpu,
            size: b.size,
            id: self.dev.next_id.fetch_add(1, Ordering::Relaxed),
        };
        let reported = if size == 0 { b.size } else { size };
        self.dev.buffers.lock().insert(a.id, b);
        Ok((a, reported))
    }

    fn import_physical(&self, fd: RawFd) -> Result<Allocation> {
        let b = self.dev.import_physical(fd)?;
        let a = Allocation {
            gpu_va: 0,
            cpu: std::ptr::null_mut(),
            size: b.size,
            id: self.dev.next_id.fetch_add(1, Ordering::Relaxed),
        };
        self.dev.buffers.lock().insert(a.id, b);
        Ok(a)
    }

    /// The CPU view made at allocation or import; an imported dma-buf that could not be
    /// mapped has none.
    fn map_cpu(&self, alloc: &Allocation) -> Result<*mut u8> {
        if alloc.cpu.is_null() {
            return Err(Error::new(
                Status::NotSupported,
                format!(
                    "the buffer at {:#x} has no CPU mapping: it was imported from a dma-buf that cannot be mmap()ed",
                    alloc.gpu_va
                ),
            ));
        }
        Ok(alloc.cpu)
    }

    /// A channel from the device's pool (see [`crate::backend::pool`]); `entries` is checked as
    /// for a new channel, and the channel's ring has `POOL_ENTRIES` entries (or the driver's
    /// maximum).
    fn create_channel(
        &self,
        engine: Engine,
        entries: u32,
        device_idle: bool,
    ) -> Result<Box<dyn Channel>> {
        let max = pool_entries(&self.dev);
        if entries < 2 || !entries.is_power_of_two() || entries > max {
            return Err(Error::invalid(format!(
                "create_channel: entries={entries} must be a power of two in [2, {max}]"
            )));
        }
        self.pool.take(engine, device_idle)
    }

    fn fault_log(&self) -> Vec<KernelFaultRecord> {
        self.dev.sys.fault_log()
    }

    fn channel_setup_preempts(&self, engine: Engine) -> bool {
        // A free channel of the pool is handed out with no ioctl; only a new one runs
        // ALLOC_OBJ_CTX, which disables and preempts the TSG (backend::pool).
        self.pool.free_count(engine) == 0
    }

    /// From GET_CHARACTERISTICS: `max_freq`, `L2_cache_size`, the PCI ids where the driver fills
    /// them; integrated; the UUID built by [`uuid_from_characteristics`].
    fn facts(&self) -> crate::backend::BackendFacts {
        let c = &self.dev.chars;
        crate::backend::BackendFacts {
            clock_khz: u32::try_from(c.max_freq / 1000).ok().filter(|&k| k > 0),
            l2_cache_bytes: Some(c.L2_cache_size).filter(|&b| b > 0),
            memory_bus_width_bits: None,
            ecc_enabled: None,
            integrated: true,
            pci_location: None,
            pci_ids: (c.pci_vendor_id != 0).then_some([
                c.pci_vendor_id,
                c.pci_device_id,
                c.pci_subsystem_vendor_id,
                c.pci_subsystem_device_id,
            ]),
            uuid: Some(uuid_from_characteristics(c)),
            // sm_87 has no thread-block clusters.
            cluster_sm_groups: None,
        }
    }

    /// nvmap's IOVMM heap (`NVMAP_IOC_QUERY_HEAP_PARAMS`): the memory every buffer comes from,
    /// which on Orin is the system memory the CPU shares.
    fn memory_info(&self) -> Result<(u64, u64)> {
        self.dev.iovmm_heap()
    }
}

/// The UUID the library reports for an nvgpu GPU, which has none of its own: bytes 0..8 are the
/// characteristics' `per_device_identifier`, 8..12 `arch | impl`, 12..16 `rev` (little-endian).
/// Stable for one board; the emulated Orin's is `00…00 7b 01 00 00 a1 00 00 00`.
pub fn uuid_from_characteristics(c: &crate::sys::nvgpu::nvgpu_gpu_characteristics) -> [u8; 16] {
    let mut u = [0u8; 16];
    u[..8].copy_from_slice(&c.per_device_identifier.to_le_bytes());
    u[8..12].copy_from_slice(&(c.arch | c.r#impl).to_le_bytes());
    u[12..].copy_from_slice(&c.rev.to_le_bytes());
    u
}

#[allow(dead_code)]
fn _assert_send_sync() {
    fn is<T: Send + Sync>() {}
    is::<NvgpuBackend>();
    is::<NvgpuChannel>();
}

/// GPFIFO entries of the device's pooled channels: `POOL_ENTRIES`, or the driver's maximum.
pub(crate) fn pool_entries(dev: &Device) -> u32 {
    let p = crate::backend::pool::POOL_ENTRIES;
    match dev.chars.max_gpfifo_entries {
        0 => p,
        m => m.min(p),
    }
}
