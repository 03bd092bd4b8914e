//! The device: opening it, and creating everything else.

use super::{retag, CmdBuf, DeviceBuffer, Module, Queue, Signal};
use crate::core::{self, BackendKind, DeviceInfo, FaultReport, MemFlags, QueueConfig, QueueKind};
use crate::error::Result;
use bytemuck::Pod;
use std::time::Duration;

/// An open GPU: the emulated Orin, a Jetson Orin (nvgpu), or a desktop NVIDIA GPU (RM).
///
/// Cheap to clone (reference counted); everything created from a device keeps it open. `Send`
/// and `Sync`.
///
/// ```
/// let dev = tegragpu::Device::open("emu")?;
/// let info = dev.info();
/// assert!(info.emulated);
/// assert_eq!((info.sm_major, info.sm_minor), (8, 7));
/// # Ok::<(), tegragpu::Error>(())
/// ```
#[derive(Clone)]
pub struct Device {
    inner: core::Device,
}

impl std::fmt::Debug for Device {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.inner.fmt(f)
    }
}

/// `Duration` as nanoseconds, saturating.
pub(crate) fn ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

impl Device {
    /// Open a device by spec: `"emu"` (the emulated Orin, in this process), `"nvgpu"` (Jetson
    /// Orin), `"rm"` or `"rm:N"` (a desktop NVIDIA GPU: the first or the N-th). An empty spec
    /// opens the device the environment variable `TEGRAGPU_DEVICE` names when it is set,
    /// else the GPU of this machine (`NotFound` when it has none).
    ///
    /// ```
    /// let dev = tegragpu::Device::open("emu")?;
    /// assert_eq!(dev.info().name, "ga10b");
    /// let err = tegragpu::Device::open("tpu").unwrap_err();
    /// assert_eq!(err.status, tegragpu::Status::InvalidArgument);
    /// assert!(err.message.contains("unknown device spec \"tpu\""));
    /// # Ok::<(), tegragpu::Error>(())
    /// ```
    pub fn open(spec: &str) -> Result<Device> {
        Ok(Device {
            inner: core::Device::open(Some(spec))?,
        })
    }

    /// The core device this wraps (for tests and crates built on the internal layers).
    #[doc(hidden)]
    pub fn core(&self) -> &core::Device {
        &self.inner
    }

    /// Wrap a core device (for tests that open one over an instrumented backend).
    #[doc(hidden)]
    pub fn from_core(inner: core::Device) -> Device {
        Device { inner }
    }

    /// Facts about the device: name, SM version, SM count, memory, backend.
    ///
    /// ```
    /// let dev = tegragpu::Device::open("emu")?;
    /// println!("{}: sm_{}{}, {} SMs", dev.info().name, dev.info().sm_major,
    ///          dev.info().sm_minor, dev.info().sm_count);
    /// # Ok::<(), tegragpu::Error>(())
    /// ```
    pub fn info(&self) -> &DeviceInfo {
        self.inner.info()
    }

    /// Which kernel driver the device is driven through.
    ///
    /// ```
    /// let dev = tegragpu::Device::open("emu")?;
    /// assert_eq!(dev.backend(), tegragpu::BackendKind::Nvgpu);
    /// # Ok::<(), tegragpu::Error>(())
    /// ```
    pub fn backend(&self) -> BackendKind {
        self.inner.backend_kind()
    }

    /// Allocate a buffer of `len` elements of `T`, zeroed, placed for the GPU (Jetson: the
    /// shared memory, CPU-cached; desktop: video memory, which the CPU reaches through a
    /// mapping).
    ///
    /// ```
    /// let dev = tegragpu::Device::open("emu")?;
    /// let buf = dev.alloc::<f32>(1 << 20)?;
    /// assert_eq!(buf.size_bytes(), 4 << 20);
    /// assert!(dev.alloc::<f32>(0).is_err());
    /// # Ok::<(), tegragpu::Error>(())
    /// ```
    pub fn alloc<T: Pod>(&self, len: usize) -> Result<DeviceBuffer<T>> {
        self.alloc_with(
            len,
            MemFlags {
                zeroed: true,
                ..Default::default()
            },
        )
    }

