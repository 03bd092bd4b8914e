//! Command buffers (record once, replay many times): results exact after 10,000 replays with
//! changing arguments, ring wrap-around, ordering with queue work, refused updates, lifetime.
//! Runs on the emulated Orin and, with `TEGRAGPU_TEST_DEVICE=rm`, on a desktop GPU.

mod common;
use common::*;
use std::sync::Arc;
use tegragpu::core::{QueueConfig, QueueKind};
use tegragpu::Status;

fn read_u32(b: &tegragpu::core::Buffer, i: usize) -> u32 {
    unsafe { std::ptr::read_volatile((b.cpu_ptr() as *const u32).add(i)) }
}
fn read_u64(b: &tegragpu::core::Buffer, i: usize) -> u64 {
    unsafe { std::ptr::read_volatile((b.cpu_ptr() as *const u64).add(i)) }
}

#[test]
fn ten_thousand_replays_with_changing_arguments_are_exact() {
    let dev = device();
    let m = fixtures(&dev);
    let fill = m.kernel("fill_u32").unwrap();
    let inc = m.kernel("increment").unwrap();
    let n = 1000u32;
    let buf = dev.alloc(n as u64 * 4, data_flags()).unwrap();
    let counter = dev.alloc(4096, data_flags()).unwrap();
    let done = Arc::new(dev.create_signal(0).unwrap());
    let mut cb = dev.create_cmdbuf().unwrap();
    let fill_params = |v: u32| {
        Params::new()
            .u64(buf.gpu_va())
            .u32(v)
            .u32(n)
            .bytes()
            .to_vec()
    };
    let inc_params = |by: u64| Params::new().u64(counter.gpu_va()).u64(by).bytes().to_vec();
    let f = cb
        .launch(&fill, &cfg(n.div_ceil(128), 128), &fill_params(0))
        .unwrap();
    let i1 = cb.launch(&inc, &cfg(1, 32), &inc_params(0)).unwrap();
    let i2 = cb.launch(&inc, &cfg(1, 32), &inc_params(0)).unwrap();
    let s = cb.signal(&done, 0).unwrap();
    assert_eq!((f, i1, i2, s), (0, 1, 2, 3));
    cb.finish().unwrap();
    let mut q = dev.create_queue(QueueKind::Compute).unwrap();
    let mut expect = 0u64;
    for r in 1..=10_000u64 {
        cb.set_params(f, &fill, &fill_params(r as u32 * 7)).unwrap();
        cb.set_params(i1, &inc, &inc_params(r)).unwrap();
        cb.set_params(i2, &inc, &inc_params(2 * r + 1)).unwrap();
        cb.set_value(s, r).unwrap();
        q.replay(&mut cb).unwrap();
        q.submit().unwrap();
        done.wait(r, 10 * SEC).unwrap();
        expect += 3 * r + 1;
        // Every replay's fill is checked at a few places, the last one everywhere.
        for i in [0usize, 1, 499, 999] {
            assert_eq!(read_u32(&buf, i), r as u32 * 7, "replay {r}, element {i}");
        }
        assert_eq!(read_u64(&counter, 0), expect, "replay {r}");
    }
    for i in 0..n as usize {
        assert_eq!(read_u32(&buf, i), 70_000, "element {i}");
    }
    assert_eq!(done.value(), 10_000);
}

#[test]
fn replays_without_waiting_wrap_a_small_ring_and_keep_their_order() {
    let dev = device();
    let m = fixtures(&dev);
    let inc = m.kernel("increment").unwrap();
    let counter = dev.alloc(4096, data_flags()).unwrap();
    let mut cb = dev.create_cmdbuf().unwrap();
    for by in [1u64, 10, 100] {
        cb.launch(
            &inc,
            &cfg(1, 32),
            Params::new().u64(counter.gpu_va()).u64(by).bytes(),
        )
        .unwrap();
    }
    cb.finish().unwrap();
    // 16 GPFIFO entries; 2,000 replays, each submitted, none waited for.
    let mut q = dev
        .create_queue_with(QueueKind::Compute, QueueConfig { depth: 16 })
        .unwrap();
    let s = dev.create_signal(0).unwrap();
    for _ in 0..2000 {
        q.replay(&mut cb).unwrap();
        q.submit().unwrap();
    }
    // Several replays in one submission, between queue work.
    let fill = m.kernel("fill_u32").unwrap();
    let other = dev.alloc(4096, data_flags()).unwrap();
    q.launch(
        &fill,
        &cfg(1, 32),
        Params::new().u64(other.gpu_va()).u32(5).u32(32).bytes(),
    )
    .unwrap();
    for _ in 0..3 {
        q.replay(&mut cb).unwrap();
    }
    q.launch(
        &fill,
        &cfg(1, 32),
        Params::new().u64(other.gpu_va()).u32(6).u32(32).bytes(),
    )
    .unwrap();
    q.signal(&s, 1).unwrap();
    q.submit().unwrap();
    s.wait(1, 30 * SEC).unwrap();
    assert_eq!(read_u64(&counter, 0), 2003 * 111);
    assert_eq!(read_u32(&other, 0), 6);
}

