//! Cubin loader tests: the kernel image and its relocations (absolute and split 32-bit
//! addresses, rejected relocation types, relocations of sections that are not loaded).

use super::*;

#[test]
fn kernels_cu_has_no_image_relocations() {
    // Only .rel(a).debug_frame (not loaded) and empty .rela.text.* sections.
    assert_eq!(parse(K87, ORIN).relocation_count(), 0);
    assert_eq!(parse(K90, HOPPER).relocation_count(), 0);
    let m = parse(K87, ORIN);
    assert_eq!(m.image_at(0x1_0000_0000).unwrap(), m.image());
}

/// The relocation sections of cuBLAS 13.1's cubins link to section 5 (`.nv.info`), not to the
/// symbol table (section 3); NVIDIA's libcuda loads them. Relocations refer to the one symbol
/// table whatever their `sh_link` says.
#[test]
fn relocations_use_the_symbol_table_whatever_their_link_says() {
    for (b, sm) in [(G87, ORIN), (G90, HOPPER)] {
        let info = sections(b)
            .iter()
            .position(|s| s.name == ".nv.info")
            .unwrap() as u32;
        let mut f = b.to_vec();
        let mut relinked = 0;
        for s in sections(b) {
            if s.ty == 4 || s.ty == 9 {
                // SHT_RELA, SHT_REL: sh_link at +40.
                f[s.hdr + 40..s.hdr + 44].copy_from_slice(&info.to_le_bytes());
                relinked += 1;
            }
        }
        assert!(relinked > 0, "{sm:?}");
        let (want, got) = (parse(b, sm), parse(&f, sm));
        assert_eq!(got.relocation_count(), want.relocation_count(), "{sm:?}");
        assert_eq!(got.relocation_count(), 4, "{sm:?}");
        let base = 0x10_0000_0000u64;
        assert_eq!(got.image_at(base).unwrap(), want.image_at(base).unwrap());
    }
}

#[test]
fn globals_constants_and_relocations() {
    // From globals.cu: g_zero[64] (NOBITS), g_init[4] at .nv.global.init+8 (g_ptr at +0,
    // = &g_init[2] via R_CUDA_G64 with addend 8), c_table (cbank 3), and cbank 4 holding
    // &g_zero, &g_init, &g_ptr (R_CUDA_64 at 0, 8, 0x10 per cuobjdump).
    for (b, sm) in [(G87, ORIN), (G90, HOPPER)] {
        let m = parse(b, sm);
        assert_eq!(m.relocation_count(), 4, "{sm:?}");
        let (c3, c3size) = m.cbank3().unwrap();
        let (c4, c4size) = m.cbank4().unwrap();
        let (gl, glsize) = m.global().unwrap();
        let (gi, gisize) = m.global_init().unwrap();
        assert_eq!((c3size, c4size, glsize, gisize), (32, 24, 256, 24));
        for off in [c3, c4, gl, gi] {
            assert_eq!(off % 128, 0);
        }
        let img = m.image();
        let words: Vec<u32> = (0..8).map(|i| u32_at(img, c3 as usize + 4 * i)).collect();
        assert_eq!(words, [1, 2, 3, 5, 8, 13, 21, 34]);
        assert!(img[gl as usize..(gl + glsize) as usize]
            .iter()
            .all(|&x| x == 0));
        assert_eq!(u32_at(img, gi as usize + 8), 0x1111_1111);
        assert_eq!(u32_at(img, gi as usize + 20), 0x4444_4444);

        for base in [0x10_0000_0000u64, 0xFF_FFE0_0000] {
            let r = m.image_at(base).unwrap();
            assert_eq!(u64_at(&r, c4 as usize), base + gl, "&g_zero");
            assert_eq!(u64_at(&r, c4 as usize + 8), base + gi + 8, "&g_init");
            assert_eq!(u64_at(&r, c4 as usize + 16), base + gi, "&g_ptr");
            assert_eq!(
                u64_at(&r, gi as usize),
                base + gi + 16,
                "g_ptr = &g_init[2]"
            );
            // Nothing else changes.
            let diff: Vec<usize> = (0..r.len()).filter(|&i| r[i] != img[i]).collect();
            assert!(diff
                .iter()
                .all(|&i| (c4 as usize..c4 as usize + 24).contains(&i)
                    || (gi as usize..gi as usize + 8).contains(&i)));
        }
    }
}

