//! Queues: recording work and submitting it.

use super::buffer::{Access, Saved};
use super::device::ns;
use super::launch::DEFAULT_CONFIG;
use super::{check_device, retag, CmdBuf, Device, DeviceBuffer, Kernel, Launch, Signal};
use crate::core::{self, QueueKind};
use crate::error::{Error, Result};
use bytemuck::Pod;
use std::time::Duration;

/// A command queue on one hardware channel: launches, copies, signals and waits are recorded
/// in order, and run on the GPU once [`submit`](Queue::submit) (or
/// [`synchronize`](Queue::synchronize)) makes them visible to it.
///
/// Recording and submitting make no system call and, in the steady state, no heap
/// allocation. A queue is `Send`: record on it from one thread at a time (use one queue per
/// thread to record in parallel). Dropping a queue submits what was recorded and waits for
/// it (at most 10 s); [`abort`](Queue::abort) abandons it instead.
///
/// ```
/// let dev = tegragpu::Device::open("emu")?;
/// let src = dev.alloc_from(&[1u32, 2, 3, 4])?;
/// let mut dst = dev.alloc::<u32>(4)?;
/// let mut queue = dev.copy_queue()?;
/// queue.copy(&mut dst, &src)?;
/// queue.synchronize()?;
/// assert_eq!(dst.to_vec()?, [1, 2, 3, 4]);
/// # Ok::<(), tegragpu::Error>(())
/// ```
pub struct Queue {
    dev: Device,
    inner: core::Queue,
}

impl std::fmt::Debug for Queue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.inner.fmt(f)
    }
}

impl Queue {
    pub(crate) fn from_core(dev: Device, inner: core::Queue) -> Queue {
        Queue { dev, inner }
    }

    pub(crate) fn core_mut(&mut self) -> &mut core::Queue {
        &mut self.inner
    }

    /// Compute or copy.
    pub fn kind(&self) -> QueueKind {
        self.inner.kind()
    }

    /// The device the queue belongs to.
    pub fn device(&self) -> &Device {
        &self.dev
    }

    /// Describe a launch of `kernel` on this (compute) queue: set the grid, block and
    /// arguments on the returned [`Launch`], then [`record`](Launch::record) it.
    ///
    /// ```
    /// let dev = tegragpu::Device::open("emu")?;
    /// let module = dev.load_module(include_bytes!("../../tests/fixtures/cubin/kernels.sm_87.cubin"))?;
    /// // fill_u32(unsigned* p, unsigned value, unsigned n)
    /// let fill = module.kernel("fill_u32")?;
    /// let mut buf = dev.alloc::<u32>(100)?;
    /// let mut queue = dev.queue()?;
    /// // SAFETY: fill_u32 writes p[0..n] only.
    /// unsafe {
    ///     queue.launch(&fill).grid(1).block(128).arg_mut(&mut buf).arg(&7u32).arg(&100u32).record()?;
    /// }
    /// queue.synchronize()?;
    /// assert_eq!(buf.to_vec()?, vec![7; 100]);
    /// # Ok::<(), tegragpu::Error>(())
    /// ```
    pub fn launch<'a>(&'a mut self, kernel: &'a Kernel) -> Launch<'a, Queue> {
        Launch::new(self, kernel, None, DEFAULT_CONFIG, None)
    }

    /// Record a copy of all of `src` into `dst` (the same length): on the copy engine on a copy
    /// queue, on the SMs (a built-in kernel, ordered with the launches) on a compute queue.
    ///
    /// ```
    /// let dev = tegragpu::Device::open("emu")?;
    /// let src = dev.alloc_from(&[1.0f64, 2.0])?;
    /// let mut dst = dev.alloc::<f64>(2)?;
    /// let mut queue = dev.queue()?;
    /// queue.copy(&mut dst, &src)?;
    /// queue.synchronize()?;
    /// assert_eq!(dst.to_vec()?, [1.0, 2.0]);
    /// let mut small = dev.alloc::<f64>(1)?;
    /// assert!(queue.copy(&mut small, &src).is_err());
    /// # Ok::<(), tegragpu::Error>(())
    /// ```
    pub fn copy<T: Pod>(&mut self, dst: &mut DeviceBuffer<T>, src: &DeviceBuffer<T>) -> Result<()> {
        if dst.len() != src.len() {
            return Err(Error::invalid(format!(
                "Queue::copy: dst has {} elements, src {}: copy_range copies part of a buffer",
                dst.len(),
                src.len()
            )));
        }
        self.copy_range(dst, 0, src, 0, src.len())
    }

