//! Contexts: the primary context of each device (retained and released, reference counted),
//! created contexts, and the per-thread context stack (`cuCtxPushCurrent` / `PopCurrent` /
//! `SetCurrent` / `GetCurrent`).
//!
//! A context's memory stays allocated for the life of the process (a destroyed context's handle
//! answers `CUDA_ERROR_INVALID_CONTEXT`, never a read of freed memory); its streams and queues
//! are released when it is destroyed.

use crate::device::{check_init, dev, out, Dev};
use crate::error::{fail, guard, invalid, Fail, R};
use crate::stream::Stream;
use crate::types::*;
use parking_lot::Mutex;
use std::cell::RefCell;
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, Ordering};
use tegragpu::core;

const MAGIC: u64 = 0x7467_6375_6374_7821;

pub struct Context {
    magic: u64,
    pub dev: &'static Dev,
    pub core: core::Device,
    pub flags: AtomicU32,
    pub primary: bool,
    pub destroyed: AtomicBool,
    /// The legacy default stream (created on first use; null once the context is destroyed).
    /// Read without a lock on the launch path; made under `legacy_init`. The blocking streams it
    /// orders with are listed in its own state (`StreamState::others`).
    legacy: AtomicPtr<Stream>,
    legacy_init: Mutex<()>,
    /// Every stream of the context (for `cuCtxSynchronize`).
    pub streams: Mutex<Vec<&'static Stream>>,
    /// Contexts whose memory this context accesses (`cuCtxEnablePeerAccess`).
    pub peers: Mutex<Vec<&'static Context>>,
    /// `cuCtxGetId` (queries.rs).
    pub id: u64,
    /// `cuCtxSetCacheConfig`'s preference.
    pub cache_config: AtomicU32,
}

impl Context {
    fn new(d: &'static Dev, flags: u32, primary: bool) -> R<&'static Context> {
        let core = d.core()?.clone();
        let c: &'static Context = Box::leak(Box::new(Context {
            magic: MAGIC,
            dev: d,
            core,
            // What NVIDIA's libcuda reports (H200, driver 580): a primary context adds
            // CU_CTX_MAP_HOST; a context made with flags 0 reads CU_CTX_LMEM_RESIZE_TO_MAX;
            // `cuCtxSetFlags` replaces them all.
            flags: AtomicU32::new(if primary {
                flags | CU_CTX_MAP_HOST
            } else if flags == 0 {
                CU_CTX_LMEM_RESIZE_TO_MAX
            } else {
                flags
            }),
            primary,
            destroyed: AtomicBool::new(false),
            legacy: AtomicPtr::new(std::ptr::null_mut()),
            legacy_init: Mutex::new(()),
            streams: Mutex::new(Vec::new()),
            peers: Mutex::new(Vec::new()),
            id: crate::queries::next_id(),
            cache_config: AtomicU32::new(0),
        }));
        // The legacy stream's queue now, while the device is likely idle (some backends make
        // channels only then); if that fails it is made at first use.
        let _ = c.legacy_stream();
        // libcuda reserves the kernels' local memory (stack) and its staging memory with the
        // context; without this the first launch or copy would take them, and the free figure
        // of `cuMemGetInfo` would drop then.
        let _ = c.core.reserve_working_memory();
        Ok(c)
    }

    pub fn handle(&'static self) -> *mut c_void {
        self as *const Context as *mut c_void
    }

    /// The legacy default stream, when it exists (no lock).
    #[inline]
    pub fn legacy(&self) -> Option<&'static Stream> {
        // SAFETY: the pointer is null or a leaked (never freed) stream.
        unsafe { self.legacy.load(Ordering::Acquire).as_ref() }
    }

    /// The legacy default stream (made on first use).
    #[inline]
    pub fn legacy_stream(&'static self) -> R<&'static Stream> {
        match self.legacy() {
            Some(s) => Ok(s),
            None => self.make_legacy(),
        }
    }

    #[cold]
    fn make_legacy(&'static self) -> R<&'static Stream> {
        let _g = self.legacy_init.lock();
        if let Some(s) = self.legacy() {
            return Ok(s);
        }
        if self.destroyed.load(Ordering::Acquire) {
            return Err(fail(
                CUDA_ERROR_CONTEXT_IS_DESTROYED,
                "the context was destroyed",
            ));
        }
        let s = Stream::create(self, crate::stream::Kind::Legacy, 0, 0)?;
        self.legacy
            .store(s as *const Stream as *mut Stream, Ordering::Release);
        Ok(s)
    }

    /// Wait for all work of the context.
    pub fn synchronize(&'static self) -> R {
        let streams: Vec<&'static Stream> = self.streams.lock().clone();
        for s in streams {
            s.synchronize()?;
        }
        Ok(())
    }

    /// Release the context's streams (destroy).
    fn teardown(&'static self) {
        self.destroyed.store(true, Ordering::Release);
        let _ = self.synchronize();
        // The CUDA runtime's values for the context go with it (their destructors run).
        crate::export_table::release_context_storage(self.handle());
        let streams: Vec<&'static Stream> = std::mem::take(&mut *self.streams.lock());
        {
            let _g = self.legacy_init.lock();
            self.legacy.store(std::ptr::null_mut(), Ordering::Release);
        }
        for s in streams {
            s.release_queue();
        }
    }
}

/// The context behind a handle.
pub unsafe fn ctx_ref(h: *mut c_void) -> R<&'static Context> {
    let c = (h as *const Context)
        .as_ref()
        .ok_or_else(|| fail(CUDA_ERROR_INVALID_CONTEXT, "the context handle is NULL"))?;
    if c.magic != MAGIC {
        return Err(fail(
            CUDA_ERROR_INVALID_CONTEXT,
            format!("{h:?} is not a context"),
        ));
    }
    if c.destroyed.load(Ordering::Acquire) {
        return Err(fail(
            CUDA_ERROR_CONTEXT_IS_DESTROYED,
            format!("context {h:?} was destroyed"),
        ));
    }
    Ok(c)
}

