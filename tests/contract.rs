//! The contract suite: the behaviour every backend must show (in the spirit of tinygrad's
//! test_hcq.py), written against the core API. Runs on the emulated Orin in CI and on the H200
//! through `TEGRAGPU_TEST_DEVICE=rm`.

mod common;
use common::*;
use tegragpu::core::{QueueKind, Signal};
use tegragpu::Status;

fn read_u32(b: &tegragpu::core::Buffer, i: usize) -> u32 {
    unsafe { std::ptr::read_volatile((b.cpu_ptr() as *const u32).add(i)) }
}
fn read_u64(b: &tegragpu::core::Buffer, i: usize) -> u64 {
    unsafe { std::ptr::read_volatile((b.cpu_ptr() as *const u64).add(i)) }
}

#[test]
fn signal_from_compute_and_copy_queues() {
    let dev = device();
    for kind in [QueueKind::Compute, QueueKind::Copy] {
        let mut q = dev.create_queue(kind).unwrap();
        let s = dev.create_signal(0).unwrap();
        q.signal(&s, 1).unwrap();
        q.submit().unwrap();
        s.wait(1, 5 * SEC).unwrap();
        assert_eq!(s.value(), 1);
        assert_ne!(s.timestamp(), 0, "a GPU release writes a timestamp");
        q.signal(&s, 7).unwrap();
        q.submit().unwrap();
        s.wait(7, 5 * SEC).unwrap();
        assert_eq!(s.value(), 7);
    }
}

#[test]
fn gpu_wait_then_signal() {
    let dev = device();
    let mut q = dev.create_queue(QueueKind::Compute).unwrap();
    let a = dev.create_signal(0).unwrap();
    let b = dev.create_signal(0).unwrap();
    let mut q2 = dev.create_queue(QueueKind::Copy).unwrap();
    q2.signal(&a, 3).unwrap();
    q2.submit().unwrap();
    q.wait(&a, 3).unwrap();
    q.signal(&b, 4).unwrap();
    q.submit().unwrap();
    b.wait(4, 5 * SEC).unwrap();
}

#[test]
fn wait_set_late_by_cpu() {
    let dev = device();
    let mut q = dev.create_queue(QueueKind::Compute).unwrap();
    let gate = dev.create_signal(0).unwrap();
    let done = dev.create_signal(0).unwrap();
    q.wait(&gate, 1).unwrap();
    q.signal(&done, 1).unwrap();
    q.submit().unwrap();
    let e = done.wait(1, 50_000_000).unwrap_err();
    assert_eq!(
        e.status,
        Status::Timeout,
        "must not pass the GPU wait before the CPU sets the gate: {e:?}"
    );
    assert_eq!(done.value(), 0);
    gate.set(1);
    done.wait(1, 5 * SEC).unwrap();
}

#[test]
fn one_kernel() {
    let dev = device();
    let m = fixtures(&dev);
    let k = m.kernel("fill_u32").unwrap();
    let n = 1000u32;
    let buf = dev.alloc(n as u64 * 4, data_flags()).unwrap();
    let mut q = dev.create_queue(QueueKind::Compute).unwrap();
    let s = dev.create_signal(0).unwrap();
    q.launch(
        &k,
        &cfg(n.div_ceil(128), 128),
        Params::new().u64(buf.gpu_va()).u32(0xC0FFEE).u32(n).bytes(),
    )
    .unwrap();
    q.signal(&s, 1).unwrap();
    q.submit().unwrap();
    s.wait(1, 5 * SEC).unwrap();
    for i in 0..n as usize {
        assert_eq!(read_u32(&buf, i), 0xC0FFEE, "element {i}");
    }
}

#[test]
fn two_dependent_kernels_100_times() {
    let dev = device();
    let m = fixtures(&dev);
    let k = m.kernel("increment").unwrap();
    let buf = dev.alloc(4096, data_flags()).unwrap();
    let mut q = dev.create_queue(QueueKind::Compute).unwrap();
    let s = dev.create_signal(0).unwrap();
    for i in 0..100u64 {
        q.launch(
            &k,
            &cfg(1, 32),
            Params::new().u64(buf.gpu_va()).u64(1).bytes(),
        )
        .unwrap();
        q.launch(
            &k,
            &cfg(1, 32),
            Params::new().u64(buf.gpu_va()).u64(2).bytes(),
        )
        .unwrap();
        q.signal(&s, i + 1).unwrap();
        q.submit().unwrap();
    }
    s.wait(100, 10 * SEC).unwrap();
    assert_eq!(read_u64(&buf, 0), 300);
}

