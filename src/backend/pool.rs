//! A device's channels, made when the device opens and handed out to queues.
//!
//! Every queue of a device is a channel of the device's channel group (TSG), and both kernel
//! drivers stop the group's running work to change its membership:
//!
//! - **nvgpu** disables and preempts the **whole TSG** when a channel gets its engine object
//!   (ALLOC_OBJ_CTX: `common/gr/gr_setup.c:nvgpu_gr_setup_alloc_obj_ctx`) and when a channel
//!   closes (`common/fifo/tsg.c:nvgpu_tsg_unbind_channel` → `nvgpu_tsg_unbind_channel_common`).
//!   ga10b preempts compute by waiting for the running grids, for at most 100 ms
//!   (`common/fifo/preempt.c:nvgpu_fifo_preempt_tsg`); a preempt that times out fails the call
//!   with EBUSY, and a failed unbind ends in `nvgpu_tsg_abort()`, which stops every channel of
//!   the TSG.
//! - **RM** (H100/H200, driver 580): allocating a channel in a channel group whose kernel is
//!   running fails after RM's own timeout with `NV_ERR_TIMEOUT` (seen with `tests/queue_lifecycle.rs`).
//!
//! So, as CUDA does (it makes its channels when the context is made), the device makes a set of
//! channels at open ([`DEFAULT_COMPUTE`] compute and [`DEFAULT_COPY`] copy ones;
//! `TEGRAGPU_CHANNELS=COMPUTE,COPY` to change it), and queues take them from this pool and give
//! them back when they are destroyed: no driver call, no preempt. A queue that is aborted, or
//! whose channel reported an error, closes its channel instead. When the pool of a kind is
//! empty a new channel is made only while nothing runs on the device; otherwise creation is
//! refused with a message that says so (see [`Pool::take`]).

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use crate::backend::{Channel, ChannelError, ChannelRaw, Engine};
use crate::error::{Error, Result, Status};

/// Compute channels made at device open.
pub const DEFAULT_COMPUTE: u32 = 4;
/// Copy channels made at device open.
pub const DEFAULT_COPY: u32 = 2;
/// GPFIFO entries of every pooled channel: the largest queue depth, so that any queue can take
/// any channel (512 KiB of ring each).
pub const POOL_ENTRIES: u32 = 65536;
/// The environment variable that sets how many channels a device makes at open.
pub const CHANNELS_ENV: &str = "TEGRAGPU_CHANNELS";

/// How many compute and copy channels to make at open: `TEGRAGPU_CHANNELS=C,K`, else the
/// defaults; an unreadable value, or more than `max` in all, is an error naming it.
pub fn configured_counts(max: u32) -> Result<(u32, u32)> {
    let Ok(v) = std::env::var(CHANNELS_ENV) else {
        return Ok((DEFAULT_COMPUTE, DEFAULT_COPY));
    };
    let parsed = v
        .split_once(',')
        .and_then(|(c, k)| Some((c.trim().parse::<u32>().ok()?, k.trim().parse::<u32>().ok()?)));
    match parsed {
        Some((c, k)) if c.checked_add(k).is_some_and(|n| n <= max) => Ok((c, k)),
        _ => Err(Error::invalid(format!(
            "{CHANNELS_ENV}={v:?}: expected COMPUTE,COPY (two counts, together at most {max}), e.g. \"{DEFAULT_COMPUTE},{DEFAULT_COPY}\""
        ))),
    }
}

/// Makes one channel of an engine for the pool.
pub(crate) type MakeChannel = Box<dyn Fn(Engine) -> Result<Box<dyn Channel>> + Send + Sync>;

/// Free channels by engine, and how many channels of the device exist.
pub(crate) struct Pool {
    free: Mutex<[Vec<Box<dyn Channel>>; 2]>,
    live: AtomicU32,
    /// The most channels the device may have (nvgpu: one TSG's 128), and what names it.
    limit: u32,
    limit_what: &'static str,
    make: MakeChannel,
}

fn slot(engine: Engine) -> usize {
    match engine {
        Engine::Compute => 0,
        Engine::Copy => 1,
    }
}

fn engine_name(engine: Engine) -> &'static str {
    match engine {
        Engine::Compute => "compute",
        Engine::Copy => "copy",
    }
}

/// GP_PUT as the library last wrote it to the channel's USERD (byte 0x8c).
fn gp_put(raw: &ChannelRaw) -> u32 {
    if raw.userd.is_null() {
        return 0;
    }
    // SAFETY: USERD is mapped for the channel's lifetime.
    unsafe { std::ptr::read_volatile(raw.userd.add(0x8c / 4)) }
}

