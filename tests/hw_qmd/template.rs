//! `QmdTemplate` tests: a template's writes equal a full encode, the dwords it may change,
//! constant bank 0's address, chaining (prefetches on V04) and cluster fields.

use super::*;

/// A template patched per launch gives exactly the QMD a full encode gives.
#[test]
fn qmd_template_write_equals_full_encode() {
    use tegragpu::hw::arch::QmdVersion;
    use tegragpu::hw::qmd::{encode_qmd, smem_config, QmdTemplate};
    let arch = tegragpu::hw::arch::arch_by_name("ga10b").unwrap();
    for (ver, align) in [
        (QmdVersion::V03, 256u64),
        (QmdVersion::V04, 64),
        (QmdVersion::V05, 64),
    ] {
        let mut base = LaunchDesc {
            program_va: 0x7f_1234_5600,
            register_count: 40,
            barrier_count: 1,
            local_memory_per_thread: 0x240,
            sass_version: 0x87,
            ..Default::default()
        };
        base.cbanks[0] = Some((0, 16));
        base.cbanks[3] = Some((0x55_0000_0100, 0x200));
        let t = QmdTemplate::new(ver, &base).unwrap();
        for (i, (grid, block, smem, cb)) in [
            (
                [1u32, 1, 1],
                [32u32, 1, 1],
                0x400u32,
                (0x10_0000u64 * align, 0x170u32),
            ),
            (
                [70000, 3, 2],
                [16, 16, 4],
                0x8800,
                (0xff_fff0_0000 & !(align - 1), 0x1000),
            ),
            ([5, 65535, 1], [1024, 1, 1], 0x1_0000, (align * 3, 16)),
        ]
        .into_iter()
        .enumerate()
        {
            let cfg = smem_config(arch, smem).unwrap();
            let mut d = base;
            d.grid = grid;
            d.block = block;
            d.shared_memory_bytes = smem;
            d.smem_config = cfg;
            d.cbanks[0] = Some(cb);
            let mut full = [0u32; 96];
            let n = encode_qmd(ver, &d, &mut full).unwrap();
            let mut patched = [0xdead_beefu32; 96];
            t.write(&mut patched, grid, block, smem, cfg, cb).unwrap();
            assert_eq!(&patched[..n], &full[..n], "{ver:?} case {i}");
        }
        let mut out = [0u32; 96];
        assert!(t
            .write(
                &mut out,
                [0, 1, 1],
                [32, 1, 1],
                0,
                Default::default(),
                (0, 16)
            )
            .is_err());
        assert!(t
            .write(
                &mut out,
                [1, 1, 1],
                [1025, 1, 1],
                0,
                Default::default(),
                (0, 16)
            )
            .is_err());
        // V04/V05 store the cbank address >> 6: a 32-byte aligned address is refused.
        assert_eq!(
            t.write(
                &mut out,
                [1, 1, 1],
                [32, 1, 1],
                0,
                Default::default(),
                (32, 16)
            )
            .is_err(),
            ver != QmdVersion::V03
        );
    }
}

/// Rewriting only `variable_dwords` over an earlier launch of the same template gives the full QMD.
#[test]
fn qmd_template_variable_dwords_cover_every_change() {
    use tegragpu::hw::arch::QmdVersion;
    use tegragpu::hw::qmd::{smem_config, QmdTemplate};
    let arch = tegragpu::hw::arch::arch_by_name("gh100")
        .or_else(|| tegragpu::hw::arch::arch_by_name("ga10b"))
        .unwrap();
    for ver in [QmdVersion::V03, QmdVersion::V04, QmdVersion::V05] {
        let mut base = LaunchDesc {
            program_va: 0x7f_1234_5600,
            register_count: 40,
            barrier_count: 1,
            local_memory_per_thread: 0x240,
            ..Default::default()
        };
        base.cbanks[0] = Some((0, 16));
        let t = QmdTemplate::new(ver, &base).unwrap();
        let mut slot = [0u32; 96];
        t.write(
            &mut slot,
            [1, 1, 1],
            [32, 1, 1],
            0x400,
            smem_config(arch, 0x400).unwrap(),
            (0x1000, 0x300),
        )
        .unwrap();
        let mut fresh = [0u32; 96];
        let (g, b, sm, cb) = (
            [70000u32, 9, 3],
            [8u32, 8, 16],
            0x9000u32,
            (0x2_0000u64, 0x400u32),
        );
        t.write(&mut fresh, g, b, sm, smem_config(arch, sm).unwrap(), cb)
            .unwrap();
        for &i in t.variable_dwords() {
            slot[i as usize] = fresh[i as usize];
        }
        assert_eq!(slot, fresh, "{ver:?}");
        assert!(
            t.variable_dwords().len() < t.dwords() / 4,
            "{ver:?}: {:?}",
            t.variable_dwords()
        );
    }
}

