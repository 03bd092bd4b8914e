//! Copy-engine selection and the copy-engine control ABI of the RM backend.
//!
//! Expected numbers come from NVIDIA's open-gpu-kernel-modules headers (`cl2080.h` engine
//! types, `ctrl2080gpu.h` GET_ENGINES_V2, `ctrl2080ce.h` CE caps / PCE mask, `clb0b5sw.h`) and
//! from the copy-engine table read on an H200 (580.159.04): LCE0 GRCE caps e3 PCEs 0x5000,
//! LCE1 GRCE caps e3 PCEs 0xa000, LCE2 caps e2 PCEs 0x5000, LCE3 caps e2 PCEs 0xa000, LCE4
//! caps e0 PCEs 0xfff.

use std::mem::{offset_of, size_of};
use tegragpu::backend::rm::{select_copy_engine, CopyEngineChoice, CopyEngineInfo};
use tegragpu::sys::rm::*;
use tegragpu::Status;

#[test]
fn copy_engine_control_numbers_and_layouts() {
    assert_eq!(NV2080_CTRL_CMD_GPU_GET_ENGINES_V2, 0x2080_0170);
    assert_eq!(NV2080_CTRL_CMD_CE_GET_CE_PCE_MASK, 0x2080_2a02);
    assert_eq!(NV2080_CTRL_CMD_CE_GET_CAPS_V2, 0x2080_2a03);
    assert_eq!(
        size_of::<NV2080_CTRL_GPU_GET_ENGINES_V2_PARAMS>(),
        4 + 4 * 0x54
    );
    assert_eq!(
        offset_of!(NV2080_CTRL_GPU_GET_ENGINES_V2_PARAMS, engineList),
        4
    );
    assert_eq!(size_of::<NV2080_CTRL_CE_GET_CAPS_V2_PARAMS>(), 8);
    assert_eq!(offset_of!(NV2080_CTRL_CE_GET_CAPS_V2_PARAMS, capsTbl), 4);
    assert_eq!(size_of::<NV2080_CTRL_CE_GET_CE_PCE_MASK_PARAMS>(), 8);
    assert_eq!(
        offset_of!(NV2080_CTRL_CE_GET_CE_PCE_MASK_PARAMS, pceMask),
        4
    );
    assert_eq!(size_of::<NVB0B5_ALLOCATION_PARAMETERS>(), 8);
    assert_eq!(offset_of!(NVB0B5_ALLOCATION_PARAMETERS, engineType), 4);
    assert_eq!(NV2080_CTRL_CE_CAPS_CE_GRCE, 0x01);
    assert_eq!(NV2080_CTRL_CE_CAPS_CE_SHARED, 0x02);
}

#[test]
fn copy_engine_types() {
    assert_eq!(NV2080_ENGINE_TYPE_COPY(0), Some(0x09));
    assert_eq!(NV2080_ENGINE_TYPE_COPY(4), Some(0x0d));
    assert_eq!(NV2080_ENGINE_TYPE_COPY(9), Some(0x12));
    assert_eq!(NV2080_ENGINE_TYPE_COPY(10), None);
    assert_eq!(NV2080_ENGINE_TYPE_COPY_IDX(0x0d), Some(4));
    assert_eq!(NV2080_ENGINE_TYPE_COPY_IDX(0x13), None); // NVDEC0
    assert_eq!(
        NV2080_ENGINE_TYPE_COPY_IDX(NV2080_ENGINE_TYPE_GRAPHICS),
        None
    );
}

fn h200() -> Vec<CopyEngineInfo> {
    [
        (0, [0xe3, 3], 0x5000),
        (1, [0xe3, 3], 0xa000),
        (2, [0xe2, 3], 0x5000),
        (3, [0xe2, 3], 0xa000),
        (4, [0xe0, 3], 0xfff),
    ]
    .iter()
    .map(|&(i, caps, pce_mask)| CopyEngineInfo {
        index: i,
        engine_type: 9 + i,
        caps,
        pce_mask,
    })
    .collect()
}

