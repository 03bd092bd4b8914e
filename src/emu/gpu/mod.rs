//! The emulated GPU: host, compute and copy engines running channel work on a thread.
//!
//! The model runs asynchronously like hardware. One thread polls the registered usermode
//! (doorbell) pages, and services channels:
//!
//! - **Doorbell.** For each registered 64 KiB usermode page the thread atomically swaps the word
//!   at +0x90 (`NV_USERMODE_NOTIFY_CHANNEL_PENDING`) with the sentinel `0xFFFF_FFFF`; any other
//!   value read back is a ring carrying a work-submit token. Pages are set to the sentinel when
//!   added. Two rings written between two polls coalesce into one observed token, so on *any* ring
//!   the model services the rung channel **and every attached channel whose USERD GP_PUT differs
//!   from GP_GET** (a deliberate leniency; real Host would see both stores). A GP_PUT update with
//!   no ring at all does nothing.
//! - **Host.** A serviced channel fetches GPFIFO entries from GP_GET to GP_PUT through its MMU,
//!   executes each pushbuffer segment ([`host`]), and writes GP_GET back after each entry has been
//!   processed. A semaphore acquire that is not yet satisfied parks the channel, which is re-polled
//!   on every pass while other channels run.
//! - **Engines.** Compute ([`compute`]: QMD V03/V04 launches of reference kernels from
//!   [`crate::emu::kernels`]) and copy ([`copy`]) run synchronously inside the method stream.
//! - **Faults** are recorded in [`Gpu::faults`] first, then mark the channel dead and publish
//!   its `nvgpu_notification` (if it holds no error yet), so that whoever sees the notifier also
//!   finds the record; then the fault goes to the handler set with [`Gpu::set_fault_handler`]
//!   (the emulated kernel's interrupt handler, which recovers the channel's whole TSG), called
//!   outside the thread's pass.
//! - **Channel control** (what the kernel writes to the channel RAM): [`Gpu::set_channel_enabled`]
//!   stops Host from fetching on a channel (a running grid runs on to its end),
//!   [`Gpu::grid_running`] tells whether a grid is running on a channel and for how long (what a
//!   wait-for-idle preempt waits for), and a channel's NEXT bit ([`Gpu::read_next_bit`]) can be
//!   forced by a test hook ([`Gpu::set_next_bit`]).
//!
//! Polling is adaptive: after work the thread spins briefly (yielding), then sleeps with
//! exponential backoff up to ~200 µs; after 20 ms without any work it polls every 1 ms, so an
//! idle GPU costs little CPU (the first ring after a long pause is noticed within ~1 ms).

pub mod compute;
mod copy;
mod host;
pub(crate) mod mem;

use super::hwif::{GpuFault, HostPtr, HwChannel};

// Shared by the engines (host, compute, copy): kept here so that they import nothing from each
// other but the engine states the host drives.
/// nvgpu notifier codes.
pub(crate) const ERR_GR_EXCEPTION: u32 = 13;
pub(crate) const ERR_MMU_FAULT: u32 = 31;
pub(crate) const ERR_PBDMA_ERROR: u32 = 32;
pub(crate) const ERR_UNIMPLEMENTED_METHOD: u32 = 37;
pub(crate) const HOPPER_COMPUTE_A: u32 = 0xcbc0;
pub(crate) const HOPPER_DMA_COPY_A: u32 = 0xc8b5;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The interrupt handler of the kernel side: called with each fault after it was recorded, on the
/// GPU thread but outside its pass. It returns false when it cannot take the fault now (the
/// kernel is busy, e.g. polling a preempt that waits for this GPU): the fault stays pending and
/// is offered again after the next pass, so the GPU never waits for the kernel. The channel that
/// raised the fault comes with it: its token may belong to a newer channel by then.
pub type FaultHandler = Arc<dyn Fn(&GpuFault, &Arc<HwChannel>) -> bool + Send + Sync>;

