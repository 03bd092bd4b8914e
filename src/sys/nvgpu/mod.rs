//! Raw ABI: nvgpu (`/dev/nvgpu/igpu0/*`, magics 'G' ctrl, 'A' address space, 'T' TSG, 'H' channel).
//!
//! Layouts and request numbers follow the nvgpu uapi headers of L4T r36 (`nvgpu-ctrl.h`,
//! `nvgpu-as.h`, `nvgpu.h`) as described in `docs/nvgpu-kernel-interface.md` §2/§3. Every struct
//! is `#[repr(C)]` with the header's field names; compiler padding that the headers leave
//! implicit is an explicit `_padN` field here so that every byte of a value is initialised (the
//! emulated kernel copies these structs as bytes). Sizes and the offsets the library and the
//! emulator use are checked at compile time, and every struct derives `bytemuck::Pod`, which
//! refuses to compile a struct with implicit padding ([`crate::sys::ioctl`]).
//!
//! Request numbers are computed from the struct sizes with the `_IOC` encoding of
//! [`crate::sys::ioctl`] (the asm-generic layout that arm64 uses: nr in bits 0-7, type in bits
//! 8-15, size in bits 16-29, direction in bits 30-31).
//!
//! One file per fd type: [`ctrl`] ('G'), [`address_space`] ('A'), [`tsg`] ('T'), [`channel`]
//! ('H'), each with its structs and request numbers; [`requests`] lists every request (with
//! nvmap's). Everything is re-exported here.

#![allow(non_camel_case_types, non_snake_case)]

pub mod address_space;
pub mod channel;
pub mod ctrl;
pub mod requests;
pub mod tsg;

pub use address_space::*;
pub use channel::*;
pub use ctrl::*;
pub use requests::*;
pub use tsg::*;

// The shared encoding helpers and the plain-data trait, re-exported for the code and tests
// that know them from here.
pub use crate::sys::ioctl::{
    io, ioc, ioc_dir, ioc_nr, ioc_size, ioc_type, ior, iow, iowr, AbiPod, IOC_DIRSHIFT, IOC_NONE,
    IOC_NRSHIFT, IOC_READ, IOC_SIZEMASK, IOC_SIZESHIFT, IOC_TYPESHIFT, IOC_WRITE,
};
