//! Modules (loaded cubins) and kernels.

use super::device::Device;
use crate::backend::{Allocation, MemFlags};
use crate::cubin;
use crate::error::{Error, Result, Status};
use std::sync::Arc;

pub(crate) struct ModuleInner {
    pub dev: Device,
    pub image: Option<Allocation>,
    pub cubin: cubin::Module,
    /// `__managed__` variables the loader placed outside the image: (image offset, place).
    pub placed: Vec<(u64, ManagedPlace)>,
}

/// A `__managed__` variable of a cubin being loaded by [`Device::load_module_placing`].
#[derive(Debug, Clone, Copy)]
pub struct ManagedVariable<'a> {
    /// The variable's name.
    pub name: &'a str,
    /// Its size in bytes.
    pub size: u64,
    /// Its initial bytes (`size` of them; zeros for a variable without an initialiser).
    pub init: &'a [u8],
}

/// The callback of [`Device::load_module_placing`]: where to put a `__managed__` variable.
pub type PlaceManaged<'a> = dyn FnMut(&ManagedVariable) -> Result<ManagedPlace> + 'a;

/// Where a loader put a `__managed__` variable: the GPU address the module's code reaches it
/// at, and the CPU address of the same bytes ([`Module::global`] answers these).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ManagedPlace {
    /// GPU virtual address.
    pub gpu_va: u64,
    /// CPU address of the same memory.
    pub cpu: usize,
}

impl Drop for ModuleInner {
    fn drop(&mut self) {
        if let Some(a) = self.image.take() {
            self.dev.free_when_idle(a);
        }
    }
}

/// A loaded cubin: its code and data live in GPU memory until the module (and every kernel
/// taken from it) is dropped and queued work no longer uses them.
#[derive(Clone)]
pub struct Module {
    pub(crate) inner: Arc<ModuleInner>,
}

/// One kernel parameter's place in the parameter block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParamAttr {
    /// Offset from the start of the parameter block, bytes.
    pub offset: u32,
    /// Size, bytes.
    pub size: u32,
}

/// What a kernel needs and allows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelAttributes {
    /// The kernel's name.
    pub name: String,
    /// Parameters in declaration order.
    pub params: Vec<ParamAttr>,
    /// Total bytes of the parameter block.
    pub param_bytes: u32,
    /// Registers per thread.
    pub registers: u32,
    /// Static shared memory the kernel declares, bytes (excluding the 1 KiB the hardware reserves).
    pub static_shared_bytes: u32,
    /// Local memory (stack) per thread, bytes.
    pub local_bytes_per_thread: u32,
    /// Largest block (threads) a launch may use.
    pub max_threads_per_block: u32,
    /// Largest dynamic shared memory a launch may request, bytes.
    pub max_dynamic_shared_bytes: u32,
}

/// A kernel of a module. Keeps its module alive.
#[derive(Clone)]
pub struct Kernel {
    pub(crate) module: Arc<ModuleInner>,
    pub(crate) index: usize,
    pub(crate) attrs: Arc<KernelAttributes>,
    /// GPU address of the kernel's first instruction.
    pub(crate) program_va: u64,
    /// The kernel's QMD with everything but the launch shape, shared memory and cbank 0 filled in.
    pub(crate) qmd: Arc<crate::hw::qmd::QmdTemplate>,
    /// Per-thread local memory the kernel's own code needs (QMD units: stack + reserve).
    pub(crate) own_lm: u32,
    /// Per-thread local memory in the QMD template (`own_lm` or the device stack limit's).
    pub(crate) qmd_lm: u32,
    /// Unique (never reused) id of this kernel object, for the queues' slot caches.
    pub(crate) id: u64,
    /// Launches may use non-portable cluster sizes (up to 16 blocks), shared by the clones.
    pub(crate) non_portable_clusters: Arc<std::sync::atomic::AtomicBool>,
}

static NEXT_KERNEL_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

