//! Stream capture: the captured work becomes a graph that runs only when launched; capture
//! errors; fork and join across streams through events; memset nodes.

use crate::*;
use std::ffi::c_void;
use std::ptr::null_mut;

const THREAD_LOCAL: u32 = 1;
const ILLEGAL_STATE: CUresult = 401;
const CAPTURE_UNSUPPORTED: CUresult = 900;
const CAPTURE_INVALIDATED: CUresult = 901;
const CAPTURE_UNMATCHED: CUresult = 903;
const CAPTURE_UNJOINED: CUresult = 904;
const CAPTURE_ISOLATION: CUresult = 905;
const CAPTURED_EVENT: CUresult = 907;

unsafe extern "C" fn never_called(_: *mut c_void, _: CUresult, _: *mut c_void) {
    panic!("a stream callback given to a capturing stream ran");
}

fn stream(flags: u32) -> *mut c_void {
    let mut s = null_mut();
    check(
        cu!(cuStreamCreate(&mut s, flags): *mut *mut c_void, u32),
        "cuStreamCreate",
    );
    s
}

fn event() -> *mut c_void {
    let mut e = null_mut();
    check(
        cu!(cuEventCreate(&mut e, 0): *mut *mut c_void, u32),
        "cuEventCreate",
    );
    e
}

pub(crate) fn begin(s: *mut c_void) -> CUresult {
    cu!(cuStreamBeginCapture_v2(s, THREAD_LOCAL): *mut c_void, u32)
}

pub(crate) fn end(s: *mut c_void) -> (CUresult, *mut c_void) {
    let mut g = null_mut();
    let r = cu!(cuStreamEndCapture(s, &mut g): *mut c_void, *mut *mut c_void);
    (r, g)
}

fn status(s: *mut c_void) -> u32 {
    let mut st = 99u32;
    check(
        cu!(cuStreamIsCapturing(s, &mut st): *mut c_void, *mut u32),
        "cuStreamIsCapturing",
    );
    st
}

pub(crate) fn instantiate(g: *mut c_void, flags: u64) -> (CUresult, *mut c_void) {
    let mut e = null_mut();
    let r = cu!(cuGraphInstantiateWithFlags(&mut e, g, flags): *mut *mut c_void, *mut c_void, u64);
    (r, e)
}

pub(crate) fn node_types(g: *mut c_void) -> Vec<u32> {
    let mut n = 0usize;
    check(
        cu!(cuGraphGetNodes(g, null_mut(), &mut n): *mut c_void, *mut *mut c_void, *mut usize),
        "cuGraphGetNodes",
    );
    let mut nodes = vec![null_mut(); n];
    check(
        cu!(cuGraphGetNodes(g, nodes.as_mut_ptr(), &mut n): *mut c_void, *mut *mut c_void, *mut usize),
        "cuGraphGetNodes",
    );
    nodes
        .iter()
        .map(|&x| {
            let mut t = 99u32;
            check(
                cu!(cuGraphNodeGetType(x, &mut t): *mut c_void, *mut u32),
                "cuGraphNodeGetType",
            );
            t
        })
        .collect()
}

fn increment(inc: *mut c_void, counter: u64, by: u64, s: *mut c_void) {
    let (mut cp, mut b) = (counter, by);
    launch(inc, 1, 32, s, &mut [ptr(&mut cp), ptr(&mut b)]);
}

