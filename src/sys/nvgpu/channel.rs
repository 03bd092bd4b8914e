//! The channel fd ('H', `nvgpu.h`): timeouts, object context, error notifier, watchdog,
//! preemption mode, user syncpoint, SETUP_BIND (usermode submit), and the usermode
//! (doorbell) page and USERD offsets.

use crate::sys::ioctl::{check_off, check_size, io, ior, iow, iowr};
use crate::sys::nvgpu::tsg::nvgpu_event_id_ctrl_args;
use core::mem::size_of;

/// `NVGPU_IOCTL_MAGIC` ('H'), channel fd.
pub const NVGPU_IOCTL_MAGIC: u8 = b'H';
/// Highest channel ioctl nr.
pub const NVGPU_IOCTL_CHANNEL_LAST: u32 = 128;
/// Largest channel argument (`sizeof(nvgpu_channel_setup_bind_args)`).
pub const NVGPU_IOCTL_CHANNEL_MAX_ARG_SIZE: usize = 104;

/// `struct nvgpu_set_timeout_args` (4).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct nvgpu_set_timeout_args {
    /// ms.
    pub timeout: u32,
}
check_size!(nvgpu_set_timeout_args, 4);

/// `NVGPU_TIMEOUT_FLAG_DISABLE_DUMP` (bit number in `nvgpu_set_timeout_ex_args.flags`).
pub const NVGPU_TIMEOUT_FLAG_DISABLE_DUMP: u32 = 0;

/// `struct nvgpu_set_timeout_ex_args` (8).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct nvgpu_set_timeout_ex_args {
    pub timeout: u32,
    pub flags: u32,
}
check_size!(nvgpu_set_timeout_ex_args, 8);

/// `struct nvgpu_get_param_args` (4), e.g. GET_TIMEDOUT.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct nvgpu_get_param_args {
    pub value: u32,
}
check_size!(nvgpu_get_param_args, 4);

/// `struct nvgpu_fence` (8).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct nvgpu_fence {
    pub id: u32,
    pub value: u32,
}
check_size!(nvgpu_fence, 8);

/// `struct nvgpu_submit_gpfifo_args` (24). Never used by the library (usermode channels → EINVAL).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct nvgpu_submit_gpfifo_args {
    pub gpfifo: u64,
    pub num_entries: u32,
    pub flags: u32,
    pub fence: nvgpu_fence,
}
check_size!(nvgpu_submit_gpfifo_args, 24);

/// `NVGPU_ALLOC_OBJ_FLAGS_GFXP`.
pub const NVGPU_ALLOC_OBJ_FLAGS_GFXP: u32 = 1 << 1;
/// `NVGPU_ALLOC_OBJ_FLAGS_CILP`.
pub const NVGPU_ALLOC_OBJ_FLAGS_CILP: u32 = 1 << 2;

/// `struct nvgpu_alloc_obj_ctx_args` (16).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct nvgpu_alloc_obj_ctx_args {
    pub class_num: u32,
    pub flags: u32,
    /// Not written by r36.
    pub obj_id: u64,
}
check_size!(nvgpu_alloc_obj_ctx_args, 16);

/// `struct nvgpu_set_error_notifier` (24).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct nvgpu_set_error_notifier {
    /// in: byte offset of the 16-byte record in the dma-buf.
    pub offset: u64,
    /// Ignored.
    pub size: u64,
    /// in: dma-buf fd.
    pub mem: u32,
    pub padding: u32,
}
check_size!(nvgpu_set_error_notifier, 24);
check_off!(nvgpu_set_error_notifier, mem, 16);

/// The header's anonymous `time_stamp` struct of `nvgpu_notification`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct nvgpu_notification_time_stamp {
    /// ns since the epoch, low word then high word.
    pub nanoseconds: [u32; 2],
}

/// `struct nvgpu_notification` (16): the error-notifier record the kernel writes.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct nvgpu_notification {
    pub time_stamp: nvgpu_notification_time_stamp,
    /// Error code (`NVGPU_CHANNEL_*`).
    pub info32: u32,
    pub info16: u16,
    /// `NVGPU_NOTIFICATION_STATUS_ERROR` (0xffff) once an error is posted.
    pub status: u16,
}
check_size!(nvgpu_notification, 16);
check_off!(nvgpu_notification, info32, 8);
check_off!(nvgpu_notification, info16, 12);
check_off!(nvgpu_notification, status, 14);

