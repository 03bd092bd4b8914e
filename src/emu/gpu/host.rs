//! Host (PBDMA): GPFIFO fetch, pushbuffer method decoding, host-class methods and semaphores.
//! Offsets and encodings: gpu-programming-interface.md §1.1, §1.3, §1.4, §2.

use super::compute::ComputeState;
use super::copy::CopyState;
use super::{mem, Fault};
pub(crate) use super::{
    ERR_GR_EXCEPTION, ERR_MMU_FAULT, ERR_PBDMA_ERROR, ERR_UNIMPLEMENTED_METHOD, HOPPER_COMPUTE_A,
    HOPPER_DMA_COPY_A,
};
use crate::emu::hwif::{HwChannel, Mmu};
use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// USERD byte offsets (NV_RAMUSERD).
const USERD_REF: usize = 0x48;
const USERD_GP_GET: usize = 0x88;
const USERD_GP_PUT: usize = 0x8c;

/// GPFIFO entries processed per channel per pass, so channels share the thread fairly and
/// detach never waits on an endless stream.
const ENTRIES_PER_PASS: u32 = 64;

/// Host methods (byte offsets, c76f/c86f).
const NV_SET_OBJECT: u32 = 0x000;
const NV_NOP: u32 = 0x008;
const NV_NON_STALL_INTERRUPT: u32 = 0x020;
const NV_FB_FLUSH: u32 = 0x024;
const NV_MEM_OP_A: u32 = 0x028;
const NV_MEM_OP_B: u32 = 0x02c;
const NV_MEM_OP_C: u32 = 0x030;
const NV_MEM_OP_D: u32 = 0x034;
const NV_SET_REFERENCE: u32 = 0x050;
const NV_SEM_ADDR_LO: u32 = 0x05c;
const NV_SEM_ADDR_HI: u32 = 0x060;
const NV_SEM_PAYLOAD_LO: u32 = 0x064;
const NV_SEM_PAYLOAD_HI: u32 = 0x068;
const NV_SEM_EXECUTE: u32 = 0x06c;
const NV_WFI: u32 = 0x078;
const NV_YIELD: u32 = 0x080;
const NV_CLEAR_FAULTED: u32 = 0x084;

/// Compute classes with QMD V03 (Ampere/Ada) and V04 (Hopper).
pub(crate) const AMPERE_COMPUTE_A: u32 = 0xc6c0;
pub(crate) const AMPERE_COMPUTE_B: u32 = 0xc7c0;
pub(crate) const ADA_COMPUTE_A: u32 = 0xc9c0;
/// Copy classes.
pub(crate) const AMPERE_DMA_COPY_A: u32 = 0xc6b5;
pub(crate) const AMPERE_DMA_COPY_B: u32 = 0xc7b5;

/// Per-subchannel engine object.
pub(crate) enum Engine {
    Compute(Box<ComputeState>),
    Copy(Box<CopyState>),
    /// A class the channel allocated but the model does not execute (any method faults).
    Other(u32),
}

impl Engine {
    fn class(&self) -> u32 {
        match self {
            Engine::Compute(c) => c.class,
            Engine::Copy(c) => c.class,
            Engine::Other(c) => *c,
        }
    }
}

/// How the data words of the current method header map to methods.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Mode {
    Inc,
    NonInc,
    OneInc,
}

/// Method decoder state; it carries across GPFIFO entries like the PBDMA's.
#[derive(Clone, Copy, Debug)]
struct Decoder {
    method: u32,
    subch: u32,
    remaining: u32,
    mode: Mode,
}

/// A semaphore acquire that was not yet satisfied.
#[derive(Clone, Copy, Debug)]
struct Acquire {
    addr: u64,
    payload: u64,
    op: u32,
    is64: bool,
}

/// The pushbuffer segment being executed.
struct Segment {
    words: Vec<u32>,
    pos: usize,
}

