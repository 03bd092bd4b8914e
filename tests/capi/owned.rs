//! C API tests of owned queues and command buffers (`tg_*_create_owned`): they serve only
//! the thread that created them, and their creation refuses bad arguments.

use super::*;

/// An owned command buffer: every call from another thread is refused naming the call and
/// changes nothing; from its owner it records, replays 10,000 times with a new argument each
/// time (on an owned queue and on a shared one) with exact results, and is destroyed.
#[test]
fn owned_command_buffers_serve_only_their_thread() {
    let dev = open_emu();
    unsafe {
        let (m, k) = fixture_kernel(dev, c"increment");
        let (mut oq, mut sq, mut buf, mut sig, mut cb) =
            (null_mut(), null_mut(), null_mut(), null_mut(), null_mut());
        assert_eq!(
            tg_queue_create_owned(dev, tg_queue_kind_arg(0), 0, &mut oq),
            tg_status::TG_OK
        );
        assert_eq!(
            tg_queue_create(dev, tg_queue_kind_arg(0), &mut sq),
            tg_status::TG_OK
        );
        assert_eq!(
            tg_buf_alloc(dev, 4096, TG_BUF_CPU_CACHED | TG_BUF_ZEROED, &mut buf),
            tg_status::TG_OK
        );
        assert_eq!(tg_signal_create(dev, 0, &mut sig), tg_status::TG_OK);
        assert_eq!(
            tg_cmdbuf_create_owned(null_mut(), &mut cb),
            tg_status::TG_ERROR_INVALID_HANDLE
        );
        assert!(cb.is_null());
        assert_eq!(
            tg_cmdbuf_create_owned(dev, null_mut()),
            tg_status::TG_ERROR_NULL_POINTER
        );
        assert!(
            last_error().starts_with("tg_cmdbuf_create_owned:"),
            "{}",
            last_error()
        );
        assert_eq!(tg_cmdbuf_create_owned(dev, &mut cb), tg_status::TG_OK);
        let mut va = 0u64;
        assert_eq!(tg_buf_gpu_address(buf, &mut va), tg_status::TG_OK);
        let params = |by: u64| {
            let mut p = [0u8; 16];
            p[..8].copy_from_slice(&va.to_le_bytes());
            p[8..].copy_from_slice(&by.to_le_bytes());
            p
        };
        let cfg = one_block(32, 0);
        let (mut n_launch, mut n_sig) = (u32::MAX, u32::MAX);
        let p = params(1);
        assert_eq!(
            tg_cmdbuf_launch(cb, k, &cfg, p.as_ptr() as *const c_void, 16, &mut n_launch),
            tg_status::TG_OK,
            "{}",
            last_error()
        );
        assert_eq!(tg_cmdbuf_signal(cb, sig, 1, &mut n_sig), tg_status::TG_OK);

        // Another thread, before and after finish: every call refused with the owner message,
        // nothing recorded (the node count stays 2: the next node index is 2).
        let (cbv, kv, qv, sv, bv) = (
            cb as usize,
            k as usize,
            sq as usize,
            sig as usize,
            buf as usize,
        );
        let from_another_thread = move |finished: bool| {
            std::thread::spawn(move || {
                let (cb, k, q) = (
                    cbv as *mut tg_cmdbuf,
                    kv as *mut tg_kernel,
                    qv as *mut tg_queue,
                );
                let (s, b) = (sv as *mut tg_signal, bv as *mut tg_buf);
                let p = [0u8; 16];
                let pp = p.as_ptr() as *const c_void;
                let mut n = u32::MAX;
                let check = |call: &str, st: tg_status| {
                    assert_eq!(
                        st,
                        tg_status::TG_ERROR_INVALID_ARGUMENT,
                        "{call} (finished: {finished})"
                    );
                    let msg = last_error();
                    assert!(
                        msg.starts_with(&format!("{call}:"))
                            && msg.contains("owned by the thread")
                            && msg.contains("tg_cmdbuf_create_owned"),
                        "{msg}"
                    );
                };
                check(
                    "tg_cmdbuf_launch",
                    tg_cmdbuf_launch(cb, k, &cfg, pp, 16, &mut n),
                );
                check(
                    "tg_cmdbuf_copy",
                    tg_cmdbuf_copy(cb, b, 0, b, 64, 64, &mut n),
                );
                check("tg_cmdbuf_signal", tg_cmdbuf_signal(cb, s, 2, &mut n));
                check("tg_cmdbuf_wait", tg_cmdbuf_wait(cb, s, 2, &mut n));
                check("tg_cmdbuf_barrier", tg_cmdbuf_barrier(cb, &mut n));
                check("tg_cmdbuf_finish", tg_cmdbuf_finish(cb));
                check(
                    "tg_cmdbuf_set_params",
                    tg_cmdbuf_set_params(cb, 0, k, pp, 16),
                );
                check("tg_cmdbuf_set_launch", tg_cmdbuf_set_launch(cb, 0, k, &cfg));
                check("tg_cmdbuf_set_value", tg_cmdbuf_set_value(cb, 1, 7));
                check("tg_queue_replay", tg_queue_replay(q, cb));
                check("tg_queue_replay_submit", tg_queue_replay_submit(q, cb));
                check("tg_cmdbuf_destroy", tg_cmdbuf_destroy(cb));
                assert_eq!(n, u32::MAX, "a refused call wrote a node index");
            })
            .join()
            .unwrap();
        };
        from_another_thread(false);
        let mut n_next = u32::MAX;
        assert_eq!(tg_cmdbuf_barrier(cb, &mut n_next), tg_status::TG_OK);
        assert_eq!((n_launch, n_sig, n_next), (0, 1, 2));
        assert_eq!(tg_cmdbuf_finish(cb), tg_status::TG_OK);
        from_another_thread(true);

        // 10,000 replays from the owner, each with its own argument, alternating between the
        // owned queue and the shared one; the signal carries the replay's number.
        let mut expect = 0u64;
        for r in 1..=10_000u64 {
            let p = params(r);
            assert_eq!(
                tg_cmdbuf_set_params(cb, n_launch, k, p.as_ptr() as *const c_void, 16),
                tg_status::TG_OK,
                "replay {r}: {}",
                last_error()
            );
            assert_eq!(tg_cmdbuf_set_value(cb, n_sig, r), tg_status::TG_OK);
            let q = if r % 2 == 0 { oq } else { sq };
            if r % 3 == 0 {
                assert_eq!(
                    tg_queue_replay_submit(q, cb),
                    tg_status::TG_OK,
                    "{}",
                    last_error()
                );
            } else {
                assert_eq!(tg_queue_replay(q, cb), tg_status::TG_OK, "{}", last_error());
                assert_eq!(tg_queue_submit(q), tg_status::TG_OK);
            }
            expect += r;
        }
        assert_eq!(
            tg_signal_wait(sig, 10_000, 60_000_000_000),
            tg_status::TG_OK
        );
        assert_eq!(tg_queue_synchronize(oq, 60_000_000_000), tg_status::TG_OK);
        assert_eq!(tg_queue_synchronize(sq, 60_000_000_000), tg_status::TG_OK);
        let mut cpu = null_mut();
        assert_eq!(tg_buf_cpu_ptr(buf, &mut cpu), tg_status::TG_OK);
        assert_eq!(std::ptr::read_volatile(cpu as *const u64), expect);
        let mut v = 0u64;
        assert_eq!(tg_signal_value(sig, &mut v), tg_status::TG_OK);
        assert_eq!(v, 10_000);

        // Destroyed by its owner: the handle is stale for every call, on this thread too.
        assert_eq!(tg_cmdbuf_destroy(cb), tg_status::TG_OK, "{}", last_error());
        assert_eq!(tg_queue_replay(oq, cb), tg_status::TG_ERROR_INVALID_HANDLE);
        assert_eq!(tg_queue_replay(sq, cb), tg_status::TG_ERROR_INVALID_HANDLE);
        assert_eq!(tg_cmdbuf_finish(cb), tg_status::TG_ERROR_INVALID_HANDLE);
        assert!(
            last_error().contains("not a live tg_cmdbuf"),
            "{}",
            last_error()
        );
        for st in [
            tg_queue_destroy(oq),
            tg_queue_destroy(sq),
            tg_signal_destroy(sig),
            tg_buf_free(buf),
            tg_kernel_destroy(k),
            tg_module_destroy(m),
            tg_device_close(dev),
        ] {
            assert_eq!(st, tg_status::TG_OK);
        }
    }
}

