//! RM / UVM ABI layouts and numbers against the values in rm-kernel-interface.md (§1.2, §1.3,
//! §2.2, §2.3, §2.5, §3, §4.1, §6.2), plus the driver-version gate of the RM backend.
//! Every expected number in these modules is copied from the document, not computed from the
//! code.

#[path = "rm_layout/branches.rs"]
mod branches;
#[path = "rm_layout/escape.rs"]
mod escape;
#[path = "rm_layout/uvm.rs"]
mod uvm;
