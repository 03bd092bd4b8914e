//! RM / UVM ABI layouts and numbers against the values in rm-kernel-interface.md (§1.2, §1.3,
//! §2.2, §2.3, §2.5, §3, §4.1, §6.2), plus the driver-version gate of the RM backend.
//! Every expected number below is copied from the document, not computed from the code.

use std::mem::{offset_of, size_of};
use tegragpu::backend::rm::{check_driver_version, select_classes, RmBackend};
use tegragpu::os::{KernelFaultRecord, Sys};
use tegragpu::sys::rm::*;
use tegragpu::Status;

#[test]
fn escape_struct_sizes_and_offsets() {
    assert_eq!(size_of::<NVOS21_PARAMETERS>(), 32);
    assert_eq!(offset_of!(NVOS21_PARAMETERS, hClass), 12);
    assert_eq!(offset_of!(NVOS21_PARAMETERS, pAllocParms), 16);
    assert_eq!(offset_of!(NVOS21_PARAMETERS, paramsSize), 24);
    assert_eq!(offset_of!(NVOS21_PARAMETERS, status), 28);

    assert_eq!(size_of::<NVOS64_PARAMETERS>(), 48);
    assert_eq!(offset_of!(NVOS64_PARAMETERS, pRightsRequested), 24);
    assert_eq!(offset_of!(NVOS64_PARAMETERS, paramsSize), 32);
    assert_eq!(offset_of!(NVOS64_PARAMETERS, flags), 36);
    assert_eq!(offset_of!(NVOS64_PARAMETERS, status), 40);

    assert_eq!(size_of::<NVOS54_PARAMETERS>(), 32);
    assert_eq!(offset_of!(NVOS54_PARAMETERS, cmd), 8);
    assert_eq!(offset_of!(NVOS54_PARAMETERS, flags), 12);
    assert_eq!(offset_of!(NVOS54_PARAMETERS, params), 16);
    assert_eq!(offset_of!(NVOS54_PARAMETERS, paramsSize), 24);
    assert_eq!(offset_of!(NVOS54_PARAMETERS, status), 28);

    assert_eq!(size_of::<NVOS00_PARAMETERS>(), 16);
    assert_eq!(offset_of!(NVOS00_PARAMETERS, hObjectOld), 8);
    assert_eq!(offset_of!(NVOS00_PARAMETERS, status), 12);

    assert_eq!(size_of::<NVOS33_PARAMETERS>(), 48);
    assert_eq!(offset_of!(NVOS33_PARAMETERS, hMemory), 8);
    assert_eq!(offset_of!(NVOS33_PARAMETERS, offset), 16);
    assert_eq!(offset_of!(NVOS33_PARAMETERS, length), 24);
    assert_eq!(offset_of!(NVOS33_PARAMETERS, pLinearAddress), 32);
    assert_eq!(offset_of!(NVOS33_PARAMETERS, status), 40);
    assert_eq!(offset_of!(NVOS33_PARAMETERS, flags), 44);
    assert_eq!(size_of::<nv_ioctl_nvos33_parameters_with_fd>(), 56);
    assert_eq!(offset_of!(nv_ioctl_nvos33_parameters_with_fd, fd), 48);

    assert_eq!(size_of::<NVOS34_PARAMETERS>(), 32);
    assert_eq!(offset_of!(NVOS34_PARAMETERS, pLinearAddress), 16);
    assert_eq!(offset_of!(NVOS34_PARAMETERS, status), 24);
    assert_eq!(offset_of!(NVOS34_PARAMETERS, flags), 28);

    assert_eq!(size_of::<NVOS02_PARAMETERS>(), 48);
    assert_eq!(offset_of!(NVOS02_PARAMETERS, hObjectNew), 8);
    assert_eq!(offset_of!(NVOS02_PARAMETERS, flags), 16);
    assert_eq!(offset_of!(NVOS02_PARAMETERS, pMemory), 24);
    assert_eq!(offset_of!(NVOS02_PARAMETERS, limit), 32);
    assert_eq!(offset_of!(NVOS02_PARAMETERS, status), 40);
    assert_eq!(size_of::<nv_ioctl_nvos02_parameters_with_fd>(), 56);
    assert_eq!(offset_of!(nv_ioctl_nvos02_parameters_with_fd, fd), 48);

    assert_eq!(size_of::<NVOS46_PARAMETERS>(), 64);
    assert_eq!(offset_of!(NVOS46_PARAMETERS, flags), 32);
    assert_eq!(offset_of!(NVOS46_PARAMETERS, flags2), 36);
    assert_eq!(offset_of!(NVOS46_PARAMETERS, kindOverride), 40);
    assert_eq!(offset_of!(NVOS46_PARAMETERS, dmaOffset), 48);
    assert_eq!(offset_of!(NVOS46_PARAMETERS, status), 56);
    assert_eq!(size_of::<NVOS46_PARAMETERS_V570>(), 56);
    assert_eq!(offset_of!(NVOS46_PARAMETERS_V570, dmaOffset), 40);
    assert_eq!(offset_of!(NVOS46_PARAMETERS_V570, status), 48);

    assert_eq!(size_of::<NVOS47_PARAMETERS>(), 48);
    assert_eq!(offset_of!(NVOS47_PARAMETERS, flags), 16);
    assert_eq!(offset_of!(NVOS47_PARAMETERS, dmaOffset), 24);
    assert_eq!(offset_of!(NVOS47_PARAMETERS, size), 32);
    assert_eq!(offset_of!(NVOS47_PARAMETERS, status), 40);
    assert_eq!(size_of::<NVOS55_PARAMETERS>(), 28);

    assert_eq!(size_of::<nv_ioctl_card_info_t>(), 72);
    assert_eq!(offset_of!(nv_ioctl_card_info_t, pci_info), 4);
    assert_eq!(offset_of!(nv_ioctl_card_info_t, gpu_id), 16);
    assert_eq!(offset_of!(nv_ioctl_card_info_t, interrupt_line), 20);
    assert_eq!(offset_of!(nv_ioctl_card_info_t, reg_address), 24);
    assert_eq!(offset_of!(nv_ioctl_card_info_t, reg_size), 32);
    assert_eq!(offset_of!(nv_ioctl_card_info_t, fb_address), 40);
    assert_eq!(offset_of!(nv_ioctl_card_info_t, fb_size), 48);
    assert_eq!(offset_of!(nv_ioctl_card_info_t, minor_number), 56);
    assert_eq!(offset_of!(nv_ioctl_card_info_t, dev_name), 60);

    assert_eq!(size_of::<nv_ioctl_rm_api_version_t>(), 72);
    assert_eq!(offset_of!(nv_ioctl_rm_api_version_t, reply), 4);
    assert_eq!(offset_of!(nv_ioctl_rm_api_version_t, versionString), 8);
    assert_eq!(size_of::<nv_ioctl_register_fd_t>(), 4);
    assert_eq!(size_of::<nv_ioctl_xfer_t>(), 16);
    assert_eq!(size_of::<nv_ioctl_status_code_t>(), 12);
    assert_eq!(size_of::<nv_ioctl_sys_params_t>(), 8);
    assert_eq!(size_of::<nv_ioctl_wait_open_complete_t>(), 8);
    assert_eq!(size_of::<nv_ioctl_alloc_os_event_t>(), 16);
}

