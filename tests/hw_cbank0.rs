//! Constant bank 0 images (gpu-programming-interface.md §6.8), the architecture table
//! (§3.2, §4, rm-kernel-interface.md §4.1) and local-memory sizing (§3.3).

use tegragpu::hw::arch::{self, QmdVersion};
use tegragpu::hw::cbank0::{build_cbank0, Cbank0Params};
use tegragpu::hw::local_mem;
use tegragpu::Status;

fn w32(img: &mut [u8], off: usize, v: u32) {
    img[off..off + 4].copy_from_slice(&v.to_le_bytes());
}
fn w64(img: &mut [u8], off: usize, v: u64) {
    img[off..off + 8].copy_from_slice(&v.to_le_bytes());
}

const PARAMS: [u8; 20] = [
    1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20,
];

#[test]
fn sm87_layout() {
    let p = Cbank0Params {
        block: [128, 2, 3],
        grid: [1000, 20, 30],
        shared_window: 0xFE_0000_0000,
        local_window: 0xFD_0000_0000,
        dynamic_smem_bytes: 0xC00,
        aggr_smem_bytes: 0x1020,
        sm_count: 16,
        cluster: None,
        param_base: 0x160,
        params: &PARAMS,
    };
    let mut out = [0xAAu8; 0x400];
    let size = build_cbank0(&arch::GA10B, &mut out, &p).unwrap();
    assert_eq!(size, 0x180, "round_up(0x160 + 20, 16)");

    let mut e = [0u8; 0x180];
    w32(&mut e, 0x00, 128);
    w32(&mut e, 0x04, 2);
    w32(&mut e, 0x08, 3);
    w32(&mut e, 0x0C, 1000);
    w32(&mut e, 0x10, 20);
    w32(&mut e, 0x14, 30);
    w64(&mut e, 0x18, 0xFE_0000_0000);
    w64(&mut e, 0x20, 0xFD_0000_0000);
    w32(&mut e, 0x28, 0x00FF_FDC0);
    w32(&mut e, 0x2C, 0xC00);
    w32(&mut e, 0x10C, 16);
    w32(&mut e, 0x114, 0x400);
    e[0x160..0x174].copy_from_slice(&PARAMS);
    assert_eq!(&out[..size], &e[..], "sm_87 cbank0 image");
    assert!(
        out[size..].iter().all(|&b| b == 0xAA),
        "nothing written past the cbank"
    );
}

#[test]
fn sm90_layout() {
    // Values of the live H200 dump (§6.8): windows, dynamic 0xC00, 132 SMs, aggregate 0x1020.
    let p = Cbank0Params {
        block: [256, 1, 1],
        grid: [7, 8, 9],
        shared_window: 0x7F6F_0000_0000,
        local_window: 0x7F6E_1D00_0000,
        dynamic_smem_bytes: 0xC00,
        aggr_smem_bytes: 0x1020,
        sm_count: 0x84,
        cluster: None,
        param_base: 0x210,
        params: &PARAMS[..8],
    };
    let mut out = [0x55u8; 0x300];
    let size = build_cbank0(&arch::GH100, &mut out, &p).unwrap();
    assert_eq!(size, 0x220);

    let mut e = [0u8; 0x220];
    w32(&mut e, 0x00, 256);
    w32(&mut e, 0x04, 1);
    w32(&mut e, 0x08, 1);
    w32(&mut e, 0x0C, 7);
    w32(&mut e, 0x10, 8);
    w32(&mut e, 0x14, 9);
    w64(&mut e, 0x18, 0x7F6F_0000_0000);
    w64(&mut e, 0x20, 0x7F6E_1D00_0000);
    w32(&mut e, 0x28, 0x00FF_FDC0);
    w32(&mut e, 0x2C, 0xC00);
    w32(&mut e, 0x10C, 0x84);
    w32(&mut e, 0x114, 0x400);
    w32(&mut e, 0x13C, 0x1020);
    for (i, off) in [0x144, 0x148, 0x14C].into_iter().enumerate() {
        w32(&mut e, off, 1);
        w32(&mut e, 0x150 + 4 * i, 0x3F80_0000);
        w32(&mut e, 0x15C + 4 * i, [7, 8, 9][i]);
    }
    w32(&mut e, 0x16C, 0x0100_0000);
    w32(&mut e, 0x188, 1);
    e[0x210..0x218].copy_from_slice(&PARAMS[..8]);
    assert_eq!(&out[..size], &e[..], "sm_90 cbank0 image");
    assert!(out[size..].iter().all(|&b| b == 0x55));
}

