//! Fault injection at the `Sys` seam (issue #15, item 2), on the emulated Orin.
//!
//! `FaultSys` wraps the emulated kernel (`EmuSys`), counts every system call the nvgpu backend
//! makes (open, close, ioctl, mmap, munmap) and makes the Nth one fail with a chosen errno. For
//! each scenario (device open; alloc/free of device-local and host-visible memory; module load;
//! compute and copy queue creation; launch + submit + signal wait; teardown) the operation is
//! first run once counting its calls (K); then, for every N in 1..=K and every errno mode, it is
//! run again on a fresh emulated Orin with call N failing, and the test checks:
//!
//! * the operation returns an error — no panic, no hang (a watchdog aborts after 60 s) — whose
//!   `errno` is the injected one and whose message names the failing call (the ioctl's name, or
//!   `open(`, `close(`, `mmap(`, `munmap(`). Calls the library may legitimately survive are
//!   listed in [`may_survive`]: ioctls answering EINTR/EAGAIN once (retried by
//!   `os::ioctl_retrying`, so the operation must then *succeed*) and an `open` answering EINTR
//!   once (restarted by the backend, likewise), the optional queries at open,
//!   and the `MAP_FIXED_NOREPLACE` CPU mapping (a mapping anywhere is the fallback);
//! * after everything is dropped nothing leaked: the emulated kernel's objects (fds, ctrl
//!   files, nvmap clients and handle IDs, dma-bufs, address spaces, TSGs, channels, chids,
//!   application mappings) are all gone, and the process's fds (`os::open_fd_count`),
//!   mappings (`os::mapping_count`) and threads (`/proc/self/task`) are back to their baseline;
//! * the same emulated kernel still works: a fresh device opened on it runs `vector_add`.
//!
//! Waits poll `NVGPU_IOCTL_CHANNEL_GET_TIMEDOUT` (fault polling; how often depends on timing),
//! so those polls are not numbered: a separate run per scenario and errno fails every poll,
//! and the operation must succeed (the notifier is the primary error report; a failed poll
//! reads as "no timeout").
//!
//! EINTR and EAGAIN are also injected as a burst ("fail this call and all its retries"), which
//! exhausts the retry budget: the operation must fail naming the call and the exhausted
//! retries. EINTR bursts run at every ioctl and open; an EAGAIN burst costs the full back-off (~0.9 s,
//! `os::eagain_budget`, which has no knob), so it runs at one ioctl per scenario.
//!
//! **Failing close and munmap** (decided here, implemented in `backend::nvgpu`):
//! * `close` is modelled as Linux does it: the descriptor is released even when `close`
//!   reports an error (EINTR, EIO, ...). The library never retries a close (the number may
//!   already belong to another thread's file). Inside an operation (the dma-buf fd closed at
//!   the end of an allocation) the error fails the operation, which undoes everything; during
//!   teardown it is ignored. Either way nothing leaks.
//! * A failed `munmap` leaves the mapping in place (as the kernel does). The library reports
//!   the error from `Backend::free`, or ignores it in teardown and in cleanup after another
//!   error, and never retries. The mapping then keeps exactly one kernel object alive (its
//!   dma-buf, or the ctrl file for the doorbell page), as on the board until the process exits.
//!   The test checks that this is the only thing left: it unmaps the region itself, after which
//!   every count must be back to baseline.

mod common;

use std::ffi::CStr;
use std::os::fd::RawFd;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{cfg, Params, SEC};
use parking_lot::Mutex;
use tegragpu::backend::nvgpu::NvgpuBackend;
use tegragpu::backend::{Backend, MemFlags};
use tegragpu::core::{Buffer, Device, Kernel, Module, Queue, QueueKind, Signal};
use tegragpu::emu::kernel::EmuStats;
use tegragpu::emu::EmuSys;
use tegragpu::os::{Errno, KernelFaultRecord, Sys};
use tegragpu::sys::nvgpu::{
    request_name, NVGPU_GPU_IOCTL_GET_MEMORY_STATE, NVGPU_GPU_IOCTL_GET_TPC_MASKS,
    NVGPU_GPU_IOCTL_NUM_VSMS, NVGPU_IOCTL_CHANNEL_GET_TIMEDOUT,
};
use tegragpu::sys::nvmap::NVMAP_IOC_QUERY_HEAP_PARAMS;
use tegragpu::Error;

