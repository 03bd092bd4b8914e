//! Raw ABI: nvgpu (`/dev/nvgpu/igpu0/*`, magics 'G' ctrl, 'A' address space, 'T' TSG, 'H' channel).
//!
//! Layouts and request numbers follow the nvgpu uapi headers of L4T r36 (`nvgpu-ctrl.h`,
//! `nvgpu-as.h`, `nvgpu.h`) as described in `docs/nvgpu-kernel-interface.md` §2/§3. Every struct
//! is `#[repr(C)]` with the header's field names; compiler padding that the headers leave
//! implicit is an explicit `_padN` field here so that every byte of a value is initialised (the
//! emulated kernel copies these structs as bytes). Sizes and the offsets the library and the
//! emulator use are checked at compile time.
//!
//! Request numbers are computed from the struct sizes with the asm-generic `_IOC` layout that
//! arm64 uses: nr in bits 0-7, type in bits 8-15, size in bits 16-29, direction in bits 30-31
//! (`_IOC_WRITE` = 1, `_IOC_READ` = 2).

#![allow(non_camel_case_types, non_snake_case)]

use core::mem::{offset_of, size_of};

// ---------------------------------------------------------------------------------------------
// _IOC encoding
// ---------------------------------------------------------------------------------------------

/// `_IOC_NONE`: no data transfer.
pub const IOC_NONE: u64 = 0;
/// `_IOC_WRITE`: user space writes, the kernel reads the argument.
pub const IOC_WRITE: u64 = 1;
/// `_IOC_READ`: the kernel writes the argument back.
pub const IOC_READ: u64 = 2;
/// Bit position of the nr field.
pub const IOC_NRSHIFT: u32 = 0;
/// Bit position of the type (magic) field.
pub const IOC_TYPESHIFT: u32 = 8;
/// Bit position of the size field.
pub const IOC_SIZESHIFT: u32 = 16;
/// Bit position of the direction field.
pub const IOC_DIRSHIFT: u32 = 30;
/// Width mask of the size field (14 bits).
pub const IOC_SIZEMASK: u64 = (1 << 14) - 1;

/// `_IOC(dir, type, nr, size)`. Sizes that do not fit the 14-bit field fail const evaluation.
pub const fn ioc(dir: u64, ty: u8, nr: u8, size: usize) -> u64 {
    assert!(
        size as u64 <= IOC_SIZEMASK,
        "ioctl argument too large for _IOC"
    );
    assert!(dir <= 3, "bad _IOC direction");
    (dir << IOC_DIRSHIFT)
        | ((size as u64) << IOC_SIZESHIFT)
        | ((ty as u64) << IOC_TYPESHIFT)
        | ((nr as u64) << IOC_NRSHIFT)
}
/// `_IO(type, nr)`.
pub const fn io(ty: u8, nr: u8) -> u64 {
    ioc(IOC_NONE, ty, nr, 0)
}
/// `_IOR(type, nr, T)` with `size = sizeof(T)`.
pub const fn ior(ty: u8, nr: u8, size: usize) -> u64 {
    ioc(IOC_READ, ty, nr, size)
}
/// `_IOW(type, nr, T)` with `size = sizeof(T)`.
pub const fn iow(ty: u8, nr: u8, size: usize) -> u64 {
    ioc(IOC_WRITE, ty, nr, size)
}
/// `_IOWR(type, nr, T)` with `size = sizeof(T)`.
pub const fn iowr(ty: u8, nr: u8, size: usize) -> u64 {
    ioc(IOC_READ | IOC_WRITE, ty, nr, size)
}
/// `_IOC_NR(request)`.
pub const fn ioc_nr(req: u64) -> u8 {
    (req & 0xff) as u8
}
/// `_IOC_TYPE(request)`.
pub const fn ioc_type(req: u64) -> u8 {
    ((req >> IOC_TYPESHIFT) & 0xff) as u8
}
/// `_IOC_SIZE(request)`.
pub const fn ioc_size(req: u64) -> usize {
    ((req >> IOC_SIZESHIFT) & IOC_SIZEMASK) as usize
}
/// `_IOC_DIR(request)`.
pub const fn ioc_dir(req: u64) -> u64 {
    (req >> IOC_DIRSHIFT) & 3
}

