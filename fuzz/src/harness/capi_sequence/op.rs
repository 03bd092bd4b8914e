//! `capi_sequence`: one C API call chosen by the input, with its expected outcome.

use super::launch::op_launch;
use super::*;

/// One C API call chosen by the input.
pub(super) fn op(inp: &mut Input, w: &mut World) {
    match inp.u8() % 40 {
        0 => {
            // Never NULL, "nvgpu" or "rm": those may open real hardware.
            let spec = match inp.u8() % 8 {
                0 => c"",
                1 => c"EMU",
                2 => c"emu ",
                3 => c"nvgpu-fuzz",
                _ => c"emu",
            };
            if w.devs.len() >= MAX_DEVS {
                return;
            }
            let mut d = null_mut::<tg_device>();
            let out = if inp.chance(16) {
                null_mut()
            } else {
                &mut d as *mut _
            };
            let st = c!(tg_device_open(spec.as_ptr(), out));
            if st == tg_status::TG_OK {
                assert!(!d.is_null() && !w.dead.contains(&(d as usize)));
                w.devs.push(d as usize);
            } else {
                assert!(d.is_null());
            }
        }
        1 => {
            let d = w.pick(inp, Kind::Dev);
            let st = c!(tg_device_close(d.h as *mut tg_device));
            expect_destroy("tg_device_close", st, d);
            if st == tg_status::TG_OK && d.h != 0 {
                w.forget(d.h);
            }
        }
        2 => {
            let d = w.pick(inp, Kind::Dev);
            const SZ: usize = std::mem::size_of::<tg_device_info>();
            let size: u32 = match inp.u8() % 8 {
                0 => 0,
                1 => SZ as u32 - 1,
                2 => SZ as u32 + 64,
                3 => inp.u32(),
                _ => SZ as u32,
            };
            let mut raw = [0xA5u8; SZ + 64];
            raw[..4].copy_from_slice(&size.to_le_bytes());
            let out = if inp.chance(16) {
                null_mut()
            } else {
                raw.as_mut_ptr() as *mut tg_device_info
            };
            let st = c!(tg_device_get_info(d.h as *const tg_device, out));
            expect_fail_if_bad("tg_device_get_info", st, &[d]);
            if st == tg_status::TG_OK {
                assert!(
                    raw[SZ..].iter().all(|&b| b == 0xA5),
                    "wrote past the struct"
                );
                // SAFETY: filled by the library.
                let info: tg_device_info =
                    unsafe { std::ptr::read_unaligned(raw.as_ptr() as *const _) };
                assert_eq!(info.struct_size as usize, SZ);
                assert!(info.name.contains(&0), "name not NUL-terminated");
                assert!(info.emulated && info.sm_count > 0);
            } else {
                assert!(raw[4..].iter().all(|&b| b == 0xA5), "wrote on failure");
            }
        }
        3 => {
            let d = w.pick(inp, Kind::Dev);
            let t = short_timeout(inp);
            let st = c!(tg_device_synchronize(d.h as *const tg_device, t));
            expect_fail_if_bad("tg_device_synchronize", st, &[d]);
        }
        4 => {
            let d = w.pick(inp, Kind::Dev);
            const SZ: usize = std::mem::size_of::<tg_fault_report>();
            let size: u32 = match inp.u8() % 4 {
                0 => inp.u32(),
                1 => 4,
                _ => SZ as u32,
            };
            let mut raw = vec![0xA5u8; SZ + 64];
            raw[..4].copy_from_slice(&size.to_le_bytes());
            let st = c!(tg_device_get_fault(
                d.h as *const tg_device,
                raw.as_mut_ptr() as *mut tg_fault_report
            ));
            expect_fail_if_bad("tg_device_get_fault", st, &[d]);
            if st == tg_status::TG_OK {
                assert!(
                    raw[SZ..].iter().all(|&b| b == 0xA5),
                    "wrote past the struct"
                );
                assert!(
                    raw[4 + 4 + 8 + 8..SZ].contains(&0),
                    "message not NUL-terminated"
                );
            } else {
                assert!(raw[4..].iter().all(|&b| b == 0xA5), "wrote on failure");
            }
        }
        5 => {
            let d = w.pick(inp, Kind::Dev);
            let size = match inp.u8() % 16 {
                0 => 0,
                1 => 1 + inp.below(4096) as u64,
                2..=4 => 4096 * (1 + inp.below(16) as u64),
                5..=11 => ARENA_MIN + 4096 * inp.below(64) as u64,
                12 => 4 << 20,
                13 => (1 << 40) + 1,
                14 => u64::MAX,
                _ => inp.u64() | (1 << 44),
            };
            let flags = match inp.u8() % 8 {
                0 => inp.u32(),
                1 => TG_BUF_CPU_CACHED | TG_BUF_WRITE_COMBINED,
                n => [
                    0,
                    TG_BUF_ZEROED,
                    TG_BUF_CPU_CACHED,
                    TG_BUF_WRITE_COMBINED,
                    TG_BUF_DEVICE_LOCAL,
                    TG_BUF_DEVICE_LOCAL | TG_BUF_ZEROED,
                ][n as usize - 2],
            };
            if w.bufs.len() >= MAX_BUFS {
                return;
            }
            let mut b = null_mut::<tg_buf>();
            let out = if inp.chance(32) {
                null_mut()
            } else {
                &mut b as *mut _
            };
            let st = c!(tg_buf_alloc(d.h as *const tg_device, size, flags, out));
            expect_fail_if_bad("tg_buf_alloc", st, &[d]);
            if st == tg_status::TG_OK {
                assert!(
                    size > 0 && size < 1 << 40,
                    "tg_buf_alloc accepted size {size:#x}"
                );
                let mut va = 0;
                assert_eq!(c!(tg_buf_gpu_address(b, &mut va)), tg_status::TG_OK);
                let mut s = 0;
                assert_eq!(c!(tg_buf_size(b, &mut s)), tg_status::TG_OK);
                assert_eq!(s, size, "tg_buf_size");
                if flags & TG_BUF_ZEROED != 0 {
                    let mut p = null_mut::<c_void>();
                    assert_eq!(c!(tg_buf_cpu_ptr(b, &mut p)), tg_status::TG_OK);
                    // SAFETY: `size` mapped bytes.
                    let z = unsafe {
                        std::slice::from_raw_parts(p as *const u8, size.min(1 << 16) as usize)
                    };
                    assert!(z.iter().all(|&x| x == 0), "TG_BUF_ZEROED memory not zero");
                }
                w.bufs.push(BufRec {
                    h: b as usize,
                    dev: d.h,
                    size,
                    va,
                    cpu: None,
                });
            } else {
                assert!(b.is_null());
            }
        }
        6 => {
            let b = w.pick(inp, Kind::Buf);
            let st = c!(tg_buf_free(b.h as *mut tg_buf));
            expect_destroy("tg_buf_free", st, b);
            if st == tg_status::TG_OK && b.h != 0 {
                w.forget(b.h);
            }
        }
        7 => {
            let b = w.pick(inp, Kind::Buf);
            let mut p = null_mut::<c_void>();
            let out = if inp.chance(16) {
                null_mut()
            } else {
                &mut p as *mut _
            };
            let st = c!(tg_buf_cpu_ptr(b.h as *const tg_buf, out));
            expect_fail_if_bad("tg_buf_cpu_ptr", st, &[b]);
            if st == tg_status::TG_OK {
                let r = w.bufs.iter_mut().find(|r| r.h == b.h).expect("live buffer");
                assert!(!p.is_null());
                if let Some(prev) = r.cpu {
                    assert_eq!(prev, p as *mut u8, "tg_buf_cpu_ptr changed");
                }
                r.cpu = Some(p as *mut u8);
                // The mapping covers the whole buffer: write both ends, read them back.
                let v = inp.u8();
                // SAFETY: `size` mapped, writable bytes.
                unsafe {
                    let q = p as *mut u8;
                    std::ptr::write_volatile(q, v);
                    std::ptr::write_volatile(q.add(r.size as usize - 1), v);
                    assert_eq!(std::ptr::read_volatile(q.add(r.size as usize - 1)), v);
                }
            } else {
                assert!(p.is_null());
            }
        }
        8 => {
            let b = w.pick(inp, Kind::Buf);
            let (mut va, mut size) = (0u64, 0u64);
            let st1 = c!(tg_buf_gpu_address(b.h as *const tg_buf, &mut va));
            let st2 = c!(tg_buf_size(b.h as *const tg_buf, &mut size));
            expect_fail_if_bad("tg_buf_gpu_address", st1, &[b]);
            expect_fail_if_bad("tg_buf_size", st2, &[b]);
            if let Some(r) = w.bufs.iter().find(|r| r.h == b.h) {
                assert_eq!((st1, st2), (tg_status::TG_OK, tg_status::TG_OK));
                assert_eq!((va, size), (r.va, r.size));
            } else {
                assert_eq!((va, size), (0, 0), "out-parameters written on failure");
            }
            let st = c!(tg_buf_size(b.h as *const tg_buf, null_mut()));
            assert!(st != tg_status::TG_OK);
        }
        9 => {
            let b = w.pick(inp, Kind::Buf);
            let mut fd: std::ffi::c_int = -7;
            let st = c!(tg_buf_export_dmabuf(b.h as *const tg_buf, &mut fd));
            expect_fail_if_bad("tg_buf_export_dmabuf", st, &[b]);
            if st == tg_status::TG_OK {
                assert!(fd >= 0);
                let target = std::fs::read_link(format!("/proc/self/fd/{fd}"))
                    .unwrap_or_else(|e| panic!("exported dma-buf fd {fd} is not open: {e}"));
                use std::os::fd::FromRawFd;
                // SAFETY: the caller owns the exported descriptor.
                w.fds
                    .push((unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) }, target));
            } else {
                assert_eq!(fd, -7);
            }
        }
        10 => {
            let d = w.pick(inp, Kind::Dev);
            let (bytes, is_kernels) = module_bytes(inp);
            if w.mods.len() >= MAX_MODS {
                return;
            }
            let mut m = null_mut::<tg_module>();
            let (data, len) = match inp.u8() % 32 {
                0 => (null(), bytes.len()),
                1 => (bytes.as_ptr() as *const c_void, 0),
                _ => (bytes.as_ptr() as *const c_void, bytes.len()),
            };
            let st = c!(tg_module_load(d.h as *const tg_device, data, len, &mut m));
            expect_fail_if_bad("tg_module_load", st, &[d]);
            if st == tg_status::TG_OK {
                w.mods.push((m as usize, is_kernels));
            } else {
                assert!(m.is_null());
            }
        }
        11 => {
            let m = w.pick(inp, Kind::Module);
            let st = c!(tg_module_destroy(m.h as *mut tg_module));
            expect_destroy("tg_module_destroy", st, m);
            if st == tg_status::TG_OK && m.h != 0 {
                w.forget(m.h);
            }
        }
        12 => {
            let m = w.pick(inp, Kind::Module);
            let all: Vec<&'static str> = FIXTURE_KERNELS
                .iter()
                .chain(GLOBALS_KERNELS)
                .copied()
                .chain(["", "no_such_kernel", "vector_add\u{7f}"])
                .collect();
            let name = all[inp.below(all.len())];
            let cname = CString::new(name).expect("no NUL");
            if w.kernels.len() >= MAX_KERNELS {
                return;
            }
            let mut k = null_mut::<tg_kernel>();
            let np = if inp.chance(32) {
                null()
            } else {
                cname.as_ptr()
            };
            let st = c!(tg_module_get_kernel(m.h as *const tg_module, np, &mut k));
            expect_fail_if_bad("tg_module_get_kernel", st, &[m]);
            if st == tg_status::TG_OK {
                let fixture = w.mods.iter().any(|&(h, kern)| h == m.h && kern);
                let rec = kernel_record(k as usize, if fixture { name } else { "" });
                w.kernels.push(rec);
            } else {
                assert!(k.is_null());
            }
        }
        13 => {
            let k = w.pick(inp, Kind::Kernel);
            let st = c!(tg_kernel_destroy(k.h as *mut tg_kernel));
            expect_destroy("tg_kernel_destroy", st, k);
            if st == tg_status::TG_OK && k.h != 0 {
                w.forget(k.h);
            }
        }
        14 => {
            let k = w.pick(inp, Kind::Kernel);
            let kp = k.h as *const tg_kernel;
            match inp.u8() % 3 {
                0 => {
                    let (mut off, mut size) = (7u32, 7u32);
                    let idx = if inp.chance(2) {
                        inp.below(12) as u32
                    } else {
                        inp.u32()
                    };
                    let st = c!(tg_kernel_get_param(kp, idx, &mut off, &mut size));
                    expect_fail_if_bad("tg_kernel_get_param", st, &[k]);
                    if st != tg_status::TG_OK {
                        assert_eq!((off, size), (7, 7));
                    }
                }
                1 => {
                    let mut n = 0xDEADu32;
                    let t = match inp.u8() % 4 {
                        0 => inp.u32(),
                        _ => inp.below(1100) as u32,
                    };
                    let d = match inp.u8() % 4 {
                        0 => inp.u32(),
                        _ => inp.below(100_000) as u32,
                    };
                    let st = c!(tg_kernel_max_active_blocks(kp, t, d, &mut n));
                    expect_fail_if_bad("tg_kernel_max_active_blocks", st, &[k]);
                    if st != tg_status::TG_OK {
                        assert_eq!(n, 0xDEAD);
                    }
                }
                _ => {
                    // SAFETY: all-zero is a valid tg_kernel_attributes.
                    let mut a: tg_kernel_attributes = unsafe { std::mem::zeroed() };
                    a.struct_size = std::mem::size_of::<tg_kernel_attributes>() as u32;
                    let st = c!(tg_kernel_get_attributes(kp, &mut a));
                    expect_fail_if_bad("tg_kernel_get_attributes", st, &[k]);
                }
            }
        }
        15 => {
            let m = w.pick(inp, Kind::Module);
            let names: Vec<&CStr> = vec![
                c"g_zero",
                c"g_init",
                c"g_ptr",
                c"c_table",
                c"",
                c"vector_add",
                c"nope",
            ];
            let name = names[inp.below(names.len())];
            let (mut gpu, mut cpu, mut size) = (0u64, null_mut::<c_void>(), 0u64);
            let np = if inp.chance(32) {
                null()
            } else {
                name.as_ptr()
            };
            let st = c!(tg_module_get_global(
                m.h as *const tg_module,
                np,
                &mut gpu,
                &mut cpu,
                &mut size
            ));
            expect_fail_if_bad("tg_module_get_global", st, &[m]);
            if st == tg_status::TG_OK {
                if size > 0 {
                    // SAFETY: `size` bytes at cpu.
                    unsafe {
                        let p = cpu as *mut u8;
                        let last = p.add(size as usize - 1);
                        std::ptr::write_volatile(last, std::ptr::read_volatile(last));
                    }
                }
            } else {
                assert!((gpu, cpu, size) == (0, null_mut(), 0));
            }
        }
        16 => {
            let d = w.pick(inp, Kind::Dev);
            let limit = if inp.chance(8) {
                inp.u32()
            } else {
                TG_LIMIT_STACK_SIZE
            };
            if inp.chance(2) {
                let v = match inp.u8() % 8 {
                    0 => 0,
                    1 => 1,
                    2 => 1024,
                    3 => 2048,
                    4 => 4096 + 8 * inp.below(512) as u64,
                    5 => 1 << 24,
                    6 => u64::MAX,
                    _ => inp.below(8192) as u64,
                };
                let st = c!(tg_device_set_limit(d.h as *const tg_device, limit, v));
                expect_fail_if_bad("tg_device_set_limit", st, &[d]);
            } else {
                let mut v = 0xDEADu64;
                let out = if inp.chance(16) {
                    null_mut()
                } else {
                    &mut v as *mut u64
                };
                let st = c!(tg_device_get_limit(d.h as *const tg_device, limit, out));
                expect_fail_if_bad("tg_device_get_limit", st, &[d]);
                if st == tg_status::TG_OK {
                    assert!(v != 0xDEAD && v < 1 << 24, "stack limit {v}");
                } else {
                    assert_eq!(v, 0xDEAD);
                }
            }
        }
        17 => {
            let d = w.pick(inp, Kind::Dev);
            let kind = match inp.u8() % 8 {
                0 => inp.u32() as i32,
                1 | 2 => 1,
                _ => 0,
            };
            if w.queues.len() >= MAX_QUEUES {
                return;
            }
            let mut q = null_mut::<tg_queue>();
            let st = if inp.chance(2) {
                c!(tg_queue_create(
                    d.h as *const tg_device,
                    tg_queue_kind_arg(kind),
                    &mut q
                ))
            } else {
                let depth = match inp.u8() % 8 {
                    0 => inp.u32(),
                    1 => 15,
                    2 => 8,
                    3 => 1 << 17,
                    _ => 16 << inp.below(6),
                };
                c!(tg_queue_create_with_depth(
                    d.h as *const tg_device,
                    tg_queue_kind_arg(kind),
                    depth,
                    &mut q
                ))
            };
            expect_fail_if_bad("tg_queue_create", st, &[d]);
            if st == tg_status::TG_OK {
                w.queues.push((q as usize, d.h));
            } else {
                assert!(q.is_null());
            }
        }
        18 => {
            let q = w.pick(inp, Kind::Queue);
            // Destroying a queue waits for its work: nothing may wait for the CPU then.
            w.release_all();
            let st = c!(tg_queue_destroy(q.h as *mut tg_queue));
            expect_destroy("tg_queue_destroy", st, q);
            if st == tg_status::TG_OK && q.h != 0 {
                w.forget(q.h);
            }
        }
        19..=23 => op_launch(inp, w),
        24 => {
            let q = w.pick(inp, Kind::Queue);
            let dst = w.pick(inp, Kind::Buf);
            let src = w.pick(inp, Kind::Buf);
            let size_of = |p: Pick| w.bufs.iter().find(|b| b.h == p.h).map_or(4096, |b| b.size);
            let (ds, ss) = (size_of(dst), size_of(src));
            let off = |inp: &mut Input, s: u64| match inp.u8() % 8 {
                0 => s,
                1 => inp.u64(),
                2 => s.saturating_sub(1),
                _ => inp.below(s.min(1 << 20) as usize + 1) as u64 & !3,
            };
            let (doff, soff) = (off(inp, ds), off(inp, ss));
            let size = match inp.u8() % 8 {
                0 => 0,
                1 => inp.u64(),
                2 => ds.min(ss),
                _ => inp.below(ds.min(ss) as usize + 1) as u64,
            };
            let st = c!(tg_queue_copy(
                q.h as *const tg_queue,
                dst.h as *const tg_buf,
                doff,
                src.h as *const tg_buf,
                soff,
                size
            ));
            expect_fail_if_bad("tg_queue_copy", st, &[q, dst, src]);
            if st == tg_status::TG_OK {
                assert!(
                    doff.checked_add(size).is_some_and(|e| e <= ds)
                        && soff.checked_add(size).is_some_and(|e| e <= ss),
                    "tg_queue_copy accepted a range outside a buffer: dst {doff}+{size} of {ds}, src {soff}+{size} of {ss}"
                );
            }
        }
        25 => {
            let q = w.pick(inp, Kind::Queue);
            let s = w.pick(inp, Kind::Signal);
            let mut v = value(inp);
            if let Some(r) = w.sig(s.h) {
                if r.blocking {
                    return; // no GPU writes to a signal the CPU releases
                }
                v = v.max(r.floor);
            }
            let st = c!(tg_queue_signal(
                q.h as *const tg_queue,
                s.h as *const tg_signal,
                v
            ));
            expect_fail_if_bad("tg_queue_signal", st, &[q, s]);
            if st == tg_status::TG_OK {
                let r = w.sig(s.h).expect("live signal");
                r.min_assigned = r.min_assigned.min(v);
                r.gpu_written = true;
            }
        }
        26 => {
            let q = w.pick(inp, Kind::Queue);
            let s = w.pick(inp, Kind::Signal);
            let block = inp.chance(8);
            let raw = value(inp);
            let (v, blocking) = match w.sig(s.h) {
                Some(r) if r.blocking => (raw, !r.released),
                Some(r) if block && !r.gpu_written && r.min_assigned < u64::MAX => {
                    (r.min_assigned.saturating_add(1 + raw % 1000), true)
                }
                Some(r) => (
                    match raw % 4 {
                        0 => 0,
                        1 => r.min_assigned,
                        _ => raw % (r.min_assigned.saturating_add(1)).max(1),
                    },
                    false,
                ),
                None => (raw, false),
            };
            let st = c!(tg_queue_wait(
                q.h as *const tg_queue,
                s.h as *const tg_signal,
                v
            ));
            expect_fail_if_bad("tg_queue_wait", st, &[q, s]);
            if st == tg_status::TG_OK {
                let r = w.sig(s.h).expect("live signal");
                if blocking {
                    r.blocking = true;
                    let n = 1 + inp.below(6) as u32;
                    w.unblock_in = Some(w.unblock_in.map_or(n, |u| u.min(n)));
                } else if !r.blocking {
                    r.floor = r.floor.max(v);
                }
            }
        }
        27 => {
            let q = w.pick(inp, Kind::Queue);
            let st = c!(tg_queue_barrier(q.h as *const tg_queue));
            expect_fail_if_bad("tg_queue_barrier", st, &[q]);
        }
        28 | 29 => {
            let q = w.pick(inp, Kind::Queue);
            let st = c!(tg_queue_submit(q.h as *const tg_queue));
            expect_fail_if_bad("tg_queue_submit", st, &[q]);
        }
        30 => {
            let q = w.pick(inp, Kind::Queue);
            let t = short_timeout(inp);
            let st = c!(tg_queue_synchronize(q.h as *const tg_queue, t));
            expect_fail_if_bad("tg_queue_synchronize", st, &[q]);
        }
        31 => {
            let d = w.pick(inp, Kind::Dev);
            let initial = value(inp);
            if w.sigs.len() >= MAX_SIGS {
                return;
            }
            let mut s = null_mut::<tg_signal>();
            let out = if inp.chance(32) {
                null_mut()
            } else {
                &mut s as *mut _
            };
            let st = c!(tg_signal_create(d.h as *const tg_device, initial, out));
            expect_fail_if_bad("tg_signal_create", st, &[d]);
            if st == tg_status::TG_OK {
                let mut v = 0;
                assert_eq!(c!(tg_signal_value(s, &mut v)), tg_status::TG_OK);
                assert_eq!(v, initial, "a new signal's value");
                w.sigs.push(SigRec {
                    h: s as usize,
                    min_assigned: initial,
                    floor: 0,
                    gpu_written: false,
                    blocking: false,
                    released: false,
                });
            } else {
                assert!(s.is_null());
            }
        }
        32 => {
            let s = w.pick(inp, Kind::Signal);
            w.release(s.h);
            let st = c!(tg_signal_destroy(s.h as *mut tg_signal));
            expect_destroy("tg_signal_destroy", st, s);
            if st == tg_status::TG_OK && s.h != 0 {
                w.forget(s.h);
            }
        }
        33 => {
            let s = w.pick(inp, Kind::Signal);
            let mut v = 0xDEADu64;
            let out = if inp.chance(16) {
                null_mut()
            } else {
                &mut v as *mut u64
            };
            let st = c!(tg_signal_value(s.h as *const tg_signal, out));
            expect_fail_if_bad("tg_signal_value", st, &[s]);
            if st != tg_status::TG_OK {
                assert_eq!(v, 0xDEAD);
            }
        }
        34 => {
            let s = w.pick(inp, Kind::Signal);
            let mut v = value(inp);
            if let Some(r) = w.sig(s.h) {
                if r.blocking && r.released {
                    v = u64::MAX;
                } else if !r.blocking {
                    v = v.max(r.floor);
                }
            }
            let st = c!(tg_signal_set(s.h as *const tg_signal, v));
            expect_fail_if_bad("tg_signal_set", st, &[s]);
            if st == tg_status::TG_OK {
                let r = w.sig(s.h).expect("live signal");
                r.min_assigned = r.min_assigned.min(v);
                let mut now = 0;
                assert_eq!(
                    c!(tg_signal_value(s.h as *const tg_signal, &mut now)),
                    tg_status::TG_OK
                );
                if !r.gpu_written {
                    assert_eq!(now, v, "tg_signal_value after tg_signal_set");
                }
            }
        }
        35 => {
            let s = w.pick(inp, Kind::Signal);
            let v = value(inp);
            let t = short_timeout(inp);
            let st = c!(tg_signal_wait(s.h as *const tg_signal, v, t));
            expect_fail_if_bad("tg_signal_wait", st, &[s]);
        }
        36 => w.release_all(),
        37 => {
            let v = inp.u32() as i32;
            // SAFETY: tg_status_str returns a static NUL-terminated string for any value.
            let s = unsafe { CStr::from_ptr(tg_status_str(tg_status_arg(v))) };
            assert!(!s.to_bytes().is_empty());
            assert_eq!(tg_version() >> 16, TG_VERSION_MAJOR);
            let _ = last_error();
        }
        _ => {
            // A queue on a device whose handle is gone, or a device closed under live objects.
            let d = w.pick(inp, Kind::Dev);
            let st = c!(tg_device_synchronize(d.h as *const tg_device, 0));
            expect_fail_if_bad("tg_device_synchronize", st, &[d]);
        }
    }
}

fn kernel_record(h: usize, name: &'static str) -> KernRec {
    let kp = h as *const tg_kernel;
    // SAFETY: all-zero is a valid tg_kernel_attributes.
    let mut a: tg_kernel_attributes = unsafe { std::mem::zeroed() };
    a.struct_size = std::mem::size_of::<tg_kernel_attributes>() as u32;
    assert_eq!(c!(tg_kernel_get_attributes(kp, &mut a)), tg_status::TG_OK);
    let params = (0..a.num_params)
        .map(|i| {
            let (mut o, mut s) = (0, 0);
            assert_eq!(
                c!(tg_kernel_get_param(kp, i, &mut o, &mut s)),
                tg_status::TG_OK
            );
            (o, s)
        })
        .collect();
    KernRec {
        h,
        name,
        params,
        param_bytes: a.param_bytes,
        max_threads: a.max_threads_per_block,
        max_dyn: a.max_dynamic_shared_bytes,
    }
}
