//! nvmap as the rel-36 driver behaves around its ioctls, on the emulated Orin, and what the
//! library makes of it:
//!
//! 1. clients are per process, not per open of `/dev/nvmap`
//!    (`nvmap_dev.c:__nvmap_create_client` keys them by the group leader's pid);
//! 2. NVMAP_IOC_FROM_FD returns a new handle ID every time (`nvmap_ioctl.c:nvmap_ioctl_create`
//!    allocates one per call with `nvmap_id_array_id_alloc`);
//! 3. IOVMM pages are taken at NVMAP_IOC_ALLOC (`nvmap_alloc.c:handle_page_alloc`), ENOMEM
//!    there when memory is short, and given back when the buffer's last reference goes.
//!
//! This binary runs with `TEGRAGPU_EMU_MEMORY_BYTES` = 256 MiB (set before the first emulated
//! kernel exists): every emulated kernel of a process shares one nvmap device, as every device
//! a process opens on a board shares one machine. Expected values come from the driver source,
//! never from the emulator.

use std::ffi::{c_void, CStr};
use std::ptr::null_mut;
use std::sync::{Mutex, MutexGuard, Once};
use tegragpu::capi::*;
use tegragpu::emu::{EmuNvmap, EmuSys};
use tegragpu::os::Sys;
use tegragpu::sys::nvgpu::AbiPod;
use tegragpu::sys::nvmap::*;

const MIB: u64 = 1 << 20;
/// The emulated memory of this test binary.
const MEMORY: u64 = 256 * MIB;
const NVMAP: &CStr = c"/dev/nvmap";

/// Tests count memory, fds and mappings of the whole process: one at a time, and the emulated
/// memory size is set before any emulated kernel exists.
fn setup() -> MutexGuard<'static, ()> {
    static SERIAL: Mutex<()> = Mutex::new(());
    static ENV: Once = Once::new();
    let g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    ENV.call_once(|| std::env::set_var("TEGRAGPU_EMU_MEMORY_BYTES", MEMORY.to_string()));
    g
}

fn ioc<T: AbiPod>(s: &EmuSys, fd: i32, req: u64, a: &mut T) -> Result<i32, i32> {
    // SAFETY: `a` is a live value of the request's argument type.
    unsafe { s.ioctl(fd, req, a as *mut T as usize) }
}

fn open_nvmap(s: &EmuSys) -> i32 {
    s.open(NVMAP, libc::O_RDWR | libc::O_CLOEXEC).unwrap()
}
fn create(s: &EmuSys, nvmap: i32, size: u64) -> Result<u32, i32> {
    if size < 1 << 32 {
        let mut a = nvmap_create_handle::create(size as u32);
        ioc(s, nvmap, NVMAP_IOC_CREATE, &mut a).map(|_| a.handle)
    } else {
        let mut a = nvmap_create_handle::create_64(size);
        ioc(s, nvmap, NVMAP_IOC_CREATE_64, &mut a).map(|_| a.handle64())
    }
}
fn alloc(s: &EmuSys, nvmap: i32, id: u32) -> Result<i32, i32> {
    let mut a = nvmap_alloc_handle {
        handle: id,
        heap_mask: NVMAP_HEAP_IOVMM,
        flags: NVMAP_HANDLE_WRITE_COMBINE | (0x900 << 16),
        align: 4096,
        numa_nid: NVMAP_NUMA_NO_NODE,
    };
    ioc(s, nvmap, NVMAP_IOC_ALLOC, &mut a)
}
fn get_fd(s: &EmuSys, nvmap: i32, id: u32) -> Result<i32, i32> {
    let mut a = nvmap_create_handle::get_fd(id);
    ioc(s, nvmap, NVMAP_IOC_GET_FD, &mut a).map(|_| a.fd())
}
fn from_fd(s: &EmuSys, nvmap: i32, fd: i32) -> Result<u32, i32> {
    let mut a = nvmap_create_handle::from_fd(fd);
    ioc(s, nvmap, NVMAP_IOC_FROM_FD, &mut a).map(|_| a.handle)
}
fn free(s: &EmuSys, nvmap: i32, id: u32) -> Result<i32, i32> {
    // SAFETY: FREE takes the ID by value.
    unsafe { s.ioctl(nvmap, NVMAP_IOC_FREE, id as usize) }
}
/// CREATE + ALLOC(IOVMM).
fn buffer(s: &EmuSys, nvmap: i32, size: u64) -> u32 {
    let id = create(s, nvmap, size).unwrap();
    alloc(s, nvmap, id).unwrap();
    id
}
/// QUERY_HEAP_PARAMS(IOVMM): (total, free).
fn iovmm(s: &EmuSys, nvmap: i32) -> (u64, u64) {
    let mut q = nvmap_query_heap_params {
        heap_mask: NVMAP_HEAP_IOVMM,
        ..Default::default()
    };
    ioc(s, nvmap, NVMAP_IOC_QUERY_HEAP_PARAMS, &mut q).unwrap();
    (q.total, q.free)
}
fn mmap(s: &EmuSys, fd: i32, len: usize) -> Result<*mut u8, i32> {
    // SAFETY: a fresh shared mapping.
    unsafe {
        s.mmap(
            null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            fd,
            0,
        )
    }
}

