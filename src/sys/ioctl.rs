//! What every raw-ABI module shares: the `_IOC` request encoding and the plain-data trait.
//!
//! **Request numbers.** [`ioc`], [`io`], [`ior`], [`iow`] and [`iowr`] are `const fn`s (the
//! request numbers are constants computed from struct sizes) built on nix's `request_code_*`
//! macros, so the `_IOC` layout is the one nix knows for the target (the asm-generic layout on
//! x86_64 and arm64: nr in bits 0-7, type in bits 8-15, size in bits 16-29, direction in bits
//! 30-31, `_IOC_WRITE` = 1, `_IOC_READ` = 2). On top of nix they refuse, at compile time, an
//! argument too large for the size field (nix would silently mask it). The decoders
//! ([`ioc_nr`], [`ioc_type`], [`ioc_size`], [`ioc_dir`]) are for logs and the emulated kernel.
//!
//! **Plain data.** [`AbiPod`] is implemented for every [`bytemuck::Pod`] type, and the ABI
//! structs get `Pod` from `#[derive(bytemuck::Pod, bytemuck::Zeroable)]` on a `#[repr(C)]`
//! struct: the derive fails to compile if the struct has implicit padding or a field that is
//! not itself plain data (a `bool`, a reference, an enum), so "every byte is initialised and
//! every bit pattern is valid" is checked by the compiler, not asserted per struct. Padding
//! that the kernel headers leave implicit is an explicit `_pad…` field.

use core::mem::size_of;
use nix::{request_code_none, request_code_read, request_code_readwrite, request_code_write};

/// `_IOC_NONE`: no data transfer.
pub const IOC_NONE: u64 = 0;
/// `_IOC_WRITE`: user space writes, the kernel reads the argument.
pub const IOC_WRITE: u64 = 1;
/// `_IOC_READ`: the kernel writes the argument back.
pub const IOC_READ: u64 = 2;
/// Bit position of the nr field.
pub const IOC_NRSHIFT: u32 = 0;
/// Bit position of the type (magic) field.
pub const IOC_TYPESHIFT: u32 = 8;
/// Bit position of the size field.
pub const IOC_SIZESHIFT: u32 = 16;
/// Bit position of the direction field.
pub const IOC_DIRSHIFT: u32 = 30;
/// Width mask of the size field (14 bits).
pub const IOC_SIZEMASK: u64 = (1 << 14) - 1;

/// A request number from nix's encoding, as the `u64` the [`crate::os::Sys`] seam carries.
/// (`ioctl_num_type` is `c_ulong` on glibc and `c_int` on musl; the kernel's `cmd` is 32 bits.)
macro_rules! req {
    ($e:expr) => {
        ($e) as u32 as u64
    };
}

/// `_IOC(dir, type, nr, size)`. Sizes that do not fit the 14-bit field fail const evaluation.
pub const fn ioc(dir: u64, ty: u8, nr: u8, size: usize) -> u64 {
    assert!(
        size as u64 <= IOC_SIZEMASK,
        "ioctl argument too large for _IOC"
    );
    match dir {
        IOC_NONE => {
            assert!(size == 0, "_IO takes no argument");
            io(ty, nr)
        }
        IOC_READ => ior(ty, nr, size),
        IOC_WRITE => iow(ty, nr, size),
        3 => iowr(ty, nr, size),
        _ => panic!("bad _IOC direction"),
    }
}
/// `_IO(type, nr)`.
pub const fn io(ty: u8, nr: u8) -> u64 {
    req!(request_code_none!(ty, nr))
}
/// `_IOR(type, nr, T)` with `size = sizeof(T)`.
pub const fn ior(ty: u8, nr: u8, size: usize) -> u64 {
    assert!(
        size as u64 <= IOC_SIZEMASK,
        "ioctl argument too large for _IOC"
    );
    req!(request_code_read!(ty, nr, size))
}
/// `_IOW(type, nr, T)` with `size = sizeof(T)`.
pub const fn iow(ty: u8, nr: u8, size: usize) -> u64 {
    assert!(
        size as u64 <= IOC_SIZEMASK,
        "ioctl argument too large for _IOC"
    );
    req!(request_code_write!(ty, nr, size))
}
/// `_IOWR(type, nr, T)` with `size = sizeof(T)`.
pub const fn iowr(ty: u8, nr: u8, size: usize) -> u64 {
    assert!(
        size as u64 <= IOC_SIZEMASK,
        "ioctl argument too large for _IOC"
    );
    req!(request_code_readwrite!(ty, nr, size))
}
/// `_IOC_NR(request)`.
pub const fn ioc_nr(req: u64) -> u8 {
    ((req >> IOC_NRSHIFT) & 0xff) as u8
}
/// `_IOC_TYPE(request)`.
pub const fn ioc_type(req: u64) -> u8 {
    ((req >> IOC_TYPESHIFT) & 0xff) as u8
}
/// `_IOC_SIZE(request)`.
pub const fn ioc_size(req: u64) -> usize {
    ((req >> IOC_SIZESHIFT) & IOC_SIZEMASK) as usize
}
/// `_IOC_DIR(request)`.
pub const fn ioc_dir(req: u64) -> u64 {
    (req >> IOC_DIRSHIFT) & 3
}

