//! Bounds-checked reading of the ELF64 little-endian structures a cubin uses: the file header,
//! section headers, symbols and REL/RELA entries, laid out by the `object` crate's ELF
//! definitions. Every accessor returns an [`Error`](crate::Error) with status `InvalidCubin`
//! instead of panicking.

use crate::error::{Error, Result, Status};
use object::elf;
use object::LittleEndian as LE;

pub use object::elf::{
    EM_CUDA, SHN_ABS, SHN_LORESERVE, SHN_UNDEF, SHT_NOBITS, SHT_NULL, SHT_PROGBITS, SHT_REL,
    SHT_RELA, SHT_STRTAB, SHT_SYMTAB, STT_FUNC, STT_OBJECT,
};

// CUDA values that `object::elf` does not define.

/// `EI_OSABI` of old-style (ABI version 7) cubins: SM in `e_flags` bits 7:0.
pub const ELFOSABI_CUDA: u8 = 0x33;
/// `EI_OSABI` of new-style (ABI version 8, CUDA ≥ 12.8 for sm_100+) cubins: SM in bits 15:8.
pub const ELFOSABI_CUDA_V2: u8 = 0x41;
/// `SHT_CUDA_INFO` (`.nv.info`, `.nv.info.<fn>`): the first processor-specific section type.
pub const SHT_CUDA_INFO: u32 = object::elf::SHT_LOPROC;
/// `st_other` bit marking a kernel entry point (STO_CUDA_ENTRY).
pub const STO_CUDA_ENTRY: u8 = 0x10;
/// `st_other` bit marking a `__managed__` variable (STO_CUDA_MANAGED).
pub const STO_CUDA_MANAGED: u8 = 0x04;

const EHDR_SIZE: usize = std::mem::size_of::<elf::FileHeader64<LE>>();
const SHDR_SIZE: usize = std::mem::size_of::<elf::SectionHeader64<LE>>();
const SYM_SIZE: usize = std::mem::size_of::<elf::Sym64<LE>>();

pub(crate) fn bad(msg: impl Into<String>) -> Error {
    Error::new(Status::InvalidCubin, msg)
}

/// Bounds-checked slice `data[off..off+len]`, with `what` naming the structure in errors.
pub(crate) fn slice<'a>(
    data: &'a [u8],
    off: u64,
    len: u64,
    what: &dyn Fn() -> String,
) -> Result<&'a [u8]> {
    let end = off.checked_add(len);
    match end {
        Some(end) if end <= data.len() as u64 => Ok(&data[off as usize..end as usize]),
        _ => Err(bad(format!(
            "{}: bytes {off:#x}+{len:#x} lie outside the {:#x}-byte buffer",
            what(),
            data.len()
        ))),
    }
}

pub(crate) fn rd_u16(b: &[u8], off: usize) -> Option<u16> {
    b.get(off..off.checked_add(2)?)
        .map(|s| u16::from_le_bytes([s[0], s[1]]))
}
pub(crate) fn rd_u32(b: &[u8], off: usize) -> Option<u32> {
    b.get(off..off.checked_add(4)?)
        .map(|s| u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
}

/// The fields of the ELF file header a cubin loader needs.
#[derive(Debug, Clone, Copy)]
pub struct Header {
    pub osabi: u8,
    pub abi_version: u8,
    pub e_type: u16,
    pub e_machine: u16,
    pub e_flags: u32,
    pub e_shoff: u64,
    pub e_shnum: u16,
    pub e_shstrndx: u16,
}

/// One section header (`Elf64_Shdr`).
#[derive(Debug, Clone, Copy)]
pub struct Shdr {
    pub sh_name: u32,
    pub sh_type: u32,
    pub sh_flags: u64,
    pub sh_offset: u64,
    pub sh_size: u64,
    pub sh_link: u32,
    pub sh_info: u32,
    pub sh_addralign: u64,
    pub sh_entsize: u64,
}

/// One symbol (`Elf64_Sym`).
#[derive(Debug, Clone, Copy)]
pub struct Sym {
    pub st_name: u32,
    pub st_info: u8,
    pub st_other: u8,
    pub st_shndx: u16,
    pub st_value: u64,
    pub st_size: u64,
}

/// One relocation (`Elf64_Rel` with addend 0, or `Elf64_Rela`).
#[derive(Debug, Clone, Copy)]
pub struct Rel {
    pub r_offset: u64,
    pub r_sym: u32,
    pub r_type: u32,
    pub r_addend: i64,
}

/// A parsed ELF64 LE file: header plus validated section table.
pub struct Elf<'a> {
    pub data: &'a [u8],
    pub header: Header,
    pub sections: Vec<Shdr>,
    shstrtab: &'a [u8],
}

