//! The emulated nvgpu + nvmap kernel driver of a Jetson Orin (ga10b), behind [`crate::os::Sys`].
//!
//! A strict model of `docs/nvgpu-kernel-interface.md` §7: every ioctl is decoded with the
//! `crate::sys` structs, goes through the same dispatcher rules as the real driver (§1), and is
//! validated with the real driver's checks in the real order, returning the same errno. What the
//! real driver would reject, this rejects. Requests the real driver accepts but this model does
//! not implement return `ENOSYS` (never a silent success).
//!
//! Every object the kernel would give an fd (ctrl, nvmap client, AS, TSG, channel, dma-buf) has a
//! real file descriptor here (a memfd), so fd numbers are the lowest free ones and carry
//! FD_CLOEXEC exactly as on the board; the emulator holds no other fd. A dma-buf's memory is
//! shared memory that only the kernel's own mapping of the buffer refers to (the emulated GPU
//! reads it there); `mmap` of a dma-buf fd through [`Sys::mmap`] maps those same pages, so the
//! memory lives exactly as long as the kernel objects, fds and mappings that reference the
//! buffer, as on the board, and a live buffer costs the application no fd once it has closed its
//! dma-buf fds. The ctrl fd is a 64 KiB memfd whose mapping is the usermode (doorbell) page the
//! GPU model watches.
//!
//! Where the real kernel would oops (GET_USER_SYNCPOINT on a channel with no address space:
//! `hal/sync/syncpt_cmdbuf_gv11b_fusa.c:gv11b_syncpt_alloc_buf` dereferences the NULL VM), this
//! model **panics** with a message starting `emulated nvgpu kernel oops:`, so a test that drives
//! the library into that state fails loudly. Where the driver only warns (`nvgpu_assert` is
//! `WARN_ON` in the kernel), the call goes on and the warning goes to [`EmuSys::kernel_log`].
//!
//! # What the driver does around its ioctls
//!
//! Modelled from the rel-36 source (nvidia-mirror/linux-nvgpu 6ecfb593d, paths under
//! `drivers/gpu/nvgpu/`); the code of each rule cites its functions (`rc` and `fifo` modules).
//!
//! 1. **Channel setup and teardown preempt the TSG.** ALLOC_OBJ_CTX
//!    (`common/gr/gr_setup.c:nvgpu_gr_setup_alloc_obj_ctx`, every call, every class),
//!    SET_PREEMPTION_MODE (`nvgpu_gr_setup_set_preemption_mode`) and channel close / UNBIND_CHANNEL
//!    (`common/fifo/channel.c:channel_free_invoke_unbind` → `common/fifo/tsg.c:
//!    nvgpu_tsg_unbind_channel` → `nvgpu_tsg_unbind_channel_common`) disable and preempt the
//!    whole TSG (`common/fifo/preempt.c:nvgpu_fifo_preempt_tsg`). The compute preemption mode is
//!    the TSG context's: wait-for-idle unless ALLOC_OBJ_CTX asked for
//!    `NVGPU_ALLOC_OBJ_FLAGS_CILP` or SET_PREEMPTION_MODE set CILP
//!    (`hal/gr/init/gr_init_gp10b_fusa.c:gp10b_gr_init_get_default_preemption_modes`,
//!    `common/gr/obj_ctx.c:nvgpu_gr_obj_ctx_init_ctxsw_preemption_mode`). A wait-for-idle (or
//!    CTA) preempt waits for every grid the TSG runs ([`crate::emu::gpu::Gpu::grid_running`]) and
//!    gives up after `ctxsw_timeout_period_ms` = 100 ms with EBUSY
//!    (`hal/fifo/preempt_gv11b_fusa.c:gv11b_fifo_preempt_poll_eng`): ALLOC_OBJ_CTX and
//!    SET_PREEMPTION_MODE fail with EBUSY; a close's failed unbind aborts the TSG
//!    (`tsg.c:nvgpu_tsg_abort`: a second preempt, every channel unserviceable, the TSG left
//!    disabled, no error notifier). A CILP preempt succeeds at once (the context is saved
//!    mid-grid). In a multi-channel TSG a set NEXT bit (`hal/fifo/tsg_ga10b.c`) makes the unbind
//!    -EAGAIN: a close retries 10 times 2–4 ms apart, then aborts the TSG; UNBIND_CHANNEL returns
//!    EAGAIN. SET_PREEMPTION_MODE uses the channel's last ALLOC_OBJ_CTX class (a compute mode on a
//!    channel whose last class is the copy class is EINVAL) and never lowers a mode.
//! 2. **Errors are per TSG.** A GPU fault of one channel (MMU fault 31, GR exception 13, PBDMA
//!    error 32, …), FORCE_RESET (43) and [`EmuSys::inject_channel_error`] recover the whole TSG
//!    (`tsg.c:nvgpu_tsg_set_error_notifier`, `nvgpu_tsg_set_ctx_mmu_error`,
//!    `common/rc/rc.c:nvgpu_rc_tsg_and_related_engines`, `hal/rc/rc_gv11b.c`): every channel's
//!    notifier gets the code unless it already holds an error
//!    (`os/linux/linux-channel.c:nvgpu_set_err_notifier_if_empty`), every channel is unserviceable
//!    and never runs again (doorbells do nothing, SUBMIT_GPFIFO → ETIMEDOUT, GET_TIMEDOUT → 1).
//! 3. **The ctxsw-timeout budget.** While a context switch away from a TSG running a grid cannot
//!    complete (another context competes — [`EmuSys::add_competing_context`] — or a preempt of it
//!    timed out, and the mode waits for the grid), the ctxsw-timeout interrupt fires every 100 ms
//!    (`hal/fifo/ctxsw_timeout_ga10b_fusa.c:ga10b_fifo_ctxsw_timeout_isr`) and adds 100 ms to
//!    each channel's `ctxsw_timeout_accumulated_ms`, which for a usermode-submit channel only grows
//!    (`channel.c:nvgpu_channel_update_and_check_ctxsw_timeout`, `tsg.c:
//!    nvgpu_tsg_check_ctxsw_timeout`). Past the channel's `ctxsw_timeout_max_ms` (3,000 ms at open,
//!    `NVGPU_DEFAULT_POLL_TIMEOUT_MS`; SET_TIMEOUT / SET_TIMEOUT_EX set it, any value, any channel)
//!    the TSG is recovered with error 8 (`rc.c:nvgpu_rc_ctxsw_timeout`). CILP never fires.
//!    [`EmuSys::set_time_divisor`] shortens the wall-clock time of all these timeouts for tests.
//! 4. **Limits.** 128 channels per TSG (`tsg.c:nvgpu_tsg_bind_channel`,
//!    `ram_rl_entry_tsg_length_max_v()` = 0x80: EINVAL); 512 channels
//!    (`os/linux/linux-channel.c:nvgpu_channel_get_synpoints`: ENOMEM at OPEN_CHANNEL); 512 TSGs;
//!    64 VEIDs per TSG (`gr_pri_fe_chip_def_info_max_veid_count_init_v()` = 0x40: 63 ASYNC, then
//!    the SYNC one, then ENOSPC). No per-process limit.
//! 5. **GET_USER_SYNCPOINT** takes one host1x syncpoint and a kernel-VMA page per channel, once;
//!    EINVAL when `aggressive_sync_destroy_thresh` is set
//!    ([`EmuSys::set_aggressive_sync_destroy_thresh`]; 0 on ga10b); ENOMEM when the pool is empty
//!    (1,007 syncpoints here, more than the 512 channels can take).
//! 6. **Not stricter than the driver.** A MAP_PRIVATE doorbell mapping is accepted (and rings
//!    nothing once written); OPEN_CHANNEL takes the copy engines' runlist too; a channel with no
//!    address space binds to VEID 0 when VEID 0 is free (`tsg.c:
//!    nvgpu_tsg_create_sync_subcontext_internal` stores its NULL VM); GR context buffers above
//!    2^40 only warn; SUBMIT_GPFIFO on an unserviceable channel is ETIMEDOUT.
//!
//! **nvmap** (`nvmap.rs`; rel-36 nvidia-oot 7096cb09a, `drivers/video/tegra/nvmap`),
//! as the driver behaves around its ioctls:
//!
//! * Clients are per process, not per open: every open of `/dev/nvmap` by the process, through
//!   any emulated kernel made with [`EmuSys::new`] (they share [`EmuNvmap::process`]), joins the
//!   one client keyed by the pid; an ID is valid on all of them, FREE through any drops it, and
//!   the client with its handle references goes at the last close. A forked child's own opens
//!   make its own client; inherited fds still reach the parent's
//!   (`nvmap_dev.c:__nvmap_create_client`, `nvmap_dev.c:nvmap_release`, `destroy_client`).
//! * IDs come from one counter starting at `U32_MAX / 2`
//!   (`nvmap_id_array.c:nvmap_id_array_id_alloc`).
//!   FROM_FD returns a new ID on every call; each ID is one "dupe" of the client's one reference
//!   to the handle and is freed once (`nvmap_ioctl.c:nvmap_ioctl_create`,
//!   `nvmap_handle.c:nvmap_duplicate_handle`, `nvmap_alloc.c:nvmap_free_handle`).
//! * IOVMM pages are taken at ALLOC from the emulated memory (`TEGRAGPU_EMU_MEMORY_BYTES`, read
//!   when the process's first emulated kernel is made, default [`ORIN_MEMORY_BYTES`]; or a
//!   test's own [`EmuNvmap::new`]): more than the whole memory → ENOMEM
//!   (`nvmap_dev.c:is_nvmap_memory_available`), more than is free → ENOMEM at ALLOC, the handle
//!   staying unallocated (`nvmap_alloc.c:handle_page_alloc`); the pages come back with the
//!   buffer's last reference, and QUERY_HEAP_PARAMS(IOVMM) reports total and free
//!   (`nvmap_ioctl.c:nvmap_ioctl_query_heap_params`). The accounting is bookkeeping: host memory
//!   is committed where a buffer is touched, or at ALLOC with `TEGRAGPU_EMU_COMMIT_PAGES=1`.
//!   (On a board, a request between free and total memory first makes the kernel reclaim and
//!   possibly OOM-kill; the emulator fails it at once.)
//! * Also: a faulting copy-out of CREATE, GET_FD or FROM_FD leaves no handle, ID or fd
//!   (`nvmap_ioctl_create`, `nvmap_install_fd`); GET_FD of an nvmap dma-buf fd instead of an ID
//!   is EINVAL (`nvmap_dmabuf.c:nvmap_dmabuf_duplicate_gen_fd`); FREE of a dma-buf fd closes it
//!   (`nvmap_ioctl.c:nvmap_ioctl_free`); IOVMM | carveout masks follow the heap policy (one page:
//!   carveouts first; larger: IOVMM first; `nvmap_alloc.c:heap_policy_small/large`).
//!
//! Not modelled for nvmap: a dma-buf fd made by one emulated kernel is unknown to another
//! (on a board any nvgpu fd of the process accepts it); what a forked child does through
//! inherited fds changes its copy of the emulated kernel, never the parent's.
//!
//! Not modelled (ENOSYS): kernel-mode GPFIFO submission (SETUP_BIND without USERMODE_SUPPORT),
//! VPR channels, TSG sharing, event fds, ZCULL info, clocks, REGISTER_BUFFER, engine info,
//! L2 evict-last; `open` of any other node returns ENOENT.

