//! Device: opening a backend, device-wide state (signal slots, local memory, deferred frees,
//! sticky fault state).

use super::buffer::Buffer;
use super::module::PlaceManaged;
use super::queue::{fence_now, fence_passed, Fence, Queue, QueueConfig, QueueKind, QueueTrack};
use super::signal::{Signal, SignalPool};
use super::Module;
use crate::backend::{Allocation, Backend, BackendKind, DeviceInfo, DeviceKind, MemFlags};
use crate::error::{Error, Result, Status};
use crate::hw::arch::ArchInfo;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};

/// Default per-thread stack size (bytes), libcuda's default `CU_LIMIT_STACK_SIZE`.
pub const DEFAULT_STACK_LIMIT: u32 = 1024;

/// A GPU fault as reported to the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FaultReport {
    /// Driver error code (nvgpu notifier info32: 31 MMU fault, 13 GR exception, 8 timeout, ...).
    pub code: u32,
    /// Faulting GPU virtual address, where the driver reports it.
    pub address: Option<u64>,
    /// Description naming the queue and what happened.
    pub what: String,
}

/// Local memory (shader stack) backing store, shared by all compute queues of a device.
pub(crate) struct LocalMem {
    pub buf: Option<Allocation>,
    pub bytes_per_tpc: u64,
    pub per_thread: u32,
    /// Bumped whenever the backing changes; queues re-emit SET_SHADER_LOCAL_MEMORY on change.
    pub generation: u64,
}

/// libcuda's default `CU_LIMIT_MALLOC_HEAP_SIZE`.
pub const DEFAULT_MALLOC_HEAP_BYTES: u64 = 8 << 20;

pub(crate) struct DeviceInner {
    pub backend: Box<dyn Backend>,
    pub arch: &'static ArchInfo,
    pub info: DeviceInfo,
    pub fault: Mutex<Option<FaultReport>>,
    pub faulted: AtomicBool,
    pub signals: Mutex<SignalPool>,
    /// Signal slots freed by a drop that could not take `signals` (it may run inside it: a
    /// queue's timeline dropped with its queue while the pool is locked); merged into the pool
    /// at its next use.
    pub signal_drops: Mutex<crate::core::signal::DroppedSlots>,
    pub local: Mutex<LocalMem>,
    pub local_generation: AtomicU64,
    /// Per-thread stack bytes for kernels taken from now on (`TG_LIMIT_STACK_SIZE`).
    pub stack_limit: std::sync::atomic::AtomicU32,
    /// QMD per-thread local bytes for `stack_limit` (`hw::local_mem::lm_per_thread`).
    pub stack_lm: std::sync::atomic::AtomicU32,
    /// Serializes `set_stack_limit` and `set_malloc_heap_size`.
    pub limit_lock: Mutex<()>,
    /// Bytes of the device heap (`TG_LIMIT_MALLOC_HEAP_SIZE`), allocated by the first module
    /// that imports `malloc` or `free`.
    pub heap_limit: AtomicU64,
    /// Bumped whenever code is written to GPU memory; queues invalidate the shader caches
    /// before their next launch when it changed.
    pub code_generation: AtomicU64,
    pub queues: Mutex<Vec<Weak<QueueTrack>>>,
    /// Allocations whose owners were dropped while queued work could still use them:
    /// (allocation, per-queue timeline values that must be reached first).
    pub deferred: Mutex<Vec<(Allocation, Fence)>>,
    /// The built-in syscall module (device-side printf and assert), loaded by the first module
    /// that calls one.
    pub syscalls: Mutex<Option<Arc<super::syscalls::Syscalls>>>,
    /// Set once a module that calls `vprintf` is loaded: synchronization points print.
    pub printf_active: AtomicBool,
    /// Texture header and sampler pools (texture objects), bound on every compute queue.
    pub textures: Mutex<super::texture::TexturePool>,
    /// Texture headers use the TEXHEAD_V2 layouts (Hopper and later). With
    /// SET_TEXTURE_HEADER_VERSION 0 and Maxwell-style headers an H100 stops the channel with a
    /// graphics class error (RM error 69) at the first texture fetch.
    pub tex_header_v2: bool,
    /// Idle staging buffers of host transfers (`Queue::write_from_host`, `read_to_host`,
    /// `fill_va`), each `STAGING_CHUNK` bytes of CPU-cached memory; at most
    /// [`STAGING_POOL_KEEP`] are kept.
    pub staging: Mutex<Vec<Allocation>>,
    /// Extended properties, gathered at the first `Device::attribute` call.
    pub properties: std::sync::OnceLock<super::properties::DeviceProperties>,
    /// Peer access to and from other devices (`core/peer.rs`).
    pub peer: super::peer::PeerState,
}

