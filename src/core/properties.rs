//! Device attributes ([`Device::attribute`]) and free memory ([`Device::memory_info`]).
//!
//! Where each value comes from, in order: what the kernel driver reports (DeviceInfo at open;
//! `Backend::facts`: nvgpu GET_CHARACTERISTICS, RM FB info, card info and sysfs), a table of
//! products whose values were read from NVIDIA's driver (by PCI id; the H200 so far), the
//! architecture table (`hw::arch`: shared memory, threads per SM), and the limits the library
//! itself enforces (grid, block, texture). An attribute none of these knows for the device is
//! `NotSupported`, never a guess.

use super::device::Device;
use crate::backend::{BackendFacts, BackendKind};
use crate::error::{Error, Result, Status};

/// A device attribute ([`Device::attribute`]). The values are stable (they are the C API's
/// `tg_device_attribute`): never renumbered, never reused.
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DeviceAttribute {
    /// Largest block, threads (x·y·z).
    MaxThreadsPerBlock = 1,
    /// Largest block x dimension.
    MaxBlockDimX = 2,
    /// Largest block y dimension.
    MaxBlockDimY = 3,
    /// Largest block z dimension.
    MaxBlockDimZ = 4,
    /// Largest grid x dimension (2^31 - 1).
    MaxGridDimX = 5,
    /// Largest grid y dimension.
    MaxGridDimY = 6,
    /// Largest grid z dimension.
    MaxGridDimZ = 7,
    /// Shared memory a block may use without opting in, bytes (48 KiB).
    MaxSharedMemoryPerBlock = 8,
    /// Shared memory a block may use in all (static + dynamic), bytes: the largest carveout
    /// less the 1 KiB the hardware reserves per block.
    MaxSharedMemoryPerBlockOptin = 9,
    /// Shared memory the hardware reserves per block, bytes.
    ReservedSharedMemoryPerBlock = 10,
    /// Shared memory of one SM (the largest carveout), bytes.
    MaxSharedMemoryPerSm = 11,
    /// Constant memory for `__constant__` data, bytes.
    TotalConstantMemory = 12,
    /// Threads per warp.
    WarpSize = 13,
    /// 32-bit registers a block may use.
    MaxRegistersPerBlock = 14,
    /// 32-bit registers of one SM.
    MaxRegistersPerSm = 15,
    /// Resident threads per SM.
    MaxThreadsPerSm = 16,
    /// Resident blocks per SM.
    MaxBlocksPerSm = 17,
    /// Enabled SMs.
    SmCount = 18,
    /// SM version major (compute capability).
    ComputeCapabilityMajor = 19,
    /// SM version minor.
    ComputeCapabilityMinor = 20,
    /// Maximum GPU clock, kHz.
    ClockRateKhz = 21,
    /// Peak memory clock, kHz.
    MemoryClockRateKhz = 22,
    /// Memory bus width, bits.
    MemoryBusWidthBits = 23,
    /// L2 cache, bytes.
    L2CacheBytes = 24,
    /// Memory usable for allocations, bytes (as `tg_device_info`'s `memory_bytes`).
    TotalMemoryBytes = 25,
    /// 1 when the GPU shares the CPU's memory (Jetson), else 0.
    Integrated = 26,
    /// 1: buffers are mapped for the CPU and the GPU alike.
    CanMapHostMemory = 27,
    /// 1 when every buffer's CPU pointer equals its GPU address, else 0.
    UnifiedAddressing = 28,
    /// 1: kernels of different queues may run at once.
    ConcurrentKernels = 29,
    /// Copy engines that work alongside kernels (as NVIDIA's driver counts them).
    AsyncEngineCount = 30,
    /// 1 when ECC is enabled on the device's memory, else 0.
    EccEnabled = 31,
    /// PCI domain (0 for the integrated GPU of a Jetson).
    PciDomainId = 32,
    /// PCI bus (0 for the integrated GPU of a Jetson).
    PciBusId = 33,
    /// PCI device (slot) (0 for the integrated GPU of a Jetson).
    PciDeviceId = 34,
    /// PCI device id << 16 | PCI vendor id (0x233510DE for the H200).
    PciVendorDeviceId = 35,
    /// PCI subsystem device id << 16 | subsystem vendor id.
    PciSubsystemId = 36,
    /// 1: cooperative launches (grid-wide sync) are supported.
    CooperativeLaunch = 37,
    /// 1 when thread-block clusters are supported (sm_90 and later), else 0.
    ClusterLaunch = 38,
    /// 1 when kernels have a run-time limit, else 0 (0: the library imposes none).
    KernelExecTimeout = 39,
    /// 0: any number of processes may use the device.
    ComputeMode = 40,
    /// Largest pitch of a pitched copy, bytes.
    MaxPitch = 41,
    /// Alignment a texture's base address needs, bytes.
    TextureAlignment = 42,
    /// Alignment a pitched texture's pitch needs, bytes.
    TexturePitchAlignment = 43,
    /// Largest 1-D linear texture, elements.
    MaxTexture1dLinearWidth = 44,
    /// Largest pitched 2-D texture width, elements.
    MaxTexture2dLinearWidth = 45,
    /// Largest pitched 2-D texture height, rows.
    MaxTexture2dLinearHeight = 46,
    /// Largest pitched 2-D texture pitch, bytes.
    MaxTexture2dLinearPitch = 47,
    /// 1: global loads may be cached in L1.
    GlobalL1CacheSupported = 48,
    /// 1: local memory may be cached in L1.
    LocalL1CacheSupported = 49,
    /// Width of the GPU virtual address space, bits.
    VirtualAddressBits = 50,
}

