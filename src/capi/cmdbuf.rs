//! Command buffers: `tg_cmdbuf_*` and `tg_queue_replay`.

use super::boundary::{
    buffer, destroy_cmdbuf, device, out_ptr, register_cmdbuf, run, signal, with_cmdbuf,
    with_queue_cmdbuf, CmdBufCell,
};
use super::handles::{self, Kind, Object};
use super::queue::launch_config;
use super::{
    tg_buf, tg_cmdbuf, tg_device, tg_kernel, tg_launch_config, tg_queue, tg_signal, tg_status,
};
use crate::error::{Error, Result, Status};
use std::ffi::c_void;
use std::sync::Arc;

thread_local! {
    static CMDBUF_LOOKUP: handles::LookupCache<CmdBufCell, 4> =
        const { std::cell::RefCell::new([const { None }; 4]) };
}

fn cmdbuf(h: *const tg_cmdbuf, arg: &str) -> Result<Arc<CmdBufCell>> {
    handles::get_cached(&CMDBUF_LOOKUP, h as usize, Kind::CmdBuf, arg, |o| match o {
        Object::CmdBuf(c) => Some(c),
        _ => None,
    })
}

/// A launch configuration for a command buffer: `TG_LAUNCH_SUBMIT` is refused.
///
/// # Safety
/// As [`launch_config`].
unsafe fn cmdbuf_launch_config(cfg: *const tg_launch_config) -> Result<crate::core::LaunchConfig> {
    match launch_config(cfg)? {
        (_, true) => Err(Error::invalid(
            "cfg->flags has TG_LAUNCH_SUBMIT, which applies to queues: a command buffer is \
             submitted with tg_queue_replay() + tg_queue_submit()",
        )),
        (cfg, false) => Ok(cfg),
    }
}

/// The kernel `with_cmdbuf` looked up (it always does when asked to).
fn kernel_of(k: Option<&crate::core::Kernel>) -> Result<&crate::core::Kernel> {
    k.ok_or_else(|| Error::new(Status::Internal, "tg_cmdbuf: kernel lookup skipped"))
}

/// Write a node index to `node_out` when it is not NULL.
unsafe fn put_node(node_out: *mut u32, index: usize) -> Result<()> {
    if !node_out.is_null() {
        let i = u32::try_from(index).map_err(|_| Error::invalid("too many nodes"))?;
        node_out.write_unaligned(i);
    }
    Ok(())
}

/// The parameter block `params` / `size`, checked like `tg_launch`'s.
unsafe fn param_bytes<'a>(params: *const c_void, size: usize) -> Result<&'a [u8]> {
    if size == 0 {
        Ok(&[])
    } else if params.is_null() {
        Err(Error::new(
            Status::NullPointer,
            format!("params is NULL but params_size_bytes is {size}"),
        ))
    } else {
        Ok(std::slice::from_raw_parts(params as *const u8, size))
    }
}

/// Create an empty command buffer on `dev`: record launches, copies, signals, waits and barriers
/// into it once (`tg_cmdbuf_launch()` ... `tg_cmdbuf_finish()`), then replay it on compute queues
/// any number of times with `tg_queue_replay()` + `tg_queue_submit()` (one doorbell), changing
/// kernel parameters and signal values between replays with `tg_cmdbuf_set_params()` and
/// `tg_cmdbuf_set_value()`. Like a CUDA graph (`cuGraphInstantiate` / `cuGraphLaunch`).
///
/// Each recording call returns the new command's node index (0, 1, 2, ... in recording order)
/// through its optional `node_out`; updates name the node by that index.
///
/// Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_NULL_POINTER`; `TG_ERROR_DEVICE_FAULT`.
/// Ownership: the caller releases `*out` with `tg_cmdbuf_destroy()`. Thread safety: any thread;
/// calls on one command buffer are serialized.
///
/// # Safety
/// `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tg_cmdbuf_create(
    dev: *const tg_device,
    out: *mut *mut tg_cmdbuf,
) -> tg_status {
    run("tg_cmdbuf_create", || create(dev, out, CmdBufCell::shared))
}

