//! The QMD encoders (`hw::qmd`) checked by the emulated GPU's independent decoder
//! (`emu::gpu::compute::decode_qmd`), field by field, over many random launch descriptions.

use tegragpu::emu::gpu::compute::decode_qmd;
use tegragpu::hw::qmd::{encode_v03, encode_v04, encode_v05, LaunchDesc, QmdRelease, SmemConfig};

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn random_block(r: &mut Rng) -> [u32; 3] {
    let x = 1 + r.below(1024) as u32;
    let y = 1 + r.below((1024 / x) as u64) as u32;
    let z = 1 + r.below((1024 / (x * y)).min(64) as u64) as u32;
    [x, y, z]
}

fn random_desc(r: &mut Rng, align: u64) -> LaunchDesc {
    let mut d = LaunchDesc {
        program_va: (0x10_0000 + r.below(1 << 28)) << 8,
        grid: [
            1 + r.below(1 << 20) as u32,
            1 + r.below(65535) as u32,
            1 + r.below(65535) as u32,
        ],
        block: random_block(r),
        register_count: 1 + r.below(255) as u32,
        barrier_count: r.below(16) as u32,
        shared_memory_bytes: (r.below(160 * 1024) as u32) & !0xff,
        smem_config: SmemConfig {
            min: 3,
            max: 0x1a,
            target: 3,
        },
        local_memory_per_thread: (0x240 + r.below(4096) as u32) & !0xf,
        ..Default::default()
    };
    d.cbanks[0] = Some((
        (0x40_0000 + r.below(1 << 24)) * align,
        ((1 + r.below(4095)) as u32) << 4,
    ));
    d.release = Some(QmdRelease::new(
        (0x20_0000 + r.below(1 << 28)) << 4,
        r.next(),
    ));
    d
}

#[test]
fn v03_encoder_agrees_with_the_emulators_decoder() {
    let mut r = Rng(0x9e3779b97f4a7c15);
    for i in 0..5000 {
        let d = random_desc(&mut r, 256);
        let mut w = [0u32; 64];
        encode_v03(&d, &mut w).unwrap_or_else(|e| panic!("case {i}: {e:?}"));
        let q = decode_qmd(3, &w).unwrap().expect("V03 always runs");
        assert_eq!(q.grid, d.grid, "case {i}");
        assert_eq!(q.block, d.block, "case {i}");
        assert_eq!(q.register_count, d.register_count, "case {i}");
        assert_eq!(q.shared_memory_bytes, d.shared_memory_bytes, "case {i}");
        assert_eq!(q.program_va, d.program_va, "case {i}");
        assert_eq!(q.cbank0, d.cbanks[0], "case {i}");
        assert_eq!(q.local_high, d.local_memory_per_thread, "case {i}");
        let rel = d.release.unwrap();
        assert_eq!(q.releases.len(), 1, "case {i}");
        assert_eq!(
            (q.releases[0].0, q.releases[0].1),
            (rel.va, rel.payload),
            "case {i}"
        );
    }
}

#[test]
fn v04_encoder_agrees_with_the_emulators_decoder() {
    let mut r = Rng(0x1234_5678_9abc_def1);
    for i in 0..5000 {
        let d = random_desc(&mut r, 64);
        let mut w = [0u32; 96];
        encode_v04(&d, &mut w).unwrap_or_else(|e| panic!("case {i}: {e:?}"));
        let q = decode_qmd(4, &w)
            .unwrap()
            .expect("our V04 QMDs are GRID_CTA, so they run");
        assert_eq!(q.grid, d.grid, "case {i}");
        assert_eq!(q.block, d.block, "case {i}");
        assert_eq!(q.register_count, d.register_count, "case {i}");
        assert_eq!(q.shared_memory_bytes, d.shared_memory_bytes, "case {i}");
        assert_eq!(q.program_va, d.program_va, "case {i}");
        assert_eq!(q.cbank0, d.cbanks[0], "case {i}");
        assert_eq!(q.local_high, d.local_memory_per_thread, "case {i}");
        let rel = d.release.unwrap();
        assert_eq!(
            (q.releases[0].0, q.releases[0].1),
            (rel.va, rel.payload),
            "case {i}"
        );
    }
}

#[test]
fn decoder_rejects_a_v03_with_minor_version_3() {
    let mut w = [0u32; 64];
    encode_v03(
        &LaunchDesc {
            grid: [1, 1, 1],
            block: [32, 1, 1],
            program_va: 0x1000_0000,
            ..Default::default()
        },
        &mut w,
    )
    .unwrap();
    w[18] |= 3; // QMD_VERSION (minor) dw18[3:0]
    assert!(decode_qmd(3, &w).unwrap_err().contains("3.3"));
}

#[test]
fn v05_encoder_agrees_with_the_emulators_decoder() {
    let mut r = Rng(0x0dd_ba11_cafe_f00d);
    for i in 0..5000 {
        let mut d = random_desc(&mut r, 64);
        // V05 stores shared memory >> 7, local memory >> 4 (16 bits) and blockDim.z in 8 bits.
        d.shared_memory_bytes &= !0x7f;
        d.local_memory_per_thread &= 0xf_fff0;
        d.program_va &= !0xf;
        let mut w = [0u32; 96];
        encode_v05(&d, &mut w).unwrap_or_else(|e| panic!("case {i}: {e:?}"));
        let q = decode_qmd(5, &w)
            .unwrap()
            .expect("our V05 QMDs are GRID_CTA");
        assert_eq!(q.grid, d.grid, "case {i}");
        assert_eq!(q.block, d.block, "case {i}");
        assert_eq!(q.register_count, d.register_count, "case {i}");
        assert_eq!(q.shared_memory_bytes, d.shared_memory_bytes, "case {i}");
        assert_eq!(q.program_va, d.program_va, "case {i}");
        assert_eq!(q.cbank0, d.cbanks[0], "case {i}");
        assert_eq!(q.local_high, d.local_memory_per_thread, "case {i}");
        let rel = d.release.unwrap();
        assert_eq!(
            (q.releases[0].0, q.releases[0].1),
            (rel.va, rel.payload),
            "case {i}"
        );
    }
}
