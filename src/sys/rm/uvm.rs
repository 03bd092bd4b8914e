//! The UVM driver (nvidia-uvm.ko, `/dev/nvidia-uvm`; `kernel-open/nvidia-uvm/uvm_ioctl.h`,
//! `uvm_linux_ioctl.h`). Plain integer request numbers and no size check: the kernel copies its
//! own `sizeof` in and out, so the structs that changed between branches are selected per
//! branch ([`crate::sys::rm::RmLayout`]; the 590 layouts are in [`crate::sys::rm::branch`]).

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
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, bytemuck::Pod, bytemuck::Zeroable)]
pub struct NvProcessorUuid {
    pub uuid: [u8; 16],
}
const _: () = assert!(core::mem::size_of::<NvProcessorUuid>() == 16);

/// `UVM_INITIALIZE` parameters (16 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
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
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct UVM_MM_INITIALIZE_PARAMS {
    pub uvmFd: i32,
    pub rmStatus: u32,
}
const _: () = assert!(core::mem::size_of::<UVM_MM_INITIALIZE_PARAMS>() == 8);

/// `UVM_REGISTER_GPU` parameters (40 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
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
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct UVM_UNREGISTER_GPU_PARAMS {
    pub gpu_uuid: NvProcessorUuid,
    pub rmStatus: u32,
}
const _: () = assert!(core::mem::size_of::<UVM_UNREGISTER_GPU_PARAMS>() == 20);

/// `UVM_REGISTER_GPU_VASPACE` parameters (32 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
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
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct UVM_UNREGISTER_GPU_VASPACE_PARAMS {
    pub gpuUuid: NvProcessorUuid,
    pub rmStatus: u32,
}
const _: () = assert!(core::mem::size_of::<UVM_UNREGISTER_GPU_VASPACE_PARAMS>() == 20);

/// `UVM_REGISTER_CHANNEL` parameters (56 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
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
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct UVM_UNREGISTER_CHANNEL_PARAMS {
    pub gpuUuid: NvProcessorUuid,
    pub hClient: u32,
    pub hChannel: u32,
    pub rmStatus: u32,
}
const _: () = assert!(core::mem::size_of::<UVM_UNREGISTER_CHANNEL_PARAMS>() == 28);

/// `UVM_CREATE_EXTERNAL_RANGE` parameters (24 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct UVM_CREATE_EXTERNAL_RANGE_PARAMS {
    pub base: u64,
    pub length: u64,
    pub rmStatus: u32,
    pub _pad: u32,
}
const _: () = assert!(core::mem::size_of::<UVM_CREATE_EXTERNAL_RANGE_PARAMS>() == 24);

/// Per-GPU mapping attributes (36 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
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
        bytemuck::Zeroable::zeroed()
    }
}

/// `UVM_UNMAP_EXTERNAL` parameters (40 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
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
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct UVM_FREE_PARAMS {
    pub base: u64,
    pub length: u64,
    pub rmStatus: u32,
    pub _pad: u32,
}
const _: () = assert!(core::mem::size_of::<UVM_FREE_PARAMS>() == 24);

/// `UVM_ENABLE_PEER_ACCESS` parameters (36 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct UVM_ENABLE_PEER_ACCESS_PARAMS {
    pub gpuUuidA: NvProcessorUuid,
    pub gpuUuidB: NvProcessorUuid,
    pub rmStatus: u32,
}
const _: () = assert!(core::mem::size_of::<UVM_ENABLE_PEER_ACCESS_PARAMS>() == 36);
