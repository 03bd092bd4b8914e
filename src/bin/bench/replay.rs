//! Command replay rows of `tegragpu-bench`: a chain of 100 dependent small kernels (`increment`
//! on one counter) recorded once, replayed many times — ours (`CmdBuf` + `Queue::replay`) beside
//! libcuda's graphs (stream capture, `cuGraphInstantiateWithFlags`, `cuGraphLaunch`,
//! `cuGraphExecKernelNodeSetParams`) in the same process.

use std::ffi::c_void;
use std::sync::Arc;
use std::time::Instant;
use tegragpu::core::{Device, LaunchConfig, QueueConfig, QueueKind};

/// Kernels in the chain.
pub const CHAIN: usize = 100;
const TO: u64 = 10_000_000_000;

/// The measurements, µs.
#[derive(Debug, Default, Clone, Copy)]
pub struct ReplayNumbers {
    /// CPU time of one replay of the whole chain (record + submit), replays not waited for.
    pub replay_cpu_us: f64,
    /// From the replay call to the CPU seeing the chain complete, p50.
    pub replay_wall_us: f64,
    /// CPU time of updating one kernel's argument, then replaying.
    pub update_replay_cpu_us: f64,
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

fn p50(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
    v[v.len() / 2]
}

fn params(va: u64, by: u64) -> [u8; 16] {
    let mut p = [0u8; 16];
    p[..8].copy_from_slice(&va.to_le_bytes());
    p[8..].copy_from_slice(&by.to_le_bytes());
    p
}

/// Ours, on `dev` with the fixture module `cubin`. Checks the counter at the end: every
/// replay's 100 increments must have landed.
pub fn ours(dev: &Device, cubin: &[u8], reps: usize) -> tegragpu::Result<ReplayNumbers> {
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
    let mut q = dev.create_queue_with(QueueKind::Compute, QueueConfig { depth: 4096 })?;
    let mut next = 0u64;
    let mut expect = 0u64;
    // Warm-up.
    for _ in 0..20 {
        next += 1;
        cb.set_value(sig_node, next)?;
        q.replay(&mut cb)?;
        q.submit()?;
        done.wait(next, TO)?;
        expect += CHAIN as u64;
    }
    // 1. CPU cost of replay + submit, not waiting (the last replay's signal value is the one
    // recorded; the queue's timeline tells when all are done).
    let t = Instant::now();
    for _ in 0..reps {
        q.replay(&mut cb)?;
        q.submit()?;
    }
    let replay_cpu_us = t.elapsed().as_secs_f64() * 1e6 / reps as f64;
    q.synchronize(60 * TO)?;
    expect += (reps * CHAIN) as u64;
    // 2. Replay to completion.
    let mut wall = Vec::with_capacity(reps);
    for _ in 0..reps {
        next += 1;
        cb.set_value(sig_node, next)?;
        let t = Instant::now();
        q.replay(&mut cb)?;
        q.submit()?;
        done.wait(next, TO)?;
        wall.push(t.elapsed().as_secs_f64() * 1e6);
        expect += CHAIN as u64;
    }
    // 3. Update one kernel's argument (the middle one: +2 instead of +1), then replay. The
    // update waits for earlier replays; they are done here, so the CPU time is the update's.
    let mut upd = Vec::with_capacity(reps);
    for i in 0..reps {
        next += 1;
        cb.set_value(sig_node, next)?;
        let by = 1 + (i as u64 % 2);
        let t = Instant::now();
        cb.set_params(CHAIN / 2, &inc, &params(counter.gpu_va(), by))?;
        q.replay(&mut cb)?;
        q.submit()?;
        upd.push(t.elapsed().as_secs_f64() * 1e6);
        done.wait(next, TO)?;
        expect += CHAIN as u64 - 1 + by;
    }
    // SAFETY: the CPU view of the counter (mapped on first use); the GPU is done with it.
    let got = unsafe { std::ptr::read_volatile(counter.map_cpu()? as *const u64) };
    if got != expect {
        return Err(tegragpu::Error::new(
            tegragpu::Status::Internal,
            format!("replay benchmark: counter {got}, expected {expect}"),
        ));
    }
    Ok(ReplayNumbers {
        replay_cpu_us,
        replay_wall_us: p50(&mut wall),
        update_replay_cpu_us: p50(&mut upd),
    })
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

/// libcuda's graphs for the same chain, in the current context (set up by the caller's libcuda
/// session). `None` when libcuda or a graph function is missing or a call fails.
pub fn cuda(cubin: &[u8], reps: usize) -> Option<ReplayNumbers> {
    // SAFETY: the CUDA driver API with its documented signatures; every pointer passed lives
    // until the call returns (kernel parameters until the graph is instantiated or updated).
    unsafe {
        let lib = libloading::Library::new("libcuda.so.1").ok()?;
        macro_rules! f {
            ($name:literal, $t:ty) => {{
                let s: libloading::Symbol<$t> = lib.get($name).ok()?;
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
        let launch = f!(
            b"cuLaunchKernel\0",
            unsafe extern "C" fn(
                Ptr,
                u32,
                u32,
                u32,
                u32,
                u32,
                u32,
                u32,
                Ptr,
                *mut Ptr,
                *mut Ptr,
            ) -> CUresult
        );
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
        let ok = |r: CUresult, what: &str| {
            if r != 0 {
                eprintln!("libcuda graphs: {what} failed ({r})");
            }
            r == 0
        };
        let mut m = std::ptr::null_mut();
        if !ok(
            mload(&mut m, cubin.as_ptr() as *const c_void),
            "cuModuleLoadData",
        ) {
            return None;
        }
        let mut func = std::ptr::null_mut();
        if !ok(
            getf(&mut func, m, c"increment".as_ptr()),
            "cuModuleGetFunction",
        ) {
            return None;
        }
        let mut counter = 0u64;
        if !ok(alloc(&mut counter, 4096), "cuMemAlloc") || !ok(memset(counter, 0, 4096), "cuMemset")
        {
            return None;
        }
        let mut stream = std::ptr::null_mut();
        if !ok(screate(&mut stream, 1), "cuStreamCreate") {
            return None;
        }
        let (mut a0, mut a1) = (counter, 1u64);
        let mut args = [&mut a0 as *mut u64 as Ptr, &mut a1 as *mut u64 as Ptr];
        // CU_STREAM_CAPTURE_MODE_RELAXED = 2.
        if !ok(begin(stream, 2), "cuStreamBeginCapture") {
            return None;
        }
        for _ in 0..CHAIN {
            if !ok(
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
            ) {
                return None;
            }
        }
        let mut graph = std::ptr::null_mut();
        if !ok(end(stream, &mut graph), "cuStreamEndCapture") {
            return None;
        }
        let mut exec = std::ptr::null_mut();
        if !ok(inst(&mut exec, graph, 0), "cuGraphInstantiateWithFlags") {
            return None;
        }
        let mut n = 0usize;
        nodes(graph, std::ptr::null_mut(), &mut n);
        let mut all = vec![std::ptr::null_mut(); n];
        if n != CHAIN || !ok(nodes(graph, all.as_mut_ptr(), &mut n), "cuGraphGetNodes") {
            return None;
        }
        let mut expect = 0u64;
        for _ in 0..20 {
            glaunch(exec, stream);
            expect += CHAIN as u64;
        }
        sync(stream);
        let t = Instant::now();
        for _ in 0..reps {
            if !ok(glaunch(exec, stream), "cuGraphLaunch") {
                return None;
            }
        }
        let replay_cpu_us = t.elapsed().as_secs_f64() * 1e6 / reps as f64;
        sync(stream);
        expect += (reps * CHAIN) as u64;
        let mut wall = Vec::with_capacity(reps);
        for _ in 0..reps {
            let t = Instant::now();
            glaunch(exec, stream);
            sync(stream);
            wall.push(t.elapsed().as_secs_f64() * 1e6);
            expect += CHAIN as u64;
        }
        let mut upd = Vec::with_capacity(reps);
        for i in 0..reps {
            let by = 1 + (i as u64 % 2);
            let (mut b0, mut b1) = (counter, by);
            let mut bargs = [&mut b0 as *mut u64 as Ptr, &mut b1 as *mut u64 as Ptr];
            let p = KernelNodeParams {
                func,
                grid: [1, 1, 1],
                block: [32, 1, 1],
                shared_mem_bytes: 0,
                kernel_params: bargs.as_mut_ptr(),
                extra: std::ptr::null_mut(),
            };
            let t = Instant::now();
            if !ok(
                setp(exec, all[CHAIN / 2], &p),
                "cuGraphExecKernelNodeSetParams",
            ) {
                return None;
            }
            glaunch(exec, stream);
            upd.push(t.elapsed().as_secs_f64() * 1e6);
            sync(stream);
            expect += CHAIN as u64 - 1 + by;
        }
        let mut got = 0u64;
        dtoh(&mut got as *mut u64 as *mut c_void, counter, 8);
        if got != expect {
            eprintln!("libcuda graphs: counter {got}, expected {expect}");
            return None;
        }
        Some(ReplayNumbers {
            replay_cpu_us,
            replay_wall_us: p50(&mut wall),
            update_replay_cpu_us: p50(&mut upd),
        })
    }
}
