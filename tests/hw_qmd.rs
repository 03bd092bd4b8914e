//! QMD encoder tests. Every expected position below is written from the reference tables
//! (gpu-programming-interface.md §4.1/§4.3/§4.4, rm-kernel-interface.md §4.2 and the NVIDIA QMD
//! headers clc7c0qmd.h / clcbc0qmd.h / clcdc0qmd.h), not from the encoder's constants. Each test
//! builds the whole expected QMD from those positions and compares it with the encoder's output,
//! so stray bits fail too.

use tegragpu::hw::arch::{self, QmdVersion};
use tegragpu::hw::qmd::{self, LaunchDesc, QmdRelease, SmemConfig};
use tegragpu::Status;

#[path = "hw_qmd/template.rs"]
mod template;

/// Set MW(hi:lo) in an expected QMD (the test's own independent setter).
fn mw(q: &mut [u32], hi: u32, lo: u32, v: u64) {
    for b in lo..=hi {
        let bit = (v >> (b - lo)) & 1;
        let (dw, sh) = ((b / 32) as usize, b % 32);
        q[dw] = (q[dw] & !(1 << sh)) | ((bit as u32) << sh);
    }
}

/// Read MW(hi:lo).
fn get(q: &[u32], hi: u32, lo: u32) -> u64 {
    let mut v = 0u64;
    for b in lo..=hi {
        v |= u64::from((q[(b / 32) as usize] >> (b % 32)) & 1) << (b - lo);
    }
    v
}

const PROG: u64 = 0x1_AB12_3456_7800; // < 2^49, 256-aligned
const CB0: u64 = 0x1_2345_6700; // 256-aligned
const CB3: u64 = 0xDEAD_BE40; // 64-aligned, not 256-aligned
const REL: u64 = 0xAB_CDEF_0010; // 16-aligned, < 2^40
const NEXT_QMD: u64 = 0x12_3456_7800;

fn desc() -> LaunchDesc {
    let mut cbanks = [None; 8];
    cbanks[0] = Some((CB0, 0x170));
    cbanks[3] = Some((CB3, 0x1000));
    LaunchDesc {
        program_va: PROG,
        program_prefetch_bytes: 0x4500,
        grid: [0x12345, 0x234, 0x56],
        block: [32, 4, 2],
        register_count: 0xAB,
        barrier_count: 5,
        shared_memory_bytes: 0x2_5400,
        smem_config: SmemConfig {
            min: 9,
            max: 0x1A,
            target: 0x11,
        },
        local_memory_per_thread: 0xAB_CDE0,
        cbanks,
        cbank_invalidate_mask: 1,
        release: Some(QmdRelease {
            va: REL,
            payload: 0x1122_3344_5566_7788,
            payload64: true,
            timestamp: true,
            membar_sys: true,
        }),
        dependent_qmd: Some(NEXT_QMD),
        invalidate_caches: qmd::INVALIDATE_TINYGRAD,
        sass_version: 0x87,
        cwd_membar_sysmembar: true,
        cwd_membar_gpu: false,
    }
}

