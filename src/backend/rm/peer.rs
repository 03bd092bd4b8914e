//! Peer access between two RM devices.
//!
//! * **Capability:** `NV0000_CTRL_CMD_SYSTEM_GET_P2P_CAPS_V2` on the root client with the two
//!   card-info GPU ids. Peer access needs both `READS` and `WRITES` (UVM refuses a pair that has
//!   less); the link is NVLink (`NVLINK`), C2C, or PCIe (`PCI`); atomics where `ATOMICS` is set.
//!   A refusal gives the per-capability statuses in words, the two GPUs, and, where a GPU has a
//!   fabric probe (NVSwitch systems), its state: without a configured fabric such GPUs have no
//!   peer path at all.
//! * **Enabling:** both devices must be in one UVM address space ([`super::uvm_space`]; devices
//!   of different GPUs opened through `Device::open` are). UVM enables NVLink pairs itself when
//!   the second GPU registers; a PCIe pair needs `UVM_ENABLE_PEER_ACCESS` once per address
//!   space (sent here for every pair not yet recorded in the space; `NV_ERR_INVALID_DEVICE`
//!   means a pair UVM enables itself or enabled already; `UVM_DISABLE_PEER_ACCESS` when either
//!   device is dropped, before its GPU is unregistered).
//! * **Mapping:** `UVM_MAP_EXTERNAL_ALLOCATION` of the owner's memory handle at its own GPU
//!   address, for the peer's UUID (read-write, atomic where the pair has atomics). The range is
//!   the one the owner created for its own mapping, so `UVM_FREE` when the buffer is freed
//!   removes the peer mappings too. Copy engines and kernels then use the plain address: the
//!   PTE UVM writes carries the peer aperture.

use super::state::{Inner, MemKind};
use super::RmBackend;
use crate::backend::{Allocation, Backend, PeerInfo, PeerLink};
use crate::error::{Error, Result, Status};
use crate::log::debug;
use crate::sys::rm::*;
use std::fmt::Write as _;

/// `NV0000_CTRL_CMD_SYSTEM_GET_P2P_CAPS_V2` for one ordered pair of GPUs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RmP2pCaps {
    /// `NV0000_CTRL_SYSTEM_GET_P2P_CAPS_*` bits.
    pub caps: u32,
    /// `NV0000_P2P_CAPS_STATUS_*` per `NV0000_CTRL_P2P_CAPS_INDEX_*`.
    pub status: [u8; NV0000_CTRL_P2P_CAPS_INDEX_TABLE_SIZE],
    /// Logical copy engine masks RM recommends for peer reads and writes (NVLink only).
    pub optimal_read_ces: u32,
    pub optimal_write_ces: u32,
    /// The peer id the first GPU uses for the second, and the reverse (INVALID_PEER: none).
    pub peer_id: u32,
    pub peer_id_back: u32,
}

impl RmP2pCaps {
    /// Both `READS` and `WRITES`: what UVM requires of a peer pair.
    pub fn can_access(&self) -> bool {
        let rw = NV0000_CTRL_SYSTEM_GET_P2P_CAPS_READS_SUPPORTED
            | NV0000_CTRL_SYSTEM_GET_P2P_CAPS_WRITES_SUPPORTED;
        self.caps & rw == rw
    }

    pub fn link(&self) -> PeerLink {
        if !self.can_access() {
            PeerLink::None
        } else if self.caps & NV0000_CTRL_SYSTEM_GET_P2P_CAPS_NVLINK_SUPPORTED != 0 {
            PeerLink::NvLink
        } else if self.caps & NV0000_CTRL_SYSTEM_GET_P2P_CAPS_C2C_SUPPORTED != 0 {
            PeerLink::C2c
        } else if self.caps & NV0000_CTRL_SYSTEM_GET_P2P_CAPS_PCI_SUPPORTED != 0 {
            PeerLink::Pcie
        } else {
            PeerLink::Other
        }
    }

