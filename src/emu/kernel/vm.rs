//! An nvgpu VM (address space): user VMA + 4 GiB kernel VMA, each a [`Buddy`] allocator,
//! `MAP_BUFFER_EX` mappings with refcounts, `ALLOC_SPACE` areas, and the kernel's own mappings
//! (GPFIFO rings, syncpoint pages). Implements [`Mmu`] for the GPU model.

use super::buddy::{Buddy, BLOCK};
use super::mem::{DmaBuf, LiveToken};
use crate::emu::hwif::{HostPtr, Mmu};
use crate::os::Errno;
use crate::sys::nvgpu::*;
use crate::sys::nvmap::NVMAP_HANDLE_RO;
use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

/// Size of the kernel-reserved VMA placed directly above the user VMA.
pub const KERNEL_VMA_SIZE: u64 = 1 << 32;
/// How long memory unmapped while channels of the VM are attached stays mapped in the
/// emulator's host address space, so that a GPU access that already translated the address
/// cannot touch unmapped host memory.
const RETIRE_GRACE: Duration = Duration::from_secs(1);

/// One GPU mapping.
#[derive(Debug)]
pub(crate) struct Mapping {
    pub va: u64,
    /// Bytes covered by PTEs.
    pub size: u64,
    pub buf: Arc<DmaBuf>,
    pub buf_offset: u64,
    /// MAP_BUFFER_EX flags as passed (re-map reuse compares them).
    pub flags: u32,
    /// Kind key (compr_kind if != -1, else incompr_kind).
    pub kind: i16,
    pub refs: u32,
    /// VA owned by an ALLOC_SPACE area (FIXED map) rather than by the allocator.
    pub fixed: bool,
    pub writable: bool,
}

/// An ALLOC_SPACE reservation. (SPARSE areas behave like plain ones: an access to an
/// unmapped page in them faults instead of reading zeros.)
#[derive(Debug, Clone, Copy)]
pub(crate) struct Area {
    pub size: u64,
}

/// The mutable part of a VM.
#[derive(Debug)]
pub(crate) struct VmInner {
    pub user: Buddy,
    pub kernel: Buddy,
    pub mappings: BTreeMap<u64, Mapping>,
    pub kmaps: BTreeMap<u64, Mapping>,
    pub areas: BTreeMap<u64, Area>,
    /// Base of the 64 MiB read-only syncpoint window, once mapped.
    pub sync_ro: Option<u64>,
    /// Buffers unmapped while channels were attached (see [`RETIRE_GRACE`]).
    retired: Vec<(Instant, Arc<DmaBuf>)>,
    /// Channels of this VM currently attached to the GPU model.
    pub attached: usize,
}

/// An nvgpu VM. Kept alive by the AS fd, bound channels and TSG subcontexts.
#[derive(Debug)]
pub(crate) struct Vm {
    pub start: u64,
    pub end: u64,
    pub inner: Mutex<VmInner>,
    _live: LiveToken,
}

impl VmInner {
    fn retire(&mut self, buf: Arc<DmaBuf>) {
        if self.attached > 0 {
            self.retired.push((Instant::now(), buf));
        }
    }

    /// Release retired buffers that are past the grace period (all of them when no channel
    /// of this VM is attached).
    pub fn sweep(&mut self) {
        if self.attached == 0 {
            self.retired.clear();
        } else {
            let now = Instant::now();
            self.retired
                .retain(|(t, _)| now.duration_since(*t) < RETIRE_GRACE);
        }
    }

    fn overlaps_mapping(&self, va: u64, size: u64) -> bool {
        let end = va.saturating_add(size);
        if let Some((_, m)) = self.mappings.range(..end).next_back() {
            if m.va + m.size > va {
                return true;
            }
        }
        false
    }

    fn area_containing(&self, va: u64) -> Option<(u64, Area)> {
        let (&s, a) = self.areas.range(..=va).next_back()?;
        (va < s + a.size).then_some((s, *a))
    }
}

impl Vm {
    /// A VM over the user VMA `[start, end)` (validated by the caller) and the kernel VMA
    /// `[end, end + 4 GiB)`.
    pub(crate) fn new(start: u64, end: u64, live: LiveToken) -> Arc<Vm> {
        Arc::new(Vm {
            start,
            end,
            inner: Mutex::new(VmInner {
                user: Buddy::new(start, end),
                kernel: Buddy::new(end, end + KERNEL_VMA_SIZE),
                mappings: BTreeMap::new(),
                kmaps: BTreeMap::new(),
                areas: BTreeMap::new(),
                sync_ro: None,
                retired: Vec::new(),
                attached: 0,
            }),
            _live: live,
        })
    }

