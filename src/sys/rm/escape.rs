//! The nvidia.ko escapes (`nv-ioctl-numbers.h`, `nv_escape.h`, `nvos.h`, `nv-ioctl.h`): the
//! escape numbers, the request encoding, and the argument structs of `NV_ESC_RM_ALLOC`,
//! `NV_ESC_RM_CONTROL`, `NV_ESC_RM_FREE`, the memory-mapping escapes and the OS escapes (card
//! info, REGISTER_FD, version check). The 570/575 layout of `NVOS46_PARAMETERS` is in
//! [`crate::sys::rm::branch`].

/// The ioctl "type" byte of every nvidia.ko escape (`'F'`).
pub const NV_IOCTL_MAGIC: u32 = 0x46;
/// First "OS" escape number.
pub const NV_IOCTL_BASE: u32 = 200;

/// RM escape: allocate memory from an OS descriptor or the legacy path (device fd only).
pub const NV_ESC_RM_ALLOC_MEMORY: u32 = 0x27;
/// RM escape: free an object ([`NVOS00_PARAMETERS`]).
pub const NV_ESC_RM_FREE: u32 = 0x29;
/// RM escape: control call ([`NVOS54_PARAMETERS`]).
pub const NV_ESC_RM_CONTROL: u32 = 0x2A;
/// RM escape: allocate an object ([`NVOS21_PARAMETERS`] or [`NVOS64_PARAMETERS`]).
pub const NV_ESC_RM_ALLOC: u32 = 0x2B;
/// RM escape: duplicate an object ([`NVOS55_PARAMETERS`]).
pub const NV_ESC_RM_DUP_OBJECT: u32 = 0x34;
/// RM escape: legacy heap control (NVOS32; unused here).
pub const NV_ESC_RM_VID_HEAP_CONTROL: u32 = 0x4A;
/// RM escape: CPU-map memory ([`nv_ioctl_nvos33_parameters_with_fd`]).
pub const NV_ESC_RM_MAP_MEMORY: u32 = 0x4E;
/// RM escape: undo [`NV_ESC_RM_MAP_MEMORY`] ([`NVOS34_PARAMETERS`]).
pub const NV_ESC_RM_UNMAP_MEMORY: u32 = 0x4F;
/// RM escape: GPU-map memory into an RM VA space ([`NVOS46_PARAMETERS`]).
pub const NV_ESC_RM_MAP_MEMORY_DMA: u32 = 0x57;
/// RM escape: undo [`NV_ESC_RM_MAP_MEMORY_DMA`] ([`NVOS47_PARAMETERS`]).
pub const NV_ESC_RM_UNMAP_MEMORY_DMA: u32 = 0x58;

