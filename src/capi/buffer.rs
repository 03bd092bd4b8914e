//! `tg_buf_*`: GPU memory the CPU can access (allocation flags, addresses, sharing through
//! file descriptors).

use super::boundary::{buffer, device, out_ptr, register, run};
use super::handles::{self, Kind, Object};
use super::{
    tg_buf, tg_device, tg_status, TG_BUF_CPU_CACHED, TG_BUF_DEVICE_LOCAL, TG_BUF_WRITE_COMBINED,
    TG_BUF_ZEROED,
};
use crate::core::MemFlags;
use crate::error::{Error, Result};
use std::ffi::{c_int, c_void};
use std::sync::Arc;

/// Every `TG_BUF_*` bit; other bits are refused.
const TG_BUF_KNOWN_FLAGS: u32 =
    TG_BUF_CPU_CACHED | TG_BUF_WRITE_COMBINED | TG_BUF_ZEROED | TG_BUF_DEVICE_LOCAL;

fn mem_flags(flags: u32) -> Result<MemFlags> {
    let unknown = flags & !TG_BUF_KNOWN_FLAGS;
    if unknown != 0 {
        return Err(Error::invalid(format!(
            "flags {flags:#x} has unknown bits {unknown:#x} (known: TG_BUF_CPU_CACHED=1, TG_BUF_WRITE_COMBINED=2, TG_BUF_ZEROED=4, TG_BUF_DEVICE_LOCAL=8)"
        )));
    }
    let placement = flags & (TG_BUF_CPU_CACHED | TG_BUF_WRITE_COMBINED | TG_BUF_DEVICE_LOCAL);
    if placement.count_ones() > 1 {
        return Err(Error::invalid(format!(
            "flags {flags:#x}: TG_BUF_CPU_CACHED, TG_BUF_WRITE_COMBINED and TG_BUF_DEVICE_LOCAL are mutually exclusive"
        )));
    }
    Ok(MemFlags {
        cpu_cached: flags & (TG_BUF_WRITE_COMBINED | TG_BUF_DEVICE_LOCAL) == 0,
        write_combined: flags & TG_BUF_WRITE_COMBINED != 0,
        zeroed: flags & TG_BUF_ZEROED != 0,
    })
}

/// Allocate GPU memory that the CPU can access.
///
/// - `size_bytes`: at least 1 (rounded up to whole pages internally; `tg_buf_size()` reports the
///   requested size).
/// - `flags`: at most one of `TG_BUF_CPU_CACHED`, `TG_BUF_WRITE_COMBINED`, `TG_BUF_DEVICE_LOCAL`
///   (placement; see each flag), plus `TG_BUF_ZEROED`; 0 = CPU-cached, not zeroed.
/// - `out`: receives the new buffer handle.
///
/// Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_NULL_POINTER`;
/// `TG_ERROR_INVALID_ARGUMENT` (`size_bytes` 0, unknown flag bits, conflicting flags);
/// `TG_ERROR_OUT_OF_MEMORY` (too large or memory exhausted); `TG_ERROR_DEVICE_FAULT`;
/// `TG_ERROR_OS`.
///
/// Ownership: the caller owns `*out` and releases it with `tg_buf_free()`. The buffer keeps its
/// device open. Thread safety: any thread.
///
/// # Safety
/// `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tg_buf_alloc(
    dev: *const tg_device,
    size_bytes: u64,
    flags: u32,
    out: *mut *mut tg_buf,
) -> tg_status {
    run("tg_buf_alloc", || {
        let d = device(dev, "dev")?;
        let out = out_ptr(out, "out")?;
        let flags = mem_flags(flags)?;
        let b = d.alloc(size_bytes, flags)?;
        let h = register(Object::Buf(Arc::new(b)))?;
        out.write(h as *mut tg_buf);
        Ok(())
    })
}

