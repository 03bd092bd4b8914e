//! Stream memory operations: cuStreamWriteValue32/64, cuStreamWaitValue32/64 (every condition),
//! cuStreamBatchMemOp, with the CPU and another stream releasing the waits, and the refusals.

use crate::*;
use std::ffi::c_void;
use std::ptr::null_mut;
use std::time::{Duration, Instant};

const NOT_READY: CUresult = 600;
const INVALID_VALUE: CUresult = 1;
const NOT_SUPPORTED: CUresult = 801;

fn query(s: *mut c_void) -> CUresult {
    cu!(cuStreamQuery(s): *mut c_void)
}

/// Poll the stream until it is idle (10 s at most: a wait that is never satisfied fails the
/// test instead of hanging it).
fn settle(s: *mut c_void, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match query(s) {
            OK => return,
            NOT_READY if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(1)),
            r => panic!("{what}: cuStreamQuery answered {r} (10 s)"),
        }
    }
}

fn write32(s: *mut c_void, d: u64, v: u32, flags: u32) -> CUresult {
    cu!(cuStreamWriteValue32_v2(s, d, v, flags): *mut c_void, u64, u32, u32)
}
fn write64(s: *mut c_void, d: u64, v: u64, flags: u32) -> CUresult {
    cu!(cuStreamWriteValue64_v2(s, d, v, flags): *mut c_void, u64, u64, u32)
}
fn wait32(s: *mut c_void, d: u64, v: u32, flags: u32) -> CUresult {
    cu!(cuStreamWaitValue32_v2(s, d, v, flags): *mut c_void, u64, u32, u32)
}
fn wait64(s: *mut c_void, d: u64, v: u64, flags: u32) -> CUresult {
    cu!(cuStreamWaitValue64_v2(s, d, v, flags): *mut c_void, u64, u64, u32)
}

/// A `CUstreamBatchMemOpParams` (48 bytes): operation, address, value, flags.
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct Op {
    operation: u32,
    word1: u32,
    address: u64,
    value: u64,
    flags: u32,
    pad: [u32; 5],
}

fn batch(s: *mut c_void, ops: &[Op], flags: u32) -> CUresult {
    cu!(cuStreamBatchMemOp_v2(s, ops.len() as u32, ops.as_ptr() as *const c_void, flags):
        *mut c_void, u32, *const c_void, u32)
}

