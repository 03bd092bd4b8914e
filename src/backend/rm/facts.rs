//! What the device reports beyond bring-up ([`crate::backend::BackendFacts`], free memory), and
//! the listing of the driver's GPUs without bringing one up ([`list_gpus`]).

use super::rmapi::{open_node, RmApi};
use super::{check_driver_version, read_sysfs, RmBackend};
use crate::backend::BackendFacts;
use crate::error::{Error, Result, Status};
use crate::log::debug;
use crate::os::Sys;
use crate::sys::rm::*;
use std::sync::Arc;

/// PCI vendor id of NVIDIA.
pub const NVIDIA_PCI_VENDOR_ID: u16 = 0x10DE;

impl RmBackend {
    /// One `NV2080_CTRL_CMD_FB_GET_INFO` index on the subdevice.
    fn fb_info(&self, index: u32) -> Result<u32> {
        let mut fb = [NV2080_CTRL_FB_INFO { index, data: 0 }];
        let mut p = NV2080_CTRL_FB_GET_INFO_PARAMS {
            fbInfoListSize: 1,
            _pad: 0,
            fbInfoList: fb.as_mut_ptr() as u64,
        };
        self.inner
            .api
            .control(self.inner.subdevice, NV2080_CTRL_CMD_FB_GET_INFO, &mut p)?;
        Ok(fb[0].data)
    }

    /// FB info L2 size, bus width and ECC (each best effort), the PCI location and ids from card
    /// info (subsystem ids from sysfs), the UUID from bring-up.
    pub(super) fn query_facts(&self) -> BackendFacts {
        let d = &self.details;
        let best = |index: u32, what: &str| match self.fb_info(index) {
            Ok(v) => Some(v),
            Err(e) => {
                debug!("FB_GET_INFO({what}) failed: {e}");
                None
            }
        };
        let bdf = pci_bus_id(d.pci_domain, d.pci_bus, d.pci_slot, 0);
        let sub = |f: &str| {
            read_sysfs(&format!("/sys/bus/pci/devices/{bdf}/{f}"))
                .and_then(|s| u16::from_str_radix(s.trim_start_matches("0x"), 16).ok())
        };
        BackendFacts {
            clock_khz: None,
            l2_cache_bytes: best(NV2080_CTRL_FB_INFO_INDEX_L2CACHE_SIZE, "L2CACHE_SIZE")
                .filter(|&v| v > 0)
                .map(u64::from),
            memory_bus_width_bits: best(NV2080_CTRL_FB_INFO_INDEX_BUS_WIDTH, "BUS_WIDTH")
                .filter(|&v| v > 0),
            ecc_enabled: best(NV2080_CTRL_FB_INFO_FBPA_ECC_ENABLED, "FBPA_ECC_ENABLED")
                .map(|v| v != 0),
            integrated: false,
            pci_location: Some([d.pci_domain, u32::from(d.pci_bus), u32::from(d.pci_slot), 0]),
            pci_ids: Some([
                NVIDIA_PCI_VENDOR_ID,
                d.pci_device_id,
                sub("subsystem_vendor").unwrap_or(0),
                sub("subsystem_device").unwrap_or(0),
            ]),
            uuid: Some(d.uuid),
            cluster_sm_groups: self.cluster_sm_groups(),
        }
    }

