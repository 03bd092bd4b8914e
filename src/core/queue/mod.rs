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
use super::{Buffer, DEFAULT_TIMEOUT_NS, TEXTURE_POOL_ENTRIES};
use crate::backend::{Allocation, Channel, ChannelError, ChannelRaw, CopyEngine, Engine, MemFlags};
use crate::error::{Error, Result, Status};
use crate::hw::gpfifo::{gp_entry, GpRing};
use crate::hw::pushbuf::PushBuf;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

mod commands;
mod launch;
mod submit;
mod track;
mod transfer;

use submit::release_template;

pub use commands::ValueCond;
pub(crate) use launch::{build_launch_cbank, build_launch_qmd, check_launch, launch_cluster};
pub(crate) use track::{
    fence_now, fence_now_submitted, fence_passed, next_queue_serial, wait_fence, Fence, QueueTrack,
};
pub use transfer::STAGING_CHUNK;

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
    /// Blocks in x, y and z.
    pub grid: [u32; 3],
    /// Threads per block in x, y and z.
    pub block: [u32; 3],
    /// Dynamic shared memory per block, bytes.
    pub dynamic_shared_bytes: u32,
    /// Cooperative launch: every block resident at once, grid-wide sync available.
    pub cooperative: bool,
    /// The launch may run concurrently with the launch recorded just before it (and with what
    /// that one may run concurrently with): it does not wait for it to finish, only for what
    /// that launch waited for. For kernels that neither read nor write what the launches of the
    /// group write. Not with `cooperative`.
    pub concurrent: bool,
    /// Thread-block cluster shape (sm_90 and later); `[0; 3]` for none, or the kernel's
    /// compile-time shape (`__cluster_dims__`) when it declares one.
    pub cluster: [u32; 3],
}

/// How long queue creation waits for the device's submitted work to finish before it calls the
/// device busy (backends whose channel setup preempts running work).
const CHANNEL_SETUP_IDLE_WAIT: std::time::Duration = std::time::Duration::from_millis(50);

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

/// Launch images a queue keeps (direct-mapped by kernel id).
const IMAGE_WAYS: usize = 4;
/// Constant-bank bytes below the parameters an image keeps (sm_8x 0x160, sm_90 0x210).
const IMAGE_PREFIX_MAX: usize = 0x210;
/// Dwords of a submit's closing release: header, address (2), payload (2), SEM_EXECUTE.
const RELEASE_DW: usize = 6;

/// One launch as this queue built it, for the next launch of the same kernel with the same
/// configuration (grid, block, dynamic shared memory) and local-memory size: its QMD and the
/// driver-reserved part of its constant bank are the same, so only the parameters are new.
#[derive(Clone, Copy)]
struct LaunchImage {
    /// Unique within the queue; 0 = empty.
    id: u64,
    kernel: u64,
    cfg: LaunchConfig,
    lm: u32,
    cb_size: u32,
    param_base: u32,
    param_bytes: u32,
    /// The QMD, with constant bank 0 at the address of the launch that built it.
    qmd: [u32; 96],
    /// Constant bank bytes [0, param_base).
    prefix: [u8; IMAGE_PREFIX_MAX],
}

const EMPTY_IMAGE: LaunchImage = LaunchImage {
    id: 0,
    kernel: 0,
    cfg: LaunchConfig {
        grid: [0; 3],
        block: [0; 3],
        dynamic_shared_bytes: 0,
        cooperative: false,
        concurrent: false,
        cluster: [0; 3],
    },
    lm: 0,
    cb_size: 0,
    param_base: 0,
    param_bytes: 0,
    qmd: [0; 96],
    prefix: [0; IMAGE_PREFIX_MAX],
};

/// The methods of a launch, encoded once per queue: WAIT_FOR_IDLE, and SEND_PCAS_A's header
/// and the SEND_SIGNALING_PCAS2_B word around the QMD address.
#[derive(Clone, Copy)]
struct LaunchWords {
    wait_for_idle: u32,
    send_pcas: [u32; 2],
}

