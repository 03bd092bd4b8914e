//! Extraction of the `.nv_fatbin` section from a host ELF object or shared library.

use super::{bad, rd_u16, rd_u32, rd_u64, NV_FATBIN_SECTION, NV_RELFATBIN_SECTION};
use crate::error::{Error, Result, Status};
use object::elf::{ELFCLASS64, ELFDATA2LSB, ELFMAG, SHF_COMPRESSED, SHN_XINDEX, SHT_NOBITS};

/// The contents of the `.nv_fatbin` section of a host ELF file (ELF64, little endian: x86-64,
/// aarch64). Errors: [`Status::InvalidCubin`] for a malformed ELF or one without CUDA code;
/// [`Status::NotSupported`] for ELF32/big-endian files and `-rdc` objects (`__nv_relfatbin`).
pub fn nv_fatbin_section(elf: &[u8]) -> Result<&[u8]> {
    if elf.len() < 64 || !elf.starts_with(&ELFMAG) {
        return Err(bad(format!(
            "not an ELF64 file ({} bytes, or no ELF magic)",
            elf.len()
        )));
    }
    if elf[4] != ELFCLASS64 || elf[5] != ELFDATA2LSB {
        return Err(Error::new(
            Status::NotSupported,
            format!(
                "host ELF class {} / data encoding {}: only ELF64 little endian (x86-64, aarch64) \
                 is read for .nv_fatbin",
                elf[4], elf[5]
            ),
        ));
    }
    let machine = rd_u16(elf, 18).unwrap_or(0);
    let shoff = rd_u64(elf, 40).unwrap_or(0);
    let shentsize = rd_u16(elf, 58).unwrap_or(0) as u64;
    let mut shnum = rd_u16(elf, 60).unwrap_or(0) as u64;
    let mut shstrndx = rd_u16(elf, 62).unwrap_or(0) as u64;
    if shoff == 0 {
        return Err(bad(format!(
            "host ELF (e_machine {machine}) has no section header table (e_shoff 0)"
        )));
    }
    if shentsize < 64 {
        return Err(bad(format!(
            "host ELF: e_shentsize {shentsize} (offset 58) is below 64"
        )));
    }
    let shdr = |i: u64| -> Result<&[u8]> {
        i.checked_mul(shentsize)
            .and_then(|o| o.checked_add(shoff))
            .and_then(|o| usize::try_from(o).ok())
            .and_then(|o| elf.get(o..o.checked_add(64)?))
            .ok_or_else(|| {
                bad(format!(
                    "host ELF: section header {i} (e_shoff {shoff:#x}, e_shentsize {shentsize}) \
                     lies outside the {:#x}-byte file",
                    elf.len()
                ))
            })
    };
    // Extended numbering: the real counts live in section header 0.
    if shnum == 0 {
        shnum = rd_u64(shdr(0)?, 32).unwrap_or(0);
    }
    if shstrndx == u64::from(SHN_XINDEX) {
        shstrndx = rd_u32(shdr(0)?, 40).unwrap_or(0) as u64;
    }
    let contents = |i: u64| -> Result<&[u8]> {
        let h = shdr(i)?;
        let ty = rd_u32(h, 4).unwrap_or(0);
        if ty == SHT_NOBITS {
            return Ok(&[]);
        }
        let off = rd_u64(h, 24).unwrap_or(0);
        let size = rd_u64(h, 32).unwrap_or(0);
        off.checked_add(size)
            .filter(|&e| e <= elf.len() as u64)
            .map(|e| &elf[off as usize..e as usize])
            .ok_or_else(|| {
                bad(format!(
                    "host ELF: section {i} contents {off:#x}+{size:#x} lie outside the \
                     {:#x}-byte file",
                    elf.len()
                ))
            })
    };
    if shstrndx >= shnum {
        return Err(bad(format!(
            "host ELF: e_shstrndx {shstrndx} is not below the section count {shnum}"
        )));
    }
    let names = contents(shstrndx)?;
    let mut rel = false;
    for i in 0..shnum {
        let h = shdr(i)?;
        let name_off = rd_u32(h, 0).unwrap_or(0) as usize;
        let name = names
            .get(name_off..)
            .map(|s| &s[..s.iter().position(|&c| c == 0).unwrap_or(s.len())])
            .unwrap_or(&[]);
        if name == NV_FATBIN_SECTION.as_bytes() {
            let c = contents(i)?;
            if rd_u64(h, 8).unwrap_or(0) & u64::from(SHF_COMPRESSED) != 0 {
                return Err(Error::new(
                    Status::NotSupported,
                    "host ELF: the .nv_fatbin section is compressed (SHF_COMPRESSED)",
                ));
            }
            return Ok(c);
        }
        rel |= name == NV_RELFATBIN_SECTION.as_bytes();
    }
    if rel {
        return Err(Error::new(
            Status::NotSupported,
            "host ELF holds only relocatable device code (__nv_relfatbin, built with -rdc): its \
             cubins need a device link first (nvcc -dlink, or build without -rdc)",
        ));
    }
    Err(bad(format!(
        "host ELF (e_machine {machine}) has no .nv_fatbin section: it holds no CUDA device code"
    )))
}
