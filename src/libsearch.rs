//! Where the optional run-time libraries are looked for: libnvrtc ([`crate::nvrtc`]) and the PTX
//! compilers ([`crate::ptxjit`]) share this search. Each module describes its libraries as a
//! list of [`Lib`]s; for each `Lib`, in order:
//!
//! 1. its file names through the dynamic loader (`LD_LIBRARY_PATH`, the program's run path,
//!    `ld.so.cache`);
//! 2. the same names in fixed system directories (the CUDA toolkit, the driver's directories);
//! 3. the directories where pip puts NVIDIA's wheels (`nvidia/cuda_nvrtc/lib`,
//!    `nvidia/cu13/lib`, `nvidia/nvjitlink/lib`, ...) under each Python package directory
//!    (`site-packages`, `dist-packages`) found by [`python_package_dirs`], in this order:
//!    - `$TEGRAGPU_PYTHON_SITE` ([`ENV_PYTHON_SITE`]): directories separated by `:`. The Python
//!      package (`python/tegragpu`) sets it, before it loads the library, to the running
//!      interpreter's `sys.prefix`, `site.getsitepackages()` and `site.getusersitepackages()`,
//!      so a venv's python started without activation finds its wheels; anyone may set it.
//!      Each entry is searched as a package directory when it holds `nvidia/`, and as a
//!      Python prefix (`<entry>/lib/python3*/{site,dist}-packages`);
//!    - `$VIRTUAL_ENV`, `$CONDA_PREFIX` (an activated environment);
//!    - the running program's prefix: when the program (`/proc/self/exe`, and `argv[0]` as it
//!      was given, since a venv's `bin/python` is a symlink out of the venv) lies in
//!      `<prefix>/bin` and `<prefix>` is a Python environment (it has `pyvenv.cfg` or
//!      `lib/python3*/site-packages`): an unactivated venv's or conda's python, or a program
//!      installed into such a prefix;
//!    - the Python environment beside this library: for the directory of the file that holds
//!      this code (libtegragpu.so, found with `dladdr` and with symlinks resolved; the program
//!      itself when it links the library statically) and its three parents, that directory when
//!      it is a Python environment, and its `venv`, `.venv` and `build/venv` that have a
//!      `pyvenv.cfg`. This covers a library installed into a venv or conda prefix, and a library
//!      built in the repository (`build/meson/`, `target/release/`) next to the venv that
//!      `scripts/env.sh` makes (`build/venv`): the C examples and the C quick start find that
//!      venv's libnvrtc from any directory;
//!    - `~/.local`, `~/.pyenv/versions/*`, `/usr/local`, `/usr`.
//!
//!    Only package directories that exist are searched, each once.
//!
//! A library that is not found gives an error listing every place tried ([`NotFound`]).

use std::ffi::{CStr, OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// Environment variable: Python prefixes and package directories to search (separated by `:`);
/// set by the Python package to the running interpreter's.
pub const ENV_PYTHON_SITE: &str = "TEGRAGPU_PYTHON_SITE";

/// One library: its file names, the system directories to look in and where pip's wheels put
/// it (relative to a package directory).
pub(crate) struct Lib {
    pub names: &'static [&'static str],
    pub dirs: &'static [&'static str],
    pub wheel_dirs: &'static [&'static str],
}

/// What the search depends on, gathered from the process by [`Inputs::current`] (tests build
/// their own).
#[derive(Debug, Default, Clone)]
pub(crate) struct Inputs {
    /// `$TEGRAGPU_PYTHON_SITE`.
    pub python_site: Option<OsString>,
    pub virtual_env: Option<PathBuf>,
    pub conda_prefix: Option<PathBuf>,
    /// The running program: `/proc/self/exe`, then `argv[0]` made absolute.
    pub executables: Vec<PathBuf>,
    /// The file holding this code (libtegragpu.so, or the program), symlinks resolved.
    pub library: Option<PathBuf>,
    pub home: Option<PathBuf>,
    /// `/usr/local`, `/usr`.
    pub system_prefixes: Vec<PathBuf>,
}