#[test]
fn escape_request_numbers() {
    // §1.2 table.
    assert_eq!(NV_ESC_RM_ALLOC_REQUEST, 0xC020_462B);
    assert_eq!(NV_ESC_RM_CONTROL_REQUEST, 0xC020_462A);
    assert_eq!(NV_ESC_RM_FREE_REQUEST, 0xC010_4629);
    assert_eq!(NV_ESC_RM_ALLOC_MEMORY_REQUEST, 0xC038_4627);
    assert_eq!(NV_ESC_RM_MAP_MEMORY_REQUEST, 0xC038_464E);
    assert_eq!(NV_ESC_RM_UNMAP_MEMORY_REQUEST, 0xC020_464F);
    assert_eq!(NV_ESC_CARD_INFO_REQUEST, 0xD200_46C8);
    assert_eq!(NV_ESC_REGISTER_FD_REQUEST, 0xC004_46C9);
    assert_eq!(NV_ESC_CHECK_VERSION_STR_REQUEST, 0xC048_46D2);
    assert_eq!(nv_ioctl_request(NV_ESC_RM_ALLOC, 48), 0xC030_462B);
    assert_eq!(
        nv_ioctl_request(NV_ESC_RM_VID_HEAP_CONTROL, 184),
        0xC0B8_464A
    );
    assert_eq!(nv_ioctl_request(NV_ESC_RM_MAP_MEMORY_DMA, 64), 0xC040_4657);
    assert_eq!(
        nv_ioctl_request(NV_ESC_RM_UNMAP_MEMORY_DMA, 48),
        0xC030_4658
    );
    assert_eq!(nv_ioctl_request(NV_ESC_RM_DUP_OBJECT, 28), 0xC01C_4634);
    assert_eq!(nv_ioctl_request(NV_ESC_STATUS_CODE, 12), 0xC00C_46D1);
    assert_eq!(nv_ioctl_request(NV_ESC_IOCTL_XFER_CMD, 16), 0xC010_46D3);
    assert_eq!(nv_ioctl_request(NV_ESC_ATTACH_GPUS_TO_FD, 4), 0xC004_46D4);
    assert_eq!(nv_ioctl_request(NV_ESC_SYS_PARAMS, 8), 0xC008_46D6);
    assert_eq!(nv_ioctl_request(NV_ESC_WAIT_OPEN_COMPLETE, 8), 0xC008_46DA);
    assert_eq!(NV_ESC_EXPORT_TO_DMABUF_FD, 217);
    assert_eq!(NV_ESC_NUMA_INFO, 215);
    assert_eq!(NV_ESC_SET_NUMA_STATUS, 216);
    assert_eq!(NV_ESC_QUERY_DEVICE_INTR, 213);
    assert_eq!(NV_ESC_ALLOC_OS_EVENT, 206);
    assert_eq!(NV_ESC_FREE_OS_EVENT, 207);
    assert_eq!(NV_RM_API_VERSION_CMD_QUERY, 0x32);
    assert_eq!(NV_RM_API_VERSION_CMD_RELAXED, 0x31);
}

