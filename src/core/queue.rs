//! Queues: record launches, copies, signals and waits into a pushbuffer ring and submit them
//! from user space (GPFIFO entry + GP_PUT + store barrier + doorbell).
//!
//! Memory for commands, QMDs and constant banks lives in rings that are reclaimed from the
//! queue's own timeline: every submit ends with a host semaphore release of the next timeline
//! value, and a ring region is rewritten only after the GPU has released the value of the
//! submission that used it. A QMD or constant bank is therefore never rewritten while the GPU may
//! still read it (the seeds' QMD reuse race).
//!
//! The hot path (`launch`, `signal`, `wait`, `submit`) makes no system call and no heap
//! allocation, and takes no lock.

use super::device::Device;
use super::module::Kernel;
use super::signal::{wait_value, Signal};
use super::{Buffer, DEFAULT_TIMEOUT_NS};
use crate::backend::{Allocation, Channel, ChannelError, ChannelRaw, Engine, MemFlags};
use crate::error::{Error, Result, Status};
use crate::hw::gpfifo::{gp_entry, GpRing};
use crate::hw::pushbuf::PushBuf;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

/// Which engine a queue feeds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueueKind {
    /// Kernel launches (and signals, waits, barriers).
    Compute,
    /// Copy-engine transfers (and signals, waits, barriers).
    Copy,
}

/// Grid, block and dynamic shared memory of one launch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LaunchConfig {
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub dynamic_shared_bytes: u32,
    /// Cooperative launch: every block resident at once, grid-wide sync available.
    pub cooperative: bool,
}

const CMD_BYTES: u64 = 1 << 20;
/// Each QMD slot also holds the launch's constant bank 0 when it fits (at +QMD_SLOT_CBANK).
const QMD_STRIDE: u64 = 2048;
const QMD_SLOT_CBANK: u64 = 512;
const QMD_SLOT_CBANK_MAX: u64 = QMD_STRIDE - QMD_SLOT_CBANK;
const KARG_BYTES: u64 = 1 << 20;
/// Dwords kept free in the command ring for the closing release of a submit.
const SUBMIT_RESERVE_DW: u64 = 16;
/// The largest number of dwords one recorded command takes.
const MAX_CMD_DW: u64 = 64;
/// SEND_SIGNALING_PCAS2_B action: INVALIDATE_COPY_SCHEDULE (drops SKED's cached copy of a
/// recycled QMD address).
const PCAS_ACTION: u32 = 3;
/// INVALIDATE_SHADER_CACHES_NO_WFI: INSTRUCTION | GLOBAL_DATA | CONSTANT.
const INVALIDATE_BEFORE_LAUNCH: u32 = 0x1011;

/// The point every queue of a device had reached in submission when something was released:
/// the thing may be reused once every queue's timeline has passed its value.
pub(crate) type Fence = Vec<(std::sync::Weak<QueueTrack>, u64)>;

/// Record, for every live queue of `dev` that still has work in flight or recorded, the timeline
/// value after which that work is done: recorded but unsubmitted work holds what it uses
/// exactly as submitted work does (it completes with the queue's next submission).
pub(crate) fn fence_now(dev: &Device) -> Fence {
    dev.inner
        .queues
        .lock()
        .iter()
        .filter_map(|w| {
            w.upgrade()
                .map(|t| (w.clone(), t.holds_until(), t.completed()))
        })
        .filter(|(_, until, completed)| completed < until)
        .map(|(w, s, _)| (w, s))
        .collect()
}

/// Whether every queue in the fence has passed its value, is gone, or has been stopped by the
/// kernel driver (a channel error: the GPU no longer runs its work).
pub(crate) fn fence_passed(f: &Fence) -> bool {
    f.iter().all(|(w, v)| {
        w.upgrade()
            .map(|t| t.completed() >= *v || t.channel_error().is_some())
            .unwrap_or(true)
    })
}

/// Wait until [`fence_passed`] (each queue's timeline, a channel error, or the queue gone), at
/// most `timeout_ns` per queue; `call` names the API call in a timeout message.
pub(crate) fn wait_fence(dev: &Device, f: &Fence, timeout_ns: u64, call: &str) -> Result<()> {
    for (w, v) in f {
        if let Some(t) = w.upgrade() {
            if t.completed() < *v && t.channel_error().is_none() {
                t.wait_timeline(dev, *v, timeout_ns, call)?;
            }
        }
    }
    Ok(())
}

/// State shared between a queue and its device (for synchronize and fault polling).
pub(crate) struct QueueTrack {
    pub token: u32,
    pub kind_name: &'static str,
    channel: Box<dyn Channel>,
    timeline: Signal,
    submitted: AtomicU64,
    /// Commands are recorded that the next submit will carry. Set after each recorded command,
    /// cleared after `submitted` is advanced.
    pending: AtomicBool,
}

impl QueueTrack {
    /// The timeline value by which everything recorded on the queue so far has completed:
    /// `submitted`, or the next submission's value while commands wait to be submitted.
    /// (Read concurrently with a submit, this can be one more than needed, never less.)
    pub fn holds_until(&self) -> u64 {
        let pending = self.pending.load(Ordering::Acquire);
        self.submitted() + u64::from(pending)
    }
    pub fn submitted(&self) -> u64 {
        self.submitted.load(Ordering::Acquire)
    }
    pub fn completed(&self) -> u64 {
        self.timeline.value()
    }
    pub fn channel_error(&self) -> Option<ChannelError> {
        self.channel.error()
    }
    /// Ring this queue's doorbell again if it has submitted work that has not completed (see
    /// [`crate::hw::gpfifo::ring_doorbell_again`]).
    pub fn ring_again_if_busy(&self) {
        if self.completed() < self.submitted() {
            let raw = self.channel.raw();
            // SAFETY: the channel (and so its doorbell mapping) lives as long as this track.
            unsafe { crate::hw::gpfifo::ring_doorbell_again(raw.doorbell, raw.token) };
        }
    }
    pub fn wait_submitted(&self, dev: &Device, timeout_ns: u64) -> Result<()> {
        let target = self.submitted();
        self.wait_timeline(dev, target, timeout_ns, "tg_device_synchronize")
    }
    fn wait_timeline(&self, dev: &Device, value: u64, timeout_ns: u64, call: &str) -> Result<()> {
        // SAFETY: the signal's slot is an aligned u64 in shared memory.
        let word = unsafe { &*(self.timeline_ptr() as *const AtomicU64) };
        wait_value(dev, word, value, timeout_ns, call).map_err(|e| {
            if e.status == Status::Timeout {
                Error::new(
                    Status::Timeout,
                    format!(
                        "{call}: {} queue (token {:#x}) reached {} of {value} within {timeout_ns} ns",
                        self.kind_name,
                        self.token,
                        self.completed()
                    ),
                )
            } else {
                e
            }
        })
    }
    fn timeline_ptr(&self) -> *const u8 {
        self.timeline.slot_ptr()
    }
}