/// Free a buffer. The memory is released once GPU work already submitted no longer uses it;
/// CPU pointers from `tg_buf_cpu_ptr()` must not be used after this call. NULL is a no-op.
///
/// Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE` (destroyed or not a buffer).
/// Thread safety: any thread; the handle must not be used after this call.
///
/// # Safety
/// None beyond the handle contract.
#[no_mangle]
pub unsafe extern "C" fn tg_buf_free(buf: *mut tg_buf) -> tg_status {
    run("tg_buf_free", || {
        handles::remove(buf as usize, Kind::Buf, "buf").map(|_| ())
    })
}

/// The CPU address of the buffer's first byte. Valid until `tg_buf_free()`; the size is
/// `tg_buf_size()`. On Orin the memory is shared with the CPU. On desktop GPUs video memory is
/// mapped for the CPU (through BAR1) on the first call: CPU writes are fast, CPU reads are slow
/// (use `TG_BUF_CPU_CACHED` for buffers the CPU reads back). It often equals
/// `tg_buf_gpu_address()`, but not always (e.g. under AddressSanitizer): give kernels the GPU
/// address.
///
/// Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_NULL_POINTER`; `TG_ERROR_OS` or
/// `TG_ERROR_OUT_OF_MEMORY` when the CPU mapping cannot be made (BAR1 space exhausted);
/// `TG_ERROR_NOT_SUPPORTED` for an import (`tg_buf_import_fd()`) of another buffer's host memory
/// on desktop GPUs, which the driver maps only for GPUs.
/// Thread safety: any thread.
///
/// # Safety
/// `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tg_buf_cpu_ptr(buf: *const tg_buf, out: *mut *mut c_void) -> tg_status {
    run("tg_buf_cpu_ptr", || {
        let b = buffer(buf, "buf")?;
        let out = out_ptr(out, "out")?;
        // Desktop video memory is CPU-mapped (BAR1) on first use; report a failed mapping.
        out.write(b.map_cpu()? as *mut c_void);
        Ok(())
    })
}

/// The GPU virtual address of the buffer's first byte: pass it to kernels as a pointer.
///
/// Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_NULL_POINTER`.
/// Thread safety: any thread.
///
/// # Safety
/// `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tg_buf_gpu_address(buf: *const tg_buf, out: *mut u64) -> tg_status {
    run("tg_buf_gpu_address", || {
        let b = buffer(buf, "buf")?;
        let out = out_ptr(out, "out")?;
        out.write_unaligned(b.gpu_va());
        Ok(())
    })
}

/// The buffer's size in bytes, as requested from `tg_buf_alloc()`.
///
/// Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_NULL_POINTER`.
/// Thread safety: any thread.
///
/// # Safety
/// `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tg_buf_size(buf: *const tg_buf, out: *mut u64) -> tg_status {
    run("tg_buf_size", || {
        let b = buffer(buf, "buf")?;
        let out = out_ptr(out, "out")?;
        out.write_unaligned(b.size());
        Ok(())
    })
}

/// Export the buffer as a dma-buf file descriptor (for sharing with other drivers/processes).
/// On Jetson the dma-buf is nvmap's; on desktop GPUs the NVIDIA driver makes it
/// (`NV_ESC_EXPORT_TO_DMABUF_FD`) over the buffer's whole memory object (`tg_buf_size()`
/// rounded up to whole pages), and refuses memory it does not export that way with the
/// driver's status in the message.
///
/// Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_NULL_POINTER`;
/// `TG_ERROR_NOT_SUPPORTED` (backend without dma-buf export); `TG_ERROR_OS`.
///
/// Ownership: the caller owns `*fd_out` and closes it with `close()`.
/// Thread safety: any thread.
///
/// # Safety
/// `fd_out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tg_buf_export_dmabuf(buf: *const tg_buf, fd_out: *mut c_int) -> tg_status {
    run("tg_buf_export_dmabuf", || {
        let b = buffer(buf, "buf")?;
        let out = out_ptr(fd_out, "fd_out")?;
        let fd = b.export_dmabuf()?;
        out.write_unaligned(fd);
        Ok(())
    })
}

