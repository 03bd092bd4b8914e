//! `--cuda-facade PATH`: libtegragpu's libcuda.so.1 (the `cuda/` crate, at PATH) against
//! NVIDIA's libcuda, both loaded into this process (RTLD_LOCAL, so each keeps its own names),
//! through the same CUDA driver API calls: `cuLaunchKernel` + `cuStreamSynchronize`, the CPU
//! time of one `cuLaunchKernel`, and `cuGraphLaunch` of a graph of 100 dependent kernel nodes
//! built with `cuGraphAddKernelNode`. The two libraries take turns, round by round, each round
//! starting with the other one. Without NVIDIA's libcuda (the emulated Orin) the facade's
//! figures stand alone.

use super::cuda::Cuda;
use super::{percentile, Row};
use libloading::Library;
use std::ffi::c_void;
use std::time::Instant;
use tegragpu::{Error, Result, Status};

type CUresult = i32;
type Ptr = *mut c_void;

/// Kernel nodes in the graph rows.
const CHAIN: usize = 100;

/// `CUDA_KERNEL_NODE_PARAMS` (v1: the layout of the unversioned `cuGraphAddKernelNode`).
#[repr(C)]
struct KernelNodeParams {
    func: Ptr,
    grid: [u32; 3],
    block: [u32; 3],
    shared_mem_bytes: u32,
    kernel_params: *mut Ptr,
    extra: *mut Ptr,
}

/// A graph of `CHAIN` dependent `increment` nodes on one counter, instantiated once, in the
/// library's current context.
struct Graph {
    who: &'static str,
    exec: Ptr,
    stream: Ptr,
    counter: u64,
    expect: u64,
    glaunch: unsafe extern "C" fn(Ptr, Ptr) -> CUresult,
    sync: unsafe extern "C" fn(Ptr) -> CUresult,
    dtoh: unsafe extern "C" fn(*mut c_void, u64, usize) -> CUresult,
}

fn cu(who: &str, r: CUresult, what: &str) -> Result<()> {
    if r == 0 {
        Ok(())
    } else {
        Err(Error::new(
            Status::Internal,
            format!("--cuda-facade: {who}: {what} failed (CUresult {r})"),
        ))
    }
}

