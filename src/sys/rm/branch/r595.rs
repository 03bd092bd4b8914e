//! Driver branch 595. The same layouts as 590.

use super::layout::{BranchAbi, RmBranch, RmLayout};

/// The 595 branch's row of the table.
pub(super) const ABI: BranchAbi = BranchAbi {
    major: 595,
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
    /// Driver branch 595.
    pub const R595: RmBranch = RmBranch(&ABI);
}