// ---------------------------------------------------------------------------------------------
// Plain-old-data helper
// ---------------------------------------------------------------------------------------------

/// Marker for ABI structs: `#[repr(C)]`, no implicit padding, every bit pattern valid.
///
/// # Safety
/// Implement only for types with no padding bytes and no invalid bit patterns.
pub unsafe trait AbiPod: Copy + Default + 'static {
    /// The value's bytes.
    fn as_bytes(&self) -> &[u8] {
        // SAFETY: Self has no padding (trait contract), so all bytes are initialised.
        unsafe {
            core::slice::from_raw_parts((self as *const Self).cast::<u8>(), size_of::<Self>())
        }
    }
    /// The value's bytes, writable.
    fn as_bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: every bit pattern is valid for Self (trait contract).
        unsafe {
            core::slice::from_raw_parts_mut((self as *mut Self).cast::<u8>(), size_of::<Self>())
        }
    }
    /// Reads a value from the first `size_of::<Self>()` bytes; `None` if `b` is shorter.
    fn from_bytes(b: &[u8]) -> Option<Self> {
        if b.len() < size_of::<Self>() {
            return None;
        }
        // SAFETY: length checked; every bit pattern is valid; read_unaligned has no alignment need.
        Some(unsafe { core::ptr::read_unaligned(b.as_ptr().cast::<Self>()) })
    }
    /// An all-zero value.
    fn zeroed() -> Self {
        Self::default()
    }
}

macro_rules! pod {
    ($($t:ty),* $(,)?) => { $(
        // SAFETY: the struct's size assert below proves it has no implicit padding
        // (its size equals the sum of its explicit fields) and all fields are integers.
        unsafe impl AbiPod for $t {}
    )* };
}

macro_rules! check_size {
    ($t:ty, $n:expr) => {
        const _: () = assert!(size_of::<$t>() == $n);
    };
}
macro_rules! check_off {
    ($t:ty, $f:ident, $n:expr) => {
        const _: () = assert!(offset_of!($t, $f) == $n);
    };
}

// ---------------------------------------------------------------------------------------------
// Magics and dispatcher limits
// ---------------------------------------------------------------------------------------------

/// `NVGPU_GPU_IOCTL_MAGIC` ('G'), ctrl node.
pub const NVGPU_GPU_IOCTL_MAGIC: u8 = b'G';
/// `NVGPU_AS_IOCTL_MAGIC` ('A'), address-space fd.
pub const NVGPU_AS_IOCTL_MAGIC: u8 = b'A';
/// `NVGPU_TSG_IOCTL_MAGIC` ('T'), TSG fd.
pub const NVGPU_TSG_IOCTL_MAGIC: u8 = b'T';
/// `NVGPU_IOCTL_MAGIC` ('H'), channel fd.
pub const NVGPU_IOCTL_MAGIC: u8 = b'H';

/// Highest ctrl ioctl nr (`NVGPU_GPU_IOCTL_LAST`); larger nr → EINVAL.
pub const NVGPU_GPU_IOCTL_LAST: u32 = 44;
/// Largest ctrl argument (`sizeof(nvgpu_gpu_get_cpu_time_correlation_info_args)`); larger → EINVAL.
pub const NVGPU_GPU_IOCTL_MAX_ARG_SIZE: usize = 264;
/// Highest AS ioctl nr.
pub const NVGPU_AS_IOCTL_LAST: u32 = 14;
/// Largest AS argument.
pub const NVGPU_AS_IOCTL_MAX_ARG_SIZE: usize = 40;
/// Highest TSG ioctl nr.
pub const NVGPU_TSG_IOCTL_LAST: u32 = 21;
/// Largest TSG argument.
pub const NVGPU_TSG_IOCTL_MAX_ARG_SIZE: usize = 32;
/// Highest channel ioctl nr.
pub const NVGPU_IOCTL_CHANNEL_LAST: u32 = 128;
/// Largest channel argument (`sizeof(nvgpu_channel_setup_bind_args)`).
pub const NVGPU_IOCTL_CHANNEL_MAX_ARG_SIZE: usize = 104;

