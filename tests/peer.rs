//! Peer access between devices (`Device::enable_peer_access`, cross-device `Queue::copy`,
//! `tg_device_can_access_peer`, `tg_device_enable_peer_access`).
//!
//! On the emulated Orin (and every nvgpu device) peer access is refused with the reason, through
//! the Rust API and the C API. With two GPUs of the desktop driver (`rm:0`, `rm:1`) the test
//! copies in both directions on each device's copy engine and SMs, runs kernels on one GPU over
//! the other's memory, frees a buffer while the peer's queue still holds a copy of it, and drops
//! one device before the other; it prints what the driver reports (capability bits, statuses,
//! link, peer ids) and every step, so one run tells what works. It skips, saying why, where
//! there are fewer than two RM GPUs.

mod common;

use common::{cfg, data_flags, fixtures, params_of};
use std::ffi::CStr;
use std::ptr::null_mut;
use std::sync::Arc;
use std::time::Instant;
use tegragpu::core::{Buffer, Device, Kernel, MemFlags, Queue, QueueKind, Signal};
use tegragpu::Status;

const SEC: u64 = 1_000_000_000;

fn host_flags() -> MemFlags {
    MemFlags {
        cpu_cached: true,
        ..Default::default()
    }
}

/// Byte `i` of pattern `seed`.
fn pattern(seed: u64, i: usize) -> u8 {
    ((i as u64 ^ seed).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 56) as u8
}

fn fill_pattern(b: &Buffer, seed: u64) {
    // SAFETY: no GPU work uses `b` now.
    let s = unsafe { b.as_mut_slice() };
    assert!(!s.is_empty(), "host buffer without a CPU mapping");
    for (i, x) in s.iter_mut().enumerate() {
        *x = pattern(seed, i);
    }
}

// ---------------------------------------------------------------------------------------------
// The emulated Orin: refusals

/// `e` refuses a buffer or signal of a device without a peer path: `NotSupported`, the message
/// starting with `head` and naming the reason and `also`.
fn assert_no_peer_path(e: &tegragpu::Error, head: &str, also: &str) {
    assert_eq!(e.status, Status::NotSupported, "{e}");
    assert!(
        e.message.starts_with(head)
            && e.message.contains("no peer access")
            && e.message.contains(also),
        "{e}"
    );
}

#[test]
fn emulated_orin_refuses_peer_access_with_the_reason() {
    let a = Device::open(Some("emu")).unwrap();
    let b = Device::open(Some("emu")).unwrap();

    let info = a.peer_info(&b).unwrap();
    assert!(!info.can_access, "{info:?}");
    for want in ["nvgpu", "emulated Orin", "RM backend"] {
        assert!(
            info.reason.contains(want),
            "reason lacks {want:?}: {}",
            info.reason
        );
    }
    assert!(!a.can_access_peer(&b).unwrap());
    assert!(!b.can_access_peer(&a).unwrap());

    // A device is not its own peer.
    let me = a.peer_info(&a).unwrap();
    assert!(
        !me.can_access && me.reason.contains("same device"),
        "{me:?}"
    );
    let e = a.enable_peer_access(&a).unwrap_err();
    assert_eq!(e.status, Status::InvalidArgument, "{e}");
    assert!(e.message.contains("same device"), "{e}");

    let e = a.enable_peer_access(&b).unwrap_err();
    assert_eq!(e.status, Status::NotSupported, "{e}");
    assert!(
        e.message.starts_with("tg_device_enable_peer_access: ") && e.message.contains("nvgpu"),
        "{e}"
    );
    assert!(!a.peer_access_enabled(&b));

    // A copy with a buffer of the other device is refused on both queue kinds, naming the
    // buffer and the reason; nothing is recorded.
    let mine = a.alloc(4096, data_flags()).unwrap();
    let theirs = b.alloc(4096, data_flags()).unwrap();
    for kind in [QueueKind::Copy, QueueKind::Compute] {
        let mut q = a.create_queue(kind).unwrap();
        let before = q.submitted_value();
        for (dst, src, what) in [(&mine, &theirs, "src"), (&theirs, &mine, "dst")] {
            let e = q.copy(dst, 0, src, 0, 64).unwrap_err();
            assert_no_peer_path(&e, &format!("tg_queue_copy: {what} (buffer at "), "nvgpu");
        }
        q.submit().unwrap();
        assert_eq!(
            q.submitted_value(),
            before,
            "a refused copy recorded something"
        );
    }

    // A command buffer refuses the copy the same way, naming the command buffer's device.
    {
        let mut g = a.create_cmdbuf().unwrap();
        let (mine, theirs) = (
            Arc::new(a.alloc(4096, data_flags()).unwrap()),
            Arc::new(b.alloc(4096, data_flags()).unwrap()),
        );
        let cb_dev = "not to the command buffer's device";
        for (dst, src, what) in [(&mine, &theirs, "src"), (&theirs, &mine, "dst")] {
            let e = g.copy(dst, 0, src, 0, 64).unwrap_err();
            assert_no_peer_path(&e, &format!("tg_cmdbuf_copy: {what} (buffer at "), cb_dev);
        }
        // ... and a wait on the other device's signal.
        let sig = Arc::new(b.create_signal(0).unwrap());
        let e = g.wait(&sig, 1).unwrap_err();
        assert_no_peer_path(&e, "tg_cmdbuf_wait: signal (at ", cb_dev);
        let e = g.finish().unwrap_err();
        assert!(
            e.message.contains("nothing was recorded"),
            "a refused copy was recorded: {e}"
        );
    }

    // A wait on a signal of the other device is refused the same way, on both queue kinds;
    // the device's own signals are untouched by the check.
    let their_sig = b.create_signal(5).unwrap();
    let my_sig = a.create_signal(5).unwrap();
    for kind in [QueueKind::Copy, QueueKind::Compute] {
        let mut q = a.create_queue(kind).unwrap();
        let e = q.wait(&their_sig, 1).unwrap_err();
        assert_no_peer_path(&e, "tg_queue_wait: signal (at ", "nvgpu");
        q.wait(&my_sig, 5).unwrap();
        q.synchronize(30 * SEC).unwrap();
    }

    // The device's own copies are untouched by the check.
    fill_pattern(&theirs, 7);
    let other = b.alloc(4096, data_flags()).unwrap();
    let mut q = b.create_queue(QueueKind::Copy).unwrap();
    q.copy(&other, 0, &theirs, 0, 4096).unwrap();
    q.synchronize(30 * SEC).unwrap();
    assert_eq!(unsafe { other.as_slice() }, unsafe { theirs.as_slice() });
}

