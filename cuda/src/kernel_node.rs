//! Kernel nodes read back: `cuGraphKernelNodeGetParams` (and `_v2`) and the node attributes
//! (`cuGraphKernelNodeGetAttribute`, `SetAttribute`, `CopyAttributes`).
//!
//! The cooperative and cluster-shape attributes are part of the node's launch; the cache,
//! priority, memory-synchronization-domain and cluster-scheduling attributes are hints this
//! library keeps and answers without acting on them. Both survive new node parameters.

use crate::error::*;
use crate::graph::{node_ref, NodeKind};
use crate::types::*;
use std::ffi::c_void;

/// `CUlaunchAttributeID` values a kernel node takes.
const ACCESS_POLICY_WINDOW: u32 = 1;
const COOPERATIVE: u32 = 2;
const CLUSTER_DIMENSION: u32 = 4;
const CLUSTER_SCHEDULING_POLICY_PREFERENCE: u32 = 5;
const PRIORITY: u32 = 8;
const MEM_SYNC_DOMAIN_MAP: u32 = 9;
const MEM_SYNC_DOMAIN: u32 = 10;

/// The hints of a kernel node (`CUlaunchAttributeValue`s as given).
#[derive(Clone, Copy)]
pub(crate) struct KernelHints {
    access_policy: [u8; 64],
    cluster_policy: [u8; 64],
    priority: [u8; 64],
    domain_map: [u8; 64],
    domain: [u8; 64],
}

impl Default for KernelHints {
    fn default() -> Self {
        KernelHints {
            access_policy: [0; 64],
            cluster_policy: [0; 64],
            priority: [0; 64],
            domain_map: [0; 64],
            domain: [0; 64],
        }
    }
}

/// New parameters `new` of a kernel node keep what the attributes set on `old`: cooperative,
/// the cluster shape and the hints.
pub(crate) fn keep_attributes(new: &mut NodeKind, old: &NodeKind) {
    if let (
        NodeKind::Kernel { cfg, hints, .. },
        NodeKind::Kernel {
            cfg: old_cfg,
            hints: old_hints,
            ..
        },
    ) = (new, old)
    {
        cfg.cooperative = old_cfg.cooperative;
        cfg.cluster = old_cfg.cluster;
        **hints = **old_hints;
    }
}

/// Run `f` on kernel node `h`'s kind (under its graph's lock).
unsafe fn with_kernel<T>(h: *mut c_void, f: impl FnOnce(&mut NodeKind) -> R<T>) -> R<T> {
    let n = node_ref(h)?;
    let mut nodes = (*n.graph).nodes.lock();
    let kind = &mut nodes.0[n.index].kind;
    if !matches!(kind, NodeKind::Kernel { .. }) {
        return Err(invalid("the node is not a kernel node"));
    }
    f(kind)
}

