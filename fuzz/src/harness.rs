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

// ------------------------------------------------------------------------------------------
// Target (a): module_load

struct LoadCtx {
    dev: usize,
    queue: usize,
    scratch: usize,
    scratch_va: u64,
    scratch_cpu: *mut u8,
    sm: (u32, u32),
    /// Live handles and open descriptors with the context open and no module loaded.
    open: (usize, usize),
}

struct LoadState {
    ctx: Option<LoadCtx>,
    /// Counts with no context open (taken after a first open/close, so one-time process
    /// set-up is not counted).
    closed: Option<Counts>,
    runs: u64,
}

// SAFETY: scratch_cpu is the CPU mapping of the context's own buffer, used under LOAD's lock.
unsafe impl Send for LoadCtx {}

static LOAD: Mutex<LoadState> = Mutex::new(LoadState {
    ctx: None,
    closed: None,
    runs: 0,
});

impl LoadCtx {
    /// Open the device, its queue and scratch buffer; with `warm_up`, first run the fixtures
    /// through [`LoadCtx::probe`] so that lazily created state (PTX compiler lookup, emulator
    /// tables, allocator pools) exists before a baseline is taken.
    fn open(warm_up: bool) -> LoadCtx {
        let dev = open_emu();
        // SAFETY: all-zero is a valid tg_device_info.
        let mut info: tg_device_info = unsafe { std::mem::zeroed() };
        info.struct_size = std::mem::size_of::<tg_device_info>() as u32;
        assert_eq!(
            c!(tg_device_get_info(dev as *const tg_device, &mut info)),
            tg_status::TG_OK
        );
        let mut q = null_mut();
        assert_eq!(
            c!(tg_queue_create(
                dev as *const tg_device,
                tg_queue_kind_arg(0),
                &mut q
            )),
            tg_status::TG_OK,
            "{}",
            last_error()
        );
        let mut b = null_mut();
        assert_eq!(
            c!(tg_buf_alloc(
                dev as *const tg_device,
                64 << 10,
                TG_BUF_ZEROED,
                &mut b
            )),
            tg_status::TG_OK
        );
        let mut va = 0u64;
        assert_eq!(c!(tg_buf_gpu_address(b, &mut va)), tg_status::TG_OK);
        let mut cpu = null_mut::<c_void>();
        assert_eq!(c!(tg_buf_cpu_ptr(b, &mut cpu)), tg_status::TG_OK);
        let mut ctx = LoadCtx {
            dev,
            queue: q as usize,
            scratch: b as usize,
            scratch_va: va,
            scratch_cpu: cpu as *mut u8,
            sm: (info.sm_major, info.sm_minor),
            open: (0, 0),
        };
        if warm_up {
            for seed in [KERNELS_SM87, GLOBALS_SM87, WARP_PTX, WARP_FATBIN] {
                let faulted = ctx.probe(seed, seed == KERNELS_SM87);
                assert!(!faulted, "the fixture faulted the emulated device");
            }
        }
        ctx.open = (live_handles(), fd_count());
        ctx
    }

    fn close(self) {
        for (f, h) in [(0, self.queue), (1, self.scratch), (2, self.dev)] {
            let st = match f {
                0 => c!(tg_queue_destroy(h as *mut tg_queue)),
                1 => c!(tg_buf_free(h as *mut tg_buf)),
                _ => c!(tg_device_close(h as *mut tg_device)),
            };
            assert_eq!(st, tg_status::TG_OK, "closing the module_load context");
        }
    }

    /// Load `data`, query everything the module has, launch its kernels when `launch`, destroy
    /// it. Returns whether the device faulted (the context must then be reopened).
    fn probe(&mut self, data: &[u8], launch: bool) -> bool {
        let dev = self.dev as *const tg_device;
        let mut m = null_mut::<tg_module>();
        let st = c!(tg_module_load(
            dev,
            data.as_ptr() as *const c_void,
            data.len(),
            &mut m
        ));
        if st != tg_status::TG_OK {
            assert!(m.is_null(), "tg_module_load wrote *out on failure");
            assert!(
                !data.is_empty() || st == tg_status::TG_ERROR_INVALID_ARGUMENT,
                "empty input: {st:?}"
            );
            return device_faulted(self.dev);
        }
        assert!(!m.is_null());

        // Every name the module has, by three routes: the NOT_FOUND message of the C API, the
        // Rust-level parser on the same bytes, and the PTX entry names.
        let probe = c"\u{1}tegragpu-fuzz-probe";
        let mut k = null_mut::<tg_kernel>();
        let st = c!(tg_module_get_kernel(m, probe.as_ptr(), &mut k));
        assert_eq!(st, tg_status::TG_ERROR_NOT_FOUND, "probe kernel name");
        assert!(k.is_null());
        let mut kernel_names = listed_names(&last_error());
        let mut gpu = 0u64;
        let st = c!(tg_module_get_global(
            m,
            probe.as_ptr(),
            &mut gpu,
            null_mut(),
            null_mut()
        ));
        assert_eq!(st, tg_status::TG_ERROR_NOT_FOUND, "probe global name");
        assert_eq!(gpu, 0, "tg_module_get_global wrote *gpu_address on failure");
        let mut global_names = listed_names(&last_error());
        let parsed = parsed_names(data, self.sm);
        let must_find: Vec<String> = match &parsed {
            Some((ks, gs)) => {
                kernel_names.extend(ks.iter().cloned());
                global_names.extend(gs.iter().cloned());
                ks.iter().chain(gs.iter()).cloned().collect()
            }
            None => Vec::new(),
        };
        kernel_names.extend(ptx_entries(data));
        kernel_names.extend(FIXTURE_KERNELS.iter().take(2).map(|s| s.to_string()));
        global_names.extend(GLOBALS_VARS.iter().take(1).map(|s| s.to_string()));
        kernel_names.sort();
        kernel_names.dedup();
        kernel_names.truncate(128);
        global_names.sort();
        global_names.dedup();
        global_names.truncate(128);

        let mut kernels = Vec::new();
        for name in &kernel_names {
            let Some(cname) = cstring(name) else { continue };
            let mut k = null_mut::<tg_kernel>();
            let st = c!(tg_module_get_kernel(m, cname.as_ptr(), &mut k));
            if st == tg_status::TG_OK {
                assert!(!k.is_null());
                // Texture kernels (tex_fetch_*) take a texture object, which the parameter
                // filling below cannot make: they are probed but not launched.
                kernels.push((k as usize, !name.starts_with("tex_")));
            } else {
                assert!(k.is_null(), "tg_module_get_kernel wrote *out on failure");
                assert!(
                    st != tg_status::TG_ERROR_NOT_FOUND || !must_find.contains(name),
                    "kernel {name:?} parsed from the input is NOT_FOUND in the module: {}",
                    last_error()
                );
            }
        }
        for name in &global_names {
            let Some(cname) = cstring(name) else { continue };
            let (mut gpu, mut cpu, mut size) = (0u64, null_mut::<c_void>(), 0u64);
            let st = c!(tg_module_get_global(
                m,
                cname.as_ptr(),
                &mut gpu,
                &mut cpu,
                &mut size
            ));
            if st == tg_status::TG_OK {
                assert!(
                    !cpu.is_null() && gpu != 0,
                    "{name}: gpu {gpu:#x} cpu {cpu:?}"
                );
                if size > 0 {
                    // The variable's memory must be mapped for `size` bytes: touch both ends.
                    let p = cpu as *mut u8;
                    // SAFETY: tg_module_get_global promises `size` bytes at `cpu`.
                    unsafe {
                        let first = std::ptr::read_volatile(p);
                        std::ptr::write_volatile(p, first);
                        let last = p.add(size as usize - 1);
                        std::ptr::write_volatile(last, std::ptr::read_volatile(last));
                    }
                }
                // NULL out-pointers are allowed.
                let st = c!(tg_module_get_global(
                    m,
                    cname.as_ptr(),
                    null_mut(),
                    null_mut(),
                    null_mut()
                ));
                assert_eq!(st, tg_status::TG_OK);
            } else {
                assert!(
                    (gpu, cpu, size) == (0, null_mut(), 0),
                    "tg_module_get_global wrote an out-parameter on failure"
                );
                assert!(
                    st != tg_status::TG_ERROR_NOT_FOUND || !must_find.contains(name),
                    "global {name:?} parsed from the input is NOT_FOUND in the module: {}",
                    last_error()
                );
            }
        }
        let st = c!(tg_module_get_global(
            m,
            null(),
            null_mut(),
            null_mut(),
            null_mut()
        ));
        assert_eq!(st, tg_status::TG_ERROR_NULL_POINTER);

        // The module handle goes first: the kernels keep its code loaded.
        assert_eq!(c!(tg_module_destroy(m)), tg_status::TG_OK);
        for &(k, launchable) in &kernels {
            // One launch at a time, each on a fresh scratch buffer of 0x01 bytes: a pointer
            // parameter never reads 0 (fixture kernels such as spin_until run until a flag
            // they point to is non-zero).
            // SAFETY: the scratch buffer is 64 KiB, CPU-mapped, and no launch is in flight.
            unsafe { std::ptr::write_bytes(self.scratch_cpu, 1, 64 << 10) };
            if self.probe_kernel(k, launch && launchable) {
                c!(tg_queue_submit(self.queue as *const tg_queue));
                let st = c!(tg_queue_synchronize(self.queue as *const tg_queue, HANG_NS));
                assert!(
                    st != tg_status::TG_ERROR_TIMEOUT,
                    "HANG: a launch did not finish in {} s: {}",
                    HANG_NS / 1_000_000_000,
                    last_error()
                );
                if st != tg_status::TG_OK {
                    break; // the device faulted: nothing more runs on it
                }
            }
        }
        for &(k, _) in &kernels {
            assert_eq!(c!(tg_kernel_destroy(k as *mut tg_kernel)), tg_status::TG_OK);
        }
        device_faulted(self.dev)
    }

