//! Process-wide virtual-address allocator for CPU-visible GPU buffers.
//!
//! The RM backend maps every CPU-visible buffer at the same address on the CPU and the GPU, so
//! the addresses must be free in the process *and* in the GPU VA space. Like tinygrad, we hand
//! them out from a fixed low window, [`LOW_VA_BASE`, `LOW_VA_END`) (64 GiB .. 1 TiB), which the
//! Linux mmap allocator (top-down from below the stack) does not reach in practice; every CPU
//! mapping there uses `MAP_FIXED_NOREPLACE`, so a collision is reported instead of clobbering.
//! The window lies far below the Hopper shader windows (0x7293_0000_0000, 0x7294_0000_0000) and
//! below 2^40, so pushbuffers and QMDs placed there satisfy the 40-bit limits. At 960 GiB it
//! holds all the video memory of any current GPU (an H200 has 141 GB; the first window, 64 GiB,
//! refused the seventh 10 GiB buffer there).

use crate::os::lock::ForkMutex as Mutex;
use std::collections::BTreeMap;
use std::sync::OnceLock;

/// Start of the window for CPU-visible buffers and UVM channel ranges.
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
            let aligned = start.checked_add(align - 1)? & !(align - 1);
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
