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

#[path = "cubin/fuzzing.rs"]
mod fuzzing;
#[path = "cubin/malformed.rs"]
mod malformed;
#[path = "cubin/relocations.rs"]
mod relocations;

use relocations::c4_reloc;

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

/// The targets of every CALL.ABS (opcode 0x943) in a relocated image: sm_8x, bits 80:34;
/// sm_90 (`R_CUDA_ABS55_16_34`), address bits 9:2 from bits 23:16 and 56:10 from bits 80:34.
fn call_abs_targets(img: &[u8], sm: (u32, u32)) -> Vec<u64> {
    img.chunks_exact(16)
        .filter(|i| u16::from_le_bytes([i[0], i[1]]) & 0xfff == 0x943)
        .map(|i| {
            let w = u128::from_le_bytes(i.try_into().unwrap());
            let high = (w >> 34) & ((1 << 47) - 1);
            if sm.0 >= 9 {
                ((((w >> 16) & 0xff) << 2) | (high << 10)) as u64
            } else {
                high as u64
            }
        })
        .collect()
}

#[test]
fn absolute_calls_get_their_target_in_the_architectures_fields() {
    let dir = common::repo_path("tests/conformance/fixtures");
    for (file, sm, bases, too_far) in [
        (
            "build_G.sm_87.cubin",
            ORIN,
            &[0x12_3456_7000u64, 0x2345_6789_a000][..],
            1u64 << 47,
        ),
        (
            "build_G.sm_90.cubin",
            HOPPER,
            &[0x12_3456_7000, 0x1_2345_6789_a000][..],
            1 << 57,
        ),
    ] {
        let b = std::fs::read(dir.join(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
        let m = parse(&b, sm);
        for &base in bases {
            let img = m.image_at(base).expect("a base in range");
            // Every CALL.ABS now holds a target inside the image, and the fields are all the
            // relocation changed.
            let calls = call_abs_targets(&img, sm);
            assert!(!calls.is_empty(), "{file}: no CALL.ABS found");
            for t in calls {
                assert!(
                    (base..base + img.len() as u64).contains(&t),
                    "{file}: target {t:#x}"
                );
            }
        }
        let e = m.image_at(too_far).unwrap_err();
        assert!(e.message.contains("call target"), "{}", e.message);
    }
}

#[test]
fn absolute_call_targets_are_the_functions_they_call() {
    // The functions those calls reach keep the image's 128-byte alignment: both encodings reach
    // any 4-byte aligned address.
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
        let align = 128;
        assert_eq!(m.base_alignment(), align, "{file}");
        let mut offsets = Vec::new();
        for f in functions {
            let f = m.function(f).unwrap_or_else(|| panic!("{file}: no {f}"));
            assert_eq!(f.offset % align, 0, "{file}: {} at {:#x}", f.name, f.offset);
            offsets.push(f.offset);
        }
        // Every CALL.ABS of the relocated image targets one of the functions.
        let base = 0x12_3456_0000u64;
        let img = m.image_at(base).unwrap();
        let targets = call_abs_targets(&img, sm);
        assert!(!targets.is_empty(), "{file}: no CALL.ABS");
        for t in targets {
            assert!(
                t >= base && offsets.contains(&(t - base)),
                "{file}: {t:#x}, functions at {offsets:#x?} + {base:#x}"
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
                Syscall::Malloc | Syscall::Free | Syscall::SetConditional => 0,
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

const M87: &[u8] = include_bytes!("fixtures/managed/managed.sm_87.cubin");
const M90: &[u8] = include_bytes!("fixtures/managed/managed.sm_90.cubin");
const M100: &[u8] = include_bytes!("fixtures/managed/managed.sm_100.cubin");

/// `__managed__` variables (`st_other` STO_CUDA_MANAGED = 4 in the `cuobjdump -elf` listing of
/// tests/fixtures/managed) are marked, and `relocate_placing` points the code's cbank-4
/// address table at where the loader put them; the plain `__device__` variable stays in the
/// image, and without placements every variable does.
#[test]
fn managed_variables_are_marked_and_relocated_to_their_placement() {
    for (sm, b) in [((8, 7), M87), ((9, 0), M90), ((10, 0), M100)] {
        let m = parse(b, sm);
        let mut vars: Vec<(&str, u64, bool)> = m
            .global_symbols()
            .iter()
            .map(|g| (g.name.as_str(), g.size, g.managed))
            .collect();
        vars.sort();
        assert_eq!(
            vars,
            [
                ("d_plain", 4, false),
                ("m_counter", 4, true),
                ("m_table", 16, true),
                ("m_zero", 4, true)
            ],
            "sm {sm:?}"
        );
        let base = 0x7_0000_0000u64;
        let sym = |n: &str| m.global_symbol(n).expect(n).offset;
        let placed: Vec<(u64, u64)> = ["m_counter", "m_table", "m_zero"]
            .iter()
            .enumerate()
            .map(|(i, n)| (sym(n), 0x55_0000_0000 + 0x1000 * i as u64))
            .collect();
        let cb4 = |img: &[u8]| -> Vec<u64> {
            let (off, size) = m.cbank4().expect("constant bank 4");
            let mut w: Vec<u64> = img[off as usize..(off + size) as usize]
                .chunks_exact(8)
                .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
                .filter(|&w| w != 0)
                .collect();
            w.sort();
            w
        };
        let mut img = m.image().to_vec();
        m.relocate_placing(&mut img, base, &|_| None, &|off| {
            placed.iter().find(|(o, _)| *o == off).map(|(_, v)| *v)
        })
        .expect("relocate with placements");
        let mut want: Vec<u64> = placed.iter().map(|(_, v)| *v).collect();
        want.push(base + sym("d_plain"));
        want.sort();
        assert_eq!(cb4(&img), want, "sm {sm:?}");
        // Without placements every variable is reached in the image.
        let mut img = m.image().to_vec();
        m.relocate(&mut img, base).expect("relocate");
        let mut want: Vec<u64> = ["m_counter", "m_table", "m_zero", "d_plain"]
            .iter()
            .map(|n| base + sym(n))
            .collect();
        want.sort();
        assert_eq!(cb4(&img), want, "sm {sm:?}");
        // The initial values lie in the image for the loader to copy.
        let init = |n: &str, len: usize| {
            let o = sym(n) as usize;
            m.image()[o..o + len].to_vec()
        };
        assert_eq!(init("m_counter", 4), 10i32.to_le_bytes());
        assert_eq!(
            init("m_table", 16),
            [1u32, 2, 3, 4]
                .iter()
                .flat_map(|v| v.to_le_bytes())
                .collect::<Vec<u8>>()
        );
        assert_eq!(init("m_zero", 4), [0; 4]);
    }
}
