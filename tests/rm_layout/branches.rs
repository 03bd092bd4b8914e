//! Class ids and class selection, the driver-version gate and the per-branch layouts (§6.2),
//! and the gate on a fake kernel: an unsupported branch is refused before any RM allocation.

use tegragpu::backend::rm::{check_driver_version, select_classes, RmBackend};
use tegragpu::os::{KernelFaultRecord, Sys};
use tegragpu::sys::rm::*;
use tegragpu::Status;

#[test]
fn class_ids() {
    // §2.1 tree and §4.1 table.
    assert_eq!(NV01_ROOT_CLIENT, 0x41);
    assert_eq!(NV01_DEVICE_0, 0x80);
    assert_eq!(NV20_SUBDEVICE_0, 0x2080);
    assert_eq!(NV1_MEMORY_USER, 0x40);
    assert_eq!(NV1_MEMORY_SYSTEM, 0x3E);
    assert_eq!(NV01_MEMORY_VIRTUAL, 0x70);
    assert_eq!(NV01_MEMORY_SYSTEM_OS_DESCRIPTOR, 0x71);
    assert_eq!(FERMI_VASPACE_A, 0x90F1);
    assert_eq!(KEPLER_CHANNEL_GROUP_A, 0xA06C);
    assert_eq!(FERMI_CONTEXT_SHARE_A, 0x9067);
    assert_eq!(GT200_DEBUGGER, 0x83DE);
    assert_eq!(HOPPER_USERMODE_A, 0xC661);
    assert_eq!(HOPPER_CHANNEL_GPFIFO_A, 0xC86F);
    assert_eq!(HOPPER_COMPUTE_A, 0xCBC0);
    assert_eq!(HOPPER_DMA_COPY_A, 0xC8B5);
    assert_eq!(AMPERE_COMPUTE_A, 0xC6C0);
    assert_eq!(AMPERE_COMPUTE_B, 0xC7C0);
    assert_eq!(ADA_COMPUTE_A, 0xC9C0);
    assert_eq!(AMPERE_DMA_COPY_A, 0xC6B5);
    assert_eq!(AMPERE_DMA_COPY_B, 0xC7B5);
    assert_eq!(AMPERE_CHANNEL_GPFIFO_A, 0xC56F);
    assert_eq!(AMPERE_USERMODE_A, 0xC561);
    assert_eq!(BLACKWELL_COMPUTE_A, 0xCDC0);
    assert_eq!(BLACKWELL_COMPUTE_B, 0xCEC0);
    assert_eq!(BLACKWELL_DMA_COPY_A, 0xC9B5);
    assert_eq!(BLACKWELL_DMA_COPY_B, 0xCAB5);
    assert_eq!(BLACKWELL_CHANNEL_GPFIFO_A, 0xC96F);
    assert_eq!(BLACKWELL_CHANNEL_GPFIFO_B, 0xCA6F);
    assert_eq!(BLACKWELL_USERMODE_A, 0xC761);
    assert_eq!(NV2080_ENGINE_TYPE_GRAPHICS, 1);
}

#[test]
fn class_selection() {
    // The H200 class list (§4.1: C86F plus C56F/C46F/C36F, CBC0, C8B5, C661 plus C561/C461/C361).
    let h200 = [
        0x0041, 0x0080, 0x2080, 0x90F1, 0xA06C, 0x9067, 0x83DE, 0xB2CC, 0xCBA2, 0xCB97, 0xB8B0,
        0xC36F, 0xC46F, 0xC56F, 0xC86F, 0xCBC0, 0xC8B5, 0xC361, 0xC461, 0xC561, 0xC661,
    ];
    let c = select_classes(&h200).unwrap();
    assert_eq!(
        (c.gpfifo, c.compute, c.copy, c.usermode),
        (0xC86F, 0xCBC0, 0xC8B5, 0xC661)
    );
    // GA10x row: C56F, C7C0, C7B5, C561.
    let ga10x = [0xC56F, 0xC7C0, 0xC7B5, 0xC561, 0xC461];
    let c = select_classes(&ga10x).unwrap();
    assert_eq!(
        (c.gpfifo, c.compute, c.copy, c.usermode),
        (0xC56F, 0xC7C0, 0xC7B5, 0xC561)
    );
    // GB20x row: CA6F/C96F, CEC0, CAB5, C761/C661.
    let gb20x = [0xC96F, 0xCA6F, 0xCEC0, 0xCAB5, 0xC661, 0xC761];
    let c = select_classes(&gb20x).unwrap();
    assert_eq!(
        (c.gpfifo, c.compute, c.copy, c.usermode),
        (0xCA6F, 0xCEC0, 0xCAB5, 0xC761)
    );
    // No compute class → NotSupported.
    let e = select_classes(&[0xC86F, 0xC8B5, 0xC661]).unwrap_err();
    assert_eq!(e.status, Status::NotSupported);
}

