//! What the nvgpu driver does *around* its ioctls (issue 31), checked on the emulated Orin through
//! the raw ioctl interface (as tests/emu_kernel.rs does) plus hand-built pushbuffers and QMDs (as
//! tests/emu_gpu.rs does). Every expectation comes from the rel-36 driver source
//! (nvidia-mirror/linux-nvgpu 6ecfb593d); the function is named beside each test.
//!
//! A grid that runs for a controllable time is `rules_spin`, a reference kernel registered here:
//! it marks `*started = 1`, then keeps running until `*flag != 0` or `max_ns` have passed.
//! Timeouts of the emulated driver are shortened with `EmuSys::set_time_divisor` where a test
//! would otherwise wait seconds; the driver's accounting (milliseconds) is unchanged.

use std::cell::Cell;
use std::ffi::CStr;
use std::sync::atomic::{fence, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Once};
use std::time::{Duration, Instant};
use tegragpu::emu::hwif::MmuFault;
use tegragpu::emu::kernels::{GpuMem, LaunchCtx};
use tegragpu::emu::EmuSys;
use tegragpu::os::Sys;
use tegragpu::sys::nvgpu::*;
use tegragpu::sys::nvmap::*;

#[path = "emu_driver_rules/rig.rs"]
mod rig;

use rig::{ioc, sem_release, wait_for, word, Rig};

/// Tests time ioctls and count fds: run them one at a time.
static SERIAL: Mutex<()> = Mutex::new(());
fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

const CTRL: &CStr = c"/dev/nvgpu/igpu0/ctrl";
const NVMAP: &CStr = c"/dev/nvmap";
const COMPUTE: u32 = 0xc7c0;
const COPY: u32 = 0xc7b5;
const UM_FLAGS: u32 =
    NVGPU_CHANNEL_SETUP_BIND_FLAGS_DETERMINISTIC | NVGPU_CHANNEL_SETUP_BIND_FLAGS_USERMODE_SUPPORT;
/// ctxsw_timeout_period_ms (include/nvgpu/fifo.h CTXSW_TIMEOUT_PERIOD_MS): also the preempt timeout.
const PERIOD: Duration = Duration::from_millis(100);

// ------------------------------------------------------------------------------------------
// Rule 1: TSG disable + preempt on ALLOC_OBJ_CTX and on channel close
// ------------------------------------------------------------------------------------------

/// gr_setup.c:nvgpu_gr_setup_alloc_obj_ctx disables and preempts the TSG; with flags 0 ga10b's
/// compute preemption is wait-for-idle (gr_init_gp10b_fusa.c:
/// gp10b_gr_init_get_default_preemption_modes), so the preempt waits for the running grid and
/// gives up after ctxsw_timeout_period_ms = 100 ms (preempt_gv11b_fusa.c:
/// gv11b_fifo_preempt_poll_eng → -EBUSY; preempt.c:nvgpu_fifo_preempt_tsg returns it).
#[test]
fn rule1_alloc_obj_ctx_waits_for_the_running_grid_then_fails_with_ebusy() {
    let _g = serial();
    let r = Rig::new();
    let tsg = r.open_tsg();
    let a = r.compute_chan(tsg, 0);
    let spin = r.launch_spin(&a, Duration::from_secs(20));
    spin.wait_started();
    let b = r.chan(tsg);
    let t = Instant::now();
    assert_eq!(r.alloc_obj(b.fd, COMPUTE, 0), Err(libc::EBUSY));
    let took = t.elapsed();
    // (A lower bound only: the preempt waited its 100 ms; load can only make it later.)
    assert!(
        took >= PERIOD,
        "the preempt gives up after 100 ms, took {took:?}"
    );
    // The failed preempt kills nothing: the grid runs on, the TSG is enabled again.
    assert_eq!((r.timed_out(a.fd), r.timed_out(b.fd)), (0, 0));
    assert!(!spin.done());
    spin.release();
    wait_for("the grid to end", Duration::from_secs(5), || spin.done());
    // Idle: the preempt succeeds at once.
    let t = Instant::now();
    assert_eq!(r.alloc_obj(b.fd, COMPUTE, 0), Ok(0));
    let _ = t;
}

