//! `tg_buf_*`: GPU memory the CPU can access (allocation flags, addresses, dma-buf export).

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
/// `TG_ERROR_OUT_OF_MEMORY` when the CPU mapping cannot be made (BAR1 space exhausted).
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
