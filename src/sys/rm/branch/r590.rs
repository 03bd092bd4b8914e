//! Driver branch 590. UVM: `UVM_FREE` loses `length` ([`UVM_FREE_PARAMS_V590`], 16 bytes) and
//! `UVM_UNREGISTER_CHANNEL` loses the GPU UUID ([`UVM_UNREGISTER_CHANNEL_PARAMS_V590`],
//! 12 bytes). `NV2080_CTRL_CMD_GPU_GET_SKYLINE_INFO` holds 32 virtual GPCs per skyline, not 12
//! ([`NV2080_CTRL_GPU_GET_SKYLINE_INFO_PARAMS_V590`], 400 bytes).

use super::layout::{BranchAbi, RmBranch, RmLayout};

/// The 590 branch's row of the table.
pub(super) const ABI: BranchAbi = BranchAbi {
    major: 590,
    layout: RmLayout {
        channel_alloc_params_size: 368,
        memory_alloc_params_size: 128,
        vaspace_params_size: 56,
        gpfifo_schedule_params_size: 3,
        build_version_v2_size: 1032,
        uvm_free_params_size: 16,
        uvm_unregister_channel_params_size: 12,
        uvm_map_external_allocation_params_size: 9264,
        nvos46_size: 64,
    },
};

impl RmBranch {
    /// Driver branch 590.
    pub const R590: RmBranch = RmBranch(&ABI);
}

/// `UVM_UNREGISTER_CHANNEL` parameters, 590+ (12 bytes; the UUID was removed).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct UVM_UNREGISTER_CHANNEL_PARAMS_V590 {
    pub hClient: u32,
    pub hChannel: u32,
    pub rmStatus: u32,
}
const _: () = assert!(core::mem::size_of::<UVM_UNREGISTER_CHANNEL_PARAMS_V590>() == 12);

/// `UVM_FREE` parameters, 590+ (16 bytes; `length` was removed).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct UVM_FREE_PARAMS_V590 {
    pub base: u64,
    pub rmStatus: u32,
    pub _pad: u32,
}
const _: () = assert!(core::mem::size_of::<UVM_FREE_PARAMS_V590>() == 16);

/// Non-singleton virtual GPCs of one skyline, 590+ (`NV2080_CTRL_GPU_SKYLINE_INFO_MAX_NON_SINGLETON_VGPCS`).
pub const NV2080_CTRL_GPU_SKYLINE_INFO_MAX_NON_SINGLETON_VGPCS_V590: usize = 32;

/// `NV2080_CTRL_GPU_SKYLINE_INFO`, 590+ (44 bytes; the fields of
/// [`crate::sys::rm::NV2080_CTRL_GPU_SKYLINE_INFO`] with 32 virtual GPC sizes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct NV2080_CTRL_GPU_SKYLINE_INFO_V590 {
    pub skylineVgpcSize: [u8; NV2080_CTRL_GPU_SKYLINE_INFO_MAX_NON_SINGLETON_VGPCS_V590],
    pub singletonVgpcMask: u32,
    pub maxInstances: u32,
    pub computeSizeFlag: u32,
}
const _: () = assert!(core::mem::size_of::<NV2080_CTRL_GPU_SKYLINE_INFO_V590>() == 44);

/// `NV2080_CTRL_CMD_GPU_GET_SKYLINE_INFO` parameters, 590+ (400 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct NV2080_CTRL_GPU_GET_SKYLINE_INFO_PARAMS_V590 {
    pub skylineTable: [NV2080_CTRL_GPU_SKYLINE_INFO_V590;
        crate::sys::rm::NV2080_CTRL_GPU_SKYLINE_INFO_MAX_SKYLINES],
    pub validEntries: u32,
}
const _: () = assert!(core::mem::size_of::<NV2080_CTRL_GPU_GET_SKYLINE_INFO_PARAMS_V590>() == 400);