thread_local! {
    static STACK: RefCell<Vec<&'static Context>> = const { RefCell::new(Vec::new()) };
}

/// A context of device `d` to own memory made for it outside any call's context (the
/// `__managed__` variables of a library's module): the current context when it is `d`'s, else
/// `d`'s primary context while it lives.
pub fn of_device(d: &'static Dev) -> Option<&'static Context> {
    match current() {
        Ok(c) if std::ptr::eq(c.dev, d) => Some(c),
        _ => d
            .primary
            .lock()
            .0
            .filter(|c| !c.destroyed.load(Ordering::Acquire)),
    }
}

/// The calling thread's current context.
#[inline]
pub fn current() -> R<&'static Context> {
    check_init()?;
    // After the thread's storage is gone (exit handlers), no context is current.
    match STACK
        .try_with(|s| s.borrow().last().copied())
        .ok()
        .flatten()
    {
        Some(c) if !c.destroyed.load(Ordering::Relaxed) => Ok(c),
        Some(_) => Err(Fail(CUDA_ERROR_CONTEXT_IS_DESTROYED, None)),
        None => Err(fail(
            CUDA_ERROR_INVALID_CONTEXT,
            "no context is current on this thread",
        )),
    }
}

/// Take `c` off the calling thread's stack (nothing once the thread's storage is gone: exit
/// handlers release contexts too).
fn forget_current(c: &'static Context) {
    let _ = STACK.try_with(|s| s.borrow_mut().retain(|x| !std::ptr::eq(*x, c)));
}

fn push(c: &'static Context) {
    // Nothing to push onto once the thread's storage is gone (exit handlers).
    let _ = STACK.try_with(|s| s.borrow_mut().push(c));
}

