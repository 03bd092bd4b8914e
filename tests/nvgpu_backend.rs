//! `NvgpuBackend` tests.
//!
//! Part 1 runs the backend over `RecordingKernel`, a small fake `Sys` defined here that
//! records every call and answers with fixed values, and checks the calls against the values
//! and order that `docs/nvgpu-kernel-interface.md` §4–§6 prescribe (independent of the
//! backend). Part 2 (module `emu`, tests/nvgpu_backend/emu.rs) runs the backend over the
//! emulated kernel `tegragpu::emu::EmuSys`.

use std::collections::{HashMap, HashSet};
use std::ffi::CStr;
use std::os::fd::RawFd;
use std::sync::Arc;

use parking_lot::Mutex;
use tegragpu::backend::nvgpu::NvgpuBackend;
use tegragpu::backend::{Backend, Engine, MemFlags};
use tegragpu::error::Status;
use tegragpu::os::{Errno, Sys};
use tegragpu::sys::nvgpu::*;
use tegragpu::sys::nvmap::*;

#[path = "nvgpu_backend/emu.rs"]
mod emu;

/// Every test in this file runs alone: one of them measures process-wide fd and mapping
/// counts, which any concurrently running test would change.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> parking_lot::MutexGuard<'static, ()> {
    SERIAL.lock()
}

// ------------------------------------------------------------------------------------------
// Fake kernel
// ------------------------------------------------------------------------------------------

#[derive(Debug, Clone)]
struct Call {
    fd: RawFd,
    request: u64,
    /// Argument bytes as passed in (empty for by-value requests).
    arg: Vec<u8>,
    /// By-value argument (NVMAP_IOC_FREE).
    value: usize,
}

#[derive(Default)]
struct State {
    next_fd: RawFd,
    open: HashSet<RawFd>,
    names: HashMap<RawFd, String>,
    calls: Vec<Call>,
    closes: Vec<(RawFd, String)>,
    next_handle: u32,
    handles: HashSet<u32>,
    next_va: u64,
    maps: HashMap<usize, usize>,
    /// Last CPU mapping of each fd.
    fd_map: HashMap<RawFd, usize>,
    fail: Option<(u64, Errno)>,
    syscalls: usize,
}

struct RecordingKernel {
    st: Mutex<State>,
}

impl RecordingKernel {
    fn new() -> Arc<RecordingKernel> {
        Arc::new(RecordingKernel {
            st: Mutex::new(State {
                next_fd: 100,
                next_handle: 0x8000_0000,
                next_va: 0xff_ffe0_0000,
                ..Default::default()
            }),
        })
    }
    fn new_fd(st: &mut State, name: &str) -> RawFd {
        st.next_fd += 1;
        st.open.insert(st.next_fd);
        st.names.insert(st.next_fd, name.to_string());
        st.next_fd
    }
    fn calls(&self) -> Vec<Call> {
        self.st.lock().calls.clone()
    }
    fn fail_on(&self, request: u64, errno: Errno) {
        self.st.lock().fail = Some((request, errno));
    }
    fn syscalls(&self) -> usize {
        self.st.lock().syscalls
    }
}

fn arg<T: AbiPod>(c: &Call) -> T {
    T::from_bytes(&c.arg).expect("argument shorter than its struct")
}

/// Seed 001's characteristics of the Orin AGX (doc §3), the values the fake reports.
fn seed_characteristics() -> nvgpu_gpu_characteristics {
    let mut c = nvgpu_gpu_characteristics {
        arch: 0x170,
        r#impl: 0xb,
        rev: 0xa1,
        num_gpc: 1,
        numa_domain_id: -1,
        L2_cache_size: 4 << 20,
        num_tpc_per_gpc: 4,
        bus_type: 32,
        compression_page_size: 64 << 10,
        pde_coverage_bit_count: 47,
        flags: 0x01bf_5fff_7f5d_035d,
        twod_class: 0x902d,
        threed_class: 0xc797,
        compute_class: 0xc7c0,
        gpfifo_class: 0xc76f,
        inline_to_memory_class: 0xa140,
        dma_copy_class: 0xc7b5,
        gpc_mask: 1,
        sm_arch_sm_version: 0x807,
        sm_arch_spa_version: 0x806,
        sm_arch_warp_count: 96,
        gpu_va_bit_count: 40,
        max_gpfifo_entries: 1 << 28,
        max_freq: 1_300_000_000,
        ..Default::default()
    };
    c.chipname[..5].copy_from_slice(b"ga10b");
    c
}

