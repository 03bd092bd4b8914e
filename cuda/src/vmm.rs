//! Virtual memory management (`cuMemCreate`, `cuMemRelease`, `cuMemAddressReserve`,
//! `cuMemAddressFree`, `cuMemMap`, `cuMemUnmap`, `cuMemSetAccess`, `cuMemGetAccess`,
//! `cuMemGetAllocationGranularity`, `cuMemGetAllocationPropertiesFromHandle`,
//! `cuMemRetainAllocationHandle`) on libtegragpu's `Device::reserve_va`, `alloc_physical` and
//! `map_physical` (core/vmm.rs).
//!
//! Device memory (`CU_MEM_LOCATION_TYPE_DEVICE`) and host memory (`_HOST`, `_HOST_NUMA`),
//! `CU_MEM_ALLOCATION_TYPE_PINNED`, in multiples of 2 MiB (the granularity reported, minimum and
//! recommended alike). `cuMemMap` maps whole allocations (offset 0, the allocation's size;
//! otherwise `CUDA_ERROR_NOT_SUPPORTED`, as NVIDIA's libcuda answers), inside one reservation and
//! over no other mapping; an allocation may be mapped at several addresses. A mapping is made
//! read-write for its device when `cuMemMap` places it; `cuMemSetAccess` accepts read-write
//! access for that device (what `cuMemGetAccess` then reports) and refuses access for other
//! devices and read-only access of a device with `CUDA_ERROR_NOT_SUPPORTED`. For the host
//! (`_HOST`, `_HOST_NUMA`) it shows host memory to the CPU at the mapped address, read-write or
//! read-only, or takes the view away (core `Device::map_physical_cpu`). Shareable handles: POSIX
//! file descriptors of device memory (`cuMemExportToShareableHandle`,
//! `cuMemImportFromShareableHandle`: a dma-buf on Jetson, an RM export fd on desktop GPUs, for
//! another process of the same machine). Refused as well: shareable handles of host memory, the
//! other handle types. The usage flags are kept in the properties. Compression is declined (the
//! memory is uncompressed and its properties say so, as the driver may answer). A reservation
//! is made on the current context's device and holds mappings of that device's memory.

use crate::context::{current, Context};
use crate::device::{dev, out};
use crate::error::{fail, guard, invalid, Fail, R};
use crate::managed::CUmemLocation;
use crate::pools::CUmemAccessDesc;
use crate::types::*;
use parking_lot::Mutex;
use std::collections::{BTreeMap, HashMap};
use std::ffi::c_void;
use std::sync::Arc;
use tegragpu::core::{CpuView, Mapping, PhysicalMemory, VaRange, VMM_GRANULE};

const CU_MEM_ALLOCATION_TYPE_PINNED: i32 = 1;
const CU_MEM_LOCATION_TYPE_DEVICE: i32 = 1;
const CU_MEM_LOCATION_TYPE_HOST: i32 = 2;
const CU_MEM_LOCATION_TYPE_HOST_NUMA: i32 = 3;
const CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT: i32 = 4;
const CU_MEM_ACCESS_FLAGS_PROT_NONE: i32 = 0;
const CU_MEM_ACCESS_FLAGS_PROT_READ: i32 = 1;
const CU_MEM_ACCESS_FLAGS_PROT_READWRITE: i32 = 3;
const CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR: i32 = 1;

/// `CUmemAllocationProp` (32 bytes).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct CUmemAllocationProp {
    pub type_: i32,
    pub requested_handle_types: i32,
    pub location: CUmemLocation,
    pub win32_handle_meta_data: *mut c_void,
    pub compression_type: u8,
    pub gpu_direct_rdma_capable: u8,
    pub usage: u16,
    pub reserved: [u8; 4],
}

struct Handle {
    phys: Arc<PhysicalMemory>,
    prop: CUmemAllocationProp,
    ordinal: i32,
    /// `cuMemCreate` and each `cuMemRetainAllocationHandle` count one; `cuMemRelease` drops one.
    refs: u32,
}

struct Reservation {
    range: VaRange,
    ordinal: i32,
    ctx: &'static Context,
}

