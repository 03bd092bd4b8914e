//! Memory shared through file descriptors, over the emulated Orin: `tg_buf_export_fd` /
//! `tg_buf_import_fd` (on nvgpu: dma-bufs, imported with `NVMAP_IOC_FROM_FD` and
//! `MAP_BUFFER_EX`) and signals whose value lives in a shared buffer
//! (`tg_signal_create_in_buffer`), the GPU-side ordering with another driver.
//!
//! The other side of the sharing is played by the same process: the exporting buffer's own CPU
//! and GPU views stand for the other driver's (the emulated kernel knows its own dma-bufs only,
//! so both ends live on one emulated device).

mod common;

use std::ptr::null_mut;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use common::{cfg, Params, SEC};
use tegragpu::backend::nvgpu::NvgpuBackend;
use tegragpu::core::{Buffer, Device, MemFlags, QueueKind, Signal};
use tegragpu::emu::EmuSys;
use tegragpu::os::Sys;
use tegragpu::Status;

fn open_emu() -> (Arc<EmuSys>, Device) {
    let emu = EmuSys::new();
    let b = NvgpuBackend::open(emu.clone()).expect("open over EmuSys");
    (emu, Device::from_backend(Box::new(b)).unwrap())
}

fn zeroed() -> MemFlags {
    MemFlags {
        cpu_cached: true,
        write_combined: false,
        zeroed: true,
    }
}

fn cubin() -> Vec<u8> {
    std::fs::read(common::repo_path(
        "tests/fixtures/cubin/kernels.sm_87.cubin",
    ))
    .expect("fixture cubin")
}

fn words(b: &Buffer, n: usize) -> Vec<u32> {
    // SAFETY: the buffer's CPU mapping holds at least n words (callers' sizes).
    unsafe { std::slice::from_raw_parts(b.cpu_ptr().cast::<u32>(), n) }.to_vec()
}

/// Wait for the device's work, then let it free what it held back for that work.
fn settle(dev: &Device) {
    dev.synchronize(20 * SEC).unwrap();
    assert_eq!(
        dev.held_for_queued_work().0,
        0,
        "nothing held back after a synchronize"
    );
}

/// The 64-bit word at `offset` of `b`, as the other driver sees it.
fn word64(b: &Buffer, offset: usize) -> &AtomicU64 {
    // SAFETY: offset + 8 lies inside the buffer; 8-aligned; shared memory.
    unsafe { &*(b.cpu_ptr().add(offset) as *const AtomicU64) }
}

#[test]
fn an_imported_dmabuf_is_the_exported_memory_for_the_cpu_and_the_gpu() {
    let (emu, dev) = open_emu();
    let n = 1000usize;
    let a = dev.alloc(3 * 4096 + 100, zeroed()).unwrap();
    let (fd, size) = a.export_fd().expect("export");
    assert!(fd >= 0);
    assert_eq!(
        size,
        4 * 4096,
        "the object is the buffer rounded up to pages"
    );
    let b = dev.import_fd(fd, 0).expect("import the whole dma-buf");
    assert_eq!(b.size(), size, "size 0 imports the whole object");
    // nvgpu maps a dma-buf once per address space and counts the mappings: the import of a
    // buffer of the same device gets the exporter's GPU address (another device's, its own).
    assert_eq!(b.gpu_va(), a.gpu_va(), "one GPU mapping, counted twice");
    assert_ne!(b.cpu_ptr(), a.cpu_ptr(), "a second CPU view");
    // The import holds the memory: the fd is no longer needed.
    emu.close(fd).unwrap();

    // CPU writes through one view are the other's.
    let x: Vec<f32> = (0..n).map(|i| i as f32).collect();
    // SAFETY: 4000 bytes fit both views.
    unsafe { std::ptr::copy_nonoverlapping(x.as_ptr(), a.cpu_ptr().cast::<f32>(), n) };
    let seen: Vec<f32> =
        // SAFETY: as above.
        unsafe { std::slice::from_raw_parts(b.cpu_ptr().cast::<f32>(), n) }.to_vec();
    assert_eq!(seen, x);

    // A kernel reads through the imported address and writes through it; the exporter's view
    // sees the result: c = a + b with a = b = the shared floats, c = a second shared region.
    let c_own = dev.alloc(4096, zeroed()).unwrap();
    let (cfd, _) = c_own.export_fd().unwrap();
    let c = dev.import_fd(cfd, 4000).expect("import 4000 bytes");
    emu.close(cfd).unwrap();
    assert_eq!(c.size(), 4000);
    let m = dev.load_module(&cubin()).unwrap();
    let k = m.kernel("vector_add").unwrap();
    let mut q = dev.create_queue(QueueKind::Compute).unwrap();
    let s = dev.create_signal(0).unwrap();
    let p = Params::new()
        .u64(b.gpu_va())
        .u64(b.gpu_va())
        .u64(c.gpu_va())
        .u32(n as u32);
    q.launch(&k, &cfg((n as u32).div_ceil(128), 128), p.bytes())
        .unwrap();
    q.signal(&s, 1).unwrap();
    q.submit().unwrap();
    s.wait(1, 20 * SEC).unwrap();
    // SAFETY: the signal passed; c_own holds n floats.
    let out = unsafe { std::slice::from_raw_parts(c_own.cpu_ptr().cast::<f32>(), n) };
    for (i, v) in out.iter().enumerate() {
        assert_eq!(*v, 2.0 * i as f32, "element {i}");
    }

    // The exporter frees its buffer: the import's GPU mapping and CPU view stay (the GPU
    // mapping's count drops by one), and a copy-engine fill through it shows in its CPU view.
    drop(a);
    settle(&dev);
    let mut cq = dev.create_queue(QueueKind::Copy).unwrap();
    cq.fill(&b, 0, 0x5a5a_5a5a, 4, 16).unwrap();
    cq.signal(&s, 2).unwrap();
    cq.submit().unwrap();
    s.wait(2, 20 * SEC).unwrap();
    assert_eq!(words(&b, 16), vec![0x5a5a_5a5a; 16]);
}

