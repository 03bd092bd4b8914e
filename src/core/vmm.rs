//! Virtual memory management: ranges of GPU addresses reserved with no memory behind them,
//! device memory with no address, and mappings of parts of that memory at chosen addresses
//! (what the CUDA driver API's `cuMemAddressReserve`, `cuMemCreate` and `cuMemMap` build on).
//! Host memory takes the same path ([`Device::alloc_physical_host`]) and can also be shown to
//! the CPU at the address it is mapped at ([`Device::map_physical_cpu`]).
//!
//! Sizes, offsets and addresses are multiples of [`VMM_GRANULE`] (2 MiB). Desktop GPUs (RM):
//! addresses from the library's GPU VA window, video memory in 2 MiB pages, each mapping a UVM
//! external range of its own. Jetson (nvgpu): `NVGPU_AS_IOCTL_ALLOC_SPACE` areas, nvmap
//! buffers, `MAP_BUFFER_EX` with `FIXED_OFFSET`. The kernel drivers refuse a mapping that
//! overlaps another.

use super::device::Device;
use crate::backend::Allocation;
pub use crate::backend::VMM_GRANULE;
use crate::error::{Error, Result};
use std::sync::Arc;

fn granular(what: &str, v: u64) -> Result<()> {
    if v % VMM_GRANULE != 0 {
        return Err(Error::invalid(format!(
            "{what} {v:#x} is not a multiple of the granularity ({VMM_GRANULE:#x} bytes)"
        )));
    }
    Ok(())
}

/// A reserved range of GPU virtual addresses; given back when dropped.
pub struct VaRange {
    dev: Device,
    start: u64,
    size: u64,
}

impl VaRange {
    pub fn start(&self) -> u64 {
        self.start
    }
    pub fn size(&self) -> u64 {
        self.size
    }
}

impl Drop for VaRange {
    fn drop(&mut self) {
        let _ = self.dev.backend().release_va(self.start, self.size);
    }
}

/// Device memory with no address of its own ([`Device::map_physical`] places parts of it);
/// freed once dropped and no queued work may still use it.
pub struct PhysicalMemory {
    dev: Device,
    alloc: Option<Allocation>,
    host: bool,
}

impl PhysicalMemory {
    pub fn size(&self) -> u64 {
        self.a().size
    }
    /// Host memory ([`Device::alloc_physical_host`]), which [`Device::map_physical_cpu`] can
    /// also show to the CPU.
    pub fn is_host(&self) -> bool {
        self.host
    }
    /// A new fd carrying the memory for another process or driver (Jetson: a dma-buf;
    /// desktop GPUs: an RM export fd), owned by the caller; [`Device::import_physical`] takes
    /// it back.
    pub fn export_fd(&self) -> Result<std::os::fd::RawFd> {
        self.dev.backend().export_fd(self.a()).map(|(fd, _)| fd)
    }
    fn a(&self) -> &Allocation {
        self.alloc.as_ref().expect("allocation present until drop")
    }
}

impl Drop for PhysicalMemory {
    fn drop(&mut self) {
        if let Some(a) = self.alloc.take() {
            self.dev.free_when_idle(a);
        }
    }
}

/// A part of a [`PhysicalMemory`] mapped at a GPU address. Dropping it waits for the device's
/// queued work, then unmaps.
pub struct Mapping {
    dev: Device,
    va: u64,
    size: u64,
    phys: Arc<PhysicalMemory>,
}

impl Mapping {
    pub fn va(&self) -> u64 {
        self.va
    }
    pub fn size(&self) -> u64 {
        self.size
    }
    /// The memory mapped.
    pub fn physical(&self) -> &Arc<PhysicalMemory> {
        &self.phys
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // Work already queued may use the mapping: unmapping under it would fault the GPU.
        let _ = self.dev.synchronize(super::DEFAULT_TIMEOUT_NS);
        let _ = self.dev.backend().unmap_physical(self.va, self.size);
    }
}

/// A CPU view of host [`PhysicalMemory`] at a chosen address ([`Device::map_physical_cpu`]);
/// unmapped when dropped.
pub struct CpuView {
    dev: Device,
    va: u64,
    size: u64,
    writable: bool,
    _phys: Arc<PhysicalMemory>,
}

impl CpuView {
    pub fn va(&self) -> u64 {
        self.va
    }
    pub fn size(&self) -> u64 {
        self.size
    }
    pub fn writable(&self) -> bool {
        self.writable
    }
}

impl Drop for CpuView {
    fn drop(&mut self) {
        let _ = self.dev.backend().unmap_physical_cpu(self.va, self.size);
    }
}

impl Device {
    /// Reserve `size` bytes of GPU addresses aligned to `align` (0: the granularity); both
    /// multiples of [`VMM_GRANULE`] (`align` a power of two).
    pub fn reserve_va(&self, size: u64, align: u64) -> Result<VaRange> {
        self.check_usable()?;
        granular("reserve_va: size", size)?;
        if size == 0 || (align != 0 && !align.is_power_of_two()) {
            return Err(Error::invalid(format!(
                "reserve_va: size {size:#x}, alignment {align:#x}"
            )));
        }
        let start = self.backend().reserve_va(size, align.max(VMM_GRANULE))?;
        Ok(VaRange {
            dev: self.clone(),
            start,
            size,
        })
    }