    /// SMs of each virtual GPC of the whole GPU's skyline (`NV2080_CTRL_CMD_GPU_GET_SKYLINE_INFO`,
    /// the entry whose `computeSizeFlag` is `NV2080_CTRL_GPU_PARTITION_FLAG_COMPUTE_SIZE_FULL`),
    /// see [`skyline_sm_groups`]. `None` where the branch lacks the control (before 580), RM
    /// refuses it (on a virtual GPU,
    /// `subdevice_ctrl_gpu_smc.c:subdeviceCtrlCmdGpuGetSkylineInfo_IMPL`), it has no such entry,
    /// or its groups do not add up to the enabled SMs.
    fn cluster_sm_groups(&self) -> Option<Vec<u32>> {
        let major = self.details.version.major;
        let skylines = match self.skylines(major) {
            Ok(s) => s,
            Err(e) => {
                debug!("GPU_GET_SKYLINE_INFO: {e}");
                return None;
            }
        };
        for (i, s) in skylines.iter().enumerate() {
            debug!(
                "skyline {i}: compute size {} max instances {} vGPC TPCs {:?} singletons {:#x}",
                s.compute_size, s.max_instances, s.vgpc_tpcs, s.singleton_mask
            );
        }
        let full = skylines
            .iter()
            .find(|s| s.compute_size == NV2080_CTRL_GPU_PARTITION_FLAG_COMPUTE_SIZE_FULL)?;
        let info = &self.info;
        let groups = skyline_sm_groups(full, info.sm_per_tpc);
        let sum: u32 = groups.iter().sum();
        if groups.is_empty() || sum != info.sm_count {
            debug!(
                "skyline groups {groups:?} hold {sum} SMs, the GPU {}: not used",
                info.sm_count
            );
            return None;
        }
        Some(groups)
    }

    /// The valid entries of `NV2080_CTRL_CMD_GPU_GET_SKYLINE_INFO` in the loaded branch's layout
    /// (580: 12 virtual GPCs per skyline; 590+: 32).
    fn skylines(&self, major: u32) -> Result<Vec<Skyline>> {
        if major < 580 {
            return Err(Error::new(
                Status::NotSupported,
                format!("not in driver branch {major} (new in 580)"),
            ));
        }
        // The two layouts have the same fields; only the virtual GPC array's length differs.
        macro_rules! read {
            ($params:ty) => {{
                let mut p = <$params>::default();
                self.inner.api.control(
                    self.inner.subdevice,
                    NV2080_CTRL_CMD_GPU_GET_SKYLINE_INFO,
                    &mut p,
                )?;
                let valid = (p.validEntries as usize).min(p.skylineTable.len());
                p.skylineTable[..valid]
                    .iter()
                    .map(|s| Skyline {
                        vgpc_tpcs: s
                            .skylineVgpcSize
                            .iter()
                            .copied()
                            .take_while(|&t| t != 0)
                            .collect(),
                        singleton_mask: s.singletonVgpcMask,
                        max_instances: s.maxInstances,
                        compute_size: s.computeSizeFlag,
                    })
                    .collect()
            }};
        }
        Ok(if major == 580 {
            read!(NV2080_CTRL_GPU_GET_SKYLINE_INFO_PARAMS)
        } else {
            read!(NV2080_CTRL_GPU_GET_SKYLINE_INFO_PARAMS_V590)
        })
    }

    /// FB info `HEAP_FREE` and `HEAP_SIZE` (KiB): the video memory allocations come from.
    pub(super) fn query_memory_info(&self) -> Result<(u64, u64)> {
        let free = self.fb_info(NV2080_CTRL_FB_INFO_INDEX_HEAP_FREE)?;
        let total = self.fb_info(NV2080_CTRL_FB_INFO_INDEX_HEAP_SIZE)?;
        if total == 0 {
            return Err(Error::new(
                Status::NotSupported,
                "tg_device_memory_info: FB_GET_INFO reports a heap of 0 KiB",
            ));
        }
        Ok((u64::from(free.min(total)) * 1024, u64::from(total) * 1024))
    }
}

/// `"0000:00:06.0"`: PCI domain, bus, device and function as `lspci -D` and CUDA print them.
pub fn pci_bus_id(domain: u32, bus: u8, device: u8, function: u8) -> String {
    format!("{domain:04x}:{bus:02x}:{device:02x}.{function:x}")
}

