//! Registry of reference kernels: code bytes of known cubin functions → CPU closures.
//!
//! The emulated GPU identifies a launched kernel by comparing the code bytes at the QMD's program
//! address with the `.text.<name>` bytes of every registered kernel. The built-in entries come from
//! the fixture cubins `tests/fixtures/cubin/kernels.sm_87.cubin` / `kernels.sm_90.cubin` (sources in
//! `tests/fixtures/kernels.cu`); tests can add more with [`register`].
//!
//! The closures behave like the compiled code: they read `blockDim`/`gridDim` from constant bank 0
//! (offsets 0x0..0x14, as the SASS reads `c[0x0][0x0..]`), read their parameters from cbank0 at
//! `param_base` + the C-ABI offset, iterate over the QMD grid × block, and touch GPU memory only
//! through the [`Mmu`] (an unmapped address gives an [`MmuFault`] with that address). Float
//! arithmetic follows the compiled code (`a * x + y` is a fused multiply-add, as nvcc emits it
//! by default; reductions add in the kernel's tree order).

use super::gpu::mem;
use super::hwif::{Mmu, MmuFault};
use crate::os::lock::ForkRwLock as RwLock;
use std::sync::{Arc, OnceLock};

/// A reference implementation of one kernel.
pub type RefKernelFn = fn(&LaunchCtx) -> Result<(), MmuFault>;

/// What a reference kernel sees of one launch.
pub struct LaunchCtx<'a> {
    /// QMD grid dimensions (CTA raster width/height/depth).
    pub grid: [u32; 3],
    /// QMD block dimensions (CTA thread dimensions).
    pub block: [u32; 3],
    /// Constant bank 0 as the QMD describes it (address, size).
    pub cbank0: &'a [u8],
    /// Byte offset of the first kernel parameter in cbank0.
    pub param_base: usize,
    /// QMD SHARED_MEMORY_SIZE in bytes.
    pub shared_bytes: u32,
    /// The channel's address space.
    pub mmu: &'a dyn Mmu,
    /// When the grid started (the first call for this launch; a kernel that asked to keep
    /// running is called again with the same value).
    pub started: std::time::Instant,
    /// Set by [`LaunchCtx::keep_running`].
    pub running: std::cell::Cell<bool>,
    /// The texture pools bound on the compute object (None if not set).
    pub textures: Option<super::texture::TexturePools>,
}

impl LaunchCtx<'_> {
    /// The grid has not finished: the emulated GPU calls the kernel again on its next pass
    /// (the channel stays busy, other channels run, and a channel teardown abandons the grid),
    /// as a real GPU keeps running a kernel that spins.
    pub fn keep_running(&self) {
        self.running.set(true);
    }
    /// u32 at byte `off` of cbank0. Reads past the bank's size return 0, as constant-bank reads
    /// beyond the bound size do on hardware.
    pub fn cb_u32(&self, off: usize) -> u32 {
        match self.cbank0.get(off..off + 4) {
            Some(b) => u32::from_le_bytes([b[0], b[1], b[2], b[3]]),
            None => 0,
        }
    }
    /// u64 at byte `off` of cbank0 (0 past the end).
    pub fn cb_u64(&self, off: usize) -> u64 {
        u64::from(self.cb_u32(off)) | (u64::from(self.cb_u32(off + 4)) << 32)
    }
    /// u32 parameter at `off` bytes from the parameter base.
    pub fn param_u32(&self, off: usize) -> u32 {
        self.cb_u32(self.param_base + off)
    }
    /// u64 (pointer) parameter at `off` bytes from the parameter base.
    pub fn param_u64(&self, off: usize) -> u64 {
        self.cb_u64(self.param_base + off)
    }
    /// `blockDim` as the kernel reads it (cbank0 0x0/0x4/0x8).
    pub fn block_dim(&self) -> [u32; 3] {
        [self.cb_u32(0x0), self.cb_u32(0x4), self.cb_u32(0x8)]
    }
    /// `gridDim` as the kernel reads it (cbank0 0xC/0x10/0x14).
    pub fn grid_dim(&self) -> [u32; 3] {
        [self.cb_u32(0xc), self.cb_u32(0x10), self.cb_u32(0x14)]
    }
    /// Visit every thread of the launch: `f(blockIdx, threadIdx)`, blocks in raster order.
    pub fn for_each_thread(
        &self,
        mut f: impl FnMut([u32; 3], [u32; 3]) -> Result<(), MmuFault>,
    ) -> Result<(), MmuFault> {
        for bz in 0..self.grid[2] {
            for by in 0..self.grid[1] {
                for bx in 0..self.grid[0] {
                    for tz in 0..self.block[2] {
                        for ty in 0..self.block[1] {
                            for tx in 0..self.block[0] {
                                f([bx, by, bz], [tx, ty, tz])?;
                            }
                        }
                    }
                }
            }
        }
        Ok(())
    }
    /// Visit every block: `f(blockIdx)`.
    pub fn for_each_block(
        &self,
        mut f: impl FnMut([u32; 3]) -> Result<(), MmuFault>,
    ) -> Result<(), MmuFault> {
        for bz in 0..self.grid[2] {
            for by in 0..self.grid[1] {
                for bx in 0..self.grid[0] {
                    f([bx, by, bz])?;
                }
            }
        }
        Ok(())
    }
    /// Visit every thread of one block: `f(threadIdx)`.
    pub fn for_each_tid(
        &self,
        mut f: impl FnMut([u32; 3]) -> Result<(), MmuFault>,
    ) -> Result<(), MmuFault> {
        for tz in 0..self.block[2] {
            for ty in 0..self.block[1] {
                for tx in 0..self.block[0] {
                    f([tx, ty, tz])?;
                }
            }
        }
        Ok(())
    }
}

