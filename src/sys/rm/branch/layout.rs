//! The types of the per-branch table: what a driver branch's ABI looks like where it differs
//! between the supported branches (rm-kernel-interface.md §6.2).

/// Kernel-side sizes of the structs that differ between supported branches (§6.2). The RM and
/// UVM drivers do not size-check RM_ALLOC class parameters or UVM structs, so the backend sends
/// the layout of the loaded branch: where two layouts exist, it compares the size here with
/// the `size_of` of each Rust struct.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
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
    /// `UVM_FREE` (24: [`crate::sys::rm::UVM_FREE_PARAMS`], 16:
    /// [`crate::sys::rm::UVM_FREE_PARAMS_V590`]).
    pub uvm_free_params_size: usize,
    /// `UVM_UNREGISTER_CHANNEL` (28: [`crate::sys::rm::UVM_UNREGISTER_CHANNEL_PARAMS`], 12:
    /// [`crate::sys::rm::UVM_UNREGISTER_CHANNEL_PARAMS_V590`]).
    pub uvm_unregister_channel_params_size: usize,
    /// `UVM_MAP_EXTERNAL_ALLOCATION`.
    pub uvm_map_external_allocation_params_size: usize,
    /// `NVOS46_PARAMETERS` (64: [`crate::sys::rm::NVOS46_PARAMETERS`], 56:
    /// [`crate::sys::rm::NVOS46_PARAMETERS_V570`]).
    pub nvos46_size: usize,
}

/// One row of the branch table: a major version and its layouts.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct BranchAbi {
    /// The driver's major version (570 for 570.xx.yy).
    pub major: u32,
    /// The layouts of the structs that changed between branches.
    pub layout: RmLayout,
}

/// A driver branch whose ABI layouts this crate knows: one row of the table in
/// [`crate::sys::rm::branch`]. Each branch file names its branch (`RmBranch::R580`).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct RmBranch(pub(super) &'static BranchAbi);

impl RmBranch {
    /// The major version.
    pub fn major(self) -> u32 {
        self.0.major
    }

    /// The layouts of the structs that changed between branches.
    pub fn layout(self) -> RmLayout {
        self.0.layout
    }
}

impl core::fmt::Debug for RmBranch {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "R{}", self.0.major)
    }
}
