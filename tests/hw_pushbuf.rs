//! Method-header and pushbuffer-builder tests against the worked examples of
//! gpu-programming-interface.md §1.1, §2, §3, §5 and the class headers' method offsets.

use tegragpu::hw::arch;
use tegragpu::hw::method;
use tegragpu::hw::pushbuf::{PushBuf, SemCond};
use tegragpu::Status;

#[test]
fn header_worked_examples() {
    // §1.1: SET_OBJECT(compute) on subchannel 1.
    assert_eq!(method::inc(1, 0x0, 1).unwrap(), 0x2001_2000);
    // SEND_PCAS_A (0x2B4) on subchannel 1.
    assert_eq!(method::inc(1, 0x2B4, 1).unwrap(), 0x2001_20AD);
    // IMMD SEND_SIGNALING_PCAS2_B (0x2C0) = 9.
    assert_eq!(method::immd(1, 0x2C0, 9).unwrap(), 0x8009_20B0);
    // Host SEM_ADDR_LO..SEM_EXECUTE (5 words) on subchannel 0.
    assert_eq!(method::inc(0, 0x5C, 5).unwrap(), 0x2005_0017);
    // SEC_OP bases: NONINC 0x6000_0000, 1INC 0xA000_0000.
    assert_eq!(method::noninc(0, 0, 0).unwrap(), 0x6000_0000);
    assert_eq!(method::one_inc(0, 0, 0).unwrap(), 0xA000_0000);
    // tinygrad's (typ << 28) form with typ = 2 is the same as SEC_OP 1.
    assert_eq!(
        method::inc(4, 0x400, 4).unwrap(),
        (2 << 28) | (4 << 16) | (4 << 13) | (0x400 >> 2)
    );
    assert_eq!(method::immd(7, 0x3FFC, 0x1FFF).unwrap(), 0x9FFF_EFFF);
}

#[test]
fn header_checks() {
    assert_eq!(
        method::immd(1, 0x2C0, 0x2000).unwrap_err().status,
        Status::InvalidArgument
    );
    assert!(method::inc(8, 0, 1).is_err(), "subchannel 8");
    assert!(
        method::inc(0, 0x4000, 1).is_err(),
        "method beyond 12-bit dword address"
    );
    assert!(method::inc(0, 0x5E, 1).is_err(), "unaligned method");
    assert!(method::inc(0, 0, 0x2000).is_err(), "count beyond 13 bits");
    assert!(method::noninc(0, 0, 0x1FFF).is_ok());
}

#[test]
fn method_offsets_match_class_headers() {
    assert_eq!(method::NVC56F_SEM_ADDR_LO, 0x5C);
    assert_eq!(method::NVC56F_SEM_EXECUTE, 0x6C);
    assert_eq!(method::NVC56F_NON_STALL_INTERRUPT, 0x20);
    assert_eq!(method::NVC56F_WFI, 0x78);
    assert_eq!(
        (method::NVC56F_MEM_OP_A, method::NVC56F_MEM_OP_D),
        (0x28, 0x34)
    );
    assert_eq!(method::NVC7C0_SEND_PCAS_A, 0x2B4);
    assert_eq!(method::NVC7C0_SEND_SIGNALING_PCAS2_B, 0x2C0);
    assert_eq!(method::NVC7C0_INVALIDATE_SHADER_CACHES_NO_WFI, 0x1698);
    assert_eq!(method::NVC7C0_INVALIDATE_SKED_CACHES, 0x298);
    assert_eq!(method::NVC7C0_WAIT_FOR_IDLE, 0x110);
    assert_eq!(method::NVC7C0_SET_REPORT_SEMAPHORE_A, 0x1B00);
    assert_eq!(method::NVC7C0_SET_SHADER_LOCAL_MEMORY_WINDOW_A, 0x7B0);
    assert_eq!(method::NVC7B5_OFFSET_IN_UPPER, 0x400);
    assert_eq!(method::NVC7B5_LINE_LENGTH_IN, 0x418);
    assert_eq!(method::NVC7B5_LAUNCH_DMA, 0x300);
    assert_eq!(method::NVC7B5_SET_SEMAPHORE_PAYLOAD_UPPER, 0x24C);
    assert_eq!(method::CE_LAUNCH_COPY, 0x182);
    assert_eq!(method::CE_LAUNCH_COPY_FLUSH, 0x186);
    assert_eq!(method::CE_LAUNCH_SEM_FOUR_WORD, 0x14);
    assert_eq!(method::CE_LAUNCH_SEM_FOUR_WORD_64, 0x0800_0014);
    assert_eq!(method::INVALIDATE_SHADER_CACHES_ALL, 0x1011);
    assert_eq!(
        (
            method::SUBCH_HOST,
            method::SUBCH_COMPUTE,
            method::SUBCH_COPY
        ),
        (0, 1, 4)
    );
}

