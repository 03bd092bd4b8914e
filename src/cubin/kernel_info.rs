//! Per-kernel information: the kernel's `.nv.info.<name>` attributes, shared memory, parameter
//! layout, constant banks and refusals (surface use).

use super::elf::{bad, Elf, Sym, SHT_CUDA_INFO, SHT_NOBITS, SHT_PROGBITS};
use super::info::Attr;
use super::parse::{dims, ModuleInfo};
use super::relocations::Placed;
use super::{info, sass, KernelInfo, Module, ParamInfo, MAX_CBANK_BYTES, SHARED_RESERVED_BYTES};
use crate::error::{Error, Result, Status};

impl Module {
    /// Why the kernel cannot run if it (or a device function of the module) executes surface
    /// instructions: surface objects need CUDA arrays, which libtegragpu does not provide.
    /// (Texture instructions read texture objects, `crate::core::Texture`.)
    fn surface_use(
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
        if let Some((off, m)) = sass::first_surface_instruction(code, sm) {
            return Ok(Some(format!(
                "kernel {name} uses surface objects ({m} at {:#x} in {}), which \
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
            if let Some((_, m)) = sass::first_surface_instruction(elf.section_data(i)?, sm) {
                return Ok(Some(format!(
                    "kernel {name}: device function {f} of its module uses surface \
                     objects ({m}), which libtegragpu does not support"
                )));
            }
        }
        Ok(None)
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn kernel_info(
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
        if sym.st_size == 0 || code_end.is_none_or(|e| e > tp.size) {
            return Err(bad(format!(
                "kernel {name}: code {:#x}+{:#x} is empty or outside its {:#x}-byte section {}",
                sym.st_value, sym.st_size, tp.size, names[ti]
            )));
        }
        let symbol_index = si as u32;

        // Registers.
        let sh_info_regs = tsec.sh_info >> 24;
        let register_count = match minfo.regcount.get(&symbol_index) {
            // The two differ in code built with debug information (EIATTR_REGCOUNT counts the
            // registers of the functions the kernel calls); the kernel needs the larger.
            Some(&r) => r.max(sh_info_regs),
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
        let mut refused = Self::surface_use(elf, names, ti, sym, name, sm)?;
        for (i, s) in elf.sections.iter().enumerate() {
            let nm = names[i];
            if s.sh_info as usize == ti && s.sh_type == SHT_CUDA_INFO && nm.starts_with(".nv.info.")
            {
                let attrs = info::parse(elf.section_data(i)?, nm)?;
                // Undefined functions the kernel calls: only the syscalls the library
                // implements (printf, assert) resolve at load.
                for a in &attrs {
                    let why = match a.attr {
                        info::EIATTR_EXTERNS
                            if !a.payload.chunks(4).all(|c| {
                                c.len() == 4
                                    && minfo
                                        .syscall_syms
                                        .contains(&u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                            }) =>
                        {
                            Some((
                                "EIATTR_EXTERNS",
                                "unresolved external functions (link with nvlink / -dlink first)",
                            ))
                        }
                        info::EIATTR_SYSCALL_OFFSETS if minfo.syscall_syms.is_empty() => Some((
                            "EIATTR_SYSCALL_OFFSETS",
                            "driver syscalls other than printf and assert",
                        )),
                        _ => None,
                    };
                    if let (None, Some((attr, what))) = (&refused, why) {
                        refused = Some(format!(
                            "kernel {name} needs {what} ({attr} in {nm}), which libtegragpu does not support"
                        ));
                    }
                }
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
        let mut cluster_dims = None;
        let mut max_cluster_rank = None;
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
                info::EIATTR_CTA_PER_CLUSTER => cluster_dims = Some(dims(a, sec)?),
                info::EIATTR_MAX_CLUSTER_RANK => {
                    max_cluster_rank = Some(if a.payload.is_empty() {
                        u32::from(a.value)
                    } else {
                        a.u32_at(0, sec)?
                    })
                }
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
            if p.size == 0 || p.offset.checked_add(p.size).is_none_or(|e| e > param_bytes) {
                return Err(bad(format!(
                    "kernel {name}: parameter {} at {:#x}+{:#x} is empty or outside the {:#x} parameter bytes",
                    p.ordinal, p.offset, p.size, param_bytes
                )));
            }
        }
        let needed = (param_base as u64 + param_bytes as u64).max(cbank0_section);
        let cbank0 = needed.checked_next_multiple_of(16).unwrap_or(u64::MAX);
        if cbank0 > MAX_CBANK_BYTES {
            return Err(bad(format!(
                "kernel {name}: constant bank 0 needs {cbank0:#x} bytes (param base {param_base:#x} + \
                 {param_bytes:#x}, section {cbank0_section:#x}), more than 64 KiB"
            )));
        }
        // ptxas writes 0xffffffff when it cannot bound the stack (recursion): such a kernel
        // gets the device's stack limit, as one whose minimum is 0.
        let local = match minfo.min_stack.get(&symbol_index).copied() {
            Some(u32::MAX) | None => 0,
            Some(v) => v,
        };
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
            cluster_dims,
            max_cluster_rank,
            param_base,
            param_bytes,
            params,
            cbank0_size: cbank0 as u32,
            cbank2,
            symbol_index,
            refused,
            callee_register_count: 0,
        })
    }
}