/// Byte offset of NV_USERMODE_NOTIFY_CHANNEL_PENDING in the usermode page.
const DOORBELL_OFFSET: usize = 0x90;
/// Value the model leaves in the doorbell word between rings.
const DOORBELL_IDLE: u32 = 0xFFFF_FFFF;
/// Idle polls that only spin/yield before the thread starts sleeping.
const SPIN_POLLS: u32 = 64;
/// Longest sleep between idle polls while work was seen recently.
const MAX_SLEEP: Duration = Duration::from_micros(200);
/// After this long without any work the GPU is "deeply idle" and polls less often: a 200 µs
/// sleep loop alone costs ~8 % of a core here, which adds up with one GPU per test on 2-core CI.
const DEEP_IDLE_AFTER: Duration = Duration::from_millis(20);
/// Poll period when deeply idle: the first ring after a long pause is seen within ~1 ms.
const DEEP_IDLE_SLEEP: Duration = Duration::from_millis(1);

/// State shared between the API object and the GPU thread.
struct Shared {
    channels: Mutex<Vec<Arc<host::Slot>>>,
    doorbells: Mutex<Vec<HostPtr>>,
    faults: Mutex<Vec<GpuFault>>,
    /// Faults of the current pass not yet handed to `handler`.
    /// Faults not yet taken by the kernel's handler, each with the channel that raised it (a
    /// later channel may get the same token).
    pending: Mutex<Vec<(GpuFault, Arc<HwChannel>)>>,
    handler: Mutex<Option<FaultHandler>>,
    /// Held by the GPU thread for one whole poll; detach/remove take it to wait for the thread
    /// to let go of what they remove.
    busy: Mutex<()>,
    stop: AtomicBool,
}

