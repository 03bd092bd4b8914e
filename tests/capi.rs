//! The C API's handle and error contract, through the `extern "C"` functions themselves, on the
//! emulated Orin: stale and wrong-type handles, handle values never reused, out-parameters left
//! alone on failure, thread-local error messages, and destroy racing with use on other threads.

mod common;

use std::ffi::{c_void, CStr};
use std::ptr::null_mut;
use tegragpu::capi::*;

#[path = "capi/launch.rs"]
mod launch;
#[path = "capi/owned.rs"]
mod owned;

fn last_error() -> String {
    // SAFETY: tg_last_error_message returns a NUL-terminated string valid until the next failing
    // call on this thread.
    unsafe { CStr::from_ptr(tg_last_error_message()) }
        .to_string_lossy()
        .into_owned()
}

fn open_emu() -> *mut tg_device {
    let mut dev = null_mut();
    // SAFETY: valid C string and out-pointer.
    let st = unsafe { tg_device_open(c"emu".as_ptr(), &mut dev) };
    assert_eq!(st, tg_status::TG_OK, "{}", last_error());
    assert!(!dev.is_null());
    dev
}

/// A launch of one block of `threads` threads with `flags`.
fn one_block(threads: u32, flags: u32) -> tg_launch_config {
    tg_launch_config {
        struct_size: std::mem::size_of::<tg_launch_config>() as u32,
        grid: [1, 1, 1],
        block: [threads, 1, 1],
        dynamic_shared_bytes: 0,
        flags,
        cluster: [0; 3],
    }
}

fn signal_value(s: *mut tg_signal) -> u64 {
    let mut v = 0;
    // SAFETY: valid handle and out-pointer.
    assert_eq!(unsafe { tg_signal_value(s, &mut v) }, tg_status::TG_OK);
    v
}

/// A compute queue of the default depth, owned by this thread or shared.
unsafe fn compute_queue(dev: *mut tg_device, owned: bool) -> *mut tg_queue {
    let mut q = null_mut();
    let st = if owned {
        tg_queue_create_owned(dev, tg_queue_kind_arg(0), 0, &mut q)
    } else {
        tg_queue_create(dev, tg_queue_kind_arg(0), &mut q)
    };
    assert_eq!(st, tg_status::TG_OK, "{}", last_error());
    q
}

/// A zeroed 8-byte counter for the `increment` fixture kernel: its buffer, GPU address, CPU
/// pointer and the kernel's 16 parameter bytes (counter address, increment 1).
unsafe fn increment_counter(dev: *mut tg_device) -> (*mut tg_buf, u64, *mut c_void, [u8; 16]) {
    let mut b = null_mut();
    assert_eq!(tg_buf_alloc(dev, 4096, 4, &mut b), tg_status::TG_OK);
    let mut va = 0u64;
    assert_eq!(tg_buf_gpu_address(b, &mut va), tg_status::TG_OK);
    let mut cpu = null_mut();
    assert_eq!(tg_buf_cpu_ptr(b, &mut cpu), tg_status::TG_OK);
    let mut p = [0u8; 16];
    p[..8].copy_from_slice(&va.to_le_bytes());
    p[8..].copy_from_slice(&1u64.to_le_bytes());
    (b, va, cpu, p)
}

/// Load the sm_87 fixture module on `dev` and take its kernel `name` (through the C API).
fn fixture_kernel(dev: *mut tg_device, name: &std::ffi::CStr) -> (*mut tg_module, *mut tg_kernel) {
    let cubin = std::fs::read(common::repo_path(
        "tests/fixtures/cubin/kernels.sm_87.cubin",
    ))
    .expect("fixture cubin");
    let (mut m, mut k) = (null_mut(), null_mut());
    // SAFETY: valid handle, data pointer/length and out-pointers.
    unsafe {
        assert_eq!(
            tg_module_load(dev, cubin.as_ptr() as *const c_void, cubin.len(), &mut m),
            tg_status::TG_OK,
            "{}",
            last_error()
        );
        assert_eq!(
            tg_module_get_kernel(m, name.as_ptr(), &mut k),
            tg_status::TG_OK
        );
    }
    (m, k)
}