    pub fn atomics(&self) -> bool {
        self.can_access() && self.caps & NV0000_CTRL_SYSTEM_GET_P2P_CAPS_ATOMICS_SUPPORTED != 0
    }

    /// `0x5b (WRITES|READS|NVLINK|ATOMICS|PCI)`.
    pub fn caps_text(&self) -> String {
        let names: Vec<&str> = NV0000_CTRL_SYSTEM_GET_P2P_CAPS_NAMES
            .iter()
            .filter(|(bit, _)| self.caps & bit != 0)
            .map(|(_, n)| *n)
            .collect();
        format!(
            "{:#x} ({})",
            self.caps,
            if names.is_empty() {
                "none".to_string()
            } else {
                names.join("|")
            }
        )
    }

    /// `READ=OK WRITE=OK NVLINK=OK ...`.
    pub fn status_text(&self) -> String {
        NV0000_CTRL_P2P_CAPS_INDEX_NAMES
            .iter()
            .zip(self.status)
            .map(|(n, s)| format!("{n}={}", p2p_caps_status_name(s)))
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// Everything the driver said, on one line.
    pub fn detail(&self) -> String {
        let peer = |p: u32| {
            if p == NV0000_CTRL_SYSTEM_GET_P2P_CAPS_INVALID_PEER {
                "none".to_string()
            } else {
                p.to_string()
            }
        };
        format!(
            "GET_P2P_CAPS_V2: p2pCaps {}; status {}; peer ids {} / {}; optimal CEs read {:#x} write {:#x}",
            self.caps_text(),
            self.status_text(),
            peer(self.peer_id),
            peer(self.peer_id_back),
            self.optimal_read_ces,
            self.optimal_write_ces
        )
    }
}

/// What one `p2pCapsStatus` value means, for a refusal.
fn status_meaning(s: u8) -> &'static str {
    match s {
        NV0000_P2P_CAPS_STATUS_OK => "supported",
        NV0000_P2P_CAPS_STATUS_CHIPSET_NOT_SUPPORTED => {
            "the chipset (the CPU's PCIe root complex) does not support it"
        }
        NV0000_P2P_CAPS_STATUS_GPU_NOT_SUPPORTED => "the GPU does not support it",
        NV0000_P2P_CAPS_STATUS_IOH_TOPOLOGY_NOT_SUPPORTED => {
            "the GPUs sit under different PCIe root complexes (IOH topology)"
        }
        NV0000_P2P_CAPS_STATUS_DISABLED_BY_REGKEY => "disabled by a driver registry key",
        NV0000_P2P_CAPS_STATUS_NOT_SUPPORTED => {
            "not supported between these GPUs (no NVLink and no PCIe peer path; in a virtual machine the hypervisor decides)"
        }
        _ => "an unknown status",
    }
}

/// `NV2080_CTRL_CMD_GET_GPU_FABRIC_PROBE_INFO` of one GPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FabricProbe {
    /// `NV2080_CTRL_GPU_FABRIC_PROBE_STATE_*`.
    pub state: u8,
    /// NV_STATUS of a completed probe.
    pub status: u32,
    pub clique_id: u32,
    /// `NV2080_CTRL_GPU_FABRIC_HEALTH_SUMMARY_*` (580+).
    pub health_summary: Option<u8>,
}

impl FabricProbe {
    /// The GPU has an NVSwitch fabric whose probe has not completed successfully.
    pub fn blocks_peers(&self) -> bool {
        self.state != NV2080_CTRL_GPU_FABRIC_PROBE_STATE_UNSUPPORTED
            && !(self.state == NV2080_CTRL_GPU_FABRIC_PROBE_STATE_COMPLETE && self.status == NV_OK)
    }

