//! Copies and memsets in stream order (`cuMemcpy*`, `cuMemset*`).
//!
//! From or to pinned host memory (`cuMemHostAlloc`, `cuMemAllocHost`) the stream's queue copies
//! on the GPU, asynchronously for the `Async` forms; pageable host memory goes through
//! libtegragpu's staging buffers (`Queue::write_from_host` stages the bytes at the call,
//! `Queue::read_to_host` returns once they are in host memory). Memsets are `Queue::fill_va`, in
//! stream order. Memory of another device (unified addressing) is reached through peer access
//! where it is enabled, else through the host.

use crate::context::Context;
use crate::error::{guard, invalid, R};
use crate::memory::{check_range, find_host, find_va, Alloc};
use crate::stream::{stream_of, Stream};
use crate::types::*;
use std::ffi::c_void;

// --- The transfer seam ----------------------------------------------------------------------

/// The context whose device holds memory this library allocated (None: memory it did not
/// allocate, such as module globals, which is taken to be the stream's device's).
pub(crate) fn owner(r: &Option<(Alloc, u64)>) -> Option<&'static Context> {
    r.as_ref().map(|(a, _)| a.ctx)
}

/// Whether `s`'s queue reaches the memory of `owner`'s device: its own device's, or a device
/// it has peer access to (`cuCtxEnablePeerAccess`).
pub(crate) fn reaches(s: &Stream, owner: Option<&'static Context>) -> bool {
    match owner {
        None => true,
        Some(c) => std::ptr::eq(c.dev, s.ctx.dev) || s.ctx.core.peer_access_enabled(&c.core),
    }
}

/// The stream that runs a transfer of `owner`'s memory ordered on `s`: `s` when its queue
/// reaches that memory; else the legacy stream of the memory's context, after `s`'s earlier
/// work is complete (the second value: the caller waits for that stream before returning, so
/// `s`'s later work sees the transfer).
pub(crate) fn reaching(
    s: &'static Stream,
    owner: Option<&'static Context>,
) -> R<(&'static Stream, bool)> {
    match owner {
        Some(c) if !reaches(s, Some(c)) => {
            s.synchronize()?;
            Ok((c.legacy_stream()?, true))
        }
        _ => Ok((s, false)),
    }
}

/// Pinned host memory at `p` for `n` bytes whose GPU address the queue of `s` can use (memory
/// of `s`'s device): that address. Pinned memory of this library, and registered host memory
/// mapped for the GPU (at its own address).
pub(crate) fn pinned_va(s: &Stream, p: usize, n: u64) -> Option<u64> {
    if let Some((h, off)) = find_host(p) {
        return (off + n <= h.size && std::ptr::eq(h.ctx.dev, s.ctx.dev))
            .then(|| h.buf.gpu_va() + off);
    }
    let r = crate::hostreg::find_registered(p)?;
    let inside = (p - r.start) as u64 + n <= r.len as u64;
    (r.mapped && inside && std::ptr::eq(r.ctx.dev, s.ctx.dev)).then_some(p as u64)
}

/// Host → device on stream `s`. From pinned host memory the queue copies on the GPU (`sync`:
/// return once the copy is complete); from any other host memory the bytes are staged now and
/// copied in stream order (the call returns once they are staged, as CUDA's does).
pub unsafe fn write_from_host(
    s: &'static Stream,
    dst: u64,
    src: *const u8,
    n: u64,
    sync: bool,
) -> R {
    let d = check_range("dstDevice", dst, n)?;
    write_owned(s, dst, owner(&d), src, n, sync)
}

pub(crate) unsafe fn write_owned(
    s: &'static Stream,
    dst: u64,
    dst_owner: Option<&'static Context>,
    src: *const u8,
    n: u64,
    sync: bool,
) -> R {
    if n == 0 {
        return Ok(());
    }
    if src.is_null() {
        return Err(invalid("srcHost is NULL"));
    }
    if dst == 0 {
        return Err(invalid("dstDevice is NULL"));
    }
    if s.is_capturing() {
        return crate::capture::add(s, || {
            crate::graph::host_copy_kind(dst, src as usize, n, true)
        });
    }
    let (q, detour) = reaching(s, dst_owner)?;
    if let Some(sva) = pinned_va(q, src as usize, n) {
        q.record(|qq| qq.copy_va(dst, sva, n))?;
        return if sync || detour {
            q.synchronize()
        } else {
            Ok(())
        };
    }
    let bytes = std::slice::from_raw_parts(src, n as usize);
    q.record(|qq| qq.write_from_host(dst, bytes))?;
    if detour {
        q.synchronize()?;
    }
    Ok(())
}

