//! Graph structure and node parameters: root nodes, edges, dependencies and dependents,
//! removing edges, child graph nodes, memset and memcpy node parameters, finding a node in a
//! clone, the instantiate flags.

use crate::graphs::Memcpy3D;
use crate::*;
use std::ffi::c_void;
use std::ptr::null_mut;

type P = *mut c_void;

#[repr(C)]
#[derive(Default, Debug, PartialEq, Clone, Copy)]
pub(crate) struct MemsetParams {
    pub dst: u64,
    pub pitch: usize,
    pub value: u32,
    pub element_size: u32,
    pub width: usize,
    pub height: usize,
}

impl MemsetParams {
    /// One row of `width` 32-bit words of `value` at `dst`.
    pub(crate) fn row(dst: u64, value: u32, width: usize) -> MemsetParams {
        MemsetParams {
            dst,
            value,
            element_size: 4,
            width,
            height: 1,
            ..Default::default()
        }
    }
}

fn graph() -> P {
    let mut g = null_mut();
    check(cu!(cuGraphCreate(&mut g, 0): *mut P, u32), "cuGraphCreate");
    g
}

fn empty(g: P, deps: &[P]) -> P {
    let mut n = null_mut();
    check(
        cu!(cuGraphAddEmptyNode(&mut n, g, deps.as_ptr(), deps.len()): *mut P, P, *const P, usize),
        "cuGraphAddEmptyNode",
    );
    n
}

fn memset(g: P, deps: &[P], p: &MemsetParams) -> P {
    let mut n = null_mut();
    check(
        cu!(cuGraphAddMemsetNode(&mut n, g, deps.as_ptr(), deps.len(), p, null_mut()): *mut P, P, *const P, usize, *const MemsetParams, P),
        "cuGraphAddMemsetNode",
    );
    n
}

/// A node list query: (result, the list of `cap` entries, the count written).
fn list(f: impl Fn(*mut P, *mut usize) -> u32, cap: usize) -> (u32, Vec<P>, usize) {
    let mut v = vec![1 as P; cap];
    let mut n = cap;
    let r = f(if cap == 0 { null_mut() } else { v.as_mut_ptr() }, &mut n);
    (r, v, n)
}

