//! GPFIFO entries and the ring that feeds them to Host (gpu-programming-interface.md §1.3–§1.6).
//!
//! GP entry format (`NV_PPBDMA_GP_ENTRY`, 64 bits): 0 FETCH, 31:2 GET (PB address 31:2),
//! 39:32 GET_HI, 41 LEVEL, 62:42 LENGTH (dwords), 63 SYNC.
//!
//! **LEVEL choice:** [`gp_entry`] sets LEVEL = SUBROUTINE (bit 41), as tinygrad does on Orin and
//! H200 and as nvgpu's own `gm20b_pbdma_format_gpfifo_entry` does; it only means Host does not
//! update TOP_LEVEL_GET, which nothing here reads. [`gp_entry_level`] lets a caller choose.

use crate::error::{Error, Result, Status};
use crate::hw::barrier;
use crate::hw::method::NVC56F_USERD_GP_PUT;
use std::time::{Duration, Instant};

/// Bytes per GP entry.
pub const GP_ENTRY_SIZE: usize = 8;
/// GP entry LEVEL bit (SUBROUTINE).
pub const GP_ENTRY_LEVEL_SUBROUTINE: u64 = 1 << 41;
/// GP entry SYNC bit (wait for the previous segment to be fully processed by Host).
pub const GP_ENTRY_SYNC_WAIT: u64 = 1 << 63;
/// Shift of the GP entry LENGTH field.
pub const GP_ENTRY_LENGTH_SHIFT: u32 = 42;
/// Largest pushbuffer segment length in dwords (21-bit field).
pub const GP_ENTRY_MAX_LENGTH: u32 = (1 << 21) - 1;
/// Pushbuffers must lie below 2^40 (GET/GET_HI = 40 bits on c56f/c76f).
pub const GP_ENTRY_VA_LIMIT: u64 = 1 << 40;

/// GP entry for a pushbuffer segment with an explicit LEVEL (`subroutine` = bit 41).
pub fn gp_entry_level(pb_va: u64, len_dwords: u32, sync: bool, subroutine: bool) -> Result<u64> {
    let end = pb_va.checked_add(u64::from(len_dwords) * 4);
    if pb_va & 3 != 0
        || len_dwords == 0
        || len_dwords > GP_ENTRY_MAX_LENGTH
        || !matches!(end, Some(e) if e <= GP_ENTRY_VA_LIMIT)
    {
        return Err(Error::invalid(format!(
            "hw::gpfifo::gp_entry(pb_va={pb_va:#x}, len_dwords={len_dwords}): the pushbuffer must be 4-byte aligned, \
             below 2^40, and 1..={GP_ENTRY_MAX_LENGTH} dwords long"
        )));
    }
    let mut e = pb_va | (u64::from(len_dwords) << GP_ENTRY_LENGTH_SHIFT);
    if subroutine {
        e |= GP_ENTRY_LEVEL_SUBROUTINE;
    }
    if sync {
        e |= GP_ENTRY_SYNC_WAIT;
    }
    Ok(e)
}

/// GP entry for a pushbuffer segment at `pb_va` of `len_dwords` dwords (LEVEL = SUBROUTINE).
pub fn gp_entry(pb_va: u64, len_dwords: u32, sync: bool) -> Result<u64> {
    gp_entry_level(pb_va, len_dwords, sync, true)
}

/// Spins of the full-ring wait before it starts sleeping.
const SPIN_POLLS: u32 = 2000;
/// Sleep between polls once spinning is over.
const POLL_SLEEP: Duration = Duration::from_micros(50);

/// Ring a channel's doorbell again (full barrier, then the token store), from any thread.
///
/// Harmless for the GPU: the host re-reads GP_PUT from USERD and finds either new entries or
/// none. Waits use it to recover a doorbell that reached the GPU before the GP_PUT written just
/// ahead of it did (on GH100 the driver flushes BAR1 writes before a BAR0 doorbell for this
/// reason; user-space submission does not, so a wait that sees no progress rings again).
///
/// # Safety
/// `doorbell` must be the writable, 4-byte aligned doorbell word of a live channel.
pub unsafe fn ring_doorbell_again(doorbell: *mut u32, token: u32) {
    // GP_PUT was written (and completed, by the barrier of the kick that wrote it) by whichever
    // thread submitted; this barrier only keeps the re-ring after what this thread wrote.
    barrier::before_doorbell();
    // SAFETY: the caller's contract.
    unsafe { std::ptr::write_volatile(doorbell, token) };
}