    /// `size` bytes (a multiple of [`VMM_GRANULE`]) of device memory with no address.
    pub fn alloc_physical(&self, size: u64) -> Result<PhysicalMemory> {
        self.check_usable()?;
        granular("alloc_physical: size", size)?;
        if size == 0 || size > super::buffer::MAX_ALLOC_BYTES {
            return Err(Error::invalid(format!("alloc_physical: size {size:#x}")));
        }
        self.collect_deferred();
        let alloc = self.backend().alloc_physical(size)?;
        Ok(PhysicalMemory {
            dev: self.clone(),
            alloc: Some(alloc),
            host: false,
        })
    }

    /// `size` bytes (a multiple of [`VMM_GRANULE`]) of host memory with no address, pinned
    /// for this device: its pages from host NUMA node `numa` where given. Desktop GPUs: pages
    /// of a memfd, pinned through an RM OS descriptor. Jetson: the same memory as
    /// [`Device::alloc_physical`] (node 0 only).
    pub fn alloc_physical_host(&self, size: u64, numa: Option<u32>) -> Result<PhysicalMemory> {
        self.check_usable()?;
        granular("alloc_physical_host: size", size)?;
        if size == 0 || size > super::buffer::MAX_ALLOC_BYTES {
            return Err(Error::invalid(format!(
                "alloc_physical_host: size {size:#x}"
            )));
        }
        self.collect_deferred();
        let alloc = self.backend().alloc_physical_host(size, numa)?;
        Ok(PhysicalMemory {
            dev: self.clone(),
            alloc: Some(alloc),
            host: true,
        })
    }

    /// Show `[offset, offset + size)` of host memory `phys` to the CPU at address `va` (all
    /// multiples of [`VMM_GRANULE`]; read-write, or read-only), where the process maps nothing
    /// yet: the view that makes a GPU mapping of host memory at `va` usable from the CPU at the
    /// same address. Gone when the returned value is dropped.
    pub fn map_physical_cpu(
        &self,
        phys: &Arc<PhysicalMemory>,
        offset: u64,
        va: u64,
        size: u64,
        writable: bool,
    ) -> Result<CpuView> {
        self.check_usable()?;
        granular("map_physical_cpu: address", va)?;
        granular("map_physical_cpu: offset", offset)?;
        granular("map_physical_cpu: size", size)?;
        if !phys.host {
            return Err(Error::invalid(
                "map_physical_cpu: the memory is device memory (only host memory has CPU views)",
            ));
        }
        self.same_device(phys, "map_physical_cpu")?;
        if size == 0 || offset.checked_add(size).is_none_or(|e| e > phys.size()) {
            return Err(Error::invalid(format!(
                "map_physical_cpu: [{offset:#x}, +{size:#x}) is not inside the {:#x}-byte allocation",
                phys.size()
            )));
        }
        self.backend()
            .map_physical_cpu(phys.a(), offset, va, size, writable)?;
        Ok(CpuView {
            dev: self.clone(),
            va,
            size,
            writable,
            _phys: phys.clone(),
        })
    }

    fn same_device(&self, phys: &PhysicalMemory, call: &str) -> Result<()> {
        if !std::ptr::eq(
            self.backend() as *const _ as *const u8,
            phys.dev.backend() as *const _ as *const u8,
        ) {
            return Err(Error::invalid(format!(
                "{call}: the memory belongs to another device"
            )));
        }
        Ok(())
    }

    /// Memory exported as `fd` ([`PhysicalMemory::export_fd`], here or in another process;
    /// the caller keeps `fd`) as physical memory of this device. Its size must be a multiple of
    /// [`VMM_GRANULE`].
    pub fn import_physical(&self, fd: std::os::fd::RawFd) -> Result<PhysicalMemory> {
        self.check_usable()?;
        if fd < 0 {
            return Err(Error::invalid(format!(
                "import_physical: fd {fd} is not a file descriptor"
            )));
        }
        let alloc = self.backend().import_physical(fd).map_err(|mut e| {
            // The backends' import checks name the buffer import they share code with.
            e.message = e.message.replace("tg_buf_import_fd", "import_physical");
            e
        })?;
        let p = PhysicalMemory {
            dev: self.clone(),
            alloc: Some(alloc),
            host: false,
        };
        granular("import_physical: the memory's size", p.size())?;
        Ok(p)
    }

    /// Map `[offset, offset + size)` of `phys` at GPU address `va` (all multiples of
    /// [`VMM_GRANULE`]), read-write for this device's queues. `va` should lie in a
    /// [`VaRange`] of this device; the driver refuses a mapping over another.
    pub fn map_physical(
        &self,
        phys: &Arc<PhysicalMemory>,
        offset: u64,
        va: u64,
        size: u64,
    ) -> Result<Mapping> {
        self.check_usable()?;
        granular("map_physical: address", va)?;
        granular("map_physical: offset", offset)?;
        granular("map_physical: size", size)?;
        self.same_device(phys, "map_physical")?;
        if size == 0 || offset.checked_add(size).is_none_or(|e| e > phys.size()) {
            return Err(Error::invalid(format!(
                "map_physical: [{offset:#x}, +{size:#x}) is not inside the {:#x}-byte allocation",
                phys.size()
            )));
        }
        self.backend().map_physical(phys.a(), offset, va, size)?;
        Ok(Mapping {
            dev: self.clone(),
            va,
            size,
            phys: phys.clone(),
        })
    }
}
