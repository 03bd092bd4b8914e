//! CUDA arrays: `cuArrayCreate_v2`, `cuArrayGetDescriptor_v2`, `cuArrayDestroy`; copies to and
//! from them (`cuMemcpy2D` with `CU_MEMORYTYPE_ARRAY`) and texture objects over them, as the
//! driver-API sample simpleTextureDrv uses them.

use crate::*;
use std::ffi::c_void;
use std::ptr::null_mut;

#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
struct ArrayDesc {
    width: usize,
    height: usize,
    format: u32,
    channels: u32,
}

/// `CUDA_MEMCPY2D`.
#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct Memcpy2D {
    pub(crate) src_x: usize,
    pub(crate) src_y: usize,
    pub(crate) src_type: u32,
    pub(crate) src_host: *const c_void,
    pub(crate) src_device: u64,
    pub(crate) src_array: *mut c_void,
    pub(crate) src_pitch: usize,
    pub(crate) dst_x: usize,
    pub(crate) dst_y: usize,
    pub(crate) dst_type: u32,
    pub(crate) dst_host: *mut c_void,
    pub(crate) dst_device: u64,
    pub(crate) dst_array: *mut c_void,
    pub(crate) dst_pitch: usize,
    pub(crate) width: usize,
    pub(crate) height: usize,
}

impl Default for Memcpy2D {
    fn default() -> Self {
        // SAFETY: all-zero is a valid value of every field (integers and null pointers).
        unsafe { std::mem::zeroed() }
    }
}