pub mod buddy;
mod fifo;
mod fixture;
mod ioctl;
mod mem;
mod nvmap;
mod rc;
mod sys;
mod vm;

pub use fixture::ga10b_characteristics;
pub use nvmap::{EmuNvmap, ORIN_MEMORY_BYTES};

use self::mem::{close_fd, copy_from_user, copy_to_user, fd_is_open, memfd, DmaBuf, KMap};
use self::vm::Vm;
use crate::emu::gpu::Gpu;
use crate::emu::hwif::HostPtr;
use crate::os::{Errno, KernelFaultRecord};
use crate::sys::nvgpu::*;
use parking_lot::Mutex;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ffi::CStr;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use std::time::Instant;

/// Number of hardware channels (chids) of the emulated GPU (token 511 first, as on the board).
pub const NUM_CHANNELS: u32 = 512;
/// Number of TSGs.
const NUM_TSGS: usize = 512;
/// Syncpoints of the T234 host1x (64 MiB window / 64 KiB per syncpoint).
const NUM_SYNCPOINTS: u32 = 1024;
/// Stride of one syncpoint in the shim aperture.
const SYNCPOINT_STRIDE: u64 = 0x10000;
/// First syncpoint id handed to a channel (the seeds got 17; lower ids belong to other
/// host1x clients). [INFER]
const FIRST_USER_SYNCPOINT: u32 = 17;
/// Kernel VA the emulator reserves per TSG for GR context buffers at the first ALLOC_OBJ_CTX.
/// The real sizes are unknown; what matters is that they go to the kernel VMA after the
/// GPFIFO ring and syncpoint pages. [INFER]
const GR_CTX_VA_SIZE: u64 = 64 << 10;
/// ZCULL context size measured on the seed board.
const ZCULL_CTX_SIZE: u32 = 164_352;