unsafe fn create(pctx: *mut *mut c_void, flags: u32, device: CUdevice) -> R {
    let p = out(pctx, "pctx")?;
    let d = dev(device)?;
    let c = Context::new(d, flags, false)?;
    push(c);
    *p = c.handle();
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn cuCtxCreate(
    pctx: *mut *mut c_void,
    flags: u32,
    device: CUdevice,
) -> CUresult {
    guard("cuCtxCreate", || create(pctx, flags, device))
}

#[no_mangle]
pub unsafe extern "C" fn cuCtxCreate_v2(
    pctx: *mut *mut c_void,
    flags: u32,
    device: CUdevice,
) -> CUresult {
    guard("cuCtxCreate_v2", || create(pctx, flags, device))
}

#[no_mangle]
pub unsafe extern "C" fn cuCtxCreate_v3(
    pctx: *mut *mut c_void,
    params: *mut c_void,
    num_params: i32,
    flags: u32,
    device: CUdevice,
) -> CUresult {
    guard("cuCtxCreate_v3", || {
        if num_params > 0 || !params.is_null() {
            return Err(fail(
                CUDA_ERROR_NOT_SUPPORTED,
                "execution affinity parameters are not supported",
            ));
        }
        create(pctx, flags, device)
    })
}

/// `CUctxCreateParams`.
#[repr(C)]
pub struct CtxCreateParams {
    exec_affinity: *mut c_void,
    num_exec_affinity: i32,
    cig: *mut c_void,
}

#[no_mangle]
pub unsafe extern "C" fn cuCtxCreate_v4(
    pctx: *mut *mut c_void,
    params: *mut CtxCreateParams,
    flags: u32,
    device: CUdevice,
) -> CUresult {
    guard("cuCtxCreate_v4", || {
        if let Some(p) = params.as_ref() {
            if p.num_exec_affinity > 0 || !p.exec_affinity.is_null() || !p.cig.is_null() {
                return Err(fail(
                    CUDA_ERROR_NOT_SUPPORTED,
                    "execution affinity and CIG parameters are not supported",
                ));
            }
        }
        create(pctx, flags, device)
    })
}

unsafe fn destroy(h: *mut c_void) -> R {
    let c = ctx_ref(h)?;
    if c.primary {
        return Err(invalid(
            "the primary context is released with cuDevicePrimaryCtxRelease, not destroyed",
        ));
    }
    forget_current(c);
    c.teardown();
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn cuCtxDestroy(ctx: *mut c_void) -> CUresult {
    guard("cuCtxDestroy", || destroy(ctx))
}

#[no_mangle]
pub unsafe extern "C" fn cuCtxDestroy_v2(ctx: *mut c_void) -> CUresult {
    guard("cuCtxDestroy_v2", || destroy(ctx))
}

#[no_mangle]
pub unsafe extern "C" fn cuCtxSetCurrent(ctx: *mut c_void) -> CUresult {
    guard("cuCtxSetCurrent", || {
        check_init()?;
        let c = if ctx.is_null() {
            None
        } else {
            Some(ctx_ref(ctx)?)
        };
        STACK
            .try_with(|s| {
                let mut s = s.borrow_mut();
                s.pop();
                if let Some(c) = c {
                    s.push(c);
                }
            })
            .map_err(|_| fail(CUDA_ERROR_DEINITIALIZED, "the thread is exiting"))?;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuCtxGetCurrent(pctx: *mut *mut c_void) -> CUresult {
    guard("cuCtxGetCurrent", || {
        let p = out(pctx, "pctx")?;
        check_init()?;
        *p = STACK
            .with(|s| s.borrow().last().map(|c| c.handle()))
            .unwrap_or(std::ptr::null_mut());
        Ok(())
    })
}

unsafe fn push_current(ctx: *mut c_void) -> R {
    check_init()?;
    push(ctx_ref(ctx)?);
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn cuCtxPushCurrent(ctx: *mut c_void) -> CUresult {
    guard("cuCtxPushCurrent", || push_current(ctx))
}

#[no_mangle]
pub unsafe extern "C" fn cuCtxPushCurrent_v2(ctx: *mut c_void) -> CUresult {
    guard("cuCtxPushCurrent_v2", || push_current(ctx))
}

unsafe fn pop_current(pctx: *mut *mut c_void) -> R {
    check_init()?;
    let c = STACK
        .with(|s| s.borrow_mut().pop())
        .ok_or_else(|| fail(CUDA_ERROR_INVALID_CONTEXT, "the context stack is empty"))?;
    if let Some(p) = pctx.as_mut() {
        *p = c.handle();
    }
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn cuCtxPopCurrent(pctx: *mut *mut c_void) -> CUresult {
    guard("cuCtxPopCurrent", || pop_current(pctx))
}

#[no_mangle]
pub unsafe extern "C" fn cuCtxPopCurrent_v2(pctx: *mut *mut c_void) -> CUresult {
    guard("cuCtxPopCurrent_v2", || pop_current(pctx))
}

#[no_mangle]
pub unsafe extern "C" fn cuCtxGetDevice(device: *mut CUdevice) -> CUresult {
    guard("cuCtxGetDevice", || {
        let d = out(device, "device")?;
        *d = current()?.dev.ordinal;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuCtxGetFlags(flags: *mut u32) -> CUresult {
    guard("cuCtxGetFlags", || {
        let f = out(flags, "flags")?;
        *f = current()?.flags.load(Ordering::Relaxed);
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuCtxSynchronize() -> CUresult {
    guard("cuCtxSynchronize", || current()?.synchronize())
}

#[no_mangle]
pub unsafe extern "C" fn cuCtxGetApiVersion(ctx: *mut c_void, version: *mut u32) -> CUresult {
    guard("cuCtxGetApiVersion", || {
        let v = out(version, "version")?;
        if ctx.is_null() {
            current()?;
        } else {
            ctx_ref(ctx)?;
        }
        *v = 3020;
        Ok(())
    })
}

// --- Primary contexts ---------------------------------------------------------------------

#[no_mangle]
pub unsafe extern "C" fn cuDevicePrimaryCtxRetain(
    pctx: *mut *mut c_void,
    device: CUdevice,
) -> CUresult {
    guard("cuDevicePrimaryCtxRetain", || {
        let p = out(pctx, "pctx")?;
        *p = primary_made(device, true)?.handle();
        Ok(())
    })
}

/// Device `device`'s primary context, made if there is none; `retain`: one more reference.
fn primary_made(device: CUdevice, retain: bool) -> R<&'static Context> {
    let d = dev(device)?;
    let mut g = d.primary.lock();
    let c = match g.0 {
        Some(c) if !c.destroyed.load(Ordering::Acquire) => c,
        _ => {
            let c = Context::new(d, d.primary_flags.load(Ordering::Relaxed), true)?;
            g.0 = Some(c);
            c
        }
    };
    if retain {
        g.1 += 1;
    }
    Ok(c)
}

/// Device `device`'s primary context, made if there is none, not retained (the CUDA runtime's
/// private interface, export_table.rs).
pub fn primary(device: CUdevice) -> R<&'static Context> {
    primary_made(device, false)
}

unsafe fn primary_release(device: CUdevice) -> R {
    let d = dev(device)?;
    let mut g = d.primary.lock();
    if g.1 == 0 {
        return Err(fail(
            CUDA_ERROR_INVALID_CONTEXT,
            "the primary context is not retained",
        ));
    }
    g.1 -= 1;
    if g.1 == 0 {
        if let Some(c) = g.0.take() {
            forget_current(c);
            c.teardown();
        }
    }
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn cuDevicePrimaryCtxRelease(device: CUdevice) -> CUresult {
    guard("cuDevicePrimaryCtxRelease", || primary_release(device))
}

#[no_mangle]
pub unsafe extern "C" fn cuDevicePrimaryCtxRelease_v2(device: CUdevice) -> CUresult {
    guard("cuDevicePrimaryCtxRelease_v2", || primary_release(device))
}

unsafe fn primary_reset(device: CUdevice) -> R {
    let d = dev(device)?;
    let mut g = d.primary.lock();
    if let Some(c) = g.0.take() {
        forget_current(c);
        c.teardown();
    }
    g.1 = 0;
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn cuDevicePrimaryCtxReset(device: CUdevice) -> CUresult {
    guard("cuDevicePrimaryCtxReset", || primary_reset(device))
}

#[no_mangle]
pub unsafe extern "C" fn cuDevicePrimaryCtxReset_v2(device: CUdevice) -> CUresult {
    guard("cuDevicePrimaryCtxReset_v2", || primary_reset(device))
}

#[no_mangle]
pub unsafe extern "C" fn cuDevicePrimaryCtxGetState(
    device: CUdevice,
    flags: *mut u32,
    active: *mut i32,
) -> CUresult {
    guard("cuDevicePrimaryCtxGetState", || {
        let (f, a) = (out(flags, "flags")?, out(active, "active")?);
        let d = dev(device)?;
        let g = d.primary.lock();
        *f = d.primary_flags.load(Ordering::Relaxed);
        *a = (g.1 > 0) as i32;
        Ok(())
    })
}

unsafe fn primary_set_flags(device: CUdevice, flags: u32) -> R {
    let d = dev(device)?;
    if flags & !0x3f != 0 {
        return Err(invalid(format!("flags {flags:#x}")));
    }
    d.primary_flags.store(flags, Ordering::Relaxed);
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn cuDevicePrimaryCtxSetFlags(device: CUdevice, flags: u32) -> CUresult {
    guard("cuDevicePrimaryCtxSetFlags", || {
        primary_set_flags(device, flags)
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuDevicePrimaryCtxSetFlags_v2(device: CUdevice, flags: u32) -> CUresult {
    guard("cuDevicePrimaryCtxSetFlags_v2", || {
        primary_set_flags(device, flags)
    })
}

/// For `cuMemGetInfo` and friends: check a context is current and return its device.
pub fn current_device() -> R<&'static core::Device> {
    Ok(&current()?.core)
}

#[allow(dead_code)]
fn _unused(_: Fail) {}
