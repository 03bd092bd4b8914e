//! Command buffers: launches, copies, signals, waits and barriers recorded once, then replayed on
//! compute queues any number of times with one GPFIFO entry per replay (CUDA graphs, tinygrad's
//! HCQ graph).
//!
//! Recording collects the commands; [`CmdBuf::finish`] writes them once into GPU memory of the
//! command buffer's own: a pushbuffer, one QMD per launch and the launch's constant bank 0 (its
//! parameters). [`super::Queue::replay`] records, in the queue's own ring, only what the queue's
//! channel state needs (local memory, cache invalidation, serialization after a launch), then
//! pushes one GPFIFO entry that points at the command buffer's pushbuffer. The queue's next
//! submit closes it with the queue's timeline release and rings the doorbell once.
//!
//! Updates between replays ([`CmdBuf::set_params`], [`CmdBuf::set_value`]) write the command
//! buffer's memory in place. They first wait until every replay recorded so far has completed
//! (the GPU may be reading that memory), so a replay always runs with the values it was
//! recorded with; recorded-but-unsubmitted replays are submitted first by their queue's next
//! submit — call it before updating, or the update waits for the timeout.
//!
//! Lifetime: a command buffer holds the kernels, buffers (of its copies) and signals it uses;
//! its memory is released once every replay has completed. The addresses inside kernel
//! parameters are the caller's business, as with CUDA graphs: a buffer a replay's kernel
//! writes must stay allocated until that replay has completed (freeing it is safe: freed memory
//! is held until work recorded before the free completes).

use super::device::Device;
use super::module::Kernel;
use super::queue::{
    build_launch_cbank, build_launch_qmd, check_launch, wait_fence, Fence, LaunchConfig, Queue,
    QueueTrack,
};
use super::signal::Signal;
use super::Buffer;
use crate::backend::{Allocation, MemFlags};
use crate::error::{Error, Result, Status};
use crate::hw::pushbuf::PushBuf;
use std::sync::Arc;

/// QMD slot stride in the command buffer (the QMD, then constant bank 0 at +CBANK_IN_SLOT when
/// it fits).
const SLOT: u64 = 2048;
/// Bytes per cooperative launch's grid workspace (CUDA's `grid_workspace { u32 wsSize; u32
/// barrier; }`), one cache line each.
const WS_STRIDE: u64 = 64;
const CBANK_IN_SLOT: u64 = 512;
/// The most dwords one recorded command takes.
const MAX_NODE_DW: usize = 64;
/// SEND_SIGNALING_PCAS2_B action: INVALIDATE_COPY_SCHEDULE.
const PCAS_ACTION: u32 = 3;
/// INVALIDATE_SHADER_CACHES_NO_WFI: CONSTANT.
const INVALIDATE_CONSTANT_CACHE: u32 = 1 << 12;
/// The constant bank a chained predecessor binds to its successor's bank 0 for the prefetch
/// (`QmdTemplate::chain`); not used when the predecessor's cubin has a bank of that number.
const CHAIN_PREFETCH_BANK: u32 = 5;
/// Dwords of a host semaphore method run: header, ADDR_LO, ADDR_HI, PAYLOAD_LO, PAYLOAD_HI, EXECUTE.
const SEM_RUN_DW: usize = 6;

/// One recorded command.
#[derive(Clone)]
enum Node {
    Launch {
        kernel: Kernel,
        cfg: LaunchConfig,
        params: Vec<u8>,
    },
    Signal {
        signal: Arc<Signal>,
        value: u64,
    },
    Wait {
        signal: Arc<Signal>,
        value: u64,
    },
    Barrier,
}

/// What of a node can be updated after `finish`, and where it lives (CPU pointers into the
/// command buffer's memory).
#[derive(Clone, Copy)]
enum Patch {
    /// The parameter block inside the launch's constant bank 0.
    Params {
        cpu: *mut u8,
        len: usize,
    },
    /// PAYLOAD_LO, PAYLOAD_HI of a semaphore method run.
    Payload {
        cpu: *mut u32,
    },
    None,
}

/// The finished image in GPU memory.
struct Image {
    alloc: Allocation,
    dwords: u32,
    ends_with_launch: bool,
    /// It holds a cooperative launch, whose grid barrier serves one replay at a time.
    cooperative: bool,
    /// It releases signals (each replay notes the release on them, see `Signal::wait`).
    signals: bool,
    patches: Vec<Patch>,
    /// Per node: where a launch's QMD and constant bank 0 are and how it is chained, for
    /// [`CmdBuf::set_launch`] (None for other nodes).
    launches: Vec<Option<LaunchMeta>>,
}

/// What [`CmdBuf::write_image`] wrote: pushbuffer dwords, whether the image ends with a launch,
/// the update patches and the launch metadata of every node.
type Built = (u32, bool, Vec<Patch>, Vec<Option<LaunchMeta>>);

