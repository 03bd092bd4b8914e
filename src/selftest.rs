//! The self-test behind `tegragpu-info --selftest`: a short run of the contract checks (signals,
//! GPU waits, kernels, copies, fault reporting) on one device with kernels embedded in the tool,
//! and a plain-text report for bug reports (device, OS and driver facts, the bring-up system calls
//! from the trace log, each check with PASS/FAIL and its time).
//!
//! Checks never panic: each returns its result, and a failed check does not stop the others
//! (except where the device is gone). The queue-limit, competing-process and fault checks run
//! last, each on a device of its own: a fault stops every queue of the device it happens on.
//! The queue and channel checks ([`queues`]) also record what they observed (statuses,
//! messages, timings), printed under the check in the report whatever its verdict.

use crate::core::{Buffer, Device, LaunchConfig, MemFlags, Module, QueueKind};
use crate::error::{Error, Status};
use std::time::{Duration, Instant};

mod queues;

pub use queues::{run_competitor, CompetitorCommand};

const SEC: u64 = 1_000_000_000;

/// What a check observed, one line each, in order.
type Notes = Vec<String>;

/// One check's outcome.
#[derive(Debug, Clone)]
pub struct CheckResult {
    pub name: &'static str,
    /// `None`: passed; `Some(reason)`: failed.
    pub failure: Option<String>,
    /// `Some(reason)`: not run (e.g. no kernels for this SM).
    pub skipped: Option<String>,
    /// What was measured or verified.
    pub detail: String,
    /// What the check observed on the way (statuses, messages, timings), whatever its verdict.
    pub observed: Vec<String>,
    pub time: Duration,
}

impl CheckResult {
    /// "PASS", "FAIL" or "SKIP".
    pub fn verdict(&self) -> &'static str {
        if self.skipped.is_some() {
            "SKIP"
        } else if self.failure.is_some() {
            "FAIL"
        } else {
            "PASS"
        }
    }
}

/// Everything the self-test found.
#[derive(Debug, Clone, Default)]
pub struct Report {
    /// `key: value` facts about the machine and device, in order.
    pub facts: Vec<(String, String)>,
    /// The trace lines recorded while the device was opened (system calls with results).
    pub bring_up: Vec<String>,
    pub checks: Vec<CheckResult>,
    /// Set when the device could not be opened: the error, and no checks ran.
    pub open_error: Option<String>,
}

impl Report {
    pub fn passed(&self) -> usize {
        self.count("PASS")
    }
    pub fn failed(&self) -> usize {
        self.count("FAIL") + usize::from(self.open_error.is_some())
    }
    pub fn skipped(&self) -> usize {
        self.count("SKIP")
    }
    fn count(&self, v: &str) -> usize {
        self.checks.iter().filter(|c| c.verdict() == v).count()
    }

    /// The report as text: facts, bring-up trace, one line per check, a summary line.
    pub fn to_text(&self) -> String {
        use std::fmt::Write;
        let mut s = String::from("libtegragpu self-test report\n\n");
        for (k, v) in &self.facts {
            let _ = writeln!(s, "{k:<18} {v}");
        }
        if let Some(e) = &self.open_error {
            let _ = writeln!(s, "\nopening the device FAILED: {e}");
        }
        let _ = writeln!(
            s,
            "\nbring-up ({} traced system calls):",
            self.bring_up.len()
        );
        if self.bring_up.is_empty() {
            s.push_str("  (none recorded)\n");
        }
        for l in &self.bring_up {
            let _ = writeln!(s, "  {l}");
        }
        s.push_str("\nchecks:\n");
        for c in &self.checks {
            let why = c
                .failure
                .as_deref()
                .or(c.skipped.as_deref())
                .unwrap_or(&c.detail);
            let _ = writeln!(
                s,
                "  {} {:<40} {:>9.3} ms  {}",
                c.verdict(),
                c.name,
                c.time.as_secs_f64() * 1e3,
                why
            );
            for o in &c.observed {
                let _ = writeln!(s, "         - {o}");
            }
        }
        let _ = writeln!(
            s,
            "\nselftest: {} passed, {} failed, {} skipped",
            self.passed(),
            self.failed(),
            self.skipped()
        );
        s
    }
}

