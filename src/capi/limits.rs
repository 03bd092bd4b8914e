//! Device-wide limits (`tg_device_set_limit`, `tg_device_get_limit`; like `cuCtxSetLimit`).
//!
//! A `tg_device_*` pair kept apart from `device.rs` so that the header keeps its order: cbindgen
//! emits functions in module order, and these two follow the module functions there.

use super::boundary::{device, out_ptr, run};
use super::{tg_device, tg_status, TG_LIMIT_MALLOC_HEAP_SIZE, TG_LIMIT_STACK_SIZE};
use crate::error::Error;

/// Set a device-wide limit (like `cuCtxSetLimit`).
///
/// - `TG_LIMIT_STACK_SIZE`: stack bytes per GPU thread (default 1024, as in libcuda). Each
///   launch recorded after the call gets the larger of this and the stack its kernel needs;
///   recursion and other calls whose depth the compiler cannot bound run in it. The device
///   reserves this much for every thread the GPU can hold (on an H100: about 300 MB per KiB),
///   allocated by this call when the limit grows (`TG_ERROR_OUT_OF_MEMORY` if it cannot be).
/// - `TG_LIMIT_MALLOC_HEAP_SIZE`: bytes of the device heap that `malloc` in kernels allocates
///   from (default 8 MiB, as in libcuda; 1 KiB to 64 GiB). The heap is allocated when the first
///   module that calls `malloc` or `free` is loaded; after that only its current size is
///   accepted. `malloc` returns NULL when the heap cannot hold a request.
///
/// Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_INVALID_ARGUMENT` (unknown limit,
/// value out of range, heap size after the heap was allocated). Thread safety: any thread.
///
/// # Safety
/// None beyond the handle contract.
#[no_mangle]
pub unsafe extern "C" fn tg_device_set_limit(
    dev: *const tg_device,
    limit: u32,
    value: u64,
) -> tg_status {
    run("tg_device_set_limit", || {
        let d = device(dev, "dev")?;
        match limit {
            TG_LIMIT_STACK_SIZE => d.set_stack_limit(value),
            TG_LIMIT_MALLOC_HEAP_SIZE => d.set_malloc_heap_size(value),
            other => Err(Error::invalid(format!(
                "limit {other} is unknown (known: TG_LIMIT_STACK_SIZE=0, TG_LIMIT_MALLOC_HEAP_SIZE=2)"
            ))),
        }
    })
}

/// Read a device-wide limit (see `tg_device_set_limit()`).
///
/// Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_NULL_POINTER`;
/// `TG_ERROR_INVALID_ARGUMENT` (unknown limit). Thread safety: any thread.
///
/// # Safety
/// `value` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tg_device_get_limit(
    dev: *const tg_device,
    limit: u32,
    value: *mut u64,
) -> tg_status {
    run("tg_device_get_limit", || {
        let d = device(dev, "dev")?;
        let value = out_ptr(value, "value")?;
        match limit {
            TG_LIMIT_STACK_SIZE => {
                value.write_unaligned(u64::from(d.stack_limit()));
                Ok(())
            }
            TG_LIMIT_MALLOC_HEAP_SIZE => {
                value.write_unaligned(d.malloc_heap_size());
                Ok(())
            }
            other => Err(Error::invalid(format!(
                "limit {other} is unknown (known: TG_LIMIT_STACK_SIZE=0, TG_LIMIT_MALLOC_HEAP_SIZE=2)"
            ))),
        }
    })
}