/// One GPU of the RM driver, as listed without bringing it up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RmGpuListing {
    /// Card-info position: the `N` of `"rm:N"`.
    pub ordinal: u32,
    /// Marketing name (`Model:` of `/proc/driver/nvidia/gpus/<bus id>/information`), or
    /// `NVIDIA GPU (PCI device 0x2335)` when that is unreadable.
    pub name: String,
    /// `NV0000_CTRL_CMD_GPU_GET_UUID_FROM_GPU_ID` (binary), else the `GPU UUID:` line of the same
    /// procfs file; zeros when neither answers (a GPU the driver has not attached yet and whose
    /// procfs entry shows no UUID).
    pub uuid: [u8; 16],
    pub pci_bus_id: String,
    pub pci_device_id: u16,
    /// Device node minor: `/dev/nvidia<minor>`.
    pub minor: u32,
}

/// Parse `GPU-8df2fb1b-8a63-901e-83b4-8be19bad4699` (or the bare 32 hex digits).
pub fn parse_gpu_uuid(s: &str) -> Option<[u8; 16]> {
    let hex: String = s
        .trim()
        .trim_start_matches("GPU-")
        .chars()
        .filter(|c| *c != '-')
        .collect();
    if hex.len() != 32 {
        return None;
    }
    let mut u = [0u8; 16];
    for (i, b) in u.iter_mut().enumerate() {
        *b = u8::from_str_radix(hex.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(u)
}

/// The value of the `key:` line of a procfs `information` file.
fn proc_field(info: &str, key: &str) -> Option<String> {
    info.lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|r| r.trim_start().strip_prefix(':'))
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
}

/// The GPUs of the RM driver in card-info order (the order of `"rm:N"`), without bringing any
/// up: `/dev/nvidiactl`, the version check, a root client, `NV_ESC_CARD_INFO`, and per GPU
/// `NV0000_CTRL_CMD_GPU_GET_UUID_FROM_GPU_ID` and its procfs `information` file. No device
/// node is opened, so a GPU the driver has not initialised stays so.
pub fn list_gpus(sys: Arc<dyn Sys>) -> Result<Vec<RmGpuListing>> {
    let ctl_fd = open_node(&*sys, "/dev/nvidiactl")?;
    let mut api = RmApi {
        sys: sys.clone(),
        ctl_fd,
        client: 0,
    };
    let r = (|| {
        let version = RmApi::query_version(&*sys, ctl_fd)?;
        check_driver_version(
            &version,
            read_sysfs("/sys/module/nvidia/version").as_deref(),
            read_sysfs("/sys/module/nvidia_uvm/version").as_deref(),
        )?;
        let cards = api.card_info()?;
        let client = match api.alloc_client() {
            Ok(c) => Some(c),
            Err(e) => {
                debug!("listing GPUs: no root client ({e}); UUIDs from procfs only");
                None
            }
        };
        let mut out = Vec::with_capacity(cards.len());
        for (i, c) in cards.iter().enumerate() {
            let p = c.pci_info;
            let bus_id = pci_bus_id(p.domain, p.bus, p.slot, p.function);
            let info =
                std::fs::read_to_string(format!("/proc/driver/nvidia/gpus/{bus_id}/information"))
                    .unwrap_or_default();
            let uuid = client
                .and_then(|client| {
                    let mut u = NV0000_CTRL_GPU_GET_UUID_FROM_GPU_ID_PARAMS {
                        gpuId: c.gpu_id,
                        flags: NV0000_CTRL_CMD_GPU_GET_UUID_FROM_GPU_ID_FLAGS_FORMAT_BINARY,
                        ..Default::default()
                    };
                    match api.control(client, NV0000_CTRL_CMD_GPU_GET_UUID_FROM_GPU_ID, &mut u) {
                        Ok(()) => u.gpuUuid[..16].try_into().ok(),
                        Err(e) => {
                            debug!("GET_UUID_FROM_GPU_ID(gpu {:#x}): {e}", c.gpu_id);
                            None
                        }
                    }
                })
                .or_else(|| proc_field(&info, "GPU UUID").and_then(|u| parse_gpu_uuid(&u)))
                .unwrap_or([0; 16]);
            let name = proc_field(&info, "Model")
                .unwrap_or_else(|| format!("NVIDIA GPU (PCI device {:#06x})", p.device_id));
            out.push(RmGpuListing {
                ordinal: i as u32,
                name,
                uuid,
                pci_bus_id: bus_id,
                pci_device_id: p.device_id,
                minor: c.minor_number,
            });
        }
        if let Some(client) = client {
            let _ = api.free(0, client);
        }
        Ok(out)
    })();
    let _ = sys.close(ctl_fd);
    r
}

/// One skyline of `NV2080_CTRL_CMD_GPU_GET_SKYLINE_INFO`, whatever the branch's layout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skyline {
    /// TPCs of each non-singleton virtual GPC (`skylineVgpcSize` up to its first 0).
    pub vgpc_tpcs: Vec<u8>,
    /// `singletonVgpcMask`.
    pub singleton_mask: u32,
    /// `maxInstances`.
    pub max_instances: u32,
    /// `computeSizeFlag`.
    pub compute_size: u32,
}

