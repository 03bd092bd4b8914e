//! Device-to-device copy probe (performance work): our SM copy path (compute queue) and copy
//! engine (copy queue) at 64 MiB, 256 MiB and 1 GiB, best of 10 by GPU timestamps, next to
//! libcuda's cuMemcpyDtoDAsync timed with events in the same process (when present).

use std::ffi::c_void;
use tegragpu::core::{Device, MemFlags, QueueKind};

const TO: u64 = 20_000_000_000;
const SIZES: [u64; 3] = [64 << 20, 256 << 20, 1 << 30];

type R = i32;
struct Cuda {
    _lib: libloading::Library,
    alloc: unsafe extern "C" fn(*mut u64, usize) -> R,
    dtod: unsafe extern "C" fn(u64, u64, usize, *mut c_void) -> R,
    ev_create: unsafe extern "C" fn(*mut *mut c_void, u32) -> R,
    ev_record: unsafe extern "C" fn(*mut c_void, *mut c_void) -> R,
    ev_sync: unsafe extern "C" fn(*mut c_void) -> R,
    ev_elapsed: unsafe extern "C" fn(*mut f32, *mut c_void, *mut c_void) -> R,
    mload: unsafe extern "C" fn(*mut *mut c_void, *const c_void) -> R,
    getf: unsafe extern "C" fn(*mut *mut c_void, *mut c_void, *const std::ffi::c_char) -> R,
    #[allow(clippy::type_complexity)]
    launch: unsafe extern "C" fn(
        *mut c_void,
        u32,
        u32,
        u32,
        u32,
        u32,
        u32,
        u32,
        *mut c_void,
        *mut *mut c_void,
        *mut *mut c_void,
    ) -> R,
}

fn cuda() -> Option<Cuda> {
    // SAFETY: documented CUDA driver API signatures.
    unsafe {
        let lib = libloading::Library::new("libcuda.so.1").ok()?;
        macro_rules! s {
            ($n:literal) => {
                *lib.get($n).ok()?
            };
        }
        let init: unsafe extern "C" fn(u32) -> R = s!(b"cuInit");
        let get: unsafe extern "C" fn(*mut i32, i32) -> R = s!(b"cuDeviceGet");
        let retain: unsafe extern "C" fn(*mut *mut c_void, i32) -> R =
            s!(b"cuDevicePrimaryCtxRetain");
        let set: unsafe extern "C" fn(*mut c_void) -> R = s!(b"cuCtxSetCurrent");
        let mut d = 0;
        let mut ctx = std::ptr::null_mut();
        if init(0) != 0 || get(&mut d, 0) != 0 || retain(&mut ctx, d) != 0 || set(ctx) != 0 {
            return None;
        }
        Some(Cuda {
            alloc: s!(b"cuMemAlloc_v2"),
            dtod: s!(b"cuMemcpyDtoDAsync_v2"),
            ev_create: s!(b"cuEventCreate"),
            ev_record: s!(b"cuEventRecord"),
            ev_sync: s!(b"cuEventSynchronize"),
            ev_elapsed: s!(b"cuEventElapsedTime"),
            mload: s!(b"cuModuleLoadData"),
            getf: s!(b"cuModuleGetFunction"),
            launch: s!(b"cuLaunchKernel"),
            _lib: lib,
        })
    }
}

