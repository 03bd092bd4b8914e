//! Raw ABI: the NVIDIA Resource Manager (nvidia.ko, `/dev/nvidiactl` and `/dev/nvidiaN`) and the
//! UVM driver (nvidia-uvm.ko, `/dev/nvidia-uvm`).
//!
//! Every item carries the name it has in NVIDIA's open-gpu-kernel-modules headers (`nvos.h`,
//! `nv-ioctl.h`, `nv-ioctl-numbers.h`, the `ctrl*` and `class/cl*` SDK headers, and
//! `kernel-open/nvidia-uvm/uvm_ioctl.h`). Sizes and offsets are those of x86_64 builds of the
//! 570 to 595 branches (rm-kernel-interface.md §1, §2, §3, §6); every struct has a compile-time
//! size assertion.
//!
//! The RM and UVM drivers do **not** size-check RM_ALLOC class parameters or UVM ioctl structs
//! (they copy their own `sizeof` in and back out), so the layouts that changed between branches
//! are selected per branch: see [`RmBranch`] and [`RmLayout`]. Unknown branches are refused.

#![allow(non_camel_case_types, non_snake_case, non_upper_case_globals)]

use crate::error::{Error, Result, Status};

// ---------------------------------------------------------------------------------------------
// Escape numbers and request encoding (nv-ioctl-numbers.h, nv_escape.h)
// ---------------------------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------------------------
// Escape argument structs (nvos.h, nv-ioctl.h)
// ---------------------------------------------------------------------------------------------

/// `NV_ESC_RM_ALLOC` argument (32 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
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
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
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
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
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
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NVOS00_PARAMETERS {
    pub hRoot: u32,
    pub hObjectParent: u32,
    pub hObjectOld: u32,
    pub status: u32,
}
const _: () = assert!(core::mem::size_of::<NVOS00_PARAMETERS>() == 16);

/// `NV_ESC_RM_ALLOC_MEMORY` parameters (48 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
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
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
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
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
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
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
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
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
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
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
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

/// `NV_ESC_RM_MAP_MEMORY_DMA` argument, 570/575 layout (56 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NVOS46_PARAMETERS_V570 {
    pub hClient: u32,
    pub hDevice: u32,
    pub hDma: u32,
    pub hMemory: u32,
    pub offset: u64,
    pub length: u64,
    pub flags: u32,
    pub _pad: u32,
    pub dmaOffset: u64,
    pub status: u32,
    pub _pad2: u32,
}
const _: () = assert!(core::mem::size_of::<NVOS46_PARAMETERS_V570>() == 56);

/// `NV_ESC_RM_UNMAP_MEMORY_DMA` argument (48 bytes, 550+).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
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
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
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
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
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
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
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
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct nv_ioctl_rm_api_version_t {
    pub cmd: u32,
    pub reply: u32,
    pub versionString: [u8; 64],
}
const _: () = assert!(core::mem::size_of::<nv_ioctl_rm_api_version_t>() == 72);
impl Default for nv_ioctl_rm_api_version_t {
    fn default() -> Self {
        nv_ioctl_rm_api_version_t {
            cmd: 0,
            reply: 0,
            versionString: [0; 64],
        }
    }
}

/// `NV_ESC_REGISTER_FD` argument (4 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct nv_ioctl_register_fd_t {
    pub ctl_fd: i32,
}
const _: () = assert!(core::mem::size_of::<nv_ioctl_register_fd_t>() == 4);

/// `NV_ESC_IOCTL_XFER_CMD` argument (16 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct nv_ioctl_xfer_t {
    pub cmd: u32,
    pub size: u32,
    pub ptr: u64,
}
const _: () = assert!(core::mem::size_of::<nv_ioctl_xfer_t>() == 16);

/// `NV_ESC_STATUS_CODE` argument (12 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
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
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct nv_ioctl_sys_params_t {
    pub memblock_size: u64,
}
const _: () = assert!(core::mem::size_of::<nv_ioctl_sys_params_t>() == 8);

/// `NV_ESC_WAIT_OPEN_COMPLETE` argument (8 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct nv_ioctl_wait_open_complete_t {
    pub rc: i32,
    pub adapterStatus: u32,
}
const _: () = assert!(core::mem::size_of::<nv_ioctl_wait_open_complete_t>() == 8);

/// `NV_ESC_ALLOC_OS_EVENT` / `NV_ESC_FREE_OS_EVENT` argument (16 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct nv_ioctl_alloc_os_event_t {
    pub hClient: u32,
    pub hDevice: u32,
    pub fd: u32,
    pub Status: u32,
}
const _: () = assert!(core::mem::size_of::<nv_ioctl_alloc_os_event_t>() == 16);

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

// ---------------------------------------------------------------------------------------------
// Classes (class/cl*.h)
// ---------------------------------------------------------------------------------------------

/// The NULL object handle.
pub const NV01_NULL_OBJECT: u32 = 0;
/// Root client (`cl0000.h`; also known as NV01_ROOT_CLIENT).
pub const NV01_ROOT: u32 = 0x0000_0000;
/// Root client object, allocated with hRoot = hParent = 0.
pub const NV01_ROOT_CLIENT: u32 = 0x0000_0041;
/// Context DMA (for legacy notifiers).
pub const NV01_CONTEXT_DMA: u32 = 0x0000_0002;
/// System memory (RM-allocated, physically in system RAM).
pub const NV01_MEMORY_SYSTEM: u32 = 0x0000_003E;
/// Alias used by tinygrad's autogen.
pub const NV1_MEMORY_SYSTEM: u32 = NV01_MEMORY_SYSTEM;
/// Video memory (local user memory).
pub const NV01_MEMORY_LOCAL_USER: u32 = 0x0000_0040;
/// Alias used by tinygrad's autogen and the brief.
pub const NV1_MEMORY_USER: u32 = NV01_MEMORY_LOCAL_USER;
/// Virtual memory object (video path only).
pub const NV01_MEMORY_VIRTUAL: u32 = 0x0000_0070;
/// User memory pinned from an OS descriptor (a user VA).
pub const NV01_MEMORY_SYSTEM_OS_DESCRIPTOR: u32 = 0x0000_0071;
/// OS event.
pub const NV01_EVENT_OS_EVENT: u32 = 0x0000_0079;
/// Device.
pub const NV01_DEVICE_0: u32 = 0x0000_0080;
/// Subdevice.
pub const NV20_SUBDEVICE_0: u32 = 0x0000_2080;
/// Debugger (fault reports).
pub const GT200_DEBUGGER: u32 = 0x0000_83DE;
/// Subcontext.
pub const FERMI_CONTEXT_SHARE_A: u32 = 0x0000_9067;
/// GPU VA space.
pub const FERMI_VASPACE_A: u32 = 0x0000_90F1;
/// Channel group (TSG).
pub const KEPLER_CHANNEL_GROUP_A: u32 = 0x0000_A06C;

/// Usermode (doorbell) classes.
pub const VOLTA_USERMODE_A: u32 = 0x0000_C361;
/// Turing usermode.
pub const TURING_USERMODE_A: u32 = 0x0000_C461;
/// Ampere usermode.
pub const AMPERE_USERMODE_A: u32 = 0x0000_C561;
/// Hopper usermode.
pub const HOPPER_USERMODE_A: u32 = 0x0000_C661;
/// Blackwell (GB20x) usermode.
pub const BLACKWELL_USERMODE_A: u32 = 0x0000_C761;

/// `HOPPER_USERMODE_A` / `BLACKWELL_USERMODE_A` allocation parameters (`nvos.h`).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NV_HOPPER_USERMODE_A_PARAMS {
    /// Map the doorbell page through BAR1 instead of BAR0 (CPU mapping write-only).
    pub bBar1Mapping: u8,
    /// The privileged page instead of the VF page (kernel clients only).
    pub bPriv: u8,
}
const _: () = assert!(core::mem::size_of::<NV_HOPPER_USERMODE_A_PARAMS>() == 2);

/// GPFIFO channel classes.
pub const VOLTA_CHANNEL_GPFIFO_A: u32 = 0x0000_C36F;
/// Turing GPFIFO.
pub const TURING_CHANNEL_GPFIFO_A: u32 = 0x0000_C46F;
/// Ampere GPFIFO.
pub const AMPERE_CHANNEL_GPFIFO_A: u32 = 0x0000_C56F;
/// Ampere (Orin) GPFIFO B.
pub const AMPERE_CHANNEL_GPFIFO_B: u32 = 0x0000_C76F;
/// Hopper GPFIFO.
pub const HOPPER_CHANNEL_GPFIFO_A: u32 = 0x0000_C86F;
/// Blackwell GPFIFO A.
pub const BLACKWELL_CHANNEL_GPFIFO_A: u32 = 0x0000_C96F;
/// Blackwell GPFIFO B.
pub const BLACKWELL_CHANNEL_GPFIFO_B: u32 = 0x0000_CA6F;

