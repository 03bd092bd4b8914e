//! [`QmdTemplate`]: a QMD encoded once per kernel, patched per launch (launch shape, shared
//! memory, constant bank 0), and the changes made to a written QMD: stack size, clusters,
//! chaining to a dependent QMD, constant bank 0's address.

use super::layout::{self, Layout, F, V03, V04, V05};
use super::{
    bad, encode, fits, get, put, put_release0, split, width, LaunchDesc, QmdRelease, SmemConfig,
};
use super::{
    CONSTANT_BUFFER_PREFETCH_POST, CWD_MEMBAR_TYPE_L1_MEMBAR, DEPENDENT_QMD_ACTION_QMD_SCHEDULE,
    PROGRAM_PREFETCH_TYPE_PREFETCH_POST, QMD_TYPE_GRID_GPC_CGA,
};
use crate::error::{Error, Result, Status};
use crate::hw::arch::QmdVersion;

/// A QMD encoded once per kernel. Per launch only the launch shape, the shared-memory size and
/// configuration and constant bank 0 change; [`QmdTemplate::write`] patches those fields into a
/// copy (no allocation, a few dozen instructions instead of a full encode).
#[derive(Clone)]
pub struct QmdTemplate {
    layout: &'static Layout,
    words: [u32; 96],
    /// Indices of the dwords `write` may change (launch shape, shared memory, cbank 0).
    variable: [u8; 24],
    n_variable: usize,
    /// CONSTANT_BUFFER_ADDR_LOWER/UPPER of bank 0 as (dword, shift, mask), for
    /// [`QmdTemplate::set_cbank0_address`].
    cb_lo: (usize, u32, u32),
    cb_hi: (usize, u32, u32),
}

/// (dword, shift, mask) of a field.
const fn field_at(f: F) -> (usize, u32, u32) {
    let w = width(f);
    (
        (f.1 / 32) as usize,
        f.1 % 32,
        if w >= 32 { u32::MAX } else { (1u32 << w) - 1 },
    )
}

impl std::fmt::Debug for QmdTemplate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QmdTemplate")
            .field("layout", &self.layout.name)
            .finish()
    }
}

