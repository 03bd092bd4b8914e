//! The driver version string, as the version check reports it.

use crate::error::{Error, Result, Status};

/// A parsed driver version, e.g. "580.159.04".
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RmVersion {
    pub major: u32,
    pub minor: u32,
    pub patch: Option<u32>,
    /// The string as the driver reported it (trimmed).
    pub text: String,
}

impl RmVersion {
    /// Parse "MAJOR.MINOR[.PATCH]" (surrounding whitespace and NULs allowed).
    pub fn parse(s: &str) -> Result<RmVersion> {
        let text = s
            .trim_matches(|c: char| c.is_whitespace() || c == '\0')
            .to_string();
        let bad = || {
            Error::new(
                Status::UnsupportedDriver,
                format!("unparsable NVIDIA driver version string {text:?}"),
            )
        };
        let mut it = text.split('.');
        let num = |p: Option<&str>| -> Option<u32> {
            let p = p?;
            if p.is_empty() || p.len() > 9 || !p.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            p.parse().ok()
        };
        let major = num(it.next()).ok_or_else(bad)?;
        let minor = num(it.next()).ok_or_else(bad)?;
        let patch = match it.next() {
            None => None,
            Some(p) => Some(num(Some(p)).ok_or_else(bad)?),
        };
        if it.next().is_some() {
            return Err(bad());
        }
        Ok(RmVersion {
            major,
            minor,
            patch,
            text,
        })
    }
}
