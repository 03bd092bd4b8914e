//! TSGs, subcontexts and channels: OPEN_TSG/OPEN_CHANNEL on ctrl, the TSG ioctls and the
//! channel ioctls, with the ordered checks of nvgpu-kernel-interface.md §4.2.

use super::mem::{copy_to_user, DmaBuf};
use super::vm::{Vm, VmMmu};
use super::{get, kernel_oops, put, write_notifier, Obj, State};
use super::{FIRST_USER_SYNCPOINT, GR_CTX_VA_SIZE, NUM_SYNCPOINTS, NUM_TSGS, SYNCPOINT_STRIDE};
use crate::emu::hwif::{HostPtr, HwChannel};
use crate::os::Errno;
use crate::sys::nvgpu::*;
use parking_lot::Mutex;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// The GR runlist (the only one channels are opened on here).
const GR_RUNLIST: u32 = 0;
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
    pub channels: Vec<u32>,
    /// VM per VEID (subcontext).
    pub subctx: Vec<Option<Arc<Vm>>>,
    pub timeslice_us: u32,
    pub runlist: Option<u32>,
    /// GR context VA reserved at the first ALLOC_OBJ_CTX (VM, VA).
    pub gr_ctx: Option<(Arc<Vm>, u64)>,
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
    /// (syncpoint id, GPU VA of its RW page).
    pub syncpt: Option<(u32, u64)>,
    /// (dma-buf, offset) of the error notifier.
    pub notifier: Option<(Arc<DmaBuf>, u64)>,
    pub timeout_ms: u32,
    pub unserviceable: bool,
    pub preempt: (u32, u32),
}

