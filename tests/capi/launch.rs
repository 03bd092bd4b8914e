//! C API launch tests: the `TG_LAUNCH_CONCURRENT` and `TG_LAUNCH_SUBMIT` flags, and
//! `tg_launch_config` structs of older and newer headers (`struct_size`).

use super::*;

/// `TG_LAUNCH_CONCURRENT` is accepted on queues and command buffers; with
/// `TG_LAUNCH_COOPERATIVE` it is refused naming both, and unknown flag bits name the known ones.
#[test]
fn launch_flags_concurrent_and_its_refusals() {
    let dev = open_emu();
    unsafe {
        let (m, k) = fixture_kernel(dev, c"empty_kernel");
        let (mut q, mut cb) = (null_mut(), null_mut());
        assert_eq!(
            tg_queue_create(dev, tg_queue_kind_arg(0), &mut q),
            tg_status::TG_OK
        );
        assert_eq!(tg_cmdbuf_create(dev, &mut cb), tg_status::TG_OK);
        let mut cfg = one_block(32, TG_LAUNCH_CONCURRENT);
        for _ in 0..3 {
            assert_eq!(
                tg_launch(q, k, &cfg, std::ptr::null(), 0),
                tg_status::TG_OK,
                "{}",
                last_error()
            );
        }
        let mut node = 0u32;
        assert_eq!(
            tg_cmdbuf_launch(cb, k, &cfg, std::ptr::null(), 0, &mut node),
            tg_status::TG_OK,
            "{}",
            last_error()
        );
        cfg.flags = TG_LAUNCH_CONCURRENT | TG_LAUNCH_COOPERATIVE;
        assert_eq!(
            tg_launch(q, k, &cfg, std::ptr::null(), 0),
            tg_status::TG_ERROR_INVALID_LAUNCH
        );
        let msg = last_error();
        assert!(
            msg.starts_with("tg_launch:") && msg.contains("TG_LAUNCH_CONCURRENT"),
            "{msg}"
        );
        cfg.flags = 8;
        assert_eq!(
            tg_launch(q, k, &cfg, std::ptr::null(), 0),
            tg_status::TG_ERROR_INVALID_ARGUMENT
        );
        let msg = last_error();
        assert!(
            msg.contains("TG_LAUNCH_CONCURRENT=2") && msg.contains("TG_LAUNCH_SUBMIT=4"),
            "{msg}"
        );
        assert_eq!(tg_queue_submit(q), tg_status::TG_OK);
        assert_eq!(tg_queue_synchronize(q, 10_000_000_000), tg_status::TG_OK);
        assert_eq!(tg_cmdbuf_destroy(cb), tg_status::TG_OK);
        assert_eq!(tg_queue_destroy(q), tg_status::TG_OK);
        assert_eq!(tg_kernel_destroy(k), tg_status::TG_OK);
        assert_eq!(tg_module_destroy(m), tg_status::TG_OK);
        assert_eq!(tg_device_close(dev), tg_status::TG_OK);
    }
}