    /// Attribute, parameter and occupancy queries of one kernel, and (when `launch`) one small
    /// launch with pointer parameters aimed at the scratch buffer. Returns whether it launched.
    fn probe_kernel(&mut self, k: usize, launch: bool) -> bool {
        let kp = k as *const tg_kernel;
        const SZ: usize = std::mem::size_of::<tg_kernel_attributes>();
        // struct_size too small: refused, nothing written.
        for small in [0u32, 4, SZ as u32 - 4] {
            let mut raw = [0xA5u8; SZ + 64];
            raw[..4].copy_from_slice(&small.to_le_bytes());
            let st = c!(tg_kernel_get_attributes(
                kp,
                raw.as_mut_ptr() as *mut tg_kernel_attributes
            ));
            assert_eq!(
                st,
                tg_status::TG_ERROR_INVALID_ARGUMENT,
                "struct_size {small}"
            );
            assert!(
                raw[4..].iter().all(|&b| b == 0xA5),
                "tg_kernel_get_attributes wrote into a struct it refused"
            );
        }
        // A larger struct_size: only sizeof(tg_kernel_attributes) bytes are written.
        let mut raw = [0xA5u8; SZ + 64];
        raw[..4].copy_from_slice(&(SZ as u32 + 64).to_le_bytes());
        let st = c!(tg_kernel_get_attributes(
            kp,
            raw.as_mut_ptr() as *mut tg_kernel_attributes
        ));
        assert_eq!(st, tg_status::TG_OK);
        assert!(
            raw[SZ..].iter().all(|&b| b == 0xA5),
            "tg_kernel_get_attributes wrote past sizeof(tg_kernel_attributes)"
        );
        // SAFETY: the library filled a whole tg_kernel_attributes.
        let a: tg_kernel_attributes = unsafe { std::ptr::read_unaligned(raw.as_ptr() as *const _) };
        assert_eq!(a.struct_size as usize, SZ);
        assert!(
            a.max_threads_per_block <= 1024,
            "max_threads_per_block {}",
            a.max_threads_per_block
        );

        let mut params = Vec::new();
        for i in 0..a.num_params.min(4096) {
            let (mut off, mut size) = (0u32, 0u32);
            let st = c!(tg_kernel_get_param(kp, i, &mut off, &mut size));
            assert_eq!(st, tg_status::TG_OK, "param {i} of {}", a.num_params);
            assert!(
                u64::from(off) + u64::from(size) <= u64::from(a.param_bytes),
                "param {i} at {off}+{size} outside the {}-byte parameter block",
                a.param_bytes
            );
            params.push((off, size));
        }
        for i in [a.num_params, u32::MAX] {
            let (mut off, mut size) = (7u32, 7u32);
            let st = c!(tg_kernel_get_param(kp, i, &mut off, &mut size));
            assert_eq!(st, tg_status::TG_ERROR_INVALID_ARGUMENT, "param index {i}");
            assert_eq!((off, size), (7, 7), "out-parameters written on failure");
        }
        let mt = a.max_threads_per_block;
        for t in [0u32, 1, 32, mt, mt.saturating_add(1), u32::MAX] {
            for d in [
                0u32,
                a.max_dynamic_shared_bytes,
                a.max_dynamic_shared_bytes.saturating_add(1),
                u32::MAX,
            ] {
                let mut n = 0xDEADu32;
                let st = c!(tg_kernel_max_active_blocks(kp, t, d, &mut n));
                if t == 0 || t > mt {
                    assert_eq!(
                        st,
                        tg_status::TG_ERROR_INVALID_ARGUMENT,
                        "block_threads {t}"
                    );
                    assert_eq!(n, 0xDEAD);
                } else if st == tg_status::TG_OK {
                    if d > a.max_dynamic_shared_bytes {
                        assert_eq!(n, 0, "occupancy above max_dynamic_shared_bytes");
                    }
                } else {
                    assert_eq!(n, 0xDEAD);
                }
            }
        }
        if !launch || mt == 0 || a.param_bytes > 64 << 10 {
            return false;
        }
        let mut block = vec![0u8; a.param_bytes as usize];
        for &(off, size) in &params {
            let (o, s) = (off as usize, size as usize);
            if s == 8 && o % 8 == 0 {
                block[o..o + 8].copy_from_slice(&self.scratch_va.to_le_bytes());
            } else if s == 4 {
                block[o..o + 4].copy_from_slice(&1u32.to_le_bytes());
            }
        }
        let threads = mt.min(32);
        let cfg = tg_launch_config {
            struct_size: std::mem::size_of::<tg_launch_config>() as u32,
            grid: [1, 1, 1],
            block: [threads, 1, 1],
            dynamic_shared_bytes: a.max_dynamic_shared_bytes.min(4 * threads),
            flags: 0,
            cluster: [0; 3],
        };
        let st = c!(tg_launch(
            self.queue as *const tg_queue,
            kp,
            &cfg,
            block.as_ptr() as *const c_void,
            block.len()
        ));
        st == tg_status::TG_OK
    }
}

/// Target (a): `data` → `tg_module_load` on the emulated Orin, then every kernel name found
/// (`tg_module_get_kernel`, `tg_kernel_*` queries, one small launch) and every global
/// (`tg_module_get_global`). Checks the invariants of the module comment after each input.
pub fn module_load(data: &[u8]) {
    let mut st = LOAD.lock().unwrap_or_else(|e| e.into_inner());
    if st.closed.is_none() {
        // First call: one open/close cycle so that process-wide one-time set-up is done.
        LoadCtx::open(true).close();
        st.closed = Some(counts());
    }
    if st.ctx.is_none() {
        st.ctx = Some(LoadCtx::open(false));
    }
    st.runs += 1;
    let ctx = st.ctx.as_mut().expect("context");
    let faulted = ctx.probe(data, true);
    // Handles and descriptors come back at once. Mappings may not: the emulated kernel keeps
    // memory unmapped while a channel is attached for a 1 s grace period (emu/kernel/vm.rs,
    // RETIRE_GRACE), as in-flight GPU accesses could still touch it; they are checked with the
    // device closed below. With `TEGRAGPU_EMU_MEMFD_BACKING` (valgrind, qemu-user) each buffer's
    // pages live in a memfd held as long as the memory is, grace period included: descriptors
    // then come back with the mappings, and are checked with them.
    let now = (live_handles(), fd_count());
    let fds_back_now = !memfd_backing();
    assert!(
        now.0 == ctx.open.0 && (now.1 == ctx.open.1 || !fds_back_now),
        "LEAK after destroying the module: (handles, fds) {now:?}, baseline {:?}; open fds: {:#?}",
        ctx.open,
        open_fds()
    );
    if faulted || st.runs % RECYCLE_RUNS == 0 {
        // After a fault (expected for broken code) the device is unusable: start over. And
        // every RECYCLE_RUNS inputs: close the device, which releases everything, so that the
        // process counts can be compared exactly.
        st.ctx.take().expect("context").close();
        let what = if faulted {
            "closing a faulted device"
        } else {
            "closing the device"
        };
        assert_counts(what, st.closed.as_ref().expect("baseline"));
    }
}