/// One emulated GPU. Runs asynchronously on its own thread once created.
pub struct Gpu {
    shared: Arc<Shared>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl Gpu {
    /// Create the GPU and start its thread.
    pub fn new() -> Arc<Gpu> {
        let shared = Arc::new(Shared {
            channels: Mutex::new(Vec::new()),
            doorbells: Mutex::new(Vec::new()),
            faults: Mutex::new(Vec::new()),
            pending: Mutex::new(Vec::new()),
            handler: Mutex::new(None),
            busy: Mutex::new(()),
            stop: AtomicBool::new(false),
        });
        let s2 = shared.clone();
        let thread = std::thread::Builder::new()
            .name("emu-gpu".into())
            .spawn(move || gpu_thread(s2));
        // If the thread cannot be spawned the GPU simply never executes anything; channels then
        // time out in their waiters, which is what a hung GPU looks like.
        Arc::new(Gpu {
            shared,
            thread: Mutex::new(thread.ok()),
        })
    }

    /// Watch a 64 KiB usermode page: a store of a channel's token at +0x90 makes Host service it.
    pub fn add_doorbell(&self, page: HostPtr) {
        mem::host_store(page, DOORBELL_OFFSET, DOORBELL_IDLE);
        self.shared.doorbells.lock().push(page);
    }

    /// Stop watching a usermode page (before it is unmapped). Returns once the GPU thread no
    /// longer touches the page.
    pub fn remove_doorbell(&self, page: HostPtr) {
        self.shared.doorbells.lock().retain(|p| *p != page);
        drop(self.shared.busy.lock());
    }

    /// Make a channel runnable (after SETUP_BIND).
    pub fn attach_channel(&self, ch: Arc<HwChannel>) {
        let slot = Arc::new(host::Slot::new(ch));
        self.shared.channels.lock().push(slot);
    }

    /// Remove a channel; returns once the GPU thread no longer touches it.
    pub fn detach_channel(&self, token: u32) {
        self.shared.channels.lock().retain(|c| c.hw.token != token);
        // A fault of the channel not yet handed to the kernel goes with it: its token may be
        // reused by a new channel, which must not be recovered for it.
        self.shared.pending.lock().retain(|(f, _)| f.token != token);
        // The thread snapshots the channel list under `busy`; once we get `busy`, any pass that
        // could still hold the channel is over and later passes cannot see it.
        drop(self.shared.busy.lock());
    }

    /// Wait until the GPU thread has finished its current pass. Host pointers from
    /// [`Mmu::translate`](super::hwif::Mmu::translate) are only used within one pass, so after a
    /// mapping has been removed from an address space (new translations fail) and this returns,
    /// the GPU no longer touches the old backing memory and it may be freed.
    /// Must not be called from inside an `Mmu` implementation (the GPU thread would wait on itself).
    pub fn quiesce(&self) {
        drop(self.shared.busy.lock());
    }

    /// Faults raised so far, oldest first.
    pub fn faults(&self) -> Vec<GpuFault> {
        self.shared.faults.lock().clone()
    }

    /// Set the handler each fault is reported to (the kernel's interrupt handler).
    pub fn set_fault_handler(&self, h: FaultHandler) {
        *self.shared.handler.lock() = Some(h);
    }

    fn slot(&self, token: u32) -> Option<Arc<host::Slot>> {
        self.shared
            .channels
            .lock()
            .iter()
            .find(|c| c.hw.token == token)
            .cloned()
    }

    /// Set a channel's enable bit; false if no such channel is attached. A disabled channel
    /// fetches and executes nothing; a grid already running on it runs on to its end. Enabling
    /// a channel lets Host continue where it stopped.
    pub fn set_channel_enabled(&self, token: u32, enabled: bool) -> bool {
        let Some(s) = self.slot(token) else {
            return false;
        };
        s.enabled.store(enabled, Ordering::Release);
        if enabled {
            if let Some(h) = self.thread.lock().as_ref() {
                h.thread().unpark();
            }
        }
        true
    }

    /// How long the grid running on the channel has run (None: no grid is running, or no such
    /// channel).
    pub fn grid_running(&self, token: u32) -> Option<Duration> {
        let s = self.slot(token)?;
        let since = *s.grid_since.lock();
        since.map(|t| t.elapsed())
    }

    /// When the grid running on the channel started (None: no grid is running, or no such
    /// channel).
    pub fn grid_started(&self, token: u32) -> Option<Instant> {
        let s = self.slot(token)?;
        let since = *s.grid_since.lock();
        since
    }

    /// Test hook: the channel's NEXT bit reads as set for the next `reads` reads
    /// (`u32::MAX`: for ever). The model itself never sets it.
    pub fn set_next_bit(&self, token: u32, reads: u32) -> bool {
        let Some(s) = self.slot(token) else {
            return false;
        };
        s.next_reads.store(reads, Ordering::Release);
        true
    }

    /// Read the channel's NEXT bit (what the kernel's channel.read_state sees).
    pub fn read_next_bit(&self, token: u32) -> bool {
        let Some(s) = self.slot(token) else {
            return false;
        };
        s.next_reads
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| match n {
                0 => None,
                u32::MAX => Some(u32::MAX),
                n => Some(n - 1),
            })
            .is_ok()
    }

    /// Stop the GPU thread (idempotent).
    pub fn shutdown(&self) {
        self.shared.stop.store(true, Ordering::Release);
        let handle = self.thread.lock().take();
        if let Some(h) = handle {
            h.thread().unpark();
            if h.thread().id() != std::thread::current().id() {
                let _ = h.join();
            }
        }
    }
}

impl Drop for Gpu {
    fn drop(&mut self) {
        self.shutdown();
    }
}

fn gpu_thread(shared: Arc<Shared>) {
    let mut idle_polls = 0u32;
    let mut last_progress = Instant::now();
    while !shared.stop.load(Ordering::Acquire) {
        let progress = poll_once(&shared);
        // The kernel's interrupt handler runs outside the pass (it may wait for `busy`).
        let faults = std::mem::take(&mut *shared.pending.lock());
        if !faults.is_empty() {
            let handler = shared.handler.lock().clone();
            if let Some(h) = handler {
                let mut left: Vec<(GpuFault, Arc<HwChannel>)> =
                    faults.into_iter().filter(|(f, ch)| !h(f, ch)).collect();
                if !left.is_empty() {
                    let mut p = shared.pending.lock();
                    left.append(&mut p);
                    *p = left;
                }
            }
        }
        if progress {
            idle_polls = 0;
            last_progress = Instant::now();
            continue;
        }
        idle_polls = idle_polls.saturating_add(1);
        if idle_polls < SPIN_POLLS {
            std::hint::spin_loop();
            std::thread::yield_now();
        } else if last_progress.elapsed() >= DEEP_IDLE_AFTER {
            std::thread::park_timeout(DEEP_IDLE_SLEEP);
        } else {
            let shift = (idle_polls - SPIN_POLLS).min(8);
            let sleep = Duration::from_micros(1u64 << shift).min(MAX_SLEEP);
            std::thread::park_timeout(sleep);
        }
    }
}