// ------------------------------------------------------------------------------------------
// The injecting Sys
// ------------------------------------------------------------------------------------------

/// One system call as the wrapper saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Call {
    Open(String),
    Close(RawFd),
    Ioctl(RawFd, u64),
    Mmap { fixed_noreplace: bool },
    Munmap(usize, usize),
}

impl Call {
    /// What an error message about this call must contain.
    fn name(&self) -> String {
        match self {
            Call::Open(p) => format!("open(\"{p}\""),
            Call::Close(_) => "close(".into(),
            Call::Ioctl(_, r) => format!("{}(", request_name(*r)),
            Call::Mmap { .. } => "mmap(".into(),
            Call::Munmap(..) => "munmap(".into(),
        }
    }
    /// The call with what varies between runs (CPU addresses the kernel chose) left out.
    fn key(&self) -> Call {
        match self {
            Call::Munmap(_, len) => Call::Munmap(0, *len),
            c => c.clone(),
        }
    }
    fn is_ioctl(&self) -> bool {
        matches!(self, Call::Ioctl(..))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Only call N fails.
    Once,
    /// Call N (an ioctl) fails, and so does every immediate repetition of it (the retries).
    Burst,
}

#[derive(Default)]
struct St {
    /// Counting: calls since `arm`.
    on: bool,
    calls: Vec<Call>,
    /// Injection plan: (N, errno, mode).
    plan: Option<(usize, Errno, Mode)>,
    /// The call that was failed (first one) and how many times it failed.
    hit: Option<Call>,
    hits: u64,
    /// Failed munmaps (not performed): regions the test unmaps after teardown.
    leaked: Vec<(usize, usize)>,
    /// A burst is failing the repetitions of `hit`.
    burst_open: bool,
    /// Fail every GET_TIMEDOUT poll with this errno.
    fail_polls: Option<Errno>,
    /// GET_TIMEDOUT polls failed while armed (not numbered).
    polls_failed: u64,
}

struct FaultSys {
    emu: Arc<EmuSys>,
    st: Mutex<St>,
}

impl FaultSys {
    fn new() -> Arc<FaultSys> {
        Arc::new(FaultSys {
            emu: EmuSys::new(),
            st: Mutex::new(St::default()),
        })
    }
    /// Start counting (and injecting, if `plan`; failing every fault poll, if `fail_polls`).
    fn arm(&self, plan: Option<(usize, Errno, Mode)>, fail_polls: Option<Errno>) {
        let mut st = self.st.lock();
        st.on = true;
        st.calls.clear();
        st.plan = plan;
        st.hit = None;
        st.hits = 0;
        st.burst_open = false;
        st.fail_polls = fail_polls;
        st.polls_failed = 0;
    }
    /// Stop counting and injecting; returns the calls seen and the failed call.
    fn disarm(&self) -> (Vec<Call>, Option<Call>, u64) {
        let mut st = self.st.lock();
        st.on = false;
        st.plan = None;
        st.burst_open = false;
        st.fail_polls = None;
        (std::mem::take(&mut st.calls), st.hit.take(), st.hits)
    }
    /// Record `c`; whether it must fail, and with which errno.
    fn check(&self, c: Call) -> Option<Errno> {
        let mut st = self.st.lock();
        if !st.on {
            return None;
        }
        if let Call::Ioctl(_, NVGPU_IOCTL_CHANNEL_GET_TIMEDOUT) = c {
            if st.fail_polls.is_some() {
                st.polls_failed += 1;
            }
            return st.fail_polls;
        }
        // A retry of the ioctl a burst is failing: fails too, and is not numbered (the
        // retries are the library's, not new calls of the operation).
        if st.burst_open {
            if st.hit.as_ref() == Some(&c) {
                st.hits += 1;
                return st.plan.map(|p| p.1);
            }
            st.burst_open = false;
        }
        st.calls.push(c.clone());
        let n = st.calls.len();
        let (at, errno, mode) = st.plan?;
        if n != at {
            return None;
        }
        st.hit = Some(c);
        st.hits = 1;
        st.burst_open = mode == Mode::Burst;
        Some(errno)
    }
}

impl Sys for FaultSys {
    fn open(&self, path: &CStr, flags: i32) -> Result<RawFd, Errno> {
        match self.check(Call::Open(path.to_string_lossy().into_owned())) {
            Some(e) => Err(e),
            None => self.emu.open(path, flags),
        }
    }
    fn close(&self, fd: RawFd) -> Result<(), Errno> {
        match self.check(Call::Close(fd)) {
            // Linux releases the descriptor even when close reports an error.
            Some(e) => {
                let _ = self.emu.close(fd);
                Err(e)
            }
            None => self.emu.close(fd),
        }
    }
    unsafe fn ioctl(&self, fd: RawFd, request: u64, arg: usize) -> Result<i32, Errno> {
        match self.check(Call::Ioctl(fd, request)) {
            Some(e) => Err(e),
            None => self.emu.ioctl(fd, request, arg),
        }
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
        let fixed_noreplace = flags & libc::MAP_FIXED_NOREPLACE != 0;
        match self.check(Call::Mmap { fixed_noreplace }) {
            Some(e) => Err(e),
            None => self.emu.mmap(addr, len, prot, flags, fd, off),
        }
    }
    unsafe fn munmap(&self, addr: *mut u8, len: usize) -> Result<(), Errno> {
        match self.check(Call::Munmap(addr as usize, len)) {
            // A failed munmap leaves the mapping.
            Some(e) => {
                self.st.lock().leaked.push((addr as usize, len));
                Err(e)
            }
            None => self.emu.munmap(addr, len),
        }
    }
    fn is_emulated(&self) -> bool {
        true
    }
    fn fault_log(&self) -> Vec<KernelFaultRecord> {
        self.emu.fault_log()
    }
}

/// Calls an operation may survive, and whether it then must succeed.
#[derive(Debug, PartialEq, Eq)]
enum Survival {
    /// The operation must fail.
    No,
    /// The operation must succeed (a retried EINTR/EAGAIN).
    Must,
    /// Either is fine (optional query; fallback exists).
    May,
}

fn may_survive(c: &Call, errno: Errno, mode: Mode) -> Survival {
    match c {
        Call::Ioctl(_, r)
            if [
                NVGPU_GPU_IOCTL_NUM_VSMS,
                NVGPU_GPU_IOCTL_GET_TPC_MASKS,
                NVGPU_GPU_IOCTL_GET_MEMORY_STATE,
                // The memory size at open (else MemTotal), and the heap an ENOMEM names.
                NVMAP_IOC_QUERY_HEAP_PARAMS,
            ]
            .contains(r) =>
        {
            Survival::May
        }
        Call::Ioctl(..)
            if mode == Mode::Once && (errno == libc::EINTR || errno == libc::EAGAIN) =>
        {
            Survival::Must
        }
        // The backend restarts an interrupted open as well.
        Call::Open(_) if mode == Mode::Once && errno == libc::EINTR => Survival::Must,
        Call::Mmap {
            fixed_noreplace: true,
        } => Survival::May,
        _ => Survival::No,
    }
}

// ------------------------------------------------------------------------------------------
// Scenarios
// ------------------------------------------------------------------------------------------

#[derive(Default)]
struct Ctx {
    queue: Option<Queue>,
    signal: Option<Signal>,
    kernel: Option<Kernel>,
    module: Option<Module>,
    bufs: Vec<Buffer>,
    dev: Option<Device>,
    backend: Option<NvgpuBackend>,
}

impl Ctx {
    /// Drop everything in a child-first order.
    fn teardown(&mut self) {
        self.queue = None;
        self.signal = None;
        self.kernel = None;
        self.module = None;
        self.bufs.clear();
        self.dev = None;
        self.backend = None;
    }
}

type Res = Result<(), Error>;

struct Scenario {
    name: &'static str,
    setup: fn(&Arc<FaultSys>, &[u8]) -> Ctx,
    op: fn(&Arc<FaultSys>, &mut Ctx, &[u8]) -> Res,
    /// Whether the operation is the teardown itself (no error to return).
    is_teardown: bool,
    /// Fewest calls the operation must make: the test fails if a scenario silently shrinks.
    min_calls: usize,
}

fn open_device(sys: &Arc<FaultSys>) -> Result<Device, Error> {
    Device::from_backend(Box::new(NvgpuBackend::open(sys.clone())?))
}

/// A device that makes no channels at open: its first queue of each kind makes its channel
/// (the calls the queue-creation scenarios fail one by one).
fn open_device_without_pool(sys: &Arc<FaultSys>) -> Result<Device, Error> {
    Device::from_backend(Box::new(NvgpuBackend::open_with_channels(
        sys.clone(),
        0,
        0,
    )?))
}

const N: usize = 1000;

fn data_flags() -> MemFlags {
    MemFlags {
        cpu_cached: true,
        zeroed: true,
        ..Default::default()
    }
}

/// Device, fixture module, `vector_add`, three buffers with inputs, a compute queue, a signal.
fn launch_setup(sys: &Arc<FaultSys>, cubin: &[u8]) -> Ctx {
    let dev = open_device(sys).expect("setup: open");
    let module = dev.load_module(cubin).expect("setup: module");
    let kernel = module.kernel("vector_add").expect("setup: kernel");
    let bufs: Vec<Buffer> = (0..3)
        .map(|_| dev.alloc(N as u64 * 4, data_flags()).expect("setup: alloc"))
        .collect();
    for (j, b) in bufs[..2].iter().enumerate() {
        let v: Vec<f32> = (0..N).map(|i| (i * (j + 1)) as f32).collect();
        // SAFETY: the buffer holds N f32.
        unsafe { std::ptr::copy_nonoverlapping(v.as_ptr(), b.cpu_ptr() as *mut f32, N) };
    }
    let queue = dev.create_queue(QueueKind::Compute).expect("setup: queue");
    let signal = dev.create_signal(0).expect("setup: signal");
    Ctx {
        queue: Some(queue),
        signal: Some(signal),
        kernel: Some(kernel),
        module: Some(module),
        bufs,
        dev: Some(dev),
        backend: None,
    }
}

/// Launch `vector_add` on the context's queue, signal `value`, submit, wait, check the sums.
fn launch_and_check(c: &mut Ctx, value: u64) -> Res {
    let (q, s, k) = (
        c.queue.as_mut().unwrap(),
        c.signal.as_ref().unwrap(),
        c.kernel.as_ref().unwrap(),
    );
    let p = Params::new()
        .u64(c.bufs[0].gpu_va())
        .u64(c.bufs[1].gpu_va())
        .u64(c.bufs[2].gpu_va())
        .u32(N as u32);
    q.launch(k, &cfg((N as u32).div_ceil(128), 128), p.bytes())?;
    q.signal(s, value)?;
    q.submit()?;
    s.wait(value, 20 * SEC)?;
    let mut out = vec![0f32; N];
    // SAFETY: the buffer holds N f32; the GPU finished writing it (signal passed).
    unsafe {
        std::ptr::copy_nonoverlapping(c.bufs[2].cpu_ptr() as *const f32, out.as_mut_ptr(), N)
    };
    for (i, v) in out.iter().enumerate() {
        assert_eq!(*v, (3 * i) as f32, "vector_add element {i}");
    }
    Ok(())
}

fn alloc_free(c: &mut Ctx, size: u64, flags: MemFlags) -> Res {
    let b = c.backend.as_ref().unwrap();
    let a = b.alloc(size, flags)?;
    // The memory works before it is freed.
    // SAFETY: `a.cpu` maps `a.size` bytes.
    unsafe {
        std::ptr::write_volatile(a.cpu.add(a.size as usize - 1), 0x5a);
        assert_eq!(
            std::ptr::read_volatile(a.cpu.add(a.size as usize - 1)),
            0x5a
        );
    }
    b.free(&a)
}

fn scenarios() -> Vec<Scenario> {
    vec![
        Scenario {
            name: "device open",
            setup: |_, _| Ctx::default(),
            op: |sys, c, _| {
                c.dev = Some(open_device(sys)?);
                Ok(())
            },
            is_teardown: false,
            min_calls: 80, // the channels of the pool included
        },
        Scenario {
            name: "alloc/free, device-local (write-combined, not zeroed)",
            setup: |sys, _| Ctx {
                backend: Some(NvgpuBackend::open(sys.clone()).expect("setup: open")),
                ..Default::default()
            },
            op: |_, c, _| {
                let flags = MemFlags {
                    write_combined: true,
                    ..Default::default()
                };
                alloc_free(c, 1 << 16, flags)
            },
            is_teardown: false,
            min_calls: 8,
        },
        Scenario {
            name: "alloc/free, host-visible (CPU-cached, zeroed)",
            setup: |sys, _| Ctx {
                backend: Some(NvgpuBackend::open(sys.clone()).expect("setup: open")),
                ..Default::default()
            },
            op: |_, c, _| alloc_free(c, 3 * 4096 + 5, data_flags()),
            is_teardown: false,
            min_calls: 8,
        },
        Scenario {
            name: "module load",
            setup: |sys, _| Ctx {
                dev: Some(open_device(sys).expect("setup: open")),
                ..Default::default()
            },
            op: |_, c, cubin| {
                let m = c.dev.as_ref().unwrap().load_module(cubin)?;
                c.kernel = Some(m.kernel("vector_add")?);
                c.module = Some(m);
                Ok(())
            },
            is_teardown: false,
            min_calls: 4,
        },
        Scenario {
            name: "compute queue create (the channel made)",
            setup: |sys, _| Ctx {
                dev: Some(open_device_without_pool(sys).expect("setup: open")),
                ..Default::default()
            },
            op: |_, c, _| {
                c.queue = Some(c.dev.as_ref().unwrap().create_queue(QueueKind::Compute)?);
                Ok(())
            },
            is_teardown: false,
            min_calls: 20,
        },
        Scenario {
            name: "copy queue create (the channel made)",
            setup: |sys, _| Ctx {
                dev: Some(open_device_without_pool(sys).expect("setup: open")),
                ..Default::default()
            },
            op: |_, c, _| {
                c.queue = Some(c.dev.as_ref().unwrap().create_queue(QueueKind::Copy)?);
                Ok(())
            },
            is_teardown: false,
            min_calls: 15,
        },
        Scenario {
            name: "launch + submit + signal wait",
            setup: launch_setup,
            // The hot path makes no system call but the GET_TIMEDOUT fault polls of the wait
            // (K = 0, checked): its injection points are those polls.
            op: |_, c, _| launch_and_check(c, 1),
            is_teardown: false,
            min_calls: 0,
        },
        Scenario {
            name: "teardown after a launch",
            setup: |sys, cubin| {
                let mut c = launch_setup(sys, cubin);
                launch_and_check(&mut c, 1).expect("setup: launch");
                c
            },
            op: |_, c, _| {
                c.teardown();
                Ok(())
            },
            is_teardown: true,
            min_calls: 30,
        },
    ]
}

// ------------------------------------------------------------------------------------------
// Checks
// ------------------------------------------------------------------------------------------

fn thread_count() -> usize {
    std::fs::read_dir("/proc/self/task")
        .map(|d| d.count())
        .unwrap_or(0)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Process {
    fds: usize,
    maps: usize,
    threads: usize,
}

fn process() -> Process {
    Process {
        fds: tegragpu::os::open_fd_count(),
        maps: tegragpu::os::mapping_count(),
        threads: thread_count(),
    }
}

/// The process counts, given a moment to reach `base`: a joined thread can still be listed in
/// `/proc/self/task` for an instant after `pthread_join` returns (the kernel clears the thread
/// id before it removes the task).
fn settled(base: Process) -> Process {
    let mut now = process();
    for _ in 0..200 {
        if now == base {
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
        now = process();
    }
    now
}

/// The baseline counts, once the threads of the warm-up runs have left `/proc/self/task`: the
/// counts must hold still for 100 ms (at most 2 s of waiting). Taken at once, a thread that was
/// just joined can still be listed, and every later comparison would then expect one thread too
/// many (seen under load, and under qemu-user, where a thread takes longer to go).
fn baseline() -> Process {
    let mut base = process();
    let mut still = 0;
    for _ in 0..400 {
        if still == 20 {
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
        let now = process();
        if now == base {
            still += 1;
        } else {
            base = now;
            still = 0;
        }
    }
    base
}

fn assert_emu_empty(s: EmuStats, what: &str) {
    let clean = EmuStats {
        free_chids: tegragpu::emu::kernel::NUM_CHANNELS as usize,
        ..Default::default()
    };
    assert_eq!(s, clean, "{what}: emulated kernel objects left");
}

/// A fresh device on the same emulated kernel runs vector_add.
fn fresh_device_works(sys: &Arc<FaultSys>, cubin: &[u8], what: &str) {
    let mut c = launch_setup(sys, cubin);
    launch_and_check(&mut c, 1).unwrap_or_else(|e| panic!("{what}: fresh device: {e:?}"));
    c.teardown();
}

/// Watchdog: aborts the process when an injection run takes more than 60 s (a hang).
struct Watchdog {
    deadline: Arc<AtomicU64>,
    what: Arc<Mutex<String>>,
    start: Instant,
}

impl Watchdog {
    fn start() -> Watchdog {
        let deadline = Arc::new(AtomicU64::new(u64::MAX));
        let what = Arc::new(Mutex::new(String::new()));
        let start = Instant::now();
        let (d, w) = (deadline.clone(), what.clone());
        std::thread::spawn(move || loop {
            std::thread::sleep(Duration::from_millis(200));
            if start.elapsed().as_millis() as u64 > d.load(Ordering::Relaxed) {
                eprintln!("fault injection: hang in {}", w.lock());
                std::process::abort();
            }
        });
        Watchdog {
            deadline,
            what,
            start,
        }
    }
    fn arm(&self, what: String) {
        *self.what.lock() = what;
        self.deadline.store(
            self.start.elapsed().as_millis() as u64 + 60_000,
            Ordering::Relaxed,
        );
    }
}

/// One injection run: a fresh emulated Orin, the scenario's setup, the operation with call
/// `at` failing (`mode`, `errno`), teardown, leak checks, a fresh device.
fn inject(
    sc: &Scenario,
    cubin: &[u8],
    clean: &[Call],
    (at, errno, mode): (usize, Errno, Mode),
    base: Process,
    verify_fresh: bool,
) {
    let what = format!(
        "[{}] call {at}/{} {:?} failing with {} ({mode:?})",
        sc.name,
        clean.len(),
        clean[at - 1],
        tegragpu::error::errno_name(errno)
    );
    let sys = FaultSys::new();
    let mut c = (sc.setup)(&sys, cubin);
    sys.arm(Some((at, errno, mode)), None);
    let r = std::panic::catch_unwind(AssertUnwindSafe(|| (sc.op)(&sys, &mut c, cubin)));
    let (calls, hit, hits) = sys.disarm();
    let r = r.unwrap_or_else(|p| {
        let msg = p
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default();
        panic!("{what}: the operation panicked: {msg}")
    });
    let hit = hit.unwrap_or_else(|| {
        panic!(
            "{what}: call {at} never happened (the operation made {} calls: not deterministic?)",
            calls.len()
        )
    });
    let key = |v: &[Call]| v.iter().map(Call::key).collect::<Vec<_>>();
    assert_eq!(
        key(&calls[..at - 1]),
        key(&clean[..at - 1]),
        "{what}: the calls before the injection differ from the counting run"
    );
    if mode == Mode::Burst {
        assert!(hits > 1, "{what}: the burst failed only {hits} call(s)");
    }
    if !sc.is_teardown {
        match (may_survive(&hit, errno, mode), &r) {
            (Survival::Must, Err(e)) => {
                panic!("{what}: a single {errno} must be retried, got {e:?}")
            }
            (Survival::No, Ok(())) => panic!("{what}: the operation succeeded"),
            (Survival::No | Survival::May, Err(e)) => {
                assert_eq!(e.errno, Some(errno), "{what}: {e:?}");
                assert!(
                    e.message.contains(&hit.name()),
                    "{what}: message does not name {}: {}",
                    hit.name(),
                    e.message
                );
                if mode == Mode::Burst {
                    assert!(
                        e.message.contains("retries") || e.message.contains("restarts"),
                        "{what}: message does not say the retries ran out: {}",
                        e.message
                    );
                }
            }
            _ => {}
        }
    }
    // Everything goes; only what a failed munmap left behind may remain.
    c.teardown();
    drop(c);
    let leaked = std::mem::take(&mut sys.st.lock().leaked);
    let s = sys.emu.stats();
    if leaked.is_empty() {
        assert_emu_empty(s, &what);
    } else {
        assert_eq!(
            s.user_mappings,
            leaked.len(),
            "{what}: only the mapping whose munmap failed may remain: {s:?}"
        );
        for (p, len) in leaked {
            // SAFETY: the region the library failed to unmap; nothing uses it any more.
            unsafe { sys.emu.munmap(p as *mut u8, len) }.expect("unmapping the leaked region");
        }
        assert_emu_empty(
            sys.emu.stats(),
            &format!("{what} (after unmapping the region whose munmap failed)"),
        );
    }
    if verify_fresh {
        fresh_device_works(&sys, cubin, &what);
        assert_emu_empty(sys.emu.stats(), &format!("{what} (after the fresh device)"));
    }
    drop(sys);
    assert_eq!(settled(base), base, "{what}: process fds/mappings/threads");
}

/// Runs the scenario with every GET_TIMEDOUT poll failing: the operation must succeed and
/// leave nothing behind. Returns whether any poll happened (an injection point).
fn poll_failures(sc: &Scenario, cubin: &[u8], errno: Errno, base: Process) -> bool {
    let what = format!(
        "[{}] every GET_TIMEDOUT poll failing with {}",
        sc.name,
        tegragpu::error::errno_name(errno)
    );
    let sys = FaultSys::new();
    let mut c = (sc.setup)(&sys, cubin);
    sys.arm(None, Some(errno));
    let r = std::panic::catch_unwind(AssertUnwindSafe(|| (sc.op)(&sys, &mut c, cubin)));
    let failed = sys.st.lock().polls_failed;
    sys.disarm();
    match r {
        Ok(Ok(())) => {}
        Ok(Err(e)) => panic!("{what}: {e:?}"),
        Err(_) => panic!("{what}: panicked"),
    }
    c.teardown();
    assert_emu_empty(sys.emu.stats(), &what);
    drop(sys);
    assert_eq!(settled(base), base, "{what}: process fds/mappings/threads");
    failed > 0
}

#[test]
fn every_call_of_every_scenario_fails_cleanly() {
    let t0 = Instant::now();
    let cubin = std::fs::read(common::repo_path(
        "tests/fixtures/cubin/kernels.sm_87.cubin",
    ))
    .expect("fixture cubin");
    let dog = Watchdog::start();
    let scs = scenarios();

    // Counting runs (also warm-up: lazily grown process state settles before the baseline).
    let mut counted: Vec<Vec<Call>> = Vec::new();
    for sc in &scs {
        let mut calls = Vec::new();
        for _ in 0..2 {
            let sys = FaultSys::new();
            let mut c = (sc.setup)(&sys, &cubin);
            sys.arm(None, None);
            (sc.op)(&sys, &mut c, &cubin)
                .unwrap_or_else(|e| panic!("[{}] clean run: {e:?}", sc.name));
            if sc.is_teardown {
                calls = sys.disarm().0;
            } else {
                let cl = sys.disarm().0;
                c.teardown();
                calls = cl;
            }
            assert_emu_empty(sys.emu.stats(), sc.name);
            fresh_device_works(&sys, &cubin, sc.name);
        }
        assert!(
            calls.len() >= sc.min_calls,
            "[{}] makes {} calls, fewer than the {} it is known to make: {calls:?}",
            sc.name,
            calls.len(),
            sc.min_calls
        );
        counted.push(calls);
    }
    // The launch path proper makes no system call.
    {
        let sys = FaultSys::new();
        let mut c = launch_setup(&sys, &cubin);
        sys.arm(None, None);
        launch_and_check(&mut c, 1).unwrap();
        launch_and_check(&mut c, 2).unwrap();
        let (calls, _, _) = sys.disarm();
        assert!(
            calls.is_empty(),
            "launch/submit/wait made system calls besides GET_TIMEDOUT polls: {calls:?}"
        );
        c.teardown();
    }
    let base = baseline();

    let errnos = [
        libc::ENOMEM,
        libc::EINVAL,
        libc::EIO,
        libc::EINTR,
        libc::EAGAIN,
        libc::EBADF,
    ];
    let mut points = 0usize;
    let mut runs = 0usize;
    for (sc, clean) in scs.iter().zip(&counted) {
        let k = clean.len();
        let mut sc_points = 0;
        for at in 1..=k {
            for (i, &errno) in errnos.iter().enumerate() {
                dog.arm(format!("{} call {at} errno {errno}", sc.name));
                // The fresh-device check runs for one errno per call (rotating), to bound time.
                let verify = i == at % errnos.len();
                inject(sc, &cubin, clean, (at, errno, Mode::Once), base, verify);
                sc_points += 1;
                runs += 1;
            }
            if clean[at - 1].is_ioctl() || matches!(clean[at - 1], Call::Open(_)) {
                dog.arm(format!("{} call {at} EINTR burst", sc.name));
                inject(
                    sc,
                    &cubin,
                    clean,
                    (at, libc::EINTR, Mode::Burst),
                    base,
                    at % 2 == 0,
                );
                sc_points += 1;
                runs += 1;
            }
        }
        // One EAGAIN burst per scenario (each costs the full back-off): the middle ioctl.
        let ioctls: Vec<usize> = (1..=k).filter(|&at| clean[at - 1].is_ioctl()).collect();
        if let Some(&at) = ioctls.get(ioctls.len() / 2) {
            dog.arm(format!("{} call {at} EAGAIN burst", sc.name));
            inject(
                sc,
                &cubin,
                clean,
                (at, libc::EAGAIN, Mode::Burst),
                base,
                true,
            );
            sc_points += 1;
            runs += 1;
        }
        // Every fault poll fails (their number depends on timing, so they are not numbered).
        for &errno in &errnos {
            dog.arm(format!("{} polls failing with {errno}", sc.name));
            if poll_failures(sc, &cubin, errno, base) {
                sc_points += 1;
            }
            runs += 1;
        }
        eprintln!(
            "fault injection: {:<55} K = {k:>3} calls ({} ioctls), {sc_points} injection points",
            sc.name,
            ioctls.len()
        );
        points += sc_points;
    }
    eprintln!(
        "fault injection: {points} injection points in {runs} runs, {:.1} s",
        t0.elapsed().as_secs_f64()
    );
    // Lower bound: the scenarios must not silently shrink.
    let floor: usize = scs.iter().map(|s| s.min_calls * errnos.len()).sum();
    assert!(
        points >= floor,
        "only {points} injection points (at least {floor} expected)"
    );
    assert!(points >= 900, "only {points} injection points");
}
