//! Cubin loader tests: malformed input (bad headers, sections and records past their ends,
//! unsupported kernel features, attributes that disagree with the section headers) is
//! rejected with a message naming what is wrong.

use super::*;

#[test]
fn bad_magic() {
    let mut f = K87.to_vec();
    f[1] = b'X';
    expect_err(&f, ORIN, Status::InvalidCubin, &["magic"]);
    expect_err(b"", ORIN, Status::InvalidCubin, &["64-byte"]);
    expect_err(b"\x7fELF", ORIN, Status::InvalidCubin, &["64-byte"]);
}

#[test]
fn wrong_machine() {
    let mut f = K87.to_vec();
    f[18..20].copy_from_slice(&62u16.to_le_bytes()); // EM_X86_64
    expect_err(&f, ORIN, Status::InvalidCubin, &["e_machine 62"]);
}

#[test]
fn section_offset_past_end() {
    let mut f = K87.to_vec();
    let s = section(K87, ".nv.info");
    let len = f.len() as u64;
    f[s.hdr + 24..s.hdr + 32].copy_from_slice(&len.to_le_bytes());
    expect_err(&f, ORIN, Status::InvalidCubin, &["outside"]);
    let mut f = K87.to_vec();
    f[s.hdr + 24..s.hdr + 32].copy_from_slice(&u64::MAX.to_le_bytes());
    expect_err(&f, ORIN, Status::InvalidCubin, &["outside"]);
}

#[test]
fn section_count_huge() {
    let mut f = K87.to_vec();
    f[60..62].copy_from_slice(&0xffffu16.to_le_bytes());
    expect_err(&f, ORIN, Status::InvalidCubin, &["section header table"]);
    let mut f = K87.to_vec();
    f[40..48].copy_from_slice(&(u64::MAX - 8).to_le_bytes()); // e_shoff
    expect_err(&f, ORIN, Status::InvalidCubin, &["section header table"]);
}

#[test]
fn nv_info_record_past_section() {
    // First record of .nv.info is EIATTR_REGCOUNT (SVAL, 8 bytes); claim 0xfff0 bytes.
    let mut f = K87.to_vec();
    let s = section(K87, ".nv.info");
    let at = s.offset as usize;
    assert_eq!((f[at], f[at + 1]), (4, 0x2f));
    f[at + 2..at + 4].copy_from_slice(&0xfff0u16.to_le_bytes());
    expect_err(&f, ORIN, Status::InvalidCubin, &[".nv.info", "runs past"]);
    // Same in a per-kernel .nv.info.<fn>.
    let mut f = K90.to_vec();
    let s = section(K90, ".nv.info.vector_add");
    let at = s.offset as usize;
    assert_eq!(f[at], 4);
    f[at + 2..at + 4].copy_from_slice(&0xfff0u16.to_le_bytes());
    expect_err(
        &f,
        HOPPER,
        Status::InvalidCubin,
        &[".nv.info.vector_add", "runs past"],
    );
}

/// Find the first attribute `attr` in section `sec`; returns its file offset.
fn find_attr(b: &[u8], sec: &str, attr: u8) -> usize {
    let s = section(b, sec);
    let mut o = s.offset as usize;
    let end = (s.offset + s.size) as usize;
    while o < end {
        if b[o + 1] == attr {
            return o;
        }
        o += 4 + if b[o] == 4 {
            u16_at(b, o + 2) as usize
        } else {
            0
        };
    }
    panic!("attribute {attr:#x} not in {sec}");
}

#[test]
fn unsupported_kernel_features_are_rejected_by_name() {
    // Turn bounded_128's EIATTR_MAX_THREADS (SVAL 12) into cluster / syscall / texture
    // attributes: the module still loads, the kernel carries the refusal naming the attribute
    // and the feature, and the other kernels are unaffected.
    for (attr, name, feature) in [
        (0x5bu8, "EIATTR_BLOCKS_ARE_CLUSTERS", "clusters"),
        (0x46, "EIATTR_SYSCALL_OFFSETS", "printf"),
        (0x15, "EIATTR_BINDLESS_TEXTURE_BANK", "texture"),
        (0x1f, "EIATTR_NEED_CNP_WRAPPER", "dynamic parallelism"),
    ] {
        let mut f = K87.to_vec();
        let at = find_attr(&f, ".nv.info.bounded_128", 0x05);
        f[at + 1] = attr;
        let m = parse(&f, ORIN);
        let why = m
            .kernel("bounded_128")
            .unwrap()
            .refused
            .clone()
            .unwrap_or_else(|| panic!("{name} did not refuse the kernel"));
        for needle in [name, feature, ".nv.info.bounded_128", "bounded_128"] {
            assert!(why.contains(needle), "{why:?} lacks {needle:?}");
        }
        assert_eq!(m.kernel("vector_add").unwrap().refused, None);
    }
    // EIATTR_CTA_PER_CLUSTER (SVAL 12, like MAX_THREADS) is the compile-time cluster shape: the
    // kernel loads and carries it.
    let mut f = K87.to_vec();
    let at = find_attr(&f, ".nv.info.bounded_128", 0x05);
    f[at + 1] = 0x3d;
    let m = parse(&f, ORIN);
    let k = m.kernel("bounded_128").unwrap();
    assert_eq!(k.refused, None);
    assert_eq!(k.cluster_dims, Some([128, 1, 1]));
    assert_eq!(k.max_threads, None);
    // Warp-synchronous intrinsics (__shfl_sync, __match_any_sync, ...) make ptxas emit
    // EIATTR_COOP_GROUP_INSTR_OFFSETS / _MASK_REGIDS; neither means cooperative launch.
    for attr in [0x28u8, 0x29] {
        let mut f = K87.to_vec();
        let at = find_attr(&f, ".nv.info.bounded_128", 0x05);
        f[at + 1] = attr;
        assert_eq!(parse(&f, ORIN).kernel("bounded_128").unwrap().refused, None);
    }
}