/// Host-side channel state (owned by the GPU thread).
pub(crate) struct ChanState {
    /// Serviced by the thread (rung, or work/acquire pending).
    pub active: bool,
    gp_get: u32,
    seg: Option<Segment>,
    dec: Decoder,
    pending: Option<Acquire>,
    sem_addr_lo: u32,
    sem_addr_hi: u32,
    sem_payload_lo: u32,
    sem_payload_hi: u32,
    mem_op: [u32; 3],
    engines: [Option<Engine>; 8],
}

/// A channel attached to the GPU.
pub(crate) struct Slot {
    pub hw: Arc<HwChannel>,
    pub state: Mutex<ChanState>,
    /// The channel's enable bit (ccsr/chram ENABLE): a disabled channel fetches and executes
    /// nothing, but a grid already running on the engine runs on to its end.
    pub enabled: AtomicBool,
    /// When the grid running on the channel started (None: no grid running). Written by the GPU
    /// thread after each service.
    pub grid_since: Mutex<Option<Instant>>,
    /// The channel's NEXT bit (chram NEXT) reads as set this many more times. The model never
    /// sets it by itself; a test hook does.
    pub next_reads: AtomicU32,
}

impl Slot {
    pub(crate) fn new(hw: Arc<HwChannel>) -> Slot {
        let gp_get = mem::host_load(hw.userd, USERD_GP_GET);
        Slot {
            hw,
            enabled: AtomicBool::new(true),
            grid_since: Mutex::new(None),
            next_reads: AtomicU32::new(0),
            state: Mutex::new(ChanState {
                active: false,
                gp_get,
                seg: None,
                dec: Decoder {
                    method: 0,
                    subch: 0,
                    remaining: 0,
                    mode: Mode::Inc,
                },
                pending: None,
                sem_addr_lo: 0,
                sem_addr_hi: 0,
                sem_payload_lo: 0,
                sem_payload_hi: 0,
                mem_op: [0; 3],
                engines: Default::default(),
            }),
        }
    }

    /// USERD GP_PUT differs from the model's GP_GET.
    pub(crate) fn put_differs(&self, st: &ChanState) -> bool {
        !self.hw.is_dead() && mem::host_load(self.hw.userd, USERD_GP_PUT) != st.gp_get
    }

    pub(crate) fn is_enabled(&self) -> bool {
        self.enabled.load(Ordering::Acquire)
    }
}

impl ChanState {
    /// When the earliest grid still running on one of the channel's compute objects started.
    pub(crate) fn grid_since(&self) -> Option<Instant> {
        self.engines
            .iter()
            .filter_map(|e| match e {
                Some(Engine::Compute(c)) => c.running_since(),
                _ => None,
            })
            .min()
    }
}

fn pbdma(what: String) -> Fault {
    Fault::new(ERR_PBDMA_ERROR, None, what)
}

