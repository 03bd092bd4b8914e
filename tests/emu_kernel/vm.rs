//! Emulated kernel tests: ALLOC_AS, ALLOC_SPACE and MAP_BUFFER_EX (§4.1, §4.3): address-space
//! checks, the user VMA, mappings and fixed areas.

use super::*;

#[test]
fn alloc_as_checks() {
    let _g = serial();
    let r = Rig::new();
    let two_mib = 2 << 20;
    assert_eq!(r.alloc_as(0, SEED_END), Err(libc::EINVAL), "start 0");
    assert_eq!(r.alloc_as(SEED_START, 0), Err(libc::EINVAL), "end 0");
    assert_eq!(
        r.alloc_as(SEED_START + 4096, SEED_END),
        Err(libc::EINVAL),
        "start not 2 MiB aligned"
    );
    assert_eq!(
        r.alloc_as(SEED_START, SEED_END - 4096),
        Err(libc::EINVAL),
        "end not 2 MiB aligned"
    );
    assert_eq!(
        r.alloc_as(SEED_END, SEED_START),
        Err(libc::EINVAL),
        "start > end"
    );
    assert_eq!(r.alloc_as(two_mib, two_mib), Err(libc::EINVAL), "empty");
    let mut a = nvgpu_alloc_as_args {
        big_page_size: 65536,
        va_range_start: SEED_START,
        va_range_end: SEED_END,
        ..Default::default()
    };
    assert_eq!(
        ioc(&r.s, r.ctrl, NVGPU_GPU_IOCTL_ALLOC_AS, &mut a),
        Err(libc::EINVAL),
        "64K big pages"
    );
    a.big_page_size = 0;
    a.va_range_split = 1 << 36;
    assert_eq!(
        ioc(&r.s, r.ctrl, NVGPU_GPU_IOCTL_ALLOC_AS, &mut a),
        Err(libc::EINVAL),
        "split"
    );
    assert_eq!(
        r.alloc_as(SEED_START, 1 << 49),
        Err(libc::ENOMEM),
        "aperture above 2^49"
    );
    let fd = r.alloc_as(SEED_START, 0xFF_0000_0000).unwrap();
    assert!(cloexec(fd));
}

#[test]
fn user_vma_va_sequence_matches_hardware() {
    let _g = serial();
    let r = Rig::new();
    let expect = [
        (4096u32, 0xff_ffa0_0000u64),
        (4096, 0xff_ffa0_1000),
        (65536, 0xff_ffa1_0000),
        (1 << 20, 0xff_ffb0_0000),
        (16 << 20, 0xff_fe20_0000),
        (64 << 20, 0xff_f820_0000),
    ];
    for (size, va) in expect {
        let (_, fd) = r.buf(size);
        assert_eq!(r.map(fd), Ok(va), "size {size:#x}");
    }
}

