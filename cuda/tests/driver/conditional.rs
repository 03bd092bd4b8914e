//! Conditional graph nodes (if / if-else, while, switch), their handles' default values,
//! capture into a body graph (`cuStreamBeginCaptureToGraph`) and the calls' errors.
//!
//! The fixture kernels set a condition by writing to the handle's address (`fill_u32`, or
//! `increment` by 2^64 - 1 to count it down): a handle is the address of its 32-bit value, the
//! word `cudaGraphSetConditional` writes.

use crate::graphs::KernelNodeParams;
use crate::*;
use std::ffi::c_void;
use std::ptr::null_mut;

type P = *mut c_void;

/// `CUDA_CONDITIONAL_NODE_PARAMS`.
#[repr(C)]
#[derive(Clone, Copy)]
struct CondParams {
    handle: u64,
    ty: u32,
    size: u32,
    graphs_out: *mut P,
    ctx: P,
}

/// `CUgraphNodeParams` of a conditional node (type 13).
#[repr(C)]
struct NodeParams {
    ty: u32,
    reserved0: [i32; 3],
    cond: CondParams,
    rest: [u8; 232 - 32],
    reserved2: i64,
}

const IF: u32 = 0;
const WHILE: u32 = 1;
const SWITCH: u32 = 2;

fn graph() -> P {
    let mut g = null_mut();
    check(cu!(cuGraphCreate(&mut g, 0): *mut P, u32), "cuGraphCreate");
    g
}

fn handle(g: P, default: u32, flags: u32) -> u64 {
    let mut h = 0u64;
    check(
        cu!(cuGraphConditionalHandleCreate(&mut h, g, null_mut(), default, flags): *mut u64, P, P, u32, u32),
        "cuGraphConditionalHandleCreate",
    );
    assert_ne!(h, 0);
    h
}

/// A conditional node: (its result, the node, its body graphs).
fn try_conditional(g: P, deps: &[P], h: u64, ty: u32, size: u32) -> (u32, P, Vec<P>) {
    let mut p = NodeParams {
        ty: 13,
        reserved0: [0; 3],
        cond: CondParams {
            handle: h,
            ty,
            size,
            graphs_out: null_mut(),
            ctx: null_mut(),
        },
        rest: [0; 200],
        reserved2: 0,
    };
    let mut n = null_mut();
    let r = cu!(cuGraphAddNode(&mut n, g, deps.as_ptr(), deps.len(), ptr(&mut p)): *mut P, P, *const P, usize, P);
    let bodies = if r == OK {
        assert!(!p.cond.graphs_out.is_null(), "phGraph_out is set");
        (0..size as usize)
            .map(|i| unsafe { *p.cond.graphs_out.add(i) })
            .collect()
    } else {
        Vec::new()
    };
    (r, n, bodies)
}

fn conditional(g: P, deps: &[P], h: u64, ty: u32, size: u32) -> (P, Vec<P>) {
    let (r, n, bodies) = try_conditional(g, deps, h, ty, size);
    check(r, "cuGraphAddNode (conditional)");
    (n, bodies)
}

/// A kernel node of `f` with 1 thread and the argument values `args` (pointers to them).
fn kernel(g: P, deps: &[P], f: P, args: &mut [P]) -> P {
    let mut p = KernelNodeParams {
        func: f,
        grid: [1, 1, 1],
        block: [1, 1, 1],
        shared: 0,
        params: args.as_mut_ptr(),
        extra: null_mut(),
    };
    let mut n = null_mut();
    check(
        cu!(cuGraphAddKernelNode(&mut n, g, deps.as_ptr(), deps.len(), ptr(&mut p)): *mut P, P, *const P, usize, P),
        "cuGraphAddKernelNode",
    );
    n
}

fn instantiate(g: P) -> P {
    let mut e = null_mut();
    check(
        cu!(cuGraphInstantiateWithFlags(&mut e, g, 0): *mut P, P, u64),
        "cuGraphInstantiateWithFlags",
    );
    e
}

fn launch_sync(e: P) {
    check(cu!(cuGraphLaunch(e, null_mut()): P, P), "cuGraphLaunch");
    check(cu!(cuCtxSynchronize(): ), "cuCtxSynchronize");
}

