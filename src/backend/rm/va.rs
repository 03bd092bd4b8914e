//! The GPU virtual-address window of the RM backend, and where buffers go in the CPU's address
//! space.
//!
//! **GPU addresses** come from a process-wide allocator (one per copy of the library) over a
//! fixed window, [`LOW_VA_BASE`, `LOW_VA_END`) (64 GiB .. 1 TiB): every buffer (its UVM external
//! range) and each channel's UVM range. The window lies below 2^40, so pushbuffers (GPFIFO
//! entries carry 40-bit addresses) and QMDs (dependent-QMD pointers) placed there satisfy their
//! 40-bit limits, and far below the Hopper shader windows (0x7293_0000_0000, 0x7294_0000_0000).
//! At 960 GiB it holds all the video memory of any current GPU (an H200 has 141 GB; the first
//! window, 64 GiB, refused the seventh 10 GiB buffer there). These are GPU addresses only:
//! UVM's external and channel ranges live in the UVM VA space of our own `/dev/nvidia-uvm` fd
//! and need no CPU mapping or reservation (`uvm_api_create_external_range` and
//! `uvm_api_register_channel` check alignment, overlap with other UVM ranges and, with HMM, drop
//! HMM blocks there; never the process's mappings).
//!
//! **CPU addresses.** A buffer's CPU mapping goes at its GPU address when the process has
//! nothing there ([`map_cpu`]: `MAP_FIXED_NOREPLACE`, which never replaces a mapping), so in an
//! ordinary process CPU pointers equal GPU addresses. When the address is taken by the
//! process's own mappings (AddressSanitizer's shadow and shadow gap cover 2 GiB .. 16 TiB on
//! x86-64; another allocator's reservations; a second copy of this library, whose allocator
//! hands out the same GPU addresses), the CPU mapping goes wherever the kernel puts it and the
//! buffer's CPU pointer differs from its GPU address. Nothing in the library or its API
//! assumes they are equal (`tg_buf_cpu_ptr` and `tg_buf_gpu_address` are separate, and the
//! pinned host pages of an OS-descriptor buffer are named to RM by their CPU address).
//! [`window_conflicts`] tells at device open whether the free part of the window is clear.

use crate::error::{Error, Result};
use crate::os::lock::ForkMutex as Mutex;
use crate::os::Sys;
use std::collections::BTreeMap;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

/// Start of the GPU VA window for buffers and UVM channel ranges.
pub const LOW_VA_BASE: u64 = 0x10_0000_0000;
/// End (exclusive) of that window.
pub const LOW_VA_END: u64 = 0x100_0000_0000;

// The window stays below 2^40 (pushbuffer/QMD limits) and below the Hopper shader windows, and
// holds at least 512 GiB.
const _: () = assert!(LOW_VA_END - LOW_VA_BASE >= 512 << 30);
const _: () = assert!(LOW_VA_END <= 1 << 40 && LOW_VA_END <= 0x7293_0000_0000);

/// A first-fit free-list allocator over `[base, end)` with coalescing.
#[derive(Debug)]
pub struct VaAllocator {
    base: u64,
    end: u64,
    /// start → length of each free block; blocks never touch (they are merged).
    free: BTreeMap<u64, u64>,
}

impl VaAllocator {
    /// An allocator with the whole of `[base, end)` free. `base` and `end` must be 4 KiB aligned.
    pub fn new(base: u64, end: u64) -> VaAllocator {
        let mut free = BTreeMap::new();
        if end > base {
            free.insert(base, end - base);
        }
        VaAllocator { base, end, free }
    }

    /// Reserve `size` bytes aligned to `align` (a power of two ≥ 4096). `None` when no free
    /// block fits or the arguments are invalid.
    pub fn alloc(&mut self, size: u64, align: u64) -> Option<u64> {
        if size == 0 || !align.is_power_of_two() || align < 4096 || size % 4096 != 0 {
            return None;
        }
        let mut pick = None;
        for (&start, &len) in &self.free {
            let aligned = start.checked_next_multiple_of(align)?;
            let end = start + len;
            if aligned.checked_add(size).is_some_and(|e| e <= end) {
                pick = Some((start, len, aligned));
                break;
            }
        }
        let (start, len, aligned) = pick?;
        self.free.remove(&start);
        if aligned > start {
            self.free.insert(start, aligned - start);
        }
        let tail = aligned + size;
        if tail < start + len {
            self.free.insert(tail, start + len - tail);
        }
        Some(aligned)
    }