#[test]
fn captured_work_runs_when_the_graph_is_launched() {
    setup();
    let m = load_fixture("kernels");
    let inc = function(m, "increment");
    let s = stream(0);
    let counter = alloc(8);
    // 100003 16-bit elements: more than the 64 KiB pattern, an odd number of elements.
    let n16 = 100_003usize;
    let big = alloc(2 * n16 + 64);
    let copy = alloc(2 * n16 + 64);
    check(
        cu!(cuMemsetD8_v2(big, 0, 2 * n16 + 64): u64, u8, usize),
        "zero big",
    );
    check(
        cu!(cuMemsetD8_v2(copy, 0, 2 * n16 + 64): u64, u8, usize),
        "zero copy",
    );
    check(
        cu!(cuMemsetD32_v2(counter, 0, 2): u64, u32, usize),
        "zero counter",
    );

    assert_eq!(status(s), 0);
    check(begin(s), "begin capture");
    assert_eq!(status(s), 1);
    let (mut st, mut id, mut g, mut deps, mut n) =
        (9u32, 0u64, null_mut(), std::ptr::null(), 9usize);
    check(
        cu!(cuStreamGetCaptureInfo_v2(s, &mut st, &mut id, &mut g, &mut deps, &mut n): *mut c_void, *mut u32, *mut u64, *mut *mut c_void, *mut *const c_void, *mut usize),
        "capture info",
    );
    assert_eq!((st, n), (1, 0));
    assert_ne!(id, 0);
    assert!(!g.is_null());
    check(
        cu!(cuMemsetD16Async(big, 0x1234, n16, s): u64, u16, usize, *mut c_void),
        "captured memset",
    );
    increment(inc, counter, 5, s);
    check(
        cu!(cuMemcpyDtoDAsync_v2(copy, big, 2 * n16 + 64, s): u64, u64, usize, *mut c_void),
        "captured copy",
    );
    check(
        cu!(cuStreamGetCaptureInfo_v2(s, &mut st, &mut id, &mut g, &mut deps, &mut n): *mut c_void, *mut u32, *mut u64, *mut *mut c_void, *mut *const c_void, *mut usize),
        "capture info",
    );
    assert_eq!(n, 1, "the next node depends on the last one captured");
    let (r, graph) = end(s);
    check(r, "end capture");
    assert_eq!(graph, g, "the graph of the capture info");
    assert_eq!(status(s), 0);
    // Nothing ran yet.
    assert_eq!(dtoh::<u64>(counter, 1)[0], 0);
    assert!(dtoh::<u16>(big, n16 + 32).iter().all(|&x| x == 0));
    // Memset (2), kernel (0), memcpy (1), in capture order.
    assert_eq!(node_types(graph), [2, 0, 1]);

    let (r, exec) = instantiate(graph, 0);
    check(r, "instantiate");
    for _ in 0..2 {
        check(
            cu!(cuGraphLaunch(exec, s): *mut c_void, *mut c_void),
            "cuGraphLaunch",
        );
    }
    check(cu!(cuStreamSynchronize(s): *mut c_void), "sync");
    assert_eq!(dtoh::<u64>(counter, 1)[0], 10);
    for (what, buf) in [("memset", big), ("copy", copy)] {
        let v = dtoh::<u16>(buf, n16 + 32);
        let bad = (0..n16).find(|&i| v[i] != 0x1234);
        assert_eq!(bad, None, "{what}: element {bad:?} is not 0x1234");
        assert!(v[n16..].iter().all(|&x| x == 0), "{what}: past the end");
    }
    check(cu!(cuGraphExecDestroy(exec): *mut c_void), "exec destroy");
    check(cu!(cuGraphDestroy(graph): *mut c_void), "graph destroy");
}

