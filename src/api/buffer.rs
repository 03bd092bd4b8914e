//! Typed device buffers, host access, and the per-buffer record of GPU work that uses them.

use super::device::Device;
use crate::core::{self, QueueTrack};
use crate::error::{Error, Result, Status};
use bytemuck::Pod;
use parking_lot::Mutex;
use std::marker::PhantomData;
use std::sync::{Arc, Weak};

/// The timeline value noted for a queue while a command-buffer replay that uses the buffer is
/// being recorded there (the value of its submission is not known yet).
const RECORDING: u64 = u64::MAX;

/// How recorded GPU work uses a buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Access {
    /// The work reads the buffer (`Launch::arg`, the source of a copy).
    Read,
    /// The work may write the buffer (`Launch::arg_mut`, the destination of a copy).
    Write,
}

/// What a [`DeviceBuffer`] shares with the command buffers that use it: the memory (a command
/// buffer keeps it allocated) and the record of GPU work and host views.
pub(crate) struct Shared {
    pub(crate) buf: Arc<core::Buffer>,
    state: Mutex<UseState>,
}

#[derive(Default)]
struct UseState {
    /// Per queue that recorded work using the buffer: the timeline values after which that work
    /// is done.
    uses: Vec<Use>,
    /// Live [`HostSlice`]s.
    host_readers: usize,
    /// A [`HostSliceMut`] is live.
    host_writer: bool,
}

struct Use {
    queue: Weak<QueueTrack>,
    /// Every access recorded on the queue is done at this timeline value (0: none).
    any: u64,
    /// Every write recorded on the queue is done at this value (0: none).
    write: u64,
}

/// The previous values of a queue's entry, restored when a replay could not be recorded.
pub(crate) type Saved = Option<(u64, u64)>;

impl Shared {
    fn entry<'s>(uses: &'s mut [Use], track: &Arc<QueueTrack>) -> Option<&'s mut Use> {
        uses.iter_mut()
            .find(|u| std::ptr::eq(u.queue.as_ptr(), Arc::as_ptr(track)))
    }

    /// Note that work recorded on `track`'s queue, done at timeline value `value`, accesses the
    /// buffer. No allocation unless this is the first use on that queue.
    pub(crate) fn note(&self, track: &Arc<QueueTrack>, access: Access, value: u64) {
        let mut st = self.state.lock();
        match Self::entry(&mut st.uses, track) {
            Some(u) => {
                u.any = value;
                if access == Access::Write {
                    u.write = value;
                }
            }
            None => {
                // Forget queues whose work is done before adding one.
                st.uses.retain(|u| !use_done(u));
                st.uses.push(Use {
                    queue: Arc::downgrade(track),
                    any: value,
                    write: if access == Access::Write { value } else { 0 },
                });
            }
        }
    }

    /// Before a replay is recorded on `track`'s queue: refuse if a host view conflicts with
    /// `access`, else mark the queue's use as being recorded (a host view taken meanwhile is
    /// refused). Returns what [`Shared::restore`] puts back if the replay fails.
    pub(crate) fn begin_replay(
        &self,
        track: &Arc<QueueTrack>,
        access: Access,
        index: usize,
    ) -> Result<Saved> {
        let mut st = self.state.lock();
        let conflict = match access {
            Access::Write => st.host_readers > 0 || st.host_writer,
            Access::Read => st.host_writer,
        };
        if conflict {
            return Err(Error::invalid(format!(
                "Queue::replay: buffer {index} of the command buffer (GPU address {:#x}, {} bytes), \
                 which the command buffer {}, has a live host view ({}); drop it before replaying",
                self.buf.gpu_va(),
                self.buf.size(),
                if access == Access::Write { "writes" } else { "reads" },
                if st.host_writer {
                    "a HostSliceMut".to_string()
                } else {
                    format!("{} HostSlice", st.host_readers)
                }
            )));
        }
        let saved = Self::entry(&mut st.uses, track).map(|u| (u.any, u.write));
        drop(st);
        self.note(track, access, RECORDING);
        Ok(saved)
    }

    /// Undo [`Shared::begin_replay`] for a replay that was not recorded.
    pub(crate) fn restore(&self, track: &Arc<QueueTrack>, saved: Saved) {
        let mut st = self.state.lock();
        let (any, write) = saved.unwrap_or((0, 0));
        if let Some(u) = Self::entry(&mut st.uses, track) {
            u.any = any;
            u.write = write;
        }
    }

    /// Register a host view (`writer`: a mutable one) and return the GPU work it must wait for:
    /// writes for a shared view, every access for a mutable one. The registration ends when the
    /// returned guard is dropped.
    fn begin_host(&self, writer: bool) -> (Registration<'_>, Vec<(Weak<QueueTrack>, u64)>) {
        let mut st = self.state.lock();
        if writer {
            st.host_writer = true;
        } else {
            st.host_readers += 1;
        }
        let fence = st
            .uses
            .iter()
            .map(|u| (u.queue.clone(), if writer { u.any } else { u.write }))
            .filter(|(_, v)| *v != 0)
            .collect();
        (
            Registration {
                shared: self,
                writer,
            },
            fence,
        )
    }
}

