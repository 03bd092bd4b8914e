//! Optional run-time compilation of CUDA C through libnvrtc, loaded with libloading.
//!
//! libnvrtc is never linked: it is opened on first use. Search order:
//! 1. `$TEGRAGPU_NVRTC` (a path to the library). When set, nothing else is tried.
//! 2. `libnvrtc.so`, `libnvrtc.so.13`, `libnvrtc.so.12` through the dynamic loader's own search
//!    (`LD_LIBRARY_PATH`, `ld.so.cache`).
//! 3. CUDA toolkit directories (`/usr/local/cuda/lib64`, `/usr/local/cuda/targets/*/lib`,
//!    `/usr/lib/aarch64-linux-gnu`, `/usr/lib/x86_64-linux-gnu`).
//! 4. pip wheels (`nvidia-cuda-nvrtc-cu12` → `nvidia/cuda_nvrtc/lib/libnvrtc.so.12`,
//!    `nvidia-cuda-nvrtc` 13 → `nvidia/cu13/lib/libnvrtc.so.13`) in the Python package
//!    directories of `$TEGRAGPU_PYTHON_SITE` (set by the Python package to the running
//!    interpreter's), `$VIRTUAL_ENV`, `$CONDA_PREFIX`, the running program's prefix (an
//!    unactivated venv's python), the venv beside libtegragpu.so (`build/venv` of the
//!    repository), `~/.local`, `~/.pyenv/versions/*`, `/usr/local` and `/usr`: the search of
//!    `src/libsearch.rs`, shared with the PTX compilers.
//!
//! When nothing loads, the error lists every place tried.
//!
//! The library found first is kept for the life of the process.
//!
//! Reproducibility: the same source, options and nvrtc build give identical cubins. The committed
//! test fixtures were built with `nvidia-cuda-nvrtc-cu12==12.9.86` (see
//! `tests/fixtures/cubin/README.md`).

use crate::error::{Error, Result, Status};
use crate::libsearch::{self, Lib};
use crate::os::lock::ForkMutex as Mutex;
use libloading::Library;
use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Environment variable naming the libnvrtc file to use.
pub const ENV_NVRTC: &str = "TEGRAGPU_NVRTC";

const INSTALL_HINT: &str =
    "install it with `pip install nvidia-cuda-nvrtc-cu12` (or the CUDA toolkit), \
                            or set TEGRAGPU_NVRTC=/path/to/libnvrtc.so.12";

type NvrtcResult = c_int;
type Program = *mut c_void;

type FnVersion = unsafe extern "C" fn(*mut c_int, *mut c_int) -> NvrtcResult;
type FnGetErrorString = unsafe extern "C" fn(NvrtcResult) -> *const c_char;
type FnCreateProgram = unsafe extern "C" fn(
    *mut Program,
    *const c_char,
    *const c_char,
    c_int,
    *const *const c_char,
    *const *const c_char,
) -> NvrtcResult;
type FnDestroyProgram = unsafe extern "C" fn(*mut Program) -> NvrtcResult;
type FnCompileProgram = unsafe extern "C" fn(Program, c_int, *const *const c_char) -> NvrtcResult;
type FnGetSize = unsafe extern "C" fn(Program, *mut usize) -> NvrtcResult;
type FnGetBytes = unsafe extern "C" fn(Program, *mut c_char) -> NvrtcResult;

/// An opened libnvrtc and the entry points we use.
struct Nvrtc {
    path: PathBuf,
    version: FnVersion,
    get_error_string: FnGetErrorString,
    create_program: FnCreateProgram,
    destroy_program: FnDestroyProgram,
    compile_program: FnCompileProgram,
    get_program_log_size: FnGetSize,
    get_program_log: FnGetBytes,
    get_cubin_size: FnGetSize,
    get_cubin: FnGetBytes,
    /// Keeps the function pointers above valid; never unloaded while `Nvrtc` lives.
    _lib: Library,
}

static LOADED: Mutex<Option<Arc<Nvrtc>>> = Mutex::new(None);

/// `LOADED`, held across `fork()` (see `crate::os::fork`).
pub(crate) static FORK_LOCK: crate::os::fork::ForkLock = crate::os::fork::ForkLock {
    order: 1,
    lock: || std::mem::forget(LOADED.lock()),
    // SAFETY (of the call): the caller took the lock with `lock` and forgot its guard.
    unlock: || unsafe { LOADED.force_unlock() },
};