/// A launch node in the image.
#[derive(Clone)]
struct LaunchMeta {
    /// Offsets of its QMD and constant bank 0 in the allocation; the bank's size.
    qmd_off: u64,
    cb_off: u64,
    cb_size: u64,
    /// Chained to the launch before it with that one prefetching its bank 0 (so its own QMD
    /// does not invalidate bank 0).
    prefetched: bool,
    /// The launch chained to this one: (node, with prefetches).
    succ: Option<(usize, bool)>,
    /// Its QMD as built, before a successor was chained to it.
    words: [u32; 96],
    /// A cooperative launch's grid workspace (GPU address), its own in the allocation.
    ws: Option<u64>,
}

/// What the kind of a node is, for messages.
fn node_kind(n: &Node) -> &'static str {
    match n {
        Node::Launch { .. } => "a launch",
        Node::Signal { .. } => "a signal",
        Node::Wait { .. } => "a wait",
        Node::Barrier => "a barrier",
    }
}

/// A command buffer (see the module documentation).
pub struct CmdBuf {
    dev: Device,
    nodes: Vec<Node>,
    image: Option<Image>,
    /// Buffers the recorded copies use: held for the command buffer's lifetime.
    held: Vec<Arc<Buffer>>,
    copy_kernel: Option<Kernel>,
    /// Where the replays recorded so far complete: per queue, the highest timeline value.
    inflight: Fence,
    timeout_ns: u64,
}

// SAFETY: the raw pointers in `Patch` point into `image.alloc`, owned by this command buffer and
// only written through `&mut self`.
unsafe impl Send for CmdBuf {}
// SAFETY: as above; shared references never write through them.
unsafe impl Sync for CmdBuf {}

impl std::fmt::Debug for CmdBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CmdBuf")
            .field("nodes", &self.nodes.len())
            .field("finished", &self.image.is_some())
            .finish()
    }
}

impl CmdBuf {
    pub(crate) fn new(dev: &Device) -> Result<CmdBuf> {
        dev.check_usable()?;
        Ok(CmdBuf {
            dev: dev.clone(),
            nodes: Vec::new(),
            image: None,
            held: Vec::new(),
            copy_kernel: None,
            inflight: Vec::new(),
            timeout_ns: super::DEFAULT_TIMEOUT_NS,
        })
    }

    /// Number of recorded commands (node indexes run from 0).
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// Whether [`CmdBuf::finish`] was called.
    pub fn is_finished(&self) -> bool {
        self.image.is_some()
    }

    /// How long updates and destruction wait for replays in flight (default 10 s).
    pub fn set_timeout_ns(&mut self, timeout_ns: u64) {
        self.timeout_ns = timeout_ns;
    }

    fn recording(&self, call: &str) -> Result<()> {
        if self.image.is_some() {
            return Err(Error::invalid(format!(
                "{call}: the command buffer is finished; record into a new one"
            )));
        }
        self.dev.check_usable()
    }

    fn push(&mut self, n: Node) -> usize {
        self.nodes.push(n);
        self.nodes.len() - 1
    }

    /// Record a kernel launch with its packed parameter block; returns the node index.
    pub fn launch(&mut self, kernel: &Kernel, cfg: &LaunchConfig, params: &[u8]) -> Result<usize> {
        self.recording("tg_cmdbuf_launch")?;
        let a = kernel.attributes();
        if params.len() != a.param_bytes as usize {
            return Err(Error::new(
                Status::InvalidLaunch,
                format!(
                    "tg_cmdbuf_launch: kernel \"{}\" takes {} bytes of parameters, got {}",
                    a.name,
                    a.param_bytes,
                    params.len()
                ),
            ));
        }
        check_launch(&self.dev, kernel, cfg)
            .map_err(|e| rename(e, "tg_launch", "tg_cmdbuf_launch"))?;
        Ok(self.push(Node::Launch {
            kernel: kernel.clone(),
            cfg: *cfg,
            params: params.to_vec(),
        }))
    }

