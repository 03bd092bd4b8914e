//! CUDA cubin (ELF) loading.
//!
//! [`Module::parse`] validates a cubin for a device's SM version and extracts everything a
//! launcher needs (gpu-programming-interface.md §6):
//! - a zero-based **memory image** ([`Module::image`]) holding every section the GPU reads
//!   (`.text.*`, `.nv.constant2.*`, `.nv.constant3`, `.nv.constant4`, `.nv.global.init`, the
//!   zero-filled NOBITS `.nv.global`), each at 128-byte alignment (or its own, if larger),
//!   followed by
//!   [`IMAGE_SLACK`] bytes of zeros for the instruction prefetcher;
//! - the **relocations** of that image, applied for a given GPU VA by [`Module::relocate`] or
//!   [`Module::image_at`];
//! - per-kernel [`KernelInfo`]: code location, registers, barriers, shared/local memory,
//!   block-size limits, the parameter layout in constant bank 0 and the kernel's cbank 2;
//! - module-wide constant banks 3 and 4 ([`Module::cbank3`], [`Module::cbank4`]).
//!
//! Every offset and length read from the file is bounds-checked: malformed input yields
//! [`Status::InvalidCubin`] (or [`Status::NotSupported`] for valid features libtegragpu does not
//! implement), never a panic.

mod elf;
pub mod fatbin;
pub mod info;
mod kernel_info;
mod parse;
mod relocations;
pub mod sass;

use crate::error::{Error, Result, Status};
use relocations::Reloc;

/// Alignment of every section in the memory image (bytes). Load the image at a GPU VA that is
/// a multiple of [`Module::base_alignment`] (which is at least this).
pub const IMAGE_ALIGN: u64 = 128;
/// Zero bytes appended after the last section: the instruction prefetcher reads past the end of
/// the code (§6.6).
pub const IMAGE_SLACK: u64 = 4096;
/// Shared memory the hardware reserves per CTA on sm_8x/sm_90 (§6.9).
pub const SHARED_RESERVED_BYTES: u32 = 0x400;
/// Granularity of the shared memory a CTA is given (bytes): QMD SHARED_MEMORY_SIZE is a
/// multiple of it.
pub const SHARED_ALIGN: u64 = 128;
/// Largest constant bank (bytes).
pub const MAX_CBANK_BYTES: u64 = 64 * 1024;
/// Largest memory image accepted (bytes), including `.nv.global`. Guards against absurd NOBITS
/// sizes in malformed files.
pub const MAX_IMAGE_BYTES: u64 = 1 << 30;

/// `R_CUDA_32`: 32-bit absolute address.
pub const R_CUDA_32: u32 = 1;
/// `R_CUDA_64`: 64-bit absolute address (cbank-4 tables).
pub const R_CUDA_64: u32 = 2;
/// `R_CUDA_G64`: 64-bit global address (`.nv.global.init` pointer initialisers).
pub const R_CUDA_G64: u32 = 4;
/// `R_CUDA_ABS32_LO_32`: low 32 bits into instruction bits 63:32.
pub const R_CUDA_ABS32_LO_32: u32 = 0x38;
/// `R_CUDA_ABS32_HI_32`: high 32 bits into instruction bits 63:32.
pub const R_CUDA_ABS32_HI_32: u32 = 0x39;
/// `R_CUDA_ABS47_34` (0x3a, sm_8x `.rel.text`): the target of an absolute call
/// (`CALL.ABS.NOINC`, `-G` builds and device-linked `-rdc` calls), address bits 46:0 in
/// instruction bits 80:34. The layout is the one the relocation's name gives, of the same
/// family as sm_90's ([`R_CUDA_ABS_CALL_SM90`], checked on the H200); no sm_8x GPU has run it.
pub const R_CUDA_ABS_CALL_SM8X: u32 = 0x3a;
/// `R_CUDA_ABS55_16_34` (sm_90 and later `.rela.text`): the target of an absolute call, address
/// bits 9:2 in instruction bits 23:16 and bits 56:10 in instruction bits 80:34. Checked on the
/// H200: calls to the built-in `malloc` and `free` of device-linked code reach them wherever
/// they lie.
pub const R_CUDA_ABS_CALL_SM90: u32 = 0x4b;
/// `R_CUDA_FUNC_DESC32_LO_32` (function-pointer descriptor; not supported).
pub const R_CUDA_FUNC_DESC32_LO_32: u32 = 0x3e;
/// `R_CUDA_FUNC_DESC32_HI_32` (function-pointer descriptor; not supported).
pub const R_CUDA_FUNC_DESC32_HI_32: u32 = 0x3f;