/// The body of `tg_cmdbuf_create*`: a new command buffer on `dev`, wrapped by `cell`.
///
/// # Safety
/// `out` is NULL or writable.
unsafe fn create(
    dev: *const tg_device,
    out: *mut *mut tg_cmdbuf,
    cell: fn(crate::core::CmdBuf) -> CmdBufCell,
) -> Result<()> {
    let d = device(dev, "dev")?;
    let out = out_ptr(out, "out")?;
    let h = register_cmdbuf(cell(d.create_cmdbuf()?))?;
    out.write(h as *mut tg_cmdbuf);
    Ok(())
}

/// Create an empty command buffer that only the calling thread may use: like
/// `tg_cmdbuf_create()`, but every call on it (recording, `tg_cmdbuf_finish`, updates,
/// `tg_queue_replay` with it, `tg_cmdbuf_destroy`) must come from the thread that created it.
/// In exchange a call takes no lock and no reference count, which on x86 each cost an atomic
/// read-modify-write that waits for the previous submit's doorbell store to leave the CPU:
/// replays and updates cost what they cost through the Rust API (`docs/performance.md`). A
/// call from another thread returns `TG_ERROR_INVALID_ARGUMENT` and changes nothing. It may be
/// replayed on any compute queue of the device the owner thread may use (shared queues, and
/// queues it owns). If the creating thread exits without destroying it, the command buffer
/// stays until the process ends.
///
/// Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_NULL_POINTER`; `TG_ERROR_DEVICE_FAULT`.
/// Ownership: the caller releases `*out` with `tg_cmdbuf_destroy()` from the same thread.
/// Thread safety: see above.
///
/// # Safety
/// `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tg_cmdbuf_create_owned(
    dev: *const tg_device,
    out: *mut *mut tg_cmdbuf,
) -> tg_status {
    run("tg_cmdbuf_create_owned", || {
        create(dev, out, CmdBufCell::owned)
    })
}

/// Destroy a command buffer. Replays already recorded on queues still run: its memory, and the
/// kernels, buffers and signals it holds, are released once they have completed. NULL is a
/// no-op.
///
/// Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_INVALID_ARGUMENT` (an owned command
/// buffer from another thread than its creator). Thread safety: any thread (an owned command
/// buffer: its creating thread); the handle must not be used after this call.
///
/// # Safety
/// None beyond the handle contract.
#[no_mangle]
pub unsafe extern "C" fn tg_cmdbuf_destroy(cmdbuf: *mut tg_cmdbuf) -> tg_status {
    run("tg_cmdbuf_destroy", || {
        destroy_cmdbuf(cmdbuf, "cmdbuf", self::cmdbuf)
    })
}

/// Record a kernel launch with its packed parameter block (as `tg_launch()`). The launch checks
/// of `tg_launch()` apply now (for a cooperative launch: all its blocks resident at once).
/// Launches in a command buffer run one after another, like launches on a queue. A cooperative
/// launch is sent after a wait for idle, as on a queue, and is not chained to the launches
/// before and after it; each has a grid barrier of its own. Thread-block cluster launches
/// (sm_90) are chained like other launches.
///
/// Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_INVALID_ARGUMENT` (finished command
/// buffer, kernel of another device); `TG_ERROR_INVALID_LAUNCH`; `TG_ERROR_NULL_POINTER`;
/// `TG_ERROR_NOT_SUPPORTED`. Thread safety: any thread.
///
/// # Safety
/// `cfg` is NULL or readable; `params` is NULL or readable for `params_size_bytes` bytes;
/// `node_out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tg_cmdbuf_launch(
    cmdbuf: *const tg_cmdbuf,
    kernel: *const tg_kernel,
    cfg: *const tg_launch_config,
    params: *const c_void,
    params_size_bytes: usize,
    node_out: *mut u32,
) -> tg_status {
    run("tg_cmdbuf_launch", || {
        let i = with_cmdbuf(
            cmdbuf,
            "cmdbuf",
            Some((kernel, "kernel")),
            self::cmdbuf,
            |c, k| {
                let cfg = cmdbuf_launch_config(cfg)?;
                let bytes = param_bytes(params, params_size_bytes)?;
                c.launch(kernel_of(k)?, &cfg, bytes)
            },
        )?;
        put_node(node_out, i)
    })
}

