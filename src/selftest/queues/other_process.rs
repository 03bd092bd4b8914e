//! Check `long_kernel_with_other_process`: a kernel past the context-switch timeout runs while
//! another process (or thread) uses the GPU; and that other side, [`run_competitor`].

use super::{
    backend_name, check_fill, device_still_works, err_text, launch_fill, ms, spin_params, EndSpin,
    WORDS,
};
use crate::backend::nvgpu::{NvgpuBackend, TSG_MAX_CHANNELS};
use crate::core::{BackendKind, Buffer, Device, Kernel, Module, Queue, QueueKind};
use crate::error::{Error, Status};
use crate::selftest::{cfg, data, fail, CheckFail, Notes, SEC};
use std::io::{BufRead, Read};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// The long kernel of `long_kernel_with_other_process`: past nvgpu's default 3,000-ms
/// context-switch timeout budget.
const LONGER_NS: u64 = 4 * SEC;
/// How long the competing process or thread runs kernels (from when it is ready).
const COMPETE_FOR: Duration = Duration::from_millis(5000);

/// How the self-test starts a competing process for `long_kernel_with_other_process`: given the
/// device spec (empty: the default device) and how long to run kernels, a command whose standard
/// output carries [`run_competitor`]'s lines (`tegragpu-info --selftest-competitor MS SPEC`).
pub type CompetitorCommand = dyn Fn(&str, Duration) -> std::process::Command + Sync;

/// What the competing process or thread reported.
#[derive(Debug, Default)]
struct CompetitorResult {
    /// The `done ...` line, if one came.
    done: Option<String>,
    /// An `error ...` line, if one came.
    error: Option<String>,
    /// Exit status (process) or "thread".
    exit: String,
    /// The end of its standard error (process).
    stderr_tail: String,
}

/// The competing side: a process or a thread that prints lines into `lines`.
struct Competitor {
    label: String,
    lines: mpsc::Receiver<String>,
    child: Option<std::process::Child>,
    stderr: Option<std::thread::JoinHandle<String>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// A competing process still running when the check returns early is killed and reaped.
impl Drop for Competitor {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Competitor {
    fn process(mut cmd: std::process::Command) -> std::io::Result<Competitor> {
        use std::process::Stdio;
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()?;
        let (tx, lines) = mpsc::channel();
        let out = child.stdout.take();
        let reader = std::thread::spawn(move || {
            if let Some(out) = out {
                for l in std::io::BufReader::new(out).lines() {
                    let Ok(l) = l else { break };
                    if tx.send(l).is_err() {
                        break;
                    }
                }
            }
        });
        let err = child.stderr.take();
        let stderr = std::thread::spawn(move || {
            let mut s = String::new();
            if let Some(mut e) = err {
                let mut buf = [0u8; 4096];
                while let Ok(n) = e.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    s.push_str(&String::from_utf8_lossy(&buf[..n]));
                    // Keep the end only (a trace log can be long).
                    if s.len() > 8192 {
                        let cut = s.len() - 2048;
                        let cut = (cut..s.len()).find(|&i| s.is_char_boundary(i)).unwrap_or(0);
                        s.drain(..cut);
                    }
                }
            }
            s
        });
        Ok(Competitor {
            label: format!("process {}", child.id()),
            lines,
            child: Some(child),
            stderr: Some(stderr),
            thread: Some(reader),
        })
    }

    fn thread(spec: String, cubin: &'static [u8]) -> Competitor {
        let (tx, lines) = mpsc::channel();
        let thread = std::thread::spawn(move || {
            let cubin_for = move |_: u32, _: u32| Some(cubin);
            run_competitor(&spec, &cubin_for, COMPETE_FOR, &mut |l: &str| {
                let _ = tx.send(l.to_string());
            });
        });
        Competitor {
            label: "a thread of this process with a device of its own".into(),
            lines,
            child: None,
            stderr: None,
            thread: Some(thread),
        }
    }

