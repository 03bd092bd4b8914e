//! GPU memory access for the engines: piecewise translation of ranges that span several mappings,
//! and naturally aligned atomic loads/stores for semaphores.

use crate::emu::hwif::{HostPtr, Mmu, MmuFault};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// Page granularity used when a range has to be split between mappings.
const PAGE: u64 = 4096;

/// CLOCK_MONOTONIC in nanoseconds (the model's PTIMER).
pub(crate) fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes the struct we pass; CLOCK_MONOTONIC always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    (ts.tv_sec as u64)
        .wrapping_mul(1_000_000_000)
        .wrapping_add(ts.tv_nsec as u64)
}

fn fault(va: u64, len: u64, write: bool) -> MmuFault {
    MmuFault {
        address: va,
        write,
        what: if write {
            format!("write of {len} bytes to unmapped or read-only GPU VA {va:#x}")
        } else {
            format!("read of {len} bytes at unmapped GPU VA {va:#x}")
        },
    }
}

/// The longest prefix of `[va, va + len)` that one `translate` call accepts, as (host pointer,
/// length). Fails with an MMU fault at `va` when not even the first byte is mapped.
pub(crate) fn longest_piece(
    mmu: &dyn Mmu,
    va: u64,
    len: u64,
    write: bool,
) -> Result<(HostPtr, u64), MmuFault> {
    if let Some(p) = mmu.translate(va, len, write) {
        return Ok((p, len));
    }
    // Mappings are page-granular: if `va` is mapped, so is the rest of its page.
    let to_page_end = (PAGE - (va % PAGE)).min(len);
    let p = match mmu.translate(va, to_page_end, write) {
        Some(p) => p,
        None => {
            // Fake MMUs in tests may use byte-granular regions: fall back to a single byte.
            let p = mmu
                .translate(va, 1, write)
                .ok_or_else(|| fault(va, len, write))?;
            let mut ok = 1u64;
            let mut step = 1u64;
            while ok + step <= len && mmu.translate(va, ok + step, write).is_some() {
                ok += step;
                step *= 2;
            }
            while step > 1 {
                step /= 2;
                if ok + step <= len && mmu.translate(va, ok + step, write).is_some() {
                    ok += step;
                }
            }
            return Ok((p, ok));
        }
    };
    // Gallop in whole pages, then binary-search the end.
    let mut ok = to_page_end;
    let mut step = PAGE;
    while ok + step <= len && mmu.translate(va, ok + step, write).is_some() {
        ok += step;
        step = step.saturating_mul(2);
    }
    while step > PAGE {
        step /= 2;
        if ok + step <= len && mmu.translate(va, ok + step, write).is_some() {
            ok += step;
        }
    }
    Ok((p, ok))
}

/// Call `f(host_ptr, offset_in_range, piece_len)` for consecutive pieces that cover
/// `[va, va + len)`, each inside one mapping. The first unmapped byte gives an MMU fault.
pub(crate) fn for_each_piece(
    mmu: &dyn Mmu,
    va: u64,
    len: u64,
    write: bool,
    mut f: impl FnMut(HostPtr, u64, u64),
) -> Result<(), MmuFault> {
    if va.checked_add(len).is_none() {
        return Err(fault(va, len, write));
    }
    let mut off = 0u64;
    while off < len {
        let (p, n) = longest_piece(mmu, va + off, len - off, write)?;
        f(p, off, n);
        off += n;
    }
    Ok(())
}

/// Read `buf.len()` bytes at `va`, crossing mappings as needed.
pub(crate) fn read(mmu: &dyn Mmu, va: u64, buf: &mut [u8]) -> Result<(), MmuFault> {
    let dst = buf.as_mut_ptr();
    for_each_piece(mmu, va, buf.len() as u64, false, |p, off, n| {
        // SAFETY: translate vouched for [p, p + n); off + n <= buf.len().
        unsafe { std::ptr::copy(p.0, dst.add(off as usize), n as usize) }
    })
}

/// Write `data` at `va`, crossing mappings as needed. Nothing is written if any byte of the
/// range is unmapped (the range is checked first).
pub(crate) fn write(mmu: &dyn Mmu, va: u64, data: &[u8]) -> Result<(), MmuFault> {
    let mut pieces = Vec::new();
    for_each_piece(mmu, va, data.len() as u64, true, |p, off, n| {
        pieces.push((p, off, n))
    })?;
    for (p, off, n) in pieces {
        // SAFETY: as in `read`.
        unsafe { std::ptr::copy(data.as_ptr().add(off as usize), p.0, n as usize) }
    }
    Ok(())
}

