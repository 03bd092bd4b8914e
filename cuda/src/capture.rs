//! Stream capture (`cuStreamBeginCapture` ... `cuStreamEndCapture`): while a stream captures,
//! the work it is given becomes nodes of the capture's graph instead of running: kernel launches
//! (kernel nodes), `cuMemsetD8/D16/D32(Async)` (memset nodes), copies of rows and pitched
//! blocks (memcpy nodes), `cuLaunchHostFunc` (host nodes), `cuMemAllocAsync` /
//! `cuMemFreeAsync` (memory nodes), each depending on the stream's previous nodes. `cuEventRecord` on a capturing
//! stream captures the event (its nodes); `cuStreamWaitEvent` on a captured event adds its nodes
//! to the waiting stream's dependencies, and a stream that is not capturing joins the capture
//! there (fork and join across streams). Any other work given to a capturing stream, and
//! synchronizing or querying it, fails with `CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED` and
//! invalidates the capture (`cuStreamEndCapture` then answers
//! `CUDA_ERROR_STREAM_CAPTURE_INVALIDATED` and no graph). `cuEventQuery` and
//! `cuEventSynchronize` of an event last recorded in a capture answer
//! `CUDA_ERROR_CAPTURED_EVENT`. The thread's capture mode is kept for
//! `cuThreadExchangeStreamCaptureMode`; calls on other streams are not restricted by it.

use crate::device::out;
use crate::error::{fail, guard, invalid, Fail, R};
use crate::graph::NodeKind;
use crate::stream::{stream_of, Kind, Stream};
use crate::types::*;
use parking_lot::Mutex;
use std::cell::Cell;
use std::ffi::c_void;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread::ThreadId;

/// `CUstreamCaptureStatus`.
const CAPTURE_STATUS_NONE: u32 = 0;
const CAPTURE_STATUS_ACTIVE: u32 = 1;
const CAPTURE_STATUS_INVALIDATED: u32 = 2;
/// `CU_STREAM_CAPTURE_MODE_RELAXED`.
const MODE_RELAXED: u32 = 2;

pub const CUDA_ERROR_ILLEGAL_STATE: CUresult = 401;
pub const CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED: CUresult = 900;
pub const CUDA_ERROR_STREAM_CAPTURE_INVALIDATED: CUresult = 901;
pub const CUDA_ERROR_STREAM_CAPTURE_MERGE: CUresult = 902;
pub const CUDA_ERROR_STREAM_CAPTURE_UNMATCHED: CUresult = 903;
pub const CUDA_ERROR_STREAM_CAPTURE_UNJOINED: CUresult = 904;
pub const CUDA_ERROR_STREAM_CAPTURE_ISOLATION: CUresult = 905;
pub const CUDA_ERROR_CAPTURED_EVENT: CUresult = 907;
pub const CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD: CUresult = 908;

thread_local! {
    /// `CUstreamCaptureMode` of the calling thread (`CU_STREAM_CAPTURE_MODE_GLOBAL`, 0, at first).
    static MODE: Cell<u32> = const { Cell::new(0) };
}

/// One capture sequence.
struct Seq {
    id: u64,
    /// The graph being built (a `CUgraph`).
    graph: usize,
    /// The capture made the graph (`cuStreamBeginCapture`), rather than adding to the
    /// program's (`cuStreamBeginCaptureToGraph`): a failed capture destroys it.
    owned: bool,
    /// The stream that began it.
    origin: usize,
    mode: u32,
    thread: ThreadId,
    /// Why it was invalidated.
    invalid: Option<String>,
}

/// A stream taking part in a capture sequence: its sequence and the nodes its next node depends
/// on (`CUgraphNode` handles).
struct Member {
    stream: usize,
    seq: u64,
    deps: Vec<usize>,
}

#[derive(Default)]
struct State {
    next_id: u64,
    seqs: Vec<Seq>,
    members: Vec<Member>,
    /// Events last recorded in a capture: event, sequence id, the nodes recorded.
    events: Vec<(usize, u64, Vec<usize>)>,
}

