//! Emulated kernel tests: TSG and channel bring-up (§4.2): binding order, watchdog,
//! SETUP_BIND checks, channel ids, syncpoints, the error notifier and the characteristics.

use super::*;

#[test]
fn tsg_bind_before_as_bind_is_einval() {
    let _g = serial();
    let r = Rig::new();
    let tsg = r.open_tsg();
    let veid = r.subctx(tsg, r.as_fd).unwrap();
    assert_eq!(veid, 1);
    assert_eq!(r.subctx(tsg, r.as_fd), Ok(2));
    let ch = r.open_channel();
    assert_eq!(r.bind_ex(tsg, ch, veid), Err(libc::EINVAL));
    r.as_bind(ch).unwrap();
    assert_eq!(
        r.as_bind(ch),
        Err(libc::EINVAL),
        "a channel can never change AS"
    );
    // VEID from another AS → EINVAL; subcontext id ≥ max → EINVAL.
    let other_as = r.alloc_as(SEED_START, 0xFF_0000_0000).unwrap();
    let tsg2 = r.open_tsg();
    let v2 = r.subctx(tsg2, other_as).unwrap();
    assert_eq!(r.bind_ex(tsg2, ch, v2), Err(libc::EINVAL));
    assert_eq!(r.bind_ex(tsg, ch, 64), Err(libc::EINVAL));
    assert_eq!(
        r.bind_ex(tsg, r.as_fd, veid),
        Err(libc::EINVAL),
        "not a channel"
    );
    assert_eq!(r.bind_ex(tsg, ch, veid), Ok(0));
    assert_eq!(
        r.bind_ex(tsg, ch, veid),
        Err(libc::EINVAL),
        "already in a TSG"
    );
    // Subcontext checks.
    let mut a = nvgpu_tsg_create_subcontext_args {
        r#type: 2,
        as_fd: r.as_fd,
        ..Default::default()
    };
    assert_eq!(
        ioc(&r.s, tsg, NVGPU_TSG_IOCTL_CREATE_SUBCONTEXT, &mut a),
        Err(libc::EINVAL)
    );
    assert_eq!(r.subctx(tsg, ch), Err(libc::EINVAL), "not an AS fd");
    let mut d = nvgpu_tsg_delete_subcontext_args { veid, reserved: 0 };
    assert_eq!(
        ioc(&r.s, tsg, NVGPU_TSG_IOCTL_DELETE_SUBCONTEXT, &mut d),
        Err(libc::EINVAL),
        "channel bound"
    );
    d.veid = 64;
    assert_eq!(
        ioc(&r.s, tsg, NVGPU_TSG_IOCTL_DELETE_SUBCONTEXT, &mut d),
        Err(libc::EINVAL)
    );
    d.veid = 40;
    assert_eq!(
        ioc(&r.s, tsg, NVGPU_TSG_IOCTL_DELETE_SUBCONTEXT, &mut d),
        Ok(0),
        "unallocated"
    );
}

#[test]
fn wdt_checks() {
    let _g = serial();
    let r = Rig::new();
    let ch = r.open_channel();
    assert_eq!(r.wdt(ch, 3), Err(libc::EINVAL), "both bits");
    assert_eq!(r.wdt(ch, 0), Err(libc::EINVAL), "neither");
    assert_eq!(
        r.wdt(
            ch,
            NVGPU_IOCTL_CHANNEL_ENABLE_WDT | NVGPU_IOCTL_CHANNEL_WDT_FLAG_SET_TIMEOUT
        ),
        Ok(0)
    );
    assert_eq!(r.wdt(ch, NVGPU_IOCTL_CHANNEL_DISABLE_WDT), Ok(0));
}

