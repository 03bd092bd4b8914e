//! Peer-to-peer capabilities between two GPUs (`ctrl/ctrl0000/ctrl0000system.h`,
//! `ctrl/ctrl2080/ctrl2080gpu.h`) and the UVM peer-access calls (`uvm_ioctl.h`,
//! `nv_uvm_user_types.h`). Sizes are those of x86_64 builds of the 570 to 595 branches.

/// Client: P2P capabilities of a set of GPUs (size-checked; 8348 bytes on 570–595).
pub const NV0000_CTRL_CMD_SYSTEM_GET_P2P_CAPS_V2: u32 = 0x0000_012B;
/// Subdevice: NVSwitch fabric probe state (size-checked; see [`fabric_probe_params_size`]).
pub const NV2080_CTRL_CMD_GET_GPU_FABRIC_PROBE_INFO: u32 = 0x2080_01A3;

/// `NV0000_CTRL_SYSTEM_MAX_ATTACHED_GPUS`.
pub const NV0000_CTRL_SYSTEM_MAX_ATTACHED_GPUS: usize = 32;
/// `NV0000_CTRL_SYSTEM_MAX_ATTACHED_GPUS_SQUARED`.
pub const NV0000_CTRL_SYSTEM_MAX_ATTACHED_GPUS_SQUARED: usize = 1024;
/// `NV0000_CTRL_SYSTEM_GET_P2P_CAPS_INVALID_PEER`: no peer id between the two GPUs.
pub const NV0000_CTRL_SYSTEM_GET_P2P_CAPS_INVALID_PEER: u32 = 0xFFFF_FFFF;
/// `NV0000_CTRL_P2P_CAPS_INDEX_TABLE_SIZE`: entries of `p2pCapsStatus`.
pub const NV0000_CTRL_P2P_CAPS_INDEX_TABLE_SIZE: usize = 9;

/// `NV0000_CTRL_P2P_CAPS_INDEX_*`: the entries of `p2pCapsStatus`.
pub const NV0000_CTRL_P2P_CAPS_INDEX_READ: usize = 0;
pub const NV0000_CTRL_P2P_CAPS_INDEX_WRITE: usize = 1;
pub const NV0000_CTRL_P2P_CAPS_INDEX_NVLINK: usize = 2;
pub const NV0000_CTRL_P2P_CAPS_INDEX_ATOMICS: usize = 3;
pub const NV0000_CTRL_P2P_CAPS_INDEX_PROP: usize = 4;
pub const NV0000_CTRL_P2P_CAPS_INDEX_LOOPBACK: usize = 5;
pub const NV0000_CTRL_P2P_CAPS_INDEX_PCI: usize = 6;
pub const NV0000_CTRL_P2P_CAPS_INDEX_C2C: usize = 7;
pub const NV0000_CTRL_P2P_CAPS_INDEX_PCI_BAR1: usize = 8;
/// The names of the `p2pCapsStatus` entries, in index order (for messages).
pub const NV0000_CTRL_P2P_CAPS_INDEX_NAMES: [&str; NV0000_CTRL_P2P_CAPS_INDEX_TABLE_SIZE] = [
    "READ", "WRITE", "NVLINK", "ATOMICS", "PROP", "LOOPBACK", "PCI", "C2C", "PCI_BAR1",
];

