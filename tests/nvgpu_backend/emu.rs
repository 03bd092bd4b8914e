//! Part 2 of the `NvgpuBackend` tests: the backend over the emulated kernel
//! `tegragpu::emu::EmuSys`.

use super::*;

use tegragpu::emu::EmuSys;

fn open_emu() -> (Arc<EmuSys>, NvgpuBackend) {
    let emu = EmuSys::new();
    let b = NvgpuBackend::open_with_channels(emu.clone(), 0, 0)
        .unwrap_or_else(|e| panic!("open over EmuSys: {e}"));
    (emu, b)
}

#[test]
fn emu_bringup_reports_seed_characteristics() {
    let _serial = serial();
    let (emu, b) = open_emu();
    let i = b.info().clone();
    assert!(i.emulated);
    assert_eq!(i.name, "ga10b");
    assert_eq!((i.arch, i.sm_major, i.sm_minor), (0x170, 8, 7));
    assert_eq!(
        (i.compute_class, i.copy_class, i.gpfifo_class),
        (0xc7c0, 0xc7b5, 0xc76f)
    );
    assert_eq!(i.va_bits, 40);
    assert!(i.sm_count > 0);
    assert_eq!(b.veid(), 1, "first ASYNC subcontext is VEID 1");
    drop(b);
    let s = emu.stats();
    assert_eq!(
        (
            s.fds,
            s.tsgs,
            s.channels,
            s.user_mappings,
            s.ctrls,
            s.clients
        ),
        (0, 0, 0, 0, 0, 0),
        "{s:?}"
    );
}

#[test]
fn emu_one_channel_bringup_and_teardown() {
    let _serial = serial();
    let (emu, b) = open_emu();
    let ch = b
        .create_channel(Engine::Compute, 1024, true)
        .unwrap_or_else(|e| panic!("{e}"));
    let r = ch.raw();
    assert_eq!(r.token, 511, "fresh system hands out chid 511 on runlist 0");
    assert_eq!(
        (r.entries, r.class, r.subchannel),
        (tegragpu::backend::pool::POOL_ENTRIES, 0xc7c0, 1)
    );
    // USERD starts zeroed: GP_GET (0x88) and GP_PUT (0x8c).
    unsafe {
        assert_eq!(std::ptr::read_volatile(r.userd.add(0x88 / 4)), 0);
        assert_eq!(std::ptr::read_volatile(r.userd.add(0x8c / 4)), 0);
    }
    assert!(ch.error().is_none());
    assert_eq!(emu.stats().channels, 1);
    // Dropped, the channel goes back to the device's pool (no unbind, which would preempt the
    // TSG), and the next channel of the kind is that one, continuing at its GP_PUT.
    unsafe { std::ptr::write_volatile(r.userd.add(0x8c / 4), 5) };
    unsafe { std::ptr::write_volatile(r.userd.add(0x88 / 4), 5) };
    drop(ch);
    assert_eq!(emu.stats().channels, 1);
    assert_eq!(b.channels_free(Engine::Compute), 1);
    let again = b.create_channel(Engine::Compute, 16, true).unwrap();
    assert_eq!((again.raw().token, again.ring_start()), (511, 5));
    assert_eq!(
        (b.channels_free(Engine::Compute), b.channels_live()),
        (0, 1)
    );
    // An abandoned channel (tg_queue_abort) is closed, not kept.
    again.discard();
    drop(again);
    assert_eq!(emu.stats().channels, 0);
    assert_eq!(b.channels_live(), 0);
    drop(b);
    let s = emu.stats();
    assert_eq!((s.fds, s.tsgs, s.user_mappings), (0, 0, 0), "{s:?}");
    assert_eq!(s.free_chids, 512);
}

#[test]
fn emu_eight_channels_compute_and_copy() {
    let _serial = serial();
    let (emu, b) = open_emu();
    let mut chans = Vec::new();
    for i in 0..8 {
        let engine = if i % 2 == 0 {
            Engine::Compute
        } else {
            Engine::Copy
        };
        chans.push(
            b.create_channel(engine, 256, true)
                .unwrap_or_else(|e| panic!("channel {i}: {e}")),
        );
    }
    let tokens: HashSet<u32> = chans.iter().map(|c| c.raw().token).collect();
    assert_eq!(tokens.len(), 8, "distinct tokens");
    assert_eq!(
        tokens,
        (504..512).collect::<HashSet<u32>>(),
        "LIFO chid pool from 511 down"
    );
    for (i, c) in chans.iter().enumerate() {
        let r = c.raw();
        if i % 2 == 0 {
            assert_eq!((r.class, r.subchannel), (0xc7c0, 1));
        } else {
            assert_eq!((r.class, r.subchannel), (0xc7b5, 4));
        }
        assert_eq!(
            r.doorbell,
            chans[0].raw().doorbell,
            "one doorbell page per device"
        );
    }
    assert_eq!(emu.stats().channels, 8);
    drop(b); // channels keep the device alive
    assert_eq!(emu.stats().tsgs, 1);
    drop(chans);
    let s = emu.stats();
    assert_eq!(
        (s.fds, s.tsgs, s.channels, s.user_mappings),
        (0, 0, 0, 0),
        "{s:?}"
    );
}