/// What an fd refers to.
#[derive(Clone)]
enum Obj {
    Ctrl(u64),
    /// An open of `/dev/nvmap`: the pid keying its (per-process) client.
    Nvmap(i32),
    DmaBuf(Arc<DmaBuf>),
    As(Arc<Vm>),
    Tsg(u64),
    Channel(u32),
}

/// A ctrl file (one open of the ctrl node).
struct CtrlFile {
    fd_open: bool,
    /// The kernel's mapping of the usermode page, while the application has it mapped.
    doorbell: Option<KMap>,
}

/// An application mapping of an emulated file.
#[derive(Clone)]
struct UVma {
    len: usize,
    kind: UVmaKind,
}

#[derive(Clone)]
enum UVmaKind {
    Doorbell(u64),
    DmaBuf(Arc<DmaBuf>, u64),
}

/// Counts of live emulated objects (for tests and diagnostics).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct EmuStats {
    /// Emulated fds open.
    pub fds: usize,
    /// ctrl files alive (open fd or mapped doorbell).
    pub ctrls: usize,
    /// Opens of `/dev/nvmap` through this kernel still open (each refers to its process's one
    /// nvmap client).
    pub clients: usize,
    /// TSGs alive.
    pub tsgs: usize,
    /// Channels open.
    pub channels: usize,
    /// Application mappings of emulated files (doorbell pages, dma-bufs).
    pub user_mappings: usize,
    /// Free chids.
    pub free_chids: usize,
    /// nvmap handle IDs made through this kernel (CREATE, FROM_FD) that a client still holds.
    pub handles: usize,
    /// dma-buf objects alive (nvmap buffers and the syncpoint aperture), whoever holds them.
    pub dmabufs: usize,
    /// Address spaces (VMs) alive, whoever holds them.
    pub vms: usize,
    /// Bytes of emulated memory held by IOVMM buffers allocated through this kernel.
    pub iovmm_bytes: u64,
}