impl Inputs {
    /// The inputs of this process.
    pub fn current() -> Inputs {
        let var = |n: &str| std::env::var_os(n).filter(|v| !v.is_empty());
        let mut executables = Vec::new();
        if let Ok(p) = std::fs::read_link("/proc/self/exe") {
            executables.push(p);
        }
        executables.extend(argv0());
        Inputs {
            python_site: var(ENV_PYTHON_SITE),
            virtual_env: var("VIRTUAL_ENV").map(PathBuf::from),
            conda_prefix: var("CONDA_PREFIX").map(PathBuf::from),
            executables,
            library: this_object(),
            home: var("HOME").map(PathBuf::from),
            system_prefixes: vec![PathBuf::from("/usr/local"), PathBuf::from("/usr")],
        }
    }
}

/// `argv[0]` as an absolute path: joined to the working directory when it has a `/`, else
/// looked up in `$PATH` (as the shell found it). Symlinks are kept.
fn argv0() -> Option<PathBuf> {
    let a = PathBuf::from(std::env::args_os().next()?);
    if a.as_os_str().is_empty() {
        return None;
    }
    if a.as_os_str().as_bytes().contains(&b'/') {
        return Some(if a.is_absolute() {
            a
        } else {
            std::env::current_dir().ok()?.join(a)
        });
    }
    std::env::split_paths(&std::env::var_os("PATH")?)
        .filter(|d| d.is_absolute())
        .map(|d| d.join(&a))
        .find(|p| p.is_file())
}

/// The file holding this code (`dladdr`), symlinks resolved.
fn this_object() -> Option<PathBuf> {
    let f: fn() -> Option<PathBuf> = this_object;
    let mut info = std::mem::MaybeUninit::<libc::Dl_info>::zeroed();
    // SAFETY: dladdr reads nothing through the address; it fills `info` (zeroed, so valid).
    let r = unsafe { libc::dladdr(f as *const libc::c_void, info.as_mut_ptr()) };
    // SAFETY: zero-initialised and possibly filled in by dladdr: valid either way.
    let info = unsafe { info.assume_init() };
    if r == 0 || info.dli_fname.is_null() {
        return None;
    }
    // SAFETY: dladdr returned a NUL-terminated name owned by the loader.
    let name = unsafe { CStr::from_ptr(info.dli_fname) };
    std::fs::canonicalize(Path::new(OsStr::from_bytes(name.to_bytes()))).ok()
}

/// `<prefix>/lib/python3*/{site,dist}-packages` that exist, in name order.
fn package_dirs_of_prefix(prefix: &Path) -> Vec<PathBuf> {
    let Ok(rd) = std::fs::read_dir(prefix.join("lib")) else {
        return Vec::new();
    };
    let mut pys: Vec<PathBuf> = rd
        .flatten()
        .filter(|e| e.file_name().as_bytes().starts_with(b"python3"))
        .map(|e| e.path())
        .collect();
    pys.sort();
    pys.iter()
        .flat_map(|py| [py.join("site-packages"), py.join("dist-packages")])
        .filter(|d| d.is_dir())
        .collect()
}

/// A venv (`pyvenv.cfg`) or a prefix with `lib/python3*/site-packages` (conda, an installed
/// Python).
fn is_python_prefix(p: &Path) -> bool {
    p.join("pyvenv.cfg").is_file()
        || package_dirs_of_prefix(p)
            .iter()
            .any(|d| d.ends_with("site-packages"))
}