#[test]
fn update_arguments_and_resubmit() {
    let dev = device();
    let m = fixtures(&dev);
    let k = m.kernel("fill_u32").unwrap();
    let a = dev.alloc(4096, data_flags()).unwrap();
    let b = dev.alloc(4096, data_flags()).unwrap();
    let mut q = dev.create_queue(QueueKind::Compute).unwrap();
    let s = dev.create_signal(0).unwrap();
    q.launch(
        &k,
        &cfg(1, 64),
        Params::new().u64(a.gpu_va()).u32(11).u32(64).bytes(),
    )
    .unwrap();
    q.signal(&s, 1).unwrap();
    q.submit().unwrap();
    s.wait(1, 5 * SEC).unwrap();
    q.launch(
        &k,
        &cfg(1, 64),
        Params::new().u64(b.gpu_va()).u32(22).u32(32).bytes(),
    )
    .unwrap();
    q.signal(&s, 2).unwrap();
    q.submit().unwrap();
    s.wait(2, 5 * SEC).unwrap();
    assert_eq!((read_u32(&a, 0), read_u32(&a, 63)), (11, 11));
    assert_eq!(
        (read_u32(&b, 0), read_u32(&b, 31), read_u32(&b, 32)),
        (22, 22, 0)
    );
}

fn copy_and_check(
    dev: &tegragpu::core::Device,
    kind: QueueKind,
    size: u64,
    src_off: u64,
    dst_off: u64,
) {
    let src = dev.alloc(size + src_off + 64, data_flags()).unwrap();
    let dst = dev.alloc(size + dst_off + 64, data_flags()).unwrap();
    let s = unsafe { src.as_mut_slice() };
    for (i, b) in s.iter_mut().enumerate() {
        *b = (i as u64).wrapping_mul(2654435761).rotate_right(13) as u8 | 1;
    }
    let mut q = dev.create_queue(kind).unwrap();
    let sig = dev.create_signal(0).unwrap();
    q.copy(&dst, dst_off, &src, src_off, size).unwrap();
    q.signal(&sig, 1).unwrap();
    q.submit().unwrap();
    sig.wait(1, 30 * SEC).unwrap();
    let d = unsafe { dst.as_slice() };
    let s = unsafe { src.as_slice() };
    assert!(
        d[..dst_off as usize].iter().all(|&x| x == 0),
        "bytes before the destination range untouched"
    );
    assert!(
        d[(dst_off + size) as usize..].iter().all(|&x| x == 0),
        "bytes after the destination range untouched"
    );
    assert!(
        d[dst_off as usize..(dst_off + size) as usize]
            == s[src_off as usize..(src_off + size) as usize],
        "{kind:?} queue: copy of {size} bytes from offset {src_off} to offset {dst_off}"
    );
}

#[test]
fn copies_small_odd_and_offsets() {
    let dev = device();
    for (size, so, dof) in [
        (1, 0, 0),
        (4, 0, 0),
        (1, 3, 5),
        (3, 1, 2),
        (1023, 7, 1),
        (4097, 4095, 3),
        (65537, 0, 1),
        // 16-byte and 4-byte aligned (the SM copy's vector paths) with tails.
        (16 * 4096 + 12, 16, 32),
        (4 * 1000 + 3, 4, 8),
        (256 * 1024 * 16, 0, 0),
        // The SM copy works in 4 KiB chunks: whole chunks and a partial last chunk on each of
        // its 16-byte, 4-byte and byte paths, and exactly one chunk.
        (4096, 0, 0),
        (3 * 4096 + 16 * 5 + 7, 0, 16),
        (5 * 4096 + 4 * 9 + 2, 4, 8),
        (3 * 4096 + 100, 1, 2),
        (2 * 4096 + 5, 3, 3),
    ] {
        for kind in [QueueKind::Copy, QueueKind::Compute] {
            copy_and_check(&dev, kind, size, so, dof);
        }
    }
}

#[test]
fn copy_64_mib() {
    let dev = device();
    copy_and_check(&dev, QueueKind::Copy, 64 << 20, 0, 0);
    copy_and_check(&dev, QueueKind::Compute, 64 << 20, 0, 0);
}

#[test]
fn compute_queue_copies_are_ordered_with_launches() {
    // fill(a, 41) -> copy a to b -> fill(a, 7) -> increment(b[0] as u64) -> copy b to c, with no
    // barriers: each step must see the previous one's writes, and the copy must read `a` before
    // the second fill overwrites it.
    let dev = device();
    let m = fixtures(&dev);
    let fill = m.kernel("fill_u32").unwrap();
    let inc = m.kernel("increment").unwrap();
    let n = 100_000u32;
    let bytes = n as u64 * 4;
    let a = dev.alloc(bytes, data_flags()).unwrap();
    let b = dev.alloc(bytes, data_flags()).unwrap();
    let c = dev.alloc(bytes, data_flags()).unwrap();
    let mut q = dev.create_queue(QueueKind::Compute).unwrap();
    let s = dev.create_signal(0).unwrap();
    let fill_cfg = cfg(n.div_ceil(256), 256);
    let fill_params = |v: u32| {
        let mut p = Vec::new();
        p.extend_from_slice(&a.gpu_va().to_le_bytes());
        p.extend_from_slice(&v.to_le_bytes());
        p.extend_from_slice(&n.to_le_bytes());
        p
    };
    q.launch(&fill, &fill_cfg, &fill_params(41)).unwrap();
    q.copy(&b, 0, &a, 0, bytes).unwrap();
    q.launch(&fill, &fill_cfg, &fill_params(7)).unwrap();
    let mut p = Vec::new();
    p.extend_from_slice(&b.gpu_va().to_le_bytes());
    p.extend_from_slice(&1u64.to_le_bytes());
    q.launch(&inc, &cfg(1, 1), &p).unwrap();
    q.copy(&c, 0, &b, 0, bytes).unwrap();
    q.signal(&s, 1).unwrap();
    q.submit().unwrap();
    s.wait(1, 10 * SEC).unwrap();
    for i in [0usize, 1, 255, 256, n as usize / 2, n as usize - 1] {
        let want = if i == 0 { 42 } else { 41 };
        assert_eq!(
            (read_u32(&a, i), read_u32(&b, i), read_u32(&c, i)),
            (7, want, want),
            "element {i}"
        );
    }
}