/// Facts about the machine that a bug report needs: kernel, L4T release, driver.
pub fn machine_facts() -> Vec<(String, String)> {
    let mut f = Vec::new();
    let read = |p: &str| {
        std::fs::read_to_string(p)
            .ok()
            .map(|s| s.trim().to_string())
    };
    f.push((
        "library".into(),
        format!("libtegragpu {}", env!("CARGO_PKG_VERSION")),
    ));
    // SAFETY: uname fills a zeroed utsname; its fields are NUL-terminated.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    if unsafe { libc::uname(&mut u) } == 0 {
        let field = |b: &[libc::c_char]| {
            let bytes: Vec<u8> = b
                .iter()
                .take_while(|&&c| c != 0)
                // `c_char` is i8 on x86-64 and u8 on aarch64: its byte, on both.
                .map(|&c| c.to_ne_bytes()[0])
                .collect();
            String::from_utf8_lossy(&bytes).into_owned()
        };
        f.push((
            "kernel".into(),
            format!(
                "{} {} {}",
                field(&u.sysname),
                field(&u.release),
                field(&u.machine)
            ),
        ));
    }
    f.push((
        "L4T release".into(),
        read("/etc/nv_tegra_release")
            .map(|s| s.lines().next().unwrap_or("").to_string())
            .unwrap_or_else(|| "(no /etc/nv_tegra_release: not a Jetson)".into()),
    ));
    if let Some(v) = read("/proc/driver/nvidia/version") {
        f.push((
            "NVIDIA driver".into(),
            v.lines().next().unwrap_or("").to_string(),
        ));
    }
    if let Some(m) = read("/proc/device-tree/model") {
        f.push(("board".into(), m.trim_end_matches('\0').to_string()));
    }
    f
}

/// Run every check on the device `spec` opens. `cubin_for(sm_major, sm_minor)` gives the fixture
/// kernels (tests/fixtures/kernels.cu) for the device's SM, if the tool carries them. The device
/// open runs with the log at trace level routed into the report (the bring-up system calls);
/// the previous log level and callback are restored afterwards (the callback to the default).
/// Runs one at a time: a second call waits for the first. Without a competing-process command
/// (see [`run_with`]), `long_kernel_with_other_process` competes with a thread of this process
/// that opens a device of its own (on the emulated Orin, also the emulator's competing-context
/// hook).
pub fn run(spec: Option<&str>, cubin_for: &dyn Fn(u32, u32) -> Option<&'static [u8]>) -> Report {
    run_with(spec, cubin_for, &Options::default())
}

/// How the self-test runs ([`run_with`]).
#[derive(Default)]
pub struct Options<'a> {
    /// Starts the other process of `long_kernel_with_other_process`, which runs
    /// [`run_competitor`] (`tegragpu-info --selftest-competitor MS SPEC`).
    pub competitor: Option<&'a CompetitorCommand>,
}

