//! The rig of these tests: the spinning reference kernel `rules_spin`, pushbuffer and QMD
//! encoding, and a device opened through raw ioctls with channels brought up like the
//! library does.

use super::*;

// ---------------------------------------------------------------- the spinning kernel

/// Code bytes of `rules_spin` (any bytes the fixture cubins do not contain).
pub(crate) const SPIN_CODE: &[u8; 32] = b"emu_driver_rules: rules_spin ...";

/// Params: started (u64), flag (u64), max_ns (u64).
pub(crate) fn rules_spin(ctx: &LaunchCtx) -> Result<(), MmuFault> {
    let (started, flag, max_ns) = (ctx.param_u64(0), ctx.param_u64(8), ctx.param_u64(16));
    let mut m = GpuMem::new(ctx.mmu);
    m.write_u32(started, 1)?;
    if m.read_u32(flag)? == 0 && ctx.started.elapsed().as_nanos() < u128::from(max_ns) {
        ctx.keep_running();
    }
    Ok(())
}

pub(crate) fn register_spin() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        tegragpu::emu::kernels::register("rules_spin", SPIN_CODE.to_vec(), rules_spin)
    });
}

// ---------------------------------------------------------------- pushbuffer / QMD encoding

pub(crate) fn inc(subch: u32, method: u32, count: u32) -> u32 {
    (1 << 29) | (count << 16) | (subch << 13) | (method >> 2)
}
pub(crate) fn immd(subch: u32, method: u32, data: u32) -> u32 {
    (4 << 29) | (data << 16) | (subch << 13) | (method >> 2)
}
/// Host semaphore release of a 32-bit `payload` at `addr`.
pub(crate) fn sem_release(w: &mut Vec<u32>, addr: u64, payload: u32) {
    w.extend([
        inc(0, 0x5c, 5),
        addr as u32,
        (addr >> 32) as u32,
        payload,
        0,
        1,
    ]);
}
/// Compute object on subchannel 1 with the local/shared windows the launch checks want.
pub(crate) fn compute_init(w: &mut Vec<u32>) {
    w.extend([
        inc(1, 0, 1),
        COMPUTE,
        inc(1, 0x7b0, 2),
        0xfd,
        0,
        inc(1, 0x2a0, 2),
        0xfe,
        0,
    ]);
}
pub(crate) fn set_bits(q: &mut [u32], hi: u32, lo: u32, v: u64) {
    for b in lo..=hi {
        let bitv = (v >> (b - lo)) & 1;
        let w = (b / 32) as usize;
        q[w] = (q[w] & !(1 << (b % 32))) | ((bitv as u32) << (b % 32));
    }
}
/// QMD V03_00 for one 32-thread CTA.
pub(crate) fn qmd_v03(program: u64, cbank: u64, cbank_size: u32) -> Vec<u8> {
    let mut q = vec![0u32; 64];
    set_bits(&mut q, 583, 580, 3);
    set_bits(&mut q, 415, 384, 1);
    set_bits(&mut q, 431, 416, 1);
    set_bits(&mut q, 463, 448, 1);
    set_bits(&mut q, 607, 592, 32);
    set_bits(&mut q, 623, 608, 1);
    set_bits(&mut q, 639, 624, 1);
    set_bits(&mut q, 656, 648, 32);
    set_bits(&mut q, 640, 640, 1);
    set_bits(&mut q, 1055, 1024, cbank & 0xffff_ffff);
    set_bits(&mut q, 1072, 1056, cbank >> 32);
    set_bits(&mut q, 1087, 1075, u64::from(cbank_size >> 4));
    set_bits(&mut q, 1567, 1536, program & 0xffff_ffff);
    set_bits(&mut q, 1584, 1568, program >> 32);
    q.iter().flat_map(|w| w.to_le_bytes()).collect()
}

// ---------------------------------------------------------------- the rig

pub(crate) fn ioc<T: AbiPod>(s: &EmuSys, fd: i32, req: u64, a: &mut T) -> Result<i32, i32> {
    // SAFETY: `a` is a live value of the request's argument type.
    unsafe { s.ioctl(fd, req, a as *mut T as usize) }
}

