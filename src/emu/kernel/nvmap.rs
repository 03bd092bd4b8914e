//! `/dev/nvmap`: the machine's nvmap device ([`EmuNvmap`]: per-process clients, handle IDs,
//! IOVMM memory), ALLOC, dma-buf fds, cache maintenance (§5).
//!
//! What the rel-36 driver does around its ioctls and this models (nvidia-oot 7096cb09a,
//! `drivers/video/tegra/nvmap`):
//!
//! * **One client per process.** `open` joins the client of the caller's group leader (its pid)
//!   if there is one and counts the open; the client goes, dropping every handle reference it
//!   holds, when the last open is released. A handle ID is valid on every nvmap fd of the
//!   process, FREE through any of them drops it, and a forked child reaches its parent's
//!   client through inherited fds while its own opens make a client of its own
//!   (`nvmap_dev.c:__nvmap_create_client`, `nvmap_release`, `destroy_client`).
//! * **IDs** come from one counter shared by every client, starting at `U32_MAX / 2`; each is
//!   the lowest ID at or above the counter that is free in the client, and the counter wraps
//!   back at `U32_MAX` (`nvmap_id_array.c:nvmap_id_array_id_alloc`).
//! * **A client holds one reference per handle, counted in "dupes"; every ID is one dupe.**
//!   CREATE makes the handle with one dupe and an ID; FROM_FD of an allocated nvmap buffer adds
//!   a dupe (or a new reference) and returns a **new ID every time**; FREE erases that one ID and
//!   drops one dupe; the reference (and the client's hold on the dma-buf) goes with the last
//!   (`nvmap_ioctl.c:nvmap_ioctl_create`, `nvmap_handle.c:nvmap_duplicate_handle`,
//!   `nvmap_alloc.c:nvmap_free_handle_from_fd`, `nvmap_free_handle`).
//! * **IOVMM pages are taken at ALLOC.** An IOVMM request larger than the machine's memory is
//!   ENOMEM before anything else (`is_nvmap_memory_available`); otherwise the pages are
//!   allocated then and there, zeroed (`handle_page_alloc`, `GFP_KERNEL | __GFP_ZERO`), and
//!   when they cannot be had ALLOC fails with ENOMEM and the handle stays unallocated. The
//!   pages go back when the buffer's last reference goes (`_nvmap_handle_free`). The emulated
//!   memory is [`EmuNvmap::memory_total`] bytes (`nvmap_ioctl.c:nvmap_ioctl_alloc`,
//!   `nvmap_dev.c:is_nvmap_memory_available`, `nvmap_alloc.c:nvmap_alloc_handle`,
//!   `handle_page_alloc`).
//!
//! On the board a request between the free and the total memory makes the kernel reclaim
//! (page cache, zram swap) and possibly run the OOM killer before ALLOC fails; the emulator has
//! no other memory users and fails it at once.

use super::mem::{
    close_fd, copy_from_user, copy_to_user, dmabuf_placeholder_fd, DmaBuf, LiveToken, MemPool,
};
use super::{read_user, write_user, Obj, State, UVmaKind};
use crate::os::lock::ForkMutex;

/// MAX_NUMNODES of the board's kernel: `1 << CONFIG_NODES_SHIFT`, 4 by default on arm64
/// [INFER: the L4T kernel configuration was not read].
const EMU_MAX_NUMNODES: i32 = 16;
use crate::os::Errno;
use crate::sys::ioctl::{ioc_nr, ioc_type};
use crate::sys::nvgpu::request_entry;
use crate::sys::nvmap::*;
use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