pub(crate) struct State {
    gpu: Arc<Gpu>,
    chars: nvgpu_gpu_characteristics,
    fds: HashMap<RawFd, Obj>,
    ctrls: HashMap<u64, CtrlFile>,
    /// The machine's nvmap device (clients, handle IDs, memory), shared with the process's
    /// other emulated kernels.
    nvmap: Arc<EmuNvmap>,
    /// This kernel's id (tags the handle IDs made through it, for [`EmuStats::handles`]).
    kid: u64,
    /// Bytes of IOVMM memory held by buffers allocated through this kernel.
    iovmm_bytes: Arc<AtomicU64>,
    tsgs: HashMap<u64, fifo::Tsg>,
    channels: HashMap<u32, fifo::Channel>,
    /// Free chids; the head (next to hand out) is the last element.
    free_chids: Vec<u32>,
    /// The syncpoint shim aperture (64 MiB), alive while some VM maps it.
    aperture: Weak<DmaBuf>,
    syncpoints: BTreeSet<u32>,
    uvmas: BTreeMap<usize, UVma>,
    /// Fault records the kernel adds (injected errors, TSG recoveries, ctxsw timeouts), after
    /// the GPU's own in [`Sys::fault_log`].
    kernel_faults: Vec<KernelFaultRecord>,
    /// The kernel log (warnings and errors the driver prints), see [`EmuSys::kernel_log`].
    klog: Vec<String>,
    /// The emulated kernel itself (for the interrupt threads it starts).
    me: Weak<EmuSys>,
    /// Wall-clock divisor of the driver's timeouts ([`EmuSys::set_time_divisor`]).
    time_divisor: u32,
    /// Competing contexts ([`EmuSys::add_competing_context`]) and since when there is one.
    competitors: u32,
    competing_since: Option<Instant>,
    /// The ctxsw-timeout interrupt thread runs.
    isr_running: bool,
    /// g->aggressive_sync_destroy_thresh ([`EmuSys::set_aggressive_sync_destroy_thresh`]).
    aggressive_sync_destroy_thresh: u32,
    /// Live dma-bufs and VMs (see [`EmuStats`]).
    live_dmabufs: Arc<AtomicUsize>,
    live_vms: Arc<AtomicUsize>,
}

