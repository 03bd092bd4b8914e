//! Per-architecture table: class ids, QMD version, VA width, shared/local windows, constant bank 0
//! layout and shared-memory carveouts.
//!
//! Sources: gpu-programming-interface.md §3.2, §4, §6.8; rm-kernel-interface.md §4.1. Values
//! marked *unverified* in the field docs come from public headers or CUDA documentation but were
//! not run on that chip.

/// QMD layout version used by a compute class.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum QmdVersion {
    /// QMD V03_00, 256 bytes (Ampere, Ada).
    V03,
    /// QMD V04_00, 384 bytes (Hopper; QMD_TYPE must be GRID_CTA).
    V04,
    /// QMD V05_00, 384 bytes (Blackwell; best effort, unverified).
    V05,
}

impl QmdVersion {
    /// Size of the QMD in bytes.
    pub const fn size_bytes(self) -> usize {
        match self {
            QmdVersion::V03 => 256,
            QmdVersion::V04 | QmdVersion::V05 => 384,
        }
    }
    /// Size of the QMD in dwords.
    pub const fn size_dwords(self) -> usize {
        self.size_bytes() / 4
    }
}

/// Required alignment of a QMD in GPU memory (SEND_PCAS_A takes the address >> 8).
pub const QMD_ALIGN: u64 = 256;

/// Driver-reserved offsets in constant bank 0 (gpu-programming-interface.md §6.8).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cbank0Layout {
    /// blockDim.x/y/z (three u32).
    pub block_dim: u32,
    /// gridDim.x/y/z (three u32).
    pub grid_dim: u32,
    /// Shared window generic base (u64).
    pub shared_window: u32,
    /// Local window generic base (u64).
    pub local_window: u32,
    /// Initial stack pointer (u32, value [`crate::hw::cbank0::STACK_TOP`]).
    pub stack_top: u32,
    /// Dynamic shared bytes (u32); `None` where the slot is not known (sm_100).
    pub dyn_smem: Option<u32>,
    /// SM count (u32).
    pub sm_count: u32,
    /// Reserved shared-memory base (u32, value 0x400).
    pub reserved_smem_base: u32,
    /// sm_90 cluster block: aggregate shared @0x13C, cluster dims @0x144, 1.0f @0x150, grid in
    /// clusters @0x15C, DSMEM stride @0x16C, cluster rank count @0x188.
    pub sm90_cluster: bool,
    /// Global memory descriptor (u64, written 0); `None` where none is written.
    pub mem_desc: Option<u32>,
    /// First byte the driver part uses past the fixed slots; parameters must start at or above it.
    pub reserved_end: u32,
    /// Usual first parameter offset (EIATTR_PARAM_CBANK wins when present).
    pub param_base: u32,
}

/// Layout for sm_7x/sm_8x (params at 0x160).
pub const CBANK0_SM8X: Cbank0Layout = Cbank0Layout {
    block_dim: 0x00,
    grid_dim: 0x0C,
    shared_window: 0x18,
    local_window: 0x20,
    stack_top: 0x28,
    dyn_smem: Some(0x2C),
    sm_count: 0x10C,
    reserved_smem_base: 0x114,
    sm90_cluster: false,
    mem_desc: None,
    reserved_end: 0x118,
    param_base: 0x160,
};

/// Layout for sm_90 (params at 0x210).
pub const CBANK0_SM90: Cbank0Layout = Cbank0Layout {
    block_dim: 0x00,
    grid_dim: 0x0C,
    shared_window: 0x18,
    local_window: 0x20,
    stack_top: 0x28,
    dyn_smem: Some(0x2C),
    sm_count: 0x10C,
    reserved_smem_base: 0x114,
    sm90_cluster: true,
    mem_desc: Some(0x208),
    reserved_end: 0x210,
    param_base: 0x210,
};

/// Layout for sm_100 (params at 0x380). Only dims, windows, stack, SM count, reserved-smem base and
/// the descriptor slot are known; the dynamic-smem slot is not written (unverified beyond SASS).
pub const CBANK0_SM100: Cbank0Layout = Cbank0Layout {
    block_dim: 0x360,
    grid_dim: 0x370,
    shared_window: 0x2F0,
    local_window: 0x2F8,
    stack_top: 0x37C,
    dyn_smem: None,
    sm_count: 0x2D0,
    reserved_smem_base: 0x16C,
    sm90_cluster: false,
    mem_desc: Some(0x358),
    reserved_end: 0x380,
    param_base: 0x380,
};