#[test]
fn graph_structure_and_node_parameters() {
    setup();
    let n = 64usize;
    let (buf1, buf2, buf3) = (alloc(n * 4), alloc(n * 4), alloc(n * 4));
    // The child: a memset of buf2, then a copy of buf2 to buf3.
    let child = graph();
    let cm = memset(child, &[], &MemsetParams::row(buf2, 0x51, n));
    let mut mc = Memcpy3D {
        src_type: 2,
        src_device: buf2,
        dst_type: 2,
        dst_device: buf3,
        width: n * 4,
        height: 1,
        depth: 1,
        ..Default::default()
    };
    let mut cc = null_mut();
    check(
        cu!(cuGraphAddMemcpyNode(&mut cc, child, &cm, 1, ptr(&mut mc), null_mut()): *mut P, P, *const P, usize, P, P),
        "copy in the child",
    );
    // A → B (memset buf1), A → C, B and C → D (the child).
    let g = graph();
    let a = empty(g, &[]);
    let bp = MemsetParams::row(buf1, 7, n);
    let b = memset(g, &[a], &bp);
    let c = empty(g, &[a]);
    let mut d = null_mut();
    let bc = [b, c];
    check(
        cu!(cuGraphAddChildGraphNode(&mut d, g, bc.as_ptr(), 2, child): *mut P, P, *const P, usize, P),
        "cuGraphAddChildGraphNode",
    );
    assert_eq!(
        cu!(cuGraphAddChildGraphNode(&mut d, g, null_mut(), 0, g): *mut P, P, *const P, usize, P),
        1,
        "a graph as its own child"
    );
    let mut t = 99u32;
    check(cu!(cuGraphNodeGetType(d, &mut t): P, *mut u32), "type");
    assert_eq!(t, 4, "CU_GRAPH_NODE_TYPE_GRAPH");
    let mut inner = null_mut();
    check(
        cu!(cuGraphChildGraphNodeGetGraph(d, &mut inner): P, *mut P),
        "cuGraphChildGraphNodeGetGraph",
    );
    assert!(
        !inner.is_null() && inner != child,
        "the node holds a clone of the child"
    );
    assert_eq!(
        list(
            |l, k| cu!(cuGraphGetNodes(inner, l, k): P, *mut P, *mut usize),
            0
        )
        .2,
        2
    );

    // Root nodes: a count, then a list longer than it (the rest NULL).
    let roots = |cap| {
        list(
            |l, k| cu!(cuGraphGetRootNodes(g, l, k): P, *mut P, *mut usize),
            cap,
        )
    };
    assert_eq!(roots(0).2, 1);
    let (r, v, k) = roots(3);
    check(r, "cuGraphGetRootNodes");
    assert_eq!((k, v), (1, vec![a, null_mut(), null_mut()]));
    // Edges.
    let edges = |cap: usize| {
        let (mut from, mut to) = (vec![null_mut(); cap], vec![null_mut(); cap]);
        let mut k = cap;
        let (fp, tp) = if cap == 0 {
            (null_mut(), null_mut())
        } else {
            (from.as_mut_ptr(), to.as_mut_ptr())
        };
        check(
            cu!(cuGraphGetEdges(g, fp, tp, &mut k): P, *mut P, *mut P, *mut usize),
            "cuGraphGetEdges",
        );
        (k, from.into_iter().zip(to).take(k).collect::<Vec<_>>())
    };
    assert_eq!(edges(0).0, 4);
    let (k, e) = edges(8);
    assert_eq!(k, 4);
    for want in [(a, b), (a, c), (b, d), (c, d)] {
        assert!(e.contains(&want), "edge {want:?} in {e:?}");
    }
    // Dependencies and dependents, with edge data (zeroed) in the _v2 forms.
    let (r, v, k) = list(
        |l, k| cu!(cuGraphNodeGetDependencies(d, l, k): P, *mut P, *mut usize),
        2,
    );
    check(r, "cuGraphNodeGetDependencies");
    assert_eq!((k, v), (2, vec![b, c]));
    let mut data = [0xffu8; 16];
    let mut dep = [null_mut(); 2];
    let mut k = 2usize;
    check(
        cu!(cuGraphNodeGetDependentNodes_v2(a, dep.as_mut_ptr(), data.as_mut_ptr(), &mut k): P, *mut P, *mut u8, *mut usize),
        "cuGraphNodeGetDependentNodes_v2",
    );
    assert_eq!((k, dep), (2, [b, c]));
    assert_eq!(data, [0; 16], "default edge data");
    // Removing an edge; removing it again is invalid.
    check(
        cu!(cuGraphRemoveDependencies(g, &c, &d, 1): P, *const P, *const P, usize),
        "cuGraphRemoveDependencies",
    );
    assert_eq!(edges(0).0, 3);
    assert_eq!(
        cu!(cuGraphRemoveDependencies(g, &c, &d, 1): P, *const P, *const P, usize),
        1,
        "an edge that is not there"
    );

    // Memset parameters: read back, then changed.
    let mut got = MemsetParams::default();
    check(
        cu!(cuGraphMemsetNodeGetParams(b, &mut got): P, *mut MemsetParams),
        "cuGraphMemsetNodeGetParams",
    );
    assert_eq!(
        (got.dst, got.value, got.element_size, got.width, got.height),
        (buf1, 7, 4, n, 1)
    );
    let nine = MemsetParams { value: 9, ..bp };
    check(
        cu!(cuGraphMemsetNodeSetParams(b, &nine): P, *const MemsetParams),
        "cuGraphMemsetNodeSetParams",
    );
    assert_eq!(
        cu!(cuGraphMemsetNodeGetParams(a, &mut got): P, *mut MemsetParams),
        1,
        "an empty node's memset parameters"
    );
    // Memcpy parameters of the child's copy node, as given.
    let mut back = Memcpy3D::default();
    check(
        cu!(cuGraphMemcpyNodeGetParams(cc, ptr(&mut back)): P, P),
        "cuGraphMemcpyNodeGetParams",
    );
    assert_eq!(
        (back.src_device, back.dst_device, back.width, back.src_type),
        (buf2, buf3, n * 4, 2)
    );

    // Find in a clone.
    let mut clone = null_mut();
    check(cu!(cuGraphClone(&mut clone, g): *mut P, P), "cuGraphClone");
    let mut found = null_mut();
    check(
        cu!(cuGraphNodeFindInClone(&mut found, b, clone): *mut P, P, P),
        "cuGraphNodeFindInClone",
    );
    check(cu!(cuGraphNodeGetType(found, &mut t): P, *mut u32), "type");
    assert!(found != b && t == 2, "the clone's memset node");
    assert_eq!(
        cu!(cuGraphNodeFindInClone(&mut found, b, child): *mut P, P, P),
        1,
        "a graph that is not a clone of the node's graph"
    );

    // Instantiated with AUTO_FREE_ON_LAUNCH: the flags read back; the child's nodes run after B.
    let mut exec = null_mut();
    check(
        cu!(cuGraphInstantiateWithFlags(&mut exec, g, 1): *mut P, P, u64),
        "instantiate",
    );
    let mut flags = 0u64;
    check(
        cu!(cuGraphExecGetFlags(exec, &mut flags): P, *mut u64),
        "cuGraphExecGetFlags",
    );
    assert_eq!(flags, 1);
    for h in [g, clone, child] {
        check(cu!(cuGraphDestroy(h): P), "graph destroy");
    }
    for round in 0..2 {
        check(
            cu!(cuMemsetD32_v2(buf3, 0, n): u64, u32, usize),
            "zero buf3",
        );
        check(cu!(cuGraphLaunch(exec, null_mut()): P, P), "launch");
        check(cu!(cuCtxSynchronize(): ), "sync");
        assert_eq!(
            dtoh::<u32>(buf1, n),
            vec![9; n],
            "round {round}: B's new value"
        );
        assert_eq!(
            dtoh::<u32>(buf3, n),
            vec![0x51; n],
            "round {round}: the child ran"
        );
    }
    check(cu!(cuGraphExecDestroy(exec): P), "exec destroy");
}

/// A `CUgraphNodeParams` (256 bytes) of node type `ty` with `body` at offset 16.
fn node_params(ty: u32, body: &[u8]) -> [u8; 256] {
    let mut p = [0u8; 256];
    p[..4].copy_from_slice(&ty.to_ne_bytes());
    p[16..16 + body.len()].copy_from_slice(body);
    p
}

fn bytes_of<T>(v: &T) -> &[u8] {
    // SAFETY: a plain-data value read as its bytes.
    unsafe { std::slice::from_raw_parts(v as *const T as *const u8, std::mem::size_of::<T>()) }
}

static GENERIC_HOST_CALLS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

unsafe extern "C" fn count_call(_: *mut c_void) {
    GENERIC_HOST_CALLS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
}

