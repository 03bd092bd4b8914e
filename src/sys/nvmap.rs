//! Raw ABI: nvmap (`/dev/nvmap`, magic 'N').
//!
//! Layouts follow `include/uapi/linux/nvmap.h` of the nvidia-oot tree at `jetson_36.2`
//! (`docs/nvgpu-kernel-interface.md` §3, §5). Handle IDs are u32 values (not fds) on r36;
//! `NVMAP_IOC_FREE` takes the ID by value. The dispatcher rejects a wrong magic or an nr above
//! [`NVMAP_IOC_MAXNR`] with ENOTTY.

#![allow(non_camel_case_types)]

use crate::sys::ioctl::{io, ior, iow, iowr};
use core::mem::{offset_of, size_of};

/// `NVMAP_IOC_MAGIC` ('N').
pub const NVMAP_IOC_MAGIC: u8 = b'N';
/// `NVMAP_IOC_MAXNR`: highest nr the dispatcher accepts.
pub const NVMAP_IOC_MAXNR: u32 = 107;

/// `NVMAP_HEAP_IOVMM`: page-allocated system memory (the heap to use on Orin).
pub const NVMAP_HEAP_IOVMM: u32 = 1 << 30;
/// `NVMAP_HEAP_CARVEOUT_VPR` (forces uncached, no CPU mmap).
pub const NVMAP_HEAP_CARVEOUT_VPR: u32 = 1 << 28;
/// `NVMAP_HEAP_CARVEOUT_TSEC`.
pub const NVMAP_HEAP_CARVEOUT_TSEC: u32 = 1 << 27;
/// `NVMAP_HEAP_CARVEOUT_VIDMEM` (exclusive).
pub const NVMAP_HEAP_CARVEOUT_VIDMEM: u32 = 1 << 26;
/// `NVMAP_HEAP_CARVEOUT_GPU`.
pub const NVMAP_HEAP_CARVEOUT_GPU: u32 = 1 << 3;
/// `NVMAP_HEAP_CARVEOUT_FSI`.
pub const NVMAP_HEAP_CARVEOUT_FSI: u32 = 1 << 2;
/// `NVMAP_HEAP_CARVEOUT_IVM` (exclusive).
pub const NVMAP_HEAP_CARVEOUT_IVM: u32 = 1 << 1;
/// `NVMAP_HEAP_CARVEOUT_GENERIC`.
pub const NVMAP_HEAP_CARVEOUT_GENERIC: u32 = 1 << 0;
/// `NVMAP_HEAP_CARVEOUT_MASK`.
pub const NVMAP_HEAP_CARVEOUT_MASK: u32 = NVMAP_HEAP_IOVMM - 1;

/// `NVMAP_HANDLE_UNCACHEABLE` (cache mode, flags bits 1:0).
pub const NVMAP_HANDLE_UNCACHEABLE: u32 = 0;
/// `NVMAP_HANDLE_WRITE_COMBINE`: CPU normal non-cacheable.
pub const NVMAP_HANDLE_WRITE_COMBINE: u32 = 1;
/// `NVMAP_HANDLE_INNER_CACHEABLE`: CPU normal cacheable.
pub const NVMAP_HANDLE_INNER_CACHEABLE: u32 = 2;
/// `NVMAP_HANDLE_CACHEABLE`: CPU normal cacheable. (The seeds' "flags=5" was WC|SECURE.)
pub const NVMAP_HANDLE_CACHEABLE: u32 = 3;
/// `NVMAP_HANDLE_CACHE_FLAG`: mask of the cache mode.
pub const NVMAP_HANDLE_CACHE_FLAG: u32 = 3;
/// `NVMAP_HANDLE_SECURE`.
pub const NVMAP_HANDLE_SECURE: u32 = 1 << 2;
/// `NVMAP_HANDLE_KIND_SPECIFIED` (stripped by the kernel).
pub const NVMAP_HANDLE_KIND_SPECIFIED: u32 = 1 << 3;
/// `NVMAP_HANDLE_COMPR_SPECIFIED`.
pub const NVMAP_HANDLE_COMPR_SPECIFIED: u32 = 1 << 4;
/// `NVMAP_HANDLE_ZEROED_PAGES`.
pub const NVMAP_HANDLE_ZEROED_PAGES: u32 = 1 << 5;
/// `NVMAP_HANDLE_PHYS_CONTIG`.
pub const NVMAP_HANDLE_PHYS_CONTIG: u32 = 1 << 6;
/// `NVMAP_HANDLE_CACHE_SYNC`.
pub const NVMAP_HANDLE_CACHE_SYNC: u32 = 1 << 7;
/// `NVMAP_HANDLE_CACHE_SYNC_AT_RESERVE`.
pub const NVMAP_HANDLE_CACHE_SYNC_AT_RESERVE: u32 = 1 << 8;
/// `NVMAP_HANDLE_RO`.
pub const NVMAP_HANDLE_RO: u32 = 1 << 9;
/// Shift of the 16-bit allocation tag in `nvmap_alloc_handle.flags` (bits 31:16).
pub const NVMAP_HANDLE_TAG_SHIFT: u32 = 16;
/// Mask of the tag bits in `nvmap_alloc_handle.flags`.
pub const NVMAP_HANDLE_TAG_MASK: u32 = 0xffff << NVMAP_HANDLE_TAG_SHIFT;
/// `NUMA_NO_NODE`: `numa_nid` value for "any node".
pub const NVMAP_NUMA_NO_NODE: i32 = -1;