impl DeviceAttribute {
    /// Every attribute, in value order.
    pub const ALL: [DeviceAttribute; 50] = {
        use DeviceAttribute::*;
        [
            MaxThreadsPerBlock,
            MaxBlockDimX,
            MaxBlockDimY,
            MaxBlockDimZ,
            MaxGridDimX,
            MaxGridDimY,
            MaxGridDimZ,
            MaxSharedMemoryPerBlock,
            MaxSharedMemoryPerBlockOptin,
            ReservedSharedMemoryPerBlock,
            MaxSharedMemoryPerSm,
            TotalConstantMemory,
            WarpSize,
            MaxRegistersPerBlock,
            MaxRegistersPerSm,
            MaxThreadsPerSm,
            MaxBlocksPerSm,
            SmCount,
            ComputeCapabilityMajor,
            ComputeCapabilityMinor,
            ClockRateKhz,
            MemoryClockRateKhz,
            MemoryBusWidthBits,
            L2CacheBytes,
            TotalMemoryBytes,
            Integrated,
            CanMapHostMemory,
            UnifiedAddressing,
            ConcurrentKernels,
            AsyncEngineCount,
            EccEnabled,
            PciDomainId,
            PciBusId,
            PciDeviceId,
            PciVendorDeviceId,
            PciSubsystemId,
            CooperativeLaunch,
            ClusterLaunch,
            KernelExecTimeout,
            ComputeMode,
            MaxPitch,
            TextureAlignment,
            TexturePitchAlignment,
            MaxTexture1dLinearWidth,
            MaxTexture2dLinearWidth,
            MaxTexture2dLinearHeight,
            MaxTexture2dLinearPitch,
            GlobalL1CacheSupported,
            LocalL1CacheSupported,
            VirtualAddressBits,
        ]
    };

    /// The attribute with C value `v`.
    pub fn from_u32(v: u32) -> Option<DeviceAttribute> {
        DeviceAttribute::ALL
            .iter()
            .copied()
            .find(|a| *a as u32 == v)
    }