#[test]
fn exported_memory_outlives_its_buffer_and_goes_with_the_last_holder() {
    let (emu, dev) = open_emu();
    let baseline = emu.stats();
    let a = dev.alloc(8192, zeroed()).unwrap();
    // SAFETY: 8 KiB mapping.
    unsafe { std::ptr::write_volatile(a.cpu_ptr().cast::<u32>().add(100), 0xfeed_f00d) };
    let (fd, _) = a.export_fd().unwrap();
    drop(a);
    settle(&dev);
    let b = dev
        .import_fd(fd, 0)
        .expect("import after the exporter freed its buffer");
    assert_eq!(words(&b, 101)[100], 0xfeed_f00d);
    emu.close(fd).unwrap();
    let held = emu.stats();
    assert_eq!(held.dmabufs, baseline.dmabufs + 1, "{held:?}");
    assert_eq!(
        held.handles,
        baseline.handles + 1,
        "the import's FROM_FD ID: {held:?}"
    );
    drop(b);
    settle(&dev);
    // The GPU mapping's buffer is kept for a grace period while channels are attached (the
    // GPU may still read it), so look once the device is gone.
    drop(dev);
    let after = emu.stats();
    assert_eq!(
        (
            after.fds,
            after.dmabufs,
            after.handles,
            after.vms,
            after.iovmm_bytes
        ),
        (0, 0, 0, 0, 0),
        "the last holder freed the memory: {after:?}"
    );
}

#[test]
fn import_refuses_what_it_cannot_map_and_leaves_nothing() {
    let (emu, dev) = open_emu();
    let fds = tegragpu::os::open_fd_count();

    let e = dev.import_fd(-1, 0).unwrap_err();
    assert_eq!(e.status, Status::InvalidArgument, "{e}");
    assert!(e.message.contains("fd -1"), "{}", e.message);

    // A file of no size is no dma-buf.
    let null = std::fs::File::open("/dev/null").unwrap();
    let e = dev
        .import_fd(std::os::fd::AsRawFd::as_raw_fd(&null), 0)
        .unwrap_err();
    assert_eq!(e.status, Status::InvalidArgument, "{e}");
    assert!(e.message.contains("not a dma-buf"), "{}", e.message);

    // A pipe has no size at all.
    let mut p = [0i32; 2];
    // SAFETY: valid out-array.
    assert_eq!(unsafe { libc::pipe(p.as_mut_ptr()) }, 0);
    let e = dev.import_fd(p[0], 0).unwrap_err();
    assert!(e.message.contains("lseek"), "{}", e.message);
    // SAFETY: our pipe's fds.
    unsafe {
        libc::close(p[0]);
        libc::close(p[1]);
    }

    // A file of whole pages that no driver exported: nvgpu refuses to map it.
    let f = tempfile_of(8192);
    let e = dev
        .import_fd(std::os::fd::AsRawFd::as_raw_fd(&f), 0)
        .unwrap_err();
    assert!(
        e.message.contains("NVGPU_AS_IOCTL_MAP_BUFFER_EX"),
        "{}",
        e.message
    );

    // More than the object holds.
    let a = dev.alloc(4096, zeroed()).unwrap();
    let (fd, size) = a.export_fd().unwrap();
    let mid = emu.stats();
    let e = dev.import_fd(fd, size + 1).unwrap_err();
    assert_eq!(e.status, Status::InvalidArgument, "{e}");
    assert!(e.message.contains("exceeds"), "{}", e.message);
    assert_eq!(emu.stats(), mid, "a refused import leaves nothing");
    emu.close(fd).unwrap();
    drop(a);
    settle(&dev);
    drop(null);
    drop(f);
    assert_eq!(tegragpu::os::open_fd_count(), fds, "no fd left open");
    drop(dev);
    let after = emu.stats();
    assert_eq!(
        (after.fds, after.dmabufs, after.handles, after.vms),
        (0, 0, 0, 0),
        "{after:?}"
    );
}

