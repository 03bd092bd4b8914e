//! Host-side resources of the emulated kernel: memfds, "kernel" mappings, dma-bufs, and
//! `copy_from_user`/`copy_to_user` that fault (EFAULT) instead of crashing on bad pointers.

use crate::os::Errno;
use parking_lot::Mutex;
use std::collections::BTreeSet;
use std::ffi::CStr;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

fn errno() -> Errno {
    std::io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EIO)
}

/// `memfd_create(name, MFD_CLOEXEC)` + `ftruncate(size)`: the lowest free fd, FD_CLOEXEC set.
pub(crate) fn memfd(name: &CStr, size: u64) -> Result<RawFd, Errno> {
    // SAFETY: name is NUL-terminated.
    let fd = unsafe { libc::memfd_create(name.as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(errno());
    }
    if size > 0 {
        let Ok(len) = libc::off_t::try_from(size) else {
            close_fd(fd);
            return Err(libc::ENOMEM);
        };
        // SAFETY: fd is our memfd.
        if unsafe { libc::ftruncate(fd, len) } < 0 {
            let e = errno();
            close_fd(fd);
            return Err(if e == libc::EFBIG || e == libc::EINVAL {
                libc::ENOMEM
            } else {
                e
            });
        }
    }
    Ok(fd)
}

/// Close an fd the emulator owns, ignoring errors.
pub(crate) fn close_fd(fd: RawFd) {
    // SAFETY: closing an fd has no memory-safety preconditions.
    unsafe { libc::close(fd) };
}

/// Whether `fd` is an open file descriptor of the application (the emulator's hidden fds do
/// not count).
pub(crate) fn fd_is_open(fd: RawFd) -> bool {
    // SAFETY: F_GETFD has no memory-safety preconditions.
    fd >= 0 && !is_hidden(fd) && unsafe { libc::fcntl(fd, libc::F_GETFD) } >= 0
}

/// Duplicate `fd` to the lowest free number with FD_CLOEXEC (what `get_unused_fd_flags(O_CLOEXEC)`
/// + `fd_install` of the same `struct file` gives in the kernel).
pub(crate) fn dup_cloexec(fd: RawFd) -> Result<RawFd, Errno> {
    // SAFETY: F_DUPFD_CLOEXEC has no memory-safety preconditions.
    let n = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 0) };
    if n < 0 {
        Err(errno())
    } else {
        Ok(n)
    }
}

/// First fd number used for the emulator's own (hidden) fds: half the process's current
/// RLIMIT_NOFILE soft limit, far above the numbers the application sees, so that
/// application-visible fds are numbered as on the real kernel. The emulator never changes the
/// limit itself (it used to raise the soft limit silently): each emulated buffer costs one fd
/// more than on the board, so a process with many buffers may need a higher `ulimit -n`.
fn hidden_base() -> RawFd {
    let mut rl = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: rl is a valid out-pointer.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut rl) } != 0 {
        return 512;
    }
    let cur = RawFd::try_from(rl.rlim_cur.min(1 << 16)).unwrap_or(1 << 16);
    cur / 2
}

/// The emulator's hidden fds (they do not exist for the application).
static HIDDEN: Mutex<BTreeSet<RawFd>> = Mutex::new(BTreeSet::new());

/// Whether `fd` is one of the emulator's hidden fds.
pub(crate) fn is_hidden(fd: RawFd) -> bool {
    HIDDEN.lock().contains(&fd)
}

/// Move `fd` (FD_CLOEXEC) to a hidden high number, closing the original. When no number from
/// [`hidden_base`] up is free, `fd` stays where it is (still hidden from the application; only
/// the numbering of later application fds differs from the board's then).
pub(crate) fn hide_fd(fd: RawFd) -> Result<RawFd, Errno> {
    // SAFETY: F_DUPFD_CLOEXEC has no memory-safety preconditions.
    let n = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, hidden_base()) };
    if n < 0 {
        let e = errno();
        if e == libc::EMFILE || e == libc::EINVAL {
            HIDDEN.lock().insert(fd);
            return Ok(fd);
        }
        close_fd(fd);
        return Err(e);
    }
    HIDDEN.lock().insert(n);
    close_fd(fd);
    Ok(n)
}

/// Close a hidden fd.
fn close_hidden(fd: RawFd) {
    let mut h = HIDDEN.lock();
    h.remove(&fd);
    close_fd(fd);
}

/// Physical memory of the machine, bytes (an upper bound for one allocation).
pub(crate) fn phys_mem() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let (pages, ps) = unsafe {
        (
            libc::sysconf(libc::_SC_PHYS_PAGES),
            libc::sysconf(libc::_SC_PAGESIZE),
        )
    };
    (pages.max(0) as u64).saturating_mul(ps.max(0) as u64)
}

/// A shared mapping the emulated kernel owns (its "vmap" of a buffer); unmapped on drop.
#[derive(Debug)]
pub(crate) struct KMap {
    ptr: *mut u8,
    len: usize,
}
// SAFETY: the mapping is MAP_SHARED memory owned by this value; access to the bytes is the
// CPU/GPU sharing the emulator models, and the pointer itself is immutable.
unsafe impl Send for KMap {}
unsafe impl Sync for KMap {}

impl KMap {
    /// Map `len` bytes of `fd` at offset 0, read-write, shared.
    pub(crate) fn new(fd: RawFd, len: usize) -> Result<KMap, Errno> {
        if len == 0 {
            return Err(libc::EINVAL);
        }
        // SAFETY: a fresh mapping chosen by the kernel; no existing memory is affected.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(errno());
        }
        Ok(KMap { ptr: p.cast(), len })
    }
    /// Start of the mapping.
    pub(crate) fn ptr(&self) -> *mut u8 {
        self.ptr
    }
}

