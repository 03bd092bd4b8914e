//! Registered host memory (`cuMemHostRegister`, `cuMemHostUnregister`).
//!
//! On desktop GPUs the range's pages are pinned and mapped for the GPU at the GPU address equal
//! to their CPU address (libtegragpu's `Device::register_host`), so the host pointer is also the
//! device pointer (`CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM` reads 1 there)
//! and `cuMemHostGetDevicePointer` answers it. Where that mapping cannot be made (Jetson, whose
//! nvmap this library does not ask to map foreign pages; pages another registration already
//! maps; addresses the GPU reserves) the range is only recorded: copies to and from it work as
//! from any host memory (a copy from it stages the bytes at the call, which CUDA forbids
//! changing before the copy completes; a copy into it returns once the bytes are there), and
//! what needs a device address is refused naming the reason: `CU_MEMHOSTREGISTER_DEVICEMAP`,
//! `cuMemHostGetDevicePointer` of the range. `CU_MEMHOSTREGISTER_IOMEMORY` is refused.

use crate::context::{current, Context};
use crate::error::{fail, guard, invalid, R};
use crate::types::*;
use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::ffi::c_void;
use std::sync::Arc;
use tegragpu::core::Buffer;

pub const CU_MEMHOSTREGISTER_PORTABLE: u32 = 1;
pub const CU_MEMHOSTREGISTER_DEVICEMAP: u32 = 2;
pub const CU_MEMHOSTREGISTER_IOMEMORY: u32 = 4;
pub const CU_MEMHOSTREGISTER_READ_ONLY: u32 = 8;

/// One registered range.
#[derive(Clone, Copy)]
pub struct Registered {
    pub start: usize,
    pub len: usize,
    pub flags: u32,
    pub ctx: &'static Context,
    /// The GPU reaches the range at its own addresses (the host pointer is the device pointer).
    pub mapped: bool,
}

static REGISTERED: Mutex<BTreeMap<usize, Registered>> = Mutex::new(BTreeMap::new());
/// The buffers that map registered ranges for the GPU, by start.
static MAPPINGS: Mutex<BTreeMap<usize, Arc<Buffer>>> = Mutex::new(BTreeMap::new());

/// The registered range holding host address `p`.
pub fn find_registered(p: usize) -> Option<Registered> {
    let m = REGISTERED.lock();
    let (_, r) = m.range(..=p).next_back()?;
    (p - r.start < r.len).then_some(*r)
}

/// The buffer that maps the registered range holding host address `p` for the GPU (over the
/// whole pages around the range, at the GPU address equal to the CPU address), the offset of
/// `p` in it and the buffer's size; `None` where `p` is in no range mapped for the GPU.
pub fn find_mapped_buffer(p: usize) -> Option<(Arc<Buffer>, u64, u64)> {
    let r = find_registered(p)?;
    if !r.mapped {
        return None;
    }
    let b = MAPPINGS.lock().get(&r.start)?.clone();
    let off = (p as u64).checked_sub(b.gpu_va())?;
    let size = b.size();
    Some((b, off, size))
}

/// Why a registered range has no device address.
pub const NO_DEVICE_ADDRESS: &str = "this registered host memory is not mapped for the GPU (the library could not map it at its own addresses when it was registered; copies to and from the range go through staging buffers): allocate mapped memory with cuMemHostAlloc instead";

unsafe fn register(p: *mut c_void, bytes: usize, flags: u32) -> R {
    let ctx = current()?;
    if p.is_null() || bytes == 0 {
        return Err(invalid(format!("p {p:?}, bytesize {bytes}")));
    }
    let known = CU_MEMHOSTREGISTER_PORTABLE
        | CU_MEMHOSTREGISTER_DEVICEMAP
        | CU_MEMHOSTREGISTER_IOMEMORY
        | CU_MEMHOSTREGISTER_READ_ONLY;
    if flags & !known != 0 {
        return Err(invalid(format!("flags {flags:#x}")));
    }
    if flags & CU_MEMHOSTREGISTER_IOMEMORY != 0 {
        return Err(fail(
            CUDA_ERROR_NOT_SUPPORTED,
            "CU_MEMHOSTREGISTER_IOMEMORY: I/O memory cannot be registered with this library",
        ));
    }
    let start = p as usize;
    let end = start
        .checked_add(bytes)
        .ok_or_else(|| invalid(format!("{bytes} bytes at {p:?} overflow")))?;
    if let Some((a, _)) = crate::memory::find_host(start) {
        return Err(fail(
            CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED,
            format!(
                "{p:?} is pinned host memory of this library ({} bytes)",
                a.size
            ),
        ));
    }
    let mut m = REGISTERED.lock();
    let overlap = m
        .range(..end)
        .next_back()
        .filter(|(_, r)| r.start + r.len > start);
    if let Some((_, r)) = overlap {
        return Err(fail(
            CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED,
            format!(
                "[{p:?}, +{bytes}) overlaps the registered range [{:#x}, +{})",
                r.start, r.len
            ),
        ));
    }
    // Map it for the GPU at its own addresses where the device can.
    let mapped = match ctx.core.register_host(p as *const u8, bytes as u64) {
        Ok(b) => {
            MAPPINGS.lock().insert(start, Arc::new(b));
            true
        }
        Err(e) if flags & CU_MEMHOSTREGISTER_DEVICEMAP != 0 => {
            return Err(fail(
                CUDA_ERROR_NOT_SUPPORTED,
                format!(
                    "CU_MEMHOSTREGISTER_DEVICEMAP: [{p:?}, +{bytes}) cannot be mapped for the GPU: {}",
                    e.message
                ),
            ));
        }
        Err(e) => {
            tegragpu::log::emit(
                tegragpu::log::Level::Debug,
                "tegragpu::cuda",
                format_args!(
                    "cuMemHostRegister: [{p:?}, +{bytes}) is recorded, not mapped for the GPU: {}",
                    e.message
                ),
            );
            false
        }
    };
    m.insert(
        start,
        Registered {
            start,
            len: bytes,
            flags,
            ctx,
            mapped,
        },
    );
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn cuMemHostRegister_v2(
    p: *mut c_void,
    bytes: usize,
    flags: u32,
) -> CUresult {
    guard("cuMemHostRegister_v2", || register(p, bytes, flags))
}

#[no_mangle]
pub unsafe extern "C" fn cuMemHostRegister(p: *mut c_void, bytes: usize, flags: u32) -> CUresult {
    guard("cuMemHostRegister", || register(p, bytes, flags))
}

#[no_mangle]
pub unsafe extern "C" fn cuMemHostUnregister(p: *mut c_void) -> CUresult {
    guard("cuMemHostUnregister", || {
        current()?;
        let mut m = REGISTERED.lock();
        if m.remove(&(p as usize)).is_none() {
            return Err(fail(
                CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED,
                format!("{p:?} is not the start of a registered range"),
            ));
        }
        // Unmapped and unpinned once the GPU work recorded so far is done (the buffer's drop).
        MAPPINGS.lock().remove(&(p as usize));
        Ok(())
    })
}