/// Record a copy of `size_bytes` from `src` at `src_offset` to `dst` at `dst_offset`, done by
/// the SMs as on a compute queue. The command buffer holds both buffers until it is destroyed
/// and its replays have completed. The buffers belong to the command buffer's device, or to a
/// device it has peer access to (`tg_device_enable_peer_access()`): the copy then runs on this
/// device's SMs over NVLink or PCIe, like `tg_queue_copy()` on a compute queue.
///
/// Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_INVALID_ARGUMENT` (range outside a
/// buffer, overlap, size 0, finished command buffer, buffer of another device without peer
/// access enabled: the message names both GPUs); `TG_ERROR_NOT_SUPPORTED` (buffer of a device
/// this device can have no peer access to: the message names both GPUs and the reason).
/// Thread safety: any thread.
///
/// # Safety
/// `node_out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tg_cmdbuf_copy(
    cmdbuf: *const tg_cmdbuf,
    dst: *const tg_buf,
    dst_offset: u64,
    src: *const tg_buf,
    src_offset: u64,
    size_bytes: u64,
    node_out: *mut u32,
) -> tg_status {
    run("tg_cmdbuf_copy", || {
        let i = with_cmdbuf(cmdbuf, "cmdbuf", None, self::cmdbuf, |g, _| {
            let d = buffer(dst, "dst")?;
            let s = buffer(src, "src")?;
            // Buffers of another device: peer access must be enabled (checked by the copy,
            // which names both GPUs and the reason when it is not).
            g.copy(&d, dst_offset, &s, src_offset, size_bytes)
        })?;
        put_node(node_out, i)
    })
}

/// Record a GPU write of `value` (with a timestamp) to `signal` once the earlier commands have
/// completed. `tg_cmdbuf_set_value()` changes the value for later replays.
///
/// Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_INVALID_ARGUMENT`.
/// Thread safety: any thread.
///
/// # Safety
/// `node_out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tg_cmdbuf_signal(
    cmdbuf: *const tg_cmdbuf,
    signal: *const tg_signal,
    value: u64,
    node_out: *mut u32,
) -> tg_status {
    run("tg_cmdbuf_signal", || {
        let i = with_cmdbuf(cmdbuf, "cmdbuf", None, self::cmdbuf, |c, _| {
            c.signal(&self::signal(signal, "signal")?, value)
        })?;
        put_node(node_out, i)
    })
}

/// Record a GPU wait until `signal` ≥ `value` (unsigned 64-bit) before later commands start.
/// `tg_cmdbuf_set_value()` changes the value for later replays. The signal belongs to the
/// command buffer's device, or to a device it has peer access to (`tg_device_enable_peer_access()`),
/// as for `tg_queue_wait()`.
///
/// Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_INVALID_ARGUMENT` (signal of another
/// device without peer access enabled: the message names both GPUs); `TG_ERROR_NOT_SUPPORTED`
/// (signal of a device this device can have no peer access to, or whose signal memory could
/// not be mapped here: the message says why).
/// Thread safety: any thread.
///
/// # Safety
/// `node_out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tg_cmdbuf_wait(
    cmdbuf: *const tg_cmdbuf,
    signal: *const tg_signal,
    value: u64,
    node_out: *mut u32,
) -> tg_status {
    run("tg_cmdbuf_wait", || {
        let i = with_cmdbuf(cmdbuf, "cmdbuf", None, self::cmdbuf, |c, _| {
            c.wait(&self::signal(signal, "signal")?, value)
        })?;
        put_node(node_out, i)
    })
}

