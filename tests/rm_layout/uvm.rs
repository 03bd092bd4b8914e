//! UVM ioctl layouts and numbers, peer access (P2P controls and the UVM peer calls), and memory
//! shared through export fds (§3, §4.1).

use std::mem::{offset_of, size_of};
use tegragpu::sys::rm::*;

#[test]
fn uvm_layouts_and_numbers() {
    // §3 table.
    assert_eq!(UVM_INITIALIZE, 0x3000_0001);
    assert_eq!(UVM_MM_INITIALIZE, 75);
    assert_eq!(UVM_REGISTER_GPU, 37);
    assert_eq!(UVM_REGISTER_GPU_VASPACE, 25);
    assert_eq!(UVM_REGISTER_CHANNEL, 27);
    assert_eq!(UVM_CREATE_EXTERNAL_RANGE, 73);
    assert_eq!(UVM_MAP_EXTERNAL_ALLOCATION, 33);
    assert_eq!(UVM_UNMAP_EXTERNAL, 66);
    assert_eq!(UVM_FREE, 34);
    assert_eq!(UVM_UNREGISTER_CHANNEL, 28);
    assert_eq!(UVM_UNREGISTER_GPU_VASPACE, 26);
    assert_eq!(UVM_UNREGISTER_GPU, 38);
    assert_eq!(UVM_ENABLE_PEER_ACCESS, 29);

    assert_eq!(size_of::<UVM_INITIALIZE_PARAMS>(), 16);
    assert_eq!(offset_of!(UVM_INITIALIZE_PARAMS, rmStatus), 8);
    assert_eq!(size_of::<UVM_MM_INITIALIZE_PARAMS>(), 8);
    assert_eq!(offset_of!(UVM_MM_INITIALIZE_PARAMS, rmStatus), 4);

    assert_eq!(size_of::<UVM_REGISTER_GPU_PARAMS>(), 40);
    assert_eq!(offset_of!(UVM_REGISTER_GPU_PARAMS, numaEnabled), 16);
    assert_eq!(offset_of!(UVM_REGISTER_GPU_PARAMS, numaNodeId), 20);
    assert_eq!(offset_of!(UVM_REGISTER_GPU_PARAMS, rmCtrlFd), 24);
    assert_eq!(offset_of!(UVM_REGISTER_GPU_PARAMS, hClient), 28);
    assert_eq!(offset_of!(UVM_REGISTER_GPU_PARAMS, hSmcPartRef), 32);
    assert_eq!(offset_of!(UVM_REGISTER_GPU_PARAMS, rmStatus), 36);

    assert_eq!(size_of::<UVM_REGISTER_GPU_VASPACE_PARAMS>(), 32);
    assert_eq!(offset_of!(UVM_REGISTER_GPU_VASPACE_PARAMS, rmCtrlFd), 16);
    assert_eq!(offset_of!(UVM_REGISTER_GPU_VASPACE_PARAMS, hClient), 20);
    assert_eq!(offset_of!(UVM_REGISTER_GPU_VASPACE_PARAMS, hVaSpace), 24);
    assert_eq!(offset_of!(UVM_REGISTER_GPU_VASPACE_PARAMS, rmStatus), 28);

    assert_eq!(size_of::<UVM_REGISTER_CHANNEL_PARAMS>(), 56);
    assert_eq!(offset_of!(UVM_REGISTER_CHANNEL_PARAMS, rmCtrlFd), 16);
    assert_eq!(offset_of!(UVM_REGISTER_CHANNEL_PARAMS, hClient), 20);
    assert_eq!(offset_of!(UVM_REGISTER_CHANNEL_PARAMS, hChannel), 24);
    assert_eq!(offset_of!(UVM_REGISTER_CHANNEL_PARAMS, base), 32);
    assert_eq!(offset_of!(UVM_REGISTER_CHANNEL_PARAMS, length), 40);
    assert_eq!(offset_of!(UVM_REGISTER_CHANNEL_PARAMS, rmStatus), 48);

    assert_eq!(size_of::<UVM_CREATE_EXTERNAL_RANGE_PARAMS>(), 24);
    assert_eq!(offset_of!(UVM_CREATE_EXTERNAL_RANGE_PARAMS, length), 8);
    assert_eq!(offset_of!(UVM_CREATE_EXTERNAL_RANGE_PARAMS, rmStatus), 16);

    assert_eq!(size_of::<UvmGpuMappingAttributes>(), 36);
    assert_eq!(size_of::<UVM_MAP_EXTERNAL_ALLOCATION_PARAMS>(), 9264);
    assert_eq!(offset_of!(UVM_MAP_EXTERNAL_ALLOCATION_PARAMS, offset), 16);
    assert_eq!(
        offset_of!(UVM_MAP_EXTERNAL_ALLOCATION_PARAMS, perGpuAttributes),
        24
    );
    assert_eq!(
        offset_of!(UVM_MAP_EXTERNAL_ALLOCATION_PARAMS, gpuAttributesCount),
        9240
    );
    assert_eq!(
        offset_of!(UVM_MAP_EXTERNAL_ALLOCATION_PARAMS, rmCtrlFd),
        9248
    );
    assert_eq!(
        offset_of!(UVM_MAP_EXTERNAL_ALLOCATION_PARAMS, hClient),
        9252
    );
    assert_eq!(
        offset_of!(UVM_MAP_EXTERNAL_ALLOCATION_PARAMS, hMemory),
        9256
    );
    assert_eq!(
        offset_of!(UVM_MAP_EXTERNAL_ALLOCATION_PARAMS, rmStatus),
        9260
    );
    assert_eq!(UvmGpuMappingTypeReadWriteAtomic, 1);

    assert_eq!(size_of::<UVM_UNMAP_EXTERNAL_PARAMS>(), 40);
    assert_eq!(size_of::<UVM_FREE_PARAMS>(), 24);
    assert_eq!(offset_of!(UVM_FREE_PARAMS, rmStatus), 16);
    assert_eq!(size_of::<UVM_FREE_PARAMS_V590>(), 16);
    assert_eq!(offset_of!(UVM_FREE_PARAMS_V590, rmStatus), 8);
    assert_eq!(size_of::<UVM_UNREGISTER_CHANNEL_PARAMS>(), 28);
    assert_eq!(size_of::<UVM_UNREGISTER_CHANNEL_PARAMS_V590>(), 12);
    assert_eq!(size_of::<UVM_UNREGISTER_GPU_PARAMS>(), 20);
    assert_eq!(size_of::<UVM_UNREGISTER_GPU_VASPACE_PARAMS>(), 20);
    assert_eq!(size_of::<UVM_ENABLE_PEER_ACCESS_PARAMS>(), 36);
}

