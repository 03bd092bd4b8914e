//! The emulated nvgpu/nvmap kernel (`tegragpu::emu::EmuSys`) driven through raw ioctls with the
//! `sys` structs. Expected errnos and values come from docs/nvgpu-kernel-interface.md (the real
//! driver's behaviour), never from the emulator itself.

use std::ffi::CStr;
use std::sync::{Arc, Mutex, MutexGuard};
use tegragpu::emu::EmuSys;
use tegragpu::os::Sys;
use tegragpu::sys::nvgpu::*;
use tegragpu::sys::nvmap::*;

/// Tests count fds/mappings and check fd numbers: run them one at a time.
static SERIAL: Mutex<()> = Mutex::new(());
fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

const CTRL: &CStr = c"/dev/nvgpu/igpu0/ctrl";
const NVMAP: &CStr = c"/dev/nvmap";
const SEED_START: u64 = 0x200000;
const SEED_END: u64 = 0xFF_FFE0_0000;

fn ioc<T: AbiPod>(s: &EmuSys, fd: i32, req: u64, a: &mut T) -> Result<i32, i32> {
    // SAFETY: `a` is a live value of the request's argument type.
    unsafe { s.ioctl(fd, req, a as *mut T as usize) }
}

fn cloexec(fd: i32) -> bool {
    // SAFETY: F_GETFD has no preconditions.
    let f = unsafe { libc::fcntl(fd, libc::F_GETFD) };
    f >= 0 && f & libc::FD_CLOEXEC != 0
}

/// fds and mappings of emulated objects (memfds named nvgpu-*/nvmap*), immune to the test
/// harness's own threads and files.
fn emu_fds() -> usize {
    std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .filter(|p| {
            let s = p.to_string_lossy();
            s.contains("memfd:nvgpu") || s.contains("memfd:nvmap")
        })
        .count()
}
fn emu_maps() -> usize {
    std::fs::read_to_string("/proc/self/maps")
        .unwrap()
        .lines()
        .filter(|l| l.contains("memfd:nvgpu") || l.contains("memfd:nvmap"))
        .count()
}

struct Rig {
    s: Arc<EmuSys>,
    ctrl: i32,
    nvmap: i32,
    as_fd: i32,
}

#[derive(Clone, Copy)]
struct Chan {
    tsg: i32,
    ch: i32,
    veid: u32,
}

impl Rig {
    fn new() -> Rig {
        let s = EmuSys::new();
        let ctrl = s.open(CTRL, libc::O_RDWR | libc::O_CLOEXEC).unwrap();
        let nvmap = s.open(NVMAP, libc::O_RDWR | libc::O_CLOEXEC).unwrap();
        let mut r = Rig {
            s,
            ctrl,
            nvmap,
            as_fd: -1,
        };
        r.as_fd = r.alloc_as(SEED_START, SEED_END).unwrap();
        r
    }
    fn alloc_as(&self, start: u64, end: u64) -> Result<i32, i32> {
        let mut a = nvgpu_alloc_as_args {
            flags: NVGPU_GPU_IOCTL_ALLOC_AS_FLAGS_UNIFIED_VA,
            va_range_start: start,
            va_range_end: end,
            ..Default::default()
        };
        ioc(&self.s, self.ctrl, NVGPU_GPU_IOCTL_ALLOC_AS, &mut a).map(|_| a.as_fd)
    }
    fn create(&self, size: u32) -> Result<u32, i32> {
        let mut a = nvmap_create_handle::create(size);
        ioc(&self.s, self.nvmap, NVMAP_IOC_CREATE, &mut a).map(|_| a.handle)
    }
    fn alloc(&self, id: u32, heap: u32, align: u32) -> Result<i32, i32> {
        let mut a = nvmap_alloc_handle {
            handle: id,
            heap_mask: heap,
            flags: NVMAP_HANDLE_WRITE_COMBINE | (0x900 << 16),
            align,
            numa_nid: 0,
        };
        ioc(&self.s, self.nvmap, NVMAP_IOC_ALLOC, &mut a)
    }
    fn get_fd(&self, id: u32) -> Result<i32, i32> {
        let mut a = nvmap_create_handle::get_fd(id);
        ioc(&self.s, self.nvmap, NVMAP_IOC_GET_FD, &mut a).map(|_| a.fd())
    }
    fn free(&self, id: u32) -> Result<i32, i32> {
        // SAFETY: FREE takes the ID by value.
        unsafe { self.s.ioctl(self.nvmap, NVMAP_IOC_FREE, id as usize) }
    }
    /// CREATE + ALLOC(IOVMM) + GET_FD.
    fn buf(&self, size: u32) -> (u32, i32) {
        let id = self.create(size).unwrap();
        self.alloc(id, NVMAP_HEAP_IOVMM, 4096).unwrap();
        (id, self.get_fd(id).unwrap())
    }
    fn map_args(&self, a: &mut nvgpu_as_map_buffer_ex_args) -> Result<u64, i32> {
        ioc(&self.s, self.as_fd, NVGPU_AS_IOCTL_MAP_BUFFER_EX, a).map(|_| a.offset)
    }
    fn map(&self, fd: i32) -> Result<u64, i32> {
        self.map_args(&mut nvgpu_as_map_buffer_ex_args {
            compr_kind: NV_KIND_INVALID,
            incompr_kind: NV_KIND_PITCH,
            dmabuf_fd: fd as u32,
            ..Default::default()
        })
    }
    fn unmap(&self, va: u64) -> Result<i32, i32> {
        ioc(
            &self.s,
            self.as_fd,
            NVGPU_AS_IOCTL_UNMAP_BUFFER,
            &mut nvgpu_as_unmap_buffer_args { offset: va },
        )
    }
    fn alloc_space(&self, pages: u64, page_size: u32, flags: u32, offset: u64) -> Result<u64, i32> {
        let mut a = nvgpu_as_alloc_space_args {
            pages,
            page_size,
            flags,
            o_a: offset,
            ..Default::default()
        };
        ioc(&self.s, self.as_fd, NVGPU_AS_IOCTL_ALLOC_SPACE, &mut a).map(|_| a.o_a)
    }
    fn open_tsg(&self) -> i32 {
        let mut a = nvgpu_gpu_open_tsg_args::default();
        ioc(&self.s, self.ctrl, NVGPU_GPU_IOCTL_OPEN_TSG, &mut a).unwrap();
        a.tsg_fd as i32
    }
    fn subctx(&self, tsg: i32, as_fd: i32) -> Result<u32, i32> {
        let mut a = nvgpu_tsg_create_subcontext_args {
            r#type: NVGPU_TSG_SUBCONTEXT_TYPE_ASYNC,
            as_fd,
            ..Default::default()
        };
        ioc(&self.s, tsg, NVGPU_TSG_IOCTL_CREATE_SUBCONTEXT, &mut a).map(|_| a.veid)
    }
    fn open_channel(&self) -> i32 {
        let mut a = nvgpu_gpu_open_channel_args::with_runlist_id(-1);
        ioc(&self.s, self.ctrl, NVGPU_GPU_IOCTL_OPEN_CHANNEL, &mut a).unwrap();
        a.channel_fd
    }
    fn as_bind(&self, ch: i32) -> Result<i32, i32> {
        ioc(
            &self.s,
            self.as_fd,
            NVGPU_AS_IOCTL_BIND_CHANNEL,
            &mut nvgpu_as_bind_channel_args {
                channel_fd: ch as u32,
            },
        )
    }
    fn bind_ex(&self, tsg: i32, ch: i32, veid: u32) -> Result<i32, i32> {
        let mut a = nvgpu_tsg_bind_channel_ex_args {
            channel_fd: ch,
            subcontext_id: veid,
            ..Default::default()
        };
        ioc(&self.s, tsg, NVGPU_TSG_IOCTL_BIND_CHANNEL_EX, &mut a)
    }
    fn wdt(&self, ch: i32, status: u32) -> Result<i32, i32> {
        ioc(
            &self.s,
            ch,
            NVGPU_IOCTL_CHANNEL_WDT,
            &mut nvgpu_channel_wdt_args {
                wdt_status: status,
                timeout_ms: 0,
            },
        )
    }
    /// OPEN_TSG → CREATE_SUBCONTEXT → OPEN_CHANNEL → AS BIND → BIND_CHANNEL_EX → WDT disable.
    fn channel(&self) -> Chan {
        let tsg = self.open_tsg();
        let veid = self.subctx(tsg, self.as_fd).unwrap();
        let ch = self.open_channel();
        self.as_bind(ch).unwrap();
        self.bind_ex(tsg, ch, veid).unwrap();
        self.wdt(ch, NVGPU_IOCTL_CHANNEL_DISABLE_WDT).unwrap();
        Chan { tsg, ch, veid }
    }
    fn setup_bind_args(&self, ch: i32, a: &mut nvgpu_channel_setup_bind_args) -> Result<u32, i32> {
        ioc(&self.s, ch, NVGPU_IOCTL_CHANNEL_SETUP_BIND, a).map(|_| a.work_submit_token)
    }
    fn setup_bind(&self, ch: i32, gp: i32, ud: i32, entries: u32, flags: u32) -> Result<u32, i32> {
        self.setup_bind_args(
            ch,
            &mut nvgpu_channel_setup_bind_args {
                num_gpfifo_entries: entries,
                flags,
                userd_dmabuf_fd: ud,
                gpfifo_dmabuf_fd: gp,
                ..Default::default()
            },
        )
    }
    fn syncpoint(&self, ch: i32) -> Result<nvgpu_get_user_syncpoint_args, i32> {
        let mut a = nvgpu_get_user_syncpoint_args::default();
        ioc(&self.s, ch, NVGPU_IOCTL_CHANNEL_GET_USER_SYNCPOINT, &mut a).map(|_| a)
    }
    fn close(&self, fd: i32) {
        self.s.close(fd).unwrap();
    }
    fn mmap(&self, fd: i32, len: usize, off: i64) -> Result<*mut u8, i32> {
        // SAFETY: a fresh shared mapping.
        unsafe {
            self.s.mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd,
                off,
            )
        }
    }
}