// ---------------------------------------------------------------------------------------------
// ctrl ('G') structs
// ---------------------------------------------------------------------------------------------

/// `struct nvgpu_gpu_zcull_get_ctx_size_args` (4).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct nvgpu_gpu_zcull_get_ctx_size_args {
    pub size: u32,
}
check_size!(nvgpu_gpu_zcull_get_ctx_size_args, 4);

/// `struct nvgpu_gpu_zcull_get_info_args` (40, all out).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
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
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
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
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
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
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
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
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
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
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct nvgpu_gpu_get_tpc_masks_args {
    pub mask_buf_size: u32,
    pub reserved: u32,
    pub mask_buf_addr: u64,
}
check_size!(nvgpu_gpu_get_tpc_masks_args, 16);

/// `struct nvgpu_gpu_get_gpc_physical_map_args` (16).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct nvgpu_gpu_get_gpc_physical_map_args {
    pub map_buf_size: u32,
    pub reserved: u32,
    pub physical_gpc_buf_addr: u64,
}
check_size!(nvgpu_gpu_get_gpc_physical_map_args, 16);

/// `struct nvgpu_gpu_get_gpc_logical_map_args` (16).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct nvgpu_gpu_get_gpc_logical_map_args {
    pub map_buf_size: u32,
    pub reserved: u32,
    pub logical_gpc_buf_addr: u64,
}
check_size!(nvgpu_gpu_get_gpc_logical_map_args, 16);

/// `struct nvgpu_gpu_open_channel_args` (4). The header's union of `channel_fd` (deprecated
/// alias), `in.runlist_id` and `out.channel_fd`: one `s32`, runlist id in, channel fd out.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
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
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
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
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct nvgpu_gpu_num_vsms {
    pub num_vsms: u32,
    pub reserved: u32,
}
check_size!(nvgpu_gpu_num_vsms, 8);

/// `struct nvgpu_gpu_vsms_mapping_entry` (6).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
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
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct nvgpu_gpu_vsms_mapping {
    pub vsms_map_buf_addr: u64,
}
check_size!(nvgpu_gpu_vsms_mapping, 8);

/// `struct nvgpu_gpu_get_gpu_time_args` (16).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
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
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct nvgpu_gpu_get_engine_info_item {
    pub engine_id: u32,
    pub engine_instance: u32,
    pub runlist_id: i32,
    pub reserved: u32,
}
check_size!(nvgpu_gpu_get_engine_info_item, 16);

/// `struct nvgpu_gpu_get_engine_info_args` (16).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct nvgpu_gpu_get_engine_info_args {
    pub engine_info_buf_size: u32,
    pub reserved: u32,
    pub engine_info_buf_addr: u64,
}
check_size!(nvgpu_gpu_get_engine_info_args, 16);

/// `struct nvgpu_gpu_clk_range_args` (16).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct nvgpu_gpu_clk_range_args {
    pub flags: u32,
    pub pad0: u16,
    pub num_entries: u16,
    pub clk_range_entries: u64,
}
check_size!(nvgpu_gpu_clk_range_args, 16);

/// `struct nvgpu_gpu_clk_vf_points_args` (24).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
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
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct nvgpu_gpu_get_memory_state_args {
    /// out: free bytes for this device.
    pub total_free_bytes: u64,
    pub reserved: [u64; 4],
}
check_size!(nvgpu_gpu_get_memory_state_args, 40);

/// `struct nvgpu_gpu_get_fbp_l2_masks_args` (16).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
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
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct nvgpu_gpu_set_deterministic_opts_args {
    pub num_channels: u32,
    pub flags: u32,
    /// Pointer to an `int[num_channels]` of channel fds.
    pub channels: u64,
}
check_size!(nvgpu_gpu_set_deterministic_opts_args, 16);