#[test]
fn version_parsing_and_branch_gate() {
    let v = RmVersion::parse("580.159.04\n").unwrap();
    assert_eq!((v.major, v.minor, v.patch), (580, 159, Some(4)));
    assert_eq!(v.text, "580.159.04");
    assert_eq!(RmVersion::parse("575.64").unwrap().patch, None);
    for bad in [
        "",
        "580",
        "580.",
        "a.b",
        "580.1.2.3",
        "580.-1.2",
        "99999999999.1",
    ] {
        assert_eq!(
            RmVersion::parse(bad).unwrap_err().status,
            Status::UnsupportedDriver,
            "{bad:?}"
        );
    }

    let (v, b) =
        check_driver_version("580.159.04", Some("580.159.04"), Some("580.159.04\n")).unwrap();
    assert_eq!((v.major, b), (580, RmBranch::R580));

    for unsupported in ["610.43.03", "550.163.01", "535.288.01"] {
        let e = check_driver_version(unsupported, None, None).unwrap_err();
        assert_eq!(e.status, Status::UnsupportedDriver);
        assert!(e.message.contains(unsupported), "{}", e.message);
        assert!(e.message.contains("580"), "{}", e.message);
    }
    // sysfs and the loaded module disagree (modules replaced but not reloaded).
    let e = check_driver_version("580.159.04", Some("580.142"), None).unwrap_err();
    assert_eq!(e.status, Status::UnsupportedDriver);
    let e = check_driver_version("580.159.04", None, Some("590.48.01")).unwrap_err();
    assert_eq!(e.status, Status::UnsupportedDriver);
}

#[test]
fn per_branch_layouts() {
    // §6.2 table, per branch: (vaspace, gpfifo schedule, UVM_FREE, UVM_UNREGISTER_CHANNEL, NVOS46).
    let want = [
        (570, 48, 2, 24, 28, 56),
        (575, 48, 3, 24, 28, 56),
        (580, 56, 3, 24, 28, 64),
        (590, 56, 3, 16, 12, 64),
        (595, 56, 3, 16, 12, 64),
    ];
    assert_eq!(SUPPORTED_RM_BRANCHES, [570, 575, 580, 590, 595]);
    for (major, vas, sched, free, unreg, os46) in want {
        let b = RmBranch::from_major(major).unwrap();
        assert_eq!(b.major(), major);
        let l = b.layout();
        assert_eq!(l.channel_alloc_params_size, 368, "{major}");
        assert_eq!(l.memory_alloc_params_size, 128, "{major}");
        assert_eq!(l.build_version_v2_size, 1032, "{major}");
        assert_eq!(l.uvm_map_external_allocation_params_size, 9264, "{major}");
        assert_eq!(l.vaspace_params_size, vas, "{major}");
        assert_eq!(l.gpfifo_schedule_params_size, sched, "{major}");
        assert_eq!(l.uvm_free_params_size, free, "{major}");
        assert_eq!(l.uvm_unregister_channel_params_size, unreg, "{major}");
        assert_eq!(l.nvos46_size, os46, "{major}");
    }
    for major in [535, 550, 560, 600, 610] {
        assert!(RmBranch::from_major(major).is_none(), "{major}");
    }
}

