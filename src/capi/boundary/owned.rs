//! What the objects owned by one thread (`tg_*_create_owned`) share: the owner check, the
//! per-thread tables of the calling thread's owned objects, and the handle caches of owned
//! queues and command buffers.

use super::handles;
use crate::core::Kernel;
use crate::error::{Error, Result, Status};
use std::cell::Cell;
use std::sync::Arc;

/// An owned queue's cached kernel: (handle, `handles::removals()` when cached, the kernel).
pub(super) type CachedKernel = (usize, u64, Arc<Kernel>);

/// An address unique among the live threads of the process: the calling thread's token.
#[inline(always)]
fn thread_token() -> usize {
    thread_local! {
        static TOKEN: u8 = const { 0 };
    }
    TOKEN.with(|t| t as *const u8 as usize)
}

/// A per-thread table of the calling thread's owned objects of one kind: (handle, address of
/// the object), direct-mapped by handle. An entry is live: only this thread can destroy the
/// object, and it removes the entry when it does.
type OwnedTable = [Cell<(usize, usize)>; 4];

thread_local! {
    /// The calling thread's owned queues.
    pub(super) static OWNED: OwnedTable = const { [const { Cell::new((0, 0)) }; 4] };
    /// The calling thread's owned command buffers.
    pub(super) static OWNED_CMDBUFS: OwnedTable = const { [const { Cell::new((0, 0)) }; 4] };
}

fn owned_way(h: usize) -> usize {
    (h / 16) % 4
}

/// The address `table` holds for handle `h` (not for a handle from before a fork()).
#[inline(always)]
pub(super) fn owned_lookup(
    table: &'static std::thread::LocalKey<OwnedTable>,
    h: usize,
) -> Option<usize> {
    let (_, ptr) = table
        .try_with(|o| o[owned_way(h)].get())
        .ok()
        .filter(|&(ch, _)| ch == h && h != 0 && h as u64 >= crate::os::fork::forked_below())?;
    Some(ptr)
}

/// Note in `table` that handle `h` is the calling thread's object at `ptr`.
pub(super) fn owned_note(table: &'static std::thread::LocalKey<OwnedTable>, h: usize, ptr: usize) {
    let _ = table.try_with(|o| o[owned_way(h)].set((h, ptr)));
}

/// Remove handle `h` from `table` (before its object is destroyed).
pub(super) fn owned_forget(table: &'static std::thread::LocalKey<OwnedTable>, h: usize) {
    let _ = table.try_with(|o| {
        let e = &o[owned_way(h)];
        if e.get().0 == h {
            e.set((0, 0));
        }
    });
}

/// Marks an owned object busy for one call.
pub(super) struct Busy<'a>(&'a Cell<bool>);
impl Drop for Busy<'_> {
    fn drop(&mut self) {
        self.0.set(false);
    }
}

/// What an owned object is, for messages: its noun and the call that creates it.
pub(super) struct OwnedKind {
    pub(super) noun: &'static str,
    pub(super) create: &'static str,
}

/// The thread that owns an object created by `tg_*_create_owned`, and whether a call on it
/// is running (calls from a log callback inside a call on the same object are refused).
pub(super) struct Owner {
    thread: usize,
    busy: Cell<bool>,
    kind: OwnedKind,
}

impl Owner {
    /// Owned by the calling thread.
    pub(super) fn caller(kind: OwnedKind) -> Owner {
        Owner {
            thread: thread_token(),
            busy: Cell::new(false),
            kind,
        }
    }

    /// Whether the calling thread is the owner.
    #[inline(always)]
    pub(super) fn is_caller(&self) -> bool {
        self.thread == thread_token()
    }

    /// Check that the calling thread owns the object and is not already inside a call on it.
    #[inline(always)]
    pub(super) fn enter(&self, h: usize, arg: &str) -> Result<Busy<'_>> {
        if !self.is_caller() {
            return Err(self.not_owner(h, arg));
        }
        if self.busy.replace(true) {
            return Err(Error::invalid(format!(
                "{arg} {h:#x} is in use by a call further up this thread's stack (a log \
                 callback may not use the {} whose call logs)",
                self.kind.noun
            )));
        }
        Ok(Busy(&self.busy))
    }

    #[cold]
    fn not_owner(&self, h: usize, arg: &str) -> Error {
        let OwnedKind { noun, create } = self.kind;
        Error::invalid(format!(
            "{arg} {h:#x} is owned by the thread that created it ({create}); use it from that \
             thread only, or create a shared {noun}"
        ))
    }
}

/// The object behind handle `h` in an owned queue's cache `slots`, else from `lookup` (and then
/// cached). The cache holds strong references, valid while no handle has been removed since
/// they were taken: a removal anywhere empties it at the next lookup, so a destroyed object is
/// not kept alive by it beyond that.
#[inline(always)]
pub(super) fn cached<T>(
    slots: &mut [Option<(usize, u64, Arc<T>)>],
    h: usize,
    lookup: impl FnOnce() -> Result<Arc<T>>,
) -> Result<&Arc<T>> {
    let removals = handles::removals();
    let way = (h / 16) % slots.len();
    match &slots[way] {
        Some((ch, cr, _)) if *ch == h && *cr == removals => {}
        Some((_, cr, _)) if *cr != removals => {
            for e in slots.iter_mut() {
                *e = None;
            }
            slots[way] = Some((h, removals, lookup()?));
        }
        _ => slots[way] = Some((h, removals, lookup()?)),
    }
    match &slots[way] {
        Some((_, _, o)) => Ok(o),
        None => Err(Error::new(Status::Internal, "owned queue handle cache")),
    }
}
