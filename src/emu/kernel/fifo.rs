//! TSGs, subcontexts and channels: OPEN_TSG/OPEN_CHANNEL on ctrl, the TSG ioctls and the
//! channel ioctls, with the ordered checks of nvgpu-kernel-interface.md §4.2. What the driver
//! does around them (preemption, TSG abort and recovery, the ctxsw-timeout budget) is in `rc`.

use super::mem::{copy_to_user, DmaBuf};
use super::rc::{self, Cause, COMPUTE_CILP, COMPUTE_CTA, COMPUTE_WFI};
use super::vm::{Vm, VmMmu};
use super::{get, kernel_oops, put, Obj, State};
use super::{FIRST_USER_SYNCPOINT, GR_CTX_VA_SIZE, NUM_SYNCPOINTS, NUM_TSGS, SYNCPOINT_STRIDE};
use crate::emu::hwif::{HostPtr, HwChannel};
use crate::os::Errno;
use crate::sys::nvgpu::*;
use parking_lot::Mutex;
use std::os::fd::RawFd;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Instant;

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
/// Preemption modes ga10b supports (hal/gr/init/gr_init_gp10b_fusa.c:
/// gp10b_gr_init_get_supported_preemption_modes with CONFIG_NVGPU_GFXP and CONFIG_NVGPU_CILP).
const GRAPHICS_WFI: u32 = NVGPU_GRAPHICS_PREEMPTION_MODE_WFI;
const GRAPHICS_GFXP: u32 = NVGPU_GRAPHICS_PREEMPTION_MODE_GFXP;
const SUPPORTED_GRAPHICS: u32 = GRAPHICS_WFI | GRAPHICS_GFXP;
const SUPPORTED_COMPUTE: u32 = COMPUTE_WFI | COMPUTE_CTA | COMPUTE_CILP;
/// hal/class/class_ga10b.c: ga10b_class_is_valid_compute / _gfx (with the tu104/gv11b ones).
const COMPUTE_CLASSES: &[u32] = &[0xc7c0, 0xc5c0, 0xc3c0];
const GFX_CLASSES: &[u32] = &[0xc797, 0xc597, 0xc397];
/// TSG timeslice default and limits, µs. [INFER: nvgpu's NVGPU_TSG_TIMESLICE_* defaults]
const TIMESLICE_DEFAULT_US: u32 = 1024;
const TIMESLICE_MIN_US: u32 = 1000;
const TIMESLICE_MAX_US: u32 = 50_000;
/// Engine classes ALLOC_OBJ_CTX accepts on ga10b (Ampere B, plus the older Turing/Volta ones).
const VALID_CLASSES: &[u32] = &[
    0xc7c0, 0xc7b5, 0xc76f, 0xc797,
    0xc637, // Ampere: compute B, DMA copy B, GPFIFO B, 3D B, SMC ref
    0xc5c0, 0xc5b5, 0xc597, 0xc46f, // Turing
    0xc3c0, 0xc3b5, 0xc397, 0xc36f, // Volta
];

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

fn is_compute(class: u32) -> bool {
    COMPUTE_CLASSES.contains(&class)
}