fn build(f: impl FnOnce(&mut PushBuf<'_>) -> tegragpu::Result<()>) -> Vec<u32> {
    let mut mem = [0u32; 256];
    let mut pb = PushBuf::for_arch(&mut mem, &arch::GA10B);
    f(&mut pb).unwrap();
    pb.as_slice().to_vec()
}

#[test]
fn host_methods() {
    assert_eq!(build(|p| p.set_object(1, 0xC7C0)), [0x2001_2000, 0xC7C0]);
    // tinygrad signal: RELEASE | WFI | 64-bit | timestamp = 0x0310_0001.
    assert_eq!(
        build(|p| p.host_sem_release(0xAB_1234_5670, 0x1_0000_0002, true, true, true)),
        [0x2005_0017, 0x1234_5670, 0xAB, 2, 1, 0x0310_0001]
    );
    assert_eq!(
        build(|p| p.host_sem_release(0x1008, 5, true, false, true))[5],
        0x0110_0001
    );
    assert_eq!(
        build(|p| p.host_sem_release(0x1004, 5, false, false, true))[5],
        0x0010_0001
    );
    // Wait: ACQ_STRICT_GEQ (2, unsigned 64-bit >=) | ACQUIRE_SWITCH_TSG (bit 12) | 64-bit (bit 24).
    assert_eq!(
        build(|p| p.host_sem_acquire_geq(0x2000, 0x5_0000_0006)),
        [0x2005_0017, 0x2000, 0, 6, 5, 0x0100_1002]
    );
    // Any comparison: the operation in bits 2:0, 64-bit in bit 24, ACQUIRE_SWITCH_TSG.
    for (cond, op) in [
        (SemCond::Eq, 0),
        (SemCond::Geq, 2),
        (SemCond::CircGeq, 3),
        (SemCond::And, 4),
        (SemCond::Nor, 5),
    ] {
        assert_eq!(
            build(|p| p.host_sem_acquire(0x2000, 0x5_0000_0006, true, cond)),
            [0x2005_0017, 0x2000, 0, 6, 5, 0x0100_1000 | op],
            "{cond:?}"
        );
        assert_eq!(
            build(|p| p.host_sem_acquire(0x2004, 7, false, cond))[5],
            0x0000_1000 | op,
            "{cond:?}, 32-bit"
        );
    }
    // Without ACQUIRE_SWITCH_TSG (a queue's own launch counter, TEGRAGPU_QUEUE_OVERLAP):
    // bit 12 clear, the rest as above.
    assert_eq!(
        build(|p| p.host_sem_acquire_switch(0x2000, 0x5_0000_0006, true, SemCond::Geq, false)),
        [0x2005_0017, 0x2000, 0, 6, 5, 0x0100_0002]
    );
    assert_eq!(build(|p| p.host_wfi()), [0x2001_001E, 1]);
    assert_eq!(
        build(|p| p.host_membar_sys()),
        [0x2004_000A, 0, 0, 0, 0x2800_0000]
    );
    assert_eq!(build(|p| p.non_stall_interrupt()), [0x2001_0008, 0]);
}

#[test]
fn host_sem_checks() {
    let mut mem = [0u32; 64];
    let mut pb = PushBuf::for_arch(&mut mem, &arch::GA10B);
    assert!(
        pb.host_sem_release(0x1008, 1, true, true, true).is_err(),
        "timestamp needs 16-byte alignment"
    );
    assert!(
        pb.host_sem_release(0x1004, 1, true, false, true).is_err(),
        "64-bit needs 8-byte alignment"
    );
    assert!(
        pb.host_sem_release(0x1000, 1 << 32, false, false, true)
            .is_err(),
        "32-bit payload overflow"
    );
    assert!(
        pb.host_sem_release(1 << 40, 1, true, true, true).is_err(),
        "c76f SEM_ADDR_HI is 8 bits"
    );
    assert!(pb.host_sem_acquire_geq(0x1004, 1).is_err());
    assert!(pb
        .host_sem_acquire_switch(0x1004, 1, true, SemCond::Geq, false)
        .is_err());
    assert!(
        pb.host_sem_acquire(0x1004, 1, true, SemCond::Eq).is_err(),
        "64-bit acquire needs 8-byte alignment"
    );
    assert!(
        pb.host_sem_acquire(0x1002, 1, false, SemCond::Eq).is_err(),
        "32-bit acquire needs 4-byte alignment"
    );
    assert!(
        pb.host_sem_acquire(0x1000, 1 << 32, false, SemCond::Nor)
            .is_err(),
        "32-bit acquire value overflow"
    );
    assert!(pb.is_empty(), "failed helpers write nothing");
    let mut mem = [0u32; 64];
    let mut pb = PushBuf::for_arch(&mut mem, &arch::GH100);
    pb.host_sem_release(1 << 40, 1, true, true, true).unwrap();
    assert_eq!(pb.as_slice()[2], 0x100, "c86f carries address bits 56:32");
}

#[test]
fn compute_methods() {
    assert_eq!(
        build(|p| p.compute_init(0xFE_0000_0000, 0xFD_0000_0000)),
        [
            0x2001_2000,
            0xC7C0,
            0x2001_20A6,
            0,
            0x2002_20A8,
            0xFE,
            0,
            0x2002_21EC,
            0xFD,
            0
        ]
    );
    assert_eq!(
        build(|p| p.set_local_memory(0x12_3456_0000, 3 * 0x8000)),
        [
            0x2002_21E4,
            0x12,
            0x3456_0000,
            0x2003_20B9,
            0,
            0x1_8000,
            0xFF
        ]
    );
    assert_eq!(
        build(|p| p.invalidate_shader_caches_no_wfi(0x1011)),
        [0x2001_25A6, 0x1011]
    );
    assert_eq!(
        build(|p| p.send_pcas(0x12_3456_7800, 9)),
        [0x2001_20AD, 0x1234_5678, 0x8009_20B0]
    );
    assert_eq!(
        build(|p| p.send_pcas(0x100, 3)),
        [0x2001_20AD, 1, 0x8003_20B0]
    );
    assert_eq!(build(|p| p.wait_for_idle()), [0x8000_2044]);
    // SET_REPORT_SEMAPHORE_A..D (0x1B00 >> 2 = 0x6C0), D = one-word release = 0x1000_0000.
    assert_eq!(
        build(|p| p.compute_report_semaphore(0xAB_0000_1004, 77)),
        [0x2004_26C0, 0xAB, 0x1004, 77, 0x1000_0000]
    );
    // I2M (§3.5): INC 4 at LINE_LENGTH_IN (0x180 >> 2 = 0x60), then 1INC at LAUNCH_DMA
    // (0x1B0 >> 2 = 0x6C) with 0x11 and the data.
    assert_eq!(
        build(|p| p.i2m_write(0x1_0000_0100, &[0xA, 0xB, 0xC])),
        [
            0x2004_2060,
            12,
            1,
            1,
            0x100,
            0xA004_206C,
            0x11,
            0xA,
            0xB,
            0xC
        ]
    );
}

#[test]
fn compute_checks() {
    let mut mem = [0u32; 64];
    let mut pb = PushBuf::for_arch(&mut mem, &arch::GA10B);
    assert_eq!(
        pb.send_pcas(0x1080, 9).unwrap_err().status,
        Status::InvalidLaunch,
        "QMD not 256-aligned"
    );
    assert!(pb.send_pcas(1 << 40, 9).is_err(), "QMD at or above 2^40");
    assert!(pb.send_pcas(0x1000, 0x10).is_err(), "4-bit action");
    assert!(
        pb.set_local_memory(0x1000, 0x4000).is_err(),
        "bytes_per_tpc not 0x8000-aligned"
    );
    assert!(
        pb.compute_init(0xFE_0010_0000, 0xFD_0000_0000).is_err(),
        "shared window unaligned"
    );
    assert!(
        pb.compute_report_semaphore(1 << 40, 1).is_err(),
        "c7c0 report semaphore A is 8 bits"
    );
    assert!(pb.compute_report_semaphore(0x1002, 1).is_err());
    assert!(pb.i2m_write(0x1002, &[1]).is_err(), "unaligned I2M");
    assert!(pb.i2m_write(0x1000, &[]).is_err(), "empty I2M");
    assert!(pb.is_empty());
    let mut mem = [0u32; 64];
    let mut pb = PushBuf::for_arch(&mut mem, &arch::GH100);
    assert!(
        pb.compute_init(0x7294_0100_0000, 0x7293_0000_0000).is_err(),
        "Hopper shared window 4 GiB"
    );
    pb.compute_init(0x7294_0000_0000, 0x7293_0000_0000).unwrap();
    assert_eq!(
        &pb.as_slice()[..2],
        &[0x2001_2000, 0xCBC0],
        "gh100 binds HOPPER_COMPUTE_A"
    );
    assert_eq!(&pb.as_slice()[4..7], &[0x2002_20A8, 0x7294, 0]);
    let mut mem = [0u32; 64];
    let mut pb = PushBuf::new(&mut mem);
    assert!(
        pb.compute_init(0x7294_0000_0000, 0x7293_0000_0000).is_err(),
        "no class known"
    );
    pb.compute_init_class(0xCDC0, 0x7294_0000_0000, 0x7293_0000_0000)
        .unwrap();
    assert_eq!(pb.as_slice()[1], 0xCDC0);
    let mut mem = [0u32; 64];
    let mut pb = PushBuf::for_arch(&mut mem, &arch::GB20X);
    pb.compute_init(0x7294_0000_0000, 0x7293_0000_0000).unwrap();
    assert_eq!(pb.as_slice()[1], 0xCEC0);
}

#[test]
fn copy_linear_small_and_split() {
    assert_eq!(
        build(|p| p.ce_copy_linear(0x1_2345_6780, 0x9_8765_4320, 4096)),
        [
            0x2004_8100,
            1,
            0x2345_6780,
            9,
            0x8765_4320,
            0x2001_8106,
            4096,
            0x2001_80C0,
            0x186
        ]
    );
    assert!(build(|p| p.ce_copy_linear(0x1000, 0x2000, 0)).is_empty());
    // 2^32 + 5 bytes: chunks of 2^31, 2^31, 5; only the last one flushes.
    let w = build(|p| p.ce_copy_linear(0x10_0000_0000, 0x20_0000_0000, (1 << 32) + 5));
    assert_eq!(w.len(), 27);
    let chunk = |i: usize| &w[i * 9..i * 9 + 9];
    assert_eq!(
        chunk(0),
        [
            0x2004_8100,
            0x10,
            0,
            0x20,
            0,
            0x2001_8106,
            0x8000_0000,
            0x2001_80C0,
            0x182
        ]
    );
    assert_eq!(
        chunk(1),
        [
            0x2004_8100,
            0x10,
            0x8000_0000,
            0x20,
            0x8000_0000,
            0x2001_8106,
            0x8000_0000,
            0x2001_80C0,
            0x182
        ]
    );
    assert_eq!(
        chunk(2),
        [
            0x2004_8100,
            0x11,
            0,
            0x21,
            0,
            0x2001_8106,
            5,
            0x2001_80C0,
            0x186
        ]
    );
}

/// The copy engine's constant fill (gpu-programming-interface.md §5, "Memset / fill"):
/// OFFSET_OUT, PITCH_IN/OUT + LINE_LENGTH_IN (elements) + LINE_COUNT, REMAP_CONST_A/B +
/// REMAP_COMPONENTS (DST_X = CONST_A, component size), LAUNCH_DMA 0x586 (+ MULTI_LINE 0x200).
#[test]
fn copy_engine_fill() {
    let mut mem = [0u32; 64];
    let mut pb = PushBuf::for_arch(&mut mem, &arch::GA10B);
    pb.ce_fill(0x1_0000_0000, 0xDEAD_BEEF, 4, 32768, 3, 131_072)
        .unwrap();
    assert_eq!(
        pb.as_slice(),
        [
            0x2002_8102,
            1,
            0,
            0x2004_8104,
            131_072,
            131_072,
            32768,
            3,
            0x2003_81C0,
            0xDEAD_BEEF,
            0,
            0x3_0004,
            0x2001_80C0,
            0x786
        ]
    );
    pb.clear();
    pb.ce_fill(0x1001, 0x5A, 1, 7, 1, 7).unwrap();
    let w = pb.as_slice();
    assert_eq!((w[6], w[7], w[9], w[11], w[13]), (7, 1, 0x5A, 0x4, 0x586));
    pb.clear();
    pb.ce_fill(0x1002, 0xBEEF, 2, 5, 1, 10).unwrap();
    assert_eq!(pb.as_slice()[11], 0x1_0004, "2-byte components");
    pb.clear();
    for (dst, e, n, lines, pitch, why) in [
        (0x1000u64, 3u32, 4u32, 1u32, 12u32, "elem_bytes 3"),
        (0x1000, 4, 0, 1, 0, "no elements"),
        (0x1000, 4, 1 << 17 | 1, 1, 0, "line too long"),
        (0x1000, 4, 4, (1 << 17) + 1, 16, "too many lines"),
        (0x1000, 4, 4, 2, 15, "pitch below a line"),
        (
            (1 << 49) - 8,
            4,
            4,
            1,
            16,
            "c7b5 OFFSET_OUT_UPPER is 17 bits",
        ),
        (u64::MAX - 8, 4, 4, 1, 16, "overflow"),
    ] {
        assert!(pb.ce_fill(dst, 0, e, n, lines, pitch).is_err(), "{why}");
    }
    assert!(pb.is_empty());
}

#[test]
fn copy_checks() {
    let mut mem = [0u32; 64];
    let mut pb = PushBuf::for_arch(&mut mem, &arch::GA10B);
    assert!(
        pb.ce_copy_linear((1 << 49) - 4, 0, 8).is_err(),
        "c7b5 OFFSET_IN_UPPER is 17 bits"
    );
    assert!(pb.ce_copy_linear(u64::MAX - 2, 0, 8).is_err(), "overflow");
    assert!(
        pb.ce_sem_release(0x1008, 1).is_err(),
        "four-word semaphore needs 16-byte alignment"
    );
    assert!(pb.is_empty());
}

#[test]
fn copy_semaphore_by_class() {
    // c7b5: 64-bit payload through PAYLOAD_UPPER and LAUNCH_DMA bit 27.
    assert_eq!(
        build(|p| p.ce_sem_release(0xAB_0000_1230, 0x7_0000_0009)),
        [0x2004_8090, 0xAB, 0x1230, 9, 7, 0x2001_80C0, 0x0800_0014]
    );
    // c6b5 (GA100) has no PAYLOAD_UPPER: three words and 0x14; 64-bit payloads are refused.
    let mut mem = [0u32; 16];
    let mut pb = PushBuf::for_arch(&mut mem, &arch::GA100);
    pb.ce_sem_release(0x1000, 9).unwrap();
    assert_eq!(
        pb.as_slice(),
        [0x2003_8090, 0, 0x1000, 9, 0x2001_80C0, 0x14]
    );
    assert!(pb.ce_sem_release(0x1000, 1 << 32).is_err());
}

#[test]
fn out_of_space_is_an_error_and_writes_nothing() {
    let mut mem = [0u32; 8];
    let mut pb = PushBuf::new(&mut mem);
    pb.send_pcas(0x1000, 9).unwrap();
    assert_eq!(pb.len(), 3);
    let e = pb
        .host_sem_release(0x1000, 1, true, true, true)
        .unwrap_err();
    assert_eq!(e.status, Status::OutOfMemory);
    assert_eq!(pb.len(), 3);
    assert_eq!(pb.remaining(), 5);
    pb.inc(0, 0x5C, &[1, 2, 3, 4]).unwrap();
    assert_eq!(pb.remaining(), 0);
    assert!(pb.immd(1, 0x110, 0).is_err());
    assert!(pb.push_words(&[0]).is_err());
    pb.clear();
    assert!(pb.is_empty());
    let mut mem = [0u32; 4];
    let mut pb = PushBuf::new(&mut mem);
    assert!(
        pb.ce_copy_linear(0, 0x1000, 1 << 33).is_err(),
        "36 words do not fit in 4"
    );
    assert!(pb.is_empty());
}

#[test]
fn raw_runs() {
    let mut mem = [0u32; 16];
    let mut pb = PushBuf::new(&mut mem);
    pb.noninc(1, 0x1B4, &[7, 8]).unwrap();
    pb.one_inc(1, 0x1B0, &[0x11, 1, 2]).unwrap();
    pb.immd(1, 0x110, 0x1FFF).unwrap();
    assert_eq!(
        pb.as_slice(),
        [0x6002_206D, 7, 8, 0xA003_206C, 0x11, 1, 2, 0x9FFF_2044]
    );
}

/// Arbitrary arguments never panic, and a failed helper never changes the length.
#[test]
fn arbitrary_arguments_never_panic() {
    let mut x: u64 = 0x2545_F491_4F6C_DD1D;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        match x % 6 {
            0 => 0,
            1 => u64::MAX,
            2 => 1 << (x % 64),
            _ => x,
        }
    };
    let mut mem = [0u32; 40];
    for round in 0..20_000u32 {
        let a = [&arch::GA10B, &arch::GA100, &arch::GH100, &arch::GB20X][(round % 4) as usize];
        let mut pb = PushBuf::for_arch(&mut mem[..(round % 41) as usize], a);
        let before = pb.len();
        let (v1, v2, v3) = (next(), next(), next());
        let r = match round % 16 {
            0 => pb.set_object(v1 as u32, v2 as u32),
            1 => pb.host_sem_release(v1, v2, v3 % 2 == 0, v3 % 3 == 0, v3 % 5 == 0),
            2 => pb.host_sem_acquire_geq(v1, v2),
            3 => pb.compute_init(v1, v2),
            4 => pb.set_local_memory(v1, v2),
            5 => pb.send_pcas(v1, v2 as u32),
            6 => pb.ce_copy_linear(v1, v2, v3 % (1 << 34)),
            7 => pb.ce_sem_release(v1, v2),
            8 => pb.immd(v1 as u32, v2 as u32, v3 as u32),
            9 => pb.inc(v1 as u32, v2 as u32, &[1, 2, 3]),
            10 => pb.compute_report_semaphore(v1, v2 as u32),
            11 => pb.i2m_write(v1, &[1, 2, 3, 4][..(v2 % 5) as usize]),
            12 => pb.compute_init_class(v1 as u32, v2, v3),
            13 => pb.invalidate_shader_caches_no_wfi(v1 as u32),
            14 => pb.one_inc(v1 as u32, v2 as u32, &[1]),
            _ => pb.noninc(v1 as u32, v2 as u32, &[]),
        };
        if r.is_err() {
            assert_eq!(
                pb.len(),
                before,
                "round {round}: a failed helper wrote words"
            );
        }
        let _ = tegragpu::hw::gpfifo::gp_entry(v1, v2 as u32, v3 % 2 == 0);
    }
}