/// Moving constant bank 0 of a written QMD gives exactly the QMD written with the new address,
/// and a misaligned or too-high address is refused.
#[test]
fn qmd_template_set_cbank0_address_equals_write() {
    use tegragpu::hw::arch::QmdVersion;
    use tegragpu::hw::qmd::{smem_config, QmdTemplate};
    let arch = tegragpu::hw::arch::arch_by_name("ga10b").unwrap();
    for ver in [QmdVersion::V03, QmdVersion::V04, QmdVersion::V05] {
        let mut base = LaunchDesc {
            program_va: 0x7f_1234_5600,
            register_count: 40,
            barrier_count: 1,
            ..Default::default()
        };
        base.cbanks[0] = Some((0, 16));
        let t = QmdTemplate::new(ver, &base).unwrap();
        let sm = smem_config(arch, 0x400).unwrap();
        for (from, to) in [
            (0x1000u64, 0x00ff_ffff_ff00u64),
            (0x00ff_ffff_ff00, 0x100),
            (0x1_2345_6700, 0x9_8765_4300),
        ] {
            let mut moved = [0u32; 96];
            t.write(&mut moved, [3, 2, 1], [64, 2, 1], 0x400, sm, (from, 0x300))
                .unwrap();
            t.set_cbank0_address(&mut moved, to).unwrap();
            let mut direct = [0u32; 96];
            t.write(&mut direct, [3, 2, 1], [64, 2, 1], 0x400, sm, (to, 0x300))
                .unwrap();
            assert_eq!(moved, direct, "{ver:?} {from:#x} -> {to:#x}");
        }
        let mut q = [0u32; 96];
        assert!(t.set_cbank0_address(&mut q, 0x1008).is_err(), "{ver:?}");
        assert!(t.set_cbank0_address(&mut q, 1 << 62).is_err(), "{ver:?}");
    }
}

/// A chained predecessor on Hopper (QMD V04) carries what libcuda's graph nodes carry for their
/// successor: DEPENDENT_QMD0, a GPU-scope end-of-grid membar with task chasing, a POST prefetch
/// of the successor's program and the successor's constant bank 0 as bank 5 with a POST
/// prefetch; nothing else changes. V03 (no task chasing) gets DEPENDENT_QMD0 only. Positions
/// from clcbc0qmd.h.
#[test]
fn chain_sets_the_successors_prefetches_on_v04_only() {
    use tegragpu::hw::qmd::{smem_config, QmdTemplate};
    let arch = tegragpu::hw::arch::arch_by_name("gh100").unwrap();
    let sm = smem_config(arch, 0x400).unwrap();
    let template = |prog: u64, code: u32| {
        let mut d = LaunchDesc {
            program_va: prog,
            program_prefetch_bytes: code,
            register_count: 16,
            ..Default::default()
        };
        d.cbanks[0] = Some((0, 16));
        d
    };
    let (next_prog, next_code, next_cb, next_va) = (
        0x7f_1234_5600u64,
        0x180u32,
        0x12_3456_7840u64,
        0x98_7654_3200u64,
    );
    for ver in [QmdVersion::V04, QmdVersion::V03] {
        let tp = QmdTemplate::new(ver, &template(0x7f_0000_1000, 0x2000)).unwrap();
        let tn = QmdTemplate::new(ver, &template(next_prog, next_code)).unwrap();
        let mut prev = [0u32; 96];
        tp.write(&mut prev, [1, 1, 1], [32, 1, 1], 0x400, sm, (0x5000, 0x300))
            .unwrap();
        let mut next = [0u32; 96];
        tn.write(
            &mut next,
            [1, 1, 1],
            [32, 1, 1],
            0x400,
            sm,
            (next_cb, 0x300),
        )
        .unwrap();
        let mut expect = prev;
        tp.set_dependent(&mut expect, next_va).unwrap();
        let mut got = prev;
        tp.chain(&mut got, next_va, &next, &tn).unwrap();
        if ver == QmdVersion::V03 {
            assert_eq!(got, expect, "V03: DEPENDENT_QMD0 only");
            assert!(!tp.chain_prefetches());
            continue;
        }
        assert!(tp.chain_prefetches());
        assert_eq!(get(&got, 479, 448), next_va >> 8);
        assert_eq!(get(&got, 368, 368), 1);
        mw(&mut expect, 1137, 1136, 3); // CWD_MEMBAR_TYPE L1_MEMBAR
        mw(&mut expect, 382, 382, 1); // CWD_MEMBAR_TASK_CHASING_ENABLE
        mw(&mut expect, 1375, 1344, (next_prog >> 8) & 0xffff_ffff); // PROGRAM_PREFETCH_ADDR_LOWER_SHIFTED
        mw(&mut expect, 1392, 1376, next_prog >> 40); // PROGRAM_PREFETCH_ADDR_UPPER_SHIFTED
        mw(&mut expect, 1401, 1393, 2); // PROGRAM_PREFETCH_SIZE: 0x180 bytes, rounded up
        mw(&mut expect, 1403, 1402, 1); // PROGRAM_PREFETCH_TYPE PREFETCH_POST
        mw(
            &mut expect,
            1567 + 320,
            1536 + 320,
            (next_cb >> 6) & 0xffff_ffff,
        ); // CB ADDR_LOWER(5)
        mw(&mut expect, 1586 + 320, 1568 + 320, next_cb >> 38); // CB ADDR_UPPER(5)
        mw(&mut expect, 1599 + 320, 1587 + 320, 0x300 >> 4); // CB SIZE_SHIFTED4(5)
        mw(&mut expect, 416 + 20, 416 + 20, 1); // CONSTANT_BUFFER_VALID(5)
        mw(&mut expect, 418 + 20, 417 + 20, 2); // CONSTANT_BUFFER_PREFETCH(5) POST
        assert_eq!(got, expect, "V04 chained predecessor");
        // The successor keeps its prefetched bank 0: CONSTANT_BUFFER_INVALIDATE(0) cleared.
        assert_eq!(get(&next, 419, 419), 1);
        let mut cleared = next;
        tn.clear_cbank0_invalidate(&mut cleared);
        let mut want = next;
        mw(&mut want, 419, 419, 0);
        assert_eq!(cleared, want);
        // Another QMD version is refused.
        let t3 = QmdTemplate::new(QmdVersion::V03, &template(next_prog, next_code)).unwrap();
        assert!(tp.chain(&mut got, next_va, &next, &t3).is_err());
    }
}

