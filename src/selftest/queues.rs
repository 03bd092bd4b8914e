//! The self-test's queue and channel checks: what the kernel driver does when queues are made
//! and destroyed while a kernel runs, when one queue faults, at the device's queue limit, and
//! when another process uses the GPU during a long kernel. Each check records what it observed
//! (statuses, messages, timings, which queues saw an error) in its notes, which the report
//! prints under the check whatever its verdict: those lines are what tells how a board's driver
//! behaves.
//!
//! Every long kernel is `spin_until` with a time bound, ended early by its flag word when a
//! check returns (see [`EndSpin`]); every wait has a timeout.

use super::{cfg, data, fail, params, CheckFail, Notes, SEC};
use crate::backend::nvgpu::{NvgpuBackend, TSG_MAX_CHANNELS};
use crate::core::{BackendKind, Buffer, Device, Kernel, Module, Queue, QueueConfig, QueueKind};
use crate::error::{Error, Status};
use std::io::{BufRead, Read};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// The long kernel of `queue_create_destroy_during_long_kernel`.
const LONG_NS: u64 = SEC;
/// The long kernel of `long_kernel_with_other_process`: past nvgpu's default 3,000-ms
/// context-switch timeout budget.
const LONGER_NS: u64 = 4 * SEC;
/// How long the competing process or thread runs kernels (from when it is ready).
const COMPETE_FOR: Duration = Duration::from_millis(5000);
/// At most this many queues are made by `queue_limit`, and for at most this long.
const LIMIT_ATTEMPTS: usize = 256;
const LIMIT_TIME: Duration = Duration::from_secs(20);
/// Words written by the fill kernels of these checks.
const WORDS: u32 = 1024;

/// `TG_ERROR_DEVICE_FAULT` (the status's name without its description).
fn status_name(s: Status) -> &'static str {
    s.as_str().split(':').next().unwrap_or("?")
}

/// `TG_ERROR_X (message)`.
fn err_text(e: &Error) -> String {
    format!("{} ({})", status_name(e.status), e.message)
}

/// `TG_ERROR_X (the message's first 100 characters)`, for errors that repeat a fault's text
/// already in the notes.
fn err_short(e: &Error) -> String {
    match e.message.char_indices().nth(100) {
        Some((i, _)) => format!("{} ({}...)", status_name(e.status), &e.message[..i]),
        None => err_text(e),
    }
}

/// `ok` or `TG_ERROR_X (message)`.
fn res_text<T>(r: &crate::error::Result<T>) -> String {
    match r {
        Ok(_) => "ok".into(),
        Err(e) => err_text(e),
    }
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1e3)
}

fn backend_name(dev: &Device) -> &'static str {
    match dev.info().backend {
        BackendKind::Nvgpu if dev.is_emulated() => "nvgpu (emulated Orin)",
        BackendKind::Nvgpu => "nvgpu",
        BackendKind::Rm => "rm",
    }
}

/// The CPU view of `b` as words.
fn words(b: &Buffer) -> Result<*mut u32, CheckFail> {
    Ok(b.map_cpu()? as *mut u32)
}

/// Ends a `spin_until` kernel when dropped (sets its flag word), so that no check leaves the GPU
/// spinning, whichever way it returns. Declare it after the queues that run the kernel: it is
/// dropped before them, and their drop waits for their work.
struct EndSpin<'a>(&'a Buffer);

impl Drop for EndSpin<'_> {
    fn drop(&mut self) {
        if let Ok(p) = self.0.map_cpu() {
            // SAFETY: the flag buffer is CPU-mapped and at least one word long.
            unsafe { (p as *mut u32).write_volatile(1) };
        }
    }
}

/// Opens a GPU wait on `signal` when dropped (sets it to 1), for the same reason as [`EndSpin`].
struct OpenGate<'a>(&'a crate::core::Signal);

impl Drop for OpenGate<'_> {
    fn drop(&mut self) {
        self.0.set(1);
    }
}