    /// The attribute's name in snake case (`"max_threads_per_block"`), as Python spells it.
    pub fn name(self) -> &'static str {
        use DeviceAttribute::*;
        match self {
            MaxThreadsPerBlock => "max_threads_per_block",
            MaxBlockDimX => "max_block_dim_x",
            MaxBlockDimY => "max_block_dim_y",
            MaxBlockDimZ => "max_block_dim_z",
            MaxGridDimX => "max_grid_dim_x",
            MaxGridDimY => "max_grid_dim_y",
            MaxGridDimZ => "max_grid_dim_z",
            MaxSharedMemoryPerBlock => "max_shared_memory_per_block",
            MaxSharedMemoryPerBlockOptin => "max_shared_memory_per_block_optin",
            ReservedSharedMemoryPerBlock => "reserved_shared_memory_per_block",
            MaxSharedMemoryPerSm => "max_shared_memory_per_sm",
            TotalConstantMemory => "total_constant_memory",
            WarpSize => "warp_size",
            MaxRegistersPerBlock => "max_registers_per_block",
            MaxRegistersPerSm => "max_registers_per_sm",
            MaxThreadsPerSm => "max_threads_per_sm",
            MaxBlocksPerSm => "max_blocks_per_sm",
            SmCount => "sm_count",
            ComputeCapabilityMajor => "compute_capability_major",
            ComputeCapabilityMinor => "compute_capability_minor",
            ClockRateKhz => "clock_rate_khz",
            MemoryClockRateKhz => "memory_clock_rate_khz",
            MemoryBusWidthBits => "memory_bus_width_bits",
            L2CacheBytes => "l2_cache_bytes",
            TotalMemoryBytes => "total_memory_bytes",
            Integrated => "integrated",
            CanMapHostMemory => "can_map_host_memory",
            UnifiedAddressing => "unified_addressing",
            ConcurrentKernels => "concurrent_kernels",
            AsyncEngineCount => "async_engine_count",
            EccEnabled => "ecc_enabled",
            PciDomainId => "pci_domain_id",
            PciBusId => "pci_bus_id",
            PciDeviceId => "pci_device_id",
            PciVendorDeviceId => "pci_vendor_device_id",
            PciSubsystemId => "pci_subsystem_id",
            CooperativeLaunch => "cooperative_launch",
            ClusterLaunch => "cluster_launch",
            KernelExecTimeout => "kernel_exec_timeout",
            ComputeMode => "compute_mode",
            MaxPitch => "max_pitch",
            TextureAlignment => "texture_alignment",
            TexturePitchAlignment => "texture_pitch_alignment",
            MaxTexture1dLinearWidth => "max_texture_1d_linear_width",
            MaxTexture2dLinearWidth => "max_texture_2d_linear_width",
            MaxTexture2dLinearHeight => "max_texture_2d_linear_height",
            MaxTexture2dLinearPitch => "max_texture_2d_linear_pitch",
            GlobalL1CacheSupported => "global_l1_cache_supported",
            LocalL1CacheSupported => "local_l1_cache_supported",
            VirtualAddressBits => "virtual_address_bits",
        }
    }
}

/// Values NVIDIA's driver reports for a product that no driver query here gives (clocks,
/// memory bus width, copy engines), keyed by PCI vendor and device id.
struct ProductFacts {
    vendor: u16,
    device: u16,
    clock_khz: u32,
    memory_clock_khz: u32,
    memory_bus_width_bits: u32,
    l2_cache_bytes: u64,
    async_engine_count: u32,
    ecc_enabled: bool,
}

/// Products whose values were read from NVIDIA's driver (`cuDeviceGetAttribute`).
const PRODUCTS: &[ProductFacts] = &[ProductFacts {
    // NVIDIA H200 (PCI 10de:2335), driver 580.
    vendor: 0x10DE,
    device: 0x2335,
    clock_khz: 1_980_000,
    memory_clock_khz: 3_201_000,
    memory_bus_width_bits: 6016,
    l2_cache_bytes: 62_914_560,
    async_engine_count: 3,
    ecc_enabled: true,
}];

/// What [`Device::attribute`] answers from, gathered once per device.
#[derive(Debug, Clone)]
pub(crate) struct DeviceProperties {
    facts: BackendFacts,
    product: Option<usize>,
}