/// OS escape: list the GPUs ([`nv_ioctl_card_info_t`] array).
pub const NV_ESC_CARD_INFO: u32 = NV_IOCTL_BASE;
/// OS escape: link a device fd to a control fd ([`nv_ioctl_register_fd_t`]).
pub const NV_ESC_REGISTER_FD: u32 = NV_IOCTL_BASE + 1;
/// OS escape: allocate an OS event.
pub const NV_ESC_ALLOC_OS_EVENT: u32 = NV_IOCTL_BASE + 6;
/// OS escape: free an OS event.
pub const NV_ESC_FREE_OS_EVENT: u32 = NV_IOCTL_BASE + 7;
/// OS escape: query the status code of a GPU ([`nv_ioctl_status_code_t`]).
pub const NV_ESC_STATUS_CODE: u32 = NV_IOCTL_BASE + 9;
/// OS escape: version check / query ([`nv_ioctl_rm_api_version_t`]).
pub const NV_ESC_CHECK_VERSION_STR: u32 = NV_IOCTL_BASE + 10;
/// OS escape: indirect transfer for payloads above 16 KiB ([`nv_ioctl_xfer_t`]).
pub const NV_ESC_IOCTL_XFER_CMD: u32 = NV_IOCTL_BASE + 11;
/// OS escape: attach GPUs to a control fd (libcuda only).
pub const NV_ESC_ATTACH_GPUS_TO_FD: u32 = NV_IOCTL_BASE + 12;
/// OS escape: query the device interrupt status.
pub const NV_ESC_QUERY_DEVICE_INTR: u32 = NV_IOCTL_BASE + 13;
/// OS escape: system parameters ([`nv_ioctl_sys_params_t`]).
pub const NV_ESC_SYS_PARAMS: u32 = NV_IOCTL_BASE + 14;
/// OS escape: NUMA information.
pub const NV_ESC_NUMA_INFO: u32 = NV_IOCTL_BASE + 15;
/// OS escape: set NUMA status.
pub const NV_ESC_SET_NUMA_STATUS: u32 = NV_IOCTL_BASE + 16;
/// OS escape: export memory as a dma-buf.
pub const NV_ESC_EXPORT_TO_DMABUF_FD: u32 = NV_IOCTL_BASE + 17;
/// OS escape: wait for the asynchronous device open ([`nv_ioctl_wait_open_complete_t`]).
pub const NV_ESC_WAIT_OPEN_COMPLETE: u32 = NV_IOCTL_BASE + 18;

/// `NV_ESC_CHECK_VERSION_STR` command: compare the whole version string.
pub const NV_RM_API_VERSION_CMD_STRICT: u32 = 0;
/// `NV_ESC_CHECK_VERSION_STR` command: compare up to the first '.'.
pub const NV_RM_API_VERSION_CMD_RELAXED: u32 = b'1' as u32;
/// `NV_ESC_CHECK_VERSION_STR` command: return the kernel's version string, no check.
pub const NV_RM_API_VERSION_CMD_QUERY: u32 = b'2' as u32;
/// `reply` value when the command was recognised.
pub const NV_RM_API_VERSION_REPLY_RECOGNIZED: u32 = 1;

/// Largest payload the ioctl size field can carry (the kernel caps copies at 16 KiB).
pub const NV_ABSOLUTE_MAX_IOCTL_SIZE: usize = 16384;

/// The request number nvidia.ko expects: `_IOWR('F', nr, size)`. The driver decodes only the
/// number and the size (rm-kernel-interface.md §1.1).
pub const fn nv_ioctl_request(nr: u32, size: usize) -> u64 {
    0xC000_0000 | ((size as u64 & 0x3FFF) << 16) | ((NV_IOCTL_MAGIC as u64) << 8) | nr as u64
}

/// `NV_ESC_RM_ALLOC` argument (32 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct NVOS21_PARAMETERS {
    pub hRoot: u32,
    pub hObjectParent: u32,
    /// In: the new handle (0 = RM chooses). Out: the handle.
    pub hObjectNew: u32,
    pub hClass: u32,
    /// User pointer to the class's allocation parameters (or 0).
    pub pAllocParms: u64,
    /// Ignored for non-serialised allocations: RM copies its own `sizeof` (§1.3).
    pub paramsSize: u32,
    pub status: u32,
}
const _: () = assert!(core::mem::size_of::<NVOS21_PARAMETERS>() == 32);

/// `NV_ESC_RM_ALLOC` argument with access rights and flags (48 bytes; libcuda-style).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct NVOS64_PARAMETERS {
    pub hRoot: u32,
    pub hObjectParent: u32,
    pub hObjectNew: u32,
    pub hClass: u32,
    pub pAllocParms: u64,
    pub pRightsRequested: u64,
    pub paramsSize: u32,
    pub flags: u32,
    pub status: u32,
    pub _pad: u32,
}
const _: () = assert!(core::mem::size_of::<NVOS64_PARAMETERS>() == 48);