/// `NV0000_CTRL_SYSTEM_GET_P2P_CAPS_*_SUPPORTED` bits of `p2pCaps`.
pub const NV0000_CTRL_SYSTEM_GET_P2P_CAPS_WRITES_SUPPORTED: u32 = 1 << 0;
pub const NV0000_CTRL_SYSTEM_GET_P2P_CAPS_READS_SUPPORTED: u32 = 1 << 1;
pub const NV0000_CTRL_SYSTEM_GET_P2P_CAPS_PROP_SUPPORTED: u32 = 1 << 2;
pub const NV0000_CTRL_SYSTEM_GET_P2P_CAPS_NVLINK_SUPPORTED: u32 = 1 << 3;
pub const NV0000_CTRL_SYSTEM_GET_P2P_CAPS_ATOMICS_SUPPORTED: u32 = 1 << 4;
pub const NV0000_CTRL_SYSTEM_GET_P2P_CAPS_LOOPBACK_SUPPORTED: u32 = 1 << 5;
pub const NV0000_CTRL_SYSTEM_GET_P2P_CAPS_PCI_SUPPORTED: u32 = 1 << 6;
pub const NV0000_CTRL_SYSTEM_GET_P2P_CAPS_INDIRECT_WRITES_SUPPORTED: u32 = 1 << 7;
pub const NV0000_CTRL_SYSTEM_GET_P2P_CAPS_INDIRECT_READS_SUPPORTED: u32 = 1 << 8;
pub const NV0000_CTRL_SYSTEM_GET_P2P_CAPS_INDIRECT_ATOMICS_SUPPORTED: u32 = 1 << 9;
pub const NV0000_CTRL_SYSTEM_GET_P2P_CAPS_INDIRECT_NVLINK_SUPPORTED: u32 = 1 << 10;
pub const NV0000_CTRL_SYSTEM_GET_P2P_CAPS_C2C_SUPPORTED: u32 = 1 << 12;
pub const NV0000_CTRL_SYSTEM_GET_P2P_CAPS_PCI_BAR1_SUPPORTED: u32 = 1 << 13;
/// The `p2pCaps` bits and their names (for messages), low bit first.
pub const NV0000_CTRL_SYSTEM_GET_P2P_CAPS_NAMES: [(u32, &str); 13] = [
    (NV0000_CTRL_SYSTEM_GET_P2P_CAPS_WRITES_SUPPORTED, "WRITES"),
    (NV0000_CTRL_SYSTEM_GET_P2P_CAPS_READS_SUPPORTED, "READS"),
    (NV0000_CTRL_SYSTEM_GET_P2P_CAPS_PROP_SUPPORTED, "PROP"),
    (NV0000_CTRL_SYSTEM_GET_P2P_CAPS_NVLINK_SUPPORTED, "NVLINK"),
    (NV0000_CTRL_SYSTEM_GET_P2P_CAPS_ATOMICS_SUPPORTED, "ATOMICS"),
    (
        NV0000_CTRL_SYSTEM_GET_P2P_CAPS_LOOPBACK_SUPPORTED,
        "LOOPBACK",
    ),
    (NV0000_CTRL_SYSTEM_GET_P2P_CAPS_PCI_SUPPORTED, "PCI"),
    (
        NV0000_CTRL_SYSTEM_GET_P2P_CAPS_INDIRECT_WRITES_SUPPORTED,
        "INDIRECT_WRITES",
    ),
    (
        NV0000_CTRL_SYSTEM_GET_P2P_CAPS_INDIRECT_READS_SUPPORTED,
        "INDIRECT_READS",
    ),
    (
        NV0000_CTRL_SYSTEM_GET_P2P_CAPS_INDIRECT_ATOMICS_SUPPORTED,
        "INDIRECT_ATOMICS",
    ),
    (
        NV0000_CTRL_SYSTEM_GET_P2P_CAPS_INDIRECT_NVLINK_SUPPORTED,
        "INDIRECT_NVLINK",
    ),
    (NV0000_CTRL_SYSTEM_GET_P2P_CAPS_C2C_SUPPORTED, "C2C"),
    (
        NV0000_CTRL_SYSTEM_GET_P2P_CAPS_PCI_BAR1_SUPPORTED,
        "PCI_BAR1",
    ),
];

/// `NV0000_P2P_CAPS_STATUS_*`: the values of `p2pCapsStatus` entries.
pub const NV0000_P2P_CAPS_STATUS_OK: u8 = 0x00;
pub const NV0000_P2P_CAPS_STATUS_CHIPSET_NOT_SUPPORTED: u8 = 0x01;
pub const NV0000_P2P_CAPS_STATUS_GPU_NOT_SUPPORTED: u8 = 0x02;
pub const NV0000_P2P_CAPS_STATUS_IOH_TOPOLOGY_NOT_SUPPORTED: u8 = 0x03;
pub const NV0000_P2P_CAPS_STATUS_DISABLED_BY_REGKEY: u8 = 0x04;
pub const NV0000_P2P_CAPS_STATUS_NOT_SUPPORTED: u8 = 0x05;

/// The name of a `p2pCapsStatus` value, for messages.
pub fn p2p_caps_status_name(status: u8) -> &'static str {
    match status {
        NV0000_P2P_CAPS_STATUS_OK => "OK",
        NV0000_P2P_CAPS_STATUS_CHIPSET_NOT_SUPPORTED => "CHIPSET_NOT_SUPPORTED",
        NV0000_P2P_CAPS_STATUS_GPU_NOT_SUPPORTED => "GPU_NOT_SUPPORTED",
        NV0000_P2P_CAPS_STATUS_IOH_TOPOLOGY_NOT_SUPPORTED => "IOH_TOPOLOGY_NOT_SUPPORTED",
        NV0000_P2P_CAPS_STATUS_DISABLED_BY_REGKEY => "DISABLED_BY_REGKEY",
        NV0000_P2P_CAPS_STATUS_NOT_SUPPORTED => "NOT_SUPPORTED",
        _ => "?",
    }
}

