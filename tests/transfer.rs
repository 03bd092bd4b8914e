//! Queue fills and host transfers (`Queue::fill_va`, `write_from_host`, `read_to_host` and their
//! buffer forms) on the emulated Orin: every element size at odd offsets and counts with every
//! byte around checked, round trips of odd and multi-chunk sizes on both queue kinds, reuse of
//! the source right after the call, ordering with kernels, and bad input.

mod common;

use common::{cfg, data_flags, device, fixtures, params_of, SEC};
use tegragpu::core::{Buffer, Device, Queue, QueueKind, STAGING_CHUNK};
use tegragpu::Status;

const SENTINEL: u8 = 0xA5;

fn kinds() -> [QueueKind; 2] {
    [QueueKind::Compute, QueueKind::Copy]
}

/// A buffer of `size` bytes, every byte SENTINEL.
fn sentinel_buffer(dev: &Device, size: u64) -> Buffer {
    let b = dev.alloc(size, data_flags()).unwrap();
    // SAFETY: no GPU work uses the fresh buffer.
    unsafe { b.as_mut_slice().fill(SENTINEL) };
    b
}

fn bytes_of(b: &Buffer) -> Vec<u8> {
    // SAFETY: callers synchronize first.
    unsafe { b.as_slice().to_vec() }
}

/// Deterministic bytes that differ from SENTINEL's pattern.
fn pattern(n: usize, seed: u32) -> Vec<u8> {
    let mut x = seed.wrapping_mul(2_654_435_761).wrapping_add(1);
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x as u8
        })
        .collect()
}

#[test]
fn fill_writes_every_element_size_and_nothing_around() {
    let dev = device();
    // (element offset, count): odd offsets and counts; 20000 4-byte elements pass the 64 KiB
    // pattern a compute queue stages (its doubling copies), 300001 1-byte elements span more
    // than two 128 KiB rows of the copy engine's fill (a multi-line command and a rest).
    let cases: &[(u64, u64)] = &[
        (0, 1),
        (1, 1),
        (3, 7),
        (5, 1000),
        (7, 20_000),
        (9, 70_001),
        (1, 300_001),
    ];
    for kind in kinds() {
        let mut q = dev.create_queue(kind).unwrap();
        for (e, value) in [(1u32, 0x5Au32), (2, 0xBEEF), (4, 0x1234_5678)] {
            for &(first, count) in cases {
                let e64 = u64::from(e);
                let offset = 64 + first * e64;
                let size = offset + count * e64 + 64;
                let buf = sentinel_buffer(&dev, size);
                q.fill(&buf, offset, value, e, count).unwrap();
                q.synchronize(10 * SEC).unwrap();
                let got = bytes_of(&buf);
                for (i, &b) in got.iter().enumerate() {
                    let i = i as u64;
                    let want = if i >= offset && i < offset + count * e64 {
                        (value >> (8 * ((i - offset) % e64))) as u8
                    } else {
                        SENTINEL
                    };
                    assert_eq!(
                        b, want,
                        "{kind:?} queue, {e}-byte fill of {value:#x} × {count} at byte {offset}: byte {i}"
                    );
                }
            }
        }
    }
}

#[test]
fn fill_va_and_kernels_run_in_queue_order() {
    let dev = device();
    let m = fixtures(&dev);
    let k = m.kernel("fill_u32").unwrap();
    let n = 4096u64;
    let buf = sentinel_buffer(&dev, n * 4);
    let mut q = dev.create_queue(QueueKind::Compute).unwrap();
    // kernel writes 1 everywhere, fill writes 2 over the middle, kernel writes 3 over the first
    // quarter: the result shows the three ran in the order recorded.
    q.launch(&k, &cfg(16, 256), &params_of(&k, &[buf.gpu_va(), 1, n]))
        .unwrap();
    q.fill_va(buf.gpu_va() + n, 2, 4, n / 2).unwrap();
    q.launch(&k, &cfg(4, 256), &params_of(&k, &[buf.gpu_va(), 3, n / 4]))
        .unwrap();
    let mut out = vec![0u8; (n * 4) as usize];
    q.read(&buf, 0, &mut out).unwrap();
    let words: Vec<u32> = out
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    for (i, &w) in words.iter().enumerate() {
        let i = i as u64;
        let want = if i < n / 4 {
            3
        } else if i < n / 4 + n / 2 {
            2
        } else {
            1
        };
        assert_eq!(w, want, "word {i}");
    }
}

