//! Tests of the cubin loader (`tegragpu::cubin`) on the committed nvrtc fixtures
//! (tests/fixtures/cubin, built by scripts/gen_cubins.py with nvrtc 12.9.86).
//!
//! Expected values come from the kernel sources and the C ABI, from
//! gpu-programming-interface.md §6, or from `cuobjdump -elf` 13.5 listings of the fixtures
//! (recorded below as constants); never from the loader itself.

mod common;

use std::panic::{catch_unwind, AssertUnwindSafe};
use tegragpu::cubin::{self, shared_memory_total, Module};
use tegragpu::Status;

const K87: &[u8] = include_bytes!("fixtures/cubin/kernels.sm_87.cubin");
const K90: &[u8] = include_bytes!("fixtures/cubin/kernels.sm_90.cubin");
const K100: &[u8] = include_bytes!("fixtures/cubin/kernels.sm_100.cubin");
const G87: &[u8] = include_bytes!("fixtures/cubin/globals.sm_87.cubin");
const G90: &[u8] = include_bytes!("fixtures/cubin/globals.sm_90.cubin");

const ORIN: (u32, u32) = (8, 7);
const HOPPER: (u32, u32) = (9, 0);

/// Register counts from `cuobjdump -elf` (EIATTR_REGCOUNT) of the fixtures.
const REGS_87: &[(&str, u32)] = &[
    ("empty_kernel", 4),
    ("vector_add", 12),
    ("saxpy", 10),
    ("matmul_tiled", 37),
    ("reduce_sum", 10),
    ("increment", 8),
    ("fill_u32", 8),
    ("mixed_params", 26),
    ("uses_local", 10),
    ("bounded_128", 8),
];
const REGS_90: &[(&str, u32)] = &[
    ("empty_kernel", 4),
    ("vector_add", 12),
    ("saxpy", 10),
    ("matmul_tiled", 32),
    ("reduce_sum", 10),
    ("increment", 8),
    ("fill_u32", 10),
    ("mixed_params", 20),
    ("uses_local", 12),
    ("bounded_128", 10),
];

// ---------------------------------------------------------------- minimal test-side ELF reader

fn u16_at(b: &[u8], o: usize) -> u16 {
    u16::from_le_bytes(b[o..o + 2].try_into().unwrap())
}
fn u32_at(b: &[u8], o: usize) -> u32 {
    u32::from_le_bytes(b[o..o + 4].try_into().unwrap())
}
fn u64_at(b: &[u8], o: usize) -> u64 {
    u64::from_le_bytes(b[o..o + 8].try_into().unwrap())
}

#[derive(Debug, Clone)]
struct Sec {
    hdr: usize, // file offset of the section header
    name: String,
    ty: u32,
    flags: u64,
    offset: u64,
    size: u64,
    info: u32,
}

fn sections(b: &[u8]) -> Vec<Sec> {
    let shoff = u64_at(b, 40) as usize;
    let shnum = u16_at(b, 60) as usize;
    let shstrndx = u16_at(b, 62) as usize;
    let raw: Vec<(usize, u32, u32, u64, u64, u64, u32)> = (0..shnum)
        .map(|i| {
            let h = shoff + i * 64;
            (
                h,
                u32_at(b, h),
                u32_at(b, h + 4),
                u64_at(b, h + 8),
                u64_at(b, h + 24),
                u64_at(b, h + 32),
                u32_at(b, h + 44),
            )
        })
        .collect();
    let stroff = raw[shstrndx].4 as usize;
    raw.iter()
        .map(|&(hdr, name, ty, flags, offset, size, info)| {
            let s = &b[stroff + name as usize..];
            let end = s.iter().position(|&c| c == 0).unwrap();
            Sec {
                hdr,
                name: String::from_utf8(s[..end].to_vec()).unwrap(),
                ty,
                flags,
                offset,
                size,
                info,
            }
        })
        .collect()
}

fn section(b: &[u8], name: &str) -> Sec {
    sections(b)
        .into_iter()
        .find(|s| s.name == name)
        .unwrap_or_else(|| panic!("no section {name}"))
}

fn parse(b: &[u8], sm: (u32, u32)) -> Module {
    Module::parse(b, sm).unwrap_or_else(|e| panic!("parse failed: {e:?}"))
}

