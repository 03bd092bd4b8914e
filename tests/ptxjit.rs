//! Tests of `tegragpu::ptxjit` (PTX → cubin through libnvidia-ptxjitcompiler or nvJitLink,
//! loaded at run time).
//!
//! When no PTX compiler library is found these tests print a notice and pass, unless
//! `TEGRAGPU_REQUIRE_PTXJIT` is set. scripts/env.sh installs `nvidia-nvjitlink-cu12==12.9.86`
//! and points `TEGRAGPU_PTXJIT` at it; the NVIDIA driver's libnvidia-ptxjitcompiler.so.1 is
//! found without help on a GPU machine.
//!
//! nvJitLink 12.9 reads PTX ISA <= 8.8, so the PTX compiled here comes from nvrtc 12.9 (found as
//! in tests/nvrtc.rs) or from the nvrtc-built arch.none.fatbin; the nvcc 13.0 warp.ptx (ISA 9.0)
//! is compiled only where the library accepts it.

use std::ffi::{c_char, c_int, c_void, CString};
use std::path::Path;
use tegragpu::cubin::fatbin::{self, EntryKind, Fatbin, Selected};
use tegragpu::cubin::Module;
use tegragpu::{nvrtc, ptxjit, Status};

const WARP_CU: &str = include_str!("fixtures/fatbin/warp.cu");
const WARP_PTX_NVCC13: &str = include_str!("fixtures/fatbin/warp.ptx");
const WARP_FATBIN: &[u8] = include_bytes!("fixtures/fatbin/warp.fatbin");
const ARCH_NONE: &[u8] = include_bytes!("fixtures/fatbin/arch.none.fatbin");

/// Set in the child process of `a_bad_library_path_is_library_missing`.
const CHILD_ENV: &str = "TEGRAGPU_PTXJIT_TEST_CHILD";

/// `None` (after printing a notice) when no PTX compiler library is found and none is required.
fn jit_or_skip(test: &str) -> Option<()> {
    match ptxjit::library() {
        Ok((backend, path)) => {
            eprintln!("{test}: {backend:?} from {}", path.display());
            Some(())
        }
        Err(e)
            if e.status == Status::LibraryMissing
                && std::env::var_os("TEGRAGPU_REQUIRE_PTXJIT").is_none() =>
        {
            eprintln!(
                "NOTICE: {test} skipped: no PTX compiler library ({})",
                e.message
            );
            None
        }
        Err(e) => {
            panic!("PTX compiler library unavailable but TEGRAGPU_REQUIRE_PTXJIT is set: {e:?}")
        }
    }
}

/// PTX for virtual arch `compute_XY` from warp.cu through libnvrtc (opened here with
/// libloading; `tegragpu::nvrtc` compiles to cubins only). `None` when libnvrtc is missing.
fn nvrtc_ptx(arch: &str) -> Option<String> {
    let path = match nvrtc::library_path() {
        Ok(p) => p,
        Err(e) => {
            eprintln!("NOTICE: no libnvrtc to generate PTX with ({})", e.message);
            return None;
        }
    };
    type Create = unsafe extern "C" fn(
        *mut *mut c_void,
        *const c_char,
        *const c_char,
        c_int,
        *const *const c_char,
        *const *const c_char,
    ) -> c_int;
    type Compile = unsafe extern "C" fn(*mut c_void, c_int, *const *const c_char) -> c_int;
    type Size = unsafe extern "C" fn(*mut c_void, *mut usize) -> c_int;
    type Get = unsafe extern "C" fn(*mut c_void, *mut c_char) -> c_int;
    type Destroy = unsafe extern "C" fn(*mut *mut c_void) -> c_int;
    // SAFETY: libnvrtc's initialisers have no preconditions; the types follow nvrtc.h.
    unsafe {
        let lib = libloading::Library::new(&path).unwrap();
        let create: libloading::Symbol<Create> = lib.get(b"nvrtcCreateProgram\0").unwrap();
        let compile: libloading::Symbol<Compile> = lib.get(b"nvrtcCompileProgram\0").unwrap();
        let size: libloading::Symbol<Size> = lib.get(b"nvrtcGetPTXSize\0").unwrap();
        let get: libloading::Symbol<Get> = lib.get(b"nvrtcGetPTX\0").unwrap();
        let destroy: libloading::Symbol<Destroy> = lib.get(b"nvrtcDestroyProgram\0").unwrap();
        let src = CString::new(WARP_CU).unwrap();
        let mut prog = std::ptr::null_mut();
        assert_eq!(
            create(
                &mut prog,
                src.as_ptr(),
                c"warp.cu".as_ptr(),
                0,
                std::ptr::null(),
                std::ptr::null()
            ),
            0
        );
        let opt = CString::new(format!("--gpu-architecture={arch}")).unwrap();
        let opts = [opt.as_ptr()];
        assert_eq!(compile(prog, 1, opts.as_ptr()), 0, "nvrtc {arch}");
        let mut n = 0usize;
        assert_eq!(size(prog, &mut n), 0);
        let mut buf = vec![0u8; n];
        assert_eq!(get(prog, buf.as_mut_ptr().cast()), 0);
        destroy(&mut prog);
        let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
        buf.truncate(end);
        Some(String::from_utf8(buf).unwrap())
    }
}

