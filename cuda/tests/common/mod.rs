//! What the tests of the built libcuda.so share: loading it, calling its exports (`cu!`),
//! checking results, and the fixtures.
#![allow(dead_code)]

use std::ffi::{c_char, c_void, CStr, CString};
use std::path::PathBuf;
use std::ptr::null_mut;
use std::sync::OnceLock;

pub(crate) type CUresult = u32;
pub(crate) const OK: CUresult = 0;

/// The libcuda.so cargo built with this test: next to the test executable (target/<profile>/deps,
/// where cargo writes it before copying it to target/<profile>), else `$TEGRAGPU_CUDA_LIB`.
pub(crate) fn lib_path() -> PathBuf {
    if let Some(p) = std::env::var_os("TEGRAGPU_CUDA_LIB").filter(|v| !v.is_empty()) {
        return PathBuf::from(p);
    }
    let exe = std::env::current_exe().unwrap();
    let deps = exe.parent().unwrap();
    let here = deps.join("libcuda.so");
    if here.exists() {
        return here;
    }
    deps.parent().unwrap().join("libcuda.so")
}

pub(crate) fn lib() -> &'static libloading::Library {
    static L: OnceLock<libloading::Library> = OnceLock::new();
    L.get_or_init(|| {
        let p = lib_path();
        unsafe { libloading::Library::new(&p) }.unwrap_or_else(|e| {
            panic!(
                "loading {}: {e} (build it: cargo build --release -p tegragpu-cuda)",
                p.display()
            )
        })
    })
}

/// The export `name` as a function of type `T`.
pub(crate) fn f<T: Copy>(name: &str) -> T {
    unsafe {
        *lib()
            .get::<T>(name.as_bytes())
            .unwrap_or_else(|e| panic!("{name}: {e}"))
    }
}

pub(crate) fn repo() -> PathBuf {
    match std::env::var_os("TEGRAGPU_REPO_ROOT").filter(|v| !v.is_empty()) {
        Some(r) => PathBuf::from(r),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .unwrap()
            .to_path_buf(),
    }
}

macro_rules! cu {
    ($name:ident ( $($arg:expr),* $(,)? ) : $($t:ty),*) => {{
        let g: unsafe extern "C" fn($($t),*) -> CUresult = f(stringify!($name));
        unsafe { g($($arg),*) }
    }};
}

pub(crate) fn check(r: CUresult, what: &str) {
    if r != OK {
        let mut s: *const c_char = std::ptr::null();
        let gn: unsafe extern "C" fn(CUresult, *mut *const c_char) -> CUresult =
            f("cuGetErrorName");
        unsafe { gn(r, &mut s) };
        let name = if s.is_null() {
            "?".into()
        } else {
            unsafe { CStr::from_ptr(s) }.to_string_lossy().into_owned()
        };
        panic!("{what}: {r} ({name})");
    }
}

/// cuInit, device 0 and a new context current on the calling thread.
pub(crate) fn setup() -> *mut c_void {
    check(cu!(cuInit(0): u32), "cuInit");
    let mut ctx = null_mut();
    check(
        cu!(cuCtxCreate_v2(&mut ctx, 0, 0): *mut *mut c_void, u32, i32),
        "cuCtxCreate_v2",
    );
    assert!(!ctx.is_null());
    ctx
}

pub(crate) fn sm() -> (i32, i32) {
    let (mut a, mut b) = (0, 0);
    check(
        cu!(cuDeviceGetAttribute(&mut a, 75, 0): *mut i32, i32, i32),
        "cc major",
    );
    check(
        cu!(cuDeviceGetAttribute(&mut b, 76, 0): *mut i32, i32, i32),
        "cc minor",
    );
    (a, b)
}

pub(crate) fn load_fixture(name: &str) -> *mut c_void {
    let (a, b) = sm();
    let p = repo().join(format!("tests/fixtures/cubin/{name}.sm_{a}{b}.cubin"));
    let bytes = std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    let mut m = null_mut();
    check(
        cu!(cuModuleLoadData(&mut m, bytes.as_ptr() as *const c_void): *mut *mut c_void, *const c_void),
        "cuModuleLoadData",
    );
    drop(bytes); // the library copied what it needs
    m
}

pub(crate) fn function(m: *mut c_void, name: &str) -> *mut c_void {
    let n = CString::new(name).unwrap();
    let mut fh = null_mut();
    check(
        cu!(cuModuleGetFunction(&mut fh, m, n.as_ptr()): *mut *mut c_void, *mut c_void, *const c_char),
        name,
    );
    fh
}

pub(crate) fn alloc(bytes: usize) -> u64 {
    let mut d = 0u64;
    check(
        cu!(cuMemAlloc_v2(&mut d, bytes): *mut u64, usize),
        "cuMemAlloc_v2",
    );
    assert_ne!(d, 0);
    d
}

pub(crate) fn htod<T>(d: u64, v: &[T]) {
    check(
        cu!(cuMemcpyHtoD_v2(d, v.as_ptr() as *const c_void, std::mem::size_of_val(v)): u64, *const c_void, usize),
        "cuMemcpyHtoD_v2",
    );
}

pub(crate) fn dtoh<T: Copy + Default>(d: u64, n: usize) -> Vec<T> {
    let mut v = vec![T::default(); n];
    check(
        cu!(cuMemcpyDtoH_v2(v.as_mut_ptr() as *mut c_void, d, n * std::mem::size_of::<T>()): *mut c_void, u64, usize),
        "cuMemcpyDtoH_v2",
    );
    v
}

pub(crate) type Launch = unsafe extern "C" fn(
    *mut c_void,
    u32,
    u32,
    u32,
    u32,
    u32,
    u32,
    u32,
    *mut c_void,
    *mut *mut c_void,
    *mut *mut c_void,
) -> CUresult;

pub(crate) fn launch(
    fh: *mut c_void,
    grid: u32,
    block: u32,
    stream: *mut c_void,
    args: &mut [*mut c_void],
) {
    let l: Launch = f("cuLaunchKernel");
    check(
        unsafe {
            l(
                fh,
                grid,
                1,
                1,
                block,
                1,
                1,
                0,
                stream,
                args.as_mut_ptr(),
                null_mut(),
            )
        },
        "cuLaunchKernel",
    );
}

/// A pinned host word set to 0, and its device address: the flag a `spin_until` kernel waits
/// for (set it with a volatile write of 1; free it with `cuMemFreeHost`).
pub(crate) fn host_flag() -> (*mut c_void, u64) {
    let mut flag: *mut c_void = null_mut();
    check(
        cu!(cuMemHostAlloc(&mut flag, 4, 0): *mut *mut c_void, usize, u32),
        "flag",
    );
    unsafe { (flag as *mut u32).write_volatile(0) };
    let mut flag_dev = 0u64;
    check(
        cu!(cuMemHostGetDevicePointer_v2(&mut flag_dev, flag, 0): *mut u64, *mut c_void, u32),
        "flag address",
    );
    (flag, flag_dev)
}

pub(crate) fn ptr<T>(v: &mut T) -> *mut c_void {
    v as *mut T as *mut c_void
}

/// The device the library shows first is the emulated Orin (which runs only the kernels it
/// has reference implementations of).
pub(crate) fn emulated() -> bool {
    let named = tegragpu::core::device_from_env().ok().flatten().is_some();
    let list = tegragpu::core::list_devices().unwrap_or_default();
    match list.first() {
        Some(l) => l.emulated,
        None => !named,
    }
}
