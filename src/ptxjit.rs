//! PTX → cubin compilation through a PTX compiler library loaded at run time (never linked).
//!
//! Two libraries expose a PTX compiler; the first one found is used for the life of the process:
//!
//! - the NVIDIA driver's `libnvidia-ptxjitcompiler.so.1`, which exports the documented
//!   nvPTXCompiler API (`nvPTXCompilerCreate`, `nvPTXCompilerCompile` with `--gpu-name=sm_XY`,
//!   ...). It is installed with every driver, desktop and Jetson (L4T) alike, and compiles the
//!   PTX ISA versions of the driver's CUDA version;
//! - nvJitLink (`libnvJitLink.so.13` / `.so.12`) from the CUDA toolkit or the pip wheels
//!   `nvidia-nvjitlink` (13) / `nvidia-nvjitlink-cu12`, used with `NVJITLINK_INPUT_PTX` and
//!   `-arch=sm_XY`. Its entry points are looked up by their plain names and, failing that, by
//!   the versioned names the CUDA 12 header maps them to (`__nvJitLinkCreate_12_9`, ...).
//!
//! Search order:
//! 1. `$TEGRAGPU_PTXJIT`, a path to either library; when set, nothing else is tried;
//! 2. `libnvidia-ptxjitcompiler.so.1` through the dynamic loader, then in `/usr/lib`,
//!    `/usr/lib64`, `/usr/lib/x86_64-linux-gnu`, `/usr/lib/aarch64-linux-gnu{,/nvidia,/tegra}`,
//!    `/usr/local/nvidia/lib64`, `/usr/lib/wsl/lib`;
//! 3. `libnvJitLink.so.13`, `libnvJitLink.so.12` through the dynamic loader, then in the CUDA
//!    toolkit (`/usr/local/cuda/lib64`, `/usr/local/cuda/targets/*/lib`), then in the pip wheels
//!    (`nvidia/cu13/lib`, `nvidia/nvjitlink/lib`) under the Python package directories that
//!    `src/libsearch.rs` finds (the running interpreter's, `$VIRTUAL_ENV`, `$CONDA_PREFIX`,
//!    the running program's prefix, the venv beside libtegragpu.so, `~/.local`,
//!    `~/.pyenv/versions/*`, `/usr/local`, `/usr`). When nothing loads, the error lists every
//!    place tried.
//!
//! Arch-specific PTX: when the PTX's `.target` is `sm_XYa` or `sm_XYf`, the same suffix is kept
//! on the device's SM (`--gpu-name=sm_90a`), as ptxas requires.

use crate::error::{Error, Result, Status};
use crate::libsearch::{self, Lib};
use crate::os::lock::ForkMutex as Mutex;
use libloading::Library;
use std::ffi::{c_char, c_int, c_uint, c_void, CString};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

/// Environment variable naming the PTX compiler library to use.
pub const ENV_PTXJIT: &str = "TEGRAGPU_PTXJIT";

const DRIVER_LIB: &str = "libnvidia-ptxjitcompiler.so.1";
const JITLINK_LIBS: [&str; 2] = ["libnvJitLink.so.13", "libnvJitLink.so.12"];

/// Which API the loaded library provides.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Backend {
    /// nvPTXCompiler (the driver's `libnvidia-ptxjitcompiler`). Extra options are ptxas
    /// options, e.g. `-O3`, `--maxrregcount=64`.
    PtxCompiler,
    /// nvJitLink. Extra options are nvJitLink options, e.g. `-O3`, `-maxrregcount=64`,
    /// `-Xptxas=...`.
    NvJitLink,
}

type Handle = *mut c_void;

// nvPTXCompiler (nvPTXCompiler.h); results are nvPTXCompileResult.
type PcCreate = unsafe extern "C" fn(*mut Handle, usize, *const c_char) -> c_int;
type PcDestroy = unsafe extern "C" fn(*mut Handle) -> c_int;
type PcCompile = unsafe extern "C" fn(Handle, c_int, *const *const c_char) -> c_int;
type PcGetSize = unsafe extern "C" fn(Handle, *mut usize) -> c_int;
type PcGetBytes = unsafe extern "C" fn(Handle, *mut c_void) -> c_int;
type PcGetLog = unsafe extern "C" fn(Handle, *mut c_char) -> c_int;
type PcVersion = unsafe extern "C" fn(*mut c_uint, *mut c_uint) -> c_int;