/// Loads `path` and resolves every entry point, or describes why not.
fn open(path: &Path) -> std::result::Result<Nvrtc, String> {
    // SAFETY: loading libnvrtc runs its initialisers, which have no preconditions.
    let lib = unsafe { Library::new(path) }.map_err(|e| e.to_string())?;
    macro_rules! sym {
        ($name:literal, $ty:ty) => {{
            // SAFETY: the type matches the declaration in nvrtc.h.
            let s = unsafe { lib.get::<$ty>(concat!($name, "\0").as_bytes()) };
            *s.map_err(|e| format!("{}: {e}", $name))?
        }};
    }
    Ok(Nvrtc {
        path: path.to_path_buf(),
        version: sym!("nvrtcVersion", FnVersion),
        get_error_string: sym!("nvrtcGetErrorString", FnGetErrorString),
        create_program: sym!("nvrtcCreateProgram", FnCreateProgram),
        destroy_program: sym!("nvrtcDestroyProgram", FnDestroyProgram),
        compile_program: sym!("nvrtcCompileProgram", FnCompileProgram),
        get_program_log_size: sym!("nvrtcGetProgramLogSize", FnGetSize),
        get_program_log: sym!("nvrtcGetProgramLog", FnGetBytes),
        get_cubin_size: sym!("nvrtcGetCUBINSize", FnGetSize),
        get_cubin: sym!("nvrtcGetCUBIN", FnGetBytes),
        _lib: lib,
    })
}

/// Where libnvrtc is looked for after `$TEGRAGPU_NVRTC` (see `src/libsearch.rs`).
const LIBS: [Lib; 1] = [Lib {
    names: &["libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12"],
    dirs: &[
        "/usr/local/cuda/lib64",
        "/usr/local/cuda/targets/aarch64-linux/lib",
        "/usr/local/cuda/targets/sbsa-linux/lib",
        "/usr/local/cuda/targets/x86_64-linux/lib",
        "/usr/lib/aarch64-linux-gnu",
        "/usr/lib/x86_64-linux-gnu",
    ],
    // nvidia-cuda-nvrtc-cu12: cuda_nvrtc/lib/libnvrtc.so.12; nvidia-cuda-nvrtc (13):
    // cu13/lib/libnvrtc.so.13.
    wheel_dirs: &["nvidia/cuda_nvrtc/lib", "nvidia/cu13/lib"],
}];

fn load() -> Result<Arc<Nvrtc>> {
    crate::os::fork::register(&FORK_LOCK);
    let mut guard = LOADED.lock();
    if let Some(n) = guard.as_ref() {
        return Ok(n.clone());
    }
    if let Some(p) = std::env::var_os(ENV_NVRTC).filter(|v| !v.is_empty()) {
        let p = PathBuf::from(p);
        let n = Arc::new(open(&p).map_err(|e| {
            Error::new(
                Status::LibraryMissing,
                format!(
                    "libnvrtc: {ENV_NVRTC}={} cannot be loaded: {e}; unset {ENV_NVRTC} to search the \
                     default places, or {INSTALL_HINT}",
                    p.display()
                ),
            )
        })?);
        *guard = Some(n.clone());
        return Ok(n);
    }
    match libsearch::Search::current(&LIBS).first(open) {
        Ok(n) => {
            let n = Arc::new(n);
            *guard = Some(n.clone());
            Ok(n)
        }
        Err(e) => Err(Error::new(
            Status::LibraryMissing,
            format!("libnvrtc not found; {INSTALL_HINT}. {}", e.describe()),
        )),
    }
}

impl Nvrtc {
    fn err_str(&self, r: NvrtcResult) -> String {
        // SAFETY: nvrtcGetErrorString returns a static NUL-terminated string (or NULL).
        let p = unsafe { (self.get_error_string)(r) };
        if p.is_null() {
            format!("nvrtcResult {r}")
        } else {
            // SAFETY: non-NULL, NUL-terminated, static.
            format!("{} ({r})", unsafe { CStr::from_ptr(p) }.to_string_lossy())
        }
    }

    fn check(&self, r: NvrtcResult, call: &str) -> Result<()> {
        if r == 0 {
            Ok(())
        } else {
            Err(Error::new(
                Status::CompileError,
                format!("{call} failed: {}", self.err_str(r)),
            ))
        }
    }
}

/// Owns an `nvrtcProgram`; destroys it on drop.
struct ProgramGuard<'a> {
    nv: &'a Nvrtc,
    prog: Program,
}

impl Drop for ProgramGuard<'_> {
    fn drop(&mut self) {
        // SAFETY: `prog` came from nvrtcCreateProgram and is destroyed once.
        unsafe { (self.nv.destroy_program)(&mut self.prog) };
    }
}

/// The path of the libnvrtc in use (loading it if needed).
pub fn library_path() -> Result<PathBuf> {
    Ok(load()?.path.clone())
}

/// `nvrtcVersion()`: the (major, minor) CUDA version of the libnvrtc in use.
pub fn version() -> Result<(i32, i32)> {
    let nv = load()?;
    let (mut major, mut minor) = (0, 0);
    // SAFETY: two valid out-pointers.
    let r = unsafe { (nv.version)(&mut major, &mut minor) };
    nv.check(r, "nvrtcVersion")?;
    Ok((major, minor))
}

