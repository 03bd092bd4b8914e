//! Timeline signals: a 64-bit value (plus a 64-bit GPU timestamp) in GPU-visible memory that the
//! GPU writes with semaphore releases and the CPU polls.

use super::buffer::Buffer;
use super::device::Device;
use super::queue::{fence_now, fence_passed, Fence};
use crate::backend::{Allocation, Backend, MemFlags};
use crate::error::{Error, Result, Status};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Bytes per signal slot: u64 value, u64 timestamp (the 16-byte semaphore format).
pub const SLOT_BYTES: u64 = 16;
const CHUNK_BYTES: u64 = 64 * 1024;

/// A signal slot: its GPU address, CPU pointer and the allocation id of its chunk (peer access
/// looks the chunk up: a peer's queue waits on the slot where the chunk is mapped into it).
pub(crate) type Slot = (u64, *mut u8, u64);

#[derive(Default)]
pub(crate) struct SignalPool {
    chunks: Vec<Allocation>,
    free: Vec<Slot>,
    /// Freed slots that queued work may still write: reused once the queues pass these values.
    parked: Vec<(Slot, Fence)>,
}
// SAFETY: the raw pointers refer to the pool's own shared mappings.
unsafe impl Send for SignalPool {}

/// Freed slots parked outside the pool (see `DeviceInner::signal_drops`).
#[derive(Default)]
pub(crate) struct DroppedSlots(Vec<(Slot, Fence)>);
// SAFETY: the raw pointers refer to the pool's own shared mappings.
unsafe impl Send for DroppedSlots {}

impl SignalPool {
    /// Take the slots parked in `dropped` into the pool.
    pub(crate) fn merge(&mut self, dropped: &mut DroppedSlots) {
        self.parked.append(&mut dropped.0);
    }

    /// Freed slots that queued work may still write.
    pub(crate) fn held(&self) -> usize {
        self.parked.iter().filter(|(_, f)| !fence_passed(f)).count()
    }

    fn take(&mut self, dev: &Device) -> Result<Slot> {
        if self.free.is_empty() {
            let mut i = 0;
            while i < self.parked.len() {
                if fence_passed(&self.parked[i].1) {
                    let (slot, _) = self.parked.swap_remove(i);
                    self.free.push(slot);
                } else {
                    i += 1;
                }
            }
        }
        if self.free.is_empty() {
            let backend = dev.backend();
            let a = backend.alloc(
                CHUNK_BYTES,
                MemFlags {
                    cpu_cached: true,
                    zeroed: true,
                    ..Default::default()
                },
            )?;
            // Mapped into the devices with peer access to this one, like a host buffer, so that
            // their queues can wait on these signals (`Queue::wait`).
            if let Err(e) = dev.peer_add_buffer(&a, true) {
                let _ = backend.free(&a);
                return Err(e);
            }
            for k in (0..CHUNK_BYTES / SLOT_BYTES).rev() {
                // SAFETY: inside the chunk just allocated.
                self.free.push((
                    a.gpu_va + k * SLOT_BYTES,
                    unsafe { a.cpu.add((k * SLOT_BYTES) as usize) },
                    a.id,
                ));
            }
            self.chunks.push(a);
        }
        self.free
            .pop()
            .ok_or_else(|| Error::new(Status::Internal, "signal pool empty after refill"))
    }

    /// Free every chunk without waiting (the device is being dropped). `peers`: some device
    /// had access to this one's memory; its queues may still wait on a parked slot, so those
    /// fences are waited for first (at most 10 s each, see `wait_peer_fence`).
    pub(crate) fn release_all(&mut self, backend: &dyn Backend, peers: bool) {
        if peers {
            for (_, f) in &self.parked {
                super::peer::wait_peer_fence(f);
            }
        }
        self.free.clear();
        self.parked.clear();
        for a in self.chunks.drain(..) {
            let _ = backend.free(&a);
        }
    }
}

