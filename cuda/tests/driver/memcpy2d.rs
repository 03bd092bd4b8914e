//! Pitched copies: `cuMemcpy2D(Async)`, `cuMemcpy3D(Async)` between device memory, pageable and
//! pinned host memory (arrays: arrays.rs).

use crate::*;
use std::ffi::c_void;
use std::ptr::null_mut;

#[repr(C)]
#[derive(Clone, Copy)]
struct Memcpy2D {
    src_x: usize,
    src_y: usize,
    src_type: u32,
    src_host: *const c_void,
    src_device: u64,
    src_array: *mut c_void,
    src_pitch: usize,
    dst_x: usize,
    dst_y: usize,
    dst_type: u32,
    dst_host: *mut c_void,
    dst_device: u64,
    dst_array: *mut c_void,
    dst_pitch: usize,
    width: usize,
    height: usize,
}

impl Default for Memcpy2D {
    fn default() -> Self {
        // SAFETY: all-zero is a valid value of every field (integers and null pointers).
        unsafe { std::mem::zeroed() }
    }
}

const HOST: u32 = 1;
const DEVICE: u32 = 2;
const ARRAY: u32 = 3;
const UNIFIED: u32 = 4;

/// Byte `i` of buffer `seed`.
fn byte(seed: u32, i: usize) -> u8 {
    ((i as u32).wrapping_mul(2654435761) ^ seed.wrapping_mul(40503)) as u8 ^ (i >> 8) as u8
}

/// The expected destination: `dst` with the block copied from `src` (3D: `depth` slices of
/// `height` rows; `src_rows`/`dst_rows` rows per slice).
#[allow(clippy::too_many_arguments)]
fn model(
    dst: &mut [u8],
    src: &[u8],
    (sx, sy, sz, sp, srows): (usize, usize, usize, usize, usize),
    (dx, dy, dz, dp, drows): (usize, usize, usize, usize, usize),
    w: usize,
    h: usize,
    depth: usize,
) {
    for z in 0..depth {
        for r in 0..h {
            let s = sx + ((sz + z) * srows + sy + r) * sp;
            let d = dx + ((dz + z) * drows + dy + r) * dp;
            dst[d..d + w].copy_from_slice(&src[s..s + w]);
        }
    }
}

fn copy2d(p: &Memcpy2D) -> CUresult {
    cu!(cuMemcpy2D_v2(p): *const Memcpy2D)
}