#[test]
fn relocate_argument_checks() {
    let m = parse(G87, ORIN);
    let mut img = m.image().to_vec();
    let e = m.relocate(&mut img, 0x1000_0040).unwrap_err();
    assert_eq!(e.status, Status::InvalidArgument);
    assert!(e.message.contains("0x10000040"), "{}", e.message);
    let mut short = vec![0u8; img.len() - 1];
    assert_eq!(
        m.relocate(&mut short, 0x1000_0000).unwrap_err().status,
        Status::InvalidArgument
    );
    let e = m.image_at(u64::MAX - 127).unwrap_err();
    assert_eq!(e.status, Status::InvalidArgument);
    m.relocate(&mut img, 0x1000_0000).unwrap();
}

/// File offset of relocation entry `k` in `.rel.nv.constant4` (16-byte REL entries on sm_87)
/// or `.rela.nv.constant4` (24-byte RELA on sm_90).
pub(crate) fn c4_reloc(b: &[u8], k: usize) -> (usize, usize) {
    match sections(b)
        .into_iter()
        .find(|s| s.name == ".rel.nv.constant4" || s.name == ".rela.nv.constant4")
    {
        Some(s) if s.ty == 9 => (s.offset as usize + 16 * k, 16),
        Some(s) => (s.offset as usize + 24 * k, 24),
        None => panic!("no constant4 relocations"),
    }
}

/// Set the type of relocation `k` of the cbank-4 table; return (r_offset, symbol index).
fn patch_c4_type(b: &mut [u8], k: usize, ty: u32) -> u64 {
    let (at, _) = c4_reloc(b, k);
    b[at + 8..at + 12].copy_from_slice(&ty.to_le_bytes());
    u64_at(b, at)
}

#[test]
fn abs32_lo_hi_patch_instruction_bits_63_32() {
    for (b, sm) in [(G87, ORIN), (G90, HOPPER)] {
        let m0 = parse(b, sm);
        let (c4, _) = m0.cbank4().unwrap();
        let (gl, _) = m0.global().unwrap();
        // Find the entry for g_zero (r_offset 0) and turn it into LO, then HI.
        let k = (0..3).find(|&k| u64_at(b, c4_reloc(b, k).0) == 0).unwrap();
        let base = 0x12_3456_7800u64 & !0xfff;
        for (ty, want) in [
            (0x38u32, (base + gl) as u32),
            (0x39, ((base + gl) >> 32) as u32),
        ] {
            let mut f = b.to_vec();
            patch_c4_type(&mut f, k, ty);
            let m = parse(&f, sm);
            let r = m.image_at(base).unwrap();
            assert_eq!(u32_at(&r, c4 as usize + 4), want, "type {ty:#x} on {sm:?}");
            assert_eq!(u32_at(&r, c4 as usize), 0, "bytes 0..4 untouched");
        }
        // R_CUDA_32: a 32-bit address; a base above 4 GiB does not fit.
        let mut f = b.to_vec();
        patch_c4_type(&mut f, k, 1);
        let m = parse(&f, sm);
        let r = m.image_at(0x4000_0000).unwrap();
        assert_eq!(u32_at(&r, c4 as usize), (0x4000_0000 + gl) as u32);
        let e = m.image_at(0x1_0000_0000).unwrap_err();
        assert_eq!(e.status, Status::InvalidArgument);
        assert!(e.message.contains("R_CUDA_32"), "{}", e.message);
    }
}

#[test]
fn unknown_and_func_desc_relocations_are_rejected() {
    for (b, sm, secname) in [
        (G87, ORIN, ".rel.nv.constant4"),
        (G90, HOPPER, ".rela.nv.constant4"),
    ] {
        let mut f = b.to_vec();
        patch_c4_type(&mut f, 1, 0x77);
        let msg = expect_err(&f, sm, Status::NotSupported, &["0x77", secname]);
        assert!(msg.contains("relocation"), "{msg}");
        let mut f = b.to_vec();
        patch_c4_type(&mut f, 0, 0x3e);
        expect_err(&f, sm, Status::NotSupported, &["FUNC_DESC", secname]);
    }
}

#[test]
fn relocations_of_unloaded_sections_are_ignored() {
    // Give every .rel.debug_frame entry an unknown type: still loads.
    let mut f = K87.to_vec();
    let s = section(K87, ".rel.debug_frame");
    for e in 0..(s.size / 16) as usize {
        let at = s.offset as usize + 16 * e + 8;
        f[at..at + 4].copy_from_slice(&0x77u32.to_le_bytes());
    }
    assert_eq!(parse(&f, ORIN).kernels().len(), 15);
}

#[test]
fn relocation_past_its_section_is_rejected() {
    let mut f = G87.to_vec();
    let (at, _) = c4_reloc(&f, 0);
    f[at..at + 8].copy_from_slice(&0x14u64.to_le_bytes()); // 0x14 + 8 > 24-byte .nv.constant4
    expect_err(&f, ORIN, Status::InvalidCubin, &[".rel.nv.constant4"]);
}
