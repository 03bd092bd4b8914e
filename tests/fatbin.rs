//! Tests of `tegragpu::cubin::fatbin` on the fixtures in tests/fixtures/fatbin (see its
//! README.md for how each was built).
//!
//! Expected entry lists come from the nvcc/nvFatbin command lines and `cuobjdump -lelf -lptx`;
//! the expected cubin bytes are `cuobjdump -xelf all` extractions (warp.sm_*.cuobjdump.cubin).

use std::panic::{catch_unwind, AssertUnwindSafe};
use tegragpu::cubin::fatbin::{
    self, flags, ArchVariant, Compression, EntryKind, Fatbin, InputKind, Selected,
};
use tegragpu::cubin::Module;
use tegragpu::Status;

const WARP: &[u8] = include_bytes!("fixtures/fatbin/warp.fatbin");
const WARP_Z: &[u8] = include_bytes!("fixtures/fatbin/warp.compressed.fatbin");
const WARP_NOCOMP: &[u8] = include_bytes!("fixtures/fatbin/warp.nocomp.fatbin");
const WARP_PTXONLY: &[u8] = include_bytes!("fixtures/fatbin/warp.ptxonly.fatbin");
const WARP_G: &[u8] = include_bytes!("fixtures/fatbin/warp.G.fatbin");
const WARP_PTX: &[u8] = include_bytes!("fixtures/fatbin/warp.ptx");
const ARCH_NONE: &[u8] = include_bytes!("fixtures/fatbin/arch.none.fatbin");
const ARCH_LZ4: &[u8] = include_bytes!("fixtures/fatbin/arch.lz4.fatbin");
const HOST_OBJ: &[u8] = include_bytes!("fixtures/fatbin/warp.sm_90.o");
const SECTION3: &[u8] = include_bytes!("fixtures/fatbin/libwarp2.nv_fatbin");
const CUOBJDUMP_90: &[u8] = include_bytes!("fixtures/fatbin/warp.sm_90.cuobjdump.cubin");
const CUOBJDUMP_80: &[u8] = include_bytes!("fixtures/fatbin/warp.sm_80.cuobjdump.cubin");
const CUBIN_87: &[u8] = include_bytes!("fixtures/cubin/kernels.sm_87.cubin");

const FATBINS: &[(&str, &[u8])] = &[
    ("warp.fatbin", WARP),
    ("warp.compressed.fatbin", WARP_Z),
    ("warp.nocomp.fatbin", WARP_NOCOMP),
    ("warp.ptxonly.fatbin", WARP_PTXONLY),
    ("warp.G.fatbin", WARP_G),
    ("arch.none.fatbin", ARCH_NONE),
    ("arch.lz4.fatbin", ARCH_LZ4),
];

/// (kind, "sm_XY[a|f]" or "compute_XY[a|f]", compression) of every entry.
fn summary(f: &Fatbin<'_>) -> Vec<(EntryKind, String, Compression)> {
    f.entries
        .iter()
        .map(|e| {
            let p = if e.kind == EntryKind::Ptx {
                "compute"
            } else {
                "sm"
            };
            let n = format!("{p}_{}{}{}", e.arch.major, e.arch.minor, e.arch.suffix());
            (e.kind, n, e.compression)
        })
        .collect()
}

fn s(v: &[(EntryKind, &str, Compression)]) -> Vec<(EntryKind, String, Compression)> {
    v.iter().map(|(k, n, c)| (*k, n.to_string(), *c)).collect()
}

use Compression::{Lz4, Zstd};
use EntryKind::{Cubin, Ptx};
const NONE: Compression = Compression::None;

/// e_flags SM of a cubin (both ELF ABI layouts) and its ELF header sanity.
fn elf_sm(cubin: &[u8]) -> u32 {
    assert_eq!(&cubin[..4], b"\x7fELF", "ELF magic");
    assert_eq!(u16::from_le_bytes([cubin[18], cubin[19]]), 190, "EM_CUDA");
    let fl = u32::from_le_bytes(cubin[48..52].try_into().unwrap());
    match cubin[7] {
        0x33 => fl & 0xff,
        0x41 => (fl >> 8) & 0xff,
        o => panic!("EI_OSABI {o:#x}"),
    }
}

