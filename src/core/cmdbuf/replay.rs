//! Replaying a finished command buffer on a compute queue ([`Queue::replay`], and its two
//! halves for the C API) and the bookkeeping of the replays in flight.

use super::{CmdBuf, Node};
use crate::core::queue::{Queue, QueueTrack};
use crate::core::Signal;
use crate::error::{Error, Result};
use std::sync::Arc;

impl Queue {
    /// Record a replay of the finished command buffer `cb` on this compute queue: one GPFIFO
    /// entry (plus what the queue's own channel state needs); the next submit makes it visible
    /// with one doorbell. No system call; no heap allocation once this queue has replayed `cb`.
    pub fn replay(&mut self, cb: &mut CmdBuf) -> Result<()> {
        if !Arc::ptr_eq(&cb.dev.inner, &self.device().inner) {
            return Err(cb.other_device());
        }
        let img = cb.finished(REPLAY)?;
        let (va, dwords, ends) = (img.alloc.gpu_va, img.dwords, img.ends_with_launch);
        let signals = img.signals;
        if img.cooperative {
            cb.check_no_replay_elsewhere(self.track())?;
        }
        if signals {
            let waits = cb.signal_waits(self.track());
            self.wait_for_releases(&waits)?;
        }
        let value = self.push_external(va, dwords, ends)?;
        cb.note_replay(self.track(), value);
        Ok(())
    }
}

const REPLAY: &str = "tg_queue_replay";

/// What [`CmdBuf::begin_replay`] hands to the queue: the image to push, and the releases of
/// other queues to wait for first ([`CmdBuf::signal_waits`]).
pub(crate) struct ReplayStart {
    pub(crate) va: u64,
    pub(crate) dwords: u32,
    pub(crate) ends_with_launch: bool,
    pub(crate) waits: Vec<(Arc<Signal>, u64)>,
}

impl Queue {
    /// Record a GPU wait for each (signal, value) of `waits`, ahead of a replay
    /// ([`CmdBuf::signal_waits`]).
    #[cold]
    pub(crate) fn wait_for_releases(&mut self, waits: &[(Arc<Signal>, u64)]) -> Result<()> {
        for (s, v) in waits {
            self.wait(s, *v)?;
        }
        Ok(())
    }

    /// Record the replay [`CmdBuf::begin_replay`] prepared (see [`Queue::push_external`]).
    #[inline(always)]
    pub(crate) fn push_replay(&mut self, r: &ReplayStart) -> Result<u64> {
        if !r.waits.is_empty() {
            self.wait_for_releases(&r.waits)?;
        }
        self.push_external(r.va, r.dwords, r.ends_with_launch)
    }
}

impl CmdBuf {
    /// A command buffer with cooperative launches replays on one queue at a time: each such
    /// launch has one grid barrier in the command buffer, which two grids running at once
    /// would share. Refused while a replay on another queue has not completed.
    #[cold]
    fn check_no_replay_elsewhere(&self, track: &Arc<QueueTrack>) -> Result<()> {
        for (w, v) in &self.inflight {
            if let Some(t) = w.upgrade() {
                if !Arc::ptr_eq(&t, track) && t.completed() < *v && t.channel_error().is_none() {
                    return Err(Error::invalid(format!(
                        "{REPLAY}: the command buffer holds cooperative launches and a replay on another queue ({} queue {}) has not completed; their grid barriers serve one replay at a time (wait for it, or record a second command buffer)",
                        t.kind_name, t.token
                    )));
                }
            }
        }
        Ok(())
    }

    #[cold]
    fn other_device(&self) -> Error {
        Error::invalid(format!(
            "{REPLAY}: the command buffer belongs to another device"
        ))
    }

    /// The command buffer is in use until `track`'s submission `value` has completed.
    #[inline(always)]
    fn note_replay(&mut self, track: &Arc<QueueTrack>, value: u64) {
        if self.image.as_ref().is_some_and(|i| i.signals) {
            self.note_signal_releases(track, value);
        }
        match self
            .inflight
            .iter_mut()
            .find(|(w, _)| std::ptr::eq(w.as_ptr(), Arc::as_ptr(track)))
        {
            Some((_, v)) => *v = (*v).max(value),
            None => self.inflight.push((Arc::downgrade(track), value)),
        }
    }

    /// The releases a replay on `track`'s queue must wait for first: for each signal node of
    /// value v whose signal another queue has submitted a release u < v of that the CPU does not
    /// yet see, (the signal, u), as [`Queue::signal`] waits for one. Else the replay's release
    /// could land first and the other's older value after it. Empty (no allocation) in the
    /// common case.
    #[cold]
    pub(crate) fn signal_waits(&self, track: &Arc<QueueTrack>) -> Vec<(Arc<Signal>, u64)> {
        let mut waits = Vec::new();
        for n in &self.nodes {
            if let Node::Signal { signal, value } = n {
                let before = signal.pending_release_elsewhere(track.serial);
                if before != 0 && before < *value {
                    waits.push((signal.clone(), before));
                }
            }
        }
        waits
    }

    /// Tell each signal the replay releases which queue carries the release (for waits that
    /// submit it).
    #[cold]
    fn note_signal_releases(&self, track: &Arc<QueueTrack>, value: u64) {
        for n in &self.nodes {
            if let Node::Signal { signal, value: v } = n {
                signal.note_release(track.serial, *v, value);
            }
        }
    }

    /// [`Queue::replay`] in two halves, for the C API: this one checks that the command buffer
    /// can replay on `q`, notes that it is in use until `q`'s next submission completes, and
    /// returns its image (GPU address, dwords, whether it ends with a launch) for
    /// `q.push_external`. The C API calls it under the command buffer's lock and records the
    /// replay after the unlock, so that no locked instruction runs between the writes to the
    /// write-combined rings and the submit's fence (on x86 each locked instruction drains the
    /// write-combining buffers). A later `set_params` waits for that submission like for any
    /// recorded replay.
    #[inline(always)]
    pub(crate) fn begin_replay(&mut self, q: &Queue) -> Result<ReplayStart> {
        if !Arc::ptr_eq(&self.dev.inner, &q.device().inner) {
            return Err(self.other_device());
        }
        let img = self.finished(REPLAY)?;
        let mut out = ReplayStart {
            va: img.alloc.gpu_va,
            dwords: img.dwords,
            ends_with_launch: img.ends_with_launch,
            waits: Vec::new(),
        };
        let signals = img.signals;
        if img.cooperative {
            self.check_no_replay_elsewhere(q.track())?;
        }
        if signals && q.is_compute() {
            // Before note_replay marks this queue as the signals' last releaser.
            out.waits = self.signal_waits(q.track());
        }
        if q.is_compute() {
            // (A copy queue is refused by push_external; nothing is noted for it.)
            self.note_replay(q.track(), q.track().submitted() + 1);
        }
        Ok(out)
    }
}