#[test]
fn alloc_param_layouts() {
    assert_eq!(size_of::<NV0080_ALLOC_PARAMETERS>(), 56);
    assert_eq!(offset_of!(NV0080_ALLOC_PARAMETERS, hClientShare), 4);
    assert_eq!(offset_of!(NV0080_ALLOC_PARAMETERS, hTargetClient), 8);
    assert_eq!(offset_of!(NV0080_ALLOC_PARAMETERS, hTargetDevice), 12);
    assert_eq!(offset_of!(NV0080_ALLOC_PARAMETERS, flags), 16);
    assert_eq!(offset_of!(NV0080_ALLOC_PARAMETERS, vaSpaceSize), 24);
    assert_eq!(offset_of!(NV0080_ALLOC_PARAMETERS, vaStartInternal), 32);
    assert_eq!(offset_of!(NV0080_ALLOC_PARAMETERS, vaLimitInternal), 40);
    assert_eq!(offset_of!(NV0080_ALLOC_PARAMETERS, vaMode), 48);
    assert_eq!(size_of::<NV2080_ALLOC_PARAMETERS>(), 4);

    assert_eq!(size_of::<NV_MEMORY_ALLOCATION_PARAMS>(), 128);
    assert_eq!(offset_of!(NV_MEMORY_ALLOCATION_PARAMS, type_), 4);
    assert_eq!(offset_of!(NV_MEMORY_ALLOCATION_PARAMS, flags), 8);
    assert_eq!(offset_of!(NV_MEMORY_ALLOCATION_PARAMS, width), 12);
    assert_eq!(offset_of!(NV_MEMORY_ALLOCATION_PARAMS, pitch), 20);
    assert_eq!(offset_of!(NV_MEMORY_ALLOCATION_PARAMS, attr), 24);
    assert_eq!(offset_of!(NV_MEMORY_ALLOCATION_PARAMS, attr2), 28);
    assert_eq!(offset_of!(NV_MEMORY_ALLOCATION_PARAMS, format), 32);
    assert_eq!(offset_of!(NV_MEMORY_ALLOCATION_PARAMS, comprCovg), 36);
    assert_eq!(offset_of!(NV_MEMORY_ALLOCATION_PARAMS, zcullCovg), 40);
    assert_eq!(offset_of!(NV_MEMORY_ALLOCATION_PARAMS, rangeLo), 48);
    assert_eq!(offset_of!(NV_MEMORY_ALLOCATION_PARAMS, rangeHi), 56);
    assert_eq!(offset_of!(NV_MEMORY_ALLOCATION_PARAMS, size), 64);
    assert_eq!(offset_of!(NV_MEMORY_ALLOCATION_PARAMS, alignment), 72);
    assert_eq!(offset_of!(NV_MEMORY_ALLOCATION_PARAMS, offset), 80);
    assert_eq!(offset_of!(NV_MEMORY_ALLOCATION_PARAMS, limit), 88);
    assert_eq!(offset_of!(NV_MEMORY_ALLOCATION_PARAMS, address), 96);
    assert_eq!(offset_of!(NV_MEMORY_ALLOCATION_PARAMS, ctagOffset), 104);
    assert_eq!(offset_of!(NV_MEMORY_ALLOCATION_PARAMS, hVASpace), 108);
    assert_eq!(offset_of!(NV_MEMORY_ALLOCATION_PARAMS, internalflags), 112);
    assert_eq!(offset_of!(NV_MEMORY_ALLOCATION_PARAMS, tag), 116);
    assert_eq!(offset_of!(NV_MEMORY_ALLOCATION_PARAMS, numaNode), 120);

    assert_eq!(size_of::<NV_VASPACE_ALLOCATION_PARAMETERS>(), 56);
    assert_eq!(offset_of!(NV_VASPACE_ALLOCATION_PARAMETERS, flags), 4);
    assert_eq!(offset_of!(NV_VASPACE_ALLOCATION_PARAMETERS, vaSize), 8);
    assert_eq!(
        offset_of!(NV_VASPACE_ALLOCATION_PARAMETERS, vaStartInternal),
        16
    );
    assert_eq!(
        offset_of!(NV_VASPACE_ALLOCATION_PARAMETERS, vaLimitInternal),
        24
    );
    assert_eq!(
        offset_of!(NV_VASPACE_ALLOCATION_PARAMETERS, bigPageSize),
        32
    );
    assert_eq!(offset_of!(NV_VASPACE_ALLOCATION_PARAMETERS, vaBase), 40);
    assert_eq!(offset_of!(NV_VASPACE_ALLOCATION_PARAMETERS, pasid), 48);
    // flags 0x48 = ENABLE_PAGE_FAULTING | IS_EXTERNALLY_OWNED (§2.2 step 14).
    assert_eq!(
        NV_VASPACE_ALLOCATION_FLAGS_ENABLE_PAGE_FAULTING
            | NV_VASPACE_ALLOCATION_FLAGS_IS_EXTERNALLY_OWNED,
        0x48
    );

    assert_eq!(size_of::<NV_MEMORY_VIRTUAL_ALLOCATION_PARAMS>(), 24);
    assert_eq!(
        offset_of!(NV_MEMORY_VIRTUAL_ALLOCATION_PARAMS, hVASpace),
        16
    );

    assert_eq!(size_of::<NV_CHANNEL_GROUP_ALLOCATION_PARAMETERS>(), 20);
    assert_eq!(
        offset_of!(NV_CHANNEL_GROUP_ALLOCATION_PARAMETERS, hVASpace),
        8
    );
    assert_eq!(
        offset_of!(NV_CHANNEL_GROUP_ALLOCATION_PARAMETERS, engineType),
        12
    );
    assert_eq!(
        offset_of!(
            NV_CHANNEL_GROUP_ALLOCATION_PARAMETERS,
            bIsCallingContextVgpuPlugin
        ),
        16
    );
    assert_eq!(size_of::<NV_CTXSHARE_ALLOCATION_PARAMETERS>(), 12);
    assert_eq!(offset_of!(NV_CTXSHARE_ALLOCATION_PARAMETERS, flags), 4);
    assert_eq!(offset_of!(NV_CTXSHARE_ALLOCATION_PARAMETERS, subctxId), 8);
    assert_eq!(size_of::<NV83DE_ALLOC_PARAMETERS>(), 12);
}

