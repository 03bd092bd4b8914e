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
//! On a capturing stream they are refused like other work that is not captured.

use crate::error::*;
use crate::types::*;
use std::ffi::c_void;
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
#[derive(Clone, Copy)]
struct BatchOp {
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
enum Op {
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
    s.record(|q| op.record(q))
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
    let s = crate::stream::stream_of(h, ptsz)?;
    let device = s.ctx.dev.ordinal;
    // Every operation is checked before any is recorded.
    let mut checked = [Op::Barrier; MAX_BATCH as usize];
    let n = count as usize;
    for (i, slot) in checked.iter_mut().take(n).enumerate() {
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
    if n == 0 {
        return Ok(());
    }
    s.record(|q| {
        for op in &checked[..n] {
            op.record(q)?;
        }
        Ok(())
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