fn main() -> tegragpu::Result<()> {
    let with_cuda_numbers = std::env::args().any(|a| a == "cuda");
    let with_ce = std::env::args().any(|a| a == "ce");
    let c = cuda();
    if with_cuda_numbers {
        if let Some(c) = &c {
            let mut line = String::from("libcuda DtoD GB/s:");
            for &size in &SIZES {
                // SAFETY: CUDA driver calls on buffers allocated here.
                unsafe {
                    let (mut a, mut b) = (0u64, 0u64);
                    (c.alloc)(&mut a, size as usize);
                    (c.alloc)(&mut b, size as usize);
                    let (mut e0, mut e1) = (std::ptr::null_mut(), std::ptr::null_mut());
                    (c.ev_create)(&mut e0, 0);
                    (c.ev_create)(&mut e1, 0);
                    let mut best = f32::MAX;
                    for _ in 0..10 {
                        (c.ev_record)(e0, std::ptr::null_mut());
                        (c.dtod)(b, a, size as usize, std::ptr::null_mut());
                        (c.ev_record)(e1, std::ptr::null_mut());
                        (c.ev_sync)(e1);
                        let mut ms = 0f32;
                        (c.ev_elapsed)(&mut ms, e0, e1);
                        best = best.min(ms);
                    }
                    line += &format!(
                        " {}MiB {:.0}",
                        size >> 20,
                        size as f64 / (best as f64 / 1e3) / 1e9
                    );
                }
            }
            println!("{line}");
            // Our copy kernel launched through libcuda on libcuda's memory.
            let cubin = tegragpu::builtin::copy_cubin(9, 0).unwrap();
            'ours: {
                let name = c"tg_copy";
                let mut line = format!("our {name:?} via libcuda GB/s:");
                // SAFETY: CUDA driver calls on buffers allocated here.
                unsafe {
                    let mut m = std::ptr::null_mut();
                    let mut f = std::ptr::null_mut();
                    if (c.mload)(&mut m, cubin.as_ptr() as *const c_void) != 0
                        || (c.getf)(&mut f, m, name.as_ptr()) != 0
                    {
                        println!("cuModuleLoadData/GetFunction failed");
                        break 'ours;
                    }
                    for &size in &SIZES {
                        let (mut a, mut b) = (0u64, 0u64);
                        (c.alloc)(&mut a, size as usize);
                        (c.alloc)(&mut b, size as usize);
                        let (mut e0, mut e1) = (std::ptr::null_mut(), std::ptr::null_mut());
                        (c.ev_create)(&mut e0, 0);
                        (c.ev_create)(&mut e1, 0);
                        let mut n = size;
                        let mut args: [*mut c_void; 3] = [
                            &mut b as *mut u64 as *mut c_void,
                            &mut a as *mut u64 as *mut c_void,
                            &mut n as *mut u64 as *mut c_void,
                        ];
                        let grid = tegragpu::builtin::copy_grid(size);
                        let mut best = f32::MAX;
                        for _ in 0..10 {
                            (c.ev_record)(e0, std::ptr::null_mut());
                            let r = (c.launch)(
                                f,
                                grid,
                                1,
                                1,
                                256,
                                1,
                                1,
                                0,
                                std::ptr::null_mut(),
                                args.as_mut_ptr(),
                                std::ptr::null_mut(),
                            );
                            if r != 0 {
                                println!("cuLaunchKernel: {r}");
                            }
                            (c.ev_record)(e1, std::ptr::null_mut());
                            (c.ev_sync)(e1);
                            let mut ms = 0f32;
                            (c.ev_elapsed)(&mut ms, e0, e1);
                            best = best.min(ms);
                        }
                        line += &format!(
                            " {}MiB {:.0}",
                            size >> 20,
                            size as f64 / (best as f64 / 1e3) / 1e9
                        );
                    }
                }
                println!("{line}");
            }
        }
    }
    let dev = Device::open(None)?;
    if std::env::args().any(|a| a == "split") {
        // SM copy on a compute queue and copy-engine copy on a copy queue, concurrently, on
        // disjoint parts; GPU time from the earliest start to the latest end.
        let mut cq = dev.create_queue(QueueKind::Compute)?;
        let mut xq = dev.create_queue(QueueKind::Copy)?;
        let s: Vec<_> = (0..4)
            .map(|_| dev.create_signal(0))
            .collect::<Result<_, _>>()?;
        let mut v = 0;
        for permille in [0u64, 30, 45, 60] {
            let mut line = format!("split CE {permille}/1000 GB/s:");
            for &size in &SIZES {
                let a = dev.alloc(size, MemFlags::default())?;
                let b = dev.alloc(size, MemFlags::default())?;
                let ce = (size * permille / 1000) & !0xFFFF;
                let sm = size - ce;
                let mut best = f64::MAX;
                for _ in 0..10 {
                    v += 1;
                    cq.signal(&s[0], v)?;
                    cq.copy(&b, 0, &a, 0, sm)?;
                    cq.signal(&s[1], v)?;
                    if ce > 0 {
                        xq.signal(&s[2], v)?;
                        xq.copy(&b, sm, &a, sm, ce)?;
                        xq.signal(&s[3], v)?;
                        xq.submit()?;
                    }
                    cq.submit()?;
                    s[1].wait(v, TO)?;
                    let (mut t0, mut t1) = (s[0].timestamp(), s[1].timestamp());
                    if ce > 0 {
                        s[3].wait(v, TO)?;
                        t0 = t0.min(s[2].timestamp());
                        t1 = t1.max(s[3].timestamp());
                    }
                    let dt = t1.saturating_sub(t0) as f64 / 1e9;
                    if dt > 0.0 {
                        best = best.min(dt);
                    }
                }
                line += &format!(" {}MiB {:.0}", size >> 20, size as f64 / best / 1e9);
            }
            println!("{line}");
        }
        return Ok(());
    }
    let kinds: &[QueueKind] = if with_ce {
        &[QueueKind::Compute, QueueKind::Copy]
    } else {
        &[QueueKind::Compute]
    };
    for &kind in kinds {
        let mut q = dev.create_queue(kind)?;
        let (t0, t1) = (dev.create_signal(0)?, dev.create_signal(0)?);
        let mut v = 0;
        let mut line = format!("ours {kind:?} GB/s:");
        for &size in &SIZES {
            let a = dev.alloc(size, MemFlags::default())?;
            let b = dev.alloc(size, MemFlags::default())?;
            let mut best = f64::MAX;
            for _ in 0..10 {
                v += 1;
                q.signal(&t0, v)?;
                q.copy(&b, 0, &a, 0, size)?;
                q.signal(&t1, v)?;
                q.submit()?;
                t1.wait(v, TO)?;
                let dt = t1.timestamp().saturating_sub(t0.timestamp()) as f64 / 1e9;
                if dt > 0.0 {
                    best = best.min(dt);
                }
            }
            line += &format!(" {}MiB {:.0}", size >> 20, size as f64 / best / 1e9);
        }
        println!("{line}");
    }
    Ok(())
}
