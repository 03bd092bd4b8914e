//! Client, device and subdevice: the `NV01_DEVICE_0` / `NV20_SUBDEVICE_0` allocation
//! parameters and the controls that describe the GPU (`NV0000_CTRL_CMD_*` build version and id
//! info, `NV0080_CTRL_CMD_GPU_GET_CLASSLIST`, `NV2080_CTRL_CMD_GPU_*` name, UUID and engine
//! list, `NV2080_CTRL_CMD_MC_GET_ARCH_INFO`, `NV2080_CTRL_CMD_PERF_BOOST`, the skylines of
//! `NV2080_CTRL_CMD_GPU_GET_SKYLINE_INFO`).

/// `NV01_DEVICE_0` allocation parameters (56 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
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
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct NV2080_ALLOC_PARAMETERS {
    pub subDeviceId: u32,
}
const _: () = assert!(core::mem::size_of::<NV2080_ALLOC_PARAMETERS>() == 4);

/// Client: driver build version, 570+ layout (1032 bytes).
pub const NV0000_CTRL_CMD_SYSTEM_GET_BUILD_VERSION_V2: u32 = 0x0000_013E;
/// Client: GPU id → device instance.
pub const NV0000_CTRL_CMD_GPU_GET_ID_INFO_V2: u32 = 0x0000_0205;
/// Client: GPU id → GPU UUID (attached GPUs only).
pub const NV0000_CTRL_CMD_GPU_GET_UUID_FROM_GPU_ID: u32 = 0x0000_0275;
/// `NV0000_CTRL_GPU_GET_UUID_FROM_GPU_ID_PARAMS.flags`: binary UUID (16 bytes).
pub const NV0000_CTRL_CMD_GPU_GET_UUID_FROM_GPU_ID_FLAGS_FORMAT_BINARY: u32 = 0x2;
/// Size of the UUID buffer of the NV0000 GPU controls (`NV0000_GPU_MAX_GID_LENGTH`).
pub const NV0000_GPU_MAX_GID_LENGTH: usize = 0x100;
/// Device: list of classes.
pub const NV0080_CTRL_CMD_GPU_GET_CLASSLIST: u32 = 0x0080_0201;
/// Subdevice: marketing name.
pub const NV2080_CTRL_CMD_GPU_GET_NAME_STRING: u32 = 0x2080_0110;
/// Subdevice: GPU UUID.
pub const NV2080_CTRL_CMD_GPU_GET_GID_INFO: u32 = 0x2080_014A;
/// Subdevice: architecture / implementation.
pub const NV2080_CTRL_CMD_MC_GET_ARCH_INFO: u32 = 0x2080_1701;
/// Subdevice: clock boost.
pub const NV2080_CTRL_CMD_PERF_BOOST: u32 = 0x2080_200A;
/// Subdevice: the skylines, the virtual GPCs of each compute size (`ctrl2080gpu.h`; a
/// non-privileged control).
pub const NV2080_CTRL_CMD_GPU_GET_SKYLINE_INFO: u32 = 0x2080_019F;

/// `NV0000_CTRL_CMD_SYSTEM_GET_BUILD_VERSION_V2` parameters (1032 bytes, 570+).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
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
        bytemuck::Zeroable::zeroed()
    }
}

/// `NV0000_CTRL_CMD_GPU_GET_UUID_FROM_GPU_ID` parameters (268 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct NV0000_CTRL_GPU_GET_UUID_FROM_GPU_ID_PARAMS {
    pub gpuId: u32,
    pub flags: u32,
    pub gpuUuid: [u8; NV0000_GPU_MAX_GID_LENGTH],
    pub uuidStrLen: u32,
}
const _: () = assert!(core::mem::size_of::<NV0000_CTRL_GPU_GET_UUID_FROM_GPU_ID_PARAMS>() == 268);
impl Default for NV0000_CTRL_GPU_GET_UUID_FROM_GPU_ID_PARAMS {
    fn default() -> Self {
        bytemuck::Zeroable::zeroed()
    }
}

/// `NV0000_CTRL_CMD_GPU_GET_ID_INFO_V2` parameters (32 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
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
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct NV2080_CTRL_GPU_GET_NAME_STRING_PARAMS {
    pub gpuNameStringFlags: u32,
    /// `gpuNameString.ascii` is the first 64 bytes; `unicode` covers all 128.
    pub gpuNameString: [u8; 2 * NV2080_GPU_MAX_NAME_STRING_LENGTH],
}
const _: () = assert!(core::mem::size_of::<NV2080_CTRL_GPU_GET_NAME_STRING_PARAMS>() == 132);
impl Default for NV2080_CTRL_GPU_GET_NAME_STRING_PARAMS {
    fn default() -> Self {
        bytemuck::Zeroable::zeroed()
    }
}

/// Skylines in `NV2080_CTRL_GPU_GET_SKYLINE_INFO_PARAMS` (`NV2080_CTRL_GPU_SKYLINE_INFO_MAX_SKYLINES`).
pub const NV2080_CTRL_GPU_SKYLINE_INFO_MAX_SKYLINES: usize = 9;
/// Non-singleton virtual GPCs of one skyline in the 580 branch
/// (`NV2080_CTRL_GPU_SKYLINE_INFO_MAX_NON_SINGLETON_VGPCS`; 32 from 590 on, see
/// [`crate::sys::rm::NV2080_CTRL_GPU_GET_SKYLINE_INFO_PARAMS_V590`]).
pub const NV2080_CTRL_GPU_SKYLINE_INFO_MAX_NON_SINGLETON_VGPCS: usize = 12;
/// `computeSizeFlag` of the skyline of the whole GPU (`NV2080_CTRL_GPU_PARTITION_FLAG_COMPUTE_SIZE_FULL`).
pub const NV2080_CTRL_GPU_PARTITION_FLAG_COMPUTE_SIZE_FULL: u32 = 0;