impl DeviceProperties {
    fn gather(dev: &Device) -> DeviceProperties {
        let facts = dev.backend().facts();
        let product = facts.pci_ids.and_then(|[vendor, device, _, _]| {
            PRODUCTS
                .iter()
                .position(|p| p.vendor == vendor && p.device == device)
        });
        DeviceProperties { facts, product }
    }
}

impl Device {
    /// One attribute of the device (see [`DeviceAttribute`] for each one's meaning). Facts the
    /// driver reports come from it, product facts known for the GPU's PCI id next, then the
    /// architecture table and the library's own limits; an attribute nothing here knows for
    /// this device is `NotSupported` (for example the memory clock of a Jetson). The first call
    /// may ask the driver (RM: a few FB info controls); later calls read a cache.
    pub fn attribute(&self, attr: DeviceAttribute) -> Result<i64> {
        let p = self
            .inner
            .properties
            .get_or_init(|| DeviceProperties::gather(self));
        let f = &p.facts;
        let product = p.product.map(|i| &PRODUCTS[i]);
        let info = self.info();
        let arch = self.arch();
        let smem_sm = i64::from(super::module::max_shared_per_block(arch));
        let nvgpu = info.backend == BackendKind::Nvgpu;
        let pci = |i: usize| -> Option<i64> {
            match f.pci_location {
                Some(l) => Some(i64::from(l[i])),
                // The integrated GPU of a Jetson is not on PCI: 0, as NVIDIA's driver reports.
                None if f.integrated => Some(0),
                None => None,
            }
        };
        use crate::hw::texture as tex;
        use DeviceAttribute::*;
        let v: Option<i64> = match attr {
            MaxThreadsPerBlock => Some(1024),
            MaxBlockDimX | MaxBlockDimY => Some(1024),
            MaxBlockDimZ => Some(64),
            MaxGridDimX => Some(i64::from(i32::MAX)),
            MaxGridDimY | MaxGridDimZ => Some(65535),
            MaxSharedMemoryPerBlock => Some(48 * 1024),
            MaxSharedMemoryPerBlockOptin => {
                Some(smem_sm - i64::from(crate::cubin::SHARED_RESERVED_BYTES))
            }
            ReservedSharedMemoryPerBlock => Some(i64::from(crate::cubin::SHARED_RESERVED_BYTES)),
            MaxSharedMemoryPerSm => Some(smem_sm),
            TotalConstantMemory => Some(64 * 1024),
            WarpSize => Some(32),
            MaxRegistersPerBlock | MaxRegistersPerSm => Some(65536),
            MaxThreadsPerSm => Some(i64::from(arch.max_warps_per_sm) * 32),
            MaxBlocksPerSm => Some(i64::from(super::module::max_blocks_per_sm(
                info.sm_major,
                info.sm_minor,
            ))),
            SmCount => Some(i64::from(info.sm_count)),
            ComputeCapabilityMajor => Some(i64::from(info.sm_major)),
            ComputeCapabilityMinor => Some(i64::from(info.sm_minor)),
            ClockRateKhz => product.map(|p| p.clock_khz).or(f.clock_khz).map(i64::from),
            MemoryClockRateKhz => product.map(|p| i64::from(p.memory_clock_khz)),
            MemoryBusWidthBits => product
                .map(|p| p.memory_bus_width_bits)
                .or(f.memory_bus_width_bits)
                .map(i64::from),
            L2CacheBytes => product
                .map(|p| p.l2_cache_bytes)
                .or(f.l2_cache_bytes)
                .map(|b| b as i64),
            TotalMemoryBytes => Some(info.memory_bytes as i64),
            Integrated => Some(i64::from(f.integrated)),
            CanMapHostMemory | ConcurrentKernels | CooperativeLaunch => Some(1),
            UnifiedAddressing => Some(i64::from(info.unified_addresses)),
            AsyncEngineCount => product.map(|p| i64::from(p.async_engine_count)),
            EccEnabled => f
                .ecc_enabled
                .or(product.map(|p| p.ecc_enabled))
                .map(i64::from),
            PciDomainId => pci(0),
            PciBusId => pci(1),
            PciDeviceId => pci(2),
            PciVendorDeviceId => match f.pci_ids {
                Some([vendor, device, _, _]) => {
                    Some(i64::from((u32::from(device) << 16) | u32::from(vendor)))
                }
                None if nvgpu => Some(0),
                None => None,
            },
            PciSubsystemId => match f.pci_ids {
                Some([_, _, sv, sd]) => Some(i64::from((u32::from(sd) << 16) | u32::from(sv))),
                None if nvgpu => Some(0),
                None => None,
            },
            ClusterLaunch => Some(i64::from(info.sm_major >= 9)),
            KernelExecTimeout | ComputeMode => Some(0),
            MaxPitch => Some(i64::from(i32::MAX)),
            TextureAlignment => Some(512),
            TexturePitchAlignment => Some(tex::TEXTURE_ALIGN as i64),
            MaxTexture1dLinearWidth => Some(tex::MAX_LINEAR_WIDTH as i64),
            MaxTexture2dLinearWidth => Some(tex::MAX_PITCH2D_WIDTH as i64),
            MaxTexture2dLinearHeight => Some(tex::MAX_PITCH2D_HEIGHT as i64),
            MaxTexture2dLinearPitch => Some(tex::MAX_PITCH2D_PITCH as i64),
            GlobalL1CacheSupported | LocalL1CacheSupported => Some(1),
            VirtualAddressBits => Some(i64::from(info.va_bits)),
        };
        v.ok_or_else(|| {
            Error::new(
                Status::NotSupported,
                format!(
                    "tg_device_get_attribute: {} ({}) is not known for {} ({} backend): the driver does not report it and the library has no verified value for this GPU",
                    attr.name(),
                    attr as u32,
                    info.name,
                    if nvgpu { "nvgpu" } else { "rm" }
                ),
            )
        })
    }

