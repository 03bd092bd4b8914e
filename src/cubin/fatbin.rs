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

use crate::error::{Error, Result, Status};
use std::fmt;
use std::io::Read;

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

/// One entry of a fatbinary.
#[derive(Debug, Clone)]
pub struct Entry<'a> {
    /// Offset of the entry header in the buffer given to the parser.
    pub offset: usize,
    pub kind: EntryKind,
    /// Offset 2 (0x0101 in every file seen).
    pub raw_kind_hi: u16,
    pub header_size: u32,
    /// `(major, minor)`: the PTX ISA version of PTX entries; `(1, ELF ABI version)` of cubins.
    pub version: (u16, u16),
    pub arch: Arch,
    /// See [`flags`].
    pub flags: u64,
    pub compression: Compression,
    /// The object name (source file name), when recorded (nvcc does with `-G`).
    pub name: Option<String>,
    /// ptxas options recorded for the JIT compilation of a PTX entry ("" if none).
    pub ptx_options: String,
    /// The payload as stored: exactly the compressed bytes, or the whole (padded) payload.
    pub stored: &'a [u8],
    /// Size after decompression (the stored size when not compressed).
    pub uncompressed_size: u64,
}

impl fmt::Display for Entry<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.arch.number();
        let s = self.arch.suffix();
        match self.kind {
            EntryKind::Ptx => write!(f, "PTX compute_{n}{s}"),
            EntryKind::Cubin => write!(f, "SASS sm_{n}{s}"),
            EntryKind::LtoIr => write!(f, "LTO-IR lto_{n}{s}"),
            EntryKind::Other(k) => write!(f, "kind {k} for arch {n}{s}"),
        }
    }
}

impl Entry<'_> {
    pub fn is_64bit(&self) -> bool {
        self.flags & flags::ADDR64 != 0
    }
    pub fn has_debug_info(&self) -> bool {
        self.flags & flags::DEBUG != 0
    }

    /// The payload, decompressed. Cubins come back as stored (possibly padded with zeros to a
    /// multiple of 8 bytes); PTX with its trailing NULs.
    pub fn data(&self) -> Result<Vec<u8>> {
        let what = || format!("{} at offset {:#x}", self, self.offset);
        let out = match self.compression {
            Compression::None => return Ok(self.stored.to_vec()),
            Compression::Lz4 => lz4_block_decode(self.stored, self.uncompressed_size as usize)
                .map_err(|e| bad(format!("{}: LZ4 payload: {e}", what())))?,
            Compression::Zstd => zstd_decode(self.stored, self.uncompressed_size)
                .map_err(|e| bad(format!("{}: zstd payload: {e}", what())))?,
        };
        Ok(out)
    }

    /// The PTX text of a PTX entry (up to the first NUL).
    pub fn ptx_text(&self) -> Result<String> {
        if self.kind != EntryKind::Ptx {
            return Err(Error::invalid(format!(
                "{} at offset {:#x} is not PTX",
                self, self.offset
            )));
        }
        let mut data = self.data()?;
        if let Some(nul) = data.iter().position(|&b| b == 0) {
            data.truncate(nul);
        }
        String::from_utf8(data).map_err(|e| {
            bad(format!(
                "{} at offset {:#x}: PTX text is not UTF-8 (byte {})",
                self,
                self.offset,
                e.utf8_error().valid_up_to()
            ))
        })
    }
}

/// One fatbinary container.
#[derive(Debug, Clone)]
pub struct Fatbin<'a> {
    /// Offset of the container header in the buffer given to the parser.
    pub offset: usize,
    pub version: u16,
    /// Bytes from the container header to the end of its last entry.
    pub size: usize,
    pub entries: Vec<Entry<'a>>,
}