#[test]
fn channel_alloc_params_570_595_layout() {
    // §2.3 table.
    assert_eq!(size_of::<NV_CHANNEL_ALLOC_PARAMS>(), 368);
    assert_eq!(offset_of!(NV_CHANNEL_ALLOC_PARAMS, hObjectError), 0);
    assert_eq!(offset_of!(NV_CHANNEL_ALLOC_PARAMS, hObjectBuffer), 4);
    assert_eq!(offset_of!(NV_CHANNEL_ALLOC_PARAMS, gpFifoOffset), 8);
    assert_eq!(offset_of!(NV_CHANNEL_ALLOC_PARAMS, gpFifoEntries), 16);
    assert_eq!(offset_of!(NV_CHANNEL_ALLOC_PARAMS, flags), 20);
    assert_eq!(offset_of!(NV_CHANNEL_ALLOC_PARAMS, hContextShare), 24);
    assert_eq!(offset_of!(NV_CHANNEL_ALLOC_PARAMS, hVASpace), 28);
    assert_eq!(offset_of!(NV_CHANNEL_ALLOC_PARAMS, hUserdMemory), 32);
    assert_eq!(offset_of!(NV_CHANNEL_ALLOC_PARAMS, userdOffset), 64);
    assert_eq!(offset_of!(NV_CHANNEL_ALLOC_PARAMS, engineType), 128);
    assert_eq!(offset_of!(NV_CHANNEL_ALLOC_PARAMS, cid), 132);
    assert_eq!(offset_of!(NV_CHANNEL_ALLOC_PARAMS, subDeviceId), 136);
    assert_eq!(offset_of!(NV_CHANNEL_ALLOC_PARAMS, hObjectEccError), 140);
    assert_eq!(offset_of!(NV_CHANNEL_ALLOC_PARAMS, instanceMem), 144);
    assert_eq!(
        offset_of!(NV_CHANNEL_ALLOC_PARAMS, mthdbufMem) + size_of::<NV_MEMORY_DESC_PARAMS>(),
        240
    );
    assert_eq!(offset_of!(NV_CHANNEL_ALLOC_PARAMS, hPhysChannelGroup), 240);
    assert_eq!(offset_of!(NV_CHANNEL_ALLOC_PARAMS, internalFlags), 244);
    assert_eq!(offset_of!(NV_CHANNEL_ALLOC_PARAMS, errorNotifierMem), 248);
    assert_eq!(
        offset_of!(NV_CHANNEL_ALLOC_PARAMS, eccErrorNotifierMem),
        272
    );
    assert_eq!(offset_of!(NV_CHANNEL_ALLOC_PARAMS, ProcessID), 296);
    assert_eq!(offset_of!(NV_CHANNEL_ALLOC_PARAMS, SubProcessID), 300);
    assert_eq!(offset_of!(NV_CHANNEL_ALLOC_PARAMS, encryptIv), 304);
    assert_eq!(offset_of!(NV_CHANNEL_ALLOC_PARAMS, decryptIv), 316);
    assert_eq!(offset_of!(NV_CHANNEL_ALLOC_PARAMS, hmacNonce), 328);
    assert_eq!(offset_of!(NV_CHANNEL_ALLOC_PARAMS, tpcConfigID), 360);
    assert_eq!(size_of::<NV_MEMORY_DESC_PARAMS>(), 24);
}