/// The generic node calls (`cuGraphAddNode`, `cuGraphNodeSetParams`,
/// `cuGraphExecNodeSetParams`, as the CUDA runtime's `cudaGraphAddNode` uses them): kernel,
/// memset, host, empty, child graph and memory nodes; external semaphore nodes are refused, an
/// unknown type is invalid.
#[test]
fn generic_node_calls() {
    setup();
    let m = load_fixture("kernels");
    let fill = function(m, "fill_u32");
    let n = 64usize;
    let (out1, out2) = (alloc(n * 4), alloc(n * 4));
    let g = graph();
    let add = |deps: &[P], p: &mut [u8; 256]| -> (u32, P) {
        let mut node = null_mut();
        let r = cu!(cuGraphAddNode(&mut node, g, deps.as_ptr(), deps.len(), p.as_mut_ptr()): *mut P, P, *const P, usize, *mut u8);
        (r, node)
    };
    // A memory allocation node: its address comes back in the parameters (dptr at 16 + 112).
    let mut alloc_body = [0u8; 120];
    alloc_body[0..4].copy_from_slice(&1i32.to_ne_bytes());
    alloc_body[8..12].copy_from_slice(&1i32.to_ne_bytes());
    alloc_body[104..112].copy_from_slice(&((n * 4) as u64).to_ne_bytes());
    let mut pa = node_params(10, &alloc_body);
    let (r, na) = add(&[], &mut pa);
    check(r, "cuGraphAddNode MEM_ALLOC");
    let tmp = u64::from_ne_bytes(pa[16 + 112..16 + 120].try_into().unwrap());
    assert_ne!(tmp, 0);
    // A kernel node (CUDA_KERNEL_NODE_PARAMS_v3) filling the allocation with 5.
    let (mut kp, mut kv, mut kn) = (tmp, 5u32, n as u32);
    let mut args = [ptr(&mut kp), ptr(&mut kv), ptr(&mut kn)];
    let kernel_body = |args: &mut [P; 3]| crate::graphs::KernelNodeParamsV2 {
        v1: crate::graphs::KernelNodeParams {
            func: fill,
            grid: [1, 1, 1],
            block: [64, 1, 1],
            shared: 0,
            params: args.as_mut_ptr(),
            extra: null_mut(),
        },
        kern: null_mut(),
        ctx: null_mut(),
    };
    let mut pk = node_params(0, bytes_of(&kernel_body(&mut args)));
    let (r, nk) = add(&[na], &mut pk);
    check(r, "cuGraphAddNode KERNEL");
    // A memcpy node (CUDA_MEMCPY_NODE_PARAMS: the CUDA_MEMCPY3D at 16) to out1.
    let mc = Memcpy3D {
        src_type: 2,
        src_device: tmp,
        dst_type: 2,
        dst_device: out1,
        width: n * 4,
        height: 1,
        depth: 1,
        ..Default::default()
    };
    let mut mbody = vec![0u8; 16];
    mbody.extend_from_slice(bytes_of(&mc));
    let mut pm = node_params(1, &mbody);
    let (r, ncp) = add(&[nk], &mut pm);
    check(r, "cuGraphAddNode MEMCPY");
    // A memset node of out2, a host node, an empty node, a free node.
    let ms = MemsetParams::row(out2, 3, n);
    let mut ps = node_params(2, bytes_of(&ms));
    let (r, nms) = add(&[], &mut ps);
    check(r, "cuGraphAddNode MEMSET");
    let host: [usize; 2] = [count_call as *const () as usize, 0];
    let mut ph = node_params(3, bytes_of(&host));
    let (r, nh) = add(&[ncp, nms], &mut ph);
    check(r, "cuGraphAddNode HOST");
    let mut pe = node_params(5, &[]);
    let (r, _) = add(&[nh], &mut pe);
    check(r, "cuGraphAddNode EMPTY");
    let mut pf = node_params(11, &tmp.to_ne_bytes());
    let (r, _) = add(&[nh], &mut pf);
    check(r, "cuGraphAddNode MEM_FREE");
    // A child graph (moved into the node) with one empty node.
    let child = graph();
    empty(child, &[]);
    let mut child_body = [0u8; 16];
    child_body[..8].copy_from_slice(&(child as usize).to_ne_bytes());
    child_body[8..12].copy_from_slice(&1u32.to_ne_bytes());
    let mut pc = node_params(4, &child_body);
    let (r, nc) = add(&[nh], &mut pc);
    check(r, "cuGraphAddNode GRAPH (moved)");
    let mut inner = null_mut();
    check(
        cu!(cuGraphChildGraphNodeGetGraph(nc, &mut inner): P, *mut P),
        "the child",
    );
    assert_eq!(inner, child, "a moved child graph is the node's own");
    // Refused and invalid types.
    assert_eq!(
        add(&[], &mut node_params(8, &[])).0,
        801,
        "EXT_SEMAS_SIGNAL"
    );
    assert_eq!(
        add(&[], &mut node_params(7, &[])).0,
        1,
        "EVENT_RECORD without an event"
    );
    assert_eq!(
        add(&[], &mut node_params(13, &[])).0,
        1,
        "CONDITIONAL with handle 0"
    );
    assert_eq!(add(&[], &mut node_params(99, &[])).0, 1, "type 99");
    let mut none = null_mut();
    assert_eq!(
        cu!(cuGraphAddNode(&mut none, g, null_mut(), 0, null_mut()): *mut P, P, *const P, usize, *mut u8),
        1,
        "NULL parameters"
    );
    // The memset's value changed in the graph before instantiation.
    let ms7 = MemsetParams { value: 7, ..ms };
    let mut ps7 = node_params(2, bytes_of(&ms7));
    check(
        cu!(cuGraphNodeSetParams(nms, ps7.as_mut_ptr()): P, *mut u8),
        "cuGraphNodeSetParams MEMSET",
    );
    assert_eq!(
        cu!(cuGraphNodeSetParams(nk, ps7.as_mut_ptr()): P, *mut u8),
        1,
        "memset parameters for a kernel node"
    );
    let mut exec = null_mut();
    check(
        cu!(cuGraphInstantiateWithFlags(&mut exec, g, 0): *mut P, P, u64),
        "instantiate",
    );
    GENERIC_HOST_CALLS.store(0, std::sync::atomic::Ordering::SeqCst);
    for (round, value) in [(0, 5u32), (1, 6)] {
        if round == 1 {
            // The kernel's value changed in the executable graph.
            let (mut kp, mut kv, mut kn) = (tmp, value, n as u32);
            let mut args = [ptr(&mut kp), ptr(&mut kv), ptr(&mut kn)];
            let mut pk6 = node_params(0, bytes_of(&kernel_body(&mut args)));
            check(
                cu!(cuGraphExecNodeSetParams(exec, nk, pk6.as_mut_ptr()): P, P, *mut u8),
                "cuGraphExecNodeSetParams KERNEL",
            );
        }
        check(cu!(cuGraphLaunch(exec, null_mut()): P, P), "launch");
        check(cu!(cuCtxSynchronize(): ), "sync");
        assert_eq!(
            dtoh::<u32>(out1, n),
            vec![value; n],
            "round {round}: the kernel's value"
        );
        assert_eq!(
            dtoh::<u32>(out2, n),
            vec![7; n],
            "round {round}: the memset's value"
        );
    }
    assert_eq!(
        GENERIC_HOST_CALLS.load(std::sync::atomic::Ordering::SeqCst),
        2
    );
    check(cu!(cuGraphExecDestroy(exec): P), "exec destroy");
    check(cu!(cuGraphDestroy(g): P), "graph destroy");
}

