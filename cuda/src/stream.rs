//! Streams (each a libtegragpu compute queue), their ordering with the legacy default stream,
//! the per-thread default stream, events (a signal each, with GPU timestamps) and kernel
//! launches.
//!
//! Ordering: every stream has a signal it releases (value `signaled`) after its recorded work
//! when another stream or the host needs a point to wait for ([`Stream::mark_locked`]). The
//! legacy default stream, before recording work, waits on the GPU for the work recorded so far
//! on every blocking stream of its context; a blocking stream waits for the work recorded so far
//! on the legacy stream. Non-blocking streams order with nothing implicitly.

use crate::context::{current, Context};
use crate::device::out;
use crate::error::{fail, guard, invalid, Fail, R};
use crate::types::*;
use parking_lot::Mutex;
use std::cell::RefCell;
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use tegragpu::core::{self, LaunchConfig, Queue, QueueKind, Signal};

const MAGIC: u64 = 0x7467_6375_7374_726d;
const EVENT_MAGIC: u64 = 0x7467_6375_6576_6e74;
/// How many times a stream's creation waits for the context's work and tries again when the
/// backend makes channels only while the device is idle.
const QUEUE_TRIES: u32 = 8;
/// How long host waits last before they give up (CUDA waits without limit).
pub const WAIT_NS: u64 = 24 * 3600 * 1_000_000_000;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Kind {
    Legacy,
    PerThread,
    User,
}

pub struct StreamState {
    /// None once the stream's context was destroyed.
    pub q: Option<Queue>,
    /// The last value recorded for `sig`.
    signaled: u64,
    /// Work was recorded after the last release of `sig`.
    dirty: bool,
    /// The legacy stream's value this stream last waited for (blocking streams).
    legacy_waited: u64,
    /// This stream's value the legacy stream last waited for.
    waited_by_legacy: u64,
    /// The legacy stream only: the blocking streams of its context (user streams without
    /// `CU_STREAM_NON_BLOCKING`, per-thread default streams), which it orders with.
    others: Vec<&'static Stream>,
}

pub struct Stream {
    magic: u64,
    pub ctx: &'static Context,
    pub kind: Kind,
    pub flags: u32,
    pub priority: i32,
    sig: Signal,
    /// Bumped (under `st`) after each record: another stream that saw this value needs no lock
    /// of this one to know there is no new work to order with.
    epoch: AtomicU64,
    /// Blocking streams: the legacy stream's `epoch` whose work this stream already waits for.
    legacy_seen: AtomicU64,
    /// Blocking streams: this stream's `epoch` whose work the legacy stream already waits for.
    seen_by_legacy: AtomicU64,
    /// The stream has its queue (cleared when it or its context is destroyed).
    alive: AtomicBool,
    /// The stream takes part in a stream capture (capture.rs): its work becomes graph nodes.
    capturing: AtomicBool,
    pub st: Mutex<StreamState>,
    /// `cuStreamGetId` (queries.rs).
    pub id: u64,
    /// `cuStreamSetAttribute`'s values (queries.rs).
    pub attrs: Mutex<crate::queries::StreamAttrs>,
}