/// Compute classes.
pub const AMPERE_COMPUTE_A: u32 = 0x0000_C6C0;
/// GA10x compute.
pub const AMPERE_COMPUTE_B: u32 = 0x0000_C7C0;
/// AD10x compute.
pub const ADA_COMPUTE_A: u32 = 0x0000_C9C0;
/// GH100 compute.
pub const HOPPER_COMPUTE_A: u32 = 0x0000_CBC0;
/// GB100/GB10B compute.
pub const BLACKWELL_COMPUTE_A: u32 = 0x0000_CDC0;
/// GB20x compute.
pub const BLACKWELL_COMPUTE_B: u32 = 0x0000_CEC0;

/// Copy-engine classes.
pub const AMPERE_DMA_COPY_A: u32 = 0x0000_C6B5;
/// GA10x/AD10x copy.
pub const AMPERE_DMA_COPY_B: u32 = 0x0000_C7B5;
/// GH100 copy.
pub const HOPPER_DMA_COPY_A: u32 = 0x0000_C8B5;
/// GB100/GB10B copy.
pub const BLACKWELL_DMA_COPY_A: u32 = 0x0000_C9B5;
/// GB20x copy.
pub const BLACKWELL_DMA_COPY_B: u32 = 0x0000_CAB5;

/// `NV2080_ENGINE_TYPE_GRAPHICS` (TSG engine type for compute + GR copy).
pub const NV2080_ENGINE_TYPE_GRAPHICS: u32 = 1;
/// `NV2080_ENGINE_TYPE_COPY0` (logical copy engine 0); COPY1..COPY9 follow at 0x0a..0x12.
pub const NV2080_ENGINE_TYPE_COPY0: u32 = 0x0000_0009;
/// `NV2080_ENGINE_TYPE_COPY9`, the last of the contiguous COPY0..COPY9 range.
pub const NV2080_ENGINE_TYPE_COPY9: u32 = 0x0000_0012;
/// Number of logical copy engines in the COPY0..COPY9 range.
pub const NV2080_ENGINE_TYPE_COPY_SIZE: u32 = 10;

/// `NV2080_ENGINE_TYPE_COPY(i)` for i < [`NV2080_ENGINE_TYPE_COPY_SIZE`]; `None` otherwise.
pub const fn NV2080_ENGINE_TYPE_COPY(i: u32) -> Option<u32> {
    if i < NV2080_ENGINE_TYPE_COPY_SIZE {
        Some(NV2080_ENGINE_TYPE_COPY0 + i)
    } else {
        None
    }
}

/// The LCE index of a COPY0..COPY9 engine type.
pub const fn NV2080_ENGINE_TYPE_COPY_IDX(engine_type: u32) -> Option<u32> {
    if engine_type >= NV2080_ENGINE_TYPE_COPY0 && engine_type <= NV2080_ENGINE_TYPE_COPY9 {
        Some(engine_type - NV2080_ENGINE_TYPE_COPY0)
    } else {
        None
    }
}

/// Copy-object allocation parameters (`NVB0B5_ALLOCATION_PARAMETERS`, 8 bytes), used by the
/// `*_DMA_COPY_*` classes: with `version` = 1, `engineType` names the copy engine.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NVB0B5_ALLOCATION_PARAMETERS {
    pub version: u32,
    pub engineType: u32,
}
const _: () = assert!(core::mem::size_of::<NVB0B5_ALLOCATION_PARAMETERS>() == 8);
/// `NVB0B5_ALLOCATION_PARAMETERS_VERSION_1`.
pub const NVB0B5_ALLOCATION_PARAMETERS_VERSION_1: u32 = 1;

// ---------------------------------------------------------------------------------------------
// Allocation parameter structs
// ---------------------------------------------------------------------------------------------

/// `NV01_DEVICE_0` allocation parameters (56 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NV0080_ALLOC_PARAMETERS {
    pub deviceId: u32,
    pub hClientShare: u32,
    pub hTargetClient: u32,
    pub hTargetDevice: u32,
    pub flags: u32,
    pub _pad: u32,
    pub vaSpaceSize: u64,
    pub vaStartInternal: u64,
    pub vaLimitInternal: u64,
    pub vaMode: u32,
    pub _pad2: u32,
}
const _: () = assert!(core::mem::size_of::<NV0080_ALLOC_PARAMETERS>() == 56);

/// `NV20_SUBDEVICE_0` allocation parameters (4 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NV2080_ALLOC_PARAMETERS {
    pub subDeviceId: u32,
}
const _: () = assert!(core::mem::size_of::<NV2080_ALLOC_PARAMETERS>() == 4);

/// `NV01_MEMORY_LOCAL_USER` / `NV01_MEMORY_SYSTEM` allocation parameters (128 bytes, 550+).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
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
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
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
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NV_MEMORY_VIRTUAL_ALLOCATION_PARAMS {
    pub offset: u64,
    pub limit: u64,
    pub hVASpace: u32,
    pub _pad: u32,
}
const _: () = assert!(core::mem::size_of::<NV_MEMORY_VIRTUAL_ALLOCATION_PARAMS>() == 24);

/// `KEPLER_CHANNEL_GROUP_A` allocation parameters (20 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NV_CHANNEL_GROUP_ALLOCATION_PARAMETERS {
    pub hObjectError: u32,
    pub hObjectEccError: u32,
    pub hVASpace: u32,
    pub engineType: u32,
    pub bIsCallingContextVgpuPlugin: u8,
    pub _pad: [u8; 3],
}
const _: () = assert!(core::mem::size_of::<NV_CHANNEL_GROUP_ALLOCATION_PARAMETERS>() == 20);

/// `FERMI_CONTEXT_SHARE_A` allocation parameters (12 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NV_CTXSHARE_ALLOCATION_PARAMETERS {
    pub hVASpace: u32,
    pub flags: u32,
    /// Out: the subcontext id (VEID).
    pub subctxId: u32,
}
const _: () = assert!(core::mem::size_of::<NV_CTXSHARE_ALLOCATION_PARAMETERS>() == 12);

/// Context-share flag: SUBCONTEXT 1:0 = SYNC.
pub const NV_CTXSHARE_ALLOCATION_FLAGS_SUBCONTEXT_SYNC: u32 = 0;
/// Context-share flag: SUBCONTEXT 1:0 = ASYNC.
pub const NV_CTXSHARE_ALLOCATION_FLAGS_SUBCONTEXT_ASYNC: u32 = 1;

/// A physical memory descriptor inside [`NV_CHANNEL_ALLOC_PARAMS`] (24 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NV_MEMORY_DESC_PARAMS {
    pub base: u64,
    pub size: u64,
    pub addressSpace: u32,
    pub cacheAttrib: u32,
}
const _: () = assert!(core::mem::size_of::<NV_MEMORY_DESC_PARAMS>() == 24);

/// Number of USERD slots in [`NV_CHANNEL_ALLOC_PARAMS`].
pub const NV_MAX_SUBDEVICES: usize = 8;
/// Confidential-computing IV size in dwords.
pub const CC_CHAN_ALLOC_IV_SIZE_DWORD: usize = 3;
/// Confidential-computing nonce size in dwords.
pub const CC_CHAN_ALLOC_NONCE_SIZE_DWORD: usize = 8;

/// GPFIFO channel allocation parameters (`NV_CHANNELGPFIFO_ALLOCATION_PARAMETERS`), the
/// 570–595 layout (368 bytes, `tpcConfigID` new in 570). The 610 layout inserts a field at 32
/// and is not supported.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NV_CHANNEL_ALLOC_PARAMS {
    pub hObjectError: u32,
    pub hObjectBuffer: u32,
    /// GPU VA of the GPFIFO ring.
    pub gpFifoOffset: u64,
    pub gpFifoEntries: u32,
    pub flags: u32,
    pub hContextShare: u32,
    pub hVASpace: u32,
    pub hUserdMemory: [u32; NV_MAX_SUBDEVICES],
    pub userdOffset: [u64; NV_MAX_SUBDEVICES],
    pub engineType: u32,
    /// Out: channel id.
    pub cid: u32,
    pub subDeviceId: u32,
    pub hObjectEccError: u32,
    pub instanceMem: NV_MEMORY_DESC_PARAMS,
    pub userdMem: NV_MEMORY_DESC_PARAMS,
    pub ramfcMem: NV_MEMORY_DESC_PARAMS,
    pub mthdbufMem: NV_MEMORY_DESC_PARAMS,
    pub hPhysChannelGroup: u32,
    pub internalFlags: u32,
    pub errorNotifierMem: NV_MEMORY_DESC_PARAMS,
    pub eccErrorNotifierMem: NV_MEMORY_DESC_PARAMS,
    pub ProcessID: u32,
    pub SubProcessID: u32,
    pub encryptIv: [u32; CC_CHAN_ALLOC_IV_SIZE_DWORD],
    pub decryptIv: [u32; CC_CHAN_ALLOC_IV_SIZE_DWORD],
    pub hmacNonce: [u32; CC_CHAN_ALLOC_NONCE_SIZE_DWORD],
    pub tpcConfigID: u32,
    pub _pad: u32,
}
const _: () = assert!(core::mem::size_of::<NV_CHANNEL_ALLOC_PARAMS>() == 368);

