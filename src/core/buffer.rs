//! GPU buffers.

use super::device::Device;
use crate::backend::{Allocation, MemFlags};
use crate::error::{Error, Result, Status};
use std::os::fd::RawFd;

/// Largest single allocation accepted (1 TiB); larger requests are rejected before any syscall.
pub const MAX_ALLOC_BYTES: u64 = 1 << 40;

/// GPU memory that the CPU can access through [`Buffer::cpu_ptr`] (on Orin the memory is shared:
/// no copy is needed). Dropping a buffer frees it once queued GPU work no longer needs it.
pub struct Buffer {
    dev: Device,
    alloc: Option<Allocation>,
    size: u64,
}

impl std::fmt::Debug for Buffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Buffer")
            .field("gpu_va", &format_args!("{:#x}", self.gpu_va()))
            .field("size", &self.size)
            .finish()
    }
}

impl Buffer {
    pub(crate) fn new(dev: &Device, size_bytes: u64, flags: MemFlags) -> Result<Buffer> {
        if size_bytes == 0 {
            return Err(Error::invalid("size_bytes is 0"));
        }
        if size_bytes > MAX_ALLOC_BYTES {
            return Err(Error::new(
                Status::OutOfMemory,
                format!("size_bytes {size_bytes} exceeds the largest allocation ({MAX_ALLOC_BYTES} bytes)"),
            ));
        }
        if flags.cpu_cached && flags.write_combined {
            return Err(Error::invalid(
                "flags: CPU_CACHED and WRITE_COMBINED are mutually exclusive",
            ));
        }
        let alloc = dev.backend().alloc(size_bytes, flags)?;
        let host = flags.cpu_cached && !flags.write_combined;
        if let Err(e) = dev.peer_add_buffer(&alloc, host) {
            let _ = dev.backend().free(&alloc);
            return Err(e);
        }
        Ok(Buffer {
            dev: dev.clone(),
            alloc: Some(alloc),
            size: size_bytes,
        })
    }

    /// Memory another driver or process exported as `fd` (the caller keeps `fd`), mapped into
    /// this device: `size` bytes of it, or all of it when `size` is 0 ([`Backend::import_fd`]).
    ///
    /// [`Backend::import_fd`]: crate::backend::Backend::import_fd
    pub(crate) fn import(dev: &Device, fd: RawFd, size: u64) -> Result<Buffer> {
        if fd < 0 {
            return Err(Error::invalid(format!(
                "tg_buf_import_fd: fd {fd} is not a file descriptor"
            )));
        }
        if size > MAX_ALLOC_BYTES {
            return Err(Error::invalid(format!(
                "tg_buf_import_fd: size {size} exceeds the largest buffer ({MAX_ALLOC_BYTES} bytes)"
            )));
        }
        let (alloc, reported) = dev.backend().import_fd(fd, size)?;
        // Peers that cannot map foreign memory leave it unmapped, as host buffers.
        if let Err(e) = dev.peer_add_buffer(&alloc, true) {
            let _ = dev.backend().free(&alloc);
            return Err(e);
        }
        Ok(Buffer {
            dev: dev.clone(),
            alloc: Some(alloc),
            size: reported,
        })
    }

    /// The process's own memory `[ptr, ptr + len)` mapped for the GPU (whole pages around it),
    /// see [`Device::register_host`].
    pub(crate) fn register(dev: &Device, ptr: usize, len: u64) -> Result<Buffer> {
        const PAGE: u64 = 4096;
        let p = ptr as u64;
        let end = p
            .checked_add(len)
            .and_then(|e| e.checked_next_multiple_of(PAGE))
            .filter(|_| p != 0 && len != 0)
            .ok_or_else(|| {
                Error::invalid(format!(
                    "tg_buf_register_host: pointer {ptr:#x} and length {len} are not a range of memory"
                ))
            })?;
        let start = p - p % PAGE;
        let alloc = dev.backend().register_host(start, end - start)?;
        // Peers that cannot map foreign memory leave it unmapped, as host buffers.
        if let Err(e) = dev.peer_add_buffer(&alloc, true) {
            let _ = dev.backend().free(&alloc);
            return Err(e);
        }
        Ok(Buffer {
            dev: dev.clone(),
            size: alloc.size,
            alloc: Some(alloc),
        })
    }