#[test]
fn recorded_signals_waits_copies_and_barriers_replay_in_order() {
    let dev = device();
    let m = fixtures(&dev);
    let fill = m.kernel("fill_u32").unwrap();
    let n = 4096u32;
    let a = Arc::new(dev.alloc(n as u64 * 4, data_flags()).unwrap());
    let b = Arc::new(dev.alloc(n as u64 * 4, data_flags()).unwrap());
    let gate = Arc::new(dev.create_signal(0).unwrap());
    let done = Arc::new(dev.create_signal(0).unwrap());
    let mut cb = dev.create_cmdbuf().unwrap();
    let w = cb.wait(&gate, 1).unwrap();
    let f = cb
        .launch(
            &fill,
            &cfg(n / 128, 128),
            Params::new().u64(a.gpu_va()).u32(9).u32(n).bytes(),
        )
        .unwrap();
    cb.barrier().unwrap();
    cb.copy(&b, 0, &a, 0, n as u64 * 4).unwrap();
    let s = cb.signal(&done, 1).unwrap();
    cb.finish().unwrap();
    let mut q = dev.create_queue(QueueKind::Compute).unwrap();
    q.replay(&mut cb).unwrap();
    q.submit().unwrap();
    // The recorded wait holds the replay until the CPU opens the gate.
    let e = done.wait(1, SEC / 5).unwrap_err();
    assert_eq!(e.status, Status::Timeout);
    gate.set(1);
    done.wait(1, 10 * SEC).unwrap();
    assert!((0..n as usize).all(|i| read_u32(&b, i) == 9));
    // Second replay: new gate value, new fill value, new signal value.
    cb.set_value(w, 2).unwrap();
    cb.set_params(
        f,
        &fill,
        Params::new().u64(a.gpu_va()).u32(10).u32(n).bytes(),
    )
    .unwrap();
    cb.set_value(s, 2).unwrap();
    q.replay(&mut cb).unwrap();
    q.submit().unwrap();
    assert_eq!(done.wait(2, SEC / 5).unwrap_err().status, Status::Timeout);
    gate.set(2);
    done.wait(2, 10 * SEC).unwrap();
    assert!((0..n as usize).all(|i| read_u32(&b, i) == 10));
    assert_ne!(done.timestamp(), 0);
}

