//! tegragpu-bench: launch latency, submission cost, copy bandwidth and allocation cost of
//! libtegragpu, side by side with libcuda (loaded at run time with libloading) when present;
//! with two GPUs of the desktop driver, peer copies between them (`bench/peer.rs`).
//!
//! Usage: tegragpu-bench [--device SPEC] [--json] [--quick] [--no-cuda] [--peer-only] [--record-only N [--replay] [--capi [--owned]]]
//! (see `USAGE`; parsed with lexopt).
//!
//! `--record-only N` records and submits N empty-kernel launches and exits (used by
//! scripts/bench-instructions.sh to count instructions per launch under callgrind); with
//! `--capi` it makes them through the C API.

use std::time::{Duration, Instant};
use tegragpu::core::{Device, LaunchConfig, MemFlags, Queue, QueueKind};

#[path = "bench/capi.rs"]
mod capi;
#[path = "bench/peer.rs"]
mod peer;
#[path = "bench/peer_matrix.rs"]
mod peer_matrix;
#[path = "bench/replay.rs"]
mod replay;

const CUBIN_SM87: &[u8] = include_bytes!("../../tests/fixtures/cubin/kernels.sm_87.cubin");
const CUBIN_SM90: &[u8] = include_bytes!("../../tests/fixtures/cubin/kernels.sm_90.cubin");

struct Opts {
    device: Option<String>,
    json: bool,
    quick: bool,
    cuda: bool,
    record_only: Option<u64>,
    capi: bool,
    owned: bool,
    replay: bool,
    peer_only: bool,
}

/// Lines printed under the table (on stderr with `--json`): what ran the rows.
static NOTES: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

/// Add a line under the table.
fn note(line: String) {
    NOTES.lock().unwrap_or_else(|e| e.into_inner()).push(line);
}

fn take_notes() -> Vec<String> {
    std::mem::take(&mut *NOTES.lock().unwrap_or_else(|e| e.into_inner()))
}

const USAGE: &str = "\
usage: tegragpu-bench [--device emu|nvgpu|rm|rm:N] [--json] [--quick] [--no-cuda] [--peer-only] [--record-only N [--replay] [--capi [--owned]]]