impl Stream {
    pub fn create(
        ctx: &'static Context,
        kind: Kind,
        flags: u32,
        priority: i32,
    ) -> R<&'static Stream> {
        let blocking = kind != Kind::Legacy && flags & CU_STREAM_NON_BLOCKING == 0;
        // The legacy stream lists the blocking streams: it exists first.
        let legacy = if blocking {
            Some(ctx.legacy_stream()?)
        } else {
            None
        };
        // A backend that makes channels only while the device is idle (RM while work runs,
        // Orin beyond its channel pool) refuses now: wait for the context's work, then try
        // again; other threads may have launched more meanwhile, so a few times.
        let mut tries = 0;
        let q = loop {
            match ctx.core.create_queue(QueueKind::Compute) {
                Ok(q) => break q,
                Err(e) if e.status == tegragpu::Status::NotSupported && tries < QUEUE_TRIES => {
                    tries += 1;
                    ctx.synchronize()?;
                }
                Err(e) => return Err(e.into()),
            }
        };
        // The copy kernel now, not at the first copy (whose free-memory figure would drop):
        // CUDA allocates what a stream needs when it is created. A device without one fails
        // the copies themselves, saying why.
        let mut q = q;
        let _ = q.prepare_copies();
        let sig = ctx.core.create_signal(0)?;
        let s: &'static Stream = Box::leak(Box::new(Stream {
            magic: MAGIC,
            ctx,
            kind,
            flags,
            priority,
            sig,
            epoch: AtomicU64::new(0),
            legacy_seen: AtomicU64::new(0),
            seen_by_legacy: AtomicU64::new(0),
            alive: AtomicBool::new(true),
            capturing: AtomicBool::new(false),
            st: Mutex::new(StreamState {
                q: Some(q),
                signaled: 0,
                dirty: false,
                legacy_waited: 0,
                waited_by_legacy: 0,
                others: Vec::new(),
            }),
            id: crate::queries::next_id(),
            attrs: Mutex::new(Default::default()),
        }));
        ctx.streams.lock().push(s);
        if let Some(l) = legacy {
            l.st.lock().others.push(s);
        }
        Ok(s)
    }

    pub fn handle(&'static self) -> *mut c_void {
        self as *const Stream as *mut c_void
    }

    /// The stream takes part in a stream capture.
    #[inline]
    pub fn is_capturing(&self) -> bool {
        self.capturing.load(Ordering::Acquire)
    }

    pub fn set_capturing(&self, on: bool) {
        self.capturing.store(on, Ordering::Release);
    }

    fn blocking(&self) -> bool {
        self.kind != Kind::Legacy && self.flags & CU_STREAM_NON_BLOCKING == 0
    }

    /// Release `sig` after the work recorded so far (if any since the last release) and submit;
    /// the value to wait for.
    fn mark_locked(&self, st: &mut StreamState) -> R<u64> {
        if st.dirty {
            let v = st.signaled + 1;
            let q = queue(st)?;
            q.signal(&self.sig, v)?;
            q.submit()?;
            st.signaled = v;
            st.dirty = false;
        }
        Ok(st.signaled)
    }

    /// Record work: first the implicit waits of the legacy-stream ordering, then `f` on the
    /// queue, then submit. One lock (the stream's own) unless another stream it orders with
    /// recorded work since it last looked: no allocation, no system call beyond the queue's.
    #[inline]
    pub fn record<T>(&'static self, f: impl FnOnce(&mut Queue) -> tegragpu::Result<T>) -> R<T> {
        if self.is_capturing() {
            return Err(crate::capture::refuse(
                self,
                "work other than kernel launches, memsets, copies, host functions and stream-ordered allocations",
            ));
        }
        // A blocking stream waits for the legacy stream's work: its value, marked under the
        // legacy stream's lock (taken before this stream's: the legacy stream takes the
        // blocking streams' locks under its own), only when it has new work.
        let mut legacy_wait = None;
        if self.blocking() {
            if let Some(l) = self.ctx.legacy() {
                let e = l.epoch.load(Ordering::Acquire);
                if e != self.legacy_seen.load(Ordering::Acquire) {
                    let v = l.mark_locked(&mut l.st.lock())?;
                    legacy_wait = Some((l, v, e));
                }
            }
        }
        let mut st = self.st.lock();
        let StreamState {
            q,
            others,
            legacy_waited,
            ..
        } = &mut *st;
        let q = q.as_mut().ok_or_else(destroyed)?;
        // The legacy stream waits for the blocking streams' work (those with new work).
        for b in others.iter() {
            let e = b.epoch.load(Ordering::Acquire);
            if e == b.seen_by_legacy.load(Ordering::Acquire) {
                continue;
            }
            let v = {
                let mut bst = b.st.lock();
                let v = b.mark_locked(&mut bst)?;
                let new = v > bst.waited_by_legacy;
                bst.waited_by_legacy = bst.waited_by_legacy.max(v);
                new.then_some(v)
            };
            if let Some(v) = v {
                q.wait(&b.sig, v)?;
            }
            b.seen_by_legacy.store(e, Ordering::Release);
        }
        if let Some((l, v, e)) = legacy_wait {
            if v > *legacy_waited {
                *legacy_waited = v;
                q.wait(&l.sig, v)?;
            }
            // Stored once the wait is in the queue (under this stream's lock): a record that
            // skips the legacy lock for this epoch comes after it.
            self.legacy_seen.store(e, Ordering::Release);
        }
        let r = f(q)?;
        q.submit()?;
        st.dirty = true;
        self.epoch.fetch_add(1, Ordering::Release);
        Ok(r)
    }

    /// Release the stream's signal after the work recorded so far; the value that marks it
    /// (another queue waits for it on the GPU with [`Stream::signal`]).
    pub(crate) fn mark(&'static self) -> R<u64> {
        self.mark_locked(&mut self.st.lock())
    }

    /// The signal [`Stream::mark`] releases.
    pub(crate) fn signal(&self) -> &Signal {
        &self.sig
    }

    /// Wait until the work recorded so far is complete.
    pub fn synchronize(&'static self) -> R {
        if self.is_capturing() {
            return Err(crate::capture::refuse(self, "synchronizing the stream"));
        }
        // Every record submits, and the queue's own timeline passes each submit once its work
        // (host functions included: the queue waits for them) is done: wait for that, with no
        // release of `sig` to add and submit.
        let point = match self.st.lock().q.as_ref() {
            None => return Ok(()),
            Some(q) => q.submitted_point(),
        };
        point.wait(WAIT_NS)?;
        crate::pools::after_sync();
        Ok(())
    }

    /// Whether the work recorded so far is complete.
    pub fn query(&'static self) -> R<bool> {
        if self.is_capturing() {
            return Err(crate::capture::refuse(self, "querying the stream"));
        }
        let point = match self.st.lock().q.as_ref() {
            None => return Ok(true),
            Some(q) => q.submitted_point(),
        };
        if let Some(f) = self.ctx.core.fault_report() {
            return Err(fail(CUDA_ERROR_LAUNCH_FAILED, f.what));
        }
        Ok(point.reached())
    }

    /// Drop the stream's queue (its context is destroyed).
    pub fn release_queue(&self) {
        self.alive.store(false, Ordering::Release);
        let (q, others) = {
            let mut st = self.st.lock();
            (st.q.take(), std::mem::take(&mut st.others))
        };
        drop(q);
        drop(others);
    }

    /// The stream has its queue.
    #[inline]
    pub fn is_alive(&self) -> bool {
        self.alive.load(Ordering::Acquire)
    }

    fn destroy(&'static self) {
        if self.is_capturing() {
            crate::capture::stream_destroyed(self);
        }
        let _ = self.synchronize();
        self.ctx.streams.lock().retain(|s| !std::ptr::eq(*s, self));
        if let Some(l) = self.ctx.legacy() {
            l.st.lock().others.retain(|s| !std::ptr::eq(*s, self));
        }
        self.release_queue();
        // The Stream itself stays allocated: a handle used after destroy reads a dead queue
        // (CUDA_ERROR_CONTEXT_IS_DESTROYED), not freed memory.
    }
}

