//! Timeline signals.

use super::device::ns;
use super::retag;
use crate::core;
use crate::error::Result;
use std::sync::Arc;
use std::time::Duration;

/// A 64-bit timeline signal: queues write it ([`Queue::signal`](crate::Queue::signal)) and
/// wait for it ([`Queue::wait`](crate::Queue::wait)), the CPU reads, sets and waits for it.
/// Waits are for "value ≥ target", unsigned. Cheap to clone (a clone is the same signal);
/// `Send` and `Sync`.
///
/// ```
/// use std::time::Duration;
/// let dev = tegragpu::Device::open("emu")?;
/// let s = dev.signal(0)?;
/// let mut queue = dev.queue()?;
/// queue.signal(&s, 42)?;
/// queue.submit()?;
/// s.wait(42, Duration::from_secs(10))?;
/// assert_eq!(s.value(), 42);
/// # Ok::<(), tegragpu::Error>(())
/// ```
#[derive(Clone)]
pub struct Signal {
    inner: Arc<core::Signal>,
}

impl std::fmt::Debug for Signal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.inner.fmt(f)
    }
}

impl Signal {
    pub(crate) fn from_core(s: core::Signal) -> Signal {
        Signal { inner: Arc::new(s) }
    }

    pub(crate) fn core(&self) -> &Arc<core::Signal> {
        &self.inner
    }

    /// The current value.
    ///
    /// ```
    /// let dev = tegragpu::Device::open("emu")?;
    /// assert_eq!(dev.signal(3)?.value(), 3);
    /// # Ok::<(), tegragpu::Error>(())
    /// ```
    pub fn value(&self) -> u64 {
        self.inner.value()
    }

    /// Set the value from the CPU: releases every CPU and GPU wait for a value ≤ `value`.
    ///
    /// ```
    /// let dev = tegragpu::Device::open("emu")?;
    /// let s = dev.signal(0)?;
    /// s.set(9);
    /// assert_eq!(s.value(), 9);
    /// # Ok::<(), tegragpu::Error>(())
    /// ```
    pub fn set(&self, value: u64) {
        self.inner.set(value)
    }

    /// Wait until the value is ≥ `value`, at most `timeout` (`Timeout`, saying what the
    /// signal is waiting for, e.g. a release recorded on a queue that was not submitted);
    /// `DeviceFault` if the device faults meanwhile.
    ///
    /// ```
    /// use std::time::Duration;
    /// let dev = tegragpu::Device::open("emu")?;
    /// let s = dev.signal(1)?;
    /// s.wait(1, Duration::ZERO)?;
    /// let err = s.wait(2, Duration::from_millis(1)).unwrap_err();
    /// assert_eq!(err.status, tegragpu::Status::Timeout);
    /// # Ok::<(), tegragpu::Error>(())
    /// ```
    pub fn wait(&self, value: u64, timeout: Duration) -> Result<()> {
        self.inner
            .wait(value, ns(timeout))
            .map_err(|e| retag(e, "Signal::wait"))
    }

    /// The GPU time, in nanoseconds, of the last GPU write of the signal (0 if none): time GPU
    /// work with two signals.
    ///
    /// ```
    /// let dev = tegragpu::Device::open("emu")?;
    /// let (start, end) = (dev.signal(0)?, dev.signal(0)?);
    /// let mut queue = dev.queue()?;
    /// queue.signal(&start, 1)?;
    /// queue.barrier()?;
    /// queue.signal(&end, 1)?;
    /// queue.synchronize()?;
    /// assert!(end.timestamp() >= start.timestamp());
    /// # Ok::<(), tegragpu::Error>(())
    /// ```
    pub fn timestamp(&self) -> u64 {
        self.inner.timestamp()
    }

    /// The GPU address of the 64-bit value (a kernel may pass it to atomics).
    pub fn gpu_address(&self) -> u64 {
        self.inner.gpu_va()
    }
}
