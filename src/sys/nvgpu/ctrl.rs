//! The ctrl node ('G', `/dev/nvgpu/igpu0/ctrl`, `nvgpu-ctrl.h`): GPU characteristics, address
//! space, TSG and channel creation, L2 flush, SM/engine/clock/memory queries, buffer metadata.

use crate::sys::ioctl::{check_off, check_size, ior, iowr};
use core::mem::size_of;

/// `NVGPU_GPU_IOCTL_MAGIC` ('G'), ctrl node.
pub const NVGPU_GPU_IOCTL_MAGIC: u8 = b'G';

/// Highest ctrl ioctl nr (`NVGPU_GPU_IOCTL_LAST`); larger nr → EINVAL.
pub const NVGPU_GPU_IOCTL_LAST: u32 = 44;
/// Largest ctrl argument (`sizeof(nvgpu_gpu_get_cpu_time_correlation_info_args)`); larger → EINVAL.
pub const NVGPU_GPU_IOCTL_MAX_ARG_SIZE: usize = 264;

/// `struct nvgpu_gpu_zcull_get_ctx_size_args` (4).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct nvgpu_gpu_zcull_get_ctx_size_args {
    pub size: u32,
}
check_size!(nvgpu_gpu_zcull_get_ctx_size_args, 4);

/// `struct nvgpu_gpu_zcull_get_info_args` (40, all out).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct nvgpu_gpu_zcull_get_info_args {
    pub width_align_pixels: u32,
    pub height_align_pixels: u32,
    pub pixel_squares_by_aliquots: u32,
    pub aliquot_total: u32,
    pub region_byte_multiplier: u32,
    pub region_header_size: u32,
    pub subregion_header_size: u32,
    pub subregion_width_align_pixels: u32,
    pub subregion_height_align_pixels: u32,
    pub subregion_count: u32,
}
check_size!(nvgpu_gpu_zcull_get_info_args, 40);

/// `NVGPU_GPU_CHARACTERISTICS_NO_NUMA_INFO`.
pub const NVGPU_GPU_CHARACTERISTICS_NO_NUMA_INFO: i32 = -1;
/// `NVGPU_GPU_BUS_TYPE_AXI`.
pub const NVGPU_GPU_BUS_TYPE_AXI: u32 = 32;

