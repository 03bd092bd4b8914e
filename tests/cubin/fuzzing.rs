//! Cubin loader tests: truncated and randomly mutated fixtures never panic.

use super::*;

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
