//! Host-side resources of the emulated kernel: memfds, "kernel" mappings, dma-bufs, and
//! `copy_from_user`/`copy_to_user` that fault (EFAULT) instead of crashing on bad pointers.

use crate::os::Errno;
use parking_lot::Mutex;
use std::ffi::CStr;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

fn errno() -> Errno {
    nix::errno::Errno::last_raw()
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
    let _ = nix::unistd::close(fd);
}

/// Whether `fd` is an open file descriptor.
pub(crate) fn fd_is_open(fd: RawFd) -> bool {
    fd >= 0 && nix::fcntl::fcntl(fd, nix::fcntl::FcntlArg::F_GETFD).is_ok()
}

/// The fd an application gets for a dma-buf (GET_FD): the lowest free number, FD_CLOEXEC, a
/// sealed memfd of the buffer's size (so `lseek(fd, 0, SEEK_END)` gives the size, as on a real
/// dma-buf). It holds no memory: the buffer's pages belong to the emulated kernel and reach the
/// application only through [`crate::os::Sys::mmap`] of this fd ([`DmaBuf::map_into_user`]).
/// `F_SEAL_WRITE` makes a shared writable `mmap` that bypasses the emulator fail (EPERM)
/// instead of silently mapping other memory.
pub(crate) fn dmabuf_placeholder_fd(size: u64) -> Result<RawFd, Errno> {
    // SAFETY: the name is NUL-terminated.
    let fd = unsafe {
        libc::memfd_create(
            c"nvmap-dmabuf".as_ptr(),
            libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING,
        )
    };
    if fd < 0 {
        return Err(errno());
    }
    // Best effort: the size only serves lseek; a failure leaves it 0.
    if let Ok(len) = libc::off_t::try_from(size) {
        // SAFETY: fd is our memfd; a sparse size allocates nothing.
        unsafe { libc::ftruncate(fd, len) };
    }
    let seals = libc::F_SEAL_SHRINK | libc::F_SEAL_GROW | libc::F_SEAL_WRITE | libc::F_SEAL_SEAL;
    // SAFETY: F_ADD_SEALS has no memory-safety preconditions.
    unsafe { libc::fcntl(fd, libc::F_ADD_SEALS, seals) };
    Ok(fd)
}

/// Counts live kernel objects of one kind (for leak checks): +1 while a token exists.
#[derive(Debug)]
pub(crate) struct LiveToken(Arc<AtomicUsize>);

impl LiveToken {
    pub(crate) fn new(counter: &Arc<AtomicUsize>) -> LiveToken {
        counter.fetch_add(1, Ordering::Relaxed);
        LiveToken(counter.clone())
    }
}

impl Drop for LiveToken {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The emulated machine's memory (the kernel's `totalram`), from which nvmap's IOVMM heap takes
/// pages at NVMAP_IOC_ALLOC. Bookkeeping only: the pages of a buffer are host memory that is
/// committed when touched (or at ALLOC with `TEGRAGPU_EMU_COMMIT_PAGES`), so a multi-GiB
/// allocation costs CI nothing, but the point where ALLOC fails with ENOMEM is the driver's.
#[derive(Debug)]
pub(crate) struct MemPool {
    /// Bytes of memory (`totalram_pages() << PAGE_SHIFT`).
    pub total: u64,
    used: AtomicU64,
}

impl MemPool {
    pub(crate) fn new(total: u64) -> Arc<MemPool> {
        Arc::new(MemPool {
            total,
            used: AtomicU64::new(0),
        })
    }

    /// Bytes not held by any allocation.
    pub(crate) fn free(&self) -> u64 {
        self.total.saturating_sub(self.used.load(Ordering::Relaxed))
    }