/// `NVGPU_GPU_FLAGS_HAS_SYNCPOINTS`.
pub const NVGPU_GPU_FLAGS_HAS_SYNCPOINTS: u64 = 1 << 0;
/// `NVGPU_GPU_FLAGS_SUPPORT_SPARSE_ALLOCS`.
pub const NVGPU_GPU_FLAGS_SUPPORT_SPARSE_ALLOCS: u64 = 1 << 2;
/// `NVGPU_GPU_FLAGS_SUPPORT_TSG`.
pub const NVGPU_GPU_FLAGS_SUPPORT_TSG: u64 = 1 << 8;
/// `NVGPU_GPU_FLAGS_SUPPORT_DETERMINISTIC_SUBMIT_NO_JOBTRACKING`.
pub const NVGPU_GPU_FLAGS_SUPPORT_DETERMINISTIC_SUBMIT_NO_JOBTRACKING: u64 = 1 << 18;
/// `NVGPU_GPU_FLAGS_SUPPORT_DETERMINISTIC_SUBMIT_FULL`.
pub const NVGPU_GPU_FLAGS_SUPPORT_DETERMINISTIC_SUBMIT_FULL: u64 = 1 << 19;
/// `NVGPU_GPU_FLAGS_SUPPORT_IO_COHERENCE`.
pub const NVGPU_GPU_FLAGS_SUPPORT_IO_COHERENCE: u64 = 1 << 20;
/// `NVGPU_GPU_FLAGS_SUPPORT_TSG_SUBCONTEXTS`.
pub const NVGPU_GPU_FLAGS_SUPPORT_TSG_SUBCONTEXTS: u64 = 1 << 22;
/// `NVGPU_GPU_FLAGS_SUPPORT_DETERMINISTIC_OPTS`.
pub const NVGPU_GPU_FLAGS_SUPPORT_DETERMINISTIC_OPTS: u64 = 1 << 24;
/// `NVGPU_GPU_FLAGS_SUPPORT_SYNCPOINT_ADDRESS`.
pub const NVGPU_GPU_FLAGS_SUPPORT_SYNCPOINT_ADDRESS: u64 = 1 << 26;
/// `NVGPU_GPU_FLAGS_SUPPORT_VPR`.
pub const NVGPU_GPU_FLAGS_SUPPORT_VPR: u64 = 1 << 27;
/// `NVGPU_GPU_FLAGS_SUPPORT_USER_SYNCPOINT`.
pub const NVGPU_GPU_FLAGS_SUPPORT_USER_SYNCPOINT: u64 = 1 << 28;
/// `NVGPU_GPU_FLAGS_CAN_RAILGATE`.
pub const NVGPU_GPU_FLAGS_CAN_RAILGATE: u64 = 1 << 29;
/// `NVGPU_GPU_FLAGS_SUPPORT_USERMODE_SUBMIT`.
pub const NVGPU_GPU_FLAGS_SUPPORT_USERMODE_SUBMIT: u64 = 1 << 30;
/// `NVGPU_GPU_FLAGS_SUPPORT_COMPRESSION`.
pub const NVGPU_GPU_FLAGS_SUPPORT_COMPRESSION: u64 = 1 << 36;
/// `NVGPU_GPU_FLAGS_SUPPORT_COMPUTE`.
pub const NVGPU_GPU_FLAGS_SUPPORT_COMPUTE: u64 = 1 << 42;
/// `NVGPU_GPU_FLAGS_MULTI_PROCESS_TSG_SHARING`.
pub const NVGPU_GPU_FLAGS_MULTI_PROCESS_TSG_SHARING: u64 = 1 << 56;
/// `NVGPU_GPU_FLAGS_SUPPORT_GPU_MMIO` (clear on ga10b: SETUP_BIND returns no VAs).
pub const NVGPU_GPU_FLAGS_SUPPORT_GPU_MMIO: u64 = 1 << 57;

/// Size of `struct nvgpu_gpu_characteristics` in r36.
pub const NVGPU_GPU_CHARACTERISTICS_SIZE: usize = 328;

