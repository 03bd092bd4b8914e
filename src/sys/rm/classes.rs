//! RM class ids (`class/cl*.h`) the library allocates or recognises, the engine types of
//! `NV2080_ENGINE_TYPE_*`, and the small allocation parameters of the usermode and copy
//! classes.

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
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
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
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct NVB0B5_ALLOCATION_PARAMETERS {
    pub version: u32,
    pub engineType: u32,
}
const _: () = assert!(core::mem::size_of::<NVB0B5_ALLOCATION_PARAMETERS>() == 8);
/// `NVB0B5_ALLOCATION_PARAMETERS_VERSION_1`.
pub const NVB0B5_ALLOCATION_PARAMETERS_VERSION_1: u32 = 1;