    /// Take `bytes` (page-aligned) for one allocation, charged to `kernel` as well; `None` when
    /// fewer are free (the page allocator fails: `handle_page_alloc` returns ENOMEM).
    pub(crate) fn take(self: &Arc<MemPool>, bytes: u64, kernel: &Arc<AtomicU64>) -> Option<Pages> {
        self.used
            .fetch_update(Ordering::AcqRel, Ordering::Relaxed, |u| {
                u.checked_add(bytes).filter(|&n| n <= self.total)
            })
            .ok()?;
        kernel.fetch_add(bytes, Ordering::Relaxed);
        Some(Pages {
            pool: self.clone(),
            kernel: kernel.clone(),
            bytes,
        })
    }
}

/// Pages taken from a [`MemPool`]; given back on drop (when the buffer's memory is freed).
#[derive(Debug)]
pub(crate) struct Pages {
    pool: Arc<MemPool>,
    kernel: Arc<AtomicU64>,
    bytes: u64,
}

impl Drop for Pages {
    fn drop(&mut self) {
        self.pool.used.fetch_sub(self.bytes, Ordering::AcqRel);
        self.kernel.fetch_sub(self.bytes, Ordering::Relaxed);
    }
}

/// Whether ALLOC commits host memory for the pages it takes (`TEGRAGPU_EMU_COMMIT_PAGES` set
/// and not `0`), as the board does; off by default, so that buffers cost host memory only
/// where they are touched.
fn commit_pages() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| {
        std::env::var_os("TEGRAGPU_EMU_COMMIT_PAGES").is_some_and(|v| !v.is_empty() && v != "0")
    })
}

/// Commit (populate, writable) the pages of a fresh mapping: ENOMEM if the host cannot.
fn populate(ptr: *mut u8, len: usize) -> Result<(), Errno> {
    // SAFETY: [ptr, ptr+len) is a fresh read-write mapping we own.
    let r = unsafe { libc::madvise(ptr.cast(), len, libc::MADV_POPULATE_WRITE) };
    if r == 0 {
        return Ok(());
    }
    if errno() != libc::EINVAL {
        return Err(libc::ENOMEM);
    }
    // Kernels before 5.14 have no MADV_POPULATE_WRITE: touch every page.
    let ps = super::page_size();
    for off in (0..len).step_by(ps) {
        // SAFETY: inside the mapping; a shared page of zeroes written with zero.
        unsafe { std::ptr::write_volatile(ptr.add(off), 0) };
    }
    Ok(())
}

/// A shared mapping the emulated kernel owns (its "vmap" of a buffer); unmapped on drop.
///
/// A file's pages (a memfd, the ctrl node's usermode page) are mapped with memmap2. memmap2
/// maps anonymous memory only privately, and a private mapping cannot be duplicated into the
/// application with `mremap(old_size 0)` ([`DmaBuf::map_into_user`]), so shared anonymous
/// memory is mapped with nix and unmapped here.
#[derive(Debug)]
pub(crate) enum KMap {
    /// `MAP_SHARED` read-write mapping of a file.
    File(memmap2::MmapRaw),
    /// `MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE` read-write memory.
    Anonymous {
        ptr: std::ptr::NonNull<libc::c_void>,
        len: usize,
    },
}
// SAFETY: the mapping is MAP_SHARED memory owned by this value; access to the bytes is the
// CPU/GPU sharing the emulator models, and the pointer itself is immutable.
unsafe impl Send for KMap {}
unsafe impl Sync for KMap {}

impl KMap {
    /// `len` bytes of fresh shared memory that no file descriptor refers to: the pages live
    /// exactly as long as this mapping and the application mappings made from it with
    /// [`DmaBuf::map_into_user`].
    pub(crate) fn anonymous(len: usize) -> Result<KMap, Errno> {
        use nix::sys::mman::{MapFlags, ProtFlags};
        let n = std::num::NonZeroUsize::new(len).ok_or(libc::EINVAL)?;
        // SAFETY: a fresh mapping chosen by the kernel; no existing memory is affected.
        let ptr = unsafe {
            nix::sys::mman::mmap_anonymous(
                None,
                n,
                ProtFlags::PROT_READ | ProtFlags::PROT_WRITE,
                MapFlags::MAP_SHARED | MapFlags::MAP_NORESERVE,
            )
        }
        .map_err(|e| e as Errno)?;
        Ok(KMap::Anonymous { ptr, len })
    }