/// An unlinked temporary file of `len` bytes.
fn tempfile_of(len: u64) -> std::fs::File {
    let dir = std::env::temp_dir();
    let path = dir.join(format!("tegragpu-share-fd-{}", std::process::id()));
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(&path)
        .unwrap();
    std::fs::remove_file(&path).unwrap();
    f.set_len(len).unwrap();
    f
}

/// The GPU-side ordering with another driver: this library's queue waits for a word the other
/// side writes, and releases a word the other side waits for, both in the shared buffer.
#[test]
fn a_signal_in_a_shared_buffer_orders_gpu_work_with_the_other_side() {
    let (emu, dev) = open_emu();
    // The other side's buffer: data at 0, its release word at 4096, ours at 4112.
    let theirs = dev.alloc(8192, zeroed()).unwrap();
    let (fd, _) = theirs.export_fd().unwrap();
    let shared = Arc::new(dev.import_fd(fd, 0).unwrap());
    emu.close(fd).unwrap();
    let go = Signal::in_buffer(shared.clone(), 4096).unwrap();
    let done = Signal::in_buffer(shared.clone(), 4112).unwrap();
    assert_eq!(go.gpu_va(), shared.gpu_va() + 4096);
    assert_eq!(
        (go.value(), done.value()),
        (0, 0),
        "the buffer's words, untouched"
    );

    let mut q = dev.create_queue(QueueKind::Copy).unwrap();
    q.wait(&go, 5).unwrap();
    q.fill(&shared, 0, 0x1234_5678, 4, 256).unwrap();
    q.signal(&done, 7).unwrap();
    q.submit().unwrap();
    // The queue waits for the other side's word: nothing runs until it is written.
    let e = done.wait(7, 200_000_000).unwrap_err();
    assert_eq!(e.status, Status::Timeout, "{e}");
    assert_eq!(
        words(&theirs, 4),
        vec![0; 4],
        "the fill waits for the release"
    );
    // A release below the target keeps it waiting.
    word64(&theirs, 4096).store(4, Ordering::Release);
    assert_eq!(
        done.wait(7, 100_000_000).unwrap_err().status,
        Status::Timeout
    );
    // The other side releases: the queue runs and releases its own word, which the other
    // side reads in its memory.
    word64(&theirs, 4096).store(5, Ordering::Release);
    done.wait(7, 20 * SEC)
        .expect("the queue ran after the release");
    assert_eq!(word64(&theirs, 4112).load(Ordering::Acquire), 7);
    assert_ne!(
        word64(&theirs, 4120).load(Ordering::Acquire),
        0,
        "the GPU's timestamp follows the value"
    );
    assert_eq!(
        done.timestamp(),
        word64(&theirs, 4120).load(Ordering::Acquire)
    );
    assert_eq!(words(&theirs, 256), vec![0x1234_5678; 256]);
    assert_eq!(go.value(), 5);

    // The CPU side of such a signal: set writes the shared word.
    go.set(9);
    assert_eq!(word64(&theirs, 4096).load(Ordering::Acquire), 9);
    // The signals keep the buffer; dropping all frees it with no signal slot to give back.
    drop(shared);
    drop((go, done));
    drop(q);
    settle(&dev);
}

