//! RM channels: a GPFIFO channel in the device's TSG with its engine object bound.

use super::engines::{
    describe_copy_engine, resolve_copy_engine, CopyEngineChoice, COPY_ENGINE_ENV,
};
use super::rmapi::uvm_ioctl;
use super::state::{Inner, MemRecord, TsgState};
use super::va;
use crate::backend::{Channel, ChannelError, ChannelRaw, CopyEngine, Engine};
use crate::error::{Error, Result};
use crate::log::debug;
use crate::os::KernelFaultRecord;
use crate::sys::rm::*;
use std::sync::{Arc, OnceLock};

/// Smallest accepted GPFIFO ring (entries).
pub const MIN_GPFIFO_ENTRIES: u32 = 8;
/// Largest accepted GPFIFO ring (entries).
pub const MAX_GPFIFO_ENTRIES: u32 = 1 << 20;
/// USERD size and alignment.
pub const USERD_SIZE: u64 = 512;
/// Size of the VA range registered with UVM for each channel's context buffers.
pub const CHANNEL_UVM_RANGE: u64 = 64 << 20;

/// One GPFIFO channel: ring + USERD (one video-memory allocation), error notifier, channel
/// object, engine object, UVM registration. Dropping it tears all of that down.
pub struct RmChannel {
    inner: Arc<Inner>,
    handle: u32,
    /// The TSG the channel was allocated in (its RM parent).
    tsg: u32,
    /// The TSG's engine type (key of `Inner::sched`).
    tsg_engine: u32,
    /// Counted in the TSG's live channels.
    counted: bool,
    engine_obj: u32,
    /// Copy channels also carry a compute object (see `build`).
    aux_obj: u32,
    ring: Option<MemRecord>,
    notifier: Option<MemRecord>,
    uvm_base: u64,
    uvm_registered: bool,
    raw: ChannelRaw,
    /// The first error seen (RM clears the MMU fault info once read, so it is kept).
    error: OnceLock<ChannelError>,
    /// The engine the channel runs on, in words ([`Channel::engine_label`]).
    label: String,
}

/// `NV_CHANNEL_ALLOC_PARAMS::engineType` for a channel in the TSG of `tsg_engine`: the LCE's
/// engine type in an LCE TSG (RM requires it to equal the TSG's: `kchannelConstruct`), 0 in
/// the GR TSG (the channel takes the TSG's engine).
pub(super) fn gpfifo_engine_type(tsg_engine: u32) -> u32 {
    if tsg_engine == NV2080_ENGINE_TYPE_GRAPHICS {
        0
    } else {
        tsg_engine
    }
}

/// The copy object's allocation parameters in a channel of the TSG of `tsg_engine`: version 1
/// naming the LCE on an async LCE, none on the GR runlist (the GRCE partnered with GR).
pub(super) fn copy_object_params(tsg_engine: u32) -> Option<NVB0B5_ALLOCATION_PARAMETERS> {
    (tsg_engine != NV2080_ENGINE_TYPE_GRAPHICS).then_some(NVB0B5_ALLOCATION_PARAMETERS {
        version: NVB0B5_ALLOCATION_PARAMETERS_VERSION_1,
        engineType: tsg_engine,
    })
}

