//! The nvgpu backend's channel pool on the emulated Orin: queues take channels made when the
//! device opened and give them back (no channel is set up or closed while work runs, which on
//! nvgpu would preempt the device's whole TSG), a new channel while work runs is refused unless
//! the contexts use CILP, an aborted queue's channel is closed, and the 129th channel of a
//! device is refused naming the limit.

mod common;

use common::{data_flags as host_words, params_of as params};

use std::sync::Arc;
use tegragpu::backend::nvgpu::NvgpuBackend;
use tegragpu::core::{Device, QueueConfig, QueueKind};
use tegragpu::emu::EmuSys;
use tegragpu::Status;

/// An emulated Orin whose device makes `compute` + `copy` channels at open.
fn open(compute: u32, copy: u32, allow_cilp: bool) -> (Arc<EmuSys>, Device) {
    let emu = EmuSys::new();
    let b = NvgpuBackend::open_configured(emu.clone(), compute, copy, allow_cilp, u32::MAX)
        .unwrap_or_else(|e| panic!("open: {e}"));
    (emu, Device::from_backend(Box::new(b)).unwrap())
}

/// Run fill_u32 on `q` and check it.
fn fill(dev: &Device, q: &mut tegragpu::core::Queue, value: u32) {
    let m = common::fixtures(dev);
    let k = m.kernel("fill_u32").unwrap();
    let b = dev.alloc(4 * 1024, host_words()).unwrap();
    q.launch(
        &k,
        &common::cfg(4, 256),
        &params(&k, &[b.gpu_va(), value.into(), 1024]),
    )
    .unwrap();
    q.synchronize(10_000_000_000).unwrap();
    let w = b.map_cpu().unwrap() as *const u32;
    for i in 0..1024 {
        // SAFETY: 1,024 mapped words.
        assert_eq!(unsafe { w.add(i).read_volatile() }, value, "word {i}");
    }
}

#[test]
fn queues_take_the_channels_made_at_open_and_give_them_back() {
    let (emu, dev) = open(2, 1, true);
    assert_eq!(emu.stats().channels, 3, "channels made at open");
    for round in 0..3u32 {
        let mut a = dev.create_queue(QueueKind::Compute).unwrap();
        let mut b = dev
            .create_queue_with(QueueKind::Compute, QueueConfig { depth: 16 })
            .unwrap();
        let c = dev.create_queue(QueueKind::Copy).unwrap();
        assert_eq!(
            emu.stats().channels,
            3,
            "round {round}: no channel made for a queue"
        );
        fill(&dev, &mut a, 10 + round);
        fill(&dev, &mut b, 20 + round);
        drop((a, b, c));
        assert_eq!(emu.stats().channels, 3, "round {round}: no channel closed");
    }
    drop(dev);
    assert_eq!(emu.stats().channels, 0, "closed with the device");
}

/// A new channel while a kernel runs is refused before any ioctl (with or without CILP, which
/// the library asks for but does not rely on); once the device is idle it is made.
#[test]
fn a_channel_beyond_the_pool_waits_for_an_idle_device() {
    for cilp in [false, true] {
        let (emu, dev) = open(1, 0, cilp);
        let m = common::fixtures(&dev);
        let spin = m.kernel("spin_until").unwrap();
        let flag = dev.alloc(4096, host_words()).unwrap();
        let mut q = dev.create_queue(QueueKind::Compute).unwrap();
        q.launch(
            &spin,
            &common::cfg(1, 32),
            &params(&spin, &[flag.gpu_va(), 60_000_000_000]),
        )
        .unwrap();
        q.submit().unwrap();
        let e = dev.create_queue(QueueKind::Compute).unwrap_err();
        assert_eq!(e.status, Status::NotSupported, "cilp={cilp}: {e}");
        assert!(
            e.message.contains("preempt") && e.message.contains("TEGRAGPU_CHANNELS"),
            "{e}"
        );
        assert_eq!(emu.stats().channels, 1, "no channel was set up");
        // SAFETY: the flag word is mapped; the spin reads it.
        unsafe { (flag.map_cpu().unwrap() as *mut u32).write_volatile(1) };
        q.synchronize(10_000_000_000).unwrap();
        let mut second = dev.create_queue(QueueKind::Compute).unwrap();
        assert_eq!(emu.stats().channels, 2);
        fill(&dev, &mut second, 8);
        fill(&dev, &mut q, 9);
    }
}

/// An aborted queue's channel, which may still run its work, is closed instead of reused; with
/// CILP (the default where offered) the close preempts the running grid and the device's other
/// queues go on.
#[test]
fn an_aborted_queue_closes_its_channel() {
    let (emu, dev) = open(2, 0, true);
    let m = common::fixtures(&dev);
    let spin = m.kernel("spin_until").unwrap();
    let flag = dev.alloc(4096, host_words()).unwrap();
    let mut q = dev.create_queue(QueueKind::Compute).unwrap();
    let mut other = dev.create_queue(QueueKind::Compute).unwrap();
    q.launch(
        &spin,
        &common::cfg(1, 32),
        &params(&spin, &[flag.gpu_va(), 60_000_000_000]),
    )
    .unwrap();
    q.submit().unwrap();
    q.abort();
    assert_eq!(
        emu.stats().channels,
        1,
        "the aborted queue's channel closed"
    );
    fill(&dev, &mut other, 3);
    drop(other);
    assert_eq!(
        emu.stats().channels,
        1,
        "the other channel back in the pool"
    );
}

