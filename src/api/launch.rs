//! Typed kernel arguments and the launch builder.

use super::buffer::{Access, Shared};
use super::{retag, same_device, CmdBuf, DeviceBuffer, Kernel, Queue};
use crate::core::LaunchConfig;
use crate::error::{Error, Result, Status};
use bytemuck::Pod;
use std::mem::MaybeUninit;
use std::sync::Arc;

/// A value a kernel parameter can take: its bytes, exactly as the kernel reads them.
///
/// Implemented for every [`bytemuck::Pod`] type (integers, floats, arrays of them, and
/// `#[repr(C)]` structs that derive `Pod`: pass the struct a kernel takes by value), and for
/// [`DeviceBuffer`], which passes its GPU address (a kernel's pointer parameter).
///
/// [`Launch::arg`] checks the value against the kernel's parameter: the same size, and an
/// offset in the parameter block that suits the value's alignment. Rust's types have the
/// sizes and alignments of the CUDA C types of the same width (`f32` = `float`,
/// `u64` = `unsigned long long`, `[f32; 4]` or a `#[repr(C, align(16))]` struct = `float4`).
///
/// ```
/// use bytemuck::{Pod, Zeroable};
/// use tegragpu::DeviceRepr;
///
/// // struct Big { unsigned v[64]; } passed by value
/// #[repr(C)]
/// #[derive(Clone, Copy, Pod, Zeroable)]
/// struct Big {
///     v: [u32; 64],
/// }
/// let b = Big { v: [7; 64] };
/// assert_eq!(b.param_bytes().len(), 256);
/// assert_eq!(1.5f32.param_bytes(), 1.5f32.to_le_bytes());
/// ```
pub trait DeviceRepr {
    /// The bytes the parameter receives; their length is the parameter's size.
    fn param_bytes(&self) -> &[u8];

    /// The alignment the parameter's offset in the parameter block must have.
    fn param_align(&self) -> usize;

    /// The buffer this argument passes, if any (its GPU work is tracked for host access).
    #[doc(hidden)]
    fn param_buffer(&self) -> Option<BufferArg<'_>> {
        None
    }
}

/// What [`DeviceRepr::param_buffer`] returns: a buffer whose use a launch records.
#[doc(hidden)]
pub struct BufferArg<'a>(pub(crate) &'a Arc<Shared>);

impl<T: Pod> DeviceRepr for T {
    fn param_bytes(&self) -> &[u8] {
        bytemuck::bytes_of(self)
    }
    fn param_align(&self) -> usize {
        std::mem::align_of::<T>()
    }
}

impl<T: Pod> DeviceRepr for DeviceBuffer<T> {
    fn param_bytes(&self) -> &[u8] {
        bytemuck::bytes_of(self.va_ref())
    }
    fn param_align(&self) -> usize {
        std::mem::align_of::<u64>()
    }
    fn param_buffer(&self) -> Option<BufferArg<'_>> {
        Some(BufferArg(&self.shared))
    }
}

/// Grid, block or cluster dimensions: from `u32` (`x`), `(x, y)`, `(x, y, z)` or `[x, y, z]`.
///
/// ```
/// use tegragpu::Dim3;
/// assert_eq!(Dim3::from(64), Dim3 { x: 64, y: 1, z: 1 });
/// assert_eq!(Dim3::from((16, 16)), Dim3 { x: 16, y: 16, z: 1 });
/// assert_eq!(Dim3::from([2, 3, 4]).count(), 24);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Dim3 {
    /// Extent in x.
    pub x: u32,
    /// Extent in y.
    pub y: u32,
    /// Extent in z.
    pub z: u32,
}

impl Dim3 {
    /// `x * y * z`.
    pub fn count(&self) -> u64 {
        u64::from(self.x) * u64::from(self.y) * u64::from(self.z)
    }
}