fn expect_err(b: &[u8], sm: (u32, u32), status: Status, needles: &[&str]) -> String {
    let e = Module::parse(b, sm).expect_err("parse should fail");
    assert_eq!(e.status, status, "{e:?}");
    for n in needles {
        assert!(e.message.contains(n), "message {:?} lacks {n:?}", e.message);
    }
    e.message
}

// ---------------------------------------------------------------- kernels

#[test]
fn lists_all_kernels_of_kernels_cu() {
    for (b, sm) in [(K87, ORIN), (K90, HOPPER), (K100, (10, 0))] {
        let m = parse(b, sm);
        let mut names: Vec<&str> = m.kernels().iter().map(|k| k.name.as_str()).collect();
        names.sort();
        assert_eq!(
            names,
            [
                "big_params",
                "bounded_128",
                "count_stale",
                "empty_kernel",
                "fill_u32",
                "increment",
                "matmul_tiled",
                "mixed_params",
                "reduce_sum",
                "saxpy",
                "spin_until",
                "tex_fetch_1d",
                "tex_fetch_2d",
                "uses_local",
                "vector_add"
            ]
        );
    }
}

#[test]
fn sm_version_from_both_header_formats() {
    assert_eq!(parse(K87, ORIN).sm(), (8, 7));
    assert_eq!(parse(K90, HOPPER).sm(), (9, 0));
    // sm_100 uses the ABI v8 header: e_flags 0x6006402, SM in bits 15:8.
    assert_eq!(u32_at(K100, 48), 0x0600_6402);
    assert_eq!(parse(K100, (10, 0)).sm(), (10, 0));
}

#[test]
fn mixed_params_layout_matches_the_c_abi() {
    // signed char@0(1), short@2(2), int@4(4), long long@8(8), pointer@16(8),
    // struct Mixed{int,float,double}@24(16), double@40(8): 48 bytes.
    let want = [
        (0u32, 1u32),
        (2, 2),
        (4, 4),
        (8, 8),
        (16, 8),
        (24, 16),
        (40, 8),
    ];
    for (b, sm, base) in [
        (K87, ORIN, 0x160u32),
        (K90, HOPPER, 0x210),
        (K100, (10, 0), 0x380),
    ] {
        let m = parse(b, sm);
        let k = m.kernel("mixed_params").unwrap();
        assert_eq!(k.param_base, base, "sm {sm:?}");
        assert_eq!(k.param_bytes, 48);
        assert_eq!(k.params.len(), want.len());
        for (i, (p, &(off, size))) in k.params.iter().zip(want.iter()).enumerate() {
            assert_eq!(
                (p.ordinal, p.offset, p.size),
                (i as u32, off, size),
                "param {i} on {sm:?}"
            );
        }
        assert_eq!(k.cbank0_size, base + 48);
    }
}

#[test]
fn vector_add_and_empty_kernel_params() {
    for (b, sm, base) in [(K87, ORIN, 0x160u32), (K90, HOPPER, 0x210)] {
        let m = parse(b, sm);
        let k = m.kernel("vector_add").unwrap();
        // const float*, const float*, float*, unsigned
        let got: Vec<(u32, u32)> = k.params.iter().map(|p| (p.offset, p.size)).collect();
        assert_eq!(got, [(0, 8), (8, 8), (16, 8), (24, 4)]);
        assert_eq!(k.param_bytes, 28);
        assert_eq!(k.cbank0_size, (base + 28).div_ceil(16) * 16);
        let e = m.kernel("empty_kernel").unwrap();
        assert!(e.params.is_empty());
        assert_eq!(e.param_bytes, 0);
        assert_eq!(e.param_base, base);
    }
}

#[test]
fn register_counts_match_cuobjdump() {
    for (b, sm, table) in [(K87, ORIN, REGS_87), (K90, HOPPER, REGS_90)] {
        let m = parse(b, sm);
        for &(name, regs) in table {
            assert_eq!(
                m.kernel(name).unwrap().register_count,
                regs,
                "{name} on {sm:?}"
            );
        }
    }
}

#[test]
fn sm87_register_counts_agree_with_text_sh_info() {
    let m = parse(K87, ORIN);
    for s in sections(K87)
        .iter()
        .filter(|s| s.name.starts_with(".text."))
    {
        let name = &s.name[".text.".len()..];
        assert_eq!(
            m.kernel(name).unwrap().register_count,
            s.info >> 24,
            "{name}"
        );
    }
    // On sm_90 that field is not used for the register count (§6.2).
    for s in sections(K90)
        .iter()
        .filter(|s| s.name.starts_with(".text."))
    {
        assert_eq!(s.info >> 24, 0);
    }
}

