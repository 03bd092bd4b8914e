//! Emulated GPU tests: compute launches from QMDs built here (V03 and V04), their releases
//! and the exceptions of bad QMDs, code and addresses.

use super::*;

#[test]
fn v03_vector_add_computes_sums_and_releases() {
    let mut env = Env::new(16, &[AMPERE_COMPUTE_B]);
    let n = 1000u32; // not a multiple of the block size
    let (av, bv, c, l) = vector_add_setup(&env, "sm_87", n, None);
    env.write(QMD, &qmd_bytes(&qmd_v03(&l, 0)));
    let mut w = compute_init(AMPERE_COMPUTE_B);
    w.extend(launch_words(QMD));
    env.submit(&w);
    env.wait_idle();
    assert!(env.gpu.faults().is_empty(), "{:?}", env.gpu.faults());
    for i in 0..n as usize {
        let got = f32::from_le_bytes(env.read(c + i as u64 * 4, 4).try_into().unwrap());
        assert_eq!(got, av[i] + bv[i], "c[{i}]");
    }
    // Threads i >= n store nothing.
    assert_eq!(env.read(c + u64::from(n) * 4, 64), vec![0xff; 64]);
    assert_eq!(env.u32(SEM + 0x100), 0x77);
}

#[test]
fn v03_kernel_store_to_unmapped_va_is_mmu_fault_with_address() {
    let mut env = Env::new(16, &[AMPERE_COMPUTE_B]);
    let (_, _, _, l) = vector_add_setup(&env, "sm_87", 256, Some(UNMAPPED));
    env.write(QMD, &qmd_bytes(&qmd_v03(&l, 0)));
    let mut w = compute_init(AMPERE_COMPUTE_B);
    w.extend(launch_words(QMD));
    env.submit(&w);
    env.wait_fault();
    assert_eq!(env.notifier_status(), (31, 0xffff));
    let f = env.gpu.faults();
    assert_eq!((f[0].code, f[0].address), (31, Some(UNMAPPED)));
    assert_eq!(
        env.u32(SEM + 0x100),
        0,
        "release written after a faulting grid"
    );
}

#[test]
fn v03_minor_version_3_is_sked_exception() {
    let mut env = Env::new(16, &[AMPERE_COMPUTE_B]);
    let (_, _, c, l) = vector_add_setup(&env, "sm_87", 64, None);
    env.write(QMD, &qmd_bytes(&qmd_v03(&l, 3)));
    let mut w = compute_init(AMPERE_COMPUTE_B);
    w.extend(launch_words(QMD));
    env.submit(&w);
    env.wait_fault();
    assert_eq!(env.notifier_status(), (13, 0xffff));
    assert_eq!(env.read(c, 4), vec![0xff; 4]);
}

#[test]
fn launch_without_windows_is_sked_exception() {
    let mut env = Env::new(16, &[AMPERE_COMPUTE_B]);
    let (_, _, _, l) = vector_add_setup(&env, "sm_87", 64, None);
    env.write(QMD, &qmd_bytes(&qmd_v03(&l, 0)));
    let mut w = vec![inc(1, 0, 1), AMPERE_COMPUTE_B];
    w.extend(launch_words(QMD));
    env.submit(&w);
    env.wait_fault();
    assert_eq!(env.notifier_status(), (13, 0xffff));
}

#[test]
fn unknown_code_is_gr_exception_with_program_address() {
    let mut env = Env::new(16, &[AMPERE_COMPUTE_B]);
    let (_, _, _, mut l) = vector_add_setup(&env, "sm_87", 64, None);
    l.program = CODE + 0x8000;
    env.write(l.program, &[0x5a; 0x400]);
    env.write(QMD, &qmd_bytes(&qmd_v03(&l, 0)));
    let mut w = compute_init(AMPERE_COMPUTE_B);
    w.extend(launch_words(QMD));
    env.submit(&w);
    env.wait_fault();
    let f = env.gpu.faults();
    assert_eq!((f[0].code, f[0].address), (13, Some(CODE + 0x8000)));
}

