//! Listing GPUs without opening them: [`device_count`], [`list_devices`].

use super::device::device_from_env;
use crate::backend::{choose_device, BackendKind, DeviceKind};
use crate::error::{Result, Status};
use std::sync::Arc;

/// One GPU as listed without opening it ([`list_devices`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceListing {
    /// The name [`super::Device::open`] reports for it: `"NVIDIA H200"` (RM: the driver's
    /// model name), `"ga10b"` (nvgpu and the emulated Orin: the chip name).
    pub name: String,
    /// The GPU's UUID. RM: as the driver reports it (zeros for a GPU the driver has not
    /// initialised and whose procfs entry shows none); nvgpu, which reports none: built from
    /// the driver's per-device identifier, chip and revision (stable for one board).
    pub uuid: [u8; 16],
    /// `"0000:00:06.0"` (domain:bus:device.function); `"0000:00:00.0"` for the integrated GPU of
    /// a Jetson, which is not on PCI.
    pub pci_bus_id: String,
    /// The kernel driver it is driven through.
    pub backend: BackendKind,
    /// True for the in-process emulated Orin.
    pub emulated: bool,
    /// The spec that opens exactly this GPU: `"rm:0"`, `"rm:1"`, ..., `"nvgpu"`, `"emu"`.
    pub spec: String,
}

/// How many GPUs [`list_devices`] lists.
pub fn device_count() -> Result<u32> {
    Ok(list_devices()?.len() as u32)
}

/// The GPUs a program that names no device can use, without opening any (no channel, no
/// memory; RM: not even the GPUs' device nodes). `TEGRAGPU_DEVICE` restricts the list as it
/// picks the default device: `"emu"` lists the emulated Orin, `"nvgpu"` the Jetson's GPU,
/// `"rm"` every GPU of the desktop driver, `"rm:N"` only its N-th (none when there is no N-th);
/// unset or empty: the GPUs of this machine (the Jetson's GPU where `/dev/nvgpu/igpu0/ctrl`
/// exists, else every GPU of the desktop driver, else none). An unknown `TEGRAGPU_DEVICE` is
/// `InvalidArgument`, as it is for [`super::Device::open`]. The order is the order of
/// `"rm:N"`, so `list_devices()[i].spec` opens the i-th GPU.
pub fn list_devices() -> Result<Vec<DeviceListing>> {
    list_devices_for(None)
}

/// [`list_devices`] for an explicit spec (`None` or `""`: as [`list_devices`]): `"rm"` lists
/// every GPU of the desktop driver, `"rm:N"` only the N-th, `"nvgpu"` and `"emu"` one GPU.
pub fn list_devices_for(spec: Option<&str>) -> Result<Vec<DeviceListing>> {
    crate::log::init();
    let spec = spec.filter(|s| !s.is_empty());
    let env = match spec {
        None => device_from_env()?,
        Some(_) => None,
    };
    let named = spec.or(env.as_deref());
    let choice = match choose_device(spec, env.as_deref()) {
        Ok(c) => c,
        Err(e) if e.status == Status::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    match choice.kind {
        DeviceKind::Emu => Ok(vec![nvgpu_listing(
            &crate::emu::kernel::ga10b_characteristics(),
            true,
        )]),
        DeviceKind::Nvgpu => {
            let chars = crate::backend::nvgpu::read_characteristics(Arc::new(crate::os::LinuxSys))?;
            Ok(vec![nvgpu_listing(&chars, false)])
        }
        DeviceKind::Rm => {
            let one = named.is_some_and(|s| s.starts_with("rm:"));
            let gpus = crate::backend::rm::list_gpus(Arc::new(crate::os::LinuxSys))?;
            Ok(gpus
                .into_iter()
                .filter(|g| !one || g.ordinal == choice.index)
                .map(|g| DeviceListing {
                    name: g.name,
                    uuid: g.uuid,
                    pci_bus_id: g.pci_bus_id,
                    backend: BackendKind::Rm,
                    emulated: false,
                    spec: format!("rm:{}", g.ordinal),
                })
                .collect())
        }
    }
}

fn nvgpu_listing(
    c: &crate::sys::nvgpu::nvgpu_gpu_characteristics,
    emulated: bool,
) -> DeviceListing {
    DeviceListing {
        name: c.chipname_str(),
        uuid: crate::backend::nvgpu::uuid_from_characteristics(c),
        pci_bus_id: "0000:00:00.0".to_string(),
        backend: BackendKind::Nvgpu,
        emulated,
        spec: if emulated { "emu" } else { "nvgpu" }.to_string(),
    }
}