#[test]
fn updates_that_do_not_fit_are_refused_and_change_nothing() {
    let dev = device();
    let m = fixtures(&dev);
    let fill = m.kernel("fill_u32").unwrap();
    let inc = m.kernel("increment").unwrap();
    let buf = dev.alloc(4096, data_flags()).unwrap();
    let sig = Arc::new(dev.create_signal(0).unwrap());
    let mut cb = dev.create_cmdbuf().unwrap();
    let p = Params::new()
        .u64(buf.gpu_va())
        .u32(3)
        .u32(32)
        .bytes()
        .to_vec();
    // Not finished yet: no updates, no replays.
    let f = cb.launch(&fill, &cfg(1, 32), &p).unwrap();
    let e = cb.set_params(f, &fill, &p).unwrap_err();
    assert!(e.message.contains("not finished"), "{}", e.message);
    let mut q = dev.create_queue(QueueKind::Compute).unwrap();
    assert!(q
        .replay(&mut cb)
        .unwrap_err()
        .message
        .contains("not finished"));
    // Launch checks apply at record time.
    let e = cb.launch(&fill, &cfg(1, 2048), &p).unwrap_err();
    assert_eq!(e.status, Status::InvalidLaunch);
    assert!(e.message.starts_with("tg_cmdbuf_launch"), "{}", e.message);
    let e = cb.launch(&fill, &cfg(1, 32), &p[..8]).unwrap_err();
    assert_eq!(e.status, Status::InvalidLaunch);
    let s = cb.signal(&sig, 1).unwrap();
    cb.finish().unwrap();
    // After finish: no more recording.
    assert!(cb.barrier().unwrap_err().message.contains("finished"));
    assert!(cb.finish().is_err());
    // Wrong size, wrong kernel, wrong node kind, no such node.
    let e = cb.set_params(f, &fill, &p[..12]).unwrap_err();
    assert_eq!(e.status, Status::InvalidLaunch);
    assert!(e.message.contains("takes 16 bytes"), "{}", e.message);
    let e = cb.set_params(f, &inc, &p).unwrap_err();
    assert!(
        e.message
            .contains("launches \"fill_u32\", not \"increment\""),
        "{}",
        e.message
    );
    let e = cb.set_params(s, &fill, &p).unwrap_err();
    assert!(
        e.message.contains("is a signal, not a launch"),
        "{}",
        e.message
    );
    let e = cb.set_value(f, 5).unwrap_err();
    assert!(
        e.message.contains("is a launch, not a signal or a wait"),
        "{}",
        e.message
    );
    let e = cb.set_value(9, 5).unwrap_err();
    assert!(e.message.contains("node 9 does not exist"), "{}", e.message);
    // Copy queues do not replay command buffers.
    let mut cq = dev.create_queue(QueueKind::Copy).unwrap();
    assert!(cq
        .replay(&mut cb)
        .unwrap_err()
        .message
        .contains("copy queue"));
    // Nothing of that changed the recorded work.
    q.replay(&mut cb).unwrap();
    q.submit().unwrap();
    sig.wait(1, 10 * SEC).unwrap();
    assert_eq!(read_u32(&buf, 31), 3);
    // An empty command buffer cannot be finished.
    let mut empty = dev.create_cmdbuf().unwrap();
    assert!(empty
        .finish()
        .unwrap_err()
        .message
        .contains("nothing was recorded"));
}

#[test]
fn dropping_the_command_buffer_and_its_signal_after_a_replay_is_safe() {
    let dev = device();
    let m = fixtures(&dev);
    let fill = m.kernel("fill_u32").unwrap();
    let n = 1 << 16;
    let buf = dev.alloc(n as u64 * 4, data_flags()).unwrap();
    let mut q = dev.create_queue(QueueKind::Compute).unwrap();
    let fence = dev.create_signal(0).unwrap();
    {
        let sig = Arc::new(dev.create_signal(0).unwrap());
        let mut cb = dev.create_cmdbuf().unwrap();
        cb.launch(
            &fill,
            &cfg(n / 256, 256),
            Params::new().u64(buf.gpu_va()).u32(4).u32(n).bytes(),
        )
        .unwrap();
        cb.signal(&sig, 77).unwrap();
        cb.finish().unwrap();
        q.replay(&mut cb).unwrap();
        // Dropped before the submit: the recorded replay holds the command buffer's memory.
    }
    // New allocations must not land on memory the replay still uses.
    let other: Vec<_> = (0..8)
        .map(|_| dev.alloc(1 << 20, data_flags()).unwrap())
        .collect();
    let sigs: Vec<_> = (0..8).map(|_| dev.create_signal(0).unwrap()).collect();
    q.signal(&fence, 1).unwrap();
    q.submit().unwrap();
    fence.wait(1, 10 * SEC).unwrap();
    assert!((0..n as usize).all(|i| read_u32(&buf, i) == 4));
    assert!(
        sigs.iter().all(|s| s.value() == 0),
        "a recycled signal slot received the stale write"
    );
    assert!(other
        .iter()
        .all(|b| unsafe { b.as_slice() }.iter().all(|&x| x == 0)));
}

