//! Identity and configuration: ids and devices of contexts and streams (`cuCtxGetId`,
//! `cuStreamGetId`, `cuStreamGetDevice`, the CUDA 13 `_v2` forms that name a context), events
//! over a whole context (`cuCtxRecordEvent`, `cuCtxWaitEvent`), the context's cache, shared
//! memory and flags settings, stream attributes, module function lists and loading state,
//! `cuOccupancyAvailableDynamicSMemPerBlock`, devices by PCI bus id, 2-D memsets. The answers
//! are NVIDIA's libcuda's, as the differential test (cuda/tests/c/difftest.c, section `query`)
//! observed them on an H200.

use crate::context::{ctx_ref, current, Context};
use crate::device::{dev, devices, out, pci_bus_id};
use crate::error::{fail, guard, invalid, Fail, R};
use crate::stream::{stream_of, Stream};
use crate::types::*;
use std::ffi::{c_char, c_void, CStr};
use std::sync::atomic::{AtomicU64, Ordering};

/// Ids of contexts and streams: unique in the process, increasing with creation.
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// A fresh id for a context or stream.
pub(crate) fn next_id() -> u64 {
    NEXT_ID.fetch_add(1, Ordering::Relaxed)
}

/// `ctx`, or the current context when it is NULL.
unsafe fn ctx_or_current(ctx: *mut c_void) -> R<&'static Context> {
    if ctx.is_null() {
        current()
    } else {
        ctx_ref(ctx)
    }
}

#[no_mangle]
pub unsafe extern "C" fn cuCtxGetId(ctx: *mut c_void, id: *mut u64) -> CUresult {
    guard("cuCtxGetId", || {
        let o = out(id, "ctxId")?;
        *o = ctx_or_current(ctx)?.id;
        Ok(())
    })
}

unsafe fn stream_id(h: *mut c_void, id: *mut u64, ptds: bool) -> R {
    let o = out(id, "streamId")?;
    *o = stream_of(h, ptds)?.id;
    Ok(())
}

