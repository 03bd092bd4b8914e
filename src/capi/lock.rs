//! The lock of a C command-buffer handle ([`StoreRelease`], see `crate::os::lock`).

pub(crate) use crate::os::lock::StoreRelease;

/// A C command buffer behind its lock.
pub(crate) type CmdBufLock = parking_lot::lock_api::Mutex<StoreRelease, crate::core::CmdBuf>;
