//! QMD (Queue Meta Data) encoders: V03_00 (Ampere/Ada), V04_00 (Hopper), V05_00 (Blackwell).
//!
//! Every encoder zeroes the output first and writes only the fields a CUDA cubin launch needs
//! (gpu-programming-interface.md §4; rm-kernel-interface.md §4.2). Field positions are flat bit
//! numbers `MW(hi:lo)` over the QMD viewed as little-endian dwords, as in `clc7c0qmd.h`,
//! `clcbc0qmd.h` and `clcdc0qmd.h`. Encoding does not allocate; only the error path formats a
//! message.
//!
//! Recipes:
//! - V03: tinygrad's (major 3, minor 0, SM_GLOBAL_CACHING_ENABLE, QMD_GROUP_ID 0x3f,
//!   API_VISIBLE_CALL_LIMIT NO_CHECK, SAMPLER_INDEX 1, cache invalidates from
//!   [`LaunchDesc::invalidate_caches`], CWD_MEMBAR_TYPE L1_SYSMEMBAR), with cbank sizes correctly
//!   `>> 4`.
//! - V04: the recipe verified on an H200 (QMD_TYPE GRID_CTA, major 4, API_VISIBLE_CALL_LIMIT
//!   NO_CHECK, cbank addresses `>> 6`), plus the same invalidates/membar.
//! - Every version sets SAMPLER_INDEX 1 (VIA_HEADER_INDEX): a texture object's sampler sits at
//!   its header's index, as libcuda's handles (1, 2, 3, ...) require (`crate::hw::texture`).
//! - V05: **unverified** on hardware; fields from `clcdc0qmd.h` (program address `>> 4`, shared
//!   size `>> 7`, local size `>> 4`, 8-bit block z, QMD_TYPE GRID_CTA, QMD_GROUP_ID 0x3f,
//!   SAMPLER_INDEX 1 as tinygrad writes and a public CUDA-captured V05 QMD shows).
//!
//! [`QmdTemplate`] (a QMD encoded once per kernel and patched per launch) is in `template`.

use crate::error::{Error, Result, Status};
use crate::hw::arch::{ArchInfo, QmdVersion};

/// Bits of [`LaunchDesc::invalidate_caches`]: INVALIDATE_TEXTURE_HEADER_CACHE.
pub const INVALIDATE_TEXTURE_HEADER_CACHE: u8 = 1 << 0;
/// INVALIDATE_TEXTURE_SAMPLER_CACHE.
pub const INVALIDATE_TEXTURE_SAMPLER_CACHE: u8 = 1 << 1;
/// INVALIDATE_TEXTURE_DATA_CACHE.
pub const INVALIDATE_TEXTURE_DATA_CACHE: u8 = 1 << 2;
/// INVALIDATE_SHADER_DATA_CACHE.
pub const INVALIDATE_SHADER_DATA_CACHE: u8 = 1 << 3;
/// INVALIDATE_INSTRUCTION_CACHE.
pub const INVALIDATE_INSTRUCTION_CACHE: u8 = 1 << 4;
/// INVALIDATE_SHADER_CONSTANT_CACHE.
pub const INVALIDATE_SHADER_CONSTANT_CACHE: u8 = 1 << 5;
/// tinygrad's set: texture header, sampler, data and shader data.
pub const INVALIDATE_TINYGRAD: u8 = 0x0F;

