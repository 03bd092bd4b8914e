//! Managed memory (`cuMemAllocManaged`, `cuMemPrefetchAsync`, `cuMemAdvise`,
//! `cuMemRangeGetAttribute(s)`, `cuStreamAttachMemAsync`).
//!
//! A managed allocation is memory the CPU and the GPU reach at the same address, so the
//! pointer `cuMemAllocManaged` returns works in host code and in kernels alike:
//! - desktop GPUs: an anonymous mapping of the process handed to libtegragpu
//!   (`Device::adopt_host`), pinned and mapped for the GPU at its own addresses, and unmapped
//!   with the buffer once the GPU mapping is gone (so no later mapping reuses the addresses
//!   while the GPU still maps them). The memory stays in system memory: kernels reach it over
//!   the bus, and prefetches move nothing.
//! - Jetson: an allocation of the shared memory whose CPU view the library places at its GPU
//!   address, as it does for every buffer where the address is free.
//!
//! Both place the memory where both processors see every write after the usual
//! synchronization, so CPU and GPU may touch it at any time (desktop GPUs report
//! `CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS` 1; Jetson reports 0, as NVIDIA's does, and
//! CPU access while a kernel that uses the memory runs is the program's race). Advice and
//! prefetch locations are recorded per byte range and answered by `cuMemRangeGetAttribute`;
//! they change no placement. `cuStreamAttachMemAsync` checks its arguments and changes nothing:
//! every stream of the device reaches the memory whatever it is attached to.

use crate::context::{current, Context};
use crate::device::out;
use crate::error::{fail, guard, invalid, R};
use crate::memory::{find_va, Alloc};
use crate::stream::stream_of;
use crate::types::*;
use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::ffi::c_void;
use std::sync::Arc;
use tegragpu::core::{BackendKind, MemFlags};

pub const CU_MEM_ATTACH_GLOBAL: u32 = 1;
pub const CU_MEM_ATTACH_HOST: u32 = 2;
pub const CU_MEM_ATTACH_SINGLE: u32 = 4;
const CU_DEVICE_CPU: i32 = -1;
const CU_DEVICE_INVALID: i32 = -2;

/// `CUmemLocation` (passed by value: type, id).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CUmemLocation {
    pub type_: i32,
    pub id: i32,
}
const CU_MEM_LOCATION_TYPE_INVALID: i32 = 0;
const CU_MEM_LOCATION_TYPE_DEVICE: i32 = 1;
const CU_MEM_LOCATION_TYPE_HOST: i32 = 2;
const CU_MEM_LOCATION_TYPE_HOST_NUMA: i32 = 3;
const CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT: i32 = 4;

/// A location advice or a prefetch names.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
enum Loc {
    #[default]
    Invalid,
    Device(i32),
    Host,
    HostNuma(i32),
}

impl Loc {
    /// As a `CUdevice` (the first forms of the calls): the device, `CU_DEVICE_CPU` for the host,
    /// `CU_DEVICE_INVALID` for none.
    fn device(self) -> i32 {
        match self {
            Loc::Invalid => CU_DEVICE_INVALID,
            Loc::Device(d) => d,
            Loc::Host | Loc::HostNuma(_) => CU_DEVICE_CPU,
        }
    }
    fn type_(self) -> i32 {
        match self {
            Loc::Invalid => CU_MEM_LOCATION_TYPE_INVALID,
            Loc::Device(_) => CU_MEM_LOCATION_TYPE_DEVICE,
            Loc::Host => CU_MEM_LOCATION_TYPE_HOST,
            Loc::HostNuma(_) => CU_MEM_LOCATION_TYPE_HOST_NUMA,
        }
    }
    fn id(self) -> i32 {
        match self {
            Loc::Device(d) | Loc::HostNuma(d) => d,
            Loc::Invalid => CU_DEVICE_INVALID,
            Loc::Host => 0,
        }
    }
}

/// Advice and prefetch state of a byte range.
#[derive(Clone, Copy, PartialEq, Eq, Default)]
struct Advice {
    read_mostly: bool,
    preferred: Loc,
    /// `CU_MEM_ADVISE_SET_ACCESSED_BY`: bit d for device d (devices 0 to 62).
    accessed_by: u64,
    prefetched: Loc,
}

/// Per-allocation state of memory the CPU and the GPU reach at one address: managed memory,
/// and the allocations of host memory pools (pools.rs), shared by the allocation's records.
pub struct Managed {
    /// Managed memory (`cuMemAllocManaged`); else memory of a host pool.
    pub managed: bool,
    /// Advice by start offset: each entry holds up to the next one (or the end).
    advice: Mutex<BTreeMap<u64, Advice>>,
}

