//! The probes' command lines: `tegragpu-rmprobe --help` prints its usage instead of running the
//! probe, `--version` prints the library's version, unknown arguments are refused. (The
//! product binaries, tegragpu-info and tegragpu-bench, are tested in the library's
//! tests/abi.rs.)

use std::process::{Command, Output};

const RMPROBE: &str = env!("CARGO_BIN_EXE_tegragpu-rmprobe");

fn run(args: &[&str]) -> Output {
    Command::new(RMPROBE)
        .args(args)
        .output()
        .expect("run tegragpu-rmprobe")
}

#[test]
fn rmprobe_help_does_not_run_the_probe() {
    for flag in ["--help", "-h"] {
        let o = run(&[flag]);
        assert_eq!(o.status.code(), Some(0), "{flag}");
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(out.starts_with("usage: tegragpu-rmprobe"), "{flag}: {out}");
        assert!(out.contains("--fault"), "{flag}: {out}");
        assert!(out.contains("--version"), "{flag}: {out}");
        assert!(!out.contains("start:"), "{flag}: the probe ran: {out}");
    }
}

#[test]
fn rmprobe_version_is_the_library_version() {
    use tegragpu::capi::{TG_VERSION_MAJOR, TG_VERSION_MINOR, TG_VERSION_PATCH};
    let want =
        format!("tegragpu-rmprobe {TG_VERSION_MAJOR}.{TG_VERSION_MINOR}.{TG_VERSION_PATCH}\n");
    for flag in ["--version", "-V"] {
        let o = run(&[flag]);
        assert_eq!(o.status.code(), Some(0), "{flag}");
        assert_eq!(String::from_utf8_lossy(&o.stdout), want, "{flag}");
    }
}

#[test]
fn rmprobe_refuses_unknown_arguments() {
    for args in [
        &["--bogus"][..],
        &["extra"],
        &["--fault=1"],
        &["--fault", "-x"],
    ] {
        let o = run(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("unexpected argument"), "{args:?}: {err}");
        assert!(o.stdout.is_empty(), "{args:?}: the probe ran");
    }
}