/// Disabling and enabling nodes of an executable graph, destroying a node of a graph (its edges
/// go; executable graphs made before keep it, and their node handles still find the right
/// nodes), and the DOT text of a graph.
#[test]
fn enabled_nodes_destroyed_nodes_and_dot_text() {
    setup();
    let n = 64usize;
    let bufs = [alloc(n * 4), alloc(n * 4), alloc(n * 4)];
    let g = graph();
    let mut prev: Vec<P> = Vec::new();
    let mut nodes = Vec::new();
    for (k, &b) in bufs.iter().enumerate() {
        let node = memset(
            g,
            &prev,
            &MemsetParams {
                dst: b,
                value: k as u32 + 1,
                element_size: 4,
                width: n,
                height: 1,
                ..Default::default()
            },
        );
        prev = vec![node];
        nodes.push(node);
    }
    let e0 = empty(g, &[nodes[2]]);
    let mut exec = null_mut();
    check(
        cu!(cuGraphInstantiateWithFlags(&mut exec, g, 0): *mut P, P, u64),
        "instantiate",
    );
    let run = |want: [u32; 3], what: &str| {
        for &b in &bufs {
            check(cu!(cuMemsetD32_v2(b, 0, n): u64, u32, usize), "zero");
        }
        check(cu!(cuGraphLaunch(exec, null_mut()): P, P), "launch");
        check(cu!(cuCtxSynchronize(): ), "sync");
        for (k, &b) in bufs.iter().enumerate() {
            assert_eq!(dtoh::<u32>(b, n), vec![want[k]; n], "{what}: buffer {k}");
        }
    };
    let enabled = |node: P| {
        let mut on = 9u32;
        check(
            cu!(cuGraphNodeGetEnabled(exec, node, &mut on): P, P, *mut u32),
            "cuGraphNodeGetEnabled",
        );
        on
    };
    run([1, 2, 3], "all enabled");
    check(
        cu!(cuGraphNodeSetEnabled(exec, nodes[1], 0): P, P, u32),
        "disable the middle memset",
    );
    assert_eq!(enabled(nodes[1]), 0);
    run([1, 0, 3], "the middle memset disabled");
    check(
        cu!(cuGraphNodeSetEnabled(exec, nodes[1], 1): P, P, u32),
        "enable it again",
    );
    assert_eq!(enabled(nodes[1]), 1);
    run([1, 2, 3], "enabled again");
    assert_eq!(
        cu!(cuGraphNodeSetEnabled(exec, e0, 0): P, P, u32),
        1,
        "an empty node cannot be disabled"
    );

    // Destroying the middle node: its edges go with it.
    check(cu!(cuGraphDestroyNode(nodes[1]): P), "cuGraphDestroyNode");
    let count = list(
        |l, k| cu!(cuGraphGetNodes(g, l, k): P, *mut P, *mut usize),
        0,
    )
    .2;
    assert_eq!(count, 3);
    let mut k = 0usize;
    check(
        cu!(cuGraphGetEdges(g, null_mut(), null_mut(), &mut k): P, *mut P, *mut P, *mut usize),
        "edges",
    );
    assert_eq!(k, 1, "only the edge to the empty node is left");
    let (r, deps, k) = list(
        |l, k| cu!(cuGraphNodeGetDependencies(e0, l, k): P, *mut P, *mut usize),
        1,
    );
    check(r, "dependencies of the empty node");
    assert_eq!((k, deps[0]), (1, nodes[2]));
    // The executable graph keeps the destroyed node; the last memset's handle still names it.
    check(
        cu!(cuGraphNodeSetEnabled(exec, nodes[2], 0): P, P, u32),
        "disable the last memset",
    );
    run([1, 2, 0], "after the node was destroyed in the graph");

    // DOT text of the graph.
    let path = std::env::temp_dir().join(format!("tg-graph-{}.dot", std::process::id()));
    let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    check(
        cu!(cuGraphDebugDotPrint(g, c.as_ptr(), 0): P, *const std::ffi::c_char, u32),
        "cuGraphDebugDotPrint",
    );
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    assert!(text.starts_with("digraph"), "{text}");
    assert_eq!(text.matches("memset").count(), 2, "{text}");
    assert_eq!(text.matches("->").count(), 1, "{text}");
    check(cu!(cuGraphExecDestroy(exec): P), "exec destroy");
    check(cu!(cuGraphDestroy(g): P), "graph destroy");
}