/// `TG_LAUNCH_SUBMIT` submits the queue in the launch call (what was recorded before it too),
/// through `tg_launch` and `tg_launch_args`, on shared and owned queues; a command buffer
/// refuses it, naming the flag.
#[test]
fn launch_flag_submit_submits_in_the_same_call() {
    let dev = open_emu();
    let (m, k) = fixture_kernel(dev, c"increment");
    unsafe {
        let (b, va, cpu, p) = increment_counter(dev);
        let mut expect = 0u64;
        for owned in [false, true] {
            let q = compute_queue(dev, owned);
            let mut s = null_mut();
            assert_eq!(tg_signal_create(dev, 0, &mut s), tg_status::TG_OK);
            // Recorded, not submitted: the signal stays at 0 (read, not waited for: a wait
            // would submit the queue itself).
            assert_eq!(tg_queue_signal(q, s, 1), tg_status::TG_OK);
            std::thread::sleep(std::time::Duration::from_millis(20));
            assert_eq!(signal_value(s), 0);
            let mut cfg = one_block(32, TG_LAUNCH_SUBMIT);
            for i in 0..200u64 {
                let st = if i % 2 == 0 {
                    tg_launch(q, k, &cfg, p.as_ptr() as *const c_void, 16)
                } else {
                    let mut a0 = va;
                    let mut a1 = 1u64;
                    let mut args = [
                        &mut a0 as *mut u64 as *mut c_void,
                        &mut a1 as *mut u64 as *mut c_void,
                    ];
                    tg_launch_args(q, k, &cfg, args.as_mut_ptr(), 2)
                };
                assert_eq!(st, tg_status::TG_OK, "{}", last_error());
                if i == 0 {
                    // The first launch submitted the signal recorded before it.
                    let t0 = std::time::Instant::now();
                    while signal_value(s) < 1 {
                        assert!(t0.elapsed().as_secs() < 10, "the release was not submitted");
                        std::thread::yield_now();
                    }
                }
            }
            expect += 200;
            // Everything was submitted by the launches: a signal recorded now and submitted
            // comes after all of them.
            assert_eq!(tg_queue_signal(q, s, 2), tg_status::TG_OK);
            assert_eq!(tg_queue_submit(q), tg_status::TG_OK);
            assert_eq!(tg_signal_wait(s, 2, 10_000_000_000), tg_status::TG_OK);
            assert_eq!(
                std::ptr::read_volatile(cpu as *const u64),
                expect,
                "owned {owned}"
            );
            // Command buffers refuse the flag.
            let mut cb = null_mut();
            assert_eq!(tg_cmdbuf_create(dev, &mut cb), tg_status::TG_OK);
            cfg.flags = TG_LAUNCH_SUBMIT;
            assert_eq!(
                tg_cmdbuf_launch(cb, k, &cfg, p.as_ptr() as *const c_void, 16, null_mut()),
                tg_status::TG_ERROR_INVALID_ARGUMENT
            );
            let msg = last_error();
            assert!(
                msg.starts_with("tg_cmdbuf_launch:") && msg.contains("TG_LAUNCH_SUBMIT"),
                "{msg}"
            );
            for st in [
                tg_cmdbuf_destroy(cb),
                tg_signal_destroy(s),
                tg_queue_destroy(q),
            ] {
                assert_eq!(st, tg_status::TG_OK);
            }
        }
        for st in [
            tg_buf_free(b),
            tg_kernel_destroy(k),
            tg_module_destroy(m),
            tg_device_close(dev),
        ] {
            assert_eq!(st, tg_status::TG_OK);
        }
    }
}

/// `tg_launch_config` as callers built against older headers (32 bytes: no `flags`; 36 bytes: no
/// `cluster`) and a newer one (longer) pass it: the words past their `struct_size` are never
/// read, and sizes that match no header are refused naming the value. Owned and shared queues.
#[test]
fn launch_config_struct_sizes_of_older_and_newer_headers() {
    let dev = open_emu();
    let (m, k) = fixture_kernel(dev, c"increment");
    unsafe {
        let (b, _, cpu, p) = increment_counter(dev);
        let mut expect = 0u64;
        for owned in [false, true] {
            let q = compute_queue(dev, owned);
            for size in [32u32, 36, 48, 52] {
                // Words past struct_size hold values that would fail the launch if read: an
                // unknown flag, a cluster shape this grid cannot have.
                let mut w = [0xdead_beefu32; 13];
                w[0] = size;
                w[1..4].copy_from_slice(&[1, 1, 1]);
                w[4..7].copy_from_slice(&[32, 1, 1]);
                w[7] = 0;
                if size >= 36 {
                    w[8] = 0;
                }
                if size >= 48 {
                    w[9..12].copy_from_slice(&[0, 0, 0]);
                }
                let cfg = w.as_ptr() as *const tg_launch_config;
                for _ in 0..3 {
                    let st = tg_launch(q, k, cfg, p.as_ptr() as *const c_void, 16);
                    assert_eq!(st, tg_status::TG_OK, "size {size}: {}", last_error());
                }
                expect += 3;
            }
            for size in [0u32, 4, 28, 40, 44] {
                let mut w = [0u32; 13];
                w[0] = size;
                w[1..4].copy_from_slice(&[1, 1, 1]);
                w[4..7].copy_from_slice(&[32, 1, 1]);
                let cfg = w.as_ptr() as *const tg_launch_config;
                let st = tg_launch(q, k, cfg, p.as_ptr() as *const c_void, 16);
                assert_eq!(st, tg_status::TG_ERROR_INVALID_ARGUMENT, "size {size}");
                let msg = last_error();
                assert!(
                    msg.starts_with("tg_launch:")
                        && msg.contains(&format!("struct_size is {size}")),
                    "{msg}"
                );
            }
            assert_eq!(tg_queue_submit(q), tg_status::TG_OK);
            assert_eq!(
                tg_queue_synchronize(q, 10_000_000_000),
                tg_status::TG_OK,
                "{}",
                last_error()
            );
            assert_eq!(
                std::ptr::read_volatile(cpu as *const u64),
                expect,
                "owned {owned}"
            );
            assert_eq!(tg_queue_destroy(q), tg_status::TG_OK);
        }
        for st in [
            tg_buf_free(b),
            tg_kernel_destroy(k),
            tg_module_destroy(m),
            tg_device_close(dev),
        ] {
            assert_eq!(st, tg_status::TG_OK);
        }
    }
}
