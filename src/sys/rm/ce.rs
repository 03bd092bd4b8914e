//! The copy-engine controls (`ctrl2080ce.h`): caps and PCE masks of a logical copy engine.

/// Subdevice: the physical copy engines (PCE mask) behind one logical copy engine.
pub const NV2080_CTRL_CMD_CE_GET_CE_PCE_MASK: u32 = 0x2080_2A02;
/// Subdevice: capability bytes of one copy engine.
pub const NV2080_CTRL_CMD_CE_GET_CAPS_V2: u32 = 0x2080_2A03;
/// Size of a CE caps table, bytes.
pub const NV2080_CTRL_CE_CAPS_TBL_SIZE: usize = 2;
/// CE caps byte 0: the CE is synchronous with GR (a GRCE).
pub const NV2080_CTRL_CE_CAPS_CE_GRCE: u8 = 0x01;
/// CE caps byte 0: the CE shares physical CEs with another CE.
pub const NV2080_CTRL_CE_CAPS_CE_SHARED: u8 = 0x02;
/// CE caps byte 0: faster system-memory reads.
pub const NV2080_CTRL_CE_CAPS_CE_SYSMEM_READ: u8 = 0x04;
/// CE caps byte 0: faster system-memory writes.
pub const NV2080_CTRL_CE_CAPS_CE_SYSMEM_WRITE: u8 = 0x08;
/// CE caps byte 0: usable for NVLink peer-to-peer.
pub const NV2080_CTRL_CE_CAPS_CE_NVLINK_P2P: u8 = 0x10;
/// CE caps byte 0: usable for system-memory transfers.
pub const NV2080_CTRL_CE_CAPS_CE_SYSMEM: u8 = 0x20;
/// CE caps byte 0: usable for peer-to-peer transfers.
pub const NV2080_CTRL_CE_CAPS_CE_P2P: u8 = 0x40;

/// `NV2080_CTRL_CMD_CE_GET_CAPS_V2` parameters (8 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct NV2080_CTRL_CE_GET_CAPS_V2_PARAMS {
    pub ceEngineType: u32,
    pub capsTbl: [u8; NV2080_CTRL_CE_CAPS_TBL_SIZE],
    pub _pad: [u8; 2],
}
const _: () = assert!(core::mem::size_of::<NV2080_CTRL_CE_GET_CAPS_V2_PARAMS>() == 8);

/// `NV2080_CTRL_CMD_CE_GET_CE_PCE_MASK` parameters (8 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct NV2080_CTRL_CE_GET_CE_PCE_MASK_PARAMS {
    pub ceEngineType: u32,
    pub pceMask: u32,
}
const _: () = assert!(core::mem::size_of::<NV2080_CTRL_CE_GET_CE_PCE_MASK_PARAMS>() == 8);