/// A registered host view; dropping it ends the registration.
struct Registration<'a> {
    shared: &'a Shared,
    writer: bool,
}

impl Drop for Registration<'_> {
    fn drop(&mut self) {
        let mut st = self.shared.state.lock();
        if self.writer {
            st.host_writer = false;
        } else {
            st.host_readers = st.host_readers.saturating_sub(1);
        }
    }
}

/// Whether the work noted in `u` is done (or can no longer run: queue gone or stopped).
fn use_done(u: &Use) -> bool {
    match u.queue.upgrade() {
        None => true,
        Some(t) => u.any != RECORDING && (t.completed() >= u.any || t.channel_error().is_some()),
    }
}

/// Wait until the GPU work in `fence` is done (submitting it where its queue allows that).
/// Work recorded on a queue of this API and not submitted is an error: only its owner can
/// submit it.
fn wait_for_gpu(
    dev: &core::Device,
    fence: Vec<(Weak<QueueTrack>, u64)>,
    call: &str,
    va: u64,
) -> Result<()> {
    for (w, v) in &fence {
        let Some(t) = w.upgrade() else { continue };
        if *v == RECORDING {
            return Err(Error::invalid(format!(
                "{call}: buffer {va:#x}: a command-buffer replay that uses it is being recorded \
                 on a {} queue (token {:#x}) by another thread",
                t.kind_name, t.token
            )));
        }
        if t.completed() >= *v || t.channel_error().is_some() {
            continue;
        }
        if t.submitted() < *v {
            t.submit_for_waiter();
        }
        if t.submitted() < *v {
            return Err(Error::invalid(format!(
                "{call}: buffer {va:#x} is used by GPU work recorded on a {} queue (token {:#x}) \
                 that is not submitted; submit it first (Queue::submit or Queue::synchronize)",
                t.kind_name, t.token
            )));
        }
    }
    core::wait_fence(dev, &fence, core::DEFAULT_TIMEOUT_NS, call)
}

/// GPU memory holding `len` values of `T`, which the CPU can also access.
///
/// Create one with [`Device::alloc`] (zeroed) or [`Device::alloc_from`] (a copy of a host
/// slice). On Jetson the memory is the one memory the CPU and the GPU share; on desktop GPUs it
/// is video memory that the CPU reaches through a mapping made at the first host access.
///
/// **Host access is checked against GPU work.** [`as_slice`](DeviceBuffer::as_slice) and
/// [`as_mut_slice`](DeviceBuffer::as_mut_slice) first wait until the GPU work recorded so far
/// that uses the buffer is done (writes for a shared view; reads and writes for a mutable one),
/// and the view they return borrows the buffer, so no launch can take the buffer as a written
/// argument ([`Launch::arg_mut`](crate::Launch::arg_mut)) while the view lives. Work recorded
/// but not submitted is an error there rather than a wait that cannot end: submit the queue
/// first. Command buffers ([`CmdBuf`](crate::CmdBuf)) check live views at each replay.
///
/// Dropping the buffer frees the memory once the GPU work recorded so far no longer needs it;
/// a command buffer that uses the buffer keeps it allocated until the command buffer is
/// dropped.
///
/// ```
/// let dev = tegragpu::Device::open("emu")?;
/// let mut buf = dev.alloc::<u32>(4)?;
/// buf.copy_from_host(&[1, 2, 3, 4])?;
/// buf.as_mut_slice()?[0] = 10;
/// assert_eq!(buf.to_vec()?, [10, 2, 3, 4]);
/// # Ok::<(), tegragpu::Error>(())
/// ```
pub struct DeviceBuffer<T: Pod> {
    pub(crate) shared: Arc<Shared>,
    /// The GPU address (also the kernel argument's bytes).
    va: u64,
    len: usize,
    dev: Device,
    _t: PhantomData<T>,
}

impl<T: Pod> std::fmt::Debug for DeviceBuffer<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceBuffer")
            .field("type", &std::any::type_name::<T>())
            .field("len", &self.len)
            .field("gpu_address", &format_args!("{:#x}", self.va))
            .finish()
    }
}