/// How many module_load inputs share one device before it is closed for an exact leak check.
const RECYCLE_RUNS: u64 = 256;

/// Close the module_load target's device (the smoke test does this before the next target).
pub fn module_load_reset() {
    let mut st = LOAD.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(ctx) = st.ctx.take() {
        ctx.close();
        if let Some(closed) = &st.closed {
            assert_counts("closing the module_load device", closed);
        }
    }
}

// ------------------------------------------------------------------------------------------
// Target (b): capi_sequence

/// Reads the fuzz input as a stream of choices; zeros once exhausted.
pub struct Input<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Input<'a> {
    pub fn new(data: &'a [u8]) -> Self {
        Input { data, pos: 0 }
    }
    pub fn exhausted(&self) -> bool {
        self.pos >= self.data.len()
    }
    pub fn u8(&mut self) -> u8 {
        let b = self.data.get(self.pos).copied().unwrap_or(0);
        self.pos += 1;
        b
    }
    pub fn u16(&mut self) -> u16 {
        u16::from_le_bytes([self.u8(), self.u8()])
    }
    pub fn u32(&mut self) -> u32 {
        u32::from(self.u16()) | (u32::from(self.u16()) << 16)
    }
    pub fn u64(&mut self) -> u64 {
        u64::from(self.u32()) | (u64::from(self.u32()) << 32)
    }
    /// 0..n (n > 0).
    pub fn below(&mut self, n: usize) -> usize {
        if n <= 256 {
            self.u8() as usize % n
        } else {
            self.u32() as usize % n
        }
    }
    pub fn chance(&mut self, one_in: u8) -> bool {
        self.u8() % one_in == 0
    }
    pub fn bytes(&mut self, n: usize) -> &'a [u8] {
        let start = self.pos.min(self.data.len());
        let end = (start + n).min(self.data.len());
        self.pos = start + n;
        &self.data[start..end]
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Dev,
    Buf,
    Module,
    Kernel,
    Queue,
    Signal,
}
const KINDS: [Kind; 6] = [
    Kind::Dev,
    Kind::Buf,
    Kind::Module,
    Kind::Kernel,
    Kind::Queue,
    Kind::Signal,
];

struct BufRec {
    h: usize,
    dev: usize,
    size: u64,
    va: u64,
    cpu: Option<*mut u8>,
}

struct KernRec {
    h: usize,
    name: &'static str,
    params: Vec<(u32, u32)>,
    param_bytes: u32,
    max_threads: u32,
    max_dyn: u32,
}

struct SigRec {
    h: usize,
    /// The smallest value ever written to the signal (initial, CPU or GPU): a GPU wait for at
    /// most this never blocks.
    min_assigned: u64,
    /// The largest target of a non-blocking GPU wait recorded on it: later writes are kept at
    /// or above it so that wait stays satisfied.
    floor: u64,
    gpu_written: bool,
    /// A GPU wait that may block was recorded on it: no GPU writes to it any more; the CPU
    /// sets it to `u64::MAX` ("releases" it) before anything that would wait for the queue.
    blocking: bool,
    released: bool,
}

/// The harness's view of the objects alive in one sequence.
#[derive(Default)]
struct World {
    devs: Vec<usize>,
    bufs: Vec<BufRec>,
    mods: Vec<(usize, bool)>,
    kernels: Vec<KernRec>,
    /// (queue, its device)
    queues: Vec<(usize, usize)>,
    sigs: Vec<SigRec>,
    dead: Vec<usize>,
    /// Ops left before blocking signals are released.
    unblock_in: Option<u32>,
    /// Exported dma-buf descriptors (owned by the caller, as documented) and what
    /// /proc/self/fd showed for them at export; closed at the end, after every device.
    fds: Vec<(std::os::fd::OwnedFd, std::path::PathBuf)>,
}

/// A handle as passed to a call, and whether the harness knows it to be live of the right kind.
#[derive(Clone, Copy)]
struct Pick {
    h: usize,
    live: bool,
}

const MAX_DEVS: usize = 3;
const MAX_BUFS: usize = 12;
const MAX_MODS: usize = 4;
const MAX_KERNELS: usize = 16;
const MAX_QUEUES: usize = 4;
const MAX_SIGS: usize = 12;
const MAX_OPS: usize = 256;
/// Buffers at least this large may be passed to kernels as pointers (the fixture kernels write
/// at most 32 KiB past the pointer with the launch shapes and sizes the harness uses).
const ARENA_MIN: u64 = 64 << 10;

impl World {
    fn live(&self, k: Kind) -> Vec<usize> {
        match k {
            Kind::Dev => self.devs.clone(),
            Kind::Buf => self.bufs.iter().map(|b| b.h).collect(),
            Kind::Module => self.mods.iter().map(|m| m.0).collect(),
            Kind::Kernel => self.kernels.iter().map(|k| k.h).collect(),
            Kind::Queue => self.queues.iter().map(|q| q.0).collect(),
            Kind::Signal => self.sigs.iter().map(|s| s.h).collect(),
        }
    }

    fn is_live_any(&self, h: usize) -> bool {
        KINDS.iter().any(|&k| self.live(k).contains(&h))
    }

    /// A handle for an argument of kind `k`: usually a live one, else NULL, a destroyed one, a
    /// live one of another kind, a misaligned or random integer.
    fn pick(&self, inp: &mut Input, k: Kind) -> Pick {
        let live = self.live(k);
        let sel = inp.u8() % 32;
        if sel < 26 && !live.is_empty() {
            return Pick {
                h: live[inp.below(live.len())],
                live: true,
            };
        }
        let h = match sel % 6 {
            0 => 0,
            1 if !self.dead.is_empty() => self.dead[inp.below(self.dead.len())],
            2 => {
                let others: Vec<usize> = KINDS
                    .iter()
                    .filter(|&&o| o != k)
                    .flat_map(|&o| self.live(o))
                    .collect();
                if others.is_empty() {
                    0
                } else {
                    others[inp.below(others.len())]
                }
            }
            3 if !live.is_empty() => live[inp.below(live.len())] + 1 + inp.below(15),
            4 => 0x10_0000 + 16 * inp.u16() as usize,
            _ => inp.u64() as usize,
        };
        // Never an unknowingly live handle: the bookkeeping must stay exact.
        let h = if h != 0 && self.is_live_any(h) && !live.contains(&h) && sel % 6 != 2 {
            h ^ 1
        } else {
            h
        };
        Pick {
            h,
            live: live.contains(&h),
        }
    }

    fn forget(&mut self, h: usize) {
        self.devs.retain(|&d| d != h);
        self.bufs.retain(|b| b.h != h);
        self.mods.retain(|m| m.0 != h);
        self.kernels.retain(|k| k.h != h);
        self.queues.retain(|q| q.0 != h);
        self.sigs.retain(|s| s.h != h);
        self.dead.push(h);
    }

    fn sig(&mut self, h: usize) -> Option<&mut SigRec> {
        self.sigs.iter_mut().find(|s| s.h == h)
    }

    /// Set every blocking signal to `u64::MAX`, so that no queue waits for the CPU any more.
    fn release_all(&mut self) {
        for s in &mut self.sigs {
            if s.blocking && !s.released {
                let st = c!(tg_signal_set(s.h as *const tg_signal, u64::MAX));
                assert_eq!(st, tg_status::TG_OK, "releasing a signal");
                s.released = true;
            }
        }
        self.unblock_in = None;
    }

    fn release(&mut self, h: usize) {
        if let Some(s) = self.sig(h) {
            if s.blocking && !s.released {
                let st = c!(tg_signal_set(h as *const tg_signal, u64::MAX));
                assert_eq!(st, tg_status::TG_OK, "releasing a signal");
                s.released = true;
            }
        }
    }
}

/// A value from a few interesting classes.
fn value(inp: &mut Input) -> u64 {
    match inp.u8() % 8 {
        0 => 0,
        1 => 1,
        2 => u64::MAX,
        3 => 1 << 63,
        4 => u64::from(inp.u8()),
        5 => u64::from(inp.u32()),
        _ => inp.u64(),
    }
}

/// A short timeout: every wait of the sequence is bounded by 2 ms.
fn short_timeout(inp: &mut Input) -> u64 {
    match inp.u8() % 4 {
        0 => 0,
        1 => 1,
        2 => 1000 * u64::from(inp.u8() % 100),
        _ => u64::from(inp.u32() % 2_000_000),
    }
}