/// `NV2080_CTRL_GPU_SKYLINE_INFO`, 580 layout (24 bytes): one compute size's virtual GPCs. The
/// control is new in 580; 570 and 575 do not have it.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct NV2080_CTRL_GPU_SKYLINE_INFO {
    /// TPCs of each non-singleton virtual GPC (0 past the last).
    pub skylineVgpcSize: [u8; NV2080_CTRL_GPU_SKYLINE_INFO_MAX_NON_SINGLETON_VGPCS],
    /// The active singleton virtual GPCs.
    pub singletonVgpcMask: u32,
    /// How many instances of this skyline the GPU holds at once.
    pub maxInstances: u32,
    /// `NV2080_CTRL_GPU_PARTITION_FLAG_COMPUTE_SIZE_*`.
    pub computeSizeFlag: u32,
}
const _: () = assert!(core::mem::size_of::<NV2080_CTRL_GPU_SKYLINE_INFO>() == 24);

/// `NV2080_CTRL_CMD_GPU_GET_SKYLINE_INFO` parameters, 580 layout (220 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct NV2080_CTRL_GPU_GET_SKYLINE_INFO_PARAMS {
    pub skylineTable: [NV2080_CTRL_GPU_SKYLINE_INFO; NV2080_CTRL_GPU_SKYLINE_INFO_MAX_SKYLINES],
    /// Entries of `skylineTable` that hold a skyline.
    pub validEntries: u32,
}
const _: () = assert!(core::mem::size_of::<NV2080_CTRL_GPU_GET_SKYLINE_INFO_PARAMS>() == 220);

/// GID data size.
pub const NV2080_GPU_MAX_GID_LENGTH: usize = 0x100;
/// GID flags: FORMAT_BINARY (bit 1).
pub const NV2080_GPU_CMD_GPU_GET_GID_FLAGS_FORMAT_BINARY: u32 = 2;

/// `NV2080_CTRL_CMD_GPU_GET_GID_INFO` parameters (268 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct NV2080_CTRL_GPU_GET_GID_INFO_PARAMS {
    pub index: u32,
    pub flags: u32,
    pub length: u32,
    pub data: [u8; NV2080_GPU_MAX_GID_LENGTH],
}
const _: () = assert!(core::mem::size_of::<NV2080_CTRL_GPU_GET_GID_INFO_PARAMS>() == 268);
impl Default for NV2080_CTRL_GPU_GET_GID_INFO_PARAMS {
    fn default() -> Self {
        bytemuck::Zeroable::zeroed()
    }
}

/// `NV2080_CTRL_CMD_MC_GET_ARCH_INFO` parameters (16 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct NV2080_CTRL_MC_GET_ARCH_INFO_PARAMS {
    /// E.g. 0x180 = GH100 (`NV2080_CTRL_MC_ARCH_INFO_ARCHITECTURE_GH100`).
    pub architecture: u32,
    pub implementation: u32,
    pub revision: u32,
    pub subRevision: u8,
    pub _pad: [u8; 3],
}
const _: () = assert!(core::mem::size_of::<NV2080_CTRL_MC_GET_ARCH_INFO_PARAMS>() == 16);

/// `NV2080_CTRL_PERF_BOOST_FLAGS_CMD` (bits 1:0): boost to the highest P-state.
pub const NV2080_CTRL_PERF_BOOST_FLAGS_CMD_BOOST_TO_MAX: u32 = 0x2;
/// `NV2080_CTRL_PERF_BOOST_FLAGS_CUDA` (bit 4): the request comes from a CUDA context.
pub const NV2080_CTRL_PERF_BOOST_FLAGS_CUDA_YES: u32 = 0x10;
/// Boost duration: until cleared.
pub const NV2080_CTRL_PERF_BOOST_DURATION_INFINITE: u32 = 0xffff_ffff;

/// `NV2080_CTRL_CMD_PERF_BOOST` parameters (8 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct NV2080_CTRL_PERF_BOOST_PARAMS {
    pub flags: u32,
    pub duration: u32,
}
const _: () = assert!(core::mem::size_of::<NV2080_CTRL_PERF_BOOST_PARAMS>() == 8);

/// Subdevice: the engines the GPU exposes (`NV2080_ENGINE_TYPE_*` list).
pub const NV2080_CTRL_CMD_GPU_GET_ENGINES_V2: u32 = 0x2080_0170;
/// Capacity of the engine list in [`NV2080_CTRL_GPU_GET_ENGINES_V2_PARAMS`].
pub const NV2080_GPU_MAX_ENGINES_LIST_SIZE: usize = 0x54;

/// `NV2080_CTRL_CMD_GPU_GET_ENGINES_V2` parameters (340 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct NV2080_CTRL_GPU_GET_ENGINES_V2_PARAMS {
    pub engineCount: u32,
    pub engineList: [u32; NV2080_GPU_MAX_ENGINES_LIST_SIZE],
}
const _: () = assert!(core::mem::size_of::<NV2080_CTRL_GPU_GET_ENGINES_V2_PARAMS>() == 340);
impl Default for NV2080_CTRL_GPU_GET_ENGINES_V2_PARAMS {
    fn default() -> Self {
        bytemuck::Zeroable::zeroed()
    }
}
