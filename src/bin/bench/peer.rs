//! Peer copies between two GPUs of the desktop driver: 256 MiB and 1 GiB, one way (the first
//! GPU's queue writing into the second's memory) and both ways at once (each GPU's queue
//! writing into the other), on copy queues (the copy engine) and on compute queues (the SM copy
//! kernel), beside `cuMemcpyPeerAsync` in the same process. The rows appear only with two GPUs
//! that have a peer path; otherwise a note on stderr says why. A note under the table names
//! the engine each queue ran on. `--peer-only` (`peer_matrix.rs`) measures every candidate.
//!
//! One way is timed on the GPU (ours: the timestamps of two semaphore releases around the copy;
//! libcuda: events), both ways at once on the CPU from the first submit until both are done,
//! on both sides. Each figure is the best of its iterations, after ~30 ms of the same copies.

use super::{Row, TO};
use libloading::{Library, Symbol};
use std::ffi::c_void;
use std::time::{Duration, Instant};
use tegragpu::core::{BackendKind, Buffer, Device, MemFlags, Queue, QueueKind, Signal};

/// The device that pairs with the bench's `spec`: `rm:1`, or `rm:0` when the bench runs on
/// `rm:N` with N > 0. `None` for a device that is not RM.
pub fn peer_spec(dev: &Device, spec: Option<&str>) -> Option<(u32, u32)> {
    if dev.info().backend != BackendKind::Rm {
        return None;
    }
    let me: u32 = spec
        .and_then(|s| s.strip_prefix("rm:"))
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    Some((me, if me == 0 { 1 } else { 0 }))
}

/// The rows (empty, with a note on stderr, where there is no second GPU or no peer path).
pub fn rows(dev: &Device, spec: Option<&str>, quick: bool, with_cuda: bool) -> Vec<Row> {
    let Some((me, other)) = peer_spec(dev, spec) else {
        return Vec::new();
    };
    let peer = match Device::open(Some(&format!("rm:{other}"))) {
        Ok(p) => p,
        Err(e) if e.status == tegragpu::Status::NotFound => {
            eprintln!("peer copy rows: skipped, one GPU ({e})");
            return Vec::new();
        }
        Err(e) => {
            eprintln!("peer copy rows: skipped, opening rm:{other} failed: {e}");
            return Vec::new();
        }
    };
    match measure(dev, &peer, me, other, quick, with_cuda) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("peer copy rows: skipped: {e}");
            Vec::new()
        }
    }
}

struct Ours {
    ce_one: f64,
    ce_both: f64,
    sm_one: f64,
    sm_both: f64,
    /// What ran the copies (each queue's engine).
    engines: String,
}

pub fn measure(
    a: &Device,
    b: &Device,
    ia: u32,
    ib: u32,
    quick: bool,
    with_cuda: bool,
) -> tegragpu::Result<Vec<Row>> {
    let info = a.peer_info(b)?;
    eprintln!(
        "peer: rm:{ia} -> rm:{ib}: {}; {}",
        info.summary(),
        info.detail
    );
    if !info.can_access {
        return Err(tegragpu::Error::new(
            tegragpu::Status::NotSupported,
            "no peer path between the two GPUs",
        ));
    }
    a.enable_peer_access(b)?;
    b.enable_peer_access(a)?;
    let iters = if quick { 5 } else { 20 };
    let mut cuda = if with_cuda {
        CudaPeer::load(ia as i32, ib as i32)
    } else {
        None
    };
    if with_cuda && cuda.is_none() {
        eprintln!(
            "peer copy rows: libcuda's side unavailable (two devices with peer access needed)"
        );
    }
    let mut rows = Vec::new();
    let mut engines = String::new();
    for size in [256u64 << 20, 1 << 30] {
        let ours = ours(a, b, size, iters)?;
        engines = ours.engines.clone();
        let theirs = cuda.as_mut().and_then(|c| c.measure(size, iters));
        let label = if size >= 1 << 30 {
            format!("{} GiB", size >> 30)
        } else {
            format!("{} MiB", size >> 20)
        };
        for (what, v, c) in [
            ("one way, copy engine", ours.ce_one, theirs.map(|t| t.0)),
            ("both ways at once", ours.ce_both, theirs.map(|t| t.1)),
            ("one way, SM copy kernel", ours.sm_one, theirs.map(|t| t.0)),
            (
                "both ways at once, SM copy kernel",
                ours.sm_both,
                theirs.map(|t| t.1),
            ),
        ] {
            rows.push(Row {
                name: Box::leak(format!("peer copy {label}, {what}").into_boxed_str()),
                unit: "GB/s",
                ours: v,
                cuda: c,
                target: Some((">= 0.95x", 0.95)),
                lower_is_better: false,
                absolute: false,
            });
        }
    }
    super::note(format!(
        "peer copy rows (rm:{ia} = A, rm:{ib} = B): {engines}; libcuda: cuMemcpyPeerAsync on \
         the writing device's stream. `tegragpu-bench --peer-only` measures every copy engine \
         and SM grid"
    ));
    if let Some(c) = cuda {
        c.restore();
    }
    Ok(rows)
}