    /// The most thread-block clusters of `cluster_blocks` blocks that run at once when
    /// `blocks_per_sm` blocks of the kernel fit on one multiprocessor. Each block of a cluster
    /// takes a different multiprocessor of one group the driver names (RM: a virtual GPC of the
    /// GPU's skyline, see `BackendFacts::cluster_sm_groups`), so a group of `s` multiprocessors
    /// holds `s × blocks_per_sm / cluster_blocks` clusters when `cluster_blocks ≤ s` and none
    /// otherwise. Where the driver names no groups, all multiprocessors count as one group. This is
    /// what NVIDIA's `cuOccupancyMaxActiveClusters` answers on the H200 for every cluster size
    /// from 1 to 16 blocks.
    pub fn max_active_clusters(&self, blocks_per_sm: u32, cluster_blocks: u32) -> u64 {
        let p = self
            .inner
            .properties
            .get_or_init(|| DeviceProperties::gather(self));
        let c = u64::from(cluster_blocks.max(1));
        let b = u64::from(blocks_per_sm);
        let fit = |s: u32| {
            let s = u64::from(s);
            if c <= s {
                s * b / c
            } else {
                0
            }
        };
        match &p.facts.cluster_sm_groups {
            Some(groups) => groups.iter().map(|&s| fit(s)).sum(),
            None => u64::from(self.info().sm_count) * b / c,
        }
    }

    /// (free, total) bytes of the memory allocations come from, now (like `cuMemGetInfo`).
    /// nvgpu: nvmap's IOVMM heap, which on Orin is the system memory the CPU shares (the
    /// emulated Orin: `TEGRAGPU_EMU_MEMORY_BYTES` less what its buffers hold); RM: the video
    /// memory heap (FB info `HEAP_FREE`, `HEAP_SIZE`).
    pub fn memory_info(&self) -> Result<(u64, u64)> {
        // Memory freed while queued work could still use it is released once that work is
        // done; release what has become free so that it counts.
        self.collect_deferred();
        self.backend().memory_info()
    }
}