// nix's encoding and the decoders above agree (the layout every supported target uses).
const _: () = {
    let r = iowr(b'G', 5, 16);
    assert!(r == 0xc010_4705);
    assert!(ioc_dir(r) == IOC_READ | IOC_WRITE);
    assert!(ioc_type(r) == b'G' && ioc_nr(r) == 5 && ioc_size(r) == 16);
    assert!(ior(b'A', 12, 16) == 0x8010_410c);
    assert!(iow(b'T', 1, 4) == 0x4004_5401);
    assert!(io(b'H', 113) == 0x4871);
};

/// Plain data that crosses the kernel boundary as bytes: `#[repr(C)]`, no padding, every bit
/// pattern valid. Implemented for every [`bytemuck::Pod`] type; ABI structs get `Pod` from
/// `#[derive(bytemuck::Pod, bytemuck::Zeroable)]`, which checks those properties at compile
/// time. An all-zero value is `bytemuck::Zeroable::zeroed()`.
pub trait AbiPod: bytemuck::Pod {
    /// The value's bytes.
    #[inline]
    fn as_bytes(&self) -> &[u8] {
        bytemuck::bytes_of(self)
    }
    /// The value's bytes, writable.
    #[inline]
    fn as_bytes_mut(&mut self) -> &mut [u8] {
        bytemuck::bytes_of_mut(self)
    }
    /// Reads a value from the first `size_of::<Self>()` bytes (any alignment); `None` if `b`
    /// is shorter.
    #[inline]
    fn from_bytes(b: &[u8]) -> Option<Self> {
        b.get(..size_of::<Self>())
            .map(bytemuck::pod_read_unaligned::<Self>)
    }
}

impl<T: bytemuck::Pod> AbiPod for T {}

/// Compile-time size check of an ABI struct against the documented size.
macro_rules! check_size {
    ($t:ty, $n:expr) => {
        const _: () = assert!(::core::mem::size_of::<$t>() == $n);
    };
}
/// Compile-time offset check of an ABI struct field against the documented offset.
macro_rules! check_off {
    ($t:ty, $f:ident, $n:expr) => {
        const _: () = assert!(::core::mem::offset_of!($t, $f) == $n);
    };
}
pub(crate) use {check_off, check_size};

#[cfg(test)]
mod tests {
    use super::*;

    #[repr(C)]
    #[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
    struct Pair {
        a: u32,
        b: u16,
        _pad: u16,
    }

    #[test]
    fn bytes_round_trip() {
        let p = Pair {
            a: 0x0403_0201,
            b: 0x0605,
            _pad: 0,
        };
        assert_eq!(p.as_bytes(), &[1, 2, 3, 4, 5, 6, 0, 0]);
        let mut buf = [0u8; 9];
        buf[1..].copy_from_slice(p.as_bytes());
        assert_eq!(Pair::from_bytes(&buf[1..]), Some(p));
        assert_eq!(Pair::from_bytes(&buf[..7]), None);
        let mut q: Pair = bytemuck::Zeroable::zeroed();
        q.as_bytes_mut()[0] = 9;
        assert_eq!(q.a, 9);
    }

    #[test]
    fn encoding() {
        assert_eq!(ioc(IOC_READ | IOC_WRITE, b'N', 0, 8), 0xc008_4e00);
        assert_eq!(ioc(IOC_NONE, b'N', 4, 0), 0x4e04);
        assert_eq!(ioc(IOC_WRITE, b'N', 3, 20), 0x4014_4e03);
        assert_eq!(ioc(IOC_READ, b'N', 0x19, 8), 0x8008_4e19);
    }
}