/// [`run`] with [`Options`].
pub fn run_with(
    spec: Option<&str>,
    cubin_for: &dyn Fn(u32, u32) -> Option<&'static [u8]>,
    opts: &Options<'_>,
) -> Report {
    static ONE_AT_A_TIME: parking_lot::Mutex<()> = parking_lot::const_mutex(());
    let _one = ONE_AT_A_TIME.lock();
    let mut report = Report {
        facts: machine_facts(),
        ..Default::default()
    };
    let lines = std::sync::Arc::new(parking_lot::Mutex::new(Vec::<String>::new()));
    let sink = lines.clone();
    let before = crate::log::level();
    let captured = crate::log::set_callback(Some(Box::new(move |_level, target, msg| {
        let tag = if target == "tegragpu::ioctl" {
            "ioctl"
        } else {
            "step "
        };
        sink.lock().push(format!("{tag} {msg}"));
    })))
    .is_ok();
    if captured {
        crate::log::set_level(crate::log::LevelFilter::Trace);
    }
    let t = Instant::now();
    let opened = Device::open(spec);
    let open_time = t.elapsed();
    if captured {
        crate::log::set_level(before);
        let _ = crate::log::set_callback(None);
    }
    report.bring_up = std::mem::take(&mut *lines.lock());
    let dev = match opened {
        Ok(d) => d,
        Err(e) => {
            report.open_error = Some(e.to_string());
            return report;
        }
    };
    let i = dev.info().clone();
    report.facts.push((
        "device".into(),
        format!(
            "{} (sm_{}{}, {} SMs, {} backend{})",
            i.name,
            i.sm_major,
            i.sm_minor,
            i.sm_count,
            match i.backend {
                crate::core::BackendKind::Nvgpu => "nvgpu",
                crate::core::BackendKind::Rm => "rm",
            },
            if i.emulated { ", emulated Orin" } else { "" }
        ),
    ));
    report.facts.push((
        "driver".into(),
        if i.driver_version.is_empty() {
            "(not reported)".into()
        } else {
            i.driver_version.clone()
        },
    ));
    report.facts.push((
        "classes".into(),
        format!(
            "compute {:#06x}, copy {:#06x}, gpfifo {:#06x}",
            i.compute_class, i.copy_class, i.gpfifo_class
        ),
    ));
    report.checks.push(CheckResult {
        name: "device_open",
        failure: None,
        skipped: None,
        detail: format!("memory {} MiB", i.memory_bytes >> 20),
        observed: Vec::new(),
        time: open_time,
    });

    let t = Instant::now();
    let module = cubin_for(i.sm_major, i.sm_minor).map(|c| dev.load_module(c));
    let load_time = t.elapsed();
    let no_kernels = || {
        format!(
            "no embedded kernels for sm_{}{} (the tool carries sm_87, sm_90, sm_100)",
            i.sm_major, i.sm_minor
        )
    };
    let module_check = CheckResult {
        name: "module_load",
        failure: match &module {
            Some(Err(e)) => Some(e.to_string()),
            _ => None,
        },
        skipped: module.is_none().then(no_kernels),
        detail: "fixture kernels loaded".into(),
        observed: Vec::new(),
        time: load_time,
    };
    report.checks.push(module_check);
    let m = module.and_then(|r| r.ok());

    type Check = fn(&Device, Option<&Module>) -> Result<String, CheckFail>;
    let checks: [(&'static str, Check); 9] = [
        ("signal_compute_and_copy_queues", check_signals),
        ("gpu_wait_released_by_cpu", check_gpu_wait),
        ("kernel_fill", check_fill),
        ("kernel_vector_add_1000003", check_vector_add),
        ("dependent_kernels_x100", check_dependent),
        ("copies_odd_sizes_and_offsets", check_copies),
        ("copy_engine_64_mib", check_copy_64),
        ("wait_timeout_is_reported", check_timeout),
        ("launch_latency", check_latency),
    ];
    let mut record = |name: &'static str, f: &mut dyn FnMut(&mut Notes) -> CheckOutcome| {
        let mut observed = Notes::new();
        let t = Instant::now();
        let r = f(&mut observed);
        let time = t.elapsed();
        let (failure, skipped, detail) = match r {
            Ok(d) => (None, None, d),
            Err(CheckFail::Skip) => (None, Some(no_kernels()), String::new()),
            Err(CheckFail::Fail(e)) => (Some(e), None, String::new()),
        };
        report.checks.push(CheckResult {
            name,
            failure,
            skipped,
            detail,
            observed,
            time,
        });
    };
    for (name, f) in checks {
        record(name, &mut |_| f(&dev, m.as_ref()));
    }
    record("queue_create_destroy_during_long_kernel", &mut |n| {
        queues::check_create_destroy_during_long_kernel(&dev, m.as_ref(), n)
    });
    drop(m);
    drop(dev);
    // The checks that need a device of their own; the faults last.
    record("queue_limit", &mut |n| queues::check_queue_limit(spec, n));
    record("long_kernel_with_other_process", &mut |n| {
        queues::check_long_kernel_with_other_process(spec, cubin_for, opts.competitor, n)
    });
    record("fault_on_one_queue", &mut |n| {
        queues::check_fault_on_one_queue(spec, cubin_for, n)
    });
    record("fault_reported_then_reopen", &mut |_| {
        check_fault(spec, cubin_for)
    });
    report
}

type CheckOutcome = Result<String, CheckFail>;

enum CheckFail {
    Skip,
    Fail(String),
}

impl From<Error> for CheckFail {
    fn from(e: Error) -> Self {
        CheckFail::Fail(e.to_string())
    }
}

fn fail(msg: impl Into<String>) -> CheckFail {
    CheckFail::Fail(msg.into())
}

