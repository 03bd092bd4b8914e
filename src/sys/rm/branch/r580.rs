//! Driver branch 580. `NV_VASPACE_ALLOCATION_PARAMETERS` gains `pasid` (56 bytes) and
//! `NVOS46_PARAMETERS` gains `flags2` and `kindOverride` (64 bytes).

use super::layout::{BranchAbi, RmBranch, RmLayout};

/// The 580 branch's row of the table.
pub(super) const ABI: BranchAbi = BranchAbi {
    major: 580,
    layout: RmLayout {
        channel_alloc_params_size: 368,
        memory_alloc_params_size: 128,
        vaspace_params_size: 56,
        gpfifo_schedule_params_size: 3,
        build_version_v2_size: 1032,
        uvm_free_params_size: 24,
        uvm_unregister_channel_params_size: 28,
        uvm_map_external_allocation_params_size: 9264,
        nvos46_size: 64,
    },
};

impl RmBranch {
    /// Driver branch 580.
    pub const R580: RmBranch = RmBranch(&ABI);
}