/// `struct nvgpu_gpu_characteristics` (328, written by GET_CHARACTERISTICS).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct nvgpu_gpu_characteristics {
    pub arch: u32,
    pub r#impl: u32,
    pub rev: u32,
    pub num_gpc: u32,
    pub numa_domain_id: i32,
    /// Implicit padding in the header.
    pub _pad0: u32,
    pub L2_cache_size: u64,
    pub on_board_video_memory_size: u64,
    pub num_tpc_per_gpc: u32,
    pub bus_type: u32,
    pub big_page_size: u32,
    pub compression_page_size: u32,
    pub pde_coverage_bit_count: u32,
    pub available_big_page_sizes: u32,
    pub flags: u64,
    pub twod_class: u32,
    pub threed_class: u32,
    pub compute_class: u32,
    pub gpfifo_class: u32,
    pub inline_to_memory_class: u32,
    pub dma_copy_class: u32,
    pub gpc_mask: u32,
    pub sm_arch_sm_version: u32,
    pub sm_arch_spa_version: u32,
    pub sm_arch_warp_count: u32,
    pub gpu_ioctl_nr_last: i16,
    pub tsg_ioctl_nr_last: i16,
    pub dbg_gpu_ioctl_nr_last: i16,
    pub ioctl_channel_nr_last: i16,
    pub as_ioctl_nr_last: i16,
    pub gpu_va_bit_count: u8,
    pub reserved: u8,
    pub max_fbps_count: u32,
    pub fbp_en_mask: u32,
    pub emc_en_mask: u32,
    pub max_ltc_per_fbp: u32,
    pub max_lts_per_ltc: u32,
    pub max_tex_per_tpc: u32,
    pub max_gpc_count: u32,
    pub rop_l2_en_mask_DEPRECATED: [u32; 2],
    pub chipname: [u8; 8],
    pub gr_compbit_store_base_hw: u64,
    pub gr_gobs_per_comptagline_per_slice: u32,
    pub num_ltc: u32,
    pub lts_per_ltc: u32,
    pub cbc_cache_line_size: u32,
    pub cbc_comptags_per_line: u32,
    pub map_buffer_batch_limit: u32,
    pub max_freq: u64,
    pub graphics_preemption_mode_flags: u32,
    pub compute_preemption_mode_flags: u32,
    pub default_graphics_preempt_mode: u32,
    pub default_compute_preempt_mode: u32,
    pub local_video_memory_size: u64,
    pub pci_vendor_id: u16,
    pub pci_device_id: u16,
    pub pci_subsystem_vendor_id: u16,
    pub pci_subsystem_device_id: u16,
    pub pci_class: u16,
    pub pci_revision: u8,
    pub vbios_oem_version: u8,
    pub vbios_version: u32,
    pub reg_ops_limit: u32,
    pub reserved1: u32,
    pub event_ioctl_nr_last: i16,
    pub pad: u16,
    pub max_css_buffer_size: u32,
    pub ctxsw_ioctl_nr_last: i16,
    pub prof_ioctl_nr_last: i16,
    pub nvs_ioctl_nr_last: i16,
    pub reserved2: [u8; 2],
    pub max_ctxsw_ring_buffer_size: u32,
    pub reserved3: u32,
    pub per_device_identifier: u64,
    pub num_ppc_per_gpc: u32,
    pub max_veid_count_per_tsg: u32,
    pub num_sub_partition_per_fbpa: u32,
    pub gpu_instance_id: u32,
    pub gr_instance_id: u32,
    pub max_gpfifo_entries: u32,
    pub max_dbg_tsg_timeslice: u32,
    pub reserved5: u32,
    pub device_instance_id: u64,
}
check_size!(nvgpu_gpu_characteristics, NVGPU_GPU_CHARACTERISTICS_SIZE);
check_off!(nvgpu_gpu_characteristics, numa_domain_id, 16);
check_off!(nvgpu_gpu_characteristics, L2_cache_size, 24);
check_off!(nvgpu_gpu_characteristics, num_tpc_per_gpc, 40);
check_off!(nvgpu_gpu_characteristics, bus_type, 44);
check_off!(nvgpu_gpu_characteristics, big_page_size, 48);
check_off!(nvgpu_gpu_characteristics, pde_coverage_bit_count, 56);
check_off!(nvgpu_gpu_characteristics, available_big_page_sizes, 60);
check_off!(nvgpu_gpu_characteristics, flags, 64);
check_off!(nvgpu_gpu_characteristics, twod_class, 72);
check_off!(nvgpu_gpu_characteristics, compute_class, 80);
check_off!(nvgpu_gpu_characteristics, gpfifo_class, 84);
check_off!(nvgpu_gpu_characteristics, dma_copy_class, 92);
check_off!(nvgpu_gpu_characteristics, gpc_mask, 96);
check_off!(nvgpu_gpu_characteristics, sm_arch_sm_version, 100);
check_off!(nvgpu_gpu_characteristics, sm_arch_warp_count, 108);
check_off!(nvgpu_gpu_characteristics, gpu_ioctl_nr_last, 112);
check_off!(nvgpu_gpu_characteristics, as_ioctl_nr_last, 120);
check_off!(nvgpu_gpu_characteristics, gpu_va_bit_count, 122);
check_off!(nvgpu_gpu_characteristics, max_fbps_count, 124);
check_off!(nvgpu_gpu_characteristics, max_tex_per_tpc, 144);
check_off!(nvgpu_gpu_characteristics, max_gpc_count, 148);
check_off!(nvgpu_gpu_characteristics, chipname, 160);
check_off!(nvgpu_gpu_characteristics, gr_compbit_store_base_hw, 168);
check_off!(nvgpu_gpu_characteristics, num_ltc, 180);
check_off!(nvgpu_gpu_characteristics, map_buffer_batch_limit, 196);
check_off!(nvgpu_gpu_characteristics, max_freq, 200);
check_off!(nvgpu_gpu_characteristics, local_video_memory_size, 224);
check_off!(nvgpu_gpu_characteristics, pci_vendor_id, 232);
check_off!(nvgpu_gpu_characteristics, vbios_version, 244);
check_off!(nvgpu_gpu_characteristics, event_ioctl_nr_last, 256);
check_off!(nvgpu_gpu_characteristics, max_css_buffer_size, 260);
check_off!(nvgpu_gpu_characteristics, ctxsw_ioctl_nr_last, 264);
check_off!(nvgpu_gpu_characteristics, max_ctxsw_ring_buffer_size, 272);
check_off!(nvgpu_gpu_characteristics, per_device_identifier, 280);
check_off!(nvgpu_gpu_characteristics, num_ppc_per_gpc, 288);
check_off!(nvgpu_gpu_characteristics, max_veid_count_per_tsg, 292);
check_off!(nvgpu_gpu_characteristics, gr_instance_id, 304);
check_off!(nvgpu_gpu_characteristics, max_gpfifo_entries, 308);
check_off!(nvgpu_gpu_characteristics, device_instance_id, 320);

