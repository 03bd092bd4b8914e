//! Memory pools and stream-ordered allocation (`cuMemAllocAsync`, `cuMemFreeAsync`,
//! `cuMemPool*`, `cuDeviceGetDefaultMemPool` / `GetMemPool` / `SetMemPool` and the CUDA 13
//! `cuMemGetDefaultMemPool` / `GetMemPool` / `SetMemPool`).
//!
//! A pool hands out device memory (one libtegragpu buffer per allocation) and keeps what is
//! freed for later allocations:
//! - `cuMemFreeAsync` takes the allocation away at once (later use of the address is refused)
//!   and keeps its buffer with the point of the freeing stream's work it follows.
//! - An allocation on that same stream may take it back at once (stream order covers the
//!   earlier work); an allocation on another stream takes it once that point is reached.
//!   Otherwise a new buffer is allocated.
//! - What is kept beyond the pool's release threshold (`CU_MEMPOOL_ATTR_RELEASE_THRESHOLD`,
//!   0 by default) is freed at the next synchronization of a stream, a context or an event,
//!   and by `cuMemPoolTrimTo`. Freed buffers are released by libtegragpu once the device's
//!   queued work no longer needs them.
//!
//! Device pools, and host pools (`cuMemPoolCreate` with `CU_MEM_LOCATION_TYPE_HOST`, `_HOST_NUMA`
//! bound to that node with `mbind`, `_HOST_NUMA_CURRENT`): their allocations are memory the CPU
//! and the GPU reach at the same address, made as managed memory is (managed.rs) on the device
//! of the allocating stream; devices are given access with `cuMemPoolSetAccess` (read-write).
//! The host has a default pool of its own (`cuMemGetDefaultMemPool` with
//! `CU_MEM_LOCATION_TYPE_HOST`). The managed allocation type is refused with
//! `CUDA_ERROR_NOT_SUPPORTED`.
//!
//! Device pools made with `CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR` share with other
//! processes (ipc.rs): `cuMemPoolExportToShareableHandle` gives a memfd naming the pool,
//! `cuMemPoolImportFromShareableHandle` makes a pool of it in the other process, and each
//! allocation is exported (`cuMemPoolExportPointer`, once the pool was: its libtegragpu export
//! fd, served as `cuIpcGetMemHandle` serves memory) and imported (`cuMemPoolImportPointer`, in
//! this process too) on its own; an imported pool with imports still mapped is not destroyed.
//! `CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES` reads 1 (POSIX file descriptors).

use crate::context::Context;
use crate::device::{dev, out};
use crate::error::{fail, guard, invalid, R};
use crate::managed::CUmemLocation;
use crate::memory::{find_va, Alloc};
use crate::stream::{stream_of, Stream};
use crate::types::*;
use parking_lot::Mutex;
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use tegragpu::core::{Buffer, MemFlags, QueuePoint};

const CU_MEM_ALLOCATION_TYPE_PINNED: i32 = 1;
const CU_MEM_ALLOCATION_TYPE_MANAGED: i32 = 2;
const CU_MEM_LOCATION_TYPE_DEVICE: i32 = 1;
const CU_MEM_LOCATION_TYPE_HOST: i32 = 2;
const CU_MEM_LOCATION_TYPE_HOST_NUMA: i32 = 3;
const CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT: i32 = 4;
const CU_MEM_ACCESS_FLAGS_PROT_NONE: i32 = 0;
const CU_MEM_ACCESS_FLAGS_PROT_READWRITE: i32 = 3;
/// Granularity of the pools' buffers.
const GRAIN: u64 = 4096;
/// A pool's `maxSize` counts in steps of this many bytes: NVIDIA's libcuda reserves pool memory
/// in 32 MiB pieces on an H100 and lets a pool of `maxSize` 4 MiB hold 14 MiB of allocations.
const MAX_SIZE_STEP: u64 = 32 << 20;

/// `CUmemPoolProps` (CUDA 12.2 and later: 88 bytes).
#[repr(C)]
pub struct CUmemPoolProps {
    pub alloc_type: i32,
    pub handle_types: i32,
    pub location: CUmemLocation,
    pub win32_security_attributes: *mut c_void,
    pub max_size: usize,
    pub usage: u16,
    pub reserved: [u8; 54],
}

/// `CUmemAccessDesc`.
#[repr(C)]
pub struct CUmemAccessDesc {
    pub location: CUmemLocation,
    pub flags: i32,
}

/// A freed buffer kept for reuse.
struct Kept {
    buf: Arc<Buffer>,
    /// Host pools: the pages behind the buffer and their address.
    pages: Option<Arc<crate::managed::Managed>>,
    host: Option<usize>,
    /// The stream that freed it (by address) and the point of its work the free follows.
    stream: usize,
    after: QueuePoint,
}