#[test]
fn setup_bind_checks_in_order() {
    let _g = serial();
    let r = Rig::new();
    let (_, gp) = r.buf(8192);
    let (_, ud) = r.buf(4096);
    // Not AS-bound / not in a TSG → EINVAL.
    let bare = r.open_channel();
    assert_eq!(
        r.setup_bind(bare, gp, ud, 1024, UM_FLAGS),
        Err(libc::EINVAL)
    );
    r.as_bind(bare).unwrap();
    assert_eq!(
        r.setup_bind(bare, gp, ud, 1024, UM_FLAGS),
        Err(libc::EINVAL)
    );
    // DETERMINISTIC with the WDT still on → EINVAL.
    let tsg = r.open_tsg();
    let veid = r.subctx(tsg, r.as_fd).unwrap();
    r.bind_ex(tsg, bare, veid).unwrap();
    assert_eq!(
        r.setup_bind(bare, gp, ud, 1024, UM_FLAGS),
        Err(libc::EINVAL)
    );
    r.wdt(bare, NVGPU_IOCTL_CHANNEL_DISABLE_WDT).unwrap();
    let c = bare;
    // Entry counts.
    assert_eq!(r.setup_bind(c, gp, ud, 1, UM_FLAGS), Err(libc::EINVAL));
    assert_eq!(
        r.setup_bind(c, gp, ud, 1000, UM_FLAGS),
        Err(libc::EINVAL),
        "not a power of two"
    );
    assert_eq!(
        r.setup_bind(c, gp, ud, 1 << 30, UM_FLAGS),
        Err(libc::EINVAL),
        "> U32_MAX/8"
    );
    // USERMODE without DETERMINISTIC → EINVAL.
    assert_eq!(
        r.setup_bind(
            c,
            gp,
            ud,
            1024,
            NVGPU_CHANNEL_SETUP_BIND_FLAGS_USERMODE_SUPPORT
        ),
        Err(libc::EINVAL)
    );
    // fd 0 → EINVAL (fd 0 is open: stdin).
    assert_eq!(r.setup_bind(c, 0, ud, 1024, UM_FLAGS), Err(libc::EINVAL));
    assert_eq!(r.setup_bind(c, gp, 0, 1024, UM_FLAGS), Err(libc::EINVAL));
    // Non-zero dma-buf offsets → EINVAL.
    let mut a = nvgpu_channel_setup_bind_args {
        num_gpfifo_entries: 1024,
        flags: UM_FLAGS,
        userd_dmabuf_fd: ud,
        gpfifo_dmabuf_fd: gp,
        userd_dmabuf_offset: 4096,
        ..Default::default()
    };
    assert_eq!(r.setup_bind_args(c, &mut a), Err(libc::EINVAL));
    a.userd_dmabuf_offset = 0;
    a.gpfifo_dmabuf_offset = 4096;
    assert_eq!(r.setup_bind_args(c, &mut a), Err(libc::EINVAL));
    // GPFIFO dma-buf smaller than max(4096, entries × 8) → EINVAL; not a dma-buf → EINVAL.
    assert_eq!(r.setup_bind(c, gp, ud, 2048, UM_FLAGS), Err(libc::EINVAL));
    assert_eq!(
        r.setup_bind(c, r.ctrl, ud, 1024, UM_FLAGS),
        Err(libc::EINVAL)
    );
    assert_eq!(
        r.setup_bind(c, 99_999, ud, 1024, UM_FLAGS),
        Err(libc::EBADF)
    );
    // Success: token 511 (chid 511, runlist 0) on a fresh system; VA outputs 0.
    let mut ok = nvgpu_channel_setup_bind_args {
        num_gpfifo_entries: 1024,
        flags: UM_FLAGS,
        userd_dmabuf_fd: ud,
        gpfifo_dmabuf_fd: gp,
        gpfifo_gpu_va: 0x1111,
        ..Default::default()
    };
    assert_eq!(r.setup_bind_args(c, &mut ok), Ok(511));
    assert_eq!(
        (ok.gpfifo_gpu_va, ok.userd_gpu_va, ok.usermode_mmio_gpu_va),
        (0, 0, 0)
    );
    // Second SETUP_BIND → EEXIST.
    assert_eq!(r.setup_bind(c, gp, ud, 1024, UM_FLAGS), Err(libc::EEXIST));
    // WDT enable after deterministic → EINVAL; disable is fine.
    assert_eq!(r.wdt(c, NVGPU_IOCTL_CHANNEL_ENABLE_WDT), Err(libc::EINVAL));
    assert_eq!(r.wdt(c, NVGPU_IOCTL_CHANNEL_DISABLE_WDT), Ok(0));
    // SUBMIT_GPFIFO on a usermode channel → EINVAL.
    let mut s = nvgpu_submit_gpfifo_args::default();
    assert_eq!(
        ioc(&r.s, c, NVGPU_IOCTL_CHANNEL_SUBMIT_GPFIFO, &mut s),
        Err(libc::EINVAL)
    );
    // The next channel gets chid 510.
    let ch2 = r.channel();
    let (_, gp2) = r.buf(8192);
    let (_, ud2) = r.buf(4096);
    assert_eq!(r.setup_bind(ch2.ch, gp2, ud2, 1024, UM_FLAGS), Ok(510));
    assert_eq!(ch2.veid, 1, "new TSG: first async VEID is 1");
}

