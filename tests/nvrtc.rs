//! Tests of `tegragpu::nvrtc` (libnvrtc loaded at run time).
//!
//! When libnvrtc is not installed these tests print a notice and pass, unless
//! `TEGRAGPU_REQUIRE_NVRTC` is set (CI sets it, with `nvidia-cuda-nvrtc-cu12==12.9.86`).

mod common;

use std::path::Path;
use std::process::Command;
use tegragpu::{nvrtc, Status};

/// Options common to every target; must equal `OPTIONS` in scripts/gen_cubins.py.
const FIXTURE_OPTIONS: &[&str] = &["--std=c++17"];
/// nvrtcVersion() of the pinned pip package nvidia-cuda-nvrtc-cu12==12.9.86.
const FIXTURE_NVRTC: (i32, i32) = (12, 9);

/// `None` (after printing a notice) when nvrtc is missing and not required.
fn nvrtc_or_skip(test: &str) -> Option<()> {
    match nvrtc::version() {
        Ok(_) => Some(()),
        Err(e)
            if e.status == Status::LibraryMissing
                && std::env::var_os("TEGRAGPU_REQUIRE_NVRTC").is_none() =>
        {
            eprintln!(
                "NOTICE: {test} skipped: libnvrtc is not installed ({})",
                e.message
            );
            None
        }
        Err(e) => panic!("nvrtc unavailable but TEGRAGPU_REQUIRE_NVRTC is set: {e:?}"),
    }
}

