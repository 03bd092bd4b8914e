//! Command buffers: launches, copies, signals, waits and barriers recorded once, then replayed on
//! compute queues any number of times with one GPFIFO entry per replay (CUDA graphs, tinygrad's
//! HCQ graph).
//!
//! Recording collects the commands; [`CmdBuf::finish`] writes them once into GPU memory of the
//! command buffer's own: a pushbuffer, one QMD per launch and the launch's constant bank 0 (its
//! parameters). [`super::Queue::replay`] records, in the queue's own ring, only what the queue's
//! channel state needs (local memory, cache invalidation, serialization after a launch), then
//! pushes one GPFIFO entry that points at the command buffer's pushbuffer. The queue's next
//! submit closes it with the queue's timeline release and rings the doorbell once.
//!
//! Updates between replays ([`CmdBuf::set_params`], [`CmdBuf::set_value`]) write the command
//! buffer's memory in place. They first wait until every replay recorded so far has completed
//! (the GPU may be reading that memory), so a replay always runs with the values it was
//! recorded with; recorded-but-unsubmitted replays are submitted first by their queue's next
//! submit — call it before updating, or the update waits for the timeout.
//!
//! Lifetime: a command buffer holds the kernels, buffers (of its copies) and signals it uses;
//! its memory is released once every replay has completed. The addresses inside kernel
//! parameters are the caller's business, as with CUDA graphs: a buffer a replay's kernel
//! writes must stay allocated until that replay has completed (freeing it is safe: freed memory
//! is held until work recorded before the free completes).
//!
//! Recording and the command buffer's state are here; [`CmdBuf::finish`] and the image it
//! writes are in `image`, the updates between replays in `update`, the replay in `replay`.

use super::device::Device;
use super::module::Kernel;
use super::queue::{check_launch, wait_fence, Fence, LaunchConfig};
use super::signal::Signal;
use super::Buffer;
use crate::backend::Allocation;
use crate::error::{Error, Result, Status};
use std::sync::Arc;

mod image;
mod replay;
mod update;

/// One recorded command.
#[derive(Clone)]
enum Node {
    Launch {
        kernel: Kernel,
        cfg: LaunchConfig,
        params: Vec<u8>,
    },
    Signal {
        signal: Arc<Signal>,
        value: u64,
    },
    Wait {
        signal: Arc<Signal>,
        value: u64,
    },
    Barrier,
}

/// What of a node can be updated after `finish`, and where it lives (CPU pointers into the
/// command buffer's memory).
#[derive(Clone, Copy)]
enum Patch {
    /// The parameter block inside the launch's constant bank 0.
    Params {
        cpu: *mut u8,
        len: usize,
    },
    /// PAYLOAD_LO, PAYLOAD_HI of a semaphore method run.
    Payload {
        cpu: *mut u32,
    },
    None,
}

/// The finished image in GPU memory.
struct Image {
    alloc: Allocation,
    dwords: u32,
    ends_with_launch: bool,
    /// It holds a cooperative launch, whose grid barrier serves one replay at a time.
    cooperative: bool,
    /// It releases signals (each replay notes the release on them, see `Signal::wait`).
    signals: bool,
    patches: Vec<Patch>,
    /// Per node: where a launch's QMD and constant bank 0 are and how it is chained, for
    /// [`CmdBuf::set_launch`] (None for other nodes).
    launches: Vec<Option<LaunchMeta>>,
}

/// A launch node in the image.
#[derive(Clone)]
struct LaunchMeta {
    /// Offsets of its QMD and constant bank 0 in the allocation; the bank's size.
    qmd_off: u64,
    cb_off: u64,
    cb_size: u64,
    /// Chained to the launch before it with that one prefetching its bank 0 (so its own QMD
    /// does not invalidate bank 0).
    prefetched: bool,
    /// The launch chained to this one: (node, with prefetches).
    succ: Option<(usize, bool)>,
    /// Its QMD as built, before a successor was chained to it.
    words: [u32; 96],
    /// A cooperative launch's grid workspace (GPU address), its own in the allocation.
    ws: Option<u64>,
}

/// What the kind of a node is, for messages.
fn node_kind(n: &Node) -> &'static str {
    match n {
        Node::Launch { .. } => "a launch",
        Node::Signal { .. } => "a signal",
        Node::Wait { .. } => "a wait",
        Node::Barrier => "a barrier",
    }
}

