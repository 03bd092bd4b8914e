//! RM status codes (`nvstatuscodes.h`).

/// Success.
pub const NV_OK: u32 = 0;
/// Invalid argument.
pub const NV_ERR_INVALID_ARGUMENT: u32 = 0x1F;
/// Invalid class.
pub const NV_ERR_INVALID_CLASS: u32 = 0x22;
/// Invalid device (UVM: a GPU not registered, or a peer pair not enabled).
pub const NV_ERR_INVALID_DEVICE: u32 = 0x26;
/// Invalid parameter struct (wrong size).
pub const NV_ERR_INVALID_PARAM_STRUCT: u32 = 0x3A;
/// Out of memory.
pub const NV_ERR_NO_MEMORY: u32 = 0x51;
/// Not supported.
pub const NV_ERR_NOT_SUPPORTED: u32 = 0x56;
/// State in use (a second map on one fd).
pub const NV_ERR_STATE_IN_USE: u32 = 0x63;
/// UVM: address already in use.
pub const NV_ERR_UVM_ADDRESS_IN_USE: u32 = 0x68;
/// Nothing to do (UVM_MM_INITIALIZE when not needed).
pub const NV_WARN_NOTHING_TO_DO: u32 = 0x0001_0006;

/// The symbolic name of an RM status value, for messages.
pub fn nv_status_name(status: u32) -> &'static str {
    match status {
        0x00 => "NV_OK",
        0x03 => "NV_ERR_BUSY_RETRY",
        0x0F => "NV_ERR_GPU_IS_LOST",
        0x16 => "NV_ERR_ILLEGAL_ACTION",
        0x17 => "NV_ERR_IN_USE",
        0x1A => "NV_ERR_INSUFFICIENT_RESOURCES",
        0x1B => "NV_ERR_INSUFFICIENT_PERMISSIONS",
        0x1E => "NV_ERR_INVALID_ADDRESS",
        0x1F => "NV_ERR_INVALID_ARGUMENT",
        0x22 => "NV_ERR_INVALID_CLASS",
        0x23 => "NV_ERR_INVALID_CLIENT",
        0x24 => "NV_ERR_INVALID_COMMAND",
        0x26 => "NV_ERR_INVALID_DEVICE",
        0x29 => "NV_ERR_INVALID_FLAGS",
        0x2E => "NV_ERR_INVALID_LIMIT",
        0x31 => "NV_ERR_INVALID_OBJECT",
        0x33 => "NV_ERR_INVALID_OBJECT_HANDLE",
        0x34 => "NV_ERR_INVALID_OBJECT_NEW",
        0x36 => "NV_ERR_INVALID_OBJECT_PARENT",
        0x37 => "NV_ERR_INVALID_OFFSET",
        0x38 => "NV_ERR_INVALID_OPERATION",
        0x3A => "NV_ERR_INVALID_PARAM_STRUCT",
        0x3B => "NV_ERR_INVALID_PARAMETER",
        0x3D => "NV_ERR_INVALID_POINTER",
        0x3F => "NV_ERR_INVALID_REQUEST",
        0x40 => "NV_ERR_INVALID_STATE",
        0x4F => "NV_ERR_NO_FREE_FIFOS",
        0x51 => "NV_ERR_NO_MEMORY",
        0x56 => "NV_ERR_NOT_SUPPORTED",
        0x57 => "NV_ERR_OBJECT_NOT_FOUND",
        0x59 => "NV_ERR_OPERATING_SYSTEM",
        0x5B => "NV_ERR_OUT_OF_RANGE",
        0x5F => "NV_ERR_PROTECTION_FAULT",
        0x60 => "NV_ERR_RC_ERROR",
        0x63 => "NV_ERR_STATE_IN_USE",
        0x65 => "NV_ERR_TIMEOUT",
        0x68 => "NV_ERR_UVM_ADDRESS_IN_USE",
        0x6A => "NV_ERR_LIB_RM_VERSION_MISMATCH",
        0xFFFF => "NV_ERR_GENERIC",
        0x0001_0006 => "NV_WARN_NOTHING_TO_DO",
        _ => "NV_ERR_?",
    }
}