/// `NV_ESC_RM_CONTROL` argument (32 bytes). `paramsSize` is checked against the control.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct NVOS54_PARAMETERS {
    pub hClient: u32,
    pub hObject: u32,
    pub cmd: u32,
    pub flags: u32,
    pub params: u64,
    pub paramsSize: u32,
    pub status: u32,
}
const _: () = assert!(core::mem::size_of::<NVOS54_PARAMETERS>() == 32);

/// `NV_ESC_RM_FREE` argument (16 bytes). Freeing the client handle frees its whole tree.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct NVOS00_PARAMETERS {
    pub hRoot: u32,
    pub hObjectParent: u32,
    pub hObjectOld: u32,
    pub status: u32,
}
const _: () = assert!(core::mem::size_of::<NVOS00_PARAMETERS>() == 16);

/// `NV_ESC_RM_ALLOC_MEMORY` parameters (48 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct NVOS02_PARAMETERS {
    pub hRoot: u32,
    pub hObjectParent: u32,
    /// Caller-chosen, non-zero.
    pub hObjectNew: u32,
    pub hClass: u32,
    pub flags: u32,
    pub _pad: u32,
    /// User VA of the memory (OS descriptors).
    pub pMemory: u64,
    /// Size - 1.
    pub limit: u64,
    pub status: u32,
    pub _pad2: u32,
}
const _: () = assert!(core::mem::size_of::<NVOS02_PARAMETERS>() == 48);

/// `NV_ESC_RM_ALLOC_MEMORY` argument: [`NVOS02_PARAMETERS`] plus an fd (56 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct nv_ioctl_nvos02_parameters_with_fd {
    pub params: NVOS02_PARAMETERS,
    pub fd: i32,
    pub _pad: u32,
}
const _: () = assert!(core::mem::size_of::<nv_ioctl_nvos02_parameters_with_fd>() == 56);

/// NVOS02 flags: PHYSICALITY 7:4 = NONCONTIGUOUS.
pub const NVOS02_FLAGS_PHYSICALITY_NONCONTIGUOUS: u32 = 1 << 4;
/// NVOS02 flags: LOCATION 11:8 = PCI (system memory).
pub const NVOS02_FLAGS_LOCATION_PCI: u32 = 0 << 8;
/// NVOS02 flags: COHERENCY 15:12 = CACHED.
pub const NVOS02_FLAGS_COHERENCY_CACHED: u32 = 1 << 12;
/// NVOS02 flags: GPU_CACHEABLE bit 18.
pub const NVOS02_FLAGS_GPU_CACHEABLE_YES: u32 = 1 << 18;
/// NVOS02 flags: MAPPING 31:30 = NO_MAP.
pub const NVOS02_FLAGS_MAPPING_NO_MAP: u32 = 1 << 30;

/// `NV_ESC_RM_MAP_MEMORY` parameters (48 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct NVOS33_PARAMETERS {
    pub hClient: u32,
    /// Device or subdevice handle.
    pub hDevice: u32,
    pub hMemory: u32,
    pub _pad: u32,
    pub offset: u64,
    pub length: u64,
    /// Out: an opaque token to pass to unmap.
    pub pLinearAddress: u64,
    pub status: u32,
    pub flags: u32,
}
const _: () = assert!(core::mem::size_of::<NVOS33_PARAMETERS>() == 48);

/// `NV_ESC_RM_MAP_MEMORY` argument: [`NVOS33_PARAMETERS`] plus the fd that receives the mmap
/// context (56 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct nv_ioctl_nvos33_parameters_with_fd {
    pub params: NVOS33_PARAMETERS,
    pub fd: i32,
    pub _pad: u32,
}
const _: () = assert!(core::mem::size_of::<nv_ioctl_nvos33_parameters_with_fd>() == 56);

