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
//!   a thread that does not exist there.
//! - In the child, the handle table is emptied without dropping its objects (dropping them
//!   would free the parent's memory through the inherited file descriptors), and handle values
//!   up to the fork point are remembered so a lookup can say why a handle is unknown. The
//!   lookup itself costs no system call: there is no `getpid()` on the hot path.
//!
//! The Rust API (`tegragpu::core`) has no such guard: objects must not be used in a child.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Once;

/// One process-wide lock the fork handlers hold across `fork()`.
pub(crate) struct ForkLock {
    /// Takes the lock and leaves it held (the guard is forgotten).
    pub lock: fn(),
    /// Releases a lock taken by `lock`.
    ///
    /// # Safety
    /// Only after `lock` on the same thread (or in the child of the process whose thread did).
    pub unlock: unsafe fn(),
}

/// The locks, in the order they are taken (released in reverse). Kept in one place so that the
/// order is the same for every fork; no library code holds one of these while taking another
/// earlier in the list.
fn locks() -> &'static [ForkLock] {
    &[
        crate::capi::handles::FORK_LOCK,
        crate::nvrtc::FORK_LOCK,
        crate::ptxjit::FORK_LOCK,
        crate::backend::rm::va::FORK_LOCK,
        crate::emu::kernels::FORK_LOCK,
    ]
}

/// Handle values below this were handed out before the last `fork()` of which this process is
/// the child (0: this process was not forked from a process that used the library).
static FORKED_BELOW: AtomicU64 = AtomicU64::new(0);

/// Number of forks this process has gone through as the child (tests).
static CHILD_FORKS: AtomicU64 = AtomicU64::new(0);

extern "C" fn prepare() {
    for l in locks() {
        (l.lock)();
    }
}

extern "C" fn parent() {
    for l in locks().iter().rev() {
        // SAFETY: `prepare` took every lock on this thread just before the fork.
        unsafe { (l.unlock)() };
    }
}

extern "C" fn child() {
    for l in locks().iter().rev() {
        // SAFETY: `prepare` took every lock on the thread that forked, which is this thread in
        // the child.
        unsafe { (l.unlock)() };
    }
    FORKED_BELOW.store(
        crate::capi::handles::forget_all_for_child(),
        Ordering::Relaxed,
    );
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
