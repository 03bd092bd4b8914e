//! Experiment knobs (temporary; read once per process from TEGRAGPU_EXP_* variables).
use std::sync::OnceLock;

fn read(name: &str) -> Option<u32> {
    let v = std::env::var(name).ok()?;
    let v = v.trim();
    if let Some(h) = v.strip_prefix("0x") {
        u32::from_str_radix(h, 16).ok()
    } else {
        v.parse().ok()
    }
}

macro_rules! knob {
    ($f:ident, $name:literal) => {
        pub(crate) fn $f() -> Option<u32> {
            static V: OnceLock<Option<u32>> = OnceLock::new();
            *V.get_or_init(|| read($name))
        }
    };
}
knob!(invalidate, "TEGRAGPU_EXP_INVALIDATE");
knob!(cb_invalidate, "TEGRAGPU_EXP_CB_INVALIDATE");
knob!(kick, "TEGRAGPU_EXP_KICK");
knob!(tl_wfi, "TEGRAGPU_EXP_TL_WFI");
knob!(sig_ts, "TEGRAGPU_EXP_SIG_TS");
knob!(copy_bpsm, "TEGRAGPU_EXP_COPY_BPSM");