/// A channel brought up like the library does (usermode submit, error notifier).
pub(crate) struct Ch {
    pub(crate) fd: i32,
    pub(crate) token: u32,
    gpfifo: *mut u8,
    userd: *mut u8,
    pub(crate) notifier: *mut u8,
    put: Cell<u32>,
}

pub(crate) const ENTRIES: u32 = 512;

/// A grid of `rules_spin` on a channel.
pub(crate) struct Spin {
    started: *mut u32,
    flag: *mut u32,
    done: *mut u32,
}

impl Spin {
    fn started(&self) -> bool {
        // SAFETY: inside the rig's work buffer.
        unsafe { (*(self.started as *const AtomicU32)).load(Ordering::Acquire) != 0 }
    }
    pub(crate) fn done(&self) -> bool {
        // SAFETY: as above.
        unsafe { (*(self.done as *const AtomicU32)).load(Ordering::Acquire) != 0 }
    }
    pub(crate) fn wait_started(&self) {
        wait_for("the grid to start", Duration::from_secs(5), || {
            self.started()
        });
    }
    pub(crate) fn release(&self) {
        // SAFETY: as above.
        unsafe { (*(self.flag as *const AtomicU32)).store(1, Ordering::Release) };
    }
}

pub(crate) fn wait_for(what: &str, limit: Duration, mut cond: impl FnMut() -> bool) {
    let t = Instant::now();
    while !cond() {
        assert!(t.elapsed() < limit, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(1));
    }
}

pub(crate) struct Rig {
    pub(crate) s: Arc<EmuSys>,
    pub(crate) ctrl: i32,
    pub(crate) nvmap: i32,
    pub(crate) as_fd: i32,
    pub(crate) bell: *mut u8,
    pub(crate) work_va: u64,
    pub(crate) work: *mut u8,
    pub(crate) work_used: Cell<u64>,
}

pub(crate) const WORK_SIZE: u64 = 8 << 20;