/// `nvgpu_notification.status` once the kernel has posted an error.
pub const NVGPU_NOTIFICATION_STATUS_ERROR: u16 = 0xffff;
/// `NVGPU_CHANNEL_FIFO_ERROR_IDLE_TIMEOUT`.
pub const NVGPU_CHANNEL_FIFO_ERROR_IDLE_TIMEOUT: u32 = 8;
/// `NVGPU_CHANNEL_GR_ERROR_SW_METHOD`.
pub const NVGPU_CHANNEL_GR_ERROR_SW_METHOD: u32 = 12;
/// `NVGPU_CHANNEL_GR_ERROR_SW_NOTIFY`.
pub const NVGPU_CHANNEL_GR_ERROR_SW_NOTIFY: u32 = 13;
/// `NVGPU_CHANNEL_GR_EXCEPTION`.
pub const NVGPU_CHANNEL_GR_EXCEPTION: u32 = 13;
/// `NVGPU_CHANNEL_GR_SEMAPHORE_TIMEOUT`.
pub const NVGPU_CHANNEL_GR_SEMAPHORE_TIMEOUT: u32 = 24;
/// `NVGPU_CHANNEL_GR_ILLEGAL_NOTIFY`.
pub const NVGPU_CHANNEL_GR_ILLEGAL_NOTIFY: u32 = 25;
/// `NVGPU_CHANNEL_FIFO_ERROR_MMU_ERR_FLT`.
pub const NVGPU_CHANNEL_FIFO_ERROR_MMU_ERR_FLT: u32 = 31;
/// `NVGPU_CHANNEL_PBDMA_ERROR`.
pub const NVGPU_CHANNEL_PBDMA_ERROR: u32 = 32;
/// `NVGPU_CHANNEL_FECS_ERR_UNIMP_FIRMWARE_METHOD`.
pub const NVGPU_CHANNEL_FECS_ERR_UNIMP_FIRMWARE_METHOD: u32 = 37;
/// `NVGPU_CHANNEL_RESETCHANNEL_VERIF_ERROR` (posted by FORCE_RESET).
pub const NVGPU_CHANNEL_RESETCHANNEL_VERIF_ERROR: u32 = 43;
/// `NVGPU_CHANNEL_PBDMA_PUSHBUFFER_CRC_MISMATCH`.
pub const NVGPU_CHANNEL_PBDMA_PUSHBUFFER_CRC_MISMATCH: u32 = 80;

/// Human-readable name of a notifier `info32` code.
pub fn notifier_error_name(code: u32) -> &'static str {
    match code {
        NVGPU_CHANNEL_FIFO_ERROR_IDLE_TIMEOUT => "FIFO idle timeout",
        NVGPU_CHANNEL_GR_ERROR_SW_METHOD => "GR SW method error",
        NVGPU_CHANNEL_GR_EXCEPTION => "GR exception / SW notify",
        NVGPU_CHANNEL_GR_SEMAPHORE_TIMEOUT => "GR semaphore timeout",
        NVGPU_CHANNEL_GR_ILLEGAL_NOTIFY => "GR illegal notify",
        NVGPU_CHANNEL_FIFO_ERROR_MMU_ERR_FLT => "MMU fault",
        NVGPU_CHANNEL_PBDMA_ERROR => "PBDMA error",
        NVGPU_CHANNEL_FECS_ERR_UNIMP_FIRMWARE_METHOD => "FECS unimplemented firmware method",
        NVGPU_CHANNEL_RESETCHANNEL_VERIF_ERROR => "channel reset (FORCE_RESET)",
        NVGPU_CHANNEL_PBDMA_PUSHBUFFER_CRC_MISMATCH => "PBDMA pushbuffer CRC mismatch",
        _ => "unknown channel error",
    }
}

/// `NVGPU_IOCTL_CHANNEL_DISABLE_WDT`.
pub const NVGPU_IOCTL_CHANNEL_DISABLE_WDT: u32 = 1 << 0;
/// `NVGPU_IOCTL_CHANNEL_ENABLE_WDT`.
pub const NVGPU_IOCTL_CHANNEL_ENABLE_WDT: u32 = 1 << 1;
/// `NVGPU_IOCTL_CHANNEL_WDT_FLAG_SET_TIMEOUT`.
pub const NVGPU_IOCTL_CHANNEL_WDT_FLAG_SET_TIMEOUT: u32 = 1 << 2;
/// `NVGPU_IOCTL_CHANNEL_WDT_FLAG_DISABLE_DUMP`.
pub const NVGPU_IOCTL_CHANNEL_WDT_FLAG_DISABLE_DUMP: u32 = 1 << 3;

