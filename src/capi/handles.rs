//! The handle table behind every C handle.
//!
//! Design: a handle value is an opaque identifier, not an address. Identifiers come from a 64-bit
//! counter (`HANDLE_BASE + n * HANDLE_STRIDE`), so they are never reused: once destroyed, a
//! handle stays invalid for the life of the process. Every call looks its handles up in one
//! global table (`RwLock<HashMap<usize, Object>>`, hashed by the handle's sequence number: no
//! SipHash on the launch path; hot kinds first in a per-thread cache of weak references,
//! `get_cached`) and clones the object's reference (one `Arc`) out before doing any work, so
//!
//! - a NULL, destroyed, never-created or wrong-type handle gives `TG_ERROR_INVALID_HANDLE`;
//! - no memory is ever read through a handle value (no use-after-free is possible, whatever the
//!   caller passes);
//! - a destroy racing with a use on another thread is safe: the use keeps its own reference and
//!   the object is dropped when the last reference goes.
//!
//! Objects are dropped outside the table lock (dropping a queue waits for its work).
//!
//! Owned queues (`tg_queue_create_owned`, `boundary::queue::OwnedQueue`) are the exception to the
//! cloned reference: their owner thread finds them through a per-thread table that only it can
//! invalidate (only the owner may destroy them), so a call on one holds no reference of its
//! own; calls from other threads are refused before they touch the queue.
//!
//! After `fork()` the child starts with an empty table and handle values from the parent are
//! reported as such (`crate::os::fork`).

use crate::core::{Buffer, Device, Kernel, Module, Signal};
use crate::error::{Error, Result, Status};
use crate::os::lock::ForkRwLock as RwLock;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

/// The first handle value handed out (above the zero page, so it never looks like NULL).
const HANDLE_BASE: u64 = 0x10_0000;
/// Distance between consecutive handle values (keeps them pointer-aligned for any C type).
const HANDLE_STRIDE: u64 = 16;

/// Which C type a handle has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Device,
    Buf,
    Module,
    Kernel,
    Queue,
    Signal,
    CmdBuf,
    Texture,
}

impl Kind {
    /// The C type name.
    pub(crate) fn c_name(self) -> &'static str {
        match self {
            Kind::Device => "tg_device",
            Kind::Buf => "tg_buf",
            Kind::Module => "tg_module",
            Kind::Kernel => "tg_kernel",
            Kind::Queue => "tg_queue",
            Kind::Signal => "tg_signal",
            Kind::CmdBuf => "tg_cmdbuf",
            Kind::Texture => "tg_texture",
        }
    }
}

/// The Rust object a handle stands for. Each variant holds a reference that keeps its device
/// (and, for a kernel, its module) alive.
#[derive(Clone)]
pub(crate) enum Object {
    Device(Device),
    Buf(Arc<Buffer>),
    Module(Module),
    Kernel(Arc<Kernel>),
    Queue(Arc<super::boundary::QueueCell>),
    Signal(Arc<Signal>),
    CmdBuf(Arc<super::boundary::CmdBufCell>),
    Texture(Arc<crate::core::Texture>),
}

impl Object {
    pub(crate) fn kind(&self) -> Kind {
        match self {
            Object::Device(_) => Kind::Device,
            Object::Buf(_) => Kind::Buf,
            Object::Module(_) => Kind::Module,
            Object::Kernel(_) => Kind::Kernel,
            Object::Queue(_) => Kind::Queue,
            Object::Signal(_) => Kind::Signal,
            Object::CmdBuf(_) => Kind::CmdBuf,
            Object::Texture(_) => Kind::Texture,
        }
    }
}

static NEXT: AtomicU64 = AtomicU64::new(0);

/// Hashes a handle value: its sequence number (`(value - HANDLE_BASE) / HANDLE_STRIDE`) times
/// an odd constant, which keeps consecutive handles in distinct buckets and spreads the top bits
/// the table uses as tags. Handle values are not chosen by an adversary that could profit from
/// collisions (a caller can only slow its own lookups), so no keyed hash is needed.
#[derive(Default, Clone, Copy)]
pub(crate) struct HandleHasher(u64);

impl std::hash::Hasher for HandleHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    fn write_usize(&mut self, v: usize) {
        self.0 = ((v as u64) / HANDLE_STRIDE).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

type Table = HashMap<usize, Object, std::hash::BuildHasherDefault<HandleHasher>>;

fn table() -> &'static RwLock<Table> {
    static TABLE: OnceLock<RwLock<Table>> = OnceLock::new();
    TABLE.get_or_init(|| {
        crate::os::fork::register(&FORK_LOCK);
        crate::os::fork::set_child_hook(forget_all_for_child);
        RwLock::new(Table::default())
    })
}

/// The table's lock, held across `fork()` (see `crate::os::fork`).
pub(crate) static FORK_LOCK: crate::os::fork::ForkLock = crate::os::fork::ForkLock {
    order: 0,
    lock: || std::mem::forget(table().write()),
    // SAFETY (of the call): the caller took the write lock with `lock` and forgot its guard.
    unlock: || unsafe { table().force_unlock_write() },
};

/// In a fork child: empties the table without dropping the parent's objects (dropping them
/// would free the parent's memory through the inherited descriptors) and returns the first
/// handle value the child hands out; every value below it came from the parent.
pub(crate) fn forget_all_for_child() -> u64 {
    let parents = std::mem::take(&mut *table().write());
    std::mem::forget(parents);
    REMOVALS.fetch_add(1, Ordering::AcqRel);
    NEXT.load(Ordering::Relaxed)
        .saturating_mul(HANDLE_STRIDE)
        .saturating_add(HANDLE_BASE)
}

