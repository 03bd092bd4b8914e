//! Check `queue_limit`: compute queues are made until the device refuses one.

use super::{backend_name, err_text, ms, res_text, status_name};
use crate::backend::nvgpu::TSG_MAX_CHANNELS;
use crate::core::{BackendKind, Device, Queue, QueueConfig, QueueKind};
use crate::error::{Error, Status};
use crate::selftest::{fail, CheckFail, Notes, SEC};
use std::time::{Duration, Instant};

/// At most this many queues are made by `queue_limit`, and for at most this long.
const LIMIT_ATTEMPTS: usize = 256;
const LIMIT_TIME: Duration = Duration::from_secs(20);

/// Check `queue_limit`, on a device of its own: compute queues are made until one is refused
/// (at most [`LIMIT_ATTEMPTS`], for at most [`LIMIT_TIME`]); the refusal's status and message,
/// that the last queue made works, that destroying one makes room, and that after destroying
/// them all the device works.
pub(in crate::selftest) fn check_queue_limit(
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