impl From<u32> for Dim3 {
    fn from(x: u32) -> Dim3 {
        Dim3 { x, y: 1, z: 1 }
    }
}
impl From<(u32, u32)> for Dim3 {
    fn from((x, y): (u32, u32)) -> Dim3 {
        Dim3 { x, y, z: 1 }
    }
}
impl From<(u32, u32, u32)> for Dim3 {
    fn from((x, y, z): (u32, u32, u32)) -> Dim3 {
        Dim3 { x, y, z }
    }
}
impl From<[u32; 3]> for Dim3 {
    fn from([x, y, z]: [u32; 3]) -> Dim3 {
        Dim3 { x, y, z }
    }
}
impl From<Dim3> for [u32; 3] {
    fn from(d: Dim3) -> [u32; 3] {
        [d.x, d.y, d.z]
    }
}

/// Parameter blocks up to this size live inside the builder (no heap allocation).
const INLINE_PARAMS: usize = 4096;
/// Buffer arguments up to this count are noted without a heap allocation.
const INLINE_BUFFERS: usize = 16;

/// A parameter block: inside the builder up to `INLINE_PARAMS` bytes, on the heap beyond.
/// Only the block's own bytes of `inline` are initialized (zeroed), not all 4 KiB.
struct Params {
    inline: [MaybeUninit<u8>; INLINE_PARAMS],
    len: usize,
    /// The block when it is larger than `inline` (else empty, which allocates nothing).
    heap: Vec<u8>,
}

impl Params {
    fn new(len: usize) -> Params {
        let mut p = Params {
            inline: [MaybeUninit::uninit(); INLINE_PARAMS],
            len,
            heap: Vec::new(),
        };
        if len > INLINE_PARAMS {
            p.heap = vec![0; len];
        } else {
            for b in &mut p.inline[..len] {
                b.write(0);
            }
        }
        p
    }
    fn bytes(&self) -> &[u8] {
        if self.len > INLINE_PARAMS {
            &self.heap
        } else {
            // SAFETY: `new` initialized inline[..len].
            unsafe { std::slice::from_raw_parts(self.inline.as_ptr().cast::<u8>(), self.len) }
        }
    }
    fn bytes_mut(&mut self) -> &mut [u8] {
        if self.len > INLINE_PARAMS {
            &mut self.heap
        } else {
            // SAFETY: `new` initialized inline[..len].
            unsafe {
                std::slice::from_raw_parts_mut(self.inline.as_mut_ptr().cast::<u8>(), self.len)
            }
        }
    }
}

/// The buffers a launch passes, and how.
pub(crate) struct BufferList {
    inline: [Option<(Arc<Shared>, Access)>; INLINE_BUFFERS],
    n: usize,
    more: Vec<(Arc<Shared>, Access)>,
}

impl BufferList {
    fn new() -> BufferList {
        BufferList {
            inline: Default::default(),
            n: 0,
            more: Vec::new(),
        }
    }
    fn push(&mut self, s: &Arc<Shared>, a: Access) {
        if self.n < INLINE_BUFFERS {
            self.inline[self.n] = Some((s.clone(), a));
            self.n += 1;
        } else {
            self.more.push((s.clone(), a));
        }
    }
    pub(crate) fn iter(&self) -> impl Iterator<Item = &(Arc<Shared>, Access)> {
        self.inline[..self.n]
            .iter()
            .flatten()
            .chain(self.more.iter())
    }
}

/// A type name without module paths: `DeviceBuffer<f32>`, not `tegragpu::api::...`.
fn short_type_name<T: ?Sized>() -> String {
    let full = std::any::type_name::<T>();
    let mut out = String::with_capacity(full.len());
    let mut word = String::new();
    for c in full.chars().chain(std::iter::once('\0')) {
        if c.is_alphanumeric() || c == '_' || c == ':' {
            word.push(c);
        } else {
            out.push_str(word.rsplit("::").next().unwrap_or(&word));
            word.clear();
            if c != '\0' {
                out.push(c);
            }
        }
    }
    out
}