impl<T: Pod> DeviceBuffer<T> {
    pub(crate) fn new(dev: &Device, len: usize, flags: core::MemFlags, call: &str) -> Result<Self> {
        let elem = std::mem::size_of::<T>();
        if elem == 0 {
            return Err(Error::invalid(format!(
                "{call}: the element type {} has size 0",
                std::any::type_name::<T>()
            )));
        }
        if len == 0 {
            return Err(Error::invalid(format!(
                "{call}: len is 0 (a buffer holds at least one {})",
                std::any::type_name::<T>()
            )));
        }
        let bytes = len
            .checked_mul(elem)
            .and_then(|b| u64::try_from(b).ok())
            .ok_or_else(|| {
                Error::new(
                    Status::OutOfMemory,
                    format!("{call}: {len} elements of {elem} bytes overflow the address space"),
                )
            })?;
        let buf = dev
            .core()
            .alloc(bytes, flags)
            .map_err(|e| super::retag(e, call))?;
        Ok(DeviceBuffer {
            va: buf.gpu_va(),
            shared: Arc::new(Shared {
                buf: Arc::new(buf),
                state: Mutex::new(UseState {
                    uses: Vec::with_capacity(2),
                    ..Default::default()
                }),
            }),
            len,
            dev: dev.clone(),
            _t: PhantomData,
        })
    }

    /// Number of elements.
    ///
    /// ```
    /// let dev = tegragpu::Device::open("emu")?;
    /// assert_eq!(dev.alloc::<f32>(1000)?.len(), 1000);
    /// # Ok::<(), tegragpu::Error>(())
    /// ```
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the buffer holds no elements (never: buffers hold at least one).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Size in bytes (`len() * size_of::<T>()`).
    ///
    /// ```
    /// let dev = tegragpu::Device::open("emu")?;
    /// assert_eq!(dev.alloc::<u64>(3)?.size_bytes(), 24);
    /// # Ok::<(), tegragpu::Error>(())
    /// ```
    pub fn size_bytes(&self) -> usize {
        self.len * std::mem::size_of::<T>()
    }

    /// The GPU virtual address of the first element: what a kernel's pointer parameter
    /// receives when the buffer is passed with [`Launch::arg`](crate::Launch::arg).
    ///
    /// ```
    /// let dev = tegragpu::Device::open("emu")?;
    /// assert_ne!(dev.alloc::<u8>(1)?.gpu_address(), 0);
    /// # Ok::<(), tegragpu::Error>(())
    /// ```
    pub fn gpu_address(&self) -> u64 {
        self.va
    }

    /// The device the buffer belongs to.
    pub fn device(&self) -> &Device {
        &self.dev
    }

