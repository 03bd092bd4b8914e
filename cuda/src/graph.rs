//! Graphs: kernel, memcpy (device to device), memset and empty nodes with dependencies (built
//! by the graph API or by stream capture, capture.rs). Instantiation records the nodes in
//! dependency order into libtegragpu command buffers (written to GPU memory once): one per run of
//! consecutive nodes on one device (a kernel node runs on its function's device; a memset node
//! on its memory's; a memcpy node on its source's device, or its destination's when only that
//! one reaches both). A launch replays them in order: those of the stream's device on the
//! stream's queue, the others on a queue of their device that the executable graph owns, each
//! waiting on the GPU for the one before (the first for the stream's earlier work, the stream
//! for the last). Updating a kernel node of an executable graph rewrites its parameters (and
//! launch shape) in its command buffer in place; updating a memcpy node records them again.

use crate::context::current;
use crate::device::out;
use crate::error::{error_name, fail, guard, invalid, log, Fail, R};
use crate::module::{func_ref, Func};
use crate::stream::{packed_params, stream_of};
use crate::types::*;
use parking_lot::Mutex;
use std::ffi::{c_char, c_void};
use std::sync::Arc;
use tegragpu::core::{Buffer, CmdBuf, LaunchConfig, Queue, QueueKind, Signal};

const GRAPH_MAGIC: u64 = 0x7467_6375_6772_6170;
const NODE_MAGIC: u64 = 0x7467_6375_6e6f_6465;
const EXEC_MAGIC: u64 = 0x7467_6375_6578_6563;

#[derive(Clone)]
pub(crate) enum NodeKind {
    Kernel {
        func: &'static Func,
        cfg: LaunchConfig,
        params: Vec<u8>,
        /// The hints its attributes set (`cuGraphKernelNodeSetAttribute`).
        hints: Box<crate::kernel_node::KernelHints>,
    },
    Copy {
        dst: (Arc<Buffer>, u64),
        src: (Arc<Buffer>, u64),
        /// Bytes per row.
        bytes: u64,
        /// The rows and where they lie (one row for a one-dimensional copy).
        rows: Rows,
        /// A copy to or from pageable host memory: the pinned staging buffer at the host end
        /// (`src` or `dst`, laid out as that memory) is filled from that memory before the copy
        /// runs, or copied to it after, by a host step in the graph's order.
        pageable: Option<Pageable>,
        /// The parameters as given (`cuGraphMemcpyNodeGetParams`).
        params: Box<CUDA_MEMCPY3D>,
    },
    Memset {
        dst: (Arc<Buffer>, u64),
        value: u32,
        elem: u32,
        /// Bytes per row, rows and the distance between rows.
        width: u64,
        height: u64,
        pitch: u64,
    },
    Empty,
    /// A memory allocation node (`cuGraphAddMemAllocNode`, or `cuMemAllocAsync` captured): the
    /// memory is allocated when the node is made and stays at its address; running the node
    /// does nothing.
    MemAlloc(Arc<GraphMem>),
    /// A memory free node (`cuGraphAddMemFreeNode`, or `cuMemFreeAsync` captured) of a graph
    /// allocation: running it does nothing; the memory is freed once the graphs and executable
    /// graphs holding its nodes are destroyed.
    MemFree(Arc<GraphMem>),
    /// An event record node (`cuGraphAddEventRecordNode`, or `cuEventRecordWithFlags` with
    /// `CU_EVENT_RECORD_EXTERNAL` captured): the event is recorded on the launch's stream once
    /// the nodes recorded before it have run.
    EventRecord(usize),
    /// An event wait node (`cuGraphAddEventWaitNode`, or `cuStreamWaitEvent` with
    /// `CU_EVENT_WAIT_EXTERNAL` captured): the nodes recorded after it wait for the event's
    /// last record at the time of the launch.
    EventWait(usize),
    /// A batch memory operation node (`cuGraphAddBatchMemOpNode`, or `cuStreamWaitValue*`,
    /// `cuStreamWriteValue*` and `cuStreamBatchMemOp` captured): its operations are recorded on
    /// the launch's stream once the nodes recorded before it have run.
    MemOps(Arc<crate::memops::MemOpNode>),
    /// A child graph node (`cuGraphAddChildGraphNode`): a graph of its own (a clone of the one
    /// given), whose nodes run after this node's dependencies and before its dependents.
    Child(Arc<ChildGraph>),
    /// A host node (`cuGraphAddHostNode`, or `cuLaunchHostFunc` captured): `f(data)` on a host
    /// thread once the nodes recorded before it have run; the nodes recorded after it wait.
    Host {
        f: HostFn,
        data: usize,
    },
    /// A conditional node (`CU_GRAPH_NODE_TYPE_CONDITIONAL`): a host step that reads the
    /// handle's value once the nodes before it have run and runs the body it selects.
    Conditional(Arc<crate::conditional::Conditional>),
}

/// Memory of a graph's allocation node.
pub(crate) struct GraphMem {
    /// Its device address.
    pub va: u64,
    /// A free node of it was made: the memory is released with the last node that holds it.
    pub freed_by_graph: std::sync::atomic::AtomicBool,
    /// The program freed it (`cuMemFree`, `cuMemFreeAsync`) while a graph held its allocation
    /// node: released likewise. With neither, it is the program's once no graph holds the node.
    pub freed_by_program: std::sync::atomic::AtomicBool,
}

/// The program frees graph memory at `va` (`cuMemFree`, `cuMemFreeAsync`): while a graph holds
/// its allocation node (whose every launch allocates it again, at the same address), the memory
/// stays, to be released with the last node that holds it, and this answers true; once no
/// graph holds it, false (the caller frees it as any allocation).
pub(crate) fn program_frees(va: u64) -> bool {
    let live = GRAPH_MEMS
        .lock()
        .iter()
        .find(|(a, _)| *a == va)
        .and_then(|(_, w)| w.upgrade());
    match live {
        Some(m) => {
            m.freed_by_program
                .store(true, std::sync::atomic::Ordering::Release);
            true
        }
        None => false,
    }
}

/// The live graph allocations, by address (free nodes name them by address, in any graph).
static GRAPH_MEMS: Mutex<Vec<(u64, std::sync::Weak<GraphMem>)>> = Mutex::new(Vec::new());

impl Drop for GraphMem {
    fn drop(&mut self) {
        GRAPH_MEMS.lock().retain(|(va, _)| *va != self.va);
        let freed =
            |f: &std::sync::atomic::AtomicBool| f.load(std::sync::atomic::Ordering::Acquire);
        if freed(&self.freed_by_graph) || freed(&self.freed_by_program) {
            // Freed once the work queued so far is done (libtegragpu defers the release).
            drop(crate::memory::remove(self.va));
        }
    }
}

/// Bytes of one graph allocation, counted in its device's graph memory while this lives.
pub(crate) struct GraphBytes {
    dev: &'static crate::device::Dev,
    bytes: u64,
}

impl GraphBytes {
    fn new(dev: &'static crate::device::Dev, bytes: u64) -> Self {
        let mut g = dev.graph_mem.lock();
        g.0 += bytes;
        g.1 = g.1.max(g.0);
        GraphBytes { dev, bytes }
    }
}

impl Drop for GraphBytes {
    fn drop(&mut self) {
        self.dev.graph_mem.lock().0 -= self.bytes;
    }
}

/// `CUgraphMem_attribute` names, for messages.
fn graph_mem_attr_name(attr: i32) -> R<&'static str> {
    Ok(match attr {
        0 => "CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT",
        1 => "CU_GRAPH_MEM_ATTR_USED_MEM_HIGH",
        2 => "CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT",
        3 => "CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH",
        _ => {
            return Err(invalid(format!(
                "attr {attr} is not a CUgraphMem_attribute (0-3)"
            )))
        }
    })
}

/// `cuDeviceGetGraphMemAttribute`: the bytes of graph allocations of `device`. Graph memory is
/// allocated when its allocation node is made and released when its free node's graphs are
/// destroyed (or by the program, without a free node), and nothing more is reserved: the used
/// and reserved figures are the same.
#[no_mangle]
pub unsafe extern "C" fn cuDeviceGetGraphMemAttribute(
    device: CUdevice,
    attr: i32,
    value: *mut c_void,
) -> CUresult {
    guard("cuDeviceGetGraphMemAttribute", || {
        let d = crate::device::dev(device)?;
        graph_mem_attr_name(attr)?;
        let o = out(value as *mut u64, "value")?;
        let g = *d.graph_mem.lock();
        *o = if attr % 2 == 0 { g.0 } else { g.1 };
        Ok(())
    })
}

/// `cuDeviceSetGraphMemAttribute`: only the high-water marks can be set, and only to 0, which
/// restarts them from the bytes in use now.
#[no_mangle]
pub unsafe extern "C" fn cuDeviceSetGraphMemAttribute(
    device: CUdevice,
    attr: i32,
    value: *mut c_void,
) -> CUresult {
    guard("cuDeviceSetGraphMemAttribute", || {
        let d = crate::device::dev(device)?;
        let name = graph_mem_attr_name(attr)?;
        let v = (value as *const u64)
            .as_ref()
            .ok_or_else(|| invalid("value is NULL"))?;
        if attr % 2 == 0 {
            return Err(invalid(format!("{name} cannot be set")));
        }
        if *v != 0 {
            return Err(invalid(format!("{name} can only be reset to 0, not {v}")));
        }
        let mut g = d.graph_mem.lock();
        g.1 = g.0;
        Ok(())
    })
}

/// `cuDeviceGraphMemTrim`: this library keeps no graph memory in reserve, so there is nothing to
/// give back; the device is checked.
#[no_mangle]
pub unsafe extern "C" fn cuDeviceGraphMemTrim(device: CUdevice) -> CUresult {
    guard("cuDeviceGraphMemTrim", || {
        crate::device::dev(device)?;
        Ok(())
    })
}

/// A memory allocation node of `bytes` bytes in context `ctx`, and its address.
pub(crate) fn mem_alloc_kind(
    ctx: &'static crate::context::Context,
    bytes: u64,
) -> R<(NodeKind, Arc<GraphMem>)> {
    let mut a =
        crate::memory::alloc_device(ctx, bytes, tegragpu::core::MemFlags::default(), false, 0)?;
    let va = a.buf.gpu_va();
    // Nobody else knows the address yet: the record is taken out and put back counted.
    drop(crate::memory::remove(va));
    a.graph = Some(Arc::new(GraphBytes::new(ctx.dev, bytes)));
    crate::memory::insert(a);
    let m = Arc::new(GraphMem {
        va,
        freed_by_graph: std::sync::atomic::AtomicBool::new(false),
        freed_by_program: std::sync::atomic::AtomicBool::new(false),
    });
    GRAPH_MEMS.lock().push((m.va, Arc::downgrade(&m)));
    Ok((NodeKind::MemAlloc(m.clone()), m))
}

/// A memory free node of the graph allocation at `va`.
pub(crate) fn mem_free_kind(va: u64) -> R<NodeKind> {
    let mem = GRAPH_MEMS
        .lock()
        .iter()
        .find(|(a, _)| *a == va)
        .and_then(|(_, w)| w.upgrade())
        .ok_or_else(|| {
            invalid(format!(
                "dptr {va:#x} is not the address of a graph's allocation node"
            ))
        })?;
    if mem
        .freed_by_graph
        .swap(true, std::sync::atomic::Ordering::AcqRel)
    {
        return Err(invalid(format!("dptr {va:#x} already has a free node")));
    }
    Ok(NodeKind::MemFree(mem))
}