fn last_error() -> String {
    // SAFETY: a NUL-terminated thread-local string.
    unsafe { CStr::from_ptr(tegragpu::capi::tg_last_error_message()) }
        .to_string_lossy()
        .into_owned()
}

#[test]
fn c_api_refuses_peer_access_on_the_emulated_orin() {
    use tegragpu::capi::*;
    // SAFETY: every pointer passed is valid for the call; handles come from earlier calls.
    unsafe {
        let (mut a, mut b) = (null_mut(), null_mut());
        assert_eq!(tg_device_open(c"emu".as_ptr(), &mut a), tg_status::TG_OK);
        assert_eq!(tg_device_open(c"emu".as_ptr(), &mut b), tg_status::TG_OK);

        let mut can = true;
        let mut reason = [0 as std::ffi::c_char; 512];
        assert_eq!(
            tg_device_can_access_peer(a, b, &mut can, reason.as_mut_ptr(), reason.len()),
            tg_status::TG_OK,
            "{}",
            last_error()
        );
        assert!(!can);
        let text = CStr::from_ptr(reason.as_ptr())
            .to_string_lossy()
            .into_owned();
        assert!(
            text.contains("nvgpu") && text.contains("RM backend"),
            "{text}"
        );

        // A short buffer gets a truncated, terminated reason; NULL takes none.
        let mut short = [0x55 as std::ffi::c_char; 8];
        can = true;
        assert_eq!(
            tg_device_can_access_peer(a, b, &mut can, short.as_mut_ptr(), short.len()),
            tg_status::TG_OK
        );
        assert!(!can);
        assert_eq!(short[7], 0);
        assert_eq!(
            CStr::from_ptr(short.as_ptr()).to_bytes(),
            &text.as_bytes()[..7]
        );
        can = true;
        assert_eq!(
            tg_device_can_access_peer(a, b, &mut can, null_mut(), 100),
            tg_status::TG_OK
        );
        assert!(!can);
        assert_eq!(
            tg_device_can_access_peer(a, b, null_mut(), null_mut(), 0),
            tg_status::TG_ERROR_NULL_POINTER
        );
        assert!(last_error().contains("out_can_access"), "{}", last_error());
        assert_eq!(
            tg_device_can_access_peer(a, null_mut(), &mut can, null_mut(), 0),
            tg_status::TG_ERROR_INVALID_HANDLE
        );
        assert!(last_error().contains("peer"), "{}", last_error());

        assert_eq!(
            tg_device_enable_peer_access(a, b),
            tg_status::TG_ERROR_NOT_SUPPORTED
        );
        let e = last_error();
        assert!(
            e.starts_with("tg_device_enable_peer_access: ") && e.contains("nvgpu"),
            "{e}"
        );
        assert_eq!(
            tg_device_enable_peer_access(a, a),
            tg_status::TG_ERROR_INVALID_ARGUMENT
        );
        assert_eq!(
            tg_device_enable_peer_access(null_mut(), b),
            tg_status::TG_ERROR_INVALID_HANDLE
        );

        // tg_queue_copy with a buffer of the other device: refused with both named.
        let (mut ba, mut bb, mut q) = (null_mut(), null_mut(), null_mut());
        assert_eq!(tg_buf_alloc(a, 4096, 0, &mut ba), tg_status::TG_OK);
        assert_eq!(tg_buf_alloc(b, 4096, 0, &mut bb), tg_status::TG_OK);
        assert_eq!(
            tg_queue_create(a, tg_queue_kind_arg(1), &mut q),
            tg_status::TG_OK
        );
        assert_eq!(
            tg_queue_copy(q, ba, 0, bb, 0, 16),
            tg_status::TG_ERROR_NOT_SUPPORTED
        );
        let e = last_error();
        assert!(
            e.starts_with("tg_queue_copy: src (buffer at ") && e.contains("no peer access"),
            "{e}"
        );
        // tg_queue_wait on a signal of the other device: refused the same way; its own
        // signals still wait.
        let (mut sa, mut sb) = (null_mut(), null_mut());
        assert_eq!(tg_signal_create(a, 3, &mut sa), tg_status::TG_OK);
        assert_eq!(tg_signal_create(b, 3, &mut sb), tg_status::TG_OK);
        assert_eq!(tg_queue_wait(q, sb, 1), tg_status::TG_ERROR_NOT_SUPPORTED);
        let e = last_error();
        assert!(
            e.starts_with("tg_queue_wait: signal (at ") && e.contains("no peer access"),
            "{e}"
        );
        assert_eq!(
            tg_queue_wait(q, sa, 3),
            tg_status::TG_OK,
            "{}",
            last_error()
        );
        // Releases stay on the signal's own device.
        assert_eq!(
            tg_queue_signal(q, sb, 4),
            tg_status::TG_ERROR_INVALID_ARGUMENT
        );
        for s in [sa, sb] {
            assert_eq!(tg_signal_destroy(s), tg_status::TG_OK);
        }
        // Its own buffers still copy.
        assert_eq!(tg_queue_copy(q, ba, 0, ba, 2048, 16), tg_status::TG_OK);
        assert_eq!(tg_queue_synchronize(q, 30 * SEC), tg_status::TG_OK);

        for h in [ba, bb] {
            assert_eq!(tg_buf_free(h), tg_status::TG_OK);
        }
        assert_eq!(tg_queue_destroy(q), tg_status::TG_OK);
        assert_eq!(tg_device_close(a), tg_status::TG_OK);
        assert_eq!(tg_device_close(b), tg_status::TG_OK);
    }
}