fn read(rel: &str) -> Vec<u8> {
    let p = common::repo_path(rel);
    std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

#[test]
fn recompiling_the_sources_reproduces_the_committed_fixtures() {
    if nvrtc_or_skip("recompiling_the_sources_reproduces_the_committed_fixtures").is_none() {
        return;
    }
    let v = nvrtc::version().unwrap();
    assert_eq!(
        v,
        FIXTURE_NVRTC,
        "{} reports nvrtc {v:?}; the fixtures need nvidia-cuda-nvrtc-cu12==12.9.86 \
         (set TEGRAGPU_NVRTC to that library)",
        nvrtc::library_path().unwrap().display()
    );
    for (src, prog, stem) in [
        ("tests/fixtures/kernels.cu", "kernels.cu", "kernels"),
        ("tests/fixtures/cubin/globals.cu", "globals.cu", "globals"),
    ] {
        let source = String::from_utf8(read(src)).unwrap();
        for sm in [(8, 7), (9, 0), (10, 0)] {
            let cubin = nvrtc::compile(&source, prog, sm, FIXTURE_OPTIONS).unwrap();
            let want = read(&format!(
                "tests/fixtures/cubin/{stem}.sm_{}{}.cubin",
                sm.0, sm.1
            ));
            assert!(
                cubin == want,
                "{stem} for sm_{}{}: nvrtc output ({} bytes) differs from the fixture ({} bytes); \
                 regenerate with scripts/gen_cubins.py",
                sm.0,
                sm.1,
                cubin.len(),
                want.len()
            );
            // And it loads.
            let m = tegragpu::cubin::Module::parse(&cubin, sm).unwrap();
            assert!(!m.kernels().is_empty());
        }
    }
}

#[test]
fn recompiling_the_builtin_copy_kernel_reproduces_the_embedded_cubins() {
    if nvrtc_or_skip("recompiling_the_builtin_copy_kernel_reproduces_the_embedded_cubins").is_none()
    {
        return;
    }
    assert_eq!(nvrtc::version().unwrap(), FIXTURE_NVRTC);
    let source = String::from_utf8(read("src/builtin/copy.cu")).unwrap();
    for &(ma, mi, embedded) in tegragpu::builtin::COPY_CUBINS {
        let cubin = nvrtc::compile(&source, "copy.cu", (ma, mi), FIXTURE_OPTIONS).unwrap();
        assert!(
            cubin == embedded,
            "src/builtin/copy.sm_{ma}{mi}.cubin differs from nvrtc's output; regenerate with scripts/gen_cubins.py"
        );
        let m = tegragpu::cubin::Module::parse(&cubin, (ma, mi)).unwrap();
        let k = m
            .kernels()
            .iter()
            .find(|k| k.name == tegragpu::builtin::COPY_KERNEL)
            .expect("tg_copy in the cubin");
        assert_eq!(k.param_bytes, 24, "tg_copy(dst, src, n)");
    }
}

#[test]
fn syntax_error_gives_compile_error_with_the_log() {
    if nvrtc_or_skip("syntax_error_gives_compile_error_with_the_log").is_none() {
        return;
    }
    let src = "extern \"C\" __global__ void broken(int* p) { p[0] = undeclared_name_xyz; }\n";
    let e = nvrtc::compile(src, "broken_prog.cu", (8, 7), &[]).unwrap_err();
    assert_eq!(e.status, Status::CompileError, "{e:?}");
    // nvrtc's log names the program and the offending identifier.
    assert!(e.message.contains("broken_prog.cu"), "{}", e.message);
    assert!(e.message.contains("undeclared_name_xyz"), "{}", e.message);
    assert!(
        e.message.contains("--gpu-architecture=sm_87"),
        "{}",
        e.message
    );
}

#[test]
fn compiled_kernel_matches_its_source() {
    if nvrtc_or_skip("compiled_kernel_matches_its_source").is_none() {
        return;
    }
    let src =
        "extern \"C\" __global__ void k3(int a, double b, char* c) { if (a) c[0] = (char)b; }\n";
    let cubin = nvrtc::compile(src, "k3.cu", (9, 0), &["--std=c++17"]).unwrap();
    let m = tegragpu::cubin::Module::parse(&cubin, (9, 0)).unwrap();
    let k = m.kernel("k3").unwrap();
    let got: Vec<(u32, u32)> = k.params.iter().map(|p| (p.offset, p.size)).collect();
    assert_eq!(got, [(0, 4), (8, 8), (16, 8)]);
    assert_eq!(k.param_base, 0x210);
}

#[test]
fn architecture_options_are_rejected() {
    let e = nvrtc::compile("", "x.cu", (8, 7), &["--gpu-architecture=sm_90"]).unwrap_err();
    assert_eq!(e.status, Status::InvalidArgument);
    let e = nvrtc::compile("", "x.cu", (8, 7), &["-arch=sm_90"]).unwrap_err();
    assert_eq!(e.status, Status::InvalidArgument);
    let e = nvrtc::compile("a\0b", "x.cu", (8, 7), &[]).unwrap_err();
    assert_eq!(e.status, Status::InvalidArgument);
}

const CHILD: &str = "TEGRAGPU_NVRTC_TEST_CHILD";
const BOGUS: &str = "/nonexistent/dir/libnvrtc.so.bogus";

/// Runs in a child process (the library is cached per process and the environment is
/// process-wide): with TEGRAGPU_NVRTC pointing nowhere, every call reports LibraryMissing.
#[test]
fn bogus_env_path_gives_library_missing() {
    if std::env::var_os(CHILD).is_some() {
        let e = nvrtc::version().unwrap_err();
        assert_eq!(e.status, Status::LibraryMissing, "{e:?}");
        assert!(e.message.contains(BOGUS), "{}", e.message);
        assert!(
            e.message.contains("pip install nvidia-cuda-nvrtc-cu12"),
            "{}",
            e.message
        );
        let e = nvrtc::compile("__global__ void f() {}", "f.cu", (8, 7), &[]).unwrap_err();
        assert_eq!(e.status, Status::LibraryMissing, "{e:?}");
        return;
    }
    let exe = std::env::current_exe().unwrap();
    let out = Command::new(exe)
        .args([
            "bogus_env_path_gives_library_missing",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD, "1")
        .env("TEGRAGPU_NVRTC", BOGUS)
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "child failed:\n{text}");
    assert!(
        text.contains("1 passed"),
        "child did not run the test:\n{text}"
    );
}

const ANYWHERE_CHILD: &str = "TEGRAGPU_NVRTC_TEST_ANYWHERE";

/// The libnvrtc that `scripts/env.sh` installs into the repository's `build/venv`, if any.
fn venv_nvrtc() -> Option<std::path::PathBuf> {
    let lib = Path::new(env!("CARGO_MANIFEST_DIR")).join("build/venv/lib");
    std::fs::read_dir(lib)
        .ok()?
        .flatten()
        .map(|e| {
            e.path()
                .join("site-packages/nvidia/cuda_nvrtc/lib/libnvrtc.so.12")
        })
        .find(|p| p.is_file())
}

/// libnvrtc installed with pip into the repository's venv (`build/venv`, made by
/// `scripts/env.sh`) is found by a program of the build tree run from another directory, with no
/// venv activated and neither TEGRAGPU_NVRTC nor TEGRAGPU_PYTHON_SITE set: the search looks at
/// the venv beside the file holding the library (here the test binary, under `target/`).
#[test]
fn the_venv_beside_the_build_is_found_from_any_directory() {
    if std::env::var_os(ANYWHERE_CHILD).is_some() {
        let p = nvrtc::library_path().unwrap_or_else(|e| panic!("{e:?}"));
        println!("libnvrtc: {}", p.display());
        return;
    }
    let exe = std::env::current_exe().unwrap();
    let Some(want) = venv_nvrtc() else {
        eprintln!("NOTICE: skipped: no libnvrtc in build/venv (source scripts/env.sh; tg_setup)");
        return;
    };
    let manifest = std::fs::canonicalize(env!("CARGO_MANIFEST_DIR")).unwrap();
    if !std::fs::canonicalize(&exe)
        .unwrap()
        .starts_with(manifest.join("target"))
    {
        eprintln!("NOTICE: skipped: the test binary is not under the repository's target/");
        return;
    }
    let dir = std::env::temp_dir().join(format!("tegragpu-nvrtc-anywhere-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = Command::new(&exe)
        .args([
            "the_venv_beside_the_build_is_found_from_any_directory",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .current_dir(&dir)
        .env(ANYWHERE_CHILD, "1")
        .env_remove("TEGRAGPU_NVRTC")
        .env_remove("TEGRAGPU_PYTHON_SITE")
        .env_remove("VIRTUAL_ENV")
        .env_remove("CONDA_PREFIX")
        .output()
        .unwrap();
    let _ = std::fs::remove_dir(&dir);
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "child failed:\n{text}");
    assert!(
        text.contains("1 passed"),
        "child did not run the test:\n{text}"
    );
    // Found there, unless the dynamic loader or a CUDA toolkit (searched first) has one.
    let found = text
        .lines()
        .find_map(|l| l.split_once("libnvrtc: ").map(|(_, p)| p.trim()))
        .unwrap_or_else(|| panic!("no path printed:\n{text}"));
    if !found.starts_with("/usr/") && !found.starts_with("lib") {
        assert_eq!(Path::new(found), want, "{text}");
    }
}
