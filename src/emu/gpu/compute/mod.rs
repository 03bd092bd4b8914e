//! Compute engine (c6c0/c7c0/c9c0 with QMD V03, cbc0 with QMD V04): class state, report
//! semaphores, I2M, and grid launches of reference kernels.
//!
//! The QMD is decoded with this module's own field table, written from
//! gpu-programming-interface.md §4.1 (V03_00) and §4.3 (V04_00). It deliberately shares nothing
//! with the encoder in `crate::hw`, so an encoder bug cannot hide behind a matching decoder bug.

mod qmd;

pub use qmd::{decode_qmd, DecodedQmd};
use qmd::{decode_v03, decode_v04, Qmd};

use super::{mem, Fault};
use super::{ERR_GR_EXCEPTION, ERR_MMU_FAULT, ERR_UNIMPLEMENTED_METHOD, HOPPER_COMPUTE_A};
use crate::emu::hwif::Mmu;
use crate::emu::kernels::{self, LaunchCtx};
use std::time::Instant;

// Compute class methods (byte offsets, §3).
const NO_OPERATION: u32 = 0x100;
const WAIT_FOR_IDLE: u32 = 0x110;
const LINE_LENGTH_IN: u32 = 0x180;
const LINE_COUNT: u32 = 0x184;
const OFFSET_OUT_UPPER: u32 = 0x188;
const OFFSET_OUT: u32 = 0x18c;
const LAUNCH_DMA: u32 = 0x1b0;
const LOAD_INLINE_DATA: u32 = 0x1b4;
const SET_QMD_VIRTUALIZATION_BASE_A: u32 = 0x214;
const SET_QMD_VIRTUALIZATION_BASE_B: u32 = 0x218;
const INVALIDATE_SHADER_CACHES: u32 = 0x21c;
const INVALIDATE_SKED_CACHES: u32 = 0x298;
const SET_SHADER_SHARED_MEMORY_WINDOW_A: u32 = 0x2a0;
const SET_SHADER_SHARED_MEMORY_WINDOW_B: u32 = 0x2a4;
const SET_CWD_SLOT_COUNT: u32 = 0x2b0;
const SEND_PCAS_A: u32 = 0x2b4;
const SEND_PCAS_B: u32 = 0x2b8;
const SEND_SIGNALING_PCAS_B: u32 = 0x2bc;
const SEND_SIGNALING_PCAS2_B: u32 = 0x2c0;
const SET_SHADER_LOCAL_MEMORY_NON_THROTTLED_A: u32 = 0x2e4;
const SET_SHADER_LOCAL_MEMORY_NON_THROTTLED_B: u32 = 0x2e8;
const SET_SHADER_LOCAL_MEMORY_NON_THROTTLED_C: u32 = 0x2ec;
const SET_SPA_VERSION: u32 = 0x310;
const SET_SHADER_LOCAL_MEMORY_A: u32 = 0x790;
const SET_SHADER_LOCAL_MEMORY_B: u32 = 0x794;
const SET_SHADER_LOCAL_MEMORY_WINDOW_A: u32 = 0x7b0;
const SET_SHADER_LOCAL_MEMORY_WINDOW_B: u32 = 0x7b4;
const SET_SHADER_CACHE_CONTROL: u32 = 0xd94;
const SET_SM_TIMEOUT_INTERVAL: u32 = 0xde4;
const INVALIDATE_TEXTURE_HEADER_CACHE_NO_WFI: u32 = 0x244;
const SET_TEXTURE_HEADER_VERSION: u32 = 0x7ac;
const INVALIDATE_SAMPLER_CACHE_NO_WFI: u32 = 0x1424;
const SET_TEX_SAMPLER_POOL_A: u32 = 0x155c;
const SET_TEX_SAMPLER_POOL_B: u32 = 0x1560;
const SET_TEX_SAMPLER_POOL_C: u32 = 0x1564;
const SET_TEX_HEADER_POOL_A: u32 = 0x1574;
const SET_TEX_HEADER_POOL_B: u32 = 0x1578;
const SET_TEX_HEADER_POOL_C: u32 = 0x157c;
const SET_SHADER_EXCEPTIONS: u32 = 0x1528;
const INVALIDATE_SHADER_CACHES_NO_WFI: u32 = 0x1698;
const SET_RENDER_ENABLE_OVERRIDE: u32 = 0x1944;
const SET_REPORT_SEMAPHORE_A: u32 = 0x1b00;
const SET_REPORT_SEMAPHORE_B: u32 = 0x1b04;
const SET_REPORT_SEMAPHORE_C: u32 = 0x1b08;
const SET_REPORT_SEMAPHORE_D: u32 = 0x1b0c;