#[test]
fn sm100_offsets() {
    let p = Cbank0Params {
        block: [64, 2, 1],
        grid: [5, 6, 7],
        shared_window: 0x7294_0000_0000,
        local_window: 0x7293_0000_0000,
        dynamic_smem_bytes: 0,
        aggr_smem_bytes: 0,
        sm_count: 148,
        cluster: None,
        param_base: 0x380,
        params: &PARAMS[..4],
    };
    let mut out = [0xFFu8; 0x400];
    let size = build_cbank0(&arch::GB100, &mut out, &p).unwrap();
    assert_eq!(size, 0x390);
    let r32 = |o: usize| u32::from_le_bytes(out[o..o + 4].try_into().unwrap());
    let r64 = |o: usize| u64::from_le_bytes(out[o..o + 8].try_into().unwrap());
    assert_eq!([r32(0x360), r32(0x364), r32(0x368)], [64, 2, 1]);
    assert_eq!([r32(0x370), r32(0x374), r32(0x378)], [5, 6, 7]);
    assert_eq!(r64(0x2F0), 0x7294_0000_0000);
    assert_eq!(r64(0x2F8), 0x7293_0000_0000);
    assert_eq!(r32(0x37C), 0x00FF_FDC0);
    assert_eq!(r32(0x2D0), 148);
    assert_eq!(r32(0x16C), 0x400);
    assert_eq!(r64(0x358), 0);
    assert_eq!(r32(0), 0, "sm_100 keeps 0x00 free of dims");
    assert_eq!(&out[0x380..0x384], &PARAMS[..4]);
}

#[test]
fn cbank0_checks() {
    let base = Cbank0Params {
        block: [1; 3],
        grid: [1; 3],
        shared_window: 0,
        local_window: 0,
        dynamic_smem_bytes: 0,
        aggr_smem_bytes: 0,
        sm_count: 1,
        cluster: None,
        param_base: 0x160,
        params: &[],
    };
    let mut out = [0u8; 0x200];
    assert_eq!(build_cbank0(&arch::GA10B, &mut out, &base).unwrap(), 0x160);
    let e = build_cbank0(&arch::GH100, &mut out, &base).unwrap_err();
    assert_eq!(
        e.status,
        Status::InvalidCubin,
        "0x160 overlaps the sm_90 driver area: {e:?}"
    );
    assert!(build_cbank0(
        &arch::GA10B,
        &mut out,
        &Cbank0Params {
            cluster: None,
            param_base: 0x162,
            ..base
        }
    )
    .is_err());
    let big = [0u8; 0x100];
    assert!(
        build_cbank0(
            &arch::GA10B,
            &mut out,
            &Cbank0Params {
                params: &big,
                ..base
            }
        )
        .is_err(),
        "output too small"
    );
    let huge = vec![0u8; 0x1_0000];
    let mut out_huge = vec![0u8; 0x2_0000];
    let e = build_cbank0(
        &arch::GA10B,
        &mut out_huge,
        &Cbank0Params {
            params: &huge,
            ..base
        },
    )
    .unwrap_err();
    assert_eq!(e.status, Status::InvalidLaunch, "cbank over 64 KiB");
}

