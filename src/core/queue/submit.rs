//! The command ring and submission: reserving command space, reclaiming ring regions from the
//! queue's timeline, closing segments into GPFIFO entries, and `submit` (closing release,
//! GP_PUT, doorbell).

use super::*;

impl Queue {
    pub(super) fn record_init(&mut self) -> Result<()> {
        let info = self.dev.info().clone();
        let (tex_headers, tex_samplers) = self.dev.inner.textures.lock().addresses();
        let tex_v2 = self.dev.inner.tex_header_v2;
        let class = self.raw.class;
        let sub = self.raw.subchannel;
        // With `Overlap`, the device's local-memory store as of now is set here, before any
        // launch: the engine waits for idle before that state changes, which at the first
        // launch would hold it back behind the other queues' kernels.
        let local = if sub == crate::hw::method::SUBCH_COMPUTE && self.overlap.is_some() {
            let lm = self.dev.inner.local.lock();
            lm.buf
                .as_ref()
                .map(|b| (b.gpu_va, lm.bytes_per_tpc, lm.generation))
        } else {
            None
        };
        self.with_cmd(|pb| {
            pb.set_object(sub, class)?;
            if sub == crate::hw::method::SUBCH_COMPUTE {
                pb.compute_init(info.shared_window, info.local_window)?;
                pb.texture_pools(tex_headers, tex_samplers, TEXTURE_POOL_ENTRIES - 1, tex_v2)?;
                if let Some((base, per_tpc, _)) = local {
                    pb.set_local_memory(base, per_tpc)?;
                }
            }
            Ok(())
        })?;
        if let Some((_, _, generation)) = local {
            self.local_generation = generation;
        }
        Ok(())
    }