    /// Record a copy of `len` elements from `src[src_start..]` to `dst[dst_start..]`. Ranges
    /// outside a buffer are refused (`InvalidArgument`, naming the range and the size).
    ///
    /// ```
    /// let dev = tegragpu::Device::open("emu")?;
    /// let src = dev.alloc_from(&[1u16, 2, 3, 4])?;
    /// let mut dst = dev.alloc::<u16>(4)?;
    /// let mut queue = dev.copy_queue()?;
    /// queue.copy_range(&mut dst, 1, &src, 2, 2)?;
    /// queue.synchronize()?;
    /// assert_eq!(dst.to_vec()?, [0, 3, 4, 0]);
    /// assert!(queue.copy_range(&mut dst, 3, &src, 0, 2).is_err());
    /// # Ok::<(), tegragpu::Error>(())
    /// ```
    pub fn copy_range<T: Pod>(
        &mut self,
        dst: &mut DeviceBuffer<T>,
        dst_start: usize,
        src: &DeviceBuffer<T>,
        src_start: usize,
        len: usize,
    ) -> Result<()> {
        let dev = self.dev.core();
        check_device(dev, dst.device().core(), "Queue::copy", "dst")?;
        check_device(dev, src.device().core(), "Queue::copy", "src")?;
        let elem = std::mem::size_of::<T>() as u64;
        let bytes = |n: usize| (n as u64).saturating_mul(elem);
        self.inner
            .copy(
                &dst.shared.buf,
                bytes(dst_start),
                &src.shared.buf,
                bytes(src_start),
                bytes(len),
            )
            .map_err(|e| retag(e, "Queue::copy"))?;
        if len > 0 {
            let track = self.inner.track();
            let value = track.holds_until();
            src.shared.note(track, Access::Read, value);
            dst.shared.note(track, Access::Write, value);
        }
        Ok(())
    }

    /// Record a GPU write of `value` to `signal` once the work recorded before it is done and
    /// its writes are visible.
    ///
    /// ```
    /// let dev = tegragpu::Device::open("emu")?;
    /// let done = dev.signal(0)?;
    /// let mut queue = dev.queue()?;
    /// queue.signal(&done, 1)?;
    /// queue.submit()?;
    /// done.wait(1, std::time::Duration::from_secs(10))?;
    /// # Ok::<(), tegragpu::Error>(())
    /// ```
    pub fn signal(&mut self, signal: &Signal, value: u64) -> Result<()> {
        check_device(
            self.dev.core(),
            signal.core().device(),
            "Queue::signal",
            "the signal",
        )?;
        self.inner
            .signal(signal.core(), value)
            .map_err(|e| retag(e, "Queue::signal"))
    }

    /// Record a GPU wait: the work recorded after it starts once `signal` ≥ `value` (unsigned
    /// comparison).
    ///
    /// ```
    /// let dev = tegragpu::Device::open("emu")?;
    /// let go = dev.signal(0)?;
    /// let mut queue = dev.queue()?;
    /// queue.wait(&go, 1)?;
    /// queue.submit()?;
    /// go.set(1); // the CPU releases the queue
    /// queue.synchronize()?;
    /// # Ok::<(), tegragpu::Error>(())
    /// ```
    pub fn wait(&mut self, signal: &Signal, value: u64) -> Result<()> {
        check_device(
            self.dev.core(),
            signal.core().device(),
            "Queue::wait",
            "the signal",
        )?;
        self.inner
            .wait(signal.core(), value)
            .map_err(|e| retag(e, "Queue::wait"))
    }

    /// Record a full barrier: the work recorded before it is done and its writes are visible
    /// before later work starts. (Launches on a queue already run one after another unless
    /// marked [`concurrent`](Launch::concurrent).)
    ///
    /// ```
    /// let dev = tegragpu::Device::open("emu")?;
    /// let mut queue = dev.queue()?;
    /// queue.barrier()?;
    /// queue.synchronize()?;
    /// # Ok::<(), tegragpu::Error>(())
    /// ```
    pub fn barrier(&mut self) -> Result<()> {
        self.inner.barrier().map_err(|e| retag(e, "Queue::barrier"))
    }

