//! The emulated nvgpu/nvmap kernel (`tegragpu::emu::EmuSys`) driven through raw ioctls with the
//! `sys` structs. Expected errnos and values come from docs/nvgpu-kernel-interface.md (the real
//! driver's behaviour), never from the emulator itself.

use std::ffi::CStr;
use std::sync::{Arc, Mutex, MutexGuard};
use tegragpu::emu::EmuSys;
use tegragpu::os::Sys;
use tegragpu::sys::nvgpu::*;
use tegragpu::sys::nvmap::*;

#[path = "emu_kernel/channel.rs"]
mod channel;
#[path = "emu_kernel/more_calls.rs"]
mod more_calls;
#[path = "emu_kernel/vm.rs"]
mod vm;

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
