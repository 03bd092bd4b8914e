//! Stream memory operations: `cuStreamWaitValue32/64`, `cuStreamWriteValue32/64` and
//! `cuStreamBatchMemOp` (the `_v2` functions of CUDA 12 and later, and their `_ptsz` forms), on
//! libtegragpu's `Queue::wait_value` / `write_value`: a host semaphore acquire or release on the
//! stream's queue (the GPU polls or writes the word; the CPU is not involved).
//!
//! The address is memory this library allocated on the stream's device (`cuMemAlloc`, or
//! `cuMemHostAlloc` memory through its device pointer); anything else is
//! `CUDA_ERROR_INVALID_VALUE`, as is `CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER` (NVIDIA's libcuda
//! answers so on the H100). `CU_STREAM_WAIT_VALUE_FLUSH` and the batch's
//! `FLUSH_REMOTE_WRITES` and `ATOMIC_REDUCTION` are refused (`CUDA_ERROR_NOT_SUPPORTED`;
//! `CU_DEVICE_ATTRIBUTE_CAN_FLUSH_REMOTE_WRITES` reads 0, as on NVIDIA's libcuda for these GPUs).
//! On a capturing stream each call becomes a batch memory operation node.
//!
//! Graph nodes of batch memory operations (`cuGraphAddBatchMemOpNode`, `cuGraphAddNode` of
//! type `CU_GRAPH_NODE_TYPE_BATCH_MEM_OP`, or captured): the same operations, checked alike
//! against the node's context's device, recorded on the launch's stream once the nodes before
//! the node have run.

use crate::error::*;
use crate::types::*;
use std::ffi::c_void;
use std::sync::Arc;
use tegragpu::core::{Queue, ValueCond};

const CU_STREAM_WAIT_VALUE_GEQ: u32 = 0;
const CU_STREAM_WAIT_VALUE_EQ: u32 = 1;
const CU_STREAM_WAIT_VALUE_AND: u32 = 2;
const CU_STREAM_WAIT_VALUE_NOR: u32 = 3;
const CU_STREAM_WAIT_VALUE_FLUSH: u32 = 1 << 30;
const CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER: u32 = 1;

const CU_STREAM_MEM_OP_WAIT_VALUE_32: u32 = 1;
const CU_STREAM_MEM_OP_WRITE_VALUE_32: u32 = 2;
const CU_STREAM_MEM_OP_FLUSH_REMOTE_WRITES: u32 = 3;
const CU_STREAM_MEM_OP_WAIT_VALUE_64: u32 = 4;
const CU_STREAM_MEM_OP_WRITE_VALUE_64: u32 = 5;
const CU_STREAM_MEM_OP_BARRIER: u32 = 6;
const CU_STREAM_MEM_OP_ATOMIC_REDUCTION: u32 = 8;
const CU_STREAM_MEMORY_BARRIER_TYPE_SYS: u32 = 0;
const CU_STREAM_MEMORY_BARRIER_TYPE_GPU: u32 = 1;

/// The most operations one `cuStreamBatchMemOp` takes (CUDA documents 256).
const MAX_BATCH: u32 = 256;

/// `CUstreamBatchMemOpParams` (a 48-byte union): the operation at 0; for waits and writes the
/// address at 8, the value (32 or 64 bits) at 16, the flags at 24; for a barrier the flags at 4.
#[repr(C)]
#[derive(Clone, Copy, Default, PartialEq)]
pub(crate) struct BatchOp {
    operation: u32,
    word1: u32,
    address: u64,
    value: u64,
    flags: u32,
    _pad: u32,
    _alias: u64,
    _rest: u64,
}

const _: () = assert!(std::mem::size_of::<BatchOp>() == 48);

/// One checked operation, ready to record.
#[derive(Clone, Copy)]
pub(crate) enum Op {
    Wait {
        va: u64,
        value: u64,
        wide: bool,
        cond: ValueCond,
    },
    Write {
        va: u64,
        value: u64,
        wide: bool,
        barrier: bool,
    },
    Barrier,
}

