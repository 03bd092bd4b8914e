//! The graphics/compute engine controls (`ctrl2080gr.h`): GR info, GPC/TPC masks and the
//! context-switch preemption mode.

/// Subdevice: GR engine information.
pub const NV2080_CTRL_CMD_GR_GET_INFO: u32 = 0x2080_1201;

/// GR routing information (16 bytes; zero unless MIG).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
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
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
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
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct NV2080_CTRL_GR_INFO {
    pub index: u32,
    pub data: u32,
}
const _: () = assert!(core::mem::size_of::<NV2080_CTRL_GR_INFO>() == 8);

/// `NV2080_CTRL_CMD_GR_GET_INFO` parameters (32 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
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
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct NV2080_CTRL_GR_GET_GPC_MASK_PARAMS {
    pub grRouteInfo: NV2080_CTRL_GR_ROUTE_INFO,
    pub gpcMask: u32,
    pub _pad: u32,
}
const _: () = assert!(core::mem::size_of::<NV2080_CTRL_GR_GET_GPC_MASK_PARAMS>() == 24);

/// `NV2080_CTRL_CMD_GR_GET_TPC_MASK` parameters (24 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct NV2080_CTRL_GR_GET_TPC_MASK_PARAMS {
    pub grRouteInfo: NV2080_CTRL_GR_ROUTE_INFO,
    pub gpcId: u32,
    pub tpcMask: u32,
}
const _: () = assert!(core::mem::size_of::<NV2080_CTRL_GR_GET_TPC_MASK_PARAMS>() == 24);
