//! Interprocess handles: `cuIpcGetMemHandle`, `cuIpcOpenMemHandle_v2`, `cuIpcCloseMemHandle`,
//! `cuIpcGetEventHandle`, `cuIpcOpenEventHandle`.
//!
//! A handle names memory another process may map: the exporting process keeps an fd of the
//! memory (libtegragpu's `Buffer::export_fd`: an RM export fd on desktop GPUs, a dma-buf on
//! Jetson) and serves it on a Unix socket of the abstract namespace, named after its process id
//! and a random token, to whoever presents the handle (64 bytes: the token, the process id, an
//! export number and the size). The importing process receives the fd (`SCM_RIGHTS`) and imports
//! it (`Device::import_fd`). An event handle is the same for the event's memory: the 64-bit value
//! the GPU releases when the last record is reached, and the value that record waits for.
//!
//! The rules are NVIDIA's, as observed with its libcuda: a handle names the whole `cuMemAlloc`
//! allocation holding the pointer (not pinned, managed or pool memory); a process cannot open its
//! own handles (`CUDA_ERROR_INVALID_CONTEXT`); a handle opened twice by a context gives the same
//! address and needs as many closes; interprocess events are made with
//! `CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING`.

use crate::context::{current, Context};
use crate::device::out;
use crate::error::{fail, guard, invalid, Fail, R};
use crate::types::*;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::ffi::c_void;
use std::io::{IoSlice, IoSliceMut, Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixListener, UnixStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

const MAGIC: [u8; 4] = *b"tgIP";
const KIND_MEM: u8 = 1;
const KIND_EVENT: u8 = 2;
/// An allocation of a pool with shareable handles (`cuMemPoolExportPointer`).
const KIND_POOL_PTR: u8 = 3;
/// The record in a pool's shareable handle (`cuMemPoolExportToShareableHandle`).
const POOL_MAGIC: [u8; 4] = *b"tgPL";
const POOL_RECORD_BYTES: usize = 64;
/// How long a connection to the exporting process may take to answer.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(10);

/// What a 64-byte handle carries.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub(crate) struct Handle {
    kind: u8,
    pid: u32,
    token: [u8; 16],
    id: u64,
    /// Bytes of the allocation (memory) or of the event's memory.
    pub(crate) size: u64,
}

impl Handle {
    fn encode(&self) -> [u8; 64] {
        let mut b = [0u8; 64];
        b[0..4].copy_from_slice(&MAGIC);
        b[4] = self.kind;
        b[8..12].copy_from_slice(&self.pid.to_le_bytes());
        b[16..32].copy_from_slice(&self.token);
        b[32..40].copy_from_slice(&self.id.to_le_bytes());
        b[40..48].copy_from_slice(&self.size.to_le_bytes());
        b
    }

    fn decode(b: &[u8; 64], kind: u8) -> Option<Handle> {
        let u64_at = |o: usize| u64::from_le_bytes(b[o..o + 8].try_into().unwrap_or([0; 8]));
        let h = Handle {
            kind: b[4],
            pid: u32::from_le_bytes(b[8..12].try_into().ok()?),
            token: b[16..32].try_into().ok()?,
            id: u64_at(32),
            size: u64_at(40),
        };
        (b[0..4] == MAGIC && h.kind == kind && h.pid != 0 && h.size != 0).then_some(h)
    }

    /// The exporting process's socket (abstract namespace).
    fn socket_name(pid: u32, token: &[u8; 16]) -> String {
        let hex: String = token.iter().map(|b| format!("{b:02x}")).collect();
        format!("tegragpu-ipc-{pid}-{hex}")
    }
}

/// One exported fd.
struct Export {
    fd: OwnedFd,
    size: u64,
    kind: u8,
}

/// This process's exports and the thread that serves them.
struct Server {
    pid: u32,
    token: [u8; 16],
    /// By export number.
    exports: Mutex<HashMap<u64, Export>>,
    /// Export number by what was exported (an allocation's address, an event's handle).
    by_key: Mutex<HashMap<(u8, u64), u64>>,
    next: std::sync::atomic::AtomicU64,
}