const UM_FLAGS: u32 =
    NVGPU_CHANNEL_SETUP_BIND_FLAGS_DETERMINISTIC | NVGPU_CHANNEL_SETUP_BIND_FLAGS_USERMODE_SUPPORT;

// ------------------------------------------------------------------------------------------
// Dispatcher rules (§1)
// ------------------------------------------------------------------------------------------

#[test]
fn open_channel_with_16_byte_struct_is_enotty() {
    let _g = serial();
    let r = Rig::new();
    let mut buf = [0u8; 16];
    let req = iowr(NVGPU_GPU_IOCTL_MAGIC, 11, 16);
    // SAFETY: buf is 16 bytes.
    assert_eq!(
        unsafe { r.s.ioctl(r.ctrl, req, buf.as_mut_ptr() as usize) },
        Err(libc::ENOTTY)
    );
}

/// An ioctl on a raw byte buffer.
fn raw(s: &EmuSys, fd: i32, req: u64, buf: &mut [u8]) -> Result<i32, i32> {
    // SAFETY: buf is large enough for every request used with it.
    unsafe { s.ioctl(fd, req, buf.as_mut_ptr() as usize) }
}

#[test]
fn nvgpu_dispatcher_rules() {
    let _g = serial();
    let r = Rig::new();
    let mut buf = [0u8; 512];
    let ch = r.open_channel();
    let tsg = r.open_tsg();
    // Wrong magic on each nvgpu fd type → EINVAL.
    assert_eq!(
        raw(&r.s, r.ctrl, iowr(b'A', 8, 64), &mut buf),
        Err(libc::EINVAL)
    );
    assert_eq!(
        raw(&r.s, r.as_fd, NVGPU_GPU_IOCTL_ALLOC_AS, &mut buf),
        Err(libc::EINVAL)
    );
    assert_eq!(
        raw(&r.s, tsg, NVGPU_IOCTL_CHANNEL_SETUP_BIND, &mut buf),
        Err(libc::EINVAL)
    );
    assert_eq!(
        raw(&r.s, ch, NVGPU_TSG_IOCTL_BIND_CHANNEL_EX, &mut buf),
        Err(libc::EINVAL)
    );
    // nr 0 and nr > LAST (ctrl 44, AS 14, TSG 21, channel 128) → EINVAL.
    assert_eq!(
        raw(&r.s, r.ctrl, iowr(b'G', 0, 4), &mut buf),
        Err(libc::EINVAL)
    );
    assert_eq!(
        raw(&r.s, r.ctrl, iowr(b'G', 45, 4), &mut buf),
        Err(libc::EINVAL)
    );
    assert_eq!(
        raw(&r.s, r.as_fd, iowr(b'A', 15, 4), &mut buf),
        Err(libc::EINVAL)
    );
    assert_eq!(
        raw(&r.s, tsg, iowr(b'T', 22, 4), &mut buf),
        Err(libc::EINVAL)
    );
    assert_eq!(
        raw(&r.s, ch, iowr(b'H', 129, 4), &mut buf),
        Err(libc::EINVAL)
    );
    // size > MAX (ctrl 264, AS 40, TSG 32, channel 104) → EINVAL, even for a valid nr.
    assert_eq!(
        raw(&r.s, r.ctrl, iowr(b'G', 8, 265), &mut buf),
        Err(libc::EINVAL)
    );
    assert_eq!(
        raw(&r.s, r.as_fd, iowr(b'A', 7, 41), &mut buf),
        Err(libc::EINVAL)
    );
    assert_eq!(
        raw(&r.s, tsg, iowr(b'T', 11, 33), &mut buf),
        Err(libc::EINVAL)
    );
    assert_eq!(
        raw(&r.s, ch, iowr(b'H', 128, 105), &mut buf),
        Err(libc::EINVAL)
    );
    // Right nr, wrong size or direction → ENOTTY.
    assert_eq!(
        raw(&r.s, r.ctrl, iowr(b'G', 8, 60), &mut buf),
        Err(libc::ENOTTY)
    );
    assert_eq!(
        raw(&r.s, r.ctrl, ior(b'G', 8, 64), &mut buf),
        Err(libc::ENOTTY)
    );
    assert_eq!(
        raw(&r.s, r.as_fd, iow(b'A', 7, 40), &mut buf),
        Err(libc::ENOTTY)
    );
    assert_eq!(
        raw(&r.s, ch, iowr(b'H', 128, 100), &mut buf),
        Err(libc::ENOTTY)
    );
    // Channel EVENT_ID_CTRL exists in the header but not in the r36 dispatcher.
    assert_eq!(
        raw(&r.s, ch, NVGPU_IOCTL_CHANNEL_EVENT_ID_CTRL, &mut buf),
        Err(libc::ENOTTY)
    );
    // A valid nr with no case at all (ctrl nr 3) → ENOTTY.
    assert_eq!(
        raw(&r.s, r.ctrl, iowr(b'G', 3, 8), &mut buf),
        Err(libc::ENOTTY)
    );
}

#[test]
fn nvmap_dispatcher_and_foreign_fds() {
    let _g = serial();
    let r = Rig::new();
    let mut buf = [0u8; 64];
    assert_eq!(
        raw(&r.s, r.nvmap, iowr(b'G', 0, 8), &mut buf),
        Err(libc::ENOTTY)
    );
    assert_eq!(
        raw(&r.s, r.nvmap, iowr(b'N', 108, 8), &mut buf),
        Err(libc::ENOTTY)
    );
    assert_eq!(
        raw(&r.s, r.nvmap, iowr(b'N', 100, 8), &mut buf),
        Err(libc::ENOTTY)
    );
    // CREATE with a bad pointer → EFAULT.
    // SAFETY: the emulator must fault-check the pointer, not dereference it.
    assert_eq!(
        unsafe { r.s.ioctl(r.nvmap, NVMAP_IOC_CREATE, 0x10) },
        Err(libc::EFAULT)
    );
    // A dma-buf fd has no nvgpu ioctls.
    let (_, fd) = r.buf(4096);
    assert_eq!(
        raw(&r.s, fd, NVGPU_GPU_IOCTL_ALLOC_AS, &mut buf),
        Err(libc::ENOTTY)
    );
    // A file that is not ours → ENOTTY; a closed fd → EBADF.
    let f = std::fs::File::open("/proc/self/stat").unwrap();
    use std::os::fd::AsRawFd;
    assert_eq!(
        raw(&r.s, f.as_raw_fd(), NVGPU_GPU_IOCTL_ALLOC_AS, &mut buf),
        Err(libc::ENOTTY)
    );
    assert_eq!(
        raw(&r.s, 100_000, NVGPU_GPU_IOCTL_ALLOC_AS, &mut buf),
        Err(libc::EBADF)
    );
}

#[test]
fn no_copy_out_on_error() {
    let _g = serial();
    let r = Rig::new();
    let mut a = nvgpu_alloc_as_args {
        as_fd: 0x5a5a,
        va_range_start: 0x1000,
        va_range_end: SEED_END,
        ..Default::default()
    };
    assert_eq!(
        ioc(&r.s, r.ctrl, NVGPU_GPU_IOCTL_ALLOC_AS, &mut a),
        Err(libc::EINVAL)
    );
    assert_eq!(a.as_fd, 0x5a5a);
    let mut m = nvgpu_as_map_buffer_ex_args {
        compr_kind: -1,
        incompr_kind: -1,
        dmabuf_fd: r.buf(4096).1 as u32,
        page_size: 0x77,
        ..Default::default()
    };
    assert_eq!(r.map_args(&mut m), Err(libc::ENOMEM));
    assert_eq!((m.offset, m.page_size), (0, 0x77));
    let mut g = nvgpu_gpu_get_characteristics {
        gpu_characteristics_buf_size: 8,
        gpu_characteristics_buf_addr: 0x10,
    };
    assert_eq!(
        ioc(&r.s, r.ctrl, NVGPU_GPU_IOCTL_GET_CHARACTERISTICS, &mut g),
        Err(libc::EFAULT)
    );
    assert_eq!(g.gpu_characteristics_buf_size, 8);
}

// ------------------------------------------------------------------------------------------
// open / fds / mmap
// ------------------------------------------------------------------------------------------

#[test]
fn open_paths() {
    let _g = serial();
    let s = EmuSys::new();
    assert!(s.is_emulated());
    assert_eq!(
        s.open(c"/dev/nvgpu/igpu0/as", libc::O_RDWR | libc::O_CLOEXEC),
        Err(libc::EINVAL)
    );
    assert_eq!(
        s.open(c"/dev/nvgpu/igpu0/nope", libc::O_RDWR),
        Err(libc::ENOENT)
    );
    let fd = s
        .open(c"/dev/nvhost-ctrl-gpu", libc::O_RDWR | libc::O_CLOEXEC)
        .unwrap();
    assert!(cloexec(fd));
    s.close(fd).unwrap();
    let fd = s.open(CTRL, libc::O_RDWR).unwrap();
    assert!(!cloexec(fd), "no O_CLOEXEC asked");
    s.close(fd).unwrap();
}

/// The lowest fd number not open in this process (what the kernel hands out next).
fn lowest_free_fd() -> i32 {
    (0..)
        .find(|&fd| {
            // SAFETY: F_GETFD has no preconditions.
            let r = unsafe { libc::fcntl(fd, libc::F_GETFD) };
            r < 0
        })
        .unwrap()
}