/// A grid that ends within the 100 ms is waited for: the preempt then succeeds.
#[test]
fn rule1_alloc_obj_ctx_waits_for_a_short_grid() {
    let _g = serial();
    let r = Rig::new();
    let tsg = r.open_tsg();
    let a = r.compute_chan(tsg, 0);
    let b = r.chan(tsg);
    // A 15 ms grid, well inside the 100 ms. A loaded machine (CI runs this under qemu on two
    // cores) can still stretch it past the preempt's timeout: such a try must then have waited
    // the whole timeout and failed with EBUSY, as the driver does, and the test tries again.
    for attempt in 1..=5 {
        let spin = r.launch_spin(&a, Duration::from_millis(15));
        spin.wait_started();
        let t = Instant::now();
        let got = r.alloc_obj(b.fd, COMPUTE, 0);
        let took = t.elapsed();
        let running = r.s.gpu().grid_running(a.token).is_some();
        wait_for("the release after the grid", Duration::from_secs(5), || {
            spin.done()
        });
        match got {
            Ok(0) => {
                assert!(!running, "the preempt returned while the grid ran");
                return;
            }
            Err(e) if e == libc::EBUSY => assert!(
                took >= PERIOD,
                "try {attempt}: EBUSY after {took:?}, before the 100 ms timeout"
            ),
            other => panic!("try {attempt}: ALLOC_OBJ_CTX answered {other:?}"),
        }
    }
    panic!("5 tries: the preempt never waited out a 15 ms grid");
}

/// channel.c:channel_free_invoke_unbind → tsg.c:nvgpu_tsg_unbind_channel(force=true) →
/// nvgpu_tsg_unbind_channel_common: disable + preempt; the preempt fails (-EBUSY), so
/// fail_common runs nvgpu_tsg_abort(g, tsg, true): every channel of the TSG becomes unserviceable
/// (GET_TIMEDOUT = 1) and the TSG stays disabled. nvgpu_tsg_abort writes no error notifier.
#[test]
fn rule1_closing_an_idle_channel_while_a_grid_runs_aborts_the_tsg() {
    let _g = serial();
    let r = Rig::new();
    let tsg = r.open_tsg();
    let a = r.compute_chan(tsg, 0);
    let b = r.compute_chan(tsg, 0);
    let other_tsg = r.open_tsg();
    let c = r.compute_chan(other_tsg, 0);
    let spin = r.launch_spin(&a, Duration::from_secs(20));
    spin.wait_started();
    let t = Instant::now();
    r.s.close(b.fd).unwrap();
    let took = t.elapsed();
    // Two preempts time out: the unbind's and nvgpu_tsg_abort's.
    assert!(took >= PERIOD * 2, "close took {took:?}");
    assert_eq!(r.timed_out(a.fd), 1, "the running channel is unserviceable");
    assert_eq!(r.notifier(&a).1, 0, "nvgpu_tsg_abort writes no notifier");
    assert_eq!(r.timed_out(c.fd), 0, "another TSG is not touched");
    // The TSG is disabled: the grid finishes, but A fetches nothing after it.
    spin.release();
    std::thread::sleep(PERIOD);
    assert!(!spin.done(), "a disabled channel runs no further methods");
    let w = r.release_word(&c);
    wait_for("the other TSG to run", Duration::from_secs(5), || {
        word(w) == 1
    });
}

/// CILP (NVGPU_ALLOC_OBJ_FLAGS_CILP at the TSG's first ALLOC_OBJ_CTX, obj_ctx.c:
/// nvgpu_gr_obj_ctx_init_ctxsw_preemption_mode) saves the context mid-grid: the preempt succeeds
/// at once and nothing is aborted.
#[test]
fn rule1_with_cilp_the_preempt_succeeds_while_a_grid_runs() {
    let _g = serial();
    let r = Rig::new();
    let tsg = r.open_tsg();
    let a = r.compute_chan(tsg, NVGPU_ALLOC_OBJ_FLAGS_CILP);
    let spin = r.launch_spin(&a, Duration::from_secs(20));
    spin.wait_started();
    let b = r.chan(tsg);
    let t = Instant::now();
    assert_eq!(r.alloc_obj(b.fd, COMPUTE, 0), Ok(0));
    r.s.close(b.fd).unwrap();
    let _ = t;
    assert_eq!(r.timed_out(a.fd), 0);
    spin.release();
    wait_for("the grid to end", Duration::from_secs(5), || spin.done());
}