#[test]
fn capture_errors() {
    setup();
    let s = stream(0);
    let buf = alloc(256);
    // The legacy stream cannot capture; a stream captures once at a time.
    assert_eq!(begin(null_mut()), CAPTURE_UNSUPPORTED);
    assert_eq!(end(s).0, ILLEGAL_STATE);
    check(begin(s), "begin");
    assert_eq!(begin(s), ILLEGAL_STATE);
    // A captured event cannot be queried or waited for by the host.
    let e = event();
    check(
        cu!(cuEventRecord(e, s): *mut c_void, *mut c_void),
        "record in capture",
    );
    assert_eq!(cu!(cuEventQuery(e): *mut c_void), CAPTURED_EVENT);
    assert_eq!(cu!(cuEventSynchronize(e): *mut c_void), CAPTURED_EVENT);
    // Synchronizing a capturing stream is refused and invalidates the capture.
    assert_eq!(
        cu!(cuStreamSynchronize(s): *mut c_void),
        CAPTURE_UNSUPPORTED
    );
    assert_eq!(status(s), 2);
    assert_eq!(
        cu!(cuMemsetD8Async(buf, 1, 256, s): u64, u8, usize, *mut c_void),
        CAPTURE_INVALIDATED
    );
    let (r, g) = end(s);
    assert_eq!(r, CAPTURE_INVALIDATED);
    assert!(g.is_null());
    assert_eq!(status(s), 0);
    // Recorded outside capture, the event is an ordinary one again.
    check(cu!(cuEventRecord(e, s): *mut c_void, *mut c_void), "record");
    check(cu!(cuEventSynchronize(e): *mut c_void), "event sync");
    // Waiting for an event recorded outside the capture crosses its boundary.
    check(begin(s), "begin");
    assert_eq!(
        cu!(cuStreamWaitEvent(s, e, 0): *mut c_void, *mut c_void, u32),
        CAPTURE_ISOLATION
    );
    assert_eq!(end(s).0, CAPTURE_INVALIDATED);
    // Work capture does not take (a stream callback) invalidates it.
    check(begin(s), "begin");
    assert_eq!(
        cu!(cuStreamAddCallback(s, never_called, null_mut(), 0): *mut c_void, unsafe extern "C" fn(*mut c_void, CUresult, *mut c_void), *mut c_void, u32),
        CAPTURE_UNSUPPORTED
    );
    assert_eq!(end(s).0, CAPTURE_INVALIDATED);
    // The stream works normally afterwards.
    check(
        cu!(cuMemsetD8Async(buf, 3, 256, s): u64, u8, usize, *mut c_void),
        "memset",
    );
    check(cu!(cuStreamSynchronize(s): *mut c_void), "sync");
    assert!(dtoh::<u8>(buf, 256).iter().all(|&x| x == 3));
    // Instantiate flags: DEVICE_LAUNCH excludes AUTO_FREE_ON_LAUNCH; device launch is refused;
    // AUTO_FREE_ON_LAUNCH | USE_NODE_PRIORITY is accepted; unknown bits are invalid.
    let mut g = null_mut();
    check(
        cu!(cuGraphCreate(&mut g, 0): *mut *mut c_void, u32),
        "graph",
    );
    assert_eq!(instantiate(g, 5).0, 1);
    assert_eq!(instantiate(g, 4).0, 801);
    assert_eq!(instantiate(g, 0x10).0, 1);
    let (r, exec) = instantiate(g, 9);
    check(r, "instantiate 9");
    check(cu!(cuGraphExecDestroy(exec): *mut c_void), "exec destroy");
    check(cu!(cuGraphDestroy(g): *mut c_void), "graph destroy");
}

