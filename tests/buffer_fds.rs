//! A live buffer holds no file descriptor (issue #15, item 9), over the emulated Orin.
//!
//! The nvgpu backend closes each buffer's dma-buf fd once the GPU mapping (MAP_BUFFER_EX) and
//! the CPU mapping exist, and a channel's ring/USERD/notifier fds once SETUP_BIND /
//! SET_ERROR_NOTIFIER hold them: on the board the nvmap client's handle reference, the GPU
//! mapping and the CPU mapping each hold a dma-buf reference (`docs/design.md`, "File
//! descriptors held by buffers"). The emulated kernel models the same references, so this
//! checks both that the library closes the fds and that the memory stays valid — and that the
//! emulator frees it when the last reference goes (a GPU access afterwards faults).
//!
//! Every test here serializes on one lock: one of them lowers RLIMIT_NOFILE for the process.

mod common;

use std::sync::Arc;

use common::{cfg, Params, SEC};
use parking_lot::Mutex;
use tegragpu::backend::nvgpu::NvgpuBackend;
use tegragpu::core::{Buffer, Device, MemFlags, QueueKind};
use tegragpu::emu::EmuSys;
use tegragpu::os::Sys;
use tegragpu::sys::nvgpu::*;
use tegragpu::sys::nvmap::*;
use tegragpu::Status;

static SERIAL: Mutex<()> = Mutex::new(());

fn open_emu() -> (Arc<EmuSys>, Device) {
    let emu = EmuSys::new();
    let b = NvgpuBackend::open(emu.clone()).expect("open over EmuSys");
    (emu, Device::from_backend(Box::new(b)).unwrap())
}

fn cubin() -> Vec<u8> {
    std::fs::read(common::repo_path(
        "tests/fixtures/cubin/kernels.sm_87.cubin",
    ))
    .expect("fixture cubin")
}

fn flags(i: usize) -> MemFlags {
    MemFlags {
        cpu_cached: i % 2 == 0,
        write_combined: i % 2 == 1,
        zeroed: true,
    }
}

/// `c[i] = a[i] + b[i]` on the GPU for `n` floats.
fn vector_add(dev: &Device, a: &Buffer, b: &Buffer, c: &Buffer, n: usize) -> tegragpu::Result<()> {
    let m = dev.load_module(&cubin())?;
    let k = m.kernel("vector_add")?;
    let mut q = dev.create_queue(QueueKind::Compute)?;
    let s = dev.create_signal(0)?;
    let p = Params::new()
        .u64(a.gpu_va())
        .u64(b.gpu_va())
        .u64(c.gpu_va())
        .u32(n as u32);
    q.launch(&k, &cfg((n as u32).div_ceil(128), 128), p.bytes())?;
    q.signal(&s, 1)?;
    q.submit()?;
    s.wait(1, 20 * SEC)
}

struct SoftLimit(libc::rlimit);

impl SoftLimit {
    /// Lower the RLIMIT_NOFILE soft limit to `soft`; restored on drop (also on panic).
    fn lower_to(soft: u64) -> SoftLimit {
        let mut old = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: valid out-pointer.
        assert_eq!(unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut old) }, 0);
        let new = libc::rlimit {
            rlim_cur: soft,
            rlim_max: old.rlim_max,
        };
        // SAFETY: valid pointer; lowering the soft limit needs no privilege.
        assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &new) }, 0);
        SoftLimit(old)
    }
}

impl Drop for SoftLimit {
    fn drop(&mut self) {
        // SAFETY: valid pointer; restores the limits read at construction.
        unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &self.0) };
    }
}