/// Compile CUDA C `source` (program name `name`, used in diagnostics) to a cubin for SM
/// `sm = (major, minor)`. The options passed to nvrtc are `--gpu-architecture=sm_<major><minor>`
/// followed by `options` (which must not choose the architecture themselves).
///
/// Errors: [`Status::LibraryMissing`] when libnvrtc cannot be found (the message lists every
/// place searched); [`Status::CompileError`] with the full program log when compilation fails;
/// [`Status::InvalidArgument`] for NUL bytes in the inputs or an architecture option.
pub fn compile(source: &str, name: &str, sm: (u32, u32), options: &[&str]) -> Result<Vec<u8>> {
    if sm.1 > 9 || sm.0 == 0 || sm.0 > 99 {
        return Err(Error::invalid(format!(
            "nvrtc compile: SM version ({}, {}) is not valid",
            sm.0, sm.1
        )));
    }
    if let Some(o) = options.iter().find(|o| {
        o.starts_with("--gpu-architecture") || o.starts_with("-arch") || o.starts_with("--gpu-name")
    }) {
        return Err(Error::invalid(format!(
            "nvrtc compile: option {o:?} chooses the architecture; it is set from sm=({}, {})",
            sm.0, sm.1
        )));
    }
    let nul = |what: &str| Error::invalid(format!("nvrtc compile: {what} contains a NUL byte"));
    let c_src = CString::new(source).map_err(|_| nul("source"))?;
    let c_name = CString::new(name).map_err(|_| nul("program name"))?;
    let mut all: Vec<CString> =
        vec![
            CString::new(format!("--gpu-architecture=sm_{}{}", sm.0, sm.1))
                .map_err(|_| nul("architecture option"))?,
        ];
    for o in options {
        all.push(CString::new(*o).map_err(|_| nul(&format!("option {o:?}")))?);
    }
    let ptrs: Vec<*const c_char> = all.iter().map(|c| c.as_ptr()).collect();
    let n_opts = c_int::try_from(ptrs.len())
        .map_err(|_| Error::invalid("nvrtc compile: too many options"))?;

    let nv = load()?;
    let mut prog: Program = std::ptr::null_mut();
    // SAFETY: valid out-pointer and NUL-terminated strings; no headers.
    let r = unsafe {
        (nv.create_program)(
            &mut prog,
            c_src.as_ptr(),
            c_name.as_ptr(),
            0,
            std::ptr::null(),
            std::ptr::null(),
        )
    };
    nv.check(r, &format!("nvrtcCreateProgram({name})"))?;
    let guard = ProgramGuard { nv: &nv, prog };
    // SAFETY: `ptrs` holds `n_opts` valid C strings that outlive the call.
    let rc = unsafe { (nv.compile_program)(guard.prog, n_opts, ptrs.as_ptr()) };

    let mut log_size = 0usize;
    // SAFETY: valid program and out-pointer.
    let r = unsafe { (nv.get_program_log_size)(guard.prog, &mut log_size) };
    nv.check(r, "nvrtcGetProgramLogSize")?;
    let mut log = vec![0u8; log_size.max(1)];
    // SAFETY: the buffer holds log_size bytes (including the NUL).
    let r = unsafe { (nv.get_program_log)(guard.prog, log.as_mut_ptr().cast()) };
    nv.check(r, "nvrtcGetProgramLog")?;
    let log_end = log.iter().position(|&c| c == 0).unwrap_or(log.len());
    let log = String::from_utf8_lossy(&log[..log_end]).into_owned();

    let opts_text: Vec<String> = all
        .iter()
        .map(|c| c.to_string_lossy().into_owned())
        .collect();
    if rc != 0 {
        return Err(Error::new(
            Status::CompileError,
            format!(
                "nvrtcCompileProgram({name}, {}) failed: {}\n{log}",
                opts_text.join(" "),
                nv.err_str(rc)
            ),
        ));
    }
    let mut size = 0usize;
    // SAFETY: valid program and out-pointer.
    let r = unsafe { (nv.get_cubin_size)(guard.prog, &mut size) };
    nv.check(r, "nvrtcGetCUBINSize")?;
    if size == 0 {
        return Err(Error::new(
            Status::CompileError,
            format!(
                "nvrtc produced no cubin for {name} ({}); log:\n{log}",
                opts_text.join(" ")
            ),
        ));
    }
    let mut cubin = vec![0u8; size];
    // SAFETY: the buffer holds `size` bytes.
    let r = unsafe { (nv.get_cubin)(guard.prog, cubin.as_mut_ptr().cast()) };
    nv.check(r, "nvrtcGetCUBIN")?;
    Ok(cubin)
}