/// `struct nvgpu_gpu_register_buffer_args` (24).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
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
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
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

// ---------------------------------------------------------------------------------------------
// AS ('A') structs
// ---------------------------------------------------------------------------------------------

/// `NVGPU_AS_ALLOC_SPACE_FLAGS_FIXED_OFFSET`.
pub const NVGPU_AS_ALLOC_SPACE_FLAGS_FIXED_OFFSET: u32 = 0x1;
/// `NVGPU_AS_ALLOC_SPACE_FLAGS_SPARSE`.
pub const NVGPU_AS_ALLOC_SPACE_FLAGS_SPARSE: u32 = 0x2;

/// `struct nvgpu_as_bind_channel_args` (4).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct nvgpu_as_bind_channel_args {
    pub channel_fd: u32,
}
check_size!(nvgpu_as_bind_channel_args, 4);

/// `struct nvgpu_as_alloc_space_args` (32). `o_a` is the header's union `{offset, align}`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct nvgpu_as_alloc_space_args {
    pub pages: u64,
    pub page_size: u32,
    pub flags: u32,
    /// `o_a.offset` (in if FIXED_OFFSET, out always) / `o_a.align` (ignored by r36).
    pub o_a: u64,
    pub padding: [u32; 2],
}
check_size!(nvgpu_as_alloc_space_args, 32);
check_off!(nvgpu_as_alloc_space_args, page_size, 8);
check_off!(nvgpu_as_alloc_space_args, flags, 12);
check_off!(nvgpu_as_alloc_space_args, o_a, 16);

/// `struct nvgpu_as_free_space_args` (32).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct nvgpu_as_free_space_args {
    pub offset: u64,
    pub pages: u64,
    pub page_size: u32,
    pub padding: [u32; 3],
}
check_size!(nvgpu_as_free_space_args, 32);

/// `NVGPU_AS_MAP_BUFFER_FLAGS_FIXED_OFFSET`.
pub const NVGPU_AS_MAP_BUFFER_FLAGS_FIXED_OFFSET: u32 = 1 << 0;
/// `NVGPU_AS_MAP_BUFFER_FLAGS_CACHEABLE` (GPU L2-cacheable PTE; without it the PTE is volatile).
pub const NVGPU_AS_MAP_BUFFER_FLAGS_CACHEABLE: u32 = 1 << 2;
/// `NVGPU_AS_MAP_BUFFER_FLAGS_UNMAPPED_PTE` (deprecated).
pub const NVGPU_AS_MAP_BUFFER_FLAGS_UNMAPPED_PTE: u32 = 1 << 5;
/// `NVGPU_AS_MAP_BUFFER_FLAGS_MAPPABLE_COMPBITS` (ignored).
pub const NVGPU_AS_MAP_BUFFER_FLAGS_MAPPABLE_COMPBITS: u32 = 1 << 6;
/// `NVGPU_AS_MAP_BUFFER_FLAGS_L3_ALLOC`.
pub const NVGPU_AS_MAP_BUFFER_FLAGS_L3_ALLOC: u32 = 1 << 7;
/// `NVGPU_AS_MAP_BUFFER_FLAGS_SYSTEM_COHERENT`.
pub const NVGPU_AS_MAP_BUFFER_FLAGS_SYSTEM_COHERENT: u32 = 1 << 9;
/// `NVGPU_AS_MAP_BUFFER_FLAGS_TEGRA_RAW`.
pub const NVGPU_AS_MAP_BUFFER_FLAGS_TEGRA_RAW: u32 = 1 << 12;
/// `NVGPU_AS_MAP_BUFFER_FLAGS_ACCESS_BITMASK_OFFSET`.
pub const NVGPU_AS_MAP_BUFFER_FLAGS_ACCESS_BITMASK_OFFSET: u32 = 10;
/// `NVGPU_AS_MAP_BUFFER_FLAGS_ACCESS_BITMASK_SIZE`.
pub const NVGPU_AS_MAP_BUFFER_FLAGS_ACCESS_BITMASK_SIZE: u32 = 2;
/// `NVGPU_AS_MAP_BUFFER_ACCESS_DEFAULT`.
pub const NVGPU_AS_MAP_BUFFER_ACCESS_DEFAULT: u32 = 0;
/// `NVGPU_AS_MAP_BUFFER_ACCESS_READ_ONLY`.
pub const NVGPU_AS_MAP_BUFFER_ACCESS_READ_ONLY: u32 = 1;
/// `NVGPU_AS_MAP_BUFFER_ACCESS_READ_WRITE`.
pub const NVGPU_AS_MAP_BUFFER_ACCESS_READ_WRITE: u32 = 2;
/// Every MAP_BUFFER_EX flag bit r36 accepts; any other bit → EINVAL ("Extra flags").
pub const NVGPU_AS_MAP_BUFFER_FLAGS_VALID_MASK: u32 = NVGPU_AS_MAP_BUFFER_FLAGS_FIXED_OFFSET
    | NVGPU_AS_MAP_BUFFER_FLAGS_CACHEABLE
    | NVGPU_AS_MAP_BUFFER_FLAGS_UNMAPPED_PTE
    | NVGPU_AS_MAP_BUFFER_FLAGS_MAPPABLE_COMPBITS
    | NVGPU_AS_MAP_BUFFER_FLAGS_L3_ALLOC
    | NVGPU_AS_MAP_BUFFER_FLAGS_SYSTEM_COHERENT
    | (3 << NVGPU_AS_MAP_BUFFER_FLAGS_ACCESS_BITMASK_OFFSET)
    | NVGPU_AS_MAP_BUFFER_FLAGS_TEGRA_RAW;