#[test]
fn map_buffer_ex_checks() {
    let _g = serial();
    let r = Rig::new();
    let (id, fd) = r.buf(8192);
    let base = || nvgpu_as_map_buffer_ex_args {
        compr_kind: NV_KIND_INVALID,
        incompr_kind: NV_KIND_PITCH,
        dmabuf_fd: fd as u32,
        ..Default::default()
    };
    // 1. not a file / not a dma-buf.
    assert_eq!(
        r.map_args(&mut nvgpu_as_map_buffer_ex_args {
            dmabuf_fd: 99_999,
            ..base()
        }),
        Err(libc::EBADF)
    );
    assert_eq!(
        r.map_args(&mut nvgpu_as_map_buffer_ex_args {
            dmabuf_fd: r.ctrl as u32,
            ..base()
        }),
        Err(libc::EINVAL)
    );
    // 2. non-fixed with offset / buffer_offset / mapping_size.
    assert_eq!(
        r.map_args(&mut nvgpu_as_map_buffer_ex_args {
            offset: 0x10_0000_0000,
            ..base()
        }),
        Err(libc::EINVAL)
    );
    assert_eq!(
        r.map_args(&mut nvgpu_as_map_buffer_ex_args {
            buffer_offset: 4096,
            ..base()
        }),
        Err(libc::EINVAL)
    );
    assert_eq!(
        r.map_args(&mut nvgpu_as_map_buffer_ex_args {
            mapping_size: 4096,
            ..base()
        }),
        Err(libc::EINVAL)
    );
    // 4/5. access bits 3, TEGRA_RAW, bit 4 (old IO_COHERENT), bit 8 (old DIRECT_KIND_CTRL).
    for flags in [
        3 << 10,
        NVGPU_AS_MAP_BUFFER_FLAGS_TEGRA_RAW,
        1 << 4,
        1 << 8,
        1 << 20,
    ] {
        assert_eq!(
            r.map_args(&mut nvgpu_as_map_buffer_ex_args { flags, ..base() }),
            Err(libc::EINVAL),
            "{flags:#x}"
        );
    }
    // 11. kinds: both -1 → ENOMEM; compressible request falls back to incompr.
    assert_eq!(
        r.map_args(&mut nvgpu_as_map_buffer_ex_args {
            incompr_kind: -1,
            ..base()
        }),
        Err(libc::ENOMEM)
    );
    assert_eq!(
        r.map_args(&mut nvgpu_as_map_buffer_ex_args {
            compr_kind: 0x7,
            incompr_kind: -1,
            ..base()
        }),
        Err(libc::ENOMEM)
    );
    // Accepted flags: CACHEABLE | SYSTEM_COHERENT | ACCESS=RW.
    let flags =
        NVGPU_AS_MAP_BUFFER_FLAGS_CACHEABLE | NVGPU_AS_MAP_BUFFER_FLAGS_SYSTEM_COHERENT | (2 << 10);
    let va = r
        .map_args(&mut nvgpu_as_map_buffer_ex_args { flags, ..base() })
        .unwrap();
    // 8. re-map reuse: same VA, refcounted; a different flag set is a new mapping.
    assert_eq!(
        r.map_args(&mut nvgpu_as_map_buffer_ex_args { flags, ..base() }),
        Ok(va)
    );
    // Any fd of the same dma-buf is the same buffer.
    let fd2 = r.get_fd(id).unwrap();
    assert_eq!(
        r.map_args(&mut nvgpu_as_map_buffer_ex_args {
            flags,
            dmabuf_fd: fd2 as u32,
            ..base()
        }),
        Ok(va)
    );
    let other = r.map(fd).unwrap();
    assert_ne!(other, va);
    assert_eq!(r.s.as_mapping_count(r.as_fd), Some(2));
    r.unmap(va).unwrap();
    r.unmap(va).unwrap();
    assert_eq!(r.s.as_mapping_count(r.as_fd), Some(2), "one reference left");
    r.unmap(va).unwrap();
    assert_eq!(r.s.as_mapping_count(r.as_fd), Some(1));
    // UNMAP of an unknown address: 0, no effect.
    assert_eq!(r.unmap(0x1234_5000), Ok(0));
    assert_eq!(r.unmap(other + 4096), Ok(0));
    assert_eq!(r.s.as_mapping_count(r.as_fd), Some(1));
    // An unallocated handle cannot be mapped.
    let id = r.create(4096).unwrap();
    let ufd = r.get_fd(id).unwrap();
    assert_eq!(r.map(ufd), Err(libc::EINVAL));
}