// ---------------------------------------------------------------------------------------------
// Two GPUs of the desktop driver

/// The RM tests run one at a time: a GPU opened twice takes a second UVM address space, and a
/// device of another GPU opened meanwhile could join that one instead of its peer's.
static RM_TESTS: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// B has recorded a wait on `sig` (a signal of A) reaching `want`, then a copy of A's `src` to
/// its `dst` (`bufs`): B must stay blocked until A's kernel (`fill_a` on `a_queue`) has filled
/// `src` with `seed` and released `sig`; then `dst` holds `seed` everywhere.
#[allow(clippy::too_many_arguments)]
fn a_releases_b(
    a_queue: &mut Queue,
    sb: &mut Side,
    fill_a: &Kernel,
    sig: &Signal,
    want: u64,
    bufs: (&Buffer, &Buffer),
    seed: u32,
    label: &str,
) {
    let (src, dst) = bufs;
    let n = src.size() / 4;
    sb.v += 1;
    sb.kq.signal(&sb.sig, sb.v).unwrap();
    sb.kq.submit().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(50));
    assert!(
        sb.sig.value() < sb.v,
        "B ran before A released the signal it waits on ({label})"
    );
    let p = params_of(fill_a, &[src.gpu_va(), seed as u64, n]);
    a_queue
        .launch(fill_a, &cfg(n.div_ceil(256) as u32, 256), &p)
        .unwrap();
    a_queue.signal(sig, want).unwrap();
    a_queue.submit().unwrap();
    sb.sig.wait(sb.v, 60 * SEC).unwrap_or_else(|e| {
        panic!(
            "B waiting on A's signal ({label}): {e}; faults {:?} {:?}",
            fill_a.device().fault_report(),
            sb.dev.fault_report()
        )
    });
    let got = sb.read(dst, 0, n * 4);
    for i in 0..n as usize {
        let v = u32::from_le_bytes(got[i * 4..i * 4 + 4].try_into().unwrap());
        assert_eq!(
            v, seed,
            "B read A's buffer before A's kernel finished ({label}): element {i}"
        );
    }
}

