//! A model of nvgpu's GPU-VA buddy allocator (`common/mm/allocators/buddy_allocator.c`), with the
//! placement policy of nvgpu-kernel-interface.md §7.4, so that emulated VAs equal the ones the
//! seeds observed on hardware.
//!
//! Blocks are 4 KiB. Block addresses are aligned relative to the allocator's `start`, not to 0.
//! Each order has a free list whose *head* is the most recently pushed block; allocation takes
//! the head of the first non-empty list of sufficient order and splits it, pushing the left and
//! then the right half (so the right half becomes the head) and continuing with the left half.

use std::collections::BTreeMap;

/// Block size (bytes) of every nvgpu VMA allocator on ga10b (4 KiB PTEs only).
pub const BLOCK: u64 = 4096;
const BLOCK_SHIFT: u32 = 12;
/// nvgpu's `GPU_BALLOC_MAX_ORDER`.
pub const MAX_ORDER: u32 = 31;

/// One buddy allocator over `[start, end)`.
#[derive(Debug, Clone)]
pub struct Buddy {
    start: u64,
    end: u64,
    max_order: u32,
    /// Free lists per order; the head is the *last* element of each vector.
    free: Vec<Vec<u64>>,
    /// Allocation start → the blocks (address, order) it consists of.
    allocs: BTreeMap<u64, Alloc>,
}

#[derive(Debug, Clone)]
struct Alloc {
    /// Length asked for (bytes, rounded to blocks).
    len: u64,
    blocks: Vec<(u64, u32)>,
}

fn order_len(order: u32) -> u64 {
    BLOCK << order
}

/// Smallest order whose block holds `len` bytes (len > 0).
fn order_for(len: u64) -> Option<u32> {
    let blocks = len.div_ceil(BLOCK);
    if blocks == 0 {
        return None;
    }
    let o = 64 - (blocks - 1).leading_zeros();
    if blocks == 1 {
        Some(0)
    } else {
        Some(o)
    }
}

impl Buddy {
    /// An allocator over `[start, end)`. Both must be 4 KiB aligned and `start < end`; the caller
    /// (ALLOC_AS) has already validated that.
    pub fn new(start: u64, end: u64) -> Buddy {
        let blocks = end.saturating_sub(start) >> BLOCK_SHIFT;
        let true_max = if blocks == 0 {
            0
        } else {
            63 - blocks.leading_zeros()
        };
        let max_order = true_max.min(MAX_ORDER);
        let mut b = Buddy {
            start,
            end,
            max_order,
            free: vec![Vec::new(); max_order as usize + 1],
            allocs: BTreeMap::new(),
        };
        // Carve the largest power-of-two block that fits the remainder, walking up from start.
        let mut cur = start;
        while cur < end {
            let remaining = (end - cur) >> BLOCK_SHIFT;
            if remaining == 0 {
                break;
            }
            let order = (63 - remaining.leading_zeros()).min(max_order);
            b.free[order as usize].push(cur);
            cur += order_len(order);
        }
        b
    }

    /// Start of the managed range.
    pub fn start(&self) -> u64 {
        self.start
    }

    /// End (exclusive) of the managed range.
    pub fn end(&self) -> u64 {
        self.end
    }

    fn list_remove(&mut self, addr: u64, order: u32) -> bool {
        let list = &mut self.free[order as usize];
        if let Some(i) = list.iter().rposition(|&a| a == addr) {
            list.remove(i);
            true
        } else {
            false
        }
    }

    /// Allocate `len` bytes (rounded up to a power-of-two number of blocks). Returns the VA.
    pub fn alloc(&mut self, len: u64) -> Option<u64> {
        let want = order_for(len)?;
        if want > self.max_order {
            return None;
        }
        let mut order = (want..=self.max_order).find(|&o| !self.free[o as usize].is_empty())?;
        let mut addr = self.free[order as usize].pop()?;
        while order > want {
            order -= 1;
            let left = addr;
            let right = addr + order_len(order);
            // Split: both halves go on the free list (left, then right at the head) and the
            // left half is taken off again to continue.
            self.free[order as usize].push(left);
            self.free[order as usize].push(right);
            self.list_remove(left, order);
            addr = left;
        }
        self.allocs.insert(
            addr,
            Alloc {
                len: len.div_ceil(BLOCK) * BLOCK,
                blocks: vec![(addr, want)],
            },
        );
        Some(addr)
    }

