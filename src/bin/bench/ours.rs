//! The rows of tegragpu-bench on our side (the Rust API, and the C API through `super::capi`),
//! each beside libcuda's figure when libcuda is loaded.

use super::cli::Opts;
use super::{capi, cuda, peer, replay};
use super::{cubin_for, percentile, Row, TO};
use std::time::{Duration, Instant};
use tegragpu::core::{Device, LaunchConfig, MemFlags, Queue, QueueKind};

/// Rounds of the CPU-cost rows (see bench_ours, step 3).
const ROUNDS: usize = 8;

pub struct Ours {
    pub dev: Device,
    /// The queue of the CPU-cost and throughput rows (deep: a whole burst fits).
    pub q: Queue,
    /// The queue of the latency rows: the default depth, as an application's queue.
    lq: Queue,
    pub empty: tegragpu::core::Kernel,
    _m: tegragpu::core::Module,
    sig: tegragpu::core::Signal,
    next: u64,
}

pub fn one() -> LaunchConfig {
    LaunchConfig {
        grid: [1, 1, 1],
        block: [32, 1, 1],
        dynamic_shared_bytes: 0,
        cooperative: false,
        concurrent: false,
        cluster: [0; 3],
    }
}

impl Ours {
    pub fn new(spec: Option<&str>) -> tegragpu::Result<Ours> {
        let dev = Device::open(spec)?;
        let m = dev.load_module(cubin_for(&dev))?;
        let empty = m.kernel("empty_kernel")?;
        // Deep enough for a whole 10,000-launch burst, so the CPU-cost rows time recording and
        // submission, not waiting for the GPU to free ring space.
        let q = dev.create_queue_with(
            QueueKind::Compute,
            tegragpu::core::QueueConfig { depth: 16384 },
        )?;
        // Latency on a queue of the default depth: a launch + wait touches the same few QMD slots
        // and ring pages again and again, as in an application. (On the 16384-deep queue every
        // launch of the 2,000 takes a slot the GPU has not read before.)
        let lq = dev.create_queue(QueueKind::Compute)?;
        let sig = dev.create_signal(0)?;
        Ok(Ours {
            dev,
            q,
            lq,
            empty,
            _m: m,
            sig,
            next: 0,
        })
    }
    fn launch_wait(&mut self) -> tegragpu::Result<()> {
        self.next += 1;
        self.lq.launch(&self.empty, &one(), &[])?;
        self.lq.signal(&self.sig, self.next)?;
        self.lq.submit()?;
        self.sig.wait(self.next, TO)
    }
    fn signal_wait(&mut self) -> tegragpu::Result<()> {
        self.next += 1;
        self.lq.signal(&self.sig, self.next)?;
        self.lq.submit()?;
        self.sig.wait(self.next, TO)
    }
}