/// `rm:0` and `rm:1`, or why not (printed by the caller).
fn two_rm_gpus() -> Result<(Device, Device), String> {
    if !std::path::Path::new("/dev/nvidiactl").exists() {
        return Err("no /dev/nvidiactl: no desktop NVIDIA driver on this machine".into());
    }
    let a = Device::open(Some("rm:0")).map_err(|e| format!("opening rm:0: {e}"))?;
    match Device::open(Some("rm:1")) {
        Ok(b) => Ok((a, b)),
        Err(e) if e.status == Status::NotFound => Err(format!("fewer than 2 GPUs: {e}")),
        Err(e) => panic!("opening rm:1 failed: {e}"),
    }
}

/// A device with a copy queue, a compute queue and a signal to wait for them.
struct Side {
    dev: Device,
    name: &'static str,
    cq: Queue,
    kq: Queue,
    sig: Signal,
    v: u64,
}

impl Side {
    fn new(dev: Device, name: &'static str) -> Side {
        Side {
            cq: dev.create_queue(QueueKind::Copy).unwrap(),
            kq: dev.create_queue(QueueKind::Compute).unwrap(),
            sig: dev.create_signal(0).unwrap(),
            dev,
            name,
            v: 0,
        }
    }

    /// Submit queue `copy` (else compute) and wait for it.
    fn finish(&mut self, copy: bool) -> std::time::Duration {
        self.v += 1;
        let q = if copy { &mut self.cq } else { &mut self.kq };
        let t = Instant::now();
        q.signal(&self.sig, self.v).unwrap();
        q.submit().unwrap();
        self.sig.wait(self.v, 60 * SEC).unwrap_or_else(|e| {
            panic!(
                "waiting on {}'s {} queue: {e}; fault: {:?}",
                self.name,
                if copy { "copy" } else { "compute" },
                self.dev.fault_report()
            )
        });
        t.elapsed()
    }

    /// The bytes of `b` (a buffer of this device) at `off..off + len`, read through a host copy.
    fn read(&mut self, b: &Buffer, off: u64, len: u64) -> Vec<u8> {
        let h = self.dev.alloc(len, host_flags()).unwrap();
        self.cq.copy(&h, 0, b, off, len).unwrap();
        self.finish(true);
        unsafe { h.as_slice() }.to_vec()
    }

    /// A video-memory buffer of `len` bytes holding pattern `seed`.
    fn filled(&mut self, len: u64, seed: u64) -> Buffer {
        let h = self.dev.alloc(len, host_flags()).unwrap();
        fill_pattern(&h, seed);
        let v = self.dev.alloc(len, MemFlags::default()).unwrap();
        self.cq.copy(&v, 0, &h, 0, len).unwrap();
        self.finish(true);
        v
    }
}

fn check_pattern(what: &str, got: &[u8], seed: u64, from: usize) {
    if let Some(i) = (0..got.len()).find(|&i| got[i] != pattern(seed, from + i)) {
        panic!(
            "{what}: byte {i} of {} is {:#04x}, expected {:#04x} (the first difference)",
            got.len(),
            got[i],
            pattern(seed, from + i)
        );
    }
    println!("peer: {what}: all {} bytes correct", got.len());
}

fn gbs(bytes: u64, t: std::time::Duration) -> String {
    format!(
        "{:.1} GB/s ({bytes} bytes in {:.3} ms, wall time incl. submit)",
        bytes as f64 / t.as_secs_f64() / 1e9,
        t.as_secs_f64() * 1e3
    )
}

#[test]
fn rm_same_gpu_opened_twice_is_not_its_own_peer() {
    let _serial = RM_TESTS.lock().unwrap_or_else(|e| e.into_inner());
    if !std::path::Path::new("/dev/nvidiactl").exists() {
        println!("peer: SKIP: no /dev/nvidiactl: no desktop NVIDIA driver on this machine");
        return;
    }
    let a = Device::open(Some("rm:0")).unwrap();
    let a2 = Device::open(Some("rm:0")).unwrap();
    let i = a.peer_info(&a2).unwrap();
    println!("peer: rm:0 opened twice: {}", i.summary());
    assert!(!i.can_access && i.reason.contains("open twice"), "{i:?}");
    let e = a.enable_peer_access(&a2).unwrap_err();
    assert_eq!(e.status, Status::NotSupported, "{e}");
}

