//! Retries of ioctls that answer EAGAIN or EINTR (issue item 13): bounded, then the errno comes
//! back naming the ioctl. Runs the nvgpu backend over the emulated kernel behind `FlakySys`, a
//! `Sys` wrapper that makes chosen ioctls fail with a chosen errno a chosen number of times.

use std::ffi::CStr;
use std::os::fd::RawFd;
use std::sync::Arc;

use parking_lot::Mutex;
use tegragpu::backend::nvgpu::NvgpuBackend;
use tegragpu::core::{Device, MemFlags};
use tegragpu::os::{Errno, Sys, IOCTL_EAGAIN_RETRIES, IOCTL_EINTR_RETRIES};
use tegragpu::sys::nvmap::{NVMAP_IOC_ALLOC, NVMAP_IOC_CREATE};
use tegragpu::Status;

/// Fail `request` with `errno` for its next `times` calls (without passing them on).
#[derive(Clone, Copy)]
struct Plan {
    request: u64,
    errno: Errno,
    times: u64,
}

struct FlakySys {
    inner: Arc<dyn Sys>,
    plan: Mutex<Option<Plan>>,
    /// Calls of the planned request that failed (injected).
    injected: Mutex<u64>,
}

impl FlakySys {
    fn new() -> Arc<FlakySys> {
        Arc::new(FlakySys {
            inner: tegragpu::emu::EmuSys::new(),
            plan: Mutex::new(None),
            injected: Mutex::new(0),
        })
    }
    fn fail(&self, request: u64, errno: Errno, times: u64) {
        *self.injected.lock() = 0;
        *self.plan.lock() = Some(Plan {
            request,
            errno,
            times,
        });
    }
    /// Stop injecting; returns how many calls failed.
    fn stop(&self) -> u64 {
        *self.plan.lock() = None;
        *self.injected.lock()
    }
}

impl Sys for FlakySys {
    fn open(&self, path: &CStr, flags: i32) -> Result<RawFd, Errno> {
        self.inner.open(path, flags)
    }
    fn close(&self, fd: RawFd) -> Result<(), Errno> {
        self.inner.close(fd)
    }
    unsafe fn ioctl(&self, fd: RawFd, request: u64, arg: usize) -> Result<i32, Errno> {
        {
            let mut plan = self.plan.lock();
            if let Some(p) = plan.as_mut() {
                if p.request == request && p.times > 0 {
                    p.times -= 1;
                    *self.injected.lock() += 1;
                    return Err(p.errno);
                }
            }
        }
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
        self.inner.mmap(addr, len, prot, flags, fd, off)
    }
    unsafe fn munmap(&self, addr: *mut u8, len: usize) -> Result<(), Errno> {
        self.inner.munmap(addr, len)
    }
    fn is_emulated(&self) -> bool {
        true
    }
    fn fault_log(&self) -> Vec<tegragpu::os::KernelFaultRecord> {
        self.inner.fault_log()
    }
}

fn open(sys: &Arc<FlakySys>) -> Device {
    let backend = NvgpuBackend::open(sys.clone()).expect("nvgpu backend over the emulated kernel");
    Device::from_backend(Box::new(backend)).unwrap()
}

fn flags() -> MemFlags {
    MemFlags {
        cpu_cached: true,
        zeroed: true,
        ..Default::default()
    }
}

/// A driver that is briefly busy (EAGAIN) or a call interrupted by a signal (EINTR) does not
/// fail the allocation.
#[test]
fn transient_eagain_and_eintr_are_retried() {
    let sys = FlakySys::new();
    let dev = open(&sys);
    sys.fail(NVMAP_IOC_ALLOC, libc::EAGAIN, 3);
    let b = dev.alloc(4096, flags());
    assert_eq!(sys.stop(), 3);
    b.expect("three EAGAINs from NVMAP_IOC_ALLOC are retried");
    sys.fail(NVMAP_IOC_CREATE, libc::EINTR, 50);
    let b = dev.alloc(4096, flags());
    assert_eq!(sys.stop(), 50);
    b.expect("fifty EINTRs from NVMAP_IOC_CREATE are restarted");
}

/// Before the fix an ioctl answering EAGAIN was retried forever: here the injection stops after
/// 100,000 calls and the allocation would then succeed. Now EAGAIN comes back after
/// `IOCTL_EAGAIN_RETRIES` retries, naming the ioctl, and the device stays usable.
#[test]
fn persistent_eagain_is_returned_after_bounded_retries() {
    let sys = FlakySys::new();
    let dev = open(&sys);
    sys.fail(NVMAP_IOC_ALLOC, libc::EAGAIN, 100_000);
    let r = dev.alloc(4096, flags());
    let calls = sys.stop();
    let e = r.expect_err("EAGAIN that never ends must fail the allocation");
    assert_eq!(calls, 1 + u64::from(IOCTL_EAGAIN_RETRIES), "{e:?}");
    assert_eq!(e.status, Status::Os, "{e:?}");
    assert_eq!(e.errno, Some(libc::EAGAIN), "{e:?}");
    assert!(
        e.message.contains("NVMAP_IOC_ALLOC(")
            && e.message.contains("failed: EAGAIN")
            && e.message.contains(&format!(
                "still EAGAIN after {IOCTL_EAGAIN_RETRIES} retries"
            )),
        "{}",
        e.message
    );
    // Nothing leaked and the device still works.
    dev.alloc(4096, flags())
        .expect("allocation after the failure");
}

/// EINTR is restarted at once, but not forever either.
#[test]
fn persistent_eintr_is_returned_after_bounded_restarts() {
    let sys = FlakySys::new();
    let dev = open(&sys);
    sys.fail(NVMAP_IOC_CREATE, libc::EINTR, 1_000_000);
    let r = dev.alloc(4096, flags());
    let calls = sys.stop();
    let e = r.expect_err("EINTR that never ends must fail the allocation");
    assert_eq!(calls, 1 + u64::from(IOCTL_EINTR_RETRIES), "{e:?}");
    assert_eq!(e.errno, Some(libc::EINTR), "{e:?}");
    assert!(
        e.message.contains("NVMAP_IOC_CREATE(") && e.message.contains("still EINTR after"),
        "{}",
        e.message
    );
    dev.alloc(4096, flags())
        .expect("allocation after the failure");
}