    pub fn text(&self) -> String {
        let state = match self.state {
            NV2080_CTRL_GPU_FABRIC_PROBE_STATE_UNSUPPORTED => "UNSUPPORTED (no NVSwitch fabric)",
            NV2080_CTRL_GPU_FABRIC_PROBE_STATE_NOT_STARTED => "NOT_STARTED",
            NV2080_CTRL_GPU_FABRIC_PROBE_STATE_IN_PROGRESS => "IN_PROGRESS",
            NV2080_CTRL_GPU_FABRIC_PROBE_STATE_COMPLETE => "COMPLETE",
            _ => "?",
        };
        let mut t = format!("fabric probe {state}");
        if self.state == NV2080_CTRL_GPU_FABRIC_PROBE_STATE_COMPLETE {
            let _ = write!(
                t,
                ", status {} ({:#x}), clique {}",
                nv_status_name(self.status),
                self.status,
                self.clique_id
            );
            if let Some(h) = self.health_summary {
                let h = match h {
                    NV2080_CTRL_GPU_FABRIC_HEALTH_SUMMARY_NOT_SUPPORTED => "NOT_SUPPORTED",
                    NV2080_CTRL_GPU_FABRIC_HEALTH_SUMMARY_HEALTHY => "HEALTHY",
                    NV2080_CTRL_GPU_FABRIC_HEALTH_SUMMARY_UNHEALTHY => "UNHEALTHY",
                    NV2080_CTRL_GPU_FABRIC_HEALTH_SUMMARY_LIMITED_CAPACITY => "LIMITED_CAPACITY",
                    _ => "?",
                };
                let _ = write!(t, ", health {h}");
            }
        }
        t
    }
}

