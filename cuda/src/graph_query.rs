//! Graph structure and node parameters: root nodes, edges, a node's dependencies and
//! dependents, removing edges, child graph nodes, the parameters of memcpy and memset nodes,
//! `cuGraphNodeFindInClone` and `cuGraphExecGetFlags`. The graphs themselves are in graph.rs.
//!
//! Lists follow the driver API's convention: with a NULL array the count is written; otherwise
//! up to `*num` entries are written, entries past the graph's count are set to NULL, and `*num`
//! becomes the number written. Edge data (the `_v2` forms) is always the default: zero bytes.

use crate::device::out;
use crate::error::{guard, invalid, R};
use crate::graph::{add_node, graph_ref, node_ref, ChildGraph, Graph, NodeKind};
use crate::types::*;
use std::ffi::c_void;
use std::sync::Arc;

/// `CUgraphEdgeData`: 8 bytes (ports, type, reserved).
const EDGE_DATA_BYTES: usize = 8;

/// Write `items` as a driver-API list (see the module's notes).
unsafe fn write_list(items: &[*mut c_void], list: *mut *mut c_void, num: *mut usize) -> R {
    let n = out(num, "numNodes")?;
    if list.is_null() {
        *n = items.len();
        return Ok(());
    }
    for i in 0..*n {
        *list.add(i) = items.get(i).copied().unwrap_or(std::ptr::null_mut());
    }
    *n = (*n).min(items.len());
    Ok(())
}

/// Zero the edge data of `n` edges, when asked for.
unsafe fn zero_edge_data(edge_data: *mut c_void, n: usize) {
    if !edge_data.is_null() {
        std::ptr::write_bytes(edge_data as *mut u8, 0, n * EDGE_DATA_BYTES);
    }
}

/// The edges of graph `g` as (from, to) handles, in the order of the `to` nodes.
fn edges(g: &Graph) -> Vec<(*mut c_void, *mut c_void)> {
    let list = g.nodes.lock();
    let mut e = Vec::new();
    for (i, d) in list.0.iter().enumerate() {
        for &p in &d.deps {
            e.push((list.1[p] as *mut c_void, list.1[i] as *mut c_void));
        }
    }
    e
}

#[no_mangle]
pub unsafe extern "C" fn cuGraphGetRootNodes(
    h: *mut c_void,
    nodes: *mut *mut c_void,
    num: *mut usize,
) -> CUresult {
    guard("cuGraphGetRootNodes", || {
        let g = graph_ref(h)?;
        let roots: Vec<*mut c_void> = {
            let list = g.nodes.lock();
            (0..list.0.len())
                .filter(|&i| list.0[i].deps.is_empty())
                .map(|i| list.1[i] as *mut c_void)
                .collect()
        };
        write_list(&roots, nodes, num)
    })
}