/// `struct nvgpu_channel_wdt_args` (8).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct nvgpu_channel_wdt_args {
    pub wdt_status: u32,
    pub timeout_ms: u32,
}
check_size!(nvgpu_channel_wdt_args, 8);

/// `NVGPU_GRAPHICS_PREEMPTION_MODE_WFI`.
pub const NVGPU_GRAPHICS_PREEMPTION_MODE_WFI: u32 = 1 << 0;
/// `NVGPU_GRAPHICS_PREEMPTION_MODE_GFXP`.
pub const NVGPU_GRAPHICS_PREEMPTION_MODE_GFXP: u32 = 1 << 1;
/// `NVGPU_COMPUTE_PREEMPTION_MODE_WFI`.
pub const NVGPU_COMPUTE_PREEMPTION_MODE_WFI: u32 = 1 << 0;
/// `NVGPU_COMPUTE_PREEMPTION_MODE_CTA`.
pub const NVGPU_COMPUTE_PREEMPTION_MODE_CTA: u32 = 1 << 1;
/// `NVGPU_COMPUTE_PREEMPTION_MODE_CILP`.
pub const NVGPU_COMPUTE_PREEMPTION_MODE_CILP: u32 = 1 << 2;

/// `struct nvgpu_preemption_mode_args` (8).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct nvgpu_preemption_mode_args {
    pub graphics_preempt_mode: u32,
    pub compute_preempt_mode: u32,
}
check_size!(nvgpu_preemption_mode_args, 8);

/// `struct nvgpu_get_user_syncpoint_args` (16, out).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct nvgpu_get_user_syncpoint_args {
    /// GPU VA of the syncpoint's 64 KiB RW shim page.
    pub gpu_va: u64,
    pub syncpoint_id: u32,
    /// The syncpoint's current value.
    pub syncpoint_max: u32,
}
check_size!(nvgpu_get_user_syncpoint_args, 16);
check_off!(nvgpu_get_user_syncpoint_args, syncpoint_id, 8);
check_off!(nvgpu_get_user_syncpoint_args, syncpoint_max, 12);

/// `NVGPU_CHANNEL_SETUP_BIND_FLAGS_VPR_ENABLED`.
pub const NVGPU_CHANNEL_SETUP_BIND_FLAGS_VPR_ENABLED: u32 = 1 << 0;
/// `NVGPU_CHANNEL_SETUP_BIND_FLAGS_DETERMINISTIC` (needs the WDT disabled).
pub const NVGPU_CHANNEL_SETUP_BIND_FLAGS_DETERMINISTIC: u32 = 1 << 1;
/// `NVGPU_CHANNEL_SETUP_BIND_FLAGS_REPLAYABLE_FAULTS_ENABLE`.
pub const NVGPU_CHANNEL_SETUP_BIND_FLAGS_REPLAYABLE_FAULTS_ENABLE: u32 = 1 << 2;
/// `NVGPU_CHANNEL_SETUP_BIND_FLAGS_USERMODE_SUPPORT` (needs DETERMINISTIC).
pub const NVGPU_CHANNEL_SETUP_BIND_FLAGS_USERMODE_SUPPORT: u32 = 1 << 3;
/// `NVGPU_CHANNEL_SETUP_BIND_FLAGS_USERMODE_GPU_MAP_RESOURCES_SUPPORT`.
pub const NVGPU_CHANNEL_SETUP_BIND_FLAGS_USERMODE_GPU_MAP_RESOURCES_SUPPORT: u32 = 1 << 4;