impl RmChannel {
    /// A channel of `engine`; copy channels on `copy` ([`CopyEngine::Auto`]: the
    /// [`COPY_ENGINE_ENV`] choice or the async LCE with the most PCEs, falling back to the GR
    /// copy engine when the driver refuses a channel there; an explicit engine never falls
    /// back).
    pub(crate) fn create(
        inner: &Arc<Inner>,
        engine: Engine,
        entries: u32,
        bar1_kib: u32,
        copy: CopyEngine,
    ) -> Result<RmChannel> {
        if !entries.is_power_of_two()
            || !(MIN_GPFIFO_ENTRIES..=MAX_GPFIFO_ENTRIES).contains(&entries)
        {
            return Err(Error::invalid(format!(
                "create_channel: entries {entries} must be a power of two in {MIN_GPFIFO_ENTRIES}..={MAX_GPFIFO_ENTRIES}"
            )));
        }
        let classes = inner.classes.ok_or_else(|| {
            Error::new(
                crate::error::Status::Internal,
                "create_channel: device has no classes",
            )
        })?;
        let (class, subchannel) = match engine {
            Engine::Compute => (classes.compute, 1),
            Engine::Copy => (classes.copy, 4),
        };
        let ch = RmChannel {
            inner: inner.clone(),
            handle: 0,
            tsg: 0,
            tsg_engine: NV2080_ENGINE_TYPE_GRAPHICS,
            counted: false,
            engine_obj: 0,
            aux_obj: 0,
            ring: None,
            notifier: None,
            uvm_base: 0,
            uvm_registered: false,
            raw: ChannelRaw {
                gpfifo: std::ptr::null_mut(),
                entries,
                userd: std::ptr::null_mut(),
                doorbell: std::ptr::null_mut(),
                token: 0,
                class,
                subchannel,
            },
            error: OnceLock::new(),
            label: String::new(),
        };
        let env = match (engine, copy) {
            (Engine::Copy, CopyEngine::Auto) => std::env::var(COPY_ENGINE_ENV).ok(),
            _ => None,
        };
        let (choice, may_fall_back) = match engine {
            Engine::Compute => (CopyEngineChoice::Grce, false),
            Engine::Copy => resolve_copy_engine(&inner.copy_engines, copy, env.as_deref())?,
        };
        let tsg_engine = match choice {
            CopyEngineChoice::Grce => NV2080_ENGINE_TYPE_GRAPHICS,
            CopyEngineChoice::Lce(t) => t,
        };
        let what = describe_copy_engine(&inner.copy_engines, choice);
        let asked = match (copy, &env) {
            (CopyEngine::Auto, Some(v)) => format!("{COPY_ENGINE_ENV}={v:?}"),
            (CopyEngine::Auto, None) => "auto: the async LCE with the most PCEs".to_string(),
            (c, _) => format!("requested {c}"),
        };
        let template = ch;
        let mut ch = template.fresh(tsg_engine);
        let r = ch.build_in_tsg(engine, entries, bar1_kib);
        match r {
            Ok(()) => {
                if engine == Engine::Copy {
                    ch.label = what;
                    debug!("copy channel {:#x} on {} ({asked})", ch.handle, ch.label);
                } else {
                    ch.label = "GR (compute)".to_string();
                }
                Ok(ch)
            }
            Err(e) if may_fall_back && tsg_engine != NV2080_ENGINE_TYPE_GRAPHICS => {
                // An async LCE channel failed: fall back to the GR copy engine.
                crate::log::info!(
                    "a copy channel on {what} failed ({e}); this copy queue uses the GR copy engine ({asked})"
                );
                drop(ch);
                let mut g = template.fresh(NV2080_ENGINE_TYPE_GRAPHICS);
                g.build_in_tsg(engine, entries, bar1_kib)?;
                g.label = format!(
                    "GRCE (the GR copy engine; a channel on {what} failed: {})",
                    e.message
                );
                Ok(g)
            }
            // On error `ch` drops (after the lock is released) and undoes whatever was built.
            Err(mut e) if engine == Engine::Copy => {
                e.message = format!(
                    "tg_queue_create: a copy channel on {what} ({asked}): {}",
                    e.message
                );
                Err(e)
            }
            Err(e) => Err(e),
        }
    }

    /// An unbuilt copy of `self` for the TSG of `tsg_engine`.
    fn fresh(&self, tsg_engine: u32) -> RmChannel {
        RmChannel {
            inner: self.inner.clone(),
            handle: 0,
            tsg: 0,
            tsg_engine,
            counted: false,
            engine_obj: 0,
            aux_obj: 0,
            ring: None,
            notifier: None,
            uvm_base: 0,
            uvm_registered: false,
            raw: self.raw,
            error: OnceLock::new(),
            label: String::new(),
        }
    }

    /// Build the channel in the TSG of `self.tsg_engine` (allocated on first use).
    fn build_in_tsg(&mut self, engine: Engine, entries: u32, bar1_kib: u32) -> Result<()> {
        let inner = self.inner.clone();
        let mut map = inner.sched.lock();
        let st = map.entry(self.tsg_engine).or_insert_with(|| TsgState {
            engine_type: self.tsg_engine,
            ..Default::default()
        });
        let r = if st.tsg == 0 {
            inner.alloc_tsg(st)
        } else {
            inner.fresh_tsg_if_emptied(st)
        };
        r.and_then(|()| self.build(st, engine, entries, bar1_kib))
    }