/// NVOS33 flags: ACCESS 1:0 = READ_WRITE.
pub const NVOS33_FLAGS_ACCESS_READ_WRITE: u32 = 0;
/// NVOS33 flags: ACCESS 1:0 = WRITE_ONLY.
pub const NVOS33_FLAGS_ACCESS_WRITE_ONLY: u32 = 2;
/// NVOS33 flags: ALLOW_MAPPING_ON_HCC (bit 26; confidential computing only).
pub const NVOS33_FLAGS_ALLOW_MAPPING_ON_HCC: u32 = 1 << 26;

/// `NV_ESC_RM_UNMAP_MEMORY` argument (32 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct NVOS34_PARAMETERS {
    pub hClient: u32,
    pub hDevice: u32,
    pub hMemory: u32,
    pub _pad: u32,
    /// The token [`NVOS33_PARAMETERS::pLinearAddress`] returned.
    pub pLinearAddress: u64,
    pub status: u32,
    pub flags: u32,
}
const _: () = assert!(core::mem::size_of::<NVOS34_PARAMETERS>() == 32);

/// `NV_ESC_RM_MAP_MEMORY_DMA` argument, 580+ layout (64 bytes; flags2 and kindOverride new).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct NVOS46_PARAMETERS {
    pub hClient: u32,
    pub hDevice: u32,
    pub hDma: u32,
    pub hMemory: u32,
    pub offset: u64,
    pub length: u64,
    pub flags: u32,
    pub flags2: u32,
    pub kindOverride: u32,
    pub _pad: u32,
    pub dmaOffset: u64,
    pub status: u32,
    pub _pad2: u32,
}
const _: () = assert!(core::mem::size_of::<NVOS46_PARAMETERS>() == 64);

/// `NV_ESC_RM_UNMAP_MEMORY_DMA` argument (48 bytes, 550+).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct NVOS47_PARAMETERS {
    pub hClient: u32,
    pub hDevice: u32,
    pub hDma: u32,
    pub hMemory: u32,
    pub flags: u32,
    pub _pad: u32,
    pub dmaOffset: u64,
    pub size: u64,
    pub status: u32,
    pub _pad2: u32,
}
const _: () = assert!(core::mem::size_of::<NVOS47_PARAMETERS>() == 48);

/// `NV_ESC_RM_DUP_OBJECT` argument (28 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct NVOS55_PARAMETERS {
    pub hClient: u32,
    pub hParent: u32,
    pub hObject: u32,
    pub hClientSrc: u32,
    pub hObjectSrc: u32,
    pub flags: u32,
    pub status: u32,
}
const _: () = assert!(core::mem::size_of::<NVOS55_PARAMETERS>() == 28);

/// PCI location of a GPU (12 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct nv_pci_info_t {
    pub domain: u32,
    pub bus: u8,
    pub slot: u8,
    pub function: u8,
    pub _pad: u8,
    pub vendor_id: u16,
    pub device_id: u16,
}
const _: () = assert!(core::mem::size_of::<nv_pci_info_t>() == 12);

/// One entry of the `NV_ESC_CARD_INFO` array (72 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct nv_ioctl_card_info_t {
    pub valid: u8,
    pub _pad: [u8; 3],
    pub pci_info: nv_pci_info_t,
    pub gpu_id: u32,
    pub interrupt_line: u16,
    pub _pad2: u16,
    pub reg_address: u64,
    pub reg_size: u64,
    pub fb_address: u64,
    pub fb_size: u64,
    pub minor_number: u32,
    pub dev_name: [u8; 10],
    pub _pad3: [u8; 2],
}
const _: () = assert!(core::mem::size_of::<nv_ioctl_card_info_t>() == 72);

/// Number of [`nv_ioctl_card_info_t`] entries we pass (the kernel needs at least one per GPU).
pub const NV_CARD_INFO_ENTRIES: usize = 64;

/// `NV_ESC_CHECK_VERSION_STR` argument (72 bytes in every branch).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct nv_ioctl_rm_api_version_t {
    pub cmd: u32,
    pub reply: u32,
    pub versionString: [u8; 64],
}
const _: () = assert!(core::mem::size_of::<nv_ioctl_rm_api_version_t>() == 72);
impl Default for nv_ioctl_rm_api_version_t {
    fn default() -> Self {
        bytemuck::Zeroable::zeroed()
    }
}

