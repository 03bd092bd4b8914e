//! Names of escapes, classes, control commands and UVM ioctls, for logs and messages.

use crate::sys::rm::ce::*;
use crate::sys::rm::channel::*;
use crate::sys::rm::classes::*;
use crate::sys::rm::device::*;
use crate::sys::rm::escape::*;
use crate::sys::rm::export::*;
use crate::sys::rm::gr::*;
use crate::sys::rm::memory::*;
use crate::sys::rm::p2p::*;
use crate::sys::rm::uvm::*;

/// `(value, "NAME")` pairs from the constants above.
macro_rules! name_table {
    ($ty:ty; $($name:ident),+ $(,)?) => {
        &[$(($name as $ty, stringify!($name))),+]
    };
}

/// The RM escapes (`nv_escape.h`, `nv-ioctl-numbers.h`).
const NV_ESC_NAMES: &[(u32, &str)] = name_table!(u32;
    NV_ESC_RM_ALLOC_MEMORY, NV_ESC_RM_FREE, NV_ESC_RM_CONTROL, NV_ESC_RM_ALLOC,
    NV_ESC_RM_DUP_OBJECT, NV_ESC_RM_VID_HEAP_CONTROL, NV_ESC_RM_MAP_MEMORY,
    NV_ESC_RM_UNMAP_MEMORY, NV_ESC_RM_MAP_MEMORY_DMA, NV_ESC_RM_UNMAP_MEMORY_DMA,
    NV_ESC_CARD_INFO, NV_ESC_REGISTER_FD, NV_ESC_ALLOC_OS_EVENT, NV_ESC_FREE_OS_EVENT,
    NV_ESC_STATUS_CODE, NV_ESC_CHECK_VERSION_STR, NV_ESC_IOCTL_XFER_CMD,
    NV_ESC_ATTACH_GPUS_TO_FD, NV_ESC_QUERY_DEVICE_INTR, NV_ESC_SYS_PARAMS, NV_ESC_NUMA_INFO,
    NV_ESC_SET_NUMA_STATUS, NV_ESC_EXPORT_TO_DMABUF_FD, NV_ESC_WAIT_OPEN_COMPLETE,
);

/// The RM classes the library allocates (aliases such as `NV1_MEMORY_USER` left out).
const RM_CLASS_NAMES: &[(u32, &str)] = name_table!(u32;
    NV01_ROOT_CLIENT, NV01_CONTEXT_DMA, NV01_MEMORY_SYSTEM, NV01_MEMORY_LOCAL_USER,
    NV01_MEMORY_VIRTUAL, NV01_MEMORY_SYSTEM_OS_DESCRIPTOR, NV01_EVENT_OS_EVENT, NV01_DEVICE_0,
    NV20_SUBDEVICE_0, GT200_DEBUGGER, FERMI_CONTEXT_SHARE_A, FERMI_VASPACE_A,
    KEPLER_CHANNEL_GROUP_A, VOLTA_USERMODE_A, TURING_USERMODE_A, AMPERE_USERMODE_A,
    HOPPER_USERMODE_A, BLACKWELL_USERMODE_A, VOLTA_CHANNEL_GPFIFO_A, TURING_CHANNEL_GPFIFO_A,
    AMPERE_CHANNEL_GPFIFO_A, AMPERE_CHANNEL_GPFIFO_B, HOPPER_CHANNEL_GPFIFO_A,
    BLACKWELL_CHANNEL_GPFIFO_A, BLACKWELL_CHANNEL_GPFIFO_B, AMPERE_COMPUTE_A, AMPERE_COMPUTE_B,
    ADA_COMPUTE_A, HOPPER_COMPUTE_A, BLACKWELL_COMPUTE_A, BLACKWELL_COMPUTE_B,
    AMPERE_DMA_COPY_A, AMPERE_DMA_COPY_B, HOPPER_DMA_COPY_A, BLACKWELL_DMA_COPY_A,
    BLACKWELL_DMA_COPY_B,
);

