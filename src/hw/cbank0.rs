//! Constant bank 0 image: the driver-reserved prefix (launch dims, windows, stack top, ...) and
//! the kernel parameters at the cubin's EIATTR_PARAM_CBANK offset (gpu-programming-interface.md
//! §6.8). No allocation: the caller passes the output buffer.

use crate::error::{Error, Result, Status};
use crate::hw::arch::ArchInfo;

/// Initial stack pointer every CUDA ABI kernel loads from `c[0x0][stack_top]`.
pub const STACK_TOP: u32 = 0x00FF_FDC0;
/// Reserved shared-memory base (sm_8x/sm_90: 1 KiB per CTA).
pub const RESERVED_SMEM_BASE: u32 = 0x400;
/// Largest constant bank (64 KiB).
pub const MAX_CBANK0_BYTES: usize = 0x1_0000;
/// Size granularity of a constant bank (QMD CONSTANT_BUFFER_SIZE_SHIFTED4).
pub const CBANK0_SIZE_ALIGN: usize = 16;
/// Recommended alignment of a cbank0 buffer's GPU address (V04/V05 need 64; 256 everywhere is
/// safe and keeps one cbank per cache-friendly slot).
pub const CBANK0_ALIGN: u64 = 256;
/// sm_90: where the GPU address of the parameter block goes (kernels that take a parameter's
/// address, `__grid_constant__`; SASS of `tma_tensor_2d`).
pub const SM90_PARAM_ADDR: usize = 0x198;
/// sm_90: where the GPU address of constant bank 0 itself goes. cuBLASLt's sm_90 kernels
/// (`nvjet_sm90_*`) read their TMA descriptors, which are parameters, at this address plus their
/// offset in the bank; NVIDIA's libcuda 580 writes it for every launch (read back through a
/// `__grid_constant__` parameter's address on an H200).
pub const SM90_CBANK_ADDR: usize = 0xC0;
/// sm_90 DSMEM slice stride value at 0x16C.
pub const SM90_DSMEM_STRIDE: u32 = 0x0100_0000;
/// 1.0f as IEEE-754 bits (sm_90 0x150..0x158).
pub const F32_ONE_BITS: u32 = 0x3F80_0000;

/// Per-launch values for [`build_cbank0`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cbank0Params<'p> {
    /// blockDim.
    pub block: [u32; 3],
    /// gridDim.
    pub grid: [u32; 3],
    /// Shared window base (same value as SET_SHADER_SHARED_MEMORY_WINDOW).
    pub shared_window: u64,
    /// Local window base (same value as SET_SHADER_LOCAL_MEMORY_WINDOW).
    pub local_window: u64,
    /// Dynamic shared-memory bytes of this launch.
    pub dynamic_smem_bytes: u32,
    /// sm_90 only (0x13C): aggregate shared bytes = `max(.nv.shared sh_size, 0x400) + dynamic`.
    pub aggr_smem_bytes: u32,
    /// Number of SMs of the device.
    pub sm_count: u32,
    /// sm_90: thread-block cluster shape of a cluster launch (`None`: not a cluster launch;
    /// the cluster words then describe clusters of one block).
    pub cluster: Option<[u32; 3]>,
    /// First parameter byte in cbank0 (from EIATTR_PARAM_CBANK).
    pub param_base: u32,
    /// Parameter bytes, already laid out at their KPARAM_INFO offsets.
    pub params: &'p [u8],
}

#[inline]
fn put32(out: &mut [u8], off: u32, v: u32) {
    let o = off as usize;
    if let Some(d) = out.get_mut(o..o + 4) {
        d.copy_from_slice(&v.to_le_bytes());
    }
}

#[inline]
fn put64(out: &mut [u8], off: u32, v: u64) {
    let o = off as usize;
    if let Some(d) = out.get_mut(o..o + 8) {
        d.copy_from_slice(&v.to_le_bytes());
    }
}

/// Size in bytes of a cbank0 with parameters at `param_base` of `param_bytes` bytes:
/// `round_up(param_base + param_bytes, 16)`, at most 64 KiB.
pub fn cbank0_size(param_base: u32, param_bytes: usize) -> Result<usize> {
    let end = (param_base as usize).checked_add(param_bytes);
    match end.and_then(|e| e.checked_add(CBANK0_SIZE_ALIGN - 1)) {
        Some(e) if e & !(CBANK0_SIZE_ALIGN - 1) <= MAX_CBANK0_BYTES => Ok(e & !(CBANK0_SIZE_ALIGN - 1)),
        _ => Err(Error::new(
            Status::InvalidLaunch,
            format!(
                "hw::cbank0::cbank0_size(param_base={param_base:#x}, param_bytes={param_bytes}): constant bank 0 \
                 would exceed {MAX_CBANK0_BYTES} bytes"
            ),
        )),
    }
}