/// The Python package directories to search, in search order (see the module documentation);
/// each exists and appears once.
pub(crate) fn python_package_dirs(inp: &Inputs) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    let mut seen: Vec<PathBuf> = Vec::new();
    let mut add = |d: PathBuf| {
        if !d.is_dir() {
            return;
        }
        let key = std::fs::canonicalize(&d).unwrap_or_else(|_| d.clone());
        if !seen.contains(&key) {
            seen.push(key);
            out.push(d);
        }
    };
    if let Some(list) = &inp.python_site {
        for e in std::env::split_paths(list).filter(|e| !e.as_os_str().is_empty()) {
            if e.join("nvidia").is_dir() {
                add(e.clone());
            }
            package_dirs_of_prefix(&e).into_iter().for_each(&mut add);
        }
    }
    for p in inp.virtual_env.iter().chain(&inp.conda_prefix) {
        package_dirs_of_prefix(p).into_iter().for_each(&mut add);
    }
    for exe in &inp.executables {
        let Some(bin) = exe.parent() else { continue };
        if bin.file_name() != Some(OsStr::new("bin")) {
            continue;
        }
        if let Some(prefix) = bin.parent().filter(|p| is_python_prefix(p)) {
            package_dirs_of_prefix(prefix)
                .into_iter()
                .for_each(&mut add);
        }
    }
    if let Some(dir) = inp.library.as_deref().and_then(Path::parent) {
        for a in dir.ancestors().take(4) {
            if is_python_prefix(a) {
                package_dirs_of_prefix(a).into_iter().for_each(&mut add);
            }
            for v in ["venv", ".venv", "build/venv"] {
                let v = a.join(v);
                if v.join("pyvenv.cfg").is_file() {
                    package_dirs_of_prefix(&v).into_iter().for_each(&mut add);
                }
            }
        }
    }
    if let Some(home) = &inp.home {
        package_dirs_of_prefix(&home.join(".local"))
            .into_iter()
            .for_each(&mut add);
        if let Ok(rd) = std::fs::read_dir(home.join(".pyenv/versions")) {
            let mut v: Vec<PathBuf> = rd.flatten().map(|e| e.path()).collect();
            v.sort();
            for p in v {
                package_dirs_of_prefix(&p).into_iter().for_each(&mut add);
            }
        }
    }
    for p in &inp.system_prefixes {
        package_dirs_of_prefix(p).into_iter().for_each(&mut add);
    }
    out
}

/// The search for `libs` in `pkg_dirs` (usually [`python_package_dirs`] of
/// [`Inputs::current`]).
pub(crate) struct Search<'a> {
    pub libs: &'a [Lib],
    pub pkg_dirs: Vec<PathBuf>,
}