/// `cuGraphKernelNodeGetParams`: the function, launch shape and `kernelParams`, an array of
/// pointers to the node's copies of the arguments (valid until its parameters change); `extra`
/// is NULL.
unsafe fn get_params(h: *mut c_void, p: *mut CUDA_KERNEL_NODE_PARAMS_v1) -> R {
    let o = crate::device::out(p, "nodeParams")?;
    let n = node_ref(h)?;
    with_kernel(h, |k| {
        let NodeKind::Kernel {
            func, cfg, params, ..
        } = k
        else {
            unreachable!("checked by with_kernel")
        };
        let mut args = n.args.lock();
        args.clear();
        for pa in &func.kernel.attributes().params {
            args.push(params.as_mut_ptr().add(pa.offset as usize) as usize);
        }
        *o = crate::graph::params_v1(
            *func as *const crate::module::Func as *mut c_void,
            cfg,
            args.as_mut_ptr() as *mut *mut c_void,
            std::ptr::null_mut(),
        );
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuGraphKernelNodeGetParams(
    h: *mut c_void,
    p: *mut CUDA_KERNEL_NODE_PARAMS_v1,
) -> CUresult {
    guard("cuGraphKernelNodeGetParams", || get_params(h, p))
}

/// `_v2`: the v1 fields, the node's context, and no library kernel (`kern` NULL: `func` names
/// the function).
#[no_mangle]
pub unsafe extern "C" fn cuGraphKernelNodeGetParams_v2(
    h: *mut c_void,
    p: *mut CUDA_KERNEL_NODE_PARAMS_v2,
) -> CUresult {
    guard("cuGraphKernelNodeGetParams_v2", || {
        let o = crate::device::out(p, "nodeParams")?;
        get_params(h, &mut o.v1)?;
        o.kern = std::ptr::null_mut();
        o.ctx = crate::context::current()
            .map(|c| c.handle())
            .unwrap_or(std::ptr::null_mut());
        Ok(())
    })
}

fn word(v: u32) -> [u8; 64] {
    let mut b = [0u8; 64];
    b[..4].copy_from_slice(&v.to_le_bytes());
    b
}

fn refused(attr: u32) -> Fail {
    invalid(format!(
        "attribute {attr}: kernel nodes take ACCESS_POLICY_WINDOW (1), COOPERATIVE (2), CLUSTER_DIMENSION (4), CLUSTER_SCHEDULING_POLICY_PREFERENCE (5), PRIORITY (8), MEM_SYNC_DOMAIN_MAP (9), MEM_SYNC_DOMAIN (10)"
    ))
}

#[no_mangle]
pub unsafe extern "C" fn cuGraphKernelNodeGetAttribute(
    h: *mut c_void,
    attr: u32,
    v: *mut [u8; 64],
) -> CUresult {
    guard("cuGraphKernelNodeGetAttribute", || {
        let o = crate::device::out(v, "value_out")?;
        with_kernel(h, |k| {
            let NodeKind::Kernel { cfg, hints, .. } = k else {
                unreachable!("checked by with_kernel")
            };
            *o = match attr {
                ACCESS_POLICY_WINDOW => hints.access_policy,
                COOPERATIVE => word(cfg.cooperative as u32),
                CLUSTER_DIMENSION => {
                    let mut b = [0u8; 64];
                    for (i, d) in cfg.cluster.iter().enumerate() {
                        b[4 * i..4 * i + 4].copy_from_slice(&d.to_le_bytes());
                    }
                    b
                }
                CLUSTER_SCHEDULING_POLICY_PREFERENCE => hints.cluster_policy,
                PRIORITY => hints.priority,
                MEM_SYNC_DOMAIN_MAP => hints.domain_map,
                MEM_SYNC_DOMAIN => hints.domain,
                a => return Err(refused(a)),
            };
            Ok(())
        })
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuGraphKernelNodeSetAttribute(
    h: *mut c_void,
    attr: u32,
    v: *const [u8; 64],
) -> CUresult {
    guard("cuGraphKernelNodeSetAttribute", || {
        let v = *v.as_ref().ok_or_else(|| invalid("value is NULL"))?;
        let w = |o: usize| u32::from_le_bytes([v[o], v[o + 1], v[o + 2], v[o + 3]]);
        with_kernel(h, |k| {
            let NodeKind::Kernel { cfg, hints, .. } = k else {
                unreachable!("checked by with_kernel")
            };
            match attr {
                ACCESS_POLICY_WINDOW => {
                    crate::queries::check_access_policy(&v)?;
                    hints.access_policy = v;
                }
                COOPERATIVE => cfg.cooperative = w(0) != 0,
                CLUSTER_DIMENSION => {
                    let c = [w(0), w(4), w(8)];
                    let none = c == [0, 0, 0];
                    if !none && (0..3).any(|i| c[i] == 0 || cfg.grid[i] % c[i] != 0) {
                        // NVIDIA's libcuda answers this (CUDA 13.0 on an H200).
                        return Err(fail(
                            CUDA_ERROR_INVALID_CLUSTER_SIZE,
                            format!(
                                "cluster dimension {c:?}: each at least 1 and dividing the grid {:?}",
                                cfg.grid
                            ),
                        ));
                    }
                    cfg.cluster = c;
                }
                CLUSTER_SCHEDULING_POLICY_PREFERENCE => {
                    if w(0) > 2 {
                        return Err(invalid(format!(
                            "cluster scheduling policy {}: CU_CLUSTER_SCHEDULING_POLICY_DEFAULT, SPREAD or LOAD_BALANCING (0-2)",
                            w(0)
                        )));
                    }
                    hints.cluster_policy = v;
                }
                PRIORITY => hints.priority = v,
                MEM_SYNC_DOMAIN_MAP => hints.domain_map = v,
                MEM_SYNC_DOMAIN => hints.domain = v,
                a => return Err(refused(a)),
            }
            Ok(())
        })
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuGraphKernelNodeCopyAttributes(
    dst: *mut c_void,
    src: *mut c_void,
) -> CUresult {
    guard("cuGraphKernelNodeCopyAttributes", || {
        let from = with_kernel(src, |k| Ok(k.clone()))?;
        with_kernel(dst, |k| {
            keep_attributes(k, &from);
            Ok(())
        })
    })
}