/// Export the buffer for another driver (CUDA) or another process: a new file descriptor
/// that shares the buffer's memory, and the size of the memory object it carries.
///
/// - On Jetson (nvgpu) the fd is a dma-buf, as from `tg_buf_export_dmabuf()`.
/// - On desktop GPUs (RM) the fd is an RM export fd: a `/dev/nvidiactl` file carrying the
///   buffer's memory object, the kind of fd `cuMemExportToShareableHandle()` makes for
///   `CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR`. `tg_buf_import_fd()` of this library, in this
///   or another process, imports it. What CUDA accepts is in docs/api.md, "Sharing memory
///   with CUDA and other processes".
///
/// - `fd_out`: receives the new fd.
/// - `size_out`: receives the size of the shared memory object in bytes: the buffer's size
///   rounded up to whole pages (4 KiB; 2 MiB for desktop buffers of 8 MiB and more). Importers
///   that ask for the object's size (`cuImportExternalMemory()`) want this value.
///
/// The memory stays allocated while the fd, or anything imported from it, exists, even after
/// `tg_buf_free()`.
///
/// Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_NULL_POINTER`;
/// `TG_ERROR_NOT_SUPPORTED` (a backend without export; a buffer imported from another
/// driver's dma-buf); `TG_ERROR_INVALID_ARGUMENT` (a malformed `TEGRAGPU_RM_EXPORT_METADATA`);
/// `TG_ERROR_OS` (the driver refused: the message gives its answer).
///
/// Ownership: the caller owns `*fd_out` and closes it with `close()` (or hands it to an
/// importer that takes ownership, as `cuImportExternalMemory()` does on success).
/// Thread safety: any thread.
///
/// # Safety
/// `fd_out` and `size_out` are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tg_buf_export_fd(
    buf: *const tg_buf,
    fd_out: *mut c_int,
    size_out: *mut u64,
) -> tg_status {
    run("tg_buf_export_fd", || {
        let b = buffer(buf, "buf")?;
        let fd_out = out_ptr(fd_out, "fd_out")?;
        let size_out = out_ptr(size_out, "size_out")?;
        let (fd, size) = b.export_fd()?;
        fd_out.write_unaligned(fd);
        size_out.write_unaligned(size);
        Ok(())
    })
}

/// Import memory that another driver or process exported as a file descriptor, as a buffer of
/// `dev`: mapped at a GPU address of `dev` (`tg_buf_gpu_address()`) and for the CPU where the
/// driver allows it (`tg_buf_cpu_ptr()`).
///
/// - `fd`: on Jetson (nvgpu) a dma-buf (from `tg_buf_export_fd()`, `tg_buf_export_dmabuf()`,
///   nvmap, or another driver whose dma-bufs nvgpu maps); on desktop GPUs (RM) an RM export fd
///   (from `tg_buf_export_fd()`, or `cuMemExportToShareableHandle()` with
///   `CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR`) of memory on this device's GPU.
/// - `size`: the bytes the buffer covers, from the start of the memory (at most its size); 0
///   for the whole memory object. `tg_buf_size()` reports it.
/// - `flags`: 0 (no flags are defined yet).
/// - `out`: receives the new buffer handle.
///
/// The library does not take ownership of `fd`: close it whenever you like after the call
/// (the buffer holds the memory). Desktop video memory is mapped for the CPU through BAR1 on
/// the first `tg_buf_cpu_ptr()`, as for `TG_BUF_DEVICE_LOCAL` buffers.
///
/// Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_NULL_POINTER`;
/// `TG_ERROR_INVALID_ARGUMENT` (`fd` negative or not an fd of the expected kind, memory of
/// another GPU, `size` larger than the memory, unknown `flags`); `TG_ERROR_NOT_SUPPORTED`
/// (a backend or memory kind that cannot be imported); `TG_ERROR_OUT_OF_MEMORY`;
/// `TG_ERROR_OS`.
///
/// Ownership: the caller owns `*out` and releases it with `tg_buf_free()`; the memory itself
/// lives until its last holder (exporter, fds, importers) lets go.
/// Thread safety: any thread.
///
/// # Safety
/// `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tg_buf_import_fd(
    dev: *const tg_device,
    fd: c_int,
    size: u64,
    flags: u32,
    out: *mut *mut tg_buf,
) -> tg_status {
    run("tg_buf_import_fd", || {
        let d = device(dev, "dev")?;
        let out = out_ptr(out, "out")?;
        if flags != 0 {
            return Err(Error::invalid(format!(
                "flags {flags:#x}: no import flags are defined (pass 0)"
            )));
        }
        let b = d.import_fd(fd, size)?;
        let h = register(Object::Buf(Arc::new(b)))?;
        out.write(h as *mut tg_buf);
        Ok(())
    })
}