    /// [`alloc`](Device::alloc) with explicit placement: `cpu_cached` (fast host reads;
    /// desktop: pinned host memory), `write_combined` (host writes only), `zeroed`.
    ///
    /// ```
    /// use tegragpu::MemFlags;
    /// let dev = tegragpu::Device::open("emu")?;
    /// let flags = MemFlags { cpu_cached: true, ..Default::default() };
    /// let buf = dev.alloc_with::<u32>(256, flags)?;
    /// assert_eq!(buf.len(), 256);
    /// # Ok::<(), tegragpu::Error>(())
    /// ```
    pub fn alloc_with<T: Pod>(&self, len: usize, flags: MemFlags) -> Result<DeviceBuffer<T>> {
        DeviceBuffer::new(self, len, flags, "Device::alloc")
    }

    /// A buffer of `len` elements over memory another driver or process exported as `fd`
    /// (Jetson: a dma-buf; desktop GPUs: an RM export fd, e.g. from
    /// [`DeviceBuffer::export_fd`] or CUDA's `cuMemExportToShareableHandle` with
    /// `CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR`): the first `len * size_of::<T>()` bytes, or
    /// as many whole elements as the memory holds when `len` is 0. `fd` stays the caller's.
    ///
    /// ```
    /// let dev = tegragpu::Device::open("emu")?;
    /// let (fd, _) = dev.alloc_from(&[1.5f32; 8])?.export_fd()?;
    /// let whole = dev.import_fd::<f32>(std::os::fd::AsFd::as_fd(&fd), 0)?;
    /// assert_eq!(whole.len(), 1024); // the page the 8 floats live in
    /// assert_eq!(whole.to_vec()?[..8], [1.5; 8]);
    /// # Ok::<(), tegragpu::Error>(())
    /// ```
    pub fn import_fd<T: Pod>(
        &self,
        fd: std::os::fd::BorrowedFd<'_>,
        len: usize,
    ) -> Result<DeviceBuffer<T>> {
        use std::os::fd::AsRawFd;
        let call = "Device::import_fd";
        let elem = std::mem::size_of::<T>();
        if elem == 0 {
            return Err(crate::Error::invalid(format!(
                "{call}: the element type {} has size 0",
                std::any::type_name::<T>()
            )));
        }
        let bytes = len
            .checked_mul(elem)
            .and_then(|b| u64::try_from(b).ok())
            .ok_or_else(|| {
                crate::Error::invalid(format!("{call}: {len} elements of {elem} bytes overflow"))
            })?;
        let buf = self
            .inner
            .import_fd(fd.as_raw_fd(), bytes)
            .map_err(|e| retag(e, call))?;
        let n = if len == 0 {
            (buf.size() / elem as u64) as usize
        } else {
            len
        };
        if n == 0 {
            return Err(crate::Error::invalid(format!(
                "{call}: the memory ({} bytes) holds no whole {}",
                buf.size(),
                std::any::type_name::<T>()
            )));
        }
        Ok(DeviceBuffer::from_core(self, buf, n))
    }

    /// Allocate a buffer holding a copy of `data`.
    ///
    /// ```
    /// let dev = tegragpu::Device::open("emu")?;
    /// let buf = dev.alloc_from(&[1u32, 2, 3])?;
    /// assert_eq!(buf.to_vec()?, [1, 2, 3]);
    /// # Ok::<(), tegragpu::Error>(())
    /// ```
    pub fn alloc_from<T: Pod>(&self, data: &[T]) -> Result<DeviceBuffer<T>> {
        let mut b = DeviceBuffer::new(self, data.len(), MemFlags::default(), "Device::alloc_from")?;
        b.copy_from_host(data)?;
        Ok(b)
    }