#[test]
fn stale_handles_are_rejected_and_values_never_reused() {
    let dev = open_emu();
    unsafe {
        let mut seen = std::collections::HashSet::new();
        let mut first = null_mut();
        assert_eq!(tg_buf_alloc(dev, 4096, 0, &mut first), tg_status::TG_OK);
        seen.insert(first as usize);
        assert_eq!(tg_buf_free(first), tg_status::TG_OK);
        for _ in 0..50 {
            let mut b = null_mut();
            assert_eq!(tg_buf_alloc(dev, 4096, 0, &mut b), tg_status::TG_OK);
            assert!(
                seen.insert(b as usize),
                "handle value {:p} handed out twice",
                b
            );
            assert_eq!(tg_buf_free(b), tg_status::TG_OK);
        }
        let mut size = 0u64;
        assert_eq!(
            tg_buf_size(first, &mut size),
            tg_status::TG_ERROR_INVALID_HANDLE
        );
        let msg = last_error();
        assert!(msg.starts_with("tg_buf_size: buf 0x"), "{msg}");
        assert!(msg.contains("is not a live tg_buf"), "{msg}");
        assert_eq!(size, 0, "out-parameter written on failure");
        assert_eq!(tg_buf_free(first), tg_status::TG_ERROR_INVALID_HANDLE);
        assert_eq!(tg_buf_free(null_mut()), tg_status::TG_OK);
        assert_eq!(tg_device_close(dev), tg_status::TG_OK);
        assert_eq!(tg_device_close(dev), tg_status::TG_ERROR_INVALID_HANDLE);
    }
}

#[test]
fn wrong_type_handles_are_rejected_and_the_object_survives() {
    let dev = open_emu();
    unsafe {
        let mut sig = null_mut();
        assert_eq!(tg_signal_create(dev, 42, &mut sig), tg_status::TG_OK);
        // Destroying the signal through the buffer API must not destroy it.
        assert_eq!(
            tg_buf_free(sig as *mut tg_buf),
            tg_status::TG_ERROR_INVALID_HANDLE
        );
        assert!(
            last_error().contains("is a tg_signal, expected a tg_buf"),
            "{}",
            last_error()
        );
        let mut v = 0;
        assert_eq!(tg_signal_value(sig, &mut v), tg_status::TG_OK);
        assert_eq!(v, 42);
        // An arbitrary address is not a handle, and is never read.
        let local = 0u64;
        let fake = &local as *const u64 as *mut tg_signal;
        assert_eq!(
            tg_signal_value(fake, &mut v),
            tg_status::TG_ERROR_INVALID_HANDLE
        );
        assert_eq!(tg_signal_destroy(sig), tg_status::TG_OK);
        assert_eq!(tg_device_close(dev), tg_status::TG_OK);
    }
}

#[test]
fn failing_calls_leave_out_parameters_alone() {
    let dev = open_emu();
    unsafe {
        let sentinel = 0x5eb7usize as *mut tg_buf;
        let mut b = sentinel;
        assert_eq!(
            tg_buf_alloc(dev, 0, 0, &mut b),
            tg_status::TG_ERROR_INVALID_ARGUMENT
        );
        assert_eq!(last_error(), "tg_buf_alloc: size_bytes is 0");
        assert_eq!(
            tg_buf_alloc(dev, 4096, 0x40, &mut b),
            tg_status::TG_ERROR_INVALID_ARGUMENT
        );
        assert!(
            last_error().starts_with("tg_buf_alloc: flags 0x40 has unknown bits 0x40"),
            "{}",
            last_error()
        );
        assert_eq!(b, sentinel);
        let mut info: tg_device_info = std::mem::zeroed();
        info.struct_size = 4;
        info.sm_count = 777;
        assert_eq!(
            tg_device_get_info(dev, &mut info),
            tg_status::TG_ERROR_INVALID_ARGUMENT
        );
        assert_eq!(info.sm_count, 777);
        info.struct_size = std::mem::size_of::<tg_device_info>() as u32;
        assert_eq!(tg_device_get_info(dev, &mut info), tg_status::TG_OK);
        // The emulated device is an Orin GPU (ga10b): nvgpu backend, sm_87.
        assert!(info.emulated);
        assert_eq!(info.backend, tg_backend::TG_BACKEND_NVGPU);
        assert_eq!((info.sm_major, info.sm_minor), (8, 7));
        assert_eq!(tg_device_close(dev), tg_status::TG_OK);
    }
}

#[test]
fn last_error_is_per_thread() {
    let dev = open_emu();
    unsafe {
        let mut b = null_mut();
        assert_eq!(
            tg_buf_alloc(dev, 0, 0, &mut b),
            tg_status::TG_ERROR_INVALID_ARGUMENT
        );
    }
    let other = std::thread::spawn(move || unsafe {
        let before = last_error();
        let mut s = null_mut();
        assert_eq!(
            tg_signal_create(null_mut(), 0, &mut s),
            tg_status::TG_ERROR_INVALID_HANDLE
        );
        (before, last_error())
    })
    .join()
    .expect("thread");
    assert_eq!(other.0, "", "a new thread starts with an empty message");
    assert_eq!(other.1, "tg_signal_create: dev is NULL");
    assert_eq!(last_error(), "tg_buf_alloc: size_bytes is 0");
    unsafe { assert_eq!(tg_device_close(dev), tg_status::TG_OK) };
}