#[test]
fn code_in_the_image_is_the_text_section() {
    for (b, sm) in [(K87, ORIN), (K90, HOPPER), (G87, ORIN), (G90, HOPPER)] {
        let m = parse(b, sm);
        for k in m.kernels() {
            let s = section(b, &format!(".text.{}", k.name));
            assert_eq!(k.code_size, s.size, "{}", k.name);
            assert_eq!(k.code_offset % 128, 0);
            let code = &m.image()[k.code_offset as usize..(k.code_offset + k.code_size) as usize];
            assert_eq!(
                code,
                &b[s.offset as usize..(s.offset + s.size) as usize],
                "{}",
                k.name
            );
        }
        // >= 4 KiB of zero slack after the last loaded byte.
        let img = m.image();
        assert!(img.len() >= 4096);
        assert!(img[img.len() - 4096..].iter().all(|&x| x == 0));
    }
}

#[test]
fn barrier_counts() {
    // __syncthreads() is bar.sync 0: one barrier in matmul_tiled and reduce_sum, none elsewhere.
    for (b, sm) in [(K87, ORIN), (K90, HOPPER)] {
        let m = parse(b, sm);
        for k in m.kernels() {
            let want = if k.name == "matmul_tiled" || k.name == "reduce_sum" {
                1
            } else {
                0
            };
            assert_eq!(k.barrier_count, want, "{} on {sm:?}", k.name);
        }
    }
}

#[test]
fn static_shared_memory() {
    // 2 arrays of 16x16 floats = 2048 bytes; sm_90's section also counts the reserved 1 KiB.
    let m87 = parse(K87, ORIN);
    let m90 = parse(K90, HOPPER);
    let k87 = m87.kernel("matmul_tiled").unwrap();
    let k90 = m90.kernel("matmul_tiled").unwrap();
    assert_eq!(k87.static_shared_bytes, 2048);
    assert_eq!(k90.static_shared_bytes, 2048 + 0x400);
    assert_eq!(k87.shared_reserved, 0x400);
    // Totals: both need 2048 + 1 KiB.
    assert_eq!(shared_memory_total(k87, 0, 8), 0xC00);
    assert_eq!(shared_memory_total(k90, 0, 9), 0xC00);
    // reduce_sum with 256 threads x 4 bytes of dynamic shared memory.
    let r87 = m87.kernel("reduce_sum").unwrap();
    let r90 = m90.kernel("reduce_sum").unwrap();
    assert_eq!(r87.static_shared_bytes, 0);
    assert_eq!(r90.static_shared_bytes, 0x400);
    assert_eq!(shared_memory_total(r87, 1024, 8), 0x800);
    assert_eq!(shared_memory_total(r90, 1024, 9), 0x800);
    // sm_87 rounds to 128 bytes; sm_90 adds dynamic bytes after the reserve unrounded (§6.9).
    assert_eq!(shared_memory_total(r87, 4, 8), 0x480);
    assert_eq!(shared_memory_total(r90, 4, 9), 0x480);
    assert_eq!(
        shared_memory_total(m87.kernel("vector_add").unwrap(), 0, 8),
        0x400
    );
    assert_eq!(
        shared_memory_total(m90.kernel("vector_add").unwrap(), 0, 9),
        0x400
    );
}

#[test]
fn local_memory() {
    // uses_local keeps `unsigned buf[64]` on the stack: 256 bytes; vector_add needs none.
    for (b, sm) in [(K87, ORIN), (K90, HOPPER)] {
        let m = parse(b, sm);
        let k = m.kernel("uses_local").unwrap();
        assert_eq!(k.local_bytes_per_thread, 256, "{sm:?}");
        assert_eq!(k.frame_size, 256);
        assert_eq!(m.kernel("vector_add").unwrap().local_bytes_per_thread, 0);
        assert_eq!(m.kernel("vector_add").unwrap().frame_size, 0);
    }
    // stack_user: `unsigned buf[32]` = 128 bytes.
    for (b, sm) in [(G87, ORIN), (G90, HOPPER)] {
        assert_eq!(
            parse(b, sm)
                .kernel("stack_user")
                .unwrap()
                .local_bytes_per_thread,
            128
        );
    }
}