struct Mapped {
    /// Host memory: the CPU's view at the mapping's address (`cuMemSetAccess` for the host).
    cpu: Option<CpuView>,
    mapping: Mapping,
    handle: u64,
    ordinal: i32,
    /// `cuMemSetAccess` gave the device read-write access.
    access: bool,
    /// The host NUMA node of host memory (what a retained handle reports).
    numa: Option<i32>,
    /// `prop.requestedHandleTypes` of the handle mapped.
    handle_types: i32,
    /// The last access other than none set for `CU_MEM_LOCATION_TYPE_HOST` or `_HOST_NUMA`
    /// (what `cuMemGetAccess` reports for `CU_MEM_LOCATION_TYPE_HOST`, as NVIDIA's libcuda
    /// does: observed with CUDA 13.0 on an H200).
    host_flags: i32,
}

#[derive(Default)]
struct State {
    next: u64,
    handles: HashMap<u64, Handle>,
    reserved: BTreeMap<u64, Reservation>,
    mapped: BTreeMap<u64, Mapped>,
}

// SAFETY: the raw pointer in a stored `CUmemAllocationProp` is the caller's Windows metadata
// pointer, kept only to be handed back.
unsafe impl Send for State {}

static STATE: Mutex<Option<State>> = Mutex::new(None);

fn with<T>(f: impl FnOnce(&mut State) -> T) -> T {
    f(STATE.lock().get_or_insert_with(State::default))
}

impl State {
    /// A new handle for `phys` (one reference).
    fn add(&mut self, phys: Arc<PhysicalMemory>, prop: CUmemAllocationProp, ordinal: i32) -> u64 {
        self.next += 1;
        let h = 0x7467_0000_0000_0000 | self.next;
        self.handles.insert(
            h,
            Handle {
                phys,
                prop,
                ordinal,
                refs: 1,
            },
        );
        h
    }

    /// The mapping holding address `ptr`.
    fn mapping_at(&self, ptr: u64) -> R<&Mapped> {
        self.mapped
            .range(..=ptr)
            .next_back()
            .filter(|(v, m)| ptr < **v + m.mapping.size())
            .map(|(_, m)| m)
            .ok_or_else(|| invalid(format!("{ptr:#x} is not mapped")))
    }
}

/// The properties of device memory of device `ordinal` with no shareable handle types (what a
/// retained or imported handle reports).
fn device_prop(ordinal: i32) -> CUmemAllocationProp {
    CUmemAllocationProp {
        type_: CU_MEM_ALLOCATION_TYPE_PINNED,
        requested_handle_types: 0,
        location: CUmemLocation {
            type_: CU_MEM_LOCATION_TYPE_DEVICE,
            id: ordinal,
        },
        win32_handle_meta_data: std::ptr::null_mut(),
        compression_type: 0,
        gpu_direct_rdma_capable: 0,
        usage: 0,
        reserved: [0; 4],
    }
}

fn granular(what: &str, v: u64) -> R {
    if v % VMM_GRANULE != 0 {
        return Err(invalid(format!(
            "{what} {v:#x} is not a multiple of the allocation granularity ({VMM_GRANULE:#x} bytes)"
        )));
    }
    Ok(())
}

/// Where an allocation property puts the memory.
#[derive(Clone, Copy, PartialEq)]
enum Place {
    /// Device memory of this device.
    Device(i32),
    /// Host memory (`CU_MEM_LOCATION_TYPE_HOST`, or `_HOST_NUMA` with that node).
    Host(Option<i32>),
}

/// The properties of host memory (NVIDIA's libcuda reports `CU_MEM_LOCATION_TYPE_HOST` memory
/// as node 0 of `CU_MEM_LOCATION_TYPE_HOST_NUMA`, on a host with one node).
fn host_prop(numa: Option<i32>, handle_types: i32) -> CUmemAllocationProp {
    let mut p = device_prop(0);
    p.location = CUmemLocation {
        type_: CU_MEM_LOCATION_TYPE_HOST_NUMA,
        id: numa.unwrap_or(0),
    };
    p.requested_handle_types = handle_types;
    p
}

