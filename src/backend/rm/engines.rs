//! The GPU's classes and copy engines: which GPFIFO, compute, copy and usermode classes to use
//! (newest the GPU reports, rm-kernel-interface.md §4.1) and which logical copy engine runs
//! copy channels.

use crate::error::{Error, Result, Status};
use crate::sys::rm::*;

/// The engine classes picked from the GPU's class list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RmClasses {
    pub gpfifo: u32,
    pub compute: u32,
    pub copy: u32,
    pub usermode: u32,
}

/// Preference order (newest first) for each kind of class, from rm-kernel-interface.md §4.1.
const GPFIFO_CLASSES: [u32; 5] = [
    BLACKWELL_CHANNEL_GPFIFO_B,
    BLACKWELL_CHANNEL_GPFIFO_A,
    HOPPER_CHANNEL_GPFIFO_A,
    AMPERE_CHANNEL_GPFIFO_B,
    AMPERE_CHANNEL_GPFIFO_A,
];
const COMPUTE_CLASSES: [u32; 6] = [
    BLACKWELL_COMPUTE_B,
    BLACKWELL_COMPUTE_A,
    HOPPER_COMPUTE_A,
    ADA_COMPUTE_A,
    AMPERE_COMPUTE_B,
    AMPERE_COMPUTE_A,
];
const COPY_CLASSES: [u32; 5] = [
    BLACKWELL_DMA_COPY_B,
    BLACKWELL_DMA_COPY_A,
    HOPPER_DMA_COPY_A,
    AMPERE_DMA_COPY_B,
    AMPERE_DMA_COPY_A,
];
const USERMODE_CLASSES: [u32; 4] = [
    BLACKWELL_USERMODE_A,
    HOPPER_USERMODE_A,
    AMPERE_USERMODE_A,
    TURING_USERMODE_A,
];

/// Pick the newest supported GPFIFO, compute, copy and usermode classes the GPU reports.
pub fn select_classes(list: &[u32]) -> Result<RmClasses> {
    let pick = |prefs: &[u32], what: &str| -> Result<u32> {
        prefs
            .iter()
            .copied()
            .find(|c| list.contains(c))
            .ok_or_else(|| {
                Error::new(
                    Status::NotSupported,
                    format!(
                    "the GPU reports no supported {what} class (known: {}); it reports {} classes",
                    prefs.iter().map(|c| format!("{c:#x}")).collect::<Vec<_>>().join(", "),
                    list.len()
                ),
                )
            })
    };
    Ok(RmClasses {
        gpfifo: pick(&GPFIFO_CLASSES, "GPFIFO channel")?,
        compute: pick(&COMPUTE_CLASSES, "compute")?,
        copy: pick(&COPY_CLASSES, "copy-engine")?,
        usermode: pick(&USERMODE_CLASSES, "usermode (doorbell)")?,
    })
}

/// One logical copy engine (LCE) as RM reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CopyEngineInfo {
    /// LCE index n (`NV2080_ENGINE_TYPE_COPY(n)`).
    pub index: u32,
    /// `NV2080_ENGINE_TYPE_COPY(n)`.
    pub engine_type: u32,
    /// `NV2080_CTRL_CMD_CE_GET_CAPS_V2` caps bytes (0 when the control failed).
    pub caps: [u8; NV2080_CTRL_CE_CAPS_TBL_SIZE],
    /// Physical copy engines behind this LCE (`NV2080_CTRL_CMD_CE_GET_CE_PCE_MASK`; 0 when
    /// the control failed).
    pub pce_mask: u32,
}

impl CopyEngineInfo {
    /// The LCE is a GR copy engine (synchronous with graphics; `CE_CAPS_CE_GRCE`).
    pub fn is_grce(&self) -> bool {
        self.caps[0] & NV2080_CTRL_CE_CAPS_CE_GRCE != 0
    }
    /// Number of physical copy engines behind the LCE.
    pub fn pce_count(&self) -> u32 {
        self.pce_mask.count_ones()
    }
}

/// Where copy channels run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CopyEngineChoice {
    /// The GR copy engine, in the GRAPHICS TSG next to compute (one PCE on H200: ~94 GB/s).
    Grce,
    /// An asynchronous logical copy engine, in its own TSG (`NV2080_ENGINE_TYPE_*`).
    Lce(u32),
}