/// How often a wait that sees no progress rings the doorbells of busy channels again.
pub const DOORBELL_RETRY: Duration = Duration::from_millis(1);

/// A GPFIFO ring: the entries, the channel's USERD and its doorbell.
///
/// One slot is always left empty, so `put == get` means empty. `push` writes entries and never
/// overwrites one the GPU has not consumed; `kick` publishes them (GP_PUT + doorbell).
#[derive(Debug)]
pub struct GpRing {
    ring: *mut u64,
    entries: u32,
    mask: u32,
    put: u32,
    last_get: u32,
    userd: *mut u8,
    doorbell: *mut u32,
    token: u32,
    label: &'static str,
}

// SAFETY: the pointers refer to mappings the creator guarantees stay valid for the ring's life
// (see `GpRing::new`); the ring is used through `&mut self`, so there is no unsynchronized
// sharing.
unsafe impl Send for GpRing {}

impl GpRing {
    /// Create the ring state. `entries` must be a power of two >= 2.
    ///
    /// # Safety
    /// `ring` must point to `entries` writable, 8-byte aligned u64s; `userd` to at least 0x90
    /// writable bytes (4-byte aligned) of the channel's USERD; `doorbell` to the writable,
    /// 4-byte aligned doorbell word (usermode base + 0x90). All must stay valid while the
    /// `GpRing` exists, and nothing else may write the ring entries or GP_PUT.
    pub unsafe fn new(
        ring: *mut u64,
        entries: u32,
        userd: *mut u8,
        doorbell: *mut u32,
        token: u32,
        label: &'static str,
    ) -> Result<GpRing> {
        if ring.is_null()
            || userd.is_null()
            || doorbell.is_null()
            || !entries.is_power_of_two()
            || entries < 2
            || (ring as usize) % 8 != 0
            || (userd as usize) % 4 != 0
            || (doorbell as usize) % 4 != 0
        {
            return Err(Error::invalid(format!(
                "hw::gpfifo::GpRing::new({label}: ring={ring:p}, entries={entries}, userd={userd:p}, doorbell={doorbell:p}): \
                 pointers must be non-null and aligned, entries a power of two >= 2"
            )));
        }
        Ok(GpRing {
            ring,
            entries,
            mask: entries - 1,
            put: 0,
            last_get: 0,
            userd,
            doorbell,
            token,
            label,
        })
    }