/// One kernel parameter, from `EIATTR_KPARAM_INFO`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParamInfo {
    /// Position in the kernel signature, from 0.
    pub ordinal: u32,
    /// Byte offset from [`KernelInfo::param_base`] in constant bank 0.
    pub offset: u32,
    /// Size in bytes.
    pub size: u32,
}

/// Everything a launcher needs to know about one kernel (`STO_CUDA_ENTRY` function).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelInfo {
    /// Symbol name (unmangled for `extern "C"` kernels).
    pub name: String,
    /// Offset of the first instruction in [`Module::image`].
    pub code_offset: u64,
    /// Size of the kernel's code in bytes (symbol size).
    pub code_size: u64,
    /// Registers per thread (`EIATTR_REGCOUNT`) → QMD REGISTER_COUNT.
    pub register_count: u32,
    /// Named barriers used (`.text.<fn>` `sh_flags` bits 26:20) → QMD BARRIER_COUNT.
    pub barrier_count: u32,
    /// `.nv.shared.<fn>` section size. On sm_90 and later it already includes the reserved
    /// 1 KiB; use [`shared_memory_total`] rather than this field directly.
    pub static_shared_bytes: u32,
    /// Shared memory the hardware reserves per CTA ([`SHARED_RESERVED_BYTES`]).
    pub shared_reserved: u32,
    /// Stack bytes per thread including callees (`EIATTR_MIN_STACK_SIZE`; 0 if absent).
    pub local_bytes_per_thread: u32,
    /// The kernel's own frame bytes (`EIATTR_FRAME_SIZE`; 0 if absent).
    pub frame_size: u32,
    /// Largest block `[x, y, z]` (`EIATTR_MAX_THREADS`, from `__launch_bounds__`/`.maxntid`).
    pub max_threads: Option<[u32; 3]>,
    /// Required exact block `[x, y, z]` (`EIATTR_REQNTID`).
    pub reqntid: Option<[u32; 3]>,
    /// Compile-time thread-block cluster shape (`__cluster_dims__`, `EIATTR_CTA_PER_CLUSTER`):
    /// every launch uses it.
    pub cluster_dims: Option<[u32; 3]>,
    /// Most blocks per cluster (`.maxclusterrank`, `EIATTR_MAX_CLUSTER_RANK`).
    pub max_cluster_rank: Option<u32>,
    /// Offset of the first parameter in constant bank 0 (`EIATTR_PARAM_CBANK`): 0x160 on
    /// sm_8x, 0x210 on sm_90, 0x380 on sm_100.
    pub param_base: u32,
    /// Total parameter bytes (`EIATTR_PARAM_CBANK` / `EIATTR_CBANK_PARAM_SIZE`).
    pub param_bytes: u32,
    /// Parameters sorted by ordinal.
    pub params: Vec<ParamInfo>,
    /// Size to allocate for constant bank 0: `round_up(param_base + param_bytes, 16)` (at least
    /// the `.nv.constant0.<fn>` section size).
    pub cbank0_size: u32,
    /// The kernel's constant bank 2 (`.nv.constant2.<fn>`, jump tables) as (offset in
    /// [`Module::image`], size), if present.
    pub cbank2: Option<(u64, u64)>,
    /// Index of the kernel's symbol in `.symtab`.
    pub symbol_index: u32,
    /// Why the kernel cannot run on libtegragpu (an attribute that needs a feature it does
    /// not provide); `None` for runnable kernels. The module still loads.
    pub refused: Option<String>,
    /// Most registers (`EIATTR_REGCOUNT`) of the device functions the kernel reaches through
    /// absolute calls (device-linked code), 0 if none: the warps must be given
    /// `register_count.max(callee_register_count)` registers.
    pub callee_register_count: u32,
}

/// Total shared memory per CTA for `info` with `dynamic_bytes` of dynamic shared memory on an
/// SM of major version `sm_major` (gpu-programming-interface.md §6.9). This is the value for
/// the QMD's SHARED_MEMORY_SIZE and for choosing the SM carveout.
///
/// - sm_8x and older: static shared starts at window offset 0 and the reserve is extra:
///   `round_up(static + dynamic + 0x400, 128)`.
/// - sm_90 and later: the section size already includes the reserve, which sits first:
///   `round_up(max(static, 0x400) + dynamic, 128)`.
///
/// Saturates at `u32::MAX` (a launch check must reject such sizes).
pub fn shared_memory_total(info: &KernelInfo, dynamic_bytes: u32, sm_major: u32) -> u32 {
    if sm_major >= 9 {
        let raw = info.static_shared_bytes.max(info.shared_reserved) as u64 + dynamic_bytes as u64;
        let rounded = raw.div_ceil(SHARED_ALIGN) * SHARED_ALIGN;
        u32::try_from(rounded).unwrap_or(u32::MAX)
    } else {
        let raw =
            info.static_shared_bytes as u64 + dynamic_bytes as u64 + info.shared_reserved as u64;
        let rounded = raw.div_ceil(SHARED_ALIGN) * SHARED_ALIGN;
        u32::try_from(rounded).unwrap_or(u32::MAX)
    }
}