// nvJitLink (nvJitLink.h); results are nvJitLinkResult.
type JlCreate = unsafe extern "C" fn(*mut Handle, u32, *const *const c_char) -> c_int;
type JlDestroy = unsafe extern "C" fn(*mut Handle) -> c_int;
type JlAddData = unsafe extern "C" fn(Handle, c_int, *const c_void, usize, *const c_char) -> c_int;
type JlComplete = unsafe extern "C" fn(Handle) -> c_int;
type JlGetSize = unsafe extern "C" fn(Handle, *mut usize) -> c_int;
type JlGetBytes = unsafe extern "C" fn(Handle, *mut c_void) -> c_int;
type JlGetLog = unsafe extern "C" fn(Handle, *mut c_char) -> c_int;
type JlVersion = unsafe extern "C" fn(*mut c_uint, *mut c_uint) -> c_int;

/// `NVJITLINK_INPUT_PTX`.
const NVJITLINK_INPUT_PTX: c_int = 2;

struct PtxCompilerApi {
    create: PcCreate,
    destroy: PcDestroy,
    compile: PcCompile,
    program_size: PcGetSize,
    program: PcGetBytes,
    error_log_size: PcGetSize,
    error_log: PcGetLog,
    version: Option<PcVersion>,
}

struct JitLinkApi {
    create: JlCreate,
    destroy: JlDestroy,
    add_data: JlAddData,
    complete: JlComplete,
    cubin_size: JlGetSize,
    cubin: JlGetBytes,
    error_log_size: JlGetSize,
    error_log: JlGetLog,
    version: Option<JlVersion>,
}

enum Api {
    PtxCompiler(PtxCompilerApi),
    JitLink(JitLinkApi),
}

struct Loaded {
    path: PathBuf,
    api: Api,
    /// Keeps the function pointers valid; never unloaded.
    _lib: Library,
}

static LOADED: OnceLock<Arc<Loaded>> = OnceLock::new();
/// Serialises the search so that two threads do not both open libraries.
static SEARCH: Mutex<()> = Mutex::new(());

/// `SEARCH`, held across `fork()` (see `crate::os::fork`).
pub(crate) static FORK_LOCK: crate::os::fork::ForkLock = crate::os::fork::ForkLock {
    order: 2,
    lock: || std::mem::forget(SEARCH.lock()),
    // SAFETY (of the call): the caller took the lock with `lock` and forgot its guard.
    unlock: || unsafe { SEARCH.force_unlock() },
};

fn nvptxcompile_result(r: c_int) -> &'static str {
    match r {
        0 => "NVPTXCOMPILE_SUCCESS",
        1 => "NVPTXCOMPILE_ERROR_INVALID_COMPILER_HANDLE",
        2 => "NVPTXCOMPILE_ERROR_INVALID_INPUT",
        3 => "NVPTXCOMPILE_ERROR_COMPILATION_FAILURE",
        4 => "NVPTXCOMPILE_ERROR_INTERNAL",
        5 => "NVPTXCOMPILE_ERROR_OUT_OF_MEMORY",
        6 => "NVPTXCOMPILE_ERROR_COMPILER_INVOCATION_INCOMPLETE",
        7 => "NVPTXCOMPILE_ERROR_UNSUPPORTED_PTX_VERSION",
        8 => "NVPTXCOMPILE_ERROR_UNSUPPORTED_DEVSIDE_SYNC",
        9 => "NVPTXCOMPILE_ERROR_CANCELLED",
        _ => "unknown nvPTXCompileResult",
    }
}

fn nvjitlink_result(r: c_int) -> &'static str {
    match r {
        0 => "NVJITLINK_SUCCESS",
        1 => "NVJITLINK_ERROR_UNRECOGNIZED_OPTION",
        2 => "NVJITLINK_ERROR_MISSING_ARCH",
        3 => "NVJITLINK_ERROR_INVALID_INPUT",
        4 => "NVJITLINK_ERROR_PTX_COMPILE",
        5 => "NVJITLINK_ERROR_NVVM_COMPILE",
        6 => "NVJITLINK_ERROR_INTERNAL",
        7 => "NVJITLINK_ERROR_THREADPOOL",
        8 => "NVJITLINK_ERROR_UNRECOGNIZED_INPUT",
        9 => "NVJITLINK_ERROR_FINALIZE",
        _ => "unknown nvJitLinkResult",
    }
}