/// QMD_GROUP_ID written by V03 and V05 (tinygrad).
pub const QMD_GROUP_ID_DEFAULT: u32 = 0x3F;
/// QMD_TYPE GRID_CTA (V04/V05).
pub const QMD_TYPE_GRID_CTA: u32 = 2;
/// QMD_TYPE GRID_GPC_CGA (V04): thread-block clusters within a GPC.
pub const QMD_TYPE_GRID_GPC_CGA: u32 = 3;
/// DEPENDENT_QMD ACTION QMD_SCHEDULE.
pub const DEPENDENT_QMD_ACTION_QMD_SCHEDULE: u32 = 1;
/// CWD_MEMBAR_TYPE L1_NONE.
pub const CWD_MEMBAR_TYPE_L1_NONE: u32 = 0;
/// CWD_MEMBAR_TYPE L1_SYSMEMBAR.
pub const CWD_MEMBAR_TYPE_L1_SYSMEMBAR: u32 = 1;
/// CWD_MEMBAR_TYPE L1_MEMBAR (GPU-scope membar).
pub const CWD_MEMBAR_TYPE_L1_MEMBAR: u32 = 3;
/// PROGRAM_PREFETCH_TYPE PREFETCH_POST (V03-V05; the header spells it PREFTECH_POST).
pub const PROGRAM_PREFETCH_TYPE_PREFETCH_POST: u32 = 1;
/// CONSTANT_BUFFER_PREFETCH(i) PREFETCH_POST (V04, V05).
pub const CONSTANT_BUFFER_PREFETCH_POST: u32 = 2;
/// RELEASE STRUCTURE_SIZE FOUR_WORDS (payload + timestamp).
pub const RELEASE_STRUCTURE_SIZE_FOUR_WORDS: u32 = 0;
/// RELEASE STRUCTURE_SIZE ONE_WORD.
pub const RELEASE_STRUCTURE_SIZE_ONE_WORD: u32 = 1;
/// RELEASE STRUCTURE_SIZE TWO_WORDS.
pub const RELEASE_STRUCTURE_SIZE_TWO_WORDS: u32 = 2;

/// SM shared-memory configuration field values (`carveout_KiB / 4 + 1`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SmemConfig {
    /// MIN_SM_CONFIG_SHARED_MEM_SIZE.
    pub min: u32,
    /// MAX_SM_CONFIG_SHARED_MEM_SIZE.
    pub max: u32,
    /// TARGET_SM_CONFIG_SHARED_MEM_SIZE.
    pub target: u32,
}

/// Encode a carveout in KiB as an SM config field value: `kib / 4 + 1`.
pub const fn smem_config_value(kib: u32) -> u32 {
    kib / 4 + 1
}

/// Pick the SM shared-memory configuration for a launch using `bytes` of shared memory
/// (including the 1 KiB reserve): `min = target` = the smallest legal carveout of `arch` that holds
/// `bytes`, `max` = the larger of that and `arch.smem_default_max_kib`.
pub fn smem_config(arch: &ArchInfo, bytes: u32) -> Result<SmemConfig> {
    let need_kib = bytes.div_ceil(1024);
    let Some(&kib) = arch.smem_carveouts_kib.iter().find(|&&k| k >= need_kib) else {
        return Err(Error::new(
            Status::InvalidLaunch,
            format!(
                "hw::qmd::smem_config({}): {bytes} bytes of shared memory exceed the largest carveout ({} KiB)",
                arch.name,
                arch.max_carveout_kib()
            ),
        ));
    };
    let target = smem_config_value(kib);
    let max = smem_config_value(kib.max(arch.smem_default_max_kib));
    Ok(SmemConfig {
        min: target,
        max,
        target,
    })
}

/// [`smem_config`] for a launch whose SMs may hold `blocks` blocks of `bytes` each at once:
/// `min` still holds one block, `target` holds as many of the `blocks` as the largest carveout
/// allows (so the SM is configured for the launch's occupancy, not for a single block), `max`
/// the larger of that and `arch.smem_default_max_kib`.
pub fn smem_config_for_blocks(arch: &ArchInfo, bytes: u32, blocks: u32) -> Result<SmemConfig> {
    let one = smem_config(arch, bytes)?;
    let largest = arch.max_carveout_kib();
    let want_kib = (u64::from(bytes) * u64::from(blocks.max(1)))
        .div_ceil(1024)
        .min(u64::from(largest)) as u32;
    let kib = arch
        .smem_carveouts_kib
        .iter()
        .copied()
        .find(|&k| k >= want_kib)
        .unwrap_or(largest);
    let target = smem_config_value(kib).max(one.target);
    Ok(SmemConfig {
        min: one.min,
        max: one.max.max(target),
        target,
    })
}

