//! Memory: device allocations (`CUdeviceptr` = GPU virtual address), pinned host memory, copies
//! and memsets.
//!
//! Copies between the host and the device: from or to pinned host memory (`cuMemHostAlloc`,
//! `cuMemAllocHost`) the stream's queue copies on the GPU, asynchronously for the `Async` forms;
//! pageable host memory is copied once the stream's earlier work is complete: through the CPU
//! mapping of the buffer where the device shares memory with the CPU (Jetson, the emulated Orin),
//! else through a pinned staging buffer and a GPU copy (desktop GPUs: video memory).

use crate::context::{current, Context};
use crate::device::out;
use crate::error::{fail, guard, invalid, Fail, R};
use crate::stream::{stream_of, Stream};
use crate::types::*;
use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::ffi::c_void;
use std::sync::Arc;
use tegragpu::core::{BackendKind, Buffer, MemFlags};

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

unsafe fn mem_info(free: *mut usize, total: *mut usize) -> R {
    let d = crate::context::current_device()?;
    let t = d.info().memory_bytes as usize;
    let used: u64 = MAPS.lock().by_va.values().map(|a| a.size).sum();
    if let Some(f) = free.as_mut() {
        *f = t.saturating_sub(used as usize);
    }
    if let Some(x) = total.as_mut() {
        *x = t;
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

/// Bytes of the staging buffer pageable copies go through on devices whose memory the CPU does
/// not share.
const STAGE_BYTES: u64 = 8 << 20;

static STAGES: Mutex<Vec<(usize, Arc<Buffer>)>> = Mutex::new(Vec::new());

fn stage(ctx: &'static Context) -> R<Arc<Buffer>> {
    let key = ctx as *const Context as usize;
    let mut g = STAGES.lock();
    if let Some((_, b)) = g.iter().find(|(k, _)| *k == key) {
        return Ok(b.clone());
    }
    let b = Arc::new(ctx.core.alloc(
        STAGE_BYTES,
        MemFlags {
            cpu_cached: true,
            ..Default::default()
        },
    )?);
    g.push((key, b.clone()));
    Ok(b)
}

/// Whether the CPU mapping of device memory is the fast way (memory shared with the CPU).
fn shared_memory(ctx: &Context) -> bool {
    ctx.core.info().backend == BackendKind::Nvgpu
}

/// Wait until the stream's earlier work (with its implicit ordering) is complete.
fn drain(s: &'static Stream) -> R {
    s.record(|_| Ok(()))?;
    s.synchronize()
}

/// Host → device on stream `s`. `sync`: return once the copy is complete.
pub unsafe fn write_from_host(
    s: &'static Stream,
    dst: u64,
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
    let d = check_range("dstDevice", dst, n)?;
    if let Some((h, off)) = find_host(src as usize) {
        if off + n <= h.size {
            let sva = h.buf.gpu_va() + off;
            s.record(|q| q.copy_va(dst, sva, n))?;
            return if sync { s.synchronize() } else { Ok(()) };
        }
    }
    drain(s)?;
    if let (true, Some((a, off))) = (shared_memory(s.ctx), &d) {
        let p = a.buf.map_cpu()?;
        std::ptr::copy_nonoverlapping(src, p.add(*off as usize), n as usize);
        std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
        return Ok(());
    }
    let st = stage(s.ctx)?;
    let sp = st.map_cpu()?;
    let mut done = 0;
    while done < n {
        let k = (n - done).min(STAGE_BYTES);
        std::ptr::copy_nonoverlapping(src.add(done as usize), sp, k as usize);
        std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
        let sva = st.gpu_va();
        s.record(|q| q.copy_va(dst + done, sva, k))?;
        s.synchronize()?;
        done += k;
    }
    Ok(())
}

/// Device → host on stream `s`.
pub unsafe fn read_to_host(s: &'static Stream, dst: *mut u8, src: u64, n: u64, sync: bool) -> R {
    if n == 0 {
        return Ok(());
    }
    if dst.is_null() {
        return Err(invalid("dstHost is NULL"));
    }
    let d = check_range("srcDevice", src, n)?;
    if let Some((h, off)) = find_host(dst as usize) {
        if off + n <= h.size {
            let dva = h.buf.gpu_va() + off;
            s.record(|q| q.copy_va(dva, src, n))?;
            return if sync { s.synchronize() } else { Ok(()) };
        }
    }
    drain(s)?;
    if let (true, Some((a, off))) = (shared_memory(s.ctx), &d) {
        let p = a.buf.map_cpu()?;
        std::ptr::copy_nonoverlapping(p.add(*off as usize), dst, n as usize);
        return Ok(());
    }
    let st = stage(s.ctx)?;
    let sp = st.map_cpu()?;
    let mut done = 0;
    while done < n {
        let k = (n - done).min(STAGE_BYTES);
        let sva = st.gpu_va();
        s.record(|q| q.copy_va(sva, src + done, k))?;
        s.synchronize()?;
        std::ptr::copy_nonoverlapping(sp, dst.add(done as usize), k as usize);
        done += k;
    }
    Ok(())
}

/// Device → device on stream `s`.
pub fn copy_d2d(s: &'static Stream, dst: u64, src: u64, n: u64, sync: bool) -> R {
    if n == 0 {
        return Ok(());
    }
    check_range("dstDevice", dst, n)?;
    check_range("srcDevice", src, n)?;
    if dst < src + n && src < dst + n {
        // Overlapping ranges: through the staging buffer.
        let mut tmp = vec![0u8; n as usize];
        unsafe {
            read_to_host(s, tmp.as_mut_ptr(), src, n, true)?;
            write_from_host(s, dst, tmp.as_ptr(), n, true)?;
        }
        return Ok(());
    }
    s.record(|q| q.copy_va(dst, src, n))?;
    if sync {
        s.synchronize()?;
    }
    Ok(())
}

/// Fill `count` elements of `elem` bytes (1, 2 or 4) at `dst` with `value` on stream `s`.
pub fn fill(s: &'static Stream, dst: u64, value: u32, elem: u32, count: u64) -> R {
    let n = count * elem as u64;
    if n == 0 {
        return Ok(());
    }
    if dst % elem as u64 != 0 {
        return Err(invalid(format!(
            "dstDevice {dst:#x} is not aligned to the {elem}-byte elements"
        )));
    }
    let d = check_range("dstDevice", dst, n)?;
    let pattern: [u8; 4] = value.to_le_bytes();
    let fill_bytes = |p: *mut u8, len: u64| unsafe {
        match elem {
            1 => std::ptr::write_bytes(p, pattern[0], len as usize),
            2 => {
                let v = value as u16;
                for i in 0..(len / 2) as usize {
                    (p as *mut u16).add(i).write_unaligned(v);
                }
            }
            _ => {
                for i in 0..(len / 4) as usize {
                    (p as *mut u32).add(i).write_unaligned(value);
                }
            }
        }
    };
    drain(s)?;
    if let (true, Some((a, off))) = (shared_memory(s.ctx), &d) {
        let p = a.buf.map_cpu()?;
        fill_bytes(unsafe { p.add(*off as usize) }, n);
        std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
        return Ok(());
    }
    let st = stage(s.ctx)?;
    let sp = st.map_cpu()?;
    let chunk = STAGE_BYTES.min(n);
    fill_bytes(sp, chunk);
    std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
    let mut done = 0;
    while done < n {
        let k = (n - done).min(chunk);
        let sva = st.gpu_va();
        s.record(|q| q.copy_va(dst + done, sva, k))?;
        done += k;
    }
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
                fill(stream_of(h, $ptds)?, dst, v as u32, $elem, n as u64)
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
