//! Every nvgpu/nvmap request of docs/nvgpu-kernel-interface.md §2 in one table, for the ABI
//! tests, the emulated kernel's dispatcher and request names in logs.

use crate::sys::nvgpu::address_space::*;
use crate::sys::nvgpu::channel::*;
use crate::sys::nvgpu::ctrl::*;
use crate::sys::nvgpu::tsg::*;
use crate::sys::nvmap::*;
use core::mem::size_of;

/// One ioctl request: its header name, full 32-bit number, argument struct and size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AbiEntry {
    /// Request macro name, e.g. `NVGPU_GPU_IOCTL_ALLOC_AS`.
    pub name: &'static str,
    /// Full request number.
    pub request: u64,
    /// Argument struct name without `struct ` (e.g. `nvgpu_alloc_as_args`); `int` for
    /// requests taking an int; empty for `_IO` requests (and NVMAP_IOC_FREE, which passes
    /// the handle ID by value).
    pub struct_name: &'static str,
    /// Argument size encoded in the request.
    pub size: usize,
}

macro_rules! entry {
    ($name:ident, $st:ty) => {
        AbiEntry {
            name: stringify!($name),
            request: $name,
            struct_name: stringify!($st),
            size: size_of::<$st>(),
        }
    };
    ($name:ident) => {
        AbiEntry {
            name: stringify!($name),
            request: $name,
            struct_name: "",
            size: 0,
        }
    };
    ($name:ident, int, $sz:expr) => {
        AbiEntry {
            name: stringify!($name),
            request: $name,
            struct_name: "int",
            size: $sz,
        }
    };
}