impl Op {
    /// The operation as a `CUstreamBatchMemOpParams` (for a captured call).
    fn raw(self) -> BatchOp {
        let mut b = BatchOp::default();
        match self {
            Op::Wait {
                va,
                value,
                wide,
                cond,
            } => {
                b.operation = if wide {
                    CU_STREAM_MEM_OP_WAIT_VALUE_64
                } else {
                    CU_STREAM_MEM_OP_WAIT_VALUE_32
                };
                b.address = va;
                b.value = value;
                b.flags = match cond {
                    ValueCond::Equal => CU_STREAM_WAIT_VALUE_EQ,
                    ValueCond::AnyBitSet => CU_STREAM_WAIT_VALUE_AND,
                    ValueCond::NorAnyBitSet => CU_STREAM_WAIT_VALUE_NOR,
                    _ => CU_STREAM_WAIT_VALUE_GEQ,
                };
            }
            Op::Write {
                va, value, wide, ..
            } => {
                b.operation = if wide {
                    CU_STREAM_MEM_OP_WRITE_VALUE_64
                } else {
                    CU_STREAM_MEM_OP_WRITE_VALUE_32
                };
                b.address = va;
                b.value = value;
            }
            Op::Barrier => b.operation = CU_STREAM_MEM_OP_BARRIER,
        }
        b
    }

    fn record(self, q: &mut Queue) -> tegragpu::Result<()> {
        match self {
            Op::Wait {
                va,
                value,
                wide,
                cond,
            } => q.wait_value(va, value, wide, cond),
            Op::Write {
                va,
                value,
                wide,
                barrier,
            } => q.write_value(va, value, wide, barrier),
            Op::Barrier => q.barrier(),
        }
    }
}

/// Check that `[addr, addr + width)` is aligned memory of this library on `device`.
fn check_addr(what: &str, addr: u64, wide: bool, device: i32) -> R {
    let width = if wide { 8 } else { 4 };
    if addr % width != 0 {
        return Err(invalid(format!(
            "{what}: address {addr:#x} is not {width}-byte aligned"
        )));
    }
    match crate::memory::find_va(addr) {
        Some((a, off)) if off + width <= a.size => {
            let d = a.ctx.dev.ordinal;
            if d != device {
                return Err(invalid(format!(
                    "{what}: address {addr:#x} is memory of device {d}; the stream is on device {device}"
                )));
            }
            Ok(())
        }
        Some((a, off)) => Err(invalid(format!(
            "{what}: the {width} bytes at {addr:#x} run past the end of its allocation ({} bytes, offset {off})",
            a.size
        ))),
        None => Err(invalid(format!(
            "{what}: address {addr:#x} is not memory this library allocated"
        ))),
    }
}

fn wait_op(what: &str, addr: u64, value: u64, wide: bool, flags: u32, device: i32) -> R<Op> {
    if flags & CU_STREAM_WAIT_VALUE_FLUSH != 0 {
        return Err(fail(
            CUDA_ERROR_NOT_SUPPORTED,
            format!("{what}: CU_STREAM_WAIT_VALUE_FLUSH (flags {flags:#x}): remote writes cannot be flushed on this device (CU_DEVICE_ATTRIBUTE_CAN_FLUSH_REMOTE_WRITES is 0)"),
        ));
    }
    let cond = match flags {
        CU_STREAM_WAIT_VALUE_GEQ => ValueCond::GreaterOrEqualWrapping,
        CU_STREAM_WAIT_VALUE_EQ => ValueCond::Equal,
        CU_STREAM_WAIT_VALUE_AND => ValueCond::AnyBitSet,
        CU_STREAM_WAIT_VALUE_NOR => ValueCond::NorAnyBitSet,
        _ => return Err(invalid(format!("{what}: flags {flags:#x}"))),
    };
    check_addr(what, addr, wide, device)?;
    Ok(Op::Wait {
        va: addr,
        value,
        wide,
        cond,
    })
}