    /// Load GPU code: a cubin for the device's SM, a fatbinary (or a host object or shared
    /// library holding one), or PTX text (compiled for the device with the driver's PTX
    /// compiler or nvJitLink, where installed).
    ///
    /// ```
    /// let dev = tegragpu::Device::open("emu")?;
    /// // The test kernels (tests/fixtures/kernels.cu), built for sm_87.
    /// let module = dev.load_module(include_bytes!("../../tests/fixtures/cubin/kernels.sm_87.cubin"))?;
    /// assert!(module.kernel_names().iter().any(|n| n == "vector_add"));
    /// assert!(dev.load_module(b"not a cubin").is_err());
    /// # Ok::<(), tegragpu::Error>(())
    /// ```
    pub fn load_module(&self, image: &[u8]) -> Result<Module> {
        Ok(Module::from_core(
            self.inner
                .load_module(image)
                .map_err(|e| retag(e, "Device::load_module"))?,
        ))
    }

    /// Compile CUDA C with libnvrtc (loaded at run time; `LibraryMissing` when it is not
    /// installed) for the device's SM, and load the result. `options` are nvrtc options such
    /// as `"-DN=4"`.
    ///
    /// ```no_run
    /// let dev = tegragpu::Device::open("")?;
    /// let module = dev.compile_cuda(
    ///     r#"extern "C" __global__ void twice(float* x) { x[threadIdx.x] *= 2.0f; }"#,
    ///     &[],
    /// )?;
    /// let twice = module.kernel("twice")?;
    /// # Ok::<(), tegragpu::Error>(())
    /// ```
    pub fn compile_cuda(&self, source: &str, options: &[&str]) -> Result<Module> {
        Ok(Module::from_core(
            self.inner
                .compile_cuda(source, options)
                .map_err(|e| retag(e, "Device::compile_cuda"))?,
        ))
    }

    /// Create a compute queue (kernel launches, copies on the SMs, signals, waits), 1024
    /// submissions deep.
    ///
    /// ```
    /// let dev = tegragpu::Device::open("emu")?;
    /// let queue = dev.queue()?;
    /// assert_eq!(queue.kind(), tegragpu::QueueKind::Compute);
    /// # Ok::<(), tegragpu::Error>(())
    /// ```
    pub fn queue(&self) -> Result<Queue> {
        self.queue_with(QueueKind::Compute, QueueConfig::default().depth)
    }

    /// Create a copy queue: copies on the copy engine, signals and waits; no launches.
    ///
    /// ```
    /// let dev = tegragpu::Device::open("emu")?;
    /// let queue = dev.copy_queue()?;
    /// assert_eq!(queue.kind(), tegragpu::QueueKind::Copy);
    /// # Ok::<(), tegragpu::Error>(())
    /// ```
    pub fn copy_queue(&self) -> Result<Queue> {
        self.queue_with(QueueKind::Copy, QueueConfig::default().depth)
    }

    /// Create a queue of `kind` with `depth` submissions (and, on a compute queue, launches)
    /// in flight before recording waits for the GPU: a power of two from 16 to 65536.
    ///
    /// ```
    /// use tegragpu::QueueKind;
    /// let dev = tegragpu::Device::open("emu")?;
    /// let queue = dev.queue_with(QueueKind::Compute, 64)?;
    /// let err = dev.queue_with(QueueKind::Compute, 100).unwrap_err();
    /// assert!(err.message.contains("depth 100 must be a power of two"));
    /// # Ok::<(), tegragpu::Error>(())
    /// ```
    pub fn queue_with(&self, kind: QueueKind, depth: u32) -> Result<Queue> {
        let q = self
            .inner
            .create_queue_with(kind, QueueConfig { depth })
            .map_err(|e| retag(e, "Device::queue"))?;
        Ok(Queue::from_core(self.clone(), q))
    }

    /// Create a timeline signal holding `initial`: queues write it ([`Queue::signal`]) and
    /// wait for it ([`Queue::wait`]); the CPU reads, sets and waits for it.
    ///
    /// ```
    /// let dev = tegragpu::Device::open("emu")?;
    /// let s = dev.signal(5)?;
    /// assert_eq!(s.value(), 5);
    /// # Ok::<(), tegragpu::Error>(())
    /// ```
    pub fn signal(&self, initial: u64) -> Result<Signal> {
        Ok(Signal::from_core(self.inner.create_signal(initial)?))
    }

