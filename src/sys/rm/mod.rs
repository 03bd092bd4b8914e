//! Raw ABI: the NVIDIA Resource Manager (nvidia.ko, `/dev/nvidiactl` and `/dev/nvidiaN`) and the
//! UVM driver (nvidia-uvm.ko, `/dev/nvidia-uvm`).
//!
//! Every item carries the name it has in NVIDIA's open-gpu-kernel-modules headers (`nvos.h`,
//! `nv-ioctl.h`, `nv-ioctl-numbers.h`, the `ctrl*` and `class/cl*` SDK headers, and
//! `kernel-open/nvidia-uvm/uvm_ioctl.h`). Sizes and offsets are those of x86_64 builds of the
//! 570 to 595 branches (rm-kernel-interface.md §1, §2, §3, §6); every struct has a compile-time
//! size assertion and derives `bytemuck::Pod` (no implicit padding, see [`crate::sys::ioctl`]).
//!
//! One file per RM object: [`escape`] (the escapes and their argument structs), [`classes`],
//! [`device`] (client, device, subdevice), [`memory`], [`channel`] (TSG, context share,
//! GPFIFO channel, error notifier), [`gr`], [`ce`], [`uvm`], [`p2p`] (peer capabilities and
//! UVM peer access), [`export`] (memory shared through export fds), [`status`]; [`names`] for logs;
//! [`version`] and [`branch`] for the driver branches. The RM and UVM drivers do **not**
//! size-check RM_ALLOC class parameters or UVM ioctl structs, so the layouts that changed
//! between branches are selected per branch: see [`RmBranch`] and [`RmLayout`], one file per
//! branch under [`branch`]. Unknown branches are refused.
//!
//! Everything is re-exported here, so `crate::sys::rm::NAME` works for every item.

#![allow(non_camel_case_types, non_snake_case, non_upper_case_globals)]

pub mod branch;
pub mod ce;
pub mod channel;
pub mod classes;
pub mod device;
pub mod escape;
pub mod export;
pub mod gr;
pub mod memory;
pub mod names;
pub mod p2p;
pub mod status;
pub mod uvm;
pub mod version;

pub use branch::*;
pub use ce::*;
pub use channel::*;
pub use classes::*;
pub use device::*;
pub use escape::*;
pub use export::*;
pub use gr::*;
pub use memory::*;
pub use names::*;
pub use p2p::*;
pub use status::*;
pub use uvm::*;
pub use version::*;

/// The string in a NUL-terminated byte buffer.
pub fn c_string(buf: &[u8]) -> String {
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}
