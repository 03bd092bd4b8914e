//! Device attributes and listing without opening: the emulated Orin's values, an H200 described
//! by a stand-in backend (its driver facts) checked against what NVIDIA's driver reports for the
//! H200, and the listing of the emulated Orin.

mod common;

use common::device;
use std::collections::HashSet;
use std::os::fd::RawFd;
use tegragpu::backend::{
    Allocation, Backend, BackendFacts, BackendKind, Channel, DeviceInfo, Engine, MemFlags,
};
use tegragpu::core::{list_devices_for, Device, DeviceAttribute};
use tegragpu::{Error, Result, Status};

#[test]
fn attribute_values_names_and_numbers_are_consistent() {
    let mut names = HashSet::new();
    for (i, a) in DeviceAttribute::ALL.iter().enumerate() {
        assert_eq!(*a as u32, i as u32 + 1, "{a:?}: values are 1.. in order");
        assert_eq!(DeviceAttribute::from_u32(*a as u32), Some(*a));
        assert!(names.insert(a.name()), "duplicate name {}", a.name());
        assert!(a
            .name()
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'));
    }
    assert_eq!(DeviceAttribute::from_u32(0), None);
    assert_eq!(
        DeviceAttribute::from_u32(DeviceAttribute::ALL.len() as u32 + 1),
        None
    );
}

#[test]
fn emulated_orin_attributes() {
    let dev = device();
    if !dev.is_emulated() {
        return; // the values below are the emulated Orin's
    }
    let a = |x| dev.attribute(x).unwrap();
    use DeviceAttribute::*;
    let info = dev.info();
    assert_eq!(a(SmCount), i64::from(info.sm_count));
    assert_eq!(
        (a(ComputeCapabilityMajor), a(ComputeCapabilityMinor)),
        (8, 7)
    );
    assert_eq!(a(MaxThreadsPerSm), 1536); // 48 warps
    assert_eq!(a(MaxBlocksPerSm), 16);
    assert_eq!(a(MaxSharedMemoryPerSm), 164 * 1024);
    assert_eq!(a(MaxSharedMemoryPerBlockOptin), 163 * 1024);
    assert_eq!(a(MaxSharedMemoryPerBlock), 48 * 1024);
    // From GET_CHARACTERISTICS: max_freq 1.3 GHz, a 4 MiB L2.
    assert_eq!(a(ClockRateKhz), 1_300_000);
    assert_eq!(a(L2CacheBytes), 4 << 20);
    assert_eq!(a(Integrated), 1);
    assert_eq!(a(TotalMemoryBytes), info.memory_bytes as i64);
    assert_eq!(a(ClusterLaunch), 0);
    assert_eq!(a(VirtualAddressBits), 40);
    // Not on PCI: 0, as NVIDIA's driver reports for a Jetson.
    for x in [PciDomainId, PciBusId, PciDeviceId, PciVendorDeviceId] {
        assert_eq!(a(x), 0, "{x:?}");
    }
    // Nothing knows the Orin's memory clock: refused, naming the attribute.
    let e = dev.attribute(MemoryClockRateKhz).unwrap_err();
    assert_eq!(e.status, Status::NotSupported);
    assert!(e.message.contains("memory_clock_rate_khz"), "{e}");
    // Every attribute either has a value or is NotSupported.
    for x in DeviceAttribute::ALL {
        match dev.attribute(x) {
            Ok(v) => assert!(v >= 0, "{x:?} = {v}"),
            Err(e) => assert_eq!(e.status, Status::NotSupported, "{x:?}: {e}"),
        }
    }
}

/// A backend that describes an H200 as RM does and allocates host memory (enough for a device
/// to be built on it; it runs nothing).
struct H200Facts;

impl Backend for H200Facts {
    fn info(&self) -> &DeviceInfo {
        static INFO: std::sync::OnceLock<DeviceInfo> = std::sync::OnceLock::new();
        INFO.get_or_init(|| DeviceInfo {
            name: "NVIDIA H200".into(),
            backend: BackendKind::Rm,
            emulated: false,
            arch: 0x180,
            sm_major: 9,
            sm_minor: 0,
            sm_count: 132,
            max_gpc_count: 8,
            max_tpc_per_gpc: 9,
            sm_per_tpc: 2,
            warps_per_sm: 64,
            memory_bytes: 150_109_880_320,
            va_bits: 49,
            compute_class: 0xCBC0,
            copy_class: 0xC8B5,
            gpfifo_class: 0xC86F,
            driver_version: "580".into(),
            shared_window: 0x7294_0000_0000,
            local_window: 0x7293_0000_0000,
            unified_addresses: true,
        })
    }
    fn alloc(&self, size: u64, _flags: MemFlags) -> Result<Allocation> {
        let v = vec![0u8; size as usize].into_boxed_slice();
        let p = Box::into_raw(v) as *mut u8;
        Ok(Allocation {
            gpu_va: p as u64,
            cpu: p,
            size,
            id: 0,
        })
    }
    fn free(&self, a: &Allocation) -> Result<()> {
        // SAFETY: made by alloc above from a boxed slice of a.size bytes.
        drop(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(a.cpu, a.size as usize)) });
        Ok(())
    }
    fn export_dmabuf(&self, _a: &Allocation) -> Result<RawFd> {
        Err(Error::new(Status::NotSupported, "stand-in backend"))
    }
    fn create_channel(&self, _e: Engine, _n: u32, _idle: bool) -> Result<Box<dyn Channel>> {
        Err(Error::new(Status::NotSupported, "stand-in backend"))
    }
    fn facts(&self) -> BackendFacts {
        // What RM's card info and sysfs say for the H200 at 0000:00:06.0.
        BackendFacts {
            pci_location: Some([0, 0, 6, 0]),
            pci_ids: Some([0x10DE, 0x2335, 0x10DE, 0x18BF]),
            uuid: Some([0x8d; 16]),
            // NV2080_CTRL_CMD_GPU_GET_SKYLINE_INFO's COMPUTE_SIZE_FULL skyline: virtual GPCs of
            // 4, 8, 8, 8, 8, 8, 9, 9 TPCs and four singletons, 2 SMs per TPC.
            cluster_sm_groups: Some(vec![8, 16, 16, 16, 16, 16, 18, 18, 2, 2, 2, 2]),
            ..Default::default()
        }
    }
}

