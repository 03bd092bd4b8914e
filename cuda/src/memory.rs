//! Memory: device allocations (`CUdeviceptr` = GPU virtual address), pinned host memory,
//! registered host memory, address ranges and pointer attributes. The copies and memsets are in
//! transfer.rs.

use crate::context::{current, Context};
use crate::device::out;
use crate::error::{fail, guard, invalid, Fail, R};
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
    /// Pinned host memory (`cuMemHostAlloc`) and managed memory: its host address.
    pub host: Option<usize>,
    pub host_flags: u32,
    /// Managed memory (`cuMemAllocManaged`, managed.rs) and host pool memory (pools.rs): the
    /// host address is the device address; advice and prefetch state.
    pub managed: Option<Arc<crate::managed::Managed>>,
    /// Stream-ordered allocations (`cuMemAllocAsync`, pools.rs): the pool.
    pub pool: Option<&'static crate::pools::Pool>,
    /// Memory of a graph's allocation node: counted in its device's graph memory while any
    /// copy of this record lives.
    pub graph: Option<Arc<crate::graph::GraphBytes>>,
}

impl Alloc {
    /// Pinned host memory of `cuMemHostAlloc` / `cuMemAllocHost` (not managed memory, not a
    /// host pool's).
    pub fn pinned_host(&self) -> bool {
        self.host.is_some() && self.managed.is_none() && self.pool.is_none()
    }
    /// Managed memory (`cuMemAllocManaged`).
    pub fn is_managed(&self) -> bool {
        self.managed.as_ref().is_some_and(|m| m.managed)
    }
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
pub(crate) fn check_range(what: &str, va: u64, n: u64) -> R<Option<(Alloc, u64)>> {
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

pub(crate) fn alloc_device(
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
        managed: None,
        pool: None,
        graph: None,
    };
    insert(a.clone());
    Ok(a)
}

/// Take the allocation that starts at `va` out of the records.
pub(crate) fn remove(va: u64) -> Option<Alloc> {
    let mut m = MAPS.lock();
    let a = m.by_va.remove(&va)?;
    if let Some(h) = a.host {
        m.by_host.remove(&h);
    }
    Some(a)
}

/// Record allocation `a` (by its GPU address, and by its host address where it has one).
pub(crate) fn insert(a: Alloc) {
    let va = a.buf.gpu_va();
    let host_ptr = a.host;
    let mut m = MAPS.lock();
    m.by_va.insert(va, a);
    if let Some(h) = host_ptr {
        m.by_host.insert(h, va);
    }
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
    if !host && crate::ipc::is_pool_import(va) && crate::ipc::free_pool_import(va).is_some() {
        return Ok(());
    }
    if crate::ipc::is_opened(va) {
        return Err(invalid(format!(
            "{va:#x} was opened with cuIpcOpenMemHandle: close it with cuIpcCloseMemHandle"
        )));
    }
    let mut m = MAPS.lock();
    match m.by_va.get(&va) {
        Some(a) if a.graph.is_some() && !host => {
            drop(m);
            if crate::graph::program_frees(va) {
                return Ok(());
            }
            m = MAPS.lock();
        }
        Some(a) if a.pinned_host() == host => {}
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
    let a = m
        .by_va
        .remove(&va)
        .ok_or_else(|| invalid(format!("{va:#x} is not the start of an allocation")))?;
    if let Some(h) = a.host {
        m.by_host.remove(&h);
    }
    drop(m);
    // Its IPC handle, if any, no longer names it.
    crate::ipc::forget(false, va);
    // CUDA's cuMemFree waits for the device: work that still uses the memory has completed
    // when it returns. libtegragpu holds freed memory until queued work is done, so the
    // buffer can be dropped now (a pool's allocation goes back to its pool's accounts).
    crate::pools::free_now(&a);
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
            .filter(|(a, _)| a.pinned_host())
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
        if let Some((a, off)) = find_host(p as usize).filter(|(a, _)| a.pinned_host()) {
            *o = a.buf.gpu_va() + off;
            return Ok(());
        }
        match crate::hostreg::find_registered(p as usize) {
            // Mapped at its own addresses: the host pointer is the device pointer.
            Some(r) if r.mapped => {
                *o = p as u64;
                return Ok(());
            }
            Some(_) => {
                return Err(fail(
                    CUDA_ERROR_NOT_SUPPORTED,
                    crate::hostreg::NO_DEVICE_ADDRESS,
                ))
            }
            None => {}
        }
        Err(invalid(format!(
            "{p:?} is not pinned host memory of this library"
        )))
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuMemHostGetFlags(pflags: *mut u32, p: *mut c_void) -> CUresult {
    guard("cuMemHostGetFlags", || {
        let o = out(pflags, "pFlags")?;
        if let Some((a, _)) = find_host(p as usize) {
            // Managed memory answers CU_MEMHOSTALLOC_DEVICEMAP, as NVIDIA's does.
            *o = a.host_flags | CU_MEMHOSTALLOC_DEVICEMAP;
            return Ok(());
        }
        match crate::hostreg::find_registered(p as usize) {
            Some(r) => {
                *o = r.flags;
                Ok(())
            }
            None => Err(invalid(format!(
                "{p:?} is not pinned or registered host memory of this library"
            ))),
        }
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
        if let Some((base, size)) = crate::vmm::mapping_range(dptr) {
            if let Some(b) = pbase.as_mut() {
                *b = base;
            }
            if let Some(s) = psize.as_mut() {
                *s = size as usize;
            }
            return Ok(());
        }
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

/// `CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD`.
const CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD: i32 = 1;
/// `CU_MEM_RANGE_FLAG_DMA_BUF_MAPPING_TYPE_PCIE`.
const CU_MEM_RANGE_FLAG_DMA_BUF_MAPPING_TYPE_PCIE: u64 = 1;

/// A dma-buf fd for `[dptr, dptr + size)` of one device allocation (desktop GPUs: any range
/// aligned to the host page size; Jetson: whole allocations, `CUDA_ERROR_NOT_SUPPORTED`
/// otherwise).
#[no_mangle]
pub unsafe extern "C" fn cuMemGetHandleForAddressRange(
    handle: *mut c_void,
    dptr: CUdeviceptr,
    size: usize,
    handle_type: i32,
    flags: u64,
) -> CUresult {
    const CALL: &str = "cuMemGetHandleForAddressRange";
    guard(CALL, || {
        current()?;
        if handle.is_null() {
            return Err(invalid("handle is NULL"));
        }
        if handle_type != CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD {
            return Err(invalid(format!(
                "handleType {handle_type} is not CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD (1)"
            )));
        }
        if flags & !CU_MEM_RANGE_FLAG_DMA_BUF_MAPPING_TYPE_PCIE != 0 {
            return Err(invalid(format!("flags {flags:#x} has unknown bits")));
        }
        let (a, off) = find_va(dptr)
            .filter(|(a, _)| a.host.is_none())
            .ok_or_else(|| {
                invalid(format!(
                    "{dptr:#x} is not in a device allocation of this library"
                ))
            })?;
        let page = 4096u64;
        let size = size as u64;
        let end = a.size.div_ceil(page) * page;
        if size == 0 || off % page != 0 || size % page != 0 || off + size > end {
            return Err(invalid(format!(
                "range {dptr:#x} + {size:#x} is empty, not aligned to the host page size (4 KiB) or beyond its allocation ({:#x} bytes from {:#x})",
                a.size,
                dptr - off
            )));
        }
        let fd = a.buf.export_dmabuf_range(
            CALL,
            off,
            size,
            flags & CU_MEM_RANGE_FLAG_DMA_BUF_MAPPING_TYPE_PCIE != 0,
        )?;
        *(handle as *mut i32) = fd;
        Ok(())
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
        None if crate::hostreg::find_registered(ptr as usize).is_some() => {
            return registered_attribute(data, attr, ptr)
        }
        None if let Some(r) = crate::vmm::pointer_attribute(data, attr, ptr) => return r,
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
            *(data as *mut u32) = if a.host.is_some() && !a.is_managed() {
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
        8 => *(data as *mut u32) = a.is_managed() as u32,
        9 => *(data as *mut i32) = a.ctx.dev.ordinal,
        10 => {
            *(data as *mut u32) = (a.host.is_none()
                && a.managed.is_none()
                && a.pool.is_none()
                && !crate::ipc::is_opened(a.buf.gpu_va())) as u32
        }
        11 => *(data as *mut u64) = a.buf.gpu_va(),
        12 => *(data as *mut usize) = a.size as usize,
        13 => *(data as *mut u32) = 1,
        17 => {
            *(data as *mut *mut c_void) = match a.pool {
                Some(p) => p.handle(),
                None => std::ptr::null_mut(),
            }
        }
        _ => {
            return Err(fail(
                CUDA_ERROR_NOT_SUPPORTED,
                format!("pointer attribute {attr} is not supported"),
            ))
        }
    }
    Ok(())
}

/// A pointer attribute of registered host memory (whose device address, where it has one, is
/// its host address).
unsafe fn registered_attribute(data: *mut c_void, attr: i32, ptr: CUdeviceptr) -> R {
    let r = crate::hostreg::find_registered(ptr as usize).expect("registered");
    match attr {
        1 => *(data as *mut *mut c_void) = r.ctx.handle(),
        2 => *(data as *mut u32) = CU_MEMORYTYPE_HOST,
        3 if r.mapped => *(data as *mut u64) = ptr,
        3 => {
            return Err(fail(
                CUDA_ERROR_NOT_SUPPORTED,
                crate::hostreg::NO_DEVICE_ADDRESS,
            ))
        }
        4 => *(data as *mut usize) = ptr as usize,
        6 => *(data as *mut u32) = 1,
        8 | 10 | 13 => *(data as *mut u32) = 0,
        9 => *(data as *mut i32) = r.ctx.dev.ordinal,
        11 => *(data as *mut u64) = r.start as u64,
        12 => *(data as *mut usize) = r.len,
        _ => {
            return Err(fail(
                CUDA_ERROR_NOT_SUPPORTED,
                format!("pointer attribute {attr} of registered host memory is not supported"),
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