/// The same struct under its header name.
pub type NV_CHANNELGPFIFO_ALLOCATION_PARAMETERS = NV_CHANNEL_ALLOC_PARAMS;

/// `GT200_DEBUGGER` allocation parameters (12 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NV83DE_ALLOC_PARAMETERS {
    pub hDebuggerClient_Obsolete: u32,
    pub hAppClient: u32,
    pub hClass3dObject: u32,
}
const _: () = assert!(core::mem::size_of::<NV83DE_ALLOC_PARAMETERS>() == 12);

/// A notification record (`NvNotification`, 16 bytes). RM writes a channel's robust-channel
/// error into entry [`NV_CHANNELGPFIFO_NOTIFICATION_TYPE_ERROR`] of the error notifier: the
/// error type (the Xid number, `ROBUST_CHANNEL_*`) in `info32`, the engine in `info16`, and
/// `status = 0xffff` last.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NvNotification {
    pub timeStamp: [u32; 2],
    pub info32: u32,
    pub info16: u16,
    pub status: u16,
}
const _: () = assert!(core::mem::size_of::<NvNotification>() == 16);

/// Index of the error notification in a channel's error notifier.
pub const NV_CHANNELGPFIFO_NOTIFICATION_TYPE_ERROR: u32 = 0;
/// Index of the work-submit-token notification.
pub const NV_CHANNELGPFIFO_NOTIFICATION_TYPE_WORK_SUBMIT_TOKEN: u32 = 1;
/// Number of channel notifications (minimum error-notifier size = 3 × 16 bytes).
pub const NV_CHANNELGPFIFO_NOTIFICATION_TYPE__SIZE_1: u32 = 3;
/// `status` value RM writes for a robust-channel (RC) error.
pub const NV_NOTIFICATION_STATUS_RC_ERROR: u16 = 0xFFFF;

/// Robust-channel error types (Xid numbers) that `info32` of the error notification carries.
pub const ROBUST_CHANNEL_FIFO_ERROR_IDLE_TIMEOUT: u32 = 8;
/// Graphics engine exception.
pub const ROBUST_CHANNEL_GR_EXCEPTION: u32 = 13;
/// MMU fault.
pub const ROBUST_CHANNEL_FIFO_ERROR_MMU_ERR_FLT: u32 = 31;
/// PBDMA (pushbuffer) error.
pub const ROBUST_CHANNEL_PBDMA_ERROR: u32 = 32;
/// Channel reset by RM ("GPU stopped processing").
pub const ROBUST_CHANNEL_RESETCHANNEL_VERIF_ERROR: u32 = 43;
/// Preemptive channel removal.
pub const ROBUST_CHANNEL_PREEMPTIVE_REMOVAL: u32 = 45;
/// Graphics class error.
pub const ROBUST_CHANNEL_GR_CLASS_ERROR: u32 = 69;

/// A short name for a robust-channel error type.
pub fn robust_channel_error_name(info32: u32) -> &'static str {
    match info32 {
        ROBUST_CHANNEL_FIFO_ERROR_IDLE_TIMEOUT => "FIFO idle timeout",
        ROBUST_CHANNEL_GR_EXCEPTION => "graphics/compute engine exception",
        ROBUST_CHANNEL_FIFO_ERROR_MMU_ERR_FLT => "MMU fault",
        ROBUST_CHANNEL_PBDMA_ERROR => "PBDMA (pushbuffer) error",
        ROBUST_CHANNEL_RESETCHANNEL_VERIF_ERROR => "channel reset",
        ROBUST_CHANNEL_PREEMPTIVE_REMOVAL => "preemptive channel removal",
        ROBUST_CHANNEL_GR_CLASS_ERROR => "graphics class error",
        _ => "robust-channel error",
    }
}

// ---------------------------------------------------------------------------------------------
// Control commands and their parameter structs (ctrl/ctrl*.h)
// ---------------------------------------------------------------------------------------------

/// Client: driver build version, 570+ layout (1032 bytes).
pub const NV0000_CTRL_CMD_SYSTEM_GET_BUILD_VERSION_V2: u32 = 0x0000_013E;
/// Client: GPU id → device instance.
pub const NV0000_CTRL_CMD_GPU_GET_ID_INFO_V2: u32 = 0x0000_0205;
/// Device: list of classes.
pub const NV0080_CTRL_CMD_GPU_GET_CLASSLIST: u32 = 0x0080_0201;
/// Subdevice: marketing name.
pub const NV2080_CTRL_CMD_GPU_GET_NAME_STRING: u32 = 0x2080_0110;
/// Subdevice: GPU UUID.
pub const NV2080_CTRL_CMD_GPU_GET_GID_INFO: u32 = 0x2080_014A;
/// Subdevice: GR engine information.
pub const NV2080_CTRL_CMD_GR_GET_INFO: u32 = 0x2080_1201;
/// Subdevice: framebuffer information (pointer-list form).
pub const NV2080_CTRL_CMD_FB_GET_INFO: u32 = 0x2080_1301;
/// Subdevice: framebuffer information (inline-list form).
pub const NV2080_CTRL_CMD_FB_GET_INFO_V2: u32 = 0x2080_1303;
/// Subdevice: flush GPU caches.
pub const NV2080_CTRL_CMD_FB_FLUSH_GPU_CACHE: u32 = 0x2080_130E;
/// Subdevice: architecture / implementation.
pub const NV2080_CTRL_CMD_MC_GET_ARCH_INFO: u32 = 0x2080_1701;
/// Subdevice: clock boost.
pub const NV2080_CTRL_CMD_PERF_BOOST: u32 = 0x2080_200A;
/// Channel: work-submit token for the doorbell.
pub const NVC36F_CTRL_CMD_GPFIFO_GET_WORK_SUBMIT_TOKEN: u32 = 0xC36F_0108;
/// TSG: enable/disable scheduling.
pub const NVA06C_CTRL_CMD_GPFIFO_SCHEDULE: u32 = 0xA06C_0101;
/// Channel without a TSG: enable/disable scheduling.
pub const NVA06F_CTRL_CMD_GPFIFO_SCHEDULE: u32 = 0xA06F_0103;
/// Channel without a TSG: bind to an engine.
pub const NVA06F_CTRL_CMD_BIND: u32 = 0xA06F_0104;

/// `NV0000_CTRL_CMD_SYSTEM_GET_BUILD_VERSION_V2` parameters (1032 bytes, 570+).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NV0000_CTRL_SYSTEM_GET_BUILD_VERSION_V2_PARAMS {
    pub driverVersionBuffer: [u8; 256],
    pub versionBuffer: [u8; 256],
    pub driverBranch: [u8; 256],
    pub titleBuffer: [u8; 256],
    pub changelistNumber: u32,
    pub officialChangelistNumber: u32,
}
const _: () =
    assert!(core::mem::size_of::<NV0000_CTRL_SYSTEM_GET_BUILD_VERSION_V2_PARAMS>() == 1032);
impl Default for NV0000_CTRL_SYSTEM_GET_BUILD_VERSION_V2_PARAMS {
    fn default() -> Self {
        Self {
            driverVersionBuffer: [0; 256],
            versionBuffer: [0; 256],
            driverBranch: [0; 256],
            titleBuffer: [0; 256],
            changelistNumber: 0,
            officialChangelistNumber: 0,
        }
    }
}

/// `NV0000_CTRL_CMD_GPU_GET_ID_INFO_V2` parameters (32 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NV0000_CTRL_GPU_GET_ID_INFO_V2_PARAMS {
    pub gpuId: u32,
    pub gpuFlags: u32,
    pub deviceInstance: u32,
    pub subDeviceInstance: u32,
    pub sliStatus: u32,
    pub boardId: u32,
    pub gpuInstance: u32,
    pub numaId: i32,
}
const _: () = assert!(core::mem::size_of::<NV0000_CTRL_GPU_GET_ID_INFO_V2_PARAMS>() == 32);

/// `NV0080_CTRL_CMD_GPU_GET_CLASSLIST` parameters (16 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NV0080_CTRL_GPU_GET_CLASSLIST_PARAMS {
    pub numClasses: u32,
    pub _pad: u32,
    /// User pointer to a `u32` array (NULL on the first call, which returns the count).
    pub classList: u64,
}
const _: () = assert!(core::mem::size_of::<NV0080_CTRL_GPU_GET_CLASSLIST_PARAMS>() == 16);