#[test]
fn texture_pool_methods() {
    // Ampere: SET_TEX_SAMPLER_POOL_A/B/C (0x155C) then SET_TEX_HEADER_POOL_A/B/C (0x1574).
    let w = build(|pb| pb.texture_pools(0x12_3456_7000, 0x12_3457_7000, 4095, false));
    assert_eq!(
        w,
        [
            method::inc(1, 0x155C, 3).unwrap(),
            0x12,
            0x3457_7000,
            4095,
            method::inc(1, 0x1574, 3).unwrap(),
            0x12,
            0x3456_7000,
            4095
        ]
    );
    // No TEXHEAD_V2 on Ampere; pools must be 32-byte aligned, indices below 2^20.
    let mut mem = [0u32; 64];
    let mut pb = PushBuf::for_arch(&mut mem, &arch::GA10B);
    assert!(pb.texture_pools(0x1000, 0x2000, 15, true).is_err());
    assert!(pb.texture_pools(0x1010, 0x2000, 15, false).is_err());
    assert!(pb.texture_pools(0x1000, 0x2000, 1 << 20, false).is_err());
    assert!(pb.as_slice().is_empty());
    // Hopper: SET_TEXTURE_HEADER_VERSION (0x7AC) first: 1 = TEXHEAD_V2, 0 = Maxwell-style.
    for v2 in [true, false] {
        let mut mem = [0u32; 64];
        let mut pb = PushBuf::for_arch(&mut mem, &arch::GH100);
        pb.texture_pools(0x1000, 0x2000, 15, v2).unwrap();
        assert_eq!(
            pb.as_slice()[..2],
            [method::inc(1, 0x7AC, 1).unwrap(), u32::from(v2)]
        );
        assert_eq!(pb.as_slice().len(), 10);
    }
}