/// Idle staging buffers a device keeps for later host transfers.
const STAGING_POOL_KEEP: usize = 16;

impl Drop for DeviceInner {
    fn drop(&mut self) {
        // Every queue, buffer, module and signal holds a Device, so none is alive here: print
        // what device-side printf left, then free what is left without waiting.
        if let Some(s) = self.syscalls.get_mut().take() {
            s.flush_printf();
            if let Ok(mut s) = Arc::try_unwrap(s) {
                s.free(&*self.backend);
            }
        }
        let peers = self.peer.was_accessed();
        for (a, f) in self.deferred.get_mut().drain(..) {
            // Only the queues of devices with peer access to this one can still be running.
            if peers {
                super::peer::wait_peer_fence(&f);
            }
            let _ = self.backend.free(&a);
        }
        if let Some(a) = self.local.get_mut().buf.take() {
            let _ = self.backend.free(&a);
        }
        for a in self.staging.get_mut().drain(..) {
            let _ = self.backend.free(&a);
        }
        self.textures.get_mut().free_memory(&*self.backend);
        self.signals.get_mut().release_all(&*self.backend, peers);
    }
}

/// An open GPU. Cheap to clone (reference counted); children keep their device alive.
#[derive(Clone)]
pub struct Device {
    pub(crate) inner: Arc<DeviceInner>,
}

impl std::fmt::Debug for Device {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Device")
            .field("name", &self.inner.info.name)
            .finish()
    }
}

/// The device specs `Device::open` accepts.
pub const DEVICE_SPECS: &str =
    "\"emu\" (emulated Orin), \"nvgpu\" (Jetson Orin), \"rm\" or \"rm:N\" (desktop NVIDIA driver, the first or the N-th GPU)";

/// The device the environment variable `TEGRAGPU_DEVICE` names: `None` when it is unset or
/// empty. A value that is not valid UTF-8 is an error (`InvalidArgument`), never ignored.
pub fn device_from_env() -> Result<Option<String>> {
    match std::env::var_os("TEGRAGPU_DEVICE") {
        None => Ok(None),
        Some(v) if v.is_empty() => Ok(None),
        Some(v) => match v.into_string() {
            Ok(s) => Ok(Some(s)),
            Err(v) => Err(Error::invalid(format!(
                "TEGRAGPU_DEVICE is not valid UTF-8 ({:?}); expected {DEVICE_SPECS}, or unset it",
                v
            ))),
        },
    }
}