/// A queue owned by its creating thread: exact results through the lock-free path (with more
/// kernel handles than its kernel cache holds), calls from another thread refused without
/// effect, a destroyed kernel handle refused although the queue cached it, and destroy only
/// from the owner.
#[test]
fn owned_queues_serve_only_their_thread() {
    let dev = open_emu();
    unsafe {
        let (m, inc) = fixture_kernel(dev, c"increment");
        // More handles of the same kernel than the owned queue's kernel cache has ways.
        let mut ks = vec![inc];
        for _ in 0..11 {
            let mut k = null_mut();
            assert_eq!(
                tg_module_get_kernel(m, c"increment".as_ptr(), &mut k),
                tg_status::TG_OK
            );
            ks.push(k);
        }
        let (mut q, mut buf, mut sig) = (null_mut(), null_mut(), null_mut());
        assert_eq!(
            tg_queue_create_owned(dev, tg_queue_kind_arg(0), 0, &mut q),
            tg_status::TG_OK,
            "{}",
            last_error()
        );
        assert_eq!(
            tg_buf_alloc(dev, 4096, TG_BUF_CPU_CACHED | TG_BUF_ZEROED, &mut buf),
            tg_status::TG_OK
        );
        assert_eq!(tg_signal_create(dev, 0, &mut sig), tg_status::TG_OK);
        let mut va = 0u64;
        assert_eq!(tg_buf_gpu_address(buf, &mut va), tg_status::TG_OK);
        let cfg = one_block(32, 0);
        let launch = |k: *mut tg_kernel, by: u64| {
            let mut p = [0u8; 16];
            p[..8].copy_from_slice(&va.to_le_bytes());
            p[8..].copy_from_slice(&by.to_le_bytes());
            tg_launch(q, k, &cfg, p.as_ptr() as *const c_void, 16)
        };
        let mut expect = 0u64;
        for i in 0..60u64 {
            let k = ks[(i as usize * 7) % ks.len()];
            assert_eq!(launch(k, i + 1), tg_status::TG_OK, "{}", last_error());
            expect += i + 1;
            if i % 7 == 0 {
                assert_eq!(tg_queue_submit(q), tg_status::TG_OK);
            }
        }
        assert_eq!(tg_queue_signal(q, sig, 1), tg_status::TG_OK);
        assert_eq!(tg_queue_submit(q), tg_status::TG_OK);
        assert_eq!(tg_signal_wait(sig, 1, 30_000_000_000), tg_status::TG_OK);
        let mut cpu = null_mut();
        assert_eq!(tg_buf_cpu_ptr(buf, &mut cpu), tg_status::TG_OK);
        let read = || std::ptr::read_volatile(cpu as *const u64);
        assert_eq!(read(), expect);

        // Another thread: every call refused, nothing recorded, the queue intact.
        let (qv, kv) = (q as usize, inc as usize);
        std::thread::spawn(move || {
            let q = qv as *mut tg_queue;
            let k = kv as *mut tg_kernel;
            let p = [0u8; 16];
            let st = tg_launch(q, k, &cfg, p.as_ptr() as *const c_void, 16);
            assert_eq!(st, tg_status::TG_ERROR_INVALID_ARGUMENT);
            let msg = last_error();
            assert!(
                msg.starts_with("tg_launch:") && msg.contains("owned by the thread"),
                "{msg}"
            );
            assert_eq!(tg_queue_submit(q), tg_status::TG_ERROR_INVALID_ARGUMENT);
            assert_eq!(
                tg_queue_synchronize(q, 1),
                tg_status::TG_ERROR_INVALID_ARGUMENT
            );
            assert_eq!(tg_queue_destroy(q), tg_status::TG_ERROR_INVALID_ARGUMENT);
            assert_eq!(tg_queue_abort(q), tg_status::TG_ERROR_INVALID_ARGUMENT);
        })
        .join()
        .unwrap();

        // A kernel handle the queue has cached, destroyed: refused; the others still launch.
        let gone = ks.pop().unwrap();
        assert_eq!(launch(gone, 1000), tg_status::TG_OK);
        expect += 1000;
        assert_eq!(tg_kernel_destroy(gone), tg_status::TG_OK);
        assert_eq!(launch(gone, 1), tg_status::TG_ERROR_INVALID_HANDLE);
        assert!(
            last_error().contains("not a live tg_kernel"),
            "{}",
            last_error()
        );
        assert_eq!(launch(inc, 5), tg_status::TG_OK);
        expect += 5;
        assert_eq!(tg_queue_signal(q, sig, 2), tg_status::TG_OK);
        assert_eq!(tg_queue_submit(q), tg_status::TG_OK);
        assert_eq!(tg_queue_synchronize(q, 30_000_000_000), tg_status::TG_OK);
        assert_eq!(read(), expect);

        // Destroy from the owner; the handle is then stale.
        assert_eq!(tg_queue_destroy(q), tg_status::TG_OK, "{}", last_error());
        assert_eq!(tg_queue_submit(q), tg_status::TG_ERROR_INVALID_HANDLE);
        assert_eq!(launch(inc, 1), tg_status::TG_ERROR_INVALID_HANDLE);
        for k in ks {
            assert_eq!(tg_kernel_destroy(k), tg_status::TG_OK);
        }
        assert_eq!(tg_signal_destroy(sig), tg_status::TG_OK);
        assert_eq!(tg_buf_free(buf), tg_status::TG_OK);
        assert_eq!(tg_module_destroy(m), tg_status::TG_OK);
        assert_eq!(tg_device_close(dev), tg_status::TG_OK);
    }
}

