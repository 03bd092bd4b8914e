//! Channels and channel groups: the TSG (`KEPLER_CHANNEL_GROUP_A`), context-share and GPFIFO
//! channel allocation parameters, the error notifier (`NvNotification`, robust-channel error
//! types), and the channel and TSG controls (work-submit token, GPFIFO_SCHEDULE, BIND, MMU
//! fault info).

/// `KEPLER_CHANNEL_GROUP_A` allocation parameters (20 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct NV_CHANNEL_GROUP_ALLOCATION_PARAMETERS {
    pub hObjectError: u32,
    pub hObjectEccError: u32,
    pub hVASpace: u32,
    pub engineType: u32,
    pub bIsCallingContextVgpuPlugin: u8,
    pub _pad: [u8; 3],
}
const _: () = assert!(core::mem::size_of::<NV_CHANNEL_GROUP_ALLOCATION_PARAMETERS>() == 20);

/// `FERMI_CONTEXT_SHARE_A` allocation parameters (12 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct NV_CTXSHARE_ALLOCATION_PARAMETERS {
    pub hVASpace: u32,
    pub flags: u32,
    /// Out: the subcontext id (VEID).
    pub subctxId: u32,
}
const _: () = assert!(core::mem::size_of::<NV_CTXSHARE_ALLOCATION_PARAMETERS>() == 12);

/// Context-share flag: SUBCONTEXT 1:0 = SYNC.
pub const NV_CTXSHARE_ALLOCATION_FLAGS_SUBCONTEXT_SYNC: u32 = 0;
/// Context-share flag: SUBCONTEXT 1:0 = ASYNC.
pub const NV_CTXSHARE_ALLOCATION_FLAGS_SUBCONTEXT_ASYNC: u32 = 1;

/// A physical memory descriptor inside [`NV_CHANNEL_ALLOC_PARAMS`] (24 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct NV_MEMORY_DESC_PARAMS {
    pub base: u64,
    pub size: u64,
    pub addressSpace: u32,
    pub cacheAttrib: u32,
}
const _: () = assert!(core::mem::size_of::<NV_MEMORY_DESC_PARAMS>() == 24);

/// Number of USERD slots in [`NV_CHANNEL_ALLOC_PARAMS`].
pub const NV_MAX_SUBDEVICES: usize = 8;
/// Confidential-computing IV size in dwords.
pub const CC_CHAN_ALLOC_IV_SIZE_DWORD: usize = 3;
/// Confidential-computing nonce size in dwords.
pub const CC_CHAN_ALLOC_NONCE_SIZE_DWORD: usize = 8;

/// GPFIFO channel allocation parameters (`NV_CHANNELGPFIFO_ALLOCATION_PARAMETERS`), the
/// 570–595 layout (368 bytes, `tpcConfigID` new in 570). The 610 layout inserts a field at 32
/// and is not supported.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct NV_CHANNEL_ALLOC_PARAMS {
    pub hObjectError: u32,
    pub hObjectBuffer: u32,
    /// GPU VA of the GPFIFO ring.
    pub gpFifoOffset: u64,
    pub gpFifoEntries: u32,
    pub flags: u32,
    pub hContextShare: u32,
    pub hVASpace: u32,
    pub hUserdMemory: [u32; NV_MAX_SUBDEVICES],
    pub userdOffset: [u64; NV_MAX_SUBDEVICES],
    pub engineType: u32,
    /// Out: channel id.
    pub cid: u32,
    pub subDeviceId: u32,
    pub hObjectEccError: u32,
    pub instanceMem: NV_MEMORY_DESC_PARAMS,
    pub userdMem: NV_MEMORY_DESC_PARAMS,
    pub ramfcMem: NV_MEMORY_DESC_PARAMS,
    pub mthdbufMem: NV_MEMORY_DESC_PARAMS,
    pub hPhysChannelGroup: u32,
    pub internalFlags: u32,
    pub errorNotifierMem: NV_MEMORY_DESC_PARAMS,
    pub eccErrorNotifierMem: NV_MEMORY_DESC_PARAMS,
    pub ProcessID: u32,
    pub SubProcessID: u32,
    pub encryptIv: [u32; CC_CHAN_ALLOC_IV_SIZE_DWORD],
    pub decryptIv: [u32; CC_CHAN_ALLOC_IV_SIZE_DWORD],
    pub hmacNonce: [u32; CC_CHAN_ALLOC_NONCE_SIZE_DWORD],
    pub tpcConfigID: u32,
    pub _pad: u32,
}
const _: () = assert!(core::mem::size_of::<NV_CHANNEL_ALLOC_PARAMS>() == 368);