/// Element access to GPU memory with a small cache of translated mapping windows, so per-thread
/// loads and stores cost a few compares.
pub struct GpuMem<'a> {
    mmu: &'a dyn Mmu,
    wins: [Win; 4],
    next: usize,
}

#[derive(Clone, Copy)]
struct Win {
    va: u64,
    end: u64,
    ptr: *mut u8,
    write: bool,
}

impl<'a> GpuMem<'a> {
    /// An accessor over `mmu`.
    pub fn new(mmu: &'a dyn Mmu) -> GpuMem<'a> {
        let empty = Win {
            va: 1,
            end: 0,
            ptr: std::ptr::null_mut(),
            write: false,
        };
        GpuMem {
            mmu,
            wins: [empty; 4],
            next: 0,
        }
    }

    fn ptr(&mut self, va: u64, size: u64, write: bool) -> Result<*mut u8, MmuFault> {
        let end = va.checked_add(size).ok_or_else(|| fault(va, size, write))?;
        for w in &self.wins {
            if w.va <= va && end <= w.end && (w.write || !write) {
                // SAFETY: inside a window that translate vouched for.
                return Ok(unsafe { w.ptr.add((va - w.va) as usize) });
            }
        }
        // Miss: translate the longest run of the mapping from the start of va's page.
        let page = va & !0xfff;
        let base = if self.mmu.translate(page, 1, write).is_some() {
            page
        } else {
            va
        };
        let (p, n) = mem::longest_piece(self.mmu, base, u64::MAX - base, write)
            .map_err(|_| fault(va, size, write))?;
        let w = Win {
            va: base,
            end: base + n,
            ptr: p.0,
            write,
        };
        if end > w.end {
            return Err(fault(w.end.max(va), size, write));
        }
        self.wins[self.next] = w;
        self.next = (self.next + 1) % self.wins.len();
        // SAFETY: as above.
        Ok(unsafe { w.ptr.add((va - w.va) as usize) })
    }

    /// Load a u32 at GPU VA `va`.
    pub fn read_u32(&mut self, va: u64) -> Result<u32, MmuFault> {
        let p = self.ptr(va, 4, false)?;
        // SAFETY: 4 mapped bytes.
        Ok(unsafe { std::ptr::read_unaligned(p as *const u32) })
    }
    /// Store a u32 at GPU VA `va`.
    pub fn write_u32(&mut self, va: u64, v: u32) -> Result<(), MmuFault> {
        let p = self.ptr(va, 4, true)?;
        // SAFETY: 4 mapped, writable bytes.
        unsafe { std::ptr::write_unaligned(p as *mut u32, v) };
        Ok(())
    }
    /// Load a u64 at GPU VA `va`.
    pub fn read_u64(&mut self, va: u64) -> Result<u64, MmuFault> {
        let p = self.ptr(va, 8, false)?;
        // SAFETY: 8 mapped bytes.
        Ok(unsafe { std::ptr::read_unaligned(p as *const u64) })
    }
    /// Store a u64 at GPU VA `va`.
    pub fn write_u64(&mut self, va: u64, v: u64) -> Result<(), MmuFault> {
        let p = self.ptr(va, 8, true)?;
        // SAFETY: 8 mapped, writable bytes.
        unsafe { std::ptr::write_unaligned(p as *mut u64, v) };
        Ok(())
    }
    /// Load an f32 at GPU VA `va`.
    pub fn read_f32(&mut self, va: u64) -> Result<f32, MmuFault> {
        self.read_u32(va).map(f32::from_bits)
    }
    /// Store an f32 at GPU VA `va`.
    pub fn write_f32(&mut self, va: u64, v: f32) -> Result<(), MmuFault> {
        self.write_u32(va, v.to_bits())
    }
}

fn fault(va: u64, size: u64, write: bool) -> MmuFault {
    MmuFault {
        address: va,
        write,
        what: format!(
            "kernel {} of {size} bytes at unmapped{} GPU VA {va:#x}",
            if write { "store" } else { "load" },
            if write { " or read-only" } else { "" }
        ),
    }
}

/// What the cubin says about a kernel (absent for kernels added with [`register`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KernelMeta {
    /// SM version the code was compiled for (87, 90).
    pub sm: Option<u32>,
    /// EIATTR_PARAM_CBANK parameter offset in cbank0.
    pub param_base: Option<u32>,
    /// EIATTR_REGCOUNT.
    pub regcount: Option<u32>,
    /// `.nv.shared.<fn>` size (static shared memory; on sm_90 it includes the reserved 1 KiB).
    pub static_shared: Option<u32>,
    /// EIATTR_MIN_STACK_SIZE (local memory per thread, before the 0x240 reserve).
    pub min_stack: Option<u32>,
    /// EIATTR_MAX_THREADS (`__launch_bounds__`).
    pub max_threads: Option<[u32; 3]>,
}