    /// MAP_BUFFER_EX checks 2-13 of nvgpu-kernel-interface.md §4.3 (check 1, resolving the fd,
    /// is the caller's). Returns the GPU VA.
    pub(crate) fn map_buffer_ex(
        &self,
        a: &nvgpu_as_map_buffer_ex_args,
        buf: &Arc<DmaBuf>,
    ) -> Result<u64, Errno> {
        let fixed = a.flags & NVGPU_AS_MAP_BUFFER_FLAGS_FIXED_OFFSET != 0;
        // 2. Non-fixed maps take neither an address nor an offset nor a size.
        if !fixed && (a.buffer_offset != 0 || a.offset != 0) {
            return Err(libc::EINVAL);
        }
        if !fixed && a.mapping_size != 0 {
            return Err(libc::EINVAL);
        }
        // 3. Range inside the buffer.
        if a.mapping_size > buf.size || a.buffer_offset > buf.size - a.mapping_size {
            return Err(libc::EINVAL);
        }
        // 4. Access bits and TEGRA_RAW (not supported on ga10b).
        let access = (a.flags >> NVGPU_AS_MAP_BUFFER_FLAGS_ACCESS_BITMASK_OFFSET) & 3;
        if access == 3 || a.flags & NVGPU_AS_MAP_BUFFER_FLAGS_TEGRA_RAW != 0 {
            return Err(libc::EINVAL);
        }
        // 5. "Extra flags".
        if a.flags & !NVGPU_AS_MAP_BUFFER_FLAGS_VALID_MASK != 0 {
            return Err(libc::EINVAL);
        }
        // 6. Read-only buffers.
        let ro_buf = buf
            .backing()
            .is_some_and(|b| b.flags & NVMAP_HANDLE_RO != 0);
        if ro_buf && access == NVGPU_AS_MAP_BUFFER_ACCESS_READ_WRITE {
            return Err(libc::EINVAL);
        }
        let writable = !ro_buf && access != NVGPU_AS_MAP_BUFFER_ACCESS_READ_ONLY;
        // 7.
        if buf.size == 0 {
            return Err(libc::EINVAL);
        }
        let mut g = self.inner.lock();
        g.sweep();
        // 8. Re-map reuse.
        let kind_key = if a.compr_kind != NV_KIND_INVALID {
            a.compr_kind
        } else {
            a.incompr_kind
        };
        if let Some(m) = g.mappings.values_mut().find(|m| {
            m.buf.oid == buf.oid
                && m.kind == kind_key
                && m.flags == a.flags
                && (!fixed || m.va == a.offset)
        }) {
            m.refs += 1;
            return Ok(m.va);
        }
        // Pinning an unallocated nvmap handle fails. [INFER: nvmap's map_dma_buf → -EINVAL]
        if buf.backing().is_none() {
            return Err(libc::EINVAL);
        }
        // 9. 4 KiB PTEs; size = rounded mapping_size or the rest of the buffer.
        if a.buffer_offset % BLOCK != 0 {
            return Err(libc::EINVAL);
        }
        let map_size = if a.mapping_size != 0 {
            a.mapping_size
                .checked_next_multiple_of(BLOCK)
                .ok_or(libc::EINVAL)?
        } else {
            buf.size - a.buffer_offset
        };
        // 10. FIXED: inside an area, aligned, no overlap.
        if fixed {
            if a.offset % BLOCK != 0 || map_size == 0 {
                return Err(libc::EINVAL);
            }
            let end = a.offset.checked_add(map_size).ok_or(libc::EINVAL)?;
            let (s, area) = g.area_containing(a.offset).ok_or(libc::EINVAL)?;
            if end > s + area.size || g.overlaps_mapping(a.offset, map_size) {
                return Err(libc::EINVAL);
            }
        }
        // 11. Kinds: the emulated GPU has no comptags, so the PTE kind is incompr_kind.
        if !(0..=255).contains(&a.incompr_kind) {
            return Err(libc::ENOMEM);
        }
        let va = if fixed {
            a.offset
        } else {
            let va = g.user.alloc(map_size).ok_or(libc::ENOMEM)?;
            if g.overlaps_mapping(va, map_size) {
                // Only possible after FREE_SPACE left a still-referenced mapping behind.
                g.user.free(va);
                return Err(libc::ENOMEM);
            }
            va
        };
        g.mappings.insert(
            va,
            Mapping {
                va,
                size: map_size,
                buf: buf.clone(),
                buf_offset: a.buffer_offset,
                flags: a.flags,
                kind: kind_key,
                refs: 1,
                fixed,
                writable,
            },
        );
        Ok(va)
    }

    /// UNMAP_BUFFER: drop one reference of the mapping starting at `va` (none → no-op).
    pub(crate) fn unmap_buffer(&self, va: u64) {
        let mut g = self.inner.lock();
        let gone = match g.mappings.get_mut(&va) {
            Some(m) => {
                m.refs -= 1;
                m.refs == 0
            }
            None => false,
        };
        if gone {
            if let Some(m) = g.mappings.remove(&va) {
                if !m.fixed {
                    g.user.free(va);
                }
                g.retire(m.buf);
            }
        }
        g.sweep();
    }