/// A byte ring with monotonically increasing head/tail counters.
struct Ring {
    alloc: Allocation,
    cap: u64,
    head: u64,
    tail: u64,
}

impl Ring {
    fn pos(&self) -> u64 {
        self.head % self.cap
    }
    fn free(&self) -> u64 {
        self.cap - (self.head - self.tail)
    }
}

/// One submission's ring positions, reclaimed when the timeline reaches `value`.
#[derive(Clone, Copy)]
struct Submission {
    value: u64,
    cmd_head: u64,
    qmd_head: u64,
    karg_head: u64,
}

/// Queue sizing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueueConfig {
    /// Submissions (GPFIFO entries) and, on compute queues, launches (QMD slots) that can be in
    /// flight before recording waits for the GPU: a power of two from 16 to 65536. Default 1024.
    /// Each unit costs 8 bytes of ring plus, on compute queues, a 2 KiB QMD slot.
    pub depth: u32,
}

impl Default for QueueConfig {
    fn default() -> Self {
        QueueConfig { depth: 1024 }
    }
}

/// A command queue on one channel.
pub struct Queue {
    dev: Device,
    kind: QueueKind,
    track: Arc<QueueTrack>,
    raw: ChannelRaw,
    ring: GpRing,
    /// Command ring, counted in dwords.
    cmd: Ring,
    /// Start (dword counter) of the segment being recorded.
    seg_start: u64,
    qmd: Option<Ring>,
    karg: Option<Ring>,
    log: VecDeque<Submission>,
    /// QMD and constant-bank ring heads as of the last fully recorded launch.
    committed: (u64, u64),
    last_was_launch: bool,
    /// Constant bank 0 is built here (cached memory) and copied to the ring in one sequential
    /// pass: the ring may be write-combined memory behind a bus.
    scratch: Box<[u8]>,
    /// Per QMD slot: the kernel id whose QMD the slot holds, and the (kernel id, cbank size) of
    /// the constant bank at +QMD_SLOT_CBANK (0 = none). A launch of the same kernel into a slot
    /// rewrites only what changes per launch.
    slot_qmd: Vec<u64>,
    slot_cbank: Vec<(u64, u32)>,
    local_generation: u64,
    /// The device's code generation at this queue's last shader-cache invalidate.
    code_generation: u64,
    timeout_ns: u64,
    /// The built-in copy kernel, loaded at this compute queue's first copy.
    copy_kernel: Option<Kernel>,
    /// The grid-sync workspace of cooperative launches (CUDA's `grid_workspace`), made at the
    /// queue's first cooperative launch. Launches on a queue run one after another, so one
    /// workspace serves them all: its barrier word returns to a usable state after each sync.
    coop_workspace: Option<Allocation>,
    /// Dropping the queue submits what was recorded and waits for its work (not after
    /// [`Queue::abort`]).
    drain_on_drop: bool,
    /// A command-buffer replay was pushed since the last submit: the next submit must close it
    /// with a timeline release even when the command ring holds nothing new.
    replayed: bool,
}

impl std::fmt::Debug for Queue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Queue")
            .field("kind", &self.kind)
            .field("token", &self.raw.token)
            .finish()
    }
}

/// Where command, QMD and constant-bank rings live: write-combined GPU memory by default
/// (desktop: video memory written through BAR1), or CPU-cached memory the GPU reads over the bus
/// with `TEGRAGPU_RING_MEMORY=host` (a tuning knob; see docs/performance.md).
fn ring_flags() -> MemFlags {
    match std::env::var("TEGRAGPU_RING_MEMORY").as_deref() {
        Ok("host") => MemFlags {
            cpu_cached: true,
            zeroed: true,
            ..Default::default()
        },
        _ => MemFlags {
            write_combined: true,
            zeroed: true,
            ..Default::default()
        },
    }
}

fn ring(dev: &Device, bytes: u64, unit: u64) -> Result<Ring> {
    let alloc = dev.backend().alloc(bytes, ring_flags())?;
    Ok(Ring {
        alloc,
        cap: bytes / unit,
        head: 0,
        tail: 0,
    })
}