struct Kernels {
    inc: P,
    fill: P,
}

fn kernels() -> Kernels {
    let m = load_fixture("kernels");
    Kernels {
        inc: function(m, "increment"),
        fill: function(m, "fill_u32"),
    }
}

/// A node adding `by` to the u64 at `at`.
fn add(g: P, deps: &[P], k: &Kernels, at: u64, by: u64) -> P {
    let (mut a, mut b) = (at, by);
    kernel(g, deps, k.inc, &mut [ptr(&mut a), ptr(&mut b)])
}

/// The kernel node parameters of `fill_u32(at, value, 1)`.
fn set_value(e: P, node: P, k: &Kernels, at: u64, value: u32) {
    let (mut a, mut v, mut n) = (at, value, 1u32);
    let mut args = [ptr(&mut a), ptr(&mut v), ptr(&mut n)];
    let mut p = KernelNodeParams {
        func: k.fill,
        grid: [1, 1, 1],
        block: [1, 1, 1],
        shared: 0,
        params: args.as_mut_ptr(),
        extra: null_mut(),
    };
    check(
        cu!(cuGraphExecKernelNodeSetParams(e, node, ptr(&mut p)): P, P, P),
        "cuGraphExecKernelNodeSetParams",
    );
}

fn counter() -> u64 {
    let c = alloc(8);
    htod(c, &[0u64]);
    c
}

fn read(c: u64) -> u64 {
    dtoh::<u64>(c, 1)[0]
}

#[test]
fn if_else_and_switch_nodes_run_the_body_the_condition_selects() {
    setup();
    let k = kernels();
    // if-else: fill_u32(handle, v) → IF [ counter += 1 | counter += 100 ].
    let c = counter();
    let g = graph();
    let h = handle(g, 0, 0);
    let (mut hp, mut v, mut one) = (h, 1u32, 1u32);
    let set = kernel(
        g,
        &[],
        k.fill,
        &mut [ptr(&mut hp), ptr(&mut v), ptr(&mut one)],
    );
    let (node, bodies) = conditional(g, &[set], h, IF, 2);
    assert_eq!(bodies.len(), 2);
    assert_ne!(bodies[0], bodies[1]);
    let mut ty = 99u32;
    check(
        cu!(cuGraphNodeGetType(node, &mut ty): P, *mut u32),
        "cuGraphNodeGetType",
    );
    assert_eq!(ty, 13, "CU_GRAPH_NODE_TYPE_CONDITIONAL");
    add(bodies[0], &[], &k, c, 1);
    add(bodies[1], &[], &k, c, 100);
    let e = instantiate(g);
    launch_sync(e);
    assert_eq!(read(c), 1, "the condition 1 runs the first body");
    set_value(e, set, &k, h, 0);
    launch_sync(e);
    assert_eq!(read(c), 101, "the condition 0 runs the else body");
    set_value(e, set, &k, h, 7);
    launch_sync(e);
    assert_eq!(read(c), 102, "any value but 0 runs the first body");

    // switch: fill_u32(handle, v) → SWITCH [ += 1 | += 10 | += 100 ].
    let c2 = counter();
    let g2 = graph();
    let h2 = handle(g2, 0, 0);
    let (mut hp2, mut v2) = (h2, 0u32);
    let set2 = kernel(
        g2,
        &[],
        k.fill,
        &mut [ptr(&mut hp2), ptr(&mut v2), ptr(&mut one)],
    );
    let (_, bodies2) = conditional(g2, &[set2], h2, SWITCH, 3);
    for (b, by) in bodies2.iter().zip([1u64, 10, 100]) {
        add(*b, &[], &k, c2, by);
    }
    let e2 = instantiate(g2);
    let mut expect = 0;
    for (v, by) in [(0u32, 1u64), (1, 10), (2, 100), (3, 0), (u32::MAX, 0)] {
        set_value(e2, set2, &k, h2, v);
        launch_sync(e2);
        expect += by;
        assert_eq!(read(c2), expect, "switch on {v}");
    }
    for x in [e, e2] {
        check(cu!(cuGraphExecDestroy(x): P), "cuGraphExecDestroy");
    }
    for x in [g, g2] {
        check(cu!(cuGraphDestroy(x): P), "cuGraphDestroy");
    }
}

