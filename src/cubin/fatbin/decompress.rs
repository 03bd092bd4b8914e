//! Decompression of entry payloads: LZ4 blocks and zstd frames.

use std::io::Read;

/// Decode an LZ4 block (the format of `LZ4_compress_default`, without a frame header) that must
/// expand to exactly `out_len` bytes. The entry header gives only that size (no frame, no
/// checksum), so the output buffer is exactly `out_len` bytes and `lz4_flex`'s safe decoder
/// stops with an error at any literal or match that would run past it.
pub(super) fn lz4_block_decode(src: &[u8], out_len: usize) -> std::result::Result<Vec<u8>, String> {
    let sizes = || {
        format!(
            "{:#x} compressed bytes, uncompressed size {out_len:#x}",
            src.len()
        )
    };
    // A length byte adds at most 255 to a literal or match, so no valid block of `src.len()`
    // bytes decodes to more than this; checking first avoids zeroing a buffer of up to
    // `MAX_UNCOMPRESSED` bytes for a header that cannot be true.
    let cap = src.len().saturating_mul(255).saturating_add(16);
    if out_len > cap {
        return Err(format!(
            "uncompressed size is impossible for the input ({})",
            sizes()
        ));
    }
    let out =
        lz4_flex::block::decompress(src, out_len).map_err(|e| format!("{e} ({})", sizes()))?;
    if out.len() != out_len {
        return Err(format!("decoded {:#x} bytes ({})", out.len(), sizes()));
    }
    Ok(out)
}

/// Decode one zstd frame that must expand to exactly `out_len` bytes.
pub(super) fn zstd_decode(src: &[u8], out_len: u64) -> std::result::Result<Vec<u8>, String> {
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