impl Module {
    pub(crate) fn load(
        dev: &Device,
        bytes: &[u8],
        mut place: Option<&mut PlaceManaged>,
    ) -> Result<Module> {
        let info = dev.info();
        let sm = (info.sm_major, info.sm_minor);
        let cub = cubin::Module::parse(&Self::device_code(bytes, sm)?, sm)?;
        // Device-side printf / assert: the calls go to the device's built-in syscall module.
        let imports = cub.imports();
        let sys = if imports.is_empty() {
            None
        } else {
            Some(dev.syscalls().map_err(|e| {
                Error::new(
                    e.status,
                    format!(
                        "the module calls {}: {}",
                        imports
                            .iter()
                            .map(|s| s.symbol())
                            .collect::<Vec<_>>()
                            .join(" and "),
                        e.message
                    ),
                )
            })?)
        };
        if let Some(s) = &sys {
            if imports
                .iter()
                .any(|i| matches!(i, cubin::Syscall::Malloc | cubin::Syscall::Free))
            {
                dev.ensure_heap(s)?;
            }
        }
        // `__managed__` variables: where the caller puts them (else they stay in the image).
        let mut placed = Vec::new();
        if let Some(place) = place.as_mut() {
            for g in cub.global_symbols().iter().filter(|g| g.managed) {
                let init = cub
                    .image()
                    .get(g.offset as usize..(g.offset + g.size) as usize)
                    .ok_or_else(|| {
                        Error::new(Status::Internal, "managed variable outside the image")
                    })?;
                let at = place(&ManagedVariable {
                    name: &g.name,
                    size: g.size,
                    init,
                })?;
                placed.push((g.offset, at));
            }
        }
        let image_len = cub.image().len() as u64;
        let alloc = dev.backend().alloc(image_len.max(4096), code_memory(dev))?;
        let mut image = cub.image().to_vec();
        let syscall = |s| sys.as_ref().map(|x| x.address(s));
        let managed = |off: u64| {
            placed
                .iter()
                .find(|(o, _)| *o == off)
                .map(|(_, p)| p.gpu_va)
        };
        if let Err(e) = cub.relocate_placing(&mut image, alloc.gpu_va, &syscall, &managed) {
            let _ = dev.backend().free(&alloc);
            return Err(e);
        }
        if imports.contains(&cubin::Syscall::Vprintf) {
            dev.inner
                .printf_active
                .store(true, std::sync::atomic::Ordering::Relaxed);
        }
        // SAFETY: the allocation is at least image_len bytes and CPU-mapped.
        unsafe { std::ptr::copy_nonoverlapping(image.as_ptr(), alloc.cpu, image.len()) };
        // x86-64: `mfence` drains the write-combining buffers now. aarch64: `dmb ish` orders
        // only for the other CPUs; the GPU reads this memory only for work submitted after it,
        // and that submit's `dsb st` (crate::hw::barrier::before_gp_put, cumulative) makes these
        // stores visible to the GPU first.
        std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
        dev.inner
            .code_generation
            .fetch_add(1, std::sync::atomic::Ordering::AcqRel);
        Ok(Module {
            inner: Arc::new(ModuleInner {
                dev: dev.clone(),
                image: Some(alloc),
                cubin: cub,
                placed,
            }),
        })
    }