/// A QMD release (semaphore written when the grid completes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QmdRelease {
    /// Semaphore address (16-aligned with `timestamp`, 8 with `payload64`, else 4).
    pub va: u64,
    /// Payload (must fit 32 bits unless `payload64`).
    pub payload: u64,
    /// PAYLOAD64B.
    pub payload64: bool,
    /// STRUCTURE_SIZE FOUR_WORDS (payload + timestamp); otherwise TWO_WORDS (64-bit) or ONE_WORD.
    pub timestamp: bool,
    /// RELEASE_MEMBAR_TYPE FE_SYSMEMBAR (make the grid's writes visible before the release).
    pub membar_sys: bool,
}

impl QmdRelease {
    /// A 64-bit release without timestamp, with FE_SYSMEMBAR.
    pub const fn new(va: u64, payload: u64) -> QmdRelease {
        QmdRelease {
            va,
            payload,
            payload64: true,
            timestamp: false,
            membar_sys: true,
        }
    }
}

/// Everything the QMD of one launch needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LaunchDesc {
    /// VA of `.text.<fn>` (16-byte aligned).
    pub program_va: u64,
    /// Code bytes, for PROGRAM_PREFETCH_SIZE (`min(bytes >> 8, 0x1ff)`); 0 = no prefetch size.
    pub program_prefetch_bytes: u32,
    /// Grid dims (x up to 2^31-1, y and z up to 65535).
    pub grid: [u32; 3],
    /// Block dims (x, y up to 1024, z up to 64, product up to 1024).
    pub block: [u32; 3],
    /// Registers per thread (EIATTR_REGCOUNT), at most 255.
    pub register_count: u32,
    /// Named barriers (from `.text` sh_flags bits 26:20), at most 16.
    pub barrier_count: u32,
    /// SHARED_MEMORY_SIZE in bytes (§6.9; includes the 1 KiB reserve).
    pub shared_memory_bytes: u32,
    /// SM shared-memory config ([`smem_config`]).
    pub smem_config: SmemConfig,
    /// SHADER_LOCAL_MEMORY_HIGH_SIZE: per-thread local bytes ([`crate::hw::local_mem::lm_per_thread`]).
    pub local_memory_per_thread: u32,
    /// Constant banks: `(va, size_bytes)`. V04/V05 need `va` 64-byte aligned; sizes up to 64 KiB.
    pub cbanks: [Option<(u64, u32)>; 8],
    /// CONSTANT_BUFFER_INVALIDATE(i) for each bit i (bit 0: cbank0 is recycled per launch).
    pub cbank_invalidate_mask: u8,
    /// Release slot 0.
    pub release: Option<QmdRelease>,
    /// DEPENDENT_QMD0: schedule this QMD (VA, 256-aligned, < 2^40) when this grid completes.
    pub dependent_qmd: Option<u64>,
    /// INVALIDATE_*_CACHE bits ([`INVALIDATE_TINYGRAD`] etc.).
    pub invalidate_caches: u8,
    /// SASS_VERSION (0x87 Orin, 0x90 Hopper).
    pub sass_version: u8,
    /// CWD_MEMBAR_TYPE L1_SYSMEMBAR at grid end (else `cwd_membar_gpu` decides).
    pub cwd_membar_sysmembar: bool,
    /// CWD_MEMBAR_TYPE L1_MEMBAR (GPU scope) at grid end when `cwd_membar_sysmembar` is false
    /// (else L1_NONE).
    pub cwd_membar_gpu: bool,
}

impl Default for LaunchDesc {
    fn default() -> Self {
        LaunchDesc {
            program_va: 0,
            program_prefetch_bytes: 0,
            grid: [1, 1, 1],
            block: [1, 1, 1],
            register_count: 0,
            barrier_count: 0,
            shared_memory_bytes: 0,
            smem_config: SmemConfig::default(),
            local_memory_per_thread: 0,
            cbanks: [None; 8],
            cbank_invalidate_mask: 1,
            release: None,
            dependent_qmd: None,
            invalidate_caches: INVALIDATE_TINYGRAD,
            sass_version: 0,
            cwd_membar_sysmembar: true,
            cwd_membar_gpu: false,
        }
    }
}

mod layout;
use layout::{Layout, F, V03, V04, V05};
mod template;
pub use template::QmdTemplate;

#[inline(always)]
const fn width(f: F) -> u32 {
    f.0 - f.1 + 1
}

