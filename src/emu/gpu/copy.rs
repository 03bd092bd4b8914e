//! Copy engine (c6b5/c7b5/c8b5): pitch-linear transfers, remap fills and semaphores.
//! Method offsets and LAUNCH_DMA fields: gpu-programming-interface.md §5.

use super::{mem, Fault};
use super::{ERR_UNIMPLEMENTED_METHOD, HOPPER_DMA_COPY_A};
use crate::emu::hwif::Mmu;

const NOP: u32 = 0x100;
const SET_SEMAPHORE_A: u32 = 0x240;
const SET_SEMAPHORE_B: u32 = 0x244;
const SET_SEMAPHORE_PAYLOAD: u32 = 0x248;
const SET_SEMAPHORE_PAYLOAD_UPPER: u32 = 0x24c;
const SET_SRC_PHYS_MODE: u32 = 0x260;
const SET_DST_PHYS_MODE: u32 = 0x264;
const LAUNCH_DMA: u32 = 0x300;
const OFFSET_IN_UPPER: u32 = 0x400;
const OFFSET_IN_LOWER: u32 = 0x404;
const OFFSET_OUT_UPPER: u32 = 0x408;
const OFFSET_OUT_LOWER: u32 = 0x40c;
const PITCH_IN: u32 = 0x410;
const PITCH_OUT: u32 = 0x414;
const LINE_LENGTH_IN: u32 = 0x418;
const LINE_COUNT: u32 = 0x41c;
const SET_REMAP_CONST_A: u32 = 0x700;
const SET_REMAP_CONST_B: u32 = 0x704;
const SET_REMAP_COMPONENTS: u32 = 0x708;

/// Bytes moved per step of a linear copy (bounded temporary buffer).
const CHUNK: u64 = 1 << 20;

/// Copy-engine object state.
pub(crate) struct CopyState {
    pub class: u32,
    sem_a: u32,
    sem_b: u32,
    payload: u32,
    payload_upper: u32,
    offset_in: [u32; 2],
    offset_out: [u32; 2],
    pitch_in: u32,
    pitch_out: u32,
    line_length: u32,
    line_count: u32,
    remap_const: [u32; 2],
    remap_components: u32,
}

fn unimpl(what: String) -> Fault {
    Fault::new(ERR_UNIMPLEMENTED_METHOD, None, what)
}

impl CopyState {
    pub(crate) fn new(class: u32) -> CopyState {
        CopyState {
            class,
            sem_a: 0,
            sem_b: 0,
            payload: 0,
            payload_upper: 0,
            offset_in: [0; 2],
            offset_out: [0; 2],
            pitch_in: 0,
            pitch_out: 0,
            line_length: 0,
            line_count: 0,
            remap_const: [0; 2],
            remap_components: 0,
        }
    }

    fn upper_mask(&self) -> u32 {
        if self.class == HOPPER_DMA_COPY_A {
            0x01ff_ffff
        } else {
            0x1_ffff
        }
    }

    pub(crate) fn method(&mut self, mmu: &dyn Mmu, m: u32, data: u32) -> Result<(), Fault> {
        let um = self.upper_mask();
        match m {
            NOP => {}
            SET_SEMAPHORE_A => self.sem_a = data & um,
            SET_SEMAPHORE_B => self.sem_b = data,
            SET_SEMAPHORE_PAYLOAD => self.payload = data,
            SET_SEMAPHORE_PAYLOAD_UPPER => self.payload_upper = data,
            SET_SRC_PHYS_MODE | SET_DST_PHYS_MODE => {}
            OFFSET_IN_UPPER => self.offset_in[0] = data & um,
            OFFSET_IN_LOWER => self.offset_in[1] = data,
            OFFSET_OUT_UPPER => self.offset_out[0] = data & um,
            OFFSET_OUT_LOWER => self.offset_out[1] = data,
            PITCH_IN => self.pitch_in = data,
            PITCH_OUT => self.pitch_out = data,
            LINE_LENGTH_IN => self.line_length = data,
            LINE_COUNT => self.line_count = data,
            SET_REMAP_CONST_A => self.remap_const[0] = data,
            SET_REMAP_CONST_B => self.remap_const[1] = data,
            SET_REMAP_COMPONENTS => self.remap_components = data,
            LAUNCH_DMA => self.launch(mmu, data)?,
            _ => {
                return Err(unimpl(format!(
                    "unimplemented copy-engine (class {:#x}) method {m:#x} = {data:#x}",
                    self.class
                )))
            }
        }
        Ok(())
    }