/// The emulated Orin kernel (nvgpu + nvmap). Create with [`EmuSys::new`]; use it wherever a
/// [`Sys`] is expected.
pub struct EmuSys {
    state: Mutex<State>,
    gpu: Arc<Gpu>,
}

/// Environment knobs read when an [`EmuSys`] is made (for test suites that open devices by
/// name): `TEGRAGPU_EMU_TIME_DIVISOR=N` ([`EmuSys::set_time_divisor`]),
/// `TEGRAGPU_EMU_COMPETING_CONTEXT=1` (a competing context for the emulated kernel's whole life,
/// as [`EmuSys::add_competing_context`]).
pub const ENV_TIME_DIVISOR: &str = "TEGRAGPU_EMU_TIME_DIVISOR";
/// See [`ENV_TIME_DIVISOR`].
pub const ENV_COMPETING_CONTEXT: &str = "TEGRAGPU_EMU_COMPETING_CONTEXT";

fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(p).unwrap_or(4096).max(4096)
}

/// Read `T` from the first bytes of an ioctl buffer (the exact `switch(cmd)` match guarantees
/// the size; a short buffer is treated as an unknown command).
fn get<T: AbiPod>(b: &[u8]) -> Result<T, Errno> {
    T::from_bytes(b).ok_or(libc::ENOTTY)
}

/// Write `v` back into an ioctl buffer.
fn put<T: AbiPod>(b: &mut [u8], v: &T) {
    let s = v.as_bytes();
    let n = s.len().min(b.len());
    b[..n].copy_from_slice(&s[..n]);
}

/// Read a struct from user memory (for handlers that copy in themselves, like nvmap's).
fn read_user<T: AbiPod>(addr: usize) -> Result<T, Errno> {
    let mut v = T::zeroed();
    copy_from_user(v.as_bytes_mut(), addr)?;
    Ok(v)
}

fn write_user<T: AbiPod>(addr: usize, v: &T) -> Result<(), Errno> {
    copy_to_user(addr, v.as_bytes())
}

/// The real kernel would crash here: fail the calling test loudly.
fn kernel_oops(what: String) -> ! {
    panic!("emulated nvgpu kernel oops: {what}")
}

impl EmuSys {
    /// A fresh emulated Orin with the seed board's characteristics, on the process's nvmap
    /// device ([`EmuNvmap::process`]: one nvmap client and one memory for every emulated kernel
    /// of the process, as for every device a process opens on a board).
    pub fn new() -> Arc<EmuSys> {
        Self::with_characteristics(ga10b_characteristics())
    }

    /// A fresh emulated Orin reporting `chars` from GET_CHARACTERISTICS (test fixture override;
    /// the checks use `available_big_page_sizes`, `flags` and `max_veid_count_per_tsg` from it).
    pub fn with_characteristics(chars: nvgpu_gpu_characteristics) -> Arc<EmuSys> {
        Self::build(chars, EmuNvmap::process().clone())
    }

    /// A fresh emulated Orin on the nvmap device `nvmap` (a test's own machine, e.g.
    /// [`EmuNvmap::new`] with a memory size, shared by the kernels given the same one).
    pub fn with_nvmap(nvmap: Arc<EmuNvmap>) -> Arc<EmuSys> {
        Self::build(ga10b_characteristics(), nvmap)
    }