/// One registered reference kernel.
pub struct RefKernel {
    /// Function name.
    pub name: String,
    /// The exact `.text.<name>` bytes.
    pub code: Vec<u8>,
    /// The CPU implementation.
    pub f: RefKernelFn,
    /// Cubin attributes used for launch checks.
    pub meta: KernelMeta,
}

static FIXTURE_SM87: &[u8] = include_bytes!("../../tests/fixtures/cubin/kernels.sm_87.cubin");
static FIXTURE_SM90: &[u8] = include_bytes!("../../tests/fixtures/cubin/kernels.sm_90.cubin");

fn registry() -> &'static RwLock<Vec<Arc<RefKernel>>> {
    static REG: OnceLock<RwLock<Vec<Arc<RefKernel>>>> = OnceLock::new();
    REG.get_or_init(|| {
        crate::os::fork::register(&FORK_LOCK);
        let mut v = Vec::new();
        let copy87 = crate::builtin::copy_cubin(8, 7).unwrap_or(&[]);
        let copy90 = crate::builtin::copy_cubin(9, 0).unwrap_or(&[]);
        for (sm, bytes) in [
            (87, FIXTURE_SM87),
            (90, FIXTURE_SM90),
            (87, copy87),
            (90, copy90),
        ] {
            // A fixture that fails to parse only leaves its kernels unknown (launches then fault).
            if let Ok(ks) = cubin_kernels(bytes, sm) {
                v.extend(ks.into_iter().map(Arc::new));
            }
        }
        RwLock::new(v)
    })
}

/// The registry's lock, held across `fork()` (see `crate::os::fork`).
pub(crate) static FORK_LOCK: crate::os::fork::ForkLock = crate::os::fork::ForkLock {
    order: 4,
    lock: || std::mem::forget(registry().write()),
    // SAFETY (of the call): the caller took the write lock with `lock` and forgot its guard.
    unlock: || unsafe { registry().force_unlock_write() },
};