Launch latency, CPU cost per launch, copy bandwidth and more, side by side with libcuda
when it is present (docs/performance.md).
  --device D       the device (default: TEGRAGPU_DEVICE, else this machine's GPU, else the
                   emulated Orin, with a notice on stderr)
  --json           print one JSON object instead of the table:
                     {\"device\": {\"spec\", \"name\", \"sm\", \"sm_count\", \"emulated\", \"backend\",
                                 \"driver\"},
                      \"config\": {\"quick\", \"libcuda\", \"version\"},
                      \"rows\": [{\"name\", \"unit\", \"ours\", \"libcuda\", \"ratio\", \"target\",
                                \"pass\"}, ...]}
                   (\"libcuda\": whether libcuda was measured; per row its figure or null)
  --quick          fewer iterations
  --no-cuda        skip the libcuda columns
  --peer-only      two desktop GPUs (the device and rm:1, or rm:0): every way this library
                   copies between them (each copy engine the driver lets a queue use, split
                   launches, several queues, the SM copy kernel at several grids, both
                   directions) beside cuMemcpyPeerAsync, one line each, then the peer rows
  --record-only N  only record + submit N launches (for instruction counts)
  --replay         with --record-only: N replays of a 10-launch command buffer, each submitted
  --capi           with --record-only: through the C API (tg_launch + tg_queue_submit;
                   with --replay tg_queue_replay_submit)
  --owned          with --capi: on a queue (and, with --replay, a command buffer) owned by the
                   thread (tg_queue_create_owned, tg_cmdbuf_create_owned)
  --help, -h       this text
  --version, -V    the library version";

/// `arg` as it was written, for messages.
fn arg_text(arg: &lexopt::Arg<'_>) -> String {
    match arg {
        lexopt::Arg::Short(c) => format!("-{c}"),
        lexopt::Arg::Long(l) => format!("--{l}"),
        lexopt::Arg::Value(v) => v.to_string_lossy().into_owned(),
    }
}

/// Parses the command line; `--help` and `--version` print and exit 0. `Err`: a usage error
/// (`main` exits 2).
fn parse_args() -> Result<Opts, String> {
    use lexopt::prelude::*;
    let mut o = Opts {
        device: None,
        json: false,
        quick: false,
        cuda: true,
        record_only: None,
        capi: false,
        owned: false,
        replay: false,
        peer_only: false,
    };
    let mut parser = lexopt::Parser::from_env();
    loop {
        let arg = match parser.next() {
            Ok(Some(arg)) => arg,
            Ok(None) => break,
            // `--json=1`: a value given to an option that takes none.
            Err(lexopt::Error::UnexpectedValue { option, value }) => {
                return Err(format!(
                    "unknown argument {option}={}",
                    value.to_string_lossy()
                ))
            }
            Err(e) => return Err(e.to_string()),
        };
        match arg {
            Long("device") => {
                let v = parser.value().map_err(|_| "--device needs a value")?;
                o.device = Some(v.string().map_err(|e| format!("--device: {e}"))?);
            }
            Long("json") => o.json = true,
            Long("quick") => o.quick = true,
            Long("no-cuda") => o.cuda = false,
            Long("capi") => o.capi = true,
            Long("owned") => o.owned = true,
            Long("replay") => o.replay = true,
            Long("peer-only") => o.peer_only = true,
            Long("record-only") => {
                let n = parser.value().map_err(|_| "--record-only needs N")?;
                let n = n.string().map_err(|e| format!("--record-only: {e}"))?;
                o.record_only = Some(n.parse().map_err(|e| format!("--record-only: {e}"))?);
            }
            Short('h') | Long("help") => {
                println!("{USAGE}");
                std::process::exit(0)
            }
            Short('V') | Long("version") => {
                println!("tegragpu-bench {}", env!("CARGO_PKG_VERSION"));
                std::process::exit(0)
            }
            other => return Err(format!("unknown argument {}", arg_text(&other))),
        }
    }
    Ok(o)
}

fn percentile(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
    if v.is_empty() {
        return f64::NAN;
    }
    let i = ((v.len() - 1) as f64 * p).round() as usize;
    v[i.min(v.len() - 1)]
}

/// One table row: value in `unit`; `better` = "lower" or "higher"; target as a factor of libcuda.
struct Row {
    name: &'static str,
    unit: &'static str,
    ours: f64,
    cuda: Option<f64>,
    target: Option<(&'static str, f64)>, // (description, ratio limit: ours/cuda <= limit (lower) or >= (higher))
    lower_is_better: bool,
    /// The target applies to `ours` itself (a µs budget or a ratio between two of our own
    /// figures), not to `ours / cuda`.
    absolute: bool,
}

fn cubin_for(dev: &Device) -> &'static [u8] {
    if dev.info().sm_major >= 9 {
        CUBIN_SM90
    } else {
        CUBIN_SM87
    }
}

const TO: u64 = 10_000_000_000;
/// Rounds of the CPU-cost rows (see bench_ours, step 3).
const ROUNDS: usize = 8;

struct Ours {
    dev: Device,
    /// The queue of the CPU-cost and throughput rows (deep: a whole burst fits).
    q: Queue,
    /// The queue of the latency rows: the default depth, as an application's queue.
    lq: Queue,
    empty: tegragpu::core::Kernel,
    _m: tegragpu::core::Module,
    sig: tegragpu::core::Signal,
    next: u64,
}

fn one() -> LaunchConfig {
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
    fn new(spec: Option<&str>) -> tegragpu::Result<Ours> {
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
fn bench_ours(
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

/// With no `--device` and no `TEGRAGPU_DEVICE`, on a machine without an NVIDIA GPU: `"emu"`,
/// after a notice on stderr, as `tegragpu-info` does. Otherwise `device` as it is (the library
/// picks the device; a bad spec fails there, with its message).
fn device_or_emulator(device: Option<String>) -> Option<String> {
    use tegragpu::backend::{choose_device_or_emulator, ChoiceSource};
    if device.is_some() {
        return device;
    }
    let env = tegragpu::core::device_from_env().ok().flatten();
    match choose_device_or_emulator(None, env.as_deref()) {
        Ok(c) if c.source == ChoiceSource::Fallback => {
            eprintln!(
                "tegragpu-bench: {}: benchmarking the emulated Orin (\"emu\"), whose figures are \
                 not a GPU's; --device picks the device",
                c.reason
            );
            Some("emu".to_string())
        }
        _ => None,
    }
}

fn main() {
    let mut o = match parse_args() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("tegragpu-bench: {e}");
            std::process::exit(2)
        }
    };
    if let Some(n) = o.record_only {
        let r = (|| -> tegragpu::Result<()> {
            if n > 900 {
                return Err(tegragpu::Error::invalid(
                    "--record-only N: N must be at most 900 (the rings hold them without waiting)",
                ));
            }
            if o.replay && n > 400 {
                return Err(tegragpu::Error::invalid(
                    "--record-only N --replay: N must be at most 400 (two ring entries each)",
                ));
            }
            if o.capi {
                record_only_capi(o.device.as_deref().unwrap_or("emu"), n, o.owned, o.replay)?;
                std::process::exit(0)
            }
            let mut ours = Ours::new(o.device.as_deref().or(Some("emu")))?;
            if o.replay {
                let mut cb = ours.dev.create_cmdbuf()?;
                for _ in 0..10 {
                    cb.launch(&ours.empty, &one(), &[])?;
                }
                cb.finish()?;
                for _ in 0..n {
                    ours.q.replay(&mut cb)?;
                    ours.q.submit()?;
                }
                std::process::exit(0)
            }
            for _ in 0..n {
                ours.q.launch(&ours.empty, &one(), &[])?;
                ours.q.submit()?;
            }
            // Exit without waiting: the count must not include polling for the GPU.
            std::process::exit(0)
        })();
        if let Err(e) = r {
            eprintln!("tegragpu-bench: {e}");
            std::process::exit(1)
        }
        return;
    }
    o.device = device_or_emulator(o.device.take());
    if o.peer_only {
        match peer_matrix::run(o.device.as_deref(), o.quick, o.cuda) {
            Ok(rows) => print_rows(&rows),
            Err(e) => {
                eprintln!("tegragpu-bench: {e}");
                std::process::exit(1)
            }
        }
        return;
    }
    let mut cuda = if o.cuda && o.device.as_deref() != Some("emu") {
        cuda::Cuda::load()
    } else {
        None
    };
    eprintln!(
        "libcuda: {}",
        if cuda.is_some() {
            "loaded, measured in the same run"
        } else {
            "not present (our numbers only)"
        }
    );
    let mut rows = Vec::new();
    let info = match bench_ours(&o, &mut rows, &mut cuda) {
        Ok(i) => i,
        Err(e) => {
            eprintln!("tegragpu-bench: {e}");
            std::process::exit(1)
        }
    };
    if o.json {
        println!("{}", json_report(&o, &info, cuda.is_some(), &rows));
        for n in take_notes() {
            eprintln!("note: {n}");
        }
    } else {
        print_rows(&rows);
    }
}

/// A figure as `--json` gives it: rounded to 4 decimals, `None` (JSON `null`) for NaN and
/// infinities, which JSON has no numbers for.
fn json_num(x: f64) -> Option<f64> {
    x.is_finite().then(|| (x * 1e4).round() / 1e4)
}

/// The `--json` output (its layout is in `USAGE`): one object with the device, the
/// configuration and the rows, keys in that order.
#[derive(serde::Serialize)]
struct JsonReport<'a> {
    device: JsonDevice<'a>,
    config: JsonConfig,
    rows: Vec<JsonRow>,
}

#[derive(serde::Serialize)]
struct JsonDevice<'a> {
    spec: Option<&'a str>,
    name: &'a str,
    sm: String,
    sm_count: u32,
    emulated: bool,
    backend: String,
    driver: &'a str,
}

#[derive(serde::Serialize)]
struct JsonConfig {
    quick: bool,
    libcuda: bool,
    version: &'static str,
}

#[derive(serde::Serialize)]
struct JsonRow {
    name: &'static str,
    unit: &'static str,
    ours: Option<f64>,
    libcuda: Option<f64>,
    ratio: Option<f64>,
    target: Option<&'static str>,
    pass: Option<bool>,
}

fn json_report(
    o: &Opts,
    info: &tegragpu::backend::DeviceInfo,
    libcuda: bool,
    rows: &[Row],
) -> String {
    let report = JsonReport {
        device: JsonDevice {
            spec: o.device.as_deref(),
            name: &info.name,
            sm: format!("sm_{}{}", info.sm_major, info.sm_minor),
            sm_count: info.sm_count,
            emulated: info.emulated,
            backend: format!("{:?}", info.backend),
            driver: &info.driver_version,
        },
        config: JsonConfig {
            quick: o.quick,
            libcuda,
            version: env!("CARGO_PKG_VERSION"),
        },
        rows: rows
            .iter()
            .map(|r| JsonRow {
                name: r.name,
                unit: r.unit,
                ours: json_num(r.ours),
                libcuda: r.cuda.and_then(json_num),
                ratio: r.cuda.and_then(|c| json_num(r.ours / c)),
                target: r.target.map(|t| t.0),
                pass: pass(r),
            })
            .collect(),
    };
    // Strings, numbers and plain structs only: serialising cannot fail.
    serde_json::to_string_pretty(&report).expect("the --json report serialises")
}

/// `--record-only N --capi`: the same launches through the C API (`tg_launch`,
/// `tg_queue_submit`), as a C program makes them.
fn record_only_capi(spec: &str, n: u64, owned: bool, replay: bool) -> tegragpu::Result<()> {
    use tegragpu::capi::*;
    use tegragpu::Status;
    let check = |what: &str, s: tg_status| -> tegragpu::Result<()> {
        if s == tg_status::TG_OK {
            Ok(())
        } else {
            Err(tegragpu::Error::new(
                Status::Internal,
                format!("{what} failed: {s:?}"),
            ))
        }
    };
    let spec = std::ffi::CString::new(spec)
        .map_err(|_| tegragpu::Error::invalid("--device: contains NUL"))?;
    let (mut dev, mut m, mut k, mut q) = (
        std::ptr::null_mut(),
        std::ptr::null_mut(),
        std::ptr::null_mut(),
        std::ptr::null_mut(),
    );
    // SAFETY: every pointer passed is valid for the call; handles come from the calls before.
    unsafe {
        // The cubin for the device's SM (the Rust device is closed before the C one opens).
        let cubin = cubin_for(&Device::open(Some(spec.to_str().unwrap_or("emu")))?);
        check("tg_device_open", tg_device_open(spec.as_ptr(), &mut dev))?;
        check(
            "tg_module_load",
            tg_module_load(dev, cubin.as_ptr().cast(), cubin.len(), &mut m),
        )?;
        check(
            "tg_module_get_kernel",
            tg_module_get_kernel(m, c"empty_kernel".as_ptr(), &mut k),
        )?;
        if owned {
            check(
                "tg_queue_create_owned",
                tg_queue_create_owned(dev, tg_queue_kind_arg(0), 0, &mut q),
            )?;
        } else {
            check(
                "tg_queue_create",
                tg_queue_create(dev, tg_queue_kind_arg(0), &mut q),
            )?;
        }
        let cfg = tg_launch_config {
            struct_size: std::mem::size_of::<tg_launch_config>() as u32,
            grid: [1, 1, 1],
            block: [32, 1, 1],
            dynamic_shared_bytes: 0,
            flags: 0,
            cluster: [0; 3],
        };
        if replay {
            let mut cb = std::ptr::null_mut();
            if owned {
                check(
                    "tg_cmdbuf_create_owned",
                    tg_cmdbuf_create_owned(dev, &mut cb),
                )?;
            } else {
                check("tg_cmdbuf_create", tg_cmdbuf_create(dev, &mut cb))?;
            }
            for _ in 0..10 {
                check(
                    "tg_cmdbuf_launch",
                    tg_cmdbuf_launch(cb, k, &cfg, std::ptr::null(), 0, std::ptr::null_mut()),
                )?;
            }
            check("tg_cmdbuf_finish", tg_cmdbuf_finish(cb))?;
            for _ in 0..n {
                check("tg_queue_replay_submit", tg_queue_replay_submit(q, cb))?;
            }
            return Ok(());
        }
        for _ in 0..n {
            check("tg_launch", tg_launch(q, k, &cfg, std::ptr::null(), 0))?;
            check("tg_queue_submit", tg_queue_submit(q))?;
        }
    }
    Ok(())
}

fn print_rows(rows: &[Row]) {
    println!(
        "{:<46} {:>12} {:>12} {:>8} {:>12} {:>6}",
        "benchmark", "tegragpu", "libcuda", "ratio", "target", "result"
    );
    for r in rows {
        let c = r.cuda.map(|c| format!("{c:.3}")).unwrap_or("-".into());
        let ratio = r
            .cuda
            .map(|c| format!("{:.3}", r.ours / c))
            .unwrap_or("-".into());
        let res = match pass(r) {
            Some(true) => "pass",
            Some(false) => "MISS",
            None => "-",
        };
        println!(
            "{:<46} {:>12} {:>12} {:>8} {:>12} {:>6}",
            format!("{} [{}]", r.name, r.unit),
            format!("{:.3}", r.ours),
            c,
            ratio,
            r.target.map(|t| t.0).unwrap_or("-"),
            res
        );
    }
    if rows
        .iter()
        .any(|r| r.name.starts_with("D2D copy") && r.cuda.is_some())
    {
        println!(
            "libcuda's D2D column is cuMemcpyDtoD, which runs a kernel on the SMs on desktop GPUs \
             (it has no copy-engine D2D path there; see docs/performance.md)"
        );
    }
    for n in take_notes() {
        println!("{n}");
    }
}

fn pass(r: &Row) -> Option<bool> {
    let (_, lim) = r.target?;
    let ratio = if r.absolute { r.ours } else { r.ours / r.cuda? };
    Some(if r.lower_is_better {
        ratio <= lim
    } else {
        ratio >= lim
    })
}

#[path = "bench/cuda.rs"]
mod cuda;