/// gr_setup.c:nvgpu_gr_setup_set_preemption_mode: needs an object class (ALLOC_OBJ_CTX first,
/// else EINVAL) and uses the channel's *last* one (ch->obj_class): after compute then copy, a
/// compute mode is EINVAL (obj_ctx.c:nvgpu_gr_obj_ctx_set_compute_preemption_mode wants a compute
/// or graphics class). It preempts the TSG itself (so it fails with EBUSY while a wait-for-idle
/// grid runs), and ctx.c:nvgpu_gr_ctx_check_valid_preemption_mode refuses a mode lower than the
/// current one (EINVAL). Compute = CILP then makes preempts succeed mid-grid.
#[test]
fn rule1_set_preemption_mode_cilp() {
    let _g = serial();
    let r = Rig::new();
    let tsg = r.open_tsg();
    let a = r.chan(tsg);
    let cilp = NVGPU_COMPUTE_PREEMPTION_MODE_CILP;
    assert_eq!(
        r.set_preemption_mode(a.fd, 0, cilp),
        Err(libc::EINVAL),
        "no object class yet"
    );
    r.alloc_obj(a.fd, COMPUTE, 0).unwrap();
    r.alloc_obj(a.fd, COPY, 0).unwrap();
    assert_eq!(
        r.set_preemption_mode(a.fd, 0, cilp),
        Err(libc::EINVAL),
        "the channel's object class is now the copy class"
    );
    r.alloc_obj(a.fd, COMPUTE, 0).unwrap();
    let spin = r.launch_spin(&a, Duration::from_secs(20));
    spin.wait_started();
    assert_eq!(
        r.set_preemption_mode(a.fd, 0, cilp),
        Err(libc::EBUSY),
        "its own preempt waits for the grid"
    );
    spin.release();
    wait_for("the grid to end", Duration::from_secs(5), || spin.done());
    assert_eq!(r.set_preemption_mode(a.fd, 0, cilp), Ok(0));
    assert_eq!(
        r.set_preemption_mode(a.fd, 0, cilp),
        Ok(0),
        "same mode: no-op"
    );
    assert_eq!(
        r.set_preemption_mode(a.fd, 0, NVGPU_COMPUTE_PREEMPTION_MODE_WFI),
        Err(libc::EINVAL),
        "lower than the current mode"
    );
    let spin = r.launch_spin(&a, Duration::from_secs(20));
    spin.wait_started();
    let b = r.chan(tsg);
    assert_eq!(r.alloc_obj(b.fd, COMPUTE, 0), Ok(0));
    spin.release();
}

/// tsg.c:nvgpu_tsg_unbind_channel: with force (channel close) an unbind that fails with -EAGAIN
/// because the channel's NEXT bit is set (tsg_ga10b.c:ga10b_tsg_unbind_channel_check_hw_next,
/// checked only in a multi-channel TSG) is retried 10 times, 2–4 ms apart; then fail_common aborts
/// the TSG. UNBIND_CHANNEL (force=false) hands -EAGAIN back to userspace and aborts nothing.
#[test]
fn rule1_next_bit_is_retried_then_the_tsg_is_aborted() {
    let _g = serial();
    let r = Rig::new();
    let tsg = r.open_tsg();
    let a = r.compute_chan(tsg, 0);
    let b = r.compute_chan(tsg, 0);
    let c = r.compute_chan(tsg, 0);
    // NEXT set for 3 reads: the 4th attempt unbinds.
    r.s.set_channel_next_bit(b.token, 3);
    let t = Instant::now();
    r.s.close(b.fd).unwrap();
    assert!(t.elapsed() >= Duration::from_millis(6), "{:?}", t.elapsed());
    assert_eq!(r.timed_out(a.fd), 0);
    // UNBIND_CHANNEL with NEXT stuck: EAGAIN, still bound, nothing aborted.
    r.s.set_channel_next_bit(c.token, u32::MAX);
    let mut fd = c.fd;
    assert_eq!(
        ioc(&r.s, tsg, NVGPU_TSG_IOCTL_UNBIND_CHANNEL, &mut fd),
        Err(libc::EAGAIN)
    );
    assert_eq!((r.timed_out(a.fd), r.timed_out(c.fd)), (0, 0));
    // Close with NEXT stuck: 11 attempts, then the TSG is aborted.
    let t = Instant::now();
    r.s.close(c.fd).unwrap();
    let took = t.elapsed();
    assert!(
        took >= Duration::from_millis(22),
        "11 attempts 2–4 ms apart, took {took:?}"
    );
    assert_eq!(r.timed_out(a.fd), 1);
}

// ------------------------------------------------------------------------------------------
// Rule 2: errors are per TSG
// ------------------------------------------------------------------------------------------