#[test]
fn v03_every_field_at_its_reference_position() {
    let d = desc();
    let mut q = [0xFFFF_FFFFu32; 64];
    qmd::encode_v03(&d, &mut q).unwrap();

    let mut e = [0u32; 64];
    mw(&mut e, 133, 128, 0x3F); // QMD_GROUP_ID
    mw(&mut e, 134, 134, 1); // SM_GLOBAL_CACHING_ENABLE
    for b in 186..=189 {
        mw(&mut e, b, b, 1); // tex header, sampler, data, shader data invalidates
    }
    mw(&mut e, 287, 256, (PROG >> 8) & 0xFFFF_FFFF); // PROGRAM_PREFETCH_ADDR_LOWER_SHIFTED
    mw(&mut e, 369, 368, 1); // CWD_MEMBAR_TYPE L1_SYSMEMBAR
    mw(&mut e, 378, 378, 1); // API_VISIBLE_CALL_LIMIT NO_CHECK
    mw(&mut e, 382, 382, 1); // SAMPLER_INDEX (tinygrad)
    mw(&mut e, 415, 384, 0x12345); // CTA_RASTER_WIDTH
    mw(&mut e, 431, 416, 0x234); // HEIGHT
    mw(&mut e, 463, 448, 0x56); // DEPTH
    mw(&mut e, 511, 480, NEXT_QMD >> 8); // DEPENDENT_QMD0_POINTER
    mw(&mut e, 512, 512, 1); // DEPENDENT_QMD0_ENABLE
    mw(&mut e, 515, 513, 1); // ACTION SCHEDULE
    mw(&mut e, 516, 516, 1); // PREFETCH
    mw(&mut e, 561, 544, 0x2_5400); // SHARED_MEMORY_SIZE
    mw(&mut e, 567, 562, 9); // MIN_SM_CONFIG
    mw(&mut e, 574, 569, 0x1A); // MAX_SM_CONFIG
    mw(&mut e, 579, 576, 0); // QMD_VERSION (minor) 0
    mw(&mut e, 583, 580, 3); // QMD_MAJOR_VERSION 3
    mw(&mut e, 607, 592, 32); // CTA_THREAD_DIMENSION0
    mw(&mut e, 623, 608, 4);
    mw(&mut e, 639, 624, 2);
    mw(&mut e, 640, 640, 1); // CONSTANT_BUFFER_VALID(0)
    mw(&mut e, 643, 643, 1); // CONSTANT_BUFFER_VALID(3)
    mw(&mut e, 656, 648, 0xAB); // REGISTER_COUNT_V
    mw(&mut e, 662, 657, 0x11); // TARGET_SM_CONFIG
    mw(&mut e, 767, 763, 5); // BARRIER_COUNT
    mw(&mut e, 799, 768, REL & 0xFFFF_FFFF); // RELEASE0_ADDRESS_LOWER
    mw(&mut e, 807, 800, REL >> 32); // RELEASE0_ADDRESS_UPPER
    mw(&mut e, 819, 819, 1); // RELEASE0_MEMBAR_TYPE FE_SYSMEMBAR
    mw(&mut e, 823, 823, 1); // RELEASE0_ENABLE
    mw(&mut e, 829, 829, 1); // RELEASE0_PAYLOAD64B
    mw(&mut e, 831, 830, 0); // RELEASE0_STRUCTURE_SIZE FOUR_WORDS
    mw(&mut e, 863, 832, 0x5566_7788); // RELEASE0_PAYLOAD_LOWER
    mw(&mut e, 895, 864, 0x1122_3344); // RELEASE0_PAYLOAD_UPPER
    mw(&mut e, 1055, 1024, CB0 & 0xFFFF_FFFF); // CONSTANT_BUFFER_ADDR_LOWER(0)
    mw(&mut e, 1072, 1056, CB0 >> 32); // CONSTANT_BUFFER_ADDR_UPPER(0)
    mw(&mut e, 1074, 1074, 1); // CONSTANT_BUFFER_INVALIDATE(0)
    mw(&mut e, 1087, 1075, 0x170 >> 4); // CONSTANT_BUFFER_SIZE_SHIFTED4(0)
    mw(&mut e, 1055 + 192, 1024 + 192, CB3); // cbank 3 address lower
    mw(&mut e, 1087 + 192, 1075 + 192, 0x1000 >> 4); // cbank 3 size
    mw(&mut e, 1567, 1536, PROG & 0xFFFF_FFFF); // PROGRAM_ADDRESS_LOWER
    mw(&mut e, 1584, 1568, PROG >> 32); // PROGRAM_ADDRESS_UPPER
    mw(&mut e, 1623, 1600, 0xAB_CDE0); // SHADER_LOCAL_MEMORY_HIGH_SIZE
    mw(&mut e, 1640, 1632, PROG >> 40); // PROGRAM_PREFETCH_ADDR_UPPER_SHIFTED
    mw(&mut e, 1649, 1641, 0x45); // PROGRAM_PREFETCH_SIZE
    mw(&mut e, 1663, 1656, 0x87); // SASS_VERSION
    assert_eq!(q, e, "V03 QMD differs from the reference layout");

    // Direct dword checks from the §4.1 "dword[bits]" column.
    assert_eq!(q[12], 0x12345, "CTA_RASTER_WIDTH is dw12");
    assert_eq!(q[13] & 0xFFFF, 0x234);
    assert_eq!(q[14] & 0xFFFF, 0x56);
    assert_eq!((q[18] >> 4) & 0xF, 3, "QMD_MAJOR_VERSION dw18[7:4] = 3");
    assert_eq!(q[18] & 0xF, 0, "QMD_VERSION (minor) dw18[3:0] = 0");
    assert_eq!(q[18] >> 16, 32, "CTA_THREAD_DIMENSION0 dw18[31:16]");
    assert_eq!(
        q[4] & 0x7F,
        0x7F,
        "QMD_GROUP_ID 0x3f and SM_GLOBAL_CACHING_ENABLE"
    );
    assert_eq!(
        q[8], 0x01AB_1234_5678u64 as u32,
        "PROGRAM_PREFETCH_ADDR_LOWER_SHIFTED = prog >> 8"
    );
    assert_eq!(q[48], 0x3456_7800, "PROGRAM_ADDRESS_LOWER dw48");
    assert_eq!(q[49], 0x1AB12, "PROGRAM_ADDRESS_UPPER dw49[16:0]");
    assert_eq!(q[32], 0x2345_6700, "cbank0 address lower dw32");
    assert_eq!(q[33] >> 19, 0x17, "cbank0 size >> 4 in dw33[31:19]");
    assert_eq!(
        q[20] & 0xFF,
        0b1001,
        "CONSTANT_BUFFER_VALID(0) and (3) in dw20"
    );
    assert_eq!(q[51] >> 24, 0x87, "SASS_VERSION dw51[31:24]");
    assert_eq!(q[15], 0x1234_5678, "DEPENDENT_QMD0_POINTER dw15");
}