impl Managed {
    /// Apply `f` to the advice of `[off, off + len)`.
    fn paint(&self, off: u64, len: u64, mut f: impl FnMut(&mut Advice)) {
        let mut m = self.advice.lock();
        for x in [off, off + len] {
            let (_, at) = m
                .range(..=x)
                .next_back()
                .map(|(k, v)| (*k, *v))
                .expect("an entry at offset 0");
            m.entry(x).or_insert(at);
        }
        for (_, v) in m.range_mut(off..off + len) {
            f(v);
        }
    }
    /// The advice of every piece of `[off, off + len)`.
    fn pieces(&self, off: u64, len: u64) -> Vec<Advice> {
        let m = self.advice.lock();
        let first = m.range(..=off).next_back().map(|(_, v)| *v);
        first
            .into_iter()
            .chain(m.range(off + 1..off + len).map(|(_, v)| *v))
            .collect()
    }
}

/// Whether host NUMA node `node` exists (`/sys/devices/system/node/nodeN`).
pub(crate) fn numa_node_exists(node: i32) -> bool {
    (0..1024).contains(&node)
        && std::path::Path::new(&format!("/sys/devices/system/node/node{node}")).exists()
}

/// `MPOL_BIND` of `[p, p + len)` to host NUMA node `node` (`mbind(2)`).
fn bind_to_node(p: *mut c_void, len: usize, node: i32) -> R {
    if !numa_node_exists(node) {
        return Err(invalid(format!("host NUMA node {node} does not exist")));
    }
    // SAFETY: `[p, p + len)` is a mapping of the caller's.
    unsafe { tegragpu::os::bind_to_numa_node(p.cast(), len, node as u32) }.map_err(|e| {
        fail(
            CUDA_ERROR_OUT_OF_MEMORY,
            format!(
                "mbind of {len} bytes to host NUMA node {node}: {}",
                std::io::Error::from_raw_os_error(e)
            ),
        )
    })
}

/// Memory the CPU and the GPU reach at the same address (see the module's comment):
/// managed memory (`managed`), else memory of a host pool; `numa`: the host NUMA node its
/// pages come from (desktop GPUs; Jetson has one node, 0).
pub(crate) fn alloc_shared(
    ctx: &'static Context,
    size: u64,
    managed: bool,
    numa: Option<i32>,
) -> R<Alloc> {
    let what = if managed {
        "managed memory"
    } else {
        "host pool memory"
    };
    let fresh = || {
        Arc::new(Managed {
            managed,
            advice: Mutex::new(BTreeMap::from([(0, Advice::default())])),
        })
    };
    match ctx.core.backend_kind() {
        BackendKind::Rm => {
            let len = usize::try_from(size.next_multiple_of(4096))
                .map_err(|_| fail(CUDA_ERROR_OUT_OF_MEMORY, format!("{size} bytes")))?;
            // SAFETY: a fresh private anonymous mapping of the process.
            let p = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    len,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                    -1,
                    0,
                )
            };
            if p == libc::MAP_FAILED {
                return Err(fail(
                    CUDA_ERROR_OUT_OF_MEMORY,
                    format!(
                        "mmap of {len} bytes for {what}: {}",
                        std::io::Error::last_os_error()
                    ),
                ));
            }
            let unmap = || {
                // SAFETY: the mapping made above, not handed to the library.
                unsafe { libc::munmap(p, len) };
            };
            if let Some(node) = numa {
                bind_to_node(p, len, node).inspect_err(|_| unmap())?;
            }
            // The buffer owns the pages from here: they are unmapped only once the GPU mapping
            // is gone, so a later mapping cannot reuse the addresses while the GPU maps them.
            // SAFETY: a fresh anonymous mapping of this function, given up on success.
            let buf = unsafe { ctx.core.adopt_host(p as *mut u8, len as u64) }
                .inspect_err(|_| unmap())?;
            let pages = fresh();
            Ok(Alloc {
                buf: Arc::new(buf),
                size,
                ctx,
                host: Some(p as usize),
                host_flags: 0,
                managed: Some(pages),
                pool: None,
                graph: None,
            })
        }
        BackendKind::Nvgpu => {
            if numa.is_some_and(|n| n != 0) {
                return Err(invalid(format!(
                    "host NUMA node {}: Jetson has node 0 only",
                    numa.unwrap_or(0)
                )));
            }
            let mf = MemFlags {
                cpu_cached: true,
                ..MemFlags::default()
            };
            let buf = ctx.core.alloc(size, mf)?;
            let p = buf.map_cpu()? as u64;
            if p != buf.gpu_va() {
                return Err(fail(
                    CUDA_ERROR_OUT_OF_MEMORY,
                    format!(
                        "{what}: the CPU view of the {size}-byte allocation at GPU address {:#x} could not be placed at that address (it is at {p:#x})",
                        buf.gpu_va()
                    ),
                ));
            }
            Ok(Alloc {
                buf: Arc::new(buf),
                size,
                ctx,
                host: Some(p as usize),
                host_flags: 0,
                managed: Some(fresh()),
                pool: None,
                graph: None,
            })
        }
    }
}

