//! `tegragpu-bench --peer-only`: every way this library can copy between two GPUs of the
//! desktop driver, measured in one run, so that one run on the hardware says which to use.
//!
//! Device A is the bench's device, B the other GPU (`rm:1`, or `rm:0`). Each candidate runs on
//! A's queues: **write** copies A's memory into B's, **read** copies B's into A's, **local**
//! copies within A (the engine's own rate, for comparison). The candidates: a copy queue on the
//! default engine, on the GR copy engine and on each logical copy engine (LCE) the driver
//! lists (a queue on an engine the driver refuses prints the refusal); on the LCE the driver
//! recommends for peer writes (`p2pOptimalWriteCEs`), pipelined pieces, multi-line launches
//! and 2 or 4 queues sharing the copy; one queue on every async LCE at once; the SM copy
//! kernel through `Queue::copy` and `tg_copy` at 1 to 32 blocks per SM; both directions at
//! once; and `cuMemcpyPeerAsync` in the same process. Every line names the engine the queue
//! reports (`Queue::engine`), the GB/s at 256 MiB and 1 GiB (best of the iterations, GPU
//! timestamps of releases around the copy; both directions: CPU time), and whether sampled
//! bytes of the destination are right. Then the peer rows of the full bench.

use super::peer::{peer_spec, CudaPeer};
use super::Row;
use std::io::Write as _;
use std::time::Instant;
use tegragpu::core::{
    Buffer, CopyEngine, CopySplit, Device, Kernel, LaunchConfig, MemFlags, Queue, QueueConfig,
    QueueKind, Signal,
};
use tegragpu::{Error, Status};

/// The two copy sizes on GPUs.
const SIZES: [u64; 2] = [256 << 20, 1 << 30];
/// The sizes on the emulated Orin, where the matrix runs with A and B the same device (a
/// check of the bench itself; its figures are not a GPU's).
const EMU_SIZES: [u64; 2] = [1 << 20, 4 << 20];
/// The longest a matrix wait takes before the candidate counts as hung (1 GiB at 1 GB/s is
/// ~1 s).
const WAIT_NS: u64 = 20_000_000_000;
const PATTERN_CHUNK: u64 = 4 << 20;

/// Where the copy goes, from device A's point of view.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Dir {
    /// A's memory → B's.
    Write,
    /// B's memory → A's.
    Read,
    /// A's memory → A's.
    Local,
}

impl Dir {
    fn name(self) -> &'static str {
        match self {
            Dir::Write => "write A->B",
            Dir::Read => "read B->A",
            Dir::Local => "local A->A",
        }
    }
}

/// What runs a candidate on device A.
#[derive(Clone)]
enum Exec {
    /// Copy queues, one per engine, each copying an equal share.
    Ce {
        engines: Vec<CopyEngine>,
        split: CopySplit,
    },
    /// A compute queue: `Queue::copy` (grid `None`) or `tg_copy` launched at `grid` blocks.
    Sm { grid: Option<u32> },
}

struct Cand {
    name: String,
    dir: Dir,
    exec: Exec,
}