#[test]
fn v04_every_field_at_its_reference_position() {
    let d = LaunchDesc {
        sass_version: 0x90,
        ..desc()
    };
    let mut q = [0xFFFF_FFFFu32; 96];
    qmd::encode_v04(&d, &mut q).unwrap();

    let mut e = [0u32; 96];
    mw(&mut e, 25, 23, 2); // QMD_TYPE GRID_CTA
    mw(&mut e, 320, 320, 1); // RELEASE_ENABLE(0)
    mw(&mut e, 322, 321, 0); // RELEASE_STRUCTURE_SIZE(0) FOUR_WORDS
    mw(&mut e, 323, 323, 1); // RELEASE_MEMBAR_TYPE(0)
    mw(&mut e, 332, 332, 1); // RELEASE_PAYLOAD64B(0)
    mw(&mut e, 368, 368, 1); // DEPENDENT_QMD_ENABLE(0)
    mw(&mut e, 371, 369, 1); // DEPENDENT_QMD_ACTION(0)
    mw(&mut e, 372, 372, 1); // DEPENDENT_QMD_PREFETCH(0)
    mw(&mut e, 416, 416, 1); // CONSTANT_BUFFER_VALID(0)
    mw(&mut e, 419, 419, 1); // CONSTANT_BUFFER_INVALIDATE(0)
    mw(&mut e, 416 + 12, 416 + 12, 1); // CONSTANT_BUFFER_VALID(3)
    mw(&mut e, 479, 448, NEXT_QMD >> 8); // DEPENDENT_QMD0_POINTER
    mw(&mut e, 543, 536, 0x90); // SASS_VERSION
    mw(&mut e, 567, 544, 0xAB_CDE0); // SHADER_LOCAL_MEMORY_HIGH_SIZE
    mw(&mut e, 568, 568, 1); // API_VISIBLE_CALL_LIMIT
    mw(&mut e, 569, 569, 1); // SAMPLER_INDEX VIA_HEADER_INDEX (texture objects)
    mw(&mut e, 583, 580, 4); // QMD_MAJOR_VERSION
    mw(&mut e, 601, 584, 0x2_5400); // SHARED_MEMORY_SIZE
    for b in 602..=605 {
        mw(&mut e, b, b, 1);
    }
    mw(&mut e, 613, 608, 9); // MIN
    mw(&mut e, 619, 614, 0x1A); // MAX
    mw(&mut e, 625, 620, 0x11); // TARGET
    mw(&mut e, 671, 640, REL & 0xFFFF_FFFF); // RELEASE_SEMAPHORE0_ADDR_LOWER
    mw(&mut e, 696, 672, REL >> 32);
    mw(&mut e, 735, 704, 0x5566_7788);
    mw(&mut e, 767, 736, 0x1122_3344);
    mw(&mut e, 1055, 1024, 0x12345); // GRID_WIDTH
    mw(&mut e, 1071, 1056, 0x234);
    mw(&mut e, 1103, 1088, 0x56);
    mw(&mut e, 1137, 1136, 1); // CWD_MEMBAR_TYPE
    mw(&mut e, 1167, 1152, 32); // CTA_THREAD_DIMENSION0
    mw(&mut e, 1183, 1168, 4);
    mw(&mut e, 1199, 1184, 2);
    mw(&mut e, 1208, 1200, 0xAB); // REGISTER_COUNT
    mw(&mut e, 1215, 1211, 5); // BARRIER_COUNT
    mw(&mut e, 1247, 1216, PROG & 0xFFFF_FFFF); // PROGRAM_ADDRESS_LOWER
    mw(&mut e, 1272, 1248, PROG >> 32); // PROGRAM_ADDRESS_UPPER
    mw(&mut e, 1375, 1344, (PROG >> 8) & 0xFFFF_FFFF); // PROGRAM_PREFETCH_ADDR_LOWER_SHIFTED
    mw(&mut e, 1392, 1376, PROG >> 40); // PROGRAM_PREFETCH_ADDR_UPPER_SHIFTED
    mw(&mut e, 1401, 1393, 0x45); // PROGRAM_PREFETCH_SIZE
    mw(&mut e, 1567, 1536, (CB0 >> 6) & 0xFFFF_FFFF); // CONSTANT_BUFFER_ADDR_LOWER_SHIFTED6(0)
    mw(&mut e, 1586, 1568, CB0 >> 38); // UPPER_SHIFTED6(0)
    mw(&mut e, 1599, 1587, 0x170 >> 4); // SIZE_SHIFTED4(0)
    mw(&mut e, 1567 + 192, 1536 + 192, CB3 >> 6);
    mw(&mut e, 1599 + 192, 1587 + 192, 0x1000 >> 4);
    assert_eq!(q, e, "V04 QMD differs from the reference layout");

    assert_eq!((q[0] >> 23) & 7, 2, "QMD_TYPE dw0[25:23] = GRID_CTA");
    assert_eq!((q[18] >> 4) & 0xF, 4, "QMD_MAJOR_VERSION dw18[7:4] = 4");
    assert_eq!(q[32], 0x12345, "GRID_WIDTH dw32");
    assert_eq!(q[36] & 0xFFFF, 32, "CTA_THREAD_DIMENSION0 dw36");
    assert_eq!(q[38], 0x3456_7800, "PROGRAM_ADDRESS_LOWER dw38");
    assert_eq!(q[39], 0x1AB12, "PROGRAM_ADDRESS_UPPER dw39");
    assert_eq!(q[48], (CB0 >> 6) as u32, "cbank0 address >> 6 at dw48");
    assert_eq!(
        q[48 + 2 * 3],
        (CB3 >> 6) as u32,
        "cbank3 address >> 6 at dw48+2*3"
    );
    assert_eq!(get(&q, 134, 134), 0, "V04 has no SM_GLOBAL_CACHING_ENABLE");
}