impl Device {
    /// Open a device.
    ///
    /// `spec`: `"emu"` = the emulated Orin; `"nvgpu"`; `"rm"`. `None` or `""` = the device the
    /// environment variable `TEGRAGPU_DEVICE` names when it is set and non-empty, else the real
    /// GPU of this machine (nvgpu if `/dev/nvgpu/igpu0/ctrl` exists, else the RM driver if
    /// `/dev/nvidiactl` exists). An explicit spec always wins over `TEGRAGPU_DEVICE` (see
    /// [`crate::backend::choose_device`]); the variable is read only when `spec` names no
    /// device, and a value that is not valid UTF-8 then gives `InvalidArgument`.
    ///
    /// Logs which backend was opened and why at info level, the bring-up steps at debug.
    pub fn open(spec: Option<&str>) -> Result<Device> {
        crate::log::init();
        crate::os::fork::install();
        let spec = spec.filter(|s| !s.is_empty());
        let env = match spec {
            None => device_from_env()?,
            Some(_) => {
                if let Some(v) = std::env::var_os("TEGRAGPU_DEVICE").filter(|v| !v.is_empty()) {
                    crate::log::debug!(
                        "TEGRAGPU_DEVICE={v:?} not consulted: the spec argument wins"
                    );
                }
                None
            }
        };
        let choice = crate::backend::choose_device(spec, env.as_deref()).inspect_err(|e| {
            crate::log::debug!("device selection failed: {e}");
        })?;
        crate::log::debug!("opening \"{}\": {}", choice.kind.spec(), choice.reason);
        let opened: Result<Box<dyn Backend>> = match choice.kind {
            DeviceKind::Emu => crate::backend::nvgpu::NvgpuBackend::open(crate::emu::EmuSys::new())
                .map(|b| Box::new(b) as Box<dyn Backend>),
            DeviceKind::Nvgpu => {
                crate::backend::nvgpu::NvgpuBackend::open(Arc::new(crate::os::LinuxSys))
                    .map(|b| Box::new(b) as Box<dyn Backend>)
            }
            DeviceKind::Rm => crate::backend::rm::RmBackend::open_linux(choice.index)
                .map(|b| Box::new(b) as Box<dyn Backend>),
        };
        let backend = opened.inspect_err(|e| {
            crate::log::debug!("opening \"{}\" failed: {e}", choice.kind.spec());
        })?;
        let dev = Self::from_backend(backend)?;
        let i = dev.info();
        crate::log::info!(
            "opened {} ({}{}, {} backend): {}",
            choice.kind.spec(),
            i.name,
            if i.emulated { ", emulated" } else { "" },
            match i.backend {
                BackendKind::Nvgpu => "nvgpu",
                BackendKind::Rm => "rm",
            },
            choice.reason
        );
        Ok(dev)
    }

    /// Wrap an opened backend.
    pub fn from_backend(backend: Box<dyn Backend>) -> Result<Device> {
        let info = backend.info().clone();
        let arch = crate::hw::arch::arch_for_device(
            info.compute_class,
            info.backend == BackendKind::Nvgpu,
        )
        .ok_or_else(|| {
            Error::new(
                Status::NotSupported,
                format!(
                    "compute class {:#x} of {} is not in the architecture table",
                    info.compute_class, info.name
                ),
            )
        })?;
        let textures = super::texture::TexturePool::new(&*backend)?;
        Ok(Device {
            inner: Arc::new(DeviceInner {
                backend,
                arch,
                info,
                fault: Mutex::new(None),
                faulted: AtomicBool::new(false),
                signals: Mutex::new(SignalPool::default()),
                signal_drops: Mutex::new(Default::default()),
                local: Mutex::new(LocalMem {
                    buf: None,
                    bytes_per_tpc: 0,
                    per_thread: 0,
                    generation: 0,
                }),
                local_generation: AtomicU64::new(0),
                stack_limit: std::sync::atomic::AtomicU32::new(DEFAULT_STACK_LIMIT),
                stack_lm: std::sync::atomic::AtomicU32::new(crate::hw::local_mem::lm_per_thread(
                    DEFAULT_STACK_LIMIT,
                )?),
                limit_lock: Mutex::new(()),
                heap_limit: AtomicU64::new(DEFAULT_MALLOC_HEAP_BYTES),
                code_generation: AtomicU64::new(1),
                queues: Mutex::new(Vec::new()),
                deferred: Mutex::new(Vec::new()),
                syscalls: Mutex::new(None),
                printf_active: AtomicBool::new(false),
                textures: Mutex::new(textures),
                tex_header_v2: arch.pb_caps.tex_header_v2,
                staging: Mutex::new(Vec::new()),
                properties: std::sync::OnceLock::new(),
                peer: Default::default(),
            }),
        })
    }

    pub fn info(&self) -> &DeviceInfo {
        &self.inner.info
    }

