//! `cuInit`, the driver version, devices (enumeration, name, UUID, memory, attributes).

use crate::error::{guard, invalid, Fail, R};
use crate::types::*;
use parking_lot::Mutex;
use std::ffi::c_char;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;
use tegragpu::core;

/// The CUDA version this library reports (`cuDriverGetVersion`): 13.0.
pub const DRIVER_VERSION: i32 = 13000;

static INITIALIZED: AtomicBool = AtomicBool::new(false);

/// One device of this process: opened on first use and kept open.
pub struct Dev {
    pub ordinal: i32,
    /// The spec `core::Device::open` takes (None: its own choice).
    spec: Option<String>,
    opened: OnceLock<Result<core::Device, (CUresult, String)>>,
    /// The primary context (created by the first retain) and its retain count.
    pub primary: Mutex<(Option<&'static crate::context::Context>, u32)>,
    /// Flags for the primary context (`cuDevicePrimaryCtxSetFlags`).
    pub primary_flags: std::sync::atomic::AtomicU32,
    /// The RM device node's minor number (`/dev/nvidia<minor>`), for an RM device.
    rm_minor: Option<u32>,
    pci: OnceLock<Option<Pci>>,
}

/// What the NVIDIA kernel driver publishes about a GPU (procfs and sysfs): PCI location and
/// identifiers, and its UUID.
#[derive(Clone, Copy, Debug, Default)]
pub struct Pci {
    pub domain: u32,
    pub bus: u32,
    pub device: u32,
    pub function: u32,
    /// `(device id << 16) | vendor id`.
    pub id: u32,
    /// `(subsystem device id << 16) | subsystem vendor id`.
    pub subsystem: u32,
    pub uuid: Option<[u8; 16]>,
}

impl Dev {
    /// The PCI facts of an RM device (None elsewhere, or where the driver does not publish them).
    pub fn pci(&self) -> Option<Pci> {
        *self.pci.get_or_init(|| {
            let minor = self.rm_minor?;
            if self.core().ok()?.info().backend != core::BackendKind::Rm {
                return None;
            }
            read_pci(minor)
        })
    }
}

/// `/proc/driver/nvidia/gpus/*/information` of the GPU with device minor `minor`, and its sysfs
/// PCI identifiers.
fn read_pci(minor: u32) -> Option<Pci> {
    for e in std::fs::read_dir("/proc/driver/nvidia/gpus").ok()? {
        let dir = e.ok()?.path();
        let Ok(text) = std::fs::read_to_string(dir.join("information")) else {
            continue;
        };
        let field = |name: &str| {
            text.lines().find_map(|l| {
                l.strip_prefix(name)
                    .map(|v| v.trim().trim_start_matches(':').trim().to_string())
            })
        };
        if field("Device Minor").and_then(|v| v.parse::<u32>().ok()) != Some(minor) {
            continue;
        }
        let loc = field("Bus Location")?;
        let (dom, rest) = loc.split_once(':')?;
        let (bus, rest) = rest.split_once(':')?;
        let (dev, func) = rest.split_once('.')?;
        let hex = |s: &str| u32::from_str_radix(s.trim(), 16).ok();
        let uuid = field("GPU UUID").and_then(|u| {
            let h: String = u
                .trim_start_matches("GPU-")
                .chars()
                .filter(|c| c.is_ascii_hexdigit())
                .collect();
            (h.len() == 32).then(|| {
                let mut b = [0u8; 16];
                for (i, x) in b.iter_mut().enumerate() {
                    *x = u8::from_str_radix(&h[2 * i..2 * i + 2], 16).unwrap_or(0);
                }
                b
            })
        });
        let sys = format!("/sys/bus/pci/devices/{}", loc.to_ascii_lowercase());
        let rd = |f: &str| {
            std::fs::read_to_string(format!("{sys}/{f}"))
                .ok()
                .and_then(|v| u32::from_str_radix(v.trim().trim_start_matches("0x"), 16).ok())
                .unwrap_or(0)
        };
        return Some(Pci {
            domain: hex(dom)?,
            bus: hex(bus)?,
            device: hex(dev)?,
            function: hex(func)?,
            id: (rd("device") << 16) | rd("vendor"),
            subsystem: (rd("subsystem_device") << 16) | rd("subsystem_vendor"),
            uuid,
        });
    }
    None
}

impl Dev {
    /// The opened device.
    pub fn core(&self) -> R<&core::Device> {
        match self.opened.get_or_init(|| {
            core::Device::open(self.spec.as_deref())
                .map_err(|e| (crate::error::code_of(&e), e.message))
        }) {
            Ok(d) => Ok(d),
            Err((c, m)) => Err(Fail(
                *c,
                Some(format!("opening device {}: {m}", self.ordinal)),
            )),
        }
    }
}

/// The devices: `TEGRAGPU_DEVICE` names one device when set; otherwise the RM driver's GPUs
/// (`/dev/nvidia0`, `/dev/nvidia1`, ...), or the Jetson's GPU, or the emulated Orin.
pub fn devices() -> &'static [Dev] {
    static D: OnceLock<Vec<Dev>> = OnceLock::new();
    D.get_or_init(|| {
        let mk = |ordinal: i32, spec: Option<String>, rm_minor: Option<u32>| Dev {
            ordinal,
            spec,
            opened: OnceLock::new(),
            primary: Mutex::new((None, 0)),
            primary_flags: Default::default(),
            rm_minor,
            pci: OnceLock::new(),
        };
        let env = std::env::var("TEGRAGPU_DEVICE")
            .ok()
            .filter(|s| !s.is_empty());
        if let Some(e) = env {
            let minor = match e.as_str() {
                "rm" => Some(0),
                s => s.strip_prefix("rm:").and_then(|n| n.parse().ok()),
            };
            return vec![mk(0, None, minor)];
        }
        if std::path::Path::new("/dev/nvgpu/igpu0/ctrl").exists() {
            return vec![mk(0, Some("nvgpu".into()), None)];
        }
        if std::path::Path::new("/dev/nvidiactl").exists() {
            let mut n = 0;
            while std::path::Path::new(&format!("/dev/nvidia{n}")).exists() {
                n += 1;
            }
            if n > 0 {
                return (0..n)
                    .map(|i| mk(i, Some(format!("rm:{i}")), Some(i as u32)))
                    .collect();
            }
        }
        vec![mk(0, Some("emu".into()), None)]
    })
}