/// Heaps present on the seed board: IOVMM plus the FSI and VPR carveouts.
const PRESENT_HEAPS: u32 = NVMAP_HEAP_IOVMM | NVMAP_HEAP_CARVEOUT_FSI | NVMAP_HEAP_CARVEOUT_VPR;
/// Heaps that cannot be combined with others.
const EXCLUSIVE_HEAPS: u32 = NVMAP_HEAP_CARVEOUT_IVM | NVMAP_HEAP_CARVEOUT_VIDMEM;
/// GET_AVAILABLE_HEAPS on the seed board (carveouts only: VPR | FSI).
const AVAILABLE_HEAPS: u64 = 0x1000_0004;
/// Every carveout bit (`NVMAP_HEAP_CARVEOUT_MASK`).
const CARVEOUT_MASK: u32 = NVMAP_HEAP_IOVMM - 1;
/// Where the ID counter starts and wraps to (`U32_MAX / 2`).
const FIRST_ID: u32 = u32::MAX / 2;
/// The emulated Orin's memory when `TEGRAGPU_EMU_MEMORY_BYTES` does not say: the seed board is
/// an AGX Orin 64GB; the kernel sees its 64 GiB less the carveouts. [INFER: `totalram` was not
/// measured on the seed board]
pub const ORIN_MEMORY_BYTES: u64 = 62 << 30;

/// The nvmap device of an emulated machine (`nvmap_dev`): its clients (one per process), the
/// handle-ID counter and the memory IOVMM allocations take pages from.
///
/// Every emulated kernel made with [`super::EmuSys::new`] uses [`EmuNvmap::process`], so that
/// the devices a process opens share one nvmap client and one memory, as on a board. A test can
/// make another ([`EmuNvmap::new`]) for kernels that must not share with the rest of the
/// process ([`super::EmuSys::with_nvmap`]): that is another machine.
pub struct EmuNvmap {
    dev: ForkMutex<NvmapDev>,
    mem: Arc<MemPool>,
}

struct NvmapDev {
    /// Clients by the group leader's pid.
    clients: HashMap<i32, Client>,
    /// Where the next ID search starts (`xa_start`, shared by every client).
    xa_start: u32,
}

/// One process's nvmap client.
#[derive(Default)]
struct Client {
    /// Opens of `/dev/nvmap` (files) referring to this client (`client->count`).
    opens: u32,
    /// Handle IDs (`client->id_array`): ID → (dma-buf object id, emulated kernel it was made
    /// through).
    ids: HashMap<u32, (u64, u64)>,
    /// The client's handle references (`client->handle_refs`): dma-buf object id → reference.
    refs: HashMap<u64, HandleRef>,
}

/// `struct nvmap_handle_ref`: one per handle per client, holding one dma-buf reference.
struct HandleRef {
    buf: Arc<DmaBuf>,
    /// `ref->dupes`: one per ID naming the handle in this client.
    dupes: u32,
}

/// The process's nvmap lock, held across `fork()` (see `crate::os::fork`): a child that opens
/// an emulated device must not find it held by a thread it does not have.
static FORK_LOCK: crate::os::fork::ForkLock = crate::os::fork::ForkLock {
    order: 5,
    lock: || std::mem::forget(EmuNvmap::process().dev.lock()),
    // SAFETY (of the call): the caller took the lock with `lock` and forgot its guard.
    unlock: || unsafe { EmuNvmap::process().dev.force_unlock() },
};

/// `TEGRAGPU_EMU_MEMORY_BYTES`: bytes, decimal or `0x` hex, optionally with a `K`, `M` or `G`
/// suffix (binary units).
fn memory_from_env() -> u64 {
    let Some(v) = std::env::var_os("TEGRAGPU_EMU_MEMORY_BYTES").filter(|v| !v.is_empty()) else {
        return ORIN_MEMORY_BYTES;
    };
    let parsed = v.to_str().and_then(|t| {
        let t = t.trim();
        let (num, shift) = match t.chars().last()? {
            'k' | 'K' => (&t[..t.len() - 1], 10),
            'm' | 'M' => (&t[..t.len() - 1], 20),
            'g' | 'G' => (&t[..t.len() - 1], 30),
            _ => (t, 0),
        };
        let n = match num.strip_prefix("0x").or_else(|| num.strip_prefix("0X")) {
            Some(h) => u64::from_str_radix(h, 16).ok()?,
            None => num.parse::<u64>().ok()?,
        };
        n.checked_mul(1 << shift)
    });
    parsed.unwrap_or_else(|| {
        crate::log::warn!(
            "TEGRAGPU_EMU_MEMORY_BYTES={v:?} is not a byte count: the emulated Orin has {ORIN_MEMORY_BYTES} bytes"
        );
        ORIN_MEMORY_BYTES
    })
}

