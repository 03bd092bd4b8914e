//! `tg_queue_*` and `tg_launch*`: creating queues, recording launches, copies, signals, waits
//! and barriers, submitting, synchronizing, aborting.

use super::boundary::{
    buffer, device, null, out_ptr, register_queue, run, same_device, signal, take_queue,
    with_queue, QueueCell,
};
use super::{
    tg_buf, tg_device, tg_kernel, tg_launch_config, tg_queue, tg_queue_kind_arg, tg_signal,
    tg_status, TG_LAUNCH_CONCURRENT, TG_LAUNCH_COOPERATIVE, TG_LAUNCH_SUBMIT,
};
use crate::core::{LaunchConfig, QueueKind};
use crate::error::{Error, Result, Status};
use std::ffi::c_void;

/// Every `TG_LAUNCH_*` bit; other bits are refused.
const TG_LAUNCH_KNOWN_FLAGS: u32 = TG_LAUNCH_COOPERATIVE | TG_LAUNCH_CONCURRENT | TG_LAUNCH_SUBMIT;
/// Size of `tg_launch_config` in version 0.1 (no `flags`, no `cluster`).
const LAUNCH_CONFIG_V1_SIZE: usize = 32;

/// Read and check a launch configuration: the configuration and whether it asks for
/// `TG_LAUNCH_SUBMIT`.
///
/// # Safety
/// `cfg` is NULL or points to a `tg_launch_config` whose first 4 bytes are `struct_size`.
#[inline(always)]
pub(super) unsafe fn launch_config(cfg: *const tg_launch_config) -> Result<(LaunchConfig, bool)> {
    if cfg.is_null() {
        return Err(null("cfg"));
    }
    let w = cfg as *const u32;
    let size = std::ptr::read_unaligned(w) as usize;
    let full = std::mem::size_of::<tg_launch_config>();
    if size == full {
        // The current struct (every caller built against this header): read it whole.
        let c = std::ptr::read_unaligned(cfg);
        let unknown = c.flags & !TG_LAUNCH_KNOWN_FLAGS;
        if unknown != 0 {
            return Err(unknown_flags(c.flags, unknown));
        }
        return Ok((
            LaunchConfig {
                grid: c.grid,
                block: c.block,
                dynamic_shared_bytes: c.dynamic_shared_bytes,
                cooperative: c.flags & TG_LAUNCH_COOPERATIVE != 0,
                concurrent: c.flags & TG_LAUNCH_CONCURRENT != 0,
                cluster: c.cluster,
            },
            c.flags & TG_LAUNCH_SUBMIT != 0,
        ));
    }
    // Dword `i` of the caller's struct, 0 past its struct_size (callers built against an older,
    // shorter struct, or a longer one from a newer header).
    if size != LAUNCH_CONFIG_V1_SIZE && size != LAUNCH_CONFIG_V1_SIZE + 4 && size < full {
        return Err(bad_struct_size(size, full));
    }
    let word = |i: usize| -> u32 {
        if (i + 1) * 4 <= size {
            std::ptr::read_unaligned(w.add(i))
        } else {
            0
        }
    };
    let flags = word(8);
    let unknown = flags & !TG_LAUNCH_KNOWN_FLAGS;
    if unknown != 0 {
        return Err(unknown_flags(flags, unknown));
    }
    Ok((
        LaunchConfig {
            grid: [word(1), word(2), word(3)],
            block: [word(4), word(5), word(6)],
            dynamic_shared_bytes: word(7),
            cooperative: flags & TG_LAUNCH_COOPERATIVE != 0,
            concurrent: flags & TG_LAUNCH_CONCURRENT != 0,
            cluster: [word(9), word(10), word(11)],
        },
        flags & TG_LAUNCH_SUBMIT != 0,
    ))
}

// The dword indices launch_config reads.
const _: () = {
    use std::mem::offset_of;
    assert!(offset_of!(tg_launch_config, grid) == 4);
    assert!(offset_of!(tg_launch_config, block) == 16);
    assert!(offset_of!(tg_launch_config, dynamic_shared_bytes) == 28);
    assert!(offset_of!(tg_launch_config, flags) == 32);
    assert!(offset_of!(tg_launch_config, cluster) == 36);
    assert!(std::mem::size_of::<tg_launch_config>() == 48);
};