impl LaunchWords {
    fn new(dev: &Device) -> Result<LaunchWords> {
        let mut w = [0u32; 4];
        let mut pb = PushBuf::for_arch(&mut w, dev.arch());
        pb.wait_for_idle()?;
        pb.send_pcas(0, PCAS_ACTION)?;
        if pb.len() != 4 {
            return Err(Error::new(
                Status::Internal,
                format!("a launch's methods take {} dwords, expected 4", pb.len()),
            ));
        }
        Ok(LaunchWords {
            wait_for_idle: w[0],
            send_pcas: [w[1], w[3]],
        })
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
    /// Position of the head (`cap` is a power of two).
    #[inline(always)]
    fn pos(&self) -> u64 {
        self.head & (self.cap - 1)
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

/// How a copy queue hands a copy to its copy engine ([`Queue::set_copy_split`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CopySplit {
    /// One copy-engine launch per copy (per GiB of it), each after the one before.
    #[default]
    Whole,
    /// Launches of this many bytes (4 KiB ..= 1 GiB): the first waits for the work before it,
    /// each later one may overlap the one before it (LAUNCH_DMA `PIPELINED`); the last
    /// flushes.
    Pieces(u64),
    /// Multi-line launches whose lines are this many bytes (4 KiB ..= 1 GiB), up to 2^20 lines
    /// each, then the rest of the copy in one line.
    Lines(u32),
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
    /// Per QMD slot: the id of the launch image whose QMD, and whose constant bank at
    /// +QMD_SLOT_CBANK, the slot holds (0 = none). A launch from that image into the slot
    /// writes only its parameters.
    slot_qmd: Vec<u64>,
    slot_cbank: Vec<u64>,
    /// Launches built before, by kernel id modulo IMAGE_WAYS; `next_image` numbers them.
    images: Box<[LaunchImage; IMAGE_WAYS]>,
    next_image: u64,
    /// The closing release of a submit with payload 0 (payload at dwords 3 and 4).
    release: [u32; RELEASE_DW],
    /// The methods of a launch, encoded once.
    launch_words: LaunchWords,
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
    /// Staging buffers of host transfers and fills that recorded copies still read or write,
    /// with the timeline value after which the queue no longer uses each (oldest first).
    staging: VecDeque<(Allocation, u64)>,
    /// A command-buffer replay was pushed since the last submit: the next submit must close it
    /// with a timeline release even when the command ring holds nothing new.
    replayed: bool,
    /// The last launch was a command buffer's, possibly chained to the launches before it: a
    /// concurrent launch after it still waits for idle (it must not overlap those).
    after_replay: bool,
    /// How copies on a copy queue go to the copy engine.
    copy_split: CopySplit,
    /// Compute queues: completion without waiting for the engine to be idle (see `Overlap`).
    overlap: Option<Overlap>,
}

/// How a compute queue learns that its own work is done, and keeps its launches in order,
/// without waiting for the whole engine to be idle (which would also wait for the other queues'
/// kernels, so queues could not run side by side). Each launch's QMD releases the launch's
/// number to `counter` when its grid completes (after the grid-end CWD_MEMBAR_TYPE
/// L1_SYSMEMBAR every queue launch carries, so its writes are visible; the release itself has
/// no FE_SYSMEMBAR). A submit whose last command is that launch moves the launch's release to
/// the queue's timeline with the submit's value (the QMD is not yet submitted) and adds no
/// method; a [`Queue::signal`] directly after the launch has the QMD's release slot 1 release
/// the signal, with a timestamp, and adds no method either. Work that must follow the last
/// launch (the next launch, a later signal, a submit's closing release) has the channel
/// acquire what that launch releases, unless the CPU already sees it released; the acquire
/// does not let the scheduler leave the TSG (ACQUIRE_SWITCH_TSG off: with it on, a launch +
/// synchronize took about 13 µs on an H100). Releases go out without wait-for-idle. After a
/// concurrent launch or a command buffer's launches (which may complete out of order or carry
/// no release) the queue waits for idle as before. On by default; `TEGRAGPU_QUEUE_OVERLAP=0`
/// when the queue is created turns it off (every launch after a launch, every signal and
/// submit then waits for the engine to be idle, as do other queues' kernels).
struct Overlap {
    /// The launch counter: a word of device memory (desktop: video memory), which the GPU
    /// releases and acquires without crossing the bus; the CPU does not poll it (a counter in
    /// host memory, polled by the CPU, made each launch after a launch about 0.7 µs slower on
    /// an H100).
    counter: Allocation,
    /// The closing/timeline release without wait-for-idle, payload at dwords 3 and 4.
    release: [u32; RELEASE_DW],
    /// The acquire of `counter` ≥ payload (dwords 3 and 4).
    acquire: [u32; RELEASE_DW],
    /// The acquire of the timeline ≥ payload (dwords 3 and 4).
    acquire_timeline: [u32; RELEASE_DW],
    /// The number of the last launch recorded (its QMD releases it).
    seq: u64,
    /// Every launch since the last release that waited for the queue's work ran after the one
    /// before it (no concurrent launch, no command buffer).
    ordered: bool,
    /// A launch was recorded since that release.
    launched: bool,
    /// QMD dwords of release slot 0's payload (low, high).
    payload_dwords: (usize, usize),
    /// The QMD dwords of release slot 0's address: (dword, its value for the counter, for the
    /// timeline), low then high part (see `crate::hw::qmd::release0_addr_words`).
    addr: [(usize, u32, u32); 2],
    /// What the last ordered launch releases when its grid completes: (on the timeline rather
    /// than the counter, value).
    target: (bool, u64),
    /// The QMD of the last launch recorded (valid while `Queue::last_was_launch`).
    last_qmd_va: u64,
    /// The last submit was closed by its last launch's QMD release (nothing in the channel
    /// waits for that launch): the next launch waits for it as if it followed it directly.
    closed: bool,
    /// The command ring's head right after the last launch's methods: while it has not moved,
    /// nothing was recorded after that launch, and its QMD (not yet submitted) can release
    /// what follows it.
    launch_end: u64,
    /// The QMD version's dword holding release slot 1's enable bit, and the last launch's QMD's
    /// value of it (slot 1 disabled).
    rel1_ctl: usize,
    last_ctl: u32,
    /// A [`Queue::signal`] directly after the last launch took that launch's release slot 1.
    rel1_used: bool,
    /// Per QMD slot: its QMD's release slot 1 was enabled by a signal (a launch reusing the
    /// slot's QMD must disable it again).
    rel1_slots: Vec<bool>,
}

impl Overlap {
    /// The counter and the two methods for a compute queue whose timeline is at `timeline_va`;
    /// `None` where the QMD's release payload is not in whole dwords.
    fn new(dev: &Device, timeline_va: u64, depth: usize) -> Result<Option<Overlap>> {
        let Some(payload_dwords) = crate::hw::qmd::release0_payload_dwords(dev.arch().qmd_version)
        else {
            return Ok(None);
        };
        let counter = dev.backend().alloc(
            4096,
            MemFlags {
                zeroed: true,
                ..Default::default()
            },
        )?;
        let cva = counter.gpu_va;
        let words = |va: u64| {
            crate::hw::qmd::release0_addr_words(dev.arch().qmd_version, &Overlap::release0(va, 0))
        };
        let (c, t) = match (words(cva), words(timeline_va)) {
            (Ok(c), Ok(t)) => (c, t),
            (Err(e), _) | (_, Err(e)) => {
                let _ = dev.backend().free(&counter);
                return Err(e);
            }
        };
        let addr = [(c[0].0, c[0].1, t[0].1), (c[1].0, c[1].1, t[1].1)];
        let acq = |va: u64| {
            submit::sem_template(dev, move |pb, v| {
                pb.host_sem_acquire_switch(va, v, true, crate::hw::pushbuf::SemCond::Geq, false)
            })
        };
        Ok(Some(Overlap {
            release: submit::sem_template(dev, |pb, v| {
                pb.host_sem_release(timeline_va, v, true, true, false)
            })?,
            acquire: acq(cva)?,
            acquire_timeline: acq(timeline_va)?,
            counter,
            seq: 0,
            ordered: true,
            launched: false,
            payload_dwords,
            addr,
            target: (false, 0),
            last_qmd_va: 0,
            closed: false,
            launch_end: 0,
            rel1_ctl: crate::hw::qmd::release1_ctl_dword(dev.arch().qmd_version),
            last_ctl: 0,
            rel1_used: false,
            rel1_slots: vec![false; depth],
        }))
    }

    /// Whether the next launch must wait for the last one although other commands came
    /// between them (see `closed`).
    #[inline(always)]
    fn pending(o: &Option<Overlap>) -> bool {
        matches!(o, Some(o) if o.closed)
    }

    /// Whether the CPU already sees what the last ordered launch releases (`timeline` is the
    /// queue's): then work after it needs no acquire, the launch is complete and its writes
    /// visible. A load of host memory, no system call.
    #[inline(always)]
    fn reached(&self, timeline: &Signal) -> bool {
        // The counter is not read: it is in device memory, behind the bus.
        self.target.0 && timeline.value() >= self.target.1
    }

    /// The launch counter's release (slot 0 of each launch's QMD) of `value` to `va`: 64-bit,
    /// no timestamp, no membar of its own (see `Overlap`).
    fn release0(va: u64, value: u64) -> crate::hw::qmd::QmdRelease {
        crate::hw::qmd::QmdRelease {
            membar_sys: false,
            ..crate::hw::qmd::QmdRelease::new(va, value)
        }
    }

    /// The value the launches' QMDs have released to the counter so far.
    fn counter_value(&self) -> u64 {
        // SAFETY: the counter's 8 bytes stay mapped until the queue is dropped.
        unsafe { std::ptr::read_volatile(self.counter.cpu as *const u64) }
    }

    /// The acquire of what the last ordered launch releases.
    #[inline(always)]
    fn acquire_target(&self) -> [u32; RELEASE_DW] {
        let mut w = if self.target.0 {
            self.acquire_timeline
        } else {
            self.acquire
        };
        w[3] = self.target.1 as u32;
        w[4] = (self.target.1 >> 32) as u32;
        w
    }
}

const _: () = assert!(SUBMIT_RESERVE_DW as usize >= 2 * RELEASE_DW);

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
    if !(bytes / unit).is_power_of_two() {
        return Err(Error::new(
            Status::Internal,
            format!("ring of {bytes} bytes in units of {unit}: not a power of two"),
        ));
    }
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
        Self::new_on(dev, kind, config, CopyEngine::Auto)
    }

