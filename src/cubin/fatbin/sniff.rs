//! What a buffer given to a module loader holds: fatbinary, cubin, PTX or host ELF.

use super::{rd_u16, rd_u32, FATBIN_MAGIC, WRAPPER_MAGIC};
use object::elf::{ELFMAG, EM_AARCH64, EM_X86_64};

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
    if bytes.starts_with(&ELFMAG) {
        return match rd_u16(bytes, 18) {
            // x86-64 and aarch64 hosts carry fatbins in .nv_fatbin; anything else that is not
            // a CUDA ELF goes to the cubin parser, which names what is wrong with it.
            Some(EM_X86_64) | Some(EM_AARCH64) => InputKind::HostElf,
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
