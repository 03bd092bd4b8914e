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

pub const EIATTR_CTAIDZ_USED: u8 = 0x04;
pub const EIATTR_MAX_THREADS: u8 = 0x05;
pub const EIATTR_PARAM_CBANK: u8 = 0x0a;
pub const EIATTR_EXTERNS: u8 = 0x0f;
pub const EIATTR_REQNTID: u8 = 0x10;
pub const EIATTR_FRAME_SIZE: u8 = 0x11;
pub const EIATTR_MIN_STACK_SIZE: u8 = 0x12;
pub const EIATTR_KPARAM_INFO: u8 = 0x17;
pub const EIATTR_CBANK_PARAM_SIZE: u8 = 0x19;
pub const EIATTR_MAXREG_COUNT: u8 = 0x1b;
pub const EIATTR_COOP_GROUP_INSTR_OFFSETS: u8 = 0x28;
pub const EIATTR_COOP_GROUP_MASK_REGIDS: u8 = 0x29;
pub const EIATTR_REGCOUNT: u8 = 0x2f;
pub const EIATTR_CTA_PER_CLUSTER: u8 = 0x3d;
pub const EIATTR_EXPLICIT_CLUSTER: u8 = 0x3e;
pub const EIATTR_MAX_CLUSTER_RANK: u8 = 0x3f;
pub const EIATTR_KPARAM_INFO_V2: u8 = 0x45;
pub const EIATTR_SYSCALL_OFFSETS: u8 = 0x46;
pub const EIATTR_NUM_BARRIERS: u8 = 0x4c;

/// How the loader treats an attribute.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Handling {
    /// Read and honoured: it changes the QMD, constant bank 0, the parameter layout, local
    /// memory or a launch check.
    Used,
    /// Information for tools (debuggers, profilers, the linker) or for patches the driver applies
    /// only on other GPUs; the kernel runs correctly without acting on it.
    Ignored,
    /// The kernel needs a feature libtegragpu does not provide: `tg_module_get_kernel` refuses
    /// it with `TG_ERROR_NOT_SUPPORTED` naming the feature (the rest of the module loads).
    Refused(&'static str),
}