#[test]
fn while_nodes_loop_until_the_condition_is_0_and_defaults_apply_at_each_launch() {
    setup();
    let k = kernels();
    let (c, d, after) = (counter(), counter(), counter());
    let g = graph();
    // hw: 3 at each launch; hn: 2 when made, then what the body left.
    let hw = handle(g, 3, 1);
    let hn = handle(g, 2, 0);
    let (w, body) = conditional(g, &[], hw, WHILE, 1);
    let first = add(body[0], &[], &k, c, 1);
    add(body[0], &[first], &k, hw, u64::MAX);
    let (n, body_n) = conditional(g, &[w], hn, WHILE, 1);
    let first_n = add(body_n[0], &[], &k, d, 1);
    add(body_n[0], &[first_n], &k, hn, u64::MAX);
    // After both loops: a node that reads the counters' final state.
    add(g, &[n], &k, after, 1);
    let e = instantiate(g);
    launch_sync(e);
    assert_eq!((read(c), read(d), read(after)), (3, 2, 1));
    launch_sync(e);
    assert_eq!(
        (read(c), read(d), read(after)),
        (6, 2, 2),
        "the default applies at each launch only with CU_GRAPH_COND_ASSIGN_DEFAULT"
    );
    check(cu!(cuGraphExecDestroy(e): P), "cuGraphExecDestroy");
    check(cu!(cuGraphDestroy(g): P), "cuGraphDestroy");
}

#[test]
fn nested_conditionals_and_a_body_captured_with_begin_capture_to_graph() {
    setup();
    let k = kernels();
    let (c, odd) = (counter(), counter());
    let g = graph();
    // WHILE hw (4 at each launch) [ captured: c += 1, then hw -= 1; then, added to the body:
    // hi = 1, then IF hi [ odd += 1 ] ].
    let hw = handle(g, 4, 1);
    let (_, body) = conditional(g, &[], hw, WHILE, 1);
    let b = body[0];
    let mut s = null_mut();
    check(
        cu!(cuStreamCreate(&mut s, 1): *mut P, u32),
        "cuStreamCreate",
    );
    check(
        cu!(cuStreamBeginCaptureToGraph(s, b, std::ptr::null(), std::ptr::null(), 0, 0): P, P, *const P, *const c_void, usize, u32),
        "cuStreamBeginCaptureToGraph",
    );
    let (mut cp, mut one64) = (c, 1u64);
    launch(k.inc, 1, 1, s, &mut [ptr(&mut cp), ptr(&mut one64)]);
    let (mut hp, mut down) = (hw, u64::MAX);
    launch(k.inc, 1, 1, s, &mut [ptr(&mut hp), ptr(&mut down)]);
    let mut status = 9u32;
    check(
        cu!(cuStreamIsCapturing(s, &mut status): P, *mut u32),
        "cuStreamIsCapturing",
    );
    assert_eq!(status, 1, "capturing");
    check(
        cu!(cuStreamEndCapture(s, null_mut()): P, *mut P),
        "cuStreamEndCapture (phGraph NULL)",
    );
    let mut count = 0usize;
    check(
        cu!(cuGraphGetNodes(b, null_mut(), &mut count): P, *mut P, *mut usize),
        "cuGraphGetNodes",
    );
    assert_eq!(
        count, 2,
        "the captured launches are nodes of the body graph"
    );
    // Inside the body, after the captured nodes: IF hi [ odd += 1 ], hi set to 1 by a node.
    let mut roots = [null_mut(); 4];
    let mut nr = 4usize;
    check(
        cu!(cuGraphGetNodes(b, roots.as_mut_ptr(), &mut nr): P, *mut P, *mut usize),
        "cuGraphGetNodes",
    );
    let hi = handle(b, 0, 1);
    let (mut hip, mut v, mut n1) = (hi, 1u32, 1u32);
    let set = kernel(
        b,
        &roots[1..2],
        k.fill,
        &mut [ptr(&mut hip), ptr(&mut v), ptr(&mut n1)],
    );
    let (_, inner) = conditional(b, &[set], hi, IF, 1);
    add(inner[0], &[], &k, odd, 1);
    let e = instantiate(g);
    launch_sync(e);
    assert_eq!(
        (read(c), read(odd)),
        (4, 4),
        "4 iterations, the if body in each"
    );
    launch_sync(e);
    assert_eq!((read(c), read(odd)), (8, 8));
    check(cu!(cuStreamDestroy_v2(s): P), "cuStreamDestroy_v2");
    check(cu!(cuGraphExecDestroy(e): P), "cuGraphExecDestroy");
    check(cu!(cuGraphDestroy(g): P), "cuGraphDestroy");
}