#[no_mangle]
pub unsafe extern "C" fn cuMemAllocManaged(
    dptr: *mut CUdeviceptr,
    bytesize: usize,
    flags: u32,
) -> CUresult {
    guard("cuMemAllocManaged", || {
        let p = out(dptr, "dptr")?;
        let ctx = current()?;
        if bytesize == 0 {
            return Err(invalid("bytesize is 0"));
        }
        if flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST {
            return Err(invalid(format!(
                "flags {flags:#x}: must be CU_MEM_ATTACH_GLOBAL (1) or CU_MEM_ATTACH_HOST (2)"
            )));
        }
        let a = alloc_shared(ctx, bytesize as u64, true, None)?;
        let va = a.buf.gpu_va();
        crate::memory::insert(a);
        *p = va;
        Ok(())
    })
}

/// The managed allocation holding all of `[dptr, dptr + count)` and the range's offset in it.
fn managed_range(what: &str, dptr: u64, count: usize) -> R<(Alloc, Arc<Managed>, u64)> {
    let (a, off) = find_va(dptr)
        .filter(|(a, _)| a.is_managed())
        .ok_or_else(|| invalid(format!("{what}: {dptr:#x} is not managed memory")))?;
    if count == 0 || off + count as u64 > a.size {
        return Err(invalid(format!(
            "{what}: count {count} at {dptr:#x} is empty or runs past the end of its managed allocation ({} bytes at {:#x})",
            a.size,
            dptr - off
        )));
    }
    let m = a.managed.clone().expect("managed");
    Ok((a, m, off))
}

/// A location of the second forms of the calls; `target` for a prefetch (the host's NUMA node
/// of the calling thread counts as the host).
fn location(l: CUmemLocation) -> R<Loc> {
    match l.type_ {
        CU_MEM_LOCATION_TYPE_DEVICE => {
            crate::device::dev(l.id)?;
            Ok(Loc::Device(l.id))
        }
        CU_MEM_LOCATION_TYPE_HOST => Ok(Loc::Host),
        CU_MEM_LOCATION_TYPE_HOST_NUMA if l.id >= 0 => Ok(Loc::HostNuma(l.id)),
        CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT => Ok(Loc::Host),
        _ => Err(invalid(format!(
            "location type {} id {} is not a device, the host or a host NUMA node",
            l.type_, l.id
        ))),
    }
}

/// A location of the first forms: a device ordinal or `CU_DEVICE_CPU`.
fn device_location(d: i32) -> R<Loc> {
    if d == CU_DEVICE_CPU {
        return Ok(Loc::Host);
    }
    crate::device::dev(d)?;
    Ok(Loc::Device(d))
}