/// Peer access: the P2P capability controls (ctrl0000system.h, ctrl2080gpu.h) and the UVM peer
/// calls (uvm_ioctl.h, nv_uvm_user_types.h), as NVIDIA's SDK headers of 570–595 give them.
#[test]
fn p2p_layouts_and_numbers() {
    assert_eq!(NV0000_CTRL_CMD_SYSTEM_GET_P2P_CAPS_V2, 0x12B);
    assert_eq!(size_of::<NV0000_CTRL_SYSTEM_GET_P2P_CAPS_V2_PARAMS>(), 8348);
    assert_eq!(
        offset_of!(NV0000_CTRL_SYSTEM_GET_P2P_CAPS_V2_PARAMS, gpuIds),
        0
    );
    assert_eq!(
        offset_of!(NV0000_CTRL_SYSTEM_GET_P2P_CAPS_V2_PARAMS, gpuCount),
        128
    );
    assert_eq!(
        offset_of!(NV0000_CTRL_SYSTEM_GET_P2P_CAPS_V2_PARAMS, p2pCaps),
        132
    );
    assert_eq!(
        offset_of!(NV0000_CTRL_SYSTEM_GET_P2P_CAPS_V2_PARAMS, p2pOptimalReadCEs),
        136
    );
    assert_eq!(
        offset_of!(
            NV0000_CTRL_SYSTEM_GET_P2P_CAPS_V2_PARAMS,
            p2pOptimalWriteCEs
        ),
        140
    );
    assert_eq!(
        offset_of!(NV0000_CTRL_SYSTEM_GET_P2P_CAPS_V2_PARAMS, p2pCapsStatus),
        144
    );
    assert_eq!(
        offset_of!(NV0000_CTRL_SYSTEM_GET_P2P_CAPS_V2_PARAMS, busPeerIds),
        156
    );
    assert_eq!(
        offset_of!(NV0000_CTRL_SYSTEM_GET_P2P_CAPS_V2_PARAMS, busEgmPeerIds),
        4252
    );
    // p2pCaps bits and p2pCapsStatus indexes / values.
    assert_eq!(NV0000_CTRL_SYSTEM_GET_P2P_CAPS_WRITES_SUPPORTED, 1);
    assert_eq!(NV0000_CTRL_SYSTEM_GET_P2P_CAPS_READS_SUPPORTED, 2);
    assert_eq!(NV0000_CTRL_SYSTEM_GET_P2P_CAPS_NVLINK_SUPPORTED, 8);
    assert_eq!(NV0000_CTRL_SYSTEM_GET_P2P_CAPS_ATOMICS_SUPPORTED, 16);
    assert_eq!(NV0000_CTRL_SYSTEM_GET_P2P_CAPS_PCI_SUPPORTED, 64);
    assert_eq!(NV0000_CTRL_SYSTEM_GET_P2P_CAPS_C2C_SUPPORTED, 1 << 12);
    assert_eq!(NV0000_CTRL_SYSTEM_GET_P2P_CAPS_PCI_BAR1_SUPPORTED, 1 << 13);
    assert_eq!(
        (
            NV0000_CTRL_P2P_CAPS_INDEX_READ,
            NV0000_CTRL_P2P_CAPS_INDEX_WRITE,
            NV0000_CTRL_P2P_CAPS_INDEX_NVLINK,
            NV0000_CTRL_P2P_CAPS_INDEX_PCI,
            NV0000_CTRL_P2P_CAPS_INDEX_PCI_BAR1,
            NV0000_CTRL_P2P_CAPS_INDEX_TABLE_SIZE
        ),
        (0, 1, 2, 6, 8, 9)
    );
    assert_eq!(NV0000_P2P_CAPS_STATUS_IOH_TOPOLOGY_NOT_SUPPORTED, 3);
    assert_eq!(NV0000_P2P_CAPS_STATUS_NOT_SUPPORTED, 5);
    assert_eq!(NV0000_CTRL_SYSTEM_GET_P2P_CAPS_INVALID_PEER, 0xFFFF_FFFF);

    assert_eq!(NV2080_CTRL_CMD_GET_GPU_FABRIC_PROBE_INFO, 0x2080_01A3);
    assert_eq!(
        size_of::<NV2080_CTRL_CMD_GET_GPU_FABRIC_PROBE_INFO_PARAMS>(),
        56
    );
    assert_eq!(
        offset_of!(NV2080_CTRL_CMD_GET_GPU_FABRIC_PROBE_INFO_PARAMS, status),
        4
    );
    assert_eq!(
        offset_of!(
            NV2080_CTRL_CMD_GET_GPU_FABRIC_PROBE_INFO_PARAMS,
            clusterUuid
        ),
        8
    );
    assert_eq!(
        offset_of!(
            NV2080_CTRL_CMD_GET_GPU_FABRIC_PROBE_INFO_PARAMS,
            fabricPartitionId
        ),
        24
    );
    assert_eq!(
        offset_of!(NV2080_CTRL_CMD_GET_GPU_FABRIC_PROBE_INFO_PARAMS, fabricCaps),
        32
    );
    assert_eq!(
        offset_of!(
            NV2080_CTRL_CMD_GET_GPU_FABRIC_PROBE_INFO_PARAMS,
            fabricCliqueId
        ),
        40
    );
    assert_eq!(
        offset_of!(
            NV2080_CTRL_CMD_GET_GPU_FABRIC_PROBE_INFO_PARAMS,
            fabricHealthMask
        ),
        44
    );
    assert_eq!(
        offset_of!(
            NV2080_CTRL_CMD_GET_GPU_FABRIC_PROBE_INFO_PARAMS,
            fabricHealthSummary
        ),
        48
    );
    // 570 and 575 end after fabricHealthMask.
    assert_eq!(fabric_probe_params_size(570), 48);
    assert_eq!(fabric_probe_params_size(575), 48);
    assert_eq!(fabric_probe_params_size(580), 56);
    assert_eq!(fabric_probe_params_size(595), 56);

    assert_eq!(UVM_DISABLE_PEER_ACCESS, 30);
    assert_eq!(size_of::<UVM_DISABLE_PEER_ACCESS_PARAMS>(), 36);
    assert_eq!(offset_of!(UVM_DISABLE_PEER_ACCESS_PARAMS, gpuUuidB), 16);
    assert_eq!(offset_of!(UVM_DISABLE_PEER_ACCESS_PARAMS, rmStatus), 32);
    assert_eq!(offset_of!(UVM_ENABLE_PEER_ACCESS_PARAMS, gpuUuidB), 16);
    assert_eq!(offset_of!(UVM_ENABLE_PEER_ACCESS_PARAMS, rmStatus), 32);
    assert_eq!(
        (UvmGpuMappingTypeReadWrite, UvmGpuMappingTypeReadOnly),
        (2, 3)
    );
    assert_eq!(offset_of!(UVM_UNMAP_EXTERNAL_PARAMS, gpuUuid), 16);
    assert_eq!(offset_of!(UVM_UNMAP_EXTERNAL_PARAMS, rmStatus), 32);
    assert_eq!(NV_ERR_INVALID_DEVICE, 0x26);
    assert_eq!(nv_status_name(0x26), "NV_ERR_INVALID_DEVICE");
}

