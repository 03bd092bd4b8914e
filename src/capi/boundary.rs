//! The call boundary of the C API: every `extern "C"` body runs inside [`run`], which catches
//! panics (`TG_ERROR_INTERNAL`), turns a [`crate::error::Error`] into its [`tg_status`] and keeps
//! the message for `tg_last_error_message()` (thread-local); plus the helpers every C function
//! uses on its arguments: out-pointers, C strings, `struct_size` checks, fixed C string fields,
//! and handle lookups in the handle table (`handles.rs`), which give `TG_ERROR_INVALID_HANDLE`
//! for NULL, destroyed and wrong-type handles.
//!
//! Nothing here is part of the C API: no `extern "C"` function lives in this file.

use super::handles::{self, Kind, Object};
use super::{tg_buf, tg_device, tg_kernel, tg_module, tg_queue, tg_signal, tg_status};
use crate::core::{Buffer, CmdBuf, Device, Kernel, Module, Queue, Signal};
use crate::error::{Error, Result, Status};
use parking_lot::Mutex;
use std::cell::{Cell, RefCell, UnsafeCell};
use std::ffi::{c_char, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

// ---------------------------------------------------------------------------------------------
// Status mapping

impl From<Status> for tg_status {
    fn from(s: Status) -> tg_status {
        // Exhaustive on purpose: a new `Status` must get a C value here.
        match s {
            Status::Ok => tg_status::TG_OK,
            Status::InvalidArgument => tg_status::TG_ERROR_INVALID_ARGUMENT,
            Status::NullPointer => tg_status::TG_ERROR_NULL_POINTER,
            Status::InvalidHandle => tg_status::TG_ERROR_INVALID_HANDLE,
            Status::OutOfMemory => tg_status::TG_ERROR_OUT_OF_MEMORY,
            Status::NotFound => tg_status::TG_ERROR_NOT_FOUND,
            Status::NotSupported => tg_status::TG_ERROR_NOT_SUPPORTED,
            Status::Timeout => tg_status::TG_ERROR_TIMEOUT,
            Status::DeviceFault => tg_status::TG_ERROR_DEVICE_FAULT,
            Status::Os => tg_status::TG_ERROR_OS,
            Status::InvalidCubin => tg_status::TG_ERROR_INVALID_CUBIN,
            Status::InvalidLaunch => tg_status::TG_ERROR_INVALID_LAUNCH,
            Status::CompileError => tg_status::TG_ERROR_COMPILE,
            Status::LibraryMissing => tg_status::TG_ERROR_LIBRARY_MISSING,
            Status::UnsupportedDriver => tg_status::TG_ERROR_UNSUPPORTED_DRIVER,
            Status::Internal => tg_status::TG_ERROR_INTERNAL,
            Status::DeviceLost => tg_status::TG_ERROR_DEVICE_LOST,
        }
    }
}

impl tg_status {
    /// The `Status` with the same value, for any raw integer (`None` outside 0..=16).
    pub fn from_raw(v: i32) -> Option<Status> {
        const ALL: [Status; 17] = [
            Status::Ok,
            Status::InvalidArgument,
            Status::NullPointer,
            Status::InvalidHandle,
            Status::OutOfMemory,
            Status::NotFound,
            Status::NotSupported,
            Status::Timeout,
            Status::DeviceFault,
            Status::Os,
            Status::InvalidCubin,
            Status::InvalidLaunch,
            Status::CompileError,
            Status::LibraryMissing,
            Status::UnsupportedDriver,
            Status::Internal,
            Status::DeviceLost,
        ];
        ALL.iter().copied().find(|s| *s as i32 == v)
    }
}

// ---------------------------------------------------------------------------------------------
// Panic catching and the last-error text

thread_local! {
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

fn set_last_error(msg: &str) {
    let c = CString::new(msg.replace('\0', "\\0")).unwrap_or_default();
    // `try_with`: during thread teardown the slot may be gone; the status still reports.
    let _ = LAST_ERROR.try_with(|slot| {
        if let Ok(mut s) = slot.try_borrow_mut() {
            *s = c;
        }
    });
}

/// The calling thread's last error message for `tg_last_error_message()`: never NULL, `""`
/// when no call has failed on this thread yet (or the thread-local is gone in thread teardown).
pub(super) fn last_error_ptr() -> *const c_char {
    static EMPTY: &CStr = c"";
    catch_unwind(|| {
        LAST_ERROR.try_with(|s| s.try_borrow().map(|c| c.as_ptr()).unwrap_or(EMPTY.as_ptr()))
    })
    .ok()
    .and_then(|r| r.ok())
    .unwrap_or(EMPTY.as_ptr())
}

/// Prefix `msg` with the call name unless the core already did.
fn with_call(call: &str, msg: &str) -> String {
    if msg.starts_with(call) && msg[call.len()..].starts_with(':') {
        return msg.to_string();
    }
    // The queue reports launch errors as "tg_launch: ..."; name the variant that was called.
    if let Some(rest) = msg.strip_prefix("tg_launch: ") {
        return format!("{call}: {rest}");
    }
    format!("{call}: {msg}")
}

/// Run one C API body: catch panics, turn errors into a status and the last-error text.
/// Inlined into each C function, with the error paths out of line: the successful call then
/// costs no extra call frame (each frame is stores to the stack, and on the submit paths every
/// store waits behind the previous doorbell's uncached store).
#[inline]
pub(super) fn run(call: &str, body: impl FnOnce() -> Result<()>) -> tg_status {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => tg_status::TG_OK,
        Ok(Err(e)) => failed(call, e),
        Err(payload) => panicked(call, payload),
    }
}

#[cold]
#[inline(never)]
fn failed(call: &str, e: Error) -> tg_status {
    set_last_error(&with_call(call, &e.message));
    e.status.into()
}

#[cold]
#[inline(never)]
fn panicked(call: &str, payload: Box<dyn std::any::Any + Send>) -> tg_status {
    let what = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".to_string());
    set_last_error(&format!("{call}: internal error (panic: {what})"));
    tg_status::TG_ERROR_INTERNAL
}

// ---------------------------------------------------------------------------------------------
// Argument helpers

/// The error for a required pointer argument `what` that is NULL.
pub(super) fn null(what: &str) -> Error {
    Error::new(Status::NullPointer, format!("{what} is NULL"))
}

/// Check an out-pointer; returns it for the final write.
pub(super) fn out_ptr<T>(p: *mut T, what: &str) -> Result<*mut T> {
    if p.is_null() {
        Err(null(what))
    } else {
        Ok(p)
    }
}

/// Read a NUL-terminated UTF-8 string argument.
///
/// # Safety
/// `p` is NULL or points to a NUL-terminated string.
pub(super) unsafe fn c_str<'a>(p: *const c_char, what: &str) -> Result<&'a str> {
    if p.is_null() {
        return Err(null(what));
    }
    CStr::from_ptr(p)
        .to_str()
        .map_err(|e| Error::invalid(format!("{what} is not valid UTF-8 ({e})")))
}

/// Check the `struct_size` the caller put at the start of an output struct.
///
/// # Safety
/// `out` points to at least 4 readable bytes.
pub(super) unsafe fn check_out_struct_size<T>(
    out: *const T,
    what: &str,
    c_type: &str,
) -> Result<()> {
    let given = std::ptr::read_unaligned(out as *const u32);
    let need = std::mem::size_of::<T>();
    if (given as usize) < need {
        return Err(Error::invalid(format!(
            "{what}->struct_size is {given}; set it to sizeof({c_type}) ({need})"
        )));
    }
    Ok(())
}

/// Copy `s` into a fixed C string field, truncating at a character boundary and terminating.
pub(super) fn fill_c_string(dst: &mut [c_char], s: &str) {
    let max = dst.len().saturating_sub(1);
    let mut end = s.len().min(max);
    while end > 0 && !s.is_char_boundary(end) {
        end -= 1;
    }
    for (d, b) in dst.iter_mut().zip(s.as_bytes()[..end].iter()) {
        *d = *b as c_char;
    }
    for d in dst.iter_mut().skip(end) {
        *d = 0;
    }
}

// ---------------------------------------------------------------------------------------------
// Handle lookups (the table is `handles.rs`): the object behind a handle of each C type, or
// `TG_ERROR_INVALID_HANDLE` naming the argument `arg` (NULL, destroyed, or another type).

pub(super) fn device(h: *const tg_device, arg: &str) -> Result<Device> {
    match handles::get(h as usize, Kind::Device, arg)? {
        Object::Device(d) => Ok(d),
        _ => Err(Error::new(Status::Internal, "handle table kind mismatch")),
    }
}

pub(super) fn buffer(h: *const tg_buf, arg: &str) -> Result<Arc<Buffer>> {
    match handles::get(h as usize, Kind::Buf, arg)? {
        Object::Buf(b) => Ok(b),
        _ => Err(Error::new(Status::Internal, "handle table kind mismatch")),
    }
}

pub(super) fn module(h: *const tg_module, arg: &str) -> Result<Module> {
    match handles::get(h as usize, Kind::Module, arg)? {
        Object::Module(m) => Ok(m),
        _ => Err(Error::new(Status::Internal, "handle table kind mismatch")),
    }
}

thread_local! {
    static KERNEL_LOOKUP: handles::LookupCache<Kernel, 32> = const { RefCell::new([const { None }; 32]) };
    static QUEUE_LOOKUP: handles::LookupCache<QueueCell, 4> = const { RefCell::new([const { None }; 4]) };
    static SIGNAL_LOOKUP: handles::LookupCache<Signal, 8> = const { RefCell::new([const { None }; 8]) };
}

pub(super) fn kernel(h: *const tg_kernel, arg: &str) -> Result<Arc<Kernel>> {
    handles::get_cached(&KERNEL_LOOKUP, h as usize, Kind::Kernel, arg, |o| match o {
        Object::Kernel(k) => Some(k),
        _ => None,
    })
}

fn queue_cell(h: *const tg_queue, arg: &str) -> Result<Arc<QueueCell>> {
    handles::get_cached(&QUEUE_LOOKUP, h as usize, Kind::Queue, arg, |o| match o {
        Object::Queue(q) => Some(q),
        _ => None,
    })
}

// ---------------------------------------------------------------------------------------------
// Queues: shared (any thread, a lock per call) or owned by one thread (no lock, no reference
// counting per call)

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

/// An owned queue's cached kernel: (handle, `handles::removals()` when cached, the kernel).
type CachedKernel = (usize, u64, Arc<Kernel>);

// SAFETY: `queue`, `kernels` and `cmdbufs` are touched only by the thread whose token is
// `owner` (`Owner::enter` checks it on every access) and never reentrantly (its busy flag);
// the owner never changes. Other threads only read the owner's token.
unsafe impl Sync for OwnedQueue {}

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
    static OWNED: OwnedTable = const { [const { Cell::new((0, 0)) }; 4] };
    /// The calling thread's owned command buffers.
    static OWNED_CMDBUFS: OwnedTable = const { [const { Cell::new((0, 0)) }; 4] };
}

