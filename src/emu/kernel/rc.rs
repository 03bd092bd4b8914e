//! What the driver does around its channel and TSG ioctls: TSG enable/disable, preemption, TSG
//! abort and recovery (per TSG), and the ctxsw-timeout interrupt with its per-channel budget.
//!
//! Each function names the driver function it models (nvidia-mirror/linux-nvgpu rel-36,
//! 6ecfb593d, paths under drivers/gpu/nvgpu/). The GPU side is [`crate::emu::gpu::Gpu`]:
//! channel enable bits, whether a grid runs on a channel, the NEXT bit.
//!
//! Simplifications: the model's own TSGs run side by side (no time-slicing between them, so only
//! a competing context from [`super::EmuSys::add_competing_context`] or a timed-out preempt makes
//! a context switch pending); CTA preemption waits like wait-for-idle (no CTA boundaries inside a
//! running grid); a grid whose channel is closed while it runs ends with the channel (hardware
//! would run it on to its end or to the ctxsw-timeout recovery of the remaining channels).
//!
//! Time: the driver's timeouts (the 100 ms preempt poll and ctxsw-timeout period, the 2–4 ms
//! unbind retry sleep) run `time_divisor` times faster in wall-clock time when a test asks for it
//! ([`super::EmuSys::set_time_divisor`]); the accounting stays in driver milliseconds (each
//! ctxsw timeout adds 100 ms to a channel's budget whatever the divisor).

use super::{EmuSys, State};
use crate::emu::hwif::{post_notifier_if_empty, GpuFault, HwChannel};
use crate::os::{Errno, KernelFaultRecord};
use crate::sys::nvgpu::*;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

/// include/nvgpu/fifo.h CTXSW_TIMEOUT_PERIOD_MS → g->ctxsw_timeout_period_ms
/// (os/linux/driver_common.c:nvgpu_init_timeout): the preempt poll timeout
/// (common/fifo/preempt.c:nvgpu_preempt_get_timeout) and the hardware ctxsw-timeout period
/// (hal/fifo/ctxsw_timeout_ga10b_fusa.c:ga10b_fifo_ctxsw_timeout_enable).
pub(super) const CTXSW_TIMEOUT_PERIOD_MS: u32 = 100;
/// include/nvgpu/defaults.h NVGPU_DEFAULT_POLL_TIMEOUT_MS: a channel's ctxsw_timeout_max_ms at
/// open (common/fifo/channel.c:nvgpu_channel_open_new → nvgpu_get_poll_timeout).
pub(super) const DEFAULT_CTXSW_TIMEOUT_MAX_MS: u32 = 3000;
/// common/fifo/tsg.c:nvgpu_tsg_unbind_channel: `retries = 10`, `nvgpu_usleep_range(2000, 4000)`.
pub(super) const UNBIND_RETRIES: u32 = 10;

/// Compute preemption modes (include/nvgpu/gr/ctx.h NVGPU_PREEMPTION_MODE_COMPUTE_*, the same
/// values as the uapi NVGPU_COMPUTE_PREEMPTION_MODE_*).
pub(super) const COMPUTE_WFI: u32 = NVGPU_COMPUTE_PREEMPTION_MODE_WFI;
pub(super) const COMPUTE_CTA: u32 = NVGPU_COMPUTE_PREEMPTION_MODE_CTA;
pub(super) const COMPUTE_CILP: u32 = NVGPU_COMPUTE_PREEMPTION_MODE_CILP;

/// Why a TSG is recovered (for the kernel's fault records).
pub(super) struct Cause<'a> {
    pub code: u32,
    pub address: Option<u64>,
    pub what: &'a str,
    /// The channel whose own record already exists (the GPU's fault record).
    pub recorded: Option<u32>,
}

impl State {
    pub(super) fn scaled(&self, d: Duration) -> Duration {
        d / self.time_divisor.max(1)
    }

    fn period(&self) -> Duration {
        self.scaled(Duration::from_millis(u64::from(CTXSW_TIMEOUT_PERIOD_MS)))
    }