fn write_op(what: &str, addr: u64, value: u64, wide: bool, flags: u32, device: i32) -> R<Op> {
    if flags == CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER {
        // Refused with this code by the driver of the GPUs it was compared on (H100).
        return Err(invalid(format!(
            "{what}: CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER (flags {flags:#x}) is not accepted: the write always follows the stream's earlier work"
        )));
    }
    if flags != 0 {
        return Err(invalid(format!("{what}: flags {flags:#x}")));
    }
    check_addr(what, addr, wide, device)?;
    Ok(Op::Write {
        va: addr,
        value,
        wide,
        barrier: true,
    })
}

unsafe fn one(h: *mut c_void, ptsz: bool, make: impl FnOnce(i32) -> R<Op>) -> R {
    let s = crate::stream::stream_of(h, ptsz)?;
    let op = make(s.ctx.dev.ordinal)?;
    if s.is_capturing() {
        let node = MemOpNode {
            ctx: s.ctx as *const _ as usize,
            device: s.ctx.dev.ordinal,
            ops: vec![op],
            raw: vec![op.raw()],
        };
        return crate::capture::add(s, || Ok(crate::graph::NodeKind::MemOps(Arc::new(node))));
    }
    s.record(|q| op.record(q))
}

/// Check `count` operations at `ops` for `device` into `out` (every one before any is used).
unsafe fn check_ops(
    what: &str,
    count: u32,
    ops: *const BatchOp,
    device: i32,
    out: &mut [Op],
) -> R<usize> {
    if count > MAX_BATCH {
        return Err(invalid(format!(
            "{what}: {count} operations (at most {MAX_BATCH})"
        )));
    }
    if count > 0 && ops.is_null() {
        return Err(invalid(format!(
            "{what}: paramArray is NULL for {count} operations"
        )));
    }
    let n = count as usize;
    for (i, slot) in out.iter_mut().take(n).enumerate() {
        let p = std::ptr::read_unaligned(ops.add(i));
        let name = format!("{what}: operation {i}");
        *slot = match p.operation {
            CU_STREAM_MEM_OP_WAIT_VALUE_32 => {
                wait_op(&name, p.address, p.value & 0xffff_ffff, false, p.flags, device)?
            }
            CU_STREAM_MEM_OP_WAIT_VALUE_64 => {
                wait_op(&name, p.address, p.value, true, p.flags, device)?
            }
            CU_STREAM_MEM_OP_WRITE_VALUE_32 => {
                write_op(&name, p.address, p.value & 0xffff_ffff, false, p.flags, device)?
            }
            CU_STREAM_MEM_OP_WRITE_VALUE_64 => {
                write_op(&name, p.address, p.value, true, p.flags, device)?
            }
            CU_STREAM_MEM_OP_BARRIER => match p.word1 {
                CU_STREAM_MEMORY_BARRIER_TYPE_SYS | CU_STREAM_MEMORY_BARRIER_TYPE_GPU => {
                    Op::Barrier
                }
                f => return Err(invalid(format!("{name}: memory barrier type {f:#x}"))),
            },
            CU_STREAM_MEM_OP_FLUSH_REMOTE_WRITES => {
                return Err(fail(
                    CUDA_ERROR_NOT_SUPPORTED,
                    format!("{name}: CU_STREAM_MEM_OP_FLUSH_REMOTE_WRITES: remote writes cannot be flushed on this device (CU_DEVICE_ATTRIBUTE_CAN_FLUSH_REMOTE_WRITES is 0)"),
                ))
            }
            CU_STREAM_MEM_OP_ATOMIC_REDUCTION => {
                return Err(fail(
                    CUDA_ERROR_NOT_SUPPORTED,
                    format!("{name}: CU_STREAM_MEM_OP_ATOMIC_REDUCTION is not implemented by this libcuda"),
                ))
            }
            o => return Err(invalid(format!("{name}: operation type {o}"))),
        };
    }
    Ok(n)
}