/// Add an allocation node; on failure its memory is released.
unsafe fn add_alloc_node(
    ph: *mut *mut c_void,
    g: *mut c_void,
    deps: *const *mut c_void,
    n: usize,
    (kind, mem): (NodeKind, Arc<GraphMem>),
) -> R<u64> {
    let va = mem.va;
    if let Err(e) = add_node(ph, g, deps, n, kind) {
        mem.freed_by_graph
            .store(true, std::sync::atomic::Ordering::Release);
        return Err(e);
    }
    Ok(va)
}

/// `CUDA_MEM_ALLOC_NODE_PARAMS` (the v1 layout: 120 bytes).
#[repr(C)]
pub struct MemAllocNodeParams {
    pool_props: crate::pools::CUmemPoolProps,
    access_descs: *const crate::pools::CUmemAccessDesc,
    access_desc_count: usize,
    bytesize: usize,
    dptr: u64,
}
const _: () = assert!(std::mem::size_of::<MemAllocNodeParams>() == 120);

/// `cuGraphAddMemAllocNode`: device memory of the current context's device (pinned device
/// memory, `CU_MEM_ALLOCATION_TYPE_PINNED` at a device location); its address is written to
/// `dptr`.
#[no_mangle]
pub unsafe extern "C" fn cuGraphAddMemAllocNode(
    ph: *mut *mut c_void,
    g: *mut c_void,
    deps: *const *mut c_void,
    n: usize,
    params: *mut MemAllocNodeParams,
) -> CUresult {
    guard("cuGraphAddMemAllocNode", || {
        mem_alloc_node(ph, g, deps, n, params)
    })
}

/// [`cuGraphAddMemAllocNode`].
pub(crate) unsafe fn mem_alloc_node(
    ph: *mut *mut c_void,
    g: *mut c_void,
    deps: *const *mut c_void,
    n: usize,
    params: *mut MemAllocNodeParams,
) -> R {
    {
        let p = params
            .as_mut()
            .ok_or_else(|| invalid("nodeParams is NULL"))?;
        let ctx = current()?;
        // CU_MEM_ALLOCATION_TYPE_PINNED (1) at CU_MEM_LOCATION_TYPE_DEVICE (1) of this device.
        let l = &p.pool_props.location;
        if p.pool_props.alloc_type != 1 || l.type_ != 1 || l.id != ctx.dev.ordinal {
            return Err(fail(
                CUDA_ERROR_NOT_SUPPORTED,
                format!(
                    "poolProps: allocation type {}, location type {} id {}: graph allocations are device memory of the current context's device ({})",
                    p.pool_props.alloc_type, l.type_, l.id, ctx.dev.ordinal
                ),
            ));
        }
        if p.bytesize == 0 {
            return Err(invalid("bytesize is 0"));
        }
        p.dptr = add_alloc_node(ph, g, deps, n, mem_alloc_kind(ctx, p.bytesize as u64)?)?;
        Ok(())
    }
}

/// `cuGraphAddMemFreeNode`: frees, as far as the graph's work goes, the memory of a graph's
/// allocation node (this graph's or another's).
#[no_mangle]
pub unsafe extern "C" fn cuGraphAddMemFreeNode(
    ph: *mut *mut c_void,
    g: *mut c_void,
    deps: *const *mut c_void,
    n: usize,
    dptr: u64,
) -> CUresult {
    guard("cuGraphAddMemFreeNode", || {
        graph_ref(g)?;
        let kind = mem_free_kind(dptr)?;
        add_node(ph, g, deps, n, kind)
    })
}

/// `cuGraphMemAllocNodeGetParams`: the allocation's size and address, device memory of its
/// context's device.
#[no_mangle]
pub unsafe extern "C" fn cuGraphMemAllocNodeGetParams(
    node: *mut c_void,
    params: *mut MemAllocNodeParams,
) -> CUresult {
    guard("cuGraphMemAllocNodeGetParams", || {
        let o = out(params, "params_out")?;
        let n = node_ref(node)?;
        let nodes = (*n.graph).nodes.lock();
        let NodeKind::MemAlloc(m) = &nodes.0[n.index].kind else {
            return Err(invalid("the node is not a memory allocation node"));
        };
        let (a, _) = crate::memory::find_va(m.va)
            .ok_or_else(|| invalid(format!("the allocation at {:#x} has been freed", m.va)))?;
        std::ptr::write_bytes(o as *mut MemAllocNodeParams, 0, 1);
        o.pool_props.alloc_type = 1;
        o.pool_props.location.type_ = 1;
        o.pool_props.location.id = a.ctx.dev.ordinal;
        o.bytesize = a.size as usize;
        o.dptr = m.va;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuGraphMemFreeNodeGetParams(
    node: *mut c_void,
    dptr: *mut u64,
) -> CUresult {
    guard("cuGraphMemFreeNodeGetParams", || {
        let o = out(dptr, "dptr_out")?;
        let n = node_ref(node)?;
        let nodes = (*n.graph).nodes.lock();
        match &nodes.0[n.index].kind {
            NodeKind::MemFree(m) => {
                *o = m.va;
                Ok(())
            }
            _ => Err(invalid("the node is not a memory free node")),
        }
    })
}

/// The rows of a memcpy node: `height` rows per slice, `depth` slices; row `y` of slice `z`
/// lies `z * slice + y * pitch` bytes after each end's start.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct Rows {
    pub height: u64,
    pub depth: u64,
    pub src_pitch: u64,
    pub src_slice: u64,
    pub dst_pitch: u64,
    pub dst_slice: u64,
}

impl Rows {
    /// One row.
    pub(crate) const ONE: Rows = Rows {
        height: 1,
        depth: 1,
        src_pitch: 0,
        src_slice: 0,
        dst_pitch: 0,
        dst_slice: 0,
    };

    /// The (source, destination) offsets of each row from the ends' starts.
    fn offsets(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        (0..self.depth).flat_map(move |z| {
            (0..self.height).map(move |y| {
                (
                    z * self.src_slice + y * self.src_pitch,
                    z * self.dst_slice + y * self.dst_pitch,
                )
            })
        })
    }
}

/// The graph of a child graph node: owned by the node, destroyed with it.
pub(crate) struct ChildGraph(pub(crate) usize);

impl Drop for ChildGraph {
    fn drop(&mut self) {
        // SAFETY: the node owns this graph handle.
        unsafe { cuGraphDestroy(self.0 as *mut c_void) };
    }
}

/// A host node's function (`CUhostFn`).
pub(crate) type HostFn = unsafe extern "C" fn(*mut c_void);

/// The pageable host end of a memcpy node.
#[derive(Clone, Copy)]
pub(crate) enum Pageable {
    /// Host → device: the bytes at this address fill the staging buffer (`src`) by a host
    /// step once the nodes before the copy have run.
    From(usize),
    /// Device → host: the staging buffer (`dst`) is copied to this address by a host step once
    /// the copy has run, before the nodes after it.
    To(usize),
}

pub struct Node {
    magic: u64,
    pub(crate) graph: *const Graph,
    pub(crate) index: usize,
    /// The `kernelParams` array `cuGraphKernelNodeGetParams` last gave out.
    pub(crate) args: Mutex<Vec<usize>>,
}

pub(crate) struct NodeData {
    pub(crate) kind: NodeKind,
    pub(crate) deps: Vec<usize>,
}

pub struct Graph {
    magic: u64,
    /// The nodes (by index) and their handles (same index).
    pub(crate) nodes: Mutex<(Vec<NodeData>, Vec<*mut Node>)>,
    /// The graph this one was cloned from (`cuGraphClone`; 0 for none), for
    /// `cuGraphNodeFindInClone`.
    pub(crate) cloned_from: usize,
    /// Its conditional handles (`cuGraphConditionalHandleCreate`).
    pub(crate) handles: Mutex<Vec<Arc<crate::conditional::CondHandle>>>,
    /// The graph whose conditional node this graph is a body of (0: none).
    pub(crate) body_of: usize,
}

// SAFETY: node handles are owned by the graph and only dereferenced under its lock or while the
// graph is alive (as CUDA requires of its callers).
unsafe impl Send for Graph {}
unsafe impl Sync for Graph {}

pub(crate) unsafe fn graph_ref(h: *mut c_void) -> R<&'static Graph> {
    crate::device::check_init()?;
    let g = (h as *const Graph)
        .as_ref()
        .ok_or_else(|| fail(CUDA_ERROR_INVALID_VALUE, "the graph handle is NULL"))?;
    if g.magic != GRAPH_MAGIC {
        return Err(fail(
            CUDA_ERROR_INVALID_VALUE,
            format!("{h:?} is not a graph"),
        ));
    }
    Ok(g)
}

pub(crate) unsafe fn node_ref(h: *mut c_void) -> R<&'static Node> {
    let n = (h as *const Node)
        .as_ref()
        .ok_or_else(|| fail(CUDA_ERROR_INVALID_VALUE, "the node handle is NULL"))?;
    if n.magic != NODE_MAGIC {
        return Err(fail(
            CUDA_ERROR_INVALID_VALUE,
            format!("{h:?} is not a graph node"),
        ));
    }
    Ok(n)
}

#[no_mangle]
pub unsafe extern "C" fn cuGraphCreate(ph: *mut *mut c_void, flags: u32) -> CUresult {
    guard("cuGraphCreate", || {
        let p = out(ph, "phGraph")?;
        if flags != 0 {
            return Err(invalid(format!("flags {flags:#x}: must be 0")));
        }
        current()?;
        *p = new_graph();
        Ok(())
    })
}

/// `cuGraphClone`: a new graph with a copy of each node and the same dependencies.
#[no_mangle]
pub unsafe extern "C" fn cuGraphClone(ph: *mut *mut c_void, orig: *mut c_void) -> CUresult {
    guard("cuGraphClone", || {
        let p = out(ph, "phGraphClone")?;
        *p = clone_graph(graph_ref(orig)?, 0)?;
        Ok(())
    })
}

/// A new graph with a copy of each node of `g` (child graphs cloned too) and the same
/// dependencies, remembering it was cloned from `g`. `depth`: how deep in child graphs.
pub(crate) unsafe fn clone_graph(g: &Graph, depth: u32) -> R<*mut c_void> {
    if depth > 64 {
        return Err(invalid("child graphs nest more than 64 deep"));
    }
    let copy: Vec<NodeData> = g
        .nodes
        .lock()
        .0
        .iter()
        .map(|d| {
            Ok(NodeData {
                kind: match &d.kind {
                    NodeKind::Child(c) => NodeKind::Child(Arc::new(ChildGraph(clone_graph(
                        graph_ref(c.0 as *mut c_void)?,
                        depth + 1,
                    )?
                        as usize))),
                    NodeKind::Conditional(_) => return Err(fail(
                        CUDA_ERROR_NOT_SUPPORTED,
                        "a graph with conditional nodes cannot be cloned (nor be a child graph)",
                    )),
                    k => k.clone(),
                },
                deps: d.deps.clone(),
            })
        })
        .collect::<R<_>>()?;
    let h = Box::into_raw(Box::new(Graph {
        magic: GRAPH_MAGIC,
        nodes: Mutex::new((Vec::new(), Vec::new())),
        cloned_from: g as *const Graph as usize,
        handles: Mutex::new(g.handles.lock().clone()),
        body_of: 0,
    }));
    let c = &*h;
    let mut nodes = c.nodes.lock();
    for (index, d) in copy.into_iter().enumerate() {
        nodes.0.push(d);
        let node = Box::into_raw(Box::new(Node {
            magic: NODE_MAGIC,
            graph: c,
            index,
            args: Mutex::new(Vec::new()),
        }));
        nodes.1.push(node);
    }
    Ok(h as *mut c_void)
}

/// `CUDA_HOST_NODE_PARAMS` (and the first two fields of `_v2`).
#[repr(C)]
pub struct HostNodeParams {
    f: Option<HostFn>,
    data: *mut c_void,
}

