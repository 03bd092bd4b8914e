//! Submission semantics on the emulated Orin, through the C API and the Rust API: recorded work
//! runs when it is synchronized or waited for, without an explicit submit
//! (`tg_queue_synchronize`, `tg_device_synchronize`, `tg_signal_wait`), an explicit submit still
//! batches, and a wait that times out says where the release it waited for stands.

use std::ffi::{c_void, CStr};
use std::ptr::null_mut;
use std::time::Duration;
use tegragpu::capi::*;

mod common;
use common::repo_root;

const WAIT: u64 = 10_000_000_000;

fn last_error() -> String {
    // SAFETY: tg_last_error_message returns a NUL-terminated string valid until the next failing
    // call on this thread.
    unsafe { CStr::from_ptr(tg_last_error_message()) }
        .to_string_lossy()
        .into_owned()
}

fn device_spec() -> std::ffi::CString {
    std::ffi::CString::new(std::env::var("TEGRAGPU_TEST_DEVICE").unwrap_or_else(|_| "emu".into()))
        .unwrap()
}

fn open() -> *mut tg_device {
    let mut dev = null_mut();
    let spec = device_spec();
    // SAFETY: valid C string and out-pointer.
    let st = unsafe { tg_device_open(spec.as_ptr(), &mut dev) };
    assert_eq!(st, tg_status::TG_OK, "{}", last_error());
    dev
}

/// The `increment` fixture kernel (adds its second parameter to the u64 its first points to).
unsafe fn increment_kernel(dev: *mut tg_device) -> (*mut tg_module, *mut tg_kernel) {
    let mut info: tg_device_info = std::mem::zeroed();
    info.struct_size = std::mem::size_of::<tg_device_info>() as u32;
    assert_eq!(tg_device_get_info(dev, &mut info), tg_status::TG_OK);
    let path = repo_root().join(format!(
        "tests/fixtures/cubin/kernels.sm_{}{}.cubin",
        info.sm_major, info.sm_minor
    ));
    let cubin = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let (mut m, mut k) = (null_mut(), null_mut());
    assert_eq!(
        tg_module_load(dev, cubin.as_ptr() as *const c_void, cubin.len(), &mut m),
        tg_status::TG_OK,
        "{}",
        last_error()
    );
    assert_eq!(
        tg_module_get_kernel(m, c"increment".as_ptr(), &mut k),
        tg_status::TG_OK
    );
    (m, k)
}

/// A zeroed u64 counter: its buffer, CPU pointer and the kernel's parameters (address, by 1).
unsafe fn counter(dev: *mut tg_device) -> (*mut tg_buf, *const u64, [u8; 16]) {
    let mut b = null_mut();
    assert_eq!(tg_buf_alloc(dev, 4096, 4, &mut b), tg_status::TG_OK); // 4 = TG_BUF_ZEROED
    let mut va = 0u64;
    assert_eq!(tg_buf_gpu_address(b, &mut va), tg_status::TG_OK);
    let mut cpu = null_mut();
    assert_eq!(tg_buf_cpu_ptr(b, &mut cpu), tg_status::TG_OK);
    let mut p = [0u8; 16];
    p[..8].copy_from_slice(&va.to_le_bytes());
    p[8..].copy_from_slice(&1u64.to_le_bytes());
    (b, cpu as *const u64, p)
}

fn read(c: *const u64) -> u64 {
    // SAFETY: the counter's buffer is mapped while the test holds it.
    unsafe { std::ptr::read_volatile(c) }
}

fn one_block() -> tg_launch_config {
    tg_launch_config {
        struct_size: std::mem::size_of::<tg_launch_config>() as u32,
        grid: [1, 1, 1],
        block: [1, 1, 1],
        dynamic_shared_bytes: 0,
        flags: 0,
        cluster: [0; 3],
    }
}

unsafe fn queue(dev: *mut tg_device, owned: bool) -> *mut tg_queue {
    let mut q = null_mut();
    let st = if owned {
        tg_queue_create_owned(dev, tg_queue_kind_arg(0), 0, &mut q)
    } else {
        tg_queue_create(dev, tg_queue_kind_arg(0), &mut q)
    };
    assert_eq!(st, tg_status::TG_OK, "{}", last_error());
    q
}