fn data() -> MemFlags {
    MemFlags {
        cpu_cached: true,
        zeroed: true,
        ..Default::default()
    }
}

fn cfg(grid: u32, block: u32) -> LaunchConfig {
    LaunchConfig {
        grid: [grid, 1, 1],
        block: [block, 1, 1],
        dynamic_shared_bytes: 0,
        cooperative: false,
        concurrent: false,
        cluster: [0; 3],
    }
}

fn params(items: &[&[u8]]) -> Vec<u8> {
    let mut p = Vec::new();
    for it in items {
        let align = it.len().clamp(1, 8);
        while p.len() % align != 0 {
            p.push(0);
        }
        p.extend_from_slice(it);
    }
    p
}

fn u32_at(b: &Buffer, i: usize) -> u32 {
    // SAFETY: callers index inside the buffer; the memory is CPU-mapped shared memory.
    unsafe { std::ptr::read_volatile((b.cpu_ptr() as *const u32).add(i)) }
}

fn check_signals(dev: &Device, _: Option<&Module>) -> Result<String, CheckFail> {
    for kind in [QueueKind::Compute, QueueKind::Copy] {
        let mut q = dev.create_queue(kind)?;
        let s = dev.create_signal(0)?;
        q.signal(&s, 1)?;
        q.submit()?;
        s.wait(1, 5 * SEC)?;
        if s.timestamp() == 0 {
            return Err(fail(format!(
                "{kind:?} queue: no GPU timestamp with the release"
            )));
        }
        q.signal(&s, 1 << 40)?;
        q.submit()?;
        s.wait(1 << 40, 5 * SEC)?;
        if s.value() != 1 << 40 {
            return Err(fail(format!(
                "{kind:?} queue: value {} after release of 2^40",
                s.value()
            )));
        }
    }
    Ok("GPU releases with timestamps on both queue kinds, values past 2^32".into())
}

fn check_gpu_wait(dev: &Device, _: Option<&Module>) -> Result<String, CheckFail> {
    let mut q = dev.create_queue(QueueKind::Compute)?;
    let gate = dev.create_signal(0)?;
    let done = dev.create_signal(0)?;
    q.wait(&gate, 1)?;
    q.signal(&done, 1)?;
    q.submit()?;
    match done.wait(1, SEC / 5) {
        Err(e) if e.status == Status::Timeout => {}
        Err(e) => return Err(e.into()),
        Ok(()) => return Err(fail("the GPU passed its wait before the CPU set the gate")),
    }
    gate.set(1);
    done.wait(1, 5 * SEC)?;
    Ok("GPU waited for the CPU's signal".into())
}

fn check_fill(dev: &Device, m: Option<&Module>) -> Result<String, CheckFail> {
    let k = m.ok_or(CheckFail::Skip)?.kernel("fill_u32")?;
    let n = 100_000u32;
    let buf = dev.alloc(n as u64 * 4, data())?;
    let mut q = dev.create_queue(QueueKind::Compute)?;
    let s = dev.create_signal(0)?;
    let p = params(&[
        &buf.gpu_va().to_le_bytes(),
        &0xC0FFEEu32.to_le_bytes(),
        &n.to_le_bytes(),
    ]);
    q.launch(&k, &cfg(n.div_ceil(128), 128), &p)?;
    q.signal(&s, 1)?;
    q.submit()?;
    s.wait(1, 10 * SEC)?;
    for i in 0..n as usize {
        let v = u32_at(&buf, i);
        if v != 0xC0FFEE {
            return Err(fail(format!("element {i} is {v:#x}, expected 0xc0ffee")));
        }
    }
    Ok(format!("{n} elements verified"))
}