/// A naturally aligned 32- or 64-bit word for semaphore access.
fn word_ptr(mmu: &dyn Mmu, va: u64, size: u64, write: bool) -> Result<*mut u8, MmuFault> {
    mmu.translate(va, size, write)
        .map(|p| p.0)
        .ok_or_else(|| fault(va, size, write))
}

/// Atomic load of a 32-bit (`is64` false) or 64-bit semaphore value. `va` must be aligned.
pub(crate) fn load_word(mmu: &dyn Mmu, va: u64, is64: bool) -> Result<u64, MmuFault> {
    let p = word_ptr(mmu, va, if is64 { 8 } else { 4 }, false)?;
    // SAFETY: mapped (translate) and, when the host mapping is at least 8-aligned like all page
    // mappings, naturally aligned because `va` is; fall back to unaligned plain reads otherwise.
    unsafe {
        if is64 {
            if (p as usize) % 8 == 0 {
                Ok((*(p as *const AtomicU64)).load(Ordering::Acquire))
            } else {
                Ok(std::ptr::read_unaligned(p as *const u64))
            }
        } else if (p as usize) % 4 == 0 {
            Ok(u64::from(
                (*(p as *const AtomicU32)).load(Ordering::Acquire),
            ))
        } else {
            Ok(u64::from(std::ptr::read_unaligned(p as *const u32)))
        }
    }
}

/// Atomic store of a 32- or 64-bit value (release ordering, so earlier writes are visible first).
pub(crate) fn store_word(mmu: &dyn Mmu, va: u64, value: u64, is64: bool) -> Result<(), MmuFault> {
    let p = word_ptr(mmu, va, if is64 { 8 } else { 4 }, true)?;
    // SAFETY: as in load_word.
    unsafe {
        if is64 {
            if (p as usize) % 8 == 0 {
                (*(p as *const AtomicU64)).store(value, Ordering::Release)
            } else {
                std::ptr::write_unaligned(p as *mut u64, value)
            }
        } else if (p as usize) % 4 == 0 {
            (*(p as *const AtomicU32)).store(value as u32, Ordering::Release)
        } else {
            std::ptr::write_unaligned(p as *mut u32, value as u32)
        }
    }
    Ok(())
}

/// Write a semaphore structure: for `timestamp`, the 16-byte form (timestamp at +8 written first,
/// then the payload as 8 bytes at +0); otherwise the payload as 4 or 8 bytes.
pub(crate) fn release(
    mmu: &dyn Mmu,
    va: u64,
    payload: u64,
    is64: bool,
    timestamp: bool,
) -> Result<(), MmuFault> {
    if timestamp {
        // Check the whole structure first so a fault leaves memory untouched.
        word_ptr(mmu, va, 16, true)?;
        store_word(mmu, va + 8, now_ns(), true)?;
        let payload = if is64 { payload } else { payload & 0xffff_ffff };
        store_word(mmu, va, payload, true)
    } else {
        store_word(mmu, va, payload, is64)
    }
}

/// Load a u32 at `offset` of a host page (USERD words, doorbell).
pub(crate) fn host_load(p: HostPtr, offset: usize) -> u32 {
    // SAFETY: callers pass offsets inside live shared pages (USERD, doorbell page) that the
    // emulated kernel keeps mapped while they are registered with the GPU.
    unsafe {
        let q = p.0.add(offset);
        if (q as usize) % 4 == 0 {
            (*(q as *const AtomicU32)).load(Ordering::Acquire)
        } else {
            std::ptr::read_unaligned(q as *const u32)
        }
    }
}

/// Store a u32 at `offset` of a host page (release ordering).
pub(crate) fn host_store(p: HostPtr, offset: usize, v: u32) {
    // SAFETY: as in host_load.
    unsafe {
        let q = p.0.add(offset);
        if (q as usize) % 4 == 0 {
            (*(q as *const AtomicU32)).store(v, Ordering::Release)
        } else {
            std::ptr::write_unaligned(q as *mut u32, v)
        }
    }
}

/// Atomically exchange the u32 at `offset` of a host page; `None` if it is not 4-aligned.
pub(crate) fn host_swap(p: HostPtr, offset: usize, v: u32) -> Option<u32> {
    // SAFETY: as in host_load; the atomic is only formed on an aligned address.
    unsafe {
        let q = p.0.add(offset);
        if (q as usize) % 4 == 0 {
            Some((*(q as *const AtomicU32)).swap(v, Ordering::AcqRel))
        } else {
            None
        }
    }
}