    /// Map `len` bytes of `fd` at offset 0, read-write, shared.
    pub(crate) fn new(fd: RawFd, len: usize) -> Result<KMap, Errno> {
        if len == 0 {
            return Err(libc::EINVAL);
        }
        memmap2::MmapOptions::new()
            .len(len)
            .map_raw(fd)
            .map(KMap::File)
            .map_err(|e| e.raw_os_error().unwrap_or(libc::EIO))
    }
    /// Start of the mapping.
    pub(crate) fn ptr(&self) -> *mut u8 {
        match self {
            KMap::File(m) => m.as_mut_ptr(),
            KMap::Anonymous { ptr, .. } => ptr.as_ptr().cast(),
        }
    }
}

impl Drop for KMap {
    fn drop(&mut self) {
        if let KMap::Anonymous { ptr, len } = *self {
            // SAFETY: we own this mapping. (memmap2 unmaps a file mapping itself.)
            let _ = unsafe { nix::sys::mman::munmap(ptr, len) };
        }
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
    /// The machine memory the pages came from (IOVMM), given back when the buffer goes.
    _pages: Option<Pages>,
    /// The kernel's mapping of the whole buffer.
    pub kmap: KMap,
    /// With `TEGRAGPU_EMU_MEMFD_BACKING` set: a memfd holding the pages, mapped for the
    /// application instead of duplicating `kmap` with `mremap` (which valgrind does not
    /// support; `scripts/bench-instructions.sh` sets it). The buffer then holds this fd.
    memfd: Option<std::os::fd::OwnedFd>,
}

/// Whether buffers keep their pages in a memfd (see [`Backing`]).
fn memfd_backing() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| {
        std::env::var_os("TEGRAGPU_EMU_MEMFD_BACKING").is_some_and(|v| !v.is_empty() && v != "0")
    })
}

/// An nvmap handle's dma-buf: one object shared by every fd from GET_FD. Its memory (from
/// NVMAP_IOC_ALLOC) is shared memory that only the emulated kernel's own mapping refers to, no
/// file descriptor; it lives while any `Arc` to this value exists (client handle refs, dma-buf
/// fds, CPU mmaps, GPU mappings, channel refs) and is freed with the last one, as nvmap frees a
/// handle's pages when the last dma-buf reference goes.
#[derive(Debug)]
pub(crate) struct DmaBuf {
    /// Process-unique object id.
    pub oid: u64,
    /// nvmap handle ID (0 for emulator-internal buffers such as the syncpoint aperture).
    pub handle: u32,
    /// Size in bytes (4 KiB multiple).
    pub size: u64,
    /// Set once by NVMAP_IOC_ALLOC.
    pub backing: OnceLock<Backing>,
    /// Label from SET_TAG_LABEL / tag from ALLOC (informational).
    pub tag: Mutex<u32>,
    _live: LiveToken,
}

impl DmaBuf {
    /// A new, unallocated buffer of `size` bytes (already rounded).
    pub(crate) fn new(handle: u32, size: u64, live: LiveToken) -> Result<Arc<DmaBuf>, Errno> {
        Ok(Arc::new(DmaBuf {
            oid: next_id(),
            handle,
            size,
            backing: OnceLock::new(),
            tag: Mutex::new(0),
            _live: live,
        }))
    }