    /// Waits (at most `timeout`) for the `ready` line and returns when it came; `Err` gives
    /// what came instead.
    fn wait_ready(&self, timeout: Duration) -> Result<Instant, String> {
        let end = Instant::now() + timeout;
        loop {
            let left = end.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(l) if l == "ready" => return Ok(Instant::now()),
                Ok(l) if l.starts_with("error") => return Err(l),
                Ok(_) => {}
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    return Err(format!("not ready within {} s", timeout.as_secs()))
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    return Err("ended before it was ready".into())
                }
            }
        }
    }

    /// Collects the rest of its lines (until `deadline`), ends it (a process still running at
    /// the deadline is killed) and returns what it reported.
    fn finish(mut self, deadline: Instant) -> CompetitorResult {
        let mut r = CompetitorResult::default();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(l) if l.starts_with("done") => r.done = Some(l),
                Ok(l) if l.starts_with("error") => r.error = Some(l),
                Ok(_) => {}
                Err(_) => break,
            }
        }
        if let Some(mut child) = self.child.take() {
            let status = loop {
                match child.try_wait() {
                    Ok(Some(s)) => break s.to_string(),
                    Ok(None) if Instant::now() < deadline => {
                        std::thread::sleep(Duration::from_millis(10))
                    }
                    Ok(None) => {
                        let _ = child.kill();
                        let s = child.wait().map(|s| s.to_string()).unwrap_or_default();
                        break format!("killed at the deadline ({s})");
                    }
                    Err(e) => break format!("unknown ({e})"),
                }
            };
            r.exit = status;
            // The reader ends at the end of the pipe (the process has exited).
            if let Some(t) = self.thread.take() {
                let _ = t.join();
            }
        } else if let Some(t) = self.thread.take() {
            // A thread still in one of its waits (10 s at most) is left to end by itself.
            r.exit = if t.is_finished() {
                let _ = t.join();
                "its thread ended".into()
            } else {
                "its thread still runs (it ends by itself)".into()
            };
        }
        if let Some(s) = self.stderr.take() {
            r.stderr_tail = s.join().unwrap_or_default();
        }
        r
    }
}

/// The competing side of `long_kernel_with_other_process`: opens `spec` (empty: the default
/// device), loads the fixture kernels, runs one fill kernel, prints `ready`, then runs small
/// fill kernels (each checked, 10 ms apart) for `window` and prints
/// `done kernels=N errors=E p50_ms=X max_ms=Y slowest_at_ms=Z first_error=TEXT`
/// (`slowest_at_ms`: when the slowest kernel was launched, from `ready`). Every wait has a
/// 10-s timeout; the first error ends the loop. Problems before `ready` print `error TEXT`.
/// Returns whether every kernel ran correctly.
pub fn run_competitor(
    spec: &str,
    cubin_for: &dyn Fn(u32, u32) -> Option<&'static [u8]>,
    window: Duration,
    out: &mut dyn FnMut(&str),
) -> bool {
    let spec = (!spec.is_empty()).then_some(spec);
    let setup = || -> Result<(Device, Module), String> {
        let dev = Device::open(spec).map_err(|e| format!("opening the device: {e}"))?;
        let (maj, min) = (dev.info().sm_major, dev.info().sm_minor);
        let cubin = cubin_for(maj, min).ok_or(format!("no kernels for sm_{maj}{min}"))?;
        let m = dev
            .load_module(cubin)
            .map_err(|e| format!("loading the kernels: {e}"))?;
        Ok((dev, m))
    };
    let (dev, m) = match setup() {
        Ok(v) => v,
        Err(e) => {
            out(&format!("error {e}"));
            return false;
        }
    };
    let run = |q: &mut Queue, k: &Kernel, buf: &Buffer, s: &crate::core::Signal, i: u64| {
        launch_fill(q, k, buf, i as u32)?;
        q.signal(s, i)?;
        q.submit()?;
        s.wait(i, 10 * SEC)?;
        check_fill(buf, i as u32, "a fill kernel of the competing process").map_err(|e| match e {
            CheckFail::Fail(m) => Error::new(Status::Internal, m),
            CheckFail::Skip => Error::new(Status::Internal, "skipped"),
        })
    };
    let prepared = (|| -> crate::error::Result<_> {
        let k = m.kernel("fill_u32")?;
        let buf = dev.alloc(u64::from(WORDS) * 4, data())?;
        let q = dev.create_queue(QueueKind::Compute)?;
        let s = dev.create_signal(0)?;
        Ok((k, buf, q, s))
    })();
    let (k, buf, mut q, s) = match prepared {
        Ok(v) => v,
        Err(e) => {
            out(&format!("error setting up: {e}"));
            return false;
        }
    };
    q.set_timeout_ns(10 * SEC);
    if let Err(e) = run(&mut q, &k, &buf, &s, 1) {
        out(&format!("error the first kernel: {e}"));
        return false;
    }
    out("ready");
    let start = Instant::now();
    let mut lat: Vec<Duration> = Vec::new();
    let (mut slowest, mut slowest_at) = (Duration::ZERO, Duration::ZERO);
    let mut first_error = String::new();
    let mut i = 1u64;
    while start.elapsed() < window {
        i += 1;
        let at = start.elapsed();
        let t = Instant::now();
        if let Err(e) = run(&mut q, &k, &buf, &s, i) {
            first_error = format!("kernel {} at +{}: {}", i - 1, ms(at), err_text(&e));
            break;
        }
        let d = t.elapsed();
        if d > slowest {
            (slowest, slowest_at) = (d, at);
        }
        lat.push(d);
        std::thread::sleep(Duration::from_millis(10));
    }
    lat.sort();
    let p50 = lat.get(lat.len() / 2).copied().unwrap_or_default();
    let errors = u32::from(!first_error.is_empty());
    out(&format!(
        "done kernels={} errors={errors} p50_ms={:.2} max_ms={:.2} slowest_at_ms={:.0} first_error={}",
        lat.len(),
        p50.as_secs_f64() * 1e3,
        slowest.as_secs_f64() * 1e3,
        slowest_at.as_secs_f64() * 1e3,
        if first_error.is_empty() { "none" } else { &first_error }
    ));
    // Let the queue's drop not wait on a device that faulted.
    q.set_timeout_ns(SEC);
    errors == 0
}