/// `spin_until(flag, max_ns)`'s parameters.
fn spin_params(flag: &Buffer, max_ns: u64) -> Vec<u8> {
    params(&[&flag.gpu_va().to_le_bytes(), &max_ns.to_le_bytes()])
}

/// `fill_u32(out, value, WORDS)` recorded on `q`.
fn launch_fill(q: &mut Queue, fill: &Kernel, out: &Buffer, value: u32) -> crate::error::Result<()> {
    q.launch(
        fill,
        &cfg(WORDS / 256, 256),
        &params(&[
            &out.gpu_va().to_le_bytes(),
            &value.to_le_bytes(),
            &WORDS.to_le_bytes(),
        ]),
    )
}

/// Whether the first [`WORDS`] words of `out` are `value`; `Err` names the first that is not.
fn check_fill(out: &Buffer, value: u32, what: &str) -> Result<(), CheckFail> {
    let w = words(out)?;
    for i in 0..WORDS as usize {
        // SAFETY: `out` holds at least WORDS words, and the kernel that wrote them is done.
        let v = unsafe { w.add(i).read_volatile() };
        if v != value {
            return Err(fail(format!(
                "{what}: word {i} is {v:#x}, expected {value:#x}"
            )));
        }
    }
    Ok(())
}

/// A new compute queue on `dev` runs a fill kernel correctly.
fn device_still_works(dev: &Device, fill: &Kernel, value: u32) -> Result<(), CheckFail> {
    let out = dev.alloc(u64::from(WORDS) * 4, data())?;
    let mut q = dev.create_queue(QueueKind::Compute)?;
    launch_fill(&mut q, fill, &out, value)?;
    q.synchronize(10 * SEC)?;
    check_fill(&out, value, "a kernel on a new queue afterwards")
}