#[cold]
fn bad_struct_size(size: usize, full: usize) -> Error {
    Error::invalid(format!(
        "cfg->struct_size is {size}; set it to sizeof(tg_launch_config) ({full})"
    ))
}

#[cold]
fn unknown_flags(flags: u32, unknown: u32) -> Error {
    Error::invalid(format!(
        "cfg->flags {flags:#x} has unknown bits {unknown:#x} (known: TG_LAUNCH_COOPERATIVE=1, TG_LAUNCH_CONCURRENT=2, TG_LAUNCH_SUBMIT=4)"
    ))
}

/// Create a command queue (a GPU channel).
///
/// - `kind`: `TG_QUEUE_COMPUTE` (launches) or `TG_QUEUE_COPY` (copy engine).
///
/// On the Orin (nvgpu) the queue takes one of the channels the device made when it opened
/// (`TEGRAGPU_CHANNELS`, default 4 compute and 2 copy) and gives it back when destroyed, so
/// neither preempts the device's running work; a channel beyond those is made only while the
/// device is idle. On desktop GPUs (RM) a channel is made only while the device is idle.
///
/// Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_NULL_POINTER`;
/// `TG_ERROR_INVALID_ARGUMENT` (unknown kind); `TG_ERROR_OUT_OF_MEMORY` (also: the device
/// already has 128 channels, the most one nvgpu channel group holds); `TG_ERROR_NOT_SUPPORTED`
/// (no free channel of the kind and the device is running work: create queues while it is
/// idle); `TG_ERROR_OS`; `TG_ERROR_DEVICE_FAULT`.
///
/// Ownership: the caller owns `*out` and releases it with `tg_queue_destroy()`.
/// Thread safety: any thread.
///
/// # Safety
/// `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tg_queue_create(
    dev: *const tg_device,
    kind: tg_queue_kind_arg,
    out: *mut *mut tg_queue,
) -> tg_status {
    run("tg_queue_create", || {
        create_queue(
            dev,
            kind,
            crate::core::QueueConfig::default().depth,
            false,
            out,
        )
    })
}

/// Create a command queue with `depth` in-flight units instead of the default 1024: GPFIFO
/// entries (submissions) and, on compute queues, QMD slots (launches) that can be queued before
/// recording waits for the GPU. A power of two from 16 to 65536; each unit costs 8 bytes of
/// ring plus, on compute queues, 2 KiB of GPU memory.
///
/// Returns what `tg_queue_create()` returns; `TG_ERROR_INVALID_ARGUMENT` for a bad `depth`.
///
/// Ownership: the caller owns `*out` and releases it with `tg_queue_destroy()`.
/// Thread safety: any thread.
///
/// # Safety
/// `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tg_queue_create_with_depth(
    dev: *const tg_device,
    kind: tg_queue_kind_arg,
    depth: u32,
    out: *mut *mut tg_queue,
) -> tg_status {
    run("tg_queue_create_with_depth", || {
        create_queue(dev, kind, depth, false, out)
    })
}

/// Create a queue that only the calling thread may use: like `tg_queue_create_with_depth()`
/// (`depth` 0 = the default), but every call on the queue (`tg_launch`, `tg_queue_submit`, ...,
/// `tg_queue_destroy`) must come from the thread that created it. In exchange a call takes no
/// lock and counts no references: the lowest CPU cost per launch the C API has (the Rust API's
/// `&mut Queue`). A call from another thread returns `TG_ERROR_INVALID_ARGUMENT` and changes
/// nothing; so does a call made from a log callback while a call on the same queue runs.
/// The queue keeps the kernels it launched recently alive until its next call after any handle
/// is destroyed, or until it is destroyed. If the creating thread exits without destroying the
/// queue, the queue stays until the process ends (a thread that later reuses the creating
/// thread's thread-local storage may use it).
///
/// Returns what `tg_queue_create()` returns. Ownership: the caller releases `*out` with
/// `tg_queue_destroy()` from the same thread. Thread safety: see above.
///
/// # Safety
/// `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tg_queue_create_owned(
    dev: *const tg_device,
    kind: tg_queue_kind_arg,
    depth: u32,
    out: *mut *mut tg_queue,
) -> tg_status {
    run("tg_queue_create_owned", || {
        let depth = if depth == 0 {
            crate::core::QueueConfig::default().depth
        } else {
            depth
        };
        create_queue(dev, kind, depth, true, out)
    })
}

