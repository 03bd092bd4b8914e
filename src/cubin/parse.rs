//! [`Module::parse`]: the image layout, the module `.nv.info` and the symbol walk that finds
//! kernels and variables.

use super::elf::{
    self, bad, Elf, Sym, SHN_LORESERVE, SHN_UNDEF, SHT_CUDA_INFO, SHT_NOBITS, SHT_PROGBITS,
};
use super::elf::{
    SHT_REL, SHT_RELA, SHT_SYMTAB, STO_CUDA_ENTRY, STO_CUDA_MANAGED, STT_FUNC, STT_OBJECT,
};
use super::info::{self, Attr};
use super::relocations::Placed;
use super::{
    FunctionSymbol, GlobalSymbol, KernelInfo, Module, IMAGE_ALIGN, IMAGE_SLACK, MAX_CBANK_BYTES,
    MAX_IMAGE_BYTES, R_CUDA_ABS_CALL_SM8X, R_CUDA_ABS_CALL_SM90,
};
use crate::error::{Error, Result, Status};
use std::collections::HashMap;

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
pub(super) struct ModuleInfo {
    pub(super) regcount: HashMap<u32, u32>,
    pub(super) frame_size: HashMap<u32, u32>,
    pub(super) min_stack: HashMap<u32, u32>,
    /// Symbol indices of undefined symbols naming syscalls (`vprintf`, `__assertfail`): a
    /// kernel whose `EIATTR_EXTERNS` lists only these runs.
    pub(super) syscall_syms: Vec<u32>,
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

pub(super) fn dims(a: &Attr<'_>, section: &str) -> Result<[u32; 3]> {
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
        if elf.header.e_type != object::elf::ET_EXEC {
            return Err(Error::new(
                if elf.header.e_type == object::elf::ET_REL {
                    Status::NotSupported
                } else {
                    Status::InvalidCubin
                },
                format!(
                    "e_type {} is not ET_EXEC ({}); only final (linked) cubins can be loaded",
                    elf.header.e_type,
                    object::elf::ET_EXEC
                ),
            ));
        }

        let n = elf.sections.len();
        let mut names = Vec::with_capacity(n);
        for i in 0..n {
            names.push(elf.section_name(i)?);
        }

        // Symbol table (exactly one). Relocations refer to it whatever their sh_link says: the
        // cubins of cuBLAS 13.1 link theirs to section 5 (.nv.info) where the symbol table is
        // section 3, and NVIDIA's libcuda 580 loads them.
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

        // Absolute calls with an immediate address (CALL.ABS: -G builds, calls between
        // device-linked files): (section holding the call, symbol index of the callee), for the
        // callee's registers.
        let mut call_edges: Vec<(usize, u32)> = Vec::new();
        for i in 0..n {
            let s = elf.sections[i];
            if s.sh_type != SHT_REL && s.sh_type != SHT_RELA {
                continue;
            }
            for r in elf.relocations(i)? {
                if r.r_type != R_CUDA_ABS_CALL_SM8X && r.r_type != R_CUDA_ABS_CALL_SM90 {
                    continue;
                }
                let Some(sym) = syms.get(r.r_sym as usize) else {
                    continue; // reported when the relocation is resolved
                };
                let t = sym.st_shndx as usize;
                if t < n && sym.st_shndx != SHN_UNDEF && sym.st_shndx < SHN_LORESERVE {
                    call_edges.push((s.sh_info as usize, r.r_sym));
                }
            }
        }
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
            let offset = end
                .checked_next_multiple_of(align)
                .ok_or_else(|| bad("image size overflows"))?;
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
        let total = end
            .checked_next_multiple_of(IMAGE_ALIGN)
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
            for (k, r) in elf.relocations(i)?.into_iter().enumerate() {
                relocs.push(Self::resolve_reloc(
                    &r, k, names[i], names[tgt], tp, &syms, &placed, &names, &sym_name,
                )?);
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

        for (si, sym) in syms.iter().enumerate() {
            if sym.st_shndx == SHN_UNDEF
                && sym_name(si, sym).is_ok_and(|n| super::Syscall::from_symbol(n).is_some())
            {
                minfo.syscall_syms.push(si as u32);
            }
        }

        // Kernels.
        let mut kernels: Vec<KernelInfo> = Vec::new();
        for (si, sym) in syms.iter().enumerate() {
            if sym.st_info & 0xf != STT_FUNC || sym.st_other & STO_CUDA_ENTRY == 0 {
                continue;
            }
            let name = sym_name(si, sym)?;
            let mut k = Self::kernel_info(&elf, &names, &placed, &minfo, si, sym, name, sm)?;
            // The registers of the functions the kernel reaches through absolute calls.
            let mut seen = vec![sym.st_shndx as usize];
            let mut todo = seen.clone();
            while let Some(sec) = todo.pop() {
                for &(from, callee) in &call_edges {
                    if from != sec {
                        continue;
                    }
                    if let Some(&r) = minfo.regcount.get(&callee) {
                        k.callee_register_count = k.callee_register_count.max(r);
                    }
                    let t = syms.get(callee as usize).map(|c| c.st_shndx as usize);
                    if let Some(t) = t.filter(|t| !seen.contains(t)) {
                        seen.push(t);
                        todo.push(t);
                    }
                }
            }
            if kernels.iter().any(|o| o.name == k.name) {
                return Err(bad(format!("kernel {name} defined twice")));
            }
            kernels.push(k);
        }

        // __device__ / __constant__ variables.
        let mut globals = Vec::new();
        // The loaded section a defined symbol lies in: (index, placement).
        let loaded_section = |sym: &Sym| -> Option<(usize, Placed)> {
            if sym.st_shndx == SHN_UNDEF || sym.st_shndx >= SHN_LORESERVE {
                return None;
            }
            let i = sym.st_shndx as usize;
            placed.get(i).copied().flatten().map(|p| (i, p))
        };
        for (si, sym) in syms.iter().enumerate() {
            if sym.st_info & 0xf != STT_OBJECT {
                continue;
            }
            let Some((i, p)) = loaded_section(sym) else {
                continue;
            };
            if !matches!(
                classify(names[i], elf.sections[i].sh_type),
                Some(Group::Global | Group::GlobalInit | Group::Constant3)
            ) {
                continue;
            }
            let name = sym_name(si, sym)?;
            if sym
                .st_value
                .checked_add(sym.st_size)
                .is_none_or(|e| e > p.size)
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
                managed: sym.st_other & STO_CUDA_MANAGED != 0,
            });
        }