/// The place an allocation property names. `create`: the checks of `cuMemCreate` (which
/// refuses `CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT`, as NVIDIA's libcuda does, where
/// `cuMemGetAllocationGranularity` answers for it).
unsafe fn prop_place(
    p: *const CUmemAllocationProp,
    create: bool,
) -> R<(CUmemAllocationProp, Place)> {
    let p = *p.as_ref().ok_or_else(|| invalid("prop is NULL"))?;
    crate::device::check_init()?;
    if p.type_ != CU_MEM_ALLOCATION_TYPE_PINNED {
        return Err(invalid(format!(
            "prop.type {}: only CU_MEM_ALLOCATION_TYPE_PINNED (1)",
            p.type_
        )));
    }
    let l = p.location;
    let place = match l.type_ {
        CU_MEM_LOCATION_TYPE_DEVICE => {
            dev(l.id).map_err(|e| Fail(CUDA_ERROR_INVALID_DEVICE, e.1))?;
            Place::Device(l.id)
        }
        // The id is ignored.
        CU_MEM_LOCATION_TYPE_HOST => Place::Host(None),
        CU_MEM_LOCATION_TYPE_HOST_NUMA => {
            if !crate::managed::numa_node_exists(l.id) {
                return Err(invalid(format!(
                    "prop.location: host NUMA node {} does not exist",
                    l.id
                )));
            }
            Place::Host(Some(l.id))
        }
        CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT if !create => Place::Host(None),
        t => {
            return Err(invalid(format!(
            "prop.location.type {t}: CU_MEM_LOCATION_TYPE_DEVICE (1), _HOST (2) or _HOST_NUMA (3)"
        )))
        }
    };
    Ok((p, place))
}