/// The aggregate shared memory sm_90+ kernels read from constant bank 0 (0x13C):
/// `max(static, 0x400) + dynamic`, not rounded (gpu-programming-interface.md §6.9).
pub fn shared_memory_aggregate(info: &KernelInfo, dynamic_bytes: u32) -> u32 {
    info.static_shared_bytes
        .max(info.shared_reserved)
        .saturating_add(dynamic_bytes)
}

/// A `__device__` or `__constant__` variable (an `STT_OBJECT` symbol in `.nv.global`,
/// `.nv.global.init` or `.nv.constant3`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GlobalSymbol {
    /// Symbol name (mangled unless declared `extern "C"`).
    pub name: String,
    /// Offset in [`Module::image`].
    pub offset: u64,
    /// Size in bytes.
    pub size: u64,
    /// A `__managed__` variable (`STO_CUDA_MANAGED`): its code reaches it through relocations
    /// that [`Module::relocate_placing`] may point at memory outside the image.
    pub managed: bool,
}

/// A CUDA system call: an undefined symbol of a cubin that the CUDA driver provides and
/// libtegragpu implements in its built-in syscall module (`src/builtin/syscalls.cu`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Syscall {
    /// `int vprintf(const char *format, void *args)`: device-side `printf`.
    Vprintf,
    /// `void __assertfail(const char *message, const char *file, unsigned line,
    /// const char *function, size_t char_size)`: a failed device-side `assert`.
    Assertfail,
    /// `void *malloc(size_t size)`: the device heap.
    Malloc,
    /// `void free(void *ptr)`: the device heap.
    Free,
    /// `void cudaGraphSetConditional(cudaGraphConditionalHandle handle, unsigned value)`: the
    /// condition of a graph conditional node.
    SetConditional,
}

impl Syscall {
    /// Every syscall, in bit order of [`Module::imports`].
    pub const ALL: [Syscall; 5] = [
        Syscall::Vprintf,
        Syscall::Assertfail,
        Syscall::Malloc,
        Syscall::Free,
        Syscall::SetConditional,
    ];

    /// The syscall a cubin's undefined symbol `name` names, if any.
    pub fn from_symbol(name: &str) -> Option<Syscall> {
        match name {
            "vprintf" => Some(Syscall::Vprintf),
            "__assertfail" => Some(Syscall::Assertfail),
            "malloc" => Some(Syscall::Malloc),
            "free" => Some(Syscall::Free),
            "cudaGraphSetConditional" => Some(Syscall::SetConditional),
            _ => None,
        }
    }

    /// The symbol name in user cubins.
    pub fn symbol(self) -> &'static str {
        match self {
            Syscall::Vprintf => "vprintf",
            Syscall::Assertfail => "__assertfail",
            Syscall::Malloc => "malloc",
            Syscall::Free => "free",
            Syscall::SetConditional => "cudaGraphSetConditional",
        }
    }

    /// What the program uses it for, in messages.
    pub fn feature(self) -> &'static str {
        match self {
            Syscall::Vprintf => "device-side printf",
            Syscall::Assertfail => "device-side assert",
            Syscall::Malloc | Syscall::Free => "the device heap",
            Syscall::SetConditional => "the condition of a graph conditional node",
        }
    }

    /// The function implementing it in the built-in syscall module.
    pub fn builtin_function(self) -> &'static str {
        match self {
            Syscall::Vprintf => "tg_sys_vprintf",
            Syscall::Assertfail => "tg_sys_assertfail",
            Syscall::Malloc => "tg_sys_malloc",
            Syscall::Free => "tg_sys_free",
            Syscall::SetConditional => "tg_sys_set_conditional",
        }
    }

    pub(crate) fn bit(self) -> u8 {
        1 << self as u8
    }
}