/// Dependent-QMD chains longer than this are treated as a loop.
const MAX_CHAIN: u32 = 1 << 16;

/// Compute-object state.
pub(crate) struct ComputeState {
    pub class: u32,
    shared_window: [Option<u32>; 2],
    local_window: [Option<u32>; 2],
    local_memory: [Option<u32>; 2],
    non_throttled: [Option<u32>; 3],
    report: [u32; 3],
    pcas_a: Option<u32>,
    i2m_line_length: u32,
    i2m_line_count: u32,
    i2m_offset_out: [u32; 2],
    i2m: Option<I2m>,
    /// SET_TEX_HEADER_POOL_A/B/C and SET_TEX_SAMPLER_POOL_A/B/C as written.
    tex_headers: [Option<u32>; 3],
    tex_samplers: [Option<u32>; 3],
    /// SET_TEXTURE_HEADER_VERSION (Hopper class only).
    tex_header_version: u32,
    /// Cache invalidations requested so far (recorded, nothing to invalidate in the model).
    pub invalidates: u64,
    /// Grids launched (reference kernel run) on this object.
    pub launches: u64,
    /// A grid whose kernel has not finished (it asked to keep running): the QMD and when it
    /// started. The channel stays blocked on it; see [`ComputeState::resume`].
    running: Option<(u64, Instant)>,
}

/// What one QMD did.
enum Step {
    /// Finished; the dependent QMD to schedule next, if any.
    Done(Option<u64>),
    /// Still running (started at the given time).
    Running(Instant),
}

/// An inline-to-memory transfer in progress.
struct I2m {
    dst: u64,
    total: usize,
    data: Vec<u8>,
}

fn gr(address: Option<u64>, what: String) -> Fault {
    Fault::new(ERR_GR_EXCEPTION, address, what)
}

fn unimpl(what: String) -> Fault {
    Fault::new(ERR_UNIMPLEMENTED_METHOD, None, what)
}

impl ComputeState {
    pub(crate) fn new(class: u32) -> ComputeState {
        ComputeState {
            class,
            shared_window: [None; 2],
            local_window: [None; 2],
            local_memory: [None; 2],
            non_throttled: [None; 3],
            report: [0; 3],
            pcas_a: None,
            i2m_line_length: 0,
            i2m_line_count: 0,
            i2m_offset_out: [0; 2],
            i2m: None,
            tex_headers: [None; 3],
            tex_samplers: [None; 3],
            tex_header_version: 0,
            invalidates: 0,
            launches: 0,
            running: None,
        }
    }

    /// Whether a grid is still running (the channel must not go past its launch).
    pub(crate) fn is_running(&self) -> bool {
        self.running.is_some()
    }

    /// When the running grid started, if one is running.
    pub(crate) fn running_since(&self) -> Option<Instant> {
        self.running.map(|(_, t)| t)
    }

    /// Give a running grid another turn; returns whether it (or a dependent grid it
    /// scheduled) is still running.
    pub(crate) fn resume(&mut self, mmu: &dyn Mmu) -> Result<bool, Fault> {
        if let Some((qmd_va, started)) = self.running.take() {
            self.run_chain(mmu, qmd_va, Some(started))?;
        }
        Ok(self.running.is_some())
    }

