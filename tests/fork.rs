//! fork(): a child never touches its parent's GPU state, inherited handles answer
//! `TG_ERROR_INVALID_HANDLE` saying they come from before the fork, the child opens and uses its
//! own device, and a fork while another thread is inside the library does not leave the child
//! with a lock it can never take (issue #15 item 8). One test function: the forks must not race
//! with other tests' threads inside the library. Runs on the device under test
//! (`TEGRAGPU_TEST_DEVICE`, default the emulated Orin; `rm` on the H100/H200).

mod common;

use std::ffi::{c_void, CStr};
use std::ptr::null_mut;
use std::time::{Duration, Instant};
use tegragpu::capi::*;

fn last_error() -> String {
    // SAFETY: NUL-terminated, valid until the next failing call on this thread.
    unsafe { CStr::from_ptr(tg_last_error_message()) }
        .to_string_lossy()
        .into_owned()
}

/// The device spec under test, NUL-terminated.
fn spec() -> std::ffi::CString {
    std::ffi::CString::new(
        std::env::var("TEGRAGPU_TEST_DEVICE").unwrap_or_else(|_| "emu".to_string()),
    )
    .unwrap()
}

/// The fixture cubin for the SM version of the device under test.
fn cubin() -> Vec<u8> {
    let mut dev = null_mut();
    let mut info: tg_device_info = unsafe { std::mem::zeroed() };
    info.struct_size = std::mem::size_of::<tg_device_info>() as u32;
    // SAFETY: valid C string, out-pointers and struct size.
    unsafe {
        assert_eq!(tg_device_open(spec().as_ptr(), &mut dev), tg_status::TG_OK);
        assert_eq!(tg_device_get_info(dev, &mut info), tg_status::TG_OK);
        assert_eq!(tg_device_close(dev), tg_status::TG_OK);
    }
    let name = format!("kernels.sm_{}{}.cubin", info.sm_major, info.sm_minor);
    let p = common::repo_path("tests/fixtures/cubin").join(name);
    std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// A device with vector_add loaded and run once: returns whether c = a + b came out right.
/// Every step is checked; a failure returns a description.
unsafe fn vector_add_on_new_device(cubin: &[u8]) -> Result<(), String> {
    let ck = |st: tg_status, what: &str| {
        if st == tg_status::TG_OK {
            Ok(())
        } else {
            Err(format!("{what}: {st:?}: {}", last_error()))
        }
    };
    let (mut dev, mut m, mut k, mut q, mut s) =
        (null_mut(), null_mut(), null_mut(), null_mut(), null_mut());
    ck(tg_device_open(spec().as_ptr(), &mut dev), "tg_device_open")?;
    ck(
        tg_module_load(dev, cubin.as_ptr() as *const c_void, cubin.len(), &mut m),
        "tg_module_load",
    )?;
    ck(
        tg_module_get_kernel(m, c"vector_add".as_ptr(), &mut k),
        "tg_module_get_kernel",
    )?;
    ck(
        tg_queue_create(dev, tg_queue_kind_arg(0), &mut q),
        "tg_queue_create",
    )?;
    ck(tg_signal_create(dev, 0, &mut s), "tg_signal_create")?;
    let n: u32 = 1000;
    let mut bufs = [null_mut(); 3];
    let mut va = [0u64; 3];
    for i in 0..3 {
        ck(
            tg_buf_alloc(dev, 4 * n as u64, 0, &mut bufs[i]),
            "tg_buf_alloc",
        )?;
        ck(
            tg_buf_gpu_address(bufs[i], &mut va[i]),
            "tg_buf_gpu_address",
        )?;
    }
    let mut p = [null_mut::<c_void>(); 3];
    for i in 0..3 {
        ck(tg_buf_cpu_ptr(bufs[i], &mut p[i]), "tg_buf_cpu_ptr")?;
    }
    let (a, b) = (p[0] as *mut f32, p[1] as *mut f32);
    for i in 0..n as usize {
        *a.add(i) = i as f32;
        *b.add(i) = 2.0 * i as f32;
    }
    let mut params = [0u8; 28];
    params[0..8].copy_from_slice(&va[0].to_le_bytes());
    params[8..16].copy_from_slice(&va[1].to_le_bytes());
    params[16..24].copy_from_slice(&va[2].to_le_bytes());
    params[24..28].copy_from_slice(&n.to_le_bytes());
    let cfg = tg_launch_config {
        struct_size: std::mem::size_of::<tg_launch_config>() as u32,
        grid: [n.div_ceil(256), 1, 1],
        block: [256, 1, 1],
        dynamic_shared_bytes: 0,
        flags: 0,
        cluster: [0; 3],
    };
    ck(
        tg_launch(q, k, &cfg, params.as_ptr() as *const c_void, params.len()),
        "tg_launch",
    )?;
    ck(tg_queue_signal(q, s, 1), "tg_queue_signal")?;
    ck(tg_queue_submit(q), "tg_queue_submit")?;
    ck(tg_signal_wait(s, 1, 10_000_000_000), "tg_signal_wait")?;
    let c = p[2] as *const f32;
    for i in 0..n as usize {
        if *c.add(i) != 3.0 * i as f32 {
            return Err(format!("c[{i}] = {} (expected {})", *c.add(i), 3 * i));
        }
    }
    for b in bufs {
        ck(tg_buf_free(b), "tg_buf_free")?;
    }
    ck(tg_signal_destroy(s), "tg_signal_destroy")?;
    ck(tg_queue_destroy(q), "tg_queue_destroy")?;
    ck(tg_kernel_destroy(k), "tg_kernel_destroy")?;
    ck(tg_module_destroy(m), "tg_module_destroy")?;
    ck(tg_device_close(dev), "tg_device_close")
}

/// Runs `child` in a forked child and returns its exit status (or an error after `limit`: the
/// child is killed then, which is how a deadlock shows).
fn in_child(limit: Duration, child: impl FnOnce() -> i32) -> Result<i32, String> {
    // SAFETY: the child runs only `child` and then _exit()s.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed");
    if pid == 0 {
        let code = std::panic::catch_unwind(std::panic::AssertUnwindSafe(child)).unwrap_or(99);
        // SAFETY: ends the child without running the parent's atexit handlers or test harness.
        unsafe { libc::_exit(code) };
    }
    let start = Instant::now();
    loop {
        let mut status = 0;
        // SAFETY: pid is our child.
        let r = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
        if r == pid {
            return if libc::WIFEXITED(status) {
                Ok(libc::WEXITSTATUS(status))
            } else {
                Err(format!("child ended by signal (status {status:#x})"))
            };
        }
        if start.elapsed() > limit {
            dump_stacks(pid);
            // SAFETY: pid is our child.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
                libc::waitpid(pid, &mut status, 0);
            }
            return Err(format!(
                "child still running after {limit:?}: killed (deadlock?)"
            ));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Print every thread's stack of a hung child (where gdb is installed), to show the lock.
fn dump_stacks(pid: i32) {
    let out = std::process::Command::new("timeout")
        .args([
            "30",
            "gdb",
            "-p",
            &pid.to_string(),
            "-batch",
            "-ex",
            "thread apply all bt",
        ])
        .output();
    if let Ok(o) = out {
        eprintln!(
            "stacks of the hung child {pid}:\n{}",
            String::from_utf8_lossy(&o.stdout)
        );
    }
}

/// Another thread that keeps using the library (allocates, launches, waits on signals,
/// creates and destroys queues and signals, loads modules, logs through a callback) until
/// `stop` is set; returns how many rounds it made, or the first failure.
fn busy_thread(
    dev: usize,
    cubin: Vec<u8>,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> std::thread::JoinHandle<Result<u64, String>> {
    std::thread::spawn(move || unsafe {
        let dev = dev as *mut tg_device;
        let ck = |st: tg_status, what: &str| {
            if st == tg_status::TG_OK {
                Ok(())
            } else {
                Err(format!("busy thread: {what}: {st:?}: {}", last_error()))
            }
        };
        let mut rounds = 0u64;
        let (mut m, mut k, mut q) = (null_mut(), null_mut(), null_mut());
        ck(
            tg_module_load(dev, cubin.as_ptr() as *const c_void, cubin.len(), &mut m),
            "tg_module_load",
        )?;
        ck(
            tg_module_get_kernel(m, c"fill_u32".as_ptr(), &mut k),
            "tg_module_get_kernel",
        )?;
        ck(
            tg_queue_create(dev, tg_queue_kind_arg(0), &mut q),
            "tg_queue_create",
        )?;
        while !stop.load(std::sync::atomic::Ordering::Relaxed) {
            let (mut b, mut s) = (null_mut(), null_mut());
            ck(tg_buf_alloc(dev, 1 << 16, 0, &mut b), "tg_buf_alloc")?;
            ck(tg_signal_create(dev, 0, &mut s), "tg_signal_create")?;
            let mut va = 0u64;
            ck(tg_buf_gpu_address(b, &mut va), "tg_buf_gpu_address")?;
            let mut params = [0u8; 16];
            params[0..8].copy_from_slice(&va.to_le_bytes());
            params[8..12].copy_from_slice(&(rounds as u32).to_le_bytes());
            params[12..16].copy_from_slice(&1024u32.to_le_bytes());
            let cfg = tg_launch_config {
                struct_size: std::mem::size_of::<tg_launch_config>() as u32,
                grid: [4, 1, 1],
                block: [256, 1, 1],
                dynamic_shared_bytes: 0,
                flags: 0,
                cluster: [0; 3],
            };
            ck(
                tg_launch(q, k, &cfg, params.as_ptr() as *const c_void, params.len()),
                "tg_launch",
            )?;
            ck(tg_queue_signal(q, s, 1), "tg_queue_signal")?;
            ck(tg_signal_wait(s, 1, 10_000_000_000), "tg_signal_wait")?;
            let mut cpu = null_mut();
            ck(tg_buf_cpu_ptr(b, &mut cpu), "tg_buf_cpu_ptr")?;
            if *(cpu as *const u32).add(1023) != rounds as u32 {
                return Err(format!("busy thread: round {rounds}: fill not seen"));
            }
            ck(tg_buf_free(b), "tg_buf_free")?;
            ck(tg_signal_destroy(s), "tg_signal_destroy")?;
            // A failing call (an error message is formatted and stored), a log record.
            let _ = tg_buf_free(b);
            if rounds % 8 == 0 {
                let mut q2 = null_mut();
                ck(
                    tg_queue_create(dev, tg_queue_kind_arg(1), &mut q2),
                    "tg_queue_create (copy)",
                )?;
                ck(
                    tg_device_synchronize(dev, 10_000_000_000),
                    "tg_device_synchronize",
                )?;
                ck(tg_queue_destroy(q2), "tg_queue_destroy")?;
            }
            if rounds % 32 == 0 {
                let mut m2 = null_mut();
                ck(
                    tg_module_load(dev, cubin.as_ptr() as *const c_void, cubin.len(), &mut m2),
                    "tg_module_load",
                )?;
                ck(tg_module_destroy(m2), "tg_module_destroy")?;
            }
            rounds += 1;
        }
        ck(tg_queue_destroy(q), "tg_queue_destroy")?;
        ck(tg_kernel_destroy(k), "tg_kernel_destroy")?;
        ck(tg_module_destroy(m), "tg_module_destroy")?;
        Ok(rounds)
    })
}

/// Forks `TEGRAGPU_FORK_ROUNDS` times (default 200) while two other threads are inside the
/// library all the time; each child opens its own device and runs a kernel within 10 s.
fn fork_while_threads_work(cubin: &[u8]) {
    let rounds: u32 = std::env::var("TEGRAGPU_FORK_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    let mut dev = null_mut();
    // SAFETY: valid C string and out-pointer.
    assert_eq!(
        unsafe { tg_device_open(spec().as_ptr(), &mut dev) },
        tg_status::TG_OK
    );
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let workers: Vec<_> = (0..2)
        .map(|_| busy_thread(dev as usize, cubin.to_vec(), stop.clone()))
        .collect();
    let mut failures = Vec::new();
    for round in 0..rounds {
        let cubin_c = cubin.to_vec();
        // SAFETY: the child runs the library from scratch on its own device.
        let r = in_child(Duration::from_secs(10), move || unsafe {
            match vector_add_on_new_device(&cubin_c) {
                Ok(()) => 0,
                Err(e) => {
                    eprintln!("child: {e}");
                    1
                }
            }
        });
        if r != Ok(0) {
            failures.push(format!("round {round}: {r:?}"));
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let done: Vec<_> = workers.into_iter().map(|w| w.join().unwrap()).collect();
    // SAFETY: the device handle opened above.
    assert_eq!(unsafe { tg_device_close(dev) }, tg_status::TG_OK);
    for d in &done {
        assert!(
            matches!(d, Ok(n) if *n > 0),
            "a busy thread failed or never ran: {d:?}"
        );
    }
    assert!(
        failures.is_empty(),
        "{} of {rounds} children failed: {failures:?}",
        failures.len()
    );
    eprintln!(
        "{rounds} forks while two threads worked: every child ran its kernel ({done:?} rounds)"
    );
}

#[test]
fn fork_child_gets_clear_errors_and_its_own_device() {
    let cubin = cubin();
    unsafe {
        // The parent's objects, with work recorded but not submitted.
        let (mut dev, mut m, mut k, mut q, mut s, mut buf) = (
            null_mut(),
            null_mut(),
            null_mut(),
            null_mut(),
            null_mut(),
            null_mut(),
        );
        assert_eq!(tg_device_open(spec().as_ptr(), &mut dev), tg_status::TG_OK);
        assert_eq!(
            tg_module_load(dev, cubin.as_ptr() as *const c_void, cubin.len(), &mut m),
            tg_status::TG_OK
        );
        assert_eq!(
            tg_module_get_kernel(m, c"fill_u32".as_ptr(), &mut k),
            tg_status::TG_OK,
            "{}",
            last_error()
        );
        assert_eq!(
            tg_queue_create(dev, tg_queue_kind_arg(0), &mut q),
            tg_status::TG_OK
        );
        assert_eq!(tg_signal_create(dev, 0, &mut s), tg_status::TG_OK);
        assert_eq!(tg_buf_alloc(dev, 4096, 0, &mut buf), tg_status::TG_OK);
        let mut cpu = null_mut();
        assert_eq!(tg_buf_cpu_ptr(buf, &mut cpu), tg_status::TG_OK);
        std::ptr::write_bytes(cpu as *mut u8, 0, 4096);
        // An owned queue and an owned command buffer, used once so that this thread's caches of
        // them (which the child inherits) are filled.
        let (mut oq, mut ocb) = (null_mut(), null_mut());
        assert_eq!(
            tg_queue_create_owned(dev, tg_queue_kind_arg(0), 0, &mut oq),
            tg_status::TG_OK
        );
        assert_eq!(tg_cmdbuf_create_owned(dev, &mut ocb), tg_status::TG_OK);
        assert_eq!(tg_cmdbuf_signal(ocb, s, 0, null_mut()), tg_status::TG_OK);
        assert_eq!(tg_cmdbuf_finish(ocb), tg_status::TG_OK);
        assert_eq!(tg_queue_replay_submit(oq, ocb), tg_status::TG_OK);
        assert_eq!(tg_queue_synchronize(oq, 10_000_000_000), tg_status::TG_OK);
        let live_before = live_handles();

        let (dev_h, buf_h, q_h, s_h, k_h, m_h) = (
            dev as usize,
            buf as usize,
            q as usize,
            s as usize,
            k as usize,
            m as usize,
        );
        let (oq_h, ocb_h) = (oq as usize, ocb as usize);
        let cubin_c = cubin.clone();
        let r = in_child(Duration::from_secs(60), move || {
            let mut fails = Vec::new();
            let mut expect_forked = |st: tg_status, call: &str| {
                let msg = last_error();
                if st != tg_status::TG_ERROR_INVALID_HANDLE
                    || !msg.starts_with(call)
                    || !msg.contains("before fork()")
                {
                    fails.push(format!("{call}: {st:?}: {msg}"));
                }
            };
            let mut size = 0u64;
            expect_forked(
                tg_buf_size(buf_h as *const tg_buf, &mut size),
                "tg_buf_size",
            );
            expect_forked(tg_buf_free(buf_h as *mut tg_buf), "tg_buf_free");
            expect_forked(tg_queue_submit(q_h as *mut tg_queue), "tg_queue_submit");
            expect_forked(
                tg_signal_wait(s_h as *const tg_signal, 1, 1_000_000),
                "tg_signal_wait",
            );
            expect_forked(
                tg_kernel_destroy(k_h as *mut tg_kernel),
                "tg_kernel_destroy",
            );
            expect_forked(
                tg_module_destroy(m_h as *mut tg_module),
                "tg_module_destroy",
            );
            expect_forked(tg_queue_destroy(q_h as *mut tg_queue), "tg_queue_destroy");
            expect_forked(
                tg_queue_replay_submit(oq_h as *mut tg_queue, ocb_h as *mut tg_cmdbuf),
                "tg_queue_replay_submit",
            );
            expect_forked(
                tg_cmdbuf_set_value(ocb_h as *mut tg_cmdbuf, 0, 1),
                "tg_cmdbuf_set_value",
            );
            expect_forked(
                tg_cmdbuf_destroy(ocb_h as *mut tg_cmdbuf),
                "tg_cmdbuf_destroy",
            );
            expect_forked(tg_queue_destroy(oq_h as *mut tg_queue), "tg_queue_destroy");
            expect_forked(tg_device_close(dev_h as *mut tg_device), "tg_device_close");
            if live_handles() != 0 {
                fails.push(format!("{} handles live in the child", live_handles()));
            }
            if let Err(e) = vector_add_on_new_device(&cubin_c) {
                fails.push(format!("child's own device: {e}"));
            }
            for f in &fails {
                eprintln!("child: {f}");
            }
            i32::from(!fails.is_empty())
        });
        assert_eq!(r, Ok(0), "the child saw failures (its stderr above)");

        // The parent's objects are untouched: the recorded launch runs and fills the buffer.
        assert_eq!(live_handles(), live_before);
        let mut va = 0u64;
        assert_eq!(tg_buf_gpu_address(buf, &mut va), tg_status::TG_OK);
        let mut params = [0u8; 16];
        params[0..8].copy_from_slice(&va.to_le_bytes());
        params[8..12].copy_from_slice(&0x5a5a_0001u32.to_le_bytes());
        params[12..16].copy_from_slice(&1024u32.to_le_bytes());
        let cfg = tg_launch_config {
            struct_size: std::mem::size_of::<tg_launch_config>() as u32,
            grid: [4, 1, 1],
            block: [256, 1, 1],
            dynamic_shared_bytes: 0,
            flags: 0,
            cluster: [0; 3],
        };
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
            tg_status::TG_OK,
            "{}",
            last_error()
        );
        let words = std::slice::from_raw_parts(cpu as *const u32, 1024);
        assert!(
            words.iter().all(|&w| w == 0x5a5a_0001),
            "parent's fill lost"
        );

        // A fork while another thread is inside the library (holding the handle table's lock):
        // the child must still be able to open a device.
        for round in 0..3 {
            let holder = std::thread::spawn(|| hold_table_lock_for(Duration::from_millis(300)));
            std::thread::sleep(Duration::from_millis(50));
            let cubin_c = cubin.clone();
            let r = in_child(
                Duration::from_secs(30),
                move || match vector_add_on_new_device(&cubin_c) {
                    Ok(()) => 0,
                    Err(e) => {
                        eprintln!("child: {e}");
                        1
                    }
                },
            );
            holder.join().unwrap();
            assert_eq!(
                r,
                Ok(0),
                "round {round}: fork while a thread held the handle table"
            );
        }

        // The parent's owned command buffer still replays on its owned queue.
        assert_eq!(tg_cmdbuf_set_value(ocb, 0, 2), tg_status::TG_OK);
        assert_eq!(tg_queue_replay_submit(oq, ocb), tg_status::TG_OK);
        assert_eq!(tg_signal_wait(s, 2, 10_000_000_000), tg_status::TG_OK);
        assert_eq!(tg_cmdbuf_destroy(ocb), tg_status::TG_OK);
        assert_eq!(tg_queue_destroy(oq), tg_status::TG_OK);
        assert_eq!(tg_buf_free(buf), tg_status::TG_OK);
        assert_eq!(tg_signal_destroy(s), tg_status::TG_OK);
        assert_eq!(tg_queue_destroy(q), tg_status::TG_OK);
        assert_eq!(tg_kernel_destroy(k), tg_status::TG_OK);
        assert_eq!(tg_module_destroy(m), tg_status::TG_OK);
        assert_eq!(tg_device_close(dev), tg_status::TG_OK);
    }
    fork_while_threads_work(&cubin);
}