        // Device functions (non-kernel STT_FUNC symbols in loaded .text sections).
        let mut functions = Vec::new();
        for (si, sym) in syms.iter().enumerate() {
            if sym.st_info & 0xf != STT_FUNC || sym.st_other & STO_CUDA_ENTRY != 0 {
                continue;
            }
            let Some((i, p)) = loaded_section(sym) else {
                continue;
            };
            if !names[i].starts_with(".text.") || sym.st_value >= p.size {
                continue;
            }
            let name = sym_name(si, sym)?;
            functions.push(FunctionSymbol {
                name: name.to_string(),
                offset: p.offset + sym.st_value,
                register_count: minfo.regcount.get(&(si as u32)).copied(),
                frame_size: minfo.frame_size.get(&(si as u32)).copied(),
            });
        }
        let imports = relocs
            .iter()
            .filter_map(|r| r.import())
            .fold(0u8, |m, s| m | s.bit());

        // Every constant bank a section names (`.nv.constantN` or `.nv.constantN.<fn>`).
        let named_banks = names.iter().fold(0u32, |m, n| {
            let digits: String = n
                .strip_prefix(".nv.constant")
                .map(|r| r.chars().take_while(char::is_ascii_digit).collect())
                .unwrap_or_default();
            match digits.parse::<u32>() {
                Ok(b) if b < 32 => m | 1 << b,
                _ => m,
            }
        });
        Ok(Module {
            sm,
            globals,
            functions,
            named_banks,
            imports,
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
}