    fn build(chars: nvgpu_gpu_characteristics, nvmap: Arc<EmuNvmap>) -> Arc<EmuSys> {
        let gpu = Gpu::new();
        let time_divisor = std::env::var(ENV_TIME_DIVISOR)
            .ok()
            .and_then(|v| v.parse::<u32>().ok())
            .unwrap_or(1)
            .max(1);
        let compete = std::env::var(ENV_COMPETING_CONTEXT).is_ok_and(|v| v == "1");
        let sys = Arc::new_cyclic(|me: &Weak<EmuSys>| {
            let state = State {
                gpu: gpu.clone(),
                chars,
                fds: HashMap::new(),
                ctrls: HashMap::new(),
                nvmap,
                kid: mem::next_id(),
                iovmm_bytes: Arc::new(AtomicU64::new(0)),
                tsgs: HashMap::new(),
                channels: HashMap::new(),
                // chid 0 pushed first … 511 last = head: a fresh system hands out 511 first.
                free_chids: (0..NUM_CHANNELS).collect(),
                aperture: Weak::new(),
                syncpoints: BTreeSet::new(),
                uvmas: BTreeMap::new(),
                kernel_faults: Vec::new(),
                klog: Vec::new(),
                me: me.clone(),
                time_divisor,
                competitors: u32::from(compete),
                competing_since: compete.then(Instant::now),
                isr_running: false,
                aggressive_sync_destroy_thresh: 0,
                live_dmabufs: Arc::new(AtomicUsize::new(0)),
                live_vms: Arc::new(AtomicUsize::new(0)),
            };
            EmuSys {
                state: Mutex::new(state),
                gpu: gpu.clone(),
            }
        });
        // The GPU's fault interrupt goes to the kernel, which recovers the channel's TSG (later
        // if the kernel is busy: the GPU thread never waits for it).
        let me = Arc::downgrade(&sys);
        gpu.set_fault_handler(Arc::new(move |f, hw| {
            let Some(s) = me.upgrade() else {
                return true;
            };
            let Some(mut st) = s.state.try_lock() else {
                return false;
            };
            st.gpu_fault(f, hw);
            true
        }));
        if compete {
            sys.state.lock().ensure_isr();
        }
        sys
    }

    /// The nvmap device this kernel uses.
    pub fn nvmap(&self) -> Arc<EmuNvmap> {
        self.state.lock().nvmap.clone()
    }

    /// The GPU model behind this kernel.
    pub fn gpu(&self) -> &Arc<Gpu> {
        &self.gpu
    }

    /// Counts of live emulated objects.
    pub fn stats(&self) -> EmuStats {
        let st = self.state.lock();
        EmuStats {
            fds: st.fds.len(),
            ctrls: st.ctrls.len(),
            clients: st
                .fds
                .values()
                .filter(|o| matches!(o, Obj::Nvmap(_)))
                .count(),
            tsgs: st.tsgs.len(),
            channels: st.channels.len(),
            user_mappings: st.uvmas.len(),
            free_chids: st.free_chids.len(),
            handles: st.nvmap.handles_of(st.kid),
            dmabufs: st.live_dmabufs.load(Ordering::Relaxed),
            vms: st.live_vms.load(Ordering::Relaxed),
            iovmm_bytes: st.iovmm_bytes.load(Ordering::Relaxed),
        }
    }

    /// Number of live MAP_BUFFER_EX mappings in the address space behind `as_fd`.
    pub fn as_mapping_count(&self, as_fd: RawFd) -> Option<usize> {
        match self.state.lock().fds.get(&as_fd) {
            Some(Obj::As(vm)) => Some(vm.mapping_count()),
            _ => None,
        }
    }

    /// Test hook: the context-switch timeout budget the channel with work-submit token `token`
    /// has used so far (`ch->ctxsw_timeout_accumulated_ms`, driver milliseconds).
    pub fn ctxsw_timeout_accumulated_ms(&self, token: u32) -> Option<u32> {
        let st = self.state.lock();
        st.channels
            .iter()
            .find(|(c, ch)| ch.token(**c) == token)
            .map(|(_, ch)| ch.ctxsw_timeout_accumulated_ms)
    }

    /// Test hook: post channel error `code` (an `NVGPU_CHANNEL_*` notifier code) on the channel
    /// whose work-submit token is `token`, as the kernel does on a fault: errors are per TSG, so
    /// every channel of its TSG gets the notifier record (`{ns, info32=code, status=0xffff}`,
    /// unless it already holds an error), becomes unserviceable (GET_TIMEDOUT → 1) and stops
    /// running; each is logged in [`Sys::fault_log`]. Returns false if no such channel exists.
    pub fn inject_channel_error(&self, token: u32, code: u32) -> bool {
        let mut st = self.state.lock();
        let Some(chid) = st
            .channels
            .iter()
            .find(|(c, ch)| ch.token(**c) == token)
            .map(|(c, _)| *c)
        else {
            return false;
        };
        let what = format!(
            "injected channel error {code} ({}) on channel {token:#x}",
            notifier_error_name(code)
        );
        st.post_error(
            chid,
            &rc::Cause {
                code,
                address: None,
                what: &what,
                recorded: None,
            },
        );
        true
    }

