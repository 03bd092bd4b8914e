//! Driver branch 575. `NVA06C/NVA06F_CTRL_GPFIFO_SCHEDULE_PARAMS` gains `bSkipEnable` (3 bytes).

use super::layout::{BranchAbi, RmBranch, RmLayout};

/// The 575 branch's row of the table.
pub(super) const ABI: BranchAbi = BranchAbi {
    major: 575,
    layout: RmLayout {
        channel_alloc_params_size: 368,
        memory_alloc_params_size: 128,
        vaspace_params_size: 48,
        gpfifo_schedule_params_size: 3,
        build_version_v2_size: 1032,
        uvm_free_params_size: 24,
        uvm_unregister_channel_params_size: 28,
        uvm_map_external_allocation_params_size: 9264,
        nvos46_size: 56,
    },
};

impl RmBranch {
    /// Driver branch 575.
    pub const R575: RmBranch = RmBranch(&ABI);
}