/// Best GB/s of `iters` copies of `size` bytes `src` → `dst` on `q`, timed by the GPU
/// timestamps of two releases around each copy, after ~30 ms of the same copy.
fn one_way(
    q: &mut Queue,
    (t0, t1): (&Signal, &Signal),
    v: &mut u64,
    (dst, src): (&Buffer, &Buffer),
    size: u64,
    iters: usize,
) -> tegragpu::Result<f64> {
    let warm = Instant::now();
    while warm.elapsed() < Duration::from_millis(30) {
        *v += 1;
        q.copy(dst, 0, src, 0, size)?;
        q.signal(t1, *v)?;
        q.submit()?;
        t1.wait(*v, 60 * TO)?;
    }
    let mut best = f64::MAX;
    for _ in 0..iters {
        *v += 1;
        q.signal(t0, *v)?;
        q.copy(dst, 0, src, 0, size)?;
        q.signal(t1, *v)?;
        q.submit()?;
        t1.wait(*v, 60 * TO)?;
        let dt = t1.timestamp().saturating_sub(t0.timestamp()) as f64 / 1e9;
        if dt > 0.0 {
            best = best.min(dt);
        }
    }
    Ok(size as f64 / best / 1e9)
}

/// Both devices' queues copy `size` bytes into the other device at once: GB/s of both copies'
/// bytes over the CPU time from the first submit until both are done, the best of `iters`.
#[allow(clippy::too_many_arguments)]
fn both_ways(
    (qa, qb): (&mut Queue, &mut Queue),
    (sa, sb): (&Signal, &Signal),
    (va, vb): (&mut u64, &mut u64),
    (a_src, a_dst): (&Buffer, &Buffer),
    (b_src, b_dst): (&Buffer, &Buffer),
    size: u64,
    iters: usize,
) -> tegragpu::Result<f64> {
    let mut both = f64::MAX;
    for _ in 0..iters {
        *va += 1;
        *vb += 1;
        qa.copy(b_dst, 0, a_src, 0, size)?;
        qa.signal(sa, *va)?;
        qb.copy(a_dst, 0, b_src, 0, size)?;
        qb.signal(sb, *vb)?;
        let t = Instant::now();
        qa.submit()?;
        qb.submit()?;
        sa.wait(*va, 60 * TO)?;
        sb.wait(*vb, 60 * TO)?;
        both = both.min(t.elapsed().as_secs_f64());
    }
    Ok(2.0 * size as f64 / both / 1e9)
}