/// `set_launch` changes a launch node's grid and block between replays: 300 replays, each
/// checked everywhere, of a chain (reset, fill of a prefix whose length the grid decides, an
/// increment, a second fill), with the dimensions changing every replay; refused updates change
/// nothing.
#[test]
fn launch_dimensions_change_between_replays() {
    use tegragpu::core::LaunchConfig;
    let dev = device();
    let m = fixtures(&dev);
    let fill = m.kernel("fill_u32").unwrap();
    let inc = m.kernel("increment").unwrap();
    let n = 8192u32;
    let a = dev.alloc(n as u64 * 4, data_flags()).unwrap();
    let b = dev.alloc(n as u64 * 4, data_flags()).unwrap();
    let counter = dev.alloc(4096, data_flags()).unwrap();
    let fill_p = |buf: &tegragpu::core::Buffer, v: u32| {
        Params::new()
            .u64(buf.gpu_va())
            .u32(v)
            .u32(n)
            .bytes()
            .to_vec()
    };
    let mut cb = dev.create_cmdbuf().unwrap();
    let reset_a = cb
        .launch(&fill, &cfg(n / 256, 256), &fill_p(&a, 0))
        .unwrap();
    let part_a = cb.launch(&fill, &cfg(1, 32), &fill_p(&a, 7)).unwrap();
    let i1 = cb
        .launch(
            &inc,
            &cfg(1, 32),
            Params::new().u64(counter.gpu_va()).u64(1).bytes(),
        )
        .unwrap();
    let reset_b = cb
        .launch(&fill, &cfg(n / 256, 256), &fill_p(&b, 0))
        .unwrap();
    let part_b = cb.launch(&fill, &cfg(1, 64), &fill_p(&b, 9)).unwrap();
    let done = Arc::new(dev.create_signal(0).unwrap());
    let s = cb.signal(&done, 0).unwrap();
    assert_eq!(
        (reset_a, part_a, i1, reset_b, part_b, s),
        (0, 1, 2, 3, 4, 5)
    );
    cb.finish().unwrap();
    let mut q = dev.create_queue(QueueKind::Compute).unwrap();
    let mut seed = 12345u64;
    let mut rnd = |k: u64| {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (seed >> 33) % k
    };
    for r in 1..=300u64 {
        // Grid x block covers a prefix of a and of b.
        let (ga, ba) = (1 + rnd(32) as u32, [32u32, 64, 128, 256][rnd(4) as usize]);
        let (gb, bb) = (1 + rnd(16) as u32, [32u32, 96, 256, 512][rnd(4) as usize]);
        cb.set_launch(part_a, &fill, &cfg(ga, ba)).unwrap();
        cb.set_launch(part_b, &fill, &cfg(gb, bb)).unwrap();
        cb.set_value(s, r).unwrap();
        q.replay(&mut cb).unwrap();
        q.submit().unwrap();
        done.wait(r, 10 * SEC).unwrap();
        let (ca, cbn) = ((ga * ba).min(n) as usize, (gb * bb).min(n) as usize);
        for i in 0..n as usize {
            let want_a = if i < ca { 7 } else { 0 };
            let want_b = if i < cbn { 9 } else { 0 };
            assert_eq!(
                read_u32(&a, i),
                want_a,
                "replay {r}: a[{i}], grid {ga} x {ba}"
            );
            assert_eq!(
                read_u32(&b, i),
                want_b,
                "replay {r}: b[{i}], grid {gb} x {bb}"
            );
        }
        assert_eq!(read_u64(&counter, 0), r, "replay {r}");
    }
    // Refused: another kernel, not a launch, the concurrent bit, a block the kernel cannot
    // take; each names the call, and the next replay runs with the last accepted dimensions.
    let e = cb.set_launch(part_a, &inc, &cfg(1, 32)).unwrap_err();
    assert!(
        e.message.contains("tg_cmdbuf_set_launch") && e.message.contains("increment"),
        "{}",
        e.message
    );
    let e = cb.set_launch(s, &fill, &cfg(1, 32)).unwrap_err();
    assert!(e.message.contains("not a launch"), "{}", e.message);
    let conc = LaunchConfig {
        concurrent: true,
        ..cfg(1, 32)
    };
    let e = cb.set_launch(part_a, &fill, &conc).unwrap_err();
    assert!(e.message.contains("TG_LAUNCH_CONCURRENT"), "{}", e.message);
    let e = cb.set_launch(part_a, &fill, &cfg(1, 4096)).unwrap_err();
    assert_eq!(e.status, Status::InvalidLaunch, "{}", e.message);
    cb.set_launch(part_a, &fill, &cfg(2, 32)).unwrap();
    cb.set_value(s, 301).unwrap();
    q.replay(&mut cb).unwrap();
    q.submit().unwrap();
    done.wait(301, 10 * SEC).unwrap();
    for i in 0..n as usize {
        assert_eq!(
            read_u32(&a, i),
            if i < 64 { 7 } else { 0 },
            "a[{i}] after the refusals"
        );
    }
}