impl Channel {
    /// Work-submit token (`chid | runlist << 16`).
    pub fn token(&self, chid: u32) -> u32 {
        (chid & 0xfff) | (self.runlist & 0x7f) << 16
    }
    fn notifier_ptr(&self) -> Option<HostPtr> {
        let (b, off) = self.notifier.as_ref()?;
        b.host_ptr(*off).map(HostPtr)
    }
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
                subctx: vec![None; max],
                timeslice_us: TIMESLICE_DEFAULT_US,
                runlist: None,
                gr_ctx: None,
            },
        );
        Ok(fd)
    }

    /// OPEN_CHANNEL (§4.2 step 3).
    pub(super) fn open_channel(&mut self, runlist_id: i32) -> Result<RawFd, Errno> {
        let runlist = match runlist_id {
            -1 => GR_RUNLIST,
            r if r == GR_RUNLIST as i32 => GR_RUNLIST,
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
                syncpt: None,
                notifier: None,
                timeout_ms: 0,
                unserviceable: true,
                preempt: (0, 0),
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

    /// Remove a channel from its TSG: it becomes unserviceable and stops running.
    fn unbind_from_tsg(&mut self, chid: u32) {
        self.detach(chid);
        let Some(ch) = self.channels.get_mut(&chid) else {
            return;
        };
        ch.unserviceable = true;
        if let Some(t) = ch.tsg.take() {
            if let Some(tsg) = self.tsgs.get_mut(&t) {
                tsg.channels.retain(|c| *c != chid);
            }
            self.maybe_free_tsg(t);
        }
    }

    /// Channel close: unbind, free the usermode buffers and the syncpoint, drop refs, chid
    /// back to the head of the free list.
    pub(super) fn channel_free(&mut self, chid: u32) {
        self.unbind_from_tsg(chid);
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

    /// Post error `code` on a channel (notifier + unserviceable + dead).
    pub(super) fn post_error(&mut self, chid: u32, code: u32) {
        let Some(ch) = self.channels.get_mut(&chid) else {
            return;
        };
        if let Some(p) = ch.notifier_ptr() {
            write_notifier(p, code);
        }
        ch.unserviceable = true;
        if let Some(um) = &ch.um {
            um.hw.dead.store(true, Ordering::Release);
        }
    }

    /// BIND_CHANNEL_EX / legacy BIND_CHANNEL (§4.2 step 5).
    fn tsg_bind(&mut self, tsg_id: u64, ch_fd: i32, veid: u32) -> Result<(), Errno> {
        let chid = self.chid_of_fd(ch_fd)?;
        if veid >= self.max_veid() {
            return Err(libc::EINVAL);
        }
        let ch = self.channels.get(&chid).ok_or(libc::EINVAL)?;
        // An AS-unbound channel has no VM: it can match no subcontext.
        let ch_vm = ch.vm.clone().ok_or(libc::EINVAL)?;
        let (ch_tsg, ch_runlist) = (ch.tsg, ch.runlist);
        let tsg = self.tsgs.get_mut(&tsg_id).ok_or(libc::EINVAL)?;
        let slot = tsg.subctx.get_mut(veid as usize).ok_or(libc::EINVAL)?;
        if veid == 0 && slot.is_none() {
            *slot = Some(ch_vm.clone());
        }
        match slot {
            Some(v) if Arc::ptr_eq(v, &ch_vm) => {}
            _ => return Err(libc::EINVAL),
        }
        if ch_tsg.is_some() {
            return Err(libc::EINVAL);
        }
        if tsg.runlist.is_some_and(|r| r != ch_runlist) {
            return Err(libc::EINVAL);
        }
        tsg.runlist = Some(ch_runlist);
        tsg.channels.push(chid);
        let ch = self.channels.get_mut(&chid).ok_or(libc::EINVAL)?;
        ch.tsg = Some(tsg_id);
        ch.veid = veid;
        ch.runqueue = u32::from(veid > 0);
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
                let chid = self.chid_of_fd(int_arg(b))?;
                if self.channels.get(&chid).and_then(|c| c.tsg) != Some(id) {
                    return Err(libc::EINVAL);
                }
                self.unbind_from_tsg(chid);
            }
            NVGPU_IOCTL_TSG_ENABLE | NVGPU_IOCTL_TSG_DISABLE | NVGPU_IOCTL_TSG_PREEMPT => {}
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
                let veid = if a.r#type == NVGPU_TSG_SUBCONTEXT_TYPE_SYNC {
                    if tsg.subctx[0].is_some() {
                        return Err(libc::ENOSPC);
                    }
                    0
                } else {
                    match (1..tsg.subctx.len()).find(|&v| tsg.subctx[v].is_none()) {
                        Some(v) => v,
                        None if tsg.subctx[0].is_none() => 0,
                        None => return Err(libc::ENOSPC),
                    }
                };
                tsg.subctx[veid] = Some(vm);
                a.veid = veid as u32;
                put(b, &a);
            }
            NVGPU_TSG_IOCTL_DELETE_SUBCONTEXT => {
                let a: nvgpu_tsg_delete_subcontext_args = get(b)?;
                if a.veid >= self.max_veid() {
                    return Err(libc::EINVAL);
                }
                let busy = {
                    let tsg = self.tsgs.get(&id).ok_or(libc::EINVAL)?;
                    if tsg.subctx[a.veid as usize].is_none() {
                        return Ok(());
                    }
                    tsg.channels
                        .iter()
                        .any(|c| self.channels.get(c).is_some_and(|ch| ch.veid == a.veid))
                };
                if busy {
                    return Err(libc::EINVAL);
                }
                if let Some(t) = self.tsgs.get_mut(&id) {
                    t.subctx[a.veid as usize] = None;
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
            NVGPU_IOCTL_CHANNEL_SET_TIMEOUT => {
                let a: nvgpu_set_timeout_args = get(b)?;
                self.ch(chid)?.timeout_ms = a.timeout;
            }
            NVGPU_IOCTL_CHANNEL_SET_TIMEOUT_EX => {
                let a: nvgpu_set_timeout_ex_args = get(b)?;
                self.ch(chid)?.timeout_ms = a.timeout;
            }
            NVGPU_IOCTL_CHANNEL_GET_TIMEDOUT => {
                let v = u32::from(self.ch(chid)?.dead());
                put(b, &nvgpu_get_param_args { value: v });
            }
            NVGPU_IOCTL_CHANNEL_SUBMIT_GPFIFO => {
                // Usermode channels → EINVAL [SRC submit.c]; a channel with no GPFIFO has
                // nothing to submit to. [INFER]
                return Err(libc::EINVAL);
            }
            NVGPU_IOCTL_CHANNEL_ALLOC_OBJ_CTX => self.alloc_obj_ctx(chid, b)?,
            NVGPU_IOCTL_CHANNEL_SET_ERROR_NOTIFIER => self.set_error_notifier(chid, b)?,
            NVGPU_IOCTL_CHANNEL_ENABLE
            | NVGPU_IOCTL_CHANNEL_DISABLE
            | NVGPU_IOCTL_CHANNEL_PREEMPT => {}
            NVGPU_IOCTL_CHANNEL_FORCE_RESET => {
                if let Some(t) = self.ch(chid)?.tsg {
                    let chans = self
                        .tsgs
                        .get(&t)
                        .map(|t| t.channels.clone())
                        .unwrap_or_default();
                    for c in chans {
                        self.post_error(c, NVGPU_CHANNEL_RESETCHANNEL_VERIF_ERROR);
                    }
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
                let cm = a.compute_preempt_mode;
                let gm = a.graphics_preempt_mode;
                let ok_c = cm == 0
                    || (cm.is_power_of_two() && cm & self.chars.compute_preemption_mode_flags != 0);
                let ok_g = gm == 0
                    || (gm.is_power_of_two()
                        && gm & self.chars.graphics_preemption_mode_flags != 0);
                let ch = self.ch(chid)?;
                if !ok_c || !ok_g || ch.tsg.is_none() {
                    return Err(libc::EINVAL);
                }
                ch.preempt = (gm, cm);
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

    /// ALLOC_OBJ_CTX (§4.2 step 9).
    fn alloc_obj_ctx(&mut self, chid: u32, b: &mut [u8]) -> Result<(), Errno> {
        let a: nvgpu_alloc_obj_ctx_args = get(b)?;
        let ch = self.ch(chid)?;
        let vm = ch.vm.clone().ok_or(libc::EINVAL)?;
        if !VALID_CLASSES.contains(&a.class_num) {
            return Err(libc::EINVAL);
        }
        let tsg_id = ch.tsg.ok_or(libc::EINVAL)?;
        let tsg = self.tsgs.get_mut(&tsg_id).ok_or(libc::EINVAL)?;
        if tsg.gr_ctx.is_none() {
            let va = vm.kernel_reserve(GR_CTX_VA_SIZE)?;
            if va + GR_CTX_VA_SIZE > 1 << 40 {
                kernel_oops(format!(
                    "ALLOC_OBJ_CTX(class={:#x}) on chid {chid}: GR context buffer at GPU VA {va:#x} is not below 2^40 \
                     (kernel VMA starts at {:#x}; a large GPFIFO dma-buf pushed it up). The real driver asserts in \
                     tu104_gr_init_commit_rtv_cb and the board freezes.",
                    a.class_num, vm.end
                ));
            }
            tsg.gr_ctx = Some((vm, va));
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
        // Nothing is written back (obj_id comes back as passed).
        Ok(())
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
        if self.chars.flags & NVGPU_GPU_FLAGS_SUPPORT_USER_SYNCPOINT == 0 {
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
        a.work_submit_token = token;
        a.gpfifo_gpu_va = 0;
        a.userd_gpu_va = 0;
        a.usermode_mmio_gpu_va = 0;
        put(b, &a);
        Ok(())
    }
}