/// Assert the handle contract for a call with handle arguments `picks`: any argument not known
/// to be live of the right kind makes the call fail.
fn expect_fail_if_bad(call: &str, st: tg_status, picks: &[Pick]) {
    if picks.iter().any(|p| !p.live) {
        assert!(
            st != tg_status::TG_OK,
            "{call} accepted a NULL, destroyed, wrong-type or random handle"
        );
    }
}

/// The status of a destroy call: NULL is a no-op, a live handle is destroyed, anything else is
/// INVALID_HANDLE.
fn expect_destroy(call: &str, st: tg_status, p: Pick) {
    if p.h == 0 || p.live {
        assert_eq!(st, tg_status::TG_OK, "{call}({:#x}): {}", p.h, last_error());
    } else {
        assert_eq!(
            st,
            tg_status::TG_ERROR_INVALID_HANDLE,
            "{call}({:#x}) of a handle that is not live",
            p.h
        );
    }
}

/// The module bytes an op loads: mostly the fixtures, sometimes damaged or random.
fn module_bytes<'a>(inp: &mut Input<'a>) -> (Vec<u8>, bool) {
    match inp.u8() % 16 {
        0..=7 => (KERNELS_SM87.to_vec(), true),
        8 => (KERNELS_SM90.to_vec(), false), // another GPU's code: refused
        9..=10 => (GLOBALS_SM87.to_vec(), false),
        11 => (WARP_PTX.to_vec(), false),
        12 if inp.chance(2) => (WARP_FATBIN.to_vec(), false),
        12 => (WARP_HOST_ELF.to_vec(), false), // host object with .nv_fatbin
        13 => {
            let n = inp.below(KERNELS_SM87.len());
            (KERNELS_SM87[..n].to_vec(), false)
        }
        14 => {
            let mut v = KERNELS_SM87.to_vec();
            for _ in 0..1 + inp.below(4) {
                let i = inp.below(v.len());
                v[i] ^= 1 << (inp.u8() % 8);
            }
            (v, false)
        }
        _ => {
            let n = inp.u8() as usize;
            (inp.bytes(n).to_vec(), false)
        }
    }
}

/// The launch configuration an op passes: mostly small and valid, sometimes out of range.
/// Valid launches are kept to at most 2^13 threads (the emulated GPU runs kernels on the CPU).
fn launch_config(inp: &mut Input, k: Option<&KernRec>) -> [u8; 64] {
    let mt = k.map_or(1024, |k| k.max_threads.max(1));
    let max_dyn = k.map_or(0, |k| k.max_dyn);
    let mut grid = [1u32; 3];
    let mut block = [1u32; 3];
    match inp.u8() % 8 {
        0..=5 => {
            grid[0] = 1 + inp.below(8) as u32;
            if inp.chance(4) {
                grid[1] = 1 + inp.below(4) as u32;
                grid[2] = 1 + inp.below(2) as u32;
            }
            block[0] = match inp.u8() % 6 {
                0 => 1,
                1 => 32,
                2 => 64,
                3 => mt.min(128),
                4 => mt,
                _ => mt + 1,
            };
            if inp.chance(4) {
                block[1] = 1 + inp.below(4) as u32;
                block[2] = 1 + inp.below(2) as u32;
            }
        }
        6 => {
            for g in &mut grid {
                *g = inp.u32();
            }
            for b in &mut block {
                *b = inp.u32();
            }
        }
        _ => {
            let edge = [0u32, 65535, 65536, (1 << 31) - 1, 1 << 31, u32::MAX];
            let i = inp.below(6);
            let v = edge[inp.below(edge.len())];
            if i < 3 {
                grid[i] = v;
            } else {
                block[i - 3] = v;
            }
        }
    }
    let valid_dims = grid[0] >= 1
        && grid[0] < 1 << 31
        && (1..=65535).contains(&grid[1])
        && (1..=65535).contains(&grid[2])
        && (1..=1024).contains(&block[0])
        && (1..=1024).contains(&block[1])
        && (1..=64).contains(&block[2]);
    let product = |v: &[u32]| {
        v.iter()
            .fold(1u128, |acc, &x| acc.saturating_mul(u128::from(x)))
    };
    let threads = product(&grid).saturating_mul(product(&block));
    if valid_dims && threads > 1 << 13 {
        grid = [1, 1, 1];
        if product(&block) > 1 << 13 {
            block = [1, 1, 1];
        }
    }
    let bt = block[0].saturating_mul(block[1]).saturating_mul(block[2]);
    let dynamic = match inp.u8() % 8 {
        0..=3 => 0,
        4 => bt.saturating_mul(4).min(max_dyn),
        5 => max_dyn,
        6 => max_dyn.saturating_add(1),
        _ => inp.u32(),
    };
    let flags = match inp.u8() % 16 {
        0 => 1,
        1 => inp.u32(),
        _ => 0,
    };
    let cluster = match inp.u8() % 16 {
        0 => [1, 1, 1],
        1 => [inp.u32(), inp.u32(), inp.u32()],
        _ => [0, 0, 0],
    };
    let struct_size: u32 = match inp.u8() % 16 {
        0 => 32,
        1 => 36,
        2 => 64,
        3 => inp.u32(),
        _ => 48,
    };
    let mut raw = [0u8; 64];
    let words = [
        struct_size,
        grid[0],
        grid[1],
        grid[2],
        block[0],
        block[1],
        block[2],
        dynamic,
        flags,
        cluster[0],
        cluster[1],
        cluster[2],
    ];
    for (i, w) in words.iter().enumerate() {
        raw[4 * i..4 * i + 4].copy_from_slice(&w.to_le_bytes());
    }
    raw
}

/// A parameter block for kernel `k` launched on a queue of device `dev`: pointers into arena
/// buffers of that device (never another device's: the same address may be the library's own
/// memory there), small counts.
fn param_block(inp: &mut Input, w: &World, dev: usize, k: Option<&KernRec>) -> Vec<u8> {
    let arenas: Vec<u64> = w
        .bufs
        .iter()
        .filter(|b| b.size >= ARENA_MIN && b.dev == dev)
        .map(|b| b.va)
        .collect();
    let Some(k) = k else {
        let n = inp.below(64);
        return inp.bytes(n).to_vec();
    };
    let mut block = vec![0u8; k.param_bytes as usize];
    for &(off, size) in &k.params {
        let (o, s) = (off as usize, size as usize);
        if o + s > block.len() {
            continue;
        }
        if s == 8 {
            let v = match inp.u8() % 16 {
                0 => 0,
                1 => inp.u64(),
                _ if !arenas.is_empty() => {
                    arenas[inp.below(arenas.len())] + 4 * inp.below(16) as u64
                }
                _ => 0,
            };
            block[o..o + 8].copy_from_slice(&v.to_le_bytes());
        } else if s == 4 {
            // Counts stay small: they bound how far the fixture kernels read and write.
            let v = match inp.u8() % 8 {
                0 => 0,
                1 => 1,
                _ => inp.below(65) as u32,
            };
            block[o..o + 4].copy_from_slice(&v.to_le_bytes());
        } else {
            for b in &mut block[o..o + s] {
                *b = inp.u8();
            }
        }
    }
    match inp.u8() % 16 {
        0 => block.truncate(inp.below(block.len() + 1)),
        1 => block.extend_from_slice(&[0u8; 8]),
        _ => {}
    }
    block
}

fn op_launch(inp: &mut Input, w: &mut World) {
    let q = w.pick(inp, Kind::Queue);
    let k = w.pick(inp, Kind::Kernel);
    let rec_i = w.kernels.iter().position(|r| r.h == k.h);
    let rec = rec_i.map(|i| &w.kernels[i]);
    // The fixture kernels' memory footprint is bounded only for the fixture kernels with the
    // parameter classes above; anything else launches with pointer parameters of 0.
    let known = rec.is_some_and(|r| !r.name.is_empty());
    let cfg = launch_config(inp, rec);
    let cfg_ptr = if inp.chance(32) {
        null()
    } else {
        cfg.as_ptr() as *const tg_launch_config
    };
    let qdev = w.queues.iter().find(|x| x.0 == q.h).map_or(0, |x| x.1);
    let mut params = if known {
        param_block(inp, w, qdev, rec)
    } else {
        vec![0u8; rec.map_or(0, |r| r.param_bytes as usize)]
    };
    let st = if inp.chance(2) {
        let p = if inp.chance(32) {
            null()
        } else {
            params.as_ptr() as *const c_void
        };
        c!(tg_launch(
            q.h as *const tg_queue,
            k.h as *const tg_kernel,
            cfg_ptr,
            p,
            params.len()
        ))
    } else {
        // cuLaunchKernel style: one pointer per parameter into the block; each may read up to
        // its parameter's size, so every pointer has at least 8 KiB behind it.
        let n = rec.map_or(0, |r| r.params.len());
        let num_args = match inp.u8() % 16 {
            0 => inp.below(64),
            1 => n + 1,
            _ => n,
        };
        params.resize(params.len().max(1) + 8192, 0);
        let mut args: Vec<*mut c_void> = (0..num_args.max(n))
            .map(|i| {
                let off = rec
                    .and_then(|r| r.params.get(i))
                    .map_or(0, |p| p.0 as usize);
                // SAFETY: off < param_bytes <= params.len() - 8192.
                unsafe { params.as_mut_ptr().add(off) as *mut c_void }
            })
            .collect();
        if !args.is_empty() && inp.chance(32) {
            let i = inp.below(args.len());
            args[i] = null_mut();
        }
        let ap = if inp.chance(32) {
            null_mut()
        } else {
            args.as_mut_ptr()
        };
        c!(tg_launch_args(
            q.h as *const tg_queue,
            k.h as *const tg_kernel,
            cfg_ptr,
            ap,
            num_args
        ))
    };
    expect_fail_if_bad("tg_launch", st, &[q, k]);
}