#[test]
fn capture_forks_and_joins_through_events() {
    setup();
    let m = load_fixture("kernels");
    let inc = function(m, "increment");
    let (a, b) = (stream(0), stream(1));
    let counter = alloc(16);
    check(cu!(cuMemsetD32_v2(counter, 0, 4): u64, u32, usize), "zero");
    let (e1, e2) = (event(), event());

    check(begin(a), "begin");
    increment(inc, counter, 1, a);
    check(
        cu!(cuEventRecord(e1, a): *mut c_void, *mut c_void),
        "record e1",
    );
    // b joins the capture after a's first node.
    assert_eq!(status(b), 0);
    check(
        cu!(cuStreamWaitEvent(b, e1, 0): *mut c_void, *mut c_void, u32),
        "b waits e1",
    );
    assert_eq!(status(b), 1);
    increment(inc, counter + 8, 100, b);
    // Only the stream that began the capture ends it.
    assert_eq!(end(b).0, CAPTURE_UNMATCHED);
    check(
        cu!(cuEventRecord(e2, b): *mut c_void, *mut c_void),
        "record e2",
    );
    check(
        cu!(cuStreamWaitEvent(a, e2, 0): *mut c_void, *mut c_void, u32),
        "a waits e2",
    );
    increment(inc, counter, 10, a);
    let (r, g) = end(a);
    check(r, "end");
    assert_eq!((status(a), status(b)), (0, 0));
    assert_eq!(node_types(g), [0, 0, 0]);
    let (r, exec) = instantiate(g, 0);
    check(r, "instantiate");
    check(
        cu!(cuGraphLaunch(exec, a): *mut c_void, *mut c_void),
        "launch",
    );
    check(cu!(cuStreamSynchronize(a): *mut c_void), "sync");
    assert_eq!(dtoh::<u64>(counter, 2), [11, 100]);

    // A stream that joined and did not rejoin: the capture ends without a graph.
    check(begin(a), "begin");
    check(
        cu!(cuEventRecord(e1, a): *mut c_void, *mut c_void),
        "record e1",
    );
    check(
        cu!(cuStreamWaitEvent(b, e1, 0): *mut c_void, *mut c_void, u32),
        "b waits e1",
    );
    increment(inc, counter + 8, 1, b);
    let (r, g2) = end(a);
    assert_eq!(r, CAPTURE_UNJOINED);
    assert!(g2.is_null());
    assert_eq!(status(b), 0);
    check(cu!(cuGraphExecDestroy(exec): *mut c_void), "exec destroy");
    check(cu!(cuGraphDestroy(g): *mut c_void), "graph destroy");
}

#[repr(C)]
struct MemsetParams {
    dst: u64,
    pitch: usize,
    value: u32,
    element_size: u32,
    width: usize,
    height: usize,
}

#[test]
fn memset_nodes_fill_rows() {
    setup();
    let buf = alloc(4 * 64);
    check(cu!(cuMemsetD8_v2(buf, 0, 256): u64, u8, usize), "zero");
    let mut g = null_mut();
    check(
        cu!(cuGraphCreate(&mut g, 0): *mut *mut c_void, u32),
        "graph",
    );
    // 3 rows of 5 32-bit elements, 64 bytes apart.
    let mut p = MemsetParams {
        dst: buf,
        pitch: 64,
        value: 0xa1b2_c3d4,
        element_size: 4,
        width: 5,
        height: 3,
    };
    let mut node = null_mut();
    check(
        cu!(cuGraphAddMemsetNode(&mut node, g, std::ptr::null(), 0, ptr(&mut p), null_mut()): *mut *mut c_void, *mut c_void, *const *mut c_void, usize, *mut c_void, *mut c_void),
        "memset node",
    );
    assert_eq!(node_types(g), [2]);
    // Invalid parameters: element size 3, a pitch shorter than the row, past the allocation.
    for (es, pitch, height) in [(3u32, 64usize, 3usize), (4, 8, 3), (4, 64, 5)] {
        let mut q = MemsetParams {
            element_size: es,
            pitch,
            height,
            ..p
        };
        let mut x = null_mut();
        assert_eq!(
            cu!(cuGraphAddMemsetNode(&mut x, g, std::ptr::null(), 0, ptr(&mut q), null_mut()): *mut *mut c_void, *mut c_void, *const *mut c_void, usize, *mut c_void, *mut c_void),
            1,
            "element size {es}, pitch {pitch}, height {height}"
        );
    }
    let (r, exec) = instantiate(g, 0);
    check(r, "instantiate");
    check(
        cu!(cuGraphLaunch(exec, null_mut()): *mut c_void, *mut c_void),
        "launch",
    );
    check(cu!(cuStreamSynchronize(null_mut()): *mut c_void), "sync");
    let v = dtoh::<u32>(buf, 64);
    for (i, &x) in v.iter().enumerate() {
        let (row, col) = (i / 16, i % 16);
        let want = if row < 3 && col < 5 { 0xa1b2_c3d4 } else { 0 };
        assert_eq!(x, want, "element {i} (row {row}, column {col})");
    }
    check(cu!(cuGraphExecDestroy(exec): *mut c_void), "exec destroy");
    check(cu!(cuGraphDestroy(g): *mut c_void), "graph destroy");
}