    /// Give the buffer memory (NVMAP_IOC_ALLOC): `pages` are the machine memory it takes (none
    /// for carveouts and emulator-internal buffers). EEXIST if it already has some; ENOMEM if
    /// the host cannot map (or, with `TEGRAGPU_EMU_COMMIT_PAGES`, commit) the pages.
    pub(crate) fn allocate(
        &self,
        heap: u32,
        flags: u32,
        pages: Option<Pages>,
    ) -> Result<(), Errno> {
        if self.backing.get().is_some() {
            return Err(libc::EEXIST);
        }
        let len = usize::try_from(self.size).map_err(|_| libc::ENOMEM)?;
        let (kmap, memfd) = if memfd_backing() {
            let fd = memfd(c"nvmap-dmabuf", self.size)?;
            // SAFETY: fd is a new memfd this value now owns.
            let owned =
                unsafe { <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) };
            let kmap = KMap::new(fd, len).map_err(|_| libc::ENOMEM)?;
            (kmap, Some(owned))
        } else {
            (KMap::anonymous(len).map_err(|_| libc::ENOMEM)?, None)
        };
        if pages.is_some() && commit_pages() {
            populate(kmap.ptr(), len)?;
        }
        self.backing
            .set(Backing {
                heap,
                flags,
                _pages: pages,
                kmap,
                memfd,
            })
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

    /// `mmap(addr, len, prot, flags, dmabuf_fd, off)` of an allocated buffer: a new mapping of
    /// the buffer's own pages (`mremap` with old size 0 duplicates a shared mapping), always
    /// shared as nvmap makes it. `len + off` past the buffer → EINVAL, as
    /// `dma_buf_mmap_internal` checks; `off` not page aligned → EINVAL. `MAP_FIXED` replaces
    /// what is at `addr`, `MAP_FIXED_NOREPLACE` fails with EEXIST if anything is, a plain
    /// non-null `addr` is a hint.
    ///
    /// # Safety
    /// As for `libc::mmap`: `MAP_FIXED` may replace existing mappings.
    pub(crate) unsafe fn map_into_user(
        &self,
        addr: *mut u8,
        len: usize,
        prot: i32,
        flags: i32,
        off: i64,
    ) -> Result<*mut u8, Errno> {
        let b = self.backing.get().ok_or(libc::EPERM)?;
        // do_mmap: the mapping type must be shared or private.
        if !matches!(
            flags & libc::MAP_TYPE,
            libc::MAP_SHARED | libc::MAP_PRIVATE | libc::MAP_SHARED_VALIDATE
        ) {
            return Err(libc::EINVAL);
        }
        let ps = super::page_size();
        let off = usize::try_from(off).map_err(|_| libc::EINVAL)?;
        if len == 0 || off % ps != 0 {
            return Err(libc::EINVAL);
        }
        let pages_len = len.checked_next_multiple_of(ps).ok_or(libc::ENOMEM)?;
        let size = usize::try_from(self.size).map_err(|_| libc::EINVAL)?;
        if off
            .checked_add(pages_len)
            .is_none_or(|e| e > size.next_multiple_of(ps))
        {
            return Err(libc::EINVAL);
        }
        let noreplace = flags & libc::MAP_FIXED_NOREPLACE != 0;
        let fixed = !noreplace && flags & libc::MAP_FIXED != 0;
        if (fixed || noreplace) && addr as usize % ps != 0 {
            return Err(libc::EINVAL);
        }
        // Reserve the requested address first when it must not replace anything (or is a
        // hint); the duplicate then moves onto the reservation.
        let mut target: Option<*mut u8> = if fixed { Some(addr) } else { None };
        if noreplace || (!fixed && !addr.is_null() && addr as usize % ps == 0) {
            let p = libc::mmap(
                addr.cast(),
                pages_len,
                libc::PROT_NONE,
                libc::MAP_PRIVATE
                    | libc::MAP_ANONYMOUS
                    | libc::MAP_NORESERVE
                    | libc::MAP_FIXED_NOREPLACE,
                -1,
                0,
            );
            let e = errno();
            if p != libc::MAP_FAILED && p.cast::<u8>() == addr {
                target = Some(addr);
            } else {
                if p != libc::MAP_FAILED {
                    // A kernel older than 4.17 took the flag as a hint.
                    libc::munmap(p, pages_len);
                }
                if noreplace {
                    return Err(if p == libc::MAP_FAILED {
                        e
                    } else {
                        libc::EEXIST
                    });
                }
            }
        }
        if let Some(fd) = &b.memfd {
            let fd = std::os::fd::AsRawFd::as_raw_fd(fd);
            let (at, extra) = match target {
                Some(t) => (t.cast::<libc::c_void>(), libc::MAP_FIXED),
                None => (std::ptr::null_mut(), 0),
            };
            let p = libc::mmap(
                at,
                pages_len,
                prot,
                libc::MAP_SHARED | extra,
                fd,
                off as i64,
            );
            if p == libc::MAP_FAILED {
                let e = errno();
                if target.is_some() && !fixed {
                    libc::munmap(addr.cast(), pages_len);
                }
                return Err(e);
            }
            return Ok(p.cast());
        }
        let src = b.kmap.ptr().add(off);
        let p = match target {
            Some(t) => libc::mremap(
                src.cast(),
                0,
                pages_len,
                libc::MREMAP_MAYMOVE | libc::MREMAP_FIXED,
                t.cast::<libc::c_void>(),
            ),
            None => libc::mremap(src.cast(), 0, pages_len, libc::MREMAP_MAYMOVE),
        };
        if p == libc::MAP_FAILED {
            let e = errno();
            if target.is_some() && !fixed {
                libc::munmap(addr.cast(), pages_len);
            }
            return Err(e);
        }
        if prot != libc::PROT_READ | libc::PROT_WRITE && libc::mprotect(p, pages_len, prot) != 0 {
            let e = errno();
            libc::munmap(p, pages_len);
            return Err(e);
        }
        Ok(p.cast())
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
        // The syscall is missing (qemu-user) or filtered (seccomp).
        libc::ENOSYS | libc::EPERM => vm_rw_via_pipe(local, remote, len, write),
        _ => Err(libc::EFAULT),
    }
}