/// The same struct under its header name.
pub type NV_CHANNELGPFIFO_ALLOCATION_PARAMETERS = NV_CHANNEL_ALLOC_PARAMS;

/// `GT200_DEBUGGER` allocation parameters (12 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct NV83DE_ALLOC_PARAMETERS {
    pub hDebuggerClient_Obsolete: u32,
    pub hAppClient: u32,
    pub hClass3dObject: u32,
}
const _: () = assert!(core::mem::size_of::<NV83DE_ALLOC_PARAMETERS>() == 12);

/// A notification record (`NvNotification`, 16 bytes). RM writes a channel's robust-channel
/// error into entry [`NV_CHANNELGPFIFO_NOTIFICATION_TYPE_ERROR`] of the error notifier: the
/// error type (the Xid number, `ROBUST_CHANNEL_*`) in `info32`, the engine in `info16`, and
/// `status = 0xffff` last.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct NvNotification {
    pub timeStamp: [u32; 2],
    pub info32: u32,
    pub info16: u16,
    pub status: u16,
}
const _: () = assert!(core::mem::size_of::<NvNotification>() == 16);

/// Index of the error notification in a channel's error notifier.
pub const NV_CHANNELGPFIFO_NOTIFICATION_TYPE_ERROR: u32 = 0;
/// Index of the work-submit-token notification.
pub const NV_CHANNELGPFIFO_NOTIFICATION_TYPE_WORK_SUBMIT_TOKEN: u32 = 1;
/// Number of channel notifications (minimum error-notifier size = 3 × 16 bytes).
pub const NV_CHANNELGPFIFO_NOTIFICATION_TYPE__SIZE_1: u32 = 3;
/// `status` value RM writes for a robust-channel (RC) error.
pub const NV_NOTIFICATION_STATUS_RC_ERROR: u16 = 0xFFFF;

/// Robust-channel error types (Xid numbers) that `info32` of the error notification carries.
pub const ROBUST_CHANNEL_FIFO_ERROR_IDLE_TIMEOUT: u32 = 8;
/// Graphics engine exception.
pub const ROBUST_CHANNEL_GR_EXCEPTION: u32 = 13;
/// MMU fault.
pub const ROBUST_CHANNEL_FIFO_ERROR_MMU_ERR_FLT: u32 = 31;
/// PBDMA (pushbuffer) error.
pub const ROBUST_CHANNEL_PBDMA_ERROR: u32 = 32;
/// Channel reset by RM ("GPU stopped processing").
pub const ROBUST_CHANNEL_RESETCHANNEL_VERIF_ERROR: u32 = 43;
/// Preemptive channel removal.
pub const ROBUST_CHANNEL_PREEMPTIVE_REMOVAL: u32 = 45;
/// Graphics class error.
pub const ROBUST_CHANNEL_GR_CLASS_ERROR: u32 = 69;