/// A 64-bit timeline signal. The GPU writes it from queues (`Queue::signal`); the CPU reads it,
/// sets it, and waits for it to reach a value.
pub struct Signal {
    dev: Device,
    gpu_va: u64,
    ptr: *mut u8,
    /// Allocation id of the pool chunk holding the slot.
    chunk: u64,
    /// The last release recorded on a queue (`Queue::signal`, a command buffer's replay): its
    /// value, the queue's [`serial`](crate::core::queue::QueueTrack::serial) (0 = none yet) and
    /// the queue timeline value of the submit that carries it. Plain stores by the recording
    /// queue; a wait reads them to submit that work or to explain a timeout. Releases recorded
    /// at once on two queues may leave a mix of the two: then a wait only waits.
    rel_value: AtomicU64,
    rel_queue: AtomicU64,
    rel_seq: AtomicU64,
    /// The buffer holding the value when the signal lives in one ([`Signal::in_buffer`]);
    /// `None` for a slot of the device's signal pool.
    backing: Option<Arc<Buffer>>,
}
// SAFETY: the slot is shared memory; all accesses are atomic or volatile.
unsafe impl Send for Signal {}
unsafe impl Sync for Signal {}

impl std::fmt::Debug for Signal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Signal")
            .field("gpu_va", &format_args!("{:#x}", self.gpu_va))
            .field("value", &self.value())
            .finish()
    }
}

impl Signal {
    pub(crate) fn new(dev: &Device, initial: u64) -> Result<Signal> {
        let (gpu_va, ptr, chunk) = {
            let mut pool = dev.inner.signals.lock();
            pool.merge(&mut dev.inner.signal_drops.lock());
            pool.take(dev)?
        };
        let s = Signal {
            dev: dev.clone(),
            gpu_va,
            ptr,
            chunk,
            rel_value: AtomicU64::new(0),
            rel_queue: AtomicU64::new(0),
            rel_seq: AtomicU64::new(0),
            backing: None,
        };
        s.atomic().store(initial, Ordering::Release);
        // SAFETY: the timestamp word follows the value inside the slot.
        unsafe { std::ptr::write_volatile(ptr.add(8) as *mut u64, 0) };
        Ok(s)
    }

    /// A signal whose value is the 64-bit word at `offset` of `buf` (the GPU's releases also
    /// write their timestamp at `offset + 8`), so that another driver or process sharing the
    /// buffer can write and wait for the same value (`tg_signal_create_in_buffer`). `offset`
    /// must be a multiple of [`SLOT_BYTES`] with the 16 bytes inside the buffer; the buffer's
    /// memory is left as it is. The signal keeps the buffer alive.
    pub fn in_buffer(buf: Arc<Buffer>, offset: u64) -> Result<Signal> {
        let call = "tg_signal_create_in_buffer";
        if offset % SLOT_BYTES != 0 {
            return Err(Error::invalid(format!(
                "{call}: offset {offset} is not a multiple of {SLOT_BYTES} (a GPU release writes the value and a timestamp, 16 aligned bytes)"
            )));
        }
        buf.check_range(call, offset, SLOT_BYTES)?;
        let cpu = buf.map_cpu().map_err(|mut e| {
            e.message = format!(
                "{call}: the buffer needs a CPU mapping for the signal's CPU reads and waits: {}",
                e.message
            );
            e
        })?;
        // SAFETY: offset + 16 lies inside the buffer's mapping (checked above).
        let ptr = unsafe { cpu.add(offset as usize) };
        Ok(Signal {
            dev: buf.device().clone(),
            gpu_va: buf.gpu_va() + offset,
            ptr,
            // Peer access finds the word in the buffer's own peer mapping.
            chunk: buf.alloc_id(),
            rel_value: AtomicU64::new(0),
            rel_queue: AtomicU64::new(0),
            rel_seq: AtomicU64::new(0),
            backing: Some(buf),
        })
    }