    /// Share the buffer's memory with another driver (CUDA) or process: a new file descriptor
    /// (Jetson: a dma-buf; desktop GPUs: an RM export fd) and the size of the memory object it
    /// carries (the buffer's size rounded up to whole pages). [`Device::import_fd`] imports it;
    /// docs/api.md, "Sharing memory with CUDA and other processes", says what else does.
    ///
    /// ```
    /// let dev = tegragpu::Device::open("emu")?;
    /// let buf = dev.alloc_from(&[7u32; 1000])?;
    /// let (fd, size) = buf.export_fd()?;
    /// assert_eq!(size, 4096);
    /// let alias = dev.import_fd::<u32>(std::os::fd::AsFd::as_fd(&fd), 1000)?;
    /// assert_eq!(alias.to_vec()?, vec![7; 1000]);
    /// # Ok::<(), tegragpu::Error>(())
    /// ```
    pub fn export_fd(&self) -> Result<(std::os::fd::OwnedFd, u64)> {
        use std::os::fd::FromRawFd;
        let (fd, size) = self
            .shared
            .buf
            .export_fd()
            .map_err(|e| super::retag(e, "DeviceBuffer::export_fd"))?;
        // SAFETY: the fd is new and owned by the caller (tg_buf_export_fd's contract).
        Ok((unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) }, size))
    }

    /// A signal whose value is the 64-bit word at `byte_offset` of this buffer, for ordering
    /// GPU work with another driver or process that shares the memory
    /// (`tg_signal_create_in_buffer`): `byte_offset` is a multiple of 16, and a GPU release also
    /// writes its timestamp in the 8 bytes after the value. The memory is not written; the
    /// signal keeps it allocated.
    ///
    /// ```
    /// let dev = tegragpu::Device::open("emu")?;
    /// let buf = dev.alloc::<u64>(4)?;
    /// let s = buf.signal(16)?;
    /// s.set(5);
    /// assert_eq!(buf.to_vec()?, [0, 0, 5, 0]);
    /// # Ok::<(), tegragpu::Error>(())
    /// ```
    pub fn signal(&self, byte_offset: u64) -> Result<super::Signal> {
        core::Signal::in_buffer(self.shared.buf.clone(), byte_offset)
            .map(super::Signal::from_core)
            .map_err(|e| super::retag(e, "DeviceBuffer::signal"))
    }

    /// Wrap a buffer made outside [`DeviceBuffer::new`] (an import) as `len` elements.
    pub(crate) fn from_core(dev: &Device, buf: core::Buffer, len: usize) -> Self {
        DeviceBuffer {
            va: buf.gpu_va(),
            shared: Arc::new(Shared {
                buf: Arc::new(buf),
                state: Mutex::new(UseState {
                    uses: Vec::with_capacity(2),
                    ..Default::default()
                }),
            }),
            len,
            dev: dev.clone(),
            _t: PhantomData,
        }
    }

    /// The GPU address, as the bytes a kernel argument passes.
    pub(crate) fn va_ref(&self) -> &u64 {
        &self.va
    }

    /// The CPU address of the mapping, checked for `T`'s alignment.
    fn host_ptr(&self, call: &str) -> Result<*mut T> {
        let p = self
            .shared
            .buf
            .map_cpu()
            .map_err(|e| super::retag(e, call))?;
        if p.is_null() || (p as usize) % std::mem::align_of::<T>() != 0 {
            return Err(Error::new(
                Status::Internal,
                format!(
                    "{call}: the CPU mapping {p:p} is not aligned for {}",
                    std::any::type_name::<T>()
                ),
            ));
        }
        Ok(p as *mut T)
    }

    /// A shared host view of the elements, once the GPU work recorded so far that writes the
    /// buffer is done (waits for it, at most 10 s).
    ///
    /// Errors: the buffer is written by work recorded on a queue but not submitted
    /// (`InvalidArgument`: submit it first); the wait timed out (`Timeout`) or the device
    /// faulted (`DeviceFault`); the CPU mapping could not be made.
    ///
    /// ```
    /// let dev = tegragpu::Device::open("emu")?;
    /// let buf = dev.alloc_from(&[1.0f32, 2.0, 3.0])?;
    /// let view = buf.as_slice()?;
    /// assert_eq!(view.iter().sum::<f32>(), 6.0);
    /// # Ok::<(), tegragpu::Error>(())
    /// ```
    pub fn as_slice(&self) -> Result<HostSlice<'_, T>> {
        const CALL: &str = "DeviceBuffer::as_slice";
        let ptr = self.host_ptr(CALL)?;
        let (reg, fence) = self.shared.begin_host(false);
        wait_for_gpu(self.dev.core(), fence, CALL, self.va)?;
        Ok(HostSlice {
            // SAFETY: the mapping holds `len` aligned elements (host_ptr) for the buffer's
            // lifetime, which the view's borrow does not outlive; T is Pod (any bytes are a
            // valid T). No GPU work writes the memory while the view lives: the work recorded
            // before it was registered is done (waited for above), new launches and copies that
            // write the buffer need `&mut self`, and replays that write it are refused while
            // the view is registered.
            slice: unsafe { std::slice::from_raw_parts(ptr, self.len) },
            _reg: reg,
        })
    }

    /// A mutable host view of the elements, once every GPU access recorded so far is done
    /// (waits for it, at most 10 s). Errors as [`as_slice`](DeviceBuffer::as_slice).
    ///
    /// ```
    /// let dev = tegragpu::Device::open("emu")?;
    /// let mut buf = dev.alloc::<u32>(8)?;
    /// for (i, x) in buf.as_mut_slice()?.iter_mut().enumerate() {
    ///     *x = i as u32 * 2;
    /// }
    /// assert_eq!(buf.as_slice()?[7], 14);
    /// # Ok::<(), tegragpu::Error>(())
    /// ```
    pub fn as_mut_slice(&mut self) -> Result<HostSliceMut<'_, T>> {
        const CALL: &str = "DeviceBuffer::as_mut_slice";
        let ptr = self.host_ptr(CALL)?;
        let (reg, fence) = self.shared.begin_host(true);
        wait_for_gpu(self.dev.core(), fence, CALL, self.va)?;
        Ok(HostSliceMut {
            // SAFETY: as in `as_slice`, for every GPU access; `&mut self` excludes every other
            // host view, and replays that use the buffer are refused while this view is
            // registered.
            slice: unsafe { std::slice::from_raw_parts_mut(ptr, self.len) },
            _reg: reg,
        })
    }

    /// Copy `src` into the buffer (through the host mapping, after the GPU work that uses the
    /// buffer is done, as [`as_mut_slice`](DeviceBuffer::as_mut_slice)). `src` must have
    /// exactly [`len`](DeviceBuffer::len) elements.
    ///
    /// ```
    /// let dev = tegragpu::Device::open("emu")?;
    /// let mut buf = dev.alloc::<i16>(3)?;
    /// buf.copy_from_host(&[-1, 0, 1])?;
    /// let err = buf.copy_from_host(&[1, 2]).unwrap_err();
    /// assert_eq!(err.status, tegragpu::Status::InvalidArgument);
    /// # Ok::<(), tegragpu::Error>(())
    /// ```
    pub fn copy_from_host(&mut self, src: &[T]) -> Result<()> {
        if src.len() != self.len {
            return Err(Error::invalid(format!(
                "DeviceBuffer::copy_from_host: the source has {} elements, the buffer {}",
                src.len(),
                self.len
            )));
        }
        self.as_mut_slice()?.copy_from_slice(src);
        Ok(())
    }

    /// Copy the buffer into `dst` (after the GPU work that writes the buffer is done, as
    /// [`as_slice`](DeviceBuffer::as_slice)). `dst` must have exactly
    /// [`len`](DeviceBuffer::len) elements.
    ///
    /// ```
    /// let dev = tegragpu::Device::open("emu")?;
    /// let buf = dev.alloc_from(&[7u8, 8, 9])?;
    /// let mut out = [0u8; 3];
    /// buf.copy_to_host(&mut out)?;
    /// assert_eq!(out, [7, 8, 9]);
    /// # Ok::<(), tegragpu::Error>(())
    /// ```
    pub fn copy_to_host(&self, dst: &mut [T]) -> Result<()> {
        if dst.len() != self.len {
            return Err(Error::invalid(format!(
                "DeviceBuffer::copy_to_host: the destination has {} elements, the buffer {}",
                dst.len(),
                self.len
            )));
        }
        dst.copy_from_slice(&self.as_slice()?);
        Ok(())
    }

    /// The elements as a new `Vec` (after the GPU work that writes the buffer is done, as
    /// [`as_slice`](DeviceBuffer::as_slice)).
    ///
    /// ```
    /// let dev = tegragpu::Device::open("emu")?;
    /// assert_eq!(dev.alloc::<u16>(2)?.to_vec()?, [0, 0]);
    /// # Ok::<(), tegragpu::Error>(())
    /// ```
    pub fn to_vec(&self) -> Result<Vec<T>> {
        Ok(self.as_slice()?.to_vec())
    }
}