/// Name-string length (`NV2080_GPU_MAX_NAME_STRING_LENGTH`).
pub const NV2080_GPU_MAX_NAME_STRING_LENGTH: usize = 0x40;
/// Name string flags: ASCII.
pub const NV2080_CTRL_GPU_GET_NAME_STRING_FLAGS_TYPE_ASCII: u32 = 0;

/// `NV2080_CTRL_CMD_GPU_GET_NAME_STRING` parameters (132 bytes: a union of 64 ASCII bytes and
/// 64 UTF-16 units).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NV2080_CTRL_GPU_GET_NAME_STRING_PARAMS {
    pub gpuNameStringFlags: u32,
    /// `gpuNameString.ascii` is the first 64 bytes; `unicode` covers all 128.
    pub gpuNameString: [u8; 2 * NV2080_GPU_MAX_NAME_STRING_LENGTH],
}
const _: () = assert!(core::mem::size_of::<NV2080_CTRL_GPU_GET_NAME_STRING_PARAMS>() == 132);
impl Default for NV2080_CTRL_GPU_GET_NAME_STRING_PARAMS {
    fn default() -> Self {
        Self {
            gpuNameStringFlags: 0,
            gpuNameString: [0; 2 * NV2080_GPU_MAX_NAME_STRING_LENGTH],
        }
    }
}

/// GID data size.
pub const NV2080_GPU_MAX_GID_LENGTH: usize = 0x100;
/// GID flags: FORMAT_BINARY (bit 1).
pub const NV2080_GPU_CMD_GPU_GET_GID_FLAGS_FORMAT_BINARY: u32 = 2;

/// `NV2080_CTRL_CMD_GPU_GET_GID_INFO` parameters (268 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NV2080_CTRL_GPU_GET_GID_INFO_PARAMS {
    pub index: u32,
    pub flags: u32,
    pub length: u32,
    pub data: [u8; NV2080_GPU_MAX_GID_LENGTH],
}
const _: () = assert!(core::mem::size_of::<NV2080_CTRL_GPU_GET_GID_INFO_PARAMS>() == 268);
impl Default for NV2080_CTRL_GPU_GET_GID_INFO_PARAMS {
    fn default() -> Self {
        Self {
            index: 0,
            flags: 0,
            length: 0,
            data: [0; NV2080_GPU_MAX_GID_LENGTH],
        }
    }
}

/// GR routing information (16 bytes; zero unless MIG).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NV2080_CTRL_GR_ROUTE_INFO {
    pub flags: u32,
    pub _pad: u32,
    pub route: u64,
}
const _: () = assert!(core::mem::size_of::<NV2080_CTRL_GR_ROUTE_INFO>() == 16);

/// Subdevice: set the compute (CILP) and graphics (GFXP) context-switch preemption modes of a
/// GR context; `hChannel` is the TSG when the channel is in one (ctrl2080gr.h).
pub const NV2080_CTRL_CMD_GR_SET_CTXSW_PREEMPTION_MODE: u32 = 0x2080_1210;
/// `flags` bit: `cilpPreemptMode` is valid.
pub const NV2080_CTRL_GR_SET_CTXSW_PREEMPTION_MODE_FLAGS_CILP_SET: u32 = 1;
/// Compute preemption modes: wait for idle, CTA boundary, instruction level.
pub const NV2080_CTRL_SET_CTXSW_PREEMPTION_MODE_COMPUTE_WFI: u32 = 0;
pub const NV2080_CTRL_SET_CTXSW_PREEMPTION_MODE_COMPUTE_CTA: u32 = 1;
pub const NV2080_CTRL_SET_CTXSW_PREEMPTION_MODE_COMPUTE_CILP: u32 = 2;

/// `NV2080_CTRL_CMD_GR_SET_CTXSW_PREEMPTION_MODE` parameters (32 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NV2080_CTRL_GR_SET_CTXSW_PREEMPTION_MODE_PARAMS {
    pub flags: u32,
    pub hChannel: u32,
    pub gfxpPreemptMode: u32,
    pub cilpPreemptMode: u32,
    pub grRouteInfo: NV2080_CTRL_GR_ROUTE_INFO,
}
const _: () =
    assert!(core::mem::size_of::<NV2080_CTRL_GR_SET_CTXSW_PREEMPTION_MODE_PARAMS>() == 32);

/// One GR info query (8 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NV2080_CTRL_GR_INFO {
    pub index: u32,
    pub data: u32,
}
const _: () = assert!(core::mem::size_of::<NV2080_CTRL_GR_INFO>() == 8);

/// `NV2080_CTRL_CMD_GR_GET_INFO` parameters (32 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NV2080_CTRL_GR_GET_INFO_PARAMS {
    pub grInfoListSize: u32,
    pub _pad: u32,
    /// User pointer to an [`NV2080_CTRL_GR_INFO`] array.
    pub grInfoList: u64,
    pub grRouteInfo: NV2080_CTRL_GR_ROUTE_INFO,
}
const _: () = assert!(core::mem::size_of::<NV2080_CTRL_GR_GET_INFO_PARAMS>() == 32);

/// GR info index: SM version (0x900 = 9.0).
pub const NV2080_CTRL_GR_INFO_INDEX_SM_VERSION: u32 = 0x0C;
/// GR info index: maximum warps per SM.
pub const NV2080_CTRL_GR_INFO_INDEX_MAX_WARPS_PER_SM: u32 = 0x0D;
/// GR info index: threads per warp.
pub const NV2080_CTRL_GR_INFO_INDEX_MAX_THREADS_PER_WARP: u32 = 0x0E;
/// GR info index: SPs ("CUDA cores") per SM.
pub const NV2080_CTRL_GR_INFO_INDEX_MAX_SP_PER_SM: u32 = 0x13;
/// GR info index: GPCs on the full die.
pub const NV2080_CTRL_GR_INFO_INDEX_LITTER_NUM_GPCS: u32 = 0x14;
/// GR info index: TPCs per GPC on the full die.
pub const NV2080_CTRL_GR_INFO_INDEX_LITTER_NUM_TPC_PER_GPC: u32 = 0x17;
/// GR info index: enabled "GPU cores" (SPs) of the graphics pipeline.
pub const NV2080_CTRL_GR_INFO_INDEX_GPU_CORE_COUNT: u32 = 0x1D;
/// GR info index: SMs per TPC.
pub const NV2080_CTRL_GR_INFO_INDEX_LITTER_NUM_SM_PER_TPC: u32 = 0x20;

/// Subdevice: mask of enabled GPCs.
pub const NV2080_CTRL_CMD_GR_GET_GPC_MASK: u32 = 0x2080_122A;
/// Subdevice: mask of enabled TPCs of one GPC.
pub const NV2080_CTRL_CMD_GR_GET_TPC_MASK: u32 = 0x2080_122B;

/// `NV2080_CTRL_CMD_GR_GET_GPC_MASK` parameters (24 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NV2080_CTRL_GR_GET_GPC_MASK_PARAMS {
    pub grRouteInfo: NV2080_CTRL_GR_ROUTE_INFO,
    pub gpcMask: u32,
    pub _pad: u32,
}
const _: () = assert!(core::mem::size_of::<NV2080_CTRL_GR_GET_GPC_MASK_PARAMS>() == 24);

/// `NV2080_CTRL_CMD_GR_GET_TPC_MASK` parameters (24 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NV2080_CTRL_GR_GET_TPC_MASK_PARAMS {
    pub grRouteInfo: NV2080_CTRL_GR_ROUTE_INFO,
    pub gpcId: u32,
    pub tpcMask: u32,
}
const _: () = assert!(core::mem::size_of::<NV2080_CTRL_GR_GET_TPC_MASK_PARAMS>() == 24);

/// One FB info query (8 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NV2080_CTRL_FB_INFO {
    pub index: u32,
    pub data: u32,
}
const _: () = assert!(core::mem::size_of::<NV2080_CTRL_FB_INFO>() == 8);

/// `NV2080_CTRL_CMD_FB_GET_INFO` parameters (16 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
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
/// FB info index: free heap (KiB).
pub const NV2080_CTRL_FB_INFO_INDEX_HEAP_FREE: u32 = 0x16;
/// FB info index: unused BAR1 space (KiB).
pub const NV2080_CTRL_FB_INFO_INDEX_BAR1_AVAIL_SIZE: u32 = 0x1D;

/// `NV2080_CTRL_CMD_MC_GET_ARCH_INFO` parameters (16 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NV2080_CTRL_MC_GET_ARCH_INFO_PARAMS {
    /// E.g. 0x180 = GH100 (`NV2080_CTRL_MC_ARCH_INFO_ARCHITECTURE_GH100`).
    pub architecture: u32,
    pub implementation: u32,
    pub revision: u32,
    pub subRevision: u8,
    pub _pad: [u8; 3],
}
const _: () = assert!(core::mem::size_of::<NV2080_CTRL_MC_GET_ARCH_INFO_PARAMS>() == 16);