impl Graph {
    fn build(who: &'static str, lib: &Library, cubin: &[u8]) -> Result<Graph> {
        macro_rules! f {
            ($name:literal, $t:ty) => {{
                // SAFETY: the symbol has the CUDA driver API signature `$t`.
                let s = unsafe { lib.get::<$t>($name) }.map_err(|e| {
                    Error::new(
                        Status::NotSupported,
                        format!(
                            "--cuda-facade: {who}: no {}: {e}",
                            String::from_utf8_lossy($name)
                        ),
                    )
                })?;
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
        let screate = f!(
            b"cuStreamCreate\0",
            unsafe extern "C" fn(*mut Ptr, u32) -> CUresult
        );
        let gcreate = f!(
            b"cuGraphCreate\0",
            unsafe extern "C" fn(*mut Ptr, u32) -> CUresult
        );
        let addk = f!(
            b"cuGraphAddKernelNode\0",
            unsafe extern "C" fn(
                *mut Ptr,
                Ptr,
                *const Ptr,
                usize,
                *const KernelNodeParams,
            ) -> CUresult
        );
        let inst = f!(
            b"cuGraphInstantiateWithFlags\0",
            unsafe extern "C" fn(*mut Ptr, Ptr, u64) -> CUresult
        );
        let mut g = Graph {
            who,
            exec: std::ptr::null_mut(),
            stream: std::ptr::null_mut(),
            counter: 0,
            expect: 0,
            glaunch: f!(
                b"cuGraphLaunch\0",
                unsafe extern "C" fn(Ptr, Ptr) -> CUresult
            ),
            sync: f!(
                b"cuStreamSynchronize\0",
                unsafe extern "C" fn(Ptr) -> CUresult
            ),
            dtoh: f!(
                b"cuMemcpyDtoH_v2\0",
                unsafe extern "C" fn(*mut c_void, u64, usize) -> CUresult
            ),
        };
        // SAFETY: the CUDA driver API with its documented signatures; every pointer passed
        // lives until the call returns (kernel parameters are copied into the node).
        unsafe {
            let mut m = std::ptr::null_mut();
            cu(
                who,
                mload(&mut m, cubin.as_ptr() as *const c_void),
                "cuModuleLoadData",
            )?;
            let mut func = std::ptr::null_mut();
            cu(
                who,
                getf(&mut func, m, c"increment".as_ptr()),
                "cuModuleGetFunction(increment)",
            )?;
            cu(who, alloc(&mut g.counter, 4096), "cuMemAlloc")?;
            cu(who, memset(g.counter, 0, 4096), "cuMemsetD8")?;
            cu(who, screate(&mut g.stream, 1), "cuStreamCreate")?;
            let mut graph = std::ptr::null_mut();
            cu(who, gcreate(&mut graph, 0), "cuGraphCreate")?;
            let (mut a0, mut a1) = (g.counter, 1u64);
            let mut args = [&mut a0 as *mut u64 as Ptr, &mut a1 as *mut u64 as Ptr];
            let p = KernelNodeParams {
                func,
                grid: [1, 1, 1],
                block: [32, 1, 1],
                shared_mem_bytes: 0,
                kernel_params: args.as_mut_ptr(),
                extra: std::ptr::null_mut(),
            };
            let mut prev: Ptr = std::ptr::null_mut();
            for i in 0..CHAIN {
                let mut node = std::ptr::null_mut();
                let deps = if i == 0 { 0 } else { 1 };
                cu(
                    who,
                    addk(&mut node, graph, &prev, deps, &p),
                    "cuGraphAddKernelNode",
                )?;
                prev = node;
            }
            cu(
                who,
                inst(&mut g.exec, graph, 0),
                "cuGraphInstantiateWithFlags",
            )?;
        }
        Ok(g)
    }

    /// CPU µs per `cuGraphLaunch` over `n` launches (then waits).
    fn cpu(&mut self, n: usize) -> Result<f64> {
        // SAFETY: the graph and stream from `build`.
        unsafe {
            let t = Instant::now();
            for _ in 0..n {
                cu(
                    self.who,
                    (self.glaunch)(self.exec, self.stream),
                    "cuGraphLaunch",
                )?;
            }
            let us = t.elapsed().as_secs_f64() * 1e6 / n as f64;
            cu(self.who, (self.sync)(self.stream), "cuStreamSynchronize")?;
            self.expect += (n * CHAIN) as u64;
            Ok(us)
        }
    }

    /// µs of one `cuGraphLaunch` + `cuStreamSynchronize`.
    fn wall(&mut self) -> Result<f64> {
        // SAFETY: as above.
        unsafe {
            let t = Instant::now();
            cu(
                self.who,
                (self.glaunch)(self.exec, self.stream),
                "cuGraphLaunch",
            )?;
            cu(self.who, (self.sync)(self.stream), "cuStreamSynchronize")?;
            self.expect += CHAIN as u64;
            Ok(t.elapsed().as_secs_f64() * 1e6)
        }
    }

    /// The counter holds one increment per node launched.
    fn check(&self) -> Result<()> {
        let mut got = 0u64;
        // SAFETY: 8 bytes of the counter allocation into a u64.
        unsafe {
            cu(self.who, (self.sync)(self.stream), "cuStreamSynchronize")?;
            cu(
                self.who,
                (self.dtoh)(&mut got as *mut u64 as *mut c_void, self.counter, 8),
                "cuMemcpyDtoH",
            )?;
        }
        if got != self.expect {
            return Err(Error::new(
                Status::Internal,
                format!(
                    "--cuda-facade: {}: the graph's counter reads {got}, expected {}",
                    self.who, self.expect
                ),
            ));
        }
        Ok(())
    }
}

fn median(v: &mut [f64]) -> f64 {
    percentile(v, 0.5)
}

/// The rows; `with_nvidia` false skips NVIDIA's libcuda (`--no-cuda`).
pub fn run(path: &str, quick: bool, with_nvidia: bool) -> Result<Vec<Row>> {
    // NVIDIA's first: a library already loaded under the soname libcuda.so.1 (ours) would
    // answer a later dlopen("libcuda.so.1").
    let mut nv = if with_nvidia { Cuda::load() } else { None };
    let mut ours = Cuda::load_from(path).ok_or_else(|| {
        Error::new(
            Status::NotSupported,
            format!("--cuda-facade: {path} did not load or set up (cuInit, a context, the fixture module)"),
        )
    })?;
    if let Some(n) = &nv {
        if n.cu_init_address() == ours.cu_init_address() {
            return Err(Error::new(
                Status::InvalidArgument,
                format!(
                    "--cuda-facade: libcuda.so.1 resolves to {path} itself (take it off LD_LIBRARY_PATH so NVIDIA's is found)"
                ),
            ));
        }
    }
    eprintln!(
        "--cuda-facade: {path} against {}",
        if nv.is_some() {
            "NVIDIA's libcuda in this process"
        } else {
            "nothing (NVIDIA's libcuda is not here): the facade's figures only"
        }
    );
    let cubin_major = |c: &Cuda| c.sm_major();
    let cubin = |major: i32| {
        if major >= 9 {
            super::CUBIN_SM90
        } else {
            super::CUBIN_SM87
        }
    };
    let mut g_ours = Graph::build("ours", ours.library(), cubin(cubin_major(&ours)))?;
    let mut g_nv = match &nv {
        Some(n) => Some(Graph::build("NVIDIA", n.library(), cubin(cubin_major(n)))?),
        None => None,
    };
    let rounds = if quick { 3 } else { 10 };
    let reps = if quick { 100 } else { 300 };
    let cpu_n = if quick { 200 } else { 1000 };
    let (mut lat_o, mut lat_n) = (Vec::new(), Vec::new());
    let (mut cpu_o, mut cpu_n_v) = (Vec::new(), Vec::new());
    let (mut gcpu_o, mut gcpu_n) = (Vec::new(), Vec::new());
    let (mut gwall_o, mut gwall_n) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        for side in 0..2 {
            let use_ours = (round + side) % 2 == 0;
            if use_ours {
                lat_o.extend(ours.launch_latency(reps));
                cpu_o.push(ours.launch_cpu_cost(cpu_n).ok_or_else(|| {
                    Error::new(
                        Status::Internal,
                        "--cuda-facade: ours: cuLaunchKernel failed",
                    )
                })?);
                gcpu_o.push(g_ours.cpu(if quick { 20 } else { 50 })?);
                for _ in 0..10 {
                    gwall_o.push(g_ours.wall()?);
                }
            } else if let (Some(n), Some(g)) = (nv.as_mut(), g_nv.as_mut()) {
                lat_n.extend(n.launch_latency(reps));
                cpu_n_v.push(n.launch_cpu_cost(cpu_n).ok_or_else(|| {
                    Error::new(
                        Status::Internal,
                        "--cuda-facade: NVIDIA: cuLaunchKernel failed",
                    )
                })?);
                gcpu_n.push(g.cpu(if quick { 20 } else { 50 })?);
                for _ in 0..10 {
                    gwall_n.push(g.wall()?);
                }
            }
        }
    }
    g_ours.check()?;
    if let Some(g) = &g_nv {
        g.check()?;
    }
    if lat_o.is_empty() {
        return Err(Error::new(
            Status::Internal,
            "--cuda-facade: ours: cuLaunchKernel + cuStreamSynchronize failed",
        ));
    }
    let has_nv = nv.is_some();
    let pick = |v: &mut Vec<f64>| {
        if has_nv && !v.is_empty() {
            Some(median(v))
        } else {
            None
        }
    };
    super::note(format!(
        "--cuda-facade: {rounds} rounds taking turns; latency: {reps} launches + syncs per round (p50 of all); CPU per cuLaunchKernel: {cpu_n} launches per round (median round); graph: {CHAIN} dependent kernel nodes, the counter checked at the end"
    ));
    Ok(vec![
        Row {
            name: "facade: cuLaunchKernel + cuStreamSynchronize, p50",
            unit: "us",
            ours: median(&mut lat_o),
            cuda: pick(&mut lat_n),
            target: Some(("<= 0.7x", 0.7)),
            lower_is_better: true,
            absolute: false,
        },
        Row {
            name: "facade: CPU per cuLaunchKernel",
            unit: "us",
            ours: median(&mut cpu_o),
            cuda: pick(&mut cpu_n_v),
            target: Some(("<= 0.4x", 0.4)),
            lower_is_better: true,
            absolute: false,
        },
        Row {
            name: "facade: cuGraphLaunch (100 nodes), CPU",
            unit: "us",
            ours: median(&mut gcpu_o),
            cuda: pick(&mut gcpu_n),
            target: None,
            lower_is_better: true,
            absolute: false,
        },
        Row {
            name: "facade: cuGraphLaunch (100 nodes) + sync, p50",
            unit: "us",
            ours: median(&mut gwall_o),
            cuda: pick(&mut gwall_n),
            target: None,
            lower_is_better: true,
            absolute: false,
        },
    ])
}
