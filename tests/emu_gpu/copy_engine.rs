//! Emulated GPU tests: the copy engine (linear copies, copies across mappings, remap fills,
//! faults on unmapped sources).

use super::*;

fn copy_words(src: u64, dst: u64, len: u32) -> Vec<u32> {
    vec![
        inc(4, 0x400, 4),
        (src >> 32) as u32,
        src as u32,
        (dst >> 32) as u32,
        dst as u32,
        inc(4, 0x418, 1),
        len,
        inc(4, 0x300, 1),
        0x182, // NON_PIPELINED | SRC/DST PITCH
    ]
}

fn pattern(n: usize, seed: u8) -> Vec<u8> {
    (0..n)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

#[test]
fn copy_engine_linear_sizes() {
    let mut env = Env::new(64, &[AMPERE_DMA_COPY_B]);
    env.submit(&[inc(4, 0, 1), AMPERE_DMA_COPY_B]);
    for (k, &n) in [1usize, 4, 3, 13, 4097, 65_537, 1 << 20].iter().enumerate() {
        let src = DATA + 0x1000 * k as u64 + 3;
        let dst = DATA + 0x20_0000 + 0x1000 * k as u64 + 1;
        let data = pattern(n, k as u8);
        env.write(src, &data);
        env.write(dst - 1, &vec![0xee; n + 2]);
        env.submit(&copy_words(src, dst, n as u32));
        env.wait_idle();
        assert!(!env.ch.is_dead(), "{:?}", env.gpu.faults());
        let got = env.read(dst - 1, n + 2);
        assert_eq!(got[0], 0xee, "byte before the copy of {n} changed");
        assert_eq!(got[n + 1], 0xee, "byte after the copy of {n} changed");
        assert!(got[1..=n] == data[..], "copy of {n} bytes differs");
    }
}

#[test]
fn copy_engine_across_two_mappings_and_semaphore() {
    let mut env = Env::new(16, &[AMPERE_DMA_COPY_B]);
    let n = 0x3000usize;
    let src = SPLIT_A + 0x1_0000 - 0x1800; // spans SPLIT_A | SPLIT_B
    let data = pattern(n, 7);
    env.write(src, &data[..0x1800]);
    env.write(SPLIT_B, &data[0x1800..]);
    let dst = DATA + 0x100;
    let mut w = vec![inc(4, 0, 1), AMPERE_DMA_COPY_B];
    w.extend(copy_words(src, dst, n as u32));
    // And back into the split range at another offset.
    w.extend(copy_words(dst, SPLIT_A + 0xf000, n as u32));
    // Four-word semaphore with 64-bit payload (bit 27) and FLUSH.
    w.extend([
        inc(4, 0x240, 4),
        (SEM >> 32) as u32,
        SEM as u32,
        0x8765_4321,
        0x1,
    ]);
    w.extend([inc(4, 0x300, 1), 0x14 | (1 << 27)]);
    // One-word semaphore.
    w.extend([
        inc(4, 0x240, 3),
        (SEM >> 32) as u32,
        (SEM + 0x20) as u32,
        0x55,
    ]);
    w.extend([inc(4, 0x300, 1), 0x8]);
    let t0 = monotonic_ns();
    env.submit(&w);
    env.wait_idle();
    assert!(env.gpu.faults().is_empty(), "{:?}", env.gpu.faults());
    assert!(env.read(dst, n) == data);
    let mut back = env.read(SPLIT_A + 0xf000, 0x1000);
    back.extend(env.read(SPLIT_B, n - 0x1000));
    assert!(back == data);
    assert_eq!(env.u64(SEM), 0x1_8765_4321);
    assert!(env.u64(SEM + 8) >= t0);
    assert_eq!(env.u32(SEM + 0x20), 0x55);
}

#[test]
fn copy_engine_remap_fill() {
    let mut env = Env::new(16, &[AMPERE_DMA_COPY_B]);
    let dst = DATA + 0x4000;
    env.write(dst, &[0u8; 0x100]);
    let w = vec![
        inc(4, 0, 1),
        AMPERE_DMA_COPY_B,
        inc(4, 0x408, 2),
        (dst >> 32) as u32,
        dst as u32,
        inc(4, 0x410, 4),
        0x20,
        0x40,
        8,
        3, // PITCH_IN, PITCH_OUT, LINE_LENGTH_IN = 8 elements, LINE_COUNT = 3
        inc(4, 0x700, 1),
        0xabcd_0123,
        inc(4, 0x708, 1),
        0x30004,
        inc(4, 0x300, 1),
        0x586 | 0x200,
    ];
    env.submit(&w);
    env.wait_idle();
    assert!(env.gpu.faults().is_empty(), "{:?}", env.gpu.faults());
    for line in 0..4u64 {
        for e in 0..16u64 {
            let v = env.u32(dst + line * 0x40 + e * 4);
            let want = if line < 3 && e < 8 { 0xabcd_0123 } else { 0 };
            assert_eq!(v, want, "line {line} element {e}");
        }
    }
}

#[test]
fn copy_from_unmapped_source_faults_with_address() {
    let mut env = Env::new(16, &[AMPERE_DMA_COPY_B]);
    let mut w = vec![inc(4, 0, 1), AMPERE_DMA_COPY_B];
    // Starts mapped, runs off the end of SPLIT_B into unmapped VA.
    w.extend(copy_words(SPLIT_B + 0xff00, DATA, 0x200));
    env.submit(&w);
    env.wait_fault();
    let f = env.gpu.faults();
    assert_eq!((f[0].code, f[0].address), (31, Some(SPLIT_B + 0x1_0000)));
}