/// Resolve `name` in `lib` as a `T` (a function pointer type matching the C declaration).
///
/// # Safety
/// `T` must be the function pointer type of the symbol's C declaration.
unsafe fn sym<T: Copy>(lib: &Library, name: &str) -> Option<T> {
    let mut z = name.as_bytes().to_vec();
    z.push(0);
    // SAFETY: per the caller, T matches the symbol's type.
    unsafe { lib.get::<T>(&z).ok().map(|s| *s) }
}

fn open_ptx_compiler(lib: &Library) -> std::result::Result<PtxCompilerApi, String> {
    macro_rules! req {
        ($name:literal) => {
            // SAFETY: the types above follow nvPTXCompiler.h.
            unsafe { sym(lib, $name) }.ok_or_else(|| format!("{} not exported", $name))?
        };
    }
    Ok(PtxCompilerApi {
        create: req!("nvPTXCompilerCreate"),
        destroy: req!("nvPTXCompilerDestroy"),
        compile: req!("nvPTXCompilerCompile"),
        program_size: req!("nvPTXCompilerGetCompiledProgramSize"),
        program: req!("nvPTXCompilerGetCompiledProgram"),
        error_log_size: req!("nvPTXCompilerGetErrorLogSize"),
        error_log: req!("nvPTXCompilerGetErrorLog"),
        // SAFETY: as above.
        version: unsafe { sym(lib, "nvPTXCompilerGetVersion") },
    })
}

/// The suffix (`""` or `"_12_9"`) under which `lib` exports nvJitLink: the plain names, else the
/// newest versioned ones.
fn jitlink_suffix(lib: &Library) -> Option<String> {
    let has = |n: &str| {
        // SAFETY: only the symbol's presence is checked; the pointer is not called.
        unsafe { sym::<*const c_void>(lib, n) }.is_some()
    };
    if has("nvJitLinkCreate") {
        return Some(String::new());
    }
    for major in [14u32, 13, 12] {
        for minor in (0..=9u32).rev() {
            let s = format!("_{major}_{minor}");
            if has(&format!("__nvJitLinkCreate{s}")) {
                return Some(s);
            }
        }
    }
    None
}

fn open_jitlink(lib: &Library) -> std::result::Result<JitLinkApi, String> {
    let suffix = jitlink_suffix(lib).ok_or("nvJitLinkCreate not exported")?;
    let name = |base: &str| {
        if suffix.is_empty() {
            base.to_string()
        } else {
            format!("__{base}{suffix}")
        }
    };
    macro_rules! req {
        ($name:literal) => {{
            let n = name($name);
            // SAFETY: the types above follow nvJitLink.h.
            unsafe { sym(lib, &n) }.ok_or_else(|| format!("{n} not exported"))?
        }};
    }
    Ok(JitLinkApi {
        create: req!("nvJitLinkCreate"),
        destroy: req!("nvJitLinkDestroy"),
        add_data: req!("nvJitLinkAddData"),
        complete: req!("nvJitLinkComplete"),
        cubin_size: req!("nvJitLinkGetLinkedCubinSize"),
        cubin: req!("nvJitLinkGetLinkedCubin"),
        error_log_size: req!("nvJitLinkGetErrorLogSize"),
        error_log: req!("nvJitLinkGetErrorLog"),
        // SAFETY: as above; nvJitLinkVersion is never versioned (CUDA >= 12.3).
        version: unsafe { sym(lib, "nvJitLinkVersion") },
    })
}

/// Open `path` and resolve whichever API it exports.
fn open(path: &Path) -> std::result::Result<Loaded, String> {
    // SAFETY: loading the library runs its initialisers, which have no preconditions.
    let lib = unsafe { Library::new(path) }.map_err(|e| e.to_string())?;
    let api = match open_ptx_compiler(&lib) {
        Ok(a) => Api::PtxCompiler(a),
        Err(e1) => match open_jitlink(&lib) {
            Ok(a) => Api::JitLink(a),
            Err(e2) => return Err(format!("neither nvPTXCompiler ({e1}) nor nvJitLink ({e2})")),
        },
    };
    Ok(Loaded {
        path: path.to_path_buf(),
        api,
        _lib: lib,
    })
}