#[test]
fn fill_rejects_bad_input_naming_the_values() {
    let dev = device();
    let buf = dev.alloc(4096, data_flags()).unwrap();
    let mut q = dev.create_queue(QueueKind::Copy).unwrap();
    let err = |r: tegragpu::Result<()>| r.expect_err("must fail");
    let e = err(q.fill(&buf, 0, 0, 3, 4));
    assert_eq!(e.status, Status::InvalidArgument);
    assert!(e.message.contains("elem_bytes 3"), "{e}");
    let e = err(q.fill(&buf, 0, 0x100, 1, 4));
    assert!(
        e.message.contains("0x100") && e.message.contains("1 byte"),
        "{e}"
    );
    let e = err(q.fill(&buf, 0, 0x1_0000, 2, 4));
    assert!(e.message.contains("0x10000"), "{e}");
    let e = err(q.fill_va(buf.gpu_va() + 1, 7, 2, 4));
    assert!(
        e.message.contains("not aligned") && e.message.contains('2'),
        "{e}"
    );
    let e = err(q.fill_va(buf.gpu_va() + 2, 7, 4, 4));
    assert!(e.message.contains("not aligned"), "{e}");
    let e = err(q.fill(&buf, 4000, 7, 4, 25));
    assert!(
        e.message.contains("tg_queue_fill") && e.message.contains("4096"),
        "{e}"
    );
    let e = err(q.fill(&buf, 0, 7, 4, u64::MAX / 2));
    assert_eq!(e.status, Status::InvalidArgument, "{e}");
    let e = err(q.fill_va(u64::MAX - 7, 7, 4, 4));
    assert!(e.message.contains("end of the address space"), "{e}");
    // count 0 records nothing and is fine, even past the buffer.
    q.fill(&buf, 4096, 7, 4, 0).unwrap();
    // Nothing was written by the refused calls.
    q.synchronize(10 * SEC).unwrap();
    assert!(bytes_of(&buf).iter().all(|&b| b == 0));
}

fn round_trip(q: &mut Queue, dev: &Device, offset: u64, len: usize, seed: u32) {
    let size = offset + len as u64 + 16;
    let buf = sentinel_buffer(dev, size);
    let data = pattern(len, seed);
    q.write(&buf, offset, &data).unwrap();
    let mut back = vec![0u8; len];
    q.read(&buf, offset, &mut back).unwrap();
    assert!(
        back == data,
        "{:?} queue: {len} bytes at {offset} came back different",
        q.kind()
    );
    // read waited for the write: the buffer holds the data, and nothing around it changed.
    let all = bytes_of(&buf);
    assert!(all[..offset as usize].iter().all(|&b| b == SENTINEL));
    assert!(all[offset as usize + len..].iter().all(|&b| b == SENTINEL));
    assert!(all[offset as usize..offset as usize + len] == data[..]);
}

#[test]
fn write_and_read_round_trip_odd_sizes_on_both_queue_kinds() {
    let dev = device();
    for kind in kinds() {
        let mut q = dev.create_queue(kind).unwrap();
        for (i, &(offset, len)) in [(0u64, 1usize), (1, 3), (7, 4097), (3, 65_537)]
            .iter()
            .enumerate()
        {
            round_trip(&mut q, &dev, offset, len, i as u32);
        }
    }
}

#[test]
fn transfers_larger_than_a_staging_chunk_and_than_the_in_flight_limit() {
    let dev = device();
    let chunk = STAGING_CHUNK as usize;
    for kind in kinds() {
        let mut q = dev.create_queue(kind).unwrap();
        // Two chunks and an odd rest.
        round_trip(&mut q, &dev, 5, 2 * chunk + 13, 11);
        // More chunks than a queue keeps in flight (8): the write waits for its oldest chunks
        // (submitting them itself), the read drains as it goes.
        round_trip(&mut q, &dev, 0, 9 * chunk + 1, 12);
    }
    // The staging buffers went back to the device.
    assert!(dev.staging_pool_len() > 0);
}