#[test]
fn v05_every_field_at_its_reference_position() {
    // V05's local size field is 16 bits of bytes >> 4 (at most 1 MiB - 16).
    let d = LaunchDesc {
        sass_version: 0xA0,
        local_memory_per_thread: 0xA_BCD0,
        ..desc()
    };
    let mut q = [0xFFFF_FFFFu32; 96];
    qmd::encode_v05(&d, &mut q).unwrap();

    let mut e = [0u32; 96];
    mw(&mut e, 149, 144, 0x3F); // QMD_GROUP_ID
    mw(&mut e, 153, 151, 2); // QMD_TYPE GRID_CTA
    mw(&mut e, 288, 288, 1); // RELEASE_ENABLE(0)
    mw(&mut e, 291, 291, 1); // RELEASE_MEMBAR_TYPE(0)
    mw(&mut e, 300, 300, 1); // RELEASE_PAYLOAD64B(0)
    mw(&mut e, 336, 336, 1); // DEPENDENT_QMD0_ENABLE
    mw(&mut e, 339, 337, 1); // ACTION
    mw(&mut e, 340, 340, 1); // PREFETCH
    mw(&mut e, 415, 384, NEXT_QMD >> 8); // DEPENDENT_QMD0_POINTER
    mw(&mut e, 455, 448, 0xA0); // SASS_VERSION
    mw(&mut e, 456, 456, 1); // API_VISIBLE_CALL_LIMIT
    mw(&mut e, 457, 457, 1); // SAMPLER_INDEX (tinygrad; CUDA's captured V05 has it too)
    mw(&mut e, 471, 468, 5); // QMD_MAJOR_VERSION
    for b in 472..=475 {
        mw(&mut e, b, b, 1);
    }
    mw(&mut e, 511, 480, REL & 0xFFFF_FFFF);
    mw(&mut e, 536, 512, REL >> 32);
    mw(&mut e, 575, 544, 0x5566_7788);
    mw(&mut e, 607, 576, 0x1122_3344);
    mw(&mut e, 625, 624, 1); // CWD_MEMBAR_TYPE
    mw(&mut e, 1055, 1024, (PROG >> 4) & 0xFFFF_FFFF); // PROGRAM_ADDRESS_LOWER_SHIFTED4
    mw(&mut e, 1076, 1056, PROG >> 36); // PROGRAM_ADDRESS_UPPER_SHIFTED4
    mw(&mut e, 1085, 1077, 0x45); // PROGRAM_PREFETCH_SIZE
    mw(&mut e, 1103, 1088, 32);
    mw(&mut e, 1119, 1104, 4);
    mw(&mut e, 1127, 1120, 2); // CTA_THREAD_DIMENSION2 (8 bits)
    mw(&mut e, 1136, 1128, 0xAB);
    mw(&mut e, 1141, 1137, 5);
    mw(&mut e, 1162, 1152, 0x2_5400 >> 7); // SHARED_MEMORY_SIZE_SHIFTED7
    mw(&mut e, 1168, 1163, 9);
    mw(&mut e, 1174, 1169, 0x1A);
    mw(&mut e, 1180, 1175, 0x11);
    mw(&mut e, 1215, 1200, 0xA_BCD0 >> 4); // SHADER_LOCAL_MEMORY_HIGH_SIZE_SHIFTED4
    mw(&mut e, 1279, 1248, 0x12345); // GRID_WIDTH (dw39)
    mw(&mut e, 1295, 1280, 0x234);
    mw(&mut e, 1327, 1312, 0x56);
    mw(&mut e, 1375, 1344, (CB0 >> 6) & 0xFFFF_FFFF); // cbank0 (dw42)
    mw(&mut e, 1394, 1376, CB0 >> 38);
    mw(&mut e, 1407, 1395, 0x170 >> 4);
    mw(&mut e, 1375 + 192, 1344 + 192, CB3 >> 6);
    mw(&mut e, 1407 + 192, 1395 + 192, 0x1000 >> 4);
    mw(&mut e, 1856, 1856, 1); // CONSTANT_BUFFER_VALID(0)
    mw(&mut e, 1859, 1859, 1); // CONSTANT_BUFFER_INVALIDATE(0)
    mw(&mut e, 1856 + 12, 1856 + 12, 1); // CONSTANT_BUFFER_VALID(3)
    mw(&mut e, 1919, 1888, (PROG >> 8) & 0xFFFF_FFFF); // PROGRAM_PREFETCH_ADDR_LOWER_SHIFTED
    mw(&mut e, 1936, 1920, PROG >> 40);
    assert_eq!(q, e, "V05 QMD differs from the reference layout");
    assert_eq!(q[39], 0x12345, "GRID_WIDTH at dw39");
    assert_eq!(
        q[32],
        (PROG >> 4) as u32,
        "PROGRAM_ADDRESS_LOWER_SHIFTED4 at dw32"
    );
    assert_eq!(q[42], (CB0 >> 6) as u32, "cbank0 >> 6 at dw42");
    let mut q2 = [0u32; 96];
    let too_big = LaunchDesc {
        local_memory_per_thread: 0x10_0000,
        ..d
    };
    expect_launch_err(qmd::encode_v05(&too_big, &mut q2), "V05 16-bit local size");
}