/// The reference implementation for a fixture kernel name.
fn builtin(name: &str) -> Option<RefKernelFn> {
    Some(match name {
        "empty_kernel" => empty_kernel,
        "vector_add" => vector_add,
        "saxpy" => saxpy,
        "matmul_tiled" => matmul_tiled,
        "reduce_sum" => reduce_sum,
        "increment" => increment,
        "fill_u32" => fill_u32,
        "mixed_params" => mixed_params,
        "uses_local" => uses_local,
        "bounded_128" => bounded_128,
        "big_params" => big_params,
        "tg_copy" => tg_copy,
        "spin_until" => spin_until,
        "tex_fetch_1d" => tex_fetch_1d,
        "tex_fetch_2d" => tex_fetch_2d,
        "count_stale" => count_stale,
        _ => return None,
    })
}

/// Extract every fixture kernel of a cubin with its attributes.
fn cubin_kernels(bytes: &[u8], sm: u32) -> Result<Vec<RefKernel>, object::Error> {
    use object::{Object, ObjectSection, ObjectSymbol};
    // `object` reads ELF headers in place and needs them aligned; `include_bytes!` data is not.
    let mut aligned = vec![0u64; bytes.len().div_ceil(8)];
    // SAFETY: `aligned` has at least bytes.len() bytes; u64 has no invalid bit patterns.
    let data = unsafe {
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), aligned.as_mut_ptr() as *mut u8, bytes.len());
        std::slice::from_raw_parts(aligned.as_ptr() as *const u8, bytes.len())
    };
    let file = object::File::parse(data)?;
    let rd32 = |b: &[u8], o: usize| {
        b.get(o..o + 4)
            .map(|x| u32::from_le_bytes([x[0], x[1], x[2], x[3]]))
    };
    // Module-wide .nv.info: (attr, sym) -> value.
    let mut module_attrs: Vec<(u8, u32, u32)> = Vec::new();
    if let Some(s) = file.section_by_name(".nv.info") {
        for (attr, payload) in nv_info_records(s.data()?) {
            if let (Some(sym), Some(val)) = (rd32(payload, 0), rd32(payload, 4)) {
                module_attrs.push((attr, sym, val));
            }
        }
    }
    let mut out = Vec::new();
    for sec in file.sections() {
        let Ok(name) = sec.name() else { continue };
        let Some(fname) = name.strip_prefix(".text.") else {
            continue;
        };
        let Some(f) = builtin(fname) else { continue };
        let code = sec.data()?.to_vec();
        let sym_index = file
            .symbols()
            .find(|s| s.name() == Ok(fname))
            .map(|s| s.index().0 as u32);
        let module = |attr: u8| {
            sym_index.and_then(|si| {
                module_attrs
                    .iter()
                    .find(|(a, s, _)| *a == attr && *s == si)
                    .map(|t| t.2)
            })
        };
        let mut meta = KernelMeta {
            sm: Some(sm),
            regcount: module(0x2f),
            min_stack: module(0x12),
            ..KernelMeta::default()
        };
        if let Some(info) = file.section_by_name(&format!(".nv.info.{fname}")) {
            for (attr, p) in nv_info_records(info.data()?) {
                match attr {
                    0x0a => {
                        meta.param_base = p
                            .get(4..6)
                            .map(|b| u32::from(u16::from_le_bytes([b[0], b[1]])))
                    }
                    0x05 => {
                        if let (Some(x), Some(y), Some(z)) = (rd32(p, 0), rd32(p, 4), rd32(p, 8)) {
                            meta.max_threads = Some([x, y, z]);
                        }
                    }
                    _ => {}
                }
            }
        }
        meta.static_shared = Some(
            file.section_by_name(&format!(".nv.shared.{fname}"))
                .map_or(0, |s| s.size() as u32),
        );
        out.push(RefKernel {
            name: fname.to_string(),
            code,
            f,
            meta,
        });
    }
    Ok(out)
}

/// `(attr, payload)` of each `.nv.info` record (payload empty unless EIFMT_SVAL).
fn nv_info_records(d: &[u8]) -> Vec<(u8, &[u8])> {
    let mut v = Vec::new();
    let mut o = 0usize;
    while o + 4 <= d.len() {
        let fmt = d[o];
        let attr = d[o + 1];
        let val = usize::from(u16::from_le_bytes([d[o + 2], d[o + 3]]));
        let plen = if fmt == 4 { val } else { 0 };
        let Some(p) = d.get(o + 4..o + 4 + plen) else {
            break;
        };
        v.push((attr, p));
        o += 4 + plen;
    }
    v
}

