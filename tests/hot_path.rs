//! The hot path — record a launch, submit — makes no system call and no heap allocation
//! (performance rules). Checked on the emulated Orin: a counting `Sys` wraps the emulated kernel,
//! and a counting global allocator counts this thread's allocations.

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::ffi::CStr;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use tegragpu::backend::nvgpu::NvgpuBackend;
use tegragpu::core::{Device, LaunchConfig, MemFlags, QueueKind};
use tegragpu::os::{Errno, Sys};

struct Counting;
thread_local! {
    static COUNT_HERE: Cell<bool> = const { Cell::new(false) };
    static ALLOCS: Cell<u64> = const { Cell::new(0) };
}
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let _ = COUNT_HERE.try_with(|c| {
            if c.get() {
                ALLOCS.with(|a| a.set(a.get() + 1));
            }
        });
        System.alloc(l)
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        System.dealloc(p, l)
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        let _ = COUNT_HERE.try_with(|c| {
            if c.get() {
                ALLOCS.with(|a| a.set(a.get() + 1));
            }
        });
        System.realloc(p, l, n)
    }
}
#[global_allocator]
static GLOBAL: Counting = Counting;

/// A `Sys` that counts every call and forwards to the emulated kernel.
struct CountingSys {
    inner: Arc<dyn Sys>,
    calls: AtomicU64,
}
impl Sys for CountingSys {
    fn open(&self, path: &CStr, flags: i32) -> Result<RawFd, Errno> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.inner.open(path, flags)
    }
    fn close(&self, fd: RawFd) -> Result<(), Errno> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.inner.close(fd)
    }
    unsafe fn ioctl(&self, fd: RawFd, request: u64, arg: usize) -> Result<i32, Errno> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.inner.ioctl(fd, request, arg)
    }
    unsafe fn mmap(
        &self,
        addr: *mut u8,
        len: usize,
        prot: i32,
        flags: i32,
        fd: RawFd,
        off: i64,
    ) -> Result<*mut u8, Errno> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.inner.mmap(addr, len, prot, flags, fd, off)
    }
    unsafe fn munmap(&self, addr: *mut u8, len: usize) -> Result<(), Errno> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.inner.munmap(addr, len)
    }
    fn is_emulated(&self) -> bool {
        true
    }
    fn fault_log(&self) -> Vec<tegragpu::os::KernelFaultRecord> {
        self.inner.fault_log()
    }
}

#[test]
fn launch_and_submit_make_no_syscall_and_no_allocation() {
    let sys = Arc::new(CountingSys {
        inner: tegragpu::emu::EmuSys::new(),
        calls: AtomicU64::new(0),
    });
    let backend = NvgpuBackend::open(sys.clone()).expect("nvgpu backend over the emulated kernel");
    let dev = Device::from_backend(Box::new(backend)).unwrap();
    let cubin = std::fs::read(common::repo_path(
        "tests/fixtures/cubin/kernels.sm_87.cubin",
    ))
    .unwrap();
    let m = dev.load_module(&cubin).unwrap();
    let k = m.kernel("increment").unwrap();
    let buf = dev
        .alloc(
            4096,
            MemFlags {
                cpu_cached: true,
                zeroed: true,
                ..Default::default()
            },
        )
        .unwrap();
    let mut q = dev.create_queue(QueueKind::Compute).unwrap();
    let s = dev.create_signal(0).unwrap();
    let mut params = [0u8; 16];
    params[..8].copy_from_slice(&buf.gpu_va().to_le_bytes());
    params[8..].copy_from_slice(&1u64.to_le_bytes());
    let cfg = LaunchConfig {
        grid: [1, 1, 1],
        block: [32, 1, 1],
        dynamic_shared_bytes: 0,
        cooperative: false,
        concurrent: false,
        cluster: [0; 3],
    };
    // Warm up (first launch sets up local memory and invalidates caches).
    q.launch(&k, &cfg, &params).unwrap();
    q.submit().unwrap();
    dev.synchronize(10_000_000_000).unwrap();

    let calls_before = sys.calls.load(Ordering::SeqCst);
    ALLOCS.with(|a| a.set(0));
    COUNT_HERE.with(|c| c.set(true));
    // 500 launches + signals + submits: all fit in the default rings, so no waiting either.
    for i in 0..500u64 {
        q.launch(&k, &cfg, &params).unwrap();
        q.signal(&s, i + 1).unwrap();
        q.submit().unwrap();
    }
    COUNT_HERE.with(|c| c.set(false));
    let allocs = ALLOCS.with(|a| a.get());
    let calls = sys.calls.load(Ordering::SeqCst) - calls_before;
    s.wait(500, 10_000_000_000).unwrap();
    assert_eq!(
        unsafe { std::ptr::read_volatile(buf.cpu_ptr() as *const u64) },
        501
    );
    assert_eq!(calls, 0, "system calls on the launch/submit path");
    assert_eq!(allocs, 0, "heap allocations on the launch/submit path");
}