fn is_gfx(class: u32) -> bool {
    GFX_CLASSES.contains(&class)
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

    pub(super) fn channel_ioctl(&mut self, chid: u32, req: u64, b: &mut [u8]) -> Result<(), Errno> {
        if !self.channels.contains_key(&chid) {
            return Err(libc::ETIMEDOUT);
        }
        match req {
            // ioctl_channel.c: both set ch->ctxsw_timeout_max_ms to any u32 (no limits, any
            // channel, usermode or not); _EX also sets the debug-dump flag (not modelled).
            NVGPU_IOCTL_CHANNEL_SET_TIMEOUT => {
                let a: nvgpu_set_timeout_args = get(b)?;
                self.ch(chid)?.ctxsw_timeout_max_ms = a.timeout;
            }
            NVGPU_IOCTL_CHANNEL_SET_TIMEOUT_EX => {
                let a: nvgpu_set_timeout_ex_args = get(b)?;
                self.ch(chid)?.ctxsw_timeout_max_ms = a.timeout;
            }
            NVGPU_IOCTL_CHANNEL_GET_TIMEDOUT => {
                let v = u32::from(self.ch(chid)?.dead());
                put(b, &nvgpu_get_param_args { value: v });
            }
            NVGPU_IOCTL_CHANNEL_SUBMIT_GPFIFO => {
                // ioctl_channel.c:gk20a_ioctl_channel_submit_gpfifo: unserviceable → ETIMEDOUT
                // first; then usermode channels → EINVAL (submit.c:check_submit_allowed); a
                // channel with no GPFIFO has nothing to submit to.
                if self.ch(chid)?.dead() {
                    return Err(libc::ETIMEDOUT);
                }
                return Err(libc::EINVAL);
            }
            NVGPU_IOCTL_CHANNEL_ALLOC_OBJ_CTX => self.alloc_obj_ctx(chid, b)?,
            NVGPU_IOCTL_CHANNEL_SET_ERROR_NOTIFIER => self.set_error_notifier(chid, b)?,
            NVGPU_IOCTL_CHANNEL_ENABLE => self.channel_set_enabled(chid, true),
            NVGPU_IOCTL_CHANNEL_DISABLE => self.channel_set_enabled(chid, false),
            NVGPU_IOCTL_CHANNEL_PREEMPT => {
                // ioctl_channel.c: disable the TSG (not in one → EINVAL), preempt it (a failure is
                // only logged), enable it again.
                let t = self.ch(chid)?.tsg.ok_or(libc::EINVAL)?;
                self.tsg_set_enabled(t, false);
                let _ = self.preempt_tsg(t);
                self.tsg_set_enabled(t, true);
            }
            NVGPU_IOCTL_CHANNEL_FORCE_RESET => {
                // tsg.c:nvgpu_tsg_force_reset_ch: the whole TSG gets
                // NVGPU_ERR_NOTIFIER_RESETCHANNEL_VERIF_ERROR and is recovered; a channel in no
                // TSG: only logged, returns 0.
                let ch = self.ch(chid)?;
                if let Some(t) = ch.tsg {
                    let what = format!("FORCE_RESET of channel {:#x}", ch.token(chid));
                    self.recover_tsg(
                        t,
                        &Cause {
                            code: NVGPU_CHANNEL_RESETCHANNEL_VERIF_ERROR,
                            address: None,
                            what: &what,
                            recorded: None,
                        },
                    );
                }
            }
            NVGPU_IOCTL_CHANNEL_WDT => {
                let a: nvgpu_channel_wdt_args = get(b)?;
                let ch = self.ch(chid)?;
                let status = a.wdt_status
                    & (NVGPU_IOCTL_CHANNEL_DISABLE_WDT | NVGPU_IOCTL_CHANNEL_ENABLE_WDT);
                if ch.deterministic && status != NVGPU_IOCTL_CHANNEL_DISABLE_WDT {
                    return Err(libc::EINVAL);
                }
                match status {
                    NVGPU_IOCTL_CHANNEL_DISABLE_WDT => ch.wdt_enabled = false,
                    NVGPU_IOCTL_CHANNEL_ENABLE_WDT => ch.wdt_enabled = true,
                    _ => return Err(libc::EINVAL),
                }
                if a.wdt_status & NVGPU_IOCTL_CHANNEL_WDT_FLAG_SET_TIMEOUT != 0 {
                    ch.wdt_timeout_ms = a.timeout_ms;
                }
            }
            NVGPU_IOCTL_CHANNEL_SET_PREEMPTION_MODE => {
                let a: nvgpu_preemption_mode_args = get(b)?;
                self.set_preemption_mode(chid, a.graphics_preempt_mode, a.compute_preempt_mode)?;
            }
            NVGPU_IOCTL_CHANNEL_GET_USER_SYNCPOINT => self.get_user_syncpoint(chid, b)?,
            NVGPU_IOCTL_CHANNEL_SETUP_BIND => self.setup_bind(chid, b)?,
            _ => return Self::unhandled(req),
        }
        Ok(())
    }

    fn ch(&mut self, chid: u32) -> Result<&mut Channel, Errno> {
        self.channels.get_mut(&chid).ok_or(libc::ETIMEDOUT)
    }

    /// ALLOC_OBJ_CTX (§4.2 step 9): common/gr/gr_setup.c:nvgpu_gr_setup_alloc_obj_ctx. No AS →
    /// EINVAL, invalid class → EINVAL (nvgpu_gr_setup_validate_channel_and_class), ch->obj_class
    /// set, no TSG → EINVAL; then the TSG is disabled and preempted — every time, for every class
    /// (CONFIG_NVGPU_NON_FUSA builds skip the early return for non-GR classes) — and a failed
    /// preempt (EBUSY while a wait-for-idle grid runs past 100 ms) fails the call; the TSG is
    /// enabled again either way.
    fn alloc_obj_ctx(&mut self, chid: u32, b: &mut [u8]) -> Result<(), Errno> {
        let a: nvgpu_alloc_obj_ctx_args = get(b)?;
        let ch = self.ch(chid)?;
        let vm = ch.vm.clone().ok_or(libc::EINVAL)?;
        if !VALID_CLASSES.contains(&a.class_num) {
            return Err(libc::EINVAL);
        }
        ch.obj_class = a.class_num;
        let tsg_id = ch.tsg.ok_or(libc::EINVAL)?;
        self.tsg_set_enabled(tsg_id, false);
        let r = self.alloc_obj_ctx_disabled(chid, tsg_id, vm, &a);
        self.tsg_set_enabled(tsg_id, true);
        // Nothing is written back (obj_id comes back as passed).
        r
    }

    /// The part of ALLOC_OBJ_CTX that runs with the TSG disabled.
    fn alloc_obj_ctx_disabled(
        &mut self,
        chid: u32,
        tsg_id: u64,
        vm: Arc<Vm>,
        a: &nvgpu_alloc_obj_ctx_args,
    ) -> Result<(), Errno> {
        self.preempt_tsg(tsg_id)?;
        // tsg.c:nvgpu_tsg_validate_class_veid_pbdma: graphics only on VEID 0, runqueue 0.
        let ch = self.ch(chid)?;
        if is_gfx(a.class_num) && (ch.runqueue != 0 || ch.veid != 0) {
            return Err(libc::EINVAL);
        }
        let tsg = self.tsgs.get_mut(&tsg_id).ok_or(libc::EINVAL)?;
        if tsg.gr_ctx.is_none() {
            let va = vm.kernel_reserve(GR_CTX_VA_SIZE)?;
            tsg.gr_ctx = Some((vm.clone(), va));
            if va + GR_CTX_VA_SIZE > 1 << 40 {
                // hal/gr/init/gr_init_tu104.c:tu104_gr_init_commit_rtv_cb: nvgpu_assert(), which
                // is WARN_ON in the kernel (include/nvgpu/bug.h): the call goes on and succeeds
                // (the seeds' dmesg shows this warning on a board that computed correctly).
                self.klog(format!(
                    "WARNING: at gr_init_tu104.c:191 tu104_gr_init_commit_rtv_cb: ALLOC_OBJ_CTX(class={:#x}) on chid \
                     {chid}: GR context buffers at GPU VA {va:#x} are not below 2^40 (kernel VMA starts at {:#x})",
                    a.class_num, vm.end
                ));
            }
        }
        // common/gr/obj_ctx.c:nvgpu_gr_obj_ctx_init_ctxsw_preemption (GR classes only).
        if is_compute(a.class_num) || is_gfx(a.class_num) {
            let tsg = self.tsgs.get(&tsg_id).ok_or(libc::EINVAL)?;
            let mut g = 0;
            let mut c = 0;
            if a.flags & NVGPU_ALLOC_OBJ_FLAGS_GFXP != 0 {
                g = GRAPHICS_GFXP;
            }
            if a.flags & NVGPU_ALLOC_OBJ_FLAGS_CILP != 0 {
                c = COMPUTE_CILP;
            }
            let set = if tsg.gr_ctx_initialized {
                // gr_setup.c:nvgpu_gr_setup_validate_preemption_mode: modes already set are
                // dropped; nothing left → nothing to do.
                if g == tsg.graphics_mode {
                    g = 0;
                }
                if c == tsg.compute_mode {
                    c = 0;
                }
                g != 0 || c != 0
            } else {
                // nvgpu_gr_obj_ctx_init_ctxsw_preemption_mode: the defaults are wait-for-idle
                // (gr_init_gp10b_fusa.c:gp10b_gr_init_get_default_preemption_modes).
                if c == 0 {
                    c = COMPUTE_WFI;
                }
                if g == 0 {
                    g = GRAPHICS_WFI;
                }
                true
            };
            if set {
                self.set_ctxsw_preemption_mode(tsg_id, chid, a.class_num, g, c)?;
            }
        }
        let ch = self.ch(chid)?;
        if !ch.classes.contains(&a.class_num) {
            ch.classes.push(a.class_num);
        }
        if let Some(um) = &ch.um {
            let mut c = um.hw.classes.lock();
            if !c.contains(&a.class_num) {
                c.push(a.class_num);
            }
        }
        if let Some(t) = self.tsgs.get_mut(&tsg_id) {
            t.gr_ctx_initialized = true;
        }
        Ok(())
    }

    /// common/gr/obj_ctx.c:nvgpu_gr_obj_ctx_set_ctxsw_preemption_mode with
    /// ctx.c:nvgpu_gr_ctx_check_valid_preemption_mode: both modes 0, a mode with no supported bit,
    /// a mode lower than the current one, GFXP with CILP, or CILP in a subcontext configuration
    /// tsg.c:nvgpu_tsg_validate_cilp_config refuses → EINVAL. The compute mode needs a compute
    /// or graphics class (else EINVAL). CTA and CILP are written into the context image
    /// (ctx.c:nvgpu_gr_ctx_set_preemption_modes).
    fn set_ctxsw_preemption_mode(
        &mut self,
        tsg_id: u64,
        chid: u32,
        class: u32,
        g: u32,
        c: u32,
    ) -> Result<(), Errno> {
        let tsg = self.tsgs.get(&tsg_id).ok_or(libc::EINVAL)?;
        let valid = (g != 0 || c != 0)
            && (g == 0 || (g & SUPPORTED_GRAPHICS != 0 && g >= tsg.graphics_mode))
            && (c == 0 || (c & SUPPORTED_COMPUTE != 0 && c >= tsg.compute_mode))
            && !(g == GRAPHICS_GFXP && c == COMPUTE_CILP)
            && ((!is_compute(class) || c != COMPUTE_CILP) && !is_gfx(class)
                || self.cilp_config_ok(tsg_id, chid));
        if !valid {
            return Err(libc::EINVAL);
        }
        let tsg = self.tsgs.get_mut(&tsg_id).ok_or(libc::EINVAL)?;
        if g == GRAPHICS_WFI || g == GRAPHICS_GFXP {
            tsg.graphics_mode = g;
        }
        if !is_compute(class) && !is_gfx(class) {
            return Err(libc::EINVAL);
        }
        tsg.compute_mode = c;
        if c == COMPUTE_CTA || c == COMPUTE_CILP {
            tsg.image_compute_mode = c;
        }
        Ok(())
    }

    /// tsg.c:nvgpu_tsg_validate_cilp_config: CILP is not allowed with graphics on VEID 0 and
    /// compute elsewhere (SCG); channels' classes are their last ALLOC_OBJ_CTX class.
    fn cilp_config_ok(&self, tsg_id: u64, chid: u32) -> bool {
        let Some(tsg) = self.tsgs.get(&tsg_id) else {
            return false;
        };
        let Some(me) = self.channels.get(&chid) else {
            return false;
        };
        let active = |veid0: bool, pred: fn(u32) -> bool| {
            tsg.channels.iter().any(|c| {
                self.channels
                    .get(c)
                    .is_some_and(|ch| (ch.veid == 0) == veid0 && pred(ch.obj_class))
            })
        };
        let veid0_gfx = active(true, is_gfx);
        let veidnz_compute = active(false, is_compute);
        if veid0_gfx && is_compute(me.obj_class) && (me.veid != 0 || veidnz_compute) {
            return false;
        }
        if tsg.compute_mode != COMPUTE_CILP {
            return true;
        }
        if veidnz_compute && is_gfx(me.obj_class) {
            return false;
        }
        true
    }

    /// SET_PREEMPTION_MODE: common/gr/gr_setup.c:nvgpu_gr_setup_set_preemption_mode (the uapi
    /// NVGPU_*_PREEMPTION_MODE_* values equal the driver's). No object class yet → EINVAL; not in
    /// a TSG → EINVAL; the TSG is disabled and preempted (a failed preempt → EBUSY); modes equal
    /// to the current ones are dropped (nothing left → 0); then as at ALLOC_OBJ_CTX.
    fn set_preemption_mode(&mut self, chid: u32, g: u32, c: u32) -> Result<(), Errno> {
        let ch = self.ch(chid)?;
        let class = ch.obj_class;
        if class == 0 || !VALID_CLASSES.contains(&class) {
            return Err(libc::EINVAL);
        }
        let tsg_id = ch.tsg.ok_or(libc::EINVAL)?;
        self.tsg_set_enabled(tsg_id, false);
        let r = self.preempt_tsg(tsg_id).and_then(|()| {
            let tsg = self.tsgs.get(&tsg_id).ok_or(libc::EINVAL)?;
            let g = if g != 0 && g == tsg.graphics_mode {
                0
            } else {
                g
            };
            let c = if c != 0 && c == tsg.compute_mode {
                0
            } else {
                c
            };
            if g == 0 && c == 0 {
                return Ok(());
            }
            self.set_ctxsw_preemption_mode(tsg_id, chid, class, g, c)
        });
        self.tsg_set_enabled(tsg_id, true);
        r
    }

    /// SET_ERROR_NOTIFIER (§4.2 step 10).
    fn set_error_notifier(&mut self, chid: u32, b: &mut [u8]) -> Result<(), Errno> {
        let a: nvgpu_set_error_notifier = get(b)?;
        if a.mem == 0 {
            return Err(libc::EINVAL);
        }
        // The previous notifier is released before validation.
        let found = self.dmabuf_of_fd(a.mem as i32);
        let ch = self.ch(chid)?;
        let old = ch.notifier.take();
        if let Some(um) = &ch.um {
            *um.hw.notifier.lock() = None;
        }
        if let (Some((old, _)), Some(vm)) = (old, ch.vm.clone()) {
            vm.retire_buf(old);
        }
        let buf = found.map_err(|_| libc::EINVAL)?;
        match a
            .offset
            .checked_add(std::mem::size_of::<nvgpu_notification>() as u64)
        {
            Some(end) if end <= buf.size => {}
            _ => return Err(libc::EINVAL),
        }
        let p = buf.host_ptr(a.offset).ok_or(libc::ENOMEM)?;
        // SAFETY: offset + 16 <= size, inside the kernel mapping.
        unsafe { std::ptr::write_bytes(p, 0, std::mem::size_of::<nvgpu_notification>()) };
        let ch = self.ch(chid)?;
        ch.notifier = Some((buf, a.offset));
        if let Some(um) = &ch.um {
            *um.hw.notifier.lock() = Some(HostPtr(p));
        }
        Ok(())
    }

    /// GET_USER_SYNCPOINT (§4.2 step 8).
    fn get_user_syncpoint(&mut self, chid: u32, b: &mut [u8]) -> Result<(), Errno> {
        // ioctl_channel.c:nvgpu_ioctl_channel_get_user_syncpoint: not supported → EINVAL;
        // g->aggressive_sync_destroy_thresh set (platform data: 0 on ga10b, 64 on gk20a) →
        // EINVAL, before looking at the channel; then the channel's syncpoint is made once
        // (none left in the host1x pool → ENOMEM) and its RW page mapped in the kernel VMA.
        if self.chars.flags & NVGPU_GPU_FLAGS_SUPPORT_USER_SYNCPOINT == 0 {
            return Err(libc::EINVAL);
        }
        if self.aggressive_sync_destroy_thresh != 0 {
            return Err(libc::EINVAL);
        }
        let ch = self.ch(chid)?;
        let Some(vm) = ch.vm.clone() else {
            kernel_oops(format!(
                "GET_USER_SYNCPOINT on chid {chid}, which is not bound to an address space: the real driver \
                 dereferences the NULL VM (bind the channel with NVGPU_AS_IOCTL_BIND_CHANNEL first)"
            ));
        };
        let existing = ch.syncpt;
        let (id, va) = match existing {
            Some(s) => s,
            None => {
                self.ensure_sync_ro(&vm)?;
                let id = (FIRST_USER_SYNCPOINT..NUM_SYNCPOINTS)
                    .find(|i| !self.syncpoints.contains(i))
                    .ok_or(libc::ENOMEM)?;
                let ap = self.aperture()?;
                let va =
                    vm.kernel_map(&ap, id as u64 * SYNCPOINT_STRIDE, SYNCPOINT_STRIDE, true)?;
                self.syncpoints.insert(id);
                self.ch(chid)?.syncpt = Some((id, va));
                (id, va)
            }
        };
        let ap = self.aperture()?;
        let value = match ap.host_ptr(id as u64 * SYNCPOINT_STRIDE) {
            // SAFETY: inside the aperture's kernel mapping; u32-aligned (64 KiB stride).
            Some(p) => unsafe { std::ptr::read_volatile(p as *const u32) },
            None => 0,
        };
        put(
            b,
            &nvgpu_get_user_syncpoint_args {
                gpu_va: va,
                syncpoint_id: id,
                syncpoint_max: value,
            },
        );
        Ok(())
    }

    /// SETUP_BIND (§4.2 checks 1-10).
    fn setup_bind(&mut self, chid: u32, b: &mut [u8]) -> Result<(), Errno> {
        let mut a: nvgpu_channel_setup_bind_args = get(b)?;
        let usermode = a.flags & NVGPU_CHANNEL_SETUP_BIND_FLAGS_USERMODE_SUPPORT != 0;
        let det = a.flags & NVGPU_CHANNEL_SETUP_BIND_FLAGS_DETERMINISTIC != 0;
        let n = a.num_gpfifo_entries;
        // 1.
        if (usermode && n < 2) || (!usermode && n < 4) || !n.is_power_of_two() || n > u32::MAX / 8 {
            return Err(libc::EINVAL);
        }
        // 2.
        let ch = self.ch(chid)?;
        if !(2..=1 << 31).contains(&n) {
            return Err(libc::EINVAL);
        }
        let vm = ch.vm.clone().ok_or(libc::EINVAL)?;
        if ch.tsg.is_none() {
            return Err(libc::EINVAL);
        }
        if ch.um.is_some() {
            return Err(libc::EEXIST);
        }
        // 3.
        if det && ch.wdt_enabled {
            return Err(libc::EINVAL);
        }
        // 4.
        if usermode && !det {
            return Err(libc::EINVAL);
        }
        // 5. Not modelled: VPR channels and kernel-mode GPFIFO submission.
        if a.flags & NVGPU_CHANNEL_SETUP_BIND_FLAGS_VPR_ENABLED != 0 || !usermode {
            return Err(libc::ENOSYS);
        }
        // 6.
        if a.gpfifo_dmabuf_fd == 0 || a.userd_dmabuf_fd == 0 {
            return Err(libc::EINVAL);
        }
        if a.userd_dmabuf_offset != 0 || a.gpfifo_dmabuf_offset != 0 {
            return Err(libc::EINVAL);
        }
        // 7. The GPFIFO dma-buf: pinned (allocated), at least max(4096, n*8) bytes.
        let gp = self.dmabuf_of_fd(a.gpfifo_dmabuf_fd)?;
        if gp.backing().is_none() || gp.size < (n as u64 * 8).max(4096) {
            return Err(libc::EINVAL);
        }
        // 9 (validated before 8's mapping so that a failure leaves nothing behind).
        let ud = self.dmabuf_of_fd(a.userd_dmabuf_fd)?;
        let userd = ud.host_ptr(0).ok_or(libc::EINVAL)?;
        // 8. The whole GPFIFO dma-buf, read-only, in the kernel VMA.
        let gpfifo_va = vm
            .kernel_map(&gp, 0, gp.size, false)
            .map_err(|_| libc::ENOMEM)?;
        // 10.
        let ch = self.ch(chid)?;
        let token = ch.token(chid);
        let hw = Arc::new(HwChannel {
            token,
            userd: HostPtr(userd),
            gpfifo_va,
            entries: n,
            mmu: Arc::new(VmMmu(Arc::downgrade(&vm))),
            classes: Mutex::new(ch.classes.clone()),
            notifier: Mutex::new(ch.notifier_ptr()),
            dead: AtomicBool::new(false),
        });
        ch.deterministic = det;
        ch.um = Some(Usermode {
            _bufs: [gp, ud],
            gpfifo_va,
            hw: hw.clone(),
            attached: true,
        });
        vm.set_attached(1);
        self.gpu.attach_channel(hw);
        // nvgpu_channel_setup_bind → g->ops.channel.bind = channel_ga10b_fusa.c:
        // ga10b_channel_bind, which enables the channel.
        self.channel_set_enabled(chid, true);
        a.work_submit_token = token;
        a.gpfifo_gpu_va = 0;
        a.userd_gpu_va = 0;
        a.usermode_mmio_gpu_va = 0;
        put(b, &a);
        Ok(())
    }
}