#[inline(always)]
fn fits(v: u64, bits: u32) -> bool {
    bits >= 64 || v >> bits == 0
}

/// Field `f` of `q` (0 outside `q`).
#[inline(always)]
fn get(q: &[u32], f: F) -> u32 {
    let w = width(f);
    let mask = if w >= 32 { u32::MAX } else { (1u32 << w) - 1 };
    q.get((f.1 / 32) as usize)
        .map_or(0, |d| (d >> (f.1 % 32)) & mask)
}

/// Set field `f` to `v` (already validated to fit).
#[inline(always)]
fn put(q: &mut [u32], f: F, v: u32) {
    let w = width(f);
    let mask = if w >= 32 { u32::MAX } else { (1u32 << w) - 1 };
    let sh = f.1 % 32;
    if let Some(d) = q.get_mut((f.1 / 32) as usize) {
        *d = (*d & !(mask << sh)) | ((v & mask) << sh);
    }
}

#[cold]
fn bad(l: &Layout, msg: std::fmt::Arguments<'_>) -> Error {
    Error::new(Status::InvalidLaunch, format!("hw::qmd::{}: {msg}", l.name))
}

/// Split a (shifted) address into a 32-bit lower part and an upper part of `hi_bits`, or fail.
#[inline(always)]
fn split(v: u64, hi_bits: u32) -> Option<(u32, u32)> {
    if fits(v, 32 + hi_bits) {
        Some((v as u32, (v >> 32) as u32))
    } else {
        None
    }
}