/// The SM in a cubin's e_flags (both ELF ABI layouts), and whether the arch-specific bit is set.
fn cubin_sm(c: &[u8]) -> (u32, bool) {
    assert_eq!(&c[..4], b"\x7fELF");
    assert_eq!(u16::from_le_bytes([c[18], c[19]]), 190, "EM_CUDA");
    let fl = u32::from_le_bytes(c[48..52].try_into().unwrap());
    match c[7] {
        0x33 => (fl & 0xff, fl & 0x800 != 0),
        0x41 => ((fl >> 8) & 0xff, fl & 0x8 != 0),
        o => panic!("EI_OSABI {o:#x}"),
    }
}

fn check_cubin(c: &[u8], sm: (u32, u32)) {
    assert_eq!(cubin_sm(c).0, sm.0 * 10 + sm.1, "e_flags SM");
    let m = Module::parse(c, sm).unwrap_or_else(|e| panic!("cubin for {sm:?}: {e:?}"));
    assert!(m.kernel("warp_reduce").is_ok());
}

#[test]
fn nvrtc_ptx_compiles_for_sm87_and_sm90() {
    if jit_or_skip("nvrtc_ptx_compiles_for_sm87_and_sm90").is_none() {
        return;
    }
    for sm in [(8, 7), (9, 0)] {
        let Some(ptx) = nvrtc_ptx(&format!("compute_{}{}", sm.0, sm.1)) else {
            assert!(
                std::env::var_os("TEGRAGPU_REQUIRE_NVRTC").is_none(),
                "libnvrtc required"
            );
            return;
        };
        assert!(ptx.contains(&format!(".target sm_{}{}", sm.0, sm.1)));
        let c = ptxjit::compile_ptx(&ptx, sm, &[]).unwrap_or_else(|e| panic!("{sm:?}: {e:?}"));
        check_cubin(&c, sm);
    }
}

#[test]
fn fatbin_ptx_compiles_including_arch_specific_targets() {
    if jit_or_skip("fatbin_ptx_compiles_including_arch_specific_targets").is_none() {
        return;
    }
    // nvrtc 12.9 PTX (ISA 8.8) from arch.none.fatbin.
    let f = Fatbin::parse(ARCH_NONE).unwrap();
    let ptx = |name: &str| {
        let e = f
            .entries
            .iter()
            .find(|e| e.kind == EntryKind::Ptx && e.to_string() == name)
            .unwrap();
        e.ptx_text().unwrap()
    };
    // compute_90 for sm_90 (what select gives a 9.x device without SASS).
    let c = ptxjit::compile_ptx(&ptx("PTX compute_90"), (9, 0), &[]).unwrap();
    check_cubin(&c, (9, 0));
    assert!(!cubin_sm(&c).1);
    // compute_90a: .target sm_90a needs --gpu-name=sm_90a (ptxas refuses it for plain sm_90).
    // ABI 7 cubins (nvJitLink 12.9) mark it with EF_CUDA_ACCELERATORS; the driver 580 compiler
    // writes ABI 8 cubins whose e_flags look like plain sm_90 ones.
    let c = ptxjit::compile_ptx(&ptx("PTX compute_90a"), (9, 0), &[]).unwrap();
    let (sm, arch_specific) = cubin_sm(&c);
    assert_eq!(sm, 90);
    if c[7] == 0x33 {
        assert!(arch_specific, "e_flags of the sm_90a cubin");
    }
    // compute_100f on a sm_103 (same family).
    let c = ptxjit::compile_ptx(&ptx("PTX compute_100f"), (10, 3), &[]).unwrap();
    assert_eq!(cubin_sm(&c).0, 103);
    // PTX for an older virtual arch compiles for a newer SM.
    let c = ptxjit::compile_ptx(&ptx("PTX compute_90"), (10, 0), &["-O3"]);
    if let Err(e) = &c {
        // nvJitLink and ptxas spell options alike for -O3; anything else is a real failure.
        panic!("{e:?}");
    }
    assert_eq!(cubin_sm(&c.unwrap()).0, 100);
}