fn check_vector_add(dev: &Device, m: Option<&Module>) -> Result<String, CheckFail> {
    let k = m.ok_or(CheckFail::Skip)?.kernel("vector_add")?;
    let n = 1_000_003u32;
    let bytes = n as u64 * 4;
    let (a, b, c) = (
        dev.alloc(bytes, data())?,
        dev.alloc(bytes, data())?,
        dev.alloc(bytes, data())?,
    );
    // SAFETY: CPU-mapped buffers of n f32 each, not in use by the GPU yet.
    let (fa, fb) = unsafe {
        (
            std::slice::from_raw_parts_mut(a.cpu_ptr() as *mut f32, n as usize),
            std::slice::from_raw_parts_mut(b.cpu_ptr() as *mut f32, n as usize),
        )
    };
    for i in 0..n as usize {
        fa[i] = i as f32;
        fb[i] = 2.0 * i as f32 + 0.5;
    }
    let mut q = dev.create_queue(QueueKind::Compute)?;
    let s = dev.create_signal(0)?;
    let p = params(&[
        &a.gpu_va().to_le_bytes(),
        &b.gpu_va().to_le_bytes(),
        &c.gpu_va().to_le_bytes(),
        &n.to_le_bytes(),
    ]);
    q.launch(&k, &cfg(n.div_ceil(256), 256), &p)?;
    q.signal(&s, 1)?;
    q.submit()?;
    s.wait(1, 10 * SEC)?;
    // SAFETY: the kernel is done (signal 1 waited).
    let fc = unsafe { std::slice::from_raw_parts(c.cpu_ptr() as *const f32, n as usize) };
    for i in 0..n as usize {
        if fc[i] != fa[i] + fb[i] {
            return Err(fail(format!(
                "c[{i}] = {}, expected {}",
                fc[i],
                fa[i] + fb[i]
            )));
        }
    }
    Ok(format!("{n} elements verified"))
}

fn check_dependent(dev: &Device, m: Option<&Module>) -> Result<String, CheckFail> {
    let k = m.ok_or(CheckFail::Skip)?.kernel("increment")?;
    let buf = dev.alloc(4096, data())?;
    let mut q = dev.create_queue(QueueKind::Compute)?;
    let s = dev.create_signal(0)?;
    for i in 0..100u64 {
        for by in [1u64, 2] {
            q.launch(
                &k,
                &cfg(1, 32),
                &params(&[&buf.gpu_va().to_le_bytes(), &by.to_le_bytes()]),
            )?;
        }
        q.signal(&s, i + 1)?;
        q.submit()?;
    }
    s.wait(100, 10 * SEC)?;
    // SAFETY: the work is done; the buffer holds a u64 counter at 0.
    let v = unsafe { std::ptr::read_volatile(buf.cpu_ptr() as *const u64) };
    if v != 300 {
        return Err(fail(format!(
            "counter is {v}, expected 300 (100 × (1 + 2))"
        )));
    }
    Ok("200 ordered launches, counter 300".into())
}

fn copy_and_check(
    dev: &Device,
    kind: QueueKind,
    size: u64,
    so: u64,
    dof: u64,
) -> Result<(), CheckFail> {
    let src = dev.alloc(size + so + 64, data())?;
    let dst = dev.alloc(size + dof + 64, data())?;
    // SAFETY: CPU-mapped, not in use by the GPU until submitted below.
    let s = unsafe { src.as_mut_slice() };
    for (i, b) in s.iter_mut().enumerate() {
        *b = (i as u64).wrapping_mul(2654435761).rotate_right(13) as u8 | 1;
    }
    let mut q = dev.create_queue(kind)?;
    let sig = dev.create_signal(0)?;
    q.copy(&dst, dof, &src, so, size)?;
    q.signal(&sig, 1)?;
    q.submit()?;
    sig.wait(1, 30 * SEC)?;
    // SAFETY: the copy is done.
    let (d, s) = unsafe { (dst.as_slice(), src.as_slice()) };
    let (dof, so, size) = (dof as usize, so as usize, size as usize);
    if d[..dof].iter().any(|&x| x != 0) || d[dof + size..].iter().any(|&x| x != 0) {
        return Err(fail(format!(
            "{kind:?} copy of {size} bytes wrote outside its range"
        )));
    }
    if d[dof..dof + size] != s[so..so + size] {
        return Err(fail(format!(
            "{kind:?} copy of {size} bytes ({so} → {dof}): data differs"
        )));
    }
    Ok(())
}

fn check_copies(dev: &Device, _: Option<&Module>) -> Result<String, CheckFail> {
    let cases = [
        (1, 0, 0),
        (3, 1, 2),
        (1023, 7, 1),
        (4097, 4095, 3),
        (65537, 0, 1),
        (16 * 4096 + 12, 16, 32),
    ];
    for (size, so, dof) in cases {
        for kind in [QueueKind::Copy, QueueKind::Compute] {
            copy_and_check(dev, kind, size, so, dof)?;
        }
    }
    Ok(format!(
        "{} copies on copy and compute queues",
        cases.len() * 2
    ))
}

