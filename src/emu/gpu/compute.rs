//! Compute engine (c6c0/c7c0/c9c0 with QMD V03, cbc0 with QMD V04): class state, report
//! semaphores, I2M, and grid launches of reference kernels.
//!
//! The QMD is decoded with this module's own field table, written from
//! gpu-programming-interface.md §4.1 (V03_00) and §4.3 (V04_00). It deliberately shares nothing
//! with the encoder in `crate::hw`, so an encoder bug cannot hide behind a matching decoder bug.

use super::host::{ERR_GR_EXCEPTION, ERR_MMU_FAULT, ERR_UNIMPLEMENTED_METHOD, HOPPER_COMPUTE_A};
use super::{mem, Fault};
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
const INVALIDATE_SAMPLER_CACHE_NO_WFI: u32 = 0x1424;
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
            invalidates: 0,
            launches: 0,
            running: None,
        }
    }

    /// Whether a grid is still running (the channel must not go past its launch).
    pub(crate) fn is_running(&self) -> bool {
        self.running.is_some()
    }

    /// Give a running grid another turn; returns whether it (or a dependent grid it
    /// scheduled) is still running.
    pub(crate) fn resume(&mut self, mmu: &dyn Mmu) -> Result<bool, Fault> {
        if let Some((qmd_va, started)) = self.running.take() {
            self.run_chain(mmu, qmd_va, Some(started))?;
        }
        Ok(self.running.is_some())
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
        if q.regs == 0 || q.regs > 255 || u64::from(q.regs) * threads > 65536 {
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

/// A decoded QMD (the fields the model uses).
struct Qmd {
    va: u64,
    grid: [u32; 3],
    block: [u32; 3],
    regs: u32,
    shared: u32,
    program: u64,
    cb0_addr: u64,
    cb0_size: u32,
    cb0_valid: bool,
    local_low: u32,
    local_high: u32,
    releases: Vec<Release>,
    dependent: Option<u64>,
}

/// One QMD release semaphore.
struct Release {
    addr: u64,
    payload: u64,
    payload64: bool,
    /// 0 FOUR_WORDS (payload + timestamp), 1 ONE_WORD, 2 TWO_WORDS.
    structure: u32,
}

impl Release {
    fn write(&self, mmu: &dyn Mmu) -> Result<(), Fault> {
        let wide = self.payload64 || self.structure == 2;
        let align = match self.structure {
            0 => 16,
            _ if wide => 8,
            _ => 4,
        };
        if self.addr % align != 0 {
            return Err(gr(
                Some(self.addr),
                format!(
                    "QMD release semaphore at {:#x} is not {align}-byte aligned",
                    self.addr
                ),
            ));
        }
        match self.structure {
            0 => mem::release(mmu, self.addr, self.payload, self.payload64, true)?,
            1 | 2 => mem::release(mmu, self.addr, self.payload, wide, false)?,
            s => {
                return Err(gr(
                    Some(self.addr),
                    format!("QMD release STRUCTURE_SIZE {s} is invalid"),
                ))
            }
        }
        Ok(())
    }
}

/// Bits `hi:lo` (inclusive, `hi - lo < 32`) of the QMD viewed as little-endian dwords.
fn mw(q: &[u32], hi: u32, lo: u32) -> u32 {
    let w = (lo / 32) as usize;
    let sh = lo % 32;
    let low = u64::from(q.get(w).copied().unwrap_or(0));
    let high = u64::from(q.get(w + 1).copied().unwrap_or(0));
    let v = ((high << 32) | low) >> sh;
    let width = hi - lo + 1;
    (v & ((1u64 << width) - 1)) as u32
}

fn bit(q: &[u32], b: u32) -> bool {
    mw(q, b, b) != 0
}

/// QMD V03_00 (§4.1). `Ok(None)` never happens for V03 (there is no QMD_TYPE).
fn decode_v03(q: &[u32], va: u64) -> Result<Option<Qmd>, Fault> {
    let minor = mw(q, 579, 576);
    let major = mw(q, 583, 580);
    if major != 3 || minor != 0 {
        return Err(gr(
            Some(va),
            format!("SKED exception (esr 0x01000000): QMD at {va:#x} has version {major}.{minor}, expected 3.0"),
        ));
    }
    let mut releases = Vec::new();
    for base in [768u32, 896, 1664] {
        // RELEASEn_ENABLE at base + 55.
        if bit(q, base + 55) {
            if bit(q, base + 58) {
                return Err(unimpl(format!(
                    "QMD at {va:#x}: release reductions are not modelled"
                )));
            }
            releases.push(Release {
                addr: (u64::from(mw(q, base + 39, base + 32)) << 32)
                    | u64::from(mw(q, base + 31, base)),
                payload: (u64::from(mw(q, base + 127, base + 96)) << 32)
                    | u64::from(mw(q, base + 95, base + 64)),
                payload64: bit(q, base + 61),
                structure: mw(q, base + 63, base + 62),
            });
        }
    }
    let dependent = if bit(q, 512) && mw(q, 515, 513) == 1 {
        Some(u64::from(mw(q, 511, 480)) << 8)
    } else {
        None
    };
    Ok(Some(Qmd {
        va,
        grid: [mw(q, 415, 384), mw(q, 431, 416), mw(q, 463, 448)],
        block: [mw(q, 607, 592), mw(q, 623, 608), mw(q, 639, 624)],
        regs: mw(q, 656, 648),
        shared: mw(q, 561, 544),
        program: (u64::from(mw(q, 1584, 1568)) << 32) | u64::from(mw(q, 1567, 1536)),
        cb0_addr: (u64::from(mw(q, 1072, 1056)) << 32) | u64::from(mw(q, 1055, 1024)),
        cb0_size: mw(q, 1087, 1075) << 4,
        cb0_valid: bit(q, 640),
        local_low: mw(q, 759, 736),
        local_high: mw(q, 1623, 1600),
        releases,
        dependent,
    }))
}

/// QMD V04_00 (§4.3). `Ok(None)`: QMD_TYPE is not GRID_CTA, so the launch does nothing (as
/// observed on H200).
fn decode_v04(q: &[u32], va: u64) -> Result<Option<Qmd>, Fault> {
    let minor = mw(q, 579, 576);
    let major = mw(q, 583, 580);
    if major != 4 || minor != 0 {
        return Err(gr(
            Some(va),
            format!("SKED exception: QMD at {va:#x} has version {major}.{minor}, expected 4.0 on HOPPER_COMPUTE_A"),
        ));
    }
    if mw(q, 25, 23) != 2 {
        return Ok(None);
    }
    let mut releases = Vec::new();
    for i in 0..3u32 {
        if bit(q, 320 + 16 * i) {
            let a = 640 + 128 * i;
            releases.push(Release {
                addr: (u64::from(mw(q, a + 56, a + 32)) << 32) | u64::from(mw(q, a + 31, a)),
                payload: (u64::from(mw(q, a + 127, a + 96)) << 32)
                    | u64::from(mw(q, a + 95, a + 64)),
                payload64: bit(q, 332 + 16 * i),
                structure: mw(q, 322 + 16 * i, 321 + 16 * i),
            });
        }
    }
    let dependent = if bit(q, 368) && mw(q, 371, 369) == 1 {
        Some(u64::from(mw(q, 479, 448)) << 8)
    } else {
        None
    };
    let cb_lo = u64::from(mw(q, 1567, 1536));
    let cb_hi = u64::from(mw(q, 1586, 1568));
    Ok(Some(Qmd {
        va,
        grid: [mw(q, 1055, 1024), mw(q, 1071, 1056), mw(q, 1103, 1088)],
        block: [mw(q, 1167, 1152), mw(q, 1183, 1168), mw(q, 1199, 1184)],
        regs: mw(q, 1208, 1200),
        shared: mw(q, 601, 584),
        program: (u64::from(mw(q, 1272, 1248)) << 32) | u64::from(mw(q, 1247, 1216)),
        cb0_addr: ((cb_hi << 32) | cb_lo) << 6,
        cb0_size: mw(q, 1599, 1587) << 4,
        cb0_valid: bit(q, 416),
        local_low: mw(q, 535, 512),
        local_high: mw(q, 567, 544),
        releases,
        dependent,
    }))
}

/// QMD V05_00 (Blackwell, clcdc0qmd.h). The emulated GPU runs no Blackwell class; this decoder
/// exists to cross-check the V05 encoder. `Ok(None)`: QMD_TYPE is not GRID_CTA.
fn decode_v05(q: &[u32], va: u64) -> Result<Option<Qmd>, Fault> {
    let minor = mw(q, 467, 464);
    let major = mw(q, 471, 468);
    if major != 5 || minor != 0 {
        return Err(gr(
            Some(va),
            format!("QMD at {va:#x} has version {major}.{minor}, expected 5.0"),
        ));
    }
    if mw(q, 153, 151) != 2 {
        return Ok(None);
    }
    let mut releases = Vec::new();
    for i in 0..3u32 {
        if bit(q, 288 + 16 * i) {
            let a = 480 + 128 * i;
            releases.push(Release {
                addr: (u64::from(mw(q, a + 56, a + 32)) << 32) | u64::from(mw(q, a + 31, a)),
                payload: (u64::from(mw(q, a + 127, a + 96)) << 32)
                    | u64::from(mw(q, a + 95, a + 64)),
                payload64: bit(q, 300 + 16 * i),
                structure: mw(q, 290 + 16 * i, 289 + 16 * i),
            });
        }
    }
    let prog = (u64::from(mw(q, 1076, 1056)) << 32) | u64::from(mw(q, 1055, 1024));
    let cb = (u64::from(mw(q, 1394, 1376)) << 32) | u64::from(mw(q, 1375, 1344));
    Ok(Some(Qmd {
        va,
        grid: [mw(q, 1279, 1248), mw(q, 1295, 1280), mw(q, 1327, 1312)],
        block: [mw(q, 1103, 1088), mw(q, 1119, 1104), mw(q, 1127, 1120)],
        regs: mw(q, 1136, 1128),
        shared: mw(q, 1162, 1152) << 7,
        program: prog << 4,
        cb0_addr: cb << 6,
        cb0_size: mw(q, 1407, 1395) << 4,
        cb0_valid: bit(q, 1856),
        local_low: mw(q, 1199, 1184) << 4,
        local_high: mw(q, 1215, 1200) << 4,
        releases,
        dependent: None,
    }))
}

/// The emulator's own reading of a QMD, for cross-checking encoders (tests).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodedQmd {
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub register_count: u32,
    pub shared_memory_bytes: u32,
    pub program_va: u64,
    pub cbank0: Option<(u64, u32)>,
    pub local_low: u32,
    pub local_high: u32,
    /// (address, payload, payload64, structure size code) per enabled release.
    pub releases: Vec<(u64, u64, bool, u32)>,
    pub dependent_qmd: Option<u64>,
}

/// Decode a QMD with the emulator's field table: `major` 3 (V03, 64 dwords), 4 (V04, 96
/// dwords) or 5 (V05, 96 dwords). `Ok(None)`: a V04/V05 QMD whose QMD_TYPE is not GRID_CTA.
pub fn decode_qmd(major: u32, words: &[u32]) -> Result<Option<DecodedQmd>, String> {
    let q = match major {
        3 => decode_v03(words, 0),
        4 => decode_v04(words, 0),
        5 => decode_v05(words, 0),
        m => return Err(format!("QMD major version {m} is not modelled")),
    }
    .map_err(|f| f.what)?;
    Ok(q.map(|q| DecodedQmd {
        grid: q.grid,
        block: q.block,
        register_count: q.regs,
        shared_memory_bytes: q.shared,
        program_va: q.program,
        cbank0: q.cb0_valid.then_some((q.cb0_addr, q.cb0_size)),
        local_low: q.local_low,
        local_high: q.local_high,
        releases: q
            .releases
            .iter()
            .map(|r| (r.addr, r.payload, r.payload64, r.structure))
            .collect(),
        dependent_qmd: q.dependent,
    }))
}