#[test]
fn h200_attributes_match_nvidias_driver() {
    let dev = Device::from_backend(Box::new(H200Facts)).unwrap();
    use DeviceAttribute::*;
    // (attribute, what cuDeviceGetAttribute returns on an H200 with driver 580)
    let want: &[(DeviceAttribute, i64)] = &[
        (MaxThreadsPerBlock, 1024),
        (MaxBlockDimX, 1024),
        (MaxBlockDimY, 1024),
        (MaxBlockDimZ, 64),
        (MaxGridDimX, 2_147_483_647),
        (MaxGridDimY, 65535),
        (MaxGridDimZ, 65535),
        (MaxSharedMemoryPerBlock, 49152),
        (TotalConstantMemory, 65536),
        (WarpSize, 32),
        (MaxPitch, 2_147_483_647),
        (MaxRegistersPerBlock, 65536),
        (ClockRateKhz, 1_980_000),
        (TextureAlignment, 512),
        (SmCount, 132),
        (KernelExecTimeout, 0),
        (Integrated, 0),
        (CanMapHostMemory, 1),
        (ComputeMode, 0),
        (ConcurrentKernels, 1),
        (EccEnabled, 1),
        (PciBusId, 0),
        (PciDeviceId, 6),
        (MemoryClockRateKhz, 3_201_000),
        (MemoryBusWidthBits, 6016),
        (L2CacheBytes, 62_914_560),
        (MaxThreadsPerSm, 2048),
        (AsyncEngineCount, 3),
        (UnifiedAddressing, 1),
        (PciDomainId, 0),
        (TexturePitchAlignment, 32),
        (MaxTexture1dLinearWidth, 268_435_456),
        (MaxTexture2dLinearWidth, 131_072),
        (MaxTexture2dLinearHeight, 65000),
        (MaxTexture2dLinearPitch, 2_097_120),
        (ComputeCapabilityMajor, 9),
        (ComputeCapabilityMinor, 0),
        (GlobalL1CacheSupported, 1),
        (LocalL1CacheSupported, 1),
        (MaxSharedMemoryPerSm, 233_472),
        (MaxRegistersPerSm, 65536),
        (CooperativeLaunch, 1),
        (MaxSharedMemoryPerBlockOptin, 232_448),
        (MaxBlocksPerSm, 32),
        (ReservedSharedMemoryPerBlock, 1024),
        (ClusterLaunch, 1),
        (PciVendorDeviceId, 590_680_286),
        (PciSubsystemId, 415_174_878),
        (TotalMemoryBytes, 150_109_880_320),
    ];
    for &(a, v) in want {
        assert_eq!(dev.attribute(a).unwrap(), v, "{a:?}");
    }
    // The stand-in reports no free memory: NotSupported, not a made-up number.
    assert_eq!(dev.memory_info().unwrap_err().status, Status::NotSupported);
}