    pub fn arch(&self) -> &'static ArchInfo {
        self.inner.arch
    }

    pub fn is_emulated(&self) -> bool {
        self.inner.info.emulated
    }

    pub fn backend_kind(&self) -> BackendKind {
        self.inner.info.backend
    }

    /// Allocate `size_bytes` of GPU memory visible to the CPU.
    pub fn alloc(&self, size_bytes: u64, flags: MemFlags) -> Result<Buffer> {
        self.check_usable()?;
        self.collect_deferred();
        Buffer::new(self, size_bytes, flags)
    }

    /// Map the process's own memory `[ptr, ptr + len)` for the GPU (pinning it; like
    /// `cuMemHostRegister`): a buffer over the whole 4 KiB pages around the range, at the GPU
    /// address equal to its CPU address, so kernels can use pointers into it as they are. The
    /// memory stays the caller's: it must stay allocated until the buffer is dropped, and
    /// dropping the buffer unmaps and unpins it without touching its contents. Desktop GPUs
    /// (RM) only; elsewhere `Status::NotSupported`, saying why; also where the address is
    /// not free for the GPU (the library's own window, the shader windows, or pages another
    /// registration already maps).
    pub fn register_host(&self, ptr: *const u8, len: u64) -> Result<Buffer> {
        self.check_usable()?;
        self.collect_deferred();
        Buffer::register(self, ptr as usize, len)
    }

    /// Hand the process's anonymous mapping `[ptr, ptr + len)` (whole 4 KiB pages) to the
    /// library: mapped for the GPU at its own addresses, as [`Device::register_host`] maps
    /// pages, and unmapped from the process once the buffer is freed (after the queued work
    /// that may use it), so its addresses are not reused while the GPU still maps them.
    /// Desktop GPUs (RM) only; elsewhere `Status::NotSupported`. On failure the mapping stays
    /// the caller's.
    ///
    /// # Safety
    /// `[ptr, ptr + len)` must be an anonymous mapping the caller made (`mmap`) and gives up:
    /// nothing else may unmap or use it as its own after this call succeeds.
    pub unsafe fn adopt_host(&self, ptr: *mut u8, len: u64) -> Result<Buffer> {
        self.check_usable()?;
        self.collect_deferred();
        Buffer::adopt(self, ptr as usize, len)
    }

    /// Import memory another driver or process exported as `fd` (a dma-buf on Jetson, an RM
    /// export fd on desktop GPUs; see [`Buffer::export_fd`]): a buffer of `size` bytes of it,
    /// or of all of it when `size` is 0. The caller keeps `fd` (close it when it likes; the
    /// buffer holds the memory).
    pub fn import_fd(&self, fd: std::os::fd::RawFd, size: u64) -> Result<Buffer> {
        self.check_usable()?;
        self.collect_deferred();
        Buffer::import(self, fd, size)
    }

    /// Load a cubin from memory.
    pub fn load_module(&self, cubin: &[u8]) -> Result<Module> {
        self.check_usable()?;
        Module::load(self, cubin, None)
    }

    /// [`Device::load_module`] that puts each `__managed__` variable of the cubin where `place`
    /// says (memory the caller allocated, holding the variable's initial bytes when `place`
    /// returns): the module's code and [`Module::global`] reach the variable there.
    /// [`Device::load_module`] keeps such variables in the module's own memory. The caller keeps
    /// the memory alive as long as the module and the work that uses it.
    pub fn load_module_placing(&self, cubin: &[u8], place: &mut PlaceManaged) -> Result<Module> {
        self.check_usable()?;
        Module::load(self, cubin, Some(place))
    }

    /// Compile CUDA C through libnvrtc (loaded at run time) and load the result.
    pub fn compile_cuda(&self, source: &str, options: &[&str]) -> Result<Module> {
        let cubin = crate::nvrtc::compile(
            source,
            "tegragpu.cu",
            (self.inner.info.sm_major, self.inner.info.sm_minor),
            options,
        )?;
        self.load_module(&cubin)
    }

    /// Create a queue. `entries` = GPFIFO ring entries (power of two) or 0 for the default.
    pub fn create_queue(&self, kind: QueueKind) -> Result<Queue> {
        self.create_queue_with(kind, QueueConfig::default())
    }

    /// Create a queue with explicit sizing.
    pub fn create_queue_with(&self, kind: QueueKind, config: QueueConfig) -> Result<Queue> {
        self.check_usable()?;
        Queue::new(self, kind, config)
    }

    /// Create a copy queue whose channel runs on `engine` ([`crate::backend::CopyEngine`]; the
    /// desktop driver's backend only, which lists its engines in [`Device::copy_engines`]). An
    /// explicit engine the driver refuses is an error naming it; [`Queue::engine`] says where
    /// a queue runs.
    pub fn create_copy_queue(
        &self,
        engine: crate::backend::CopyEngine,
        config: QueueConfig,
    ) -> Result<Queue> {
        self.check_usable()?;
        Queue::new_on(self, QueueKind::Copy, config, engine)
    }

    /// The logical copy engines the driver lists (RM: index, engine type, caps, the physical
    /// copy engines behind each); empty on backends that do not list them.
    pub fn copy_engines(&self) -> Vec<crate::backend::rm::CopyEngineInfo> {
        self.backend().copy_engines()
    }

    /// Create an empty command buffer (see [`super::CmdBuf`]): record, `finish`, replay on
    /// compute queues.
    pub fn create_cmdbuf(&self) -> Result<super::CmdBuf> {
        super::CmdBuf::new(self)
    }

    /// Create a texture object over `buf` (`desc.layout`'s `address` fields are byte offsets
    /// into `buf`). The texture keeps `buf` allocated; [`Texture::handle`] is the value to pass
    /// as the kernel's `cudaTextureObject_t` parameter.
    pub fn create_texture(
        &self,
        buf: std::sync::Arc<Buffer>,
        desc: &crate::hw::texture::TexDesc,
    ) -> Result<super::Texture> {
        self.check_usable()?;
        super::Texture::new(self, buf, desc)
    }

    /// Create a timeline signal with an initial value.
    pub fn create_signal(&self, initial: u64) -> Result<Signal> {
        Signal::new(self, initial)
    }

    /// Submit what is recorded on the device's queues, then wait until all work submitted on
    /// every queue of this device has completed. The queues submitted are those this call can
    /// reach: every C API / Python queue (an owned queue only from its owner thread). A queue
    /// of the Rust API is the caller's to submit ([`Queue::synchronize`] does both).
    pub fn synchronize(&self, timeout_ns: u64) -> Result<()> {
        let tracks = self.live_queues();
        for t in &tracks {
            t.submit_for_waiter();
        }
        for t in tracks {
            t.wait_submitted(self, timeout_ns)?;
        }
        self.collect_deferred();
        self.flush_printf();
        self.check_usable()
    }

    /// Print what device-side `printf` wrote since the last synchronization point (a no-op
    /// until a module that calls it is loaded).
    #[inline]
    pub(crate) fn flush_printf(&self) {
        if self.inner.printf_active.load(Ordering::Relaxed) {
            if let Some(s) = self.inner.syscalls.lock().clone() {
                s.flush_printf();
            }
        }
    }

    /// The device's syscall module, loaded on first use.
    pub(crate) fn syscalls(&self) -> Result<Arc<super::syscalls::Syscalls>> {
        let mut g = self.inner.syscalls.lock();
        if let Some(s) = g.as_ref() {
            return Ok(s.clone());
        }
        let info = self.info();
        let s = Arc::new(super::syscalls::Syscalls::load(
            &*self.inner.backend,
            (info.sm_major, info.sm_minor),
            super::module::code_memory(self),
        )?);
        self.inner.code_generation.fetch_add(1, Ordering::AcqRel);
        *g = Some(s.clone());
        Ok(s)
    }

    /// The sticky fault report, if the device has faulted.
    pub fn fault_report(&self) -> Option<FaultReport> {
        self.poll_faults();
        self.inner.fault.lock().clone()
    }

    /// Error out if the device has faulted (sticky).
    #[inline(always)]
    pub(crate) fn check_usable(&self) -> Result<()> {
        if self.inner.faulted.load(Ordering::Acquire) {
            return self.refuse_after_fault();
        }
        Ok(())
    }

    #[cold]
    #[inline(never)]
    fn refuse_after_fault(&self) -> Result<()> {
        let f = self.inner.fault.lock().clone();
        let what = f.map(|f| f.what).unwrap_or_default();
        Err(Error::new(
            Status::DeviceFault,
            format!("the device faulted earlier and refuses new work: {what}"),
        ))
    }

    /// How far the live queue with serial `serial` has submitted (its timeline value), `None`
    /// when it is gone. No allocation.
    pub(crate) fn queue_submitted(&self, serial: u64) -> Option<u64> {
        self.inner
            .queues
            .lock()
            .iter()
            .filter_map(|w| w.upgrade())
            .find(|t| t.serial == serial)
            .map(|t| t.submitted())
    }

    /// The queues of this device that still exist.
    pub(crate) fn live_queues(&self) -> Vec<Arc<QueueTrack>> {
        self.inner
            .queues
            .lock()
            .iter()
            .filter_map(|w| w.upgrade())
            .collect()
    }

    /// Ring the doorbell of every queue that has work in flight again (waits do this when they
    /// see no progress; see [`crate::hw::gpfifo::ring_doorbell_again`]).
    pub(crate) fn ring_busy_queues_again(&self) {
        let tracks = self.live_queues();
        for t in tracks {
            t.ring_again_if_busy();
        }
    }

    /// Look for channel errors on every queue; record the first as the sticky fault.
    /// Returns the fault if there is one.
    pub(crate) fn poll_faults(&self) -> Option<FaultReport> {
        if self.inner.faulted.load(Ordering::Acquire) {
            return self.inner.fault.lock().clone();
        }
        let tracks = self.live_queues();
        for t in tracks {
            if let Some(e) = t.channel_error() {
                let log = self.inner.backend.fault_log();
                let address = e.address.or_else(|| {
                    log.iter()
                        .rev()
                        .find(|r| r.token == t.token)
                        .and_then(|r| r.address)
                });
                let detail = log
                    .iter()
                    .rev()
                    .find(|r| r.token == t.token)
                    .map(|r| r.what.clone())
                    .unwrap_or(e.what.clone());
                let assertion = self
                    .inner
                    .syscalls
                    .lock()
                    .as_ref()
                    .and_then(|s| s.assertion());
                if let Some(a) = &assertion {
                    // libcuda prints the failed assertion to stderr when it sees the fault.
                    eprintln!("{a}");
                }
                let report = FaultReport {
                    code: e.code,
                    address,
                    what: format!(
                        "{}{} queue (token {:#x}): error code {}{}: {}",
                        assertion
                            .map(|a| format!("device-side assertion failed: {a} "))
                            .unwrap_or_default(),
                        t.kind_name,
                        t.token,
                        e.code,
                        address
                            .map(|a| format!(" at GPU address {a:#x}"))
                            .unwrap_or_default(),
                        detail
                    ),
                };
                let mut g = self.inner.fault.lock();
                if g.is_none() {
                    *g = Some(report.clone());
                }
                self.inner.faulted.store(true, Ordering::Release);
                return g.clone();
            }
        }
        None
    }

    /// The error to return from a wait that observed a fault.
    pub(crate) fn fault_error(&self, call: &str) -> Option<Error> {
        self.poll_faults().map(|f| {
            Error::new(
                Status::DeviceFault,
                format!("{call}: device fault: {}", f.what),
            )
        })
    }

    pub(crate) fn register_queue(&self, t: &Arc<QueueTrack>) {
        let mut q = self.inner.queues.lock();
        q.retain(|w| w.strong_count() > 0);
        q.push(Arc::downgrade(t));
    }

    /// Free an allocation once every queue has passed the work submitted so far.
    pub(crate) fn free_when_idle(&self, alloc: Allocation) {
        let mut tracks = fence_now(self);
        self.peer_extend_fence(&mut tracks);
        if tracks.is_empty() {
            let _ = self.inner.backend.free(&alloc);
        } else {
            self.inner.deferred.lock().push((alloc, tracks));
        }
    }

    /// For tests: (allocations, signal slots) released by their owners that the device holds
    /// back because queued work (submitted or only recorded) may still use them: its own
    /// queues' work, and the work of devices with peer access to its memory. Reaps first. A
    /// queue's work counts as done once the queue's timeline has passed it (the release that
    /// closes each submission, which [`Queue::synchronize`] waits for); a signal released
    /// earlier in the same submission can be seen a moment before that.
    #[doc(hidden)]
    pub fn held_for_queued_work(&self) -> (usize, usize) {
        self.collect_deferred();
        (self.inner.deferred.lock().len(), {
            let mut pool = self.inner.signals.lock();
            pool.merge(&mut self.inner.signal_drops.lock());
            pool.held()
        })
    }

    /// Free deferred allocations whose queues have caught up.
    pub(crate) fn collect_deferred(&self) {
        let mut d = self.inner.deferred.lock();
        if d.is_empty() {
            return;
        }
        let mut i = 0;
        while i < d.len() {
            if fence_passed(&d[i].1) {
                let (a, _) = d.swap_remove(i);
                let _ = self.inner.backend.free(&a);
            } else {
                i += 1;
            }
        }
    }

    /// A staging buffer for a host transfer: an idle one from the pool, else a new one.
    pub(crate) fn staging_take(&self) -> Result<Allocation> {
        if let Some(a) = self.inner.staging.lock().pop() {
            return Ok(a);
        }
        self.collect_deferred();
        let a = self.inner.backend.alloc(
            super::queue::STAGING_CHUNK,
            MemFlags {
                cpu_cached: true,
                ..Default::default()
            },
        )?;
        if a.cpu.is_null() {
            let _ = self.inner.backend.free(&a);
            return Err(Error::new(
                Status::Internal,
                "a staging buffer (CPU-cached memory) came without a CPU mapping",
            ));
        }
        Ok(a)
    }

    /// Give back a staging buffer no GPU work uses any more.
    pub(crate) fn staging_give(&self, a: Allocation) {
        let mut pool = self.inner.staging.lock();
        if pool.len() < STAGING_POOL_KEEP {
            pool.push(a);
        } else {
            drop(pool);
            let _ = self.inner.backend.free(&a);
        }
    }

    /// For tests: idle staging buffers the device keeps.
    #[doc(hidden)]
    pub fn staging_pool_len(&self) -> usize {
        self.inner.staging.lock().len()
    }

    pub(crate) fn backend(&self) -> &dyn Backend {
        &*self.inner.backend
    }

    /// Make sure the local-memory backing store fits `per_thread` bytes per thread.
    ///
    /// Growing it waits for nothing: queues switch to the new store with their next launch
    /// (SET_SHADER_LOCAL_MEMORY is re-emitted when the generation changes), and the old store is
    /// freed only once every queue has completed the work recorded so far (submitted or not),
    /// which may still use it. The lock is held across the allocation, so two threads growing
    /// the store at once cannot replace a larger store with a smaller one.
    pub(crate) fn ensure_local_memory(&self, per_thread: u32) -> Result<()> {
        let mut lm = self.inner.local.lock();
        if lm.buf.is_some() && lm.per_thread >= per_thread {
            return Ok(());
        }
        let info = &self.inner.info;
        let bytes_per_tpc =
            crate::hw::local_mem::bytes_per_tpc(per_thread, info.warps_per_sm, info.sm_per_tpc)?;
        let size = crate::hw::local_mem::backing_size(
            bytes_per_tpc,
            info.max_tpc_per_gpc,
            info.max_gpc_count,
        )?;
        let new = self.inner.backend.alloc(
            size,
            MemFlags {
                zeroed: false,
                ..Default::default()
            },
        )?;
        let old = lm.buf.replace(new);
        lm.bytes_per_tpc = bytes_per_tpc;
        lm.per_thread = per_thread;
        lm.generation += 1;
        self.inner
            .local_generation
            .store(lm.generation, Ordering::Release);
        drop(lm);
        if let Some(old) = old {
            self.free_when_idle(old);
        }
        Ok(())
    }

    /// Bytes of the device heap that `malloc` in kernels allocates from
    /// (`TG_LIMIT_MALLOC_HEAP_SIZE`; default 8 MiB, as libcuda's).
    pub fn malloc_heap_size(&self) -> u64 {
        match self
            .inner
            .syscalls
            .lock()
            .as_ref()
            .and_then(|s| s.heap_bytes())
        {
            Some(b) => b,
            None => self.inner.heap_limit.load(Ordering::Acquire),
        }
    }

    /// Set the device heap size, like `cuCtxSetLimit(CU_LIMIT_MALLOC_HEAP_SIZE)`: only before
    /// a module that calls `malloc` or `free` is loaded (the heap is allocated then and does
    /// not change afterwards). At least 1 KiB, at most 2^36 bytes.
    pub fn set_malloc_heap_size(&self, bytes: u64) -> Result<()> {
        let _serial = self.inner.limit_lock.lock();
        if !(1024..=1 << 36).contains(&bytes) {
            return Err(Error::invalid(format!(
                "tg_device_set_limit: malloc heap size {bytes} bytes is outside 1 KiB ..= 64 GiB"
            )));
        }
        if let Some(have) = self
            .inner
            .syscalls
            .lock()
            .as_ref()
            .and_then(|s| s.heap_bytes())
        {
            if have != bytes {
                return Err(Error::invalid(format!(
                    "tg_device_set_limit: the malloc heap ({have} bytes) was allocated when a module \
                     calling malloc/free was loaded; its size cannot change now (set it before)"
                )));
            }
        }
        self.inner.heap_limit.store(bytes, Ordering::Release);
        Ok(())
    }

    /// Allocate the device heap for a module that imports `malloc`/`free` (once per device).
    pub(crate) fn ensure_heap(&self, sys: &super::syscalls::Syscalls) -> Result<()> {
        let _serial = self.inner.limit_lock.lock();
        sys.ensure_heap(
            self.backend(),
            self.inner.heap_limit.load(Ordering::Acquire),
            crate::backend::MemFlags::default(),
        )
    }

    /// The per-thread stack size kernels get (`TG_LIMIT_STACK_SIZE`).
    pub fn stack_limit(&self) -> u32 {
        self.inner.stack_limit.load(Ordering::Acquire)
    }

    /// The QMD per-thread local memory for the stack limit (stack + the ABI reserve).
    pub(crate) fn stack_lm(&self) -> u32 {
        self.inner.stack_lm.load(Ordering::Acquire)
    }

    /// Allocate now what the first launch and the first host copy would otherwise allocate:
    /// the local-memory store for the current stack limit and one staging buffer. libcuda
    /// reserves both when a context is created, so its free-memory figure does not drop at a
    /// program's first launch or copy (on Jetson, staging buffers are memory the GPU's heap
    /// counts too).
    pub fn reserve_working_memory(&self) -> Result<()> {
        self.check_usable()?;
        {
            let _serial = self.inner.limit_lock.lock();
            self.ensure_local_memory(self.stack_lm())?;
        }
        if self.inner.staging.lock().is_empty() {
            let a = self.staging_take()?;
            self.staging_give(a);
        }
        Ok(())
    }

    /// Set the per-thread stack size (bytes), like `cuCtxSetLimit(CU_LIMIT_STACK_SIZE)`. Every
    /// launch recorded afterwards, of any kernel, gets the larger of this and the stack its
    /// code needs (`EIATTR_MIN_STACK_SIZE`); recursion and other calls whose depth the compiler
    /// cannot bound use it. Growing the limit grows the device's local-memory store now.
    pub fn set_stack_limit(&self, bytes: u64) -> Result<()> {
        let max = u64::from(
            crate::hw::local_mem::MAX_LM_PER_THREAD - crate::hw::local_mem::LOCAL_MEM_RESERVED,
        );
        if bytes > max {
            return Err(Error::invalid(format!(
                "tg_device_set_limit: stack size {bytes} bytes per thread is more than the {max} the hardware allows"
            )));
        }
        // Check that the backing store for it can be described before accepting it.
        let lm = crate::hw::local_mem::lm_per_thread(bytes as u32)?;
        let info = &self.inner.info;
        crate::hw::local_mem::bytes_per_tpc(lm, info.warps_per_sm, info.sm_per_tpc)?;
        let _serial = self.inner.limit_lock.lock();
        if lm > self.stack_lm() {
            self.ensure_local_memory(lm)?;
        }
        self.inner
            .stack_limit
            .store(bytes as u32, Ordering::Release);
        self.inner.stack_lm.store(lm, Ordering::Release);
        Ok(())
    }
}