impl<'a> Elf<'a> {
    /// Parse the header and the section table. Checks the magic, class, byte order, machine,
    /// that the section table and every section with file contents lie inside `data`, and the
    /// section-name string table.
    pub fn parse(data: &'a [u8]) -> Result<Self> {
        if data.len() < EHDR_SIZE {
            return Err(bad(format!(
                "cubin is {} bytes, shorter than the 64-byte ELF64 header",
                data.len()
            )));
        }
        if !data.starts_with(&elf::ELFMAG) {
            return Err(bad(format!(
                "not an ELF file: magic {:02x} {:02x} {:02x} {:02x}, expected 7f 45 4c 46",
                data[0], data[1], data[2], data[3]
            )));
        }
        if data[4] != elf::ELFCLASS64 {
            return Err(bad(format!(
                "ELF class {} is not ELFCLASS64 ({})",
                data[4],
                elf::ELFCLASS64
            )));
        }
        if data[5] != elf::ELFDATA2LSB {
            return Err(bad(format!(
                "ELF data encoding {} is not ELFDATA2LSB ({})",
                data[5],
                elf::ELFDATA2LSB
            )));
        }
        // The ELF structures themselves are the `object` crate's (byte order and layout from its
        // definitions); the checks and messages around them are ours.
        let (fh, _) = object::pod::from_bytes::<elf::FileHeader64<LE>>(data)
            .map_err(|_| bad("cubin is too short for the ELF64 header"))?;
        let header = Header {
            osabi: fh.e_ident.os_abi,
            abi_version: fh.e_ident.abi_version,
            e_type: fh.e_type.get(LE),
            e_machine: fh.e_machine.get(LE),
            e_flags: fh.e_flags.get(LE),
            e_shoff: fh.e_shoff.get(LE),
            e_shnum: fh.e_shnum.get(LE),
            e_shstrndx: fh.e_shstrndx.get(LE),
        };
        if header.e_machine != EM_CUDA {
            return Err(bad(format!(
                "e_machine {} is not EM_CUDA ({EM_CUDA}); this is not a CUDA cubin",
                header.e_machine
            )));
        }
        let shentsize = fh.e_shentsize.get(LE);
        if shentsize as usize != SHDR_SIZE {
            return Err(bad(format!("e_shentsize {shentsize} is not {SHDR_SIZE}")));
        }
        if header.e_shnum == 0 {
            return Err(bad(format!(
                "e_shnum is 0 (e_shoff {:#x}): no sections, or an extended section count, \
                 which cubins do not use",
                header.e_shoff
            )));
        }
        let table = slice(
            data,
            header.e_shoff,
            header.e_shnum as u64 * SHDR_SIZE as u64,
            &|| {
                format!(
                    "section header table (e_shoff {:#x}, e_shnum {})",
                    header.e_shoff, header.e_shnum
                )
            },
        )?;
        let raw = object::pod::slice_from_all_bytes::<elf::SectionHeader64<LE>>(table)
            .map_err(|_| bad("section header table is not a whole number of entries"))?;
        let mut sections = Vec::with_capacity(raw.len());
        for (i, r) in raw.iter().enumerate() {
            let s = Shdr {
                sh_name: r.sh_name.get(LE),
                sh_type: r.sh_type.get(LE),
                sh_flags: r.sh_flags.get(LE),
                sh_offset: r.sh_offset.get(LE),
                sh_size: r.sh_size.get(LE),
                sh_link: r.sh_link.get(LE),
                sh_info: r.sh_info.get(LE),
                sh_addralign: r.sh_addralign.get(LE),
                sh_entsize: r.sh_entsize.get(LE),
            };
            if s.sh_type != SHT_NULL && s.sh_type != SHT_NOBITS {
                slice(data, s.sh_offset, s.sh_size, &|| {
                    format!("section {i} contents")
                })?;
            }
            sections.push(s);
        }
        let si = header.e_shstrndx as usize;
        let shstr = sections.get(si).copied().ok_or_else(|| {
            bad(format!(
                "e_shstrndx {si} is not a section (e_shnum {})",
                header.e_shnum
            ))
        })?;
        if shstr.sh_type != SHT_STRTAB {
            return Err(bad(format!(
                "e_shstrndx {si} names a section of type {:#x}, not SHT_STRTAB",
                shstr.sh_type
            )));
        }
        let shstrtab = slice(data, shstr.sh_offset, shstr.sh_size, &|| {
            "section name table".into()
        })?;
        Ok(Elf {
            data,
            header,
            sections,
            shstrtab,
        })
    }

    /// The section header at `idx`.
    pub fn section(&self, idx: usize) -> Result<&Shdr> {
        self.sections.get(idx).ok_or_else(|| {
            bad(format!(
                "section index {idx} out of range (e_shnum {})",
                self.sections.len()
            ))
        })
    }

