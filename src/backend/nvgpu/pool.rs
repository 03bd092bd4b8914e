//! The device's channels, made when the device opens and handed out to queues.
//!
//! Every queue of a device is a channel of the device's one TSG, and nvgpu disables and
//! preempts the **whole TSG** both when a channel gets its engine object (ALLOC_OBJ_CTX:
//! `common/gr/gr_setup.c:nvgpu_gr_setup_alloc_obj_ctx`) and when a channel closes (the unbind:
//! `common/fifo/tsg.c:nvgpu_tsg_unbind_channel` → `nvgpu_tsg_unbind_channel_common`). Unless
//! the context was set up for CILP, ga10b preempts compute by waiting for the running grids to
//! finish, for at most 100 ms (`common/fifo/preempt.c:nvgpu_fifo_preempt_tsg`); a preempt that
//! times out fails the call, and a failed unbind ends in `nvgpu_tsg_abort()`, which kills every
//! channel of the TSG. Creating or destroying a queue while another queue of the device runs a
//! kernel longer than that would therefore break the device.
//!
//! So, as CUDA does on the board (it opens its channels when the context is made), the device
//! makes a set of channels at open ([`DEFAULT_COMPUTE`] compute and [`DEFAULT_COPY`] copy ones,
//! `TEGRAGPU_NVGPU_CHANNELS=compute,copy` to change it), and queues take them from this pool and
//! give them back when they are destroyed: no ioctl, no preempt. A queue that is aborted, or
//! whose channel reported an error, closes its channel instead. When the pool of a kind is
//! empty a new channel is made only while nothing runs on the device; otherwise creation is
//! refused with a message that says so (see [`Pool::take`]). At most [`TSG_MAX_CHANNELS`]
//! channels exist per device.
//!
//! Compute channels ask for CILP where the driver offers it (`NVGPU_ALLOC_OBJ_FLAGS_CILP`), as
//! CUDA does, so that the GPU can switch a long kernel out for another context instead of
//! running into the context-switch timeout. Nothing here relies on it: instruction-level
//! preemption saves a running warp through the SM's trap handler, which this library does not
//! install, and on the desktop driver a CILP request did not get a spinning kernel switched out
//! (docs/api.md, "A kernel that does not end") [inferred for the Orin: not measured on a board].

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use super::channel::NvgpuChannel;
use super::Device;
use crate::backend::{Channel, ChannelError, ChannelRaw, Engine};
use crate::error::{Error, Result, Status};

/// Channels one TSG holds: `common/fifo/tsg.c:nvgpu_tsg_bind_channel` refuses the 129th with
/// EINVAL (`ram_rl_entry_tsg_length_max_v()` = 0x80 on ga10b).
pub const TSG_MAX_CHANNELS: u32 = 128;
/// Compute channels made at device open.
pub const DEFAULT_COMPUTE: u32 = 4;
/// Copy channels made at device open.
pub const DEFAULT_COPY: u32 = 2;
/// GPFIFO entries of every pooled channel: the largest queue depth, so that any queue can take
/// any channel (512 KiB of ring each).
pub const POOL_ENTRIES: u32 = 65536;
/// The environment variable that sets how many channels the device makes at open.
pub const CHANNELS_ENV: &str = "TEGRAGPU_NVGPU_CHANNELS";

/// How many compute and copy channels to make at open: `TEGRAGPU_NVGPU_CHANNELS=C,K`, else the
/// defaults; an unreadable value is an error naming it.
pub fn configured_counts() -> Result<(u32, u32)> {
    let Ok(v) = std::env::var(CHANNELS_ENV) else {
        return Ok((DEFAULT_COMPUTE, DEFAULT_COPY));
    };
    let parsed = v
        .split_once(',')
        .and_then(|(c, k)| Some((c.trim().parse::<u32>().ok()?, k.trim().parse::<u32>().ok()?)));
    match parsed {
        Some((c, k)) if c + k <= TSG_MAX_CHANNELS => Ok((c, k)),
        _ => Err(Error::invalid(format!(
            "{CHANNELS_ENV}={v:?}: expected COMPUTE,COPY (two counts, together at most {TSG_MAX_CHANNELS}), e.g. \"{DEFAULT_COMPUTE},{DEFAULT_COPY}\""
        ))),
    }
}

/// Free channels by engine, and how many channels of the device exist.
pub(crate) struct Pool {
    free: Mutex<[Vec<NvgpuChannel>; 2]>,
    live: AtomicU32,
    /// The device's compute channels were set up asking for CILP (module documentation).
    pub cilp: bool,
    /// Each channel's context-switch timeout limit (ms).
    pub ctxsw_timeout_ms: u32,
}

fn slot(engine: Engine) -> usize {
    match engine {
        Engine::Compute => 0,
        Engine::Copy => 1,
    }
}

impl Pool {
    pub(crate) fn new(cilp: bool, ctxsw_timeout_ms: u32) -> Pool {
        Pool {
            free: Mutex::new([Vec::new(), Vec::new()]),
            live: AtomicU32::new(0),
            cilp,
            ctxsw_timeout_ms,
        }
    }