unsafe fn stream_device(h: *mut c_void, d: *mut CUdevice, ptds: bool) -> R {
    let o = out(d, "device")?;
    *o = stream_of(h, ptds)?.ctx.dev.ordinal;
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn cuCtxGetDevice_v2(d: *mut CUdevice, ctx: *mut c_void) -> CUresult {
    guard("cuCtxGetDevice_v2", || {
        let o = out(d, "device")?;
        *o = ctx_or_current(ctx)?.dev.ordinal;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuCtxSynchronize_v2(ctx: *mut c_void) -> CUresult {
    guard("cuCtxSynchronize_v2", || {
        ctx_or_current(ctx)?.synchronize()?;
        crate::pools::after_sync();
        Ok(())
    })
}

unsafe fn stream_ctx_v2(
    h: *mut c_void,
    pctx: *mut *mut c_void,
    pgreen: *mut *mut c_void,
    ptds: bool,
) -> R {
    let s = stream_of(h, ptds)?;
    if let Some(c) = pctx.as_mut() {
        *c = s.ctx.handle();
    }
    // No green contexts here.
    if let Some(g) = pgreen.as_mut() {
        *g = std::ptr::null_mut();
    }
    Ok(())
}

// --- Events over a whole context -------------------------------------------------------------

/// The context's streams (its legacy stream first when it has one).
fn streams_of(c: &'static Context) -> Vec<&'static Stream> {
    c.streams.lock().clone()
}

#[no_mangle]
pub unsafe extern "C" fn cuCtxRecordEvent(ctx: *mut c_void, ev: *mut c_void) -> CUresult {
    guard("cuCtxRecordEvent", || {
        let c = ctx_ref(ctx)?;
        crate::stream::event_check(ev)?;
        // The context's legacy stream waits for every other stream's work so far, and the event
        // is recorded behind that (the legacy stream's later work waits for that work too).
        let join = c.legacy_stream()?;
        for s in streams_of(c) {
            if std::ptr::eq(s, join) {
                continue;
            }
            let v = s.mark()?;
            if v > 0 {
                join.record(|q| q.wait(s.signal(), v))?;
            }
        }
        crate::stream::event_record_on(ev, join)
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuCtxWaitEvent(ctx: *mut c_void, ev: *mut c_void) -> CUresult {
    guard("cuCtxWaitEvent", || {
        let c = ctx_ref(ctx)?;
        crate::stream::event_check(ev)?;
        // The context's streams wait for it (its legacy stream included, which the blocking
        // streams made later wait for in turn).
        let _ = c.legacy_stream()?;
        for s in streams_of(c) {
            crate::stream::stream_wait_event(s.handle(), ev, 0, false)?;
        }
        Ok(())
    })
}

// --- Context settings ------------------------------------------------------------------------

#[no_mangle]
pub unsafe extern "C" fn cuCtxGetCacheConfig(config: *mut u32) -> CUresult {
    guard("cuCtxGetCacheConfig", || {
        let o = out(config, "pconfig")?;
        *o = current()?.cache_config.load(Ordering::Relaxed);
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuCtxSetCacheConfig(config: u32) -> CUresult {
    guard("cuCtxSetCacheConfig", || {
        let c = current()?;
        if config > 3 {
            return Err(invalid(format!(
                "config {config}: CU_FUNC_CACHE_PREFER_NONE, _SHARED, _L1 or _EQUAL (0-3)"
            )));
        }
        // A preference (as NVIDIA's on this architecture): kernels keep their own carveouts.
        c.cache_config.store(config, Ordering::Relaxed);
        Ok(())
    })
}

/// Shared-memory bank size: 4 bytes on every GPU this library drives; a request for another
/// is accepted and changes nothing, as NVIDIA's does.
const CU_SHARED_MEM_CONFIG_FOUR_BYTE_BANK_SIZE: u32 = 1;

#[no_mangle]
pub unsafe extern "C" fn cuCtxGetSharedMemConfig(config: *mut u32) -> CUresult {
    guard("cuCtxGetSharedMemConfig", || {
        let o = out(config, "pConfig")?;
        current()?;
        *o = CU_SHARED_MEM_CONFIG_FOUR_BYTE_BANK_SIZE;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuCtxSetSharedMemConfig(config: u32) -> CUresult {
    guard("cuCtxSetSharedMemConfig", || {
        current()?;
        if config > 2 {
            return Err(invalid(format!(
                "config {config}: CU_SHARED_MEM_CONFIG_DEFAULT_BANK_SIZE, _FOUR_BYTE or _EIGHT_BYTE (0-2)"
            )));
        }
        Ok(())
    })
}

/// The flags `cuCtxCreate` takes: scheduling (0-4 in the low 3 bits), `MAP_HOST`,
/// `LMEM_RESIZE_TO_MAX`, `COREDUMP_ENABLE`, `USER_COREDUMP_ENABLE`, `SYNC_MEMOPS`.
const CTX_FLAGS_MASK: u32 = 0x07 | 0x08 | 0x10 | 0x20 | 0x40 | 0x80;

#[no_mangle]
pub unsafe extern "C" fn cuCtxSetFlags(flags: u32) -> CUresult {
    guard("cuCtxSetFlags", || {
        let c = current()?;
        if flags & !CTX_FLAGS_MASK != 0 || flags & 0x07 > 4 || flags & 0x07 == 3 {
            return Err(invalid(format!("flags {flags:#x}")));
        }
        c.flags.store(flags, Ordering::Relaxed);
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuCtxResetPersistingL2Cache() -> CUresult {
    // No access policy window makes lines persist here (stream attributes are recorded only):
    // nothing to reset.
    guard("cuCtxResetPersistingL2Cache", || current().map(|_| ()))
}

// --- Stream attributes -----------------------------------------------------------------------

const CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW: u32 = 1;
const CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY: u32 = 3;
const CU_LAUNCH_ATTRIBUTE_PRIORITY: u32 = 8;
const CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP: u32 = 9;
const CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN: u32 = 10;

/// A stream's attributes (`CUlaunchAttributeValue`, 64 bytes each), as set; recorded, except
/// that none of them changes how the stream's work runs.
#[derive(Clone, Copy)]
pub struct StreamAttrs {
    access_policy: [u8; 64],
    sync_policy: [u8; 64],
    priority: Option<i32>,
    domain_map: [u8; 64],
    domain: [u8; 64],
}

impl Default for StreamAttrs {
    fn default() -> Self {
        let mut sync_policy = [0u8; 64];
        // Unset: NVIDIA's answers -1 until it is set.
        sync_policy[..4].copy_from_slice(&(-1i32).to_le_bytes());
        StreamAttrs {
            access_policy: [0; 64],
            sync_policy,
            priority: None,
            domain_map: [0; 64],
            domain: [0; 64],
        }
    }
}

fn check_attr(attr: u32) -> R {
    match attr {
        CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW
        | CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY
        | CU_LAUNCH_ATTRIBUTE_PRIORITY
        | CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP
        | CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN => Ok(()),
        a => Err(invalid(format!(
            "attribute {a}: streams take ACCESS_POLICY_WINDOW (1), SYNCHRONIZATION_POLICY (3), PRIORITY (8), MEM_SYNC_DOMAIN_MAP (9), MEM_SYNC_DOMAIN (10)"
        ))),
    }
}

/// A `CUaccessPolicyWindow` (a cache hint): its hit ratio within 0..=1, its properties
/// `CUaccessProperty` values.
pub(crate) fn check_access_policy(v: &[u8; 64]) -> R {
    let hit = f32::from_le_bytes([v[16], v[17], v[18], v[19]]);
    let prop = |o: usize| u32::from_le_bytes([v[o], v[o + 1], v[o + 2], v[o + 3]]);
    if !(0.0..=1.0).contains(&hit) || prop(20) > 2 || prop(24) > 2 {
        return Err(invalid(format!(
            "access policy window: hitRatio {hit}, hitProp {}, missProp {}",
            prop(20),
            prop(24)
        )));
    }
    Ok(())
}

unsafe fn stream_get_attribute(h: *mut c_void, attr: u32, v: *mut [u8; 64], ptds: bool) -> R {
    check_attr(attr)?;
    let s = stream_of(h, ptds)?;
    let o = out(v, "value_out")?;
    let a = *s.attrs.lock();
    *o = match attr {
        CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW => a.access_policy,
        CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY => a.sync_policy,
        CU_LAUNCH_ATTRIBUTE_PRIORITY => {
            let mut b = [0u8; 64];
            b[..4].copy_from_slice(&a.priority.unwrap_or(s.priority).to_le_bytes());
            b
        }
        CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP => a.domain_map,
        _ => a.domain,
    };
    Ok(())
}

unsafe fn stream_set_attribute(h: *mut c_void, attr: u32, v: *const [u8; 64], ptds: bool) -> R {
    check_attr(attr)?;
    let s = stream_of(h, ptds)?;
    let v = *v.as_ref().ok_or_else(|| invalid("value is NULL"))?;
    let word = i32::from_le_bytes([v[0], v[1], v[2], v[3]]);
    let mut a = s.attrs.lock();
    match attr {
        CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW => {
            check_access_policy(&v)?;
            a.access_policy = v;
        }
        CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY => {
            if !(1..=4).contains(&word) {
                return Err(invalid(format!(
                    "synchronization policy {word}: CU_SYNC_POLICY_AUTO, SPIN, YIELD or BLOCKING_SYNC (1-4)"
                )));
            }
            a.sync_policy = v;
        }
        CU_LAUNCH_ATTRIBUTE_PRIORITY => a.priority = Some(word),
        CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP => a.domain_map = v,
        _ => a.domain = v,
    }
    Ok(())
}

unsafe fn stream_copy_attributes(dst: *mut c_void, src: *mut c_void, ptds: bool) -> R {
    let (d, s) = (stream_of(dst, ptds)?, stream_of(src, ptds)?);
    let mut a = *s.attrs.lock();
    if a.priority.is_none() {
        a.priority = Some(s.priority);
    }
    *d.attrs.lock() = a;
    Ok(())
}

/// An export and its per-thread-stream (`_ptsz`) form, both calling `$inner` with their
/// arguments and whether a NULL stream is the per-thread one.
macro_rules! stream_pair {
    ($plain:ident, $ptsz:ident, $inner:ident, ($($arg:ident: $t:ty),*)) => {
        #[no_mangle]
        pub unsafe extern "C" fn $plain($($arg: $t),*) -> CUresult {
            guard(stringify!($plain), || $inner($($arg,)* false))
        }
        #[no_mangle]
        pub unsafe extern "C" fn $ptsz($($arg: $t),*) -> CUresult {
            guard(stringify!($ptsz), || $inner($($arg,)* true))
        }
    };
}

// The names below are listed for build.rs (it finds implemented exports by `extern "C" fn`).
// extern "C" fn cuStreamGetId extern "C" fn cuStreamGetId_ptsz
// extern "C" fn cuStreamGetDevice extern "C" fn cuStreamGetDevice_ptsz
// extern "C" fn cuStreamGetCtx_v2 extern "C" fn cuStreamGetCtx_v2_ptsz
// extern "C" fn cuStreamGetAttribute extern "C" fn cuStreamGetAttribute_ptsz
// extern "C" fn cuStreamSetAttribute extern "C" fn cuStreamSetAttribute_ptsz
// extern "C" fn cuStreamCopyAttributes extern "C" fn cuStreamCopyAttributes_ptsz
stream_pair!(cuStreamGetId, cuStreamGetId_ptsz, stream_id, (h: *mut c_void, id: *mut u64));
stream_pair!(cuStreamGetDevice, cuStreamGetDevice_ptsz, stream_device, (h: *mut c_void, d: *mut CUdevice));
stream_pair!(cuStreamGetCtx_v2, cuStreamGetCtx_v2_ptsz, stream_ctx_v2, (h: *mut c_void, pctx: *mut *mut c_void, pgreen: *mut *mut c_void));
stream_pair!(cuStreamGetAttribute, cuStreamGetAttribute_ptsz, stream_get_attribute, (h: *mut c_void, attr: u32, v: *mut [u8; 64]));
stream_pair!(cuStreamSetAttribute, cuStreamSetAttribute_ptsz, stream_set_attribute, (h: *mut c_void, attr: u32, v: *const [u8; 64]));
stream_pair!(cuStreamCopyAttributes, cuStreamCopyAttributes_ptsz, stream_copy_attributes, (dst: *mut c_void, src: *mut c_void));

// --- Modules and functions -------------------------------------------------------------------

#[no_mangle]
pub unsafe extern "C" fn cuModuleGetFunctionCount(count: *mut u32, m: *mut c_void) -> CUresult {
    guard("cuModuleGetFunctionCount", || {
        let o = out(count, "count")?;
        let m = crate::module::mod_ref(m)?;
        *o = m.module.kernel_names().len() as u32;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuModuleEnumerateFunctions(
    fns: *mut *mut c_void,
    n: u32,
    m: *mut c_void,
) -> CUresult {
    guard("cuModuleEnumerateFunctions", || {
        if fns.is_null() {
            return Err(invalid("functions is NULL"));
        }
        let m = crate::module::mod_ref(m)?;
        let names = m.module.kernel_names();
        // As NVIDIA's: a larger array is filled as far as the module's functions go.
        for (i, name) in names.iter().take(n as usize).enumerate() {
            *fns.add(i) = m.function(name)? as *const crate::module::Func as *mut c_void;
        }
        Ok(())
    })
}

/// `CU_MODULE_EAGER_LOADING` (1) or `CU_MODULE_LAZY_LOADING` (2): what `CUDA_MODULE_LOADING`
/// asks for, lazy by default, as NVIDIA's reports (this library loads every module whole).
#[no_mangle]
pub unsafe extern "C" fn cuModuleGetLoadingMode(mode: *mut u32) -> CUresult {
    guard("cuModuleGetLoadingMode", || {
        let o = out(mode, "mode")?;
        crate::device::check_init()?;
        let eager = std::env::var("CUDA_MODULE_LOADING").is_ok_and(|v| v == "EAGER");
        *o = if eager { 1 } else { 2 };
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuFuncIsLoaded(state: *mut u32, f: *mut c_void) -> CUresult {
    guard("cuFuncIsLoaded", || {
        let o = out(state, "state")?;
        crate::module::func_ref(f)?;
        // CU_FUNCTION_LOADING_STATE_LOADED: modules load whole.
        *o = 1;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuFuncLoad(f: *mut c_void) -> CUresult {
    guard("cuFuncLoad", || crate::module::func_ref(f).map(|_| ()))
}

/// `cuOccupancyAvailableDynamicSMemPerBlock`: the SM's shared memory under the function's
/// carveout preference, split among `blocks` blocks, less the function's static shared memory,
/// at most the function's dynamic shared-memory limit, in 128-byte units. As NVIDIA's answers
/// on an H200: no preference counts the largest carveout, a preference counts its carveout
/// (8 KiB at the least), and the 1 KiB each block reserves is not deducted.
#[no_mangle]
pub unsafe extern "C" fn cuOccupancyAvailableDynamicSMemPerBlock(
    size: *mut usize,
    f: *mut c_void,
    blocks: i32,
    block: i32,
) -> CUresult {
    guard("cuOccupancyAvailableDynamicSMemPerBlock", || {
        let o = out(size, "dynamicSmemSize")?;
        let f = crate::module::func_ref(f)?;
        if blocks <= 0 || block <= 0 {
            return Err(invalid(format!("numBlocks {blocks}, blockSize {block}")));
        }
        // The limits other than shared memory (threads, registers, blocks per SM).
        let n = f.kernel.max_active_blocks(block as u32, 0)?;
        if n < blocks as u32 {
            return Err(invalid(format!(
                "{blocks} blocks of {block} threads do not fit on one SM (at most {n})"
            )));
        }
        let carveouts = f.kernel.device().arch().smem_carveouts_kib;
        let largest = carveouts.iter().copied().max().unwrap_or(48) * 1024;
        let carveout = match f.carveout_percent() {
            None => largest,
            Some(p) => carveouts
                .iter()
                .map(|&k| k * 1024)
                .filter(|&b| b > 0)
                .find(|&b| u64::from(b) >= u64::from(p) * u64::from(largest) / 100)
                .unwrap_or(largest),
        };
        let stat = f.kernel.attributes().static_shared_bytes;
        let per_block = (carveout / blocks as u32).saturating_sub(stat) / 128 * 128;
        *o = per_block.min(f.max_dynamic_shared.load(Ordering::Relaxed)) as usize;
        Ok(())
    })
}

// --- Devices ---------------------------------------------------------------------------------

#[no_mangle]
pub unsafe extern "C" fn cuDeviceGetByPCIBusId(d: *mut CUdevice, bus: *const c_char) -> CUresult {
    guard("cuDeviceGetByPCIBusId", || {
        let o = out(d, "dev")?;
        if bus.is_null() {
            return Err(invalid("pciBusId is NULL"));
        }
        crate::device::check_init()?;
        let s = CStr::from_ptr(bus).to_string_lossy().to_ascii_lowercase();
        // `[domain:]bus:device.function`, hexadecimal.
        let parse = |s: &str| -> Option<(u32, u32, u32, u32)> {
            let (head, func) = s.rsplit_once('.')?;
            let parts: Vec<&str> = head.split(':').collect();
            let (dom, b, dv) = match parts.as_slice() {
                [b, dv] => ("0", *b, *dv),
                [dom, b, dv] => (*dom, *b, *dv),
                _ => return None,
            };
            let h = |x: &str| u32::from_str_radix(x, 16).ok();
            Some((h(dom)?, h(b)?, h(dv)?, h(func)?))
        };
        let want = parse(&s).ok_or_else(|| {
            invalid(format!(
                "\"{s}\" is not a PCI bus id ([domain:]bus:device.function)"
            ))
        })?;
        for (i, dv) in devices().iter().enumerate() {
            if let Ok(id) = pci_bus_id(dv) {
                if parse(&id) == Some(want) {
                    *o = i as CUdevice;
                    return Ok(());
                }
            }
        }
        Err(fail(
            CUDA_ERROR_INVALID_DEVICE,
            format!("no device at PCI bus id {s}"),
        ))
    })
}

/// `cuDeviceGetTexture1DLinearMaxWidth`: 2^32 bytes of elements, at most 2^30 of them.
#[no_mangle]
pub unsafe extern "C" fn cuDeviceGetTexture1DLinearMaxWidth(
    width: *mut usize,
    format: u32,
    channels: u32,
    device: CUdevice,
) -> CUresult {
    guard("cuDeviceGetTexture1DLinearMaxWidth", || {
        let o = out(width, "maxWidthInElements")?;
        dev(device)?;
        let bytes = match format {
            0x01 | 0x08 => 1,        // UNSIGNED_INT8, SIGNED_INT8
            0x02 | 0x09 | 0x10 => 2, // UNSIGNED_INT16, SIGNED_INT16, HALF
            0x03 | 0x0a | 0x20 => 4, // UNSIGNED_INT32, SIGNED_INT32, FLOAT
            f => return Err(invalid(format!("format {f:#x}"))),
        };
        if !matches!(channels, 1 | 2 | 4) {
            return Err(invalid(format!("{channels} channels: 1, 2 or 4")));
        }
        *o = ((1usize << 32) / (bytes * channels as usize)).min(1 << 30);
        Ok(())
    })
}

/// `CUdevprop`: the old device properties, from the attributes.
#[repr(C)]
pub struct CUdevprop {
    max_threads_per_block: i32,
    max_threads_dim: [i32; 3],
    max_grid_size: [i32; 3],
    shared_mem_per_block: i32,
    total_constant_memory: i32,
    simd_width: i32,
    mem_pitch: i32,
    regs_per_block: i32,
    clock_rate: i32,
    texture_align: i32,
}

#[no_mangle]
pub unsafe extern "C" fn cuDeviceGetProperties(p: *mut CUdevprop, device: CUdevice) -> CUresult {
    guard("cuDeviceGetProperties", || {
        let o = out(p, "prop")?;
        let d = dev(device)?.core()?;
        let a = |attr: i32| crate::attributes::attribute(d, attr).unwrap_or(0);
        *o = CUdevprop {
            max_threads_per_block: a(1),
            max_threads_dim: [a(2), a(3), a(4)],
            max_grid_size: [a(5), a(6), a(7)],
            shared_mem_per_block: a(8),
            total_constant_memory: a(9),
            simd_width: a(10),
            mem_pitch: a(11),
            regs_per_block: a(12),
            clock_rate: a(13),
            texture_align: a(14),
        };
        Ok(())
    })
}

// --- Pointer attributes that can be set --------------------------------------------------------

#[no_mangle]
pub unsafe extern "C" fn cuPointerSetAttribute(
    value: *const c_void,
    attr: u32,
    ptr: CUdeviceptr,
) -> CUresult {
    guard("cuPointerSetAttribute", || {
        crate::device::check_init()?;
        // CU_POINTER_ATTRIBUTE_SYNC_MEMOPS (6): memory operations on it are always synchronous
        // here; the only attribute that can be set.
        if attr != 6 {
            return Err(invalid(format!(
                "attribute {attr}: only CU_POINTER_ATTRIBUTE_SYNC_MEMOPS (6) can be set"
            )));
        }
        if value.is_null() {
            return Err(invalid("value is NULL"));
        }
        crate::memory::find_va(ptr)
            .ok_or_else(|| invalid(format!("{ptr:#x} is not memory allocated by this library")))?;
        Ok(())
    })
}

// --- 2-D memsets -------------------------------------------------------------------------------

/// Fill `height` rows of `width` elements of `elem` bytes, `pitch` bytes apart, on stream `s`.
#[allow(clippy::too_many_arguments)]
fn fill_2d(
    s: &'static Stream,
    dst: u64,
    pitch: usize,
    value: u32,
    elem: u32,
    width: usize,
    height: usize,
    sync: bool,
) -> R {
    if width == 0 || height == 0 {
        return Ok(());
    }
    let row = width
        .checked_mul(elem as usize)
        .ok_or_else(|| invalid(format!("width {width} overflows")))?;
    if pitch < row {
        return Err(invalid(format!(
            "dstPitch {pitch} is less than the row's {row} bytes"
        )));
    }
    if dst % elem as u64 != 0 || pitch % elem as usize != 0 {
        return Err(invalid(format!(
            "dstDevice {dst:#x} or dstPitch {pitch} is not aligned to the {elem}-byte elements"
        )));
    }
    if pitch == row {
        return crate::transfer::fill(s, dst, value, elem, (width * height) as u64, sync);
    }
    let last = dst
        .checked_add((pitch * (height - 1) + row) as u64)
        .ok_or_else(|| invalid("the rows' addresses overflow"))?;
    crate::memory::check_range("dstDevice", dst, last - dst)?;
    for r in 0..height {
        crate::transfer::fill(s, dst + (r * pitch) as u64, value, elem, width as u64, sync)?;
    }
    Ok(())
}

macro_rules! memset_2d {
    ($name:ident, $t:ty, $elem:expr, $ptds:expr) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            dst: CUdeviceptr,
            pitch: usize,
            v: $t,
            width: usize,
            height: usize,
        ) -> CUresult {
            guard(stringify!($name), || {
                fill_2d(
                    stream_of(std::ptr::null_mut(), $ptds)?,
                    dst,
                    pitch,
                    v as u32,
                    $elem,
                    width,
                    height,
                    true,
                )
            })
        }
    };
}
macro_rules! memset_2d_async {
    ($name:ident, $t:ty, $elem:expr, $ptds:expr) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            dst: CUdeviceptr,
            pitch: usize,
            v: $t,
            width: usize,
            height: usize,
            h: *mut c_void,
        ) -> CUresult {
            guard(stringify!($name), || {
                fill_2d(
                    stream_of(h, $ptds)?,
                    dst,
                    pitch,
                    v as u32,
                    $elem,
                    width,
                    height,
                    false,
                )
            })
        }
    };
}

// The names below are listed for build.rs (it finds implemented exports by `extern "C" fn`).
// extern "C" fn cuMemsetD2D8_v2 extern "C" fn cuMemsetD2D8_v2_ptds
// extern "C" fn cuMemsetD2D16_v2 extern "C" fn cuMemsetD2D16_v2_ptds
// extern "C" fn cuMemsetD2D32_v2 extern "C" fn cuMemsetD2D32_v2_ptds
// extern "C" fn cuMemsetD2D8Async extern "C" fn cuMemsetD2D8Async_ptsz
// extern "C" fn cuMemsetD2D16Async extern "C" fn cuMemsetD2D16Async_ptsz
// extern "C" fn cuMemsetD2D32Async extern "C" fn cuMemsetD2D32Async_ptsz
memset_2d!(cuMemsetD2D8_v2, u8, 1, false);
memset_2d!(cuMemsetD2D8_v2_ptds, u8, 1, true);
memset_2d!(cuMemsetD2D16_v2, u16, 2, false);
memset_2d!(cuMemsetD2D16_v2_ptds, u16, 2, true);
memset_2d!(cuMemsetD2D32_v2, u32, 4, false);
memset_2d!(cuMemsetD2D32_v2_ptds, u32, 4, true);
memset_2d_async!(cuMemsetD2D8Async, u8, 1, false);
memset_2d_async!(cuMemsetD2D8Async_ptsz, u8, 1, true);
memset_2d_async!(cuMemsetD2D16Async, u16, 2, false);
memset_2d_async!(cuMemsetD2D16Async_ptsz, u16, 2, true);
memset_2d_async!(cuMemsetD2D32Async, u32, 4, false);
memset_2d_async!(cuMemsetD2D32Async_ptsz, u32, 4, true);

#[allow(dead_code)]
fn _unused(_: Fail) {}