fn queue(st: &mut StreamState) -> R<&mut Queue> {
    st.q.as_mut().ok_or_else(destroyed)
}

#[cold]
fn destroyed() -> Fail {
    fail(
        CUDA_ERROR_CONTEXT_IS_DESTROYED,
        "the stream's context or the stream was destroyed",
    )
}

thread_local! {
    /// The per-thread default stream of each context this thread used.
    static PER_THREAD: RefCell<Vec<(usize, &'static Stream)>> = const { RefCell::new(Vec::new()) };
}

fn per_thread(ctx: &'static Context) -> R<&'static Stream> {
    let key = ctx as *const Context as usize;
    let exiting = || fail(CUDA_ERROR_DEINITIALIZED, "the thread is exiting");
    let found = PER_THREAD
        .try_with(|p| p.borrow().iter().find(|(k, _)| *k == key).map(|(_, s)| *s))
        .map_err(|_| exiting())?;
    if let Some(s) = found {
        if s.is_alive() {
            return Ok(s);
        }
    }
    let s = Stream::create(ctx, Kind::PerThread, 0, 0)?;
    PER_THREAD
        .try_with(|p| {
            let mut p = p.borrow_mut();
            p.retain(|(k, _)| *k != key);
            p.push((key, s));
        })
        .map_err(|_| exiting())?;
    Ok(s)
}

/// The stream a special handle (NULL, `CU_STREAM_LEGACY`, `CU_STREAM_PER_THREAD`) names in
/// `ctx`; a NULL handle is the per-thread stream where `ptds` is set.
pub fn special_stream(ctx: &'static Context, h: usize, ptds: bool) -> R<&'static Stream> {
    match h {
        0 if ptds => per_thread(ctx),
        CU_STREAM_PER_THREAD => per_thread(ctx),
        _ => ctx.legacy_stream(),
    }
}

/// The stream a handle names: 0 is the legacy default stream (the per-thread one for the
/// `_ptds` / `_ptsz` entry points, `ptds`), `CU_STREAM_LEGACY` and `CU_STREAM_PER_THREAD` the
/// two default streams of the current context.
#[inline]
pub unsafe fn stream_of(h: *mut c_void, ptds: bool) -> R<&'static Stream> {
    match h as usize {
        0 if ptds => per_thread(current()?),
        0 | CU_STREAM_LEGACY => current()?.legacy_stream(),
        CU_STREAM_PER_THREAD => per_thread(current()?),
        _ => {
            crate::device::check_init()?;
            let s = &*(h as *const Stream);
            if s.magic != MAGIC {
                return Err(fail(
                    CUDA_ERROR_INVALID_HANDLE,
                    format!("{h:?} is not a stream"),
                ));
            }
            Ok(s)
        }
    }
}

// --- Streams ------------------------------------------------------------------------------

#[no_mangle]
pub unsafe extern "C" fn cuStreamCreate(ph: *mut *mut c_void, flags: u32) -> CUresult {
    guard("cuStreamCreate", || {
        let p = out(ph, "phStream")?;
        if flags & !CU_STREAM_NON_BLOCKING != 0 {
            return Err(invalid(format!("flags {flags:#x}")));
        }
        *p = Stream::create(current()?, Kind::User, flags, 0)?.handle();
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuStreamCreateWithPriority(
    ph: *mut *mut c_void,
    flags: u32,
    priority: i32,
) -> CUresult {
    guard("cuStreamCreateWithPriority", || {
        let p = out(ph, "phStream")?;
        if flags & !CU_STREAM_NON_BLOCKING != 0 {
            return Err(invalid(format!("flags {flags:#x}")));
        }
        *p = Stream::create(current()?, Kind::User, flags, priority.clamp(-5, 0))?.handle();
        Ok(())
    })
}

unsafe fn stream_destroy(h: *mut c_void) -> R {
    let s = stream_of(h, false)?;
    if s.kind != Kind::User {
        return Err(fail(
            CUDA_ERROR_INVALID_HANDLE,
            "a default stream cannot be destroyed",
        ));
    }
    s.destroy();
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn cuStreamDestroy(h: *mut c_void) -> CUresult {
    guard("cuStreamDestroy", || stream_destroy(h))
}

#[no_mangle]
pub unsafe extern "C" fn cuStreamDestroy_v2(h: *mut c_void) -> CUresult {
    guard("cuStreamDestroy_v2", || stream_destroy(h))
}

unsafe fn stream_sync(h: *mut c_void, ptds: bool) -> R {
    stream_of(h, ptds)?.synchronize()
}

#[no_mangle]
pub unsafe extern "C" fn cuStreamSynchronize(h: *mut c_void) -> CUresult {
    guard("cuStreamSynchronize", || stream_sync(h, false))
}

#[no_mangle]
pub unsafe extern "C" fn cuStreamSynchronize_ptsz(h: *mut c_void) -> CUresult {
    guard("cuStreamSynchronize_ptsz", || stream_sync(h, true))
}

unsafe fn stream_query(h: *mut c_void, ptds: bool) -> R {
    if stream_of(h, ptds)?.query()? {
        Ok(())
    } else {
        Err(Fail(CUDA_ERROR_NOT_READY, None))
    }
}

#[no_mangle]
pub unsafe extern "C" fn cuStreamQuery(h: *mut c_void) -> CUresult {
    guard("cuStreamQuery", || stream_query(h, false))
}

#[no_mangle]
pub unsafe extern "C" fn cuStreamQuery_ptsz(h: *mut c_void) -> CUresult {
    guard("cuStreamQuery_ptsz", || stream_query(h, true))
}

unsafe fn stream_flags(h: *mut c_void, ptds: bool, flags: *mut u32) -> R {
    let f = out(flags, "flags")?;
    *f = stream_of(h, ptds)?.flags;
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn cuStreamGetFlags(h: *mut c_void, flags: *mut u32) -> CUresult {
    guard("cuStreamGetFlags", || stream_flags(h, false, flags))
}

#[no_mangle]
pub unsafe extern "C" fn cuStreamGetFlags_ptsz(h: *mut c_void, flags: *mut u32) -> CUresult {
    guard("cuStreamGetFlags_ptsz", || stream_flags(h, true, flags))
}

unsafe fn stream_priority(h: *mut c_void, ptds: bool, p: *mut i32) -> R {
    let o = out(p, "priority")?;
    *o = stream_of(h, ptds)?.priority;
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn cuStreamGetPriority(h: *mut c_void, p: *mut i32) -> CUresult {
    guard("cuStreamGetPriority", || stream_priority(h, false, p))
}

#[no_mangle]
pub unsafe extern "C" fn cuStreamGetPriority_ptsz(h: *mut c_void, p: *mut i32) -> CUresult {
    guard("cuStreamGetPriority_ptsz", || stream_priority(h, true, p))
}

unsafe fn stream_ctx(h: *mut c_void, ptds: bool, p: *mut *mut c_void) -> R {
    let o = out(p, "pctx")?;
    *o = stream_of(h, ptds)?.ctx.handle();
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn cuStreamGetCtx(h: *mut c_void, p: *mut *mut c_void) -> CUresult {
    guard("cuStreamGetCtx", || stream_ctx(h, false, p))
}

#[no_mangle]
pub unsafe extern "C" fn cuStreamGetCtx_ptsz(h: *mut c_void, p: *mut *mut c_void) -> CUresult {
    guard("cuStreamGetCtx_ptsz", || stream_ctx(h, true, p))
}

#[no_mangle]
pub unsafe extern "C" fn cuCtxGetStreamPriorityRange(
    least: *mut i32,
    greatest: *mut i32,
) -> CUresult {
    guard("cuCtxGetStreamPriorityRange", || {
        if let Some(l) = least.as_mut() {
            *l = 0;
        }
        if let Some(g) = greatest.as_mut() {
            *g = -5;
        }
        Ok(())
    })
}

pub(crate) unsafe fn stream_wait_event(
    h: *mut c_void,
    ev: *mut c_void,
    flags: u32,
    ptds: bool,
) -> R {
    if flags != 0 && flags != 1 {
        return Err(invalid(format!("flags {flags:#x}")));
    }
    let e = event_ref(ev)?;
    let s = stream_of(h, ptds)?;
    // CU_EVENT_WAIT_EXTERNAL on a capturing stream: an event wait node.
    if flags == 1 && s.is_capturing() {
        return crate::capture::add(s, || Ok(crate::graph::NodeKind::EventWait(ev as usize)));
    }
    if let Some(r) = crate::capture::wait_event(s, ev as usize) {
        return r;
    }
    let v = e.target();
    if v == 0 {
        return Ok(());
    }
    s.record(|q| q.wait(&e.sig, v))
}

#[no_mangle]
pub unsafe extern "C" fn cuStreamWaitEvent(
    h: *mut c_void,
    ev: *mut c_void,
    flags: u32,
) -> CUresult {
    guard("cuStreamWaitEvent", || {
        stream_wait_event(h, ev, flags, false)
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuStreamWaitEvent_ptsz(
    h: *mut c_void,
    ev: *mut c_void,
    flags: u32,
) -> CUresult {
    guard("cuStreamWaitEvent_ptsz", || {
        stream_wait_event(h, ev, flags, true)
    })
}

// --- Events -------------------------------------------------------------------------------

pub struct Event {
    magic: u64,
    flags: u32,
    pub(crate) sig: Signal,
    /// The value the last record releases (0: never recorded).
    target: AtomicU64,
    next: AtomicU64,
    /// Interprocess events (`CU_EVENT_INTERPROCESS`): the CPU address of the target word in
    /// the event's shared memory (ipc.rs), which every process holding the event reads and
    /// writes instead of `target`; 0 otherwise.
    shared_target: usize,
}

impl Event {
    /// The value the last record releases (0: never recorded).
    #[inline]
    fn target(&self) -> u64 {
        match self.shared_target {
            0 => self.target.load(Ordering::Acquire),
            // SAFETY: an aligned word of the event's shared memory, which its signal keeps.
            p => unsafe { &*(p as *const AtomicU64) }.load(Ordering::Acquire),
        }
    }

    /// The value a new record releases: above every earlier one (of any process sharing it).
    fn next_value(&self) -> u64 {
        let v = self.next.fetch_add(1, Ordering::AcqRel) + 1;
        if self.shared_target == 0 {
            return v;
        }
        let v = v.max(self.target() + 1);
        self.next.fetch_max(v, Ordering::AcqRel);
        v
    }

    fn set_target(&self, v: u64) {
        self.target.store(v, Ordering::Release);
        if self.shared_target != 0 {
            // SAFETY: as in `target`.
            unsafe { &*(self.shared_target as *const AtomicU64) }.store(v, Ordering::Release);
        }
    }
}

/// The event `h` for `cuIpcGetEventHandle`: one made with `CU_EVENT_INTERPROCESS`.
pub(crate) unsafe fn event_for_ipc(h: *mut c_void) -> R<&'static Event> {
    let e = event_ref(h)?;
    if e.flags & CU_EVENT_INTERPROCESS == 0 {
        return Err(fail(
            CUDA_ERROR_INVALID_HANDLE,
            format!("event {h:?} was not created with CU_EVENT_INTERPROCESS"),
        ));
    }
    Ok(e)
}

/// An interprocess event whose memory is `buf` (made here, or imported by
/// `cuIpcOpenEventHandle`): its signal at offset 0, its target word at
/// [`crate::ipc::TARGET_OFFSET`].
pub(crate) fn event_in_buffer(buf: std::sync::Arc<tegragpu::core::Buffer>) -> R<*mut c_void> {
    let sig = Signal::in_buffer(buf.clone(), 0)?;
    let cpu = buf.map_cpu()? as usize;
    let e = Box::new(Event {
        magic: EVENT_MAGIC,
        flags: CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING,
        sig,
        target: AtomicU64::new(0),
        next: AtomicU64::new(0),
        shared_target: cpu + crate::ipc::TARGET_OFFSET,
    });
    Ok(Box::into_raw(e) as *mut c_void)
}

unsafe fn event_ref(h: *mut c_void) -> R<&'static Event> {
    crate::device::check_init()?;
    let e = (h as *const Event)
        .as_ref()
        .ok_or_else(|| fail(CUDA_ERROR_INVALID_HANDLE, "the event handle is NULL"))?;
    if e.magic != EVENT_MAGIC {
        return Err(fail(
            CUDA_ERROR_INVALID_HANDLE,
            format!("{h:?} is not an event"),
        ));
    }
    Ok(e)
}

#[no_mangle]
pub unsafe extern "C" fn cuEventCreate(ph: *mut *mut c_void, flags: u32) -> CUresult {
    guard("cuEventCreate", || {
        let p = out(ph, "phEvent")?;
        if flags & !(CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS) != 0
        {
            return Err(invalid(format!("flags {flags:#x}")));
        }
        let c = current()?;
        if flags & CU_EVENT_INTERPROCESS != 0 {
            if flags & CU_EVENT_DISABLE_TIMING == 0 {
                return Err(invalid(format!(
                    "flags {flags:#x}: CU_EVENT_INTERPROCESS needs CU_EVENT_DISABLE_TIMING"
                )));
            }
            // Memory other processes import (ipc.rs) and map for the CPU: zeroed, so never
            // recorded. Device memory on desktop GPUs (RM maps imported device memory for the
            // CPU, not imported pinned pages); shared memory on Jetson.
            let mf = tegragpu::core::MemFlags {
                cpu_cached: c.core.backend_kind() == tegragpu::core::BackendKind::Nvgpu,
                zeroed: true,
                ..Default::default()
            };
            let buf = c.core.alloc(crate::ipc::EVENT_BYTES, mf)?;
            let h = event_in_buffer(std::sync::Arc::new(buf))?;
            // SAFETY: just made.
            unsafe { (*(h as *mut Event)).flags = flags };
            *p = h;
            return Ok(());
        }
        let e = Box::new(Event {
            magic: EVENT_MAGIC,
            flags,
            sig: c.core.create_signal(0)?,
            target: AtomicU64::new(0),
            next: AtomicU64::new(0),
            shared_target: 0,
        });
        *p = Box::into_raw(e) as *mut c_void;
        Ok(())
    })
}

unsafe fn event_destroy(h: *mut c_void) -> R {
    let e = event_ref(h)?;
    // Work recorded to release the event's signal keeps the slot (libtegragpu holds a dropped
    // signal's slot until queued work no longer uses it).
    crate::capture::event_released(h as usize);
    if e.flags & CU_EVENT_INTERPROCESS != 0 {
        crate::ipc::forget(true, h as u64);
    }
    let b = Box::from_raw(e as *const Event as *mut Event);
    let mut b = b;
    b.magic = 0;
    drop(b);
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn cuEventDestroy(h: *mut c_void) -> CUresult {
    guard("cuEventDestroy", || event_destroy(h))
}

#[no_mangle]
pub unsafe extern "C" fn cuEventDestroy_v2(h: *mut c_void) -> CUresult {
    guard("cuEventDestroy_v2", || event_destroy(h))
}

/// `ev` is an event (`cuCtxRecordEvent`, `cuCtxWaitEvent`).
pub(crate) unsafe fn event_check(ev: *mut c_void) -> R {
    event_ref(ev).map(|_| ())
}

/// `cuEventRecordWithFlags`: with `CU_EVENT_RECORD_EXTERNAL` on a capturing stream, an event
/// record node (the event is recorded when the graph runs); otherwise as `cuEventRecord`.
unsafe fn event_record_flags(ev: *mut c_void, h: *mut c_void, flags: u32, ptds: bool) -> R {
    if flags & !1 != 0 {
        return Err(invalid(format!("flags {flags:#x}")));
    }
    let s = stream_of(h, ptds)?;
    if flags & 1 != 0 && s.is_capturing() {
        event_ref(ev)?;
        return crate::capture::add(s, || Ok(crate::graph::NodeKind::EventRecord(ev as usize)));
    }
    event_record_on(ev, s)
}

unsafe fn event_record(ev: *mut c_void, h: *mut c_void, ptds: bool) -> R {
    event_record_on(ev, stream_of(h, ptds)?)
}

/// Record event `ev` on stream `s`.
pub(crate) unsafe fn event_record_on(ev: *mut c_void, s: &'static Stream) -> R {
    let e = event_ref(ev)?;
    if s.is_capturing() {
        return crate::capture::record_event(s, ev as usize);
    }
    s.record(|q| {
        let v = e.next_value();
        q.signal(&e.sig, v)?;
        e.set_target(v);
        Ok(())
    })?;
    crate::capture::event_released(ev as usize);
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn cuEventRecord(ev: *mut c_void, h: *mut c_void) -> CUresult {
    guard("cuEventRecord", || event_record(ev, h, false))
}

#[no_mangle]
pub unsafe extern "C" fn cuEventRecord_ptsz(ev: *mut c_void, h: *mut c_void) -> CUresult {
    guard("cuEventRecord_ptsz", || event_record(ev, h, true))
}

#[no_mangle]
pub unsafe extern "C" fn cuEventRecordWithFlags(
    ev: *mut c_void,
    h: *mut c_void,
    flags: u32,
) -> CUresult {
    guard("cuEventRecordWithFlags", || {
        event_record_flags(ev, h, flags, false)
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuEventRecordWithFlags_ptsz(
    ev: *mut c_void,
    h: *mut c_void,
    flags: u32,
) -> CUresult {
    guard("cuEventRecordWithFlags_ptsz", || {
        event_record_flags(ev, h, flags, true)
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuEventQuery(ev: *mut c_void) -> CUresult {
    guard("cuEventQuery", || {
        let e = event_ref(ev)?;
        crate::capture::check_event(ev as usize)?;
        if e.sig.value() >= e.target() {
            Ok(())
        } else {
            Err(Fail(CUDA_ERROR_NOT_READY, None))
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuEventSynchronize(ev: *mut c_void) -> CUresult {
    guard("cuEventSynchronize", || {
        let e = event_ref(ev)?;
        crate::capture::check_event(ev as usize)?;
        let v = e.target();
        if v > 0 {
            e.sig.wait(v, WAIT_NS)?;
        }
        crate::pools::after_sync();
        Ok(())
    })
}

unsafe fn elapsed(ms: *mut f32, start: *mut c_void, end: *mut c_void) -> R {
    let o = out(ms, "pMilliseconds")?;
    let (a, b) = (event_ref(start)?, event_ref(end)?);
    if (a.flags | b.flags) & CU_EVENT_DISABLE_TIMING != 0 {
        return Err(fail(
            CUDA_ERROR_INVALID_HANDLE,
            "an event was created with CU_EVENT_DISABLE_TIMING",
        ));
    }
    let (ta, tb) = (
        a.target.load(Ordering::Acquire),
        b.target.load(Ordering::Acquire),
    );
    if ta == 0 || tb == 0 {
        return Err(fail(
            CUDA_ERROR_INVALID_HANDLE,
            "an event was never recorded",
        ));
    }
    if a.sig.value() < ta || b.sig.value() < tb {
        return Err(Fail(CUDA_ERROR_NOT_READY, None));
    }
    let (sa, sb) = (a.sig.timestamp(), b.sig.timestamp());
    *o = (sb as f64 - sa as f64) as f32 / 1e6;
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn cuEventElapsedTime(
    ms: *mut f32,
    start: *mut c_void,
    end: *mut c_void,
) -> CUresult {
    guard("cuEventElapsedTime", || elapsed(ms, start, end))
}

#[no_mangle]
pub unsafe extern "C" fn cuEventElapsedTime_v2(
    ms: *mut f32,
    start: *mut c_void,
    end: *mut c_void,
) -> CUresult {
    guard("cuEventElapsedTime_v2", || elapsed(ms, start, end))
}

// --- Launches -----------------------------------------------------------------------------

/// Launch `f` on stream `h` with `kernelParams` or the packed `extra` form.
#[allow(clippy::too_many_arguments)]
#[inline]
unsafe fn launch(
    f: *mut c_void,
    grid: [u32; 3],
    block: [u32; 3],
    shared: u32,
    h: *mut c_void,
    params: *mut *mut c_void,
    extra: *mut *mut c_void,
    ptds: bool,
) -> R {
    let cfg = LaunchConfig {
        grid,
        block,
        dynamic_shared_bytes: shared,
        cooperative: false,
        concurrent: false,
        cluster: [0; 3],
    };
    launch_cfg(f, &cfg, h, params, extra, ptds)
}

/// Launch `f` with `cfg` on stream `h` (`kernelParams` or `extra`).
#[inline]
pub unsafe fn launch_cfg(
    f: *mut c_void,
    cfg: &LaunchConfig,
    h: *mut c_void,
    params: *mut *mut c_void,
    extra: *mut *mut c_void,
    ptds: bool,
) -> R {
    let func = crate::module::func_ref(f)?;
    func.check_shared(cfg.dynamic_shared_bytes)?;
    let s = stream_of(h, ptds)?;
    if s.is_capturing() {
        return crate::capture::add(s, || crate::graph::launch_kind(f, cfg, params, extra));
    }
    let k = &func.kernel;
    let n = k.attributes().params.len();
    if !params.is_null() {
        let args = std::slice::from_raw_parts(params as *const *const u8, n);
        s.record(|q| q.launch_ptrs(k, cfg, args))
    } else if !extra.is_null() {
        let bytes = packed_params(extra, k.attributes().param_bytes as usize)?;
        s.record(|q| q.launch(k, cfg, bytes))
    } else if n == 0 {
        s.record(|q| q.launch(k, cfg, &[]))
    } else {
        Err(invalid(format!(
            "kernel \"{}\" takes {n} parameters; kernelParams and extra are both NULL",
            k.attributes().name
        )))
    }
}

/// The parameter block the `extra` array gives (`CU_LAUNCH_PARAM_BUFFER_POINTER`, `_SIZE`,
/// `_END`): its first `need` bytes (the kernel's parameter block size).
pub unsafe fn packed_params<'a>(extra: *mut *mut c_void, need: usize) -> R<&'a [u8]> {
    let (mut ptr, mut size): (*const u8, Option<usize>) = (std::ptr::null(), None);
    let mut i = 0;
    loop {
        let key = *extra.add(i) as usize;
        match key {
            CU_LAUNCH_PARAM_END => break,
            CU_LAUNCH_PARAM_BUFFER_POINTER => ptr = *extra.add(i + 1) as *const u8,
            CU_LAUNCH_PARAM_BUFFER_SIZE => {
                let p = *extra.add(i + 1) as *const usize;
                if p.is_null() {
                    return Err(invalid("CU_LAUNCH_PARAM_BUFFER_SIZE points to NULL"));
                }
                size = Some(*p);
            }
            other => {
                return Err(invalid(format!(
                    "extra[{i}] = {other:#x} is not a launch parameter key"
                )))
            }
        }
        i += 2;
        if i > 64 {
            return Err(invalid("extra has no CU_LAUNCH_PARAM_END"));
        }
    }
    let size = size.ok_or_else(|| invalid("extra has no CU_LAUNCH_PARAM_BUFFER_SIZE"))?;
    if ptr.is_null() && need > 0 {
        return Err(invalid("extra has no CU_LAUNCH_PARAM_BUFFER_POINTER"));
    }
    if size < need {
        return Err(invalid(format!(
            "the parameter buffer has {size} bytes; the kernel takes {need}"
        )));
    }
    if need == 0 {
        return Ok(&[]);
    }
    Ok(std::slice::from_raw_parts(ptr, need))
}

#[no_mangle]
pub unsafe extern "C" fn cuLaunchKernel(
    f: *mut c_void,
    gx: u32,
    gy: u32,
    gz: u32,
    bx: u32,
    by: u32,
    bz: u32,
    shared: u32,
    h: *mut c_void,
    params: *mut *mut c_void,
    extra: *mut *mut c_void,
) -> CUresult {
    guard("cuLaunchKernel", || {
        launch(
            f,
            [gx, gy, gz],
            [bx, by, bz],
            shared,
            h,
            params,
            extra,
            false,
        )
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuLaunchKernel_ptsz(
    f: *mut c_void,
    gx: u32,
    gy: u32,
    gz: u32,
    bx: u32,
    by: u32,
    bz: u32,
    shared: u32,
    h: *mut c_void,
    params: *mut *mut c_void,
    extra: *mut *mut c_void,
) -> CUresult {
    guard("cuLaunchKernel_ptsz", || {
        launch(
            f,
            [gx, gy, gz],
            [bx, by, bz],
            shared,
            h,
            params,
            extra,
            true,
        )
    })
}

#[allow(dead_code)]
fn _core(_: &core::Device) {}