/// The counting allocator itself works (so the zero above means something).
#[test]
fn the_allocation_counter_counts() {
    ALLOCS.with(|a| a.set(0));
    COUNT_HERE.with(|c| c.set(true));
    let v: Vec<u64> = Vec::with_capacity(10);
    COUNT_HERE.with(|c| c.set(false));
    drop(v);
    assert_eq!(ALLOCS.with(|a| a.get()), 1);
}

/// The C API's replay path — an owned command buffer replayed with `tg_queue_replay_submit` on
/// an owned queue, and its updates — makes no system call and no heap allocation once warm.
#[test]
fn c_replay_and_update_make_no_syscall_and_no_allocation() {
    use std::ffi::c_void;
    use std::ptr::null_mut;
    use tegragpu::capi::*;
    let sys = Arc::new(CountingSys {
        inner: tegragpu::emu::EmuSys::new(),
        calls: AtomicU64::new(0),
    });
    let backend = NvgpuBackend::open(sys.clone()).expect("nvgpu backend over the emulated kernel");
    let rdev = Device::from_backend(Box::new(backend)).unwrap();
    let cubin = std::fs::read(common::repo_path(
        "tests/fixtures/cubin/kernels.sm_87.cubin",
    ))
    .unwrap();
    let dev = tegragpu::capi::device_handle(&rdev).unwrap();
    unsafe {
        let (mut m, mut k, mut q, mut cb, mut s, mut b) = (
            null_mut(),
            null_mut(),
            null_mut(),
            null_mut(),
            null_mut(),
            null_mut(),
        );
        let ok = |st: tg_status| assert_eq!(st, tg_status::TG_OK);
        ok(tg_module_load(
            dev,
            cubin.as_ptr() as *const c_void,
            cubin.len(),
            &mut m,
        ));
        ok(tg_module_get_kernel(m, c"increment".as_ptr(), &mut k));
        ok(tg_queue_create_owned(dev, tg_queue_kind_arg(0), 0, &mut q));
        ok(tg_cmdbuf_create_owned(dev, &mut cb));
        ok(tg_signal_create(dev, 0, &mut s));
        ok(tg_buf_alloc(
            dev,
            4096,
            TG_BUF_CPU_CACHED | TG_BUF_ZEROED,
            &mut b,
        ));
        let mut va = 0u64;
        ok(tg_buf_gpu_address(b, &mut va));
        let params = |by: u64| {
            let mut p = [0u8; 16];
            p[..8].copy_from_slice(&va.to_le_bytes());
            p[8..].copy_from_slice(&by.to_le_bytes());
            p
        };
        let cfg = tg_launch_config {
            struct_size: std::mem::size_of::<tg_launch_config>() as u32,
            grid: [1, 1, 1],
            block: [32, 1, 1],
            dynamic_shared_bytes: 0,
            flags: 0,
            cluster: [0; 3],
        };
        let p = params(1);
        let (mut n_inc, mut n_sig) = (0u32, 0u32);
        ok(tg_cmdbuf_launch(
            cb,
            k,
            &cfg,
            p.as_ptr() as *const c_void,
            16,
            &mut n_inc,
        ));
        ok(tg_cmdbuf_signal(cb, s, 0, &mut n_sig));
        ok(tg_cmdbuf_finish(cb));
        // Warm up: the first replay on a queue notes the queue in the command buffer.
        ok(tg_queue_replay_submit(q, cb));
        ok(tg_queue_synchronize(q, 10_000_000_000));

        let count = |on: bool| COUNT_HERE.with(|c| c.set(on));
        // 300 replays + submits, not waited for (they fit in the rings).
        let calls_before = sys.calls.load(Ordering::SeqCst);
        ALLOCS.with(|a| a.set(0));
        count(true);
        for _ in 0..300 {
            ok(tg_queue_replay_submit(q, cb));
        }
        count(false);
        let (calls, allocs) = (
            sys.calls.load(Ordering::SeqCst) - calls_before,
            ALLOCS.with(|a| a.get()),
        );
        ok(tg_queue_synchronize(q, 10_000_000_000));
        assert_eq!(calls, 0, "system calls on the C replay path");
        assert_eq!(allocs, 0, "heap allocations on the C replay path");
        // Updates after the replays completed (they do not wait), then a replay each.
        // (The waits between them poll for faults through the kernel: not counted.)
        let mut expect = 301u64;
        let mut calls = 0;
        for r in 1..=100u64 {
            let p = params(r);
            let before = sys.calls.load(Ordering::SeqCst);
            count(true);
            ok(tg_cmdbuf_set_params(
                cb,
                n_inc,
                k,
                p.as_ptr() as *const c_void,
                16,
            ));
            ok(tg_cmdbuf_set_value(cb, n_sig, r));
            ok(tg_queue_replay_submit(q, cb));
            count(false);
            calls += sys.calls.load(Ordering::SeqCst) - before;
            expect += r;
            // The queue's own timeline, so that the next update has nothing to wait for.
            ok(tg_queue_synchronize(q, 10_000_000_000));
            let mut v = 0u64;
            ok(tg_signal_value(s, &mut v));
            assert_eq!(v, r, "the replay after update {r} signalled");
        }
        let allocs = ALLOCS.with(|a| a.get());
        assert_eq!(calls, 0, "system calls on the C update path");
        assert_eq!(allocs, 0, "heap allocations on the C update path");
        let mut cpu = null_mut();
        ok(tg_buf_cpu_ptr(b, &mut cpu));
        assert_eq!(std::ptr::read_volatile(cpu as *const u64), expect);
        for st in [
            tg_cmdbuf_destroy(cb),
            tg_queue_destroy(q),
            tg_signal_destroy(s),
            tg_buf_free(b),
            tg_kernel_destroy(k),
            tg_module_destroy(m),
            tg_device_close(dev),
        ] {
            ok(st);
        }
    }
}

