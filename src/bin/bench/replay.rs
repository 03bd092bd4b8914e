//! Command replay rows of `tegragpu-bench`: a chain of 100 dependent small kernels (`increment`
//! on one counter) recorded once, replayed many times — ours through the Rust API (`CmdBuf` +
//! `Queue::replay`) and through the C API (`capi.rs`), beside libcuda's graphs (stream capture,
//! `cuGraphInstantiateWithFlags`, `cuGraphLaunch`, `cuGraphExecKernelNodeSetParams`) in the same
//! process. The sides take turns ([`measure`]) so that every side sees the same CPU and GPU
//! state.

use std::ffi::c_void;
use std::sync::Arc;
use std::time::Instant;
use tegragpu::core::{
    Buffer, CmdBuf, Device, Kernel, LaunchConfig, Queue, QueueConfig, QueueKind, Signal,
};
use tegragpu::{Error, Result, Status};

/// Kernels in the chain.
pub const CHAIN: usize = 100;
const TO: u64 = 10_000_000_000;
/// Rounds of the CPU-cost measurement; each side replays `reps / ROUNDS` times per round.
pub const ROUNDS: usize = 8;

/// The measurements, µs.
#[derive(Debug, Default, Clone)]
pub struct ReplayNumbers {
    /// CPU time of one replay of the whole chain (replay + submit), replays not waited for:
    /// the median over the rounds of each round's mean.
    pub replay_cpu_us: f64,
    /// From the replay call to the CPU seeing the chain complete, p50.
    pub replay_wall_us: f64,
    /// CPU time of updating one kernel's argument, then replaying, p50.
    pub update_replay_cpu_us: f64,
    /// Each round's CPU time per replay, in round order (for [`paired_ratio`]).
    pub cpu_rounds: Vec<f64>,
    /// Each round's median update + replay, in round order.
    pub update_rounds: Vec<f64>,
}

/// The median over rounds of `a[r] / b[r]`: two sides compared round by round, so that a change
/// of the machine's speed during the run (it moves these CPU figures by ±15%) cancels out.
/// The depth of the queue each side replays on (the same for the Rust and the C side: ring
/// sizes decide how many pages of the write-combined rings the replays touch).
pub const CHAIN_QUEUE_DEPTH: u32 = 4096;

pub fn paired_ratio(a: &[f64], b: &[f64]) -> f64 {
    let mut r: Vec<f64> = a.iter().zip(b).map(|(x, y)| x / y).collect();
    if r.is_empty() {
        return f64::NAN;
    }
    median(&mut r)
}

/// One side of the comparison: the chain, replayed by one library or API. Each call leaves
/// nothing in flight, so the next side starts on an idle GPU.
pub trait Chain {
    /// CPU µs per replay + submit, over `n` replays not waited for; then waits, untimed.
    fn cpu(&mut self, n: usize) -> Result<f64>;
    /// µs from the replay call to the CPU seeing the chain complete.
    fn wall(&mut self) -> Result<f64>;
    /// CPU µs of setting the middle kernel's increment to `by`, then replaying; then waits,
    /// untimed.
    fn update(&mut self, by: u64) -> Result<f64>;
    /// Whether the counter holds every increment of every replay so far.
    fn check(&mut self) -> Result<()>;
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
    v[v.len() / 2]
}