impl<'a> Search<'a> {
    /// The search for `libs` in this process.
    pub fn current(libs: &'a [Lib]) -> Search<'a> {
        Search {
            libs,
            pkg_dirs: python_package_dirs(&Inputs::current()),
        }
    }

    /// Every candidate, in search order: per `Lib`, its bare names (for the dynamic loader),
    /// then its names in its system directories, then in its wheel directories under each
    /// package directory.
    pub fn candidates(&self) -> Vec<PathBuf> {
        let mut c = Vec::new();
        for lib in self.libs {
            c.extend(lib.names.iter().map(PathBuf::from));
            for d in lib.dirs {
                c.extend(lib.names.iter().map(|n| Path::new(d).join(n)));
            }
            for p in &self.pkg_dirs {
                for w in lib.wheel_dirs {
                    c.extend(lib.names.iter().map(|n| p.join(w).join(n)));
                }
            }
        }
        c
    }

    /// Every place [`Search::candidates`] tries, in order, as one line: `a, b through the
    /// dynamic loader, then in /dir1, /dir2, then in nvidia/x/lib and nvidia/y/lib of the Python
    /// package directories /p1, /p2`, one such part per `Lib` (separated by `; `).
    pub fn places(&self) -> String {
        let list = |v: Vec<String>| v.join(", ");
        self.libs
            .iter()
            .map(|lib| {
                let mut s = format!("{} through the dynamic loader", lib.names.join(", "));
                if !lib.dirs.is_empty() {
                    s.push_str(", then in ");
                    s.push_str(&lib.dirs.join(", "));
                }
                if !lib.wheel_dirs.is_empty() {
                    s.push_str(", then in ");
                    s.push_str(&lib.wheel_dirs.join(" and "));
                    if self.pkg_dirs.is_empty() {
                        s.push_str(" of the Python package directories (none found)");
                    } else {
                        s.push_str(" of the Python package directories ");
                        s.push_str(&list(
                            self.pkg_dirs
                                .iter()
                                .map(|p| p.display().to_string())
                                .collect(),
                        ));
                    }
                }
                s
            })
            .collect::<Vec<_>>()
            .join("; ")
    }

    /// Opens the first candidate that loads: bare names through the dynamic loader, paths only
    /// when the file exists.
    pub fn first<T>(
        &self,
        mut open: impl FnMut(&Path) -> Result<T, String>,
    ) -> Result<T, NotFound> {
        let mut failures = Vec::new();
        for c in self.candidates() {
            let bare = is_bare(&c);
            if !bare && !c.exists() {
                continue;
            }
            match open(&c) {
                Ok(t) => return Ok(t),
                // A bare name the loader does not find is the usual case, not worth a line.
                Err(_) if bare => {}
                Err(e) => failures.push(format!("{} ({e})", c.display())),
            }
        }
        Err(NotFound {
            places: self.places(),
            failures,
        })
    }
}

/// A name without a directory, which goes to the dynamic loader.
fn is_bare(p: &Path) -> bool {
    !p.as_os_str().as_bytes().contains(&b'/')
}

/// Why no candidate could be used: every place tried ([`Search::places`]), and the files that
/// exist but did not load (with why).
#[derive(Debug)]
pub(crate) struct NotFound {
    pub places: String,
    pub failures: Vec<String>,
}

impl NotFound {
    /// `Tried: <places>[. Found but not loadable: <failures>]`.
    pub fn describe(&self) -> String {
        let mut s = format!("Tried: {}", self.places);
        if !self.failures.is_empty() {
            s.push_str(". Found but not loadable: ");
            s.push_str(&self.failures.join("; "));
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NVRTC: Lib = Lib {
        names: &["libnvrtc.so.13", "libnvrtc.so.12"],
        dirs: &["/usr/local/cuda/lib64"],
        wheel_dirs: &["nvidia/cuda_nvrtc/lib", "nvidia/cu13/lib"],
    };

    /// A fresh directory under the system's temporary directory, removed on drop.
    struct Tmp(PathBuf);
    impl Tmp {
        fn new(tag: &str) -> Tmp {
            use std::sync::atomic::{AtomicU32, Ordering};
            static N: AtomicU32 = AtomicU32::new(0);
            let d = std::env::temp_dir().join(format!(
                "tegragpu-libsearch-{tag}-{}-{}",
                std::process::id(),
                N.fetch_add(1, Ordering::Relaxed)
            ));
            let _ = std::fs::remove_dir_all(&d);
            std::fs::create_dir_all(&d).unwrap();
            Tmp(d)
        }
        /// Creates `rel` (an empty file; parents made) and returns its path.
        fn file(&self, rel: &str) -> PathBuf {
            let p = self.0.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, b"").unwrap();
            p
        }
    }
    impl Drop for Tmp {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    /// A venv-like prefix with nvrtc 13 in `cuda_nvrtc/lib`: returns the library's path.
    fn fake_venv(t: &Tmp, prefix: &str) -> PathBuf {
        t.file(&format!("{prefix}/pyvenv.cfg"));
        t.file(&format!("{prefix}/bin/python"));
        t.file(&format!(
            "{prefix}/lib/python3.12/site-packages/nvidia/cuda_nvrtc/lib/libnvrtc.so.13"
        ))
    }

    fn search(inp: &Inputs) -> Search<'static> {
        Search {
            libs: &[NVRTC],
            pkg_dirs: python_package_dirs(inp),
        }
    }

    fn only(inp: Inputs) -> Vec<PathBuf> {
        search(&inp).candidates()
    }

    #[test]
    fn the_running_programs_prefix_is_searched() {
        let t = Tmp::new("exe");
        let lib = fake_venv(&t, "venv");
        let inp = Inputs {
            executables: vec![t.0.join("venv/bin/python")],
            ..Inputs::default()
        };
        assert!(only(inp).contains(&lib));
        // Not in a `bin` directory, or no Python environment there: not searched.
        for exe in ["venv/python", "venv/lib/python"] {
            let inp = Inputs {
                executables: vec![t.0.join(exe)],
                ..Inputs::default()
            };
            assert!(!only(inp).contains(&lib), "{exe}");
        }
        // A conda-like prefix (no pyvenv.cfg, but lib/python3.X/site-packages).
        let conda = t.file("conda/lib/python3.11/site-packages/nvidia/cu13/lib/libnvrtc.so.13");
        let inp = Inputs {
            executables: vec![t.0.join("conda/bin/python3.11")],
            ..Inputs::default()
        };
        assert!(only(inp).contains(&conda));
    }

    #[test]
    fn python_site_entries_are_prefixes_or_package_dirs() {
        let t = Tmp::new("site");
        let a = fake_venv(&t, "a");
        let b = t.file("b/site/nvidia/cu13/lib/libnvrtc.so.12");
        let list = std::env::join_paths([t.0.join("a"), t.0.join("b/site"), t.0.join("none")]);
        let inp = Inputs {
            python_site: Some(list.unwrap()),
            ..Inputs::default()
        };
        let c = only(inp);
        assert!(c.contains(&a) && c.contains(&b), "{c:#?}");
        let (ia, ib) = (
            c.iter().position(|p| p == &a).unwrap(),
            c.iter().position(|p| p == &b).unwrap(),
        );
        assert!(ia < ib, "in the order given");
    }

    #[test]
    fn the_venv_beside_the_library_is_searched() {
        let t = Tmp::new("lib");
        let lib = fake_venv(&t, "repo/build/venv");
        for so in [
            "repo/build/meson/libtegragpu.so",
            "repo/target/release/libtegragpu.so",
            "repo/target/release/deps/kernels-0123",
        ] {
            let inp = Inputs {
                library: Some(t.file(so)),
                ..Inputs::default()
            };
            assert!(only(inp).contains(&lib), "{so}");
        }
        // Installed into a prefix: <prefix>/lib/x86_64-linux-gnu/libtegragpu.so.0.
        let conda = t.file("env/lib/python3.13/site-packages/nvidia/cu13/lib/libnvrtc.so.13");
        let inp = Inputs {
            library: Some(t.file("env/lib/x86_64-linux-gnu/libtegragpu.so.0")),
            ..Inputs::default()
        };
        assert!(only(inp).contains(&conda));
        // Too far away: five levels under the directory holding the venv.
        let inp = Inputs {
            library: Some(t.file("repo/a/b/c/d/libtegragpu.so")),
            ..Inputs::default()
        };
        assert!(!only(inp).contains(&lib));
    }

    #[test]
    fn each_package_dir_once_in_order() {
        let t = Tmp::new("order");
        let venv = fake_venv(&t, "v");
        let local = t.file("home/.local/lib/python3.10/site-packages/nvidia/cu13/lib/x");
        let inp = Inputs {
            virtual_env: Some(t.0.join("v")),
            executables: vec![t.0.join("v/bin/python"), t.0.join("v/bin/python")],
            library: Some(t.file("v/lib/libtegragpu.so")),
            python_site: Some(t.0.join("v").into_os_string()),
            home: Some(t.0.join("home")),
            ..Inputs::default()
        };
        let dirs = python_package_dirs(&inp);
        let site = venv.ancestors().nth(4).unwrap().to_path_buf();
        let home_site = local.ancestors().nth(4).unwrap().to_path_buf();
        assert_eq!(dirs, vec![site, home_site]);
    }

    #[test]
    fn not_found_lists_every_place() {
        let t = Tmp::new("missing");
        t.file("v/pyvenv.cfg");
        std::fs::create_dir_all(t.0.join("v/lib/python3.12/site-packages")).unwrap();
        // An empty file is found but does not load.
        let bad = t.file("w/lib/python3.12/site-packages/nvidia/cu13/lib/libnvrtc.so.12");
        let inp = Inputs {
            virtual_env: Some(t.0.join("v")),
            conda_prefix: Some(t.0.join("w")),
            ..Inputs::default()
        };
        let s = search(&inp);
        let e = s
            .first(|p| -> Result<(), String> { Err(format!("cannot open {}", p.display())) })
            .unwrap_err();
        let site = |p: &str| t.0.join(p).join("lib/python3.12/site-packages");
        assert_eq!(
            e.describe(),
            format!(
                "Tried: libnvrtc.so.13, libnvrtc.so.12 through the dynamic loader, then in \
                 /usr/local/cuda/lib64, then in nvidia/cuda_nvrtc/lib and nvidia/cu13/lib of the \
                 Python package directories {}, {}. Found but not loadable: {2} (cannot open {2})",
                site("v").display(),
                site("w").display(),
                bad.display()
            )
        );
        // Every candidate is named: its file name, and its directory (or its package directory
        // and wheel directory).
        let msg = e.describe();
        for c in s.candidates() {
            let name = c.file_name().unwrap().to_string_lossy().into_owned();
            let dir = c.parent().unwrap();
            let named = msg.contains(&*dir.to_string_lossy())
                || s.pkg_dirs.iter().any(|p| {
                    dir.strip_prefix(p).is_ok_and(|w| {
                        msg.contains(&*p.to_string_lossy()) && msg.contains(&*w.to_string_lossy())
                    })
                });
            assert!(msg.contains(&name) && named, "{}", c.display());
        }
        // No package directory: said so.
        let none = Search {
            libs: &[NVRTC],
            pkg_dirs: Vec::new(),
        };
        assert!(
            none.places()
                .ends_with("nvidia/cu13/lib of the Python package directories (none found)"),
            "{}",
            none.places()
        );
    }

    #[test]
    fn first_skips_absent_files_and_takes_the_first_that_loads() {
        let t = Tmp::new("first");
        t.file("a/nvidia/cuda_nvrtc/lib/libnvrtc.so.13");
        let b = t.file("b/nvidia/cuda_nvrtc/lib/libnvrtc.so.13");
        let s = Search {
            libs: &[NVRTC],
            pkg_dirs: vec![t.0.join("none"), t.0.join("a"), t.0.join("b")],
        };
        let mut opened = Vec::new();
        let got = s
            .first(|p| {
                opened.push(p.to_path_buf());
                if is_bare(p) || p.starts_with(t.0.join("a")) {
                    Err("no".to_string())
                } else {
                    Ok(p.to_path_buf())
                }
            })
            .unwrap();
        assert_eq!(got, b);
        // Bare names, then only files that exist (none under /usr/local/cuda here, presumably).
        assert_eq!(
            opened[..2],
            [
                PathBuf::from("libnvrtc.so.13"),
                PathBuf::from("libnvrtc.so.12")
            ]
        );
        assert!(opened[2..].iter().all(|p| p.exists()), "{opened:?}");
    }

    #[test]
    fn this_process_has_a_program_and_a_library_file() {
        let inp = Inputs::current();
        assert!(!inp.executables.is_empty());
        let lib = inp
            .library
            .expect("dladdr names the file holding this code");
        assert!(lib.is_file(), "{}", lib.display());
    }
}
