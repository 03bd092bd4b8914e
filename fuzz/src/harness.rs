//! The bodies of the two fuzz targets, shared by the cargo-fuzz binaries (`fuzz/fuzz_targets/`)
//! and the stable-toolchain smoke test (`tests/fuzz_smoke.rs`, which includes this file with
//! `#[path]`). Only `tegragpu` and `std` are used here.
//!
//! Both targets run on the emulated Orin (`tg_device_open("emu")`) through the C API functions
//! themselves and check the same invariants (docs/fuzzing.md):
//!
//! - no panic: the C API turns a caught panic into `TG_ERROR_INTERNAL`, which is a bug here
//!   (as is any other `TG_ERROR_INTERNAL`); a panic outside the C API fails the run (libFuzzer
//!   aborts on it, the smoke test's panic hook records it);
//! - the error contract: a failed call names itself in `tg_last_error_message()`, leaves its
//!   out-parameters untouched, and writes no more of a struct than its `struct_size`;
//! - no hang: every wait is bounded (at most a few milliseconds, except the final
//!   synchronisations, bounded by seconds, whose timeout is reported as a hang);
//! - no leak: once every object is destroyed, the handle table, the open file descriptors and
//!   the process mappings are back to their baseline.
//!
//! Target (a), `module_load`, is in `harness/module_load.rs`; target (b), `capi_sequence`, in
//! `harness/capi_sequence.rs` (its C API calls in `capi_sequence/op.rs`, launches in
//! `capi_sequence/launch.rs`). They are declared with `#[path]`, so that the fuzz crate (`mod
//! harness`) and the smoke test (which includes this file with `#[path]`) find the same files.
#![allow(dead_code)]

use std::ffi::{c_void, CStr, CString};
use std::ptr::{null, null_mut};
use std::sync::Mutex;
use tegragpu::capi::*;

/// Fixture cubins and texts the targets load (also the seeds of the corpora).
pub const KERNELS_SM87: &[u8] = include_bytes!("../../tests/fixtures/cubin/kernels.sm_87.cubin");
pub const GLOBALS_SM87: &[u8] = include_bytes!("../../tests/fixtures/cubin/globals.sm_87.cubin");
pub const KERNELS_SM90: &[u8] = include_bytes!("../../tests/fixtures/cubin/kernels.sm_90.cubin");
pub const WARP_FATBIN: &[u8] = include_bytes!("../../tests/fixtures/fatbin/warp.fatbin");
pub const WARP_PTX: &[u8] = include_bytes!("../../tests/fixtures/fatbin/warp.ptx");
pub const WARP_HOST_ELF: &[u8] = include_bytes!("../../tests/fixtures/fatbin/warp.sm_90.o");

/// Kernels of `KERNELS_SM87` (tests/fixtures/kernels.cu), which the emulated GPU runs.
pub const FIXTURE_KERNELS: &[&str] = &[
    "empty_kernel",
    "vector_add",
    "saxpy",
    "matmul_tiled",
    "reduce_sum",
    "increment",
    "fill_u32",
    "mixed_params",
    "uses_local",
    "bounded_128",
    "big_params",
];
/// Kernels and variables of `GLOBALS_SM87` (tests/fixtures/cubin/globals.cu).
pub const GLOBALS_KERNELS: &[&str] = &["use_globals", "switchy", "stack_user"];
pub const GLOBALS_VARS: &[&str] = &["g_zero", "g_init", "g_ptr", "c_table"];

/// Longest a final synchronisation may take before the run counts as hung (the emulated GPU
/// runs every launch of these targets in well under a second; the machine may be loaded).
const HANG_NS: u64 = 20_000_000_000;

// ------------------------------------------------------------------------------------------
// Status checks

/// `tg_last_error_message()` as a String.
pub fn last_error() -> String {
    // SAFETY: the library returns a NUL-terminated string valid until the next failing call on
    // this thread.
    unsafe { CStr::from_ptr(tg_last_error_message()) }
        .to_string_lossy()
        .into_owned()
}