#[test]
fn overlapping_copies_are_refused_on_both_queue_kinds() {
    let dev = device();
    let buf = dev.alloc(4096, data_flags()).unwrap();
    for kind in [QueueKind::Copy, QueueKind::Compute] {
        let mut q = dev.create_queue(kind).unwrap();
        let e = q.copy(&buf, 8, &buf, 0, 16).unwrap_err();
        assert_eq!(e.status, Status::InvalidArgument);
        assert!(e.message.contains("overlap"), "{}", e.message);
        // Adjacent ranges do not overlap.
        q.copy(&buf, 16, &buf, 0, 16).unwrap();
    }
}

#[test]
fn copy_at_offsets_above_4_gib() {
    let dev = device();
    // Offsets within a buffer larger than 4 GiB: the copy engine's address fields are 64-bit.
    let size = (4u64 << 30) + (1 << 20);
    let buf = dev.alloc(size, data_flags()).unwrap();
    assert!(buf.gpu_va() + (4 << 30) > u32::MAX as u64);
    let p = buf.cpu_ptr();
    let src_off = (4u64 << 30) + 4096 + 3;
    let dst_off = (4u64 << 30) + 65536 + 1;
    let pattern: Vec<u8> = (0..777u32).map(|i| (i * 7 + 1) as u8).collect();
    unsafe {
        std::ptr::copy_nonoverlapping(pattern.as_ptr(), p.add(src_off as usize), pattern.len())
    };
    let low = dev.alloc(4096, data_flags()).unwrap();
    for kind in [QueueKind::Copy, QueueKind::Compute] {
        unsafe { std::ptr::write_bytes(p.add(dst_off as usize), 0, pattern.len()) };
        unsafe { std::ptr::write_bytes(low.cpu_ptr(), 0, 4096) };
        let mut q = dev.create_queue(kind).unwrap();
        let sig = dev.create_signal(0).unwrap();
        q.copy(&buf, dst_off, &buf, src_off, pattern.len() as u64)
            .unwrap();
        q.signal(&sig, 1).unwrap();
        q.submit().unwrap();
        sig.wait(1, 10 * SEC).unwrap();
        let got = unsafe { std::slice::from_raw_parts(p.add(dst_off as usize), pattern.len()) };
        assert_eq!(got, &pattern[..], "{kind:?} queue");
        // And a copy whose source and destination are a low and a high buffer.
        q.copy(&low, 0, &buf, src_off, 100).unwrap();
        q.signal(&sig, 2).unwrap();
        q.submit().unwrap();
        sig.wait(2, 10 * SEC).unwrap();
        assert_eq!(
            unsafe { &low.as_slice()[..100] },
            &pattern[..100],
            "{kind:?} queue"
        );
    }
}

/// One comparison rule for CPU and GPU waits: unsigned 64-bit `>=` (issue item 3). Before the
/// fix GPU waits compared circularly: `UINT64_MAX` never released a GPU wait for 1 (which a CPU
/// wait for 1 accepts), and a GPU wait for 2^63 + 1 passed at 0 (where a CPU wait blocks).
#[test]
fn cpu_and_gpu_waits_compare_unsigned_64_bit() {
    let dev = device();
    let mut q = dev.create_queue(QueueKind::Compute).unwrap();
    let done = dev.create_signal(0).unwrap();

    // UINT64_MAX satisfies a wait for 1, on the CPU and on the GPU.
    let gate = dev.create_signal(0).unwrap();
    gate.set(u64::MAX);
    gate.wait(1, 5 * SEC).unwrap();
    q.wait(&gate, 1).unwrap();
    q.signal(&done, 1).unwrap();
    q.submit().unwrap();
    let r = done.wait(1, 5 * SEC);
    if r.is_err() {
        gate.set(1); // old circular rule: 1 releases it, so the queue can drain
    }
    r.expect("a GPU wait for 1 must pass when the signal is UINT64_MAX, as the CPU wait did");

    // 0 does not satisfy a wait for 2^63 + 1, on the CPU nor on the GPU.
    let far = (1u64 << 63) + 1;
    let gate2 = dev.create_signal(0).unwrap();
    assert_eq!(
        gate2.wait(far, 0).unwrap_err().status,
        Status::Timeout,
        "CPU wait for 2^63 + 1 at 0"
    );
    q.wait(&gate2, far).unwrap();
    q.signal(&done, 2).unwrap();
    q.submit().unwrap();
    let e = done.wait(2, 50_000_000).unwrap_err();
    assert_eq!(
        e.status,
        Status::Timeout,
        "a GPU wait for 2^63 + 1 must block while the signal is 0: {e:?}"
    );
    assert_eq!(done.value(), 1);
    gate2.set(far);
    done.wait(2, 5 * SEC).unwrap();

    // Setting a lower value later does not re-block anything and the rule stays unsigned.
    gate2.set(far - 1);
    q.wait(&gate2, far).unwrap();
    q.signal(&done, 3).unwrap();
    q.submit().unwrap();
    assert_eq!(
        done.wait(3, 50_000_000).unwrap_err().status,
        Status::Timeout
    );
    gate2.set(u64::MAX);
    done.wait(3, 5 * SEC).unwrap();
}

