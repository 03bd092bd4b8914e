//! CUDA fatbinary ("fatbin") containers: parsing, decompression and the driver's choice of image.
//!
//! `cuModuleLoadData` accepts a cubin, PTX text, or a fatbinary holding several of them. This
//! module reads fatbinaries (and host ELF files that embed them in a `.nv_fatbin` section), picks
//! the entry the CUDA driver would pick for a device ([`select`]), and sniffs what a buffer holds
//! ([`kind_of`]).
//!
//! # Layout (all little endian; worked out from nvcc 13.0 and nvFatbin 12.9 output)
//!
//! Container header, 16 bytes:
//!
//! | offset | type | field |
//! |---|---|---|
//! | 0 | u32 | magic `0xBA55ED50` |
//! | 4 | u16 | version, 1 |
//! | 6 | u16 | header size (16): offset of the first entry |
//! | 8 | u64 | size of the entries that follow the header |
//!
//! The entries follow back to back, each a header and its payload; no terminator. Entry header
//! (64 bytes, or more: PTX entries carry an options record, sm_100+ cubins extra data):
//!
//! | offset | type | field |
//! |---|---|---|
//! | 0 | u16 | kind: 1 PTX, 2 ELF (cubin), 8 LTO-IR |
//! | 2 | u16 | 0x0101 (meaning unknown) |
//! | 4 | u32 | header size: the payload starts here |
//! | 8 | u64 | payload size (padded to 8); the next entry starts at header size + this |
//! | 16 | u32 | compressed size: exact length of the compressed payload (0 if not compressed) |
//! | 20 | u32 | offset (in the entry) of the options record, 0 if none |
//! | 24 | u16 | version minor: PTX ISA minor; for cubins the ELF ABI version (7, 8) |
//! | 26 | u16 | version major: PTX ISA major; 1 for cubins |
//! | 28 | u32 | architecture, `10 * major + minor` (90 for sm_90 / compute_90) |
//! | 32 | u32 | offset (in the entry) of the object name, 0 if none |
//! | 36 | u32 | length of the object name (no NUL) |
//! | 40 | u64 | flags, see [`flags`] |
//! | 48 | u64 | 0 (meaning unknown) |
//! | 56 | u64 | uncompressed size (0 if not compressed) |
//!
//! The options record (PTX entries): u32 offset (in the entry) and u32 length of the ptxas options
//! string that the JIT compiler is to use (`nvFatbinAddPTX`'s `optionsCmdLine`), usually empty.
//!
//! Compression: flag `0x2000` marks an LZ4 *block* (no frame header) of the uncompressed size
//! (`-compress-mode=speed`, and the default before CUDA 12.8); flag `0x8000` marks a zstd frame
//! (the default of nvcc 13 for PTX, and for everything with `-Xfatbin -compress-all`).
//!
//! Arch-specific variants: `sm_90a`/`compute_90a` entries set flag `0x10_0000` and run only on
//! exactly that SM; family-specific `sm_100f`/`compute_100f` entries set `0x20_0000` and run on
//! the same major version with a minor version >= theirs. The architecture number is the plain
//! one (90, 100) in both cases.
//!
//! A host object or shared library built by nvcc keeps the fatbinaries of its translation units,
//! concatenated, in a section named `.nv_fatbin` (the `.nvFatBinSegment` section holds the
//! `__fatBinC_Wrapper_t`, magic `0x466243B1`, that points at them). `-rdc` objects use
//! `__nv_relfatbin` instead; their cubins need a device link first.
//!
//! Every offset and length read from the input is bounds-checked: malformed input yields
//! [`Status::InvalidCubin`] with a message naming the offset and field, never a panic.

mod container;
mod decompress;
mod host_elf;
mod sniff;

pub use container::{Entry, Fatbin};
pub use host_elf::nv_fatbin_section;
pub use sniff::{kind_of, InputKind};

use crate::error::{Error, Result, Status};
use std::fmt;

