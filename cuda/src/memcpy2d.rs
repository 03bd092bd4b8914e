//! Pitched copies: `cuMemcpy2D`, `cuMemcpy2DUnaligned`, `cuMemcpy3D` and their `Async` forms,
//! between device memory, pinned host memory and any other host memory, in stream order. On a
//! capturing stream they become memcpy nodes (crate::graph).
//! Arrays (`CU_MEMORYTYPE_ARRAY`, crate::arrays) are pitch-linear device memory: their rows are
//! copied as device rows.
//!
//! Rows between memory the stream's queue reaches (device memory, pinned host memory of the
//! stream's device) are copied on the GPU, one copy per row (one for the whole block when both
//! sides are contiguous). Rows of pageable host memory are gathered into one block (or
//! scattered from it) on the CPU; a block of device rows that are not contiguous goes through a
//! temporary device buffer, so each direction is one staged transfer plus GPU row copies.

use crate::context::Context;
use crate::error::{guard, invalid, R};
use crate::memory::{check_range, find_host, find_va};
use crate::stream::{stream_of, Stream};
use crate::transfer::{drain, owner, pinned_va, reaches, read_owned, write_owned};
use crate::types::*;
use std::ffi::c_void;
use tegragpu::core::MemFlags;

/// One side of a copy: where its memory is and how its rows lie.
#[derive(Clone, Copy)]
struct Side {
    mem: Mem,
    /// Address of the first byte copied (x, y and z applied).
    start: u64,
    pitch: u64,
    /// Rows per slice (3D).
    rows_per_slice: u64,
}

#[derive(Clone, Copy)]
enum Mem {
    /// Device memory (of `owner`'s device when this library allocated it).
    Device(Option<&'static Context>),
    /// Pinned host memory of this library at its GPU address (`start` is the host address).
    Pinned(u64),
    /// Any other host memory.
    Host,
}

/// The shape of a copy.
#[derive(Clone, Copy)]
struct Shape {
    width: u64,
    height: u64,
    depth: u64,
}

impl Side {
    /// Offset of row `r` of slice `z` from `start`.
    fn row(&self, z: u64, r: u64) -> u64 {
        (z * self.rows_per_slice + r) * self.pitch
    }

    /// Every row is where the previous one ends: the block is one run of bytes.
    fn contiguous(&self, sh: Shape) -> bool {
        (sh.height <= 1 || self.pitch == sh.width)
            && (sh.depth <= 1 || self.rows_per_slice == sh.height)
    }