    /// Record a replay of the finished command buffer `cmdbuf` on this compute queue. Refused
    /// (`InvalidArgument`) while a host view conflicts with a buffer the command buffer uses
    /// (a [`HostSlice`](crate::HostSlice) of a buffer it writes, a
    /// [`HostSliceMut`](crate::HostSliceMut) of one it uses).
    ///
    /// ```
    /// let dev = tegragpu::Device::open("emu")?;
    /// let done = dev.signal(0)?;
    /// let mut cb = dev.cmdbuf()?;
    /// cb.signal(&done, 1)?;
    /// cb.finish()?;
    /// let mut queue = dev.queue()?;
    /// queue.replay(&mut cb)?;
    /// queue.synchronize()?;
    /// assert_eq!(done.value(), 1);
    /// # Ok::<(), tegragpu::Error>(())
    /// ```
    pub fn replay(&mut self, cmdbuf: &mut CmdBuf) -> Result<()> {
        let track = self.inner.track().clone();
        let CmdBuf {
            inner: cb,
            held,
            saved,
            ..
        } = cmdbuf;
        // Reuses `saved`: no heap allocation once the command buffer has been replayed.
        saved.clear();
        let undo = |saved: &[Saved]| {
            for ((s, _), v) in held.iter().zip(saved) {
                s.restore(&track, *v);
            }
        };
        for (i, (s, a)) in held.iter().enumerate() {
            match s.begin_replay(&track, *a, i) {
                Ok(v) => saved.push(v),
                Err(e) => {
                    undo(saved);
                    return Err(e);
                }
            }
        }
        if let Err(e) = self.inner.replay(cb) {
            undo(saved);
            return Err(retag(e, "Queue::replay"));
        }
        let value = track.holds_until();
        for (s, a) in held.iter() {
            s.note(&track, *a, value);
        }
        Ok(())
    }

    /// Make everything recorded so far visible to the GPU (one doorbell).
    ///
    /// ```
    /// let dev = tegragpu::Device::open("emu")?;
    /// let mut queue = dev.queue()?;
    /// queue.barrier()?;
    /// queue.submit()?;
    /// # Ok::<(), tegragpu::Error>(())
    /// ```
    pub fn submit(&mut self) -> Result<()> {
        self.inner.submit().map_err(|e| retag(e, "Queue::submit"))
    }

    /// Submit what was recorded, then wait until all of the queue's work is done (at most 10
    /// s). Fails with `DeviceFault` when the GPU reported a fault, `Timeout` when the work does
    /// not finish in time.
    ///
    /// ```
    /// let dev = tegragpu::Device::open("emu")?;
    /// let mut queue = dev.queue()?;
    /// queue.synchronize()?;
    /// # Ok::<(), tegragpu::Error>(())
    /// ```
    pub fn synchronize(&mut self) -> Result<()> {
        self.synchronize_timeout(Duration::from_nanos(core::DEFAULT_TIMEOUT_NS))
    }

    /// [`synchronize`](Queue::synchronize) with a timeout of your own.
    ///
    /// ```
    /// use std::time::Duration;
    /// let dev = tegragpu::Device::open("emu")?;
    /// let never = dev.signal(0)?;
    /// let mut queue = dev.queue()?;
    /// queue.wait(&never, 1)?;
    /// let err = queue.synchronize_timeout(Duration::from_millis(10)).unwrap_err();
    /// assert_eq!(err.status, tegragpu::Status::Timeout);
    /// queue.abort(); // the wait never ends: abandon the queue
    /// # Ok::<(), tegragpu::Error>(())
    /// ```
    pub fn synchronize_timeout(&mut self, timeout: Duration) -> Result<()> {
        self.inner
            .synchronize(ns(timeout))
            .map_err(|e| retag(e, "Queue::synchronize"))
    }

    /// How long recording waits for ring space when the GPU is behind (default 10 s).
    pub fn set_timeout(&mut self, timeout: Duration) {
        self.inner.set_timeout_ns(ns(timeout));
    }

    /// Abandon the queue's work and destroy it at once: nothing recorded is submitted or
    /// waited for, and the channel is torn down (the GPU stops the running kernel). The
    /// recovery for a kernel that does not end. Buffers keep what the work wrote before it
    /// stopped.
    pub fn abort(self) {
        self.inner.abort();
    }
}