/// Check `queue_create_destroy_during_long_kernel`: a 1-s kernel runs on one queue while
/// another queue is made and used, and two made before it are destroyed; then the long kernel's
/// result is checked and the device is used again.
pub(super) fn check_create_destroy_during_long_kernel(
    dev: &Device,
    m: Option<&Module>,
    notes: &mut Notes,
) -> Result<String, CheckFail> {
    let m = m.ok_or(CheckFail::Skip)?;
    let spin = m.kernel("spin_until")?;
    let fill = m.kernel("fill_u32")?;
    let flag = dev.alloc(4096, data())?;
    let out = dev.alloc(u64::from(WORDS) * 4, data())?;
    let out_new = dev.alloc(u64::from(WORDS) * 4, data())?;
    let done = dev.create_signal(0)?;
    let mut long = dev.create_queue(QueueKind::Compute)?;
    long.set_timeout_ns(5 * SEC);
    let made_before = dev.create_queue(QueueKind::Compute)?;
    let made_before_copy = dev.create_queue(QueueKind::Copy)?;
    let mut new_q: Option<Queue> = None;
    let _end = EndSpin(&flag);
    long.launch(&spin, &cfg(1, 32), &spin_params(&flag, LONG_NS))?;
    launch_fill(&mut long, &fill, &out, 0x5eed_1234)?;
    long.signal(&done, 1)?;
    long.submit()?;
    let started = Instant::now();
    notes.push(format!(
        "backend {}: a {} ms spin kernel, then a fill kernel, submitted on a compute queue",
        backend_name(dev),
        LONG_NS / 1_000_000
    ));
    // Well past nvgpu's 100-ms preempt timeout: a membership change now would have to preempt
    // a running grid.
    std::thread::sleep(Duration::from_millis(150));
    let running = done.value() == 0;
    notes.push(format!(
        "at +{}: the long kernel {}",
        ms(started.elapsed()),
        if running {
            "is running (its signal is 0)"
        } else {
            "has already completed (the steps below did not overlap it)"
        }
    ));

    let t = Instant::now();
    let made = dev.create_queue(QueueKind::Compute);
    let create_time = t.elapsed();
    let create_text = match made {
        Ok(mut q) => {
            q.set_timeout_ns(5 * SEC);
            launch_fill(&mut q, &fill, &out_new, 0xabcd)?;
            q.submit()?;
            new_q = Some(q);
            notes.push(format!(
                "create a compute queue meanwhile: ok in {}; a fill kernel submitted on it",
                ms(create_time)
            ));
            format!("create ok in {}", ms(create_time))
        }
        Err(e) if e.status == Status::NotSupported => {
            notes.push(format!(
                "create a compute queue meanwhile: refused in {} with {} (documented: RM cannot add a channel while a kernel runs; nvgpu when every channel made at open is in use)",
                ms(create_time),
                err_text(&e)
            ));
            format!(
                "create refused ({}) in {}",
                status_name(e.status),
                ms(create_time)
            )
        }
        Err(e) => {
            notes.push(format!(
                "create a compute queue meanwhile: {} after {}",
                err_text(&e),
                ms(create_time)
            ));
            return Err(fail(format!(
                "creating a queue while a kernel ran failed: {}",
                err_text(&e)
            )));
        }
    };
    let t = Instant::now();
    drop(made_before);
    let destroy_compute = t.elapsed();
    let t = Instant::now();
    drop(made_before_copy);
    let destroy_copy = t.elapsed();
    notes.push(format!(
        "destroy an idle compute queue meanwhile: {}; an idle copy queue: {}; the long kernel {} then",
        ms(destroy_compute),
        ms(destroy_copy),
        if done.value() == 0 {
            "was still running"
        } else {
            "had completed"
        }
    ));
    if let Some(mut q) = new_q.take() {
        let r = q.synchronize(10 * SEC);
        let at = started.elapsed();
        notes.push(format!(
            "the new queue's fill kernel: {} at +{} ({})",
            res_text(&r),
            ms(at),
            if done.value() == 0 {
                "alongside the long kernel, still running then"
            } else {
                "the long kernel had completed by then"
            }
        ));
        r?;
        check_fill(&out_new, 0xabcd, "the new queue's fill kernel")?;
        let t = Instant::now();
        drop(q);
        notes.push(format!(
            "destroy the new queue (its work done): {}",
            ms(t.elapsed())
        ));
    }
    let r = done.wait(1, 10 * SEC);
    let long_time = started.elapsed();
    notes.push(format!(
        "the long kernel and its fill: {} at +{}",
        res_text(&r),
        ms(long_time)
    ));
    if let Err(e) = r {
        let f = dev.fault_report();
        if let Some(f) = &f {
            notes.push(format!("fault report: code {}: {}", f.code, f.what));
        }
        return Err(fail(format!(
            "the long kernel did not complete: {}",
            err_text(&e)
        )));
    }
    check_fill(&out, 0x5eed_1234, "the fill kernel after the long kernel")?;
    if let Some(f) = dev.fault_report() {
        return Err(fail(format!("the device reports a fault: {}", f.what)));
    }
    device_still_works(dev, &fill, 7)?;
    notes.push("afterwards: no fault reported; a new queue ran a kernel correctly".into());
    Ok(format!(
        "{create_text}, destroy {} / {} while a {} ms kernel ran; it completed correctly at +{}",
        ms(destroy_compute),
        ms(destroy_copy),
        LONG_NS / 1_000_000,
        ms(long_time)
    ))
}

/// A queue's channel error as the driver posted it, for the notes.
fn channel_error_text(q: &Queue) -> String {
    match q.track().channel_error() {
        Some(e) => format!(
            "channel error code {}{} ({})",
            e.code,
            e.address.map(|a| format!(" at {a:#x}")).unwrap_or_default(),
            e.what
        ),
        None => "no channel error posted".into(),
    }
}

/// A copy of 4 KiB on `q`, released on `sig` with `value`; the error names the call that failed.
fn copy_on(
    q: &mut Queue,
    dst: &Buffer,
    src: &Buffer,
    sig: &crate::core::Signal,
    value: u64,
) -> Result<(), (&'static str, Error)> {
    q.copy(dst, 0, src, 0, 4096).map_err(|e| ("copy", e))?;
    q.signal(sig, value).map_err(|e| ("signal", e))?;
    q.submit().map_err(|e| ("submit", e))?;
    sig.wait(value, SEC).map_err(|e| ("wait", e))
}

