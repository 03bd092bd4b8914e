//! Latency probe for the RM backend (performance work): p50 of
//!   floor   — signal + submit + CPU wait (doorbell to CPU seeing the release)
//!   launch  — empty launch + signal + submit + CPU wait
//!   gate    — the GPU already waits on a host-memory semaphore ("gate"); the CPU sets it and
//!             waits for the release behind it (no doorbell on the measured path; the library's
//!             GPU waits let the scheduler switch TSGs, so this includes the switch back)
//!   gate+launch — the same with an empty launch between the GPU wait and the release
//!   gpu: grid — GPU time from a release just before an empty launch to the release after it
//!             (both timestamps written by the GPU); gpu: back-to-back — the same with no launch
//! libcuda is loaded and given a context first (when present) so the GPU runs at the clocks it
//! has in tegragpu-bench. Usage: latency_probe [reps]

#[path = "../fixtures.rs"]
mod fixtures;
use std::time::{Duration, Instant};
use tegragpu::core::{Device, QueueKind};

const TO: u64 = 5_000_000_000;

fn p50(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

fn cuda_context() -> Option<libloading::Library> {
    // SAFETY: documented CUDA driver API signatures.
    unsafe {
        let lib = libloading::Library::new("libcuda.so.1").ok()?;
        let ok = {
            let init: libloading::Symbol<unsafe extern "C" fn(u32) -> i32> =
                lib.get(b"cuInit").ok()?;
            let get: libloading::Symbol<unsafe extern "C" fn(*mut i32, i32) -> i32> =
                lib.get(b"cuDeviceGet").ok()?;
            let retain: libloading::Symbol<unsafe extern "C" fn(*mut *mut u8, i32) -> i32> =
                lib.get(b"cuDevicePrimaryCtxRetain").ok()?;
            let set: libloading::Symbol<unsafe extern "C" fn(*mut u8) -> i32> =
                lib.get(b"cuCtxSetCurrent").ok()?;
            let mut d = 0;
            let mut ctx = std::ptr::null_mut();
            init(0) == 0 && get(&mut d, 0) == 0 && retain(&mut ctx, d) == 0 && set(ctx) == 0
        };
        ok.then_some(lib)
    }
}

fn spin(us: u64) {
    let t = Instant::now();
    while t.elapsed() < Duration::from_micros(us) {
        std::hint::spin_loop();
    }
}

fn main() -> tegragpu::Result<()> {
    let reps: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(2000);
    let _cuda = cuda_context();
    println!("libcuda context: {}", _cuda.is_some());
    let dev = Device::open(None)?;
    let m = fixtures::fixture_module(&dev)?;
    let k = m.kernel("empty_kernel")?;
    let cfg = fixtures::launch(1, 32);
    let mut q = dev.create_queue(QueueKind::Compute)?;
    let sig = dev.create_signal(0)?;
    let gate = dev.create_signal(0)?;
    let before = dev.create_signal(0)?;
    let mut v = 0u64;
    for pass in 0..2 {
        let (mut fl, mut la, mut ga, mut gl) = (vec![], vec![], vec![], vec![]);
        let (mut gg, mut gb) = (vec![], vec![]);
        for _ in 0..reps {
            v += 1;
            let t = Instant::now();
            q.signal(&sig, v)?;
            q.submit()?;
            sig.wait(v, TO)?;
            fl.push(t.elapsed().as_secs_f64() * 1e6);
            v += 1;
            let t = Instant::now();
            q.launch(&k, &cfg, &[])?;
            q.signal(&sig, v)?;
            q.submit()?;
            sig.wait(v, TO)?;
            la.push(t.elapsed().as_secs_f64() * 1e6);
            for with_launch in [false, true] {
                v += 1;
                q.signal(&before, v)?;
                if with_launch {
                    q.launch(&k, &cfg, &[])?;
                }
                q.signal(&sig, v)?;
                q.submit()?;
                sig.wait(v, TO)?;
                let ns = sig.timestamp().wrapping_sub(before.timestamp()) as i64 as f64;
                if with_launch {
                    gg.push(ns / 1e3)
                } else {
                    gb.push(ns / 1e3)
                }
            }
            for with_launch in [false, true] {
                v += 1;
                q.wait(&gate, v)?;
                if with_launch {
                    q.launch(&k, &cfg, &[])?;
                }
                q.signal(&sig, v)?;
                q.submit()?;
                spin(30);
                let t = Instant::now();
                gate.set(v);
                sig.wait(v, TO)?;
                let us = t.elapsed().as_secs_f64() * 1e6;
                if with_launch {
                    gl.push(us)
                } else {
                    ga.push(us)
                }
            }
        }
        if pass == 1 {
            println!(
                "p50 us: floor {:.2}  launch {:.2}  gate {:.2}  gate+launch {:.2}",
                p50(&mut fl),
                p50(&mut la),
                p50(&mut ga),
                p50(&mut gl)
            );
            println!(
                "p50 us on the GPU: grid {:.2}  back-to-back releases {:.2}",
                p50(&mut gg),
                p50(&mut gb)
            );
        }
    }
    Ok(())
}