/// `NV2080_CTRL_CMD_PERF_BOOST` parameters (8 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NV2080_CTRL_PERF_BOOST_PARAMS {
    pub flags: u32,
    pub duration: u32,
}
const _: () = assert!(core::mem::size_of::<NV2080_CTRL_PERF_BOOST_PARAMS>() == 8);

/// `NVC36F_CTRL_CMD_GPFIFO_GET_WORK_SUBMIT_TOKEN` parameters (4 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NVC36F_CTRL_CMD_GPFIFO_GET_WORK_SUBMIT_TOKEN_PARAMS {
    pub workSubmitToken: u32,
}
const _: () =
    assert!(core::mem::size_of::<NVC36F_CTRL_CMD_GPFIFO_GET_WORK_SUBMIT_TOKEN_PARAMS>() == 4);

/// `NVA06F_CTRL_CMD_GPFIFO_SCHEDULE` / `NVA06C_CTRL_CMD_GPFIFO_SCHEDULE` parameters: 3 bytes on
/// 575+ (`bSkipEnable` new), 2 bytes before. Send [`RmLayout::gpfifo_schedule_params_size`].
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NVA06F_CTRL_GPFIFO_SCHEDULE_PARAMS {
    pub bEnable: u8,
    pub bSkipSubmit: u8,
    pub bSkipEnable: u8,
}
const _: () = assert!(core::mem::size_of::<NVA06F_CTRL_GPFIFO_SCHEDULE_PARAMS>() == 3);
/// The TSG form of the same parameters.
pub type NVA06C_CTRL_GPFIFO_SCHEDULE_PARAMS = NVA06F_CTRL_GPFIFO_SCHEDULE_PARAMS;

/// Subdevice: the engines the GPU exposes (`NV2080_ENGINE_TYPE_*` list).
pub const NV2080_CTRL_CMD_GPU_GET_ENGINES_V2: u32 = 0x2080_0170;
/// Capacity of the engine list in [`NV2080_CTRL_GPU_GET_ENGINES_V2_PARAMS`].
pub const NV2080_GPU_MAX_ENGINES_LIST_SIZE: usize = 0x54;

/// `NV2080_CTRL_CMD_GPU_GET_ENGINES_V2` parameters (340 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NV2080_CTRL_GPU_GET_ENGINES_V2_PARAMS {
    pub engineCount: u32,
    pub engineList: [u32; NV2080_GPU_MAX_ENGINES_LIST_SIZE],
}
const _: () = assert!(core::mem::size_of::<NV2080_CTRL_GPU_GET_ENGINES_V2_PARAMS>() == 340);
impl Default for NV2080_CTRL_GPU_GET_ENGINES_V2_PARAMS {
    fn default() -> Self {
        NV2080_CTRL_GPU_GET_ENGINES_V2_PARAMS {
            engineCount: 0,
            engineList: [0; NV2080_GPU_MAX_ENGINES_LIST_SIZE],
        }
    }
}

/// Subdevice: the physical copy engines (PCE mask) behind one logical copy engine.
pub const NV2080_CTRL_CMD_CE_GET_CE_PCE_MASK: u32 = 0x2080_2A02;
/// Subdevice: capability bytes of one copy engine.
pub const NV2080_CTRL_CMD_CE_GET_CAPS_V2: u32 = 0x2080_2A03;
/// Size of a CE caps table, bytes.
pub const NV2080_CTRL_CE_CAPS_TBL_SIZE: usize = 2;
/// CE caps byte 0: the CE is synchronous with GR (a GRCE).
pub const NV2080_CTRL_CE_CAPS_CE_GRCE: u8 = 0x01;
/// CE caps byte 0: the CE shares physical CEs with another CE.
pub const NV2080_CTRL_CE_CAPS_CE_SHARED: u8 = 0x02;
/// CE caps byte 0: faster system-memory reads.
pub const NV2080_CTRL_CE_CAPS_CE_SYSMEM_READ: u8 = 0x04;
/// CE caps byte 0: faster system-memory writes.
pub const NV2080_CTRL_CE_CAPS_CE_SYSMEM_WRITE: u8 = 0x08;
/// CE caps byte 0: usable for NVLink peer-to-peer.
pub const NV2080_CTRL_CE_CAPS_CE_NVLINK_P2P: u8 = 0x10;
/// CE caps byte 0: usable for system-memory transfers.
pub const NV2080_CTRL_CE_CAPS_CE_SYSMEM: u8 = 0x20;
/// CE caps byte 0: usable for peer-to-peer transfers.
pub const NV2080_CTRL_CE_CAPS_CE_P2P: u8 = 0x40;

/// `NV2080_CTRL_CMD_CE_GET_CAPS_V2` parameters (8 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NV2080_CTRL_CE_GET_CAPS_V2_PARAMS {
    pub ceEngineType: u32,
    pub capsTbl: [u8; NV2080_CTRL_CE_CAPS_TBL_SIZE],
    pub _pad: [u8; 2],
}
const _: () = assert!(core::mem::size_of::<NV2080_CTRL_CE_GET_CAPS_V2_PARAMS>() == 8);

/// `NV2080_CTRL_CMD_CE_GET_CE_PCE_MASK` parameters (8 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NV2080_CTRL_CE_GET_CE_PCE_MASK_PARAMS {
    pub ceEngineType: u32,
    pub pceMask: u32,
}
const _: () = assert!(core::mem::size_of::<NV2080_CTRL_CE_GET_CE_PCE_MASK_PARAMS>() == 8);

/// Channel: MMU fault information of the channel's last fault (cleared when read).
pub const NV906F_CTRL_CMD_GET_MMU_FAULT_INFO: u32 = 0x906F_0106;
/// Length of the fault string.
pub const NV906F_CTRL_MMU_FAULT_STRING_LEN: usize = 32;
/// Number of shader types in the fault info.
pub const NV906F_CTRL_MMU_FAULT_SHADER_TYPES: usize = 7;

/// `NV906F_CTRL_CMD_GET_MMU_FAULT_INFO` parameters (104 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NV906F_CTRL_GET_MMU_FAULT_INFO_PARAMS {
    pub addrHi: u32,
    pub addrLo: u32,
    pub faultType: u32,
    pub faultString: [u8; NV906F_CTRL_MMU_FAULT_STRING_LEN],
    pub _pad: u32,
    pub shaderProgramVA: [u64; NV906F_CTRL_MMU_FAULT_SHADER_TYPES],
}
const _: () = assert!(core::mem::size_of::<NV906F_CTRL_GET_MMU_FAULT_INFO_PARAMS>() == 104);

/// `NVA06F_CTRL_CMD_BIND` parameters (4 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NVA06F_CTRL_BIND_PARAMS {
    pub engineType: u32,
}
const _: () = assert!(core::mem::size_of::<NVA06F_CTRL_BIND_PARAMS>() == 4);

// ---------------------------------------------------------------------------------------------
// RM status codes (nvstatuscodes.h)
// ---------------------------------------------------------------------------------------------

/// Success.
pub const NV_OK: u32 = 0;
/// Invalid argument.
pub const NV_ERR_INVALID_ARGUMENT: u32 = 0x1F;
/// Invalid class.
pub const NV_ERR_INVALID_CLASS: u32 = 0x22;
/// Invalid parameter struct (wrong size).
pub const NV_ERR_INVALID_PARAM_STRUCT: u32 = 0x3A;
/// Out of memory.
pub const NV_ERR_NO_MEMORY: u32 = 0x51;
/// Not supported.
pub const NV_ERR_NOT_SUPPORTED: u32 = 0x56;
/// State in use (a second map on one fd).
pub const NV_ERR_STATE_IN_USE: u32 = 0x63;
/// UVM: address already in use.
pub const NV_ERR_UVM_ADDRESS_IN_USE: u32 = 0x68;
/// Nothing to do (UVM_MM_INITIALIZE when not needed).
pub const NV_WARN_NOTHING_TO_DO: u32 = 0x0001_0006;

