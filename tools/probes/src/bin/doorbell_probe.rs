//! Doorbell probe for the RM backend (performance work): does the GPU pick up GPFIFO entries
//! written while it is still busy with earlier work when no doorbell announces them?
//!
//! Each case submits a ~0.6 ms fill of 1 GiB with a doorbell, then more work with
//! `submit_without_doorbell`, and polls the signals with plain reads (no waits, so nothing
//! rings a doorbell again) for up to 50 ms. Then the CPU cost of a submit (signal-only
//! segments) with and without the doorbell, 4000 each on an otherwise idle GPU.
//! Usage: doorbell_probe [reps]

#[path = "../fixtures.rs"]
mod fixtures;
use std::time::{Duration, Instant};
use tegragpu::core::{Device, MemFlags, QueueConfig, QueueKind, Signal};

const TO: u64 = 5_000_000_000;

fn params(va: u64, value: u32, n: u32) -> Vec<u8> {
    let mut p = va.to_le_bytes().to_vec();
    p.extend_from_slice(&value.to_le_bytes());
    p.extend_from_slice(&n.to_le_bytes());
    p
}

/// Microseconds until `s` reaches `v` by plain polling, or None after `limit`.
fn poll(s: &Signal, v: u64, start: Instant, limit: Duration) -> Option<f64> {
    while start.elapsed() < limit {
        if s.value() >= v {
            return Some(start.elapsed().as_secs_f64() * 1e6);
        }
        std::hint::spin_loop();
    }
    None
}

fn main() -> tegragpu::Result<()> {
    let reps: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(5);
    let dev = Device::open(None)?;
    let m = fixtures::fixture_module(&dev)?;
    let fill = m.kernel("fill_u32")?;
    let empty = m.kernel("empty_kernel")?;
    let n: u32 = 256 << 20;
    let buf = dev.alloc(4 * n as u64, MemFlags::default())?;
    let big = fixtures::launch(n / 256, 256);
    let one = fixtures::launch(1, 32);
    let mut q = dev.create_queue(QueueKind::Compute)?;
    let a = dev.create_signal(0)?;
    let b = dev.create_signal(0)?;
    let limit = Duration::from_millis(50);
    let mut v = 0u64;
    for case in [
        "busy: release only",
        "busy: empty launch + release",
        "idle: release only",
    ] {
        for _ in 0..reps {
            v += 1;
            let t = Instant::now();
            if !case.starts_with("idle") {
                q.launch(&fill, &big, &params(buf.gpu_va(), v as u32, n))?;
            }
            q.signal(&a, v)?;
            q.submit()?;
            if case.starts_with("idle") {
                a.wait(v, TO)?;
            }
            let t1 = Instant::now();
            if case.contains("launch") {
                q.launch(&empty, &one, &[])?;
            }
            q.signal(&b, v)?;
            q.submit_without_doorbell()?;
            let first = poll(&a, v, t, limit);
            let second = poll(&b, v, t1, limit);
            println!(
                "{case}: first done at {:?} us, second (no doorbell) at {:?} us after its submit",
                first.map(|x| x.round()),
                second.map(|x| x.round())
            );
            if second.is_none() {
                q.synchronize(TO)?; // rings again
            }
        }
    }
    // CPU cost of record + submit of a release, with and without the doorbell store.
    let mut dq = dev.create_queue_with(QueueKind::Compute, QueueConfig { depth: 16384 })?;
    for round in 0..3 {
        for ring in [true, false] {
            let k = 4000;
            let t = Instant::now();
            for _ in 0..k {
                v += 1;
                dq.signal(&b, v)?;
                if ring {
                    dq.submit()?;
                } else {
                    dq.submit_without_doorbell()?;
                }
            }
            let per = t.elapsed().as_secs_f64() * 1e6 / k as f64;
            dq.synchronize(TO)?;
            println!(
                "round {round}: signal + submit {} doorbell: {per:.3} us each",
                if ring { "with" } else { "without" }
            );
        }
    }
    Ok(())
}