    /// Record a copy of `size_bytes` from `src` at `src_offset` to `dst` at `dst_offset` (the
    /// built-in copy kernel on the SMs, as on a compute queue); returns the node index. The
    /// command buffer holds both buffers.
    pub fn copy(
        &mut self,
        dst: &Arc<Buffer>,
        dst_offset: u64,
        src: &Arc<Buffer>,
        src_offset: u64,
        size_bytes: u64,
    ) -> Result<usize> {
        self.recording("tg_cmdbuf_copy")?;
        dst.check_range("tg_cmdbuf_copy: dst", dst_offset, size_bytes)?;
        src.check_range("tg_cmdbuf_copy: src", src_offset, size_bytes)?;
        if size_bytes == 0 {
            return Err(Error::invalid("tg_cmdbuf_copy: size_bytes is 0"));
        }
        let (d, s) = (dst.gpu_va() + dst_offset, src.gpu_va() + src_offset);
        if d < s + size_bytes && s < d + size_bytes {
            return Err(Error::invalid(format!(
                "tg_cmdbuf_copy: dst [{d:#x}, +{size_bytes}) and src [{s:#x}, +{size_bytes}) overlap"
            )));
        }
        let kernel = match &self.copy_kernel {
            Some(k) => k.clone(),
            None => {
                let info = self.dev.info();
                let cubin =
                    crate::builtin::copy_cubin(info.sm_major, info.sm_minor).ok_or_else(|| {
                        Error::new(
                            Status::NotSupported,
                            format!(
                                "tg_cmdbuf_copy: no built-in copy kernel for sm_{}{}",
                                info.sm_major, info.sm_minor
                            ),
                        )
                    })?;
                let m = self.dev.load_module(cubin)?;
                let k = m.kernel(crate::builtin::COPY_KERNEL)?;
                self.copy_kernel = Some(k.clone());
                k
            }
        };
        let mut params = [0u8; 24];
        params[0..8].copy_from_slice(&d.to_le_bytes());
        params[8..16].copy_from_slice(&s.to_le_bytes());
        params[16..24].copy_from_slice(&size_bytes.to_le_bytes());
        let cfg = LaunchConfig {
            grid: [crate::builtin::copy_grid(size_bytes), 1, 1],
            block: [crate::builtin::COPY_BLOCK, 1, 1],
            dynamic_shared_bytes: 0,
            cooperative: false,
            concurrent: false,
            cluster: [0; 3],
        };
        self.held.push(dst.clone());
        self.held.push(src.clone());
        Ok(self.push(Node::Launch {
            kernel,
            cfg,
            params: params.to_vec(),
        }))
    }

    /// Record a GPU write of `value` (and a timestamp) to `signal` once the earlier commands are
    /// complete; returns the node index ([`CmdBuf::set_value`] changes the value).
    pub fn signal(&mut self, signal: &Arc<Signal>, value: u64) -> Result<usize> {
        self.recording("tg_cmdbuf_signal")?;
        self.same_device(signal.device(), "tg_cmdbuf_signal")?;
        Ok(self.push(Node::Signal {
            signal: signal.clone(),
            value,
        }))
    }

    /// Record a GPU wait until `signal` ≥ `value` (unsigned) before later commands start;
    /// returns the node index.
    pub fn wait(&mut self, signal: &Arc<Signal>, value: u64) -> Result<usize> {
        self.recording("tg_cmdbuf_wait")?;
        self.same_device(signal.device(), "tg_cmdbuf_wait")?;
        Ok(self.push(Node::Wait {
            signal: signal.clone(),
            value,
        }))
    }

    /// Record a full barrier (earlier commands complete, their writes visible); returns the node
    /// index.
    pub fn barrier(&mut self) -> Result<usize> {
        self.recording("tg_cmdbuf_barrier")?;
        Ok(self.push(Node::Barrier))
    }

    fn same_device(&self, d: &Device, call: &str) -> Result<()> {
        if Arc::ptr_eq(&d.inner, &self.dev.inner) {
            Ok(())
        } else {
            Err(Error::invalid(format!(
                "{call}: the signal belongs to another device"
            )))
        }
    }

    /// End recording: write the commands into the command buffer's GPU memory. Replays and
    /// updates need it; recording after it is refused.
    pub fn finish(&mut self) -> Result<()> {
        self.recording("tg_cmdbuf_finish")?;
        if self.nodes.is_empty() {
            return Err(Error::invalid("tg_cmdbuf_finish: nothing was recorded"));
        }
        let arch = self.dev.arch();
        // Layout: pushbuffer, then one SLOT per launch, then constant banks too big for a slot.
        let launches = self
            .nodes
            .iter()
            .filter(|n| matches!(n, Node::Launch { .. }))
            .count() as u64;
        let pb_bytes = ((self.nodes.len() * MAX_NODE_DW + 16) * 4).div_ceil(256) as u64 * 256;
        let mut big_cb = 0u64;
        for n in &self.nodes {
            if let Node::Launch { kernel, .. } = n {
                let ki = kernel.info();
                let cb = (ki.param_base as u64 + ki.param_bytes as u64).div_ceil(256) * 256;
                if cb > SLOT - CBANK_IN_SLOT {
                    big_cb += cb;
                }
            }
        }
        // Then one grid workspace per cooperative launch (WS_STRIDE bytes each).
        let coop = self
            .nodes
            .iter()
            .filter(|n| matches!(n, Node::Launch { cfg, .. } if cfg.cooperative))
            .count() as u64;
        let total = pb_bytes + launches * SLOT + big_cb + coop * WS_STRIDE;
        let alloc = self.dev.backend().alloc(
            total,
            MemFlags {
                write_combined: true,
                zeroed: true,
                ..Default::default()
            },
        )?;
        let built = self.write_image(&alloc, pb_bytes, total - coop * WS_STRIDE, arch);
        match built {
            Ok((dwords, ends_with_launch, patches, launches)) => {
                self.image = Some(Image {
                    alloc,
                    dwords,
                    ends_with_launch,
                    cooperative: coop > 0,
                    signals: self.nodes.iter().any(|n| matches!(n, Node::Signal { .. })),
                    patches,
                    launches,
                });
                Ok(())
            }
            Err(e) => {
                let _ = self.dev.backend().free(&alloc);
                Err(e)
            }
        }
    }