    /// A queue whose channel, for a copy queue, runs on `copy_engine`.
    pub(crate) fn new_on(
        dev: &Device,
        kind: QueueKind,
        config: QueueConfig,
        copy_engine: CopyEngine,
    ) -> Result<Queue> {
        let depth = config.depth;
        if kind == QueueKind::Compute && copy_engine != CopyEngine::Auto {
            return Err(Error::invalid(format!(
                "tg_queue_create: a copy engine ({copy_engine}) was named for a compute queue"
            )));
        }
        if !depth.is_power_of_two() || !(16..=65536).contains(&depth) {
            return Err(Error::invalid(format!(
                "tg_queue_create: depth {depth} must be a power of two from 16 to 65536"
            )));
        }
        let engine = match kind {
            QueueKind::Compute => Engine::Compute,
            QueueKind::Copy => Engine::Copy,
        };
        // Whether the device's queues have completed what they submitted: a backend whose
        // channel setup preempts running work needs to know (nvgpu, see
        // backend::pool). Work that ends soon (a queue's set-up, short kernels) is
        // waited for first, a little.
        let idle = if dev.backend().channel_setup_preempts(engine) {
            let f = fence_now_submitted(dev);
            let deadline = std::time::Instant::now() + CHANNEL_SETUP_IDLE_WAIT;
            loop {
                if fence_passed(&f) {
                    break true;
                }
                if std::time::Instant::now() >= deadline {
                    break false;
                }
                std::thread::sleep(std::time::Duration::from_micros(50));
            }
        } else {
            true
        };
        let channel = match copy_engine {
            CopyEngine::Auto => dev.backend().create_channel(engine, depth, idle)?,
            other => dev.backend().create_copy_channel(other, depth, idle)?,
        };
        let ring_start = channel.ring_start();
        let raw = channel.raw();
        let timeline = dev.create_signal(0)?;
        let timeline_va = timeline.gpu_va();
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
            serial: next_queue_serial(),
            submitter: std::sync::OnceLock::new(),
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
                // Launches write SEND_PCAS_A without checking the QMD address each time.
                let q = &allocs[1].alloc;
                if q.gpu_va & 0xFF != 0 || q.gpu_va + q.size > 1 << 40 {
                    return Err(Error::new(
                        Status::Internal,
                        format!(
                            "tg_queue_create: QMD ring at {:#x} (+{:#x}) is not 256-byte aligned below 2^40",
                            q.gpu_va, q.size
                        ),
                    ));
                }
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
        let mut ring = ring;
        // A channel reused from a pool continues where its previous queue left the ring.
        ring.reset(ring_start);
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
            log: VecDeque::with_capacity((depth as usize).min(raw.entries as usize)),
            committed: (0, 0),
            last_was_launch: false,
            scratch: vec![0u8; crate::hw::cbank0::MAX_CBANK0_BYTES].into_boxed_slice(),
            slot_qmd: vec![0; depth as usize],
            slot_cbank: vec![0; depth as usize],
            images: Box::new([EMPTY_IMAGE; IMAGE_WAYS]),
            next_image: 0,
            release: release_template(dev, timeline_va)?,
            launch_words: LaunchWords::new(dev)?,
            coop_workspace: None,
            local_generation: 0,
            code_generation: 0,
            timeout_ns: DEFAULT_TIMEOUT_NS,
            copy_kernel: None,
            drain_on_drop: true,
            staging: VecDeque::new(),
            replayed: false,
            after_replay: false,
            copy_split: CopySplit::Whole,
            overlap: None,
        };
        if kind == QueueKind::Compute
            && std::env::var("TEGRAGPU_QUEUE_OVERLAP").as_deref() != Ok("0")
        {
            q.overlap = Overlap::new(dev, timeline_va, depth as usize)?;
        }
        q.record_init()?;
        q.submit()?;
        Ok(q)
    }

    pub fn kind(&self) -> QueueKind {
        self.kind
    }

    /// The engine this queue's work runs on, in words: `SMs` for a compute queue; for a copy
    /// queue the copy engine (RM: `LCE4 (12 PCEs, PCE mask 0xfff)`, or the GR copy engine with
    /// the reason the engine asked for was not used).
    pub fn engine(&self) -> String {
        match self.kind {
            QueueKind::Compute => "SMs".to_string(),
            QueueKind::Copy => {
                let l = self.track.channel.engine_label();
                if l.is_empty() {
                    "copy engine".to_string()
                } else {
                    l
                }
            }
        }
    }

    /// How later copies on this copy queue go to the copy engine (default
    /// [`CopySplit::Whole`]); a tuning knob for finding what the engine runs fastest.
    pub fn set_copy_split(&mut self, split: CopySplit) -> Result<()> {
        if self.kind != QueueKind::Copy {
            return Err(Error::invalid(format!(
                "tg_queue_set_copy_split: {split:?} applies to copy queues; this is a compute queue (its copies run on the SMs)"
            )));
        }
        let ok = |b: u64| (4096..=1 << 30).contains(&b);
        match split {
            CopySplit::Whole => {}
            CopySplit::Pieces(b) if ok(b) => {}
            CopySplit::Lines(b) if ok(u64::from(b)) => {}
            _ => {
                return Err(Error::invalid(format!(
                    "tg_queue_set_copy_split: {split:?}: pieces and lines are 4 KiB ..= 1 GiB"
                )))
            }
        }
        self.copy_split = split;
        Ok(())
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
        // Its work may still run: the channel is closed, never handed to another queue.
        self.track.channel.discard();
    }

    /// Submit what was recorded (as [`Queue::submit`]), then wait until all of the queue's work
    /// has completed: a launch followed by `synchronize` runs, as `cuLaunchKernel` +
    /// `cuStreamSynchronize` does.
    pub fn synchronize(&mut self, timeout_ns: u64) -> Result<()> {
        self.submit()?;
        self.wait_submitted(timeout_ns)
    }

    /// Wait until everything submitted on this queue has completed; work recorded but not
    /// submitted is neither submitted nor waited for.
    pub fn wait_submitted(&self, timeout_ns: u64) -> Result<()> {
        self.track.wait_timeline(
            &self.dev,
            self.track.submitted(),
            timeout_ns,
            "tg_queue_synchronize",
        )?;
        self.dev.flush_printf();
        Ok(())
    }

    /// The point everything submitted on this queue so far has completed by, as a value that
    /// outlives the borrow of the queue: wait for it ([`QueuePoint::wait`]) from any thread
    /// while others go on recording on the queue (behind their own lock). No allocation.
    pub fn submitted_point(&self) -> QueuePoint {
        QueuePoint {
            dev: self.dev.clone(),
            track: self.track.clone(),
            value: self.track.submitted(),
        }
    }

    /// Whether this is a compute queue.
    pub(crate) fn is_compute(&self) -> bool {
        self.kind == QueueKind::Compute
    }

    /// The queue's shared state (for fences).
    pub(crate) fn track(&self) -> &Arc<QueueTrack> {
        &self.track
    }
}

