//! Decompression of entry payloads: LZ4 blocks and zstd frames.

use std::io::Read;

/// Decode an LZ4 block (the format of `LZ4_compress_default`, without a frame header) that must
/// expand to exactly `out_len` bytes.
pub(super) fn lz4_block_decode(src: &[u8], out_len: usize) -> std::result::Result<Vec<u8>, String> {
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