#[repr(C)]
#[derive(Clone, Copy)]
struct ResourceDesc {
    res_type: u32,
    res: [u64; 16],
    flags: u32,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct TextureDesc {
    address_mode: [u32; 3],
    filter_mode: u32,
    flags: u32,
    max_anisotropy: u32,
    mipmap_filter_mode: u32,
    mipmap_level_bias: f32,
    min_mipmap_level_clamp: f32,
    max_mipmap_level_clamp: f32,
    border_color: [f32; 4],
    reserved: [i32; 12],
}

const HOST: u32 = 1;
const DEVICE: u32 = 2;
const ARRAY: u32 = 3;
const FLOAT: u32 = 0x20;

fn create(d: &ArrayDesc) -> (CUresult, *mut c_void) {
    let mut a = null_mut();
    let r = cu!(cuArrayCreate_v2(&mut a, d): *mut *mut c_void, *const ArrayDesc);
    (r, a)
}

fn copy2d(p: &Memcpy2D) -> CUresult {
    cu!(cuMemcpy2D_v2(p): *const Memcpy2D)
}

#[test]
fn arrays_copies_and_textures() {
    setup();
    let (w, h) = (40usize, 12usize);
    let desc = ArrayDesc {
        width: w,
        height: h,
        format: FLOAT,
        channels: 1,
    };
    let (r, a) = create(&desc);
    check(r, "cuArrayCreate_v2");
    assert!(!a.is_null());
    let mut back = ArrayDesc {
        width: 0,
        height: 0,
        format: 0,
        channels: 0,
    };
    check(
        cu!(cuArrayGetDescriptor_v2(&mut back, a): *mut ArrayDesc, *mut c_void),
        "cuArrayGetDescriptor_v2",
    );
    assert_eq!(back, desc);

    // Host (packed rows) to the array, then a block of it back to the host and to the device.
    let img: Vec<f32> = (0..w * h).map(|i| ((i * 37) % 991) as f32 + 0.25).collect();
    let up = Memcpy2D {
        src_type: HOST,
        src_host: img.as_ptr() as *const c_void,
        src_pitch: w * 4,
        dst_type: ARRAY,
        dst_array: a,
        width: w * 4,
        height: h,
        ..Default::default()
    };
    check(copy2d(&up), "host to array");
    let (bx, by, bw, bh) = (3usize, 2usize, 17usize, 9usize);
    let mut got = vec![0f32; bw * bh];
    let down = Memcpy2D {
        src_x: bx * 4,
        src_y: by,
        src_type: ARRAY,
        src_array: a,
        dst_type: HOST,
        dst_host: got.as_mut_ptr() as *mut c_void,
        dst_pitch: bw * 4,
        width: bw * 4,
        height: bh,
        ..Default::default()
    };
    check(copy2d(&down), "array to host");
    for y in 0..bh {
        for x in 0..bw {
            assert_eq!(got[y * bw + x], img[(by + y) * w + bx + x], "({x}, {y})");
        }
    }
    let d = alloc(w * h * 4);
    let todev = Memcpy2D {
        src_type: ARRAY,
        src_array: a,
        dst_type: DEVICE,
        dst_device: d,
        dst_pitch: w * 4,
        width: w * 4,
        height: h,
        ..Default::default()
    };
    check(copy2d(&todev), "array to device");
    assert_eq!(dtoh::<f32>(d, w * h), img, "array to device");

    // A texture over the array, clamped at the edges.
    let m = load_fixture("kernels");
    let mut res = ResourceDesc {
        res_type: 0,
        res: [0; 16],
        flags: 0,
    };
    res.res[0] = a as u64;
    let tdesc = TextureDesc {
        address_mode: [1, 1, 1],
        ..Default::default()
    };
    let mut t = 0u64;
    check(
        cu!(cuTexObjectCreate(&mut t, &res, &tdesc, std::ptr::null()): *mut u64, *const ResourceDesc, *const TextureDesc, *const c_void),
        "texture over an array",
    );
    let got = crate::texture::fetch_2d(m, t, w, h);
    let texel = |x: i64, y: i64| {
        let (x, y) = (x.clamp(0, w as i64 - 1), y.clamp(0, h as i64 - 1));
        img[y as usize * w + x as usize]
    };
    for y in 0..h as i64 {
        for x in 0..w as i64 {
            let want = texel(x, y) + 2.0 * texel(x - 3, y + 2);
            assert_eq!(got[y as usize * w + x as usize], want, "({x}, {y})");
        }
    }
    check(cu!(cuTexObjectDestroy(t): u64), "texture destroy");

    // Refusals: bad descriptors, a copy past the array, a destroyed array.
    for bad in [
        ArrayDesc {
            format: 0x7,
            ..desc
        },
        ArrayDesc {
            channels: 3,
            ..desc
        },
        ArrayDesc { width: 0, ..desc },
    ] {
        assert_eq!(create(&bad).0, 1, "{bad:?}");
    }
    assert_eq!(
        cu!(cuArrayCreate_v2(null_mut(), &desc): *mut *mut c_void, *const ArrayDesc),
        1
    );
    let past = Memcpy2D {
        src_y: h - 1,
        height: 2,
        ..down
    };
    assert_eq!(copy2d(&past), 1, "rows past the array");
    let wide = Memcpy2D {
        src_x: 4,
        width: w * 4,
        height: 1,
        ..down
    };
    assert_eq!(copy2d(&wide), 1, "bytes past the row");
    check(cu!(cuArrayDestroy(a): *mut c_void), "cuArrayDestroy");
    assert_eq!(cu!(cuArrayDestroy(a): *mut c_void), 400);
    assert_eq!(copy2d(&up), 400, "copy into a destroyed array");
    assert_eq!(
        cu!(cuArrayGetDescriptor_v2(&mut back, a): *mut ArrayDesc, *mut c_void),
        400
    );

    // A one-dimensional array (Height 0) of two-channel 16-bit integers: host to array and back.
    let d1 = ArrayDesc {
        width: 100,
        height: 0,
        format: 0x02,
        channels: 2,
    };
    let (r, a1) = create(&d1);
    check(r, "1D array");
    let v: Vec<u16> = (0..200u16).map(|i| i.wrapping_mul(331)).collect();
    let mut v2 = vec![0u16; 200];
    check(
        copy2d(&Memcpy2D {
            src_type: HOST,
            src_host: v.as_ptr() as *const c_void,
            dst_type: ARRAY,
            dst_array: a1,
            width: 400,
            height: 1,
            ..Default::default()
        }),
        "host to 1D array",
    );
    check(
        copy2d(&Memcpy2D {
            src_type: ARRAY,
            src_array: a1,
            dst_type: HOST,
            dst_host: v2.as_mut_ptr() as *mut c_void,
            width: 400,
            height: 1,
            ..Default::default()
        }),
        "1D array to host",
    );
    assert_eq!(v2, v);
    check(cu!(cuArrayDestroy(a1): *mut c_void), "destroy 1D");
}

/// `cuMemcpyHtoA`, `AtoH`, `DtoA`, `AtoD`, `AtoA` (and the `Async` forms): byte ranges within
/// an array's width; a range past it is refused.
#[test]
fn copies_to_and_from_arrays_by_byte_offset() {
    setup();
    let one_d = ArrayDesc {
        width: 256,
        height: 0,
        format: FLOAT,
        channels: 1,
    };
    let (r, a) = create(&one_d);
    assert_eq!(r, 0);
    let (_, b) = create(&one_d);
    let src: Vec<u32> = (0..64).map(|i| 0x1000 + i).collect();
    check(
        cu!(cuMemcpyHtoA_v2(a, 128, src.as_ptr() as *const c_void, 256): *mut c_void, usize, *const c_void, usize),
        "cuMemcpyHtoA",
    );
    let mut back = vec![0u32; 64];
    check(
        cu!(cuMemcpyAtoH_v2(back.as_mut_ptr() as *mut c_void, a, 128, 256): *mut c_void, *mut c_void, usize, usize),
        "cuMemcpyAtoH",
    );
    assert_eq!(back, src);
    // Array to array, then to device memory, and device memory back into an array.
    check(
        cu!(cuMemcpyAtoA_v2(b, 0, a, 128, 256): *mut c_void, usize, *mut c_void, usize, usize),
        "cuMemcpyAtoA",
    );
    let d = alloc(1024);
    check(
        cu!(cuMemcpyAtoD_v2(d, b, 0, 256): u64, *mut c_void, usize, usize),
        "cuMemcpyAtoD",
    );
    assert_eq!(dtoh::<u32>(d, 64), src);
    check(
        cu!(cuMemcpyDtoA_v2(a, 512, d, 256): *mut c_void, usize, u64, usize),
        "cuMemcpyDtoA",
    );
    let mut s = null_mut();
    check(
        cu!(cuStreamCreate(&mut s, 1): *mut *mut c_void, u32),
        "stream",
    );
    let mut back2 = vec![0u32; 64];
    check(
        cu!(cuMemcpyAtoHAsync_v2(back2.as_mut_ptr() as *mut c_void, a, 512, 256, s): *mut c_void, *mut c_void, usize, usize, *mut c_void),
        "cuMemcpyAtoHAsync",
    );
    check(cu!(cuStreamSynchronize(s): *mut c_void), "sync");
    assert_eq!(back2, src);
    check(
        cu!(cuMemcpyHtoAAsync_v2(b, 768, src.as_ptr() as *const c_void, 256, s): *mut c_void, usize, *const c_void, usize, *mut c_void),
        "cuMemcpyHtoAAsync",
    );
    check(cu!(cuStreamSynchronize(s): *mut c_void), "sync");
    let mut back3 = vec![0u32; 64];
    check(
        cu!(cuMemcpyAtoH_v2(back3.as_mut_ptr() as *mut c_void, b, 768, 256): *mut c_void, *mut c_void, usize, usize),
        "cuMemcpyAtoH",
    );
    assert_eq!(back3, src);
    // Refusals: past the end, a 2-D array, not an array.
    assert_eq!(
        cu!(cuMemcpyHtoA_v2(a, 900, src.as_ptr() as *const c_void, 256): *mut c_void, usize, *const c_void, usize),
        1,
        "past the 1024 bytes"
    );
    let (_, two_d) = create(&ArrayDesc {
        width: 16,
        height: 16,
        format: FLOAT,
        channels: 1,
    });
    // A 2-D array: within its width (the first row) as a 1-D array; a range past the width is
    // refused (NVIDIA's answers on an H200).
    check(
        cu!(cuMemcpyHtoA_v2(two_d, 0, src.as_ptr() as *const c_void, 64): *mut c_void, usize, *const c_void, usize),
        "cuMemcpyHtoA into the first row of a 2-D array",
    );
    let mut whole = vec![0u32; 256];
    let down = Memcpy2D {
        src_type: ARRAY,
        src_array: two_d,
        dst_type: HOST,
        dst_host: whole.as_mut_ptr() as *mut c_void,
        dst_pitch: 64,
        width: 64,
        height: 16,
        ..Default::default()
    };
    assert_eq!(copy2d(&down), 0);
    assert_eq!(whole[..16], src[..16], "row 0");
    for (off, n) in [(32usize, 128usize), (60, 16), (64, 64)] {
        assert_eq!(
            cu!(cuMemcpyHtoA_v2(two_d, off, src.as_ptr() as *const c_void, n): *mut c_void, usize, *const c_void, usize),
            1,
            "[{off}, +{n}) runs past the 64-byte width"
        );
    }
    assert_eq!(
        cu!(cuMemcpyAtoD_v2(d, d as *mut c_void, 0, 4): u64, *mut c_void, usize, usize),
        400,
        "not an array"
    );
    for x in [a, b, two_d] {
        check(cu!(cuArrayDestroy(x): *mut c_void), "destroy");
    }
    check(cu!(cuStreamDestroy_v2(s): *mut c_void), "destroy stream");
    check(cu!(cuMemFree_v2(d): u64), "free");
}

#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
struct Array3DDesc {
    width: usize,
    height: usize,
    depth: usize,
    format: u32,
    channels: u32,
    flags: u32,
}

/// `cuArray3DCreate_v2` with a depth of 0 (what the CUDA runtime's `cudaMallocArray` calls)
/// makes an array as `cuArrayCreate_v2` does; a depth and the flags of other array kinds are
/// refused, an unknown flag is invalid.
#[test]
fn array3d_create_with_no_depth_makes_a_two_dimensional_array() {
    setup();
    let (w, h) = (24usize, 5usize);
    let d = Array3DDesc {
        width: w,
        height: h,
        depth: 0,
        format: FLOAT,
        channels: 2,
        flags: 0x08, // CUDA_ARRAY3D_TEXTURE_GATHER
    };
    let mut a = null_mut();
    check(
        cu!(cuArray3DCreate_v2(&mut a, &d): *mut *mut c_void, *const Array3DDesc),
        "cuArray3DCreate_v2",
    );
    let mut back = Array3DDesc {
        width: 0,
        height: 0,
        depth: 9,
        format: 0,
        channels: 0,
        flags: 0,
    };
    check(
        cu!(cuArray3DGetDescriptor_v2(&mut back, a): *mut Array3DDesc, *mut c_void),
        "cuArray3DGetDescriptor_v2",
    );
    assert_eq!(back, d);
    let mut two = ArrayDesc {
        width: 0,
        height: 0,
        format: 0,
        channels: 0,
    };
    check(
        cu!(cuArrayGetDescriptor_v2(&mut two, a): *mut ArrayDesc, *mut c_void),
        "cuArrayGetDescriptor_v2",
    );
    assert_eq!((two.width, two.height, two.channels), (w, h, 2));
    // A round trip through the array.
    let img: Vec<f32> = (0..w * h * 2).map(|i| i as f32 * 0.5 - 3.0).collect();
    let up = Memcpy2D {
        src_type: HOST,
        src_host: img.as_ptr() as *const c_void,
        src_pitch: w * 8,
        dst_type: ARRAY,
        dst_array: a,
        width: w * 8,
        height: h,
        ..Default::default()
    };
    check(copy2d(&up), "host to array");
    let mut got = vec![0f32; w * h * 2];
    let down = Memcpy2D {
        src_type: ARRAY,
        src_array: a,
        dst_type: HOST,
        dst_host: got.as_mut_ptr() as *mut c_void,
        dst_pitch: w * 8,
        width: w * 8,
        height: h,
        ..Default::default()
    };
    check(copy2d(&down), "array to host");
    assert_eq!(got, img);
    check(cu!(cuArrayDestroy(a): *mut c_void), "cuArrayDestroy");

    for (depth, flags, want) in [
        (3usize, 0u32, 801), // a 3-D array
        (4, 0x01, 801),      // LAYERED
        (0, 0x02, 801),      // SURFACE_LDST
        (6, 0x04, 801),      // CUBEMAP
        (0, 0x100, 1),       // not a flag
    ] {
        let bad = Array3DDesc { depth, flags, ..d };
        let mut b = null_mut();
        assert_eq!(
            cu!(cuArray3DCreate_v2(&mut b, &bad): *mut *mut c_void, *const Array3DDesc),
            want,
            "depth {depth} flags {flags:#x}"
        );
        assert!(b.is_null());
    }
}