/// A short name for a robust-channel error type.
pub fn robust_channel_error_name(info32: u32) -> &'static str {
    match info32 {
        ROBUST_CHANNEL_FIFO_ERROR_IDLE_TIMEOUT => "FIFO idle timeout",
        ROBUST_CHANNEL_GR_EXCEPTION => "graphics/compute engine exception",
        ROBUST_CHANNEL_FIFO_ERROR_MMU_ERR_FLT => "MMU fault",
        ROBUST_CHANNEL_PBDMA_ERROR => "PBDMA (pushbuffer) error",
        ROBUST_CHANNEL_RESETCHANNEL_VERIF_ERROR => "channel reset",
        ROBUST_CHANNEL_PREEMPTIVE_REMOVAL => "preemptive channel removal",
        ROBUST_CHANNEL_GR_CLASS_ERROR => "graphics class error",
        _ => "robust-channel error",
    }
}
/// Channel: work-submit token for the doorbell.
pub const NVC36F_CTRL_CMD_GPFIFO_GET_WORK_SUBMIT_TOKEN: u32 = 0xC36F_0108;
/// TSG: enable/disable scheduling.
pub const NVA06C_CTRL_CMD_GPFIFO_SCHEDULE: u32 = 0xA06C_0101;
/// Channel without a TSG: enable/disable scheduling.
pub const NVA06F_CTRL_CMD_GPFIFO_SCHEDULE: u32 = 0xA06F_0103;
/// Channel without a TSG: bind to an engine.
pub const NVA06F_CTRL_CMD_BIND: u32 = 0xA06F_0104;

/// `NVC36F_CTRL_CMD_GPFIFO_GET_WORK_SUBMIT_TOKEN` parameters (4 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct NVC36F_CTRL_CMD_GPFIFO_GET_WORK_SUBMIT_TOKEN_PARAMS {
    pub workSubmitToken: u32,
}
const _: () =
    assert!(core::mem::size_of::<NVC36F_CTRL_CMD_GPFIFO_GET_WORK_SUBMIT_TOKEN_PARAMS>() == 4);

/// `NVA06F_CTRL_CMD_GPFIFO_SCHEDULE` / `NVA06C_CTRL_CMD_GPFIFO_SCHEDULE` parameters: 3 bytes on
/// 575+ (`bSkipEnable` new), 2 bytes before. Send
/// [`crate::sys::rm::RmLayout::gpfifo_schedule_params_size`].
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct NVA06F_CTRL_GPFIFO_SCHEDULE_PARAMS {
    pub bEnable: u8,
    pub bSkipSubmit: u8,
    pub bSkipEnable: u8,
}
const _: () = assert!(core::mem::size_of::<NVA06F_CTRL_GPFIFO_SCHEDULE_PARAMS>() == 3);
/// The TSG form of the same parameters.
pub type NVA06C_CTRL_GPFIFO_SCHEDULE_PARAMS = NVA06F_CTRL_GPFIFO_SCHEDULE_PARAMS;

/// Channel: MMU fault information of the channel's last fault (cleared when read).
pub const NV906F_CTRL_CMD_GET_MMU_FAULT_INFO: u32 = 0x906F_0106;
/// Length of the fault string.
pub const NV906F_CTRL_MMU_FAULT_STRING_LEN: usize = 32;
/// Number of shader types in the fault info.
pub const NV906F_CTRL_MMU_FAULT_SHADER_TYPES: usize = 7;

/// `NV906F_CTRL_CMD_GET_MMU_FAULT_INFO` parameters (104 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct NV906F_CTRL_GET_MMU_FAULT_INFO_PARAMS {
    pub addrHi: u32,
    pub addrLo: u32,
    pub faultType: u32,
    pub faultString: [u8; NV906F_CTRL_MMU_FAULT_STRING_LEN],
    pub _pad: u32,
    pub shaderProgramVA: [u64; NV906F_CTRL_MMU_FAULT_SHADER_TYPES],
}
const _: () = assert!(core::mem::size_of::<NV906F_CTRL_GET_MMU_FAULT_INFO_PARAMS>() == 104);

/// `NVA06F_CTRL_CMD_BIND` parameters (4 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct NVA06F_CTRL_BIND_PARAMS {
    pub engineType: u32,
}
const _: () = assert!(core::mem::size_of::<NVA06F_CTRL_BIND_PARAMS>() == 4);