#[test]
fn arch_table() {
    let a = arch::arch_for_compute_class(0xC7C0).unwrap();
    assert_eq!(a.name, "ga10b");
    assert_eq!((a.copy_class, a.gpfifo_class), (0xC7B5, 0xC76F));
    assert_eq!(a.qmd_version, QmdVersion::V03);
    assert_eq!(a.va_bits, 40);
    assert_eq!(
        (a.shared_window_base, a.local_window_base),
        (0xFE_0000_0000, 0xFD_0000_0000)
    );
    assert_eq!(
        (a.shared_window_size, a.local_window_size),
        (1 << 30, 1 << 30)
    );
    assert_eq!(a.cbank0.param_base, 0x160);
    assert_eq!(a.sass_version, 0x87);
    assert!(std::ptr::eq(arch::ARCHS[0], &arch::GA10B), "ga10b first");

    let h = arch::arch_for_compute_class(0xCBC0).unwrap();
    assert_eq!(
        (h.name, h.copy_class, h.gpfifo_class, h.usermode_class),
        ("gh100", 0xC8B5, 0xC86F, 0xC661)
    );
    assert_eq!(h.qmd_version, QmdVersion::V04);
    assert_eq!(
        (h.shared_window_base, h.local_window_base),
        (0x7294_0000_0000, 0x7293_0000_0000)
    );
    assert_eq!(
        h.shared_window_base % (1 << 32),
        0,
        "Hopper shared window is 4 GiB aligned"
    );
    assert!(h.shared_window_size >= 1 << 32);
    assert_eq!(h.cbank0.param_base, 0x210);

    assert_eq!(arch::arch_for_compute_class(0xC6C0).unwrap().name, "ga100");
    assert_eq!(arch::arch_for_compute_class(0xC9C0).unwrap().name, "ad10x");
    let b = arch::arch_for_compute_class(0xCDC0).unwrap();
    assert_eq!(
        (b.copy_class, b.qmd_version, b.cbank0.param_base),
        (0xC9B5, QmdVersion::V05, 0x380)
    );
    let b2 = arch::arch_for_compute_class(0xCEC0).unwrap();
    assert_eq!(
        (b2.copy_class, b2.qmd_version, b2.cbank0.param_base),
        (0xCAB5, QmdVersion::V05, 0x380)
    );
    assert!(arch::arch_for_compute_class(0xC3C0).is_none());
    assert_eq!(arch::arch_for_device(0xC7C0, false).unwrap().name, "ga10x");
    assert_eq!(arch::arch_for_device(0xC7C0, true).unwrap().name, "ga10b");
    assert_eq!(arch::arch_by_name("gh100").unwrap().compute_class, 0xCBC0);
    assert_eq!(
        (
            QmdVersion::V03.size_bytes(),
            QmdVersion::V04.size_bytes(),
            QmdVersion::V05.size_dwords()
        ),
        (256, 384, 96)
    );

    for a in arch::ARCHS {
        let (s, sl) = (
            a.shared_window_base,
            a.shared_window_base + a.shared_window_size,
        );
        let (l, ll) = (
            a.local_window_base,
            a.local_window_base + a.local_window_size,
        );
        assert!(sl <= l || ll <= s, "{}: windows overlap", a.name);
        assert!(
            sl <= 1 << a.va_bits && ll <= 1 << a.va_bits,
            "{}: windows inside the VA space",
            a.name
        );
        assert!(sl <= 1 << 49, "{}: window A fields are 17 bits", a.name);
        assert!(
            a.smem_carveouts_kib.windows(2).all(|w| w[0] < w[1]),
            "{}: carveouts ascending",
            a.name
        );
    }
}