/// `GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`, as `nvidia-smi -L` prints a UUID.
pub fn uuid_text(u: &[u8; 16]) -> String {
    let h: String = u.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "GPU-{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

impl RmBackend {
    /// `NVIDIA H100 80GB HBM3 (PCI 0000:1b:00.0, GPU-…)`.
    pub fn gpu_label(&self) -> String {
        let d = &self.details;
        format!(
            "{} (PCI {:04x}:{:02x}:{:02x}.0, {})",
            self.info.name,
            d.pci_domain,
            d.pci_bus,
            d.pci_slot,
            uuid_text(&d.uuid)
        )
    }

    /// The UVM address space the device is in, in words (`UVM address space #1 (shared)`).
    pub fn uvm_space_label(&self) -> String {
        self.inner
            .uvm
            .as_ref()
            .map(|m| m.space.label())
            .unwrap_or_else(|| "no UVM address space".into())
    }

    /// The driver's P2P capabilities from this GPU to `peer`'s.
    pub fn p2p_caps(&self, peer: &RmBackend) -> Result<RmP2pCaps> {
        let mut p = Box::<NV0000_CTRL_SYSTEM_GET_P2P_CAPS_V2_PARAMS>::default();
        p.gpuIds[0] = self.details.gpu_id;
        p.gpuIds[1] = peer.details.gpu_id;
        p.gpuCount = 2;
        self.inner
            .api
            .control(
                self.inner.api.client,
                NV0000_CTRL_CMD_SYSTEM_GET_P2P_CAPS_V2,
                &mut *p,
            )
            .map_err(|mut e| {
                e.message = format!(
                    "asking the driver for the peer capabilities of {} and {}: {}",
                    self.gpu_label(),
                    peer.gpu_label(),
                    e.message
                );
                e
            })?;
        Ok(RmP2pCaps {
            caps: p.p2pCaps,
            status: p.p2pCapsStatus,
            optimal_read_ces: p.p2pOptimalReadCEs,
            optimal_write_ces: p.p2pOptimalWriteCEs,
            peer_id: p.busPeerIds[1],
            peer_id_back: p.busPeerIds[2],
        })
    }

    /// The GPU's NVSwitch fabric probe.
    pub fn fabric_probe(&self) -> Result<FabricProbe> {
        let mut p = NV2080_CTRL_CMD_GET_GPU_FABRIC_PROBE_INFO_PARAMS::default();
        let size = fabric_probe_params_size(self.inner.branch.major());
        self.inner.api.control_sized(
            self.inner.subdevice,
            NV2080_CTRL_CMD_GET_GPU_FABRIC_PROBE_INFO,
            &mut p,
            size,
        )?;
        Ok(FabricProbe {
            state: p.state,
            status: p.status,
            clique_id: p.fabricCliqueId,
            health_summary: (size >= 56).then_some(p.fabricHealthSummary),
        })
    }

    /// Whether this device can access `peer`'s memory, with the driver's report and the reason.
    pub fn rm_peer_info(&self, peer: &RmBackend) -> Result<PeerInfo> {
        let (a, b) = (self.gpu_label(), peer.gpu_label());
        if self.details.uuid == peer.details.uuid {
            return Ok(PeerInfo::refused(format!(
                "both devices are {a} (the GPU is open twice in this process); peer access is between two different GPUs"
            )));
        }
        let caps = self.p2p_caps(peer)?;
        let mut detail = caps.detail();
        let probes = [(self, &a), (peer, &b)].map(|(d, label)| match d.fabric_probe() {
            Ok(f) => {
                let _ = write!(detail, "; {label}: {}", f.text());
                Some(f)
            }
            Err(e) => {
                debug!("fabric probe of {label}: {e}");
                None
            }
        });
        let mut info = PeerInfo {
            can_access: caps.can_access(),
            link: caps.link(),
            atomics: caps.atomics(),
            detail,
            reason: String::new(),
            optimal_write_ces: caps.optimal_write_ces,
            optimal_read_ces: caps.optimal_read_ces,
        };
        if !info.can_access {
            let st = |i: usize| caps.status[i];
            let (r, w) = (
                st(NV0000_CTRL_P2P_CAPS_INDEX_READ),
                st(NV0000_CTRL_P2P_CAPS_INDEX_WRITE),
            );
            let mut reason = format!(
                "the driver reports no peer path from {a} to {b}: peer reads: {}, peer writes: {}",
                status_meaning(r),
                status_meaning(w)
            );
            for (probe, label) in probes.iter().zip([&a, &b]) {
                if let Some(f) = probe.filter(|f| f.blocks_peers()) {
                    let _ = write!(
                        reason,
                        "; {label} is on an NVSwitch fabric that is not ready ({}): NVLink peers through NVSwitch need nvidia-fabricmanager running",
                        f.text()
                    );
                }
            }
            let _ = write!(reason, " [{}]", caps.detail());
            info.reason = reason;
            return Ok(info);
        }
        if !self.same_uvm_space(peer) {
            info.can_access = false;
            info.reason = format!(
                "{a} ({}) and {b} ({}) are in different UVM address spaces of this process: a GPU opened a second time gets an address space of its own; peer access is between the first devices opened of each GPU",
                self.uvm_space_label(),
                peer.uvm_space_label()
            );
        }
        Ok(info)
    }

    fn same_uvm_space(&self, peer: &RmBackend) -> bool {
        match (&self.inner.uvm, &peer.inner.uvm) {
            (Some(x), Some(y)) => x.space.is_shared() && std::sync::Arc::ptr_eq(&x.space, &y.space),
            _ => false,
        }
    }

    /// The driver-side part of enabling access from this GPU to `peer`'s memory.
    pub fn rm_enable_peer(&self, peer: &RmBackend) -> Result<PeerInfo> {
        let info = self.rm_peer_info(peer)?;
        if !info.can_access {
            return Err(Error::new(
                Status::NotSupported,
                format!(
                    "tg_device_enable_peer_access: {} cannot access the memory of {}: {}",
                    self.gpu_label(),
                    peer.gpu_label(),
                    info.reason
                ),
            ));
        }
        let Some(m) = &self.inner.uvm else {
            return Err(Error::new(
                Status::Internal,
                "RM device without a UVM space",
            ));
        };
        let (ua, ub) = (self.inner.uuid, peer.inner.uuid);
        let mut pairs = m.space.pcie_peers.lock();
        if pairs
            .iter()
            .any(|&(x, y)| (x, y) == (ua, ub) || (x, y) == (ub, ua))
        {
            return Ok(info);
        }
        let mut p = UVM_ENABLE_PEER_ACCESS_PARAMS {
            gpuUuidA: ua,
            gpuUuidB: ub,
            rmStatus: 0,
        };
        let r = super::rmapi::uvm_ioctl(
            self.inner.sys(),
            self.inner.uvm_fd,
            UVM_ENABLE_PEER_ACCESS,
            &mut p,
            |p| p.rmStatus,
            &|| "UVM_ENABLE_PEER_ACCESS".into(),
        );
        match r {
            Ok(()) => {
                debug!(
                    "UVM_ENABLE_PEER_ACCESS {} <-> {}: enabled ({} link)",
                    self.gpu_label(),
                    peer.gpu_label(),
                    info.link.name()
                );
                pairs.push((ua, ub));
                Ok(info)
            }
            // A pair UVM enables itself when the second GPU registers (NVLink, SMC), or one
            // enabled already: the mappings tell.
            Err(_) if p.rmStatus == NV_ERR_INVALID_DEVICE => {
                debug!(
                    "UVM_ENABLE_PEER_ACCESS {} <-> {}: NV_ERR_INVALID_DEVICE (a pair UVM enables itself, or enabled already)",
                    self.gpu_label(),
                    peer.gpu_label()
                );
                Ok(info)
            }
            Err(e) => Err(Error::new(
                e.status,
                format!(
                    "tg_device_enable_peer_access: {} -> {} ({} link): {} [{}]",
                    self.gpu_label(),
                    peer.gpu_label(),
                    info.link.name(),
                    e.message,
                    info.detail
                ),
            )),
        }
    }

    /// Map this device's allocation into `peer`'s GPU at its own address.
    pub fn rm_map_peer(&self, alloc: &Allocation, peer: &RmBackend, atomics: bool) -> Result<()> {
        let (handle, kind) = self.record_of(alloc)?;
        if !self.same_uvm_space(peer) {
            return Err(Error::new(
                Status::Internal,
                format!(
                    "mapping a buffer of {} into {}: the devices are in different UVM address spaces",
                    self.gpu_label(),
                    peer.gpu_label()
                ),
            ));
        }
        let mut m = Box::<UVM_MAP_EXTERNAL_ALLOCATION_PARAMS>::default();
        m.base = alloc.gpu_va;
        m.length = alloc.size;
        m.offset = 0;
        m.perGpuAttributes[0] = UvmGpuMappingAttributes {
            gpuUuid: peer.inner.uuid,
            gpuMappingType: if atomics && matches!(kind, MemKind::Vidmem | MemKind::ImportedVidmem)
            {
                UvmGpuMappingTypeReadWriteAtomic
            } else {
                UvmGpuMappingTypeReadWrite
            },
            ..Default::default()
        };
        m.gpuAttributesCount = 1;
        m.rmCtrlFd = self.inner.api.ctl_fd;
        m.hClient = self.inner.api.client;
        m.hMemory = handle;
        let (va, size) = (alloc.gpu_va, alloc.size);
        super::rmapi::uvm_ioctl(
            self.inner.sys(),
            self.inner.uvm_fd,
            UVM_MAP_EXTERNAL_ALLOCATION,
            &mut *m,
            |p| p.rmStatus,
            &|| {
                format!(
                    "UVM_MAP_EXTERNAL_ALLOCATION(base={va:#x}, length={size:#x}, hMemory={handle:#x}, peer GPU {})",
                    uuid_text(&peer.inner.uuid.uuid)
                )
            },
        )
        .map_err(|mut e| {
            e.message = format!(
                "mapping a {kind:?} buffer of {} into {}: {}",
                self.gpu_label(),
                peer.gpu_label(),
                e.message
            );
            e
        })
    }

    /// Remove the mapping of this device's allocation from `peer`'s GPU.
    pub fn rm_unmap_peer(&self, alloc: &Allocation, peer: &RmBackend) -> Result<()> {
        self.record_of(alloc)?;
        let mut p = UVM_UNMAP_EXTERNAL_PARAMS {
            base: alloc.gpu_va,
            length: alloc.size,
            gpuUuid: peer.inner.uuid,
            ..Default::default()
        };
        let va = alloc.gpu_va;
        super::rmapi::uvm_ioctl(
            self.inner.sys(),
            self.inner.uvm_fd,
            UVM_UNMAP_EXTERNAL,
            &mut p,
            |p| p.rmStatus,
            &|| format!("UVM_UNMAP_EXTERNAL(base={va:#x})"),
        )
    }

    /// The RM memory handle and kind of a live allocation.
    fn record_of(&self, alloc: &Allocation) -> Result<(u32, MemKind)> {
        let m = self.inner.mem.lock();
        match m.get(&alloc.id) {
            Some(r)
                if r.va == alloc.gpu_va
                    && r.size == alloc.size
                    && r.uvm_mapped
                    && r.kind != MemKind::Notifier =>
            {
                Ok((r.handle, r.kind))
            }
            _ => Err(Error::new(
                Status::InvalidHandle,
                format!(
                    "peer mapping: no GPU-mapped allocation id {} at {:#x} (size {:#x})",
                    alloc.id, alloc.gpu_va, alloc.size
                ),
            )),
        }
    }
}

/// `peer` as an RM device, or the refusal naming both.
fn rm_peer<'a>(
    me: &RmBackend,
    peer: &'a dyn Backend,
) -> std::result::Result<&'a RmBackend, String> {
    peer.as_any()
        .and_then(|a| a.downcast_ref::<RmBackend>())
        .ok_or_else(|| crate::backend::peer::no_peer_backend(&me.info, &me.gpu_label(), peer))
}