    /// Return `[addr, addr + size)`. Ranges outside the window or overlapping a free block are
    /// ignored (returns false) so a double free cannot corrupt the list.
    pub fn free(&mut self, addr: u64, size: u64) -> bool {
        let Some(end) = addr.checked_add(size) else {
            return false;
        };
        if size == 0 || addr < self.base || end > self.end {
            return false;
        }
        // Overlap with the previous or next free block means a double free.
        if let Some((&ps, &pl)) = self.free.range(..=addr).next_back() {
            if ps + pl > addr {
                return false;
            }
        }
        if let Some((&ns, _)) = self.free.range(addr..).next() {
            if ns < end {
                return false;
            }
        }
        let mut start = addr;
        let mut len = size;
        if let Some((&ps, &pl)) = self.free.range(..addr).next_back() {
            if ps + pl == addr {
                self.free.remove(&ps);
                start = ps;
                len += pl;
            }
        }
        if let Some(&nl) = self.free.get(&end) {
            self.free.remove(&end);
            len += nl;
        }
        self.free.insert(start, len);
        true
    }

    /// Total free bytes.
    pub fn free_bytes(&self) -> u64 {
        self.free.values().sum()
    }

    /// The free blocks, `(start, end)` with `end` exclusive, in address order.
    pub fn free_blocks(&self) -> Vec<(u64, u64)> {
        self.free.iter().map(|(&s, &l)| (s, s + l)).collect()
    }
}

/// The process-wide allocator over the low window.
pub fn low_va() -> &'static Mutex<VaAllocator> {
    static LOW: OnceLock<Mutex<VaAllocator>> = OnceLock::new();
    LOW.get_or_init(|| {
        crate::os::fork::register(&FORK_LOCK);
        Mutex::new(VaAllocator::new(LOW_VA_BASE, LOW_VA_END))
    })
}

/// The low-window allocator's lock, held across `fork()` (see `crate::os::fork`).
pub(crate) static FORK_LOCK: crate::os::fork::ForkLock = crate::os::fork::ForkLock {
    order: 3,
    lock: || std::mem::forget(low_va().lock()),
    // SAFETY (of the call): the caller took the lock with `lock` and forgot its guard.
    unlock: || unsafe { low_va().force_unlock() },
};

/// CPU mappings this copy of the library placed away from their GPU address so far.
static DISPLACED: AtomicU64 = AtomicU64::new(0);

/// How many buffers' CPU mappings could not go at their GPU address (since the library was
/// loaded; freed buffers included).
pub fn displaced_count() -> u64 {
    DISPLACED.load(Ordering::Relaxed)
}

/// Where [`map_cpu`] put a mapping.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CpuMapping {
    /// The mapping's CPU address.
    pub addr: usize,
    /// Whether that is the GPU address asked for.
    pub at_gpu_address: bool,
}