impl nvgpu_gpu_characteristics {
    /// `chipname` up to its first NUL, lossily decoded.
    pub fn chipname_str(&self) -> String {
        let n = self
            .chipname
            .iter()
            .position(|&c| c == 0)
            .unwrap_or(self.chipname.len());
        String::from_utf8_lossy(&self.chipname[..n]).into_owned()
    }
}

/// `struct nvgpu_gpu_get_characteristics` (16).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct nvgpu_gpu_get_characteristics {
    /// in: bytes provided (0 ok); out: full size (328).
    pub gpu_characteristics_buf_size: u64,
    /// in: user pointer to a `nvgpu_gpu_characteristics`.
    pub gpu_characteristics_buf_addr: u64,
}
check_size!(nvgpu_gpu_get_characteristics, 16);
check_off!(
    nvgpu_gpu_get_characteristics,
    gpu_characteristics_buf_addr,
    8
);

/// `NVGPU_GPU_IOCTL_ALLOC_AS_FLAGS_USERSPACE_MANAGED`.
pub const NVGPU_GPU_IOCTL_ALLOC_AS_FLAGS_USERSPACE_MANAGED: u32 = 1 << 0;
/// `NVGPU_GPU_IOCTL_ALLOC_AS_FLAGS_UNIFIED_VA`.
pub const NVGPU_GPU_IOCTL_ALLOC_AS_FLAGS_UNIFIED_VA: u32 = 1 << 1;

/// `struct nvgpu_alloc_as_args` (64).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct nvgpu_alloc_as_args {
    /// in: 0 = no big pages (the only value that works on ga10b).
    pub big_page_size: u32,
    /// out: the new AS fd.
    pub as_fd: i32,
    /// in: `NVGPU_GPU_IOCTL_ALLOC_AS_FLAGS_*`.
    pub flags: u32,
    pub reserved: u32,
    /// in: first VA, 2 MiB aligned, non-zero.
    pub va_range_start: u64,
    /// in: end VA (exclusive), 2 MiB aligned.
    pub va_range_end: u64,
    /// in: must be 0 with UNIFIED_VA / no big pages.
    pub va_range_split: u64,
    pub padding: [u32; 6],
}
check_size!(nvgpu_alloc_as_args, 64);
check_off!(nvgpu_alloc_as_args, as_fd, 4);
check_off!(nvgpu_alloc_as_args, flags, 8);
check_off!(nvgpu_alloc_as_args, va_range_start, 16);
check_off!(nvgpu_alloc_as_args, va_range_end, 24);
check_off!(nvgpu_alloc_as_args, va_range_split, 32);