unsafe fn create_queue(
    dev: *const tg_device,
    kind: tg_queue_kind_arg,
    depth: u32,
    owned: bool,
    out: *mut *mut tg_queue,
) -> Result<()> {
    let d = device(dev, "dev")?;
    let out = out_ptr(out, "out")?;
    let kind = match kind.0 {
        0 => QueueKind::Compute,
        1 => QueueKind::Copy,
        k => {
            return Err(Error::invalid(format!(
                "kind {k} is not a tg_queue_kind (TG_QUEUE_COMPUTE=0, TG_QUEUE_COPY=1)"
            )))
        }
    };
    let q = d.create_queue_with(kind, crate::core::QueueConfig { depth })?;
    let h = register_queue(if owned {
        QueueCell::owned(q)
    } else {
        QueueCell::shared(q)
    })?;
    out.write(h as *mut tg_queue);
    Ok(())
}

/// Destroy a queue: submits what was recorded, waits (up to 10 s) for the queue's work to
/// finish, then releases the channel. NULL is a no-op.
///
/// Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_INVALID_ARGUMENT` (an owned queue from
/// another thread than its creator). Thread safety: any thread (an owned queue: its creating
/// thread); the handle must not be used after this call.
///
/// # Safety
/// None beyond the handle contract.
#[no_mangle]
pub unsafe extern "C" fn tg_queue_destroy(queue: *mut tg_queue) -> tg_status {
    run("tg_queue_destroy", || {
        take_queue(queue, "queue").map(|_| ())
    })
}

/// Abandon a queue's work and destroy the queue at once: what was recorded is not submitted,
/// nothing is waited for, and the queue's hardware channel is torn down, so the GPU stops the
/// running kernel and drops the queued work. The recovery for a kernel that does not end:
/// `tg_signal_wait` / `tg_queue_synchronize` return `TG_ERROR_TIMEOUT`, then `tg_queue_abort`
/// and a new queue; the device, its other queues and its buffers stay usable. Memory the
/// abandoned work held (buffers freed meanwhile, the queue's rings) is released once the
/// channel is gone; signals the work would have written keep their values. NULL is a no-op.
///
/// Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_INVALID_ARGUMENT` (an owned queue from
/// another thread than its creator). Thread safety: any thread (an owned queue: its creating
/// thread); returns after calls on this queue running in other threads (e.g. a
/// `tg_queue_synchronize`) have returned; the handle must not be used after this call.
///
/// # Safety
/// None beyond the handle contract.
#[no_mangle]
pub unsafe extern "C" fn tg_queue_abort(queue: *mut tg_queue) -> tg_status {
    run("tg_queue_abort", || {
        if let Some(q) = take_queue(queue, "queue")? {
            q.abandon_on_drop();
        }
        Ok(())
    })
}

