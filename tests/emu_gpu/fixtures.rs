//! Emulated GPU tests: every fixture kernel on both architectures (sm_87 and sm_90), chained
//! QMDs, and too few registers.

use super::*;

#[test]
fn fixture_saxpy() {
    for (arch, class) in ARCHES {
        let mut env = compute_env(arch, class);
        let n = 777u32;
        let (x, y) = (DATA, DATA + 0x1_0000);
        // Small dyadic values: a * x + y is exact, fused or not.
        let xv: Vec<f32> = (0..n).map(|i| (i % 97) as f32 * 0.25).collect();
        let yv: Vec<f32> = (0..n).map(|i| 3.0 - (i % 13) as f32).collect();
        env.write(x, &floats(&xv));
        env.write(y, &floats(&yv));
        let p = params(&[
            &2.5f32.to_le_bytes(),
            &[0; 4],
            &x.to_le_bytes(),
            &y.to_le_bytes(),
            &n.to_le_bytes(),
        ]);
        let f = run_fixture(
            &mut env,
            arch,
            "saxpy",
            [n.div_ceil(128), 1, 1],
            [128, 1, 1],
            0x400,
            &p,
        );
        assert!(f.is_empty(), "{arch}: {f:?}");
        let got = f32s(&env, y, n as usize);
        for i in 0..n as usize {
            assert_eq!(got[i], 2.5 * xv[i] + yv[i], "{arch} y[{i}]");
        }
    }
}

#[test]
fn fixture_matmul_tiled() {
    for (arch, class) in ARCHES {
        let mut env = compute_env(arch, class);
        let n = 20u32; // two tiles per dimension, the second one partial
        let (a, b, c) = (DATA, DATA + 0x1_0000, DATA + 0x2_0000);
        let av: Vec<f32> = (0..n * n).map(|i| (i % 7) as f32 - 3.0).collect();
        let bv: Vec<f32> = (0..n * n).map(|i| (i % 5) as f32).collect();
        env.write(a, &floats(&av));
        env.write(b, &floats(&bv));
        env.write(c, &vec![0xff; (n * n * 4) as usize]);
        let p = params(&[
            &a.to_le_bytes(),
            &b.to_le_bytes(),
            &c.to_le_bytes(),
            &n.to_le_bytes(),
        ]);
        // Static shared 2 x 16 x 16 floats + the 1 KiB reserve.
        let f = run_fixture(
            &mut env,
            arch,
            "matmul_tiled",
            [2, 2, 1],
            [16, 16, 1],
            0xc00,
            &p,
        );
        assert!(f.is_empty(), "{arch}: {f:?}");
        let got = f32s(&env, c, (n * n) as usize);
        let n = n as usize;
        for r in 0..n {
            for col in 0..n {
                let want: f32 = (0..n).map(|k| av[r * n + k] * bv[k * n + col]).sum();
                assert_eq!(got[r * n + col], want, "{arch} C[{r}][{col}]");
            }
        }
    }
}

#[test]
fn fixture_matmul_without_static_shared_faults() {
    for (arch, class) in ARCHES {
        let mut env = compute_env(arch, class);
        let p = params(&[
            &DATA.to_le_bytes(),
            &DATA.to_le_bytes(),
            &DATA.to_le_bytes(),
            &16u32.to_le_bytes(),
        ]);
        let f = run_fixture(
            &mut env,
            arch,
            "matmul_tiled",
            [1, 1, 1],
            [16, 16, 1],
            0x400,
            &p,
        );
        assert_eq!(f.first().map(|f| f.code), Some(13), "{arch}: {f:?}");
    }
}

#[test]
fn fixture_reduce_sum() {
    for (arch, class) in ARCHES {
        let mut env = compute_env(arch, class);
        let n = 1000u32;
        let (inp, out) = (DATA, DATA + 0x1_0000);
        let v: Vec<f32> = (0..n).map(|i| (i % 10) as f32).collect();
        env.write(inp, &floats(&v));
        let p = params(&[&inp.to_le_bytes(), &out.to_le_bytes(), &n.to_le_bytes()]);
        let f = run_fixture(
            &mut env,
            arch,
            "reduce_sum",
            [8, 1, 1],
            [128, 1, 1],
            0x400 + 128 * 4,
            &p,
        );
        assert!(f.is_empty(), "{arch}: {f:?}");
        let got = f32s(&env, out, 8);
        for (blk, g) in got.iter().enumerate() {
            let want: f32 = v.iter().skip(blk * 128).take(128).sum();
            assert_eq!(*g, want, "{arch} out[{blk}]");
        }
        // Too little shared memory for the dynamic array: the kernel's stores fault.
        let f = run_fixture(
            &mut env,
            arch,
            "reduce_sum",
            [8, 1, 1],
            [128, 1, 1],
            0x400,
            &p,
        );
        assert!(
            !f.is_empty(),
            "{arch}: launch with no dynamic shared memory did not fault"
        );
    }
}

