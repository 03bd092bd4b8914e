//! The injecting `Sys`: an emulated kernel whose N-th system call fails with a chosen errno
//! (once, or as a burst over its retries), with the calls it saw, and which failures a
//! scenario may survive.

use super::*;

/// One system call as the wrapper saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Call {
    Open(String),
    Close(RawFd),
    Ioctl(RawFd, u64),
    Mmap { fixed_noreplace: bool },
    Munmap(usize, usize),
}

impl Call {
    /// What an error message about this call must contain.
    pub(crate) fn name(&self) -> String {
        match self {
            Call::Open(p) => format!("open(\"{p}\""),
            Call::Close(_) => "close(".into(),
            Call::Ioctl(_, r) => format!("{}(", request_name(*r)),
            Call::Mmap { .. } => "mmap(".into(),
            Call::Munmap(..) => "munmap(".into(),
        }
    }
    /// The call with what varies between runs (CPU addresses the kernel chose) left out.
    pub(crate) fn key(&self) -> Call {
        match self {
            Call::Munmap(_, len) => Call::Munmap(0, *len),
            c => c.clone(),
        }
    }
    pub(crate) fn is_ioctl(&self) -> bool {
        matches!(self, Call::Ioctl(..))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Only call N fails.
    Once,
    /// Call N (an ioctl) fails, and so does every immediate repetition of it (the retries).
    Burst,
}

#[derive(Default)]
pub(crate) struct St {
    /// Counting: calls since `arm`.
    on: bool,
    calls: Vec<Call>,
    /// Injection plan: (N, errno, mode).
    plan: Option<(usize, Errno, Mode)>,
    /// The call that was failed (first one) and how many times it failed.
    hit: Option<Call>,
    hits: u64,
    /// Failed munmaps (not performed): regions the test unmaps after teardown.
    pub(crate) leaked: Vec<(usize, usize)>,
    /// A burst is failing the repetitions of `hit`.
    burst_open: bool,
    /// Fail every GET_TIMEDOUT poll with this errno.
    fail_polls: Option<Errno>,
    /// GET_TIMEDOUT polls failed while armed (not numbered).
    pub(crate) polls_failed: u64,
}

pub(crate) struct FaultSys {
    pub(crate) emu: Arc<EmuSys>,
    pub(crate) st: Mutex<St>,
}

impl FaultSys {
    pub(crate) fn new() -> Arc<FaultSys> {
        Arc::new(FaultSys {
            emu: EmuSys::new(),
            st: Mutex::new(St::default()),
        })
    }
    /// Start counting (and injecting, if `plan`; failing every fault poll, if `fail_polls`).
    pub(crate) fn arm(&self, plan: Option<(usize, Errno, Mode)>, fail_polls: Option<Errno>) {
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
    pub(crate) fn disarm(&self) -> (Vec<Call>, Option<Call>, u64) {
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
pub(crate) enum Survival {
    /// The operation must fail.
    No,
    /// The operation must succeed (a retried EINTR/EAGAIN).
    Must,
    /// Either is fine (optional query; fallback exists).
    May,
}

pub(crate) fn may_survive(c: &Call, errno: Errno, mode: Mode) -> Survival {
    match c {
        Call::Ioctl(_, r)
            if [
                NVGPU_GPU_IOCTL_NUM_VSMS,
                NVGPU_GPU_IOCTL_GET_TPC_MASKS,
                NVGPU_GPU_IOCTL_GET_MEMORY_STATE,
                // The memory size at open (else MemTotal), and the heap an ENOMEM names.
                tegragpu::sys::nvmap::NVMAP_IOC_QUERY_HEAP_PARAMS,
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
