//! TSGs, subcontexts and channels: OPEN_TSG/OPEN_CHANNEL on ctrl, the TSG ioctls and the
//! channel ioctls, with the ordered checks of nvgpu-kernel-interface.md §4.2. What the driver
//! does around them (preemption, TSG abort and recovery, the ctxsw-timeout budget) is in `rc`.
//!
//! The channel ioctls (and the checks of their classes and preemption modes) are in `channel`.

use super::mem::{copy_to_user, DmaBuf};
use super::rc::{self, Cause, COMPUTE_WFI};
use super::vm::Vm;
use super::{get, put, Obj, State, NUM_TSGS};
use crate::emu::hwif::{HostPtr, HwChannel};
use crate::os::Errno;
use crate::sys::nvgpu::*;
use std::os::fd::RawFd;
use std::sync::Arc;
use std::time::Instant;

mod channel;

/// The GR runlist ([SEED]: tokens 0x1ff = chid 511 on runlist 0).
const GR_RUNLIST: u32 = 0;
/// The runlist of the copy engines (LCE). ioctl_channel.c:__gk20a_channel_open accepts every
/// runlist of the GPU instance (grmgr.c:nvgpu_grmgr_is_valid_runlist_id: GR and LCE runlists);
/// the ids come from the hardware's device-info table, which the seeds do not show. [INFER]
const LCE_RUNLIST: u32 = 1;
/// tsg.c:nvgpu_tsg_bind_channel: runlist.get_max_channels_per_tsg() =
/// runlist_ram_gv11b_fusa.c:gv11b_runlist_get_max_channels_per_tsg =
/// hw_ram_ga10b.h ram_rl_entry_tsg_length_max_v() = 0x80.
const MAX_CHANNELS_PER_TSG: usize = 0x80;
/// TSG timeslice default and limits, µs. [INFER: nvgpu's NVGPU_TSG_TIMESLICE_* defaults]
const TIMESLICE_DEFAULT_US: u32 = 1024;
const TIMESLICE_MIN_US: u32 = 1000;
const TIMESLICE_MAX_US: u32 = 50_000;

/// A TSG.
pub(crate) struct Tsg {
    pub fd_open: bool,
    /// Bound channels, in bind order (tsg->ch_list).
    pub channels: Vec<u32>,
    /// tsg->sync_veid: VEID 0 allocated.
    pub sync_veid: bool,
    /// tsg->async_veids: VEID 1.. allocated (index = VEID; index 0 unused).
    pub async_veids: Vec<bool>,
    /// tsg->subctx_vms: the VM of each VEID (None = NULL, also for an allocated VEID whose
    /// first channel had no address space).
    pub subctx_vms: Vec<Option<Arc<Vm>>>,
    pub timeslice_us: u32,
    pub runlist: Option<u32>,
    /// GR context VA reserved at the first ALLOC_OBJ_CTX (VM, VA).
    pub gr_ctx: Option<(Arc<Vm>, u64)>,
    /// nvgpu_gr_ctx_get_ctx_initialized: the first ALLOC_OBJ_CTX completed.
    pub gr_ctx_initialized: bool,
    /// gr_ctx->graphics_preempt_mode / compute_preempt_mode (0 = not set).
    pub graphics_mode: u32,
    pub compute_mode: u32,
    /// The compute preemption mode written into the context image
    /// (ctx.c:nvgpu_gr_ctx_set_preemption_modes writes only CTA and CILP; the image default is
    /// wait-for-idle). This is what a preempt obeys.
    pub image_compute_mode: u32,
    /// A preempt of this TSG timed out and its request is still pending in hardware (since).
    pub ctxsw_pending: Option<Instant>,
    /// ctxsw-timeout accounting of the current stall: (start, periods fired).
    pub stall: Option<(Instant, u64)>,
}

/// The usermode submit state set up by SETUP_BIND.
pub(crate) struct Usermode {
    /// The GPFIFO and USERD dma-bufs, referenced until the channel closes.
    pub _bufs: [Arc<DmaBuf>; 2],
    pub gpfifo_va: u64,
    pub hw: Arc<HwChannel>,
    /// Attached to the GPU model (until close or TSG unbind).
    pub attached: bool,
}

