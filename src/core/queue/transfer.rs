//! Fills and host transfers recorded in queue order: constant fills of 1-, 2- or 4-byte elements
//! (the copy engine's constant remap on copy queues; a staged pattern doubled by the built-in
//! copy kernel on compute queues), host-to-GPU writes and GPU-to-host reads through the
//! device's pool of host-visible staging buffers.

use super::*;

/// Bytes of one staging buffer: a host transfer moves at most this much per copy command, and
/// larger transfers are split into chunks of this size.
pub const STAGING_CHUNK: u64 = 4 << 20;
/// Staging buffers one queue holds in flight (written by the CPU, not yet consumed by the GPU)
/// before a host transfer waits for the oldest.
const STAGING_IN_FLIGHT: usize = 8;
/// Bytes of the pattern a fill on a compute queue stages before it doubles it on the GPU.
const FILL_PATTERN_BYTES: u64 = 64 << 10;

/// Check a fill's arguments; returns its size in bytes.
fn check_fill(dst_va: u64, value: u32, elem_bytes: u32, count: u64) -> Result<u64> {
    if !matches!(elem_bytes, 1 | 2 | 4) {
        return Err(Error::invalid(format!(
            "tg_queue_fill: elem_bytes {elem_bytes} must be 1, 2 or 4"
        )));
    }
    if elem_bytes < 4 && value >> (8 * elem_bytes) != 0 {
        return Err(Error::invalid(format!(
            "tg_queue_fill: value {value:#x} does not fit in {elem_bytes} byte(s)"
        )));
    }
    if dst_va % u64::from(elem_bytes) != 0 {
        return Err(Error::invalid(format!(
            "tg_queue_fill: address {dst_va:#x} is not aligned to the element size {elem_bytes}"
        )));
    }
    let bytes = count
        .checked_mul(u64::from(elem_bytes))
        .filter(|b| dst_va.checked_add(*b).is_some())
        .ok_or_else(|| {
            Error::invalid(format!(
                "tg_queue_fill: {count} elements of {elem_bytes} bytes at {dst_va:#x} run past the end of the address space"
            ))
        })?;
    Ok(bytes)
}

/// The byte `i` bytes after the start of a fill of `value` in `elem_bytes`-byte elements.
#[inline]
fn fill_byte(value: u32, elem_bytes: u32, i: u64) -> u8 {
    (value >> (8 * (i % u64::from(elem_bytes)))) as u8
}

fn check_span(call: &str, va: u64, len: u64) -> Result<()> {
    if va.checked_add(len).is_none() {
        return Err(Error::invalid(format!(
            "{call}: {len} bytes at {va:#x} run past the end of the address space"
        )));
    }
    Ok(())
}

impl Queue {
    /// Record a fill of `count` elements of `elem_bytes` (1, 2 or 4) bytes at the GPU address
    /// `dst_va` (aligned to `elem_bytes`) with the low `elem_bytes` bytes of `value`, in order
    /// with the queue's other commands (like `cuMemsetD8/D16/D32Async`). On a copy queue the
    /// copy engine writes the constant; on a compute queue the first (up to 64 KiB) bytes are
    /// staged from the host and the built-in copy kernel doubles them until the range is
    /// covered. `count` 0 records nothing. The address is not checked beyond the MMU's: a range
    /// outside the device's memory faults the queue ([`Queue::fill`] checks a buffer's range).
    pub fn fill_va(&mut self, dst_va: u64, value: u32, elem_bytes: u32, count: u64) -> Result<()> {
        self.dev.check_usable()?;
        let bytes = check_fill(dst_va, value, elem_bytes, count)?;
        if bytes == 0 {
            return Ok(());
        }
        if self.kind == QueueKind::Copy {
            return self.ce_fill(dst_va, value, elem_bytes, bytes);
        }
        let first = bytes.min(FILL_PATTERN_BYTES);
        self.stage_in(dst_va, first, "tg_queue_fill", |chunk, off| {
            for (i, b) in chunk.iter_mut().enumerate() {
                *b = fill_byte(value, elem_bytes, off + i as u64);
            }
        })?;
        // Double what is written: [0, done) → [done, 2 * done). `done` stays a multiple of the
        // element size, so every copy keeps the pattern's phase.
        let mut done = first;
        while done < bytes {
            let n = done.min(bytes - done);
            self.copy_va(dst_va + done, dst_va, n)?;
            done += n;
        }
        Ok(())
    }

    /// [`Queue::fill_va`] over `[offset, offset + count * elem_bytes)` of `dst`, which must lie
    /// inside the buffer (and the buffer on the queue's device).
    pub fn fill(
        &mut self,
        dst: &Buffer,
        offset: u64,
        value: u32,
        elem_bytes: u32,
        count: u64,
    ) -> Result<()> {
        self.check_own_buffer("tg_queue_fill", dst)?;
        let bytes = count.checked_mul(u64::from(elem_bytes)).ok_or_else(|| {
            Error::invalid(format!(
                "tg_queue_fill: {count} elements of {elem_bytes} bytes overflow"
            ))
        })?;
        dst.check_range("tg_queue_fill: dst", offset, bytes)?;
        self.fill_va(dst.gpu_va() + offset, value, elem_bytes, count)
    }