fn owned_way(h: usize) -> usize {
    (h / 16) % 4
}

/// The address `table` holds for handle `h` (not for a handle from before a fork()).
#[inline(always)]
fn owned_lookup(table: &'static std::thread::LocalKey<OwnedTable>, h: usize) -> Option<usize> {
    let (_, ptr) = table
        .try_with(|o| o[owned_way(h)].get())
        .ok()
        .filter(|&(ch, _)| ch == h && h != 0 && h as u64 >= crate::os::fork::forked_below())?;
    Some(ptr)
}

/// Note in `table` that handle `h` is the calling thread's object at `ptr`.
fn owned_note(table: &'static std::thread::LocalKey<OwnedTable>, h: usize, ptr: usize) {
    let _ = table.try_with(|o| o[owned_way(h)].set((h, ptr)));
}

/// Remove handle `h` from `table` (before its object is destroyed).
fn owned_forget(table: &'static std::thread::LocalKey<OwnedTable>, h: usize) {
    let _ = table.try_with(|o| {
        let e = &o[owned_way(h)];
        if e.get().0 == h {
            e.set((0, 0));
        }
    });
}

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

/// Marks an owned object busy for one call.
pub(super) struct Busy<'a>(&'a Cell<bool>);
impl Drop for Busy<'_> {
    fn drop(&mut self) {
        self.0.set(false);
    }
}