fn ours(a: &Device, b: &Device, size: u64, iters: usize) -> tegragpu::Result<Ours> {
    let flags = MemFlags::default();
    let (a_src, a_dst) = (a.alloc(size, flags)?, a.alloc(size, flags)?);
    let (b_src, b_dst) = (b.alloc(size, flags)?, b.alloc(size, flags)?);
    let (sa, sb, t0) = (
        a.create_signal(0)?,
        b.create_signal(0)?,
        a.create_signal(0)?,
    );
    let (mut va, mut vb) = (0u64, 0u64);
    let mut out = Ours {
        ce_one: 0.0,
        ce_both: 0.0,
        sm_one: 0.0,
        sm_both: 0.0,
        engines: String::new(),
    };
    for kind in [QueueKind::Copy, QueueKind::Compute] {
        let mut qa = a.create_queue(kind)?;
        let mut qb = b.create_queue(kind)?;
        // One way: A's queue writes B's memory; GPU time between two releases.
        let one = one_way(&mut qa, (&t0, &sa), &mut va, (&b_dst, &a_src), size, iters)?;
        // Both ways at once: each device's queue writes the other's memory; CPU time.
        let both = both_ways(
            (&mut qa, &mut qb),
            (&sa, &sb),
            (&mut va, &mut vb),
            (&a_src, &a_dst),
            (&b_src, &b_dst),
            size,
            iters + 2,
        )?;
        if kind == QueueKind::Copy {
            (out.ce_one, out.ce_both) = (one, both);
            out.engines = format!(
                "copy engine = A's copy queue on {}, B's on {}",
                qa.engine(),
                qb.engine()
            );
        } else {
            (out.sm_one, out.sm_both) = (one, both);
            out.engines += &format!(
                "; SM copy kernel = tg_copy on each device's compute queue ({}), one \
                 256-thread block per 4 KiB",
                qa.engine()
            );
        }
    }
    Ok(out)
}

type CUresult = i32;
type CUcontext = *mut c_void;
type CUstream = *mut c_void;
type CUevent = *mut c_void;
type CUdeviceptr = u64;

/// libcuda's side: the primary contexts of the two devices with peer access enabled both ways,
/// a stream and two events each.
pub struct CudaPeer {
    _lib: Library,
    ctx: [CUcontext; 2],
    stream: [CUstream; 2],
    /// Two events on each device.
    ev: [[CUevent; 2]; 2],
    set: unsafe extern "C" fn(CUcontext) -> CUresult,
    alloc: unsafe extern "C" fn(*mut CUdeviceptr, usize) -> CUresult,
    free: unsafe extern "C" fn(CUdeviceptr) -> CUresult,
    peer_copy: unsafe extern "C" fn(
        CUdeviceptr,
        CUcontext,
        CUdeviceptr,
        CUcontext,
        usize,
        CUstream,
    ) -> CUresult,
    sync: unsafe extern "C" fn(CUstream) -> CUresult,
    ev_record: unsafe extern "C" fn(CUevent, CUstream) -> CUresult,
    ev_sync: unsafe extern "C" fn(CUevent) -> CUresult,
    ev_elapsed: unsafe extern "C" fn(*mut f32, CUevent, CUevent) -> CUresult,
}

unsafe fn sym<T: Copy>(lib: &Library, name: &[u8]) -> Option<T> {
    let s: Symbol<T> = lib.get(name).ok()?;
    Some(*s)
}

/// `CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED`.
const CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED: CUresult = 704;