#[test]
fn timeline_values_past_2_pow_32() {
    let dev = device();
    let mut q = dev.create_queue(QueueKind::Compute).unwrap();
    let s = dev.create_signal((1 << 32) - 2).unwrap();
    let done = dev.create_signal(0).unwrap();
    q.signal(&s, (1 << 32) + 5).unwrap();
    q.wait(&s, (1 << 32) + 5).unwrap();
    q.signal(&done, (1 << 33) + 1).unwrap();
    q.submit().unwrap();
    done.wait((1 << 33) + 1, 5 * SEC).unwrap();
    assert_eq!(s.value(), (1 << 32) + 5);
    assert_eq!(done.value(), (1 << 33) + 1);
    // A GPU wait for a value above 2^32 that is not reached yet must block.
    let gate = dev.create_signal(1 << 32).unwrap();
    q.wait(&gate, (1 << 32) + 1).unwrap();
    q.signal(&done, (1 << 33) + 2).unwrap();
    q.submit().unwrap();
    assert_eq!(
        done.wait((1 << 33) + 2, 30_000_000).unwrap_err().status,
        Status::Timeout
    );
    gate.set((1 << 32) + 1);
    done.wait((1 << 33) + 2, 5 * SEC).unwrap();
}

#[test]
fn memory_barrier_orders_compute_before_copy() {
    let dev = device();
    let m = fixtures(&dev);
    let k = m.kernel("fill_u32").unwrap();
    let n = 4096u32;
    let a = dev.alloc(n as u64 * 4, data_flags()).unwrap();
    let b = dev.alloc(n as u64 * 4, data_flags()).unwrap();
    let mut cq = dev.create_queue(QueueKind::Compute).unwrap();
    let mut xq = dev.create_queue(QueueKind::Copy).unwrap();
    let s = dev.create_signal(0).unwrap();
    let done = dev.create_signal(0).unwrap();
    cq.launch(
        &k,
        &cfg(n / 256, 256),
        Params::new().u64(a.gpu_va()).u32(0x5EED).u32(n).bytes(),
    )
    .unwrap();
    cq.barrier().unwrap();
    cq.signal(&s, 1).unwrap();
    xq.wait(&s, 1).unwrap();
    xq.copy(&b, 0, &a, 0, n as u64 * 4).unwrap();
    xq.barrier().unwrap();
    xq.signal(&done, 1).unwrap();
    xq.submit().unwrap();
    cq.submit().unwrap();
    done.wait(1, 10 * SEC).unwrap();
    for i in [0usize, 1, 2047, 4095] {
        assert_eq!(read_u32(&b, i), 0x5EED, "element {i}");
    }
}

#[test]
fn hundred_thousand_launches_without_waiting() {
    let dev = device();
    let m = fixtures(&dev);
    let k = m.kernel("increment").unwrap();
    let buf = dev.alloc(4096, data_flags()).unwrap();
    let mut q = dev.create_queue(QueueKind::Compute).unwrap();
    let params = Params::new().u64(buf.gpu_va()).u64(1);
    let n = 100_000u64;
    for i in 0..n {
        q.launch(&k, &cfg(1, 32), params.bytes()).unwrap();
        if i % 3 == 0 {
            q.submit().unwrap();
        }
    }
    q.submit().unwrap();
    q.synchronize(120 * SEC).unwrap();
    assert_eq!(
        read_u64(&buf, 0),
        n,
        "every launch ran exactly once, in order, across ring wrap-arounds"
    );
}

#[test]
fn wait_that_times_out_returns_timeout() {
    let dev = device();
    let s = dev.create_signal(0).unwrap();
    let t0 = std::time::Instant::now();
    let e = s.wait(1, 20_000_000).unwrap_err();
    assert_eq!(e.status, Status::Timeout);
    assert!(e.message.contains("tg_signal_wait"), "{}", e.message);
    assert!(t0.elapsed().as_secs() < 5, "a 20 ms wait must not hang");
    // A queue blocked on the GPU side: synchronize times out, then the CPU releases it.
    let mut q = dev.create_queue(QueueKind::Compute).unwrap();
    let gate = dev.create_signal(0).unwrap();
    q.wait(&gate, 1).unwrap();
    q.submit().unwrap();
    let e = q.synchronize(20_000_000).unwrap_err();
    assert_eq!(e.status, Status::Timeout, "{e:?}");
    gate.set(1);
    q.synchronize(5 * SEC).unwrap();
}