/// Record a full barrier: earlier commands complete and their writes are visible before later
/// ones start.
///
/// Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_INVALID_ARGUMENT` (finished).
/// Thread safety: any thread.
///
/// # Safety
/// `node_out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tg_cmdbuf_barrier(
    cmdbuf: *const tg_cmdbuf,
    node_out: *mut u32,
) -> tg_status {
    run("tg_cmdbuf_barrier", || {
        let i = with_cmdbuf(cmdbuf, "cmdbuf", None, self::cmdbuf, |c, _| c.barrier())?;
        put_node(node_out, i)
    })
}

/// End recording: the commands are written once into the command buffer's GPU memory. Replays
/// and updates need it; recording afterwards is refused.
///
/// Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_INVALID_ARGUMENT` (nothing recorded,
/// already finished); `TG_ERROR_OUT_OF_MEMORY`. Thread safety: any thread.
///
/// # Safety
/// None beyond the handle contract.
#[no_mangle]
pub unsafe extern "C" fn tg_cmdbuf_finish(cmdbuf: *const tg_cmdbuf) -> tg_status {
    run("tg_cmdbuf_finish", || {
        with_cmdbuf(cmdbuf, "cmdbuf", None, self::cmdbuf, |c, _| c.finish())
    })
}

/// Replace the parameters of launch node `node` for later replays: `kernel` must be the kernel
/// the node launches and `params` its whole packed parameter block. Waits until the replays
/// recorded so far have completed (they run with the values they were recorded with); submit
/// them first (`tg_queue_submit()`), or this waits for the timeout (10 s) and returns
/// `TG_ERROR_TIMEOUT`.
///
/// Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_INVALID_ARGUMENT` (not finished, no such
/// node, not a launch, another kernel); `TG_ERROR_INVALID_LAUNCH` (wrong size);
/// `TG_ERROR_NULL_POINTER`; `TG_ERROR_TIMEOUT`; `TG_ERROR_DEVICE_FAULT`. Thread safety: any thread.
///
/// # Safety
/// `params` is NULL or readable for `params_size_bytes` bytes.
#[no_mangle]
pub unsafe extern "C" fn tg_cmdbuf_set_params(
    cmdbuf: *const tg_cmdbuf,
    node: u32,
    kernel: *const tg_kernel,
    params: *const c_void,
    params_size_bytes: usize,
) -> tg_status {
    run("tg_cmdbuf_set_params", || {
        with_cmdbuf(
            cmdbuf,
            "cmdbuf",
            Some((kernel, "kernel")),
            self::cmdbuf,
            |c, k| {
                let bytes = param_bytes(params, params_size_bytes)?;
                c.set_params(node as usize, kernel_of(k)?, bytes)
            },
        )
    })
}

/// Replace the launch configuration of launch node `node` for later replays: grid, block and
/// dynamic shared memory (as `cuGraphExecKernelNodeSetParams` changes a kernel node's
/// dimensions). `kernel` must be the kernel the node launches; `cfg` is checked like
/// `tg_cmdbuf_launch()`'s, and its `TG_LAUNCH_CONCURRENT` bit must be the one the node was
/// recorded with, as must its `TG_LAUNCH_COOPERATIVE` bit. A cluster launch may take another
/// cluster shape but stays a cluster launch, and a plain launch stays plain. Waits like
/// `tg_cmdbuf_set_params()`; rewrites only that node.
///
/// Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_NULL_POINTER`;
/// `TG_ERROR_INVALID_ARGUMENT` (not finished, no such node, not a launch, another kernel, the
/// concurrent or cooperative bit changed, a change between cluster and plain launch,
/// `TG_LAUNCH_SUBMIT`, `struct_size`); `TG_ERROR_INVALID_LAUNCH` (the dimensions, cluster shape
/// or shared memory do not fit the kernel, a cooperative grid that cannot be resident at once);
/// `TG_ERROR_TIMEOUT`; `TG_ERROR_DEVICE_FAULT`. Thread safety: any thread.
///
/// # Safety
/// `cfg` is NULL or readable.
#[no_mangle]
pub unsafe extern "C" fn tg_cmdbuf_set_launch(
    cmdbuf: *const tg_cmdbuf,
    node: u32,
    kernel: *const tg_kernel,
    cfg: *const tg_launch_config,
) -> tg_status {
    run("tg_cmdbuf_set_launch", || {
        with_cmdbuf(
            cmdbuf,
            "cmdbuf",
            Some((kernel, "kernel")),
            self::cmdbuf,
            |c, k| {
                let cfg = cmdbuf_launch_config(cfg)?;
                c.set_launch(node as usize, kernel_of(k)?, &cfg)
            },
        )
    })
}