#[test]
fn chids_are_lifo() {
    let _g = serial();
    let r = Rig::new();
    let bind = |c: &Chan| {
        let (_, gp) = r.buf(8192);
        let (_, ud) = r.buf(4096);
        r.setup_bind(c.ch, gp, ud, 1024, UM_FLAGS).unwrap()
    };
    let a = r.channel();
    let b = r.channel();
    assert_eq!((bind(&a), bind(&b)), (511, 510));
    r.close(a.ch);
    let c = r.channel();
    assert_eq!(bind(&c), 511, "a freed chid goes back to the head");
}

#[test]
fn kernel_vma_and_syncpoint_match_hardware() {
    let _g = serial();
    let r = Rig::new();
    let c = r.channel();
    let (_, gp) = r.buf(8192);
    let (_, ud) = r.buf(4096);
    r.setup_bind(c.ch, gp, ud, 1024, UM_FLAGS).unwrap();
    let sp = r.syncpoint(c.ch).unwrap();
    assert_eq!(sp.gpu_va, 0xff_ffe1_0000, "seed syncpoint page VA");
    assert_eq!(
        r.syncpoint(c.ch).unwrap(),
        sp,
        "same syncpoint on repeat calls"
    );
    let mut ro = nvgpu_as_get_sync_ro_map_args::default();
    ioc(&r.s, r.as_fd, NVGPU_AS_IOCTL_GET_SYNC_RO_MAP, &mut ro).unwrap();
    assert_eq!(
        (ro.base_gpuva, ro.sync_size, ro.num_syncpoints),
        (0x100_03e0_0000, 0x10000, 1024)
    );
    let mut o = nvgpu_alloc_obj_ctx_args {
        class_num: 0xc7c0,
        flags: 0,
        obj_id: 0x55,
    };
    assert_eq!(
        ioc(&r.s, c.ch, NVGPU_IOCTL_CHANNEL_ALLOC_OBJ_CTX, &mut o),
        Ok(0)
    );
    assert_eq!(o.obj_id, 0x55, "not written back");
    o.class_num = 0x1234;
    assert_eq!(
        ioc(&r.s, c.ch, NVGPU_IOCTL_CHANNEL_ALLOC_OBJ_CTX, &mut o),
        Err(libc::EINVAL)
    );
    // GET_VA_REGIONS: one 4 KiB region covering the user VMA.
    let mut reg = nvgpu_as_va_region::default();
    let mut v = nvgpu_as_get_va_regions_args {
        buf_addr: &mut reg as *mut _ as u64,
        buf_size: 48,
        reserved: 0,
    };
    ioc(&r.s, r.as_fd, NVGPU_AS_IOCTL_GET_VA_REGIONS, &mut v).unwrap();
    assert_eq!(v.buf_size, 24);
    assert_eq!(
        (reg.offset, reg.page_size, reg.pages),
        (SEED_START, 4096, (SEED_END - SEED_START) / 4096)
    );
}

#[test]
#[should_panic(expected = "emulated nvgpu kernel oops")]
fn get_user_syncpoint_without_vm_oopses() {
    let _g = serial();
    let r = Rig::new();
    let ch = r.open_channel();
    let _ = r.syncpoint(ch);
}

/// The seeds' "3 MB gpfifo" layout puts the GR context buffers above 2^40. The driver only
/// WARN_ONs (tu104_gr_init_commit_rtv_cb's nvgpu_assert is WARN_ON in the kernel), so
/// ALLOC_OBJ_CTX succeeds and the warning is in the kernel log.
#[test]
fn three_mib_gpfifo_then_alloc_obj_ctx_warns() {
    let _g = serial();
    let r = Rig::new();
    let c = r.channel();
    let (_, gp) = r.buf(3 << 20);
    let (_, ud) = r.buf(4096);
    r.setup_bind(c.ch, gp, ud, 1024, UM_FLAGS).unwrap();
    let sp = r.syncpoint(c.ch).unwrap();
    assert_eq!(
        sp.gpu_va, 0x100_0020_0000,
        "the syncpoint page moved above 2^40"
    );
    let mut o = nvgpu_alloc_obj_ctx_args {
        class_num: 0xc7c0,
        ..Default::default()
    };
    assert_eq!(
        ioc(&r.s, c.ch, NVGPU_IOCTL_CHANNEL_ALLOC_OBJ_CTX, &mut o),
        Ok(0)
    );
    assert!(
        r.s.kernel_log()
            .iter()
            .any(|l| l.contains("not below 2^40")),
        "{:?}",
        r.s.kernel_log()
    );
}