    /// Number of entries (power of two).
    pub fn entries(&self) -> u32 {
        self.entries
    }
    /// Index of the next entry to be written (the GP_PUT value the next `kick` publishes).
    pub fn put(&self) -> u32 {
        self.put
    }
    /// The ring's label (for messages).
    pub fn label(&self) -> &'static str {
        self.label
    }
    /// Start over at `put` (e.g. after the channel was re-created with GP_GET = GP_PUT = `put`).
    pub fn reset(&mut self, put: u32) {
        self.put = put & self.mask;
        self.last_get = self.put;
    }

    /// Free slots given the GPU's `gp_get` (an index below `entries`; larger values count as
    /// "no room"). One slot always stays empty.
    pub fn free_slots(&self, gp_get: u32) -> u32 {
        if gp_get >= self.entries {
            return 0;
        }
        let used = self.put.wrapping_sub(gp_get) & self.mask;
        self.entries - 1 - used
    }

    /// Whether the ring is full as far as the last GP_GET seen tells (no USERD read).
    pub fn full_by_last_get(&self) -> bool {
        self.free_slots(self.last_get) == 0
    }

    /// Read GP_GET from USERD (byte 0x88). It may be stale (a lower bound of the GPU's progress).
    ///
    /// No barrier after it: the GPU's host has fetched an entry before it moves GP_GET past it,
    /// and the only accesses that depend on the value are the stores that reuse freed slots
    /// ([`GpRing::push`]), which are control-dependent on it (`free_slots`); Arm makes no store
    /// visible before the branch it depends on has resolved, and x86-64 does not reorder stores
    /// with older loads.
    pub fn userd_gp_get(&self) -> u32 {
        // SAFETY: `new`'s contract: userd points to >= 0x90 readable, 4-aligned bytes.
        unsafe {
            std::ptr::read_volatile(
                self.userd.add(crate::hw::method::NVC56F_USERD_GP_GET) as *const u32
            )
        }
    }

    /// Write `entry` at the next slot if the last GP_GET seen leaves room; false (nothing
    /// written) otherwise. No USERD read, never kicks.
    #[inline]
    pub fn try_push(&mut self, entry: u64) -> bool {
        if self.free_slots(self.last_get) == 0 {
            return false;
        }
        // SAFETY: put < entries and `new`'s contract makes ring[0..entries) writable.
        unsafe { std::ptr::write_volatile(self.ring.add(self.put as usize), entry) };
        self.put = (self.put + 1) & self.mask;
        true
    }

    /// Write `entry` at the next slot. When the ring is full, polls `progress` (which returns
    /// the GPU's GP_GET) — spinning first, then sleeping briefly — until a slot frees, failing
    /// with `Status::Timeout` after `timeout_ns`. Never overwrites an unconsumed entry and never
    /// kicks.
    pub fn push(
        &mut self,
        entry: u64,
        progress: &mut dyn FnMut() -> Result<u32>,
        timeout_ns: u64,
    ) -> Result<()> {
        if self.free_slots(self.last_get) == 0 {
            self.wait_for_slot(progress, timeout_ns)?;
        }
        // SAFETY: put < entries and `new`'s contract makes ring[0..entries) writable.
        unsafe { std::ptr::write_volatile(self.ring.add(self.put as usize), entry) };
        self.put = (self.put + 1) & self.mask;
        Ok(())
    }

    #[cold]
    fn wait_for_slot(
        &mut self,
        progress: &mut dyn FnMut() -> Result<u32>,
        timeout_ns: u64,
    ) -> Result<()> {
        let start = Instant::now();
        let mut polls: u32 = 0;
        let mut last_ring = start;
        loop {
            let get = progress()?;
            if get >= self.entries {
                return Err(Error::new(
                    Status::DeviceFault,
                    format!(
                        "hw::gpfifo::GpRing::push({}): GP_GET {get} is out of range (entries {})",
                        self.label, self.entries
                    ),
                ));
            }
            self.last_get = get;
            if self.free_slots(get) > 0 {
                return Ok(());
            }
            let waited = start.elapsed();
            if waited.as_nanos() >= u128::from(timeout_ns) {
                return Err(Error::new(
                    Status::Timeout,
                    format!(
                        "hw::gpfifo::GpRing::push({}): ring full for {} ns (put={}, gp_get={get}, entries={})",
                        self.label,
                        waited.as_nanos(),
                        self.put,
                        self.entries
                    ),
                ));
            }
            if last_ring.elapsed() >= DOORBELL_RETRY {
                // The ring is full and the GPU has not consumed an entry for a while.
                // SAFETY: `new`'s contract: doorbell is a writable, aligned u32.
                unsafe { ring_doorbell_again(self.doorbell, self.token) };
                last_ring = Instant::now();
            }
            if polls < SPIN_POLLS {
                polls += 1;
                std::hint::spin_loop();
            } else {
                let left = Duration::from_nanos(timeout_ns).saturating_sub(waited);
                std::thread::sleep(POLL_SLEEP.min(left));
            }
        }
    }

    /// Publish the entries written since the last kick: store barrier, volatile GP_PUT (USERD
    /// byte 0x8C), full barrier, volatile write of the work-submit token to the doorbell. Each
    /// barrier is argued in [`crate::hw::barrier`].
    pub fn kick(&mut self) {
        self.publish_put();
        // GP_PUT complete (visible to the GPU's host, which reads it from USERD on the doorbell)
        // before the doorbell store is issued: aarch64 `dsb sy`, x86-64 `mfence`.
        barrier::before_doorbell();
        // The doorbell: one aligned 32-bit store to Device-nGnRnE (Arm) / UC (x86-64) memory; it
        // is neither merged nor reordered with other device accesses.
        // SAFETY: `new`'s contract: doorbell is a writable, aligned u32.
        unsafe { std::ptr::write_volatile(self.doorbell, self.token) };
    }

    /// Write GP_PUT (after a store barrier) without ringing the doorbell: `kick` without its
    /// last store. Only for tests that model a doorbell the GPU acted on too early.
    pub fn publish_put(&mut self) {
        // Every ring store before (GPFIFO entries written by `push`, and the pushbuffer, QMDs and
        // constant banks they point to, including stores of other threads this one has observed
        // through the queue's lock) visible to the GPU before GP_PUT: aarch64 `dsb st`, x86-64
        // `sfence`.
        barrier::before_gp_put();
        // SAFETY: `new`'s contract: userd has >= 0x90 writable, 4-aligned bytes.
        unsafe {
            std::ptr::write_volatile(self.userd.add(NVC56F_USERD_GP_PUT) as *mut u32, self.put)
        };
    }
}