/// Whether the GPU has fetched every GPFIFO entry written (GP_GET at 0x88 = GP_PUT).
fn ring_idle(raw: &ChannelRaw) -> bool {
    if raw.userd.is_null() {
        return true;
    }
    // SAFETY: as in `gp_put`.
    let get = unsafe { std::ptr::read_volatile(raw.userd.add(0x88 / 4)) };
    get == gp_put(raw)
}

impl Pool {
    /// A pool that makes its channels with `make`; at most `limit` channels exist (`limit_what`
    /// names the limit in the refusal).
    pub(crate) fn new(limit: u32, limit_what: &'static str, make: MakeChannel) -> Pool {
        Pool {
            free: Mutex::new([Vec::new(), Vec::new()]),
            live: AtomicU32::new(0),
            limit,
            limit_what,
            make,
        }
    }

    /// Make `n` channels of `engine` for the pool (at device open).
    pub(crate) fn fill(&self, engine: Engine, n: u32) -> Result<()> {
        for _ in 0..n {
            let ch = self.make(engine)?;
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

    fn make(&self, engine: Engine) -> Result<Box<dyn Channel>> {
        // Count first, so that two threads cannot both make the last one.
        let mut n = self.live.fetch_add(1, Ordering::AcqRel);
        if n >= self.limit {
            // Room can be made by closing a free channel of the other kind (callers make
            // channels only where closing one cannot stop running work either).
            let other = self.free.lock()[1 - slot(engine)].pop();
            if let Some(ch) = other {
                drop(ch);
                // `live` counted this call's channel already: the others now number one less.
                n = self.live.fetch_sub(1, Ordering::AcqRel) - 2;
            }
        }
        if n >= self.limit {
            self.live.fetch_sub(1, Ordering::AcqRel);
            return Err(Error::new(
                Status::OutOfMemory,
                format!(
                    "tg_queue_create: the device has {} queues (channels), {}; destroy a queue first",
                    self.limit, self.limit_what
                ),
            ));
        }
        (self.make)(engine).inspect_err(|_| {
            self.live.fetch_sub(1, Ordering::AcqRel);
        })
    }

    /// A channel of `engine` for a new queue: a free one, else a new one. `device_idle` says
    /// whether every queue of the device has completed its submitted work; a new channel made
    /// while work runs would stop it (module documentation), so that is refused.
    pub(crate) fn take(
        self: &Arc<Self>,
        engine: Engine,
        device_idle: bool,
    ) -> Result<Box<dyn Channel>> {
        // A free channel that reports an error (its channel group was stopped after it went
        // back: an abort, a fault) is closed, not handed out. (The pop in a statement of its
        // own: a guard in the match scrutinee would be held through `make`, which takes the
        // lock too.)
        let free = loop {
            let next = self.free.lock()[slot(engine)].pop();
            match next {
                Some(ch) if ch.error().is_some() => {
                    self.live.fetch_sub(1, Ordering::AcqRel);
                    drop(ch);
                }
                other => break other,
            }
        };
        let ch = match free {
            Some(ch) => ch,
            None if device_idle => self.make(engine)?,
            None => {
                return Err(Error::new(
                    Status::NotSupported,
                    format!(
                        "tg_queue_create: every {} channel made at device open is in use and the device is running work; setting up a new channel now would stop that work (the kernel driver preempts the device's channel group to add a channel, and a kernel that runs on makes it fail). Create queues while the device is idle, or have more made at open with {CHANNELS_ENV}=COMPUTE,COPY",
                        engine_name(engine)
                    ),
                ))
            }
        };
        let start = gp_put(&ch.raw());
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
        let chans: Vec<Box<dyn Channel>> = {
            let mut f = self.free.lock();
            f.iter_mut().flat_map(std::mem::take).collect()
        };
        self.live.fetch_sub(chans.len() as u32, Ordering::AcqRel);
        drop(chans);
    }
}

/// A pooled channel in use by a queue: goes back to the pool when the queue is done with it,
/// unless it was abandoned, reported an error or still has entries the GPU has not fetched
/// (then it is closed).
struct PooledChannel {
    ch: Option<Box<dyn Channel>>,
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
            None => ChannelRaw {
                gpfifo: std::ptr::null_mut(),
                entries: 0,
                userd: std::ptr::null_mut(),
                doorbell: std::ptr::null_mut(),
                token: 0,
                class: 0,
                subchannel: 0,
            },
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
        if self.discard.load(Ordering::Acquire) || !ring_idle(&ch.raw()) || ch.error().is_some() {
            self.pool.live.fetch_sub(1, Ordering::AcqRel);
            drop(ch);
        } else {
            self.pool.free.lock()[slot(self.engine)].push(ch);
        }
    }
}