#[test]
fn launch_bounds() {
    for (b, sm) in [(K87, ORIN), (K90, HOPPER)] {
        let m = parse(b, sm);
        assert_eq!(
            m.kernel("bounded_128").unwrap().max_threads,
            Some([128, 1, 1])
        );
        assert_eq!(m.kernel("vector_add").unwrap().max_threads, None);
        assert_eq!(m.kernel("bounded_128").unwrap().reqntid, None);
    }
}

#[test]
fn kernel_not_found_lists_available() {
    let m = parse(K87, ORIN);
    let e = m.kernel("no_such_kernel").unwrap_err();
    assert_eq!(e.status, Status::NotFound);
    assert!(e.message.contains("no_such_kernel"), "{}", e.message);
    assert!(
        e.message.contains("vector_add") && e.message.contains("matmul_tiled"),
        "{}",
        e.message
    );
}

#[test]
fn wrong_sm_is_rejected_naming_both_versions() {
    expect_err(K90, ORIN, Status::InvalidCubin, &["sm_90", "sm_87"]);
    expect_err(K87, HOPPER, Status::InvalidCubin, &["sm_87", "sm_90"]);
    expect_err(K87, (8, 6), Status::InvalidCubin, &["sm_87", "sm_86"]);
    expect_err(K100, HOPPER, Status::InvalidCubin, &["sm_100", "sm_90"]);
    // Same major, newer minor on the device: accepted.
    assert_eq!(parse(K87, (8, 9)).sm(), (8, 7));
}

// ---------------------------------------------------------------- image and relocations