/// More live buffers than the soft limit allows fds, and the process still opens files.
#[test]
fn more_live_buffers_than_the_fd_limit() {
    let _serial = SERIAL.lock();
    let (emu, dev) = open_emu();
    // The queue, signal pool and module exist before the limit is lowered; each channel
    // holds one fd (its own), not one per buffer.
    let fds_before = tegragpu::os::open_fd_count();
    let soft = (fds_before + 40) as u64;
    let n_bufs = 3 * soft as usize;
    let limit = SoftLimit::lower_to(soft);

    let mut bufs = Vec::with_capacity(n_bufs);
    for i in 0..n_bufs {
        let b = dev
            .alloc(4096 * (1 + i as u64 % 3), flags(i))
            .unwrap_or_else(|e| panic!("buffer {i} of {n_bufs} (soft limit {soft}): {e}"));
        // SAFETY: fresh mapping of at least 4096 bytes.
        unsafe { std::ptr::write_volatile(b.cpu_ptr().cast::<u32>(), i as u32) };
        bufs.push(b);
    }
    assert!(
        tegragpu::os::open_fd_count() <= fds_before + 1,
        "{n_bufs} live buffers hold file descriptors: {} open, {fds_before} before",
        tegragpu::os::open_fd_count()
    );
    // The process can still open files.
    let f = std::fs::File::open("/dev/null").expect("open() with more live buffers than fds");
    drop(f);
    // Every buffer still holds its memory through its mappings.
    for (i, b) in bufs.iter().enumerate() {
        // SAFETY: as written above.
        let v = unsafe { std::ptr::read_volatile(b.cpu_ptr().cast::<u32>()) };
        assert_eq!(v, i as u32, "buffer {i}");
    }
    // The GPU mappings of buffers whose fds were closed long ago work (the last three).
    let n = 1000;
    let (a, b, c) = (&bufs[n_bufs - 3], &bufs[n_bufs - 2], &bufs[n_bufs - 1]);
    for (buf, k) in [(a, 1.0f32), (b, 2.0)] {
        let v: Vec<f32> = (0..n).map(|i| i as f32 * k).collect();
        // SAFETY: each buffer is at least 4096 bytes = 1024 f32.
        unsafe { std::ptr::copy_nonoverlapping(v.as_ptr(), buf.cpu_ptr().cast::<f32>(), n) };
    }
    vector_add(&dev, a, b, c, n).expect("vector_add on buffers without fds");
    let mut out = vec![0f32; n];
    // SAFETY: as above; the signal passed.
    unsafe { std::ptr::copy_nonoverlapping(c.cpu_ptr().cast::<f32>(), out.as_mut_ptr(), n) };
    for (i, v) in out.iter().enumerate() {
        assert_eq!(*v, 3.0 * i as f32, "element {i}");
    }
    // Exporting still gives a (new) dma-buf fd.
    let fd = bufs[0]
        .export_dmabuf()
        .expect("export after the fd was closed");
    assert!(fd >= 0 && (fd as u64) < soft);
    emu.close(fd).unwrap();

    drop(bufs);
    drop(limit);
    drop(dev);
    let s = emu.stats();
    assert_eq!((s.fds, s.dmabufs, s.handles, s.vms), (0, 0, 0, 0), "{s:?}");
}

/// Running out of fds while creating a buffer fails with EMFILE, named, and leaves nothing.
#[test]
fn creating_a_buffer_needs_one_free_fd_for_a_moment() {
    let _serial = SERIAL.lock();
    let (emu, dev) = open_emu();
    let before = emu.stats();
    let fds = tegragpu::os::open_fd_count();
    // Fill every fd number below the soft limit.
    let limit = SoftLimit::lower_to((fds + 8) as u64);
    let mut hold = Vec::new();
    while let Ok(f) = std::fs::File::open("/dev/null") {
        hold.push(f);
    }
    let e = dev.alloc(4096, flags(0)).unwrap_err();
    assert_eq!(e.errno, Some(libc::EMFILE), "{e:?}");
    assert!(e.message.contains("NVMAP_IOC_GET_FD("), "{}", e.message);
    assert_eq!(emu.stats(), before, "nothing left of the failed buffer");
    drop(hold);
    drop(limit);
    dev.alloc(4096, flags(0)).expect("alloc once an fd is free");
}

