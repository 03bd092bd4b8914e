//! `device_count` / `list_devices` under `TEGRAGPU_DEVICE`, and `memory_info` of the emulated
//! Orin. One test in this binary: it sets the environment variable and measures process-wide
//! emulated memory, which other tests running at once would disturb.

use tegragpu::backend::{NVGPU_CTRL_NODE, NVIDIACTL_NODE};
use tegragpu::core::{device_count, list_devices, Device, MemFlags};
use tegragpu::Status;

#[test]
fn count_listing_and_memory_info() {
    // TEGRAGPU_DEVICE=emu: the emulated Orin, one GPU (the count a program sees on a Jetson).
    std::env::set_var("TEGRAGPU_DEVICE", "emu");
    assert_eq!(device_count().unwrap(), 1);
    let l = list_devices().unwrap();
    assert_eq!(l.len(), 1);
    assert_eq!(l[0].spec, "emu");
    let dev = Device::open(None).unwrap();
    assert_eq!(dev.info().name, l[0].name);

    // An unknown spec is refused, naming the variable.
    std::env::set_var("TEGRAGPU_DEVICE", "rm:x");
    let e = device_count().unwrap_err();
    assert_eq!(e.status, Status::InvalidArgument);
    assert!(
        e.message.contains("TEGRAGPU_DEVICE") && e.message.contains("rm:x"),
        "{e}"
    );

    // Unset: the GPUs of this machine; none on a machine without NVIDIA's drivers.
    std::env::remove_var("TEGRAGPU_DEVICE");
    let none = !std::path::Path::new(NVGPU_CTRL_NODE).exists()
        && !std::path::Path::new(NVIDIACTL_NODE).exists();
    if none {
        assert_eq!(device_count().unwrap(), 0);
        assert!(list_devices().unwrap().is_empty());
    }

    // memory_info: the emulated memory (TEGRAGPU_EMU_MEMORY_BYTES, else 62 GiB) and what its
    // buffers leave free.
    let (free0, total) = dev.memory_info().unwrap();
    assert_eq!(total, tegragpu::emu::EmuNvmap::process().memory_total());
    assert!(free0 <= total);
    let size = 64u64 << 20;
    let b = dev.alloc(size, MemFlags::default()).unwrap();
    let (free1, total1) = dev.memory_info().unwrap();
    assert_eq!(total1, total);
    assert!(
        free1 + size <= free0,
        "free {free0} → {free1} after a 64 MiB buffer"
    );
    drop(b);
    // (The emulated kernel gives a freed buffer's pages back after a grace period, so free
    // memory is not checked again here.)
}
