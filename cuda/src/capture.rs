//! Stream capture: not supported (`cuStreamBeginCapture*` answer `CUDA_ERROR_NOT_SUPPORTED`), so
//! no stream is ever capturing. The queries answer that (`CU_STREAM_CAPTURE_STATUS_NONE`), which
//! libraries that check before they capture or synchronize rely on; the thread's capture mode
//! is kept for `cuThreadExchangeStreamCaptureMode`.

use crate::device::out;
use crate::error::{guard, invalid, R};
use crate::stream::stream_of;
use crate::types::*;
use std::cell::Cell;
use std::ffi::c_void;

/// `CU_STREAM_CAPTURE_STATUS_NONE`.
const CAPTURE_STATUS_NONE: u32 = 0;

thread_local! {
    /// `CUstreamCaptureMode` of the calling thread (`CU_STREAM_CAPTURE_MODE_GLOBAL`, 0, at first).
    static MODE: Cell<u32> = const { Cell::new(0) };
}

unsafe fn is_capturing(h: *mut c_void, status: *mut u32, ptds: bool) -> R {
    let o = out(status, "captureStatus")?;
    stream_of(h, ptds)?;
    *o = CAPTURE_STATUS_NONE;
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn cuStreamIsCapturing(h: *mut c_void, status: *mut u32) -> CUresult {
    guard("cuStreamIsCapturing", || is_capturing(h, status, false))
}

#[no_mangle]
pub unsafe extern "C" fn cuStreamIsCapturing_ptsz(h: *mut c_void, status: *mut u32) -> CUresult {
    guard("cuStreamIsCapturing_ptsz", || is_capturing(h, status, true))
}

/// `cuStreamGetCaptureInfo` (all forms): not capturing; the other outputs (where given) are
/// zero, NULL and 0.
#[allow(clippy::too_many_arguments)]
unsafe fn capture_info(
    h: *mut c_void,
    status: *mut u32,
    id: *mut u64,
    graph: *mut *mut c_void,
    deps: *mut *const c_void,
    edges: *mut *const c_void,
    num: *mut usize,
    ptds: bool,
) -> R {
    is_capturing(h, status, ptds)?;
    if let Some(x) = id.as_mut() {
        *x = 0;
    }
    if let Some(x) = graph.as_mut() {
        *x = std::ptr::null_mut();
    }
    if let Some(x) = deps.as_mut() {
        *x = std::ptr::null();
    }
    if let Some(x) = edges.as_mut() {
        *x = std::ptr::null();
    }
    if let Some(x) = num.as_mut() {
        *x = 0;
    }
    Ok(())
}

const N: *mut c_void = std::ptr::null_mut();

#[no_mangle]
pub unsafe extern "C" fn cuStreamGetCaptureInfo(
    h: *mut c_void,
    s: *mut u32,
    id: *mut u64,
) -> CUresult {
    guard("cuStreamGetCaptureInfo", || {
        capture_info(h, s, id, N.cast(), N.cast(), N.cast(), N.cast(), false)
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuStreamGetCaptureInfo_ptsz(
    h: *mut c_void,
    s: *mut u32,
    id: *mut u64,
) -> CUresult {
    guard("cuStreamGetCaptureInfo_ptsz", || {
        capture_info(h, s, id, N.cast(), N.cast(), N.cast(), N.cast(), true)
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuStreamGetCaptureInfo_v2(
    h: *mut c_void,
    s: *mut u32,
    id: *mut u64,
    g: *mut *mut c_void,
    deps: *mut *const c_void,
    num: *mut usize,
) -> CUresult {
    guard("cuStreamGetCaptureInfo_v2", || {
        capture_info(h, s, id, g, deps, N.cast(), num, false)
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuStreamGetCaptureInfo_v2_ptsz(
    h: *mut c_void,
    s: *mut u32,
    id: *mut u64,
    g: *mut *mut c_void,
    deps: *mut *const c_void,
    num: *mut usize,
) -> CUresult {
    guard("cuStreamGetCaptureInfo_v2_ptsz", || {
        capture_info(h, s, id, g, deps, N.cast(), num, true)
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuStreamGetCaptureInfo_v3(
    h: *mut c_void,
    s: *mut u32,
    id: *mut u64,
    g: *mut *mut c_void,
    deps: *mut *const c_void,
    edges: *mut *const c_void,
    num: *mut usize,
) -> CUresult {
    guard("cuStreamGetCaptureInfo_v3", || {
        capture_info(h, s, id, g, deps, edges, num, false)
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuStreamGetCaptureInfo_v3_ptsz(
    h: *mut c_void,
    s: *mut u32,
    id: *mut u64,
    g: *mut *mut c_void,
    deps: *mut *const c_void,
    edges: *mut *const c_void,
    num: *mut usize,
) -> CUresult {
    guard("cuStreamGetCaptureInfo_v3_ptsz", || {
        capture_info(h, s, id, g, deps, edges, num, true)
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuThreadExchangeStreamCaptureMode(mode: *mut u32) -> CUresult {
    guard("cuThreadExchangeStreamCaptureMode", || {
        let m = out(mode, "mode")?;
        crate::device::check_init()?;
        if *m > 2 {
            return Err(invalid(format!("capture mode {}", *m)));
        }
        *m = MODE.with(|c| c.replace(*m));
        Ok(())
    })
}
