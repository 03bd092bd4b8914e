//! Check `fault_on_one_queue`: one queue of several faults; what the others see, and whether
//! the device must be reopened.

use super::{backend_name, device_still_works, err_short, err_text, ms, res_text, OpenGate};
use crate::core::{Buffer, Device, Queue, QueueKind};
use crate::error::{Error, Status};
use crate::selftest::{cfg, data, fail, params, CheckFail, Notes, SEC};
use std::time::{Duration, Instant};

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
pub(in crate::selftest) fn check_fault_on_one_queue(
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
