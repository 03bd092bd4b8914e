//! nvmap buffers: CREATE → ALLOC → GET_FD → MAP_BUFFER_EX → CPU mapping, and their release.

use std::os::fd::RawFd;

use super::{ioctl_err, os_err, Device, MAP_FLAGS, NVMAP_TAG, PAGE_SIZE, PROT_RW};
use crate::error::{Error, Result, Status};
use crate::sys::nvgpu::*;
use crate::sys::nvmap::*;

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
    pub(super) fn empty(size: u64) -> Self {
        NvBuf {
            handle: 0,
            fd: -1,
            size,
            cpu: std::ptr::null_mut(),
            gpu_va: None,
        }
    }
}

impl Device {
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
        // nvmap takes the pages here, not at first touch: short of memory, this fails (the
        // handle stays unallocated and is freed by the caller's cleanup).
        self.ioctl(self.nvmap_fd, NVMAP_IOC_ALLOC, &mut a, || {
            format!(
                "NVMAP_IOC_ALLOC(handle={h:#x}, heap_mask={NVMAP_HEAP_IOVMM:#x}, flags={flags:#x}, align={PAGE_SIZE}, numa_nid=-1, size={size:#x})"
            )
        })
        .map_err(|mut e| {
            if e.errno == Some(libc::ENOMEM) {
                e.message.push_str(&self.iovmm_memory_note(size));
            }
            e
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
            b.gpu_va = Some(self.map_dmabuf_gpu(fd, size)?);
        }
        // CPU view.
        let want = match (at_gpu_va, b.gpu_va) {
            (true, Some(va)) => Some(va),
            _ => None,
        };
        b.cpu = self.map_dmabuf_cpu(fd, len, want)?;
        Ok(())
    }

    /// `NVGPU_AS_IOCTL_MAP_BUFFER_EX` of dma-buf `fd` (`size` bytes, for the message): the GPU
    /// address the kernel picked.
    fn map_dmabuf_gpu(&self, fd: RawFd, size: u64) -> Result<u64> {
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
        Ok(m.offset)
    }