/// One pass: collect doorbell rings, then service every active channel. Returns whether any
/// ring was seen or any channel made progress.
fn poll_once(shared: &Shared) -> bool {
    let _busy = shared.busy.lock();
    let mut rung: Vec<u32> = Vec::new();
    for page in shared.doorbells.lock().iter() {
        if let Some(old) = mem::host_swap(*page, DOORBELL_OFFSET, DOORBELL_IDLE) {
            if old != DOORBELL_IDLE {
                rung.push(old);
            }
        }
    }
    let channels: Vec<Arc<host::Slot>> = shared.channels.lock().clone();
    let mut progress = !rung.is_empty();
    for slot in &channels {
        let mut st = slot.state.lock();
        if !rung.is_empty() && (rung.contains(&slot.hw.token) || slot.put_differs(&st)) {
            st.active = true;
        }
        if !st.active {
            continue;
        }
        // A panic inside the model (a bug, or a test's reference kernel) must not kill the GPU
        // thread: it becomes a fault of the channel that was running.
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            host::service(slot, &mut st)
        }))
        .unwrap_or_else(|e| {
            let msg = e
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| e.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            Err(Fault::new(
                host::ERR_GR_EXCEPTION,
                None,
                format!("GPU model panicked: {msg}"),
            ))
        });
        match result {
            Ok(p) => {
                progress |= p;
                *slot.grid_since.lock() = st.grid_since();
            }
            Err(f) => {
                progress = true;
                st.active = false;
                *slot.grid_since.lock() = None;
                post_fault(shared, &slot.hw, f);
            }
        }
    }
    progress
}

/// A fault raised while executing a channel.
#[derive(Debug)]
pub(crate) struct Fault {
    /// nvgpu notifier code (31 MMU, 13 GR exception, 32 PBDMA, 37 unimplemented method).
    pub code: u32,
    pub address: Option<u64>,
    pub what: String,
}

impl Fault {
    pub(crate) fn new(code: u32, address: Option<u64>, what: impl Into<String>) -> Fault {
        Fault {
            code,
            address,
            what: what.into(),
        }
    }
}

impl From<super::hwif::MmuFault> for Fault {
    fn from(f: super::hwif::MmuFault) -> Fault {
        Fault {
            code: host::ERR_MMU_FAULT,
            address: Some(f.address),
            what: format!("MMU fault: {}", f.what),
        }
    }
}

/// Record the fault, mark the channel dead, then publish its notifier (only if it holds no error
/// yet: linux-channel.c:nvgpu_set_err_notifier_if_empty) and queue the fault for the kernel's
/// handler. The record comes first so that whoever sees the notifier (or GET_TIMEDOUT) finds it;
/// the notifier's status word is stored last, with Release ordering.
fn post_fault(shared: &Shared, ch: &Arc<HwChannel>, f: Fault) {
    let rec = GpuFault {
        token: ch.token,
        code: f.code,
        address: f.address,
        what: f.what,
    };
    shared.faults.lock().push(rec.clone());
    // The notifier before the channel reads as dead (GET_TIMEDOUT): whoever finds it dead finds
    // the cause too, as the driver's recovery sets the error notifiers before it makes the
    // channels unserviceable (common/rc/rc.c:nvgpu_rc_tsg_and_related_engines).
    if let Some(n) = *ch.notifier.lock() {
        super::hwif::post_notifier_if_empty(n, f.code);
    }
    ch.dead.store(true, Ordering::Release);
    shared.pending.lock().push((rec, ch.clone()));
}