#[test]
fn control_param_layouts_and_ids() {
    assert_eq!(NV0000_CTRL_CMD_SYSTEM_GET_BUILD_VERSION_V2, 0x13E);
    assert_eq!(NV0000_CTRL_CMD_GPU_GET_ID_INFO_V2, 0x205);
    assert_eq!(NV0080_CTRL_CMD_GPU_GET_CLASSLIST, 0x0080_0201);
    assert_eq!(NV2080_CTRL_CMD_GPU_GET_GID_INFO, 0x2080_014A);
    assert_eq!(NV2080_CTRL_CMD_GR_GET_INFO, 0x2080_1201);
    assert_eq!(NV2080_CTRL_CMD_FB_FLUSH_GPU_CACHE, 0x2080_130E);
    assert_eq!(NV2080_CTRL_CMD_PERF_BOOST, 0x2080_200A);
    assert_eq!(NVC36F_CTRL_CMD_GPFIFO_GET_WORK_SUBMIT_TOKEN, 0xC36F_0108);
    assert_eq!(NVA06C_CTRL_CMD_GPFIFO_SCHEDULE, 0xA06C_0101);
    assert_eq!(NVA06F_CTRL_CMD_GPFIFO_SCHEDULE, 0xA06F_0103);
    assert_eq!(NVA06F_CTRL_CMD_BIND, 0xA06F_0104);

    assert_eq!(
        size_of::<NV0000_CTRL_SYSTEM_GET_BUILD_VERSION_V2_PARAMS>(),
        1032
    );
    assert_eq!(
        offset_of!(
            NV0000_CTRL_SYSTEM_GET_BUILD_VERSION_V2_PARAMS,
            versionBuffer
        ),
        256
    );
    assert_eq!(
        offset_of!(NV0000_CTRL_SYSTEM_GET_BUILD_VERSION_V2_PARAMS, driverBranch),
        512
    );
    assert_eq!(
        offset_of!(NV0000_CTRL_SYSTEM_GET_BUILD_VERSION_V2_PARAMS, titleBuffer),
        768
    );
    assert_eq!(
        offset_of!(
            NV0000_CTRL_SYSTEM_GET_BUILD_VERSION_V2_PARAMS,
            changelistNumber
        ),
        1024
    );
    assert_eq!(
        offset_of!(
            NV0000_CTRL_SYSTEM_GET_BUILD_VERSION_V2_PARAMS,
            officialChangelistNumber
        ),
        1028
    );

    assert_eq!(size_of::<NV0000_CTRL_GPU_GET_ID_INFO_V2_PARAMS>(), 32);
    assert_eq!(
        offset_of!(NV0000_CTRL_GPU_GET_ID_INFO_V2_PARAMS, gpuFlags),
        4
    );
    assert_eq!(
        offset_of!(NV0000_CTRL_GPU_GET_ID_INFO_V2_PARAMS, deviceInstance),
        8
    );
    assert_eq!(
        offset_of!(NV0000_CTRL_GPU_GET_ID_INFO_V2_PARAMS, subDeviceInstance),
        12
    );
    assert_eq!(
        offset_of!(NV0000_CTRL_GPU_GET_ID_INFO_V2_PARAMS, sliStatus),
        16
    );
    assert_eq!(
        offset_of!(NV0000_CTRL_GPU_GET_ID_INFO_V2_PARAMS, boardId),
        20
    );
    assert_eq!(
        offset_of!(NV0000_CTRL_GPU_GET_ID_INFO_V2_PARAMS, gpuInstance),
        24
    );
    assert_eq!(
        offset_of!(NV0000_CTRL_GPU_GET_ID_INFO_V2_PARAMS, numaId),
        28
    );

    assert_eq!(size_of::<NV0080_CTRL_GPU_GET_CLASSLIST_PARAMS>(), 16);
    assert_eq!(
        offset_of!(NV0080_CTRL_GPU_GET_CLASSLIST_PARAMS, classList),
        8
    );

    assert_eq!(size_of::<NV2080_CTRL_GPU_GET_GID_INFO_PARAMS>(), 268);
    assert_eq!(offset_of!(NV2080_CTRL_GPU_GET_GID_INFO_PARAMS, flags), 4);
    assert_eq!(offset_of!(NV2080_CTRL_GPU_GET_GID_INFO_PARAMS, length), 8);
    assert_eq!(offset_of!(NV2080_CTRL_GPU_GET_GID_INFO_PARAMS, data), 12);
    assert_eq!(NV2080_GPU_CMD_GPU_GET_GID_FLAGS_FORMAT_BINARY, 2);

    assert_eq!(size_of::<NV2080_CTRL_GR_GET_INFO_PARAMS>(), 32);
    assert_eq!(offset_of!(NV2080_CTRL_GR_GET_INFO_PARAMS, grInfoList), 8);
    assert_eq!(offset_of!(NV2080_CTRL_GR_GET_INFO_PARAMS, grRouteInfo), 16);
    assert_eq!(size_of::<NV2080_CTRL_GR_INFO>(), 8);
    // §2.2 "Other controls": useful GR info indices.
    assert_eq!(NV2080_CTRL_GR_INFO_INDEX_SM_VERSION, 0x0C);
    assert_eq!(NV2080_CTRL_GR_INFO_INDEX_MAX_WARPS_PER_SM, 0x0D);
    assert_eq!(NV2080_CTRL_GR_INFO_INDEX_LITTER_NUM_GPCS, 0x14);
    assert_eq!(NV2080_CTRL_GR_INFO_INDEX_LITTER_NUM_TPC_PER_GPC, 0x17);
    assert_eq!(NV2080_CTRL_GR_INFO_INDEX_LITTER_NUM_SM_PER_TPC, 0x20);

    // §2.2 names GR_GET_TPC_MASK 0x2080122B; the GPC mask control is the one before it. Both
    // structs are a 16-byte route info plus u32s (ctrl2080gr.h), padded to 8.
    assert_eq!(NV2080_CTRL_CMD_GR_GET_TPC_MASK, 0x2080_122B);
    assert_eq!(NV2080_CTRL_CMD_GR_GET_GPC_MASK, 0x2080_122A);
    assert_eq!(size_of::<NV2080_CTRL_GR_GET_GPC_MASK_PARAMS>(), 24);
    assert_eq!(offset_of!(NV2080_CTRL_GR_GET_GPC_MASK_PARAMS, gpcMask), 16);
    assert_eq!(size_of::<NV2080_CTRL_GR_GET_TPC_MASK_PARAMS>(), 24);
    assert_eq!(offset_of!(NV2080_CTRL_GR_GET_TPC_MASK_PARAMS, gpcId), 16);
    assert_eq!(offset_of!(NV2080_CTRL_GR_GET_TPC_MASK_PARAMS, tpcMask), 20);
    // ctrl906f.h: three u32, a 32-byte string, then seven 8-aligned u64.
    assert_eq!(NV906F_CTRL_CMD_GET_MMU_FAULT_INFO, 0x906F_0106);
    assert_eq!(size_of::<NV906F_CTRL_GET_MMU_FAULT_INFO_PARAMS>(), 104);
    assert_eq!(
        offset_of!(NV906F_CTRL_GET_MMU_FAULT_INFO_PARAMS, faultString),
        12
    );
    assert_eq!(
        offset_of!(NV906F_CTRL_GET_MMU_FAULT_INFO_PARAMS, shaderProgramVA),
        48
    );
    assert_eq!(size_of::<NVA06C_CTRL_GPFIFO_SCHEDULE_PARAMS>(), 3);
    assert_eq!(
        size_of::<NVC36F_CTRL_CMD_GPFIFO_GET_WORK_SUBMIT_TOKEN_PARAMS>(),
        4
    );
    assert_eq!(size_of::<NV2080_CTRL_PERF_BOOST_PARAMS>(), 8);
    assert_eq!(offset_of!(NV2080_CTRL_PERF_BOOST_PARAMS, duration), 4);
}

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