/// A channel.
pub(crate) struct Channel {
    pub runlist: u32,
    pub vm: Option<Arc<Vm>>,
    pub tsg: Option<u64>,
    pub veid: u32,
    pub runqueue: u32,
    pub wdt_enabled: bool,
    pub wdt_timeout_ms: u32,
    pub deterministic: bool,
    pub um: Option<Usermode>,
    pub classes: Vec<u32>,
    /// ch->obj_class: the class of the last ALLOC_OBJ_CTX (0 = none yet).
    pub obj_class: u32,
    /// (syncpoint id, GPU VA of its RW page).
    pub syncpt: Option<(u32, u64)>,
    /// (dma-buf, offset) of the error notifier.
    pub notifier: Option<(Arc<DmaBuf>, u64)>,
    /// ch->ctxsw_timeout_max_ms (SET_TIMEOUT / SET_TIMEOUT_EX; 3000 at open).
    pub ctxsw_timeout_max_ms: u32,
    /// ch->ctxsw_timeout_accumulated_ms.
    pub ctxsw_timeout_accumulated_ms: u32,
    pub unserviceable: bool,
    /// The channel's enable bit (set by SETUP_BIND, TSG enable/disable, CHANNEL_ENABLE/DISABLE).
    pub enabled: bool,
}

impl Channel {
    /// Work-submit token (`chid | runlist << 16`).
    pub fn token(&self, chid: u32) -> u32 {
        (chid & 0xfff) | (self.runlist & 0x7f) << 16
    }
    pub(super) fn notifier_ptr(&self) -> Option<HostPtr> {
        let (b, off) = self.notifier.as_ref()?;
        b.host_ptr(*off).map(HostPtr)
    }
    /// nvgpu_channel_check_unserviceable (the GPU model's dead flag is the hardware side of the
    /// same state).
    fn dead(&self) -> bool {
        self.unserviceable || self.um.as_ref().is_some_and(|u| u.hw.is_dead())
    }
}

impl State {
    fn max_veid(&self) -> u32 {
        self.chars.max_veid_count_per_tsg.max(1)
    }

    /// OPEN_TSG (§4.2 step 1).
    pub(super) fn open_tsg(&mut self, a: &nvgpu_gpu_open_tsg_args) -> Result<RawFd, Errno> {
        let share = a.flags & NVGPU_GPU_IOCTL_OPEN_TSG_FLAGS_SHARE != 0;
        if !share && (a.source_device_instance_id != 0 || a.share_token != 0) {
            return Err(libc::EINVAL);
        }
        if share && (a.source_device_instance_id == 0 || a.share_token == 0) {
            return Err(libc::EINVAL);
        }
        if share {
            // Cross-process TSG sharing is not modelled.
            return Err(libc::ENOSYS);
        }
        if self.tsgs.len() >= NUM_TSGS {
            return Err(libc::ENOMEM);
        }
        let id = super::mem::next_id();
        let fd = self.new_fd(c"nvgpu-tsg", 0, Obj::Tsg(id))?;
        let max = self.max_veid() as usize;
        self.tsgs.insert(
            id,
            Tsg {
                fd_open: true,
                channels: Vec::new(),
                sync_veid: false,
                async_veids: vec![false; max],
                subctx_vms: vec![None; max],
                timeslice_us: TIMESLICE_DEFAULT_US,
                runlist: None,
                gr_ctx: None,
                gr_ctx_initialized: false,
                graphics_mode: 0,
                compute_mode: 0,
                image_compute_mode: COMPUTE_WFI,
                ctxsw_pending: None,
                stall: None,
            },
        );
        Ok(fd)
    }

    /// OPEN_CHANNEL (§4.2 step 3): ioctl_channel.c:__gk20a_channel_open. -1 is the GR runlist;
    /// any other valid runlist of the GPU instance is accepted (GR and the copy engines'); out of
    /// channels → ENOMEM (nvgpu_channel_open_new fails: 512 channels on L4T,
    /// linux-channel.c:nvgpu_channel_get_synpoints).
    pub(super) fn open_channel(&mut self, runlist_id: i32) -> Result<RawFd, Errno> {
        let runlist = match runlist_id {
            -1 => GR_RUNLIST,
            r if r == GR_RUNLIST as i32 || r == LCE_RUNLIST as i32 => r as u32,
            _ => return Err(libc::EINVAL),
        };
        let chid = self.free_chids.pop().ok_or(libc::ENOMEM)?;
        let fd = match self.new_fd(c"nvgpu-channel", 0, Obj::Channel(chid)) {
            Ok(fd) => fd,
            Err(e) => {
                self.free_chids.push(chid);
                return Err(e);
            }
        };
        self.channels.insert(
            chid,
            Channel {
                runlist,
                vm: None,
                tsg: None,
                veid: 0,
                runqueue: 0,
                wdt_enabled: true,
                wdt_timeout_ms: 0,
                deterministic: false,
                um: None,
                classes: Vec::new(),
                obj_class: 0,
                syncpt: None,
                notifier: None,
                ctxsw_timeout_max_ms: rc::DEFAULT_CTXSW_TIMEOUT_MAX_MS,
                ctxsw_timeout_accumulated_ms: 0,
                unserviceable: true,
                enabled: false,
            },
        );
        Ok(fd)
    }