    fn build(
        &mut self,
        st: &mut TsgState,
        engine: Engine,
        entries: u32,
        bar1_kib: u32,
    ) -> Result<()> {
        let inner = self.inner.clone();
        let classes = inner
            .classes
            .ok_or_else(|| Error::new(crate::error::Status::Internal, "no classes"))?;
        // Ring, then USERD 512-aligned right after it.
        let ring_bytes = entries as u64 * 8;
        let userd_off = ring_bytes.next_multiple_of(USERD_SIZE);
        let total = userd_off + USERD_SIZE;
        let ring = inner.alloc_vidmem(total, true, true, bar1_kib)?;
        // SAFETY: ring.cpu..+ring.size is the CPU mapping just made; nothing else uses it yet.
        unsafe { std::ptr::write_bytes(ring.cpu as *mut u8, 0, ring.size as usize) };
        let (ring_handle, ring_va, ring_cpu) = (ring.handle, ring.va, ring.cpu);
        self.ring = Some(ring);

        // Error notifier (optional: a channel works without one, but then faults are silent).
        match inner.alloc_notifier() {
            Ok(n) => {
                // SAFETY: the notifier's CPU mapping, NOTIFIER_SIZE bytes.
                unsafe { std::ptr::write_bytes(n.cpu as *mut u8, 0, n.size as usize) };
                self.notifier = Some(n);
            }
            Err(e) => crate::log::warn!(
                "error notifier allocation failed ({e}); this channel's faults will go unreported"
            ),
        }
        let notifier_handle = self.notifier.as_ref().map_or(0, |n| n.handle);

        let mut p = NV_CHANNEL_ALLOC_PARAMS {
            hObjectError: notifier_handle,
            hObjectBuffer: ring_handle,
            gpFifoOffset: ring_va,
            gpFifoEntries: entries,
            hContextShare: st.ctxshare,
            ..Default::default()
        };
        p.hUserdMemory[0] = ring_handle;
        p.userdOffset[0] = userd_off;
        p.engineType = gpfifo_engine_type(st.engine_type);
        self.handle = inner.api.alloc(st.tsg, classes.gpfifo, Some(&mut p))?;
        self.tsg = st.tsg;
        self.counted = true;
        st.live += 1;
        st.used = true;
        debug!(
            "channel {:#x} (class {:#x}, cid {}) ring at {ring_va:#x}",
            self.handle, classes.gpfifo, p.cid
        );

        let async_ce = st.engine_type != NV2080_ENGINE_TYPE_GRAPHICS;
        if let Some(mut cp) = copy_object_params(st.engine_type) {
            // An async LCE: the copy object names its engine.
            self.engine_obj = inner
                .api
                .alloc(self.handle, self.raw.class, Some(&mut cp))?;
        } else {
            // A GR-runlist channel whose TSG has no GR context yet (no compute object anywhere
            // in it) fails UVM_REGISTER_CHANNEL with NV_ERR_INVALID_OBJECT [H200]: give GR copy
            // channels a compute object too, which creates the context.
            if engine == Engine::Copy {
                self.aux_obj = inner.api.alloc::<()>(self.handle, classes.compute, None)?;
            }
            self.engine_obj = inner.api.alloc::<()>(self.handle, self.raw.class, None)?;
        }

        let mut t = NVC36F_CTRL_CMD_GPFIFO_GET_WORK_SUBMIT_TOKEN_PARAMS::default();
        inner.api.control(
            self.handle,
            NVC36F_CTRL_CMD_GPFIFO_GET_WORK_SUBMIT_TOKEN,
            &mut t,
        )?;
        debug!("{engine:?} channel token {:#x}", t.workSubmitToken);

        // UVM maps the channel's RM-owned context buffers into a range of our VA space.
        let base = va::low_va()
            .lock()
            .alloc(CHANNEL_UVM_RANGE, 2 << 20)
            .ok_or_else(|| {
                Error::new(
                    crate::error::Status::OutOfMemory,
                    "no 64 MiB range left in the VA window for the channel",
                )
            })?;
        self.uvm_base = base;
        let mut rc = UVM_REGISTER_CHANNEL_PARAMS {
            gpuUuid: inner.uuid,
            rmCtrlFd: inner.api.ctl_fd,
            hClient: inner.api.client,
            hChannel: self.handle,
            base,
            length: CHANNEL_UVM_RANGE,
            ..Default::default()
        };
        let reg = uvm_ioctl(
            inner.sys(),
            inner.uvm_fd,
            UVM_REGISTER_CHANNEL,
            &mut rc,
            |p| p.rmStatus,
            &|| {
                format!(
                    "UVM_REGISTER_CHANNEL(hChannel={:#x}, base={base:#x})",
                    self.handle
                )
            },
        );
        match reg {
            Ok(()) => self.uvm_registered = true,
            // Async copy engines have no context buffers for UVM to map; a refusal there only
            // costs UVM's fault attribution, so the channel is still usable.
            Err(e) if async_ce => debug!("{e} (async copy channel: continuing)"),
            Err(e) => return Err(e),
        }

        inner.schedule_tsg(st)?;

        self.raw.gpfifo = ring_cpu as *mut u64;
        self.raw.userd = (ring_cpu + userd_off as usize) as *mut u32;
        self.raw.doorbell = inner.doorbell_ptr as *mut u32;
        self.raw.token = t.workSubmitToken;
        Ok(())
    }