impl QmdTemplate {
    /// Encode `d` (everything but grid, block, shared memory and cbank 0, which `write` sets) for
    /// `version`. `d.cbanks[0]` must be `Some` so the template marks constant bank 0 valid.
    pub fn new(version: QmdVersion, d: &LaunchDesc) -> Result<QmdTemplate> {
        let layout: &'static Layout = match version {
            QmdVersion::V03 => &V03,
            QmdVersion::V04 => &V04,
            QmdVersion::V05 => &V05,
        };
        if d.cbanks[0].is_none() {
            return Err(bad(
                layout,
                format_args!("a QMD template needs constant bank 0"),
            ));
        }
        let mut words = [0u32; 96];
        encode(layout, d, &mut words)?;
        let l = layout;
        let fields = [
            l.grid[0],
            l.grid[1],
            l.grid[2],
            l.block[0],
            l.block[1],
            l.block[2],
            l.smem,
            l.smem_min,
            l.smem_max,
            l.smem_target,
            l.cb_addr_lo,
            l.cb_addr_hi,
            l.cb_size,
            l.slm_high,
        ];
        let mut variable = [0u8; 24];
        let mut n_variable = 0;
        for f in fields {
            let dw = (f.1 / 32) as u8;
            if !variable[..n_variable].contains(&dw) {
                variable[n_variable] = dw;
                n_variable += 1;
            }
        }
        variable[..n_variable].sort_unstable();
        Ok(QmdTemplate {
            layout,
            words,
            variable,
            n_variable,
            cb_lo: field_at(l.cb_addr_lo),
            cb_hi: field_at(l.cb_addr_hi),
        })
    }

    /// Set SHADER_LOCAL_MEMORY_HIGH_SIZE (per-thread local bytes) in a QMD written by
    /// [`QmdTemplate::write`]: a launch after the device's stack limit was raised.
    pub fn set_local_memory(&self, out: &mut [u32], local_memory_per_thread: u32) -> Result<()> {
        let l = self.layout;
        let slm = if l.slm_shift == 0 {
            local_memory_per_thread
        } else {
            local_memory_per_thread.div_ceil(1 << l.slm_shift)
        };
        if !fits(u64::from(slm), width(l.slm_high)) || out.len() < l.dwords {
            return Err(bad(
                l,
                format_args!(
                    "local_memory_per_thread {local_memory_per_thread:#x} does not fit SHADER_LOCAL_MEMORY_HIGH_SIZE"
                ),
            ));
        }
        put(out, l.slm_high, slm);
        Ok(())
    }

    /// Make a QMD written by [`QmdTemplate::write`] launch thread-block clusters of `cluster`
    /// blocks (QMD_TYPE GRID_GPC_CGA, GPC_CGA_WIDTH/HEIGHT/DEPTH; V04 only). GRID_WIDTH/HEIGHT/
    /// DEPTH then count clusters (with the grid in blocks an H100 ran `cluster` times too many
    /// blocks); each cluster dimension must divide the grid's (`grid`, in blocks) and fit 6 bits.
    pub fn set_cluster(&self, out: &mut [u32], grid: [u32; 3], cluster: [u32; 3]) -> Result<()> {
        let l = self.layout;
        let (Some(cga), Some(ty)) = (l.gpc_cga, l.qmd_type) else {
            return Err(Error::new(
                Status::NotSupported,
                format!(
                    "hw::qmd::{}: thread-block clusters are not supported with this QMD version",
                    l.name
                ),
            ));
        };
        for i in 0..3 {
            if cluster[i] == 0
                || cluster[i] > 63
                || grid[i] % cluster[i] != 0
                || out.len() < l.dwords
            {
                return Err(bad(
                    l,
                    format_args!(
                        "cluster {cluster:?} must have dimensions 1..=63 that divide the grid {grid:?}"
                    ),
                ));
            }
        }
        put(out, ty, QMD_TYPE_GRID_GPC_CGA);
        for i in 0..3 {
            put(out, cga[i], cluster[i]);
            put(out, l.grid[i], grid[i] / cluster[i]);
        }
        Ok(())
    }

    /// Chain a QMD written by [`QmdTemplate::write`]: when its grid completes (after its
    /// end-of-grid membar), the hardware schedules the QMD at `next` (DEPENDENT_QMD0, action
    /// QMD_SCHEDULE, prefetch), with no pushbuffer method and no wait for idle in between.
    pub fn set_dependent(&self, out: &mut [u32], next: u64) -> Result<()> {
        let l = self.layout;
        if next & 0xFF != 0 || !fits(next, 40) || out.len() < l.dwords {
            return Err(bad(
                l,
                format_args!("dependent_qmd {next:#x} must be 256-byte aligned and below 2^40"),
            ));
        }
        put(out, l.dep_pointer, (next >> 8) as u32);
        put(out, l.dep_enable, 1);
        put(out, l.dep_action, DEPENDENT_QMD_ACTION_QMD_SCHEDULE);
        put(out, l.dep_prefetch, 1);
        Ok(())
    }

    /// Give a QMD written by [`QmdTemplate::write`] release slot 0: when its grid completes
    /// (after the release's membar), the GPU writes `r.payload` to `r.va`.
    pub fn set_release0(&self, out: &mut [u32], r: QmdRelease) -> Result<()> {
        if out.len() < self.layout.dwords {
            return Err(bad(
                self.layout,
                format_args!("set_release0: QMD too short"),
            ));
        }
        put_release0(self.layout, out, &r)
    }

    /// Whether [`QmdTemplate::chain`] gives a predecessor more than DEPENDENT_QMD0 (the
    /// membar with task chasing and the successor's prefetches): Hopper's QMD V04.
    pub fn chain_prefetches(&self) -> bool {
        self.layout.chain.is_some()
    }

    /// Chain the QMD `prev` (written by this template) to the QMD `next` at `next_va` (written
    /// by `next_tmpl`, of the same version), as consecutive nodes of a CUDA graph are chained:
    /// DEPENDENT_QMD0 schedules `next` when `prev`'s grid completes. Where the version allows
    /// ([`QmdTemplate::chain_prefetches`]), `prev` also gets what libcuda's graph nodes carry:
    /// a GPU-scope end-of-grid membar with task chasing (the successor is GPU work; a signal
    /// after the chain brings its own system-scope membar), a POST prefetch of `next`'s program,
    /// and `next`'s constant bank 0 bound as bank 5 with a POST prefetch. A `next` whose bank 0
    /// is prefetched should not invalidate it ([`QmdTemplate::clear_cbank0_invalidate`]); the
    /// constant cache must then be invalidated once before the chain runs.
    pub fn chain(
        &self,
        prev: &mut [u32],
        next_va: u64,
        next: &[u32],
        next_tmpl: &QmdTemplate,
    ) -> Result<()> {
        self.set_dependent(prev, next_va)?;
        let l = self.layout;
        let Some(c) = l.chain else { return Ok(()) };
        if !std::ptr::eq(l, next_tmpl.layout) || next.len() < l.dwords {
            return Err(bad(
                l,
                format_args!("chain: the next QMD has another version"),
            ));
        }
        put(prev, l.cwd_membar, CWD_MEMBAR_TYPE_L1_MEMBAR);
        put(prev, c.task_chasing, 1);
        for f in [l.prefetch_lo, l.prefetch_hi, l.prefetch_size] {
            put(prev, f, get(next, f));
        }
        put(prev, c.prefetch_type, PROGRAM_PREFETCH_TYPE_PREFETCH_POST);
        let b = layout::CHAIN_PREFETCH_BANK;
        let at = |f: F, by: u32| (f.0 + by, f.1 + by);
        for f in [l.cb_addr_lo, l.cb_addr_hi, l.cb_size] {
            put(prev, at(f, 64 * b), get(next, f));
        }
        let flag = l.cb_flag_stride * b;
        put(prev, (l.cb_valid + flag, l.cb_valid + flag), 1);
        put(prev, at(c.cb_prefetch, flag), CONSTANT_BUFFER_PREFETCH_POST);
        Ok(())
    }

    /// Clear CONSTANT_BUFFER_INVALIDATE(0) in a QMD written by this template (a chained
    /// successor whose bank 0 its predecessor prefetched).
    pub fn clear_cbank0_invalidate(&self, out: &mut [u32]) {
        let l = self.layout;
        put(out, (l.cb_invalidate, l.cb_invalidate), 0);
    }

    /// The dwords [`QmdTemplate::write`] may change; every other dword equals the template.
    /// A QMD slot that already holds a launch of this template needs only these rewritten.
    pub fn variable_dwords(&self) -> &[u8] {
        &self.variable[..self.n_variable]
    }

    /// Move constant bank 0 of a QMD written by [`QmdTemplate::write`] to `va` (same size):
    /// the same launch recorded again with its constant bank elsewhere.
    #[inline]
    pub fn set_cbank0_address(&self, out: &mut [u32; 96], va: u64) -> Result<()> {
        for (i, v) in self.cbank0_address_words(out, va)? {
            out[i] = v;
        }
        Ok(())
    }

    /// The two dwords (index, value) that move constant bank 0 of `qmd` (written by
    /// [`QmdTemplate::write`]) to `va`: [`QmdTemplate::set_cbank0_address`] without writing, for
    /// a caller that copies the QMD elsewhere and patches the copy.
    #[inline(always)]
    pub fn cbank0_address_words(&self, qmd: &[u32; 96], va: u64) -> Result<[(usize, u32); 2]> {
        let shift = self.layout.cb_addr_shift;
        let v = va >> shift;
        let (ld, ls, lm) = self.cb_lo;
        let (hd, hs, hm) = self.cb_hi;
        if va & ((1u64 << shift.max(4)) - 1) != 0
            || v >> 32 > u64::from(hm)
            || lm != u32::MAX
            || ls != 0
            || ld >= 96
            || hd >= 96
        {
            return Err(self.bad_cbank0_address(va));
        }
        let hi = (qmd[hd] & !(hm << hs)) | (((v >> 32) as u32 & hm) << hs);
        Ok([(ld, v as u32), (hd, hi)])
    }

    #[cold]
    fn bad_cbank0_address(&self, va: u64) -> Error {
        let align = 1u64 << self.layout.cb_addr_shift.max(4);
        bad(
            self.layout,
            format_args!(
                "cbank 0 address {va:#x} must be {align}-byte aligned and fit CONSTANT_BUFFER_ADDR"
            ),
        )
    }

    /// QMD size in dwords.
    pub fn dwords(&self) -> usize {
        self.layout.dwords
    }

    /// Write the QMD of one launch into `out[..self.dwords()]`.
    #[inline]
    pub fn write(
        &self,
        out: &mut [u32],
        grid: [u32; 3],
        block: [u32; 3],
        shared_memory_bytes: u32,
        smem: SmemConfig,
        cbank0: (u64, u32),
    ) -> Result<()> {
        let l = self.layout;
        let n = l.dwords;
        if out.len() < n {
            return Err(bad(
                l,
                format_args!("output has {} dwords, the QMD needs {n}", out.len()),
            ));
        }
        let [gx, gy, gz] = grid;
        let [bx, by, bz] = block;
        let threads = u64::from(bx) * u64::from(by) * u64::from(bz);
        if gx == 0 || gy == 0 || gz == 0 || gx > 0x7FFF_FFFF || gy > 0xFFFF || gz > 0xFFFF {
            return Err(bad(
                l,
                format_args!("grid {grid:?}: each dim must be >= 1, x <= 2^31-1, y and z <= 65535"),
            ));
        }
        if bx == 0 || by == 0 || bz == 0 || bx > 1024 || by > 1024 || bz > 64 || threads > 1024 {
            return Err(bad(l, format_args!("block {block:?}: each dim must be >= 1, x and y <= 1024, z <= 64, x*y*z <= 1024")));
        }
        let sm = if l.smem_shift == 0 {
            shared_memory_bytes
        } else {
            shared_memory_bytes.div_ceil(1 << l.smem_shift)
        };
        let cw = width(l.smem_min);
        if !fits(u64::from(sm), width(l.smem))
            || !fits(u64::from(smem.min), cw)
            || !fits(u64::from(smem.max), cw)
            || !fits(u64::from(smem.target), cw)
        {
            return Err(bad(
                l,
                format_args!(
                    "shared memory {shared_memory_bytes:#x} / config {smem:?} does not fit the QMD"
                ),
            ));
        }
        let (va, size) = cbank0;
        let align = 1u64 << l.cb_addr_shift.max(4);
        let Some((lo, hi)) = split(va >> l.cb_addr_shift, width(l.cb_addr_hi)) else {
            return Err(bad(
                l,
                format_args!("cbank 0 address {va:#x} exceeds the CONSTANT_BUFFER_ADDR field"),
            ));
        };
        if size == 0 || size > 0x1_0000 || va & (align - 1) != 0 {
            return Err(bad(
                l,
                format_args!(
                    "cbank 0 ({va:#x}, {size:#x}): size 1..=0x10000, {align}-byte aligned"
                ),
            ));
        }
        let q = &mut out[..n];
        q.copy_from_slice(&self.words[..n]);
        for i in 0..3 {
            put(q, l.grid[i], grid[i]);
            put(q, l.block[i], block[i]);
        }
        put(q, l.smem, sm);
        put(q, l.smem_min, smem.min);
        put(q, l.smem_max, smem.max);
        put(q, l.smem_target, smem.target);
        put(q, l.cb_addr_lo, lo);
        put(q, l.cb_addr_hi, hi);
        put(q, l.cb_size, size.div_ceil(16));
        Ok(())
    }
}