/// Address-field widths and optional features of the host, compute and copy classes, used by
/// [`crate::hw::pushbuf::PushBuf`] to reject values that would be silently truncated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PbCaps {
    /// Compute class that [`crate::hw::pushbuf::PushBuf::compute_init`] binds (0 = unknown).
    pub compute_class: u32,
    /// Host SEM_ADDR_HI width + 32 (c56f/c76f: 40, c86f: 57).
    pub host_sem_addr_bits: u32,
    /// Compute address-upper width + 32 for SET_SHADER_LOCAL_MEMORY_A and the I2M
    /// OFFSET_OUT_UPPER (c7c0: 49, cbc0: 57).
    pub local_mem_addr_bits: u32,
    /// Compute window A width + 32 (16:0 on every class: 49).
    pub window_addr_bits: u32,
    /// Required alignment of the shared window (16 MiB pre-Hopper, 4 GiB Hopper+).
    pub shared_window_align: u64,
    /// Copy OFFSET_*_UPPER / SET_SEMAPHORE_A width + 32 (c6b5/c7b5: 49, c8b5+: 57).
    pub ce_addr_bits: u32,
    /// The copy class has SET_SEMAPHORE_PAYLOAD_UPPER and LAUNCH_DMA bit 27 (c7b5 and later).
    pub ce_sem_payload64: bool,
    /// The compute class has SET_TEXTURE_HEADER_VERSION and the TEXHEAD_V2 layouts (cbc0 and
    /// later), which the library uses there.
    pub tex_header_v2: bool,
}

impl PbCaps {
    /// The widest limits of any supported class (57-bit addresses, 64-bit CE payloads). Use
    /// [`ArchInfo::pb_caps`] for the real limits of a chip.
    pub const WIDEST: PbCaps = PbCaps {
        compute_class: 0,
        host_sem_addr_bits: 57,
        local_mem_addr_bits: 57,
        window_addr_bits: 49,
        shared_window_align: 1 << 24,
        ce_addr_bits: 57,
        ce_sem_payload64: true,
        tex_header_v2: true,
    };
}

/// One GPU architecture.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArchInfo {
    /// Chip family name ("ga10b", "gh100", ...).
    pub name: &'static str,
    /// SM major version (8, 9, 10, 12).
    pub sm_major: u32,
    /// SM minor version of the family's reference chip.
    pub sm_minor: u32,
    /// QMD SASS_VERSION value, `(major << 4) | minor` (0x87 Orin).
    pub sass_version: u8,
    /// Compute class (e.g. 0xc7c0 AMPERE_COMPUTE_B).
    pub compute_class: u32,
    /// Copy class (e.g. 0xc7b5 AMPERE_DMA_COPY_B).
    pub copy_class: u32,
    /// GPFIFO (host) class (e.g. 0xc76f AMPERE_CHANNEL_GPFIFO_B).
    pub gpfifo_class: u32,
    /// Usermode class that exposes the doorbell (e.g. 0xc561; nvgpu maps it without a class).
    pub usermode_class: u32,
    /// QMD layout.
    pub qmd_version: QmdVersion,
    /// GPU virtual address width in bits.
    pub va_bits: u32,
    /// Shared-memory window base (must be reserved in the VA allocator).
    pub shared_window_base: u64,
    /// Bytes to reserve at the shared window.
    pub shared_window_size: u64,
    /// Local-memory window base (must be reserved in the VA allocator).
    pub local_window_base: u64,
    /// Bytes to reserve at the local window.
    pub local_window_size: u64,
    /// Constant bank 0 layout.
    pub cbank0: Cbank0Layout,
    /// Legal per-SM shared-memory carveouts in KiB, ascending.
    pub smem_carveouts_kib: &'static [u32],
    /// Carveout (KiB) used as MAX_SM_CONFIG when the kernel needs less (tinygrad: 100 KiB).
    pub smem_default_max_kib: u32,
    /// Warps per SM (for local-memory sizing; query the driver when it can tell).
    pub max_warps_per_sm: u32,
    /// SMs per TPC.
    pub sms_per_tpc: u32,
    /// Pushbuffer field widths for these classes.
    pub pb_caps: PbCaps,
}

const CARVEOUT_SM80: &[u32] = &[0, 8, 16, 32, 64, 100, 132, 164];
const CARVEOUT_SM86: &[u32] = &[0, 8, 16, 32, 64, 100];
const CARVEOUT_SM90: &[u32] = &[0, 8, 16, 32, 64, 100, 132, 164, 196, 228];