#[test]
fn release_structure_sizes() {
    // Two-word (64-bit, no timestamp) and one-word releases; STRUCTURE_SIZE enum from the headers:
    // FOUR_WORDS 0, ONE_WORD 1, TWO_WORDS 2.
    let mut d = LaunchDesc {
        program_va: 0x1000,
        ..LaunchDesc::default()
    };
    d.release = Some(QmdRelease::new(0x2008, 7));
    let mut q = [0u32; 64];
    qmd::encode_v03(&d, &mut q).unwrap();
    assert_eq!(get(&q, 831, 830), 2);
    assert_eq!(get(&q, 829, 829), 1);
    d.release = Some(QmdRelease {
        va: 0x2004,
        payload: 7,
        payload64: false,
        timestamp: false,
        membar_sys: false,
    });
    qmd::encode_v03(&d, &mut q).unwrap();
    assert_eq!(get(&q, 831, 830), 1);
    assert_eq!(get(&q, 829, 829), 0);
    assert_eq!(get(&q, 819, 819), 0);
    let mut q4 = [0u32; 96];
    qmd::encode_v04(&d, &mut q4).unwrap();
    assert_eq!(
        get(&q4, 322, 321),
        1,
        "V04 one-word release (the H200-verified form)"
    );
}

/// Release slot 1 as a patch of a QMD already in memory (a signal after a launch): applied to
/// a QMD whose control dword holds other bits, it equals that QMD with slot 1 set at the
/// headers' positions (V03 RELEASE1_* at 896..1023; V04 RELEASE_*(1) at 320 + 16 and
/// RELEASE_SEMAPHORE1_* at 768..895; V05 RELEASE_*(1) at 288 + 16, RELEASE_SEMAPHORE1_* at
/// 768..895), with nothing else changed.
#[test]
fn release_slot_1_patch() {
    let va: u64 = 0xAB_CDEF_0120;
    let payload: u64 = 0x1122_3344_5566_7788;
    let r = QmdRelease {
        va,
        payload,
        payload64: true,
        timestamp: true,
        membar_sys: true,
    };
    // Slot 1's positions in each version's header.
    struct Slot1 {
        v: QmdVersion,
        n: usize,
        en: u32,
        st: (u32, u32),
        mb: u32,
        p64: u32,
        alo: u32,
        ahi: (u32, u32),
        plo: u32,
    }
    let cases = [
        Slot1 {
            v: QmdVersion::V03,
            n: 64,
            en: 951,
            st: (959, 958),
            mb: 947,
            p64: 957,
            alo: 896,
            ahi: (935, 928),
            plo: 960,
        },
        Slot1 {
            v: QmdVersion::V04,
            n: 96,
            en: 336,
            st: (338, 337),
            mb: 339,
            p64: 348,
            alo: 768,
            ahi: (824, 800),
            plo: 832,
        },
        Slot1 {
            v: QmdVersion::V05,
            n: 96,
            en: 304,
            st: (306, 305),
            mb: 307,
            p64: 316,
            alo: 768,
            ahi: (824, 800),
            plo: 832,
        },
    ];
    for c in cases {
        let Slot1 {
            v,
            n,
            en,
            st,
            mb,
            p64,
            alo,
            ahi,
            plo,
        } = c;
        // A QMD with every bit of the control dword set except slot 1's own fields.
        let mut before = [0u32; 96];
        let ctl = (en / 32) as usize;
        before[ctl] = u32::MAX;
        for (hi, lo) in [(en, en), st, (mb, mb), (p64, p64)] {
            mw(&mut before, hi, lo, 0);
        }
        if v == QmdVersion::V03 {
            mw(&mut before, ahi.0, ahi.1, 0);
        }
        let mut expect = before;
        mw(&mut expect, en, en, 1);
        mw(&mut expect, st.0, st.1, 0); // FOUR_WORDS: payload + timestamp
        mw(&mut expect, mb, mb, 1);
        mw(&mut expect, p64, p64, 1);
        mw(&mut expect, alo + 31, alo, va & 0xffff_ffff);
        mw(&mut expect, ahi.0, ahi.1, va >> 32);
        mw(&mut expect, plo + 31, plo, payload & 0xffff_ffff);
        mw(&mut expect, plo + 63, plo + 32, payload >> 32);
        let p = qmd::release1_patch(v, &r).unwrap();
        assert_eq!(p.ctl, ctl, "{v:?}");
        assert_eq!(qmd::release1_ctl_dword(v), ctl, "{v:?}");
        let mut got = before;
        for &(d, w) in &p.words[..p.len] {
            got[d] = if d == p.ctl { w | before[d] } else { w };
        }
        assert_eq!(got[..n], expect[..n], "{v:?}");
    }
    // A timestamped release needs 16-byte alignment.
    let bad = QmdRelease { va: va + 8, ..r };
    assert!(qmd::release1_patch(QmdVersion::V04, &bad).is_err());
}

