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

/// `CUDA_BATCH_MEM_OP_NODE_PARAMS`.
#[repr(C)]
struct NodeParams {
    ctx: *mut c_void,
    count: u32,
    ops: *const Op,
    flags: u32,
}

fn node_params(ops: &[Op]) -> NodeParams {
    let mut ctx = null_mut();
    check(cu!(cuCtxGetCurrent(&mut ctx): *mut *mut c_void), "current");
    NodeParams {
        ctx,
        count: ops.len() as u32,
        ops: ops.as_ptr(),
        flags: 0,
    }
}

fn add_node(g: *mut c_void, deps: &[*mut c_void], p: &NodeParams) -> (CUresult, *mut c_void) {
    let mut n = null_mut();
    let r = cu!(cuGraphAddBatchMemOpNode(&mut n, g, deps.as_ptr(), deps.len(), p):
        *mut *mut c_void, *mut c_void, *const *mut c_void, usize, *const NodeParams);
    (r, n)
}

fn node_type(n: *mut c_void) -> u32 {
    let mut t = 99u32;
    check(
        cu!(cuGraphNodeGetType(n, &mut t): *mut c_void, *mut u32),
        "type",
    );
    t
}

fn launch(exec: *mut c_void, s: *mut c_void) {
    check(
        cu!(cuGraphLaunch(exec, s): *mut c_void, *mut c_void),
        "launch",
    );
}

