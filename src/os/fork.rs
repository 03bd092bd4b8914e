//! What happens across `fork()`.
//!
//! The rule (docs/api.md, "fork"): a child process never touches the GPU state of its parent.
//! Objects created before the fork — devices, buffers, modules, kernels, queues, signals — belong
//! to the parent; in the child every C handle inherited from the parent returns
//! `TG_ERROR_INVALID_HANDLE` with a message saying it was created before `fork()`, and nothing is
//! freed, unmapped or submitted on the parent's behalf. The child opens its own device with
//! `tg_device_open` and works normally.
//!
//! Two mechanisms make that hold:
//!
//! - `pthread_atfork` handlers take every process-wide lock of the library before the fork
//!   (waiting for other threads to leave them) and release them after it in both processes, so a
//!   fork while another thread is inside the library cannot leave the child with a lock held by
//!   a thread that does not exist there. These locks keep no queue of parked waiters
//!   (`crate::os::lock`): a `parking_lot` lock released in the child could be handed to a parent
//!   thread that waited for it, which the child does not have, and the child would then wait for
//!   it forever.
//! - In the child, the handle table is emptied without dropping its objects (dropping them
//!   would free the parent's memory through the inherited file descriptors), and handle values
//!   up to the fork point are remembered so a lookup can say why a handle is unknown. The
//!   lookup itself costs no system call: there is no `getpid()` on the hot path.
//!
//! The Rust API (`tegragpu::core`) has no such guard: objects must not be used in a child.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Once;

/// One process-wide lock the fork handlers hold across `fork()`. The module that owns the lock
/// registers it ([`register`]) before the lock can first be taken, so this module depends on no
/// other part of the library.
pub(crate) struct ForkLock {
    /// Position in the order locks are taken (lowest first; released in reverse). No library
    /// code holds one of these while taking one with a lower number.
    pub order: u8,
    /// Takes the lock and leaves it held (the guard is forgotten).
    pub lock: fn(),
    /// Releases a lock taken by `lock`.
    ///
    /// # Safety
    /// Only after `lock` on the same thread (or in the child of the process whose thread did).
    pub unlock: unsafe fn(),
}

/// The registered locks, sorted by `order`. The registry's own lock is taken first and held
/// across the fork too.
static REGISTERED: super::lock::ForkMutex<Vec<&'static ForkLock>> =
    super::lock::ForkMutex::const_new(
        <super::lock::StoreRelease as parking_lot::lock_api::RawMutex>::INIT,
        Vec::new(),
    );

/// What the child calls after the locks are released: empties the handle table and returns the
/// first handle value the child hands out (a `fn() -> u64`; 0 = none registered).
static CHILD_HOOK: AtomicUsize = AtomicUsize::new(0);

/// Register `l` (once; later calls are no-ops) and install the fork handlers.
pub(crate) fn register(l: &'static ForkLock) {
    install();
    let mut r = REGISTERED.lock();
    if !r.iter().any(|x| std::ptr::eq(*x, l)) {
        r.push(l);
        r.sort_by_key(|x| x.order);
    }
}

/// Set the function the child runs after a fork (the handle table's reset).
pub(crate) fn set_child_hook(f: fn() -> u64) {
    CHILD_HOOK.store(f as usize, Ordering::Release);
}

/// The registered locks while the registry's lock is held (by `prepare`, guard forgotten).
///
/// # Safety
/// Only between `prepare` and the matching `parent`/`child`.
unsafe fn held_locks() -> &'static [&'static ForkLock] {
    (*REGISTERED.data_ptr()).as_slice()
}

/// Handle values below this were handed out before the last `fork()` of which this process is
/// the child (0: this process was not forked from a process that used the library).
static FORKED_BELOW: AtomicU64 = AtomicU64::new(0);

/// Number of forks this process has gone through as the child (tests).
static CHILD_FORKS: AtomicU64 = AtomicU64::new(0);

extern "C" fn prepare() {
    std::mem::forget(REGISTERED.lock());
    // SAFETY: the registry's lock is held (guard forgotten) until `parent`/`child`.
    for l in unsafe { held_locks() } {
        (l.lock)();
    }
}

/// Release what `prepare` took, in reverse.
///
/// # Safety
/// Only after `prepare` on this thread (or, in the child, on the thread that forked).
unsafe fn release_all() {
    for l in held_locks().iter().rev() {
        (l.unlock)();
    }
    REGISTERED.force_unlock();
}

extern "C" fn parent() {
    // SAFETY: `prepare` took every lock on this thread just before the fork.
    unsafe { release_all() };
}

extern "C" fn child() {
    // SAFETY: `prepare` took every lock on the thread that forked, which is this thread in the
    // child.
    unsafe { release_all() };
    let hook = CHILD_HOOK.load(Ordering::Acquire);
    if hook != 0 {
        // SAFETY: only `set_child_hook` stores here, always a `fn() -> u64`.
        let f: fn() -> u64 = unsafe { std::mem::transmute::<usize, fn() -> u64>(hook) };
        FORKED_BELOW.store(f(), Ordering::Relaxed);
    }
    CHILD_FORKS.fetch_add(1, Ordering::Relaxed);
}

/// Registers the fork handlers (once per process; called when the first device or handle is
/// made).
pub fn install() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // SAFETY: the handlers are plain functions that live as long as the library.
        let r = unsafe { libc::pthread_atfork(Some(prepare), Some(parent), Some(child)) };
        if r != 0 {
            // Without the handlers the library still works; only the fork guarantees are lost.
            crate::log::warn!("pthread_atfork failed ({r}); fork() is not guarded");
        }
    });
}

/// Handle values below this come from the parent process (0 when this process is no fork child).
pub(crate) fn forked_below() -> u64 {
    FORKED_BELOW.load(Ordering::Relaxed)
}

/// How many times this process has been the child of a fork handled by the library.
#[doc(hidden)]
pub fn child_forks() -> u64 {
    CHILD_FORKS.load(Ordering::Relaxed)
}