fn expect_launch_err(r: tegragpu::Result<()>, what: &str) {
    match r {
        Err(e) => assert_eq!(e.status, Status::InvalidLaunch, "{what}: {e:?}"),
        Ok(()) => panic!("{what}: expected InvalidLaunch"),
    }
}

#[test]
fn range_checks() {
    let ok = LaunchDesc {
        program_va: 0x1000,
        ..LaunchDesc::default()
    };
    let mut q3 = [0u32; 64];
    let mut q4 = [0u32; 96];
    qmd::encode_v03(&ok, &mut q3).unwrap();
    expect_launch_err(
        qmd::encode_v03(
            &LaunchDesc {
                grid: [1, 0x1_0000, 1],
                ..ok
            },
            &mut q3,
        ),
        "grid y 16-bit",
    );
    expect_launch_err(
        qmd::encode_v03(
            &LaunchDesc {
                grid: [1, 1, 0x1_0000],
                ..ok
            },
            &mut q3,
        ),
        "grid z 16-bit",
    );
    expect_launch_err(
        qmd::encode_v03(
            &LaunchDesc {
                grid: [0, 1, 1],
                ..ok
            },
            &mut q3,
        ),
        "grid x 0",
    );
    expect_launch_err(
        qmd::encode_v03(
            &LaunchDesc {
                block: [1024, 2, 1],
                ..ok
            },
            &mut q3,
        ),
        "block > 1024 threads",
    );
    expect_launch_err(
        qmd::encode_v03(
            &LaunchDesc {
                block: [1, 1, 0],
                ..ok
            },
            &mut q3,
        ),
        "block z 0",
    );
    expect_launch_err(
        qmd::encode_v03(
            &LaunchDesc {
                block: [u32::MAX; 3],
                ..ok
            },
            &mut q3,
        ),
        "huge block dims do not overflow",
    );
    expect_launch_err(
        qmd::encode_v03(
            &LaunchDesc {
                register_count: 256,
                ..ok
            },
            &mut q3,
        ),
        "256 registers",
    );
    expect_launch_err(
        qmd::encode_v03(
            &LaunchDesc {
                program_va: 1 << 49,
                ..ok
            },
            &mut q3,
        ),
        "program >= 2^49 on V03",
    );
    qmd::encode_v04(
        &LaunchDesc {
            program_va: 1 << 49,
            ..ok
        },
        &mut q4,
    )
    .unwrap();
    expect_launch_err(
        qmd::encode_v04(
            &LaunchDesc {
                program_va: 1 << 57,
                ..ok
            },
            &mut q4,
        ),
        "program >= 2^57 on V04",
    );
    expect_launch_err(
        qmd::encode_v03(
            &LaunchDesc {
                program_va: 0x1008,
                ..ok
            },
            &mut q3,
        ),
        "unaligned program",
    );
    expect_launch_err(
        qmd::encode_v03(
            &LaunchDesc {
                shared_memory_bytes: 0x4_0000,
                ..ok
            },
            &mut q3,
        ),
        "18-bit SHARED_MEMORY_SIZE",
    );
    expect_launch_err(
        qmd::encode_v03(
            &LaunchDesc {
                local_memory_per_thread: 0x100_0000,
                ..ok
            },
            &mut q3,
        ),
        "24-bit local size",
    );
    let mut cb = [None; 8];
    cb[0] = Some((0x1_0020, 0x200));
    qmd::encode_v03(&LaunchDesc { cbanks: cb, ..ok }, &mut q3).unwrap();
    expect_launch_err(
        qmd::encode_v04(&LaunchDesc { cbanks: cb, ..ok }, &mut q4),
        "V04 cbank address not 64-aligned",
    );
    cb[0] = Some((0x1_0000, 0x1_0010));
    expect_launch_err(
        qmd::encode_v03(&LaunchDesc { cbanks: cb, ..ok }, &mut q3),
        "cbank larger than 64 KiB",
    );
    cb[0] = Some((1 << 49, 0x100));
    expect_launch_err(
        qmd::encode_v03(&LaunchDesc { cbanks: cb, ..ok }, &mut q3),
        "cbank >= 2^49 on V03",
    );
    let far = Some(QmdRelease::new(1 << 40, 1));
    expect_launch_err(
        qmd::encode_v03(&LaunchDesc { release: far, ..ok }, &mut q3),
        "V03 release >= 2^40",
    );
    qmd::encode_v04(&LaunchDesc { release: far, ..ok }, &mut q4).unwrap();
    let unaligned = Some(QmdRelease::new(0x1004, 1));
    expect_launch_err(
        qmd::encode_v03(
            &LaunchDesc {
                release: unaligned,
                ..ok
            },
            &mut q3,
        ),
        "64-bit release unaligned",
    );
    let big = Some(QmdRelease {
        payload64: false,
        ..QmdRelease::new(0x1000, 1 << 32)
    });
    expect_launch_err(
        qmd::encode_v03(&LaunchDesc { release: big, ..ok }, &mut q3),
        "32-bit release, 33-bit payload",
    );
    expect_launch_err(
        qmd::encode_v03(
            &LaunchDesc {
                dependent_qmd: Some(0x1080),
                ..ok
            },
            &mut q3,
        ),
        "unaligned dependent QMD",
    );
    expect_launch_err(
        qmd::encode_v03(
            &LaunchDesc {
                smem_config: SmemConfig {
                    min: 64,
                    max: 1,
                    target: 1,
                },
                ..ok
            },
            &mut q3,
        ),
        "6-bit smem config",
    );
}

