//! The CUDA 12 loading API: libraries and their kernels.

use crate::*;
use std::ffi::{c_char, c_void, CStr, CString};
use std::ptr::null_mut;

fn fixture_bytes(name: &str) -> Vec<u8> {
    let (a, b) = sm();
    let p = repo().join(format!("tests/fixtures/cubin/{name}.sm_{a}{b}.cubin"));
    std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn load_library(bytes: &[u8]) -> *mut c_void {
    let mut l = null_mut();
    check(
        cu!(cuLibraryLoadData(&mut l, bytes.as_ptr() as *const c_void, null_mut(), null_mut(), 0, null_mut(), null_mut(), 0): *mut *mut c_void, *const c_void, *mut c_void, *mut *mut c_void, u32, *mut c_void, *mut *mut c_void, u32),
        "cuLibraryLoadData",
    );
    l
}

fn get_kernel(l: *mut c_void, name: &str) -> *mut c_void {
    let n = CString::new(name).unwrap();
    let mut k = null_mut();
    check(
        cu!(cuLibraryGetKernel(&mut k, l, n.as_ptr()): *mut *mut c_void, *mut c_void, *const c_char),
        name,
    );
    k
}

#[test]
fn libraries_kernels_and_launches_through_them() {
    setup();
    let bytes = fixture_bytes("kernels");
    let l = load_library(&bytes);
    drop(bytes); // the library keeps its own copy
    let mut count = 0u32;
    check(
        cu!(cuLibraryGetKernelCount(&mut count, l): *mut u32, *mut c_void),
        "count",
    );
    assert!(count >= 10, "{count} kernels");
    let mut all = vec![null_mut::<c_void>(); count as usize];
    check(
        cu!(cuLibraryEnumerateKernels(all.as_mut_ptr(), count, l): *mut *mut c_void, u32, *mut c_void),
        "enumerate",
    );
    let fill = get_kernel(l, "fill_u32");
    assert!(all.contains(&fill), "enumerated handles are the kernels'");
    assert_eq!(get_kernel(l, "fill_u32"), fill, "one handle per name");
    let missing = CString::new("no_such_kernel").unwrap();
    let mut k = null_mut();
    assert_eq!(
        cu!(cuLibraryGetKernel(&mut k, l, missing.as_ptr()): *mut *mut c_void, *mut c_void, *const c_char),
        500
    );
    let mut name: *const c_char = std::ptr::null();
    check(
        cu!(cuKernelGetName(&mut name, fill): *mut *const c_char, *mut c_void),
        "name",
    );
    assert_eq!(
        unsafe { CStr::from_ptr(name) }.to_str().unwrap(),
        "fill_u32"
    );
    let mut lib2 = null_mut();
    check(
        cu!(cuKernelGetLibrary(&mut lib2, fill): *mut *mut c_void, *mut c_void),
        "library",
    );
    assert_eq!(lib2, l);
    let (mut off, mut size) = (0usize, 0usize);
    check(
        cu!(cuKernelGetParamInfo(fill, 1, &mut off, &mut size): *mut c_void, usize, *mut usize, *mut usize),
        "param 1",
    );
    assert_eq!(
        (off, size),
        (8, 4),
        "fill_u32(unsigned*, unsigned value, unsigned n)"
    );
    assert_eq!(
        cu!(cuKernelGetParamInfo(fill, 3, &mut off, &mut size): *mut c_void, usize, *mut usize, *mut usize),
        1
    );

    // A kernel handle launches as a function.
    let n = 1024usize;
    let d = alloc(n * 4);
    let (mut p, mut v, mut cnt) = (d, 0x0bad_f00du32, n as u32);
    launch(
        fill,
        (n / 128) as u32,
        128,
        null_mut(),
        &mut [ptr(&mut p), ptr(&mut v), ptr(&mut cnt)],
    );
    assert!(dtoh::<u32>(d, n).iter().all(|&x| x == 0x0bad_f00d));
    // Its function on this device, and the module it lives in.
    let mut f = null_mut();
    check(
        cu!(cuKernelGetFunction(&mut f, fill): *mut *mut c_void, *mut c_void),
        "function",
    );
    let mut m = null_mut();
    check(
        cu!(cuLibraryGetModule(&mut m, l): *mut *mut c_void, *mut c_void),
        "module",
    );
    assert_eq!(function(m, "fill_u32"), f);
    assert_eq!(
        cu!(cuModuleUnload(m): *mut c_void),
        800,
        "owned by the library"
    );
    // Attributes through the kernel are the function's.
    let reduce = get_kernel(l, "reduce_sum");
    check(
        cu!(cuKernelSetAttribute(8, 64 * 1024, reduce, 0): i32, i32, *mut c_void, i32),
        "opt in",
    );
    let mut rf = null_mut();
    check(
        cu!(cuKernelGetFunction(&mut rf, reduce): *mut *mut c_void, *mut c_void),
        "function",
    );
    let (mut a, mut b) = (0, 0);
    check(
        cu!(cuFuncGetAttribute(&mut a, 8, rf): *mut i32, i32, *mut c_void),
        "func attribute",
    );
    check(
        cu!(cuKernelGetAttribute(&mut b, 8, reduce, 0): *mut i32, i32, *mut c_void, i32),
        "kernel attribute",
    );
    assert_eq!((a, b), (64 * 1024, 64 * 1024));
    check(
        cu!(cuKernelGetAttribute(&mut b, 4, reduce, 0): *mut i32, i32, *mut c_void, i32),
        "registers",
    );
    assert!(b > 0);
    let mut nd = 0;
    check(cu!(cuDeviceGetCount(&mut nd): *mut i32), "count");
    assert_eq!(
        cu!(cuKernelGetAttribute(&mut b, 4, reduce, nd): *mut i32, i32, *mut c_void, i32),
        101
    );
    check(
        cu!(cuKernelSetCacheConfig(reduce, 2, 0): *mut c_void, u32, i32),
        "cache config",
    );

    // A graph kernel node names the kernel (v2 parameters, `kern` with `func` NULL).
    let mut g = null_mut();
    check(
        cu!(cuGraphCreate(&mut g, 0): *mut *mut c_void, u32),
        "graph",
    );
    let (mut gp, mut gv, mut gn) = (d, 0x600d_cafeu32, n as u32);
    let mut gargs = [ptr(&mut gp), ptr(&mut gv), ptr(&mut gn)];
    let mut np = crate::graphs::KernelNodeParamsV2 {
        v1: crate::graphs::KernelNodeParams {
            func: null_mut(),
            grid: [(n / 256) as u32, 1, 1],
            block: [256, 1, 1],
            shared: 0,
            params: gargs.as_mut_ptr(),
            extra: null_mut(),
        },
        kern: fill,
        ctx: null_mut(),
    };
    let mut node = null_mut();
    check(
        cu!(cuGraphAddKernelNode_v2(&mut node, g, std::ptr::null(), 0, ptr(&mut np)): *mut *mut c_void, *mut c_void, *const *mut c_void, usize, *mut c_void),
        "kernel node of a library kernel",
    );
    let mut exec = null_mut();
    check(
        cu!(cuGraphInstantiateWithFlags(&mut exec, g, 0): *mut *mut c_void, *mut c_void, u64),
        "instantiate",
    );
    check(
        cu!(cuGraphLaunch(exec, null_mut()): *mut c_void, *mut c_void),
        "launch",
    );
    check(cu!(cuCtxSynchronize(): ), "sync");
    assert!(dtoh::<u32>(d, n).iter().all(|&x| x == 0x600d_cafe));
    check(cu!(cuGraphExecDestroy(exec): *mut c_void), "exec destroy");
    check(cu!(cuGraphDestroy(g): *mut c_void), "graph destroy");

    check(cu!(cuLibraryUnload(l): *mut c_void), "unload");
    assert_eq!(cu!(cuLibraryUnload(l): *mut c_void), 400);
}

#[test]
fn library_globals_and_files() {
    setup();
    let (a, b) = sm();
    let path = repo().join(format!("tests/fixtures/cubin/globals.sm_{a}{b}.cubin"));
    let p = CString::new(path.to_str().unwrap()).unwrap();
    let mut l = null_mut();
    check(
        cu!(cuLibraryLoadFromFile(&mut l, p.as_ptr(), null_mut(), null_mut(), 0, null_mut(), null_mut(), 0): *mut *mut c_void, *const c_char, *mut c_void, *mut *mut c_void, u32, *mut c_void, *mut *mut c_void, u32),
        "cuLibraryLoadFromFile",
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
        cu!(cuLibraryGetGlobal(&mut dp, &mut size, l, cn.as_ptr()): *mut u64, *mut usize, *mut c_void, *const c_char),
        &format!("global {name}"),
    );
    assert!(dp != 0 && size > 0);
    let bytes: Vec<u8> = (0..size).map(|i| (i * 5 + 3) as u8).collect();
    htod(dp, &bytes);
    assert_eq!(dtoh::<u8>(dp, size), bytes);
    // The library's module has the same global.
    let mut m = null_mut();
    check(
        cu!(cuLibraryGetModule(&mut m, l): *mut *mut c_void, *mut c_void),
        "module",
    );
    let (mut dp2, mut size2) = (0u64, 0usize);
    check(
        cu!(cuModuleGetGlobal_v2(&mut dp2, &mut size2, m, cn.as_ptr()): *mut u64, *mut usize, *mut c_void, *const c_char),
        "module global",
    );
    assert_eq!((dp2, size2), (dp, size));
    check(cu!(cuLibraryUnload(l): *mut c_void), "unload");
    let missing = CString::new("/no/such/file.cubin").unwrap();
    assert_eq!(
        cu!(cuLibraryLoadFromFile(&mut l, missing.as_ptr(), null_mut(), null_mut(), 0, null_mut(), null_mut(), 0): *mut *mut c_void, *const c_char, *mut c_void, *mut *mut c_void, u32, *mut c_void, *mut *mut c_void, u32),
        301
    );
    let mut garbage = [0x55u8; 64];
    garbage[63] = 0;
    assert_eq!(
        cu!(cuLibraryLoadData(&mut l, garbage.as_ptr() as *const c_void, null_mut(), null_mut(), 0, null_mut(), null_mut(), 0): *mut *mut c_void, *const c_void, *mut c_void, *mut *mut c_void, u32, *mut c_void, *mut *mut c_void, u32),
        200,
        "not an image"
    );
}