    /// A shared read-write CPU view of `len` bytes of dma-buf `fd`: at `want` when given and
    /// free (`MAP_FIXED_NOREPLACE`), else where the kernel puts it.
    fn map_dmabuf_cpu(&self, fd: RawFd, len: usize, want: Option<u64>) -> Result<*mut u8> {
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
                return Ok(p);
            }
        }
        // SAFETY: a fresh mapping at an address of the kernel's choice.
        unsafe {
            self.sys
                .mmap(std::ptr::null_mut(), len, PROT_RW, libc::MAP_SHARED, fd, 0)
        }
        .map_err(|e| {
            os_err(
                format!("mmap(dmabuf_fd={fd}, len={len:#x}, PROT_READ|PROT_WRITE, MAP_SHARED)"),
                e,
            )
        })
    }

    /// Imports dma-buf `fd` (the caller keeps it): `NVMAP_IOC_FROM_FD` for an nvmap buffer (the
    /// handle reference keeps the memory, as for our own buffers; a dma-buf of another
    /// exporter gets none), `MAP_BUFFER_EX` of the whole buffer, and a CPU view at the GPU
    /// address where possible. A dma-buf of another exporter that cannot be `mmap`ed is
    /// imported without a CPU view. On failure everything done is undone.
    pub fn import_buffer(&self, fd: RawFd) -> Result<NvBuf> {
        let size = dmabuf_size(fd)?;
        let len = usize::try_from(size)
            .map_err(|_| Error::invalid(format!("size {size:#x} does not fit usize")))?;
        let mut b = NvBuf::empty(size);
        let res = (|| -> Result<()> {
            let mut f = nvmap_create_handle::from_fd(fd);
            match self.ioctl(self.nvmap_fd, NVMAP_IOC_FROM_FD, &mut f, || {
                format!("NVMAP_IOC_FROM_FD(fd={fd})")
            }) {
                Ok(_) => b.handle = f.handle,
                // Not an nvmap buffer: the GPU and CPU mappings hold it.
                Err(e) if e.errno == Some(libc::EINVAL) => {}
                Err(e) => return Err(e),
            }
            let va = self.map_dmabuf_gpu(fd, size)?;
            b.gpu_va = Some(va);
            match self.map_dmabuf_cpu(fd, len, Some(va)) {
                Ok(p) => b.cpu = p,
                Err(_) if b.handle == 0 => {}
                Err(e) => return Err(e),
            }
            Ok(())
        })();
        match res {
            Ok(()) => Ok(b),
            Err(e) => {
                let _ = self.release_buffer(&mut b);
                Err(e)
            }
        }
    }

    /// An nvmap dma-buf `fd` (the caller keeps it) as physical memory: `NVMAP_IOC_FROM_FD` for
    /// a handle reference and `NVMAP_IOC_GET_FD` for a dma-buf fd of its own for later
    /// `MAP_BUFFER_EX` calls; no GPU or CPU mapping. Another exporter's dma-buf is refused.
    pub fn import_physical(&self, fd: RawFd) -> Result<NvBuf> {
        let size = dmabuf_size(fd)?;
        let mut b = NvBuf::empty(size);
        let mut f = nvmap_create_handle::from_fd(fd);
        self.ioctl(self.nvmap_fd, NVMAP_IOC_FROM_FD, &mut f, || {
            format!("NVMAP_IOC_FROM_FD(fd={fd})")
        })?;
        b.handle = f.handle;
        let h = b.handle;
        let mut g = nvmap_create_handle::get_fd(h);
        if let Err(e) = self.ioctl(self.nvmap_fd, NVMAP_IOC_GET_FD, &mut g, || {
            format!("NVMAP_IOC_GET_FD(handle={h:#x})")
        }) {
            let _ = self.release_buffer(&mut b);
            return Err(e);
        }
        b.fd = g.fd();
        Ok(b)
    }

    /// (free, total) bytes of the IOVMM heap (`NVMAP_IOC_QUERY_HEAP_PARAMS`).
    pub fn iovmm_heap(&self) -> Result<(u64, u64)> {
        let mut q = nvmap_query_heap_params {
            heap_mask: NVMAP_HEAP_IOVMM,
            ..Default::default()
        };
        self.ioctl(self.nvmap_fd, NVMAP_IOC_QUERY_HEAP_PARAMS, &mut q, || {
            "tg_device_memory_info: NVMAP_IOC_QUERY_HEAP_PARAMS(heap_mask=IOVMM)".to_string()
        })?;
        if q.total == 0 {
            return Err(Error::new(
                Status::NotSupported,
                "tg_device_memory_info: NVMAP_IOC_QUERY_HEAP_PARAMS reported an empty IOVMM heap",
            ));
        }
        Ok((q.free.min(q.total), q.total))
    }

    /// What the IOVMM heap has, for an ALLOC that failed with ENOMEM: `; the IOVMM heap has F of
    /// T bytes free (NVMAP_IOC_QUERY_HEAP_PARAMS)`, saying so when `size` exceeds the total.
    fn iovmm_memory_note(&self, size: u64) -> String {
        let mut q = nvmap_query_heap_params {
            heap_mask: NVMAP_HEAP_IOVMM,
            ..Default::default()
        };
        match self.ioctl(self.nvmap_fd, NVMAP_IOC_QUERY_HEAP_PARAMS, &mut q, || {
            "NVMAP_IOC_QUERY_HEAP_PARAMS(heap_mask=IOVMM)".to_string()
        }) {
            Ok(_) if q.total > 0 => {
                let mib = |b: u64| b as f64 / (1u64 << 20) as f64;
                format!(
                    "; {size:#x} bytes ({:.1} MiB) requested, the IOVMM heap has {:#x} bytes ({:.1} MiB) free of {:#x} ({:.1} MiB){} (NVMAP_IOC_QUERY_HEAP_PARAMS)",
                    mib(size),
                    q.free,
                    mib(q.free),
                    q.total,
                    mib(q.total),
                    if size > q.total {
                        ": more than the whole memory"
                    } else {
                        ""
                    },
                )
            }
            Ok(_) => "; free memory unknown (NVMAP_IOC_QUERY_HEAP_PARAMS reported none)".into(),
            Err(e) => format!("; free memory unknown ({})", e.message),
        }
    }

    /// Tears a buffer down: munmap, UNMAP_BUFFER, close the dma-buf fd (if still open),
    /// NVMAP_IOC_FREE. Runs every step that applies even if one fails, and never retries one
    /// (a failed munmap leaves that CPU view mapped, which keeps only this dma-buf alive; a
    /// failed UNMAP_BUFFER is undone by the kernel when the AS fd closes, a failed FREE when the
    /// process's last `/dev/nvmap` fd closes, nvmap clients being per process; the driver's FREE
    /// of an ID always succeeds); returns the first error.
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

/// The size of dma-buf `fd`: `lseek(fd, 0, SEEK_END)`, as the dma-buf file reports it (the
/// offset is put back to 0, the only other position a dma-buf accepts).
fn dmabuf_size(fd: RawFd) -> Result<u64> {
    if fd < 0 {
        return Err(Error::invalid(format!(
            "tg_buf_import_fd: fd {fd} is not a file descriptor"
        )));
    }
    // SAFETY: lseek takes no pointer; a bad fd is EBADF.
    let end = unsafe { libc::lseek(fd, 0, libc::SEEK_END) };
    if end < 0 {
        let e = std::io::Error::last_os_error().raw_os_error().unwrap_or(0);
        return Err(os_err(
            format!("tg_buf_import_fd: lseek(fd={fd}, 0, SEEK_END) to learn the dma-buf's size"),
            e,
        ));
    }
    // SAFETY: as above.
    unsafe { libc::lseek(fd, 0, libc::SEEK_SET) };
    if end == 0 || end as u64 % PAGE_SIZE != 0 {
        return Err(Error::invalid(format!(
            "tg_buf_import_fd: fd {fd} reports {end} bytes, not a dma-buf of whole pages"
        )));
    }
    Ok(end as u64)
}
