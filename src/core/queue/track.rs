//! The queue's state shared with its device (timeline, fences).

use super::*;

/// The point every queue of a device had reached in submission when something was released:
/// the thing may be reused once every queue's timeline has passed its value.
pub(crate) type Fence = Vec<(std::sync::Weak<QueueTrack>, u64)>;

/// Record, for every live queue of `dev` that still has work in flight or recorded, the timeline
/// value after which that work is done: recorded but unsubmitted work holds what it uses
/// exactly as submitted work does (it completes with the queue's next submission).
pub(crate) fn fence_now(dev: &Device) -> Fence {
    // The queues are taken out under the lock and looked at after it: a queue whose last
    // reference is the one taken here is dropped at the end, and its drop (its timeline
    // signal's) takes this lock.
    let live: Vec<(std::sync::Weak<QueueTrack>, Arc<QueueTrack>)> = dev
        .inner
        .queues
        .lock()
        .iter()
        .filter_map(|w| w.upgrade().map(|t| (w.clone(), t)))
        .collect();
    live.iter()
        .filter(|(_, t)| t.completed() < t.holds_until())
        .map(|(w, t)| (w.clone(), t.holds_until()))
        .collect()
}

/// Like [`fence_now`], for submitted work only (recorded work does not run until submitted).
pub(crate) fn fence_now_submitted(dev: &Device) -> Fence {
    dev.live_queues()
        .iter()
        .filter(|t| t.completed() < t.submitted() && t.channel_error().is_none())
        .map(|t| (Arc::downgrade(t), t.submitted()))
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
    pub(super) channel: Box<dyn Channel>,
    pub(super) timeline: Signal,
    pub(super) submitted: AtomicU64,
    /// Commands are recorded that the next submit will carry. Set after each recorded command,
    /// cleared after `submitted` is advanced.
    pub(super) pending: AtomicBool,
    /// Unique among the queues of the process (never reused, unlike `token`): how a signal names
    /// the queue that recorded its last release ([`Signal::wait`] looks it up).
    pub serial: u64,
    /// Submits the queue on behalf of a waiter (`tg_queue_synchronize`'s device-wide and signal
    /// counterparts): set by an owner that can reach the queue from another call, such as the C
    /// API's handle table. Returns whether it submitted (false: the queue is busy elsewhere or
    /// owned by another thread, whose own submit will carry the work).
    pub submitter: std::sync::OnceLock<Box<dyn Fn() -> bool + Send + Sync>>,
}

/// The next [`QueueTrack::serial`].
pub(crate) fn next_queue_serial() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
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
    /// Whether commands are recorded that no submit has carried yet.
    pub fn has_unsubmitted(&self) -> bool {
        self.pending.load(Ordering::Acquire)
    }
    /// Submit the queue's recorded work through its [`submitter`](QueueTrack::submitter), if it
    /// has one and has unsubmitted work; returns whether a submit ran.
    pub fn submit_for_waiter(&self) -> bool {
        if !self.has_unsubmitted() {
            return false;
        }
        match self.submitter.get() {
            Some(f) => f(),
            None => false,
        }
    }
    pub fn wait_submitted(&self, dev: &Device, timeout_ns: u64) -> Result<()> {
        let target = self.submitted();
        self.wait_timeline(dev, target, timeout_ns, "tg_device_synchronize")
    }
    pub(super) fn wait_timeline(
        &self,
        dev: &Device,
        value: u64,
        timeout_ns: u64,
        call: &str,
    ) -> Result<()> {
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
    pub(super) fn timeline_ptr(&self) -> *const u8 {
        self.timeline.slot_ptr()
    }
}