impl RmBackend {
    pub(super) fn peer_info_dyn(&self, peer: &dyn Backend) -> Result<PeerInfo> {
        match rm_peer(self, peer) {
            Ok(p) => self.rm_peer_info(p),
            Err(reason) => Ok(PeerInfo::refused(reason)),
        }
    }

    pub(super) fn enable_peer_dyn(&self, peer: &dyn Backend) -> Result<PeerInfo> {
        let p = rm_peer(self, peer).map_err(|r| Error::new(Status::NotSupported, r))?;
        self.rm_enable_peer(p)
    }

    pub(super) fn map_peer_dyn(
        &self,
        alloc: &Allocation,
        peer: &dyn Backend,
        atomics: bool,
    ) -> Result<()> {
        let p = rm_peer(self, peer).map_err(|r| Error::new(Status::NotSupported, r))?;
        self.rm_map_peer(alloc, p, atomics)
    }

    pub(super) fn unmap_peer_dyn(&self, alloc: &Allocation, peer: &dyn Backend) -> Result<()> {
        let p = rm_peer(self, peer).map_err(|r| Error::new(Status::NotSupported, r))?;
        self.rm_unmap_peer(alloc, p)
    }
}

impl Inner {
    /// Before this GPU is unregistered: disable the PCIe peer access it has in its address
    /// space (UVM would disable it with the unregistration; this keeps the space's record
    /// right for a later device of the same GPU).
    pub(super) fn leave_peers(&self) {
        let Some(m) = &self.uvm else { return };
        let mut pairs = m.space.pcie_peers.lock();
        pairs.retain(|&(a, b)| {
            if a != self.uuid && b != self.uuid {
                return true;
            }
            let mut p = UVM_DISABLE_PEER_ACCESS_PARAMS {
                gpuUuidA: a,
                gpuUuidB: b,
                rmStatus: 0,
            };
            let _ = super::rmapi::uvm_ioctl(
                self.sys(),
                self.uvm_fd,
                UVM_DISABLE_PEER_ACCESS,
                &mut p,
                |p| p.rmStatus,
                &|| "UVM_DISABLE_PEER_ACCESS".into(),
            );
            false
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caps(c: u32) -> RmP2pCaps {
        RmP2pCaps {
            caps: c,
            status: [NV0000_P2P_CAPS_STATUS_NOT_SUPPORTED; 9],
            optimal_read_ces: 0,
            optimal_write_ces: 0,
            peer_id: NV0000_CTRL_SYSTEM_GET_P2P_CAPS_INVALID_PEER,
            peer_id_back: 0,
        }
    }

    #[test]
    fn reads_and_writes_are_both_required() {
        assert!(!caps(NV0000_CTRL_SYSTEM_GET_P2P_CAPS_READS_SUPPORTED).can_access());
        assert!(!caps(NV0000_CTRL_SYSTEM_GET_P2P_CAPS_WRITES_SUPPORTED).can_access());
        assert_eq!(caps(0b11).link(), PeerLink::Other);
        assert_eq!(caps(0b11 | (1 << 3) | (1 << 6)).link(), PeerLink::NvLink);
        assert_eq!(caps(0b11 | (1 << 6) | (1 << 13)).link(), PeerLink::Pcie);
        assert!(caps(0b11 | (1 << 4)).atomics());
        assert!(!caps(1 << 4).atomics());
        assert_eq!(caps(0).link(), PeerLink::None);
    }

    #[test]
    fn texts_name_bits_statuses_and_peer_ids() {
        let c = caps(0x5b);
        assert_eq!(c.caps_text(), "0x5b (WRITES|READS|NVLINK|ATOMICS|PCI)");
        assert_eq!(caps(0).caps_text(), "0x0 (none)");
        let mut s = caps(0);
        s.status[NV0000_CTRL_P2P_CAPS_INDEX_READ] = NV0000_P2P_CAPS_STATUS_OK;
        s.status[NV0000_CTRL_P2P_CAPS_INDEX_WRITE] =
            NV0000_P2P_CAPS_STATUS_IOH_TOPOLOGY_NOT_SUPPORTED;
        let t = s.status_text();
        assert!(
            t.starts_with("READ=OK WRITE=IOH_TOPOLOGY_NOT_SUPPORTED NVLINK=NOT_SUPPORTED"),
            "{t}"
        );
        assert!(s.detail().contains("peer ids none / 0"), "{}", s.detail());
    }

    #[test]
    fn fabric_probe_blocks_until_complete_and_ok() {
        let f = |state, status| FabricProbe {
            state,
            status,
            clique_id: 0,
            health_summary: None,
        };
        assert!(!f(NV2080_CTRL_GPU_FABRIC_PROBE_STATE_UNSUPPORTED, 0).blocks_peers());
        assert!(f(NV2080_CTRL_GPU_FABRIC_PROBE_STATE_IN_PROGRESS, 0).blocks_peers());
        assert!(f(
            NV2080_CTRL_GPU_FABRIC_PROBE_STATE_COMPLETE,
            NV_ERR_NOT_SUPPORTED
        )
        .blocks_peers());
        assert!(!f(NV2080_CTRL_GPU_FABRIC_PROBE_STATE_COMPLETE, NV_OK).blocks_peers());
    }

    #[test]
    fn uuid_text_is_nvidia_smi_style() {
        let u: [u8; 16] = core::array::from_fn(|i| i as u8 * 17);
        assert_eq!(uuid_text(&u), "GPU-00112233-4455-6677-8899-aabbccddeeff");
    }
}