/// Where the PTX compilers are looked for after `$TEGRAGPU_PTXJIT`, in order (see
/// `src/libsearch.rs`).
const LIBS: [Lib; 2] = [
    Lib {
        names: &[DRIVER_LIB],
        dirs: &[
            "/usr/lib",
            "/usr/lib64",
            "/usr/lib/x86_64-linux-gnu",
            "/usr/lib/aarch64-linux-gnu",
            "/usr/lib/aarch64-linux-gnu/nvidia",
            "/usr/lib/aarch64-linux-gnu/tegra",
            "/usr/local/nvidia/lib64",
            "/usr/lib/wsl/lib",
        ],
        wheel_dirs: &[],
    },
    Lib {
        names: &JITLINK_LIBS,
        dirs: &[
            "/usr/local/cuda/lib64",
            "/usr/local/cuda/targets/x86_64-linux/lib",
            "/usr/local/cuda/targets/sbsa-linux/lib",
            "/usr/local/cuda/targets/aarch64-linux/lib",
        ],
        // nvidia-nvjitlink (13): cu13/lib/libnvJitLink.so.13; nvidia-nvjitlink-cu12:
        // nvjitlink/lib/libnvJitLink.so.12.
        wheel_dirs: &["nvidia/cu13/lib", "nvidia/nvjitlink/lib"],
    },
];

fn missing(e: libsearch::NotFound) -> Error {
    Error::new(
        Status::LibraryMissing,
        format!(
            "no PTX compiler library found: install the NVIDIA driver ({DRIVER_LIB}) or nvJitLink \
             (pip install nvidia-nvjitlink-cu12), or set {ENV_PTXJIT} to the path of either. {}",
            e.describe()
        ),
    )
}

fn load() -> Result<Arc<Loaded>> {
    if let Some(l) = LOADED.get() {
        return Ok(l.clone());
    }
    crate::os::fork::register(&FORK_LOCK);
    let _guard = SEARCH.lock();
    if let Some(l) = LOADED.get() {
        return Ok(l.clone());
    }
    let found = if let Some(p) = std::env::var_os(ENV_PTXJIT).filter(|v| !v.is_empty()) {
        let p = PathBuf::from(p);
        open(&p).map_err(|e| {
            Error::new(
                Status::LibraryMissing,
                format!(
                    "{ENV_PTXJIT}={} is not a usable PTX compiler library ({e}); unset it to \
                     search for {DRIVER_LIB} and nvJitLink",
                    p.display()
                ),
            )
        })?
    } else {
        libsearch::Search::current(&LIBS)
            .first(open)
            .map_err(missing)?
    };
    Ok(LOADED.get_or_init(|| Arc::new(found)).clone())
}

/// The library in use and which API it provides (loading it if needed).
pub fn library() -> Result<(Backend, PathBuf)> {
    let l = load()?;
    let b = match l.api {
        Api::PtxCompiler(_) => Backend::PtxCompiler,
        Api::JitLink(_) => Backend::NvJitLink,
    };
    Ok((b, l.path.clone()))
}

/// The (major, minor) version of the library in use: the PTX compiler's CUDA version
/// (`nvPTXCompilerGetVersion`) or nvJitLink's (`nvJitLinkVersion`). [`Status::NotSupported`]
/// when the library does not export the call.
pub fn version() -> Result<(u32, u32)> {
    let l = load()?;
    let (mut major, mut minor) = (0, 0);
    let (r, name) = match &l.api {
        Api::PtxCompiler(a) => match a.version {
            // SAFETY: two valid out-pointers.
            Some(f) => (
                unsafe { f(&mut major, &mut minor) },
                "nvPTXCompilerGetVersion",
            ),
            None => (-1, "nvPTXCompilerGetVersion"),
        },
        Api::JitLink(a) => match a.version {
            // SAFETY: two valid out-pointers.
            Some(f) => (unsafe { f(&mut major, &mut minor) }, "nvJitLinkVersion"),
            None => (-1, "nvJitLinkVersion"),
        },
    };
    match r {
        0 => Ok((major, minor)),
        -1 => Err(Error::new(
            Status::NotSupported,
            format!("{} does not export {name}", l.path.display()),
        )),
        r => Err(Error::new(
            Status::CompileError,
            format!("{name} failed with {r}"),
        )),
    }
}