    /// The copy-engine fill: a 4-byte pattern over the 4-byte aligned middle of the range,
    /// `elem_bytes` elements for the head and tail around it.
    fn ce_fill(&mut self, dst_va: u64, value: u32, elem_bytes: u32, bytes: u64) -> Result<()> {
        let head = ((4 - dst_va % 4) % 4).min(bytes);
        let body = (bytes - head) & !3;
        let tail = bytes - head - body;
        let e = u64::from(elem_bytes);
        let word = u32::from_le_bytes(std::array::from_fn(|i| {
            fill_byte(value, elem_bytes, head + i as u64)
        }));
        self.ce_fill_run(dst_va, value, elem_bytes, head / e)?;
        self.ce_fill_run(dst_va + head, word, 4, body / 4)?;
        self.ce_fill_run(dst_va + head + body, value, elem_bytes, tail / e)?;
        self.last_was_launch = false;
        Ok(())
    }

    /// `n` elements of `e` bytes at `va`: rows of 128 KiB, as many rows per command as the
    /// copy engine takes, then the rest in one line.
    fn ce_fill_run(&mut self, mut va: u64, value: u32, e: u32, mut n: u64) -> Result<()> {
        use crate::hw::pushbuf::CE_FILL_MAX_DIM;
        let row = u64::from(CE_FILL_MAX_DIM / e);
        while n > 0 {
            let (elems, lines) = if n >= row {
                (row, (n / row).min(u64::from(CE_FILL_MAX_DIM)))
            } else {
                (n, 1)
            };
            let pitch = elems * u64::from(e);
            self.with_cmd(|pb| pb.ce_fill(va, value, e, elems as u32, lines as u32, pitch as u32))?;
            va += pitch * lines;
            n -= elems * lines;
        }
        Ok(())
    }

    /// Record a copy of `src` to the GPU address `dst_va`, in order with the queue's other
    /// commands (like `cuMemcpyHtoDAsync`): the bytes are copied into staging buffers now, so
    /// `src` may be reused as soon as this returns, and the GPU copies them to `dst_va` when the
    /// queue reaches the command. Transfers larger than [`STAGING_CHUNK`] are split; a queue
    /// keeps at most 8 chunks in flight and waits for the oldest before it stages more (it
    /// submits itself when the oldest is still unsubmitted). An empty `src` records nothing. The
    /// address is not checked beyond the MMU's ([`Queue::write`] checks a buffer's range).
    pub fn write_from_host(&mut self, dst_va: u64, src: &[u8]) -> Result<()> {
        self.dev.check_usable()?;
        self.stage_in(dst_va, src.len() as u64, "tg_queue_write", |chunk, off| {
            let off = off as usize;
            chunk.copy_from_slice(&src[off..off + chunk.len()]);
        })
    }

    /// [`Queue::write_from_host`] to `[offset, offset + src.len())` of `dst`, which must lie
    /// inside the buffer (and the buffer on the queue's device).
    pub fn write(&mut self, dst: &Buffer, offset: u64, src: &[u8]) -> Result<()> {
        self.check_own_buffer("tg_queue_write", dst)?;
        dst.check_range("tg_queue_write: dst", offset, src.len() as u64)?;
        self.write_from_host(dst.gpu_va() + offset, src)
    }