    fn write_image(
        &self,
        alloc: &Allocation,
        pb_bytes: u64,
        ws_base: u64,
        arch: &'static crate::hw::arch::ArchInfo,
    ) -> Result<Built> {
        let mut next_ws = ws_base;
        let mut pb_words = vec![0u32; (pb_bytes / 4) as usize];
        let mut pos = 0usize;
        let mut next_slot = pb_bytes;
        let mut next_big = pb_bytes
            + SLOT
                * self
                    .nodes
                    .iter()
                    .filter(|n| matches!(n, Node::Launch { .. }))
                    .count() as u64;
        let mut patches = Vec::with_capacity(self.nodes.len());
        let mut last_launch = false;
        // The previous launch's QMD while launches follow each other directly: the next one is
        // chained to it (DEPENDENT_QMD) instead of being sent with a wait for idle before it.
        let mut prev_qmd: Option<(*mut u32, &crate::hw::qmd::QmdTemplate, &Kernel)> = None;
        let mut launches: Vec<Option<LaunchMeta>> = vec![None; self.nodes.len()];
        let mut prev_node = 0usize;
        let chain = !matches!(std::env::var("TEGRAGPU_CMDBUF_CHAIN").as_deref(), Ok("0"));
        // Chained predecessors prefetch their successor's program and constant bank 0 (Hopper),
        // unless TEGRAGPU_CMDBUF_PREFETCH=0. Successors then keep their prefetched bank 0, so
        // every replay first invalidates the constant cache: no line of an earlier replay (with
        // other parameters) or of earlier contents of this memory survives into the chain.
        let prefetch = !matches!(
            std::env::var("TEGRAGPU_CMDBUF_PREFETCH").as_deref(),
            Ok("0")
        );
        let mut scratch = vec![0u8; crate::hw::cbank0::MAX_CBANK0_BYTES];
        let mut invalidated = false;
        if chain
            && prefetch
            && self
                .nodes
                .iter()
                .any(|n| matches!(n, Node::Launch { kernel, .. } if kernel.qmd.chain_prefetches()))
        {
            let mut pb = PushBuf::for_arch(&mut pb_words[..MAX_NODE_DW], arch);
            pb.invalidate_shader_caches_no_wfi(INVALIDATE_CONSTANT_CACHE)?;
            pos += pb.len();
            invalidated = true;
        }
        for (i, n) in self.nodes.iter().enumerate() {
            // A launch followed by one that may run concurrently with it is not chained: the
            // concurrent one is sent right after it and must not start before the group's
            // predecessors are done.
            let next_joins =
                matches!(self.nodes.get(i + 1), Some(Node::Launch { cfg, .. }) if cfg.concurrent);
            let mut pb = PushBuf::for_arch(&mut pb_words[pos..pos + MAX_NODE_DW], arch);
            let patch = match n {
                Node::Launch {
                    kernel,
                    cfg,
                    params,
                } => {
                    let ki = kernel.info();
                    let param_base = ki.param_base as u64;
                    let cb_size = (param_base + ki.param_bytes as u64).div_ceil(256) * 256;
                    let qmd_off = next_slot;
                    next_slot += SLOT;
                    let cb_off = if cb_size <= SLOT - CBANK_IN_SLOT {
                        qmd_off + CBANK_IN_SLOT
                    } else {
                        let o = next_big;
                        next_big += cb_size;
                        o
                    };
                    let (qmd_va, cb_va) = (alloc.gpu_va + qmd_off, alloc.gpu_va + cb_off);
                    let cb = &mut scratch[..cb_size as usize];
                    // A cooperative launch gets a grid workspace of its own (its grid barrier).
                    let ws = if cfg.cooperative {
                        let off = next_ws;
                        next_ws += WS_STRIDE;
                        // SAFETY: [off, +WS_STRIDE) lies inside the allocation (sized in
                        // `finish`), CPU-mapped and zeroed: wsSize = 8, barrier = 0.
                        unsafe {
                            std::ptr::write_volatile(alloc.cpu.add(off as usize) as *mut u32, 8)
                        };
                        Some(alloc.gpu_va + off)
                    } else {
                        None
                    };
                    let mut words = self.encode_launch(kernel, cfg, params, cb, cb_va, ws)?;
                    // A cooperative launch is sent from the pushbuffer after a wait for idle, as
                    // on a queue, and the launch after it waits the same way: no DEPENDENT_QMD
                    // link leads to or from it. (Thread-block cluster launches chain like any
                    // other: GRID_GPC_CGA QMDs scheduled by DEPENDENT_QMD keep their clusters.)
                    let alone = cfg.cooperative;
                    // Chained to the launch before it (DEPENDENT_QMD) instead of sent here.
                    let joins_group = cfg.concurrent && last_launch;
                    let chained =
                        chain && !(alone || next_joins || joins_group) && prev_qmd.is_some();
                    let prefetched = chained
                        && prefetch
                        && prev_qmd.is_some_and(|(_, t, pk)| {
                            t.chain_prefetches()
                                && !pk.module.cubin.names_constant_bank(CHAIN_PREFETCH_BANK)
                        });
                    if prefetched {
                        if !invalidated {
                            // The first words of the image run before any of its grids.
                            return Err(Error::new(
                                Status::Internal,
                                "tg_cmdbuf_finish: constant cache invalidate missing",
                            ));
                        }
                        kernel.qmd.clear_cbank0_invalidate(&mut words);
                    }
                    let qmd_cpu = alloc.cpu.wrapping_add(qmd_off as usize) as *mut u32;
                    // SAFETY: [qmd_off, +SLOT) and [cb_off, +cb_size) lie inside the allocation
                    // (sized in `finish`), which is CPU-mapped and not yet used by the GPU.
                    unsafe {
                        crate::core::wcmem::copy_dwords(
                            qmd_cpu,
                            words.as_ptr(),
                            kernel.qmd.dwords(),
                        );
                        crate::core::wcmem::copy(
                            alloc.cpu.add(cb_off as usize),
                            cb.as_ptr(),
                            cb.len(),
                        );
                    }
                    match prev_qmd {
                        // Joins the group of the launch before it: sent at once.
                        _ if cfg.concurrent && last_launch => {
                            pb.send_pcas(qmd_va, PCAS_ACTION)?;
                        }
                        Some((prev, tmpl, _)) if chained => {
                            // SAFETY: the previous launch's QMD slot in this allocation.
                            let prev_words =
                                unsafe { std::slice::from_raw_parts_mut(prev, tmpl.dwords()) };
                            if prefetched {
                                tmpl.chain(prev_words, qmd_va, &words, &kernel.qmd)?;
                            } else {
                                tmpl.set_dependent(prev_words, qmd_va)?;
                            }
                        }
                        _ => {
                            if last_launch {
                                pb.wait_for_idle()?;
                            }
                            pb.send_pcas(qmd_va, PCAS_ACTION)?;
                        }
                    }
                    // The next launch may be chained to this one only when this one runs alone
                    // and is not a cooperative launch.
                    prev_qmd = if alone || next_joins || (cfg.concurrent && last_launch) {
                        None
                    } else {
                        Some((qmd_cpu, &*kernel.qmd, kernel))
                    };
                    if chained {
                        if let Some(Some(m)) = launches.get_mut(prev_node) {
                            m.succ = Some((i, prefetched));
                        }
                    }
                    launches[i] = Some(LaunchMeta {
                        qmd_off,
                        cb_off,
                        cb_size,
                        prefetched,
                        succ: None,
                        words,
                        ws,
                    });
                    prev_node = i;
                    last_launch = true;
                    Patch::Params {
                        // SAFETY: inside the constant bank just written.
                        cpu: unsafe { alloc.cpu.add((cb_off + param_base) as usize) },
                        len: params.len(),
                    }
                }
                Node::Signal { signal, value } => {
                    prev_qmd = None;
                    pb.host_sem_release(signal.gpu_va(), *value, true, true, true)?;
                    last_launch = false;
                    payload_patch(&pb, *value, alloc, pos)?
                }
                Node::Wait { signal, value } => {
                    prev_qmd = None;
                    pb.host_sem_acquire_geq(signal.gpu_va(), *value)?;
                    payload_patch(&pb, *value, alloc, pos)?
                }
                Node::Barrier => {
                    prev_qmd = None;
                    pb.wait_for_idle()?;
                    pb.host_wfi()?;
                    pb.host_membar_sys()?;
                    last_launch = false;
                    Patch::None
                }
            };
            pos += pb.len();
            patches.push(patch);
        }
        // SAFETY: the pushbuffer area is the first pb_bytes of the allocation.
        unsafe {
            crate::core::wcmem::copy_dwords(alloc.cpu as *mut u32, pb_words.as_ptr(), pos);
        }
        // The allocation is write-combined: make the image visible before anyone reads it.
        // x86-64: `mfence` drains the write-combining buffers now. aarch64: `dmb ish` orders
        // only for the other CPUs; the GPU reads this memory only for work submitted after it,
        // and that submit's `dsb st` (crate::hw::barrier::before_gp_put, cumulative) makes these
        // stores visible to the GPU first.
        std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
        Ok((pos as u32, last_launch, patches, launches))
    }