fn cubin_of(sel: Selected) -> (Vec<u8>, (u32, u32)) {
    match sel {
        Selected::Cubin(c, sm) => (c, sm),
        Selected::Ptx(_, sm) => panic!("expected a cubin, got PTX for {sm:?}"),
    }
}

fn ptx_of(sel: Selected) -> (String, (u32, u32)) {
    match sel {
        Selected::Ptx(p, sm) => (p, sm),
        Selected::Cubin(_, sm) => panic!("expected PTX, got a cubin for {sm:?}"),
    }
}

#[test]
fn every_fixture_parses_with_the_entries_nvcc_was_asked_for() {
    let warp = |c80, cp, c90| {
        s(&[
            (Cubin, "sm_80", c80),
            (Ptx, "compute_90", cp),
            (Cubin, "sm_90", c90),
        ])
    };
    let arch = |c| {
        s(&[
            (Cubin, "sm_80", c),
            (Cubin, "sm_90a", c),
            (Cubin, "sm_90", c),
            (Ptx, "compute_90a", c),
            (Ptx, "compute_90", c),
            (Cubin, "sm_100f", c),
            (Ptx, "compute_100f", c),
            (Cubin, "sm_100a", c),
        ])
    };
    let expect = [
        // nvcc 13 default: only PTX compressed (zstd).
        (WARP, warp(NONE, Zstd, NONE)),
        (WARP_Z, warp(Zstd, Zstd, Zstd)),
        (WARP_NOCOMP, warp(NONE, NONE, NONE)),
        (WARP_PTXONLY, s(&[(Ptx, "compute_90", Zstd)])),
        (WARP_G, s(&[(Cubin, "sm_90", Zstd)])),
        (ARCH_NONE, arch(NONE)),
        (ARCH_LZ4, arch(Lz4)),
    ];
    for ((name, bytes), (b2, want)) in FATBINS.iter().zip(expect) {
        assert_eq!(bytes.as_ptr(), b2.as_ptr());
        assert_eq!(fatbin::kind_of(bytes), InputKind::Fatbin, "{name}");
        let f = Fatbin::parse(bytes).unwrap_or_else(|e| panic!("{name}: {e:?}"));
        assert_eq!(f.version, 1);
        assert_eq!(f.size, bytes.len(), "{name}: container covers the file");
        assert_eq!(summary(&f), want, "{name}");
        for e in &f.entries {
            assert!(e.is_64bit(), "{name}: {e}");
            assert_eq!(
                e.flags & flags::HOST_LINUX,
                flags::HOST_LINUX,
                "{name}: {e}"
            );
            let d = e
                .data()
                .unwrap_or_else(|err| panic!("{name}: {e}: {err:?}"));
            assert_eq!(d.len() as u64, e.uncompressed_size, "{name}: {e}");
            match e.kind {
                Cubin => {
                    assert_eq!(elf_sm(&d), e.arch.major * 10 + e.arch.minor, "{name}: {e}");
                    assert_eq!(e.version.0, 1, "{name}: {e}: cubin version [1, ABI]");
                    assert_eq!(e.version.1 as u8, d[8], "{name}: {e}: ELF ABI version");
                }
                Ptx => {
                    let t = e.ptx_text().unwrap();
                    assert_eq!(fatbin::kind_of(t.as_bytes()), InputKind::Ptx, "{name}: {e}");
                    assert!(t.contains(".entry warp_reduce"), "{name}: {e}");
                    let target = format!(
                        ".target sm_{}{}",
                        e.arch.major * 10 + e.arch.minor,
                        e.arch.suffix()
                    );
                    assert!(t.contains(&target), "{name}: {e}: no {target:?}");
                    let v = format!(".version {}.{}", e.version.0, e.version.1);
                    assert!(t.contains(&v), "{name}: {e}: no {v:?}");
                    assert_eq!(e.ptx_options, "", "{name}: {e}");
                }
                _ => unreachable!(),
            }
        }
    }
    // PTX ISA versions: nvcc 13.0 writes 9.0, nvrtc 12.9 8.8.
    let f = Fatbin::parse(WARP).unwrap();
    assert_eq!(f.entries[1].version, (9, 0));
    assert_eq!(f.entries[0].version, (1, 8));
    let f = Fatbin::parse(ARCH_NONE).unwrap();
    assert_eq!(f.entries[3].version, (8, 8));
    assert_eq!(f.entries[0].version, (1, 7));
    assert_eq!(f.entries[5].version, (1, 8));
    // -G: debug flag and the source file name.
    let g = Fatbin::parse(WARP_G).unwrap();
    assert!(g.entries[0].has_debug_info());
    assert_eq!(g.entries[0].name.as_deref(), Some("warp.cu"));
    assert!(!Fatbin::parse(WARP).unwrap().entries[0].has_debug_info());
}