impl Queue {
    pub(crate) fn new(dev: &Device, kind: QueueKind, config: QueueConfig) -> Result<Queue> {
        let depth = config.depth;
        if !depth.is_power_of_two() || !(16..=65536).contains(&depth) {
            return Err(Error::invalid(format!(
                "tg_queue_create: depth {depth} must be a power of two from 16 to 65536"
            )));
        }
        let engine = match kind {
            QueueKind::Compute => Engine::Compute,
            QueueKind::Copy => Engine::Copy,
        };
        let channel = dev.backend().create_channel(engine, depth)?;
        let raw = channel.raw();
        let timeline = dev.create_signal(0)?;
        let track = Arc::new(QueueTrack {
            token: raw.token,
            kind_name: if kind == QueueKind::Compute {
                "compute"
            } else {
                "copy"
            },
            channel,
            timeline,
            submitted: AtomicU64::new(0),
            pending: AtomicBool::new(false),
        });
        let mut allocs: Vec<Ring> = Vec::new();
        let mk = |bytes, unit, allocs: &mut Vec<Ring>| -> Result<()> {
            allocs.push(ring(dev, bytes, unit)?);
            Ok(())
        };
        let res = (|| {
            mk(CMD_BYTES.max(depth as u64 * 256), 4, &mut allocs)?;
            if kind == QueueKind::Compute {
                mk(depth as u64 * QMD_STRIDE, QMD_STRIDE, &mut allocs)?;
                mk(KARG_BYTES, 1, &mut allocs)?;
            }
            Ok(())
        })();
        if let Err(e) = res {
            for r in allocs {
                let _ = dev.backend().free(&r.alloc);
            }
            return Err(e);
        }
        let mut it = allocs.into_iter();
        let cmd = it
            .next()
            .ok_or_else(|| Error::new(Status::Internal, "command ring missing"))?;
        let qmd = it.next();
        let karg = it.next();
        // SAFETY: the channel's ring, USERD and doorbell pointers live as long as the channel,
        // which the track (owned by this queue) keeps alive.
        let ring = unsafe {
            GpRing::new(
                raw.gpfifo,
                raw.entries,
                raw.userd as *mut u8,
                raw.doorbell,
                raw.token,
                if kind == QueueKind::Compute {
                    "compute queue GPFIFO"
                } else {
                    "copy queue GPFIFO"
                },
            )?
        };
        dev.register_queue(&track);
        let mut q = Queue {
            dev: dev.clone(),
            kind,
            track,
            raw,
            ring,
            cmd,
            seg_start: 0,
            qmd,
            karg,
            log: VecDeque::with_capacity(raw.entries as usize),
            committed: (0, 0),
            last_was_launch: false,
            scratch: vec![0u8; crate::hw::cbank0::MAX_CBANK0_BYTES].into_boxed_slice(),
            slot_qmd: vec![0; depth as usize],
            slot_cbank: vec![(0, 0); depth as usize],
            coop_workspace: None,
            local_generation: 0,
            code_generation: 0,
            timeout_ns: DEFAULT_TIMEOUT_NS,
            copy_kernel: None,
            drain_on_drop: true,
            replayed: false,
        };
        q.record_init()?;
        q.submit()?;
        Ok(q)
    }

    pub fn kind(&self) -> QueueKind {
        self.kind
    }

    pub fn device(&self) -> &Device {
        &self.dev
    }

    /// Timeout for internal waits (ring space); default 10 s.
    pub fn set_timeout_ns(&mut self, timeout_ns: u64) {
        self.timeout_ns = timeout_ns;
    }

    /// The value the queue's own timeline reaches once everything submitted so far is done.
    pub fn submitted_value(&self) -> u64 {
        self.track.submitted()
    }

    /// Abandon the queue's work and destroy the queue at once: nothing recorded is submitted,
    /// nothing is waited for, and the hardware channel is torn down (the GPU stops the running
    /// kernel and drops the queued work; the kernel driver preempts the channel). Memory that the
    /// work held is released once the channel is gone; signals it would have written keep their
    /// values. The recovery for a kernel that does not end (docs/api.md, "A kernel that does not
    /// end"). The channel goes when the last reference to it does: a wait on this queue running
    /// in another thread (e.g. a device-wide synchronize) keeps it until that wait returns.
    pub fn abort(mut self) {
        self.abandon_on_drop();
    }

    /// Make the drop of this queue an [`abort`](Queue::abort) (for owners that cannot move the
    /// queue out, like the C API's shared handle).
    pub fn abandon_on_drop(&mut self) {
        self.drain_on_drop = false;
    }

    /// Wait until everything submitted on this queue has completed.
    pub fn synchronize(&self, timeout_ns: u64) -> Result<()> {
        self.track.wait_timeline(
            &self.dev,
            self.track.submitted(),
            timeout_ns,
            "tg_queue_synchronize",
        )
    }

    fn record_init(&mut self) -> Result<()> {
        let info = self.dev.info().clone();
        let class = self.raw.class;
        let sub = self.raw.subchannel;
        self.with_cmd(|pb| {
            pb.set_object(sub, class)?;
            if sub == crate::hw::method::SUBCH_COMPUTE {
                pb.compute_init(info.shared_window, info.local_window)?;
            }
            Ok(())
        })
    }

