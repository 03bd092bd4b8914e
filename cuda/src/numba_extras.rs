//! What numba-cuda (and cuda.core under it) calls beyond the other modules: the profiler
//! controls and user objects.
//!
//! `cuProfilerStart` / `cuProfilerStop` enable and disable collection by an attached profiling
//! tool for the current context. No profiling tool attaches to this library, so both only check
//! that a context is current and keep nothing; as with NVIDIA's libcuda without a tool, they
//! succeed, and starting twice or stopping twice is no error.

use crate::context::current;
use crate::error::{guard, invalid, R};
use crate::types::*;
use parking_lot::Mutex;
use std::ffi::c_void;

#[no_mangle]
pub unsafe extern "C" fn cuProfilerStart() -> CUresult {
    guard("cuProfilerStart", || current().map(|_| ()))
}

#[no_mangle]
pub unsafe extern "C" fn cuProfilerStop() -> CUresult {
    guard("cuProfilerStop", || current().map(|_| ()))
}

// ---------------------------------------------------------------------------------------------
// User objects (cuda.core keeps the Python objects a captured graph uses alive with them):
// `cuUserObjectCreate`, `Retain`, `Release`, `cuGraphRetainUserObject`, `ReleaseUserObject`.
// An object counts its references; a graph owns some (released when it is destroyed) and an
// executable graph instantiated from it owns a copy of the graph's (released when it is
// destroyed). When the count reaches zero the destructor runs on one internal thread, as CUDA
// runs it, never on the releasing thread.

const USER_OBJECT_MAGIC: u64 = 0x7467_6375_7573_6f62;
/// `CU_USER_OBJECT_NO_DESTRUCTOR_SYNC`, the one flag `cuUserObjectCreate` takes (required).
const CU_USER_OBJECT_NO_DESTRUCTOR_SYNC: u32 = 1;
/// `CU_GRAPH_USER_OBJECT_MOVE`: move the caller's references to the graph.
const CU_GRAPH_USER_OBJECT_MOVE: u32 = 1;

type Destroy = unsafe extern "C" fn(*mut c_void);

struct UserObject {
    magic: u64,
    refs: Mutex<u64>,
    ptr: usize,
    destroy: Destroy,
}

/// References owned by graphs and executable graphs: owner handle → (object, count).
static OWNED: Mutex<Vec<(usize, usize, u64)>> = Mutex::new(Vec::new());

unsafe fn user_object(h: *mut c_void) -> R<&'static UserObject> {
    crate::device::check_init()?;
    let o = (h as *const UserObject)
        .as_ref()
        .ok_or_else(|| invalid("the user object handle is NULL"))?;
    if o.magic != USER_OBJECT_MAGIC {
        return Err(invalid(format!("{h:?} is not a user object")));
    }
    Ok(o)
}

fn check_count(count: u32) -> R {
    if count == 0 || count > i32::MAX as u32 {
        return Err(invalid(format!(
            "count {count}: a reference count is 1..={}",
            i32::MAX
        )));
    }
    Ok(())
}

/// Runs destructors in order on one thread of this library.
fn run_destructor(ptr: usize, destroy: Destroy) {
    static QUEUE: Mutex<Option<std::sync::mpsc::Sender<(usize, Destroy)>>> = Mutex::new(None);
    let mut q = QUEUE.lock();
    let tx = q.get_or_insert_with(|| {
        let (tx, rx) = std::sync::mpsc::channel::<(usize, Destroy)>();
        std::thread::Builder::new()
            .name("tg-cuda-userobj".into())
            .spawn(move || {
                for (p, d) in rx {
                    // SAFETY: the destructor and its argument as cuUserObjectCreate was given.
                    unsafe { d(p as *mut c_void) };
                }
            })
            .expect("spawning the user object destructor thread");
        tx
    });
    let _ = tx.send((ptr, destroy));
}