    /// The buffer the signal lives in, if it was made by [`Signal::in_buffer`].
    pub fn buffer(&self) -> Option<&Arc<Buffer>> {
        self.backing.as_ref()
    }

    fn atomic(&self) -> &AtomicU64 {
        // SAFETY: the slot is 16-byte aligned shared memory valid for the signal's lifetime.
        unsafe { &*(self.ptr as *const AtomicU64) }
    }

    /// GPU address of the 64-bit value (the timestamp follows at +8).
    pub fn gpu_va(&self) -> u64 {
        self.gpu_va
    }

    /// Current value. What the value guards (results the GPU wrote before releasing it) may be
    /// read after it: the load is followed by [`crate::hw::barrier::after_gpu_value`].
    pub fn value(&self) -> u64 {
        let v = self.atomic().load(Ordering::Acquire);
        // The GPU wrote it (aarch64: `dmb oshld`, see crate::hw::barrier).
        crate::hw::barrier::after_gpu_value();
        v
    }

    /// GPU timestamp (ns) written with the last GPU release, 0 if none.
    pub fn timestamp(&self) -> u64 {
        // SAFETY: inside the slot.
        unsafe { std::ptr::read_volatile(self.ptr.add(8) as *const u64) }
    }

    /// Set the value from the CPU. Releases every CPU and GPU wait for a value ≤ `value`
    /// (unsigned 64-bit comparison, see [`Signal::wait`]); setting a lower value than before
    /// does not re-block waits that already passed.
    pub fn set(&self, value: u64) {
        self.atomic().store(value, Ordering::Release);
    }

    /// Wait until the value is ≥ `value`, for at most `timeout_ns` (spins briefly, then sleeps).
    /// Returns `Timeout` if the deadline passes and `DeviceFault` if the device faults meanwhile.
    ///
    /// Values compare as unsigned 64-bit integers, the same rule as GPU waits
    /// ([`crate::core::Queue::wait`], host ACQ_STRICT_GEQ): nothing wraps around, `u64::MAX`
    /// satisfies every wait and a wait for a value above the current one blocks however far
    /// above it is.
    ///
    /// When the value can only come from a release recorded on a queue but not yet submitted
    /// (`Queue::signal` without `Queue::submit`), the wait submits that queue first if it can:
    /// C API and Python queues (`tg_queue_submit` semantics; an owned queue only from its owner
    /// thread). A queue of the Rust API is the caller's to submit; a wait that times out on one
    /// says so.
    pub fn wait(&self, value: u64, timeout_ns: u64) -> Result<()> {
        if !reached(self.value(), value) {
            self.submit_recorded_release(value);
        }
        let r = wait_value(
            &self.dev,
            self.atomic(),
            value,
            timeout_ns,
            "tg_signal_wait",
        );
        if r.is_ok() {
            self.dev.flush_printf();
        }
        r.map_err(|e| {
            if e.status == Status::Timeout {
                Error::new(
                    Status::Timeout,
                    format!(
                        "tg_signal_wait: signal {:#x} is {} after {timeout_ns} ns, waiting for {value}; {}",
                        self.gpu_va,
                        self.value(),
                        self.release_state(value)
                    ),
                )
            } else {
                e
            }
        })
    }

    pub fn device(&self) -> &Device {
        &self.dev
    }

    /// Note a release of `value` recorded on the queue with serial `queue`, carried by the
    /// submit that moves that queue's timeline to `seq`.
    #[inline(always)]
    pub(crate) fn note_release(&self, queue: u64, value: u64, seq: u64) {
        self.rel_value.store(value, Ordering::Relaxed);
        self.rel_seq.store(seq, Ordering::Relaxed);
        self.rel_queue.store(queue, Ordering::Release);
    }