/// `NVGPU_GPU_IOCTL_OPEN_TSG_FLAGS_SHARE`.
pub const NVGPU_GPU_IOCTL_OPEN_TSG_FLAGS_SHARE: u32 = 1 << 0;

/// `struct nvgpu_gpu_open_tsg_args` (24).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct nvgpu_gpu_open_tsg_args {
    /// out: the TSG fd.
    pub tsg_fd: u32,
    pub flags: u32,
    /// in: must be 0 unless SHARE.
    pub source_device_instance_id: u64,
    /// in: must be 0 unless SHARE.
    pub share_token: u64,
}
check_size!(nvgpu_gpu_open_tsg_args, 24);
check_off!(nvgpu_gpu_open_tsg_args, flags, 4);
check_off!(nvgpu_gpu_open_tsg_args, source_device_instance_id, 8);
check_off!(nvgpu_gpu_open_tsg_args, share_token, 16);

/// `struct nvgpu_gpu_get_tpc_masks_args` (16).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct nvgpu_gpu_get_tpc_masks_args {
    pub mask_buf_size: u32,
    pub reserved: u32,
    pub mask_buf_addr: u64,
}
check_size!(nvgpu_gpu_get_tpc_masks_args, 16);

/// `struct nvgpu_gpu_get_gpc_physical_map_args` (16).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct nvgpu_gpu_get_gpc_physical_map_args {
    pub map_buf_size: u32,
    pub reserved: u32,
    pub physical_gpc_buf_addr: u64,
}
check_size!(nvgpu_gpu_get_gpc_physical_map_args, 16);

/// `struct nvgpu_gpu_get_gpc_logical_map_args` (16).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct nvgpu_gpu_get_gpc_logical_map_args {
    pub map_buf_size: u32,
    pub reserved: u32,
    pub logical_gpc_buf_addr: u64,
}
check_size!(nvgpu_gpu_get_gpc_logical_map_args, 16);

/// `struct nvgpu_gpu_open_channel_args` (4). The header's union of `channel_fd` (deprecated
/// alias), `in.runlist_id` and `out.channel_fd`: one `s32`, runlist id in, channel fd out.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct nvgpu_gpu_open_channel_args {
    /// in: `runlist_id` (-1 = GR runlist); out: `channel_fd`.
    pub channel_fd: i32,
}
check_size!(nvgpu_gpu_open_channel_args, 4);

impl nvgpu_gpu_open_channel_args {
    /// Arguments asking for a channel on `runlist_id` (-1 = GR runlist).
    pub const fn with_runlist_id(runlist_id: i32) -> Self {
        Self {
            channel_fd: runlist_id,
        }
    }
    /// `in.runlist_id` (the same word as `out.channel_fd`).
    pub const fn runlist_id(&self) -> i32 {
        self.channel_fd
    }
}

/// Bit 0 of `nvgpu_gpu_l2_fb_args` byte 0: `l2_flush`.
pub const NVGPU_GPU_L2_FB_L2_FLUSH: u8 = 1 << 0;
/// Bit 1: `l2_invalidate`.
pub const NVGPU_GPU_L2_FB_L2_INVALIDATE: u8 = 1 << 1;
/// Bit 2: `fb_flush`.
pub const NVGPU_GPU_L2_FB_FB_FLUSH: u8 = 1 << 2;

/// `struct nvgpu_gpu_l2_fb_args` (5, `__packed`): three 1-bit fields `l2_flush`,
/// `l2_invalidate`, `fb_flush` in byte 0, then an unaligned `u32 reserved`.
#[repr(C, packed)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct nvgpu_gpu_l2_fb_args {
    /// Bitfields: `NVGPU_GPU_L2_FB_*`.
    pub bits: u8,
    pub reserved: u32,
}
check_size!(nvgpu_gpu_l2_fb_args, 5);
check_off!(nvgpu_gpu_l2_fb_args, reserved, 1);