#[test]
fn encode_qmd_dispatches_and_checks_length() {
    let d = LaunchDesc {
        program_va: 0x1000,
        ..LaunchDesc::default()
    };
    let mut buf = [0xAAAA_AAAAu32; 100];
    assert_eq!(qmd::encode_qmd(QmdVersion::V04, &d, &mut buf).unwrap(), 96);
    assert_eq!(get(&buf, 583, 580), 4);
    assert_eq!(buf[96], 0xAAAA_AAAA, "words past the QMD are untouched");
    assert_eq!(qmd::encode_qmd(QmdVersion::V03, &d, &mut buf).unwrap(), 64);
    let mut short = [0u32; 80];
    expect_launch_err(
        qmd::encode_qmd(QmdVersion::V05, &d, &mut short).map(|_| ()),
        "short buffer",
    );
}

#[test]
fn smem_config_uses_carveout_table() {
    // Field = KiB/4 + 1 (§4.2); NVK: {8,16,32,64,96} KiB -> {3,5,9,17,25}.
    for (kib, v) in [(8, 3), (16, 5), (32, 9), (64, 17), (96, 25), (100, 26)] {
        assert_eq!(qmd::smem_config_value(kib), v);
    }
    let ga10b = &arch::GA10B;
    let c = qmd::smem_config(ga10b, 0).unwrap();
    assert_eq!((c.min, c.max, c.target), (1, 0x1A, 1));
    let c = qmd::smem_config(ga10b, 0x400).unwrap(); // just the reserve -> 8 KiB
    assert_eq!((c.min, c.max, c.target), (3, 0x1A, 3));
    let c = qmd::smem_config(ga10b, 33 * 1024).unwrap(); // -> 64 KiB
    assert_eq!((c.min, c.max, c.target), (17, 0x1A, 17));
    let c = qmd::smem_config(ga10b, 100 * 1024).unwrap();
    assert_eq!((c.min, c.max, c.target), (26, 26, 26));
    let c = qmd::smem_config(ga10b, 101 * 1024).unwrap(); // -> 132 KiB
    assert_eq!((c.min, c.max, c.target), (34, 34, 34));
    assert_eq!(
        qmd::smem_config(ga10b, 165 * 1024).unwrap_err().status,
        Status::InvalidLaunch
    );
    let c = qmd::smem_config(&arch::GH100, 227 * 1024).unwrap(); // -> 228 KiB = field 58
    assert_eq!(c.target, 58);
    assert!(
        qmd::smem_config(&arch::GA10X, 101 * 1024).is_err(),
        "sm_86 tops out at 100 KiB"
    );
}

