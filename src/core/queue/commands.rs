//! Recording copies, signals, waits and barriers.

use super::*;
use crate::hw::pushbuf::SemCond;

impl Queue {
    /// Record a copy of `size_bytes` from `src` at `src_offset` to `dst` at `dst_offset`. On a
    /// copy queue the copy engine moves the bytes; on a compute queue the library's built-in
    /// copy kernel does (the SMs: full memory bandwidth, ordered with the queue's launches like
    /// any kernel). Overlapping ranges of one buffer are refused. `dst` and `src` may belong to
    /// another device that this queue's device has peer access to
    /// ([`crate::core::Device::enable_peer_access`]); the copy runs here either way.
    pub fn copy(
        &mut self,
        dst: &Buffer,
        dst_offset: u64,
        src: &Buffer,
        src_offset: u64,
        size_bytes: u64,
    ) -> Result<()> {
        self.dev.check_usable()?;
        if !self.dev.is(dst.device()) || !self.dev.is(src.device()) {
            self.dev.check_buffer_access(dst, "tg_queue_copy", "dst")?;
            self.dev.check_buffer_access(src, "tg_queue_copy", "src")?;
        }
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
        match self.copy_split {
            CopySplit::Whole => {
                while done < size_bytes {
                    let n = (size_bytes - done).min(CHUNK);
                    self.with_cmd(|pb| pb.ce_copy_linear(src_va + done, dst_va + done, n))?;
                    done += n;
                }
            }
            CopySplit::Pieces(piece) => {
                while done < size_bytes {
                    // `piece` ≤ 1 GiB (set_copy_split): a piece fits one line.
                    let n = (size_bytes - done).min(piece);
                    let (first, last) = (done == 0, done + n == size_bytes);
                    self.with_cmd(|pb| {
                        pb.ce_copy_lines(src_va + done, dst_va + done, n as u32, 1, !first, last)
                    })?;
                    done += n;
                }
            }
            CopySplit::Lines(line) => {
                const MAX_LINES: u64 = 1 << 20;
                let l = u64::from(line);
                while size_bytes - done >= l {
                    let lines = ((size_bytes - done) / l).min(MAX_LINES);
                    let last = done + lines * l == size_bytes;
                    self.with_cmd(|pb| {
                        pb.ce_copy_lines(
                            src_va + done,
                            dst_va + done,
                            line,
                            lines as u32,
                            false,
                            last,
                        )
                    })?;
                    done += lines * l;
                }
                if done < size_bytes {
                    // Shorter than a line (< 1 GiB).
                    let n = (size_bytes - done) as u32;
                    self.with_cmd(|pb| {
                        pb.ce_copy_lines(src_va + done, dst_va + done, n, 1, false, true)
                    })?;
                }
            }
        }
        self.last_was_launch = false;
        Ok(())
    }

    /// Load what this queue's copies run on now (compute queues copy with the built-in
    /// `tg_copy` kernel, loaded at the first copy otherwise), so that the first copy allocates
    /// nothing. Copy queues need nothing.
    pub fn prepare_copies(&mut self) -> Result<()> {
        if self.kind == QueueKind::Compute {
            self.copy_kernel()?;
        }
        Ok(())
    }

    /// The built-in `tg_copy` kernel of this queue (loaded on first use).
    fn copy_kernel(&mut self) -> Result<Kernel> {
        if let Some(k) = &self.copy_kernel {
            return Ok(k.clone());
        }
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
        Ok(k)
    }