static PAGEABLE_SEEN: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// A host function given two pageable 64-word buffers (`[src, out]`): records `out[0]` and
/// fills `src` with twice that.
unsafe extern "C" fn double_into_src(data: *mut c_void) {
    let [src, out] = *(data as *const [*mut u32; 2]);
    let v = *out;
    PAGEABLE_SEEN.store(v, std::sync::atomic::Ordering::SeqCst);
    std::slice::from_raw_parts_mut(src, 64).fill(2 * v);
}

/// Copies between device memory and pageable host memory on a capturing stream become memcpy
/// nodes (the samples simpleCudaGraphs, graphMemoryNodes, conjugateGradientCudaGraphs): the
/// host memory is read and written when the graph runs, in the graph's order: a host function
/// captured after a copy to host memory sees its result, and a copy from host memory captured
/// after the host function sees what it wrote.
#[test]
fn captured_copies_of_pageable_memory_run_in_the_graphs_order() {
    setup();
    let n = 64usize;
    let (d, d2) = (alloc(n * 4), alloc(n * 4));
    let mut src = vec![5u32; n];
    let mut out = vec![0u32; n];
    let mut out2 = vec![0u32; n];
    let mut both = [src.as_mut_ptr(), out.as_mut_ptr()];
    let s = stream(1);
    check(begin(s), "begin");
    let htod = |dst: u64, from: *const u32| cu!(cuMemcpyHtoDAsync_v2(dst, from as *const c_void, n * 4, s): u64, *const c_void, usize, *mut c_void);
    check(htod(d, src.as_ptr()), "captured cuMemcpyHtoDAsync_v2");
    check(
        cu!(cuMemcpyDtoHAsync_v2(out.as_mut_ptr() as *mut c_void, d, n * 4, s): *mut c_void, u64, usize, *mut c_void),
        "captured cuMemcpyDtoHAsync_v2",
    );
    check(
        cu!(cuLaunchHostFunc(s, double_into_src, both.as_mut_ptr() as *mut c_void): *mut c_void, unsafe extern "C" fn(*mut c_void), *mut c_void),
        "captured cuLaunchHostFunc",
    );
    check(
        htod(d2, src.as_ptr()),
        "second captured cuMemcpyHtoDAsync_v2",
    );
    check(
        cu!(cuMemcpyAsync(out2.as_mut_ptr() as u64, d2, n * 4, s): u64, u64, usize, *mut c_void),
        "captured cuMemcpyAsync",
    );
    let (r, g) = end(s);
    check(r, "end capture");
    assert_eq!(
        node_types(g),
        vec![1, 1, 3, 1, 1],
        "memcpy, memcpy, host, memcpy, memcpy"
    );
    let (r, exec) = instantiate(g, 0);
    check(r, "instantiate");
    // Nothing ran during capture.
    assert_eq!(out[0], 0);
    for v in [5u32, 7] {
        src.fill(v);
        check(
            cu!(cuGraphLaunch(exec, s): *mut c_void, *mut c_void),
            "cuGraphLaunch",
        );
        check(cu!(cuStreamSynchronize(s): *mut c_void), "sync");
        assert_eq!(
            PAGEABLE_SEEN.load(std::sync::atomic::Ordering::SeqCst),
            v,
            "the host function ran after the copy to host memory before it"
        );
        assert_eq!(out, vec![v; n], "the first copy out");
        assert_eq!(
            out2,
            vec![2 * v; n],
            "the copy in ran after the host function"
        );
    }
    check(cu!(cuGraphExecDestroy(exec): *mut c_void), "exec destroy");
    check(cu!(cuGraphDestroy(g): *mut c_void), "graph destroy");
    check(cu!(cuStreamDestroy_v2(s): *mut c_void), "stream destroy");
    for p in [d, d2] {
        check(cu!(cuMemFree_v2(p): u64), "free");
    }
}