/// A kernel launch being described: grid, block, shared memory, flags and typed arguments,
/// each argument checked against the kernel's parameters as it is given. Made by
/// [`Queue::launch`] (recording returns `()`) and by [`CmdBuf::launch`] /
/// [`CmdBuf::update`] (recording returns the command buffer's node index).
///
/// Defaults: a grid and a block of one thread, no dynamic shared memory, no flags. The setters
/// return the builder, so a launch reads as one expression:
///
/// ```
/// let dev = tegragpu::Device::open("emu")?;
/// let module = dev.load_module(include_bytes!("../../tests/fixtures/cubin/kernels.sm_87.cubin"))?;
/// let vector_add = module.kernel("vector_add")?;
/// let n = 1000usize;
/// let a = dev.alloc_from(&vec![1.0f32; n])?;
/// let b = dev.alloc_from(&vec![2.0f32; n])?;
/// let mut c = dev.alloc::<f32>(n)?;
/// let mut queue = dev.queue()?;
/// // SAFETY: vector_add(a, b, c, n) reads a[0..n] and b[0..n] and writes c[0..n] only.
/// unsafe {
///     queue
///         .launch(&vector_add)
///         .grid((n as u32).div_ceil(256))
///         .block(256)
///         .arg(&a)
///         .arg(&b)
///         .arg_mut(&mut c)
///         .arg(&(n as u32))
///         .record()?;
/// }
/// queue.synchronize()?;
/// assert!(c.as_slice()?.iter().all(|&x| x == 3.0));
/// # Ok::<(), tegragpu::Error>(())
/// ```
///
/// A mistake is reported by `record`, naming the kernel, the parameter and the sizes:
///
/// ```
/// # let dev = tegragpu::Device::open("emu")?;
/// # let module = dev.load_module(include_bytes!("../../tests/fixtures/cubin/kernels.sm_87.cubin"))?;
/// # let vector_add = module.kernel("vector_add")?;
/// # let (a, b) = (dev.alloc::<f32>(4)?, dev.alloc::<f32>(4)?);
/// # let mut c = dev.alloc::<f32>(4)?;
/// # let mut queue = dev.queue()?;
/// let n: u64 = 4; // the kernel's n is a 4-byte unsigned
/// let err = unsafe {
///     queue.launch(&vector_add).arg(&a).arg(&b).arg_mut(&mut c).arg(&n).record()
/// }
/// .unwrap_err();
/// assert_eq!(err.status, tegragpu::Status::InvalidLaunch);
/// assert_eq!(
///     err.message,
///     "Launch::arg: kernel \"vector_add\", parameter 3 (offset 24) is 4 bytes; \
///      argument 3 (u64) is 8 bytes"
/// );
/// # Ok::<(), tegragpu::Error>(())
/// ```
pub struct Launch<'a, R> {
    target: &'a mut R,
    kernel: &'a Kernel,
    /// `CmdBuf::update`: the node whose launch is replaced.
    node: Option<usize>,
    cfg: LaunchConfig,
    params: Params,
    given: usize,
    error: Option<Error>,
    buffers: BufferList,
}

impl<R> std::fmt::Debug for Launch<'_, R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Launch")
            .field("kernel", &self.kernel.name())
            .field("config", &self.cfg)
            .field("args_given", &self.given)
            .field("error", &self.error)
            .finish()
    }
}

/// The configuration of a launch nobody configured: one block of one thread.
pub(crate) const DEFAULT_CONFIG: LaunchConfig = LaunchConfig {
    grid: [1, 1, 1],
    block: [1, 1, 1],
    dynamic_shared_bytes: 0,
    cooperative: false,
    concurrent: false,
    cluster: [0; 3],
};

impl<'a, R> Launch<'a, R> {
    pub(crate) fn new(
        target: &'a mut R,
        kernel: &'a Kernel,
        node: Option<usize>,
        cfg: LaunchConfig,
        error: Option<Error>,
    ) -> Self {
        Launch {
            target,
            kernel,
            node,
            cfg,
            params: Params::new(kernel.inner.attributes().param_bytes as usize),
            given: 0,
            error,
            buffers: BufferList::new(),
        }
    }

    /// The grid: blocks in x, y and z (each at least 1).
    pub fn grid(&mut self, grid: impl Into<Dim3>) -> &mut Self {
        self.cfg.grid = grid.into().into();
        self
    }

    /// The block: threads in x, y and z (at most the kernel's
    /// [`max_threads_per_block`](crate::KernelAttributes::max_threads_per_block) in all).
    pub fn block(&mut self, block: impl Into<Dim3>) -> &mut Self {
        self.cfg.block = block.into().into();
        self
    }