#[test]
fn fixture_increment_fill_and_empty() {
    for (arch, class) in ARCHES {
        let mut env = compute_env(arch, class);
        let p64 = DATA;
        env.write(p64, &40u64.to_le_bytes());
        let p = params(&[&p64.to_le_bytes(), &0x1_0000_0002u64.to_le_bytes()]);
        assert!(run_fixture(
            &mut env,
            arch,
            "increment",
            [4, 1, 1],
            [32, 1, 1],
            0x400,
            &p
        )
        .is_empty());
        assert_eq!(env.u64(p64), 0x1_0000_002a, "{arch}");

        let buf = DATA + 0x1000;
        env.write(buf, &vec![0u8; 4 * 200]);
        let p = params(&[
            &buf.to_le_bytes(),
            &0xdead_beefu32.to_le_bytes(),
            &100u32.to_le_bytes(),
        ]);
        assert!(
            run_fixture(&mut env, arch, "fill_u32", [3, 1, 1], [64, 1, 1], 0x400, &p).is_empty()
        );
        let got = u32s(&env, buf, 200);
        assert!(got[..100].iter().all(|&v| v == 0xdead_beef), "{arch}");
        assert!(got[100..].iter().all(|&v| v == 0), "{arch}");

        assert!(run_fixture(
            &mut env,
            arch,
            "empty_kernel",
            [1, 1, 1],
            [1, 1, 1],
            0x400,
            &[]
        )
        .is_empty());
    }
}

#[test]
fn fixture_mixed_params_layout() {
    for (arch, class) in ARCHES {
        let mut env = compute_env(arch, class);
        let out = DATA + 0x3000;
        env.write(out, &[0u8; 64]);
        // (signed char a, short b, int c, long long d, unsigned* out, Mixed s {int, float, double}, double e)
        let mut p = vec![0u8; 48];
        p[0] = (-3i8) as u8;
        p[2..4].copy_from_slice(&(-1234i16).to_le_bytes());
        p[4..8].copy_from_slice(&(-7i32).to_le_bytes());
        p[8..16].copy_from_slice(&0x1234_5678_9abc_def0i64.to_le_bytes());
        p[16..24].copy_from_slice(&out.to_le_bytes());
        p[24..28].copy_from_slice(&(-5i32).to_le_bytes());
        p[28..32].copy_from_slice(&1.5f32.to_le_bytes());
        p[32..40].copy_from_slice(&2.25f64.to_le_bytes());
        p[40..48].copy_from_slice(&(-0.125f64).to_le_bytes());
        assert!(run_fixture(
            &mut env,
            arch,
            "mixed_params",
            [1, 1, 1],
            [32, 1, 1],
            0x400,
            &p
        )
        .is_empty());
        let sd = 2.25f64.to_bits();
        let ed = (-0.125f64).to_bits();
        let want = [
            (-3i32) as u32,
            (-1234i32) as u32,
            (-7i32) as u32,
            0x9abc_def0,
            0x1234_5678,
            (-5i32) as u32,
            1.5f32.to_bits(),
            sd as u32,
            (sd >> 32) as u32,
            ed as u32,
            (ed >> 32) as u32,
        ];
        assert_eq!(u32s(&env, out, 11), want, "{arch}");
    }
}

