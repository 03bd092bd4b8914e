//! Memory: device allocations (`CUdeviceptr` = GPU virtual address), pinned host memory, copies
//! and memsets.
//!
//! Copies between the host and the device, in stream order: from or to pinned host memory
//! (`cuMemHostAlloc`, `cuMemAllocHost`) the stream's queue copies on the GPU, asynchronously for
//! the `Async` forms; pageable host memory goes through libtegragpu's staging buffers
//! (`Queue::write_from_host` stages the bytes at the call, `Queue::read_to_host` returns once
//! they are in host memory). Memsets are `Queue::fill_va`, in stream order. Memory of another
//! device (unified addressing) is reached through peer access where it is enabled, else through
//! the host.

use crate::context::{current, Context};
use crate::device::out;
use crate::error::{fail, guard, invalid, Fail, R};
use crate::stream::{stream_of, Stream};
use crate::types::*;
use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::ffi::c_void;
use std::sync::Arc;
use tegragpu::core::{Buffer, MemFlags};

/// One allocation of this library.
#[derive(Clone)]
pub struct Alloc {
    pub buf: Arc<Buffer>,
    pub size: u64,
    pub ctx: &'static Context,
    /// Pinned host memory (`cuMemHostAlloc`): its host address.
    pub host: Option<usize>,
    pub host_flags: u32,
}

#[derive(Default)]
struct Maps {
    /// By GPU virtual address: every allocation.
    by_va: BTreeMap<u64, Alloc>,
    /// By host address: pinned host memory.
    by_host: BTreeMap<usize, u64>,
}

static MAPS: Mutex<Maps> = Mutex::new(Maps {
    by_va: BTreeMap::new(),
    by_host: BTreeMap::new(),
});

/// The allocation holding GPU address `va` and the offset of `va` in it.
pub fn find_va(va: u64) -> Option<(Alloc, u64)> {
    let m = MAPS.lock();
    let (base, a) = m.by_va.range(..=va).next_back()?;
    (va - base < a.size).then(|| (a.clone(), va - base))
}

/// The pinned host allocation holding host address `p` and the offset of `p` in it.
pub fn find_host(p: usize) -> Option<(Alloc, u64)> {
    let m = MAPS.lock();
    let (base, va) = m.by_host.range(..=p).next_back()?;
    let a = m.by_va.get(va)?;
    ((p - base) as u64 <= a.size.saturating_sub(1)).then(|| (a.clone(), (p - base) as u64))
}

/// Check `[va, va + n)` lies inside one allocation, when `va` is one of ours; other addresses
/// (module globals, memory of other libraries) are the caller's business.
fn check_range(what: &str, va: u64, n: u64) -> R<Option<(Alloc, u64)>> {
    match find_va(va) {
        Some((a, off)) => {
            if off + n > a.size {
                return Err(invalid(format!(
                    "{what}: [{va:#x}, +{n}) runs past the end of its allocation ({} bytes at {:#x})",
                    a.size,
                    va - off
                )));
            }
            Ok(Some((a, off)))
        }
        None => Ok(None),
    }
}

fn alloc_device(
    ctx: &'static Context,
    size: u64,
    flags: MemFlags,
    host: bool,
    host_flags: u32,
) -> R<Alloc> {
    if size == 0 {
        return Err(invalid("bytesize is 0"));
    }
    let buf = Arc::new(ctx.core.alloc(size, flags)?);
    let va = buf.gpu_va();
    let host_ptr = if host {
        let p = buf.map_cpu()?;
        if p.is_null() {
            return Err(fail(
                CUDA_ERROR_OUT_OF_MEMORY,
                "pinned host memory has no CPU mapping",
            ));
        }
        Some(p as usize)
    } else {
        None
    };
    let a = Alloc {
        buf,
        size,
        ctx,
        host: host_ptr,
        host_flags,
    };
    let mut m = MAPS.lock();
    m.by_va.insert(va, a.clone());
    if let Some(h) = host_ptr {
        m.by_host.insert(h, va);
    }
    Ok(a)
}