/// Execute as much of the channel's work as possible. Returns whether anything was executed.
pub(crate) fn service(slot: &Slot, st: &mut ChanState) -> Result<bool, Fault> {
    let hw = &*slot.hw;
    if hw.is_dead() {
        st.active = false;
        return Ok(false);
    }
    let mut progress = false;
    let mut entries = 0u32;
    loop {
        for e in st.engines.iter_mut() {
            if let Some(Engine::Compute(c)) = e {
                if c.resume(&*hw.mmu)? {
                    return Ok(progress);
                }
            }
        }
        // A disabled channel keeps its place (it stays active and resumes once enabled) but
        // Host fetches and executes nothing more for it.
        if !slot.is_enabled() {
            return Ok(progress);
        }
        if let Some(acq) = st.pending {
            if !acquire_satisfied(&*hw.mmu, &acq)? {
                return Ok(progress);
            }
            st.pending = None;
            progress = true;
        }
        if st.seg.is_some() {
            let blocked = run_segment(hw, st)?;
            progress = true;
            if blocked {
                return Ok(progress);
            }
            st.seg = None;
            st.gp_get = (st.gp_get + 1) % hw.entries.max(1);
            mem::host_store(hw.userd, USERD_GP_GET, st.gp_get);
            entries += 1;
            if entries >= ENTRIES_PER_PASS {
                return Ok(progress);
            }
            continue;
        }
        // Fetch the next GPFIFO entry.
        let put = mem::host_load(hw.userd, USERD_GP_PUT);
        if put == st.gp_get {
            st.active = false;
            return Ok(progress);
        }
        if hw.entries == 0 || put >= hw.entries || st.gp_get >= hw.entries {
            return Err(pbdma(format!(
                "GP_PUT {put} / GP_GET {} outside the GPFIFO ring of {} entries",
                st.gp_get, hw.entries
            )));
        }
        let entry_va = hw.gpfifo_va.wrapping_add(u64::from(st.gp_get) * 8);
        let mut raw = [0u8; 8];
        mem::read(&*hw.mmu, entry_va, &mut raw)?;
        let entry = u64::from_le_bytes(raw);
        let len_dw = ((entry >> 42) & 0x1f_ffff) as usize;
        progress = true;
        if len_dw == 0 {
            let opcode = (entry >> 32) & 0xff;
            if opcode != 0 {
                return Err(pbdma(format!(
                    "GPFIFO control entry {entry:#018x} at index {} has opcode {opcode} (only NOP is implemented)",
                    st.gp_get
                )));
            }
            st.gp_get = (st.gp_get + 1) % hw.entries;
            mem::host_store(hw.userd, USERD_GP_GET, st.gp_get);
            entries += 1;
            if entries >= ENTRIES_PER_PASS {
                return Ok(progress);
            }
            continue;
        }
        let pb_va = entry & 0x00ff_ffff_fffc;
        let mut bytes = vec![0u8; len_dw * 4];
        mem::read(&*hw.mmu, pb_va, &mut bytes)?;
        let words = bytes
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        st.seg = Some(Segment { words, pos: 0 });
    }
}

/// Run the current segment. Returns `true` when a semaphore acquire blocked it.
fn run_segment(hw: &HwChannel, st: &mut ChanState) -> Result<bool, Fault> {
    loop {
        let Some(seg) = st.seg.as_mut() else {
            return Ok(false);
        };
        if seg.pos >= seg.words.len() {
            return Ok(false);
        }
        let word = seg.words[seg.pos];
        seg.pos += 1;
        if st.dec.remaining > 0 {
            let d = st.dec;
            st.dec.remaining -= 1;
            match d.mode {
                Mode::Inc => st.dec.method = d.method.wrapping_add(4),
                Mode::NonInc => {}
                Mode::OneInc => {
                    st.dec.method = d.method.wrapping_add(4);
                    st.dec.mode = Mode::NonInc;
                }
            }
            if method(hw, st, d.subch, d.method, word)? {
                return Ok(true);
            }
            continue;
        }
        let sec_op = word >> 29;
        let count = (word >> 16) & 0x1fff;
        let subch = (word >> 13) & 7;
        let addr = (word & 0xfff) << 2;
        if sec_op != 0 && word & (1 << 12) != 0 {
            return Err(pbdma(format!(
                "pushbuffer header {word:#010x} has reserved bit 12 set"
            )));
        }
        match sec_op {
            0 => {
                // 0 is the universal NOP; TERT_OP 1..3 are SLI subdevice-mask controls, which a
                // single GPU ignores.
                if word != 0 && (word >> 16) & 3 == 0 {
                    return Err(pbdma(format!("invalid pushbuffer header {word:#010x}")));
                }
            }
            1 | 3 | 5 => {
                if count > 0 {
                    let mode = match sec_op {
                        1 => Mode::Inc,
                        3 => Mode::NonInc,
                        _ => Mode::OneInc,
                    };
                    st.dec = Decoder {
                        method: addr,
                        subch,
                        remaining: count,
                        mode,
                    };
                }
            }
            4 => {
                if method(hw, st, subch, addr, count)? {
                    return Ok(true);
                }
            }
            7 => {
                // END_PB_SEGMENT: the rest of this segment is not executed.
                return Ok(false);
            }
            _ => {
                return Err(pbdma(format!(
                    "invalid pushbuffer opcode {sec_op} in header {word:#010x}"
                )))
            }
        }
    }
}