impl EmuNvmap {
    /// The nvmap device of a separate emulated machine with `memory_bytes` of memory.
    pub fn new(memory_bytes: u64) -> Arc<EmuNvmap> {
        Arc::new(EmuNvmap {
            dev: ForkMutex::new(NvmapDev {
                clients: HashMap::new(),
                xa_start: FIRST_ID,
            }),
            mem: MemPool::new(memory_bytes),
        })
    }

    /// The process's nvmap device, shared by every emulated kernel made with
    /// [`super::EmuSys::new`]. Its memory is `TEGRAGPU_EMU_MEMORY_BYTES` as set when it is
    /// first used (the first emulated kernel of the process), else [`ORIN_MEMORY_BYTES`].
    pub fn process() -> &'static Arc<EmuNvmap> {
        static PROCESS: OnceLock<Arc<EmuNvmap>> = OnceLock::new();
        PROCESS.get_or_init(|| {
            crate::os::fork::register(&FORK_LOCK);
            EmuNvmap::new(memory_from_env())
        })
    }

    /// Bytes of memory (what QUERY_HEAP_PARAMS reports as the IOVMM total).
    pub fn memory_total(&self) -> u64 {
        self.mem.total
    }

    /// Bytes of memory no buffer holds.
    pub fn memory_free(&self) -> u64 {
        self.mem.free()
    }

    /// A new open of `/dev/nvmap` by this process: joins (or makes) its client; returns the
    /// client's key.
    pub(super) fn open(&self) -> i32 {
        // SAFETY: getpid has no preconditions. (getpid is the thread group id: the group
        // leader's pid.)
        let pid = unsafe { libc::getpid() };
        self.dev.lock().clients.entry(pid).or_default().opens += 1;
        pid
    }

    /// The last reference to an open went (`nvmap_release`): at the client's last open the
    /// client goes with every handle reference it holds (`destroy_client`).
    pub(super) fn release(&self, pid: i32) {
        let gone = {
            let mut d = self.dev.lock();
            let last = match d.clients.get_mut(&pid) {
                Some(c) => {
                    c.opens = c.opens.saturating_sub(1);
                    c.opens == 0
                }
                None => false,
            };
            if last {
                d.clients.remove(&pid)
            } else {
                None
            }
        };
        // The buffers are dropped outside the lock.
        drop(gone);
    }

    /// Handle IDs made through emulated kernel `kernel` that some client still holds.
    pub(super) fn handles_of(&self, kernel: u64) -> usize {
        self.dev
            .lock()
            .clients
            .values()
            .map(|c| c.ids.values().filter(|(_, k)| *k == kernel).count())
            .sum()
    }
}

impl NvmapDev {
    /// A new ID in `pid`'s client (`nvmap_id_array_id_alloc`): the lowest free one at or above
    /// the shared counter, searching once more from the start when none is; ENOMEM when the
    /// client has every ID (the ioctl turns the xarray's EBUSY into ENOMEM).
    fn alloc_id(&mut self, pid: i32) -> Result<u32, Errno> {
        let taken =
            |d: &NvmapDev, id: u32| d.clients.get(&pid).is_some_and(|c| c.ids.contains_key(&id));
        loop {
            let mut id = self.xa_start;
            while taken(self, id) && id < u32::MAX {
                id += 1;
            }
            if !taken(self, id) {
                self.xa_start = if id == u32::MAX { FIRST_ID } else { id + 1 };
                return Ok(id);
            }
            if self.xa_start == FIRST_ID {
                return Err(libc::ENOMEM);
            }
            self.xa_start = FIRST_ID;
        }
    }

    fn client(&mut self, pid: i32) -> Result<&mut Client, Errno> {
        // The fd's client exists while the fd is open.
        self.clients.get_mut(&pid).ok_or(libc::ENODEV)
    }
}