/// Time every side: 20 untimed replays each, then the CPU cost in [`ROUNDS`] rounds of
/// `reps / ROUNDS` replays, then replays to completion and updates + replays one at a time, in
/// the same rounds; the sides take turns, the first side of each turn rotating. A side whose call
/// fails drops out (its entry becomes `None`, the error is printed) unless it is `required`
/// (index 0), whose failure fails the measurement. Ends with each side's counter check.
pub fn measure(
    sides: &mut [Option<&mut dyn Chain>],
    reps: usize,
) -> Result<Vec<Option<ReplayNumbers>>> {
    let k = sides.len();
    let mut cpu = vec![Vec::new(); k];
    let mut wall = vec![Vec::new(); k];
    let mut upd = vec![Vec::new(); k];
    let mut upd_rounds = vec![Vec::new(); k];
    let per_round = (reps / ROUNDS).max(1);
    // One step of side `i`; Ok(None) when the side has dropped out.
    fn step(
        sides: &mut [Option<&mut dyn Chain>],
        i: usize,
        f: &mut dyn FnMut(&mut dyn Chain) -> Result<f64>,
    ) -> Result<Option<f64>> {
        let Some(s) = sides[i].as_mut() else {
            return Ok(None);
        };
        match f(&mut **s) {
            Ok(v) => Ok(Some(v)),
            Err(e) if i == 0 => Err(e),
            Err(e) => {
                eprintln!("replay benchmark: side {i} dropped: {e}");
                sides[i] = None;
                Ok(None)
            }
        }
    }
    for i in 0..k {
        for _ in 0..20 {
            step(sides, i, &mut |s| s.wall())?;
        }
    }
    for r in 0..ROUNDS {
        for j in 0..k {
            let i = (r + j) % k;
            if let Some(v) = step(sides, i, &mut |s| s.cpu(per_round))? {
                cpu[i].push(v);
            }
        }
    }
    // Replays to completion and updates in blocks of `per_round` per side: the GPU switches
    // between the libraries' contexts only between blocks (a switch before every replay made
    // both libraries' chains take more than twice as long on an H100).
    for r in 0..ROUNDS {
        for j in 0..k {
            let i = (r + j) % k;
            for _ in 0..per_round {
                if let Some(v) = step(sides, i, &mut |s| s.wall())? {
                    wall[i].push(v);
                }
            }
        }
    }
    for r in 0..ROUNDS {
        for j in 0..k {
            let i = (r + j) % k;
            let mut block = Vec::with_capacity(per_round);
            for n in 0..per_round {
                let by = 1 + (n as u64 % 2);
                if let Some(v) = step(sides, i, &mut |s| s.update(by))? {
                    block.push(v);
                }
            }
            if !block.is_empty() {
                upd[i].extend_from_slice(&block);
                upd_rounds[i].push(median(&mut block));
            }
        }
    }
    for i in 0..k {
        step(sides, i, &mut |s| s.check().map(|()| 0.0))?;
    }
    Ok((0..k)
        .map(|i| {
            sides[i].as_ref()?;
            Some(ReplayNumbers {
                cpu_rounds: cpu[i].clone(),
                update_rounds: upd_rounds[i].clone(),
                replay_cpu_us: median(&mut cpu[i]),
                replay_wall_us: median(&mut wall[i]),
                update_replay_cpu_us: median(&mut upd[i]),
            })
        })
        .collect())
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

fn params(va: u64, by: u64) -> [u8; 16] {
    let mut p = [0u8; 16];
    p[..8].copy_from_slice(&va.to_le_bytes());
    p[8..].copy_from_slice(&by.to_le_bytes());
    p
}

/// The chain through the Rust API, on `dev` with the fixture module `cubin`.
pub struct Ours {
    inc: Kernel,
    counter: Buffer,
    done: Arc<Signal>,
    cb: CmdBuf,
    sig_node: usize,
    q: Queue,
    next: u64,
    expect: u64,
}

impl Ours {
    pub fn new(dev: &Device, cubin: &[u8]) -> Result<Ours> {
        let m = dev.load_module(cubin)?;
        let inc = m.kernel("increment")?;
        // Placed for the GPU (video memory on desktop GPUs), as libcuda's cuMemAlloc counter is.
        let counter = dev.alloc(
            4096,
            tegragpu::core::MemFlags {
                zeroed: true,
                ..Default::default()
            },
        )?;
        let done = Arc::new(dev.create_signal(0)?);
        let mut cb = dev.create_cmdbuf()?;
        for _ in 0..CHAIN {
            cb.launch(&inc, &one(), &params(counter.gpu_va(), 1))?;
        }
        let sig_node = cb.signal(&done, 0)?;
        cb.finish()?;
        let q = dev.create_queue_with(
            QueueKind::Compute,
            QueueConfig {
                depth: CHAIN_QUEUE_DEPTH,
            },
        )?;
        Ok(Ours {
            inc,
            counter,
            done,
            cb,
            sig_node,
            q,
            next: 0,
            expect: 0,
        })
    }
}

impl Chain for Ours {
    fn cpu(&mut self, n: usize) -> Result<f64> {
        let t = Instant::now();
        for _ in 0..n {
            self.q.replay(&mut self.cb)?;
            self.q.submit()?;
        }
        let us = t.elapsed().as_secs_f64() * 1e6 / n as f64;
        self.q.synchronize(60 * TO)?;
        self.expect += (n * CHAIN) as u64;
        Ok(us)
    }
    fn wall(&mut self) -> Result<f64> {
        self.next += 1;
        self.cb.set_value(self.sig_node, self.next)?;
        let t = Instant::now();
        self.q.replay(&mut self.cb)?;
        self.q.submit()?;
        self.done.wait(self.next, TO)?;
        self.expect += CHAIN as u64;
        Ok(t.elapsed().as_secs_f64() * 1e6)
    }
    fn update(&mut self, by: u64) -> Result<f64> {
        self.next += 1;
        self.cb.set_value(self.sig_node, self.next)?;
        let t = Instant::now();
        self.cb
            .set_params(CHAIN / 2, &self.inc, &params(self.counter.gpu_va(), by))?;
        self.q.replay(&mut self.cb)?;
        self.q.submit()?;
        let us = t.elapsed().as_secs_f64() * 1e6;
        self.done.wait(self.next, TO)?;
        self.expect += CHAIN as u64 - 1 + by;
        Ok(us)
    }
    fn check(&mut self) -> Result<()> {
        self.q.synchronize(60 * TO)?;
        // SAFETY: the CPU view of the counter (mapped on first use); the GPU is done with it.
        let got = unsafe { std::ptr::read_volatile(self.counter.map_cpu()? as *const u64) };
        if got != self.expect {
            return Err(Error::new(
                Status::Internal,
                format!("replay benchmark: counter {got}, expected {}", self.expect),
            ));
        }
        Ok(())
    }
}

type CUresult = i32;
type Ptr = *mut c_void;

/// `CUDA_KERNEL_NODE_PARAMS` (v1, the layout of the unversioned `cuGraphExecKernelNodeSetParams`).
#[repr(C)]
struct KernelNodeParams {
    func: Ptr,
    grid: [u32; 3],
    block: [u32; 3],
    shared_mem_bytes: u32,
    kernel_params: *mut Ptr,
    extra: *mut Ptr,
}

/// libcuda's graph of the same chain, in the current context (set up by the caller's libcuda
/// session): captured from a stream, instantiated once.
pub struct Cuda {
    _lib: libloading::Library,
    func: Ptr,
    counter: u64,
    stream: Ptr,
    exec: Ptr,
    middle: Ptr,
    glaunch: unsafe extern "C" fn(Ptr, Ptr) -> CUresult,
    sync: unsafe extern "C" fn(Ptr) -> CUresult,
    setp: unsafe extern "C" fn(Ptr, Ptr, *const KernelNodeParams) -> CUresult,
    dtoh: unsafe extern "C" fn(*mut c_void, u64, usize) -> CUresult,
    expect: u64,
}

fn cu(r: CUresult, what: &str) -> Result<()> {
    if r == 0 {
        Ok(())
    } else {
        Err(Error::new(
            Status::Internal,
            format!("libcuda graphs: {what} failed ({r})"),
        ))
    }
}

impl Cuda {
    /// `None` when libcuda or a graph function is missing or a call fails (printed).
    pub fn new(cubin: &[u8]) -> Option<Cuda> {
        match Self::build(cubin) {
            Ok(c) => c,
            Err(e) => {
                eprintln!("{e}");
                None
            }
        }
    }

    fn build(cubin: &[u8]) -> Result<Option<Cuda>> {
        // SAFETY: the CUDA driver API with its documented signatures; every pointer passed lives
        // until the call returns (kernel parameters until the graph is instantiated).
        unsafe {
            let Ok(lib) = libloading::Library::new("libcuda.so.1") else {
                return Ok(None);
            };
            macro_rules! f {
                ($name:literal, $t:ty) => {{
                    let Ok(s) = lib.get::<$t>($name) else {
                        return Ok(None);
                    };
                    *s
                }};
            }
            let mload = f!(
                b"cuModuleLoadData\0",
                unsafe extern "C" fn(*mut Ptr, *const c_void) -> CUresult
            );
            let getf = f!(
                b"cuModuleGetFunction\0",
                unsafe extern "C" fn(*mut Ptr, Ptr, *const std::ffi::c_char) -> CUresult
            );
            let alloc = f!(
                b"cuMemAlloc_v2\0",
                unsafe extern "C" fn(*mut u64, usize) -> CUresult
            );
            let memset = f!(
                b"cuMemsetD8_v2\0",
                unsafe extern "C" fn(u64, u8, usize) -> CUresult
            );
            let dtoh = f!(
                b"cuMemcpyDtoH_v2\0",
                unsafe extern "C" fn(*mut c_void, u64, usize) -> CUresult
            );
            let screate = f!(
                b"cuStreamCreate\0",
                unsafe extern "C" fn(*mut Ptr, u32) -> CUresult
            );
            let sync = f!(
                b"cuStreamSynchronize\0",
                unsafe extern "C" fn(Ptr) -> CUresult
            );
            let launch = f!(b"cuLaunchKernel\0", super::cuda::CuLaunchKernel);
            let begin = f!(
                b"cuStreamBeginCapture_v2\0",
                unsafe extern "C" fn(Ptr, u32) -> CUresult
            );
            let end = f!(
                b"cuStreamEndCapture\0",
                unsafe extern "C" fn(Ptr, *mut Ptr) -> CUresult
            );
            let inst = f!(
                b"cuGraphInstantiateWithFlags\0",
                unsafe extern "C" fn(*mut Ptr, Ptr, u64) -> CUresult
            );
            let glaunch = f!(
                b"cuGraphLaunch\0",
                unsafe extern "C" fn(Ptr, Ptr) -> CUresult
            );
            let nodes = f!(
                b"cuGraphGetNodes\0",
                unsafe extern "C" fn(Ptr, *mut Ptr, *mut usize) -> CUresult
            );
            let setp = f!(
                b"cuGraphExecKernelNodeSetParams\0",
                unsafe extern "C" fn(Ptr, Ptr, *const KernelNodeParams) -> CUresult
            );
            let mut m = std::ptr::null_mut();
            cu(
                mload(&mut m, cubin.as_ptr() as *const c_void),
                "cuModuleLoadData",
            )?;
            let mut func = std::ptr::null_mut();
            cu(
                getf(&mut func, m, c"increment".as_ptr()),
                "cuModuleGetFunction",
            )?;
            let mut counter = 0u64;
            cu(alloc(&mut counter, 4096), "cuMemAlloc")?;
            cu(memset(counter, 0, 4096), "cuMemset")?;
            let mut stream = std::ptr::null_mut();
            cu(screate(&mut stream, 1), "cuStreamCreate")?;
            let (mut a0, mut a1) = (counter, 1u64);
            let mut args = [&mut a0 as *mut u64 as Ptr, &mut a1 as *mut u64 as Ptr];
            // CU_STREAM_CAPTURE_MODE_RELAXED = 2.
            cu(begin(stream, 2), "cuStreamBeginCapture")?;
            for _ in 0..CHAIN {
                cu(
                    launch(
                        func,
                        1,
                        1,
                        1,
                        32,
                        1,
                        1,
                        0,
                        stream,
                        args.as_mut_ptr(),
                        std::ptr::null_mut(),
                    ),
                    "cuLaunchKernel (capture)",
                )?;
            }
            let mut graph = std::ptr::null_mut();
            cu(end(stream, &mut graph), "cuStreamEndCapture")?;
            let mut exec = std::ptr::null_mut();
            cu(inst(&mut exec, graph, 0), "cuGraphInstantiateWithFlags")?;
            let mut n = 0usize;
            cu(
                nodes(graph, std::ptr::null_mut(), &mut n),
                "cuGraphGetNodes",
            )?;
            if n != CHAIN {
                return Err(Error::new(
                    Status::Internal,
                    format!("libcuda graphs: {n} nodes captured, expected {CHAIN}"),
                ));
            }
            let mut all = vec![std::ptr::null_mut(); n];
            cu(nodes(graph, all.as_mut_ptr(), &mut n), "cuGraphGetNodes")?;
            Ok(Some(Cuda {
                _lib: lib,
                func,
                counter,
                stream,
                exec,
                middle: all[CHAIN / 2],
                glaunch,
                sync,
                setp,
                dtoh,
                expect: 0,
            }))
        }
    }
}

impl Chain for Cuda {
    fn cpu(&mut self, n: usize) -> Result<f64> {
        // SAFETY: the graph and stream from `build`.
        unsafe {
            let t = Instant::now();
            for _ in 0..n {
                cu((self.glaunch)(self.exec, self.stream), "cuGraphLaunch")?;
            }
            let us = t.elapsed().as_secs_f64() * 1e6 / n as f64;
            cu((self.sync)(self.stream), "cuStreamSynchronize")?;
            self.expect += (n * CHAIN) as u64;
            Ok(us)
        }
    }
    fn wall(&mut self) -> Result<f64> {
        // SAFETY: as above.
        unsafe {
            let t = Instant::now();
            cu((self.glaunch)(self.exec, self.stream), "cuGraphLaunch")?;
            cu((self.sync)(self.stream), "cuStreamSynchronize")?;
            self.expect += CHAIN as u64;
            Ok(t.elapsed().as_secs_f64() * 1e6)
        }
    }
    fn update(&mut self, by: u64) -> Result<f64> {
        let (mut b0, mut b1) = (self.counter, by);
        let mut bargs = [&mut b0 as *mut u64 as Ptr, &mut b1 as *mut u64 as Ptr];
        let p = KernelNodeParams {
            func: self.func,
            grid: [1, 1, 1],
            block: [32, 1, 1],
            shared_mem_bytes: 0,
            kernel_params: bargs.as_mut_ptr(),
            extra: std::ptr::null_mut(),
        };
        // SAFETY: as above; the parameters live until the call returns.
        unsafe {
            let t = Instant::now();
            cu(
                (self.setp)(self.exec, self.middle, &p),
                "cuGraphExecKernelNodeSetParams",
            )?;
            cu((self.glaunch)(self.exec, self.stream), "cuGraphLaunch")?;
            let us = t.elapsed().as_secs_f64() * 1e6;
            cu((self.sync)(self.stream), "cuStreamSynchronize")?;
            self.expect += CHAIN as u64 - 1 + by;
            Ok(us)
        }
    }
    fn check(&mut self) -> Result<()> {
        let mut got = 0u64;
        // SAFETY: the counter allocation from `build`; 8 bytes into a u64.
        unsafe {
            cu((self.sync)(self.stream), "cuStreamSynchronize")?;
            cu(
                (self.dtoh)(&mut got as *mut u64 as *mut c_void, self.counter, 8),
                "cuMemcpyDtoH",
            )?;
        }
        if got != self.expect {
            return Err(Error::new(
                Status::Internal,
                format!("libcuda graphs: counter {got}, expected {}", self.expect),
            ));
        }
        Ok(())
    }
}
