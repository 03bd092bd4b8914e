//! Queues: shared (any thread, a lock per call) or owned by one thread (no lock, no reference
//! counting per call).

use super::cmdbuf::{CmdBufCell, CmdBufLookup};
use super::handles::{self, Kind, Object};
use super::owned::{
    cached, owned_forget, owned_lookup, owned_note, Busy, CachedKernel, OwnedKind, Owner, OWNED,
};
use super::{kernel, queue_cell, register};
use crate::capi::{tg_cmdbuf, tg_kernel, tg_queue};
use crate::core::{Kernel, Queue};
use crate::error::Result;
use parking_lot::Mutex;
use std::cell::UnsafeCell;
use std::sync::Arc;

/// The object behind a `tg_queue` handle. One per queue, behind an `Arc`: the owned variant's
/// inline caches cost no indirection on the launch path, and the size difference nothing.
#[allow(clippy::large_enum_variant)]
pub(crate) enum QueueCell {
    /// `tg_queue_create*`: any thread; calls are serialized by the lock.
    Shared(Mutex<Queue>),
    /// `tg_queue_create_owned`: only the creating thread may use or destroy it.
    Owned(OwnedQueue),
}

/// Kernels an owned queue remembers (direct-mapped by handle).
const OWNED_KERNEL_WAYS: usize = 8;

/// A queue only its creating thread uses: every access checks the calling thread's token
/// against `owner`, so the queue and its kernel cache need no lock. The kernel cache holds
/// strong references, valid while no handle has been removed since they were taken (a
/// removal anywhere empties it at the queue's next lookup).
pub(crate) struct OwnedQueue {
    owner: Owner,
    queue: UnsafeCell<Queue>,
    kernels: UnsafeCell<[Option<CachedKernel>; OWNED_KERNEL_WAYS]>,
    cmdbufs: UnsafeCell<[Option<CachedCmdBuf>; OWNED_CMDBUF_WAYS]>,
}

const OWNED_CMDBUF_WAYS: usize = 4;

/// An owned queue's cached command buffer, kept like [`CachedKernel`]: replays from the owner
/// thread then take no reference count (an atomic read-modify-write each way).
type CachedCmdBuf = (usize, u64, Arc<CmdBufCell>);

// SAFETY: `queue`, `kernels` and `cmdbufs` are touched only by the thread whose token is
// `owner` (`Owner::enter` checks it on every access) and never reentrantly (its busy flag);
// the owner never changes. Other threads only read the owner's token.
unsafe impl Sync for OwnedQueue {}

impl QueueCell {
    pub(crate) fn shared(q: Queue) -> QueueCell {
        QueueCell::Shared(Mutex::new(q))
    }

    /// A queue owned by the calling thread.
    pub(crate) fn owned(q: Queue) -> QueueCell {
        QueueCell::Owned(OwnedQueue {
            owner: Owner::caller(OWNED_QUEUE),
            queue: UnsafeCell::new(q),
            kernels: UnsafeCell::new([const { None }; OWNED_KERNEL_WAYS]),
            cmdbufs: UnsafeCell::new([const { None }; OWNED_CMDBUF_WAYS]),
        })
    }
}

const OWNED_QUEUE: OwnedKind = OwnedKind {
    noun: "queue",
    create: "tg_queue_create_owned",
};

impl OwnedQueue {
    /// Check that the calling thread owns the queue and is not already inside a call on it.
    #[inline(always)]
    fn enter(&self, h: usize, arg: &str) -> Result<Busy<'_>> {
        self.owner.enter(h, arg)
    }

    /// The kernel behind `kh`, from the queue's kernel cache or the handle table.
    #[inline(always)]
    fn kernel(&self, kh: *const tg_kernel, arg: &str) -> Result<&Kernel> {
        // SAFETY: only the owner thread gets here, inside `enter` (no other reference exists).
        let ks = unsafe { &mut *self.kernels.get() };
        cached(ks, kh as usize, || kernel(kh, arg)).map(|k| &**k)
    }
}