/// `NV_KIND_INVALID`.
pub const NV_KIND_INVALID: i16 = -1;
/// PTE kind 0: pitch (incompressible), proven on hardware.
pub const NV_KIND_PITCH: i16 = 0;

/// `struct nvgpu_as_map_buffer_ex_args` (40).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct nvgpu_as_map_buffer_ex_args {
    pub flags: u32,
    pub compr_kind: i16,
    pub incompr_kind: i16,
    pub dmabuf_fd: u32,
    /// Ignored by r36.
    pub page_size: u32,
    /// in: FIXED only.
    pub buffer_offset: u64,
    /// in: FIXED only, 0 = whole buffer.
    pub mapping_size: u64,
    /// in: 0 unless FIXED; out: GPU VA.
    pub offset: u64,
}
check_size!(nvgpu_as_map_buffer_ex_args, 40);
check_off!(nvgpu_as_map_buffer_ex_args, compr_kind, 4);
check_off!(nvgpu_as_map_buffer_ex_args, incompr_kind, 6);
check_off!(nvgpu_as_map_buffer_ex_args, dmabuf_fd, 8);
check_off!(nvgpu_as_map_buffer_ex_args, page_size, 12);
check_off!(nvgpu_as_map_buffer_ex_args, buffer_offset, 16);
check_off!(nvgpu_as_map_buffer_ex_args, mapping_size, 24);
check_off!(nvgpu_as_map_buffer_ex_args, offset, 32);

/// `struct nvgpu_as_unmap_buffer_args` (8).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct nvgpu_as_unmap_buffer_args {
    /// in: exact start VA of a mapping.
    pub offset: u64,
}
check_size!(nvgpu_as_unmap_buffer_args, 8);

/// `struct nvgpu_as_va_region` (24).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct nvgpu_as_va_region {
    pub offset: u64,
    pub page_size: u32,
    pub reserved: u32,
    pub pages: u64,
}
check_size!(nvgpu_as_va_region, 24);

/// `struct nvgpu_as_get_va_regions_args` (16).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct nvgpu_as_get_va_regions_args {
    pub buf_addr: u64,
    pub buf_size: u32,
    pub reserved: u32,
}
check_size!(nvgpu_as_get_va_regions_args, 16);

