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
//! Where the real kernel would oops or hang (GET_USER_SYNCPOINT on a channel with no address
//! space; GR context buffers placed at or above 2^40 by ALLOC_OBJ_CTX, the seeds' "3 MB gpfifo
//! freeze"), this model **panics** with a message starting `emulated nvgpu kernel oops:`, so a
//! test that drives the library into that state fails loudly.
//!
//! Not modelled (ENOSYS): kernel-mode GPFIFO submission (SETUP_BIND without USERMODE_SUPPORT),
//! VPR channels, TSG sharing, event fds, ZCULL info, clocks, REGISTER_BUFFER, engine info,
//! L2 evict-last; `open` of any other node returns ENOENT.

pub mod buddy;
mod fifo;
mod fixture;
mod mem;
mod nvmap;
mod vm;

pub use fixture::ga10b_characteristics;

use self::mem::{
    close_fd, copy_from_user, copy_to_user, fd_is_open, memfd, DmaBuf, KMap, LiveToken,
};
use self::vm::Vm;
use crate::emu::gpu::Gpu;
use crate::emu::hwif::HostPtr;
use crate::os::{Errno, KernelFaultRecord, Sys};
use crate::sys::nvgpu::*;
use parking_lot::Mutex;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ffi::CStr;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Weak};

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
    Nvmap(u64),
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
    /// nvmap clients.
    pub clients: usize,
    /// TSGs alive.
    pub tsgs: usize,
    /// Channels open.
    pub channels: usize,
    /// Application mappings of emulated files (doorbell pages, dma-bufs).
    pub user_mappings: usize,
    /// Free chids.
    pub free_chids: usize,
    /// nvmap handle references held by clients (one per handle ID per client).
    pub handles: usize,
    /// dma-buf objects alive (nvmap buffers and the syncpoint aperture), whoever holds them.
    pub dmabufs: usize,
    /// Address spaces (VMs) alive, whoever holds them.
    pub vms: usize,
}

pub(crate) struct State {
    gpu: Arc<Gpu>,
    chars: nvgpu_gpu_characteristics,
    fds: HashMap<RawFd, Obj>,
    ctrls: HashMap<u64, CtrlFile>,
    clients: HashMap<u64, nvmap::Client>,
    tsgs: HashMap<u64, fifo::Tsg>,
    channels: HashMap<u32, fifo::Channel>,
    /// Free chids; the head (next to hand out) is the last element.
    free_chids: Vec<u32>,
    /// Next nvmap handle ID (global, like nvmap's counter).
    next_handle: u32,
    /// The syncpoint shim aperture (64 MiB), alive while some VM maps it.
    aperture: Weak<DmaBuf>,
    syncpoints: BTreeSet<u32>,
    uvmas: BTreeMap<usize, UVma>,
    /// Errors injected with [`EmuSys::inject_channel_error`].
    injected: Vec<KernelFaultRecord>,
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
    /// A fresh emulated Orin with the seed board's characteristics.
    pub fn new() -> Arc<EmuSys> {
        Self::with_characteristics(ga10b_characteristics())
    }