static STATE: Mutex<State> = Mutex::new(State {
    next_id: 0,
    seqs: Vec::new(),
    members: Vec::new(),
    events: Vec::new(),
});
/// `STATE.events.len()`: event calls take no lock while no event is captured.
static CAPTURED_EVENTS: AtomicUsize = AtomicUsize::new(0);

fn key(s: &Stream) -> usize {
    s as *const Stream as usize
}

impl State {
    fn member(&mut self, s: usize) -> Option<(usize, usize)> {
        let m = self.members.iter().position(|m| m.stream == s)?;
        let q = self.seqs.iter().position(|q| q.id == self.members[m].seq)?;
        Some((m, q))
    }

    fn invalidate(&mut self, q: usize, why: String) {
        self.seqs[q].invalid.get_or_insert(why);
    }

    fn set_events_count(&self) {
        CAPTURED_EVENTS.store(self.events.len(), Ordering::Release);
    }
}

fn invalidated(why: &str) -> Fail {
    fail(
        CUDA_ERROR_STREAM_CAPTURE_INVALIDATED,
        format!("the stream's capture was invalidated earlier: {why}"),
    )
}

/// Work `what` given to capturing stream `s` that capture does not support: the capture is
/// invalidated; `CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED` (`..._INVALIDATED` if it already was).
#[cold]
#[inline(never)]
pub fn refuse(s: &Stream, what: &str) -> Fail {
    let mut st = STATE.lock();
    let Some((_, q)) = st.member(key(s)) else {
        return fail(
            CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,
            format!("{what} during stream capture"),
        );
    };
    if let Some(why) = &st.seqs[q].invalid {
        return invalidated(why);
    }
    let why = format!("{what} is not supported during stream capture");
    st.invalidate(q, why.clone());
    fail(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, why)
}

/// Add the node `kind` makes to the capture of stream `s`, after the stream's previous nodes.
#[cold]
#[inline(never)]
pub fn add(s: &Stream, kind: impl FnOnce() -> R<NodeKind>) -> R {
    let mut st = STATE.lock();
    let (m, q) = st
        .member(key(s))
        .ok_or_else(|| fail(CUDA_ERROR_ILLEGAL_STATE, "the stream is not capturing"))?;
    if let Some(why) = &st.seqs[q].invalid {
        return Err(invalidated(why));
    }
    let kind = kind()?;
    let deps: Vec<*mut c_void> = st.members[m]
        .deps
        .iter()
        .map(|&d| d as *mut c_void)
        .collect();
    let mut node = std::ptr::null_mut();
    // SAFETY: the graph lives until the capture ends; the dependencies are its nodes.
    unsafe {
        crate::graph::add_node(
            &mut node,
            st.seqs[q].graph as *mut c_void,
            deps.as_ptr(),
            deps.len(),
            kind,
        )?
    };
    st.members[m].deps = vec![node as usize];
    Ok(())
}

/// `cuEventRecord` of event `e` on capturing stream `s`: the event stands for the stream's
/// current nodes.
#[cold]
#[inline(never)]
pub fn record_event(s: &Stream, e: usize) -> R {
    let mut st = STATE.lock();
    let (m, q) = st
        .member(key(s))
        .ok_or_else(|| fail(CUDA_ERROR_ILLEGAL_STATE, "the stream is not capturing"))?;
    if let Some(why) = &st.seqs[q].invalid {
        return Err(invalidated(why));
    }
    let entry = (e, st.seqs[q].id, st.members[m].deps.clone());
    st.events.retain(|x| x.0 != e);
    st.events.push(entry);
    st.set_events_count();
    Ok(())
}

/// Event `e` was recorded outside capture (or destroyed): it is no longer a captured event.
#[inline]
pub fn event_released(e: usize) {
    if CAPTURED_EVENTS.load(Ordering::Acquire) == 0 {
        return;
    }
    let mut st = STATE.lock();
    st.events.retain(|x| x.0 != e);
    st.set_events_count();
}