/// Map `len` bytes read-write for the CPU (`flags`: `MAP_SHARED` with `fd`, or
/// `MAP_SHARED | MAP_ANONYMOUS`): at `va` (the buffer's GPU address) when the process has
/// nothing there, otherwise wherever the kernel puts it. Never replaces an existing mapping
/// (`MAP_FIXED_NOREPLACE`, then no address). The error names both attempts.
///
/// `MAP_FIXED_NOREPLACE` fails in the kernel's address-space check, before a device's mmap
/// handler runs, so the second attempt finds the RM mmap context of `fd` untouched.
pub fn map_cpu(sys: &dyn Sys, va: u64, len: usize, fd: RawFd, flags: i32) -> Result<CpuMapping> {
    let prot = libc::PROT_READ | libc::PROT_WRITE;
    // SAFETY: MAP_FIXED_NOREPLACE never replaces an existing mapping.
    let first = unsafe {
        sys.mmap(
            va as *mut u8,
            len,
            prot,
            flags | libc::MAP_FIXED_NOREPLACE,
            fd,
            0,
        )
    };
    let first_err = match first {
        Ok(p) => {
            let at = p as u64 == va;
            if !at {
                // A kernel without MAP_FIXED_NOREPLACE (before 4.17) takes the address as a
                // hint: the fresh mapping elsewhere serves as well.
                DISPLACED.fetch_add(1, Ordering::Relaxed);
                crate::log::debug!(
                    "CPU mapping of GPU VA {va:#x} ({len:#x} bytes) placed at {p:p} by the kernel"
                );
            }
            return Ok(CpuMapping {
                addr: p as usize,
                at_gpu_address: at,
            });
        }
        Err(e) => e,
    };
    let tried = Error::os(
        format!("mmap(addr={va:#x}, len={len:#x}, fd={fd}, MAP_FIXED_NOREPLACE)"),
        first_err,
    )
    .message;
    // SAFETY: no address: the kernel picks a free range, replacing nothing.
    let p = unsafe { sys.mmap(std::ptr::null_mut(), len, prot, flags, fd, 0) }.map_err(|e| {
        Error::os(
            format!("{tried}, and mmap(addr=NULL, len={len:#x}, fd={fd})"),
            e,
        )
    })?;
    DISPLACED.fetch_add(1, Ordering::Relaxed);
    crate::log::debug!(
        "CPU mapping of GPU VA {va:#x} ({len:#x} bytes) at {p:p}: {} at the GPU address",
        crate::error::errno_name(first_err)
    );
    Ok(CpuMapping {
        addr: p as usize,
        at_gpu_address: false,
    })
}

/// The parts of `free` (`(start, end)` blocks of the GPU VA window that no buffer uses) that
/// the process maps, according to `maps` (the text of `/proc/self/maps`): merged, in address
/// order. Buffers given GPU addresses there will get CPU mappings elsewhere ([`map_cpu`]).
pub fn window_conflicts(maps: &str, free: &[(u64, u64)]) -> Vec<(u64, u64)> {
    let mut out: Vec<(u64, u64)> = Vec::new();
    let mut ranges: Vec<(u64, u64)> = maps
        .lines()
        .filter_map(|l| {
            let (a, b) = l.split_whitespace().next()?.split_once('-')?;
            Some((
                u64::from_str_radix(a, 16).ok()?,
                u64::from_str_radix(b, 16).ok()?,
            ))
        })
        .filter(|&(a, b)| a < b)
        .collect();
    ranges.sort_unstable();
    for &(a, b) in &ranges {
        for &(fs, fe) in free {
            let (s, e) = (a.max(fs), b.min(fe));
            if s >= e {
                continue;
            }
            match out.last_mut() {
                Some(last) if last.1 >= s => last.1 = last.1.max(e),
                _ => out.push((s, e)),
            }
        }
    }
    out
}

/// [`window_conflicts`] of this process now, or `None` when `/proc/self/maps` cannot be read.
pub fn probe_window() -> Option<Vec<(u64, u64)>> {
    let free = low_va().lock().free_blocks();
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    Some(window_conflicts(&maps, &free))
}

