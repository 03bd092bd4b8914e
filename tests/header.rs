//! The committed C header must be exactly what cbindgen generates from `src/capi/` (entry point `mod.rs`), and it
//! must compile as C99 and as C++ with warnings as errors.
//!
//! `TEGRAGPU_BLESS=1 cargo test --test header` (or `scripts/gen-header.sh`) rewrites
//! `include/tegragpu.h` instead of failing.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    common::repo_root()
}

fn generate() -> String {
    let root = root();
    let config =
        cbindgen::Config::from_file(root.join("cbindgen.toml")).expect("cbindgen.toml parses");
    let bindings = cbindgen::Builder::new()
        .with_config(config)
        .with_src(root.join("src/capi/mod.rs"))
        .generate()
        .expect("cbindgen generates the header");
    let mut out = Vec::new();
    bindings.write(&mut out);
    String::from_utf8(out).expect("header is UTF-8")
}

#[test]
fn header_is_fresh() {
    let path = root().join("include/tegragpu.h");
    let fresh = generate();
    if std::env::var("TEGRAGPU_BLESS")
        .map(|v| v == "1")
        .unwrap_or(false)
    {
        std::fs::write(&path, &fresh).expect("write include/tegragpu.h");
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    if committed != fresh {
        let first = committed
            .lines()
            .zip(fresh.lines())
            .position(|(a, b)| a != b);
        panic!(
            "include/tegragpu.h is stale (first difference at line {}); regenerate with \
             scripts/gen-header.sh (TEGRAGPU_BLESS=1 cargo test --test header) and commit it",
            first
                .map(|l| l + 1)
                .unwrap_or(committed.lines().count().min(fresh.lines().count()) + 1)
        );
    }
}

#[test]
fn header_declares_the_whole_api() {
    let h = generate();
    // The function list of the C API contract (names fixed).
    let functions = [
        "tg_device_open",
        "tg_device_close",
        "tg_device_get_info",
        "tg_device_synchronize",
        "tg_device_get_fault",
        "tg_buf_alloc",
        "tg_buf_cpu_ptr",
        "tg_buf_gpu_address",
        "tg_buf_size",
        "tg_buf_free",
        "tg_buf_export_dmabuf",
        "tg_module_load",
        "tg_module_load_file",
        "tg_module_compile_cuda",
        "tg_module_destroy",
        "tg_module_get_kernel",
        "tg_kernel_destroy",
        "tg_kernel_get_attributes",
        "tg_kernel_get_param",
        "tg_queue_create",
        "tg_queue_create_with_depth",
        "tg_queue_destroy",
        "tg_launch",
        "tg_launch_args",
        "tg_queue_copy",
        "tg_queue_signal",
        "tg_queue_wait",
        "tg_queue_barrier",
        "tg_queue_submit",
        "tg_queue_synchronize",
        "tg_signal_create",
        "tg_signal_destroy",
        "tg_signal_value",
        "tg_signal_timestamp",
        "tg_signal_set",
        "tg_signal_wait",
        "tg_status_str",
        "tg_last_error_message",
        "tg_version",
    ];
    for f in functions {
        let declared = h.contains(&format!(" {f}(")) || h.contains(&format!("*{f}("));
        assert!(declared, "{f} is not declared in the header");
    }
    for t in [
        "tg_device",
        "tg_buf",
        "tg_module",
        "tg_kernel",
        "tg_queue",
        "tg_signal",
    ] {
        assert!(
            h.contains(&format!("typedef struct {t} {t};")),
            "opaque handle {t} missing"
        );
    }
    for line in [
        "TG_OK = 0,",
        "TG_ERROR_INVALID_ARGUMENT = 1,",
        "TG_ERROR_NULL_POINTER = 2,",
        "TG_ERROR_INVALID_HANDLE = 3,",
        "TG_ERROR_INTERNAL = 15,",
        "TG_QUEUE_COMPUTE = 0,",
        "TG_QUEUE_COPY = 1,",
        "#define TG_BUF_CPU_CACHED 1",
        "#define TG_BUF_WRITE_COMBINED 2",
        "#define TG_BUF_ZEROED 4",
        "#define TG_BUF_DEVICE_LOCAL 8",
        "#define TG_VERSION_MAJOR ",
        "#define TG_VERSION_MINOR ",
        "#define TG_VERSION_PATCH ",
        "const char *tg_status_str(tg_status status);",
        "tg_queue_kind kind,",
    ] {
        assert!(h.contains(line), "header lacks `{line}`");
    }
    // Nothing of the Rust-side receivers leaks into C.
    assert!(!h.contains("tg_status_arg") && !h.contains("tg_queue_kind_arg"));
}

/// Compile `src` with `compiler` and the strict flags; `None` when the compiler is not installed.
fn try_compile(compiler: &str, std_flag: &str, ext: &str, src: &str) -> Option<(bool, String)> {
    let dir = std::env::temp_dir().join(format!("tegragpu-header-{}-{}", std::process::id(), ext));
    std::fs::create_dir_all(&dir).ok()?;
    let file = dir.join(format!("check.{ext}"));
    std::fs::write(&file, src).ok()?;
    let include: &Path = &root().join("include");
    let out = Command::new(compiler)
        .args([
            std_flag,
            "-Wall",
            "-Wextra",
            "-Werror",
            "-pedantic",
            "-fsyntax-only",
            "-I",
        ])
        .arg(include)
        .arg(&file)
        .output()
        .ok()?;
    let _ = std::fs::remove_dir_all(&dir);
    Some((
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    ))
}

const USE_HEADER: &str = r#"#include "tegragpu.h"
static int use_everything(void) {
    tg_device_info info;
    tg_fault_report fault;
    tg_kernel_attributes attrs;
    tg_launch_config cfg = {sizeof(tg_launch_config), {1, 1, 1}, {32, 1, 1}, 0, 0, {0, 0, 0}};
    tg_status st = TG_OK;
    info.struct_size = sizeof info;
    fault.struct_size = sizeof fault;
    attrs.struct_size = sizeof attrs;
    (void)cfg;
    (void)tg_status_str(st);
    (void)tg_last_error_message();
    return (int)(tg_version() >> 16) == TG_VERSION_MAJOR ? 0 : 1;
}
int main(void) { return use_everything(); }
"#;

fn require_compilers() -> bool {
    std::env::var("TEGRAGPU_REQUIRE_CC")
        .map(|v| v == "1")
        .unwrap_or(false)
}

#[test]
fn header_compiles_as_c99() {
    match try_compile("cc", "-std=c99", "c", USE_HEADER) {
        Some((ok, log)) => assert!(ok, "tegragpu.h does not compile as C99:\n{log}"),
        None if require_compilers() => panic!("cc not found but TEGRAGPU_REQUIRE_CC=1"),
        None => eprintln!("skipped: no C compiler (cc)"),
    }
}

#[test]
fn header_compiles_as_cxx() {
    match try_compile("c++", "-std=c++11", "cpp", USE_HEADER) {
        Some((ok, log)) => assert!(ok, "tegragpu.h does not compile as C++11:\n{log}"),
        None if require_compilers() => panic!("c++ not found but TEGRAGPU_REQUIRE_CC=1"),
        None => eprintln!("skipped: no C++ compiler (c++)"),
    }
}