/// Runs every row on the device `o.device`; returns the device's description.
pub fn bench_ours(
    o: &Opts,
    rows: &mut Vec<Row>,
    cuda: &mut Option<cuda::Cuda>,
) -> tegragpu::Result<tegragpu::backend::DeviceInfo> {
    let mut ours = Ours::new(o.device.as_deref())?;
    let info = ours.dev.info().clone();
    eprintln!(
        "device: {} (sm_{}{}, {} SMs, {}backend {:?}, driver {})",
        info.name,
        info.sm_major,
        info.sm_minor,
        info.sm_count,
        if info.emulated { "EMULATED, " } else { "" },
        info.backend,
        info.driver_version
    );
    let reps = if o.quick { 200 } else { 2000 };
    let burst = if o.quick { 1000 } else { 10_000 };

    // 1. Launch + wait latency.
    for _ in 0..50 {
        ours.launch_wait()?;
    }
    let mut lat = Vec::with_capacity(reps);
    for _ in 0..reps {
        let t = Instant::now();
        ours.launch_wait()?;
        lat.push(t.elapsed().as_secs_f64() * 1e6);
    }
    let mut c50 = None;
    if let Some(c) = cuda.as_mut() {
        let mut v = c.launch_latency(reps);
        if !v.is_empty() {
            c50 = Some(percentile(&mut v, 0.5));
        }
    }
    let p50 = percentile(&mut lat, 0.5);
    let p99 = percentile(&mut lat, 0.99);
    rows.push(Row {
        name: "empty launch + wait, p50",
        unit: "us",
        ours: p50,
        cuda: c50,
        target: Some(("<= 0.5x", 0.5)),
        lower_is_better: true,
        absolute: false,
    });
    rows.push(Row {
        name: "empty launch + wait, p99",
        unit: "us",
        ours: p99,
        cuda: c50,
        target: Some(("<= cuda p50", 1.0)),
        lower_is_better: true,
        absolute: false,
    });

    // 2. Floor: a host semaphore release round trip with no kernel.
    let mut fl = Vec::with_capacity(reps);
    for _ in 0..reps {
        let t = Instant::now();
        ours.signal_wait()?;
        fl.push(t.elapsed().as_secs_f64() * 1e6);
    }
    let floor = percentile(&mut fl, 0.5);
    rows.push(Row {
        name: "floor: signal only + wait, p50",
        unit: "us",
        ours: floor,
        cuda: None,
        target: None,
        lower_is_better: true,
        absolute: false,
    });
    // The performance targets on the GPU's side of a launch (not on the emulated Orin, whose
    // timings are CPU timings).
    let real = |t: (&'static str, f64)| (!info.emulated).then_some(t);
    rows.push(Row {
        name: "launch + wait minus floor, p50",
        unit: "us",
        ours: p50 - floor,
        cuda: None,
        target: real(("<= 1.0 us", 1.0)),
        lower_is_better: true,
        absolute: true,
    });
    rows.push(Row {
        name: "launch + wait, p99 / p50",
        unit: "x",
        ours: p99 / p50,
        cuda: None,
        target: real(("<= 1.5", 1.5)),
        lower_is_better: true,
        absolute: true,
    });

    // 3. CPU cost of record + submit, back to back: the Rust API, the C API (tg_launch +
    // tg_queue_submit on an owned queue, as c-examples/bench) and libcuda's cuLaunchKernel take
    // turns in ROUNDS rounds of burst / ROUNDS launches each, the first of each turn rotating
    // (the CPU's state changes during a run: a burst timed later came out ~25% cheaper than the
    // same burst timed first). Each row is the median of its rounds.
    ours.dev.synchronize(TO)?;
    let mut capi = capi::Capi::new(&ours.dev, cubin_for(&ours.dev), 16384)?;
    let per_round = burst / ROUNDS;
    let (mut rust_r, mut capi_r, mut cuda_r) = (Vec::new(), Vec::new(), Vec::new());
    let mut cuda_ok = cuda.is_some();
    for r in 0..ROUNDS {
        for j in 0..3 {
            match (r + j) % 3 {
                0 => {
                    let t = Instant::now();
                    for _ in 0..per_round {
                        ours.q.launch(&ours.empty, &one(), &[])?;
                        ours.q.submit()?;
                    }
                    rust_r.push(t.elapsed().as_secs_f64() * 1e6 / per_round as f64);
                    ours.dev.synchronize(TO)?;
                }
                1 => capi_r.push(capi.launch_cpu(per_round)?),
                _ => {
                    if let (true, Some(c)) = (cuda_ok, cuda.as_mut()) {
                        match c.launch_cpu_cost(per_round) {
                            Some(us) => cuda_r.push(us),
                            None => cuda_ok = false,
                        }
                    }
                }
            }
        }
    }
    let capi_vs_rust = replay::paired_ratio(&capi_r, &rust_r);
    let cpu_us = percentile(&mut rust_r, 0.5);
    let capi_us = percentile(&mut capi_r, 0.5);
    let cuda_cpu = cuda_ok.then(|| percentile(&mut cuda_r, 0.5));
    rows.push(Row {
        name: "CPU cost per launch (record+submit each)",
        unit: "us",
        ours: cpu_us,
        cuda: cuda_cpu,
        target: Some(("<= 0.15x", 0.15)),
        lower_is_better: true,
        absolute: false,
    });
    rows.push(Row {
        name: "CPU per launch, submit each, C API",
        unit: "us",
        ours: capi_us,
        cuda: cuda_cpu,
        target: Some(("<= 0.15x", 0.15)),
        lower_is_better: true,
        absolute: false,
    });
    rows.push(Row {
        name: "CPU per launch, submit each, C API / Rust",
        unit: "x",
        ours: capi_vs_rust,
        cuda: None,
        target: real(("<= 1.1", 1.1)),
        lower_is_better: true,
        absolute: true,
    });
    // The same launches recorded back to back and submitted once (one GPFIFO entry, one doorbell
    // per ring-space chunk).
    let t = Instant::now();
    for _ in 0..burst {
        ours.q.launch(&ours.empty, &one(), &[])?;
    }
    ours.q.submit()?;
    let batch_us = t.elapsed().as_secs_f64() * 1e6 / burst as f64;
    ours.dev.synchronize(TO)?;
    rows.push(Row {
        name: "CPU cost per launch (record, one submit)",
        unit: "us",
        ours: batch_us,
        cuda: cuda_cpu,
        target: Some(("<= 0.1x", 0.1)),
        lower_is_better: true,
        absolute: false,
    });

    // 4. Wall time for back-to-back dependent launches until the last completes.
    let t = Instant::now();
    for _ in 0..burst {
        ours.q.launch(&ours.empty, &one(), &[])?;
    }
    ours.next += 1;
    ours.q.signal(&ours.sig, ours.next)?;
    ours.q.submit()?;
    ours.sig.wait(ours.next, 60 * TO)?;
    let wall_ms = t.elapsed().as_secs_f64() * 1e3;
    let cuda_wall = cuda.as_mut().and_then(|c| c.dependent_wall(burst));
    rows.push(Row {
        name: "back-to-back launches, wall until last done",
        unit: "ms",
        ours: wall_ms,
        cuda: cuda_wall,
        target: Some(("<= 1x", 1.0)),
        lower_is_better: true,
        absolute: false,
    });

    // 5. Copy bandwidth.
    let sizes: &[u64] = if o.quick || info.emulated {
        &[64 << 20]
    } else {
        &[64 << 20, 1 << 30]
    };
    let mut cq = ours.dev.create_queue(QueueKind::Copy)?;
    let csig = ours.dev.create_signal(0)?;
    let mut cv = 0;
    for (kind, label) in [
        (QueueKind::Copy, "copy engine"),
        (QueueKind::Compute, "SM copy kernel"),
    ] {
        for &size in sizes {
            let flags = MemFlags::default();
            let a = ours.dev.alloc(size, flags)?;
            let b = ours.dev.alloc(size, flags)?;
            let iters = if info.emulated { 3 } else { 20 };
            let q = if kind == QueueKind::Copy {
                &mut cq
            } else {
                &mut ours.q
            };
            // GPU time between two semaphore releases (each writes a GPU timestamp) around the
            // copy, as libcuda's side is timed with events.
            let t0 = ours.dev.create_signal(0)?;
            // Warm-up: ~30 ms of the same copy, untimed (clocks ramp up under load).
            let warm = Instant::now();
            while warm.elapsed() < Duration::from_millis(if info.emulated { 1 } else { 30 }) {
                cv += 1;
                q.copy(&b, 0, &a, 0, size)?;
                q.signal(&csig, cv)?;
                q.submit()?;
                csig.wait(cv, 60 * TO)?;
            }
            let mut best = f64::MAX;
            for _ in 0..iters {
                cv += 1;
                q.signal(&t0, cv)?;
                q.copy(&b, 0, &a, 0, size)?;
                q.signal(&csig, cv)?;
                q.submit()?;
                csig.wait(cv, 60 * TO)?;
                let dt = csig.timestamp().saturating_sub(t0.timestamp()) as f64 / 1e9;
                if dt > 0.0 {
                    best = best.min(dt);
                }
            }
            let gbs = size as f64 / best / 1e9;
            let cgbs = cuda.as_mut().and_then(|c| c.copy_bandwidth(size, iters));
            let mib = size >> 20;
            rows.push(Row {
                name: Box::leak(
                    if mib >= 1024 {
                        format!("D2D copy {} GiB ({label})", mib >> 10)
                    } else {
                        format!("D2D copy {mib} MiB ({label})")
                    }
                    .into_boxed_str(),
                ),
                unit: "GB/s",
                ours: gbs,
                cuda: cgbs,
                target: Some((">= 0.95x", 0.95)),
                lower_is_better: false,
                absolute: false,
            });
        }
    }

    // 5b. SM write bandwidth into the same kind of memory (fill_u32 kernel), GPU timestamps.
    {
        let m = ours.dev.load_module(cubin_for(&ours.dev))?;
        let fill = m.kernel("fill_u32")?;
        let size: u64 = if info.emulated { 16 << 20 } else { 1 << 30 };
        let b = ours.dev.alloc(size, MemFlags::default())?;
        let n = (size / 4) as u32;
        let mut params = Vec::with_capacity(16);
        params.extend_from_slice(&b.gpu_va().to_le_bytes());
        params.extend_from_slice(&7u32.to_le_bytes());
        params.extend_from_slice(&n.to_le_bytes());
        let t0 = ours.dev.create_signal(0)?;
        let cfg = LaunchConfig {
            grid: [n.div_ceil(256), 1, 1],
            block: [256, 1, 1],
            dynamic_shared_bytes: 0,
            cooperative: false,
            concurrent: false,
            cluster: [0; 3],
        };
        let mut best = f64::MAX;
        for i in 0..5u64 {
            ours.next += 1;
            ours.q.signal(&t0, i + 1)?;
            ours.q.launch(&fill, &cfg, &params)?;
            ours.q.signal(&ours.sig, ours.next)?;
            ours.q.submit()?;
            ours.sig.wait(ours.next, 60 * TO)?;
            let dt = ours.sig.timestamp().saturating_sub(t0.timestamp()) as f64 / 1e9;
            if dt > 0.0 {
                best = best.min(dt);
            }
        }
        rows.push(Row {
            name: "SM fill 1 GiB (fill_u32 kernel), write",
            unit: "GB/s",
            ours: size as f64 / best / 1e9,
            cuda: None,
            target: None,
            lower_is_better: false,
            absolute: false,
        });
    }

    // 6. Command replay: a chain of 100 dependent kernels through the Rust API, the C API and
    // libcuda's graphs, taking turns (replay::measure).
    let rreps = if o.quick { 64 } else { 400 };
    let cubin = cubin_for(&ours.dev);
    let mut r_rust = replay::Ours::new(&ours.dev, cubin)?;
    let mut r_capi = capi.chain()?;
    let mut r_cuda = if cuda.is_some() {
        replay::Cuda::new(cubin)
    } else {
        None
    };
    let mut sides: Vec<Option<&mut dyn replay::Chain>> = vec![
        Some(&mut r_rust),
        Some(&mut r_capi),
        r_cuda.as_mut().map(|c| c as &mut dyn replay::Chain),
    ];
    let got = replay::measure(&mut sides, rreps)?;
    drop(sides);
    let (rn, cn_capi, cn) = (
        got[0].clone().unwrap_or_default(),
        got[1].clone().ok_or_else(|| {
            tegragpu::Error::new(
                tegragpu::Status::Internal,
                "the C API side of the replay benchmark failed",
            )
        })?,
        got[2].clone(),
    );
    drop(r_capi);
    drop(capi);
    rows.push(Row {
        name: "replay 100-kernel chain: CPU per replay",
        unit: "us",
        ours: rn.replay_cpu_us,
        cuda: cn.as_ref().map(|c| c.replay_cpu_us),
        target: Some(("<= 0.1x", 0.1)),
        lower_is_better: true,
        absolute: false,
    });
    rows.push(Row {
        name: "replay 100-kernel chain: CPU, C API",
        unit: "us",
        ours: cn_capi.replay_cpu_us,
        cuda: cn.as_ref().map(|c| c.replay_cpu_us),
        target: Some(("<= 0.1x", 0.1)),
        lower_is_better: true,
        absolute: false,
    });
    rows.push(Row {
        name: "replay 100-kernel chain: CPU, C API / Rust",
        unit: "x",
        ours: replay::paired_ratio(&cn_capi.cpu_rounds, &rn.cpu_rounds),
        cuda: None,
        target: real(("<= 1.1", 1.1)),
        lower_is_better: true,
        absolute: true,
    });
    rows.push(Row {
        name: "replay 100-kernel chain: to completion, p50",
        unit: "us",
        ours: rn.replay_wall_us,
        cuda: cn.as_ref().map(|c| c.replay_wall_us),
        target: Some(("<= 0.8x", 0.8)),
        lower_is_better: true,
        absolute: false,
    });
    rows.push(Row {
        name: "update 1 kernel argument + replay: CPU, p50",
        unit: "us",
        ours: rn.update_replay_cpu_us,
        cuda: cn.as_ref().map(|c| c.update_replay_cpu_us),
        target: Some(("<= 0.1x", 0.1)),
        lower_is_better: true,
        absolute: false,
    });
    rows.push(Row {
        name: "update 1 argument + replay: CPU, C API",
        unit: "us",
        ours: cn_capi.update_replay_cpu_us,
        cuda: cn.as_ref().map(|c| c.update_replay_cpu_us),
        target: Some(("<= 0.1x", 0.1)),
        lower_is_better: true,
        absolute: false,
    });
    rows.push(Row {
        name: "update 1 argument + replay: C API / Rust",
        unit: "x",
        ours: replay::paired_ratio(&cn_capi.update_rounds, &rn.update_rounds),
        cuda: None,
        target: real(("<= 1.1", 1.1)),
        lower_is_better: true,
        absolute: true,
    });

    // 7. Allocate + free 256 MiB: after a warm-up, ours and libcuda's alternate so that drift
    // in the driver's state (page-table directories, allocator caches) hits both alike.
    let (warm, n) = if o.quick { (3, 10) } else { (10, 50) };
    let (mut v, mut cv) = (Vec::new(), Vec::new());
    let mut cuda_ok = cuda.is_some();
    for i in 0..warm + n {
        let t = Instant::now();
        let b = ours.dev.alloc(256 << 20, MemFlags::default())?;
        drop(b);
        let dt = t.elapsed().as_secs_f64() * 1e6;
        let cdt = if cuda_ok {
            cuda.as_mut().and_then(|c| c.alloc_free_once(256 << 20))
        } else {
            None
        };
        cuda_ok = cdt.is_some();
        if i >= warm {
            v.push(dt);
            cv.extend(cdt);
        }
    }
    let calloc = (cuda_ok && !cv.is_empty()).then(|| percentile(&mut cv, 0.5));
    rows.push(Row {
        name: "alloc + free 256 MiB, p50",
        unit: "us",
        ours: percentile(&mut v, 0.5),
        cuda: calloc,
        target: Some(("<= 1x", 1.0)),
        lower_is_better: true,
        absolute: false,
    });

    // 8. Peer copies to and from a second GPU (RM devices with a peer path only).
    let spec = o
        .device
        .clone()
        .or_else(|| tegragpu::core::device_from_env().ok().flatten());
    rows.extend(peer::rows(
        &ours.dev,
        spec.as_deref(),
        o.quick,
        cuda.is_some(),
    ));
    Ok(info)
}
