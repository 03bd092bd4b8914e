//! Driver branch 570, the oldest supported layout: `NV_CHANNEL_ALLOC_PARAMS` with `tpcConfigID`
//! (368 bytes), the 48-byte `NV_VASPACE_ALLOCATION_PARAMETERS`, the 2-byte `GPFIFO_SCHEDULE`
//! parameters and the 56-byte `NVOS46_PARAMETERS` ([`NVOS46_PARAMETERS_V570`], also used by
//! 575).

use super::layout::{BranchAbi, RmBranch, RmLayout};

/// The 570 branch's row of the table.
pub(super) const ABI: BranchAbi = BranchAbi {
    major: 570,
    layout: RmLayout {
        channel_alloc_params_size: 368,
        memory_alloc_params_size: 128,
        vaspace_params_size: 48,
        gpfifo_schedule_params_size: 2,
        build_version_v2_size: 1032,
        uvm_free_params_size: 24,
        uvm_unregister_channel_params_size: 28,
        uvm_map_external_allocation_params_size: 9264,
        nvos46_size: 56,
    },
};

impl RmBranch {
    /// Driver branch 570.
    pub const R570: RmBranch = RmBranch(&ABI);
}

/// `NV_ESC_RM_MAP_MEMORY_DMA` argument, 570/575 layout (56 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
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