// ------------------------------------------------------------------------------------------
// Rule 1: one client per process
// ------------------------------------------------------------------------------------------

/// Two opens of `/dev/nvmap` in one process are one client: an ID made through one is valid
/// on the other, FREE through either drops it, and closing one open drops nothing while the
/// other stays open (`__nvmap_create_client` joins the existing client of the group leader's
/// pid and counts the open; `nvmap_release` destroys the client at the last close).
#[test]
fn opens_of_one_process_share_one_client() {
    let _g = setup();
    let s = EmuSys::new();
    let base = s.stats();
    let n1 = open_nvmap(&s);
    let n2 = open_nvmap(&s);
    // Made through n1, allocated and exported through n2.
    let a = create(&s, n1, 4096).unwrap();
    assert_eq!(alloc(&s, n2, a), Ok(0), "ALLOC through the other open");
    let fd = get_fd(&s, n2, a).expect("GET_FD through the other open");
    s.close(fd).unwrap();
    // IDs come from one counter: the next CREATE through n2 is the next ID.
    let b = create(&s, n2, 4096).unwrap();
    assert_eq!(b, a + 1);
    // FREE through n2 drops the ID for n1 too: GET_FD then takes it for a (bad) fd.
    assert_eq!(free(&s, n2, a), Ok(0));
    assert_eq!(get_fd(&s, n1, a), Err(libc::EBADF), "freed through n2");
    assert_eq!(
        alloc(&s, n1, a),
        Err(libc::EINVAL),
        "unknown ID after FREE on n2"
    );
    // Closing n1 keeps what was made through it while n2 is open.
    let c = buffer(&s, n1, 8192);
    s.close(n1).unwrap();
    let fd = get_fd(&s, n2, c).expect("handle made through n1 survives n1's close");
    s.close(fd).unwrap();
    assert_eq!(s.stats().handles, 2, "b and c are still held");
    // The last close destroys the client and drops every handle.
    s.close(n2).unwrap();
    let st = s.stats();
    assert_eq!((st.handles, st.dmabufs), (0, base.dmabufs), "{st:?}");
}

/// Every emulated kernel of the process reaches the same client: a device opened twice on a
/// board opens `/dev/nvmap` twice in one process.
#[test]
fn emulated_kernels_of_one_process_share_the_client() {
    let _g = setup();
    let a = EmuSys::new();
    let b = EmuSys::new();
    let na = open_nvmap(&a);
    let nb = open_nvmap(&b);
    let id = create(&a, na, 4096).unwrap();
    assert_eq!(
        alloc(&b, nb, id),
        Ok(0),
        "an ID made through another device"
    );
    assert_eq!(free(&b, nb, id), Ok(0));
    assert_eq!(alloc(&a, na, id), Err(libc::EINVAL), "freed through b");
    b.close(nb).unwrap();
    a.close(na).unwrap();
}