/// Add a reference kernel keyed by its exact code bytes. Later registrations take precedence
/// over earlier ones and over the fixtures.
pub fn register(name: &str, code: Vec<u8>, f: RefKernelFn) {
    let k = RefKernel {
        name: name.to_string(),
        code,
        f,
        meta: KernelMeta::default(),
    };
    registry().write().insert(0, Arc::new(k));
}

/// All registered kernels (user registrations first, then the fixtures).
pub fn registered() -> Vec<Arc<RefKernel>> {
    registry().read().clone()
}

/// The registered kernel whose code bytes are at GPU VA `program`, if any. A candidate whose
/// code would run past the end of the mapping simply does not match.
pub fn find(mmu: &dyn Mmu, program: u64) -> Option<Arc<RefKernel>> {
    let reg = registry().read();
    let mut buf = Vec::new();
    for k in reg.iter() {
        if k.code.is_empty() {
            continue;
        }
        let Some(p) = mmu.translate(program, k.code.len() as u64, false) else {
            continue;
        };
        buf.resize(k.code.len(), 0);
        // SAFETY: translate vouched for code.len() bytes at p.
        unsafe { std::ptr::copy(p.0 as *const u8, buf.as_mut_ptr(), buf.len()) };
        if buf == k.code {
            return Some(k.clone());
        }
    }
    None
}

// ---- reference implementations (tests/fixtures/kernels.cu) ----

/// `blockIdx.x * blockDim.x + threadIdx.x` in 32-bit unsigned arithmetic.
fn gid(ctx: &LaunchCtx, b: [u32; 3], t: [u32; 3]) -> u32 {
    b[0].wrapping_mul(ctx.block_dim()[0]).wrapping_add(t[0])
}

fn elem(base: u64, i: u32, size: u64) -> u64 {
    base.wrapping_add(u64::from(i) * size)
}

/// The texture pools of the launch, or a fault naming the kernel that needed them.
fn pools(ctx: &LaunchCtx, kernel: &str) -> Result<super::texture::TexturePools, MmuFault> {
    ctx.textures.ok_or_else(|| MmuFault {
        address: 0,
        write: false,
        what: format!("{kernel}: texture fetch without SET_TEX_HEADER_POOL / SET_TEX_SAMPLER_POOL"),
    })
}

fn tex_fetch_1d(ctx: &LaunchCtx) -> Result<(), MmuFault> {
    let (tex, out, n) = (ctx.param_u64(0), ctx.param_u64(8), ctx.param_u32(16));
    let p = pools(ctx, "tex_fetch_1d")?;
    let mut m = GpuMem::new(ctx.mmu);
    let bdx = ctx.block_dim()[0];
    ctx.for_each_thread(|bi, ti| {
        let i = bi[0].wrapping_mul(bdx).wrapping_add(ti[0]);
        if i < n {
            let a = p.fetch_x(&mut m, tex, i64::from(n) - 1 - i64::from(i), 0)?;
            let b = p.fetch_x(&mut m, tex, i64::from(n) + i64::from(i), 0)?;
            m.write_f32(elem(out, i, 4), a)?;
            m.write_f32(elem(out, n.wrapping_add(i), 4), b)?;
        }
        Ok(())
    })
}

fn tex_fetch_2d(ctx: &LaunchCtx) -> Result<(), MmuFault> {
    let (tex, out, w, h) = (
        ctx.param_u64(0),
        ctx.param_u64(8),
        ctx.param_u32(16),
        ctx.param_u32(20),
    );
    let p = pools(ctx, "tex_fetch_2d")?;
    let mut m = GpuMem::new(ctx.mmu);
    let bdx = ctx.block_dim()[0];
    ctx.for_each_thread(|bi, ti| {
        let x = bi[0].wrapping_mul(bdx).wrapping_add(ti[0]);
        let y = bi[1];
        if x < w && y < h {
            let (xi, yi) = (i64::from(x), i64::from(y));
            let a = p.fetch_x(&mut m, tex, xi, yi)?;
            let b = p.fetch_x(&mut m, tex, xi - 3, yi + 2)?;
            m.write_f32(
                elem(out, y.wrapping_mul(w).wrapping_add(x), 4),
                2.0f32.mul_add(b, a),
            )?;
        }
        Ok(())
    })
}

