//! Where the tail of launch + wait comes from. Each sample (an empty launch, a signal, a submit
//! and a CPU wait; or the signal-only floor) is split at the GPU timestamp of the signal's
//! release: the GPU side runs from the CPU clock before the launch to the GPU release, the CPU
//! side from the release to the CPU wait returning. The GPU timer and the CPU clock have an
//! unknown constant offset, so each side is reported relative to its own median; the samples
//! above the total's p99 show which side their excess is on. Before the samples, the probe
//! spins on the CPU clock alone for a second and counts the gaps of over 1 µs in which the
//! thread did not run (interrupts, the hypervisor): the share of a sample's length such gaps
//! cover predicts how many samples they stretch, with no GPU involved.
//! Usage: tail_probe [reps] [depth]   (default 5000 samples, on a queue of the default depth)

#[path = "../fixtures.rs"]
mod fixtures;
use std::time::{SystemTime, UNIX_EPOCH};
use tegragpu::core::{Device, QueueConfig, QueueKind};

const TO: u64 = 5_000_000_000;

fn now_ns() -> i128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i128)
}

fn pct(v: &[i128], p: f64) -> i128 {
    let mut s = v.to_vec();
    s.sort_unstable();
    s[((s.len() - 1) as f64 * p) as usize]
}

fn report(name: &str, samples: &[(i128, i128, i128)]) {
    let total: Vec<i128> = samples.iter().map(|s| s.2 - s.0).collect();
    let gpu: Vec<i128> = samples.iter().map(|s| s.1 - s.0).collect();
    let cpu: Vec<i128> = samples.iter().map(|s| s.2 - s.1).collect();
    let (t50, t99) = (pct(&total, 0.5), pct(&total, 0.99));
    let (g50, c50) = (pct(&gpu, 0.5), pct(&cpu, 0.5));
    println!(
        "{name}: total p50 {:.3} us, p99 {:.3} us ({:.2}x), max {:.3} us",
        t50 as f64 / 1e3,
        t99 as f64 / 1e3,
        t99 as f64 / t50 as f64,
        *total.iter().max().unwrap_or(&0) as f64 / 1e3
    );
    println!(
        "  GPU side (relative to its median): p99 +{:.3} us; CPU side: p99 +{:.3} us",
        (pct(&gpu, 0.99) - g50) as f64 / 1e3,
        (pct(&cpu, 0.99) - c50) as f64 / 1e3
    );
    let tail: Vec<usize> = (0..samples.len()).filter(|&i| total[i] > t99).collect();
    let (mut eg, mut ec) = (0i128, 0i128);
    for &i in &tail {
        eg += (gpu[i] - g50).max(0);
        ec += (cpu[i] - c50).max(0);
    }
    let n = tail.len().max(1) as f64;
    println!(
        "  the {} samples above p99: mean excess {:.3} us on the GPU side, {:.3} us on the CPU side",
        tail.len(),
        eg as f64 / n / 1e3,
        ec as f64 / n / 1e3
    );
}

/// Spins on the monotonic clock for `ms` milliseconds and reports the gaps of over 1 µs
/// between consecutive readings.
fn cpu_gaps(ms: u64) {
    let start = std::time::Instant::now();
    let end = std::time::Duration::from_millis(ms);
    let mut prev = start.elapsed();
    let mut gaps: Vec<u128> = Vec::new();
    loop {
        let t = start.elapsed();
        if t >= end {
            break;
        }
        let d = (t - prev).as_nanos();
        if d > 1000 {
            gaps.push(d);
        }
        prev = t;
    }
    gaps.sort_unstable();
    let total: u128 = gaps.iter().sum();
    let at = |p: f64| {
        gaps.get(((gaps.len().max(1) - 1) as f64 * p) as usize)
            .map_or(0.0, |&g| g as f64 / 1e3)
    };
    println!(
        "CPU clock alone, {ms} ms: {} gaps > 1 us ({:.0} per second), median {:.2} us, p90 {:.2} us, max {:.2} us, {:.3}% of the time",
        gaps.len(),
        gaps.len() as f64 * 1000.0 / ms as f64,
        at(0.5),
        at(0.9),
        at(1.0),
        total as f64 / (ms as f64 * 1e6) * 100.0
    );
}

fn main() -> tegragpu::Result<()> {
    let reps: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(5000);
    let depth: u32 = std::env::args()
        .nth(2)
        .and_then(|s| s.parse().ok())
        .unwrap_or(QueueConfig::default().depth);
    cpu_gaps(1000);
    let dev = Device::open(None)?;
    let m = fixtures::fixture_module(&dev)?;
    let k = m.kernel("empty_kernel")?;
    let mut q = dev.create_queue_with(QueueKind::Compute, QueueConfig { depth })?;
    let sig = dev.create_signal(0)?;
    let cfg = fixtures::launch(1, 32);
    println!("device: {}, queue depth {depth}", dev.info().name);
    let mut v = 0u64;
    for launch in [true, false] {
        let mut samples = Vec::with_capacity(reps);
        for i in 0..reps + 100 {
            v += 1;
            let t0 = now_ns();
            if launch {
                q.launch(&k, &cfg, &[])?;
            }
            q.signal(&sig, v)?;
            q.submit()?;
            sig.wait(v, TO)?;
            let t1 = now_ns();
            if i >= 100 {
                samples.push((t0, sig.timestamp() as i128, t1));
            }
        }
        report(
            if launch {
                "launch + wait"
            } else {
                "floor (signal only)"
            },
            &samples,
        );
    }
    cpu_gaps(1000);
    Ok(())
}