#[test]
fn faulting_kernel_is_reported_with_its_address() {
    let dev = device();
    let m = fixtures(&dev);
    let k = m.kernel("fill_u32").unwrap();
    let bad: u64 = 0x1000; // below every mapping
    let mut q = dev.create_queue(QueueKind::Compute).unwrap();
    let s = dev.create_signal(0).unwrap();
    q.launch(
        &k,
        &cfg(1, 32),
        Params::new().u64(bad).u32(1).u32(32).bytes(),
    )
    .unwrap();
    q.signal(&s, 1).unwrap();
    q.submit().unwrap();
    let e = s.wait(1, 10 * SEC).unwrap_err();
    assert_eq!(e.status, Status::DeviceFault, "{e:?}");
    let f = dev.fault_report().expect("a fault report");
    eprintln!(
        "fault report: code {} address {:?}: {}",
        f.code,
        f.address.map(|a| format!("{a:#x}")),
        f.what
    );
    if let Some(a) = f.address {
        assert_eq!(
            a & !0xfff,
            bad & !0xfff,
            "fault address {a:#x} vs {bad:#x}: {}",
            f.what
        );
    } else {
        assert!(
            !dev.is_emulated(),
            "the emulated Orin always reports the address"
        );
    }
    // The device refuses new work with that status.
    let e = q
        .launch(
            &k,
            &cfg(1, 32),
            Params::new().u64(bad).u32(1).u32(32).bytes(),
        )
        .unwrap_err();
    assert_eq!(e.status, Status::DeviceFault);
    assert_eq!(
        dev.create_queue(QueueKind::Compute).unwrap_err().status,
        Status::DeviceFault
    );
    drop(q);
    drop(s);
    drop(k);
    drop(m);
    drop(dev);
    // Closing and reopening works.
    let dev2 = device();
    let mut q2 = dev2.create_queue(QueueKind::Compute).unwrap();
    let s2 = dev2.create_signal(0).unwrap();
    q2.signal(&s2, 1).unwrap();
    q2.submit().unwrap();
    s2.wait(1, 5 * SEC).unwrap();
}

#[test]
fn signals_are_reusable_after_drop() {
    let dev = device();
    let mut q = dev.create_queue(QueueKind::Compute).unwrap();
    for i in 0..2000u64 {
        let s: Signal = dev.create_signal(0).unwrap();
        q.signal(&s, i + 1).unwrap();
        q.submit().unwrap();
        if i % 500 == 0 {
            s.wait(i + 1, 5 * SEC).unwrap();
        }
    }
    dev.synchronize(10 * SEC).unwrap();
}

#[test]
fn queue_depth_is_validated_and_small_rings_wrap() {
    use tegragpu::core::QueueConfig;
    let dev = device();
    for bad in [0u32, 3, 8, 100, 1 << 17] {
        let e = dev
            .create_queue_with(QueueKind::Compute, QueueConfig { depth: bad })
            .unwrap_err();
        assert_eq!(e.status, Status::InvalidArgument, "depth {bad}");
        assert!(e.message.contains(&bad.to_string()), "{}", e.message);
    }
    let m = fixtures(&dev);
    let k = m.kernel("increment").unwrap();
    let buf = dev.alloc(4096, data_flags()).unwrap();
    let mut q = dev
        .create_queue_with(QueueKind::Compute, QueueConfig { depth: 16 })
        .unwrap();
    for i in 0..500u64 {
        q.launch(
            &k,
            &cfg(1, 32),
            Params::new().u64(buf.gpu_va()).u64(1).bytes(),
        )
        .unwrap();
        if i % 2 == 0 {
            q.submit().unwrap();
        }
    }
    q.submit().unwrap();
    q.synchronize(30 * SEC).unwrap();
    assert_eq!(
        read_u64(&buf, 0),
        500,
        "every launch ran once through a 16-deep queue"
    );
}

#[test]
fn waits_recover_a_doorbell_that_came_too_early() {
    // A doorbell the GPU acts on before the GP_PUT written ahead of it arrives leaves the work
    // in the ring unseen; modelled by not ringing at all. Signal waits, queue synchronize and
    // device synchronize must still finish: they ring busy queues again when nothing moves.
    let dev = device();
    let m = fixtures(&dev);
    let k = m.kernel("fill_u32").unwrap();
    let buf = dev.alloc(256 * 4, data_flags()).unwrap();
    let mut q = dev.create_queue(QueueKind::Compute).unwrap();
    let mut c = dev.create_queue(QueueKind::Copy).unwrap();
    let s = dev.create_signal(0).unwrap();
    q.launch(
        &k,
        &cfg(2, 128),
        Params::new().u64(buf.gpu_va()).u32(77).u32(256).bytes(),
    )
    .unwrap();
    q.signal(&s, 1).unwrap();
    q.submit_without_doorbell().unwrap();
    s.wait(1, 10 * SEC).unwrap();
    assert_eq!(read_u32(&buf, 255), 77);
    q.signal(&s, 2).unwrap();
    q.submit_without_doorbell().unwrap();
    q.synchronize(10 * SEC).unwrap();
    assert_eq!(s.value(), 2);
    c.signal(&s, 3).unwrap();
    c.submit_without_doorbell().unwrap();
    dev.synchronize(10 * SEC).unwrap();
    assert_eq!(s.value(), 3);
}

