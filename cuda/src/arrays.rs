//! CUDA arrays of one and two dimensions (`cuArrayCreate_v2`, `cuArrayGetDescriptor_v2`,
//! `cuArray3DCreate_v2` and `cuArray3DGetDescriptor_v2` with a depth of 0, which the CUDA
//! runtime's `cudaMallocArray` calls, `cuArrayDestroy`), as the samples use them: filled with `cuMemcpy2D` /
//! `cuMemcpy3D` (`CU_MEMORYTYPE_ARRAY`) and read through texture objects
//! (`CU_RESOURCE_TYPE_ARRAY`).
//!
//! An array's layout is opaque to programs; here it is pitch-linear device memory of the
//! context's device (rows of `Width * NumChannels * element size` bytes at a pitch of a multiple
//! of 512 bytes, as `cuMemAllocPitch`), so copies are row copies on the stream's queue and a
//! texture over it is a pitch-2D texture. Arrays are not device pointers: `find_va` does not see
//! them. Layered, cubemap, surface and 3D arrays (a depth, or those `cuArray3DCreate` flags) are
//! not supported: `CUDA_ERROR_NOT_SUPPORTED`, naming what.

use crate::context::{current, Context};
use crate::device::out;
use crate::error::{fail, guard, invalid, R};
use crate::stream::{stream_of, Stream};
use crate::types::*;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::ffi::c_void;
use std::ptr::null_mut;
use std::sync::Arc;
use tegragpu::core::{Buffer, MemFlags};

/// `CUDA_ARRAY_DESCRIPTOR_v2`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ArrayDescriptor {
    pub width: usize,
    pub height: usize,
    pub format: u32,
    pub channels: u32,
}

/// One array of this library.
#[derive(Clone)]
pub struct Array {
    pub buf: Arc<Buffer>,
    pub ctx: &'static Context,
    /// The descriptor it was created with (height 0: one-dimensional).
    pub desc: ArrayDescriptor,
    /// Bytes of one row of elements.
    pub row_bytes: u64,
    /// Bytes from one row to the next.
    pub pitch: u64,
    /// `CUDA_ARRAY3D_*` flags it was created with (`cuArray3DCreate`).
    pub flags: u32,
}

impl Array {
    /// Rows of the array (1 for a one-dimensional array).
    pub fn rows(&self) -> u64 {
        (self.desc.height as u64).max(1)
    }
}

/// The live arrays, by handle (the address of a heap cell that identifies the array).
static ARRAYS: Mutex<Option<HashMap<usize, Array>>> = Mutex::new(None);

/// Bytes of one channel of `CUarray_format` `f`.
pub fn format_bytes(f: u32) -> Option<u64> {
    Some(match f {
        0x01 | 0x08 => 1,        // UNSIGNED_INT8, SIGNED_INT8
        0x02 | 0x09 | 0x10 => 2, // UNSIGNED_INT16, SIGNED_INT16, HALF
        0x03 | 0x0a | 0x20 => 4, // UNSIGNED_INT32, SIGNED_INT32, FLOAT
        _ => return None,
    })
}

/// The array `h` names, if it is a live array of this library.
pub fn find(h: *mut c_void) -> Option<Array> {
    ARRAYS.lock().as_ref()?.get(&(h as usize)).cloned()
}

/// The array `h` names, or `CUDA_ERROR_INVALID_HANDLE` naming `what`.
pub fn lookup(what: &str, h: *mut c_void) -> R<Array> {
    find(h).ok_or_else(|| {
        fail(
            CUDA_ERROR_INVALID_HANDLE,
            format!("{what} {h:?} is not an array of this library"),
        )
    })
}

unsafe fn create(ph: *mut *mut c_void, d: *const ArrayDescriptor) -> R {
    let d = *d
        .as_ref()
        .ok_or_else(|| invalid("pAllocateArray is NULL"))?;
    create_with(ph, d, 0)
}