unsafe fn batch(
    what: &str,
    h: *mut c_void,
    count: u32,
    ops: *const BatchOp,
    flags: u32,
    ptsz: bool,
) -> R {
    if flags != 0 {
        return Err(invalid(format!("{what}: flags {flags:#x} (must be 0)")));
    }
    let s = crate::stream::stream_of(h, ptsz)?;
    let device = s.ctx.dev.ordinal;
    let mut checked = [Op::Barrier; MAX_BATCH as usize];
    let n = check_ops(what, count, ops, device, &mut checked)?;
    if n == 0 {
        return Ok(());
    }
    if s.is_capturing() {
        let node = MemOpNode {
            ctx: s.ctx as *const _ as usize,
            device,
            ops: checked[..n].to_vec(),
            raw: (0..n)
                .map(|i| std::ptr::read_unaligned(ops.add(i)))
                .collect(),
        };
        return crate::capture::add(s, || Ok(crate::graph::NodeKind::MemOps(Arc::new(node))));
    }
    s.record(|q| {
        for op in &checked[..n] {
            op.record(q)?;
        }
        Ok(())
    })
}

/// The operations of a batch memory operation node, checked.
pub(crate) struct MemOpNode {
    /// The context the node was made for (`CUcontext`).
    ctx: usize,
    /// Its device's ordinal.
    device: i32,
    ops: Vec<Op>,
    /// The node's own copy of the operations (`cuGraphBatchMemOpNodeGetParams` answers it).
    raw: Vec<BatchOp>,
}

impl MemOpNode {
    /// Record the operations on `s`, the stream of a launch.
    pub(crate) fn record(&self, s: &'static crate::stream::Stream) -> R {
        if s.ctx.dev.ordinal != self.device {
            return Err(invalid(format!(
                "a batch memory operation node of device {} launched on a stream of device {}",
                self.device, s.ctx.dev.ordinal
            )));
        }
        s.record(|q| {
            for op in &self.ops {
                op.record(q)?;
            }
            Ok(())
        })
    }

    /// Whether `other` changes only what an executable graph may change: the addresses and
    /// values, and the comparisons of waits (the context, the count and the operations' types
    /// stay).
    pub(crate) fn updates(&self, other: &MemOpNode) -> bool {
        self.ctx == other.ctx
            && self.raw.len() == other.raw.len()
            && self.raw.iter().zip(&other.raw).all(|(a, b)| {
                a.operation == b.operation
                    && (a.operation != CU_STREAM_MEM_OP_BARRIER || a.word1 == b.word1)
            })
    }
}

/// `CUDA_BATCH_MEM_OP_NODE_PARAMS` (v1 and v2 alike).
#[repr(C)]
pub(crate) struct BatchMemOpNodeParams {
    ctx: *mut c_void,
    count: u32,
    param_array: *const BatchOp,
    flags: u32,
}

/// A batch memory operation node of the parameters at `p`: the context, up to 256 operations
/// checked as `cuStreamBatchMemOp_v2` checks them for the context's device, flags 0.
pub(crate) unsafe fn node_kind(
    what: &str,
    p: *const BatchMemOpNodeParams,
) -> R<crate::graph::NodeKind> {
    let p = p
        .as_ref()
        .ok_or_else(|| invalid(format!("{what}: nodeParams is NULL")))?;
    if p.flags != 0 {
        return Err(invalid(format!("{what}: flags {:#x} (must be 0)", p.flags)));
    }
    // NVIDIA's libcuda takes no context for the current one (CUDA_ERROR_INVALID_VALUE) and a
    // node of no operations (H200).
    if p.ctx.is_null() {
        return Err(invalid(format!("{what}: nodeParams->ctx is NULL")));
    }
    let ctx = crate::context::ctx_ref(p.ctx)?;
    let device = ctx.dev.ordinal;
    let mut checked = [Op::Barrier; MAX_BATCH as usize];
    let n = check_ops(what, p.count, p.param_array, device, &mut checked)?;
    Ok(crate::graph::NodeKind::MemOps(Arc::new(MemOpNode {
        ctx: ctx as *const _ as usize,
        device,
        ops: checked[..n].to_vec(),
        raw: (0..n)
            .map(|i| std::ptr::read_unaligned(p.param_array.add(i)))
            .collect(),
    })))
}