impl<'a> Fatbin<'a> {
    /// Parse the container at the start of `bytes`. Bytes after its end are ignored (like
    /// `cuModuleLoadData`, which reads the size from the header).
    pub fn parse(bytes: &'a [u8]) -> Result<Fatbin<'a>> {
        Self::parse_at(bytes, 0)
    }

    /// Parse the container at offset `at` of `bytes`.
    pub fn parse_at(bytes: &'a [u8], at: usize) -> Result<Fatbin<'a>> {
        let b = bytes.get(at..).unwrap_or(&[]);
        if b.len() < CONTAINER_HEADER_SIZE {
            return Err(bad(format!(
                "fatbin at offset {at:#x}: {} bytes left, shorter than the 16-byte header",
                b.len()
            )));
        }
        let magic = rd_u32(b, 0).unwrap_or(0);
        if magic == WRAPPER_MAGIC {
            return Err(Error::new(
                Status::NotSupported,
                format!(
                    "offset {at:#x} holds a __fatBinC_Wrapper_t (magic {WRAPPER_MAGIC:#x}), which \
                     points at the fatbinary through a host pointer; pass the fatbinary itself \
                     (the data it points to, or the .nv_fatbin section)"
                ),
            ));
        }
        if magic != FATBIN_MAGIC {
            return Err(bad(format!(
                "fatbin at offset {at:#x}: magic {magic:#010x}, expected {FATBIN_MAGIC:#010x}"
            )));
        }
        let version = rd_u16(b, 4).unwrap_or(0);
        if version != FATBIN_VERSION {
            return Err(Error::new(
                Status::NotSupported,
                format!(
                    "fatbin at offset {at:#x}: container version {version} (offset 4), only \
                     version {FATBIN_VERSION} is known"
                ),
            ));
        }
        let hsize = rd_u16(b, 6).unwrap_or(0) as usize;
        let body = rd_u64(b, 8).unwrap_or(0);
        if hsize < CONTAINER_HEADER_SIZE {
            return Err(bad(format!(
                "fatbin at offset {at:#x}: header size {hsize} (offset 6) is below 16"
            )));
        }
        let end = (hsize as u64)
            .checked_add(body)
            .filter(|&e| e <= b.len() as u64)
            .ok_or_else(|| {
                bad(format!(
                    "fatbin at offset {at:#x}: header size {hsize} + entries size {body:#x} \
                     (offset 8) run past the end of the {:#x} bytes left",
                    b.len()
                ))
            })? as usize;
        let mut entries = Vec::new();
        let mut pos = hsize;
        while pos < end {
            let left = end - pos;
            if left < ENTRY_HEADER_MIN {
                if b[pos..end].iter().all(|&x| x == 0) {
                    break; // zero padding
                }
                return Err(bad(format!(
                    "fatbin entry at offset {:#x}: only {left} bytes left in the container, \
                     shorter than a 64-byte entry header",
                    at + pos
                )));
            }
            let (entry, next) = parse_entry(&b[pos..end], at + pos)?;
            entries.push(entry);
            pos += next;
        }
        Ok(Fatbin {
            offset: at,
            version,
            size: end,
            entries,
        })
    }

    /// The entry the CUDA driver would load on a device of SM `device_sm`, see [`select`].
    pub fn choose(&self, device_sm: (u32, u32)) -> Result<&Entry<'a>> {
        let rank = |e: &Entry<'_>| (e.arch.number(), e.arch.variant);
        let usable = |e: &&Entry<'a>| e.is_64bit();
        let cubin = self
            .entries
            .iter()
            .filter(usable)
            .filter(|e| e.kind == EntryKind::Cubin && e.arch.cubin_runs_on(device_sm))
            .max_by_key(|e| rank(e));
        if let Some(e) = cubin {
            return Ok(e);
        }
        let ptx = self
            .entries
            .iter()
            .filter(usable)
            .filter(|e| e.kind == EntryKind::Ptx && e.arch.ptx_runs_on(device_sm))
            .max_by_key(|e| rank(e));
        if let Some(e) = ptx {
            return Ok(e);
        }
        Err(bad(format!(
            "the fatbin has no code for the device (sm_{}{}): {}; a cubin needs the same major \
             version and a minor version <= the device's, PTX a virtual architecture <= the \
             device's (arch-specific 'a' variants only the exact SM)",
            device_sm.0,
            device_sm.1,
            self.describe()
        )))
    }

    /// Like [`select`], for this container.
    pub fn select(&self, device_sm: (u32, u32)) -> Result<Selected> {
        let e = self.choose(device_sm)?;
        match e.kind {
            EntryKind::Cubin => Ok(Selected::Cubin(e.data()?, e.arch.sm())),
            _ => Ok(Selected::Ptx(e.ptx_text()?, e.arch.sm())),
        }
    }

    /// "SASS sm_80, sm_90; PTX compute_90" (and the entries that are never chosen).
    pub fn describe(&self) -> String {
        let list = |k: EntryKind, prefix: &str| -> Vec<String> {
            self.entries
                .iter()
                .filter(|e| e.kind == k && e.is_64bit())
                .map(|e| format!("{prefix}_{}{}", e.arch.number(), e.arch.suffix()))
                .collect()
        };
        let sass = list(EntryKind::Cubin, "sm");
        let ptx = list(EntryKind::Ptx, "compute");
        let mut parts = vec![
            if sass.is_empty() {
                "no SASS".to_string()
            } else {
                format!("SASS {}", sass.join(", "))
            },
            if ptx.is_empty() {
                "no PTX".to_string()
            } else {
                format!("PTX {}", ptx.join(", "))
            },
        ];
        let other: Vec<String> = self
            .entries
            .iter()
            .filter(|e| !matches!(e.kind, EntryKind::Cubin | EntryKind::Ptx) || !e.is_64bit())
            .map(|e| {
                if e.is_64bit() {
                    e.to_string()
                } else {
                    format!("{e} (32-bit)")
                }
            })
            .collect();
        if !other.is_empty() {
            parts.push(format!("ignored: {}", other.join(", ")));
        }
        parts.join("; ")
    }
}

/// Parse one entry at the start of `b` (which ends where the container ends); returns it and
/// the offset of the next entry.
fn parse_entry(b: &[u8], at: usize) -> Result<(Entry<'_>, usize)> {
    let field = |off: usize, name: &str| -> String {
        format!("fatbin entry at offset {at:#x}: {name} (entry offset {off})")
    };
    // The caller guarantees 64 bytes.
    let raw_kind = rd_u16(b, 0).unwrap_or(0);
    let raw_kind_hi = rd_u16(b, 2).unwrap_or(0);
    let header_size = rd_u32(b, 4).unwrap_or(0);
    let payload_size = rd_u64(b, 8).unwrap_or(0);
    let compressed_size = rd_u32(b, 16).unwrap_or(0);
    let options_off = rd_u32(b, 20).unwrap_or(0);
    let ver_minor = rd_u16(b, 24).unwrap_or(0);
    let ver_major = rd_u16(b, 26).unwrap_or(0);
    let arch_num = rd_u32(b, 28).unwrap_or(0);
    let name_off = rd_u32(b, 32).unwrap_or(0);
    let name_len = rd_u32(b, 36).unwrap_or(0);
    let fl = rd_u64(b, 40).unwrap_or(0);
    let uncompressed = rd_u64(b, 56).unwrap_or(0);

    let hs = header_size as usize;
    if hs < ENTRY_HEADER_MIN || hs > b.len() {
        return Err(bad(format!(
            "{} is {header_size}: below 64 or past the container end ({:#x} bytes left)",
            field(4, "header size"),
            b.len()
        )));
    }
    let header = &b[..hs];
    let next = (hs as u64)
        .checked_add(payload_size)
        .filter(|&n| n <= b.len() as u64)
        .ok_or_else(|| {
            bad(format!(
                "{} {payload_size:#x} after the {hs}-byte header runs past the container end \
                 ({:#x} bytes left)",
                field(8, "payload size"),
                b.len()
            ))
        })? as usize;
    let payload = &b[hs..next];

    let kind = EntryKind::from_raw(raw_kind);
    if arch_num < 10 && matches!(kind, EntryKind::Ptx | EntryKind::Cubin) {
        return Err(bad(format!(
            "{} is {arch_num}, not an SM version",
            field(28, "architecture")
        )));
    }
    let variant = match (
        fl & flags::ARCH_SPECIFIC != 0,
        fl & flags::FAMILY_SPECIFIC != 0,
    ) {
        (false, false) => ArchVariant::Generic,
        (true, false) => ArchVariant::Specific,
        (false, true) => ArchVariant::Family,
        (true, true) => {
            return Err(bad(format!(
                "{} {fl:#x} mark the entry both arch-specific (0x100000) and family-specific \
                 (0x200000)",
                field(40, "flags")
            )))
        }
    };
    let arch = Arch {
        major: arch_num / 10,
        minor: arch_num % 10,
        variant,
    };

    let compression = match (
        fl & flags::COMPRESSED_LZ4 != 0,
        fl & flags::COMPRESSED_ZSTD != 0,
    ) {
        (false, false) => Compression::None,
        (true, false) => Compression::Lz4,
        (false, true) => Compression::Zstd,
        (true, true) => {
            return Err(bad(format!(
                "{} {fl:#x} set both LZ4 (0x2000) and zstd (0x8000) compression",
                field(40, "flags")
            )))
        }
    };
    let (stored, uncompressed_size) = if compression == Compression::None {
        (payload, payload.len() as u64)
    } else {
        if compressed_size == 0 || compressed_size as usize > payload.len() {
            return Err(bad(format!(
                "{} {compressed_size:#x} of a compressed entry is 0 or exceeds the payload size \
                 {:#x}",
                field(16, "compressed size"),
                payload.len()
            )));
        }
        if uncompressed == 0 || uncompressed > MAX_UNCOMPRESSED {
            return Err(bad(format!(
                "{} {uncompressed:#x} of a compressed entry is 0 or above the {MAX_UNCOMPRESSED:#x} \
                 limit",
                field(56, "uncompressed size")
            )));
        }
        (&payload[..compressed_size as usize], uncompressed)
    };

    let header_str = |off: u32, len: u32, what: &str, at_field: usize| -> Result<String> {
        let s = (off as usize)
            .checked_add(len as usize)
            .and_then(|end| header.get(off as usize..end))
            .ok_or_else(|| {
                bad(format!(
                    "{} {off:#x}+{len:#x} lies outside the {hs}-byte entry header",
                    field(at_field, what)
                ))
            })?;
        let s = match s.iter().position(|&c| c == 0) {
            Some(n) => &s[..n],
            None => s,
        };
        Ok(String::from_utf8_lossy(s).into_owned())
    };
    let name = if name_off != 0 && name_len != 0 {
        Some(header_str(name_off, name_len, "object name", 32)?)
    } else {
        None
    };
    let ptx_options = if kind == EntryKind::Ptx && options_off != 0 {
        let o = options_off as usize;
        let (Some(str_off), Some(str_len)) = (
            rd_u32(header, o),
            o.checked_add(4).and_then(|p| rd_u32(header, p)),
        ) else {
            return Err(bad(format!(
                "{} {options_off:#x}: the 8-byte options record lies outside the {hs}-byte \
                 entry header",
                field(20, "options offset")
            )));
        };
        header_str(str_off, str_len, "options string", 20)?
    } else {
        String::new()
    };

    Ok((
        Entry {
            offset: at,
            kind,
            raw_kind_hi,
            header_size,
            version: (ver_major, ver_minor),
            arch,
            flags: fl,
            compression,
            name,
            ptx_options,
            stored,
            uncompressed_size,
        },
        next,
    ))
}

/// Decode an LZ4 block (the format of `LZ4_compress_default`, without a frame header) that must
/// expand to exactly `out_len` bytes.
fn lz4_block_decode(src: &[u8], out_len: usize) -> std::result::Result<Vec<u8>, String> {
    // A literal or match length byte expands to at most 255 bytes; no valid block decodes to more.
    let cap = src.len().saturating_mul(255).saturating_add(16);
    if out_len > cap {
        return Err(format!(
            "uncompressed size {out_len:#x} is impossible for {:#x} compressed bytes",
            src.len()
        ));
    }
    let mut out: Vec<u8> = Vec::with_capacity(out_len);
    let mut i = 0usize;
    let byte = |i: &mut usize| -> std::result::Result<u8, String> {
        let b = *src
            .get(*i)
            .ok_or_else(|| format!("input ends at offset {:#x} inside a sequence", *i))?;
        *i += 1;
        Ok(b)
    };
    let ext_len = |i: &mut usize, mut n: usize| -> std::result::Result<usize, String> {
        loop {
            let b = byte(i)?;
            n = n
                .checked_add(b as usize)
                .ok_or_else(|| format!("length overflows at offset {:#x}", *i))?;
            if b != 255 {
                return Ok(n);
            }
        }
    };
    loop {
        let token = byte(&mut i)?;
        let mut lit = (token >> 4) as usize;
        if lit == 15 {
            lit = ext_len(&mut i, lit)?;
        }
        let lit_end = i
            .checked_add(lit)
            .filter(|&e| e <= src.len())
            .ok_or_else(|| {
                format!(
                    "{lit} literal bytes at offset {i:#x} run past the input end {:#x}",
                    src.len()
                )
            })?;
        if lit > out_len - out.len() {
            return Err(format!(
                "literals at input offset {i:#x} overrun the uncompressed size {out_len:#x}"
            ));
        }
        out.extend_from_slice(&src[i..lit_end]);
        i = lit_end;
        if i == src.len() {
            break; // the last sequence has literals only
        }
        let lo = byte(&mut i)? as usize;
        let hi = byte(&mut i)? as usize;
        let dist = lo | (hi << 8);
        if dist == 0 || dist > out.len() {
            return Err(format!(
                "match offset {dist} at input offset {:#x} points before the output start \
                 ({} bytes decoded)",
                i - 2,
                out.len()
            ));
        }
        let mut mlen = (token & 15) as usize;
        if mlen == 15 {
            mlen = ext_len(&mut i, mlen)?;
        }
        let mlen = mlen.saturating_add(4);
        if mlen > out_len - out.len() {
            return Err(format!(
                "match of {mlen} bytes at input offset {i:#x} overruns the uncompressed size \
                 {out_len:#x}"
            ));
        }
        let start = out.len() - dist;
        if dist >= mlen {
            out.extend_from_within(start..start + mlen);
        } else {
            // Overlapping copy: repeats the last `dist` bytes.
            for k in 0..mlen {
                let c = out[start + k];
                out.push(c);
            }
        }
    }
    if out.len() != out_len {
        return Err(format!(
            "decoded {:#x} bytes, the header says {out_len:#x}",
            out.len()
        ));
    }
    Ok(out)
}

/// Decode one zstd frame that must expand to exactly `out_len` bytes.
fn zstd_decode(src: &[u8], out_len: u64) -> std::result::Result<Vec<u8>, String> {
    let mut reader = src;
    let dec = ruzstd::StreamingDecoder::new(&mut reader).map_err(|e| format!("{e}"))?;
    // Grow as data arrives rather than trusting the header with one large allocation.
    let mut out = Vec::with_capacity(out_len.min(16 << 20) as usize);
    dec.take(out_len.saturating_add(1))
        .read_to_end(&mut out)
        .map_err(|e| format!("{e}"))?;
    if out.len() as u64 != out_len {
        return Err(format!(
            "decoded {:#x} bytes, the header says {out_len:#x}",
            out.len()
        ));
    }
    Ok(out)
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

/// What a buffer given to a module loader holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum InputKind {
    /// An ELF file for EM_CUDA (a cubin).
    Cubin,
    /// A fatbinary container (magic `0xBA55ED50`), or a `__fatBinC_Wrapper_t` (magic
    /// `0x466243B1`, which [`select`] refuses with a message).
    Fatbin,
    /// PTX text.
    Ptx,
    /// An ELF file for another machine (a host object or shared library), which may embed
    /// fatbinaries in a `.nv_fatbin` section.
    HostElf,
    Unknown,
}

/// Sniff what `bytes` holds (never fails; [`InputKind::Unknown`] for anything else).
///
/// PTX is recognised as UTF-8 text (up to the first NUL) whose first token after whitespace
/// and comments is the `.version` directive and which has a `.target` directive.
pub fn kind_of(bytes: &[u8]) -> InputKind {
    if bytes.len() >= 4 && bytes[..4] == [0x7f, b'E', b'L', b'F'] {
        return match rd_u16(bytes, 18) {
            // x86-64 and aarch64 hosts carry fatbins in .nv_fatbin; anything else that is not
            // a CUDA ELF goes to the cubin parser, which names what is wrong with it.
            Some(62) | Some(183) => InputKind::HostElf,
            Some(_) => InputKind::Cubin,
            None => InputKind::Unknown,
        };
    }
    match rd_u32(bytes, 0) {
        Some(FATBIN_MAGIC) | Some(WRAPPER_MAGIC) => return InputKind::Fatbin,
        _ => {}
    }
    if looks_like_ptx(bytes) {
        InputKind::Ptx
    } else {
        InputKind::Unknown
    }
}

fn looks_like_ptx(bytes: &[u8]) -> bool {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    let Ok(text) = std::str::from_utf8(&bytes[..end]) else {
        return false;
    };
    let rest = skip_space_and_comments(text);
    starts_with_directive(rest, ".version") && has_directive(text, ".target")
}

/// `s` after leading whitespace, `// ...` and `/* ... */` comments.
fn skip_space_and_comments(mut s: &str) -> &str {
    loop {
        s = s.trim_start();
        if let Some(r) = s.strip_prefix("//") {
            s = r.find('\n').map_or("", |n| &r[n..]);
        } else if let Some(r) = s.strip_prefix("/*") {
            match r.find("*/") {
                Some(n) => s = &r[n + 2..],
                None => return "",
            }
        } else {
            return s;
        }
    }
}

fn starts_with_directive(s: &str, d: &str) -> bool {
    s.strip_prefix(d)
        .is_some_and(|r| r.starts_with(|c: char| c.is_ascii_whitespace()))
}

fn has_directive(text: &str, d: &str) -> bool {
    text.lines()
        .any(|l| starts_with_directive(skip_space_and_comments(l), d))
}

/// The contents of the `.nv_fatbin` section of a host ELF file (ELF64, little endian: x86-64,
/// aarch64). Errors: [`Status::InvalidCubin`] for a malformed ELF or one without CUDA code;
/// [`Status::NotSupported`] for ELF32/big-endian files and `-rdc` objects (`__nv_relfatbin`).
pub fn nv_fatbin_section(elf: &[u8]) -> Result<&[u8]> {
    if elf.len() < 64 || elf[..4] != [0x7f, b'E', b'L', b'F'] {
        return Err(bad(format!(
            "not an ELF64 file ({} bytes, or no ELF magic)",
            elf.len()
        )));
    }
    if elf[4] != 2 || elf[5] != 1 {
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
    if shstrndx == 0xffff {
        shstrndx = rd_u32(shdr(0)?, 40).unwrap_or(0) as u64;
    }
    let contents = |i: u64| -> Result<&[u8]> {
        let h = shdr(i)?;
        let ty = rd_u32(h, 4).unwrap_or(0);
        if ty == 8 {
            return Ok(&[]); // SHT_NOBITS
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
            if rd_u64(h, 8).unwrap_or(0) & 0x800 != 0 {
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