impl Sys for RecordingKernel {
    fn open(&self, path: &CStr, _flags: i32) -> Result<RawFd, Errno> {
        let mut st = self.st.lock();
        st.syscalls += 1;
        let name = path.to_string_lossy().into_owned();
        Ok(Self::new_fd(&mut st, &name))
    }
    fn close(&self, fd: RawFd) -> Result<(), Errno> {
        let mut st = self.st.lock();
        st.syscalls += 1;
        if !st.open.remove(&fd) {
            return Err(libc::EBADF);
        }
        let name = st.names.remove(&fd).unwrap_or_default();
        st.closes.push((fd, name));
        Ok(())
    }
    unsafe fn ioctl(&self, fd: RawFd, request: u64, a: usize) -> Result<i32, Errno> {
        let mut st = self.st.lock();
        st.syscalls += 1;
        if !st.open.contains(&fd) {
            return Err(libc::EBADF);
        }
        let size = ioc_size(request);
        let by_value = request == NVMAP_IOC_FREE;
        let bytes = if by_value || size == 0 {
            Vec::new()
        } else {
            std::slice::from_raw_parts(a as *const u8, size).to_vec()
        };
        st.calls.push(Call {
            fd,
            request,
            arg: bytes,
            value: if by_value { a } else { 0 },
        });
        if let Some((r, e)) = st.fail {
            if r == request {
                return Err(e);
            }
        }
        macro_rules! out {
            ($t:ty, |$v:ident| $body:block) => {{
                let p = a as *mut $t;
                let mut $v: $t = std::ptr::read_unaligned(p);
                $body
                std::ptr::write_unaligned(p, $v);
            }};
        }
        match request {
            NVGPU_GPU_IOCTL_GET_CHARACTERISTICS => out!(nvgpu_gpu_get_characteristics, |g| {
                let c = seed_characteristics();
                let n = (g.gpu_characteristics_buf_size as usize).min(328);
                std::ptr::copy_nonoverlapping(
                    c.as_bytes().as_ptr(),
                    g.gpu_characteristics_buf_addr as *mut u8,
                    n,
                );
                g.gpu_characteristics_buf_size = 328;
            }),
            NVGPU_GPU_IOCTL_NUM_VSMS
            | NVGPU_GPU_IOCTL_GET_TPC_MASKS
            | NVGPU_GPU_IOCTL_GET_MEMORY_STATE => return Err(libc::ENOTTY),
            NVGPU_GPU_IOCTL_ALLOC_AS => out!(nvgpu_alloc_as_args, |x| {
                x.as_fd = Self::new_fd(&mut st, "as")
            }),
            NVGPU_GPU_IOCTL_OPEN_TSG => out!(nvgpu_gpu_open_tsg_args, |x| {
                x.tsg_fd = Self::new_fd(&mut st, "tsg") as u32
            }),
            NVGPU_TSG_IOCTL_CREATE_SUBCONTEXT => {
                out!(nvgpu_tsg_create_subcontext_args, |x| { x.veid = 1 })
            }
            NVGPU_GPU_IOCTL_OPEN_CHANNEL => out!(nvgpu_gpu_open_channel_args, |x| {
                x.channel_fd = Self::new_fd(&mut st, "channel")
            }),
            NVGPU_IOCTL_CHANNEL_SETUP_BIND => out!(nvgpu_channel_setup_bind_args, |x| {
                x.work_submit_token = 511
            }),
            NVGPU_IOCTL_CHANNEL_GET_USER_SYNCPOINT => out!(nvgpu_get_user_syncpoint_args, |x| {
                x.gpu_va = 0xff_ffe1_0000;
                x.syncpoint_id = 17;
                x.syncpoint_max = 30000;
            }),
            NVGPU_IOCTL_CHANNEL_GET_TIMEDOUT => out!(nvgpu_get_param_args, |x| { x.value = 0 }),
            NVMAP_IOC_CREATE => out!(nvmap_create_handle, |x| {
                st.next_handle += 1;
                x.handle = st.next_handle;
                let h = st.next_handle;
                st.handles.insert(h);
            }),
            NVMAP_IOC_GET_FD => out!(nvmap_create_handle, |x| {
                x.size = Self::new_fd(&mut st, "dmabuf") as u32
            }),
            NVMAP_IOC_FREE => {
                st.handles.remove(&(a as u32));
            }
            NVGPU_AS_IOCTL_MAP_BUFFER_EX => out!(nvgpu_as_map_buffer_ex_args, |x| {
                // Top-down, 4 KiB-aligned, like the real allocator's small blocks.
                let size = 1 << 20; // every test buffer is ≤ 1 MiB
                st.next_va -= size;
                x.offset = st.next_va;
            }),
            _ => {}
        }
        Ok(0)
    }
    unsafe fn mmap(
        &self,
        addr: *mut u8,
        len: usize,
        prot: i32,
        flags: i32,
        fd: RawFd,
        _off: i64,
    ) -> Result<*mut u8, Errno> {
        let mut st = self.st.lock();
        st.syscalls += 1;
        if !st.open.contains(&fd) {
            return Err(libc::EBADF);
        }
        let f = libc::MAP_SHARED | libc::MAP_ANONYMOUS | (flags & libc::MAP_FIXED_NOREPLACE);
        let p = libc::mmap(addr.cast(), len, prot, f, -1, 0);
        if p == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error()
                .raw_os_error()
                .unwrap_or(libc::EIO));
        }
        st.maps.insert(p as usize, len);
        st.fd_map.insert(fd, p as usize);
        Ok(p.cast())
    }
    unsafe fn munmap(&self, addr: *mut u8, len: usize) -> Result<(), Errno> {
        let mut st = self.st.lock();
        st.syscalls += 1;
        if st.maps.remove(&(addr as usize)) != Some(len) {
            return Err(libc::EINVAL);
        }
        libc::munmap(addr.cast(), len);
        Ok(())
    }
}