#[test]
fn stream_memory_operations() {
    setup();
    for (a, want) in [(122, 1), (123, 1)] {
        let mut v = -1;
        check(
            cu!(cuDeviceGetAttribute(&mut v, a, 0): *mut i32, i32, i32),
            "attribute",
        );
        assert_eq!(v, want, "attribute {a}");
    }
    let (mut s, mut s2) = (null_mut(), null_mut());
    check(
        cu!(cuStreamCreate(&mut s, 1): *mut *mut c_void, u32),
        "stream",
    );
    check(
        cu!(cuStreamCreate(&mut s2, 1): *mut *mut c_void, u32),
        "stream 2",
    );
    let d = alloc(64);
    check(cu!(cuMemsetD8_v2(d, 0, 64): u64, u8, usize), "memset");
    // The streams are non-blocking: the legacy stream's memset is done before they start.
    check(cu!(cuCtxSynchronize(): ), "sync");

    // Writes (the write without the memory barrier is refused, as by NVIDIA's libcuda on the
    // H100).
    check(write32(s, d, 7, 0), "write32");
    check(write64(s, d + 8, 0x1_0000_0002, 0), "write64");
    assert_eq!(write32(s, d + 60, 1, 1), INVALID_VALUE, "NO_MEMORY_BARRIER");
    settle(s, "writes");
    assert_eq!(dtoh::<u32>(d, 4), vec![7, 0, 2, 1]);

    // A wait released by another stream: GEQ (cyclic), then a write behind it.
    check(wait32(s2, d + 16, 5, 0), "wait GEQ");
    check(write32(s2, d + 20, 9, 0), "write behind the wait");
    std::thread::sleep(Duration::from_millis(20));
    assert_eq!(query(s2), NOT_READY, "the stream waits for the value");
    assert_eq!(
        dtoh::<u32>(d + 20, 1),
        vec![0],
        "nothing behind the wait ran"
    );
    check(write32(s, d + 16, 6, 0), "release from the other stream");
    settle(s2, "GEQ wait");
    assert_eq!(dtoh::<u32>(d + 20, 1), vec![9]);

    // A wait released by the CPU through pinned host memory's device pointer; the other
    // conditions; 64-bit values.
    let mut h: *mut c_void = null_mut();
    check(
        cu!(cuMemHostAlloc(&mut h, 64, 0): *mut *mut c_void, usize, u32),
        "host alloc",
    );
    let words = h as *mut u64;
    unsafe {
        for i in 0..8 {
            words.add(i).write_volatile(0);
        }
        words.add(1).write_volatile(u64::MAX);
    }
    let mut hd = 0u64;
    check(
        cu!(cuMemHostGetDevicePointer_v2(&mut hd, h, 0): *mut u64, *mut c_void, u32),
        "device pointer",
    );
    check(wait64(s2, hd, 0x1_0000_0003, 1), "wait EQ 64");
    check(wait32(s2, hd + 8, 0, 3), "wait NOR");
    check(wait64(s2, hd + 16, 0b100, 2), "wait AND 64");
    check(write32(s2, d + 24, 11, 0), "write behind the waits");
    std::thread::sleep(Duration::from_millis(20));
    assert_eq!(query(s2), NOT_READY);
    unsafe { words.write_volatile(0x1_0000_0003) };
    std::thread::sleep(Duration::from_millis(20));
    assert_eq!(
        query(s2),
        NOT_READY,
        "the NOR wait holds (the word is all ones)"
    );
    unsafe { words.add(1).write_volatile(0xffff_fffe) };
    std::thread::sleep(Duration::from_millis(20));
    assert_eq!(
        query(s2),
        NOT_READY,
        "the AND wait holds (no bit in common)"
    );
    unsafe { words.add(2).write_volatile(0b110) };
    settle(s2, "EQ, NOR and AND waits");
    assert_eq!(dtoh::<u32>(d + 24, 1), vec![11]);

    // A batch: writes, a barrier and a satisfied wait.
    let ops = [
        Op {
            operation: 2,
            address: d + 32,
            value: 21,
            ..Default::default()
        },
        Op {
            operation: 5,
            address: d + 40,
            value: 0x2_0000_0022,
            ..Default::default()
        },
        Op {
            operation: 6,
            word1: 0,
            ..Default::default()
        },
        Op {
            operation: 1,
            address: d + 32,
            value: 21,
            flags: 1,
            ..Default::default()
        },
        Op {
            operation: 2,
            address: d + 48,
            value: 23,
            ..Default::default()
        },
    ];
    check(batch(s, &ops, 0), "batch");
    settle(s, "batch");
    assert_eq!(dtoh::<u32>(d + 32, 5), vec![21, 0, 0x22, 2, 23]);

    // Refusals, each naming what is wrong; a refused batch records nothing.
    assert_eq!(write32(s, d + 2, 1, 0), INVALID_VALUE, "unaligned");
    assert_eq!(write64(s, d + 4, 1, 0), INVALID_VALUE, "unaligned 64");
    assert_eq!(
        write32(s, d + 64, 1, 0),
        INVALID_VALUE,
        "past the allocation"
    );
    assert_eq!(write32(s, 0x10, 1, 0), INVALID_VALUE, "not an allocation");
    assert_eq!(write32(s, d, 1, 2), INVALID_VALUE, "write flags");
    assert_eq!(wait32(s, d, 1, 4), INVALID_VALUE, "wait flags");
    assert_eq!(wait32(s, d, 1, 1 << 30), NOT_SUPPORTED, "FLUSH");
    let bad = [
        Op {
            operation: 2,
            address: d + 56,
            value: 99,
            ..Default::default()
        },
        Op {
            operation: 2,
            address: d + 57,
            value: 99,
            ..Default::default()
        },
    ];
    assert_eq!(
        batch(s, &bad, 0),
        INVALID_VALUE,
        "unaligned second operation"
    );
    assert_eq!(batch(s, &ops[..1], 1), INVALID_VALUE, "batch flags");
    let many = vec![
        Op {
            operation: 6,
            ..Default::default()
        };
        257
    ];
    assert_eq!(batch(s, &many, 0), INVALID_VALUE, "257 operations");
    let flush = [Op {
        operation: 3,
        ..Default::default()
    }];
    assert_eq!(batch(s, &flush, 0), NOT_SUPPORTED, "FLUSH_REMOTE_WRITES");
    let unknown = [Op {
        operation: 7,
        ..Default::default()
    }];
    assert_eq!(batch(s, &unknown, 0), INVALID_VALUE, "unknown operation");
    check(batch(s, &[], 0), "empty batch");
    settle(s, "after the refusals");
    assert_eq!(
        dtoh::<u32>(d + 56, 1),
        vec![0],
        "the refused batch wrote nothing"
    );
    assert_eq!(
        dtoh::<u32>(d, 1),
        vec![7],
        "the refused writes wrote nothing"
    );

    check(cu!(cuMemFreeHost(h): *mut c_void), "free host");
    check(cu!(cuStreamDestroy_v2(s): *mut c_void), "destroy");
    check(cu!(cuStreamDestroy_v2(s2): *mut c_void), "destroy 2");
    check(cu!(cuMemFree_v2(d): u64), "free");
}