impl nvgpu_gpu_l2_fb_args {
    /// Arguments from the three bitfields.
    pub const fn new(l2_flush: bool, l2_invalidate: bool, fb_flush: bool) -> Self {
        let mut bits = 0u8;
        if l2_flush {
            bits |= NVGPU_GPU_L2_FB_L2_FLUSH;
        }
        if l2_invalidate {
            bits |= NVGPU_GPU_L2_FB_L2_INVALIDATE;
        }
        if fb_flush {
            bits |= NVGPU_GPU_L2_FB_FB_FLUSH;
        }
        Self { bits, reserved: 0 }
    }
    /// `l2_flush` bit.
    pub const fn l2_flush(&self) -> bool {
        self.bits & NVGPU_GPU_L2_FB_L2_FLUSH != 0
    }
    /// `l2_invalidate` bit.
    pub const fn l2_invalidate(&self) -> bool {
        self.bits & NVGPU_GPU_L2_FB_L2_INVALIDATE != 0
    }
    /// `fb_flush` bit.
    pub const fn fb_flush(&self) -> bool {
        self.bits & NVGPU_GPU_L2_FB_FB_FLUSH != 0
    }
}

/// `struct nvgpu_gpu_num_vsms` (8).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct nvgpu_gpu_num_vsms {
    pub num_vsms: u32,
    pub reserved: u32,
}
check_size!(nvgpu_gpu_num_vsms, 8);

/// `struct nvgpu_gpu_vsms_mapping_entry` (6).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct nvgpu_gpu_vsms_mapping_entry {
    pub gpc_logical_index: u8,
    pub gpc_virtual_index: u8,
    pub tpc_local_logical_index: u8,
    pub tpc_global_logical_index: u8,
    pub sm_local_id: u8,
    pub tpc_migratable_index: u8,
}
check_size!(nvgpu_gpu_vsms_mapping_entry, 6);

/// `struct nvgpu_gpu_vsms_mapping` (8).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct nvgpu_gpu_vsms_mapping {
    pub vsms_map_buf_addr: u64,
}
check_size!(nvgpu_gpu_vsms_mapping, 8);

/// `struct nvgpu_gpu_get_gpu_time_args` (16).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct nvgpu_gpu_get_gpu_time_args {
    /// out: raw PTIMER value, ns.
    pub gpu_timestamp: u64,
    pub reserved: u64,
}
check_size!(nvgpu_gpu_get_gpu_time_args, 16);

/// `NVGPU_GPU_ENGINE_ID_GR`.
pub const NVGPU_GPU_ENGINE_ID_GR: u32 = 0;
/// `NVGPU_GPU_ENGINE_ID_GR_COPY`.
pub const NVGPU_GPU_ENGINE_ID_GR_COPY: u32 = 1;
/// `NVGPU_GPU_ENGINE_ID_ASYNC_COPY`.
pub const NVGPU_GPU_ENGINE_ID_ASYNC_COPY: u32 = 2;

/// `struct nvgpu_gpu_get_engine_info_item` (16).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct nvgpu_gpu_get_engine_info_item {
    pub engine_id: u32,
    pub engine_instance: u32,
    pub runlist_id: i32,
    pub reserved: u32,
}
check_size!(nvgpu_gpu_get_engine_info_item, 16);

/// `struct nvgpu_gpu_get_engine_info_args` (16).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct nvgpu_gpu_get_engine_info_args {
    pub engine_info_buf_size: u32,
    pub reserved: u32,
    pub engine_info_buf_addr: u64,
}
check_size!(nvgpu_gpu_get_engine_info_args, 16);

/// `struct nvgpu_gpu_clk_range_args` (16).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct nvgpu_gpu_clk_range_args {
    pub flags: u32,
    pub pad0: u16,
    pub num_entries: u16,
    pub clk_range_entries: u64,
}
check_size!(nvgpu_gpu_clk_range_args, 16);