/// An MMU fault recovers the whole TSG (rc_gv11b.c: nvgpu_tsg_set_ctx_mmu_error +
/// nvgpu_tsg_mark_error + nvgpu_tsg_abort): every channel's notifier gets 31 (written only if
/// empty: linux-channel.c:nvgpu_set_err_notifier_if_empty), every channel is unserviceable;
/// a later doorbell runs nothing and SUBMIT_GPFIFO returns ETIMEDOUT
/// (ioctl_channel.c:gk20a_ioctl_channel_submit_gpfifo). Another TSG is untouched.
#[test]
fn rule2_an_mmu_fault_recovers_every_channel_of_the_tsg() {
    let _g = serial();
    let r = Rig::new();
    let tsg = r.open_tsg();
    let a = r.compute_chan(tsg, 0);
    let b = r.compute_chan(tsg, 0);
    let other = r.open_tsg();
    let c = r.compute_chan(other, 0);
    let mut w = Vec::new();
    sem_release(&mut w, 0xDE_AD00_0000, 1);
    r.submit(&a, &w);
    wait_for("A's notifier", Duration::from_secs(5), || {
        r.notifier(&a).1 == 0xffff
    });
    wait_for("B's notifier", Duration::from_secs(5), || {
        r.notifier(&b).1 == 0xffff
    });
    assert_eq!(r.notifier(&a).0, NVGPU_CHANNEL_FIFO_ERROR_MMU_ERR_FLT);
    assert_eq!(r.notifier(&b).0, NVGPU_CHANNEL_FIFO_ERROR_MMU_ERR_FLT);
    assert_eq!((r.timed_out(a.fd), r.timed_out(b.fd)), (1, 1));
    assert_eq!((r.timed_out(c.fd), r.notifier(&c).1), (0, 0));
    // B is dead: its doorbell runs nothing; SUBMIT_GPFIFO says ETIMEDOUT.
    let wb = r.release_word(&b);
    let wc = r.release_word(&c);
    wait_for("the other TSG to run", Duration::from_secs(5), || {
        word(wc) == 1
    });
    std::thread::sleep(Duration::from_millis(20));
    assert_eq!(word(wb), 0);
    let mut s = nvgpu_submit_gpfifo_args::default();
    assert_eq!(
        ioc(&r.s, b.fd, NVGPU_IOCTL_CHANNEL_SUBMIT_GPFIFO, &mut s),
        Err(libc::ETIMEDOUT)
    );
    // The fault's address is logged for the TSG's channels.
    let log = r.s.fault_log();
    for t in [a.token, b.token] {
        assert!(
            log.iter()
                .any(|f| f.token == t && f.code == 31 && f.address == Some(0xDE_AD00_0000)),
            "{log:?}"
        );
    }
}

/// FORCE_RESET (tsg.c:nvgpu_tsg_force_reset_ch) and injected errors recover the TSG the same
/// way; a notifier already holding an error keeps it (set only if empty).
#[test]
fn rule2_force_reset_and_injected_errors_are_per_tsg_and_first_error_wins() {
    let _g = serial();
    let r = Rig::new();
    let tsg = r.open_tsg();
    let a = r.compute_chan(tsg, 0);
    let b = r.compute_chan(tsg, 0);
    let tsg2 = r.open_tsg();
    let c = r.compute_chan(tsg2, 0);
    let d = r.compute_chan(tsg2, 0);
    // SAFETY: an _IO request.
    assert_eq!(
        unsafe { r.s.ioctl(a.fd, NVGPU_IOCTL_CHANNEL_FORCE_RESET, 0) },
        Ok(0)
    );
    assert_eq!(
        r.notifier(&b),
        (NVGPU_CHANNEL_RESETCHANNEL_VERIF_ERROR, 0xffff)
    );
    assert!(r
        .s
        .inject_channel_error(a.token, NVGPU_CHANNEL_FIFO_ERROR_MMU_ERR_FLT));
    assert_eq!(
        r.notifier(&a),
        (NVGPU_CHANNEL_RESETCHANNEL_VERIF_ERROR, 0xffff),
        "the first error stays"
    );
    assert!(r.s.inject_channel_error(c.token, NVGPU_CHANNEL_PBDMA_ERROR));
    assert_eq!(r.notifier(&d), (NVGPU_CHANNEL_PBDMA_ERROR, 0xffff));
    assert_eq!(r.timed_out(d.fd), 1);
}

// ------------------------------------------------------------------------------------------
// Rule 3: the ctxsw-timeout budget of a usermode-submit channel
// ------------------------------------------------------------------------------------------

