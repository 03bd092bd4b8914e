//! Peer access between devices (libtegragpu's `Device::can_access_peer`,
//! `Device::enable_peer_access`): `cuDeviceCanAccessPeer`, `cuDeviceGetP2PAttribute`,
//! `cuCtxEnablePeerAccess` / `DisablePeerAccess`, `cuMemcpyPeer(Async)`.
//!
//! Enabling access maps the peer device's memory into the current context's device, now and as
//! the peer allocates more; copies on that device's streams then reach the peer's memory
//! directly (`cuMemcpyDtoD` with a device pointer of the other device, `cuMemcpyPeer`), and
//! kernels may take its addresses. Without it, copies between the two devices go through the
//! host in stream order. libtegragpu keeps a device's peer mappings for the life of the
//! process: `cuCtxDisablePeerAccess` ends the context's record (a later enable succeeds again),
//! not the mappings.

use crate::context::{ctx_ref, current, Context};
use crate::device::{dev, out};
use crate::error::{fail, guard, invalid, Fail, R};
use crate::stream::stream_of;
use crate::transfer::copy_d2d_between;
use crate::types::*;
use std::ffi::c_void;
use tegragpu::Status;

/// Two devices (ordinals) that must differ.
fn pair(
    device: CUdevice,
    peer: CUdevice,
) -> R<(
    &'static tegragpu::core::Device,
    &'static tegragpu::core::Device,
)> {
    let (a, b) = (dev(device)?, dev(peer)?);
    if device == peer {
        return Err(fail(
            CUDA_ERROR_INVALID_DEVICE,
            format!("device {device} is not its own peer"),
        ));
    }
    Ok((a.core()?, b.core()?))
}

#[no_mangle]
pub unsafe extern "C" fn cuDeviceCanAccessPeer(
    can: *mut i32,
    device: CUdevice,
    peer: CUdevice,
) -> CUresult {
    guard("cuDeviceCanAccessPeer", || {
        let c = out(can, "canAccessPeer")?;
        if device == peer {
            // A device is not its own peer: NVIDIA's driver answers 0 with CUDA_SUCCESS.
            dev(device)?;
            *c = 0;
            return Ok(());
        }
        let (a, b) = pair(device, peer)?;
        *c = a.can_access_peer(b)? as i32;
        Ok(())
    })
}

const P2P_PERFORMANCE_RANK: i32 = 1;
const P2P_ACCESS_SUPPORTED: i32 = 2;
const P2P_NATIVE_ATOMIC_SUPPORTED: i32 = 3;
const P2P_CUDA_ARRAY_ACCESS_SUPPORTED: i32 = 4;
const P2P_ONLY_PARTIAL_NATIVE_ATOMIC_SUPPORTED: i32 = 5;