/// The `a` / `f` suffix of the PTX's `.target` architecture (`.target sm_90a` → `"a"`).
fn target_suffix(ptx: &str) -> &'static str {
    for line in ptx.lines() {
        let l = line.trim_start();
        let Some(rest) = l.strip_prefix(".target") else {
            continue;
        };
        if !rest.starts_with(|c: char| c.is_ascii_whitespace()) {
            continue;
        }
        let arch = rest
            .trim_start()
            .split(|c: char| c == ',' || c.is_ascii_whitespace() || c == '/')
            .next()
            .unwrap_or("");
        return match arch.strip_prefix("sm_").and_then(|a| a.chars().last()) {
            Some('a') => "a",
            Some('f') => "f",
            _ => "",
        };
    }
    ""
}

fn log_text(mut buf: Vec<u8>) -> String {
    if let Some(n) = buf.iter().position(|&b| b == 0) {
        buf.truncate(n);
    }
    String::from_utf8_lossy(&buf).trim_end().to_string()
}

/// Compile PTX text to a cubin for SM `sm = (major, minor)` with whichever PTX compiler library
/// is found (see the module docs for the search order). `extra_options` are passed verbatim to
/// that library after the architecture option (see [`Backend`] for their syntax) and must not
/// choose the architecture themselves.
///
/// Errors: [`Status::LibraryMissing`] when no library is found; [`Status::CompileError`] with the
/// compiler's log when compilation fails; [`Status::InvalidArgument`] for an invalid SM, NUL
/// bytes in the inputs or an architecture option.
pub fn compile_ptx(ptx: &str, sm: (u32, u32), extra_options: &[&str]) -> Result<Vec<u8>> {
    if sm.1 > 9 || sm.0 == 0 || sm.0 > 99 {
        return Err(Error::invalid(format!(
            "PTX compile: SM version ({}, {}) is not valid",
            sm.0, sm.1
        )));
    }
    if let Some(o) = extra_options.iter().find(|o| {
        let o = o.trim_start_matches('-');
        o.starts_with("gpu-name") || o.starts_with("arch")
    }) {
        return Err(Error::invalid(format!(
            "PTX compile: option {o:?} chooses the architecture; it is set from sm=({}, {})",
            sm.0, sm.1
        )));
    }
    let nul = |what: &str| Error::invalid(format!("PTX compile: {what} contains a NUL byte"));
    let c_ptx = CString::new(ptx).map_err(|_| nul("the PTX text"))?;
    let gpu = format!("sm_{}{}{}", sm.0, sm.1, target_suffix(ptx));
    let l = load()?;
    let (arch_opt, mut opts) = match l.api {
        Api::PtxCompiler(_) => (format!("--gpu-name={gpu}"), Vec::new()),
        Api::JitLink(_) => (format!("-arch={gpu}"), Vec::new()),
    };
    opts.push(CString::new(arch_opt).map_err(|_| nul("the architecture"))?);
    for o in extra_options {
        opts.push(CString::new(*o).map_err(|_| nul(&format!("option {o:?}")))?);
    }
    let ptrs: Vec<*const c_char> = opts.iter().map(|c| c.as_ptr()).collect();
    let shown: Vec<String> = opts
        .iter()
        .map(|c| c.to_string_lossy().into_owned())
        .collect();
    let shown = shown.join(" ");
    match &l.api {
        Api::PtxCompiler(a) => compile_nvptxcompiler(a, &c_ptx, &ptrs, &shown, &l.path),
        Api::JitLink(a) => compile_nvjitlink(a, &c_ptx, &ptrs, &shown, &l.path),
    }
}

fn failed(path: &Path, call: &str, opts: &str, result: &str, log: &str) -> Error {
    let mut m = format!("{call} ({opts}) failed: {result} [{}]", path.display());
    if !log.is_empty() {
        m.push('\n');
        m.push_str(log);
    }
    Error::new(Status::CompileError, m)
}