/// ctxsw_timeout_ga10b_fusa.c:ga10b_fifo_ctxsw_timeout_isr fires every ctxsw_timeout_period_ms
/// while a context switch away from a busy TSG is pending (another context competes and the
/// compute preemption mode waits for the grid); tsg.c:nvgpu_tsg_check_ctxsw_timeout →
/// channel.c:nvgpu_channel_update_and_check_ctxsw_timeout adds the period to a usermode channel's
/// budget every time (it never sees progress, the budget only grows); past ctxsw_timeout_max_ms
/// (NVGPU_DEFAULT_POLL_TIMEOUT_MS = 3000 at open) rc.c:nvgpu_rc_ctxsw_timeout recovers the TSG with
/// error 8 (FIFO_ERROR_IDLE_TIMEOUT).
#[test]
fn rule3_a_competing_context_exhausts_the_default_budget() {
    let _g = serial();
    let r = Rig::new();
    r.s.set_time_divisor(10);
    let tsg = r.open_tsg();
    let a = r.compute_chan(tsg, 0);
    let b = r.compute_chan(tsg, 0);
    // Without competition, no ctxsw timeout: 8 s of driver time pass.
    let spin = r.launch_spin(&a, Duration::from_secs(30));
    spin.wait_started();
    std::thread::sleep(Duration::from_millis(800));
    assert_eq!(r.timed_out(a.fd), 0);
    // With another context competing, 3000 ms of budget last ~31 periods (3.1 s; 310 ms here).
    let t = Instant::now();
    let _other = r.s.add_competing_context();
    wait_for("recovery with error 8", Duration::from_secs(5), || {
        r.notifier(&a).1 == 0xffff
    });
    let took = t.elapsed();
    assert!(
        took >= Duration::from_millis(250),
        "3000 ms of budget at 100 ms per ctxsw timeout, /10: took {took:?}"
    );
    assert_eq!(r.notifier(&a).0, NVGPU_CHANNEL_FIFO_ERROR_IDLE_TIMEOUT);
    assert_eq!(
        r.notifier(&b),
        (NVGPU_CHANNEL_FIFO_ERROR_IDLE_TIMEOUT, 0xffff)
    );
    assert_eq!((r.timed_out(a.fd), r.timed_out(b.fd)), (1, 1));
    spin.release();
    std::thread::sleep(Duration::from_millis(50));
    assert!(!spin.done(), "the engine reset killed the grid");
}

/// The budget is the channel's lifetime total: a grid that stays under it leaves the rest for the
/// next, which is recovered early. SET_TIMEOUT_EX sets ctxsw_timeout_max_ms (ioctl_channel.c, no
/// limits, also on usermode channels); CILP never leaves a context switch pending.
#[test]
fn rule3_the_budget_only_grows_set_timeout_ex_and_cilp() {
    let _g = serial();
    let r = Rig::new();
    // 100 ms of driver time per 20 ms: the default budget lasts 31 × 20 = 620 ms here.
    r.s.set_time_divisor(5);
    let _other = r.s.add_competing_context();
    // 1. A 500 ms grid uses 2500 of the 3000 ms; the next is recovered after ~6 periods.
    let tsg = r.open_tsg();
    let a = r.compute_chan(tsg, 0);
    let spin = r.launch_spin(&a, Duration::from_millis(500));
    wait_for("the first grid", Duration::from_secs(5), || spin.done());
    assert_eq!(r.timed_out(a.fd), 0, "2500 ms of 3000 used");
    // The budget used by the first grid stays after it ends (usermode channels never report
    // progress, so nothing resets it).
    let used = r.s.ctxsw_timeout_accumulated_ms(a.token).unwrap();
    assert!(used > 0 && used < 3000, "{used} ms used by the first grid");
    let spin = r.launch_spin(&a, Duration::from_secs(30));
    spin.wait_started();
    let t = Instant::now();
    wait_for(
        "recovery in the second grid",
        Duration::from_secs(5),
        || r.notifier(&a).1 == 0xffff,
    );
    let _ = t;
    let total =
        r.s.ctxsw_timeout_accumulated_ms(a.token)
            .expect("the recovered channel is still open");
    assert!(
        total >= 3000,
        "recovered once the lifetime total passed 3000 ms (first grid {used} ms), total {total}"
    );
    assert_eq!(r.notifier(&a).0, NVGPU_CHANNEL_FIFO_ERROR_IDLE_TIMEOUT);
    spin.release();
    // 2. SET_TIMEOUT_EX(60 s): 1 s here (5 s of driver time) is within budget.
    let tsg2 = r.open_tsg();
    let b = r.compute_chan(tsg2, 0);
    assert_eq!(r.set_timeout_ex(b.fd, 60_000), Ok(0));
    let spin = r.launch_spin(&b, Duration::from_secs(30));
    spin.wait_started();
    std::thread::sleep(Duration::from_secs(1));
    assert_eq!(r.timed_out(b.fd), 0);
    spin.release();
    // 3. CILP: no pending context switch, no budget used.
    let tsg3 = r.open_tsg();
    let c = r.compute_chan(tsg3, NVGPU_ALLOC_OBJ_FLAGS_CILP);
    let spin = r.launch_spin(&c, Duration::from_secs(30));
    spin.wait_started();
    std::thread::sleep(Duration::from_millis(800));
    assert_eq!(r.timed_out(c.fd), 0);
    spin.release();
    // 4. SET_TIMEOUT_EX(0): the first ctxsw timeout exceeds it.
    let tsg4 = r.open_tsg();
    let d = r.compute_chan(tsg4, 0);
    assert_eq!(r.set_timeout_ex(d.fd, 0), Ok(0));
    let spin = r.launch_spin(&d, Duration::from_secs(30));
    spin.wait_started();
    wait_for("recovery", Duration::from_secs(5), || {
        r.timed_out(d.fd) == 1
    });
    spin.release();
}