    /// Bytes from the first to the end of the last row copied.
    fn span(&self, sh: Shape) -> u64 {
        self.row(sh.depth - 1, sh.height - 1) + sh.width
    }
}

#[allow(clippy::too_many_arguments)]
unsafe fn side(
    what: &str,
    ty: u32,
    host: *const c_void,
    device: CUdeviceptr,
    array: *mut c_void,
    x: u64,
    y: u64,
    z: u64,
    pitch: u64,
    rows_per_slice: u64,
    sh: Shape,
    s: &Stream,
) -> R<Side> {
    // An array: pitch-linear device memory of its context's device (crate::arrays), whose
    // pitch and rows replace the copy's.
    let arr = if ty == CU_MEMORYTYPE_ARRAY {
        let a = crate::arrays::lookup(&format!("{what}Array"), array)?;
        if x + sh.width > a.row_bytes || y + sh.height > a.rows() || z + sh.depth > 1 {
            return Err(invalid(format!(
                "{what}: [{x}, +{}) bytes x [{y}, +{}) rows x [{z}, +{}) slices runs past the array ({} bytes x {} rows)",
                sh.width,
                sh.height,
                sh.depth,
                a.row_bytes,
                a.rows()
            )));
        }
        Some(a)
    } else {
        None
    };
    let (pitch, rows_per_slice) = match &arr {
        Some(a) => (a.pitch, a.rows()),
        None => (pitch, rows_per_slice),
    };
    let base = match ty {
        CU_MEMORYTYPE_HOST => host as u64,
        CU_MEMORYTYPE_DEVICE | CU_MEMORYTYPE_UNIFIED => device,
        CU_MEMORYTYPE_ARRAY => arr.as_ref().map_or(0, |a| a.buf.gpu_va()),
        t => {
            return Err(invalid(format!(
                "{what}MemoryType {t} is not a memory type"
            )))
        }
    };
    if base == 0 {
        return Err(invalid(format!("{what}: the pointer is NULL")));
    }
    if (sh.height > 1 || sh.depth > 1) && pitch < x + sh.width {
        return Err(invalid(format!(
            "{what}Pitch {pitch} is less than {what}XInBytes {x} + WidthInBytes {}",
            sh.width
        )));
    }
    if sh.depth > 1 && rows_per_slice < y + sh.height {
        return Err(invalid(format!(
            "{what}Height {rows_per_slice} is less than {what}Y {y} + Height {}",
            sh.height
        )));
    }
    let start = base + x + (z * rows_per_slice + y) * pitch;
    let mut sd = Side {
        mem: Mem::Host,
        start,
        pitch,
        rows_per_slice,
    };
    let span = sd.span(sh);
    sd.mem = match ty {
        CU_MEMORYTYPE_HOST => match pinned_va(s, start as usize, span) {
            Some(va) => Mem::Pinned(va),
            None => Mem::Host,
        },
        CU_MEMORYTYPE_DEVICE => Mem::Device(owner(&check_range(what, start, span)?)),
        CU_MEMORYTYPE_ARRAY => Mem::Device(arr.map(|a| a.ctx)),
        // Unified: the address says which.
        _ => {
            if find_va(start).is_some() {
                Mem::Device(owner(&check_range(what, start, span)?))
            } else if find_host(start as usize).is_some() {
                match pinned_va(s, start as usize, span) {
                    Some(va) => Mem::Pinned(va),
                    None => Mem::Host,
                }
            } else {
                Mem::Host
            }
        }
    };
    Ok(sd)
}

/// The GPU address of `side`'s first byte, where the stream's queue reaches it.
fn gpu_start(s: &Stream, side: &Side) -> Option<u64> {
    match side.mem {
        Mem::Device(o) if reaches(s, o) => Some(side.start),
        Mem::Pinned(va) => Some(va),
        _ => None,
    }
}

/// Record GPU copies of every row from `src` to `dst` (both GPU addresses, with their sides'
/// layouts).
fn gpu_rows(s: &'static Stream, dst: (u64, &Side), src: (u64, &Side), sh: Shape) -> R {
    if dst.1.contiguous(sh) && src.1.contiguous(sh) {
        let n = sh.width * sh.height * sh.depth;
        return s.record(|q| q.copy_va(dst.0, src.0, n));
    }
    s.record(|q| {
        for z in 0..sh.depth {
            for r in 0..sh.height {
                q.copy_va(dst.0 + dst.1.row(z, r), src.0 + src.1.row(z, r), sh.width)?;
            }
        }
        Ok(())
    })
}

/// A packed layout (`width` bytes per row, rows after rows).
fn packed(sh: Shape) -> Side {
    Side {
        mem: Mem::Host,
        start: 0,
        pitch: sh.width,
        rows_per_slice: sh.height,
    }
}

/// The rows of `src` (device memory or pinned host memory the queue does not reach, or
/// pageable host memory) packed into host memory.
unsafe fn gather(s: &'static Stream, src: &Side, sh: Shape) -> R<Vec<u8>> {
    let total = (sh.width * sh.height * sh.depth) as usize;
    let mut out = vec![0u8; total];
    match src.mem {
        Mem::Host | Mem::Pinned(_) => {
            // The stream's earlier work may write these host bytes (pinned memory).
            if matches!(src.mem, Mem::Pinned(_)) {
                drain(s)?;
            }
            let p = packed(sh);
            for z in 0..sh.depth {
                for r in 0..sh.height {
                    std::ptr::copy_nonoverlapping(
                        (src.start + src.row(z, r)) as *const u8,
                        out.as_mut_ptr().add(p.row(z, r) as usize),
                        sh.width as usize,
                    );
                }
            }
        }
        Mem::Device(o) => {
            if src.contiguous(sh) || !reaches(s, o) {
                if src.contiguous(sh) {
                    read_owned(s, out.as_mut_ptr(), src.start, o, total as u64, true)?;
                } else {
                    // Another device's rows: one read per row, through that device.
                    let p = packed(sh);
                    for z in 0..sh.depth {
                        for r in 0..sh.height {
                            read_owned(
                                s,
                                out.as_mut_ptr().add(p.row(z, r) as usize),
                                src.start + src.row(z, r),
                                o,
                                sh.width,
                                true,
                            )?;
                        }
                    }
                }
            } else {
                // Rows packed on the GPU into a temporary buffer, read in one transfer.
                let tmp = s.ctx.core.alloc(total as u64, MemFlags::default())?;
                let p = packed(sh);
                gpu_rows(s, (tmp.gpu_va(), &p), (src.start, src), sh)?;
                read_owned(s, out.as_mut_ptr(), tmp.gpu_va(), None, total as u64, true)?;
            }
        }
    }
    Ok(out)
}

/// Write `data` (packed rows) to the rows of `dst`.
unsafe fn scatter(s: &'static Stream, dst: &Side, data: &[u8], sh: Shape) -> R {
    let p = packed(sh);
    match dst.mem {
        Mem::Host | Mem::Pinned(_) => {
            if matches!(dst.mem, Mem::Pinned(_)) {
                drain(s)?;
            }
            for z in 0..sh.depth {
                for r in 0..sh.height {
                    std::ptr::copy_nonoverlapping(
                        data.as_ptr().add(p.row(z, r) as usize),
                        (dst.start + dst.row(z, r)) as *mut u8,
                        sh.width as usize,
                    );
                }
            }
            Ok(())
        }
        Mem::Device(o) => {
            if dst.contiguous(sh) {
                return write_owned(s, dst.start, o, data.as_ptr(), data.len() as u64, false);
            }
            if !reaches(s, o) {
                for z in 0..sh.depth {
                    for r in 0..sh.height {
                        write_owned(
                            s,
                            dst.start + dst.row(z, r),
                            o,
                            data.as_ptr().add(p.row(z, r) as usize),
                            sh.width,
                            false,
                        )?;
                    }
                }
                return Ok(());
            }
            // One staged transfer into a temporary buffer, then GPU row copies; libtegragpu
            // keeps the buffer's memory until the queue has passed the copies.
            let tmp = s.ctx.core.alloc(data.len() as u64, MemFlags::default())?;
            write_owned(
                s,
                tmp.gpu_va(),
                None,
                data.as_ptr(),
                data.len() as u64,
                false,
            )?;
            gpu_rows(s, (dst.start, dst), (tmp.gpu_va(), &p), sh)
        }
    }
}

/// Copy the block `sh` from `src` to `dst` on stream `s`; `sync`: return once complete.
unsafe fn copy_block(s: &'static Stream, dst: Side, src: Side, sh: Shape, sync: bool) -> R {
    if sh.width == 0 || sh.height == 0 || sh.depth == 0 {
        return Ok(());
    }
    match (gpu_start(s, &dst), gpu_start(s, &src)) {
        (Some(d), Some(sv)) => gpu_rows(s, (d, &dst), (sv, &src), sh)?,
        _ => {
            let both_host =
                !matches!(dst.mem, Mem::Device(_)) && !matches!(src.mem, Mem::Device(_));
            if both_host {
                drain(s)?;
            }
            let data = gather(s, &src, sh)?;
            scatter(s, &dst, &data, sh)?;
        }
    }
    if sync {
        s.synchronize()?;
    }
    Ok(())
}

unsafe fn memcpy2d(p: *const CUDA_MEMCPY2D, h: *mut c_void, ptds: bool, sync: bool) -> R {
    let p = p.as_ref().ok_or_else(|| invalid("pCopy is NULL"))?;
    let s = stream_of(h, ptds)?;
    let sh = Shape {
        width: p.WidthInBytes as u64,
        height: p.Height as u64,
        depth: 1,
    };
    if sh.width == 0 || sh.height == 0 {
        return Ok(());
    }
    if s.is_capturing() {
        // A memcpy node, as the same copy made with cuMemcpy3DAsync.
        // SAFETY: CUDA_MEMCPY3D is plain data; all zeros is a valid value.
        let mut q: CUDA_MEMCPY3D = std::mem::zeroed();
        (q.srcXInBytes, q.srcY, q.srcMemoryType) = (p.srcXInBytes, p.srcY, p.srcMemoryType);
        (q.srcHost, q.srcDevice, q.srcArray) = (p.srcHost, p.srcDevice, p.srcArray);
        (q.srcPitch, q.srcHeight) = (p.srcPitch, p.Height);
        (q.dstXInBytes, q.dstY, q.dstMemoryType) = (p.dstXInBytes, p.dstY, p.dstMemoryType);
        (q.dstHost, q.dstDevice, q.dstArray) = (p.dstHost, p.dstDevice, p.dstArray);
        (q.dstPitch, q.dstHeight) = (p.dstPitch, p.Height);
        (q.WidthInBytes, q.Height, q.Depth) = (p.WidthInBytes, p.Height, 1);
        return crate::capture::add(s, || crate::graph::copy_kind(&q));
    }
    let src = side(
        "src",
        p.srcMemoryType,
        p.srcHost,
        p.srcDevice,
        p.srcArray,
        p.srcXInBytes as u64,
        p.srcY as u64,
        0,
        p.srcPitch as u64,
        sh.height,
        sh,
        s,
    )?;
    let dst = side(
        "dst",
        p.dstMemoryType,
        p.dstHost,
        p.dstDevice,
        p.dstArray,
        p.dstXInBytes as u64,
        p.dstY as u64,
        0,
        p.dstPitch as u64,
        sh.height,
        sh,
        s,
    )?;
    copy_block(s, dst, src, sh, sync)
}

unsafe fn memcpy3d(p: *const CUDA_MEMCPY3D, h: *mut c_void, ptds: bool, sync: bool) -> R {
    let p = p.as_ref().ok_or_else(|| invalid("pCopy is NULL"))?;
    if p.srcLOD != 0 || p.dstLOD != 0 {
        return Err(invalid("srcLOD and dstLOD must be 0"));
    }
    let s = stream_of(h, ptds)?;
    let sh = Shape {
        width: p.WidthInBytes as u64,
        height: p.Height as u64,
        depth: p.Depth as u64,
    };
    if sh.width == 0 || sh.height == 0 || sh.depth == 0 {
        return Ok(());
    }
    if s.is_capturing() {
        return crate::capture::add(s, || crate::graph::copy_kind(p));
    }
    let src = side(
        "src",
        p.srcMemoryType,
        p.srcHost,
        p.srcDevice,
        p.srcArray,
        p.srcXInBytes as u64,
        p.srcY as u64,
        p.srcZ as u64,
        p.srcPitch as u64,
        p.srcHeight as u64,
        sh,
        s,
    )?;
    let dst = side(
        "dst",
        p.dstMemoryType,
        p.dstHost,
        p.dstDevice,
        p.dstArray,
        p.dstXInBytes as u64,
        p.dstY as u64,
        p.dstZ as u64,
        p.dstPitch as u64,
        p.dstHeight as u64,
        sh,
        s,
    )?;
    copy_block(s, dst, src, sh, sync)
}

macro_rules! entry2d {
    ($name:ident, $ptds:expr) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(p: *const CUDA_MEMCPY2D) -> CUresult {
            guard(stringify!($name), || {
                memcpy2d(p, std::ptr::null_mut(), $ptds, true)
            })
        }
    };
}
macro_rules! entry2d_async {
    ($name:ident, $ptds:expr) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(p: *const CUDA_MEMCPY2D, h: *mut c_void) -> CUresult {
            guard(stringify!($name), || memcpy2d(p, h, $ptds, false))
        }
    };
}
macro_rules! entry3d {
    ($name:ident, $ptds:expr) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(p: *const CUDA_MEMCPY3D) -> CUresult {
            guard(stringify!($name), || {
                memcpy3d(p, std::ptr::null_mut(), $ptds, true)
            })
        }
    };
}
macro_rules! entry3d_async {
    ($name:ident, $ptds:expr) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(p: *const CUDA_MEMCPY3D, h: *mut c_void) -> CUresult {
            guard(stringify!($name), || memcpy3d(p, h, $ptds, false))
        }
    };
}