    /// The process's anonymous mapping `[ptr, ptr + len)` handed over (see
    /// [`Device::adopt_host`]).
    pub(crate) fn adopt(dev: &Device, ptr: usize, len: u64) -> Result<Buffer> {
        if ptr == 0 || ptr % 4096 != 0 || len == 0 || len % 4096 != 0 {
            return Err(Error::invalid(format!(
                "adopt_host: [{ptr:#x}, +{len:#x}) is not whole 4 KiB pages"
            )));
        }
        let alloc = dev.backend().adopt_host(ptr as u64, len)?;
        let b = Buffer {
            dev: dev.clone(),
            size: alloc.size,
            alloc: Some(alloc),
        };
        // Peers that cannot map host memory leave it unmapped there (no error for host
        // buffers), so the adoption stands once the driver has taken the pages.
        dev.peer_add_buffer(b.a(), true)?;
        Ok(b)
    }

    fn a(&self) -> &Allocation {
        // Invariant: `alloc` is Some until drop.
        self.alloc
            .as_ref()
            .expect("buffer allocation present until drop")
    }

    /// The backend's identifier of the allocation.
    pub(crate) fn alloc_id(&self) -> u64 {
        self.a().id
    }

    /// GPU virtual address of the first byte.
    pub fn gpu_va(&self) -> u64 {
        self.a().gpu_va
    }

    /// CPU pointer to the first byte (equal to `gpu_va` where the driver allows it). Where the
    /// backend maps CPU views lazily (RM video memory), the first call makes the mapping; null
    /// if that fails ([`Buffer::map_cpu`] reports why).
    pub fn cpu_ptr(&self) -> *mut u8 {
        self.map_cpu().unwrap_or(std::ptr::null_mut())
    }

    /// [`Buffer::cpu_ptr`] with the mapping error, if any.
    pub fn map_cpu(&self) -> Result<*mut u8> {
        let a = self.a();
        if !a.cpu.is_null() {
            return Ok(a.cpu);
        }
        self.dev.backend().map_cpu(a)
    }

    /// Size requested at allocation, bytes.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// The device this buffer belongs to.
    pub fn device(&self) -> &Device {
        &self.dev
    }

    /// Export as a dma-buf fd (owned by the caller; close it).
    pub fn export_dmabuf(&self) -> Result<RawFd> {
        self.dev.backend().export_dmabuf(self.a())
    }

    /// Export `size` bytes from `offset` of the buffer as a dma-buf fd (owned by the caller;
    /// `pcie`: importers map it over PCIe). Desktop GPUs take any 4 KiB-aligned range of the
    /// buffer's memory object ([`Buffer::allocated_size`]); Jetson only the whole buffer.
    /// `call` names the API call in errors.
    pub fn export_dmabuf_range(
        &self,
        call: &str,
        offset: u64,
        size: u64,
        pcie: bool,
    ) -> Result<RawFd> {
        self.dev
            .backend()
            .export_dmabuf_range(call, self.a(), offset, size, pcie)
    }

    /// Export the buffer for another driver (CUDA) or process: a new fd owned by the caller
    /// (nvgpu: a dma-buf; RM: an export fd of `/dev/nvidiactl`) and the size of the memory
    /// object it carries (the buffer's size rounded up to whole pages).
    pub fn export_fd(&self) -> Result<(RawFd, u64)> {
        self.dev.backend().export_fd(self.a())
    }

    /// Size of the memory object behind the buffer (its size rounded up to whole pages, or the
    /// whole of an imported object).
    pub fn allocated_size(&self) -> u64 {
        self.a().size
    }

    /// View the buffer as bytes (the GPU may write concurrently; synchronize first). Empty if
    /// the CPU mapping cannot be made.
    ///
    /// # Safety
    /// No GPU work may write the buffer while the slice is alive.
    pub unsafe fn as_slice(&self) -> &[u8] {
        match self.cpu_ptr() {
            p if p.is_null() => &[],
            p => std::slice::from_raw_parts(p, self.size as usize),
        }
    }

    /// Mutable view of the buffer's bytes.
    ///
    /// # Safety
    /// No GPU work may access the buffer while the slice is alive.
    #[allow(clippy::mut_from_ref)]
    pub unsafe fn as_mut_slice(&self) -> &mut [u8] {
        match self.cpu_ptr() {
            p if p.is_null() => &mut [],
            p => std::slice::from_raw_parts_mut(p, self.size as usize),
        }
    }

    /// Check that `[offset, offset + len)` lies inside the buffer.
    pub(crate) fn check_range(&self, what: &str, offset: u64, len: u64) -> Result<()> {
        match offset.checked_add(len) {
            Some(end) if end <= self.size => Ok(()),
            _ => Err(Error::invalid(format!(
                "{what}: range [offset {offset}, +{len} bytes) is outside the buffer of {} bytes",
                self.size
            ))),
        }
    }
}

impl Drop for Buffer {
    fn drop(&mut self) {
        if let Some(a) = self.alloc.take() {
            self.dev.peer_remove_buffer(&a);
            self.dev.free_when_idle(a);
        }
    }
}