/// One C API call chosen by the input.
fn op(inp: &mut Input, w: &mut World) {
    match inp.u8() % 40 {
        0 => {
            // Never NULL, "nvgpu" or "rm": those may open real hardware.
            let spec = match inp.u8() % 8 {
                0 => c"",
                1 => c"EMU",
                2 => c"emu ",
                3 => c"nvgpu-fuzz",
                _ => c"emu",
            };
            if w.devs.len() >= MAX_DEVS {
                return;
            }
            let mut d = null_mut::<tg_device>();
            let out = if inp.chance(16) {
                null_mut()
            } else {
                &mut d as *mut _
            };
            let st = c!(tg_device_open(spec.as_ptr(), out));
            if st == tg_status::TG_OK {
                assert!(!d.is_null() && !w.dead.contains(&(d as usize)));
                w.devs.push(d as usize);
            } else {
                assert!(d.is_null());
            }
        }
        1 => {
            let d = w.pick(inp, Kind::Dev);
            let st = c!(tg_device_close(d.h as *mut tg_device));
            expect_destroy("tg_device_close", st, d);
            if st == tg_status::TG_OK && d.h != 0 {
                w.forget(d.h);
            }
        }
        2 => {
            let d = w.pick(inp, Kind::Dev);
            const SZ: usize = std::mem::size_of::<tg_device_info>();
            let size: u32 = match inp.u8() % 8 {
                0 => 0,
                1 => SZ as u32 - 1,
                2 => SZ as u32 + 64,
                3 => inp.u32(),
                _ => SZ as u32,
            };
            let mut raw = [0xA5u8; SZ + 64];
            raw[..4].copy_from_slice(&size.to_le_bytes());
            let out = if inp.chance(16) {
                null_mut()
            } else {
                raw.as_mut_ptr() as *mut tg_device_info
            };
            let st = c!(tg_device_get_info(d.h as *const tg_device, out));
            expect_fail_if_bad("tg_device_get_info", st, &[d]);
            if st == tg_status::TG_OK {
                assert!(
                    raw[SZ..].iter().all(|&b| b == 0xA5),
                    "wrote past the struct"
                );
                // SAFETY: filled by the library.
                let info: tg_device_info =
                    unsafe { std::ptr::read_unaligned(raw.as_ptr() as *const _) };
                assert_eq!(info.struct_size as usize, SZ);
                assert!(info.name.contains(&0), "name not NUL-terminated");
                assert!(info.emulated && info.sm_count > 0);
            } else {
                assert!(raw[4..].iter().all(|&b| b == 0xA5), "wrote on failure");
            }
        }
        3 => {
            let d = w.pick(inp, Kind::Dev);
            let t = short_timeout(inp);
            let st = c!(tg_device_synchronize(d.h as *const tg_device, t));
            expect_fail_if_bad("tg_device_synchronize", st, &[d]);
        }
        4 => {
            let d = w.pick(inp, Kind::Dev);
            const SZ: usize = std::mem::size_of::<tg_fault_report>();
            let size: u32 = match inp.u8() % 4 {
                0 => inp.u32(),
                1 => 4,
                _ => SZ as u32,
            };
            let mut raw = vec![0xA5u8; SZ + 64];
            raw[..4].copy_from_slice(&size.to_le_bytes());
            let st = c!(tg_device_get_fault(
                d.h as *const tg_device,
                raw.as_mut_ptr() as *mut tg_fault_report
            ));
            expect_fail_if_bad("tg_device_get_fault", st, &[d]);
            if st == tg_status::TG_OK {
                assert!(
                    raw[SZ..].iter().all(|&b| b == 0xA5),
                    "wrote past the struct"
                );
                assert!(
                    raw[4 + 4 + 8 + 8..SZ].contains(&0),
                    "message not NUL-terminated"
                );
            } else {
                assert!(raw[4..].iter().all(|&b| b == 0xA5), "wrote on failure");
            }
        }
        5 => {
            let d = w.pick(inp, Kind::Dev);
            let size = match inp.u8() % 16 {
                0 => 0,
                1 => 1 + inp.below(4096) as u64,
                2..=4 => 4096 * (1 + inp.below(16) as u64),
                5..=11 => ARENA_MIN + 4096 * inp.below(64) as u64,
                12 => 4 << 20,
                13 => (1 << 40) + 1,
                14 => u64::MAX,
                _ => inp.u64() | (1 << 44),
            };
            let flags = match inp.u8() % 8 {
                0 => inp.u32(),
                1 => TG_BUF_CPU_CACHED | TG_BUF_WRITE_COMBINED,
                n => [
                    0,
                    TG_BUF_ZEROED,
                    TG_BUF_CPU_CACHED,
                    TG_BUF_WRITE_COMBINED,
                    TG_BUF_DEVICE_LOCAL,
                    TG_BUF_DEVICE_LOCAL | TG_BUF_ZEROED,
                ][n as usize - 2],
            };
            if w.bufs.len() >= MAX_BUFS {
                return;
            }
            let mut b = null_mut::<tg_buf>();
            let out = if inp.chance(32) {
                null_mut()
            } else {
                &mut b as *mut _
            };
            let st = c!(tg_buf_alloc(d.h as *const tg_device, size, flags, out));
            expect_fail_if_bad("tg_buf_alloc", st, &[d]);
            if st == tg_status::TG_OK {
                assert!(
                    size > 0 && size < 1 << 40,
                    "tg_buf_alloc accepted size {size:#x}"
                );
                let mut va = 0;
                assert_eq!(c!(tg_buf_gpu_address(b, &mut va)), tg_status::TG_OK);
                let mut s = 0;
                assert_eq!(c!(tg_buf_size(b, &mut s)), tg_status::TG_OK);
                assert_eq!(s, size, "tg_buf_size");
                if flags & TG_BUF_ZEROED != 0 {
                    let mut p = null_mut::<c_void>();
                    assert_eq!(c!(tg_buf_cpu_ptr(b, &mut p)), tg_status::TG_OK);
                    // SAFETY: `size` mapped bytes.
                    let z = unsafe {
                        std::slice::from_raw_parts(p as *const u8, size.min(1 << 16) as usize)
                    };
                    assert!(z.iter().all(|&x| x == 0), "TG_BUF_ZEROED memory not zero");
                }
                w.bufs.push(BufRec {
                    h: b as usize,
                    dev: d.h,
                    size,
                    va,
                    cpu: None,
                });
            } else {
                assert!(b.is_null());
            }
        }
        6 => {
            let b = w.pick(inp, Kind::Buf);
            let st = c!(tg_buf_free(b.h as *mut tg_buf));
            expect_destroy("tg_buf_free", st, b);
            if st == tg_status::TG_OK && b.h != 0 {
                w.forget(b.h);
            }
        }
        7 => {
            let b = w.pick(inp, Kind::Buf);
            let mut p = null_mut::<c_void>();
            let out = if inp.chance(16) {
                null_mut()
            } else {
                &mut p as *mut _
            };
            let st = c!(tg_buf_cpu_ptr(b.h as *const tg_buf, out));
            expect_fail_if_bad("tg_buf_cpu_ptr", st, &[b]);
            if st == tg_status::TG_OK {
                let r = w.bufs.iter_mut().find(|r| r.h == b.h).expect("live buffer");
                assert!(!p.is_null());
                if let Some(prev) = r.cpu {
                    assert_eq!(prev, p as *mut u8, "tg_buf_cpu_ptr changed");
                }
                r.cpu = Some(p as *mut u8);
                // The mapping covers the whole buffer: write both ends, read them back.
                let v = inp.u8();
                // SAFETY: `size` mapped, writable bytes.
                unsafe {
                    let q = p as *mut u8;
                    std::ptr::write_volatile(q, v);
                    std::ptr::write_volatile(q.add(r.size as usize - 1), v);
                    assert_eq!(std::ptr::read_volatile(q.add(r.size as usize - 1)), v);
                }
            } else {
                assert!(p.is_null());
            }
        }
        8 => {
            let b = w.pick(inp, Kind::Buf);
            let (mut va, mut size) = (0u64, 0u64);
            let st1 = c!(tg_buf_gpu_address(b.h as *const tg_buf, &mut va));
            let st2 = c!(tg_buf_size(b.h as *const tg_buf, &mut size));
            expect_fail_if_bad("tg_buf_gpu_address", st1, &[b]);
            expect_fail_if_bad("tg_buf_size", st2, &[b]);
            if let Some(r) = w.bufs.iter().find(|r| r.h == b.h) {
                assert_eq!((st1, st2), (tg_status::TG_OK, tg_status::TG_OK));
                assert_eq!((va, size), (r.va, r.size));
            } else {
                assert_eq!((va, size), (0, 0), "out-parameters written on failure");
            }
            let st = c!(tg_buf_size(b.h as *const tg_buf, null_mut()));
            assert!(st != tg_status::TG_OK);
        }
        9 => {
            let b = w.pick(inp, Kind::Buf);
            let mut fd: std::ffi::c_int = -7;
            let st = c!(tg_buf_export_dmabuf(b.h as *const tg_buf, &mut fd));
            expect_fail_if_bad("tg_buf_export_dmabuf", st, &[b]);
            if st == tg_status::TG_OK {
                assert!(fd >= 0);
                let target = std::fs::read_link(format!("/proc/self/fd/{fd}"))
                    .unwrap_or_else(|e| panic!("exported dma-buf fd {fd} is not open: {e}"));
                use std::os::fd::FromRawFd;
                // SAFETY: the caller owns the exported descriptor.
                w.fds
                    .push((unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) }, target));
            } else {
                assert_eq!(fd, -7);
            }
        }
        10 => {
            let d = w.pick(inp, Kind::Dev);
            let (bytes, is_kernels) = module_bytes(inp);
            if w.mods.len() >= MAX_MODS {
                return;
            }
            let mut m = null_mut::<tg_module>();
            let (data, len) = match inp.u8() % 32 {
                0 => (null(), bytes.len()),
                1 => (bytes.as_ptr() as *const c_void, 0),
                _ => (bytes.as_ptr() as *const c_void, bytes.len()),
            };
            let st = c!(tg_module_load(d.h as *const tg_device, data, len, &mut m));
            expect_fail_if_bad("tg_module_load", st, &[d]);
            if st == tg_status::TG_OK {
                w.mods.push((m as usize, is_kernels));
            } else {
                assert!(m.is_null());
            }
        }
        11 => {
            let m = w.pick(inp, Kind::Module);
            let st = c!(tg_module_destroy(m.h as *mut tg_module));
            expect_destroy("tg_module_destroy", st, m);
            if st == tg_status::TG_OK && m.h != 0 {
                w.forget(m.h);
            }
        }
        12 => {
            let m = w.pick(inp, Kind::Module);
            let all: Vec<&'static str> = FIXTURE_KERNELS
                .iter()
                .chain(GLOBALS_KERNELS)
                .copied()
                .chain(["", "no_such_kernel", "vector_add\u{7f}"])
                .collect();
            let name = all[inp.below(all.len())];
            let cname = CString::new(name).expect("no NUL");
            if w.kernels.len() >= MAX_KERNELS {
                return;
            }
            let mut k = null_mut::<tg_kernel>();
            let np = if inp.chance(32) {
                null()
            } else {
                cname.as_ptr()
            };
            let st = c!(tg_module_get_kernel(m.h as *const tg_module, np, &mut k));
            expect_fail_if_bad("tg_module_get_kernel", st, &[m]);
            if st == tg_status::TG_OK {
                let fixture = w.mods.iter().any(|&(h, kern)| h == m.h && kern);
                let rec = kernel_record(k as usize, if fixture { name } else { "" });
                w.kernels.push(rec);
            } else {
                assert!(k.is_null());
            }
        }
        13 => {
            let k = w.pick(inp, Kind::Kernel);
            let st = c!(tg_kernel_destroy(k.h as *mut tg_kernel));
            expect_destroy("tg_kernel_destroy", st, k);
            if st == tg_status::TG_OK && k.h != 0 {
                w.forget(k.h);
            }
        }
        14 => {
            let k = w.pick(inp, Kind::Kernel);
            let kp = k.h as *const tg_kernel;
            match inp.u8() % 3 {
                0 => {
                    let (mut off, mut size) = (7u32, 7u32);
                    let idx = if inp.chance(2) {
                        inp.below(12) as u32
                    } else {
                        inp.u32()
                    };
                    let st = c!(tg_kernel_get_param(kp, idx, &mut off, &mut size));
                    expect_fail_if_bad("tg_kernel_get_param", st, &[k]);
                    if st != tg_status::TG_OK {
                        assert_eq!((off, size), (7, 7));
                    }
                }
                1 => {
                    let mut n = 0xDEADu32;
                    let t = match inp.u8() % 4 {
                        0 => inp.u32(),
                        _ => inp.below(1100) as u32,
                    };
                    let d = match inp.u8() % 4 {
                        0 => inp.u32(),
                        _ => inp.below(100_000) as u32,
                    };
                    let st = c!(tg_kernel_max_active_blocks(kp, t, d, &mut n));
                    expect_fail_if_bad("tg_kernel_max_active_blocks", st, &[k]);
                    if st != tg_status::TG_OK {
                        assert_eq!(n, 0xDEAD);
                    }
                }
                _ => {
                    // SAFETY: all-zero is a valid tg_kernel_attributes.
                    let mut a: tg_kernel_attributes = unsafe { std::mem::zeroed() };
                    a.struct_size = std::mem::size_of::<tg_kernel_attributes>() as u32;
                    let st = c!(tg_kernel_get_attributes(kp, &mut a));
                    expect_fail_if_bad("tg_kernel_get_attributes", st, &[k]);
                }
            }
        }
        15 => {
            let m = w.pick(inp, Kind::Module);
            let names: Vec<&CStr> = vec![
                c"g_zero",
                c"g_init",
                c"g_ptr",
                c"c_table",
                c"",
                c"vector_add",
                c"nope",
            ];
            let name = names[inp.below(names.len())];
            let (mut gpu, mut cpu, mut size) = (0u64, null_mut::<c_void>(), 0u64);
            let np = if inp.chance(32) {
                null()
            } else {
                name.as_ptr()
            };
            let st = c!(tg_module_get_global(
                m.h as *const tg_module,
                np,
                &mut gpu,
                &mut cpu,
                &mut size
            ));
            expect_fail_if_bad("tg_module_get_global", st, &[m]);
            if st == tg_status::TG_OK {
                if size > 0 {
                    // SAFETY: `size` bytes at cpu.
                    unsafe {
                        let p = cpu as *mut u8;
                        let last = p.add(size as usize - 1);
                        std::ptr::write_volatile(last, std::ptr::read_volatile(last));
                    }
                }
            } else {
                assert!((gpu, cpu, size) == (0, null_mut(), 0));
            }
        }
        16 => {
            let d = w.pick(inp, Kind::Dev);
            let limit = if inp.chance(8) {
                inp.u32()
            } else {
                TG_LIMIT_STACK_SIZE
            };
            if inp.chance(2) {
                let v = match inp.u8() % 8 {
                    0 => 0,
                    1 => 1,
                    2 => 1024,
                    3 => 2048,
                    4 => 4096 + 8 * inp.below(512) as u64,
                    5 => 1 << 24,
                    6 => u64::MAX,
                    _ => inp.below(8192) as u64,
                };
                let st = c!(tg_device_set_limit(d.h as *const tg_device, limit, v));
                expect_fail_if_bad("tg_device_set_limit", st, &[d]);
            } else {
                let mut v = 0xDEADu64;
                let out = if inp.chance(16) {
                    null_mut()
                } else {
                    &mut v as *mut u64
                };
                let st = c!(tg_device_get_limit(d.h as *const tg_device, limit, out));
                expect_fail_if_bad("tg_device_get_limit", st, &[d]);
                if st == tg_status::TG_OK {
                    assert!(v != 0xDEAD && v < 1 << 24, "stack limit {v}");
                } else {
                    assert_eq!(v, 0xDEAD);
                }
            }
        }
        17 => {
            let d = w.pick(inp, Kind::Dev);
            let kind = match inp.u8() % 8 {
                0 => inp.u32() as i32,
                1 | 2 => 1,
                _ => 0,
            };
            if w.queues.len() >= MAX_QUEUES {
                return;
            }
            let mut q = null_mut::<tg_queue>();
            let st = if inp.chance(2) {
                c!(tg_queue_create(
                    d.h as *const tg_device,
                    tg_queue_kind_arg(kind),
                    &mut q
                ))
            } else {
                let depth = match inp.u8() % 8 {
                    0 => inp.u32(),
                    1 => 15,
                    2 => 8,
                    3 => 1 << 17,
                    _ => 16 << inp.below(6),
                };
                c!(tg_queue_create_with_depth(
                    d.h as *const tg_device,
                    tg_queue_kind_arg(kind),
                    depth,
                    &mut q
                ))
            };
            expect_fail_if_bad("tg_queue_create", st, &[d]);
            if st == tg_status::TG_OK {
                w.queues.push((q as usize, d.h));
            } else {
                assert!(q.is_null());
            }
        }
        18 => {
            let q = w.pick(inp, Kind::Queue);
            // Destroying a queue waits for its work: nothing may wait for the CPU then.
            w.release_all();
            let st = c!(tg_queue_destroy(q.h as *mut tg_queue));
            expect_destroy("tg_queue_destroy", st, q);
            if st == tg_status::TG_OK && q.h != 0 {
                w.forget(q.h);
            }
        }
        19..=23 => op_launch(inp, w),
        24 => {
            let q = w.pick(inp, Kind::Queue);
            let dst = w.pick(inp, Kind::Buf);
            let src = w.pick(inp, Kind::Buf);
            let size_of = |p: Pick| w.bufs.iter().find(|b| b.h == p.h).map_or(4096, |b| b.size);
            let (ds, ss) = (size_of(dst), size_of(src));
            let off = |inp: &mut Input, s: u64| match inp.u8() % 8 {
                0 => s,
                1 => inp.u64(),
                2 => s.saturating_sub(1),
                _ => inp.below(s.min(1 << 20) as usize + 1) as u64 & !3,
            };
            let (doff, soff) = (off(inp, ds), off(inp, ss));
            let size = match inp.u8() % 8 {
                0 => 0,
                1 => inp.u64(),
                2 => ds.min(ss),
                _ => inp.below(ds.min(ss) as usize + 1) as u64,
            };
            let st = c!(tg_queue_copy(
                q.h as *const tg_queue,
                dst.h as *const tg_buf,
                doff,
                src.h as *const tg_buf,
                soff,
                size
            ));
            expect_fail_if_bad("tg_queue_copy", st, &[q, dst, src]);
            if st == tg_status::TG_OK {
                assert!(
                    doff.checked_add(size).is_some_and(|e| e <= ds)
                        && soff.checked_add(size).is_some_and(|e| e <= ss),
                    "tg_queue_copy accepted a range outside a buffer: dst {doff}+{size} of {ds}, src {soff}+{size} of {ss}"
                );
            }
        }
        25 => {
            let q = w.pick(inp, Kind::Queue);
            let s = w.pick(inp, Kind::Signal);
            let mut v = value(inp);
            if let Some(r) = w.sig(s.h) {
                if r.blocking {
                    return; // no GPU writes to a signal the CPU releases
                }
                v = v.max(r.floor);
            }
            let st = c!(tg_queue_signal(
                q.h as *const tg_queue,
                s.h as *const tg_signal,
                v
            ));
            expect_fail_if_bad("tg_queue_signal", st, &[q, s]);
            if st == tg_status::TG_OK {
                let r = w.sig(s.h).expect("live signal");
                r.min_assigned = r.min_assigned.min(v);
                r.gpu_written = true;
            }
        }
        26 => {
            let q = w.pick(inp, Kind::Queue);
            let s = w.pick(inp, Kind::Signal);
            let block = inp.chance(8);
            let raw = value(inp);
            let (v, blocking) = match w.sig(s.h) {
                Some(r) if r.blocking => (raw, !r.released),
                Some(r) if block && !r.gpu_written && r.min_assigned < u64::MAX => {
                    (r.min_assigned.saturating_add(1 + raw % 1000), true)
                }
                Some(r) => (
                    match raw % 4 {
                        0 => 0,
                        1 => r.min_assigned,
                        _ => raw % (r.min_assigned.saturating_add(1)).max(1),
                    },
                    false,
                ),
                None => (raw, false),
            };
            let st = c!(tg_queue_wait(
                q.h as *const tg_queue,
                s.h as *const tg_signal,
                v
            ));
            expect_fail_if_bad("tg_queue_wait", st, &[q, s]);
            if st == tg_status::TG_OK {
                let r = w.sig(s.h).expect("live signal");
                if blocking {
                    r.blocking = true;
                    let n = 1 + inp.below(6) as u32;
                    w.unblock_in = Some(w.unblock_in.map_or(n, |u| u.min(n)));
                } else if !r.blocking {
                    r.floor = r.floor.max(v);
                }
            }
        }
        27 => {
            let q = w.pick(inp, Kind::Queue);
            let st = c!(tg_queue_barrier(q.h as *const tg_queue));
            expect_fail_if_bad("tg_queue_barrier", st, &[q]);
        }
        28 | 29 => {
            let q = w.pick(inp, Kind::Queue);
            let st = c!(tg_queue_submit(q.h as *const tg_queue));
            expect_fail_if_bad("tg_queue_submit", st, &[q]);
        }
        30 => {
            let q = w.pick(inp, Kind::Queue);
            let t = short_timeout(inp);
            let st = c!(tg_queue_synchronize(q.h as *const tg_queue, t));
            expect_fail_if_bad("tg_queue_synchronize", st, &[q]);
        }
        31 => {
            let d = w.pick(inp, Kind::Dev);
            let initial = value(inp);
            if w.sigs.len() >= MAX_SIGS {
                return;
            }
            let mut s = null_mut::<tg_signal>();
            let out = if inp.chance(32) {
                null_mut()
            } else {
                &mut s as *mut _
            };
            let st = c!(tg_signal_create(d.h as *const tg_device, initial, out));
            expect_fail_if_bad("tg_signal_create", st, &[d]);
            if st == tg_status::TG_OK {
                let mut v = 0;
                assert_eq!(c!(tg_signal_value(s, &mut v)), tg_status::TG_OK);
                assert_eq!(v, initial, "a new signal's value");
                w.sigs.push(SigRec {
                    h: s as usize,
                    min_assigned: initial,
                    floor: 0,
                    gpu_written: false,
                    blocking: false,
                    released: false,
                });
            } else {
                assert!(s.is_null());
            }
        }
        32 => {
            let s = w.pick(inp, Kind::Signal);
            w.release(s.h);
            let st = c!(tg_signal_destroy(s.h as *mut tg_signal));
            expect_destroy("tg_signal_destroy", st, s);
            if st == tg_status::TG_OK && s.h != 0 {
                w.forget(s.h);
            }
        }
        33 => {
            let s = w.pick(inp, Kind::Signal);
            let mut v = 0xDEADu64;
            let out = if inp.chance(16) {
                null_mut()
            } else {
                &mut v as *mut u64
            };
            let st = c!(tg_signal_value(s.h as *const tg_signal, out));
            expect_fail_if_bad("tg_signal_value", st, &[s]);
            if st != tg_status::TG_OK {
                assert_eq!(v, 0xDEAD);
            }
        }
        34 => {
            let s = w.pick(inp, Kind::Signal);
            let mut v = value(inp);
            if let Some(r) = w.sig(s.h) {
                if r.blocking && r.released {
                    v = u64::MAX;
                } else if !r.blocking {
                    v = v.max(r.floor);
                }
            }
            let st = c!(tg_signal_set(s.h as *const tg_signal, v));
            expect_fail_if_bad("tg_signal_set", st, &[s]);
            if st == tg_status::TG_OK {
                let r = w.sig(s.h).expect("live signal");
                r.min_assigned = r.min_assigned.min(v);
                let mut now = 0;
                assert_eq!(
                    c!(tg_signal_value(s.h as *const tg_signal, &mut now)),
                    tg_status::TG_OK
                );
                if !r.gpu_written {
                    assert_eq!(now, v, "tg_signal_value after tg_signal_set");
                }
            }
        }
        35 => {
            let s = w.pick(inp, Kind::Signal);
            let v = value(inp);
            let t = short_timeout(inp);
            let st = c!(tg_signal_wait(s.h as *const tg_signal, v, t));
            expect_fail_if_bad("tg_signal_wait", st, &[s]);
        }
        36 => w.release_all(),
        37 => {
            let v = inp.u32() as i32;
            // SAFETY: tg_status_str returns a static NUL-terminated string for any value.
            let s = unsafe { CStr::from_ptr(tg_status_str(tg_status_arg(v))) };
            assert!(!s.to_bytes().is_empty());
            assert_eq!(tg_version() >> 16, TG_VERSION_MAJOR);
            let _ = last_error();
        }
        _ => {
            // A queue on a device whose handle is gone, or a device closed under live objects.
            let d = w.pick(inp, Kind::Dev);
            let st = c!(tg_device_synchronize(d.h as *const tg_device, 0));
            expect_fail_if_bad("tg_device_synchronize", st, &[d]);
        }
    }
}

