//! The hot path — record a launch, submit — makes no system call and no heap allocation
//! (performance rules). Checked on the emulated Orin: a counting `Sys` wraps the emulated kernel,
//! and a counting global allocator counts this thread's allocations.

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
    let cubin = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/cubin/kernels.sm_87.cubin"
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