/// Record a kernel launch with a packed parameter block.
///
/// - `cfg`: grid, block and dynamic shared memory; `cfg->struct_size = sizeof(tg_launch_config)`.
/// - `params`, `params_size_bytes`: the parameters laid out as the kernel declares them
///   (`tg_kernel_get_param()` gives each offset and size); `params_size_bytes` must equal the
///   kernel's `param_bytes`. `params` may be NULL when the kernel takes no parameters. The
///   bytes are copied: the memory may be reused after the call.
///
/// The launch runs after `tg_queue_submit()`, in order with the queue's other commands; with
/// `TG_LAUNCH_SUBMIT` in `cfg->flags` this call submits the queue itself once the launch is
/// recorded.
///
/// Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_NULL_POINTER`;
/// `TG_ERROR_INVALID_ARGUMENT` (copy queue, kernel of another device, `struct_size`);
/// `TG_ERROR_INVALID_LAUNCH` (parameter size, zero or too large grid/block, block above the
/// kernel's `max_threads_per_block`, too much shared memory); `TG_ERROR_DEVICE_FAULT`;
/// `TG_ERROR_TIMEOUT` (no ring space within 10 s).
///
/// Thread safety: any thread; serialized per queue.
///
/// # Safety
/// `cfg` is NULL or readable; `params` is NULL or readable for `params_size_bytes` bytes.
#[no_mangle]
pub unsafe extern "C" fn tg_launch(
    queue: *const tg_queue,
    kernel: *const tg_kernel,
    cfg: *const tg_launch_config,
    params: *const c_void,
    params_size_bytes: usize,
) -> tg_status {
    run("tg_launch", || {
        with_queue(queue, "queue", Some((kernel, "kernel")), |q, k| {
            let k = k.ok_or_else(|| Error::new(Status::Internal, "no kernel"))?;
            let (cfg, submit) = launch_config(cfg)?;
            let a = k.attributes();
            if params_size_bytes != a.param_bytes as usize {
                return Err(Error::new(
                Status::InvalidLaunch,
                format!("kernel \"{}\" takes {} bytes of parameters, params_size_bytes is {params_size_bytes}", a.name, a.param_bytes),
            ));
            }
            let bytes: &[u8] = if params_size_bytes == 0 {
                &[]
            } else if params.is_null() {
                return Err(Error::new(
                    Status::NullPointer,
                    format!("params is NULL but params_size_bytes is {params_size_bytes}"),
                ));
            } else {
                std::slice::from_raw_parts(params as *const u8, params_size_bytes)
            };
            q.launch(k, &cfg, bytes)?;
            if submit {
                q.submit()?;
            }
            Ok(())
        })
    })
}

/// Record a kernel launch with one pointer per parameter, like `cuLaunchKernel`'s
/// `kernelParams`: `args[i]` points to the value of parameter `i` (its size is the parameter's
/// size, see `tg_kernel_get_param()`).
///
/// - `num_args`: must equal the kernel's `num_params`; `args` may be NULL when it is 0.
///
/// Returns what `tg_launch()` returns; `TG_ERROR_INVALID_LAUNCH` when `num_args` differs from the
/// kernel's parameter count; `TG_ERROR_NULL_POINTER` when `args` or an element is NULL.
///
/// Thread safety: any thread; serialized per queue.
///
/// # Safety
/// `args` is NULL or points to `num_args` pointers, each NULL or readable for its parameter's
/// size.
#[no_mangle]
pub unsafe extern "C" fn tg_launch_args(
    queue: *const tg_queue,
    kernel: *const tg_kernel,
    cfg: *const tg_launch_config,
    args: *mut *mut c_void,
    num_args: usize,
) -> tg_status {
    run("tg_launch_args", || {
        with_queue(queue, "queue", Some((kernel, "kernel")), |q, k| {
            let k = k.ok_or_else(|| Error::new(Status::Internal, "no kernel"))?;
            let (cfg, submit) = launch_config(cfg)?;
            let a = k.attributes();
            if num_args != a.params.len() {
                return Err(Error::new(
                    Status::InvalidLaunch,
                    format!(
                        "kernel \"{}\" has {} parameters, num_args is {num_args}",
                        a.name,
                        a.params.len()
                    ),
                ));
            }
            // The caller's pointer array, read in place (no copy, no allocation).
            let ptrs: &[*const u8] = if num_args == 0 {
                &[]
            } else if args.is_null() {
                return Err(Error::new(
                    Status::NullPointer,
                    format!("args is NULL but num_args is {num_args}"),
                ));
            } else {
                std::slice::from_raw_parts(args as *const *const u8, num_args)
            };
            if let Some(i) = ptrs.iter().position(|p| p.is_null()) {
                return Err(Error::new(
                    Status::NullPointer,
                    format!("args[{i}] is NULL"),
                ));
            }
            q.launch_ptrs(k, &cfg, ptrs)?;
            if submit {
                q.submit()?;
            }
            Ok(())
        })
    })
}