impl CudaPeer {
    /// CUDA devices `a` and `b` (CUDA's numbering; on machines of one GPU model it is the
    /// PCI order, as the library's `rm:N`).
    pub fn load(a: i32, b: i32) -> Option<CudaPeer> {
        // SAFETY: calling the CUDA driver API with the documented signatures.
        unsafe {
            let lib = Library::new("libcuda.so.1")
                .or_else(|_| Library::new("libcuda.so"))
                .ok()?;
            let init: unsafe extern "C" fn(u32) -> CUresult = sym(&lib, b"cuInit\0")?;
            let count: unsafe extern "C" fn(*mut i32) -> CUresult =
                sym(&lib, b"cuDeviceGetCount\0")?;
            let dev_get: unsafe extern "C" fn(*mut i32, i32) -> CUresult =
                sym(&lib, b"cuDeviceGet\0")?;
            let can: unsafe extern "C" fn(*mut i32, i32, i32) -> CUresult =
                sym(&lib, b"cuDeviceCanAccessPeer\0")?;
            let retain: unsafe extern "C" fn(*mut CUcontext, i32) -> CUresult =
                sym(&lib, b"cuDevicePrimaryCtxRetain\0")?;
            let enable: unsafe extern "C" fn(CUcontext, u32) -> CUresult =
                sym(&lib, b"cuCtxEnablePeerAccess\0")?;
            let screate: unsafe extern "C" fn(*mut CUstream, u32) -> CUresult =
                sym(&lib, b"cuStreamCreate\0")?;
            let ev_create: unsafe extern "C" fn(*mut CUevent, u32) -> CUresult =
                sym(&lib, b"cuEventCreate\0")?;
            let set: unsafe extern "C" fn(CUcontext) -> CUresult = sym(&lib, b"cuCtxSetCurrent\0")?;
            if init(0) != 0 {
                return None;
            }
            let mut n = 0;
            if count(&mut n) != 0 || n <= a.max(b) {
                return None;
            }
            let (mut da, mut db) = (0, 0);
            if dev_get(&mut da, a) != 0 || dev_get(&mut db, b) != 0 {
                return None;
            }
            let (mut ab, mut ba) = (0, 0);
            can(&mut ab, da, db);
            can(&mut ba, db, da);
            if ab == 0 || ba == 0 {
                eprintln!("libcuda: cuDeviceCanAccessPeer says no between devices {a} and {b}");
                return None;
            }
            let mut ctx = [std::ptr::null_mut(); 2];
            if retain(&mut ctx[0], da) != 0 || retain(&mut ctx[1], db) != 0 {
                return None;
            }
            let mut stream = [std::ptr::null_mut(); 2];
            let mut ev = [[std::ptr::null_mut(); 2]; 2];
            for (i, peer) in [(0, 1), (1, 0)] {
                if set(ctx[i]) != 0 {
                    return None;
                }
                let r = enable(ctx[peer], 0);
                if r != 0 && r != CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED {
                    eprintln!("libcuda: cuCtxEnablePeerAccess failed ({r})");
                    return None;
                }
                if screate(&mut stream[i], 1) != 0
                    || ev_create(&mut ev[i][0], 0) != 0
                    || ev_create(&mut ev[i][1], 0) != 0
                {
                    return None;
                }
            }
            if set(ctx[0]) != 0 {
                return None;
            }
            Some(CudaPeer {
                ctx,
                stream,
                ev,
                set,
                alloc: sym(&lib, b"cuMemAlloc_v2\0")?,
                free: sym(&lib, b"cuMemFree_v2\0")?,
                peer_copy: sym(&lib, b"cuMemcpyPeerAsync\0")?,
                sync: sym(&lib, b"cuStreamSynchronize\0")?,
                ev_record: sym(&lib, b"cuEventRecord\0")?,
                ev_sync: sym(&lib, b"cuEventSynchronize\0")?,
                ev_elapsed: sym(&lib, b"cuEventElapsedTime\0")?,
                _lib: lib,
            })
        }
    }

    /// (one way, both at once) in GB/s, measured as ours are.
    fn measure(&mut self, size: u64, iters: usize) -> Option<(f64, f64)> {
        let p = self.alloc_pairs(size)?;
        let r = (|| {
            let one = self.one_way(&p, size, 0, 0, 1, iters)?;
            let both = self.both_ways(&p, size, iters + 2)?;
            Some((one, both))
        })();
        self.free_pairs(&p);
        r
    }