/// `NV_ESC_REGISTER_FD` argument (4 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct nv_ioctl_register_fd_t {
    pub ctl_fd: i32,
}
const _: () = assert!(core::mem::size_of::<nv_ioctl_register_fd_t>() == 4);

/// `NV_ESC_IOCTL_XFER_CMD` argument (16 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct nv_ioctl_xfer_t {
    pub cmd: u32,
    pub size: u32,
    pub ptr: u64,
}
const _: () = assert!(core::mem::size_of::<nv_ioctl_xfer_t>() == 16);

/// `NV_ESC_STATUS_CODE` argument (12 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct nv_ioctl_status_code_t {
    pub domain: u32,
    pub bus: u8,
    pub slot: u8,
    pub _pad: u16,
    pub status: u32,
}
const _: () = assert!(core::mem::size_of::<nv_ioctl_status_code_t>() == 12);

/// `NV_ESC_SYS_PARAMS` argument (8 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct nv_ioctl_sys_params_t {
    pub memblock_size: u64,
}
const _: () = assert!(core::mem::size_of::<nv_ioctl_sys_params_t>() == 8);

/// `NV_ESC_WAIT_OPEN_COMPLETE` argument (8 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct nv_ioctl_wait_open_complete_t {
    pub rc: i32,
    pub adapterStatus: u32,
}
const _: () = assert!(core::mem::size_of::<nv_ioctl_wait_open_complete_t>() == 8);

/// `NV_ESC_ALLOC_OS_EVENT` / `NV_ESC_FREE_OS_EVENT` argument (16 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct nv_ioctl_alloc_os_event_t {
    pub hClient: u32,
    pub hDevice: u32,
    pub fd: u32,
    pub Status: u32,
}
const _: () = assert!(core::mem::size_of::<nv_ioctl_alloc_os_event_t>() == 16);

/// Most memory objects one `NV_ESC_EXPORT_TO_DMABUF_FD` call takes (`NV_DMABUF_EXPORT_MAX_HANDLES`).
pub const NV_DMABUF_EXPORT_MAX_HANDLES: usize = 128;
/// `nv_ioctl_export_to_dma_buf_fd_t.mappingType`: the driver's choice.
pub const NV_DMABUF_EXPORT_MAPPING_TYPE_DEFAULT: u8 = 0;
/// `nv_ioctl_export_to_dma_buf_fd_t.mappingType`: importers map over PCIe.
pub const NV_DMABUF_EXPORT_MAPPING_TYPE_FORCE_PCIE: u8 = 1;

/// `NV_ESC_EXPORT_TO_DMABUF_FD` argument (`nv-ioctl.h`, 2608 bytes; issued on the GPU's device
/// fd): a new dma-buf fd (`fd`, or the dma-buf to add objects to with `index` > 0) of
/// `totalSize` bytes made of `numObjects` of `totalObjects` memory objects of `hClient`
/// (`handles`), each from `offsets[i]`, `sizes[i]` bytes (`kernel-open/nvidia/nv-dmabuf.c:
/// nv_dma_buf_export`).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
#[allow(non_snake_case)]
pub struct nv_ioctl_export_to_dma_buf_fd_t {
    pub fd: i32,
    pub hClient: u32,
    pub totalObjects: u32,
    pub numObjects: u32,
    pub index: u32,
    pub _pad0: u32,
    pub totalSize: u64,
    pub mappingType: u8,
    pub bAllowMmap: u8,
    pub _pad1: [u8; 2],
    pub handles: [u32; NV_DMABUF_EXPORT_MAX_HANDLES],
    pub _pad2: u32,
    pub offsets: [u64; NV_DMABUF_EXPORT_MAX_HANDLES],
    pub sizes: [u64; NV_DMABUF_EXPORT_MAX_HANDLES],
    pub status: u32,
    pub _pad3: u32,
}
const _: () = assert!(core::mem::size_of::<nv_ioctl_export_to_dma_buf_fd_t>() == 2608);
const _: () = assert!(core::mem::offset_of!(nv_ioctl_export_to_dma_buf_fd_t, totalSize) == 24);
const _: () = assert!(core::mem::offset_of!(nv_ioctl_export_to_dma_buf_fd_t, handles) == 36);
const _: () = assert!(core::mem::offset_of!(nv_ioctl_export_to_dma_buf_fd_t, offsets) == 552);
const _: () = assert!(core::mem::offset_of!(nv_ioctl_export_to_dma_buf_fd_t, status) == 2600);