/// Cluster launches (V04): QMD_TYPE GRID_GPC_CGA (MW 25:23 = 3), GPC_CGA_WIDTH/HEIGHT/DEPTH at
/// MW(2149:2144) / (2157:2152) / (2165:2160) (clcbc0qmd.h), and the grid counted in clusters.
#[test]
fn v04_cluster_fields() {
    let mut base = desc();
    base.sass_version = 0x90;
    base.cbanks[0] = Some((0x10_0000, 0x300));
    let t = qmd::QmdTemplate::new(QmdVersion::V04, &base).unwrap();
    let sc = qmd::smem_config(&arch::GH100, 0x400).unwrap();
    let mut q = [0u32; 96];
    t.write(
        &mut q,
        [8, 6, 1],
        [128, 1, 1],
        0x400,
        sc,
        (0x10_0000, 0x300),
    )
    .unwrap();
    let plain = q;
    t.set_cluster(&mut q, [8, 6, 1], [4, 2, 1]).unwrap();
    assert_eq!(get(&q, 25, 23), 3);
    assert_eq!(
        (
            get(&q, 2149, 2144),
            get(&q, 2157, 2152),
            get(&q, 2165, 2160)
        ),
        (4, 2, 1)
    );
    assert_eq!(
        (
            get(&q, 1055, 1024),
            get(&q, 1071, 1056),
            get(&q, 1103, 1088)
        ),
        (2, 3, 1)
    );
    // Nothing else changes.
    let mut expect = plain;
    mw(&mut expect, 25, 23, 3);
    mw(&mut expect, 2149, 2144, 4);
    mw(&mut expect, 2157, 2152, 2);
    mw(&mut expect, 2165, 2160, 1);
    mw(&mut expect, 1055, 1024, 2);
    mw(&mut expect, 1071, 1056, 3);
    assert_eq!(q, expect);
    // A shape that does not divide the grid, a zero or a 64-wide dimension is refused.
    for c in [[3, 1, 1], [0, 1, 1], [64, 1, 1]] {
        let mut q2 = plain;
        assert!(t.set_cluster(&mut q2, [8, 6, 1], c).is_err(), "{c:?}");
    }
    // V03 (Ampere) has no cluster fields.
    let t3 = qmd::QmdTemplate::new(
        QmdVersion::V03,
        &LaunchDesc {
            sass_version: 0x87,
            ..base
        },
    )
    .unwrap();
    let mut q3 = [0u32; 96];
    let e = t3.set_cluster(&mut q3, [8, 1, 1], [2, 1, 1]).unwrap_err();
    assert_eq!(e.status, Status::NotSupported);
}