/// The contract every call keeps: never `TG_ERROR_INTERNAL` (a caught panic or a broken
/// invariant), and a failure names the call in the thread's last-error message.
fn check(call: &str, st: tg_status) -> tg_status {
    if trace() {
        if st == tg_status::TG_OK {
            eprintln!("  {call} -> TG_OK");
        } else {
            eprintln!("  {call} -> {st:?}: {}", last_error());
        }
    }
    if st == tg_status::TG_ERROR_INTERNAL {
        panic!("BUG: {call} returned TG_ERROR_INTERNAL: {}", last_error());
    }
    if st != tg_status::TG_OK {
        let msg = last_error();
        let named = msg
            .strip_prefix(call)
            .is_some_and(|rest| rest.starts_with(':'));
        assert!(
            named,
            "{call} failed with {st:?} but tg_last_error_message() is {msg:?}"
        );
    }
    st
}

/// `TEGRAGPU_FUZZ_TRACE=1`: print every call and its status (to read what an input does).
fn trace() -> bool {
    static T: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *T.get_or_init(|| std::env::var_os("TEGRAGPU_FUZZ_TRACE").is_some_and(|v| v != "0"))
}

/// Call a C API function and check its status: `c!(tg_buf_free(b))`.
macro_rules! c {
    ($f:ident ( $($a:expr),* $(,)? )) => {{
        // SAFETY: every pointer argument is NULL or valid for what the function reads or
        // writes (the harness keeps its buffers alive across the call); handles are checked by
        // the library.
        let st = unsafe { $f($($a),*) };
        check(stringify!($f), st)
    }};
}

/// Counts that must return to their baseline once every object is destroyed: live handles,
/// open file descriptors, and the process mappings (`tegragpu::os::mapping_count`). Private
/// anonymous mappings (no path, not shared: malloc arenas, AddressSanitizer's allocator
/// regions, thread stacks that glibc caches after a thread exits) come and go with the
/// allocators, and the library makes none (its GPU memory, USERD and doorbell mappings are
/// shared or file-backed; on the emulated device memfds and shared anonymous memory), so they
/// are only held to `ANON_SLACK` above the baseline (a runaway); every other mapping must
/// match exactly.
#[derive(Debug, Clone)]
pub struct Counts {
    pub handles: usize,
    pub fds: usize,
    pub mappings: usize,
    /// Mappings that are shared or have a path.
    pub named_mappings: usize,
    maps: String,
}

/// How far private anonymous mappings may exceed their baseline (glibc keeps up to 8 malloc
/// arenas per core and 40 MiB of thread stacks, AddressSanitizer maps its allocator's regions
/// as it grows: a few hundred lines in a long run).
const ANON_SLACK: usize = 4096;

pub fn counts() -> Counts {
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap_or_default();
    Counts {
        handles: live_handles(),
        fds: fd_count(),
        mappings: tegragpu::os::mapping_count(),
        named_mappings: maps.lines().filter(|l| is_named(l)).count(),
        maps,
    }
}

/// A /proc/self/maps line that is shared or has a path (file, memfd, [heap], [stack], ...).
fn is_named(line: &str) -> bool {
    let mut f = line.split_whitespace();
    let perms = f.nth(1).unwrap_or("");
    perms.ends_with('s') || f.nth(3).is_some()
}

/// Open file descriptors other than pipes: `tegragpu::os::open_fd_count()` less the pipes that
/// the fuzzing runtime opens on its own (libFuzzer's symbolizer process, started the first time
/// it prints a NEW_FUNC line). The library never creates pipes.
pub fn fd_count() -> usize {
    let pipes = std::fs::read_dir("/proc/self/fd")
        .map(|d| {
            d.filter_map(|e| e.ok())
                .filter(|e| {
                    std::fs::read_link(e.path())
                        .is_ok_and(|l| l.to_string_lossy().starts_with("pipe:"))
                })
                .count()
        })
        .unwrap_or(0);
    tegragpu::os::open_fd_count().saturating_sub(pipes)
}

/// Whether the emulated kernel keeps buffer pages in memfds (`TEGRAGPU_EMU_MEMFD_BACKING`, the
/// emulator's own rule): a buffer, and retired memory in its grace period, then holds one.
fn memfd_backing() -> bool {
    std::env::var_os("TEGRAGPU_EMU_MEMFD_BACKING").is_some_and(|v| !v.is_empty() && v != "0")
}