/// The symbolic name of an RM status value, for messages.
pub fn nv_status_name(status: u32) -> &'static str {
    match status {
        0x00 => "NV_OK",
        0x03 => "NV_ERR_BUSY_RETRY",
        0x0F => "NV_ERR_GPU_IS_LOST",
        0x16 => "NV_ERR_ILLEGAL_ACTION",
        0x17 => "NV_ERR_IN_USE",
        0x1A => "NV_ERR_INSUFFICIENT_RESOURCES",
        0x1B => "NV_ERR_INSUFFICIENT_PERMISSIONS",
        0x1E => "NV_ERR_INVALID_ADDRESS",
        0x1F => "NV_ERR_INVALID_ARGUMENT",
        0x22 => "NV_ERR_INVALID_CLASS",
        0x23 => "NV_ERR_INVALID_CLIENT",
        0x24 => "NV_ERR_INVALID_COMMAND",
        0x29 => "NV_ERR_INVALID_FLAGS",
        0x2E => "NV_ERR_INVALID_LIMIT",
        0x31 => "NV_ERR_INVALID_OBJECT",
        0x33 => "NV_ERR_INVALID_OBJECT_HANDLE",
        0x34 => "NV_ERR_INVALID_OBJECT_NEW",
        0x36 => "NV_ERR_INVALID_OBJECT_PARENT",
        0x37 => "NV_ERR_INVALID_OFFSET",
        0x38 => "NV_ERR_INVALID_OPERATION",
        0x3A => "NV_ERR_INVALID_PARAM_STRUCT",
        0x3B => "NV_ERR_INVALID_PARAMETER",
        0x3D => "NV_ERR_INVALID_POINTER",
        0x3F => "NV_ERR_INVALID_REQUEST",
        0x40 => "NV_ERR_INVALID_STATE",
        0x4F => "NV_ERR_NO_FREE_FIFOS",
        0x51 => "NV_ERR_NO_MEMORY",
        0x56 => "NV_ERR_NOT_SUPPORTED",
        0x57 => "NV_ERR_OBJECT_NOT_FOUND",
        0x59 => "NV_ERR_OPERATING_SYSTEM",
        0x5B => "NV_ERR_OUT_OF_RANGE",
        0x5F => "NV_ERR_PROTECTION_FAULT",
        0x60 => "NV_ERR_RC_ERROR",
        0x63 => "NV_ERR_STATE_IN_USE",
        0x65 => "NV_ERR_TIMEOUT",
        0x68 => "NV_ERR_UVM_ADDRESS_IN_USE",
        0x6A => "NV_ERR_LIB_RM_VERSION_MISMATCH",
        0xFFFF => "NV_ERR_GENERIC",
        0x0001_0006 => "NV_WARN_NOTHING_TO_DO",
        _ => "NV_ERR_?",
    }
}

// ---------------------------------------------------------------------------------------------
// UVM (kernel-open/nvidia-uvm/uvm_ioctl.h, uvm_linux_ioctl.h). Plain integer request numbers;
// no size check: the kernel copies its own sizeof in and out.
// ---------------------------------------------------------------------------------------------

/// Create the process's UVM VA space (must come first).
pub const UVM_INITIALIZE: u64 = 0x3000_0001;
/// Tear the VA space down early.
pub const UVM_DEINITIALIZE: u64 = 0x3000_0002;
/// Register a GPU VA space (an RM `FERMI_VASPACE_A`).
pub const UVM_REGISTER_GPU_VASPACE: u64 = 25;
/// Unregister a GPU VA space.
pub const UVM_UNREGISTER_GPU_VASPACE: u64 = 26;
/// Register a channel so UVM can map its context buffers.
pub const UVM_REGISTER_CHANNEL: u64 = 27;
/// Unregister a channel.
pub const UVM_UNREGISTER_CHANNEL: u64 = 28;
/// Enable peer access between two GPUs.
pub const UVM_ENABLE_PEER_ACCESS: u64 = 29;
/// Map an RM memory handle into an external range.
pub const UVM_MAP_EXTERNAL_ALLOCATION: u64 = 33;
/// Destroy a range (unmaps it from all GPUs).
pub const UVM_FREE: u64 = 34;
/// Register a GPU.
pub const UVM_REGISTER_GPU: u64 = 37;
/// Unregister a GPU.
pub const UVM_UNREGISTER_GPU: u64 = 38;
/// Unmap an external allocation from one GPU.
pub const UVM_UNMAP_EXTERNAL: u64 = 66;
/// Create an external range.
pub const UVM_CREATE_EXTERNAL_RANGE: u64 = 73;
/// Pin the process mm (issued on a second UVM fd).
pub const UVM_MM_INITIALIZE: u64 = 75;

/// Maximum number of per-GPU mapping attributes (`UVM_MAX_GPUS_V2`, 550+).
pub const UVM_MAX_GPUS_V2: usize = 256;

/// A processor UUID (16 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct NvProcessorUuid {
    pub uuid: [u8; 16],
}
const _: () = assert!(core::mem::size_of::<NvProcessorUuid>() == 16);

/// `UVM_INITIALIZE` parameters (16 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UVM_INITIALIZE_PARAMS {
    /// 0, or `UVM_INIT_FLAGS_*`.
    pub flags: u64,
    pub rmStatus: u32,
    pub _pad: u32,
}
const _: () = assert!(core::mem::size_of::<UVM_INITIALIZE_PARAMS>() == 16);

/// `UVM_INIT_FLAGS_DISABLE_HMM`.
pub const UVM_INIT_FLAGS_DISABLE_HMM: u64 = 1;
/// `UVM_INIT_FLAGS_MULTI_PROCESS_SHARING_MODE`.
pub const UVM_INIT_FLAGS_MULTI_PROCESS_SHARING_MODE: u64 = 2;

/// `UVM_MM_INITIALIZE` parameters (8 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UVM_MM_INITIALIZE_PARAMS {
    pub uvmFd: i32,
    pub rmStatus: u32,
}
const _: () = assert!(core::mem::size_of::<UVM_MM_INITIALIZE_PARAMS>() == 8);

/// `UVM_REGISTER_GPU` parameters (40 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UVM_REGISTER_GPU_PARAMS {
    pub gpu_uuid: NvProcessorUuid,
    pub numaEnabled: u8,
    pub _pad: [u8; 3],
    pub numaNodeId: i32,
    /// -1 unless MIG.
    pub rmCtrlFd: i32,
    pub hClient: u32,
    pub hSmcPartRef: u32,
    pub rmStatus: u32,
}
const _: () = assert!(core::mem::size_of::<UVM_REGISTER_GPU_PARAMS>() == 40);

/// `UVM_UNREGISTER_GPU` parameters (20 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UVM_UNREGISTER_GPU_PARAMS {
    pub gpu_uuid: NvProcessorUuid,
    pub rmStatus: u32,
}
const _: () = assert!(core::mem::size_of::<UVM_UNREGISTER_GPU_PARAMS>() == 20);

/// `UVM_REGISTER_GPU_VASPACE` parameters (32 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UVM_REGISTER_GPU_VASPACE_PARAMS {
    pub gpuUuid: NvProcessorUuid,
    pub rmCtrlFd: i32,
    pub hClient: u32,
    pub hVaSpace: u32,
    pub rmStatus: u32,
}
const _: () = assert!(core::mem::size_of::<UVM_REGISTER_GPU_VASPACE_PARAMS>() == 32);

/// `UVM_UNREGISTER_GPU_VASPACE` parameters (20 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UVM_UNREGISTER_GPU_VASPACE_PARAMS {
    pub gpuUuid: NvProcessorUuid,
    pub rmStatus: u32,
}
const _: () = assert!(core::mem::size_of::<UVM_UNREGISTER_GPU_VASPACE_PARAMS>() == 20);

/// `UVM_REGISTER_CHANNEL` parameters (56 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UVM_REGISTER_CHANNEL_PARAMS {
    pub gpuUuid: NvProcessorUuid,
    pub rmCtrlFd: i32,
    pub hClient: u32,
    pub hChannel: u32,
    pub _pad: u32,
    /// VA range UVM may use for the channel's context buffers.
    pub base: u64,
    pub length: u64,
    pub rmStatus: u32,
    pub _pad2: u32,
}
const _: () = assert!(core::mem::size_of::<UVM_REGISTER_CHANNEL_PARAMS>() == 56);

/// `UVM_UNREGISTER_CHANNEL` parameters, up to 580 (28 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UVM_UNREGISTER_CHANNEL_PARAMS {
    pub gpuUuid: NvProcessorUuid,
    pub hClient: u32,
    pub hChannel: u32,
    pub rmStatus: u32,
}
const _: () = assert!(core::mem::size_of::<UVM_UNREGISTER_CHANNEL_PARAMS>() == 28);

/// `UVM_UNREGISTER_CHANNEL` parameters, 590+ (12 bytes; the UUID was removed).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UVM_UNREGISTER_CHANNEL_PARAMS_V590 {
    pub hClient: u32,
    pub hChannel: u32,
    pub rmStatus: u32,
}
const _: () = assert!(core::mem::size_of::<UVM_UNREGISTER_CHANNEL_PARAMS_V590>() == 12);

/// `UVM_CREATE_EXTERNAL_RANGE` parameters (24 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UVM_CREATE_EXTERNAL_RANGE_PARAMS {
    pub base: u64,
    pub length: u64,
    pub rmStatus: u32,
    pub _pad: u32,
}
const _: () = assert!(core::mem::size_of::<UVM_CREATE_EXTERNAL_RANGE_PARAMS>() == 24);