#[test]
fn fixed_maps_and_areas() {
    let _g = serial();
    let r = Rig::new();
    let (_, fd) = r.buf(2 << 20);
    let fixed = |offset: u64, buffer_offset: u64, mapping_size: u64| nvgpu_as_map_buffer_ex_args {
        flags: NVGPU_AS_MAP_BUFFER_FLAGS_FIXED_OFFSET,
        compr_kind: NV_KIND_INVALID,
        incompr_kind: NV_KIND_PITCH,
        dmabuf_fd: fd as u32,
        buffer_offset,
        mapping_size,
        offset,
        ..Default::default()
    };
    let win = 0xFE_0000_0000u64;
    // FIXED outside any area → EINVAL.
    assert_eq!(r.map_args(&mut fixed(win, 0, 0)), Err(libc::EINVAL));
    // ALLOC_SPACE: only 4 KiB pages exist.
    assert_eq!(
        r.alloc_space(262144, 65536, NVGPU_AS_ALLOC_SPACE_FLAGS_FIXED_OFFSET, win),
        Err(libc::EINVAL)
    );
    assert_eq!(
        r.alloc_space(262144, 4096, NVGPU_AS_ALLOC_SPACE_FLAGS_FIXED_OFFSET, win),
        Ok(win)
    );
    // Overlapping fixed area → ENOMEM (not EINVAL); outside the VMA → ENOMEM.
    assert_eq!(
        r.alloc_space(
            16,
            4096,
            NVGPU_AS_ALLOC_SPACE_FLAGS_FIXED_OFFSET,
            win + (1 << 29)
        ),
        Err(libc::ENOMEM)
    );
    assert_eq!(
        r.alloc_space(
            16,
            4096,
            NVGPU_AS_ALLOC_SPACE_FLAGS_FIXED_OFFSET,
            win - 4096
        ),
        Err(libc::ENOMEM)
    );
    assert_eq!(
        r.alloc_space(16, 4096, NVGPU_AS_ALLOC_SPACE_FLAGS_FIXED_OFFSET, 0x1000),
        Err(libc::ENOMEM)
    );
    assert_eq!(
        r.alloc_space(
            16,
            4096,
            NVGPU_AS_ALLOC_SPACE_FLAGS_FIXED_OFFSET,
            0x10_0000_0123
        ),
        Err(libc::ENOMEM)
    );
    // FIXED inside: unaligned, crossing the end, overlapping → EINVAL; good ones land exactly.
    assert_eq!(r.map_args(&mut fixed(win + 0x800, 0, 0)), Err(libc::EINVAL));
    assert_eq!(
        r.map_args(&mut fixed(win + (1 << 30) - 4096, 0, 0)),
        Err(libc::EINVAL)
    );
    assert_eq!(r.map_args(&mut fixed(win, 0, 0)), Ok(win));
    assert_eq!(
        r.map_args(&mut fixed(win + 4096, 0, 4096)),
        Err(libc::EINVAL),
        "overlap"
    );
    assert_eq!(
        r.map_args(&mut fixed(win + (4 << 20), 4096, 4096)),
        Ok(win + (4 << 20))
    );
    // buffer_offset + mapping_size past the buffer → EINVAL.
    assert_eq!(
        r.map_args(&mut fixed(win + (8 << 20), 2 << 20, 4096)),
        Err(libc::EINVAL)
    );
    // Non-fixed mappings never land inside the reserved window.
    let low = 0xFD_0000_0000u64;
    assert_eq!(
        r.alloc_space(262144, 4096, NVGPU_AS_ALLOC_SPACE_FLAGS_FIXED_OFFSET, low),
        Ok(low)
    );
    for _ in 0..40 {
        let (_, f) = r.buf(16 << 20);
        let va = r.map(f).unwrap();
        for w in [win, low] {
            assert!(
                va + (16 << 20) <= w || va >= w + (1 << 30),
                "{va:#x} inside window {w:#x}"
            );
        }
    }
    // FREE_SPACE drops the mappings inside and frees the VA.
    assert_eq!(r.s.as_mapping_count(r.as_fd), Some(42));
    ioc(
        &r.s,
        r.as_fd,
        NVGPU_AS_IOCTL_FREE_SPACE,
        &mut nvgpu_as_free_space_args {
            offset: win + 4096,
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(r.s.as_mapping_count(r.as_fd), Some(40));
    assert_eq!(
        r.alloc_space(16, 4096, NVGPU_AS_ALLOC_SPACE_FLAGS_FIXED_OFFSET, win),
        Ok(win)
    );
    // FREE_SPACE of an address in no area: 0.
    assert_eq!(
        ioc(
            &r.s,
            r.as_fd,
            NVGPU_AS_IOCTL_FREE_SPACE,
            &mut nvgpu_as_free_space_args {
                offset: 0x300000,
                ..Default::default()
            }
        ),
        Ok(0)
    );
}