fn compile_nvptxcompiler(
    a: &PtxCompilerApi,
    ptx: &CString,
    opts: &[*const c_char],
    shown: &str,
    path: &Path,
) -> Result<Vec<u8>> {
    struct Guard<'a>(&'a PtxCompilerApi, Handle);
    impl Drop for Guard<'_> {
        fn drop(&mut self) {
            // SAFETY: the handle came from nvPTXCompilerCreate and is destroyed once.
            unsafe { (self.0.destroy)(&mut self.1) };
        }
    }
    let err = |call: &str, r: c_int, log: &str| {
        failed(
            path,
            call,
            shown,
            &format!("{} ({r})", nvptxcompile_result(r)),
            log,
        )
    };
    let mut h: Handle = std::ptr::null_mut();
    let len = ptx.as_bytes().len();
    // SAFETY: valid out-pointer; the text is `len` bytes (plus a NUL) and outlives the handle's
    // use below.
    let r = unsafe { (a.create)(&mut h, len, ptx.as_ptr()) };
    if r != 0 {
        return Err(err("nvPTXCompilerCreate", r, ""));
    }
    let g = Guard(a, h);
    let n = c_int::try_from(opts.len()).map_err(|_| Error::invalid("too many options"))?;
    // SAFETY: `opts` holds `n` NUL-terminated strings that outlive the call.
    let rc = unsafe { (a.compile)(g.1, n, opts.as_ptr()) };
    if rc != 0 {
        let mut size = 0usize;
        // SAFETY: valid handle and out-pointer.
        let log = if unsafe { (a.error_log_size)(g.1, &mut size) } == 0 && size > 0 {
            let mut buf = vec![0u8; size + 1];
            // SAFETY: the buffer holds `size` bytes plus one.
            if unsafe { (a.error_log)(g.1, buf.as_mut_ptr().cast()) } == 0 {
                log_text(buf)
            } else {
                String::new()
            }
        } else {
            String::new()
        };
        return Err(err("nvPTXCompilerCompile", rc, &log));
    }
    let mut size = 0usize;
    // SAFETY: valid handle and out-pointer.
    let r = unsafe { (a.program_size)(g.1, &mut size) };
    if r != 0 || size == 0 {
        return Err(err("nvPTXCompilerGetCompiledProgramSize", r, "no output"));
    }
    let mut out = vec![0u8; size];
    // SAFETY: the buffer holds `size` bytes.
    let r = unsafe { (a.program)(g.1, out.as_mut_ptr().cast()) };
    if r != 0 {
        return Err(err("nvPTXCompilerGetCompiledProgram", r, ""));
    }
    Ok(out)
}

fn compile_nvjitlink(
    a: &JitLinkApi,
    ptx: &CString,
    opts: &[*const c_char],
    shown: &str,
    path: &Path,
) -> Result<Vec<u8>> {
    struct Guard<'a>(&'a JitLinkApi, Handle);
    impl Drop for Guard<'_> {
        fn drop(&mut self) {
            // SAFETY: the handle came from nvJitLinkCreate and is destroyed once.
            unsafe { (self.0.destroy)(&mut self.1) };
        }
    }
    let error_log = |h: Handle| -> String {
        let mut size = 0usize;
        // SAFETY: valid handle and out-pointer.
        if unsafe { (a.error_log_size)(h, &mut size) } != 0 || size == 0 {
            return String::new();
        }
        let mut buf = vec![0u8; size + 1];
        // SAFETY: the buffer holds `size` bytes plus one.
        if unsafe { (a.error_log)(h, buf.as_mut_ptr().cast()) } != 0 {
            return String::new();
        }
        log_text(buf)
    };
    let err = |call: &str, r: c_int, log: &str| {
        failed(
            path,
            call,
            shown,
            &format!("{} ({r})", nvjitlink_result(r)),
            log,
        )
    };
    let mut h: Handle = std::ptr::null_mut();
    let n = u32::try_from(opts.len()).map_err(|_| Error::invalid("too many options"))?;
    // SAFETY: valid out-pointer; `opts` holds `n` NUL-terminated strings.
    let r = unsafe { (a.create)(&mut h, n, opts.as_ptr()) };
    if r != 0 {
        // No handle, hence no log; the usual cause is an unknown option or architecture.
        return Err(err("nvJitLinkCreate", r, ""));
    }
    let g = Guard(a, h);
    let bytes = ptx.as_bytes_with_nul();
    // SAFETY: valid handle; `bytes` is the NUL-terminated text, its length including the NUL.
    let r = unsafe {
        (a.add_data)(
            g.1,
            NVJITLINK_INPUT_PTX,
            bytes.as_ptr().cast(),
            bytes.len(),
            c"ptx".as_ptr(),
        )
    };
    if r != 0 {
        return Err(err("nvJitLinkAddData(PTX)", r, &error_log(g.1)));
    }
    // SAFETY: valid handle.
    let r = unsafe { (a.complete)(g.1) };
    if r != 0 {
        return Err(err("nvJitLinkComplete", r, &error_log(g.1)));
    }
    let mut size = 0usize;
    // SAFETY: valid handle and out-pointer.
    let r = unsafe { (a.cubin_size)(g.1, &mut size) };
    if r != 0 || size == 0 {
        return Err(err("nvJitLinkGetLinkedCubinSize", r, "no output"));
    }
    let mut out = vec![0u8; size];
    // SAFETY: the buffer holds `size` bytes.
    let r = unsafe { (a.cubin)(g.1, out.as_mut_ptr().cast()) };
    if r != 0 {
        return Err(err("nvJitLinkGetLinkedCubin", r, ""));
    }
    Ok(out)
}