#[test]
fn error_notifier_and_injected_fault() {
    let _g = serial();
    let r = Rig::new();
    let c = r.channel();
    let (_, nf) = r.buf(4096);
    let set = |mem: u32, offset: u64| {
        ioc(
            &r.s,
            c.ch,
            NVGPU_IOCTL_CHANNEL_SET_ERROR_NOTIFIER,
            &mut nvgpu_set_error_notifier {
                offset,
                size: 16,
                mem,
                padding: 0,
            },
        )
    };
    assert_eq!(set(0, 0), Err(libc::EINVAL));
    assert_eq!(set(r.ctrl as u32, 0), Err(libc::EINVAL));
    assert_eq!(set(nf as u32, 4096 - 8), Err(libc::EINVAL));
    assert_eq!(set(nf as u32, 64), Ok(0));
    let p = r.mmap(nf, 4096, 0).unwrap();
    let (_, gp) = r.buf(8192);
    let (_, ud) = r.buf(4096);
    let token = r.setup_bind(c.ch, gp, ud, 1024, UM_FLAGS).unwrap();
    let timedout = || {
        let mut a = nvgpu_get_param_args::default();
        ioc(&r.s, c.ch, NVGPU_IOCTL_CHANNEL_GET_TIMEDOUT, &mut a).unwrap();
        a.value
    };
    assert_eq!(timedout(), 0);
    assert!(r
        .s
        .inject_channel_error(token, NVGPU_CHANNEL_FIFO_ERROR_MMU_ERR_FLT));
    assert_eq!(timedout(), 1);
    // SAFETY: the record lies at offset 64 of the 4 KiB mapping.
    let n: nvgpu_notification = unsafe { std::ptr::read_unaligned(p.add(64).cast()) };
    assert_eq!((n.info32, n.status), (31, 0xffff));
    assert!(n.time_stamp.nanoseconds != [0, 0]);
    let log = r.s.fault_log();
    assert!(
        log.iter().any(|f| f.token == token && f.code == 31),
        "{log:?}"
    );
    // SAFETY: our mapping.
    unsafe { r.s.munmap(p, 4096).unwrap() };
}

#[test]
fn characteristics_fixture() {
    let _g = serial();
    let r = Rig::new();
    let mut c = nvgpu_gpu_characteristics::default();
    let mut a = nvgpu_gpu_get_characteristics {
        gpu_characteristics_buf_size: 328,
        gpu_characteristics_buf_addr: &mut c as *mut _ as u64,
    };
    ioc(&r.s, r.ctrl, NVGPU_GPU_IOCTL_GET_CHARACTERISTICS, &mut a).unwrap();
    assert_eq!(a.gpu_characteristics_buf_size, 328);
    assert_eq!((c.arch, c.r#impl, c.rev), (0x170, 0xb, 0xa1));
    assert_eq!(c.flags, 0x01bf_5fff_7f5d_035d);
    assert_eq!(
        (c.compute_class, c.gpfifo_class, c.dma_copy_class),
        (0xc7c0, 0xc76f, 0xc7b5)
    );
    assert_eq!(
        (
            c.sm_arch_sm_version,
            c.sm_arch_warp_count,
            c.gpu_va_bit_count
        ),
        (0x807, 96, 40)
    );
    assert_eq!(&c.chipname[..6], b"ga10b\0");
    assert_eq!(
        (
            c.gpu_ioctl_nr_last,
            c.tsg_ioctl_nr_last,
            c.ioctl_channel_nr_last,
            c.as_ioctl_nr_last
        ),
        (44, 21, 128, 14)
    );
    assert_eq!(
        (
            c.big_page_size,
            c.available_big_page_sizes,
            c.max_gpfifo_entries
        ),
        (0, 0, 1 << 28)
    );
    // buf_size 0 is fine (size query); a short buffer gets only that many bytes.
    let mut q = nvgpu_gpu_get_characteristics::default();
    ioc(&r.s, r.ctrl, NVGPU_GPU_IOCTL_GET_CHARACTERISTICS, &mut q).unwrap();
    assert_eq!(q.gpu_characteristics_buf_size, 328);
    let mut small = [0xeeu8; 16];
    let mut s = nvgpu_gpu_get_characteristics {
        gpu_characteristics_buf_size: 8,
        gpu_characteristics_buf_addr: small.as_mut_ptr() as u64,
    };
    ioc(&r.s, r.ctrl, NVGPU_GPU_IOCTL_GET_CHARACTERISTICS, &mut s).unwrap();
    assert_eq!(&small[..8], &[0x70, 1, 0, 0, 0xb, 0, 0, 0]);
    assert_eq!(&small[8..], &[0xee; 8]);
}