/// `cuGraphExecUpdate`: an executable graph takes the parameters of a graph with the same
/// nodes and edges (here a clone whose memset and kernel nodes were changed); a graph with
/// another node, or a node of another type, is refused with the reason and the node.
#[test]
fn executable_graphs_update_from_a_graph_of_the_same_shape() {
    setup();
    let m = load_fixture("kernels");
    let fill = function(m, "fill_u32");
    let n = 64usize;
    let (b1, b2) = (alloc(n * 4), alloc(n * 4));
    let g = graph();
    let ms = MemsetParams::row(b1, 1, n);
    let a = memset(g, &[], &ms);
    let (mut kp, mut kv, mut kn) = (b2, 5u32, n as u32);
    let mut args = [ptr(&mut kp), ptr(&mut kv), ptr(&mut kn)];
    let mut pk = crate::graphs::KernelNodeParams {
        func: fill,
        grid: [1, 1, 1],
        block: [64, 1, 1],
        shared: 0,
        params: args.as_mut_ptr(),
        extra: null_mut(),
    };
    let mut k = null_mut();
    check(
        cu!(cuGraphAddKernelNode(&mut k, g, &a, 1, ptr(&mut pk)): *mut P, P, *const P, usize, P),
        "kernel node",
    );
    let mut exec = null_mut();
    check(
        cu!(cuGraphInstantiateWithFlags(&mut exec, g, 0): *mut P, P, u64),
        "instantiate",
    );
    let run = |want: (u32, u32), what: &str| {
        check(cu!(cuGraphLaunch(exec, null_mut()): P, P), "launch");
        check(cu!(cuCtxSynchronize(): ), "sync");
        assert_eq!(dtoh::<u32>(b1, n), vec![want.0; n], "{what}: the memset");
        assert_eq!(dtoh::<u32>(b2, n), vec![want.1; n], "{what}: the kernel");
    };
    run((1, 5), "as instantiated");
    // A clone with new parameters.
    let mut c = null_mut();
    check(cu!(cuGraphClone(&mut c, g): *mut P, P), "clone");
    let (mut ca, mut ck) = (null_mut(), null_mut());
    check(
        cu!(cuGraphNodeFindInClone(&mut ca, a, c): *mut P, P, P),
        "find the memset",
    );
    check(
        cu!(cuGraphNodeFindInClone(&mut ck, k, c): *mut P, P, P),
        "find the kernel",
    );
    let ms7 = MemsetParams { value: 7, ..ms };
    check(
        cu!(cuGraphMemsetNodeSetParams(ca, &ms7): P, *const MemsetParams),
        "memset 7",
    );
    // SAFETY: the kernel node's value argument, a live u32.
    unsafe { *(args[1] as *mut u32) = 9 };
    check(
        cu!(cuGraphKernelNodeSetParams(ck, ptr(&mut pk)): P, P),
        "kernel 9",
    );
    #[repr(C)]
    struct Info {
        result: u32,
        error_node: P,
        error_from_node: P,
    }
    let mut info = Info {
        result: 99,
        error_node: 1 as P,
        error_from_node: 1 as P,
    };
    check(
        cu!(cuGraphExecUpdate_v2(exec, c, &mut info): P, P, *mut Info),
        "cuGraphExecUpdate_v2",
    );
    assert_eq!((info.result, info.error_node), (0, null_mut()));
    run((7, 9), "updated from the clone");
    // The exec's nodes are still named by the original graph's handles.
    check(
        cu!(cuGraphExecMemsetNodeSetParams(exec, a, &ms, null_mut()): P, P, *const MemsetParams, P),
        "cuGraphExecMemsetNodeSetParams",
    );
    run((1, 9), "the memset set back");
    // Another node: the topology changed.
    let extra = graph();
    let ea = memset(extra, &[], &ms);
    memset(extra, &[ea], &ms);
    empty(extra, &[]);
    assert_eq!(
        cu!(cuGraphExecUpdate_v2(exec, extra, &mut info): P, P, *mut Info),
        910
    );
    assert_eq!(
        info.result, 2,
        "CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED"
    );
    // A node of another type: named in the result (the old form).
    let other = graph();
    let oa = empty(other, &[]);
    let mut ok = null_mut();
    check(
        cu!(cuGraphAddKernelNode(&mut ok, other, &oa, 1, ptr(&mut pk)): *mut P, P, *const P, usize, P),
        "kernel node",
    );
    let (mut err_node, mut result) = (null_mut(), 99u32);
    assert_eq!(
        cu!(cuGraphExecUpdate(exec, other, &mut err_node, &mut result): P, P, *mut P, *mut u32),
        910
    );
    assert_eq!(
        (result, err_node),
        (3, oa),
        "CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED"
    );
    run((1, 9), "unchanged by the refused updates");
    check(cu!(cuGraphExecDestroy(exec): P), "exec destroy");
    for h in [g, c, extra, other] {
        check(cu!(cuGraphDestroy(h): P), "graph destroy");
    }
}

/// A graph of a memset of `b2` to `v2`, then a child graph node holding a memset of `b3` to
/// `v3` (`nested`: false, a memset of `b3` after the first instead).
fn two_memsets(b2: u64, v2: u32, b3: u64, v3: u32, n: usize, nested: bool) -> P {
    let g = graph();
    let ms = |dst, value| MemsetParams::row(dst, value, n);
    let first = memset(g, &[], &ms(b2, v2));
    if nested {
        let inner = graph();
        memset(inner, &[], &ms(b3, v3));
        let mut c = null_mut();
        check(
            cu!(cuGraphAddChildGraphNode(&mut c, g, &first, 1, inner): *mut P, P, *const P, usize, P),
            "nested child graph node",
        );
        check(cu!(cuGraphDestroy(inner): P), "graph destroy");
    } else {
        memset(g, &[first], &ms(b3, v3));
    }
    g
}