/// Every nvgpu/nvmap request of the doc's §2 table (those the library issues or may issue).
pub const ALL_REQUESTS: &[AbiEntry] = &[
    entry!(
        NVGPU_GPU_IOCTL_ZCULL_GET_CTX_SIZE,
        nvgpu_gpu_zcull_get_ctx_size_args
    ),
    entry!(
        NVGPU_GPU_IOCTL_ZCULL_GET_INFO,
        nvgpu_gpu_zcull_get_info_args
    ),
    entry!(
        NVGPU_GPU_IOCTL_GET_CHARACTERISTICS,
        nvgpu_gpu_get_characteristics
    ),
    entry!(NVGPU_GPU_IOCTL_ALLOC_AS, nvgpu_alloc_as_args),
    entry!(NVGPU_GPU_IOCTL_OPEN_TSG, nvgpu_gpu_open_tsg_args),
    entry!(NVGPU_GPU_IOCTL_GET_TPC_MASKS, nvgpu_gpu_get_tpc_masks_args),
    entry!(NVGPU_GPU_IOCTL_OPEN_CHANNEL, nvgpu_gpu_open_channel_args),
    entry!(NVGPU_GPU_IOCTL_FLUSH_L2, nvgpu_gpu_l2_fb_args),
    entry!(NVGPU_GPU_IOCTL_NUM_VSMS, nvgpu_gpu_num_vsms),
    entry!(NVGPU_GPU_IOCTL_VSMS_MAPPING, nvgpu_gpu_vsms_mapping),
    entry!(NVGPU_GPU_IOCTL_GET_GPU_TIME, nvgpu_gpu_get_gpu_time_args),
    entry!(
        NVGPU_GPU_IOCTL_GET_ENGINE_INFO,
        nvgpu_gpu_get_engine_info_args
    ),
    entry!(NVGPU_GPU_IOCTL_CLK_GET_RANGE, nvgpu_gpu_clk_range_args),
    entry!(
        NVGPU_GPU_IOCTL_CLK_GET_VF_POINTS,
        nvgpu_gpu_clk_vf_points_args
    ),
    entry!(
        NVGPU_GPU_IOCTL_GET_MEMORY_STATE,
        nvgpu_gpu_get_memory_state_args
    ),
    entry!(
        NVGPU_GPU_IOCTL_GET_FBP_L2_MASKS,
        nvgpu_gpu_get_fbp_l2_masks_args
    ),
    entry!(
        NVGPU_GPU_IOCTL_SET_DETERMINISTIC_OPTS,
        nvgpu_gpu_set_deterministic_opts_args
    ),
    entry!(
        NVGPU_GPU_IOCTL_REGISTER_BUFFER,
        nvgpu_gpu_register_buffer_args
    ),
    entry!(
        NVGPU_GPU_IOCTL_GET_BUFFER_INFO,
        nvgpu_gpu_get_buffer_info_args
    ),
    entry!(
        NVGPU_GPU_IOCTL_GET_GPC_LOCAL_TO_PHYSICAL_MAP,
        nvgpu_gpu_get_gpc_physical_map_args
    ),
    entry!(
        NVGPU_GPU_IOCTL_GET_GPC_LOCAL_TO_LOGICAL_MAP,
        nvgpu_gpu_get_gpc_logical_map_args
    ),
    entry!(NVGPU_AS_IOCTL_BIND_CHANNEL, nvgpu_as_bind_channel_args),
    entry!(NVGPU_AS_IOCTL_FREE_SPACE, nvgpu_as_free_space_args),
    entry!(NVGPU_AS_IOCTL_UNMAP_BUFFER, nvgpu_as_unmap_buffer_args),
    entry!(NVGPU_AS_IOCTL_ALLOC_SPACE, nvgpu_as_alloc_space_args),
    entry!(NVGPU_AS_IOCTL_MAP_BUFFER_EX, nvgpu_as_map_buffer_ex_args),
    entry!(NVGPU_AS_IOCTL_GET_VA_REGIONS, nvgpu_as_get_va_regions_args),
    entry!(
        NVGPU_AS_IOCTL_MAP_BUFFER_BATCH,
        nvgpu_as_map_buffer_batch_args
    ),
    entry!(
        NVGPU_AS_IOCTL_GET_SYNC_RO_MAP,
        nvgpu_as_get_sync_ro_map_args
    ),
    entry!(NVGPU_TSG_IOCTL_BIND_CHANNEL, int, 4),
    entry!(NVGPU_TSG_IOCTL_UNBIND_CHANNEL, int, 4),
    entry!(NVGPU_IOCTL_TSG_ENABLE),
    entry!(NVGPU_IOCTL_TSG_DISABLE),
    entry!(NVGPU_IOCTL_TSG_PREEMPT),
    entry!(NVGPU_IOCTL_TSG_EVENT_ID_CTRL, nvgpu_event_id_ctrl_args),
    entry!(NVGPU_IOCTL_TSG_SET_TIMESLICE, nvgpu_timeslice_args),
    entry!(NVGPU_IOCTL_TSG_GET_TIMESLICE, nvgpu_timeslice_args),
    entry!(
        NVGPU_TSG_IOCTL_BIND_CHANNEL_EX,
        nvgpu_tsg_bind_channel_ex_args
    ),
    entry!(
        NVGPU_TSG_IOCTL_READ_SINGLE_SM_ERROR_STATE,
        nvgpu_tsg_read_single_sm_error_state_args
    ),
    entry!(
        NVGPU_TSG_IOCTL_SET_L2_MAX_WAYS_EVICT_LAST,
        nvgpu_tsg_l2_max_ways_evict_last_args
    ),
    entry!(
        NVGPU_TSG_IOCTL_READ_ALL_SM_ERROR_STATES,
        nvgpu_tsg_read_all_sm_error_state_args
    ),
    entry!(
        NVGPU_TSG_IOCTL_CREATE_SUBCONTEXT,
        nvgpu_tsg_create_subcontext_args
    ),
    entry!(
        NVGPU_TSG_IOCTL_DELETE_SUBCONTEXT,
        nvgpu_tsg_delete_subcontext_args
    ),
    entry!(NVGPU_IOCTL_CHANNEL_SET_TIMEOUT, nvgpu_set_timeout_args),
    entry!(NVGPU_IOCTL_CHANNEL_GET_TIMEDOUT, nvgpu_get_param_args),
    entry!(
        NVGPU_IOCTL_CHANNEL_SET_TIMEOUT_EX,
        nvgpu_set_timeout_ex_args
    ),
    entry!(NVGPU_IOCTL_CHANNEL_SUBMIT_GPFIFO, nvgpu_submit_gpfifo_args),
    entry!(NVGPU_IOCTL_CHANNEL_ALLOC_OBJ_CTX, nvgpu_alloc_obj_ctx_args),
    entry!(
        NVGPU_IOCTL_CHANNEL_SET_ERROR_NOTIFIER,
        nvgpu_set_error_notifier
    ),
    entry!(NVGPU_IOCTL_CHANNEL_ENABLE),
    entry!(NVGPU_IOCTL_CHANNEL_DISABLE),
    entry!(NVGPU_IOCTL_CHANNEL_PREEMPT),
    entry!(NVGPU_IOCTL_CHANNEL_FORCE_RESET),
    entry!(NVGPU_IOCTL_CHANNEL_WDT, nvgpu_channel_wdt_args),
    entry!(
        NVGPU_IOCTL_CHANNEL_SET_PREEMPTION_MODE,
        nvgpu_preemption_mode_args
    ),
    entry!(
        NVGPU_IOCTL_CHANNEL_GET_USER_SYNCPOINT,
        nvgpu_get_user_syncpoint_args
    ),
    entry!(
        NVGPU_IOCTL_CHANNEL_SETUP_BIND,
        nvgpu_channel_setup_bind_args
    ),
    entry!(NVMAP_IOC_CREATE, nvmap_create_handle),
    entry!(NVMAP_IOC_CREATE_64, nvmap_create_handle),
    entry!(NVMAP_IOC_ALLOC, nvmap_alloc_handle),
    entry!(NVMAP_IOC_FREE),
    entry!(NVMAP_IOC_WRITE, nvmap_rw_handle),
    entry!(NVMAP_IOC_READ, nvmap_rw_handle),
    entry!(NVMAP_IOC_CACHE, nvmap_cache_op),
    entry!(NVMAP_IOC_CACHE_64, nvmap_cache_op_64),
    entry!(NVMAP_IOC_GET_FD, nvmap_create_handle),
    entry!(NVMAP_IOC_FROM_FD, nvmap_create_handle),
    entry!(NVMAP_IOC_SET_TAG_LABEL, nvmap_set_tag_label),
    entry!(NVMAP_IOC_GET_AVAILABLE_HEAPS, nvmap_available_heaps),
    entry!(NVMAP_IOC_QUERY_HEAP_PARAMS, nvmap_query_heap_params),
];

/// The table entry for a request number, if it is one of [`ALL_REQUESTS`].
pub fn request_entry(request: u64) -> Option<&'static AbiEntry> {
    ALL_REQUESTS.iter().find(|e| e.request == request)
}

/// The name of a request number (`"?"` if unknown), for messages and logs.
pub fn request_name(request: u64) -> &'static str {
    request_entry(request).map(|e| e.name).unwrap_or("?")
}