/// Check `fault_on_one_queue`, on a device of its own: queue A stores to an unmapped address
/// while queue B waits on the GPU for a signal and copy queue C is idle; then what B and C see,
/// whether new work runs, and whether the device must be reopened (and that reopening works).
pub(super) fn check_fault_on_one_queue(
    spec: Option<&str>,
    cubin_for: &dyn Fn(u32, u32) -> Option<&'static [u8]>,
    notes: &mut Notes,
) -> Result<String, CheckFail> {
    let dev = Device::open(spec)?;
    let (maj, min) = (dev.info().sm_major, dev.info().sm_minor);
    let m = dev.load_module(cubin_for(maj, min).ok_or(CheckFail::Skip)?)?;
    let fill = m.kernel("fill_u32")?;
    let gate = dev.create_signal(0)?;
    let (a_done, b_done, c_done) = (
        dev.create_signal(0)?,
        dev.create_signal(0)?,
        dev.create_signal(0)?,
    );
    let (src, dst) = (dev.alloc(4096, data())?, dev.alloc(4096, data())?);
    let mut a = dev.create_queue(QueueKind::Compute)?;
    let mut b = dev.create_queue(QueueKind::Compute)?;
    let mut c = dev.create_queue(QueueKind::Copy)?;
    for q in [&mut a, &mut b, &mut c] {
        q.set_timeout_ns(2 * SEC);
    }
    let _open = OpenGate(&gate);
    notes.push(format!(
        "backend {}: queues A (compute), B (compute), C (copy) of one device",
        backend_name(&dev)
    ));
    // B: work waiting on the GPU for the gate. C: a copy that completes before the fault.
    b.wait(&gate, 1)?;
    b.signal(&b_done, 1)?;
    b.submit()?;
    copy_on(&mut c, &dst, &src, &c_done, 1)
        .map_err(|(call, e)| fail(format!("C's copy before the fault: {call}: {e}")))?;
    // A: a store to 0x1000, below every mapping.
    let bad: u64 = 0x1000;
    a.launch(
        &fill,
        &cfg(1, 32),
        &params(&[
            &bad.to_le_bytes(),
            &1u32.to_le_bytes(),
            &32u32.to_le_bytes(),
        ]),
    )?;
    a.signal(&a_done, 1)?;
    a.submit()?;
    let t = Instant::now();
    let ra = a_done.wait(1, 10 * SEC);
    notes.push(format!(
        "A stores to {bad:#x}: A's wait returned {} after {}",
        res_text(&ra),
        ms(t.elapsed())
    ));
    match &ra {
        Err(e) if e.status == Status::DeviceFault => {}
        Err(e) => {
            return Err(fail(format!(
                "A's wait: expected TG_ERROR_DEVICE_FAULT, got {}",
                err_text(e)
            )))
        }
        Ok(()) => return Err(fail(format!("a store to {bad:#x} did not fault"))),
    }
    // The driver posts the error on the group's channels; give it 200 ms to reach all three.
    let t = Instant::now();
    let all = |qs: [&Queue; 3]| qs.iter().all(|q| q.track().channel_error().is_some());
    while !all([&a, &b, &c]) && t.elapsed() < Duration::from_millis(200) {
        std::thread::sleep(Duration::from_millis(5));
    }
    let with_error = [&a, &b, &c]
        .iter()
        .filter(|q| q.track().channel_error().is_some())
        .count();
    for (name, q) in [
        ("A (faulted)", &a),
        ("B (waiting on the GPU)", &b),
        ("C (idle copy queue)", &c),
    ] {
        notes.push(format!("queue {name}: {}", channel_error_text(q)));
    }
    notes.push(format!(
        "{with_error} of 3 queues saw a channel error (within {} of A's)",
        ms(t.elapsed())
    ));
    // B: the CPU opens its gate; does B's work still run?
    gate.set(1);
    let rb = b_done.wait(1, SEC);
    let b_ran = b_done.value() >= 1;
    notes.push(format!(
        "B after the CPU set its gate: wait returned {}; B's release {}",
        rb.as_ref().map_or_else(err_short, |_| "ok".into()),
        if b_ran {
            "ran (B's channel still runs)"
        } else {
            "did not run (B's channel is stopped)"
        }
    ));
    // C: new work.
    let rc = copy_on(&mut c, &dst, &src, &c_done, 2);
    notes.push(format!(
        "C, a new copy after the fault: {}",
        match &rc {
            Ok(()) => "ran".to_string(),
            Err((call, e)) => format!("refused at {call}: {}", err_short(e)),
        }
    ));
    // A new queue.
    let rn = dev.create_queue(QueueKind::Compute);
    notes.push(format!(
        "a new queue on the device: {}",
        rn.as_ref().map_or_else(err_short, |_| "ok".into())
    ));
    drop(rn);
    let report = dev.fault_report();
    match &report {
        Some(f) => notes.push(format!(
            "fault report: code {}, address {}: {}",
            f.code,
            f.address
                .map_or("not reported".into(), |a| format!("{a:#x}")),
            f.what
        )),
        None => notes.push("no fault report".into()),
    }
    let reopen_needed = rc.is_err();
    notes.push(format!(
        "the device must be reopened: {}",
        if reopen_needed {
            "yes (new work is refused)"
        } else {
            "no (new work still runs)"
        }
    ));
    let code = report.as_ref().map_or(0, |f| f.code);
    drop(_open);
    drop((
        a, b, c, fill, m, src, dst, gate, a_done, b_done, c_done, dev,
    ));

    // Recovery per the contract: close the device and open it again.
    let t = Instant::now();
    let dev = Device::open(spec)?;
    let m = dev.load_module(cubin_for(maj, min).ok_or(CheckFail::Skip)?)?;
    let fill = m.kernel("fill_u32")?;
    device_still_works(&dev, &fill, 0x600d)?;
    let s = dev.create_signal(0)?;
    let (src, dst) = (dev.alloc(4096, data())?, dev.alloc(4096, data())?);
    let mut c = dev.create_queue(QueueKind::Copy)?;
    copy_on(&mut c, &dst, &src, &s, 1)
        .map_err(|(call, e)| fail(format!("a copy on the reopened device: {call}: {e}")))?;
    notes.push(format!(
        "reopened the device: a kernel and a copy ran correctly ({} from the open)",
        ms(t.elapsed())
    ));

    // The documented contract: a fault stops every queue of the device; new work is refused
    // until the device is reopened.
    if report.is_none() {
        return Err(fail("TG_ERROR_DEVICE_FAULT without a fault report"));
    }
    if b_ran {
        return Err(fail(
            "B's work ran after A faulted: the driver stopped A's channel only (documented: every queue of the device stops)",
        ));
    }
    if let Ok(()) = rb {
        return Err(fail("B's wait passed after A faulted"));
    }
    if !reopen_needed {
        return Err(fail(
            "C ran new work after A faulted (documented: refused until the device is reopened)",
        ));
    }
    Ok(format!(
        "A's fault (code {code}): {with_error} of 3 queues saw a channel error, B's and C's work refused; reopened device works"
    ))
}