impl Drop for Queue {
    fn drop(&mut self) {
        // Finish what was recorded, then wait (bounded) so the channel is idle before teardown
        // (an aborted queue tears its channel down with the work still on it).
        if self.drain_on_drop {
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
        if let Some(o) = self.overlap.take() {
            self.dev.free_when_idle(o.counter);
        }
        // Staging buffers the queue has passed go back to the device's pool; the others (an
        // aborted queue's, or a drain that timed out) are freed once the work is gone.
        self.staging_reclaim();
        for (a, _) in self.staging.drain(..) {
            self.dev.free_when_idle(a);
        }
    }
}

/// A point of a queue's timeline ([`Queue::submitted_point`]).
pub struct QueuePoint {
    dev: Device,
    track: Arc<QueueTrack>,
    value: u64,
}

impl QueuePoint {
    /// Wait until the queue's work up to this point has completed (as
    /// [`Queue::wait_submitted`]).
    pub fn wait(&self, timeout_ns: u64) -> Result<()> {
        self.track
            .wait_timeline(&self.dev, self.value, timeout_ns, "tg_queue_synchronize")?;
        self.dev.flush_printf();
        Ok(())
    }

    /// Whether the queue's work up to this point has completed.
    pub fn reached(&self) -> bool {
        self.track.completed() >= self.value
    }
}