/// `cuEventQuery` / `cuEventSynchronize`: `CUDA_ERROR_CAPTURED_EVENT` for an event last
/// recorded in a capture.
#[inline]
pub fn check_event(e: usize) -> R {
    if CAPTURED_EVENTS.load(Ordering::Acquire) == 0 {
        return Ok(());
    }
    if STATE.lock().events.iter().any(|x| x.0 == e) {
        return Err(fail(
            CUDA_ERROR_CAPTURED_EVENT,
            "the event was last recorded in a stream capture",
        ));
    }
    Ok(())
}

/// `cuStreamWaitEvent(s, e)` where capture is involved (`s` capturing or `e` captured): the
/// result; None when neither (an ordinary wait).
#[inline]
pub fn wait_event(s: &Stream, e: usize) -> Option<R> {
    if !s.is_capturing() && CAPTURED_EVENTS.load(Ordering::Acquire) == 0 {
        return None;
    }
    wait_event_slow(s, e)
}

#[cold]
#[inline(never)]
fn wait_event_slow(s: &Stream, e: usize) -> Option<R> {
    let mut st = STATE.lock();
    let ev = st
        .events
        .iter()
        .find(|x| x.0 == e)
        .map(|x| (x.1, x.2.clone()));
    let me = st.member(key(s));
    match (me, ev) {
        (None, None) => None,
        (Some((_, q)), None) => {
            if let Some(why) = &st.seqs[q].invalid {
                return Some(Err(invalidated(why)));
            }
            let why = "cuStreamWaitEvent on a capturing stream for an event recorded outside \
                       the capture (a dependency across the capture's boundary)"
                .to_string();
            st.invalidate(q, why.clone());
            Some(Err(fail(CUDA_ERROR_STREAM_CAPTURE_ISOLATION, why)))
        }
        (me, Some((id, nodes))) => {
            let Some(q) = st.seqs.iter().position(|x| x.id == id) else {
                return Some(Err(fail(
                    CUDA_ERROR_STREAM_CAPTURE_ISOLATION,
                    "the event was recorded in a stream capture that has ended",
                )));
            };
            if let Some(why) = &st.seqs[q].invalid {
                return Some(Err(invalidated(why)));
            }
            match me {
                Some((m, q2)) if q2 == q => {
                    let deps = &mut st.members[m].deps;
                    for n in nodes {
                        if !deps.contains(&n) {
                            deps.push(n);
                        }
                    }
                    Some(Ok(()))
                }
                Some((_, q2)) => {
                    let why = "cuStreamWaitEvent joins two capture sequences".to_string();
                    st.invalidate(q2, why.clone());
                    st.invalidate(q, why.clone());
                    Some(Err(fail(CUDA_ERROR_STREAM_CAPTURE_MERGE, why)))
                }
                None => {
                    // The stream joins the capture, after the event's nodes.
                    st.members.push(Member {
                        stream: key(s),
                        seq: id,
                        deps: nodes,
                    });
                    s.set_capturing(true);
                    Some(Ok(()))
                }
            }
        }
    }
}

unsafe fn begin(h: *mut c_void, mode: u32, ptds: bool) -> R {
    begin_into(h, mode, ptds, None)
}

/// Begin a capture on stream `h`: into a new graph, or into graph `into` after its nodes
/// `deps` (`cuStreamBeginCaptureToGraph`).
unsafe fn begin_into(
    h: *mut c_void,
    mode: u32,
    ptds: bool,
    into: Option<(usize, Vec<usize>)>,
) -> R {
    let s = stream_of(h, ptds)?;
    if mode > MODE_RELAXED {
        return Err(invalid(format!("capture mode {mode}")));
    }
    if s.kind == Kind::Legacy {
        return Err(fail(
            CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,
            "the legacy default stream cannot capture",
        ));
    }
    let mut st = STATE.lock();
    if st.member(key(s)).is_some() {
        return Err(fail(
            CUDA_ERROR_ILLEGAL_STATE,
            "the stream is capturing already",
        ));
    }
    st.next_id += 1;
    let id = st.next_id;
    let owned = into.is_none();
    let (graph, deps) = into.unwrap_or_else(|| (crate::graph::new_graph() as usize, Vec::new()));
    st.seqs.push(Seq {
        id,
        graph,
        owned,
        origin: key(s),
        mode,
        thread: std::thread::current().id(),
        invalid: None,
    });
    st.members.push(Member {
        stream: key(s),
        seq: id,
        deps,
    });
    s.set_capturing(true);
    Ok(())
}

