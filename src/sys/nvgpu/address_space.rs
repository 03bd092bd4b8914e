//! The address-space fd ('A', `nvgpu-as.h`): channel binding, VA reservations, buffer
//! mappings, the read-only syncpoint map.

use crate::sys::ioctl::{check_off, check_size, ior, iowr};
use core::mem::size_of;

/// `NVGPU_AS_IOCTL_MAGIC` ('A'), address-space fd.
pub const NVGPU_AS_IOCTL_MAGIC: u8 = b'A';
/// Highest AS ioctl nr.
pub const NVGPU_AS_IOCTL_LAST: u32 = 14;
/// Largest AS argument.
pub const NVGPU_AS_IOCTL_MAX_ARG_SIZE: usize = 40;

/// `NVGPU_AS_ALLOC_SPACE_FLAGS_FIXED_OFFSET`.
pub const NVGPU_AS_ALLOC_SPACE_FLAGS_FIXED_OFFSET: u32 = 0x1;
/// `NVGPU_AS_ALLOC_SPACE_FLAGS_SPARSE`.
pub const NVGPU_AS_ALLOC_SPACE_FLAGS_SPARSE: u32 = 0x2;

/// `struct nvgpu_as_bind_channel_args` (4).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct nvgpu_as_bind_channel_args {
    pub channel_fd: u32,
}
check_size!(nvgpu_as_bind_channel_args, 4);

/// `struct nvgpu_as_alloc_space_args` (32). `o_a` is the header's union `{offset, align}`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct nvgpu_as_alloc_space_args {
    pub pages: u64,
    pub page_size: u32,
    pub flags: u32,
    /// `o_a.offset` (in if FIXED_OFFSET, out always) / `o_a.align` (ignored by r36).
    pub o_a: u64,
    pub padding: [u32; 2],
}
check_size!(nvgpu_as_alloc_space_args, 32);
check_off!(nvgpu_as_alloc_space_args, page_size, 8);
check_off!(nvgpu_as_alloc_space_args, flags, 12);
check_off!(nvgpu_as_alloc_space_args, o_a, 16);

/// `struct nvgpu_as_free_space_args` (32).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct nvgpu_as_free_space_args {
    pub offset: u64,
    pub pages: u64,
    pub page_size: u32,
    pub padding: [u32; 3],
}
check_size!(nvgpu_as_free_space_args, 32);

/// `NVGPU_AS_MAP_BUFFER_FLAGS_FIXED_OFFSET`.
pub const NVGPU_AS_MAP_BUFFER_FLAGS_FIXED_OFFSET: u32 = 1 << 0;
/// `NVGPU_AS_MAP_BUFFER_FLAGS_CACHEABLE` (GPU L2-cacheable PTE; without it the PTE is volatile).
pub const NVGPU_AS_MAP_BUFFER_FLAGS_CACHEABLE: u32 = 1 << 2;
/// `NVGPU_AS_MAP_BUFFER_FLAGS_UNMAPPED_PTE` (deprecated).
pub const NVGPU_AS_MAP_BUFFER_FLAGS_UNMAPPED_PTE: u32 = 1 << 5;
/// `NVGPU_AS_MAP_BUFFER_FLAGS_MAPPABLE_COMPBITS` (ignored).
pub const NVGPU_AS_MAP_BUFFER_FLAGS_MAPPABLE_COMPBITS: u32 = 1 << 6;
/// `NVGPU_AS_MAP_BUFFER_FLAGS_L3_ALLOC`.
pub const NVGPU_AS_MAP_BUFFER_FLAGS_L3_ALLOC: u32 = 1 << 7;
/// `NVGPU_AS_MAP_BUFFER_FLAGS_SYSTEM_COHERENT`.
pub const NVGPU_AS_MAP_BUFFER_FLAGS_SYSTEM_COHERENT: u32 = 1 << 9;
/// `NVGPU_AS_MAP_BUFFER_FLAGS_TEGRA_RAW`.
pub const NVGPU_AS_MAP_BUFFER_FLAGS_TEGRA_RAW: u32 = 1 << 12;
/// `NVGPU_AS_MAP_BUFFER_FLAGS_ACCESS_BITMASK_OFFSET`.
pub const NVGPU_AS_MAP_BUFFER_FLAGS_ACCESS_BITMASK_OFFSET: u32 = 10;
/// `NVGPU_AS_MAP_BUFFER_FLAGS_ACCESS_BITMASK_SIZE`.
pub const NVGPU_AS_MAP_BUFFER_FLAGS_ACCESS_BITMASK_SIZE: u32 = 2;
/// `NVGPU_AS_MAP_BUFFER_ACCESS_DEFAULT`.
pub const NVGPU_AS_MAP_BUFFER_ACCESS_DEFAULT: u32 = 0;
/// `NVGPU_AS_MAP_BUFFER_ACCESS_READ_ONLY`.
pub const NVGPU_AS_MAP_BUFFER_ACCESS_READ_ONLY: u32 = 1;
/// `NVGPU_AS_MAP_BUFFER_ACCESS_READ_WRITE`.
pub const NVGPU_AS_MAP_BUFFER_ACCESS_READ_WRITE: u32 = 2;
/// Every MAP_BUFFER_EX flag bit r36 accepts; any other bit → EINVAL ("Extra flags").
pub const NVGPU_AS_MAP_BUFFER_FLAGS_VALID_MASK: u32 = NVGPU_AS_MAP_BUFFER_FLAGS_FIXED_OFFSET
    | NVGPU_AS_MAP_BUFFER_FLAGS_CACHEABLE
    | NVGPU_AS_MAP_BUFFER_FLAGS_UNMAPPED_PTE
    | NVGPU_AS_MAP_BUFFER_FLAGS_MAPPABLE_COMPBITS
    | NVGPU_AS_MAP_BUFFER_FLAGS_L3_ALLOC
    | NVGPU_AS_MAP_BUFFER_FLAGS_SYSTEM_COHERENT
    | (3 << NVGPU_AS_MAP_BUFFER_FLAGS_ACCESS_BITMASK_OFFSET)
    | NVGPU_AS_MAP_BUFFER_FLAGS_TEGRA_RAW;
