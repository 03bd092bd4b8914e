//! The self-test's queue and channel checks: what the kernel driver does when queues are made
//! and destroyed while a kernel runs, when one queue faults, at the device's queue limit, and
//! when another process uses the GPU during a long kernel. Each check records what it observed
//! (statuses, messages, timings, which queues saw an error) in its notes, which the report
//! prints under the check whatever its verdict: those lines are what tells how a board's driver
//! behaves.
//!
//! Every long kernel is `spin_until` with a time bound, ended early by its flag word when a
//! check returns (see [`EndSpin`]); every wait has a timeout.
//!
//! Each check is in a file of its own; this module holds what they share: the status and timing
//! texts of the notes, the fill and spin kernels' launches and checks, and the guards that end a
//! spinning kernel or open a GPU wait whichever way a check returns.

use super::{cfg, data, fail, params, CheckFail, SEC};
use crate::core::{BackendKind, Buffer, Device, Kernel, Queue, QueueKind};
use crate::error::{Error, Status};
use std::time::Duration;

mod create_destroy;
mod fault;
mod limit;
mod other_process;

pub(super) use create_destroy::check_create_destroy_during_long_kernel;
pub(super) use fault::check_fault_on_one_queue;
pub(super) use limit::check_queue_limit;
pub(super) use other_process::check_long_kernel_with_other_process;
pub use other_process::{run_competitor, CompetitorCommand};

/// Words written by the fill kernels of these checks.
const WORDS: u32 = 1024;

/// `TG_ERROR_DEVICE_FAULT` (the status's name without its description).
fn status_name(s: Status) -> &'static str {
    s.as_str().split(':').next().unwrap_or("?")
}

/// `TG_ERROR_X (message)`.
fn err_text(e: &Error) -> String {
    format!("{} ({})", status_name(e.status), e.message)
}

/// `TG_ERROR_X (the message's first 100 characters)`, for errors that repeat a fault's text
/// already in the notes.
fn err_short(e: &Error) -> String {
    match e.message.char_indices().nth(100) {
        Some((i, _)) => format!("{} ({}...)", status_name(e.status), &e.message[..i]),
        None => err_text(e),
    }
}

/// `ok` or `TG_ERROR_X (message)`.
fn res_text<T>(r: &crate::error::Result<T>) -> String {
    match r {
        Ok(_) => "ok".into(),
        Err(e) => err_text(e),
    }
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1e3)
}

fn backend_name(dev: &Device) -> &'static str {
    match dev.info().backend {
        BackendKind::Nvgpu if dev.is_emulated() => "nvgpu (emulated Orin)",
        BackendKind::Nvgpu => "nvgpu",
        BackendKind::Rm => "rm",
    }
}

/// The CPU view of `b` as words.
fn words(b: &Buffer) -> Result<*mut u32, CheckFail> {
    Ok(b.map_cpu()? as *mut u32)
}

/// Ends a `spin_until` kernel when dropped (sets its flag word), so that no check leaves the GPU
/// spinning, whichever way it returns. Declare it after the queues that run the kernel: it is
/// dropped before them, and their drop waits for their work.
struct EndSpin<'a>(&'a Buffer);

impl Drop for EndSpin<'_> {
    fn drop(&mut self) {
        if let Ok(p) = self.0.map_cpu() {
            // SAFETY: the flag buffer is CPU-mapped and at least one word long.
            unsafe { (p as *mut u32).write_volatile(1) };
        }
    }
}

/// Opens a GPU wait on `signal` when dropped (sets it to 1), for the same reason as [`EndSpin`].
struct OpenGate<'a>(&'a crate::core::Signal);

impl Drop for OpenGate<'_> {
    fn drop(&mut self) {
        self.0.set(1);
    }
}

/// `spin_until(flag, max_ns)`'s parameters.
fn spin_params(flag: &Buffer, max_ns: u64) -> Vec<u8> {
    params(&[&flag.gpu_va().to_le_bytes(), &max_ns.to_le_bytes()])
}

/// `fill_u32(out, value, WORDS)` recorded on `q`.
fn launch_fill(q: &mut Queue, fill: &Kernel, out: &Buffer, value: u32) -> crate::error::Result<()> {
    q.launch(
        fill,
        &cfg(WORDS / 256, 256),
        &params(&[
            &out.gpu_va().to_le_bytes(),
            &value.to_le_bytes(),
            &WORDS.to_le_bytes(),
        ]),
    )
}

/// Whether the first [`WORDS`] words of `out` are `value`; `Err` names the first that is not.
fn check_fill(out: &Buffer, value: u32, what: &str) -> Result<(), CheckFail> {
    let w = words(out)?;
    for i in 0..WORDS as usize {
        // SAFETY: `out` holds at least WORDS words, and the kernel that wrote them is done.
        let v = unsafe { w.add(i).read_volatile() };
        if v != value {
            return Err(fail(format!(
                "{what}: word {i} is {v:#x}, expected {value:#x}"
            )));
        }
    }
    Ok(())
}

/// A new compute queue on `dev` runs a fill kernel correctly.
fn device_still_works(dev: &Device, fill: &Kernel, value: u32) -> Result<(), CheckFail> {
    let out = dev.alloc(u64::from(WORDS) * 4, data())?;
    let mut q = dev.create_queue(QueueKind::Compute)?;
    launch_fill(&mut q, fill, &out, value)?;
    q.synchronize(10 * SEC)?;
    check_fill(&out, value, "a kernel on a new queue afterwards")
}