    /// Reserve room for one command (≤ MAX_CMD_DW dwords) and record it with `f`.
    pub(super) fn with_cmd(
        &mut self,
        f: impl FnOnce(&mut PushBuf<'_>) -> Result<()>,
    ) -> Result<()> {
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
    #[inline(always)]
    pub(super) fn ensure_cmd_space(&mut self, n: u64) -> Result<()> {
        // Fast path (inlined into the recording calls): room before the end of the ring.
        let pos = self.cmd.pos();
        if pos + n + SUBMIT_RESERVE_DW <= self.cmd.cap && self.cmd.free() >= n + SUBMIT_RESERVE_DW {
            return Ok(());
        }
        self.ensure_cmd_space_slow(n)
    }

    #[cold]
    #[inline(never)]
    fn ensure_cmd_space_slow(&mut self, n: u64) -> Result<()> {
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
    pub(super) fn make_progress(&mut self, what: &str) -> Result<()> {
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
    #[inline(always)]
    fn close_segment(&mut self) -> Result<()> {
        let len = self.cmd.head - self.seg_start;
        if len == 0 {
            return Ok(());
        }
        let va = self.cmd.alloc.gpu_va + (self.seg_start & (self.cmd.cap - 1)) * 4;
        let entry = gp_entry(va, len as u32, false)?;
        self.push_entry(entry, "tg_queue_submit")?;
        self.seg_start = self.cmd.head;
        Ok(())
    }

    /// Write a GPFIFO entry (not yet made visible), waiting for a free slot when the ring is
    /// full.
    #[inline]
    fn push_entry(&mut self, entry: u64, what: &'static str) -> Result<()> {
        if self.ring.try_push(entry) {
            return Ok(());
        }
        self.push_entry_waiting(entry, what)
    }

    #[cold]
    fn push_entry_waiting(&mut self, entry: u64, what: &'static str) -> Result<()> {
        let userd = self.raw.userd;
        // USERD may sit behind a slow CPU mapping (RM: BAR1): read GP_GET only when the last
        // value seen says the ring is full, and publish pending entries before waiting on it.
        if self.ring.free_slots(gp_get(userd)) == 0 {
            self.ring.kick();
        }
        let timeout = self.timeout_ns;
        let dev = self.dev.clone();
        let mut progress = || -> Result<u32> {
            if let Some(e) = dev.fault_error(what) {
                return Err(e);
            }
            Ok(gp_get(userd))
        };
        self.ring.push(entry, &mut progress, timeout)
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
        // The reserve (SUBMIT_RESERVE_DW >= 2 * RELEASE_DW) guarantees room for the closing
        // acquire and release at the head without waiting.
        let (words, n) = self.closing_words(value, self.release);
        let pos = self.cmd.pos() as usize;
        // SAFETY: SUBMIT_RESERVE_DW dwords at the head are always free, contiguous and mapped.
        unsafe {
            std::ptr::copy_nonoverlapping(
                words.as_ptr(),
                (self.cmd.alloc.cpu as *mut u32).add(pos),
                n,
            )
        };
        self.cmd.head += n as u64;
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

    /// A compute queue's launch counter: (the value its launches' QMDs have released so far,
    /// the number of the last launch recorded, whether every launch since the last release
    /// that waited for the queue's work ran after the one before it). `None` for copy queues
    /// and without `TEGRAGPU_QUEUE_OVERLAP=1`. For tests; not part of the API.
    #[doc(hidden)]
    pub fn launch_counter(&self) -> Option<(u64, u64, bool)> {
        self.overlap
            .as_ref()
            .map(|o| (o.counter_value(), o.seq, o.ordered))
    }

    /// Dwords recorded into the command ring since the queue was created. For tests; not part
    /// of the API.
    #[doc(hidden)]
    pub fn command_dwords(&self) -> u64 {
        self.cmd.head
    }

    /// The last `n` dwords recorded into the command ring (at most the ring's size), oldest
    /// first. For tests; not part of the API.
    #[doc(hidden)]
    pub fn recent_command_words(&self, n: u64) -> Vec<u32> {
        let n = n.min(self.cmd.cap).min(self.cmd.head);
        (self.cmd.head - n..self.cmd.head)
            .map(|i| {
                // SAFETY: the command ring is CPU-mapped for the queue's life; i & (cap - 1)
                // is a dword inside it.
                unsafe {
                    std::ptr::read_volatile(
                        (self.cmd.alloc.cpu as *const u32).add((i & (self.cmd.cap - 1)) as usize),
                    )
                }
            })
            .collect()
    }

    /// The methods of a release of `value` that follows all of this queue's work so far:
    /// `wfi_release` (a release after wait-for-idle, payload at dwords 3 and 4) where the queue
    /// cannot tell its own work's completion otherwise; else an acquire of its launch counter
    /// (when something was launched since the last such release) and a release without
    /// wait-for-idle (see `Overlap`). Returns the words and their count.
    #[inline]
    pub(super) fn closing_words(
        &mut self,
        value: u64,
        wfi_release: [u32; RELEASE_DW],
    ) -> ([u32; 2 * RELEASE_DW], usize) {
        let mut w = [0u32; 2 * RELEASE_DW];
        let mut n = 0;
        if self.close_in_last_launch(value) {
            return (w, 0);
        }
        let mut put = |t: [u32; RELEASE_DW], payload: u64| {
            w[n..n + RELEASE_DW].copy_from_slice(&t);
            w[n + 3] = payload as u32;
            w[n + 4] = (payload >> 32) as u32;
            n += RELEASE_DW;
        };
        match self.overlap.as_mut() {
            Some(o) if o.ordered => {
                if o.launched && !o.reached(&self.track.timeline) {
                    put(o.acquire_target(), o.target.1);
                }
                put(o.release, value);
                o.launched = false;
                o.closed = false;
            }
            Some(o) => {
                put(wfi_release, value);
                o.ordered = true;
                o.launched = false;
            }
            None => put(wfi_release, value),
        }
        (w, n)
    }

    /// Where the last thing recorded is an ordered launch still in this segment: have its QMD
    /// release timeline `value` itself when its grid completes, so the submit needs no method
    /// of its own (see `Overlap`). Whether it did.
    #[inline(always)]
    fn close_in_last_launch(&mut self, value: u64) -> bool {
        let last_launch = self.last_was_launch;
        let head = self.cmd.head;
        let Some(r) = self.qmd.as_ref() else {
            return false;
        };
        let (cpu, base) = (r.alloc.cpu, r.alloc.gpu_va);
        let Some(o) = self.overlap.as_mut() else {
            return false;
        };
        // Only where nothing was recorded after the launch (a wait, say, must be passed before
        // the timeline counts the submit as complete).
        if !(o.ordered && o.launched && last_launch && head == o.launch_end) {
            return false;
        }
        let (plo, phi) = o.payload_dwords;
        // SAFETY: last_qmd_va is a slot of the QMD ring holding the last launch's QMD, not yet
        // submitted (the segment is open); the address dwords, plo and phi are dwords of it.
        unsafe {
            let dst = cpu.add((o.last_qmd_va - base) as usize) as *mut u32;
            for (d, _, timeline) in o.addr {
                dst.add(d).write(timeline);
            }
            dst.add(plo).write(value as u32);
            dst.add(phi).write((value >> 32) as u32);
        }
        o.target = (true, value);
        // A later release and the next launch still have to wait for that launch: `launched`
        // stays set.
        o.closed = true;
        true
    }

    /// Record the replay of a command stream that lives outside this queue's rings (a finished
    /// command buffer: `dwords` dwords at `va`, self-contained apart from the channel state this
    /// queue keeps). The queue first records what its own state needs (local memory, cache
    /// invalidation, serialization after a launch), closes its segment, then pushes one GPFIFO
    /// entry for the stream. Returns the timeline value by which the replay has completed (the
    /// next submission's). No system call, no allocation.
    #[inline(always)]
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
        let serialize = self.last_was_launch || Overlap::pending(&self.overlap);
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
        self.push_entry(entry, "tg_queue_replay")?;
        self.replayed = true;
        self.track.pending.store(true, Ordering::Release);
        self.last_was_launch = ends_with_launch;
        self.after_replay = ends_with_launch;
        if let Some(o) = self.overlap.as_mut() {
            // The command buffer's launches release nothing to the counter.
            o.ordered = false;
        }
        Ok(self.track.submitted() + 1)
    }
}

/// The closing release of a submit (the queue's timeline at `va`, 64-bit payload with PTIMER
/// timestamp, after wait-for-idle), encoded once with payload 0: a submit patches dwords 3 and 4.
pub(super) fn release_template(dev: &Device, va: u64) -> Result<[u32; RELEASE_DW]> {
    sem_template(dev, |pb, payload| {
        pb.host_sem_release(va, payload, true, true, true)
    })
}

/// A 6-dword semaphore method (header, address, payload, SEM_EXECUTE) encoded by `enc1` once
/// with payload 0, checked to carry the payload at dwords 3 and 4 and nothing else that depends
/// on it.
pub(super) fn sem_template(
    dev: &Device,
    enc1: impl Fn(&mut PushBuf<'_>, u64) -> Result<()>,
) -> Result<[u32; RELEASE_DW]> {
    let enc = |payload: u64| -> Result<[u32; RELEASE_DW]> {
        let mut w = [0u32; RELEASE_DW];
        let mut pb = PushBuf::for_arch(&mut w, dev.arch());
        enc1(&mut pb, payload)?;
        if pb.len() != RELEASE_DW {
            return Err(Error::new(
                Status::Internal,
                format!(
                    "a queue's semaphore method takes {} dwords, expected {RELEASE_DW}",
                    pb.len()
                ),
            ));
        }
        Ok(w)
    };
    let zero = enc(0)?;
    let probe = enc(0x8765_4321_1234_5678)?;
    let payload_at_3_4 = probe[3] == 0x1234_5678
        && probe[4] == 0x8765_4321
        && (0..RELEASE_DW).all(|i| i == 3 || i == 4 || zero[i] == probe[i]);
    if !payload_at_3_4 {
        return Err(Error::new(
            Status::Internal,
            "a queue's semaphore method does not carry its payload at dwords 3 and 4",
        ));
    }
    Ok(zero)
}

fn gp_get(userd: *mut u32) -> u32 {
    // SAFETY: USERD is mapped for the channel's lifetime; GP_GET is at byte 0x88.
    unsafe { std::ptr::read_volatile(userd.add(0x88 / 4)) }
}