/// `key=value` from a `done ...` line (`first_error` takes the rest of the line).
fn field<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let at = line.find(&format!(" {key}="))? + key.len() + 2;
    let rest = &line[at..];
    if key == "first_error" {
        return Some(rest);
    }
    rest.split(' ').next()
}

/// Check `long_kernel_with_other_process`, on a device of its own: a 4-s kernel (past nvgpu's
/// default 3-s context-switch timeout budget) runs while another context uses the GPU: another
/// process (`competitor`), else a thread with a device of its own; on the emulated Orin also the
/// emulator's competing-context hook, since each emulated GPU is a device's own. Reports
/// whether the long kernel completed or was stopped (with the fault code), the timings, and what
/// the other side saw.
pub(in crate::selftest) fn check_long_kernel_with_other_process(
    spec: Option<&str>,
    cubin_for: &dyn Fn(u32, u32) -> Option<&'static [u8]>,
    competitor: Option<&CompetitorCommand>,
    notes: &mut Notes,
) -> Result<String, CheckFail> {
    let probe = Device::open(spec)?;
    let (maj, min) = (probe.info().sm_major, probe.info().sm_minor);
    let cubin = cubin_for(maj, min).ok_or(CheckFail::Skip)?;
    let emulated = probe.is_emulated();
    let ctxsw_limit = crate::backend::nvgpu::channel::ctxsw_timeout_ms();
    // The emulated Orin: a device whose kernel this check can reach, for its competing-context
    // hook, with wait-for-idle compute preemption (CILP off), the case where the driver charges
    // the context-switch timeout budget.
    // A Jetson: the backend opened as `Device::open` does, to ask it whether its compute
    // channels requested CILP.
    let (dev, emu, cilp) = if emulated {
        drop(probe);
        let emu = crate::emu::EmuSys::new();
        let (c, k) = crate::backend::pool::configured_counts(TSG_MAX_CHANNELS)?;
        let b = NvgpuBackend::open_configured(emu.clone(), c, k, false, ctxsw_limit)?;
        (Device::from_backend(Box::new(b))?, Some(emu), Some(false))
    } else if probe.info().backend == BackendKind::Nvgpu {
        drop(probe);
        let b = NvgpuBackend::open(std::sync::Arc::new(crate::os::LinuxSys))?;
        let cilp = b.uses_cilp();
        (Device::from_backend(Box::new(b))?, None, Some(cilp))
    } else {
        (probe, None, None)
    };
    notes.push(format!(
        "backend {}: a {} ms spin kernel, then a fill kernel, on a compute queue{}",
        backend_name(&dev),
        LONGER_NS / 1_000_000,
        match cilp {
            Some(c) => format!(
                "; compute preemption {}; the channel's context-switch timeout limit (SET_TIMEOUT_EX): {ctxsw_limit} ms (the driver's default: 3000 ms)",
                if c {
                    "CILP (requested)"
                } else {
                    "wait-for-idle (CILP not requested)"
                }
            ),
            None => String::new(),
        }
    ));
    let nvgpu = dev.info().backend == BackendKind::Nvgpu;
    let m = dev.load_module(cubin)?;
    let spin = m.kernel("spin_until")?;
    let fill = m.kernel("fill_u32")?;
    let flag = dev.alloc(4096, data())?;
    let out = dev.alloc(u64::from(WORDS) * 4, data())?;
    let done = dev.create_signal(0)?;
    let mut q = dev.create_queue(QueueKind::Compute)?;
    q.set_timeout_ns(2 * SEC);
    let token = q.track().token;

    // The other side.
    let spec_text = spec.unwrap_or("").to_string();
    let other = match competitor {
        Some(make) => {
            let cmd = make(&spec_text, COMPETE_FOR);
            let program = std::path::Path::new(cmd.get_program());
            let shown = format!(
                "{} {}",
                program
                    .file_name()
                    .unwrap_or(program.as_os_str())
                    .to_string_lossy(),
                cmd.get_args()
                    .map(|a| a.to_string_lossy().into_owned())
                    .collect::<Vec<_>>()
                    .join(" ")
            );
            match Competitor::process(cmd) {
                Ok(c) => {
                    notes.push(format!(
                        "competing {} started: {shown}{}",
                        c.label,
                        if emulated {
                            " (it runs on an emulated Orin of its own: emulated GPUs are not shared between processes)"
                        } else {
                            ""
                        }
                    ));
                    Some(c)
                }
                Err(e) => {
                    return Err(fail(format!(
                        "could not start the competing process {shown}: {e}"
                    )))
                }
            }
        }
        None => {
            notes.push(format!(
                "no competing process asked for: a thread of this process with a device of its own (another channel group and context) competes instead{}",
                if emulated {
                    " (on an emulated Orin of its own)"
                } else {
                    ""
                }
            ));
            Some(Competitor::thread(spec_text.clone(), cubin))
        }
    };
    let mut ready_at = Instant::now();
    if let Some(c) = &other {
        match c.wait_ready(Duration::from_secs(20)) {
            Ok(t) => ready_at = t,
            Err(e) => {
                let label = c.label.clone();
                let r = other.map(|c| c.finish(Instant::now() + Duration::from_secs(2)));
                let tail = r.map(|r| r.stderr_tail).unwrap_or_default();
                notes.push(format!("the competing {label}: {e}"));
                if !tail.trim().is_empty() {
                    notes.push(format!(
                        "its stderr ends: {}",
                        tail.trim().lines().last().unwrap_or("")
                    ));
                }
                return Err(fail(format!("the competing {label}: {e}")));
            }
        }
    }
    let hook = emu.as_ref().map(|e| e.add_competing_context());
    if hook.is_some() {
        notes.push(
            "competing context on this device: the emulator's hook (another context wants the GPU for the whole kernel)"
                .into(),
        );
    }

    let _end = EndSpin(&flag);
    q.launch(&spin, &cfg(1, 32), &spin_params(&flag, LONGER_NS))?;
    launch_fill(&mut q, &fill, &out, 0x10ad)?;
    q.signal(&done, 1)?;
    q.submit()?;
    let t = Instant::now();
    let r = done.wait(1, LONGER_NS + 8 * SEC);
    let took = t.elapsed();
    // The long kernel's span on the other side's clock (from its `ready`).
    let span = (
        t.saturating_duration_since(ready_at),
        Instant::now().saturating_duration_since(ready_at),
    );
    drop(hook);
    let outcome = match &r {
        Ok(()) => format!("completed at +{}", ms(took)),
        Err(e) if e.status == Status::DeviceFault => {
            format!("stopped: {} after {}", err_text(e), ms(took))
        }
        Err(e) => format!(
            "neither completed nor stopped: {} after {}",
            err_text(e),
            ms(took)
        ),
    };
    notes.push(format!("the long kernel: {outcome}"));
    if let Some(emu) = &emu {
        if let Some(used) = emu.ctxsw_timeout_accumulated_ms(token) {
            notes.push(format!(
                "context-switch timeout budget its channel used: {used} ms (limit {ctxsw_limit} ms)"
            ));
        }
    }
    let fault = dev.fault_report();
    if let Some(f) = &fault {
        notes.push(format!("fault report: code {}: {}", f.code, f.what));
    }
    let completed = r.is_ok();
    if completed {
        check_fill(&out, 0x10ad, "the fill kernel after the long kernel")?;
        device_still_works(&dev, &fill, 0x2222)?;
        notes.push("the long kernel's result is right; a new queue ran a kernel afterwards".into());
    }

    // What the other side saw.
    let mut other_failed = None;
    if let Some(c) = other {
        let label = c.label.clone();
        let res = c.finish(Instant::now() + COMPETE_FOR + Duration::from_secs(12));
        match (&res.done, &res.error) {
            (Some(d), _) => {
                let get = |k| field(d, k).unwrap_or("?");
                notes.push(format!(
                    "the competing {label}: {} kernels in {} ms, each launch to completion: p50 {} ms, max {} ms (the slowest launched at +{} ms after it was ready; the long kernel ran from +{:.0} to +{:.0} ms); first error: {}; {}",
                    get("kernels"),
                    COMPETE_FOR.as_millis(),
                    get("p50_ms"),
                    get("max_ms"),
                    get("slowest_at_ms"),
                    span.0.as_secs_f64() * 1e3,
                    span.1.as_secs_f64() * 1e3,
                    get("first_error"),
                    res.exit
                ));
                if get("errors") != "0" {
                    other_failed = Some(format!(
                        "the competing {label}'s kernels failed: {}",
                        get("first_error")
                    ));
                }
            }
            (None, e) => {
                let why = e.clone().unwrap_or_else(|| "no result".into());
                notes.push(format!("the competing {label}: {why}; {}", res.exit));
                if !res.stderr_tail.trim().is_empty() {
                    notes.push(format!(
                        "its stderr ends: {}",
                        res.stderr_tail.trim().lines().last().unwrap_or("")
                    ));
                }
                other_failed = Some(format!("the competing {label}: {why}"));
            }
        }
    }
    drop(_end);
    drop((q, spin, fill, m, flag, out, done, dev));

    // A stopped device recovers by reopening.
    if !completed {
        let t = Instant::now();
        let reopened = (|| -> Result<(), CheckFail> {
            let dev = Device::open(spec)?;
            let m = dev.load_module(cubin)?;
            device_still_works(&dev, &m.kernel("fill_u32")?, 0x3333)
        })();
        notes.push(format!(
            "reopened the device: {} ({})",
            match &reopened {
                Ok(()) => "a kernel ran correctly".to_string(),
                Err(CheckFail::Fail(e)) => e.clone(),
                Err(CheckFail::Skip) => "skipped".into(),
            },
            ms(t.elapsed())
        ));
        reopened?;
    }
    match (&r, nvgpu) {
        (Err(e), _) if e.status != Status::DeviceFault => {
            return Err(fail(format!("the long kernel {outcome}")))
        }
        (Err(_), true) => {
            return Err(fail(format!(
                "the driver stopped the long kernel (code {}) although its channel's context-switch timeout limit is {ctxsw_limit} ms",
                fault.map_or(0, |f| f.code)
            )))
        }
        _ => {}
    }
    if let Some(e) = other_failed {
        return Err(fail(e));
    }
    Ok(match r {
        Ok(()) => format!(
            "the {} ms kernel completed correctly at +{} while another context used the GPU",
            LONGER_NS / 1_000_000,
            ms(took)
        ),
        Err(_) => format!(
            "the {} ms kernel was stopped (code {}, documented for RM) after {}; reopened device works",
            LONGER_NS / 1_000_000,
            fault.map_or(0, |f| f.code),
            ms(took)
        ),
    })
}