#[test]
fn fds_are_lowest_free_with_cloexec() {
    let _g = serial();
    let s = EmuSys::new();
    let expect = lowest_free_fd();
    let ctrl = s.open(CTRL, libc::O_RDWR | libc::O_CLOEXEC).unwrap();
    assert_eq!(ctrl, expect);
    let expect = lowest_free_fd();
    let nvmap = s.open(NVMAP, libc::O_RDWR | libc::O_CLOEXEC).unwrap();
    assert_eq!(nvmap, expect);
    let mut r = Rig {
        s,
        ctrl,
        nvmap,
        as_fd: -1,
    };
    let expect = lowest_free_fd();
    r.as_fd = r.alloc_as(SEED_START, SEED_END).unwrap();
    assert_eq!(r.as_fd, expect);
    let expect = lowest_free_fd();
    let tsg = r.open_tsg();
    assert_eq!(tsg, expect);
    let expect = lowest_free_fd();
    let ch = r.open_channel();
    assert_eq!(ch, expect);
    let id = r.create(4096).unwrap();
    r.alloc(id, NVMAP_HEAP_IOVMM, 0).unwrap();
    let expect = lowest_free_fd();
    let d1 = r.get_fd(id).unwrap();
    assert_eq!(
        d1, expect,
        "CREATE/ALLOC consume no application-visible fd numbers"
    );
    for fd in [r.as_fd, tsg, ch, d1] {
        assert!(cloexec(fd), "fd {fd} lacks FD_CLOEXEC");
    }
    // A freed number is reused by the next kernel-created fd.
    r.close(tsg);
    assert_eq!(r.open_channel(), tsg);
    // GET_FD gives a new fd per call.
    let expect = lowest_free_fd();
    let d2 = r.get_fd(id).unwrap();
    assert_eq!(d2, expect);
    assert_ne!(d2, d1);
    assert!(cloexec(d2));
}

#[test]
fn doorbell_mmap_rules() {
    let _g = serial();
    let r = Rig::new();
    assert_eq!(r.mmap(r.ctrl, 0x10000, 0x1000), Err(libc::EINVAL));
    assert_eq!(r.mmap(r.ctrl, 0x20000, 0), Err(libc::EINVAL));
    let p = r.mmap(r.ctrl, 0x10000, 0).unwrap();
    assert_eq!(r.mmap(r.ctrl, 0x10000, 0), Err(libc::EBUSY));
    // Another ctrl fd has its own doorbell.
    let c2 = r.s.open(CTRL, libc::O_RDWR | libc::O_CLOEXEC).unwrap();
    let p2 = r.mmap(c2, 0x10000, 0).unwrap();
    // SAFETY: mappings from the emulator.
    unsafe {
        r.s.munmap(p2, 0x10000).unwrap();
        r.s.munmap(p, 0x10000).unwrap();
    }
    // Unmapped: mapping again works.
    let p = r.mmap(r.ctrl, 0x10000, 0).unwrap();
    // SAFETY: as above.
    unsafe { r.s.munmap(p, 0x10000).unwrap() };
    r.close(c2);
    // /dev/nvmap cannot be mapped; AS/TSG/channel fds have no mmap.
    assert_eq!(r.mmap(r.nvmap, 4096, 0), Err(libc::EPERM));
    assert_eq!(r.mmap(r.as_fd, 4096, 0), Err(libc::ENODEV));
}

// ------------------------------------------------------------------------------------------
// nvmap (§5)
// ------------------------------------------------------------------------------------------

#[test]
fn nvmap_create_alloc_free() {
    let _g = serial();
    let r = Rig::new();
    assert_eq!(r.create(0), Err(libc::EINVAL));
    let a = r.create(1).unwrap();
    let b = r.create(4096).unwrap();
    assert!(
        a >= 0x7FFF_FFFF,
        "IDs come from the global counter ≥ 0x7FFFFFFF: {a:#x}"
    );
    assert_eq!(b, a + 1);
    assert_eq!(r.alloc(a, 0, 4096), Err(libc::ENOMEM), "heap 0");
    assert_eq!(
        r.alloc(a, 1 << 31, 4096),
        Err(libc::ENOMEM),
        "old SYSMEM heap"
    );
    assert_eq!(
        r.alloc(a, NVMAP_HEAP_IOVMM, 3),
        Err(libc::EINVAL),
        "align 3"
    );
    assert_eq!(
        r.alloc(0, NVMAP_HEAP_IOVMM, 0),
        Err(libc::EINVAL),
        "handle 0"
    );
    assert_eq!(
        r.alloc(0x1234, NVMAP_HEAP_IOVMM, 0),
        Err(libc::EINVAL),
        "unknown handle"
    );
    // dma-buf of an unallocated handle: GET_FD works, mmap is refused.
    let fd = r.get_fd(a).unwrap();
    assert_eq!(r.mmap(fd, 4096, 0), Err(libc::EPERM));
    assert_eq!(r.alloc(a, NVMAP_HEAP_IOVMM, 0), Ok(0));
    assert_eq!(r.alloc(a, NVMAP_HEAP_IOVMM, 0), Err(libc::EEXIST));
    // Size 1 was rounded to 4 KiB: the whole page is mappable and shared between fds.
    let p = r.mmap(fd, 4096, 0).unwrap();
    let fd2 = r.get_fd(a).unwrap();
    let q = r.mmap(fd2, 4096, 0).unwrap();
    // SAFETY: 4 KiB mappings of the same buffer.
    unsafe {
        p.add(4095).write(0xab);
        assert_eq!(q.add(4095).read(), 0xab);
        r.s.munmap(p, 4096).unwrap();
        r.s.munmap(q, 4096).unwrap();
    }
    // FREE by value; unknown IDs are a silent success.
    assert_eq!(r.free(a), Ok(0));
    assert_eq!(r.free(0xdead_beef), Ok(0));
    // GET_FD of an unknown ID is treated as a (bad) fd.
    assert_eq!(r.get_fd(0x7000_0000), Err(libc::EBADF));
    let mut h = nvmap_available_heaps::default();
    ioc(&r.s, r.nvmap, NVMAP_IOC_GET_AVAILABLE_HEAPS, &mut h).unwrap();
    assert_eq!(h.heaps, 0x1000_0004);
}

// ------------------------------------------------------------------------------------------
// ALLOC_AS, ALLOC_SPACE, MAP_BUFFER_EX (§4.1, §4.3)
// ------------------------------------------------------------------------------------------

#[test]
fn alloc_as_checks() {
    let _g = serial();
    let r = Rig::new();
    let two_mib = 2 << 20;
    assert_eq!(r.alloc_as(0, SEED_END), Err(libc::EINVAL), "start 0");
    assert_eq!(r.alloc_as(SEED_START, 0), Err(libc::EINVAL), "end 0");
    assert_eq!(
        r.alloc_as(SEED_START + 4096, SEED_END),
        Err(libc::EINVAL),
        "start not 2 MiB aligned"
    );
    assert_eq!(
        r.alloc_as(SEED_START, SEED_END - 4096),
        Err(libc::EINVAL),
        "end not 2 MiB aligned"
    );
    assert_eq!(
        r.alloc_as(SEED_END, SEED_START),
        Err(libc::EINVAL),
        "start > end"
    );
    assert_eq!(r.alloc_as(two_mib, two_mib), Err(libc::EINVAL), "empty");
    let mut a = nvgpu_alloc_as_args {
        big_page_size: 65536,
        va_range_start: SEED_START,
        va_range_end: SEED_END,
        ..Default::default()
    };
    assert_eq!(
        ioc(&r.s, r.ctrl, NVGPU_GPU_IOCTL_ALLOC_AS, &mut a),
        Err(libc::EINVAL),
        "64K big pages"
    );
    a.big_page_size = 0;
    a.va_range_split = 1 << 36;
    assert_eq!(
        ioc(&r.s, r.ctrl, NVGPU_GPU_IOCTL_ALLOC_AS, &mut a),
        Err(libc::EINVAL),
        "split"
    );
    assert_eq!(
        r.alloc_as(SEED_START, 1 << 49),
        Err(libc::ENOMEM),
        "aperture above 2^49"
    );
    let fd = r.alloc_as(SEED_START, 0xFF_0000_0000).unwrap();
    assert!(cloexec(fd));
}

#[test]
fn user_vma_va_sequence_matches_hardware() {
    let _g = serial();
    let r = Rig::new();
    let expect = [
        (4096u32, 0xff_ffa0_0000u64),
        (4096, 0xff_ffa0_1000),
        (65536, 0xff_ffa1_0000),
        (1 << 20, 0xff_ffb0_0000),
        (16 << 20, 0xff_fe20_0000),
        (64 << 20, 0xff_f820_0000),
    ];
    for (size, va) in expect {
        let (_, fd) = r.buf(size);
        assert_eq!(r.map(fd), Ok(va), "size {size:#x}");
    }
}

