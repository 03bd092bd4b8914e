//! Devices and contexts.

use crate::*;
use std::ffi::{c_char, c_void, CStr};
use std::ptr::null_mut;

#[test]
fn device_queries() {
    let mut v = 0;
    check(cu!(cuDriverGetVersion(&mut v): *mut i32), "version");
    assert_eq!(v, 13000);
    check(cu!(cuInit(0): u32), "cuInit");
    let mut n = 0;
    check(cu!(cuDeviceGetCount(&mut n): *mut i32), "count");
    assert!(n >= 1);
    let mut d = -1;
    check(cu!(cuDeviceGet(&mut d, 0): *mut i32, i32), "get");
    assert_eq!(d, 0);
    assert_eq!(cu!(cuDeviceGet(&mut d, n): *mut i32, i32), 101);
    let mut name = [0 as c_char; 256];
    check(
        cu!(cuDeviceGetName(name.as_mut_ptr(), 256, 0): *mut c_char, i32, i32),
        "name",
    );
    assert!(!unsafe { CStr::from_ptr(name.as_ptr()) }
        .to_bytes()
        .is_empty());
    let mut mem = 0usize;
    check(
        cu!(cuDeviceTotalMem_v2(&mut mem, 0): *mut usize, i32),
        "total mem",
    );
    assert!(mem > 0);
    let (a, b) = sm();
    let (mut ma, mut mi) = (0, 0);
    check(
        cu!(cuDeviceComputeCapability(&mut ma, &mut mi, 0): *mut i32, *mut i32, i32),
        "cc",
    );
    assert_eq!((ma, mi), (a, b));
    if std::env::var_os("TEGRAGPU_DEVICE").is_none()
        && !std::path::Path::new("/dev/nvidiactl").exists()
    {
        assert_eq!((a, b), (8, 7), "the emulated Orin is sm_87");
    }
    let mut x = 0;
    for attr in 1..=147 {
        check(
            cu!(cuDeviceGetAttribute(&mut x, attr, 0): *mut i32, i32, i32),
            &format!("attribute {attr}"),
        );
    }
    assert_eq!(
        cu!(cuDeviceGetAttribute(&mut x, 0, 0): *mut i32, i32, i32),
        1
    );
    assert_eq!(
        cu!(cuDeviceGetAttribute(&mut x, 148, 0): *mut i32, i32, i32),
        1
    );
    check(
        cu!(cuDeviceGetAttribute(&mut x, 16, 0): *mut i32, i32, i32),
        "sm count",
    );
    assert!(x > 0);
    let mut u = [0u8; 16];
    check(
        cu!(cuDeviceGetUuid_v2(u.as_mut_ptr() as *mut c_void, 0): *mut c_void, i32),
        "uuid",
    );
    assert_ne!(u, [0u8; 16]);
}

#[test]
fn context_stack_is_per_thread() {
    let c1 = setup();
    let mut cur = null_mut();
    check(cu!(cuCtxGetCurrent(&mut cur): *mut *mut c_void), "get");
    assert_eq!(cur, c1);
    let mut c2 = null_mut();
    check(
        cu!(cuCtxCreate_v2(&mut c2, 0, 0): *mut *mut c_void, u32, i32),
        "create 2",
    );
    check(cu!(cuCtxGetCurrent(&mut cur): *mut *mut c_void), "get");
    assert_eq!(cur, c2);
    let mut popped = null_mut();
    check(
        cu!(cuCtxPopCurrent_v2(&mut popped): *mut *mut c_void),
        "pop",
    );
    assert_eq!(popped, c2);
    check(cu!(cuCtxGetCurrent(&mut cur): *mut *mut c_void), "get");
    assert_eq!(cur, c1);
    check(cu!(cuCtxPushCurrent_v2(c2): *mut c_void), "push");
    check(cu!(cuCtxGetCurrent(&mut cur): *mut *mut c_void), "get");
    assert_eq!(cur, c2);
    let c2u = c2 as usize;
    std::thread::spawn(move || {
        let mut cur: *mut c_void = std::ptr::without_provenance_mut(1);
        check(
            cu!(cuCtxGetCurrent(&mut cur): *mut *mut c_void),
            "get in thread",
        );
        assert!(cur.is_null(), "a new thread has no current context");
        let mut d = 0u64;
        assert_eq!(cu!(cuMemAlloc_v2(&mut d, 16): *mut u64, usize), 201);
        check(cu!(cuCtxSetCurrent(c2u as *mut c_void): *mut c_void), "set");
        check(cu!(cuCtxGetCurrent(&mut cur): *mut *mut c_void), "get");
        assert_eq!(cur as usize, c2u);
        let mut dev = -1;
        check(cu!(cuCtxGetDevice(&mut dev): *mut i32), "device");
        assert_eq!(dev, 0);
    })
    .join()
    .unwrap();
    check(cu!(cuCtxDestroy_v2(c2): *mut c_void), "destroy 2");
    check(cu!(cuCtxGetCurrent(&mut cur): *mut *mut c_void), "get");
    assert_eq!(cur, c1);
    // Primary context: retained twice is the same context.
    let (mut p1, mut p2) = (null_mut(), null_mut());
    check(
        cu!(cuDevicePrimaryCtxRetain(&mut p1, 0): *mut *mut c_void, i32),
        "retain",
    );
    check(
        cu!(cuDevicePrimaryCtxRetain(&mut p2, 0): *mut *mut c_void, i32),
        "retain",
    );
    assert_eq!(p1, p2);
    let (mut flags, mut active) = (0u32, 0);
    check(
        cu!(cuDevicePrimaryCtxGetState(0, &mut flags, &mut active): i32, *mut u32, *mut i32),
        "state",
    );
    assert_eq!(active, 1);
    check(cu!(cuDevicePrimaryCtxRelease_v2(0): i32), "release");
    check(cu!(cuDevicePrimaryCtxRelease_v2(0): i32), "release");
    check(cu!(cuCtxSynchronize(): ), "sync");
}