/// `struct nvgpu_channel_setup_bind_args` (104).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct nvgpu_channel_setup_bind_args {
    pub num_gpfifo_entries: u32,
    pub num_inflight_jobs: u32,
    pub flags: u32,
    pub userd_dmabuf_fd: i32,
    pub gpfifo_dmabuf_fd: i32,
    /// out: the doorbell token.
    pub work_submit_token: u32,
    /// in: must be 0.
    pub userd_dmabuf_offset: u64,
    /// in: must be 0.
    pub gpfifo_dmabuf_offset: u64,
    pub gpfifo_gpu_va: u64,
    pub userd_gpu_va: u64,
    pub usermode_mmio_gpu_va: u64,
    pub reserved: [u32; 9],
    /// Implicit tail padding in the header (size rounds up to 8).
    pub _pad0: u32,
}
check_size!(nvgpu_channel_setup_bind_args, 104);
check_off!(nvgpu_channel_setup_bind_args, flags, 8);
check_off!(nvgpu_channel_setup_bind_args, userd_dmabuf_fd, 12);
check_off!(nvgpu_channel_setup_bind_args, gpfifo_dmabuf_fd, 16);
check_off!(nvgpu_channel_setup_bind_args, work_submit_token, 20);
check_off!(nvgpu_channel_setup_bind_args, userd_dmabuf_offset, 24);
check_off!(nvgpu_channel_setup_bind_args, gpfifo_dmabuf_offset, 32);
check_off!(nvgpu_channel_setup_bind_args, gpfifo_gpu_va, 40);
check_off!(nvgpu_channel_setup_bind_args, userd_gpu_va, 48);
check_off!(nvgpu_channel_setup_bind_args, usermode_mmio_gpu_va, 56);
check_off!(nvgpu_channel_setup_bind_args, reserved, 64);
const H: u8 = NVGPU_IOCTL_MAGIC;

/// H/11 W.
pub const NVGPU_IOCTL_CHANNEL_SET_TIMEOUT: u64 = iow(H, 11, size_of::<nvgpu_set_timeout_args>());
/// H/12 R.
pub const NVGPU_IOCTL_CHANNEL_GET_TIMEDOUT: u64 = ior(H, 12, size_of::<nvgpu_get_param_args>());
/// H/18 RW.
pub const NVGPU_IOCTL_CHANNEL_SET_TIMEOUT_EX: u64 =
    iowr(H, 18, size_of::<nvgpu_set_timeout_ex_args>());
/// H/107 RW. Never issued: a usermode channel returns EINVAL.
pub const NVGPU_IOCTL_CHANNEL_SUBMIT_GPFIFO: u64 =
    iowr(H, 107, size_of::<nvgpu_submit_gpfifo_args>());
/// H/108 RW.
pub const NVGPU_IOCTL_CHANNEL_ALLOC_OBJ_CTX: u64 =
    iowr(H, 108, size_of::<nvgpu_alloc_obj_ctx_args>());
/// H/111 RW.
pub const NVGPU_IOCTL_CHANNEL_SET_ERROR_NOTIFIER: u64 =
    iowr(H, 111, size_of::<nvgpu_set_error_notifier>());
/// H/113 N.
pub const NVGPU_IOCTL_CHANNEL_ENABLE: u64 = io(H, 113);
/// H/114 N.
pub const NVGPU_IOCTL_CHANNEL_DISABLE: u64 = io(H, 114);
/// H/115 N.
pub const NVGPU_IOCTL_CHANNEL_PREEMPT: u64 = io(H, 115);
/// H/116 N.
pub const NVGPU_IOCTL_CHANNEL_FORCE_RESET: u64 = io(H, 116);
/// H/117 RW: in the header but not dispatched by r36 (→ ENOTTY); use the TSG one.
pub const NVGPU_IOCTL_CHANNEL_EVENT_ID_CTRL: u64 =
    iowr(H, 117, size_of::<nvgpu_event_id_ctrl_args>());
/// H/119 W.
pub const NVGPU_IOCTL_CHANNEL_WDT: u64 = iow(H, 119, size_of::<nvgpu_channel_wdt_args>());
/// H/122 W.
pub const NVGPU_IOCTL_CHANNEL_SET_PREEMPTION_MODE: u64 =
    iow(H, 122, size_of::<nvgpu_preemption_mode_args>());
/// H/126 R.
pub const NVGPU_IOCTL_CHANNEL_GET_USER_SYNCPOINT: u64 =
    ior(H, 126, size_of::<nvgpu_get_user_syncpoint_args>());
/// H/128 RW.
pub const NVGPU_IOCTL_CHANNEL_SETUP_BIND: u64 =
    iowr(H, 128, size_of::<nvgpu_channel_setup_bind_args>());

/// Length of the usermode region mapped from the ctrl fd (offset 0).
pub const NVGPU_USERMODE_MAP_SIZE: usize = 0x10000;
/// Byte offset of the doorbell (`func_doorbell_r() - func_cfg0_r()`); write the token here.
pub const NVGPU_USERMODE_DOORBELL_OFFSET: usize = 0x90;
/// USERD byte offset of GP_GET (written by the GPU).
pub const NVGPU_USERD_GP_GET_OFFSET: usize = 0x88;
/// USERD byte offset of GP_PUT (written by the CPU).
pub const NVGPU_USERD_GP_PUT_OFFSET: usize = 0x8c;