    /// The value of the last release recorded for this signal on a queue other than the one with
    /// serial `queue`, where that queue has submitted it and the CPU does not yet see the signal
    /// at that value (0 otherwise: a release still only recorded is not waited for, since its
    /// queue may never submit it).
    #[inline(always)]
    pub(crate) fn pending_release_elsewhere(&self, queue: u64) -> u64 {
        let q = self.rel_queue.load(Ordering::Acquire);
        if q == 0 || q == queue {
            return 0;
        }
        let v = self.rel_value.load(Ordering::Relaxed);
        if reached(self.value(), v) {
            return 0;
        }
        self.pending_release_submitted(q, v)
    }

    #[cold]
    fn pending_release_submitted(&self, queue: u64, value: u64) -> u64 {
        let seq = self.rel_seq.load(Ordering::Relaxed);
        match self.dev.queue_submitted(queue) {
            Some(s) if s >= seq => value,
            _ => 0,
        }
    }

    /// The last recorded release, if it is of a value ≥ `value`: (its queue, the timeline value
    /// of its submit).
    fn recorded_release(
        &self,
        value: u64,
    ) -> Option<(std::sync::Arc<super::queue::QueueTrack>, u64)> {
        let queue = self.rel_queue.load(Ordering::Acquire);
        if queue == 0 || !reached(self.rel_value.load(Ordering::Relaxed), value) {
            return None;
        }
        let seq = self.rel_seq.load(Ordering::Relaxed);
        let t = self
            .dev
            .live_queues()
            .into_iter()
            .find(|t| t.serial == queue)?;
        Some((t, seq))
    }

    /// If the last release recorded for this signal would satisfy a wait for `value` and its
    /// queue has not submitted it, submit that queue (when the queue's owner allows it).
    #[cold]
    fn submit_recorded_release(&self, value: u64) {
        if let Some((t, seq)) = self.recorded_release(value) {
            if t.submitted() < seq {
                t.submit_for_waiter();
            }
        }
    }

    /// Why a wait for `value` may not have been satisfied, for a timeout message.
    #[cold]
    pub(crate) fn release_state(&self, value: u64) -> String {
        match self.recorded_release(value) {
            None if self.rel_queue.load(Ordering::Acquire) == 0 => format!(
                "no queue has recorded a release of this signal (only tg_queue_signal followed by a submit, a command buffer replay, or tg_signal_set can release {value})"
            ),
            None => format!(
                "the last release recorded on a queue is of {} (below {value}) or its queue is gone",
                self.rel_value.load(Ordering::Relaxed)
            ),
            Some((t, seq)) if t.submitted() < seq => format!(
                "the release of {} is recorded on {} queue (token {:#x}) but not submitted: call tg_queue_submit on that queue (or pass TG_LAUNCH_SUBMIT)",
                self.rel_value.load(Ordering::Relaxed),
                t.kind_name,
                t.token
            ),
            Some((t, seq)) => format!(
                "the release of {} was submitted on {} queue (token {:#x}), which has completed {} of {seq} submissions: the GPU is still running the work before it{}",
                self.rel_value.load(Ordering::Relaxed),
                t.kind_name,
                t.token,
                t.completed(),
                match t.channel_error() {
                    Some(e) => format!(" (the channel reports an error: {e:?})"),
                    None => String::new(),
                }
            ),
        }
    }

    pub(crate) fn slot_ptr(&self) -> *const u8 {
        self.ptr
    }

    /// Allocation id of the memory holding the signal (for peer mapping lookups).
    pub(crate) fn chunk_id(&self) -> u64 {
        self.chunk
    }
}

impl Drop for Signal {
    fn drop(&mut self) {
        if self.backing.is_some() {
            // The word belongs to the buffer, which frees itself once queued work is done.
            return;
        }
        let mut fence = fence_now(&self.dev);
        // Queues of devices with peer access may wait on the slot too.
        self.dev.peer_extend_fence(&mut fence);
        let slot = ((self.gpu_va, self.ptr, self.chunk), fence);
        // A queue's timeline signal is dropped with its queue, which can happen where the
        // queue's last reference goes: possibly inside a pool call that holds `signals` (a
        // fence check finding the queue gone). Never wait for `signals` here.
        match self.dev.inner.signals.try_lock() {
            Some(mut pool) => pool.parked.push(slot),
            None => self.dev.inner.signal_drops.lock().0.push(slot),
        }
    }
}

