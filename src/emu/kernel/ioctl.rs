//! The nvgpu ioctl dispatcher (§1 rules 1-4) and the ctrl, address-space and dma-buf nodes'
//! ioctls. The channel and TSG ioctls are in `fifo`, nvmap's in `nvmap`.

use super::mem::{copy_from_user, copy_to_user, LiveToken};
use super::vm::Vm;
use super::{buddy, get, now_ns, put, read_user, vm, write_user, Obj, State};
use super::{NUM_SYNCPOINTS, SYNCPOINT_STRIDE, ZCULL_CTX_SIZE};
use crate::os::Errno;
use crate::sys::nvgpu::*;
use std::os::fd::RawFd;
use std::sync::Arc;

impl State {
    // ---------------------------------------------------------------------------------------
    // nvgpu dispatcher (§1 rules 1-4)
    // ---------------------------------------------------------------------------------------

    pub(super) fn nvgpu_ioctl(&mut self, obj: &Obj, req: u64, arg: usize) -> Result<i32, Errno> {
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
    pub(super) fn unhandled(req: u64) -> Result<(), Errno> {
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

    pub(super) fn num_sms(&self) -> u32 {
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

    pub(super) fn dmabuf_ioctl(&mut self, req: u64, arg: usize) -> Result<i32, Errno> {
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