#[derive(Default)]
struct PoolState {
    kept: Vec<Kept>,
    /// Bytes of the live allocations' buffers, and the most there were.
    used: u64,
    used_high: u64,
    /// Bytes of live and kept buffers, and the most there were.
    reserved: u64,
    reserved_high: u64,
    release_threshold: u64,
    follow_event_dependencies: bool,
    allow_opportunistic: bool,
    allow_internal_dependencies: bool,
    destroyed: bool,
}

impl PoolState {
    /// Free every kept buffer (their interprocess exports go with them).
    fn free_kept(&mut self) {
        for k in self.kept.drain(..) {
            crate::ipc::forget_pool_pointer(k.buf.gpu_va());
            self.reserved -= k.buf.size();
        }
    }
}

pub struct Pool {
    /// The device of a device pool; -1 for a host pool.
    pub ordinal: i32,
    /// Host pools: the host NUMA node the memory comes from (`None`: any).
    numa: Option<i32>,
    /// Host pools: the devices given access (`cuMemPoolSetAccess`), a bit each.
    access: std::sync::atomic::AtomicU64,
    /// `CUmemPoolProps::maxSize` rounded up to [`MAX_SIZE_STEP`] (0: no limit).
    max_size: u64,
    /// Made with `CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR`: exported and imported by
    /// interprocess handles.
    shareable: bool,
    /// A pool imported from another process (`cuMemPoolImportFromShareableHandle`): its
    /// allocations are imported (`cuMemPoolImportPointer`), not made.
    remote: Option<crate::ipc::RemotePool>,
    /// A number naming the pool in its shareable handles.
    uid: u64,
    /// Whether `cuMemPoolExportToShareableHandle` gave its descriptor (its allocations are
    /// exported only after that, as by NVIDIA's libcuda).
    exported: AtomicBool,
    st: Mutex<PoolState>,
}

static NEXT_UID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

/// Some pool keeps more than its release threshold: the next synchronization trims.
static OVER: AtomicBool = AtomicBool::new(false);
/// Every pool made (they stay allocated: a handle used after destroy is refused, not freed
/// memory).
static POOLS: Mutex<Vec<&'static Pool>> = Mutex::new(Vec::new());
/// Per device: (default pool, current pool).
static DEVICE_POOLS: Mutex<Vec<(Option<&'static Pool>, Option<&'static Pool>)>> =
    Mutex::new(Vec::new());
/// The host's (default pool, current pool) of `CU_MEM_LOCATION_TYPE_HOST`.
static HOST_POOLS: Mutex<(Option<&'static Pool>, Option<&'static Pool>)> = Mutex::new((None, None));

/// The host's default pool (made on first use) and its current one.
fn host_pools() -> (&'static Pool, &'static Pool) {
    let mut h = HOST_POOLS.lock();
    let def = *h.0.get_or_insert_with(|| Pool::new(-1, 0));
    let cur = *h.1.get_or_insert(def);
    (def, cur)
}

/// The (default, current) pools of a location of the CUDA 13 calls: a device's, or the host's
/// (`None` as the device).
unsafe fn location_pools(
    l: *const CUmemLocation,
    ty: i32,
) -> R<(&'static Pool, &'static Pool, Option<i32>)> {
    let r = l.as_ref().ok_or_else(|| invalid("location is NULL"))?;
    if r.type_ == CU_MEM_LOCATION_TYPE_HOST {
        alloc_type(ty)?;
        let (d, c) = host_pools();
        return Ok((d, c, None));
    }
    let d = device_location(l, ty)?;
    let (def, cur) = device_pools(d)?;
    Ok((def, cur, Some(d)))
}