impl OwnedQueue {
    /// The command buffer behind `ch`, from the queue's cache or through `lookup` (emptied
    /// like the kernel cache).
    #[inline(always)]
    fn cmdbuf(&self, ch: *const tg_cmdbuf, arg: &str, lookup: CmdBufLookup) -> Result<&CmdBufCell> {
        // SAFETY: only the owner thread gets here, inside `enter` (no other reference exists).
        let cs = unsafe { &mut *self.cmdbufs.get() };
        cached(cs, ch as usize, || lookup(ch, arg)).map(|c| &**c)
    }
}

/// The owned queue behind handle `hv` when this thread's OWNED table has it (then this thread
/// is its owner).
#[inline(always)]
fn owned_here<'a>(hv: usize) -> Option<&'a OwnedQueue> {
    let ptr = owned_lookup(&OWNED, hv)?;
    // SAFETY: an entry of this thread's OWNED table points to a live owned queue (see OWNED):
    // only this thread can destroy it, and it removes the entry when it does.
    Some(unsafe { &*(ptr as *const OwnedQueue) })
}

/// [`with_queue`] for a call on a queue and a command buffer (`tg_queue_replay`). On an owned
/// queue (from its owner thread) the command buffer comes from the queue's cache without
/// reference counting; on a shared queue it is looked up under the queue's lock.
#[inline(always)]
pub(in crate::capi) fn with_queue_cmdbuf<R>(
    h: *const tg_queue,
    arg: &str,
    ch: *const tg_cmdbuf,
    carg: &str,
    lookup: CmdBufLookup,
    f: impl FnOnce(&mut Queue, &CmdBufCell) -> Result<R>,
) -> Result<R> {
    let hv = h as usize;
    // What keeps the objects alive and the queue held for the call (dropped in reverse order:
    // the command buffer, the busy mark or the lock, then the queue); one call site for `f`, so
    // that it is inlined here.
    let cell: Arc<QueueCell>;
    let mut guard;
    let _busy;
    let cb: Arc<CmdBufCell>;
    let (q, c): (&mut Queue, &CmdBufCell) = match owned_here(hv) {
        Some(oq) => {
            _busy = oq.enter(hv, arg)?;
            let c = oq.cmdbuf(ch, carg, lookup)?;
            // SAFETY: `enter` established that this is the owner thread and no other call on
            // this queue is running: the only reference to the queue.
            (unsafe { &mut *oq.queue.get() }, c)
        }
        None => {
            cell = queue_cell(h, arg)?;
            match &*cell {
                QueueCell::Shared(m) => {
                    guard = m.lock();
                    cb = lookup(ch, carg)?;
                    (&mut *guard, &*cb)
                }
                QueueCell::Owned(oq) => {
                    _busy = oq.enter(hv, arg)?;
                    owned_note(&OWNED, hv, oq as *const OwnedQueue as usize);
                    let c = oq.cmdbuf(ch, carg, lookup)?;
                    // SAFETY: as above.
                    (unsafe { &mut *oq.queue.get() }, c)
                }
            }
        }
    };
    f(q, c)
}

/// Run `f` on the queue behind `h`: under its lock (shared queue) or directly (owned queue,
/// from its owner thread only). `kh`, when given, is looked up too and passed to `f`.
#[inline]
pub(in crate::capi) fn with_queue<R>(
    h: *const tg_queue,
    arg: &str,
    kh: Option<(*const tg_kernel, &str)>,
    f: impl FnOnce(&mut Queue, Option<&Kernel>) -> Result<R>,
) -> Result<R> {
    let hv = h as usize;
    if let Some(oq) = owned_here(hv) {
        return owned_call(oq, hv, arg, kh, f);
    }
    let cell = queue_cell(h, arg)?;
    match &*cell {
        QueueCell::Shared(m) => {
            let k = match kh {
                Some((kh, karg)) => Some(kernel(kh, karg)?),
                None => None,
            };
            let mut g = m.lock();
            f(&mut g, k.as_deref())
        }
        QueueCell::Owned(oq) => {
            let r = owned_call(oq, hv, arg, kh, f);
            if oq.owner.is_caller() {
                owned_note(&OWNED, hv, oq as *const OwnedQueue as usize);
            }
            r
        }
    }
}