/// `cuGraphExecChildGraphNodeSetParams` (and `cuGraphExecNodeSetParams` of a child graph node):
/// the child's nodes, nested child graphs included, take the new graph's parameters at the next
/// launch; a node that is not a child graph node (`CUDA_ERROR_INVALID_VALUE`), or a graph of
/// other nodes, types or edges (`CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE`), changes nothing.
#[test]
fn child_graph_nodes_of_executable_graphs_take_new_parameters() {
    setup();
    let n = 64usize;
    let (b1, b2, b3) = (alloc(n * 4), alloc(n * 4), alloc(n * 4));
    let g = graph();
    let a = memset(g, &[], &MemsetParams::row(b1, 1, n));
    let body = two_memsets(b2, 2, b3, 3, n, true);
    let mut c = null_mut();
    check(
        cu!(cuGraphAddChildGraphNode(&mut c, g, &a, 1, body): *mut P, P, *const P, usize, P),
        "child graph node",
    );
    let mut exec = null_mut();
    check(
        cu!(cuGraphInstantiateWithFlags(&mut exec, g, 0): *mut P, P, u64),
        "instantiate",
    );
    let run = |want: [u32; 3], what: &str| {
        check(cu!(cuGraphLaunch(exec, null_mut()): P, P), "launch");
        check(cu!(cuCtxSynchronize(): ), "sync");
        for (b, w) in [b1, b2, b3].into_iter().zip(want) {
            assert_eq!(dtoh::<u32>(b, n), vec![w; n], "{what}: buffer of {w}");
        }
    };
    run([1, 2, 3], "as instantiated");
    let new = two_memsets(b2, 20, b3, 30, n, true);
    check(
        cu!(cuGraphExecChildGraphNodeSetParams(exec, c, new): P, P, P),
        "cuGraphExecChildGraphNodeSetParams",
    );
    run([1, 20, 30], "new parameters");
    // The generic call: CUDA_CHILD_GRAPH_NODE_PARAMS, the graph first.
    let generic = two_memsets(b2, 21, b3, 31, n, true);
    let mut params = node_params(4, bytes_of(&generic));
    check(
        cu!(cuGraphExecNodeSetParams(exec, c, params.as_mut_ptr()): P, P, *mut u8),
        "cuGraphExecNodeSetParams CHILD_GRAPH",
    );
    run([1, 21, 31], "new parameters through the generic call");
    // Refused: not a child graph node; a nested child replaced by a memset (other types and
    // node count); fewer nodes; other edges.
    let flat = two_memsets(b2, 40, b3, 40, n, false);
    let few = graph();
    memset(few, &[], &MemsetParams::row(b2, 50, n));
    let unordered = two_memsets(b2, 60, b3, 60, n, true);
    let nodes = {
        let (r, v, k) = list(
            |p, k| cu!(cuGraphGetNodes(unordered, p, k): P, *mut P, *mut usize),
            2,
        );
        assert_eq!((r, k), (0, 2));
        v
    };
    let from = [nodes[0]];
    let to = [nodes[1]];
    check(
        cu!(cuGraphRemoveDependencies(unordered, from.as_ptr(), to.as_ptr(), 1): P, *const P, *const P, usize),
        "remove the edge",
    );
    // CUDA_ERROR_INVALID_VALUE for a node that is not a child graph node;
    // CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE for a graph of another shape (NVIDIA's answers).
    for (what, node, gr, want) in [
        ("a memset node", a, new, 1),
        ("a memset for a child graph node", c, flat, 910),
        ("one node for three", c, few, 910),
        ("no edge", c, unordered, 910),
    ] {
        assert_eq!(
            cu!(cuGraphExecChildGraphNodeSetParams(exec, node, gr): P, P, P),
            want,
            "{what}"
        );
    }
    assert_eq!(
        cu!(cuGraphExecChildGraphNodeSetParams(exec, c, null_mut()): P, P, P),
        1,
        "a NULL graph"
    );
    run([1, 21, 31], "unchanged by the refused calls");
    check(cu!(cuGraphExecDestroy(exec): P), "exec destroy");
    for h in [g, body, new, generic, flat, few, unordered] {
        check(cu!(cuGraphDestroy(h): P), "graph destroy");
    }
}

/// Releases a `spin_until` kernel when dropped (also when the test fails).
struct Release(P);

impl Drop for Release {
    fn drop(&mut self) {
        // SAFETY: the pinned flag word, alive until the test frees it after this.
        unsafe { (self.0 as *mut u32).write_volatile(1) };
    }
}