#[test]
fn pitched_2d_copies_between_every_kind_of_memory() {
    setup();
    let (w, h) = (300usize, 7usize);
    let (sp, dp) = (512usize, 384usize);
    let src_len = sp * (h + 3);
    let dst_len = dp * (h + 4);
    let src_host: Vec<u8> = (0..src_len).map(|i| byte(1, i)).collect();
    let dst_init: Vec<u8> = (0..dst_len).map(|i| byte(2, i)).collect();
    let (sx, sy, dx, dy) = (5usize, 2usize, 60usize, 3usize);
    let mut want = dst_init.clone();
    model(
        &mut want,
        &src_host,
        (sx, sy, 0, sp, 0),
        (dx, dy, 0, dp, 0),
        w,
        h,
        1,
    );
    let d_src = alloc(src_len);
    let d_dst = alloc(dst_len);
    let mut pinned: *mut c_void = null_mut();
    check(
        cu!(cuMemHostAlloc(&mut pinned, dst_len, 0): *mut *mut c_void, usize, u32),
        "pinned",
    );
    let base = Memcpy2D {
        src_x: sx,
        src_y: sy,
        src_pitch: sp,
        dst_x: dx,
        dst_y: dy,
        dst_pitch: dp,
        width: w,
        height: h,
        ..Default::default()
    };
    // Pageable host → device.
    htod(d_src, &src_host);
    htod(d_dst, &dst_init);
    let mut dst_host = dst_init.clone();
    let hd = Memcpy2D {
        src_type: HOST,
        src_host: src_host.as_ptr() as *const c_void,
        dst_type: DEVICE,
        dst_device: d_dst,
        ..base
    };
    check(copy2d(&hd), "host to device");
    assert_eq!(dtoh::<u8>(d_dst, dst_len), want, "host to device");
    // Device → device.
    htod(d_dst, &dst_init);
    let dd = Memcpy2D {
        src_type: DEVICE,
        src_device: d_src,
        dst_type: DEVICE,
        dst_device: d_dst,
        ..base
    };
    check(copy2d(&dd), "device to device");
    assert_eq!(dtoh::<u8>(d_dst, dst_len), want, "device to device");
    // Device → pageable host.
    let dh = Memcpy2D {
        src_type: DEVICE,
        src_device: d_src,
        dst_type: HOST,
        dst_host: dst_host.as_mut_ptr() as *mut c_void,
        ..base
    };
    check(copy2d(&dh), "device to host");
    assert_eq!(dst_host, want, "device to host");
    // Device → pinned host, asynchronously on a stream, and unified addressing for both sides.
    let ps = unsafe { std::slice::from_raw_parts_mut(pinned as *mut u8, dst_len) };
    ps.copy_from_slice(&dst_init);
    let mut s = null_mut();
    check(
        cu!(cuStreamCreate(&mut s, 0): *mut *mut c_void, u32),
        "stream",
    );
    let dp_ = Memcpy2D {
        src_type: UNIFIED,
        src_device: d_src,
        dst_type: UNIFIED,
        dst_device: pinned as u64,
        ..base
    };
    check(
        cu!(cuMemcpy2DAsync_v2(&dp_, s): *const Memcpy2D, *mut c_void),
        "device to pinned, async",
    );
    check(cu!(cuStreamSynchronize(s): *mut c_void), "sync");
    assert_eq!(&ps[..], &want[..], "device to pinned");
    // Pinned host → device.
    htod(d_dst, &dst_init);
    let mut src_pin: *mut c_void = null_mut();
    check(
        cu!(cuMemHostAlloc(&mut src_pin, src_len, 0): *mut *mut c_void, usize, u32),
        "pinned source",
    );
    unsafe { std::slice::from_raw_parts_mut(src_pin as *mut u8, src_len) }
        .copy_from_slice(&src_host);
    let pd = Memcpy2D {
        src_type: HOST,
        src_host: src_pin,
        dst_type: DEVICE,
        dst_device: d_dst,
        ..base
    };
    check(copy2d(&pd), "pinned to device");
    assert_eq!(dtoh::<u8>(d_dst, dst_len), want, "pinned to device");
    // Host → host.
    let mut hh_dst = dst_init.clone();
    let hh = Memcpy2D {
        src_type: HOST,
        src_host: src_host.as_ptr() as *const c_void,
        dst_type: HOST,
        dst_host: hh_dst.as_mut_ptr() as *mut c_void,
        ..base
    };
    check(copy2d(&hh), "host to host");
    assert_eq!(hh_dst, want, "host to host");
    // Unaligned form: the same copy.
    htod(d_dst, &dst_init);
    check(
        cu!(cuMemcpy2DUnaligned_v2(&dd): *const Memcpy2D),
        "unaligned",
    );
    assert_eq!(dtoh::<u8>(d_dst, dst_len), want, "unaligned");
    // Refusals: a handle that is not an array (CUDA_ERROR_INVALID_HANDLE), a pitch smaller than
    // the row, rows past the allocation.
    let arr = Memcpy2D {
        src_type: ARRAY,
        src_array: std::ptr::without_provenance_mut(16),
        ..dd
    };
    assert_eq!(copy2d(&arr), 400);
    let narrow = Memcpy2D {
        src_pitch: 200,
        ..dd
    };
    assert_eq!(copy2d(&narrow), 1);
    let past = Memcpy2D { height: 100, ..dd };
    assert_eq!(copy2d(&past), 1);
    assert_eq!(cu!(cuMemcpy2D_v2(std::ptr::null()): *const Memcpy2D), 1);
    check(cu!(cuStreamDestroy_v2(s): *mut c_void), "destroy");
    for p in [pinned, src_pin] {
        check(cu!(cuMemFreeHost(p): *mut c_void), "free host");
    }
}

