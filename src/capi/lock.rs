//! The lock of a C command-buffer handle: uncontended, it costs one atomic read-modify-write
//! (the acquire) and a plain store (the release).
//!
//! `parking_lot::Mutex` releases with a read-modify-write too. On x86 every locked instruction
//! drains the write-combining buffers, and a command buffer's lock is released right after its
//! image (write-combined GPU memory) was written (`tg_cmdbuf_set_params`), or taken right
//! after a doorbell (`tg_queue_replay`): each read-modify-write waits for those writes to leave
//! the CPU (about 30 ns on the H100 and H200 hosts). A release that is a plain store does not.
//! Contention is rare (one thread updates and replays a command buffer); a waiter spins
//! briefly, then yields, then sleeps in short steps, so a holder that waits for the GPU (an
//! update waits for earlier replays) does not keep a core busy.

use parking_lot::lock_api::{GuardSend, RawMutex};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// The raw lock (see the module documentation).
pub(crate) struct StoreRelease(AtomicBool);

/// Spins (each a pause) before a waiter starts yielding.
const SPINS: u32 = 64;
/// Yields before a waiter starts sleeping.
const YIELDS: u32 = 64;
/// A sleeping waiter's step.
const SLEEP: Duration = Duration::from_micros(20);

// SAFETY: `lock` returns only after this thread changed the flag from false to true (an
// Acquire compare-exchange), so one holder at a time; `unlock` (Release store) publishes the
// holder's writes to the next acquirer.
unsafe impl RawMutex for StoreRelease {
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: StoreRelease = StoreRelease(AtomicBool::new(false));
    type GuardMarker = GuardSend;

    #[inline]
    fn lock(&self) {
        if !self.try_lock() {
            self.lock_slow();
        }
    }

    #[inline]
    fn try_lock(&self) -> bool {
        self.0
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
    }

    #[inline]
    unsafe fn unlock(&self) {
        self.0.store(false, Ordering::Release);
    }

    #[inline]
    fn is_locked(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

impl StoreRelease {
    #[cold]
    fn lock_slow(&self) {
        let mut n = 0u32;
        loop {
            // Test before the read-modify-write: waiters read a shared line, they do not take it
            // from the holder on every try.
            if !self.0.load(Ordering::Relaxed) && self.try_lock() {
                return;
            }
            if n < SPINS {
                std::hint::spin_loop();
            } else if n < SPINS + YIELDS {
                std::thread::yield_now();
            } else {
                std::thread::sleep(SLEEP);
            }
            n = n.saturating_add(1);
        }
    }
}

/// A C command buffer behind its lock.
pub(crate) type CmdBufLock = parking_lot::lock_api::Mutex<StoreRelease, crate::core::CmdBuf>;

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// Four threads increment a counter behind the lock 20,000 times each: no increment is lost
    /// (the lock excludes), and every thread finishes (a waiter gets the lock after a release).
    #[test]
    fn the_lock_excludes_and_hands_over() {
        let m = Arc::new(parking_lot::lock_api::Mutex::<StoreRelease, u64>::new(0));
        let ts: Vec<_> = (0..4)
            .map(|_| {
                let m = m.clone();
                std::thread::spawn(move || {
                    for _ in 0..20_000 {
                        let mut g = m.lock();
                        let v = *g;
                        std::hint::spin_loop();
                        *g = v + 1;
                    }
                })
            })
            .collect();
        for t in ts {
            t.join().expect("a locking thread panicked");
        }
        assert_eq!(*m.lock(), 80_000);
        assert!(
            m.try_lock().is_some(),
            "the lock is free after the last release"
        );
    }
}