/// Map `size` bytes of the caller's own memory at `ptr` for the GPU of `dev`, pinning it (like
/// `cuMemHostRegister`): a buffer over the whole 4 KiB pages around the range, mapped at the
/// GPU address equal to its CPU address, so that kernels use pointers into the range as they
/// are (`tg_buf_gpu_address()` and `tg_buf_cpu_ptr()` both give the first page's address).
/// The memory stays the caller's: keep it allocated until `tg_buf_free()`, which unmaps and
/// unpins it (once the GPU work recorded so far is done) without touching its contents.
///
/// - `flags`: 0 (no flags are defined yet).
/// - `out`: receives the new buffer handle.
///
/// Desktop GPUs (RM) only. Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_NULL_POINTER`
/// (`ptr`, `out`); `TG_ERROR_INVALID_ARGUMENT` (`size` 0, a range past the end of the address
/// space, unknown `flags`); `TG_ERROR_NOT_SUPPORTED` (Jetson, where nvmap is not asked to map
/// foreign pages; a range whose addresses the GPU reserves; pages another registration
/// already maps), with the reason; `TG_ERROR_OS`.
///
/// Ownership: the caller owns `*out` and releases it with `tg_buf_free()`.
/// Thread safety: any thread.
///
/// # Safety
/// `ptr..ptr + size` is memory of this process that stays allocated while the buffer lives;
/// `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tg_buf_register_host(
    dev: *const tg_device,
    ptr: *const c_void,
    size: u64,
    flags: u32,
    out: *mut *mut tg_buf,
) -> tg_status {
    run("tg_buf_register_host", || {
        let d = device(dev, "dev")?;
        let out = out_ptr(out, "out")?;
        if ptr.is_null() {
            return Err(Error::new(
                crate::error::Status::NullPointer,
                "tg_buf_register_host: ptr is NULL",
            ));
        }
        if flags != 0 {
            return Err(Error::invalid(format!(
                "tg_buf_register_host: flags {flags:#x}: no flags are defined (pass 0)"
            )));
        }
        if size == 0 {
            return Err(Error::invalid("tg_buf_register_host: size 0"));
        }
        let b = d.register_host(ptr as *const u8, size)?;
        let h = register(Object::Buf(Arc::new(b)))?;
        out.write(h as *mut tg_buf);
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Status;

    #[test]
    fn flags_map_and_reject_unknown_bits() {
        let f = mem_flags(0).expect("0 is valid");
        assert!(f.cpu_cached && !f.write_combined && !f.zeroed);
        let f = mem_flags(TG_BUF_WRITE_COMBINED | TG_BUF_ZEROED).expect("valid");
        assert!(!f.cpu_cached && f.write_combined && f.zeroed);
        let f = mem_flags(TG_BUF_DEVICE_LOCAL).expect("valid");
        assert!(!f.cpu_cached && !f.write_combined && !f.zeroed);
        let e = mem_flags(16).expect_err("bit 4 is unknown");
        assert_eq!(e.status, Status::InvalidArgument);
        assert!(e.message.contains("0x10"), "{}", e.message);
        for both in [
            TG_BUF_DEVICE_LOCAL | TG_BUF_CPU_CACHED,
            TG_BUF_DEVICE_LOCAL | TG_BUF_WRITE_COMBINED,
        ] {
            assert_eq!(
                mem_flags(both).expect_err("exclusive").status,
                Status::InvalidArgument
            );
        }
        assert_eq!(
            mem_flags(3).expect_err("exclusive").status,
            Status::InvalidArgument
        );
    }
}
