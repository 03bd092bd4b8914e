//! The exports, `cuGetProcAddress`, error names, the launcher and the documented list.

use crate::*;
use std::ffi::{c_char, c_void, CStr, CString};
use std::path::PathBuf;
use std::ptr::null_mut;

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

/// The families this library refuses, one or two names each: multicast objects, external
/// memory and semaphores, sparse mappings, shareable handles of memory pools, batched prefetches
/// of managed memory, graphics interop.
const REFUSED: [&str; 10] = [
    "cuMulticastCreate",
    "cuImportExternalSemaphore",
    "cuImportExternalMemory",
    "cuMemMapArrayAsync",
    "cuDestroyExternalSemaphore",
    "cuSignalExternalSemaphoresAsync",
    "cuExternalMemoryGetMappedBuffer",
    "cuMemPrefetchBatchAsync",
    "cuGraphicsMapResources",
    "cuGraphicsUnregisterResource",
];

const CHILD_ENV: &str = "TEGRAGPU_CUDA_TEST_REFUSED_CHILD";

/// Each refused function answers `CUDA_ERROR_NOT_SUPPORTED` every time and logs its name once
/// (warn level): checked in a child process with `TEGRAGPU_LOG=warn`, which calls each twice.
#[test]
fn refused_families_answer_not_supported_and_log_their_name_once() {
    if std::env::var_os(CHILD_ENV).is_some() {
        check(cu!(cuInit(0): u32), "cuInit");
        for name in REFUSED {
            for _ in 0..2 {
                let g: unsafe extern "C" fn() -> CUresult = f(name);
                assert_eq!(unsafe { g() }, 801, "{name}");
            }
        }
        return;
    }
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "exports::refused_families_answer_not_supported_and_log_their_name_once",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, "1")
        .env("TEGRAGPU_LOG", "warn")
        .env("TEGRAGPU_CUDA_LIB", lib_path())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "child failed: {err}");
    for name in REFUSED {
        let line = format!("{name} is not implemented by this libcuda: CUDA_ERROR_NOT_SUPPORTED");
        assert_eq!(
            err.matches(&line).count(),
            1,
            "{name}: logged once; the child's log:\n{err}"
        );
    }
    // And in this process too (whatever logged them before).
    check(cu!(cuInit(0): u32), "cuInit");
    for name in REFUSED {
        let g: unsafe extern "C" fn() -> CUresult = f(name);
        assert_eq!(unsafe { g() }, 801, "{name}");
    }
}

/// A stream that is not capturing: the capture queries say so; the thread's capture mode is
/// kept; the legacy default stream cannot capture.
#[test]
fn stream_capture_queries_answer_none() {
    setup();
    let mut st = 9u32;
    check(
        cu!(cuStreamIsCapturing(std::ptr::null_mut(), &mut st): *mut std::ffi::c_void, *mut u32),
        "is capturing",
    );
    assert_eq!(st, 0);
    let (mut id, mut n) = (7u64, 5usize);
    let mut g: *mut std::ffi::c_void = std::ptr::without_provenance_mut(8);
    let mut deps: *const std::ffi::c_void = std::ptr::without_provenance(8);
    st = 9;
    check(
        cu!(cuStreamGetCaptureInfo_v2(std::ptr::null_mut(), &mut st, &mut id, &mut g, &mut deps, &mut n): *mut std::ffi::c_void, *mut u32, *mut u64, *mut *mut std::ffi::c_void, *mut *const std::ffi::c_void, *mut usize),
        "capture info",
    );
    assert_eq!(
        (st, id, g.is_null(), deps.is_null(), n),
        (0, 0, true, true, 0)
    );
    let mut mode = 2u32;
    check(
        cu!(cuThreadExchangeStreamCaptureMode(&mut mode): *mut u32),
        "exchange",
    );
    assert_eq!(mode, 0);
    check(
        cu!(cuThreadExchangeStreamCaptureMode(&mut mode): *mut u32),
        "exchange back",
    );
    assert_eq!(mode, 2);
    assert_eq!(
        cu!(cuStreamBeginCapture_v2(std::ptr::null_mut(), 0): *mut std::ffi::c_void, u32),
        900
    );
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

const LOG_CHILD_ENV: &str = "TEGRAGPU_CUDA_TEST_LOG_CHILD";

/// A failing call is logged at debug level: shown with `TEGRAGPU_LOG=debug`, not with `warn`
/// (checked in child processes, one per level).
#[test]
fn failures_are_logged_at_debug_level_only() {
    if std::env::var_os(LOG_CHILD_ENV).is_some() {
        check(cu!(cuInit(0): u32), "cuInit");
        let mut d = 0i32;
        assert_eq!(cu!(cuDeviceGet(&mut d, 999): *mut i32, i32), 101);
        return;
    }
    for (level, shown) in [("warn", false), ("off", false), ("debug", true)] {
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "exports::failures_are_logged_at_debug_level_only",
                "--test-threads=1",
            ])
            .env(LOG_CHILD_ENV, "1")
            .env("TEGRAGPU_LOG", level)
            .env("TEGRAGPU_CUDA_LIB", lib_path())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "child failed: {err}");
        assert_eq!(
            err.contains("cuDeviceGet: CUDA_ERROR_INVALID_DEVICE"),
            shown,
            "TEGRAGPU_LOG={level}; the child's log:\n{err}"
        );
    }
}