    /// A launch node's constant bank 0 (into `cb`, zeroed first; its GPU address `cb_va`) and
    /// QMD, as a queue builds them, before any chaining. `ws`: a cooperative launch's grid
    /// workspace.
    fn encode_launch(
        &self,
        kernel: &Kernel,
        cfg: &LaunchConfig,
        params: &[u8],
        cb: &mut [u8],
        cb_va: u64,
        ws: Option<u64>,
    ) -> Result<[u32; 96]> {
        cb.fill(0);
        let shared_total = build_launch_cbank(&self.dev, kernel, cfg, cb, cb_va, |d| {
            d.copy_from_slice(params);
            Ok(())
        })?;
        match (cfg.cooperative, ws) {
            (false, _) => {}
            (true, Some(ws)) => crate::hw::cbank0::put_grid_workspace(self.dev.arch(), cb, ws)?,
            (true, None) => {
                return Err(Error::new(
                    Status::Internal,
                    "tg_cmdbuf: cooperative launch without a grid workspace",
                ))
            }
        }
        let mut words = [0u32; 96];
        build_launch_qmd(
            &self.dev,
            kernel,
            cfg,
            shared_total,
            (cb_va, cb.len() as u32),
            &mut words,
        )?;
        Ok(words)
    }

    /// Launch node `index` for an update by `call`: refused unless it is a launch of `kernel`
    /// (the same function of the same module). Its configuration and parameters.
    fn launch_node(
        &self,
        index: usize,
        kernel: &Kernel,
        call: &str,
    ) -> Result<(&LaunchConfig, &[u8])> {
        let (recorded, cfg, params) = match self.node(index, call)? {
            Node::Launch {
                kernel: k,
                cfg,
                params,
            } => (k, cfg, params),
            other => {
                return Err(Error::invalid(format!(
                    "{call}: node {index} is {}, not a launch",
                    node_kind(other)
                )))
            }
        };
        if !Arc::ptr_eq(&recorded.module, &kernel.module) || recorded.index != kernel.index {
            return Err(Error::invalid(format!(
                "{call}: node {index} launches \"{}\", not \"{}\"",
                recorded.attributes().name,
                kernel.attributes().name
            )));
        }
        Ok((cfg, params))
    }