/// [`vm_rw`] without process_vm_readv/writev: the bytes go through a pipe, so that the kernel
/// (and qemu-user, which checks the guest's pointers in every system call) still answers a bad
/// user range with EFAULT instead of the copy faulting. Without a descriptor for the pipe, a
/// direct copy (the caller's `Sys::ioctl` safety contract guarantees valid pointers).
fn vm_rw_via_pipe(local: *mut u8, remote: usize, len: usize, write: bool) -> Result<(), Errno> {
    let mut fds = [-1; 2];
    // SAFETY: pipe2 fills two descriptors.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        // SAFETY: see above.
        unsafe {
            if write {
                std::ptr::copy(local, remote as *mut u8, len)
            } else {
                std::ptr::copy(remote as *const u8, local, len)
            }
        }
        return Ok(());
    }
    let (from, to) = if write {
        (local as usize, remote)
    } else {
        (remote, local as usize)
    };
    // PIPE_BUF: a write of at most this into the empty pipe is taken whole.
    const CHUNK: usize = 4096;
    let mut r = Ok(());
    let mut done = 0;
    while done < len {
        let n = (len - done).min(CHUNK);
        // SAFETY: write and read check the user ranges themselves (EFAULT); the local buffer is
        // valid for len bytes.
        let ok = unsafe {
            libc::write(fds[1], (from + done) as *const libc::c_void, n) == n as isize
                && libc::read(fds[0], (to + done) as *mut libc::c_void, n) == n as isize
        };
        if !ok {
            r = Err(libc::EFAULT);
            break;
        }
        done += n;
    }
    // SAFETY: the two descriptors pipe2 made.
    unsafe {
        libc::close(fds[0]);
        libc::close(fds[1]);
    }
    r
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
