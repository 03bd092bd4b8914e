//! Memory: video memory (BAR1 CPU mapping, made on first CPU access by default), host memory
//! pinned through an OS descriptor, and the small system-memory notifiers. Buffers get a GPU
//! address from the window of [`va`] (UVM external ranges) and a CPU mapping at the same address
//! where the process has room, elsewhere otherwise. Every [`MemRecord`] step is undone by
//! [`Inner::free_record`].

use super::rmapi::{open_node, uvm_ioctl};
use super::state::{Inner, MemKind, MemRecord};
use super::va;
use crate::error::{Error, Result, Status};
use crate::sys::rm::*;
use std::os::fd::RawFd;
use std::sync::atomic::Ordering;
use std::sync::OnceLock;

/// Allocations of at least this size use 2 MiB pages.
pub const HUGE_PAGE_THRESHOLD: u64 = 8 << 20;
/// Size of each channel's error notifier.
pub const NOTIFIER_SIZE: u64 = 4096;

pub(super) const PAGE_4K: u64 = 4096;
pub(super) const PAGE_2M: u64 = 2 << 20;

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
pub(super) fn eager_cpu_map() -> bool {
    std::env::var_os("TEGRAGPU_RM_EAGER_CPU_MAP").is_some_and(|v| v != "0")
}

/// `size` bytes (aligned to `align`) of the GPU VA window.
/// The Hopper shared- and local-memory windows of the GPU address space ([start, end)): no
/// buffer can be reached there.
const SHADER_WINDOWS: (u64, u64) = (0x7293_0000_0000, 0x7295_0000_0000);

/// The CPU address ranges (start, size) that reservations of GPU addresses hold with a
/// placeholder ([`hold_cpu_range`]).
static CPU_HELD: parking_lot::Mutex<std::collections::BTreeMap<u64, u64>> =
    parking_lot::Mutex::new(std::collections::BTreeMap::new());

/// Whether `[va, va + size)` lies in a range [`hold_cpu_range`] holds.
fn cpu_held(va: u64, size: u64) -> bool {
    CPU_HELD
        .lock()
        .range(..=va)
        .next_back()
        .is_some_and(|(s, n)| va + size <= s + n)
}

/// `mmap(PROT_NONE)` of anonymous memory at `va`: `MAP_FIXED` (`replace`) or
/// `MAP_FIXED_NOREPLACE`; an address the kernel took as a hint is given back.
fn place_cpu_placeholder(
    sys: &dyn crate::os::Sys,
    va: u64,
    size: u64,
    replace: bool,
) -> std::result::Result<(), crate::os::Errno> {
    let len = usize::try_from(size).map_err(|_| libc::EINVAL)?;
    let fixed = if replace {
        libc::MAP_FIXED
    } else {
        libc::MAP_FIXED_NOREPLACE
    };
    let flags = libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE | fixed;
    // SAFETY: MAP_FIXED_NOREPLACE replaces nothing; MAP_FIXED replaces only a view of the
    // library's own in a range it holds.
    let p = unsafe { sys.mmap(va as *mut u8, len, libc::PROT_NONE, flags, -1, 0) }?;
    if p as u64 != va {
        // SAFETY: the mapping just made.
        let _ = unsafe { sys.munmap(p, len) };
        return Err(libc::EEXIST);
    }
    Ok(())
}

/// Hold the CPU addresses `[va, va + size)` (the GPU addresses of a reservation) with a
/// `PROT_NONE` placeholder, as NVIDIA's libcuda does, so that host memory mapped there can
/// also be shown to the CPU at the same address. False where the process maps something there.
pub(super) fn hold_cpu_range(sys: &dyn crate::os::Sys, va: u64, size: u64) -> bool {
    let held = place_cpu_placeholder(sys, va, size, false).is_ok();
    if held {
        CPU_HELD.lock().insert(va, size);
    }
    held
}

/// Give back what [`hold_cpu_range`] holds at `va` (nothing where it held nothing).
pub(super) fn release_cpu_range(sys: &dyn crate::os::Sys, va: u64) {
    if let Some(size) = CPU_HELD.lock().remove(&va) {
        // SAFETY: the placeholder hold_cpu_range made (host views in it are gone by now).
        let _ = unsafe { sys.munmap(va as *mut u8, size as usize) };
    }
}