    /// A fresh emulated Orin reporting `chars` from GET_CHARACTERISTICS (test fixture override;
    /// the checks use `available_big_page_sizes`, `flags` and `max_veid_count_per_tsg` from it).
    pub fn with_characteristics(chars: nvgpu_gpu_characteristics) -> Arc<EmuSys> {
        let gpu = Gpu::new();
        let state = State {
            gpu: gpu.clone(),
            chars,
            fds: HashMap::new(),
            ctrls: HashMap::new(),
            clients: HashMap::new(),
            tsgs: HashMap::new(),
            channels: HashMap::new(),
            // chid 0 pushed first … 511 last = head: a fresh system hands out 511 first.
            free_chids: (0..NUM_CHANNELS).collect(),
            next_handle: 0x8000_0000,
            aperture: Weak::new(),
            syncpoints: BTreeSet::new(),
            uvmas: BTreeMap::new(),
            injected: Vec::new(),
            live_dmabufs: Arc::new(AtomicUsize::new(0)),
            live_vms: Arc::new(AtomicUsize::new(0)),
        };
        Arc::new(EmuSys {
            state: Mutex::new(state),
            gpu,
        })
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
            clients: st.clients.len(),
            tsgs: st.tsgs.len(),
            channels: st.channels.len(),
            user_mappings: st.uvmas.len(),
            free_chids: st.free_chids.len(),
            handles: st.clients.values().map(|c| c.handle_count()).sum(),
            dmabufs: st.live_dmabufs.load(Ordering::Relaxed),
            vms: st.live_vms.load(Ordering::Relaxed),
        }
    }

    /// Number of live MAP_BUFFER_EX mappings in the address space behind `as_fd`.
    pub fn as_mapping_count(&self, as_fd: RawFd) -> Option<usize> {
        match self.state.lock().fds.get(&as_fd) {
            Some(Obj::As(vm)) => Some(vm.mapping_count()),
            _ => None,
        }
    }

    /// Test hook: post channel error `code` (an `NVGPU_CHANNEL_*` notifier code) on the channel
    /// whose work-submit token is `token`, as the kernel does on a fault: write the notifier
    /// (`{ns, info32=code, status=0xffff}`), mark the channel dead (GET_TIMEDOUT → 1) and log
    /// it in [`Sys::fault_log`]. Returns false if no such channel exists.
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
        st.post_error(chid, code);
        st.injected.push(KernelFaultRecord {
            token,
            address: None,
            code,
            what: format!(
                "injected channel error {code} ({})",
                notifier_error_name(code)
            ),
        });
        true
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
        a.allocate(crate::sys::nvmap::NVMAP_HEAP_IOVMM, 0)?;
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
            Obj::Nvmap(id) => {
                self.clients.remove(&id);
            }
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

    // ---------------------------------------------------------------------------------------
    // nvgpu dispatcher (§1 rules 1-4)
    // ---------------------------------------------------------------------------------------

    fn nvgpu_ioctl(&mut self, obj: &Obj, req: u64, arg: usize) -> Result<i32, Errno> {
        let (magic, last, max) = match obj {
            Obj::Ctrl(_) => (
                NVGPU_GPU_IOCTL_MAGIC,
                NVGPU_GPU_IOCTL_LAST,
                NVGPU_GPU_IOCTL_MAX_ARG_SIZE,
            ),
            Obj::As(_) => (
                NVGPU_AS_IOCTL_MAGIC,
                NVGPU_AS_IOCTL_LAST,
                NVGPU_AS_IOCTL_MAX_ARG_SIZE,
            ),
            Obj::Tsg(_) => (
                NVGPU_TSG_IOCTL_MAGIC,
                NVGPU_TSG_IOCTL_LAST,
                NVGPU_TSG_IOCTL_MAX_ARG_SIZE,
            ),
            Obj::Channel(_) => (
                NVGPU_IOCTL_MAGIC,
                NVGPU_IOCTL_CHANNEL_LAST,
                NVGPU_IOCTL_CHANNEL_MAX_ARG_SIZE,
            ),
            _ => return Err(libc::ENOTTY),
        };
        let nr = ioc_nr(req) as u32;
        let size = ioc_size(req);
        let dir = ioc_dir(req);
        // Rule 1.
        if ioc_type(req) != magic || nr == 0 || nr > last || size > max {
            return Err(libc::EINVAL);
        }
        // Rule 2: zeroed kernel buffer, `size` bytes copied in when WRITE is set.
        let mut buf = [0u8; NVGPU_GPU_IOCTL_MAX_ARG_SIZE];
        let b = &mut buf[..size];
        if dir & IOC_WRITE != 0 {
            copy_from_user(b, arg)?;
        }
        // Rule 3: exact switch on the full request.
        match obj {
            Obj::Ctrl(_) => self.ctrl_ioctl(req, b)?,
            Obj::As(vm) => self.as_ioctl(vm, req, b)?,
            Obj::Tsg(id) => self.tsg_ioctl(*id, req, b)?,
            Obj::Channel(chid) => self.channel_ioctl(*chid, req, b)?,
            _ => return Err(libc::ENOTTY),
        }
        // Rule 4: copy out only on success.
        if dir & IOC_READ != 0 {
            copy_to_user(arg, b)?;
        }
        Ok(0)
    }

    /// Result for a request of this fd type that did not match any implemented case.
    fn unhandled(req: u64) -> Result<(), Errno> {
        if request_entry(req).is_some() {
            // A real request this model does not implement: fail loudly, never succeed.
            Err(libc::ENOSYS)
        } else {
            Err(libc::ENOTTY)
        }
    }

    fn ctrl_ioctl(&mut self, req: u64, b: &mut [u8]) -> Result<(), Errno> {
        match req {
            NVGPU_GPU_IOCTL_ZCULL_GET_CTX_SIZE => {
                put(
                    b,
                    &nvgpu_gpu_zcull_get_ctx_size_args {
                        size: ZCULL_CTX_SIZE,
                    },
                );
            }
            NVGPU_GPU_IOCTL_GET_CHARACTERISTICS => {
                let mut a: nvgpu_gpu_get_characteristics = get(b)?;
                let bytes = self.chars.as_bytes();
                if a.gpu_characteristics_buf_size > 0 {
                    let n = (bytes.len() as u64).min(a.gpu_characteristics_buf_size) as usize;
                    copy_to_user(a.gpu_characteristics_buf_addr as usize, &bytes[..n])?;
                }
                a.gpu_characteristics_buf_size = bytes.len() as u64;
                put(b, &a);
            }
            NVGPU_GPU_IOCTL_ALLOC_AS => {
                let mut a: nvgpu_alloc_as_args = get(b)?;
                a.as_fd = self.alloc_as(&a)?;
                put(b, &a);
            }
            NVGPU_GPU_IOCTL_OPEN_TSG => {
                let mut a: nvgpu_gpu_open_tsg_args = get(b)?;
                a.tsg_fd = self.open_tsg(&a)? as u32;
                put(b, &a);
            }
            NVGPU_GPU_IOCTL_OPEN_CHANNEL => {
                let mut a: nvgpu_gpu_open_channel_args = get(b)?;
                a.channel_fd = self.open_channel(a.runlist_id())?;
                put(b, &a);
            }
            NVGPU_GPU_IOCTL_GET_TPC_MASKS => {
                let mut a: nvgpu_gpu_get_tpc_masks_args = get(b)?;
                let c = &self.chars;
                let tpc_mask = if c.num_tpc_per_gpc >= 32 {
                    u32::MAX
                } else {
                    (1u32 << c.num_tpc_per_gpc) - 1
                };
                let masks: Vec<u8> = (0..c.max_gpc_count)
                    .flat_map(|g| {
                        (if g < 32 && c.gpc_mask >> g & 1 != 0 {
                            tpc_mask
                        } else {
                            0
                        })
                        .to_ne_bytes()
                    })
                    .collect();
                if a.mask_buf_size > 0 {
                    let n = masks.len().min(a.mask_buf_size as usize);
                    copy_to_user(a.mask_buf_addr as usize, &masks[..n])?;
                }
                a.mask_buf_size = masks.len() as u32;
                put(b, &a);
            }
            NVGPU_GPU_IOCTL_GET_GPC_LOCAL_TO_PHYSICAL_MAP
            | NVGPU_GPU_IOCTL_GET_GPC_LOCAL_TO_LOGICAL_MAP => {
                // Same layout for both: u32 size, u32 reserved, u64 buffer.
                let a: nvgpu_gpu_get_gpc_physical_map_args = get(b)?;
                let n = self.chars.num_gpc;
                if a.map_buf_size != n.saturating_mul(4) {
                    return Err(libc::EINVAL);
                }
                let map: Vec<u8> = (0..n).flat_map(|g| g.to_ne_bytes()).collect();
                copy_to_user(a.physical_gpc_buf_addr as usize, &map)?;
            }
            NVGPU_GPU_IOCTL_FLUSH_L2 => {
                let a: nvgpu_gpu_l2_fb_args = get(b)?;
                if (!a.l2_flush() && !a.fb_flush()) || (!a.l2_flush() && a.l2_invalidate()) {
                    return Err(libc::EINVAL);
                }
            }
            NVGPU_GPU_IOCTL_NUM_VSMS => {
                let mut a: nvgpu_gpu_num_vsms = get(b)?;
                a.num_vsms = self.num_sms();
                put(b, &a);
            }
            NVGPU_GPU_IOCTL_GET_GPU_TIME => {
                let mut a: nvgpu_gpu_get_gpu_time_args = get(b)?;
                a.gpu_timestamp = now_ns(libc::CLOCK_MONOTONIC);
                put(b, &a);
            }
            NVGPU_GPU_IOCTL_SET_DETERMINISTIC_OPTS => {
                let a: nvgpu_gpu_set_deterministic_opts_args = get(b)?;
                let both = NVGPU_GPU_SET_DETERMINISTIC_OPTS_FLAGS_ALLOW_RAILGATING
                    | NVGPU_GPU_SET_DETERMINISTIC_OPTS_FLAGS_DISALLOW_RAILGATING;
                if a.flags & both == both {
                    return Err(libc::EINVAL);
                }
                for i in 0..a.num_channels as usize {
                    let addr = (a.channels as usize)
                        .checked_add(i * 4)
                        .ok_or(libc::EFAULT)?;
                    let mut w = [0u8; 4];
                    copy_from_user(&mut w, addr)?;
                    let fd = i32::from_ne_bytes(w);
                    match self.fds.get(&fd) {
                        Some(Obj::Channel(c))
                            if self.channels.get(c).is_some_and(|ch| ch.deterministic) => {}
                        _ => return Err(libc::EINVAL),
                    }
                }
            }
            _ => return Self::unhandled(req),
        }
        Ok(())
    }

    fn num_sms(&self) -> u32 {
        // Two SMs per TPC on ga10b.
        self.chars
            .num_gpc
            .saturating_mul(self.chars.num_tpc_per_gpc)
            .saturating_mul(2)
    }

    /// ALLOC_AS (§4.1 step 2).
    fn alloc_as(&mut self, a: &nvgpu_alloc_as_args) -> Result<RawFd, Errno> {
        if a.big_page_size != 0
            && (!a.big_page_size.is_power_of_two()
                || a.big_page_size & self.chars.available_big_page_sizes == 0)
        {
            return Err(libc::EINVAL);
        }
        const PDE_SPAN: u64 = 2 << 20;
        let (s, e) = (a.va_range_start, a.va_range_end);
        if s == 0 || e == 0 || s % PDE_SPAN != 0 || e % PDE_SPAN != 0 || s >= e {
            return Err(libc::EINVAL);
        }
        if a.va_range_split != 0 {
            return Err(libc::EINVAL);
        }
        match e.checked_add(vm::KERNEL_VMA_SIZE) {
            Some(top) if top <= 1 << 49 => {}
            _ => return Err(libc::ENOMEM),
        }
        let vm = Vm::new(s, e, LiveToken::new(&self.live_vms));
        self.new_fd(c"nvgpu-as", 0, Obj::As(vm))
    }

    fn as_ioctl(&mut self, vm: &Arc<Vm>, req: u64, b: &mut [u8]) -> Result<(), Errno> {
        match req {
            NVGPU_AS_IOCTL_BIND_CHANNEL => {
                let a: nvgpu_as_bind_channel_args = get(b)?;
                let chid = match self.fds.get(&(a.channel_fd as i32)) {
                    Some(Obj::Channel(c)) => *c,
                    _ => return Err(libc::EINVAL),
                };
                let ch = self.channels.get_mut(&chid).ok_or(libc::EINVAL)?;
                if ch.vm.is_some() {
                    return Err(libc::EINVAL);
                }
                ch.vm = Some(vm.clone());
            }
            NVGPU_AS_IOCTL_ALLOC_SPACE => {
                let mut a: nvgpu_as_alloc_space_args = get(b)?;
                a.o_a = vm.alloc_space(&a)?;
                put(b, &a);
            }
            NVGPU_AS_IOCTL_FREE_SPACE => {
                let a: nvgpu_as_free_space_args = get(b)?;
                vm.free_space(a.offset);
            }
            NVGPU_AS_IOCTL_MAP_BUFFER_EX => {
                let mut a: nvgpu_as_map_buffer_ex_args = get(b)?;
                // 1. EBADF for no file, EINVAL for a file that is not a dma-buf.
                let buf = self.dmabuf_of_fd(a.dmabuf_fd as i32)?;
                a.offset = vm.map_buffer_ex(&a, &buf)?;
                put(b, &a);
            }
            NVGPU_AS_IOCTL_UNMAP_BUFFER => {
                let a: nvgpu_as_unmap_buffer_args = get(b)?;
                vm.unmap_buffer(a.offset);
            }
            NVGPU_AS_IOCTL_GET_VA_REGIONS => {
                let mut a: nvgpu_as_get_va_regions_args = get(b)?;
                let region = nvgpu_as_va_region {
                    offset: vm.start,
                    page_size: buddy::BLOCK as u32,
                    reserved: 0,
                    pages: (vm.end - vm.start) / buddy::BLOCK,
                };
                let rsz = std::mem::size_of::<nvgpu_as_va_region>();
                if a.buf_size as usize >= rsz {
                    write_user(a.buf_addr as usize, &region)?;
                }
                a.buf_size = rsz as u32;
                put(b, &a);
            }
            NVGPU_AS_IOCTL_MAP_BUFFER_BATCH => {
                // Unmaps, then maps, each read from user memory; each map's VA is written back
                // to its own element; the first error stops the batch. [SRC ioctl_as.c]
                let a: nvgpu_as_map_buffer_batch_args = get(b)?;
                let limit = self.chars.map_buffer_batch_limit;
                if a.num_unmaps > limit || a.num_maps > limit {
                    return Err(libc::EINVAL);
                }
                let usz = std::mem::size_of::<nvgpu_as_unmap_buffer_args>();
                for i in 0..a.num_unmaps as usize {
                    let u: nvgpu_as_unmap_buffer_args =
                        read_user((a.unmaps as usize).wrapping_add(i * usz))?;
                    vm.unmap_buffer(u.offset);
                }
                let msz = std::mem::size_of::<nvgpu_as_map_buffer_ex_args>();
                for i in 0..a.num_maps as usize {
                    let at = (a.maps as usize).wrapping_add(i * msz);
                    let mut m: nvgpu_as_map_buffer_ex_args = read_user(at)?;
                    let buf = self.dmabuf_of_fd(m.dmabuf_fd as i32)?;
                    m.offset = vm.map_buffer_ex(&m, &buf)?;
                    write_user(at, &m)?;
                }
            }
            NVGPU_AS_IOCTL_GET_SYNC_RO_MAP => {
                let base = self.ensure_sync_ro(vm)?;
                let a = nvgpu_as_get_sync_ro_map_args {
                    base_gpuva: base,
                    sync_size: SYNCPOINT_STRIDE as u32,
                    num_syncpoints: NUM_SYNCPOINTS,
                };
                put(b, &a);
            }
            _ => return Self::unhandled(req),
        }
        Ok(())
    }

    // ---------------------------------------------------------------------------------------
    // dma-buf fd ioctls
    // ---------------------------------------------------------------------------------------

    fn dmabuf_ioctl(&mut self, req: u64, arg: usize) -> Result<i32, Errno> {
        /// `DMA_BUF_IOCTL_SYNC` = `_IOW('b', 0, struct dma_buf_sync)`.
        const DMA_BUF_IOCTL_SYNC: u64 = iow(b'b', 0, 8);
        const DMA_BUF_SYNC_RW: u64 = 3;
        const DMA_BUF_SYNC_VALID: u64 = 7;
        if req != DMA_BUF_IOCTL_SYNC {
            return Err(libc::ENOTTY);
        }
        let mut f = [0u8; 8];
        copy_from_user(&mut f, arg)?;
        let flags = u64::from_ne_bytes(f);
        if flags & !DMA_BUF_SYNC_VALID != 0 || flags & DMA_BUF_SYNC_RW == 0 {
            return Err(libc::EINVAL);
        }
        Ok(0)
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

/// Write an error record (`status = 0xffff`) into a channel's error notifier.
pub(crate) fn write_notifier(p: HostPtr, code: u32) {
    let ns = now_ns(libc::CLOCK_REALTIME);
    let n = nvgpu_notification {
        time_stamp: nvgpu_notification_time_stamp {
            nanoseconds: [ns as u32, (ns >> 32) as u32],
        },
        info32: code,
        info16: 0,
        status: NVGPU_NOTIFICATION_STATUS_ERROR,
    };
    // SAFETY: p points at a 16-byte record inside a live kernel mapping (checked at
    // SET_ERROR_NOTIFIER: offset + 16 <= size).
    unsafe { std::ptr::copy(n.as_bytes().as_ptr(), p.0, n.as_bytes().len()) };
}

impl Sys for EmuSys {
    fn open(&self, path: &CStr, flags: i32) -> Result<RawFd, Errno> {
        let mut st = self.state.lock();
        let fd = match path.to_bytes() {
            b"/dev/nvgpu/igpu0/ctrl" | b"/dev/nvhost-ctrl-gpu" => {
                let id = mem::next_id();
                let fd = st.new_fd(c"nvgpu-ctrl", NVGPU_USERMODE_MAP_SIZE as u64, Obj::Ctrl(id))?;
                st.ctrls.insert(
                    id,
                    CtrlFile {
                        fd_open: true,
                        doorbell: None,
                    },
                );
                fd
            }
            b"/dev/nvmap" => {
                let id = mem::next_id();
                let fd = st.new_fd(c"nvmap", 0, Obj::Nvmap(id))?;
                st.clients.insert(id, nvmap::Client::default());
                fd
            }
            // Opening the AS node asks for big pages, which ga10b does not have.
            b"/dev/nvgpu/igpu0/as" | b"/dev/nvhost-as-gpu" => return Err(libc::EINVAL),
            _ => return Err(libc::ENOENT),
        };
        if flags & libc::O_CLOEXEC == 0 {
            let _ = nix::fcntl::fcntl(
                fd,
                nix::fcntl::FcntlArg::F_SETFD(nix::fcntl::FdFlag::empty()),
            );
        }
        Ok(fd)
    }

    fn close(&self, fd: RawFd) -> Result<(), Errno> {
        let mut st = self.state.lock();
        match st.fds.remove(&fd) {
            Some(obj) => {
                close_fd(fd);
                st.release(obj);
                Ok(())
            }
            None => {
                drop(st);
                // A foreign fd, closed as the caller asked.
                nix::unistd::close(fd).map_err(|e| e as Errno)
            }
        }
    }

    unsafe fn ioctl(&self, fd: RawFd, request: u64, arg: usize) -> Result<i32, Errno> {
        // The syscall's `cmd` is an `unsigned int`: bits above 31 never reach a driver.
        let request = request & 0xffff_ffff;
        let mut st = self.state.lock();
        let Some(obj) = st.fds.get(&fd).cloned() else {
            // Not an nvgpu/nvmap file: ENOTTY like any file without this ioctl.
            return Err(if fd_is_open(fd) {
                libc::ENOTTY
            } else {
                libc::EBADF
            });
        };
        match &obj {
            Obj::Nvmap(id) => st.nvmap_ioctl(*id, request, arg),
            Obj::DmaBuf(_) => st.dmabuf_ioctl(request, arg),
            _ => st.nvgpu_ioctl(&obj, request, arg),
        }
    }

    unsafe fn mmap(
        &self,
        addr: *mut u8,
        len: usize,
        prot: i32,
        flags: i32,
        fd: RawFd,
        offset: i64,
    ) -> Result<*mut u8, Errno> {
        let raw = |flags: i32| -> Result<*mut u8, Errno> {
            let p = libc::mmap(addr.cast(), len, prot, flags, fd, offset as libc::off_t);
            if p == libc::MAP_FAILED {
                Err(std::io::Error::last_os_error()
                    .raw_os_error()
                    .unwrap_or(libc::EIO))
            } else {
                Ok(p.cast())
            }
        };
        let mut st = self.state.lock();
        let obj = if flags & libc::MAP_ANONYMOUS != 0 || fd < 0 {
            None
        } else {
            st.fds.get(&fd).cloned()
        };
        match obj {
            None => {
                let p = raw(flags)?;
                st.punch(p as usize, len);
                Ok(p)
            }
            Some(Obj::Nvmap(_)) => Err(libc::EPERM),
            Some(Obj::As(_) | Obj::Tsg(_) | Obj::Channel(_)) => Err(libc::ENODEV),
            Some(Obj::Ctrl(id)) => {
                let busy = st.ctrls.get(&id).map_or(true, |c| c.doorbell.is_some());
                if busy {
                    return Err(libc::EBUSY);
                }
                if len > NVGPU_USERMODE_MAP_SIZE || offset != 0 {
                    return Err(libc::EINVAL);
                }
                // A private mapping would never reach the doorbell. [emulator]
                if flags & libc::MAP_SHARED == 0 {
                    return Err(libc::EINVAL);
                }
                let p = raw(flags)?;
                let k = match KMap::new(fd, NVGPU_USERMODE_MAP_SIZE) {
                    Ok(k) => k,
                    Err(e) => {
                        libc::munmap(p.cast(), len);
                        return Err(e);
                    }
                };
                self.gpu.add_doorbell(HostPtr(k.ptr()));
                if let Some(c) = st.ctrls.get_mut(&id) {
                    c.doorbell = Some(k);
                }
                st.punch(p as usize, len);
                let ps = page_size();
                st.uvmas.insert(
                    p as usize,
                    UVma {
                        len: len.div_ceil(ps) * ps,
                        kind: UVmaKind::Doorbell(id),
                    },
                );
                Ok(p)
            }
            Some(Obj::DmaBuf(b)) => {
                let Some(bk) = b.backing() else {
                    return Err(libc::EPERM);
                };
                if bk.heap == crate::sys::nvmap::NVMAP_HEAP_CARVEOUT_VPR {
                    return Err(libc::EPERM);
                }
                // The buffer's own pages (nvmap makes every mapping shared).
                let p = b.map_into_user(addr, len, prot, flags, offset)?;
                st.punch(p as usize, len);
                let ps = page_size();
                st.uvmas.insert(
                    p as usize,
                    UVma {
                        len: len.div_ceil(ps) * ps,
                        kind: UVmaKind::DmaBuf(b.clone(), offset as u64),
                    },
                );
                Ok(p)
            }
        }
    }

    unsafe fn munmap(&self, addr: *mut u8, len: usize) -> Result<(), Errno> {
        if libc::munmap(addr.cast(), len) < 0 {
            return Err(std::io::Error::last_os_error()
                .raw_os_error()
                .unwrap_or(libc::EIO));
        }
        self.state.lock().punch(addr as usize, len);
        Ok(())
    }

    fn is_emulated(&self) -> bool {
        true
    }

    fn fault_log(&self) -> Vec<KernelFaultRecord> {
        let mut v: Vec<KernelFaultRecord> = self
            .gpu
            .faults()
            .into_iter()
            .map(|f| KernelFaultRecord {
                token: f.token,
                address: f.address,
                code: f.code,
                what: f.what,
            })
            .collect();
        v.extend(self.state.lock().injected.iter().cloned());
        v
    }
}