    /// GPU VA of the GPFIFO ring.
    pub fn gpfifo_va(&self) -> u64 {
        self.ring.as_ref().map_or(0, |r| r.va)
    }

    /// RM channel handle.
    pub fn handle(&self) -> u32 {
        self.handle
    }

    /// Whether the channel has an error notifier ([`Channel::error`] can only report errors
    /// when it does).
    pub fn has_error_notifier(&self) -> bool {
        self.notifier.is_some()
    }
}

impl Channel for RmChannel {
    fn raw(&self) -> ChannelRaw {
        self.raw
    }

    fn engine_label(&self) -> String {
        self.label.clone()
    }

    fn error(&self) -> Option<ChannelError> {
        if let Some(e) = self.error.get() {
            return Some(e.clone());
        }
        let n = self.notifier.as_ref()?;
        let idx = NV_CHANNELGPFIFO_NOTIFICATION_TYPE_ERROR as usize;
        // SAFETY: the notifier mapping holds NOTIFIER_SIZE ≥ 3 × 16 bytes; RM writes it
        // asynchronously, hence volatile.
        let p = unsafe { (n.cpu as *const NvNotification).add(idx) };
        // Status first, then (after a read barrier: aarch64 `dmb oshld`, crate::hw::barrier)
        // the record it says is posted.
        // SAFETY: as above.
        if unsafe { std::ptr::read_volatile(std::ptr::addr_of!((*p).status)) } == 0 {
            return None;
        }
        crate::hw::barrier::after_gpu_value();
        // SAFETY: as above.
        let rec = unsafe { std::ptr::read_volatile(p) };
        // The notifier has no address; the channel's MMU fault info does (MMU faults only).
        let mut f = NV906F_CTRL_GET_MMU_FAULT_INFO_PARAMS::default();
        let fault =
            match self
                .inner
                .api
                .control(self.handle, NV906F_CTRL_CMD_GET_MMU_FAULT_INFO, &mut f)
            {
                Ok(()) if rec.info32 == ROBUST_CHANNEL_FIFO_ERROR_MMU_ERR_FLT => Some((
                    (f.addrHi as u64) << 32 | f.addrLo as u64,
                    f.faultType,
                    c_string(&f.faultString),
                )),
                Ok(()) => None,
                Err(e) => {
                    debug!("GET_MMU_FAULT_INFO: {e}");
                    None
                }
            };
        let what = match &fault {
            Some((addr, ty, s)) => format!(
                "RM robust-channel error {} ({}) on engine type {}: {s} (fault type {ty}) at GPU VA {addr:#x}",
                rec.info32,
                robust_channel_error_name(rec.info32),
                rec.info16
            ),
            None => format!(
                "RM robust-channel error {} ({}) on engine type {}, notifier status {:#x}",
                rec.info32,
                robust_channel_error_name(rec.info32),
                rec.info16,
                rec.status
            ),
        };
        let err = ChannelError {
            code: rec.info32,
            what,
            address: fault.as_ref().map(|f| f.0),
        };
        if self.error.set(err.clone()).is_ok() {
            self.inner.faults.lock().push(KernelFaultRecord {
                token: self.raw.token,
                address: err.address,
                code: err.code,
                what: err.what.clone(),
            });
        }
        self.error.get().cloned()
    }
}

