//! Locks without a queue of parked waiters, for two uses:
//!
//! - [`StoreRelease`], the lock of a C command-buffer handle: uncontended, it costs one atomic
//!   read-modify-write (the acquire) and a plain store (the release). `parking_lot::Mutex`
//!   releases with a read-modify-write too. On x86 every locked instruction drains the
//!   write-combining buffers, and a command buffer's lock is released right after its image
//!   (write-combined GPU memory) was written (`tg_cmdbuf_set_params`), or taken right after a
//!   doorbell (`tg_queue_replay`): each read-modify-write waits for those writes to leave the CPU
//!   (about 30 ns on the H100 and H200 hosts). A release that is a plain store does not.
//! - The process-wide locks held across `fork()` ([`ForkMutex`], [`ForkRwLock`]; see
//!   `crate::os::fork`). A `parking_lot` lock hands itself over, at a release, to a thread
//!   parked on it (its eventual fairness does so every half millisecond or so); after a fork
//!   the parked threads of the parent do not exist, and the child's release in the fork handler
//!   could hand the lock to one of them, so that the child's next use waits forever. These locks
//!   keep no waiters: a release is a store, and the lock is free afterwards in any process.
//!
//! A waiter spins briefly, then yields, then sleeps in short steps, so a holder that waits for
//! the GPU (a command-buffer update waits for earlier replays) does not keep a core busy.
//! Contention is rare for every lock here.

use parking_lot::lock_api::{self, GuardSend, RawMutex};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

/// The raw lock (see the module documentation).
pub struct StoreRelease(AtomicBool);

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
        // Test before the read-modify-write: waiters read a shared line, they do not take it
        // from the holder on every try.
        wait_until(|| !self.0.load(Ordering::Relaxed) && self.try_lock());
    }
}

/// Retry `f` until it returns true: spin, then yield, then sleep in short steps.
#[cold]
fn wait_until(mut f: impl FnMut() -> bool) {
    let mut n = 0u32;
    while !f() {
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

/// A reader-writer lock without parked waiters (see the module documentation). State: bit 0 =
/// held exclusively, bit 1 = a writer waits (new readers hold back, so writers are not starved),
/// the rest counts readers in steps of 4.
pub struct SpinRwLock(AtomicUsize);

const EXCLUSIVE: usize = 1;
const WRITER_WAITS: usize = 2;
const READER: usize = 4;

// SAFETY: shared holders only enter while neither EXCLUSIVE nor WRITER_WAITS is set and count
// themselves in; the exclusive holder enters only from a state with no reader and no holder
// (0 or WRITER_WAITS) by one compare-exchange; Acquire on entry and Release on exit order the
// holders' accesses.
unsafe impl lock_api::RawRwLock for SpinRwLock {
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: SpinRwLock = SpinRwLock(AtomicUsize::new(0));
    type GuardMarker = GuardSend;

    #[inline]
    fn lock_shared(&self) {
        if !self.try_lock_shared() {
            wait_until(|| self.try_lock_shared());
        }
    }

    #[inline]
    fn try_lock_shared(&self) -> bool {
        let s = self.0.load(Ordering::Relaxed);
        s & (EXCLUSIVE | WRITER_WAITS) == 0
            && self
                .0
                .compare_exchange_weak(s, s + READER, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
    }

    #[inline]
    unsafe fn unlock_shared(&self) {
        self.0.fetch_sub(READER, Ordering::Release);
    }

    #[inline]
    fn lock_exclusive(&self) {
        if !self.try_lock_exclusive() {
            wait_until(|| {
                if self.try_lock_exclusive() {
                    return true;
                }
                self.0.fetch_or(WRITER_WAITS, Ordering::Relaxed);
                false
            });
        }
    }

    #[inline]
    fn try_lock_exclusive(&self) -> bool {
        let s = self.0.load(Ordering::Relaxed);
        (s == 0 || s == WRITER_WAITS)
            && self
                .0
                .compare_exchange(s, EXCLUSIVE, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
    }

    #[inline]
    unsafe fn unlock_exclusive(&self) {
        // Clears WRITER_WAITS too: a writer still waiting sets it again on its next try.
        self.0.store(0, Ordering::Release);
    }

    #[inline]
    fn is_locked(&self) -> bool {
        self.0.load(Ordering::Relaxed) & !WRITER_WAITS != 0
    }
}

/// A process-wide mutex held across `fork()` (see the module documentation).
pub type ForkMutex<T> = lock_api::Mutex<StoreRelease, T>;
/// A process-wide reader-writer lock held across `fork()` (see the module documentation).
pub type ForkRwLock<T> = lock_api::RwLock<SpinRwLock, T>;

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

    /// Readers and writers of a `ForkRwLock`: writers exclude everyone (the two halves of the
    /// pair always match), readers share, every thread finishes (writers are not starved).
    #[test]
    fn the_rwlock_excludes_writers_and_shares_readers() {
        let l = Arc::new(ForkRwLock::new((0u64, 0u64)));
        let writers: Vec<_> = (0..2)
            .map(|_| {
                let l = l.clone();
                std::thread::spawn(move || {
                    for _ in 0..5_000 {
                        let mut g = l.write();
                        g.0 += 1;
                        std::hint::spin_loop();
                        g.1 += 1;
                    }
                })
            })
            .collect();
        let readers: Vec<_> = (0..3)
            .map(|_| {
                let l = l.clone();
                std::thread::spawn(move || {
                    for _ in 0..20_000 {
                        let g = l.read();
                        assert_eq!(g.0, g.1, "a reader saw a writer's half-done update");
                    }
                })
            })
            .collect();
        for t in writers.into_iter().chain(readers) {
            t.join().expect("a locking thread panicked");
        }
        assert_eq!(*l.read(), (10_000, 10_000));
        assert!(l.try_write().is_some(), "free after the last release");
    }

    /// A lock held when the process forks is free in the child after the handler's release,
    /// although a thread of the parent was waiting for it (a `parking_lot` lock can be handed to
    /// that waiter, which does not exist in the child).
    #[test]
    fn a_released_lock_is_free_in_a_fork_child_despite_parent_waiters() {
        let l = Arc::new(ForkRwLock::new(0u32));
        for _ in 0..20 {
            let g = l.write();
            let l2 = l.clone();
            let waiter = std::thread::spawn(move || *l2.write() += 1);
            let l3 = l.clone();
            let reader = std::thread::spawn(move || *l3.read());
            std::thread::sleep(std::time::Duration::from_millis(2));
            std::mem::forget(g);
            // SAFETY: the child only touches the lock and _exit()s.
            let pid = unsafe { libc::fork() };
            if pid == 0 {
                // SAFETY: the write guard was taken above and forgotten.
                unsafe { l.force_unlock_write() };
                let ok = l.try_write().is_some() && l.try_read().is_some();
                // SAFETY: ends the child at once.
                unsafe { libc::_exit(i32::from(!ok)) };
            }
            // SAFETY: as in the child.
            unsafe { l.force_unlock_write() };
            let mut status = 0;
            // SAFETY: pid is our child.
            unsafe { libc::waitpid(pid, &mut status, 0) };
            assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0);
            waiter.join().unwrap();
            reader.join().unwrap();
        }
    }
}