#[test]
fn destroy_racing_with_use_on_other_threads_is_safe() {
    let dev = open_emu();
    for _ in 0..20 {
        let mut buf = null_mut();
        let mut sig = null_mut();
        unsafe {
            assert_eq!(tg_buf_alloc(dev, 1 << 16, 0, &mut buf), tg_status::TG_OK);
            assert_eq!(tg_signal_create(dev, 3, &mut sig), tg_status::TG_OK);
        }
        let (b, s) = (buf as usize, sig as usize);
        let users: Vec<_> = (0..3)
            .map(|_| {
                std::thread::spawn(move || {
                    let mut ok = 0u32;
                    for _ in 0..2000 {
                        let mut p: *mut c_void = null_mut();
                        let mut v = 0u64;
                        // SAFETY: handles are validated by the library; out-pointers are valid.
                        let st1 = unsafe { tg_buf_cpu_ptr(b as *mut tg_buf, &mut p) };
                        let st2 = unsafe { tg_signal_value(s as *mut tg_signal, &mut v) };
                        for st in [st1, st2] {
                            assert!(
                                matches!(st, tg_status::TG_OK | tg_status::TG_ERROR_INVALID_HANDLE),
                                "{st:?}"
                            );
                        }
                        if st1 == tg_status::TG_OK {
                            assert!(!p.is_null());
                            ok += 1;
                        }
                        if st2 == tg_status::TG_OK {
                            assert_eq!(v, 3);
                        }
                    }
                    ok
                })
            })
            .collect();
        unsafe {
            assert_eq!(tg_buf_free(buf), tg_status::TG_OK);
            assert_eq!(tg_signal_destroy(sig), tg_status::TG_OK);
        }
        for u in users {
            u.join().expect("user thread");
        }
    }
    unsafe { assert_eq!(tg_device_close(dev), tg_status::TG_OK) };
}

#[test]
fn children_keep_the_device_open() {
    let dev = open_emu();
    unsafe {
        let mut buf = null_mut();
        let mut q = null_mut();
        assert_eq!(
            tg_buf_alloc(dev, 4096, TG_BUF_ZEROED, &mut buf),
            tg_status::TG_OK
        );
        assert_eq!(
            tg_queue_create(dev, tg_queue_kind_arg(1), &mut q),
            tg_status::TG_OK
        );
        assert_eq!(tg_device_close(dev), tg_status::TG_OK);
        // The device handle is gone, its children still work.
        let mut info: tg_device_info = std::mem::zeroed();
        info.struct_size = std::mem::size_of::<tg_device_info>() as u32;
        assert_eq!(
            tg_device_get_info(dev, &mut info),
            tg_status::TG_ERROR_INVALID_HANDLE
        );
        let mut buf2 = null_mut();
        assert_eq!(
            tg_buf_alloc(dev, 4096, 0, &mut buf2),
            tg_status::TG_ERROR_INVALID_HANDLE
        );
        let mut p: *mut c_void = null_mut();
        assert_eq!(tg_buf_cpu_ptr(buf, &mut p), tg_status::TG_OK);
        *(p as *mut u32) = 0xfeed_beef;
        assert_eq!(tg_queue_copy(q, buf, 64, buf, 0, 4), tg_status::TG_OK);
        assert_eq!(tg_queue_submit(q), tg_status::TG_OK);
        assert_eq!(
            tg_queue_synchronize(q, 10_000_000_000),
            tg_status::TG_OK,
            "{}",
            last_error()
        );
        assert_eq!(*((p as *const u8).add(64) as *const u32), 0xfeed_beef);
        assert_eq!(tg_queue_destroy(q), tg_status::TG_OK);
        assert_eq!(tg_buf_free(buf), tg_status::TG_OK);
    }
}