    /// Test hook: another process's GPU context competes for the engine while the returned
    /// guard lives. Then every TSG with a grid running in a mode that waits for it (wait-for-idle
    /// or CTA, not CILP) has a context switch pending that cannot complete, so the ctxsw-timeout
    /// interrupt fires for it every ctxsw_timeout_period_ms and its channels' budgets grow
    /// (see the `rc` module). Without competition the budget never grows (the model does not
    /// time-slice its own TSGs against each other).
    pub fn add_competing_context(&self) -> CompetingContext {
        let mut st = self.state.lock();
        st.competitors += 1;
        if st.competitors == 1 {
            st.competing_since = Some(Instant::now());
        }
        st.ensure_isr();
        CompetingContext { sys: st.me.clone() }
    }

    /// Test knob: the driver's timeouts (the 100 ms preempt timeout and ctxsw-timeout period,
    /// the 2–4 ms unbind retry sleep) run `divisor` times faster in wall-clock time; the
    /// accounting stays in driver milliseconds (a channel's 3,000 ms budget is still 30
    /// ctxsw timeouts of 100 ms). Default 1 (or `TEGRAGPU_EMU_TIME_DIVISOR`).
    pub fn set_time_divisor(&self, divisor: u32) {
        self.state.lock().time_divisor = divisor.max(1);
    }

    /// Test hook: the NEXT bit of the channel with work-submit token `token` reads as set for
    /// the next `reads` reads (`u32::MAX`: for ever); see `rc::tsg_unbind_channel`. Returns false
    /// if no such channel is attached to the GPU.
    pub fn set_channel_next_bit(&self, token: u32, reads: u32) -> bool {
        self.gpu.set_next_bit(token, reads)
    }

    /// Test knob: the platform's `aggressive_sync_destroy_thresh` (0 on ga10b; 64 on gk20a
    /// boards). Non-zero makes GET_USER_SYNCPOINT fail with EINVAL.
    pub fn set_aggressive_sync_destroy_thresh(&self, thresh: u32) {
        self.state.lock().aggressive_sync_destroy_thresh = thresh;
    }

    /// The kernel log: what the driver prints (warnings such as WARN_ON traces, preempt
    /// timeouts, unbind failures, ctxsw-timeout recoveries), oldest first.
    pub fn kernel_log(&self) -> Vec<String> {
        self.state.lock().klog.clone()
    }
}

/// A competing GPU context ([`EmuSys::add_competing_context`]); competes until dropped.
pub struct CompetingContext {
    sys: Weak<EmuSys>,
}

impl Drop for CompetingContext {
    fn drop(&mut self) {
        if let Some(s) = self.sys.upgrade() {
            let mut st = s.state.lock();
            st.competitors = st.competitors.saturating_sub(1);
            if st.competitors == 0 {
                st.competing_since = None;
            }
        }
    }
}

impl Drop for EmuSys {
    fn drop(&mut self) {
        self.gpu.shutdown();
        let st = self.state.get_mut();
        for (_, c) in st.ctrls.iter_mut() {
            if let Some(k) = c.doorbell.take() {
                self.gpu.remove_doorbell(HostPtr(k.ptr()));
            }
        }
        // dma-buf fds from NVMAP_IOC_GET_FD belong to whoever asked for them (an exported
        // buffer's fd outlives the device, as on the board; the application may also have
        // closed it already and reused the number): never close those.
        for (&fd, obj) in st.fds.iter() {
            if !matches!(obj, Obj::DmaBuf(_)) {
                close_fd(fd);
            }
            if let Obj::Nvmap(pid) = obj {
                st.nvmap.release(*pid);
            }
        }
        st.fds.clear();
    }
}

impl State {
    /// The dma-buf behind `fd`: EBADF if `fd` is not open, EINVAL if it is not a dma-buf.
    fn dmabuf_of_fd(&self, fd: i32) -> Result<Arc<DmaBuf>, Errno> {
        match self.fds.get(&fd) {
            Some(Obj::DmaBuf(b)) => Ok(b.clone()),
            Some(_) => Err(libc::EINVAL),
            None if fd_is_open(fd) => Err(libc::EINVAL),
            None => Err(libc::EBADF),
        }
    }