/// Check `queue_limit`, on a device of its own: compute queues are made until one is refused
/// (at most [`LIMIT_ATTEMPTS`], for at most [`LIMIT_TIME`]); the refusal's status and message,
/// that the last queue made works, that destroying one makes room, and that after destroying
/// them all the device works.
pub(super) fn check_queue_limit(
    spec: Option<&str>,
    notes: &mut Notes,
) -> Result<String, CheckFail> {
    let dev = Device::open(spec)?;
    let nvgpu = dev.info().backend == BackendKind::Nvgpu;
    notes.push(format!(
        "backend {}: compute queues of 16 entries made one after another{}",
        backend_name(&dev),
        if nvgpu {
            format!(" (the library's limit: {TSG_MAX_CHANNELS} channels, one channel group's)")
        } else {
            String::new()
        }
    ));
    let small = QueueConfig { depth: 16 };
    let mut qs: Vec<Queue> = Vec::new();
    let mut times: Vec<Duration> = Vec::new();
    let mut refusal: Option<(Error, Duration)> = None;
    let all = Instant::now();
    while qs.len() < LIMIT_ATTEMPTS && all.elapsed() < LIMIT_TIME {
        let t = Instant::now();
        match dev.create_queue_with(QueueKind::Compute, small) {
            Ok(q) => {
                times.push(t.elapsed());
                qs.push(q);
            }
            Err(e) => {
                refusal = Some((e, t.elapsed()));
                break;
            }
        }
    }
    let made = qs.len();
    if let Some((slowest_i, slowest)) = times.iter().enumerate().max_by_key(|(_, d)| **d) {
        let total: Duration = times.iter().sum();
        notes.push(format!(
            "{made} queues made in {} (mean {}, slowest {} for queue {})",
            ms(total),
            ms(total / made as u32),
            ms(*slowest),
            slowest_i + 1
        ));
    }
    match &refusal {
        Some((e, d)) => notes.push(format!(
            "queue {}: refused in {} with {}",
            made + 1,
            ms(*d),
            err_text(e)
        )),
        None => notes.push(format!(
            "no refusal: stopped after {made} queues ({} attempts at most, {} s at most)",
            LIMIT_ATTEMPTS,
            LIMIT_TIME.as_secs()
        )),
    }
    let sig = dev.create_signal(0)?;
    // The last queue made (the device's newest channel) works.
    if let Some(q) = qs.last_mut() {
        q.signal(&sig, 1)?;
        q.submit()?;
        let r = sig.wait(1, 5 * SEC);
        notes.push(format!(
            "a signal release on queue {made}: {}",
            res_text(&r)
        ));
        r?;
    }
    // Destroying one makes room for another.
    if refusal.is_some() && !qs.is_empty() {
        let t = Instant::now();
        drop(qs.pop());
        let destroyed = t.elapsed();
        let t = Instant::now();
        let again = dev.create_queue_with(QueueKind::Compute, small);
        notes.push(format!(
            "destroy one ({}), then make one: {} in {}",
            ms(destroyed),
            res_text(&again),
            ms(t.elapsed())
        ));
        qs.push(again.map_err(|e| {
            fail(format!(
                "a queue after destroying one at the limit: {}",
                err_text(&e)
            ))
        })?);
    }
    let t = Instant::now();
    let n = qs.len();
    qs.clear();
    notes.push(format!("destroy all {n}: {}", ms(t.elapsed())));
    let mut q = dev.create_queue(QueueKind::Compute)?;
    q.signal(&sig, 2)?;
    q.submit()?;
    let r = sig.wait(2, 5 * SEC);
    notes.push(format!(
        "afterwards a new queue's signal release: {}",
        res_text(&r)
    ));
    r?;
    if let Some(f) = dev.fault_report() {
        return Err(fail(format!("the device reports a fault: {}", f.what)));
    }
    let limit = TSG_MAX_CHANNELS as usize;
    match refusal {
        Some((e, _)) if nvgpu => {
            if made != limit || e.status != Status::OutOfMemory {
                return Err(fail(format!(
                    "queue {} refused with {} (documented for nvgpu: {limit} queues, then TG_ERROR_OUT_OF_MEMORY naming the limit)",
                    made + 1,
                    err_text(&e)
                )));
            }
            Ok(format!(
                "{made} queues; queue {}: {}; destroying makes room again",
                made + 1,
                status_name(e.status)
            ))
        }
        Some((e, _)) => Ok(format!(
            "{made} queues; queue {}: {}; destroying makes room again",
            made + 1,
            status_name(e.status)
        )),
        None if nvgpu => Err(fail(format!(
            "{made} queues made without a refusal (documented for nvgpu: at most {limit})"
        ))),
        None => Ok(format!(
            "{made} queues made without a refusal; all destroyed, the device works"
        )),
    }
}

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
pub(super) fn check_long_kernel_with_other_process(
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