// ------------------------------------------------------------------------------------------
// Rule 4: limits
// ------------------------------------------------------------------------------------------

/// tsg.c:nvgpu_tsg_bind_channel: EINVAL once ch_count == get_max_channels_per_tsg() =
/// ram_rl_entry_tsg_length_max_v() = 0x80 (runlist_ram_gv11b_fusa.c, hw_ram_ga10b.h).
#[test]
fn rule4_a_tsg_holds_at_most_128_channels() {
    let _g = serial();
    let r = Rig::new();
    let tsg = r.open_tsg();
    let veid = r.subctx(tsg).unwrap();
    let mut chans = Vec::new();
    for i in 0..128 {
        chans.push(
            r.bound_channel(tsg, veid)
                .unwrap_or_else(|e| panic!("channel {i}: {e}")),
        );
    }
    let ch = r.open_channel(-1).unwrap();
    r.as_bind(ch).unwrap();
    assert_eq!(r.bind_ex(tsg, ch, veid), Err(libc::EINVAL), "the 129th");
    // Another TSG takes it.
    let tsg2 = r.open_tsg();
    let v2 = r.subctx(tsg2).unwrap();
    assert_eq!(r.bind_ex(tsg2, ch, v2), Ok(0));
    // Unbinding one makes room again.
    let mut fd = chans[0];
    assert_eq!(
        ioc(&r.s, tsg, NVGPU_TSG_IOCTL_UNBIND_CHANNEL, &mut fd),
        Ok(0)
    );
    let ch2 = r.open_channel(-1).unwrap();
    r.as_bind(ch2).unwrap();
    assert_eq!(r.bind_ex(tsg, ch2, veid), Ok(0));
}

/// linux-channel.c:nvgpu_channel_get_synpoints: 512 channels on L4T (ENOMEM at OPEN_CHANNEL,
/// ioctl_channel.c:__gk20a_channel_open); 64 VEIDs per TSG (hw_gr_ga10b.h
/// gr_pri_fe_chip_def_info_max_veid_count_init_v = 0x40): 63 ASYNC, then the SYNC one, then
/// ENOSPC (tsg.c:nvgpu_tsg_create_async_subcontext).
#[test]
fn rule4_channel_and_veid_limits() {
    let _g = serial();
    let r = Rig::new();
    let mut chars = nvgpu_gpu_characteristics::default();
    let mut g = nvgpu_gpu_get_characteristics {
        gpu_characteristics_buf_size: std::mem::size_of_val(&chars) as u64,
        gpu_characteristics_buf_addr: &mut chars as *mut _ as u64,
    };
    ioc(&r.s, r.ctrl, NVGPU_GPU_IOCTL_GET_CHARACTERISTICS, &mut g).unwrap();
    assert_eq!(chars.max_veid_count_per_tsg, 64);
    let tsg = r.open_tsg();
    for v in 1..64 {
        assert_eq!(r.subctx(tsg), Ok(v));
    }
    assert_eq!(r.subctx(tsg), Ok(0), "then the SYNC VEID");
    assert_eq!(r.subctx(tsg), Err(libc::ENOSPC));
    let mut fds = Vec::new();
    for _ in 0..512 {
        fds.push(r.open_channel(-1).unwrap());
    }
    assert_eq!(r.open_channel(-1), Err(libc::ENOMEM));
    for fd in fds {
        r.s.close(fd).unwrap();
    }
}

// ------------------------------------------------------------------------------------------
// Rule 5: GET_USER_SYNCPOINT
// ------------------------------------------------------------------------------------------

/// ioctl_channel.c:nvgpu_ioctl_channel_get_user_syncpoint: EINVAL when
/// g->aggressive_sync_destroy_thresh is set (platform data; 0 on ga10b, 64 on gk20a boards).
#[test]
fn rule5_get_user_syncpoint_fails_with_aggressive_sync_destroy() {
    let _g = serial();
    let r = Rig::new();
    let tsg = r.open_tsg();
    let a = r.chan(tsg);
    let mut s = nvgpu_get_user_syncpoint_args::default();
    assert_eq!(
        ioc(&r.s, a.fd, NVGPU_IOCTL_CHANNEL_GET_USER_SYNCPOINT, &mut s),
        Ok(0)
    );
    r.s.set_aggressive_sync_destroy_thresh(64);
    let b = r.chan(tsg);
    let mut s = nvgpu_get_user_syncpoint_args::default();
    assert_eq!(
        ioc(&r.s, b.fd, NVGPU_IOCTL_CHANNEL_GET_USER_SYNCPOINT, &mut s),
        Err(libc::EINVAL)
    );
    // Also for a channel that already has one: the check comes first.
    let mut s = nvgpu_get_user_syncpoint_args::default();
    assert_eq!(
        ioc(&r.s, a.fd, NVGPU_IOCTL_CHANNEL_GET_USER_SYNCPOINT, &mut s),
        Err(libc::EINVAL)
    );
}