    /// Wait until every replay recorded so far has completed (at most the timeout per queue).
    pub fn wait_replays(&self, call: &str) -> Result<()> {
        wait_fence(&self.dev, &self.inflight, self.timeout_ns, call)
    }

    fn finished(&self, call: &str) -> Result<&Image> {
        self.image.as_ref().ok_or_else(|| {
            Error::invalid(format!(
                "{call}: the command buffer is not finished (tg_cmdbuf_finish)"
            ))
        })
    }

    fn node(&self, index: usize, call: &str) -> Result<&Node> {
        self.nodes.get(index).ok_or_else(|| {
            Error::invalid(format!(
                "{call}: node {index} does not exist (the command buffer has {} nodes)",
                self.nodes.len()
            ))
        })
    }

    /// Replace the parameters of launch node `index` for later replays. `kernel` must be the
    /// kernel the node launches (the same function of the same module) and `params` its whole
    /// parameter block. Waits for earlier replays to complete first.
    pub fn set_params(&mut self, index: usize, kernel: &Kernel, params: &[u8]) -> Result<()> {
        const CALL: &str = "tg_cmdbuf_set_params";
        self.finished(CALL)?;
        self.launch_node(index, kernel, CALL)?;
        let Some(Patch::Params { cpu, len }) = self.image.as_ref().map(|i| i.patches[index]) else {
            return Err(Error::new(
                Status::Internal,
                format!("{CALL}: node {index} has no parameter block"),
            ));
        };
        if params.len() != len {
            return Err(Error::new(
                Status::InvalidLaunch,
                format!(
                    "{CALL}: kernel \"{}\" takes {len} bytes of parameters, got {}",
                    kernel.attributes().name,
                    params.len()
                ),
            ));
        }
        self.wait_replays(CALL)?;
        // SAFETY: the parameter block inside the image's constant bank; no replay reads it now.
        unsafe { crate::core::wcmem::copy(cpu, params.as_ptr(), len) };
        // wait_replays saw the GPU done with the image (crate::hw::barrier::after_gpu_value
        // keeps these stores after that). The fence: as where the image is first written.
        std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
        if let Some(Node::Launch { params: p, .. }) = self.nodes.get_mut(index) {
            p.copy_from_slice(params);
        }
        Ok(())
    }