unsafe fn launches(q: *mut tg_queue, k: *mut tg_kernel, p: &[u8; 16], n: u64) {
    let cfg = one_block();
    for _ in 0..n {
        assert_eq!(
            tg_launch(q, k, &cfg, p.as_ptr() as *const c_void, 16),
            tg_status::TG_OK,
            "{}",
            last_error()
        );
    }
}

fn signal_value(s: *mut tg_signal) -> u64 {
    let mut v = 0;
    // SAFETY: valid handle and out-pointer.
    assert_eq!(unsafe { tg_signal_value(s, &mut v) }, tg_status::TG_OK);
    v
}

/// Recorded launches have not run: nothing submitted them (read after a pause, not waited for).
fn assert_not_run(c: *const u64, what: &str) {
    std::thread::sleep(Duration::from_millis(20));
    assert_eq!(
        read(c),
        0,
        "{what}: recorded work ran before anything submitted it"
    );
}

#[test]
fn queue_synchronize_submits_what_was_recorded() {
    let dev = open();
    unsafe {
        let (m, k) = increment_kernel(dev);
        for owned in [false, true] {
            let (b, c, p) = counter(dev);
            let q = queue(dev, owned);
            launches(q, k, &p, 100);
            assert_not_run(c, "before tg_queue_synchronize");
            assert_eq!(
                tg_queue_synchronize(q, WAIT),
                tg_status::TG_OK,
                "{}",
                last_error()
            );
            assert_eq!(read(c), 100, "owned={owned}");
            // An explicit submit still batches: submitted work runs, later work waits for
            // the next submit or synchronize.
            launches(q, k, &p, 10);
            assert_eq!(tg_queue_submit(q), tg_status::TG_OK);
            launches(q, k, &p, 5);
            assert_eq!(tg_queue_synchronize(q, WAIT), tg_status::TG_OK);
            assert_eq!(read(c), 115, "owned={owned}");
            assert_eq!(tg_queue_destroy(q), tg_status::TG_OK);
            assert_eq!(tg_buf_free(b), tg_status::TG_OK);
        }
        assert_eq!(tg_kernel_destroy(k), tg_status::TG_OK);
        assert_eq!(tg_module_destroy(m), tg_status::TG_OK);
        assert_eq!(tg_device_close(dev), tg_status::TG_OK);
    }
}

/// `tg_device_synchronize` submits every shared queue and the caller's owned queues; an owned
/// queue of another thread is its owner's to submit, and the device synchronize neither touches
/// nor waits for its recorded work.
#[test]
fn device_synchronize_submits_the_queues_it_can_reach() {
    let dev = open();
    unsafe {
        let (m, k) = increment_kernel(dev);
        let (b1, c1, p1) = counter(dev);
        let (b2, c2, p2) = counter(dev);
        let (b3, c3, p3) = counter(dev);
        let shared = queue(dev, false);
        let mine = queue(dev, true);
        launches(shared, k, &p1, 7);
        launches(mine, k, &p2, 9);
        // Another thread's owned queue with recorded work; it submits when told to.
        let (dv, kv) = (dev as usize, k as usize);
        let (to_other, from_main) = std::sync::mpsc::channel::<()>();
        let (to_main, from_other) = std::sync::mpsc::channel::<()>();
        let other = std::thread::spawn(move || {
            let (dev, k) = (dv as *mut tg_device, kv as *mut tg_kernel);
            let q = queue(dev, true);
            launches(q, k, &p3, 11);
            to_main.send(()).unwrap();
            from_main.recv().unwrap();
            assert_eq!(tg_queue_synchronize(q, WAIT), tg_status::TG_OK);
            assert_eq!(tg_queue_destroy(q), tg_status::TG_OK);
        });
        from_other.recv().unwrap();
        assert_not_run(c1, "shared queue");
        assert_eq!(
            tg_device_synchronize(dev, WAIT),
            tg_status::TG_OK,
            "{}",
            last_error()
        );
        assert_eq!(read(c1), 7, "shared queue");
        assert_eq!(read(c2), 9, "this thread's owned queue");
        assert_not_run(c3, "another thread's owned queue");
        to_other.send(()).unwrap();
        other.join().unwrap();
        assert_eq!(read(c3), 11);
        for q in [shared, mine] {
            assert_eq!(tg_queue_destroy(q), tg_status::TG_OK);
        }
        for b in [b1, b2, b3] {
            assert_eq!(tg_buf_free(b), tg_status::TG_OK);
        }
        assert_eq!(tg_kernel_destroy(k), tg_status::TG_OK);
        assert_eq!(tg_module_destroy(m), tg_status::TG_OK);
        assert_eq!(tg_device_close(dev), tg_status::TG_OK);
    }
}