/// A device function (an `STT_FUNC` symbol that is not a kernel).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FunctionSymbol {
    /// Symbol name.
    pub name: String,
    /// Offset of its first instruction in [`Module::image`].
    pub offset: u64,
    /// Registers it uses (`EIATTR_REGCOUNT`), where the cubin says (device-linked code).
    pub register_count: Option<u32>,
    /// Its stack frame in bytes (`EIATTR_FRAME_SIZE`), where the cubin says.
    pub frame_size: Option<u32>,
}

/// A parsed cubin: memory image, relocations and kernels.
#[derive(Debug, Clone)]
pub struct Module {
    sm: (u32, u32),
    image: Vec<u8>,
    base_alignment: u64,
    relocs: Vec<Reloc>,
    kernels: Vec<KernelInfo>,
    cbank3: Option<(u64, u64)>,
    cbank4: Option<(u64, u64)>,
    global: Option<(u64, u64)>,
    global_init: Option<(u64, u64)>,
    globals: Vec<GlobalSymbol>,
    functions: Vec<FunctionSymbol>,
    named_banks: u32,
    /// Bit `s as u8` set when the cubin calls syscall `s` ([`Syscall`]).
    imports: u8,
}

impl Module {
    /// Whether a section of the cubin is constant bank `bank` (`.nv.constantN` or
    /// `.nv.constantN.<fn>`): the code may read that bank.
    pub fn names_constant_bank(&self, bank: u32) -> bool {
        bank < 32 && self.named_banks & (1 << bank) != 0
    }

    /// The cubin's SM version `(major, minor)` from its ELF header.
    pub fn sm(&self) -> (u32, u32) {
        self.sm
    }

    /// The unrelocated memory image, laid out from offset 0, including the trailing
    /// [`IMAGE_SLACK`]. Copy [`Module::image_at`]'s result (or this, after
    /// [`Module::relocate`]) to GPU memory at the chosen VA.
    pub fn image(&self) -> &[u8] {
        &self.image
    }

    /// The alignment the image's GPU VA must have (≥ [`IMAGE_ALIGN`]).
    pub fn base_alignment(&self) -> u64 {
        self.base_alignment
    }

    /// Number of relocations that [`Module::relocate`] applies.
    pub fn relocation_count(&self) -> usize {
        self.relocs.len()
    }

    /// All kernels, in symbol-table order.
    pub fn kernels(&self) -> &[KernelInfo] {
        &self.kernels
    }

    /// The kernel named `name`, or [`Status::NotFound`] listing the available kernels.
    pub fn kernel(&self, name: &str) -> Result<&KernelInfo> {
        self.kernels.iter().find(|k| k.name == name).ok_or_else(|| {
            let list: Vec<&str> = self.kernels.iter().map(|k| k.name.as_str()).collect();
            Error::new(
                Status::NotFound,
                format!(
                    "kernel {name:?} not found in the cubin; it has: {}",
                    list.join(", ")
                ),
            )
        })
    }

    /// Constant bank 3 (`.nv.constant3`, user `__constant__` data) as (image offset, size).
    pub fn cbank3(&self) -> Option<(u64, u64)> {
        self.cbank3
    }

    /// Constant bank 4 (`.nv.constant4`, addresses of `__device__` globals) as (image offset,
    /// size). Its contents are relocated.
    pub fn cbank4(&self) -> Option<(u64, u64)> {
        self.cbank4
    }

    /// The module's `__device__` and `__constant__` variables.
    pub fn global_symbols(&self) -> &[GlobalSymbol] {
        &self.globals
    }

    /// The variable named `name`, if any.
    pub fn global_symbol(&self, name: &str) -> Option<&GlobalSymbol> {
        self.globals.iter().find(|g| g.name == name)
    }

    /// The syscalls the cubin calls (undefined `vprintf` / `__assertfail`), which
    /// [`Module::relocate_with`] resolves.
    pub fn imports(&self) -> Vec<Syscall> {
        Syscall::ALL
            .into_iter()
            .filter(|s| self.imports & s.bit() != 0)
            .collect()
    }

    /// The device functions (non-kernel `STT_FUNC` symbols defined in the cubin).
    pub fn functions(&self) -> &[FunctionSymbol] {
        &self.functions
    }

    /// The device function named `name`, if any.
    pub fn function(&self, name: &str) -> Option<&FunctionSymbol> {
        self.functions.iter().find(|f| f.name == name)
    }

    /// The zero-initialised `__device__` variables (NOBITS `.nv.global`) as (image offset, size).
    pub fn global(&self) -> Option<(u64, u64)> {
        self.global
    }

    /// The initialised `__device__` variables (`.nv.global.init`) as (image offset, size).
    pub fn global_init(&self) -> Option<(u64, u64)> {
        self.global_init
    }
}