/// Execute one method. Returns `true` if the channel is now blocked on an acquire.
fn method(
    hw: &HwChannel,
    st: &mut ChanState,
    subch: u32,
    m: u32,
    data: u32,
) -> Result<bool, Fault> {
    if m == NV_SET_OBJECT {
        set_object(hw, st, subch, data)?;
        return Ok(false);
    }
    if m < 0x100 {
        return host_method(hw, st, m, data);
    }
    let mmu = &*hw.mmu;
    match st.engines.get_mut(subch as usize).and_then(|e| e.as_mut()) {
        Some(Engine::Compute(c)) => {
            c.method(mmu, m, data)?;
            // A launched grid that keeps running blocks the channel like an acquire.
            return Ok(c.is_running());
        }
        Some(Engine::Copy(c)) => c.method(mmu, m, data)?,
        Some(Engine::Other(class)) => {
            return Err(Fault::new(
                ERR_UNIMPLEMENTED_METHOD,
                None,
                format!("method {m:#x} = {data:#x} on subchannel {subch} (class {class:#x}, not modelled)"),
            ))
        }
        None => {
            return Err(Fault::new(
                ERR_UNIMPLEMENTED_METHOD,
                None,
                format!("method {m:#x} = {data:#x} on subchannel {subch}, which has no object bound (SET_OBJECT)"),
            ))
        }
    }
    Ok(false)
}

fn set_object(hw: &HwChannel, st: &mut ChanState, subch: u32, data: u32) -> Result<(), Fault> {
    let class = data & 0xffff;
    if subch >= 5 {
        return Err(Fault::new(
            12,
            None,
            format!("SET_OBJECT {class:#x} on software subchannel {subch}"),
        ));
    }
    if !hw.classes.lock().contains(&class) {
        return Err(Fault::new(
            ERR_GR_EXCEPTION,
            None,
            format!("SET_OBJECT on subchannel {subch}: class {class:#x} was not allocated on this channel (ALLOC_OBJ_CTX)"),
        ));
    }
    let slot = &mut st.engines[subch as usize];
    let same = slot.as_ref().map(Engine::class) == Some(class);
    if !same {
        *slot = Some(match class {
            AMPERE_COMPUTE_A | AMPERE_COMPUTE_B | ADA_COMPUTE_A | HOPPER_COMPUTE_A => {
                Engine::Compute(Box::new(ComputeState::new(class)))
            }
            AMPERE_DMA_COPY_A | AMPERE_DMA_COPY_B | HOPPER_DMA_COPY_A => {
                Engine::Copy(Box::new(CopyState::new(class)))
            }
            other => Engine::Other(other),
        });
    }
    Ok(())
}

fn host_method(hw: &HwChannel, st: &mut ChanState, m: u32, data: u32) -> Result<bool, Fault> {
    match m {
        NV_NOP | NV_NON_STALL_INTERRUPT | NV_FB_FLUSH | NV_WFI | NV_YIELD | NV_CLEAR_FAULTED => {}
        NV_MEM_OP_A => st.mem_op[0] = data,
        NV_MEM_OP_B => st.mem_op[1] = data,
        NV_MEM_OP_C => st.mem_op[2] = data,
        NV_MEM_OP_D => mem_op(data)?,
        NV_SET_REFERENCE => mem::host_store(hw.userd, USERD_REF, data),
        NV_SEM_ADDR_LO => st.sem_addr_lo = data & !3,
        NV_SEM_ADDR_HI => st.sem_addr_hi = data & 0x01ff_ffff,
        NV_SEM_PAYLOAD_LO => st.sem_payload_lo = data,
        NV_SEM_PAYLOAD_HI => st.sem_payload_hi = data,
        NV_SEM_EXECUTE => return sem_execute(hw, st, data),
        _ => {
            return Err(Fault::new(
                ERR_UNIMPLEMENTED_METHOD,
                None,
                format!("unimplemented host method {m:#x} = {data:#x}"),
            ))
        }
    }
    Ok(false)
}

fn mem_op(d: u32) -> Result<(), Fault> {
    match d >> 27 {
        // MEMBAR, and the L2 maintenance operations (no caches in the model).
        5 | 0xd | 0xe | 0xf | 0x10 | 0x15 => Ok(()),
        9 | 0xa => Err(pbdma(format!(
            "MEM_OP_D {d:#x}: MMU TLB invalidate is privileged (PBDMA METHOD interrupt)"
        ))),
        op => Err(pbdma(format!(
            "MEM_OP_D {d:#x}: operation {op:#x} is not allowed/implemented"
        ))),
    }
}