// ------------------------------------------------------------------------------------------
// Rule 6: not stricter than the driver
// ------------------------------------------------------------------------------------------

/// ioctl_ctrl.c:gk20a_ctrl_dev_mmap does not look at VM_SHARED: a private mapping is accepted and
/// takes the ctrl file's one usermode mapping (a second mmap → EBUSY). Its pages are the
/// register page until written; a store makes a private copy, so it rings nothing.
#[test]
fn rule6_private_doorbell_mapping_is_accepted() {
    let _g = serial();
    let s = EmuSys::new();
    let ctrl = s.open(CTRL, libc::O_RDWR | libc::O_CLOEXEC).unwrap();
    // SAFETY: fresh mappings.
    let p = unsafe {
        s.mmap(
            std::ptr::null_mut(),
            0x10000,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE,
            ctrl,
            0,
        )
    }
    .expect("MAP_PRIVATE doorbell");
    // SAFETY: as above.
    let again = unsafe {
        s.mmap(
            std::ptr::null_mut(),
            0x10000,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            ctrl,
            0,
        )
    };
    assert_eq!(again.err(), Some(libc::EBUSY));
    // SAFETY: our mapping.
    unsafe { s.munmap(p, 0x10000).unwrap() };
}

/// ioctl_channel.c:__gk20a_channel_open accepts any runlist of the GPU instance
/// (grmgr.c:nvgpu_grmgr_is_valid_runlist_id: the GR runlist and the LCE runlists).
#[test]
fn rule6_open_channel_on_the_copy_engine_runlist() {
    let _g = serial();
    let r = Rig::new();
    let ch = r.open_channel(1).expect("LCE runlist");
    assert_eq!(r.open_channel(7), Err(libc::EINVAL));
    // The TSG takes the runlist of its first channel; another runlist's channel is refused.
    let tsg = r.open_tsg();
    let veid = r.subctx(tsg).unwrap();
    r.as_bind(ch).unwrap();
    assert_eq!(r.bind_ex(tsg, ch, veid), Ok(0));
    assert_eq!(r.bound_channel(tsg, veid), Err(libc::EINVAL));
}

/// ioctl_tsg.c:gk20a_tsg_ioctl_bind_channel_ex → tsg.c:nvgpu_tsg_create_sync_subcontext_internal
/// reserves VEID 0 with the channel's VM even when it is NULL, and
/// nvgpu_tsg_validate_ch_subctx_vm compares NULL with NULL: an AS-less channel binds to VEID 0.
/// A channel with a VM then cannot get VEID 0 (the SYNC VEID is taken, ENOSPC); ALLOC_OBJ_CTX
/// still wants an AS.
#[test]
fn rule6_an_address_space_less_channel_binds_to_veid_0() {
    let _g = serial();
    let r = Rig::new();
    let tsg = r.open_tsg();
    let ch = r.open_channel(-1).unwrap();
    assert_eq!(r.bind_ex(tsg, ch, 0), Ok(0));
    let ch2 = r.open_channel(-1).unwrap();
    r.as_bind(ch2).unwrap();
    assert_eq!(
        r.bind_ex(tsg, ch2, 0),
        Err(libc::ENOSPC),
        "VEID 0 is reserved (with a NULL VM)"
    );
    assert_eq!(r.alloc_obj(ch, COMPUTE, 0), Err(libc::EINVAL));
    // A SYNC subcontext is no longer available either.
    let mut a = nvgpu_tsg_create_subcontext_args {
        r#type: NVGPU_TSG_SUBCONTEXT_TYPE_SYNC,
        as_fd: r.as_fd,
        ..Default::default()
    };
    assert_eq!(
        ioc(&r.s, tsg, NVGPU_TSG_IOCTL_CREATE_SUBCONTEXT, &mut a),
        Err(libc::ENOSPC)
    );
}