    /// The name of section `idx`.
    pub fn section_name(&self, idx: usize) -> Result<&'a str> {
        let s = self.section(idx)?;
        cstr(self.shstrtab, s.sh_name as u64)
            .map_err(|e| bad(format!("name of section {idx}: {e}")))
    }

    /// The file contents of section `idx` (empty for NOBITS).
    pub fn section_data(&self, idx: usize) -> Result<&'a [u8]> {
        let s = *self.section(idx)?;
        if s.sh_type == SHT_NOBITS || s.sh_type == SHT_NULL {
            return Ok(&[]);
        }
        slice(self.data, s.sh_offset, s.sh_size, &|| {
            format!("section {idx} contents")
        })
    }

    /// All symbols of the symbol table at section `symtab_idx`, with its string table.
    pub fn symbols(&self, symtab_idx: usize) -> Result<(Vec<Sym>, &'a [u8])> {
        let s = *self.section(symtab_idx)?;
        if s.sh_type != SHT_SYMTAB {
            return Err(bad(format!(
                "section {symtab_idx} ({}) has type {:#x}, expected SHT_SYMTAB",
                self.section_name(symtab_idx).unwrap_or("?"),
                s.sh_type
            )));
        }
        if s.sh_entsize != SYM_SIZE as u64 || s.sh_size % SYM_SIZE as u64 != 0 {
            return Err(bad(format!(
                "symbol table section {symtab_idx}: sh_entsize {} / sh_size {:#x} do not describe \
                 {SYM_SIZE}-byte entries",
                s.sh_entsize, s.sh_size
            )));
        }
        let data = self.section_data(symtab_idx)?;
        let strtab_idx = s.sh_link as usize;
        let st = *self.section(strtab_idx)?;
        if st.sh_type != SHT_STRTAB {
            return Err(bad(format!(
                "symbol table's sh_link {strtab_idx} is not a SHT_STRTAB section"
            )));
        }
        let strtab = self.section_data(strtab_idx)?;
        let syms = object::pod::slice_from_all_bytes::<elf::Sym64<LE>>(data)
            .map_err(|_| {
                bad(format!(
                    "symbol table section {symtab_idx} is not a whole number of entries"
                ))
            })?
            .iter()
            .map(|y| Sym {
                st_name: y.st_name.get(LE),
                st_info: y.st_info,
                st_other: y.st_other,
                st_shndx: y.st_shndx.get(LE),
                st_value: y.st_value.get(LE),
                st_size: y.st_size.get(LE),
            })
            .collect();
        Ok((syms, strtab))
    }

    /// The entries of a SHT_REL or SHT_RELA section (REL entries get addend 0).
    pub fn relocations(&self, idx: usize) -> Result<Vec<Rel>> {
        let s = *self.section(idx)?;
        let (size, rela) = match s.sh_type {
            SHT_REL => (16usize, false),
            SHT_RELA => (24usize, true),
            t => {
                return Err(bad(format!(
                    "section {idx} has type {t:#x}, not SHT_REL/SHT_RELA"
                )))
            }
        };
        if s.sh_size % size as u64 != 0 || (s.sh_entsize != 0 && s.sh_entsize != size as u64) {
            return Err(bad(format!(
                "relocation section {idx} ({}): sh_size {:#x} / sh_entsize {} do not describe \
                 {size}-byte entries",
                self.section_name(idx).unwrap_or("?"),
                s.sh_size,
                s.sh_entsize
            )));
        }
        let data = self.section_data(idx)?;
        let whole = || {
            bad(format!(
                "relocation section {idx} is not a whole number of entries"
            ))
        };
        if rela {
            Ok(object::pod::slice_from_all_bytes::<elf::Rela64<LE>>(data)
                .map_err(|_| whole())?
                .iter()
                .map(|r| Rel {
                    r_offset: r.r_offset.get(LE),
                    r_sym: r.r_sym(LE, false),
                    r_type: r.r_type(LE, false),
                    r_addend: r.r_addend.get(LE),
                })
                .collect())
        } else {
            Ok(object::pod::slice_from_all_bytes::<elf::Rel64<LE>>(data)
                .map_err(|_| whole())?
                .iter()
                .map(|r| Rel {
                    r_offset: r.r_offset.get(LE),
                    r_sym: r.r_sym(LE),
                    r_type: r.r_type(LE),
                    r_addend: 0,
                })
                .collect())
        }
    }
}

/// The NUL-terminated UTF-8 string at `off` in `table`.
pub fn cstr(table: &[u8], off: u64) -> std::result::Result<&str, String> {
    let rest = usize::try_from(off)
        .ok()
        .and_then(|o| table.get(o..))
        .ok_or_else(|| {
            format!(
                "string offset {off:#x} outside the {:#x}-byte string table",
                table.len()
            )
        })?;
    let end = rest
        .iter()
        .position(|&c| c == 0)
        .ok_or_else(|| format!("string at offset {off:#x} is not NUL-terminated"))?;
    std::str::from_utf8(&rest[..end]).map_err(|_| format!("string at offset {off:#x} is not UTF-8"))
}