unsafe fn prefetch(
    what: &str,
    dptr: u64,
    count: usize,
    to: R<Loc>,
    stream: *mut c_void,
    ptsz: bool,
) -> R {
    let (_, m, off) = managed_range(what, dptr, count)?;
    let to = to?;
    stream_of(stream, ptsz)?;
    if let Loc::Device(d) = to {
        let dev = crate::device::dev(d)?;
        if crate::attributes::attribute(dev.core()?, 89) != Some(1) {
            return Err(fail(
                CUDA_ERROR_INVALID_DEVICE,
                format!("{what}: device {d} has no concurrent managed access (CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS is 0): managed memory is prefetched to it by launching work"),
            ));
        }
    }
    m.paint(off, count as u64, |v| v.prefetched = to);
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn cuMemPrefetchAsync(
    dptr: CUdeviceptr,
    count: usize,
    dst_device: i32,
    h_stream: *mut c_void,
) -> CUresult {
    guard("cuMemPrefetchAsync", || {
        prefetch(
            "cuMemPrefetchAsync",
            dptr,
            count,
            device_location(dst_device),
            h_stream,
            false,
        )
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuMemPrefetchAsync_ptsz(
    dptr: CUdeviceptr,
    count: usize,
    dst_device: i32,
    h_stream: *mut c_void,
) -> CUresult {
    guard("cuMemPrefetchAsync_ptsz", || {
        prefetch(
            "cuMemPrefetchAsync_ptsz",
            dptr,
            count,
            device_location(dst_device),
            h_stream,
            true,
        )
    })
}

unsafe fn prefetch_v2(
    what: &str,
    dptr: u64,
    count: usize,
    l: CUmemLocation,
    flags: u32,
    stream: *mut c_void,
    ptsz: bool,
) -> R {
    if flags != 0 {
        return Err(invalid(format!("{what}: flags {flags:#x}: must be 0")));
    }
    prefetch(what, dptr, count, location(l), stream, ptsz)
}

#[no_mangle]
pub unsafe extern "C" fn cuMemPrefetchAsync_v2(
    dptr: CUdeviceptr,
    count: usize,
    location: CUmemLocation,
    flags: u32,
    h_stream: *mut c_void,
) -> CUresult {
    guard("cuMemPrefetchAsync_v2", || {
        prefetch_v2(
            "cuMemPrefetchAsync_v2",
            dptr,
            count,
            location,
            flags,
            h_stream,
            false,
        )
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuMemPrefetchAsync_v2_ptsz(
    dptr: CUdeviceptr,
    count: usize,
    location: CUmemLocation,
    flags: u32,
    h_stream: *mut c_void,
) -> CUresult {
    guard("cuMemPrefetchAsync_v2_ptsz", || {
        prefetch_v2(
            "cuMemPrefetchAsync_v2_ptsz",
            dptr,
            count,
            location,
            flags,
            h_stream,
            true,
        )
    })
}

/// `CUmem_advise`.
fn advise(what: &str, dptr: u64, count: usize, advice: i32, to: R<Loc>) -> R {
    let (_, m, off) = managed_range(what, dptr, count)?;
    if !(1..=6).contains(&advice) {
        return Err(invalid(format!(
            "{what}: advice {advice} is not a CUmem_advise (1 to 6)"
        )));
    }
    // Read-mostly advice names no location.
    let to = if advice <= 2 { Loc::Invalid } else { to? };
    if matches!(advice, 5 | 6) && matches!(to, Loc::Device(d) if d > 62) {
        return Err(invalid(format!("{what}: device {}", to.device())));
    }
    let bit = match to {
        Loc::Device(d) => 1u64 << d,
        _ => 0,
    };
    m.paint(off, count as u64, |v| match advice {
        1 => v.read_mostly = true,
        2 => v.read_mostly = false,
        3 => v.preferred = to,
        4 => v.preferred = Loc::Invalid,
        5 => v.accessed_by |= bit,
        _ => v.accessed_by &= !bit,
    });
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn cuMemAdvise(
    dptr: CUdeviceptr,
    count: usize,
    advice: i32,
    device: i32,
) -> CUresult {
    guard("cuMemAdvise", || {
        advise("cuMemAdvise", dptr, count, advice, device_location(device))
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuMemAdvise_v2(
    dptr: CUdeviceptr,
    count: usize,
    advice: i32,
    location: CUmemLocation,
) -> CUresult {
    guard("cuMemAdvise_v2", || {
        advise(
            "cuMemAdvise_v2",
            dptr,
            count,
            advice,
            // A location naming no device is an invalid value here (NVIDIA's answer).
            self::location(location).map_err(|e| crate::error::Fail(CUDA_ERROR_INVALID_VALUE, e.1)),
        )
    })
}

/// One `CUmem_range_attribute` of `[dptr, dptr + count)` into `data` (`size` bytes).
unsafe fn range_attribute(data: *mut c_void, size: usize, attr: i32, dptr: u64, count: usize) -> R {
    const WHAT: &str = "cuMemRangeGetAttribute";
    if data.is_null() {
        return Err(invalid(format!("{WHAT}: data is NULL")));
    }
    let (_, m, off) = managed_range(WHAT, dptr, count)?;
    let pieces = m.pieces(off, count as u64);
    // The location every piece shares, else none.
    let same = |f: fn(&Advice) -> Loc| {
        let l = f(&pieces[0]);
        if pieces.iter().all(|p| f(p) == l) {
            l
        } else {
            Loc::Invalid
        }
    };
    let int = |v: i32| -> R {
        if size != 4 {
            return Err(invalid(format!(
                "{WHAT}: dataSize {size} for attribute {attr}: must be 4"
            )));
        }
        *(data as *mut i32) = v;
        Ok(())
    };
    match attr {
        1 => int(pieces.iter().all(|p| p.read_mostly) as i32),
        2 => int(same(|p| p.preferred).device()),
        3 => {
            if size == 0 || size % 4 != 0 {
                return Err(invalid(format!(
                    "{WHAT}: dataSize {size} for CU_MEM_RANGE_ATTRIBUTE_ACCESSED_BY: must be a non-zero multiple of 4"
                )));
            }
            let all = pieces.iter().fold(u64::MAX, |a, p| a & p.accessed_by);
            let out = std::slice::from_raw_parts_mut(data as *mut i32, size / 4);
            let mut devices = (0..63).filter(|d| all & (1 << d) != 0);
            for o in out {
                *o = devices.next().unwrap_or(CU_DEVICE_INVALID);
            }
            Ok(())
        }
        4 => int(same(|p| p.prefetched).device()),
        5 => int(same(|p| p.preferred).type_()),
        6 => int(same(|p| p.preferred).id()),
        7 => int(same(|p| p.prefetched).type_()),
        8 => int(same(|p| p.prefetched).id()),
        _ => Err(invalid(format!(
            "{WHAT}: attribute {attr} is not a CUmem_range_attribute (1 to 8)"
        ))),
    }
}

#[no_mangle]
pub unsafe extern "C" fn cuMemRangeGetAttribute(
    data: *mut c_void,
    data_size: usize,
    attribute: i32,
    dptr: CUdeviceptr,
    count: usize,
) -> CUresult {
    guard("cuMemRangeGetAttribute", || {
        range_attribute(data, data_size, attribute, dptr, count)
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuMemRangeGetAttributes(
    data: *mut *mut c_void,
    data_sizes: *mut usize,
    attributes: *mut i32,
    num_attributes: usize,
    dptr: CUdeviceptr,
    count: usize,
) -> CUresult {
    guard("cuMemRangeGetAttributes", || {
        if num_attributes == 0 || data.is_null() || data_sizes.is_null() || attributes.is_null() {
            return Err(invalid(format!(
                "numAttributes {num_attributes}, data {data:?}, dataSizes {data_sizes:?}, attributes {attributes:?}"
            )));
        }
        for i in 0..num_attributes {
            range_attribute(
                *data.add(i),
                *data_sizes.add(i),
                *attributes.add(i),
                dptr,
                count,
            )?;
        }
        Ok(())
    })
}

unsafe fn attach(
    what: &str,
    stream: *mut c_void,
    dptr: u64,
    length: usize,
    flags: u32,
    ptsz: bool,
) -> R {
    let s = stream_of(stream, ptsz)?;
    if !matches!(
        flags,
        CU_MEM_ATTACH_GLOBAL | CU_MEM_ATTACH_HOST | CU_MEM_ATTACH_SINGLE
    ) {
        return Err(invalid(format!(
            "{what}: flags {flags:#x}: must be CU_MEM_ATTACH_GLOBAL, _HOST or _SINGLE"
        )));
    }
    if flags == CU_MEM_ATTACH_SINGLE && std::ptr::eq(s, current()?.legacy_stream()?) {
        return Err(invalid(format!(
            "{what}: CU_MEM_ATTACH_SINGLE needs a stream other than the legacy default stream"
        )));
    }
    let (a, off) = find_va(dptr)
        .filter(|(a, _)| a.is_managed())
        .ok_or_else(|| invalid(format!("{what}: {dptr:#x} is not managed memory")))?;
    if off != 0 || (length != 0 && length as u64 != a.size) {
        return Err(invalid(format!(
            "{what}: [{dptr:#x}, +{length}) is not a whole managed allocation ({} bytes at {:#x}); length 0 names the whole allocation",
            a.size,
            dptr - off
        )));
    }
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn cuStreamAttachMemAsync(
    h_stream: *mut c_void,
    dptr: CUdeviceptr,
    length: usize,
    flags: u32,
) -> CUresult {
    guard("cuStreamAttachMemAsync", || {
        attach(
            "cuStreamAttachMemAsync",
            h_stream,
            dptr,
            length,
            flags,
            false,
        )
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuStreamAttachMemAsync_ptsz(
    h_stream: *mut c_void,
    dptr: CUdeviceptr,
    length: usize,
    flags: u32,
) -> CUresult {
    guard("cuStreamAttachMemAsync_ptsz", || {
        attach(
            "cuStreamAttachMemAsync_ptsz",
            h_stream,
            dptr,
            length,
            flags,
            true,
        )
    })
}