/// Write node `m`'s parameters to `out` (its operations: the node's own copy).
pub(crate) unsafe fn node_params(m: &MemOpNode, out: *mut BatchMemOpNodeParams) -> R {
    let o = out
        .as_mut()
        .ok_or_else(|| invalid("nodeParams_out is NULL"))?;
    *o = BatchMemOpNodeParams {
        ctx: m.ctx as *mut c_void,
        count: m.raw.len() as u32,
        param_array: m.raw.as_ptr(),
        flags: 0,
    };
    Ok(())
}

/// `cuGraphBatchMemOpNodeSetParams` (and `cuGraphNodeSetParams` of such a node): new
/// operations for batch memory operation node `node`.
pub(crate) unsafe fn node_set(what: &str, node: *mut c_void, p: *const BatchMemOpNodeParams) -> R {
    let n = crate::graph::node_ref(node)?;
    let kind = node_kind(what, p)?;
    let mut list = (*n.graph).nodes.lock();
    let slot = &mut list.0[n.index].kind;
    if !matches!(slot, crate::graph::NodeKind::MemOps(_)) {
        return Err(invalid(format!(
            "{what}: the node is not a batch memory operation node"
        )));
    }
    *slot = kind;
    Ok(())
}

/// `cuGraphExecBatchMemOpNodeSetParams` (and `cuGraphExecNodeSetParams` of such a node): new
/// addresses, values and wait comparisons for the node in executable graph `h`.
pub(crate) unsafe fn exec_set(
    what: &str,
    h: *mut c_void,
    node: *mut c_void,
    p: *const BatchMemOpNodeParams,
) -> R {
    let kind = node_kind(what, p)?;
    crate::graph::exec_set_kind(h, node, kind)
}