fn check_copy_64(dev: &Device, _: Option<&Module>) -> Result<String, CheckFail> {
    let t = Instant::now();
    copy_and_check(dev, QueueKind::Copy, 64 << 20, 0, 0)?;
    Ok(format!(
        "64 MiB verified ({:.1} ms including fill and check)",
        t.elapsed().as_secs_f64() * 1e3
    ))
}

fn check_timeout(dev: &Device, _: Option<&Module>) -> Result<String, CheckFail> {
    let s = dev.create_signal(0)?;
    let t = Instant::now();
    match s.wait(1, SEC / 10) {
        Err(e) if e.status == Status::Timeout => Ok(format!(
            "TG_ERROR_TIMEOUT after {:.1} ms (100-ms timeout)",
            t.elapsed().as_secs_f64() * 1e3
        )),
        Err(e) => Err(e.into()),
        Ok(()) => Err(fail("a wait for a value never written passed")),
    }
}

fn check_latency(dev: &Device, m: Option<&Module>) -> Result<String, CheckFail> {
    let k = m.ok_or(CheckFail::Skip)?.kernel("empty_kernel")?;
    let mut q = dev.create_queue(QueueKind::Compute)?;
    let s = dev.create_signal(0)?;
    let n = if dev.is_emulated() { 200 } else { 2000 };
    let mut t = Vec::with_capacity(n);
    for i in 1..=n as u64 {
        let t0 = Instant::now();
        q.launch(&k, &cfg(1, 32), &[])?;
        q.signal(&s, i)?;
        q.submit()?;
        s.wait(i, 5 * SEC)?;
        t.push(t0.elapsed());
    }
    t.sort();
    Ok(format!(
        "empty launch + wait: p50 {:.2} µs, p99 {:.2} µs ({n} runs)",
        t[n / 2].as_secs_f64() * 1e6,
        t[n * 99 / 100].as_secs_f64() * 1e6
    ))
}

fn check_fault(
    spec: Option<&str>,
    cubin_for: &dyn Fn(u32, u32) -> Option<&'static [u8]>,
) -> Result<String, CheckFail> {
    let dev = Device::open(spec)?;
    let (maj, min) = (dev.info().sm_major, dev.info().sm_minor);
    let m = dev.load_module(cubin_for(maj, min).ok_or(CheckFail::Skip)?)?;
    let k = m.kernel("fill_u32")?;
    let bad: u64 = 0x1000; // below every mapping
    let mut q = dev.create_queue(QueueKind::Compute)?;
    let s = dev.create_signal(0)?;
    q.launch(
        &k,
        &cfg(1, 32),
        &params(&[
            &bad.to_le_bytes(),
            &1u32.to_le_bytes(),
            &32u32.to_le_bytes(),
        ]),
    )?;
    q.signal(&s, 1)?;
    q.submit()?;
    let e = match s.wait(1, 10 * SEC) {
        Ok(()) => return Err(fail("a store to 0x1000 did not fault")),
        Err(e) => e,
    };
    if e.status != Status::DeviceFault {
        return Err(fail(format!("expected TG_ERROR_DEVICE_FAULT, got {e}")));
    }
    let f = dev
        .fault_report()
        .ok_or_else(|| fail("TG_ERROR_DEVICE_FAULT without a fault report"))?;
    if let Some(a) = f.address {
        if a & !0xfff != bad {
            return Err(fail(format!(
                "fault address {a:#x}, expected page {bad:#x}: {}",
                f.what
            )));
        }
    }
    let detail = format!(
        "code {}, address {}",
        f.code,
        f.address
            .map_or("not reported".into(), |a| format!("{a:#x}"))
    );
    drop((q, s, k, m, dev));
    let dev = Device::open(spec)?;
    let mut q = dev.create_queue(QueueKind::Compute)?;
    let s = dev.create_signal(0)?;
    q.signal(&s, 1)?;
    q.submit()?;
    s.wait(1, 5 * SEC)?;
    Ok(format!("{detail}; reopened device works"))
}