/// `cuStreamBeginCaptureToGraph`: the captured work becomes nodes of graph `g`, the first after
/// its nodes `deps` (default edge data only); the graph stays the program's.
unsafe fn begin_to_graph(
    h: *mut c_void,
    g: *mut c_void,
    deps: *const *mut c_void,
    edge_data: *const c_void,
    n: usize,
    mode: u32,
    ptds: bool,
) -> R {
    crate::graph::graph_ref(g)?;
    if n > 0 && deps.is_null() {
        return Err(invalid(format!("dependencies is NULL with {n} nodes")));
    }
    crate::graph::default_edges(edge_data, n)?;
    let mut list = Vec::with_capacity(n);
    for i in 0..n {
        let node = *deps.add(i);
        if !crate::graph::node_in(node, g)? {
            return Err(invalid(format!(
                "dependencies[{i}] {node:?} is not a node of graph {g:?}"
            )));
        }
        if !list.contains(&(node as usize)) {
            list.push(node as usize);
        }
    }
    begin_into(h, mode, ptds, Some((g as usize, list)))
}

#[no_mangle]
pub unsafe extern "C" fn cuStreamBeginCaptureToGraph(
    h: *mut c_void,
    g: *mut c_void,
    deps: *const *mut c_void,
    edge_data: *const c_void,
    n: usize,
    mode: u32,
) -> CUresult {
    guard("cuStreamBeginCaptureToGraph", || {
        begin_to_graph(h, g, deps, edge_data, n, mode, false)
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuStreamBeginCaptureToGraph_ptsz(
    h: *mut c_void,
    g: *mut c_void,
    deps: *const *mut c_void,
    edge_data: *const c_void,
    n: usize,
    mode: u32,
) -> CUresult {
    guard("cuStreamBeginCaptureToGraph_ptsz", || {
        begin_to_graph(h, g, deps, edge_data, n, mode, true)
    })
}

/// The unversioned form (CUDA 10.0) takes no mode: `CU_STREAM_CAPTURE_MODE_GLOBAL`.
#[no_mangle]
pub unsafe extern "C" fn cuStreamBeginCapture(h: *mut c_void) -> CUresult {
    guard("cuStreamBeginCapture", || begin(h, 0, false))
}

#[no_mangle]
pub unsafe extern "C" fn cuStreamBeginCapture_ptsz(h: *mut c_void) -> CUresult {
    guard("cuStreamBeginCapture_ptsz", || begin(h, 0, true))
}

#[no_mangle]
pub unsafe extern "C" fn cuStreamBeginCapture_v2(h: *mut c_void, mode: u32) -> CUresult {
    guard("cuStreamBeginCapture_v2", || begin(h, mode, false))
}

#[no_mangle]
pub unsafe extern "C" fn cuStreamBeginCapture_v2_ptsz(h: *mut c_void, mode: u32) -> CUresult {
    guard("cuStreamBeginCapture_v2_ptsz", || begin(h, mode, true))
}

/// Stream `s`, which takes part in a capture, is being destroyed. A stream that joined the
/// capture leaves it: its nodes stay in the graph, and the capture still ends with
/// `CUDA_ERROR_STREAM_CAPTURE_UNJOINED` unless they lead to the origin's last nodes (the sample
/// graphMemoryNodes destroys a joined stream after rejoining it). The stream that began the
/// capture ends it: the graph is discarded.
pub(crate) fn stream_destroyed(s: &Stream) {
    let mut st = STATE.lock();
    let Some((_, q)) = st.member(key(s)) else {
        return;
    };
    s.set_capturing(false);
    if st.seqs[q].origin != key(s) {
        return;
    }
    let seq = st.seqs.remove(q);
    for x in st.members.iter().filter(|x| x.seq == seq.id) {
        // SAFETY: streams are never freed (a destroyed stream's memory stays).
        unsafe { (*(x.stream as *const Stream)).set_capturing(false) };
    }
    st.members.retain(|x| x.seq != seq.id);
    drop(st);
    if seq.owned {
        // SAFETY: the capture's graph, owned by the capture until it ends.
        unsafe { crate::graph::cuGraphDestroy(seq.graph as *mut c_void) };
    }
}

unsafe fn end(h: *mut c_void, pg: *mut *mut c_void, ptds: bool) -> R {
    let s = stream_of(h, ptds)?;
    // A capture into the program's graph may leave phGraph NULL.
    let into_existing = {
        let mut st = STATE.lock();
        st.member(key(s)).is_some_and(|(_, q)| !st.seqs[q].owned)
    };
    let mut ignored = std::ptr::null_mut();
    let p = if pg.is_null() && into_existing {
        &mut ignored
    } else {
        out(pg, "phGraph")?
    };
    let mut st = STATE.lock();
    let (m, q) = st
        .member(key(s))
        .ok_or_else(|| fail(CUDA_ERROR_ILLEGAL_STATE, "the stream is not capturing"))?;
    let seq = &st.seqs[q];
    if seq.origin != key(s) {
        return Err(fail(
            CUDA_ERROR_STREAM_CAPTURE_UNMATCHED,
            "the capture was not begun on this stream (it joined through an event)",
        ));
    }
    if seq.mode != MODE_RELAXED && seq.thread != std::thread::current().id() {
        return Err(fail(
            CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD,
            "the capture (not CU_STREAM_CAPTURE_MODE_RELAXED) was begun on another thread",
        ));
    }
    let id = seq.id;
    let graph = seq.graph as *mut c_void;
    let last = st.members[m].deps.clone();
    // Every stream that joined must have rejoined: its last nodes lead to the origin's.
    let mut unjoined = false;
    for x in st
        .members
        .iter()
        .filter(|x| x.seq == id && x.stream != key(s))
    {
        if !crate::graph::reached_from(graph, &x.deps, &last)? {
            unjoined = true;
        }
    }
    let seq = st.seqs.remove(q);
    for x in st.members.iter().filter(|x| x.seq == id) {
        // SAFETY: streams are never freed (a destroyed stream's memory stays).
        (*(x.stream as *const Stream)).set_capturing(false);
    }
    st.members.retain(|x| x.seq != id);
    drop(st);
    if let Some(why) = seq.invalid {
        *p = std::ptr::null_mut();
        if seq.owned {
            crate::graph::cuGraphDestroy(graph);
        }
        return Err(invalidated(&why));
    }
    if unjoined {
        *p = std::ptr::null_mut();
        if seq.owned {
            crate::graph::cuGraphDestroy(graph);
        }
        return Err(fail(
            CUDA_ERROR_STREAM_CAPTURE_UNJOINED,
            "a stream that joined the capture did not rejoin the stream that began it",
        ));
    }
    *p = graph;
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn cuStreamEndCapture(h: *mut c_void, pg: *mut *mut c_void) -> CUresult {
    guard("cuStreamEndCapture", || end(h, pg, false))
}

#[no_mangle]
pub unsafe extern "C" fn cuStreamEndCapture_ptsz(h: *mut c_void, pg: *mut *mut c_void) -> CUresult {
    guard("cuStreamEndCapture_ptsz", || end(h, pg, true))
}

/// A stream's capture status, sequence id, graph and dependency nodes (a pointer into the
/// capture's state, valid until the stream's next capture call, and their number).
unsafe fn status_of(s: &Stream) -> (u32, u64, usize, *const c_void, usize) {
    if !s.is_capturing() {
        return (CAPTURE_STATUS_NONE, 0, 0, std::ptr::null(), 0);
    }
    let mut st = STATE.lock();
    match st.member(key(s)) {
        None => (CAPTURE_STATUS_NONE, 0, 0, std::ptr::null(), 0),
        Some((m, q)) => {
            let seq = &st.seqs[q];
            let status = if seq.invalid.is_some() {
                CAPTURE_STATUS_INVALIDATED
            } else {
                CAPTURE_STATUS_ACTIVE
            };
            let d = &st.members[m].deps;
            (
                status,
                seq.id,
                seq.graph,
                d.as_ptr() as *const c_void,
                d.len(),
            )
        }
    }
}

unsafe fn is_capturing(h: *mut c_void, status: *mut u32, ptds: bool) -> R {
    let o = out(status, "captureStatus")?;
    *o = status_of(stream_of(h, ptds)?).0;
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn cuStreamIsCapturing(h: *mut c_void, status: *mut u32) -> CUresult {
    guard("cuStreamIsCapturing", || is_capturing(h, status, false))
}

#[no_mangle]
pub unsafe extern "C" fn cuStreamIsCapturing_ptsz(h: *mut c_void, status: *mut u32) -> CUresult {
    guard("cuStreamIsCapturing_ptsz", || is_capturing(h, status, true))
}

/// `cuStreamGetCaptureInfo` (all forms): status, and while capturing the sequence id, graph,
/// dependency nodes and their number (edge data: NULL, the default edges); not capturing: 0,
/// NULL, NULL, 0.
#[allow(clippy::too_many_arguments)]
unsafe fn capture_info(
    h: *mut c_void,
    status: *mut u32,
    id: *mut u64,
    graph: *mut *mut c_void,
    deps: *mut *const c_void,
    edges: *mut *const c_void,
    num: *mut usize,
    ptds: bool,
) -> R {
    let o = out(status, "captureStatus_out")?;
    let (st, i, g, d, n) = status_of(stream_of(h, ptds)?);
    *o = st;
    let active = st == CAPTURE_STATUS_ACTIVE;
    if let Some(x) = id.as_mut() {
        *x = if st == CAPTURE_STATUS_NONE { 0 } else { i };
    }
    if let Some(x) = graph.as_mut() {
        *x = if active {
            g as *mut c_void
        } else {
            std::ptr::null_mut()
        };
    }
    if let Some(x) = deps.as_mut() {
        *x = if active { d } else { std::ptr::null() };
    }
    if let Some(x) = edges.as_mut() {
        *x = std::ptr::null();
    }
    if let Some(x) = num.as_mut() {
        *x = if active { n } else { 0 };
    }
    Ok(())
}

const N: *mut c_void = std::ptr::null_mut();

#[no_mangle]
pub unsafe extern "C" fn cuStreamGetCaptureInfo(
    h: *mut c_void,
    s: *mut u32,
    id: *mut u64,
) -> CUresult {
    guard("cuStreamGetCaptureInfo", || {
        capture_info(h, s, id, N.cast(), N.cast(), N.cast(), N.cast(), false)
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuStreamGetCaptureInfo_ptsz(
    h: *mut c_void,
    s: *mut u32,
    id: *mut u64,
) -> CUresult {
    guard("cuStreamGetCaptureInfo_ptsz", || {
        capture_info(h, s, id, N.cast(), N.cast(), N.cast(), N.cast(), true)
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuStreamGetCaptureInfo_v2(
    h: *mut c_void,
    s: *mut u32,
    id: *mut u64,
    g: *mut *mut c_void,
    deps: *mut *const c_void,
    num: *mut usize,
) -> CUresult {
    guard("cuStreamGetCaptureInfo_v2", || {
        capture_info(h, s, id, g, deps, N.cast(), num, false)
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuStreamGetCaptureInfo_v2_ptsz(
    h: *mut c_void,
    s: *mut u32,
    id: *mut u64,
    g: *mut *mut c_void,
    deps: *mut *const c_void,
    num: *mut usize,
) -> CUresult {
    guard("cuStreamGetCaptureInfo_v2_ptsz", || {
        capture_info(h, s, id, g, deps, N.cast(), num, true)
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuStreamGetCaptureInfo_v3(
    h: *mut c_void,
    s: *mut u32,
    id: *mut u64,
    g: *mut *mut c_void,
    deps: *mut *const c_void,
    edges: *mut *const c_void,
    num: *mut usize,
) -> CUresult {
    guard("cuStreamGetCaptureInfo_v3", || {
        capture_info(h, s, id, g, deps, edges, num, false)
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuStreamGetCaptureInfo_v3_ptsz(
    h: *mut c_void,
    s: *mut u32,
    id: *mut u64,
    g: *mut *mut c_void,
    deps: *mut *const c_void,
    edges: *mut *const c_void,
    num: *mut usize,
) -> CUresult {
    guard("cuStreamGetCaptureInfo_v3_ptsz", || {
        capture_info(h, s, id, g, deps, edges, num, true)
    })
}

/// `cuStreamUpdateCaptureDependencies(_v2)`: add (`CU_STREAM_ADD_CAPTURE_DEPENDENCIES`, 0) or
/// set (`CU_STREAM_SET_CAPTURE_DEPENDENCIES`, 1) the nodes the stream's next captured node
/// depends on; the nodes must be nodes of the capture's graph.
unsafe fn update_deps(
    h: *mut c_void,
    nodes: *const *mut c_void,
    edge_data: *const c_void,
    n: usize,
    flags: u32,
    ptds: bool,
) -> R {
    if flags > 1 {
        return Err(invalid(format!("flags {flags:#x}")));
    }
    if n > 0 && nodes.is_null() {
        return Err(invalid(format!("dependencies is NULL with {n} nodes")));
    }
    crate::graph::default_edges(edge_data, n)?;
    let s = stream_of(h, ptds)?;
    let mut st = STATE.lock();
    let (m, q) = st
        .member(key(s))
        .ok_or_else(|| fail(CUDA_ERROR_ILLEGAL_STATE, "the stream is not capturing"))?;
    if let Some(why) = &st.seqs[q].invalid {
        return Err(invalidated(why));
    }
    let g = st.seqs[q].graph as *mut c_void;
    let mut list = Vec::with_capacity(n);
    for i in 0..n {
        let node = *nodes.add(i);
        if !crate::graph::node_in(node, g)? {
            return Err(invalid(format!(
                "dependencies[{i}] is not a node of the capture's graph"
            )));
        }
        list.push(node as usize);
    }
    let deps = &mut st.members[m].deps;
    if flags == 1 {
        deps.clear();
    }
    for x in list {
        if !deps.contains(&x) {
            deps.push(x);
        }
    }
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn cuStreamUpdateCaptureDependencies(
    h: *mut c_void,
    nodes: *mut *mut c_void,
    n: usize,
    flags: u32,
) -> CUresult {
    guard("cuStreamUpdateCaptureDependencies", || {
        update_deps(h, nodes, std::ptr::null(), n, flags, false)
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuStreamUpdateCaptureDependencies_ptsz(
    h: *mut c_void,
    nodes: *mut *mut c_void,
    n: usize,
    flags: u32,
) -> CUresult {
    guard("cuStreamUpdateCaptureDependencies_ptsz", || {
        update_deps(h, nodes, std::ptr::null(), n, flags, true)
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuStreamUpdateCaptureDependencies_v2(
    h: *mut c_void,
    nodes: *mut *mut c_void,
    edges: *const c_void,
    n: usize,
    flags: u32,
) -> CUresult {
    guard("cuStreamUpdateCaptureDependencies_v2", || {
        update_deps(h, nodes, edges, n, flags, false)
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuStreamUpdateCaptureDependencies_v2_ptsz(
    h: *mut c_void,
    nodes: *mut *mut c_void,
    edges: *const c_void,
    n: usize,
    flags: u32,
) -> CUresult {
    guard("cuStreamUpdateCaptureDependencies_v2_ptsz", || {
        update_deps(h, nodes, edges, n, flags, true)
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuThreadExchangeStreamCaptureMode(mode: *mut u32) -> CUresult {
    guard("cuThreadExchangeStreamCaptureMode", || {
        let m = out(mode, "mode")?;
        crate::device::check_init()?;
        if *m > 2 {
            return Err(invalid(format!("capture mode {}", *m)));
        }
        *m = MODE.with(|c| c.replace(*m));
        Ok(())
    })
}