    /// The texture pools, once both are fully set (None before, and for the TEXHEAD_V2 layouts
    /// the model does not read).
    fn texture_pools(&self) -> Option<crate::emu::texture::TexturePools> {
        let [Some(ha), Some(hb), Some(hc)] = self.tex_headers else {
            return None;
        };
        let [Some(sa), Some(sb), Some(sc)] = self.tex_samplers else {
            return None;
        };
        if self.tex_header_version != 0 {
            return None;
        }
        Some(crate::emu::texture::TexturePools {
            headers: u64::from(ha) << 32 | u64::from(hb),
            header_max_index: hc,
            samplers: u64::from(sa) << 32 | u64::from(sb),
            sampler_max_index: sc,
        })
    }

    fn is_hopper(&self) -> bool {
        self.class == HOPPER_COMPUTE_A
    }

    /// Mask of the "upper address" fields of this class (c7c0 7:0 for semaphores, cbc0 24:0).
    fn sem_upper_mask(&self) -> u32 {
        if self.is_hopper() {
            0x01ff_ffff
        } else {
            0xff
        }
    }

    pub(crate) fn method(&mut self, mmu: &dyn Mmu, m: u32, data: u32) -> Result<(), Fault> {
        match m {
            NO_OPERATION
            | WAIT_FOR_IDLE
            | SET_QMD_VIRTUALIZATION_BASE_A
            | SET_QMD_VIRTUALIZATION_BASE_B
            | SET_SPA_VERSION
            | SET_SHADER_CACHE_CONTROL
            | SET_SM_TIMEOUT_INTERVAL
            | SET_SHADER_EXCEPTIONS
            | SET_RENDER_ENABLE_OVERRIDE
            | SEND_PCAS_B => {}
            SET_CWD_SLOT_COUNT if self.is_hopper() => {}
            SET_TEXTURE_HEADER_VERSION if self.is_hopper() => self.tex_header_version = data & 0xff,
            SET_TEX_HEADER_POOL_A => self.tex_headers[0] = Some(data & self.sem_upper_mask()),
            SET_TEX_HEADER_POOL_B => self.tex_headers[1] = Some(data),
            SET_TEX_HEADER_POOL_C => self.tex_headers[2] = Some(data & 0x3f_ffff),
            SET_TEX_SAMPLER_POOL_A => self.tex_samplers[0] = Some(data & self.sem_upper_mask()),
            SET_TEX_SAMPLER_POOL_B => self.tex_samplers[1] = Some(data),
            SET_TEX_SAMPLER_POOL_C => self.tex_samplers[2] = Some(data & 0xf_ffff),
            INVALIDATE_TEXTURE_HEADER_CACHE_NO_WFI => self.invalidates += 1,
            INVALIDATE_SHADER_CACHES
            | INVALIDATE_SKED_CACHES
            | INVALIDATE_SAMPLER_CACHE_NO_WFI
            | INVALIDATE_SHADER_CACHES_NO_WFI => self.invalidates += 1,
            SET_SHADER_SHARED_MEMORY_WINDOW_A => self.shared_window[0] = Some(data),
            SET_SHADER_SHARED_MEMORY_WINDOW_B => self.shared_window[1] = Some(data),
            SET_SHADER_LOCAL_MEMORY_WINDOW_A => self.local_window[0] = Some(data),
            SET_SHADER_LOCAL_MEMORY_WINDOW_B => self.local_window[1] = Some(data),
            SET_SHADER_LOCAL_MEMORY_A => self.local_memory[0] = Some(data),
            SET_SHADER_LOCAL_MEMORY_B => self.local_memory[1] = Some(data),
            SET_SHADER_LOCAL_MEMORY_NON_THROTTLED_A => self.non_throttled[0] = Some(data),
            SET_SHADER_LOCAL_MEMORY_NON_THROTTLED_B => self.non_throttled[1] = Some(data),
            SET_SHADER_LOCAL_MEMORY_NON_THROTTLED_C => self.non_throttled[2] = Some(data),
            SET_REPORT_SEMAPHORE_A => self.report[0] = data,
            SET_REPORT_SEMAPHORE_B => self.report[1] = data,
            SET_REPORT_SEMAPHORE_C => self.report[2] = data,
            SET_REPORT_SEMAPHORE_D => self.report_semaphore(mmu, data)?,
            LINE_LENGTH_IN => self.i2m_line_length = data,
            LINE_COUNT => self.i2m_line_count = data,
            OFFSET_OUT_UPPER => self.i2m_offset_out[0] = data & self.upper_mask17(),
            OFFSET_OUT => self.i2m_offset_out[1] = data,
            LAUNCH_DMA => self.i2m_launch(mmu, data)?,
            LOAD_INLINE_DATA => self.i2m_data(mmu, data)?,
            SEND_PCAS_A => self.pcas_a = Some(data),
            SEND_SIGNALING_PCAS2_B => match data & 0xf {
                0 | 1 | 8 => {}
                2 | 3 | 9 | 0xa | 0xb => self.launch_pcas(mmu)?,
                a => {
                    return Err(unimpl(format!(
                        "SEND_SIGNALING_PCAS2_B {data:#x}: PCAS_ACTION {a:#x} is not modelled"
                    )))
                }
            },
            SEND_SIGNALING_PCAS_B => {
                if data & 2 != 0 {
                    self.launch_pcas(mmu)?;
                }
            }
            _ => {
                return Err(unimpl(format!(
                    "unimplemented compute (class {:#x}) method {m:#x} = {data:#x}",
                    self.class
                )))
            }
        }
        Ok(())
    }