/// "fd -> target" of every open descriptor.
fn open_fds() -> Vec<String> {
    std::fs::read_dir("/proc/self/fd")
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| {
                    let l = std::fs::read_link(e.path()).unwrap_or_default();
                    format!("{} -> {}", e.file_name().to_string_lossy(), l.display())
                })
                .collect()
        })
        .unwrap_or_default()
}

fn assert_counts(what: &str, baseline: &Counts) {
    let now = counts();
    let ok = now.handles == baseline.handles
        && now.fds == baseline.fds
        && now.named_mappings == baseline.named_mappings
        && now.mappings <= baseline.mappings + ANON_SLACK;
    if !ok {
        let old: Vec<&str> = baseline.maps.lines().collect();
        let new: Vec<&str> = now.maps.lines().collect();
        let gone: Vec<&&str> = old.iter().filter(|l| !new.contains(l)).collect();
        let added: Vec<&&str> = new.iter().filter(|l| !old.contains(l)).collect();
        let fds = open_fds();
        let key = |c: &Counts| (c.handles, c.fds, c.named_mappings, c.mappings);
        panic!(
            "LEAK after {what}: (handles, fds, shared/file mappings, all mappings) {:?}, \
             baseline {:?}\nmappings gone: {gone:#?}\nmappings added: {added:#?}\n\
             open fds: {fds:#?}",
            key(&now),
            key(baseline)
        );
    }
}

fn open_emu() -> usize {
    let mut dev = null_mut();
    let st = c!(tg_device_open(c"emu".as_ptr(), &mut dev));
    assert_eq!(
        st,
        tg_status::TG_OK,
        "tg_device_open(\"emu\"): {}",
        last_error()
    );
    dev as usize
}

fn device_faulted(dev: usize) -> bool {
    // SAFETY: all-zero is a valid tg_fault_report.
    let mut r: tg_fault_report = unsafe { std::mem::zeroed() };
    r.struct_size = std::mem::size_of::<tg_fault_report>() as u32;
    c!(tg_device_get_fault(dev as *const tg_device, &mut r)) == tg_status::TG_OK
}

/// Names after "...; it has: " in a NOT_FOUND message ("a, b, c" or "none").
fn listed_names(msg: &str) -> Vec<String> {
    match msg.split_once("; it has: ") {
        Some((_, rest)) if rest != "none" => rest
            .split(", ")
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect(),
        _ => Vec::new(),
    }
}

/// Names the Rust-level loader finds in `data` for `sm` (kernels, globals); `None` when it
/// does not parse or is PTX (compiled, not parsed). The same parser the C API runs.
fn parsed_names(data: &[u8], sm: (u32, u32)) -> Option<(Vec<String>, Vec<String>)> {
    use tegragpu::cubin::fatbin::{self, InputKind, Selected};
    let owned;
    let code: &[u8] = match fatbin::kind_of(data) {
        InputKind::Cubin | InputKind::Unknown => data,
        InputKind::Fatbin | InputKind::HostElf => match fatbin::select(data, sm) {
            Ok(Selected::Cubin(c, _)) => {
                owned = c;
                &owned
            }
            _ => return None,
        },
        InputKind::Ptx => return None,
    };
    let m = tegragpu::cubin::Module::parse(code, sm).ok()?;
    Some((
        m.kernels().iter().map(|k| k.name.clone()).collect(),
        m.global_symbols().iter().map(|g| g.name.clone()).collect(),
    ))
}

/// `.entry NAME` names of PTX text.
fn ptx_entries(data: &[u8]) -> Vec<String> {
    let text = String::from_utf8_lossy(data);
    let mut out = Vec::new();
    let mut rest = &text[..];
    while let Some(i) = rest.find(".entry") {
        rest = &rest[i + 6..];
        let name: String = rest
            .trim_start()
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '$')
            .collect();
        if !name.is_empty() && out.len() < 64 {
            out.push(name);
        }
    }
    out
}

fn cstring(s: &str) -> Option<CString> {
    CString::new(s).ok()
}

#[path = "harness/module_load.rs"]
mod module_load;
pub use module_load::{module_load, module_load_reset};

#[path = "harness/capi_sequence.rs"]
mod capi_sequence;
pub use capi_sequence::{capi_sequence, set_tolerated};
// Public for the fuzz crate's users (the smoke test, which includes this file, does not use it).
#[allow(unused_imports)]
pub use capi_sequence::Input;
