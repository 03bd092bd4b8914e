//! Texture objects over linear and pitch-2D device memory.

use crate::*;
use std::ffi::c_void;
use std::ptr::null_mut;

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

const FLOAT: u64 = 0x20;

fn create(res: &ResourceDesc, desc: &TextureDesc) -> (CUresult, u64) {
    let mut t = 0u64;
    let r = cu!(cuTexObjectCreate(&mut t, res, desc, std::ptr::null()): *mut u64, *const ResourceDesc, *const TextureDesc, *const c_void);
    (r, t)
}

/// The fixture kernel `tex_fetch_2d` over texture `t` of `w` x `h` texels (one block per row):
/// its output, texel (x, y) + 2 × texel (x - 3, y + 2) per element.
pub(crate) fn fetch_2d(m: *mut c_void, t: u64, w: usize, h: usize) -> Vec<f32> {
    let out = alloc(w * h * 4);
    let k = function(m, "tex_fetch_2d");
    let l: Launch = f("cuLaunchKernel");
    let (mut th, mut op, mut ww, mut hh) = (t, out, w as u32, h as u32);
    let mut args = [ptr(&mut th), ptr(&mut op), ptr(&mut ww), ptr(&mut hh)];
    check(
        unsafe {
            l(
                k,
                1,
                h as u32,
                1,
                64,
                1,
                1,
                0,
                null_mut(),
                args.as_mut_ptr(),
                null_mut(),
            )
        },
        "tex_fetch_2d",
    );
    dtoh::<f32>(out, w * h)
}

#[test]
fn texture_objects_over_linear_and_pitched_memory() {
    setup();
    let m = load_fixture("kernels");
    let n = 256usize;
    let data: Vec<f32> = (0..n).map(|i| i as f32 * 0.5 + 1.0).collect();
    let d = alloc(n * 4);
    htod(d, &data);
    let mut res = ResourceDesc {
        res_type: 2,
        res: [0; 16],
        flags: 0,
    };
    res.res[0] = d;
    res.res[1] = FLOAT | (1u64 << 32);
    res.res[2] = (n * 4) as u64;
    let desc = TextureDesc::default();
    let (r, t1) = create(&res, &desc);
    check(r, "linear texture");
    assert_ne!(t1, 0);
    let out = alloc(2 * n * 4);
    let k1 = function(m, "tex_fetch_1d");
    let (mut th, mut op, mut nn) = (t1, out, n as u32);
    launch(
        k1,
        1,
        n as u32,
        null_mut(),
        &mut [ptr(&mut th), ptr(&mut op), ptr(&mut nn)],
    );
    let got = dtoh::<f32>(out, 2 * n);
    for i in 0..n {
        assert_eq!(got[i], data[n - 1 - i], "element {i}");
        assert_eq!(got[n + i], 0.0, "past the end, element {i}");
    }
    let mut back = ResourceDesc {
        res_type: 9,
        res: [0; 16],
        flags: 7,
    };
    check(
        cu!(cuTexObjectGetResourceDesc(&mut back, t1): *mut ResourceDesc, u64),
        "resource desc",
    );
    assert_eq!(
        (back.res_type, back.res[0], back.res[2]),
        (2, d, (n * 4) as u64)
    );

    // Pitch-2D, clamped at the edges.
    let (w, h, pitch) = (40usize, 12usize, 256usize);
    let img: Vec<f32> = (0..h * pitch / 4).map(|i| (i % 997) as f32).collect();
    let d2 = alloc(h * pitch);
    htod(d2, &img);
    let mut res2 = ResourceDesc {
        res_type: 3,
        res: [0; 16],
        flags: 0,
    };
    res2.res[0] = d2;
    res2.res[1] = FLOAT | (1u64 << 32);
    res2.res[2] = w as u64;
    res2.res[3] = h as u64;
    res2.res[4] = pitch as u64;
    let desc2 = TextureDesc {
        address_mode: [1, 1, 1],
        ..Default::default()
    };
    let (r, t2) = create(&res2, &desc2);
    check(r, "pitch-2D texture");
    let got = fetch_2d(m, t2, w, h);
    let texel = |x: i64, y: i64| {
        let (x, y) = (x.clamp(0, w as i64 - 1), y.clamp(0, h as i64 - 1));
        img[y as usize * pitch / 4 + x as usize]
    };
    for y in 0..h as i64 {
        for x in 0..w as i64 {
            let want = texel(x, y) + 2.0 * texel(x - 3, y + 2);
            assert_eq!(got[y as usize * w + x as usize], want, "({x}, {y})");
        }
    }
    let mut td = TextureDesc::default();
    check(
        cu!(cuTexObjectGetTextureDesc(&mut td, t2): *mut TextureDesc, u64),
        "texture desc",
    );
    assert_eq!(td.address_mode, [1, 1, 1]);

    // Refusals: a handle that is not an array, resource views, memory not of this library; a
    // destroyed handle. (Textures over arrays: arrays.rs.)
    let arr = ResourceDesc {
        res_type: 0,
        res: [16; 16],
        flags: 0,
    };
    assert_eq!(create(&arr, &desc).0, 400);
    let mut t = 0u64;
    let view = [0u8; 128];
    assert_eq!(
        cu!(cuTexObjectCreate(&mut t, &res, &desc, view.as_ptr() as *const c_void): *mut u64, *const ResourceDesc, *const TextureDesc, *const c_void),
        801
    );
    let mut foreign = res;
    foreign.res[0] = 0x1000;
    assert_eq!(create(&foreign, &desc).0, 1);
    for t in [t1, t2] {
        check(cu!(cuTexObjectDestroy(t): u64), "destroy");
    }
    assert_eq!(cu!(cuTexObjectDestroy(t1): u64), 1);
}