/// `struct nvgpu_as_map_buffer_batch_args` (32).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct nvgpu_as_map_buffer_batch_args {
    pub unmaps: u64,
    pub maps: u64,
    pub num_unmaps: u32,
    pub num_maps: u32,
    pub reserved: u64,
}
check_size!(nvgpu_as_map_buffer_batch_args, 32);

/// `struct nvgpu_as_get_sync_ro_map_args` (16, out).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct nvgpu_as_get_sync_ro_map_args {
    pub base_gpuva: u64,
    pub sync_size: u32,
    pub num_syncpoints: u32,
}
check_size!(nvgpu_as_get_sync_ro_map_args, 16);

// ---------------------------------------------------------------------------------------------
// TSG ('T') structs
// ---------------------------------------------------------------------------------------------

/// `NVGPU_TSG_SUBCONTEXT_TYPE_SYNC`.
pub const NVGPU_TSG_SUBCONTEXT_TYPE_SYNC: u32 = 0;
/// `NVGPU_TSG_SUBCONTEXT_TYPE_ASYNC`.
pub const NVGPU_TSG_SUBCONTEXT_TYPE_ASYNC: u32 = 1;

/// `struct nvgpu_tsg_bind_channel_ex_args` (24).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
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
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
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
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct nvgpu_tsg_delete_subcontext_args {
    pub veid: u32,
    pub reserved: u32,
}
check_size!(nvgpu_tsg_delete_subcontext_args, 8);

/// `struct nvgpu_timeslice_args` (8).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct nvgpu_timeslice_args {
    pub timeslice_us: u32,
    pub reserved: u32,
}
check_size!(nvgpu_timeslice_args, 8);

/// `NVGPU_IOCTL_CHANNEL_EVENT_ID_CMD_ENABLE`.
pub const NVGPU_IOCTL_CHANNEL_EVENT_ID_CMD_ENABLE: u32 = 1;

/// `struct nvgpu_event_id_ctrl_args` (16).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct nvgpu_event_id_ctrl_args {
    pub cmd: u32,
    pub event_id: u32,
    pub event_fd: i32,
    pub padding: u32,
}
check_size!(nvgpu_event_id_ctrl_args, 16);

/// `struct nvgpu_tsg_l2_max_ways_evict_last_args` (8).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct nvgpu_tsg_l2_max_ways_evict_last_args {
    pub max_ways: u32,
    pub reserved: u32,
}
check_size!(nvgpu_tsg_l2_max_ways_evict_last_args, 8);

/// `struct nvgpu_tsg_sm_error_state_record` (24).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
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
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct nvgpu_tsg_read_single_sm_error_state_args {
    pub sm_id: u32,
    pub reserved: u32,
    pub record_mem: u64,
    pub record_size: u64,
}
check_size!(nvgpu_tsg_read_single_sm_error_state_args, 24);

/// `struct nvgpu_tsg_read_all_sm_error_state_args` (24).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct nvgpu_tsg_read_all_sm_error_state_args {
    pub num_sm: u32,
    pub reserved: u32,
    pub buffer_mem: u64,
    pub buffer_size: u64,
}
check_size!(nvgpu_tsg_read_all_sm_error_state_args, 24);

// ---------------------------------------------------------------------------------------------
// channel ('H') structs
// ---------------------------------------------------------------------------------------------

/// `struct nvgpu_set_timeout_args` (4).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct nvgpu_set_timeout_args {
    /// ms.
    pub timeout: u32,
}
check_size!(nvgpu_set_timeout_args, 4);

/// `NVGPU_TIMEOUT_FLAG_DISABLE_DUMP` (bit number in `nvgpu_set_timeout_ex_args.flags`).
pub const NVGPU_TIMEOUT_FLAG_DISABLE_DUMP: u32 = 0;

/// `struct nvgpu_set_timeout_ex_args` (8).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct nvgpu_set_timeout_ex_args {
    pub timeout: u32,
    pub flags: u32,
}
check_size!(nvgpu_set_timeout_ex_args, 8);