static SERVER: Mutex<Option<&'static Server>> = Mutex::new(None);
/// Whether anything was ever exported (frees skip the lookup otherwise).
static EXPORTED: AtomicBool = AtomicBool::new(false);

fn random_token() -> R<[u8; 16]> {
    let mut t = [0u8; 16];
    // SAFETY: writes at most 16 bytes into `t`.
    let n = unsafe { libc::getrandom(t.as_mut_ptr() as *mut c_void, t.len(), 0) };
    if n != t.len() as isize {
        return Err(fail(
            CUDA_ERROR_OPERATING_SYSTEM,
            format!(
                "getrandom for an IPC token: {}",
                std::io::Error::last_os_error()
            ),
        ));
    }
    Ok(t)
}

/// This process's server, started at the first export (again in a forked child: its pid
/// differs).
fn server() -> R<&'static Server> {
    let pid = std::process::id();
    let mut g = SERVER.lock();
    if let Some(s) = *g {
        if s.pid == pid {
            return Ok(s);
        }
    }
    let token = random_token()?;
    let name = Handle::socket_name(pid, &token);
    let os = |what: &str, e: std::io::Error| {
        fail(
            CUDA_ERROR_OPERATING_SYSTEM,
            format!("IPC socket \"@{name}\": {what}: {e}"),
        )
    };
    let addr = SocketAddr::from_abstract_name(name.as_bytes()).map_err(|e| os("name", e))?;
    let listener = UnixListener::bind_addr(&addr).map_err(|e| os("bind", e))?;
    let s: &'static Server = Box::leak(Box::new(Server {
        pid,
        token,
        exports: Mutex::new(HashMap::new()),
        by_key: Mutex::new(HashMap::new()),
        next: std::sync::atomic::AtomicU64::new(1),
    }));
    std::thread::Builder::new()
        .name("tegragpu-ipc".into())
        .spawn(move || serve(s, listener))
        .map_err(|e| os("thread", e))?;
    *g = Some(s);
    Ok(s)
}

/// Request: the token (16 bytes), the export number, the kind; reply: status (0: the fd
/// follows; 1: wrong token; 2: no such export), the size.
const REQUEST_BYTES: usize = 32;
const REPLY_BYTES: usize = 16;

fn serve(s: &'static Server, listener: UnixListener) {
    for conn in listener.incoming() {
        let Ok(mut c) = conn else { continue };
        let _ = c.set_read_timeout(Some(ANSWER_TIMEOUT));
        let _ = c.set_write_timeout(Some(ANSWER_TIMEOUT));
        let mut req = [0u8; REQUEST_BYTES];
        if c.read_exact(&mut req).is_err() {
            continue;
        }
        let id = u64::from_le_bytes(req[16..24].try_into().unwrap_or([0; 8]));
        let kind = req[24];
        let exports = s.exports.lock();
        let (status, found) = if req[0..16] != s.token {
            (1u32, None)
        } else {
            match exports.get(&id).filter(|e| e.kind == kind) {
                Some(e) => (0, Some((e.fd.as_raw_fd(), e.size))),
                None => (2, None),
            }
        };
        let mut reply = [0u8; REPLY_BYTES];
        reply[0..4].copy_from_slice(&status.to_le_bytes());
        reply[8..16].copy_from_slice(&found.map_or(0, |f| f.1).to_le_bytes());
        match found {
            Some((fd, _)) => {
                let fds = [fd];
                let cmsg = [nix::sys::socket::ControlMessage::ScmRights(&fds)];
                let _ = nix::sys::socket::sendmsg::<()>(
                    c.as_raw_fd(),
                    &[IoSlice::new(&reply)],
                    &cmsg,
                    nix::sys::socket::MsgFlags::MSG_NOSIGNAL,
                    None,
                );
            }
            None => {
                let _ = c.write_all(&reply);
            }
        }
    }
}

