//! Texture objects: read-only views of buffer memory that kernels sample through the GPU's
//! texture units (`tex1Dfetch`, `tex2D`, ... on a `cudaTextureObject_t` parameter).
//!
//! The device keeps one texture header pool and one sampler pool of [`TEXTURE_POOL_ENTRIES`]
//! 32-byte entries, bound on every compute queue when it is created. A texture object takes one
//! index `i` in both (index 0 stays empty); its handle, the value a kernel receives, is `i`, as
//! libcuda's handles are. A destroyed texture's index is reused only after every queue has passed
//! the work submitted (or recorded) before the destroy, and its entries are cleared then.

use super::buffer::Buffer;
use super::device::Device;
use super::queue::{fence_now, fence_passed, Fence};
use crate::backend::{Allocation, Backend, MemFlags};
use crate::error::{Error, Result, Status};
use crate::hw::texture::{self, TexDesc, TexLayout, ENTRY_BYTES};
use std::sync::Arc;

/// Entries in each pool; handles run from 1 to `TEXTURE_POOL_ENTRIES - 1`.
pub const TEXTURE_POOL_ENTRIES: u32 = 4096;

/// The device's texture header and sampler pools (one allocation: headers, then samplers).
pub(crate) struct TexturePool {
    alloc: Allocation,
    /// Indices free for reuse.
    free: Vec<u32>,
    /// The lowest index never handed out.
    next: u32,
    /// Indices of destroyed textures, with the fence that frees them.
    parked: Vec<(u32, Fence)>,
}

impl TexturePool {
    pub(crate) fn new(backend: &dyn Backend) -> Result<TexturePool> {
        let bytes = 2 * u64::from(TEXTURE_POOL_ENTRIES) * ENTRY_BYTES;
        let alloc = backend.alloc(
            bytes,
            MemFlags {
                write_combined: true,
                zeroed: true,
                ..Default::default()
            },
        )?;
        Ok(TexturePool {
            alloc,
            free: Vec::new(),
            next: 1,
            parked: Vec::new(),
        })
    }

    /// GPU addresses of the header and sampler pools.
    pub(crate) fn addresses(&self) -> (u64, u64) {
        let samplers = u64::from(TEXTURE_POOL_ENTRIES) * ENTRY_BYTES;
        (self.alloc.gpu_va, self.alloc.gpu_va + samplers)
    }

    pub(crate) fn free_memory(&self, backend: &dyn Backend) {
        let _ = backend.free(&self.alloc);
    }

    /// Write the entries of `index` (header and sampler).
    fn write(&self, index: u32, tic: &[u32; 8], tsc: &[u32; 8]) {
        let tic_off = u64::from(index) * ENTRY_BYTES;
        let tsc_off = tic_off + u64::from(TEXTURE_POOL_ENTRIES) * ENTRY_BYTES;
        for (off, words) in [(tsc_off, tsc), (tic_off, tic)] {
            // SAFETY: the pool is CPU-mapped for its whole size; `index` < TEXTURE_POOL_ENTRIES,
            // so the 32 bytes at `off` lie inside it. Volatile: write-combined device memory.
            unsafe {
                let p = self.alloc.cpu.add(off as usize) as *mut u32;
                for (i, w) in words.iter().enumerate() {
                    p.add(i).write_volatile(*w);
                }
            }
        }
        // x86-64: `mfence` drains the write-combining buffers now. aarch64: `dmb ish` orders
        // only for the other CPUs; the GPU reads this memory only for work submitted after it,
        // and that submit's `dsb st` (crate::hw::barrier::before_gp_put, cumulative) makes these
        // stores visible to the GPU first.
        std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
    }

    fn take(&mut self) -> Result<u32> {
        let mut i = 0;
        while i < self.parked.len() {
            if fence_passed(&self.parked[i].1) {
                let (idx, _) = self.parked.swap_remove(i);
                self.write(idx, &[0; 8], &[0; 8]);
                self.free.push(idx);
            } else {
                i += 1;
            }
        }
        if let Some(i) = self.free.pop() {
            return Ok(i);
        }
        if self.next < TEXTURE_POOL_ENTRIES {
            self.next += 1;
            return Ok(self.next - 1);
        }
        Err(Error::new(
            Status::OutOfMemory,
            format!(
                "all {} texture objects of the device are in use (destroyed ones are reused once \
                 the work submitted before their destroy has completed)",
                TEXTURE_POOL_ENTRIES - 1
            ),
        ))
    }
}

/// A texture object. Dropping it destroys it; the buffer it reads stays allocated while the
/// texture exists.
pub struct Texture {
    dev: Device,
    index: u32,
    desc: TexDesc,
    _buf: Arc<Buffer>,
}

impl std::fmt::Debug for Texture {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Texture")
            .field("handle", &self.index)
            .field("desc", &self.desc)
            .finish()
    }
}

impl Texture {
    /// Create a texture over `buf`. The `address` fields of `desc.layout` are byte offsets into
    /// `buf`; the texture must lie inside it, start 32-byte aligned (in GPU address) and, for
    /// 2-D textures, have a pitch that is a multiple of 32 bytes.
    pub(crate) fn new(dev: &Device, buf: Arc<Buffer>, desc: &TexDesc) -> Result<Texture> {
        if !Arc::ptr_eq(&buf.device().inner, &dev.inner) {
            return Err(Error::invalid("buf belongs to another device"));
        }
        let elem = desc.format.bytes() * u64::from(desc.channels);
        let (offset, bytes) = match desc.layout {
            TexLayout::Linear { address, width } => (address, width.saturating_mul(elem)),
            TexLayout::Pitch2d {
                address,
                width,
                height,
                pitch,
            } => (
                address,
                pitch
                    .saturating_mul(height.saturating_sub(1))
                    .saturating_add(width.saturating_mul(elem)),
            ),
        };
        let mut d = *desc;
        let va = buf.gpu_va().checked_add(offset);
        match (&mut d.layout, va) {
            (TexLayout::Linear { address, .. }, Some(va))
            | (TexLayout::Pitch2d { address, .. }, Some(va)) => *address = va,
            (_, None) => return Err(Error::invalid(format!("offset {offset:#x} is too large"))),
        }
        texture::check(&d)?;
        buf.check_range("texture", offset, bytes)?;
        let v2 = dev.inner.tex_header_v2;
        let tic = texture::encode_tic(&d, v2)?;
        let tsc = texture::encode_tsc(&d);
        let mut pool = dev.inner.textures.lock();
        let index = pool.take()?;
        pool.write(index, &tic, &tsc);
        Ok(Texture {
            dev: dev.clone(),
            index,
            desc: d,
            _buf: buf,
        })
    }

    /// The value a kernel receives as its `cudaTextureObject_t` (64-bit) parameter.
    pub fn handle(&self) -> u64 {
        u64::from(self.index)
    }

    /// The description, with the layout's `address` fields as GPU addresses.
    pub fn desc(&self) -> &TexDesc {
        &self.desc
    }
}

impl Drop for Texture {
    fn drop(&mut self) {
        let fence = fence_now(&self.dev);
        self.dev
            .inner
            .textures
            .lock()
            .parked
            .push((self.index, fence));
    }
}