/// `struct nvgpu_get_param_args` (4), e.g. GET_TIMEDOUT.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct nvgpu_get_param_args {
    pub value: u32,
}
check_size!(nvgpu_get_param_args, 4);

/// `struct nvgpu_fence` (8).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct nvgpu_fence {
    pub id: u32,
    pub value: u32,
}
check_size!(nvgpu_fence, 8);

/// `struct nvgpu_submit_gpfifo_args` (24). Never used by the library (usermode channels → EINVAL).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
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
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct nvgpu_alloc_obj_ctx_args {
    pub class_num: u32,
    pub flags: u32,
    /// Not written by r36.
    pub obj_id: u64,
}
check_size!(nvgpu_alloc_obj_ctx_args, 16);

/// `struct nvgpu_set_error_notifier` (24).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
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
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct nvgpu_notification_time_stamp {
    /// ns since the epoch, low word then high word.
    pub nanoseconds: [u32; 2],
}

/// `struct nvgpu_notification` (16): the error-notifier record the kernel writes.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
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
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct nvgpu_channel_wdt_args {
    pub wdt_status: u32,
    pub timeout_ms: u32,
}
check_size!(nvgpu_channel_wdt_args, 8);

/// `NVGPU_COMPUTE_PREEMPTION_MODE_WFI`.
pub const NVGPU_COMPUTE_PREEMPTION_MODE_WFI: u32 = 1 << 0;
/// `NVGPU_COMPUTE_PREEMPTION_MODE_CTA`.
pub const NVGPU_COMPUTE_PREEMPTION_MODE_CTA: u32 = 1 << 1;
/// `NVGPU_COMPUTE_PREEMPTION_MODE_CILP`.
pub const NVGPU_COMPUTE_PREEMPTION_MODE_CILP: u32 = 1 << 2;

/// `struct nvgpu_preemption_mode_args` (8).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct nvgpu_preemption_mode_args {
    pub graphics_preempt_mode: u32,
    pub compute_preempt_mode: u32,
}
check_size!(nvgpu_preemption_mode_args, 8);

/// `struct nvgpu_get_user_syncpoint_args` (16, out).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
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
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
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

pod!(
    nvgpu_gpu_zcull_get_ctx_size_args,
    nvgpu_gpu_zcull_get_info_args,
    nvgpu_gpu_characteristics,
    nvgpu_gpu_get_characteristics,
    nvgpu_alloc_as_args,
    nvgpu_gpu_open_tsg_args,
    nvgpu_gpu_get_tpc_masks_args,
    nvgpu_gpu_get_gpc_physical_map_args,
    nvgpu_gpu_get_gpc_logical_map_args,
    nvgpu_gpu_open_channel_args,
    nvgpu_gpu_l2_fb_args,
    nvgpu_gpu_num_vsms,
    nvgpu_gpu_vsms_mapping_entry,
    nvgpu_gpu_vsms_mapping,
    nvgpu_gpu_get_gpu_time_args,
    nvgpu_gpu_get_engine_info_item,
    nvgpu_gpu_get_engine_info_args,
    nvgpu_gpu_clk_range_args,
    nvgpu_gpu_clk_vf_points_args,
    nvgpu_gpu_get_memory_state_args,
    nvgpu_gpu_get_fbp_l2_masks_args,
    nvgpu_gpu_set_deterministic_opts_args,
    nvgpu_gpu_register_buffer_args,
    nvgpu_gpu_get_buffer_info_args,
    nvgpu_as_bind_channel_args,
    nvgpu_as_alloc_space_args,
    nvgpu_as_free_space_args,
    nvgpu_as_map_buffer_ex_args,
    nvgpu_as_unmap_buffer_args,
    nvgpu_as_va_region,
    nvgpu_as_get_va_regions_args,
    nvgpu_as_map_buffer_batch_args,
    nvgpu_as_get_sync_ro_map_args,
    nvgpu_tsg_bind_channel_ex_args,
    nvgpu_tsg_create_subcontext_args,
    nvgpu_tsg_delete_subcontext_args,
    nvgpu_timeslice_args,
    nvgpu_event_id_ctrl_args,
    nvgpu_tsg_l2_max_ways_evict_last_args,
    nvgpu_tsg_sm_error_state_record,
    nvgpu_tsg_read_single_sm_error_state_args,
    nvgpu_tsg_read_all_sm_error_state_args,
    nvgpu_set_timeout_args,
    nvgpu_set_timeout_ex_args,
    nvgpu_get_param_args,
    nvgpu_fence,
    nvgpu_submit_gpfifo_args,
    nvgpu_alloc_obj_ctx_args,
    nvgpu_set_error_notifier,
    nvgpu_notification_time_stamp,
    nvgpu_notification,
    nvgpu_channel_wdt_args,
    nvgpu_preemption_mode_args,
    nvgpu_get_user_syncpoint_args,
    nvgpu_channel_setup_bind_args,
);