#[test]
fn kernels_cu_has_no_image_relocations() {
    // Only .rel(a).debug_frame (not loaded) and empty .rela.text.* sections.
    assert_eq!(parse(K87, ORIN).relocation_count(), 0);
    assert_eq!(parse(K90, HOPPER).relocation_count(), 0);
    let m = parse(K87, ORIN);
    assert_eq!(m.image_at(0x1_0000_0000).unwrap(), m.image());
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
fn c4_reloc(b: &[u8], k: usize) -> (usize, usize) {
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

// ---------------------------------------------------------------- malformed input

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
fn regcount_disagreeing_with_sh_info_is_rejected() {
    let mut f = K87.to_vec();
    let s = section(K87, ".text.vector_add");
    let info = (s.info & 0x00ff_ffff) | (13 << 24);
    f[s.hdr + 44..s.hdr + 48].copy_from_slice(&info.to_le_bytes());
    expect_err(&f, ORIN, Status::InvalidCubin, &["vector_add", "13", "12"]);
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

// ---------------------------------------------------------------- fuzzing

/// splitmix64: deterministic, dependency-free.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Parse `bytes`; require no panic, and either success with in-range results or an
/// InvalidCubin/NotSupported error with a message. Exercise the result like a launcher would.
fn check_no_panic(bytes: &[u8], sm: (u32, u32), what: &str) -> bool {
    let r = catch_unwind(AssertUnwindSafe(|| match Module::parse(bytes, sm) {
        Ok(m) => {
            let len = m.image().len() as u64;
            for k in m.kernels() {
                assert!(
                    k.code_offset + k.code_size <= len,
                    "{what}: code outside image"
                );
                assert!(m.kernel(&k.name).is_ok());
                let _ = shared_memory_total(k, u32::MAX, sm.0);
                if let Some((o, s)) = k.cbank2 {
                    assert!(o + s <= len);
                }
                for p in &k.params {
                    assert!(p.offset + p.size <= k.param_bytes);
                }
            }
            for (o, s) in [m.cbank3(), m.cbank4(), m.global(), m.global_init()]
                .into_iter()
                .flatten()
            {
                assert!(o + s <= len, "{what}: range outside image");
            }
            if len <= 16 << 20 {
                if let Err(e) = m.image_at(0x40_0000_0000) {
                    assert_eq!(e.status, Status::InvalidArgument, "{what}: {e:?}");
                }
            }
            true
        }
        Err(e) => {
            assert!(
                e.status == Status::InvalidCubin || e.status == Status::NotSupported,
                "{what}: unexpected status {e:?}"
            );
            assert!(!e.message.trim().is_empty(), "{what}: empty message");
            false
        }
    }));
    match r {
        Ok(ok) => ok,
        Err(_) => panic!("{what}: Module::parse panicked"),
    }
}

const FIXTURES: &[(&str, &[u8], (u32, u32))] = &[
    ("kernels.sm_87", K87, ORIN),
    ("kernels.sm_90", K90, HOPPER),
    ("globals.sm_87", G87, ORIN),
    ("globals.sm_90", G90, HOPPER),
    ("kernels.sm_100", K100, (10, 0)),
];

#[test]
fn truncation_at_every_length() {
    for &(name, b, sm) in FIXTURES {
        for len in 0..b.len() {
            check_no_panic(&b[..len], sm, &format!("{name} truncated to {len}"));
        }
    }
}

#[test]
fn random_mutants_never_panic() {
    let extremes: [u64; 10] = [
        0,
        1,
        0x7f,
        0xff,
        0xffff,
        0x7fff_ffff,
        0xffff_ffff,
        u64::MAX,
        u64::MAX / 2,
        0x8000_0000_0000_0000,
    ];
    let mut rng = Rng(0x7e67_a6b0_c0b1_0001);
    let mut total = 0usize;
    let mut accepted = 0usize;
    for &(name, b, sm) in FIXTURES {
        // Metadata: everything before the first .text section, plus the section header table.
        let secs = sections(b);
        let meta_end = secs
            .iter()
            .filter(|s| s.name.starts_with(".text."))
            .map(|s| s.offset as usize)
            .min()
            .unwrap();
        let shoff = u64_at(b, 40) as usize;
        let n = 6000;
        for i in 0..n {
            let mut f = b.to_vec();
            let muts = 1 + rng.below(3);
            for _ in 0..muts {
                // Where: ELF header, section header table, metadata, anywhere.
                let pos = match rng.below(8) {
                    0 => rng.below(64),
                    1..=3 => shoff + rng.below(f.len() - shoff),
                    4..=6 => rng.below(meta_end),
                    _ => rng.below(f.len()),
                };
                match rng.below(4) {
                    0 => f[pos] ^= 1 << rng.below(8),
                    1 => f[pos] = rng.next() as u8,
                    _ => {
                        let width = [2usize, 4, 8][rng.below(3)];
                        let at = pos & !(width - 1);
                        if at + width <= f.len() {
                            let v = if rng.below(3) == 0 {
                                rng.next() % (f.len() as u64 * 2)
                            } else {
                                extremes[rng.below(extremes.len())]
                            };
                            f[at..at + width].copy_from_slice(&v.to_le_bytes()[..width]);
                        }
                    }
                }
            }
            if check_no_panic(&f, sm, &format!("{name} mutant {i}")) {
                accepted += 1;
            }
            total += 1;
        }
    }
    assert!(total >= 20_000);
    // Sanity: the fuzzer must reach past the header checks, so some mutants still load.
    eprintln!("accepted {accepted} of {total}");
    assert!(
        accepted > 100 && accepted < total,
        "accepted {accepted} of {total}"
    );
}

#[test]
fn consts_are_the_documented_values() {
    assert_eq!(cubin::SHARED_RESERVED_BYTES, 0x400);
    assert_eq!(cubin::IMAGE_SLACK, 4096);
    assert_eq!(cubin::IMAGE_ALIGN, 128);
    assert_eq!(
        (
            cubin::R_CUDA_64,
            cubin::R_CUDA_G64,
            cubin::R_CUDA_ABS32_LO_32,
            cubin::R_CUDA_ABS32_HI_32
        ),
        (2, 4, 0x38, 0x39)
    );
}

#[test]
fn big_by_value_parameter_layout() {
    for (b, sm, base) in [(K87, ORIN, 0x160), (K90, HOPPER, 0x210)] {
        let m = parse(b, sm);
        let k = m.kernel("big_params").unwrap();
        let p: Vec<(u32, u32)> = k.params.iter().map(|p| (p.offset, p.size)).collect();
        // C ABI: a pointer at 0, then the 2048-byte struct (4-byte aligned) at 8.
        assert_eq!(p, vec![(0, 8), (8, 2048)]);
        assert_eq!(k.param_bytes, 2056);
        assert_eq!(k.param_base, base);
    }
}

#[test]
fn docs_table_lists_every_attribute_with_its_handling() {
    use tegragpu::cubin::info::{Handling, ATTRIBUTES};
    let p = common::repo_path("docs/cuda-support.md");
    let doc = std::fs::read_to_string(&p).expect("docs/cuda-support.md");
    let rows = doc
        .lines()
        .filter(|l| l.starts_with("| 0x") && l.contains("`EIATTR_"))
        .count();
    assert_eq!(
        rows,
        ATTRIBUTES.len(),
        "attribute rows in the docs vs the table"
    );
    for (id, name, h) in ATTRIBUTES {
        let handling = match h {
            Handling::Used => "used",
            Handling::Ignored => "ignored",
            Handling::Refused(_) => "refused",
        };
        let row = format!("| {id:#04x} | `{name}` | {handling} |");
        assert!(
            doc.contains(&row),
            "docs/cuda-support.md lacks the row {row:?}"
        );
    }
}

#[test]
fn device_syscalls_are_imports() {
    let dir = common::repo_path("tests/conformance/fixtures");
    for (file, want) in [
        ("printf_device.sm_87.cubin", &[cubin::Syscall::Vprintf][..]),
        ("printf_device.sm_90.cubin", &[cubin::Syscall::Vprintf]),
        (
            "malloc_device.sm_87.cubin",
            &[cubin::Syscall::Malloc, cubin::Syscall::Free],
        ),
        (
            "malloc_device.sm_90.cubin",
            &[cubin::Syscall::Malloc, cubin::Syscall::Free],
        ),
    ] {
        let b = std::fs::read(dir.join(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
        let sm = if file.contains("sm_87") { ORIN } else { HOPPER };
        let m = parse(&b, sm);
        assert_eq!(m.imports(), want, "{file}");
        assert!(
            m.kernels()[0].refused.is_none(),
            "{file}: {:?}",
            m.kernels()[0].refused
        );
    }
}

/// The targets of every CALL.ABS (opcode 0x943) in a relocated image: bits 63:24.
fn call_abs_targets(img: &[u8]) -> Vec<u64> {
    img.chunks_exact(16)
        .filter(|i| u16::from_le_bytes([i[0], i[1]]) & 0xfff == 0x943)
        .map(|i| {
            let mut t = [0u8; 8];
            t[..5].copy_from_slice(&i[3..8]);
            u64::from_le_bytes(t)
        })
        .collect()
}

#[test]
fn absolute_calls_get_a_40_bit_target_at_instruction_bit_24() {
    let dir = common::repo_path("tests/conformance/fixtures");
    for (file, sm) in [
        ("build_G.sm_87.cubin", ORIN),
        ("build_G.sm_90.cubin", HOPPER),
    ] {
        let b = std::fs::read(dir.join(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
        let m = parse(&b, sm);
        let base = 0x12_3456_7000u64;
        let img = m.image_at(base).expect("a base below 1 TiB");
        // Every CALL.ABS now holds, in bits 63:24, a target inside the image.
        let calls = call_abs_targets(&img);
        assert!(!calls.is_empty(), "{file}: no CALL.ABS found");
        for t in calls {
            assert!(
                (base..base + img.len() as u64).contains(&t),
                "{file}: target {t:#x}"
            );
        }
        let e = m.image_at(1 << 40).unwrap_err();
        assert!(e.message.contains("40-bit"), "{}", e.message);
    }
}

#[test]
fn absolute_call_targets_start_on_4_kib_boundaries() {
    // CALL.ABS with an immediate target reached only 4 KiB-aligned addresses on the H100 and
    // H200 (device-linked -rdc code hung, -G code laid out otherwise computed wrong results).
    let dir = common::repo_path("tests/conformance/fixtures");
    for (file, sm, kernel, functions) in [
        (
            "rdc_dlink.sm_87.cubin",
            ORIN,
            "rdc_main",
            &["_Z10rdc_helperii"][..],
        ),
        (
            "rdc_dlink.sm_90.cubin",
            HOPPER,
            "rdc_main",
            &["_Z10rdc_helperii"][..],
        ),
        (
            "build_G.sm_87.cubin",
            ORIN,
            "build_variants",
            &["_Z3mixfi", "fmaxf"][..],
        ),
        (
            "build_G.sm_90.cubin",
            HOPPER,
            "build_variants",
            &["_Z3mixfi", "fmaxf"][..],
        ),
    ] {
        let b = std::fs::read(dir.join(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
        let m = Module::parse(&b, sm).unwrap_or_else(|e| panic!("{file}: {e}"));
        let k = m.kernel(kernel).expect(kernel);
        assert!(k.refused.is_none(), "{file}: {:?}", k.refused);
        assert_eq!(m.base_alignment(), 4096, "{file}");
        for f in functions {
            let f = m.function(f).unwrap_or_else(|| panic!("{file}: no {f}"));
            assert_eq!(f.offset % 4096, 0, "{file}: {} at {:#x}", f.name, f.offset);
        }
        // Every CALL.ABS of the relocated image holds a 4 KiB-aligned target in the image.
        let base = 0x12_3456_0000u64;
        let img = m.image_at(base).unwrap();
        let targets = call_abs_targets(&img);
        assert!(!targets.is_empty(), "{file}: no CALL.ABS");
        for t in targets {
            assert!(
                t % 4096 == 0 && t >= base && t < base + img.len() as u64,
                "{file}: {t:#x}"
            );
        }
    }
    // A module without absolute calls keeps the 128-byte alignment.
    assert_eq!(parse(K90, HOPPER).base_alignment(), 128);
    assert!(parse(K90, HOPPER)
        .kernels()
        .iter()
        .all(|k| k.callee_register_count == 0));
    // The registers of the functions a kernel calls are known to its launches.
    for (file, sm, kernel, regs, callee) in [
        ("build_G.sm_90.cubin", HOPPER, "build_variants", 40, 24),
        ("rdc_dlink.sm_90.cubin", HOPPER, "rdc_main", 24, 24),
    ] {
        let m = parse(&std::fs::read(dir.join(file)).unwrap(), sm);
        let k = m.kernel(kernel).unwrap();
        assert_eq!(
            (k.register_count, k.callee_register_count),
            (regs, callee),
            "{file}"
        );
    }
}

#[test]
fn relocation_addend_overflow_is_a_malformed_cubin() {
    // sm_90 cubins use RELA: give the first cbank-4 relocation an addend that takes the address
    // below zero.
    let mut f = G90.to_vec();
    let (at, size) = c4_reloc(&f, 0);
    assert_eq!(size, 24);
    f[at + 16..at + 24].copy_from_slice(&i64::MIN.to_le_bytes());
    let e = parse(&f, HOPPER)
        .image_at(0x10_0000_0000)
        .map(|_| ())
        .unwrap_err();
    assert_eq!(e.status, Status::InvalidCubin, "{e:?}");
    assert!(e.message.contains("addend"), "{}", e.message);
}

/// Kernels that use surface objects are refused (libtegragpu has no CUDA arrays); kernels that
/// use texture objects load, and no other kernel of the conformance corpus is refused for either.
#[test]
fn surface_instructions_refuse_the_kernel_texture_instructions_do_not() {
    let dir = common::repo_path("tests/conformance/fixtures");
    let mut checked = 0;
    let mut textures = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        let file = p.file_name().unwrap().to_string_lossy().into_owned();
        let sm = if file.ends_with(".sm_87.cubin") {
            ORIN
        } else if file.ends_with(".sm_90.cubin") {
            HOPPER
        } else {
            continue;
        };
        let bytes = std::fs::read(&p).unwrap();
        let Ok(m) = Module::parse(&bytes, sm) else {
            continue; // modules refused as a whole are covered by tests/conformance_load.rs
        };
        for k in m.kernels() {
            let surf = k
                .refused
                .as_deref()
                .filter(|r| r.contains("surface objects"));
            let want = file.starts_with("surface_object").then_some("(SUST at ");
            match (surf, want) {
                (Some(r), Some(w)) => assert!(r.contains(w), "{file}: {r}"),
                (None, None) => {}
                _ => panic!("{file} kernel {}: refused {:?}", k.name, k.refused),
            }
            if file.starts_with("texture_object") {
                assert!(k.refused.is_none(), "{file}: {:?}", k.refused);
                textures += 1;
            }
            checked += 1;
        }
    }
    assert!(checked >= 180, "only {checked} kernels checked");
    assert_eq!(textures, 2, "texture_object.sm_87 / sm_90 kernels checked");
}

/// `names_constant_bank` reports exactly the banks the cubin's sections name
/// (`.nv.constantN[.fn]`): command buffers do not bind a bank a kernel may read.
#[test]
fn named_constant_banks_follow_the_section_names() {
    for (b, sm) in [(K87, ORIN), (K90, HOPPER), (G87, ORIN), (G90, HOPPER)] {
        let m = parse(b, sm);
        let mut want = [false; 32];
        for s in sections(b) {
            if let Some(r) = s.name.strip_prefix(".nv.constant") {
                let d: String = r.chars().take_while(|c| c.is_ascii_digit()).collect();
                want[d.parse::<usize>().unwrap()] = true;
            }
        }
        assert!(want[0], "every kernel has a .nv.constant0 section");
        for (bank, w) in want.iter().enumerate() {
            assert_eq!(m.names_constant_bank(bank as u32), *w, "bank {bank}");
        }
        assert!(!m.names_constant_bank(40));
    }
    // A section renamed to .nv.constant5 is reported.
    let mut b = G90.to_vec();
    let s = section(&b, ".nv.constant3");
    let shoff = u64_at(&b, 40) as usize;
    let shstrndx = u16_at(&b, 62) as usize;
    let stroff = u64_at(&b, shoff + shstrndx * 64 + 24) as usize;
    let name_at = stroff + u32_at(&b, s.hdr) as usize + ".nv.constant".len();
    assert_eq!(b[name_at], b'3');
    b[name_at] = b'5';
    let m = parse(&b, HOPPER);
    assert!(m.names_constant_bank(5));
    assert!(!m.names_constant_bank(3));
}

// ---------------------------------------------------------------- syscalls (printf, assert)

const PRINTF_ASSERT_SM87: &[u8] = include_bytes!("fixtures/syscalls/printf_assert.sm_87.cubin");
const PRINTF_ASSERT_SM90: &[u8] = include_bytes!("fixtures/syscalls/printf_assert.sm_90.cubin");

/// nvcc's cubins that call printf and assert import `vprintf` and `__assertfail`; the addresses
/// given at relocation land in constant bank 4, and without them relocation is refused.
#[test]
fn syscall_imports_resolve_to_the_given_addresses() {
    use cubin::Syscall;
    for (sm, b) in [((8, 7), PRINTF_ASSERT_SM87), ((9, 0), PRINTF_ASSERT_SM90)] {
        let m = parse(b, sm);
        assert_eq!(
            m.imports(),
            [Syscall::Vprintf, Syscall::Assertfail],
            "sm {sm:?}"
        );
        let mut names: Vec<&str> = m.kernels().iter().map(|k| k.name.as_str()).collect();
        names.sort();
        assert_eq!(names, ["k_assert", "k_plain", "k_printf"]);
        assert!(m.kernels().iter().all(|k| k.refused.is_none()));
        let base = 0x7_0000_0000u64;
        let mut img = m.image().to_vec();
        let e = m
            .relocate(&mut img, base)
            .expect_err("syscalls without addresses");
        assert_eq!(e.status, Status::NotSupported, "{e:?}");
        assert!(e.message.contains("device-side"), "{}", e.message);
        let (vp, af) = (0xab_cdef_0100u64, 0x12_3456_0200u64);
        let mut img = m.image().to_vec();
        m.relocate_with(&mut img, base, &|s| {
            Some(match s {
                Syscall::Vprintf => vp,
                Syscall::Assertfail => af,
                Syscall::Malloc | Syscall::Free => 0,
            })
        })
        .expect("relocate with syscall addresses");
        let (off, size) = m.cbank4().expect("constant bank 4");
        let words: Vec<u64> = img[off as usize..(off + size) as usize]
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
            .collect();
        assert!(words.contains(&vp) && words.contains(&af), "{words:x?}");
        // The format string's address is relocated against the image, not a syscall.
        assert!(words
            .iter()
            .any(|&w| w > base && w < base + img.len() as u64));
    }
}

/// The built-in syscall modules keep within what ptxas gives a syscall's caller: at most 24
/// registers, and a small stack frame (added to every importing kernel's stack).
#[test]
fn builtin_syscall_modules_fit_their_callers() {
    use cubin::Syscall;
    for &(ma, mi, bytes) in tegragpu::builtin::SYSCALL_CUBINS {
        let m = parse(bytes, (ma, mi));
        assert!(m.imports().is_empty(), "sm_{ma}{mi}");
        for s in Syscall::ALL {
            let f = m
                .function(s.builtin_function())
                .unwrap_or_else(|| panic!("sm_{ma}{mi}: no {}", s.builtin_function()));
            let regs = f.register_count.expect("EIATTR_REGCOUNT");
            assert!(regs <= 24, "sm_{ma}{mi} {}: {regs} registers", f.name);
            let frame = f.frame_size.expect("EIATTR_FRAME_SIZE");
            assert!(frame <= 128, "sm_{ma}{mi} {}: {frame}-byte frame", f.name);
        }
        assert_eq!(m.global_symbol("tg_sys").map(|g| g.size), Some(8));
    }
}