#[test]
fn arch_specific_and_family_entries_are_flagged() {
    let f = Fatbin::parse(ARCH_NONE).unwrap();
    let variants: Vec<ArchVariant> = f.entries.iter().map(|e| e.arch.variant).collect();
    use ArchVariant::{Family, Generic, Specific};
    assert_eq!(
        variants,
        [Generic, Specific, Generic, Specific, Generic, Family, Family, Specific]
    );
    for e in &f.entries {
        assert_eq!(
            e.flags & flags::ARCH_SPECIFIC != 0,
            e.arch.variant == Specific
        );
        assert_eq!(
            e.flags & flags::FAMILY_SPECIFIC != 0,
            e.arch.variant == Family
        );
    }
    // The cubins agree: sm_90a sets EF_CUDA_ACCELERATORS (0x800 in the ABI 7 e_flags).
    let fl = |i: usize| {
        let d = f.entries[i].data().unwrap();
        u32::from_le_bytes(d[48..52].try_into().unwrap())
    };
    assert_ne!(fl(1) & 0x800, 0);
    assert_eq!(fl(2) & 0x800, 0);
}

#[test]
fn selection_follows_the_driver_rules() {
    // (9,0): the sm_90 cubin, byte for byte what cuobjdump extracts.
    for (name, fb) in [
        ("warp", WARP),
        ("compressed", WARP_Z),
        ("nocomp", WARP_NOCOMP),
    ] {
        let (c, sm) = cubin_of(fatbin::select(fb, (9, 0)).unwrap());
        assert_eq!(sm, (9, 0), "{name}");
        assert_eq!(
            c, CUOBJDUMP_90,
            "{name}: sm_90 cubin differs from cuobjdump -xelf"
        );
        assert_eq!(elf_sm(&c), 90);
        let m = Module::parse(&c, (9, 0)).unwrap_or_else(|e| panic!("{name}: {e:?}"));
        assert!(m.kernel("warp_reduce").is_ok());

        for dev in [(8, 0), (8, 6), (8, 7), (8, 9)] {
            let (c, sm) = cubin_of(fatbin::select(fb, dev).unwrap());
            assert_eq!(sm, (8, 0), "{name} on {dev:?}");
            assert_eq!(c, CUOBJDUMP_80, "{name} on {dev:?}");
            let m = Module::parse(&c, dev).unwrap_or_else(|e| panic!("{name}: {e:?}"));
            assert!(m.kernel("warp_reduce").is_ok());
        }
        // No SASS for major 10 or 12: the compute_90 PTX.
        for dev in [(10, 0), (12, 0)] {
            let (p, arch) = ptx_of(fatbin::select(fb, dev).unwrap());
            assert_eq!(arch, (9, 0));
            assert!(p.contains(".target sm_90"), "{name} on {dev:?}");
            assert!(!p.contains('\0'));
        }
    }
    // (9,1) prefers the sm_90 cubin over the compute_90 PTX.
    let _ = cubin_of(fatbin::select(WARP, (9, 1)).unwrap_or_else(|e| panic!("{e:?}")));

    // Nothing runs on sm_75: the message lists what there is.
    let e = fatbin::select(WARP, (7, 5)).unwrap_err();
    assert_eq!(e.status, Status::InvalidCubin);
    for want in ["sm_75", "SASS sm_80, sm_90", "PTX compute_90"] {
        assert!(e.message.contains(want), "{want:?} not in {e:?}");
    }

    // PTX only.
    for dev in [(9, 0), (10, 0), (12, 1)] {
        let (p, arch) = ptx_of(fatbin::select(WARP_PTXONLY, dev).unwrap());
        assert_eq!(arch, (9, 0));
        assert_eq!(
            p,
            ptx_of(fatbin::select(WARP_NOCOMP, (10, 0)).unwrap()).0,
            "compressed and plain PTX agree"
        );
    }
    let e = fatbin::select(WARP_PTXONLY, (8, 7)).unwrap_err();
    assert_eq!(e.status, Status::InvalidCubin);
    assert!(e.message.contains("no SASS"), "{e:?}");

    // -G
    let (c, _) = cubin_of(fatbin::select(WARP_G, (9, 0)).unwrap());
    assert_eq!(elf_sm(&c), 90);
    assert!(fatbin::select(WARP_G, (8, 0)).is_err());
}