/// Register an object; returns its new handle value (never 0, never used before).
pub(crate) fn insert(obj: Object) -> Result<usize> {
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let value = n
        .checked_mul(HANDLE_STRIDE)
        .and_then(|v| v.checked_add(HANDLE_BASE))
        .and_then(|v| usize::try_from(v).ok())
        .ok_or_else(|| Error::new(Status::OutOfMemory, "the handle space is exhausted"))?;
    table().write().insert(value, obj);
    Ok(value)
}

fn describe_missing(arg: &str, h: usize, kind: Kind) -> Error {
    if h == 0 {
        Error::new(Status::InvalidHandle, format!("{arg} is NULL"))
    } else if (h as u64) >= HANDLE_BASE && (h as u64) < crate::os::fork::forked_below() {
        Error::new(
            Status::InvalidHandle,
            format!(
                "{arg} {h:#x} was created before fork() (in the parent process or earlier): \
                 handles do not cross fork(); open a new tg_device in this process"
            ),
        )
    } else {
        Error::new(
            Status::InvalidHandle,
            format!(
                "{arg} {h:#x} is not a live {} (destroyed or never created)",
                kind.c_name()
            ),
        )
    }
}

fn wrong_kind(arg: &str, h: usize, found: Kind, want: Kind) -> Error {
    Error::new(
        Status::InvalidHandle,
        format!(
            "{arg} {h:#x} is a {}, expected a {}",
            found.c_name(),
            want.c_name()
        ),
    )
}

/// Look a handle up and clone its object out; `arg` names the parameter for messages.
pub(crate) fn get(h: usize, want: Kind, arg: &str) -> Result<Object> {
    if h == 0 {
        return Err(describe_missing(arg, h, want));
    }
    let t = table().read();
    match t.get(&h) {
        Some(o) if o.kind() == want => Ok(o.clone()),
        Some(o) => Err(wrong_kind(arg, h, o.kind(), want)),
        None => Err(describe_missing(arg, h, want)),
    }
}

/// Bumped by every removal from the table (and in a fork child): a per-thread cached lookup
/// made before the last removal is not trusted.
static REMOVALS: AtomicU64 = AtomicU64::new(0);

/// The number of removals from the table so far (see [`get_cached`]).
#[inline(always)]
pub(crate) fn removals() -> u64 {
    REMOVALS.load(Ordering::Acquire)
}

/// One thread's recent lookups of handles of one kind, direct-mapped by handle: (handle,
/// `REMOVALS` when it was looked up, a weak reference to the object). Weak: a handle destroyed on
/// another thread is freed at once, as without the cache; the cache only skips the table's lock
/// and hash for a live handle.
pub(crate) type LookupCache<T, const N: usize> =
    std::cell::RefCell<[Option<(usize, u64, std::sync::Weak<T>)>; N]>;

/// `get` for the hot lookups (queues, kernels, signals): the calling thread's earlier lookup of
/// the handle is reused while no handle was removed since; else the table is read and the
/// cache entry refilled. `extract` takes the object's reference out of an `Object` of kind `want`.
#[inline]
pub(crate) fn get_cached<T, const N: usize>(
    cache: &'static std::thread::LocalKey<LookupCache<T, N>>,
    h: usize,
    want: Kind,
    arg: &str,
    extract: fn(Object) -> Option<Arc<T>>,
) -> Result<Arc<T>> {
    let removals = REMOVALS.load(Ordering::Acquire);
    let way = (h / HANDLE_STRIDE as usize) % N;
    let hit = cache
        .try_with(|c| match c.try_borrow().ok()?.get(way)? {
            Some((ch, cr, w)) if *ch == h && *cr == removals => w.upgrade(),
            _ => None,
        })
        .ok()
        .flatten();
    if let Some(o) = hit {
        return Ok(o);
    }
    let o = extract(get(h, want, arg)?)
        .ok_or_else(|| Error::new(Status::Internal, "handle table kind mismatch"))?;
    let weak = Arc::downgrade(&o);
    let _ = cache.try_with(|c| {
        if let Some(e) = c
            .try_borrow_mut()
            .ok()
            .as_deref_mut()
            .and_then(|a| a.get_mut(way))
        {
            *e = Some((h, removals, weak));
        }
    });
    Ok(o)
}

/// Unregister a handle and drop its object (outside the table lock). `Ok(false)` for NULL
/// (destroying NULL is a no-op).
pub(crate) fn remove(h: usize, want: Kind, arg: &str) -> Result<bool> {
    Ok(take(h, want, arg)?.is_some())
}

/// Unregister a handle and hand its object to the caller. `Ok(None)` for NULL.
pub(crate) fn take(h: usize, want: Kind, arg: &str) -> Result<Option<Object>> {
    if h == 0 {
        return Ok(None);
    }
    let obj = {
        let mut t = table().write();
        match t.get(&h) {
            Some(o) if o.kind() == want => {
                REMOVALS.fetch_add(1, Ordering::AcqRel);
                t.remove(&h)
            }
            Some(o) => return Err(wrong_kind(arg, h, o.kind(), want)),
            None => return Err(describe_missing(arg, h, want)),
        }
    };
    Ok(obj)
}

/// Holds the table's read lock for `d` on the calling thread, as a thread inside any `tg_*`
/// call does for a moment (tests of the fork handling).
#[doc(hidden)]
pub fn hold_table_lock_for(d: std::time::Duration) {
    let _g = table().read();
    std::thread::sleep(d);
}

/// Number of live handles of each kind (for tests and leak checks).
pub fn live_handles() -> usize {
    table().read().len()
}