#[test]
fn notifier_layout() {
    assert_eq!(size_of::<NvNotification>(), 16);
    assert_eq!(offset_of!(NvNotification, info32), 8);
    assert_eq!(offset_of!(NvNotification, info16), 12);
    assert_eq!(offset_of!(NvNotification, status), 14);
}

#[test]
fn class_ids() {
    // §2.1 tree and §4.1 table.
    assert_eq!(NV01_ROOT_CLIENT, 0x41);
    assert_eq!(NV01_DEVICE_0, 0x80);
    assert_eq!(NV20_SUBDEVICE_0, 0x2080);
    assert_eq!(NV1_MEMORY_USER, 0x40);
    assert_eq!(NV1_MEMORY_SYSTEM, 0x3E);
    assert_eq!(NV01_MEMORY_VIRTUAL, 0x70);
    assert_eq!(NV01_MEMORY_SYSTEM_OS_DESCRIPTOR, 0x71);
    assert_eq!(FERMI_VASPACE_A, 0x90F1);
    assert_eq!(KEPLER_CHANNEL_GROUP_A, 0xA06C);
    assert_eq!(FERMI_CONTEXT_SHARE_A, 0x9067);
    assert_eq!(GT200_DEBUGGER, 0x83DE);
    assert_eq!(HOPPER_USERMODE_A, 0xC661);
    assert_eq!(HOPPER_CHANNEL_GPFIFO_A, 0xC86F);
    assert_eq!(HOPPER_COMPUTE_A, 0xCBC0);
    assert_eq!(HOPPER_DMA_COPY_A, 0xC8B5);
    assert_eq!(AMPERE_COMPUTE_A, 0xC6C0);
    assert_eq!(AMPERE_COMPUTE_B, 0xC7C0);
    assert_eq!(ADA_COMPUTE_A, 0xC9C0);
    assert_eq!(AMPERE_DMA_COPY_A, 0xC6B5);
    assert_eq!(AMPERE_DMA_COPY_B, 0xC7B5);
    assert_eq!(AMPERE_CHANNEL_GPFIFO_A, 0xC56F);
    assert_eq!(AMPERE_USERMODE_A, 0xC561);
    assert_eq!(BLACKWELL_COMPUTE_A, 0xCDC0);
    assert_eq!(BLACKWELL_COMPUTE_B, 0xCEC0);
    assert_eq!(BLACKWELL_DMA_COPY_A, 0xC9B5);
    assert_eq!(BLACKWELL_DMA_COPY_B, 0xCAB5);
    assert_eq!(BLACKWELL_CHANNEL_GPFIFO_A, 0xC96F);
    assert_eq!(BLACKWELL_CHANNEL_GPFIFO_B, 0xCA6F);
    assert_eq!(BLACKWELL_USERMODE_A, 0xC761);
    assert_eq!(NV2080_ENGINE_TYPE_GRAPHICS, 1);
}

