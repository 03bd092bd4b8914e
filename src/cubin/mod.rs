//! CUDA cubin (ELF) loading.
//!
//! [`Module::parse`] validates a cubin for a device's SM version and extracts everything a
//! launcher needs (gpu-programming-interface.md §6):
//! - a zero-based **memory image** ([`Module::image`]) holding every section the GPU reads
//!   (`.text.*`, `.nv.constant2.*`, `.nv.constant3`, `.nv.constant4`, `.nv.global.init`, the
//!   zero-filled NOBITS `.nv.global`), each at 128-byte alignment, followed by
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
pub mod sass;

use crate::error::{Error, Result, Status};
use elf::{
    bad, Elf, Rel, Sym, SHN_ABS, SHN_LORESERVE, SHN_UNDEF, SHT_CUDA_INFO, SHT_NOBITS, SHT_PROGBITS,
};
use elf::{SHT_REL, SHT_RELA, SHT_SYMTAB, STO_CUDA_ENTRY, STT_FUNC, STT_OBJECT};
use info::Attr;
use std::collections::HashMap;

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
/// Relocation 0x3a (sm_8x `.rel.text`) / 0x4b (sm_90 `.rela.text`): the target of an absolute
/// call (`CALL.ABS.NOINC`, `-G` builds and device-linked `-rdc` calls): target address bits
/// 39:0 in instruction bits 63:24. Worked out on an H100 from where such calls jumped when the
/// address was written at other bit positions; checked against libcuda by the conformance
/// suite (`build_G`, `rdc_dlink`).
pub const R_CUDA_ABS_CALL_SM8X: u32 = 0x3a;
/// See [`R_CUDA_ABS_CALL_SM8X`].
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

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Patch {
    /// 4 bytes at the offset.
    Abs32,
    /// 8 bytes at the offset.
    Abs64,
    /// Low 32 bits into bytes +4..+8.
    Lo32,
    /// High 32 bits into bytes +4..+8.
    Hi32,
    /// An absolute call target: address bits 39:0 into instruction bits 63:24 (bytes +3..+8).
    Call40,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Target {
    /// Offset in the image (relocated by the load VA).
    Image(u64),
    /// Absolute value (`SHN_ABS` symbol).
    Abs(u64),
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Reloc {
    /// Image offset of the relocated location (`r_offset` + section offset).
    at: u64,
    patch: Patch,
    r_type: u32,
    target: Target,
    addend: i64,
    /// Relocation section name, for messages.
    section: String,
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
}

/// A loaded section's place in the image.
#[derive(Debug, Clone, Copy)]
struct Placed {
    offset: u64,
    size: u64,
}

fn round_up(v: u64, align: u64) -> Option<u64> {
    v.checked_add(align - 1).map(|x| x / align * align)
}

/// Decode the SM version from the ELF header (§6.1).
fn sm_of(h: &elf::Header) -> Result<(u32, u32)> {
    let sm = match h.osabi {
        elf::ELFOSABI_CUDA => h.e_flags & 0xff,
        elf::ELFOSABI_CUDA_V2 => (h.e_flags >> 8) & 0xff,
        o => {
            return Err(bad(format!(
                "EI_OSABI {o:#x} (ABI version {}) is neither the CUDA ABI {:#x} nor {:#x}; cannot \
                 decode the SM version from e_flags {:#x}",
                h.abi_version,
                elf::ELFOSABI_CUDA,
                elf::ELFOSABI_CUDA_V2,
                h.e_flags
            )))
        }
    };
    if sm < 10 {
        return Err(bad(format!(
            "e_flags {:#x} encode SM {sm}, not a valid SM version",
            h.e_flags
        )));
    }
    Ok((sm / 10, sm % 10))
}

/// Which loaded group a section belongs to; also the image order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Group {
    Text,
    Constant2,
    Constant3,
    Constant4,
    GlobalInit,
    Global,
}

fn classify(name: &str, sh_type: u32) -> Option<Group> {
    match sh_type {
        SHT_PROGBITS if name.starts_with(".text.") => Some(Group::Text),
        SHT_PROGBITS if name.starts_with(".nv.constant2.") => Some(Group::Constant2),
        SHT_PROGBITS if name == ".nv.constant3" => Some(Group::Constant3),
        SHT_PROGBITS if name == ".nv.constant4" => Some(Group::Constant4),
        SHT_PROGBITS if name == ".nv.global.init" => Some(Group::GlobalInit),
        SHT_NOBITS if name == ".nv.global" => Some(Group::Global),
        _ => None,
    }
}

/// Values from the module `.nv.info`, keyed by function symbol index.
#[derive(Default)]
struct ModuleInfo {
    regcount: HashMap<u32, u32>,
    frame_size: HashMap<u32, u32>,
    min_stack: HashMap<u32, u32>,
}

fn check_unsupported(attrs: &[Attr<'_>], section: &str) -> Result<()> {
    match info::first_refused(attrs) {
        Some((name, what)) => Err(Error::new(
            Status::NotSupported,
            format!(
                "{section}: {name} means the code needs {what}, which libtegragpu does not support"
            ),
        )),
        None => Ok(()),
    }
}

/// Insert into a per-symbol map, rejecting conflicting duplicates.
fn insert_keyed(map: &mut HashMap<u32, u32>, a: &Attr<'_>, what: &str) -> Result<()> {
    a.expect_format(info::EIFMT_SVAL, ".nv.info")?;
    let sym = a.u32_at(0, ".nv.info")?;
    let val = a.u32_at(4, ".nv.info")?;
    if let Some(old) = map.insert(sym, val) {
        if old != val {
            return Err(bad(format!(
                ".nv.info: {what} for symbol {sym} given twice with different values ({old}, {val})"
            )));
        }
    }
    Ok(())
}

fn dims(a: &Attr<'_>, section: &str) -> Result<[u32; 3]> {
    a.expect_format(info::EIFMT_SVAL, section)?;
    Ok([
        a.u32_at(0, section)?,
        a.u32_at(4, section)?,
        a.u32_at(8, section)?,
    ])
}

impl Module {
    /// Parse `bytes` (a final cubin, `ET_EXEC`) for a device of SM version `device_sm`
    /// (`(major, minor)`, e.g. `(8, 7)` for Orin). The cubin's SM must have the same major
    /// version and a minor version ≤ the device's.
    ///
    /// Errors: [`Status::InvalidCubin`] for malformed files and SM mismatches;
    /// [`Status::NotSupported`] for kernels that need cooperative launch, clusters, device
    /// syscalls, unresolved externals, non-cbank parameters or unsupported relocation types.
    pub fn parse(bytes: &[u8], device_sm: (u32, u32)) -> Result<Module> {
        let elf = Elf::parse(bytes)?;
        let sm = sm_of(&elf.header)?;
        if sm.0 != device_sm.0 || sm.1 > device_sm.1 {
            return Err(bad(format!(
                "cubin is for sm_{}{}, the device is sm_{}{}: need the same major version and a \
                 minor version <= the device's",
                sm.0, sm.1, device_sm.0, device_sm.1
            )));
        }
        if elf.header.e_type != 2 {
            return Err(Error::new(
                if elf.header.e_type == 1 {
                    Status::NotSupported
                } else {
                    Status::InvalidCubin
                },
                format!(
                    "e_type {} is not ET_EXEC (2); only final (linked) cubins can be loaded",
                    elf.header.e_type
                ),
            ));
        }

        let n = elf.sections.len();
        let mut names = Vec::with_capacity(n);
        for i in 0..n {
            names.push(elf.section_name(i)?);
        }

        // Symbol table (exactly one).
        let symtabs: Vec<usize> = (0..n)
            .filter(|&i| elf.sections[i].sh_type == SHT_SYMTAB)
            .collect();
        let symtab_idx = match symtabs.as_slice() {
            [one] => *one,
            [] => return Err(bad("no SHT_SYMTAB section")),
            many => {
                return Err(bad(format!(
                    "{} SHT_SYMTAB sections (indices {many:?}), expected one",
                    many.len()
                )))
            }
        };
        let (syms, strtab) = elf.symbols(symtab_idx)?;
        let sym_name = |i: usize, s: &Sym| -> Result<&str> {
            elf::cstr(strtab, s.st_name as u64).map_err(|e| bad(format!("name of symbol {i}: {e}")))
        };

        // Layout.
        let mut placed: Vec<Option<Placed>> = vec![None; n];
        let mut groups: Vec<(Group, usize)> = Vec::new();
        for (i, name) in names.iter().enumerate() {
            if let Some(g) = classify(name, elf.sections[i].sh_type) {
                groups.push((g, i));
            }
        }
        groups.sort(); // by group, then by section index
        let mut end = 0u64;
        let mut base_alignment = IMAGE_ALIGN;
        for &(g, i) in &groups {
            let s = &elf.sections[i];
            let a = s.sh_addralign;
            if a > 1 && (!a.is_power_of_two() || a > 4096) {
                return Err(bad(format!(
                    "section {i} ({}): sh_addralign {a:#x} is not a power of two <= 4096",
                    names[i]
                )));
            }
            let align = a.max(IMAGE_ALIGN);
            base_alignment = base_alignment.max(align);
            let offset = round_up(end, align).ok_or_else(|| bad("image size overflows"))?;
            end = offset
                .checked_add(s.sh_size)
                .ok_or_else(|| bad("image size overflows"))?;
            if end > MAX_IMAGE_BYTES {
                return Err(Error::new(
                    Status::NotSupported,
                    format!(
                        "section {i} ({}, {:?}) of {:#x} bytes makes the memory image {end:#x} bytes, more \
                         than the {MAX_IMAGE_BYTES:#x}-byte limit",
                        names[i], g, s.sh_size
                    ),
                ));
            }
            placed[i] = Some(Placed {
                offset,
                size: s.sh_size,
            });
        }
        let total = round_up(end, IMAGE_ALIGN)
            .and_then(|e| e.checked_add(IMAGE_SLACK))
            .ok_or_else(|| bad("image size overflows"))?;
        let mut image = vec![0u8; total as usize];
        for &(g, i) in &groups {
            if g == Group::Global {
                continue;
            }
            let data = elf.section_data(i)?;
            if let Some(p) = placed[i] {
                let dst = image
                    .get_mut(p.offset as usize..(p.offset + p.size) as usize)
                    .ok_or_else(|| {
                        Error::new(Status::Internal, "cubin: image layout out of range")
                    })?;
                dst.copy_from_slice(data);
            }
        }
        let range_of = |g: Group| -> Result<Option<(u64, u64)>> {
            let found: Vec<usize> = groups
                .iter()
                .filter(|(gg, _)| *gg == g)
                .map(|(_, i)| *i)
                .collect();
            match found.as_slice() {
                [] => Ok(None),
                [i] => Ok(placed[*i].map(|p| (p.offset, p.size))),
                many => Err(bad(format!(
                    "{} sections named {} (indices {many:?})",
                    many.len(),
                    names[many[0]]
                ))),
            }
        };
        let cbank3 = range_of(Group::Constant3)?;
        let cbank4 = range_of(Group::Constant4)?;
        let global = range_of(Group::Global)?;
        let global_init = range_of(Group::GlobalInit)?;
        for (what, r) in [
            ("constant bank 3 (.nv.constant3)", cbank3),
            ("constant bank 4 (.nv.constant4)", cbank4),
        ] {
            if let Some((_, size)) = r {
                if size > MAX_CBANK_BYTES {
                    return Err(bad(format!("{what} is {size:#x} bytes, more than 64 KiB")));
                }
            }
        }

        // Relocations of loaded sections.
        let mut relocs = Vec::new();
        for i in 0..n {
            let s = elf.sections[i];
            if s.sh_type != SHT_REL && s.sh_type != SHT_RELA {
                continue;
            }
            let tgt = s.sh_info as usize;
            let Some(tp) = placed.get(tgt).copied().flatten() else {
                continue; // e.g. .rel.debug_frame: target not loaded
            };
            if s.sh_link as usize != symtab_idx {
                return Err(bad(format!(
                    "relocation section {i} ({}): sh_link {} is not the symbol table (section {symtab_idx})",
                    names[i], s.sh_link
                )));
            }
            for (k, r) in elf.relocations(i)?.into_iter().enumerate() {
                relocs.push(Self::resolve_reloc(
                    &r, k, names[i], names[tgt], tp, &syms, &placed, &names, &sym_name,
                )?);
            }
        }

        // Separately compiled, device-linked code (-rdc + nvlink / nvcc -dlink; also any linker
        // output such as nvJitLink's) carries `.nv.prototype`. Absolute calls in such code
        // (calls between the linked files) hung on an H100 when loaded by this loader, while
        // the same calls in a -G build run: refuse that combination.
        if let Some(i) = names.iter().position(|n| *n == ".nv.prototype") {
            if relocs.iter().any(|r| r.patch == Patch::Call40) {
                return Err(Error::new(
                    Status::NotSupported,
                    format!(
                        "section {i} (.nv.prototype) with absolute calls: calls between separately \
                         compiled, device-linked files (-rdc + nvlink / nvcc -dlink) are not \
                         supported yet; compile the files as one translation unit (without -rdc)"
                    ),
                ));
            }
        }

        // Module .nv.info.
        let mut minfo = ModuleInfo::default();
        for (i, name) in names.iter().enumerate() {
            if elf.sections[i].sh_type != SHT_CUDA_INFO || *name != ".nv.info" {
                continue;
            }
            let attrs = info::parse(elf.section_data(i)?, ".nv.info")?;
            check_unsupported(&attrs, ".nv.info")?;
            for a in &attrs {
                match a.attr {
                    info::EIATTR_REGCOUNT => {
                        insert_keyed(&mut minfo.regcount, a, "EIATTR_REGCOUNT")?
                    }
                    info::EIATTR_FRAME_SIZE => {
                        insert_keyed(&mut minfo.frame_size, a, "EIATTR_FRAME_SIZE")?
                    }
                    info::EIATTR_MIN_STACK_SIZE => {
                        insert_keyed(&mut minfo.min_stack, a, "EIATTR_MIN_STACK_SIZE")?
                    }
                    _ => {}
                }
            }
        }

        // Kernels.
        let mut kernels: Vec<KernelInfo> = Vec::new();
        for (si, sym) in syms.iter().enumerate() {
            if sym.st_info & 0xf != STT_FUNC || sym.st_other & STO_CUDA_ENTRY == 0 {
                continue;
            }
            let name = sym_name(si, sym)?;
            let k = Self::kernel_info(&elf, &names, &placed, &minfo, si, sym, name, sm)?;
            if kernels.iter().any(|o| o.name == k.name) {
                return Err(bad(format!("kernel {name} defined twice")));
            }
            kernels.push(k);
        }

        // __device__ / __constant__ variables.
        let mut globals = Vec::new();
        for (si, sym) in syms.iter().enumerate() {
            if sym.st_info & 0xf != STT_OBJECT
                || sym.st_shndx == SHN_UNDEF
                || sym.st_shndx >= SHN_LORESERVE
            {
                continue;
            }
            let i = sym.st_shndx as usize;
            let Some(p) = placed.get(i).copied().flatten() else {
                continue;
            };
            if !matches!(
                classify(names[i], elf.sections[i].sh_type),
                Some(Group::Global | Group::GlobalInit | Group::Constant3)
            ) {
                continue;
            }
            let name = sym_name(si, sym)?;
            if !sym
                .st_value
                .checked_add(sym.st_size)
                .is_some_and(|e| e <= p.size)
            {
                return Err(bad(format!(
                    "variable {name}: {:#x}+{:#x} lies outside its {:#x}-byte section {}",
                    sym.st_value, sym.st_size, p.size, names[i]
                )));
            }
            globals.push(GlobalSymbol {
                name: name.to_string(),
                offset: p.offset + sym.st_value,
                size: sym.st_size,
            });
        }

        Ok(Module {
            sm,
            globals,
            image,
            base_alignment,
            relocs,
            kernels,
            cbank3,
            cbank4,
            global,
            global_init,
        })
    }

    #[allow(clippy::too_many_arguments)]
    fn resolve_reloc<'n>(
        r: &Rel,
        k: usize,
        sec: &str,
        tgt_name: &str,
        tp: Placed,
        syms: &[Sym],
        placed: &[Option<Placed>],
        names: &[&'n str],
        sym_name: &dyn Fn(usize, &Sym) -> Result<&'n str>,
    ) -> Result<Reloc> {
        let ctx = || {
            format!(
                "relocation {k} in {sec} (type {:#x}, r_offset {:#x})",
                r.r_type, r.r_offset
            )
        };
        let (patch, start, width) = match r.r_type {
            R_CUDA_32 => (Patch::Abs32, 0u64, 4u64),
            R_CUDA_64 | R_CUDA_G64 => (Patch::Abs64, 0, 8),
            R_CUDA_ABS32_LO_32 => (Patch::Lo32, 4, 4),
            R_CUDA_ABS32_HI_32 => (Patch::Hi32, 4, 4),
            R_CUDA_ABS_CALL_SM8X | R_CUDA_ABS_CALL_SM90 => (Patch::Call40, 3, 5),
            R_CUDA_FUNC_DESC32_LO_32 | R_CUDA_FUNC_DESC32_HI_32 => {
                return Err(Error::new(
                    Status::NotSupported,
                    format!(
                        "{}: R_CUDA_FUNC_DESC32 (function-pointer descriptors) is not supported",
                        ctx()
                    ),
                ))
            }
            t => {
                return Err(Error::new(
                    Status::NotSupported,
                    format!("{}: unsupported relocation type {t:#x}", ctx()),
                ))
            }
        };
        let fits = r
            .r_offset
            .checked_add(start + width)
            .is_some_and(|e| e <= tp.size);
        if !fits {
            return Err(bad(format!(
                "{}: patches bytes {:#x}+{} outside the {:#x}-byte section {tgt_name}",
                ctx(),
                r.r_offset.wrapping_add(start),
                width,
                tp.size
            )));
        }
        let at = tp.offset + r.r_offset + start;
        let sym = syms.get(r.r_sym as usize).ok_or_else(|| {
            bad(format!(
                "{}: symbol index {} out of range ({} symbols)",
                ctx(),
                r.r_sym,
                syms.len()
            ))
        })?;
        let sname = sym_name(r.r_sym as usize, sym).unwrap_or("?");
        let target = match sym.st_shndx {
            SHN_UNDEF => {
                let what = match sname {
                    "vprintf" => "device-side printf, which needs the driver's printf buffer and syscall service (not supported by libtegragpu)",
                    "malloc" | "free" => "the device-side heap (malloc/free), which needs the driver's syscall service (not supported by libtegragpu)",
                    "__assertfail" | "__assert_fail" => "device-side assert, which needs the driver's syscall service (not supported by libtegragpu)",
                    n if n.starts_with("__cuda_syscall_tex")
                        || n.starts_with("__cuda_syscall_su")
                        || n == ".nv.unified.texrefDescSize"
                        || n == ".nv.surfrefDescSize" =>
                    {
                        "texture or surface objects (the driver's texture/surface descriptors), which libtegragpu does not support"
                    }
                    n if n.starts_with("cudaLaunchDevice") || n.starts_with("cudaGetParameterBuffer") || n.starts_with("cudaCGGet") => {
                        "dynamic parallelism (device-side launches), which libtegragpu does not support"
                    }
                    _ => "an unresolved external: link the code first (nvlink / nvcc -dlink)",
                };
                return Err(Error::new(
                    Status::NotSupported,
                    format!(
                        "{}: symbol {sname} is undefined: the code uses {what}",
                        ctx()
                    ),
                ));
            }
            SHN_ABS => Target::Abs(sym.st_value),
            x if x >= SHN_LORESERVE => {
                return Err(bad(format!(
                    "{}: symbol {sname} has special section index {x:#x}",
                    ctx()
                )))
            }
            x => {
                let p = placed.get(x as usize).copied().flatten().ok_or_else(|| {
                    bad(format!(
                        "{}: symbol {sname} lies in section {x} ({}), which is not part of the memory image",
                        ctx(),
                        names.get(x as usize).copied().unwrap_or("out of range")
                    ))
                })?;
                if sym.st_value > p.size {
                    return Err(bad(format!(
                        "{}: symbol {sname} value {:#x} lies past its {:#x}-byte section",
                        ctx(),
                        sym.st_value,
                        p.size
                    )));
                }
                Target::Image(p.offset + sym.st_value)
            }
        };
        Ok(Reloc {
            at,
            patch,
            r_type: r.r_type,
            target,
            addend: r.r_addend,
            section: sec.to_string(),
        })
    }

    /// Why the kernel cannot run if it (or a device function of the module) executes texture or
    /// surface instructions: texture and surface objects need the driver's texture header and
    /// sampler pools, which libtegragpu does not provide.
    fn texture_use(
        elf: &Elf<'_>,
        names: &[&str],
        ti: usize,
        sym: &Sym,
        name: &str,
        sm: (u32, u32),
    ) -> Result<Option<String>> {
        let data = elf.section_data(ti)?;
        let code = usize::try_from(sym.st_value)
            .ok()
            .zip(usize::try_from(sym.st_size).ok())
            .and_then(|(a, n)| data.get(a..a.checked_add(n)?))
            .unwrap_or(data);
        if let Some((off, m)) = sass::first_texture_instruction(code, sm) {
            return Ok(Some(format!(
                "kernel {name} uses texture or surface objects ({m} at {:#x} in {}), which \
                 libtegragpu does not support",
                sym.st_value + off as u64,
                names[ti]
            )));
        }
        // Device functions (a .text section without .nv.info.<name>: not a kernel). Without
        // reading the call graph every kernel of the module is refused.
        for (i, nm) in names.iter().enumerate() {
            let Some(f) = nm.strip_prefix(".text.") else {
                continue;
            };
            if i == ti || names.iter().any(|n| n.strip_prefix(".nv.info.") == Some(f)) {
                continue;
            }
            if let Some((_, m)) = sass::first_texture_instruction(elf.section_data(i)?, sm) {
                return Ok(Some(format!(
                    "kernel {name}: device function {f} of its module uses texture or surface \
                     objects ({m}), which libtegragpu does not support"
                )));
            }
        }
        Ok(None)
    }

    #[allow(clippy::too_many_arguments)]
    fn kernel_info(
        elf: &Elf<'_>,
        names: &[&str],
        placed: &[Option<Placed>],
        minfo: &ModuleInfo,
        si: usize,
        sym: &Sym,
        name: &str,
        sm: (u32, u32),
    ) -> Result<KernelInfo> {
        let ti = sym.st_shndx as usize;
        let tsec = elf
            .section(ti)
            .map_err(|e| bad(format!("kernel {name}: {}", e.message)))?;
        let tp = match placed.get(ti).copied().flatten() {
            Some(p) if names[ti].starts_with(".text.") => p,
            _ => {
                return Err(bad(format!(
                    "kernel {name}: st_shndx {ti} ({}) is not a loaded .text section",
                    names.get(ti).copied().unwrap_or("?")
                )))
            }
        };
        let code_end = sym.st_value.checked_add(sym.st_size);
        if sym.st_size == 0 || !code_end.is_some_and(|e| e <= tp.size) {
            return Err(bad(format!(
                "kernel {name}: code {:#x}+{:#x} is empty or outside its {:#x}-byte section {}",
                sym.st_value, sym.st_size, tp.size, names[ti]
            )));
        }
        let symbol_index = si as u32;

        // Registers.
        let sh_info_regs = tsec.sh_info >> 24;
        let register_count = match minfo.regcount.get(&symbol_index) {
            Some(&r) => {
                if sh_info_regs != 0 && sh_info_regs != r {
                    return Err(bad(format!(
                        "kernel {name}: EIATTR_REGCOUNT {r} disagrees with {} sh_info bits 31:24 ({sh_info_regs})",
                        names[ti]
                    )));
                }
                r
            }
            None if sh_info_regs != 0 => sh_info_regs,
            None => {
                return Err(bad(format!(
                    "kernel {name}: no EIATTR_REGCOUNT for symbol {si} in .nv.info"
                )))
            }
        };
        if register_count == 0 || register_count > 255 {
            return Err(bad(format!(
                "kernel {name}: register count {register_count} is not in 1..=255"
            )));
        }
        let mut barrier_count = ((tsec.sh_flags >> 20) & 0x7f) as u32;

        // Per-kernel sections, tied to the .text section by sh_info.
        let mut attrs_all: Vec<(Attr<'_>, &str)> = Vec::new();
        let mut static_shared = 0u64;
        let mut cbank0_section = 0u64;
        let mut cbank2 = None;
        let c2name = format!(".nv.constant2.{name}");
        let mut refused = Self::texture_use(elf, names, ti, sym, name, sm)?;
        for (i, s) in elf.sections.iter().enumerate() {
            let nm = names[i];
            if s.sh_info as usize == ti && s.sh_type == SHT_CUDA_INFO && nm.starts_with(".nv.info.")
            {
                let attrs = info::parse(elf.section_data(i)?, nm)?;
                if refused.is_none() {
                    refused = info::first_refused(&attrs).map(|(attr, what)| {
                        format!("kernel {name} needs {what} ({attr} in {nm}), which libtegragpu does not support")
                    });
                }
                attrs_all.extend(attrs.into_iter().map(|a| (a, nm)));
            } else if s.sh_info as usize == ti
                && s.sh_type == SHT_NOBITS
                && nm.starts_with(".nv.shared.")
            {
                static_shared = static_shared.max(s.sh_size);
            } else if s.sh_info as usize == ti
                && s.sh_type == SHT_PROGBITS
                && nm.starts_with(".nv.constant0.")
            {
                cbank0_section = s.sh_size;
            } else if nm == c2name {
                if let Some(p) = placed[i] {
                    if p.size > MAX_CBANK_BYTES {
                        return Err(bad(format!(
                            "kernel {name}: {nm} is {:#x} bytes, more than 64 KiB",
                            p.size
                        )));
                    }
                    cbank2 = Some((p.offset, p.size));
                }
            }
        }
        let static_shared_bytes = u32::try_from(static_shared)
            .ok()
            .filter(|&v| v <= 0x4_0000)
            .ok_or_else(|| {
                bad(format!(
                    "kernel {name}: static shared memory {static_shared:#x} bytes exceeds 256 KiB"
                ))
            })?;

        let mut param_cbank: Option<(u32, u32)> = None;
        let mut cbank_param_size: Option<u32> = None;
        let mut params: Vec<ParamInfo> = Vec::new();
        let mut max_threads = None;
        let mut reqntid = None;
        for (a, sec) in &attrs_all {
            match a.attr {
                info::EIATTR_PARAM_CBANK => {
                    a.expect_format(info::EIFMT_SVAL, sec)?;
                    let v = (a.u16_at(4, sec)? as u32, a.u16_at(6, sec)? as u32);
                    if param_cbank.is_some_and(|o| o != v) {
                        return Err(bad(format!(
                            "{sec}: EIATTR_PARAM_CBANK given twice with different values"
                        )));
                    }
                    param_cbank = Some(v);
                }
                info::EIATTR_CBANK_PARAM_SIZE => {
                    a.expect_format(info::EIFMT_HVAL, sec)?;
                    cbank_param_size = Some(a.value as u32);
                }
                info::EIATTR_KPARAM_INFO => {
                    a.expect_format(info::EIFMT_SVAL, sec)?;
                    let ordinal = a.u16_at(4, sec)? as u32;
                    let offset = a.u16_at(6, sec)? as u32;
                    let flags = a.u32_at(8, sec)?;
                    if flags & (1 << 17) != 0 {
                        return Err(Error::new(
                            Status::NotSupported,
                            format!("kernel {name}: parameter {ordinal} is not in the constant-bank parameter space (flags {flags:#x})"),
                        ));
                    }
                    let p = ParamInfo {
                        ordinal,
                        offset,
                        size: flags >> 18,
                    };
                    if let Some(o) = params.iter().find(|o| o.ordinal == ordinal) {
                        if *o != p {
                            return Err(bad(format!(
                                "kernel {name}: parameter {ordinal} described twice differently"
                            )));
                        }
                    } else {
                        params.push(p);
                    }
                }
                info::EIATTR_KPARAM_INFO_V2 => {
                    // CUDA 12.1+ (parameter blocks above 4 KiB): u32 index, u16 ordinal,
                    // u16 offset, u32 size; always in the constant-bank parameter space.
                    a.expect_format(info::EIFMT_SVAL, sec)?;
                    let p = ParamInfo {
                        ordinal: a.u16_at(4, sec)? as u32,
                        offset: a.u16_at(6, sec)? as u32,
                        size: a.u32_at(8, sec)?,
                    };
                    if let Some(o) = params.iter().find(|o| o.ordinal == p.ordinal) {
                        if *o != p {
                            return Err(bad(format!(
                                "kernel {name}: parameter {} described twice differently",
                                p.ordinal
                            )));
                        }
                    } else {
                        params.push(p);
                    }
                }
                info::EIATTR_MAX_THREADS => max_threads = Some(dims(a, sec)?),
                info::EIATTR_REQNTID => reqntid = Some(dims(a, sec)?),
                info::EIATTR_NUM_BARRIERS => {
                    // Newer toolchains (sm_100); the larger of this and the sh_flags count wins.
                    barrier_count = barrier_count.max(a.value as u32)
                }
                _ => {}
            }
        }
        params.sort_by_key(|p| p.ordinal);
        if barrier_count > 16 {
            return Err(bad(format!(
                "kernel {name}: {} sh_flags {:#x} / EIATTR_NUM_BARRIERS declare {barrier_count} \
                 barriers, more than 16",
                names[ti], tsec.sh_flags
            )));
        }
        let default_base = match sm.0 {
            ..=8 => 0x160,
            9 => 0x210,
            _ => 0x380,
        };
        let (param_base, param_bytes) = match (param_cbank, cbank_param_size) {
            (Some((_, s)), Some(c)) if s != c => {
                return Err(bad(format!(
                "kernel {name}: EIATTR_PARAM_CBANK size {s:#x} != EIATTR_CBANK_PARAM_SIZE {c:#x}"
            )))
            }
            (Some((b, s)), _) => (b, s),
            (None, Some(c)) => (default_base, c),
            (None, None) if params.is_empty() => (default_base, 0),
            (None, None) => {
                return Err(bad(format!(
                    "kernel {name}: parameters but no EIATTR_PARAM_CBANK"
                )))
            }
        };
        for (idx, p) in params.iter().enumerate() {
            if p.ordinal != idx as u32 {
                return Err(bad(format!(
                    "kernel {name}: parameter ordinals are not 0..{} (found {} at position {idx})",
                    params.len(),
                    p.ordinal
                )));
            }
            if p.size == 0
                || !p
                    .offset
                    .checked_add(p.size)
                    .is_some_and(|e| e <= param_bytes)
            {
                return Err(bad(format!(
                    "kernel {name}: parameter {} at {:#x}+{:#x} is empty or outside the {:#x} parameter bytes",
                    p.ordinal, p.offset, p.size, param_bytes
                )));
            }
        }
        let needed = (param_base as u64 + param_bytes as u64).max(cbank0_section);
        let cbank0 = round_up(needed, 16).unwrap_or(u64::MAX);
        if cbank0 > MAX_CBANK_BYTES {
            return Err(bad(format!(
                "kernel {name}: constant bank 0 needs {cbank0:#x} bytes (param base {param_base:#x} + \
                 {param_bytes:#x}, section {cbank0_section:#x}), more than 64 KiB"
            )));
        }
        let local = minfo.min_stack.get(&symbol_index).copied().unwrap_or(0);
        let frame_size = minfo.frame_size.get(&symbol_index).copied().unwrap_or(0);

        Ok(KernelInfo {
            name: name.to_string(),
            code_offset: tp.offset + sym.st_value,
            code_size: sym.st_size,
            register_count,
            barrier_count,
            static_shared_bytes,
            shared_reserved: SHARED_RESERVED_BYTES,
            local_bytes_per_thread: local,
            frame_size,
            max_threads,
            reqntid,
            param_base,
            param_bytes,
            params,
            cbank0_size: cbank0 as u32,
            cbank2,
            symbol_index,
            refused,
        })
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

    /// Apply the relocations to `image` (a copy of [`Module::image`]) for an image loaded at
    /// GPU VA `base_va`. `base_va` must be a multiple of [`Module::base_alignment`].
    ///
    /// Errors: [`Status::InvalidArgument`] for a wrong image length, a misaligned `base_va`, an
    /// address that overflows 64 bits with `base_va` or (for `R_CUDA_32`) does not fit 32 bits;
    /// [`Status::InvalidCubin`] when a relocation's addend takes the address out of range.
    pub fn relocate(&self, image: &mut [u8], base_va: u64) -> Result<()> {
        if image.len() != self.image.len() {
            return Err(Error::invalid(format!(
                "cubin relocate: image is {} bytes, the module's image is {}",
                image.len(),
                self.image.len()
            )));
        }
        if base_va % self.base_alignment != 0 {
            return Err(Error::invalid(format!(
                "cubin relocate: base VA {base_va:#x} is not {:#x}-byte aligned",
                self.base_alignment
            )));
        }
        for r in &self.relocs {
            let s = match r.target {
                Target::Image(off) => base_va.checked_add(off).ok_or_else(|| {
                    Error::invalid(format!(
                        "cubin relocate: {} type {:#x} at image offset {:#x}: address overflows with base VA {base_va:#x}",
                        r.section, r.r_type, r.at
                    ))
                })?,
                Target::Abs(v) => v,
            };
            // The addend comes from the file: an address it pushes out of range is a malformed
            // cubin, not a bad argument.
            let value = s.checked_add_signed(r.addend).ok_or_else(|| {
                bad(format!(
                    "cubin relocate: {} type {:#x} at image offset {:#x}: addend {} takes the address {s:#x} out of range",
                    r.section, r.r_type, r.at, r.addend
                ))
            })?;
            let at = r.at as usize;
            match r.patch {
                Patch::Abs64 => write(image, at, &value.to_le_bytes())?,
                Patch::Abs32 => {
                    let v = u32::try_from(value).map_err(|_| {
                        Error::invalid(format!(
                            "cubin relocate: {} R_CUDA_32 at image offset {:#x}: address {value:#x} does not fit 32 bits",
                            r.section, r.at
                        ))
                    })?;
                    write(image, at, &v.to_le_bytes())?
                }
                Patch::Lo32 => write(image, at, &(value as u32).to_le_bytes())?,
                Patch::Hi32 => write(image, at, &((value >> 32) as u32).to_le_bytes())?,
                Patch::Call40 => {
                    if value >> 40 != 0 {
                        return Err(Error::invalid(format!(
                            "cubin relocate: {} type {:#x} at image offset {:#x}: call target {value:#x} does not fit the 40-bit absolute call field",
                            r.section, r.r_type, r.at
                        )));
                    }
                    write(image, at, &value.to_le_bytes()[..5])?
                }
            }
        }
        Ok(())
    }

    /// A relocated copy of the image for GPU VA `base_va` (see [`Module::relocate`]).
    pub fn image_at(&self, base_va: u64) -> Result<Vec<u8>> {
        let mut img = self.image.clone();
        self.relocate(&mut img, base_va)?;
        Ok(img)
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

    /// The zero-initialised `__device__` variables (NOBITS `.nv.global`) as (image offset, size).
    pub fn global(&self) -> Option<(u64, u64)> {
        self.global
    }

    /// The initialised `__device__` variables (`.nv.global.init`) as (image offset, size).
    pub fn global_init(&self) -> Option<(u64, u64)> {
        self.global_init
    }
}

fn write(image: &mut [u8], at: usize, bytes: &[u8]) -> Result<()> {
    let dst = at
        .checked_add(bytes.len())
        .and_then(|e| image.get_mut(at..e))
        .ok_or_else(|| {
            Error::new(
                Status::Internal,
                format!("cubin relocate: offset {at:#x} outside the image"),
            )
        })?;
    dst.copy_from_slice(bytes);
    Ok(())
}