/// Arbitrary inputs never panic: every encoder returns Ok or an error.
#[test]
fn arbitrary_inputs_never_panic() {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        // Mix in extremes often.
        match x % 8 {
            0 => 0,
            1 => u64::MAX,
            2 => x & 0xFFFF,
            3 => 1 << (x % 64),
            _ => x,
        }
    };
    let mut q3 = [0u32; 64];
    let mut q4 = [0u32; 96];
    for _ in 0..20_000 {
        let mut cbanks = [None; 8];
        for c in cbanks.iter_mut() {
            if next() % 2 == 0 {
                *c = Some((next(), next() as u32));
            }
        }
        let d = LaunchDesc {
            program_va: next(),
            program_prefetch_bytes: next() as u32,
            grid: [next() as u32, next() as u32, next() as u32],
            block: [next() as u32, next() as u32, next() as u32],
            register_count: next() as u32,
            barrier_count: next() as u32,
            shared_memory_bytes: next() as u32,
            smem_config: SmemConfig {
                min: next() as u32,
                max: next() as u32,
                target: next() as u32,
            },
            local_memory_per_thread: next() as u32,
            cbanks,
            cbank_invalidate_mask: next() as u8,
            release: (next() % 2 == 0).then(|| QmdRelease {
                va: next(),
                payload: next(),
                payload64: next() % 2 == 0,
                timestamp: next() % 2 == 0,
                membar_sys: next() % 2 == 0,
            }),
            dependent_qmd: (next() % 2 == 0).then(&mut next),
            invalidate_caches: next() as u8,
            sass_version: next() as u8,
            cwd_membar_sysmembar: next() % 2 == 0,
            cwd_membar_gpu: next() % 2 == 0,
        };
        let _ = qmd::encode_v03(&d, &mut q3);
        let _ = qmd::encode_v04(&d, &mut q4);
        let _ = qmd::encode_v05(&d, &mut q4);
        let _ = qmd::smem_config(&arch::GA10B, next() as u32);
    }
}

/// The carveout of a launch holds every block the SM can keep resident (up to the largest
/// carveout), while MIN still holds one block: a carveout sized for one block would cap
/// occupancy at one or two blocks per SM.
#[test]
fn smem_config_for_blocks_sizes_the_carveout_for_occupancy() {
    use tegragpu::hw::qmd::{smem_config, smem_config_for_blocks, smem_config_value};
    let arch = tegragpu::hw::arch::arch_by_name("gh100").unwrap();
    // matmul_tiled: 2 KiB static + the 1 KiB reserve, 8 blocks of 256 threads per SM.
    let c = smem_config_for_blocks(arch, 3 * 1024, 8).unwrap();
    assert_eq!(c.min, smem_config_value(8));
    assert_eq!(c.target, smem_config_value(32));
    assert_eq!(c.max, smem_config_value(100));
    // More than the largest carveout holds: the largest.
    let c = smem_config_for_blocks(arch, 48 * 1024, 32).unwrap();
    assert_eq!(c.min, smem_config_value(64));
    assert_eq!(
        (c.target, c.max),
        (smem_config_value(228), smem_config_value(228))
    );
    // One block: the single-block configuration.
    assert_eq!(
        smem_config_for_blocks(arch, 3 * 1024, 1).unwrap(),
        smem_config(arch, 3 * 1024).unwrap()
    );
    // A block larger than any carveout is refused.
    assert!(smem_config_for_blocks(arch, 229 * 1024, 1).is_err());
}
