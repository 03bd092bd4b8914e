//! The TSG fd ('T', `nvgpu.h`): channel binding, subcontexts, timeslice, events, SM error
//! states.

use crate::sys::ioctl::{check_off, check_size, io, ior, iow, iowr};
use core::mem::size_of;

/// `NVGPU_TSG_IOCTL_MAGIC` ('T'), TSG fd.
pub const NVGPU_TSG_IOCTL_MAGIC: u8 = b'T';
/// Highest TSG ioctl nr.
pub const NVGPU_TSG_IOCTL_LAST: u32 = 21;
/// Largest TSG argument.
pub const NVGPU_TSG_IOCTL_MAX_ARG_SIZE: usize = 32;

/// `NVGPU_TSG_SUBCONTEXT_TYPE_SYNC`.
pub const NVGPU_TSG_SUBCONTEXT_TYPE_SYNC: u32 = 0;
/// `NVGPU_TSG_SUBCONTEXT_TYPE_ASYNC`.
pub const NVGPU_TSG_SUBCONTEXT_TYPE_ASYNC: u32 = 1;

/// `struct nvgpu_tsg_bind_channel_ex_args` (24).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct nvgpu_tsg_bind_channel_ex_args {
    pub channel_fd: i32,
    /// A VEID from CREATE_SUBCONTEXT on the channel's AS.
    pub subcontext_id: u32,
    pub reserved: [u8; 16],
}
check_size!(nvgpu_tsg_bind_channel_ex_args, 24);
check_off!(nvgpu_tsg_bind_channel_ex_args, subcontext_id, 4);

/// `struct nvgpu_tsg_create_subcontext_args` (16).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct nvgpu_tsg_create_subcontext_args {
    /// in: `NVGPU_TSG_SUBCONTEXT_TYPE_*`.
    pub r#type: u32,
    /// in: AS fd.
    pub as_fd: i32,
    /// out: VEID.
    pub veid: u32,
    pub reserved: u32,
}
check_size!(nvgpu_tsg_create_subcontext_args, 16);
check_off!(nvgpu_tsg_create_subcontext_args, as_fd, 4);
check_off!(nvgpu_tsg_create_subcontext_args, veid, 8);

/// `struct nvgpu_tsg_delete_subcontext_args` (8).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct nvgpu_tsg_delete_subcontext_args {
    pub veid: u32,
    pub reserved: u32,
}
check_size!(nvgpu_tsg_delete_subcontext_args, 8);

/// `struct nvgpu_timeslice_args` (8).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct nvgpu_timeslice_args {
    pub timeslice_us: u32,
    pub reserved: u32,
}
check_size!(nvgpu_timeslice_args, 8);

/// `NVGPU_IOCTL_CHANNEL_EVENT_ID_CMD_ENABLE`.
pub const NVGPU_IOCTL_CHANNEL_EVENT_ID_CMD_ENABLE: u32 = 1;

/// `struct nvgpu_event_id_ctrl_args` (16).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct nvgpu_event_id_ctrl_args {
    pub cmd: u32,
    pub event_id: u32,
    pub event_fd: i32,
    pub padding: u32,
}
check_size!(nvgpu_event_id_ctrl_args, 16);

/// `struct nvgpu_tsg_l2_max_ways_evict_last_args` (8).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct nvgpu_tsg_l2_max_ways_evict_last_args {
    pub max_ways: u32,
    pub reserved: u32,
}
check_size!(nvgpu_tsg_l2_max_ways_evict_last_args, 8);

/// `struct nvgpu_tsg_sm_error_state_record` (24).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct nvgpu_tsg_sm_error_state_record {
    pub global_esr: u32,
    pub warp_esr: u32,
    pub warp_esr_pc: u64,
    pub global_esr_report_mask: u32,
    pub warp_esr_report_mask: u32,
}
check_size!(nvgpu_tsg_sm_error_state_record, 24);

/// `struct nvgpu_tsg_read_single_sm_error_state_args` (24).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct nvgpu_tsg_read_single_sm_error_state_args {
    pub sm_id: u32,
    pub reserved: u32,
    pub record_mem: u64,
    pub record_size: u64,
}
check_size!(nvgpu_tsg_read_single_sm_error_state_args, 24);

/// `struct nvgpu_tsg_read_all_sm_error_state_args` (24).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct nvgpu_tsg_read_all_sm_error_state_args {
    pub num_sm: u32,
    pub reserved: u32,
    pub buffer_mem: u64,
    pub buffer_size: u64,
}
check_size!(nvgpu_tsg_read_all_sm_error_state_args, 24);
const T: u8 = NVGPU_TSG_IOCTL_MAGIC;

/// T/1 W, argument `int channel_fd` (legacy; use BIND_CHANNEL_EX).
pub const NVGPU_TSG_IOCTL_BIND_CHANNEL: u64 = iow(T, 1, size_of::<i32>());
/// T/2 W, argument `int channel_fd`.
pub const NVGPU_TSG_IOCTL_UNBIND_CHANNEL: u64 = iow(T, 2, size_of::<i32>());
/// T/3 N.
pub const NVGPU_IOCTL_TSG_ENABLE: u64 = io(T, 3);
/// T/4 N.
pub const NVGPU_IOCTL_TSG_DISABLE: u64 = io(T, 4);
/// T/5 N.
pub const NVGPU_IOCTL_TSG_PREEMPT: u64 = io(T, 5);
/// T/7 RW.
pub const NVGPU_IOCTL_TSG_EVENT_ID_CTRL: u64 = iowr(T, 7, size_of::<nvgpu_event_id_ctrl_args>());
/// T/9 W.
pub const NVGPU_IOCTL_TSG_SET_TIMESLICE: u64 = iow(T, 9, size_of::<nvgpu_timeslice_args>());
/// T/10 R.
pub const NVGPU_IOCTL_TSG_GET_TIMESLICE: u64 = ior(T, 10, size_of::<nvgpu_timeslice_args>());
/// T/11 RW.
pub const NVGPU_TSG_IOCTL_BIND_CHANNEL_EX: u64 =
    iowr(T, 11, size_of::<nvgpu_tsg_bind_channel_ex_args>());
/// T/12 RW.
pub const NVGPU_TSG_IOCTL_READ_SINGLE_SM_ERROR_STATE: u64 = iowr(
    T,
    12,
    size_of::<nvgpu_tsg_read_single_sm_error_state_args>(),
);
/// T/13 W.
pub const NVGPU_TSG_IOCTL_SET_L2_MAX_WAYS_EVICT_LAST: u64 =
    iow(T, 13, size_of::<nvgpu_tsg_l2_max_ways_evict_last_args>());
/// T/17 RW.
pub const NVGPU_TSG_IOCTL_READ_ALL_SM_ERROR_STATES: u64 =
    iowr(T, 17, size_of::<nvgpu_tsg_read_all_sm_error_state_args>());
/// T/18 RW.
pub const NVGPU_TSG_IOCTL_CREATE_SUBCONTEXT: u64 =
    iowr(T, 18, size_of::<nvgpu_tsg_create_subcontext_args>());
/// T/19 W.
pub const NVGPU_TSG_IOCTL_DELETE_SUBCONTEXT: u64 =
    iow(T, 19, size_of::<nvgpu_tsg_delete_subcontext_args>());