/// `struct nvgpu_gpu_clk_vf_points_args` (24).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct nvgpu_gpu_clk_vf_points_args {
    pub flags: u32,
    pub clk_domain: u32,
    pub max_entries: u16,
    pub num_entries: u16,
    pub reserved: u32,
    pub clk_vf_point_entries: u64,
}
check_size!(nvgpu_gpu_clk_vf_points_args, 24);

/// `struct nvgpu_gpu_get_memory_state_args` (40).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct nvgpu_gpu_get_memory_state_args {
    /// out: free bytes for this device.
    pub total_free_bytes: u64,
    pub reserved: [u64; 4],
}
check_size!(nvgpu_gpu_get_memory_state_args, 40);

/// `struct nvgpu_gpu_get_fbp_l2_masks_args` (16).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct nvgpu_gpu_get_fbp_l2_masks_args {
    pub mask_buf_size: u32,
    pub reserved: u32,
    pub mask_buf_addr: u64,
}
check_size!(nvgpu_gpu_get_fbp_l2_masks_args, 16);

/// `NVGPU_GPU_SET_DETERMINISTIC_OPTS_FLAGS_ALLOW_RAILGATING`.
pub const NVGPU_GPU_SET_DETERMINISTIC_OPTS_FLAGS_ALLOW_RAILGATING: u32 = 1 << 0;
/// `NVGPU_GPU_SET_DETERMINISTIC_OPTS_FLAGS_DISALLOW_RAILGATING`.
pub const NVGPU_GPU_SET_DETERMINISTIC_OPTS_FLAGS_DISALLOW_RAILGATING: u32 = 1 << 1;

/// `struct nvgpu_gpu_set_deterministic_opts_args` (16).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct nvgpu_gpu_set_deterministic_opts_args {
    pub num_channels: u32,
    pub flags: u32,
    /// Pointer to an `int[num_channels]` of channel fds.
    pub channels: u64,
}
check_size!(nvgpu_gpu_set_deterministic_opts_args, 16);

/// `struct nvgpu_gpu_register_buffer_args` (24).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct nvgpu_gpu_register_buffer_args {
    pub dmabuf_fd: i32,
    pub comptags_alloc_control: u8,
    pub reserved0: u8,
    pub reserved1: u16,
    pub metadata_addr: u64,
    pub metadata_size: u32,
    pub flags: u32,
}
check_size!(nvgpu_gpu_register_buffer_args, 24);

/// `struct nvgpu_gpu_get_buffer_info_args` (24). Union: in = `{s32 dmabuf_fd, u32
/// metadata_size, u64 metadata_addr}`; out = `{u64 flags, u32 metadata_size, u32 reserved,
/// u64 size}`. Stored as raw words; see the accessors.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct nvgpu_gpu_get_buffer_info_args {
    pub raw: [u64; 3],
}
check_size!(nvgpu_gpu_get_buffer_info_args, 24);

impl nvgpu_gpu_get_buffer_info_args {
    /// Input arguments.
    pub const fn new_in(dmabuf_fd: i32, metadata_size: u32, metadata_addr: u64) -> Self {
        Self {
            raw: [
                (dmabuf_fd as u32 as u64) | ((metadata_size as u64) << 32),
                metadata_addr,
                0,
            ],
        }
    }
    /// `out.flags`.
    pub const fn out_flags(&self) -> u64 {
        self.raw[0]
    }
    /// `out.size`.
    pub const fn out_size(&self) -> u64 {
        self.raw[2]
    }
}

const G: u8 = NVGPU_GPU_IOCTL_MAGIC;

/// G/1 R.
pub const NVGPU_GPU_IOCTL_ZCULL_GET_CTX_SIZE: u64 =
    ior(G, 1, size_of::<nvgpu_gpu_zcull_get_ctx_size_args>());
/// G/2 R.
pub const NVGPU_GPU_IOCTL_ZCULL_GET_INFO: u64 =
    ior(G, 2, size_of::<nvgpu_gpu_zcull_get_info_args>());