#[no_mangle]
pub unsafe extern "C" fn cuMemGetAllocationGranularity(
    granularity: *mut usize,
    prop: *const CUmemAllocationProp,
    option: i32,
) -> CUresult {
    guard("cuMemGetAllocationGranularity", || {
        let o = out(granularity, "granularity")?;
        prop_place(prop, false)?;
        if !matches!(option, 0 | 1) {
            return Err(invalid(format!(
                "option {option}: CU_MEM_ALLOC_GRANULARITY_MINIMUM (0) or _RECOMMENDED (1)"
            )));
        }
        *o = VMM_GRANULE as usize;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuMemCreate(
    handle: *mut u64,
    size: usize,
    prop: *const CUmemAllocationProp,
    flags: u64,
) -> CUresult {
    guard("cuMemCreate", || {
        let o = out(handle, "handle")?;
        let (p, place) = prop_place(prop, true)?;
        if flags != 0 {
            return Err(invalid(format!("flags {flags:#x}: must be 0")));
        }
        if size == 0 {
            return Err(invalid("size is 0"));
        }
        granular("size", size as u64)?;
        if p.requested_handle_types & !CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR != 0 {
            return Err(fail(
                CUDA_ERROR_NOT_SUPPORTED,
                format!(
                    "prop.requestedHandleTypes {:#x}: of the shareable handles only CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR (1) is supported",
                    p.requested_handle_types
                ),
            ));
        }
        if let Place::Host(numa) = place {
            return create_host(o, size as u64, p, numa);
        }
        let Place::Device(ordinal) = place else {
            unreachable!("host memory returned above")
        };
        // The usage flags say what the memory is meant for: CU_MEM_CREATE_USAGE_TILE_POOL,
        // backing sparse arrays (which cuMemMapArrayAsync would map, refused here), and
        // CU_MEM_CREATE_USAGE_HW_DECOMPRESS, the buffers of a decompression engine. The memory
        // is ordinary memory, as NVIDIA's libcuda gives it on a GPU without that engine, and the
        // flags stay in its properties.
        if p.usage & !(CU_MEM_CREATE_USAGE_TILE_POOL | CU_MEM_CREATE_USAGE_HW_DECOMPRESS) != 0 {
            return Err(invalid(format!(
                "prop.allocFlags.usage {:#x}: the usage flags are CU_MEM_CREATE_USAGE_TILE_POOL (1) and CU_MEM_CREATE_USAGE_HW_DECOMPRESS (2)",
                p.usage
            )));
        }
        if p.compression_type > CU_MEM_ALLOCATION_COMP_GENERIC {
            return Err(invalid(format!(
                "prop.allocFlags.compressionType {} is not a CUmemAllocationCompType (0 or 1)",
                p.compression_type
            )));
        }
        let core = dev(ordinal)?.core()?;
        let phys = Arc::new(core.alloc_physical(size as u64)?);
        // Compression is a request the driver may decline (CUDA's documentation: check the
        // handle's properties). This library declines it: the memory is uncompressed and its
        // properties say so.
        let granted = CUmemAllocationProp {
            compression_type: 0,
            ..p
        };
        *o = with(|s| s.add(phys, granted, ordinal));
        Ok(())
    })
}

/// `CU_MEM_CREATE_USAGE_TILE_POOL`: the memory is to back sparse arrays.
const CU_MEM_CREATE_USAGE_TILE_POOL: u16 = 1;
/// `CU_MEM_CREATE_USAGE_HW_DECOMPRESS`: the memory is a buffer of hardware decompression.
const CU_MEM_CREATE_USAGE_HW_DECOMPRESS: u16 = 2;

/// `CU_MEM_ALLOCATION_COMP_GENERIC`: generic compression requested.
const CU_MEM_ALLOCATION_COMP_GENERIC: u8 = 1;

/// `cuMemCreate` of host memory, pinned for the current context's device.
fn create_host(o: &mut u64, size: u64, p: CUmemAllocationProp, numa: Option<i32>) -> R {
    // NVIDIA's libcuda answers CUDA_ERROR_INVALID_VALUE to these (CUDA 13.0 on an H200).
    if p.location.type_ == CU_MEM_LOCATION_TYPE_HOST && p.requested_handle_types != 0 {
        return Err(invalid(format!(
            "prop.requestedHandleTypes {:#x}: CU_MEM_LOCATION_TYPE_HOST memory has no shareable handles",
            p.requested_handle_types
        )));
    }
    if p.gpu_direct_rdma_capable != 0 {
        return Err(invalid(
            "prop.allocFlags.gpuDirectRDMACapable: host memory is not for GPUDirect RDMA",
        ));
    }
    if p.requested_handle_types != 0 {
        return Err(fail(
            CUDA_ERROR_NOT_SUPPORTED,
            format!(
                "prop.requestedHandleTypes {:#x}: host memory has no shareable handles here",
                p.requested_handle_types
            ),
        ));
    }
    if p.compression_type != 0 || p.usage != 0 {
        return Err(invalid(format!(
            "prop.allocFlags: compressionType {}, usage {:#x}: not for host memory",
            p.compression_type, p.usage
        )));
    }
    let ctx = current()?;
    let phys = Arc::new(ctx.core.alloc_physical_host(size, numa.map(|n| n as u32))?);
    *o = with(|s| s.add(phys, host_prop(numa, 0), ctx.dev.ordinal));
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn cuMemRelease(handle: u64) -> CUresult {
    guard("cuMemRelease", || {
        crate::device::check_init()?;
        with(|s| {
            let h = s
                .handles
                .get_mut(&handle)
                .ok_or_else(|| invalid(format!("{handle:#x} is not an allocation handle")))?;
            h.refs -= 1;
            if h.refs == 0 {
                // The memory stays while mappings of it remain.
                s.handles.remove(&handle);
            }
            Ok(())
        })
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuMemAddressReserve(
    ptr: *mut CUdeviceptr,
    size: usize,
    alignment: usize,
    addr: CUdeviceptr,
    flags: u64,
) -> CUresult {
    guard("cuMemAddressReserve", || {
        let o = out(ptr, "ptr")?;
        let ctx = current()?;
        if flags != 0 {
            return Err(invalid(format!("flags {flags:#x}: must be 0")));
        }
        if size == 0 {
            return Err(invalid("size is 0"));
        }
        granular("size", size as u64)?;
        if alignment != 0 && !alignment.is_power_of_two() {
            return Err(invalid(format!(
                "alignment {alignment:#x} is not a power of two"
            )));
        }
        // `addr` is a hint: the range is placed where the library's allocator has room.
        let _ = addr;
        let range = ctx.core.reserve_va(size as u64, alignment as u64)?;
        let start = range.start();
        with(|s| {
            s.reserved.insert(
                start,
                Reservation {
                    range,
                    ordinal: ctx.dev.ordinal,
                    ctx,
                },
            )
        });
        *o = start;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuMemAddressFree(ptr: CUdeviceptr, size: usize) -> CUresult {
    guard("cuMemAddressFree", || {
        crate::device::check_init()?;
        let r = with(|s| {
            match s.reserved.get(&ptr) {
                Some(r) if r.range.size() == size as u64 => {}
                _ => {
                    return Err(invalid(format!(
                        "[{ptr:#x}, +{size:#x}) is not a reserved range"
                    )))
                }
            }
            if s.mapped.range(ptr..ptr + size as u64).next().is_some() {
                return Err(invalid(format!(
                    "[{ptr:#x}, +{size:#x}) still has mappings: cuMemUnmap them first"
                )));
            }
            Ok(s.reserved.remove(&ptr).expect("present"))
        })?;
        drop(r);
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuMemMap(
    ptr: CUdeviceptr,
    size: usize,
    offset: usize,
    handle: u64,
    flags: u64,
) -> CUresult {
    guard("cuMemMap", || {
        crate::device::check_init()?;
        if flags != 0 {
            return Err(invalid(format!("flags {flags:#x}: must be 0")));
        }
        let (size, offset) = (size as u64, offset as u64);
        if size == 0 {
            return Err(invalid("size is 0"));
        }
        granular("ptr", ptr)?;
        granular("size", size)?;
        if offset != 0 {
            // NVIDIA's libcuda maps whole allocations from their start only (CUDA 13.0 on an
            // H100 answers CUDA_ERROR_NOT_SUPPORTED); libtegragpu's core maps any part.
            return Err(fail(
                CUDA_ERROR_NOT_SUPPORTED,
                format!("offset {offset:#x}: mappings start at offset 0 of the allocation"),
            ));
        }
        let (phys, ordinal, numa, handle_types) = with(|s| {
            let h = s
                .handles
                .get(&handle)
                .ok_or_else(|| invalid(format!("{handle:#x} is not an allocation handle")))?;
            if size != h.phys.size() {
                // NVIDIA's libcuda maps whole allocations only (CUDA 13.0 on an H100).
                return Err(fail(
                    CUDA_ERROR_NOT_SUPPORTED,
                    format!(
                        "size {size:#x}: a mapping covers its whole allocation ({:#x} bytes)",
                        h.phys.size()
                    ),
                ));
            }
            let (base, r) = s
                .reserved
                .range(..=ptr)
                .next_back()
                .filter(|(b, r)| ptr + size <= **b + r.range.size())
                .ok_or_else(|| {
                    invalid(format!(
                        "[{ptr:#x}, +{size:#x}) is not inside a reserved range"
                    ))
                })?;
            if r.ordinal != h.ordinal {
                return Err(fail(
                    CUDA_ERROR_NOT_SUPPORTED,
                    format!(
                        "the range at {base:#x} was reserved on device {} and the memory is device {}'s",
                        r.ordinal, h.ordinal
                    ),
                ));
            }
            let clash = s
                .mapped
                .range(..ptr + size)
                .next_back()
                .filter(|(v, m)| **v + m.mapping.size() > ptr);
            if let Some((v, m)) = clash {
                return Err(invalid(format!(
                    "[{ptr:#x}, +{size:#x}) overlaps the mapping [{v:#x}, +{:#x})",
                    m.mapping.size()
                )));
            }
            let numa = (h.prop.location.type_ == CU_MEM_LOCATION_TYPE_HOST_NUMA)
                .then_some(h.prop.location.id);
            Ok((
                h.phys.clone(),
                h.ordinal,
                numa,
                h.prop.requested_handle_types,
            ))
        })?;
        let core = dev(ordinal)?.core()?;
        let mapping = core.map_physical(&phys, offset, ptr, size)?;
        with(|s| {
            s.mapped.insert(
                ptr,
                Mapped {
                    cpu: None,
                    mapping,
                    handle,
                    ordinal,
                    access: false,
                    numa,
                    handle_types,
                    host_flags: 0,
                },
            )
        });
        Ok(())
    })
}

/// The mappings covering all of `[ptr, ptr + size)`, each entirely inside it.
fn covering(s: &State, ptr: u64, size: u64) -> R<Vec<u64>> {
    let mut at = ptr;
    let mut vas = Vec::new();
    for (v, m) in s.mapped.range(ptr..ptr + size) {
        if *v != at || v + m.mapping.size() > ptr + size {
            break;
        }
        vas.push(*v);
        at = v + m.mapping.size();
    }
    if at != ptr + size || size == 0 {
        return Err(invalid(format!(
            "[{ptr:#x}, +{size:#x}) is not a run of whole mappings"
        )));
    }
    Ok(vas)
}

#[no_mangle]
pub unsafe extern "C" fn cuMemUnmap(ptr: CUdeviceptr, size: usize) -> CUresult {
    guard("cuMemUnmap", || {
        crate::device::check_init()?;
        let gone: Vec<Mapped> = with(|s| {
            let vas = covering(s, ptr, size as u64)?;
            Ok::<_, Fail>(
                vas.into_iter()
                    .map(|v| s.mapped.remove(&v).expect("present"))
                    .collect(),
            )
        })?;
        // Each unmaps once the device's queued work is done.
        drop(gone);
        Ok(())
    })
}

/// Whether a location names the host (`CU_MEM_LOCATION_TYPE_HOST` or `_HOST_NUMA`, any id).
fn is_host(l: &CUmemLocation) -> bool {
    matches!(
        l.type_,
        CU_MEM_LOCATION_TYPE_HOST | CU_MEM_LOCATION_TYPE_HOST_NUMA
    )
}

/// The CPU views the access `flags` asks for on the host mappings at `vas`: each mapping's view
/// is dropped, then remade read-write or read-only (`CU_MEM_ACCESS_FLAGS_PROT_NONE`: none).
fn set_host_access(s: &mut State, vas: &[u64], flags: i32) -> R {
    for v in vas {
        let m = s.mapped.get_mut(v).expect("present");
        m.cpu = None;
        if flags == CU_MEM_ACCESS_FLAGS_PROT_NONE {
            continue;
        }
        m.host_flags = flags;
        let core = dev(m.ordinal)?.core()?;
        let phys = m.mapping.physical().clone();
        let view = core.map_physical_cpu(
            &phys,
            0,
            *v,
            m.mapping.size(),
            flags == CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
        );
        // The process may map something else at those addresses (the library holds them from
        // cuMemAddressReserve where they were free then).
        m.cpu = Some(view.map_err(|e| Fail(CUDA_ERROR_NOT_SUPPORTED, Some(e.message)))?);
    }
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn cuMemSetAccess(
    ptr: CUdeviceptr,
    size: usize,
    desc: *const CUmemAccessDesc,
    count: usize,
) -> CUresult {
    guard("cuMemSetAccess", || {
        crate::device::check_init()?;
        if count == 0 || desc.is_null() {
            return Err(invalid(format!("desc {desc:?}, count {count}")));
        }
        let descs = std::slice::from_raw_parts(desc, count);
        with(|s| {
            let vas = covering(s, ptr, size as u64)?;
            for (i, d) in descs.iter().enumerate() {
                if !matches!(d.flags, 0 | 1 | 3) {
                    return Err(invalid(format!("desc[{i}]: flags {}", d.flags)));
                }
                if is_host(&d.location) {
                    // As NVIDIA's libcuda: host access to device memory is CUDA_ERROR_NOT_SUPPORTED.
                    if let Some(v) = vas
                        .iter()
                        .find(|v| !s.mapped[*v].mapping.physical().is_host())
                    {
                        return Err(fail(
                            CUDA_ERROR_NOT_SUPPORTED,
                            format!(
                                "desc[{i}]: access from the host: the mapping at {v:#x} is device memory"
                            ),
                        ));
                    }
                    continue;
                }
                if d.location.type_ != CU_MEM_LOCATION_TYPE_DEVICE {
                    return Err(invalid(format!(
                        "desc[{i}]: location type {}: CU_MEM_LOCATION_TYPE_DEVICE (1), _HOST (2) or _HOST_NUMA (3)",
                        d.location.type_
                    )));
                }
                dev(d.location.id).map_err(|e| Fail(CUDA_ERROR_INVALID_DEVICE, e.1))?;
                for v in &vas {
                    let m = &s.mapped[v];
                    if d.location.id != m.ordinal {
                        return Err(fail(
                            CUDA_ERROR_NOT_SUPPORTED,
                            format!(
                                "desc[{i}]: access from device {} to memory mapped for device {} is not supported",
                                d.location.id, m.ordinal
                            ),
                        ));
                    }
                    if d.flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE {
                        return Err(fail(
                            CUDA_ERROR_NOT_SUPPORTED,
                            format!(
                                "desc[{i}]: flags {}: only read-write access (CU_MEM_ACCESS_FLAGS_PROT_READWRITE) is supported for a device",
                                d.flags
                            ),
                        ));
                    }
                }
            }
            for d in descs {
                if is_host(&d.location) {
                    set_host_access(s, &vas, d.flags)?;
                } else {
                    for v in &vas {
                        s.mapped.get_mut(v).expect("present").access = true;
                    }
                }
            }
            Ok(())
        })
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuMemGetAccess(
    flags: *mut u64,
    location: *const CUmemLocation,
    ptr: CUdeviceptr,
) -> CUresult {
    guard("cuMemGetAccess", || {
        let o = out(flags, "flags")?;
        crate::device::check_init()?;
        let l = *location
            .as_ref()
            .ok_or_else(|| invalid("location is NULL"))?;
        if l.type_ == CU_MEM_LOCATION_TYPE_HOST {
            // NVIDIA's libcuda (CUDA 13.0 on an H200): host memory reports the last access set
            // for the host other than none; device memory its device's access.
            return with(|s| {
                let m = s.mapping_at(ptr)?;
                *o = if m.mapping.physical().is_host() {
                    m.host_flags
                } else if m.access {
                    CU_MEM_ACCESS_FLAGS_PROT_READWRITE
                } else {
                    CU_MEM_ACCESS_FLAGS_PROT_NONE
                } as u64;
                Ok(())
            });
        }
        if is_host(&l) {
            return with(|s| {
                let m = s.mapping_at(ptr)?;
                *o = match &m.cpu {
                    Some(c) if c.writable() => CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
                    Some(_) => CU_MEM_ACCESS_FLAGS_PROT_READ,
                    None => CU_MEM_ACCESS_FLAGS_PROT_NONE,
                } as u64;
                Ok(())
            });
        }
        if l.type_ != CU_MEM_LOCATION_TYPE_DEVICE {
            // NVIDIA's libcuda answers CUDA_ERROR_INVALID_DEVICE (CUDA 13.0 on an H200).
            return Err(fail(
                CUDA_ERROR_INVALID_DEVICE,
                format!("location type {}", l.type_),
            ));
        }
        dev(l.id).map_err(|e| Fail(CUDA_ERROR_INVALID_DEVICE, e.1))?;
        with(|s| {
            let m = s.mapping_at(ptr)?;
            *o = if m.access && m.ordinal == l.id {
                CU_MEM_ACCESS_FLAGS_PROT_READWRITE
            } else {
                CU_MEM_ACCESS_FLAGS_PROT_NONE
            } as u64;
            Ok(())
        })
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuMemGetAllocationPropertiesFromHandle(
    prop: *mut CUmemAllocationProp,
    handle: u64,
) -> CUresult {
    guard("cuMemGetAllocationPropertiesFromHandle", || {
        let o = out(prop, "prop")?;
        crate::device::check_init()?;
        *o = with(|s| {
            s.handles
                .get(&handle)
                .map(|h| h.prop)
                .ok_or_else(|| invalid(format!("{handle:#x} is not an allocation handle")))
        })?;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuMemRetainAllocationHandle(
    handle: *mut u64,
    addr: *mut c_void,
) -> CUresult {
    guard("cuMemRetainAllocationHandle", || {
        let o = out(handle, "handle")?;
        crate::device::check_init()?;
        let ptr = addr as u64;
        *o = with(|s| {
            let m = s.mapping_at(ptr)?;
            let (h, ordinal) = (m.handle, m.ordinal);
            let phys = m.mapping.physical().clone();
            // A released handle comes back with the memory its mapping holds.
            let prop = if phys.is_host() {
                host_prop(m.numa, 0)
            } else {
                device_prop(ordinal)
            };
            s.handles
                .entry(h)
                .or_insert(Handle {
                    phys,
                    prop,
                    ordinal,
                    refs: 0,
                })
                .refs += 1;
            Ok::<_, Fail>(h)
        })?;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuMemExportToShareableHandle(
    shareable: *mut c_void,
    handle: u64,
    handle_type: i32,
    flags: u64,
) -> CUresult {
    guard("cuMemExportToShareableHandle", || {
        crate::device::check_init()?;
        if shareable.is_null() {
            return Err(invalid("shareableHandle is NULL"));
        }
        if flags != 0 {
            return Err(invalid(format!("flags {flags:#x}: must be 0")));
        }
        let (phys, requested) = with(|s| {
            s.handles
                .get(&handle)
                .map(|h| (h.phys.clone(), h.prop.requested_handle_types))
                .ok_or_else(|| invalid(format!("{handle:#x} is not an allocation handle")))
        })?;
        if handle_type != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR {
            return Err(fail(
                CUDA_ERROR_NOT_SUPPORTED,
                format!(
                    "handleType {handle_type}: only CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR (1)"
                ),
            ));
        }
        if requested & handle_type == 0 {
            return Err(invalid(format!(
                "the allocation was created without CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR in prop.requestedHandleTypes ({requested:#x})"
            )));
        }
        *(shareable as *mut i32) = phys.export_fd()?;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuMemImportFromShareableHandle(
    handle: *mut u64,
    os_handle: *mut c_void,
    handle_type: i32,
) -> CUresult {
    guard("cuMemImportFromShareableHandle", || {
        let o = out(handle, "handle")?;
        crate::device::check_init()?;
        if handle_type != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR {
            return Err(fail(
                CUDA_ERROR_NOT_SUPPORTED,
                format!(
                    "shHandleType {handle_type}: only CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR (1)"
                ),
            ));
        }
        let fd = os_handle as usize as i32;
        // The current context's device (the memory must be that GPU's), else device 0.
        let ordinal = current().map(|c| c.dev.ordinal).unwrap_or(0);
        let phys = Arc::new(
            dev(ordinal)?
                .core()?
                .import_physical(fd)
                .map_err(|e| Fail(CUDA_ERROR_INVALID_VALUE, Some(e.message)))?,
        );
        // An imported allocation reports no handle types (NVIDIA's answer).
        *o = with(|s| s.add(phys, device_prop(ordinal), ordinal));
        Ok(())
    })
}

/// Pointer attribute `attr` (`CUpointer_attribute`) of `ptr` when it lies in a mapping made by
/// `cuMemMap`; `None` when it does not.
pub(crate) unsafe fn pointer_attribute(data: *mut c_void, attr: i32, ptr: u64) -> Option<R> {
    let vmm_ctx = crate::context::current().ok();
    with(|s| {
        let (base, m) = s
            .mapped
            .range(..=ptr)
            .next_back()
            .filter(|(v, m)| ptr < **v + m.mapping.size())?;
        let (rstart, r) = s.reserved.range(..=*base).next_back()?;
        let (ctx, rsize) = (r.ctx, r.range.size());
        let host = m.mapping.physical().is_host();
        let size = m.mapping.size();
        Some((|| {
            match attr {
                1 => *(data as *mut *mut c_void) = ctx.handle(),
                2 => *(data as *mut u32) = if host { 1 } else { 2 },
                3 => *(data as *mut u64) = ptr,
                4 if m.cpu.is_some() => *(data as *mut u64) = ptr,
                4 => {
                    return Err(invalid(format!(
                        "{ptr:#x}: the mapping has no CPU access (cuMemSetAccess for the host gives it)"
                    )))
                }
                13 => *(data as *mut u32) = 1,
                7 | 20 => *(data as *mut u64) = m.handle & 0xffff_ffff,
                6 | 8 | 10 | 15 => *(data as *mut u32) = 0,
                9 => *(data as *mut i32) = m.ordinal,
                // The range is the reservation (as NVIDIA's libcuda answers), the mapping the
                // allocation's place in it.
                11 => *(data as *mut u64) = *rstart,
                12 => *(data as *mut usize) = rsize as usize,
                19 => *(data as *mut u64) = *base,
                18 => *(data as *mut usize) = size as usize,
                14 => *(data as *mut u64) = m.handle_types as u64,
                16 => {
                    let own = vmm_ctx.is_some_and(|c| c.dev.ordinal == m.ordinal);
                    *(data as *mut u64) = if m.access && own { 3 } else { 0 }
                }
                17 => *(data as *mut *mut c_void) = std::ptr::null_mut(),
                _ => {
                    return Err(fail(
                        CUDA_ERROR_NOT_SUPPORTED,
                        format!("pointer attribute {attr} is not supported"),
                    ))
                }
            }
            Ok(())
        })())
    })
}

/// The mapping holding `ptr`: (its address, its size).
pub(crate) fn mapping_range(ptr: u64) -> Option<(u64, u64)> {
    with(|s| {
        s.mapping_at(ptr)
            .ok()
            .map(|m| (m.mapping.va(), m.mapping.size()))
    })
}

/// Whether `ptr` lies in a mapping of host memory.
pub(crate) fn is_host_memory(ptr: u64) -> bool {
    with(|s| {
        s.mapping_at(ptr)
            .is_ok_and(|m| m.mapping.physical().is_host())
    })
}

/// `[ptr, ptr + n)` must not run past the end of the mapping holding `ptr` (as NVIDIA's
/// libcuda answers a memset over two allocations mapped side by side: `CUDA_ERROR_INVALID_VALUE`).
pub(crate) fn check_within_mapping(what: &str, ptr: u64, n: u64) -> R {
    match mapping_range(ptr) {
        Some((base, size)) if ptr + n > base + size => Err(invalid(format!(
            "{what}: [{ptr:#x}, +{n}) runs past the end of its mapping ({size} bytes at {base:#x})"
        ))),
        _ => Ok(()),
    }
}