#[test]
fn a_signal_in_a_buffer_needs_an_aligned_word_inside_it() {
    let (_emu, dev) = open_emu();
    let b = Arc::new(dev.alloc(4096, zeroed()).unwrap());
    for (offset, what) in [
        (8, "multiple of 16"),
        (4096, "outside"),
        (4088, "multiple of 16"),
    ] {
        let e = Signal::in_buffer(b.clone(), offset).unwrap_err();
        assert_eq!(e.status, Status::InvalidArgument, "offset {offset}: {e}");
        assert!(e.message.contains(what), "offset {offset}: {}", e.message);
        assert!(
            e.message.contains("tg_signal_create_in_buffer"),
            "{}",
            e.message
        );
    }
    let last = Signal::in_buffer(b.clone(), 4080).expect("the last 16 bytes");
    last.set(3);
    assert_eq!(last.value(), 3);
}

/// The C API: out-pointers, flags, and a round trip through `tg_buf_import_fd`.
#[test]
fn c_api_export_and_import() {
    use tegragpu::capi::*;
    let mut dev = null_mut();
    // SAFETY: valid C string and out-pointer.
    unsafe {
        assert_eq!(tg_device_open(c"emu".as_ptr(), &mut dev), tg_status::TG_OK);
        let mut buf = null_mut();
        assert_eq!(
            tg_buf_alloc(dev, 5000, TG_BUF_ZEROED, &mut buf),
            tg_status::TG_OK
        );
        let (mut fd, mut size) = (-1, 0u64);
        assert_eq!(
            tg_buf_export_fd(buf, null_mut(), &mut size),
            tg_status::TG_ERROR_NULL_POINTER
        );
        assert_eq!(
            tg_buf_export_fd(buf, &mut fd, null_mut()),
            tg_status::TG_ERROR_NULL_POINTER
        );
        assert_eq!(fd, -1, "out-parameters untouched on failure");
        assert_eq!(tg_buf_export_fd(buf, &mut fd, &mut size), tg_status::TG_OK);
        assert!(fd >= 0);
        assert_eq!(size, 8192);

        let mut imp = null_mut();
        assert_eq!(
            tg_buf_import_fd(dev, fd, 0, 1, &mut imp),
            tg_status::TG_ERROR_INVALID_ARGUMENT
        );
        assert!(imp.is_null());
        assert_eq!(
            tg_buf_import_fd(dev, fd, 0, 0, null_mut()),
            tg_status::TG_ERROR_NULL_POINTER
        );
        assert_eq!(
            tg_buf_import_fd(dev, fd, 4096, 0, &mut imp),
            tg_status::TG_OK
        );
        let mut n = 0u64;
        assert_eq!(tg_buf_size(imp, &mut n), tg_status::TG_OK);
        assert_eq!(n, 4096);
        libc::close(fd);

        let mut p: *mut std::ffi::c_void = null_mut();
        assert_eq!(tg_buf_cpu_ptr(buf, &mut p), tg_status::TG_OK);
        let mut q: *mut std::ffi::c_void = null_mut();
        assert_eq!(tg_buf_cpu_ptr(imp, &mut q), tg_status::TG_OK);
        std::ptr::write_volatile(p.cast::<u32>(), 77);
        assert_eq!(std::ptr::read_volatile(q.cast::<u32>()), 77);

        let mut sig = null_mut();
        assert_eq!(
            tg_signal_create_in_buffer(imp, 8, &mut sig),
            tg_status::TG_ERROR_INVALID_ARGUMENT
        );
        assert_eq!(
            tg_signal_create_in_buffer(imp, 16, null_mut()),
            tg_status::TG_ERROR_NULL_POINTER
        );
        assert_eq!(
            tg_signal_create_in_buffer(imp, 16, &mut sig),
            tg_status::TG_OK
        );
        // The buffer handle may go first: the signal keeps the memory.
        assert_eq!(tg_buf_free(imp), tg_status::TG_OK);
        assert_eq!(tg_signal_set(sig, 11), tg_status::TG_OK);
        assert_eq!(std::ptr::read_volatile(p.cast::<u64>().add(2)), 11);
        assert_eq!(tg_signal_destroy(sig), tg_status::TG_OK);
        assert_eq!(tg_buf_free(buf), tg_status::TG_OK);
        assert_eq!(tg_device_close(dev), tg_status::TG_OK);
    }
}