const CAPS_AMPERE: PbCaps = PbCaps {
    compute_class: 0xC7C0,
    host_sem_addr_bits: 40,
    local_mem_addr_bits: 49,
    window_addr_bits: 49,
    shared_window_align: 1 << 24,
    ce_addr_bits: 49,
    ce_sem_payload64: true,
    tex_header_v2: false,
};
const CAPS_GA100: PbCaps = PbCaps {
    compute_class: 0xC6C0,
    ce_sem_payload64: false,
    ..CAPS_AMPERE
};
const CAPS_HOPPER: PbCaps = PbCaps {
    compute_class: 0xCBC0,
    host_sem_addr_bits: 57,
    local_mem_addr_bits: 57,
    window_addr_bits: 49,
    shared_window_align: 1 << 32,
    ce_addr_bits: 57,
    ce_sem_payload64: true,
    tex_header_v2: true,
};

/// Desktop shared window (tinygrad; also used for Hopper+, 4 GiB aligned).
pub const DESKTOP_SHARED_WINDOW: u64 = 0x7294_0000_0000;
/// Desktop local window (tinygrad).
pub const DESKTOP_LOCAL_WINDOW: u64 = 0x7293_0000_0000;
const GIB: u64 = 1 << 30;

/// Jetson Orin (ga10b, sm_87): the primary target. Windows as in the Orin seeds, each reserved
/// with 1 GiB of NVGPU_AS_IOCTL_ALLOC_SPACE.
pub static GA10B: ArchInfo = ArchInfo {
    name: "ga10b",
    sm_major: 8,
    sm_minor: 7,
    sass_version: 0x87,
    compute_class: 0xC7C0,
    copy_class: 0xC7B5,
    gpfifo_class: 0xC76F,
    usermode_class: 0xC561,
    qmd_version: QmdVersion::V03,
    va_bits: 40,
    shared_window_base: 0xFE_0000_0000,
    shared_window_size: GIB,
    local_window_base: 0xFD_0000_0000,
    local_window_size: GIB,
    cbank0: CBANK0_SM8X,
    smem_carveouts_kib: CARVEOUT_SM80,
    smem_default_max_kib: 100,
    max_warps_per_sm: 48,
    sms_per_tpc: 2,
    pb_caps: CAPS_AMPERE,
};

/// A100 (GA100, sm_80).
pub static GA100: ArchInfo = ArchInfo {
    name: "ga100",
    sm_major: 8,
    sm_minor: 0,
    sass_version: 0x80,
    compute_class: 0xC6C0,
    copy_class: 0xC6B5,
    gpfifo_class: 0xC56F,
    usermode_class: 0xC561,
    qmd_version: QmdVersion::V03,
    va_bits: 49,
    shared_window_base: DESKTOP_SHARED_WINDOW,
    shared_window_size: GIB,
    local_window_base: DESKTOP_LOCAL_WINDOW,
    local_window_size: GIB,
    cbank0: CBANK0_SM8X,
    smem_carveouts_kib: CARVEOUT_SM80,
    smem_default_max_kib: 100,
    max_warps_per_sm: 64,
    sms_per_tpc: 2,
    pb_caps: CAPS_GA100,
};

/// Desktop Ampere (GA10x, sm_86).
pub static GA10X: ArchInfo = ArchInfo {
    name: "ga10x",
    sm_major: 8,
    sm_minor: 6,
    sass_version: 0x86,
    compute_class: 0xC7C0,
    copy_class: 0xC7B5,
    gpfifo_class: 0xC56F,
    usermode_class: 0xC561,
    qmd_version: QmdVersion::V03,
    va_bits: 49,
    shared_window_base: DESKTOP_SHARED_WINDOW,
    shared_window_size: GIB,
    local_window_base: DESKTOP_LOCAL_WINDOW,
    local_window_size: GIB,
    cbank0: CBANK0_SM8X,
    smem_carveouts_kib: CARVEOUT_SM86,
    smem_default_max_kib: 100,
    max_warps_per_sm: 48,
    sms_per_tpc: 2,
    pb_caps: CAPS_AMPERE,
};

/// Ada (AD10x, sm_89).
pub static AD10X: ArchInfo = ArchInfo {
    name: "ad10x",
    sm_major: 8,
    sm_minor: 9,
    sass_version: 0x89,
    compute_class: 0xC9C0,
    copy_class: 0xC7B5,
    gpfifo_class: 0xC56F,
    usermode_class: 0xC561,
    qmd_version: QmdVersion::V03,
    va_bits: 49,
    shared_window_base: DESKTOP_SHARED_WINDOW,
    shared_window_size: GIB,
    local_window_base: DESKTOP_LOCAL_WINDOW,
    local_window_size: GIB,
    cbank0: CBANK0_SM8X,
    smem_carveouts_kib: CARVEOUT_SM86,
    smem_default_max_kib: 100,
    max_warps_per_sm: 48,
    sms_per_tpc: 2,
    pb_caps: PbCaps {
        compute_class: 0xC9C0,
        ..CAPS_AMPERE
    },
};