/// Thread-block cluster launches (sm_90) replay in a command buffer chained between plain
/// launches: the launch after the cluster launch reads everything it wrote. Every replay changes
/// the values, and every 40th the cluster shape;
/// a change between cluster and plain launch is refused and changes nothing. On GPUs without
/// clusters the recording is refused with NOT_SUPPORTED and the command buffer stays usable.
/// (What cluster kernels see of their clusters in a command buffer is compared with libcuda by
/// the conformance cases `cluster_*`, run with `tests/conformance/run.py --cmdbuf`.)
#[test]
fn cluster_launches_replay_between_chained_launches() {
    use tegragpu::core::LaunchConfig;
    let dev = device();
    let m = fixtures(&dev);
    let fill = m.kernel("fill_u32").unwrap();
    let count = m.kernel("count_stale").unwrap();
    let inc = m.kernel("increment").unwrap();
    let n = 8192u32;
    let x = dev.alloc(n as u64 * 4, data_flags()).unwrap();
    let y = dev.alloc(n as u64 * 4, data_flags()).unwrap();
    let bad = dev.alloc(4096, data_flags()).unwrap();
    let counter = dev.alloc(4096, data_flags()).unwrap();
    let fill_p = |b: &tegragpu::core::Buffer, v: u32| {
        Params::new().u64(b.gpu_va()).u32(v).u32(n).bytes().to_vec()
    };
    let count_p = |v: u32| {
        Params::new()
            .u64(y.gpu_va())
            .u32(n)
            .u32(v)
            .u64(bad.gpu_va())
            .bytes()
            .to_vec()
    };
    let clustered = |c: u32| LaunchConfig {
        cluster: [c, 1, 1],
        ..cfg(n / 256, 256)
    };
    let done = Arc::new(dev.create_signal(0).unwrap());
    let mut cb = dev.create_cmdbuf().unwrap();
    let fx = cb
        .launch(&fill, &cfg(n / 256, 256), &fill_p(&x, 0))
        .unwrap();
    let recorded = cb.launch(&fill, &clustered(2), &fill_p(&y, 0));
    if dev.info().sm_major < 9 {
        let e = recorded.unwrap_err();
        assert_eq!(e.status, Status::NotSupported, "{}", e.message);
        assert!(e.message.contains("tg_cmdbuf_launch"), "{}", e.message);
        // Nothing was recorded; the command buffer goes on.
        let s = cb.signal(&done, 1).unwrap();
        assert_eq!((fx, s), (0, 1));
        cb.finish().unwrap();
        let mut q = dev.create_queue(QueueKind::Compute).unwrap();
        q.replay(&mut cb).unwrap();
        q.submit().unwrap();
        done.wait(1, 10 * SEC).unwrap();
        return;
    }
    let fy = recorded.unwrap();
    let c = cb
        .launch(
            &count,
            &cfg(2 * dev.info().sm_count.max(1), 256),
            &count_p(0),
        )
        .unwrap();
    let i = cb
        .launch(
            &inc,
            &cfg(1, 32),
            Params::new().u64(counter.gpu_va()).u64(1).bytes(),
        )
        .unwrap();
    let s = cb.signal(&done, 0).unwrap();
    assert_eq!((fx, fy, c, i, s), (0, 1, 2, 3, 4));
    cb.finish().unwrap();
    let mut q = dev.create_queue(QueueKind::Compute).unwrap();
    let shapes = [2u32, 4, 8];
    for r in 1..=240u64 {
        let v = r as u32 * 3;
        if r % 40 == 0 {
            let shape = shapes[(r / 40) as usize % shapes.len()];
            cb.set_launch(fy, &fill, &clustered(shape)).unwrap();
        }
        cb.set_params(fx, &fill, &fill_p(&x, v)).unwrap();
        cb.set_params(fy, &fill, &fill_p(&y, v + 1)).unwrap();
        cb.set_params(c, &count, &count_p(v + 1)).unwrap();
        cb.set_value(s, r).unwrap();
        q.replay(&mut cb).unwrap();
        q.submit().unwrap();
        done.wait(r, 10 * SEC).unwrap();
        for k in 0..n as usize {
            assert_eq!(read_u32(&y, k), v + 1, "replay {r}: y[{k}]");
        }
        for k in [0usize, 1, 4095, 8191] {
            assert_eq!(read_u32(&x, k), v, "replay {r}: x[{k}]");
        }
        assert_eq!(
            read_u32(&bad, 0),
            0,
            "replay {r}: the grid after the cluster launch read old values of y"
        );
        assert_eq!(read_u64(&counter, 0), r, "replay {r}");
    }
    // A cluster launch stays one, a plain launch stays plain; shapes the grid cannot have are
    // invalid launches. Each names the call; the next replay runs as before.
    let e = cb.set_launch(fy, &fill, &cfg(n / 256, 256)).unwrap_err();
    assert_eq!(e.status, Status::InvalidArgument, "{}", e.message);
    assert!(
        e.message.contains("tg_cmdbuf_set_launch") && e.message.contains("cluster"),
        "{}",
        e.message
    );
    let e = cb.set_launch(fx, &fill, &clustered(2)).unwrap_err();
    assert_eq!(e.status, Status::InvalidArgument, "{}", e.message);
    let odd = LaunchConfig {
        cluster: [3, 1, 1],
        ..cfg(n / 256, 256)
    };
    let e = cb.set_launch(fy, &fill, &odd).unwrap_err();
    assert_eq!(e.status, Status::InvalidLaunch, "{}", e.message);
    cb.set_params(fy, &fill, &fill_p(&y, 5)).unwrap();
    cb.set_params(c, &count, &count_p(5)).unwrap();
    cb.set_value(s, 241).unwrap();
    q.replay(&mut cb).unwrap();
    q.submit().unwrap();
    done.wait(241, 10 * SEC).unwrap();
    for k in 0..n as usize {
        assert_eq!(read_u32(&y, k), 5, "after the refusals: y[{k}]");
    }
    assert_eq!(read_u32(&bad, 0), 0);
    assert_eq!(read_u64(&counter, 0), 241);
}

