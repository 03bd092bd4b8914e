//! `tegragpu-info --selftest`: the report a Jetson owner attaches to a bug report.

use std::process::Command;

fn kernels() -> &'static [u8] {
    include_bytes!("fixtures/cubin/kernels.sm_87.cubin")
}

#[test]
fn selftest_passes_on_the_emulated_orin_and_writes_its_report() {
    let dir = std::env::temp_dir().join(format!("tg-selftest-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let report = dir.join("report.txt");
    let out = Command::new(env!("CARGO_BIN_EXE_tegragpu-info"))
        .args(["--selftest", "--report"])
        .arg(&report)
        .arg("emu")
        .env_remove("TEGRAGPU_LOG")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&report).unwrap();
    for want in [
        "L4T release",
        "kernel ",
        "device             ga10b (sm_87",
        "ioctl NVGPU_GPU_IOCTL_GET_CHARACTERISTICS",
        "ioctl NVGPU_TSG_IOCTL_CREATE_SUBCONTEXT",
        "-> ok,",
        "PASS kernel_vector_add_1000003",
        "PASS fault_reported_then_reopen",
        "selftest: 12 passed, 0 failed, 0 skipped",
    ] {
        assert!(text.contains(want), "report lacks {want:?}:\n{text}");
    }
    assert!(stdout.contains("selftest: 12 passed"), "{stdout}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_failing_check_fails_the_selftest() {
    // Kernels for the wrong SM: the module cannot load, every kernel check fails, and the tool's
    // exit status says so.
    let wrong: &dyn Fn(u32, u32) -> Option<&'static [u8]> =
        &|_, _| Some(include_bytes!("fixtures/cubin/kernels.sm_90.cubin"));
    let r = tegragpu::selftest::run(Some("emu"), wrong);
    let text = r.to_text();
    assert!(text.contains("FAIL module_load"), "{text}");
    assert!(r.failed() >= 1, "{text}");
    // No kernels for this SM at all: kernel checks are skipped, not passed.
    let none: &dyn Fn(u32, u32) -> Option<&'static [u8]> = &|_, _| None;
    let r = tegragpu::selftest::run(Some("emu"), none);
    let text = r.to_text();
    assert!(text.contains("SKIP kernel_fill"), "{text}");
    assert_eq!(r.failed(), 0, "{text}");
    assert!(r.skipped() >= 4, "{text}");
    // The right kernels: everything passes in-process too.
    let right: &dyn Fn(u32, u32) -> Option<&'static [u8]> = &|_, _| Some(kernels());
    let r = tegragpu::selftest::run(Some("emu"), right);
    assert_eq!((r.failed(), r.skipped()), (0, 0), "{}", r.to_text());
}

#[test]
fn selftest_on_a_device_that_cannot_open_reports_it() {
    let r = tegragpu::selftest::run(Some("no-such-device"), &|_, _| None);
    assert!(
        r.open_error
            .as_deref()
            .unwrap_or("")
            .contains("unknown device spec"),
        "{:?}",
        r.open_error
    );
    assert_eq!(r.failed(), 1);
    assert!(r.to_text().contains("opening the device FAILED"));
    let out = Command::new(env!("CARGO_BIN_EXE_tegragpu-info"))
        .args(["--selftest", "--report"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(2),
        "--report without a file name is a usage error"
    );
}
