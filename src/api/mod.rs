//! The curated Rust API, re-exported at the crate root: [`Device`], [`DeviceBuffer`],
//! [`Module`], [`Kernel`], [`Launch`] with [`DeviceRepr`] arguments, [`Queue`], [`Signal`],
//! [`CmdBuf`].
//!
//! It is a layer over `crate::core`, the backend-independent runtime that the C API
//! (`crate::capi`) and through it the Python package also wrap: the same objects, the same
//! checks and the same error messages, with Rust types where the core takes bytes and raw
//! addresses. Nothing here is on a path the C API uses.
//!
//! # Design
//!
//! **Typed buffers.** A [`DeviceBuffer<T>`] holds `len` values of a [`bytemuck::Pod`] type:
//! any bytes the GPU writes are a valid `T`, so host views need no validation, and the element
//! size turns lengths and offsets into byte ranges in one place.
//!
//! **Host access waits for the GPU work that uses the buffer.** Every buffer records, per
//! queue, the timeline value after which the work recorded so far that reads it, and that
//! writes it, is done (launch arguments, copy sources and destinations, command-buffer
//! replays). A host view ([`DeviceBuffer::as_slice`], [`DeviceBuffer::as_mut_slice`]) first
//! waits for the writes (a mutable view: for every access), then hands out a slice that
//! borrows the buffer. Three rules keep the GPU from writing memory a live view shows:
//! - launches and copies that write a buffer take it by `&mut` ([`Launch::arg_mut`],
//!   [`Queue::copy`]), which the borrow checker refuses while a view (a borrow of the buffer)
//!   lives; buffers a launch only reads are passed by `&` ([`Launch::arg`]);
//! - a command buffer records its launches once and replays them later, after the borrows
//!   have ended: it keeps its buffers allocated and each replay checks at run time, under the
//!   buffer's lock, that no live view conflicts (a shared view with a written buffer, a mutable
//!   view with any);
//! - work recorded but not submitted cannot be waited for by the buffer (only the queue's owner
//!   can submit it): a view is refused with an error that says to submit first, never a wait
//!   that cannot end.
//!
//! The alternative of tying every buffer a queue uses to the queue's lifetime until the next
//! synchronize would make ordinary programs (record, synchronize, read, record again) fight
//! the borrow checker; copying everything through staging buffers would throw away the memory
//! that Jetson's CPU and GPU share. Per-buffer tracking costs one uncontended lock per buffer
//! argument at record time and no allocation once a buffer has been used on a queue.
//!
//! **Launching is `unsafe`.** A kernel is machine code the library cannot inspect: it may
//! read or write any address it is given or computes. The launch builder checks what can be
//! checked (the argument count, each argument's size against the cubin's parameter
//! (`EIATTR_KPARAM_INFO`) and its alignment against the parameter's offset, the grid, block and
//! shared memory against the kernel and the device); [`Launch::record`] is `unsafe` and states
//! the rest as its contract (the kernel stays inside what it was given and writes only what
//! was passed with `arg_mut`). Everything else (allocation, host views, copies, signals,
//! replays) is safe.
//!
//! **A builder, not a tuple of arguments.** [`Queue::launch`] returns a [`Launch`] whose
//! setters take `&mut self`, so a launch reads as one chained expression and can also be
//! built over several statements. Arguments are checked as they are given and written into a
//! parameter block inside the builder (up to 4 KiB without a heap allocation); the first
//! mistake is kept and returned by `record`, with the kernel's name, the parameter index and
//! offset, and both sizes. Pod values are taken by reference and copied at once, so
//! temporaries (`.arg(&(n as u32))`) work.
//!
//! **Errors** are the library's [`Error`](crate::Error) (a [`Status`](crate::Status), the errno
//! of a failed system call, and a message). Messages from the core that name a C function
//! (`tg_queue_copy: ...`) name the Rust method instead (`Queue::copy: ...`).
#![warn(missing_docs)]

mod buffer;
mod cmdbuf;
mod device;
mod launch;
mod module;
mod queue;
mod signal;

pub use buffer::{DeviceBuffer, HostSlice, HostSliceMut};
pub use cmdbuf::CmdBuf;
pub use device::Device;
#[doc(hidden)]
pub use launch::BufferArg;
pub use launch::{DeviceRepr, Dim3, Launch};
pub use module::{Kernel, Module};
pub use queue::Queue;
pub use signal::Signal;

use crate::error::{Error, Result};

/// Whether two core devices are the same open device.
pub(crate) fn same_device(a: &crate::core::Device, b: &crate::core::Device) -> bool {
    std::sync::Arc::ptr_eq(&a.inner, &b.inner)
}

/// Refuse an object (`what`) of another device than `dev`.
pub(crate) fn check_device(
    dev: &crate::core::Device,
    other: &crate::core::Device,
    call: &str,
    what: &str,
) -> Result<()> {
    if same_device(dev, other) {
        Ok(())
    } else {
        Err(Error::invalid(format!(
            "{call}: {what} belongs to another device ({}) than this one ({})",
            other.info().name,
            dev.info().name
        )))
    }
}

/// `e` with its message naming `call`: a core message that starts with a C function's name
/// (`tg_queue_copy: ...`) gets `call` in its place, any other gets `call: ` in front.
pub(crate) fn retag(mut e: Error, call: &str) -> Error {
    if let Some(rest) = e.message.strip_prefix("tg_") {
        let end = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        if rest[end..].starts_with(':') {
            e.message = format!("{call}{}", &rest[end..]);
            return e;
        }
    }
    if !e.message.starts_with(call) {
        e.message = format!("{call}: {}", e.message);
    }
    e
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Status;

    #[test]
    fn retag_replaces_a_c_function_name_or_prefixes_the_call() {
        let e = retag(
            Error::invalid("tg_queue_copy: dst: range [offset 8, +8 bytes) is outside"),
            "Queue::copy",
        );
        assert_eq!(
            e.message,
            "Queue::copy: dst: range [offset 8, +8 bytes) is outside"
        );
        assert_eq!(e.status, Status::InvalidArgument);
        let e = retag(Error::invalid("size_bytes is 0"), "Device::alloc");
        assert_eq!(e.message, "Device::alloc: size_bytes is 0");
        // Already named: unchanged.
        let e = retag(Error::invalid("Device::alloc: len is 0"), "Device::alloc");
        assert_eq!(e.message, "Device::alloc: len is 0");
        // A name that is not followed by a colon is not a call prefix.
        let e = retag(Error::invalid("tg_x is odd"), "Queue::submit");
        assert_eq!(e.message, "Queue::submit: tg_x is odd");
    }
}