#[test]
fn fixture_uses_local_and_bounded_128() {
    for (arch, class) in ARCHES {
        let mut env = compute_env(arch, class);
        let (idx, out) = (DATA, DATA + 0x1_0000);
        let n = 300u32;
        let iv: Vec<u32> = (0..n).map(|i| i * 7 + 1).collect();
        env.write(
            idx,
            &iv.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<u8>>(),
        );
        let p = params(&[&idx.to_le_bytes(), &out.to_le_bytes(), &n.to_le_bytes()]);
        let idx_bytes: Vec<u8> = iv.iter().flat_map(|v| v.to_le_bytes()).collect();
        // uses_local keeps buf[64] on the stack (EIATTR_MIN_STACK_SIZE 256). Sizes per §3.3:
        // lm = round_up(256 + 0x240, 32) = 0x340 per thread; per warp round_up(lm * 32, 0x200)
        // = 0x6800; per TPC 0x6800 * warps_per_sm (48 sm_87, 64 sm_90) * 2 SMs.
        let per_tpc: u32 = if arch == "sm_90" {
            0x34_0000
        } else {
            0x27_0000
        };
        let lm_base = [inc(1, 0x790, 2), (LOCAL >> 32) as u32, LOCAL as u32];
        let lm_size = [inc(1, 0x2e4, 3), 0, per_tpc, 0xff];
        env.submit(&lm_base);
        let f = run_fixture_local(
            &mut env,
            arch,
            "uses_local",
            [5, 1, 1],
            [64, 1, 1],
            0x400,
            0x340,
            &p,
        );
        assert_eq!(
            f.first().map(|f| f.code),
            Some(31),
            "{arch}: no NON_THROTTLED size: {f:?}"
        );
        let mut env = compute_env(arch, class);
        env.write(idx, &idx_bytes);
        env.submit(&[&lm_base[..], &lm_size[..]].concat());
        let f = run_fixture_local(
            &mut env,
            arch,
            "uses_local",
            [5, 1, 1],
            [64, 1, 1],
            0x400,
            0x300,
            &p,
        );
        assert_eq!(
            f.first().map(|f| f.code),
            Some(31),
            "{arch}: QMD local size too small: {f:?}"
        );
        let mut env = compute_env(arch, class);
        env.write(idx, &idx_bytes);
        env.submit(&[&lm_base[..], &lm_size[..]].concat());
        let f = run_fixture_local(
            &mut env,
            arch,
            "uses_local",
            [5, 1, 1],
            [64, 1, 1],
            0x400,
            0x340,
            &p,
        );
        assert!(f.is_empty(), "{arch}: {f:?}");
        let got = u32s(&env, out, n as usize);
        for i in 0..n {
            assert_eq!(
                got[i as usize],
                ((i * 7 + 1) & 63) * 3 + i,
                "{arch} out[{i}]"
            );
        }

        let p = params(&[&out.to_le_bytes()]);
        assert!(run_fixture(
            &mut env,
            arch,
            "bounded_128",
            [2, 1, 1],
            [128, 1, 1],
            0x400,
            &p
        )
        .is_empty());
        let got = u32s(&env, out, 256);
        assert!(
            got.iter().enumerate().all(|(i, &v)| v == i as u32 % 128),
            "{arch}"
        );
        // More threads than __launch_bounds__(128) allows.
        let f = run_fixture(
            &mut env,
            arch,
            "bounded_128",
            [1, 1, 1],
            [256, 1, 1],
            0x400,
            &p,
        );
        assert_eq!(f.first().map(|f| f.code), Some(13), "{arch}: {f:?}");
    }
}

#[test]
fn dependent_qmd_chain_runs_both_grids() {
    let mut env = compute_env("sm_87", AMPERE_COMPUTE_B);
    let p64 = DATA;
    env.write(p64, &0u64.to_le_bytes());
    env.write(CODE, &fixture_code("sm_87", "increment"));
    let mut qmds = Vec::new();
    for k in 0..2u64 {
        let cb = cbank0(
            [32, 1, 1],
            [1, 1, 1],
            0x160,
            &params(&[&p64.to_le_bytes(), &(k + 1).to_le_bytes()]),
        );
        env.write(CBANK + k * 0x400, &cb);
        let l = Launch {
            grid: [1, 1, 1],
            block: [32, 1, 1],
            regs: 16,
            shared: 0x400,
            program: CODE,
            cbank: CBANK + k * 0x400,
            cbank_size: cb.len() as u32,
            release: None,
            local: 0,
        };
        qmds.push(qmd_v03(&l, 0));
    }
    // First QMD: DEPENDENT_QMD0_POINTER = second >> 8, ENABLE, ACTION = SCHEDULE, PREFETCH.
    set(&mut qmds[0], 511, 480, (QMD + 0x100) >> 8);
    set(&mut qmds[0], 512, 512, 1);
    set(&mut qmds[0], 515, 513, 1);
    set(&mut qmds[0], 516, 516, 1);
    env.write(QMD, &qmd_bytes(&qmds[0]));
    env.write(QMD + 0x100, &qmd_bytes(&qmds[1]));
    env.submit(&launch_words(QMD));
    env.wait_idle();
    assert!(env.gpu.faults().is_empty(), "{:?}", env.gpu.faults());
    assert_eq!(env.u64(p64), 3);
}

#[test]
fn register_count_below_kernel_requirement_faults() {
    let mut env = compute_env("sm_87", AMPERE_COMPUTE_B);
    let (_, _, _, mut l) = vector_add_setup(&env, "sm_87", 64, None);
    l.regs = 2; // vector_add needs more than 2 registers (EIATTR_REGCOUNT)
    env.write(QMD, &qmd_bytes(&qmd_v03(&l, 0)));
    env.submit(&launch_words(QMD));
    env.wait_fault();
    assert_eq!(env.gpu.faults()[0].code, 13);
}
