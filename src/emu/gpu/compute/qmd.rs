//! QMD decoding (V03_00, V04_00, V05_00) and the QMD release semaphores.

use super::{gr, mem, unimpl, Fault};
use crate::emu::hwif::Mmu;

/// A decoded QMD (the fields the model uses).
pub(super) struct Qmd {
    pub(super) va: u64,
    pub(super) grid: [u32; 3],
    pub(super) block: [u32; 3],
    pub(super) regs: u32,
    pub(super) shared: u32,
    pub(super) program: u64,
    pub(super) cb0_addr: u64,
    pub(super) cb0_size: u32,
    pub(super) cb0_valid: bool,
    pub(super) local_low: u32,
    pub(super) local_high: u32,
    pub(super) releases: Vec<Release>,
    pub(super) dependent: Option<u64>,
}

/// One QMD release semaphore.
pub(super) struct Release {
    pub(super) addr: u64,
    pub(super) payload: u64,
    pub(super) payload64: bool,
    /// 0 FOUR_WORDS (payload + timestamp), 1 ONE_WORD, 2 TWO_WORDS.
    pub(super) structure: u32,
}

impl Release {
    pub(super) fn write(&self, mmu: &dyn Mmu) -> Result<(), Fault> {
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
pub(super) fn decode_v03(q: &[u32], va: u64) -> Result<Option<Qmd>, Fault> {
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
pub(super) fn decode_v04(q: &[u32], va: u64) -> Result<Option<Qmd>, Fault> {
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