/// Event record and wait nodes (added directly, through `cuGraphAddNode`, and captured with
/// `CU_EVENT_RECORD_EXTERNAL` / `CU_EVENT_WAIT_EXTERNAL`): a wait node holds the nodes after it
/// until the event's record on another stream has completed; a record node records its event
/// once the nodes before it have run. The memsets write pinned host memory, which the test
/// reads while the graph waits.
#[test]
fn event_nodes_order_the_graph_with_other_streams() {
    setup();
    let m = load_fixture("kernels");
    let spin = function(m, "spin_until");
    let n = 64usize;
    let pinned = || {
        let mut h: P = null_mut();
        check(
            cu!(cuMemHostAlloc(&mut h, n * 4, 0): *mut P, usize, u32),
            "cuMemHostAlloc",
        );
        let mut d = 0u64;
        check(
            cu!(cuMemHostGetDevicePointer_v2(&mut d, h, 0): *mut u64, P, u32),
            "device pointer",
        );
        // SAFETY: n pinned words.
        unsafe { std::slice::from_raw_parts_mut(h as *mut u32, n).fill(0) };
        (h, d)
    };
    let ((h1, b1), (h2, b2)) = (pinned(), pinned());
    // SAFETY: n pinned words each, written by the GPU.
    let read = |h: P| unsafe {
        (0..n)
            .map(|i| (h as *const u32).add(i).read_volatile())
            .collect::<Vec<_>>()
    };
    let event = || {
        let mut e = null_mut();
        check(cu!(cuEventCreate(&mut e, 0): *mut P, u32), "cuEventCreate");
        e
    };
    let stream = || {
        let mut s = null_mut();
        check(
            cu!(cuStreamCreate(&mut s, 1): *mut P, u32),
            "cuStreamCreate",
        );
        s
    };
    let (ewait, erec) = (event(), event());
    let (s1, s2) = (stream(), stream());
    // The graph: memset b1 → wait for ewait → memset b2 → record erec.
    let g = graph();
    let ms = |dst, value| MemsetParams::row(dst, value, n);
    let a = memset(g, &[], &ms(b1, 1));
    let mut w = null_mut();
    check(
        cu!(cuGraphAddEventWaitNode(&mut w, g, &a, 1, ewait): *mut P, P, *const P, usize, P),
        "cuGraphAddEventWaitNode",
    );
    let b = memset(g, &[w], &ms(b2, 2));
    // The record node through the generic call (CUDA_EVENT_RECORD_NODE_PARAMS: the event).
    let mut pr = node_params(7, &(erec as usize).to_ne_bytes());
    let mut r = null_mut();
    check(
        cu!(cuGraphAddNode(&mut r, g, &b, 1, pr.as_mut_ptr()): *mut P, P, *const P, usize, *mut u8),
        "cuGraphAddNode EVENT_RECORD",
    );
    let (mut tr, mut tw) = (99u32, 99u32);
    check(cu!(cuGraphNodeGetType(r, &mut tr): P, *mut u32), "type");
    check(cu!(cuGraphNodeGetType(w, &mut tw): P, *mut u32), "type");
    assert_eq!(
        (tr, tw),
        (7, 6),
        "CU_GRAPH_NODE_TYPE_EVENT_RECORD, _WAIT_EVENT"
    );
    let mut got = null_mut();
    check(
        cu!(cuGraphEventWaitNodeGetEvent(w, &mut got): P, *mut P),
        "cuGraphEventWaitNodeGetEvent",
    );
    assert_eq!(got, ewait);
    assert_eq!(
        cu!(cuGraphEventRecordNodeGetEvent(w, &mut got): P, *mut P),
        1,
        "a wait node is not a record node"
    );
    let mut exec = null_mut();
    check(
        cu!(cuGraphInstantiateWithFlags(&mut exec, g, 0): *mut P, P, u64),
        "instantiate",
    );
    // s2: a kernel spinning until the flag is set (at most 20 s), then ewait's record.
    let (flag, flag_dev) = host_flag();
    let release = Release(flag);
    let (mut fp, mut max_ns) = (flag_dev, 20_000_000_000u64);
    launch(spin, 1, 32, s2, &mut [ptr(&mut fp), ptr(&mut max_ns)]);
    check(cu!(cuEventRecord(ewait, s2): P, P), "record ewait on s2");
    check(cu!(cuGraphLaunch(exec, s1): P, P), "launch");
    // The first memset runs; the second waits for s2.
    let mut first = read(h1);
    for _ in 0..5000 {
        if first[0] == 1 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
        first = read(h1);
    }
    assert_eq!(first, vec![1; n], "the memset before the wait node ran");
    assert_eq!(read(h2), vec![0; n], "the memset after the wait node waits");
    assert_eq!(
        cu!(cuEventQuery(erec): P),
        600,
        "the record node has not run (CUDA_ERROR_NOT_READY)"
    );
    drop(release);
    check(cu!(cuStreamSynchronize(s1): P), "sync s1");
    assert_eq!(read(h2), vec![2; n], "the memset after the wait node ran");
    check(cu!(cuEventQuery(erec): P), "the record node ran");
    check(cu!(cuGraphExecDestroy(exec): P), "exec destroy");
    check(cu!(cuGraphDestroy(g): P), "graph destroy");

    // Captured: an external wait and an external record become event nodes.
    check(cu!(cuStreamBeginCapture_v2(s1, 2): P, u32), "begin capture");
    check(
        cu!(cuStreamWaitEvent(s1, ewait, 1): P, P, u32),
        "captured CU_EVENT_WAIT_EXTERNAL",
    );
    check(
        cu!(cuEventRecordWithFlags(erec, s1, 1): P, P, u32),
        "captured CU_EVENT_RECORD_EXTERNAL",
    );
    let mut cg = null_mut();
    check(
        cu!(cuStreamEndCapture(s1, &mut cg): P, *mut P),
        "end capture",
    );
    let types: Vec<u32> = list(
        |l, k| cu!(cuGraphGetNodes(cg, l, k): P, *mut P, *mut usize),
        4,
    )
    .1
    .into_iter()
    .take(2)
    .map(|node| {
        let mut t = 99u32;
        check(cu!(cuGraphNodeGetType(node, &mut t): P, *mut u32), "type");
        t
    })
    .collect();
    assert_eq!(types, [6, 7], "wait, then record");
    check(cu!(cuGraphDestroy(cg): P), "graph destroy");
    check(cu!(cuStreamSynchronize(s2): P), "sync s2");
    for h in [flag, h1, h2] {
        check(cu!(cuMemFreeHost(h): P), "free pinned");
    }
    for s in [s1, s2] {
        check(cu!(cuStreamDestroy_v2(s): P), "stream destroy");
    }
}