// The names below are listed for build.rs (it finds implemented exports by `extern "C" fn`).
// extern "C" fn cuMemcpy2D_v2 extern "C" fn cuMemcpy2D_v2_ptds
// extern "C" fn cuMemcpy2DUnaligned_v2 extern "C" fn cuMemcpy2DUnaligned_v2_ptds
// extern "C" fn cuMemcpy2DAsync_v2 extern "C" fn cuMemcpy2DAsync_v2_ptsz
// extern "C" fn cuMemcpy3D_v2 extern "C" fn cuMemcpy3D_v2_ptds
// extern "C" fn cuMemcpy3DAsync_v2 extern "C" fn cuMemcpy3DAsync_v2_ptsz
entry2d!(cuMemcpy2D_v2, false);
entry2d!(cuMemcpy2D_v2_ptds, true);
entry2d!(cuMemcpy2DUnaligned_v2, false);
entry2d!(cuMemcpy2DUnaligned_v2_ptds, true);
entry2d_async!(cuMemcpy2DAsync_v2, false);
entry2d_async!(cuMemcpy2DAsync_v2_ptsz, true);
entry3d!(cuMemcpy3D_v2, false);
entry3d!(cuMemcpy3D_v2_ptds, true);
entry3d_async!(cuMemcpy3DAsync_v2, false);
entry3d_async!(cuMemcpy3DAsync_v2_ptsz, true);