    /// Replace the launch configuration (grid, block, dynamic shared memory) of launch node
    /// `index` for later replays, as a CUDA graph's kernel node takes new dimensions
    /// (`cuGraphExecKernelNodeSetParams`). `kernel` must be the kernel the node launches;
    /// `cfg` is checked like a recorded launch's, and its `concurrent` flag must be the
    /// recorded one (it decides how the command buffer is laid out). Waits for earlier replays
    /// to complete, then rewrites that node's QMD and constant bank 0 in place (and the link
    /// from it to a launch chained after it).
    pub fn set_launch(&mut self, index: usize, kernel: &Kernel, cfg: &LaunchConfig) -> Result<()> {
        const CALL: &str = "tg_cmdbuf_set_launch";
        self.finished(CALL)?;
        let (old_cfg, params) = self.launch_node(index, kernel, CALL)?;
        let (old_cfg, params) = (*old_cfg, params.to_vec());
        // The flags decide how the command buffer is laid out.
        for (flag, was, now) in [
            ("TG_LAUNCH_CONCURRENT", old_cfg.concurrent, cfg.concurrent),
            (
                "TG_LAUNCH_COOPERATIVE",
                old_cfg.cooperative,
                cfg.cooperative,
            ),
        ] {
            if was != now {
                return Err(Error::invalid(format!(
                    "{CALL}: node {index} was recorded {} {flag}; the flag cannot change",
                    if was { "with" } else { "without" }
                )));
            }
        }
        let cluster = |c: &LaunchConfig| super::queue::launch_cluster(kernel, c).is_some();
        if cluster(cfg) != cluster(&old_cfg) {
            return Err(Error::invalid(format!(
                "{CALL}: node {index} was recorded {} a thread-block cluster; a launch cannot change between cluster and plain (cfg->cluster {:?})",
                if cluster(&old_cfg) { "with" } else { "without" },
                cfg.cluster
            )));
        }
        check_launch(&self.dev, kernel, cfg).map_err(|e| rename(e, "tg_launch", CALL))?;
        let Some(meta) = self
            .image
            .as_ref()
            .and_then(|i| i.launches.get(index).cloned().flatten())
        else {
            return Err(Error::new(
                Status::Internal,
                format!("{CALL}: node {index} has no launch in the image"),
            ));
        };
        // Build the new QMD and bank before waiting: a configuration the encoders refuse
        // changes nothing.
        let (gpu_va, cpu) = {
            let a = &self.image.as_ref().expect("finished").alloc;
            (a.gpu_va, a.cpu)
        };
        let cb_va = gpu_va + meta.cb_off;
        let mut cb = vec![0u8; meta.cb_size as usize];
        let mut words = self.encode_launch(kernel, cfg, &params, &mut cb, cb_va, meta.ws)?;
        if meta.prefetched {
            kernel.qmd.clear_cbank0_invalidate(&mut words);
        }
        let mut out = words;
        if let Some((succ, prefetch)) = meta.succ {
            let image = self.image.as_ref().expect("finished");
            let (Some(Some(sm)), Some(Node::Launch { kernel: sk, .. })) =
                (image.launches.get(succ), self.nodes.get(succ))
            else {
                return Err(Error::new(
                    Status::Internal,
                    format!("{CALL}: node {index}'s successor {succ} is not a launch"),
                ));
            };
            let s_va = gpu_va + sm.qmd_off;
            if prefetch {
                kernel.qmd.chain(&mut out, s_va, &sm.words, &sk.qmd)?;
            } else {
                kernel.qmd.set_dependent(&mut out, s_va)?;
            }
        }
        self.wait_replays(CALL)?;
        // SAFETY: the node's QMD slot and constant bank inside the image's CPU-mapped
        // allocation; no replay reads them now.
        unsafe {
            crate::core::wcmem::copy_dwords(
                cpu.add(meta.qmd_off as usize) as *mut u32,
                out.as_ptr(),
                kernel.qmd.dwords(),
            );
            crate::core::wcmem::copy(cpu.add(meta.cb_off as usize), cb.as_ptr(), cb.len());
        }
        // As in set_params.
        std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
        if let Some(Some(m)) = self.image.as_mut().and_then(|i| i.launches.get_mut(index)) {
            m.words = words;
        }
        if let Some(Node::Launch { cfg: c, .. }) = self.nodes.get_mut(index) {
            *c = *cfg;
        }
        Ok(())
    }

    /// Replace the value of signal or wait node `index` for later replays. Waits for earlier
    /// replays to complete first.
    pub fn set_value(&mut self, index: usize, value: u64) -> Result<()> {
        const CALL: &str = "tg_cmdbuf_set_value";
        self.finished(CALL)?;
        match self.node(index, CALL)? {
            Node::Signal { .. } | Node::Wait { .. } => {}
            other => {
                return Err(Error::invalid(format!(
                    "{CALL}: node {index} is {}, not a signal or a wait",
                    node_kind(other)
                )))
            }
        }
        let Some(Patch::Payload { cpu }) = self.image.as_ref().map(|i| i.patches[index]) else {
            return Err(Error::new(
                Status::Internal,
                format!("{CALL}: node {index} has no payload"),
            ));
        };
        self.wait_replays(CALL)?;
        // SAFETY: PAYLOAD_LO/HI of the node's method run inside the image; no replay reads them.
        unsafe {
            std::ptr::write_volatile(cpu, value as u32);
            std::ptr::write_volatile(cpu.add(1), (value >> 32) as u32);
        }
        // As in set_params.
        std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
        match self.nodes.get_mut(index) {
            Some(Node::Signal { value: v, .. }) | Some(Node::Wait { value: v, .. }) => *v = value,
            _ => {}
        }
        Ok(())
    }

    /// The device this command buffer records for.
    pub fn device(&self) -> &Device {
        &self.dev
    }
}