/// Drops `count` references of `o`; the last one destroys it.
unsafe fn release(o: &'static UserObject, count: u64) -> R {
    let mut refs = o.refs.lock();
    if *refs < count {
        return Err(invalid(format!(
            "releasing {count} references of a user object that has {}",
            *refs
        )));
    }
    *refs -= count;
    if *refs == 0 {
        drop(refs);
        let b = Box::from_raw(o as *const UserObject as *mut UserObject);
        let (ptr, destroy) = (b.ptr, b.destroy);
        let mut b = b;
        b.magic = 0;
        drop(b);
        run_destructor(ptr, destroy);
    }
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn cuUserObjectCreate(
    out: *mut *mut c_void,
    ptr: *mut c_void,
    destroy: Option<Destroy>,
    initial: u32,
    flags: u32,
) -> CUresult {
    guard("cuUserObjectCreate", || {
        let o = crate::device::out(out, "object_out")?;
        crate::device::check_init()?;
        let destroy = destroy.ok_or_else(|| invalid("the destroy callback is NULL"))?;
        check_count(initial)?;
        if flags != CU_USER_OBJECT_NO_DESTRUCTOR_SYNC {
            return Err(invalid(format!(
                "flags {flags:#x}: CU_USER_OBJECT_NO_DESTRUCTOR_SYNC (1) is required"
            )));
        }
        *o = Box::into_raw(Box::new(UserObject {
            magic: USER_OBJECT_MAGIC,
            refs: Mutex::new(u64::from(initial)),
            ptr: ptr as usize,
            destroy,
        })) as *mut c_void;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuUserObjectRetain(h: *mut c_void, count: u32) -> CUresult {
    guard("cuUserObjectRetain", || {
        let o = user_object(h)?;
        check_count(count)?;
        *o.refs.lock() += u64::from(count);
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuUserObjectRelease(h: *mut c_void, count: u32) -> CUresult {
    guard("cuUserObjectRelease", || {
        let o = user_object(h)?;
        check_count(count)?;
        release(o, u64::from(count))
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuGraphRetainUserObject(
    graph: *mut c_void,
    h: *mut c_void,
    count: u32,
    flags: u32,
) -> CUresult {
    guard("cuGraphRetainUserObject", || {
        crate::graph::graph_ref(graph)?;
        let o = user_object(h)?;
        check_count(count)?;
        if flags & !CU_GRAPH_USER_OBJECT_MOVE != 0 {
            return Err(invalid(format!(
                "flags {flags:#x}: 0 or CU_GRAPH_USER_OBJECT_MOVE (1)"
            )));
        }
        if flags & CU_GRAPH_USER_OBJECT_MOVE == 0 {
            *o.refs.lock() += u64::from(count);
        }
        add_owned(graph as usize, h as usize, u64::from(count));
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuGraphReleaseUserObject(
    graph: *mut c_void,
    h: *mut c_void,
    count: u32,
) -> CUresult {
    guard("cuGraphReleaseUserObject", || {
        crate::graph::graph_ref(graph)?;
        let o = user_object(h)?;
        check_count(count)?;
        let count = u64::from(count);
        {
            let mut owned = OWNED.lock();
            let i = owned
                .iter()
                .position(|&(g, obj, _)| g == graph as usize && obj == h as usize)
                .filter(|&i| owned[i].2 >= count)
                .ok_or_else(|| {
                    invalid(format!(
                        "the graph owns fewer than {count} references of user object {h:?}"
                    ))
                })?;
            owned[i].2 -= count;
            if owned[i].2 == 0 {
                owned.swap_remove(i);
            }
        }
        release(o, count)
    })
}

fn add_owned(owner: usize, obj: usize, count: u64) {
    let mut owned = OWNED.lock();
    match owned.iter_mut().find(|e| e.0 == owner && e.1 == obj) {
        Some(e) => e.2 += count,
        None => owned.push((owner, obj, count)),
    }
}

/// An executable graph instantiated from `graph` owns a copy of the graph's references.
pub(crate) fn exec_created(graph: *mut c_void, exec: *mut c_void) {
    let copies: Vec<(usize, u64)> = OWNED
        .lock()
        .iter()
        .filter(|e| e.0 == graph as usize)
        .map(|e| (e.1, e.2))
        .collect();
    for (obj, count) in copies {
        // SAFETY: an object a graph owns references of is alive.
        if let Ok(o) = unsafe { user_object(obj as *mut c_void) } {
            *o.refs.lock() += count;
            add_owned(exec as usize, obj, count);
        }
    }
}

/// A graph or executable graph is destroyed: its references are released.
pub(crate) fn owner_destroyed(owner: *mut c_void) {
    let mine: Vec<(usize, u64)> = {
        let mut owned = OWNED.lock();
        let mine = owned
            .iter()
            .filter(|e| e.0 == owner as usize)
            .map(|e| (e.1, e.2))
            .collect();
        owned.retain(|e| e.0 != owner as usize);
        mine
    };
    for (obj, count) in mine {
        // SAFETY: an object an owner holds references of is alive.
        unsafe {
            if let Ok(o) = user_object(obj as *mut c_void) {
                let _ = release(o, count);
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// `cuGraphInstantiateWithParams` (cuda.core instantiates with it): `cuGraphInstantiateWithFlags`
// with the flags of the parameters, then the upload they ask for; the result and the error node
// are written back.

/// `CUDA_GRAPH_INSTANTIATE_PARAMS`.
#[repr(C)]
pub struct InstantiateParams {
    flags: u64,
    upload_stream: *mut c_void,
    err_node_out: *mut c_void,
    /// `CUgraphInstantiateResult`.
    result_out: u32,
}

/// `CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD`.
const INSTANTIATE_FLAG_UPLOAD: u64 = 2;
/// `CUDA_GRAPH_INSTANTIATE_SUCCESS`, `CUDA_GRAPH_INSTANTIATE_ERROR`.
const INSTANTIATE_SUCCESS: u32 = 0;
const INSTANTIATE_ERROR: u32 = 1;

#[no_mangle]
pub unsafe extern "C" fn cuGraphInstantiateWithParams(
    pexec: *mut *mut c_void,
    graph: *mut c_void,
    params: *mut InstantiateParams,
) -> CUresult {
    guard("cuGraphInstantiateWithParams", || {
        let p = params
            .as_mut()
            .ok_or_else(|| invalid("instantiateParams is NULL"))?;
        p.err_node_out = std::ptr::null_mut();
        p.result_out = INSTANTIATE_ERROR;
        let r = crate::graph::cuGraphInstantiateWithFlags(pexec, graph, p.flags);
        if r != CUDA_SUCCESS {
            return Err(crate::error::Fail(r, None));
        }
        if p.flags & INSTANTIATE_FLAG_UPLOAD != 0 {
            let r = crate::graph::cuGraphUpload(*pexec, p.upload_stream);
            if r != CUDA_SUCCESS {
                crate::graph::cuGraphExecDestroy(*pexec);
                *pexec = std::ptr::null_mut();
                return Err(crate::error::Fail(r, None));
            }
        }
        p.result_out = INSTANTIATE_SUCCESS;
        Ok(())
    })
}
