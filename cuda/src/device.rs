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

/// One device of this process: listed at the first call, opened on first use and kept open.
pub struct Dev {
    pub ordinal: i32,
    /// What the library lists for it (None: listing failed; opening reports why).
    listing: Option<core::DeviceListing>,
    opened: OnceLock<Result<core::Device, (CUresult, String)>>,
    /// The primary context (created by the first retain) and its retain count.
    pub primary: Mutex<(Option<&'static crate::context::Context>, u32)>,
    /// Flags for the primary context (`cuDevicePrimaryCtxSetFlags`).
    pub primary_flags: std::sync::atomic::AtomicU32,
    /// Bytes of graph allocations alive now, and the most alive at once since the last reset
    /// (`cuDeviceGetGraphMemAttribute`).
    pub graph_mem: Mutex<(u64, u64)>,
}

impl Dev {
    /// The opened device.
    pub fn core(&self) -> R<&core::Device> {
        match self.opened.get_or_init(|| {
            let spec = self.listing.as_ref().map(|l| l.spec.as_str());
            core::Device::open(spec).map_err(|e| (crate::error::code_of(&e), e.message))
        }) {
            Ok(d) => Ok(d),
            Err((c, m)) => Err(Fail(
                *c,
                Some(format!("opening device {}: {m}", self.ordinal)),
            )),
        }
    }

    /// The listing (name, UUID, PCI bus id) without opening the device.
    fn listing(&self) -> R<&core::DeviceListing> {
        match &self.listing {
            Some(l) => Ok(l),
            None => Err(self.core().err().unwrap_or_else(|| {
                Fail(
                    CUDA_ERROR_UNKNOWN,
                    Some(format!("device {} was not listed", self.ordinal)),
                )
            })),
        }
    }
}

/// The devices, as libtegragpu lists them (`core::list_devices`): `TEGRAGPU_DEVICE` restricts
/// the list (`rm`: every GPU of the desktop driver, `rm:N` the N-th, `nvgpu`, `emu`); unset, the
/// Jetson's GPU or the desktop driver's GPUs, else the emulated Orin.
pub fn devices() -> &'static [Dev] {
    static D: OnceLock<Vec<Dev>> = OnceLock::new();
    D.get_or_init(|| {
        let mk = |ordinal: i32, listing: Option<core::DeviceListing>| Dev {
            ordinal,
            listing,
            opened: OnceLock::new(),
            primary: Mutex::new((None, 0)),
            primary_flags: Default::default(),
            graph_mem: Mutex::new((0, 0)),
        };
        let named = core::device_from_env().ok().flatten().is_some();
        let list = match core::list_devices() {
            Ok(l) if l.is_empty() && !named => {
                core::list_devices_for(Some("emu")).unwrap_or_default()
            }
            Ok(l) => l,
            Err(e) => {
                crate::error::log(
                    tegragpu::log::Level::Warn,
                    format_args!("listing the devices: {e}"),
                );
                // One device, whose open reports the error.
                return vec![mk(0, None)];
            }
        };
        list.into_iter()
            .enumerate()
            .map(|(i, l)| mk(i as i32, Some(l)))
            .collect()
    })
}

/// `cuDeviceGetPCIBusId`'s string, `domain:bus:device.function` in hexadecimal.
pub fn pci_bus_id(d: &Dev) -> R<String> {
    let l = d.listing()?;
    let mut parts = l
        .pci_bus_id
        .split([':', '.'])
        .map(|x| u32::from_str_radix(x, 16).unwrap_or(0));
    let mut next = || parts.next().unwrap_or(0);
    let (dom, bus, devno, func) = (next(), next(), next(), next());
    Ok(format!("{dom:04x}:{bus:02x}:{devno:02x}.{func:x}"))
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
        let n = product_name(dev(device)?)?;
        let bytes = n.as_bytes();
        let k = bytes.len().min(len as usize - 1);
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), name as *mut u8, k);
        *name.add(k) = 0;
        Ok(())
    })
}

/// The name `cuDeviceGetName` gives: the desktop driver's product name, "Orin" for the Jetson's
/// GPU (and the emulated Orin).
pub fn product_name(d: &Dev) -> R<String> {
    let l = d.listing()?;
    Ok(match l.backend {
        core::BackendKind::Nvgpu => "Orin".to_string(),
        core::BackendKind::Rm => l.name.clone(),
    })
}

/// Device `ordinal`'s UUID and PCI domain, bus and device numbers (what the CUDA runtime's
/// integrity check covers, export_table.rs).
pub fn hash_facts(ordinal: CUdevice) -> R<([u8; 16], i32, i32, i32)> {
    let mut u = CUuuid { bytes: [0; 16] };
    // SAFETY: `u` is a valid place for the UUID.
    unsafe { uuid_of(ordinal, &mut u) }?;
    let core = dev(ordinal)?.core()?;
    let a = |n| crate::attributes::attribute(core, n).unwrap_or(0);
    Ok((u.bytes, a(50), a(33), a(34)))
}

/// The number of devices.
pub fn count() -> R<i32> {
    check_init()?;
    Ok(devices().len() as i32)
}

unsafe fn uuid_of(device: CUdevice, out_uuid: *mut CUuuid) -> R {
    let u = out(out_uuid, "uuid")?;
    let l = dev(device)?.listing()?;
    u.bytes = l.uuid;
    if l.uuid == [0; 16] {
        // A GPU the driver has not initialised lists no UUID: a stable one from its PCI
        // location and name.
        let mut h: u64 = 0xcbf29ce484222325;
        for b in l.name.bytes().chain(l.pci_bus_id.bytes()) {
            h ^= b as u64;
            h = h.wrapping_mul(0x100000001b3);
        }
        u.bytes[..8].copy_from_slice(&h.to_le_bytes());
        u.bytes[8..].copy_from_slice(&(h.rotate_left(17) ^ 0x9e3779b97f4a7c15).to_le_bytes());
    }
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
        match crate::attributes::attribute(dev(device)?.core()?, attrib) {
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
pub unsafe extern "C" fn cuDeviceGetPCIBusId(
    pci: *mut c_char,
    len: i32,
    device: CUdevice,
) -> CUresult {
    guard("cuDeviceGetPCIBusId", || {
        if pci.is_null() || len <= 0 {
            return Err(invalid("pciBusId is NULL or len is not positive"));
        }
        let s = pci_bus_id(dev(device)?)?;
        let b = s.as_bytes();
        let k = b.len().min(len as usize - 1);
        std::ptr::copy_nonoverlapping(b.as_ptr(), pci as *mut u8, k);
        *pci.add(k) = 0;
        Ok(())
    })
}
