//! Emulated kernel tests: more nvmap, TSG and channel calls, batched MAP_BUFFER, and
//! requests truncated to 32 bits as the system call does.

use super::*;

#[test]
fn nvmap_more_calls() {
    let _g = serial();
    let r = Rig::new();
    // An allocation larger than the machine's memory → ENOMEM.
    let mut c = nvmap_create_handle::create_64(1 << 50);
    ioc(&r.s, r.nvmap, NVMAP_IOC_CREATE_64, &mut c).unwrap();
    assert_eq!(
        r.alloc(c.handle64(), NVMAP_HEAP_IOVMM, 0),
        Err(libc::ENOMEM)
    );
    // Mixing an exclusive heap with others → EINVAL; a lone absent carveout → ENOMEM.
    let id = r.create(8192).unwrap();
    assert_eq!(
        r.alloc(id, NVMAP_HEAP_CARVEOUT_IVM | NVMAP_HEAP_IOVMM, 0),
        Err(libc::EINVAL)
    );
    assert_eq!(r.alloc(id, NVMAP_HEAP_CARVEOUT_IVM, 0), Err(libc::ENOMEM));
    let mut a = nvmap_alloc_handle {
        handle: id,
        heap_mask: NVMAP_HEAP_IOVMM,
        numa_nid: -2,
        ..Default::default()
    };
    assert_eq!(
        ioc(&r.s, r.nvmap, NVMAP_IOC_ALLOC, &mut a),
        Err(libc::EINVAL),
        "numa_nid -2"
    );
    a.numa_nid = 17;
    assert_eq!(
        ioc(&r.s, r.nvmap, NVMAP_IOC_ALLOC, &mut a),
        Err(libc::EINVAL),
        "numa_nid above MAX_NUMNODES"
    );
    // Another node id is no error for the driver (it falls back where the node has no memory).
    let other = r.create(4096).unwrap();
    let mut b = nvmap_alloc_handle {
        handle: other,
        heap_mask: NVMAP_HEAP_IOVMM,
        numa_nid: 1,
        ..Default::default()
    };
    assert_eq!(
        ioc(&r.s, r.nvmap, NVMAP_IOC_ALLOC, &mut b),
        Ok(0),
        "numa_nid 1"
    );
    r.alloc(id, NVMAP_HEAP_IOVMM, 0).unwrap();
    // WRITE/READ by handle.
    let src: Vec<u8> = (0..64u8).collect();
    let mut w = nvmap_rw_handle {
        addr: src.as_ptr() as u64,
        handle: id,
        offset: 4096,
        elem_size: 16,
        hmem_stride: 32,
        user_stride: 16,
        count: 4,
        ..Default::default()
    };
    ioc(&r.s, r.nvmap, NVMAP_IOC_WRITE, &mut w).unwrap();
    let mut dst = vec![0u8; 64];
    let mut rd = nvmap_rw_handle {
        addr: dst.as_mut_ptr() as u64,
        ..w
    };
    ioc(&r.s, r.nvmap, NVMAP_IOC_READ, &mut rd).unwrap();
    assert_eq!(dst, src);
    let fd = r.get_fd(id).unwrap();
    let p = r.mmap(fd, 8192, 0).unwrap();
    // SAFETY: 8 KiB mapping.
    unsafe {
        assert_eq!(
            std::slice::from_raw_parts(p.add(4096 + 32), 16),
            &src[16..32]
        )
    };
    w.count = 0;
    assert_eq!(
        ioc(&r.s, r.nvmap, NVMAP_IOC_WRITE, &mut w),
        Err(libc::EINVAL)
    );
    w.count = 200;
    assert_eq!(
        ioc(&r.s, r.nvmap, NVMAP_IOC_WRITE, &mut w),
        Err(libc::EINVAL),
        "past the end"
    );
    // CACHE: op/addr checks, VMA checks.
    let mut co = nvmap_cache_op {
        addr: p as u64,
        handle: id,
        len: 4096,
        op: NVMAP_CACHE_OP_WB_INV,
        _pad0: 0,
    };
    assert_eq!(ioc(&r.s, r.nvmap, NVMAP_IOC_CACHE, &mut co), Ok(0));
    co.op = 3;
    assert_eq!(
        ioc(&r.s, r.nvmap, NVMAP_IOC_CACHE, &mut co),
        Err(libc::EINVAL)
    );
    co.op = NVMAP_CACHE_OP_WB;
    co.len = 3 * 4096;
    assert_eq!(
        ioc(&r.s, r.nvmap, NVMAP_IOC_CACHE, &mut co),
        Err(libc::EADDRNOTAVAIL)
    );
    let mut c64 = nvmap_cache_op_64 {
        addr: src.as_ptr() as u64,
        handle: id,
        len: 16,
        op: 0,
        ..Default::default()
    };
    assert_eq!(
        ioc(&r.s, r.nvmap, NVMAP_IOC_CACHE_64, &mut c64),
        Err(libc::EADDRNOTAVAIL)
    );
    let (other, _) = r.buf(4096);
    c64 = nvmap_cache_op_64 {
        addr: p as u64,
        handle: other,
        len: 16,
        op: 0,
        ..Default::default()
    };
    assert_eq!(
        ioc(&r.s, r.nvmap, NVMAP_IOC_CACHE_64, &mut c64),
        Err(libc::EFAULT),
        "VMA of another handle"
    );
    // FROM_FD gives a new ID, also through a second open (the process's one client: nvmap
    // §5); FREE of that ID leaves the first.
    let n2 = r.s.open(NVMAP, libc::O_RDWR | libc::O_CLOEXEC).unwrap();
    let mut f = nvmap_create_handle::from_fd(fd);
    ioc(&r.s, n2, NVMAP_IOC_FROM_FD, &mut f).unwrap();
    assert_ne!(f.handle, id);
    let mut bad = nvmap_create_handle::from_fd(r.ctrl);
    assert_eq!(
        ioc(&r.s, n2, NVMAP_IOC_FROM_FD, &mut bad),
        Err(libc::EINVAL)
    );
    // SAFETY: FREE by value.
    assert_eq!(
        unsafe { r.s.ioctl(n2, NVMAP_IOC_FREE, f.handle as usize) },
        Ok(0)
    );
    let still = r.get_fd(id).expect("the first ID is still valid");
    r.close(still);
    // SAFETY: our mapping.
    unsafe { r.s.munmap(p, 8192).unwrap() };
}