#[test]
fn the_emulated_orin_is_listed_without_opening_and_its_spec_opens_it() {
    let list = list_devices_for(Some("emu")).unwrap();
    assert_eq!(list.len(), 1);
    let l = &list[0];
    assert_eq!(l.spec, "emu");
    assert!(l.emulated);
    assert_eq!(l.backend, BackendKind::Nvgpu);
    assert_eq!(l.pci_bus_id, "0000:00:00.0");
    // per_device_identifier 0, arch | impl 0x17b, rev 0xa1.
    let mut uuid = [0u8; 16];
    uuid[8..12].copy_from_slice(&0x17bu32.to_le_bytes());
    uuid[12..].copy_from_slice(&0xa1u32.to_le_bytes());
    assert_eq!(l.uuid, uuid);
    let dev = Device::open(Some(&l.spec)).unwrap();
    assert_eq!(dev.info().name, l.name);
    assert!(dev.is_emulated());
    // A spec that names nothing is refused as Device::open refuses it.
    let e = list_devices_for(Some("gpu0")).unwrap_err();
    assert_eq!(e.status, Status::InvalidArgument);
    assert!(e.message.contains("gpu0"), "{e}");
}

#[test]
fn h200_cluster_occupancy_matches_nvidias_driver() {
    let dev = Device::from_backend(Box::new(H200Facts)).unwrap();
    // cuOccupancyMaxActiveClusters on an H200 (driver 580.159.04) for clusters of 1 to 16 blocks
    // (non-portable sizes allowed), with 8, 4, 2 and 1 blocks per multiprocessor (a kernel of
    // 128, 512 and 1024 threads, and 1024 threads with 150 KiB of dynamic shared memory).
    let nvidia: &[(u32, [u64; 16])] = &[
        (
            8,
            [
                1056, 528, 327, 248, 193, 163, 139, 124, 102, 88, 81, 74, 67, 65, 58, 58,
            ],
        ),
        (
            4,
            [
                528, 264, 163, 124, 94, 79, 69, 62, 51, 44, 37, 37, 30, 30, 28, 28,
            ],
        ),
        (
            2,
            [
                264, 132, 79, 62, 47, 39, 32, 30, 23, 21, 16, 16, 14, 14, 14, 14,
            ],
        ),
        (1, [132, 66, 39, 30, 22, 17, 15, 15, 9, 7, 7, 7, 7, 7, 7, 7]),
    ];
    for (per_sm, want) in nvidia {
        for (i, &w) in want.iter().enumerate() {
            let c = i as u32 + 1;
            assert_eq!(
                dev.max_active_clusters(*per_sm, c),
                w,
                "{per_sm} blocks per SM, clusters of {c}"
            );
        }
    }
}