/// The handle of `key` (kind `kind`), exporting it with `make` the first time.
fn export(kind: u8, key: u64, make: impl FnOnce() -> R<(RawFd, u64)>) -> R<Handle> {
    let s = server()?;
    let mut by_key = s.by_key.lock();
    let handle = |id: u64, size: u64| Handle {
        kind,
        pid: s.pid,
        token: s.token,
        id,
        size,
    };
    if let Some(&id) = by_key.get(&(kind, key)) {
        if let Some(e) = s.exports.lock().get(&id) {
            return Ok(handle(id, e.size));
        }
    }
    let (fd, size) = make()?;
    // SAFETY: `make` returned a new fd that the caller owns.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let id = s.next.fetch_add(1, Ordering::Relaxed);
    s.exports.lock().insert(id, Export { fd, size, kind });
    by_key.insert((kind, key), id);
    EXPORTED.store(true, Ordering::Release);
    Ok(handle(id, size))
}

/// Stop serving what was exported for `key` (the allocation or event is gone).
pub(crate) fn forget(kind_event: bool, key: u64) {
    forget_kind(if kind_event { KIND_EVENT } else { KIND_MEM }, key)
}

/// Stop serving the pool allocation whose buffer is at `va` (the pool freed the buffer).
pub(crate) fn forget_pool_pointer(va: u64) {
    forget_kind(KIND_POOL_PTR, va)
}

fn forget_kind(kind: u8, key: u64) {
    if !EXPORTED.load(Ordering::Acquire) {
        return;
    }
    let Some(s) = *SERVER.lock() else { return };
    if let Some(id) = s.by_key.lock().remove(&(kind, key)) {
        s.exports.lock().remove(&id);
    }
}

/// Ask the exporting process for the fd `h` names.
fn fetch(h: &Handle, kind_name: &str) -> R<(OwnedFd, u64)> {
    let gone = |why: String| {
        fail(
            CUDA_ERROR_INVALID_VALUE,
            format!(
                "the {kind_name} handle of process {} (export {}): {why}",
                h.pid, h.id
            ),
        )
    };
    let name = Handle::socket_name(h.pid, &h.token);
    let addr = SocketAddr::from_abstract_name(name.as_bytes())
        .map_err(|e| gone(format!("socket name: {e}")))?;
    let mut c = UnixStream::connect_addr(&addr).map_err(|e| {
        gone(format!(
            "the process does not serve it ({e}): it has exited, or runs in another network namespace"
        ))
    })?;
    let _ = c.set_read_timeout(Some(ANSWER_TIMEOUT));
    let _ = c.set_write_timeout(Some(ANSWER_TIMEOUT));
    let mut req = [0u8; REQUEST_BYTES];
    req[0..16].copy_from_slice(&h.token);
    req[16..24].copy_from_slice(&h.id.to_le_bytes());
    req[24] = h.kind;
    c.write_all(&req)
        .map_err(|e| gone(format!("sending the request: {e}")))?;
    let mut reply = [0u8; REPLY_BYTES];
    let mut cmsg = nix::cmsg_space!([RawFd; 1]);
    let mut iov = [IoSliceMut::new(&mut reply)];
    let msg = nix::sys::socket::recvmsg::<()>(
        c.as_raw_fd(),
        &mut iov,
        Some(&mut cmsg),
        nix::sys::socket::MsgFlags::MSG_CMSG_CLOEXEC,
    )
    .map_err(|e| gone(format!("receiving the answer: {e}")))?;
    let mut fd = None;
    for m in msg.cmsgs().map_err(|e| gone(format!("the answer: {e}")))? {
        if let nix::sys::socket::ControlMessageOwned::ScmRights(fds) = m {
            for f in fds {
                // SAFETY: a descriptor received just now, owned by this process.
                let o = unsafe { OwnedFd::from_raw_fd(f) };
                fd.get_or_insert(o);
            }
        }
    }
    let got = msg.bytes;
    if got != REPLY_BYTES {
        return Err(gone(format!(
            "a {got}-byte answer (the process did not answer in {} s?)",
            ANSWER_TIMEOUT.as_secs()
        )));
    }
    let status = u32::from_le_bytes(reply[0..4].try_into().unwrap_or([0xff; 4]));
    let size = u64::from_le_bytes(reply[8..16].try_into().unwrap_or([0; 8]));
    match (status, fd) {
        (0, Some(fd)) => Ok((fd, size)),
        (1, _) => Err(gone("the handle's token is not the process's".into())),
        (2, _) => Err(gone(
            "the process no longer exports it (freed or destroyed)".into(),
        )),
        (st, _) => Err(gone(format!("answer status {st}, no descriptor"))),
    }
}