/// A TSG holds 128 channels: the 129th queue of a device is refused with a status and a
/// message naming the limit, and destroying a queue makes room again.
#[test]
fn the_129th_queue_is_refused_naming_the_limit() {
    let (_emu, dev) = open(0, 0, true);
    let mut qs = Vec::new();
    for i in 0..128 {
        let kind = if i % 8 == 0 {
            QueueKind::Copy
        } else {
            QueueKind::Compute
        };
        qs.push(
            dev.create_queue_with(kind, QueueConfig { depth: 16 })
                .unwrap_or_else(|e| panic!("queue {i}: {e}")),
        );
    }
    let e = dev.create_queue(QueueKind::Compute).unwrap_err();
    assert_eq!(e.status, Status::OutOfMemory, "{e}");
    assert!(
        e.message.contains("128") && e.message.contains("TSG"),
        "{e}"
    );
    // A destroyed queue's channel serves the next queue of its kind; one of the other kind is
    // closed to make room (the device is idle).
    qs.remove(1); // a compute queue
    let mut q = dev.create_queue(QueueKind::Compute).unwrap();
    fill(&dev, &mut q, 5);
    qs.remove(0); // a copy queue
    let mut q2 = dev.create_queue(QueueKind::Compute).unwrap();
    fill(&dev, &mut q2, 6);
    let e = dev.create_queue(QueueKind::Copy).unwrap_err();
    assert_eq!(e.status, Status::OutOfMemory, "{e}");
}

/// Without CILP, closing the aborted queue's channel waits for its running grid; the preempt
/// times out and the driver stops every channel of the device's TSG
/// (`tsg.c:nvgpu_tsg_unbind_channel` → `nvgpu_tsg_abort`): the device reports a fault, new work
/// is refused, and a device opened again works.
#[test]
fn an_abort_without_cilp_stops_the_device_and_a_new_device_works() {
    let (_emu, dev) = open(2, 0, false);
    let m = common::fixtures(&dev);
    let spin = m.kernel("spin_until").unwrap();
    let flag = dev.alloc(4096, host_words()).unwrap();
    let mut q = dev.create_queue(QueueKind::Compute).unwrap();
    let mut other = dev.create_queue(QueueKind::Compute).unwrap();
    q.launch(
        &spin,
        &common::cfg(1, 32),
        &params(&spin, &[flag.gpu_va(), 60_000_000_000]),
    )
    .unwrap();
    q.submit().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(20));
    q.abort();
    let k = m.kernel("fill_u32").unwrap();
    let b = dev.alloc(4096, host_words()).unwrap();
    let r = other
        .launch(&k, &common::cfg(1, 256), &params(&k, &[b.gpu_va(), 1, 256]))
        .and_then(|_| other.synchronize(2_000_000_000));
    let e = r.unwrap_err();
    assert_eq!(e.status, Status::DeviceFault, "{e}");
    assert!(dev.fault_report().is_some());
    drop((other, b, k, flag, spin, m, dev));
    let (_emu2, dev2) = open(1, 0, false);
    let mut q2 = dev2.create_queue(QueueKind::Compute).unwrap();
    fill(&dev2, &mut q2, 4);
}

/// While another context competes for the GPU, a kernel of ours that cannot be switched out
/// (wait-for-idle) runs the channel's context-switch timeout budget down; the library raises
/// each channel's limit (SET_TIMEOUT_EX, `TEGRAGPU_NVGPU_CTXSW_TIMEOUT_MS`, default no limit)
/// so the kernel completes. With the driver's own 3,000 ms the device is stopped with error 8.
#[test]
fn a_long_kernel_survives_a_competing_context() {
    for limit in [u32::MAX, 3000] {
        let emu = EmuSys::new();
        // 100 ms of driver time per 10 ms: 3,000 ms of budget last ~0.3 s here.
        emu.set_time_divisor(10);
        let b = NvgpuBackend::open_configured(emu.clone(), 1, 0, false, limit).unwrap();
        let dev = Device::from_backend(Box::new(b)).unwrap();
        let m = common::fixtures(&dev);
        let spin = m.kernel("spin_until").unwrap();
        let flag = dev.alloc(4096, host_words()).unwrap();
        let mut q = dev.create_queue(QueueKind::Compute).unwrap();
        let _other = emu.add_competing_context();
        // 1.5 s of wall time is 15 s of driver time: five times the default budget.
        q.launch(
            &spin,
            &common::cfg(1, 32),
            &params(&spin, &[flag.gpu_va(), 1_500_000_000]),
        )
        .unwrap();
        let r = q.synchronize(30_000_000_000);
        if limit == u32::MAX {
            r.unwrap_or_else(|e| panic!("the kernel was stopped: {e}"));
            assert!(dev.fault_report().is_none());
        } else {
            let e = r.unwrap_err();
            assert_eq!(e.status, Status::DeviceFault, "{e}");
            let f = dev.fault_report().expect("a fault report");
            assert_eq!(f.code, 8, "error 8 (ctxsw timeout): {}", f.what);
        }
    }
}