/// Launches of the same kernel with the same configuration reuse what the queue built for the
/// first one (QMD, constant-bank prefix) and, in a QMD slot that already holds that launch,
/// write only the parameters. Mixing more kernels than the queue keeps, several configurations
/// of one kernel, constant banks outside the slots, a stack-limit change and a 16-deep queue
/// (every slot reused many times) must still run every launch with its own arguments: the
/// buffers must equal a CPU model of the same launches, exactly.
#[test]
fn launches_reusing_built_qmds_keep_their_own_arguments() {
    use tegragpu::core::QueueConfig;
    let dev = device();
    let m = fixtures(&dev);
    // Two kernel objects of the same function count as two kernels for the queue.
    let fills = [m.kernel("fill_u32").unwrap(), m.kernel("fill_u32").unwrap()];
    let inc = m.kernel("increment").unwrap();
    let big = m.kernel("big_params").unwrap();
    let empty = m.kernel("empty_kernel").unwrap();
    const N: usize = 4 * 64;
    let bufs: Vec<_> = (0..3)
        .map(|_| dev.alloc((N * 4) as u64, data_flags()).unwrap())
        .collect();
    let counter = dev.alloc(4096, data_flags()).unwrap();
    let big_out = dev.alloc(4096, data_flags()).unwrap();
    let mut model = vec![vec![0u32; N]; 3];
    let mut model_counter = 0u64;
    let mut model_big = vec![0u32; 512];
    let mut q = dev
        .create_queue_with(QueueKind::Compute, QueueConfig { depth: 16 })
        .unwrap();
    for i in 0..600u32 {
        if i == 300 {
            // Every launch after this one has a larger local-memory size in its QMD.
            q.synchronize(30 * SEC).unwrap();
            dev.set_stack_limit(4096).unwrap();
        }
        let b = (i % 3) as usize;
        let grid = 1 + (i / 3) % 4;
        let n = grid * 64 - (i % 7);
        let value = i.wrapping_mul(2654435761);
        let k = &fills[(i / 5 % 2) as usize];
        q.launch(
            k,
            &cfg(grid, 64),
            Params::new()
                .u64(bufs[b].gpu_va())
                .u32(value)
                .u32(n)
                .bytes(),
        )
        .unwrap();
        model[b][..n as usize].fill(value);
        q.launch(
            &inc,
            &cfg(1 + i % 2, 32),
            Params::new()
                .u64(counter.gpu_va())
                .u64(u64::from(i))
                .bytes(),
        )
        .unwrap();
        model_counter += u64::from(i);
        if i % 11 == 0 {
            let mut p = Vec::with_capacity(2056);
            p.extend_from_slice(&big_out.gpu_va().to_le_bytes());
            for j in 0..512u32 {
                p.extend_from_slice(&(j ^ value).to_le_bytes());
            }
            q.launch(&big, &cfg(4, 128), &p).unwrap();
            for (j, v) in model_big.iter_mut().enumerate() {
                *v = j as u32 ^ value;
            }
        }
        if i % 4 == 0 {
            q.launch(&empty, &cfg(1 + i % 3, 32), &[]).unwrap();
        }
        if i % 3 == 2 {
            q.submit().unwrap();
        }
    }
    q.submit().unwrap();
    q.synchronize(60 * SEC).unwrap();
    for (b, want) in model.iter().enumerate() {
        for (j, &w) in want.iter().enumerate() {
            assert_eq!(read_u32(&bufs[b], j), w, "buffer {b} element {j}");
        }
    }
    assert_eq!(read_u64(&counter, 0), model_counter, "increments");
    for (j, &w) in model_big.iter().enumerate() {
        assert_eq!(read_u32(&big_out, j), w, "big_params element {j}");
    }
}