/// What one input of [`link`] is (nvJitLink's input kinds).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkInput {
    Cubin,
    Ptx,
    /// NVVM LTO-IR.
    LtoIr,
    Fatbin,
    /// A relocatable host object holding device code.
    Object,
    /// A static library of such objects.
    Library,
}

impl LinkInput {
    /// `nvJitLinkInputType`.
    fn nvjitlink(self) -> c_int {
        match self {
            LinkInput::Cubin => 1,
            LinkInput::Ptx => 2,
            LinkInput::LtoIr => 3,
            LinkInput::Fatbin => 4,
            LinkInput::Object => 5,
            LinkInput::Library => 6,
        }
    }
}

static JITLINK: OnceLock<Arc<Loaded>> = OnceLock::new();

/// nvJitLink: the PTX compiler library when that is nvJitLink, else `$TEGRAGPU_PTXJIT` when it
/// names nvJitLink, else `libnvJitLink.so.13` / `.so.12` searched as for [`compile_ptx`].
fn load_jitlink() -> Result<Arc<Loaded>> {
    if let Some(l) = JITLINK.get() {
        return Ok(l.clone());
    }
    if let Ok(l) = load() {
        if matches!(l.api, Api::JitLink(_)) {
            return Ok(JITLINK.get_or_init(|| l).clone());
        }
    }
    crate::os::fork::register(&FORK_LOCK);
    let _guard = SEARCH.lock();
    if let Some(l) = JITLINK.get() {
        return Ok(l.clone());
    }
    let jitlink_only = |p: &Path| -> std::result::Result<Loaded, String> {
        let l = open(p)?;
        match l.api {
            Api::JitLink(_) => Ok(l),
            Api::PtxCompiler(_) => Err("a PTX compiler, not nvJitLink".into()),
        }
    };
    let env = std::env::var_os(ENV_PTXJIT)
        .filter(|v| !v.is_empty())
        .and_then(|p| jitlink_only(Path::new(&p)).ok());
    let found = match env {
        Some(l) => l,
        None => libsearch::Search::current(&LIBS[1..])
            .first(jitlink_only)
            .map_err(|e| {
                Error::new(
                    Status::LibraryMissing,
                    format!(
                        "no nvJitLink library found to link with: install it (pip install nvidia-nvjitlink-cu12) or set {ENV_PTXJIT} to libnvJitLink.so. {}",
                        e.describe()
                    ),
                )
            })?,
    };
    Ok(JITLINK.get_or_init(|| Arc::new(found)).clone())
}