#[test]
fn class_selection() {
    // The H200 class list (§4.1: C86F plus C56F/C46F/C36F, CBC0, C8B5, C661 plus C561/C461/C361).
    let h200 = [
        0x0041, 0x0080, 0x2080, 0x90F1, 0xA06C, 0x9067, 0x83DE, 0xB2CC, 0xCBA2, 0xCB97, 0xB8B0,
        0xC36F, 0xC46F, 0xC56F, 0xC86F, 0xCBC0, 0xC8B5, 0xC361, 0xC461, 0xC561, 0xC661,
    ];
    let c = select_classes(&h200).unwrap();
    assert_eq!(
        (c.gpfifo, c.compute, c.copy, c.usermode),
        (0xC86F, 0xCBC0, 0xC8B5, 0xC661)
    );
    // GA10x row: C56F, C7C0, C7B5, C561.
    let ga10x = [0xC56F, 0xC7C0, 0xC7B5, 0xC561, 0xC461];
    let c = select_classes(&ga10x).unwrap();
    assert_eq!(
        (c.gpfifo, c.compute, c.copy, c.usermode),
        (0xC56F, 0xC7C0, 0xC7B5, 0xC561)
    );
    // GB20x row: CA6F/C96F, CEC0, CAB5, C761/C661.
    let gb20x = [0xC96F, 0xCA6F, 0xCEC0, 0xCAB5, 0xC661, 0xC761];
    let c = select_classes(&gb20x).unwrap();
    assert_eq!(
        (c.gpfifo, c.compute, c.copy, c.usermode),
        (0xCA6F, 0xCEC0, 0xCAB5, 0xC761)
    );
    // No compute class → NotSupported.
    let e = select_classes(&[0xC86F, 0xC8B5, 0xC661]).unwrap_err();
    assert_eq!(e.status, Status::NotSupported);
}

#[test]
fn version_parsing_and_branch_gate() {
    let v = RmVersion::parse("580.159.04\n").unwrap();
    assert_eq!((v.major, v.minor, v.patch), (580, 159, Some(4)));
    assert_eq!(v.text, "580.159.04");
    assert_eq!(RmVersion::parse("575.64").unwrap().patch, None);
    for bad in [
        "",
        "580",
        "580.",
        "a.b",
        "580.1.2.3",
        "580.-1.2",
        "99999999999.1",
    ] {
        assert_eq!(
            RmVersion::parse(bad).unwrap_err().status,
            Status::UnsupportedDriver,
            "{bad:?}"
        );
    }

    let (v, b) =
        check_driver_version("580.159.04", Some("580.159.04"), Some("580.159.04\n")).unwrap();
    assert_eq!((v.major, b), (580, RmBranch::R580));

    for unsupported in ["610.43.03", "550.163.01", "535.288.01"] {
        let e = check_driver_version(unsupported, None, None).unwrap_err();
        assert_eq!(e.status, Status::UnsupportedDriver);
        assert!(e.message.contains(unsupported), "{}", e.message);
        assert!(e.message.contains("580"), "{}", e.message);
    }
    // sysfs and the loaded module disagree (modules replaced but not reloaded).
    let e = check_driver_version("580.159.04", Some("580.142"), None).unwrap_err();
    assert_eq!(e.status, Status::UnsupportedDriver);
    let e = check_driver_version("580.159.04", None, Some("590.48.01")).unwrap_err();
    assert_eq!(e.status, Status::UnsupportedDriver);
}