    /// ALLOC_SPACE. Returns the area's start.
    pub(crate) fn alloc_space(&self, a: &nvgpu_as_alloc_space_args) -> Result<u64, Errno> {
        if a.page_size as u64 != BLOCK {
            return Err(libc::EINVAL);
        }
        let size = a.pages.checked_mul(BLOCK).ok_or(libc::ENOMEM)?;
        if size == 0 {
            return Err(libc::ENOMEM);
        }
        let mut g = self.inner.lock();
        let start = if a.flags & NVGPU_AS_ALLOC_SPACE_FLAGS_FIXED_OFFSET != 0 {
            if a.o_a % BLOCK != 0 {
                return Err(libc::ENOMEM);
            }
            g.user.alloc_fixed(a.o_a, size).ok_or(libc::ENOMEM)?
        } else {
            g.user.alloc(size).ok_or(libc::ENOMEM)?
        };
        if g.overlaps_mapping(start, size) {
            g.user.free(start);
            return Err(libc::ENOMEM);
        }
        g.areas.insert(start, Area { size });
        Ok(start)
    }

    /// FREE_SPACE: the area containing `offset` (none → no-op) is freed after dropping one
    /// reference of every mapping inside it.
    pub(crate) fn free_space(&self, offset: u64) {
        let mut g = self.inner.lock();
        let Some((s, area)) = g.area_containing(offset) else {
            return;
        };
        let inside: Vec<u64> = g
            .mappings
            .range(s..s + area.size)
            .map(|(&va, _)| va)
            .collect();
        for va in inside {
            let gone = match g.mappings.get_mut(&va) {
                Some(m) => {
                    m.refs -= 1;
                    m.refs == 0
                }
                None => false,
            };
            if gone {
                if let Some(m) = g.mappings.remove(&va) {
                    if !m.fixed {
                        g.user.free(va);
                    }
                    g.retire(m.buf);
                }
            }
        }
        g.areas.remove(&s);
        g.user.free(s);
        g.sweep();
    }

    /// Map `len` bytes of `buf` from byte `buf_offset` into the kernel VMA.
    pub(crate) fn kernel_map(
        &self,
        buf: &Arc<DmaBuf>,
        buf_offset: u64,
        len: u64,
        writable: bool,
    ) -> Result<u64, Errno> {
        let mut g = self.inner.lock();
        let va = g.kernel.alloc(len).ok_or(libc::ENOMEM)?;
        g.kmaps.insert(
            va,
            Mapping {
                va,
                size: len,
                buf: buf.clone(),
                buf_offset,
                flags: 0,
                kind: 0,
                refs: 1,
                fixed: false,
                writable,
            },
        );
        Ok(va)
    }

    /// Undo [`Vm::kernel_map`].
    pub(crate) fn kernel_unmap(&self, va: u64) {
        let mut g = self.inner.lock();
        if let Some(m) = g.kmaps.remove(&va) {
            g.kernel.free(va);
            g.retire(m.buf);
        }
        g.sweep();
    }

    /// Reserve kernel VA without backing (GR context buffers). Returns the VA.
    pub(crate) fn kernel_reserve(&self, len: u64) -> Result<u64, Errno> {
        self.inner.lock().kernel.alloc(len).ok_or(libc::ENOMEM)
    }

    /// Release kernel VA from [`Vm::kernel_reserve`].
    pub(crate) fn kernel_release(&self, va: u64) {
        self.inner.lock().kernel.free(va);
    }

    /// Drop a buffer reference the VM's channels may still be using on the GPU.
    pub(crate) fn retire_buf(&self, buf: Arc<DmaBuf>) {
        let mut g = self.inner.lock();
        g.retire(buf);
        g.sweep();
    }

    /// Count one more / one less attached channel.
    pub(crate) fn set_attached(&self, delta: isize) {
        let mut g = self.inner.lock();
        g.attached = g.attached.saturating_add_signed(delta);
        g.sweep();
    }

    /// Number of live MAP_BUFFER_EX mappings (test/diagnostic aid).
    pub(crate) fn mapping_count(&self) -> usize {
        self.inner.lock().mappings.len()
    }

    fn translate(&self, va: u64, len: u64, write: bool) -> Option<HostPtr> {
        let g = self.inner.lock();
        let len = len.max(1);
        let find = |t: &BTreeMap<u64, Mapping>| -> Option<HostPtr> {
            let (_, m) = t.range(..=va).next_back()?;
            let off = va - m.va;
            if off.checked_add(len)? > m.size || (write && !m.writable) {
                return None;
            }
            let boff = m.buf_offset.checked_add(off)?;
            if boff.checked_add(len)? > m.buf.size {
                return None;
            }
            m.buf.host_ptr(boff).map(HostPtr)
        };
        find(&g.mappings).or_else(|| find(&g.kmaps))
    }
}

/// The GPU's view of a VM. Holds it weakly so that the GPU model never keeps an address space
/// (and its memory) alive after the kernel has torn it down.
pub(crate) struct VmMmu(pub Weak<Vm>);

impl Mmu for VmMmu {
    fn translate(&self, va: u64, len: u64, write: bool) -> Option<HostPtr> {
        self.0.upgrade()?.translate(va, len, write)
    }
}