/// Record a copy of `size_bytes` from `src` at `src_offset` to `dst` at `dst_offset`. On a copy
/// queue the copy engine moves the bytes; on a compute queue the library's built-in copy kernel
/// does (the SMs: full memory bandwidth, ordered after earlier launches on the queue like any
/// kernel; this is how libcuda copies device to device). Both ranges must lie inside their
/// buffers and must not overlap; a zero size records nothing. The buffers belong to the queue's
/// device, or to a device it has peer access to (`tg_device_enable_peer_access()`): a copy
/// between two GPUs runs on this queue's engine, over NVLink or PCIe.
///
/// Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_INVALID_ARGUMENT` (range outside a
/// buffer, overlapping ranges, buffer of another device without peer access enabled: the
/// message names both GPUs); `TG_ERROR_NOT_SUPPORTED` (compute queue on a GPU without a
/// built-in copy kernel; buffer of a device the queue's device can have no peer access to:
/// the message names both GPUs and the reason); `TG_ERROR_DEVICE_FAULT`; `TG_ERROR_TIMEOUT`.
///
/// Thread safety: any thread; serialized per queue.
///
/// # Safety
/// None beyond the handle contract.
#[no_mangle]
pub unsafe extern "C" fn tg_queue_copy(
    queue: *const tg_queue,
    dst: *const tg_buf,
    dst_offset: u64,
    src: *const tg_buf,
    src_offset: u64,
    size_bytes: u64,
) -> tg_status {
    run("tg_queue_copy", || {
        with_queue(queue, "queue", None, |g, _| {
            let d = buffer(dst, "dst")?;
            let s = buffer(src, "src")?;
            // Buffers of another device: the queue's device must have peer access to it
            // (checked by the copy, which names both GPUs and the reason when it does not).
            g.copy(&d, dst_offset, &s, src_offset, size_bytes)
        })
    })
}

/// Record a GPU write of `value` to `signal` once all earlier work on the queue has completed
/// and its writes are visible.
///
/// Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_INVALID_ARGUMENT` (signal of another
/// device); `TG_ERROR_DEVICE_FAULT`; `TG_ERROR_TIMEOUT`. Thread safety: any thread; serialized
/// per queue.
///
/// # Safety
/// None beyond the handle contract.
#[no_mangle]
pub unsafe extern "C" fn tg_queue_signal(
    queue: *const tg_queue,
    signal: *const tg_signal,
    value: u64,
) -> tg_status {
    run("tg_queue_signal", || {
        with_queue(queue, "queue", None, |g, _| {
            let s = self::signal(signal, "signal")?;
            if !same_device(g.device(), s.device()) {
                return Err(Error::invalid(
                    "signal belongs to another device than queue",
                ));
            }
            g.signal(&s, value)
        })
    })
}

/// Record a GPU wait: later commands on the queue start only once `signal` ≥ `value`.
///
/// Signal values compare as unsigned 64-bit integers, on the GPU (`tg_queue_wait()`) and on the
/// CPU (`tg_signal_wait()`) alike: a wait for `v` is satisfied once the value is ≥ `v`. Nothing
/// wraps around: `UINT64_MAX` satisfies every wait, and a wait for a value above the current one
/// blocks however far above it is (e.g. a wait for 2^63 + 1 blocks at 0).
///
/// `signal` may belong to another device that the queue's device has peer access to
/// (`tg_device_enable_peer_access(queue's device, signal's device)`): the queue then waits for
/// that device's work on the GPU, as `cuStreamWaitEvent` does with an event of another device.
///
/// Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_INVALID_ARGUMENT` (signal of another
/// device without peer access enabled); `TG_ERROR_NOT_SUPPORTED` (signal of a device the
/// queue's device has no peer path to, or whose signal memory the driver could not map into
/// it: the message says why); `TG_ERROR_DEVICE_FAULT`; `TG_ERROR_TIMEOUT`. Thread safety: any
/// thread; serialized per queue.
///
/// # Safety
/// None beyond the handle contract.
#[no_mangle]
pub unsafe extern "C" fn tg_queue_wait(
    queue: *const tg_queue,
    signal: *const tg_signal,
    value: u64,
) -> tg_status {
    run("tg_queue_wait", || {
        with_queue(queue, "queue", None, |g, _| {
            let s = self::signal(signal, "signal")?;
            // A signal of another device: the queue's device must have peer access to it
            // (checked by the wait, which names both GPUs and the reason when it does not).
            g.wait(&s, value)
        })
    })
}