/// `NV0000_CTRL_SYSTEM_GET_P2P_CAPS_V2_PARAMS` (8348 bytes, 550–595). Too large for the stack
/// frames we like: box it.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct NV0000_CTRL_SYSTEM_GET_P2P_CAPS_V2_PARAMS {
    /// In: the GPU ids (card info `gpu_id`) of the set.
    pub gpuIds: [u32; NV0000_CTRL_SYSTEM_MAX_ATTACHED_GPUS],
    /// In: how many of `gpuIds` are valid (2 for a pair).
    pub gpuCount: u32,
    /// Out: `NV0000_CTRL_SYSTEM_GET_P2P_CAPS_*` bits.
    pub p2pCaps: u32,
    /// Out: mask of the logical copy engines best for peer reads (NVLink only).
    pub p2pOptimalReadCEs: u32,
    /// Out: mask of the logical copy engines best for peer writes (NVLink only).
    pub p2pOptimalWriteCEs: u32,
    /// Out: `NV0000_P2P_CAPS_STATUS_*` per `NV0000_CTRL_P2P_CAPS_INDEX_*`.
    pub p2pCapsStatus: [u8; NV0000_CTRL_P2P_CAPS_INDEX_TABLE_SIZE],
    pub _pad: [u8; 3],
    /// Out: `[x * gpuCount + y]` = the peer id GPU x uses for GPU y.
    pub busPeerIds: [u32; NV0000_CTRL_SYSTEM_MAX_ATTACHED_GPUS_SQUARED],
    pub busEgmPeerIds: [u32; NV0000_CTRL_SYSTEM_MAX_ATTACHED_GPUS_SQUARED],
}
const _: () = assert!(core::mem::size_of::<NV0000_CTRL_SYSTEM_GET_P2P_CAPS_V2_PARAMS>() == 8348);
impl Default for NV0000_CTRL_SYSTEM_GET_P2P_CAPS_V2_PARAMS {
    fn default() -> Self {
        bytemuck::Zeroable::zeroed()
    }
}

/// `NV2080_CTRL_GPU_FABRIC_PROBE_STATE_*`.
pub const NV2080_CTRL_GPU_FABRIC_PROBE_STATE_UNSUPPORTED: u8 = 0;
pub const NV2080_CTRL_GPU_FABRIC_PROBE_STATE_NOT_STARTED: u8 = 1;
pub const NV2080_CTRL_GPU_FABRIC_PROBE_STATE_IN_PROGRESS: u8 = 2;
pub const NV2080_CTRL_GPU_FABRIC_PROBE_STATE_COMPLETE: u8 = 3;
/// `NV2080_CTRL_GPU_FABRIC_HEALTH_SUMMARY_*`.
pub const NV2080_CTRL_GPU_FABRIC_HEALTH_SUMMARY_NOT_SUPPORTED: u8 = 0;
pub const NV2080_CTRL_GPU_FABRIC_HEALTH_SUMMARY_HEALTHY: u8 = 1;
pub const NV2080_CTRL_GPU_FABRIC_HEALTH_SUMMARY_UNHEALTHY: u8 = 2;
pub const NV2080_CTRL_GPU_FABRIC_HEALTH_SUMMARY_LIMITED_CAPACITY: u8 = 3;

/// `NV2080_CTRL_CMD_GET_GPU_FABRIC_PROBE_INFO_PARAMS`, 580+ layout (56 bytes). The 570 and 575
/// branches lack `fabricHealthSummary` (48 bytes): send [`fabric_probe_params_size`].
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct NV2080_CTRL_CMD_GET_GPU_FABRIC_PROBE_INFO_PARAMS {
    pub state: u8,
    pub _pad: [u8; 3],
    /// NV_STATUS of the probe (meaningful when `state` is COMPLETE).
    pub status: u32,
    pub clusterUuid: [u8; 16],
    pub fabricPartitionId: u16,
    pub _pad2: [u8; 6],
    pub fabricCaps: u64,
    pub fabricCliqueId: u32,
    pub fabricHealthMask: u32,
    /// 580+ only.
    pub fabricHealthSummary: u8,
    pub _pad3: [u8; 7],
}
const _: () =
    assert!(core::mem::size_of::<NV2080_CTRL_CMD_GET_GPU_FABRIC_PROBE_INFO_PARAMS>() == 56);

/// The size the loaded branch checks for `NV2080_CTRL_CMD_GET_GPU_FABRIC_PROBE_INFO`: 48 bytes
/// before 580 (no `fabricHealthSummary`), 56 from 580 on.
pub fn fabric_probe_params_size(major: u32) -> usize {
    if major < 580 {
        48
    } else {
        56
    }
}

/// Disable peer access between two GPUs (`UVM_DISABLE_PEER_ACCESS`).
pub const UVM_DISABLE_PEER_ACCESS: u64 = 30;

/// `UVM_DISABLE_PEER_ACCESS` parameters (36 bytes; the layout of
/// [`crate::sys::rm::UVM_ENABLE_PEER_ACCESS_PARAMS`]).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct UVM_DISABLE_PEER_ACCESS_PARAMS {
    pub gpuUuidA: crate::sys::rm::NvProcessorUuid,
    pub gpuUuidB: crate::sys::rm::NvProcessorUuid,
    pub rmStatus: u32,
}
const _: () = assert!(core::mem::size_of::<UVM_DISABLE_PEER_ACCESS_PARAMS>() == 36);

/// `UvmGpuMappingTypeReadWrite`: read-write without the PTE's atomic bit (peers that do not
/// report ATOMICS).
pub const UvmGpuMappingTypeReadWrite: u32 = 2;
/// `UvmGpuMappingTypeReadOnly`.
pub const UvmGpuMappingTypeReadOnly: u32 = 3;