fn kernel_record(h: usize, name: &'static str) -> KernRec {
    let kp = h as *const tg_kernel;
    // SAFETY: all-zero is a valid tg_kernel_attributes.
    let mut a: tg_kernel_attributes = unsafe { std::mem::zeroed() };
    a.struct_size = std::mem::size_of::<tg_kernel_attributes>() as u32;
    assert_eq!(c!(tg_kernel_get_attributes(kp, &mut a)), tg_status::TG_OK);
    let params = (0..a.num_params)
        .map(|i| {
            let (mut o, mut s) = (0, 0);
            assert_eq!(
                c!(tg_kernel_get_param(kp, i, &mut o, &mut s)),
                tg_status::TG_OK
            );
            (o, s)
        })
        .collect();
    KernRec {
        h,
        name,
        params,
        param_bytes: a.param_bytes,
        max_threads: a.max_threads_per_block,
        max_dyn: a.max_dynamic_shared_bytes,
    }
}

struct SeqState {
    baseline: Option<Counts>,
}

static SEQ: Mutex<SeqState> = Mutex::new(SeqState { baseline: None });

/// Seed sequences that touch every kind of object: run before the baseline is taken, so that
/// lazily created process state (allocator pools, emulator tables) is not counted as a leak.
const WARM_UP: [&[u8]; 3] = [
    include_bytes!("../seeds/capi_sequence/launch_vector_add.bin"),
    include_bytes!("../seeds/capi_sequence/copy_engine.bin"),
    include_bytes!("../seeds/capi_sequence/all_fixture_kernels.bin"),
];