/// The payload words of the semaphore run just recorded at `pos` (checked against `value`).
fn payload_patch(pb: &PushBuf<'_>, value: u64, alloc: &Allocation, pos: usize) -> Result<Patch> {
    let w = pb.as_slice();
    if w.len() != SEM_RUN_DW || w[3] != value as u32 || w[4] != (value >> 32) as u32 {
        return Err(Error::new(
            Status::Internal,
            format!("tg_cmdbuf: unexpected semaphore method layout {w:x?}"),
        ));
    }
    // SAFETY: dword pos + 3 of the pushbuffer area, inside the allocation.
    Ok(Patch::Payload {
        cpu: unsafe { (alloc.cpu as *mut u32).add(pos + 3) },
    })
}

fn rename(mut e: Error, from: &str, to: &str) -> Error {
    if let Some(rest) = e.message.strip_prefix(from) {
        e.message = format!("{to}{rest}");
    }
    e
}

impl Queue {
    /// Record a replay of the finished command buffer `cb` on this compute queue: one GPFIFO
    /// entry (plus what the queue's own channel state needs); the next submit makes it visible
    /// with one doorbell. No system call; no heap allocation once this queue has replayed `cb`.
    pub fn replay(&mut self, cb: &mut CmdBuf) -> Result<()> {
        if !Arc::ptr_eq(&cb.dev.inner, &self.device().inner) {
            return Err(cb.other_device());
        }
        let img = cb.finished(REPLAY)?;
        let (va, dwords, ends) = (img.alloc.gpu_va, img.dwords, img.ends_with_launch);
        if img.cooperative {
            cb.check_no_replay_elsewhere(self.track())?;
        }
        let value = self.push_external(va, dwords, ends)?;
        cb.note_replay(self.track(), value);
        Ok(())
    }
}

const REPLAY: &str = "tg_queue_replay";

impl CmdBuf {
    /// A command buffer with cooperative launches replays on one queue at a time: each such
    /// launch has one grid barrier in the command buffer, which two grids running at once
    /// would share. Refused while a replay on another queue has not completed.
    #[cold]
    fn check_no_replay_elsewhere(&self, track: &Arc<QueueTrack>) -> Result<()> {
        for (w, v) in &self.inflight {
            if let Some(t) = w.upgrade() {
                if !Arc::ptr_eq(&t, track) && t.completed() < *v && t.channel_error().is_none() {
                    return Err(Error::invalid(format!(
                        "{REPLAY}: the command buffer holds cooperative launches and a replay on another queue ({} queue {}) has not completed; their grid barriers serve one replay at a time (wait for it, or record a second command buffer)",
                        t.kind_name, t.token
                    )));
                }
            }
        }
        Ok(())
    }

    #[cold]
    fn other_device(&self) -> Error {
        Error::invalid(format!(
            "{REPLAY}: the command buffer belongs to another device"
        ))
    }

    /// The command buffer is in use until `track`'s submission `value` has completed.
    #[inline(always)]
    fn note_replay(&mut self, track: &Arc<QueueTrack>, value: u64) {
        if self.image.as_ref().is_some_and(|i| i.signals) {
            self.note_signal_releases(track, value);
        }
        match self
            .inflight
            .iter_mut()
            .find(|(w, _)| std::ptr::eq(w.as_ptr(), Arc::as_ptr(track)))
        {
            Some((_, v)) => *v = (*v).max(value),
            None => self.inflight.push((Arc::downgrade(track), value)),
        }
    }

    /// Tell each signal the replay releases which queue carries the release (for waits that
    /// submit it).
    #[cold]
    fn note_signal_releases(&self, track: &Arc<QueueTrack>, value: u64) {
        for n in &self.nodes {
            if let Node::Signal { signal, value: v } = n {
                signal.note_release(track.serial, *v, value);
            }
        }
    }

    /// [`Queue::replay`] in two halves, for the C API: this one checks that the command buffer
    /// can replay on `q`, notes that it is in use until `q`'s next submission completes, and
    /// returns its image (GPU address, dwords, whether it ends with a launch) for
    /// `q.push_external`. The C API calls it under the command buffer's lock and records the
    /// replay after the unlock, so that no locked instruction runs between the writes to the
    /// write-combined rings and the submit's fence (on x86 each locked instruction drains the
    /// write-combining buffers). A later `set_params` waits for that submission like for any
    /// recorded replay.
    #[inline(always)]
    pub(crate) fn begin_replay(&mut self, q: &Queue) -> Result<(u64, u32, bool)> {
        if !Arc::ptr_eq(&self.dev.inner, &q.device().inner) {
            return Err(self.other_device());
        }
        let img = self.finished(REPLAY)?;
        let out = (img.alloc.gpu_va, img.dwords, img.ends_with_launch);
        if img.cooperative {
            self.check_no_replay_elsewhere(q.track())?;
        }
        if q.is_compute() {
            // (A copy queue is refused by push_external; nothing is noted for it.)
            self.note_replay(q.track(), q.track().submitted() + 1);
        }
        Ok(out)
    }
}

impl Drop for CmdBuf {
    fn drop(&mut self) {
        if let Some(img) = self.image.take() {
            // Released once the replays recorded so far have completed (the device's fence:
            // every queue's recorded work, which includes them).
            self.dev.free_when_idle(img.alloc);
        }
    }
}