fn empty_kernel(_: &LaunchCtx) -> Result<(), MmuFault> {
    Ok(())
}

fn vector_add(ctx: &LaunchCtx) -> Result<(), MmuFault> {
    let (a, b, c, n) = (
        ctx.param_u64(0),
        ctx.param_u64(8),
        ctx.param_u64(16),
        ctx.param_u32(24),
    );
    let mut m = GpuMem::new(ctx.mmu);
    let bdx = ctx.block_dim()[0];
    ctx.for_each_thread(|bi, ti| {
        let i = bi[0].wrapping_mul(bdx).wrapping_add(ti[0]);
        if i < n {
            let v = m.read_f32(elem(a, i, 4))? + m.read_f32(elem(b, i, 4))?;
            m.write_f32(elem(c, i, 4), v)?;
        }
        Ok(())
    })
}

fn saxpy(ctx: &LaunchCtx) -> Result<(), MmuFault> {
    let a = f32::from_bits(ctx.param_u32(0));
    let (x, y, n) = (ctx.param_u64(8), ctx.param_u64(16), ctx.param_u32(24));
    let mut m = GpuMem::new(ctx.mmu);
    let bdx = ctx.block_dim()[0];
    ctx.for_each_thread(|bi, ti| {
        let i = bi[0].wrapping_mul(bdx).wrapping_add(ti[0]);
        if i < n {
            let v = a.mul_add(m.read_f32(elem(x, i, 4))?, m.read_f32(elem(y, i, 4))?);
            m.write_f32(elem(y, i, 4), v)?;
        }
        Ok(())
    })
}

fn matmul_tiled(ctx: &LaunchCtx) -> Result<(), MmuFault> {
    const TILE: u32 = 16;
    let (pa, pb, pc, n) = (
        ctx.param_u64(0),
        ctx.param_u64(8),
        ctx.param_u64(16),
        ctx.param_u32(24),
    );
    let mut m = GpuMem::new(ctx.mmu);
    let ntiles = n.wrapping_add(TILE - 1) / TILE;
    let nthreads = (ctx.block[0] as usize) * (ctx.block[1] as usize) * (ctx.block[2] as usize);
    ctx.for_each_block(|bi| {
        let mut acc = vec![0f32; nthreads];
        let mut a_s = [0f32; 256];
        let mut b_s = [0f32; 256];
        // Shared-array slot of a thread; threads beyond the 16 x 16 tile store nowhere.
        let slot = |y: u32, x: u32| {
            if y < TILE && x < TILE {
                Some((y * TILE + x) as usize)
            } else {
                None
            }
        };
        for t in 0..ntiles {
            ctx.for_each_tid(|ti| {
                let row = bi[1].wrapping_mul(TILE).wrapping_add(ti[1]);
                let col = bi[0].wrapping_mul(TILE).wrapping_add(ti[0]);
                let ac = t.wrapping_mul(TILE).wrapping_add(ti[0]);
                let br = t.wrapping_mul(TILE).wrapping_add(ti[1]);
                let av = if row < n && ac < n {
                    m.read_f32(elem(pa, row.wrapping_mul(n).wrapping_add(ac), 4))?
                } else {
                    0.0
                };
                let bv = if br < n && col < n {
                    m.read_f32(elem(pb, br.wrapping_mul(n).wrapping_add(col), 4))?
                } else {
                    0.0
                };
                if let Some(s) = slot(ti[1], ti[0]) {
                    a_s[s] = av;
                    b_s[s] = bv;
                }
                Ok(())
            })?;
            let mut k_thread = 0usize;
            ctx.for_each_tid(|ti| {
                let mut v = acc[k_thread];
                for k in 0..TILE {
                    let x = slot(ti[1], k).map_or(0.0, |s| a_s[s]);
                    let y = slot(k, ti[0]).map_or(0.0, |s| b_s[s]);
                    v = x.mul_add(y, v);
                }
                acc[k_thread] = v;
                k_thread += 1;
                Ok(())
            })?;
        }
        let mut k_thread = 0usize;
        ctx.for_each_tid(|ti| {
            let row = bi[1].wrapping_mul(TILE).wrapping_add(ti[1]);
            let col = bi[0].wrapping_mul(TILE).wrapping_add(ti[0]);
            if row < n && col < n {
                m.write_f32(
                    elem(pc, row.wrapping_mul(n).wrapping_add(col), 4),
                    acc[k_thread],
                )?;
            }
            k_thread += 1;
            Ok(())
        })
    })
}

