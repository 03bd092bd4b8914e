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
        // The queue and channel checks, with what they observed.
        "PASS queue_create_destroy_during_long_kernel",
        "create a compute queue meanwhile: ok in",
        "the long kernel and its fill: ok at +",
        "PASS queue_limit",
        "128 queues made in",
        "queue 129: refused in",
        "with TG_ERROR_OUT_OF_MEMORY (tg_queue_create: the device has 128 queues",
        "destroy one (",
        "PASS long_kernel_with_other_process",
        "--selftest-competitor 5000 emu",
        "competing context on this device: the emulator's hook",
        "the long kernel: completed at +",
        "context-switch timeout budget its channel used:",
        "first error: none; exit status: 0",
        "PASS fault_on_one_queue",
        "queue B (waiting on the GPU): channel error code 31",
        "queue C (idle copy queue): channel error code 31",
        "3 of 3 queues saw a channel error",
        "B's release did not run",
        "C, a new copy after the fault: refused at copy: TG_ERROR_DEVICE_FAULT",
        "the device must be reopened: yes",
        "reopened the device: a kernel and a copy ran correctly",
        "selftest: 16 passed, 0 failed, 0 skipped",
    ] {
        assert!(text.contains(want), "report lacks {want:?}:\n{text}");
    }
    assert!(stdout.contains("selftest: 16 passed"), "{stdout}");
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
    // What the queue checks observed is in their results, line by line.
    let observed = |name: &str| -> Vec<String> {
        let c = r.checks.iter().find(|c| c.name == name);
        c.unwrap_or_else(|| panic!("no check {name}"))
            .observed
            .clone()
    };
    let has = |name: &str, want: &str| {
        let o = observed(name);
        assert!(
            o.iter().any(|l| l.contains(want)),
            "{name} lacks {want:?}: {o:#?}"
        );
    };
    has(
        "queue_create_destroy_during_long_kernel",
        "the long kernel is running",
    );
    has(
        "queue_create_destroy_during_long_kernel",
        "destroy an idle compute queue meanwhile",
    );
    has("queue_limit", "queue 129: refused");
    // Without a competing-process command, a thread with a device of its own competes.
    has("long_kernel_with_other_process", "a thread of this process");
    has("long_kernel_with_other_process", "kernels in 5000 ms");
    has("long_kernel_with_other_process", "first error: none");
    // On the emulated Orin (CILP off for this check), the competing context charges the
    // long kernel's context-switch timeout budget.
    let budget = observed("long_kernel_with_other_process")
        .iter()
        .find_map(|l| {
            l.strip_prefix("context-switch timeout budget its channel used: ")
                .and_then(|r| r.split(' ').next())
                .and_then(|n| n.parse::<u32>().ok())
        })
        .expect("the budget line");
    assert!(
        budget > 0,
        "no budget charged while another context competed"
    );
    has("fault_on_one_queue", "3 of 3 queues saw a channel error");
    // The checks' observations print under them in the text.
    let text = r.to_text();
    for name in ["queue_limit", "fault_on_one_queue"] {
        for l in observed(name) {
            assert!(
                text.contains(&format!("         - {l}\n")),
                "{l:?} not in:\n{text}"
            );
        }
    }
}

/// The driver's own 3,000-ms context-switch timeout limit (instead of the library's): the
/// emulated Orin stops the 4-s kernel while another context competes, and the check fails,
/// saying what it saw and that a reopened device works.
#[test]
fn a_long_kernel_stopped_by_the_ctxsw_timeout_fails_its_check() {
    let dir = std::env::temp_dir().join(format!("tg-selftest-ctxsw-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let report = dir.join("report.txt");
    let out = Command::new(env!("CARGO_BIN_EXE_tegragpu-info"))
        .args(["--selftest", "--report"])
        .arg(&report)
        .arg("emu")
        .env_remove("TEGRAGPU_LOG")
        .env("TEGRAGPU_NVGPU_CTXSW_TIMEOUT_MS", "3000")
        // 100 ms of driver time per 10 ms: the 3,000 ms budget lasts about 0.3 s of the 4 s.
        .env("TEGRAGPU_EMU_TIME_DIVISOR", "10")
        .output()
        .unwrap();
    let text = std::fs::read_to_string(&report).unwrap();
    assert_eq!(out.status.code(), Some(1), "{text}");
    for want in [
        "FAIL long_kernel_with_other_process",
        "the driver stopped the long kernel (code 8) although its channel's context-switch timeout limit is 3000 ms",
        "the long kernel: stopped: TG_ERROR_DEVICE_FAULT",
        "fault report: code 8",
        "reopened the device: a kernel ran correctly",
        "selftest: 15 passed, 1 failed, 0 skipped",
    ] {
        assert!(text.contains(want), "report lacks {want:?}:\n{text}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The self-test's competing process: ready after its first kernel, then a summary line.
#[test]
fn the_competing_process_reports_its_kernels() {
    let out = Command::new(env!("CARGO_BIN_EXE_tegragpu-info"))
        .args(["--selftest-competitor", "300", "emu"])
        .env_remove("TEGRAGPU_LOG")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.first(), Some(&"ready"), "{stdout}");
    let done = lines.get(1).copied().unwrap_or("");
    let kernels: u32 = done
        .strip_prefix("done kernels=")
        .and_then(|r| r.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no kernel count: {stdout}"));
    assert!(kernels >= 1, "{stdout}");
    assert!(
        done.contains(" errors=0 ") && done.ends_with("first_error=none"),
        "{stdout}"
    );
    let bad = Command::new(env!("CARGO_BIN_EXE_tegragpu-info"))
        .args(["--selftest-competitor", "soon", "emu"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--selftest-competitor \"soon\""));
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