/// A test's own machine ([`EmuNvmap::new`]): its kernels share its client and memory, not the
/// process's.
#[test]
fn a_separate_machine_has_its_own_client_and_memory() {
    let _g = setup();
    let m = EmuNvmap::new(64 * MIB);
    let (a, b) = (EmuSys::with_nvmap(m.clone()), EmuSys::with_nvmap(m.clone()));
    let p = EmuSys::new();
    let (na, nb, np) = (open_nvmap(&a), open_nvmap(&b), open_nvmap(&p));
    assert_eq!(iovmm(&a, na), (64 * MIB, 64 * MIB));
    assert_eq!(iovmm(&p, np).0, MEMORY, "the process's machine");
    let id = buffer(&a, na, 16 * MIB);
    assert_eq!(m.memory_free(), 48 * MIB);
    assert_eq!(a.stats().iovmm_bytes, 16 * MIB);
    assert!(
        get_fd(&b, nb, id).is_ok_and(|fd| b.close(fd).is_ok()),
        "same client"
    );
    assert_eq!(
        get_fd(&p, np, id),
        Err(libc::EBADF),
        "another machine's client"
    );
    let big = create(&b, nb, 64 * MIB).unwrap();
    assert_eq!(alloc(&b, nb, big), Err(libc::ENOMEM), "48 MiB free");
    for (s, n) in [(&a, na), (&b, nb), (&p, np)] {
        s.close(n).unwrap();
    }
    assert_eq!(
        m.memory_free(),
        64 * MIB,
        "the last close gave everything back"
    );
    assert_eq!(a.stats().iovmm_bytes, 0);
}