#[test]
fn the_source_may_be_reused_as_soon_as_write_returns() {
    let dev = device();
    for kind in kinds() {
        let mut q = dev.create_queue(kind).unwrap();
        let n = 10_000usize;
        let buf = sentinel_buffer(&dev, 3 * n as u64);
        let mut src = pattern(n, 1);
        let first = src.clone();
        q.write(&buf, 0, &src).unwrap();
        src.copy_from_slice(&pattern(n, 2));
        let second = src.clone();
        q.write(&buf, n as u64, &src).unwrap();
        src.fill(0);
        drop(src);
        q.synchronize(10 * SEC).unwrap();
        let all = bytes_of(&buf);
        assert!(all[..n] == first[..], "{kind:?}: first write");
        assert!(all[n..2 * n] == second[..], "{kind:?}: second write");
        assert!(all[2 * n..].iter().all(|&b| b == SENTINEL));
    }
}

#[test]
fn writes_reads_and_kernels_keep_queue_order() {
    let dev = device();
    let m = fixtures(&dev);
    let inc = m.kernel("increment").unwrap();
    let buf = dev.alloc(64, data_flags()).unwrap();
    let mut q = dev.create_queue(QueueKind::Compute).unwrap();
    // write 100, kernel +5, write over the second word, kernel +7, read: each step saw the one
    // before (no synchronize in between).
    q.write_from_host(buf.gpu_va(), &100u64.to_le_bytes())
        .unwrap();
    q.launch(&inc, &cfg(1, 1), &params_of(&inc, &[buf.gpu_va(), 5]))
        .unwrap();
    q.write_from_host(buf.gpu_va() + 8, &9u64.to_le_bytes())
        .unwrap();
    q.launch(&inc, &cfg(1, 1), &params_of(&inc, &[buf.gpu_va(), 7]))
        .unwrap();
    let mut out = [0u8; 16];
    // SAFETY: out is 16 writable bytes.
    unsafe { q.read_to_host(out.as_mut_ptr(), buf.gpu_va(), 16) }.unwrap();
    assert_eq!(u64::from_le_bytes(out[..8].try_into().unwrap()), 112);
    assert_eq!(u64::from_le_bytes(out[8..].try_into().unwrap()), 9);
    // A kernel recorded after a write sees the write; a read recorded after the kernel sees
    // the kernel, also for a value written many times over with no synchronize.
    for i in 0..20u64 {
        q.write_from_host(buf.gpu_va(), &i.to_le_bytes()).unwrap();
        q.launch(&inc, &cfg(1, 1), &params_of(&inc, &[buf.gpu_va(), 1000]))
            .unwrap();
    }
    let mut v = [0u8; 8];
    q.read(&buf, 0, &mut v).unwrap();
    assert_eq!(u64::from_le_bytes(v), 19 + 1000);
}

#[test]
fn transfers_reject_bad_input() {
    let dev = device();
    let other = Device::open(Some("emu")).unwrap();
    let buf = dev.alloc(4096, data_flags()).unwrap();
    let foreign = other.alloc(4096, data_flags()).unwrap();
    let mut q = dev.create_queue(QueueKind::Compute).unwrap();
    let e = q.write(&buf, 4000, &[0u8; 97]).unwrap_err();
    assert!(
        e.message.contains("tg_queue_write") && e.message.contains("4096"),
        "{e}"
    );
    let mut out = [0u8; 97];
    let e = q.read(&buf, 4000, &mut out).unwrap_err();
    assert!(
        e.message.contains("tg_queue_read") && e.message.contains("4096"),
        "{e}"
    );
    let e = q.write(&foreign, 0, &[1]).unwrap_err();
    assert!(e.message.contains("another device"), "{e}");
    let e = q.read(&foreign, 0, &mut out[..1]).unwrap_err();
    assert!(e.message.contains("another device"), "{e}");
    let e = q.fill(&foreign, 0, 1, 1, 1).unwrap_err();
    assert!(e.message.contains("another device"), "{e}");
    // SAFETY: the call refuses the null pointer before writing.
    let e = unsafe { q.read_to_host(std::ptr::null_mut(), buf.gpu_va(), 4) }.unwrap_err();
    assert_eq!(e.status, Status::NullPointer);
    // SAFETY: size 0 writes nothing.
    unsafe { q.read_to_host(std::ptr::null_mut(), buf.gpu_va(), 0) }.unwrap();
    let e = q.write_from_host(u64::MAX - 2, &[0u8; 8]).unwrap_err();
    assert!(e.message.contains("end of the address space"), "{e}");
    // Empty transfers do nothing, at any offset inside or at the end.
    q.write(&buf, 4096, &[]).unwrap();
    q.read(&buf, 4096, &mut []).unwrap();
}
