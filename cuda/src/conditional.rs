//! Conditional graph nodes: `cuGraphConditionalHandleCreate` and nodes of type
//! `CU_GRAPH_NODE_TYPE_CONDITIONAL` (if / if-else, while, switch).
//!
//! A handle is the GPU address of a 32-bit condition value in pinned host memory. Device code
//! sets it with `cudaGraphSetConditional(handle, value)`, a call the library provides in its
//! built-in syscall module (a store to that address). A conditional node is a host step of the
//! executable graph: once the nodes before it have run, a host thread reads the value and runs
//! the chosen body graph (each body is instantiated with the graph) on a stream of the executable
//! graph's own, waiting for it; a while node reads the value again after each run. The nodes
//! after the conditional node wait for the host step, as after a host node.

use crate::context::{ctx_ref, current, Context};
use crate::device::out;
use crate::error::*;
use crate::graph::{graph_ref, ChildGraph, Exec, NodeKind};
use crate::types::*;
use std::ffi::c_void;
use std::sync::Arc;
use tegragpu::core::{Buffer, MemFlags};

/// `CU_GRAPH_COND_ASSIGN_DEFAULT`: the default value is written at the start of each launch.
const CU_GRAPH_COND_ASSIGN_DEFAULT: u32 = 1;
/// `CUgraphConditionalNodeType`.
pub(crate) const CU_GRAPH_COND_TYPE_IF: u32 = 0;
pub(crate) const CU_GRAPH_COND_TYPE_WHILE: u32 = 1;
pub(crate) const CU_GRAPH_COND_TYPE_SWITCH: u32 = 2;

/// A conditional handle: its condition value's memory.
pub(crate) struct CondHandle {
    /// Pinned host memory, mapped for the CPU; the value is its first 4 bytes.
    buf: Buffer,
    /// The context it was made for.
    pub ctx: &'static Context,
    /// `defaultLaunchValue`.
    pub default: u32,
    /// `CU_GRAPH_COND_ASSIGN_DEFAULT` was given.
    pub assign_default: bool,
    /// A conditional node uses it (a handle serves one node, as NVIDIA's libcuda has it).
    used: std::sync::atomic::AtomicBool,
}

impl CondHandle {
    /// The handle's value: the GPU address of the condition.
    pub fn va(&self) -> u64 {
        self.buf.gpu_va()
    }

    /// The condition value as the GPU last wrote it.
    pub fn read(&self) -> u32 {
        // SAFETY: the buffer is mapped and at least 4 bytes long.
        unsafe { std::ptr::read_volatile(self.buf.cpu_ptr() as *const u32) }
    }

    fn write(&self, v: u32) {
        // SAFETY: as in `read`.
        unsafe { std::ptr::write_volatile(self.buf.cpu_ptr() as *mut u32, v) };
        std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
    }
}

/// A conditional node: its handle, type and body graphs.
pub(crate) struct Conditional {
    pub handle: Arc<CondHandle>,
    pub ty: u32,
    /// The body graphs, owned by the node.
    pub bodies: Vec<ChildGraph>,
    /// The array `phGraph_out` points at (the body graph handles), kept while the node lives.
    _graphs_out: Box<[usize]>,
}

/// `CUDA_CONDITIONAL_NODE_PARAMS`.
#[repr(C)]
pub struct CondParams {
    handle: u64,
    ty: u32,
    size: u32,
    graphs_out: *mut *mut c_void,
    ctx: *mut c_void,
}

unsafe fn context_or_current(ctx: *mut c_void) -> R<&'static Context> {
    if ctx.is_null() {
        current()
    } else {
        ctx_ref(ctx)
    }
}

#[no_mangle]
pub unsafe extern "C" fn cuGraphConditionalHandleCreate(
    ph: *mut u64,
    g: *mut c_void,
    ctx: *mut c_void,
    default_value: u32,
    flags: u32,
) -> CUresult {
    guard("cuGraphConditionalHandleCreate", || {
        let p = out(ph, "pHandle_out")?;
        let graph = graph_ref(g)?;
        if flags & !CU_GRAPH_COND_ASSIGN_DEFAULT != 0 {
            return Err(invalid(format!(
                "flags {flags:#x}: only CU_GRAPH_COND_ASSIGN_DEFAULT (1) is defined"
            )));
        }
        let ctx = context_or_current(ctx)?;
        let buf = ctx.core.alloc(
            4,
            MemFlags {
                cpu_cached: true,
                ..Default::default()
            },
        )?;
        buf.map_cpu()?;
        let h = Arc::new(CondHandle {
            buf,
            ctx,
            default: default_value,
            assign_default: flags & CU_GRAPH_COND_ASSIGN_DEFAULT != 0,
            used: std::sync::atomic::AtomicBool::new(false),
        });
        h.write(default_value);
        *p = h.va();
        graph.handles.lock().push(h);
        Ok(())
    })
}

/// The handle `va` of graph `g` (or of a graph it is a body of).
fn find_handle(g: &crate::graph::Graph, va: u64) -> R<Arc<CondHandle>> {
    let mut at: *const crate::graph::Graph = g;
    for _ in 0..64 {
        // SAFETY: `at` is `g` or the graph owning it (alive while its bodies are).
        let graph = unsafe { &*at };
        if let Some(h) = graph.handles.lock().iter().find(|h| h.va() == va) {
            return Ok(h.clone());
        }
        match graph.body_of {
            0 => break,
            parent => at = parent as *const crate::graph::Graph,
        }
    }
    Err(invalid(format!(
        "conditional.handle {va:#x} is not a handle made by cuGraphConditionalHandleCreate for this graph"
    )))
}