/// Replace the value of signal or wait node `node` for later replays. Waits like
/// `tg_cmdbuf_set_params()`.
///
/// Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_INVALID_ARGUMENT` (not finished, no such
/// node, not a signal or wait); `TG_ERROR_TIMEOUT`; `TG_ERROR_DEVICE_FAULT`.
/// Thread safety: any thread.
///
/// # Safety
/// None beyond the handle contract.
#[no_mangle]
pub unsafe extern "C" fn tg_cmdbuf_set_value(
    cmdbuf: *const tg_cmdbuf,
    node: u32,
    value: u64,
) -> tg_status {
    run("tg_cmdbuf_set_value", || {
        with_cmdbuf(cmdbuf, "cmdbuf", None, self::cmdbuf, |c, _| {
            c.set_value(node as usize, value)
        })
    })
}

/// Record a replay of the finished command buffer `cmdbuf` on the compute queue `queue`, after
/// the work recorded on it so far; `tg_queue_submit()` makes it visible (one GPFIFO entry and one
/// doorbell for the whole command buffer). A command buffer may be replayed many times, on one
/// queue or several, with or without submits in between; one with cooperative launches on one
/// queue at a time (their grid barriers serve one replay). No system call; no allocation after
/// the first replay of a command buffer on a queue.
///
/// Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_INVALID_ARGUMENT` (not finished, copy
/// queue, another device, cooperative launches with a replay on another queue not yet
/// completed); `TG_ERROR_DEVICE_FAULT`; `TG_ERROR_TIMEOUT` (ring full and the GPU makes no
/// progress). Thread safety: any thread; serialized per queue.
///
/// # Safety
/// None beyond the handle contract.
#[no_mangle]
pub unsafe extern "C" fn tg_queue_replay(
    queue: *const tg_queue,
    cmdbuf: *const tg_cmdbuf,
) -> tg_status {
    run("tg_queue_replay", || {
        with_queue_cmdbuf(queue, "queue", cmdbuf, "cmdbuf", self::cmdbuf, |q, c| {
            // A shared command buffer's lock is released before the replay is written to the
            // rings (see CmdBuf::begin_replay).
            let r = c.with(cmdbuf as usize, "cmdbuf", |c| c.begin_replay(q))?;
            q.push_replay(&r).map(|_| ())
        })
    })
}

/// `tg_queue_replay()` followed by `tg_queue_submit()` on the same queue, in one call (as
/// `TG_LAUNCH_SUBMIT` does for a launch): the replay, and everything recorded on the queue
/// before it, becomes visible to the GPU with one doorbell. One handle lookup instead of two;
/// on a shared queue one lock instead of two.
///
/// Returns what `tg_queue_replay()` returns, and `TG_ERROR_TIMEOUT` as `tg_queue_submit()` does
/// (the ring stayed full for 10 s). When the replay is refused nothing is recorded or
/// submitted. Thread safety: any thread; serialized per queue.
///
/// # Safety
/// None beyond the handle contract.
#[no_mangle]
pub unsafe extern "C" fn tg_queue_replay_submit(
    queue: *const tg_queue,
    cmdbuf: *const tg_cmdbuf,
) -> tg_status {
    run("tg_queue_replay_submit", || {
        with_queue_cmdbuf(queue, "queue", cmdbuf, "cmdbuf", self::cmdbuf, |q, c| {
            let r = c.with(cmdbuf as usize, "cmdbuf", |c| c.begin_replay(q))?;
            q.push_replay(&r)?;
            q.submit()
        })
    })
}