pub(super) fn window_alloc(size: u64, align: u64) -> Result<u64> {
    let mut w = va::low_va().lock();
    w.alloc(size, align).ok_or_else(|| {
        Error::new(
            Status::OutOfMemory,
            format!(
                "no {size:#x}-byte range left in the GPU VA window [{:#x}, {:#x}) ({} MiB free, fragmented or in use)",
                va::LOW_VA_BASE,
                va::LOW_VA_END,
                w.free_bytes() >> 20
            ),
        )
    })
}

impl Inner {
    /// A record of `kind` built by `f`; where `f` fails, what it set up is freed
    /// ([`Inner::free_record`] undoes every field that is set) and its error returned.
    fn build_record(
        &self,
        kind: MemKind,
        f: impl FnOnce(&mut MemRecord) -> Result<()>,
    ) -> Result<MemRecord> {
        let mut rec = MemRecord::new(kind);
        match f(&mut rec) {
            Ok(()) => Ok(rec),
            Err(e) => {
                let _ = self.free_record(rec);
                Err(e)
            }
        }
    }

    pub(super) fn uvm_map(&self, va: u64, size: u64, handle: u32) -> Result<()> {
        self.uvm_map_at(va, size, handle, 0)
    }

    /// `[offset, offset + size)` of RM memory `handle` mapped at `va` through a UVM external
    /// range of its own (`UVM_CREATE_EXTERNAL_RANGE`, `UVM_MAP_EXTERNAL_ALLOCATION` with that
    /// offset; kernel-open/nvidia-uvm/uvm_map_external.c: uvm_api_map_external_allocation).
    pub(super) fn uvm_map_at(&self, va: u64, size: u64, handle: u32, offset: u64) -> Result<()> {
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
        m.offset = offset;
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
                format!("UVM_MAP_EXTERNAL_ALLOCATION(base={va:#x}, length={size:#x}, offset={offset:#x}, hMemory={handle:#x})")
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
    pub(super) fn uvm_free(&self, va: u64, size: u64) -> Result<()> {
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

    pub(super) fn mem_params(
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

    /// Video memory and its UVM GPU mapping; with `cpu_map`, also the BAR1 CPU mapping (at the
    /// GPU address where the process has room; otherwise [`Inner::map_cpu`] makes it on first
    /// CPU access).
    pub(super) fn alloc_vidmem(
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
        let size = size
            .checked_next_multiple_of(page)
            .ok_or_else(|| Error::invalid(format!("allocation size {size:#x} overflows")))?;
        self.build_record(MemKind::Vidmem, |rec| {
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
                self.map_bar1(rec, bar1_kib)?;
            }
            self.uvm_map(rec.va, size, rec.handle)?;
            rec.uvm_mapped = true;
            Ok(())
        })
    }

    /// Video memory in 2 MiB pages with no mapping at all (for `map_physical`).
    pub(super) fn alloc_vidmem_unmapped(&self, size: u64) -> Result<MemRecord> {
        self.build_record(MemKind::Vidmem, |rec| {
            rec.size = size;
            let mut p = self.mem_params(size, PAGE_2M, true, false);
            rec.handle = self
                .api
                .alloc(self.device, NV01_MEMORY_LOCAL_USER, Some(&mut p))?;
            Ok(())
        })
    }

    /// The BAR1 CPU mapping of a video-memory record (a fresh `/dev/nvidiaN` fd,
    /// `NV_ESC_RM_MAP_MEMORY`, `mmap`: at its GPU address where the process has room).
    pub(super) fn map_bar1(&self, rec: &mut MemRecord, bar1_kib: u32) -> Result<()> {
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
        rec.cpu = self.mmap_cpu(rec.va, size, rec.map_fd, libc::MAP_SHARED)?;
        timing_step(t, "mmap", size);
        Ok(())
    }

    /// CPU pointer of allocation `id` (at `va`, `size` bytes), BAR1-mapping video memory
    /// that was allocated without a CPU mapping.
    pub(super) fn map_cpu(&self, id: u64, va: u64, size: u64, bar1_kib: u32) -> Result<*mut u8> {
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
            let mapped = match rec.kind {
                MemKind::Vidmem | MemKind::ImportedVidmem => self.map_bar1(rec, bar1_kib),
                MemKind::ImportedSysmem => self.map_sysmem(rec),
                MemKind::Host | MemKind::Notifier | MemKind::Registered => {
                    return Err(Error::new(
                        Status::Internal,
                        format!(
                            "map_cpu: allocation id {id} ({:?}) has no CPU mapping",
                            rec.kind
                        ),
                    ))
                }
            };
            if let Err(e) = mapped {
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

    /// Host pages, pinned through an OS descriptor and UVM-mapped at their GPU address (the CPU
    /// mapping at the same address where the process has room).
    pub(super) fn alloc_host(&self, size: u64) -> Result<MemRecord> {
        let size = size
            .checked_next_multiple_of(PAGE_4K)
            .ok_or_else(|| Error::invalid(format!("allocation size {size:#x} overflows")))?;
        let align = if size >= HUGE_PAGE_THRESHOLD {
            PAGE_2M
        } else {
            PAGE_4K
        };
        self.build_record(MemKind::Host, |rec| {
            rec.va = window_alloc(size, align)?;
            rec.va_owned = true;
            rec.size = size;
            rec.cpu = self.mmap_cpu(rec.va, size, -1, libc::MAP_SHARED | libc::MAP_ANONYMOUS)?;
            let handle = self.next_handle.fetch_add(1, Ordering::Relaxed);
            // RM pins the pages at their CPU address; UVM maps them at the GPU address.
            self.api
                .alloc_os_descriptor(self.dev_fd, self.device, handle, rec.cpu as u64, size)?;
            rec.handle = handle;
            self.uvm_map(rec.va, size, rec.handle)?;
            rec.uvm_mapped = true;
            Ok(())
        })
    }

    /// Host pages with no GPU address (for `map_physical`): a memfd of `size` bytes (its pages
    /// from host NUMA node `numa` where given, `mbind`), pinned through an OS descriptor at a
    /// private view of the record's; the memfd stays for CPU views at mapped addresses
    /// ([`Inner::map_host_view`]).
    pub(super) fn alloc_host_unmapped(&self, size: u64, numa: Option<u32>) -> Result<MemRecord> {
        self.build_record(MemKind::Host, |rec| {
            let len = usize::try_from(size)
                .map_err(|_| Error::invalid(format!("allocation size {size:#x}")))?;
            let fd = nix::sys::memfd::memfd_create(
                c"tegragpu-host",
                nix::sys::memfd::MemFdCreateFlag::MFD_CLOEXEC,
            )
            .map_err(|e| Error::os("memfd_create(\"tegragpu-host\")", e as i32))?;
            rec.map_fd = std::os::fd::IntoRawFd::into_raw_fd(fd);
            nix::unistd::ftruncate(
                // SAFETY: the record owns the memfd until it is freed.
                unsafe { std::os::fd::BorrowedFd::borrow_raw(rec.map_fd) },
                size as i64,
            )
            .map_err(|e| Error::os(format!("ftruncate(memfd, {size:#x})"), e as i32))?;
            rec.size = size;
            // SAFETY: a fresh shared mapping of the memfd at an address of the kernel's choice.
            let p = unsafe {
                self.sys().mmap(
                    std::ptr::null_mut(),
                    len,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_SHARED,
                    rec.map_fd,
                    0,
                )
            }
            .map_err(|e| Error::os(format!("mmap(memfd, len={size:#x})"), e))?;
            rec.cpu = p as usize;
            if let Some(node) = numa {
                // SAFETY: the mapping just made, before any page of it exists.
                unsafe { crate::os::bind_to_numa_node(p, len, node) }.map_err(|e| {
                    Error::os(format!("mbind({size:#x} bytes, host NUMA node {node})"), e)
                })?;
            }
            let handle = self.next_handle.fetch_add(1, Ordering::Relaxed);
            // RM pins the pages at the view's address; map_physical maps them for the GPU.
            self.api
                .alloc_os_descriptor(self.dev_fd, self.device, handle, rec.cpu as u64, size)?;
            rec.handle = handle;
            Ok(())
        })
    }

    /// A CPU view of `[offset, offset + size)` of the unmapped host record `id` at `va`.
    pub(super) fn map_host_view(
        &self,
        id: u64,
        offset: u64,
        va: u64,
        size: u64,
        writable: bool,
    ) -> Result<()> {
        let fd = match self.mem.lock().get(&id) {
            Some(r) if r.kind == MemKind::Host && r.va == 0 && r.map_fd >= 0 => r.map_fd,
            _ => {
                return Err(Error::new(
                    Status::InvalidHandle,
                    format!("map_physical_cpu: no physical host allocation id {id}"),
                ))
            }
        };
        let replace = cpu_held(va, size);
        crate::backend::map_fixed_cpu_view(self.sys(), fd, offset, va, size, writable, replace)
    }

    /// Undo [`Inner::map_host_view`]: the placeholder comes back where there was one.
    pub(super) fn unmap_host_view(&self, va: u64, size: u64) -> Result<()> {
        if cpu_held(va, size) {
            return place_cpu_placeholder(self.sys(), va, size, true).map_err(|e| {
                Error::os(
                    format!("mmap(PROT_NONE, MAP_FIXED) at {va:#x} ({size:#x} bytes)"),
                    e,
                )
            });
        }
        crate::backend::unmap_fixed_cpu_view(self.sys(), va, size)
    }

    /// The process's own memory `[start, start + size)` (whole 4 KiB pages) for the GPU:
    /// pinned through an OS descriptor (RM takes the pages at their CPU address,
    /// `os_desc_mem.c:osdescConstruct_IMPL`) and mapped by UVM at the GPU address equal to the
    /// CPU address, so that kernels use the host pointer itself. Refused where that address is
    /// not free for the GPU: inside the library's own window, the shader windows, beyond the
    /// GPU's 49-bit addresses, or a range UVM already has (a registration sharing a page).
    /// `owned`: the pages are an anonymous mapping handed to the library, unmapped once RM has
    /// released them (the record is then of kind `Host`).
    pub(super) fn register_host(&self, start: u64, size: u64, owned: bool) -> Result<MemRecord> {
        let end = start.checked_add(size).filter(|e| *e <= 1 << 47);
        let Some(end) = end else {
            return Err(Error::invalid(format!(
                "register: [{start:#x}, +{size:#x}) is not user memory"
            )));
        };
        let overlaps = |a: u64, b: u64| start < b && a < end;
        if overlaps(va::LOW_VA_BASE, va::LOW_VA_END) || overlaps(SHADER_WINDOWS.0, SHADER_WINDOWS.1)
        {
            return Err(Error::new(
                Status::NotSupported,
                format!(
                    "register: [{start:#x}, {end:#x}) lies where the GPU's addresses are taken (the library's window [{:#x}, {:#x}) or the shader windows [{:#x}, {:#x}))",
                    va::LOW_VA_BASE, va::LOW_VA_END, SHADER_WINDOWS.0, SHADER_WINDOWS.1
                ),
            ));
        }
        let kind = if owned {
            MemKind::Host
        } else {
            MemKind::Registered
        };
        self.build_record(kind, |rec| {
            rec.va = start;
            rec.size = size;
            let handle = self.next_handle.fetch_add(1, Ordering::Relaxed);
            self.api
                .alloc_os_descriptor(self.dev_fd, self.device, handle, start, size)?;
            rec.handle = handle;
            self.uvm_map(start, size, handle).map_err(|e| {
                Error::new(
                    Status::NotSupported,
                    format!(
                        "register: the pages [{start:#x}, {end:#x}) cannot be mapped for the GPU at their own addresses (pages another registration already maps cannot be registered again): {}",
                        e.message
                    ),
                )
            })?;
            rec.uvm_mapped = true;
            if owned {
                // From here the record unmaps the pages when it is freed.
                rec.cpu = start as usize;
            }
            Ok(())
        })
    }

    /// A small NV01_MEMORY_SYSTEM buffer for RM to write notifications into, CPU-mapped
    /// through a fresh control fd (it needs no GPU mapping).
    pub(super) fn alloc_notifier(&self) -> Result<MemRecord> {
        self.build_record(MemKind::Notifier, |rec| {
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
        })
    }

    /// The CPU mapping of a buffer whose GPU address is `va`: at `va` when the process has
    /// nothing there, else elsewhere ([`va::map_cpu`]).
    pub(super) fn mmap_cpu(&self, va: u64, size: u64, fd: RawFd, flags: i32) -> Result<usize> {
        let len = usize::try_from(size)
            .map_err(|_| Error::invalid(format!("size {size:#x} too large")))?;
        Ok(va::map_cpu(self.sys(), va, len, fd, flags)?.addr)
    }

    pub(super) fn bar1_avail_kib(&self) -> u32 {
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
    pub(super) fn free_record(&self, rec: MemRecord) -> Result<()> {
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
            note(self.api.free(rec.parent.unwrap_or(self.device), rec.handle));
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
}