#[test]
fn rm_two_gpus_copy_and_share_memory() {
    let _serial = RM_TESTS.lock().unwrap_or_else(|e| e.into_inner());
    let (a, b) = match two_rm_gpus() {
        Ok(p) => p,
        Err(why) => {
            println!("peer: SKIP: two GPUs of the desktop driver are needed: {why}");
            return;
        }
    };
    println!(
        "peer: A = rm:0 {} (sm_{}{}), B = rm:1 {} (sm_{}{}), driver {}",
        a.info().name,
        a.info().sm_major,
        a.info().sm_minor,
        b.info().name,
        b.info().sm_major,
        b.info().sm_minor,
        a.info().driver_version
    );
    let ab = a.peer_info(&b).unwrap();
    let ba = b.peer_info(&a).unwrap();
    for (dir, i) in [("A -> B", &ab), ("B -> A", &ba)] {
        println!("peer: {dir}: {}", i.summary());
        println!(
            "peer: {dir}: link {:?}, atomics {}, driver: {}",
            i.link, i.atomics, i.detail
        );
    }
    assert_eq!(
        ab.can_access, ba.can_access,
        "asymmetric answers: {ab:?} / {ba:?}"
    );

    if !ab.can_access {
        // The refusal: enable and copies say why, naming both GPUs.
        let e = a.enable_peer_access(&b).unwrap_err();
        println!("peer: enable A -> B refused as expected: {e}");
        assert_eq!(e.status, Status::NotSupported, "{e}");
        assert!(e.message.contains(&ab.reason), "{e}");
        let x = a.alloc(4096, MemFlags::default()).unwrap();
        let y = b.alloc(4096, MemFlags::default()).unwrap();
        let mut q = a.create_queue(QueueKind::Copy).unwrap();
        let e = q.copy(&x, 0, &y, 0, 64).unwrap_err();
        println!("peer: copy refused as expected: {e}");
        assert_eq!(e.status, Status::NotSupported, "{e}");
        println!("peer: SKIP the copies: the driver reports no peer path between the GPUs");
        return;
    }

    // Copies of another device's buffer are refused before access is enabled.
    {
        let x = a.alloc(4096, MemFlags::default()).unwrap();
        let y = b.alloc(4096, MemFlags::default()).unwrap();
        let mut q = a.create_queue(QueueKind::Copy).unwrap();
        let e = q.copy(&x, 0, &y, 0, 64).unwrap_err();
        assert_eq!(e.status, Status::InvalidArgument, "{e}");
        assert!(e.message.contains("tg_device_enable_peer_access"), "{e}");
        println!("peer: before enabling, a copy is refused: {e}");
    }

    let mut sa = Side::new(a.clone(), "A");
    let mut sb = Side::new(b.clone(), "B");
    for s in [&sa, &sb] {
        println!(
            "peer: {}'s copy queue runs on {}; its compute queue on {}",
            s.name,
            s.cq.engine(),
            s.kq.engine()
        );
    }
    // Buffers made before access is enabled (mapped at enable) and after (mapped at
    // allocation). Odd sizes and offsets: the copies have tails.
    const N: u64 = (64 << 20) + 12 * 1024 + 5;
    let a_src = sa.filled(N, 0xA1);
    let b_src = sb.filled(N, 0xB1);
    let b_host = b.alloc(1 << 20, host_flags()).unwrap();
    fill_pattern(&b_host, 0xB7);

    for (x, y, dir) in [(&a, &b, "A -> B"), (&b, &a, "B -> A")] {
        let t = Instant::now();
        x.enable_peer_access(y)
            .unwrap_or_else(|e| panic!("enable {dir}: {e}"));
        println!(
            "peer: enabled {dir} in {:.3} ms",
            t.elapsed().as_secs_f64() * 1e3
        );
        assert!(x.peer_access_enabled(y));
        x.enable_peer_access(y).unwrap();
    }

    let a_dst = a.alloc(N + 8192, MemFlags::default()).unwrap();
    let b_dst = b.alloc(N + 8192, MemFlags::default()).unwrap();

    // 1. A's copy engine writes into B; B's copy engine writes into A.
    sa.cq.copy(&b_dst, 4099, &a_src, 3, N - 3).unwrap();
    let t = sa.finish(true);
    println!("peer: A copy engine, A -> B (write): {}", gbs(N - 3, t));
    let got = sb.read(&b_dst, 4099, N - 3);
    check_pattern("A's copy engine A -> B", &got, 0xA1, 3);

    sb.cq.copy(&a_dst, 0, &b_src, 0, N).unwrap();
    let t = sb.finish(true);
    println!("peer: B copy engine, B -> A (write): {}", gbs(N, t));
    let got = sa.read(&a_dst, 0, N);
    check_pattern("B's copy engine B -> A", &got, 0xB1, 0);

    // 2. A's copy engine reads from B.
    sa.cq.copy(&a_dst, 8192, &b_src, 0, N).unwrap();
    let t = sa.finish(true);
    println!("peer: A copy engine, B -> A (read): {}", gbs(N, t));
    let got = sa.read(&a_dst, 8192, N);
    check_pattern("A's copy engine reading B", &got, 0xB1, 0);

    // 3. The SMs: A's compute queue copies into B (the built-in copy kernel).
    sa.kq.copy(&b_dst, 0, &a_src, 0, N).unwrap();
    let t = sa.finish(false);
    println!("peer: A SM copy kernel, A -> B (write): {}", gbs(N, t));
    let got = sb.read(&b_dst, 0, N);
    check_pattern("A's SM copy kernel A -> B", &got, 0xA1, 0);

    // 3b. A command buffer of A holding copies into B's memory and out of it (the SMs of A),
    // after a launch that overwrites the destination, replayed twice: each replay moves the
    // bytes anew.
    {
        const M: u64 = (4 << 20) + 36;
        let a_in = Arc::new(sa.filled(M, 0xC1));
        let b_mid = Arc::new(b.alloc(M, MemFlags::default()).unwrap());
        let a_out = Arc::new(a.alloc(M, MemFlags::default()).unwrap());
        let ma = fixtures(&a);
        let fill = ma.kernel("fill_u32").unwrap();
        let mut g = a.create_cmdbuf().unwrap();
        let p = params_of(&fill, &[a_out.gpu_va(), 0xDEAD_BEEF, M / 4]);
        g.launch(&fill, &cfg((M / 4).div_ceil(256) as u32, 256), &p)
            .unwrap();
        g.copy(&b_mid, 0, &a_in, 0, M).unwrap();
        g.copy(&a_out, 0, &b_mid, 0, M).unwrap();
        g.finish().unwrap();
        for round in 0..2u64 {
            // New bytes in A's source each round (staged through a host buffer of A).
            let seed = 0xC1 + round;
            let h = a.alloc(M, host_flags()).unwrap();
            fill_pattern(&h, seed);
            sa.cq.copy(&a_in, 0, &h, 0, M).unwrap();
            sa.finish(true);
            sa.kq.replay(&mut g).unwrap();
            let t = sa.finish(false);
            let got = sa.read(&a_out, 0, M);
            check_pattern("A's command buffer: A -> B -> A", &got, seed, 0);
            check_pattern(
                "A's command buffer: A -> B",
                &sb.read(&b_mid, 0, M),
                seed,
                0,
            );
            println!(
                "peer: A's command buffer with copies A -> B -> A, replay {round}: correct ({})",
                gbs(2 * M, t)
            );
        }
    }

    // 4. Kernels on B over A's memory: vector_add(a = A's floats, b = B's floats, c = B) and
    // fill_u32 writing into A.
    let n: u32 = 1 << 20;
    let fa = a.alloc(n as u64 * 4, host_flags()).unwrap();
    let fb = b.alloc(n as u64 * 4, host_flags()).unwrap();
    {
        let (xa, xb) = unsafe { (fa.as_mut_slice(), fb.as_mut_slice()) };
        for i in 0..n as usize {
            xa[i * 4..i * 4 + 4].copy_from_slice(&(i as f32).to_le_bytes());
            xb[i * 4..i * 4 + 4].copy_from_slice(&0.5f32.to_le_bytes());
        }
    }
    let va = a.alloc(n as u64 * 4, MemFlags::default()).unwrap();
    let vb = b.alloc(n as u64 * 4, MemFlags::default()).unwrap();
    let out = b.alloc(n as u64 * 4, MemFlags::default()).unwrap();
    sa.cq.copy(&va, 0, &fa, 0, n as u64 * 4).unwrap();
    sa.finish(true);
    sb.cq.copy(&vb, 0, &fb, 0, n as u64 * 4).unwrap();
    sb.finish(true);
    let m = fixtures(&b);
    let add = m.kernel("vector_add").unwrap();
    let p = params_of(&add, &[va.gpu_va(), vb.gpu_va(), out.gpu_va(), n as u64]);
    sb.kq.launch(&add, &cfg(n.div_ceil(256), 256), &p).unwrap();
    sb.finish(false);
    let got = sb.read(&out, 0, n as u64 * 4);
    for i in 0..n as usize {
        let v = f32::from_le_bytes(got[i * 4..i * 4 + 4].try_into().unwrap());
        assert_eq!(v, i as f32 + 0.5, "vector_add on B reading A: element {i}");
    }
    println!("peer: kernel on B reading A's memory (vector_add, {n} floats): correct");
    let fill = m.kernel("fill_u32").unwrap();
    let p = params_of(&fill, &[va.gpu_va(), 0xC0FF_EE11, n as u64 - 1]);
    sb.kq.launch(&fill, &cfg(n.div_ceil(256), 256), &p).unwrap();
    sb.finish(false);
    let got = sa.read(&va, 0, n as u64 * 4);
    for i in 0..n as usize - 1 {
        let v = u32::from_le_bytes(got[i * 4..i * 4 + 4].try_into().unwrap());
        assert_eq!(v, 0xC0FF_EE11, "fill_u32 on B writing A: element {i}");
    }
    let last = f32::from_le_bytes(got[got.len() - 4..].try_into().unwrap());
    assert_eq!(last, (n - 1) as f32, "fill_u32 wrote past its n");
    println!("peer: kernel on B writing A's memory (fill_u32): correct");

    // 5. A host buffer of B (pinned host memory) read by A's copy engine.
    let a_small = a.alloc(1 << 20, MemFlags::default()).unwrap();
    match sa.cq.copy(&a_small, 0, &b_host, 0, 1 << 20) {
        Ok(()) => {
            sa.finish(true);
            let got = sa.read(&a_small, 0, 1 << 20);
            check_pattern("A's copy engine reading B's host buffer", &got, 0xB7, 0);
        }
        Err(e) => {
            assert_eq!(e.status, Status::NotSupported, "{e}");
            println!("peer: B's host buffers are not mapped into A: {e}");
        }
    }

    // 5b. Cross-device waits: B's compute queue waits on a signal of A (one made before
    // access was enabled, one after), then reads what A's kernel wrote. B must not run before
    // A's release: its copy stays pending while A has not started.
    let early = sa.sig.value() + 1;
    // A's own kernel: a kernel is launched on the device whose module holds it.
    let ma = fixtures(&a);
    let fill_a = ma.kernel("fill_u32").unwrap();
    for (sig, label) in [
        (&sa.sig, "made before enabling"),
        (&a.create_signal(0).unwrap(), "made after"),
    ] {
        let want = if std::ptr::eq(sig, &sa.sig) { early } else { 1 };
        match sb.kq.wait(sig, want) {
            Ok(()) => {}
            Err(e) => {
                assert_eq!(e.status, Status::NotSupported, "{e}");
                println!("peer: B cannot wait on A's signal ({label}): {e}");
                continue;
            }
        }
        let seed = 0x5EED_0000 | want as u32;
        sb.kq.copy(&vb, 0, &va, 0, n as u64 * 4).unwrap();
        a_releases_b(
            &mut sa.kq,
            &mut sb,
            &fill_a,
            sig,
            want,
            (&va, &vb),
            seed,
            label,
        );
        if std::ptr::eq(sig, &sa.sig) {
            sa.v = want;
        }
        println!("peer: B's queue waited on A's signal ({label}) on the GPU: correct");
    }

    // 5b'. The same through a command buffer of B: a wait node on a signal of A, then a copy
    // of A's buffer that A's kernel fills before it releases the signal.
    {
        const W: u64 = 1 << 16;
        let sig = Arc::new(a.create_signal(0).unwrap());
        let src = Arc::new(a.alloc(W * 4, MemFlags::default()).unwrap());
        let dst = Arc::new(b.alloc(W * 4, MemFlags::default()).unwrap());
        let mut g = b.create_cmdbuf().unwrap();
        match g.wait(&sig, 1) {
            Ok(_) => {
                g.copy(&dst, 0, &src, 0, W * 4).unwrap();
                g.finish().unwrap();
                sb.kq.replay(&mut g).unwrap();
                let label = "command buffer";
                a_releases_b(
                    &mut sa.kq,
                    &mut sb,
                    &fill_a,
                    &sig,
                    1,
                    (&src, &dst),
                    0x0B0E_CAFE,
                    label,
                );
                println!("peer: B's command buffer waited on A's signal on the GPU: correct");
            }
            Err(e) => {
                assert_eq!(e.status, Status::NotSupported, "{e}");
                println!("peer: B's command buffer cannot wait on A's signal: {e}");
            }
        }
    }

    // 5c. A signal of A dropped while B's queue still waits on it: the slot is held until B's
    // wait is done (B's queue first waits on a gate the CPU opens later).
    {
        let gate = b.create_signal(0).unwrap();
        let sig = a.create_signal(0).unwrap();
        sb.kq.wait(&gate, 1).unwrap();
        match sb.kq.wait(&sig, 1) {
            Ok(()) => {
                sb.v += 1;
                sb.kq.signal(&sb.sig, sb.v).unwrap();
                sb.kq.submit().unwrap();
                sig.set(1);
                let before = a.held_for_queued_work().1;
                drop(sig);
                let held = a.held_for_queued_work().1;
                assert_eq!(
                    held,
                    before + 1,
                    "A must hold the slot of a signal B's queue still waits on"
                );
                gate.set(1);
                sb.sig.wait(sb.v, 60 * SEC).unwrap();
                let t = Instant::now();
                while a.held_for_queued_work().1 > before && t.elapsed().as_secs() < 10 {
                    std::thread::sleep(std::time::Duration::from_millis(1));
                }
                assert_eq!(
                    a.held_for_queued_work().1,
                    before,
                    "released once B's wait is done"
                );
                println!(
                    "peer: a signal of A freed while B waits on it: held until B's wait is done"
                );
            }
            Err(e) => {
                println!("peer: B cannot wait on A's signal: {e}");
                gate.set(1);
                sb.finish(false);
            }
        }
    }

    // 6. Freeing a buffer of A while B's queue holds a copy of it (recorded, not submitted):
    // the memory stays until B's work is done.
    let tmp = sa.filled(16 << 20, 0x7E);
    // A's queues idle (their own timelines passed): only B's work can hold the buffer.
    sa.cq.synchronize(60 * SEC).unwrap();
    sa.kq.synchronize(60 * SEC).unwrap();
    assert_eq!(
        a.held_for_queued_work().0,
        0,
        "A holds nothing before the free"
    );
    sb.cq.copy(&b_dst, 0, &tmp, 0, 16 << 20).unwrap();
    drop(tmp);
    let held = a.held_for_queued_work().0;
    assert_eq!(held, 1, "A must hold the buffer for B's recorded copy");
    a.synchronize(60 * SEC).unwrap();
    assert_eq!(
        a.held_for_queued_work().0,
        1,
        "A's own queues are idle, but B's recorded copy still holds the buffer"
    );
    sb.finish(true);
    // Memory comes back when the queue's timeline passes the submission that carried the
    // copy. That release closes the submission, after the signal `finish` waited for, so the
    // CPU can see the signal a moment before it: wait for B's queue itself.
    sb.cq.synchronize(60 * SEC).unwrap();
    assert_eq!(
        a.held_for_queued_work().0,
        0,
        "released once B's queue has completed the submission with the copy"
    );
    let got = sb.read(&b_dst, 0, 16 << 20);
    check_pattern(
        "copy of a buffer of A freed while queued on B",
        &got,
        0x7E,
        0,
    );
    // A new buffer (maybe at the freed address) is mapped into B at allocation.
    let tmp2 = sa.filled(16 << 20, 0x7F);
    sb.cq.copy(&b_dst, 0, &tmp2, 0, 16 << 20).unwrap();
    sb.finish(true);
    let got = sb.read(&b_dst, 0, 16 << 20);
    check_pattern(
        "copy from a buffer of A allocated after the free",
        &got,
        0x7F,
        0,
    );
    drop(tmp2);

    // 7. Both directions at once, each on its own copy engine.
    let t = Instant::now();
    sa.cq.copy(&b_dst, 0, &a_src, 0, N).unwrap();
    sb.cq.copy(&a_dst, 0, &b_src, 0, N).unwrap();
    sa.v += 1;
    sb.v += 1;
    sa.cq.signal(&sa.sig, sa.v).unwrap();
    sb.cq.signal(&sb.sig, sb.v).unwrap();
    sa.cq.submit().unwrap();
    sb.cq.submit().unwrap();
    sa.sig.wait(sa.v, 60 * SEC).unwrap();
    sb.sig.wait(sb.v, 60 * SEC).unwrap();
    println!("peer: both directions at once: {}", gbs(2 * N, t.elapsed()));
    check_pattern("A -> B (both at once)", &sb.read(&b_dst, 0, N), 0xA1, 0);
    check_pattern("B -> A (both at once)", &sa.read(&a_dst, 0, N), 0xB1, 0);

    assert!(a.fault_report().is_none(), "{:?}", a.fault_report());
    assert!(b.fault_report().is_none(), "{:?}", b.fault_report());

    // 8. Drop A (every object of it) while B lives; B keeps working; a new device of GPU 0
    // can get peer access again.
    let keep = b_dst;
    drop((sa, a_src, a_dst, va, fa, a_small, ab, ba, fill_a, ma, a));
    let mut sb2 = sb;
    let b_local = sb2.filled(1 << 20, 0x51);
    sb2.cq.copy(&keep, 0, &b_local, 0, 1 << 20).unwrap();
    sb2.finish(true);
    check_pattern(
        "B after A was dropped",
        &sb2.read(&keep, 0, 1 << 20),
        0x51,
        0,
    );
    let a2 = Device::open(Some("rm:0")).unwrap();
    a2.enable_peer_access(&b).unwrap();
    let mut sa2 = Side::new(a2.clone(), "A'");
    let a2_dst = a2.alloc(1 << 20, MemFlags::default()).unwrap();
    sa2.cq.copy(&a2_dst, 0, &b_local, 0, 1 << 20).unwrap();
    sa2.finish(true);
    check_pattern(
        "a reopened GPU 0 reading B",
        &sa2.read(&a2_dst, 0, 1 << 20),
        0x51,
        0,
    );
    println!("peer: all steps passed");
}