#[test]
fn selection_of_arch_and_family_specific_entries() {
    for fb in [ARCH_NONE, ARCH_LZ4] {
        let f = Fatbin::parse(fb).unwrap();
        let data = |i: usize| f.entries[i].data().unwrap();
        let pick = |dev| f.choose(dev).unwrap().to_string();
        // Exact match: the 'a' cubin wins over the plain one.
        assert_eq!(pick((9, 0)), "SASS sm_90a");
        assert_eq!(cubin_of(f.select((9, 0)).unwrap()).0, data(1));
        // sm_90a never runs elsewhere; sm_90 does on 9.x.
        assert_eq!(pick((9, 5)), "SASS sm_90");
        assert_eq!(pick((8, 9)), "SASS sm_80");
        // sm_100: 'a' over 'f'; sm_103: only the family cubin.
        assert_eq!(pick((10, 0)), "SASS sm_100a");
        assert_eq!(pick((10, 3)), "SASS sm_100f");
        assert_eq!(cubin_of(f.select((10, 3)).unwrap()).0, data(5));
        // Another major: PTX. compute_100f is for 10.x only, compute_90a for sm_90 only.
        assert_eq!(pick((11, 0)), "PTX compute_90");
        assert_eq!(pick((12, 1)), "PTX compute_90");
        let (p, arch) = ptx_of(f.select((12, 0)).unwrap());
        assert_eq!(arch, (9, 0));
        assert!(p.contains(".target sm_90\n"), "{p}");
        let e = f.choose((7, 0)).unwrap_err();
        assert!(
            e.message
                .contains("SASS sm_80, sm_90a, sm_90, sm_100f, sm_100a"),
            "{e:?}"
        );
        assert!(
            e.message
                .contains("PTX compute_90a, compute_90, compute_100f"),
            "{e:?}"
        );
    }
    // A fatbin with only arch-specific PTX: nothing for another SM.
    let f = Fatbin::parse(ARCH_NONE).unwrap();
    let only_90a = Fatbin {
        entries: vec![f.entries[3].clone()],
        ..f.clone()
    };
    assert_eq!(
        only_90a.choose((9, 0)).unwrap().to_string(),
        "PTX compute_90a"
    );
    assert!(only_90a.choose((10, 0)).is_err());
    assert!(only_90a.choose((9, 1)).is_err());
    // Family PTX: same major, minor >= its own.
    let only_100f = Fatbin {
        entries: vec![f.entries[6].clone()],
        ..f.clone()
    };
    assert!(only_100f.choose((10, 3)).is_ok());
    assert!(only_100f.choose((12, 0)).is_err());
}