#[test]
fn per_branch_layouts() {
    // §6.2 table, per branch: (vaspace, gpfifo schedule, UVM_FREE, UVM_UNREGISTER_CHANNEL, NVOS46).
    let want = [
        (570, 48, 2, 24, 28, 56),
        (575, 48, 3, 24, 28, 56),
        (580, 56, 3, 24, 28, 64),
        (590, 56, 3, 16, 12, 64),
        (595, 56, 3, 16, 12, 64),
    ];
    assert_eq!(SUPPORTED_RM_BRANCHES, [570, 575, 580, 590, 595]);
    for (major, vas, sched, free, unreg, os46) in want {
        let b = RmBranch::from_major(major).unwrap();
        assert_eq!(b.major(), major);
        let l = b.layout();
        assert_eq!(l.channel_alloc_params_size, 368, "{major}");
        assert_eq!(l.memory_alloc_params_size, 128, "{major}");
        assert_eq!(l.build_version_v2_size, 1032, "{major}");
        assert_eq!(l.uvm_map_external_allocation_params_size, 9264, "{major}");
        assert_eq!(l.vaspace_params_size, vas, "{major}");
        assert_eq!(l.gpfifo_schedule_params_size, sched, "{major}");
        assert_eq!(l.uvm_free_params_size, free, "{major}");
        assert_eq!(l.uvm_unregister_channel_params_size, unreg, "{major}");
        assert_eq!(l.nvos46_size, os46, "{major}");
    }
    for major in [535, 550, 560, 600, 610] {
        assert!(RmBranch::from_major(major).is_none(), "{major}");
    }
}

/// A fake kernel: /dev/nvidiactl answers the version QUERY with a chosen string and fails every
/// other ioctl; it records the requests it saw.
struct FakeRm {
    version: &'static str,
    requests: parking_lot::Mutex<Vec<u64>>,
    open_fds: parking_lot::Mutex<Vec<i32>>,
}

impl Sys for FakeRm {
    fn open(&self, path: &std::ffi::CStr, _flags: i32) -> Result<i32, i32> {
        if path.to_bytes() == b"/dev/nvidiactl" {
            self.open_fds.lock().push(77);
            Ok(77)
        } else {
            Err(libc::ENOENT)
        }
    }
    fn close(&self, fd: i32) -> Result<(), i32> {
        let mut v = self.open_fds.lock();
        match v.iter().position(|&f| f == fd) {
            Some(i) => {
                v.remove(i);
                Ok(())
            }
            None => Err(libc::EBADF),
        }
    }
    unsafe fn ioctl(&self, fd: i32, request: u64, arg: usize) -> Result<i32, i32> {
        self.requests.lock().push(request);
        if fd == 77 && request == 0xC048_46D2 {
            let p = &mut *(arg as *mut nv_ioctl_rm_api_version_t);
            if p.cmd == 0x32 {
                p.reply = 1;
                p.versionString = [0; 64];
                p.versionString[..self.version.len()].copy_from_slice(self.version.as_bytes());
                return Ok(0);
            }
        }
        Err(libc::ENOTTY)
    }
    unsafe fn mmap(
        &self,
        _: *mut u8,
        _: usize,
        _: i32,
        _: i32,
        _: i32,
        _: i64,
    ) -> Result<*mut u8, i32> {
        Err(libc::ENODEV)
    }
    unsafe fn munmap(&self, _: *mut u8, _: usize) -> Result<(), i32> {
        Err(libc::EINVAL)
    }
    fn fault_log(&self) -> Vec<KernelFaultRecord> {
        Vec::new()
    }
}

#[test]
fn unsupported_branch_is_refused_before_any_rm_alloc_or_uvm_call() {
    let fake = std::sync::Arc::new(FakeRm {
        version: "610.43.03",
        requests: Default::default(),
        open_fds: Default::default(),
    });
    let err = match RmBackend::open(fake.clone()) {
        Ok(_) => panic!("a 610 driver must be refused"),
        Err(e) => e,
    };
    assert_eq!(err.status, Status::UnsupportedDriver, "{err:?}");
    assert!(err.message.contains("610.43.03"), "{}", err.message);
    assert!(
        err.message.contains("570") && err.message.contains("595"),
        "{}",
        err.message
    );
    // Only the version query reached the driver, and the control fd was closed again.
    assert_eq!(*fake.requests.lock(), vec![0xC048_46D2]);
    assert!(fake.open_fds.lock().is_empty());
}

#[test]
fn supported_branch_proceeds_to_the_root_client_allocation() {
    if std::path::Path::new("/sys/module/nvidia/version").exists() {
        eprintln!(
            "skipped: a real nvidia module is loaded, its sysfs version would not match the fake"
        );
        return;
    }
    let fake = std::sync::Arc::new(FakeRm {
        version: "580.159.04",
        requests: Default::default(),
        open_fds: Default::default(),
    });
    let err = match RmBackend::open(fake.clone()) {
        Ok(_) => panic!("the fake driver fails RM_ALLOC, so open must fail"),
        Err(e) => e,
    };
    assert_eq!(err.status, Status::Os, "{err:?}");
    assert_eq!(err.errno, Some(libc::ENOTTY));
    // QUERY, then RM_ALLOC of the root client (0xC020462B), then nothing else.
    assert_eq!(*fake.requests.lock(), vec![0xC048_46D2, 0xC020_462B]);
    assert!(
        fake.open_fds.lock().is_empty(),
        "fds leaked: {:?}",
        fake.open_fds.lock()
    );
}
