//! Memory objects: `NV_MEMORY_ALLOCATION_PARAMS` (video and system memory, `NVOS32_*`
//! flags), the `FERMI_VASPACE_A` and `NV01_MEMORY_VIRTUAL` parameters, and the framebuffer
//! controls (`NV2080_CTRL_CMD_FB_*`). The per-branch size of the VA-space parameters is in
//! [`crate::sys::rm::RmLayout`].

/// `NV01_MEMORY_LOCAL_USER` / `NV01_MEMORY_SYSTEM` allocation parameters (128 bytes, 550+).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct NV_MEMORY_ALLOCATION_PARAMS {
    pub owner: u32,
    pub type_: u32,
    pub flags: u32,
    pub width: u32,
    pub height: u32,
    pub pitch: i32,
    pub attr: u32,
    pub attr2: u32,
    pub format: u32,
    pub comprCovg: u32,
    pub zcullCovg: u32,
    pub _pad: u32,
    pub rangeLo: u64,
    pub rangeHi: u64,
    pub size: u64,
    pub alignment: u64,
    pub offset: u64,
    pub limit: u64,
    pub address: u64,
    pub ctagOffset: u32,
    pub hVASpace: u32,
    pub internalflags: u32,
    pub tag: u32,
    pub numaNode: i32,
    pub _pad2: u32,
}
const _: () = assert!(core::mem::size_of::<NV_MEMORY_ALLOCATION_PARAMS>() == 128);

/// NVOS32 type: IMAGE (generic video memory).
pub const NVOS32_TYPE_IMAGE: u32 = 0;
/// NVOS32 type: NOTIFIER.
pub const NVOS32_TYPE_NOTIFIER: u32 = 13;
/// NVOS32 alloc flags.
pub const NVOS32_ALLOC_FLAGS_IGNORE_BANK_PLACEMENT: u32 = 0x0000_0001;
/// Force the alignment given in the params.
pub const NVOS32_ALLOC_FLAGS_ALIGNMENT_FORCE: u32 = 0x0000_0100;
/// The memory handle is provided by the caller / RM_ALLOC path.
pub const NVOS32_ALLOC_FLAGS_MEMORY_HANDLE_PROVIDED: u32 = 0x0000_4000;
/// No RM-side CPU mapping is needed.
pub const NVOS32_ALLOC_FLAGS_MAP_NOT_REQUIRED: u32 = 0x0000_8000;
/// Keep video memory across suspend (video memory only).
pub const NVOS32_ALLOC_FLAGS_PERSISTENT_VIDMEM: u32 = 0x0001_0000;
/// attr PAGE_SIZE 24:23.
pub const NVOS32_ATTR_PAGE_SIZE_DEFAULT: u32 = 0 << 23;
/// 4 KiB pages.
pub const NVOS32_ATTR_PAGE_SIZE_4KB: u32 = 1 << 23;
/// Big pages (64 KiB).
pub const NVOS32_ATTR_PAGE_SIZE_BIG: u32 = 2 << 23;
/// Huge pages (size picked in attr2).
pub const NVOS32_ATTR_PAGE_SIZE_HUGE: u32 = 3 << 23;
/// attr LOCATION 26:25 = VIDMEM.
pub const NVOS32_ATTR_LOCATION_VIDMEM: u32 = 0 << 25;
/// attr LOCATION 26:25 = PCI (system memory).
pub const NVOS32_ATTR_LOCATION_PCI: u32 = 1 << 25;
/// attr PHYSICALITY 28:27 = NONCONTIGUOUS.
pub const NVOS32_ATTR_PHYSICALITY_NONCONTIGUOUS: u32 = 1 << 27;
/// attr PHYSICALITY 28:27 = CONTIGUOUS.
pub const NVOS32_ATTR_PHYSICALITY_CONTIGUOUS: u32 = 2 << 27;
/// attr PHYSICALITY 28:27 = ALLOW_NONCONTIGUOUS.
pub const NVOS32_ATTR_PHYSICALITY_ALLOW_NONCONTIGUOUS: u32 = 3 << 27;
/// attr2 ZBC 1:0 = PREFER_NO_ZBC.
pub const NVOS32_ATTR2_ZBC_PREFER_NO_ZBC: u32 = 1;
/// attr2 GPU_CACHEABLE 3:2 = YES.
pub const NVOS32_ATTR2_GPU_CACHEABLE_YES: u32 = 1 << 2;
/// attr2 GPU_CACHEABLE 3:2 = NO.
pub const NVOS32_ATTR2_GPU_CACHEABLE_NO: u32 = 2 << 2;
/// attr2 PAGE_SIZE_HUGE 21:20 = 2 MiB.
pub const NVOS32_ATTR2_PAGE_SIZE_HUGE_2MB: u32 = 1 << 20;
/// PTE kind GENERIC_MEMORY (`format`).
pub const NV_MMU_PTE_KIND_GENERIC_MEMORY: u32 = 6;