/// Per-GPU mapping attributes (36 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UvmGpuMappingAttributes {
    pub gpuUuid: NvProcessorUuid,
    pub gpuMappingType: u32,
    pub gpuCachingType: u32,
    pub gpuFormatType: u32,
    pub gpuElementBits: u32,
    pub gpuCompressionType: u32,
}
const _: () = assert!(core::mem::size_of::<UvmGpuMappingAttributes>() == 36);

/// `UvmGpuMappingTypeDefault`.
pub const UvmGpuMappingTypeDefault: u32 = 0;
/// `UvmGpuMappingTypeReadWriteAtomic`.
pub const UvmGpuMappingTypeReadWriteAtomic: u32 = 1;

/// `UVM_MAP_EXTERNAL_ALLOCATION` parameters (9264 bytes, 550+). Larger than the stack frames we
/// like and than one page: build it in a zeroed heap scratch buffer.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UVM_MAP_EXTERNAL_ALLOCATION_PARAMS {
    pub base: u64,
    pub length: u64,
    pub offset: u64,
    pub perGpuAttributes: [UvmGpuMappingAttributes; UVM_MAX_GPUS_V2],
    pub gpuAttributesCount: u64,
    pub rmCtrlFd: i32,
    pub hClient: u32,
    pub hMemory: u32,
    pub rmStatus: u32,
}
const _: () = assert!(core::mem::size_of::<UVM_MAP_EXTERNAL_ALLOCATION_PARAMS>() == 9264);
impl Default for UVM_MAP_EXTERNAL_ALLOCATION_PARAMS {
    fn default() -> Self {
        Self {
            base: 0,
            length: 0,
            offset: 0,
            perGpuAttributes: [UvmGpuMappingAttributes::default(); UVM_MAX_GPUS_V2],
            gpuAttributesCount: 0,
            rmCtrlFd: 0,
            hClient: 0,
            hMemory: 0,
            rmStatus: 0,
        }
    }
}

/// `UVM_UNMAP_EXTERNAL` parameters (40 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UVM_UNMAP_EXTERNAL_PARAMS {
    pub base: u64,
    pub length: u64,
    pub gpuUuid: NvProcessorUuid,
    pub rmStatus: u32,
    pub _pad: u32,
}
const _: () = assert!(core::mem::size_of::<UVM_UNMAP_EXTERNAL_PARAMS>() == 40);

/// `UVM_FREE` parameters, up to 580 (24 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UVM_FREE_PARAMS {
    pub base: u64,
    pub length: u64,
    pub rmStatus: u32,
    pub _pad: u32,
}
const _: () = assert!(core::mem::size_of::<UVM_FREE_PARAMS>() == 24);

/// `UVM_FREE` parameters, 590+ (16 bytes; `length` was removed).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UVM_FREE_PARAMS_V590 {
    pub base: u64,
    pub rmStatus: u32,
    pub _pad: u32,
}
const _: () = assert!(core::mem::size_of::<UVM_FREE_PARAMS_V590>() == 16);

/// `UVM_ENABLE_PEER_ACCESS` parameters (36 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UVM_ENABLE_PEER_ACCESS_PARAMS {
    pub gpuUuidA: NvProcessorUuid,
    pub gpuUuidB: NvProcessorUuid,
    pub rmStatus: u32,
}
const _: () = assert!(core::mem::size_of::<UVM_ENABLE_PEER_ACCESS_PARAMS>() == 36);

// ---------------------------------------------------------------------------------------------
// Driver versions and per-branch layouts (rm-kernel-interface.md §6)
// ---------------------------------------------------------------------------------------------

/// A parsed driver version, e.g. "580.159.04".
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RmVersion {
    pub major: u32,
    pub minor: u32,
    pub patch: Option<u32>,
    /// The string as the driver reported it (trimmed).
    pub text: String,
}

impl RmVersion {
    /// Parse "MAJOR.MINOR[.PATCH]" (surrounding whitespace and NULs allowed).
    pub fn parse(s: &str) -> Result<RmVersion> {
        let text = s
            .trim_matches(|c: char| c.is_whitespace() || c == '\0')
            .to_string();
        let bad = || {
            Error::new(
                Status::UnsupportedDriver,
                format!("unparsable NVIDIA driver version string {text:?}"),
            )
        };
        let mut it = text.split('.');
        let num = |p: Option<&str>| -> Option<u32> {
            let p = p?;
            if p.is_empty() || p.len() > 9 || !p.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            p.parse().ok()
        };
        let major = num(it.next()).ok_or_else(bad)?;
        let minor = num(it.next()).ok_or_else(bad)?;
        let patch = match it.next() {
            None => None,
            Some(p) => Some(num(Some(p)).ok_or_else(bad)?),
        };
        if it.next().is_some() {
            return Err(bad());
        }
        Ok(RmVersion {
            major,
            minor,
            patch,
            text,
        })
    }
}

/// A driver branch whose ABI layouts this crate knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RmBranch {
    R570,
    R575,
    R580,
    R590,
    R595,
}

/// The major versions of [`RmBranch`], in order.
pub const SUPPORTED_RM_BRANCHES: [u32; 5] = [570, 575, 580, 590, 595];

impl RmBranch {
    /// The branch of a major version, if supported.
    pub fn from_major(major: u32) -> Option<RmBranch> {
        match major {
            570 => Some(RmBranch::R570),
            575 => Some(RmBranch::R575),
            580 => Some(RmBranch::R580),
            590 => Some(RmBranch::R590),
            595 => Some(RmBranch::R595),
            _ => None,
        }
    }

    /// The branch for a version, or `Status::UnsupportedDriver` naming the version and the
    /// supported set.
    pub fn for_version(v: &RmVersion) -> Result<RmBranch> {
        RmBranch::from_major(v.major).ok_or_else(|| {
            Error::new(
                Status::UnsupportedDriver,
                format!(
                    "NVIDIA kernel driver {} (branch {}) is not supported: the RM ABI layouts are known only for branches {}",
                    v.text,
                    v.major,
                    SUPPORTED_RM_BRANCHES.map(|b| b.to_string()).join(", ")
                ),
            )
        })
    }

    /// The major version.
    pub fn major(self) -> u32 {
        match self {
            RmBranch::R570 => 570,
            RmBranch::R575 => 575,
            RmBranch::R580 => 580,
            RmBranch::R590 => 590,
            RmBranch::R595 => 595,
        }
    }

    /// The layouts of the structs that changed between branches.
    pub fn layout(self) -> RmLayout {
        let m = self.major();
        RmLayout {
            channel_alloc_params_size: 368,
            memory_alloc_params_size: 128,
            vaspace_params_size: if m >= 580 { 56 } else { 48 },
            gpfifo_schedule_params_size: if m >= 575 { 3 } else { 2 },
            build_version_v2_size: 1032,
            uvm_free_params_size: if m >= 590 { 16 } else { 24 },
            uvm_unregister_channel_params_size: if m >= 590 { 12 } else { 28 },
            uvm_map_external_allocation_params_size: 9264,
            nvos46_size: if m >= 580 { 64 } else { 56 },
        }
    }
}

/// Kernel-side sizes of the structs that differ between supported branches (§6.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RmLayout {
    /// `NV_CHANNEL_ALLOC_PARAMS`.
    pub channel_alloc_params_size: usize,
    /// `NV_MEMORY_ALLOCATION_PARAMS`.
    pub memory_alloc_params_size: usize,
    /// `NV_VASPACE_ALLOCATION_PARAMETERS` (48 before 580; our 56-byte struct is a superset).
    pub vaspace_params_size: usize,
    /// `NVA06C/NVA06F GPFIFO_SCHEDULE` (size-checked).
    pub gpfifo_schedule_params_size: usize,
    /// `NV0000_CTRL_SYSTEM_GET_BUILD_VERSION_V2_PARAMS` (size-checked).
    pub build_version_v2_size: usize,
    /// `UVM_FREE` (use [`UVM_FREE_PARAMS`] at 24, [`UVM_FREE_PARAMS_V590`] at 16).
    pub uvm_free_params_size: usize,
    /// `UVM_UNREGISTER_CHANNEL` (28: [`UVM_UNREGISTER_CHANNEL_PARAMS`], 12: `_V590`).
    pub uvm_unregister_channel_params_size: usize,
    /// `UVM_MAP_EXTERNAL_ALLOCATION`.
    pub uvm_map_external_allocation_params_size: usize,
    /// `NVOS46_PARAMETERS` (64: [`NVOS46_PARAMETERS`], 56: [`NVOS46_PARAMETERS_V570`]).
    pub nvos46_size: usize,
}