/// Magic of a fatbinary container (`fatBinaryHeader::magic`).
pub const FATBIN_MAGIC: u32 = 0xBA55_ED50;
/// Magic of `__fatBinC_Wrapper_t` (the host-side struct pointing at a fatbinary).
pub const WRAPPER_MAGIC: u32 = 0x4662_43B1;
/// The container version this module reads.
pub const FATBIN_VERSION: u16 = 1;
/// Name of the host ELF section holding fatbinaries.
pub const NV_FATBIN_SECTION: &str = ".nv_fatbin";
/// Name of the host ELF section holding relocatable (`-rdc`) fatbinaries.
pub const NV_RELFATBIN_SECTION: &str = "__nv_relfatbin";
/// Largest uncompressed entry accepted (bytes).
pub const MAX_UNCOMPRESSED: u64 = 1 << 30;

const CONTAINER_HEADER_SIZE: usize = 16;
const ENTRY_HEADER_MIN: usize = 64;

/// Bits of an entry's flags word (offset 40).
pub mod flags {
    /// 64-bit addresses (`-m64`); entries without it are ignored by [`super::select`].
    pub const ADDR64: u64 = 0x1;
    /// Built with debug information (`-G`, `-g`).
    pub const DEBUG: u64 = 0x2;
    /// OpenCL rather than CUDA.
    pub const OPENCL: u64 = 0x8;
    /// Host is Linux.
    pub const HOST_LINUX: u64 = 0x10;
    /// Host is Windows.
    pub const HOST_WINDOWS: u64 = 0x40;
    /// Payload is an LZ4 block.
    pub const COMPRESSED_LZ4: u64 = 0x2000;
    /// Payload is a zstd frame.
    pub const COMPRESSED_ZSTD: u64 = 0x8000;
    /// Arch-specific variant (`sm_90a`, `compute_100a`): runs only on exactly that SM.
    pub const ARCH_SPECIFIC: u64 = 0x10_0000;
    /// Family-specific variant (`sm_100f`): runs on the same major, minor >= the entry's.
    pub const FAMILY_SPECIFIC: u64 = 0x20_0000;
}

fn bad(msg: impl Into<String>) -> Error {
    Error::new(Status::InvalidCubin, msg)
}

fn rd_u16(b: &[u8], off: usize) -> Option<u16> {
    let s = b.get(off..off.checked_add(2)?)?;
    Some(u16::from_le_bytes([s[0], s[1]]))
}
fn rd_u32(b: &[u8], off: usize) -> Option<u32> {
    let s = b.get(off..off.checked_add(4)?)?;
    Some(u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
}
fn rd_u64(b: &[u8], off: usize) -> Option<u64> {
    let s = b.get(off..off.checked_add(8)?)?;
    let mut a = [0u8; 8];
    a.copy_from_slice(s);
    Some(u64::from_le_bytes(a))
}

/// What an entry holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EntryKind {
    /// PTX text (to be JIT-compiled).
    Ptx,
    /// A cubin (CUDA ELF, SASS).
    Cubin,
    /// NVVM LTO-IR (`-dlto`); needs nvJitLink with `-lto`, never selected.
    LtoIr,
    /// Any other kind value.
    Other(u16),
}

impl EntryKind {
    fn from_raw(k: u16) -> EntryKind {
        match k {
            1 => EntryKind::Ptx,
            2 => EntryKind::Cubin,
            8 => EntryKind::LtoIr,
            o => EntryKind::Other(o),
        }
    }
}

/// Plain, arch-specific (`a`) or family-specific (`f`) target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ArchVariant {
    /// `sm_90`: runs on the same major version with a minor version >= this one (SASS), or on
    /// any later SM after JIT compilation (PTX).
    Generic,
    /// `sm_100f`: runs on the same major version with a minor version >= this one.
    Family,
    /// `sm_90a`: runs only on exactly this SM.
    Specific,
}

/// The SM an entry targets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Arch {
    pub major: u32,
    pub minor: u32,
    pub variant: ArchVariant,
}

impl Arch {
    /// `(major, minor)`.
    pub fn sm(&self) -> (u32, u32) {
        (self.major, self.minor)
    }
    /// The `sm_90a` / `compute_90a` suffix: "", "a" or "f".
    pub fn suffix(&self) -> &'static str {
        match self.variant {
            ArchVariant::Generic => "",
            ArchVariant::Family => "f",
            ArchVariant::Specific => "a",
        }
    }
    fn number(&self) -> u32 {
        self.major * 10 + self.minor
    }
    /// Whether a cubin for this arch runs on `device` (`(major, minor)`).
    pub fn cubin_runs_on(&self, device: (u32, u32)) -> bool {
        match self.variant {
            ArchVariant::Specific => self.sm() == device,
            ArchVariant::Generic | ArchVariant::Family => {
                self.major == device.0 && self.minor <= device.1
            }
        }
    }
    /// Whether PTX for this virtual arch can be JIT-compiled for `device`.
    pub fn ptx_runs_on(&self, device: (u32, u32)) -> bool {
        match self.variant {
            ArchVariant::Specific => self.sm() == device,
            ArchVariant::Family => self.major == device.0 && self.minor <= device.1,
            ArchVariant::Generic => self.number() <= device.0 * 10 + device.1,
        }
    }
}