    fn upper_mask17(&self) -> u32 {
        if self.is_hopper() {
            0x01ff_ffff
        } else {
            0x1_ffff
        }
    }

    fn report_semaphore(&mut self, mmu: &dyn Mmu, d: u32) -> Result<(), Fault> {
        let addr =
            (u64::from(self.report[0] & self.sem_upper_mask()) << 32) | u64::from(self.report[1]);
        let payload = u64::from(self.report[2]);
        if d & 3 != 0 {
            return Err(unimpl(format!(
                "SET_REPORT_SEMAPHORE_D {d:#x}: operation {} is not modelled",
                d & 3
            )));
        }
        if d & (1 << 3) != 0 {
            return Err(unimpl(format!(
                "SET_REPORT_SEMAPHORE_D {d:#x}: reductions are not modelled"
            )));
        }
        let one_word = d & (1 << 28) != 0;
        if one_word {
            if addr % 4 != 0 {
                return Err(gr(
                    Some(addr),
                    format!("report semaphore at {addr:#x} is not 4-byte aligned"),
                ));
            }
            mem::release(mmu, addr, payload, false, false)?;
        } else {
            if addr % 16 != 0 {
                return Err(gr(
                    Some(addr),
                    format!("four-word report semaphore at {addr:#x} is not 16-byte aligned"),
                ));
            }
            mem::release(mmu, addr, payload, false, true)?;
        }
        Ok(())
    }