/// A command buffer (see the module documentation).
pub struct CmdBuf {
    dev: Device,
    nodes: Vec<Node>,
    image: Option<Image>,
    /// Buffers the recorded copies use: held for the command buffer's lifetime.
    held: Vec<Arc<Buffer>>,
    copy_kernel: Option<Kernel>,
    /// Where the replays recorded so far complete: per queue, the highest timeline value.
    inflight: Fence,
    timeout_ns: u64,
}

// SAFETY: the raw pointers in `Patch` point into `image.alloc`, owned by this command buffer and
// only written through `&mut self`.
unsafe impl Send for CmdBuf {}
// SAFETY: as above; shared references never write through them.
unsafe impl Sync for CmdBuf {}

impl std::fmt::Debug for CmdBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CmdBuf")
            .field("nodes", &self.nodes.len())
            .field("finished", &self.image.is_some())
            .finish()
    }
}

impl CmdBuf {
    pub(crate) fn new(dev: &Device) -> Result<CmdBuf> {
        dev.check_usable()?;
        Ok(CmdBuf {
            dev: dev.clone(),
            nodes: Vec::new(),
            image: None,
            held: Vec::new(),
            copy_kernel: None,
            inflight: Vec::new(),
            timeout_ns: super::DEFAULT_TIMEOUT_NS,
        })
    }

    /// Number of recorded commands (node indexes run from 0).
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// Whether [`CmdBuf::finish`] was called.
    pub fn is_finished(&self) -> bool {
        self.image.is_some()
    }

    /// How long updates and destruction wait for replays in flight (default 10 s).
    pub fn set_timeout_ns(&mut self, timeout_ns: u64) {
        self.timeout_ns = timeout_ns;
    }

    fn recording(&self, call: &str) -> Result<()> {
        if self.image.is_some() {
            return Err(Error::invalid(format!(
                "{call}: the command buffer is finished; record into a new one"
            )));
        }
        self.dev.check_usable()
    }

    fn push(&mut self, n: Node) -> usize {
        self.nodes.push(n);
        self.nodes.len() - 1
    }

    /// Record a kernel launch with its packed parameter block; returns the node index.
    pub fn launch(&mut self, kernel: &Kernel, cfg: &LaunchConfig, params: &[u8]) -> Result<usize> {
        self.recording("tg_cmdbuf_launch")?;
        let a = kernel.attributes();
        if params.len() != a.param_bytes as usize {
            return Err(Error::new(
                Status::InvalidLaunch,
                format!(
                    "tg_cmdbuf_launch: kernel \"{}\" takes {} bytes of parameters, got {}",
                    a.name,
                    a.param_bytes,
                    params.len()
                ),
            ));
        }
        check_launch(&self.dev, kernel, cfg)
            .map_err(|e| rename(e, "tg_launch", "tg_cmdbuf_launch"))?;
        Ok(self.push(Node::Launch {
            kernel: kernel.clone(),
            cfg: *cfg,
            params: params.to_vec(),
        }))
    }

    /// Record a copy of `size_bytes` from `src` at `src_offset` to `dst` at `dst_offset` (the
    /// built-in copy kernel on the SMs, as on a compute queue); returns the node index. The
    /// command buffer holds both buffers. Either may belong to another device that this
    /// device has peer access to ([`crate::core::Device::enable_peer_access`]): the copy runs
    /// on this device's SMs over the peer link.
    pub fn copy(
        &mut self,
        dst: &Arc<Buffer>,
        dst_offset: u64,
        src: &Arc<Buffer>,
        src_offset: u64,
        size_bytes: u64,
    ) -> Result<usize> {
        self.recording("tg_cmdbuf_copy")?;
        if !self.dev.is(dst.device()) || !self.dev.is(src.device()) {
            self.dev.check_buffer_access(dst, "tg_cmdbuf_copy", "dst")?;
            self.dev.check_buffer_access(src, "tg_cmdbuf_copy", "src")?;
        }
        dst.check_range("tg_cmdbuf_copy: dst", dst_offset, size_bytes)?;
        src.check_range("tg_cmdbuf_copy: src", src_offset, size_bytes)?;
        if size_bytes == 0 {
            return Err(Error::invalid("tg_cmdbuf_copy: size_bytes is 0"));
        }
        let (d, s) = (dst.gpu_va() + dst_offset, src.gpu_va() + src_offset);
        if d < s + size_bytes && s < d + size_bytes {
            return Err(Error::invalid(format!(
                "tg_cmdbuf_copy: dst [{d:#x}, +{size_bytes}) and src [{s:#x}, +{size_bytes}) overlap"
            )));
        }
        let kernel = match &self.copy_kernel {
            Some(k) => k.clone(),
            None => {
                let info = self.dev.info();
                let cubin =
                    crate::builtin::copy_cubin(info.sm_major, info.sm_minor).ok_or_else(|| {
                        Error::new(
                            Status::NotSupported,
                            format!(
                                "tg_cmdbuf_copy: no built-in copy kernel for sm_{}{}",
                                info.sm_major, info.sm_minor
                            ),
                        )
                    })?;
                let m = self.dev.load_module(cubin)?;
                let k = m.kernel(crate::builtin::COPY_KERNEL)?;
                self.copy_kernel = Some(k.clone());
                k
            }
        };
        let mut params = [0u8; 24];
        params[0..8].copy_from_slice(&d.to_le_bytes());
        params[8..16].copy_from_slice(&s.to_le_bytes());
        params[16..24].copy_from_slice(&size_bytes.to_le_bytes());
        let cfg = LaunchConfig {
            grid: [crate::builtin::copy_grid(size_bytes), 1, 1],
            block: [crate::builtin::COPY_BLOCK, 1, 1],
            dynamic_shared_bytes: 0,
            cooperative: false,
            concurrent: false,
            cluster: [0; 3],
        };
        self.held.push(dst.clone());
        self.held.push(src.clone());
        Ok(self.push(Node::Launch {
            kernel,
            cfg,
            params: params.to_vec(),
        }))
    }