/// A CPU wait for a release that is recorded but not submitted submits it: from a queue, from a
/// command buffer replay, on shared and owned queues.
#[test]
fn signal_wait_submits_the_recorded_release() {
    let dev = open();
    unsafe {
        let (m, k) = increment_kernel(dev);
        for owned in [false, true] {
            let (b, c, p) = counter(dev);
            let q = queue(dev, owned);
            let mut s = null_mut();
            assert_eq!(tg_signal_create(dev, 0, &mut s), tg_status::TG_OK);
            launches(q, k, &p, 3);
            assert_eq!(tg_queue_signal(q, s, 1), tg_status::TG_OK);
            assert_not_run(c, "signal recorded");
            assert_eq!(signal_value(s), 0);
            assert_eq!(
                tg_signal_wait(s, 1, WAIT),
                tg_status::TG_OK,
                "owned={owned}: {}",
                last_error()
            );
            assert_eq!(read(c), 3, "the launches before the release ran");
            // A wait for a value the last recorded release does not reach submits nothing and
            // times out saying so.
            launches(q, k, &p, 1);
            assert_eq!(tg_queue_signal(q, s, 2), tg_status::TG_OK);
            assert_eq!(tg_signal_wait(s, 3, 1_000_000), tg_status::TG_ERROR_TIMEOUT);
            let msg = last_error();
            assert!(msg.contains("is of 2 (below 3)"), "{msg}");
            assert_eq!(read(c), 3, "a wait for 3 submitted the release of 2");
            // Through a command buffer replay.
            let mut cb = null_mut();
            assert_eq!(tg_cmdbuf_create(dev, &mut cb), tg_status::TG_OK);
            let cfg = one_block();
            assert_eq!(
                tg_cmdbuf_launch(cb, k, &cfg, p.as_ptr() as *const c_void, 16, null_mut()),
                tg_status::TG_OK,
                "{}",
                last_error()
            );
            assert_eq!(tg_cmdbuf_signal(cb, s, 10, null_mut()), tg_status::TG_OK);
            assert_eq!(tg_cmdbuf_finish(cb), tg_status::TG_OK, "{}", last_error());
            assert_eq!(tg_queue_replay(q, cb), tg_status::TG_OK, "{}", last_error());
            assert_eq!(
                tg_signal_wait(s, 10, WAIT),
                tg_status::TG_OK,
                "{}",
                last_error()
            );
            assert_eq!(
                read(c),
                5,
                "the launch before the release of 2 and the replay's"
            );
            assert_eq!(tg_queue_synchronize(q, WAIT), tg_status::TG_OK);
            assert_eq!(tg_cmdbuf_destroy(cb), tg_status::TG_OK);
            assert_eq!(tg_signal_destroy(s), tg_status::TG_OK);
            assert_eq!(tg_queue_destroy(q), tg_status::TG_OK);
            assert_eq!(tg_buf_free(b), tg_status::TG_OK);
        }
        assert_eq!(tg_kernel_destroy(k), tg_status::TG_OK);
        assert_eq!(tg_module_destroy(m), tg_status::TG_OK);
        assert_eq!(tg_device_close(dev), tg_status::TG_OK);
    }
}