/// A fake kernel: /dev/nvidiactl answers the version QUERY with a chosen string and fails every
/// other ioctl; it records the requests it saw.
struct FakeRm {
    version: &'static str,
    requests: parking_lot::Mutex<Vec<u64>>,
    open_fds: parking_lot::Mutex<Vec<i32>>,
}

impl Sys for FakeRm {
    fn open(&self, path: &std::ffi::CStr, _flags: i32) -> Result<i32, i32> {
        if path.to_bytes() == b"/dev/nvidiactl" {
            self.open_fds.lock().push(77);
            Ok(77)
        } else {
            Err(libc::ENOENT)
        }
    }
    fn close(&self, fd: i32) -> Result<(), i32> {
        let mut v = self.open_fds.lock();
        match v.iter().position(|&f| f == fd) {
            Some(i) => {
                v.remove(i);
                Ok(())
            }
            None => Err(libc::EBADF),
        }
    }
    unsafe fn ioctl(&self, fd: i32, request: u64, arg: usize) -> Result<i32, i32> {
        self.requests.lock().push(request);
        if fd == 77 && request == 0xC048_46D2 {
            let p = &mut *(arg as *mut nv_ioctl_rm_api_version_t);
            if p.cmd == 0x32 {
                p.reply = 1;
                p.versionString = [0; 64];
                p.versionString[..self.version.len()].copy_from_slice(self.version.as_bytes());
                return Ok(0);
            }
        }
        Err(libc::ENOTTY)
    }
    unsafe fn mmap(
        &self,
        _: *mut u8,
        _: usize,
        _: i32,
        _: i32,
        _: i32,
        _: i64,
    ) -> Result<*mut u8, i32> {
        Err(libc::ENODEV)
    }
    unsafe fn munmap(&self, _: *mut u8, _: usize) -> Result<(), i32> {
        Err(libc::EINVAL)
    }
    fn fault_log(&self) -> Vec<KernelFaultRecord> {
        Vec::new()
    }
}

#[test]
fn unsupported_branch_is_refused_before_any_rm_alloc_or_uvm_call() {
    let fake = std::sync::Arc::new(FakeRm {
        version: "610.43.03",
        requests: Default::default(),
        open_fds: Default::default(),
    });
    let err = match RmBackend::open(fake.clone()) {
        Ok(_) => panic!("a 610 driver must be refused"),
        Err(e) => e,
    };
    assert_eq!(err.status, Status::UnsupportedDriver, "{err:?}");
    assert!(err.message.contains("610.43.03"), "{}", err.message);
    assert!(
        err.message.contains("570") && err.message.contains("595"),
        "{}",
        err.message
    );
    // Only the version query reached the driver, and the control fd was closed again.
    assert_eq!(*fake.requests.lock(), vec![0xC048_46D2]);
    assert!(fake.open_fds.lock().is_empty());
}

#[test]
fn supported_branch_proceeds_to_the_root_client_allocation() {
    if std::path::Path::new("/sys/module/nvidia/version").exists() {
        eprintln!(
            "skipped: a real nvidia module is loaded, its sysfs version would not match the fake"
        );
        return;
    }
    let fake = std::sync::Arc::new(FakeRm {
        version: "580.159.04",
        requests: Default::default(),
        open_fds: Default::default(),
    });
    let err = match RmBackend::open(fake.clone()) {
        Ok(_) => panic!("the fake driver fails RM_ALLOC, so open must fail"),
        Err(e) => e,
    };
    assert_eq!(err.status, Status::Os, "{err:?}");
    assert_eq!(err.errno, Some(libc::ENOTTY));
    // QUERY, then RM_ALLOC of the root client (0xC020462B), then nothing else.
    assert_eq!(*fake.requests.lock(), vec![0xC048_46D2, 0xC020_462B]);
    assert!(
        fake.open_fds.lock().is_empty(),
        "fds leaked: {:?}",
        fake.open_fds.lock()
    );
}