    /// Dynamic shared memory per block, bytes (`extern __shared__` arrays), at most the
    /// kernel's [`max_dynamic_shared_bytes`](crate::KernelAttributes::max_dynamic_shared_bytes).
    pub fn shared_mem(&mut self, bytes: u32) -> &mut Self {
        self.cfg.dynamic_shared_bytes = bytes;
        self
    }

    /// Cooperative launch: every block resident at once, so that the grid can synchronize
    /// (`cooperative_groups::this_grid().sync()`).
    pub fn cooperative(&mut self, on: bool) -> &mut Self {
        self.cfg.cooperative = on;
        self
    }

    /// Let the launch run concurrently with the launch recorded just before it on the same
    /// queue: for kernels that neither read nor write what those launches write.
    pub fn concurrent(&mut self, on: bool) -> &mut Self {
        self.cfg.concurrent = on;
        self
    }

    /// Thread-block cluster shape (sm_90 and later).
    pub fn cluster(&mut self, cluster: impl Into<Dim3>) -> &mut Self {
        self.cfg.cluster = cluster.into().into();
        self
    }

    /// Grid, block, shared memory, flags and cluster at once.
    pub fn config(&mut self, cfg: LaunchConfig) -> &mut Self {
        self.cfg = cfg;
        self
    }

    /// The configuration so far.
    pub fn launch_config(&self) -> &LaunchConfig {
        &self.cfg
    }

    /// The next parameter's value: a [`Pod`] value (its bytes) or a buffer the kernel only
    /// reads (its GPU address). Checked against the kernel's parameter: too many arguments, a
    /// size that differs from the parameter's, or an offset the value's alignment does not
    /// allow make [`record`](Launch::record) fail with `InvalidLaunch`, naming the kernel, the
    /// parameter and both sizes.
    pub fn arg<A: DeviceRepr + ?Sized>(&mut self, value: &A) -> &mut Self {
        self.push(value, Access::Read, &short_type_name::<A>)
    }

    /// The next parameter's value: a buffer the kernel may write (its GPU address). The
    /// buffer is borrowed mutably, so no host view of it can be alive while the launch is
    /// recorded; a host view taken afterwards waits for the launch to finish.
    pub fn arg_mut<T: Pod>(&mut self, buffer: &mut DeviceBuffer<T>) -> &mut Self {
        self.push(&*buffer, Access::Write, &short_type_name::<DeviceBuffer<T>>)
    }

    fn push<A: DeviceRepr + ?Sized>(
        &mut self,
        value: &A,
        access: Access,
        type_name: &dyn Fn() -> String,
    ) -> &mut Self {
        let i = self.given;
        self.given += 1;
        if self.error.is_some() {
            return self;
        }
        let attrs = self.kernel.inner.attributes();
        let Some(p) = attrs.params.get(i) else {
            self.error = Some(Error::new(
                Status::InvalidLaunch,
                format!(
                    "Launch::arg: kernel \"{}\" has {} parameters; argument {i} ({}) is one too many",
                    attrs.name,
                    attrs.params.len(),
                    type_name()
                ),
            ));
            return self;
        };
        let bytes = value.param_bytes();
        let align = value.param_align().max(1);
        if bytes.len() != p.size as usize {
            self.error = Some(Error::new(
                Status::InvalidLaunch,
                format!(
                    "Launch::arg: kernel \"{}\", parameter {i} (offset {}) is {} bytes; argument {i} ({}) is {} bytes",
                    attrs.name,
                    p.offset,
                    p.size,
                    type_name(),
                    bytes.len()
                ),
            ));
            return self;
        }
        if p.offset as usize % align != 0 {
            self.error = Some(Error::new(
                Status::InvalidLaunch,
                format!(
                    "Launch::arg: kernel \"{}\", parameter {i} is at offset {}, which is not a multiple of \
                     the {align}-byte alignment of argument {i} ({}): the parameter has another type",
                    attrs.name,
                    p.offset,
                    type_name()
                ),
            ));
            return self;
        }
        let o = p.offset as usize;
        match self.params.bytes_mut().get_mut(o..o + bytes.len()) {
            Some(dst) => dst.copy_from_slice(bytes),
            None => {
                self.error = Some(Error::new(
                    Status::Internal,
                    format!(
                        "Launch::arg: kernel \"{}\", parameter {i} [{o}, +{}) lies outside its {}-byte parameter block",
                        attrs.name,
                        bytes.len(),
                        attrs.param_bytes
                    ),
                ));
                return self;
            }
        }
        if let Some(b) = value.param_buffer() {
            if !same_device(b.0.buf.device(), self.kernel.inner.device()) {
                self.error = Some(Error::invalid(format!(
                    "Launch::arg: kernel \"{}\", argument {i} ({}) is a buffer of another device ({}) than the kernel's ({})",
                    attrs.name,
                    type_name(),
                    b.0.buf.device().info().name,
                    self.kernel.inner.device().info().name
                )));
                return self;
            }
            self.buffers.push(b.0, access);
        }
        self
    }

