//! `/dev/nvmap` clients: handle IDs, ALLOC, dma-buf fds, cache maintenance (§5).

use super::mem::{copy_from_user, copy_to_user, dmabuf_placeholder_fd, DmaBuf, LiveToken};
use super::{read_user, write_user, Obj, State, UVmaKind};
use crate::os::Errno;
use crate::sys::ioctl::{ioc_nr, ioc_type};
use crate::sys::nvgpu::request_entry;
use crate::sys::nvmap::*;
use std::collections::HashMap;
use std::sync::Arc;

/// Heaps present on the seed board: IOVMM plus the FSI and VPR carveouts.
const PRESENT_HEAPS: u32 = NVMAP_HEAP_IOVMM | NVMAP_HEAP_CARVEOUT_FSI | NVMAP_HEAP_CARVEOUT_VPR;
/// Heaps that cannot be combined with others.
const EXCLUSIVE_HEAPS: u32 = NVMAP_HEAP_CARVEOUT_IVM | NVMAP_HEAP_CARVEOUT_VIDMEM;
/// GET_AVAILABLE_HEAPS on the seed board (carveouts only: VPR | FSI).
const AVAILABLE_HEAPS: u64 = 0x1000_0004;

/// One open of `/dev/nvmap`: handle ID → (dma-buf, references held by this client).
#[derive(Default)]
pub(crate) struct Client {
    handles: HashMap<u32, (Arc<DmaBuf>, u32)>,
}

impl Client {
    /// Handle IDs this client holds.
    pub(crate) fn handle_count(&self) -> usize {
        self.handles.len()
    }
}

impl State {
    fn client(&mut self, id: u64) -> Result<&mut Client, Errno> {
        self.clients.get_mut(&id).ok_or(libc::ENOTTY)
    }

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

    /// A new dma-buf object counted in [`super::EmuStats::dmabufs`].
    pub(super) fn new_dmabuf(&self, handle: u32, size: u64) -> Result<Arc<DmaBuf>, Errno> {
        DmaBuf::new(handle, size, LiveToken::new(&self.live_dmabufs))
    }

    /// The nvmap dispatcher (§1 rule 5): wrong magic or nr > 107 → ENOTTY; each handler copies
    /// its own arguments (bad pointer → EFAULT); unknown command → ENOTTY.
    pub(super) fn nvmap_ioctl(&mut self, cid: u64, req: u64, arg: usize) -> Result<i32, Errno> {
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
                let id = self.next_handle;
                // With handle IDs (NVMAP_CONFIG_HANDLE_AS_ID) CREATE installs no fd.
                let buf = self.new_dmabuf(id, size).map_err(|_| libc::ENOMEM)?;
                self.next_handle = self.next_handle.checked_add(1).unwrap_or(0x7fff_ffff);
                self.client(cid)?.handles.insert(id, (buf, 1));
                if req == NVMAP_IOC_CREATE {
                    a.handle = id;
                } else {
                    // handle64 is the low word of size64.
                    a.size = id;
                }
                write_user(arg, &a)?;
            }
            NVMAP_IOC_ALLOC => {
                let a: nvmap_alloc_handle = read_user(arg)?;
                if a.align != 0 && !a.align.is_power_of_two() {
                    return Err(libc::EINVAL);
                }
                if a.handle == 0 {
                    return Err(libc::EINVAL);
                }
                if a.numa_nid != 0 && a.numa_nid != NVMAP_NUMA_NO_NODE {
                    return Err(libc::EINVAL);
                }
                let buf = self
                    .client(cid)?
                    .handles
                    .get(&a.handle)
                    .map(|h| h.0.clone())
                    .ok_or(libc::EINVAL)?;
                if a.heap_mask & PRESENT_HEAPS == 0 {
                    return Err(libc::ENOMEM);
                }
                if buf.backing().is_some() {
                    return Err(libc::EEXIST);
                }
                if a.heap_mask & EXCLUSIVE_HEAPS != 0 && a.heap_mask & !EXCLUSIVE_HEAPS != 0 {
                    return Err(libc::EINVAL);
                }
                // nvmap's policy tries VPR, then the other carveouts, then IOVMM.
                let heap = [
                    NVMAP_HEAP_CARVEOUT_VPR,
                    NVMAP_HEAP_CARVEOUT_FSI,
                    NVMAP_HEAP_IOVMM,
                ]
                .into_iter()
                .find(|h| a.heap_mask & h != 0)
                .unwrap_or(NVMAP_HEAP_IOVMM);
                let flags = a.flags & !NVMAP_HANDLE_KIND_SPECIFIED;
                buf.allocate(heap, flags)?;
                *buf.tag.lock() = a.flags >> NVMAP_HANDLE_TAG_SHIFT;
            }
            NVMAP_IOC_FREE => {
                // The handle ID is passed by value; unknown IDs are a silent no-op.
                let id = arg as u32;
                let c = self.client(cid)?;
                let gone = match c.handles.get_mut(&id) {
                    Some(h) => {
                        h.1 -= 1;
                        h.1 == 0
                    }
                    None => false,
                };
                if gone {
                    c.handles.remove(&id);
                }
            }
            NVMAP_IOC_GET_FD => {
                let mut a: nvmap_create_handle = read_user(arg)?;
                let buf = match self.client(cid)?.handles.get(&a.handle) {
                    Some(h) => h.0.clone(),
                    // Not an ID of this client: treated as a dma-buf fd to duplicate.
                    None => self.dmabuf_of_fd(a.handle as i32)?,
                };
                let fd = self.dmabuf_fd(buf)?;
                a.size = fd as u32;
                // The fd stays installed if the copy-out faults, as in the kernel.
                write_user(arg, &a)?;
            }
            NVMAP_IOC_FROM_FD => {
                let mut a: nvmap_create_handle = read_user(arg)?;
                let buf = self.dmabuf_of_fd(a.fd())?;
                if buf.handle == 0 {
                    return Err(libc::EINVAL);
                }
                let id = buf.handle;
                let c = self.client(cid)?;
                c.handles.entry(id).or_insert((buf, 0)).1 += 1;
                a.handle = id;
                write_user(arg, &a)?;
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
                let buf = self
                    .client(cid)?
                    .handles
                    .get(&handle)
                    .map(|h| h.0.clone())
                    .ok_or(libc::EINVAL)?;
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
                let buf = self
                    .client(cid)?
                    .handles
                    .get(&a.handle)
                    .map(|h| h.0.clone())
                    .ok_or(libc::EINVAL)?;
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
                // SAFETY: sysconf has no preconditions.
                let (pages, avail, ps) = unsafe {
                    (
                        libc::sysconf(libc::_SC_PHYS_PAGES),
                        libc::sysconf(libc::_SC_AVPHYS_PAGES),
                        libc::sysconf(libc::_SC_PAGESIZE),
                    )
                };
                let ps = ps.max(0) as u64;
                a.total = pages.max(0) as u64 * ps;
                a.free = avail.max(0) as u64 * ps;
                a.largest_free_block = a.free;
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