/// The string in a NUL-terminated byte buffer.
pub fn c_string(buf: &[u8]) -> String {
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

// ---------------------------------------------------------------------------------------------
// Names for logs and messages
// ---------------------------------------------------------------------------------------------

/// `(value, "NAME")` pairs from the constants above.
macro_rules! name_table {
    ($ty:ty; $($name:ident),+ $(,)?) => {
        &[$(($name as $ty, stringify!($name))),+]
    };
}

/// The RM escapes (`nv_escape.h`, `nv-ioctl-numbers.h`).
const NV_ESC_NAMES: &[(u32, &str)] = name_table!(u32;
    NV_ESC_RM_ALLOC_MEMORY, NV_ESC_RM_FREE, NV_ESC_RM_CONTROL, NV_ESC_RM_ALLOC,
    NV_ESC_RM_DUP_OBJECT, NV_ESC_RM_VID_HEAP_CONTROL, NV_ESC_RM_MAP_MEMORY,
    NV_ESC_RM_UNMAP_MEMORY, NV_ESC_RM_MAP_MEMORY_DMA, NV_ESC_RM_UNMAP_MEMORY_DMA,
    NV_ESC_CARD_INFO, NV_ESC_REGISTER_FD, NV_ESC_ALLOC_OS_EVENT, NV_ESC_FREE_OS_EVENT,
    NV_ESC_STATUS_CODE, NV_ESC_CHECK_VERSION_STR, NV_ESC_IOCTL_XFER_CMD,
    NV_ESC_ATTACH_GPUS_TO_FD, NV_ESC_QUERY_DEVICE_INTR, NV_ESC_SYS_PARAMS, NV_ESC_NUMA_INFO,
    NV_ESC_SET_NUMA_STATUS, NV_ESC_EXPORT_TO_DMABUF_FD, NV_ESC_WAIT_OPEN_COMPLETE,
);

/// The RM classes the library allocates (aliases such as `NV1_MEMORY_USER` left out).
const RM_CLASS_NAMES: &[(u32, &str)] = name_table!(u32;
    NV01_ROOT_CLIENT, NV01_CONTEXT_DMA, NV01_MEMORY_SYSTEM, NV01_MEMORY_LOCAL_USER,
    NV01_MEMORY_VIRTUAL, NV01_MEMORY_SYSTEM_OS_DESCRIPTOR, NV01_EVENT_OS_EVENT, NV01_DEVICE_0,
    NV20_SUBDEVICE_0, GT200_DEBUGGER, FERMI_CONTEXT_SHARE_A, FERMI_VASPACE_A,
    KEPLER_CHANNEL_GROUP_A, VOLTA_USERMODE_A, TURING_USERMODE_A, AMPERE_USERMODE_A,
    HOPPER_USERMODE_A, BLACKWELL_USERMODE_A, VOLTA_CHANNEL_GPFIFO_A, TURING_CHANNEL_GPFIFO_A,
    AMPERE_CHANNEL_GPFIFO_A, AMPERE_CHANNEL_GPFIFO_B, HOPPER_CHANNEL_GPFIFO_A,
    BLACKWELL_CHANNEL_GPFIFO_A, BLACKWELL_CHANNEL_GPFIFO_B, AMPERE_COMPUTE_A, AMPERE_COMPUTE_B,
    ADA_COMPUTE_A, HOPPER_COMPUTE_A, BLACKWELL_COMPUTE_A, BLACKWELL_COMPUTE_B,
    AMPERE_DMA_COPY_A, AMPERE_DMA_COPY_B, HOPPER_DMA_COPY_A, BLACKWELL_DMA_COPY_A,
    BLACKWELL_DMA_COPY_B,
);

/// The RM control commands the library issues.
const RM_CTRL_CMD_NAMES: &[(u32, &str)] = name_table!(u32;
    NV0000_CTRL_CMD_SYSTEM_GET_BUILD_VERSION_V2, NV0000_CTRL_CMD_GPU_GET_ID_INFO_V2,
    NV0080_CTRL_CMD_GPU_GET_CLASSLIST, NV2080_CTRL_CMD_GPU_GET_NAME_STRING,
    NV2080_CTRL_CMD_GPU_GET_GID_INFO, NV2080_CTRL_CMD_GR_GET_INFO, NV2080_CTRL_CMD_FB_GET_INFO,
    NV2080_CTRL_CMD_FB_GET_INFO_V2, NV2080_CTRL_CMD_FB_FLUSH_GPU_CACHE,
    NV2080_CTRL_CMD_MC_GET_ARCH_INFO, NV2080_CTRL_CMD_PERF_BOOST,
    NVC36F_CTRL_CMD_GPFIFO_GET_WORK_SUBMIT_TOKEN, NVA06C_CTRL_CMD_GPFIFO_SCHEDULE,
    NVA06F_CTRL_CMD_GPFIFO_SCHEDULE, NVA06F_CTRL_CMD_BIND,
    NV2080_CTRL_CMD_GR_SET_CTXSW_PREEMPTION_MODE, NV2080_CTRL_CMD_GR_GET_GPC_MASK,
    NV2080_CTRL_CMD_GR_GET_TPC_MASK, NV2080_CTRL_CMD_GPU_GET_ENGINES_V2,
    NV2080_CTRL_CMD_CE_GET_CE_PCE_MASK, NV2080_CTRL_CMD_CE_GET_CAPS_V2,
    NV906F_CTRL_CMD_GET_MMU_FAULT_INFO,
);

/// The UVM ioctls (`uvm_ioctl.h`).
const UVM_IOCTL_NAMES: &[(u64, &str)] = name_table!(u64;
    UVM_INITIALIZE, UVM_DEINITIALIZE, UVM_REGISTER_GPU_VASPACE, UVM_UNREGISTER_GPU_VASPACE,
    UVM_REGISTER_CHANNEL, UVM_UNREGISTER_CHANNEL, UVM_ENABLE_PEER_ACCESS,
    UVM_MAP_EXTERNAL_ALLOCATION, UVM_FREE, UVM_REGISTER_GPU, UVM_UNREGISTER_GPU,
    UVM_UNMAP_EXTERNAL, UVM_CREATE_EXTERNAL_RANGE, UVM_MM_INITIALIZE,
);

fn lookup<T: PartialEq + Copy>(table: &[(T, &'static str)], v: T) -> Option<&'static str> {
    table.iter().find(|(k, _)| *k == v).map(|(_, n)| *n)
}

/// The name of an RM escape number (`NV_ESC_RM_CONTROL` for 0x2A), if known.
pub fn nv_esc_name(nr: u32) -> Option<&'static str> {
    lookup(NV_ESC_NAMES, nr)
}

/// The name of an RM class id (`HOPPER_COMPUTE_A` for 0xCBC0), if it is one the library uses.
pub fn rm_class_name(class: u32) -> Option<&'static str> {
    lookup(RM_CLASS_NAMES, class)
}

/// The name of an RM control command (`NV2080_CTRL_CMD_GR_GET_INFO`), if the library uses it.
pub fn rm_ctrl_cmd_name(cmd: u32) -> Option<&'static str> {
    lookup(RM_CTRL_CMD_NAMES, cmd)
}

/// The name of a UVM ioctl number (`UVM_REGISTER_GPU` for 37), if known.
pub fn uvm_ioctl_name(request: u64) -> Option<&'static str> {
    lookup(UVM_IOCTL_NAMES, request)
}

/// `0xcbc0 HOPPER_COMPUTE_A`, or just the hex number for a class without a known name.
pub fn rm_class_label(class: u32) -> String {
    match rm_class_name(class) {
        Some(n) => format!("{class:#x} {n}"),
        None => format!("{class:#x}"),
    }
}

/// `0x20801201 NV2080_CTRL_CMD_GR_GET_INFO`, or just the hex number for an unknown command.
pub fn rm_ctrl_cmd_label(cmd: u32) -> String {
    match rm_ctrl_cmd_name(cmd) {
        Some(n) => format!("{cmd:#x} {n}"),
        None => format!("{cmd:#x}"),
    }
}

#[cfg(test)]
mod name_tests {
    use super::*;

    #[test]
    fn names_are_found() {
        assert_eq!(nv_esc_name(0x2A), Some("NV_ESC_RM_CONTROL"));
        assert_eq!(
            nv_esc_name(NV_IOCTL_BASE + 10),
            Some("NV_ESC_CHECK_VERSION_STR")
        );
        assert_eq!(rm_class_name(0xCBC0), Some("HOPPER_COMPUTE_A"));
        assert_eq!(rm_class_name(0x0040), Some("NV01_MEMORY_LOCAL_USER"));
        assert_eq!(
            rm_ctrl_cmd_label(0x2080_1201),
            "0x20801201 NV2080_CTRL_CMD_GR_GET_INFO"
        );
        assert_eq!(rm_ctrl_cmd_label(0x1234), "0x1234");
        assert_eq!(uvm_ioctl_name(37), Some("UVM_REGISTER_GPU"));
        assert_eq!(uvm_ioctl_name(0x3000_0001), Some("UVM_INITIALIZE"));
        assert_eq!(uvm_ioctl_name(1000), None);
    }
}