impl Drop for RmChannel {
    fn drop(&mut self) {
        let inner = self.inner.clone();
        let mut map = inner.sched.lock();
        if self.uvm_registered {
            let what = || format!("UVM_UNREGISTER_CHANNEL(hChannel={:#x})", self.handle);
            let r = if inner.layout.uvm_unregister_channel_params_size
                == core::mem::size_of::<UVM_UNREGISTER_CHANNEL_PARAMS_V590>()
            {
                let mut p = UVM_UNREGISTER_CHANNEL_PARAMS_V590 {
                    hClient: inner.api.client,
                    hChannel: self.handle,
                    rmStatus: 0,
                };
                uvm_ioctl(
                    inner.sys(),
                    inner.uvm_fd,
                    UVM_UNREGISTER_CHANNEL,
                    &mut p,
                    |p| p.rmStatus,
                    &what,
                )
            } else {
                let mut p = UVM_UNREGISTER_CHANNEL_PARAMS {
                    gpuUuid: inner.uuid,
                    hClient: inner.api.client,
                    hChannel: self.handle,
                    rmStatus: 0,
                };
                uvm_ioctl(
                    inner.sys(),
                    inner.uvm_fd,
                    UVM_UNREGISTER_CHANNEL,
                    &mut p,
                    |p| p.rmStatus,
                    &what,
                )
            };
            if let Err(e) = r {
                debug!("{e}");
            }
        }
        if self.engine_obj != 0 {
            let _ = inner.api.free(self.handle, self.engine_obj);
        }
        if self.aux_obj != 0 {
            let _ = inner.api.free(self.handle, self.aux_obj);
        }
        if self.handle != 0 {
            let _ = inner.api.free(self.tsg, self.handle);
        }
        if self.counted {
            if let Some(st) = map.get_mut(&self.tsg_engine) {
                st.live = st.live.saturating_sub(1);
            }
        }
        if self.uvm_base != 0 {
            va::low_va().lock().free(self.uvm_base, CHANNEL_UVM_RANGE);
        }
        if let Some(n) = self.notifier.take() {
            let _ = inner.free_record(n);
        }
        if let Some(r) = self.ring.take() {
            let _ = inner.free_record(r);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tsg::{ctxshare_flags, tsg_alloc_params};
    use super::*;

    #[test]
    fn gr_channels_use_an_async_subcontext_in_the_graphics_tsg() {
        let (tp, cp) = tsg_alloc_params(NV2080_ENGINE_TYPE_GRAPHICS, 0x55);
        assert_eq!(tp.engineType, NV2080_ENGINE_TYPE_GRAPHICS);
        assert_eq!(cp.hVASpace, 0x55);
        assert_eq!(cp.flags, NV_CTXSHARE_ALLOCATION_FLAGS_SUBCONTEXT_ASYNC);
        assert_eq!(gpfifo_engine_type(NV2080_ENGINE_TYPE_GRAPHICS), 0);
        assert_eq!(copy_object_params(NV2080_ENGINE_TYPE_GRAPHICS), None);
    }

    #[test]
    fn lce_channels_name_the_lce_everywhere_with_a_sync_subcontext() {
        for n in 0..NV2080_ENGINE_TYPE_COPY_SIZE {
            let t = NV2080_ENGINE_TYPE_COPY(n).unwrap();
            let (tp, cp) = tsg_alloc_params(t, 0x77);
            assert_eq!(tp.engineType, t, "LCE{n}: TSG engine type");
            assert_eq!(tp.hObjectError, 0);
            assert_eq!(tp.hVASpace, 0);
            // RM refuses an ASYNC subcontext for any engine but GR and a GRCE.
            assert_eq!(
                cp.flags, NV_CTXSHARE_ALLOCATION_FLAGS_SUBCONTEXT_SYNC,
                "LCE{n}"
            );
            assert_eq!(
                ctxshare_flags(t),
                NV_CTXSHARE_ALLOCATION_FLAGS_SUBCONTEXT_SYNC
            );
            assert_eq!(cp.hVASpace, 0x77);
            assert_eq!(gpfifo_engine_type(t), t, "LCE{n}: channel engine type");
            let o = copy_object_params(t).expect("an LCE copy object has parameters");
            assert_eq!(o.version, NVB0B5_ALLOCATION_PARAMETERS_VERSION_1);
            assert_eq!(o.engineType, t);
        }
        // LCE4 is engine type 0x0d.
        assert_eq!(copy_object_params(0x0d).unwrap().engineType, 0x0d);
    }
}