#[repr(C)]
#[derive(Clone, Copy)]
struct Memcpy3D {
    src_x: usize,
    src_y: usize,
    src_z: usize,
    src_lod: usize,
    src_type: u32,
    src_host: *const c_void,
    src_device: u64,
    src_array: *mut c_void,
    reserved0: *mut c_void,
    src_pitch: usize,
    src_height: usize,
    dst_x: usize,
    dst_y: usize,
    dst_z: usize,
    dst_lod: usize,
    dst_type: u32,
    dst_host: *mut c_void,
    dst_device: u64,
    dst_array: *mut c_void,
    reserved1: *mut c_void,
    dst_pitch: usize,
    dst_height: usize,
    width: usize,
    height: usize,
    depth: usize,
}

#[test]
fn pitched_3d_copies() {
    setup();
    let (w, h, depth) = (40usize, 5usize, 3usize);
    let (sp, srows, dp, drows) = (64usize, 9usize, 128usize, 6usize);
    let src_len = sp * srows * (depth + 1);
    let dst_len = dp * drows * (depth + 2);
    let src: Vec<u8> = (0..src_len).map(|i| byte(3, i)).collect();
    let init: Vec<u8> = (0..dst_len).map(|i| byte(4, i)).collect();
    let (sx, sy, sz, dx, dy, dz) = (3usize, 2usize, 1usize, 70usize, 1usize, 2usize);
    let mut want = init.clone();
    model(
        &mut want,
        &src,
        (sx, sy, sz, sp, srows),
        (dx, dy, dz, dp, drows),
        w,
        h,
        depth,
    );
    let (d_src, d_dst) = (alloc(src_len), alloc(dst_len));
    htod(d_src, &src);
    htod(d_dst, &init);
    let p = Memcpy3D {
        src_x: sx,
        src_y: sy,
        src_z: sz,
        src_lod: 0,
        src_type: DEVICE,
        src_host: std::ptr::null(),
        src_device: d_src,
        src_array: null_mut(),
        reserved0: null_mut(),
        src_pitch: sp,
        src_height: srows,
        dst_x: dx,
        dst_y: dy,
        dst_z: dz,
        dst_lod: 0,
        dst_type: DEVICE,
        dst_host: null_mut(),
        dst_device: d_dst,
        dst_array: null_mut(),
        reserved1: null_mut(),
        dst_pitch: dp,
        dst_height: drows,
        width: w,
        height: h,
        depth,
    };
    check(
        cu!(cuMemcpy3D_v2(&p): *const Memcpy3D),
        "3D device to device",
    );
    assert_eq!(dtoh::<u8>(d_dst, dst_len), want, "3D device to device");
    // Device → pageable host, asynchronously on the legacy stream, then host → device.
    let mut host = init.clone();
    let to_host = Memcpy3D {
        dst_type: HOST,
        dst_host: host.as_mut_ptr() as *mut c_void,
        dst_device: 0,
        ..p
    };
    check(
        cu!(cuMemcpy3DAsync_v2(&to_host, null_mut()): *const Memcpy3D, *mut c_void),
        "3D device to host",
    );
    check(cu!(cuStreamSynchronize(null_mut()): *mut c_void), "sync");
    assert_eq!(host, want, "3D device to host");
    htod(d_dst, &init);
    let from_host = Memcpy3D {
        src_type: HOST,
        src_host: src.as_ptr() as *const c_void,
        src_device: 0,
        ..p
    };
    check(
        cu!(cuMemcpy3D_v2(&from_host): *const Memcpy3D),
        "3D host to device",
    );
    assert_eq!(dtoh::<u8>(d_dst, dst_len), want, "3D host to device");
    // A slice height smaller than the rows copied is refused.
    let bad = Memcpy3D { src_height: 4, ..p };
    assert_eq!(cu!(cuMemcpy3D_v2(&bad): *const Memcpy3D), 1);
}
