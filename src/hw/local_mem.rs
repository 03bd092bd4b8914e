//! Local memory (stack) sizing (gpu-programming-interface.md §3.3).
//!
//! CUDA ABI code starts the stack at `R1 = c[0x0][0x28] = 0xFFFDC0` and grows down inside a
//! 16 MiB per-thread space whose top 0x240 bytes are reserved.

use crate::error::{Error, Result};

/// Bytes at the top of the per-thread local space that CUDA code reserves.
pub const LOCAL_MEM_RESERVED: u32 = 0x240;
/// Largest per-thread local size: the 24-bit QMD SHADER_LOCAL_MEMORY_HIGH_SIZE field, rounded
/// down to 32.
pub const MAX_LM_PER_THREAD: u32 = 0xFF_FFE0;
/// Alignment of the per-TPC size (SET_SHADER_LOCAL_MEMORY_NON_THROTTLED).
pub const BYTES_PER_TPC_ALIGN: u64 = 0x8000;
/// Alignment of the whole backing store.
pub const BACKING_ALIGN: u64 = 0x20000;

/// Per-thread local memory for a kernel whose EIATTR_MIN_STACK_SIZE is `min_stack`:
/// `round_up(min_stack + 0x240, 32)`. This is the QMD SHADER_LOCAL_MEMORY_HIGH_SIZE value.
pub fn lm_per_thread(min_stack: u32) -> Result<u32> {
    let v = (u64::from(min_stack) + u64::from(LOCAL_MEM_RESERVED))
        .checked_next_multiple_of(32)
        .unwrap_or(u64::MAX);
    if v > u64::from(MAX_LM_PER_THREAD) {
        return Err(Error::new(
            crate::Status::InvalidLaunch,
            format!("hw::local_mem::lm_per_thread(min_stack={min_stack:#x}): needs {v:#x} bytes per thread, more than {MAX_LM_PER_THREAD:#x}"),
        ));
    }
    Ok(v as u32)
}

/// Bytes per warp: `round_up(lm_per_thread * 32, 0x200)`.
pub fn bytes_per_warp(lm_per_thread: u32) -> u64 {
    // Cannot overflow: u32 * 32 fits in u64 with room for the rounding.
    (u64::from(lm_per_thread) * 32 + 0x1FF) & !0x1FF
}

/// Bytes per TPC for SET_SHADER_LOCAL_MEMORY_NON_THROTTLED_A/B:
/// `round_up(bytes_per_warp * max_warps_per_sm * sms_per_tpc, 0x8000)`. Must stay below 2^40
/// (8-bit upper field).
pub fn bytes_per_tpc(lm_per_thread: u32, max_warps_per_sm: u32, sms_per_tpc: u32) -> Result<u64> {
    let v = bytes_per_warp(lm_per_thread)
        .checked_mul(u64::from(max_warps_per_sm))
        .and_then(|v| v.checked_mul(u64::from(sms_per_tpc)))
        .and_then(|v| v.checked_next_multiple_of(BYTES_PER_TPC_ALIGN));
    match v {
        Some(v) if v < (1 << 40) => Ok(v),
        _ => Err(Error::invalid(format!(
            "hw::local_mem::bytes_per_tpc(lm_per_thread={lm_per_thread:#x}, max_warps_per_sm={max_warps_per_sm}, \
             sms_per_tpc={sms_per_tpc}): result does not fit the 40-bit NON_THROTTLED size"
        ))),
    }
}

/// Backing-store size: `round_up(bytes_per_tpc * max_tpc_per_gpc * num_gpcs, 0x20000)`. Size it
/// for the un-floorswept TPC count.
pub fn backing_size(bytes_per_tpc: u64, max_tpc_per_gpc: u32, num_gpcs: u32) -> Result<u64> {
    bytes_per_tpc
        .checked_mul(u64::from(max_tpc_per_gpc))
        .and_then(|v| v.checked_mul(u64::from(num_gpcs)))
        .and_then(|v| v.checked_next_multiple_of(BACKING_ALIGN))
        .ok_or_else(|| {
            Error::invalid(format!(
                "hw::local_mem::backing_size(bytes_per_tpc={bytes_per_tpc:#x}, max_tpc_per_gpc={max_tpc_per_gpc}, \
                 num_gpcs={num_gpcs}): overflow"
            ))
        })
}