    fn i2m_launch(&mut self, mmu: &dyn Mmu, d: u32) -> Result<(), Fault> {
        if d & 1 == 0 {
            return Err(unimpl(format!(
                "I2M LAUNCH_DMA {d:#x}: block-linear destination is not modelled"
            )));
        }
        if (d >> 4) & 3 == 2 || d & 2 != 0 {
            return Err(unimpl(format!(
                "I2M LAUNCH_DMA {d:#x}: semaphore completion/reduction is not modelled"
            )));
        }
        if self.i2m_line_count > 1 {
            return Err(unimpl(format!(
                "I2M with LINE_COUNT {} > 1 is not modelled",
                self.i2m_line_count
            )));
        }
        let dst = (u64::from(self.i2m_offset_out[0]) << 32) | u64::from(self.i2m_offset_out[1]);
        let total = self.i2m_line_length as usize;
        self.i2m = None;
        if total > 0 {
            // Check the destination now so a bad address faults at launch.
            mem::for_each_piece(mmu, dst, total as u64, true, |_, _, _| {})?;
            self.i2m = Some(I2m {
                dst,
                total,
                data: Vec::new(),
            });
        }
        Ok(())
    }

    fn i2m_data(&mut self, mmu: &dyn Mmu, d: u32) -> Result<(), Fault> {
        let Some(t) = self.i2m.as_mut() else {
            return Err(unimpl(format!(
                "LOAD_INLINE_DATA {d:#x} without an I2M LAUNCH_DMA"
            )));
        };
        let take = (t.total - t.data.len()).min(4);
        t.data.extend_from_slice(&d.to_le_bytes()[..take]);
        if t.data.len() == t.total {
            if let Some(t) = self.i2m.take() {
                mem::write(mmu, t.dst, &t.data)?;
            }
        }
        Ok(())
    }

    fn launch_pcas(&mut self, mmu: &dyn Mmu) -> Result<(), Fault> {
        let Some(a) = self.pcas_a else {
            return Err(gr(
                None,
                "SEND_SIGNALING_PCAS2_B schedules a grid but SEND_PCAS_A was never sent".into(),
            ));
        };
        if self.shared_window.iter().any(Option::is_none)
            || self.local_window.iter().any(Option::is_none)
        {
            return Err(gr(
                None,
                "SKED exception (esr 0x01000000): launch without SET_SHADER_SHARED_MEMORY_WINDOW_A/B and \
                 SET_SHADER_LOCAL_MEMORY_WINDOW_A/B"
                    .into(),
            ));
        }
        self.run_chain(mmu, u64::from(a) << 8, None)
    }

    /// Run a QMD and its dependent QMDs until one keeps running (then `self.running` holds it).
    /// `started`: when the first QMD's grid started, if it is being resumed.
    fn run_chain(
        &mut self,
        mmu: &dyn Mmu,
        mut qmd_va: u64,
        mut started: Option<Instant>,
    ) -> Result<(), Fault> {
        let mut chain = 0u32;
        loop {
            let next = match self.launch_qmd(mmu, qmd_va, started.take())? {
                Step::Done(next) => next,
                Step::Running(t) => {
                    self.running = Some((qmd_va, t));
                    return Ok(());
                }
            };
            let Some(n) = next else { return Ok(()) };
            chain += 1;
            if chain >= MAX_CHAIN {
                return Err(gr(
                    Some(n),
                    format!("dependent-QMD chain longer than {MAX_CHAIN} QMDs (loop?)"),
                ));
            }
            qmd_va = n;
        }
    }

    /// Run one QMD. Returns the dependent QMD to schedule next, if any.
    fn launch_qmd(
        &mut self,
        mmu: &dyn Mmu,
        qmd_va: u64,
        started: Option<Instant>,
    ) -> Result<Step, Fault> {
        let size = if self.is_hopper() { 384 } else { 256 };
        let mut raw = vec![0u8; size];
        mem::read(mmu, qmd_va, &mut raw)?;
        let q: Vec<u32> = raw
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        let qmd = if self.is_hopper() {
            decode_v04(&q, qmd_va)?
        } else {
            decode_v03(&q, qmd_va)?
        };
        let Some(qmd) = qmd else {
            return Ok(Step::Done(None));
        };
        let started = started.unwrap_or_else(Instant::now);
        if !self.run_grid(mmu, &qmd, started)? {
            return Ok(Step::Running(started));
        }
        for r in &qmd.releases {
            r.write(mmu)?;
        }
        Ok(Step::Done(qmd.dependent))
    }