    /// A source and a destination buffer of `size` bytes on each device: `[device][src, dst]`
    /// (freed with [`CudaPeer::free_pairs`]).
    pub fn alloc_pairs(&self, size: u64) -> Option<[[u64; 2]; 2]> {
        let mut p = [[0u64; 2]; 2];
        // SAFETY: device allocations in each context, freed by free_pairs.
        unsafe {
            for (i, pair) in p.iter_mut().enumerate() {
                (self.set)(self.ctx[i]);
                if (self.alloc)(&mut pair[0], size as usize) != 0
                    || (self.alloc)(&mut pair[1], size as usize) != 0
                {
                    self.free_pairs(&p);
                    return None;
                }
            }
            (self.set)(self.ctx[0]);
        }
        Some(p)
    }

    pub fn free_pairs(&self, p: &[[u64; 2]; 2]) {
        // SAFETY: allocations of alloc_pairs (0 where none was made, which cuMemFree refuses).
        unsafe {
            for (i, pair) in p.iter().enumerate() {
                (self.set)(self.ctx[i]);
                for &d in pair {
                    if d != 0 {
                        (self.free)(d);
                    }
                }
            }
            (self.set)(self.ctx[0]);
        }
    }

    /// `cuMemcpyPeerAsync` of `size` bytes from device `from`'s source buffer to device `to`'s
    /// destination buffer on device `on`'s stream: GB/s, the best of `iters` timed with events
    /// after ~30 ms of the same copy.
    pub fn one_way(
        &self,
        p: &[[u64; 2]; 2],
        size: u64,
        on: usize,
        from: usize,
        to: usize,
        iters: usize,
    ) -> Option<f64> {
        // SAFETY: buffers of alloc_pairs; streams and events from `load`.
        unsafe {
            let copy = || {
                (self.set)(self.ctx[on]);
                (self.peer_copy)(
                    p[to][1],
                    self.ctx[to],
                    p[from][0],
                    self.ctx[from],
                    size as usize,
                    self.stream[on],
                )
            };
            let warm = Instant::now();
            while warm.elapsed() < Duration::from_millis(30) {
                if copy() != 0 {
                    return None;
                }
                (self.sync)(self.stream[on]);
            }
            let mut best = f64::MAX;
            for _ in 0..iters {
                (self.set)(self.ctx[on]);
                (self.ev_record)(self.ev[on][0], self.stream[on]);
                copy();
                (self.set)(self.ctx[on]);
                (self.ev_record)(self.ev[on][1], self.stream[on]);
                (self.ev_sync)(self.ev[on][1]);
                let mut ms = 0f32;
                (self.ev_elapsed)(&mut ms, self.ev[on][0], self.ev[on][1]);
                if ms > 0.0 {
                    best = best.min(ms as f64 / 1e3);
                }
            }
            (self.set)(self.ctx[0]);
            Some(size as f64 / best / 1e9)
        }
    }

    /// Both devices' streams copy `size` bytes into the other device at once: GB/s of both
    /// copies' bytes over the CPU time until both are done, the best of `iters`.
    pub fn both_ways(&self, p: &[[u64; 2]; 2], size: u64, iters: usize) -> Option<f64> {
        // SAFETY: buffers of alloc_pairs; streams from `load`.
        unsafe {
            let copy = |from: usize| {
                let to = 1 - from;
                (self.set)(self.ctx[from]);
                (self.peer_copy)(
                    p[to][1],
                    self.ctx[to],
                    p[from][0],
                    self.ctx[from],
                    size as usize,
                    self.stream[from],
                )
            };
            let mut both = f64::MAX;
            for _ in 0..iters {
                let t = Instant::now();
                if copy(0) != 0 || copy(1) != 0 {
                    return None;
                }
                (self.sync)(self.stream[0]);
                (self.sync)(self.stream[1]);
                both = both.min(t.elapsed().as_secs_f64());
            }
            (self.set)(self.ctx[0]);
            Some(2.0 * size as f64 / both / 1e9)
        }
    }

    /// Leave the first device's context current (the other rows' libcuda calls use it).
    pub fn restore(&self) {
        // SAFETY: a context retained in `load`.
        unsafe { (self.set)(self.ctx[0]) };
    }
}