unsafe fn create_with(ph: *mut *mut c_void, d: ArrayDescriptor, flags: u32) -> R {
    let o = out(ph, "pHandle")?;
    let c = current()?;
    let elem = format_bytes(d.format).ok_or_else(|| {
        invalid(format!(
            "Format {:#x} is not a CUarray_format this library knows",
            d.format
        ))
    })?;
    if !matches!(d.channels, 1 | 2 | 4) {
        return Err(invalid(format!(
            "NumChannels {}: must be 1, 2 or 4",
            d.channels
        )));
    }
    if d.width == 0 {
        return Err(invalid("Width is 0"));
    }
    let row_bytes = (d.width as u64)
        .checked_mul(elem * u64::from(d.channels))
        .ok_or_else(|| invalid(format!("Width {} is too large", d.width)))?;
    let pitch = row_bytes.div_ceil(512) * 512;
    let size = pitch.checked_mul((d.height as u64).max(1)).ok_or_else(|| {
        invalid(format!(
            "Width {} x Height {} is too large",
            d.width, d.height
        ))
    })?;
    let buf = Arc::new(c.core.alloc(size, MemFlags::default())?);
    let a = Array {
        buf,
        ctx: c,
        desc: d,
        row_bytes,
        pitch,
        flags,
    };
    // The handle is the address of a heap cell that lives as long as the array.
    let h = Box::into_raw(Box::new(0u8)) as usize;
    ARRAYS.lock().get_or_insert_with(HashMap::new).insert(h, a);
    *o = h as *mut c_void;
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn cuArrayCreate_v2(
    ph: *mut *mut c_void,
    desc: *const ArrayDescriptor,
) -> CUresult {
    guard("cuArrayCreate_v2", || create(ph, desc))
}

#[no_mangle]
pub unsafe extern "C" fn cuArrayGetDescriptor_v2(
    pdesc: *mut ArrayDescriptor,
    h: *mut c_void,
) -> CUresult {
    guard("cuArrayGetDescriptor_v2", || {
        let o = out(pdesc, "pArrayDescriptor")?;
        *o = lookup("hArray", h)?.desc;
        Ok(())
    })
}

/// `CUDA_ARRAY3D_DESCRIPTOR_v2`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct Array3DDescriptor {
    pub width: usize,
    pub height: usize,
    pub depth: usize,
    pub format: u32,
    pub channels: u32,
    pub flags: u32,
}

/// `CUDA_ARRAY3D_TEXTURE_GATHER`: the array may be read with texture gather (a 2D array).
const CUDA_ARRAY3D_TEXTURE_GATHER: u32 = 0x08;