#[test]
fn compressed_and_uncompressed_entries_decode_to_the_same_bytes() {
    for (a, b) in [
        (WARP_Z, WARP_NOCOMP),
        (WARP, WARP_NOCOMP),
        (ARCH_LZ4, ARCH_NONE),
    ] {
        let fa = Fatbin::parse(a).unwrap();
        let fb = Fatbin::parse(b).unwrap();
        assert_eq!(fa.entries.len(), fb.entries.len());
        for (ea, eb) in fa.entries.iter().zip(&fb.entries) {
            assert_eq!(ea.to_string(), eb.to_string());
            let (da, db) = (ea.data().unwrap(), eb.data().unwrap());
            if ea.kind == Ptx {
                assert_eq!(ea.ptx_text().unwrap(), eb.ptx_text().unwrap(), "{ea}");
            } else {
                // Stored cubins are padded to 8 bytes; the decompressed ones are exact.
                assert_eq!(da[..], db[..da.len()], "{ea}");
                assert!(db[da.len()..].iter().all(|&x| x == 0));
            }
        }
    }
}

/// A minimal ELF64 LE x86-64 relocatable file with the given sections.
fn host_elf(sections: &[(&str, &[u8])]) -> Vec<u8> {
    let mut shstr = vec![0u8];
    let mut names = Vec::new();
    for (n, _) in sections {
        names.push(shstr.len() as u32);
        shstr.extend_from_slice(n.as_bytes());
        shstr.push(0);
    }
    let shstr_name = shstr.len() as u32;
    shstr.extend_from_slice(b".shstrtab\0");
    let mut data = vec![0u8; 64];
    let mut placed = Vec::new();
    for d in sections.iter().map(|(_, d)| *d).chain([&shstr[..]]) {
        while data.len() % 8 != 0 {
            data.push(0);
        }
        placed.push((data.len() as u64, d.len() as u64));
        data.extend_from_slice(d);
    }
    while data.len() % 8 != 0 {
        data.push(0);
    }
    let shoff = data.len() as u64;
    let shnum = sections.len() + 2;
    let mut sh = vec![0u8; 64]; // null section
    for (i, (off, size)) in placed.iter().enumerate() {
        let mut h = [0u8; 64];
        let (name, ty) = if i < sections.len() {
            (names[i], 1u32)
        } else {
            (shstr_name, 3u32)
        };
        h[0..4].copy_from_slice(&name.to_le_bytes());
        h[4..8].copy_from_slice(&ty.to_le_bytes());
        h[24..32].copy_from_slice(&off.to_le_bytes());
        h[32..40].copy_from_slice(&size.to_le_bytes());
        h[48..56].copy_from_slice(&8u64.to_le_bytes());
        sh.extend_from_slice(&h);
    }
    data.extend_from_slice(&sh);
    data[..4].copy_from_slice(b"\x7fELF");
    data[4] = 2;
    data[5] = 1;
    data[6] = 1;
    data[16..18].copy_from_slice(&1u16.to_le_bytes()); // ET_REL
    data[18..20].copy_from_slice(&62u16.to_le_bytes()); // EM_X86_64
    data[20..24].copy_from_slice(&1u32.to_le_bytes());
    data[40..48].copy_from_slice(&shoff.to_le_bytes());
    data[52..54].copy_from_slice(&64u16.to_le_bytes());
    data[58..60].copy_from_slice(&64u16.to_le_bytes());
    data[60..62].copy_from_slice(&(shnum as u16).to_le_bytes());
    data[62..64].copy_from_slice(&((shnum - 1) as u16).to_le_bytes());
    data
}