/// Byte `o` of pattern `seed`.
fn pattern_byte(seed: u64, o: u64) -> u8 {
    let w = (o / 8) ^ seed.wrapping_mul(0xD6E8_FEB8_6659_FD93);
    let w = (w ^ (w >> 31)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    (w >> (8 * (o % 8))) as u8
}

fn fill_pattern(q: &mut Queue, buf: &Buffer, seed: u64) -> tegragpu::Result<()> {
    let mut chunk = vec![0u8; PATTERN_CHUNK as usize];
    let mut off = 0;
    while off < buf.size() {
        let n = (buf.size() - off).min(PATTERN_CHUNK) as usize;
        for (i, b) in chunk[..n].iter_mut().enumerate() {
            *b = pattern_byte(seed, off + i as u64);
        }
        q.write(buf, off, &chunk[..n])?;
        off += n as u64;
    }
    q.synchronize(WAIT_NS)
}

/// Sampled bytes of `dst[0..size)` (17 blocks of 4 KiB, the last at the end) against pattern
/// `seed`: `ok` or the first wrong byte.
fn check(q: &mut Queue, dst: &Buffer, size: u64, seed: u64) -> tegragpu::Result<String> {
    let mut block = vec![0u8; 4096];
    for k in 0..=16u64 {
        let off = if k == 16 {
            size - 4096
        } else {
            (size / 16 * k) & !4095
        };
        q.read(dst, off, &mut block)?;
        for (i, &b) in block.iter().enumerate() {
            let o = off + i as u64;
            if b != pattern_byte(seed, o) {
                return Ok(format!(
                    "WRONG: byte {o} is {b:#04x}, expected {:#04x}",
                    pattern_byte(seed, o)
                ));
            }
        }
    }
    Ok("data ok".to_string())
}

fn lce_list(mask: u32) -> Vec<u32> {
    (0..32).filter(|i| mask & (1 << i) != 0).collect()
}

fn gbs(bytes: u64, secs: f64) -> f64 {
    bytes as f64 / secs / 1e9
}

/// `256 MiB`, `1 GiB`.
fn size_label(size: u64) -> String {
    if size >= 1 << 30 {
        format!("{} GiB", size >> 30)
    } else {
        format!("{} MiB", size >> 20)
    }
}

fn cell(v: Option<f64>) -> String {
    v.map(|g| format!("{g:8.1} GB/s"))
        .unwrap_or_else(|| "       - GB/s".into())
}

struct Matrix {
    a: Device,
    b: Device,
    a_src: Buffer,
    a_dst: Buffer,
    b_src: Buffer,
    b_dst: Buffer,
    /// Copy queues on each device for clearing and checking destinations.
    qa: Queue,
    qb: Queue,
    kernel: Option<Kernel>,
    iters: usize,
    sizes: [u64; 2],
    /// (candidate, engine, GB/s at each size), for the summary.
    results: Vec<(String, Dir, String, [Option<f64>; 2])>,
}

fn line(s: &str) {
    println!("{s}");
    let _ = std::io::stdout().flush();
}

impl Matrix {
    fn clear(&mut self, dst_on_b: bool, size: u64) -> tegragpu::Result<()> {
        let (q, d) = if dst_on_b {
            (&mut self.qb, &self.b_dst)
        } else {
            (&mut self.qa, &self.a_dst)
        };
        q.fill(d, 0, 0, 4, size / 4)?;
        q.synchronize(WAIT_NS)
    }

    fn buffers(&self, dir: Dir) -> (&Buffer, &Buffer, bool, u64) {
        match dir {
            Dir::Write => (&self.b_dst, &self.a_src, true, 0xA),
            Dir::Read => (&self.a_dst, &self.b_src, false, 0xB),
            Dir::Local => (&self.a_dst, &self.a_src, false, 0xA),
        }
    }

    /// Record the copy of `[off, off + n)` on `q`.
    fn record(
        &self,
        q: &mut Queue,
        grid: Option<u32>,
        dir: Dir,
        off: u64,
        n: u64,
    ) -> tegragpu::Result<()> {
        let (dst, src, _, _) = self.buffers(dir);
        match (grid, &self.kernel) {
            (Some(g), Some(k)) => {
                let mut p = [0u8; 24];
                p[0..8].copy_from_slice(&(dst.gpu_va() + off).to_le_bytes());
                p[8..16].copy_from_slice(&(src.gpu_va() + off).to_le_bytes());
                p[16..24].copy_from_slice(&n.to_le_bytes());
                let cfg = LaunchConfig {
                    grid: [g, 1, 1],
                    block: [tegragpu::builtin::COPY_BLOCK, 1, 1],
                    dynamic_shared_bytes: 0,
                    cooperative: false,
                    concurrent: false,
                    cluster: [0; 3],
                };
                q.launch(k, &cfg, &p)
            }
            _ => q.copy(dst, off, src, off, n),
        }
    }

    /// One candidate at both sizes; prints its line.
    fn one(&mut self, c: &Cand) -> tegragpu::Result<()> {
        let cfg = QueueConfig::default();
        let mut qs: Vec<Queue> = Vec::new();
        let grid = match &c.exec {
            Exec::Ce { engines, split } => {
                for &e in engines {
                    let q = match e {
                        CopyEngine::Auto => self.a.create_queue(QueueKind::Copy),
                        e => self.a.create_copy_queue(e, cfg),
                    };
                    match q {
                        Ok(mut q) => {
                            q.set_copy_split(*split)?;
                            qs.push(q);
                        }
                        Err(e) => {
                            line(&format!(
                                "peer matrix | {:<10} | {:<50} | refused: {e}",
                                c.dir.name(),
                                c.name
                            ));
                            return Ok(());
                        }
                    }
                }
                None
            }
            Exec::Sm { grid } => {
                qs.push(self.a.create_queue(QueueKind::Compute)?);
                *grid
            }
        };
        let mut engines: Vec<String> = Vec::new();
        for q in &qs {
            let e = q.engine();
            if !engines.contains(&e) {
                engines.push(e);
            }
        }
        let mut engine = engines.join(" + ");
        if qs.len() > 1 {
            engine = format!("{} queues: {engine}", qs.len());
        }
        if let Some(g) = grid {
            engine = format!("SMs, tg_copy at {g} blocks of 256 threads");
        } else if matches!(c.exec, Exec::Sm { .. }) {
            engine = "SMs, tg_copy at one block per 4 KiB (Queue::copy)".into();
        }
        let sigs: Vec<(Signal, Signal)> = (0..qs.len())
            .map(|_| Ok((self.a.create_signal(0)?, self.a.create_signal(0)?)))
            .collect::<tegragpu::Result<_>>()?;
        let mut v = 0u64;
        let mut out = [None, None];
        let mut data = Vec::new();
        for (si, size) in self.sizes.into_iter().enumerate() {
            let (_, _, dst_on_b, seed) = self.buffers(c.dir);
            self.clear(dst_on_b, size)?;
            let k = qs.len() as u64;
            let part = (size / k) & !4095;
            let mut best = f64::MAX;
            for it in 0..self.iters + 2 {
                v += 1;
                for (i, q) in qs.iter_mut().enumerate() {
                    let off = i as u64 * part;
                    let n = if i as u64 == k - 1 { size - off } else { part };
                    q.signal(&sigs[i].0, v)?;
                    self.record(q, grid, c.dir, off, n)?;
                    q.signal(&sigs[i].1, v)?;
                }
                for q in qs.iter_mut() {
                    q.submit()?;
                }
                for s in &sigs {
                    s.1.wait(v, WAIT_NS)?;
                }
                let t0 = sigs.iter().map(|s| s.0.timestamp()).min().unwrap_or(0);
                let t1 = sigs.iter().map(|s| s.1.timestamp()).max().unwrap_or(0);
                let dt = t1.saturating_sub(t0) as f64 / 1e9;
                // The first two are warm-up.
                if it >= 2 && dt > 0.0 {
                    best = best.min(dt);
                }
            }
            out[si] = (best < f64::MAX).then(|| gbs(size, best));
            let d = match c.dir {
                Dir::Write => check(&mut self.qb, &self.b_dst, size, seed)?,
                Dir::Read | Dir::Local => check(&mut self.qa, &self.a_dst, size, seed)?,
            };
            if d != "data ok" || data.is_empty() {
                data.push(d);
            }
        }
        line(&format!(
            "peer matrix | {:<10} | {:<50} | {} {} | {} {} | {} | ran on: {engine}",
            c.dir.name(),
            c.name,
            size_label(self.sizes[0]),
            cell(out[0]),
            size_label(self.sizes[1]),
            cell(out[1]),
            data.join("; ")
        ));
        self.results.push((c.name.clone(), c.dir, engine, out));
        Ok(())
    }

    /// Both devices copy into the other at once, each on its own queue; CPU time.
    fn both(&mut self, name: &str, ea: Exec, eb: Exec) -> tegragpu::Result<()> {
        let make = |d: &Device, e: &Exec| -> tegragpu::Result<Queue> {
            match e {
                Exec::Ce { engines, .. } => match engines[0] {
                    CopyEngine::Auto => d.create_queue(QueueKind::Copy),
                    x => d.create_copy_queue(x, QueueConfig::default()),
                },
                Exec::Sm { .. } => d.create_queue(QueueKind::Compute),
            }
        };
        let (mut qa, mut qb) = match (make(&self.a, &ea), make(&self.b, &eb)) {
            (Ok(x), Ok(y)) => (x, y),
            (Err(e), _) | (_, Err(e)) => {
                line(&format!(
                    "peer matrix | {:<10} | {:<50} | refused: {e}",
                    "both ways", name
                ));
                return Ok(());
            }
        };
        let engine = format!("A: {}, B: {}", qa.engine(), qb.engine());
        let (sa, sb) = (self.a.create_signal(0)?, self.b.create_signal(0)?);
        let mut v = 0u64;
        let mut out = [None, None];
        let mut data = Vec::new();
        for (si, size) in self.sizes.into_iter().enumerate() {
            self.clear(true, size)?;
            self.clear(false, size)?;
            let mut best = f64::MAX;
            for it in 0..self.iters + 2 {
                v += 1;
                qa.copy(&self.b_dst, 0, &self.a_src, 0, size)?;
                qa.signal(&sa, v)?;
                qb.copy(&self.a_dst, 0, &self.b_src, 0, size)?;
                qb.signal(&sb, v)?;
                let t = Instant::now();
                qa.submit()?;
                qb.submit()?;
                sa.wait(v, WAIT_NS)?;
                sb.wait(v, WAIT_NS)?;
                if it >= 2 {
                    best = best.min(t.elapsed().as_secs_f64());
                }
            }
            out[si] = Some(gbs(2 * size, best));
            for (q, dst, seed) in [
                (&mut self.qb, &self.b_dst, 0xA),
                (&mut self.qa, &self.a_dst, 0xB),
            ] {
                let d = check(q, dst, size, seed)?;
                if d != "data ok" || data.is_empty() {
                    data.push(d);
                }
            }
        }
        line(&format!(
            "peer matrix | {:<10} | {:<50} | {} {} | {} {} | {} | ran on: {engine}",
            "both ways",
            name,
            size_label(self.sizes[0]),
            cell(out[0]),
            size_label(self.sizes[1]),
            cell(out[1]),
            data.join("; ")
        ));
        Ok(())
    }
}

/// The matrix, then the peer rows of the full bench (returned for the table).
pub fn run(spec: Option<&str>, quick: bool, with_cuda: bool) -> tegragpu::Result<Vec<Row>> {
    let a = Device::open(spec)?;
    let pair = if a.info().emulated {
        Some((0, 0))
    } else {
        peer_spec(&a, spec)
    };
    let Some((ia, ib)) = pair else {
        return Err(Error::new(
            Status::NotSupported,
            format!(
                "--peer-only: peer copies need two GPUs of the desktop driver (--device rm:N); {} is not one",
                a.info().name
            ),
        ));
    };
    let emulated = a.info().emulated;
    let b = if emulated {
        line("peer matrix: the emulated Orin: A and B are the same device, copies stay in it and the figures are not a GPU's (a check of the bench itself)");
        a.clone()
    } else {
        Device::open(Some(&format!("rm:{ib}"))).map_err(|e| {
            Error::new(
                e.status,
                format!("--peer-only: opening the second GPU rm:{ib}: {e}"),
            )
        })?
    };
    let (ab, ba) = if emulated {
        let same = || tegragpu::core::PeerInfo {
            can_access: true,
            ..tegragpu::core::PeerInfo::refused("")
        };
        (same(), same())
    } else {
        (a.peer_info(&b)?, b.peer_info(&a)?)
    };
    let (la, lb) = if emulated {
        ("emu".to_string(), "emu (the same device)".to_string())
    } else {
        (format!("rm:{ia}"), format!("rm:{ib}"))
    };
    line(&format!(
        "peer matrix: A = {la} {} (sm_{}{}, {} SMs), B = {lb} {}, driver {}",
        a.info().name,
        a.info().sm_major,
        a.info().sm_minor,
        a.info().sm_count,
        b.info().name,
        a.info().driver_version
    ));
    for (dir, i) in [("A -> B", &ab), ("B -> A", &ba)] {
        if emulated {
            break;
        }
        line(&format!(
            "peer matrix: {dir}: {}; the driver recommends LCEs {:?} for writes (mask {:#x}), {:?} for reads (mask {:#x}); {}",
            i.summary(),
            lce_list(i.optimal_write_ces),
            i.optimal_write_ces,
            lce_list(i.optimal_read_ces),
            i.optimal_read_ces,
            i.detail
        ));
    }
    if !ab.can_access || !ba.can_access {
        return Err(Error::new(
            Status::NotSupported,
            "--peer-only: no peer path between the two GPUs (see above)",
        ));
    }
    if !emulated {
        a.enable_peer_access(&b)?;
        b.enable_peer_access(&a)?;
    }
    let sizes = if emulated { EMU_SIZES } else { SIZES };
    let engines = a.copy_engines();
    for e in &engines {
        line(&format!(
            "peer matrix: A's LCE{}: engine type {:#x}, caps {:02x?}{}, PCE mask {:#x} ({} PCEs){}{}",
            e.index,
            e.engine_type,
            e.caps,
            if e.is_grce() { " (GRCE)" } else { "" },
            e.pce_mask,
            e.pce_count(),
            if ab.optimal_write_ces.checked_shr(e.index).unwrap_or(0) & 1 != 0 { ", recommended for writes to B" } else { "" },
            if ab.optimal_read_ces.checked_shr(e.index).unwrap_or(0) & 1 != 0 { ", recommended for reads from B" } else { "" },
        ));
    }
    if engines.is_empty() {
        line("peer matrix: the driver listed no copy engines of A");
    }

    let iters = if quick { 3 } else { 8 };
    let flags = MemFlags::default();
    let big = sizes[1];
    let mut qa = a.create_queue(QueueKind::Copy)?;
    let mut qb = b.create_queue(QueueKind::Copy)?;
    let (a_src, a_dst) = (a.alloc(big, flags)?, a.alloc(big, flags)?);
    let (b_src, b_dst) = (b.alloc(big, flags)?, b.alloc(big, flags)?);
    let t = Instant::now();
    fill_pattern(&mut qa, &a_src, 0xA)?;
    fill_pattern(&mut qb, &b_src, 0xB)?;
    line(&format!(
        "peer matrix: sources written in {:.1} s; {} timed copies per size after 2 untimed; the helper copy queues run on A: {}, B: {}",
        t.elapsed().as_secs_f64(),
        iters,
        qa.engine(),
        qb.engine()
    ));
    let kernel = {
        let i = a.info();
        match tegragpu::builtin::copy_cubin(i.sm_major, i.sm_minor) {
            Some(c) => Some(a.load_module(c)?.kernel(tegragpu::builtin::COPY_KERNEL)?),
            None => None,
        }
    };
    let mut m = Matrix {
        a: a.clone(),
        b: b.clone(),
        a_src,
        a_dst,
        b_src,
        b_dst,
        qa,
        qb,
        kernel,
        iters,
        sizes,
        results: Vec::new(),
    };

    // The engines to look at closely: the LCEs the driver recommends for writes to B, else
    // the async LCE with the most PCEs, else (no engines listed) the default one.
    let mut targets: Vec<CopyEngine> = lce_list(ab.optimal_write_ces)
        .into_iter()
        .map(CopyEngine::Lce)
        .collect();
    if targets.is_empty() {
        if let Some(e) = engines
            .iter()
            .filter(|e| !e.is_grce())
            .max_by_key(|e| (e.pce_count(), std::cmp::Reverse(e.index)))
        {
            targets.push(CopyEngine::Lce(e.index));
        }
    }
    if targets.is_empty() {
        targets.push(CopyEngine::Auto);
    }
    // libcuda first (its figures do not depend on ours, and a fault of ours stops the rest).
    let mut cuda_write = [None, None];
    if with_cuda && !emulated {
        match CudaPeer::load(ia as i32, ib as i32) {
            Some(c) => {
                for (si, &size) in sizes.iter().enumerate() {
                    let Some(p) = c.alloc_pairs(size) else {
                        line("peer matrix: libcuda: cuMemAlloc failed");
                        break;
                    };
                    let w = c.one_way(&p, size, 0, 0, 1, iters);
                    let r = c.one_way(&p, size, 0, 1, 0, iters);
                    let bw = c.both_ways(&p, size, iters);
                    c.free_pairs(&p);
                    cuda_write[si] = w;
                    line(&format!(
                        "peer matrix | libcuda    | cuMemcpyPeerAsync {:<32} | write A->B {} | read B->A {} | both ways {}",
                        size_label(size),
                        cell(w),
                        cell(r),
                        cell(bw)
                    ));
                }
                c.restore();
            }
            None => line("peer matrix: libcuda: not available (libcuda.so.1 with two devices with peer access needed)"),
        }
    }

    let ce = |engines: Vec<CopyEngine>, split: CopySplit| Exec::Ce { engines, split };
    let whole = CopySplit::Whole;
    let sms = a.info().sm_count.max(1);
    let mut cands: Vec<Cand> = Vec::new();
    let mut add = |name: String, dir: Dir, exec: Exec| cands.push(Cand { name, dir, exec });
    // What the library does by default, then the SMs, then the copy engines one by one (an
    // engine that faults stops the device, so the riskiest come last).
    add(
        "copy queue, default engine".into(),
        Dir::Write,
        ce(vec![CopyEngine::Auto], whole),
    );
    add(
        "copy queue, default engine".into(),
        Dir::Read,
        ce(vec![CopyEngine::Auto], whole),
    );
    add(
        "copy queue, default engine".into(),
        Dir::Local,
        ce(vec![CopyEngine::Auto], whole),
    );
    add(
        "SM: Queue::copy on a compute queue".into(),
        Dir::Write,
        Exec::Sm { grid: None },
    );
    add(
        "SM: Queue::copy on a compute queue".into(),
        Dir::Read,
        Exec::Sm { grid: None },
    );
    add(
        "SM: Queue::copy on a compute queue".into(),
        Dir::Local,
        Exec::Sm { grid: None },
    );
    for k in [1u32, 2, 4, 8, 16, 32] {
        add(
            format!("SM: tg_copy, {k} x {sms} SMs blocks"),
            Dir::Write,
            Exec::Sm {
                grid: Some(k * sms),
            },
        );
    }
    for k in [4u32, 16] {
        add(
            format!("SM: tg_copy, {k} x {sms} SMs blocks"),
            Dir::Read,
            Exec::Sm {
                grid: Some(k * sms),
            },
        );
    }
    for &l in &targets {
        let t = match l {
            CopyEngine::Auto => "default engine".to_string(),
            l => l.to_string(),
        };
        add(format!("copy queue, {t}"), Dir::Write, ce(vec![l], whole));
        add(format!("copy queue, {t}"), Dir::Local, ce(vec![l], whole));
        for mib in [1u64, 8, 64] {
            let p = CopySplit::Pieces(mib << 20);
            add(
                format!("{t}, pipelined {mib} MiB pieces"),
                Dir::Write,
                ce(vec![l], p),
            );
        }
        let p8 = CopySplit::Pieces(8 << 20);
        add(
            format!("{t}, pipelined 8 MiB pieces"),
            Dir::Local,
            ce(vec![l], p8),
        );
        for (kib, what) in [(64u32, "64 KiB"), (1024, "1 MiB")] {
            let lines = CopySplit::Lines(kib << 10);
            add(
                format!("{t}, multi-line launch, {what} lines"),
                Dir::Write,
                ce(vec![l], lines),
            );
        }
        add(format!("{t}, 2 queues"), Dir::Write, ce(vec![l; 2], whole));
        add(format!("{t}, 4 queues"), Dir::Write, ce(vec![l; 4], whole));
        add(format!("{t}, 4 queues"), Dir::Local, ce(vec![l; 4], whole));
        add(format!("{t}, 8 queues"), Dir::Write, ce(vec![l; 8], whole));
        add(
            format!("{t}, 4 queues, pipelined 8 MiB pieces"),
            Dir::Write,
            ce(vec![l; 4], CopySplit::Pieces(8 << 20)),
        );
    }
    for t in lce_list(ab.optimal_read_ces) {
        add(
            format!("copy queue, LCE{t}"),
            Dir::Read,
            ce(vec![CopyEngine::Lce(t)], whole),
        );
    }
    let asyncs: Vec<CopyEngine> = engines
        .iter()
        .filter(|e| !e.is_grce())
        .map(|e| CopyEngine::Lce(e.index))
        .collect();
    if asyncs.len() > 1 {
        add(
            format!("one queue on each async LCE ({})", asyncs.len()),
            Dir::Write,
            ce(asyncs.clone(), whole),
        );
    }
    add(
        "copy queue, GRCE".into(),
        Dir::Write,
        ce(vec![CopyEngine::Grce], whole),
    );
    add(
        "copy queue, GRCE".into(),
        Dir::Local,
        ce(vec![CopyEngine::Grce], whole),
    );
    for e in engines
        .iter()
        .filter(|e| !targets.contains(&CopyEngine::Lce(e.index)))
    {
        add(
            format!(
                "copy queue, LCE{}{}",
                e.index,
                if e.is_grce() { " (GRCE)" } else { "" }
            ),
            Dir::Write,
            ce(vec![CopyEngine::Lce(e.index)], whole),
        );
    }

    let faulted = || a.fault_report().is_some() || b.fault_report().is_some();
    let mut stopped = false;
    for c in &cands {
        if let Err(e) = m.one(c) {
            line(&format!(
                "peer matrix | {:<10} | {:<50} | FAILED: {e}",
                c.dir.name(),
                c.name
            ));
            if faulted() {
                line(&format!(
                    "peer matrix: stopping: a device faulted (A: {:?}, B: {:?})",
                    a.fault_report(),
                    b.fault_report()
                ));
                stopped = true;
                break;
            }
        }
    }

    // Both directions at once.
    let b_targets = lce_list(ba.optimal_write_ces);
    let mut both: Vec<(String, Exec, Exec)> = vec![
        (
            "copy queues, default engines".to_string(),
            ce(vec![CopyEngine::Auto], whole),
            ce(vec![CopyEngine::Auto], whole),
        ),
        (
            "SM: Queue::copy on compute queues".to_string(),
            Exec::Sm { grid: None },
            Exec::Sm { grid: None },
        ),
    ];
    if let (Some(&ta @ CopyEngine::Lce(_)), Some(&tb)) = (targets.first(), b_targets.first()) {
        both.push((
            format!("copy queues, {ta} on A, LCE{tb} on B"),
            ce(vec![ta], whole),
            ce(vec![CopyEngine::Lce(tb)], whole),
        ));
    }
    for (name, ea, eb) in both {
        if stopped {
            break;
        }
        if let Err(e) = m.both(&name, ea, eb) {
            line(&format!(
                "peer matrix | both ways  | {name:<50} | FAILED: {e}"
            ));
            stopped = faulted();
        }
    }

    // Summary: the fastest one-way writes at 1 GiB.
    let mut w: Vec<_> = m
        .results
        .iter()
        .filter(|r| r.1 == Dir::Write && r.3[1].is_some())
        .collect();
    w.sort_by(|x, y| {
        y.3[1]
            .partial_cmp(&x.3[1])
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    for (i, r) in w.iter().take(5).enumerate() {
        let ratio = match (r.3[1], cuda_write[1]) {
            (Some(o), Some(c)) => format!(" = {:.3}x libcuda's {c:.1} GB/s", o / c),
            _ => String::new(),
        };
        line(&format!(
            "peer matrix: fastest write #{}: {} at {:.1} GB/s ({}){ratio}; ran on: {}",
            i + 1,
            r.0,
            r.3[1].unwrap_or(0.0),
            size_label(sizes[1]),
            r.2
        ));
    }
    drop(m);

    // The rows of the full bench, on the same two devices.
    if emulated || stopped {
        return Ok(Vec::new());
    }
    let rows = super::peer::measure(&a, &b, ia, ib, quick, with_cuda).unwrap_or_else(|e| {
        line(&format!("peer rows: skipped: {e}"));
        Vec::new()
    });
    Ok(rows)
}
