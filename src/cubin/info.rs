//! `.nv.info` / `.nv.info.<fn>` attribute records (EIATTR), gpu-programming-interface.md §6.4.

use super::elf::{bad, rd_u16, rd_u32};
use crate::error::Result;

/// `EIFMT_NVAL`: no payload.
pub const EIFMT_NVAL: u8 = 1;
/// `EIFMT_BVAL`: value in the 16-bit field.
pub const EIFMT_BVAL: u8 = 2;
/// `EIFMT_HVAL`: 16-bit value in the 16-bit field.
pub const EIFMT_HVAL: u8 = 3;
/// `EIFMT_SVAL`: the 16-bit field is the payload length; the payload follows.
pub const EIFMT_SVAL: u8 = 4;

pub const EIATTR_MAX_THREADS: u8 = 0x05;
pub const EIATTR_PARAM_CBANK: u8 = 0x0a;
pub const EIATTR_EXTERNS: u8 = 0x0f;
pub const EIATTR_REQNTID: u8 = 0x10;
pub const EIATTR_FRAME_SIZE: u8 = 0x11;
pub const EIATTR_MIN_STACK_SIZE: u8 = 0x12;
pub const EIATTR_KPARAM_INFO: u8 = 0x17;
pub const EIATTR_CBANK_PARAM_SIZE: u8 = 0x19;
pub const EIATTR_COOP_GROUP_INSTR_OFFSETS: u8 = 0x28;
pub const EIATTR_COOP_GROUP_MASK_REGIDS: u8 = 0x29;
pub const EIATTR_REGCOUNT: u8 = 0x2f;
pub const EIATTR_CTA_PER_CLUSTER: u8 = 0x3d;
pub const EIATTR_EXPLICIT_CLUSTER: u8 = 0x3e;
pub const EIATTR_MAX_CLUSTER_RANK: u8 = 0x3f;
pub const EIATTR_SYSCALL_OFFSETS: u8 = 0x46;
pub const EIATTR_NUM_BARRIERS: u8 = 0x4c;

/// Attributes whose presence means the kernel needs a launch mode or runtime service that
/// libtegragpu does not provide, with the reason given in errors.
pub const UNSUPPORTED: &[(u8, &str, &str)] = &[
    (
        EIATTR_EXTERNS,
        "EIATTR_EXTERNS",
        "unresolved external symbols",
    ),
    (
        EIATTR_COOP_GROUP_INSTR_OFFSETS,
        "EIATTR_COOP_GROUP_INSTR_OFFSETS",
        "cooperative launch (grid sync)",
    ),
    (
        EIATTR_COOP_GROUP_MASK_REGIDS,
        "EIATTR_COOP_GROUP_MASK_REGIDS",
        "cooperative launch (grid sync)",
    ),
    (
        EIATTR_CTA_PER_CLUSTER,
        "EIATTR_CTA_PER_CLUSTER",
        "thread-block clusters",
    ),
    (
        EIATTR_EXPLICIT_CLUSTER,
        "EIATTR_EXPLICIT_CLUSTER",
        "thread-block clusters",
    ),
    (
        EIATTR_MAX_CLUSTER_RANK,
        "EIATTR_MAX_CLUSTER_RANK",
        "thread-block clusters",
    ),
    (
        EIATTR_SYSCALL_OFFSETS,
        "EIATTR_SYSCALL_OFFSETS",
        "device syscalls (printf/malloc)",
    ),
];

/// One attribute record.
#[derive(Debug, Clone, Copy)]
pub struct Attr<'a> {
    pub format: u8,
    pub attr: u8,
    /// The 16-bit value (BVAL/HVAL) or payload length (SVAL).
    pub value: u16,
    /// SVAL payload (empty otherwise).
    pub payload: &'a [u8],
    /// Offset of the record in its section (for messages).
    pub offset: usize,
}

impl Attr<'_> {
    /// Little-endian u32 at `off` in the payload, or an error naming the attribute.
    pub fn u32_at(&self, off: usize, section: &str) -> Result<u32> {
        rd_u32(self.payload, off).ok_or_else(|| self.short(section))
    }
    /// Little-endian u16 at `off` in the payload, or an error naming the attribute.
    pub fn u16_at(&self, off: usize, section: &str) -> Result<u16> {
        rd_u16(self.payload, off).ok_or_else(|| self.short(section))
    }
    fn short(&self, section: &str) -> crate::Error {
        bad(format!(
            "{section}: attribute {:#04x} at offset {:#x} has a {}-byte payload, too short",
            self.attr,
            self.offset,
            self.payload.len()
        ))
    }
    /// Require format `fmt`.
    pub fn expect_format(&self, fmt: u8, section: &str) -> Result<()> {
        if self.format == fmt {
            Ok(())
        } else {
            Err(bad(format!(
                "{section}: attribute {:#04x} at offset {:#x} has format {}, expected {fmt}",
                self.attr, self.offset, self.format
            )))
        }
    }
}

/// Split a `.nv.info*` section into records. Errors on unknown formats and on records that run
/// past the end of the section.
pub fn parse<'a>(data: &'a [u8], section: &str) -> Result<Vec<Attr<'a>>> {
    let mut out = Vec::new();
    let mut off = 0usize;
    while off < data.len() {
        if data.len() - off < 4 {
            return Err(bad(format!(
                "{section}: {} trailing bytes at offset {off:#x}, less than a 4-byte record header",
                data.len() - off
            )));
        }
        let format = data[off];
        let attr = data[off + 1];
        let value = rd_u16(data, off + 2).unwrap_or(0);
        let payload: &[u8] = match format {
            EIFMT_NVAL | EIFMT_BVAL | EIFMT_HVAL => &[],
            EIFMT_SVAL => data.get(off + 4..off + 4 + value as usize).ok_or_else(|| {
                bad(format!(
                    "{section}: attribute {attr:#04x} at offset {off:#x} has a {value}-byte payload \
                     that runs past the {:#x}-byte section",
                    data.len()
                ))
            })?,
            f => {
                return Err(bad(format!(
                    "{section}: attribute {attr:#04x} at offset {off:#x} has unknown format {f}"
                )))
            }
        };
        out.push(Attr {
            format,
            attr,
            value,
            payload,
            offset: off,
        });
        off += 4 + payload.len();
    }
    Ok(out)
}