#[no_mangle]
pub unsafe extern "C" fn cuDeviceGetP2PAttribute(
    value: *mut i32,
    attrib: i32,
    src: CUdevice,
    dst: CUdevice,
) -> CUresult {
    guard("cuDeviceGetP2PAttribute", || {
        let v = out(value, "value")?;
        if !(P2P_PERFORMANCE_RANK..=P2P_ONLY_PARTIAL_NATIVE_ATOMIC_SUPPORTED).contains(&attrib) {
            return Err(invalid(format!(
                "attribute {attrib} is not a P2P attribute"
            )));
        }
        let (a, b) = pair(src, dst)?;
        let info = a.peer_info(b)?;
        *v = match attrib {
            // One link between two devices: the same rank for every pair.
            P2P_PERFORMANCE_RANK => 0,
            P2P_ACCESS_SUPPORTED => info.can_access as i32,
            P2P_NATIVE_ATOMIC_SUPPORTED => (info.can_access && info.atomics) as i32,
            // Arrays are not supported by this library.
            // Arrays are pitch-linear device memory here (arrays.rs): reached as any memory.
            P2P_CUDA_ARRAY_ACCESS_SUPPORTED => info.can_access as i32,
            _ => 0,
        };
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuCtxEnablePeerAccess(peer: *mut c_void, flags: u32) -> CUresult {
    guard("cuCtxEnablePeerAccess", || {
        let c = current()?;
        if flags != 0 {
            return Err(invalid(format!("flags {flags:#x}: must be 0")));
        }
        let p = ctx_ref(peer).map_err(|Fail(_, m)| Fail(CUDA_ERROR_INVALID_CONTEXT, m))?;
        if std::ptr::eq(c, p) {
            return Err(fail(
                CUDA_ERROR_INVALID_CONTEXT,
                "peerContext is the current context",
            ));
        }
        let mut peers = c.peers.lock();
        if peers.iter().any(|x| std::ptr::eq(*x, p)) {
            return Err(fail(
                CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED,
                format!(
                    "access from device {} to device {}'s context is already enabled",
                    c.dev.ordinal, p.dev.ordinal
                ),
            ));
        }
        // Contexts of one device share its memory: nothing to map.
        if !std::ptr::eq(c.dev, p.dev) {
            c.core.enable_peer_access(&p.core).map_err(|e| {
                let code = if e.status == Status::NotSupported {
                    CUDA_ERROR_PEER_ACCESS_UNSUPPORTED
                } else {
                    crate::error::code_of(&e)
                };
                Fail(code, Some(e.message))
            })?;
        }
        peers.push(p);
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuCtxDisablePeerAccess(peer: *mut c_void) -> CUresult {
    guard("cuCtxDisablePeerAccess", || {
        let c = current()?;
        let p = ctx_ref(peer).map_err(|Fail(_, m)| Fail(CUDA_ERROR_INVALID_CONTEXT, m))?;
        let mut peers = c.peers.lock();
        let before = peers.len();
        peers.retain(|x| !std::ptr::eq(*x, p));
        if peers.len() == before {
            return Err(fail(
                CUDA_ERROR_PEER_ACCESS_NOT_ENABLED,
                "peer access to that context is not enabled",
            ));
        }
        Ok(())
    })
}

unsafe fn memcpy_peer(
    dst: CUdeviceptr,
    dst_ctx: *mut c_void,
    src: CUdeviceptr,
    src_ctx: *mut c_void,
    n: usize,
    stream: Option<*mut c_void>,
    ptds: bool,
) -> R {
    let (d, s): (&'static Context, &'static Context) = (ctx_ref(dst_ctx)?, ctx_ref(src_ctx)?);
    let st = match stream {
        Some(h) => stream_of(h, ptds)?,
        None => s.legacy_stream()?,
    };
    copy_d2d_between(st, dst, d, src, s, n as u64, stream.is_none())
}

#[no_mangle]
pub unsafe extern "C" fn cuMemcpyPeer(
    dst: CUdeviceptr,
    dst_ctx: *mut c_void,
    src: CUdeviceptr,
    src_ctx: *mut c_void,
    n: usize,
) -> CUresult {
    guard("cuMemcpyPeer", || {
        memcpy_peer(dst, dst_ctx, src, src_ctx, n, None, false)
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuMemcpyPeer_ptds(
    dst: CUdeviceptr,
    dst_ctx: *mut c_void,
    src: CUdeviceptr,
    src_ctx: *mut c_void,
    n: usize,
) -> CUresult {
    guard("cuMemcpyPeer_ptds", || {
        memcpy_peer(dst, dst_ctx, src, src_ctx, n, None, true)
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuMemcpyPeerAsync(
    dst: CUdeviceptr,
    dst_ctx: *mut c_void,
    src: CUdeviceptr,
    src_ctx: *mut c_void,
    n: usize,
    h: *mut c_void,
) -> CUresult {
    guard("cuMemcpyPeerAsync", || {
        memcpy_peer(dst, dst_ctx, src, src_ctx, n, Some(h), false)
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuMemcpyPeerAsync_ptsz(
    dst: CUdeviceptr,
    dst_ctx: *mut c_void,
    src: CUdeviceptr,
    src_ctx: *mut c_void,
    n: usize,
    h: *mut c_void,
) -> CUresult {
    guard("cuMemcpyPeerAsync_ptsz", || {
        memcpy_peer(dst, dst_ctx, src, src_ctx, n, Some(h), true)
    })
}