/// Memory shared through export fds: the root-client controls of `ctrl/ctrl0000/ctrl0000unix.h`
/// and the surface query of `ctrl/ctrl0041.h`, as NVIDIA's SDK headers of 570–595 give them.
#[test]
fn export_fd_layouts_and_numbers() {
    assert_eq!(
        (
            NV0000_CTRL_CMD_OS_UNIX_GET_EXPORT_OBJECT_INFO,
            NV0000_CTRL_CMD_OS_UNIX_EXPORT_OBJECTS_TO_FD,
            NV0000_CTRL_CMD_OS_UNIX_IMPORT_OBJECTS_FROM_FD,
            NV0041_CTRL_CMD_GET_SURFACE_INFO
        ),
        (0x3D08, 0x3D0B, 0x3D0C, 0x410110)
    );
    type Info = NV0000_CTRL_OS_UNIX_GET_EXPORT_OBJECT_INFO_PARAMS;
    assert_eq!(size_of::<Info>(), 80);
    assert_eq!(
        (
            offset_of!(Info, deviceInstance),
            offset_of!(Info, gpuInstanceId),
            offset_of!(Info, maxObjects),
            offset_of!(Info, metadata)
        ),
        (4, 8, 12, 14)
    );
    type Export = NV0000_CTRL_OS_UNIX_EXPORT_OBJECTS_TO_FD_PARAMS;
    assert_eq!(size_of::<Export>(), 2128);
    assert_eq!(
        (
            offset_of!(Export, hDevice),
            offset_of!(Export, maxObjects),
            offset_of!(Export, metadata),
            offset_of!(Export, objects),
            offset_of!(Export, numObjects),
            offset_of!(Export, index)
        ),
        (4, 8, 10, 76, 2124, 2126)
    );
    type Import = NV0000_CTRL_OS_UNIX_IMPORT_OBJECTS_FROM_FD_PARAMS;
    assert_eq!(size_of::<Import>(), 652);
    assert_eq!(
        (
            offset_of!(Import, hParent),
            offset_of!(Import, objects),
            offset_of!(Import, objectTypes),
            offset_of!(Import, numObjects),
            offset_of!(Import, index)
        ),
        (4, 8, 520, 648, 650)
    );
    assert_eq!(
        (
            NV0000_CTRL_CMD_OS_UNIX_IMPORT_OBJECT_TYPE_VIDMEM,
            NV0000_CTRL_CMD_OS_UNIX_IMPORT_OBJECT_TYPE_SYSMEM
        ),
        (1, 2)
    );
    assert_eq!(size_of::<NV0041_CTRL_GET_SURFACE_INFO_PARAMS>(), 16);
    assert_eq!(
        offset_of!(NV0041_CTRL_GET_SURFACE_INFO_PARAMS, surfaceInfoList),
        8
    );
    assert_eq!(
        (
            NV0041_CTRL_SURFACE_INFO_INDEX_PHYS_SIZE_LO,
            NV0041_CTRL_SURFACE_INFO_INDEX_PHYS_SIZE_HI,
            NV0041_CTRL_SURFACE_INFO_INDEX_PHYS_ATTR
        ),
        (2, 3, 8)
    );
    assert_eq!(
        rm_ctrl_cmd_label(0x3D0B),
        "0x3d0b NV0000_CTRL_CMD_OS_UNIX_EXPORT_OBJECTS_TO_FD"
    );
}