    /// A line of the kernel log (what the driver prints with nvgpu_err/nvgpu_warn/WARN_ON).
    pub(super) fn klog(&mut self, line: String) {
        if self.klog.len() >= 4096 {
            self.klog.remove(0);
        }
        self.klog.push(line);
    }

    /// Work-submit tokens of the TSG's channels that are attached to the GPU.
    pub(super) fn tsg_tokens(&self, tsg_id: u64) -> Vec<u32> {
        self.tsgs
            .get(&tsg_id)
            .map(|t| {
                t.channels
                    .iter()
                    .filter_map(|c| self.channels.get(c))
                    .filter_map(|ch| ch.um.as_ref().filter(|u| u.attached).map(|u| u.hw.token))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// A channel's enable bit (hal/fifo/channel_ga10b_fusa.c:ga10b_channel_enable/disable).
    pub(super) fn channel_set_enabled(&mut self, chid: u32, enabled: bool) {
        let Some(ch) = self.channels.get_mut(&chid) else {
            return;
        };
        ch.enabled = enabled;
        if let Some(um) = ch.um.as_ref().filter(|u| u.attached) {
            self.gpu.set_channel_enabled(um.hw.token, enabled);
        }
    }

    /// g->ops.tsg.enable / disable: common/fifo/tsg.c:nvgpu_tsg_disable and
    /// hal/fifo/tsg_gv11b_fusa.c:gv11b_tsg_enable (every channel of the TSG, whatever its state).
    pub(super) fn tsg_set_enabled(&mut self, tsg_id: u64, enabled: bool) {
        let chans = self
            .tsgs
            .get(&tsg_id)
            .map(|t| t.channels.clone())
            .unwrap_or_default();
        for c in chans {
            self.channel_set_enabled(c, enabled);
        }
    }

    /// common/fifo/preempt.c:nvgpu_fifo_preempt_tsg with hal/fifo/preempt_gv11b_fusa.c:
    /// gv11b_fifo_is_preempt_pending. A TSG never bound to a runlist succeeds at once. The
    /// context is saved when the engine reaches the point its compute preemption mode allows:
    /// with CILP at once (mid-grid); with wait-for-idle (ga10b's default,
    /// hal/gr/init/gr_init_gp10b_fusa.c:gp10b_gr_init_get_default_preemption_modes) only when no
    /// grid of the TSG runs. CTA is modelled like wait-for-idle: the model has no CTA boundaries
    /// inside a running grid. The engine poll gives up after ctxsw_timeout_period_ms with -EBUSY
    /// (gv11b_fifo_preempt_poll_eng); the request stays pending in hardware, so the
    /// ctxsw-timeout interrupt keeps firing for the TSG while the grid runs ("ctxsw timeout will
    /// trigger recovery if needed").
    pub(super) fn preempt_tsg(&mut self, tsg_id: u64) -> Result<(), Errno> {
        let Some(t) = self.tsgs.get(&tsg_id) else {
            return Ok(());
        };
        if t.runlist.is_none() || t.image_compute_mode == COMPUTE_CILP {
            return Ok(());
        }
        let tokens = self.tsg_tokens(tsg_id);
        let deadline = Instant::now() + self.period();
        loop {
            if tokens.iter().all(|t| self.gpu.grid_running(*t).is_none()) {
                return Ok(());
            }
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            std::thread::sleep((deadline - now).min(Duration::from_micros(500)));
        }
        self.klog(format!(
            "nvgpu: preempt timed out for tsg {tsg_id:#x}, ctxsw timeout will trigger recovery if needed"
        ));
        if let Some(t) = self.tsgs.get_mut(&tsg_id) {
            t.ctxsw_pending.get_or_insert(Instant::now());
        }
        self.ensure_isr();
        Err(libc::EBUSY)
    }

    /// common/fifo/tsg.c:nvgpu_tsg_abort: disable the TSG, optionally preempt it (its result is
    /// ignored), and make every channel unserviceable. No error notifier is written; the TSG
    /// stays disabled.
    pub(super) fn tsg_abort(&mut self, tsg_id: u64, preempt: bool) {
        self.tsg_set_enabled(tsg_id, false);
        if preempt {
            let _ = self.preempt_tsg(tsg_id);
        }
        let chans = self
            .tsgs
            .get(&tsg_id)
            .map(|t| t.channels.clone())
            .unwrap_or_default();
        for c in chans {
            if let Some(ch) = self.channels.get_mut(&c) {
                ch.unserviceable = true;
            }
        }
    }

    /// Recover a TSG after an error: common/fifo/tsg.c:nvgpu_tsg_set_error_notifier (every
    /// channel, only if its notifier is empty: os/linux/linux-channel.c:
    /// nvgpu_set_err_notifier_if_empty) and common/rc/rc.c:nvgpu_rc_tsg_and_related_engines /
    /// hal/rc/rc_gv11b.c (TSG disabled, every channel marked in error = unserviceable, the TSG
    /// taken off the runlist and its engine reset, which ends a running grid). Its channels never
    /// run again: a doorbell does nothing, SUBMIT_GPFIFO returns ETIMEDOUT, GET_TIMEDOUT says 1.
    pub(super) fn recover_tsg(&mut self, tsg_id: u64, cause: &Cause) {
        let chans = self
            .tsgs
            .get(&tsg_id)
            .map(|t| t.channels.clone())
            .unwrap_or_default();
        self.tsg_set_enabled(tsg_id, false);
        for c in chans {
            self.recover_channel(c, cause);
        }
        if let Some(t) = self.tsgs.get_mut(&tsg_id) {
            t.ctxsw_pending = None;
            t.stall = None;
        }
    }

    /// The part of a recovery that concerns one channel.
    pub(super) fn recover_channel(&mut self, chid: u32, cause: &Cause) {
        let Some(ch) = self.channels.get_mut(&chid) else {
            return;
        };
        if let Some(p) = ch.notifier_ptr() {
            post_notifier_if_empty(p, cause.code);
        }
        ch.unserviceable = true;
        let token = ch.token(chid);
        if let Some(um) = &ch.um {
            um.hw.dead.store(true, std::sync::atomic::Ordering::Release);
        }
        if cause.recorded != Some(token) {
            self.kernel_faults.push(KernelFaultRecord {
                token,
                address: cause.address,
                code: cause.code,
                what: cause.what.to_string(),
            });
        }
    }

    /// The GPU's fault interrupt: the faulting channel is already dead and notified; recover its
    /// TSG (MMU faults: hal/rc/rc_gv11b.c → nvgpu_tsg_set_ctx_mmu_error; GR exceptions:
    /// common/gr/gr_intr.c:nvgpu_gr_intr_set_error_notifier + rc.c:nvgpu_rc_gr_fault; PBDMA
    /// errors: rc.c:nvgpu_rc_pbdma_fault — all per TSG).
    pub(super) fn gpu_fault(&mut self, f: &GpuFault, hw: &Arc<HwChannel>) {
        // The channel that raised it: one closed since may have left its token to a new channel,
        // which is not recovered for it. The driver recovers the TSG the fault names when it is
        // raised (common/rc/rc.c:nvgpu_rc_mmu_fault, id and id_type from the fault info), and a
        // closed channel's faults go with it.
        let Some((&chid, ch)) = self.channels.iter().find(|(c, ch)| {
            ch.token(**c) == f.token && ch.um.as_ref().is_some_and(|u| Arc::ptr_eq(&u.hw, hw))
        }) else {
            return;
        };
        let what = format!(
            "TSG recovery after a fault of channel {:#x}: {}",
            f.token, f.what
        );
        let cause = Cause {
            code: f.code,
            address: f.address,
            what: &what,
            recorded: Some(f.token),
        };
        match ch.tsg {
            Some(t) => self.recover_tsg(t, &cause),
            None => self.recover_channel(chid, &cause),
        }
    }

    /// Start the ctxsw-timeout interrupt thread if it is not running (it runs while a context
    /// competes or a preempt request is pending).
    pub(super) fn ensure_isr(&mut self) {
        if self.isr_running {
            return;
        }
        let me = self.me.clone();
        let spawned = std::thread::Builder::new()
            .name("emu-ctxsw-isr".into())
            .spawn(move || isr_thread(me));
        self.isr_running = spawned.is_ok();
    }

    /// One pass of the ctxsw-timeout interrupt: hal/fifo/ctxsw_timeout_ga10b_fusa.c:
    /// ga10b_fifo_ctxsw_timeout_isr. The hardware fires every ctxsw_timeout_period_ms while a
    /// context-switch request away from a busy TSG is not acknowledged: another context
    /// competes (or a preempt timed out) and the TSG's running grid cannot be saved before it
    /// ends (wait-for-idle/CTA; CILP saves at once, so it never fires). Each firing is
    /// tsg.c:nvgpu_tsg_check_ctxsw_timeout. Returns whether the thread must keep running.
    pub(super) fn ctxsw_timeout_tick(&mut self) -> bool {
        let now = Instant::now();
        let period = self.period();
        let mut ids: Vec<u64> = self.tsgs.keys().copied().collect();
        ids.sort_unstable();
        for id in ids {
            let grid_start = self
                .tsg_tokens(id)
                .iter()
                .filter_map(|t| self.gpu.grid_started(*t))
                .min();
            let competing = self.competing_since;
            let Some(t) = self.tsgs.get_mut(&id) else {
                continue;
            };
            let cilp = t.image_compute_mode == COMPUTE_CILP;
            let Some(grid_start) = grid_start.filter(|_| !cilp) else {
                // The engine is idle (or saved mid-grid): a pending preempt completes.
                t.ctxsw_pending = None;
                t.stall = None;
                continue;
            };
            let request = match (competing, t.ctxsw_pending) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            let Some(request) = request else {
                t.stall = None;
                continue;
            };
            let start = grid_start.max(request);
            let fired = match t.stall {
                Some((s, n)) if s == start => n,
                _ => 0,
            };
            let due =
                (now.saturating_duration_since(start).as_nanos() / period.as_nanos().max(1)) as u64;
            t.stall = Some((start, due.max(fired)));
            for _ in fired..due {
                if self.check_ctxsw_timeout(id) {
                    break;
                }
            }
        }
        self.competitors > 0 || self.tsgs.values().any(|t| t.ctxsw_pending.is_some())
    }

    /// One ctxsw timeout of a TSG: tsg.c:nvgpu_tsg_check_ctxsw_timeout →
    /// channel.c:nvgpu_channel_update_and_check_ctxsw_timeout for each channel in order. A
    /// usermode-submit channel never shows progress, so its ctxsw_timeout_accumulated_ms only
    /// grows (by ctxsw_timeout_period_ms each time, for the channel's whole life); a channel
    /// without a GPFIFO never advances GP_GET either. The first channel past its
    /// ctxsw_timeout_max_ms makes rc.c:nvgpu_rc_ctxsw_timeout recover the TSG with
    /// NVGPU_ERR_NOTIFIER_FIFO_ERROR_IDLE_TIMEOUT (8). Returns whether it recovered.
    fn check_ctxsw_timeout(&mut self, tsg_id: u64) -> bool {
        let chans = self
            .tsgs
            .get(&tsg_id)
            .map(|t| t.channels.clone())
            .unwrap_or_default();
        let mut over = None;
        for c in chans {
            let Some(ch) = self.channels.get_mut(&c) else {
                continue;
            };
            ch.ctxsw_timeout_accumulated_ms = ch
                .ctxsw_timeout_accumulated_ms
                .saturating_add(CTXSW_TIMEOUT_PERIOD_MS);
            if ch.ctxsw_timeout_accumulated_ms > ch.ctxsw_timeout_max_ms {
                over = Some((ch.token(c), ch.ctxsw_timeout_accumulated_ms));
                break;
            }
        }
        let Some((token, ms)) = over else {
            return false;
        };
        let what =
            format!("ctxsw timeout error: tsg {tsg_id:#x}, channel {token:#x} accumulated {ms} ms");
        self.klog(format!("nvgpu: {what}"));
        self.recover_tsg(
            tsg_id,
            &Cause {
                code: NVGPU_CHANNEL_FIFO_ERROR_IDLE_TIMEOUT,
                address: None,
                what: &what,
                recorded: None,
            },
        );
        true
    }

    /// common/fifo/tsg.c:nvgpu_tsg_unbind_channel. `force` (channel close) retries an unbind
    /// that fails with -EAGAIN (the NEXT bit) 10 times, 2–4 ms apart; without it (the
    /// UNBIND_CHANNEL ioctl) -EAGAIN goes back to userspace. Any other failure, or -EAGAIN after
    /// the retries, is fail_common: nvgpu_tsg_abort(tsg, preempt = true), then the channel is
    /// taken out of the TSG anyway.
    pub(super) fn tsg_unbind_channel(
        &mut self,
        tsg_id: u64,
        chid: u32,
        force: bool,
    ) -> Result<(), Errno> {
        let mut r = Ok(());
        for _ in 0..=UNBIND_RETRIES {
            r = self.unbind_channel_common(tsg_id, chid);
            if r != Err(libc::EAGAIN) {
                break;
            }
            if !force {
                return r;
            }
            // usleep_range(2000, 4000).
            let us = 2000 + u64::from(chid % 8) * 250;
            std::thread::sleep(self.scaled(Duration::from_micros(us)));
        }
        if let Err(e) = r {
            let token = self.channels.get(&chid).map_or(0, |c| c.token(chid));
            self.klog(format!(
                "nvgpu: unbind common failed, err={}; channel {token:#x} unbind failed, tearing down TSG {tsg_id:#x}",
                -e
            ));
            self.tsg_abort(tsg_id, true);
            self.remove_from_tsg(tsg_id, chid);
        }
        r
    }

    /// common/fifo/tsg.c:nvgpu_tsg_unbind_channel_common: disable and preempt the TSG; in a
    /// multi-channel TSG whose channel is not timed out, a set NEXT bit is -EAGAIN
    /// (hal/fifo/tsg_ga10b.c:ga10b_tsg_unbind_channel_check_hw_next). Then the channel leaves
    /// the runlist and the TSG, and the TSG is enabled again unless the channel had timed out.
    fn unbind_channel_common(&mut self, tsg_id: u64, chid: u32) -> Result<(), Errno> {
        let Some(ch) = self.channels.get(&chid) else {
            return Ok(());
        };
        let timed_out = ch.unserviceable;
        let token = ch.um.as_ref().filter(|u| u.attached).map(|u| u.hw.token);
        self.tsg_set_enabled(tsg_id, false);
        if let Err(e) = self.preempt_tsg(tsg_id) {
            if !timed_out {
                self.tsg_set_enabled(tsg_id, true);
            }
            return Err(e);
        }
        let multi = self.tsgs.get(&tsg_id).is_some_and(|t| t.channels.len() > 1);
        if multi && !timed_out && token.is_some_and(|t| self.gpu.read_next_bit(t)) {
            self.klog(format!(
                "nvgpu: channel {:#x} to be removed from TSG {tsg_id:#x} has NEXT set!",
                token.unwrap_or(0)
            ));
            self.tsg_set_enabled(tsg_id, true);
            return Err(libc::EAGAIN);
        }
        self.remove_from_tsg(tsg_id, chid);
        if !timed_out {
            self.tsg_set_enabled(tsg_id, true);
        }
        Ok(())
    }
}

/// The ctxsw-timeout interrupt thread: a pass every half period while a context competes or a
/// preempt request is pending; it ends with the emulated kernel or when nothing is pending.
fn isr_thread(me: Weak<EmuSys>) {
    loop {
        let period = match me.upgrade() {
            Some(sys) => sys.state.lock().period(),
            None => return,
        };
        std::thread::sleep((period / 2).max(Duration::from_micros(500)));
        let Some(sys) = me.upgrade() else { return };
        let mut st = sys.state.lock();
        if !st.ctxsw_timeout_tick() {
            st.isr_running = false;
            return;
        }
    }
}