    /// Allocate exactly `[addr, addr + len)` if all of it is free (and inside the range).
    pub fn alloc_fixed(&mut self, addr: u64, len: u64) -> Option<u64> {
        if len == 0 || addr % BLOCK != 0 || addr < self.start || self.allocs.contains_key(&addr) {
            return None;
        }
        let len = len.div_ceil(BLOCK) * BLOCK;
        let end = addr.checked_add(len)?;
        if end > self.end {
            return None;
        }
        let mut blocks: Vec<(u64, u32)> = Vec::new();
        let mut cur = addr;
        while cur < end {
            let rel = (cur - self.start) >> BLOCK_SHIFT;
            let remaining = (end - cur) >> BLOCK_SHIFT;
            let align_order = if rel == 0 { 63 } else { rel.trailing_zeros() };
            let order = align_order
                .min(63 - remaining.leading_zeros())
                .min(self.max_order);
            if !self.take_fixed_block(cur, order) {
                // Roll back the blocks taken so far.
                for (a, o) in blocks {
                    self.free_block(a, o);
                }
                return None;
            }
            blocks.push((cur, order));
            cur += order_len(order);
        }
        self.allocs.insert(addr, Alloc { len, blocks });
        Some(addr)
    }

    /// Take the block `(addr, order)` out of the free space, splitting the free block that
    /// contains it. False if no free block contains it.
    fn take_fixed_block(&mut self, addr: u64, order: u32) -> bool {
        let rel = addr - self.start;
        // Find the free block containing it.
        let mut found = None;
        for o in order..=self.max_order {
            let base = self.start + (rel & !(order_len(o) - 1));
            if self.free[o as usize].contains(&base) {
                found = Some((base, o));
                break;
            }
        }
        let Some((mut base, mut o)) = found else {
            return false;
        };
        self.list_remove(base, o);
        while o > order {
            o -= 1;
            let left = base;
            let right = base + order_len(o);
            self.free[o as usize].push(left);
            self.free[o as usize].push(right);
            base = if addr < right { left } else { right };
            self.list_remove(base, o);
        }
        true
    }

    /// Put one block back, coalescing with its free buddy repeatedly.
    fn free_block(&mut self, mut addr: u64, mut order: u32) {
        while order < self.max_order {
            let size = order_len(order);
            let buddy = self.start + ((addr - self.start) ^ size);
            let parent = addr.min(buddy);
            if parent + 2 * size > self.end || !self.list_remove(buddy, order) {
                break;
            }
            addr = parent;
            order += 1;
        }
        self.free[order as usize].push(addr);
    }

    /// Free the allocation that starts at `addr`. False if there is none.
    pub fn free(&mut self, addr: u64) -> bool {
        match self.allocs.remove(&addr) {
            Some(a) => {
                for (b, o) in a.blocks {
                    self.free_block(b, o);
                }
                true
            }
            None => false,
        }
    }

    /// The allocation starting at `addr`, as `(start, len)`.
    pub fn allocation(&self, addr: u64) -> Option<(u64, u64)> {
        self.allocs.get(&addr).map(|a| (addr, a.len))
    }

    /// Whether every byte of `[addr, addr+len)` is free.
    pub fn is_free(&self, addr: u64, len: u64) -> bool {
        let Some(end) = addr.checked_add(len) else {
            return false;
        };
        if addr < self.start || end > self.end {
            return false;
        }
        // Every allocated block overlapping the range makes it non-free.
        !self
            .allocs
            .values()
            .flat_map(|a| a.blocks.iter())
            .any(|&(b, o)| b < end && addr < b + order_len(o))
    }

