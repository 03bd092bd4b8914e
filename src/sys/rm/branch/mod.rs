//! The driver branches whose ABI is known, in one table (rm-kernel-interface.md §6).
//!
//! The RM and UVM drivers do **not** size-check RM_ALLOC class parameters or UVM ioctl structs
//! (they copy their own `sizeof` in and back out), so a layout that changed between branches
//! must be sent in the loaded branch's form. Each supported branch is one file here (`r570.rs`
//! … `r595.rs`): its [`RmLayout`] row, its `RmBranch::R<major>` name, and the struct variants
//! that branch introduced (`NVOS46_PARAMETERS_V570`, `UVM_FREE_PARAMS_V590`, ...). Adding a
//! branch is one new file plus its line in [`BRANCHES`]; unknown branches are refused with
//! `Status::UnsupportedDriver`.

mod layout;
mod r570;
mod r575;
mod r580;
mod r590;
mod r595;

use crate::error::{Error, Result, Status};
use crate::sys::rm::version::RmVersion;

pub use layout::{BranchAbi, RmBranch, RmLayout};
pub use r570::NVOS46_PARAMETERS_V570;
pub use r590::{
    NV2080_CTRL_GPU_GET_SKYLINE_INFO_PARAMS_V590,
    NV2080_CTRL_GPU_SKYLINE_INFO_MAX_NON_SINGLETON_VGPCS_V590, NV2080_CTRL_GPU_SKYLINE_INFO_V590,
    UVM_FREE_PARAMS_V590, UVM_UNREGISTER_CHANNEL_PARAMS_V590,
};

/// The table: every supported branch, oldest first.
pub const BRANCHES: [RmBranch; 5] = [
    RmBranch::R570,
    RmBranch::R575,
    RmBranch::R580,
    RmBranch::R590,
    RmBranch::R595,
];

/// The major versions of [`BRANCHES`], in order.
pub const SUPPORTED_RM_BRANCHES: [u32; BRANCHES.len()] = {
    let mut majors = [0; BRANCHES.len()];
    let mut i = 0;
    while i < BRANCHES.len() {
        majors[i] = BRANCHES[i].0.major;
        i += 1;
    }
    majors
};

// The table is ordered and has one row per major version.
const _: () = {
    let mut i = 1;
    while i < SUPPORTED_RM_BRANCHES.len() {
        assert!(SUPPORTED_RM_BRANCHES[i - 1] < SUPPORTED_RM_BRANCHES[i]);
        i += 1;
    }
};

impl RmBranch {
    /// The branch of a major version, if supported.
    pub fn from_major(major: u32) -> Option<RmBranch> {
        BRANCHES.into_iter().find(|b| b.major() == major)
    }

    /// The branch for a version, or `Status::UnsupportedDriver` naming the version and the
    /// supported set.
    pub fn for_version(v: &RmVersion) -> Result<RmBranch> {
        RmBranch::from_major(v.major).ok_or_else(|| {
            Error::new(
                Status::UnsupportedDriver,
                format!(
                    "NVIDIA kernel driver {} (branch {}) is not supported: the RM ABI layouts are known only for branches {}",
                    v.text,
                    v.major,
                    SUPPORTED_RM_BRANCHES.map(|b| b.to_string()).join(", ")
                ),
            )
        })
    }
}