/// A wait that times out says where the release stands: none recorded; recorded on a named
/// queue but not submitted (another thread's owned queue, which the wait may not submit);
/// submitted on a named queue that has not reached it.
#[test]
fn signal_wait_timeouts_say_where_the_release_stands() {
    let dev = open();
    unsafe {
        let mut s = null_mut();
        assert_eq!(tg_signal_create(dev, 0, &mut s), tg_status::TG_OK);
        assert_eq!(tg_signal_wait(s, 1, 1_000_000), tg_status::TG_ERROR_TIMEOUT);
        let msg = last_error();
        assert!(
            msg.contains("waiting for 1") && msg.contains("no queue has recorded a release"),
            "{msg}"
        );

        // Recorded on another thread's owned queue, not submitted.
        let (dv, sv) = (dev as usize, s as usize);
        let (to_other, from_main) = std::sync::mpsc::channel::<()>();
        let (to_main, from_other) = std::sync::mpsc::channel::<u64>();
        let other = std::thread::spawn(move || {
            let q = queue(dv as *mut tg_device, true);
            assert_eq!(
                tg_queue_signal(q, sv as *mut tg_signal, 1),
                tg_status::TG_OK
            );
            to_main.send(q as u64).unwrap();
            from_main.recv().unwrap();
            assert_eq!(tg_queue_submit(q), tg_status::TG_OK);
            from_main.recv().unwrap();
            assert_eq!(tg_queue_destroy(q), tg_status::TG_OK);
        });
        from_other.recv().unwrap();
        assert_eq!(
            tg_signal_wait(s, 1, 20_000_000),
            tg_status::TG_ERROR_TIMEOUT
        );
        let msg = last_error();
        assert!(
            msg.contains("recorded on compute queue")
                && msg.contains("but not submitted")
                && msg.contains("tg_queue_submit"),
            "{msg}"
        );
        assert_eq!(
            signal_value(s),
            0,
            "the wait submitted another thread's owned queue"
        );
        to_other.send(()).unwrap();
        assert_eq!(
            tg_signal_wait(s, 1, WAIT),
            tg_status::TG_OK,
            "{}",
            last_error()
        );
        to_other.send(()).unwrap();
        other.join().unwrap();

        // Submitted, held back on the GPU by a wait for another signal.
        let mut gate = null_mut();
        assert_eq!(tg_signal_create(dev, 0, &mut gate), tg_status::TG_OK);
        let q = queue(dev, false);
        assert_eq!(tg_queue_wait(q, gate, 1), tg_status::TG_OK);
        assert_eq!(tg_queue_signal(q, s, 2), tg_status::TG_OK);
        assert_eq!(tg_queue_submit(q), tg_status::TG_OK);
        assert_eq!(
            tg_signal_wait(s, 2, 20_000_000),
            tg_status::TG_ERROR_TIMEOUT
        );
        let msg = last_error();
        assert!(
            msg.contains("was submitted on compute queue") && msg.contains("still running"),
            "{msg}"
        );
        assert_eq!(tg_signal_set(gate, 1), tg_status::TG_OK);
        assert_eq!(
            tg_signal_wait(s, 2, WAIT),
            tg_status::TG_OK,
            "{}",
            last_error()
        );
        assert_eq!(tg_queue_destroy(q), tg_status::TG_OK);
        for x in [s, gate] {
            assert_eq!(tg_signal_destroy(x), tg_status::TG_OK);
        }
        assert_eq!(tg_device_close(dev), tg_status::TG_OK);
    }
}

/// The Rust API: `Queue::synchronize` submits; `Signal::wait` cannot submit a Rust queue (the
/// caller owns it) and its timeout names the queue that holds the unsubmitted release.
#[test]
fn rust_api_queue_synchronize_submits_and_waits_explain() {
    use tegragpu::core::{Device, LaunchConfig, QueueKind};
    let spec = device_spec().into_string().unwrap();
    let dev = Device::open(Some(&spec)).unwrap();
    let info = dev.info().clone();
    let path = repo_root().join(format!(
        "tests/fixtures/cubin/kernels.sm_{}{}.cubin",
        info.sm_major, info.sm_minor
    ));
    let module = dev.load_module(&std::fs::read(path).unwrap()).unwrap();
    let k = module.kernel("increment").unwrap();
    let buf = dev
        .alloc(
            4096,
            tegragpu::core::MemFlags {
                zeroed: true,
                ..Default::default()
            },
        )
        .unwrap();
    let mut p = [0u8; 16];
    p[..8].copy_from_slice(&buf.gpu_va().to_le_bytes());
    p[8..].copy_from_slice(&1u64.to_le_bytes());
    let c = buf.cpu_ptr() as *const u64;
    let mut q = dev.create_queue(QueueKind::Compute).unwrap();
    let cfg = LaunchConfig {
        grid: [1, 1, 1],
        block: [1, 1, 1],
        dynamic_shared_bytes: 0,
        cooperative: false,
        concurrent: false,
        cluster: [0; 3],
    };
    for _ in 0..4 {
        q.launch(&k, &cfg, &p).unwrap();
    }
    assert_not_run(c, "Rust queue");
    q.synchronize(WAIT).unwrap();
    assert_eq!(read(c), 4);
    let s = dev.create_signal(0).unwrap();
    q.signal(&s, 1).unwrap();
    let e = s.wait(1, 1_000_000).unwrap_err();
    assert!(e.message.contains("but not submitted"), "{}", e.message);
    q.submit().unwrap();
    s.wait(1, WAIT).unwrap();
}