#[test]
fn gpu_fault_is_reported_through_the_c_api() {
    let dev = open_emu();
    unsafe {
        let (m, k) = fixture_kernel(dev, c"vector_add");
        let (mut q, mut s, mut a) = (null_mut(), null_mut(), null_mut());
        assert_eq!(
            tg_queue_create(dev, tg_queue_kind_arg(0), &mut q),
            tg_status::TG_OK
        );
        assert_eq!(tg_signal_create(dev, 0, &mut s), tg_status::TG_OK);
        assert_eq!(tg_buf_alloc(dev, 4096, 0, &mut a), tg_status::TG_OK);
        let mut va = 0u64;
        assert_eq!(tg_buf_gpu_address(a, &mut va), tg_status::TG_OK);
        // c points at an address nothing is mapped at: the kernel's store faults.
        let bad: u64 = 0x7f_dead_0000;
        let n: u32 = 64;
        let mut params = [0u8; 28];
        params[0..8].copy_from_slice(&va.to_le_bytes());
        params[8..16].copy_from_slice(&va.to_le_bytes());
        params[16..24].copy_from_slice(&bad.to_le_bytes());
        params[24..28].copy_from_slice(&n.to_le_bytes());
        let cfg = one_block(64, 0);
        assert_eq!(
            tg_launch(q, k, &cfg, params.as_ptr() as *const c_void, params.len()),
            tg_status::TG_OK,
            "{}",
            last_error()
        );
        assert_eq!(tg_queue_signal(q, s, 1), tg_status::TG_OK);
        assert_eq!(tg_queue_submit(q), tg_status::TG_OK);
        assert_eq!(
            tg_signal_wait(s, 1, 10_000_000_000),
            tg_status::TG_ERROR_DEVICE_FAULT
        );
        assert!(
            last_error().starts_with("tg_signal_wait: "),
            "{}",
            last_error()
        );
        let mut f: tg_fault_report = std::mem::zeroed();
        f.struct_size = std::mem::size_of::<tg_fault_report>() as u32;
        assert_eq!(tg_device_get_fault(dev, &mut f), tg_status::TG_OK);
        // nvgpu's error notifier code for an MMU fault is 31 (NVGPU_CHANNEL_FIFO_ERROR_MMU_ERR_FLT).
        assert_eq!(f.code, 31);
        assert!(f.has_address);
        assert_eq!(
            f.address & !0xfff,
            bad & !0xfff,
            "fault address {:#x}",
            f.address
        );
        let msg = CStr::from_ptr(f.message.as_ptr())
            .to_string_lossy()
            .into_owned();
        assert!(msg.contains("compute queue"), "{msg}");
        // Sticky: new work is refused with the same status.
        let mut b = null_mut();
        assert_eq!(
            tg_buf_alloc(dev, 4096, 0, &mut b),
            tg_status::TG_ERROR_DEVICE_FAULT
        );
        assert!(
            last_error().starts_with("tg_buf_alloc: "),
            "{}",
            last_error()
        );
        for st in [
            tg_signal_destroy(s),
            tg_buf_free(a),
            tg_kernel_destroy(k),
            tg_module_destroy(m),
            tg_device_close(dev),
        ] {
            assert_eq!(st, tg_status::TG_OK);
        }
        // Destroying a queue of a faulted device must not hang or fail.
        assert_eq!(tg_queue_destroy(q), tg_status::TG_OK);
    }
}

