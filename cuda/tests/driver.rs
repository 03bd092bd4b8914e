//! The CUDA driver API of the built libcuda.so (target/<profile>/libcuda.so), driven through
//! dlopen as a program written for CUDA would, on the device libtegragpu opens (the emulated
//! Orin without a GPU; `TEGRAGPU_DEVICE` picks another). No NVIDIA library is loaded.

#![allow(non_snake_case, clippy::missing_transmute_annotations)]

use std::ffi::{c_char, c_void, CStr, CString};
use std::path::PathBuf;
use std::ptr::null_mut;
use std::sync::OnceLock;

type CUresult = u32;
const OK: CUresult = 0;

/// The libcuda.so cargo built with this test: next to the test executable (target/<profile>/deps,
/// where cargo writes it before copying it to target/<profile>), else `$TEGRAGPU_CUDA_LIB`.
fn lib_path() -> PathBuf {
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

fn lib() -> &'static libloading::Library {
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
fn f<T: Copy>(name: &str) -> T {
    unsafe {
        *lib()
            .get::<T>(name.as_bytes())
            .unwrap_or_else(|e| panic!("{name}: {e}"))
    }
}

fn repo() -> PathBuf {
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

fn check(r: CUresult, what: &str) {
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
fn setup() -> *mut c_void {
    check(cu!(cuInit(0): u32), "cuInit");
    let mut ctx = null_mut();
    check(
        cu!(cuCtxCreate_v2(&mut ctx, 0, 0): *mut *mut c_void, u32, i32),
        "cuCtxCreate_v2",
    );
    assert!(!ctx.is_null());
    ctx
}

fn sm() -> (i32, i32) {
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

fn load_fixture(name: &str) -> *mut c_void {
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

fn function(m: *mut c_void, name: &str) -> *mut c_void {
    let n = CString::new(name).unwrap();
    let mut fh = null_mut();
    check(
        cu!(cuModuleGetFunction(&mut fh, m, n.as_ptr()): *mut *mut c_void, *mut c_void, *const c_char),
        name,
    );
    fh
}

fn alloc(bytes: usize) -> u64 {
    let mut d = 0u64;
    check(
        cu!(cuMemAlloc_v2(&mut d, bytes): *mut u64, usize),
        "cuMemAlloc_v2",
    );
    assert_ne!(d, 0);
    d
}

fn htod<T>(d: u64, v: &[T]) {
    check(
        cu!(cuMemcpyHtoD_v2(d, v.as_ptr() as *const c_void, std::mem::size_of_val(v)): u64, *const c_void, usize),
        "cuMemcpyHtoD_v2",
    );
}

fn dtoh<T: Copy + Default>(d: u64, n: usize) -> Vec<T> {
    let mut v = vec![T::default(); n];
    check(
        cu!(cuMemcpyDtoH_v2(v.as_mut_ptr() as *mut c_void, d, n * std::mem::size_of::<T>()): *mut c_void, u64, usize),
        "cuMemcpyDtoH_v2",
    );
    v
}

type Launch = unsafe extern "C" fn(
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

fn launch(fh: *mut c_void, grid: u32, block: u32, stream: *mut c_void, args: &mut [*mut c_void]) {
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

fn ptr<T>(v: &mut T) -> *mut c_void {
    v as *mut T as *mut c_void
}

// --- The exports and cuGetProcAddress ---------------------------------------------------------

fn export_names() -> Vec<String> {
    let text = std::fs::read_to_string(repo().join("cuda/data/exports.txt")).unwrap();
    let mut v: Vec<String> = text
        .lines()
        .filter_map(|l| l.split_whitespace().nth(2).map(String::from))
        .collect();
    v.sort();
    v
}

#[test]
fn exports_exactly_the_names_of_nvidias_libcuda() {
    use object::{Object, ObjectSymbol};
    let bytes = std::fs::read(lib_path()).unwrap();
    let file = object::File::parse(&*bytes).unwrap();
    let mut have: Vec<String> = file
        .dynamic_symbols()
        .filter(|s| s.is_definition() && s.is_global())
        .map(|s| s.name().unwrap().to_string())
        .collect();
    have.sort();
    have.dedup();
    let want = export_names();
    assert_eq!(want.len(), 707);
    let missing: Vec<_> = want
        .iter()
        .filter(|n| have.binary_search(n).is_err())
        .collect();
    let extra: Vec<_> = have
        .iter()
        .filter(|n| want.binary_search(n).is_err())
        .collect();
    assert!(missing.is_empty(), "not exported: {missing:?}");
    assert!(
        extra.is_empty(),
        "exported beyond NVIDIA's names: {extra:?}"
    );
    assert_eq!(soname(&file).as_deref(), Some("libcuda.so.1"));
}

/// The ELF `DT_SONAME` of a shared library.
fn soname(file: &object::File<'_>) -> Option<String> {
    use object::read::elf::{Dyn, FileHeader};
    let object::File::Elf64(elf) = file else {
        return None;
    };
    let endian = elf.endian();
    let data = elf.data();
    let sections = elf.elf_header().sections(endian, data).ok()?;
    let (dynamic, link) = sections.dynamic(endian, data).ok()??;
    let strings = sections.strings(endian, data, link).ok()?;
    dynamic
        .iter()
        .find(|d| d.d_tag(endian) == u64::from(object::elf::DT_SONAME))
        .and_then(|d| d.string(endian, strings).ok())
        .map(|s| String::from_utf8_lossy(s).into_owned())
}

#[test]
fn unimplemented_exports_answer_not_supported() {
    check(cu!(cuInit(0): u32), "cuInit");
    for name in [
        "cuMemPoolCreate",
        "cuIpcGetMemHandle",
        "cuMemCreate",
        "cuGraphicsUnregisterResource",
    ] {
        let g: unsafe extern "C" fn() -> CUresult = f(name);
        assert_eq!(unsafe { g() }, 801, "{name}");
    }
}

#[test]
fn get_proc_address_follows_the_table_of_nvidias_libcuda() {
    type V2 = unsafe extern "C" fn(*const c_char, *mut *mut c_void, i32, u64, *mut i32) -> CUresult;
    type V1 = unsafe extern "C" fn(*const c_char, *mut *mut c_void, i32, u64) -> CUresult;
    let v2: V2 = f("cuGetProcAddress_v2");
    let v1: V1 = f("cuGetProcAddress");
    let text = std::fs::read_to_string(repo().join("cuda/data/procaddr.tsv")).unwrap();
    let mut rows = 0;
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let c: Vec<&str> = line.split('\t').collect();
        let (name, flags, from, to, res, status, sym) = (
            c[0],
            c[1].parse::<u64>().unwrap(),
            c[2].parse::<i32>().unwrap(),
            c[3].parse::<i32>().unwrap(),
            c[4].parse::<u32>().unwrap(),
            c[5].parse::<i32>().unwrap(),
            c[6],
        );
        let want_ptr = if sym == "-" {
            null_mut()
        } else {
            unsafe { *lib().get::<*mut c_void>(sym.as_bytes()).unwrap() }
        };
        let cname = CString::new(name).unwrap();
        for v in [from, (from + to) / 2 / 10 * 10, to] {
            let (mut p, mut s) = (null_mut(), -7);
            let r = unsafe { v2(cname.as_ptr(), &mut p, v, flags, &mut s) };
            assert_eq!(
                (r, s, p),
                (res, status, want_ptr),
                "{name} flags {flags} version {v}"
            );
            let mut p1 = null_mut();
            let r1 = unsafe { v1(cname.as_ptr(), &mut p1, v, flags) };
            assert_eq!(
                p1, want_ptr,
                "{name} (legacy form) flags {flags} version {v}"
            );
            if res == OK && !want_ptr.is_null() {
                assert_eq!(r1, OK);
            } else {
                assert_ne!(
                    r1, OK,
                    "{name} legacy form resolved nothing and answered success"
                );
            }
        }
        rows += 1;
    }
    assert_eq!(rows, 5932);
    // A name NVIDIA's library does not have.
    let (mut p, mut s) = (null_mut(), -7);
    let n = CString::new("cuNoSuchFunction").unwrap();
    unsafe { v2(n.as_ptr(), &mut p, 12000, 0, &mut s) };
    assert!(p.is_null());
    assert_eq!(s, 1);
}

#[test]
fn error_names_and_strings() {
    let mut s: *const c_char = std::ptr::null();
    check(
        cu!(cuGetErrorName(801, &mut s): u32, *mut *const c_char),
        "name",
    );
    assert_eq!(
        unsafe { CStr::from_ptr(s) }.to_str().unwrap(),
        "CUDA_ERROR_NOT_SUPPORTED"
    );
    check(
        cu!(cuGetErrorString(1, &mut s): u32, *mut *const c_char),
        "string",
    );
    assert!(!unsafe { CStr::from_ptr(s) }.to_bytes().is_empty());
    assert_eq!(
        cu!(cuGetErrorName(123456, &mut s): u32, *mut *const c_char),
        1
    );
    assert!(s.is_null());
}

// --- Devices and contexts -------------------------------------------------------------------

#[test]
fn device_queries() {
    let mut v = 0;
    check(cu!(cuDriverGetVersion(&mut v): *mut i32), "version");
    assert_eq!(v, 13000);
    check(cu!(cuInit(0): u32), "cuInit");
    let mut n = 0;
    check(cu!(cuDeviceGetCount(&mut n): *mut i32), "count");
    assert!(n >= 1);
    let mut d = -1;
    check(cu!(cuDeviceGet(&mut d, 0): *mut i32, i32), "get");
    assert_eq!(d, 0);
    assert_eq!(cu!(cuDeviceGet(&mut d, n): *mut i32, i32), 101);
    let mut name = [0 as c_char; 256];
    check(
        cu!(cuDeviceGetName(name.as_mut_ptr(), 256, 0): *mut c_char, i32, i32),
        "name",
    );
    assert!(!unsafe { CStr::from_ptr(name.as_ptr()) }
        .to_bytes()
        .is_empty());
    let mut mem = 0usize;
    check(
        cu!(cuDeviceTotalMem_v2(&mut mem, 0): *mut usize, i32),
        "total mem",
    );
    assert!(mem > 0);
    let (a, b) = sm();
    let (mut ma, mut mi) = (0, 0);
    check(
        cu!(cuDeviceComputeCapability(&mut ma, &mut mi, 0): *mut i32, *mut i32, i32),
        "cc",
    );
    assert_eq!((ma, mi), (a, b));
    if std::env::var_os("TEGRAGPU_DEVICE").is_none()
        && !std::path::Path::new("/dev/nvidiactl").exists()
    {
        assert_eq!((a, b), (8, 7), "the emulated Orin is sm_87");
    }
    let mut x = 0;
    for attr in 1..=147 {
        check(
            cu!(cuDeviceGetAttribute(&mut x, attr, 0): *mut i32, i32, i32),
            &format!("attribute {attr}"),
        );
    }
    assert_eq!(
        cu!(cuDeviceGetAttribute(&mut x, 0, 0): *mut i32, i32, i32),
        1
    );
    assert_eq!(
        cu!(cuDeviceGetAttribute(&mut x, 148, 0): *mut i32, i32, i32),
        1
    );
    check(
        cu!(cuDeviceGetAttribute(&mut x, 16, 0): *mut i32, i32, i32),
        "sm count",
    );
    assert!(x > 0);
    let mut u = [0u8; 16];
    check(
        cu!(cuDeviceGetUuid_v2(u.as_mut_ptr() as *mut c_void, 0): *mut c_void, i32),
        "uuid",
    );
    assert_ne!(u, [0u8; 16]);
}

#[test]
fn context_stack_is_per_thread() {
    let c1 = setup();
    let mut cur = null_mut();
    check(cu!(cuCtxGetCurrent(&mut cur): *mut *mut c_void), "get");
    assert_eq!(cur, c1);
    let mut c2 = null_mut();
    check(
        cu!(cuCtxCreate_v2(&mut c2, 0, 0): *mut *mut c_void, u32, i32),
        "create 2",
    );
    check(cu!(cuCtxGetCurrent(&mut cur): *mut *mut c_void), "get");
    assert_eq!(cur, c2);
    let mut popped = null_mut();
    check(
        cu!(cuCtxPopCurrent_v2(&mut popped): *mut *mut c_void),
        "pop",
    );
    assert_eq!(popped, c2);
    check(cu!(cuCtxGetCurrent(&mut cur): *mut *mut c_void), "get");
    assert_eq!(cur, c1);
    check(cu!(cuCtxPushCurrent_v2(c2): *mut c_void), "push");
    check(cu!(cuCtxGetCurrent(&mut cur): *mut *mut c_void), "get");
    assert_eq!(cur, c2);
    let c2u = c2 as usize;
    std::thread::spawn(move || {
        let mut cur: *mut c_void = std::ptr::without_provenance_mut(1);
        check(
            cu!(cuCtxGetCurrent(&mut cur): *mut *mut c_void),
            "get in thread",
        );
        assert!(cur.is_null(), "a new thread has no current context");
        let mut d = 0u64;
        assert_eq!(cu!(cuMemAlloc_v2(&mut d, 16): *mut u64, usize), 201);
        check(cu!(cuCtxSetCurrent(c2u as *mut c_void): *mut c_void), "set");
        check(cu!(cuCtxGetCurrent(&mut cur): *mut *mut c_void), "get");
        assert_eq!(cur as usize, c2u);
        let mut dev = -1;
        check(cu!(cuCtxGetDevice(&mut dev): *mut i32), "device");
        assert_eq!(dev, 0);
    })
    .join()
    .unwrap();
    check(cu!(cuCtxDestroy_v2(c2): *mut c_void), "destroy 2");
    check(cu!(cuCtxGetCurrent(&mut cur): *mut *mut c_void), "get");
    assert_eq!(cur, c1);
    // Primary context: retained twice is the same context.
    let (mut p1, mut p2) = (null_mut(), null_mut());
    check(
        cu!(cuDevicePrimaryCtxRetain(&mut p1, 0): *mut *mut c_void, i32),
        "retain",
    );
    check(
        cu!(cuDevicePrimaryCtxRetain(&mut p2, 0): *mut *mut c_void, i32),
        "retain",
    );
    assert_eq!(p1, p2);
    let (mut flags, mut active) = (0u32, 0);
    check(
        cu!(cuDevicePrimaryCtxGetState(0, &mut flags, &mut active): i32, *mut u32, *mut i32),
        "state",
    );
    assert_eq!(active, 1);
    check(cu!(cuDevicePrimaryCtxRelease_v2(0): i32), "release");
    check(cu!(cuDevicePrimaryCtxRelease_v2(0): i32), "release");
    check(cu!(cuCtxSynchronize(): ), "sync");
}

// --- Memory ------------------------------------------------------------------------------------

#[test]
fn memory_copies_and_memsets() {
    setup();
    let n = 1000usize;
    let d = alloc(n * 4);
    let src: Vec<u32> = (0..n as u32).map(|i| i.wrapping_mul(2654435761)).collect();
    htod(d, &src);
    assert_eq!(dtoh::<u32>(d, n), src);
    // Device to device, at an offset.
    let d2 = alloc(n * 4);
    check(
        cu!(cuMemcpyDtoD_v2(d2 + 40, d, (n - 10) * 4): u64, u64, usize),
        "DtoD",
    );
    let back = dtoh::<u32>(d2, n);
    assert_eq!(&back[10..], &src[..n - 10]);
    // Memsets.
    check(
        cu!(cuMemsetD32_v2(d, 0xdeadbeef, n): u64, u32, usize),
        "D32",
    );
    assert!(dtoh::<u32>(d, n).iter().all(|&x| x == 0xdeadbeef));
    check(
        cu!(cuMemsetD16_v2(d + 2, 0x1234, 3): u64, u16, usize),
        "D16",
    );
    let b = dtoh::<u16>(d, 5);
    assert_eq!(b, vec![0xbeef, 0x1234, 0x1234, 0x1234, 0xbeef]);
    check(cu!(cuMemsetD8_v2(d + 1, 0x5a, 2): u64, u8, usize), "D8");
    let b = dtoh::<u8>(d, 4);
    assert_eq!(b, vec![0xef, 0x5a, 0x5a, 0x12]);
    // Pinned host memory: async copies through it.
    let mut h: *mut c_void = null_mut();
    check(
        cu!(cuMemHostAlloc(&mut h, n * 4, 0): *mut *mut c_void, usize, u32),
        "host alloc",
    );
    let hs = unsafe { std::slice::from_raw_parts_mut(h as *mut u32, n) };
    for (i, x) in hs.iter_mut().enumerate() {
        *x = i as u32 + 7;
    }
    check(
        cu!(cuMemcpyHtoDAsync_v2(d, h, n * 4, null_mut()): u64, *const c_void, usize, *mut c_void),
        "HtoDAsync",
    );
    check(cu!(cuStreamSynchronize(null_mut()): *mut c_void), "sync");
    assert_eq!(dtoh::<u32>(d, 3), vec![7, 8, 9]);
    hs.fill(0);
    check(
        cu!(cuMemcpyDtoHAsync_v2(h, d, n * 4, null_mut()): *mut c_void, u64, usize, *mut c_void),
        "DtoHAsync",
    );
    check(cu!(cuStreamSynchronize(null_mut()): *mut c_void), "sync");
    assert!(hs.iter().enumerate().all(|(i, &x)| x == i as u32 + 7));
    let mut dp = 0u64;
    check(
        cu!(cuMemHostGetDevicePointer_v2(&mut dp, h, 0): *mut u64, *mut c_void, u32),
        "device pointer",
    );
    assert_ne!(dp, 0);
    check(cu!(cuMemFreeHost(h): *mut c_void), "free host");
    // Address range.
    let (mut base, mut size) = (0u64, 0usize);
    check(
        cu!(cuMemGetAddressRange_v2(&mut base, &mut size, d + 100): *mut u64, *mut usize, u64),
        "range",
    );
    assert_eq!((base, size), (d, n * 4));
    // Out of range and bad frees.
    let mut big = vec![0u8; n * 4 + 1];
    assert_eq!(
        cu!(cuMemcpyHtoD_v2(d, big.as_mut_ptr() as *const c_void, n * 4 + 1): u64, *const c_void, usize),
        1
    );
    assert_eq!(cu!(cuMemFree_v2(d + 4): u64), 1);
    check(cu!(cuMemFree_v2(d): u64), "free");
    assert_eq!(cu!(cuMemFree_v2(d): u64), 1, "double free");
    check(cu!(cuMemFree_v2(d2): u64), "free");
    let (mut free, mut total) = (0usize, 0usize);
    check(
        cu!(cuMemGetInfo_v2(&mut free, &mut total): *mut usize, *mut usize),
        "info",
    );
    assert!(free <= total && total > 0);
}

// --- Modules and launches ------------------------------------------------------------------------

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

// --- Streams and events -------------------------------------------------------------------------

#[test]
fn streams_events_and_ordering() {
    setup();
    let m = load_fixture("kernels");
    let inc = function(m, "increment");
    let counter = alloc(8);
    check(cu!(cuMemsetD32_v2(counter, 0, 2): u64, u32, usize), "zero");
    let (mut s1, mut s2) = (null_mut(), null_mut());
    check(
        cu!(cuStreamCreate(&mut s1, 0): *mut *mut c_void, u32),
        "stream",
    );
    check(
        cu!(cuStreamCreate(&mut s2, 1): *mut *mut c_void, u32),
        "non-blocking stream",
    );
    let mut flags = 9u32;
    check(
        cu!(cuStreamGetFlags(s2, &mut flags): *mut c_void, *mut u32),
        "flags",
    );
    assert_eq!(flags, 1);
    let (mut e1, mut e2) = (null_mut(), null_mut());
    check(
        cu!(cuEventCreate(&mut e1, 0): *mut *mut c_void, u32),
        "event",
    );
    check(
        cu!(cuEventCreate(&mut e2, 0): *mut *mut c_void, u32),
        "event",
    );
    let (mut p, mut by) = (counter, 1u64);
    check(
        cu!(cuEventRecord(e1, s1): *mut c_void, *mut c_void),
        "record",
    );
    for _ in 0..50 {
        launch(inc, 1, 32, s1, &mut [ptr(&mut p), ptr(&mut by)]);
    }
    check(
        cu!(cuEventRecord(e2, s1): *mut c_void, *mut c_void),
        "record",
    );
    // s2 continues after s1's 50 increments.
    check(
        cu!(cuStreamWaitEvent(s2, e2, 0): *mut c_void, *mut c_void, u32),
        "wait event",
    );
    let mut by2 = 1000u64;
    launch(inc, 1, 32, s2, &mut [ptr(&mut p), ptr(&mut by2)]);
    check(cu!(cuStreamSynchronize(s2): *mut c_void), "sync s2");
    assert_eq!(cu!(cuStreamQuery(s2): *mut c_void), OK);
    assert_eq!(dtoh::<u64>(counter, 1)[0], 1050);
    check(cu!(cuEventSynchronize(e2): *mut c_void), "event sync");
    assert_eq!(cu!(cuEventQuery(e2): *mut c_void), OK);
    let mut ms = -1.0f32;
    check(
        cu!(cuEventElapsedTime(&mut ms, e1, e2): *mut f32, *mut c_void, *mut c_void),
        "elapsed",
    );
    assert!(ms >= 0.0, "{ms}");
    // Legacy default stream: ordered after work on the blocking stream s1.
    for _ in 0..20 {
        launch(inc, 1, 32, s1, &mut [ptr(&mut p), ptr(&mut by)]);
    }
    launch(inc, 1, 32, null_mut(), &mut [ptr(&mut p), ptr(&mut by2)]);
    check(
        cu!(cuStreamSynchronize(null_mut()): *mut c_void),
        "legacy sync",
    );
    assert_eq!(dtoh::<u64>(counter, 1)[0], 2070);
    // Per-thread default stream (CU_STREAM_PER_THREAD and the _ptsz entry point).
    let lp: Launch = f("cuLaunchKernel_ptsz");
    let mut args = [ptr(&mut p), ptr(&mut by)];
    check(
        unsafe {
            lp(
                inc,
                1,
                1,
                1,
                32,
                1,
                1,
                0,
                null_mut(),
                args.as_mut_ptr(),
                null_mut(),
            )
        },
        "ptsz launch",
    );
    check(
        cu!(cuStreamSynchronize(2 as *mut c_void): *mut c_void),
        "per-thread sync",
    );
    assert_eq!(dtoh::<u64>(counter, 1)[0], 2071);
    // Timing disabled: no elapsed time.
    let mut e3 = null_mut();
    check(
        cu!(cuEventCreate(&mut e3, 2): *mut *mut c_void, u32),
        "event",
    );
    check(
        cu!(cuEventRecord(e3, s1): *mut c_void, *mut c_void),
        "record",
    );
    check(cu!(cuCtxSynchronize(): ), "ctx sync");
    assert_eq!(
        cu!(cuEventElapsedTime(&mut ms, e1, e3): *mut f32, *mut c_void, *mut c_void),
        400
    );
    for e in [e1, e2, e3] {
        check(cu!(cuEventDestroy_v2(e): *mut c_void), "destroy event");
    }
    check(cu!(cuStreamDestroy_v2(s1): *mut c_void), "destroy");
    check(cu!(cuStreamDestroy_v2(s2): *mut c_void), "destroy");
    assert_eq!(cu!(cuStreamDestroy_v2(null_mut()): *mut c_void), 400);
}

// --- Graphs ------------------------------------------------------------------------------------

#[repr(C)]
#[derive(Clone, Copy)]
struct KernelNodeParams {
    func: *mut c_void,
    grid: [u32; 3],
    block: [u32; 3],
    shared: u32,
    params: *mut *mut c_void,
    extra: *mut *mut c_void,
}

#[repr(C)]
struct KernelNodeParamsV2 {
    v1: KernelNodeParams,
    kern: *mut c_void,
    ctx: *mut c_void,
}

#[repr(C)]
#[derive(Default)]
struct Memcpy3D {
    src_x: usize,
    src_y: usize,
    src_z: usize,
    src_lod: usize,
    src_type: u32,
    src_host: usize,
    src_device: u64,
    src_array: usize,
    reserved0: usize,
    src_pitch: usize,
    src_height: usize,
    dst_x: usize,
    dst_y: usize,
    dst_z: usize,
    dst_lod: usize,
    dst_type: u32,
    dst_host: usize,
    dst_device: u64,
    dst_array: usize,
    reserved1: usize,
    dst_pitch: usize,
    dst_height: usize,
    width: usize,
    height: usize,
    depth: usize,
}

#[test]
fn graphs_as_tinygrad_builds_them() {
    setup();
    let m = load_fixture("kernels");
    let inc = function(m, "increment");
    let fill = function(m, "fill_u32");
    let counter = alloc(8);
    let buf = alloc(64 * 4);
    let copy = alloc(64 * 4);
    check(cu!(cuMemsetD32_v2(counter, 0, 2): u64, u32, usize), "zero");
    let mut g = null_mut();
    check(
        cu!(cuGraphCreate(&mut g, 0): *mut *mut c_void, u32),
        "graph",
    );
    // Node A: fill_u32(buf, 7, 64) through `extra` (v1 params, as tinygrad).
    #[repr(C)]
    struct FillArgs {
        p: u64,
        v: u32,
        n: u32,
    }
    let mut fa = FillArgs {
        p: buf,
        v: 7,
        n: 64,
    };
    let mut fsize = std::mem::size_of::<FillArgs>();
    let mut extra = [
        std::ptr::without_provenance_mut(1),
        ptr(&mut fa),
        std::ptr::without_provenance_mut(2),
        ptr(&mut fsize),
        null_mut(),
    ];
    let mut pa = KernelNodeParams {
        func: fill,
        grid: [1, 1, 1],
        block: [64, 1, 1],
        shared: 0,
        params: null_mut(),
        extra: extra.as_mut_ptr(),
    };
    let mut a = null_mut();
    check(
        cu!(cuGraphAddKernelNode(&mut a, g, std::ptr::null(), 0, ptr(&mut pa)): *mut *mut c_void, *mut c_void, *const *mut c_void, usize, *mut c_void),
        "kernel node v1",
    );
    // Node B: increment(counter, 5) with kernelParams (v2 params), after A.
    let (mut cp, mut by) = (counter, 5u64);
    let mut args = [ptr(&mut cp), ptr(&mut by)];
    let mut pb = KernelNodeParamsV2 {
        v1: KernelNodeParams {
            func: inc,
            grid: [1, 1, 1],
            block: [32, 1, 1],
            shared: 0,
            params: args.as_mut_ptr(),
            extra: null_mut(),
        },
        kern: null_mut(),
        ctx: null_mut(),
    };
    let mut b = null_mut();
    let deps = [a];
    check(
        cu!(cuGraphAddKernelNode_v2(&mut b, g, deps.as_ptr(), 1, ptr(&mut pb)): *mut *mut c_void, *mut c_void, *const *mut c_void, usize, *mut c_void),
        "kernel node v2",
    );
    // Node C: copy buf → copy, after A.
    let mut mc = Memcpy3D {
        src_type: 2,
        src_device: buf,
        src_pitch: 256,
        src_height: 1,
        dst_type: 2,
        dst_device: copy,
        dst_pitch: 256,
        dst_height: 1,
        width: 256,
        height: 1,
        depth: 1,
        ..Default::default()
    };
    let mut c = null_mut();
    check(
        cu!(cuGraphAddMemcpyNode(&mut c, g, deps.as_ptr(), 1, ptr(&mut mc), null_mut()): *mut *mut c_void, *mut c_void, *const *mut c_void, usize, *mut c_void, *mut c_void),
        "memcpy node",
    );
    let mut nodes = 0usize;
    check(
        cu!(cuGraphGetNodes(g, null_mut(), &mut nodes): *mut c_void, *mut *mut c_void, *mut usize),
        "nodes",
    );
    assert_eq!(nodes, 3);
    // The CUDA 11 form (5 arguments), as tinygrad calls it, and the CUDA 12 form.
    let mut exec = null_mut();
    check(
        cu!(cuGraphInstantiate_v2(&mut exec, g, null_mut(), null_mut(), 0): *mut *mut c_void, *mut c_void, *mut *mut c_void, *mut c_char, usize),
        "instantiate",
    );
    let mut exec2 = null_mut();
    check(
        cu!(cuGraphInstantiateWithFlags(&mut exec2, g, 0): *mut *mut c_void, *mut c_void, u64),
        "instantiate with flags",
    );
    for _ in 0..3 {
        check(
            cu!(cuGraphLaunch(exec, null_mut()): *mut c_void, *mut c_void),
            "launch",
        );
    }
    check(
        cu!(cuGraphLaunch(exec2, null_mut()): *mut c_void, *mut c_void),
        "launch 2",
    );
    check(cu!(cuStreamSynchronize(null_mut()): *mut c_void), "sync");
    assert_eq!(dtoh::<u64>(counter, 1)[0], 20);
    assert!(dtoh::<u32>(copy, 64).iter().all(|&x| x == 7));
    // Update the executable graph: new increment and a new fill value and grid.
    let by_p: *mut u64 = &mut by;
    unsafe { by_p.write(100) };
    check(
        cu!(cuGraphExecKernelNodeSetParams_v2(exec, b, ptr(&mut pb)): *mut c_void, *mut c_void, *mut c_void),
        "exec set v2",
    );
    let big = alloc(128 * 4);
    let fa_p: *mut FillArgs = &mut fa;
    unsafe {
        fa_p.write(FillArgs {
            p: big,
            v: 9,
            n: 128,
        })
    };
    pa.grid = [2, 1, 1];
    check(
        cu!(cuGraphExecKernelNodeSetParams(exec, a, ptr(&mut pa)): *mut c_void, *mut c_void, *mut c_void),
        "exec set v1",
    );
    check(
        cu!(cuGraphLaunch(exec, null_mut()): *mut c_void, *mut c_void),
        "launch",
    );
    check(cu!(cuStreamSynchronize(null_mut()): *mut c_void), "sync");
    assert_eq!(dtoh::<u64>(counter, 1)[0], 120);
    assert!(dtoh::<u32>(big, 128).iter().all(|&x| x == 9));
    // Memcpy node update: copy from `big` instead.
    mc.src_device = big;
    check(
        cu!(cuGraphExecMemcpyNodeSetParams(exec, c, ptr(&mut mc), null_mut()): *mut c_void, *mut c_void, *mut c_void, *mut c_void),
        "exec memcpy set",
    );
    check(
        cu!(cuMemsetD32_v2(copy, 0, 64): u64, u32, usize),
        "zero copy",
    );
    check(
        cu!(cuGraphLaunch(exec, null_mut()): *mut c_void, *mut c_void),
        "launch",
    );
    check(cu!(cuCtxSynchronize(): ), "sync");
    assert!(dtoh::<u32>(copy, 64).iter().all(|&x| x == 9));
    assert_eq!(dtoh::<u64>(counter, 1)[0], 220);
    // A node of another graph is refused.
    let mut g2 = null_mut();
    check(
        cu!(cuGraphCreate(&mut g2, 0): *mut *mut c_void, u32),
        "graph 2",
    );
    let mut x = null_mut();
    assert_eq!(
        cu!(cuGraphAddEmptyNode(&mut x, g2, deps.as_ptr(), 1): *mut *mut c_void, *mut c_void, *const *mut c_void, usize),
        1
    );
    for e in [exec, exec2] {
        check(cu!(cuGraphExecDestroy(e): *mut c_void), "exec destroy");
    }
    check(cu!(cuGraphDestroy(g): *mut c_void), "destroy");
    check(cu!(cuGraphDestroy(g2): *mut c_void), "destroy");
}

/// The difftest's graph: a fill of `buf`, an increment of `buf`'s first word after it, and a
/// memcpy node of `buf` after both. The copy sees the increment, on every launch and after
/// updates of both kernel nodes (a copy that depended on the fill only would race with the
/// increment: either result is CUDA's).
#[test]
fn graph_copy_after_the_writers_it_depends_on() {
    setup();
    let m = load_fixture("kernels");
    let inc = function(m, "increment");
    let fill = function(m, "fill_u32");
    let n = 4096usize;
    let buf = alloc(n * 4);
    let copy = alloc(n * 4);
    let mut g = null_mut();
    check(
        cu!(cuGraphCreate(&mut g, 0): *mut *mut c_void, u32),
        "graph",
    );
    let (mut fp, mut fv, mut fn_) = (buf, 5u32, n as u32);
    let mut fargs = [ptr(&mut fp), ptr(&mut fv), ptr(&mut fn_)];
    let mut pf = KernelNodeParams {
        func: fill,
        grid: [(n / 128) as u32, 1, 1],
        block: [128, 1, 1],
        shared: 0,
        params: fargs.as_mut_ptr(),
        extra: null_mut(),
    };
    let mut nf = null_mut();
    check(
        cu!(cuGraphAddKernelNode(&mut nf, g, std::ptr::null(), 0, ptr(&mut pf)): *mut *mut c_void, *mut c_void, *const *mut c_void, usize, *mut c_void),
        "fill node",
    );
    let (mut ip, mut by) = (buf, 1u64);
    let mut iargs = [ptr(&mut ip), ptr(&mut by)];
    let mut pi = KernelNodeParams {
        func: inc,
        grid: [1, 1, 1],
        block: [32, 1, 1],
        shared: 0,
        params: iargs.as_mut_ptr(),
        extra: null_mut(),
    };
    let mut ni = null_mut();
    check(
        cu!(cuGraphAddKernelNode(&mut ni, g, &nf, 1, ptr(&mut pi)): *mut *mut c_void, *mut c_void, *const *mut c_void, usize, *mut c_void),
        "increment node",
    );
    let mut mc = Memcpy3D {
        src_type: 2,
        src_device: buf,
        src_pitch: n * 4,
        src_height: 1,
        dst_type: 2,
        dst_device: copy,
        dst_pitch: n * 4,
        dst_height: 1,
        width: n * 4,
        height: 1,
        depth: 1,
        ..Default::default()
    };
    let deps = [nf, ni];
    let mut nc = null_mut();
    check(
        cu!(cuGraphAddMemcpyNode(&mut nc, g, deps.as_ptr(), 2, ptr(&mut mc), null_mut()): *mut *mut c_void, *mut c_void, *const *mut c_void, usize, *mut c_void, *mut c_void),
        "memcpy node",
    );
    let mut exec = null_mut();
    check(
        cu!(cuGraphInstantiateWithFlags(&mut exec, g, 0): *mut *mut c_void, *mut c_void, u64),
        "instantiate",
    );
    let expect = |fill_value: u32, add: u64| -> Vec<u32> {
        let mut v = vec![fill_value; n];
        let first = (u64::from(fill_value) | (u64::from(fill_value) << 32)) + add;
        v[0] = first as u32;
        v[1] = (first >> 32) as u32;
        v
    };
    for _ in 0..3 {
        check(
            cu!(cuGraphLaunch(exec, null_mut()): *mut c_void, *mut c_void),
            "launch",
        );
    }
    check(cu!(cuCtxSynchronize(): ), "sync");
    assert_eq!(dtoh::<u32>(copy, n), expect(5, 1));
    // New parameters for both kernels: the copy still follows them.
    let (fv_p, by_p): (*mut u32, *mut u64) = (&mut fv, &mut by);
    unsafe {
        fv_p.write(9);
        by_p.write(77);
    }
    pf.grid = [(n / 256) as u32, 1, 1];
    pf.block = [256, 1, 1];
    check(
        cu!(cuGraphExecKernelNodeSetParams(exec, nf, ptr(&mut pf)): *mut c_void, *mut c_void, *mut c_void),
        "update fill",
    );
    check(
        cu!(cuGraphExecKernelNodeSetParams(exec, ni, ptr(&mut pi)): *mut c_void, *mut c_void, *mut c_void),
        "update increment",
    );
    check(
        cu!(cuGraphLaunch(exec, null_mut()): *mut c_void, *mut c_void),
        "launch updated",
    );
    check(cu!(cuCtxSynchronize(): ), "sync");
    assert_eq!(dtoh::<u32>(copy, n), expect(9, 77));
    check(cu!(cuGraphExecDestroy(exec): *mut c_void), "exec destroy");
    check(cu!(cuGraphDestroy(g): *mut c_void), "destroy");
}

#[test]
fn pointer_attributes() {
    let ctx = setup();
    let d = alloc(100);
    let mut t = 0u32;
    check(
        cu!(cuPointerGetAttribute(ptr(&mut t), 2, d + 10): *mut c_void, i32, u64),
        "memory type",
    );
    assert_eq!(t, 2);
    let mut c = null_mut::<c_void>();
    check(
        cu!(cuPointerGetAttribute(ptr(&mut c), 1, d): *mut c_void, i32, u64),
        "context",
    );
    assert_eq!(c, ctx);
    let mut start = 0u64;
    check(
        cu!(cuPointerGetAttribute(ptr(&mut start), 11, d + 99): *mut c_void, i32, u64),
        "start",
    );
    assert_eq!(start, d);
    assert_eq!(
        cu!(cuPointerGetAttribute(ptr(&mut t), 2, d + 100): *mut c_void, i32, u64),
        1
    );
}

// --- The launcher and the documentation ------------------------------------------------------

/// The launcher: `$TEGRAGPU_CUDA_LAUNCHER`, else the one cargo built with this test, else
/// `.device/bin/tegragpu-cuda` under the repository (`$TEGRAGPU_REPO_ROOT` on the device
/// machine, where the test binary runs away from the build tree). None: no launcher here.
fn launcher() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("TEGRAGPU_CUDA_LAUNCHER").filter(|v| !v.is_empty()) {
        return Some(PathBuf::from(p));
    }
    [
        PathBuf::from(env!("CARGO_BIN_EXE_tegragpu-cuda")),
        repo().join(".device/bin/tegragpu-cuda"),
    ]
    .into_iter()
    .find(|p| p.is_file())
}

#[test]
fn launcher_puts_our_library_first() {
    let Some(launcher) = launcher() else {
        eprintln!(
            "NOTICE: launcher_puts_our_library_first skipped: no tegragpu-cuda launcher at {} or {} (set TEGRAGPU_CUDA_LAUNCHER)",
            env!("CARGO_BIN_EXE_tegragpu-cuda"),
            repo().join(".device/bin/tegragpu-cuda").display()
        );
        return;
    };
    let out = std::process::Command::new(&launcher)
        .args(["run", "sh", "-c", "printf %s \"$LD_LIBRARY_PATH\""])
        .env("TEGRAGPU_CUDA_LIB", lib_path())
        .env("LD_LIBRARY_PATH", "/elsewhere")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let path = String::from_utf8(out.stdout).unwrap();
    let (first, rest) = path.split_once(':').expect("two entries");
    assert_eq!(rest, "/elsewhere");
    let link = std::path::Path::new(first).join("libcuda.so.1");
    assert_eq!(
        std::fs::canonicalize(&link).unwrap(),
        std::fs::canonicalize(lib_path()).unwrap()
    );
    // Without a program: usage, exit status 2.
    let st = std::process::Command::new(&launcher)
        .arg("run")
        .output()
        .unwrap();
    assert_eq!(st.status.code(), Some(2));
}

/// The exported functions cuda/src implements (`extern "C" fn cu...`, the rule build.rs uses).
fn implemented() -> Vec<String> {
    let mut v = Vec::new();
    for e in std::fs::read_dir(repo().join("cuda/src")).unwrap() {
        let p = e.unwrap().path();
        if p.extension().and_then(|x| x.to_str()) != Some("rs") || p.ends_with("lib.rs") {
            continue;
        }
        let text = std::fs::read_to_string(&p).unwrap();
        for (i, _) in text.match_indices("extern \"C\" fn ") {
            let name: String = text[i + 14..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if name.starts_with("cu") {
                v.push(name);
            }
        }
    }
    v.sort();
    v
}

#[test]
fn docs_list_the_implemented_functions() {
    let doc = std::fs::read_to_string(repo().join("docs/cuda-driver-api.md")).unwrap();
    let (_, rest) = doc.split_once("<!-- implemented:begin -->").unwrap();
    let (list, _) = rest.split_once("<!-- implemented:end -->").unwrap();
    let mut documented: Vec<String> = list
        .split_whitespace()
        .filter(|w| w.starts_with("cu"))
        .map(String::from)
        .collect();
    documented.sort();
    assert_eq!(
        documented,
        implemented(),
        "docs/cuda-driver-api.md's list is stale"
    );
    // Each implemented name is one of NVIDIA's.
    let names = export_names();
    for n in implemented() {
        assert!(
            names.binary_search(&n).is_ok(),
            "{n} is not one of NVIDIA's names"
        );
    }
}

// --- Limits, cuLaunchKernelEx, host functions, occupancy ------------------------------------------

static HOST_FN_RAN: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

unsafe extern "C" fn host_fn(data: *mut c_void) {
    // Writes the pinned buffer the stream copies to the device after this function.
    *(data as *mut u32) = 0x600d;
    HOST_FN_RAN.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
}

#[test]
fn limits_launch_ex_host_functions_and_occupancy() {
    setup();
    let mut v = 0usize;
    check(
        cu!(cuCtxGetLimit(&mut v, 0): *mut usize, i32),
        "stack limit",
    );
    assert_eq!(v, 1024);
    check(cu!(cuCtxSetLimit(0, 4096): i32, usize), "set stack");
    check(
        cu!(cuCtxGetLimit(&mut v, 0): *mut usize, i32),
        "stack limit",
    );
    assert_eq!(v, 4096);
    check(cu!(cuCtxGetLimit(&mut v, 2): *mut usize, i32), "heap");
    assert_eq!(v, 8 << 20);
    assert_eq!(cu!(cuCtxSetLimit(5, 48): i32, usize), 1);

    let m = load_fixture("kernels");
    let fill = function(m, "fill_u32");
    let d = alloc(256 * 4);
    // cuLaunchKernelEx: no attributes, then a priority hint.
    #[repr(C)]
    struct Attr {
        id: u32,
        pad: u32,
        value: [u32; 16],
    }
    #[repr(C)]
    struct Cfg {
        grid: [u32; 3],
        block: [u32; 3],
        shared: u32,
        stream: *mut c_void,
        attrs: *const Attr,
        num: u32,
    }
    let attr = Attr {
        id: 8,
        pad: 0,
        value: [0; 16],
    };
    let cfg = Cfg {
        grid: [2, 1, 1],
        block: [128, 1, 1],
        shared: 0,
        stream: null_mut(),
        attrs: &attr,
        num: 1,
    };
    let (mut p, mut val, mut n) = (d, 0x77u32, 256u32);
    let mut args = [ptr(&mut p), ptr(&mut val), ptr(&mut n)];
    check(
        cu!(cuLaunchKernelEx(&cfg, fill, args.as_mut_ptr(), null_mut()): *const Cfg, *mut c_void, *mut *mut c_void, *mut *mut c_void),
        "cuLaunchKernelEx",
    );
    assert!(dtoh::<u32>(d, 256).iter().all(|&x| x == 0x77));
    let bad = Attr {
        id: 7,
        pad: 0,
        value: [0; 16],
    };
    let cfg_bad = Cfg { attrs: &bad, ..cfg };
    assert_eq!(
        cu!(cuLaunchKernelEx(&cfg_bad, fill, args.as_mut_ptr(), null_mut()): *const Cfg, *mut c_void, *mut *mut c_void, *mut *mut c_void),
        801
    );

    // A host function runs after the stream's earlier work, and later work waits for it.
    let mut s = null_mut();
    check(
        cu!(cuStreamCreate(&mut s, 0): *mut *mut c_void, u32),
        "stream",
    );
    let mut h: *mut c_void = null_mut();
    check(
        cu!(cuMemHostAlloc(&mut h, 4, 0): *mut *mut c_void, usize, u32),
        "pinned",
    );
    unsafe { *(h as *mut u32) = 1 };
    let before = HOST_FN_RAN.load(std::sync::atomic::Ordering::SeqCst);
    type HostFn = unsafe extern "C" fn(*mut c_void);
    check(
        cu!(cuLaunchHostFunc(s, Some(host_fn as HostFn), h): *mut c_void, Option<HostFn>, *mut c_void),
        "host func",
    );
    check(
        cu!(cuMemcpyHtoDAsync_v2(d, h, 4, s): u64, *const c_void, usize, *mut c_void),
        "copy after",
    );
    check(cu!(cuStreamSynchronize(s): *mut c_void), "sync");
    assert_eq!(
        HOST_FN_RAN.load(std::sync::atomic::Ordering::SeqCst),
        before + 1
    );
    assert_eq!(dtoh::<u32>(d, 1)[0], 0x600d);

    // Occupancy: the block size with the most resident threads.
    let (mut grid, mut block) = (0, 0);
    type SmemFn = unsafe extern "C" fn(i32) -> usize;
    check(
        cu!(cuOccupancyMaxPotentialBlockSize(&mut grid, &mut block, fill, None, 0, 0): *mut i32, *mut i32, *mut c_void, Option<SmemFn>, usize, i32),
        "max potential",
    );
    assert!(block >= 32 && block % 32 == 0 && grid > 0, "{grid} {block}");
    let mut per_sm = 0;
    check(
        cu!(cuOccupancyMaxActiveBlocksPerMultiprocessor(&mut per_sm, fill, block, 0): *mut i32, *mut c_void, i32, usize),
        "occupancy",
    );
    let mut sms = 0;
    check(
        cu!(cuDeviceGetAttribute(&mut sms, 16, 0): *mut i32, i32, i32),
        "sms",
    );
    assert_eq!(grid, per_sm * sms);

    // The cache configuration and the preferred carveout set the shared memory occupancy
    // counts with: "prefer L1" configures the smallest carveout that holds a block (8 KiB; each
    // block takes the 1 KiB reserve), so 8 blocks of a kernel without shared memory fit
    // (NVIDIA's libcuda on the H100: 8 for blocks of 32, 64 and 128 threads).
    let occ = |f: *mut c_void, block: i32, dyn_bytes: usize| {
        let mut n = -1;
        check(
            cu!(cuOccupancyMaxActiveBlocksPerMultiprocessor(&mut n, f, block, dyn_bytes): *mut i32, *mut c_void, i32, usize),
            "occupancy",
        );
        n
    };
    let default_32 = occ(fill, 32, 0);
    assert!(default_32 > 8, "{default_32}");
    check(
        cu!(cuFuncSetCacheConfig(fill, 2): *mut c_void, u32),
        "prefer L1",
    );
    for block in [32, 64, 128] {
        assert_eq!(occ(fill, block, 0), 8, "block {block}, prefer L1");
    }
    check(
        cu!(cuFuncSetCacheConfig(fill, 0): *mut c_void, u32),
        "prefer none",
    );
    assert_eq!(occ(fill, 32, 0), default_32);
    // A carveout of 5 % (8.2 KiB of 164 KiB on sm_87, 11.4 KiB of 228 KiB on sm_90) rounds up
    // to the 16 KiB configuration: 3 blocks of 4 KiB + the 1 KiB reserve.
    let reduce = function(m, "reduce_sum");
    let mut dflt = 0;
    check(
        cu!(cuFuncGetAttribute(&mut dflt, 9, reduce): *mut i32, i32, *mut c_void),
        "carveout",
    );
    assert_eq!(dflt, -1);
    assert!(occ(reduce, 32, 4096) > 3);
    check(
        cu!(cuFuncSetAttribute(reduce, 9, 5): *mut c_void, i32, i32),
        "carveout 5 %",
    );
    assert_eq!(occ(reduce, 32, 4096), 3);
    // The carveout takes precedence over the cache configuration.
    check(
        cu!(cuFuncSetCacheConfig(reduce, 1): *mut c_void, u32),
        "prefer shared",
    );
    assert_eq!(occ(reduce, 32, 4096), 3);
}