fn reduce_sum(ctx: &LaunchCtx) -> Result<(), MmuFault> {
    let (pin, pout, n) = (ctx.param_u64(0), ctx.param_u64(8), ctx.param_u32(16));
    let bdx = ctx.block_dim()[0];
    let threads = ctx.block[0] as usize;
    // Dynamic shared s[] follows the 1 KiB reserve; it must fit in the QMD's shared size.
    let need = 0x400u64 + 4 * threads as u64;
    if u64::from(ctx.shared_bytes) < need {
        return Err(MmuFault {
            address: need,
            write: true,
            what: format!(
                "reduce_sum: shared memory store beyond the CTA's allocation (needs {need:#x} bytes with \
                 blockDim.x {threads}, QMD SHARED_MEMORY_SIZE is {:#x})",
                ctx.shared_bytes
            ),
        });
    }
    let mut m = GpuMem::new(ctx.mmu);
    ctx.for_each_block(|bi| {
        let mut s = vec![0f32; threads];
        for (tid, slot) in s.iter_mut().enumerate() {
            let i = bi[0].wrapping_mul(bdx).wrapping_add(tid as u32);
            *slot = if i < n {
                m.read_f32(elem(pin, i, 4))?
            } else {
                0.0
            };
        }
        let mut stride = bdx / 2;
        while stride > 0 {
            for tid in 0..threads.min(stride as usize) {
                let other = s.get(tid + stride as usize).copied().unwrap_or(0.0);
                s[tid] += other;
            }
            stride >>= 1;
        }
        if threads > 0 {
            m.write_f32(elem(pout, bi[0], 4), s[0])?;
        }
        Ok(())
    })
}

fn increment(ctx: &LaunchCtx) -> Result<(), MmuFault> {
    let (p, by) = (ctx.param_u64(0), ctx.param_u64(8));
    let mut m = GpuMem::new(ctx.mmu);
    ctx.for_each_thread(|bi, ti| {
        if bi[0] == 0 && ti[0] == 0 {
            let v = m.read_u64(p)?;
            m.write_u64(p, v.wrapping_add(by))?;
        }
        Ok(())
    })
}

/// Spins until `*flag != 0` or `max_ns` have passed since the grid started (%globaltimer).
fn spin_until(ctx: &LaunchCtx) -> Result<(), MmuFault> {
    let (flag, max_ns) = (ctx.param_u64(0), ctx.param_u64(8));
    let v = GpuMem::new(ctx.mmu).read_u32(flag)?;
    if v == 0 && ctx.started.elapsed().as_nanos() < u128::from(max_ns) {
        ctx.keep_running();
    }
    Ok(())
}

/// Every block counts the elements of x[0..n) that differ from `expect`; the sum over all
/// blocks is added to *bad (the emulated GPU has no caches: only a wrong value counts).
fn count_stale(ctx: &LaunchCtx) -> Result<(), MmuFault> {
    let (x, n, expect, bad) = (
        ctx.param_u64(0),
        ctx.param_u32(8),
        ctx.param_u32(12),
        ctx.param_u64(16),
    );
    let mut m = GpuMem::new(ctx.mmu);
    let mut differ = 0u32;
    for i in 0..n {
        differ += u32::from(m.read_u32(elem(x, i, 4))? != expect);
    }
    let blocks = ctx.grid[0]
        .wrapping_mul(ctx.grid[1])
        .wrapping_mul(ctx.grid[2]);
    if differ > 0 {
        let old = m.read_u32(bad)?;
        m.write_u32(bad, old.wrapping_add(differ.wrapping_mul(blocks)))?;
    }
    Ok(())
}

fn fill_u32(ctx: &LaunchCtx) -> Result<(), MmuFault> {
    let (p, value, n) = (ctx.param_u64(0), ctx.param_u32(8), ctx.param_u32(12));
    let mut m = GpuMem::new(ctx.mmu);
    ctx.for_each_thread(|bi, ti| {
        let i = gid(ctx, bi, ti);
        if i < n {
            m.write_u32(elem(p, i, 4), value)?;
        }
        Ok(())
    })
}