unsafe fn get_edges(
    h: *mut c_void,
    from: *mut *mut c_void,
    to: *mut *mut c_void,
    edge_data: *mut c_void,
    num: *mut usize,
) -> R {
    let n = out(num, "numEdges")?;
    let e = edges(graph_ref(h)?);
    if from.is_null() && to.is_null() {
        *n = e.len();
        return Ok(());
    }
    if from.is_null() || to.is_null() {
        return Err(invalid("from and to must both be NULL or both be arrays"));
    }
    for i in 0..*n {
        let (a, b) = e
            .get(i)
            .copied()
            .unwrap_or((std::ptr::null_mut(), std::ptr::null_mut()));
        (*from.add(i), *to.add(i)) = (a, b);
    }
    *n = (*n).min(e.len());
    zero_edge_data(edge_data, *n);
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn cuGraphGetEdges(
    h: *mut c_void,
    from: *mut *mut c_void,
    to: *mut *mut c_void,
    num: *mut usize,
) -> CUresult {
    guard("cuGraphGetEdges", || {
        get_edges(h, from, to, std::ptr::null_mut(), num)
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuGraphGetEdges_v2(
    h: *mut c_void,
    from: *mut *mut c_void,
    to: *mut *mut c_void,
    edge_data: *mut c_void,
    num: *mut usize,
) -> CUresult {
    guard("cuGraphGetEdges_v2", || {
        get_edges(h, from, to, edge_data, num)
    })
}

/// The nodes node `h` depends on (`dependents`: the nodes that depend on it).
unsafe fn neighbours(
    h: *mut c_void,
    dependents: bool,
    list: *mut *mut c_void,
    edge_data: *mut c_void,
    num: *mut usize,
) -> R {
    let node = node_ref(h)?;
    let items: Vec<*mut c_void> = {
        let g = (*node.graph).nodes.lock();
        if dependents {
            (0..g.0.len())
                .filter(|&i| g.0[i].deps.contains(&node.index))
                .map(|i| g.1[i] as *mut c_void)
                .collect()
        } else {
            g.0[node.index]
                .deps
                .iter()
                .map(|&p| g.1[p] as *mut c_void)
                .collect()
        }
    };
    write_list(&items, list, num)?;
    if !list.is_null() {
        zero_edge_data(edge_data, *num);
    }
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn cuGraphNodeGetDependencies(
    h: *mut c_void,
    deps: *mut *mut c_void,
    num: *mut usize,
) -> CUresult {
    guard("cuGraphNodeGetDependencies", || {
        neighbours(h, false, deps, std::ptr::null_mut(), num)
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuGraphNodeGetDependencies_v2(
    h: *mut c_void,
    deps: *mut *mut c_void,
    edge_data: *mut c_void,
    num: *mut usize,
) -> CUresult {
    guard("cuGraphNodeGetDependencies_v2", || {
        neighbours(h, false, deps, edge_data, num)
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuGraphNodeGetDependentNodes(
    h: *mut c_void,
    nodes: *mut *mut c_void,
    num: *mut usize,
) -> CUresult {
    guard("cuGraphNodeGetDependentNodes", || {
        neighbours(h, true, nodes, std::ptr::null_mut(), num)
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuGraphNodeGetDependentNodes_v2(
    h: *mut c_void,
    nodes: *mut *mut c_void,
    edge_data: *mut c_void,
    num: *mut usize,
) -> CUresult {
    guard("cuGraphNodeGetDependentNodes_v2", || {
        neighbours(h, true, nodes, edge_data, num)
    })
}

/// Remove the edges `from[i]` → `to[i]`; every one must exist (else nothing is removed).
unsafe fn remove_deps(
    h: *mut c_void,
    from: *const *mut c_void,
    to: *const *mut c_void,
    edge_data: *const c_void,
    n: usize,
) -> R {
    let g = graph_ref(h)?;
    if n > 0 && (from.is_null() || to.is_null()) {
        return Err(invalid("from or to is NULL"));
    }
    if !edge_data.is_null() {
        let bytes = std::slice::from_raw_parts(edge_data as *const u8, EDGE_DATA_BYTES * n);
        if bytes.iter().any(|&b| b != 0) {
            return Err(invalid(
                "edge data other than the default names no edge here",
            ));
        }
    }
    let mut edges = Vec::with_capacity(n);
    for i in 0..n {
        let (a, b) = (node_ref(*from.add(i))?, node_ref(*to.add(i))?);
        if !std::ptr::eq(a.graph, g) || !std::ptr::eq(b.graph, g) {
            return Err(invalid(format!("edge {i} joins nodes of another graph")));
        }
        edges.push((a.index, b.index));
    }
    let mut list = g.nodes.lock();
    for (i, &(a, b)) in edges.iter().enumerate() {
        if !list.0[b].deps.contains(&a) {
            return Err(invalid(format!("edge {i} is not an edge of the graph")));
        }
    }
    for (a, b) in edges {
        list.0[b].deps.retain(|&p| p != a);
    }
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn cuGraphRemoveDependencies(
    h: *mut c_void,
    from: *const *mut c_void,
    to: *const *mut c_void,
    n: usize,
) -> CUresult {
    guard("cuGraphRemoveDependencies", || {
        remove_deps(h, from, to, std::ptr::null(), n)
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuGraphRemoveDependencies_v2(
    h: *mut c_void,
    from: *const *mut c_void,
    to: *const *mut c_void,
    edge_data: *const c_void,
    n: usize,
) -> CUresult {
    guard("cuGraphRemoveDependencies_v2", || {
        remove_deps(h, from, to, edge_data, n)
    })
}

/// `cuGraphAddChildGraphNode`: a node that runs a clone of graph `child` (made now: later
/// changes to `child` do not reach it).
#[no_mangle]
pub unsafe extern "C" fn cuGraphAddChildGraphNode(
    ph: *mut *mut c_void,
    g: *mut c_void,
    deps: *const *mut c_void,
    n: usize,
    child: *mut c_void,
) -> CUresult {
    guard("cuGraphAddChildGraphNode", || {
        if std::ptr::eq(child, g) {
            return Err(invalid("a graph cannot be its own child"));
        }
        let c = crate::graph::clone_graph(graph_ref(child)?, 0)?;
        let kind = NodeKind::Child(Arc::new(ChildGraph(c as usize)));
        add_node(ph, g, deps, n, kind)
    })
}

/// `cuGraphExecChildGraphNodeSetParams`: the child graph node's nodes in the executable graph
/// take the parameters of `child`'s nodes (the same nodes, types and edges).
#[no_mangle]
pub unsafe extern "C" fn cuGraphExecChildGraphNodeSetParams(
    h: *mut c_void,
    node: *mut c_void,
    child: *mut c_void,
) -> CUresult {
    guard("cuGraphExecChildGraphNodeSetParams", || {
        crate::graph::exec_child_set(h, node, child)
    })
}

/// `cuGraphChildGraphNodeGetGraph`: the node's own graph (owned by the node).
#[no_mangle]
pub unsafe extern "C" fn cuGraphChildGraphNodeGetGraph(
    h: *mut c_void,
    graph: *mut *mut c_void,
) -> CUresult {
    guard("cuGraphChildGraphNodeGetGraph", || {
        let o = out(graph, "phGraph")?;
        let node = node_ref(h)?;
        let list = (*node.graph).nodes.lock();
        match &list.0[node.index].kind {
            NodeKind::Child(c) => {
                *o = c.0 as *mut c_void;
                Ok(())
            }
            _ => Err(invalid("the node is not a child graph node")),
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuGraphMemcpyNodeGetParams(
    h: *mut c_void,
    params: *mut CUDA_MEMCPY3D,
) -> CUresult {
    guard("cuGraphMemcpyNodeGetParams", || {
        let o = out(params, "nodeParams")?;
        let node = node_ref(h)?;
        let list = (*node.graph).nodes.lock();
        match &list.0[node.index].kind {
            NodeKind::Copy { params, .. } => {
                *o = **params;
                Ok(())
            }
            _ => Err(invalid("the node is not a memcpy node")),
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuGraphMemcpyNodeSetParams(
    h: *mut c_void,
    params: *const CUDA_MEMCPY3D,
) -> CUresult {
    guard("cuGraphMemcpyNodeSetParams", || {
        let node = node_ref(h)?;
        let kind = crate::graph::copy_kind(params)?;
        let mut list = (*node.graph).nodes.lock();
        let d = &mut list.0[node.index];
        if !matches!(d.kind, NodeKind::Copy { .. }) {
            return Err(invalid("the node is not a memcpy node"));
        }
        d.kind = kind;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuGraphMemsetNodeGetParams(
    h: *mut c_void,
    params: *mut CUDA_MEMSET_NODE_PARAMS,
) -> CUresult {
    guard("cuGraphMemsetNodeGetParams", || {
        let o = out(params, "nodeParams")?;
        let node = node_ref(h)?;
        let list = (*node.graph).nodes.lock();
        match &list.0[node.index].kind {
            NodeKind::Memset {
                dst,
                value,
                elem,
                width,
                height,
                pitch,
            } => {
                *o = CUDA_MEMSET_NODE_PARAMS {
                    dst: dst.0.gpu_va() + dst.1,
                    pitch: *pitch as usize,
                    value: *value,
                    elementSize: *elem,
                    width: (*width / *elem as u64) as usize,
                    height: *height as usize,
                };
                Ok(())
            }
            _ => Err(invalid("the node is not a memset node")),
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuGraphMemsetNodeSetParams(
    h: *mut c_void,
    params: *const CUDA_MEMSET_NODE_PARAMS,
) -> CUresult {
    guard("cuGraphMemsetNodeSetParams", || {
        let node = node_ref(h)?;
        let p = params
            .as_ref()
            .ok_or_else(|| invalid("nodeParams is NULL"))?;
        let kind = crate::graph::memset_kind(p)?;
        let mut list = (*node.graph).nodes.lock();
        let d = &mut list.0[node.index];
        if !matches!(d.kind, NodeKind::Memset { .. }) {
            return Err(invalid("the node is not a memset node"));
        }
        d.kind = kind;
        Ok(())
    })
}

/// `cuGraphNodeFindInClone`: the node of `clone` (made by `cuGraphClone` of the original node's
/// graph) that was copied from `original`.
#[no_mangle]
pub unsafe extern "C" fn cuGraphNodeFindInClone(
    ph: *mut *mut c_void,
    original: *mut c_void,
    clone: *mut c_void,
) -> CUresult {
    guard("cuGraphNodeFindInClone", || {
        let o = out(ph, "phNode")?;
        let node = node_ref(original)?;
        let c = graph_ref(clone)?;
        if c.cloned_from != node.graph as usize {
            return Err(invalid(
                "the graph was not cloned from the original node's graph",
            ));
        }
        let list = c.nodes.lock();
        *o =
            *list.1.get(node.index).ok_or_else(|| {
                invalid("the node was added to its graph after the clone was made")
            })? as *mut c_void;
        Ok(())
    })
}

/// `cuGraphExecGetFlags`: the flags the executable graph was instantiated with.
#[no_mangle]
pub unsafe extern "C" fn cuGraphExecGetFlags(h: *mut c_void, flags: *mut u64) -> CUresult {
    guard("cuGraphExecGetFlags", || {
        let o = out(flags, "flags")?;
        *o = crate::graph::exec_flags(h)?;
        Ok(())
    })
}

/// `CUgraphNodeParams`: the node type at 0, the type's parameters at 16.
const NODE_PARAMS_AT: usize = 16;
/// `CUDA_MEMCPY_NODE_PARAMS`: the `CUDA_MEMCPY3D` after `flags`, `reserved` and `copyCtx`.
const MEMCPY_PARAMS_AT: usize = 16;

/// `CUgraphNodeType` names of the types the generic calls refuse, for messages.
fn refused_type(ty: u32) -> Option<&'static str> {
    Some(match ty {
        8 => "CU_GRAPH_NODE_TYPE_EXT_SEMAS_SIGNAL",
        9 => "CU_GRAPH_NODE_TYPE_EXT_SEMAS_WAIT",
        _ => return None,
    })
}

/// The node type and the address of its parameters in a `CUgraphNodeParams`.
unsafe fn type_and_body(p: *const c_void) -> R<(u32, *const u8)> {
    if p.is_null() {
        return Err(invalid("nodeParams is NULL"));
    }
    let ty = *(p as *const u32);
    if let Some(name) = refused_type(ty) {
        return Err(crate::error::fail(
            CUDA_ERROR_NOT_SUPPORTED,
            format!("nodeParams->type {ty} ({name}) is not supported"),
        ));
    }
    Ok((ty, (p as *const u8).add(NODE_PARAMS_AT)))
}

unsafe fn add_generic(
    ph: *mut *mut c_void,
    g: *mut c_void,
    deps: *const *mut c_void,
    n: usize,
    edge_data: *const c_void,
    params: *mut c_void,
) -> R {
    crate::graph::default_edges(edge_data, n)?;
    let (ty, body) = type_and_body(params)?;
    let kind = match ty {
        0 => crate::graph::kernel_kind(&crate::graph::v2_of(body as *const c_void)?)?,
        1 => crate::graph::copy_kind(body.add(MEMCPY_PARAMS_AT) as *const CUDA_MEMCPY3D)?,
        2 => crate::graph::memset_kind(&*(body as *const CUDA_MEMSET_NODE_PARAMS))?,
        3 => crate::graph::host_kind(body as *const crate::graph::HostNodeParams)?,
        4 => {
            // CUDA_CHILD_GRAPH_NODE_PARAMS: the graph, then the ownership (0: clone, 1: move).
            let child = *(body as *const *mut c_void);
            let ownership = *(body.add(8) as *const u32);
            if std::ptr::eq(child, g) {
                return Err(invalid("a graph cannot be its own child"));
            }
            let c = match ownership {
                0 => crate::graph::clone_graph(graph_ref(child)?, 0)?,
                1 => {
                    graph_ref(child)?;
                    child
                }
                o => return Err(invalid(format!("graph.ownership {o}"))),
            };
            NodeKind::Child(Arc::new(ChildGraph(c as usize)))
        }
        5 => NodeKind::Empty,
        // CU_GRAPH_NODE_TYPE_WAIT_EVENT (6), _EVENT_RECORD (7): CUDA_EVENT_WAIT_NODE_PARAMS /
        // CUDA_EVENT_RECORD_NODE_PARAMS, the event.
        6 | 7 => event_kind(ty == 7, *(body as *const *mut c_void))?,
        10 => {
            return crate::graph::mem_alloc_node(
                ph,
                g,
                deps,
                n,
                body as *mut crate::graph::MemAllocNodeParams,
            )
        }
        11 => crate::graph::mem_free_kind(*(body as *const u64))?,
        12 => crate::memops::node_kind(
            "cuGraphAddNode",
            body as *const crate::memops::BatchMemOpNodeParams,
        )?,
        13 => crate::conditional::cond_kind(g, body as *mut crate::conditional::CondParams)?,
        t => {
            return Err(invalid(format!(
                "nodeParams->type {t} is not a CUgraphNodeType"
            )))
        }
    };
    add_node(ph, g, deps, n, kind)
}

/// `cuGraphAddNode`: a node of the type `nodeParams->type` names (kernel, memcpy, memset, host,
/// child graph, empty, event record and wait, memory allocation and free, batch memory
/// operation and conditional nodes; external semaphore nodes are `CUDA_ERROR_NOT_SUPPORTED`).
#[no_mangle]
pub unsafe extern "C" fn cuGraphAddNode(
    ph: *mut *mut c_void,
    g: *mut c_void,
    deps: *const *mut c_void,
    n: usize,
    params: *mut c_void,
) -> CUresult {
    guard("cuGraphAddNode", || {
        add_generic(ph, g, deps, n, std::ptr::null(), params)
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuGraphAddNode_v2(
    ph: *mut *mut c_void,
    g: *mut c_void,
    deps: *const *mut c_void,
    edge_data: *const c_void,
    n: usize,
    params: *mut c_void,
) -> CUresult {
    guard("cuGraphAddNode_v2", || {
        add_generic(ph, g, deps, n, edge_data, params)
    })
}

/// `cuGraphNodeSetParams`: new parameters of a kernel, memcpy, memset or host node (of the same
/// type as the node).
#[no_mangle]
pub unsafe extern "C" fn cuGraphNodeSetParams(node: *mut c_void, params: *mut c_void) -> CUresult {
    guard("cuGraphNodeSetParams", || {
        let (ty, body) = type_and_body(params)?;
        match ty {
            0 => crate::graph::kernel_node_set(node, &crate::graph::v2_of(body as *const c_void)?),
            1 => {
                let p = body.add(MEMCPY_PARAMS_AT) as *const CUDA_MEMCPY3D;
                match cuGraphMemcpyNodeSetParams(node, p) {
                    0 => Ok(()),
                    c => Err(crate::error::Fail(c, None)),
                }
            }
            2 => match cuGraphMemsetNodeSetParams(node, body as *const CUDA_MEMSET_NODE_PARAMS) {
                0 => Ok(()),
                c => Err(crate::error::Fail(c, None)),
            },
            3 => crate::graph::host_node_set(node, body as *const crate::graph::HostNodeParams),
            12 => crate::memops::node_set(
                "cuGraphNodeSetParams",
                node,
                body as *const crate::memops::BatchMemOpNodeParams,
            ),
            t => Err(crate::error::fail(
                CUDA_ERROR_NOT_SUPPORTED,
                format!("setting the parameters of a node of type {t} is not supported"),
            )),
        }
    })
}

/// `cuGraphExecNodeSetParams`: new parameters of a kernel, memcpy, memset or host node in an
/// executable graph (as `cuGraphExecKernelNodeSetParams` and the like).
#[no_mangle]
pub unsafe extern "C" fn cuGraphExecNodeSetParams(
    h: *mut c_void,
    node: *mut c_void,
    params: *mut c_void,
) -> CUresult {
    guard("cuGraphExecNodeSetParams", || {
        let (ty, body) = type_and_body(params)?;
        match ty {
            0 => {
                crate::graph::exec_kernel_set(h, node, &crate::graph::v2_of(body as *const c_void)?)
            }
            1 => crate::graph::exec_copy_set(
                h,
                node,
                body.add(MEMCPY_PARAMS_AT) as *const CUDA_MEMCPY3D,
            ),
            2 => match crate::graph::cuGraphExecMemsetNodeSetParams(
                h,
                node,
                body as *const CUDA_MEMSET_NODE_PARAMS,
                std::ptr::null_mut(),
            ) {
                0 => Ok(()),
                c => Err(crate::error::Fail(c, None)),
            },
            3 => crate::graph::exec_host_set(h, node, body as *const crate::graph::HostNodeParams),
            // CUDA_CHILD_GRAPH_NODE_PARAMS: the graph first.
            4 => crate::graph::exec_child_set(h, node, *(body as *const *mut c_void)),
            12 => crate::memops::exec_set(
                "cuGraphExecNodeSetParams",
                h,
                node,
                body as *const crate::memops::BatchMemOpNodeParams,
            ),
            t => Err(crate::error::fail(
                CUDA_ERROR_NOT_SUPPORTED,
                format!("updating a node of type {t} in an executable graph is not supported"),
            )),
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuGraphNodeSetEnabled(
    h: *mut c_void,
    node: *mut c_void,
    enabled: u32,
) -> CUresult {
    guard("cuGraphNodeSetEnabled", || {
        crate::graph::exec_enabled(h, node, Some(enabled != 0)).map(|_| ())
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuGraphNodeGetEnabled(
    h: *mut c_void,
    node: *mut c_void,
    enabled: *mut u32,
) -> CUresult {
    guard("cuGraphNodeGetEnabled", || {
        let o = out(enabled, "isEnabled")?;
        *o = crate::graph::exec_enabled(h, node, None)? as u32;
        Ok(())
    })
}

/// `cuGraphDestroyNode`: the node and its edges leave the graph (the nodes that depended on it
/// no longer do); executable graphs made from the graph keep it.
#[no_mangle]
pub unsafe extern "C" fn cuGraphDestroyNode(h: *mut c_void) -> CUresult {
    guard("cuGraphDestroyNode", || {
        let node = node_ref(h)?;
        let i = node.index;
        let g = &*node.graph;
        let mut list = g.nodes.lock();
        let data = list.0.remove(i);
        let handle = list.1.remove(i);
        for d in list.0.iter_mut() {
            d.deps.retain(|&p| p != i);
            for p in d.deps.iter_mut() {
                if *p > i {
                    *p -= 1;
                }
            }
        }
        for (k, &later) in list.1.iter().enumerate().skip(i) {
            (*later).index = k;
        }
        drop(list);
        // A free node destroyed: its memory is no longer freed by a graph.
        if let NodeKind::MemFree(m) = &data.kind {
            m.freed_by_graph
                .store(false, std::sync::atomic::Ordering::Release);
        }
        drop(data);
        crate::graph::free_node_handle(handle);
        Ok(())
    })
}

/// `cuGraphDebugDotPrint`: the graph in Graphviz's DOT language, written to the file at `path`:
/// one vertex per node (its type, and for kernel nodes the function's name and launch shape),
/// one arrow per edge. The flags choose nothing here.
#[no_mangle]
pub unsafe extern "C" fn cuGraphDebugDotPrint(
    h: *mut c_void,
    path: *const std::ffi::c_char,
    _flags: u32,
) -> CUresult {
    guard("cuGraphDebugDotPrint", || {
        let g = graph_ref(h)?;
        if path.is_null() {
            return Err(invalid("path is NULL"));
        }
        let path = std::ffi::CStr::from_ptr(path)
            .to_str()
            .map_err(|_| invalid("path is not UTF-8"))?;
        let mut dot = String::from("digraph cuda_graph {\n");
        {
            let list = g.nodes.lock();
            for (i, d) in list.0.iter().enumerate() {
                let label = match &d.kind {
                    NodeKind::Kernel { func, cfg, .. } => format!(
                        "kernel {}\\ngrid {:?} block {:?}",
                        func.kernel.attributes().name,
                        cfg.grid,
                        cfg.block
                    ),
                    NodeKind::Copy { bytes, rows, .. } => {
                        format!("memcpy {bytes} bytes x {} rows", rows.height * rows.depth)
                    }
                    NodeKind::Memset { value, elem, .. } => {
                        format!("memset {value:#x} ({elem}-byte elements)")
                    }
                    NodeKind::Host { .. } => "host".into(),
                    NodeKind::EventRecord(e) => format!("event record {e:#x}"),
                    NodeKind::EventWait(e) => format!("event wait {e:#x}"),
                    NodeKind::MemOps(_) => "batch memory operations".into(),
                    NodeKind::Child(_) => "child graph".into(),
                    NodeKind::Empty => "empty".into(),
                    NodeKind::MemAlloc(m) => format!("mem alloc {:#x}", m.va),
                    NodeKind::MemFree(m) => format!("mem free {:#x}", m.va),
                    NodeKind::Conditional(c) => format!(
                        "conditional {} handle {:#x}",
                        match c.ty {
                            crate::conditional::CU_GRAPH_COND_TYPE_IF => "if",
                            crate::conditional::CU_GRAPH_COND_TYPE_WHILE => "while",
                            _ => "switch",
                        },
                        c.handle.va()
                    ),
                };
                dot.push_str(&format!("  n{i} [label=\"{label}\"];\n"));
                for p in &d.deps {
                    dot.push_str(&format!("  n{p} -> n{i};\n"));
                }
            }
        }
        dot.push_str("}\n");
        std::fs::write(path, dot)
            .map_err(|e| crate::error::fail(CUDA_ERROR_OPERATING_SYSTEM, format!("{path}: {e}")))
    })
}

/// `CUgraphExecUpdateResultInfo`.
#[repr(C)]
pub struct ExecUpdateResultInfo {
    result: u32,
    error_node: *mut c_void,
    error_from_node: *mut c_void,
}

/// [`crate::graph::exec_update`], with the result and the node it concerns (a handle of graph
/// `g`, or NULL).
unsafe fn exec_update(h: *mut c_void, g: *mut c_void) -> R<(u32, *mut c_void)> {
    match crate::graph::exec_update(h, g)? {
        Ok(()) => Ok((0, std::ptr::null_mut())),
        Err(crate::graph::UpdateRefused(code, node)) => {
            let handle = node
                .and_then(|i| graph_ref(g).ok()?.nodes.lock().1.get(i).copied())
                .map_or(std::ptr::null_mut(), |n| n as *mut c_void);
            Ok((code, handle))
        }
    }
}

/// `CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE`.
const CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE: CUresult = 910;

fn update_failed(code: u32) -> crate::error::Fail {
    let why = match code {
        2 => "the graph's nodes or edges differ from the executable graph's",
        3 => "a node's type differs",
        6 => "a memory node differs",
        _ => "the update is not possible",
    };
    crate::error::fail(
        CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE,
        format!("CUgraphExecUpdateResult {code}: {why}"),
    )
}

#[no_mangle]
pub unsafe extern "C" fn cuGraphExecUpdate_v2(
    h: *mut c_void,
    g: *mut c_void,
    info: *mut ExecUpdateResultInfo,
) -> CUresult {
    guard("cuGraphExecUpdate_v2", || {
        let o = out(info, "resultInfo")?;
        let (code, node) = exec_update(h, g)?;
        *o = ExecUpdateResultInfo {
            result: code,
            error_node: node,
            error_from_node: std::ptr::null_mut(),
        };
        if code != 0 {
            return Err(update_failed(code));
        }
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuGraphExecUpdate(
    h: *mut c_void,
    g: *mut c_void,
    error_node: *mut *mut c_void,
    result: *mut u32,
) -> CUresult {
    guard("cuGraphExecUpdate", || {
        let r = out(result, "updateResult_out")?;
        let (code, node) = exec_update(h, g)?;
        *r = code;
        if let Some(e) = error_node.as_mut() {
            *e = node;
        }
        if code != 0 {
            return Err(update_failed(code));
        }
        Ok(())
    })
}

/// An event node's kind (`record`: a record node, else a wait node) for event `ev`.
unsafe fn event_kind(record: bool, ev: *mut c_void) -> R<NodeKind> {
    // NVIDIA's libcuda answers CUDA_ERROR_INVALID_VALUE to a NULL event here.
    if ev.is_null() {
        return Err(invalid("the event is NULL"));
    }
    crate::stream::event_check(ev)?;
    Ok(if record {
        NodeKind::EventRecord(ev as usize)
    } else {
        NodeKind::EventWait(ev as usize)
    })
}

/// `cuGraphAddEventRecordNode`: the event is recorded on the launch's stream once the nodes
/// recorded before it have run.
#[no_mangle]
pub unsafe extern "C" fn cuGraphAddEventRecordNode(
    ph: *mut *mut c_void,
    g: *mut c_void,
    deps: *const *mut c_void,
    n: usize,
    ev: *mut c_void,
) -> CUresult {
    guard("cuGraphAddEventRecordNode", || {
        add_node(ph, g, deps, n, event_kind(true, ev)?)
    })
}

/// `cuGraphAddEventWaitNode`: the nodes recorded after it wait for the event's last record at
/// the time of the launch.
#[no_mangle]
pub unsafe extern "C" fn cuGraphAddEventWaitNode(
    ph: *mut *mut c_void,
    g: *mut c_void,
    deps: *const *mut c_void,
    n: usize,
    ev: *mut c_void,
) -> CUresult {
    guard("cuGraphAddEventWaitNode", || {
        add_node(ph, g, deps, n, event_kind(false, ev)?)
    })
}

/// The event of event node `h` (`record`: a record node, else a wait node).
unsafe fn node_event(h: *mut c_void, record: bool) -> R<*mut c_void> {
    let node = node_ref(h)?;
    let list = (*node.graph).nodes.lock();
    match (&list.0[node.index].kind, record) {
        (NodeKind::EventRecord(e), true) | (NodeKind::EventWait(e), false) => Ok(*e as *mut c_void),
        _ => Err(invalid(if record {
            "the node is not an event record node"
        } else {
            "the node is not an event wait node"
        })),
    }
}

/// Set the event of event node `h`.
unsafe fn set_node_event(h: *mut c_void, record: bool, ev: *mut c_void) -> R {
    node_event(h, record)?;
    let kind = event_kind(record, ev)?;
    let node = node_ref(h)?;
    (*node.graph).nodes.lock().0[node.index].kind = kind;
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn cuGraphEventRecordNodeGetEvent(
    h: *mut c_void,
    ev: *mut *mut c_void,
) -> CUresult {
    guard("cuGraphEventRecordNodeGetEvent", || {
        *out(ev, "event_out")? = node_event(h, true)?;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuGraphEventWaitNodeGetEvent(
    h: *mut c_void,
    ev: *mut *mut c_void,
) -> CUresult {
    guard("cuGraphEventWaitNodeGetEvent", || {
        *out(ev, "event_out")? = node_event(h, false)?;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuGraphEventRecordNodeSetEvent(
    h: *mut c_void,
    ev: *mut c_void,
) -> CUresult {
    guard("cuGraphEventRecordNodeSetEvent", || {
        set_node_event(h, true, ev)
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuGraphEventWaitNodeSetEvent(h: *mut c_void, ev: *mut c_void) -> CUresult {
    guard("cuGraphEventWaitNodeSetEvent", || {
        set_node_event(h, false, ev)
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuGraphExecEventRecordNodeSetEvent(
    h: *mut c_void,
    node: *mut c_void,
    ev: *mut c_void,
) -> CUresult {
    guard("cuGraphExecEventRecordNodeSetEvent", || {
        crate::graph::exec_set_kind(h, node, event_kind(true, ev)?)
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuGraphExecEventWaitNodeSetEvent(
    h: *mut c_void,
    node: *mut c_void,
    ev: *mut c_void,
) -> CUresult {
    guard("cuGraphExecEventWaitNodeSetEvent", || {
        crate::graph::exec_set_kind(h, node, event_kind(false, ev)?)
    })
}