/// `cuArray3DCreate` with a depth of 0: a one- or two-dimensional array as `cuArrayCreate`
/// makes (the CUDA runtime's `cudaMallocArray` comes here). A depth, and the layered, surface,
/// cubemap, depth-texture, color-attachment, sparse and deferred-mapping flags, are refused
/// with `CUDA_ERROR_NOT_SUPPORTED`.
#[no_mangle]
pub unsafe extern "C" fn cuArray3DCreate_v2(
    ph: *mut *mut c_void,
    desc: *const Array3DDescriptor,
) -> CUresult {
    guard("cuArray3DCreate_v2", || {
        let d = *desc
            .as_ref()
            .ok_or_else(|| invalid("pAllocateArray is NULL"))?;
        if d.flags & !0xff != 0 {
            return Err(invalid(format!("Flags {:#x}", d.flags)));
        }
        let unsupported = d.flags & !CUDA_ARRAY3D_TEXTURE_GATHER;
        if unsupported != 0 {
            const NAMES: [&str; 8] = [
                "LAYERED",
                "SURFACE_LDST",
                "CUBEMAP",
                "TEXTURE_GATHER",
                "DEPTH_TEXTURE",
                "COLOR_ATTACHMENT",
                "SPARSE",
                "DEFERRED_MAPPING",
            ];
            let names: Vec<String> = (0..8)
                .filter(|b| unsupported & (1 << b) != 0)
                .map(|b| format!("CUDA_ARRAY3D_{}", NAMES[b]))
                .collect();
            return Err(fail(
                CUDA_ERROR_NOT_SUPPORTED,
                format!(
                    "Flags {:#x} ({}): this library's arrays are one- and two-dimensional arrays for texture reads",
                    d.flags,
                    names.join(" | ")
                ),
            ));
        }
        if d.depth != 0 {
            return Err(fail(
                CUDA_ERROR_NOT_SUPPORTED,
                format!(
                    "Depth {}: three-dimensional arrays are not supported (Width {}, Height {})",
                    d.depth, d.width, d.height
                ),
            ));
        }
        if d.flags & CUDA_ARRAY3D_TEXTURE_GATHER != 0 && d.height == 0 {
            return Err(invalid(
                "CUDA_ARRAY3D_TEXTURE_GATHER needs a two-dimensional array (Height 0)",
            ));
        }
        let two = ArrayDescriptor {
            width: d.width,
            height: d.height,
            format: d.format,
            channels: d.channels,
        };
        create_with(ph, two, d.flags)
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuArray3DGetDescriptor_v2(
    pdesc: *mut Array3DDescriptor,
    h: *mut c_void,
) -> CUresult {
    guard("cuArray3DGetDescriptor_v2", || {
        let o = out(pdesc, "pArrayDescriptor")?;
        let a = lookup("hArray", h)?;
        *o = Array3DDescriptor {
            width: a.desc.width,
            height: a.desc.height,
            depth: 0,
            format: a.desc.format,
            channels: a.desc.channels,
            flags: a.flags,
        };
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuArrayDestroy(h: *mut c_void) -> CUresult {
    guard("cuArrayDestroy", || {
        let a = ARRAYS
            .lock()
            .as_mut()
            .and_then(|m| m.remove(&(h as usize)))
            .ok_or_else(|| {
                fail(
                    CUDA_ERROR_INVALID_HANDLE,
                    format!("hArray {h:?} is not an array of this library"),
                )
            })?;
        // Copies and texture reads recorded before may still use the memory: wait for them
        // (CUDA's cuArrayDestroy synchronizes the same way).
        let r = a.ctx.synchronize();
        drop(Box::from_raw(h as *mut u8));
        drop(a);
        r
    })
}

// --- Copies to and from arrays by byte offset (within the width) --------------------------

/// The GPU address of bytes `[offset, offset + n)` of array `h`, and the array's context. As
/// NVIDIA's: the range lies within the array's width (its first row); a range past it is
/// `CUDA_ERROR_INVALID_VALUE`, also in a two-dimensional array.
fn array_range(what: &str, h: *mut c_void, offset: usize, n: usize) -> R<(u64, &'static Context)> {
    let a = lookup(what, h)?;
    let (off, n) = (offset as u64, n as u64);
    if off.checked_add(n).is_none_or(|e| e > a.row_bytes) {
        return Err(invalid(format!(
            "{what}: bytes [{off}, {off} + {n}) lie outside the array's {}-byte width (these copies stay within it)",
            a.row_bytes
        )));
    }
    Ok((a.buf.gpu_va() + off, a.ctx))
}

unsafe fn htoa(
    dst: *mut c_void,
    off: usize,
    src: *const c_void,
    n: usize,
    s: &'static Stream,
    sync: bool,
) -> R {
    let (va, ctx) = array_range("dstArray", dst, off, n)?;
    crate::transfer::write_owned(s, va, Some(ctx), src as *const u8, n as u64, sync)
}

unsafe fn atoh(
    dst: *mut c_void,
    src: *mut c_void,
    off: usize,
    n: usize,
    s: &'static Stream,
    sync: bool,
) -> R {
    let (va, ctx) = array_range("srcArray", src, off, n)?;
    crate::transfer::read_owned(s, dst as *mut u8, va, Some(ctx), n as u64, sync)
}

/// `n` bytes from `src` to `dst` (device memory or arrays), in stream order.
fn dev_copy(
    s: &'static Stream,
    n: usize,
    dst: (u64, &'static Context),
    src: (u64, &'static Context),
) -> R {
    crate::transfer::copy_d2d_between(s, dst.0, dst.1, src.0, src.1, n as u64, true)
}

unsafe fn dtoa(dst: *mut c_void, off: usize, src: CUdeviceptr, n: usize, ptds: bool) -> R {
    let s = stream_of(null_mut(), ptds)?;
    dev_copy(s, n, array_range("dstArray", dst, off, n)?, (src, s.ctx))
}

unsafe fn atod(dst: CUdeviceptr, src: *mut c_void, off: usize, n: usize, ptds: bool) -> R {
    let s = stream_of(null_mut(), ptds)?;
    dev_copy(s, n, (dst, s.ctx), array_range("srcArray", src, off, n)?)
}

unsafe fn atoa(
    dst: *mut c_void,
    doff: usize,
    src: *mut c_void,
    soff: usize,
    n: usize,
    ptds: bool,
) -> R {
    let s = stream_of(null_mut(), ptds)?;
    dev_copy(
        s,
        n,
        array_range("dstArray", dst, doff, n)?,
        array_range("srcArray", src, soff, n)?,
    )
}

/// An exported copy: its parameters and the call it makes.
macro_rules! array_copy {
    ($name:ident ($($arg:ident: $t:ty),*) => $body:expr) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name($($arg: $t),*) -> CUresult {
            guard(stringify!($name), || $body)
        }
    };
}

// The names below are listed for build.rs (it finds implemented exports by `extern "C" fn`).
// extern "C" fn cuMemcpyHtoA_v2 extern "C" fn cuMemcpyHtoA_v2_ptds
// extern "C" fn cuMemcpyHtoAAsync_v2 extern "C" fn cuMemcpyHtoAAsync_v2_ptsz
// extern "C" fn cuMemcpyAtoH_v2 extern "C" fn cuMemcpyAtoH_v2_ptds
// extern "C" fn cuMemcpyAtoHAsync_v2 extern "C" fn cuMemcpyAtoHAsync_v2_ptsz
// extern "C" fn cuMemcpyDtoA_v2 extern "C" fn cuMemcpyDtoA_v2_ptds
// extern "C" fn cuMemcpyAtoD_v2 extern "C" fn cuMemcpyAtoD_v2_ptds
// extern "C" fn cuMemcpyAtoA_v2 extern "C" fn cuMemcpyAtoA_v2_ptds
array_copy!(cuMemcpyHtoA_v2(dst: *mut c_void, off: usize, src: *const c_void, n: usize)
    => htoa(dst, off, src, n, stream_of(null_mut(), false)?, true));
array_copy!(cuMemcpyHtoA_v2_ptds(dst: *mut c_void, off: usize, src: *const c_void, n: usize)
    => htoa(dst, off, src, n, stream_of(null_mut(), true)?, true));
array_copy!(cuMemcpyHtoAAsync_v2(dst: *mut c_void, off: usize, src: *const c_void, n: usize, h: *mut c_void)
    => htoa(dst, off, src, n, stream_of(h, false)?, false));
array_copy!(cuMemcpyHtoAAsync_v2_ptsz(dst: *mut c_void, off: usize, src: *const c_void, n: usize, h: *mut c_void)
    => htoa(dst, off, src, n, stream_of(h, true)?, false));
array_copy!(cuMemcpyAtoH_v2(dst: *mut c_void, src: *mut c_void, off: usize, n: usize)
    => atoh(dst, src, off, n, stream_of(null_mut(), false)?, true));
array_copy!(cuMemcpyAtoH_v2_ptds(dst: *mut c_void, src: *mut c_void, off: usize, n: usize)
    => atoh(dst, src, off, n, stream_of(null_mut(), true)?, true));
array_copy!(cuMemcpyAtoHAsync_v2(dst: *mut c_void, src: *mut c_void, off: usize, n: usize, h: *mut c_void)
    => atoh(dst, src, off, n, stream_of(h, false)?, false));
array_copy!(cuMemcpyAtoHAsync_v2_ptsz(dst: *mut c_void, src: *mut c_void, off: usize, n: usize, h: *mut c_void)
    => atoh(dst, src, off, n, stream_of(h, true)?, false));
array_copy!(cuMemcpyDtoA_v2(dst: *mut c_void, off: usize, src: CUdeviceptr, n: usize)
    => dtoa(dst, off, src, n, false));
array_copy!(cuMemcpyDtoA_v2_ptds(dst: *mut c_void, off: usize, src: CUdeviceptr, n: usize)
    => dtoa(dst, off, src, n, true));
array_copy!(cuMemcpyAtoD_v2(dst: CUdeviceptr, src: *mut c_void, off: usize, n: usize)
    => atod(dst, src, off, n, false));
array_copy!(cuMemcpyAtoD_v2_ptds(dst: CUdeviceptr, src: *mut c_void, off: usize, n: usize)
    => atod(dst, src, off, n, true));
array_copy!(cuMemcpyAtoA_v2(dst: *mut c_void, doff: usize, src: *mut c_void, soff: usize, n: usize)
    => atoa(dst, doff, src, soff, n, false));
array_copy!(cuMemcpyAtoA_v2_ptds(dst: *mut c_void, doff: usize, src: *mut c_void, soff: usize, n: usize)
    => atoa(dst, doff, src, soff, n, true));