#[test]
fn map_buffer_ex_checks() {
    let _g = serial();
    let r = Rig::new();
    let (id, fd) = r.buf(8192);
    let base = || nvgpu_as_map_buffer_ex_args {
        compr_kind: NV_KIND_INVALID,
        incompr_kind: NV_KIND_PITCH,
        dmabuf_fd: fd as u32,
        ..Default::default()
    };
    // 1. not a file / not a dma-buf.
    assert_eq!(
        r.map_args(&mut nvgpu_as_map_buffer_ex_args {
            dmabuf_fd: 99_999,
            ..base()
        }),
        Err(libc::EBADF)
    );
    assert_eq!(
        r.map_args(&mut nvgpu_as_map_buffer_ex_args {
            dmabuf_fd: r.ctrl as u32,
            ..base()
        }),
        Err(libc::EINVAL)
    );
    // 2. non-fixed with offset / buffer_offset / mapping_size.
    assert_eq!(
        r.map_args(&mut nvgpu_as_map_buffer_ex_args {
            offset: 0x10_0000_0000,
            ..base()
        }),
        Err(libc::EINVAL)
    );
    assert_eq!(
        r.map_args(&mut nvgpu_as_map_buffer_ex_args {
            buffer_offset: 4096,
            ..base()
        }),
        Err(libc::EINVAL)
    );
    assert_eq!(
        r.map_args(&mut nvgpu_as_map_buffer_ex_args {
            mapping_size: 4096,
            ..base()
        }),
        Err(libc::EINVAL)
    );
    // 4/5. access bits 3, TEGRA_RAW, bit 4 (old IO_COHERENT), bit 8 (old DIRECT_KIND_CTRL).
    for flags in [
        3 << 10,
        NVGPU_AS_MAP_BUFFER_FLAGS_TEGRA_RAW,
        1 << 4,
        1 << 8,
        1 << 20,
    ] {
        assert_eq!(
            r.map_args(&mut nvgpu_as_map_buffer_ex_args { flags, ..base() }),
            Err(libc::EINVAL),
            "{flags:#x}"
        );
    }
    // 11. kinds: both -1 → ENOMEM; compressible request falls back to incompr.
    assert_eq!(
        r.map_args(&mut nvgpu_as_map_buffer_ex_args {
            incompr_kind: -1,
            ..base()
        }),
        Err(libc::ENOMEM)
    );
    assert_eq!(
        r.map_args(&mut nvgpu_as_map_buffer_ex_args {
            compr_kind: 0x7,
            incompr_kind: -1,
            ..base()
        }),
        Err(libc::ENOMEM)
    );
    // Accepted flags: CACHEABLE | SYSTEM_COHERENT | ACCESS=RW.
    let flags =
        NVGPU_AS_MAP_BUFFER_FLAGS_CACHEABLE | NVGPU_AS_MAP_BUFFER_FLAGS_SYSTEM_COHERENT | (2 << 10);
    let va = r
        .map_args(&mut nvgpu_as_map_buffer_ex_args { flags, ..base() })
        .unwrap();
    // 8. re-map reuse: same VA, refcounted; a different flag set is a new mapping.
    assert_eq!(
        r.map_args(&mut nvgpu_as_map_buffer_ex_args { flags, ..base() }),
        Ok(va)
    );
    // Any fd of the same dma-buf is the same buffer.
    let fd2 = r.get_fd(id).unwrap();
    assert_eq!(
        r.map_args(&mut nvgpu_as_map_buffer_ex_args {
            flags,
            dmabuf_fd: fd2 as u32,
            ..base()
        }),
        Ok(va)
    );
    let other = r.map(fd).unwrap();
    assert_ne!(other, va);
    assert_eq!(r.s.as_mapping_count(r.as_fd), Some(2));
    r.unmap(va).unwrap();
    r.unmap(va).unwrap();
    assert_eq!(r.s.as_mapping_count(r.as_fd), Some(2), "one reference left");
    r.unmap(va).unwrap();
    assert_eq!(r.s.as_mapping_count(r.as_fd), Some(1));
    // UNMAP of an unknown address: 0, no effect.
    assert_eq!(r.unmap(0x1234_5000), Ok(0));
    assert_eq!(r.unmap(other + 4096), Ok(0));
    assert_eq!(r.s.as_mapping_count(r.as_fd), Some(1));
    // An unallocated handle cannot be mapped.
    let id = r.create(4096).unwrap();
    let ufd = r.get_fd(id).unwrap();
    assert_eq!(r.map(ufd), Err(libc::EINVAL));
}