/// `FERMI_VASPACE_A` allocation parameters, 580+ layout (56 bytes; `pasid` is new in 580).
/// The 570/575 kernel struct is the first 48 bytes of this one.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct NV_VASPACE_ALLOCATION_PARAMETERS {
    pub index: u32,
    pub flags: u32,
    pub vaSize: u64,
    pub vaStartInternal: u64,
    pub vaLimitInternal: u64,
    pub bigPageSize: u32,
    pub _pad: u32,
    pub vaBase: u64,
    pub pasid: u32,
    pub _pad2: u32,
}
const _: () = assert!(core::mem::size_of::<NV_VASPACE_ALLOCATION_PARAMETERS>() == 56);

/// `NV_VASPACE_ALLOCATION_INDEX_GPU_NEW`.
pub const NV_VASPACE_ALLOCATION_INDEX_GPU_NEW: u32 = 0;
/// VA space flag: IS_EXTERNALLY_OWNED (bit 3; UVM owns the page tables).
pub const NV_VASPACE_ALLOCATION_FLAGS_IS_EXTERNALLY_OWNED: u32 = 1 << 3;
/// VA space flag: ENABLE_PAGE_FAULTING (bit 6).
pub const NV_VASPACE_ALLOCATION_FLAGS_ENABLE_PAGE_FAULTING: u32 = 1 << 6;

/// `NV01_MEMORY_VIRTUAL` allocation parameters (24 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct NV_MEMORY_VIRTUAL_ALLOCATION_PARAMS {
    pub offset: u64,
    pub limit: u64,
    pub hVASpace: u32,
    pub _pad: u32,
}
const _: () = assert!(core::mem::size_of::<NV_MEMORY_VIRTUAL_ALLOCATION_PARAMS>() == 24);
/// Subdevice: framebuffer information (pointer-list form).
pub const NV2080_CTRL_CMD_FB_GET_INFO: u32 = 0x2080_1301;
/// Subdevice: framebuffer information (inline-list form).
pub const NV2080_CTRL_CMD_FB_GET_INFO_V2: u32 = 0x2080_1303;
/// Subdevice: flush GPU caches.
pub const NV2080_CTRL_CMD_FB_FLUSH_GPU_CACHE: u32 = 0x2080_130E;

/// One FB info query (8 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct NV2080_CTRL_FB_INFO {
    pub index: u32,
    pub data: u32,
}
const _: () = assert!(core::mem::size_of::<NV2080_CTRL_FB_INFO>() == 8);

/// `NV2080_CTRL_CMD_FB_GET_INFO` parameters (16 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct NV2080_CTRL_FB_GET_INFO_PARAMS {
    pub fbInfoListSize: u32,
    pub _pad: u32,
    /// User pointer to an [`NV2080_CTRL_FB_INFO`] array.
    pub fbInfoList: u64,
}
const _: () = assert!(core::mem::size_of::<NV2080_CTRL_FB_GET_INFO_PARAMS>() == 16);

/// FB info index: BAR1 size (KiB).
pub const NV2080_CTRL_FB_INFO_INDEX_BAR1_SIZE: u32 = 0x05;
/// FB info index: framebuffer RAM physically present (KiB).
pub const NV2080_CTRL_FB_INFO_INDEX_RAM_SIZE: u32 = 0x07;
/// FB info index: total video memory (KiB).
pub const NV2080_CTRL_FB_INFO_INDEX_TOTAL_RAM_SIZE: u32 = 0x08;
/// FB info index: RAM available for user allocations (KiB).
pub const NV2080_CTRL_FB_INFO_INDEX_HEAP_SIZE: u32 = 0x09;
/// FB info index: CPU-mappable heap (KiB).
pub const NV2080_CTRL_FB_INFO_INDEX_MAPPABLE_HEAP_SIZE: u32 = 0x0A;
/// FB info index: memory bus width (bits).
pub const NV2080_CTRL_FB_INFO_INDEX_BUS_WIDTH: u32 = 0x0B;
/// FB info index: free heap (KiB).
pub const NV2080_CTRL_FB_INFO_INDEX_HEAP_FREE: u32 = 0x16;
/// FB info index: L2 cache size (bytes).
pub const NV2080_CTRL_FB_INFO_INDEX_L2CACHE_SIZE: u32 = 0x1B;
/// FB info index: whether ECC is enabled on the framebuffer partitions (0 or 1).
pub const NV2080_CTRL_FB_INFO_FBPA_ECC_ENABLED: u32 = 0x2D;
/// FB info index: unused BAR1 space (KiB).
pub const NV2080_CTRL_FB_INFO_INDEX_BAR1_AVAIL_SIZE: u32 = 0x1D;