/// Cooperative launches replay in a command buffer between plain launches, each with its own
/// grid barrier; the residency check applies when recording and when the grid changes, the
/// cooperative bit cannot change, and such a command buffer replays on one queue at a time. (Grid synchronisation itself, `cg_grid_sync`, is compared
/// with libcuda by `tests/conformance/run.py --cmdbuf`.)
#[test]
fn cooperative_launches_replay_and_keep_their_checks() {
    use tegragpu::core::LaunchConfig;
    let dev = device();
    let m = fixtures(&dev);
    let fill = m.kernel("fill_u32").unwrap();
    let inc = m.kernel("increment").unwrap();
    let per_sm = fill.max_active_blocks(256, 0).unwrap();
    let most = per_sm * dev.info().sm_count;
    let n = most * 256;
    let x = dev.alloc(n as u64 * 4, data_flags()).unwrap();
    let counter = dev.alloc(4096, data_flags()).unwrap();
    let fill_p = |v: u32| Params::new().u64(x.gpu_va()).u32(v).u32(n).bytes().to_vec();
    let inc_p = Params::new().u64(counter.gpu_va()).u64(1).bytes().to_vec();
    let coop = |grid: u32| LaunchConfig {
        cooperative: true,
        ..cfg(grid, 256)
    };
    let done = Arc::new(dev.create_signal(0).unwrap());
    let mut cb = dev.create_cmdbuf().unwrap();
    // Refused when recorded: a grid that cannot be resident at once, and with
    // TG_LAUNCH_CONCURRENT; nothing is recorded.
    let e = cb.launch(&fill, &coop(most + 1), &fill_p(0)).unwrap_err();
    assert_eq!(e.status, Status::InvalidLaunch, "{}", e.message);
    assert!(
        e.message.contains("tg_cmdbuf_launch") && e.message.contains("cooperative"),
        "{}",
        e.message
    );
    let both = LaunchConfig {
        concurrent: true,
        ..coop(1)
    };
    let e = cb.launch(&fill, &both, &fill_p(0)).unwrap_err();
    assert_eq!(e.status, Status::InvalidLaunch, "{}", e.message);
    let i1 = cb.launch(&inc, &cfg(1, 32), &inc_p).unwrap();
    let f1 = cb.launch(&fill, &coop(most), &fill_p(0)).unwrap();
    let i2 = cb.launch(&inc, &cfg(1, 32), &inc_p).unwrap();
    let f2 = cb.launch(&fill, &coop(1), &fill_p(0)).unwrap();
    let s = cb.signal(&done, 0).unwrap();
    assert_eq!((i1, f1, i2, f2, s), (0, 1, 2, 3, 4));
    cb.finish().unwrap();
    let mut q = dev.create_queue(QueueKind::Compute).unwrap();
    for r in 1..=200u64 {
        let v = r as u32 * 5;
        // The second cooperative fill writes a prefix of x with v + 1 after the first wrote v.
        let g2 = 1 + (r as u32 % most);
        cb.set_params(f1, &fill, &fill_p(v)).unwrap();
        cb.set_params(f2, &fill, &fill_p(v + 1)).unwrap();
        cb.set_launch(f2, &fill, &coop(g2)).unwrap();
        cb.set_value(s, r).unwrap();
        q.replay(&mut cb).unwrap();
        q.submit().unwrap();
        done.wait(r, 10 * SEC).unwrap();
        let split = (g2 * 256) as usize;
        for k in [0usize, split - 1, split, n as usize - 1] {
            if k < n as usize {
                let want = if k < split { v + 1 } else { v };
                assert_eq!(
                    read_u32(&x, k),
                    want,
                    "replay {r}: x[{k}], second grid {g2}"
                );
            }
        }
        assert_eq!(read_u64(&counter, 0), 2 * r, "replay {r}");
    }
    // Refused updates name the call and change nothing.
    let e = cb.set_launch(f1, &fill, &cfg(most, 256)).unwrap_err();
    assert_eq!(e.status, Status::InvalidArgument, "{}", e.message);
    assert!(
        e.message.contains("tg_cmdbuf_set_launch") && e.message.contains("TG_LAUNCH_COOPERATIVE"),
        "{}",
        e.message
    );
    let e = cb.set_launch(i1, &inc, &coop(1)).unwrap_err();
    assert_eq!(e.status, Status::InvalidArgument, "{}", e.message);
    let e = cb.set_launch(f2, &fill, &coop(most + 1)).unwrap_err();
    assert_eq!(e.status, Status::InvalidLaunch, "{}", e.message);
    cb.set_params(f1, &fill, &fill_p(1)).unwrap();
    cb.set_params(f2, &fill, &fill_p(2)).unwrap();
    cb.set_value(s, 201).unwrap();
    q.replay(&mut cb).unwrap();
    q.submit().unwrap();
    done.wait(201, 10 * SEC).unwrap();
    let split = ((1 + 200 % most) * 256) as usize;
    for k in 0..n as usize {
        let want = if k < split { 2 } else { 1 };
        assert_eq!(read_u32(&x, k), want, "after the refusals: x[{k}]");
    }
    assert_eq!(read_u64(&counter, 0), 402);
    // Its grid barriers serve one replay at a time: while a replay on q has not completed, a
    // replay on another queue is refused (naming the call and the other queue) and records
    // nothing; once it has completed, the other queue replays.
    let mut q2 = dev.create_queue(QueueKind::Compute).unwrap();
    cb.set_value(s, 202).unwrap();
    q.replay(&mut cb).unwrap();
    let e = q2.replay(&mut cb).unwrap_err();
    assert_eq!(e.status, Status::InvalidArgument, "{}", e.message);
    assert!(
        e.message.contains("tg_queue_replay")
            && e.message.contains("cooperative")
            && e.message.contains("another queue"),
        "{}",
        e.message
    );
    q.submit().unwrap();
    done.wait(202, 10 * SEC).unwrap();
    cb.set_value(s, 203).unwrap();
    q2.replay(&mut cb).unwrap();
    q2.submit().unwrap();
    done.wait(203, 10 * SEC).unwrap();
    assert_eq!(read_u64(&counter, 0), 406);
    // A command buffer without cooperative launches replays on two queues at once.
    let mut plain = dev.create_cmdbuf().unwrap();
    plain.launch(&inc, &cfg(1, 32), &inc_p).unwrap();
    plain.finish().unwrap();
    q.replay(&mut plain).unwrap();
    q2.replay(&mut plain).unwrap();
    q.submit().unwrap();
    q2.submit().unwrap();
    q.synchronize(10 * SEC).unwrap();
    q2.synchronize(10 * SEC).unwrap();
    assert_eq!(read_u64(&counter, 0), 408);
}