/// Hopper (GH100: H100/H200, sm_90). QMD V04 with QMD_TYPE GRID_CTA ([H200-verified]).
pub static GH100: ArchInfo = ArchInfo {
    name: "gh100",
    sm_major: 9,
    sm_minor: 0,
    sass_version: 0x90,
    compute_class: 0xCBC0,
    copy_class: 0xC8B5,
    gpfifo_class: 0xC86F,
    usermode_class: 0xC661,
    qmd_version: QmdVersion::V04,
    va_bits: 57,
    shared_window_base: DESKTOP_SHARED_WINDOW,
    shared_window_size: 4 * GIB,
    local_window_base: DESKTOP_LOCAL_WINDOW,
    local_window_size: GIB,
    cbank0: CBANK0_SM90,
    smem_carveouts_kib: CARVEOUT_SM90,
    smem_default_max_kib: 100,
    max_warps_per_sm: 64,
    sms_per_tpc: 2,
    pb_caps: CAPS_HOPPER,
};

/// Blackwell datacenter / Thor (GB100, GB10B, sm_100). QMD V05 — unverified.
pub static GB100: ArchInfo = ArchInfo {
    name: "gb100",
    sm_major: 10,
    sm_minor: 0,
    sass_version: 0xA0,
    compute_class: 0xCDC0,
    copy_class: 0xC9B5,
    gpfifo_class: 0xC96F,
    usermode_class: 0xC661,
    qmd_version: QmdVersion::V05,
    va_bits: 57,
    shared_window_base: DESKTOP_SHARED_WINDOW,
    shared_window_size: 4 * GIB,
    local_window_base: DESKTOP_LOCAL_WINDOW,
    local_window_size: GIB,
    cbank0: CBANK0_SM100,
    smem_carveouts_kib: CARVEOUT_SM90,
    smem_default_max_kib: 100,
    max_warps_per_sm: 64,
    sms_per_tpc: 2,
    pb_caps: PbCaps {
        compute_class: 0xCDC0,
        ..CAPS_HOPPER
    },
};

/// Blackwell consumer (GB20x, sm_120). QMD V05; cbank0 layout assumed equal to sm_100 — unverified.
pub static GB20X: ArchInfo = ArchInfo {
    name: "gb20x",
    sm_major: 12,
    sm_minor: 0,
    sass_version: 0xC0,
    compute_class: 0xCEC0,
    copy_class: 0xCAB5,
    gpfifo_class: 0xC96F,
    usermode_class: 0xC761,
    qmd_version: QmdVersion::V05,
    va_bits: 57,
    shared_window_base: DESKTOP_SHARED_WINDOW,
    shared_window_size: 4 * GIB,
    local_window_base: DESKTOP_LOCAL_WINDOW,
    local_window_size: GIB,
    cbank0: CBANK0_SM100,
    smem_carveouts_kib: CARVEOUT_SM86,
    smem_default_max_kib: 100,
    max_warps_per_sm: 48,
    sms_per_tpc: 2,
    pb_caps: PbCaps {
        compute_class: 0xCEC0,
        ..CAPS_HOPPER
    },
};

/// Every known architecture, ga10b (Orin) first.
pub static ARCHS: [&ArchInfo; 7] = [&GA10B, &GA100, &GA10X, &AD10X, &GH100, &GB100, &GB20X];

/// The architecture whose compute class is `class`. 0xc7c0 maps to ga10b (Orin); the desktop GA10x
/// entry shares that class and must be picked by name or VA width by an RM backend
/// ([`arch_by_name`]).
pub fn arch_for_compute_class(class: u32) -> Option<&'static ArchInfo> {
    ARCHS.iter().copied().find(|a| a.compute_class == class)
}

/// The architecture called `name` ("ga10b", "ga100", "ga10x", "ad10x", "gh100", "gb100", "gb20x").
pub fn arch_by_name(name: &str) -> Option<&'static ArchInfo> {
    ARCHS.iter().copied().find(|a| a.name == name)
}

/// The architecture for a device: like [`arch_for_compute_class`], but 0xc7c0 maps to ga10b only
/// when `integrated` (Tegra/nvgpu) and to the desktop GA10x entry otherwise.
pub fn arch_for_device(compute_class: u32, integrated: bool) -> Option<&'static ArchInfo> {
    if compute_class == GA10X.compute_class && !integrated {
        return Some(&GA10X);
    }
    arch_for_compute_class(compute_class)
}

impl ArchInfo {
    /// Largest legal carveout in KiB.
    pub fn max_carveout_kib(&self) -> u32 {
        self.smem_carveouts_kib.last().copied().unwrap_or(0)
    }
}