/// A scratch directory under the system temp dir, removed on drop.
struct TempDir(std::path::PathBuf);
impl TempDir {
    fn new(tag: &str) -> TempDir {
        let p = std::env::temp_dir().join(format!("tegragpu-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).expect("creating a temp dir");
        TempDir(p)
    }
}
impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn load_file(dev: *mut tg_device, path: &str) -> (tg_status, *mut tg_module, String) {
    let c = std::ffi::CString::new(path).unwrap();
    let mut m = null_mut();
    // SAFETY: valid C string and out-pointer.
    let st = unsafe { tg_module_load_file(dev, c.as_ptr(), &mut m) };
    (st, m, last_error())
}

/// Issue item 7: before the fix a directory gave TG_ERROR_OS (EISDIR from read), `/dev/zero`
/// grew the process until the OOM killer ended it and a FIFO blocked forever in open().
#[test]
fn module_load_file_refuses_what_is_not_a_regular_file() {
    let dev = open_emu();
    let tmp = TempDir::new("load-file-types");
    let dir = tmp.0.to_str().unwrap().to_string();
    let fifo = tmp.0.join("fifo");
    let fifo_c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: valid C string.
    assert_eq!(unsafe { libc::mkfifo(fifo_c.as_ptr(), 0o600) }, 0, "mkfifo");
    let fifo = fifo.to_str().unwrap().to_string();
    for (path, kind) in [
        (dir.as_str(), "a directory"),
        ("/dev/zero", "a character device"),
        (fifo.as_str(), "a FIFO (named pipe)"),
    ] {
        let (st, m, msg) = load_file(dev, path);
        assert_eq!(st, tg_status::TG_ERROR_INVALID_ARGUMENT, "{path}: {msg}");
        assert!(m.is_null(), "out-parameter written on failure");
        assert_eq!(
            msg,
            format!("tg_module_load_file: \"{path}\" is {kind}, not a regular file")
        );
    }
    // A regular file still loads.
    let (st, m, msg) = load_file(
        dev,
        common::repo_path("tests/fixtures/cubin/kernels.sm_87.cubin")
            .to_str()
            .unwrap(),
    );
    assert_eq!(st, tg_status::TG_OK, "{msg}");
    unsafe {
        assert_eq!(tg_module_destroy(m), tg_status::TG_OK);
        assert_eq!(tg_device_close(dev), tg_status::TG_OK);
    }
}

/// Issue item 7: files above 1 GiB are refused from their size, before anything is read (before
/// the fix the whole file was read into memory first).
#[test]
fn module_load_file_refuses_files_above_1_gib() {
    let dev = open_emu();
    let tmp = TempDir::new("load-file-size");
    let path = tmp.0.join("huge.cubin");
    // Sparse: takes no disk space.
    let f = std::fs::File::create(&path).unwrap();
    f.set_len((1 << 30) + 1).unwrap();
    drop(f);
    let path = path.to_str().unwrap().to_string();
    let (st, m, msg) = load_file(dev, &path);
    assert_eq!(st, tg_status::TG_ERROR_INVALID_ARGUMENT, "{msg}");
    assert!(m.is_null());
    assert_eq!(
        msg,
        format!(
            "tg_module_load_file: \"{path}\" is 1073741825 bytes, larger than the 1073741824 \
             bytes (1 GiB) a module file may have"
        )
    );
    unsafe { assert_eq!(tg_device_close(dev), tg_status::TG_OK) };
}

#[test]
fn queue_abort_invalidates_the_handle_and_null_is_a_no_op() {
    let dev = open_emu();
    unsafe {
        assert_eq!(tg_queue_abort(null_mut()), tg_status::TG_OK);
        let (mut q, mut s) = (null_mut(), null_mut());
        assert_eq!(
            tg_queue_create(dev, tg_queue_kind_arg(0), &mut q),
            tg_status::TG_OK
        );
        assert_eq!(tg_signal_create(dev, 0, &mut s), tg_status::TG_OK);
        // Recorded, never submitted: the abort drops it (the signal is never written).
        assert_eq!(tg_queue_signal(q, s, 5), tg_status::TG_OK);
        assert_eq!(tg_queue_abort(q), tg_status::TG_OK);
        assert_eq!(tg_queue_submit(q), tg_status::TG_ERROR_INVALID_HANDLE);
        assert_eq!(tg_queue_abort(q), tg_status::TG_ERROR_INVALID_HANDLE);
        let msg = last_error();
        assert!(msg.starts_with("tg_queue_abort: queue 0x"), "{msg}");
        // A wrong-type handle is refused and destroys nothing.
        assert_eq!(
            tg_queue_abort(s as *mut tg_queue),
            tg_status::TG_ERROR_INVALID_HANDLE
        );
        let mut v = 1u64;
        assert_eq!(tg_signal_value(s, &mut v), tg_status::TG_OK);
        assert_eq!(v, 0, "the aborted queue's recorded signal was written");
        assert_eq!(tg_signal_destroy(s), tg_status::TG_OK);
        assert_eq!(tg_device_close(dev), tg_status::TG_OK);
    }
}

#[test]
fn signal_timestamps_come_from_gpu_releases_in_order() {
    let dev = open_emu();
    unsafe {
        let (mut q, mut start, mut end, mut b) = (null_mut(), null_mut(), null_mut(), null_mut());
        assert_eq!(
            tg_queue_create(dev, tg_queue_kind_arg(0), &mut q),
            tg_status::TG_OK
        );
        assert_eq!(tg_signal_create(dev, 0, &mut start), tg_status::TG_OK);
        assert_eq!(tg_signal_create(dev, 0, &mut end), tg_status::TG_OK);
        let mut ts = u64::MAX;
        assert_eq!(tg_signal_timestamp(start, &mut ts), tg_status::TG_OK);
        assert_eq!(ts, 0, "no GPU release yet");
        // A CPU set leaves the timestamp alone.
        assert_eq!(tg_signal_set(start, 3), tg_status::TG_OK);
        assert_eq!(tg_signal_timestamp(start, &mut ts), tg_status::TG_OK);
        assert_eq!(ts, 0);
        let size = 8u64 << 20;
        assert_eq!(tg_buf_alloc(dev, 2 * size, 0, &mut b), tg_status::TG_OK);
        assert_eq!(tg_queue_signal(q, start, 4), tg_status::TG_OK);
        assert_eq!(tg_queue_copy(q, b, size, b, 0, size), tg_status::TG_OK);
        assert_eq!(tg_queue_signal(q, end, 1), tg_status::TG_OK);
        assert_eq!(tg_queue_submit(q), tg_status::TG_OK);
        assert_eq!(tg_signal_wait(end, 1, 10_000_000_000), tg_status::TG_OK);
        let (mut t0, mut t1) = (0u64, 0u64);
        assert_eq!(tg_signal_timestamp(start, &mut t0), tg_status::TG_OK);
        assert_eq!(tg_signal_timestamp(end, &mut t1), tg_status::TG_OK);
        assert_ne!(t0, 0);
        assert!(t1 > t0, "end {t1} not after start {t0}");
        assert_eq!(
            tg_signal_timestamp(start, null_mut()),
            tg_status::TG_ERROR_NULL_POINTER
        );
        assert!(
            last_error().contains("tg_signal_timestamp"),
            "{}",
            last_error()
        );
        for s in [start, end] {
            assert_eq!(tg_signal_destroy(s), tg_status::TG_OK);
        }
        assert_eq!(tg_buf_free(b), tg_status::TG_OK);
        assert_eq!(tg_queue_destroy(q), tg_status::TG_OK);
        assert_eq!(tg_device_close(dev), tg_status::TG_OK);
    }
}

/// A command buffer's signal node, replayed through the C API (`tg_queue_replay` and
/// `tg_queue_replay_submit`, on a shared and an owned queue), waits as `tg_queue_signal` does
/// for another queue's submitted release of a smaller value of the same signal: the queues run
/// side by side, and the older value must not land after the newer one.
#[test]
fn c_replayed_signal_nodes_keep_the_newest_value() {
    unsafe {
        let dev = open_emu();
        for owned in [false, true] {
            let (mut gate, mut s, mut cb) = (null_mut(), null_mut(), null_mut());
            assert_eq!(tg_signal_create(dev, 0, &mut gate), tg_status::TG_OK);
            assert_eq!(tg_signal_create(dev, 0, &mut s), tg_status::TG_OK);
            assert_eq!(tg_cmdbuf_create(dev, &mut cb), tg_status::TG_OK);
            let mut n = 0u32;
            assert_eq!(tg_cmdbuf_signal(cb, s, 2, &mut n), tg_status::TG_OK);
            assert_eq!(tg_cmdbuf_finish(cb), tg_status::TG_OK);
            let p = compute_queue(dev, false);
            let q = compute_queue(dev, owned);
            assert_eq!(tg_queue_wait(p, gate, 1), tg_status::TG_OK);
            assert_eq!(tg_queue_signal(p, s, 1), tg_status::TG_OK);
            assert_eq!(tg_queue_submit(p), tg_status::TG_OK);
            if owned {
                assert_eq!(tg_queue_replay_submit(q, cb), tg_status::TG_OK);
            } else {
                assert_eq!(tg_queue_replay(q, cb), tg_status::TG_OK);
                assert_eq!(tg_queue_submit(q), tg_status::TG_OK);
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
            assert_eq!(
                signal_value(s),
                0,
                "owned {owned}: the replay passed P's release"
            );
            assert_eq!(tg_signal_set(gate, 1), tg_status::TG_OK);
            assert_eq!(tg_queue_synchronize(p, 30_000_000_000), tg_status::TG_OK);
            assert_eq!(tg_queue_synchronize(q, 30_000_000_000), tg_status::TG_OK);
            assert_eq!(signal_value(s), 2, "owned {owned}");
            tg_queue_destroy(q);
            tg_queue_destroy(p);
            tg_cmdbuf_destroy(cb);
            tg_signal_destroy(s);
            tg_signal_destroy(gate);
        }
        tg_device_close(dev);
    }
}

#[test]
fn command_buffers_through_the_c_api() {
    let dev = open_emu();
    let (m, k) = fixture_kernel(dev, c"increment");
    // Shared and owned command buffers, each on a shared queue and on an owned one (which
    // caches the command buffer it replays).
    for owned_cb in [false, true] {
        for owned in [false, true] {
            command_buffer_round(dev, k, owned, owned_cb);
        }
    }
    unsafe {
        for st in [
            tg_kernel_destroy(k),
            tg_module_destroy(m),
            tg_device_close(dev),
        ] {
            assert_eq!(st, tg_status::TG_OK);
        }
    }
}

fn command_buffer_round(dev: *mut tg_device, k: *mut tg_kernel, owned: bool, owned_cb: bool) {
    unsafe {
        let (mut q, mut s, mut b, mut cb) = (null_mut(), null_mut(), null_mut(), null_mut());
        let st = if owned {
            tg_queue_create_owned(dev, tg_queue_kind_arg(0), 0, &mut q)
        } else {
            tg_queue_create(dev, tg_queue_kind_arg(0), &mut q)
        };
        assert_eq!(st, tg_status::TG_OK);
        assert_eq!(tg_signal_create(dev, 0, &mut s), tg_status::TG_OK);
        assert_eq!(tg_buf_alloc(dev, 4096, 4, &mut b), tg_status::TG_OK);
        let mut va = 0u64;
        assert_eq!(tg_buf_gpu_address(b, &mut va), tg_status::TG_OK);
        let st = if owned_cb {
            tg_cmdbuf_create_owned(dev, &mut cb)
        } else {
            tg_cmdbuf_create(dev, &mut cb)
        };
        assert_eq!(st, tg_status::TG_OK);
        let cfg = one_block(32, 0);
        let params = |by: u64| {
            let mut p = [0u8; 16];
            p[..8].copy_from_slice(&va.to_le_bytes());
            p[8..].copy_from_slice(&by.to_le_bytes());
            p
        };
        let p = params(5);
        let (mut n_launch, mut n_sig) = (u32::MAX, u32::MAX);
        assert_eq!(
            tg_cmdbuf_launch(cb, k, &cfg, p.as_ptr() as *const c_void, 16, &mut n_launch),
            tg_status::TG_OK,
            "{}",
            last_error()
        );
        assert_eq!(tg_cmdbuf_signal(cb, s, 1, &mut n_sig), tg_status::TG_OK);
        assert_eq!((n_launch, n_sig), (0, 1));
        // Replay before finish: refused, naming the call.
        assert_eq!(tg_queue_replay(q, cb), tg_status::TG_ERROR_INVALID_ARGUMENT);
        assert!(
            last_error().starts_with("tg_queue_replay: "),
            "{}",
            last_error()
        );
        assert_eq!(
            tg_queue_replay_submit(q, cb),
            tg_status::TG_ERROR_INVALID_ARGUMENT
        );
        assert!(
            last_error().starts_with("tg_queue_replay_submit: ")
                && last_error().contains("not finished"),
            "{}",
            last_error()
        );
        assert_eq!(tg_cmdbuf_finish(cb), tg_status::TG_OK);
        for r in 1..=50u64 {
            let p = params(r);
            assert_eq!(
                tg_cmdbuf_set_params(cb, n_launch, k, p.as_ptr() as *const c_void, 16),
                tg_status::TG_OK,
                "{}",
                last_error()
            );
            assert_eq!(tg_cmdbuf_set_value(cb, n_sig, r), tg_status::TG_OK);
            if r % 2 == 0 {
                assert_eq!(tg_queue_replay_submit(q, cb), tg_status::TG_OK);
            } else {
                assert_eq!(tg_queue_replay(q, cb), tg_status::TG_OK);
                assert_eq!(tg_queue_submit(q), tg_status::TG_OK);
            }
            assert_eq!(tg_signal_wait(s, r, 10_000_000_000), tg_status::TG_OK);
        }
        let mut cpu = null_mut();
        assert_eq!(tg_buf_cpu_ptr(b, &mut cpu), tg_status::TG_OK);
        assert_eq!(std::ptr::read_volatile(cpu as *const u64), 50 * 51 / 2);
        // New launch dimensions: accepted; NULL cfg, TG_LAUNCH_SUBMIT and a block the kernel
        // cannot take are refused, naming the call.
        let wide = one_block(64, 0);
        assert_eq!(
            tg_cmdbuf_set_launch(cb, n_launch, k, &wide),
            tg_status::TG_OK,
            "{}",
            last_error()
        );
        assert_eq!(
            tg_cmdbuf_set_launch(cb, n_launch, k, std::ptr::null()),
            tg_status::TG_ERROR_NULL_POINTER
        );
        let submit = one_block(32, TG_LAUNCH_SUBMIT);
        assert_eq!(
            tg_cmdbuf_set_launch(cb, n_launch, k, &submit),
            tg_status::TG_ERROR_INVALID_ARGUMENT
        );
        assert!(
            last_error().starts_with("tg_cmdbuf_set_launch: "),
            "{}",
            last_error()
        );
        let huge = one_block(4096, 0);
        assert_eq!(
            tg_cmdbuf_set_launch(cb, n_launch, k, &huge),
            tg_status::TG_ERROR_INVALID_LAUNCH
        );
        assert_eq!(
            tg_cmdbuf_set_launch(cb, n_sig, k, &wide),
            tg_status::TG_ERROR_INVALID_ARGUMENT
        );
        // Wrong size; wrong handle kinds; a destroyed command buffer.
        assert_eq!(
            tg_cmdbuf_set_params(cb, n_launch, k, p.as_ptr() as *const c_void, 8),
            tg_status::TG_ERROR_INVALID_LAUNCH
        );
        assert!(
            last_error().starts_with("tg_cmdbuf_set_params: "),
            "{}",
            last_error()
        );
        assert_eq!(
            tg_queue_replay(q, s as *mut tg_cmdbuf),
            tg_status::TG_ERROR_INVALID_HANDLE
        );
        assert_eq!(
            tg_cmdbuf_finish(null_mut()),
            tg_status::TG_ERROR_INVALID_HANDLE
        );
        assert_eq!(tg_cmdbuf_destroy(cb), tg_status::TG_OK);
        assert_eq!(tg_queue_replay(q, cb), tg_status::TG_ERROR_INVALID_HANDLE);
        assert_eq!(
            tg_queue_replay_submit(q, cb),
            tg_status::TG_ERROR_INVALID_HANDLE
        );
        assert_eq!(
            tg_cmdbuf_set_value(cb, n_sig, 1),
            tg_status::TG_ERROR_INVALID_HANDLE
        );
        assert_eq!(tg_cmdbuf_destroy(cb), tg_status::TG_ERROR_INVALID_HANDLE);
        assert_eq!(tg_cmdbuf_destroy(null_mut()), tg_status::TG_OK);
        for st in [tg_signal_destroy(s), tg_buf_free(b), tg_queue_destroy(q)] {
            assert_eq!(st, tg_status::TG_OK);
        }
    }
}

/// `tg_texture_*`: bad arguments give a status and a message naming the call and the value, and
/// change nothing; the handle works until destroyed; a texture keeps its buffer.
#[test]
fn texture_objects_through_the_c_api() {
    let dev = open_emu();
    let mut buf = null_mut();
    // SAFETY: valid handles and out-pointers throughout; descriptors are live locals.
    unsafe {
        assert_eq!(tg_buf_alloc(dev, 1 << 16, 0, &mut buf), tg_status::TG_OK);
        let good = tg_texture_desc {
            struct_size: std::mem::size_of::<tg_texture_desc>() as u32,
            kind: TG_TEXTURE_PITCH2D,
            format: TG_TEXTURE_FORMAT_F32,
            channels: 1,
            flags: TG_TEXTURE_LINEAR_FILTER,
            address_mode: [TG_ADDRESS_CLAMP, TG_ADDRESS_BORDER],
            border_color: [0.0; 4],
            offset_bytes: 256,
            width: 100,
            height: 50,
            pitch_bytes: 512,
        };
        let sentinel = 0x5a5a as *mut tg_texture;
        let bad: [(tg_texture_desc, &str); 8] = [
            (
                tg_texture_desc {
                    struct_size: 8,
                    ..good
                },
                "struct_size is 8",
            ),
            (tg_texture_desc { kind: 3, ..good }, "kind 3"),
            (tg_texture_desc { format: 8, ..good }, "format 8"),
            (
                tg_texture_desc {
                    flags: 0x10,
                    ..good
                },
                "unknown bits 0x10",
            ),
            (
                tg_texture_desc {
                    address_mode: [0, 9],
                    ..good
                },
                "address_mode[1] 9",
            ),
            (
                tg_texture_desc {
                    channels: 3,
                    ..good
                },
                "channels 3",
            ),
            (
                tg_texture_desc {
                    height: 200,
                    ..good
                },
                "outside the buffer",
            ),
            (
                tg_texture_desc {
                    address_mode: [TG_ADDRESS_WRAP, 1],
                    ..good
                },
                "normalized",
            ),
        ];
        for (d, what) in bad {
            let mut out = sentinel;
            let st = tg_texture_create(buf, &d, &mut out);
            assert_eq!(st, tg_status::TG_ERROR_INVALID_ARGUMENT, "{what}");
            let msg = last_error();
            assert!(
                msg.contains("tg_texture_create") && msg.contains(what),
                "{msg}"
            );
            assert_eq!(out, sentinel, "out written on failure ({what})");
        }
        let mut out = sentinel;
        assert_eq!(
            tg_texture_create(buf, std::ptr::null(), &mut out),
            tg_status::TG_ERROR_NULL_POINTER
        );
        assert_eq!(
            tg_texture_create(null_mut(), &good, &mut out),
            tg_status::TG_ERROR_INVALID_HANDLE
        );
        assert_eq!(
            tg_texture_create(buf, &good, null_mut()),
            tg_status::TG_ERROR_NULL_POINTER
        );
        assert_eq!(out, sentinel);

        let mut tex = null_mut();
        assert_eq!(tg_texture_create(buf, &good, &mut tex), tg_status::TG_OK);
        let mut h = 0u64;
        assert_eq!(tg_texture_handle(tex, &mut h), tg_status::TG_OK);
        assert!((1..4096).contains(&h), "handle {h}");
        assert_eq!(
            tg_texture_handle(tex, null_mut()),
            tg_status::TG_ERROR_NULL_POINTER
        );
        // A buffer handle is not a texture.
        let mut h2 = 7u64;
        assert_eq!(
            tg_texture_handle(buf as *const tg_texture, &mut h2),
            tg_status::TG_ERROR_INVALID_HANDLE
        );
        // The texture keeps the buffer: freeing the buffer first is allowed.
        assert_eq!(tg_buf_free(buf), tg_status::TG_OK);
        assert_eq!(tg_texture_handle(tex, &mut h2), tg_status::TG_OK);
        assert_eq!(h2, h);
        h2 = 7;
        assert_eq!(tg_texture_destroy(tex), tg_status::TG_OK);
        assert_eq!(
            tg_texture_handle(tex, &mut h2),
            tg_status::TG_ERROR_INVALID_HANDLE
        );
        assert_eq!(h2, 7);
        assert_eq!(tg_texture_destroy(tex), tg_status::TG_ERROR_INVALID_HANDLE);
        assert_eq!(tg_texture_destroy(null_mut()), tg_status::TG_OK);
        assert_eq!(tg_device_close(dev), tg_status::TG_OK);
    }
}