    /// Whether every argument was given and accepted.
    fn check_args(&self) -> Result<()> {
        if let Some(e) = &self.error {
            return Err(e.clone());
        }
        let attrs = self.kernel.inner.attributes();
        if self.given != attrs.params.len() {
            return Err(Error::new(
                Status::InvalidLaunch,
                format!(
                    "Launch::record: kernel \"{}\" has {} parameters, {} arguments were given",
                    attrs.name,
                    attrs.params.len(),
                    self.given
                ),
            ));
        }
        Ok(())
    }
}

impl Launch<'_, Queue> {
    /// Record the launch on the queue (it runs once the queue is submitted). The builder may
    /// record again: the same launch, once more.
    ///
    /// Errors: an argument was refused or missing (`InvalidLaunch`, see
    /// [`arg`](Launch::arg)); the configuration does not fit the kernel or the device
    /// (`InvalidLaunch`: block size, shared memory, cluster); a copy queue (`InvalidArgument`);
    /// a faulted device (`DeviceFault`).
    ///
    /// # Safety
    ///
    /// The library checks the arguments' sizes against the kernel's parameters, not what the
    /// kernel does with them. The caller guarantees that the kernel, run with these arguments
    /// and this configuration:
    /// - accesses only memory it was given (the buffers passed, within their lengths, and
    ///   memory reachable through them that stays allocated until the launch completes);
    /// - writes no buffer passed with [`arg`](Launch::arg) (only those passed with
    ///   [`arg_mut`](Launch::arg_mut)), and no memory the host is using;
    /// - finishes (a kernel that never ends keeps its queue busy until the queue is aborted).
    ///
    /// Under these rules host views ([`DeviceBuffer::as_slice`]) never see memory the GPU is
    /// writing.
    pub unsafe fn record(&mut self) -> Result<()> {
        self.check_args()?;
        let params = self.params.bytes();
        let q = self.target.core_mut();
        super::check_device(
            q.device(),
            self.kernel.inner.device(),
            "Launch::record",
            "the kernel",
        )?;
        q.launch(&self.kernel.inner, &self.cfg, params)
            .map_err(|e| retag(e, "Launch::record"))?;
        let track = q.track();
        let value = track.holds_until();
        for (s, a) in self.buffers.iter() {
            s.note(track, *a, value);
        }
        Ok(())
    }
}

impl Launch<'_, CmdBuf> {
    /// Record the launch into the command buffer and return its node index; or, for a builder
    /// from [`CmdBuf::update`], replace that node's arguments (and configuration, when it
    /// changed) for later replays and return the node index.
    ///
    /// Errors: as for a queue's [`record`](Launch::record); recording into a finished command
    /// buffer, or updating one that is not finished or a node that is not a launch of this
    /// kernel (`InvalidArgument`).
    ///
    /// # Safety
    ///
    /// As for a queue's [`record`](Launch::record), for every replay of the command buffer:
    /// the command buffer keeps the buffers passed allocated, and each replay checks that no
    /// host view of them conflicts.
    pub unsafe fn record(&mut self) -> Result<usize> {
        self.check_args()?;
        let params = self.params.bytes();
        let node = match self.node {
            None => self.target.record_launch(self.kernel, &self.cfg, params)?,
            Some(node) => {
                self.target
                    .update_launch(node, self.kernel, &self.cfg, params)?;
                node
            }
        };
        self.target.hold(&self.buffers);
        Ok(node)
    }
}