/// G/5 RW.
pub const NVGPU_GPU_IOCTL_GET_CHARACTERISTICS: u64 =
    iowr(G, 5, size_of::<nvgpu_gpu_get_characteristics>());
/// G/8 RW.
pub const NVGPU_GPU_IOCTL_ALLOC_AS: u64 = iowr(G, 8, size_of::<nvgpu_alloc_as_args>());
/// G/9 RW.
pub const NVGPU_GPU_IOCTL_OPEN_TSG: u64 = iowr(G, 9, size_of::<nvgpu_gpu_open_tsg_args>());
/// G/10 RW.
pub const NVGPU_GPU_IOCTL_GET_TPC_MASKS: u64 =
    iowr(G, 10, size_of::<nvgpu_gpu_get_tpc_masks_args>());
/// G/11 RW (4 bytes; a 16-byte encoding → ENOTTY).
pub const NVGPU_GPU_IOCTL_OPEN_CHANNEL: u64 = iowr(G, 11, size_of::<nvgpu_gpu_open_channel_args>());
/// G/12 RW (5 bytes, packed).
pub const NVGPU_GPU_IOCTL_FLUSH_L2: u64 = iowr(G, 12, size_of::<nvgpu_gpu_l2_fb_args>());
/// G/18 RW.
pub const NVGPU_GPU_IOCTL_NUM_VSMS: u64 = iowr(G, 18, size_of::<nvgpu_gpu_num_vsms>());
/// G/19 RW.
pub const NVGPU_GPU_IOCTL_VSMS_MAPPING: u64 = iowr(G, 19, size_of::<nvgpu_gpu_vsms_mapping>());
/// G/25 RW.
pub const NVGPU_GPU_IOCTL_GET_GPU_TIME: u64 = iowr(G, 25, size_of::<nvgpu_gpu_get_gpu_time_args>());
/// G/26 RW.
pub const NVGPU_GPU_IOCTL_GET_ENGINE_INFO: u64 =
    iowr(G, 26, size_of::<nvgpu_gpu_get_engine_info_args>());
/// G/28 RW.
pub const NVGPU_GPU_IOCTL_CLK_GET_RANGE: u64 = iowr(G, 28, size_of::<nvgpu_gpu_clk_range_args>());
/// G/29 RW.
pub const NVGPU_GPU_IOCTL_CLK_GET_VF_POINTS: u64 =
    iowr(G, 29, size_of::<nvgpu_gpu_clk_vf_points_args>());
/// G/33 RW.
pub const NVGPU_GPU_IOCTL_GET_MEMORY_STATE: u64 =
    iowr(G, 33, size_of::<nvgpu_gpu_get_memory_state_args>());
/// G/38 RW.
pub const NVGPU_GPU_IOCTL_GET_FBP_L2_MASKS: u64 =
    iowr(G, 38, size_of::<nvgpu_gpu_get_fbp_l2_masks_args>());
/// G/40 RW.
pub const NVGPU_GPU_IOCTL_SET_DETERMINISTIC_OPTS: u64 =
    iowr(G, 40, size_of::<nvgpu_gpu_set_deterministic_opts_args>());
/// G/41 RW.
pub const NVGPU_GPU_IOCTL_REGISTER_BUFFER: u64 =
    iowr(G, 41, size_of::<nvgpu_gpu_register_buffer_args>());
/// G/42 RW.
pub const NVGPU_GPU_IOCTL_GET_BUFFER_INFO: u64 =
    iowr(G, 42, size_of::<nvgpu_gpu_get_buffer_info_args>());
/// G/43 RW.
pub const NVGPU_GPU_IOCTL_GET_GPC_LOCAL_TO_PHYSICAL_MAP: u64 =
    iowr(G, 43, size_of::<nvgpu_gpu_get_gpc_physical_map_args>());
/// G/44 RW.
pub const NVGPU_GPU_IOCTL_GET_GPC_LOCAL_TO_LOGICAL_MAP: u64 =
    iowr(G, 44, size_of::<nvgpu_gpu_get_gpc_logical_map_args>());