fn run_sequence(data: &[u8]) {
    let mut w = World::default();
    w.devs.push(open_emu());
    let order = data.last().copied().unwrap_or(0);
    let mut inp = Input::new(data);
    let mut n = 0;
    while !inp.exhausted() && n < MAX_OPS {
        op(&mut inp, &mut w);
        n += 1;
        if let Some(u) = w.unblock_in.as_mut() {
            *u -= 1;
            if *u == 0 {
                w.release_all();
            }
        }
    }
    finish(&mut w, order);
}

/// Destroy everything still alive (every destroy must succeed), waiting for the queues first.
fn finish(w: &mut World, order: u8) {
    w.release_all();
    for &(q, _) in &w.queues {
        c!(tg_queue_submit(q as *const tg_queue));
        let st = c!(tg_queue_synchronize(q as *const tg_queue, HANG_NS));
        assert!(
            st != tg_status::TG_ERROR_TIMEOUT,
            "HANG: a queue did not finish in {} s with every signal released: {}",
            HANG_NS / 1_000_000_000,
            last_error()
        );
    }
    let mut all: Vec<(Kind, usize)> = Vec::new();
    all.extend(w.sigs.iter().map(|s| (Kind::Signal, s.h)));
    all.extend(w.kernels.iter().map(|k| (Kind::Kernel, k.h)));
    all.extend(w.mods.iter().map(|m| (Kind::Module, m.0)));
    all.extend(w.queues.iter().map(|q| (Kind::Queue, q.0)));
    all.extend(w.bufs.iter().map(|b| (Kind::Buf, b.h)));
    all.extend(w.devs.iter().map(|&d| (Kind::Dev, d)));
    match order % 3 {
        0 => {}
        1 => all.reverse(),
        _ => {
            let n = all.len();
            if n > 0 {
                all.rotate_left(usize::from(order) % n);
            }
        }
    }
    for (k, h) in all {
        let st = match k {
            Kind::Signal => c!(tg_signal_destroy(h as *mut tg_signal)),
            Kind::Kernel => c!(tg_kernel_destroy(h as *mut tg_kernel)),
            Kind::Module => c!(tg_module_destroy(h as *mut tg_module)),
            Kind::Queue => c!(tg_queue_destroy(h as *mut tg_queue)),
            Kind::Buf => c!(tg_buf_free(h as *mut tg_buf)),
            Kind::Dev => c!(tg_device_close(h as *mut tg_device)),
        };
        assert_eq!(
            st,
            tg_status::TG_OK,
            "destroying a live {k:?}: {}",
            last_error()
        );
    }
    // The exported dma-buf descriptors belong to the application: destroying the buffers and
    // closing the devices must leave them open.
    for (fd, target) in std::mem::take(&mut w.fds) {
        use std::os::fd::{AsRawFd, IntoRawFd};
        let n = fd.as_raw_fd();
        let now = std::fs::read_link(format!("/proc/self/fd/{n}")).ok();
        if now.as_ref() != Some(&target) {
            // Not ours any more: never close it (it may be someone else's descriptor now).
            let _ = fd.into_raw_fd();
            if !tolerated("emu-dmabuf-fd") {
                panic!(
                    "BUG (emu-dmabuf-fd): the dma-buf fd {n} that tg_buf_export_dmabuf gave the \
                     caller ({}) is {} after its buffer and device were destroyed",
                    target.display(),
                    now.map_or("closed".to_string(), |p| format!("now {}", p.display()))
                );
            }
        }
    }
    *w = World::default();
}

