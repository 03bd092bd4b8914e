//! The channel ioctls: timeouts, ALLOC_OBJ_CTX with its class and preemption-mode checks, the
//! error notifier, the user syncpoint and SETUP_BIND (usermode submit).

use super::{Channel, Usermode};
use crate::emu::hwif::{HostPtr, HwChannel};
use crate::emu::kernel::rc::{Cause, COMPUTE_CILP, COMPUTE_CTA, COMPUTE_WFI};
use crate::emu::kernel::vm::{Vm, VmMmu};
use crate::emu::kernel::{get, kernel_oops, put, State};
use crate::emu::kernel::{FIRST_USER_SYNCPOINT, GR_CTX_VA_SIZE, NUM_SYNCPOINTS, SYNCPOINT_STRIDE};
use crate::os::Errno;
use crate::sys::nvgpu::*;
use parking_lot::Mutex;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// Preemption modes ga10b supports (hal/gr/init/gr_init_gp10b_fusa.c:
/// gp10b_gr_init_get_supported_preemption_modes with CONFIG_NVGPU_GFXP and CONFIG_NVGPU_CILP).
const GRAPHICS_WFI: u32 = NVGPU_GRAPHICS_PREEMPTION_MODE_WFI;
const GRAPHICS_GFXP: u32 = NVGPU_GRAPHICS_PREEMPTION_MODE_GFXP;
const SUPPORTED_GRAPHICS: u32 = GRAPHICS_WFI | GRAPHICS_GFXP;
const SUPPORTED_COMPUTE: u32 = COMPUTE_WFI | COMPUTE_CTA | COMPUTE_CILP;
/// hal/class/class_ga10b.c: ga10b_class_is_valid_compute / _gfx (with the tu104/gv11b ones).
const COMPUTE_CLASSES: &[u32] = &[0xc7c0, 0xc5c0, 0xc3c0];
const GFX_CLASSES: &[u32] = &[0xc797, 0xc597, 0xc397];
/// Engine classes ALLOC_OBJ_CTX accepts on ga10b (Ampere B, plus the older Turing/Volta ones).
const VALID_CLASSES: &[u32] = &[
    0xc7c0, 0xc7b5, 0xc76f, 0xc797,
    0xc637, // Ampere: compute B, DMA copy B, GPFIFO B, 3D B, SMC ref
    0xc5c0, 0xc5b5, 0xc597, 0xc46f, // Turing
    0xc3c0, 0xc3b5, 0xc397, 0xc36f, // Volta
];

fn is_compute(class: u32) -> bool {
    COMPUTE_CLASSES.contains(&class)
}

fn is_gfx(class: u32) -> bool {
    GFX_CLASSES.contains(&class)
}

impl State {
    pub(in crate::emu::kernel) fn channel_ioctl(
        &mut self,
        chid: u32,
        req: u64,
        b: &mut [u8],
    ) -> Result<(), Errno> {
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