/// Batch memory operation nodes (added, through `cuGraphAddNode`, and captured from
/// `cuStreamWriteValue32` and `cuStreamBatchMemOp`): a wait node holds the nodes after it until
/// the CPU writes the value; write nodes write after the nodes before them; the node's
/// parameters read back, change in the graph and, within NVIDIA's limits, in the executable
/// graph; bad parameters are refused.
#[test]
fn batch_memory_operation_nodes() {
    setup();
    let mut s = null_mut();
    check(
        cu!(cuStreamCreate(&mut s, 1): *mut *mut c_void, u32),
        "stream",
    );
    let d = alloc(64);
    check(cu!(cuMemsetD8_v2(d, 0, 64): u64, u8, usize), "memset");
    check(cu!(cuCtxSynchronize(): ), "sync");
    let mut h: *mut c_void = null_mut();
    check(
        cu!(cuMemHostAlloc(&mut h, 64, 0): *mut *mut c_void, usize, u32),
        "host alloc",
    );
    let flag = h as *mut u32;
    unsafe { flag.write_volatile(0) };
    let mut hd = 0u64;
    check(
        cu!(cuMemHostGetDevicePointer_v2(&mut hd, h, 0): *mut u64, *mut c_void, u32),
        "device pointer",
    );
    let mut g = null_mut();
    check(
        cu!(cuGraphCreate(&mut g, 0): *mut *mut c_void, u32),
        "graph",
    );
    // wait (flag == 1) -> memset d[0..4] = 5 -> write32 d[8] = 77, write64 d[10..12].
    let wait = [Op {
        operation: 1,
        address: hd,
        value: 1,
        flags: 1,
        ..Default::default()
    }];
    let (r, a) = add_node(g, &[], &node_params(&wait));
    check(r, "cuGraphAddBatchMemOpNode wait");
    assert_eq!(node_type(a), 12, "CU_GRAPH_NODE_TYPE_BATCH_MEM_OP");
    let ms = crate::graph_query::MemsetParams::row(d, 5, 4);
    let mut b = null_mut();
    check(
        cu!(cuGraphAddMemsetNode(&mut b, g, &a, 1, &ms, null_mut()):
            *mut *mut c_void, *mut c_void, *const *mut c_void, usize, *const crate::graph_query::MemsetParams, *mut c_void),
        "memset node",
    );
    let writes = [
        Op {
            operation: 2,
            address: d + 32,
            value: 77,
            ..Default::default()
        },
        Op {
            operation: 5,
            address: d + 40,
            value: 0x3_0000_0033,
            ..Default::default()
        },
    ];
    let (r, c) = add_node(g, &[b], &node_params(&writes));
    check(r, "cuGraphAddBatchMemOpNode writes");
    let mut exec = null_mut();
    check(
        cu!(cuGraphInstantiateWithFlags(&mut exec, g, 0): *mut *mut c_void, *mut c_void, u64),
        "instantiate",
    );
    launch(exec, s);
    std::thread::sleep(Duration::from_millis(20));
    assert_eq!(query(s), NOT_READY, "the graph waits for the flag");
    assert_eq!(
        dtoh::<u32>(d, 12),
        vec![0; 12],
        "nothing after the wait ran"
    );
    unsafe { flag.write_volatile(1) };
    settle(s, "released graph");
    assert_eq!(
        dtoh::<u32>(d, 12),
        vec![5, 5, 5, 5, 0, 0, 0, 0, 77, 0, 0x33, 3]
    );

    // Parameters read back: the node's own copy.
    let mut back = NodeParams {
        ctx: 2 as *mut c_void,
        count: 0,
        ops: std::ptr::null(),
        flags: 9,
    };
    check(
        cu!(cuGraphBatchMemOpNodeGetParams(c, &mut back): *mut c_void, *mut NodeParams),
        "get params",
    );
    let mut cur = null_mut();
    check(cu!(cuCtxGetCurrent(&mut cur): *mut *mut c_void), "current");
    assert_eq!((back.ctx, back.count, back.flags), (cur, 2, 0));
    assert_ne!(back.ops, writes.as_ptr(), "a copy, not the caller's array");
    // SAFETY: the node's copy of its 2 operations.
    let got = unsafe { std::slice::from_raw_parts(back.ops, 2) };
    assert_eq!(
        got.iter()
            .map(|o| (o.operation, o.address, o.value))
            .collect::<Vec<_>>(),
        vec![(2, d + 32, 77), (5, d + 40, 0x3_0000_0033)]
    );
    assert_eq!(
        cu!(cuGraphBatchMemOpNodeGetParams(b, &mut back): *mut c_void, *mut NodeParams),
        INVALID_VALUE,
        "a memset node"
    );

    // The executable graph's node: new addresses and values (wait for 2, write 88), not a new
    // count or operation type.
    let wait2 = [Op {
        value: 2,
        ..wait[0]
    }];
    check(
        cu!(cuGraphExecBatchMemOpNodeSetParams(exec, a, &node_params(&wait2)):
            *mut c_void, *mut c_void, *const NodeParams),
        "exec set wait",
    );
    let writes2 = [
        Op {
            value: 88,
            ..writes[0]
        },
        Op {
            address: d + 48,
            ..writes[1]
        },
    ];
    check(
        cu!(cuGraphExecBatchMemOpNodeSetParams(exec, c, &node_params(&writes2)):
            *mut c_void, *mut c_void, *const NodeParams),
        "exec set writes",
    );
    for (what, ops) in [
        ("one operation for two", &writes2[..1]),
        ("a wait for a write", &[wait2[0], writes2[1]][..]),
    ] {
        assert_eq!(
            cu!(cuGraphExecBatchMemOpNodeSetParams(exec, c, &node_params(ops)):
                *mut c_void, *mut c_void, *const NodeParams),
            INVALID_VALUE,
            "{what}"
        );
    }
    assert_eq!(
        cu!(cuGraphExecBatchMemOpNodeSetParams(exec, b, &node_params(&writes2)):
            *mut c_void, *mut c_void, *const NodeParams),
        INVALID_VALUE,
        "a memset node"
    );
    launch(exec, s);
    std::thread::sleep(Duration::from_millis(20));
    assert_eq!(query(s), NOT_READY, "the new wait holds at 1");
    unsafe { flag.write_volatile(2) };
    settle(s, "the updated graph");
    assert_eq!(dtoh::<u32>(d + 32, 6), vec![88, 0, 0x33, 3, 0x33, 3]);

    // The graph's node takes new operations; bad parameters are refused.
    check(
        cu!(cuGraphBatchMemOpNodeSetParams(a, &node_params(&wait2)):
            *mut c_void, *const NodeParams),
        "set params",
    );
    check(
        cu!(cuGraphBatchMemOpNodeGetParams(a, &mut back): *mut c_void, *mut NodeParams),
        "get params",
    );
    // SAFETY: the node's copy of its operation.
    assert_eq!(unsafe { (*back.ops).value }, 2);
    let not_ours = [Op {
        operation: 2,
        address: 0x10,
        value: 1,
        ..Default::default()
    }];
    let flagged = NodeParams {
        flags: 1,
        ..node_params(&writes)
    };
    let no_ctx = NodeParams {
        ctx: null_mut(),
        ..node_params(&writes)
    };
    for (what, p, want) in [
        ("no context", no_ctx, INVALID_VALUE),
        ("flags", flagged, INVALID_VALUE),
        ("not an allocation", node_params(&not_ours), INVALID_VALUE),
        (
            "FLUSH_REMOTE_WRITES",
            node_params(&[Op {
                operation: 3,
                ..Default::default()
            }]),
            NOT_SUPPORTED,
        ),
    ] {
        assert_eq!(add_node(g, &[], &p).0, want, "{what}");
    }
    let (r, empty) = add_node(g, &[], &node_params(&[]));
    check(r, "a node of no operations (NVIDIA's libcuda takes one)");
    assert_eq!(node_type(empty), 12);

    // Captured: a write and a batch become two nodes of the captured graph.
    check(crate::capture::begin(s), "begin capture");
    check(write32(s, d + 56, 99, 0), "captured write");
    check(
        batch(
            s,
            &[Op {
                operation: 2,
                address: d + 60,
                value: 100,
                ..Default::default()
            }],
            0,
        ),
        "captured batch",
    );
    let (r, cg) = crate::capture::end(s);
    check(r, "end capture");
    assert_eq!(crate::capture::node_types(cg), [12, 12]);
    assert_eq!(dtoh::<u32>(d + 56, 2), vec![0, 0], "capturing ran nothing");
    let (r, cx) = crate::capture::instantiate(cg, 0);
    check(r, "instantiate the captured graph");
    launch(cx, s);
    settle(s, "captured graph");
    assert_eq!(dtoh::<u32>(d + 56, 2), vec![99, 100]);

    for e in [exec, cx] {
        check(cu!(cuGraphExecDestroy(e): *mut c_void), "exec destroy");
    }
    for gr in [g, cg] {
        check(cu!(cuGraphDestroy(gr): *mut c_void), "graph destroy");
    }
    check(cu!(cuMemFreeHost(h): *mut c_void), "free host");
    check(cu!(cuStreamDestroy_v2(s): *mut c_void), "destroy");
    check(cu!(cuMemFree_v2(d): u64), "free");
}