    fn chid_of_fd(&self, fd: i32) -> Result<u32, Errno> {
        match self.fds.get(&fd) {
            Some(Obj::Channel(c)) => Ok(*c),
            _ => Err(libc::EINVAL),
        }
    }

    /// Free a TSG once its fd is closed and no channel is bound.
    pub(super) fn maybe_free_tsg(&mut self, id: u64) {
        let free = self
            .tsgs
            .get(&id)
            .is_some_and(|t| !t.fd_open && t.channels.is_empty());
        if free {
            if let Some(t) = self.tsgs.remove(&id) {
                if let Some((vm, va)) = t.gr_ctx {
                    vm.kernel_release(va);
                }
            }
        }
    }

    /// Detach a channel's usermode state from the GPU model (before anything it uses goes).
    fn detach(&mut self, chid: u32) {
        let Some(ch) = self.channels.get_mut(&chid) else {
            return;
        };
        let vm = ch.vm.clone();
        if let Some(um) = ch.um.as_mut() {
            if um.attached {
                um.attached = false;
                let token = um.hw.token;
                self.gpu.detach_channel(token);
                if let Some(vm) = vm {
                    vm.set_attached(-1);
                }
            }
        }
    }

    /// Take a channel out of its TSG (the tail of tsg.c:nvgpu_tsg_unbind_channel_common:
    /// runlist update, g->ops.channel.unbind, subcontext unbind, list removal, channel
    /// disabled): the GPU no longer runs it.
    pub(super) fn remove_from_tsg(&mut self, tsg_id: u64, chid: u32) {
        self.channel_set_enabled(chid, false);
        self.detach(chid);
        if let Some(ch) = self.channels.get_mut(&chid) {
            ch.tsg = None;
        }
        if let Some(tsg) = self.tsgs.get_mut(&tsg_id) {
            tsg.channels.retain(|c| *c != chid);
        }
        self.maybe_free_tsg(tsg_id);
    }

    /// Channel close: common/fifo/channel.c:channel_free → channel_free_invoke_unbind →
    /// nvgpu_tsg_unbind_channel(force = true) (which may preempt, retry on NEXT and abort the
    /// TSG: see `rc`), then the usermode buffers and the syncpoint go, refs drop, and the chid
    /// returns to the head of the free list.
    pub(super) fn channel_free(&mut self, chid: u32) {
        if let Some(t) = self.channels.get(&chid).and_then(|c| c.tsg) {
            let _ = self.tsg_unbind_channel(t, chid, true);
        }
        self.detach(chid);
        let Some(ch) = self.channels.remove(&chid) else {
            return;
        };
        if let Some(vm) = &ch.vm {
            if let Some(um) = &ch.um {
                vm.kernel_unmap(um.gpfifo_va);
            }
            if let Some((id, va)) = ch.syncpt {
                vm.kernel_unmap(va);
                self.syncpoints.remove(&id);
            }
        }
        drop(ch);
        self.free_chids.push(chid);
    }

    /// A channel error posted by the kernel (FORCE_RESET, an injected error): the channel's TSG
    /// is recovered (tsg.c:nvgpu_tsg_force_reset_ch → nvgpu_tsg_set_error_notifier +
    /// rc.c:nvgpu_rc_tsg_and_related_engines); a channel in no TSG only gets its own.
    pub(super) fn post_error(&mut self, chid: u32, cause: &Cause) {
        match self.channels.get(&chid).and_then(|c| c.tsg) {
            Some(t) => self.recover_tsg(t, cause),
            None => self.recover_channel(chid, cause),
        }
    }