/// Record a GPU write of `value` to the 32-bit word (`TG_VALUE_64`: the 64-bit word) at
/// `offset` of `buf`, in order with the queue's other commands (like `cuStreamWriteValue32` /
/// `64`): once earlier work on the queue is complete and its writes are visible, unless
/// `TG_VALUE_NO_BARRIER` lets it pass them. The CPU, or another queue with
/// `tg_queue_wait_value()`, can wait for the word.
///
/// Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_INVALID_ARGUMENT` (unknown flags, an
/// offset not aligned to the word's width, a word outside the buffer, a buffer of another
/// device, a value wider than a 32-bit word); `TG_ERROR_DEVICE_FAULT`; `TG_ERROR_TIMEOUT`.
/// Thread safety: any thread; serialized per queue.
///
/// # Safety
/// None beyond the handle contract.
#[no_mangle]
pub unsafe extern "C" fn tg_queue_write_value(
    queue: *const tg_queue,
    buf: *const tg_buf,
    offset: u64,
    value: u64,
    flags: u32,
) -> tg_status {
    run("tg_queue_write_value", || {
        let known = super::TG_VALUE_64 | super::TG_VALUE_NO_BARRIER;
        if flags & !known != 0 {
            return Err(Error::invalid(format!(
                "tg_queue_write_value: unknown flags {:#x} (known: TG_VALUE_64, TG_VALUE_NO_BARRIER)",
                flags & !known
            )));
        }
        with_queue(queue, "queue", None, |g, _| {
            let b = buffer(buf, "buf")?;
            g.write_buffer_value(
                &b,
                offset,
                value,
                flags & super::TG_VALUE_64 != 0,
                flags & super::TG_VALUE_NO_BARRIER == 0,
            )
        })
    })
}

/// Record a GPU wait, before later work on the queue starts, until the 32-bit word
/// (`TG_VALUE_64`: the 64-bit word) at `offset` of `buf` satisfies `cond` against `value`
/// (`TG_VALUE_EQ`, `TG_VALUE_GEQ`, `TG_VALUE_GEQ_WRAPPING`, `TG_VALUE_AND`, `TG_VALUE_NOR`;
/// like `cuStreamWaitValue32` / `64`). The GPU polls the word; the queue's later work waits,
/// other queues run. A word that never satisfies it holds the queue until
/// `tg_queue_synchronize()` times out.
///
/// Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_INVALID_ARGUMENT` (unknown `cond` or
/// flags, an offset not aligned to the word's width, a word outside the buffer, a buffer of
/// another device, a value wider than a 32-bit word); `TG_ERROR_DEVICE_FAULT`;
/// `TG_ERROR_TIMEOUT`. Thread safety: any thread; serialized per queue.
///
/// # Safety
/// None beyond the handle contract.
#[no_mangle]
pub unsafe extern "C" fn tg_queue_wait_value(
    queue: *const tg_queue,
    buf: *const tg_buf,
    offset: u64,
    value: u64,
    cond: u32,
    flags: u32,
) -> tg_status {
    run("tg_queue_wait_value", || {
        use crate::core::ValueCond as C;
        let c = match cond {
            super::TG_VALUE_EQ => C::Equal,
            super::TG_VALUE_GEQ => C::GreaterOrEqual,
            super::TG_VALUE_GEQ_WRAPPING => C::GreaterOrEqualWrapping,
            super::TG_VALUE_AND => C::AnyBitSet,
            super::TG_VALUE_NOR => C::NorAnyBitSet,
            _ => {
                return Err(Error::invalid(format!(
                    "tg_queue_wait_value: unknown condition {cond} (TG_VALUE_EQ, _GEQ, _GEQ_WRAPPING, _AND, _NOR)"
                )))
            }
        };
        if flags & !super::TG_VALUE_64 != 0 {
            return Err(Error::invalid(format!(
                "tg_queue_wait_value: unknown flags {:#x} (known: TG_VALUE_64)",
                flags & !super::TG_VALUE_64
            )));
        }
        with_queue(queue, "queue", None, |g, _| {
            let b = buffer(buf, "buf")?;
            g.wait_buffer_value(&b, offset, value, flags & super::TG_VALUE_64 != 0, c)
        })
    })
}