    /// Record a GPU write of `value` (and a timestamp) to `signal` once the earlier commands are
    /// complete; returns the node index ([`CmdBuf::set_value`] changes the value).
    pub fn signal(&mut self, signal: &Arc<Signal>, value: u64) -> Result<usize> {
        self.recording("tg_cmdbuf_signal")?;
        self.same_device(signal.device(), "tg_cmdbuf_signal")?;
        Ok(self.push(Node::Signal {
            signal: signal.clone(),
            value,
        }))
    }

    /// Record a GPU wait until `signal` ≥ `value` (unsigned) before later commands start;
    /// returns the node index. `signal` may belong to another device that this device has peer
    /// access to, as for [`crate::core::Queue::wait`].
    pub fn wait(&mut self, signal: &Arc<Signal>, value: u64) -> Result<usize> {
        self.recording("tg_cmdbuf_wait")?;
        if !self.dev.is(signal.device()) {
            self.dev.check_signal_access(signal, "tg_cmdbuf_wait")?;
        }
        Ok(self.push(Node::Wait {
            signal: signal.clone(),
            value,
        }))
    }

    /// Record a full barrier (earlier commands complete, their writes visible); returns the node
    /// index.
    pub fn barrier(&mut self) -> Result<usize> {
        self.recording("tg_cmdbuf_barrier")?;
        Ok(self.push(Node::Barrier))
    }

    fn same_device(&self, d: &Device, call: &str) -> Result<()> {
        if Arc::ptr_eq(&d.inner, &self.dev.inner) {
            Ok(())
        } else {
            Err(Error::invalid(format!(
                "{call}: the signal belongs to another device"
            )))
        }
    }

    /// Wait until every replay recorded so far has completed (at most the timeout per queue).
    pub fn wait_replays(&self, call: &str) -> Result<()> {
        wait_fence(&self.dev, &self.inflight, self.timeout_ns, call)
    }

    fn finished(&self, call: &str) -> Result<&Image> {
        self.image.as_ref().ok_or_else(|| {
            Error::invalid(format!(
                "{call}: the command buffer is not finished (tg_cmdbuf_finish)"
            ))
        })
    }

    fn node(&self, index: usize, call: &str) -> Result<&Node> {
        self.nodes.get(index).ok_or_else(|| {
            Error::invalid(format!(
                "{call}: node {index} does not exist (the command buffer has {} nodes)",
                self.nodes.len()
            ))
        })
    }

    /// The device this command buffer records for.
    pub fn device(&self) -> &Device {
        &self.dev
    }
}

fn rename(mut e: Error, from: &str, to: &str) -> Error {
    if let Some(rest) = e.message.strip_prefix(from) {
        e.message = format!("{to}{rest}");
    }
    e
}

impl Drop for CmdBuf {
    fn drop(&mut self) {
        if let Some(img) = self.image.take() {
            // Released once the replays recorded so far have completed (the device's fence:
            // every queue's recorded work, which includes them).
            self.dev.free_when_idle(img.alloc);
        }
    }
}