/// What an owned object is, for messages: its noun and the call that creates it.
pub(super) struct OwnedKind {
    noun: &'static str,
    create: &'static str,
}

const OWNED_QUEUE: OwnedKind = OwnedKind {
    noun: "queue",
    create: "tg_queue_create_owned",
};

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

/// The object behind handle `h` in an owned queue's cache `slots`, else from `lookup` (and then
/// cached). The cache holds strong references, valid while no handle has been removed since
/// they were taken: a removal anywhere empties it at the next lookup, so a destroyed object is
/// not kept alive by it beyond that.
#[inline(always)]
fn cached<T>(
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

impl OwnedQueue {
    /// The command buffer behind `ch`, from the queue's cache or through `lookup` (emptied
    /// like the kernel cache).
    #[inline(always)]
    fn cmdbuf(
        &self,
        ch: *const super::tg_cmdbuf,
        arg: &str,
        lookup: CmdBufLookup,
    ) -> Result<&CmdBufCell> {
        // SAFETY: only the owner thread gets here, inside `enter` (no other reference exists).
        let cs = unsafe { &mut *self.cmdbufs.get() };
        cached(cs, ch as usize, || lookup(ch, arg)).map(|c| &**c)
    }
}

/// How a command buffer handle is looked up (`capi::cmdbuf`).
pub(super) type CmdBufLookup = fn(*const super::tg_cmdbuf, &str) -> Result<Arc<CmdBufCell>>;

// ---------------------------------------------------------------------------------------------
// Command buffers: shared (any thread, a lock per call) or owned by one thread (no lock)

/// The object behind a `tg_cmdbuf` handle.
#[allow(clippy::large_enum_variant)]
pub(crate) enum CmdBufCell {
    /// `tg_cmdbuf_create`: any thread; calls are serialized by the lock.
    Shared(super::lock::CmdBufLock),
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
        CmdBufCell::Shared(super::lock::CmdBufLock::new(c))
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
    pub(super) fn with<R>(
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
pub(super) fn with_cmdbuf<R>(
    h: *const super::tg_cmdbuf,
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
pub(super) fn register_cmdbuf(cell: CmdBufCell) -> Result<usize> {
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
pub(super) fn destroy_cmdbuf(
    h: *mut super::tg_cmdbuf,
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
pub(super) fn with_queue_cmdbuf<R>(
    h: *const tg_queue,
    arg: &str,
    ch: *const super::tg_cmdbuf,
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
pub(super) fn with_queue<R>(
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
pub(super) fn register_queue(cell: QueueCell) -> Result<usize> {
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
pub(super) fn take_queue(h: *mut tg_queue, arg: &str) -> Result<Option<Arc<QueueCell>>> {
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
    pub(super) fn abandon_on_drop(&self) {
        match self {
            QueueCell::Shared(m) => m.lock().abandon_on_drop(),
            // SAFETY: called by `tg_queue_abort` after `take_queue` (owner thread, no call on
            // the queue running).
            QueueCell::Owned(oq) => unsafe { (*oq.queue.get()).abandon_on_drop() },
        }
    }
}

pub(super) fn signal(h: *const tg_signal, arg: &str) -> Result<Arc<Signal>> {
    handles::get_cached(&SIGNAL_LOOKUP, h as usize, Kind::Signal, arg, |o| match o {
        Object::Signal(s) => Some(s),
        _ => None,
    })
}

/// Whether two objects were created from the same open device.
pub(super) fn same_device(a: &Device, b: &Device) -> bool {
    Arc::ptr_eq(&a.inner, &b.inner)
}

/// Put a new object into the handle table; its handle value for C.
pub(super) fn register(obj: Object) -> Result<usize> {
    handles::insert(obj)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capi::tg_last_error_message;

    #[test]
    fn status_values_match_core_status() {
        for v in 0..=16 {
            let s = tg_status::from_raw(v).expect("0..=16 are statuses");
            assert_eq!(tg_status::from(s) as i32, v);
            assert_eq!(s as i32, v);
        }
        assert!(tg_status::from_raw(17).is_none());
        assert!(tg_status::from_raw(-1).is_none());
        // Fixed numbers from the C API contract.
        assert_eq!(tg_status::TG_OK as i32, 0);
        assert_eq!(tg_status::TG_ERROR_INVALID_ARGUMENT as i32, 1);
        assert_eq!(tg_status::TG_ERROR_INVALID_HANDLE as i32, 3);
        assert_eq!(tg_status::TG_ERROR_INTERNAL as i32, 15);
        assert_eq!(tg_status::TG_ERROR_DEVICE_LOST as i32, 16);
    }

    #[test]
    fn c_string_fields_truncate_and_terminate() {
        let mut b = [1 as c_char; 4];
        fill_c_string(&mut b, "abcdef");
        assert_eq!(b, [b'a' as c_char, b'b' as c_char, b'c' as c_char, 0]);
        // "é" is two bytes: never cut a character in half.
        let mut b = [1 as c_char; 3];
        fill_c_string(&mut b, "aé");
        assert_eq!(b, [b'a' as c_char, 0, 0]);
    }

    #[test]
    fn panics_become_internal_errors_with_a_message() {
        let st = run("tg_test_call", || panic!("boom {}", 7));
        assert_eq!(st, tg_status::TG_ERROR_INTERNAL);
        // SAFETY: static/thread-local NUL-terminated string.
        let m = unsafe { CStr::from_ptr(tg_last_error_message()) }
            .to_str()
            .expect("utf8")
            .to_string();
        assert_eq!(m, "tg_test_call: internal error (panic: boom 7)");
    }

    #[test]
    fn messages_are_prefixed_once() {
        assert_eq!(
            with_call("tg_buf_alloc", "size_bytes is 0"),
            "tg_buf_alloc: size_bytes is 0"
        );
        assert_eq!(
            with_call("tg_queue_copy", "tg_queue_copy: dst: x"),
            "tg_queue_copy: dst: x"
        );
        assert_eq!(
            with_call("tg_launch_args", "tg_launch: kernel \"k\""),
            "tg_launch_args: kernel \"k\""
        );
    }

    /// A thread's cached lookup neither keeps a handle usable after another thread destroyed it
    /// nor keeps its object alive: the object goes when the handle is destroyed.
    #[test]
    fn cached_lookups_do_not_outlive_a_destroy() {
        let dev = Device::open(Some("emu")).expect("emulated device");
        let sig = Arc::new(dev.create_signal(7).expect("signal"));
        // The object outlives its handle here (as it does while a call on another thread uses
        // it): the destroyed handle must still be refused.
        let keep = sig.clone();
        let h = register(Object::Signal(sig)).expect("register") as *const tg_signal as usize;
        let (looked, destroyed) = (std::sync::mpsc::channel(), std::sync::mpsc::channel());
        let user = std::thread::spawn(move || {
            for _ in 0..2 {
                let s = signal(h as *const tg_signal, "signal").expect("live handle");
                assert_eq!(s.value(), 7);
            }
            looked.0.send(()).expect("main thread");
            destroyed.1.recv().expect("main thread");
            let e = signal(h as *const tg_signal, "signal").expect_err("destroyed handle");
            assert_eq!(e.status, Status::InvalidHandle);
        });
        looked.1.recv().expect("user thread");
        assert!(handles::remove(h, Kind::Signal, "signal").expect("remove"));
        assert_eq!(
            Arc::strong_count(&keep),
            1,
            "the user thread's cached lookup holds the signal"
        );
        destroyed.0.send(()).expect("user thread");
        user.join().expect("user thread");
    }
}