#[inline(always)]
fn owned_call<R>(
    oq: &OwnedQueue,
    h: usize,
    arg: &str,
    kh: Option<(*const tg_kernel, &str)>,
    f: impl FnOnce(&mut Queue, Option<&Kernel>) -> Result<R>,
) -> Result<R> {
    let _busy = oq.enter(h, arg)?;
    let k = match kh {
        Some((kh, karg)) => Some(oq.kernel(kh, karg)?),
        None => None,
    };
    // SAFETY: `enter` established that this is the owner thread and no other call on this
    // queue is running: the only reference to the queue.
    let q = unsafe { &mut *oq.queue.get() };
    f(q, k)
}

/// Register a new queue (shared or owned by the calling thread); its handle value.
pub(in crate::capi) fn register_queue(cell: QueueCell) -> Result<usize> {
    let cell = Arc::new(cell);
    set_submitter(&cell);
    let owned = match &*cell {
        QueueCell::Owned(oq) => Some(oq as *const OwnedQueue as usize),
        QueueCell::Shared(_) => None,
    };
    let h = register(Object::Queue(cell))?;
    if let Some(ptr) = owned {
        owned_note(&OWNED, h, ptr);
    }
    Ok(h)
}

/// Let waits on the queue's device submit it (`tg_signal_wait` for a release recorded on it,
/// `tg_device_synchronize`): a shared queue from any thread once its lock is free (given up
/// after `SUBMITTER_LOCK_WAIT`, e.g. when the waiting thread itself holds it in a log
/// callback), an owned queue from its owner thread when no call on it is running.
fn set_submitter(cell: &Arc<QueueCell>) {
    let track = match &**cell {
        QueueCell::Shared(m) => m.lock().track().clone(),
        // SAFETY: the queue was just created on this thread and is not registered yet: no other
        // reference to it exists.
        QueueCell::Owned(oq) => unsafe { (*oq.queue.get()).track().clone() },
    };
    let weak = Arc::downgrade(cell);
    let _ = track.submitter.set(Box::new(move || {
        let Some(cell) = weak.upgrade() else {
            return false;
        };
        match &*cell {
            QueueCell::Shared(m) => match m.try_lock_for(SUBMITTER_LOCK_WAIT) {
                Some(mut q) => q.submit().is_ok(),
                None => false,
            },
            QueueCell::Owned(oq) => match oq.enter(0, "queue") {
                // SAFETY: `enter` established that this is the owner thread and no other call
                // on this queue is running.
                Ok(_busy) => unsafe { (*oq.queue.get()).submit().is_ok() },
                Err(_) => false,
            },
        }
    }));
}

/// How long a waiter waits for a shared queue's lock to submit it on the caller's behalf.
const SUBMITTER_LOCK_WAIT: std::time::Duration = std::time::Duration::from_millis(200);

/// Take the queue behind `h` out of the handle table for a destroy: an owned queue only from
/// its owner thread. `Ok(None)` for NULL.
pub(in crate::capi) fn take_queue(h: *mut tg_queue, arg: &str) -> Result<Option<Arc<QueueCell>>> {
    let hv = h as usize;
    if hv == 0 {
        return Ok(None);
    }
    {
        let cell = queue_cell(h, arg)?;
        if let QueueCell::Owned(oq) = &*cell {
            let _busy = oq.enter(hv, arg)?;
            owned_forget(&OWNED, hv);
        }
    }
    match handles::take(hv, Kind::Queue, arg)? {
        Some(Object::Queue(q)) => Ok(Some(q)),
        _ => Ok(None),
    }
}

impl QueueCell {
    /// Mark the queue so that dropping it abandons its work (`tg_queue_abort`).
    pub(in crate::capi) fn abandon_on_drop(&self) {
        match self {
            QueueCell::Shared(m) => m.lock().abandon_on_drop(),
            // SAFETY: called by `tg_queue_abort` after `take_queue` (owner thread, no call on
            // the queue running).
            QueueCell::Owned(oq) => unsafe { (*oq.queue.get()).abandon_on_drop() },
        }
    }
}