#[test]
fn every_attribute_has_one_table_entry() {
    use tegragpu::cubin::info::{lookup, ATTRIBUTES};
    for (i, (id, name, _)) in ATTRIBUTES.iter().enumerate() {
        assert!(name.starts_with("EIATTR_"), "{name}");
        assert_eq!(lookup(*id).map(|e| e.1), Some(*name));
        assert!(
            ATTRIBUTES[..i].iter().all(|(o, n, _)| o != id && n != name),
            "{name} ({id:#x}) listed twice"
        );
    }
}

#[test]
fn regcount_disagreeing_with_sh_info_takes_the_larger() {
    // nvJitLink writes such cubins (a kernel calling functions of another input, debug builds):
    // EIATTR_REGCOUNT (12 for vector_add) and the .text section's sh_info bits 31:24 differ.
    let s = section(K87, ".text.vector_add");
    assert_eq!(
        parse(K87, ORIN)
            .kernel("vector_add")
            .unwrap()
            .register_count,
        12
    );
    for (sh_info_regs, want) in [(13, 13), (40, 40), (5, 12), (1, 12)] {
        let mut f = K87.to_vec();
        let info = (s.info & 0x00ff_ffff) | (sh_info_regs << 24);
        f[s.hdr + 44..s.hdr + 48].copy_from_slice(&info.to_le_bytes());
        let m = parse(&f, ORIN);
        assert_eq!(
            m.kernel("vector_add").unwrap().register_count,
            want,
            "sh_info {sh_info_regs}"
        );
    }
}

#[test]
fn barrier_flags_are_read_from_sh_flags() {
    // §6.3: bits 26:20. Set 6 barriers on saxpy's .text.
    let mut f = K87.to_vec();
    let s = section(K87, ".text.saxpy");
    assert_eq!(s.flags, 6);
    f[s.hdr + 8..s.hdr + 16].copy_from_slice(&0x60_0006u64.to_le_bytes());
    assert_eq!(parse(&f, ORIN).kernel("saxpy").unwrap().barrier_count, 6);
}

#[test]
fn num_barriers_attribute_is_honoured() {
    // sm_100 cubins also carry EIATTR_NUM_BARRIERS (0x4c, BVAL); the larger count wins.
    let mut f = K100.to_vec();
    let at = find_attr(&f, ".nv.info.reduce_sum", 0x4c);
    assert_eq!((f[at], u16_at(&f, at + 2)), (2, 1));
    f[at + 2..at + 4].copy_from_slice(&3u16.to_le_bytes());
    let m = parse(&f, (10, 0));
    assert_eq!(m.kernel("reduce_sum").unwrap().barrier_count, 3);
    f[at + 2..at + 4].copy_from_slice(&17u16.to_le_bytes());
    expect_err(&f, (10, 0), Status::InvalidCubin, &["reduce_sum", "17"]);
}

#[test]
fn constant2_section_becomes_the_kernels_cbank2() {
    // nvrtc 12.9 emitted no jump tables for our sources, so rename `.nv.constant0.switchy`
    // (PROGBITS, non-zero size) to `.nv.constant2.switchy` in the section-name table.
    for (b, sm) in [(G87, ORIN), (G90, HOPPER)] {
        let mut f = b.to_vec();
        let shstr = sections(b)[u16_at(b, 62) as usize].clone();
        let tab = &b[shstr.offset as usize..(shstr.offset + shstr.size) as usize];
        let needle = b".nv.constant0.switchy\0";
        let pos = tab.windows(needle.len()).position(|w| w == needle).unwrap();
        f[shstr.offset as usize + pos + 12] = b'2';
        let src = section(&f, ".nv.constant2.switchy");
        let m = parse(&f, sm);
        let k = m.kernel("switchy").unwrap();
        let (off, size) = k.cbank2.expect("cbank2");
        assert_eq!(size, src.size);
        assert_eq!(off % 128, 0);
        assert_eq!(
            &m.image()[off as usize..(off + size) as usize],
            &f[src.offset as usize..(src.offset + src.size) as usize]
        );
        assert_eq!(m.kernel("use_globals").unwrap().cbank2, None);
        // Without the section the kernel has no cbank 2.
        assert_eq!(parse(b, sm).kernel("switchy").unwrap().cbank2, None);
    }
}