impl Client {
    /// The buffer an ID names (`nvmap_handle_get_from_id`).
    fn buf(&self, id: u32) -> Option<Arc<DmaBuf>> {
        let (oid, _) = self.ids.get(&id)?;
        self.refs.get(oid).map(|r| r.buf.clone())
    }

    /// Add a dupe of `buf` (a new reference with one dupe if the client has none) and name it
    /// `id`.
    fn add(&mut self, id: u32, buf: &Arc<DmaBuf>, kernel: u64) {
        self.refs
            .entry(buf.oid)
            .or_insert_with(|| HandleRef {
                buf: buf.clone(),
                dupes: 0,
            })
            .dupes += 1;
        self.ids.insert(id, (buf.oid, kernel));
    }

    /// Erase `id` and drop its dupe (`nvmap_free_handle_from_fd` → `nvmap_free_handle`); the
    /// reference goes with its last dupe. Returns the reference to drop outside the lock.
    fn remove(&mut self, id: u32) -> Option<HandleRef> {
        let (oid, _) = self.ids.remove(&id)?;
        let r = self.refs.get_mut(&oid)?;
        r.dupes -= 1;
        if r.dupes == 0 {
            self.refs.remove(&oid)
        } else {
            None
        }
    }
}

impl State {
    /// New dma-buf fd (lowest free, FD_CLOEXEC) referring to `buf`. Out of fds → EMFILE
    /// (`get_unused_fd_flags`), anything else ENOMEM.
    fn dmabuf_fd(&mut self, buf: Arc<DmaBuf>) -> Result<i32, Errno> {
        let fd = dmabuf_placeholder_fd(buf.size).map_err(|e| {
            if e == libc::EMFILE || e == libc::ENFILE {
                e
            } else {
                libc::ENOMEM
            }
        })?;
        self.fds.insert(fd, Obj::DmaBuf(buf));
        Ok(fd)
    }

    /// Take back a dma-buf fd this kernel just installed.
    fn undo_dmabuf_fd(&mut self, fd: i32) {
        if self.fds.remove(&fd).is_some() {
            close_fd(fd);
        }
    }

    /// A new dma-buf object counted in [`super::EmuStats::dmabufs`].
    pub(super) fn new_dmabuf(&self, handle: u32, size: u64) -> Result<Arc<DmaBuf>, Errno> {
        DmaBuf::new(handle, size, LiveToken::new(&self.live_dmabufs))
    }

    /// The buffer `id` names in `pid`'s client.
    fn id_buf(&self, pid: i32, id: u32) -> Result<Option<Arc<DmaBuf>>, Errno> {
        let mut d = self.nvmap.dev.lock();
        Ok(d.client(pid)?.buf(id))
    }

    /// IOVMM pages for `size` bytes from the machine's memory.
    fn take_pages(&self, size: u64) -> Option<super::mem::Pages> {
        self.nvmap.mem.take(size, &self.iovmm_bytes)
    }