/// A shared host view of a [`DeviceBuffer`], from [`DeviceBuffer::as_slice`]: dereferences to
/// `[T]`. While it lives, command-buffer replays that write the buffer are refused.
///
/// ```
/// let dev = tegragpu::Device::open("emu")?;
/// let src = dev.alloc_from(&[1u32; 16])?;
/// let mut dst = dev.alloc::<u32>(16)?;
/// let mut cb = dev.cmdbuf()?;
/// cb.copy(&mut dst, &src)?; // the command buffer writes dst
/// cb.finish()?;
/// let mut queue = dev.queue()?;
/// let view = dst.as_slice()?;
/// assert!(queue.replay(&mut cb).is_err()); // it would write what `view` shows
/// drop(view);
/// queue.replay(&mut cb)?;
/// queue.synchronize()?;
/// assert_eq!(dst.as_slice()?.iter().sum::<u32>(), 16);
/// # Ok::<(), tegragpu::Error>(())
/// ```
pub struct HostSlice<'a, T> {
    slice: &'a [T],
    _reg: Registration<'a>,
}

impl<T> std::ops::Deref for HostSlice<'_, T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        self.slice
    }
}

impl<T: std::fmt::Debug> std::fmt::Debug for HostSlice<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.slice.fmt(f)
    }
}

/// A mutable host view of a [`DeviceBuffer`], from [`DeviceBuffer::as_mut_slice`]:
/// dereferences to `[T]`. While it lives, command-buffer replays that use the buffer are
/// refused.
pub struct HostSliceMut<'a, T> {
    slice: &'a mut [T],
    _reg: Registration<'a>,
}

impl<T> std::ops::Deref for HostSliceMut<'_, T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        self.slice
    }
}

impl<T> std::ops::DerefMut for HostSliceMut<'_, T> {
    fn deref_mut(&mut self) -> &mut [T] {
        self.slice
    }
}

impl<T: std::fmt::Debug> std::fmt::Debug for HostSliceMut<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.slice.fmt(f)
    }
}