/// `sm_90a` (for display; PTX entries are shown as `compute_90a` by [`Entry`]'s `Display`).
impl fmt::Display for Arch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "sm_{}{}", self.number(), self.suffix())
    }
}

/// How an entry's payload is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Compression {
    None,
    /// LZ4 block format (flag `0x2000`).
    Lz4,
    /// zstd frame (flag `0x8000`).
    Zstd,
}

/// What [`select`] chose.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Selected {
    /// A cubin and the SM `(major, minor)` it was built for.
    Cubin(Vec<u8>, (u32, u32)),
    /// PTX text (without NULs) and its virtual architecture `(major, minor)`; compile it for the
    /// device's SM (e.g. with [`crate::ptxjit::compile_ptx`], which keeps an `a`/`f` suffix of
    /// the PTX's `.target`).
    Ptx(String, (u32, u32)),
}

/// Every fatbinary container in `bytes`: a single fatbinary, the contents of a `.nv_fatbin`
/// section (containers back to back, possibly zero-padded to 8 bytes), or a host ELF file
/// holding such a section.
pub fn containers(bytes: &[u8]) -> Result<Vec<Fatbin<'_>>> {
    let data = if kind_of(bytes) == InputKind::HostElf {
        nv_fatbin_section(bytes)?
    } else {
        bytes
    };
    let mut out = Vec::new();
    let mut pos = 0usize;
    while pos < data.len() {
        if data[pos] == 0 {
            // Alignment padding between containers.
            let skip = data[pos..].iter().take_while(|&&b| b == 0).count();
            pos += skip;
            continue;
        }
        let f = Fatbin::parse_at(data, pos)?;
        pos += f.size;
        out.push(f);
    }
    if out.is_empty() {
        return Err(bad(
            "no fatbinary container found (empty input or all zeros)",
        ));
    }
    Ok(out)
}

/// Choose the image the CUDA driver would load from a fatbinary (or from a host ELF file with a
/// single fatbinary in its `.nv_fatbin` section) for a device of SM `device_sm = (major, minor)`:
///
/// 1. the cubin with the same major version and the highest minor version <= the device's
///    (arch-specific `sm_XYa` cubins only on exactly sm_XY; at equal SM an `a` cubin is preferred
///    to an `f` one, and that to a plain one);
/// 2. otherwise the PTX with the highest virtual architecture <= the device's SM (the same rules
///    for `a`/`f`), to be JIT-compiled;
/// 3. otherwise [`Status::InvalidCubin`], listing what the fatbinary holds.
///
/// Entries without the 64-bit flag, LTO-IR and unknown kinds are never chosen.
///
/// Errors also: [`Status::InvalidCubin`] for malformed input (naming the offset and field);
/// [`Status::NotSupported`] for a host ELF with several fatbinaries (one per translation unit:
/// use [`containers`]), an `-rdc` object, or a `__fatBinC_Wrapper_t`.
pub fn select(bytes: &[u8], device_sm: (u32, u32)) -> Result<Selected> {
    if kind_of(bytes) == InputKind::HostElf {
        let all = containers(bytes)?;
        if all.len() != 1 {
            let list: Vec<String> = all.iter().map(|f| format!("[{}]", f.describe())).collect();
            return Err(Error::new(
                Status::NotSupported,
                format!(
                    "host ELF: the .nv_fatbin section holds {} fatbinaries (one per translation \
                     unit: {}); load them one by one (tegragpu::cubin::fatbin::containers) or \
                     extract one with cuobjdump",
                    all.len(),
                    list.join(" ")
                ),
            ));
        }
        return all[0].select(device_sm);
    }
    Fatbin::parse(bytes)?.select(device_sm)
}