/// Device → host on stream `s`: to pinned host memory the queue copies on the GPU (`sync`:
/// return once complete); to any other host memory the call returns once the bytes are there.
pub unsafe fn read_to_host(s: &'static Stream, dst: *mut u8, src: u64, n: u64, sync: bool) -> R {
    let r = check_range("srcDevice", src, n)?;
    read_owned(s, dst, src, owner(&r), n, sync)
}

pub(crate) unsafe fn read_owned(
    s: &'static Stream,
    dst: *mut u8,
    src: u64,
    src_owner: Option<&'static Context>,
    n: u64,
    sync: bool,
) -> R {
    if n == 0 {
        return Ok(());
    }
    if dst.is_null() {
        return Err(invalid("dstHost is NULL"));
    }
    if src == 0 {
        return Err(invalid("srcDevice is NULL"));
    }
    if s.is_capturing() {
        return crate::capture::add(s, || {
            crate::graph::host_copy_kind(src, dst as usize, n, false)
        });
    }
    let (q, detour) = reaching(s, src_owner)?;
    if let Some(dva) = pinned_va(q, dst as usize, n) {
        q.record(|qq| qq.copy_va(dva, src, n))?;
        return if sync || detour {
            q.synchronize()
        } else {
            Ok(())
        };
    }
    // SAFETY: the caller's dstHost is writable for n bytes (the CUDA contract).
    q.record(|qq| qq.read_to_host(dst, src, n))
}

/// Device → device on stream `s` (unified addressing: either side may be memory of another
/// device, found by its address).
pub fn copy_d2d(s: &'static Stream, dst: u64, src: u64, n: u64, sync: bool) -> R {
    copy_d2d_between(s, dst, s.ctx, src, s.ctx, n, sync)
}

/// [`copy_d2d`] where memory this library did not allocate is taken to be `dst_ctx`'s and
/// `src_ctx`'s (`cuMemcpyPeer`).
pub fn copy_d2d_between(
    s: &'static Stream,
    dst: u64,
    dst_ctx: &'static Context,
    src: u64,
    src_ctx: &'static Context,
    n: u64,
    sync: bool,
) -> R {
    if n == 0 {
        return Ok(());
    }
    if dst == 0 || src == 0 {
        return Err(invalid(format!(
            "dstDevice {dst:#x}, srcDevice {src:#x}: NULL"
        )));
    }
    if s.is_capturing() {
        return crate::capture::add(s, || crate::graph::copy_va_kind(dst, src, n));
    }
    let d = owner(&check_range("dstDevice", dst, n)?).unwrap_or(dst_ctx);
    let sr = owner(&check_range("srcDevice", src, n)?).unwrap_or(src_ctx);
    let overlap = dst < src + n && src < dst + n;
    if !overlap && reaches(s, Some(d)) && reaches(s, Some(sr)) {
        s.record(|q| q.copy_va(dst, src, n))?;
        return if sync { s.synchronize() } else { Ok(()) };
    }
    // Overlapping ranges, or memory of a device the stream's queue does not reach: through the
    // host, in the stream's order.
    let mut tmp = vec![0u8; n as usize];
    unsafe {
        read_owned(s, tmp.as_mut_ptr(), src, Some(sr), n, true)?;
        write_owned(s, dst, Some(d), tmp.as_ptr(), n, sync)
    }
}

/// Fill `count` elements of `elem` bytes (1, 2 or 4) at `dst` with `value` on stream `s`, in
/// stream order. `sync` (the forms without `Async`): return once complete when `dst` is pinned
/// host memory, as CUDA's do.
pub fn fill(s: &'static Stream, dst: u64, value: u32, elem: u32, count: u64, sync: bool) -> R {
    let n = count
        .checked_mul(elem as u64)
        .ok_or_else(|| invalid(format!("{count} elements of {elem} bytes overflow")))?;
    if n == 0 {
        return Ok(());
    }
    if dst == 0 {
        return Err(invalid("dstDevice is NULL"));
    }
    if s.is_capturing() {
        let p = CUDA_MEMSET_NODE_PARAMS {
            dst,
            pitch: 0,
            value,
            elementSize: elem,
            width: count as usize,
            height: 1,
        };
        return crate::capture::add(s, || unsafe { crate::graph::memset_kind(&p) });
    }
    if dst % elem as u64 != 0 {
        return Err(invalid(format!(
            "dstDevice {dst:#x} is not aligned to the {elem}-byte elements"
        )));
    }
    let d = check_range("dstDevice", dst, n)?;
    if d.is_none() {
        crate::vmm::check_within_mapping("dstDevice", dst, n)?;
    }
    let host = match &d {
        Some((a, _)) => a.host.is_some(),
        None => crate::vmm::is_host_memory(dst),
    };
    let (q, detour) = reaching(s, owner(&d))?;
    q.record(|qq| qq.fill_va(dst, value, elem, count))?;
    if detour || (sync && host) {
        q.synchronize()?;
    }
    Ok(())
}