#[no_mangle]
pub unsafe extern "C" fn cuMemAlloc_v2(dptr: *mut CUdeviceptr, bytesize: usize) -> CUresult {
    guard("cuMemAlloc_v2", || {
        let p = out(dptr, "dptr")?;
        let a = alloc_device(current()?, bytesize as u64, MemFlags::default(), false, 0)?;
        *p = a.buf.gpu_va();
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuMemAllocPitch_v2(
    dptr: *mut CUdeviceptr,
    pitch: *mut usize,
    width: usize,
    height: usize,
    elem: u32,
) -> CUresult {
    guard("cuMemAllocPitch_v2", || {
        let (p, pp) = (out(dptr, "dptr")?, out(pitch, "pPitch")?);
        if !matches!(elem, 4 | 8 | 16) || width == 0 || height == 0 {
            return Err(invalid(format!(
                "width {width}, height {height}, element size {elem}"
            )));
        }
        let pitch_bytes = width.div_ceil(512) * 512;
        let a = alloc_device(
            current()?,
            (pitch_bytes * height) as u64,
            MemFlags::default(),
            false,
            0,
        )?;
        *p = a.buf.gpu_va();
        *pp = pitch_bytes;
        Ok(())
    })
}

fn free_va(va: u64, host: bool) -> R {
    let mut m = MAPS.lock();
    match m.by_va.get(&va) {
        Some(a) if a.host.is_some() == host => {}
        Some(_) => {
            return Err(invalid(format!(
                "{va:#x} is {} memory; free it with {}",
                if host { "device" } else { "pinned host" },
                if host { "cuMemFree" } else { "cuMemFreeHost" }
            )))
        }
        None => {
            return Err(invalid(format!(
                "{va:#x} is not the start of an allocation"
            )))
        }
    }
    let a = m.by_va.remove(&va).expect("present");
    if let Some(h) = a.host {
        m.by_host.remove(&h);
    }
    drop(m);
    // CUDA's cuMemFree waits for the device: work that still uses the memory has completed
    // when it returns. libtegragpu holds freed memory until queued work is done, so the
    // buffer can be dropped now.
    drop(a);
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn cuMemFree_v2(dptr: CUdeviceptr) -> CUresult {
    guard("cuMemFree_v2", || {
        current()?;
        if dptr == 0 {
            return Ok(());
        }
        free_va(dptr, false)
    })
}

/// `cuMemGetInfo`: the free and total bytes of the memory allocations come from, as the driver
/// reports them now (libtegragpu's `Device::memory_info`).
unsafe fn mem_info(free: *mut usize, total: *mut usize) -> R {
    let d = crate::context::current_device()?;
    let (f, t) = d.memory_info()?;
    if let Some(x) = free.as_mut() {
        *x = f as usize;
    }
    if let Some(x) = total.as_mut() {
        *x = t as usize;
    }
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn cuMemGetInfo_v2(free: *mut usize, total: *mut usize) -> CUresult {
    guard("cuMemGetInfo_v2", || mem_info(free, total))
}

unsafe fn host_alloc(pp: *mut *mut c_void, size: usize, flags: u32) -> R {
    let p = out(pp, "pp")?;
    if flags
        & !(CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_WRITECOMBINED)
        != 0
    {
        return Err(invalid(format!("flags {flags:#x}")));
    }
    let mf = MemFlags {
        cpu_cached: flags & CU_MEMHOSTALLOC_WRITECOMBINED == 0,
        write_combined: flags & CU_MEMHOSTALLOC_WRITECOMBINED != 0,
        zeroed: false,
    };
    let a = alloc_device(current()?, size as u64, mf, true, flags)?;
    *p = a.host.unwrap_or(0) as *mut c_void;
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn cuMemHostAlloc(pp: *mut *mut c_void, size: usize, flags: u32) -> CUresult {
    guard("cuMemHostAlloc", || host_alloc(pp, size, flags))
}

#[no_mangle]
pub unsafe extern "C" fn cuMemAllocHost_v2(pp: *mut *mut c_void, size: usize) -> CUresult {
    guard("cuMemAllocHost_v2", || host_alloc(pp, size, 0))
}

/// The CUDA 2.x form: a 32-bit size.
#[no_mangle]
pub unsafe extern "C" fn cuMemAllocHost(pp: *mut *mut c_void, size: u32) -> CUresult {
    guard("cuMemAllocHost", || host_alloc(pp, size as usize, 0))
}

#[no_mangle]
pub unsafe extern "C" fn cuMemFreeHost(p: *mut c_void) -> CUresult {
    guard("cuMemFreeHost", || {
        current()?;
        let (a, off) = find_host(p as usize)
            .ok_or_else(|| invalid(format!("{p:?} is not pinned host memory of this library")))?;
        if off != 0 {
            return Err(invalid(format!(
                "{p:?} is not the start of a host allocation"
            )));
        }
        free_va(a.buf.gpu_va(), true)
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuMemHostGetDevicePointer_v2(
    pdptr: *mut CUdeviceptr,
    p: *mut c_void,
    flags: u32,
) -> CUresult {
    guard("cuMemHostGetDevicePointer_v2", || {
        let o = out(pdptr, "pdptr")?;
        if flags != 0 {
            return Err(invalid(format!("flags {flags:#x}: must be 0")));
        }
        let (a, off) = find_host(p as usize)
            .ok_or_else(|| invalid(format!("{p:?} is not pinned host memory of this library")))?;
        *o = a.buf.gpu_va() + off;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuMemHostGetFlags(pflags: *mut u32, p: *mut c_void) -> CUresult {
    guard("cuMemHostGetFlags", || {
        let o = out(pflags, "pFlags")?;
        let (a, _) = find_host(p as usize)
            .ok_or_else(|| invalid(format!("{p:?} is not pinned host memory of this library")))?;
        *o = a.host_flags | CU_MEMHOSTALLOC_DEVICEMAP;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuMemGetAddressRange_v2(
    pbase: *mut CUdeviceptr,
    psize: *mut usize,
    dptr: CUdeviceptr,
) -> CUresult {
    guard("cuMemGetAddressRange_v2", || {
        current()?;
        let (a, off) = find_va(dptr).ok_or_else(|| {
            fail(
                CUDA_ERROR_NOT_FOUND,
                format!("{dptr:#x} is not in an allocation"),
            )
        })?;
        if let Some(b) = pbase.as_mut() {
            *b = dptr - off;
        }
        if let Some(s) = psize.as_mut() {
            *s = a.size as usize;
        }
        Ok(())
    })
}

// --- The transfer seam ----------------------------------------------------------------------

/// The context whose device holds memory this library allocated (None: memory it did not
/// allocate, such as module globals, which is taken to be the stream's device's).
fn owner(r: &Option<(Alloc, u64)>) -> Option<&'static Context> {
    r.as_ref().map(|(a, _)| a.ctx)
}

/// Whether `s`'s queue reaches the memory of `owner`'s device: its own device's, or a device
/// it has peer access to (`cuCtxEnablePeerAccess`).
fn reaches(s: &Stream, owner: Option<&'static Context>) -> bool {
    match owner {
        None => true,
        Some(c) => std::ptr::eq(c.dev, s.ctx.dev) || s.ctx.core.peer_access_enabled(&c.core),
    }
}

/// The stream that runs a transfer of `owner`'s memory ordered on `s`: `s` when its queue
/// reaches that memory; else the legacy stream of the memory's context, after `s`'s earlier
/// work is complete (the second value: the caller waits for that stream before returning, so
/// `s`'s later work sees the transfer).
fn reaching(s: &'static Stream, owner: Option<&'static Context>) -> R<(&'static Stream, bool)> {
    match owner {
        Some(c) if !reaches(s, Some(c)) => {
            s.synchronize()?;
            Ok((c.legacy_stream()?, true))
        }
        _ => Ok((s, false)),
    }
}

/// Pinned host memory of this library at `p` for `n` bytes, whose GPU address the queue of `s`
/// can use (memory of `s`'s device): that address.
fn pinned_va(s: &Stream, p: usize, n: u64) -> Option<u64> {
    let (h, off) = find_host(p)?;
    (off + n <= h.size && std::ptr::eq(h.ctx.dev, s.ctx.dev)).then(|| h.buf.gpu_va() + off)
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

unsafe fn write_owned(
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

unsafe fn read_owned(
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
    if dst % elem as u64 != 0 {
        return Err(invalid(format!(
            "dstDevice {dst:#x} is not aligned to the {elem}-byte elements"
        )));
    }
    let d = check_range("dstDevice", dst, n)?;
    let host = d.as_ref().is_some_and(|(a, _)| a.host.is_some());
    let (q, detour) = reaching(s, owner(&d))?;
    q.record(|qq| qq.fill_va(dst, value, elem, count))?;
    if detour || (sync && host) {
        q.synchronize()?;
    }
    Ok(())
}

/// Wait until the stream's earlier work (with its implicit ordering) is complete.
fn drain(s: &'static Stream) -> R {
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

#[allow(dead_code)]
fn _unused(_: Fail) {}

unsafe fn pointer_attribute(data: *mut c_void, attr: i32, ptr: CUdeviceptr) -> R {
    if data.is_null() {
        return Err(invalid("data is NULL"));
    }
    crate::device::check_init()?;
    let (a, off) = match find_va(ptr).or_else(|| find_host(ptr as usize)) {
        Some(x) => x,
        None => {
            return Err(invalid(format!(
                "{ptr:#x} is not memory allocated or registered by this library"
            )))
        }
    };
    let va = a.buf.gpu_va() + off;
    match attr {
        1 => *(data as *mut *mut c_void) = a.ctx.handle(),
        2 => {
            *(data as *mut u32) = if a.host.is_some() {
                CU_MEMORYTYPE_HOST
            } else {
                CU_MEMORYTYPE_DEVICE
            }
        }
        3 => *(data as *mut u64) = va,
        4 => {
            *(data as *mut usize) = match a.host {
                Some(h) => h + off as usize,
                None => {
                    return Err(invalid(format!(
                        "{ptr:#x} is device memory: it has no host address"
                    )))
                }
            }
        }
        6 => *(data as *mut u32) = 1,
        7 => *(data as *mut u64) = a.buf.gpu_va(),
        8 => *(data as *mut u32) = 0,
        9 => *(data as *mut i32) = a.ctx.dev.ordinal,
        10 => *(data as *mut u32) = 0,
        11 => *(data as *mut u64) = a.buf.gpu_va(),
        12 => *(data as *mut usize) = a.size as usize,
        13 => *(data as *mut u32) = 1,
        _ => {
            return Err(fail(
                CUDA_ERROR_NOT_SUPPORTED,
                format!("pointer attribute {attr} is not supported"),
            ))
        }
    }
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn cuPointerGetAttribute(
    data: *mut c_void,
    attr: i32,
    ptr: CUdeviceptr,
) -> CUresult {
    guard("cuPointerGetAttribute", || {
        pointer_attribute(data, attr, ptr)
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuPointerGetAttributes(
    n: u32,
    attrs: *const i32,
    data: *mut *mut c_void,
    ptr: CUdeviceptr,
) -> CUresult {
    guard("cuPointerGetAttributes", || {
        if n > 0 && (attrs.is_null() || data.is_null()) {
            return Err(invalid("attributes or data is NULL"));
        }
        for i in 0..n as usize {
            pointer_attribute(*data.add(i), *attrs.add(i), ptr)?;
        }
        Ok(())
    })
}