/// Write constant bank 0 for one launch into `out` and return its size (rounded up to 16).
///
/// Layout per `arch.cbank0`: zeroes `[0, param_base)`, writes block dims, grid dims, shared window
/// (u64), local window (u64), stack top [`STACK_TOP`], dynamic shared bytes, SM count,
/// [`RESERVED_SMEM_BASE`], the sm_90 cluster block (aggregate smem, cluster flag, cluster dims,
/// their reciprocals, grid in clusters, DSMEM stride, blocks per cluster) and a zero memory descriptor; then copies
/// `p.params` at `p.param_base` and zero-pads to the returned size.
pub fn build_cbank0(arch: &ArchInfo, out: &mut [u8], p: &Cbank0Params<'_>) -> Result<usize> {
    let l = &arch.cbank0;
    if p.param_base < l.reserved_end || p.param_base % 4 != 0 {
        return Err(Error::new(
            Status::InvalidCubin,
            format!(
                "hw::cbank0::build_cbank0({}): param_base {:#x} must be 4-byte aligned and at least {:#x}",
                arch.name, p.param_base, l.reserved_end
            ),
        ));
    }
    let size = cbank0_size(p.param_base, p.params.len())?;
    if out.len() < size {
        return Err(Error::invalid(format!(
            "hw::cbank0::build_cbank0({}): output buffer of {} bytes is smaller than the cbank ({size} bytes)",
            arch.name,
            out.len()
        )));
    }
    let base = p.param_base as usize;
    let end = base + p.params.len();
    out[..base].fill(0);
    for i in 0..3u32 {
        put32(out, l.block_dim + 4 * i, p.block[i as usize]);
        put32(out, l.grid_dim + 4 * i, p.grid[i as usize]);
    }
    put64(out, l.shared_window, p.shared_window);
    put64(out, l.local_window, p.local_window);
    put32(out, l.stack_top, STACK_TOP);
    if let Some(o) = l.dyn_smem {
        put32(out, o, p.dynamic_smem_bytes);
    }
    put32(out, l.sm_count, p.sm_count);
    put32(out, l.reserved_smem_base, RESERVED_SMEM_BASE);
    if l.sm90_cluster {
        // Read by the SASS of cluster kernels (nvcc 13, sm_90): 0x140 == 1 selects the cluster
        // barrier, %clusterid = floor(%ctaid * c[0x150]), %cluster_ctaid = %ctaid - %clusterid
        // * c[0x144], %nclusterid = c[0x15C], %cluster_nctarank = c[0x188].
        let c = p.cluster.unwrap_or([1, 1, 1]);
        put32(out, 0x13C, p.aggr_smem_bytes);
        put32(out, 0x140, u32::from(p.cluster.is_some()));
        for (i, &d) in c.iter().enumerate() {
            let d = d.max(1);
            put32(out, 0x144 + 4 * i as u32, d);
            let recip = if d == 1 {
                F32_ONE_BITS
            } else {
                (1.0f32 / d as f32).to_bits()
            };
            put32(out, 0x150 + 4 * i as u32, recip);
            put32(out, 0x15C + 4 * i as u32, p.grid[i] / d);
        }
        put32(out, 0x16C, SM90_DSMEM_STRIDE);
        put32(out, 0x188, c.iter().map(|&d| d.max(1)).product());
    }
    if let Some(o) = l.mem_desc {
        put64(out, o, 0);
    }
    out[base..end].copy_from_slice(p.params);
    out[end..size].fill(0);
    Ok(size)
}

/// Write the address of a cooperative launch's grid workspace (CUDA's `grid_workspace`) where
/// `cooperative_groups::this_grid()` reads it: the driver "envreg" words 1 (address bits 63:32)
/// and 2 (bits 31:0): sm_90 and later `c[0x0][0x44]` / `c[0x0][0x48]`, sm_8x `c[0x0][0x8c]` /
/// `c[0x0][0x90]` (read from the SASS of a grid-sync kernel built by nvcc 13 for sm_90 and
/// sm_87). Other SM versions return `NotSupported`.
pub fn put_grid_workspace(arch: &ArchInfo, out: &mut [u8], workspace_va: u64) -> Result<()> {
    let (hi, lo) = match arch.sm_major {
        9.. => (0x44u32, 0x48u32),
        8 => (0x8cu32, 0x90u32),
        _ => {
            return Err(Error::new(
                Status::NotSupported,
                format!(
                    "cooperative launch on {} (sm_{}{}): where its kernels find the grid workspace is not known",
                    arch.name, arch.sm_major, arch.sm_minor
                ),
            ))
        }
    };
    if out.len() < lo as usize + 4 {
        return Err(Error::invalid(
            "constant bank 0 too small for the grid workspace",
        ));
    }
    put32(out, hi, (workspace_va >> 32) as u32);
    put32(out, lo, workspace_va as u32);
    Ok(())
}