#[test]
fn emu_alloc_is_cpu_and_gpu_visible() {
    let _serial = serial();
    let (emu, b) = open_emu();
    let a = b
        .alloc(
            3 * 4096 + 1,
            MemFlags {
                zeroed: true,
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(a.size, 4 * 4096);
    assert!(
        a.gpu_va >= 0x20_0000 && a.gpu_va + a.size <= 0xFF_0000_0000,
        "inside the user VMA: {:#x}",
        a.gpu_va
    );
    for w in [0xFD_0000_0000u64, 0xFE_0000_0000] {
        assert!(
            a.gpu_va + a.size <= w || a.gpu_va >= w + (1 << 30),
            "inside the reserved window {w:#x}: {:#x}",
            a.gpu_va
        );
    }
    if b.info().unified_addresses {
        assert_eq!(a.cpu as u64, a.gpu_va);
    }
    unsafe {
        assert_eq!(std::ptr::read_volatile(a.cpu.add(100)), 0, "zeroed");
        std::ptr::write_volatile(a.cpu, 0x5a);
    }
    let fd = b.export_dmabuf(&a).unwrap();
    assert!(fd > 2);
    emu.close(fd).unwrap();
    b.free(&a).unwrap();
}

#[test]
fn emu_alloc_free_cycles_leave_no_fds_or_mappings() {
    let _serial = serial();
    let (emu, b) = open_emu();
    // Warm up allocator/bookkeeping growth before measuring.
    for _ in 0..100 {
        let a = b.alloc(4096, MemFlags::default()).unwrap();
        b.free(&a).unwrap();
    }
    let fds = tegragpu::os::open_fd_count();
    let maps = tegragpu::os::mapping_count();
    let emu_before = emu.stats();
    let cycles = || {
        for i in 0..10_000u64 {
            let flags = MemFlags {
                write_combined: i % 3 == 0,
                zeroed: i % 2 == 0,
                ..Default::default()
            };
            let a = b
                .alloc(4096 * (1 + i % 8), flags)
                .unwrap_or_else(|e| panic!("cycle {i}: {e}"));
            b.free(&a).unwrap_or_else(|e| panic!("cycle {i}: {e}"));
        }
    };
    cycles();
    assert_eq!(tegragpu::os::open_fd_count(), fds, "open fds");
    // Other tests' threads in this process can map meanwhile (a malloc arena or a thread stack:
    // a few mappings each). A leak in the cycles grows with every run of them: require one run
    // of 10,000 out of up to four that adds no mapping, and no run that adds more than a few.
    let (mut before, mut after, mut runs) = (maps, tegragpu::os::mapping_count(), 1);
    while after > before && runs < 4 {
        assert!(
            after - before <= 16,
            "process mappings {before} -> {after} over 10,000 cycles"
        );
        before = after;
        cycles();
        after = tegragpu::os::mapping_count();
        runs += 1;
    }
    assert!(
        after <= before,
        "process mappings grew in each of {runs} runs of 10,000 cycles ({maps} -> {after})"
    );
    assert_eq!(emu.stats(), emu_before);
    assert_eq!(b.live_allocations(), 0);
}

#[test]
fn emu_bad_input_errors_without_panics() {
    let _serial = serial();
    let (_emu, b) = open_emu();
    for size in [0u64, (1 << 40) + 1, u64::MAX] {
        assert_eq!(
            b.alloc(size, MemFlags::default()).unwrap_err().status,
            Status::InvalidArgument
        );
    }
    assert_eq!(
        b.alloc(
            1,
            MemFlags {
                cpu_cached: true,
                write_combined: true,
                zeroed: true
            }
        )
        .unwrap_err()
        .status,
        Status::InvalidArgument
    );
    for entries in [0u32, 3, 1 << 31] {
        let e = b
            .create_channel(Engine::Compute, entries, true)
            .map(|_| ())
            .unwrap_err();
        assert_eq!(e.status, Status::InvalidArgument, "entries={entries}");
        assert!(
            e.message.contains(&format!("entries={entries}")),
            "{}",
            e.message
        );
    }
    // A stale or foreign Allocation is rejected, not acted on.
    let a = b.alloc(4096, MemFlags::default()).unwrap();
    let forged = tegragpu::backend::Allocation {
        gpu_va: a.gpu_va + 4096,
        cpu: a.cpu,
        size: a.size,
        id: a.id,
    };
    assert_eq!(b.free(&forged).unwrap_err().status, Status::InvalidHandle);
    b.free(&a).unwrap();
    assert_eq!(b.free(&a).unwrap_err().status, Status::InvalidHandle);
    assert_eq!(
        b.export_dmabuf(&a).unwrap_err().status,
        Status::InvalidHandle
    );
}

#[test]
fn emu_huge_alloc_fails_with_named_ioctl() {
    let _serial = serial();
    let (_emu, b) = open_emu();
    // 1 TiB passes validation but exceeds the emulated RAM / VA: the kernel refuses.
    let e = b.alloc(1 << 40, MemFlags::default()).unwrap_err();
    assert!(e.errno.is_some(), "{e:?}");
    assert!(
        e.message.contains("NVMAP_IOC_") || e.message.contains("NVGPU_AS_IOCTL_"),
        "{}",
        e.message
    );
}

#[test]
fn emu_injected_error_reaches_channel_error() {
    let _serial = serial();
    let (emu, b) = open_emu();
    let ch = b.create_channel(Engine::Compute, 64, true).unwrap();
    assert!(ch.error().is_none());
    assert!(emu.inject_channel_error(ch.raw().token, NVGPU_CHANNEL_FIFO_ERROR_MMU_ERR_FLT));
    let e = ch.error().expect("error visible through the notifier");
    assert_eq!(e.code, 31);
    assert!(e.what.contains("MMU fault"), "{}", e.what);
    assert!(b
        .fault_log()
        .iter()
        .any(|f| f.token == ch.raw().token && f.code == 31));
}
