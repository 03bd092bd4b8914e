//! Build script: gives the shared library its soname, `libtegragpu.so.<major>`, so that programs
//! linked against it record the ABI version (meson installs libtegragpu.so.0 plus the
//! libtegragpu.so development link).

fn main() {
    let major = std::env::var("CARGO_PKG_VERSION_MAJOR").unwrap_or_else(|_| "0".to_string());
    let target_os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    if target_os == "linux" || target_os == "android" {
        // `rustc-link-arg` (this package's targets only; on its executables the soname is
        // inert): the cdylib forms also reach the link of every cdylib that depends on this
        // package (cuda/, whose soname is libcuda.so.1).
        println!("cargo:rustc-link-arg=-Wl,-soname,libtegragpu.so.{major}");
    }
    println!("cargo:rerun-if-changed=build.rs");
}