impl Pool {
    fn new(ordinal: i32, max_size: u64) -> &'static Pool {
        Pool::with_numa(ordinal, None, max_size)
    }

    fn with_numa(ordinal: i32, numa: Option<i32>, max_size: u64) -> &'static Pool {
        Pool::make(ordinal, numa, max_size, false, None)
    }

    fn make(
        ordinal: i32,
        numa: Option<i32>,
        max_size: u64,
        shareable: bool,
        remote: Option<crate::ipc::RemotePool>,
    ) -> &'static Pool {
        let p: &'static Pool = Box::leak(Box::new(Pool {
            ordinal,
            numa,
            access: std::sync::atomic::AtomicU64::new(0),
            max_size,
            shareable,
            remote,
            uid: NEXT_UID.fetch_add(1, Ordering::Relaxed),
            exported: AtomicBool::new(false),
            st: Mutex::new(PoolState {
                follow_event_dependencies: true,
                allow_opportunistic: true,
                allow_internal_dependencies: true,
                ..PoolState::default()
            }),
        }));
        POOLS.lock().push(p);
        p
    }

    pub fn handle(&'static self) -> *mut c_void {
        self as *const Pool as *mut c_void
    }

    fn is_host(&self) -> bool {
        self.ordinal < 0
    }

    /// A buffer of at least `size` bytes for stream `s`: a kept one the stream may use, else a
    /// new one.
    #[allow(clippy::type_complexity)]
    fn take(
        &'static self,
        ctx: &'static Context,
        s: &'static Stream,
        size: u64,
    ) -> R<(
        Arc<Buffer>,
        Option<Arc<crate::managed::Managed>>,
        Option<usize>,
    )> {
        let cap = size.next_multiple_of(GRAIN);
        let mut st = self.st.lock();
        if st.destroyed {
            return Err(invalid(format!("pool {:p} was destroyed", self)));
        }
        let here = s as *const Stream as usize;
        let fits = |k: &Kept| {
            let c = k.buf.size();
            c >= cap
                && c <= cap.saturating_mul(2).max(cap + 16 * GRAIN)
                && (k.stream == here || (st.allow_opportunistic && k.after.reached()))
        };
        if let Some(i) = st.kept.iter().position(fits) {
            let k = st.kept.swap_remove(i);
            st.used += k.buf.size();
            st.used_high = st.used_high.max(st.used);
            return Ok((k.buf, k.pages, k.host));
        }
        if self.max_size != 0 && st.reserved + cap > self.max_size {
            // Give back what is kept before refusing.
            st.free_kept();
            if st.reserved + cap > self.max_size {
                return Err(fail(
                    CUDA_ERROR_OUT_OF_MEMORY,
                    format!(
                        "{size} bytes: the pool's maxSize is {} bytes and {} are in use",
                        self.max_size, st.reserved
                    ),
                ));
            }
        }
        drop(st);
        let (buf, pages, host) = if self.is_host() {
            let a = crate::managed::alloc_shared(ctx, cap, false, self.numa)?;
            (a.buf.clone(), a.managed.clone(), a.host)
        } else {
            (
                Arc::new(ctx.core.alloc(cap, MemFlags::default())?),
                None,
                None,
            )
        };
        let c = buf.size();
        let mut st = self.st.lock();
        st.used += c;
        st.used_high = st.used_high.max(st.used);
        st.reserved += c;
        st.reserved_high = st.reserved_high.max(st.reserved);
        Ok((buf, pages, host))
    }

    /// A live allocation's buffer comes back: kept after `after` of stream `stream`, or freed
    /// (`None`: the device's work that used it is complete or will be waited for by
    /// libtegragpu before the memory is reused).
    fn give_back(&self, a: &Alloc, kept: Option<(usize, QueuePoint)>) {
        let mut st = self.st.lock();
        let buf = a.buf.clone();
        let c = buf.size();
        st.used -= c;
        match kept {
            Some((stream, after)) if !st.destroyed => {
                st.kept.push(Kept {
                    buf,
                    pages: a.managed.clone(),
                    host: a.host,
                    stream,
                    after,
                });
                if st.reserved > st.release_threshold {
                    OVER.store(true, Ordering::Release);
                }
            }
            _ => {
                st.reserved -= c;
                crate::ipc::forget_pool_pointer(buf.gpu_va());
            }
        }
    }

    /// Free kept buffers until the pool reserves at most `keep` bytes (or nothing is kept).
    fn trim(&self, keep: u64) {
        let mut st = self.st.lock();
        while st.reserved > keep {
            let Some(k) = st.kept.pop() else { break };
            st.reserved -= k.buf.size();
            crate::ipc::forget_pool_pointer(k.buf.gpu_va());
        }
    }
}

/// After a stream, context or event synchronization: pools give back what they keep beyond
/// their release thresholds.
#[inline]
pub fn after_sync() {
    if OVER.load(Ordering::Acquire) && OVER.swap(false, Ordering::AcqRel) {
        let pools: Vec<&'static Pool> = POOLS.lock().clone();
        for p in pools {
            let t = p.st.lock().release_threshold;
            p.trim(t);
        }
    }
}

unsafe fn pool_ref(h: *mut c_void) -> R<&'static Pool> {
    crate::device::check_init()?;
    let p = h as *const Pool;
    let ok = !p.is_null() && POOLS.lock().iter().any(|q| std::ptr::eq(*q, p));
    if !ok {
        return Err(invalid(format!("{h:?} is not a memory pool")));
    }
    let p = &*p;
    if p.st.lock().destroyed {
        return Err(invalid(format!("memory pool {h:?} was destroyed")));
    }
    Ok(p)
}

/// The default pool of device `ordinal` (made on first use), and the slot of its current one.
fn device_pools(ordinal: i32) -> R<(&'static Pool, &'static Pool)> {
    dev(ordinal)?;
    let mut d = DEVICE_POOLS.lock();
    let i = ordinal as usize;
    if d.len() <= i {
        d.resize(i + 1, (None, None));
    }
    let def = *d[i].0.get_or_insert_with(|| Pool::new(ordinal, 0));
    let cur = *d[i].1.get_or_insert(def);
    Ok((def, cur))
}