#[no_mangle]
pub unsafe extern "C" fn cuGraphAddBatchMemOpNode(
    ph: *mut *mut c_void,
    g: *mut c_void,
    deps: *const *mut c_void,
    n: usize,
    p: *const BatchMemOpNodeParams,
) -> CUresult {
    guard("cuGraphAddBatchMemOpNode", || {
        crate::graph::graph_ref(g)?;
        let kind = node_kind("cuGraphAddBatchMemOpNode", p)?;
        crate::graph::add_node(ph, g, deps, n, kind)
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuGraphBatchMemOpNodeGetParams(
    node: *mut c_void,
    out: *mut BatchMemOpNodeParams,
) -> CUresult {
    guard("cuGraphBatchMemOpNodeGetParams", || {
        let n = crate::graph::node_ref(node)?;
        let list = (*n.graph).nodes.lock();
        match &list.0[n.index].kind {
            crate::graph::NodeKind::MemOps(m) => node_params(m, out),
            _ => Err(invalid("the node is not a batch memory operation node")),
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuGraphBatchMemOpNodeSetParams(
    node: *mut c_void,
    p: *const BatchMemOpNodeParams,
) -> CUresult {
    guard("cuGraphBatchMemOpNodeSetParams", || {
        node_set("cuGraphBatchMemOpNodeSetParams", node, p)
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuGraphExecBatchMemOpNodeSetParams(
    h: *mut c_void,
    node: *mut c_void,
    p: *const BatchMemOpNodeParams,
) -> CUresult {
    guard("cuGraphExecBatchMemOpNodeSetParams", || {
        exec_set("cuGraphExecBatchMemOpNodeSetParams", h, node, p)
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuStreamWaitValue32_v2(
    h: *mut c_void,
    addr: CUdeviceptr,
    value: u32,
    flags: u32,
) -> CUresult {
    guard("cuStreamWaitValue32_v2", || {
        one(h, false, |d| {
            wait_op(
                "cuStreamWaitValue32_v2",
                addr,
                u64::from(value),
                false,
                flags,
                d,
            )
        })
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuStreamWaitValue32_v2_ptsz(
    h: *mut c_void,
    addr: CUdeviceptr,
    value: u32,
    flags: u32,
) -> CUresult {
    guard("cuStreamWaitValue32_v2_ptsz", || {
        one(h, true, |d| {
            wait_op(
                "cuStreamWaitValue32_v2_ptsz",
                addr,
                u64::from(value),
                false,
                flags,
                d,
            )
        })
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuStreamWaitValue64_v2(
    h: *mut c_void,
    addr: CUdeviceptr,
    value: u64,
    flags: u32,
) -> CUresult {
    guard("cuStreamWaitValue64_v2", || {
        one(h, false, |d| {
            wait_op("cuStreamWaitValue64_v2", addr, value, true, flags, d)
        })
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuStreamWaitValue64_v2_ptsz(
    h: *mut c_void,
    addr: CUdeviceptr,
    value: u64,
    flags: u32,
) -> CUresult {
    guard("cuStreamWaitValue64_v2_ptsz", || {
        one(h, true, |d| {
            wait_op("cuStreamWaitValue64_v2_ptsz", addr, value, true, flags, d)
        })
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuStreamWriteValue32_v2(
    h: *mut c_void,
    addr: CUdeviceptr,
    value: u32,
    flags: u32,
) -> CUresult {
    guard("cuStreamWriteValue32_v2", || {
        one(h, false, |d| {
            write_op(
                "cuStreamWriteValue32_v2",
                addr,
                u64::from(value),
                false,
                flags,
                d,
            )
        })
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuStreamWriteValue32_v2_ptsz(
    h: *mut c_void,
    addr: CUdeviceptr,
    value: u32,
    flags: u32,
) -> CUresult {
    guard("cuStreamWriteValue32_v2_ptsz", || {
        one(h, true, |d| {
            write_op(
                "cuStreamWriteValue32_v2_ptsz",
                addr,
                u64::from(value),
                false,
                flags,
                d,
            )
        })
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuStreamWriteValue64_v2(
    h: *mut c_void,
    addr: CUdeviceptr,
    value: u64,
    flags: u32,
) -> CUresult {
    guard("cuStreamWriteValue64_v2", || {
        one(h, false, |d| {
            write_op("cuStreamWriteValue64_v2", addr, value, true, flags, d)
        })
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuStreamWriteValue64_v2_ptsz(
    h: *mut c_void,
    addr: CUdeviceptr,
    value: u64,
    flags: u32,
) -> CUresult {
    guard("cuStreamWriteValue64_v2_ptsz", || {
        one(h, true, |d| {
            write_op("cuStreamWriteValue64_v2_ptsz", addr, value, true, flags, d)
        })
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuStreamBatchMemOp_v2(
    h: *mut c_void,
    count: u32,
    ops: *const c_void,
    flags: u32,
) -> CUresult {
    guard("cuStreamBatchMemOp_v2", || {
        batch(
            "cuStreamBatchMemOp_v2",
            h,
            count,
            ops as *const BatchOp,
            flags,
            false,
        )
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuStreamBatchMemOp_v2_ptsz(
    h: *mut c_void,
    count: u32,
    ops: *const c_void,
    flags: u32,
) -> CUresult {
    guard("cuStreamBatchMemOp_v2_ptsz", || {
        batch(
            "cuStreamBatchMemOp_v2_ptsz",
            h,
            count,
            ops as *const BatchOp,
            flags,
            true,
        )
    })
}