    /// The cubin to load for `bytes`, which may be what `cuModuleLoadData` takes: a cubin; a
    /// fatbin, or a host object / shared library holding one (the SASS that fits the device,
    /// else its PTX compiled for the device); or PTX text (compiled for the device with the PTX
    /// compiler of the NVIDIA driver, or nvJitLink).
    fn device_code(bytes: &[u8], sm: (u32, u32)) -> Result<std::borrow::Cow<'_, [u8]>> {
        use crate::cubin::fatbin::{self, InputKind, Selected};
        use std::borrow::Cow;
        match fatbin::kind_of(bytes) {
            InputKind::Cubin | InputKind::Unknown => Ok(Cow::Borrowed(bytes)),
            InputKind::Fatbin | InputKind::HostElf => match fatbin::select(bytes, sm)? {
                Selected::Cubin(c, _) => Ok(Cow::Owned(c)),
                Selected::Ptx(text, _) => {
                    Ok(Cow::Owned(crate::ptxjit::compile_ptx(&text, sm, &[])?))
                }
            },
            InputKind::Ptx => {
                let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
                let text = std::str::from_utf8(&bytes[..end])
                    .map_err(|_| Error::new(Status::InvalidCubin, "PTX text is not valid UTF-8"))?;
                Ok(Cow::Owned(crate::ptxjit::compile_ptx(text, sm, &[])?))
            }
        }
    }

    /// Names of the kernels in the module.
    pub fn kernel_names(&self) -> Vec<String> {
        self.inner
            .cubin
            .kernels()
            .iter()
            .map(|k| k.name.clone())
            .collect()
    }

    /// A `__device__` or `__constant__` variable of the module (like `cuModuleGetGlobal`): its
    /// GPU address, a CPU pointer to the same memory, and its size in bytes. The memory is
    /// shared with the GPU: write it before launches that read it, read it after they finish.
    pub fn global(&self, name: &str) -> Result<(u64, *mut u8, u64)> {
        let g = self.inner.cubin.global_symbol(name).ok_or_else(|| {
            let names: Vec<&str> = self
                .inner
                .cubin
                .global_symbols()
                .iter()
                .map(|g| g.name.as_str())
                .collect();
            Error::new(
                Status::NotFound,
                format!(
                    "tg_module_get_global: no __device__ or __constant__ variable named \"{name}\" in the module; it has: {}",
                    if names.is_empty() { "none".to_string() } else { names.join(", ") }
                ),
            )
        })?;
        let a = self
            .inner
            .image
            .as_ref()
            .ok_or_else(|| Error::new(Status::Internal, "module has no image"))?;
        if let Some((_, p)) = self.inner.placed.iter().find(|(o, _)| *o == g.offset) {
            return Ok((p.gpu_va, p.cpu as *mut u8, g.size));
        }
        // SAFETY: the symbol lies inside the image (checked at parse), which the allocation holds.
        let cpu = unsafe { a.cpu.add(g.offset as usize) };
        // The caller is about to change data the GPU may hold in its constant and data caches:
        // every queue drops them before its next launch.
        self.inner
            .dev
            .inner
            .code_generation
            .fetch_add(1, std::sync::atomic::Ordering::AcqRel);
        Ok((a.gpu_va + g.offset, cpu, g.size))
    }

    /// Names of the module's `__device__` and `__constant__` variables.
    pub fn global_names(&self) -> Vec<String> {
        self.inner
            .cubin
            .global_symbols()
            .iter()
            .map(|g| g.name.clone())
            .collect()
    }

    /// Look up a kernel by name.
    pub fn kernel(&self, name: &str) -> Result<Kernel> {
        let kernels = self.inner.cubin.kernels();
        let index = kernels.iter().position(|k| k.name == name).ok_or_else(|| {
            Error::new(
                Status::NotFound,
                format!(
                    "kernel \"{name}\" is not in the module; it has: {}",
                    kernels
                        .iter()
                        .map(|k| k.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )
        })?;
        let k = &kernels[index];
        if let Some(why) = &k.refused {
            return Err(Error::new(
                Status::NotSupported,
                format!("tg_module_get_kernel: {why}"),
            ));
        }
        let dev = &self.inner.dev;
        let base = self.inner.image.as_ref().map(|a| a.gpu_va).unwrap_or(0);
        // Every kernel gets the device's stack limit (libcuda: CU_LIMIT_STACK_SIZE, 1 KiB by
        // default) or the stack its code needs, whichever is larger: calls whose depth ptxas
        // cannot bound (recursion, indirect calls) report a minimum of 0.
        // A kernel of a module that calls syscalls also needs their stack frame, and at least
        // their registers (ptxas gives every caller 24, as many as they use).
        let sys = if self.inner.cubin.imports().is_empty() {
            None
        } else {
            dev.inner.syscalls.lock().clone()
        };
        let (sys_frame, sys_regs) = sys.map(|s| (s.frame_bytes, s.registers)).unwrap_or((0, 0));
        let own_lm = crate::hw::local_mem::lm_per_thread(
            k.local_bytes_per_thread.saturating_add(sys_frame),
        )?;
        let lm_per_thread = own_lm.max(dev.stack_lm());
        dev.ensure_local_memory(lm_per_thread)?;
        let max_smem = max_shared_per_block(dev.arch());
        let static_need = static_shared_need(k, dev.info().sm_major);
        let attrs = KernelAttributes {
            name: k.name.clone(),
            params: k
                .params
                .iter()
                .map(|p| ParamAttr {
                    offset: p.offset,
                    size: p.size,
                })
                .collect(),
            param_bytes: k.param_bytes,
            registers: k.register_count,
            // sm_90 cubins count the 1 KiB the hardware reserves in .nv.shared; report the
            // kernel's own bytes on every architecture.
            static_shared_bytes: if dev.info().sm_major >= 9 {
                k.static_shared_bytes
                    .saturating_sub(cubin::SHARED_RESERVED_BYTES)
            } else {
                k.static_shared_bytes
            },
            local_bytes_per_thread: k.local_bytes_per_thread,
            max_threads_per_block: max_threads(k),
            max_dynamic_shared_bytes: max_smem.saturating_sub(static_need),
        };
        let cb = |o: Option<(u64, u64)>| o.map(|(off, size)| (base + off, size as u32));
        let arch = dev.arch();
        let mut desc = crate::hw::qmd::LaunchDesc {
            program_va: base + k.code_offset,
            program_prefetch_bytes: k.code_size.min(u32::MAX as u64) as u32,
            register_count: launch_registers(k).max(sys_regs),
            barrier_count: k.barrier_count,
            local_memory_per_thread: lm_per_thread,
            sass_version: arch.sass_version,
            ..Default::default()
        };
        desc.cbanks[0] = Some((0, 16));
        desc.cbanks[2] = cb(k.cbank2);
        desc.cbanks[3] = cb(self.inner.cubin.cbank3());
        desc.cbanks[4] = cb(self.inner.cubin.cbank4());
        let qmd = Arc::new(crate::hw::qmd::QmdTemplate::new(arch.qmd_version, &desc)?);
        Ok(Kernel {
            module: self.inner.clone(),
            index,
            attrs: Arc::new(attrs),
            program_va: base + k.code_offset,
            qmd,
            own_lm,
            qmd_lm: lm_per_thread,
            id: NEXT_KERNEL_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            non_portable_clusters: Arc::new(std::sync::atomic::AtomicBool::new(false)),
        })
    }
}

/// Where a module's image (code, constant banks, globals) lives. Desktop GPUs: video memory,
/// written once through the CPU mapping, so instruction and constant fetches stay on the GPU
/// (in host memory every fetch that misses the caches crosses PCIe);
/// `TEGRAGPU_CODE_MEMORY=host` puts it in host memory instead. Jetson: CPU-cached memory (one
/// memory for both).
pub(crate) fn code_memory(dev: &Device) -> MemFlags {
    let host = dev.backend_kind() != crate::core::BackendKind::Rm
        || matches!(std::env::var("TEGRAGPU_CODE_MEMORY").as_deref(), Ok("host"));
    MemFlags {
        cpu_cached: host,
        write_combined: !host,
        zeroed: true,
    }
}

/// Registers per SM and the most one block may use (the same on every supported SM).
const REGS_PER_SM: u32 = 65536;
/// Register sub-partitions per SM: each warp takes its registers from one of them.
const REG_SUB_PARTITIONS: u32 = 4;
/// Named barriers per SM, shared by the blocks it runs (measured on sm_90; assumed for sm_8x).
const NAMED_BARRIERS_PER_SM: u32 = 64;

/// Registers one warp of `k` is allocated: registers per thread × 32, rounded up to the
/// allocation unit of 256.
fn regs_per_warp(k: &cubin::KernelInfo) -> u32 {
    (launch_registers(k).max(1) * 32).div_ceil(256) * 256
}

/// Registers each thread of `k` is given: its own, or more if a function it calls (device-linked
/// code) uses more.
pub(crate) fn launch_registers(k: &cubin::KernelInfo) -> u32 {
    k.register_count.max(k.callee_register_count)
}

/// Whether a block of `warps` warps of `k` passes the hardware's per-block register check,
/// which counts the block's warps rounded up to a multiple of the 4 sub-partitions (CUDA's
/// occupancy calculator, `cuda_occupancy.h`).
fn block_fits_registers(k: &cubin::KernelInfo, warps: u32) -> bool {
    let per_warp = regs_per_warp(k);
    per_warp * warps.next_multiple_of(REG_SUB_PARTITIONS) <= REGS_PER_SM
}

/// Largest block for a kernel: hardware 1024, the kernel's `__launch_bounds__`, and registers
/// (64 Ki per block, allocated per warp in units of 256, checked with the block's warps rounded
/// up to a multiple of 4: 88 registers per thread allow 640 threads, not 736). libcuda's
/// `CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK`.
pub fn max_threads(k: &cubin::KernelInfo) -> u32 {
    let mut m = 1024u32;
    if let Some([x, y, z]) = k.max_threads {
        m = m.min(x.saturating_mul(y).saturating_mul(z).max(1));
    }
    if let Some([x, y, z]) = k.reqntid {
        m = m.min(x.saturating_mul(y).saturating_mul(z).max(1));
    }
    let warps = REGS_PER_SM / regs_per_warp(k) / REG_SUB_PARTITIONS * REG_SUB_PARTITIONS;
    m.min(warps * 32).max(32.min(m))
}

impl Kernel {
    /// Most blocks of `block_threads` threads with `dynamic_shared_bytes` of dynamic shared
    /// memory that one SM runs at once (like `cuOccupancyMaxActiveBlocksPerMultiprocessor`):
    /// the smallest of the limits set by warps, registers, shared memory and the SM's block
    /// limit. 0 when such a block cannot be launched at all.
    pub fn max_active_blocks(&self, block_threads: u32, dynamic_shared_bytes: u32) -> Result<u32> {
        let dev = self.device();
        let info = dev.info();
        let a = &self.attrs;
        if block_threads == 0 || block_threads > a.max_threads_per_block {
            return Err(Error::new(
                Status::InvalidArgument,
                format!(
                    "tg_kernel_max_active_blocks: block of {block_threads} threads for kernel \"{}\", which allows 1..={}",
                    a.name, a.max_threads_per_block
                ),
            ));
        }
        if dynamic_shared_bytes > a.max_dynamic_shared_bytes {
            return Ok(0);
        }
        Ok(occupancy(
            self.info(),
            block_threads,
            dynamic_shared_bytes,
            (info.sm_major, info.sm_minor),
            info.warps_per_sm,
            max_shared_per_block(dev.arch()),
        ))
    }

    /// [`Kernel::max_active_blocks`] for an SM whose shared memory is configured by a preferred
    /// carveout of `carveout_percent` % of the largest (`None`: no preference, the largest
    /// carveout), as [`carveout_shared_per_sm`] chooses it. libcuda's
    /// `cuOccupancyMaxActiveBlocksPerMultiprocessor` for a function with
    /// `CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT` set, or a cache configuration (prefer
    /// L1: 0 %, equal: 50 %, prefer shared: 100 %).
    pub fn max_active_blocks_with_carveout(
        &self,
        block_threads: u32,
        dynamic_shared_bytes: u32,
        carveout_percent: Option<u32>,
    ) -> Result<u32> {
        let Some(pct) = carveout_percent else {
            return self.max_active_blocks(block_threads, dynamic_shared_bytes);
        };
        if pct > 100 {
            return Err(Error::invalid(format!(
                "max_active_blocks_with_carveout: carveout {pct} % for kernel \"{}\" (0..=100)",
                self.attrs.name
            )));
        }
        // The limits other than shared memory, and whether such a block launches at all.
        let n = self.max_active_blocks(block_threads, dynamic_shared_bytes)?;
        if n == 0 {
            return Ok(0);
        }
        let info = self.device().info();
        let block = cubin::shared_memory_total(self.info(), dynamic_shared_bytes, info.sm_major);
        let smem =
            carveout_shared_per_sm(self.device().arch().smem_carveouts_kib, Some(pct), block);
        Ok(n.min(smem / block.max(1)))
    }

    /// GPU address of the kernel's first instruction.
    pub fn program_va(&self) -> u64 {
        self.program_va
    }

    pub fn attributes(&self) -> &KernelAttributes {
        &self.attrs
    }

    /// Bytes of user constant data (`__constant__`, constant bank 3) of the kernel's module,
    /// which the kernel may read: what `cuFuncGetAttribute(CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES)`
    /// reports.
    pub fn constant_bytes(&self) -> u64 {
        self.module.cubin.cbank3().map_or(0, |(_, size)| size)
    }

    pub(crate) fn info(&self) -> &cubin::KernelInfo {
        &self.module.cubin.kernels()[self.index]
    }

    /// The kernel's compile-time thread-block cluster shape (`__cluster_dims__`), if any.
    pub fn cluster_dims(&self) -> Option<[u32; 3]> {
        self.info().cluster_dims
    }

    /// The most blocks a cluster of the kernel may have (`.maxclusterrank`), if it says.
    pub fn max_cluster_rank(&self) -> Option<u32> {
        self.info().max_cluster_rank
    }

    /// Let launches of this kernel (and of its clones) use clusters of up to 16 blocks, the
    /// non-portable sizes Hopper runs (CUDA's `CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED`);
    /// by default a cluster has at most 8 blocks, the portable size. A queue checks a launch
    /// shape once: turning this off does not stop a shape it already launched.
    pub fn set_non_portable_clusters(&self, on: bool) {
        self.non_portable_clusters
            .store(on, std::sync::atomic::Ordering::Relaxed);
    }

    /// Whether [`Kernel::set_non_portable_clusters`] allowed non-portable cluster sizes.
    pub fn non_portable_clusters(&self) -> bool {
        self.non_portable_clusters
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The most blocks one cluster of a launch of this kernel may have: 8 (16 with
    /// non-portable sizes allowed), at most the kernel's `.maxclusterrank`.
    pub fn max_cluster_blocks(&self) -> u32 {
        let limit = if self.non_portable_clusters() { 16 } else { 8 };
        self.info().max_cluster_rank.map_or(limit, |r| r.min(limit))
    }

    pub fn device(&self) -> &Device {
        &self.module.dev
    }
}

/// Largest shared memory one block may occupy on an SM, the 1 KiB the hardware reserves per CTA
/// included: the largest carveout (sm_90: 228 KiB; libcuda's opt-in limit is this less 1 KiB).
pub(crate) fn max_shared_per_block(arch: &crate::hw::arch::ArchInfo) -> u32 {
    let kib = arch.smem_carveouts_kib.iter().copied().max().unwrap_or(48);
    kib * 1024
}

/// Shared memory of one SM that occupancy counts with under a preferred carveout of `percent` %
/// of the largest of `carveouts_kib` (the SM's supported configurations, ascending): that share,
/// rounded up to a supported configuration; where it holds less than one block of
/// `block_bytes` (the 1 KiB reserve included), the smallest configuration that holds one. `None`:
/// no preference, the largest configuration. (CUDA's occupancy calculator: a kernel without
/// shared memory still takes the 1 KiB reserve per block, so "prefer L1" on sm_90 configures
/// 8 KiB and allows 8 blocks per SM.)
pub fn carveout_shared_per_sm(
    carveouts_kib: &[u32],
    percent: Option<u32>,
    block_bytes: u32,
) -> u32 {
    let largest = carveouts_kib.iter().copied().max().unwrap_or(48) * 1024;
    let Some(pct) = percent else {
        return largest;
    };
    let round_up = |bytes: u64| -> u32 {
        carveouts_kib
            .iter()
            .map(|&k| k * 1024)
            .find(|&b| u64::from(b) >= bytes)
            .unwrap_or(largest)
    };
    let preferred = round_up(u64::from(pct.min(100)) * u64::from(largest) / 100);
    if preferred >= block_bytes {
        preferred
    } else {
        round_up(u64::from(block_bytes))
    }
}

/// Shared memory a block of `k` occupies before any dynamic shared memory: its static shared
/// memory and the 1 KiB reserve (which sm_90+ cubins already count in `.nv.shared`).
pub fn static_shared_need(k: &cubin::KernelInfo, sm_major: u32) -> u32 {
    if sm_major >= 9 {
        k.static_shared_bytes.max(k.shared_reserved)
    } else {
        k.static_shared_bytes.saturating_add(k.shared_reserved)
    }
}

/// Blocks of `k` with `block_threads` threads and `dynamic_shared_bytes` that one SM of version
/// `sm` with `warps_per_sm` warps and `smem_per_sm` bytes of shared memory (the largest
/// carveout) runs at once: the smallest of the limits set by warps, registers (64 Ki per SM in 4
/// sub-partitions, allocated per warp in units of 256), shared memory, named barriers (64 per
/// SM) and the SM's block limit.
/// libcuda's `cuOccupancyMaxActiveBlocksPerMultiprocessor`.
pub fn occupancy(
    k: &cubin::KernelInfo,
    block_threads: u32,
    dynamic_shared_bytes: u32,
    sm: (u32, u32),
    warps_per_sm: u32,
    smem_per_sm: u32,
) -> u32 {
    let warps = block_threads.div_ceil(32).max(1);
    let by_warps = warps_per_sm / warps;
    // Each sub-partition holds the warps its quarter of the register file fits.
    let by_regs = if block_fits_registers(k, warps) {
        (REGS_PER_SM / REG_SUB_PARTITIONS / regs_per_warp(k)) * REG_SUB_PARTITIONS / warps
    } else {
        0
    };
    let smem = cubin::shared_memory_total(k, dynamic_shared_bytes, sm.0);
    let by_smem = smem_per_sm / smem.max(1);
    let by_hw = max_blocks_per_sm(sm.0, sm.1);
    // An SM holds 64 named barriers: a block that declares n of them leaves room for 64 / n
    // blocks (libcuda's figures on the H100 for 3, 5, 8 and 16 barriers: 21, 12, 8, 4).
    let by_barriers = NAMED_BARRIERS_PER_SM
        .checked_div(k.barrier_count)
        .unwrap_or(u32::MAX);
    by_warps
        .min(by_regs)
        .min(by_smem)
        .min(by_hw)
        .min(by_barriers)
}

/// Most CTAs one SM holds at once, by SM version (CUDA's per-architecture limit).
pub fn max_blocks_per_sm(sm_major: u32, sm_minor: u32) -> u32 {
    match (sm_major, sm_minor) {
        (8, 6) | (8, 7) => 16,
        (8, 9) | (12, _) => 24,
        _ => 32,
    }
}