#[test]
fn auto_picks_the_async_lce_with_most_pces() {
    let e = h200();
    assert!(e[0].is_grce() && e[1].is_grce() && !e[4].is_grce());
    assert_eq!(e[4].pce_count(), 12);
    assert_eq!(
        select_copy_engine(&e, None).unwrap(),
        CopyEngineChoice::Lce(0x0d)
    );
    assert_eq!(
        select_copy_engine(&e, Some("auto")).unwrap(),
        CopyEngineChoice::Lce(0x0d)
    );
    // Ties go to the lowest index: without LCE4, LCE2 and LCE3 both have 2 PCEs.
    assert_eq!(
        select_copy_engine(&e[..4], None).unwrap(),
        CopyEngineChoice::Lce(0x0b)
    );
    // Only GR copy engines, or nothing known: the GR copy engine.
    assert_eq!(
        select_copy_engine(&e[..2], None).unwrap(),
        CopyEngineChoice::Grce
    );
    assert_eq!(
        select_copy_engine(&[], None).unwrap(),
        CopyEngineChoice::Grce
    );
}

#[test]
fn explicit_copy_engine_requests() {
    let e = h200();
    assert_eq!(
        select_copy_engine(&e, Some("grce")).unwrap(),
        CopyEngineChoice::Grce
    );
    assert_eq!(
        select_copy_engine(&e, Some("3")).unwrap(),
        CopyEngineChoice::Lce(0x0c)
    );
    assert_eq!(
        select_copy_engine(&e, Some("7")).unwrap_err().status,
        Status::NotFound
    );
    assert_eq!(
        select_copy_engine(&e, Some("fast")).unwrap_err().status,
        Status::InvalidArgument
    );
}

#[test]
fn copy_engine_requests_resolve_without_fallback_when_explicit() {
    use tegragpu::backend::rm::{describe_copy_engine, resolve_copy_engine};
    use tegragpu::backend::CopyEngine;
    let e = h200();
    let r = |req, env| resolve_copy_engine(&e, req, env);
    // Auto: the environment variable or the LCE with most PCEs; a refused channel may fall back.
    assert_eq!(
        r(CopyEngine::Auto, None).unwrap(),
        (CopyEngineChoice::Lce(0x0d), true)
    );
    assert_eq!(
        r(CopyEngine::Auto, Some("2")).unwrap(),
        (CopyEngineChoice::Lce(0x0b), true)
    );
    // An explicit engine ignores the variable and never falls back.
    assert_eq!(
        r(CopyEngine::Lce(2), Some("grce")).unwrap(),
        (CopyEngineChoice::Lce(0x0b), false)
    );
    assert_eq!(
        r(CopyEngine::Grce, Some("4")).unwrap(),
        (CopyEngineChoice::Grce, false)
    );
    let err = r(CopyEngine::Lce(7), None).unwrap_err();
    assert_eq!(err.status, Status::NotFound);
    assert!(
        err.message.contains("LCE7") && err.message.contains("[0, 1, 2, 3, 4]"),
        "{err}"
    );
    // No list (the query failed): any LCE index the engine types have.
    assert_eq!(
        resolve_copy_engine(&[], CopyEngine::Lce(3), None).unwrap(),
        (CopyEngineChoice::Lce(0x0c), false)
    );
    assert!(resolve_copy_engine(&[], CopyEngine::Lce(10), None).is_err());

    assert_eq!(
        describe_copy_engine(&e, CopyEngineChoice::Lce(0x0d)),
        "LCE4 (12 PCEs, PCE mask 0xfff)"
    );
    assert_eq!(
        describe_copy_engine(&e, CopyEngineChoice::Lce(0x09)),
        "LCE0 (2 PCEs, PCE mask 0x5000, a GRCE)"
    );
    assert!(describe_copy_engine(&e, CopyEngineChoice::Grce).starts_with("GRCE"));
    assert_eq!(
        describe_copy_engine(&[], CopyEngineChoice::Lce(0x0c)),
        "LCE3 (engine type 0xc; not in the driver's list)"
    );
}
