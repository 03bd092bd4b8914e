//! Relocations of the memory image: resolved at parse time ([`Module::parse`]), applied for a
//! load VA by [`Module::relocate`].

use super::elf::{bad, Rel, Sym, SHN_ABS, SHN_LORESERVE, SHN_UNDEF, STO_CUDA_MANAGED, STT_OBJECT};
use super::{
    Module, Syscall, R_CUDA_32, R_CUDA_64, R_CUDA_ABS32_HI_32, R_CUDA_ABS32_LO_32,
    R_CUDA_ABS_CALL_SM8X, R_CUDA_ABS_CALL_SM90, R_CUDA_FUNC_DESC32_HI_32, R_CUDA_FUNC_DESC32_LO_32,
    R_CUDA_G64,
};
use crate::error::{Error, Result, Status};

/// A loaded section's place in the image.
#[derive(Debug, Clone, Copy)]
pub(super) struct Placed {
    pub(super) offset: u64,
    pub(super) size: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Patch {
    /// 4 bytes at the offset.
    Abs32,
    /// 8 bytes at the offset.
    Abs64,
    /// Low 32 bits into bytes +4..+8.
    Lo32,
    /// High 32 bits into bytes +4..+8.
    Hi32,
    /// `R_CUDA_ABS47_34` (sm_8x `CALL.ABS` targets): address bits 46:0 into instruction bits
    /// 80:34; the other bits of the 16-byte instruction are kept.
    Abs47,
    /// `R_CUDA_ABS55_16_34` (sm_90 and later `CALL.ABS` targets): address bits 9:2 into
    /// instruction bits 23:16 and address bits 56:10 into instruction bits 80:34; the other
    /// bits of the 16-byte instruction are kept.
    Abs55,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Target {
    /// Offset in the image (relocated by the load VA).
    Image(u64),
    /// A `__managed__` variable at this image offset: where the loader placed it, else in the
    /// image.
    Managed(u64),
    /// Absolute value (`SHN_ABS` symbol).
    Abs(u64),
    /// The address of a syscall's implementation, known only at load.
    Import(Syscall),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Reloc {
    /// Image offset of the relocated location (`r_offset` + section offset).
    at: u64,
    pub(super) patch: Patch,
    r_type: u32,
    target: Target,
    addend: i64,
    /// Relocation section name, for messages.
    section: String,
}

impl Reloc {
    /// The syscall this relocation resolves to, if it names one.
    pub(super) fn import(&self) -> Option<Syscall> {
        match self.target {
            Target::Import(s) => Some(s),
            _ => None,
        }
    }
}

impl Module {
    #[allow(clippy::too_many_arguments)]
    pub(super) fn resolve_reloc<'n>(
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
            R_CUDA_ABS_CALL_SM8X => (Patch::Abs47, 0, 16),
            R_CUDA_ABS_CALL_SM90 => (Patch::Abs55, 0, 16),
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
                if let Some(sc) = Syscall::from_symbol(sname) {
                    return Ok(Reloc {
                        at,
                        patch,
                        r_type: r.r_type,
                        target: Target::Import(sc),
                        addend: r.r_addend,
                        section: sec.to_string(),
                    });
                }
                let what = match sname {
                    "__assert_fail" => "device-side assert through the host C library's __assert_fail (not supported by libtegragpu)",
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
                if sym.st_info & 0xf == STT_OBJECT && sym.st_other & STO_CUDA_MANAGED != 0 {
                    Target::Managed(p.offset + sym.st_value)
                } else {
                    Target::Image(p.offset + sym.st_value)
                }
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

    /// Apply the relocations to `image` (a copy of [`Module::image`]) for an image loaded at
    /// GPU VA `base_va`. `base_va` must be a multiple of [`Module::base_alignment`].
    ///
    /// Errors: [`Status::InvalidArgument`] for a wrong image length, a misaligned `base_va`, an
    /// address that overflows 64 bits with `base_va` or (for `R_CUDA_32`) does not fit 32 bits;
    /// [`Status::InvalidCubin`] when a relocation's addend takes the address out of range.
    pub fn relocate(&self, image: &mut [u8], base_va: u64) -> Result<()> {
        self.relocate_placing(image, base_va, &|_| None, &|_| None)
    }

    /// [`Module::relocate`] for a cubin that may call syscalls ([`Module::imports`]):
    /// `syscall(s)` gives the GPU address of the implementation of `s`.
    ///
    /// Errors as [`Module::relocate`], and [`Status::NotSupported`] for a syscall `syscall`
    /// has no address for.
    pub fn relocate_with(
        &self,
        image: &mut [u8],
        base_va: u64,
        syscall: &dyn Fn(Syscall) -> Option<u64>,
    ) -> Result<()> {
        self.relocate_placing(image, base_va, syscall, &|_| None)
    }

    /// [`Module::relocate_with`] for a loader that places `__managed__` variables
    /// ([`GlobalSymbol::managed`]) outside the image: `managed(offset)` gives the GPU address of
    /// the variable at image `offset`, or `None` to keep it in the image.
    pub fn relocate_placing(
        &self,
        image: &mut [u8],
        base_va: u64,
        syscall: &dyn Fn(Syscall) -> Option<u64>,
        managed: &dyn Fn(u64) -> Option<u64>,
    ) -> Result<()> {
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
            let target = match r.target {
                Target::Managed(off) => managed(off).map_or(Target::Image(off), Target::Abs),
                t => t,
            };
            let s = match target {
                Target::Image(off) | Target::Managed(off) => base_va.checked_add(off).ok_or_else(|| {
                    Error::invalid(format!(
                        "cubin relocate: {} type {:#x} at image offset {:#x}: address overflows with base VA {base_va:#x}",
                        r.section, r.r_type, r.at
                    ))
                })?,
                Target::Abs(v) => v,
                Target::Import(sc) => syscall(sc).ok_or_else(|| {
                    Error::new(
                        Status::NotSupported,
                        format!(
                            "cubin relocate: {} type {:#x} at image offset {:#x}: the code calls {} \
                             ({}), which libtegragpu provides only on the SM versions it has a \
                             built-in syscall module for",
                            r.section,
                            r.r_type,
                            r.at,
                            sc.symbol(),
                            sc.feature()
                        ),
                    )
                })?,
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
                Patch::Abs47 => patch_fields(image, at, value, 47, &[(34, 47, 0)], r)?,
                Patch::Abs55 => patch_fields(image, at, value, 57, &[(16, 8, 2), (34, 47, 10)], r)?,
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
}

/// Write call target `value` (below 2^`bits`, 4-byte aligned) into the 16-byte instruction at
/// `at`: for each `(first instruction bit, width, address shift)`, `width` bits of
/// `value >> shift`. The instruction's other bits are kept.
fn patch_fields(
    image: &mut [u8],
    at: usize,
    value: u64,
    bits: u32,
    fields: &[(u32, u32, u32)],
    r: &Reloc,
) -> Result<()> {
    if value >> bits != 0 || value & 3 != 0 {
        return Err(Error::invalid(format!(
            "cubin relocate: {} type {:#x} at image offset {:#x}: call target {value:#x} is not a 4-byte aligned {bits}-bit address",
            r.section, r.r_type, r.at
        )));
    }
    let inst = image.get(at..at + 16).ok_or_else(|| {
        Error::new(
            Status::Internal,
            format!("cubin relocate: offset {at:#x} outside the image"),
        )
    })?;
    let mut w = u128::from_le_bytes(inst.try_into().expect("16 bytes"));
    for &(first, width, shift) in fields {
        let mask = ((1u128 << width) - 1) << first;
        w = (w & !mask) | ((((value >> shift) as u128) << first) & mask);
    }
    write(image, at, &w.to_le_bytes())
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