// --- Memory -----------------------------------------------------------------------------------

/// Imports open in this process: by (context, handle) the address and the count of opens.
struct Opened {
    by_handle: HashMap<(usize, Handle), (u64, u32)>,
    by_va: HashMap<u64, (usize, Handle)>,
    /// Pool allocations imported (`cuMemPoolImportPointer`): the pool's number in its process.
    pool_uid: HashMap<u64, u64>,
}

static OPENED: Mutex<Option<Opened>> = Mutex::new(None);

/// Whether `va` was opened with `cuIpcOpenMemHandle` (freed only by `cuIpcCloseMemHandle`).
pub(crate) fn is_opened(va: u64) -> bool {
    OPENED
        .lock()
        .as_ref()
        .is_some_and(|o| o.by_va.contains_key(&va))
}

unsafe fn get_mem_handle(ph: *mut CUipcHandle, dptr: CUdeviceptr) -> R {
    let o = out(ph, "pHandle")?;
    current()?;
    let (a, _) = crate::memory::find_va(dptr).ok_or_else(|| {
        invalid(format!(
            "{dptr:#x} is not memory allocated by cuMemAlloc in this process"
        ))
    })?;
    let va = a.buf.gpu_va();
    if a.host.is_some() || a.managed.is_some() || a.pool.is_some() || is_opened(va) {
        return Err(invalid(format!(
            "{dptr:#x} is {} memory: only cuMemAlloc memory has IPC handles",
            if a.is_managed() {
                "managed"
            } else if a.pool.is_some() {
                "stream-ordered (pool)"
            } else if a.host.is_some() {
                "host"
            } else {
                "imported IPC"
            }
        )));
    }
    let size = a.size;
    let h = export(KIND_MEM, va, || {
        let (fd, _) = a.buf.export_fd()?;
        Ok((fd, size))
    })?;
    o.reserved = h.encode();
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn cuIpcGetMemHandle(ph: *mut CUipcHandle, dptr: CUdeviceptr) -> CUresult {
    guard("cuIpcGetMemHandle", || get_mem_handle(ph, dptr))
}

fn own_process(h: &Handle, what: &str) -> R {
    if h.pid == std::process::id() {
        return Err(fail(
            CUDA_ERROR_INVALID_CONTEXT,
            format!("the {what} handle was made by this process: open it in another one"),
        ));
    }
    Ok(())
}

unsafe fn open_mem_handle(pdptr: *mut CUdeviceptr, handle: CUipcHandle, flags: u32) -> R {
    let o = out(pdptr, "pdptr")?;
    if flags != CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS {
        return Err(invalid(format!(
            "flags {flags:#x}: must be CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS (1)"
        )));
    }
    let h = Handle::decode(&handle.reserved, KIND_MEM)
        .ok_or_else(|| invalid("the handle is not a memory handle of cuIpcGetMemHandle"))?;
    *o = open_handle(h, "memory")?;
    Ok(())
}

/// Map the memory handle `h` names in the current context (once per context: later opens count
/// and give the same address). Memory handles of this process are refused, as NVIDIA's
/// libcuda refuses them; pool allocations are imported here too.
unsafe fn open_handle(h: Handle, what: &str) -> R<u64> {
    let ctx = current()?;
    if h.kind == KIND_MEM {
        own_process(&h, what)?;
    }
    let key = (ctx as *const Context as usize, h);
    if let Some(opened) = OPENED.lock().as_mut() {
        if let Some((va, n)) = opened.by_handle.get_mut(&key) {
            *n += 1;
            return Ok(*va);
        }
    }
    // This process's own export (pool allocations only): its fd, without the socket.
    let local = (h.pid == std::process::id())
        .then(|| *SERVER.lock())
        .flatten()
        .filter(|s| s.token == h.token);
    let (buf, size) = match local {
        Some(s) => {
            let exports = s.exports.lock();
            let e = exports
                .get(&h.id)
                .filter(|e| e.kind == h.kind)
                .ok_or_else(|| {
                    invalid(format!(
                        "the {what} handle: this process no longer exports it (freed or destroyed)"
                    ))
                })?;
            let buf = ctx.core.import_fd(e.fd.as_raw_fd(), e.size)?;
            if crate::memory::find_va(buf.gpu_va()).is_some() {
                // nvgpu maps a buffer mapped already at the same address (a second reference
                // to the first mapping): the import would be the allocation itself.
                return Err(fail(
                    CUDA_ERROR_NOT_SUPPORTED,
                    format!(
                        "the {what} is mapped at its own address {:#x} in this process (the kernel reuses a buffer's mapping): import it in another process",
                        buf.gpu_va()
                    ),
                ));
            }
            (buf, e.size)
        }
        None => {
            let (fd, size) = fetch(&h, what)?;
            (ctx.core.import_fd(fd.as_raw_fd(), size)?, size)
        }
    };
    let a = crate::memory::Alloc {
        buf: std::sync::Arc::new(buf),
        size,
        ctx,
        host: None,
        host_flags: 0,
        managed: None,
        pool: None,
        graph: None,
    };
    let va = a.buf.gpu_va();
    let mut g = OPENED.lock();
    let opened = g.get_or_insert_with(|| Opened {
        by_handle: HashMap::new(),
        by_va: HashMap::new(),
        pool_uid: HashMap::new(),
    });
    if let Some((v, n)) = opened.by_handle.get_mut(&key) {
        // Another thread opened it meanwhile: keep that one.
        *n += 1;
        return Ok(*v);
    }
    opened.by_handle.insert(key, (va, 1));
    opened.by_va.insert(va, key);
    crate::memory::insert(a);
    Ok(va)
}

#[no_mangle]
pub unsafe extern "C" fn cuIpcOpenMemHandle(
    pdptr: *mut CUdeviceptr,
    handle: CUipcHandle,
    flags: u32,
) -> CUresult {
    guard("cuIpcOpenMemHandle", || {
        open_mem_handle(pdptr, handle, flags)
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuIpcOpenMemHandle_v2(
    pdptr: *mut CUdeviceptr,
    handle: CUipcHandle,
    flags: u32,
) -> CUresult {
    guard("cuIpcOpenMemHandle_v2", || {
        open_mem_handle(pdptr, handle, flags)
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuIpcCloseMemHandle(dptr: CUdeviceptr) -> CUresult {
    guard("cuIpcCloseMemHandle", || {
        current()?;
        close(dptr, KIND_MEM).ok_or_else(|| {
            invalid(format!(
                "{dptr:#x} is not an address cuIpcOpenMemHandle returned (or it is closed)"
            ))
        })
    })
}

/// Whether `va` is an allocation `cuMemPoolImportPointer` returned.
pub(crate) fn is_pool_import(va: u64) -> bool {
    OPENED
        .lock()
        .as_ref()
        .and_then(|o| o.by_va.get(&va))
        .is_some_and(|(_, h)| h.kind == KIND_POOL_PTR)
}

/// `cuMemFree` / `cuMemFreeAsync` of an allocation `cuMemPoolImportPointer` returned: one
/// import fewer; the memory is unmapped at the last (None: `va` is no such allocation).
pub(crate) fn free_pool_import(va: u64) -> Option<()> {
    close(va, KIND_POOL_PTR)
}

/// One open of `dptr` (of handle kind `kind`) fewer; at the last the memory goes (None: no such
/// open).
fn close(dptr: u64, kind: u8) -> Option<()> {
    {
        let mut g = OPENED.lock();
        let opened = g.as_mut()?;
        let key = opened.by_va.get(&dptr).copied()?;
        if key.1.kind != kind {
            return None;
        }
        let last = match opened.by_handle.get_mut(&key) {
            Some((_, n)) if *n > 1 => {
                *n -= 1;
                false
            }
            _ => true,
        };
        if !last {
            return Some(());
        }
        opened.by_handle.remove(&key);
        opened.by_va.remove(&dptr);
        opened.pool_uid.remove(&dptr);
    }
    // libtegragpu unmaps the memory once the work queued on it is done.
    drop(crate::memory::remove(dptr));
    Some(())
}

// --- Pools with shareable handles ------------------------------------------------------------

/// What a pool's shareable handle names: the exporting process's pool `uid`, on device
/// `ordinal` there.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct RemotePool {
    pid: u32,
    token: [u8; 16],
    uid: u64,
    pub(crate) ordinal: i32,
}

fn os_fail(what: &str) -> crate::error::Fail {
    fail(
        CUDA_ERROR_OPERATING_SYSTEM,
        format!("{what}: {}", std::io::Error::last_os_error()),
    )
}

/// `cuMemPoolExportToShareableHandle` (`CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR`): a new
/// file descriptor (a memfd) holding what names pool `uid` of device `ordinal` of this process.
pub(crate) fn pool_share_fd(uid: u64, ordinal: i32) -> R<RawFd> {
    let s = server()?;
    let mut rec = [0u8; POOL_RECORD_BYTES];
    rec[0..4].copy_from_slice(&POOL_MAGIC);
    rec[4..8].copy_from_slice(&ordinal.to_le_bytes());
    rec[8..12].copy_from_slice(&s.pid.to_le_bytes());
    rec[16..32].copy_from_slice(&s.token);
    rec[32..40].copy_from_slice(&uid.to_le_bytes());
    // SAFETY: a NUL-terminated name; a new descriptor this function owns until it returns it.
    let fd = unsafe { libc::memfd_create(c"tegragpu-pool".as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(os_fail("memfd_create for a pool's shareable handle"));
    }
    // SAFETY: `fd` was just made and is owned here; `rec` is 64 readable bytes.
    let n = unsafe { libc::pwrite(fd, rec.as_ptr() as *const c_void, rec.len(), 0) };
    if n != rec.len() as isize {
        let e = os_fail("writing a pool's shareable handle");
        // SAFETY: closes the descriptor made above.
        unsafe { libc::close(fd) };
        return Err(e);
    }
    Ok(fd)
}

/// `cuMemPoolImportFromShareableHandle`: the pool the descriptor `fd` (of
/// [`pool_share_fd`], maybe in another process) names.
pub(crate) fn pool_from_fd(fd: RawFd) -> R<RemotePool> {
    let mut rec = [0u8; POOL_RECORD_BYTES];
    // SAFETY: reads at most 64 bytes into `rec`; a bad descriptor is an error of pread.
    let n = unsafe { libc::pread(fd, rec.as_mut_ptr() as *mut c_void, rec.len(), 0) };
    if n != rec.len() as isize || rec[0..4] != POOL_MAGIC {
        return Err(invalid(format!(
            "descriptor {fd} is not a memory pool's shareable handle of this library (cuMemPoolExportToShareableHandle)"
        )));
    }
    let u32_at = |o: usize| u32::from_le_bytes(rec[o..o + 4].try_into().unwrap_or([0; 4]));
    Ok(RemotePool {
        pid: u32_at(8),
        token: rec[16..32].try_into().unwrap_or([0; 16]),
        uid: u64::from_le_bytes(rec[32..40].try_into().unwrap_or([0; 8])),
        ordinal: u32_at(4) as i32,
    })
}

/// `cuMemPoolExportPointer`: the 64 bytes that name allocation `a` (at its start) of pool
/// `uid`.
pub(crate) fn pool_export_pointer(a: &crate::memory::Alloc, uid: u64) -> R<[u8; 64]> {
    let va = a.buf.gpu_va();
    let size = a.size;
    let buf = a.buf.clone();
    let h = export(KIND_POOL_PTR, va, || {
        let (fd, _) = buf.export_fd()?;
        Ok((fd, size))
    })?;
    let mut b = h.encode();
    b[48..56].copy_from_slice(&uid.to_le_bytes());
    Ok(b)
}

/// `cuMemPoolImportPointer`: map the allocation `data` names, which must be of pool `pool`.
pub(crate) unsafe fn pool_import_pointer(pool: &RemotePool, data: &[u8; 64]) -> R<u64> {
    let h = Handle::decode(data, KIND_POOL_PTR)
        .ok_or_else(|| invalid("shareData is not the data of cuMemPoolExportPointer"))?;
    let uid = u64::from_le_bytes(data[48..56].try_into().unwrap_or([0; 8]));
    if h.pid != pool.pid || h.token != pool.token || uid != pool.uid {
        return Err(invalid(
            "shareData names an allocation of another memory pool than the one given",
        ));
    }
    let va = open_handle(h, "memory pool allocation")?;
    if let Some(o) = OPENED.lock().as_mut() {
        o.pool_uid.insert(va, uid);
    }
    Ok(va)
}

/// Whether allocations of imported pool `pool` are mapped here.
pub(crate) fn pool_imports_live(pool: &RemotePool) -> bool {
    OPENED.lock().as_ref().is_some_and(|o| {
        o.pool_uid.iter().any(|(va, &uid)| {
            uid == pool.uid
                && o.by_va
                    .get(va)
                    .is_some_and(|(_, h)| h.pid == pool.pid && h.token == pool.token)
        })
    })
}

// --- Events -----------------------------------------------------------------------------------

/// Bytes of an interprocess event's memory: the signal (value, timestamp) at 0, the value the
/// last record waits for at [`TARGET_OFFSET`].
pub(crate) const EVENT_BYTES: u64 = 4096;
pub(crate) const TARGET_OFFSET: usize = 64;

unsafe fn get_event_handle(ph: *mut CUipcHandle, ev: *mut c_void) -> R {
    let o = out(ph, "pHandle")?;
    let e = crate::stream::event_for_ipc(ev)?;
    let buf = e
        .sig
        .buffer()
        .cloned()
        .ok_or_else(|| fail(CUDA_ERROR_INVALID_HANDLE, "the event has no shared memory"))?;
    let h = export(KIND_EVENT, ev as u64, || {
        let (fd, _) = buf.export_fd()?;
        Ok((fd, EVENT_BYTES))
    })?;
    o.reserved = h.encode();
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn cuIpcGetEventHandle(ph: *mut CUipcHandle, ev: *mut c_void) -> CUresult {
    guard("cuIpcGetEventHandle", || get_event_handle(ph, ev))
}

unsafe fn open_event_handle(pev: *mut *mut c_void, handle: CUipcHandle) -> R {
    let o = out(pev, "phEvent")?;
    let h = Handle::decode(&handle.reserved, KIND_EVENT).ok_or_else(|| {
        fail(
            CUDA_ERROR_MAP_FAILED,
            "the handle is not an event handle of cuIpcGetEventHandle",
        )
    })?;
    let ctx = current()?;
    own_process(&h, "event")?;
    let (fd, size) = fetch(&h, "event")?;
    let buf = ctx.core.import_fd(fd.as_raw_fd(), size)?;
    drop(fd);
    *o = crate::stream::event_in_buffer(std::sync::Arc::new(buf))?;
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn cuIpcOpenEventHandle(
    pev: *mut *mut c_void,
    handle: CUipcHandle,
) -> CUresult {
    guard("cuIpcOpenEventHandle", || open_event_handle(pev, handle))
}

#[allow(dead_code)]
fn _unused(_: Fail) {}