/// Every `.nv.info` attribute id that nvcc / nvrtc 11.4 … 13.x are known to emit, its name and
/// how the loader handles it (docs/cuda-support.md has the same table with the reasons).
/// Attributes not listed are ignored.
pub const ATTRIBUTES: &[(u8, &str, Handling)] = &[
    (0x01, "EIATTR_PAD", Handling::Ignored),
    (0x02, "EIATTR_IMAGE_SLOT", Handling::Ignored),
    (0x03, "EIATTR_JUMPTABLE_RELOCS", Handling::Ignored),
    (0x04, "EIATTR_CTAIDZ_USED", Handling::Ignored),
    (0x05, "EIATTR_MAX_THREADS", Handling::Used),
    (0x06, "EIATTR_IMAGE_OFFSET", Handling::Ignored),
    (0x07, "EIATTR_IMAGE_SIZE", Handling::Ignored),
    (
        0x08,
        "EIATTR_TEXTURE_NORMALIZED",
        Handling::Refused("texture references (texture<> bound textures, removed in CUDA 12)"),
    ),
    (
        0x09,
        "EIATTR_SAMPLER_INIT",
        Handling::Refused("samplers of texture references"),
    ),
    (0x0a, "EIATTR_PARAM_CBANK", Handling::Used),
    (
        0x0b,
        "EIATTR_SMEM_PARAM_OFFSETS",
        Handling::Refused("parameters in shared memory"),
    ),
    (0x0c, "EIATTR_CBANK_PARAM_OFFSETS", Handling::Ignored),
    (0x0d, "EIATTR_SYNC_STACK", Handling::Ignored),
    (
        0x0e,
        "EIATTR_TEXID_SAMPID_MAP",
        Handling::Refused("texture references (texture<> bound textures, removed in CUDA 12)"),
    ),
    // Checked by the kernel's loader: only the syscalls the library implements.
    (0x0f, "EIATTR_EXTERNS", Handling::Used),
    (0x10, "EIATTR_REQNTID", Handling::Used),
    (0x11, "EIATTR_FRAME_SIZE", Handling::Used),
    (0x12, "EIATTR_MIN_STACK_SIZE", Handling::Used),
    (
        0x13,
        "EIATTR_SAMPLER_FORCE_UNNORMALIZED",
        Handling::Refused("samplers of texture references"),
    ),
    (
        0x14,
        "EIATTR_BINDLESS_IMAGE_OFFSETS",
        Handling::Refused("bindless textures/surfaces"),
    ),
    (
        0x15,
        "EIATTR_BINDLESS_TEXTURE_BANK",
        Handling::Refused(
            "texture handles read from a driver constant bank (SET_BINDLESS_TEXTURE)",
        ),
    ),
    (
        0x16,
        "EIATTR_BINDLESS_SURFACE_BANK",
        Handling::Refused("surface objects"),
    ),
    (0x17, "EIATTR_KPARAM_INFO", Handling::Used),
    (
        0x18,
        "EIATTR_SMEM_PARAM_SIZE",
        Handling::Refused("parameters in shared memory"),
    ),
    (0x19, "EIATTR_CBANK_PARAM_SIZE", Handling::Used),
    (0x1a, "EIATTR_QUERY_NUMATTRIB", Handling::Ignored),
    (0x1b, "EIATTR_MAXREG_COUNT", Handling::Ignored),
    (0x1c, "EIATTR_EXIT_INSTR_OFFSETS", Handling::Ignored),
    (0x1d, "EIATTR_S2RCTAID_INSTR_OFFSETS", Handling::Ignored),
    (0x1e, "EIATTR_CRS_STACK_SIZE", Handling::Ignored),
    (
        0x1f,
        "EIATTR_NEED_CNP_WRAPPER",
        Handling::Refused("dynamic parallelism (device-side launches)"),
    ),
    (
        0x20,
        "EIATTR_NEED_CNP_PATCH",
        Handling::Refused("dynamic parallelism (device-side launches)"),
    ),
    (0x21, "EIATTR_EXPLICIT_CACHING", Handling::Ignored),
    (0x22, "EIATTR_ISTYPEP_USED", Handling::Ignored),
    (0x23, "EIATTR_MAX_STACK_SIZE", Handling::Ignored),
    (
        0x24,
        "EIATTR_SUQ_USED",
        Handling::Refused("surface queries"),
    ),
    (0x25, "EIATTR_LD_CACHEMOD_INSTR_OFFSETS", Handling::Ignored),
    (0x26, "EIATTR_LOAD_CACHE_REQUEST", Handling::Ignored),
    (0x27, "EIATTR_ATOM_SYS_INSTR_OFFSETS", Handling::Ignored),
    (0x28, "EIATTR_COOP_GROUP_INSTR_OFFSETS", Handling::Ignored),
    (0x29, "EIATTR_COOP_GROUP_MASK_REGIDS", Handling::Ignored),
    (0x2a, "EIATTR_SW1850030_WAR", Handling::Ignored),
    (0x2b, "EIATTR_WMMA_USED", Handling::Ignored),
    (0x2c, "EIATTR_HAS_PRE_V10_OBJECT", Handling::Ignored),
    (0x2d, "EIATTR_ATOMF16_EMUL_INSTR_OFFSETS", Handling::Ignored),
    (0x2e, "EIATTR_ATOM16_EMUL_INSTR_REG_MAP", Handling::Ignored),
    (0x2f, "EIATTR_REGCOUNT", Handling::Used),
    (0x30, "EIATTR_SW2393858_WAR", Handling::Ignored),
    (
        0x31,
        "EIATTR_INT_WARP_WIDE_INSTR_OFFSETS",
        Handling::Ignored,
    ),
    (0x32, "EIATTR_SHARED_SCRATCH", Handling::Ignored),
    (0x33, "EIATTR_STATISTICS", Handling::Ignored),
    (0x34, "EIATTR_INDIRECT_BRANCH_TARGETS", Handling::Ignored),
    (0x35, "EIATTR_SW2861232_WAR", Handling::Ignored),
    (0x36, "EIATTR_SW_WAR", Handling::Ignored),
    (0x37, "EIATTR_CUDA_API_VERSION", Handling::Ignored),
    (0x38, "EIATTR_NUM_MBARRIERS", Handling::Ignored),
    (0x39, "EIATTR_MBARRIER_INSTR_OFFSETS", Handling::Ignored),
    (
        0x3a,
        "EIATTR_COROUTINE_RESUME_ID_OFFSETS",
        Handling::Ignored,
    ),
    (0x3b, "EIATTR_SAM_REGION_STACK_SIZE", Handling::Ignored),
    (0x3c, "EIATTR_PER_REG_TARGET_PERF_STATS", Handling::Ignored),
    (0x3d, "EIATTR_CTA_PER_CLUSTER", Handling::Used),
    (0x3e, "EIATTR_EXPLICIT_CLUSTER", Handling::Used),
    (0x3f, "EIATTR_MAX_CLUSTER_RANK", Handling::Used),
    (0x40, "EIATTR_INSTR_REG_MAP", Handling::Ignored),
    (0x41, "EIATTR_RESERVED_SMEM_USED", Handling::Ignored),
    (0x42, "EIATTR_RESERVED_SMEM_0_SIZE", Handling::Ignored),
    (0x43, "EIATTR_UCODE_SECTION_DATA", Handling::Ignored),
    (0x44, "EIATTR_UNUSED_LOAD_BYTE_OFFSET", Handling::Ignored),
    (0x45, "EIATTR_KPARAM_INFO_V2", Handling::Used),
    // Checked by the kernel's loader: only the syscalls the library implements.
    (0x46, "EIATTR_SYSCALL_OFFSETS", Handling::Used),
    (
        0x47,
        "EIATTR_SW_WAR_MEMBAR_SYS_INSTR_OFFSETS",
        Handling::Ignored,
    ),
    (0x48, "EIATTR_GRAPHICS_GLOBAL_CBANK", Handling::Ignored),
    (0x49, "EIATTR_SHADER_TYPE", Handling::Ignored),
    (0x4a, "EIATTR_VRC_CTA_INIT_COUNT", Handling::Ignored),
    (0x4b, "EIATTR_TOOLS_PATCH_FUNC", Handling::Ignored),
    (0x4c, "EIATTR_NUM_BARRIERS", Handling::Used),
    (0x4d, "EIATTR_TEXMODE_INDEPENDENT", Handling::Ignored),
    (0x4e, "EIATTR_PERF_STATISTICS", Handling::Ignored),
    (0x4f, "EIATTR_AT_ENTRY_FRAGMENTS", Handling::Ignored),
    (0x50, "EIATTR_SPARSE_MMA_MASK", Handling::Ignored),
    (0x51, "EIATTR_TCGEN05_1CTA_USED", Handling::Ignored),
    (0x52, "EIATTR_TCGEN05_2CTA_USED", Handling::Ignored),
    (0x53, "EIATTR_GEN_ERRBAR_AT_EXIT", Handling::Ignored),
    (0x54, "EIATTR_REG_RECONFIG", Handling::Ignored),
    (0x55, "EIATTR_ANNOTATIONS", Handling::Ignored),
    (0x57, "EIATTR_STACK_CANARY_TRAP_OFFSETS", Handling::Ignored),
    (0x58, "EIATTR_STUB_FUNCTION_KIND", Handling::Ignored),
    (
        0x59,
        "EIATTR_LOCAL_CTA_ASYNC_STORE_OFFSETS",
        Handling::Ignored,
    ),
    (0x5a, "EIATTR_MERCURY_FINALIZER_OPTIONS", Handling::Ignored),
    (
        0x5b,
        "EIATTR_BLOCKS_ARE_CLUSTERS",
        Handling::Refused("thread-block clusters"),
    ),
    (0x5c, "EIATTR_SANITIZE", Handling::Ignored),
    (
        0x5d,
        "EIATTR_SYSCALLS_FALLBACK",
        Handling::Refused("device-side printf/malloc/assert (driver syscalls)"),
    ),
    (0x5e, "EIATTR_CUDA_REQ", Handling::Ignored),
    (0x5f, "EIATTR_MERCURY_ISA_VERSION", Handling::Ignored),
];

/// The table entry of attribute `id`, if it is known.
pub fn lookup(id: u8) -> Option<&'static (u8, &'static str, Handling)> {
    ATTRIBUTES.iter().find(|(a, _, _)| *a == id)
}

/// The attribute's name, or `EIATTR_0x..` for an unknown id.
pub fn name_of(id: u8) -> String {
    lookup(id)
        .map(|(_, n, _)| n.to_string())
        .unwrap_or_else(|| format!("EIATTR_{id:#04x}"))
}

/// The first attribute in `attrs` that makes a kernel unrunnable: (attribute name, feature).
pub fn first_refused(attrs: &[Attr<'_>]) -> Option<(&'static str, &'static str)> {
    attrs.iter().find_map(|a| match lookup(a.attr) {
        Some((_, name, Handling::Refused(what))) => Some((*name, *what)),
        _ => None,
    })
}

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
