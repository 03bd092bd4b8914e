//! Check `queue_create_destroy_during_long_kernel`: queues made, used and destroyed while
//! another queue of the device runs a long kernel.

use super::{
    backend_name, check_fill, device_still_works, err_text, launch_fill, ms, res_text, spin_params,
    status_name, EndSpin, WORDS,
};
use crate::core::{Device, Module, Queue, QueueKind};
use crate::error::Status;
use crate::selftest::{cfg, data, fail, CheckFail, Notes, SEC};
use std::time::{Duration, Instant};

/// The long kernel of `queue_create_destroy_during_long_kernel`.
const LONG_NS: u64 = SEC;

/// Check `queue_create_destroy_during_long_kernel`: a 1-s kernel runs on one queue while
/// another queue is made and used, and two made before it are destroyed; then the long kernel's
/// result is checked and the device is used again.
pub(in crate::selftest) fn check_create_destroy_during_long_kernel(
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