fn encode(l: &Layout, d: &LaunchDesc, q: &mut [u32]) -> Result<()> {
    if q.len() < l.dwords {
        return Err(bad(
            l,
            format_args!("output has {} dwords, the QMD needs {}", q.len(), l.dwords),
        ));
    }
    let q = &mut q[..l.dwords];
    q.fill(0);

    // --- validation -------------------------------------------------------------------------
    let [gx, gy, gz] = d.grid;
    if gx == 0 || gy == 0 || gz == 0 || gx > 0x7FFF_FFFF || gy > 0xFFFF || gz > 0xFFFF {
        return Err(bad(
            l,
            format_args!(
                "grid {:?}: each dim must be >= 1, x <= 2^31-1, y and z <= 65535",
                d.grid
            ),
        ));
    }
    let [bx, by, bz] = d.block;
    let threads = u64::from(bx)
        .saturating_mul(u64::from(by))
        .saturating_mul(u64::from(bz));
    if bx == 0 || by == 0 || bz == 0 || bx > 1024 || by > 1024 || bz > 64 || threads > 1024 {
        return Err(bad(
            l,
            format_args!(
                "block {:?}: each dim must be >= 1, x and y <= 1024, z <= 64, x*y*z <= 1024",
                d.block
            ),
        ));
    }
    if d.register_count > 255 {
        return Err(bad(
            l,
            format_args!("register_count {} exceeds 255", d.register_count),
        ));
    }
    if d.barrier_count > 16 {
        return Err(bad(
            l,
            format_args!("barrier_count {} exceeds 16", d.barrier_count),
        ));
    }
    let smem = if l.smem_shift == 0 {
        d.shared_memory_bytes
    } else {
        d.shared_memory_bytes.div_ceil(1 << l.smem_shift)
    };
    if !fits(u64::from(smem), width(l.smem)) {
        return Err(bad(
            l,
            format_args!(
                "shared_memory_bytes {:#x} does not fit SHARED_MEMORY_SIZE",
                d.shared_memory_bytes
            ),
        ));
    }
    let c = d.smem_config;
    let cw = width(l.smem_min);
    if !fits(u64::from(c.min), cw) || !fits(u64::from(c.max), cw) || !fits(u64::from(c.target), cw)
    {
        return Err(bad(
            l,
            format_args!("smem_config {c:?}: values must fit {cw} bits"),
        ));
    }
    let slm = if l.slm_shift == 0 {
        d.local_memory_per_thread
    } else {
        d.local_memory_per_thread.div_ceil(1 << l.slm_shift)
    };
    if !fits(u64::from(slm), width(l.slm_high)) {
        return Err(bad(
            l,
            format_args!(
                "local_memory_per_thread {:#x} does not fit SHADER_LOCAL_MEMORY_HIGH_SIZE",
                d.local_memory_per_thread
            ),
        ));
    }
    if d.program_va & 0xF != 0 {
        return Err(bad(
            l,
            format_args!("program_va {:#x} is not 16-byte aligned", d.program_va),
        ));
    }
    let Some((prog_lo, prog_hi)) = split(d.program_va >> l.prog_shift, width(l.prog_hi)) else {
        return Err(bad(
            l,
            format_args!(
                "program_va {:#x} exceeds the PROGRAM_ADDRESS field",
                d.program_va
            ),
        ));
    };
    let Some((pf_lo, pf_hi)) = split(d.program_va >> 8, width(l.prefetch_hi)) else {
        return Err(bad(
            l,
            format_args!(
                "program_va {:#x} exceeds the PROGRAM_PREFETCH_ADDR field",
                d.program_va
            ),
        ));
    };

    // --- header / constant recipe ------------------------------------------------------------
    put(q, l.group_id, l.group_id_value);
    if let Some(f) = l.qmd_type {
        put(q, f, QMD_TYPE_GRID_CTA);
    }
    if let Some(f) = l.sm_global_caching {
        put(q, f, 1);
    }
    for i in 0..6u32 {
        if d.invalidate_caches & (1 << i) != 0 {
            put(q, (l.invalidate_lo + i, l.invalidate_lo + i), 1);
        }
    }
    put(q, l.api_visible_call_limit, 1);
    put(q, l.sampler_index, l.sampler_index_value);
    put(q, l.minor, 0);
    put(q, l.major_f, l.major);
    put(
        q,
        l.cwd_membar,
        if d.cwd_membar_sysmembar {
            CWD_MEMBAR_TYPE_L1_SYSMEMBAR
        } else if d.cwd_membar_gpu {
            CWD_MEMBAR_TYPE_L1_MEMBAR
        } else {
            CWD_MEMBAR_TYPE_L1_NONE
        },
    );

    // --- launch shape -----------------------------------------------------------------------
    for i in 0..3 {
        put(q, l.grid[i], d.grid[i]);
        put(q, l.block[i], d.block[i]);
    }
    put(q, l.register_count, d.register_count);
    put(q, l.barrier_count, d.barrier_count);
    put(q, l.smem, smem);
    put(q, l.smem_min, c.min);
    put(q, l.smem_max, c.max);
    put(q, l.smem_target, c.target);
    put(q, l.slm_high, slm);
    put(q, l.prog_lo, prog_lo);
    put(q, l.prog_hi, prog_hi);
    put(q, l.prefetch_lo, pf_lo);
    put(q, l.prefetch_hi, pf_hi);
    put(
        q,
        l.prefetch_size,
        // In 256-byte units, rounded up: the whole program (the prefetcher may read past its
        // end into the slack after the code).
        d.program_prefetch_bytes.div_ceil(256).min(0x1FF),
    );
    put(q, l.sass, u32::from(d.sass_version));

    // --- constant banks ---------------------------------------------------------------------
    for (i, cb) in d.cbanks.iter().enumerate() {
        let i32_ = i as u32;
        let (valid_bit, inval_bit) = if l.cb_flag_stride == 0 {
            (l.cb_valid + i32_, l.cb_invalidate + 64 * i32_)
        } else {
            (
                l.cb_valid + l.cb_flag_stride * i32_,
                l.cb_invalidate + l.cb_flag_stride * i32_,
            )
        };
        if d.cbank_invalidate_mask & (1 << i) != 0 {
            put(q, (inval_bit, inval_bit), 1);
        }
        let Some((va, size)) = *cb else { continue };
        if size == 0 || size > 0x1_0000 {
            return Err(bad(
                l,
                format_args!("cbank {i}: size {size:#x} must be 1..=0x10000 bytes"),
            ));
        }
        let align = 1u64 << l.cb_addr_shift.max(4);
        if va & (align - 1) != 0 {
            return Err(bad(
                l,
                format_args!("cbank {i}: address {va:#x} is not {align}-byte aligned"),
            ));
        }
        let Some((lo, hi)) = split(va >> l.cb_addr_shift, width(l.cb_addr_hi)) else {
            return Err(bad(
                l,
                format_args!("cbank {i}: address {va:#x} exceeds the CONSTANT_BUFFER_ADDR field"),
            ));
        };
        let o = 64 * i32_;
        put(q, (valid_bit, valid_bit), 1);
        put(q, (l.cb_addr_lo.0 + o, l.cb_addr_lo.1 + o), lo);
        put(q, (l.cb_addr_hi.0 + o, l.cb_addr_hi.1 + o), hi);
        put(q, (l.cb_size.0 + o, l.cb_size.1 + o), size.div_ceil(16));
    }

    // --- release slot 0 ---------------------------------------------------------------------
    if let Some(r) = d.release {
        put_release0(l, q, &r)?;
    }

    // --- dependent QMD ----------------------------------------------------------------------
    if let Some(next) = d.dependent_qmd {
        if next & 0xFF != 0 || !fits(next, 40) {
            return Err(bad(
                l,
                format_args!("dependent_qmd {next:#x} must be 256-byte aligned and below 2^40"),
            ));
        }
        put(q, l.dep_pointer, (next >> 8) as u32);
        put(q, l.dep_enable, 1);
        put(q, l.dep_action, DEPENDENT_QMD_ACTION_QMD_SCHEDULE);
        put(q, l.dep_prefetch, 1);
    }
    Ok(())
}

