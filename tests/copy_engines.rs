//! Choosing a copy queue's copy engine (`Device::create_copy_queue`, `Device::copy_engines`,
//! `Queue::engine`) and how a copy queue hands copies to it (`Queue::set_copy_split`).
//!
//! On the emulated Orin: the split copies land byte for byte, bad splits and engine choices
//! are refused with the reason. With the desktop driver (`TEGRAGPU_TEST_DEVICE=rm`) it lists
//! the logical copy engines, makes a copy queue on each (printing where each ran or why the
//! driver refused it) and checks a copy on every queue that was made.

mod common;

use tegragpu::core::{CopyEngine, CopySplit, Device, MemFlags, Queue, QueueConfig, QueueKind};
use tegragpu::Status;

const SEC: u64 = 1_000_000_000;

fn host() -> MemFlags {
    MemFlags {
        cpu_cached: true,
        ..Default::default()
    }
}

fn pattern(i: usize) -> u8 {
    ((i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 57) as u8 ^ (i >> 12) as u8
}

/// Copy `n` bytes from offset `so` of a patterned buffer to offset `d_off` of a zeroed one on
/// `q`, and check every byte of the destination (outside the range it stays zero).
fn check_copy(dev: &Device, q: &mut Queue, n: u64, so: u64, d_off: u64, what: &str) {
    let len = n + so.max(d_off) + 4096;
    let src = dev.alloc(len, host()).unwrap();
    let dst = dev.alloc(len, host()).unwrap();
    // SAFETY: no GPU work uses the buffers yet.
    unsafe {
        for (i, b) in src.as_mut_slice().iter_mut().enumerate() {
            *b = pattern(i);
        }
        dst.as_mut_slice().fill(0);
    }
    q.copy(&dst, d_off, &src, so, n).unwrap();
    q.synchronize(30 * SEC).unwrap();
    // SAFETY: the queue is idle.
    let got = unsafe { dst.as_slice() };
    for (i, &b) in got.iter().enumerate() {
        let i64 = i as u64;
        let want = if (d_off..d_off + n).contains(&i64) {
            pattern((i64 - d_off + so) as usize)
        } else {
            0
        };
        assert_eq!(
            b, want,
            "{what}: byte {i} of the destination ({n} bytes copied from offset {so} to {d_off})"
        );
    }
}

#[test]
fn split_copies_land_byte_for_byte() {
    let dev = common::device();
    let mut q = dev.create_queue(QueueKind::Copy).unwrap();
    println!("copy queue runs on: {}", q.engine());
    let splits = [
        CopySplit::Whole,
        CopySplit::Pieces(4096),
        CopySplit::Pieces(64 << 10),
        CopySplit::Lines(4096),
        CopySplit::Lines(12 << 10),
    ];
    for split in splits {
        q.set_copy_split(split).unwrap();
        for (n, so, d_off) in [
            ((1 << 20) + 12345, 3, 4099),
            (4096, 0, 0),
            (100, 7, 1),
            ((3 << 16) + 4096 * 2, 4096, 8192),
        ] {
            check_copy(&dev, &mut q, n, so, d_off, &format!("{split:?}"));
        }
    }
}

#[test]
fn bad_splits_and_engine_choices_are_refused() {
    let dev = common::device();
    let mut q = dev.create_queue(QueueKind::Copy).unwrap();
    for bad in [
        CopySplit::Pieces(0),
        CopySplit::Pieces(4095),
        CopySplit::Pieces((1 << 30) + 1),
        CopySplit::Lines(100),
    ] {
        let e = q.set_copy_split(bad).unwrap_err();
        assert_eq!(e.status, Status::InvalidArgument, "{e}");
        assert!(e.message.contains("4 KiB ..= 1 GiB"), "{e}");
    }
    let mut k = dev.create_queue(QueueKind::Compute).unwrap();
    assert_eq!(k.engine(), "SMs");
    let e = k.set_copy_split(CopySplit::Pieces(1 << 20)).unwrap_err();
    assert!(e.message.contains("copy queues"), "{e}");

    if dev.copy_engines().is_empty() {
        // A backend without a list of engines (nvgpu, the emulated Orin) has one choice.
        let e = dev
            .create_copy_queue(CopyEngine::Lce(4), QueueConfig::default())
            .unwrap_err();
        assert_eq!(e.status, Status::NotSupported, "{e}");
        assert!(e.message.contains("LCE4"), "{e}");
        let e = dev
            .create_copy_queue(CopyEngine::Grce, QueueConfig::default())
            .unwrap_err();
        assert_eq!(e.status, Status::NotSupported, "{e}");
        let mut a = dev
            .create_copy_queue(CopyEngine::Auto, QueueConfig::default())
            .unwrap();
        assert_eq!(a.kind(), QueueKind::Copy);
        check_copy(&dev, &mut a, 8192, 1, 2, "auto copy queue");
    } else {
        // An index the GPU does not list.
        let e = dev
            .create_copy_queue(CopyEngine::Lce(99), QueueConfig::default())
            .unwrap_err();
        assert_eq!(e.status, Status::NotFound, "{e}");
        assert!(e.message.contains("LCE99"), "{e}");
    }
}

/// Every engine the driver lists: a copy queue on it, or the driver's refusal, printed.
#[test]
fn each_listed_copy_engine_makes_a_queue_or_says_why_not() {
    let dev = common::device();
    let engines = dev.copy_engines();
    if engines.is_empty() {
        println!(
            "copy engines: the backend lists none ({:?})",
            dev.backend_kind()
        );
        return;
    }
    let mut made = 0;
    let mut candidates = vec![CopyEngine::Auto, CopyEngine::Grce];
    candidates.extend(engines.iter().map(|e| CopyEngine::Lce(e.index)));
    for e in &engines {
        println!(
            "LCE{}: engine type {:#x}, caps {:02x?}{}, PCE mask {:#x} ({} PCEs)",
            e.index,
            e.engine_type,
            e.caps,
            if e.is_grce() { " (GRCE)" } else { "" },
            e.pce_mask,
            e.pce_count()
        );
    }
    for c in candidates {
        match dev.create_copy_queue(c, QueueConfig::default()) {
            Ok(mut q) => {
                let on = q.engine();
                println!("{c}: runs on {on}");
                if let CopyEngine::Lce(n) = c {
                    assert!(on.starts_with(&format!("LCE{n} ")), "{c}: {on}");
                }
                if c == CopyEngine::Grce {
                    assert!(on.starts_with("GRCE"), "{c}: {on}");
                }
                check_copy(&dev, &mut q, (1 << 20) + 5, 1, 3, &format!("{c}"));
                made += 1;
            }
            Err(e) => {
                println!("{c}: refused: {e}");
                assert_ne!(c, CopyEngine::Auto, "the default copy queue: {e}");
                assert!(e.message.contains(&format!("{c}")), "{e}");
            }
        }
    }
    assert!(made >= 1);
}