    /// Create an empty command buffer: record launches, copies, signals and waits once,
    /// [`finish`](CmdBuf::finish) it, then replay it on compute queues.
    ///
    /// ```
    /// let dev = tegragpu::Device::open("emu")?;
    /// let cb = dev.cmdbuf()?;
    /// assert!(cb.is_empty());
    /// # Ok::<(), tegragpu::Error>(())
    /// ```
    pub fn cmdbuf(&self) -> Result<CmdBuf> {
        Ok(CmdBuf::from_core(self.clone(), self.inner.create_cmdbuf()?))
    }

    /// Wait until the work submitted on every queue of the device is done (at most 10 s per
    /// queue). Work recorded on a [`Queue`] and not submitted is neither submitted nor waited
    /// for: [`Queue::synchronize`] does both for one queue.
    ///
    /// ```
    /// let dev = tegragpu::Device::open("emu")?;
    /// dev.synchronize()?;
    /// # Ok::<(), tegragpu::Error>(())
    /// ```
    pub fn synchronize(&self) -> Result<()> {
        self.inner
            .synchronize(core::DEFAULT_TIMEOUT_NS)
            .map_err(|e| retag(e, "Device::synchronize"))
    }

    /// The GPU fault that stopped the device, if any. A fault is sticky: the device refuses
    /// new work with `DeviceFault` afterwards.
    ///
    /// ```
    /// let dev = tegragpu::Device::open("emu")?;
    /// assert!(dev.fault().is_none());
    /// # Ok::<(), tegragpu::Error>(())
    /// ```
    pub fn fault(&self) -> Option<FaultReport> {
        self.inner.fault_report()
    }

    /// The per-thread stack size kernels get, bytes (default 1024).
    ///
    /// ```
    /// let dev = tegragpu::Device::open("emu")?;
    /// assert_eq!(dev.stack_limit(), 1024);
    /// # Ok::<(), tegragpu::Error>(())
    /// ```
    pub fn stack_limit(&self) -> u32 {
        self.inner.stack_limit()
    }

    /// Set the per-thread stack size of the launches recorded from now on (like
    /// `cuCtxSetLimit(CU_LIMIT_STACK_SIZE)`); kernels whose code needs more get what they need.
    ///
    /// ```
    /// let dev = tegragpu::Device::open("emu")?;
    /// dev.set_stack_limit(4096)?;
    /// assert_eq!(dev.stack_limit(), 4096);
    /// assert!(dev.set_stack_limit(1 << 30).is_err());
    /// # Ok::<(), tegragpu::Error>(())
    /// ```
    pub fn set_stack_limit(&self, bytes: u32) -> Result<()> {
        self.inner
            .set_stack_limit(u64::from(bytes))
            .map_err(|e| retag(e, "Device::set_stack_limit"))
    }

    /// Bytes of the heap that `malloc` in kernels allocates from (default 8 MiB).
    ///
    /// ```
    /// let dev = tegragpu::Device::open("emu")?;
    /// assert_eq!(dev.malloc_heap_size(), 8 << 20);
    /// # Ok::<(), tegragpu::Error>(())
    /// ```
    pub fn malloc_heap_size(&self) -> u64 {
        self.inner.malloc_heap_size()
    }

    /// Set the device heap size (like `cuCtxSetLimit(CU_LIMIT_MALLOC_HEAP_SIZE)`): 1 KiB to
    /// 64 GiB, and only before a module that calls `malloc` or `free` is loaded.
    ///
    /// ```
    /// let dev = tegragpu::Device::open("emu")?;
    /// dev.set_malloc_heap_size(64 << 20)?;
    /// assert_eq!(dev.malloc_heap_size(), 64 << 20);
    /// # Ok::<(), tegragpu::Error>(())
    /// ```
    pub fn set_malloc_heap_size(&self, bytes: u64) -> Result<()> {
        self.inner
            .set_malloc_heap_size(bytes)
            .map_err(|e| retag(e, "Device::set_malloc_heap_size"))
    }
}