impl Drop for KMap {
    fn drop(&mut self) {
        // SAFETY: we own this mapping.
        unsafe { libc::munmap(self.ptr.cast(), self.len) };
    }
}

static NEXT_OBJ: AtomicU64 = AtomicU64::new(1);

/// A fresh, process-unique object id.
pub(crate) fn next_id() -> u64 {
    NEXT_OBJ.fetch_add(1, Ordering::Relaxed)
}

/// What ALLOC gave a handle.
#[derive(Debug)]
pub(crate) struct Backing {
    /// `NVMAP_HEAP_*` the memory came from.
    pub heap: u32,
    /// `nvmap_alloc_handle.flags` as passed (cache mode in bits 1:0).
    pub flags: u32,
    /// The kernel's mapping of the whole buffer.
    pub kmap: KMap,
}

/// An nvmap handle's dma-buf (one `struct file` shared by every fd from GET_FD). The memory is
/// a memfd the emulator holds at a hidden fd number; it lives while any `Arc` to this value
/// exists (client handle refs, dma-buf fds, CPU mmaps, GPU mappings, channel refs).
#[derive(Debug)]
pub(crate) struct DmaBuf {
    /// Process-unique object id.
    pub oid: u64,
    /// nvmap handle ID (0 for emulator-internal buffers such as the syncpoint aperture).
    pub handle: u32,
    /// Size in bytes (4 KiB multiple).
    pub size: u64,
    /// The memfd (hidden number). Every dma-buf fd is a duplicate of it.
    pub fd: RawFd,
    /// Set once by NVMAP_IOC_ALLOC.
    pub backing: OnceLock<Backing>,
    /// Label from SET_TAG_LABEL / tag from ALLOC (informational).
    pub tag: Mutex<u32>,
}

impl DmaBuf {
    /// A new, unallocated buffer of `size` bytes (already rounded).
    pub(crate) fn new(handle: u32, size: u64) -> Result<Arc<DmaBuf>, Errno> {
        let fd = hide_fd(memfd(c"nvmap-dmabuf", size)?)?;
        Ok(Arc::new(DmaBuf {
            oid: next_id(),
            handle,
            size,
            fd,
            backing: OnceLock::new(),
            tag: Mutex::new(0),
        }))
    }

    /// Give the buffer memory (NVMAP_IOC_ALLOC). EEXIST if it already has some.
    pub(crate) fn allocate(&self, heap: u32, flags: u32) -> Result<(), Errno> {
        if self.backing.get().is_some() {
            return Err(libc::EEXIST);
        }
        if self.size > phys_mem() {
            return Err(libc::ENOMEM);
        }
        let len = usize::try_from(self.size).map_err(|_| libc::ENOMEM)?;
        let kmap = KMap::new(self.fd, len).map_err(|_| libc::ENOMEM)?;
        self.backing
            .set(Backing { heap, flags, kmap })
            .map_err(|_| libc::EEXIST)
    }

    /// The allocation, if any.
    pub(crate) fn backing(&self) -> Option<&Backing> {
        self.backing.get()
    }

    /// Host pointer to byte `off` (must be < size) of an allocated buffer.
    pub(crate) fn host_ptr(&self, off: u64) -> Option<*mut u8> {
        let b = self.backing.get()?;
        if off >= self.size {
            return None;
        }
        // SAFETY: off < size = mapping length.
        Some(unsafe { b.kmap.ptr().add(off as usize) })
    }
}

impl Drop for DmaBuf {
    fn drop(&mut self) {
        close_hidden(self.fd);
    }
}

// -------------------------------------------------------------------------------------------
// User memory access
// -------------------------------------------------------------------------------------------

fn vm_rw(local: *mut u8, remote: usize, len: usize, write: bool) -> Result<(), Errno> {
    if len == 0 {
        return Ok(());
    }
    if remote == 0 {
        return Err(libc::EFAULT);
    }
    let l = libc::iovec {
        iov_base: local.cast(),
        iov_len: len,
    };
    let r = libc::iovec {
        iov_base: remote as *mut libc::c_void,
        iov_len: len,
    };
    // SAFETY: process_vm_{read,write}v on our own pid validates the remote range and returns
    // EFAULT instead of faulting; the local buffer is valid for len bytes.
    let n = unsafe {
        if write {
            libc::process_vm_writev(libc::getpid(), &l, 1, &r, 1, 0)
        } else {
            libc::process_vm_readv(libc::getpid(), &l, 1, &r, 1, 0)
        }
    };
    if n == len as isize {
        return Ok(());
    }
    if n >= 0 {
        return Err(libc::EFAULT);
    }
    match errno() {
        libc::ENOSYS | libc::EPERM => {
            // The syscall is filtered (seccomp): fall back to a direct copy; the caller's
            // `Sys::ioctl` safety contract guarantees valid pointers.
            // SAFETY: see above.
            unsafe {
                if write {
                    std::ptr::copy(local, remote as *mut u8, len)
                } else {
                    std::ptr::copy(remote as *const u8, local, len)
                }
            }
            Ok(())
        }
        _ => Err(libc::EFAULT),
    }
}

/// `copy_from_user`: EFAULT on an unreadable range.
pub(crate) fn copy_from_user(dst: &mut [u8], src: usize) -> Result<(), Errno> {
    vm_rw(dst.as_mut_ptr(), src, dst.len(), false)
}

/// `copy_to_user`: EFAULT on an unwritable range.
pub(crate) fn copy_to_user(dst: usize, src: &[u8]) -> Result<(), Errno> {
    // process_vm_writev only reads the local buffer.
    vm_rw(src.as_ptr() as *mut u8, dst, src.len(), true)
}
