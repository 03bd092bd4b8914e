//! Command buffers: work recorded once, replayed many times.

use super::buffer::{Access, Saved, Shared};
use super::device::ns;
use super::launch::{BufferList, DEFAULT_CONFIG};
use super::{check_device, retag, Device, DeviceBuffer, Kernel, Launch, Signal};
use crate::core::{self, LaunchConfig};
use crate::error::{Error, Result};
use bytemuck::Pod;
use std::sync::Arc;
use std::time::Duration;

/// A command buffer: launches, copies, signals and waits recorded once,
/// [`finish`](CmdBuf::finish)ed into GPU memory, then replayed on compute queues with
/// [`Queue::replay`](crate::Queue::replay), each replay one GPFIFO entry (like a CUDA graph).
/// Each recording call returns the node's index; between replays
/// [`update`](CmdBuf::update) replaces a launch's arguments and
/// [`set_value`](CmdBuf::set_value) a signal's or wait's value.
///
/// The command buffer keeps the buffers and signals it uses alive; dropping it frees its
/// memory once its replays are done.
///
/// ```
/// let dev = tegragpu::Device::open("emu")?;
/// let module = dev.load_module(include_bytes!("../../tests/fixtures/cubin/kernels.sm_87.cubin"))?;
/// // increment(unsigned long long* p, unsigned long long by): p[0] += by
/// let increment = module.kernel("increment")?;
/// let mut counter = dev.alloc::<u64>(1)?;
/// let mut cb = dev.cmdbuf()?;
/// // SAFETY: increment writes p[0] only.
/// let node = unsafe { cb.launch(&increment).arg_mut(&mut counter).arg(&1u64).record()? };
/// cb.finish()?;
/// let mut queue = dev.queue()?;
/// for _ in 0..3 {
///     queue.replay(&mut cb)?;
/// }
/// queue.synchronize()?;
/// assert_eq!(counter.to_vec()?, [3]);
///
/// // SAFETY: as above.
/// unsafe { cb.update(node, &increment).arg_mut(&mut counter).arg(&10u64).record()? };
/// queue.replay(&mut cb)?;
/// queue.synchronize()?;
/// assert_eq!(counter.to_vec()?, [13]);
/// # Ok::<(), tegragpu::Error>(())
/// ```
pub struct CmdBuf {
    dev: Device,
    pub(crate) inner: core::CmdBuf,
    /// The buffers the recorded work uses (each once, with the strongest access).
    pub(crate) held: Vec<(Arc<Shared>, Access)>,
    /// Scratch for `Queue::replay`: the buffers' previous use records.
    pub(crate) saved: Vec<Saved>,
    /// Per node: the launch configuration of a launch node.
    configs: Vec<Option<LaunchConfig>>,
}

impl std::fmt::Debug for CmdBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.inner.fmt(f)
    }
}

impl CmdBuf {
    pub(crate) fn from_core(dev: Device, inner: core::CmdBuf) -> CmdBuf {
        CmdBuf {
            dev,
            inner,
            held: Vec::new(),
            saved: Vec::new(),
            configs: Vec::new(),
        }
    }

    /// The device the command buffer records for.
    pub fn device(&self) -> &Device {
        &self.dev
    }

    /// Number of recorded nodes (indexes run from 0).
    pub fn len(&self) -> usize {
        self.inner.len()
    }