#[test]
fn host_elf_files_with_a_nv_fatbin_section() {
    // A real nvcc 13.0 object (-gencode arch=compute_90,code=sm_90).
    assert_eq!(fatbin::kind_of(HOST_OBJ), InputKind::HostElf);
    let sec = fatbin::nv_fatbin_section(HOST_OBJ).unwrap();
    assert_eq!(sec.len(), 0x10c8); // readelf -S: .nv_fatbin size
    let all = fatbin::containers(HOST_OBJ).unwrap();
    assert_eq!(all.len(), 1);
    assert_eq!(all[0].describe(), "SASS sm_90; no PTX");
    let (c, sm) = cubin_of(fatbin::select(HOST_OBJ, (9, 0)).unwrap());
    assert_eq!(sm, (9, 0));
    let m = Module::parse(&c, (9, 0)).unwrap();
    assert!(m.kernel("warp_reduce").is_ok());
    let e = fatbin::select(HOST_OBJ, (8, 0)).unwrap_err();
    assert_eq!(e.status, Status::InvalidCubin);
    assert!(e.message.contains("SASS sm_90; no PTX"), "{e:?}");

    // The .nv_fatbin section of a two-file shared library: three containers (the first is
    // nvcc's link stub).
    let three = fatbin::containers(SECTION3).unwrap();
    let d: Vec<String> = three.iter().map(|f| f.describe()).collect();
    assert_eq!(
        d,
        [
            "SASS sm_80; no PTX",
            "SASS sm_80; PTX compute_90",
            "SASS sm_80; PTX compute_90"
        ]
    );
    // A host ELF with that section: refused, naming the count.
    let so = host_elf(&[(".text", &[0xc3]), (".nv_fatbin", SECTION3)]);
    assert_eq!(fatbin::kind_of(&so), InputKind::HostElf);
    assert_eq!(fatbin::containers(&so).unwrap().len(), 3);
    let e = fatbin::select(&so, (8, 0)).unwrap_err();
    assert_eq!(e.status, Status::NotSupported);
    assert!(e.message.contains("3 fatbinaries"), "{e:?}");
    // One container, zero padding after it: fine.
    let mut padded = WARP.to_vec();
    padded.extend_from_slice(&[0; 8]);
    let one = host_elf(&[(".nv_fatbin", &padded)]);
    let (c, _) = cubin_of(fatbin::select(&one, (9, 0)).unwrap());
    assert_eq!(c, CUOBJDUMP_90);
    // -rdc objects and plain host objects.
    let rdc = host_elf(&[("__nv_relfatbin", WARP)]);
    assert_eq!(
        fatbin::select(&rdc, (9, 0)).unwrap_err().status,
        Status::NotSupported
    );
    let plain = host_elf(&[(".text", &[0xc3])]);
    let e = fatbin::select(&plain, (9, 0)).unwrap_err();
    assert_eq!(e.status, Status::InvalidCubin);
    assert!(e.message.contains("no .nv_fatbin"), "{e:?}");
}