/// A conditional node for `cuGraphAddNode` of graph `g` from `p`: its body graphs are made
/// and their handles written to `p->phGraph_out` (an array the node owns).
pub(crate) unsafe fn cond_kind(g: *mut c_void, p: *mut CondParams) -> R<NodeKind> {
    let graph = graph_ref(g)?;
    let p = &mut *p;
    let handle = find_handle(graph, p.handle)?;
    let ok_size = match p.ty {
        CU_GRAPH_COND_TYPE_IF => p.size == 1 || p.size == 2,
        CU_GRAPH_COND_TYPE_WHILE => p.size == 1,
        CU_GRAPH_COND_TYPE_SWITCH => p.size >= 1,
        t => {
            return Err(invalid(format!(
                "conditional.type {t} is not a CUgraphConditionalNodeType"
            )))
        }
    };
    if !ok_size {
        return Err(invalid(format!(
            "conditional.size {} for type {}: an if node has 1 or 2 bodies, a while node 1, a switch node at least 1",
            p.size, p.ty
        )));
    }
    let ctx = context_or_current(p.ctx)?;
    if !std::ptr::eq(ctx, handle.ctx) {
        return Err(invalid(
            "conditional.ctx is not the context the handle was made for",
        ));
    }
    if p.size > 1 << 16 {
        return Err(invalid(format!(
            "conditional.size {}: more than 65536 bodies",
            p.size
        )));
    }
    if handle.used.swap(true, std::sync::atomic::Ordering::AcqRel) {
        return Err(invalid(format!(
            "conditional.handle {:#x} already serves a conditional node (a handle serves one)",
            p.handle
        )));
    }
    let bodies: Vec<ChildGraph> = (0..p.size)
        .map(|_| {
            let b = crate::graph::new_graph();
            (*(b as *mut crate::graph::Graph)).body_of = graph as *const _ as usize;
            ChildGraph(b as usize)
        })
        .collect();
    let out: Box<[usize]> = bodies.iter().map(|b| b.0).collect();
    p.graphs_out = out.as_ptr() as *mut *mut c_void;
    Ok(NodeKind::Conditional(Arc::new(Conditional {
        handle,
        ty: p.ty,
        bodies,
        _graphs_out: out,
    })))
}

/// A conditional node of an executable graph: its bodies instantiated, and the stream they run
/// on.
pub(crate) struct CondRun {
    pub cond: Arc<Conditional>,
    execs: Vec<usize>,
    stream: usize,
}

// SAFETY: the executable graphs and the stream are owned by this value and used by one host
// step at a time (a launch's host steps run in the stream's order).
unsafe impl Send for CondRun {}
unsafe impl Sync for CondRun {}

impl CondRun {
    /// Instantiate the bodies of `cond` and make their stream.
    pub(crate) unsafe fn new(cond: Arc<Conditional>) -> R<CondRun> {
        let mut run = CondRun {
            cond: cond.clone(),
            execs: Vec::new(),
            stream: 0,
        };
        for b in &cond.bodies {
            run.execs
                .push(crate::graph::build_exec(b.0 as *mut c_void, 0)? as usize);
        }
        let s = crate::stream::Stream::create(
            cond.handle.ctx,
            crate::stream::Kind::User,
            CU_STREAM_NON_BLOCKING,
            0,
        )?;
        run.stream = s.handle() as usize;
        Ok(run)
    }

    /// Run the node: read the condition, run the body it selects (a while node: again while
    /// the condition is not 0), each run complete before the next read.
    pub(crate) fn run(&self) -> R {
        let n = self.execs.len();
        match self.cond.ty {
            CU_GRAPH_COND_TYPE_WHILE => {
                while self.cond.handle.read() != 0 {
                    self.body(0)?;
                }
                Ok(())
            }
            CU_GRAPH_COND_TYPE_IF => match (self.cond.handle.read(), n) {
                (0, 2) => self.body(1),
                (0, _) => Ok(()),
                _ => self.body(0),
            },
            _ => {
                let v = self.cond.handle.read() as usize;
                if v < n {
                    self.body(v)
                } else {
                    Ok(())
                }
            }
        }
    }

    fn body(&self, i: usize) -> R {
        let h = self.stream as *mut c_void;
        // SAFETY: an executable graph and a stream this value owns.
        unsafe {
            crate::graph::launch_exec(&*(self.execs[i] as *const Exec), h)?;
            crate::stream::stream_of(h, false)?.synchronize()
        }
    }
}

impl Drop for CondRun {
    fn drop(&mut self) {
        // SAFETY: owned by this value; nothing runs them any more (the executable graph is
        // being destroyed or re-recorded after its launches).
        unsafe {
            if self.stream != 0 {
                crate::stream::cuStreamDestroy(self.stream as *mut c_void);
            }
            for &e in &self.execs {
                crate::graph::cuGraphExecDestroy(e as *mut c_void);
            }
        }
    }
}