/// `NVMAP_CACHE_OP_WB`.
pub const NVMAP_CACHE_OP_WB: i32 = 0;
/// `NVMAP_CACHE_OP_INV`.
pub const NVMAP_CACHE_OP_INV: i32 = 1;
/// `NVMAP_CACHE_OP_WB_INV`.
pub const NVMAP_CACHE_OP_WB_INV: i32 = 2;

/// `struct nvmap_create_handle` (8). Nested unions in the header:
/// word 0 = `size` (CREATE in) | `fd` (GET_FD out, FROM_FD in); word 1 = `handle`
/// (CREATE out, GET_FD in, FROM_FD out); the 8 bytes together = `size64` (CREATE_64 in),
/// whose low word is `handle64` (CREATE_64 out).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct nvmap_create_handle {
    /// `size` (in, CREATE) / `fd` (out, GET_FD).
    pub size: u32,
    /// `handle`.
    pub handle: u32,
}
const _: () = assert!(size_of::<nvmap_create_handle>() == 8);
const _: () = assert!(offset_of!(nvmap_create_handle, handle) == 4);

impl nvmap_create_handle {
    /// CREATE arguments.
    pub const fn create(size: u32) -> Self {
        Self { size, handle: 0 }
    }
    /// GET_FD arguments.
    pub const fn get_fd(handle: u32) -> Self {
        Self { size: 0, handle }
    }
    /// FROM_FD arguments.
    pub const fn from_fd(fd: i32) -> Self {
        Self {
            size: fd as u32,
            handle: 0,
        }
    }
    /// CREATE_64 arguments (`size64`).
    pub const fn create_64(size64: u64) -> Self {
        Self {
            size: size64 as u32,
            handle: (size64 >> 32) as u32,
        }
    }
    /// `fd` (GET_FD out; the same word as `size`).
    pub const fn fd(&self) -> i32 {
        self.size as i32
    }
    /// `size64` (CREATE_64 in).
    pub const fn size64(&self) -> u64 {
        (self.size as u64) | ((self.handle as u64) << 32)
    }
    /// `handle64` (CREATE_64 out; the low word).
    pub const fn handle64(&self) -> u32 {
        self.size
    }
}

/// `struct nvmap_alloc_handle` (20).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct nvmap_alloc_handle {
    pub handle: u32,
    /// `NVMAP_HEAP_*`.
    pub heap_mask: u32,
    /// Cache mode (bits 1:0), `NVMAP_HANDLE_*` bits, tag in bits 31:16.
    pub flags: u32,
    /// 0 or a power of two; raised to 4096.
    pub align: u32,
    /// 0 or -1 on Orin.
    pub numa_nid: i32,
}
const _: () = assert!(size_of::<nvmap_alloc_handle>() == 20);
const _: () = assert!(offset_of!(nvmap_alloc_handle, heap_mask) == 4);
const _: () = assert!(offset_of!(nvmap_alloc_handle, flags) == 8);
const _: () = assert!(offset_of!(nvmap_alloc_handle, align) == 12);
const _: () = assert!(offset_of!(nvmap_alloc_handle, numa_nid) == 16);

/// `struct nvmap_cache_op` (24).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct nvmap_cache_op {
    /// User VA inside an mmap of this handle.
    pub addr: u64,
    pub handle: u32,
    pub len: u32,
    pub op: i32,
    /// Implicit tail padding in the header.
    pub _pad0: u32,
}
const _: () = assert!(size_of::<nvmap_cache_op>() == 24);
const _: () = assert!(offset_of!(nvmap_cache_op, op) == 16);