#[test]
fn fixed_maps_and_areas() {
    let _g = serial();
    let r = Rig::new();
    let (_, fd) = r.buf(2 << 20);
    let fixed = |offset: u64, buffer_offset: u64, mapping_size: u64| nvgpu_as_map_buffer_ex_args {
        flags: NVGPU_AS_MAP_BUFFER_FLAGS_FIXED_OFFSET,
        compr_kind: NV_KIND_INVALID,
        incompr_kind: NV_KIND_PITCH,
        dmabuf_fd: fd as u32,
        buffer_offset,
        mapping_size,
        offset,
        ..Default::default()
    };
    let win = 0xFE_0000_0000u64;
    // FIXED outside any area → EINVAL.
    assert_eq!(r.map_args(&mut fixed(win, 0, 0)), Err(libc::EINVAL));
    // ALLOC_SPACE: only 4 KiB pages exist.
    assert_eq!(
        r.alloc_space(262144, 65536, NVGPU_AS_ALLOC_SPACE_FLAGS_FIXED_OFFSET, win),
        Err(libc::EINVAL)
    );
    assert_eq!(
        r.alloc_space(262144, 4096, NVGPU_AS_ALLOC_SPACE_FLAGS_FIXED_OFFSET, win),
        Ok(win)
    );
    // Overlapping fixed area → ENOMEM (not EINVAL); outside the VMA → ENOMEM.
    assert_eq!(
        r.alloc_space(
            16,
            4096,
            NVGPU_AS_ALLOC_SPACE_FLAGS_FIXED_OFFSET,
            win + (1 << 29)
        ),
        Err(libc::ENOMEM)
    );
    assert_eq!(
        r.alloc_space(
            16,
            4096,
            NVGPU_AS_ALLOC_SPACE_FLAGS_FIXED_OFFSET,
            win - 4096
        ),
        Err(libc::ENOMEM)
    );
    assert_eq!(
        r.alloc_space(16, 4096, NVGPU_AS_ALLOC_SPACE_FLAGS_FIXED_OFFSET, 0x1000),
        Err(libc::ENOMEM)
    );
    assert_eq!(
        r.alloc_space(
            16,
            4096,
            NVGPU_AS_ALLOC_SPACE_FLAGS_FIXED_OFFSET,
            0x10_0000_0123
        ),
        Err(libc::ENOMEM)
    );
    // FIXED inside: unaligned, crossing the end, overlapping → EINVAL; good ones land exactly.
    assert_eq!(r.map_args(&mut fixed(win + 0x800, 0, 0)), Err(libc::EINVAL));
    assert_eq!(
        r.map_args(&mut fixed(win + (1 << 30) - 4096, 0, 0)),
        Err(libc::EINVAL)
    );
    assert_eq!(r.map_args(&mut fixed(win, 0, 0)), Ok(win));
    assert_eq!(
        r.map_args(&mut fixed(win + 4096, 0, 4096)),
        Err(libc::EINVAL),
        "overlap"
    );
    assert_eq!(
        r.map_args(&mut fixed(win + (4 << 20), 4096, 4096)),
        Ok(win + (4 << 20))
    );
    // buffer_offset + mapping_size past the buffer → EINVAL.
    assert_eq!(
        r.map_args(&mut fixed(win + (8 << 20), 2 << 20, 4096)),
        Err(libc::EINVAL)
    );
    // Non-fixed mappings never land inside the reserved window.
    let low = 0xFD_0000_0000u64;
    assert_eq!(
        r.alloc_space(262144, 4096, NVGPU_AS_ALLOC_SPACE_FLAGS_FIXED_OFFSET, low),
        Ok(low)
    );
    for _ in 0..40 {
        let (_, f) = r.buf(16 << 20);
        let va = r.map(f).unwrap();
        for w in [win, low] {
            assert!(
                va + (16 << 20) <= w || va >= w + (1 << 30),
                "{va:#x} inside window {w:#x}"
            );
        }
    }
    // FREE_SPACE drops the mappings inside and frees the VA.
    assert_eq!(r.s.as_mapping_count(r.as_fd), Some(42));
    ioc(
        &r.s,
        r.as_fd,
        NVGPU_AS_IOCTL_FREE_SPACE,
        &mut nvgpu_as_free_space_args {
            offset: win + 4096,
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(r.s.as_mapping_count(r.as_fd), Some(40));
    assert_eq!(
        r.alloc_space(16, 4096, NVGPU_AS_ALLOC_SPACE_FLAGS_FIXED_OFFSET, win),
        Ok(win)
    );
    // FREE_SPACE of an address in no area: 0.
    assert_eq!(
        ioc(
            &r.s,
            r.as_fd,
            NVGPU_AS_IOCTL_FREE_SPACE,
            &mut nvgpu_as_free_space_args {
                offset: 0x300000,
                ..Default::default()
            }
        ),
        Ok(0)
    );
}

// ------------------------------------------------------------------------------------------
// TSG / channel bring-up (§4.2)
// ------------------------------------------------------------------------------------------

#[test]
fn tsg_bind_before_as_bind_is_einval() {
    let _g = serial();
    let r = Rig::new();
    let tsg = r.open_tsg();
    let veid = r.subctx(tsg, r.as_fd).unwrap();
    assert_eq!(veid, 1);
    assert_eq!(r.subctx(tsg, r.as_fd), Ok(2));
    let ch = r.open_channel();
    assert_eq!(r.bind_ex(tsg, ch, veid), Err(libc::EINVAL));
    r.as_bind(ch).unwrap();
    assert_eq!(
        r.as_bind(ch),
        Err(libc::EINVAL),
        "a channel can never change AS"
    );
    // VEID from another AS → EINVAL; subcontext id ≥ max → EINVAL.
    let other_as = r.alloc_as(SEED_START, 0xFF_0000_0000).unwrap();
    let tsg2 = r.open_tsg();
    let v2 = r.subctx(tsg2, other_as).unwrap();
    assert_eq!(r.bind_ex(tsg2, ch, v2), Err(libc::EINVAL));
    assert_eq!(r.bind_ex(tsg, ch, 64), Err(libc::EINVAL));
    assert_eq!(
        r.bind_ex(tsg, r.as_fd, veid),
        Err(libc::EINVAL),
        "not a channel"
    );
    assert_eq!(r.bind_ex(tsg, ch, veid), Ok(0));
    assert_eq!(
        r.bind_ex(tsg, ch, veid),
        Err(libc::EINVAL),
        "already in a TSG"
    );
    // Subcontext checks.
    let mut a = nvgpu_tsg_create_subcontext_args {
        r#type: 2,
        as_fd: r.as_fd,
        ..Default::default()
    };
    assert_eq!(
        ioc(&r.s, tsg, NVGPU_TSG_IOCTL_CREATE_SUBCONTEXT, &mut a),
        Err(libc::EINVAL)
    );
    assert_eq!(r.subctx(tsg, ch), Err(libc::EINVAL), "not an AS fd");
    let mut d = nvgpu_tsg_delete_subcontext_args { veid, reserved: 0 };
    assert_eq!(
        ioc(&r.s, tsg, NVGPU_TSG_IOCTL_DELETE_SUBCONTEXT, &mut d),
        Err(libc::EINVAL),
        "channel bound"
    );
    d.veid = 64;
    assert_eq!(
        ioc(&r.s, tsg, NVGPU_TSG_IOCTL_DELETE_SUBCONTEXT, &mut d),
        Err(libc::EINVAL)
    );
    d.veid = 40;
    assert_eq!(
        ioc(&r.s, tsg, NVGPU_TSG_IOCTL_DELETE_SUBCONTEXT, &mut d),
        Ok(0),
        "unallocated"
    );
}

#[test]
fn wdt_checks() {
    let _g = serial();
    let r = Rig::new();
    let ch = r.open_channel();
    assert_eq!(r.wdt(ch, 3), Err(libc::EINVAL), "both bits");
    assert_eq!(r.wdt(ch, 0), Err(libc::EINVAL), "neither");
    assert_eq!(
        r.wdt(
            ch,
            NVGPU_IOCTL_CHANNEL_ENABLE_WDT | NVGPU_IOCTL_CHANNEL_WDT_FLAG_SET_TIMEOUT
        ),
        Ok(0)
    );
    assert_eq!(r.wdt(ch, NVGPU_IOCTL_CHANNEL_DISABLE_WDT), Ok(0));
}

#[test]
fn setup_bind_checks_in_order() {
    let _g = serial();
    let r = Rig::new();
    let (_, gp) = r.buf(8192);
    let (_, ud) = r.buf(4096);
    // Not AS-bound / not in a TSG → EINVAL.
    let bare = r.open_channel();
    assert_eq!(
        r.setup_bind(bare, gp, ud, 1024, UM_FLAGS),
        Err(libc::EINVAL)
    );
    r.as_bind(bare).unwrap();
    assert_eq!(
        r.setup_bind(bare, gp, ud, 1024, UM_FLAGS),
        Err(libc::EINVAL)
    );
    // DETERMINISTIC with the WDT still on → EINVAL.
    let tsg = r.open_tsg();
    let veid = r.subctx(tsg, r.as_fd).unwrap();
    r.bind_ex(tsg, bare, veid).unwrap();
    assert_eq!(
        r.setup_bind(bare, gp, ud, 1024, UM_FLAGS),
        Err(libc::EINVAL)
    );
    r.wdt(bare, NVGPU_IOCTL_CHANNEL_DISABLE_WDT).unwrap();
    let c = bare;
    // Entry counts.
    assert_eq!(r.setup_bind(c, gp, ud, 1, UM_FLAGS), Err(libc::EINVAL));
    assert_eq!(
        r.setup_bind(c, gp, ud, 1000, UM_FLAGS),
        Err(libc::EINVAL),
        "not a power of two"
    );
    assert_eq!(
        r.setup_bind(c, gp, ud, 1 << 30, UM_FLAGS),
        Err(libc::EINVAL),
        "> U32_MAX/8"
    );
    // USERMODE without DETERMINISTIC → EINVAL.
    assert_eq!(
        r.setup_bind(
            c,
            gp,
            ud,
            1024,
            NVGPU_CHANNEL_SETUP_BIND_FLAGS_USERMODE_SUPPORT
        ),
        Err(libc::EINVAL)
    );
    // fd 0 → EINVAL (fd 0 is open: stdin).
    assert_eq!(r.setup_bind(c, 0, ud, 1024, UM_FLAGS), Err(libc::EINVAL));
    assert_eq!(r.setup_bind(c, gp, 0, 1024, UM_FLAGS), Err(libc::EINVAL));
    // Non-zero dma-buf offsets → EINVAL.
    let mut a = nvgpu_channel_setup_bind_args {
        num_gpfifo_entries: 1024,
        flags: UM_FLAGS,
        userd_dmabuf_fd: ud,
        gpfifo_dmabuf_fd: gp,
        userd_dmabuf_offset: 4096,
        ..Default::default()
    };
    assert_eq!(r.setup_bind_args(c, &mut a), Err(libc::EINVAL));
    a.userd_dmabuf_offset = 0;
    a.gpfifo_dmabuf_offset = 4096;
    assert_eq!(r.setup_bind_args(c, &mut a), Err(libc::EINVAL));
    // GPFIFO dma-buf smaller than max(4096, entries × 8) → EINVAL; not a dma-buf → EINVAL.
    assert_eq!(r.setup_bind(c, gp, ud, 2048, UM_FLAGS), Err(libc::EINVAL));
    assert_eq!(
        r.setup_bind(c, r.ctrl, ud, 1024, UM_FLAGS),
        Err(libc::EINVAL)
    );
    assert_eq!(
        r.setup_bind(c, 99_999, ud, 1024, UM_FLAGS),
        Err(libc::EBADF)
    );
    // Success: token 511 (chid 511, runlist 0) on a fresh system; VA outputs 0.
    let mut ok = nvgpu_channel_setup_bind_args {
        num_gpfifo_entries: 1024,
        flags: UM_FLAGS,
        userd_dmabuf_fd: ud,
        gpfifo_dmabuf_fd: gp,
        gpfifo_gpu_va: 0x1111,
        ..Default::default()
    };
    assert_eq!(r.setup_bind_args(c, &mut ok), Ok(511));
    assert_eq!(
        (ok.gpfifo_gpu_va, ok.userd_gpu_va, ok.usermode_mmio_gpu_va),
        (0, 0, 0)
    );
    // Second SETUP_BIND → EEXIST.
    assert_eq!(r.setup_bind(c, gp, ud, 1024, UM_FLAGS), Err(libc::EEXIST));
    // WDT enable after deterministic → EINVAL; disable is fine.
    assert_eq!(r.wdt(c, NVGPU_IOCTL_CHANNEL_ENABLE_WDT), Err(libc::EINVAL));
    assert_eq!(r.wdt(c, NVGPU_IOCTL_CHANNEL_DISABLE_WDT), Ok(0));
    // SUBMIT_GPFIFO on a usermode channel → EINVAL.
    let mut s = nvgpu_submit_gpfifo_args::default();
    assert_eq!(
        ioc(&r.s, c, NVGPU_IOCTL_CHANNEL_SUBMIT_GPFIFO, &mut s),
        Err(libc::EINVAL)
    );
    // The next channel gets chid 510.
    let ch2 = r.channel();
    let (_, gp2) = r.buf(8192);
    let (_, ud2) = r.buf(4096);
    assert_eq!(r.setup_bind(ch2.ch, gp2, ud2, 1024, UM_FLAGS), Ok(510));
    assert_eq!(ch2.veid, 1, "new TSG: first async VEID is 1");
}

#[test]
fn chids_are_lifo() {
    let _g = serial();
    let r = Rig::new();
    let bind = |c: &Chan| {
        let (_, gp) = r.buf(8192);
        let (_, ud) = r.buf(4096);
        r.setup_bind(c.ch, gp, ud, 1024, UM_FLAGS).unwrap()
    };
    let a = r.channel();
    let b = r.channel();
    assert_eq!((bind(&a), bind(&b)), (511, 510));
    r.close(a.ch);
    let c = r.channel();
    assert_eq!(bind(&c), 511, "a freed chid goes back to the head");
}

#[test]
fn kernel_vma_and_syncpoint_match_hardware() {
    let _g = serial();
    let r = Rig::new();
    let c = r.channel();
    let (_, gp) = r.buf(8192);
    let (_, ud) = r.buf(4096);
    r.setup_bind(c.ch, gp, ud, 1024, UM_FLAGS).unwrap();
    let sp = r.syncpoint(c.ch).unwrap();
    assert_eq!(sp.gpu_va, 0xff_ffe1_0000, "seed syncpoint page VA");
    assert_eq!(
        r.syncpoint(c.ch).unwrap(),
        sp,
        "same syncpoint on repeat calls"
    );
    let mut ro = nvgpu_as_get_sync_ro_map_args::default();
    ioc(&r.s, r.as_fd, NVGPU_AS_IOCTL_GET_SYNC_RO_MAP, &mut ro).unwrap();
    assert_eq!(
        (ro.base_gpuva, ro.sync_size, ro.num_syncpoints),
        (0x100_03e0_0000, 0x10000, 1024)
    );
    let mut o = nvgpu_alloc_obj_ctx_args {
        class_num: 0xc7c0,
        flags: 0,
        obj_id: 0x55,
    };
    assert_eq!(
        ioc(&r.s, c.ch, NVGPU_IOCTL_CHANNEL_ALLOC_OBJ_CTX, &mut o),
        Ok(0)
    );
    assert_eq!(o.obj_id, 0x55, "not written back");
    o.class_num = 0x1234;
    assert_eq!(
        ioc(&r.s, c.ch, NVGPU_IOCTL_CHANNEL_ALLOC_OBJ_CTX, &mut o),
        Err(libc::EINVAL)
    );
    // GET_VA_REGIONS: one 4 KiB region covering the user VMA.
    let mut reg = nvgpu_as_va_region::default();
    let mut v = nvgpu_as_get_va_regions_args {
        buf_addr: &mut reg as *mut _ as u64,
        buf_size: 48,
        reserved: 0,
    };
    ioc(&r.s, r.as_fd, NVGPU_AS_IOCTL_GET_VA_REGIONS, &mut v).unwrap();
    assert_eq!(v.buf_size, 24);
    assert_eq!(
        (reg.offset, reg.page_size, reg.pages),
        (SEED_START, 4096, (SEED_END - SEED_START) / 4096)
    );
}

#[test]
#[should_panic(expected = "emulated nvgpu kernel oops")]
fn get_user_syncpoint_without_vm_oopses() {
    let _g = serial();
    let r = Rig::new();
    let ch = r.open_channel();
    let _ = r.syncpoint(ch);
}

/// The seeds' "3 MB gpfifo" layout puts the GR context buffers above 2^40. The driver only
/// WARN_ONs (tu104_gr_init_commit_rtv_cb's nvgpu_assert is WARN_ON in the kernel), so
/// ALLOC_OBJ_CTX succeeds and the warning is in the kernel log.
#[test]
fn three_mib_gpfifo_then_alloc_obj_ctx_warns() {
    let _g = serial();
    let r = Rig::new();
    let c = r.channel();
    let (_, gp) = r.buf(3 << 20);
    let (_, ud) = r.buf(4096);
    r.setup_bind(c.ch, gp, ud, 1024, UM_FLAGS).unwrap();
    let sp = r.syncpoint(c.ch).unwrap();
    assert_eq!(
        sp.gpu_va, 0x100_0020_0000,
        "the syncpoint page moved above 2^40"
    );
    let mut o = nvgpu_alloc_obj_ctx_args {
        class_num: 0xc7c0,
        ..Default::default()
    };
    assert_eq!(
        ioc(&r.s, c.ch, NVGPU_IOCTL_CHANNEL_ALLOC_OBJ_CTX, &mut o),
        Ok(0)
    );
    assert!(
        r.s.kernel_log()
            .iter()
            .any(|l| l.contains("not below 2^40")),
        "{:?}",
        r.s.kernel_log()
    );
}

#[test]
fn error_notifier_and_injected_fault() {
    let _g = serial();
    let r = Rig::new();
    let c = r.channel();
    let (_, nf) = r.buf(4096);
    let set = |mem: u32, offset: u64| {
        ioc(
            &r.s,
            c.ch,
            NVGPU_IOCTL_CHANNEL_SET_ERROR_NOTIFIER,
            &mut nvgpu_set_error_notifier {
                offset,
                size: 16,
                mem,
                padding: 0,
            },
        )
    };
    assert_eq!(set(0, 0), Err(libc::EINVAL));
    assert_eq!(set(r.ctrl as u32, 0), Err(libc::EINVAL));
    assert_eq!(set(nf as u32, 4096 - 8), Err(libc::EINVAL));
    assert_eq!(set(nf as u32, 64), Ok(0));
    let p = r.mmap(nf, 4096, 0).unwrap();
    let (_, gp) = r.buf(8192);
    let (_, ud) = r.buf(4096);
    let token = r.setup_bind(c.ch, gp, ud, 1024, UM_FLAGS).unwrap();
    let timedout = || {
        let mut a = nvgpu_get_param_args::default();
        ioc(&r.s, c.ch, NVGPU_IOCTL_CHANNEL_GET_TIMEDOUT, &mut a).unwrap();
        a.value
    };
    assert_eq!(timedout(), 0);
    assert!(r
        .s
        .inject_channel_error(token, NVGPU_CHANNEL_FIFO_ERROR_MMU_ERR_FLT));
    assert_eq!(timedout(), 1);
    // SAFETY: the record lies at offset 64 of the 4 KiB mapping.
    let n: nvgpu_notification = unsafe { std::ptr::read_unaligned(p.add(64).cast()) };
    assert_eq!((n.info32, n.status), (31, 0xffff));
    assert!(n.time_stamp.nanoseconds != [0, 0]);
    let log = r.s.fault_log();
    assert!(
        log.iter().any(|f| f.token == token && f.code == 31),
        "{log:?}"
    );
    // SAFETY: our mapping.
    unsafe { r.s.munmap(p, 4096).unwrap() };
}

#[test]
fn characteristics_fixture() {
    let _g = serial();
    let r = Rig::new();
    let mut c = nvgpu_gpu_characteristics::default();
    let mut a = nvgpu_gpu_get_characteristics {
        gpu_characteristics_buf_size: 328,
        gpu_characteristics_buf_addr: &mut c as *mut _ as u64,
    };
    ioc(&r.s, r.ctrl, NVGPU_GPU_IOCTL_GET_CHARACTERISTICS, &mut a).unwrap();
    assert_eq!(a.gpu_characteristics_buf_size, 328);
    assert_eq!((c.arch, c.r#impl, c.rev), (0x170, 0xb, 0xa1));
    assert_eq!(c.flags, 0x01bf_5fff_7f5d_035d);
    assert_eq!(
        (c.compute_class, c.gpfifo_class, c.dma_copy_class),
        (0xc7c0, 0xc76f, 0xc7b5)
    );
    assert_eq!(
        (
            c.sm_arch_sm_version,
            c.sm_arch_warp_count,
            c.gpu_va_bit_count
        ),
        (0x807, 96, 40)
    );
    assert_eq!(&c.chipname[..6], b"ga10b\0");
    assert_eq!(
        (
            c.gpu_ioctl_nr_last,
            c.tsg_ioctl_nr_last,
            c.ioctl_channel_nr_last,
            c.as_ioctl_nr_last
        ),
        (44, 21, 128, 14)
    );
    assert_eq!(
        (
            c.big_page_size,
            c.available_big_page_sizes,
            c.max_gpfifo_entries
        ),
        (0, 0, 1 << 28)
    );
    // buf_size 0 is fine (size query); a short buffer gets only that many bytes.
    let mut q = nvgpu_gpu_get_characteristics::default();
    ioc(&r.s, r.ctrl, NVGPU_GPU_IOCTL_GET_CHARACTERISTICS, &mut q).unwrap();
    assert_eq!(q.gpu_characteristics_buf_size, 328);
    let mut small = [0xeeu8; 16];
    let mut s = nvgpu_gpu_get_characteristics {
        gpu_characteristics_buf_size: 8,
        gpu_characteristics_buf_addr: small.as_mut_ptr() as u64,
    };
    ioc(&r.s, r.ctrl, NVGPU_GPU_IOCTL_GET_CHARACTERISTICS, &mut s).unwrap();
    assert_eq!(&small[..8], &[0x70, 1, 0, 0, 0xb, 0, 0, 0]);
    assert_eq!(&small[8..], &[0xee; 8]);
}

// ------------------------------------------------------------------------------------------
// Reference counting and teardown (§6)
// ------------------------------------------------------------------------------------------

/// Bring up a full channel with mapped buffers; returns every fd and mapping it made.
fn bring_up(r: &Rig) -> (Vec<i32>, Vec<(*mut u8, usize)>, Vec<u32>) {
    let mut fds = vec![];
    let mut maps = vec![];
    let mut ids = vec![];
    let c = r.channel();
    fds.extend([c.tsg, c.ch]);
    let (gi, gp) = r.buf(8192);
    let (ui, ud) = r.buf(4096);
    let (di, data) = r.buf(1 << 20);
    fds.extend([gp, ud, data]);
    ids.extend([gi, ui, di]);
    r.setup_bind(c.ch, gp, ud, 1024, UM_FLAGS).unwrap();
    r.syncpoint(c.ch).unwrap();
    ioc(
        &r.s,
        c.ch,
        NVGPU_IOCTL_CHANNEL_ALLOC_OBJ_CTX,
        &mut nvgpu_alloc_obj_ctx_args {
            class_num: 0xc7c0,
            ..Default::default()
        },
    )
    .unwrap();
    ioc(
        &r.s,
        c.ch,
        NVGPU_IOCTL_CHANNEL_SET_ERROR_NOTIFIER,
        &mut nvgpu_set_error_notifier {
            mem: data as u32,
            ..Default::default()
        },
    )
    .unwrap();
    r.map(data).unwrap();
    r.map(gp).unwrap();
    maps.push((r.mmap(data, 1 << 20, 0).unwrap(), 1 << 20));
    maps.push((r.mmap(gp, 8192, 0).unwrap(), 8192));
    maps.push((r.mmap(r.ctrl, 0x10000, 0).unwrap(), 0x10000));
    (fds, maps, ids)
}

#[test]
fn teardown_in_several_orders_returns_to_baseline() {
    let _g = serial();
    for order in 0..4 {
        let base_fds = emu_fds();
        let base_maps = emu_maps();
        let base_all_fds = tegragpu::os::open_fd_count();
        {
            let r = Rig::new();
            let (fds, maps, ids) = bring_up(&r);
            assert!(emu_maps() > base_maps);
            let unmap_all = || {
                for (p, l) in &maps {
                    // SAFETY: mappings made by bring_up.
                    unsafe { r.s.munmap(*p, *l).unwrap() };
                }
            };
            match order {
                // The documented leak-free order: channel, TSG, buffers, AS, doorbell, ctrl, nvmap.
                0 => {
                    r.close(fds[1]);
                    r.close(fds[0]);
                    for id in &ids {
                        r.free(*id).unwrap();
                    }
                    unmap_all();
                    for fd in &fds[2..] {
                        r.close(*fd);
                    }
                    r.close(r.as_fd);
                    r.close(r.ctrl);
                    r.close(r.nvmap);
                }
                // Reverse: nvmap and ctrl first, AS while the channel is still bound.
                1 => {
                    r.close(r.nvmap);
                    r.close(r.ctrl);
                    r.close(r.as_fd);
                    for fd in fds.iter().rev() {
                        r.close(*fd);
                    }
                    unmap_all();
                }
                // CPU mappings outlive every fd.
                2 => {
                    for fd in &fds {
                        r.close(*fd);
                    }
                    r.close(r.as_fd);
                    r.close(r.nvmap);
                    r.close(r.ctrl);
                    assert!(
                        emu_maps() > base_maps,
                        "user mappings still hold the memory"
                    );
                    // SAFETY: the data mapping is still valid.
                    unsafe { maps[0].0.write(7) };
                    unmap_all();
                }
                // TSG first, then channel.
                _ => {
                    r.close(fds[0]);
                    unmap_all();
                    r.close(r.as_fd);
                    r.close(fds[1]);
                    for fd in &fds[2..] {
                        r.close(*fd);
                    }
                    r.close(r.nvmap);
                    r.close(r.ctrl);
                }
            }
            let st = r.s.stats();
            assert_eq!(
                (
                    st.fds,
                    st.ctrls,
                    st.clients,
                    st.tsgs,
                    st.channels,
                    st.user_mappings
                ),
                (0, 0, 0, 0, 0, 0),
                "order {order}"
            );
            assert_eq!(st.free_chids, 512);
        }
        assert_eq!(emu_fds(), base_fds, "order {order}: fds");
        assert_eq!(emu_maps(), base_maps, "order {order}: mappings");
        assert_eq!(
            tegragpu::os::open_fd_count(),
            base_all_fds,
            "order {order}: all fds"
        );
    }
}

#[test]
fn closing_the_as_fd_keeps_a_bound_vm_alive() {
    let _g = serial();
    let r = Rig::new();
    let c = r.channel();
    r.close(r.as_fd);
    let (_, gp) = r.buf(8192);
    let (_, ud) = r.buf(4096);
    assert_eq!(r.setup_bind(c.ch, gp, ud, 1024, UM_FLAGS), Ok(511));
    assert_eq!(r.syncpoint(c.ch).unwrap().gpu_va, 0xff_ffe1_0000);
}

#[test]
fn closing_nvmap_keeps_dmabuf_memory() {
    let _g = serial();
    let r = Rig::new();
    let (id, fd) = r.buf(4096);
    let va = r.map(fd).unwrap();
    r.close(r.nvmap);
    // The dma-buf fd still works after the client (and its ID) is gone.
    let p = r.mmap(fd, 4096, 0).unwrap();
    // SAFETY: fresh mapping.
    unsafe {
        p.write(1);
        r.s.munmap(p, 4096).unwrap();
    }
    assert_eq!(r.unmap(va), Ok(0));
    let _ = id;
}

#[test]
fn emulator_holds_no_private_fds() {
    let _g = serial();
    // dma-buf fds other tests exported and never closed stay open (they belong to the
    // application, as on the board): count only the ones this test makes.
    let before = dmabuf_fds_now();
    let dmabuf_fds = || -> Vec<i32> {
        let mut v = dmabuf_fds_now();
        v.retain(|f| !before.contains(f));
        v
    };
    let r = Rig::new();
    let (_, fd) = r.buf(4096);
    let va = r.map(fd).unwrap();
    let p = r.mmap(fd, 4096, 0).unwrap();
    // The application's dma-buf fd is the only descriptor of the buffer: the emulated kernel
    // holds the memory through its own mapping, as nvmap holds pages, not through an fd.
    fn dmabuf_fds_now() -> Vec<i32> {
        std::fs::read_dir("/proc/self/fd")
            .unwrap()
            .filter_map(|e| {
                let e = e.ok()?;
                let n: i32 = e.file_name().to_str()?.parse().ok()?;
                let l = std::fs::read_link(e.path()).ok()?;
                l.to_string_lossy()
                    .contains("memfd:nvmap-dmabuf")
                    .then_some(n)
            })
            .collect()
    }
    assert_eq!(dmabuf_fds(), vec![fd]);
    r.close(fd);
    assert!(dmabuf_fds().is_empty());
    // The GPU and CPU mappings keep the memory without any fd.
    // SAFETY: the mapping made above.
    unsafe {
        p.write(7);
        assert_eq!(p.read(), 7);
        r.s.munmap(p, 4096).unwrap();
    }
    assert_eq!(r.unmap(va), Ok(0));
}

#[test]
fn nvmap_more_calls() {
    let _g = serial();
    let r = Rig::new();
    // An allocation larger than the machine's memory → ENOMEM.
    let mut c = nvmap_create_handle::create_64(1 << 50);
    ioc(&r.s, r.nvmap, NVMAP_IOC_CREATE_64, &mut c).unwrap();
    assert_eq!(
        r.alloc(c.handle64(), NVMAP_HEAP_IOVMM, 0),
        Err(libc::ENOMEM)
    );
    // Mixing an exclusive heap with others → EINVAL; a lone absent carveout → ENOMEM.
    let id = r.create(8192).unwrap();
    assert_eq!(
        r.alloc(id, NVMAP_HEAP_CARVEOUT_IVM | NVMAP_HEAP_IOVMM, 0),
        Err(libc::EINVAL)
    );
    assert_eq!(r.alloc(id, NVMAP_HEAP_CARVEOUT_IVM, 0), Err(libc::ENOMEM));
    let mut a = nvmap_alloc_handle {
        handle: id,
        heap_mask: NVMAP_HEAP_IOVMM,
        numa_nid: -2,
        ..Default::default()
    };
    assert_eq!(
        ioc(&r.s, r.nvmap, NVMAP_IOC_ALLOC, &mut a),
        Err(libc::EINVAL),
        "numa_nid -2"
    );
    a.numa_nid = 17;
    assert_eq!(
        ioc(&r.s, r.nvmap, NVMAP_IOC_ALLOC, &mut a),
        Err(libc::EINVAL),
        "numa_nid above MAX_NUMNODES"
    );
    // Another node id is no error for the driver (it falls back where the node has no memory).
    let other = r.create(4096).unwrap();
    let mut b = nvmap_alloc_handle {
        handle: other,
        heap_mask: NVMAP_HEAP_IOVMM,
        numa_nid: 1,
        ..Default::default()
    };
    assert_eq!(
        ioc(&r.s, r.nvmap, NVMAP_IOC_ALLOC, &mut b),
        Ok(0),
        "numa_nid 1"
    );
    r.alloc(id, NVMAP_HEAP_IOVMM, 0).unwrap();
    // WRITE/READ by handle.
    let src: Vec<u8> = (0..64u8).collect();
    let mut w = nvmap_rw_handle {
        addr: src.as_ptr() as u64,
        handle: id,
        offset: 4096,
        elem_size: 16,
        hmem_stride: 32,
        user_stride: 16,
        count: 4,
        ..Default::default()
    };
    ioc(&r.s, r.nvmap, NVMAP_IOC_WRITE, &mut w).unwrap();
    let mut dst = vec![0u8; 64];
    let mut rd = nvmap_rw_handle {
        addr: dst.as_mut_ptr() as u64,
        ..w
    };
    ioc(&r.s, r.nvmap, NVMAP_IOC_READ, &mut rd).unwrap();
    assert_eq!(dst, src);
    let fd = r.get_fd(id).unwrap();
    let p = r.mmap(fd, 8192, 0).unwrap();
    // SAFETY: 8 KiB mapping.
    unsafe {
        assert_eq!(
            std::slice::from_raw_parts(p.add(4096 + 32), 16),
            &src[16..32]
        )
    };
    w.count = 0;
    assert_eq!(
        ioc(&r.s, r.nvmap, NVMAP_IOC_WRITE, &mut w),
        Err(libc::EINVAL)
    );
    w.count = 200;
    assert_eq!(
        ioc(&r.s, r.nvmap, NVMAP_IOC_WRITE, &mut w),
        Err(libc::EINVAL),
        "past the end"
    );
    // CACHE: op/addr checks, VMA checks.
    let mut co = nvmap_cache_op {
        addr: p as u64,
        handle: id,
        len: 4096,
        op: NVMAP_CACHE_OP_WB_INV,
        _pad0: 0,
    };
    assert_eq!(ioc(&r.s, r.nvmap, NVMAP_IOC_CACHE, &mut co), Ok(0));
    co.op = 3;
    assert_eq!(
        ioc(&r.s, r.nvmap, NVMAP_IOC_CACHE, &mut co),
        Err(libc::EINVAL)
    );
    co.op = NVMAP_CACHE_OP_WB;
    co.len = 3 * 4096;
    assert_eq!(
        ioc(&r.s, r.nvmap, NVMAP_IOC_CACHE, &mut co),
        Err(libc::EADDRNOTAVAIL)
    );
    let mut c64 = nvmap_cache_op_64 {
        addr: src.as_ptr() as u64,
        handle: id,
        len: 16,
        op: 0,
        ..Default::default()
    };
    assert_eq!(
        ioc(&r.s, r.nvmap, NVMAP_IOC_CACHE_64, &mut c64),
        Err(libc::EADDRNOTAVAIL)
    );
    let (other, _) = r.buf(4096);
    c64 = nvmap_cache_op_64 {
        addr: p as u64,
        handle: other,
        len: 16,
        op: 0,
        ..Default::default()
    };
    assert_eq!(
        ioc(&r.s, r.nvmap, NVMAP_IOC_CACHE_64, &mut c64),
        Err(libc::EFAULT),
        "VMA of another handle"
    );
    // FROM_FD gives a new ID, also through a second open (the process's one client: nvmap
    // §5); FREE of that ID leaves the first.
    let n2 = r.s.open(NVMAP, libc::O_RDWR | libc::O_CLOEXEC).unwrap();
    let mut f = nvmap_create_handle::from_fd(fd);
    ioc(&r.s, n2, NVMAP_IOC_FROM_FD, &mut f).unwrap();
    assert_ne!(f.handle, id);
    let mut bad = nvmap_create_handle::from_fd(r.ctrl);
    assert_eq!(
        ioc(&r.s, n2, NVMAP_IOC_FROM_FD, &mut bad),
        Err(libc::EINVAL)
    );
    // SAFETY: FREE by value.
    assert_eq!(
        unsafe { r.s.ioctl(n2, NVMAP_IOC_FREE, f.handle as usize) },
        Ok(0)
    );
    let still = r.get_fd(id).expect("the first ID is still valid");
    r.close(still);
    // SAFETY: our mapping.
    unsafe { r.s.munmap(p, 8192).unwrap() };
}

#[test]
fn tsg_and_channel_misc() {
    let _g = serial();
    let r = Rig::new();
    let c = r.channel();
    let mut ts = nvgpu_timeslice_args {
        timeslice_us: 10,
        reserved: 0,
    };
    assert_eq!(
        ioc(&r.s, c.tsg, NVGPU_IOCTL_TSG_SET_TIMESLICE, &mut ts),
        Err(libc::EINVAL)
    );
    ts.timeslice_us = 2000;
    assert_eq!(
        ioc(&r.s, c.tsg, NVGPU_IOCTL_TSG_SET_TIMESLICE, &mut ts),
        Ok(0)
    );
    let mut g = nvgpu_timeslice_args::default();
    ioc(&r.s, c.tsg, NVGPU_IOCTL_TSG_GET_TIMESLICE, &mut g).unwrap();
    assert_eq!(g.timeslice_us, 2000);
    // SHARE with no token / token without SHARE → EINVAL.
    let mut o = nvgpu_gpu_open_tsg_args {
        flags: NVGPU_GPU_IOCTL_OPEN_TSG_FLAGS_SHARE,
        ..Default::default()
    };
    assert_eq!(
        ioc(&r.s, r.ctrl, NVGPU_GPU_IOCTL_OPEN_TSG, &mut o),
        Err(libc::EINVAL)
    );
    o = nvgpu_gpu_open_tsg_args {
        share_token: 5,
        ..Default::default()
    };
    assert_eq!(
        ioc(&r.s, r.ctrl, NVGPU_GPU_IOCTL_OPEN_TSG, &mut o),
        Err(libc::EINVAL)
    );
    // OPEN_CHANNEL on a runlist that does not exist → EINVAL.
    let mut oc = nvgpu_gpu_open_channel_args::with_runlist_id(77);
    assert_eq!(
        ioc(&r.s, r.ctrl, NVGPU_GPU_IOCTL_OPEN_CHANNEL, &mut oc),
        Err(libc::EINVAL)
    );
    // FLUSH_L2: invalidate without flush → EINVAL.
    let mut fl = nvgpu_gpu_l2_fb_args::new(false, true, true);
    assert_eq!(
        ioc(&r.s, r.ctrl, NVGPU_GPU_IOCTL_FLUSH_L2, &mut fl),
        Err(libc::EINVAL)
    );
    let mut fl = nvgpu_gpu_l2_fb_args::new(false, false, false);
    assert_eq!(
        ioc(&r.s, r.ctrl, NVGPU_GPU_IOCTL_FLUSH_L2, &mut fl),
        Err(libc::EINVAL)
    );
    let mut fl = nvgpu_gpu_l2_fb_args::new(true, true, true);
    assert_eq!(ioc(&r.s, r.ctrl, NVGPU_GPU_IOCTL_FLUSH_L2, &mut fl), Ok(0));
    // SET_DETERMINISTIC_OPTS needs deterministic channels.
    let fds = [c.ch];
    let mut d = nvgpu_gpu_set_deterministic_opts_args {
        num_channels: 1,
        flags: 2,
        channels: fds.as_ptr() as u64,
    };
    assert_eq!(
        ioc(&r.s, r.ctrl, NVGPU_GPU_IOCTL_SET_DETERMINISTIC_OPTS, &mut d),
        Err(libc::EINVAL)
    );
    let (_, gp) = r.buf(8192);
    let (_, ud) = r.buf(4096);
    let token = r.setup_bind(c.ch, gp, ud, 1024, UM_FLAGS).unwrap();
    assert_eq!(
        ioc(&r.s, r.ctrl, NVGPU_GPU_IOCTL_SET_DETERMINISTIC_OPTS, &mut d),
        Ok(0)
    );
    // FORCE_RESET posts code 43 to the notifier and kills the channel.
    let (_, nf) = r.buf(4096);
    ioc(
        &r.s,
        c.ch,
        NVGPU_IOCTL_CHANNEL_SET_ERROR_NOTIFIER,
        &mut nvgpu_set_error_notifier {
            mem: nf as u32,
            ..Default::default()
        },
    )
    .unwrap();
    // SAFETY: _IO request.
    assert_eq!(
        unsafe { r.s.ioctl(c.ch, NVGPU_IOCTL_CHANNEL_FORCE_RESET, 0) },
        Ok(0)
    );
    let p = r.mmap(nf, 4096, 0).unwrap();
    // SAFETY: 4 KiB mapping.
    let n: nvgpu_notification = unsafe { std::ptr::read_unaligned(p.cast()) };
    assert_eq!((n.info32, n.status), (43, 0xffff));
    let mut t = nvgpu_get_param_args::default();
    ioc(&r.s, c.ch, NVGPU_IOCTL_CHANNEL_GET_TIMEDOUT, &mut t).unwrap();
    assert_eq!(t.value, 1);
    assert_eq!(token, 511);
    // A fresh channel is unserviceable until bound to a TSG.
    let fresh = r.open_channel();
    ioc(&r.s, fresh, NVGPU_IOCTL_CHANNEL_GET_TIMEDOUT, &mut t).unwrap();
    assert_eq!(t.value, 1);
    // TSG UNBIND of a channel that is not in it → EINVAL.
    let mut fdv = fresh;
    assert_eq!(
        ioc_int(&r.s, c.tsg, NVGPU_TSG_IOCTL_UNBIND_CHANNEL, &mut fdv),
        Err(libc::EINVAL)
    );
    let mut chv = c.ch;
    assert_eq!(
        ioc_int(&r.s, c.tsg, NVGPU_TSG_IOCTL_UNBIND_CHANNEL, &mut chv),
        Ok(0)
    );
    // SAFETY: our mapping.
    unsafe { r.s.munmap(p, 4096).unwrap() };
}

fn ioc_int(s: &EmuSys, fd: i32, req: u64, v: &mut i32) -> Result<i32, i32> {
    // SAFETY: the request takes a pointer to an int.
    unsafe { s.ioctl(fd, req, v as *mut i32 as usize) }
}

#[test]
fn map_buffer_batch() {
    let _g = serial();
    let r = Rig::new();
    let (_, f1) = r.buf(4096);
    let (_, f2) = r.buf(4096);
    let mk = |fd: i32| nvgpu_as_map_buffer_ex_args {
        compr_kind: NV_KIND_INVALID,
        incompr_kind: NV_KIND_PITCH,
        dmabuf_fd: fd as u32,
        ..Default::default()
    };
    let mut maps = [mk(f1), mk(f2)];
    let mut a = nvgpu_as_map_buffer_batch_args {
        maps: maps.as_mut_ptr() as u64,
        num_maps: 2,
        ..Default::default()
    };
    ioc(&r.s, r.as_fd, NVGPU_AS_IOCTL_MAP_BUFFER_BATCH, &mut a).unwrap();
    // Same placement as two single maps on a fresh seed VM (§7.4).
    assert_eq!(
        (maps[0].offset, maps[1].offset),
        (0xff_ffa0_0000, 0xff_ffa0_1000)
    );
    let mut unmaps = [nvgpu_as_unmap_buffer_args {
        offset: maps[0].offset,
    }];
    let mut a = nvgpu_as_map_buffer_batch_args {
        unmaps: unmaps.as_mut_ptr() as u64,
        num_unmaps: 1,
        ..Default::default()
    };
    ioc(&r.s, r.as_fd, NVGPU_AS_IOCTL_MAP_BUFFER_BATCH, &mut a).unwrap();
    assert_eq!(r.s.as_mapping_count(r.as_fd), Some(1));
    a.num_unmaps = 257;
    assert_eq!(
        ioc(&r.s, r.as_fd, NVGPU_AS_IOCTL_MAP_BUFFER_BATCH, &mut a),
        Err(libc::EINVAL),
        "over the batch limit"
    );
}

#[test]
fn request_is_truncated_to_32_bits_like_the_syscall() {
    let _g = serial();
    let r = Rig::new();
    // A sign-extended request number still reaches the driver as its low 32 bits.
    let req = NVGPU_GPU_IOCTL_GET_CHARACTERISTICS as u32 as i32 as i64 as u64;
    assert_ne!(req, NVGPU_GPU_IOCTL_GET_CHARACTERISTICS);
    let mut q = nvgpu_gpu_get_characteristics::default();
    assert_eq!(ioc(&r.s, r.ctrl, req, &mut q), Ok(0));
    assert_eq!(q.gpu_characteristics_buf_size, 328);
}