/// Destroying a stream that takes part in a capture (the sample graphMemoryNodes destroys a
/// stream that joined and rejoined): a joined stream leaves the capture, which ends with a
/// graph once the stream had rejoined and with `CUDA_ERROR_STREAM_CAPTURE_UNJOINED` otherwise;
/// destroying the stream that began the capture ends it, with no graph.
#[test]
fn destroying_a_capturing_stream() {
    setup();
    let buf = alloc(256);
    let (e1, e2) = (event(), event());
    for rejoin in [true, false] {
        let (a, b) = (stream(1), stream(1));
        check(begin(a), "begin");
        check(
            cu!(cuEventRecord(e1, a): *mut c_void, *mut c_void),
            "record e1",
        );
        check(
            cu!(cuStreamWaitEvent(b, e1, 0): *mut c_void, *mut c_void, u32),
            "b joins",
        );
        check(
            cu!(cuMemsetD8Async(buf, 7, 256, b): u64, u8, usize, *mut c_void),
            "memset on b",
        );
        if rejoin {
            check(
                cu!(cuEventRecord(e2, b): *mut c_void, *mut c_void),
                "record e2",
            );
            check(
                cu!(cuStreamWaitEvent(a, e2, 0): *mut c_void, *mut c_void, u32),
                "a rejoins b",
            );
        }
        check(
            cu!(cuStreamDestroy_v2(b): *mut c_void),
            "destroying the joined stream",
        );
        assert_eq!(status(a), 1, "a still captures");
        let (r, g) = end(a);
        if !rejoin {
            assert_eq!(r, CAPTURE_UNJOINED);
            assert!(g.is_null());
            check(cu!(cuStreamDestroy_v2(a): *mut c_void), "destroy a");
            continue;
        }
        check(r, "end");
        assert_eq!(
            node_types(g),
            [2],
            "the memset node of the destroyed stream"
        );
        // On `a` (non-blocking): a legacy-stream memset could run after the graph's.
        check(
            cu!(cuMemsetD8Async(buf, 0, 256, a): u64, u8, usize, *mut c_void),
            "zero",
        );
        let (r, exec) = instantiate(g, 0);
        check(r, "instantiate");
        check(
            cu!(cuGraphLaunch(exec, a): *mut c_void, *mut c_void),
            "launch",
        );
        check(cu!(cuStreamSynchronize(a): *mut c_void), "sync");
        assert!(dtoh::<u8>(buf, 256).iter().all(|&x| x == 7));
        check(cu!(cuGraphExecDestroy(exec): *mut c_void), "exec destroy");
        check(cu!(cuGraphDestroy(g): *mut c_void), "graph destroy");
        check(cu!(cuStreamDestroy_v2(a): *mut c_void), "destroy a");
    }
    // The stream that began the capture.
    let (a, b) = (stream(1), stream(1));
    check(begin(a), "begin");
    check(
        cu!(cuEventRecord(e1, a): *mut c_void, *mut c_void),
        "record e1",
    );
    check(
        cu!(cuStreamWaitEvent(b, e1, 0): *mut c_void, *mut c_void, u32),
        "b joins",
    );
    check(
        cu!(cuStreamDestroy_v2(a): *mut c_void),
        "destroying the capturing stream",
    );
    assert_eq!(status(b), 0, "the capture ended");
    check(
        cu!(cuMemsetD8Async(buf, 1, 256, b): u64, u8, usize, *mut c_void),
        "b runs work again",
    );
    check(cu!(cuStreamSynchronize(b): *mut c_void), "sync b");
    assert!(dtoh::<u8>(buf, 256).iter().all(|&x| x == 1));
    check(cu!(cuStreamDestroy_v2(b): *mut c_void), "destroy b");
}