/// `[a, b) [c, d) ...` with sizes, for messages.
pub fn describe_ranges(r: &[(u64, u64)]) -> String {
    let mut s = String::new();
    for (i, &(a, b)) in r.iter().enumerate() {
        if i == 8 {
            s.push_str(&format!(" and {} more", r.len() - 8));
            break;
        }
        if i > 0 {
            s.push_str(", ");
        }
        s.push_str(&format!("[{a:#x}, {b:#x}) ({} MiB)", (b - a) >> 20));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_fit_alignment_and_coalescing() {
        let mut a = VaAllocator::new(0x10_0000, 0x50_0000);
        let x = a.alloc(0x1000, 0x1000).unwrap();
        assert_eq!(x, 0x10_0000);
        // 2 MiB alignment skips to 0x20_0000.
        let y = a.alloc(0x20_0000, 0x20_0000).unwrap();
        assert_eq!(y, 0x20_0000);
        assert_eq!(a.free_bytes(), 0x40_0000 - 0x1000 - 0x20_0000);
        assert!(a.alloc(0x40_0000, 0x1000).is_none());
        assert!(a.free(x, 0x1000));
        assert!(!a.free(x, 0x1000), "double free must be refused");
        assert!(a.free(y, 0x20_0000));
        assert_eq!(a.free_bytes(), 0x40_0000);
        // Everything coalesced back into one block: a full-size allocation fits again.
        assert_eq!(a.alloc(0x40_0000, 0x1000), Some(0x10_0000));
    }

    #[test]
    fn window_holds_a_large_gpu_below_2_pow_40() {
        // Every buffer must fit (an H200 has 141 GB of video memory): 150 GiB in 10 GiB pieces.
        let mut a = VaAllocator::new(LOW_VA_BASE, LOW_VA_END);
        for i in 0..15u64 {
            let va = a.alloc(10 << 30, 2 << 20).expect("10 GiB range");
            assert_eq!(va, LOW_VA_BASE + i * (10 << 30));
        }
    }

    const ANON: i32 = libc::MAP_SHARED | libc::MAP_ANONYMOUS;

    /// A PROT_NONE, MAP_NORESERVE reservation at exactly `at`: what AddressSanitizer's shadow
    /// gap and other allocators' reservations look like.
    fn reserve_at(at: u64, len: usize) {
        let p = unsafe {
            libc::mmap(
                at as *mut libc::c_void,
                len,
                libc::PROT_NONE,
                libc::MAP_PRIVATE
                    | libc::MAP_ANONYMOUS
                    | libc::MAP_NORESERVE
                    | libc::MAP_FIXED_NOREPLACE,
                -1,
                0,
            )
        };
        assert_eq!(p as u64, at, "test reservation at {at:#x}");
    }

    fn mapped_exactly(a: u64, b: u64, perms: &str) -> bool {
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
        let want = format!("{a:x}-{b:x} {perms}");
        maps.lines().any(|l| l.starts_with(&want))
    }

    /// Each test uses its own part of the window (tests run in parallel in one process).
    #[test]
    fn cpu_mapping_at_the_gpu_address_when_free() {
        let va = 0xF0_0000_0000;
        let m = map_cpu(&crate::os::LinuxSys, va, 0x2000, -1, ANON).unwrap();
        assert_eq!(
            m,
            CpuMapping {
                addr: va as usize,
                at_gpu_address: true
            }
        );
        unsafe {
            *(m.addr as *mut u32) = 7;
            assert_eq!(*(m.addr as *const u32), 7);
            libc::munmap(m.addr as *mut libc::c_void, 0x2000);
        }
    }

    #[test]
    fn cpu_mapping_moves_when_the_process_holds_the_gpu_address() {
        // The process holds 16 MiB of the window, as ASan's shadow holds all of it.
        let base = 0xF1_0000_0000;
        reserve_at(base, 16 << 20);
        let before = displaced_count();
        let va = base + (4 << 20);
        let m = map_cpu(&crate::os::LinuxSys, va, 0x3000, -1, ANON).unwrap();
        assert!(!m.at_gpu_address);
        assert!(
            (m.addr as u64) < base || m.addr as u64 >= base + (16 << 20),
            "CPU mapping at {:#x} inside the reservation",
            m.addr
        );
        assert!(displaced_count() > before);
        // The reservation was not replaced, and the new mapping works.
        assert!(mapped_exactly(base, base + (16 << 20), "---p"));
        unsafe {
            std::ptr::write_bytes(m.addr as *mut u8, 0xab, 0x3000);
            assert_eq!(*((m.addr + 0x2fff) as *const u8), 0xab);
        }
        // The open-time probe sees the reservation in the free window.
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
        let c = window_conflicts(&maps, &[(base - (1 << 30), base + (1 << 30))]);
        assert!(c.contains(&(base, base + (16 << 20))), "{c:x?}");
        unsafe {
            libc::munmap(m.addr as *mut libc::c_void, 0x3000);
            libc::munmap(base as *mut libc::c_void, 16 << 20);
        }
    }

    #[test]
    fn two_copies_of_the_allocator_get_separate_cpu_mappings() {
        // A second copy of the library has its own allocator over the same window: both hand
        // out the same GPU address, and the second CPU mapping goes elsewhere.
        let window = (0xF2_0000_0000, 0xF3_0000_0000);
        let mut one = VaAllocator::new(window.0, window.1);
        let mut two = VaAllocator::new(window.0, window.1);
        let (a, b) = (
            one.alloc(2 << 20, 2 << 20).unwrap(),
            two.alloc(2 << 20, 2 << 20).unwrap(),
        );
        assert_eq!(a, b);
        let ma = map_cpu(&crate::os::LinuxSys, a, 2 << 20, -1, ANON).unwrap();
        let mb = map_cpu(&crate::os::LinuxSys, b, 2 << 20, -1, ANON).unwrap();
        assert!(ma.at_gpu_address && !mb.at_gpu_address);
        unsafe {
            *(ma.addr as *mut u64) = 1;
            *(mb.addr as *mut u64) = 2;
            assert_eq!(
                *(ma.addr as *const u64),
                1,
                "the second mapping clobbered the first"
            );
            libc::munmap(ma.addr as *mut libc::c_void, 2 << 20);
            libc::munmap(mb.addr as *mut libc::c_void, 2 << 20);
        }
    }

    #[test]
    fn cpu_mapping_errors_name_both_attempts() {
        // A file mapping of a bad fd fails at the GPU address and elsewhere.
        let e = map_cpu(
            &crate::os::LinuxSys,
            0xF4_0000_0000,
            0x1000,
            1 << 20,
            libc::MAP_SHARED,
        )
        .unwrap_err();
        assert!(
            e.message.contains("mmap(addr=0xf400000000, len=0x1000, fd=1048576, MAP_FIXED_NOREPLACE) failed: EBADF")
                && e.message.contains("and mmap(addr=NULL, len=0x1000, fd=1048576) failed: EBADF"),
            "{}",
            e.message
        );
    }

    #[test]
    fn window_conflicts_under_address_sanitizer() {
        let window = [(LOW_VA_BASE, LOW_VA_END)];
        // x86-64 ASan, default options: LowShadow, the PROT_NONE shadow gap, HighShadow.
        let asan = "\
55d4c8a00000-55d4c8a02000 r-xp 00000000 08:01 1234  /usr/bin/app
7fff7000-8fff7000 rw-p 00000000 00:00 0
8fff7000-2008fff7000 ---p 00000000 00:00 0
2008fff7000-10007fff8000 rw-p 00000000 00:00 0
600000000000-640000000000 rw-p 00000000 00:00 0
";
        assert_eq!(
            window_conflicts(asan, &window),
            vec![(LOW_VA_BASE, LOW_VA_END)]
        );
        // protect_shadow_gap=0: the gap is free, but its shadow (2.3 .. 258 GiB) is reserved.
        let unprotected = "\
7fff7000-8fff7000 rw-p 00000000 00:00 0
91ff6000-4091ff7000 rw-p 00000000 00:00 0
2008fff7000-10007fff8000 rw-p 00000000 00:00 0
";
        assert_eq!(
            window_conflicts(unprotected, &window),
            vec![(LOW_VA_BASE, 0x40_91ff_7000)]
        );
        // Only free blocks count: buffers of this copy (allocated blocks) are not conflicts,
        // and adjacent conflicting mappings merge.
        let free = [
            (0x10_0000_0000, 0x10_4000_0000),
            (0x10_8000_0000, 0x11_0000_0000),
        ];
        let maps = "\
1000000000-1000200000 rw-s 00000000 00:05 7  /dev/nvidia0
1000200000-1000400000 rw-s 00000000 00:05 7  /dev/nvidia0
1040000000-1080000000 rw-s 00000000 00:05 7  /dev/nvidia0
garbage line
";
        assert_eq!(
            window_conflicts(maps, &free),
            vec![(0x10_0000_0000, 0x10_0040_0000)]
        );
        // An ordinary process: nothing there.
        let plain = "\
55d4c8a00000-55d4c8a02000 r-xp 00000000 08:01 1234  /usr/bin/app
7f0000000000-7f0000021000 rw-p 00000000 00:00 0
";
        assert!(window_conflicts(plain, &window).is_empty());
        assert_eq!(
            describe_ranges(&[(LOW_VA_BASE, 0x40_91ff_7000)]),
            "[0x1000000000, 0x4091ff7000) (198943 MiB)"
        );
    }

    #[test]
    fn rejects_bad_arguments() {
        let mut a = VaAllocator::new(0x10_0000, 0x20_0000);
        assert!(a.alloc(0, 0x1000).is_none());
        assert!(a.alloc(0x1000, 0x1800).is_none());
        assert!(a.alloc(0x1001, 0x1000).is_none());
        assert!(!a.free(0x1000, 0x1000));
        assert!(!a.free(u64::MAX - 10, 0x1000));
    }
}