/// `struct nvmap_cache_op_64` (32).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct nvmap_cache_op_64 {
    pub addr: u64,
    pub handle: u32,
    /// Implicit padding in the header.
    pub _pad0: u32,
    pub len: u64,
    pub op: i32,
    /// Implicit tail padding in the header.
    pub _pad1: u32,
}
const _: () = assert!(size_of::<nvmap_cache_op_64>() == 32);
const _: () = assert!(offset_of!(nvmap_cache_op_64, len) == 16);
const _: () = assert!(offset_of!(nvmap_cache_op_64, op) == 24);

/// `struct nvmap_rw_handle` (56).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct nvmap_rw_handle {
    pub addr: u64,
    pub handle: u32,
    /// Implicit padding in the header.
    pub _pad0: u32,
    pub offset: u64,
    pub elem_size: u64,
    pub hmem_stride: u64,
    pub user_stride: u64,
    pub count: u64,
}
const _: () = assert!(size_of::<nvmap_rw_handle>() == 56);
const _: () = assert!(offset_of!(nvmap_rw_handle, offset) == 16);
const _: () = assert!(offset_of!(nvmap_rw_handle, count) == 48);

/// `struct nvmap_available_heaps` (8).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct nvmap_available_heaps {
    /// Carveouts only; IOVMM is never listed.
    pub heaps: u64,
}
const _: () = assert!(size_of::<nvmap_available_heaps>() == 8);

/// `struct nvmap_query_heap_params` (48).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct nvmap_query_heap_params {
    pub heap_mask: u32,
    pub flags: u32,
    pub contig: u8,
    /// Implicit padding in the header.
    pub _pad0: [u8; 7],
    pub total: u64,
    pub free: u64,
    pub largest_free_block: u64,
    pub granule_size: u32,
    /// Implicit tail padding in the header.
    pub _pad1: u32,
}
const _: () = assert!(size_of::<nvmap_query_heap_params>() == 48);
const _: () = assert!(offset_of!(nvmap_query_heap_params, total) == 16);
const _: () = assert!(offset_of!(nvmap_query_heap_params, granule_size) == 40);

/// `struct nvmap_set_tag_label` (16).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct nvmap_set_tag_label {
    pub tag: u32,
    pub len: u32,
    pub addr: u64,
}
const _: () = assert!(size_of::<nvmap_set_tag_label>() == 16);

const N: u8 = NVMAP_IOC_MAGIC;

/// N/0 RW: create a handle of `size` bytes (rounded to 4 KiB); size 0 → EINVAL.
pub const NVMAP_IOC_CREATE: u64 = iowr(N, 0, size_of::<nvmap_create_handle>());
/// N/1 RW: create with a 64-bit size.
pub const NVMAP_IOC_CREATE_64: u64 = iowr(N, 1, size_of::<nvmap_create_handle>());
/// N/3 W: allocate backing memory.
pub const NVMAP_IOC_ALLOC: u64 = iow(N, 3, size_of::<nvmap_alloc_handle>());
/// N/4 N: free; the argument is the handle ID by value.
pub const NVMAP_IOC_FREE: u64 = io(N, 4);
/// N/6 W.
pub const NVMAP_IOC_WRITE: u64 = iow(N, 6, size_of::<nvmap_rw_handle>());
/// N/7 W.
pub const NVMAP_IOC_READ: u64 = iow(N, 7, size_of::<nvmap_rw_handle>());
/// N/12 W (32-bit length).
pub const NVMAP_IOC_CACHE: u64 = iow(N, 12, size_of::<nvmap_cache_op>());
/// N/12 W (64-bit length).
pub const NVMAP_IOC_CACHE_64: u64 = iow(N, 12, size_of::<nvmap_cache_op_64>());
/// N/15 RW: new dma-buf fd for a handle (returned in word 0).
pub const NVMAP_IOC_GET_FD: u64 = iowr(N, 15, size_of::<nvmap_create_handle>());
/// N/16 RW: handle from a dma-buf fd.
pub const NVMAP_IOC_FROM_FD: u64 = iowr(N, 16, size_of::<nvmap_create_handle>());
/// N/24 W.
pub const NVMAP_IOC_SET_TAG_LABEL: u64 = iow(N, 24, size_of::<nvmap_set_tag_label>());
/// N/25 R.
pub const NVMAP_IOC_GET_AVAILABLE_HEAPS: u64 = ior(N, 25, size_of::<nvmap_available_heaps>());
/// N/105 R.
pub const NVMAP_IOC_QUERY_HEAP_PARAMS: u64 = ior(N, 105, size_of::<nvmap_query_heap_params>());