/// The library's built-in SM copy kernel (src/builtin/copy.cu): dst[0..n) = src[0..n). Its
/// chunk loop covers the whole range for any grid, so the result does not depend on the
/// launch shape; bytes are copied in page-bounded pieces through a bounce buffer.
fn tg_copy(ctx: &LaunchCtx) -> Result<(), MmuFault> {
    let (dst, src, n) = (ctx.param_u64(0), ctx.param_u64(8), ctx.param_u64(16));
    let mut m = GpuMem::new(ctx.mmu);
    let mut buf = [0u8; 4096];
    let mut off = 0u64;
    while off < n {
        let (s, d) = (src.wrapping_add(off), dst.wrapping_add(off));
        let piece = (n - off).min(4096 - (s & 0xfff)).min(4096 - (d & 0xfff));
        let b = &mut buf[..piece as usize];
        let sp = m.ptr(s, piece, false)?;
        // SAFETY: ptr vouched for `piece` readable bytes at sp.
        unsafe { std::ptr::copy_nonoverlapping(sp, b.as_mut_ptr(), b.len()) };
        let dp = m.ptr(d, piece, true)?;
        // SAFETY: ptr vouched for `piece` writable bytes at dp.
        unsafe { std::ptr::copy_nonoverlapping(b.as_ptr(), dp, b.len()) };
        off += piece;
    }
    Ok(())
}

fn mixed_params(ctx: &LaunchCtx) -> Result<(), MmuFault> {
    // (signed char a @0, short b @2, int c @4, long long d @8, unsigned* out @16,
    //  Mixed s @24 {int i @24, float f @28, double d @32}, double e @40)
    let a = ctx.param_u32(0) as u8 as i8 as i32 as u32;
    let b = ctx.param_u32(2) as u16 as i16 as i32 as u32;
    let c = ctx.param_u32(4);
    let d = ctx.param_u64(8);
    let out = ctx.param_u64(16);
    let si = ctx.param_u32(24);
    let sf = ctx.param_u32(28);
    let sd = ctx.param_u64(32);
    let e = ctx.param_u64(40);
    let vals = [
        a,
        b,
        c,
        d as u32,
        (d >> 32) as u32,
        si,
        sf,
        sd as u32,
        (sd >> 32) as u32,
        e as u32,
        (e >> 32) as u32,
    ];
    let mut m = GpuMem::new(ctx.mmu);
    ctx.for_each_thread(|bi, ti| {
        if ti[0] == 0 && bi[0] == 0 {
            for (k, v) in vals.iter().enumerate() {
                m.write_u32(elem(out, k as u32, 4), *v)?;
            }
        }
        Ok(())
    })
}

fn uses_local(ctx: &LaunchCtx) -> Result<(), MmuFault> {
    let (idx, out, n) = (ctx.param_u64(0), ctx.param_u64(8), ctx.param_u32(16));
    let mut m = GpuMem::new(ctx.mmu);
    ctx.for_each_thread(|bi, ti| {
        let i = gid(ctx, bi, ti);
        if i < n {
            let k = m.read_u32(elem(idx, i, 4))? & 63;
            m.write_u32(elem(out, i, 4), k.wrapping_mul(3).wrapping_add(i))?;
        }
        Ok(())
    })
}

/// `big_params(unsigned* out, Big b)`: out at +0, the 2 KiB struct at +8.
fn big_params(ctx: &LaunchCtx) -> Result<(), MmuFault> {
    let out = ctx.param_u64(0);
    let mut m = GpuMem::new(ctx.mmu);
    ctx.for_each_thread(|bi, ti| {
        let i = gid(ctx, bi, ti);
        if i < 512 {
            m.write_u32(elem(out, i, 4), ctx.param_u32(8 + 4 * i as usize))?;
        }
        Ok(())
    })
}

fn bounded_128(ctx: &LaunchCtx) -> Result<(), MmuFault> {
    let out = ctx.param_u64(0);
    let mut m = GpuMem::new(ctx.mmu);
    ctx.for_each_thread(|bi, ti| m.write_u32(elem(out, gid(ctx, bi, ti), 4), ti[0]))
}