/// The device libtegragpu lists first (as the library's device 0), opened through its Rust API
/// in this process (the library under test has its own copy of libtegragpu).
fn core_device_0() -> (tegragpu::core::DeviceListing, tegragpu::core::Device) {
    let named = tegragpu::core::device_from_env().unwrap().is_some();
    let mut list = tegragpu::core::list_devices().unwrap();
    if list.is_empty() && !named {
        list = tegragpu::core::list_devices_for(Some("emu")).unwrap();
    }
    let l = list.into_iter().next().expect("a device");
    let d = tegragpu::core::Device::open(Some(&l.spec)).unwrap();
    (l, d)
}

/// cuDeviceGetAttribute answers what libtegragpu's `Device::attribute` answers wherever both
/// have the attribute; the name, UUID and PCI bus id are the listing's.
#[test]
fn devices_agree_with_libtegragpu() {
    use tegragpu::core::DeviceAttribute as A;
    check(cu!(cuInit(0): u32), "cuInit");
    let (listing, d) = core_device_0();
    let get = |attr: i32| {
        let mut v = i32::MIN;
        check(
            cu!(cuDeviceGetAttribute(&mut v, attr, 0): *mut i32, i32, i32),
            &format!("attribute {attr}"),
        );
        v
    };
    let pairs = [
        (1, A::MaxThreadsPerBlock),
        (8, A::MaxSharedMemoryPerBlock),
        (9, A::TotalConstantMemory),
        (13, A::ClockRateKhz),
        (16, A::SmCount),
        (18, A::Integrated),
        (32, A::EccEnabled),
        (33, A::PciBusId),
        (34, A::PciDeviceId),
        (36, A::MemoryClockRateKhz),
        (37, A::MemoryBusWidthBits),
        (38, A::L2CacheBytes),
        (39, A::MaxThreadsPerSm),
        (40, A::AsyncEngineCount),
        (50, A::PciDomainId),
        (72, A::MaxTexture2dLinearPitch),
        (75, A::ComputeCapabilityMajor),
        (76, A::ComputeCapabilityMinor),
        (81, A::MaxSharedMemoryPerSm),
        (97, A::MaxSharedMemoryPerBlockOptin),
        (106, A::MaxBlocksPerSm),
        (111, A::ReservedSharedMemoryPerBlock),
        (120, A::ClusterLaunch),
        (139, A::PciVendorDeviceId),
        (140, A::PciSubsystemId),
    ];
    let mut compared = 0;
    for (cuda, ours) in pairs {
        if let Ok(v) = d.attribute(ours) {
            assert_eq!(
                i64::from(get(cuda)),
                v,
                "attribute {cuda} ({})",
                ours.name()
            );
            compared += 1;
        }
    }
    assert!(compared >= 15, "only {compared} attributes compared");
    // Pools share by POSIX file descriptors (1); IPC events read 1 on desktop GPUs; managed
    // memory, device memory pools, virtual memory management and its POSIX fd handles read 1.
    assert_eq!(get(119), 1, "attribute 119");
    assert_eq!(get(125), !emulated() as i32, "attribute 125");
    for attr in [83, 102, 103, 115] {
        assert_eq!(get(attr), 1, "attribute {attr}");
    }
    let mut mem = 0usize;
    check(
        cu!(cuDeviceTotalMem_v2(&mut mem, 0): *mut usize, i32),
        "total mem",
    );
    assert_eq!(mem as u64, d.info().memory_bytes);

    let mut name = [0 as c_char; 256];
    check(
        cu!(cuDeviceGetName(name.as_mut_ptr(), 256, 0): *mut c_char, i32, i32),
        "name",
    );
    let name = unsafe { CStr::from_ptr(name.as_ptr()) }.to_string_lossy();
    let want = match listing.backend {
        tegragpu::core::BackendKind::Nvgpu => "Orin".to_string(),
        tegragpu::core::BackendKind::Rm => listing.name.clone(),
    };
    assert_eq!(name, want);
    let mut bus = [0 as c_char; 64];
    check(
        cu!(cuDeviceGetPCIBusId(bus.as_mut_ptr(), 64, 0): *mut c_char, i32, i32),
        "bus id",
    );
    let bus = unsafe { CStr::from_ptr(bus.as_ptr()) }.to_string_lossy();
    assert_eq!(bus.to_lowercase(), listing.pci_bus_id.to_lowercase());
    let mut u = [0u8; 16];
    check(
        cu!(cuDeviceGetUuid_v2(u.as_mut_ptr() as *mut c_void, 0): *mut c_void, i32),
        "uuid",
    );
    if listing.uuid != [0; 16] {
        assert_eq!(u, listing.uuid);
    }
    let mut n = 0;
    check(cu!(cuDeviceGetCount(&mut n): *mut i32), "count");
    let named = tegragpu::core::device_from_env().unwrap().is_some();
    let listed = tegragpu::core::list_devices().unwrap().len();
    assert_eq!(n as usize, if listed == 0 && !named { 1 } else { listed });
}