/// Wait until the stream's earlier work (with its implicit ordering) is complete.
pub(crate) fn drain(s: &'static Stream) -> R {
    s.record(|_| Ok(()))?;
    s.synchronize()
}

// --- Copy and memset entry points -------------------------------------------------------------

macro_rules! htod {
    ($name:ident, $ptds:expr) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(dst: CUdeviceptr, src: *const c_void, n: usize) -> CUresult {
            guard(stringify!($name), || {
                write_from_host(
                    stream_of(std::ptr::null_mut(), $ptds)?,
                    dst,
                    src as *const u8,
                    n as u64,
                    true,
                )
            })
        }
    };
}
macro_rules! htod_async {
    ($name:ident, $ptds:expr) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            dst: CUdeviceptr,
            src: *const c_void,
            n: usize,
            h: *mut c_void,
        ) -> CUresult {
            guard(stringify!($name), || {
                write_from_host(stream_of(h, $ptds)?, dst, src as *const u8, n as u64, false)
            })
        }
    };
}
macro_rules! dtoh {
    ($name:ident, $ptds:expr) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(dst: *mut c_void, src: CUdeviceptr, n: usize) -> CUresult {
            guard(stringify!($name), || {
                read_to_host(
                    stream_of(std::ptr::null_mut(), $ptds)?,
                    dst as *mut u8,
                    src,
                    n as u64,
                    true,
                )
            })
        }
    };
}
macro_rules! dtoh_async {
    ($name:ident, $ptds:expr) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            dst: *mut c_void,
            src: CUdeviceptr,
            n: usize,
            h: *mut c_void,
        ) -> CUresult {
            guard(stringify!($name), || {
                read_to_host(stream_of(h, $ptds)?, dst as *mut u8, src, n as u64, false)
            })
        }
    };
}
macro_rules! dtod {
    ($name:ident, $ptds:expr) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(dst: CUdeviceptr, src: CUdeviceptr, n: usize) -> CUresult {
            guard(stringify!($name), || {
                copy_d2d(
                    stream_of(std::ptr::null_mut(), $ptds)?,
                    dst,
                    src,
                    n as u64,
                    true,
                )
            })
        }
    };
}
macro_rules! dtod_async {
    ($name:ident, $ptds:expr) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            dst: CUdeviceptr,
            src: CUdeviceptr,
            n: usize,
            h: *mut c_void,
        ) -> CUresult {
            guard(stringify!($name), || {
                copy_d2d(stream_of(h, $ptds)?, dst, src, n as u64, false)
            })
        }
    };
}
macro_rules! memset {
    ($name:ident, $t:ty, $elem:expr, $ptds:expr) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(dst: CUdeviceptr, v: $t, n: usize) -> CUresult {
            guard(stringify!($name), || {
                fill(
                    stream_of(std::ptr::null_mut(), $ptds)?,
                    dst,
                    v as u32,
                    $elem,
                    n as u64,
                    true,
                )
            })
        }
    };
}
macro_rules! memset_async {
    ($name:ident, $t:ty, $elem:expr, $ptds:expr) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            dst: CUdeviceptr,
            v: $t,
            n: usize,
            h: *mut c_void,
        ) -> CUresult {
            guard(stringify!($name), || {
                fill(stream_of(h, $ptds)?, dst, v as u32, $elem, n as u64, false)
            })
        }
    };
}

