//! Modules, functions and launches.

use crate::*;
use std::ffi::{c_char, c_void, CString};
use std::ptr::null_mut;

#[test]
fn modules_and_launches() {
    setup();
    let m = load_fixture("kernels");
    let add = function(m, "vector_add");
    let n = 4096u32;
    let (a, b, c) = (
        alloc(n as usize * 4),
        alloc(n as usize * 4),
        alloc(n as usize * 4),
    );
    let av: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let bv: Vec<f32> = (0..n).map(|i| (i * 3) as f32 + 0.5).collect();
    htod(a, &av);
    htod(b, &bv);
    let (mut pa, mut pb, mut pc, mut pn) = (a, b, c, n);
    launch(
        add,
        n / 256,
        256,
        null_mut(),
        &mut [ptr(&mut pa), ptr(&mut pb), ptr(&mut pc), ptr(&mut pn)],
    );
    let cv = dtoh::<f32>(c, n as usize);
    assert!(cv.iter().enumerate().all(|(i, &x)| x == av[i] + bv[i]));

    // The packed `extra` form (as tinygrad passes parameters).
    let fill = function(m, "fill_u32");
    #[repr(C)]
    struct P {
        p: u64,
        value: u32,
        n: u32,
    }
    let mut params = P {
        p: c,
        value: 0xabcd1234,
        n,
    };
    let mut size = std::mem::size_of::<P>();
    let mut extra = [
        std::ptr::without_provenance_mut(1),
        ptr(&mut params),
        std::ptr::without_provenance_mut(2),
        ptr(&mut size),
        null_mut(),
    ];
    let l: Launch = f("cuLaunchKernel");
    check(
        unsafe {
            l(
                fill,
                n / 128,
                1,
                1,
                128,
                1,
                1,
                0,
                null_mut(),
                null_mut(),
                extra.as_mut_ptr(),
            )
        },
        "extra launch",
    );
    assert!(dtoh::<u32>(c, n as usize).iter().all(|&x| x == 0xabcd1234));
    // Too small a parameter buffer is refused.
    let mut small = 8usize;
    extra[3] = ptr(&mut small);
    assert_eq!(
        unsafe {
            l(
                fill,
                1,
                1,
                1,
                32,
                1,
                1,
                0,
                null_mut(),
                null_mut(),
                extra.as_mut_ptr(),
            )
        },
        1
    );

    // Function attributes.
    let mut v = 0;
    check(
        cu!(cuFuncGetAttribute(&mut v, 0, add): *mut i32, i32, *mut c_void),
        "max threads",
    );
    assert!(v >= 256);
    check(
        cu!(cuFuncGetAttribute(&mut v, 4, add): *mut i32, i32, *mut c_void),
        "regs",
    );
    assert!(v > 0);
    // Non-portable cluster sizes are off unless the function allows them (NVIDIA's libcuda
    // reports 0 on the H100 too).
    v = -1;
    check(
        cu!(cuFuncGetAttribute(&mut v, 14, add): *mut i32, i32, *mut c_void),
        "non-portable cluster size",
    );
    assert_eq!(v, 0);
    let reduce = function(m, "reduce_sum");
    check(
        cu!(cuFuncGetAttribute(&mut v, 8, reduce): *mut i32, i32, *mut c_void),
        "dyn shared",
    );
    assert_eq!(v, 48 * 1024);
    check(
        cu!(cuFuncSetAttribute(reduce, 8, 64 * 1024): *mut c_void, i32, i32),
        "opt in",
    );
    check(
        cu!(cuFuncGetAttribute(&mut v, 8, reduce): *mut i32, i32, *mut c_void),
        "dyn shared",
    );
    assert_eq!(v, 64 * 1024);
    assert_eq!(
        cu!(cuFuncSetAttribute(reduce, 8, 100 << 20): *mut c_void, i32, i32),
        1
    );
    check(
        cu!(cuFuncSetCacheConfig(add, 1): *mut c_void, u32),
        "cache config",
    );
    let mut blocks = 0;
    check(
        cu!(cuOccupancyMaxActiveBlocksPerMultiprocessor(&mut blocks, add, 256, 0): *mut i32, *mut c_void, i32, usize),
        "occupancy",
    );
    assert!(blocks >= 1);
    // Dynamic shared memory above the opt-in is refused.
    let (mut pin, mut pout, mut pn) = (a, b, 64u32);
    let mut args = [ptr(&mut pin), ptr(&mut pout), ptr(&mut pn)];
    assert_eq!(
        unsafe {
            l(
                add,
                1,
                1,
                1,
                64,
                1,
                1,
                65 * 1024,
                null_mut(),
                args.as_mut_ptr(),
                null_mut(),
            )
        },
        1
    );
    // reduce_sum with dynamic shared memory.
    htod(a, &vec![1.0f32; 256]);
    check(
        unsafe {
            l(
                reduce,
                1,
                1,
                1,
                256,
                1,
                1,
                1024,
                null_mut(),
                args.as_mut_ptr(),
                null_mut(),
            )
        },
        "reduce",
    );
    assert_eq!(dtoh::<f32>(b, 1)[0], 64.0);

    // Unknown names.
    let mut fh = null_mut();
    let nm = CString::new("no_such_kernel").unwrap();
    assert_eq!(
        cu!(cuModuleGetFunction(&mut fh, m, nm.as_ptr()): *mut *mut c_void, *mut c_void, *const c_char),
        500
    );
    check(cu!(cuModuleUnload(m): *mut c_void), "unload");
}

#[test]
fn module_globals_and_file_loads() {
    setup();
    let (a, b) = sm();
    let p = CString::new(
        repo()
            .join(format!("tests/fixtures/cubin/globals.sm_{a}{b}.cubin"))
            .to_str()
            .unwrap(),
    )
    .unwrap();
    let mut m = null_mut();
    check(
        cu!(cuModuleLoad(&mut m, p.as_ptr()): *mut *mut c_void, *const c_char),
        "cuModuleLoad",
    );
    let src = std::fs::read_to_string(repo().join("tests/fixtures/cubin/globals.cu")).unwrap();
    let name = src
        .lines()
        .find_map(|l| {
            l.strip_prefix("__device__ ")
                .and_then(|r| r.split(['[', ' ', ';']).nth(1))
        })
        .expect("a __device__ variable in globals.cu")
        .to_string();
    let cn = CString::new(name.clone()).unwrap();
    let (mut dp, mut size) = (0u64, 0usize);
    check(
        cu!(cuModuleGetGlobal_v2(&mut dp, &mut size, m, cn.as_ptr()): *mut u64, *mut usize, *mut c_void, *const c_char),
        &format!("global {name}"),
    );
    assert!(dp != 0 && size > 0);
    // Copies to and from a global (not an allocation of cuMemAlloc).
    let bytes: Vec<u8> = (0..size).map(|i| (i * 7 + 1) as u8).collect();
    htod(dp, &bytes);
    assert_eq!(dtoh::<u8>(dp, size), bytes);
    let missing = CString::new("/no/such/file.cubin").unwrap();
    assert_eq!(
        cu!(cuModuleLoad(&mut m, missing.as_ptr()): *mut *mut c_void, *const c_char),
        301
    );
}