/// Known, reported bugs the harness steps around instead of failing on (see docs/fuzzing.md):
/// `TEGRAGPU_FUZZ_TOLERATE=id,id` or [`set_tolerated`]. Ids: `emu-dmabuf-fd`.
static TOLERATED: Mutex<Option<Vec<String>>> = Mutex::new(None);

/// Replace the tolerated bug ids (the smoke test's list; the fuzz targets read the environment).
pub fn set_tolerated(ids: &[&str]) {
    *TOLERATED.lock().unwrap_or_else(|e| e.into_inner()) =
        Some(ids.iter().map(|s| s.to_string()).collect());
}

fn tolerated(id: &str) -> bool {
    let mut t = TOLERATED.lock().unwrap_or_else(|e| e.into_inner());
    t.get_or_insert_with(|| {
        std::env::var("TEGRAGPU_FUZZ_TOLERATE")
            .unwrap_or_default()
            .split(',')
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect()
    })
    .iter()
    .any(|s| s == id)
}

/// Target (b): the input bytes drive up to 256 C API calls on emulated devices (one is opened
/// first), with handles drawn from live, destroyed and random values; then everything is
/// destroyed and the counts must be back at their baseline.
pub fn capi_sequence(data: &[u8]) {
    let mut st = SEQ.lock().unwrap_or_else(|e| e.into_inner());
    if st.baseline.is_none() {
        // The loader's lazily loaded state too (the PTX compiler library, when one is found).
        let dev = open_emu();
        for data in [WARP_PTX, WARP_FATBIN, GLOBALS_SM87, KERNELS_SM87] {
            let mut m = null_mut::<tg_module>();
            let st = c!(tg_module_load(
                dev as *const tg_device,
                data.as_ptr() as *const c_void,
                data.len(),
                &mut m
            ));
            if st == tg_status::TG_OK {
                assert_eq!(c!(tg_module_destroy(m)), tg_status::TG_OK);
            }
        }
        assert_eq!(c!(tg_device_close(dev as *mut tg_device)), tg_status::TG_OK);
        for _ in 0..2 {
            for seq in WARM_UP {
                run_sequence(seq);
            }
        }
        st.baseline = Some(counts());
    }
    run_sequence(data);
    assert_counts(
        "destroying every object of the sequence",
        st.baseline.as_ref().expect("baseline"),
    );
}