/// Release slot 0 of a QMD: `r` written into `q` (layout `l`), enabled.
fn put_release0(l: &Layout, q: &mut [u32], r: &QmdRelease) -> Result<()> {
    put_release(l, 0, q, r)
}

/// Release slot `slot` (0 or 1) of a QMD: `r` written into `q` (layout `l`), enabled.
fn put_release(l: &Layout, slot: usize, q: &mut [u32], r: &QmdRelease) -> Result<()> {
    let f = &l.rel[slot];
    let (structure, align) = if r.timestamp {
        (RELEASE_STRUCTURE_SIZE_FOUR_WORDS, 16)
    } else if r.payload64 {
        (RELEASE_STRUCTURE_SIZE_TWO_WORDS, 8)
    } else {
        (RELEASE_STRUCTURE_SIZE_ONE_WORD, 4)
    };
    if r.va & (align - 1) != 0 {
        return Err(bad(
            l,
            format_args!("release address {:#x} is not {align}-byte aligned", r.va),
        ));
    }
    if !r.payload64 && r.payload > u64::from(u32::MAX) {
        return Err(bad(
            l,
            format_args!("release payload {:#x} needs payload64", r.payload),
        ));
    }
    let Some((lo, hi)) = split(r.va, width(f.addr_hi)) else {
        return Err(bad(
            l,
            format_args!(
                "release address {:#x} exceeds the RELEASE address field",
                r.va
            ),
        ));
    };
    put(q, f.enable, 1);
    put(q, f.structure, structure);
    put(q, f.membar, u32::from(r.membar_sys));
    put(q, f.payload64, u32::from(r.payload64));
    put(q, f.addr_lo, lo);
    put(q, f.addr_hi, hi);
    put(q, f.payload_lo, r.payload as u32);
    put(q, f.payload_hi, (r.payload >> 32) as u32);
    Ok(())
}

/// The dwords of a QMD that give it release slot 1 (`r`), for a QMD already in memory whose
/// slot 1 is disabled: up to 5 (dword index, value) pairs in `words[..len]`. The dword holding
/// slot 1's enable bit (`ctl`) also holds other fields (V04/V05: release slot 0's controls), so
/// its value here carries slot 1's bits only: OR it into the QMD's own value of that dword.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Release1Patch {
    pub words: [(usize, u32); 5],
    pub len: usize,
    pub ctl: usize,
}