/// The emulated kernel keeps a buffer while any reference remains — dma-buf fd, nvmap handle
/// ID, CPU mmap, GPU mapping — and frees it with the last one.
#[test]
fn emulated_dmabuf_lives_exactly_as_long_as_its_references() {
    let _serial = SERIAL.lock();
    let s = EmuSys::new();
    let nvmap = s
        .open(c"/dev/nvmap", libc::O_RDWR | libc::O_CLOEXEC)
        .unwrap();
    let ctrl = s
        .open(c"/dev/nvgpu/igpu0/ctrl", libc::O_RDWR | libc::O_CLOEXEC)
        .unwrap();
    let mut aa = nvgpu_alloc_as_args {
        big_page_size: 0,
        flags: NVGPU_GPU_IOCTL_ALLOC_AS_FLAGS_UNIFIED_VA,
        va_range_start: 0x20_0000,
        va_range_end: 0xFF_0000_0000,
        ..Default::default()
    };
    unsafe { s.ioctl(ctrl, NVGPU_GPU_IOCTL_ALLOC_AS, &mut aa as *mut _ as usize) }.unwrap();
    let base = s.stats().dmabufs;

    let mut c = nvmap_create_handle::create(8192);
    unsafe { s.ioctl(nvmap, NVMAP_IOC_CREATE, &mut c as *mut _ as usize) }.unwrap();
    let id = c.handle;
    let mut a = nvmap_alloc_handle {
        handle: id,
        heap_mask: NVMAP_HEAP_IOVMM,
        flags: NVMAP_HANDLE_CACHEABLE,
        align: 4096,
        numa_nid: -1,
    };
    unsafe { s.ioctl(nvmap, NVMAP_IOC_ALLOC, &mut a as *mut _ as usize) }.unwrap();
    let get_fd = || {
        let mut g = nvmap_create_handle::get_fd(id);
        unsafe { s.ioctl(nvmap, NVMAP_IOC_GET_FD, &mut g as *mut _ as usize) }.unwrap();
        g.fd()
    };
    let fd = get_fd();
    let mut m = nvgpu_as_map_buffer_ex_args {
        compr_kind: -1,
        dmabuf_fd: fd as u32,
        ..Default::default()
    };
    unsafe {
        s.ioctl(
            aa.as_fd,
            NVGPU_AS_IOCTL_MAP_BUFFER_EX,
            &mut m as *mut _ as usize,
        )
    }
    .unwrap();
    let rw = libc::PROT_READ | libc::PROT_WRITE;
    let p = unsafe { s.mmap(std::ptr::null_mut(), 8192, rw, libc::MAP_SHARED, fd, 0) }.unwrap();
    // Past the end of the buffer: EINVAL (dma_buf_mmap_internal).
    assert_eq!(
        unsafe { s.mmap(std::ptr::null_mut(), 4096, rw, libc::MAP_SHARED, fd, 8192) },
        Err(libc::EINVAL)
    );
    unsafe { p.add(4096).write(0x42) };
    // 1. The fd goes: the handle ID, the GPU and the CPU mapping remain.
    s.close(fd).unwrap();
    assert_eq!(s.stats().dmabufs, base + 1);
    // A new fd from the ID maps the same memory.
    let fd2 = get_fd();
    let q = unsafe {
        s.mmap(
            std::ptr::null_mut(),
            4096,
            libc::PROT_READ,
            libc::MAP_PRIVATE,
            fd2,
            4096,
        )
    }
    .unwrap();
    assert_eq!(unsafe { q.read() }, 0x42, "same pages through a second fd");
    unsafe { s.munmap(q, 4096) }.unwrap();
    s.close(fd2).unwrap();
    // 2. The handle ID goes (FREE): still mapped twice.
    unsafe { s.ioctl(nvmap, NVMAP_IOC_FREE, id as usize) }.unwrap();
    assert_eq!(s.stats().handles, 0);
    assert_eq!(s.stats().dmabufs, base + 1);
    assert_eq!(unsafe { p.add(4096).read() }, 0x42);
    // 3. The CPU mapping goes: the GPU mapping still holds it.
    unsafe { s.munmap(p, 8192) }.unwrap();
    assert_eq!(s.stats().dmabufs, base + 1);
    // 4. The GPU mapping goes: the memory is freed.
    let mut u = nvgpu_as_unmap_buffer_args { offset: m.offset };
    unsafe {
        s.ioctl(
            aa.as_fd,
            NVGPU_AS_IOCTL_UNMAP_BUFFER,
            &mut u as *mut _ as usize,
        )
    }
    .unwrap();
    assert_eq!(s.stats().dmabufs, base, "freed with its last reference");
    for f in [aa.as_fd, ctrl, nvmap] {
        s.close(f).unwrap();
    }
    let st = s.stats();
    assert_eq!((st.fds, st.dmabufs, st.vms), (0, 0, 0), "{st:?}");
}

/// A kernel writing to a freed buffer's GPU address faults (MMU fault at that address): the
/// emulator does not keep freed memory mapped.
#[test]
fn gpu_use_after_free_faults() {
    let _serial = SERIAL.lock();
    let (_emu, dev) = open_emu();
    let n = 256;
    let a = dev.alloc(4096, flags(0)).unwrap();
    let b = dev.alloc(4096, flags(0)).unwrap();
    let c = dev.alloc(4096, flags(0)).unwrap();
    let m = dev.load_module(&cubin()).unwrap();
    let k = m.kernel("vector_add").unwrap();
    let mut q = dev.create_queue(QueueKind::Compute).unwrap();
    let s = dev.create_signal(0).unwrap();
    q.synchronize(20 * SEC).unwrap();
    let dead = c.gpu_va();
    drop(c); // no work in flight: freed now
    assert_eq!(dev.held_for_queued_work().0, 0);
    let p = Params::new()
        .u64(a.gpu_va())
        .u64(b.gpu_va())
        .u64(dead)
        .u32(n as u32);
    q.launch(&k, &cfg(2, 128), p.bytes()).unwrap();
    q.signal(&s, 1).unwrap();
    q.submit().unwrap();
    let e = s.wait(1, 20 * SEC).unwrap_err();
    assert_eq!(e.status, Status::DeviceFault, "{e:?}");
    let f = dev.fault_report().expect("fault report");
    assert_eq!(f.code, 31, "MMU fault: {f:?}");
    assert!(
        f.address
            .is_some_and(|va| (dead..dead + 4096).contains(&va)),
        "fault inside the freed buffer {dead:#x}: {f:?}"
    );
}