/// gr_init_tu104.c:tu104_gr_init_commit_rtv_cb only nvgpu_assert()s that the buffer is below
/// 2^40, and nvgpu_assert is WARN_ON in the kernel (include/nvgpu/bug.h): ALLOC_OBJ_CTX succeeds
/// and the kernel log has the warning (the seeds' dmesg shows it on a working board).
#[test]
fn rule6_gr_context_above_2_40_only_warns() {
    let _g = serial();
    let s = EmuSys::new();
    let ctrl = s.open(CTRL, libc::O_RDWR | libc::O_CLOEXEC).unwrap();
    let nvmap = s.open(NVMAP, libc::O_RDWR | libc::O_CLOEXEC).unwrap();
    let r = Rig {
        s: s.clone(),
        ctrl,
        nvmap,
        as_fd: -1,
        bell: std::ptr::null_mut(),
        work_va: 0,
        work: std::ptr::null_mut(),
        work_used: Cell::new(0),
    };
    // The seeds' AS: the kernel VMA starts 2 MiB below 2^40.
    let mut a = nvgpu_alloc_as_args {
        flags: NVGPU_GPU_IOCTL_ALLOC_AS_FLAGS_UNIFIED_VA,
        va_range_start: 0x20_0000,
        va_range_end: 0xFF_FFE0_0000,
        ..Default::default()
    };
    ioc(&s, ctrl, NVGPU_GPU_IOCTL_ALLOC_AS, &mut a).unwrap();
    let r = Rig {
        as_fd: a.as_fd,
        ..r
    };
    let tsg = r.open_tsg();
    let veid = r.subctx(tsg).unwrap();
    let ch = r.bound_channel(tsg, veid).unwrap();
    let (_, gp) = r.buf(3 << 20);
    let (_, ud) = r.buf(4096);
    let mut w = nvgpu_channel_wdt_args {
        wdt_status: NVGPU_IOCTL_CHANNEL_DISABLE_WDT,
        timeout_ms: 0,
    };
    ioc(&s, ch, NVGPU_IOCTL_CHANNEL_WDT, &mut w).unwrap();
    let mut sb = nvgpu_channel_setup_bind_args {
        num_gpfifo_entries: 1024,
        flags: UM_FLAGS,
        userd_dmabuf_fd: ud,
        gpfifo_dmabuf_fd: gp,
        ..Default::default()
    };
    ioc(&s, ch, NVGPU_IOCTL_CHANNEL_SETUP_BIND, &mut sb).unwrap();
    assert_eq!(r.alloc_obj(ch, COMPUTE, 0), Ok(0));
    let log = s.kernel_log();
    assert!(
        log.iter()
            .any(|l| l.contains("tu104_gr_init_commit_rtv_cb")),
        "{log:?}"
    );
}

/// ioctl_channel.c:gk20a_ioctl_channel_submit_gpfifo checks unserviceable first: a channel that
/// is not (yet) in a TSG is unserviceable, so SUBMIT_GPFIFO is ETIMEDOUT, not EINVAL.
#[test]
fn rule6_submit_gpfifo_on_an_unserviceable_channel_is_etimedout() {
    let _g = serial();
    let r = Rig::new();
    let ch = r.open_channel(-1).unwrap();
    let mut s = nvgpu_submit_gpfifo_args::default();
    assert_eq!(
        ioc(&r.s, ch, NVGPU_IOCTL_CHANNEL_SUBMIT_GPFIFO, &mut s),
        Err(libc::ETIMEDOUT)
    );
    let tsg = r.open_tsg();
    let c = r.chan(tsg);
    assert_eq!(
        ioc(&r.s, c.fd, NVGPU_IOCTL_CHANNEL_SUBMIT_GPFIFO, &mut s),
        Err(libc::EINVAL),
        "usermode channel"
    );
}

// ------------------------------------------------------------------------------------------
// Rule 7: a fault is recorded before its notifier is published
// ------------------------------------------------------------------------------------------

/// Whoever sees a channel's notifier say "error" must find the fault (with its address) in the
/// fault log: post_fault records first and publishes the notifier after (Release).
#[test]
fn rule7_a_published_fault_is_already_in_the_log() {
    let _g = serial();
    let r = Rig::new();
    for i in 0..200 {
        let tsg = r.open_tsg();
        let a = r.compute_chan(tsg, 0);
        let addr = 0xDE_AD00_0000 + i * 0x1000;
        let mut w = Vec::new();
        sem_release(&mut w, addr, 1);
        r.submit(&a, &w);
        let t = Instant::now();
        // SAFETY: the status half-word of the record at offset 0.
        let status = unsafe { &*(a.notifier.add(12) as *const AtomicU32) };
        while status.load(Ordering::Acquire) >> 16 != 0xffff {
            assert!(t.elapsed() < Duration::from_secs(5), "no fault");
            std::hint::spin_loop();
        }
        let log = r.s.fault_log();
        assert!(
            log.iter()
                .any(|f| f.token == a.token && f.address == Some(addr)),
            "iteration {i}: notifier published before the fault was recorded: {log:?}"
        );
        r.s.close(a.fd).unwrap();
        r.s.close(tsg).unwrap();
    }
}