/// Pools of pinned memory only.
fn alloc_type(ty: i32) -> R {
    match ty {
        CU_MEM_ALLOCATION_TYPE_PINNED => Ok(()),
        CU_MEM_ALLOCATION_TYPE_MANAGED => Err(fail(
            CUDA_ERROR_NOT_SUPPORTED,
            "CU_MEM_ALLOCATION_TYPE_MANAGED: managed memory pools are not supported",
        )),
        _ => Err(invalid(format!(
            "allocation type {ty} is not a CUmemAllocationType"
        ))),
    }
}

/// The location of a new pool: (device, -1 for the host; the host NUMA node).
fn pool_location(l: &CUmemLocation, ty: i32) -> R<(i32, Option<i32>)> {
    match l.type_ {
        CU_MEM_LOCATION_TYPE_HOST | CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT => {
            alloc_type(ty)?;
            Ok((-1, None))
        }
        CU_MEM_LOCATION_TYPE_HOST_NUMA => {
            alloc_type(ty)?;
            if !crate::managed::numa_node_exists(l.id) {
                return Err(invalid(format!("host NUMA node {} does not exist", l.id)));
            }
            Ok((-1, Some(l.id)))
        }
        // SAFETY: `l` is a valid reference.
        _ => Ok((unsafe { device_location(l, ty) }?, None)),
    }
}

/// A device location of the CUDA 13 pool calls; host locations are refused.
unsafe fn device_location(l: *const CUmemLocation, ty: i32) -> R<i32> {
    let l = l.as_ref().ok_or_else(|| invalid("location is NULL"))?;
    alloc_type(ty)?;
    if l.type_ != CU_MEM_LOCATION_TYPE_DEVICE {
        return Err(fail(
            CUDA_ERROR_NOT_SUPPORTED,
            format!(
                "location type {}: a device (or the host, CU_MEM_LOCATION_TYPE_HOST)",
                l.type_
            ),
        ));
    }
    // A location naming no device is an invalid value here (NVIDIA's answer).
    dev(l.id).map_err(|e| crate::error::Fail(CUDA_ERROR_INVALID_VALUE, e.1))?;
    Ok(l.id)
}

// --- Allocation ---------------------------------------------------------------------------