/// Link `inputs` (kind, bytes, name for the log) into one cubin for SM `sm` with nvJitLink
/// (`-arch=sm_XY`, then `options`, nvJitLink's syntax). PTX inputs need not end with a NUL.
///
/// Errors: [`Status::LibraryMissing`] when nvJitLink is not found (the driver's PTX compiler
/// cannot link); [`Status::CompileError`] with nvJitLink's log when an input is refused or the
/// link fails; [`Status::InvalidArgument`] for an invalid SM, no inputs or NUL bytes in names
/// and options.
pub fn link(
    inputs: &[(LinkInput, &[u8], &str)],
    sm: (u32, u32),
    options: &[&str],
) -> Result<Vec<u8>> {
    if sm.1 > 9 || sm.0 == 0 || sm.0 > 99 {
        return Err(Error::invalid(format!(
            "link: SM version ({}, {}) is not valid",
            sm.0, sm.1
        )));
    }
    if inputs.is_empty() {
        return Err(Error::invalid("link: no inputs"));
    }
    let l = load_jitlink()?;
    let Api::JitLink(a) = &l.api else {
        unreachable!("load_jitlink returns nvJitLink");
    };
    let nul = |what: &str| Error::invalid(format!("link: {what} contains a NUL byte"));
    let mut opts =
        vec![CString::new(format!("-arch=sm_{}{}", sm.0, sm.1))
            .map_err(|_| nul("the architecture"))?];
    for o in options {
        opts.push(CString::new(*o).map_err(|_| nul(&format!("option {o:?}")))?);
    }
    let ptrs: Vec<*const c_char> = opts.iter().map(|c| c.as_ptr()).collect();
    let shown = opts
        .iter()
        .map(|c| c.to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join(" ");
    struct Guard<'a>(&'a JitLinkApi, Handle);
    impl Drop for Guard<'_> {
        fn drop(&mut self) {
            // SAFETY: the handle came from nvJitLinkCreate and is destroyed once.
            unsafe { (self.0.destroy)(&mut self.1) };
        }
    }
    let error_log = |h: Handle| -> String {
        let mut size = 0usize;
        // SAFETY: valid handle and out-pointer.
        if unsafe { (a.error_log_size)(h, &mut size) } != 0 || size == 0 {
            return String::new();
        }
        let mut buf = vec![0u8; size + 1];
        // SAFETY: the buffer holds `size` bytes plus one.
        if unsafe { (a.error_log)(h, buf.as_mut_ptr().cast()) } != 0 {
            return String::new();
        }
        log_text(buf)
    };
    let err = |call: &str, r: c_int, log: &str| {
        failed(
            &l.path,
            call,
            &shown,
            &format!("{} ({r})", nvjitlink_result(r)),
            log,
        )
    };
    let mut h: Handle = std::ptr::null_mut();
    // SAFETY: valid out-pointer; `ptrs` holds NUL-terminated strings.
    let r = unsafe { (a.create)(&mut h, ptrs.len() as u32, ptrs.as_ptr()) };
    if r != 0 {
        return Err(err("nvJitLinkCreate", r, ""));
    }
    let g = Guard(a, h);
    for (kind, bytes, name) in inputs {
        let cname = CString::new(*name).map_err(|_| nul("an input name"))?;
        // PTX is text: nvJitLink reads it up to its size, with a NUL at the end.
        let owned;
        let data: &[u8] = if *kind == LinkInput::Ptx && bytes.last() != Some(&0) {
            owned = [*bytes, &[0u8][..]].concat();
            &owned
        } else {
            bytes
        };
        // SAFETY: valid handle; `data` is readable for its length.
        let r = unsafe {
            (a.add_data)(
                g.1,
                kind.nvjitlink(),
                data.as_ptr().cast(),
                data.len(),
                cname.as_ptr(),
            )
        };
        if r != 0 {
            return Err(err(
                &format!("nvJitLinkAddData({name})"),
                r,
                &error_log(g.1),
            ));
        }
    }
    // SAFETY: valid handle.
    let r = unsafe { (a.complete)(g.1) };
    if r != 0 {
        return Err(err("nvJitLinkComplete", r, &error_log(g.1)));
    }
    let mut size = 0usize;
    // SAFETY: valid handle and out-pointer.
    let r = unsafe { (a.cubin_size)(g.1, &mut size) };
    if r != 0 || size == 0 {
        return Err(err("nvJitLinkGetLinkedCubinSize", r, "no output"));
    }
    let mut out = vec![0u8; size];
    // SAFETY: the buffer holds `size` bytes.
    let r = unsafe { (a.cubin)(g.1, out.as_mut_ptr().cast()) };
    if r != 0 {
        return Err(err("nvJitLinkGetLinkedCubin", r, ""));
    }
    Ok(out)
}