#[test]
fn kind_of_sniffs_every_input() {
    assert_eq!(fatbin::kind_of(CUBIN_87), InputKind::Cubin);
    assert_eq!(fatbin::kind_of(CUOBJDUMP_90), InputKind::Cubin);
    assert_eq!(fatbin::kind_of(WARP_PTX), InputKind::Ptx);
    let mut z = WARP_PTX.to_vec();
    z.push(0);
    assert_eq!(fatbin::kind_of(&z), InputKind::Ptx, "NUL-terminated");
    let commented =
        b"/* header\n .version in a comment */\n  // line\n\t.version 8.8\n.target sm_87\n";
    assert_eq!(fatbin::kind_of(commented), InputKind::Ptx);
    for not in [
        &b""[..],
        b"\x7fEL",
        b"hello world",
        b".target sm_90\n.version 9.0\n", // .version must come first
        b"// .version 9.0\n// .target sm_90\n", // only comments
        b".version 9.0\n",                // no .target
        b".versionX 9.0\n.target sm_90\n",
        b"\xff\xfe.version 9.0\n.target sm_90\n",
        b"\x50\xed\x55",
    ] {
        assert_eq!(fatbin::kind_of(not), InputKind::Unknown, "{not:?}");
    }
    // The host-side wrapper struct: recognised, refused with a message.
    let mut w = 0x4662_43B1u32.to_le_bytes().to_vec();
    w.extend_from_slice(&[1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    assert_eq!(fatbin::kind_of(&w), InputKind::Fatbin);
    let e = fatbin::select(&w, (9, 0)).unwrap_err();
    assert_eq!(e.status, Status::NotSupported);
    assert!(e.message.contains("__fatBinC_Wrapper_t"), "{e:?}");
}

#[test]
fn malformed_headers_are_reported_with_their_offset() {
    let patch = |off: usize, v: &[u8]| {
        let mut b = WARP.to_vec();
        b[off..off + v.len()].copy_from_slice(v);
        b
    };
    let err = |b: &[u8]| fatbin::select(b, (9, 0)).unwrap_err();
    // Container size past the end.
    let e = err(&patch(8, &0x10_0000u64.to_le_bytes()));
    assert_eq!(e.status, Status::InvalidCubin);
    assert!(e.message.contains("offset 8"), "{e:?}");
    // Version 2.
    assert_eq!(err(&patch(4, &[2, 0])).status, Status::NotSupported);
    // First entry: header size 8.
    let e = err(&patch(16 + 4, &8u32.to_le_bytes()));
    assert!(
        e.message.contains("offset 0x10") && e.message.contains("header size"),
        "{e:?}"
    );
    // First entry payload size past the end.
    let e = err(&patch(16 + 8, &u64::MAX.to_le_bytes()));
    assert!(e.message.contains("payload size"), "{e:?}");
    // Compressed PTX entry (second, at 0xef8): compressed size larger than its payload.
    let e = Fatbin::parse(&patch(0xef8 + 16, &0xffffu32.to_le_bytes())).unwrap_err();
    assert!(e.message.contains("compressed size"), "{e:?}");
    // Uncompressed size wrong: decoding fails.
    let b = patch(0xef8 + 56, &0x6e0u64.to_le_bytes());
    let f = Fatbin::parse(&b).unwrap();
    let e = f.entries[1].data().unwrap_err();
    assert_eq!(e.status, Status::InvalidCubin);
    assert!(
        e.message.contains("zstd") && e.message.contains("0xef8"),
        "{e:?}"
    );
    // Both compression flags.
    let e = Fatbin::parse(&patch(0xef8 + 40, &0xa011u64.to_le_bytes())).unwrap_err();
    assert!(e.message.contains("both LZ4"), "{e:?}");
}

#[test]
fn lz4_payload_errors_name_the_entry_and_the_sizes() {
    let f = Fatbin::parse(ARCH_LZ4).unwrap();
    let e = &f.entries[0];
    assert_eq!(e.compression, Lz4, "{e}");
    let (at, stored, full) = (e.offset, e.stored.len(), e.uncompressed_size);
    assert_eq!(e.data().unwrap().len() as u64, full, "{e}");
    let with_size = |size: u64| {
        let mut b = ARCH_LZ4.to_vec();
        b[at + 56..at + 64].copy_from_slice(&size.to_le_bytes());
        let f = Fatbin::parse(&b).unwrap();
        let err = f.entries[0].data().unwrap_err();
        assert_eq!(err.status, Status::InvalidCubin, "{err:?}");
        let want = [
            format!("{} at offset {at:#x}: LZ4 payload: ", f.entries[0]),
            format!("({stored:#x} compressed bytes, uncompressed size {size:#x})"),
        ];
        for w in &want {
            assert!(err.message.contains(w.as_str()), "{w:?} not in {err:?}");
        }
        err.message
    };
    // One byte short: the decoder stops at the output end.
    let m = with_size(full - 1);
    assert!(m.contains("too small"), "{m}");
    // Eight bytes more than the block holds.
    let m = with_size(full + 8);
    assert!(m.contains(&format!("decoded {full:#x} bytes")), "{m}");
    // More than any block of this length can hold.
    let m = with_size(stored as u64 * 256);
    assert!(m.contains("impossible"), "{m}");
    // A damaged match offset (zero) in the block itself.
    let mut b = ARCH_LZ4.to_vec();
    let payload = at + e.header_size as usize;
    let token = b[payload];
    assert!(
        token >> 4 < 15,
        "first sequence has a short literal run: {token:#x}"
    );
    let off = payload + 1 + (token >> 4) as usize;
    b[off..off + 2].copy_from_slice(&[0, 0]);
    let err = Fatbin::parse(&b).unwrap().entries[0].data().unwrap_err();
    assert!(
        err.message.contains("LZ4 payload") && err.message.contains("offset"),
        "{err:?}"
    );
}

/// Run every public entry point on `b`; none may panic, and errors must carry a parse status.
fn exercise(b: &[u8]) {
    let ok_status = |s: Status| matches!(s, Status::InvalidCubin | Status::NotSupported);
    let _ = fatbin::kind_of(b);
    match Fatbin::parse(b) {
        Ok(f) => {
            for e in &f.entries {
                let _ = e.to_string();
                if let Err(err) = e.data() {
                    assert!(ok_status(err.status), "{err:?}");
                }
                if e.kind == Ptx {
                    let _ = e.ptx_text();
                }
            }
            let _ = f.describe();
        }
        Err(err) => assert!(ok_status(err.status), "{err:?}"),
    }
    for dev in [(9, 0), (10, 0)] {
        if let Err(err) = fatbin::select(b, dev) {
            assert!(ok_status(err.status), "{err:?}");
        }
    }
    if let Err(err) = fatbin::containers(b) {
        assert!(ok_status(err.status), "{err:?}");
    }
}

fn no_panic(what: &str, b: &[u8]) {
    if catch_unwind(AssertUnwindSafe(|| exercise(b))).is_err() {
        panic!("panicked on {what}");
    }
}

fn all_inputs() -> Vec<(&'static str, Vec<u8>)> {
    let mut v: Vec<(&str, Vec<u8>)> = FATBINS.iter().map(|(n, b)| (*n, b.to_vec())).collect();
    v.push(("warp.sm_90.o", HOST_OBJ.to_vec()));
    v.push(("libwarp2.nv_fatbin", SECTION3.to_vec()));
    v
}

#[test]
fn truncation_at_every_length_never_panics() {
    for (name, full) in all_inputs() {
        for len in 0..full.len() {
            let mut t = full[..len].to_vec();
            no_panic(&format!("{name} cut to {len}"), &t);
            // And with the container size patched to fit, so that the entries themselves are
            // cut (the plain cut fails at the container header).
            if len >= 16 && t[..4] == [0x50, 0xed, 0x55, 0xba] {
                let body = (len - 16) as u64;
                t[8..16].copy_from_slice(&body.to_le_bytes());
                no_panic(&format!("{name} cut to {len} (size patched)"), &t);
            }
        }
    }
}

/// xorshift64*: deterministic, no dependency.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Mutations per input; `TEGRAGPU_FUZZ_ROUNDS` raises it for a longer run.
fn rounds() -> usize {
    std::env::var("TEGRAGPU_FUZZ_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000)
}

#[test]
fn random_byte_flips_never_panic() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let rounds = rounds();
    for (name, full) in all_inputs() {
        // Headers are where the structure lives: bias half the flips into the first 128 bytes
        // of each entry, the rest anywhere.
        let starts: Vec<usize> = match Fatbin::parse(&full) {
            Ok(f) => f.entries.iter().map(|e| e.offset).collect(),
            Err(_) => vec![0],
        };
        for round in 0..rounds {
            let mut b = full.clone();
            for _ in 0..1 + rng.below(4) {
                let at = if rng.below(2) == 0 {
                    (starts[rng.below(starts.len())] + rng.below(128)).min(b.len() - 1)
                } else {
                    rng.below(b.len())
                };
                b[at] ^= 1 << rng.below(8);
                if rng.below(8) == 0 {
                    b[at] = rng.next() as u8;
                }
            }
            no_panic(&format!("{name} flip round {round}"), &b);
        }
    }
}

#[test]
fn compressed_payloads_with_random_damage_never_panic() {
    // Damage only the compressed bytes (LZ4 and zstd), so that the decoders see it.
    let mut rng = Rng(0x1234_5678_9abc_def1);
    for fb in [WARP_Z, ARCH_LZ4, WARP_G] {
        let f = Fatbin::parse(fb).unwrap();
        for e in &f.entries {
            let payload_at = e.offset + e.header_size as usize;
            for _ in 0..rounds() / 8 {
                let mut b = fb.to_vec();
                for _ in 0..1 + rng.below(3) {
                    let at = payload_at + rng.below(e.stored.len());
                    b[at] = rng.next() as u8;
                }
                no_panic(&format!("{e} payload"), &b);
            }
        }
    }
}
