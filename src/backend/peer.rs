//! What a backend says about peer access between two of its devices ([`PeerInfo`]), and the
//! refusal the backends without peer access give.

use super::{Backend, BackendKind, DeviceInfo};

/// How one GPU reaches another's memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PeerLink {
    /// No path: peer access is not possible.
    None,
    /// NVLink (direct, through a bridge, or through NVSwitch).
    NvLink,
    /// PCIe peer-to-peer (the driver's mailbox or BAR1 path).
    Pcie,
    /// A chip-to-chip link.
    C2c,
    /// The driver reports reads and writes over a path it names no link for.
    Other,
}

impl PeerLink {
    /// `"NVLink"`, `"PCIe"`, ...
    pub fn name(self) -> &'static str {
        match self {
            PeerLink::None => "none",
            PeerLink::NvLink => "NVLink",
            PeerLink::Pcie => "PCIe",
            PeerLink::C2c => "C2C",
            PeerLink::Other => "other",
        }
    }
}

/// Whether one device can access the memory of another, and why (not).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerInfo {
    /// Kernels and copy engines of the device can read and write the peer's memory once peer
    /// access is enabled.
    pub can_access: bool,
    pub link: PeerLink,
    /// Atomic operations on the peer's memory are supported.
    pub atomics: bool,
    /// What the driver reported, in words (RM: the `p2pCaps` bits, the per-capability statuses,
    /// the peer ids, and the copy engines it recommends), for diagnostics. Empty where the
    /// backend asks no driver.
    pub detail: String,
    /// Why the device cannot access the peer's memory; empty when it can.
    pub reason: String,
    /// Logical copy engines (bit n: LCE n) the driver recommends for copies that write to,
    /// and that read from, the peer's memory (RM over NVLink); 0 where it names none.
    pub optimal_write_ces: u32,
    pub optimal_read_ces: u32,
}

impl PeerInfo {
    /// No peer access, for `reason`.
    pub fn refused(reason: impl Into<String>) -> PeerInfo {
        PeerInfo {
            can_access: false,
            link: PeerLink::None,
            atomics: false,
            detail: String::new(),
            reason: reason.into(),
            optimal_write_ces: 0,
            optimal_read_ces: 0,
        }
    }

    /// One line: `peer access over NVLink (atomics supported)` or `no peer access: <reason>`.
    pub fn summary(&self) -> String {
        if self.can_access {
            format!(
                "peer access over {} (atomics {})",
                self.link.name(),
                if self.atomics {
                    "supported"
                } else {
                    "not supported"
                }
            )
        } else {
            format!("no peer access: {}", self.reason)
        }
    }
}

/// The refusal of a backend without peer access (nvgpu: Jetson Orin has one integrated GPU).
/// `dev` is the device asked (its info and [`Backend::label`]).
pub(crate) fn no_peer_backend(dev: &DeviceInfo, dev_label: &str, peer: &dyn Backend) -> String {
    let one = |i: &DeviceInfo, label: &str| {
        match i.backend {
        BackendKind::Nvgpu => format!(
            "{label} is {}a Jetson integrated GPU driven through nvgpu, the only GPU of its machine",
            if i.emulated { "the emulated Orin, " } else { "" }
        ),
        BackendKind::Rm => format!("{label} is a GPU of the desktop driver (RM)"),
    }
    };
    let peer_label = peer.label();
    let other = if peer.info().backend == dev.backend && peer_label == dev_label {
        "so is the other device".to_string()
    } else {
        one(peer.info(), &peer_label)
    };
    format!(
        "peer access needs two GPUs of the desktop NVIDIA driver (the RM backend); {}, and {other}",
        one(dev, dev_label)
    )
}