/// Whether a signal holding `current` satisfies a wait for `target`: unsigned 64-bit `>=`, the
/// comparison the GPU's host ACQ_STRICT_GEQ acquire makes for GPU waits (one rule for both).
#[inline]
pub(crate) fn reached(current: u64, target: u64) -> bool {
    current >= target
}

/// How often a polling (not sleeping) CPU wait checks the device for faults.
const FAULT_CHECK_INTERVAL: Duration = Duration::from_micros(100);

/// Whether CPU waits sleep once the first 20 µs of spinning are over (`TEGRAGPU_WAIT=sleep`:
/// little CPU time, but the wake-up comes up to ~100 µs after the value arrives) or keep polling,
/// yielding the CPU between polls (default, like libcuda's spin-wait: the wait returns within
/// microseconds of the GPU's write, and a core stays busy while it waits).
fn wait_sleeps() -> bool {
    static V: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *V.get_or_init(|| matches!(std::env::var("TEGRAGPU_WAIT").as_deref(), Ok("sleep")))
}

/// Poll `word` until it is ≥ `value` (see [`reached`]): spin ~20 µs, then poll yielding the CPU
/// (or, with `TEGRAGPU_WAIT=sleep`, sleep with backoff up to 100 µs). Checks the device for
/// faults every 100 µs while polling (at every sleep when sleeping), and every millisecond rings
/// the doorbell of each queue with work in flight again.
pub(crate) fn wait_value(
    dev: &Device,
    word: &AtomicU64,
    value: u64,
    timeout_ns: u64,
    call: &str,
) -> Result<()> {
    if reached(word.load(Ordering::Acquire), value) {
        // The GPU's release was seen: order the caller's reads of what it guards (results) and
        // its rewrites of what the GPU has finished with after it (aarch64: `dmb oshld`).
        crate::hw::barrier::after_gpu_value();
        return Ok(());
    }
    let start = Instant::now();
    let deadline = Duration::from_nanos(timeout_ns);
    let mut spins = 0u32;
    let mut sleep_us = 1u64;
    let mut last_ring = start;
    let mut last_fault_check: Option<Duration> = None;
    let sleeps = wait_sleeps();
    loop {
        if reached(word.load(Ordering::Acquire), value) {
            // As above.
            crate::hw::barrier::after_gpu_value();
            return Ok(());
        }
        let elapsed = start.elapsed();
        if spins < 2000 || elapsed < Duration::from_micros(20) {
            spins += 1;
            std::hint::spin_loop();
            continue;
        }
        // Fault checks read every queue's channel state (an ioctl per queue on Jetson): at
        // every sleep, or every FAULT_CHECK_INTERVAL while polling.
        let check = sleeps
            || match last_fault_check {
                None => true,
                Some(t) => elapsed.saturating_sub(t) >= FAULT_CHECK_INTERVAL,
            };
        if check {
            last_fault_check = Some(elapsed);
            if let Some(e) = dev.fault_error(call) {
                return Err(e);
            }
        }
        if elapsed.saturating_sub(last_ring - start) >= crate::hw::gpfifo::DOORBELL_RETRY {
            // No progress for a while: ring busy queues again in case a doorbell got ahead of
            // its GP_PUT.
            dev.ring_busy_queues_again();
            last_ring = Instant::now();
        }
        if elapsed >= deadline {
            return Err(Error::new(
                Status::Timeout,
                format!("{call}: timed out after {timeout_ns} ns"),
            ));
        }
        if sleep_us <= 2 || !sleeps {
            std::thread::yield_now();
        } else {
            std::thread::sleep(Duration::from_micros(
                sleep_us.min((deadline - elapsed).as_micros() as u64 + 1),
            ));
        }
        sleep_us = (sleep_us * 2).min(100);
    }
}