impl Rig {
    pub(crate) fn new() -> Rig {
        Self::with(EmuSys::new())
    }
    fn with(s: Arc<EmuSys>) -> Rig {
        register_spin();
        let ctrl = s.open(CTRL, libc::O_RDWR | libc::O_CLOEXEC).unwrap();
        let nvmap = s.open(NVMAP, libc::O_RDWR | libc::O_CLOEXEC).unwrap();
        let mut a = nvgpu_alloc_as_args {
            flags: NVGPU_GPU_IOCTL_ALLOC_AS_FLAGS_UNIFIED_VA,
            va_range_start: 0x20_0000,
            va_range_end: 0xFF_0000_0000,
            ..Default::default()
        };
        ioc(&s, ctrl, NVGPU_GPU_IOCTL_ALLOC_AS, &mut a).unwrap();
        let mut r = Rig {
            s,
            ctrl,
            nvmap,
            as_fd: a.as_fd,
            bell: std::ptr::null_mut(),
            work_va: 0,
            work: std::ptr::null_mut(),
            work_used: Cell::new(0),
        };
        r.bell = r.mmap(r.ctrl, 0x10000, libc::MAP_SHARED).unwrap();
        let (_, wfd) = r.buf(WORK_SIZE as u32);
        r.work_va = r.map(wfd);
        r.work = r.mmap(wfd, WORK_SIZE as usize, libc::MAP_SHARED).unwrap();
        r
    }
    fn mmap(&self, fd: i32, len: usize, flags: i32) -> Result<*mut u8, i32> {
        // SAFETY: a fresh mapping.
        unsafe {
            self.s.mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                flags,
                fd,
                0,
            )
        }
    }
    /// CREATE + ALLOC(IOVMM) + GET_FD.
    pub(crate) fn buf(&self, size: u32) -> (u32, i32) {
        let mut c = nvmap_create_handle::create(size);
        ioc(&self.s, self.nvmap, NVMAP_IOC_CREATE, &mut c).unwrap();
        let mut a = nvmap_alloc_handle {
            handle: c.handle,
            heap_mask: NVMAP_HEAP_IOVMM,
            flags: NVMAP_HANDLE_WRITE_COMBINE | (0x900 << 16),
            align: 4096,
            numa_nid: 0,
        };
        ioc(&self.s, self.nvmap, NVMAP_IOC_ALLOC, &mut a).unwrap();
        let mut g = nvmap_create_handle::get_fd(c.handle);
        ioc(&self.s, self.nvmap, NVMAP_IOC_GET_FD, &mut g).unwrap();
        (c.handle, g.fd())
    }
    fn map(&self, fd: i32) -> u64 {
        let mut a = nvgpu_as_map_buffer_ex_args {
            compr_kind: NV_KIND_INVALID,
            incompr_kind: NV_KIND_PITCH,
            dmabuf_fd: fd as u32,
            ..Default::default()
        };
        ioc(&self.s, self.as_fd, NVGPU_AS_IOCTL_MAP_BUFFER_EX, &mut a).unwrap();
        a.offset
    }
    /// `size` bytes of the work buffer: (GPU VA, CPU pointer), zeroed.
    fn alloc(&self, size: u64) -> (u64, *mut u8) {
        let off = self.work_used.get().next_multiple_of(256);
        assert!(off + size <= WORK_SIZE, "work buffer exhausted");
        self.work_used.set(off + size);
        // SAFETY: inside the work mapping.
        let p = unsafe { self.work.add(off as usize) };
        // SAFETY: as above.
        unsafe { std::ptr::write_bytes(p, 0, size as usize) };
        (self.work_va + off, p)
    }
    pub(crate) fn open_tsg(&self) -> i32 {
        let mut a = nvgpu_gpu_open_tsg_args::default();
        ioc(&self.s, self.ctrl, NVGPU_GPU_IOCTL_OPEN_TSG, &mut a).unwrap();
        a.tsg_fd as i32
    }
    pub(crate) fn subctx(&self, tsg: i32) -> Result<u32, i32> {
        let mut a = nvgpu_tsg_create_subcontext_args {
            r#type: NVGPU_TSG_SUBCONTEXT_TYPE_ASYNC,
            as_fd: self.as_fd,
            ..Default::default()
        };
        ioc(&self.s, tsg, NVGPU_TSG_IOCTL_CREATE_SUBCONTEXT, &mut a).map(|_| a.veid)
    }
    pub(crate) fn open_channel(&self, runlist: i32) -> Result<i32, i32> {
        let mut a = nvgpu_gpu_open_channel_args::with_runlist_id(runlist);
        ioc(&self.s, self.ctrl, NVGPU_GPU_IOCTL_OPEN_CHANNEL, &mut a).map(|_| a.channel_fd)
    }
    pub(crate) fn as_bind(&self, ch: i32) -> Result<i32, i32> {
        ioc(
            &self.s,
            self.as_fd,
            NVGPU_AS_IOCTL_BIND_CHANNEL,
            &mut nvgpu_as_bind_channel_args {
                channel_fd: ch as u32,
            },
        )
    }
    pub(crate) fn bind_ex(&self, tsg: i32, ch: i32, veid: u32) -> Result<i32, i32> {
        let mut a = nvgpu_tsg_bind_channel_ex_args {
            channel_fd: ch,
            subcontext_id: veid,
            ..Default::default()
        };
        ioc(&self.s, tsg, NVGPU_TSG_IOCTL_BIND_CHANNEL_EX, &mut a)
    }
    /// OPEN_CHANNEL → AS BIND → BIND_CHANNEL_EX(veid).
    pub(crate) fn bound_channel(&self, tsg: i32, veid: u32) -> Result<i32, i32> {
        let ch = self.open_channel(-1)?;
        self.as_bind(ch)?;
        self.bind_ex(tsg, ch, veid)?;
        Ok(ch)
    }
    /// A channel of `tsg` on a new ASYNC subcontext, set up for usermode submit with an error
    /// notifier (no ALLOC_OBJ_CTX yet).
    pub(crate) fn chan(&self, tsg: i32) -> Ch {
        let veid = self.subctx(tsg).unwrap();
        let fd = self.bound_channel(tsg, veid).unwrap();
        let mut w = nvgpu_channel_wdt_args {
            wdt_status: NVGPU_IOCTL_CHANNEL_DISABLE_WDT,
            timeout_ms: 0,
        };
        ioc(&self.s, fd, NVGPU_IOCTL_CHANNEL_WDT, &mut w).unwrap();
        let (_, gp) = self.buf(ENTRIES * 8);
        let (_, ud) = self.buf(4096);
        let (_, nf) = self.buf(4096);
        let mut sb = nvgpu_channel_setup_bind_args {
            num_gpfifo_entries: ENTRIES,
            flags: UM_FLAGS,
            userd_dmabuf_fd: ud,
            gpfifo_dmabuf_fd: gp,
            ..Default::default()
        };
        ioc(&self.s, fd, NVGPU_IOCTL_CHANNEL_SETUP_BIND, &mut sb).unwrap();
        let mut n = nvgpu_set_error_notifier {
            mem: nf as u32,
            ..Default::default()
        };
        ioc(&self.s, fd, NVGPU_IOCTL_CHANNEL_SET_ERROR_NOTIFIER, &mut n).unwrap();
        let ch = Ch {
            fd,
            token: sb.work_submit_token,
            gpfifo: self
                .mmap(gp, (ENTRIES * 8) as usize, libc::MAP_SHARED)
                .unwrap(),
            userd: self.mmap(ud, 4096, libc::MAP_SHARED).unwrap(),
            notifier: self.mmap(nf, 4096, libc::MAP_SHARED).unwrap(),
            put: Cell::new(0),
        };
        for f in [gp, ud, nf] {
            self.s.close(f).unwrap();
        }
        ch
    }
    /// `chan` + ALLOC_OBJ_CTX(compute, flags) + ALLOC_OBJ_CTX(copy).
    pub(crate) fn compute_chan(&self, tsg: i32, flags: u32) -> Ch {
        let ch = self.chan(tsg);
        self.alloc_obj(ch.fd, COMPUTE, flags).unwrap();
        self.alloc_obj(ch.fd, COPY, 0).unwrap();
        ch
    }
    pub(crate) fn alloc_obj(&self, ch: i32, class: u32, flags: u32) -> Result<i32, i32> {
        let mut a = nvgpu_alloc_obj_ctx_args {
            class_num: class,
            flags,
            ..Default::default()
        };
        ioc(&self.s, ch, NVGPU_IOCTL_CHANNEL_ALLOC_OBJ_CTX, &mut a)
    }
    pub(crate) fn set_preemption_mode(
        &self,
        ch: i32,
        graphics: u32,
        compute: u32,
    ) -> Result<i32, i32> {
        let mut a = nvgpu_preemption_mode_args {
            graphics_preempt_mode: graphics,
            compute_preempt_mode: compute,
        };
        ioc(&self.s, ch, NVGPU_IOCTL_CHANNEL_SET_PREEMPTION_MODE, &mut a)
    }
    pub(crate) fn set_timeout_ex(&self, ch: i32, ms: u32) -> Result<i32, i32> {
        let mut a = nvgpu_set_timeout_ex_args {
            timeout: ms,
            flags: 0,
        };
        ioc(&self.s, ch, NVGPU_IOCTL_CHANNEL_SET_TIMEOUT_EX, &mut a)
    }
    pub(crate) fn timed_out(&self, ch: i32) -> u32 {
        let mut a = nvgpu_get_param_args::default();
        ioc(&self.s, ch, NVGPU_IOCTL_CHANNEL_GET_TIMEDOUT, &mut a).unwrap();
        a.value
    }
    /// (info32, status) of the channel's error notifier.
    pub(crate) fn notifier(&self, ch: &Ch) -> (u32, u16) {
        // SAFETY: the record is at offset 0 of the 4 KiB notifier mapping.
        let n: nvgpu_notification = unsafe { std::ptr::read_volatile(ch.notifier.cast()) };
        (n.info32, n.status)
    }
    /// Append one GPFIFO entry for `words`, publish GP_PUT and ring the doorbell.
    pub(crate) fn submit(&self, ch: &Ch, words: &[u32]) {
        let (va, p) = self.alloc(words.len() as u64 * 4);
        // SAFETY: `p` has room for the words.
        unsafe { std::ptr::copy_nonoverlapping(words.as_ptr().cast::<u8>(), p, words.len() * 4) };
        let entry = va | ((words.len() as u64) << 42);
        let put = ch.put.get();
        // SAFETY: inside the GPFIFO mapping; the USERD and doorbell words are 4-aligned.
        unsafe {
            std::ptr::write_volatile(ch.gpfifo.add(put as usize * 8).cast::<u64>(), entry);
            let next = (put + 1) % ENTRIES;
            ch.put.set(next);
            fence(Ordering::SeqCst);
            (*(ch.userd.add(0x8c) as *const AtomicU32)).store(next, Ordering::Release);
            fence(Ordering::SeqCst);
            (*(self.bell.add(0x90) as *const AtomicU32)).store(ch.token, Ordering::Release);
        }
    }
    /// Launch `rules_spin` (running until released or `max`), followed by a semaphore release
    /// of `done`.
    pub(crate) fn launch_spin(&self, ch: &Ch, max: Duration) -> Spin {
        let (code_va, code) = self.alloc(SPIN_CODE.len() as u64);
        // SAFETY: room for the code.
        unsafe { std::ptr::copy_nonoverlapping(SPIN_CODE.as_ptr(), code, SPIN_CODE.len()) };
        let (words_va, words) = self.alloc(16);
        let (started, flag, done) = (words_va, words_va + 4, words_va + 8);
        let mut cb = vec![0u8; 0x180];
        for (i, v) in [32u32, 1, 1, 1, 1, 1].iter().enumerate() {
            cb[i * 4..i * 4 + 4].copy_from_slice(&v.to_le_bytes());
        }
        cb[0x160..0x168].copy_from_slice(&started.to_le_bytes());
        cb[0x168..0x170].copy_from_slice(&flag.to_le_bytes());
        cb[0x170..0x178].copy_from_slice(&(max.as_nanos() as u64).to_le_bytes());
        let (cb_va, cbp) = self.alloc(cb.len() as u64);
        // SAFETY: room for the bank.
        unsafe { std::ptr::copy_nonoverlapping(cb.as_ptr(), cbp, cb.len()) };
        let q = qmd_v03(code_va, cb_va, cb.len() as u32);
        let (qmd_va, qp) = self.alloc(256);
        // SAFETY: room for the QMD.
        unsafe { std::ptr::copy_nonoverlapping(q.as_ptr(), qp, q.len()) };
        let mut w = Vec::new();
        compute_init(&mut w);
        w.extend([inc(1, 0x2b4, 1), (qmd_va >> 8) as u32, immd(1, 0x2c0, 9)]);
        sem_release(&mut w, done, 1);
        self.submit(ch, &w);
        // SAFETY: inside the work buffer.
        unsafe {
            Spin {
                started: words.cast(),
                flag: words.add(4).cast(),
                done: words.add(8).cast(),
            }
        }
    }
    /// A semaphore release of 1 to a fresh word; returns the word.
    pub(crate) fn release_word(&self, ch: &Ch) -> *mut u32 {
        let (va, p) = self.alloc(4);
        let mut w = Vec::new();
        sem_release(&mut w, va, 1);
        self.submit(ch, &w);
        p.cast()
    }
}

pub(crate) fn word(p: *mut u32) -> u32 {
    // SAFETY: a live word of the work buffer.
    unsafe { (*(p as *const AtomicU32)).load(Ordering::Acquire) }
}