pub(crate) unsafe fn host_kind(p: *const HostNodeParams) -> R<NodeKind> {
    let p = p.as_ref().ok_or_else(|| invalid("nodeParams is NULL"))?;
    let f = p.f.ok_or_else(|| invalid("nodeParams->fn is NULL"))?;
    Ok(NodeKind::Host {
        f,
        data: p.data as usize,
    })
}

/// `cuGraphAddHostNode`: `fn(userData)` on a host thread when the graph reaches the node. The
/// nodes recorded before it (dependencies first) complete before it runs; those recorded after
/// it wait for it to return.
#[no_mangle]
pub unsafe extern "C" fn cuGraphAddHostNode(
    ph: *mut *mut c_void,
    g: *mut c_void,
    deps: *const *mut c_void,
    n: usize,
    params: *const HostNodeParams,
) -> CUresult {
    guard("cuGraphAddHostNode", || {
        add_node(ph, g, deps, n, host_kind(params)?)
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuGraphHostNodeGetParams(
    node: *mut c_void,
    params: *mut HostNodeParams,
) -> CUresult {
    guard("cuGraphHostNodeGetParams", || {
        let o = out(params, "nodeParams")?;
        let n = node_ref(node)?;
        let nodes = (*n.graph).nodes.lock();
        match nodes.0[n.index].kind {
            NodeKind::Host { f, data } => {
                *o = HostNodeParams {
                    f: Some(f),
                    data: data as *mut c_void,
                };
                Ok(())
            }
            _ => Err(invalid("the node is not a host node")),
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuGraphHostNodeSetParams(
    node: *mut c_void,
    params: *const HostNodeParams,
) -> CUresult {
    guard("cuGraphHostNodeSetParams", || host_node_set(node, params))
}

/// [`cuGraphHostNodeSetParams`].
pub(crate) unsafe fn host_node_set(node: *mut c_void, params: *const HostNodeParams) -> R {
    let kind = host_kind(params)?;
    let n = node_ref(node)?;
    let mut nodes = (*n.graph).nodes.lock();
    let k = &mut nodes.0[n.index].kind;
    if !matches!(k, NodeKind::Host { .. }) {
        return Err(invalid("the node is not a host node"));
    }
    *k = kind;
    Ok(())
}

/// `cuGraphExecHostNodeSetParams`: the function and data later launches call.
#[no_mangle]
pub unsafe extern "C" fn cuGraphExecHostNodeSetParams(
    h: *mut c_void,
    node: *mut c_void,
    params: *const HostNodeParams,
) -> CUresult {
    guard("cuGraphExecHostNodeSetParams", || {
        exec_host_set(h, node, params)
    })
}

/// [`cuGraphExecHostNodeSetParams`].
pub(crate) unsafe fn exec_host_set(
    h: *mut c_void,
    node: *mut c_void,
    params: *const HostNodeParams,
) -> R {
    let e = exec_ref(h)?;
    let kind = host_kind(params)?;
    let (mut st, i) = exec_node(e, node)?;
    if !matches!(st.kinds[i], NodeKind::Host { .. }) {
        return Err(invalid("the node is not a host node"));
    }
    st.kinds[i] = kind;
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn cuGraphDestroy(h: *mut c_void) -> CUresult {
    guard("cuGraphDestroy", || {
        let g = graph_ref(h)?;
        crate::numba_extras::owner_destroyed(h);
        let mut b = Box::from_raw(g as *const Graph as *mut Graph);
        b.magic = 0;
        for n in b.nodes.get_mut().1.drain(..) {
            let mut nb = Box::from_raw(n);
            nb.magic = 0;
        }
        Ok(())
    })
}

/// Free a node handle that left its graph (`cuGraphDestroyNode`).
pub(crate) unsafe fn free_node_handle(h: *mut Node) {
    let mut b = Box::from_raw(h);
    b.magic = 0;
}

/// `CUgraphEdgeData` entries (`n`, or none where the pointer is NULL) other than the default
/// (all zero) are `CUDA_ERROR_NOT_SUPPORTED`: this library makes full dependencies only.
pub(crate) unsafe fn default_edges(edge_data: *const c_void, n: usize) -> R {
    if edge_data.is_null() {
        return Ok(());
    }
    let bytes = std::slice::from_raw_parts(edge_data as *const u8, 8 * n);
    if bytes.iter().any(|&b| b != 0) {
        return Err(fail(
            CUDA_ERROR_NOT_SUPPORTED,
            "edge data other than the default is not supported",
        ));
    }
    Ok(())
}

/// A new empty graph (`cuGraphCreate`, `cuStreamBeginCapture`).
pub(crate) fn new_graph() -> *mut c_void {
    Box::into_raw(Box::new(Graph {
        magic: GRAPH_MAGIC,
        nodes: Mutex::new((Vec::new(), Vec::new())),
        cloned_from: 0,
        handles: Mutex::new(Vec::new()),
        body_of: 0,
    })) as *mut c_void
}

/// Whether node `n` belongs to graph `g`.
pub(crate) unsafe fn node_in(n: *mut c_void, g: *mut c_void) -> R<bool> {
    Ok(std::ptr::eq(node_ref(n)?.graph, graph_ref(g)?))
}

/// Whether every node of `nodes` is one of `of` or a node they depend on (directly or not);
/// all are nodes of graph `g`.
pub(crate) unsafe fn reached_from(g: *mut c_void, nodes: &[usize], of: &[usize]) -> R<bool> {
    let g = graph_ref(g)?;
    let list = g.nodes.lock();
    let mut seen = vec![false; list.0.len()];
    let mut todo: Vec<usize> = of
        .iter()
        .map(|&h| node_ref(h as *mut c_void).map(|n| n.index))
        .collect::<R<_>>()?;
    while let Some(i) = todo.pop() {
        if !std::mem::replace(&mut seen[i], true) {
            todo.extend(list.0[i].deps.iter().copied());
        }
    }
    for &h in nodes {
        if !seen[node_ref(h as *mut c_void)?.index] {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Add a node with dependencies `deps[..n]` to graph `h`.
pub(crate) unsafe fn add_node(
    ph: *mut *mut c_void,
    h: *mut c_void,
    deps: *const *mut c_void,
    n: usize,
    kind: NodeKind,
) -> R {
    let p = out(ph, "phGraphNode")?;
    let g = graph_ref(h)?;
    if n > 0 && deps.is_null() {
        return Err(invalid(format!(
            "dependencies is NULL with {n} dependencies"
        )));
    }
    let mut dep_idx = Vec::with_capacity(n);
    for i in 0..n {
        let d = node_ref(*deps.add(i))?;
        if !std::ptr::eq(d.graph, g) {
            return Err(invalid(format!(
                "dependency {i} is a node of another graph"
            )));
        }
        if !dep_idx.contains(&d.index) {
            dep_idx.push(d.index);
        }
    }
    let mut nodes = g.nodes.lock();
    let index = nodes.0.len();
    nodes.0.push(NodeData {
        kind,
        deps: dep_idx,
    });
    let node = Box::into_raw(Box::new(Node {
        magic: NODE_MAGIC,
        graph: g,
        index,
        args: Mutex::new(Vec::new()),
    }));
    nodes.1.push(node);
    *p = node as *mut c_void;
    Ok(())
}

/// A kernel node's function, launch shape and packed parameters.
pub(crate) unsafe fn kernel_kind(p: &CUDA_KERNEL_NODE_PARAMS_v1) -> R<NodeKind> {
    let func = func_ref(p.func)?;
    let cfg = LaunchConfig {
        grid: [p.gridDimX, p.gridDimY, p.gridDimZ],
        block: [p.blockDimX, p.blockDimY, p.blockDimZ],
        dynamic_shared_bytes: p.sharedMemBytes,
        cooperative: false,
        concurrent: false,
        cluster: [0; 3],
    };
    func.check_shared(p.sharedMemBytes)?;
    let a = func.kernel.attributes();
    let mut params = vec![0u8; a.param_bytes as usize];
    if !p.kernelParams.is_null() {
        for (i, pa) in a.params.iter().enumerate() {
            let src = *p.kernelParams.add(i) as *const u8;
            if src.is_null() {
                return Err(invalid(format!("kernelParams[{i}] is NULL")));
            }
            std::ptr::copy_nonoverlapping(
                src,
                params.as_mut_ptr().add(pa.offset as usize),
                pa.size as usize,
            );
        }
    } else if !p.extra.is_null() {
        params.copy_from_slice(packed_params(p.extra, a.param_bytes as usize)?);
    } else if !a.params.is_empty() {
        return Err(invalid(format!(
            "kernel \"{}\" takes {} parameters; kernelParams and extra are both NULL",
            a.name,
            a.params.len()
        )));
    }
    Ok(NodeKind::Kernel {
        func,
        cfg,
        params,
        hints: Default::default(),
    })
}

/// A kernel node of a captured launch: `f` with `cfg` (its cooperative and cluster settings
/// kept) and `kernelParams` or `extra`.
pub(crate) unsafe fn launch_kind(
    f: *mut c_void,
    cfg: &LaunchConfig,
    params: *mut *mut c_void,
    extra: *mut *mut c_void,
) -> R<NodeKind> {
    let mut kind = kernel_kind(&params_v1(f, cfg, params, extra))?;
    if let NodeKind::Kernel { cfg: c, .. } = &mut kind {
        *c = *cfg;
    }
    Ok(kind)
}

/// The v1 kernel node parameters of function `f` launched with `cfg`.
pub(crate) fn params_v1(
    f: *mut c_void,
    cfg: &LaunchConfig,
    params: *mut *mut c_void,
    extra: *mut *mut c_void,
) -> CUDA_KERNEL_NODE_PARAMS_v1 {
    CUDA_KERNEL_NODE_PARAMS_v1 {
        func: f,
        gridDimX: cfg.grid[0],
        gridDimY: cfg.grid[1],
        gridDimZ: cfg.grid[2],
        blockDimX: cfg.block[0],
        blockDimY: cfg.block[1],
        blockDimZ: cfg.block[2],
        sharedMemBytes: cfg.dynamic_shared_bytes,
        kernelParams: params,
        extra,
    }
}

unsafe fn v1_of(p: *const c_void) -> R<&'static CUDA_KERNEL_NODE_PARAMS_v1> {
    (p as *const CUDA_KERNEL_NODE_PARAMS_v1)
        .as_ref()
        .ok_or_else(|| invalid("nodeParams is NULL"))
}

/// The v1 parameters of v2 ones: a library kernel (`kern`, with `func` NULL) stands for its
/// function on the current context's device.
pub(crate) unsafe fn v2_of(p: *const c_void) -> R<CUDA_KERNEL_NODE_PARAMS_v1> {
    let v2 = (p as *const CUDA_KERNEL_NODE_PARAMS_v2)
        .as_ref()
        .ok_or_else(|| invalid("nodeParams is NULL"))?;
    let mut v1 = v2.v1;
    if v1.func.is_null() && !v2.kern.is_null() {
        v1.func = v2.kern;
    }
    Ok(v1)
}

#[no_mangle]
pub unsafe extern "C" fn cuGraphAddKernelNode(
    ph: *mut *mut c_void,
    g: *mut c_void,
    deps: *const *mut c_void,
    n: usize,
    params: *const c_void,
) -> CUresult {
    guard("cuGraphAddKernelNode", || {
        add_node(ph, g, deps, n, kernel_kind(v1_of(params)?)?)
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuGraphAddKernelNode_v2(
    ph: *mut *mut c_void,
    g: *mut c_void,
    deps: *const *mut c_void,
    n: usize,
    params: *const c_void,
) -> CUresult {
    guard("cuGraphAddKernelNode_v2", || {
        add_node(ph, g, deps, n, kernel_kind(&v2_of(params)?)?)
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuGraphAddEmptyNode(
    ph: *mut *mut c_void,
    g: *mut c_void,
    deps: *const *mut c_void,
    n: usize,
) -> CUresult {
    guard("cuGraphAddEmptyNode", || {
        add_node(ph, g, deps, n, NodeKind::Empty)
    })
}

/// A memset node (`CUDA_MEMSET_NODE_PARAMS`): `height` rows of `width` elements of
/// `elementSize` (1, 2 or 4) bytes, `pitch` bytes apart, in memory allocated by this library.
pub(crate) unsafe fn memset_kind(p: &CUDA_MEMSET_NODE_PARAMS) -> R<NodeKind> {
    let elem = p.elementSize;
    if !matches!(elem, 1 | 2 | 4) {
        return Err(invalid(format!("elementSize {elem}: must be 1, 2 or 4")));
    }
    if p.width == 0 || p.height == 0 {
        return Err(invalid(format!(
            "width {} and height {}: neither may be 0",
            p.width, p.height
        )));
    }
    let width = (p.width as u64)
        .checked_mul(elem as u64)
        .ok_or_else(|| invalid(format!("width {} overflows", p.width)))?;
    let height = p.height as u64;
    let pitch = if height > 1 { p.pitch as u64 } else { width };
    if pitch < width {
        return Err(invalid(format!(
            "pitch {pitch} is less than the row's {width} bytes"
        )));
    }
    if p.dst % elem as u64 != 0 || (height > 1 && pitch % elem as u64 != 0) {
        return Err(invalid(format!(
            "dst {:#x} (pitch {pitch}) is not aligned to the {elem}-byte elements",
            p.dst
        )));
    }
    let extent = pitch
        .checked_mul(height - 1)
        .and_then(|x| x.checked_add(width))
        .ok_or_else(|| invalid("the memset's extent overflows"))?;
    let (a, off) = crate::memory::find_va(p.dst).ok_or_else(|| {
        invalid(format!(
            "dst {:#x} is not memory allocated by this library",
            p.dst
        ))
    })?;
    if off + extent > a.size {
        return Err(invalid(format!(
            "{extent} bytes at {:#x} run past its allocation",
            p.dst
        )));
    }
    Ok(NodeKind::Memset {
        dst: (a.buf, off),
        value: p.value,
        elem,
        width,
        height,
        pitch,
    })
}

/// A copy node of `n` bytes between two addresses of memory allocated by this library (stream
/// capture of `cuMemcpyDtoDAsync`).
pub(crate) fn copy_va_kind(dst: u64, src: u64, n: u64) -> R<NodeKind> {
    let find = |va: u64, what: &str| -> R<(Arc<Buffer>, u64)> {
        let (a, off) = crate::memory::find_va(va).ok_or_else(|| {
            invalid(format!(
                "{what} {va:#x} is not memory allocated by this library"
            ))
        })?;
        if off + n > a.size {
            return Err(invalid(format!(
                "{what}: {n} bytes at {va:#x} run past its allocation"
            )));
        }
        Ok((a.buf, off))
    };
    if n == 0 {
        return Err(invalid("the copy has 0 bytes"));
    }
    if dst < src + n && src < dst + n {
        return Err(fail(
            CUDA_ERROR_NOT_SUPPORTED,
            format!("overlapping copy [{src:#x}, +{n}) to [{dst:#x}, +{n}) in a graph"),
        ));
    }
    // SAFETY: CUDA_MEMCPY3D is plain data; all zeros is a valid value.
    let mut params: Box<CUDA_MEMCPY3D> = Box::new(unsafe { std::mem::zeroed() });
    (params.srcMemoryType, params.srcDevice) = (CU_MEMORYTYPE_DEVICE, src);
    (params.dstMemoryType, params.dstDevice) = (CU_MEMORYTYPE_DEVICE, dst);
    (params.WidthInBytes, params.Height, params.Depth) = (n as usize, 1, 1);
    Ok(NodeKind::Copy {
        dst: find(dst, "dstDevice")?,
        src: find(src, "srcDevice")?,
        bytes: n,
        rows: Rows::ONE,
        pageable: None,
        params,
    })
}

/// A memcpy node of `n` bytes between host address `host` and device address `dev` (`to_device`:
/// host → device), for stream capture of `cuMemcpyHtoDAsync`, `cuMemcpyDtoHAsync` and
/// `cuMemcpyAsync`: pinned and registered host memory is copied by the GPU, other host memory
/// is staged when the graph runs.
pub(crate) fn host_copy_kind(dev: u64, host: usize, n: u64, to_device: bool) -> R<NodeKind> {
    // SAFETY: CUDA_MEMCPY3D is plain data; all zeros is a valid value.
    let mut p: CUDA_MEMCPY3D = unsafe { std::mem::zeroed() };
    p.WidthInBytes = n as usize;
    p.Height = 1;
    p.Depth = 1;
    if to_device {
        (p.srcMemoryType, p.srcHost) = (CU_MEMORYTYPE_HOST, host as *const c_void);
        (p.dstMemoryType, p.dstDevice) = (CU_MEMORYTYPE_DEVICE, dev);
    } else {
        (p.srcMemoryType, p.srcDevice) = (CU_MEMORYTYPE_DEVICE, dev);
        (p.dstMemoryType, p.dstHost) = (CU_MEMORYTYPE_HOST, host as *mut c_void);
    }
    // SAFETY: `p` is a valid CUDA_MEMCPY3D.
    unsafe { copy_kind(&p) }
}

#[no_mangle]
pub unsafe extern "C" fn cuGraphAddMemsetNode(
    ph: *mut *mut c_void,
    g: *mut c_void,
    deps: *const *mut c_void,
    n: usize,
    params: *const CUDA_MEMSET_NODE_PARAMS,
    _ctx: *mut c_void,
) -> CUresult {
    guard("cuGraphAddMemsetNode", || {
        let p = params
            .as_ref()
            .ok_or_else(|| invalid("memsetParams is NULL"))?;
        add_node(ph, g, deps, n, memset_kind(p)?)
    })
}

/// A memcpy node: a copy of rows (one, a pitched 2-D block or a 3-D block of slices) between
/// memory allocated by this library (device, managed or pinned host memory), host memory
/// registered with it for the GPU, and pageable host memory (one end at most: through a pinned
/// staging buffer laid out as that memory, filled before the copy runs or copied out after it,
/// see [`Pageable`]). Arrays are refused.
pub(crate) unsafe fn copy_kind(p: *const CUDA_MEMCPY3D) -> R<NodeKind> {
    let p = p.as_ref().ok_or_else(|| invalid("copyParams is NULL"))?;
    if p.srcLOD != 0 || p.dstLOD != 0 {
        return Err(invalid("srcLOD and dstLOD must be 0"));
    }
    let n = p.WidthInBytes as u64;
    let (height, depth) = (p.Height.max(1) as u64, p.Depth.max(1) as u64);
    if n == 0 {
        return Err(invalid("WidthInBytes is 0"));
    }
    // Each end: its start (x, y and z applied), pitch, bytes per slice and extent.
    let geometry = |what: &str, x: usize, y: usize, z: usize, pitch: usize, rows: usize| {
        let (pitch, rows) = (pitch as u64, rows as u64);
        if (height > 1 || y > 0 || depth > 1 || z > 0) && pitch < n {
            return Err(invalid(format!(
                "{what}Pitch {pitch} is less than WidthInBytes {n}"
            )));
        }
        if (depth > 1 || z > 0) && rows < height {
            return Err(invalid(format!(
                "{what}Height {rows} is less than Height {height}"
            )));
        }
        let slice = pitch
            .checked_mul(rows)
            .ok_or_else(|| invalid(format!("{what}: the slice size overflows")))?;
        let start = (y as u64)
            .checked_mul(pitch)
            .and_then(|o| o.checked_add((z as u64).checked_mul(slice)?))
            .and_then(|o| o.checked_add(x as u64))
            .ok_or_else(|| invalid(format!("{what}: the start offset overflows")))?;
        let extent = (depth - 1)
            .checked_mul(slice)
            .and_then(|e| e.checked_add((height - 1).checked_mul(pitch)?))
            .and_then(|e| e.checked_add(n))
            .ok_or_else(|| invalid(format!("{what}: the copy's extent overflows")))?;
        Ok((start, pitch, slice, extent))
    };
    let (s0, src_pitch, src_slice, src_extent) = geometry(
        "src",
        p.srcXInBytes,
        p.srcY,
        p.srcZ,
        p.srcPitch,
        p.srcHeight,
    )?;
    let (d0, dst_pitch, dst_slice, dst_extent) = geometry(
        "dst",
        p.dstXInBytes,
        p.dstY,
        p.dstZ,
        p.dstPitch,
        p.dstHeight,
    )?;
    let rows = Rows {
        height,
        depth,
        src_pitch,
        src_slice,
        dst_pitch,
        dst_slice,
    };
    let src = copy_end(
        "src",
        p.srcMemoryType,
        p.srcDevice,
        p.srcHost as usize,
        s0,
        src_extent,
    )?;
    let dst = copy_end(
        "dst",
        p.dstMemoryType,
        p.dstDevice,
        p.dstHost as usize,
        d0,
        dst_extent,
    )?;
    // Pageable host memory: through a pinned staging buffer of the other end's device, as long
    // as the pageable end's extent.
    let staging = |other: &(Arc<Buffer>, u64), extent: u64| -> R<(Arc<Buffer>, u64)> {
        let b = other.0.device().alloc(
            extent,
            tegragpu::core::MemFlags {
                cpu_cached: true,
                ..Default::default()
            },
        )?;
        b.map_cpu()?;
        Ok((Arc::new(b), 0))
    };
    let (src, dst, pageable) = match (src, dst) {
        (End::Mem(s), End::Mem(d)) => (s, d, None),
        (End::Pageable(a), End::Mem(d)) => {
            (staging(&d, src_extent)?, d, Some(Pageable::From(a)))
        }
        (End::Mem(s), End::Pageable(a)) => {
            let st = staging(&s, dst_extent)?;
            (s, st, Some(Pageable::To(a)))
        }
        (End::Pageable(a), End::Pageable(b)) => {
            return Err(fail(
                CUDA_ERROR_NOT_SUPPORTED,
                format!(
                    "a memcpy node between two pageable host addresses ({a:#x} to {b:#x}): one end must be GPU-visible memory"
                ),
            ))
        }
    };
    if Arc::ptr_eq(&src.0, &dst.0) && dst.1 < src.1 + src_extent && src.1 < dst.1 + dst_extent {
        return Err(fail(
            CUDA_ERROR_NOT_SUPPORTED,
            format!(
                "overlapping copy from offset {} ({src_extent} bytes) to offset {} ({dst_extent} bytes) of one allocation in a graph",
                src.1, dst.1
            ),
        ));
    }
    Ok(NodeKind::Copy {
        dst,
        src,
        bytes: n,
        rows,
        pageable,
        params: Box::new(*p),
    })
}

/// One end of a memcpy node: memory the GPU reaches (a buffer and offset), or pageable host
/// memory (its address).
enum End {
    Mem((Arc<Buffer>, u64)),
    Pageable(usize),
}

/// One end of a memcpy node: the buffer and offset of `n` bytes at the address the memory type
/// names (`CU_MEMORYTYPE_DEVICE`: `device`; `_HOST`: `host`; `_UNIFIED`: `device`, which may be
/// a host address), plus `x` bytes.
fn copy_end(what: &str, kind: u32, device: u64, host: usize, x: u64, n: u64) -> R<End> {
    let inside = |b: Arc<Buffer>, off: u64, size: u64, at: u64| -> R<(Arc<Buffer>, u64)> {
        if off + n > size {
            return Err(invalid(format!(
                "{what}: {n} bytes at {at:#x} run past its allocation ({size} bytes)"
            )));
        }
        Ok((b, off))
    };
    let by_host = |p: usize| -> Option<R<(Arc<Buffer>, u64)>> {
        if let Some((a, off)) = crate::memory::find_host(p) {
            return Some(inside(a.buf, off, a.size, p as u64));
        }
        let (b, off, len) = crate::hostreg::find_mapped_buffer(p)?;
        Some(inside(b, off, len, p as u64))
    };
    let by_device = |va: u64| -> Option<R<(Arc<Buffer>, u64)>> {
        let (a, off) = crate::memory::find_va(va)?;
        Some(inside(a.buf, off, a.size, va))
    };
    let found = match kind {
        CU_MEMORYTYPE_DEVICE => by_device(device + x),
        CU_MEMORYTYPE_HOST => by_host(host + x as usize),
        CU_MEMORYTYPE_UNIFIED => by_device(device + x).or_else(|| by_host((device + x) as usize)),
        CU_MEMORYTYPE_ARRAY => {
            return Err(fail(
                CUDA_ERROR_NOT_SUPPORTED,
                format!("{what}: memcpy nodes do not copy arrays"),
            ))
        }
        t => return Err(invalid(format!("{what}MemoryType {t}"))),
    };
    match found {
        Some(r) => r.map(End::Mem),
        // Host memory the GPU does not reach: pageable.
        None if kind == CU_MEMORYTYPE_HOST => Ok(End::Pageable(host + x as usize)),
        None if kind == CU_MEMORYTYPE_UNIFIED => Ok(End::Pageable((device + x) as usize)),
        None => Err(invalid(format!(
            "{what}Device {:#x} is not memory allocated by this library",
            device + x
        ))),
    }
}

#[no_mangle]
pub unsafe extern "C" fn cuGraphAddMemcpyNode(
    ph: *mut *mut c_void,
    g: *mut c_void,
    deps: *const *mut c_void,
    n: usize,
    params: *const CUDA_MEMCPY3D,
    _ctx: *mut c_void,
) -> CUresult {
    guard("cuGraphAddMemcpyNode", || {
        add_node(ph, g, deps, n, copy_kind(params)?)
    })
}

unsafe fn add_deps(
    h: *mut c_void,
    from: *const *mut c_void,
    to: *const *mut c_void,
    n: usize,
) -> R {
    let g = graph_ref(h)?;
    if n > 0 && (from.is_null() || to.is_null()) {
        return Err(invalid("from or to is NULL"));
    }
    let mut nodes = g.nodes.lock();
    for i in 0..n {
        let (a, b) = (node_ref(*from.add(i))?, node_ref(*to.add(i))?);
        if !std::ptr::eq(a.graph, g) || !std::ptr::eq(b.graph, g) {
            return Err(invalid(format!("edge {i} joins nodes of another graph")));
        }
        if a.index == b.index {
            return Err(invalid(format!("edge {i} joins a node to itself")));
        }
        let d = &mut nodes.0[b.index].deps;
        if !d.contains(&a.index) {
            d.push(a.index);
        }
    }
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn cuGraphAddDependencies(
    g: *mut c_void,
    from: *const *mut c_void,
    to: *const *mut c_void,
    n: usize,
) -> CUresult {
    guard("cuGraphAddDependencies", || add_deps(g, from, to, n))
}

#[no_mangle]
pub unsafe extern "C" fn cuGraphAddDependencies_v2(
    g: *mut c_void,
    from: *const *mut c_void,
    to: *const *mut c_void,
    edge_data: *const c_void,
    n: usize,
) -> CUresult {
    guard("cuGraphAddDependencies_v2", || {
        crate::graph::default_edges(edge_data, n)?;
        add_deps(g, from, to, n)
    })
}

pub(crate) unsafe fn kernel_node_set(h: *mut c_void, p: &CUDA_KERNEL_NODE_PARAMS_v1) -> R {
    let n = node_ref(h)?;
    let mut kind = kernel_kind(p)?;
    let g = &*n.graph;
    let mut nodes = g.nodes.lock();
    let d = &mut nodes.0[n.index];
    if !matches!(d.kind, NodeKind::Kernel { .. }) {
        return Err(invalid("the node is not a kernel node"));
    }
    crate::kernel_node::keep_attributes(&mut kind, &d.kind);
    d.kind = kind;
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn cuGraphKernelNodeSetParams(h: *mut c_void, p: *const c_void) -> CUresult {
    guard("cuGraphKernelNodeSetParams", || {
        kernel_node_set(h, v1_of(p)?)
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuGraphKernelNodeSetParams_v2(
    h: *mut c_void,
    p: *const c_void,
) -> CUresult {
    guard("cuGraphKernelNodeSetParams_v2", || {
        kernel_node_set(h, &v2_of(p)?)
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuGraphGetNodes(
    h: *mut c_void,
    nodes: *mut *mut c_void,
    num: *mut usize,
) -> CUresult {
    guard("cuGraphGetNodes", || {
        let n = out(num, "numNodes")?;
        let g = graph_ref(h)?;
        let list = g.nodes.lock();
        if nodes.is_null() {
            *n = list.1.len();
            return Ok(());
        }
        for i in 0..*n {
            *nodes.add(i) = list
                .1
                .get(i)
                .map_or(std::ptr::null_mut(), |&h| h as *mut c_void);
        }
        *n = (*n).min(list.1.len());
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuGraphNodeGetType(h: *mut c_void, ty: *mut u32) -> CUresult {
    guard("cuGraphNodeGetType", || {
        let t = out(ty, "type")?;
        let n = node_ref(h)?;
        let nodes = (*n.graph).nodes.lock();
        // CUgraphNodeType: KERNEL 0, MEMCPY 1, MEMSET 2, EMPTY 5.
        *t = match nodes.0[n.index].kind {
            NodeKind::Kernel { .. } => 0,
            NodeKind::Copy { .. } => 1,
            NodeKind::Memset { .. } => 2,
            NodeKind::Host { .. } => 3,
            NodeKind::EventRecord(_) => 7,
            NodeKind::EventWait(_) => 6,
            NodeKind::Child(_) => 4,
            NodeKind::Empty => 5,
            NodeKind::MemAlloc(_) => 10,
            NodeKind::MemFree(_) => 11,
            NodeKind::Conditional(_) => 13,
            NodeKind::MemOps(_) => 12,
        };
        Ok(())
    })
}

// --- Executable graphs ----------------------------------------------------------------------

pub struct Exec {
    magic: u64,
    /// The instantiate flags (`cuGraphExecGetFlags`).
    pub(crate) flags: u64,
    /// The nodes as instantiated (their parameters updated by the exec updates).
    nodes: Mutex<ExecState>,
}

/// The command buffer of a run of consecutive nodes (in recording order) on one device.
struct Segment {
    dev: tegragpu::core::Device,
    cb: CmdBuf,
}

/// A queue of a device other than the launching stream's, owned by the executable graph, with
/// the signal it releases after each segment it runs.
struct Aux {
    dev: tegragpu::core::Device,
    q: Queue,
    sig: Signal,
    value: u64,
}

struct ExecState {
    kinds: Vec<NodeKind>,
    /// Recording order (dependencies first).
    order: Vec<usize>,
    /// Per node: its segment and its command index in that segment's command buffer.
    cmd: Vec<Option<(usize, usize)>>,
    segs: Vec<Segment>,
    /// Host steps: (the number of segments recorded before it, its node index), in recording
    /// order: host nodes, and the staging of memcpy nodes with a pageable end (filled before the
    /// copy, copied out after it). A host step ends the segment before it.
    host: Vec<(usize, usize)>,
    aux: Vec<Aux>,
    /// The graph the exec was made from (node handles are checked against it).
    graph: *const Graph,
    /// The graph's node handles at instantiation, by index (0 for the nodes of child graphs).
    handles: Vec<usize>,
    /// Nodes disabled by `cuGraphNodeSetEnabled` (by index): not recorded.
    disabled: Vec<bool>,
    /// Each node's dependencies (by index), for `cuGraphExecUpdate`.
    deps: Vec<Vec<usize>>,
    /// The conditional nodes (by index) with their bodies instantiated.
    conds: Vec<(usize, Arc<crate::conditional::CondRun>)>,
    /// The handles of its conditional nodes that take their default value at each launch.
    defaults: Vec<Arc<crate::conditional::CondHandle>>,
    /// Where the nodes of the graph's child graph nodes are.
    children: Vec<ChildRange>,
}

unsafe impl Send for Exec {}
unsafe impl Sync for Exec {}

/// Where a child graph node's nodes are in a flattened graph: the child node's index, and the
/// first index and number of its nodes (its own child graphs' nodes included).
#[derive(Clone, Copy)]
struct ChildRange {
    node: usize,
    base: usize,
    len: usize,
}

/// [`flatten_ranged`] without the ranges.
fn flatten(nodes: &[NodeData], depth: u32) -> R<Vec<NodeData>> {
    flatten_ranged(nodes, depth, &mut Vec::new())
}

/// The nodes of a graph with its child graphs' nodes in line: a child graph node keeps its
/// index, becomes an empty node after the child's last nodes, and the child's nodes follow the
/// graph's (so node handles of the graph keep their index), its first nodes after the child
/// node's dependencies. `depth`: how deep in child graphs this is. `ranges` gets where the
/// nodes of each of this graph's child graph nodes went.
fn flatten_ranged(
    nodes: &[NodeData],
    depth: u32,
    ranges: &mut Vec<ChildRange>,
) -> R<Vec<NodeData>> {
    if depth > 64 {
        return Err(invalid("child graphs nest more than 64 deep"));
    }
    let mut out: Vec<NodeData> = nodes
        .iter()
        .map(|d| NodeData {
            kind: d.kind.clone(),
            deps: d.deps.clone(),
        })
        .collect();
    for i in 0..nodes.len() {
        let NodeKind::Child(c) = &nodes[i].kind else {
            continue;
        };
        // SAFETY: the node owns the child graph handle.
        let child = unsafe { graph_ref(c.0 as *mut c_void) }?;
        let inner = flatten(&child.nodes.lock().0, depth + 1)?;
        let base = out.len();
        ranges.push(ChildRange {
            node: i,
            base,
            len: inner.len(),
        });
        let mut has_dependents = vec![false; inner.len()];
        for d in &inner {
            for &p in &d.deps {
                has_dependents[p] = true;
            }
        }
        let outer_deps = std::mem::take(&mut out[i].deps);
        out[i].kind = NodeKind::Empty;
        out[i].deps = (0..inner.len())
            .filter(|&k| !has_dependents[k])
            .map(|k| base + k)
            .collect();
        if inner.is_empty() {
            out[i].deps = outer_deps.clone();
        }
        for d in inner {
            let deps = if d.deps.is_empty() {
                outer_deps.clone()
            } else {
                d.deps.iter().map(|&p| base + p).collect()
            };
            out.push(NodeData { kind: d.kind, deps });
        }
    }
    Ok(out)
}

/// Dependencies first, otherwise in creation order; an error on a cycle.
fn topo_order(nodes: &[NodeData]) -> R<Vec<usize>> {
    let n = nodes.len();
    let mut indeg: Vec<usize> = nodes.iter().map(|d| d.deps.len()).collect();
    let mut users: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (i, d) in nodes.iter().enumerate() {
        for &p in &d.deps {
            users[p].push(i);
        }
    }
    let mut ready: std::collections::BTreeSet<usize> = (0..n).filter(|&i| indeg[i] == 0).collect();
    let mut order = Vec::with_capacity(n);
    while let Some(i) = ready.pop_first() {
        order.push(i);
        for &u in &users[i] {
            indeg[u] -= 1;
            if indeg[u] == 0 {
                ready.insert(u);
            }
        }
    }
    if order.len() != n {
        return Err(invalid("the graph has a cycle"));
    }
    Ok(order)
}

/// The device a node runs on (`None`: an empty node).
fn node_device(kind: &NodeKind) -> R<Option<tegragpu::core::Device>> {
    Ok(match kind {
        NodeKind::Host { .. }
        | NodeKind::Conditional(_)
        | NodeKind::EventRecord(_)
        | NodeKind::EventWait(_)
        | NodeKind::MemOps(_)
        | NodeKind::MemAlloc(_)
        | NodeKind::MemFree(_) => None,
        NodeKind::Kernel { func, .. } => Some(func.kernel.device().clone()),
        NodeKind::Copy { dst, src, .. } => {
            let (d, s) = (dst.0.device(), src.0.device());
            let reaches = |a: &tegragpu::core::Device, b: &tegragpu::core::Device| {
                a.is(b) || a.peer_access_enabled(b)
            };
            if reaches(s, d) {
                Some(s.clone())
            } else if reaches(d, s) {
                Some(d.clone())
            } else {
                return Err(fail(
                    CUDA_ERROR_NOT_SUPPORTED,
                    format!(
                        "a memcpy node between {} and {}: neither device has peer access to the other (cuCtxEnablePeerAccess)",
                        s.info().name,
                        d.info().name
                    ),
                ));
            }
        }
        NodeKind::Memset { dst, .. } => Some(dst.0.device().clone()),
        NodeKind::Empty | NodeKind::Child(_) => None,
    })
}

fn record(st: &mut ExecState) -> R {
    st.cmd = vec![None; st.kinds.len()];
    let mut segs: Vec<Segment> = Vec::new();
    let mut host = Vec::new();
    let mut new_segment = false;
    for &i in &st.order {
        if st.disabled.get(i) == Some(&true) {
            continue;
        }
        match &st.kinds[i] {
            NodeKind::Host { .. }
            | NodeKind::Conditional(_)
            | NodeKind::EventRecord(_)
            | NodeKind::EventWait(_)
            | NodeKind::MemOps(_) => {
                host.push((segs.len(), i));
                new_segment = true;
                continue;
            }
            NodeKind::Copy {
                pageable: Some(Pageable::From(_)),
                ..
            } => {
                host.push((segs.len(), i));
                new_segment = true;
            }
            _ => {}
        }
        let Some(dev) = node_device(&st.kinds[i])? else {
            continue;
        };
        if new_segment || !segs.last().is_some_and(|g| g.dev.is(&dev)) {
            new_segment = false;
            let cb = dev.create_cmdbuf()?;
            segs.push(Segment { dev, cb });
        }
        let si = segs.len() - 1;
        let Segment { dev, cb } = &mut segs[si];
        let idx = match &st.kinds[i] {
            NodeKind::Kernel {
                func, cfg, params, ..
            } => cb.launch(&func.kernel, cfg, params)?,
            NodeKind::Copy {
                dst,
                src,
                bytes,
                rows,
                ..
            } => {
                let mut first = None;
                for (so, d_o) in rows.offsets() {
                    let c = cb.copy(&dst.0, dst.1 + d_o, &src.0, src.1 + so, *bytes)?;
                    first.get_or_insert(c);
                }
                first.expect("a memcpy node has at least one row")
            }
            NodeKind::Memset {
                dst,
                value,
                elem,
                width,
                height,
                pitch,
            } => {
                let mut first = None;
                for r in 0..*height {
                    let c = record_fill(dev, cb, &dst.0, dst.1 + r * pitch, *value, *elem, *width)?;
                    first.get_or_insert(c);
                }
                match first {
                    Some(c) => c,
                    None => continue,
                }
            }
            NodeKind::Empty
            | NodeKind::Child(_)
            | NodeKind::EventRecord(_)
            | NodeKind::EventWait(_)
            | NodeKind::MemOps(_)
            | NodeKind::Host { .. }
            | NodeKind::Conditional(_)
            | NodeKind::MemAlloc(_)
            | NodeKind::MemFree(_) => continue,
        };
        st.cmd[i] = Some((si, idx));
        if let NodeKind::Copy {
            pageable: Some(Pageable::To(_)),
            ..
        } = &st.kinds[i]
        {
            host.push((segs.len(), i));
            new_segment = true;
        }
    }
    for g in &mut segs {
        g.cb.finish()?;
    }
    st.segs = segs;
    st.host = host;
    Ok(())
}

/// Bytes of the fill pattern a memset node stages in host memory.
const FILL_PATTERN_BYTES: u64 = 64 * 1024;

/// Record a fill of `bytes` at `dst` + `off` with `elem`-byte elements of `value`: the first
/// (up to 64 KiB) bytes copied from a pattern in pinned host memory the command buffer holds,
/// then the written bytes doubled by copies within `dst` until the range is covered (the
/// command buffer runs its commands one after another). Returns the first command's index.
fn record_fill(
    dev: &tegragpu::core::Device,
    cb: &mut CmdBuf,
    dst: &Arc<Buffer>,
    off: u64,
    value: u32,
    elem: u32,
    bytes: u64,
) -> R<usize> {
    let first = bytes.min(FILL_PATTERN_BYTES);
    let flags = tegragpu::core::MemFlags {
        cpu_cached: true,
        ..Default::default()
    };
    let pat = Arc::new(dev.alloc(first, flags)?);
    let p = pat.map_cpu()?;
    for i in 0..first {
        let b = (value >> (8 * (i % elem as u64))) as u8;
        // SAFETY: the pattern buffer has `first` bytes mapped at `p`.
        unsafe { *p.add(i as usize) = b };
    }
    let c = cb.copy(dst, off, &pat, 0, first)?;
    let mut done = first;
    while done < bytes {
        let n = done.min(bytes - done);
        cb.copy(dst, off + done, dst, off, n)?;
        done += n;
    }
    Ok(c)
}

unsafe fn instantiate(pexec: *mut *mut c_void, h: *mut c_void, flags: u64) -> R {
    let p = out(pexec, "phGraphExec")?;
    *p = build_exec(h, flags)? as *mut c_void;
    crate::numba_extras::exec_created(h, *p);
    Ok(())
}

/// An executable graph of graph `h` (`cuGraphInstantiate`; the bodies of conditional nodes).
pub(crate) unsafe fn build_exec(h: *mut c_void, flags: u64) -> R<*mut Exec> {
    let g = graph_ref(h)?;
    current()?;
    let mut children = Vec::new();
    let (nodes, handles) = {
        let list = g.nodes.lock();
        let nodes = flatten_ranged(&list.0, 0, &mut children)?;
        let mut handles: Vec<usize> = list.1.iter().map(|&h| h as usize).collect();
        handles.resize(nodes.len(), 0);
        (nodes, handles)
    };
    let order = topo_order(&nodes)?;
    let deps = nodes.iter().map(|d| d.deps.clone()).collect();
    let mut st = ExecState {
        deps,
        kinds: nodes.into_iter().map(|d| d.kind).collect(),
        order,
        cmd: Vec::new(),
        segs: Vec::new(),
        host: Vec::new(),
        aux: Vec::new(),
        graph: g,
        handles,
        disabled: Vec::new(),
        conds: Vec::new(),
        defaults: Vec::new(),
        children,
    };
    for (i, k) in st.kinds.iter().enumerate() {
        if let NodeKind::Conditional(c) = k {
            st.conds
                .push((i, Arc::new(crate::conditional::CondRun::new(c.clone())?)));
            if c.handle.assign_default && !st.defaults.iter().any(|d| Arc::ptr_eq(d, &c.handle)) {
                st.defaults.push(c.handle.clone());
            }
        }
    }
    record(&mut st)?;
    let e = Box::new(Exec {
        magic: EXEC_MAGIC,
        flags,
        nodes: Mutex::new(st),
    });
    Ok(Box::into_raw(e))
}

/// `cuGraphNodeSetEnabled` (`on`: Some) and `cuGraphNodeGetEnabled` (None): whether kernel,
/// memcpy and memset node `node` of executable graph `h` runs; a disabled node is left out of
/// the recording (the nodes around it keep their order).
pub(crate) unsafe fn exec_enabled(h: *mut c_void, node: *mut c_void, on: Option<bool>) -> R<bool> {
    let e = exec_ref(h)?;
    let (mut st, i) = exec_node(e, node)?;
    if !matches!(
        st.kinds[i],
        NodeKind::Kernel { .. } | NodeKind::Copy { .. } | NodeKind::Memset { .. }
    ) {
        return Err(invalid(
            "only kernel, memcpy and memset nodes can be enabled or disabled",
        ));
    }
    let was = st.disabled.get(i) != Some(&true);
    if let Some(on) = on {
        if on != was {
            let len = st.kinds.len();
            st.disabled.resize(len, false);
            st.disabled[i] = !on;
            // Earlier replays may still read the old command buffers; libtegragpu keeps their
            // memory until they complete.
            record(&mut st)?;
        }
    }
    Ok(was)
}

/// Why `cuGraphExecUpdate` refused an update: a `CUgraphExecUpdateResult` and the index of the
/// node of the new graph it concerns, if one.
pub(crate) struct UpdateRefused(pub u32, pub Option<usize>);

/// `cuGraphExecUpdate`: executable graph `h` takes the node parameters of graph `g`, which must
/// have the same nodes (paired by their order of creation, child graphs' nodes included), of the
/// same types, with the same edges; memory nodes must be the same nodes (as in a clone). On
/// success the executable graph is recorded again from `g`'s nodes; otherwise it is unchanged.
/// Its nodes are still named by the handles of the graph it was instantiated from.
pub(crate) unsafe fn exec_update(h: *mut c_void, g: *mut c_void) -> R<Result<(), UpdateRefused>> {
    // CUgraphExecUpdateResult values.
    const TOPOLOGY_CHANGED: u32 = 2;
    const NODE_TYPE_CHANGED: u32 = 3;
    const PARAMETERS_CHANGED: u32 = 5;
    const NOT_SUPPORTED: u32 = 6;
    let e = exec_ref(h)?;
    let g = graph_ref(g)?;
    let mut children = Vec::new();
    let nodes = flatten_ranged(&g.nodes.lock().0, 0, &mut children)?;
    let mut st = e.nodes.lock();
    if nodes.len() != st.kinds.len() {
        return Ok(Err(UpdateRefused(TOPOLOGY_CHANGED, None)));
    }
    let order = topo_order(&nodes)?;
    // The same edges: the recording order over the old nodes reproduces dependencies only if
    // both graphs order alike; compare the dependency lists themselves.
    let old_deps = st.deps.clone();
    for (i, d) in nodes.iter().enumerate() {
        let mut a = d.deps.clone();
        let mut b = old_deps.get(i).cloned().unwrap_or_default();
        a.sort_unstable();
        b.sort_unstable();
        if a != b {
            return Ok(Err(UpdateRefused(TOPOLOGY_CHANGED, Some(i))));
        }
        let same_type = std::mem::discriminant(&d.kind) == std::mem::discriminant(&st.kinds[i]);
        if !same_type {
            return Ok(Err(UpdateRefused(NODE_TYPE_CHANGED, Some(i))));
        }
        let same_memory = match (&d.kind, &st.kinds[i]) {
            (NodeKind::MemAlloc(x), NodeKind::MemAlloc(y))
            | (NodeKind::MemFree(x), NodeKind::MemFree(y)) => Arc::ptr_eq(x, y),
            (NodeKind::Conditional(x), NodeKind::Conditional(y)) => Arc::ptr_eq(x, y),
            _ => true,
        };
        if !same_memory {
            return Ok(Err(UpdateRefused(NOT_SUPPORTED, Some(i))));
        }
        if let (NodeKind::MemOps(x), NodeKind::MemOps(y)) = (&d.kind, &st.kinds[i]) {
            if !y.updates(x) {
                return Ok(Err(UpdateRefused(PARAMETERS_CHANGED, Some(i))));
            }
        }
    }
    st.kinds = nodes.into_iter().map(|d| d.kind).collect();
    st.order = order;
    st.children = children;
    // Earlier replays may still read the old command buffers; libtegragpu keeps their memory
    // until they complete.
    record(&mut st)?;
    Ok(Ok(()))
}

/// `CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE` with message `why`.
fn update_failure(why: String) -> Fail {
    fail(910, why)
}

/// `cuGraphExecChildGraphNodeSetParams`: the nodes of child graph node `node` in executable
/// graph `h` take the parameters of graph `child`'s nodes, which must have the nodes of the
/// node's graph (paired by their order of creation, its own child graphs' nodes included), of
/// the same types, with the same edges; memory and conditional nodes cannot change
/// (`CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE` otherwise, as NVIDIA's libcuda answers, and the
/// executable graph is unchanged). Later launches run the new parameters.
pub(crate) unsafe fn exec_child_set(h: *mut c_void, node: *mut c_void, child: *mut c_void) -> R {
    let e = exec_ref(h)?;
    let c = graph_ref(child)?;
    let inner = flatten(&c.nodes.lock().0, 1)?;
    let (mut st, i) = exec_node(e, node)?;
    let Some(r) = st.children.iter().copied().find(|r| r.node == i) else {
        return Err(invalid("the node is not a child graph node"));
    };
    if inner.len() != r.len {
        return Err(update_failure(format!(
            "the graph has {} nodes (its child graphs' included); the child graph node's graph has {}",
            inner.len(),
            r.len
        )));
    }
    let inside = r.base..r.base + r.len;
    for (k, d) in inner.iter().enumerate() {
        let at = r.base + k;
        let mut was: Vec<usize> = st.deps[at]
            .iter()
            .copied()
            .filter(|p| inside.contains(p))
            .map(|p| p - r.base)
            .collect();
        let mut now = d.deps.clone();
        was.sort_unstable();
        now.sort_unstable();
        if was != now {
            return Err(update_failure(format!(
                "node {k} of the graph has other dependencies than in the child graph node's graph"
            )));
        }
        if std::mem::discriminant(&d.kind) != std::mem::discriminant(&st.kinds[at]) {
            return Err(update_failure(format!(
                "node {k} of the graph is of another type than in the child graph node's graph"
            )));
        }
        let same = match (&d.kind, &st.kinds[at]) {
            (NodeKind::MemAlloc(x), NodeKind::MemAlloc(y))
            | (NodeKind::MemFree(x), NodeKind::MemFree(y)) => Arc::ptr_eq(x, y),
            (NodeKind::Conditional(x), NodeKind::Conditional(y)) => Arc::ptr_eq(x, y),
            (NodeKind::MemOps(x), NodeKind::MemOps(y)) => y.updates(x),
            _ => true,
        };
        if !same {
            return Err(update_failure(format!(
                "node {k} of the graph is a memory, conditional or batch memory operation node that cannot replace the child graph node's"
            )));
        }
    }
    let old: Vec<NodeKind> = st.kinds[inside.clone()].to_vec();
    for (k, d) in inner.into_iter().enumerate() {
        st.kinds[r.base + k] = d.kind;
    }
    // Earlier replays may still read the old command buffers; libtegragpu keeps their memory
    // until they complete.
    if let Err(err) = record(&mut st) {
        for (k, kind) in old.into_iter().enumerate() {
            st.kinds[r.base + k] = kind;
        }
        record(&mut st)?;
        return Err(err);
    }
    Ok(())
}

/// The flags executable graph `h` was instantiated with.
pub(crate) unsafe fn exec_flags(h: *mut c_void) -> R<u64> {
    Ok(exec_ref(h)?.flags)
}

unsafe fn exec_ref(h: *mut c_void) -> R<&'static Exec> {
    crate::device::check_init()?;
    let e = (h as *const Exec).as_ref().ok_or_else(|| {
        fail(
            CUDA_ERROR_INVALID_VALUE,
            "the executable graph handle is NULL",
        )
    })?;
    if e.magic != EXEC_MAGIC {
        return Err(fail(
            CUDA_ERROR_INVALID_VALUE,
            format!("{h:?} is not an executable graph"),
        ));
    }
    Ok(e)
}

/// The CUDA 10 / 11 form (`cuGraphInstantiate`, `cuGraphInstantiate_v2`): error node and log.
#[no_mangle]
pub unsafe extern "C" fn cuGraphInstantiate(
    pexec: *mut *mut c_void,
    g: *mut c_void,
    err_node: *mut *mut c_void,
    log: *mut c_char,
    log_size: usize,
) -> CUresult {
    guard("cuGraphInstantiate", || {
        instantiate_logged(pexec, g, err_node, log, log_size)
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuGraphInstantiate_v2(
    pexec: *mut *mut c_void,
    g: *mut c_void,
    err_node: *mut *mut c_void,
    log: *mut c_char,
    log_size: usize,
) -> CUresult {
    guard("cuGraphInstantiate_v2", || {
        instantiate_logged(pexec, g, err_node, log, log_size)
    })
}

unsafe fn instantiate_logged(
    pexec: *mut *mut c_void,
    g: *mut c_void,
    err_node: *mut *mut c_void,
    log: *mut c_char,
    log_size: usize,
) -> R {
    if let Some(e) = err_node.as_mut() {
        *e = std::ptr::null_mut();
    }
    let r = instantiate(pexec, g, 0);
    if !log.is_null() && log_size > 0 {
        let msg = match &r {
            Ok(()) => String::new(),
            Err(Fail(_, m)) => m.clone().unwrap_or_default(),
        };
        let b = msg.as_bytes();
        let k = b.len().min(log_size - 1);
        std::ptr::copy_nonoverlapping(b.as_ptr(), log as *mut u8, k);
        *log.add(k) = 0;
    }
    r
}

#[no_mangle]
pub unsafe extern "C" fn cuGraphInstantiateWithFlags(
    pexec: *mut *mut c_void,
    g: *mut c_void,
    flags: u64,
) -> CUresult {
    guard("cuGraphInstantiateWithFlags", || {
        check_instantiate_flags(flags)?;
        instantiate(pexec, g, flags)
    })
}

/// `CUgraphInstantiate_flags`: AUTO_FREE_ON_LAUNCH (1; graphs here allocate no memory),
/// UPLOAD (2) and USE_NODE_PRIORITY (8; the nodes run one after another) are accepted;
/// DEVICE_LAUNCH (4) is refused (`CUDA_ERROR_NOT_SUPPORTED`; with AUTO_FREE_ON_LAUNCH, which it
/// excludes, `CUDA_ERROR_INVALID_VALUE`); other bits are `CUDA_ERROR_INVALID_VALUE`.
fn check_instantiate_flags(flags: u64) -> R {
    if flags & !0xf != 0 {
        return Err(invalid(format!("instantiate flags {flags:#x}")));
    }
    if flags & 4 != 0 {
        if flags & 1 != 0 {
            return Err(invalid(format!(
                "instantiate flags {flags:#x}: DEVICE_LAUNCH excludes AUTO_FREE_ON_LAUNCH"
            )));
        }
        return Err(fail(
            CUDA_ERROR_NOT_SUPPORTED,
            "CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH: graphs launch from the host only",
        ));
    }
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn cuGraphExecDestroy(h: *mut c_void) -> CUresult {
    guard("cuGraphExecDestroy", || {
        let e = exec_ref(h)?;
        let mut b = Box::from_raw(e as *const Exec as *mut Exec);
        b.magic = 0;
        drop(b);
        crate::numba_extras::owner_destroyed(h);
        Ok(())
    })
}

/// `cuGraphLaunch`: the graph's replays in the stream's order, with its host steps (host
/// nodes, pageable memcpy staging) between them.
unsafe fn graph_launch(h: *mut c_void, s: *mut c_void, ptds: bool) -> R {
    let e = exec_ref(h)?;
    stream_of(s, ptds)?;
    replay(e, s, ptds)
}

/// One host step of a launch.
enum HostStep {
    /// A host node: `f(data)`.
    Call(HostFn, usize),
    /// Fill a staging buffer from pageable host memory (host address, buffer, bytes per row,
    /// the rows: the source side of [`Rows`] gives the layout of both).
    Fill(usize, Arc<Buffer>, u64, Rows),
    /// Copy a staging buffer out to pageable host memory (host address, buffer, bytes per row,
    /// the rows: the destination side of [`Rows`] gives the layout of both).
    Out(usize, Arc<Buffer>, u64, Rows),
    /// A conditional node: read its condition, run the body it selects.
    Cond(Arc<crate::conditional::CondRun>),
}

/// Run the steps recorded after `k` segments, in order: host steps on a host thread in the
/// stream's order (`host_call`, one per run of them), event records and waits on the stream.
unsafe fn host_nodes(st: &ExecState, k: usize, h: *mut c_void, ptds: bool) -> R {
    let mut batch = Vec::new();
    for &(_, i) in st.host.iter().filter(|(at, _)| *at == k) {
        match &st.kinds[i] {
            NodeKind::EventRecord(ev) => {
                run_host_steps(host_steps(st, &std::mem::take(&mut batch)), h, ptds)?;
                crate::stream::event_record_on(*ev as *mut c_void, stream_of(h, ptds)?)?;
            }
            NodeKind::EventWait(ev) => {
                run_host_steps(host_steps(st, &std::mem::take(&mut batch)), h, ptds)?;
                crate::stream::stream_wait_event(h, *ev as *mut c_void, 0, ptds)?;
            }
            NodeKind::MemOps(m) => {
                run_host_steps(host_steps(st, &std::mem::take(&mut batch)), h, ptds)?;
                m.record(stream_of(h, ptds)?)?;
            }
            _ => batch.push(i),
        }
    }
    run_host_steps(host_steps(st, &batch), h, ptds)
}

/// The host steps of nodes `nodes`.
fn host_steps(st: &ExecState, nodes: &[usize]) -> Vec<HostStep> {
    nodes
        .iter()
        .filter_map(|i| match &st.kinds[*i] {
            NodeKind::Host { f, data } => Some(HostStep::Call(*f, *data)),
            NodeKind::Conditional(_) => st
                .conds
                .iter()
                .find(|(at, _)| at == i)
                .map(|(_, run)| HostStep::Cond(run.clone())),
            NodeKind::Copy {
                src,
                bytes,
                rows,
                pageable: Some(Pageable::From(a)),
                ..
            } => Some(HostStep::Fill(*a, src.0.clone(), *bytes, *rows)),
            NodeKind::Copy {
                dst,
                bytes,
                rows,
                pageable: Some(Pageable::To(a)),
                ..
            } => Some(HostStep::Out(*a, dst.0.clone(), *bytes, *rows)),
            _ => None,
        })
        .collect()
}

/// Run `steps`, in order, on a host thread in the stream's order.
unsafe fn run_host_steps(steps: Vec<HostStep>, h: *mut c_void, ptds: bool) -> R {
    if steps.is_empty() {
        return Ok(());
    }
    crate::extras::host_call(
        h,
        ptds,
        Box::new(move |_| {
            for step in steps {
                // SAFETY: the program's host function with its own data, and host memory the
                // program keeps valid until the launch has run (as for NVIDIA's); the staging
                // buffers are mapped and as long as the pageable end's extent, which the rows
                // stay inside.
                unsafe {
                    match step {
                        HostStep::Call(f, data) => f(data as *mut c_void),
                        HostStep::Cond(run) => {
                            if let Err(Fail(code, why)) = run.run() {
                                log(
                                    tegragpu::log::Level::Error,
                                    format_args!(
                                        "a conditional node's body failed ({}): {}; the nodes after it run",
                                        error_name(code).unwrap_or("?"),
                                        why.as_deref().unwrap_or("")
                                    ),
                                );
                            }
                        }
                        HostStep::Fill(a, b, n, rows) => {
                            for (o, _) in rows.offsets() {
                                std::ptr::copy_nonoverlapping(
                                    (a + o as usize) as *const u8,
                                    b.cpu_ptr().add(o as usize),
                                    n as usize,
                                )
                            }
                        }
                        HostStep::Out(a, b, n, rows) => {
                            for (_, o) in rows.offsets() {
                                std::ptr::copy_nonoverlapping(
                                    b.cpu_ptr().add(o as usize),
                                    (a + o as usize) as *mut u8,
                                    n as usize,
                                )
                            }
                        }
                    }
                }
            }
        }),
    )
}

/// Launch executable graph `e` on stream `h` (the bodies of conditional nodes).
pub(crate) unsafe fn launch_exec(e: &Exec, h: *mut c_void) -> R {
    replay(e, h, false)
}

unsafe fn replay(e: &Exec, h: *mut c_void, ptds: bool) -> R {
    let s = stream_of(h, ptds)?;
    let mut guard = e.nodes.lock();
    let st = &mut *guard;
    // Conditional handles that take their default value at each launch, in the stream's order.
    for d in &st.defaults {
        s.record(|q| q.write_value(d.va(), u64::from(d.default), false, true))?;
    }
    // One segment on the stream's device (or none) and no host nodes: one replay in the
    // stream's order.
    if st.segs.len() <= 1 && st.host.is_empty() && st.segs.iter().all(|g| g.dev.is(&s.ctx.core)) {
        return match st.segs.first_mut() {
            Some(g) => s.record(|q| q.replay(&mut g.cb)),
            None => s.record(|_| Ok(())),
        };
    }
    // Several devices. `after`: what the next segment waits for (None: the stream's own
    // order), an aux queue's index and value, or the stream's mark.
    enum After {
        Stream(u64),
        Aux(usize, u64),
    }
    let mut after: Option<After> = None;
    let n_segs = st.segs.len();
    for k in 0..n_segs {
        if st.host.iter().any(|(at, _)| *at == k) {
            // The host nodes after the segments so far: once they are complete.
            if let Some(After::Aux(i, v)) = after.take() {
                let sig = &st.aux[i].sig;
                s.record(|q| q.wait(sig, v))?;
            }
            host_nodes(st, k, h, ptds)?;
        }
        let ExecState { segs, aux, .. } = &mut *st;
        let g = &mut segs[k];
        if g.dev.is(&s.ctx.core) {
            let wait = match after {
                Some(After::Aux(i, v)) => Some((i, v)),
                _ => None,
            };
            s.record(|q| {
                if let Some((i, v)) = wait {
                    q.wait(&aux[i].sig, v)?;
                }
                q.replay(&mut g.cb)
            })?;
            after = None;
            continue;
        }
        let ai = match aux.iter().position(|a| a.dev.is(&g.dev)) {
            Some(i) => i,
            None => {
                let q = g.dev.create_queue(QueueKind::Compute)?;
                let sig = g.dev.create_signal(0)?;
                aux.push(Aux {
                    dev: g.dev.clone(),
                    q,
                    sig,
                    value: 0,
                });
                aux.len() - 1
            }
        };
        let wait = match after {
            None => After::Stream(s.mark()?),
            Some(a) => a,
        };
        let (before, rest) = aux.split_at_mut(ai);
        let (a, later) = rest.split_first_mut().expect("ai < aux.len()");
        match wait {
            After::Stream(v) => {
                if v > 0 {
                    a.q.wait(s.signal(), v)?;
                }
            }
            After::Aux(i, v) if i != ai => {
                let other = if i < ai {
                    &before[i]
                } else {
                    &later[i - ai - 1]
                };
                a.q.wait(&other.sig, v)?;
            }
            After::Aux(..) => {}
        }
        a.q.replay(&mut g.cb)?;
        a.value += 1;
        a.q.signal(&a.sig, a.value)?;
        a.q.submit()?;
        after = Some(After::Aux(ai, a.value));
    }
    if let Some(After::Aux(i, v)) = after {
        let sig = &st.aux[i].sig;
        s.record(|q| q.wait(sig, v))?;
    }
    host_nodes(st, n_segs, h, ptds)
}

#[no_mangle]
pub unsafe extern "C" fn cuGraphLaunch(h: *mut c_void, s: *mut c_void) -> CUresult {
    guard("cuGraphLaunch", || graph_launch(h, s, false))
}

#[no_mangle]
pub unsafe extern "C" fn cuGraphLaunch_ptsz(h: *mut c_void, s: *mut c_void) -> CUresult {
    guard("cuGraphLaunch_ptsz", || graph_launch(h, s, true))
}

#[no_mangle]
pub unsafe extern "C" fn cuGraphUpload(h: *mut c_void, s: *mut c_void) -> CUresult {
    guard("cuGraphUpload", || {
        exec_ref(h)?;
        stream_of(s, false)?;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuGraphUpload_ptsz(h: *mut c_void, s: *mut c_void) -> CUresult {
    guard("cuGraphUpload_ptsz", || {
        exec_ref(h)?;
        stream_of(s, true)?;
        Ok(())
    })
}

unsafe fn exec_node(
    e: &Exec,
    node: *mut c_void,
) -> R<(parking_lot::MutexGuard<'_, ExecState>, usize)> {
    let n = node_ref(node)?;
    let st = e.nodes.lock();
    let not_ours =
        || invalid("the node is not a node of the graph this executable graph was made from");
    if !std::ptr::eq(n.graph, st.graph) {
        return Err(not_ours());
    }
    // The node's index in the graph, unless nodes were destroyed since the instantiation.
    let i = if st.handles.get(n.index) == Some(&(node as usize)) {
        n.index
    } else {
        st.handles
            .iter()
            .position(|&h| h == node as usize)
            .ok_or_else(not_ours)?
    };
    Ok((st, i))
}

pub(crate) unsafe fn exec_kernel_set(
    h: *mut c_void,
    node: *mut c_void,
    p: &CUDA_KERNEL_NODE_PARAMS_v1,
) -> R {
    let e = exec_ref(h)?;
    let mut kind = kernel_kind(p)?;
    let (mut st, i) = exec_node(e, node)?;
    crate::kernel_node::keep_attributes(&mut kind, &st.kinds[i]);
    let NodeKind::Kernel {
        func: old_f,
        cfg: old_cfg,
        ..
    } = &st.kinds[i]
    else {
        return Err(invalid("the node is not a kernel node"));
    };
    let (old_f, old_cfg) = (*old_f, *old_cfg);
    let NodeKind::Kernel {
        func, cfg, params, ..
    } = &kind
    else {
        unreachable!()
    };
    // Another function: recorded again. A disabled node: kept for when it is enabled.
    if !std::ptr::eq(old_f, *func) || st.cmd[i].is_none() {
        st.kinds[i] = kind;
        return if st.cmd[i].is_none() {
            Ok(())
        } else {
            record(&mut st)
        };
    }
    let (si, idx) =
        st.cmd[i].ok_or_else(|| fail(CUDA_ERROR_UNKNOWN, "the kernel node has no command"))?;
    let k = &func.kernel;
    {
        let cb = &mut st
            .segs
            .get_mut(si)
            .ok_or_else(|| fail(CUDA_ERROR_UNKNOWN, "no command buffer"))?
            .cb;
        if *cfg != old_cfg {
            cb.set_launch(idx, k, cfg)?;
        }
        cb.set_params(idx, k, params)?;
    }
    st.kinds[i] = kind;
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn cuGraphExecKernelNodeSetParams(
    h: *mut c_void,
    node: *mut c_void,
    p: *const c_void,
) -> CUresult {
    guard("cuGraphExecKernelNodeSetParams", || {
        exec_kernel_set(h, node, v1_of(p)?)
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuGraphExecKernelNodeSetParams_v2(
    h: *mut c_void,
    node: *mut c_void,
    p: *const c_void,
) -> CUresult {
    guard("cuGraphExecKernelNodeSetParams_v2", || {
        exec_kernel_set(h, node, &v2_of(p)?)
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuGraphExecMemcpyNodeSetParams(
    h: *mut c_void,
    node: *mut c_void,
    p: *const CUDA_MEMCPY3D,
    _ctx: *mut c_void,
) -> CUresult {
    guard("cuGraphExecMemcpyNodeSetParams", || {
        exec_copy_set(h, node, p)
    })
}

/// Give node `node` of executable graph `h` kind `kind` (an event node's event: the node must
/// be of the same type; nothing is recorded again).
pub(crate) unsafe fn exec_set_kind(h: *mut c_void, node: *mut c_void, kind: NodeKind) -> R {
    let e = exec_ref(h)?;
    let (mut st, i) = exec_node(e, node)?;
    if std::mem::discriminant(&st.kinds[i]) != std::mem::discriminant(&kind) {
        return Err(invalid("the node is not of that type"));
    }
    if let (NodeKind::MemOps(old), NodeKind::MemOps(new)) = (&st.kinds[i], &kind) {
        if !old.updates(new) {
            return Err(invalid(
                "an executable graph's batch memory operation node keeps its context, its number of operations and their types",
            ));
        }
    }
    st.kinds[i] = kind;
    Ok(())
}

/// `cuGraphExecMemsetNodeSetParams`: the memset node's new parameters, recorded again.
#[no_mangle]
pub unsafe extern "C" fn cuGraphExecMemsetNodeSetParams(
    h: *mut c_void,
    node: *mut c_void,
    p: *const CUDA_MEMSET_NODE_PARAMS,
    _ctx: *mut c_void,
) -> CUresult {
    guard("cuGraphExecMemsetNodeSetParams", || {
        let e = exec_ref(h)?;
        let kind = memset_kind(p.as_ref().ok_or_else(|| invalid("memsetParams is NULL"))?)?;
        let (mut st, i) = exec_node(e, node)?;
        if !matches!(st.kinds[i], NodeKind::Memset { .. }) {
            return Err(invalid("the node is not a memset node"));
        }
        st.kinds[i] = kind;
        // Earlier replays may still read the old command buffers; libtegragpu keeps their
        // memory until they complete.
        record(&mut st)
    })
}

/// [`cuGraphExecMemcpyNodeSetParams`].
pub(crate) unsafe fn exec_copy_set(
    h: *mut c_void,
    node: *mut c_void,
    p: *const CUDA_MEMCPY3D,
) -> R {
    {
        let e = exec_ref(h)?;
        let kind = copy_kind(p)?;
        let (mut st, i) = exec_node(e, node)?;
        if !matches!(st.kinds[i], NodeKind::Copy { .. }) {
            return Err(invalid("the node is not a memcpy node"));
        }
        let same = match (&st.kinds[i], &kind) {
            (
                NodeKind::Copy {
                    dst: d0,
                    src: s0,
                    bytes: b0,
                    rows: r0,
                    pageable: None,
                    ..
                },
                NodeKind::Copy {
                    dst: d1,
                    src: s1,
                    bytes: b1,
                    rows: r1,
                    pageable: None,
                    ..
                },
            ) => {
                Arc::ptr_eq(&d0.0, &d1.0)
                    && d0.1 == d1.1
                    && Arc::ptr_eq(&s0.0, &s1.0)
                    && s0.1 == s1.1
                    && b0 == b1
                    && r0 == r1
            }
            _ => false,
        };
        if same {
            return Ok(());
        }
        st.kinds[i] = kind;
        // Earlier replays may still read the old command buffer; libtegragpu keeps its memory
        // until they complete.
        record(&mut st)
    }
}