    /// A copy on the SMs: one launch of the built-in `tg_copy` kernel.
    fn sm_copy(&mut self, dst_va: u64, src_va: u64, n: u64) -> Result<()> {
        self.dev.check_usable()?;
        let kernel = self.copy_kernel()?;
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
            concurrent: false,
            cluster: [0; 3],
        };
        self.launch(&kernel, &cfg, &params)
    }

    /// Record a GPU write of `value` (and a timestamp) to `signal` once all earlier work on this
    /// queue is complete and visible.
    ///
    /// The signal's value never goes back because of the order in which queues finish: where
    /// the last release recorded for it was of a smaller value on another queue, submitted there
    /// and not yet seen, this queue first waits for that release (queues that run side by side
    /// may otherwise finish in either order, and CUDA's events, recorded again on another
    /// stream, rely on the newest value).
    pub fn signal(&mut self, signal: &Signal, value: u64) -> Result<()> {
        self.dev.check_usable()?;
        let va = signal.gpu_va();
        let before = signal.pending_release_elsewhere(self.track.serial);
        if before != 0 && before < value {
            self.with_cmd(|pb| pb.host_sem_acquire_geq(va, before))?;
        }
        if self.signal_in_last_launch(va, value) {
            // Nothing was added to the command ring: the launch is still the last command.
            signal.note_release(self.track.serial, value, self.track.submitted() + 1);
            return Ok(());
        }
        match self.overlap.as_ref() {
            Some(o) if o.ordered => {
                // After the queue's own launches only (see `Overlap`): no wait for idle.
                let acquire =
                    (o.launched && !o.reached(&self.track.timeline)).then(|| o.acquire_target());
                self.with_cmd(|pb| {
                    if let Some(a) = acquire {
                        pb.push_words(&a)?;
                    }
                    pb.host_sem_release(va, value, true, true, false)
                })?;
                if let Some(o) = self.overlap.as_mut() {
                    o.launched = false;
                    o.closed = false;
                }
            }
            _ => {
                self.with_cmd(|pb| pb.host_sem_release(va, value, true, true, true))?;
                if let Some(o) = self.overlap.as_mut() {
                    o.ordered = true;
                    o.launched = false;
                }
            }
        }
        // After the command is in the ring: the submit that carries it is the next one (an
        // earlier automatic submit for ring space has already happened). Plain stores: no locked
        // instruction between ring writes and the submit's fence.
        signal.note_release(self.track.serial, value, self.track.submitted() + 1);
        self.last_was_launch = false;
        Ok(())
    }

    /// Where the last thing recorded is an ordered launch still in this segment (nothing
    /// recorded after it) whose QMD's release slot 1 is free: have that QMD release `value`,
    /// with its timestamp, to the signal at `va` when the grid completes, after its grid-end
    /// membar (see `Overlap`). The launch ran after all of the queue's earlier work, so its completion
    /// is the signal's condition; no method is added. Whether it did.
    #[inline]
    fn signal_in_last_launch(&mut self, va: u64, value: u64) -> bool {
        if !self.last_was_launch {
            return false;
        }
        let Some(r) = self.qmd.as_ref() else {
            return false;
        };
        let (cpu, base) = (r.alloc.cpu, r.alloc.gpu_va);
        let version = self.dev.arch().qmd_version;
        let head = self.cmd.head;
        let Some(o) = self.overlap.as_mut() else {
            return false;
        };
        if !(o.ordered && o.launched && !o.rel1_used && head == o.launch_end) {
            return false;
        }
        let rel = crate::hw::qmd::QmdRelease {
            va,
            payload: value,
            payload64: true,
            timestamp: true,
            // As for the launch's own release (`Queue::record_launch`): the grid-end
            // CWD_MEMBAR_TYPE L1_SYSMEMBAR makes its writes visible first.
            membar_sys: false,
        };
        let Ok(p) = crate::hw::qmd::release1_patch(version, &rel) else {
            return false;
        };
        let off = o.last_qmd_va - base;
        // SAFETY: last_qmd_va is a slot of the QMD ring holding the last launch's QMD, not yet
        // submitted (the segment is open: a submit clears last_was_launch); the patch's dwords
        // are dwords of that QMD.
        unsafe {
            let dst = cpu.add(off as usize) as *mut u32;
            for &(d, v) in &p.words[..p.len] {
                dst.add(d)
                    .write(if d == p.ctl { v | o.last_ctl } else { v });
            }
        }
        o.rel1_used = true;
        o.rel1_slots[(off / QMD_STRIDE) as usize] = true;
        true
    }

    /// Record a GPU wait until `signal` ≥ `value` before later work on this queue starts. The
    /// comparison is unsigned 64-bit (host ACQ_STRICT_GEQ), the same rule as [`Signal::wait`].
    /// `signal` may belong to another device that this queue's device has peer access to
    /// ([`crate::core::Device::enable_peer_access`]): the GPU then waits for that device's work
    /// (its signal memory is mapped here like its buffers).
    pub fn wait(&mut self, signal: &Signal, value: u64) -> Result<()> {
        self.dev.check_usable()?;
        if !self.dev.is(signal.device()) {
            self.dev.check_signal_access(signal, "tg_queue_wait")?;
        }
        let va = signal.gpu_va();
        self.with_cmd(|pb| pb.host_sem_acquire_geq(va, value))?;
        Ok(())
    }

    /// Record a GPU write of `value` to the 32-bit word (`wide`: the 64-bit word) at GPU
    /// address `va` of this device's memory, like `cuStreamWriteValue32/64`. With `barrier` the
    /// write happens once earlier work on this queue is complete and its writes are visible;
    /// without it the write may pass that work (`CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER`).
    /// `va` must be 4-byte (`wide`: 8-byte) aligned; an address the device has not mapped is a
    /// fault of the queue, reported when it is synchronized.
    pub fn write_value(&mut self, va: u64, value: u64, wide: bool, barrier: bool) -> Result<()> {
        self.dev.check_usable()?;
        self.with_cmd(|pb| pb.host_sem_release(va, value, wide, false, barrier))?;
        if barrier {
            // The release waited for the engine to be idle: the next launch need not.
            self.last_was_launch = false;
        }
        Ok(())
    }

    /// Record a GPU wait, before later work on this queue starts, until the 32-bit word
    /// (`wide`: the 64-bit word) at GPU address `va` satisfies `cond` against `value`, like
    /// `cuStreamWaitValue32/64` (the GPU polls the word; the queue's other work waits, other
    /// queues run). Alignment and unmapped addresses as for [`Queue::write_value`].
    pub fn wait_value(&mut self, va: u64, value: u64, wide: bool, cond: ValueCond) -> Result<()> {
        self.dev.check_usable()?;
        let c = match cond {
            ValueCond::Equal => SemCond::Eq,
            ValueCond::GreaterOrEqual => SemCond::Geq,
            ValueCond::GreaterOrEqualWrapping => SemCond::CircGeq,
            ValueCond::AnyBitSet => SemCond::And,
            ValueCond::NorAnyBitSet => SemCond::Nor,
        };
        self.with_cmd(|pb| pb.host_sem_acquire(va, value, wide, c))
    }

    /// [`Queue::write_value`] on the word at `offset` of `buf` (a buffer of this queue's
    /// device; the word must lie inside it, aligned to its width).
    pub fn write_buffer_value(
        &mut self,
        buf: &Buffer,
        offset: u64,
        value: u64,
        wide: bool,
        barrier: bool,
    ) -> Result<()> {
        let va = self.value_word("tg_queue_write_value", buf, offset, value, wide)?;
        self.write_value(va, value, wide, barrier)
    }

    /// [`Queue::wait_value`] on the word at `offset` of `buf` (a buffer of this queue's device;
    /// the word must lie inside it, aligned to its width).
    pub fn wait_buffer_value(
        &mut self,
        buf: &Buffer,
        offset: u64,
        value: u64,
        wide: bool,
        cond: ValueCond,
    ) -> Result<()> {
        let va = self.value_word("tg_queue_wait_value", buf, offset, value, wide)?;
        self.wait_value(va, value, wide, cond)
    }

    /// The GPU address of the 4- or 8-byte word at `offset` of `buf`, checked.
    fn value_word(
        &self,
        call: &str,
        buf: &Buffer,
        offset: u64,
        value: u64,
        wide: bool,
    ) -> Result<u64> {
        self.check_own_buffer(call, buf)?;
        let width = if wide { 8 } else { 4 };
        if offset % width != 0 {
            return Err(Error::invalid(format!(
                "{call}: offset {offset} is not a multiple of the word's {width} bytes"
            )));
        }
        if !wide && value > u64::from(u32::MAX) {
            return Err(Error::invalid(format!(
                "{call}: value {value:#x} does not fit the 32-bit word (TG_VALUE_64 selects a 64-bit one)"
            )));
        }
        buf.check_range(call, offset, width)?;
        Ok(buf.gpu_va() + offset)
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

/// The condition of [`Queue::wait_value`] between the word in memory `v` and the value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueCond {
    /// `v == value`.
    Equal,
    /// `v >= value`, unsigned.
    GreaterOrEqual,
    /// `(signed)(v - value) >= 0` in the word's width: greater or equal across wrap-around
    /// (CUDA's `CU_STREAM_WAIT_VALUE_GEQ`).
    GreaterOrEqualWrapping,
    /// `v & value != 0`.
    AnyBitSet,
    /// `!(v | value) != 0` in the word's width (CUDA's `CU_STREAM_WAIT_VALUE_NOR`).
    NorAnyBitSet,
}