#[test]
fn nvcc13_ptx_compiles_or_the_error_names_the_version() {
    if jit_or_skip("nvcc13_ptx_compiles_or_the_error_names_the_version").is_none() {
        return;
    }
    // What fatbin::select hands over for a sm_100 device: the compute_90 PTX of warp.fatbin.
    let Selected::Ptx(ptx, arch) = fatbin::select(WARP_FATBIN, (10, 0)).unwrap() else {
        panic!("expected PTX");
    };
    assert_eq!(arch, (9, 0));
    for (text, what) in [(WARP_PTX_NVCC13, "warp.ptx"), (ptx.as_str(), "fatbin PTX")] {
        match ptxjit::compile_ptx(text, (9, 0), &[]) {
            Ok(c) => check_cubin(&c, (9, 0)),
            Err(e) => {
                assert_eq!(e.status, Status::CompileError, "{what}: {e:?}");
                assert!(
                    e.message.to_lowercase().contains("version"),
                    "{what}: the log should name the unsupported PTX version: {e:?}"
                );
                eprintln!(
                    "NOTICE: {what} (PTX ISA 9.0) not compiled by this library: {}",
                    e.message.lines().last().unwrap_or("")
                );
            }
        }
    }
}

#[test]
fn errors_carry_the_log_or_name_the_argument() {
    // Argument checks come before the library is loaded.
    let e = ptxjit::compile_ptx(".version 8.0\n", (9, 10), &[]).unwrap_err();
    assert_eq!(e.status, Status::InvalidArgument);
    let e = ptxjit::compile_ptx(".version 8.0\n", (9, 0), &["--gpu-name=sm_80"]).unwrap_err();
    assert_eq!(e.status, Status::InvalidArgument);
    let e = ptxjit::compile_ptx(".version 8.0\n", (9, 0), &["-arch=sm_80"]).unwrap_err();
    assert_eq!(e.status, Status::InvalidArgument);
    let e = ptxjit::compile_ptx(".version\0 8.0\n", (9, 0), &[]).unwrap_err();
    assert_eq!(e.status, Status::InvalidArgument);
    if jit_or_skip("errors_carry_the_log_or_name_the_argument").is_none() {
        return;
    }
    let bad = ".version 8.0\n.target sm_90\n.address_size 64\n\
               .visible .entry k()\n{\n  bogus.instruction %r1;\n  ret;\n}\n";
    let e = ptxjit::compile_ptx(bad, (9, 0), &[]).unwrap_err();
    assert_eq!(e.status, Status::CompileError, "{e:?}");
    assert!(
        e.message.contains("bogus"),
        "the log names the bad line: {e:?}"
    );
    let e = ptxjit::compile_ptx(bad, (9, 0), &["--no-such-option"]).unwrap_err();
    assert_eq!(e.status, Status::CompileError, "{e:?}");
}

#[test]
fn concurrent_compiles_succeed() {
    if jit_or_skip("concurrent_compiles_succeed").is_none() {
        return;
    }
    let f = Fatbin::parse(ARCH_NONE).unwrap();
    let ptx = f.entries[4].ptx_text().unwrap(); // compute_90
    assert!(ptx.contains(".target sm_90"));
    std::thread::scope(|s| {
        let hs: Vec<_> = (0..4)
            .map(|_| s.spawn(|| ptxjit::compile_ptx(&ptx, (9, 0), &[])))
            .collect();
        let outs: Vec<Vec<u8>> = hs.into_iter().map(|h| h.join().unwrap().unwrap()).collect();
        for o in &outs {
            assert_eq!(o, &outs[0], "the same PTX gives the same cubin");
        }
    });
}

#[test]
fn a_bad_library_path_is_library_missing() {
    if std::env::var_os(CHILD_ENV).is_some() {
        // In the child: TEGRAGPU_PTXJIT names a file that does not exist.
        let e = ptxjit::compile_ptx(".version 8.0\n.target sm_90\n", (9, 0), &[]).unwrap_err();
        assert_eq!(e.status, Status::LibraryMissing, "{e:?}");
        for want in [
            "TEGRAGPU_PTXJIT",
            "libnvidia-ptxjitcompiler.so.1",
            "nvJitLink",
        ] {
            assert!(e.message.contains(want), "{want:?} not in {e:?}");
        }
        assert!(e.message.len() < 400, "short message: {e:?}");
        return;
    }
    let exe = std::env::current_exe().unwrap();
    let out = std::process::Command::new(exe)
        .args([
            "--exact",
            "a_bad_library_path_is_library_missing",
            "--nocapture",
        ])
        .env(CHILD_ENV, "1")
        .env(
            ptxjit::ENV_PTXJIT,
            Path::new("/nonexistent/libnvJitLink.so.12"),
        )
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "child failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("1 passed"));
}