    /// Install a new emulated fd (a memfd of `size` bytes) for `obj`.
    fn new_fd(&mut self, name: &CStr, size: u64, obj: Obj) -> Result<RawFd, Errno> {
        let fd = memfd(name, size).map_err(|e| {
            if e == libc::EMFILE || e == libc::ENFILE {
                e
            } else {
                libc::ENOMEM
            }
        })?;
        self.fds.insert(fd, obj);
        Ok(fd)
    }

    /// The syncpoint shim aperture (created on first use).
    fn aperture(&mut self) -> Result<Arc<DmaBuf>, Errno> {
        if let Some(a) = self.aperture.upgrade() {
            return Ok(a);
        }
        let a = self.new_dmabuf(0, NUM_SYNCPOINTS as u64 * SYNCPOINT_STRIDE)?;
        // Not nvmap memory: it takes none of the machine's.
        a.allocate(crate::sys::nvmap::NVMAP_HEAP_IOVMM, 0, None)?;
        self.aperture = Arc::downgrade(&a);
        Ok(a)
    }

    /// Map the 64 MiB read-only syncpoint window into `vm`'s kernel VMA once; returns its base.
    fn ensure_sync_ro(&mut self, vm: &Arc<Vm>) -> Result<u64, Errno> {
        if let Some(b) = vm.inner.lock().sync_ro {
            return Ok(b);
        }
        let ap = self.aperture()?;
        let va = vm.kernel_map(&ap, 0, ap.size, false)?;
        vm.inner.lock().sync_ro = Some(va);
        Ok(va)
    }

    fn release_doorbell(&mut self, id: u64) {
        if let Some(c) = self.ctrls.get_mut(&id) {
            if let Some(k) = c.doorbell.take() {
                self.gpu.remove_doorbell(HostPtr(k.ptr()));
            }
            if !c.fd_open {
                self.ctrls.remove(&id);
            }
        }
    }

    /// Forget application mappings inside `[addr, addr+len)` (after munmap or a MAP_FIXED
    /// replacement), splitting partially covered ones; release doorbells no longer mapped.
    fn punch(&mut self, addr: usize, len: usize) {
        let ps = page_size();
        let end = addr.saturating_add(len.div_ceil(ps) * ps);
        let keys: Vec<usize> = self
            .uvmas
            .range(..end)
            .filter(|(s, v)| **s + v.len > addr)
            .map(|(s, _)| *s)
            .collect();
        let mut ctrls = Vec::new();
        for k in keys {
            let Some(v) = self.uvmas.remove(&k) else {
                continue;
            };
            let vend = k + v.len;
            if k < addr {
                self.uvmas.insert(
                    k,
                    UVma {
                        len: addr - k,
                        kind: v.kind.clone(),
                    },
                );
            }
            if vend > end {
                let kind = match &v.kind {
                    UVmaKind::DmaBuf(b, off) => UVmaKind::DmaBuf(b.clone(), off + (end - k) as u64),
                    k2 => k2.clone(),
                };
                self.uvmas.insert(
                    end,
                    UVma {
                        len: vend - end,
                        kind,
                    },
                );
            }
            if let UVmaKind::Doorbell(c) = v.kind {
                ctrls.push(c);
            }
        }
        for c in ctrls {
            let still = self
                .uvmas
                .values()
                .any(|v| matches!(v.kind, UVmaKind::Doorbell(x) if x == c));
            if !still {
                self.release_doorbell(c);
            }
        }
    }

    /// Drop the object an fd referred to (after the fd itself is closed).
    fn release(&mut self, obj: Obj) {
        match obj {
            Obj::Ctrl(id) => {
                if let Some(c) = self.ctrls.get_mut(&id) {
                    c.fd_open = false;
                    if c.doorbell.is_none() {
                        self.ctrls.remove(&id);
                    }
                }
            }
            Obj::Nvmap(pid) => self.nvmap.release(pid),
            Obj::DmaBuf(_) | Obj::As(_) => {}
            Obj::Tsg(id) => {
                if let Some(t) = self.tsgs.get_mut(&id) {
                    t.fd_open = false;
                }
                self.maybe_free_tsg(id);
            }
            Obj::Channel(chid) => self.channel_free(chid),
        }
    }
}

/// Nanoseconds of `clock`.
pub(crate) fn now_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid out-pointer.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    (ts.tv_sec as u64)
        .wrapping_mul(1_000_000_000)
        .wrapping_add(ts.tv_nsec as u64)
}