// The names below are listed for build.rs (it finds implemented exports by `extern "C" fn`).
// extern "C" fn cuMemcpyHtoD_v2 extern "C" fn cuMemcpyHtoD_v2_ptds
// extern "C" fn cuMemcpyHtoDAsync_v2 extern "C" fn cuMemcpyHtoDAsync_v2_ptsz
// extern "C" fn cuMemcpyDtoH_v2 extern "C" fn cuMemcpyDtoH_v2_ptds
// extern "C" fn cuMemcpyDtoHAsync_v2 extern "C" fn cuMemcpyDtoHAsync_v2_ptsz
// extern "C" fn cuMemcpyDtoD_v2 extern "C" fn cuMemcpyDtoD_v2_ptds
// extern "C" fn cuMemcpyDtoDAsync_v2 extern "C" fn cuMemcpyDtoDAsync_v2_ptsz
// extern "C" fn cuMemsetD8_v2 extern "C" fn cuMemsetD8_v2_ptds
// extern "C" fn cuMemsetD16_v2 extern "C" fn cuMemsetD16_v2_ptds
// extern "C" fn cuMemsetD32_v2 extern "C" fn cuMemsetD32_v2_ptds
// extern "C" fn cuMemsetD8Async extern "C" fn cuMemsetD8Async_ptsz
// extern "C" fn cuMemsetD16Async extern "C" fn cuMemsetD16Async_ptsz
// extern "C" fn cuMemsetD32Async extern "C" fn cuMemsetD32Async_ptsz
htod!(cuMemcpyHtoD_v2, false);
htod!(cuMemcpyHtoD_v2_ptds, true);
htod_async!(cuMemcpyHtoDAsync_v2, false);
htod_async!(cuMemcpyHtoDAsync_v2_ptsz, true);
dtoh!(cuMemcpyDtoH_v2, false);
dtoh!(cuMemcpyDtoH_v2_ptds, true);
dtoh_async!(cuMemcpyDtoHAsync_v2, false);
dtoh_async!(cuMemcpyDtoHAsync_v2_ptsz, true);
dtod!(cuMemcpyDtoD_v2, false);
dtod!(cuMemcpyDtoD_v2_ptds, true);
dtod_async!(cuMemcpyDtoDAsync_v2, false);
dtod_async!(cuMemcpyDtoDAsync_v2_ptsz, true);
memset!(cuMemsetD8_v2, u8, 1, false);
memset!(cuMemsetD8_v2_ptds, u8, 1, true);
memset!(cuMemsetD16_v2, u16, 2, false);
memset!(cuMemsetD16_v2_ptds, u16, 2, true);
memset!(cuMemsetD32_v2, u32, 4, false);
memset!(cuMemsetD32_v2_ptds, u32, 4, true);
memset_async!(cuMemsetD8Async, u8, 1, false);
memset_async!(cuMemsetD8Async_ptsz, u8, 1, true);
memset_async!(cuMemsetD16Async, u16, 2, false);
memset_async!(cuMemsetD16Async_ptsz, u16, 2, true);
memset_async!(cuMemsetD32Async, u32, 4, false);
memset_async!(cuMemsetD32Async_ptsz, u32, 4, true);

/// `cuMemcpy` / `cuMemcpyAsync` (unified addressing): the direction from the addresses.
unsafe fn memcpy_any(dst: u64, src: u64, n: u64, s: &'static Stream, sync: bool) -> R {
    let dst_host = find_va(dst).is_none() && find_host(dst as usize).is_some();
    let src_host = find_va(src).is_none() && find_host(src as usize).is_some();
    let dst_dev = find_va(dst).is_some();
    let src_dev = find_va(src).is_some();
    match (dst_dev, src_dev) {
        (true, true) => copy_d2d(s, dst, src, n, sync),
        (true, false) => write_from_host(s, dst, src as *const u8, n, sync),
        (false, true) => read_to_host(s, dst as *mut u8, src, n, sync),
        (false, false) => {
            let _ = (dst_host, src_host);
            drain(s)?;
            std::ptr::copy(src as *const u8, dst as *mut u8, n as usize);
            Ok(())
        }
    }
}

#[no_mangle]
pub unsafe extern "C" fn cuMemcpy(dst: CUdeviceptr, src: CUdeviceptr, n: usize) -> CUresult {
    guard("cuMemcpy", || {
        memcpy_any(
            dst,
            src,
            n as u64,
            stream_of(std::ptr::null_mut(), false)?,
            true,
        )
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuMemcpy_ptds(dst: CUdeviceptr, src: CUdeviceptr, n: usize) -> CUresult {
    guard("cuMemcpy_ptds", || {
        memcpy_any(
            dst,
            src,
            n as u64,
            stream_of(std::ptr::null_mut(), true)?,
            true,
        )
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuMemcpyAsync(
    dst: CUdeviceptr,
    src: CUdeviceptr,
    n: usize,
    h: *mut c_void,
) -> CUresult {
    guard("cuMemcpyAsync", || {
        memcpy_any(dst, src, n as u64, stream_of(h, false)?, false)
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuMemcpyAsync_ptsz(
    dst: CUdeviceptr,
    src: CUdeviceptr,
    n: usize,
    h: *mut c_void,
) -> CUresult {
    guard("cuMemcpyAsync_ptsz", || {
        memcpy_any(dst, src, n as u64, stream_of(h, true)?, false)
    })
}
