//! RM escape structures (NVOS21/54/64 and friends), the escape request numbers, allocation and
//! control parameter layouts, and the notifier (§1.2, §1.3, §2.2, §2.3).

use std::mem::{offset_of, size_of};
use tegragpu::sys::rm::*;

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
fn notifier_layout() {
    assert_eq!(size_of::<NvNotification>(), 16);
    assert_eq!(offset_of!(NvNotification, info32), 8);
    assert_eq!(offset_of!(NvNotification, info16), 12);
    assert_eq!(offset_of!(NvNotification, status), 14);
}
