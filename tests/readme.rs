//! Every code block of README.md is extracted and run (on the emulated Orin) by
//! `scripts/readme-check.py`, against the shared library this `cargo test` built: the C and
//! Python quick starts are compiled and run, entry-point commands are syntax-checked, and a block
//! the checker cannot handle fails. See the script's help for how each kind of block is treated.
//!
//! Run the checker by hand: `python3 scripts/readme-check.py [--lib target/release/libtegragpu.so]`.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    common::repo_root()
}

/// The cdylib cargo built with this test binary: `<target>/<profile>/libtegragpu.so`, beside the
/// `deps/` directory the test runs from (so `CARGO_TARGET_DIR` and the profile are followed).
fn cdylib() -> PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    let deps = exe.parent().expect("test binary has a directory");
    let candidates = [
        deps.parent().map(|p| p.join("libtegragpu.so")),
        Some(deps.join("libtegragpu.so")),
    ];
    candidates
        .into_iter()
        .flatten()
        .find(|p| p.is_file())
        .unwrap_or_else(|| {
            panic!(
                "libtegragpu.so not found beside {} (cargo builds the cdylib with the tests; \
                 run `cargo build --release --lib`)",
                deps.display()
            )
        })
}

#[test]
fn readme_code_blocks_run() {
    let lib = cdylib();
    let script: &Path = &root().join("scripts/readme-check.py");
    let out = Command::new("python3")
        .arg(script)
        .arg("--lib")
        .arg(&lib)
        .arg(root().join("README.md"))
        .current_dir(root())
        .output()
        .expect("python3 runs scripts/readme-check.py");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    println!("{text}");
    assert!(
        out.status.success(),
        "a README.md code block failed ({}); see the output above, or run \
         `python3 scripts/readme-check.py --lib {}`",
        out.status,
        lib.display()
    );
    assert!(
        text.contains(" passed, 0 failed,"),
        "readme-check printed no summary:\n{text}"
    );
}
