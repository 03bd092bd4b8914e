//! Copies into write-combined ring memory (command, QMD and constant-bank rings, command-buffer
//! images).
//!
//! A write-combined mapping collects stores in the CPU's write-combining buffers and sends each
//! buffer over the bus when it fills or when a fence drains it. A general-purpose `memcpy` is a
//! poor fit for the small copies of a launch: it stores the tail of a range with an overlapping
//! vector and aligns with a partial first store, so lines leave the buffers part-written. On an
//! H100 machine (Xeon, BAR1 video memory; `tools/probes` `wc_probe`) a launch's image written as
//! three `memcpy` calls (528 + 16 + 256 bytes) and a store fence cost 278–294 ns, the same bytes
//! as ascending 16-byte stores 193–212 ns (H200 machine: 271 and 170 ns).
//!
//! [`copy`] writes each byte once, in ascending order, with 16-byte stores where the destination
//! allows it. The stores are volatile so the compiler cannot turn the loop back into a
//! `memcpy` call.

/// Copy `len` bytes from `src` to `dst` (write-combined or any other memory) in one ascending
/// pass: 16-byte stores (x86-64; 8-byte elsewhere) once the destination is aligned, narrower ones
/// for a misaligned head and the tail.
///
/// # Safety
/// `dst..dst + len` is writable, `src..src + len` is readable, and the two do not overlap.
#[inline]
pub(crate) unsafe fn copy(dst: *mut u8, src: *const u8, len: usize) {
    let mut i = 0usize;
    // Head: single bytes, then dwords, then one qword, up to the destination's 16-byte boundary.
    while i < len && (dst as usize + i) & 3 != 0 {
        // SAFETY: i < len; the caller's ranges.
        unsafe { dst.add(i).write_volatile(src.add(i).read()) };
        i += 1;
    }
    while i + 4 <= len && (dst as usize + i) & 7 != 0 {
        // SAFETY: i + 4 <= len; the destination is 4-byte aligned here.
        unsafe { put32(dst.add(i), src.add(i)) };
        i += 4;
    }
    if i + 8 <= len && (dst as usize + i) & 15 != 0 {
        // SAFETY: i + 8 <= len; the destination is 8-byte aligned here.
        unsafe { put64(dst.add(i), src.add(i)) };
        i += 8;
    }
    // Body: whole lines, then 16-byte pieces (the destination is 16-byte aligned unless the range
    // ended first).
    while i + 64 <= len {
        // SAFETY: i + 64 <= len; the destination is 16-byte aligned.
        unsafe {
            put128(dst.add(i), src.add(i));
            put128(dst.add(i + 16), src.add(i + 16));
            put128(dst.add(i + 32), src.add(i + 32));
            put128(dst.add(i + 48), src.add(i + 48));
        }
        i += 64;
    }
    while i + 16 <= len {
        // SAFETY: i + 16 <= len; the destination is 16-byte aligned.
        unsafe { put128(dst.add(i), src.add(i)) };
        i += 16;
    }
    if i + 8 <= len {
        // SAFETY: i + 8 <= len; the destination is 8-byte aligned.
        unsafe { put64(dst.add(i), src.add(i)) };
        i += 8;
    }
    if i + 4 <= len {
        // SAFETY: i + 4 <= len; the destination is 4-byte aligned.
        unsafe { put32(dst.add(i), src.add(i)) };
        i += 4;
    }
    while i < len {
        // SAFETY: i < len.
        unsafe { dst.add(i).write_volatile(src.add(i).read()) };
        i += 1;
    }
}

/// # Safety
/// 4 readable bytes at `s`; 4 writable, 4-byte aligned bytes at `d`.
#[inline(always)]
unsafe fn put32(d: *mut u8, s: *const u8) {
    // SAFETY: the caller's contract.
    unsafe { (d as *mut u32).write_volatile((s as *const u32).read_unaligned()) }
}

/// # Safety
/// 8 readable bytes at `s`; 8 writable, 8-byte aligned bytes at `d`.
#[inline(always)]
unsafe fn put64(d: *mut u8, s: *const u8) {
    // SAFETY: the caller's contract.
    unsafe { (d as *mut u64).write_volatile((s as *const u64).read_unaligned()) }
}

/// # Safety
/// 16 readable bytes at `s`; 16 writable, 16-byte aligned bytes at `d`.
#[inline(always)]
unsafe fn put128(d: *mut u8, s: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: the caller's contract; SSE2 is part of the x86-64 baseline.
    unsafe {
        use std::arch::x86_64::{__m128i, _mm_loadu_si128};
        (d as *mut __m128i).write_volatile(_mm_loadu_si128(s as *const __m128i));
    }
    // aarch64: two 8-byte stores. Write-combined memory is Normal Non-cacheable there, which
    // gathers them in the write buffer like one 16-byte store; a misaligned source is fine (only
    // Device memory, the doorbell, needs aligned accesses). Their order relative to GP_PUT comes
    // from crate::hw::barrier::before_gp_put.
    #[cfg(not(target_arch = "x86_64"))]
    // SAFETY: the caller's contract.
    unsafe {
        put64(d, s);
        put64(d.add(8), s.add(8));
    }
}

/// [`copy`] of `n` dwords.
///
/// # Safety
/// As for [`copy`], with `n * 4` bytes.
#[inline]
pub(crate) unsafe fn copy_dwords(dst: *mut u32, src: *const u32, n: usize) {
    // SAFETY: the caller's ranges, in bytes.
    unsafe { copy(dst as *mut u8, src as *const u8, n * 4) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_every_length_and_alignment_exactly() {
        let src: Vec<u8> = (0..400u32).map(|i| (i * 37 + 11) as u8).collect();
        for len in 0..200 {
            for doff in 0..9 {
                for soff in 0..9 {
                    let mut dst = vec![0xeeu8; 220];
                    // SAFETY: both ranges lie inside their vectors and do not overlap.
                    unsafe { copy(dst.as_mut_ptr().add(doff), src.as_ptr().add(soff), len) };
                    assert!(
                        dst[..doff].iter().all(|&b| b == 0xee),
                        "head {len} {doff} {soff}"
                    );
                    assert_eq!(&dst[doff..doff + len], &src[soff..soff + len]);
                    assert!(
                        dst[doff + len..].iter().all(|&b| b == 0xee),
                        "tail {len} {doff}"
                    );
                }
            }
        }
        let words: Vec<u32> = (0..70).map(|i| i * 0x0101_0101 + 7).collect();
        let mut out = vec![0u32; 72];
        // SAFETY: 70 dwords fit in both vectors at these offsets.
        unsafe { copy_dwords(out.as_mut_ptr().add(1), words.as_ptr(), 70) };
        assert_eq!(out[0], 0);
        assert_eq!(&out[1..71], &words[..]);
        assert_eq!(out[71], 0);
    }
}