/// `concurrent` launches: a launch flagged concurrent does not wait for the launch before it but
/// still waits for what that one waited for, and the next unflagged launch waits for the whole
/// group. P fills `a`; X and Y (concurrent with X) both read `a`; Z reads what X and Y wrote. On
/// a queue, then in a command buffer replayed with P's value changed: every element exact. (With
/// 4 Mi elements, Y starting before P finished, or Z before Y, shows on a real GPU.)
#[test]
fn concurrent_launches_wait_for_the_group_before_them() {
    let dev = device();
    let m = fixtures(&dev);
    let fill = m.kernel("fill_u32").unwrap();
    let add = m.kernel("vector_add").unwrap();
    let n: u32 = if dev.is_emulated() { 1 << 14 } else { 1 << 22 };
    let flags = tegragpu::core::MemFlags {
        zeroed: true,
        ..Default::default()
    };
    let bufs: Vec<_> = (0..5)
        .map(|_| dev.alloc(u64::from(n) * 4, flags).unwrap())
        .collect();
    let (a, b, c1, c2, d) = (&bufs[0], &bufs[1], &bufs[2], &bufs[3], &bufs[4]);
    let grid = n.div_ceil(256);
    let conc = tegragpu::core::LaunchConfig {
        concurrent: true,
        cluster: [0; 3],
        ..cfg(grid, 256)
    };
    let fill_params = |v: f32| {
        Params::new()
            .u64(a.gpu_va())
            .u32(v.to_bits())
            .u32(n)
            .bytes()
            .to_vec()
    };
    let add_params =
        |x: &tegragpu::core::Buffer, y: &tegragpu::core::Buffer, z: &tegragpu::core::Buffer| {
            Params::new()
                .u64(x.gpu_va())
                .u64(y.gpu_va())
                .u64(z.gpu_va())
                .u32(n)
                .bytes()
                .to_vec()
        };
    let check = |v: f32, what: &str| {
        // CPU views of finished buffers (mapped on first use).
        let (p1, p2, pd) = (
            c1.map_cpu().unwrap() as *const f32,
            c2.map_cpu().unwrap() as *const f32,
            d.map_cpu().unwrap() as *const f32,
        );
        for i in (0..n as usize).step_by(997).chain([n as usize - 1]) {
            // SAFETY: i < n elements of each buffer.
            let (x, y, z) = unsafe {
                (
                    std::ptr::read_volatile(p1.add(i)),
                    std::ptr::read_volatile(p2.add(i)),
                    std::ptr::read_volatile(pd.add(i)),
                )
            };
            assert_eq!((x, y, z), (v, v, 2.0 * v), "{what}: element {i}");
        }
    };
    let mut q = dev.create_queue(QueueKind::Compute).unwrap();
    q.launch(&fill, &cfg(grid, 256), &fill_params(3.0)).unwrap();
    q.launch(&add, &cfg(grid, 256), &add_params(a, b, c1))
        .unwrap();
    q.launch(&add, &conc, &add_params(a, b, c2)).unwrap();
    q.launch(&add, &cfg(grid, 256), &add_params(c1, c2, d))
        .unwrap();
    q.submit().unwrap();
    q.synchronize(30 * SEC).unwrap();
    check(3.0, "queue");

    let mut cb = dev.create_cmdbuf().unwrap();
    let p = cb
        .launch(&fill, &cfg(grid, 256), &fill_params(0.0))
        .unwrap();
    cb.launch(&add, &cfg(grid, 256), &add_params(a, b, c1))
        .unwrap();
    cb.launch(&add, &conc, &add_params(a, b, c2)).unwrap();
    cb.launch(&add, &cfg(grid, 256), &add_params(c1, c2, d))
        .unwrap();
    cb.finish().unwrap();
    for v in [5.0f32, 7.0, 11.0] {
        cb.set_params(p, &fill, &fill_params(v)).unwrap();
        q.replay(&mut cb).unwrap();
        q.submit().unwrap();
        q.synchronize(30 * SEC).unwrap();
        check(v, "command buffer");
    }
    // A concurrent queue launch right after a replay waits for what the replay's last launch
    // waited for (P, chained before it inside the command buffer).
    let mut tail = dev.create_cmdbuf().unwrap();
    let p2 = tail
        .launch(&fill, &cfg(grid, 256), &fill_params(0.0))
        .unwrap();
    tail.launch(&add, &cfg(grid, 256), &add_params(a, b, c1))
        .unwrap();
    tail.finish().unwrap();
    for v in [13.0f32, 17.0] {
        tail.set_params(p2, &fill, &fill_params(v)).unwrap();
        q.replay(&mut tail).unwrap();
        q.launch(&add, &conc, &add_params(a, b, c2)).unwrap();
        q.launch(&add, &cfg(grid, 256), &add_params(c1, c2, d))
            .unwrap();
        q.submit().unwrap();
        q.synchronize(30 * SEC).unwrap();
        check(v, "concurrent launch after a replay");
    }
    // A cooperative launch cannot be concurrent.
    let both = tegragpu::core::LaunchConfig {
        cooperative: true,
        ..conc
    };
    let e = q.launch(&add, &both, &add_params(a, b, c1)).unwrap_err();
    assert_eq!(e.status, Status::InvalidLaunch);
    assert!(e.message.contains("cooperative"), "{}", e.message);
}