/// Record a full barrier: earlier work on the queue completes and its writes are visible to the
/// CPU and other engines before later work starts.
///
/// Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_DEVICE_FAULT`; `TG_ERROR_TIMEOUT`.
/// Thread safety: any thread; serialized per queue.
///
/// # Safety
/// None beyond the handle contract.
#[no_mangle]
pub unsafe extern "C" fn tg_queue_barrier(queue: *const tg_queue) -> tg_status {
    run("tg_queue_barrier", || {
        with_queue(queue, "queue", None, |q, _| q.barrier())
    })
}

/// Make everything recorded on the queue visible to the GPU (no system call: a GPFIFO entry and
/// a doorbell write). Returns immediately; use signals or `tg_queue_synchronize()` to wait.
/// Recorded work does not start before a submit; `tg_queue_synchronize()`,
/// `tg_device_synchronize()` and a `tg_signal_wait()` for a release recorded on the queue submit
/// it themselves.
///
/// Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_DEVICE_FAULT`; `TG_ERROR_TIMEOUT` (the
/// ring stayed full for 10 s). Thread safety: any thread; serialized per queue.
///
/// # Safety
/// None beyond the handle contract.
#[no_mangle]
pub unsafe extern "C" fn tg_queue_submit(queue: *const tg_queue) -> tg_status {
    run("tg_queue_submit", || {
        with_queue(queue, "queue", None, |q, _| q.submit())
    })
}

/// Submit what was recorded on the queue (as `tg_queue_submit()`), wait until all of the
/// queue's work has completed, then print device-side `printf` output to `stdout`: a launch
/// followed by `tg_queue_synchronize()` runs, as `cuLaunchKernel` + `cuStreamSynchronize` does.
/// `tg_queue_submit()` stays for batching: recorded work starts on the GPU at the submit, and a
/// synchronize, a device synchronize or a signal wait that needs it submits it too.
///
/// - `timeout_ns`: deadline in nanoseconds (`TG_TIMEOUT_INFINITE` = none).
///
/// Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_TIMEOUT`; `TG_ERROR_DEVICE_FAULT`.
/// Thread safety: any thread; holds the queue's lock while waiting.
///
/// # Safety
/// None beyond the handle contract.
#[no_mangle]
pub unsafe extern "C" fn tg_queue_synchronize(
    queue: *const tg_queue,
    timeout_ns: u64,
) -> tg_status {
    run("tg_queue_synchronize", || {
        with_queue(queue, "queue", None, |q, _| q.synchronize(timeout_ns))
    })
}

/// Record a fill of `count` elements of `elem_bytes` (1, 2 or 4) bytes of `dst`, starting at
/// `dst_offset` (a multiple of `elem_bytes`), with the low `elem_bytes` bytes of `value` (like
/// `cuMemsetD8Async` / `D16` / `D32`), in order with the queue's other commands. On a copy
/// queue the copy engine writes the constant; on a compute queue the first (up to 64 KiB)
/// bytes are staged from the host and the library's copy kernel doubles them over the range.
/// The range must lie inside the buffer; `count` 0 records nothing.
///
/// Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_INVALID_ARGUMENT` (`elem_bytes` not 1,
/// 2 or 4, `value` wider than `elem_bytes`, misaligned offset, range outside the buffer, buffer
/// of another device); `TG_ERROR_OUT_OF_MEMORY` (no staging memory); `TG_ERROR_DEVICE_FAULT`;
/// `TG_ERROR_TIMEOUT`. Thread safety: any thread; serialized per queue.
///
/// # Safety
/// None beyond the handle contract.
#[no_mangle]
pub unsafe extern "C" fn tg_queue_fill(
    queue: *const tg_queue,
    dst: *const tg_buf,
    dst_offset: u64,
    value: u32,
    elem_bytes: u32,
    count: u64,
) -> tg_status {
    run("tg_queue_fill", || {
        with_queue(queue, "queue", None, |g, _| {
            let d = buffer(dst, "dst")?;
            g.fill(&d, dst_offset, value, elem_bytes, count)
        })
    })
}