// ---------------------------------------------------------------------------------------------
// Request numbers
// ---------------------------------------------------------------------------------------------

const G: u8 = NVGPU_GPU_IOCTL_MAGIC;
const A: u8 = NVGPU_AS_IOCTL_MAGIC;
const T: u8 = NVGPU_TSG_IOCTL_MAGIC;
const H: u8 = NVGPU_IOCTL_MAGIC;

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

/// A/1 RW.
pub const NVGPU_AS_IOCTL_BIND_CHANNEL: u64 = iowr(A, 1, size_of::<nvgpu_as_bind_channel_args>());
/// A/3 RW.
pub const NVGPU_AS_IOCTL_FREE_SPACE: u64 = iowr(A, 3, size_of::<nvgpu_as_free_space_args>());
/// A/5 RW.
pub const NVGPU_AS_IOCTL_UNMAP_BUFFER: u64 = iowr(A, 5, size_of::<nvgpu_as_unmap_buffer_args>());
/// A/6 RW (64-bit `pages`; the legacy 24-byte A/2 form is not used).
pub const NVGPU_AS_IOCTL_ALLOC_SPACE: u64 = iowr(A, 6, size_of::<nvgpu_as_alloc_space_args>());
/// A/7 RW.
pub const NVGPU_AS_IOCTL_MAP_BUFFER_EX: u64 = iowr(A, 7, size_of::<nvgpu_as_map_buffer_ex_args>());
/// A/8 RW.
pub const NVGPU_AS_IOCTL_GET_VA_REGIONS: u64 =
    iowr(A, 8, size_of::<nvgpu_as_get_va_regions_args>());
/// A/11 RW.
pub const NVGPU_AS_IOCTL_MAP_BUFFER_BATCH: u64 =
    iowr(A, 11, size_of::<nvgpu_as_map_buffer_batch_args>());
/// A/12 R.
pub const NVGPU_AS_IOCTL_GET_SYNC_RO_MAP: u64 =
    ior(A, 12, size_of::<nvgpu_as_get_sync_ro_map_args>());

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

// ---------------------------------------------------------------------------------------------
// Usermode (doorbell) page and USERD
// ---------------------------------------------------------------------------------------------

/// Length of the usermode region mapped from the ctrl fd (offset 0).
pub const NVGPU_USERMODE_MAP_SIZE: usize = 0x10000;
/// Byte offset of the doorbell (`func_doorbell_r() - func_cfg0_r()`); write the token here.
pub const NVGPU_USERMODE_DOORBELL_OFFSET: usize = 0x90;
/// USERD byte offset of GP_GET (written by the GPU).
pub const NVGPU_USERD_GP_GET_OFFSET: usize = 0x88;
/// USERD byte offset of GP_PUT (written by the CPU).
pub const NVGPU_USERD_GP_PUT_OFFSET: usize = 0x8c;

// ---------------------------------------------------------------------------------------------
// Request table
// ---------------------------------------------------------------------------------------------

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

use crate::sys::nvmap::*;

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