    /// The nvmap dispatcher (§1 rule 5): wrong magic or nr > 107 → ENOTTY; each handler copies
    /// its own arguments (bad pointer → EFAULT); unknown command → ENOTTY. `pid` is the fd's
    /// client.
    pub(super) fn nvmap_ioctl(&mut self, pid: i32, req: u64, arg: usize) -> Result<i32, Errno> {
        if ioc_type(req) != NVMAP_IOC_MAGIC || ioc_nr(req) as u32 > NVMAP_IOC_MAXNR {
            return Err(libc::ENOTTY);
        }
        match req {
            NVMAP_IOC_CREATE | NVMAP_IOC_CREATE_64 => {
                let mut a: nvmap_create_handle = read_user(arg)?;
                let size = if req == NVMAP_IOC_CREATE {
                    a.size as u64
                } else {
                    a.size64()
                };
                if size == 0 {
                    return Err(libc::EINVAL);
                }
                let size = size.checked_add(4095).ok_or(libc::ENOMEM)? & !4095;
                let nvmap = self.nvmap.clone();
                let mut d = nvmap.dev.lock();
                d.client(pid)?;
                // driver: nvmap_ioctl.c:nvmap_ioctl_create →
                // nvmap_id_array.c:nvmap_id_array_id_alloc (handle IDs with
                // NVMAP_CONFIG_HANDLE_AS_ID: CREATE installs no fd).
                let id = d.alloc_id(pid)?;
                let buf = self.new_dmabuf(id, size).map_err(|_| libc::ENOMEM)?;
                // driver: nvmap_handle.c:nvmap_create_handle (one reference, one dupe).
                d.client(pid)?.add(id, &buf, self.kid);
                if req == NVMAP_IOC_CREATE {
                    a.handle = id;
                } else {
                    // handle64 is the low word of size64.
                    a.size = id;
                }
                if let Err(e) = write_user(arg, &a) {
                    // driver: nvmap_ioctl.c:nvmap_ioctl_create: a failed copy-out frees the
                    // handle and releases the ID.
                    let r = d.client(pid)?.remove(id);
                    drop(d);
                    drop(r);
                    return Err(e);
                }
            }
            NVMAP_IOC_ALLOC => {
                // driver: nvmap_ioctl.c:nvmap_ioctl_alloc, checks in its order.
                let a: nvmap_alloc_handle = read_user(arg)?;
                if a.align != 0 && !a.align.is_power_of_two() {
                    return Err(libc::EINVAL);
                }
                if a.handle == 0 {
                    return Err(libc::EINVAL);
                }
                // driver: nvmap_ioctl.c:nvmap_ioctl_alloc: a node id above MAX_NUMNODES, or
                // negative other than NUMA_NO_NODE (−1), is EINVAL; any other id is accepted
                // (a node without memory falls back to others).
                if a.numa_nid > EMU_MAX_NUMNODES
                    || (a.numa_nid < 0 && a.numa_nid != NVMAP_NUMA_NO_NODE)
                {
                    return Err(libc::EINVAL);
                }
                let buf = self.id_buf(pid, a.handle)?.ok_or(libc::EINVAL)?;
                // driver: nvmap_dev.c:is_nvmap_memory_available: no heap → ENOMEM; an IOVMM
                // request larger than the memory (totalram) → ENOMEM; otherwise a present
                // carveout is needed.
                if a.heap_mask == 0 {
                    return Err(libc::ENOMEM);
                }
                if a.heap_mask & NVMAP_HEAP_IOVMM != 0 {
                    if buf.size > self.nvmap.mem.total {
                        return Err(libc::ENOMEM);
                    }
                } else if a.heap_mask & PRESENT_HEAPS == 0 {
                    return Err(libc::ENOMEM);
                }
                // driver: nvmap_alloc.c:nvmap_alloc_handle.
                if buf.backing().is_some() {
                    return Err(libc::EEXIST);
                }
                if a.heap_mask & EXCLUSIVE_HEAPS != 0 && a.heap_mask & !EXCLUSIVE_HEAPS != 0 {
                    return Err(libc::EINVAL);
                }
                // The heap policy: VPR, then (one page) the other carveouts before IOVMM or
                // (larger) IOVMM before them; a heap that fails passes to the next.
                let policy = if buf.size == 4096 {
                    [NVMAP_HEAP_CARVEOUT_VPR, CARVEOUT_MASK, NVMAP_HEAP_IOVMM]
                } else {
                    [NVMAP_HEAP_CARVEOUT_VPR, NVMAP_HEAP_IOVMM, CARVEOUT_MASK]
                };
                let flags = a.flags & !NVMAP_HANDLE_KIND_SPECIFIED;
                let mut done = false;
                for heap in policy
                    .into_iter()
                    .map(|p| p & a.heap_mask & PRESENT_HEAPS)
                    .filter(|&h| h != 0)
                {
                    // Carveouts MSB first (VPR, then FSI).
                    let heap = 1 << (31 - heap.leading_zeros());
                    let pages = if heap == NVMAP_HEAP_IOVMM {
                        // driver: nvmap_alloc.c:handle_page_alloc: the pages are allocated now;
                        // short of memory it fails with ENOMEM and the handle stays
                        // unallocated.
                        match self.take_pages(buf.size) {
                            Some(p) => Some(p),
                            None => continue,
                        }
                    } else {
                        None
                    };
                    match buf.allocate(heap, flags, pages) {
                        Ok(()) => {
                            done = true;
                            break;
                        }
                        // Short of host memory: as if the heap had none.
                        Err(libc::ENOMEM) => continue,
                        // EEXIST (a racing ALLOC), or the host's EMFILE with memfd backing.
                        Err(e) => return Err(e),
                    }
                }
                if !done {
                    return Err(libc::ENOMEM);
                }
                *buf.tag.lock() = a.flags >> NVMAP_HANDLE_TAG_SHIFT;
            }
            NVMAP_IOC_FREE => {
                // driver: nvmap_ioctl.c:nvmap_ioctl_free. The ID is passed by value; 0 and
                // unknown IDs are a silent success.
                if arg == 0 {
                    return Ok(0);
                }
                // A value that is a dma-buf fd is no ID: FREE closes that fd.
                let fd = arg as u32 as i32;
                if fd >= 0 && matches!(self.fds.get(&fd), Some(Obj::DmaBuf(_))) {
                    if let Some(obj) = self.fds.remove(&fd) {
                        close_fd(fd);
                        self.release(obj);
                    }
                    return Ok(0);
                }
                // driver: nvmap_alloc.c:nvmap_free_handle_from_fd → nvmap_free_handle: the ID
                // goes, and one dupe of the client's reference with it.
                let r = {
                    let mut d = self.nvmap.dev.lock();
                    d.client(pid)?.remove(arg as u32)
                };
                drop(r);
            }
            NVMAP_IOC_GET_FD => {
                // driver: nvmap_ioctl.c:nvmap_ioctl_getfd.
                let mut a: nvmap_create_handle = read_user(arg)?;
                let buf = match self.id_buf(pid, a.handle)? {
                    Some(b) => b,
                    // Not an ID of the client: a dma-buf fd to duplicate, but only a foreign
                    // one (nvmap_dmabuf.c:nvmap_dmabuf_duplicate_gen_fd refuses nvmap's own).
                    None => {
                        self.dmabuf_of_fd(a.handle as i32)?;
                        return Err(libc::EINVAL);
                    }
                };
                let fd = self.dmabuf_fd(buf)?;
                a.size = fd as u32;
                // driver: nvmap_ioctl.c:nvmap_install_fd copies out before fd_install: a failed
                // copy-out installs no fd.
                if let Err(e) = write_user(arg, &a) {
                    self.undo_dmabuf_fd(fd);
                    return Err(e);
                }
            }
            NVMAP_IOC_FROM_FD => {
                // driver: nvmap_ioctl.c:nvmap_ioctl_create → nvmap_handle.c:
                // nvmap_create_handle_from_fd → nvmap_duplicate_handle, then a new ID.
                let mut a: nvmap_create_handle = read_user(arg)?;
                let buf = self.dmabuf_of_fd(a.fd())?;
                // Emulator-internal buffers are not nvmap's; an unallocated nvmap buffer cannot
                // be duplicated (EINVAL), and is not duplicated as a foreign dma-buf either.
                if buf.handle == 0 || buf.backing().is_none() {
                    return Err(libc::EINVAL);
                }
                let nvmap = self.nvmap.clone();
                let mut d = nvmap.dev.lock();
                d.client(pid)?;
                let id = d.alloc_id(pid)?;
                d.client(pid)?.add(id, &buf, self.kid);
                a.handle = id;
                if let Err(e) = write_user(arg, &a) {
                    let r = d.client(pid)?.remove(id);
                    drop(d);
                    drop(r);
                    return Err(e);
                }
            }
            NVMAP_IOC_CACHE | NVMAP_IOC_CACHE_64 => {
                let (addr, handle, len, op) = if req == NVMAP_IOC_CACHE {
                    let a: nvmap_cache_op = read_user(arg)?;
                    (a.addr, a.handle, a.len as u64, a.op)
                } else {
                    let a: nvmap_cache_op_64 = read_user(arg)?;
                    (a.addr, a.handle, a.len, a.op)
                };
                if !(NVMAP_CACHE_OP_WB..=NVMAP_CACHE_OP_WB_INV).contains(&op) || addr == 0 {
                    return Err(libc::EINVAL);
                }
                let buf = self.id_buf(pid, handle)?.ok_or(libc::EINVAL)?;
                let addr = addr as usize;
                let (start, v) = self
                    .uvmas
                    .range(..=addr)
                    .next_back()
                    .ok_or(libc::EADDRNOTAVAIL)?;
                let UVmaKind::DmaBuf(vb, _) = &v.kind else {
                    return Err(libc::EADDRNOTAVAIL);
                };
                let end = start + v.len;
                if addr >= end
                    || (addr as u64)
                        .checked_add(len)
                        .is_none_or(|e| e > end as u64)
                {
                    return Err(libc::EADDRNOTAVAIL);
                }
                if vb.oid != buf.oid {
                    return Err(libc::EFAULT);
                }
                // The emulated memory is coherent: nothing to do for any cache mode.
            }
            NVMAP_IOC_READ | NVMAP_IOC_WRITE => {
                let a: nvmap_rw_handle = read_user(arg)?;
                if a.elem_size == 0 || a.count == 0 {
                    return Err(libc::EINVAL);
                }
                let buf = self.id_buf(pid, a.handle)?.ok_or(libc::EINVAL)?;
                if buf.backing().is_none() {
                    return Err(libc::EINVAL);
                }
                let elem = usize::try_from(a.elem_size).map_err(|_| libc::EINVAL)?;
                let mut tmp = vec![0u8; elem];
                for i in 0..a.count {
                    let hoff = i
                        .checked_mul(a.hmem_stride)
                        .and_then(|x| x.checked_add(a.offset))
                        .ok_or(libc::EINVAL)?;
                    if hoff.checked_add(a.elem_size).is_none_or(|e| e > buf.size) {
                        return Err(libc::EINVAL);
                    }
                    let uaddr = i
                        .checked_mul(a.user_stride)
                        .and_then(|x| x.checked_add(a.addr))
                        .ok_or(libc::EFAULT)? as usize;
                    let p = buf.host_ptr(hoff).ok_or(libc::EINVAL)?;
                    if req == NVMAP_IOC_WRITE {
                        copy_from_user(&mut tmp, uaddr)?;
                        // SAFETY: [hoff, hoff+elem) is inside the kernel mapping (checked above).
                        unsafe { std::ptr::copy(tmp.as_ptr(), p, elem) };
                    } else {
                        // SAFETY: as above.
                        unsafe { std::ptr::copy(p, tmp.as_mut_ptr(), elem) };
                        copy_to_user(uaddr, &tmp)?;
                    }
                }
            }
            NVMAP_IOC_SET_TAG_LABEL => {
                let _a: nvmap_set_tag_label = read_user(arg)?;
            }
            NVMAP_IOC_GET_AVAILABLE_HEAPS => {
                write_user(
                    arg,
                    &nvmap_available_heaps {
                        heaps: AVAILABLE_HEAPS,
                    },
                )?;
            }
            NVMAP_IOC_QUERY_HEAP_PARAMS => {
                let mut a: nvmap_query_heap_params = read_user(arg)?;
                if a.heap_mask & NVMAP_HEAP_IOVMM == 0 {
                    // Carveout parameters were not measured; absent heaps are an error.
                    return Err(if a.heap_mask & PRESENT_HEAPS != 0 {
                        libc::ENOSYS
                    } else {
                        libc::EINVAL
                    });
                }
                // driver: nvmap_ioctl.c:nvmap_ioctl_query_heap_params: the machine's memory
                // (system_heap_total_mem), what is free (system_heap_free_mem), and a largest
                // free block the driver leaves at PAGE_SIZE ("To Do").
                a.total = self.nvmap.mem.total;
                a.free = self.nvmap.mem.free();
                a.largest_free_block = 4096;
                a.granule_size = 4096;
                a.contig = 0;
                write_user(arg, &a)?;
            }
            _ => {
                return Err(if request_entry(req).is_some() {
                    libc::ENOSYS
                } else {
                    libc::ENOTTY
                });
            }
        }
        Ok(0)
    }
}