/// The client is the group leader's: a forked child reaches its parent's client through the
/// inherited fd, and its own open of `/dev/nvmap` makes a new client that does not know the
/// parent's IDs.
#[test]
fn a_forked_child_opening_nvmap_gets_its_own_client() {
    let _g = setup();
    let s = EmuSys::new();
    let n = open_nvmap(&s);
    let id = buffer(&s, n, 4096);
    // SAFETY: the child only makes emulated ioctls (no other thread of this test uses `s`)
    // and leaves with _exit.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0);
    if pid == 0 {
        let mine = open_nvmap(&s);
        let code = if get_fd(&s, mine, id) != Err(libc::EBADF) {
            2 // the child's own open knows the parent's ID
        } else if get_fd(&s, n, id).is_err() {
            3 // the inherited fd lost the parent's client
        } else {
            0
        };
        // SAFETY: leave the child without running the parent's destructors.
        unsafe { libc::_exit(code) };
    }
    let mut status = 0;
    for _ in 0..1000 {
        // SAFETY: our child.
        let r = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
        if r == pid {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert!(libc::WIFEXITED(status), "child did not finish: {status:#x}");
    assert_eq!(libc::WEXITSTATUS(status), 0, "child's check failed");
    assert_eq!(free(&s, n, id), Ok(0));
    s.close(n).unwrap();
}

// ------------------------------------------------------------------------------------------
// Rule 2: FROM_FD gives a new ID
// ------------------------------------------------------------------------------------------

/// FROM_FD returns a new ID per call, also in the client that made the buffer; each ID is one
/// reference (a "dupe") of the client's one handle reference and is freed once; the buffer goes
/// with its last ID, fd and mapping. FROM_FD of an unallocated buffer is EINVAL
/// (`nvmap_duplicate_handle` refuses it, and an nvmap dma-buf is not duplicated as a foreign
/// one).
#[test]
fn from_fd_returns_a_new_id_each_time() {
    let _g = setup();
    let s = EmuSys::new();
    let base = s.stats();
    let n = open_nvmap(&s);
    let a = buffer(&s, n, 4096);
    let fd = get_fd(&s, n, a).unwrap();
    let b = from_fd(&s, n, fd).unwrap();
    let c = from_fd(&s, n, fd).unwrap();
    assert!(b != a && c != a && c != b, "new IDs: {a:#x} {b:#x} {c:#x}");
    // A second open of the process's client also gets a new one.
    let n2 = open_nvmap(&s);
    let d = from_fd(&s, n2, fd).unwrap();
    assert!(![a, b, c].contains(&d), "{d:#x}");
    s.close(fd).unwrap();
    // Each ID is freed once; the others stay valid.
    assert_eq!(free(&s, n, a), Ok(0));
    assert_eq!(free(&s, n, b), Ok(0));
    assert_eq!(free(&s, n, b), Ok(0), "a second FREE of an ID is a no-op");
    let fd = get_fd(&s, n, c).expect("c still names the buffer");
    s.close(fd).unwrap();
    assert_eq!(free(&s, n, c), Ok(0));
    assert_eq!(s.stats().dmabufs, base.dmabufs + 1, "d still holds it");
    assert_eq!(free(&s, n2, d), Ok(0));
    assert_eq!(s.stats().dmabufs, base.dmabufs, "gone with its last ID");
    // An unallocated buffer cannot be imported.
    let u = create(&s, n, 4096).unwrap();
    let ufd = get_fd(&s, n, u).unwrap();
    assert_eq!(from_fd(&s, n, ufd), Err(libc::EINVAL));
    s.close(ufd).unwrap();
    s.close(n2).unwrap();
    s.close(n).unwrap();
}

// ------------------------------------------------------------------------------------------
// Rule 3: IOVMM pages are taken at ALLOC
// ------------------------------------------------------------------------------------------

/// The emulated memory has a size; ALLOC takes the pages (ENOMEM there when they are short,
/// the handle staying unallocated), and they come back when the buffer's last reference goes.
#[test]
fn iovmm_pages_are_taken_at_alloc() {
    let _g = setup();
    let s = EmuSys::new();
    let n = open_nvmap(&s);
    let (total, free0) = iovmm(&s, n);
    assert_eq!(
        total, MEMORY,
        "QUERY_HEAP_PARAMS reports the emulated memory"
    );
    assert!(free0 > 192 * MIB && free0 <= MEMORY, "free {free0:#x}");
    // Larger than the whole memory: ENOMEM before any page is touched.
    let huge = create(&s, n, 2 * MEMORY).unwrap();
    assert_eq!(alloc(&s, n, huge), Err(libc::ENOMEM));
    // Take all but 64 MiB: the next 128 MiB fail at ALLOC.
    let big = buffer(&s, n, free0 - 64 * MIB);
    assert_eq!(iovmm(&s, n).1, 64 * MIB);
    let more = create(&s, n, 128 * MIB).unwrap();
    assert_eq!(
        alloc(&s, n, more),
        Err(libc::ENOMEM),
        "no pages for 128 MiB"
    );
    let fd = get_fd(&s, n, more).unwrap();
    assert_eq!(
        mmap(&s, fd, 4096),
        Err(libc::EPERM),
        "the handle stays unallocated"
    );
    s.close(fd).unwrap();
    assert_eq!(iovmm(&s, n).1, 64 * MIB, "a failed ALLOC takes nothing");
    // FREE gives the pages back once nothing else holds the buffer: a CPU mapping does.
    let fd = get_fd(&s, n, big).unwrap();
    let p = mmap(&s, fd, 4096).unwrap();
    s.close(fd).unwrap();
    assert_eq!(free(&s, n, big), Ok(0));
    assert_eq!(iovmm(&s, n).1, 64 * MIB, "still mapped");
    // SAFETY: our mapping.
    unsafe { s.munmap(p, 4096) }.unwrap();
    assert_eq!(iovmm(&s, n).1, free0, "given back with the last reference");
    // Now the 128 MiB fit.
    assert_eq!(alloc(&s, n, more), Ok(0));
    assert_eq!(iovmm(&s, n).1, free0 - 128 * MIB);
    // Closing the client's last open gives back what its handles held.
    s.close(n).unwrap();
    let n = open_nvmap(&s);
    assert_eq!(iovmm(&s, n).1, free0);
    s.close(n).unwrap();
}

// ------------------------------------------------------------------------------------------
// Around IDs and dma-buf fds
// ------------------------------------------------------------------------------------------

/// `v` on a page the ioctl can read but not write (its copy-out faults). Unmapped on drop.
struct ReadOnly<T>(*mut T);
impl<T: AbiPod> ReadOnly<T> {
    fn new(v: &T) -> ReadOnly<T> {
        // SAFETY: a fresh anonymous page; `v` fits in it; then made read-only.
        unsafe {
            let p = libc::mmap(
                null_mut(),
                4096,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            );
            assert_ne!(p, libc::MAP_FAILED);
            p.cast::<T>().write(*v);
            assert_eq!(libc::mprotect(p, 4096, libc::PROT_READ), 0);
            ReadOnly(p.cast())
        }
    }
}
impl<T> Drop for ReadOnly<T> {
    fn drop(&mut self) {
        // SAFETY: our page.
        unsafe { libc::munmap(self.0.cast(), 4096) };
    }
}

fn fd_open(fd: i32) -> bool {
    // SAFETY: F_GETFD has no preconditions.
    unsafe { libc::fcntl(fd, libc::F_GETFD) >= 0 }
}

/// What the driver does around IDs besides the three rules:
/// - CREATE whose copy-out faults frees the handle and its ID (`nvmap_ioctl_create`);
/// - GET_FD whose copy-out faults installs no fd (`nvmap_install_fd` copies out before
///   `fd_install`);
/// - GET_FD of a value that is not an ID but an nvmap dma-buf fd is EINVAL (only foreign
///   dma-bufs are duplicated: `nvmap_dmabuf_duplicate_gen_fd`);
/// - FREE of a value that is a dma-buf fd closes that fd (`nvmap_ioctl_free`);
/// - IOVMM | carveout: more than a page comes from IOVMM first, one page from the carveout
///   (`nvmap_alloc.c`: `heap_policy_large`, `heap_policy_small`).
#[test]
fn ids_and_dmabuf_fds_as_the_driver_treats_them() {
    let _g = setup();
    let s = EmuSys::new();
    let n = open_nvmap(&s);
    let base = s.stats();
    // CREATE's copy-out faults: EFAULT, nothing left.
    let ro = ReadOnly::new(&nvmap_create_handle::create(4096));
    // SAFETY: a readable argument whose copy-out faults.
    assert_eq!(
        unsafe { s.ioctl(n, NVMAP_IOC_CREATE, ro.0 as usize) },
        Err(libc::EFAULT)
    );
    assert_eq!(s.stats().handles, base.handles, "no handle left");
    assert_eq!(s.stats().dmabufs, base.dmabufs, "no buffer left");
    // GET_FD's copy-out faults: EFAULT, no fd.
    let id = buffer(&s, n, 4096);
    let fds = tegragpu::os::open_fd_count();
    let ro = ReadOnly::new(&nvmap_create_handle::get_fd(id));
    // SAFETY: as above.
    assert_eq!(
        unsafe { s.ioctl(n, NVMAP_IOC_GET_FD, ro.0 as usize) },
        Err(libc::EFAULT)
    );
    assert_eq!(tegragpu::os::open_fd_count(), fds, "no fd installed");
    // GET_FD of an nvmap dma-buf fd instead of an ID.
    let fd = get_fd(&s, n, id).unwrap();
    assert_eq!(get_fd(&s, n, fd as u32), Err(libc::EINVAL));
    // FREE of a dma-buf fd closes it; the ID stays.
    assert_eq!(free(&s, n, fd as u32), Ok(0));
    assert!(!fd_open(fd), "FREE closed the dma-buf fd");
    let fd = get_fd(&s, n, id).expect("the ID is untouched");
    s.close(fd).unwrap();
    assert_eq!(free(&s, n, id), Ok(0));
    // Heap order for IOVMM | FSI.
    let both = |id: u32| {
        let mut a = nvmap_alloc_handle {
            handle: id,
            heap_mask: NVMAP_HEAP_IOVMM | NVMAP_HEAP_CARVEOUT_FSI,
            flags: NVMAP_HANDLE_WRITE_COMBINE,
            align: 4096,
            numa_nid: 0,
        };
        ioc(&s, n, NVMAP_IOC_ALLOC, &mut a)
    };
    let (_, free0) = iovmm(&s, n);
    let two = create(&s, n, 8192).unwrap();
    assert_eq!(both(two), Ok(0));
    assert_eq!(iovmm(&s, n).1, free0 - 8192, "two pages: IOVMM");
    let one = create(&s, n, 4096).unwrap();
    assert_eq!(both(one), Ok(0));
    assert_eq!(iovmm(&s, n).1, free0 - 8192, "one page: the carveout");
    s.close(n).unwrap();
}

// ------------------------------------------------------------------------------------------
// The library
// ------------------------------------------------------------------------------------------

fn last_error() -> String {
    // SAFETY: a NUL-terminated string valid until the next failing call on this thread.
    unsafe { CStr::from_ptr(tg_last_error_message()) }
        .to_string_lossy()
        .into_owned()
}

unsafe fn buf_alloc(dev: *mut tg_device, size: u64) -> Result<*mut tg_buf, tg_status> {
    let mut b = null_mut();
    match tg_buf_alloc(dev, size, 0, &mut b) {
        tg_status::TG_OK => Ok(b),
        st => {
            assert!(b.is_null(), "out left alone on failure");
            Err(st)
        }
    }
}

unsafe fn cpu(b: *mut tg_buf) -> *mut u8 {
    let mut p: *mut c_void = null_mut();
    assert_eq!(tg_buf_cpu_ptr(b, &mut p), tg_status::TG_OK);
    p.cast()
}

/// `tg_buf_alloc` beyond the emulated memory fails with TG_ERROR_OUT_OF_MEMORY at once, naming
/// the call, the size and what is free, and loses nothing: earlier buffers keep their contents,
/// no fd or mapping is left behind, and the memory is there for the next allocation.
#[test]
fn tg_buf_alloc_beyond_the_memory_is_out_of_memory_and_loses_nothing() {
    let _g = setup();
    let mut dev = null_mut();
    // SAFETY: valid C string and out-pointer; the handles below are ours.
    unsafe {
        assert_eq!(
            tg_device_open(c"emu".as_ptr(), &mut dev),
            tg_status::TG_OK,
            "{}",
            last_error()
        );
        let a = buf_alloc(dev, 64 * MIB).unwrap();
        let b = buf_alloc(dev, 64 * MIB).unwrap();
        cpu(a).write_bytes(0xa5, (64 * MIB) as usize);
        cpu(b).write_bytes(0x5b, 4096);
        let fds = tegragpu::os::open_fd_count();
        let maps = tegragpu::os::mapping_count();
        // 128 MiB are left at most: 160 MiB do not fit.
        let size = 160 * MIB;
        assert_eq!(buf_alloc(dev, size), Err(tg_status::TG_ERROR_OUT_OF_MEMORY));
        let m = last_error();
        assert!(m.starts_with("tg_buf_alloc"), "{m}");
        assert!(m.contains("NVMAP_IOC_ALLOC"), "{m}");
        assert!(m.contains(&format!("size={size:#x}")), "{m}");
        assert!(m.contains("free"), "{m}");
        // Larger than the memory itself.
        assert_eq!(
            buf_alloc(dev, 2 * MEMORY),
            Err(tg_status::TG_ERROR_OUT_OF_MEMORY)
        );
        assert!(last_error().contains("NVMAP_IOC_ALLOC"), "{}", last_error());
        assert_eq!(tegragpu::os::open_fd_count(), fds, "fds");
        assert_eq!(tegragpu::os::mapping_count(), maps, "mappings");
        let pa = std::slice::from_raw_parts(cpu(a), (64 * MIB) as usize);
        assert!(pa.iter().all(|&x| x == 0xa5), "a intact");
        assert_eq!(*cpu(b), 0x5b, "b intact");
        // Freeing b gives its memory back: 100 MiB fit now.
        assert_eq!(tg_buf_free(b), tg_status::TG_OK);
        let c = buf_alloc(dev, 100 * MIB).expect("memory given back by tg_buf_free");
        assert_eq!(tg_buf_free(c), tg_status::TG_OK);
        assert_eq!(tg_buf_free(a), tg_status::TG_OK);
        assert_eq!(tg_device_close(dev), tg_status::TG_OK);
    }
}