    /// BIND_CHANNEL_EX / legacy BIND_CHANNEL (§4.2 step 5): ioctl_tsg.c:
    /// gk20a_tsg_ioctl_bind_channel_ex (nvgpu_tsg_bind_channel_fd for the legacy one, VEID 0) →
    /// tsg.c:nvgpu_tsg_create_sync_subcontext_internal (VEID 0 unreserved: reserve it with the
    /// channel's VM, even a NULL one; the SYNC VEID already taken → ENOSPC) →
    /// nvgpu_tsg_validate_ch_subctx_vm (ch->vm != subctx_vms[veid] → EINVAL; NULL == NULL) →
    /// nvgpu_tsg_bind_channel (already in a TSG → EINVAL; 128 channels → EINVAL; runlist
    /// differs → EINVAL).
    fn tsg_bind(&mut self, tsg_id: u64, ch_fd: i32, veid: u32) -> Result<(), Errno> {
        let chid = self.chid_of_fd(ch_fd)?;
        if veid >= self.max_veid() {
            return Err(libc::EINVAL);
        }
        let ch = self.channels.get(&chid).ok_or(libc::EINVAL)?;
        let (ch_vm, ch_tsg, ch_runlist) = (ch.vm.clone(), ch.tsg, ch.runlist);
        let tsg = self.tsgs.get_mut(&tsg_id).ok_or(libc::EINVAL)?;
        if veid == 0 && tsg.subctx_vms[0].is_none() {
            if tsg.sync_veid {
                return Err(libc::ENOSPC);
            }
            tsg.sync_veid = true;
            tsg.subctx_vms[0] = ch_vm.clone();
        }
        let same_vm = match (&tsg.subctx_vms[veid as usize], &ch_vm) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            (None, None) => true,
            _ => false,
        };
        if !same_vm {
            return Err(libc::EINVAL);
        }
        if ch_tsg.is_some() {
            return Err(libc::EINVAL);
        }
        if tsg.channels.len() >= MAX_CHANNELS_PER_TSG {
            return Err(libc::EINVAL);
        }
        if tsg.runlist.is_some_and(|r| r != ch_runlist) {
            return Err(libc::EINVAL);
        }
        tsg.runlist = Some(ch_runlist);
        tsg.channels.push(chid);
        let ch = self.channels.get_mut(&chid).ok_or(libc::EINVAL)?;
        ch.tsg = Some(tsg_id);
        // ch->subctx_id; "use runqueue selector 1 for all ASYNC ids" (never reset to 0). (The
        // driver stores the VEID before its checks; here only a successful bind does.)
        ch.veid = veid;
        if veid > 0 {
            ch.runqueue = 1;
        }
        ch.unserviceable = false;
        Ok(())
    }

    pub(super) fn tsg_ioctl(&mut self, id: u64, req: u64, b: &mut [u8]) -> Result<(), Errno> {
        let int_arg = |b: &[u8]| -> i32 { i32::from_ne_bytes([b[0], b[1], b[2], b[3]]) };
        match req {
            NVGPU_TSG_IOCTL_BIND_CHANNEL => self.tsg_bind(id, int_arg(b), 0)?,
            NVGPU_TSG_IOCTL_BIND_CHANNEL_EX => {
                let a: nvgpu_tsg_bind_channel_ex_args = get(b)?;
                self.tsg_bind(id, a.channel_fd, a.subcontext_id)?;
            }
            NVGPU_TSG_IOCTL_UNBIND_CHANNEL => {
                // ioctl_tsg.c:nvgpu_tsg_unbind_channel_fd: -EAGAIN leaves the channel bound and
                // serviceable; otherwise (success or fail_common) it is unserviceable.
                let chid = self.chid_of_fd(int_arg(b))?;
                if self.channels.get(&chid).and_then(|c| c.tsg) != Some(id) {
                    return Err(libc::EINVAL);
                }
                let r = self.tsg_unbind_channel(id, chid, false);
                if r != Err(libc::EAGAIN) {
                    if let Some(ch) = self.channels.get_mut(&chid) {
                        ch.unserviceable = true;
                    }
                }
                r?;
            }
            NVGPU_IOCTL_TSG_ENABLE => self.tsg_set_enabled(id, true),
            NVGPU_IOCTL_TSG_DISABLE => self.tsg_set_enabled(id, false),
            NVGPU_IOCTL_TSG_PREEMPT => self.preempt_tsg(id)?,
            NVGPU_IOCTL_TSG_SET_TIMESLICE => {
                let a: nvgpu_timeslice_args = get(b)?;
                if !(TIMESLICE_MIN_US..=TIMESLICE_MAX_US).contains(&a.timeslice_us) {
                    return Err(libc::EINVAL);
                }
                if let Some(t) = self.tsgs.get_mut(&id) {
                    t.timeslice_us = a.timeslice_us;
                }
            }
            NVGPU_IOCTL_TSG_GET_TIMESLICE => {
                let ts = self
                    .tsgs
                    .get(&id)
                    .map_or(TIMESLICE_DEFAULT_US, |t| t.timeslice_us);
                put(
                    b,
                    &nvgpu_timeslice_args {
                        timeslice_us: ts,
                        reserved: 0,
                    },
                );
            }
            NVGPU_TSG_IOCTL_READ_SINGLE_SM_ERROR_STATE => {
                let a: nvgpu_tsg_read_single_sm_error_state_args = get(b)?;
                if a.sm_id >= self.num_sms() {
                    return Err(libc::EINVAL);
                }
                let rec = nvgpu_tsg_sm_error_state_record::default();
                let n = (a.record_size as usize).min(std::mem::size_of_val(&rec));
                copy_to_user(a.record_mem as usize, &rec.as_bytes()[..n])?;
            }
            NVGPU_TSG_IOCTL_READ_ALL_SM_ERROR_STATES => {
                let a: nvgpu_tsg_read_all_sm_error_state_args = get(b)?;
                let rsz = std::mem::size_of::<nvgpu_tsg_sm_error_state_record>() as u64;
                if a.num_sm != self.num_sms() || a.buffer_size < a.num_sm as u64 * rsz {
                    return Err(libc::EINVAL);
                }
                copy_to_user(
                    a.buffer_mem as usize,
                    &vec![0u8; (a.num_sm as u64 * rsz) as usize],
                )?;
            }
            NVGPU_TSG_IOCTL_CREATE_SUBCONTEXT => {
                // tsg.c:nvgpu_tsg_create_subcontext: SYNC = VEID 0 (taken → ENOSPC); ASYNC = the
                // first free VEID ≥ 1, else the SYNC one, else ENOSPC. The VEID's VM is set only
                // if it has none.
                let mut a: nvgpu_tsg_create_subcontext_args = get(b)?;
                if a.r#type != NVGPU_TSG_SUBCONTEXT_TYPE_SYNC
                    && a.r#type != NVGPU_TSG_SUBCONTEXT_TYPE_ASYNC
                {
                    return Err(libc::EINVAL);
                }
                let vm = match self.fds.get(&a.as_fd) {
                    Some(Obj::As(vm)) => vm.clone(),
                    _ => return Err(libc::EINVAL),
                };
                let tsg = self.tsgs.get_mut(&id).ok_or(libc::EINVAL)?;
                let free_async = (1..tsg.async_veids.len()).find(|&v| !tsg.async_veids[v]);
                let veid = match free_async {
                    Some(v) if a.r#type == NVGPU_TSG_SUBCONTEXT_TYPE_ASYNC => {
                        tsg.async_veids[v] = true;
                        v
                    }
                    _ => {
                        if tsg.sync_veid {
                            return Err(libc::ENOSPC);
                        }
                        tsg.sync_veid = true;
                        0
                    }
                };
                if tsg.subctx_vms[veid].is_none() {
                    tsg.subctx_vms[veid] = Some(vm);
                }
                a.veid = veid as u32;
                put(b, &a);
            }
            NVGPU_TSG_IOCTL_DELETE_SUBCONTEXT => {
                // tsg.c:nvgpu_tsg_user_delete_subcontext: VEID ≥ max → EINVAL; channels bound
                // to it → EINVAL; an unallocated VEID is a no-op.
                let a: nvgpu_tsg_delete_subcontext_args = get(b)?;
                if a.veid >= self.max_veid() {
                    return Err(libc::EINVAL);
                }
                let tsg = self.tsgs.get(&id).ok_or(libc::EINVAL)?;
                let busy = tsg
                    .channels
                    .iter()
                    .any(|c| self.channels.get(c).is_some_and(|ch| ch.veid == a.veid));
                if busy {
                    return Err(libc::EINVAL);
                }
                let t = self.tsgs.get_mut(&id).ok_or(libc::EINVAL)?;
                let v = a.veid as usize;
                let allocated = if v == 0 {
                    t.sync_veid
                } else {
                    t.async_veids[v]
                };
                if allocated {
                    if v == 0 {
                        t.sync_veid = false;
                    } else {
                        t.async_veids[v] = false;
                    }
                    t.subctx_vms[v] = None;
                }
            }
            _ => return Self::unhandled(req),
        }
        Ok(())
    }
}
