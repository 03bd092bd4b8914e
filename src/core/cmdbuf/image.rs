//! Finishing a command buffer: the layout of its GPU memory (pushbuffer, one QMD slot per
//! launch with its constant bank 0, larger banks, grid workspaces) and the image written into it.

use super::{CmdBuf, Image, LaunchMeta, Node, Patch};
use crate::backend::{Allocation, MemFlags};
use crate::core::module::Kernel;
use crate::core::queue::{build_launch_cbank, build_launch_qmd, LaunchConfig};
use crate::error::{Error, Result, Status};
use crate::hw::pushbuf::PushBuf;

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

/// What [`CmdBuf::write_image`] wrote: pushbuffer dwords, whether the image ends with a launch,
/// the update patches and the launch metadata of every node.
type Built = (u32, bool, Vec<Patch>, Vec<Option<LaunchMeta>>);

impl CmdBuf {
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
    pub(super) fn encode_launch(
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