#[test]
fn local_memory_sizing() {
    assert_eq!(
        local_mem::lm_per_thread(0).unwrap(),
        0x240,
        "tinygrad starts at 0x240"
    );
    assert_eq!(local_mem::lm_per_thread(1).unwrap(), 0x260);
    assert_eq!(local_mem::lm_per_thread(0x100).unwrap(), 0x340);
    assert_eq!(
        local_mem::lm_per_thread(0xFF_FFE0 - 0x240).unwrap(),
        0xFF_FFE0
    );
    assert_eq!(
        local_mem::lm_per_thread(0xFF_FFE0 - 0x240 + 1)
            .unwrap_err()
            .status,
        Status::InvalidLaunch
    );
    assert!(local_mem::lm_per_thread(u32::MAX).is_err());

    assert_eq!(local_mem::bytes_per_warp(0x240), 0x4800);
    assert_eq!(local_mem::bytes_per_warp(0x10), 0x200);
    assert_eq!(local_mem::bytes_per_warp(0x8), 0x200, "rounded to 0x200");
    // sm_87: 48 warps/SM, 2 SMs/TPC.
    assert_eq!(local_mem::bytes_per_tpc(0x240, 48, 2).unwrap(), 0x1B_0000);
    assert_eq!(
        local_mem::bytes_per_tpc(0x10, 48, 2).unwrap(),
        0x1_0000,
        "0xC000 rounded to 0x8000"
    );
    assert!(local_mem::bytes_per_tpc(0xFF_FFE0, 0xFFFF_FFFF, 2).is_err());
    assert_eq!(local_mem::backing_size(0x1B_0000, 4, 2).unwrap(), 0xD8_0000);
    assert_eq!(
        local_mem::backing_size(0x1_8000, 1, 1).unwrap(),
        0x2_0000,
        "rounded to 0x20000"
    );
    assert!(local_mem::backing_size(u64::MAX, 2, 1).is_err());
}

/// Arbitrary param bases, parameter lengths and output sizes never panic.
#[test]
fn cbank0_arbitrary_inputs_never_panic() {
    let mut x: u32 = 0x1234_5678;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        x
    };
    let params = vec![7u8; 0x1_0100];
    let mut out = vec![0u8; 0x1_0200];
    for round in 0..5_000u32 {
        let a = arch::ARCHS[(round % 7) as usize];
        let p = Cbank0Params {
            block: [next(); 3],
            grid: [next(); 3],
            shared_window: u64::from(next()) << 20,
            local_window: u64::from(next()) << 20,
            dynamic_smem_bytes: next(),
            aggr_smem_bytes: next(),
            sm_count: next(),
            cluster: None,
            param_base: match round % 3 {
                0 => next(),
                1 => next() % 0x400,
                _ => a.cbank0.param_base,
            },
            params: &params[..(next() % 0x1_0100) as usize],
        };
        let n = (next() % 0x1_0200) as usize;
        if let Ok(size) = build_cbank0(a, &mut out[..n], &p) {
            assert!(size <= n && size <= 0x1_0000 && size % 16 == 0);
        }
    }
}

/// sm_90 cluster words for a cluster launch (what nvcc 13's cluster SASS reads: the flag at
/// 0x140, the shape at 0x144, its reciprocals at 0x150, the grid in clusters at 0x15C and the
/// blocks per cluster at 0x188).
#[test]
fn sm90_cluster_words() {
    let p = Cbank0Params {
        block: [128, 1, 1],
        grid: [12, 4, 2],
        shared_window: 0x7294_0000_0000,
        local_window: 0x7293_0000_0000,
        dynamic_smem_bytes: 0,
        aggr_smem_bytes: 0x600,
        sm_count: 132,
        cluster: Some([3, 2, 1]),
        param_base: 0x210,
        params: &PARAMS[..8],
    };
    let mut out = [0u8; 0x400];
    build_cbank0(&arch::GH100, &mut out, &p).unwrap();
    let r32 = |o: usize| u32::from_le_bytes(out[o..o + 4].try_into().unwrap());
    assert_eq!(r32(0x140), 1);
    assert_eq!([r32(0x144), r32(0x148), r32(0x14C)], [3, 2, 1]);
    assert_eq!(
        [r32(0x150), r32(0x154), r32(0x158)],
        [(1.0f32 / 3.0).to_bits(), 0.5f32.to_bits(), 1.0f32.to_bits()]
    );
    assert_eq!([r32(0x15C), r32(0x160), r32(0x164)], [4, 2, 2]);
    assert_eq!(r32(0x188), 6);
    // Not a cluster launch: flag 0, clusters of one block.
    let mut out2 = [0u8; 0x400];
    build_cbank0(
        &arch::GH100,
        &mut out2,
        &Cbank0Params { cluster: None, ..p },
    )
    .unwrap();
    let r = |o: usize| u32::from_le_bytes(out2[o..o + 4].try_into().unwrap());
    assert_eq!((r(0x140), r(0x144), r(0x15C), r(0x188)), (0, 1, 12, 1));
}