fn sem_execute(hw: &HwChannel, st: &mut ChanState, data: u32) -> Result<bool, Fault> {
    let op = data & 7;
    let is64 = data & (1 << 24) != 0;
    let timestamp = data & (1 << 25) != 0;
    let addr = (u64::from(st.sem_addr_hi) << 32) | u64::from(st.sem_addr_lo);
    let payload = (u64::from(st.sem_payload_hi) << 32) | u64::from(st.sem_payload_lo);
    let payload = if is64 { payload } else { payload & 0xffff_ffff };
    if is64 && addr % 8 != 0 {
        return Err(pbdma(format!(
            "SEM_EXECUTE {data:#x}: 64-bit semaphore at {addr:#x} is not 8-byte aligned"
        )));
    }
    let mmu = &*hw.mmu;
    match op {
        1 => {
            if timestamp && addr % 16 != 0 {
                return Err(pbdma(format!(
                    "SEM_EXECUTE {data:#x}: timestamped semaphore at {addr:#x} is not 16-byte aligned"
                )));
            }
            mem::release(mmu, addr, payload, is64, timestamp)?;
            Ok(false)
        }
        0 | 2..=5 => {
            let acq = Acquire {
                addr,
                payload,
                op,
                is64,
            };
            if acquire_satisfied(mmu, &acq)? {
                Ok(false)
            } else {
                st.pending = Some(acq);
                Ok(true)
            }
        }
        6 => {
            reduction(mmu, addr, payload, is64, data)?;
            Ok(false)
        }
        _ => Err(pbdma(format!(
            "SEM_EXECUTE {data:#x}: invalid operation {op}"
        ))),
    }
}

fn acquire_satisfied(mmu: &dyn Mmu, a: &Acquire) -> Result<bool, Fault> {
    let v = mem::load_word(mmu, a.addr, a.is64)?;
    let mask = if a.is64 { u64::MAX } else { 0xffff_ffff };
    Ok(match a.op {
        0 => v == a.payload,
        // ACQ_STRICT_GEQ: plain unsigned >= on the payload size (what the library's waits use).
        2 => v >= a.payload,
        3 => {
            let d = v.wrapping_sub(a.payload) & mask;
            if a.is64 {
                (d as i64) >= 0
            } else {
                (d as u32 as i32) >= 0
            }
        }
        4 => v & a.payload != 0,
        // ACQ_NOR: satisfied when NOR(value, payload) has any bit set.
        _ => !(v | a.payload) & mask != 0,
    })
}

fn reduction(mmu: &dyn Mmu, addr: u64, payload: u64, is64: bool, data: u32) -> Result<(), Fault> {
    let red = (data >> 27) & 0xf;
    let unsigned = data & (1 << 31) != 0;
    let mask = if is64 { u64::MAX } else { 0xffff_ffff };
    let v = mem::load_word(mmu, addr, is64)?;
    let sext = |x: u64| {
        if is64 {
            x as i64
        } else {
            x as u32 as i32 as i64
        }
    };
    let r = match red {
        0 | 1 => {
            let take_min = red == 0;
            let pick_payload = if unsigned {
                (payload < v) == take_min
            } else {
                (sext(payload) < sext(v)) == take_min
            };
            if pick_payload {
                payload
            } else {
                v
            }
        }
        2 => v ^ payload,
        3 => v & payload,
        4 => v | payload,
        5 => v.wrapping_add(payload),
        6 => {
            if v >= payload {
                0
            } else {
                v + 1
            }
        }
        7 => {
            if v == 0 || v > payload {
                payload
            } else {
                v - 1
            }
        }
        _ => {
            return Err(pbdma(format!(
                "SEM_EXECUTE {data:#x}: invalid reduction {red}"
            )))
        }
    } & mask;
    mem::store_word(mmu, addr, r, is64)?;
    Ok(())
}