    /// Make `n` channels of `engine` for the pool (at device open).
    pub(crate) fn fill(&self, dev: &Arc<Device>, engine: Engine, n: u32) -> Result<()> {
        for _ in 0..n {
            let ch = self.make(dev, engine)?;
            self.free.lock()[slot(engine)].push(ch);
        }
        Ok(())
    }

    /// Channels of the device that exist (free or in use).
    pub(crate) fn live(&self) -> u32 {
        self.live.load(Ordering::Acquire)
    }

    /// Free channels of `engine`.
    pub(crate) fn free_count(&self, engine: Engine) -> usize {
        self.free.lock()[slot(engine)].len()
    }

    fn make(&self, dev: &Arc<Device>, engine: Engine) -> Result<NvgpuChannel> {
        // Count first, so that two threads cannot both make the 128th.
        let mut n = self.live.fetch_add(1, Ordering::AcqRel);
        if n >= TSG_MAX_CHANNELS {
            // Room can be made by closing a free channel of the other kind (callers make
            // channels only where closing one cannot preempt running work either).
            let other = self.free.lock()[1 - slot(engine)].pop();
            if let Some(ch) = other {
                drop(ch);
                // `live` counted this call's channel already: the others now number one less.
                n = self.live.fetch_sub(1, Ordering::AcqRel) - 2;
            }
        }
        if n >= TSG_MAX_CHANNELS {
            self.live.fetch_sub(1, Ordering::AcqRel);
            return Err(Error::new(
                Status::OutOfMemory,
                format!(
                    "tg_queue_create: the device has {TSG_MAX_CHANNELS} queues (channels), the most one nvgpu TSG holds; destroy a queue first"
                ),
            ));
        }
        let entries = match dev.chars.max_gpfifo_entries {
            0 => POOL_ENTRIES,
            m => POOL_ENTRIES.min(m),
        };
        NvgpuChannel::create(
            dev.clone(),
            engine,
            entries,
            self.cilp,
            self.ctxsw_timeout_ms,
        )
        .inspect_err(|_| {
            self.live.fetch_sub(1, Ordering::AcqRel);
        })
    }

    /// A channel of `engine` for a new queue: a free one, else a new one. `device_idle` says
    /// whether every queue of the device has completed its submitted work; a new channel made
    /// while work runs would preempt it (module documentation), so that is refused.
    pub(crate) fn take(
        self: &Arc<Self>,
        dev: &Arc<Device>,
        engine: Engine,
        device_idle: bool,
    ) -> Result<Box<dyn Channel>> {
        // (The pop in a statement of its own: a guard in the match scrutinee would be held
        // through `make`, which takes the lock too.)
        let free = self.free.lock()[slot(engine)].pop();
        let ch = match free {
            Some(ch) => ch,
            None if device_idle => self.make(dev, engine)?,
            None => {
                return Err(Error::new(
                    Status::NotSupported,
                    format!(
                        "tg_queue_create: every {} channel made at device open is in use and the device is running work; setting up a new channel now would preempt that work (nvgpu preempts the device's whole channel group, and a kernel running longer than 100 ms makes the preempt fail and the group stop). Create queues while the device is idle, or have more made at open with {CHANNELS_ENV}=COMPUTE,COPY",
                        match engine {
                            Engine::Compute => "compute",
                            Engine::Copy => "copy",
                        }
                    ),
                ))
            }
        };
        let start = ch.gp_put();
        Ok(Box::new(PooledChannel {
            ch: Some(ch),
            pool: self.clone(),
            engine,
            discard: AtomicBool::new(false),
            start,
        }))
    }

    /// Close every free channel (device teardown; the device is idle then).
    pub(crate) fn drain(&self) {
        let chans: Vec<NvgpuChannel> = {
            let mut f = self.free.lock();
            f.iter_mut().flat_map(std::mem::take).collect()
        };
        self.live.fetch_sub(chans.len() as u32, Ordering::AcqRel);
        drop(chans);
    }
}

/// A pooled channel in use by a queue: goes back to the pool when the queue is done with it,
/// unless it was abandoned or reported an error (then it is closed).
struct PooledChannel {
    ch: Option<NvgpuChannel>,
    pool: Arc<Pool>,
    engine: Engine,
    discard: AtomicBool,
    /// GP_PUT when the queue took the channel: its next entry.
    start: u32,
}

impl Channel for PooledChannel {
    fn raw(&self) -> ChannelRaw {
        match &self.ch {
            Some(c) => c.raw(),
            None => NvgpuChannel::no_raw(),
        }
    }
    fn error(&self) -> Option<ChannelError> {
        self.ch.as_ref().and_then(|c| c.error())
    }
    fn ring_start(&self) -> u32 {
        self.start
    }
    fn discard(&self) {
        self.discard.store(true, Ordering::Release);
    }
}

impl Drop for PooledChannel {
    fn drop(&mut self) {
        let Some(ch) = self.ch.take() else {
            return;
        };
        if self.discard.load(Ordering::Acquire) || !ch.idle() || ch.error().is_some() {
            self.pool.live.fetch_sub(1, Ordering::AcqRel);
            drop(ch);
        } else {
            self.pool.free.lock()[slot(self.engine)].push(ch);
        }
    }
}