#[test]
fn copy_lines_encodes_pitch_count_pipelining_and_flush() {
    // 3 lines of 4 KiB, pipelined, flushed: LAUNCH_DMA PIPELINED (1) | FLUSH | SRC/DST PITCH |
    // MULTI_LINE = 0x385.
    assert_eq!(
        build(|p| p.ce_copy_lines(0x1_2345_6780, 0x9_8765_4320, 4096, 3, true, true)),
        [
            0x2008_8100,
            1,
            0x2345_6780,
            9,
            0x8765_4320,
            4096,
            4096,
            4096,
            3,
            0x2001_80C0,
            0x385
        ]
    );
    // One line, in order after earlier work, no flush: the plain copy's 0x182.
    let w = build(|p| p.ce_copy_lines(0x1000, 0x2000, 5, 1, false, false));
    assert_eq!((w.len(), w[7], w[8], w[10]), (11, 5, 1, 0x182));
    let mut mem = [0u32; 64];
    let mut pb = PushBuf::for_arch(&mut mem, &arch::GA10B);
    assert!(pb.ce_copy_lines(0x1000, 0x2000, 0, 1, false, true).is_err());
    assert!(pb
        .ce_copy_lines(0x1000, 0x2000, 16, 0, false, true)
        .is_err());
    assert!(
        pb.ce_copy_lines(0, 1 << 40, 1 << 31, 2, false, true)
            .is_err(),
        "a pitch of 2^31 does not fit the signed pitch"
    );
    assert!(pb
        .ce_copy_lines(u64::MAX - 8, 0, 16, 1, false, true)
        .is_err());
    assert!(pb.is_empty(), "refusals write nothing");
}