unsafe fn alloc_async(
    what: &str,
    dptr: *mut CUdeviceptr,
    size: usize,
    pool: Option<&'static Pool>,
    stream: *mut c_void,
    ptsz: bool,
) -> R {
    let o = out(dptr, "dptr")?;
    let s = stream_of(stream, ptsz)?;
    let ctx = s.ctx;
    let pool = match pool {
        Some(p) => p,
        None => device_pools(ctx.dev.ordinal)?.1,
    };
    if pool.remote.is_some() {
        return Err(invalid(format!(
            "{what}: the pool was imported from another process: import its allocations with cuMemPoolImportPointer"
        )));
    }
    if !pool.is_host() && pool.ordinal != ctx.dev.ordinal {
        return Err(fail(
            CUDA_ERROR_NOT_SUPPORTED,
            format!(
                "{what}: the pool is device {}'s and the stream device {}'s; allocate on a stream of the pool's device",
                pool.ordinal, ctx.dev.ordinal
            ),
        ));
    }
    if s.is_capturing() {
        if size == 0 || pool.is_host() {
            return Err(crate::capture::refuse(s, what));
        }
        // Captured: an allocation node of the capture's graph, its memory allocated now.
        let mut made = None;
        let r = crate::capture::add(s, || {
            let (kind, mem) = crate::graph::mem_alloc_kind(ctx, size as u64)?;
            made = Some(mem);
            Ok(kind)
        });
        return match (r, made) {
            (Ok(()), Some(mem)) => {
                *o = mem.va;
                Ok(())
            }
            // The node was not added: its memory goes with it.
            (r, made) => {
                if let Some(mem) = made {
                    mem.freed_by_graph
                        .store(true, std::sync::atomic::Ordering::Release);
                }
                r.and(Err(fail(CUDA_ERROR_UNKNOWN, "no allocation node was made")))
            }
        };
    }
    if size == 0 {
        *o = 0;
        return Ok(());
    }
    let (buf, pages, host) = pool.take(ctx, s, size as u64)?;
    let va = buf.gpu_va();
    crate::memory::insert(Alloc {
        buf,
        size: size as u64,
        ctx,
        host,
        host_flags: 0,
        managed: pages,
        pool: Some(pool),
        graph: None,
    });
    *o = va;
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn cuMemAllocAsync(
    dptr: *mut CUdeviceptr,
    bytesize: usize,
    h_stream: *mut c_void,
) -> CUresult {
    guard("cuMemAllocAsync", || {
        alloc_async("cuMemAllocAsync", dptr, bytesize, None, h_stream, false)
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuMemAllocAsync_ptsz(
    dptr: *mut CUdeviceptr,
    bytesize: usize,
    h_stream: *mut c_void,
) -> CUresult {
    guard("cuMemAllocAsync_ptsz", || {
        alloc_async("cuMemAllocAsync_ptsz", dptr, bytesize, None, h_stream, true)
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuMemAllocFromPoolAsync(
    dptr: *mut CUdeviceptr,
    bytesize: usize,
    pool: *mut c_void,
    h_stream: *mut c_void,
) -> CUresult {
    guard("cuMemAllocFromPoolAsync", || {
        let p = pool_ref(pool)?;
        alloc_async(
            "cuMemAllocFromPoolAsync",
            dptr,
            bytesize,
            Some(p),
            h_stream,
            false,
        )
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuMemAllocFromPoolAsync_ptsz(
    dptr: *mut CUdeviceptr,
    bytesize: usize,
    pool: *mut c_void,
    h_stream: *mut c_void,
) -> CUresult {
    guard("cuMemAllocFromPoolAsync_ptsz", || {
        let p = pool_ref(pool)?;
        alloc_async(
            "cuMemAllocFromPoolAsync_ptsz",
            dptr,
            bytesize,
            Some(p),
            h_stream,
            true,
        )
    })
}

unsafe fn free_async(what: &str, dptr: CUdeviceptr, stream: *mut c_void, ptsz: bool) -> R {
    let s = stream_of(stream, ptsz)?;
    if dptr == 0 {
        return Ok(());
    }
    if s.is_capturing() {
        // Captured: a free node of a graph allocation.
        return crate::capture::add(s, || crate::graph::mem_free_kind(dptr));
    }
    // An allocation imported from another process's pool: unmapped once the work queued on it
    // is done.
    if crate::ipc::is_pool_import(dptr) {
        s.record(|_| Ok(()))?;
        if crate::ipc::free_pool_import(dptr).is_some() {
            return Ok(());
        }
    }
    match find_va(dptr) {
        Some((a, 0)) if a.graph.is_some() && crate::graph::program_frees(dptr) => return Ok(()),
        Some((a, 0)) if !a.pinned_host() && !a.is_managed() => {}
        _ => {
            return Err(invalid(format!(
                "{what}: {dptr:#x} is not the start of a device allocation"
            )))
        }
    }
    // The implicit ordering of the default streams first, so that the point covers it.
    s.record(|_| Ok(()))?;
    let point = s.st.lock().q.as_ref().map(|q| q.submitted_point());
    let a = crate::memory::remove(dptr).ok_or_else(|| {
        invalid(format!(
            "{what}: {dptr:#x} is not the start of a device allocation"
        ))
    })?;
    match a.pool {
        Some(p) => p.give_back(&a, point.map(|pt| (s as *const Stream as usize, pt))),
        // Memory of cuMemAlloc: libtegragpu frees it once the queued work is done.
        None => drop(a),
    }
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn cuMemFreeAsync(dptr: CUdeviceptr, h_stream: *mut c_void) -> CUresult {
    guard("cuMemFreeAsync", || {
        free_async("cuMemFreeAsync", dptr, h_stream, false)
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuMemFreeAsync_ptsz(dptr: CUdeviceptr, h_stream: *mut c_void) -> CUresult {
    guard("cuMemFreeAsync_ptsz", || {
        free_async("cuMemFreeAsync_ptsz", dptr, h_stream, true)
    })
}

/// `cuMemFree` of a pool's allocation (after the device's work: the buffer can be reused).
pub fn free_now(a: &Alloc) {
    if let Some(p) = a.pool {
        p.give_back(a, None);
    }
}

// --- Pools --------------------------------------------------------------------------------

#[no_mangle]
pub unsafe extern "C" fn cuMemPoolCreate(
    pool: *mut *mut c_void,
    props: *const CUmemPoolProps,
) -> CUresult {
    guard("cuMemPoolCreate", || {
        let o = out(pool, "pool")?;
        let p = props.as_ref().ok_or_else(|| invalid("poolProps is NULL"))?;
        crate::device::check_init()?;
        let (ordinal, numa) = pool_location(&p.location, p.alloc_type)?;
        let shareable = match p.handle_types {
            0 => false,
            CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR if ordinal >= 0 => true,
            CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR => {
                return Err(fail(
                    CUDA_ERROR_NOT_SUPPORTED,
                    "handleTypes CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR: host pools have no shareable handles",
                ))
            }
            t => {
                return Err(fail(
                    CUDA_ERROR_NOT_SUPPORTED,
                    format!("handleTypes {t:#x}: pools share by POSIX file descriptors only (CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 1)"),
                ))
            }
        };
        if p.usage != 0 {
            return Err(fail(
                CUDA_ERROR_NOT_SUPPORTED,
                format!("usage {:#x}: no pool usage flags are supported", p.usage),
            ));
        }
        if p.reserved.iter().any(|&b| b != 0) {
            return Err(invalid("poolProps.reserved must be zero"));
        }
        let max = (p.max_size as u64)
            .checked_next_multiple_of(MAX_SIZE_STEP)
            .unwrap_or(u64::MAX);
        *o = Pool::make(ordinal, numa, max, shareable, None).handle();
        Ok(())
    })
}

// --- Interprocess pools -------------------------------------------------------------------

const CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR: i32 = 1;

fn posix_fd_type(what: &str, ty: i32, flags: u64) -> R {
    if ty != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR {
        return Err(invalid(format!(
            "{what}: handleType {ty}: pools share by POSIX file descriptors only (CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 1)"
        )));
    }
    if flags != 0 {
        return Err(invalid(format!("{what}: flags {flags:#x} (must be 0)")));
    }
    Ok(())
}

/// `cuMemPoolExportToShareableHandle`: a new file descriptor naming the pool, for
/// `cuMemPoolImportFromShareableHandle` in another process (sent there over a Unix socket with
/// `SCM_RIGHTS`); the caller closes it.
#[no_mangle]
pub unsafe extern "C" fn cuMemPoolExportToShareableHandle(
    handle_out: *mut c_void,
    pool: *mut c_void,
    ty: i32,
    flags: u64,
) -> CUresult {
    guard("cuMemPoolExportToShareableHandle", || {
        let o = out(handle_out as *mut i32, "handle_out")?;
        let p = pool_ref(pool)?;
        posix_fd_type("cuMemPoolExportToShareableHandle", ty, flags)?;
        if !p.shareable || p.remote.is_some() {
            return Err(invalid(
                "the pool was not made with CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR in this process",
            ));
        }
        *o = crate::ipc::pool_share_fd(p.uid, p.ordinal)?;
        p.exported.store(true, Ordering::Release);
        Ok(())
    })
}

/// `cuMemPoolImportFromShareableHandle`: the pool another process exported (the descriptor's
/// number in `handle`); only its exported allocations can be used, by `cuMemPoolImportPointer`.
#[no_mangle]
pub unsafe extern "C" fn cuMemPoolImportFromShareableHandle(
    pool_out: *mut *mut c_void,
    handle: *mut c_void,
    ty: i32,
    flags: u64,
) -> CUresult {
    guard("cuMemPoolImportFromShareableHandle", || {
        let o = out(pool_out, "pool_out")?;
        crate::device::check_init()?;
        posix_fd_type("cuMemPoolImportFromShareableHandle", ty, flags)?;
        let remote = crate::ipc::pool_from_fd(handle as usize as i32)?;
        dev(remote.ordinal)?;
        *o = Pool::make(remote.ordinal, None, 0, true, Some(remote)).handle();
        Ok(())
    })
}

/// `cuMemPoolExportPointer`: the 64 bytes naming allocation `ptr` (its start) of a pool made
/// with `CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR`, for `cuMemPoolImportPointer` in another
/// process.
#[no_mangle]
pub unsafe extern "C" fn cuMemPoolExportPointer(
    share_data_out: *mut [u8; 64],
    ptr: CUdeviceptr,
) -> CUresult {
    guard("cuMemPoolExportPointer", || {
        let o = out(share_data_out, "shareData_out")?;
        crate::device::check_init()?;
        let a = match find_va(ptr) {
            Some((a, 0)) => a,
            _ => {
                return Err(invalid(format!(
                    "{ptr:#x} is not the start of a memory pool's allocation"
                )))
            }
        };
        let p = a
            .pool
            .filter(|p| p.shareable && p.remote.is_none())
            .ok_or_else(|| {
                invalid(format!(
                    "{ptr:#x} is not an allocation of a pool made with CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR"
                ))
            })?;
        if !p.exported.load(Ordering::Acquire) {
            return Err(invalid(format!(
                "{ptr:#x}: export the pool first (cuMemPoolExportToShareableHandle), as NVIDIA's libcuda requires"
            )));
        }
        *o = crate::ipc::pool_export_pointer(&a, p.uid)?;
        Ok(())
    })
}

/// `cuMemPoolImportPointer`: map the allocation `share_data` names, of the imported pool
/// `pool`; `cuMemFree` or `cuMemFreeAsync` unmaps it.
#[no_mangle]
pub unsafe extern "C" fn cuMemPoolImportPointer(
    ptr_out: *mut CUdeviceptr,
    pool: *mut c_void,
    share_data: *const [u8; 64],
) -> CUresult {
    guard("cuMemPoolImportPointer", || {
        let o = out(ptr_out, "ptr_out")?;
        let p = pool_ref(pool)?;
        let data = share_data
            .as_ref()
            .ok_or_else(|| invalid("shareData is NULL"))?;
        let remote = p.remote.as_ref().ok_or_else(|| {
            invalid("the pool was not imported (cuMemPoolImportFromShareableHandle)")
        })?;
        *o = crate::ipc::pool_import_pointer(remote, data)?;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuMemPoolDestroy(pool: *mut c_void) -> CUresult {
    guard("cuMemPoolDestroy", || {
        let p = pool_ref(pool)?;
        if let Some(r) = &p.remote {
            if crate::ipc::pool_imports_live(r) {
                return Err(invalid(
                    "allocations imported from the pool are still mapped: free them first (cuMemFree, cuMemFreeAsync)",
                ));
            }
        }
        {
            let d = DEVICE_POOLS.lock();
            if let Some((def, cur)) = d.get(p.ordinal as usize) {
                if def.is_some_and(|x| std::ptr::eq(x, p)) {
                    return Err(invalid(
                        "the default memory pool of a device cannot be destroyed",
                    ));
                }
                let _ = cur;
            }
        }
        {
            let mut h = HOST_POOLS.lock();
            if h.0.is_some_and(|x| std::ptr::eq(x, p)) {
                return Err(invalid(
                    "the host's default memory pool cannot be destroyed",
                ));
            }
            if h.1.is_some_and(|x| std::ptr::eq(x, p)) {
                h.1 = h.0;
            }
        }
        // A device whose current pool it was goes back to its default pool.
        {
            let mut d = DEVICE_POOLS.lock();
            for (def, cur) in d.iter_mut() {
                if cur.is_some_and(|x| std::ptr::eq(x, p)) {
                    *cur = *def;
                }
            }
        }
        let mut st = p.st.lock();
        st.destroyed = true;
        st.free_kept();
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuMemPoolTrimTo(pool: *mut c_void, min_bytes_to_keep: usize) -> CUresult {
    guard("cuMemPoolTrimTo", || {
        pool_ref(pool)?.trim(min_bytes_to_keep as u64);
        Ok(())
    })
}

const ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES: i32 = 1;
const ATTR_REUSE_ALLOW_OPPORTUNISTIC: i32 = 2;
const ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES: i32 = 3;
const ATTR_RELEASE_THRESHOLD: i32 = 4;
const ATTR_RESERVED_MEM_CURRENT: i32 = 5;
const ATTR_RESERVED_MEM_HIGH: i32 = 6;
const ATTR_USED_MEM_CURRENT: i32 = 7;
const ATTR_USED_MEM_HIGH: i32 = 8;

#[no_mangle]
pub unsafe extern "C" fn cuMemPoolSetAttribute(
    pool: *mut c_void,
    attr: i32,
    value: *mut c_void,
) -> CUresult {
    guard("cuMemPoolSetAttribute", || {
        let p = pool_ref(pool)?;
        if value.is_null() {
            return Err(invalid("value is NULL"));
        }
        let mut st = p.st.lock();
        let flag = || *(value as *const i32) != 0;
        match attr {
            ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES => st.follow_event_dependencies = flag(),
            ATTR_REUSE_ALLOW_OPPORTUNISTIC => st.allow_opportunistic = flag(),
            ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES => st.allow_internal_dependencies = flag(),
            ATTR_RELEASE_THRESHOLD => {
                st.release_threshold = *(value as *const u64);
                if st.reserved > st.release_threshold {
                    OVER.store(true, Ordering::Release);
                }
            }
            ATTR_RESERVED_MEM_HIGH | ATTR_USED_MEM_HIGH => {
                let v = *(value as *const u64);
                if v != 0 {
                    return Err(invalid(format!(
                        "attribute {attr} can only be reset to 0, not {v}"
                    )));
                }
                if attr == ATTR_RESERVED_MEM_HIGH {
                    st.reserved_high = st.reserved;
                } else {
                    st.used_high = st.used;
                }
            }
            _ => {
                return Err(invalid(format!(
                    "attribute {attr} is not a settable CUmemPool_attribute"
                )))
            }
        }
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuMemPoolGetAttribute(
    pool: *mut c_void,
    attr: i32,
    value: *mut c_void,
) -> CUresult {
    guard("cuMemPoolGetAttribute", || {
        let p = pool_ref(pool)?;
        if value.is_null() {
            return Err(invalid("value is NULL"));
        }
        let st = p.st.lock();
        let int = |v: bool| *(value as *mut i32) = v as i32;
        let u64_ = |v: u64| *(value as *mut u64) = v;
        match attr {
            ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES => int(st.follow_event_dependencies),
            ATTR_REUSE_ALLOW_OPPORTUNISTIC => int(st.allow_opportunistic),
            ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES => int(st.allow_internal_dependencies),
            ATTR_RELEASE_THRESHOLD => u64_(st.release_threshold),
            ATTR_RESERVED_MEM_CURRENT => u64_(st.reserved),
            ATTR_RESERVED_MEM_HIGH => u64_(st.reserved_high),
            ATTR_USED_MEM_CURRENT => u64_(st.used),
            ATTR_USED_MEM_HIGH => u64_(st.used_high),
            _ => {
                return Err(invalid(format!(
                    "attribute {attr} is not a CUmemPool_attribute"
                )))
            }
        }
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuMemPoolSetAccess(
    pool: *mut c_void,
    map: *const CUmemAccessDesc,
    count: usize,
) -> CUresult {
    guard("cuMemPoolSetAccess", || {
        let p = pool_ref(pool)?;
        if count > 0 && map.is_null() {
            return Err(invalid("map is NULL"));
        }
        for i in 0..count {
            let d = &*map.add(i);
            if d.location.type_ != CU_MEM_LOCATION_TYPE_DEVICE {
                return Err(invalid(format!(
                    "entry {i}: location type {} is not a device",
                    d.location.type_
                )));
            }
            dev(d.location.id)?;
            if !matches!(d.flags, 0 | 1 | 3) {
                return Err(invalid(format!("entry {i}: flags {}", d.flags)));
            }
            if p.is_host() {
                let bit = 1u64 << (d.location.id as u32 % 64);
                match d.flags {
                    CU_MEM_ACCESS_FLAGS_PROT_READWRITE => {
                        p.access.fetch_or(bit, Ordering::AcqRel);
                    }
                    CU_MEM_ACCESS_FLAGS_PROT_NONE => {
                        p.access.fetch_and(!bit, Ordering::AcqRel);
                    }
                    f => {
                        return Err(fail(
                            CUDA_ERROR_NOT_SUPPORTED,
                            format!("entry {i}: flags {f}: read-only access to host pool memory is not supported"),
                        ))
                    }
                }
            } else if d.location.id == p.ordinal {
                if d.flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE {
                    return Err(fail(
                        CUDA_ERROR_INVALID_DEVICE,
                        format!(
                            "entry {i}: the pool's own device {} keeps read-write access",
                            p.ordinal
                        ),
                    ));
                }
            } else if d.flags != CU_MEM_ACCESS_FLAGS_PROT_NONE {
                return Err(fail(
                    CUDA_ERROR_NOT_SUPPORTED,
                    format!(
                        "entry {i}: access to pool memory of device {} from device {} is not supported",
                        p.ordinal, d.location.id
                    ),
                ));
            }
        }
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuMemPoolGetAccess(
    flags: *mut i32,
    pool: *mut c_void,
    location: *mut CUmemLocation,
) -> CUresult {
    guard("cuMemPoolGetAccess", || {
        let o = out(flags, "flags")?;
        let p = pool_ref(pool)?;
        let l = location
            .as_ref()
            .ok_or_else(|| invalid("location is NULL"))?;
        if l.type_ != CU_MEM_LOCATION_TYPE_DEVICE {
            return Err(invalid(format!(
                "location type {} is not a device",
                l.type_
            )));
        }
        dev(l.id)?;
        let host_rw =
            p.is_host() && p.access.load(Ordering::Acquire) & (1 << (l.id as u32 % 64)) != 0;
        *o = if l.id == p.ordinal || host_rw {
            CU_MEM_ACCESS_FLAGS_PROT_READWRITE
        } else {
            CU_MEM_ACCESS_FLAGS_PROT_NONE
        };
        Ok(())
    })
}

// --- A device's pools ---------------------------------------------------------------------

#[no_mangle]
pub unsafe extern "C" fn cuDeviceGetDefaultMemPool(pool: *mut *mut c_void, d: i32) -> CUresult {
    guard("cuDeviceGetDefaultMemPool", || {
        let o = out(pool, "pool_out")?;
        *o = device_pools(d)?.0.handle();
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuDeviceGetMemPool(pool: *mut *mut c_void, d: i32) -> CUresult {
    guard("cuDeviceGetMemPool", || {
        let o = out(pool, "pool")?;
        *o = device_pools(d)?.1.handle();
        Ok(())
    })
}

fn set_pool(d: i32, p: &'static Pool) -> R {
    device_pools(d)?;
    if p.ordinal != d {
        return Err(invalid(format!(
            "the pool is device {}'s, not device {d}'s",
            p.ordinal
        )));
    }
    DEVICE_POOLS.lock()[d as usize].1 = Some(p);
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn cuDeviceSetMemPool(d: i32, pool: *mut c_void) -> CUresult {
    guard("cuDeviceSetMemPool", || set_pool(d, pool_ref(pool)?))
}

#[no_mangle]
pub unsafe extern "C" fn cuMemGetDefaultMemPool(
    pool: *mut *mut c_void,
    location: *mut CUmemLocation,
    ty: i32,
) -> CUresult {
    guard("cuMemGetDefaultMemPool", || {
        let o = out(pool, "pool_out")?;
        *o = location_pools(location, ty)?.0.handle();
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuMemGetMemPool(
    pool: *mut *mut c_void,
    location: *mut CUmemLocation,
    ty: i32,
) -> CUresult {
    guard("cuMemGetMemPool", || {
        let o = out(pool, "pool")?;
        *o = location_pools(location, ty)?.1.handle();
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuMemSetMemPool(
    location: *mut CUmemLocation,
    ty: i32,
    pool: *mut c_void,
) -> CUresult {
    guard("cuMemSetMemPool", || {
        let p = pool_ref(pool)?;
        match location_pools(location, ty)?.2 {
            Some(d) => set_pool(d, p),
            None if p.is_host() && p.numa.is_none() => {
                HOST_POOLS.lock().1 = Some(p);
                Ok(())
            }
            None => Err(invalid(
                "the pool is not a pool of CU_MEM_LOCATION_TYPE_HOST memory",
            )),
        }
    })
}