#[test]
fn tsg_and_channel_misc() {
    let _g = serial();
    let r = Rig::new();
    let c = r.channel();
    let mut ts = nvgpu_timeslice_args {
        timeslice_us: 10,
        reserved: 0,
    };
    assert_eq!(
        ioc(&r.s, c.tsg, NVGPU_IOCTL_TSG_SET_TIMESLICE, &mut ts),
        Err(libc::EINVAL)
    );
    ts.timeslice_us = 2000;
    assert_eq!(
        ioc(&r.s, c.tsg, NVGPU_IOCTL_TSG_SET_TIMESLICE, &mut ts),
        Ok(0)
    );
    let mut g = nvgpu_timeslice_args::default();
    ioc(&r.s, c.tsg, NVGPU_IOCTL_TSG_GET_TIMESLICE, &mut g).unwrap();
    assert_eq!(g.timeslice_us, 2000);
    // SHARE with no token / token without SHARE → EINVAL.
    let mut o = nvgpu_gpu_open_tsg_args {
        flags: NVGPU_GPU_IOCTL_OPEN_TSG_FLAGS_SHARE,
        ..Default::default()
    };
    assert_eq!(
        ioc(&r.s, r.ctrl, NVGPU_GPU_IOCTL_OPEN_TSG, &mut o),
        Err(libc::EINVAL)
    );
    o = nvgpu_gpu_open_tsg_args {
        share_token: 5,
        ..Default::default()
    };
    assert_eq!(
        ioc(&r.s, r.ctrl, NVGPU_GPU_IOCTL_OPEN_TSG, &mut o),
        Err(libc::EINVAL)
    );
    // OPEN_CHANNEL on a runlist that does not exist → EINVAL.
    let mut oc = nvgpu_gpu_open_channel_args::with_runlist_id(77);
    assert_eq!(
        ioc(&r.s, r.ctrl, NVGPU_GPU_IOCTL_OPEN_CHANNEL, &mut oc),
        Err(libc::EINVAL)
    );
    // FLUSH_L2: invalidate without flush → EINVAL.
    let mut fl = nvgpu_gpu_l2_fb_args::new(false, true, true);
    assert_eq!(
        ioc(&r.s, r.ctrl, NVGPU_GPU_IOCTL_FLUSH_L2, &mut fl),
        Err(libc::EINVAL)
    );
    let mut fl = nvgpu_gpu_l2_fb_args::new(false, false, false);
    assert_eq!(
        ioc(&r.s, r.ctrl, NVGPU_GPU_IOCTL_FLUSH_L2, &mut fl),
        Err(libc::EINVAL)
    );
    let mut fl = nvgpu_gpu_l2_fb_args::new(true, true, true);
    assert_eq!(ioc(&r.s, r.ctrl, NVGPU_GPU_IOCTL_FLUSH_L2, &mut fl), Ok(0));
    // SET_DETERMINISTIC_OPTS needs deterministic channels.
    let fds = [c.ch];
    let mut d = nvgpu_gpu_set_deterministic_opts_args {
        num_channels: 1,
        flags: 2,
        channels: fds.as_ptr() as u64,
    };
    assert_eq!(
        ioc(&r.s, r.ctrl, NVGPU_GPU_IOCTL_SET_DETERMINISTIC_OPTS, &mut d),
        Err(libc::EINVAL)
    );
    let (_, gp) = r.buf(8192);
    let (_, ud) = r.buf(4096);
    let token = r.setup_bind(c.ch, gp, ud, 1024, UM_FLAGS).unwrap();
    assert_eq!(
        ioc(&r.s, r.ctrl, NVGPU_GPU_IOCTL_SET_DETERMINISTIC_OPTS, &mut d),
        Ok(0)
    );
    // FORCE_RESET posts code 43 to the notifier and kills the channel.
    let (_, nf) = r.buf(4096);
    ioc(
        &r.s,
        c.ch,
        NVGPU_IOCTL_CHANNEL_SET_ERROR_NOTIFIER,
        &mut nvgpu_set_error_notifier {
            mem: nf as u32,
            ..Default::default()
        },
    )
    .unwrap();
    // SAFETY: _IO request.
    assert_eq!(
        unsafe { r.s.ioctl(c.ch, NVGPU_IOCTL_CHANNEL_FORCE_RESET, 0) },
        Ok(0)
    );
    let p = r.mmap(nf, 4096, 0).unwrap();
    // SAFETY: 4 KiB mapping.
    let n: nvgpu_notification = unsafe { std::ptr::read_unaligned(p.cast()) };
    assert_eq!((n.info32, n.status), (43, 0xffff));
    let mut t = nvgpu_get_param_args::default();
    ioc(&r.s, c.ch, NVGPU_IOCTL_CHANNEL_GET_TIMEDOUT, &mut t).unwrap();
    assert_eq!(t.value, 1);
    assert_eq!(token, 511);
    // A fresh channel is unserviceable until bound to a TSG.
    let fresh = r.open_channel();
    ioc(&r.s, fresh, NVGPU_IOCTL_CHANNEL_GET_TIMEDOUT, &mut t).unwrap();
    assert_eq!(t.value, 1);
    // TSG UNBIND of a channel that is not in it → EINVAL.
    let mut fdv = fresh;
    assert_eq!(
        ioc_int(&r.s, c.tsg, NVGPU_TSG_IOCTL_UNBIND_CHANNEL, &mut fdv),
        Err(libc::EINVAL)
    );
    let mut chv = c.ch;
    assert_eq!(
        ioc_int(&r.s, c.tsg, NVGPU_TSG_IOCTL_UNBIND_CHANNEL, &mut chv),
        Ok(0)
    );
    // SAFETY: our mapping.
    unsafe { r.s.munmap(p, 4096).unwrap() };
}