    /// Reserve room for one command (≤ MAX_CMD_DW dwords) and record it with `f`.
    fn with_cmd(&mut self, f: impl FnOnce(&mut PushBuf<'_>) -> Result<()>) -> Result<()> {
        self.ensure_cmd_space(MAX_CMD_DW)?;
        let pos = self.cmd.pos() as usize;
        // SAFETY: the ring is CPU-mapped, `cap` dwords long, and [pos, pos + MAX_CMD_DW) is
        // free (ensure_cmd_space): the GPU no longer reads it.
        let slice = unsafe {
            std::slice::from_raw_parts_mut(
                (self.cmd.alloc.cpu as *mut u32).add(pos),
                MAX_CMD_DW as usize,
            )
        };
        let mut pb = PushBuf::for_arch(slice, self.dev.arch());
        f(&mut pb)?;
        self.cmd.head += pb.len() as u64;
        self.track.pending.store(true, Ordering::Release);
        Ok(())
    }

    /// Make `n` contiguous dwords (plus the submit reserve) available at the command ring's head.
    fn ensure_cmd_space(&mut self, n: u64) -> Result<()> {
        loop {
            let pos = self.cmd.pos();
            let wrap = if pos + n + SUBMIT_RESERVE_DW > self.cmd.cap {
                self.cmd.cap - pos
            } else {
                0
            };
            if self.cmd.free() >= wrap + n + SUBMIT_RESERVE_DW {
                if wrap > 0 {
                    // Close the segment before the end of the ring and continue at the start.
                    self.close_segment()?;
                    self.cmd.head += wrap;
                    self.seg_start = self.cmd.head;
                }
                return Ok(());
            }
            self.make_progress("command ring")?;
        }
    }

    /// Free ring space: reclaim completed submissions, else submit what is recorded, else wait
    /// for the oldest submission.
    fn make_progress(&mut self, what: &str) -> Result<()> {
        if self.reclaim() {
            return Ok(());
        }
        if self.cmd.head != self.seg_start {
            return self.submit();
        }
        let oldest = self.log.front().copied().ok_or_else(|| {
            Error::new(
                Status::Internal,
                format!(
                    "{what} full with nothing in flight (queue token {:#x})",
                    self.raw.token
                ),
            )
        })?;
        self.track.wait_timeline(
            &self.dev,
            oldest.value,
            self.timeout_ns,
            "tg_queue (waiting for ring space)",
        )?;
        self.reclaim();
        Ok(())
    }

    /// Drop log entries the GPU has completed; returns whether anything was reclaimed.
    fn reclaim(&mut self) -> bool {
        let done = self.track.completed();
        let mut any = false;
        while let Some(s) = self.log.front().copied() {
            if s.value > done {
                break;
            }
            self.log.pop_front();
            self.cmd.tail = s.cmd_head;
            if let Some(r) = self.qmd.as_mut() {
                r.tail = s.qmd_head;
            }
            if let Some(r) = self.karg.as_mut() {
                r.tail = s.karg_head;
            }
            any = true;
        }
        any
    }

    /// Turn [seg_start, head) into a GPFIFO entry (written, not yet made visible).
    fn close_segment(&mut self) -> Result<()> {
        let len = self.cmd.head - self.seg_start;
        if len == 0 {
            return Ok(());
        }
        let va = self.cmd.alloc.gpu_va + (self.seg_start % self.cmd.cap) * 4;
        let entry = gp_entry(va, len as u32, false)?;
        let userd = self.raw.userd;
        // USERD may sit behind a slow CPU mapping (RM: BAR1): read GP_GET only when the last
        // value seen says the ring is full, and publish pending entries before waiting on it.
        if self.ring.full_by_last_get() && self.ring.free_slots(gp_get(userd)) == 0 {
            self.ring.kick();
        }
        let timeout = self.timeout_ns;
        let dev = self.dev.clone();
        let mut progress = || -> Result<u32> {
            if let Some(e) = dev.fault_error("tg_queue_submit") {
                return Err(e);
            }
            Ok(gp_get(userd))
        };
        self.ring.push(entry, &mut progress, timeout)?;
        self.seg_start = self.cmd.head;
        Ok(())
    }

    /// Make everything recorded so far visible to the GPU: close the segment with a release of
    /// the next timeline value, write the GPFIFO entry, GP_PUT, barrier, doorbell.
    pub fn submit(&mut self) -> Result<()> {
        self.submit_inner(true)
    }

    /// `submit` that writes GP_PUT but does not ring the doorbell, as if the GPU had acted on
    /// the doorbell before GP_PUT reached it. For tests of the waits' recovery (they ring
    /// again when they see no progress); not part of the API.
    #[doc(hidden)]
    pub fn submit_without_doorbell(&mut self) -> Result<()> {
        self.submit_inner(false)
    }

    fn submit_inner(&mut self, doorbell: bool) -> Result<()> {
        self.dev.check_usable()?;
        if self.cmd.head == self.seg_start && !self.replayed {
            return Ok(());
        }
        if self.log.len() == self.log.capacity() {
            let oldest = self.log.front().map(|s| s.value).unwrap_or(0);
            self.track.wait_timeline(
                &self.dev,
                oldest,
                self.timeout_ns,
                "tg_queue_submit (waiting for ring space)",
            )?;
            self.reclaim();
        }
        let value = self.track.submitted() + 1;
        let tl = self.track.timeline.gpu_va();
        // The reserve guarantees room for the release without waiting.
        let pos = self.cmd.pos() as usize;
        // SAFETY: SUBMIT_RESERVE_DW dwords at the head are always free and contiguous.
        let slice = unsafe {
            std::slice::from_raw_parts_mut(
                (self.cmd.alloc.cpu as *mut u32).add(pos),
                SUBMIT_RESERVE_DW as usize,
            )
        };
        let mut pb = PushBuf::for_arch(slice, self.dev.arch());
        pb.host_sem_release(tl, value, true, true, true)?;
        self.cmd.head += pb.len() as u64;
        self.close_segment()?;
        self.log.push_back(Submission {
            value,
            cmd_head: self.cmd.head,
            qmd_head: self.committed.0,
            karg_head: self.committed.1,
        });
        if doorbell {
            self.ring.kick();
        } else {
            self.ring.publish_put();
        }
        self.track.submitted.store(value, Ordering::Release);
        self.track.pending.store(false, Ordering::Release);
        self.last_was_launch = false;
        self.replayed = false;
        Ok(())
    }

    /// Record the replay of a command stream that lives outside this queue's rings (a finished
    /// command buffer: `dwords` dwords at `va`, self-contained apart from the channel state this
    /// queue keeps). The queue first records what its own state needs (local memory, cache
    /// invalidation, serialization after a launch), closes its segment, then pushes one GPFIFO
    /// entry for the stream. Returns the timeline value by which the replay has completed (the
    /// next submission's). No system call, no allocation.
    pub(crate) fn push_external(
        &mut self,
        va: u64,
        dwords: u32,
        ends_with_launch: bool,
    ) -> Result<u64> {
        self.dev.check_usable()?;
        if self.kind != QueueKind::Compute {
            return Err(Error::invalid(
                "tg_queue_replay: command buffers replay on compute queues; this is a copy queue",
            ));
        }
        let entry = gp_entry(va, dwords, false)?;
        let gen = self.dev.inner.local_generation.load(Ordering::Acquire);
        let local = if gen != self.local_generation {
            let lm = self.dev.inner.local.lock();
            lm.buf.as_ref().map(|b| (b.gpu_va, lm.bytes_per_tpc))
        } else {
            None
        };
        let serialize = self.last_was_launch;
        let code_gen = self.dev.inner.code_generation.load(Ordering::Acquire);
        let invalidate = code_gen != self.code_generation;
        if local.is_some() || serialize || invalidate {
            self.with_cmd(|pb| {
                if let Some((base, per_tpc)) = local {
                    pb.set_local_memory(base, per_tpc)?;
                }
                if serialize {
                    pb.wait_for_idle()?;
                }
                if invalidate {
                    pb.invalidate_shader_caches_no_wfi(INVALIDATE_BEFORE_LAUNCH)?;
                }
                Ok(())
            })?;
        }
        if local.is_some() {
            self.local_generation = gen;
        }
        self.code_generation = code_gen;
        self.close_segment()?;
        let userd = self.raw.userd;
        let timeout = self.timeout_ns;
        let dev = self.dev.clone();
        let mut progress = || -> Result<u32> {
            if let Some(e) = dev.fault_error("tg_queue_replay") {
                return Err(e);
            }
            Ok(gp_get(userd))
        };
        if self.ring.full_by_last_get() && self.ring.free_slots(gp_get(userd)) == 0 {
            self.ring.kick();
        }
        self.ring.push(entry, &mut progress, timeout)?;
        self.replayed = true;
        self.track.pending.store(true, Ordering::Release);
        self.last_was_launch = ends_with_launch;
        Ok(self.track.submitted() + 1)
    }

    /// The queue's shared state (for fences).
    pub(crate) fn track(&self) -> &Arc<QueueTrack> {
        &self.track
    }

    /// Record a kernel launch. `params` is the packed parameter block (`param_bytes` long).
    pub fn launch(&mut self, kernel: &Kernel, cfg: &LaunchConfig, params: &[u8]) -> Result<()> {
        let attrs = kernel.attributes();
        if params.len() != attrs.param_bytes as usize {
            return Err(Error::new(
                Status::InvalidLaunch,
                format!(
                    "tg_launch: kernel \"{}\" takes {} bytes of parameters, got {}",
                    attrs.name,
                    attrs.param_bytes,
                    params.len()
                ),
            ));
        }
        self.launch_with(kernel, cfg, |dst| {
            dst.copy_from_slice(params);
            Ok(())
        })
    }

    /// Record a kernel launch with parameters given as an array of pointers, one per parameter,
    /// each pointing to that parameter's value (like `cuLaunchKernel`'s `kernelParams`).
    ///
    /// # Safety
    /// Each pointer must be valid for reads of its parameter's size.
    pub unsafe fn launch_ptrs(
        &mut self,
        kernel: &Kernel,
        cfg: &LaunchConfig,
        args: &[*const u8],
    ) -> Result<()> {
        let attrs = kernel.attrs.clone();
        if args.len() != attrs.params.len() {
            return Err(Error::new(
                Status::InvalidLaunch,
                format!(
                    "tg_launch: kernel \"{}\" has {} parameters, got {} argument pointers",
                    attrs.name,
                    attrs.params.len(),
                    args.len()
                ),
            ));
        }
        if let Some(i) = args.iter().position(|p| p.is_null()) {
            return Err(Error::new(
                Status::NullPointer,
                format!("tg_launch: argument pointer {i} is NULL"),
            ));
        }
        self.launch_with(kernel, cfg, |dst| {
            for (p, a) in attrs.params.iter().zip(args) {
                let (o, s) = (p.offset as usize, p.size as usize);
                let d = dst
                    .get_mut(o..o + s)
                    .ok_or_else(|| Error::new(Status::Internal, "parameter outside the block"))?;
                // SAFETY: the caller guarantees `a` is readable for `s` bytes.
                std::ptr::copy_nonoverlapping(*a, d.as_mut_ptr(), s);
            }
            Ok(())
        })
    }

    fn check_launch(&self, kernel: &Kernel, cfg: &LaunchConfig) -> Result<()> {
        if self.kind != QueueKind::Compute {
            return Err(Error::new(
                Status::InvalidArgument,
                "tg_launch: launches need a compute queue; this is a copy queue",
            ));
        }
        check_launch(&self.dev, kernel, cfg)
    }

    fn launch_with(
        &mut self,
        kernel: &Kernel,
        cfg: &LaunchConfig,
        write_params: impl FnOnce(&mut [u8]) -> Result<()>,
    ) -> Result<()> {
        self.dev.check_usable()?;
        self.check_launch(kernel, cfg)?;
        let heads = (
            self.qmd.as_ref().map(|r| r.head),
            self.karg.as_ref().map(|r| r.head),
        );
        let r = self.record_launch(kernel, cfg, write_params);
        if r.is_err() {
            // Give back the slots of a launch that was not recorded (nothing references them).
            if let (Some(r), Some(h)) = (self.qmd.as_mut(), heads.0) {
                r.head = h;
            }
            if let (Some(r), Some(h)) = (self.karg.as_mut(), heads.1) {
                r.head = h;
            }
        }
        r
    }

    fn record_launch(
        &mut self,
        kernel: &Kernel,
        cfg: &LaunchConfig,
        write_params: impl FnOnce(&mut [u8]) -> Result<()>,
    ) -> Result<()> {
        let arch = self.dev.arch();
        let info = kernel.info();
        let coop_ws = if cfg.cooperative {
            Some(self.coop_workspace()?)
        } else {
            None
        };
        let param_base = info.param_base as u64;
        let cb_size = (param_base + info.param_bytes as u64).div_ceil(256) * 256;
        let qmd_va = self.alloc_qmd()?;
        let (qmd_gpu, qmd_cpu) = {
            let r = self.qmd.as_ref().expect("compute queue");
            (r.alloc.gpu_va, r.alloc.cpu)
        };
        let slot = ((qmd_va - qmd_gpu) / QMD_STRIDE) as usize;
        // sm_90: kernels that take a parameter's address (`__grid_constant__`, e.g. a TMA
        // tensor map) read the GPU address of the parameter block from c[0x0][0x198].
        let param_addr = info.param_base == 0x210;
        let in_slot = cb_size <= QMD_SLOT_CBANK_MAX;
        let karg_va = if in_slot {
            qmd_va + QMD_SLOT_CBANK
        } else {
            self.alloc_karg(cb_size)?
        };
        let ring_cb: *mut u8 = if in_slot {
            // SAFETY: inside the QMD slot just reserved.
            unsafe { qmd_cpu.add((qmd_va - qmd_gpu + QMD_SLOT_CBANK) as usize) }
        } else {
            let karg = self.karg.as_ref().expect("compute queue");
            // SAFETY: [karg_va, +cb_size) was just reserved in the CPU-mapped ring.
            unsafe { karg.alloc.cpu.add((karg_va - karg.alloc.gpu_va) as usize) }
        };
        // Build the image in cached memory, then write the ring (write-combined memory, behind a
        // bus on desktop GPUs) in sequential runs: everything, or only what changes per launch
        // when the slot already holds a constant bank of this kernel with this size.
        let cb: &mut [u8] = &mut self.scratch[..cb_size as usize];
        let dev_info = self.dev.info();
        let shared_total =
            crate::cubin::shared_memory_total(info, cfg.dynamic_shared_bytes, dev_info.sm_major);
        let p = crate::hw::cbank0::Cbank0Params {
            block: cfg.block,
            grid: cfg.grid,
            shared_window: dev_info.shared_window,
            local_window: dev_info.local_window,
            dynamic_smem_bytes: cfg.dynamic_shared_bytes,
            aggr_smem_bytes: crate::cubin::shared_memory_aggregate(info, cfg.dynamic_shared_bytes),
            sm_count: dev_info.sm_count,
            param_base: info.param_base,
            params: &[],
        };
        crate::hw::cbank0::build_cbank0(arch, cb, &p)?;
        let params_range = param_base as usize..param_base as usize + info.param_bytes as usize;
        write_params(&mut cb[params_range.clone()])?;
        if param_addr {
            cb[0x198..0x1a0].copy_from_slice(&(karg_va + param_base).to_le_bytes());
        }
        // A cooperative launch finds its grid workspace through the driver's "envreg" words
        // in constant bank 0; the slot's bank is then written whole and not reused as is.
        let cb_key = if let Some(ws) = coop_ws {
            crate::hw::cbank0::put_grid_workspace(arch, cb, ws)?;
            (0, 0)
        } else {
            (kernel.id, cb_size as u32)
        };
        let variable = cbank0_variable_ranges(info.param_base);
        match variable {
            Some(ranges) if in_slot && cb_key.0 != 0 && self.slot_cbank[slot] == cb_key => {
                for r in ranges.iter().chain(std::iter::once(&params_range)) {
                    // SAFETY: r lies inside the cbank (build_cbank0 checked param_base + bytes).
                    unsafe {
                        std::ptr::copy_nonoverlapping(
                            cb.as_ptr().add(r.start),
                            ring_cb.add(r.start),
                            r.len(),
                        )
                    };
                }
            }
            // SAFETY: the reserved ring range; the scratch image does not overlap it.
            _ => unsafe { std::ptr::copy_nonoverlapping(cb.as_ptr(), ring_cb, cb.len()) },
        }
        self.slot_cbank[slot] = if in_slot { cb_key } else { (0, 0) };
        let smem_config = crate::hw::qmd::smem_config(arch, shared_total)?;
        let mut words = [0u32; 96];
        kernel.qmd.write(
            &mut words,
            cfg.grid,
            cfg.block,
            shared_total,
            smem_config,
            (karg_va, cb_size as u32),
        )?;
        // The device's stack limit was raised after the kernel was taken: the launch gets it.
        let lm = kernel.own_lm.max(self.dev.stack_lm());
        if lm != kernel.qmd_lm {
            kernel.qmd.set_local_memory(&mut words, lm)?;
        }
        // SAFETY: the QMD slot (QMD_STRIDE bytes) was just reserved in the CPU-mapped ring.
        let dst = unsafe { qmd_cpu.add((qmd_va - qmd_gpu) as usize) as *mut u32 };
        if self.slot_qmd[slot] == kernel.id {
            for &i in kernel.qmd.variable_dwords() {
                // SAFETY: i < the QMD's dwords, inside the slot.
                unsafe { std::ptr::write_volatile(dst.add(i as usize), words[i as usize]) };
            }
        } else {
            // SAFETY: as above.
            unsafe { std::ptr::copy_nonoverlapping(words.as_ptr(), dst, kernel.qmd.dwords()) };
            self.slot_qmd[slot] = kernel.id;
        }
        let gen = self.dev.inner.local_generation.load(Ordering::Acquire);
        let local = if gen != self.local_generation {
            let lm = self.dev.inner.local.lock();
            lm.buf.as_ref().map(|b| (b.gpu_va, lm.bytes_per_tpc))
        } else {
            None
        };
        let serialize = self.last_was_launch;
        // Instruction/constant/global caches: invalidated when code was loaded since this
        // queue's last invalidate (each QMD also invalidates its constant bank 0 and the L1 data
        // caches itself).
        let code_gen = self.dev.inner.code_generation.load(Ordering::Acquire);
        let invalidate = code_gen != self.code_generation;
        self.with_cmd(|pb| {
            if let Some((base, per_tpc)) = local {
                pb.set_local_memory(base, per_tpc)?;
            }
            if serialize {
                pb.wait_for_idle()?;
            }
            if invalidate {
                pb.invalidate_shader_caches_no_wfi(INVALIDATE_BEFORE_LAUNCH)?;
            }
            pb.send_pcas(qmd_va, PCAS_ACTION)
        })?;
        if local.is_some() {
            self.local_generation = gen;
        }
        self.code_generation = code_gen;
        // The launch's QMD slot and constant bank belong to this submission from now on. A
        // submit forced by ring space in the middle of recording a launch (in alloc_karg or
        // with_cmd) must not hand them to an earlier submission, whose completion would free
        // them while this launch is still unsubmitted.
        self.committed = (
            self.qmd.as_ref().map(|r| r.head).unwrap_or(0),
            self.karg.as_ref().map(|r| r.head).unwrap_or(0),
        );
        self.last_was_launch = true;
        Ok(())
    }

    /// GPU address of this queue's grid-sync workspace, made (zeroed) on first use.
    fn coop_workspace(&mut self) -> Result<u64> {
        if let Some(a) = &self.coop_workspace {
            return Ok(a.gpu_va);
        }
        let a = self.dev.backend().alloc(
            4096,
            MemFlags {
                zeroed: true,
                ..Default::default()
            },
        )?;
        // grid_workspace { u32 wsSize; u32 barrier; }
        // SAFETY: the allocation is 4096 CPU-mapped bytes.
        unsafe { std::ptr::write_volatile(a.cpu as *mut u32, 8) };
        let va = a.gpu_va;
        self.coop_workspace = Some(a);
        Ok(va)
    }

    fn alloc_karg(&mut self, size: u64) -> Result<u64> {
        loop {
            let r = self.karg.as_ref().expect("compute queue");
            let pos = r.pos();
            let wrap = if pos + size > r.cap { r.cap - pos } else { 0 };
            if r.free() >= wrap + size {
                let r = self.karg.as_mut().expect("compute queue");
                r.head += wrap;
                let va = r.alloc.gpu_va + r.pos();
                r.head += size;
                return Ok(va);
            }
            self.make_progress("constant-bank ring")?;
        }
    }

    fn alloc_qmd(&mut self) -> Result<u64> {
        loop {
            let r = self.qmd.as_ref().expect("compute queue");
            if r.free() >= 1 {
                let r = self.qmd.as_mut().expect("compute queue");
                let va = r.alloc.gpu_va + r.pos() * QMD_STRIDE;
                r.head += 1;
                return Ok(va);
            }
            self.make_progress("QMD ring")?;
        }
    }

    /// Record a copy of `size_bytes` from `src` at `src_offset` to `dst` at `dst_offset`. On a
    /// copy queue the copy engine moves the bytes; on a compute queue the library's built-in
    /// copy kernel does (the SMs: full memory bandwidth, ordered with the queue's launches like
    /// any kernel). Overlapping ranges of one buffer are refused.
    pub fn copy(
        &mut self,
        dst: &Buffer,
        dst_offset: u64,
        src: &Buffer,
        src_offset: u64,
        size_bytes: u64,
    ) -> Result<()> {
        self.dev.check_usable()?;
        dst.check_range("tg_queue_copy: dst", dst_offset, size_bytes)?;
        src.check_range("tg_queue_copy: src", src_offset, size_bytes)?;
        if size_bytes == 0 {
            return Ok(());
        }
        let (d, s) = (dst.gpu_va() + dst_offset, src.gpu_va() + src_offset);
        if d < s + size_bytes && s < d + size_bytes {
            return Err(Error::invalid(format!(
                "tg_queue_copy: dst [{d:#x}, +{size_bytes}) and src [{s:#x}, +{size_bytes}) overlap (dst_offset {dst_offset}, src_offset {src_offset})"
            )));
        }
        self.copy_va(d, s, size_bytes)
    }

    /// Copy between raw GPU addresses (no range checks beyond the MMU's): copy engine on copy
    /// queues, built-in copy kernel on compute queues.
    pub fn copy_va(&mut self, dst_va: u64, src_va: u64, size_bytes: u64) -> Result<()> {
        if size_bytes == 0 {
            return Ok(());
        }
        if self.kind == QueueKind::Compute {
            return self.sm_copy(dst_va, src_va, size_bytes);
        }
        const CHUNK: u64 = 1 << 30;
        let mut done = 0;
        while done < size_bytes {
            let n = (size_bytes - done).min(CHUNK);
            self.with_cmd(|pb| pb.ce_copy_linear(src_va + done, dst_va + done, n))?;
            done += n;
        }
        self.last_was_launch = false;
        Ok(())
    }

    /// A copy on the SMs: one launch of the built-in `tg_copy` kernel.
    fn sm_copy(&mut self, dst_va: u64, src_va: u64, n: u64) -> Result<()> {
        self.dev.check_usable()?;
        let kernel = match &self.copy_kernel {
            Some(k) => k.clone(),
            None => {
                let info = self.dev.info();
                let cubin = crate::builtin::copy_cubin(info.sm_major, info.sm_minor).ok_or_else(|| {
                    Error::new(
                        Status::NotSupported,
                        format!(
                            "tg_queue_copy on a compute queue: no built-in copy kernel for sm_{}{}; use a copy queue",
                            info.sm_major, info.sm_minor
                        ),
                    )
                })?;
                let m = self.dev.load_module(cubin)?;
                let k = m.kernel(crate::builtin::COPY_KERNEL)?;
                self.copy_kernel = Some(k.clone());
                k
            }
        };
        let grid = crate::builtin::copy_grid(n);
        let mut params = [0u8; 24];
        params[0..8].copy_from_slice(&dst_va.to_le_bytes());
        params[8..16].copy_from_slice(&src_va.to_le_bytes());
        params[16..24].copy_from_slice(&n.to_le_bytes());
        let cfg = LaunchConfig {
            grid: [grid, 1, 1],
            block: [crate::builtin::COPY_BLOCK, 1, 1],
            dynamic_shared_bytes: 0,
            cooperative: false,
        };
        self.launch(&kernel, &cfg, &params)
    }

    /// Record a GPU write of `value` (and a timestamp) to `signal` once all earlier work on this
    /// queue is complete and visible.
    pub fn signal(&mut self, signal: &Signal, value: u64) -> Result<()> {
        self.dev.check_usable()?;
        let va = signal.gpu_va();
        self.with_cmd(|pb| pb.host_sem_release(va, value, true, true, true))?;
        self.last_was_launch = false;
        Ok(())
    }

    /// Record a GPU wait until `signal` ≥ `value` before later work on this queue starts. The
    /// comparison is unsigned 64-bit (host ACQ_STRICT_GEQ), the same rule as [`Signal::wait`].
    pub fn wait(&mut self, signal: &Signal, value: u64) -> Result<()> {
        self.dev.check_usable()?;
        let va = signal.gpu_va();
        self.with_cmd(|pb| pb.host_sem_acquire_geq(va, value))?;
        Ok(())
    }

    /// Record a full barrier: earlier work completes and its writes are visible (to the CPU and
    /// other engines) before later work starts.
    pub fn barrier(&mut self) -> Result<()> {
        self.dev.check_usable()?;
        let compute = self.kind == QueueKind::Compute;
        self.with_cmd(|pb| {
            if compute {
                pb.wait_for_idle()?;
            }
            pb.host_wfi()?;
            pb.host_membar_sys()
        })?;
        self.last_was_launch = false;
        Ok(())
    }
}

/// The bytes of constant bank 0 below the parameters that change from one launch of a kernel to
/// the next (launch dimensions, dynamic and aggregate shared memory, grid in clusters); the rest
/// of the driver-reserved area is the same for every launch on a device. `None`: unknown layout,
/// write the whole bank.
fn cbank0_variable_ranges(param_base: u32) -> Option<&'static [std::ops::Range<usize>]> {
    #[allow(clippy::single_range_in_vec_init)]
    const SM8X: [std::ops::Range<usize>; 1] = [0..0x30];
    const SM90: [std::ops::Range<usize>; 2] = [0..0x30, 0x138..0x168];
    match param_base {
        0x160 => Some(&SM8X),
        0x210 => Some(&SM90),
        _ => None,
    }
}