/// Request numbers (x86_64; the size is part of the number).
pub const NV_ESC_RM_ALLOC_REQUEST: u64 =
    nv_ioctl_request(NV_ESC_RM_ALLOC, core::mem::size_of::<NVOS21_PARAMETERS>());
/// `NV_ESC_RM_CONTROL` request.
pub const NV_ESC_RM_CONTROL_REQUEST: u64 =
    nv_ioctl_request(NV_ESC_RM_CONTROL, core::mem::size_of::<NVOS54_PARAMETERS>());
/// `NV_ESC_RM_FREE` request.
pub const NV_ESC_RM_FREE_REQUEST: u64 =
    nv_ioctl_request(NV_ESC_RM_FREE, core::mem::size_of::<NVOS00_PARAMETERS>());
/// `NV_ESC_RM_ALLOC_MEMORY` request.
pub const NV_ESC_RM_ALLOC_MEMORY_REQUEST: u64 = nv_ioctl_request(
    NV_ESC_RM_ALLOC_MEMORY,
    core::mem::size_of::<nv_ioctl_nvos02_parameters_with_fd>(),
);
/// `NV_ESC_RM_MAP_MEMORY` request.
pub const NV_ESC_RM_MAP_MEMORY_REQUEST: u64 = nv_ioctl_request(
    NV_ESC_RM_MAP_MEMORY,
    core::mem::size_of::<nv_ioctl_nvos33_parameters_with_fd>(),
);
/// `NV_ESC_RM_UNMAP_MEMORY` request.
pub const NV_ESC_RM_UNMAP_MEMORY_REQUEST: u64 = nv_ioctl_request(
    NV_ESC_RM_UNMAP_MEMORY,
    core::mem::size_of::<NVOS34_PARAMETERS>(),
);
/// `NV_ESC_CARD_INFO` request for [`NV_CARD_INFO_ENTRIES`] entries.
pub const NV_ESC_CARD_INFO_REQUEST: u64 = nv_ioctl_request(
    NV_ESC_CARD_INFO,
    NV_CARD_INFO_ENTRIES * core::mem::size_of::<nv_ioctl_card_info_t>(),
);
/// `NV_ESC_REGISTER_FD` request.
pub const NV_ESC_REGISTER_FD_REQUEST: u64 = nv_ioctl_request(
    NV_ESC_REGISTER_FD,
    core::mem::size_of::<nv_ioctl_register_fd_t>(),
);
/// `NV_ESC_CHECK_VERSION_STR` request.
pub const NV_ESC_CHECK_VERSION_STR_REQUEST: u64 = nv_ioctl_request(
    NV_ESC_CHECK_VERSION_STR,
    core::mem::size_of::<nv_ioctl_rm_api_version_t>(),
);
/// `NV_ESC_EXPORT_TO_DMABUF_FD` request.
pub const NV_ESC_EXPORT_TO_DMABUF_FD_REQUEST: u64 = nv_ioctl_request(
    NV_ESC_EXPORT_TO_DMABUF_FD,
    core::mem::size_of::<nv_ioctl_export_to_dma_buf_fd_t>(),
);