/// Check `cuInit` was called.
#[inline(always)]
pub fn check_init() -> R {
    if INITIALIZED.load(Ordering::Acquire) {
        Ok(())
    } else {
        Err(Fail(CUDA_ERROR_NOT_INITIALIZED, None))
    }
}

/// The device `ordinal`.
pub fn dev(ordinal: CUdevice) -> R<&'static Dev> {
    check_init()?;
    devices()
        .get(usize::try_from(ordinal).map_err(|_| bad_dev(ordinal))?)
        .ok_or_else(|| bad_dev(ordinal))
}

fn bad_dev(ordinal: CUdevice) -> Fail {
    Fail(
        CUDA_ERROR_INVALID_DEVICE,
        Some(format!(
            "device {ordinal} does not exist ({} device(s))",
            devices().len()
        )),
    )
}

pub unsafe fn out<'a, T>(p: *mut T, what: &str) -> R<&'a mut T> {
    p.as_mut().ok_or_else(|| invalid(format!("{what} is NULL")))
}

#[no_mangle]
pub unsafe extern "C" fn cuInit(flags: u32) -> CUresult {
    guard("cuInit", || {
        if flags != 0 {
            return Err(invalid(format!("flags {flags:#x}: must be 0")));
        }
        tegragpu::log::init();
        if devices().is_empty() {
            return Err(Fail(CUDA_ERROR_NO_DEVICE, None));
        }
        INITIALIZED.store(true, Ordering::Release);
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuDriverGetVersion(version: *mut i32) -> CUresult {
    guard("cuDriverGetVersion", || {
        *out(version, "driverVersion")? = DRIVER_VERSION;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuDeviceGetCount(count: *mut i32) -> CUresult {
    guard("cuDeviceGetCount", || {
        let c = out(count, "count")?;
        check_init()?;
        *c = devices().len() as i32;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuDeviceGet(device: *mut CUdevice, ordinal: i32) -> CUresult {
    guard("cuDeviceGet", || {
        let d = out(device, "device")?;
        dev(ordinal)?;
        *d = ordinal;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuDeviceGetName(
    name: *mut c_char,
    len: i32,
    device: CUdevice,
) -> CUresult {
    guard("cuDeviceGetName", || {
        if name.is_null() || len <= 0 {
            return Err(invalid(format!("name {name:?}, len {len}")));
        }
        let d = dev(device)?.core()?;
        let n = product_name(d);
        let bytes = n.as_bytes();
        let k = bytes.len().min(len as usize - 1);
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), name as *mut u8, k);
        *name.add(k) = 0;
        Ok(())
    })
}

/// The name `cuDeviceGetName` gives: the RM product name, or the Orin's.
pub fn product_name(d: &core::Device) -> String {
    let i = d.info();
    match i.backend {
        core::BackendKind::Nvgpu => "Orin".to_string(),
        core::BackendKind::Rm => i.name.clone(),
    }
}

unsafe fn uuid_of(device: CUdevice, out_uuid: *mut CUuuid) -> R {
    let u = out(out_uuid, "uuid")?;
    let dv = dev(device)?;
    if let Some(b) = dv.pci().and_then(|p| p.uuid) {
        u.bytes = b;
        return Ok(());
    }
    let d = dv.core()?;
    // A stable identifier derived from what the library knows of the device.
    let i = d.info();
    let mut h: u64 = 0xcbf29ce484222325;
    for b in i
        .name
        .bytes()
        .chain(device.to_le_bytes())
        .chain(i.arch.to_le_bytes())
    {
        h ^= b as u64;
        h = h.wrapping_mul(0x100000001b3);
    }
    let mut bytes = [0u8; 16];
    bytes[..8].copy_from_slice(&h.to_le_bytes());
    bytes[8..].copy_from_slice(&(h.rotate_left(17) ^ 0x9e3779b97f4a7c15).to_le_bytes());
    u.bytes = bytes;
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn cuDeviceGetUuid(uuid: *mut CUuuid, device: CUdevice) -> CUresult {
    guard("cuDeviceGetUuid", || uuid_of(device, uuid))
}

#[no_mangle]
pub unsafe extern "C" fn cuDeviceGetUuid_v2(uuid: *mut CUuuid, device: CUdevice) -> CUresult {
    guard("cuDeviceGetUuid_v2", || uuid_of(device, uuid))
}

#[no_mangle]
pub unsafe extern "C" fn cuDeviceTotalMem_v2(bytes: *mut usize, device: CUdevice) -> CUresult {
    guard("cuDeviceTotalMem_v2", || {
        let b = out(bytes, "bytes")?;
        *b = dev(device)?.core()?.info().memory_bytes as usize;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuDeviceComputeCapability(
    major: *mut i32,
    minor: *mut i32,
    device: CUdevice,
) -> CUresult {
    guard("cuDeviceComputeCapability", || {
        let (a, b) = (out(major, "major")?, out(minor, "minor")?);
        let i = dev(device)?.core()?.info();
        *a = i.sm_major as i32;
        *b = i.sm_minor as i32;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuDeviceGetAttribute(
    pi: *mut i32,
    attrib: i32,
    device: CUdevice,
) -> CUresult {
    guard("cuDeviceGetAttribute", || {
        let p = out(pi, "pi")?;
        let dv = dev(device)?;
        match crate::attributes::attribute(dv.core()?, attrib, dv.pci()) {
            Some(v) => {
                *p = v;
                Ok(())
            }
            None => Err(invalid(format!(
                "attribute {attrib} is not a device attribute"
            ))),
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuDeviceCanAccessPeer(
    can: *mut i32,
    device: CUdevice,
    peer: CUdevice,
) -> CUresult {
    guard("cuDeviceCanAccessPeer", || {
        let c = out(can, "canAccessPeer")?;
        dev(device)?;
        dev(peer)?;
        if device == peer {
            return Err(Fail(
                CUDA_ERROR_INVALID_DEVICE,
                Some("a device is not its own peer".into()),
            ));
        }
        *c = 0;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuDeviceGetPCIBusId(
    pci: *mut c_char,
    len: i32,
    device: CUdevice,
) -> CUresult {
    guard("cuDeviceGetPCIBusId", || {
        if pci.is_null() || len <= 0 {
            return Err(invalid("pciBusId is NULL or len is not positive"));
        }
        let dv = dev(device)?;
        dv.core()?;
        let p = dv.pci().unwrap_or_default();
        let s = format!(
            "{:04x}:{:02x}:{:02x}.{:x}",
            p.domain, p.bus, p.device, p.function
        );
        let b = s.as_bytes();
        let k = b.len().min(len as usize - 1);
        std::ptr::copy_nonoverlapping(b.as_ptr(), pci as *mut u8, k);
        *pci.add(k) = 0;
        Ok(())
    })
}