/// Environment variable overriding the copy engine: `grce`, `auto` (default) or an LCE index.
pub const COPY_ENGINE_ENV: &str = "TEGRAGPU_RM_COPY_ENGINE";

/// Pick the copy engine for copy channels. `request` is the [`COPY_ENGINE_ENV`] value:
/// `None`/`"auto"` → the async (non-GRCE) LCE with the most PCEs (lowest index on ties),
/// or the GRCE when none is known; `"grce"` → GRCE; `"<n>"` → LCE n when the GPU lists it.
pub fn select_copy_engine(
    engines: &[CopyEngineInfo],
    request: Option<&str>,
) -> Result<CopyEngineChoice> {
    match request.map(str::trim) {
        None | Some("") | Some("auto") => Ok(engines
            .iter()
            .filter(|e| !e.is_grce() && (e.pce_mask != 0 || e.caps[0] != 0))
            .fold(None::<&CopyEngineInfo>, |best, e| match best {
                Some(b) if b.pce_count() >= e.pce_count() => Some(b),
                _ => Some(e),
            })
            .map_or(CopyEngineChoice::Grce, |e| {
                CopyEngineChoice::Lce(e.engine_type)
            })),
        Some("grce") => Ok(CopyEngineChoice::Grce),
        Some(n) => {
            let idx: u32 = n.parse().map_err(|_| {
                Error::invalid(format!(
                    "{COPY_ENGINE_ENV}={n:?}: expected \"auto\", \"grce\" or an LCE index"
                ))
            })?;
            engines
                .iter()
                .find(|e| e.index == idx)
                .map(|e| CopyEngineChoice::Lce(e.engine_type))
                .ok_or_else(|| {
                    Error::new(
                        Status::NotFound,
                        format!(
                            "{COPY_ENGINE_ENV}={idx}: the GPU lists LCEs {:?}",
                            engines.iter().map(|e| e.index).collect::<Vec<_>>()
                        ),
                    )
                })
        }
    }
}

/// What a copy channel on `choice` runs on, in words: `LCE4 (12 PCEs, PCE mask 0xfff)`,
/// `GRCE (the GR copy engine)`.
pub fn describe_copy_engine(engines: &[CopyEngineInfo], choice: CopyEngineChoice) -> String {
    match choice {
        CopyEngineChoice::Grce => "GRCE (the GR copy engine)".to_string(),
        CopyEngineChoice::Lce(t) => match engines.iter().find(|e| e.engine_type == t) {
            Some(e) => format!(
                "LCE{} ({} PCEs, PCE mask {:#x}{})",
                e.index,
                e.pce_count(),
                e.pce_mask,
                if e.is_grce() { ", a GRCE" } else { "" }
            ),
            None => match NV2080_ENGINE_TYPE_COPY_IDX(t) {
                Some(i) => format!("LCE{i} (engine type {t:#x}; not in the driver's list)"),
                None => format!("engine type {t:#x}"),
            },
        },
    }
}

/// The engine a copy channel asked for as `request` goes to, and whether a channel the driver
/// refuses there may fall back to the GR copy engine (only for `Auto`). `env` is the
/// [`COPY_ENGINE_ENV`] value, which only `Auto` consults. `Lce(n)` must be an LCE the driver
/// lists (any `NV2080_ENGINE_TYPE_COPY(n)` when the list could not be read).
pub fn resolve_copy_engine(
    engines: &[CopyEngineInfo],
    request: crate::backend::CopyEngine,
    env: Option<&str>,
) -> Result<(CopyEngineChoice, bool)> {
    use crate::backend::CopyEngine;
    match request {
        CopyEngine::Auto => Ok((select_copy_engine(engines, env)?, true)),
        CopyEngine::Grce => Ok((CopyEngineChoice::Grce, false)),
        CopyEngine::Lce(n) => {
            if let Some(e) = engines.iter().find(|e| e.index == n) {
                return Ok((CopyEngineChoice::Lce(e.engine_type), false));
            }
            match NV2080_ENGINE_TYPE_COPY(n) {
                Some(t) if engines.is_empty() => Ok((CopyEngineChoice::Lce(t), false)),
                _ => Err(Error::new(
                    Status::NotFound,
                    format!(
                        "tg_queue_create: copy engine LCE{n}: the GPU lists LCEs {:?}",
                        engines.iter().map(|e| e.index).collect::<Vec<_>>()
                    ),
                )),
            }
        }
    }
}