    /// Total free bytes.
    pub fn free_bytes(&self) -> u64 {
        self.free
            .iter()
            .enumerate()
            .map(|(o, l)| l.len() as u64 * order_len(o as u32))
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Independently known values: nvgpu-kernel-interface.md §7.4 (seen on hardware).
    #[test]
    fn seed_user_vma_sequence() {
        let mut b = Buddy::new(0x200000, 0xFF_FFE0_0000);
        assert_eq!(b.alloc(4096), Some(0xff_ffa0_0000));
        assert_eq!(b.alloc(4096), Some(0xff_ffa0_1000));
        assert_eq!(b.alloc(65536), Some(0xff_ffa1_0000));
        assert_eq!(b.alloc(1 << 20), Some(0xff_ffb0_0000));
        assert_eq!(b.alloc(16 << 20), Some(0xff_fe20_0000));
        assert_eq!(b.alloc(64 << 20), Some(0xff_f820_0000));
    }

    #[test]
    fn seed_kernel_vma_sequence() {
        let start = 0xFF_FFE0_0000u64;
        let mut b = Buddy::new(start, start + (4 << 30));
        assert_eq!(b.alloc(8192), Some(0xff_ffe0_0000));
        assert_eq!(b.alloc(64 << 20), Some(0x100_03e0_0000));
        assert_eq!(b.alloc(64 << 10), Some(0xff_ffe1_0000));
    }

    #[test]
    fn three_mib_gpfifo_straddles_2_40() {
        let start = 0xFF_FFE0_0000u64;
        let mut b = Buddy::new(start, start + (4 << 30));
        assert_eq!(b.alloc(3 << 20), Some(start));
        assert_eq!(b.alloc(64 << 20), Some(0x100_03e0_0000));
        assert_eq!(b.alloc(64 << 10), Some(0x100_0020_0000));
    }

    #[test]
    fn free_coalesces_back_to_initial_state() {
        let mut b = Buddy::new(0x200000, 0xFF_FFE0_0000);
        let total = b.free_bytes();
        assert_eq!(total, 0xFF_FFE0_0000 - 0x200000);
        let v: Vec<u64> = [4096u64, 8192, 65536, 3 << 20, 1 << 30]
            .iter()
            .map(|&l| b.alloc(l).unwrap())
            .collect();
        assert!(b.free_bytes() < total);
        for a in v.iter().rev() {
            assert!(b.free(*a));
        }
        assert_eq!(b.free_bytes(), total);
        // After a full free the same sequence repeats.
        assert_eq!(b.alloc(4096), Some(0xff_ffa0_0000));
        assert!(!b.free(0x1234000));
    }

    #[test]
    fn fixed_allocations() {
        let mut b = Buddy::new(0x200000, 0xFF_FFE0_0000);
        let total = b.free_bytes();
        // tinygrad's windows: 1 GiB at 0xFE00000000 and 0xFD00000000.
        assert_eq!(b.alloc_fixed(0xFE_0000_0000, 1 << 30), Some(0xFE_0000_0000));
        assert_eq!(b.alloc_fixed(0xFD_0000_0000, 1 << 30), Some(0xFD_0000_0000));
        assert_eq!(b.alloc_fixed(0xFD_0000_0000 + 4096, 4096), None, "overlap");
        assert_eq!(b.alloc_fixed(0xFC_FFFF_F000, 8192), None, "partial overlap");
        assert!(!b.is_free(0xFE_1000_0000, 4096));
        assert!(b.is_free(0xFC_0000_0000, 4096));
        // Non-fixed allocations never land inside them.
        for _ in 0..64 {
            let a = b.alloc(16 << 20).unwrap();
            for w in [0xFD_0000_0000u64, 0xFE_0000_0000] {
                assert!(
                    a + (16 << 20) <= w || a >= w + (1 << 30),
                    "{a:#x} inside window {w:#x}"
                );
            }
        }
        // Unaligned / out-of-range fixed requests.
        assert_eq!(b.alloc_fixed(0x100, 4096), None);
        assert_eq!(b.alloc_fixed(0x1000, 4096), None);
        assert_eq!(b.alloc_fixed(0xFF_FFE0_0000, 4096), None);
        let mut c = Buddy::new(0x200000, 0xFF_FFE0_0000);
        let a = c.alloc_fixed(0x20_0030_0000, 0x123_4000).unwrap();
        assert!(c.free(a));
        assert_eq!(c.free_bytes(), total);
    }
}
