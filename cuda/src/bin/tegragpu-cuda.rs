//! `tegragpu-cuda run <program> [args...]`: run a program written for CUDA on libtegragpu's
//! libcuda.so.1 (built next to this launcher) instead of NVIDIA's. It puts a directory holding
//! `libcuda.so.1` first on `LD_LIBRARY_PATH` and executes the program.
//!
//! `tegragpu-cuda lib-dir` prints that directory.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};

const USAGE: &str = "usage: tegragpu-cuda run <program> [args...]\n       tegragpu-cuda lib-dir";

/// The directory with `libcuda.so.1`: `$TEGRAGPU_CUDA_LIB` (a libcuda.so file) when set, else
/// the `libcuda.so` next to this executable. A directory `cuda-lib/` beside it holds the
/// `libcuda.so.1` link (made on first use).
fn lib_dir() -> Result<PathBuf, String> {
    let exe = std::env::current_exe().map_err(|e| format!("finding this executable: {e}"))?;
    let here = exe.parent().unwrap_or(Path::new(".")).to_path_buf();
    let lib = match std::env::var_os("TEGRAGPU_CUDA_LIB") {
        Some(p) if !p.is_empty() => PathBuf::from(p),
        _ => here.join("libcuda.so"),
    };
    if !lib.is_file() {
        return Err(format!(
            "{} does not exist: build it with `cargo build --release --workspace`, or set TEGRAGPU_CUDA_LIB to the libcuda.so to use",
            lib.display()
        ));
    }
    let lib = lib
        .canonicalize()
        .map_err(|e| format!("{}: {e}", lib.display()))?;
    let dir = lib.parent().unwrap_or(Path::new(".")).join("cuda-lib");
    let link = dir.join("libcuda.so.1");
    if std::fs::read_link(&link).ok().as_deref() != Some(lib.as_path()) {
        std::fs::create_dir_all(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
        let tmp = dir.join(format!(".libcuda.so.1.{}", std::process::id()));
        let _ = std::fs::remove_file(&tmp);
        std::os::unix::fs::symlink(&lib, &tmp)
            .map_err(|e| format!("linking {}: {e}", tmp.display()))?;
        std::fs::rename(&tmp, &link).map_err(|e| format!("renaming to {}: {e}", link.display()))?;
        let so = dir.join("libcuda.so");
        let _ = std::fs::remove_file(&so);
        let _ = std::os::unix::fs::symlink("libcuda.so.1", &so);
    }
    Ok(dir)
}

fn main() {
    let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    let fail = |msg: &str| -> ! {
        eprintln!("tegragpu-cuda: {msg}");
        std::process::exit(2)
    };
    match args.first().and_then(|a| a.to_str()) {
        Some("lib-dir") => match lib_dir() {
            Ok(d) => println!("{}", d.display()),
            Err(e) => fail(&e),
        },
        Some("run") => {
            let Some(prog) = args.get(1) else { fail(USAGE) };
            let dir = lib_dir().unwrap_or_else(|e| fail(&e));
            let mut path = dir.into_os_string();
            if let Some(old) = std::env::var_os("LD_LIBRARY_PATH").filter(|v| !v.is_empty()) {
                path.push(":");
                path.push(old);
            }
            let err = std::process::Command::new(prog)
                .args(&args[2..])
                .env("LD_LIBRARY_PATH", path)
                .exec();
            fail(&format!("running {}: {err}", Path::new(prog).display()))
        }
        Some("-h") | Some("--help") => println!("{USAGE}"),
        _ => fail(USAGE),
    }
}