/// Buffers export as dma-bufs: the whole buffer everywhere; on desktop GPUs (the NVIDIA
/// driver's `NV_ESC_EXPORT_TO_DMABUF_FD`) also any 4 KiB-aligned range of it, and a range that
/// is empty, unaligned or past the buffer is refused, naming the call. Jetson exports whole
/// buffers only: a part is `NotSupported`. (On the emulated Orin the fds are the emulated
/// kernel's, so only the refusals are checked there.)
#[test]
fn buffers_export_as_dma_bufs() {
    let dev = device();
    let info = dev.info().clone();
    let desktop = info.backend == tegragpu::backend::BackendKind::Rm;
    let buf = dev.alloc(3 * 4096, Default::default()).unwrap();
    let dmabuf_size = |fd: i32| -> u64 {
        let s = std::fs::read_to_string(format!("/proc/self/fdinfo/{fd}")).unwrap();
        assert!(s.contains("exp_name:"), "fd {fd} is not a dma-buf: {s}");
        let line = s.lines().find(|l| l.starts_with("size:")).unwrap();
        line[5..].trim().parse().unwrap()
    };
    if !info.emulated {
        let fd = buf.export_dmabuf().unwrap();
        assert_eq!(dmabuf_size(fd), buf.allocated_size());
        unsafe { libc::close(fd) };
    }
    let part = buf.export_dmabuf_range("test_export", 4096, 4096, false);
    if desktop {
        let fd = part.unwrap();
        assert_eq!(dmabuf_size(fd), 4096);
        unsafe { libc::close(fd) };
        // The PCIe mapping type: a dma-buf where the platform maps it so, else the driver's
        // NV_ERR_NOT_SUPPORTED (an H100 in a virtual machine), as NotSupported.
        match buf.export_dmabuf_range("test_export", 0, 8192, true) {
            Ok(fd) => {
                assert_eq!(dmabuf_size(fd), 8192);
                unsafe { libc::close(fd) };
            }
            Err(e) => assert_eq!(e.status, Status::NotSupported, "{e:?}"),
        }
        let total = buf.allocated_size();
        for (off, size) in [(1, 4096), (0, 0), (0, 100), (total, 4096)] {
            let e = buf
                .export_dmabuf_range("test_export", off, size, false)
                .unwrap_err();
            assert_eq!(e.status, Status::InvalidArgument, "{off} + {size}: {e:?}");
            assert!(e.message.starts_with("test_export: "), "{}", e.message);
        }
    } else {
        let e = part.unwrap_err();
        assert_eq!(e.status, Status::NotSupported, "{e:?}");
        assert!(e.message.starts_with("test_export: "), "{}", e.message);
    }
}

/// Reserved GPU addresses, physical memory and mappings (core/vmm.rs): one allocation mapped
/// at two addresses and at a part of itself, written through one mapping and read through the
/// others; an export fd of the memory imported as physical memory maps the same bytes; bad
/// sizes and ranges are refused.
#[test]
fn physical_memory_mapped_at_reserved_addresses() {
    use tegragpu::core::VMM_GRANULE as G;
    let dev = device();
    let g = G;
    for (size, align) in [(g + 4096, 0), (g, 3 * g)] {
        let e = dev.reserve_va(size, align).err().expect("refused");
        assert_eq!(
            e.status,
            Status::InvalidArgument,
            "{size:#x} {align:#x}: {e}"
        );
    }
    assert!(dev.alloc_physical(g / 2).is_err());
    let phys = std::sync::Arc::new(dev.alloc_physical(2 * g).unwrap());
    assert_eq!(phys.size(), 2 * g);
    let range = dev.reserve_va(8 * g, 0).unwrap();
    let va = range.start();
    assert_eq!(va % g, 0);
    let whole = dev.map_physical(&phys, 0, va, 2 * g).unwrap();
    let again = dev.map_physical(&phys, 0, va + 2 * g, 2 * g).unwrap();
    let half = dev.map_physical(&phys, g, va + 4 * g, g).unwrap();
    assert!(
        dev.map_physical(&phys, 0, va + g, 2 * g).is_err(),
        "over a mapping"
    );
    assert!(
        dev.map_physical(&phys, g, va + 6 * g, 2 * g).is_err(),
        "past the memory"
    );
    assert!(
        dev.map_physical(&phys, 0, va + 6 * g + 4096, g).is_err(),
        "unaligned"
    );
    let host = dev.alloc(64, Default::default()).unwrap();
    let mut q = dev.create_queue(QueueKind::Compute).unwrap();
    q.fill_va(va + g + 256, 0xfeed_0001, 4, 4).unwrap();
    q.copy_va(host.gpu_va(), va + 3 * g + 256, 16).unwrap();
    q.copy_va(host.gpu_va() + 16, va + 4 * g + 256, 16).unwrap();
    q.synchronize(5 * SEC).unwrap();
    for i in 0..8 {
        assert_eq!(read_u32(&host, i), 0xfeed_0001, "word {i}");
    }
    // Exported and imported: the same memory.
    let fd = phys.export_fd().unwrap_or_else(|e| panic!("export: {e}"));
    let imported = std::sync::Arc::new(dev.import_physical(fd).unwrap());
    unsafe { libc::close(fd) };
    assert_eq!(imported.size(), 2 * g);
    let other = dev.map_physical(&imported, 0, va + 6 * g, 2 * g).unwrap();
    q.fill_va(va + 6 * g + 512, 0xfeed_0002, 4, 1).unwrap();
    q.copy_va(host.gpu_va(), va + 512, 4).unwrap();
    q.synchronize(5 * SEC).unwrap();
    assert_eq!(read_u32(&host, 0), 0xfeed_0002);
    assert!(dev.import_physical(-1).is_err());
    drop((whole, again, half, other));
    // The addresses are free again for a new mapping.
    let m = dev.map_physical(&phys, 0, va, 2 * g).unwrap();
    drop(m);
}