/// SMs of each virtual GPC of one skyline: the non-singleton ones (in order), then one TPC for
/// each singleton, each × `sm_per_tpc`. (On an H200 with driver 580 the whole GPU's skyline
/// is virtual GPCs of 4, 8, 8, 8, 8, 8, 9 and 9 TPCs and four singletons: groups of 8, 16, 16,
/// 16, 16, 16, 18, 18, 2, 2, 2 and 2 SMs, 132 in all.)
pub fn skyline_sm_groups(s: &Skyline, sm_per_tpc: u32) -> Vec<u32> {
    s.vgpc_tpcs
        .iter()
        .map(|&t| u32::from(t) * sm_per_tpc)
        .chain((0..s.singleton_mask.count_ones()).map(|_| sm_per_tpc))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_h200_skyline_gives_its_virtual_gpcs_and_singletons() {
        // What NV2080_CTRL_CMD_GPU_GET_SKYLINE_INFO returned for COMPUTE_SIZE_FULL on an H200
        // (driver 580.159.04).
        let full = Skyline {
            vgpc_tpcs: vec![4, 8, 8, 8, 8, 8, 9, 9],
            singleton_mask: 0xa48,
            max_instances: 1,
            compute_size: NV2080_CTRL_GPU_PARTITION_FLAG_COMPUTE_SIZE_FULL,
        };
        let g = skyline_sm_groups(&full, 2);
        assert_eq!(g, [8, 16, 16, 16, 16, 16, 18, 18, 2, 2, 2, 2]);
        assert_eq!(g.iter().sum::<u32>(), 132);
    }

    #[test]
    fn bus_ids_and_uuids_parse_as_the_driver_prints_them() {
        assert_eq!(pci_bus_id(0, 0, 6, 0), "0000:00:06.0");
        assert_eq!(pci_bus_id(0x1_0000, 0xc1, 0x1f, 7), "10000:c1:1f.7");
        let u = parse_gpu_uuid("GPU-8df2fb1b-8a63-901e-83b4-8be19bad4699").unwrap();
        assert_eq!(u[0], 0x8d);
        assert_eq!(u[15], 0x99);
        assert_eq!(parse_gpu_uuid("8df2fb1b8a63901e83b48be19bad4699"), Some(u));
        assert_eq!(
            parse_gpu_uuid("GPU-????????-????-????-????-????????????"),
            None
        );
        assert_eq!(parse_gpu_uuid("GPU-8df2"), None);
        let info = "Model: \t\t NVIDIA H200\nIRQ:   42\nGPU UUID: \t GPU-8df2fb1b-8a63-901e-83b4-8be19bad4699\n";
        assert_eq!(proc_field(info, "Model").as_deref(), Some("NVIDIA H200"));
        assert_eq!(
            proc_field(info, "GPU UUID").and_then(|u| parse_gpu_uuid(&u)),
            Some(u)
        );
        assert_eq!(proc_field(info, "Bus Location"), None);
    }
}