/// Record a copy of `size_bytes` of host memory at `src` to `dst` at `dst_offset`, in order
/// with the queue's other commands (like `cuMemcpyHtoDAsync`). The bytes are copied into the
/// device's staging buffers during the call, so `src` may be reused as soon as it returns; the
/// GPU copies them into the buffer when the queue reaches the command (after
/// `tg_queue_submit()`). Transfers above 4 MiB are split into 4 MiB chunks; a queue keeps at
/// most 8 chunks in flight and waits for the oldest (submitting it if needed) before staging
/// more. The range must lie inside the buffer; `src` may be NULL when `size_bytes` is 0 (which
/// records nothing).
///
/// Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_NULL_POINTER` (`src`);
/// `TG_ERROR_INVALID_ARGUMENT` (range outside the buffer, buffer of another device);
/// `TG_ERROR_OUT_OF_MEMORY` (no staging memory); `TG_ERROR_NOT_SUPPORTED` (compute queue on a
/// GPU without a built-in copy kernel); `TG_ERROR_DEVICE_FAULT`; `TG_ERROR_TIMEOUT`.
/// Thread safety: any thread; serialized per queue.
///
/// # Safety
/// `src` is NULL or readable for `size_bytes` bytes.
#[no_mangle]
pub unsafe extern "C" fn tg_queue_write(
    queue: *const tg_queue,
    dst: *const tg_buf,
    dst_offset: u64,
    src: *const c_void,
    size_bytes: u64,
) -> tg_status {
    run("tg_queue_write", || {
        with_queue(queue, "queue", None, |g, _| {
            let d = buffer(dst, "dst")?;
            // The range first: a size beyond the buffer never becomes a slice.
            d.check_range("tg_queue_write: dst", dst_offset, size_bytes)?;
            let bytes: &[u8] = if size_bytes == 0 {
                &[]
            } else if src.is_null() {
                return Err(Error::new(
                    Status::NullPointer,
                    format!("src is NULL but size_bytes is {size_bytes}"),
                ));
            } else {
                let n = usize::try_from(size_bytes).map_err(|_| {
                    Error::invalid(format!("size_bytes {size_bytes} exceeds the address space"))
                })?;
                std::slice::from_raw_parts(src as *const u8, n)
            };
            g.write(&d, dst_offset, bytes)
        })
    })
}

/// Copy `size_bytes` of `src` at `src_offset` to host memory at `dst`, in order with the
/// queue's other commands (like `cuMemcpyDtoH`): the copy is recorded after the work already
/// recorded, the queue is submitted, and the call returns once the bytes are in `dst`, so it
/// waits for the queue's earlier work (holding the queue's lock, as `tg_queue_synchronize()`
/// does). The GPU copies through the device's staging buffers, 4 MiB at a time, and the CPU
/// copies each chunk out as it completes. The range must lie inside the buffer; `dst` may be
/// NULL when `size_bytes` is 0 (which reads nothing and does not wait). On an error `dst` holds
/// an unspecified part of the data.
///
/// Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_NULL_POINTER` (`dst`);
/// `TG_ERROR_INVALID_ARGUMENT` (range outside the buffer, buffer of another device);
/// `TG_ERROR_OUT_OF_MEMORY`; `TG_ERROR_NOT_SUPPORTED`; `TG_ERROR_DEVICE_FAULT`;
/// `TG_ERROR_TIMEOUT` (the queue's work did not finish within 10 s). Thread safety: any
/// thread; serialized per queue.
///
/// # Safety
/// `dst` is NULL or writable for `size_bytes` bytes.
#[no_mangle]
pub unsafe extern "C" fn tg_queue_read(
    queue: *const tg_queue,
    dst: *mut c_void,
    src: *const tg_buf,
    src_offset: u64,
    size_bytes: u64,
) -> tg_status {
    run("tg_queue_read", || {
        with_queue(queue, "queue", None, |g, _| {
            let s = buffer(src, "src")?;
            s.check_range("tg_queue_read: src", src_offset, size_bytes)?;
            let out: &mut [u8] = if size_bytes == 0 {
                &mut []
            } else if dst.is_null() {
                return Err(Error::new(
                    Status::NullPointer,
                    format!("dst is NULL but size_bytes is {size_bytes}"),
                ));
            } else {
                let n = usize::try_from(size_bytes).map_err(|_| {
                    Error::invalid(format!("size_bytes {size_bytes} exceeds the address space"))
                })?;
                std::slice::from_raw_parts_mut(dst as *mut u8, n)
            };
            g.read(&s, src_offset, out)
        })
    })
}