#[test]
fn kernel_node_parameters_and_attributes_read_back() {
    use crate::graphs::{KernelNodeParams, KernelNodeParamsV2};
    let ctx = setup();
    let m = load_fixture("kernels");
    let fill = function(m, "fill_u32");
    let n = 64usize;
    let buf = alloc(n * 4);
    let g = graph();
    let (mut p, mut v, mut count) = (buf, 7u32, n as u32);
    let mut args = [ptr(&mut p), ptr(&mut v), ptr(&mut count)];
    let mut kp = KernelNodeParams {
        func: fill,
        grid: [2, 1, 1],
        block: [32, 1, 1],
        shared: 0,
        params: args.as_mut_ptr(),
        extra: null_mut(),
    };
    let mut k = null_mut();
    check(
        cu!(cuGraphAddKernelNode(&mut k, g, std::ptr::null(), 0, ptr(&mut kp)): *mut P, P, *const P, usize, P),
        "cuGraphAddKernelNode",
    );
    // The node holds its own copy: the program's argument changes (the second node and the new
    // parameters below take 99).
    unsafe { *(args[1] as *mut u32) = 99 };
    let mut back = KernelNodeParamsV2 {
        v1: KernelNodeParams {
            func: null_mut(),
            grid: [0; 3],
            block: [0; 3],
            shared: 9,
            params: null_mut(),
            extra: std::ptr::without_provenance_mut(1),
        },
        kern: std::ptr::without_provenance_mut(1),
        ctx: null_mut(),
    };
    check(
        cu!(cuGraphKernelNodeGetParams_v2(k, ptr(&mut back)): P, P),
        "cuGraphKernelNodeGetParams_v2",
    );
    assert_eq!(back.v1.func, fill);
    assert_eq!(
        (back.v1.grid, back.v1.block, back.v1.shared),
        ([2, 1, 1], [32, 1, 1], 0)
    );
    assert!(back.v1.extra.is_null() && back.kern.is_null());
    assert_eq!(back.ctx, ctx);
    let got = unsafe {
        (
            *(*back.v1.params as *const u64),
            *(*back.v1.params.add(1) as *const u32),
            *(*back.v1.params.add(2) as *const u32),
        )
    };
    assert_eq!(
        got,
        (buf, 7, n as u32),
        "kernelParams point at the node's arguments"
    );

    // Attributes.
    let get = |node: P, attr: u32| -> (u32, [u8; 64]) {
        let mut b = [0xa5u8; 64];
        let r = cu!(cuGraphKernelNodeGetAttribute(node, attr, &mut b): P, u32, *mut [u8; 64]);
        (r, b)
    };
    let set = |node: P, attr: u32, words: &[u32]| -> u32 {
        let mut b = [0u8; 64];
        for (i, w) in words.iter().enumerate() {
            b[4 * i..4 * i + 4].copy_from_slice(&w.to_le_bytes());
        }
        cu!(cuGraphKernelNodeSetAttribute(node, attr, &b): P, u32, *const [u8; 64])
    };
    let w0 = |b: [u8; 64]| u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
    assert_eq!(get(k, 2).0, OK);
    assert_eq!(w0(get(k, 2).1), 0, "not cooperative");
    assert_eq!(set(k, 2, &[1]), OK, "cooperative");
    assert_eq!(w0(get(k, 2).1), 1);
    assert_eq!(set(k, 8, &[5]), OK, "priority");
    assert_eq!(w0(get(k, 8).1), 5);
    assert_eq!(
        set(k, 4, &[3, 1, 1]),
        912,
        "a cluster that does not divide the grid: CUDA_ERROR_INVALID_CLUSTER_SIZE"
    );
    assert_eq!(get(k, 4).1[..12], [0u8; 12], "no cluster");
    assert_eq!(
        get(k, 3).0,
        1,
        "SYNCHRONIZATION_POLICY is a stream attribute"
    );
    assert_eq!(set(k, 99, &[1]), 1, "attribute 99");
    // New parameters keep the attributes.
    check(
        cu!(cuGraphKernelNodeSetParams(k, ptr(&mut kp)): P, P),
        "cuGraphKernelNodeSetParams",
    );
    assert_eq!((w0(get(k, 2).1), w0(get(k, 8).1)), (1, 5));
    // Copied to another kernel node.
    let mut k2 = null_mut();
    check(
        cu!(cuGraphAddKernelNode(&mut k2, g, &k, 1, ptr(&mut kp)): *mut P, P, *const P, usize, P),
        "second kernel node",
    );
    assert_eq!(w0(get(k2, 8).1), 0);
    check(
        cu!(cuGraphKernelNodeCopyAttributes(k2, k): P, P),
        "cuGraphKernelNodeCopyAttributes",
    );
    assert_eq!((w0(get(k2, 2).1), w0(get(k2, 8).1)), (1, 5));
    // The cooperative launch runs (v is 99 in the second node's arguments).
    let mut e = null_mut();
    check(
        cu!(cuGraphInstantiateWithFlags(&mut e, g, 0): *mut P, P, u64),
        "instantiate",
    );
    check(cu!(cuGraphLaunch(e, null_mut()): P, P), "launch");
    check(cu!(cuCtxSynchronize(): ), "sync");
    assert!(dtoh::<u32>(buf, n).iter().all(|&x| x == 99));
    // Not a kernel node.
    let e_node = empty(g, &[]);
    let mut v1 = back.v1;
    assert_eq!(
        cu!(cuGraphKernelNodeGetParams(e_node, ptr(&mut v1)): P, P),
        1,
        "an empty node"
    );
    assert_eq!(get(e_node, 2).0, 1, "an empty node's attribute");
    check(cu!(cuGraphExecDestroy(e): P), "cuGraphExecDestroy");
    check(cu!(cuGraphDestroy(g): P), "cuGraphDestroy");
}