/// `tg_queue_create_owned` refuses bad arguments with a message naming the call and the value.
#[test]
fn owned_queue_creation_refuses_bad_arguments() {
    let dev = open_emu();
    unsafe {
        let mut q: *mut tg_queue = null_mut();
        let cases: [(*mut tg_device, i32, u32, bool, tg_status, &str); 4] = [
            (
                dev,
                7,
                0,
                true,
                tg_status::TG_ERROR_INVALID_ARGUMENT,
                "kind 7",
            ),
            (dev, 0, 3, true, tg_status::TG_ERROR_INVALID_ARGUMENT, "3"),
            (dev, 0, 0, false, tg_status::TG_ERROR_NULL_POINTER, "out"),
            (
                null_mut(),
                0,
                0,
                true,
                tg_status::TG_ERROR_INVALID_HANDLE,
                "dev",
            ),
        ];
        for (d, kind, depth, with_out, want, needle) in cases {
            let out = if with_out {
                &mut q as *mut _
            } else {
                null_mut()
            };
            let st = tg_queue_create_owned(d, tg_queue_kind_arg(kind), depth, out);
            assert_eq!(st, want, "kind {kind} depth {depth}");
            let msg = last_error();
            assert!(
                msg.starts_with("tg_queue_create_owned:") && msg.contains(needle),
                "{msg}"
            );
            assert!(q.is_null(), "out written on failure");
        }
        assert_eq!(tg_device_close(dev), tg_status::TG_OK);
    }
}