/// Wrap and mirror with unnormalized coordinates clamp, as NVIDIA's libcuda does (the samples
/// convolutionTexture and dct8x8 ask for wrap and compare with clamped results).
#[test]
fn wrap_and_mirror_with_unnormalized_coordinates_clamp() {
    setup();
    let m = load_fixture("kernels");
    let (w, h, pitch) = (40usize, 12usize, 256usize);
    let img: Vec<f32> = (0..h * pitch / 4).map(|i| (i % 991) as f32).collect();
    let d2 = alloc(h * pitch);
    htod(d2, &img);
    let mut res = ResourceDesc {
        res_type: 3,
        res: [0; 16],
        flags: 0,
    };
    res.res[0] = d2;
    res.res[1] = FLOAT | (1u64 << 32);
    res.res[2] = w as u64;
    res.res[3] = h as u64;
    res.res[4] = pitch as u64;
    let texel = |x: i64, y: i64| {
        let (x, y) = (x.clamp(0, w as i64 - 1), y.clamp(0, h as i64 - 1));
        img[y as usize * pitch / 4 + x as usize]
    };
    for modes in [[0u32, 0, 0], [2, 2, 2], [0, 2, 0]] {
        let desc = TextureDesc {
            address_mode: modes,
            ..Default::default()
        };
        let (r, t) = create(&res, &desc);
        check(r, "pitch-2D texture, wrap/mirror, unnormalized");
        let got = fetch_2d(m, t, w, h);
        for y in 0..h as i64 {
            for x in 0..w as i64 {
                let want = texel(x, y) + 2.0 * texel(x - 3, y + 2);
                assert_eq!(
                    got[y as usize * w + x as usize],
                    want,
                    "modes {modes:?} ({x}, {y})"
                );
            }
        }
        check(cu!(cuTexObjectDestroy(t): u64), "destroy");
    }
}

/// A linear resource naming more bytes than its allocation holds past devPtr is accepted, as
/// NVIDIA's libcuda accepts it (the sample convolutionFFT2D); the texture ends with the
/// allocation and reads past it give 0.
#[test]
fn a_linear_texture_past_its_allocation_ends_with_it() {
    setup();
    let m = load_fixture("kernels");
    let n = 128usize;
    let data: Vec<f32> = (0..n).map(|i| i as f32 + 0.5).collect();
    let d = alloc(n * 4);
    htod(d, &data);
    let mut res = ResourceDesc {
        res_type: 2,
        res: [0; 16],
        flags: 0,
    };
    res.res[0] = d;
    res.res[1] = FLOAT | (1u64 << 32);
    res.res[2] = (4 * n * 4) as u64;
    let (r, t) = create(&res, &TextureDesc::default());
    check(r, "linear texture longer than its allocation");
    let out = alloc(2 * n * 4);
    let k1 = function(m, "tex_fetch_1d");
    let (mut th, mut op, mut nn) = (t, out, n as u32);
    launch(
        k1,
        1,
        n as u32,
        null_mut(),
        &mut [ptr(&mut th), ptr(&mut op), ptr(&mut nn)],
    );
    let got = dtoh::<f32>(out, 2 * n);
    for i in 0..n {
        assert_eq!(got[i], data[n - 1 - i], "element {i}");
        assert_eq!(got[n + i], 0.0, "past the allocation, element {i}");
    }
    check(cu!(cuTexObjectDestroy(t): u64), "destroy");
}