    /// Whether nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.inner.is_empty()
    }

    /// Whether [`finish`](CmdBuf::finish) was called.
    pub fn is_finished(&self) -> bool {
        self.inner.is_finished()
    }

    /// How long [`update`](CmdBuf::update), [`set_value`](CmdBuf::set_value) and dropping
    /// wait for replays in flight (default 10 s).
    pub fn set_timeout(&mut self, timeout: Duration) {
        self.inner.set_timeout_ns(ns(timeout));
    }

    /// Describe a launch of `kernel` to record as the next node: set the grid, block and
    /// arguments on the returned [`Launch`], then [`record`](Launch::record) it, which returns
    /// the node index.
    pub fn launch<'a>(&'a mut self, kernel: &'a Kernel) -> Launch<'a, CmdBuf> {
        Launch::new(self, kernel, None, DEFAULT_CONFIG, None)
    }

    /// Describe new arguments (and, if set, a new grid, block or shared memory size) for
    /// launch node `node` of the finished command buffer, for the replays recorded from now
    /// on. The builder starts from the node's configuration; give every argument again.
    /// [`record`](Launch::record) waits for the replays in flight first. `kernel` must be the
    /// kernel the node launches; the cooperative and concurrent flags cannot change.
    pub fn update<'a>(&'a mut self, node: usize, kernel: &'a Kernel) -> Launch<'a, CmdBuf> {
        let (cfg, error) = match self.configs.get(node) {
            Some(Some(cfg)) => (*cfg, None),
            Some(None) => (
                DEFAULT_CONFIG,
                Some(Error::invalid(format!(
                    "CmdBuf::update: node {node} is not a launch"
                ))),
            ),
            None => (
                DEFAULT_CONFIG,
                Some(Error::invalid(format!(
                    "CmdBuf::update: node {node} does not exist (the command buffer has {} nodes)",
                    self.configs.len()
                ))),
            ),
        };
        Launch::new(self, kernel, Some(node), cfg, error)
    }

    pub(crate) fn record_launch(
        &mut self,
        kernel: &Kernel,
        cfg: &LaunchConfig,
        params: &[u8],
    ) -> Result<usize> {
        check_device(
            self.dev.core(),
            kernel.inner.device(),
            "CmdBuf::launch",
            "the kernel",
        )?;
        let node = self
            .inner
            .launch(&kernel.inner, cfg, params)
            .map_err(|e| retag(e, "CmdBuf::launch"))?;
        self.set_config(node, Some(*cfg));
        Ok(node)
    }

    pub(crate) fn update_launch(
        &mut self,
        node: usize,
        kernel: &Kernel,
        cfg: &LaunchConfig,
        params: &[u8],
    ) -> Result<()> {
        let old = self.configs.get(node).copied().flatten();
        if old != Some(*cfg) {
            self.inner
                .set_launch(node, &kernel.inner, cfg)
                .map_err(|e| retag(e, "CmdBuf::update"))?;
            self.set_config(node, Some(*cfg));
        }
        self.inner
            .set_params(node, &kernel.inner, params)
            .map_err(|e| retag(e, "CmdBuf::update"))
    }

    fn set_config(&mut self, node: usize, cfg: Option<LaunchConfig>) {
        if self.configs.len() <= node {
            self.configs.resize(node + 1, None);
        }
        self.configs[node] = cfg;
    }

    /// Keep the buffers `list` names, and note how the command buffer uses them.
    pub(crate) fn hold(&mut self, list: &BufferList) {
        for (s, a) in list.iter() {
            self.hold_one(s, *a);
        }
    }

    fn hold_one(&mut self, s: &Arc<Shared>, a: Access) {
        match self.held.iter_mut().find(|(h, _)| Arc::ptr_eq(h, s)) {
            Some((_, have)) => {
                if a == Access::Write {
                    *have = Access::Write;
                }
            }
            None => self.held.push((s.clone(), a)),
        }
    }

    /// Record a copy of all of `src` into `dst` (the same length), on the SMs; returns the
    /// node index.
    ///
    /// ```
    /// let dev = tegragpu::Device::open("emu")?;
    /// let src = dev.alloc_from(&[5u32; 64])?;
    /// let mut dst = dev.alloc::<u32>(64)?;
    /// let mut cb = dev.cmdbuf()?;
    /// assert_eq!(cb.copy(&mut dst, &src)?, 0);
    /// cb.finish()?;
    /// let mut queue = dev.queue()?;
    /// queue.replay(&mut cb)?;
    /// queue.synchronize()?;
    /// assert_eq!(dst.to_vec()?, vec![5; 64]);
    /// # Ok::<(), tegragpu::Error>(())
    /// ```
    pub fn copy<T: Pod>(
        &mut self,
        dst: &mut DeviceBuffer<T>,
        src: &DeviceBuffer<T>,
    ) -> Result<usize> {
        if dst.len() != src.len() {
            return Err(Error::invalid(format!(
                "CmdBuf::copy: dst has {} elements, src {}",
                dst.len(),
                src.len()
            )));
        }
        check_device(self.dev.core(), dst.device().core(), "CmdBuf::copy", "dst")?;
        check_device(self.dev.core(), src.device().core(), "CmdBuf::copy", "src")?;
        let node = self
            .inner
            .copy(
                &dst.shared.buf,
                0,
                &src.shared.buf,
                0,
                src.size_bytes() as u64,
            )
            .map_err(|e| retag(e, "CmdBuf::copy"))?;
        self.set_config(node, None);
        self.hold_one(&src.shared, Access::Read);
        self.hold_one(&dst.shared, Access::Write);
        Ok(node)
    }

    /// Record a GPU write of `value` to `signal` once the earlier nodes are done; returns the
    /// node index ([`set_value`](CmdBuf::set_value) changes the value).
    ///
    /// ```
    /// let dev = tegragpu::Device::open("emu")?;
    /// let s = dev.signal(0)?;
    /// let mut cb = dev.cmdbuf()?;
    /// let node = cb.signal(&s, 1)?;
    /// cb.finish()?;
    /// cb.set_value(node, 2)?;
    /// let mut queue = dev.queue()?;
    /// queue.replay(&mut cb)?;
    /// queue.synchronize()?;
    /// assert_eq!(s.value(), 2);
    /// # Ok::<(), tegragpu::Error>(())
    /// ```
    pub fn signal(&mut self, signal: &Signal, value: u64) -> Result<usize> {
        let node = self
            .inner
            .signal(signal.core(), value)
            .map_err(|e| retag(e, "CmdBuf::signal"))?;
        self.set_config(node, None);
        Ok(node)
    }

    /// Record a GPU wait until `signal` ≥ `value` before the later nodes start; returns the
    /// node index.
    pub fn wait(&mut self, signal: &Signal, value: u64) -> Result<usize> {
        let node = self
            .inner
            .wait(signal.core(), value)
            .map_err(|e| retag(e, "CmdBuf::wait"))?;
        self.set_config(node, None);
        Ok(node)
    }

    /// Record a full barrier; returns the node index.
    pub fn barrier(&mut self) -> Result<usize> {
        let node = self
            .inner
            .barrier()
            .map_err(|e| retag(e, "CmdBuf::barrier"))?;
        self.set_config(node, None);
        Ok(node)
    }

    /// End recording: build the command buffer in GPU memory. Refused when nothing was
    /// recorded.
    ///
    /// ```
    /// let dev = tegragpu::Device::open("emu")?;
    /// let mut cb = dev.cmdbuf()?;
    /// assert!(cb.finish().is_err()); // nothing recorded
    /// cb.barrier()?;
    /// cb.finish()?;
    /// assert!(cb.is_finished());
    /// # Ok::<(), tegragpu::Error>(())
    /// ```
    pub fn finish(&mut self) -> Result<()> {
        self.inner.finish().map_err(|e| retag(e, "CmdBuf::finish"))
    }

    /// Replace the value of signal or wait node `node` for later replays (waits for the
    /// replays in flight first).
    pub fn set_value(&mut self, node: usize, value: u64) -> Result<()> {
        self.inner
            .set_value(node, value)
            .map_err(|e| retag(e, "CmdBuf::set_value"))
    }
}