fn open_fake() -> (Arc<RecordingKernel>, NvgpuBackend) {
    let k = RecordingKernel::new();
    // No channels made at open: the tests below see each channel's calls when they make it.
    let b =
        NvgpuBackend::open_with_channels(k.clone(), 0, 0).expect("open over the recording kernel");
    (k, b)
}

fn position(calls: &[Call], request: u64) -> usize {
    calls
        .iter()
        .position(|c| c.request == request)
        .unwrap_or_else(|| panic!("request {request:#x} never issued"))
}

// ------------------------------------------------------------------------------------------
// Part 1: call sequences and arguments
// ------------------------------------------------------------------------------------------

#[test]
fn open_issues_documented_bringup() {
    let _serial = serial();
    let (k, b) = open_fake();
    let calls = k.calls();
    let st = k.st.lock();
    let ctrl = *st
        .names
        .iter()
        .find(|(_, n)| n.as_str() == "/dev/nvgpu/igpu0/ctrl")
        .expect("ctrl open")
        .0;
    drop(st);

    let aa: nvgpu_alloc_as_args = arg(&calls[position(&calls, NVGPU_GPU_IOCTL_ALLOC_AS)]);
    assert_eq!(
        (
            aa.big_page_size,
            aa.flags,
            aa.va_range_start,
            aa.va_range_end,
            aa.va_range_split
        ),
        (0, 2, 0x20_0000, 0xFF_0000_0000, 0),
        "§4.1 recommended ALLOC_AS arguments"
    );
    assert_eq!(calls[position(&calls, NVGPU_GPU_IOCTL_ALLOC_AS)].fd, ctrl);

    let spaces: Vec<nvgpu_as_alloc_space_args> = calls
        .iter()
        .filter(|c| c.request == NVGPU_AS_IOCTL_ALLOC_SPACE)
        .map(arg)
        .collect();
    let mut offs: Vec<u64> = spaces.iter().map(|s| s.o_a).collect();
    offs.sort();
    assert_eq!(offs, vec![0xFD_0000_0000, 0xFE_0000_0000]);
    for s in &spaces {
        assert_eq!(
            (s.pages, s.page_size, s.flags),
            (262_144, 4096, 1),
            "1 GiB FIXED window of 4 KiB pages"
        );
    }
    // Windows before any mapping; TSG → subcontext on the AS fd.
    let last_space = calls
        .iter()
        .rposition(|c| c.request == NVGPU_AS_IOCTL_ALLOC_SPACE)
        .unwrap();
    if let Some(first_map) = calls
        .iter()
        .position(|c| c.request == NVGPU_AS_IOCTL_MAP_BUFFER_EX)
    {
        assert!(last_space < first_map);
    }
    let sc: nvgpu_tsg_create_subcontext_args =
        arg(&calls[position(&calls, NVGPU_TSG_IOCTL_CREATE_SUBCONTEXT)]);
    assert_eq!(sc.r#type, 1, "ASYNC subcontext");
    let as_fd = calls[position(&calls, NVGPU_AS_IOCTL_ALLOC_SPACE)].fd;
    assert_eq!(sc.as_fd, as_fd);
    assert!(
        position(&calls, NVGPU_GPU_IOCTL_OPEN_TSG)
            < position(&calls, NVGPU_TSG_IOCTL_CREATE_SUBCONTEXT)
    );

    let i = b.info();
    assert_eq!(i.name, "ga10b");
    assert_eq!((i.arch, i.sm_major, i.sm_minor), (0x170, 8, 7));
    assert_eq!(
        (i.compute_class, i.copy_class, i.gpfifo_class),
        (0xc7c0, 0xc7b5, 0xc76f)
    );
    assert_eq!(i.va_bits, 40);
    assert_eq!(
        (i.shared_window, i.local_window),
        (0xFE_0000_0000, 0xFD_0000_0000)
    );
    assert_eq!(
        i.sm_count, 8,
        "1 GPC × 4 TPC × 2 SM when NUM_VSMS/TPC masks are unsupported"
    );
    assert!(!i.emulated);
}

#[test]
fn alloc_uses_documented_nvmap_and_map_arguments() {
    let _serial = serial();
    let (k, b) = open_fake();
    let n0 = k.calls().len();
    let a = b.alloc(1, MemFlags::default()).unwrap();
    assert_eq!(a.size, 4096);
    assert_eq!(a.gpu_va, a.cpu as u64, "CPU view at the GPU VA");
    let c = k.calls()[n0..].to_vec();
    let reqs: Vec<u64> = c.iter().map(|c| c.request).collect();
    assert_eq!(
        reqs,
        vec![
            NVMAP_IOC_CREATE,
            NVMAP_IOC_ALLOC,
            NVMAP_IOC_GET_FD,
            NVGPU_AS_IOCTL_MAP_BUFFER_EX
        ]
    );
    let cr: nvmap_create_handle = arg(&c[0]);
    assert_eq!(cr.size, 4096);
    let al: nvmap_alloc_handle = arg(&c[1]);
    assert_eq!(al.heap_mask, 0x4000_0000, "IOVMM");
    assert_eq!(al.flags & 3, 3, "CACHEABLE by default");
    assert_eq!(al.flags >> 16, 0x0900, "tag");
    assert_eq!(al.align, 4096);
    assert!(al.numa_nid == 0 || al.numa_nid == -1);
    let m: nvgpu_as_map_buffer_ex_args = arg(&c[3]);
    assert_eq!(
        (
            m.compr_kind,
            m.incompr_kind,
            m.offset,
            m.buffer_offset,
            m.mapping_size
        ),
        (-1, 0, 0, 0, 0)
    );
    assert_eq!(m.flags & !(0x4 | 0x200), 0, "no FIXED/unknown map flags");
    b.free(&a).unwrap();

    let w = b
        .alloc(
            5000,
            MemFlags {
                write_combined: true,
                zeroed: true,
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(w.size, 8192);
    let al: nvmap_alloc_handle = arg(k
        .calls()
        .iter()
        .rev()
        .find(|c| c.request == NVMAP_IOC_ALLOC)
        .unwrap());
    assert_eq!(al.flags & 3, 1, "WRITE_COMBINE");
    assert_eq!(al.flags & 0x20, 0x20, "ZEROED_PAGES");
    b.free(&w).unwrap();
}

#[test]
fn free_undoes_everything_and_rejects_double_free() {
    let _serial = serial();
    let (k, b) = open_fake();
    let before_open = k.st.lock().open.len();
    let a = b.alloc(1 << 16, MemFlags::default()).unwrap();
    let handle = {
        let calls = k.calls();
        let cr = calls
            .iter()
            .rev()
            .find(|c| c.request == NVMAP_IOC_CREATE)
            .unwrap();
        // The fake returns the handle in the struct; it is the highest one handed out.
        let _ = cr;
        k.st.lock().next_handle
    };
    b.free(&a).unwrap();
    let calls = k.calls();
    let un: nvgpu_as_unmap_buffer_args = arg(calls
        .iter()
        .rev()
        .find(|c| c.request == NVGPU_AS_IOCTL_UNMAP_BUFFER)
        .unwrap());
    assert_eq!(un.offset, a.gpu_va);
    let fr = calls
        .iter()
        .rev()
        .find(|c| c.request == NVMAP_IOC_FREE)
        .unwrap();
    assert_eq!(
        fr.value as u32, handle,
        "FREE passes the handle ID by value"
    );
    let st = k.st.lock();
    assert_eq!(st.open.len(), before_open, "dma-buf fd closed");
    assert!(!st.handles.contains(&handle));
    drop(st);
    let e = b.free(&a).unwrap_err();
    assert_eq!(e.status, Status::InvalidHandle);
}

/// A live buffer holds no fd: the dma-buf fd from GET_FD is closed once MAP_BUFFER_EX and the
/// CPU mapping hold the buffer; a channel keeps only its own fd once SETUP_BIND and
/// SET_ERROR_NOTIFIER hold its ring, USERD and notifier (docs/design.md, "File descriptors held
/// by buffers").
#[test]
fn live_buffers_and_channels_hold_no_dmabuf_fd() {
    let _serial = serial();
    let (k, b) = open_fake();
    let open_before = k.st.lock().open.clone();
    let a = b.alloc(1 << 16, MemFlags::default()).unwrap();
    {
        let st = k.st.lock();
        assert_eq!(st.open, open_before, "the buffer's dma-buf fd is closed");
        let (fd, _) = st.closes.last().expect("a close");
        assert_eq!(st.names.get(fd), None);
        // Closed after it was mapped: the GPU mapping names it, and it had a CPU mapping.
        let m: nvgpu_as_map_buffer_ex_args = arg(st
            .calls
            .iter()
            .rev()
            .find(|c| c.request == NVGPU_AS_IOCTL_MAP_BUFFER_EX)
            .unwrap());
        assert_eq!(m.dmabuf_fd as RawFd, *fd);
        assert!(st.fd_map.contains_key(fd), "mmap before close");
    }
    // Export still works: a new fd from the handle ID, owned by the caller.
    let e = b.export_dmabuf(&a).unwrap();
    assert!(k.st.lock().open.contains(&e));
    k.close(e).unwrap();
    let ch = b.create_channel(Engine::Compute, 64, true).unwrap();
    {
        let st = k.st.lock();
        let extra: Vec<&String> = st
            .open
            .difference(&open_before)
            .map(|f| &st.names[f])
            .collect();
        assert_eq!(extra, vec!["channel"], "a channel holds only its own fd");
        // Each buffer fd was closed after the ioctl that took the kernel's reference.
        let calls = &st.calls;
        let sb: nvgpu_channel_setup_bind_args = arg(calls
            .iter()
            .rev()
            .find(|c| c.request == NVGPU_IOCTL_CHANNEL_SETUP_BIND)
            .unwrap());
        let en: nvgpu_set_error_notifier = arg(calls
            .iter()
            .rev()
            .find(|c| c.request == NVGPU_IOCTL_CHANNEL_SET_ERROR_NOTIFIER)
            .unwrap());
        for fd in [sb.gpfifo_dmabuf_fd, sb.userd_dmabuf_fd, en.mem as RawFd] {
            assert!(
                st.closes.iter().any(|(c, n)| *c == fd && n == "dmabuf"),
                "dma-buf fd {fd} closed"
            );
        }
    }
    drop(ch);
    b.free(&a).unwrap();
    // The channel went back to the device's pool: its fd stays open until the device closes.
    {
        let st = k.st.lock();
        let extra: Vec<&String> = st
            .open
            .difference(&open_before)
            .map(|f| &st.names[f])
            .collect();
        assert_eq!(extra, vec!["channel"]);
    }
    drop(b);
}

#[test]
fn channel_issues_documented_sequence() {
    let _serial = serial();
    let (k, b) = open_fake();
    let n0 = k.calls().len();
    let ch = b.create_channel(Engine::Compute, 1024, true).unwrap();
    let c = k.calls()[n0..].to_vec();
    let order = [
        NVGPU_GPU_IOCTL_OPEN_CHANNEL,
        NVGPU_AS_IOCTL_BIND_CHANNEL,
        NVGPU_TSG_IOCTL_BIND_CHANNEL_EX,
        NVGPU_IOCTL_CHANNEL_WDT,
        NVGPU_IOCTL_CHANNEL_SETUP_BIND,
        NVGPU_IOCTL_CHANNEL_GET_USER_SYNCPOINT,
        NVGPU_IOCTL_CHANNEL_ALLOC_OBJ_CTX,
        NVGPU_IOCTL_CHANNEL_SET_ERROR_NOTIFIER,
    ];
    let pos: Vec<usize> = order.iter().map(|&r| position(&c, r)).collect();
    assert!(
        pos.windows(2).all(|w| w[0] < w[1]),
        "§4.2 order, got positions {pos:?}"
    );

    let oc: nvgpu_gpu_open_channel_args = arg(&c[pos[0]]);
    assert_eq!(oc.channel_fd, -1, "runlist_id -1");
    let ch_fd = *k
        .st
        .lock()
        .names
        .iter()
        .find(|(_, n)| n.as_str() == "channel")
        .unwrap()
        .0;
    let ab: nvgpu_as_bind_channel_args = arg(&c[pos[1]]);
    assert_eq!(ab.channel_fd as RawFd, ch_fd);
    let be: nvgpu_tsg_bind_channel_ex_args = arg(&c[pos[2]]);
    assert_eq!(
        (be.channel_fd, be.subcontext_id),
        (ch_fd, 1),
        "VEID from CREATE_SUBCONTEXT"
    );
    let w: nvgpu_channel_wdt_args = arg(&c[pos[3]]);
    assert_eq!(w.wdt_status, 1, "DISABLE");
    let sb: nvgpu_channel_setup_bind_args = arg(&c[pos[4]]);
    assert_eq!(
        sb.flags, 0xA,
        "USERMODE_SUPPORT (0x8) | DETERMINISTIC (0x2)"
    );
    // Channels are made for the device's pool: rings of the largest queue depth.
    assert_eq!(sb.num_gpfifo_entries, tegragpu::backend::pool::POOL_ENTRIES);
    assert_eq!((sb.userd_dmabuf_offset, sb.gpfifo_dmabuf_offset), (0, 0));
    assert!(
        sb.userd_dmabuf_fd > 0
            && sb.gpfifo_dmabuf_fd > 0
            && sb.userd_dmabuf_fd != sb.gpfifo_dmabuf_fd
    );
    // Ring ≥ max(4096, entries×8): the CREATE before SETUP_BIND for the gpfifo.
    let sizes: Vec<u32> = c[..pos[4]]
        .iter()
        .filter(|x| x.request == NVMAP_IOC_CREATE)
        .map(|x| arg::<nvmap_create_handle>(x).size)
        .collect();
    assert_eq!(
        sizes,
        vec![tegragpu::backend::pool::POOL_ENTRIES * 8, 4096],
        "gpfifo POOL_ENTRIES×8 bytes, USERD 4 KiB"
    );
    // Neither ring nor USERD is GPU-mapped by the library.
    assert!(!c[..pos[4]]
        .iter()
        .any(|x| x.request == NVGPU_AS_IOCTL_MAP_BUFFER_EX));
    let oo: nvgpu_alloc_obj_ctx_args = arg(&c[pos[6]]);
    assert_eq!(oo.class_num, 0xc7c0);
    let en: nvgpu_set_error_notifier = arg(&c[pos[7]]);
    assert_eq!(en.offset, 0);
    assert!(
        en.mem > 0 && en.mem as i32 != sb.gpfifo_dmabuf_fd && en.mem as i32 != sb.userd_dmabuf_fd
    );
    for &i in &pos[3..] {
        assert_eq!(c[i].fd, ch_fd, "channel ioctls go to the channel fd");
    }

    let r = ch.raw();
    assert_eq!(
        (r.token, r.entries, r.class, r.subchannel),
        (511, tegragpu::backend::pool::POOL_ENTRIES, 0xc7c0, 1)
    );
    let page = {
        let st = k.st.lock();
        let ctrl = *st
            .names
            .iter()
            .find(|(_, n)| n.as_str() == "/dev/nvgpu/igpu0/ctrl")
            .unwrap()
            .0;
        *st.fd_map.get(&ctrl).unwrap()
    };
    assert_eq!(
        r.doorbell as usize,
        page + 0x90,
        "doorbell = usermode page + 0x90"
    );
    assert!(ch.error().is_none());

    let cp = b.create_channel(Engine::Copy, 2, true).unwrap();
    assert_eq!((cp.raw().class, cp.raw().subchannel), (0xc7b5, 4));
    let last_create = k
        .calls()
        .iter()
        .rev()
        .filter(|x| x.request == NVMAP_IOC_CREATE)
        .nth(2)
        .map(|x| arg::<nvmap_create_handle>(x).size);
    assert_eq!(
        last_create,
        Some(tegragpu::backend::pool::POOL_ENTRIES * 8),
        "a queue of 2 entries gets a pooled channel's full ring"
    );
}

#[test]
fn notifier_error_is_reported() {
    let _serial = serial();
    let (k, b) = open_fake();
    let ch = b.create_channel(Engine::Compute, 64, true).unwrap();
    let calls = k.calls();
    let en: nvgpu_set_error_notifier = arg(calls
        .iter()
        .rev()
        .find(|c| c.request == NVGPU_IOCTL_CHANNEL_SET_ERROR_NOTIFIER)
        .unwrap());
    let p = *k.st.lock().fd_map.get(&(en.mem as RawFd)).unwrap();
    // Post an MMU fault the way the kernel does: {timestamp, info32=31, status=0xffff}.
    let n = nvgpu_notification {
        info32: 31,
        status: 0xffff,
        ..Default::default()
    };
    unsafe { std::ptr::write_volatile(p as *mut nvgpu_notification, n) };
    let e = ch.error().expect("error reported");
    assert_eq!(e.code, 31);
    assert!(e.what.contains("MMU fault"), "{}", e.what);
}

#[test]
fn teardown_follows_section_6() {
    let _serial = serial();
    let k = RecordingKernel::new();
    {
        let b = NvgpuBackend::open(k.clone()).unwrap();
        let _a = b.alloc(4096, MemFlags::default()).unwrap();
        let _c1 = b.create_channel(Engine::Compute, 8, true).unwrap();
        let _c2 = b.create_channel(Engine::Copy, 8, true).unwrap();
        // Backend dropped first, channels after: they keep the device alive.
        drop(b);
    }
    let st = k.st.lock();
    assert!(
        st.open.is_empty(),
        "fds left open: {:?}",
        st.open.iter().map(|f| &st.names[f]).collect::<Vec<_>>()
    );
    assert!(st.maps.is_empty(), "mappings left: {}", st.maps.len());
    assert!(
        st.handles.is_empty(),
        "nvmap handles not freed: {}",
        st.handles.len()
    );
    let idx = |name: &str| st.closes.iter().position(|(_, n)| n == name).unwrap();
    let last_channel = st.closes.iter().rposition(|(_, n)| n == "channel").unwrap();
    assert!(last_channel < idx("tsg"), "channels before TSG");
    assert!(idx("tsg") < idx("as"), "TSG before AS");
    assert!(idx("as") < idx("/dev/nvgpu/igpu0/ctrl"));
    // Every GPU mapping unmapped, windows released.
    let maps = st
        .calls
        .iter()
        .filter(|c| c.request == NVGPU_AS_IOCTL_MAP_BUFFER_EX)
        .count();
    let unmaps = st
        .calls
        .iter()
        .filter(|c| c.request == NVGPU_AS_IOCTL_UNMAP_BUFFER)
        .count();
    assert_eq!(maps, unmaps);
    assert_eq!(
        st.calls
            .iter()
            .filter(|c| c.request == NVGPU_AS_IOCTL_FREE_SPACE)
            .count(),
        2
    );
}

#[test]
fn bad_input_is_rejected_before_any_syscall() {
    let _serial = serial();
    let (k, b) = open_fake();
    let n = k.syscalls();
    for size in [0u64, (1 << 40) + 1, u64::MAX] {
        let e = b.alloc(size, MemFlags::default()).unwrap_err();
        assert_eq!(e.status, Status::InvalidArgument, "size {size:#x}");
    }
    let e = b
        .alloc(
            4096,
            MemFlags {
                cpu_cached: true,
                write_combined: true,
                zeroed: false,
            },
        )
        .unwrap_err();
    assert_eq!(e.status, Status::InvalidArgument);
    for entries in [0u32, 1, 3, 1000, 1 << 31, u32::MAX] {
        let e = b
            .create_channel(Engine::Compute, entries, true)
            .map(|_| ())
            .unwrap_err();
        assert_eq!(e.status, Status::InvalidArgument, "entries {entries}");
    }
    assert_eq!(k.syscalls(), n, "no syscall for invalid input");
}

#[test]
fn failures_name_the_ioctl_and_release_partial_state() {
    let _serial = serial();
    let (k, b) = open_fake();
    let open_before = k.st.lock().open.len();
    k.fail_on(NVGPU_AS_IOCTL_MAP_BUFFER_EX, libc::EINVAL);
    let e = b.alloc(4096, MemFlags::default()).unwrap_err();
    assert_eq!((e.status, e.errno), (Status::Os, Some(libc::EINVAL)));
    assert!(
        e.message
            .contains("NVGPU_AS_IOCTL_MAP_BUFFER_EX(dmabuf_fd="),
        "{}",
        e.message
    );
    assert!(e.message.contains("EINVAL"), "{}", e.message);
    {
        let st = k.st.lock();
        assert_eq!(
            st.open.len(),
            open_before,
            "dma-buf fd closed after the failure"
        );
        assert!(st.handles.is_empty(), "handle freed after the failure");
    }
    k.fail_on(NVMAP_IOC_ALLOC, libc::ENOMEM);
    let e = b.alloc(4096, MemFlags::default()).unwrap_err();
    assert_eq!(e.status, Status::OutOfMemory);
    assert!(
        e.message.contains("NVMAP_IOC_ALLOC(handle="),
        "{}",
        e.message
    );

    k.fail_on(NVGPU_IOCTL_CHANNEL_SETUP_BIND, libc::EINVAL);
    let e = b
        .create_channel(Engine::Compute, 16, true)
        .map(|_| ())
        .unwrap_err();
    assert!(
        e.message
            .contains("NVGPU_IOCTL_CHANNEL_SETUP_BIND(channel_fd="),
        "{}",
        e.message
    );
    let st = k.st.lock();
    assert_eq!(
        st.open.len(),
        open_before,
        "channel fd and ring/USERD fds closed"
    );
    assert!(st.handles.is_empty());
    assert!(st.closes.iter().any(|(_, n)| n == "channel"));
}

#[test]
fn open_failure_releases_everything() {
    let _serial = serial();
    for req in [
        NVGPU_GPU_IOCTL_ALLOC_AS,
        NVGPU_AS_IOCTL_ALLOC_SPACE,
        NVGPU_TSG_IOCTL_CREATE_SUBCONTEXT,
    ] {
        let k = RecordingKernel::new();
        k.fail_on(req, libc::EINVAL);
        let e = NvgpuBackend::open(k.clone()).unwrap_err();
        assert!(
            e.message.contains(request_name(req)),
            "{} should name {}",
            e.message,
            request_name(req)
        );
        let st = k.st.lock();
        assert!(
            st.open.is_empty() && st.maps.is_empty(),
            "partial open leaked"
        );
    }
}

#[test]
fn alloc_free_cycles_leave_nothing_behind_fake() {
    let _serial = serial();
    // The fake's own books (fds, CPU mappings, nvmap handles) are exact; process-wide counts
    // are checked over the emulated kernel below.
    let (k, b) = open_fake();
    let (open, maps) = {
        let st = k.st.lock();
        (st.open.len(), st.maps.len())
    };
    for i in 0..2000u64 {
        let a = b
            .alloc(
                4096 * (1 + i % 4),
                MemFlags {
                    zeroed: i % 2 == 0,
                    ..Default::default()
                },
            )
            .unwrap();
        b.free(&a).unwrap();
    }
    let st = k.st.lock();
    assert_eq!((st.open.len(), st.maps.len()), (open, maps));
    assert!(st.handles.is_empty());
    assert_eq!(b.live_allocations(), 0);
}