#[test]
fn v04_qmd_type_0_does_nothing_and_type_2_runs() {
    let mut env = Env::new(16, &[HOPPER_COMPUTE_A]);
    let n = 300u32;
    let (av, bv, c, l) = vector_add_setup(&env, "sm_90", n, None);
    env.write(QMD, &qmd_bytes(&qmd_v04(&l, 0)));
    let mut w = compute_init(HOPPER_COMPUTE_A);
    w.extend(launch_words(QMD));
    sem(&mut w, SEM, 1, 1);
    env.submit(&w);
    env.wait_idle();
    assert_eq!(env.u32(SEM), 1);
    assert!(env.gpu.faults().is_empty(), "{:?}", env.gpu.faults());
    assert_eq!(env.read(c, 16), vec![0xff; 16], "QMD_TYPE 0 grid executed");
    assert_eq!(env.u32(SEM + 0x100), 0, "QMD_TYPE 0 release written");

    env.write(QMD + 0x200, &qmd_bytes(&qmd_v04(&l, 2)));
    env.submit(&launch_words(QMD + 0x200));
    env.wait_idle();
    assert!(env.gpu.faults().is_empty(), "{:?}", env.gpu.faults());
    for i in 0..n as usize {
        let got = f32::from_le_bytes(env.read(c + i as u64 * 4, 4).try_into().unwrap());
        assert_eq!(got, av[i] + bv[i], "c[{i}]");
    }
    assert_eq!(env.u32(SEM + 0x100), 0x77);
}

#[test]
fn sm87_code_on_hopper_class_faults() {
    let mut env = Env::new(16, &[HOPPER_COMPUTE_A]);
    let (_, _, _, l) = vector_add_setup(&env, "sm_87", 64, None);
    env.write(QMD, &qmd_bytes(&qmd_v04(&l, 2)));
    let mut w = compute_init(HOPPER_COMPUTE_A);
    w.extend(launch_words(QMD));
    env.submit(&w);
    env.wait_fault();
    assert_eq!(env.gpu.faults()[0].code, 13);
}

#[test]
fn registered_kernel_runs_and_report_semaphore_and_i2m() {
    fn mark(ctx: &tegragpu::emu::kernels::LaunchCtx) -> Result<(), tegragpu::emu::hwif::MmuFault> {
        let out = ctx.param_u64(0);
        let total = ctx.grid[0] * ctx.block[0];
        tegragpu::emu::hwif::gpu_write(ctx.mmu, out, &total.to_le_bytes())
    }
    let code: Vec<u8> = (0..64u8)
        .map(|i| i ^ 0xa5)
        .chain(*b"emu-gpu-test-kernel")
        .collect();
    tegragpu::emu::kernels::register("mark", code.clone(), mark);
    let mut env = Env::new(16, &[AMPERE_COMPUTE_B]);
    env.write(CODE + 0x4000, &code);
    let out = DATA + 0x800;
    let mut l = Launch {
        grid: [3, 1, 1],
        block: [32, 1, 1],
        regs: 16,
        shared: 0x400,
        program: CODE + 0x4000,
        cbank: CBANK + 0x1000,
        cbank_size: 0x170,
        release: None,
        local: 0,
    };
    let cb = cbank0(l.block, l.grid, 0x160, &out.to_le_bytes());
    l.cbank_size = cb.len() as u32;
    let mut w = compute_init(AMPERE_COMPUTE_B);
    // I2M the cbank (3.5): LINE_LENGTH_IN, LINE_COUNT, OFFSET_OUT_UPPER, OFFSET_OUT, then a 1INC at LAUNCH_DMA.
    w.extend([
        inc(1, 0x180, 4),
        cb.len() as u32,
        1,
        (l.cbank >> 32) as u32,
        l.cbank as u32,
    ]);
    w.push(one_inc(1, 0x1b0, 1 + cb.len() as u32 / 4));
    w.push(0x11);
    w.extend(
        cb.chunks(4)
            .map(|c| u32::from_le_bytes(c.try_into().unwrap())),
    );
    // And the QMD through I2M as well.
    let q = qmd_bytes(&qmd_v03(&l, 0));
    w.extend([
        inc(1, 0x180, 4),
        q.len() as u32,
        1,
        (QMD >> 32) as u32,
        QMD as u32,
    ]);
    w.push(one_inc(1, 0x1b0, 1 + q.len() as u32 / 4));
    w.push(0x11);
    w.extend(
        q.chunks(4)
            .map(|c| u32::from_le_bytes(c.try_into().unwrap())),
    );
    w.extend(launch_words(QMD));
    // Report semaphore, one word (NVK's plain store).
    w.extend([
        inc(1, 0x1b00, 4),
        (SEM >> 32) as u32,
        SEM as u32,
        0x4242,
        0x1000_0000,
    ]);
    env.submit(&w);
    env.wait_idle();
    assert!(env.gpu.faults().is_empty(), "{:?}", env.gpu.faults());
    assert_eq!(env.u32(out), 96);
    assert_eq!(env.u32(SEM), 0x4242);
}