/// The Rust API (`tegragpu::Queue::launch` with typed arguments, `Queue::replay`, signals,
/// submits) makes no system call and no heap allocation once warm, its per-buffer tracking
/// included.
#[test]
fn rust_api_launch_replay_and_submit_make_no_syscall_and_no_allocation() {
    let sys = Arc::new(CountingSys {
        inner: tegragpu::emu::EmuSys::new(),
        calls: AtomicU64::new(0),
    });
    let backend = NvgpuBackend::open(sys.clone()).expect("nvgpu backend over the emulated kernel");
    let dev = tegragpu::Device::from_core(Device::from_backend(Box::new(backend)).unwrap());
    let cubin = std::fs::read(common::repo_path(
        "tests/fixtures/cubin/kernels.sm_87.cubin",
    ))
    .unwrap();
    let m = dev.load_module(&cubin).unwrap();
    let k = m.kernel("increment").unwrap();
    let mut counter = dev.alloc::<u64>(1).unwrap();
    let mut q = dev.queue().unwrap();
    let s = dev.signal(0).unwrap();
    let mut cb = dev.cmdbuf().unwrap();
    // SAFETY: increment writes p[0] only.
    unsafe {
        cb.launch(&k)
            .block(32)
            .arg_mut(&mut counter)
            .arg(&10u64)
            .record()
            .unwrap();
    }
    cb.finish().unwrap();
    let launch = |q: &mut tegragpu::Queue, counter: &mut tegragpu::DeviceBuffer<u64>| {
        // SAFETY: as above.
        unsafe {
            q.launch(&k)
                .block(32)
                .arg_mut(counter)
                .arg(&1u64)
                .record()
                .unwrap()
        }
    };
    // Warm up: the first launch sets up local memory, the first replay sizes its scratch.
    launch(&mut q, &mut counter);
    q.replay(&mut cb).unwrap();
    q.synchronize().unwrap();

    let calls_before = sys.calls.load(Ordering::SeqCst);
    ALLOCS.with(|a| a.set(0));
    COUNT_HERE.with(|c| c.set(true));
    for i in 0..100u64 {
        launch(&mut q, &mut counter);
        q.replay(&mut cb).unwrap();
        q.signal(&s, i + 1).unwrap();
        q.submit().unwrap();
    }
    COUNT_HERE.with(|c| c.set(false));
    let allocs = ALLOCS.with(|a| a.get());
    let calls = sys.calls.load(Ordering::SeqCst) - calls_before;
    s.wait(100, std::time::Duration::from_secs(10)).unwrap();
    assert_eq!(counter.to_vec().unwrap(), [11 * 101]);
    assert_eq!(
        calls, 0,
        "system calls on the Rust API's launch/replay/submit path"
    );
    assert_eq!(
        allocs, 0,
        "heap allocations on the Rust API's launch/replay/submit path"
    );
}