    /// Copy `size` bytes from the GPU address `src_va` to host memory at `dst`, in order with
    /// the queue's other commands (like `cuMemcpyDtoH`): the copy is recorded after the work
    /// already recorded, the queue is submitted, and the call returns once the bytes are in
    /// `dst` (so it waits for the queue's earlier work). The GPU copies into staging buffers
    /// (chunks of [`STAGING_CHUNK`], up to 8 in flight) and the CPU copies each chunk out as it
    /// completes. `size` 0 reads nothing and does not wait. On an error (a fault, a timeout)
    /// `dst` holds an unspecified part of the data.
    ///
    /// # Safety
    /// `dst` must be valid for writes of `size` bytes for the duration of the call.
    pub unsafe fn read_to_host(&mut self, dst: *mut u8, src_va: u64, size: u64) -> Result<()> {
        self.dev.check_usable()?;
        if size == 0 {
            return Ok(());
        }
        if dst.is_null() {
            return Err(Error::new(
                Status::NullPointer,
                format!("tg_queue_read: dst is NULL ({size} bytes from {src_va:#x})"),
            ));
        }
        check_span("tg_queue_read", src_va, size)?;
        // (staging buffer, offset, bytes, timeline value after which it holds the bytes)
        let mut pending: VecDeque<(Allocation, u64, u64, u64)> = VecDeque::new();
        let mut off = 0u64;
        let r = (|| -> Result<()> {
            while off < size || !pending.is_empty() {
                if off < size && pending.len() < STAGING_IN_FLIGHT {
                    let n = (size - off).min(STAGING_CHUNK);
                    let st = self.staging_take("tg_queue_read")?;
                    let (st_va, done) = (st.gpu_va, self.track.submitted() + 1);
                    pending.push_back((st, off, n, done));
                    self.copy_va(st_va, src_va + off, n)?;
                    // The command is in the ring now: the submit that carries it is the next.
                    let v = self.track.submitted() + 1;
                    if let Some(p) = pending.back_mut() {
                        p.3 = v;
                    }
                    off += n;
                    continue;
                }
                let v = pending.front().map(|p| p.3).unwrap_or(0);
                if v > self.track.submitted() {
                    self.submit()?;
                }
                self.track
                    .wait_timeline(&self.dev, v, self.timeout_ns, "tg_queue_read")?;
                if let Some((st, o, n, _)) = pending.pop_front() {
                    // SAFETY: the staging buffer is CPU-mapped for STAGING_CHUNK >= n bytes and
                    // the GPU has finished writing it; the caller guarantees dst + o is
                    // writable for n bytes (o + n <= size).
                    std::ptr::copy_nonoverlapping(st.cpu, dst.add(o as usize), n as usize);
                    self.dev.staging_give(st);
                }
            }
            Ok(())
        })();
        if r.is_err() {
            // Copies already recorded may still write these: recycle them after the queue.
            for (st, _, _, v) in pending {
                self.staging.push_back((st, v));
            }
        }
        r
    }

    /// [`Queue::read_to_host`] of `[offset, offset + dst.len())` of `src`, which must lie inside
    /// the buffer (and the buffer on the queue's device), into `dst`.
    pub fn read(&mut self, src: &Buffer, offset: u64, dst: &mut [u8]) -> Result<()> {
        self.check_own_buffer("tg_queue_read", src)?;
        src.check_range("tg_queue_read: src", offset, dst.len() as u64)?;
        // SAFETY: dst is a live, exclusively borrowed slice of dst.len() bytes.
        unsafe { self.read_to_host(dst.as_mut_ptr(), src.gpu_va() + offset, dst.len() as u64) }
    }

    pub(super) fn check_own_buffer(&self, call: &str, b: &Buffer) -> Result<()> {
        if !Arc::ptr_eq(&b.device().inner, &self.dev.inner) {
            return Err(Error::invalid(format!(
                "{call}: the buffer belongs to another device than the queue"
            )));
        }
        Ok(())
    }

    /// Stage `len` bytes for `dst_va` chunk by chunk (`put` fills a chunk given its offset) and
    /// record a copy of each to the GPU.
    fn stage_in(
        &mut self,
        dst_va: u64,
        len: u64,
        call: &'static str,
        mut put: impl FnMut(&mut [u8], u64),
    ) -> Result<()> {
        check_span(call, dst_va, len)?;
        let mut off = 0u64;
        while off < len {
            let n = (len - off).min(STAGING_CHUNK);
            let st = self.staging_take(call)?;
            // SAFETY: the staging buffer is CPU-mapped for STAGING_CHUNK >= n bytes and no GPU
            // work uses it (it came from the pool or was reclaimed after the queue passed it).
            put(
                unsafe { std::slice::from_raw_parts_mut(st.cpu, n as usize) },
                off,
            );
            let st_va = st.gpu_va;
            let r = self.copy_va(dst_va + off, st_va, n);
            // Held until the queue passes the submission that carries the copy (also when the
            // copy failed: then nothing uses it, and it comes back all the same).
            let v = self.track.submitted() + 1;
            self.staging.push_back((st, v));
            r?;
            off += n;
        }
        Ok(())
    }

    /// A staging buffer no GPU work uses: the queue's own completed ones go back to the device
    /// first; with [`STAGING_IN_FLIGHT`] held, wait for the oldest (submitting it if needed).
    fn staging_take(&mut self, call: &'static str) -> Result<Allocation> {
        self.staging_reclaim();
        if self.staging.len() >= STAGING_IN_FLIGHT {
            let v = self.staging.front().map(|s| s.1).unwrap_or(0);
            if v > self.track.submitted() {
                self.submit()?;
            }
            self.track
                .wait_timeline(&self.dev, v, self.timeout_ns, call)?;
            self.staging_reclaim();
        }
        self.dev.staging_take()
    }

    /// Give the staging buffers the queue has passed back to the device's pool.
    pub(super) fn staging_reclaim(&mut self) {
        if self.staging.is_empty() {
            return;
        }
        let done = self.track.completed();
        while self.staging.front().is_some_and(|s| s.1 <= done) {
            if let Some((a, _)) = self.staging.pop_front() {
                self.dev.staging_give(a);
            }
        }
    }
}