    /// Run a grid; returns `false` if its kernel keeps running (called again later).
    fn run_grid(&mut self, mmu: &dyn Mmu, q: &Qmd, started: Instant) -> Result<bool, Fault> {
        let [bx, by, bz] = q.block;
        let threads = u64::from(bx) * u64::from(by) * u64::from(bz);
        if bx == 0 || by == 0 || bz == 0 || bx > 1024 || by > 1024 || bz > 64 || threads > 1024 {
            return Err(gr(
                Some(q.va),
                format!(
                    "QMD at {:#x}: invalid CTA thread dimensions {:?}",
                    q.va, q.block
                ),
            ));
        }
        if q.grid[1] > 0xffff || q.grid[2] > 0xffff {
            return Err(gr(
                Some(q.va),
                format!("QMD at {:#x}: grid {:?} out of range", q.va, q.grid),
            ));
        }
        // Registers go to warps in units of 256, and the per-CTA check counts the CTA's warps
        // rounded up to a multiple of the SM's 4 register sub-partitions.
        let regs_per_warp = (u64::from(q.regs) * 32).div_ceil(256) * 256;
        if q.regs == 0
            || q.regs > 255
            || regs_per_warp * threads.div_ceil(32).next_multiple_of(4) > 65536
        {
            return Err(gr(
                Some(q.va),
                format!("QMD at {:#x}: register count {} with {threads} threads per CTA cannot be scheduled", q.va, q.regs),
            ));
        }
        if !q.cb0_valid {
            return Err(gr(
                Some(q.va),
                format!("QMD at {:#x}: CONSTANT_BUFFER_VALID(0) is not set", q.va),
            ));
        }
        if q.cb0_size > 0x10000 {
            return Err(gr(
                Some(q.va),
                format!(
                    "QMD at {:#x}: constant buffer 0 size {:#x} > 64 KiB",
                    q.va, q.cb0_size
                ),
            ));
        }
        let mut cbank0 = vec![0u8; q.cb0_size as usize];
        mem::read(mmu, q.cb0_addr, &mut cbank0)?;
        let Some(k) = kernels::find(mmu, q.program) else {
            if mmu.translate(q.program, 16, false).is_none() {
                return Err(Fault::new(
                    ERR_MMU_FAULT,
                    Some(q.program),
                    format!(
                        "MMU fault: instruction fetch at unmapped program address {:#x}",
                        q.program
                    ),
                ));
            }
            return Err(gr(
                Some(q.program),
                format!(
                    "GR exception: no reference kernel matches the code at program address {:#x}",
                    q.program
                ),
            ));
        };
        let meta = &k.meta;
        let sm = if self.is_hopper() { 90 } else { 87 };
        if let Some(ksm) = meta.sm {
            if (ksm >= 90) != (sm >= 90) {
                return Err(gr(
                    Some(q.program),
                    format!(
                        "kernel {} is sm_{ksm} code but runs on class {:#x} (illegal instruction)",
                        k.name, self.class
                    ),
                ));
            }
        }
        if let Some(r) = meta.regcount {
            if q.regs < r {
                return Err(gr(
                    Some(q.program),
                    format!(
                        "kernel {} needs {r} registers but the QMD grants {}",
                        k.name, q.regs
                    ),
                ));
            }
        }
        if let Some([mx, my, mz]) = meta.max_threads {
            let max = u64::from(mx) * u64::from(my.max(1)) * u64::from(mz.max(1));
            if threads > max {
                return Err(gr(
                    Some(q.program),
                    format!(
                        "kernel {} is limited to {max} threads per block, launched with {threads}",
                        k.name
                    ),
                ));
            }
        }
        if let Some(st) = meta.static_shared {
            let need = if sm >= 90 { st.max(0x400) } else { st + 0x400 };
            if q.shared < need {
                return Err(gr(
                    Some(q.program),
                    format!(
                        "kernel {} needs {need:#x} bytes of shared memory (static + 1 KiB reserve), QMD SHARED_MEMORY_SIZE is {:#x}",
                        k.name, q.shared
                    ),
                ));
            }
        }
        if let Some(stack) = meta.min_stack.filter(|s| *s > 0) {
            self.check_local_memory(mmu, q, stack, &k.name, sm)?;
        }
        let param_base = meta
            .param_base
            .unwrap_or(if sm >= 90 { 0x210 } else { 0x160 }) as usize;
        let ctx = LaunchCtx {
            grid: q.grid,
            block: q.block,
            cbank0: &cbank0,
            param_base,
            shared_bytes: q.shared,
            mmu,
            started,
            running: std::cell::Cell::new(false),
            textures: self.texture_pools(),
        };
        (k.f)(&ctx).map_err(|f| {
            Fault::new(
                ERR_MMU_FAULT,
                Some(f.address),
                format!("MMU fault in kernel {}: {}", k.name, f.what),
            )
        })?;
        if ctx.running.get() {
            return Ok(false);
        }
        self.launches += 1;
        Ok(true)
    }
}

