//! Channel groups (TSGs): one per engine type, each with its context share; compute
//! preemption and GPFIFO_SCHEDULE.

use super::state::{Inner, TsgState};
use crate::error::Result;
use crate::log::debug;
use crate::sys::rm::*;

/// The subcontext type of a TSG's context share: ASYNC for the GR engine (compute channels and
/// GR-copy-engine channels), SYNC for any other engine. RM binds a channel to its engine's
/// runlist when the first engine object is allocated, and refuses an ASYNC subcontext on any
/// engine but GR and a GRCE (`kfifoValidateEngineAndSubctxType_GP102`, called from
/// `kfifoRunlistSetIdByEngine_GM107` in `chandesConstruct`): the copy object of an async-LCE
/// channel in an ASYNC context share fails with `NV_ERR_INVALID_ARGUMENT`.
pub(super) fn ctxshare_flags(engine_type: u32) -> u32 {
    if engine_type == NV2080_ENGINE_TYPE_GRAPHICS {
        NV_CTXSHARE_ALLOCATION_FLAGS_SUBCONTEXT_ASYNC
    } else {
        NV_CTXSHARE_ALLOCATION_FLAGS_SUBCONTEXT_SYNC
    }
}

/// The allocation parameters of a TSG for `engine_type` (`NV2080_ENGINE_TYPE_*`) and of its
/// context share on `vaspace`. A TSG serves one runlist: the GR engine's (compute and the GR
/// copy engine) or one async LCE's, so an LCE channel needs a TSG of that LCE's engine type.
pub(super) fn tsg_alloc_params(
    engine_type: u32,
    vaspace: u32,
) -> (
    NV_CHANNEL_GROUP_ALLOCATION_PARAMETERS,
    NV_CTXSHARE_ALLOCATION_PARAMETERS,
) {
    (
        NV_CHANNEL_GROUP_ALLOCATION_PARAMETERS {
            engineType: engine_type,
            ..Default::default()
        },
        NV_CTXSHARE_ALLOCATION_PARAMETERS {
            hVASpace: vaspace,
            flags: ctxshare_flags(engine_type),
            subctxId: 0,
        },
    )
}

impl Inner {
    /// Allocate the TSG (engine `st.engine_type`) and its context share (ASYNC for GR, SYNC
    /// for an async LCE: [`ctxshare_flags`]) into `st`.
    pub(super) fn alloc_tsg(&self, st: &mut TsgState) -> Result<()> {
        let (mut tp, mut cp) = tsg_alloc_params(st.engine_type, self.vaspace);
        st.tsg = self
            .api
            .alloc(self.device, KEPLER_CHANNEL_GROUP_A, Some(&mut tp))?;
        st.ctxshare = self
            .api
            .alloc(st.tsg, FERMI_CONTEXT_SHARE_A, Some(&mut cp))?;
        st.subctx_id = cp.subctxId;
        st.used = false;
        st.scheduled = false;
        debug!(
            "TSG {:#x} (engine type {:#x}), context share {:#x} ({}, subctx {})",
            st.tsg,
            st.engine_type,
            st.ctxshare,
            if cp.flags == NV_CTXSHARE_ALLOCATION_FLAGS_SUBCONTEXT_ASYNC {
                "ASYNC"
            } else {
                "SYNC"
            },
            st.subctx_id
        );
        Ok(())
    }

    /// Ask for compute instruction-level preemption (CILP) on a GR TSG once its context
    /// exists (after the first compute object, before scheduling), as libcuda does for each
    /// context: without it (wait-for-idle) a kernel that does not end cannot be switched out,
    /// so other contexts stall until RM gives up (Xid 109, CTX SWITCH TIMEOUT) and stops every
    /// channel of the TSG. Not fatal if refused.
    pub(super) fn set_compute_preemption(&self, st: &TsgState) {
        if st.engine_type == NV2080_ENGINE_TYPE_GRAPHICS {
            let mut pp = NV2080_CTRL_GR_SET_CTXSW_PREEMPTION_MODE_PARAMS {
                flags: NV2080_CTRL_GR_SET_CTXSW_PREEMPTION_MODE_FLAGS_CILP_SET,
                hChannel: st.tsg,
                cilpPreemptMode: NV2080_CTRL_SET_CTXSW_PREEMPTION_MODE_COMPUTE_CILP,
                ..Default::default()
            };
            match self.api.control(
                self.subdevice,
                NV2080_CTRL_CMD_GR_SET_CTXSW_PREEMPTION_MODE,
                &mut pp,
            ) {
                Ok(()) => debug!("TSG {:#x}: compute preemption CILP", st.tsg),
                Err(e) => debug!("TSG {:#x}: compute preemption CILP refused: {e}", st.tsg),
            }
        }
    }

    pub(super) fn free_tsg(&self, st: &mut TsgState) {
        if st.ctxshare != 0 {
            let _ = self.api.free(st.tsg, st.ctxshare);
            st.ctxshare = 0;
        }
        if st.tsg != 0 {
            let _ = self.api.free(self.device, st.tsg);
            st.tsg = 0;
        }
    }

    /// A TSG whose channels have all been freed does not accept new channels
    /// (RM_ALLOC fails with NV_ERR_INVALID_STATE [H200]): replace it with a fresh one.
    pub(super) fn fresh_tsg_if_emptied(&self, st: &mut TsgState) -> Result<()> {
        if st.live == 0 && st.used {
            debug!("TSG {:#x} emptied; allocating a new one", st.tsg);
            self.free_tsg(st);
            self.alloc_tsg(st)?;
        }
        Ok(())
    }

    /// GPFIFO_SCHEDULE(enable) on the TSG, after each new channel (re-enabling a running TSG
    /// is accepted [H200]).
    pub(super) fn schedule_tsg(&self, st: &mut TsgState) -> Result<()> {
        if !st.scheduled {
            self.set_compute_preemption(st);
        }
        let size = self.layout.gpfifo_schedule_params_size;
        let mut p = NVA06C_CTRL_GPFIFO_SCHEDULE_PARAMS {
            bEnable: 1,
            bSkipSubmit: 0,
            bSkipEnable: 0,
        };
        let r = self
            .api
            .control_sized(st.tsg, NVA06C_CTRL_CMD_GPFIFO_SCHEDULE, &mut p, size);
        match r {
            Ok(()) => {
                debug!("GPFIFO_SCHEDULE(enable) on TSG {:#x}: ok", st.tsg);
                st.scheduled = true;
                Ok(())
            }
            Err(e) if st.scheduled => {
                // Already scheduled: disable and enable again so the new channel joins.
                debug!("GPFIFO_SCHEDULE(enable) again failed ({e}); disabling and re-enabling");
                let mut d = NVA06C_CTRL_GPFIFO_SCHEDULE_PARAMS {
                    bEnable: 0,
                    bSkipSubmit: 0,
                    bSkipEnable: 0,
                };
                self.api
                    .control_sized(st.tsg, NVA06C_CTRL_CMD_GPFIFO_SCHEDULE, &mut d, size)?;
                let mut p = NVA06C_CTRL_GPFIFO_SCHEDULE_PARAMS {
                    bEnable: 1,
                    bSkipSubmit: 0,
                    bSkipEnable: 0,
                };
                self.api
                    .control_sized(st.tsg, NVA06C_CTRL_CMD_GPFIFO_SCHEDULE, &mut p, size)
            }
            Err(e) => Err(e),
        }
    }
}