#[test]
fn conditional_calls_refuse_bad_arguments() {
    setup();
    let g = graph();
    let other = graph();
    let h = handle(g, 0, 0);
    let mut x = 0u64;
    assert_eq!(
        cu!(cuGraphConditionalHandleCreate(&mut x, g, null_mut(), 0, 2): *mut u64, P, P, u32, u32),
        1,
        "flags 2"
    );
    assert_eq!(
        cu!(cuGraphConditionalHandleCreate(null_mut(), g, null_mut(), 0, 0): *mut u64, P, P, u32, u32),
        1,
        "NULL pHandle_out"
    );
    assert_eq!(
        cu!(cuGraphConditionalHandleCreate(&mut x, null_mut(), null_mut(), 0, 0): *mut u64, P, P, u32, u32),
        1,
        "NULL graph"
    );
    for (ty, size, what) in [
        (WHILE, 2, "a while node with 2 bodies"),
        (IF, 3, "an if node with 3 bodies"),
        (IF, 0, "no body"),
        (SWITCH, 0, "a switch without bodies"),
        (3, 1, "type 3"),
    ] {
        let (r, _, _) = try_conditional(g, &[], h, ty, size);
        assert_eq!(r, 1, "{what}: CUDA_ERROR_INVALID_VALUE");
    }
    let (r, _, _) = try_conditional(other, &[], h, IF, 1);
    assert_eq!(r, 1, "a handle of another graph");
    let (r, _, _) = try_conditional(g, &[], 0x1234, IF, 1);
    assert_eq!(r, 1, "a made-up handle");
    let mut count = 0usize;
    check(
        cu!(cuGraphGetNodes(g, null_mut(), &mut count): P, *mut P, *mut usize),
        "cuGraphGetNodes",
    );
    assert_eq!(count, 0, "refused nodes are not added");
    conditional(g, &[], h, IF, 1);
    let (r, _, _) = try_conditional(g, &[], h, SWITCH, 2);
    assert_eq!(r, 1, "a handle serves one conditional node");
    let mut c = null_mut();
    assert_eq!(
        cu!(cuGraphClone(&mut c, g): *mut P, P),
        801,
        "a graph with conditional nodes cannot be cloned"
    );
    let mut s = null_mut();
    check(
        cu!(cuStreamCreate(&mut s, 1): *mut P, u32),
        "cuStreamCreate",
    );
    let foreign = {
        let mut n = null_mut();
        check(
            cu!(cuGraphAddEmptyNode(&mut n, other, std::ptr::null(), 0): *mut P, P, *const P, usize),
            "cuGraphAddEmptyNode",
        );
        n
    };
    assert_eq!(
        cu!(cuStreamBeginCaptureToGraph(s, g, &foreign, std::ptr::null(), 1, 0): P, P, *const P, *const c_void, usize, u32),
        1,
        "a dependency that is not a node of the graph"
    );
    assert_eq!(
        cu!(cuStreamBeginCaptureToGraph(s, null_mut(), std::ptr::null(), std::ptr::null(), 0, 0): P, P, *const P, *const c_void, usize, u32),
        1,
        "a NULL graph"
    );
    let mut status = 9u32;
    check(
        cu!(cuStreamIsCapturing(s, &mut status): P, *mut u32),
        "cuStreamIsCapturing",
    );
    assert_eq!(status, 0, "a refused begin leaves the stream not capturing");
    check(cu!(cuStreamDestroy_v2(s): P), "cuStreamDestroy_v2");
    for x in [g, other] {
        check(cu!(cuGraphDestroy(x): P), "cuGraphDestroy");
    }
}