/// [`Release1Patch`] for a `version` QMD and release `r` (alignment and range checked as for
/// any QMD release).
pub fn release1_patch(version: QmdVersion, r: &QmdRelease) -> Result<Release1Patch> {
    let l = layout(version);
    let mut q = [0u32; 96];
    put_release(l, 1, &mut q, r)?;
    let f = &l.rel[1];
    let ctl = (f.enable.1 / 32) as usize;
    let mut p = Release1Patch {
        words: [(0, 0); 5],
        len: 0,
        ctl,
    };
    for field in [f.enable, f.addr_lo, f.addr_hi, f.payload_lo, f.payload_hi] {
        let d = (field.1 / 32) as usize;
        if !p.words[..p.len].iter().any(|&(w, _)| w == d) {
            p.words[p.len] = (d, q[d]);
            p.len += 1;
        }
    }
    // Every field of the slot lies in one of these dwords.
    debug_assert!([f.structure, f.membar, f.payload64]
        .iter()
        .all(|x| p.words[..p.len]
            .iter()
            .any(|&(w, _)| w == (x.1 / 32) as usize)));
    Ok(p)
}

/// The dword of a `version` QMD holding release slot 1's enable bit (see [`Release1Patch`]).
pub fn release1_ctl_dword(version: QmdVersion) -> usize {
    (layout(version).rel[1].enable.1 / 32) as usize
}

fn layout(version: QmdVersion) -> &'static Layout {
    match version {
        QmdVersion::V03 => &V03,
        QmdVersion::V04 => &V04,
        QmdVersion::V05 => &V05,
    }
}

/// The dwords of a `version` QMD holding the low and high 32 bits of release slot 0's payload,
/// where each is a whole dword (every supported version): a QMD that already carries the release
/// (same address) gets a new payload by writing these two dwords alone, without reading it.
pub fn release0_payload_dwords(version: QmdVersion) -> Option<(usize, usize)> {
    let l: &Layout = match version {
        QmdVersion::V03 => &V03,
        QmdVersion::V04 => &V04,
        QmdVersion::V05 => &V05,
    };
    let whole = |f: F| f.1 % 32 == 0 && f.0 == f.1 + 31;
    let (lo, hi) = (l.rel[0].payload_lo, l.rel[0].payload_hi);
    (whole(lo) && whole(hi)).then_some(((lo.1 / 32) as usize, (hi.1 / 32) as usize))
}

/// The two dwords of a `version` QMD holding release slot 0's address, with their values for
/// release `r`: (dword, value) for the low and the high part. The high dword also holds slot
/// 0's other fields on V03 (enable, membar, structure, payload size): its value is right for a
/// QMD whose release 0 has `r`'s flags, so a QMD carrying such a release is moved to another
/// semaphore by writing these two dwords alone.
pub fn release0_addr_words(version: QmdVersion, r: &QmdRelease) -> Result<[(usize, u32); 2]> {
    let l = layout(version);
    let mut q = [0u32; 96];
    put_release(l, 0, &mut q, r)?;
    let f = &l.rel[0];
    let (lo, hi) = ((f.addr_lo.1 / 32) as usize, (f.addr_hi.1 / 32) as usize);
    Ok([(lo, q[lo]), (hi, q[hi])])
}

/// Encode a QMD V03_00 (Ampere/Ada: c6c0, c7c0, c9c0).
pub fn encode_v03(d: &LaunchDesc, out: &mut [u32; 64]) -> Result<()> {
    encode(&V03, d, out)
}

/// Encode a QMD V04_00 (Hopper: cbc0). QMD_TYPE = GRID_CTA; cbank addresses must be 64-aligned.
pub fn encode_v04(d: &LaunchDesc, out: &mut [u32; 96]) -> Result<()> {
    encode(&V04, d, out)
}

/// Encode a QMD V05_00 (Blackwell: cdc0, cec0). **Unverified on hardware.**
pub fn encode_v05(d: &LaunchDesc, out: &mut [u32; 96]) -> Result<()> {
    encode(&V05, d, out)
}

/// Encode the QMD of `version` into the first `version.size_dwords()` dwords of `out` (the rest
/// is untouched) and return that dword count.
pub fn encode_qmd(version: QmdVersion, d: &LaunchDesc, out: &mut [u32]) -> Result<usize> {
    let l = match version {
        QmdVersion::V03 => &V03,
        QmdVersion::V04 => &V04,
        QmdVersion::V05 => &V05,
    };
    encode(l, d, out)?;
    Ok(l.dwords)
}
