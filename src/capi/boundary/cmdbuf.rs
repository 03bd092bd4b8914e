//! Command buffers: shared (any thread, a lock per call) or owned by one thread (no lock).

use super::handles::{self, Kind, Object};
use super::owned::{
    cached, owned_forget, owned_lookup, owned_note, CachedKernel, OwnedKind, Owner, OWNED_CMDBUFS,
};
use super::{kernel, register};
use crate::capi::lock::CmdBufLock;
use crate::capi::{tg_cmdbuf, tg_kernel};
use crate::core::{CmdBuf, Kernel};
use crate::error::Result;
use std::cell::UnsafeCell;
use std::sync::Arc;

/// How a command buffer handle is looked up (`capi::cmdbuf`).
pub(super) type CmdBufLookup = fn(*const tg_cmdbuf, &str) -> Result<Arc<CmdBufCell>>;

/// The object behind a `tg_cmdbuf` handle.
#[allow(clippy::large_enum_variant)]
pub(crate) enum CmdBufCell {
    /// `tg_cmdbuf_create`: any thread; calls are serialized by the lock.
    Shared(CmdBufLock),
    /// `tg_cmdbuf_create_owned`: only the creating thread may use or destroy it.
    Owned(OwnedCmdBuf),
}

/// A command buffer only its creating thread uses: no lock (on x86 a lock's atomic
/// read-modify-write waits for the previous submit's doorbell store to leave the CPU), and a
/// kernel cache like an owned queue's, so that updates take no reference count either.
pub(crate) struct OwnedCmdBuf {
    owner: Owner,
    cmdbuf: UnsafeCell<CmdBuf>,
    kernels: UnsafeCell<[Option<CachedKernel>; OWNED_CMDBUF_KERNEL_WAYS]>,
}

/// Kernels an owned command buffer remembers (direct-mapped by handle).
const OWNED_CMDBUF_KERNEL_WAYS: usize = 4;

const OWNED_CMDBUF: OwnedKind = OwnedKind {
    noun: "command buffer",
    create: "tg_cmdbuf_create_owned",
};

// SAFETY: `cmdbuf` and `kernels` are touched only by the owner thread (`Owner::enter` checks it
// on every access) and never reentrantly; other threads only read the owner's token.
unsafe impl Sync for OwnedCmdBuf {}

impl CmdBufCell {
    pub(crate) fn shared(c: CmdBuf) -> CmdBufCell {
        CmdBufCell::Shared(CmdBufLock::new(c))
    }

    /// A command buffer owned by the calling thread.
    pub(crate) fn owned(c: CmdBuf) -> CmdBufCell {
        CmdBufCell::Owned(OwnedCmdBuf {
            owner: Owner::caller(OWNED_CMDBUF),
            cmdbuf: UnsafeCell::new(c),
            kernels: UnsafeCell::new([const { None }; OWNED_CMDBUF_KERNEL_WAYS]),
        })
    }

    /// Run `f` on the command buffer (handle `h`, argument `arg` for messages): under the lock,
    /// or directly from the owner thread of an owned one.
    #[inline(always)]
    pub(in crate::capi) fn with<R>(
        &self,
        h: usize,
        arg: &str,
        f: impl FnOnce(&mut CmdBuf) -> Result<R>,
    ) -> Result<R> {
        // One call site for `f`, so that it is inlined here.
        let (mut _guard, _busy);
        let c: &mut CmdBuf = match self {
            CmdBufCell::Shared(m) => {
                _guard = m.lock();
                &mut _guard
            }
            CmdBufCell::Owned(oc) => {
                _busy = oc.owner.enter(h, arg)?;
                // SAFETY: `enter` established that this is the owner thread and no other call
                // on this command buffer is running: the only reference.
                unsafe { &mut *oc.cmdbuf.get() }
            }
        };
        f(c)
    }
}

/// Run `f` on the command buffer behind `h`, with the kernel `kh` when given: under its lock
/// (shared) or directly (owned, from its owner thread only, which finds it and its kernels
/// without reference counting).
#[inline]
pub(in crate::capi) fn with_cmdbuf<R>(
    h: *const tg_cmdbuf,
    arg: &str,
    kh: Option<(*const tg_kernel, &str)>,
    lookup: CmdBufLookup,
    f: impl FnOnce(&mut CmdBuf, Option<&Kernel>) -> Result<R>,
) -> Result<R> {
    let hv = h as usize;
    if let Some(ptr) = owned_lookup(&OWNED_CMDBUFS, hv) {
        // SAFETY: an entry of this thread's OWNED_CMDBUFS table points to a live owned command
        // buffer: only this thread can destroy it, and it removes the entry when it does.
        let oc = unsafe { &*(ptr as *const OwnedCmdBuf) };
        return owned_cmdbuf_call(oc, hv, arg, kh, f);
    }
    let cell = lookup(h, arg)?;
    match &*cell {
        CmdBufCell::Shared(m) => {
            let k = match kh {
                Some((kh, karg)) => Some(kernel(kh, karg)?),
                None => None,
            };
            f(&mut m.lock(), k.as_deref())
        }
        CmdBufCell::Owned(oc) => {
            let r = owned_cmdbuf_call(oc, hv, arg, kh, f);
            if oc.owner.is_caller() {
                owned_note(&OWNED_CMDBUFS, hv, oc as *const OwnedCmdBuf as usize);
            }
            r
        }
    }
}

#[inline(always)]
fn owned_cmdbuf_call<R>(
    oc: &OwnedCmdBuf,
    h: usize,
    arg: &str,
    kh: Option<(*const tg_kernel, &str)>,
    f: impl FnOnce(&mut CmdBuf, Option<&Kernel>) -> Result<R>,
) -> Result<R> {
    let _busy = oc.owner.enter(h, arg)?;
    let k = match kh {
        Some((kh, karg)) => {
            // SAFETY: owner thread, inside `enter`: the only reference to the cache.
            let ks = unsafe { &mut *oc.kernels.get() };
            Some(&**cached(ks, kh as usize, || kernel(kh, karg))?)
        }
        None => None,
    };
    // SAFETY: `enter` established that this is the owner thread and no other call on this
    // command buffer is running: the only reference.
    f(unsafe { &mut *oc.cmdbuf.get() }, k)
}

/// Register a new command buffer (shared or owned by the calling thread); its handle value.
pub(in crate::capi) fn register_cmdbuf(cell: CmdBufCell) -> Result<usize> {
    let cell = Arc::new(cell);
    let owned = match &*cell {
        CmdBufCell::Owned(oc) => Some(oc as *const OwnedCmdBuf as usize),
        CmdBufCell::Shared(_) => None,
    };
    let h = register(Object::CmdBuf(cell))?;
    if let Some(ptr) = owned {
        owned_note(&OWNED_CMDBUFS, h, ptr);
    }
    Ok(h)
}

/// Destroy the command buffer behind `h`: an owned one only from its owner thread. NULL is a
/// no-op.
pub(in crate::capi) fn destroy_cmdbuf(
    h: *mut tg_cmdbuf,
    arg: &str,
    lookup: CmdBufLookup,
) -> Result<()> {
    let hv = h as usize;
    if hv == 0 {
        return Ok(());
    }
    {
        let cell = lookup(h, arg)?;
        if let CmdBufCell::Owned(oc) = &*cell {
            let _busy = oc.owner.enter(hv, arg)?;
            owned_forget(&OWNED_CMDBUFS, hv);
        }
    }
    handles::remove(hv, Kind::CmdBuf, arg).map(|_| ())
}