/// `NV_KIND_INVALID`.
pub const NV_KIND_INVALID: i16 = -1;
/// PTE kind 0: pitch (incompressible), proven on hardware.
pub const NV_KIND_PITCH: i16 = 0;

/// `struct nvgpu_as_map_buffer_ex_args` (40).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct nvgpu_as_map_buffer_ex_args {
    pub flags: u32,
    pub compr_kind: i16,
    pub incompr_kind: i16,
    pub dmabuf_fd: u32,
    /// Ignored by r36.
    pub page_size: u32,
    /// in: FIXED only.
    pub buffer_offset: u64,
    /// in: FIXED only, 0 = whole buffer.
    pub mapping_size: u64,
    /// in: 0 unless FIXED; out: GPU VA.
    pub offset: u64,
}
check_size!(nvgpu_as_map_buffer_ex_args, 40);
check_off!(nvgpu_as_map_buffer_ex_args, compr_kind, 4);
check_off!(nvgpu_as_map_buffer_ex_args, incompr_kind, 6);
check_off!(nvgpu_as_map_buffer_ex_args, dmabuf_fd, 8);
check_off!(nvgpu_as_map_buffer_ex_args, page_size, 12);
check_off!(nvgpu_as_map_buffer_ex_args, buffer_offset, 16);
check_off!(nvgpu_as_map_buffer_ex_args, mapping_size, 24);
check_off!(nvgpu_as_map_buffer_ex_args, offset, 32);

/// `struct nvgpu_as_unmap_buffer_args` (8).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct nvgpu_as_unmap_buffer_args {
    /// in: exact start VA of a mapping.
    pub offset: u64,
}
check_size!(nvgpu_as_unmap_buffer_args, 8);

/// `struct nvgpu_as_va_region` (24).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct nvgpu_as_va_region {
    pub offset: u64,
    pub page_size: u32,
    pub reserved: u32,
    pub pages: u64,
}
check_size!(nvgpu_as_va_region, 24);

/// `struct nvgpu_as_get_va_regions_args` (16).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct nvgpu_as_get_va_regions_args {
    pub buf_addr: u64,
    pub buf_size: u32,
    pub reserved: u32,
}
check_size!(nvgpu_as_get_va_regions_args, 16);

/// `struct nvgpu_as_map_buffer_batch_args` (32).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct nvgpu_as_map_buffer_batch_args {
    pub unmaps: u64,
    pub maps: u64,
    pub num_unmaps: u32,
    pub num_maps: u32,
    pub reserved: u64,
}
check_size!(nvgpu_as_map_buffer_batch_args, 32);

/// `struct nvgpu_as_get_sync_ro_map_args` (16, out).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct nvgpu_as_get_sync_ro_map_args {
    pub base_gpuva: u64,
    pub sync_size: u32,
    pub num_syncpoints: u32,
}
check_size!(nvgpu_as_get_sync_ro_map_args, 16);
const A: u8 = NVGPU_AS_IOCTL_MAGIC;

/// A/1 RW.
pub const NVGPU_AS_IOCTL_BIND_CHANNEL: u64 = iowr(A, 1, size_of::<nvgpu_as_bind_channel_args>());
/// A/3 RW.
pub const NVGPU_AS_IOCTL_FREE_SPACE: u64 = iowr(A, 3, size_of::<nvgpu_as_free_space_args>());
/// A/5 RW.
pub const NVGPU_AS_IOCTL_UNMAP_BUFFER: u64 = iowr(A, 5, size_of::<nvgpu_as_unmap_buffer_args>());
/// A/6 RW (64-bit `pages`; the legacy 24-byte A/2 form is not used).
pub const NVGPU_AS_IOCTL_ALLOC_SPACE: u64 = iowr(A, 6, size_of::<nvgpu_as_alloc_space_args>());
/// A/7 RW.
pub const NVGPU_AS_IOCTL_MAP_BUFFER_EX: u64 = iowr(A, 7, size_of::<nvgpu_as_map_buffer_ex_args>());
/// A/8 RW.
pub const NVGPU_AS_IOCTL_GET_VA_REGIONS: u64 =
    iowr(A, 8, size_of::<nvgpu_as_get_va_regions_args>());
/// A/11 RW.
pub const NVGPU_AS_IOCTL_MAP_BUFFER_BATCH: u64 =
    iowr(A, 11, size_of::<nvgpu_as_map_buffer_batch_args>());
/// A/12 R.
pub const NVGPU_AS_IOCTL_GET_SYNC_RO_MAP: u64 =
    ior(A, 12, size_of::<nvgpu_as_get_sync_ro_map_args>());