fn ioc_int(s: &EmuSys, fd: i32, req: u64, v: &mut i32) -> Result<i32, i32> {
    // SAFETY: the request takes a pointer to an int.
    unsafe { s.ioctl(fd, req, v as *mut i32 as usize) }
}

#[test]
fn map_buffer_batch() {
    let _g = serial();
    let r = Rig::new();
    let (_, f1) = r.buf(4096);
    let (_, f2) = r.buf(4096);
    let mk = |fd: i32| nvgpu_as_map_buffer_ex_args {
        compr_kind: NV_KIND_INVALID,
        incompr_kind: NV_KIND_PITCH,
        dmabuf_fd: fd as u32,
        ..Default::default()
    };
    let mut maps = [mk(f1), mk(f2)];
    let mut a = nvgpu_as_map_buffer_batch_args {
        maps: maps.as_mut_ptr() as u64,
        num_maps: 2,
        ..Default::default()
    };
    ioc(&r.s, r.as_fd, NVGPU_AS_IOCTL_MAP_BUFFER_BATCH, &mut a).unwrap();
    // Same placement as two single maps on a fresh seed VM (§7.4).
    assert_eq!(
        (maps[0].offset, maps[1].offset),
        (0xff_ffa0_0000, 0xff_ffa0_1000)
    );
    let mut unmaps = [nvgpu_as_unmap_buffer_args {
        offset: maps[0].offset,
    }];
    let mut a = nvgpu_as_map_buffer_batch_args {
        unmaps: unmaps.as_mut_ptr() as u64,
        num_unmaps: 1,
        ..Default::default()
    };
    ioc(&r.s, r.as_fd, NVGPU_AS_IOCTL_MAP_BUFFER_BATCH, &mut a).unwrap();
    assert_eq!(r.s.as_mapping_count(r.as_fd), Some(1));
    a.num_unmaps = 257;
    assert_eq!(
        ioc(&r.s, r.as_fd, NVGPU_AS_IOCTL_MAP_BUFFER_BATCH, &mut a),
        Err(libc::EINVAL),
        "over the batch limit"
    );
}

#[test]
fn request_is_truncated_to_32_bits_like_the_syscall() {
    let _g = serial();
    let r = Rig::new();
    // A sign-extended request number still reaches the driver as its low 32 bits.
    let req = NVGPU_GPU_IOCTL_GET_CHARACTERISTICS as u32 as i32 as i64 as u64;
    assert_ne!(req, NVGPU_GPU_IOCTL_GET_CHARACTERISTICS);
    let mut q = nvgpu_gpu_get_characteristics::default();
    assert_eq!(ioc(&r.s, r.ctrl, req, &mut q), Ok(0));
    assert_eq!(q.gpu_characteristics_buf_size, 328);
}