fn gp_get(userd: *mut u32) -> u32 {
    // SAFETY: USERD is mapped for the channel's lifetime; GP_GET is at byte 0x88.
    unsafe { std::ptr::read_volatile(userd.add(0x88 / 4)) }
}

impl Drop for Queue {
    fn drop(&mut self) {
        // Finish what was recorded, then wait (bounded) so the channel is idle before teardown
        // (an aborted queue tears its channel down with the work still on it).
        if self.drain_on_drop {
            let _ = self.submit();
            let _ = self.synchronize(self.timeout_ns);
        }
        for r in [Some(&self.cmd), self.qmd.as_ref(), self.karg.as_ref()]
            .into_iter()
            .flatten()
        {
            self.dev.free_when_idle(Allocation {
                gpu_va: r.alloc.gpu_va,
                cpu: r.alloc.cpu,
                size: r.alloc.size,
                id: r.alloc.id,
            });
        }
        if let Some(a) = self.coop_workspace.take() {
            self.dev.free_when_idle(a);
        }
    }
}

/// The checks every launch passes (queue or command buffer): the kernel's device, grid and block
/// limits, shared memory, cooperative residency.
pub(super) fn check_launch(dev: &Device, kernel: &Kernel, cfg: &LaunchConfig) -> Result<()> {
    let a = kernel.attributes();
    let [bx, by, bz] = cfg.block;
    let [gx, gy, gz] = cfg.grid;
    let bad = |m: String| {
        Err(Error::new(
            Status::InvalidLaunch,
            format!("tg_launch: kernel \"{}\": {m}", a.name),
        ))
    };
    if !Arc::ptr_eq(&kernel.module.dev.inner, &dev.inner) {
        return Err(Error::invalid(
            "tg_launch: the kernel belongs to another device",
        ));
    }
    if bx == 0 || by == 0 || bz == 0 || gx == 0 || gy == 0 || gz == 0 {
        return bad(format!(
            "grid ({gx},{gy},{gz}) and block ({bx},{by},{bz}) must have no zero dimension"
        ));
    }
    if bx > 1024 || by > 1024 || bz > 64 {
        return bad(format!(
            "block ({bx},{by},{bz}) exceeds the per-dimension limits (1024,1024,64)"
        ));
    }
    let threads = bx as u64 * by as u64 * bz as u64;
    if threads > a.max_threads_per_block as u64 {
        return bad(format!(
                "block ({bx},{by},{bz}) = {threads} threads exceeds the kernel's limit of {} threads ({} registers per thread)",
                a.max_threads_per_block, a.registers
            ));
    }
    if gx > i32::MAX as u32 || gy > 65535 || gz > 65535 {
        return bad(format!(
            "grid ({gx},{gy},{gz}) exceeds the limits ({}, 65535, 65535)",
            i32::MAX
        ));
    }
    if cfg.dynamic_shared_bytes > a.max_dynamic_shared_bytes {
        return bad(format!(
                "dynamic shared memory {} bytes exceeds the {} bytes available next to the kernel's {} static bytes",
                cfg.dynamic_shared_bytes, a.max_dynamic_shared_bytes, a.static_shared_bytes
            ));
    }
    if cfg.cooperative {
        let per_sm = kernel.max_active_blocks(threads as u32, cfg.dynamic_shared_bytes)?;
        let most = u64::from(per_sm) * u64::from(dev.info().sm_count);
        let blocks = gx as u64 * gy as u64 * gz as u64;
        if blocks > most {
            return bad(format!(
                    "cooperative grid ({gx},{gy},{gz}) = {blocks} blocks cannot be resident at once: at most {per_sm} blocks of {threads} threads per SM x {} SMs = {most}",
                    dev.info().sm_count
                ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::cbank0_variable_ranges;
    use crate::hw::arch::arch_by_name;
    use crate::hw::cbank0::{build_cbank0, Cbank0Params};

    /// Two launches with every per-launch value different differ only inside the ranges the
    /// queue rewrites when it reuses a slot (and the parameters).
    #[test]
    fn cbank0_differences_lie_in_the_variable_ranges() {
        for name in ["ga10b", "gh100"] {
            let arch = arch_by_name(name).unwrap();
            let base = arch.cbank0.param_base;
            let ranges = cbank0_variable_ranges(base).expect("known layout");
            let mk = |block, grid, dynamic, aggr| {
                let mut out = vec![0xAAu8; base as usize + 16];
                let p = Cbank0Params {
                    block,
                    grid,
                    shared_window: 0xfe_0000_0000,
                    local_window: 0xfd_0000_0000,
                    dynamic_smem_bytes: dynamic,
                    aggr_smem_bytes: aggr,
                    sm_count: 132,
                    param_base: base,
                    params: &[],
                };
                build_cbank0(arch, &mut out, &p).unwrap();
                out
            };
            let a = mk([1, 2, 3], [4, 5, 6], 0, 0x400);
            let b = mk([1024, 1, 1], [70000, 65535, 7], 0xC000, 0x10400);
            let mut differing = 0;
            for i in 0..base as usize {
                if a[i] != b[i] {
                    differing += 1;
                    assert!(
                        ranges.iter().any(|r| r.contains(&i)),
                        "{name}: byte {i:#x} changes outside the variable ranges"
                    );
                }
            }
            assert!(differing > 0);
        }
    }
}