/// The RM control commands the library issues.
const RM_CTRL_CMD_NAMES: &[(u32, &str)] = name_table!(u32;
    NV0000_CTRL_CMD_SYSTEM_GET_BUILD_VERSION_V2, NV0000_CTRL_CMD_GPU_GET_ID_INFO_V2,
    NV0000_CTRL_CMD_GPU_GET_UUID_FROM_GPU_ID, NV0080_CTRL_CMD_GPU_GET_CLASSLIST, NV2080_CTRL_CMD_GPU_GET_NAME_STRING,
    NV2080_CTRL_CMD_GPU_GET_GID_INFO, NV2080_CTRL_CMD_GR_GET_INFO, NV2080_CTRL_CMD_FB_GET_INFO,
    NV2080_CTRL_CMD_FB_GET_INFO_V2, NV2080_CTRL_CMD_FB_FLUSH_GPU_CACHE,
    NV2080_CTRL_CMD_MC_GET_ARCH_INFO, NV2080_CTRL_CMD_PERF_BOOST, NV2080_CTRL_CMD_GPU_GET_SKYLINE_INFO,
    NVC36F_CTRL_CMD_GPFIFO_GET_WORK_SUBMIT_TOKEN, NVA06C_CTRL_CMD_GPFIFO_SCHEDULE,
    NVA06F_CTRL_CMD_GPFIFO_SCHEDULE, NVA06F_CTRL_CMD_BIND,
    NV2080_CTRL_CMD_GR_SET_CTXSW_PREEMPTION_MODE, NV2080_CTRL_CMD_GR_GET_GPC_MASK,
    NV2080_CTRL_CMD_GR_GET_TPC_MASK, NV2080_CTRL_CMD_GPU_GET_ENGINES_V2,
    NV2080_CTRL_CMD_CE_GET_CE_PCE_MASK, NV2080_CTRL_CMD_CE_GET_CAPS_V2,
    NV906F_CTRL_CMD_GET_MMU_FAULT_INFO,
    NV0000_CTRL_CMD_SYSTEM_GET_P2P_CAPS_V2, NV2080_CTRL_CMD_GET_GPU_FABRIC_PROBE_INFO,
    NV0000_CTRL_CMD_OS_UNIX_GET_EXPORT_OBJECT_INFO, NV0000_CTRL_CMD_OS_UNIX_EXPORT_OBJECTS_TO_FD,
    NV0000_CTRL_CMD_OS_UNIX_IMPORT_OBJECTS_FROM_FD, NV0041_CTRL_CMD_GET_SURFACE_INFO,
);

/// The UVM ioctls (`uvm_ioctl.h`).
const UVM_IOCTL_NAMES: &[(u64, &str)] = name_table!(u64;
    UVM_INITIALIZE, UVM_DEINITIALIZE, UVM_REGISTER_GPU_VASPACE, UVM_UNREGISTER_GPU_VASPACE,
    UVM_REGISTER_CHANNEL, UVM_UNREGISTER_CHANNEL, UVM_ENABLE_PEER_ACCESS,
    UVM_MAP_EXTERNAL_ALLOCATION, UVM_FREE, UVM_REGISTER_GPU, UVM_UNREGISTER_GPU,
    UVM_UNMAP_EXTERNAL, UVM_CREATE_EXTERNAL_RANGE, UVM_MM_INITIALIZE,
    UVM_DISABLE_PEER_ACCESS,
);

fn lookup<T: PartialEq + Copy>(table: &[(T, &'static str)], v: T) -> Option<&'static str> {
    table.iter().find(|(k, _)| *k == v).map(|(_, n)| *n)
}

/// The name of an RM escape number (`NV_ESC_RM_CONTROL` for 0x2A), if known.
pub fn nv_esc_name(nr: u32) -> Option<&'static str> {
    lookup(NV_ESC_NAMES, nr)
}

/// The name of an RM class id (`HOPPER_COMPUTE_A` for 0xCBC0), if it is one the library uses.
pub fn rm_class_name(class: u32) -> Option<&'static str> {
    lookup(RM_CLASS_NAMES, class)
}

/// The name of an RM control command (`NV2080_CTRL_CMD_GR_GET_INFO`), if the library uses it.
pub fn rm_ctrl_cmd_name(cmd: u32) -> Option<&'static str> {
    lookup(RM_CTRL_CMD_NAMES, cmd)
}

/// The name of a UVM ioctl number (`UVM_REGISTER_GPU` for 37), if known.
pub fn uvm_ioctl_name(request: u64) -> Option<&'static str> {
    lookup(UVM_IOCTL_NAMES, request)
}

/// `0xcbc0 HOPPER_COMPUTE_A`, or just the hex number for a class without a known name.
pub fn rm_class_label(class: u32) -> String {
    match rm_class_name(class) {
        Some(n) => format!("{class:#x} {n}"),
        None => format!("{class:#x}"),
    }
}

/// `0x20801201 NV2080_CTRL_CMD_GR_GET_INFO`, or just the hex number for an unknown command.
pub fn rm_ctrl_cmd_label(cmd: u32) -> String {
    match rm_ctrl_cmd_name(cmd) {
        Some(n) => format!("{cmd:#x} {n}"),
        None => format!("{cmd:#x}"),
    }
}

#[cfg(test)]
mod name_tests {
    use super::*;

    #[test]
    fn names_are_found() {
        assert_eq!(nv_esc_name(0x2A), Some("NV_ESC_RM_CONTROL"));
        assert_eq!(
            nv_esc_name(NV_IOCTL_BASE + 10),
            Some("NV_ESC_CHECK_VERSION_STR")
        );
        assert_eq!(rm_class_name(0xCBC0), Some("HOPPER_COMPUTE_A"));
        assert_eq!(rm_class_name(0x0040), Some("NV01_MEMORY_LOCAL_USER"));
        assert_eq!(
            rm_ctrl_cmd_label(0x2080_1201),
            "0x20801201 NV2080_CTRL_CMD_GR_GET_INFO"
        );
        assert_eq!(rm_ctrl_cmd_label(0x1234), "0x1234");
        assert_eq!(uvm_ioctl_name(37), Some("UVM_REGISTER_GPU"));
        assert_eq!(uvm_ioctl_name(0x3000_0001), Some("UVM_INITIALIZE"));
        assert_eq!(uvm_ioctl_name(1000), None);
    }
}
