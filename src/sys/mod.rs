//! Raw kernel ABI: `#[repr(C)]` structs and ioctl request numbers, named as in the kernel headers.

pub mod nvgpu;
pub mod nvmap;
pub mod rm;
