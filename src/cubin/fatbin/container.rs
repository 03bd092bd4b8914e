//! A fatbinary container and its entries: header parsing and payload access.

use super::decompress::{lz4_block_decode, zstd_decode};
use super::{
    bad, flags, rd_u16, rd_u32, rd_u64, Arch, ArchVariant, Compression, EntryKind, Selected,
};
use super::{
    CONTAINER_HEADER_SIZE, ENTRY_HEADER_MIN, FATBIN_MAGIC, FATBIN_VERSION, MAX_UNCOMPRESSED,
    WRAPPER_MAGIC,
};
use crate::error::{Error, Result, Status};
use std::fmt;

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