    fn launch(&mut self, mmu: &dyn Mmu, d: u32) -> Result<(), Fault> {
        let transfer = d & 3;
        let sem_type = (d >> 3) & 3;
        let src_pitch = d & (1 << 7) != 0;
        let dst_pitch = d & (1 << 8) != 0;
        let multi_line = d & (1 << 9) != 0;
        let remap = d & (1 << 10) != 0;
        let phys = d & (3 << 12) != 0;
        let sem_reduction = d & (1 << 19) != 0;
        let payload64 = d & (1 << 27) != 0;
        if transfer == 3 {
            return Err(unimpl(format!(
                "LAUNCH_DMA {d:#x}: invalid DATA_TRANSFER_TYPE 3"
            )));
        }
        if transfer != 0 {
            if phys {
                return Err(unimpl(format!(
                    "LAUNCH_DMA {d:#x}: physical SRC/DST_TYPE is not modelled"
                )));
            }
            if !src_pitch || !dst_pitch {
                return Err(unimpl(format!(
                    "LAUNCH_DMA {d:#x}: block-linear memory layout is not modelled (set SRC/DST_MEMORY_LAYOUT = PITCH)"
                )));
            }
            let src = (u64::from(self.offset_in[0]) << 32) | u64::from(self.offset_in[1]);
            let dst = (u64::from(self.offset_out[0]) << 32) | u64::from(self.offset_out[1]);
            let lines = if multi_line { self.line_count } else { 1 };
            for l in 0..u64::from(lines) {
                let s = src.wrapping_add(l * u64::from(self.pitch_in));
                let t = dst.wrapping_add(l * u64::from(self.pitch_out));
                if remap {
                    self.remap_line(mmu, s, t)?;
                } else {
                    copy_linear(mmu, s, t, u64::from(self.line_length))?;
                }
            }
        }
        if sem_type != 0 {
            if sem_reduction {
                return Err(unimpl(format!(
                    "LAUNCH_DMA {d:#x}: semaphore reductions are not modelled"
                )));
            }
            let addr = (u64::from(self.sem_a) << 32) | u64::from(self.sem_b);
            let payload = (u64::from(self.payload_upper) << 32) | u64::from(self.payload);
            match sem_type {
                1 => {
                    if payload64 && addr % 8 != 0 {
                        return Err(Fault::new(13, Some(addr), format!("LAUNCH_DMA {d:#x}: 64-bit semaphore at {addr:#x} not 8-byte aligned")));
                    }
                    mem::release(mmu, addr, payload, payload64, false)?
                }
                2 => {
                    if addr % 16 != 0 {
                        return Err(Fault::new(13, Some(addr), format!("LAUNCH_DMA {d:#x}: four-word semaphore at {addr:#x} not 16-byte aligned")));
                    }
                    mem::release(mmu, addr, payload, payload64, true)?
                }
                _ => {
                    return Err(unimpl(format!(
                    "LAUNCH_DMA {d:#x}: SEMAPHORE_TYPE 3 (conditional interrupt) is not modelled"
                )))
                }
            }
        }
        Ok(())
    }

    /// One line of a remapped transfer: LINE_LENGTH_IN elements, in bounded chunks.
    fn remap_line(&self, mmu: &dyn Mmu, src: u64, dst: u64) -> Result<(), Fault> {
        let rc = self.remap_components;
        let cs = (((rc >> 16) & 3) + 1) as u64;
        let nsrc = (((rc >> 20) & 3) + 1) as u64;
        let ndst = (((rc >> 24) & 3) + 1) as u64;
        let n = u64::from(self.line_length);
        let step = (CHUNK / (4 * 4)).max(1);
        let mut e = 0u64;
        while e < n {
            let k = (n - e).min(step);
            self.remap_elements(
                mmu,
                src.wrapping_add(e * cs * nsrc),
                dst.wrapping_add(e * cs * ndst),
                k,
            )?;
            e += k;
        }
        Ok(())
    }

    fn remap_elements(&self, mmu: &dyn Mmu, src: u64, dst: u64, n: u64) -> Result<(), Fault> {
        let rc = self.remap_components;
        let cs = (((rc >> 16) & 3) + 1) as usize;
        let nsrc = (((rc >> 20) & 3) + 1) as usize;
        let ndst = (((rc >> 24) & 3) + 1) as usize;
        let sel: Vec<u32> = (0..ndst).map(|j| (rc >> (4 * j)) & 7).collect();
        let needs_src = sel.iter().any(|&s| s < 4);
        let n = n as usize;
        let src_elem = cs * nsrc;
        let dst_elem = cs * ndst;
        let src_bytes = if needs_src {
            let mut b = vec![0u8; n * src_elem];
            mem::read(mmu, src, &mut b)?;
            b
        } else {
            Vec::new()
        };
        let mut out = vec![0u8; n * dst_elem];
        if sel.contains(&6) {
            mem::read(mmu, dst, &mut out)?; // NO_WRITE components keep the old bytes
        }
        for e in 0..n {
            for (j, &s) in sel.iter().enumerate() {
                let o = e * dst_elem + j * cs;
                match s {
                    0..=3 => {
                        let si = s as usize;
                        if si >= nsrc {
                            return Err(unimpl(format!(
                                "SET_REMAP_COMPONENTS {rc:#x}: destination {j} selects source component {si} of {nsrc}"
                            )));
                        }
                        let i = e * src_elem + si * cs;
                        out[o..o + cs].copy_from_slice(&src_bytes[i..i + cs]);
                    }
                    4 | 5 => {
                        let c = self.remap_const[(s - 4) as usize].to_le_bytes();
                        out[o..o + cs].copy_from_slice(&c[..cs]);
                    }
                    6 => {}
                    _ => {
                        return Err(unimpl(format!(
                            "SET_REMAP_COMPONENTS {rc:#x}: invalid selector 7"
                        )));
                    }
                }
            }
        }
        mem::write(mmu, dst, &out)?;
        Ok(())
    }
}

/// Linear copy of `len` bytes, in bounded chunks, across any number of mappings.
fn copy_linear(mmu: &dyn Mmu, src: u64, dst: u64, len: u64) -> Result<(), Fault> {
    let mut buf = vec![0u8; len.min(CHUNK) as usize];
    let mut off = 0u64;
    while off < len {
        let n = (len - off).min(CHUNK) as usize;
        mem::read(mmu, src.wrapping_add(off), &mut buf[..n])?;
        mem::write(mmu, dst.wrapping_add(off), &buf[..n])?;
        off += n as u64;
    }
    Ok(())
}