impl ComputeState {
    /// A kernel with a stack needs (§3.3): a per-thread local size of at least
    /// `round_up(stack + 0x240, 32)` in the QMD (the stack pointer starts 0x240 below the top of
    /// the 16 MiB per-thread window), a backing store (SET_SHADER_LOCAL_MEMORY_A/B) and a
    /// per-TPC size (NON_THROTTLED_A/B) of at least
    /// `round_up(lm * 32, 0x200) * warps_per_sm * 2` bytes, the first TPC's share of which must be
    /// mapped writable. Anything less makes the stack accesses fault (code 31 at the backing base).
    fn check_local_memory(
        &self,
        mmu: &dyn Mmu,
        q: &Qmd,
        stack: u32,
        name: &str,
        sm: u32,
    ) -> Result<(), Fault> {
        let lm = (u64::from(stack) + 0x240).div_ceil(32) * 32;
        let per_warp = (lm * 32).div_ceil(0x200) * 0x200;
        let warps_per_sm: u64 = if sm >= 90 { 64 } else { 48 };
        let need_tpc = per_warp * warps_per_sm * 2;
        let base = match self.local_memory {
            [Some(hi), Some(lo)] => (u64::from(hi & self.upper_mask17()) << 32) | u64::from(lo),
            _ => 0,
        };
        let per_tpc = (u64::from(self.non_throttled[0].unwrap_or(0) & 0xff) << 32)
            | u64::from(self.non_throttled[1].unwrap_or(0));
        let qmd_lm = u64::from(q.local_low) + u64::from(q.local_high);
        let problem = if self.local_memory.iter().any(Option::is_none) {
            Some("SET_SHADER_LOCAL_MEMORY_A/B was never sent".to_string())
        } else if qmd_lm < lm {
            Some(format!(
                "the QMD grants {qmd_lm:#x} bytes of local memory per thread, it needs {lm:#x}"
            ))
        } else if per_tpc < need_tpc {
            Some(format!(
                "SET_SHADER_LOCAL_MEMORY_NON_THROTTLED gives {per_tpc:#x} bytes per TPC, it needs {need_tpc:#x}"
            ))
        } else if mmu.translate(base, need_tpc, true).is_none() {
            Some(format!(
                "the local-memory backing store at {base:#x} is not mapped for {need_tpc:#x} bytes"
            ))
        } else {
            None
        };
        match problem {
            None => Ok(()),
            Some(p) => Err(Fault::new(
                ERR_MMU_FAULT,
                Some(base),
                format!("MMU fault: kernel {name} uses {stack} bytes of stack but {p}"),
            )),
        }
    }
}
