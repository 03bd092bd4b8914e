//! Tests of the emulated GPU (`tegragpu::emu::gpu`), driven directly: a fake MMU over anonymous
//! mappings, a hand-built channel (USERD, GPFIFO ring, notifier), a 64 KiB doorbell page, and
//! pushbuffers / QMDs encoded here from the bit positions in gpu-programming-interface.md.
//! Every wait has a deadline, so a broken model fails instead of hanging.

mod common;

use memmap2::MmapMut;
use parking_lot::Mutex;
use std::sync::atomic::{fence, AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tegragpu::emu::gpu::Gpu;
use tegragpu::emu::hwif::{HostPtr, HwChannel, Mmu};

#[path = "emu_gpu/bit_exact.rs"]
mod bit_exact;
#[path = "emu_gpu/compute.rs"]
mod compute;
#[path = "emu_gpu/copy_engine.rs"]
mod copy_engine;
#[path = "emu_gpu/fixtures.rs"]
mod fixtures;

// ---------------------------------------------------------------- fake address space

struct Region {
    va: u64,
    len: u64,
    ptr: *mut u8,
    write: bool,
    _map: MmapMut,
}

/// A fixed set of GPU mappings backed by anonymous memory.
struct FakeMmu {
    regions: Vec<Region>,
}
// SAFETY: the mappings live as long as the FakeMmu and are only accessed through raw pointers,
// like memory shared between a CPU and a GPU.
unsafe impl Send for FakeMmu {}
unsafe impl Sync for FakeMmu {}

impl Mmu for FakeMmu {
    fn translate(&self, va: u64, len: u64, write: bool) -> Option<HostPtr> {
        let end = va.checked_add(len)?;
        self.regions
            .iter()
            .find(|r| r.va <= va && end <= r.va + r.len && (r.write || !write))
            .map(|r| {
                // SAFETY: inside the region.
                HostPtr(unsafe { r.ptr.add((va - r.va) as usize) })
            })
    }
}

impl FakeMmu {
    fn host(&self, va: u64, len: u64) -> *mut u8 {
        let r = self
            .regions
            .iter()
            .find(|r| r.va <= va && va + len <= r.va + r.len)
            .expect("test VA not mapped");
        // SAFETY: inside the region.
        unsafe { r.ptr.add((va - r.va) as usize) }
    }
}

fn region(va: u64, len: u64, write: bool) -> Region {
    let mut map = MmapMut::map_anon(len as usize).expect("anonymous mapping");
    let ptr = map.as_mut_ptr();
    Region {
        va,
        len,
        ptr,
        write,
        _map: map,
    }
}

// VA layout.
const CTRL: u64 = 0x10_0000_0000; // ring, pushbuffers, semaphores, QMDs, cbanks (1 MiB)
const RING: u64 = CTRL;
const PB: u64 = CTRL + 0x1_0000;
const SEM: u64 = CTRL + 0x8_0000;
const QMD: u64 = CTRL + 0x9_0000;
const CBANK: u64 = CTRL + 0xa_0000;
const DATA: u64 = 0x20_0000_0000; // 4 MiB
const SPLIT_A: u64 = 0x30_0000_0000; // two adjacent 64 KiB mappings
const SPLIT_B: u64 = SPLIT_A + 0x1_0000;
const CODE: u64 = 0x40_0000_0000; // 64 KiB, read-only
const UNMAPPED: u64 = 0x50_0000_0000;
const LOCAL: u64 = 0x60_0000_0000; // 4 MiB local-memory backing store
const TOKEN: u32 = 511;

// Classes.
const AMPERE_COMPUTE_B: u32 = 0xc7c0;
const AMPERE_DMA_COPY_B: u32 = 0xc7b5;
const HOPPER_COMPUTE_A: u32 = 0xcbc0;

// ---------------------------------------------------------------- pushbuffer encoding (§1.1)

fn inc(subch: u32, method: u32, count: u32) -> u32 {
    (1 << 29) | (count << 16) | (subch << 13) | (method >> 2)
}
fn non_inc(subch: u32, method: u32, count: u32) -> u32 {
    (3 << 29) | (count << 16) | (subch << 13) | (method >> 2)
}
fn immd(subch: u32, method: u32, data: u32) -> u32 {
    (4 << 29) | (data << 16) | (subch << 13) | (method >> 2)
}
fn one_inc(subch: u32, method: u32, count: u32) -> u32 {
    (5 << 29) | (count << 16) | (subch << 13) | (method >> 2)
}

/// Host SEM_ADDR_LO..SEM_EXECUTE (0x5c..0x6c) in one INC run.
fn sem(words: &mut Vec<u32>, addr: u64, payload: u64, exec: u32) {
    words.extend([
        inc(0, 0x5c, 5),
        addr as u32,
        (addr >> 32) as u32,
        payload as u32,
        (payload >> 32) as u32,
        exec,
    ]);
}

// ---------------------------------------------------------------- harness

struct Env {
    gpu: Arc<Gpu>,
    mmu: Arc<FakeMmu>,
    ch: Arc<HwChannel>,
    userd: MmapMut,
    bell: MmapMut,
    notifier: MmapMut,
    entries: u32,
    put: u32,
    pb_cursor: u64,
}

impl Env {
    fn new(entries: u32, classes: &[u32]) -> Env {
        let mmu = Arc::new(FakeMmu {
            regions: vec![
                region(CTRL, 0x10_0000, true),
                region(DATA, 0x40_0000, true),
                region(SPLIT_A, 0x1_0000, true),
                region(SPLIT_B, 0x1_0000, true),
                region(CODE, 0x1_0000, false),
                region(LOCAL, 0x40_0000, true),
            ],
        });
        let mut userd = MmapMut::map_anon(4096).expect("userd");
        let mut bell = MmapMut::map_anon(0x1_0000).expect("doorbell page");
        let mut notifier = MmapMut::map_anon(4096).expect("notifier");
        let ch = Arc::new(HwChannel {
            token: TOKEN,
            userd: HostPtr(userd.as_mut_ptr()),
            gpfifo_va: RING,
            entries,
            mmu: mmu.clone(),
            classes: Mutex::new(classes.to_vec()),
            notifier: Mutex::new(Some(HostPtr(notifier.as_mut_ptr()))),
            dead: AtomicBool::new(false),
        });
        let gpu = Gpu::new();
        gpu.add_doorbell(HostPtr(bell.as_mut_ptr()));
        gpu.attach_channel(ch.clone());
        Env {
            gpu,
            mmu,
            ch,
            userd,
            bell,
            notifier,
            entries,
            put: 0,
            pb_cursor: PB,
        }
    }

    fn write(&self, va: u64, data: &[u8]) {
        let p = self.mmu.host(va, data.len() as u64);
        // SAFETY: mapped test memory.
        unsafe { std::ptr::copy(data.as_ptr(), p, data.len()) }
    }
    fn read(&self, va: u64, n: usize) -> Vec<u8> {
        let p = self.mmu.host(va, n as u64);
        let mut v = vec![0u8; n];
        // SAFETY: mapped test memory.
        unsafe { std::ptr::copy(p, v.as_mut_ptr(), n) }
        v
    }
    fn atomic(&self, va: u64) -> &AtomicU32 {
        // SAFETY: 4-aligned mapped test memory that outlives the borrow.
        unsafe { &*(self.mmu.host(va, 4) as *const AtomicU32) }
    }
    fn u32(&self, va: u64) -> u32 {
        self.atomic(va).load(Ordering::Acquire)
    }
    fn u64(&self, va: u64) -> u64 {
        u64::from_le_bytes(self.read(va, 8).try_into().unwrap())
    }
    fn put_u32(&self, va: u64, v: u32) {
        self.atomic(va).store(v, Ordering::Release)
    }
    fn userd_word(&self, off: usize) -> &AtomicU32 {
        // SAFETY: 4-aligned offset into the USERD page.
        unsafe { &*(self.userd.as_ptr().add(off) as *const AtomicU32) }
    }
    fn gp_get(&self) -> u32 {
        self.userd_word(0x88).load(Ordering::Acquire)
    }

    /// Write a pushbuffer segment and its GPFIFO entry and advance USERD.GP_PUT, without ringing.
    fn push(&mut self, words: &[u32]) {
        let va = self.pb_cursor;
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        self.write(va, &bytes);
        self.pb_cursor = (va + bytes.len() as u64 + 0xff) & !0xff;
        assert!(self.pb_cursor < SEM, "test pushbuffer space exhausted");
        // §1.3: address bits 39:2, length in dwords at 62:42.
        let entry = va | ((words.len() as u64) << 42);
        self.write(RING + u64::from(self.put) * 8, &entry.to_le_bytes());
        self.put = (self.put + 1) % self.entries;
        fence(Ordering::SeqCst);
        self.userd_word(0x8c).store(self.put, Ordering::Release);
    }
    fn ring(&self) {
        fence(Ordering::SeqCst);
        // SAFETY: offset 0x90 of the 64 KiB doorbell page.
        let w = unsafe { &*(self.bell.as_ptr().add(0x90) as *const AtomicU32) };
        w.store(TOKEN, Ordering::Release);
    }
    fn submit(&mut self, words: &[u32]) {
        self.push(words);
        self.ring();
    }
    /// Wait (with a deadline) until the GPU has consumed everything submitted.
    fn wait_idle(&self) {
        let put = self.put;
        wait_for("GP_GET to reach GP_PUT", || {
            self.gp_get() == put || self.ch.is_dead()
        });
    }
    fn notifier_status(&self) -> (u32, u16) {
        let n = &self.notifier[..16];
        (
            u32::from_le_bytes(n[8..12].try_into().unwrap()),
            u16::from_le_bytes(n[14..16].try_into().unwrap()),
        )
    }
    fn notifier_ts(&self) -> u64 {
        u64::from_le_bytes(self.notifier[0..8].try_into().unwrap())
    }
    fn wait_fault(&self) {
        wait_for("a posted fault", || {
            self.ch.is_dead() && self.notifier_status().1 == 0xffff
        });
    }
}

fn wait_for(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_micros(200));
    }
}

fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: plain clock read.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

// ---------------------------------------------------------------- host semaphores

#[test]
fn semaphore_release_32_64_and_timestamp() {
    let mut env = Env::new(16, &[]);
    env.write(SEM, &[0xaa; 0x40]);
    let t0 = monotonic_ns();
    let mut w = Vec::new();
    sem(&mut w, SEM, 0x1122_3344_5566_7788, 0x0000_0001); // RELEASE, 32-bit
    sem(&mut w, SEM + 0x10, 0x1122_3344_5566_7788, 0x0100_0001); // RELEASE, 64-bit
    sem(&mut w, SEM + 0x20, 0x0102_0304_0506_0708, 0x0310_0001); // RELEASE|WFI|64|TIMESTAMP
    sem(&mut w, SEM + 0x30, 0xdead_beef_cafe_f00d, 0x0200_0001); // RELEASE|TIMESTAMP, 32-bit
    w.push(immd(0, 0x20, 0)); // NON_STALL_INTERRUPT
    env.submit(&w);
    env.wait_idle();
    let t1 = monotonic_ns();
    assert!(!env.ch.is_dead(), "faults: {:?}", env.gpu.faults());
    // 32-bit release writes exactly 4 bytes.
    assert_eq!(
        env.read(SEM, 8),
        [0x88, 0x77, 0x66, 0x55, 0xaa, 0xaa, 0xaa, 0xaa]
    );
    assert_eq!(env.u64(SEM + 0x10), 0x1122_3344_5566_7788);
    assert_eq!(env.u64(SEM + 0x20), 0x0102_0304_0506_0708);
    let ts = env.u64(SEM + 0x28);
    assert!(
        t0 <= ts && ts <= t1,
        "timestamp {ts} not within [{t0}, {t1}] (CLOCK_MONOTONIC)"
    );
    // 32-bit payload with timestamp: payload zero-extended to 8 bytes.
    assert_eq!(env.u64(SEM + 0x30), 0xcafe_f00d);
    let ts2 = env.u64(SEM + 0x38);
    assert!(ts <= ts2 && ts2 <= t1);
    assert!(env.gpu.faults().is_empty());
}

#[test]
fn acquire_blocks_until_cpu_writes_value() {
    let mut env = Env::new(16, &[]);
    env.put_u32(SEM, 0);
    env.put_u32(SEM + 0x40, 0);
    let mut w = Vec::new();
    sem(&mut w, SEM, 5, 0x0000_0000); // ACQUIRE == 5, 32-bit
    sem(&mut w, SEM + 0x40, 1, 0x0000_0001);
    sem(&mut w, SEM + 0x80, 0x1_0000_0003, 0x0100_0003); // ACQ_CIRC_GEQ 64-bit
    sem(&mut w, SEM + 0x40, 2, 0x0000_0001);
    env.submit(&w);
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(
        env.u32(SEM + 0x40),
        0,
        "release ran before the acquire was satisfied"
    );
    assert_eq!(env.gp_get(), 0);
    env.put_u32(SEM, 4); // not equal yet
    std::thread::sleep(Duration::from_millis(20));
    assert_eq!(env.u32(SEM + 0x40), 0);
    env.put_u32(SEM, 5);
    wait_for("first release", || env.u32(SEM + 0x40) == 1);
    std::thread::sleep(Duration::from_millis(20));
    assert_eq!(
        env.u32(SEM + 0x40),
        1,
        "64-bit CIRC_GEQ acquire passed early"
    );
    env.write(SEM + 0x80, &0x1_0000_0004u64.to_le_bytes());
    wait_for("second release", || env.u32(SEM + 0x40) == 2);
    env.wait_idle();
    assert!(env.gpu.faults().is_empty());
}

#[test]
fn gp_put_without_doorbell_does_nothing() {
    let mut env = Env::new(16, &[]);
    let mut w = Vec::new();
    sem(&mut w, SEM, 7, 1);
    env.push(&w);
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(env.u32(SEM), 0);
    assert_eq!(env.gp_get(), 0);
    env.ring();
    wait_for("release after the doorbell", || env.u32(SEM) == 7);
    env.wait_idle();
}

#[test]
fn unknown_token_is_ignored() {
    // A ring with a token no channel has must not run a channel whose GP_PUT equals GP_GET.
    let env = Env::new(16, &[]);
    // SAFETY: doorbell word.
    let w = unsafe { &*(env.bell.as_ptr().add(0x90) as *const AtomicU32) };
    w.store(12345, Ordering::Release);
    wait_for("the doorbell to be consumed", || {
        w.load(Ordering::Acquire) == 0xffff_ffff
    });
    assert!(env.gpu.faults().is_empty());
    assert_eq!(env.gp_get(), 0);
}

#[test]
fn ring_wraps_around_over_many_submissions() {
    let mut env = Env::new(8, &[]);
    for i in 1..=50u32 {
        let mut w = Vec::new();
        sem(&mut w, SEM, u64::from(i), 1);
        env.submit(&w);
        if i % 3 == 0 {
            env.wait_idle();
            assert_eq!(env.u32(SEM), i);
        }
        // Never overrun the ring: keep at most entries - 1 in flight.
        let put = env.put;
        wait_for("ring space", || (put + 8 - env.gp_get()) % 8 < 7);
    }
    env.wait_idle();
    assert_eq!(env.u32(SEM), 50);
    assert_eq!(env.gp_get(), 50 % 8);
    assert!(env.gpu.faults().is_empty());
}

#[test]
fn control_entry_nop_and_end_segment() {
    let mut env = Env::new(16, &[]);
    // A zero-length GP entry (control NOP).
    env.write(RING, &0u64.to_le_bytes());
    env.put = 1;
    env.userd_word(0x8c).store(1, Ordering::Release);
    // END_PB_SEGMENT stops the segment: the release after it must not run.
    let mut w = vec![0, non_inc(0, 0x8, 0)];
    sem(&mut w, SEM, 3, 1);
    w.push(7 << 29);
    sem(&mut w, SEM, 4, 1);
    env.submit(&w);
    env.wait_idle();
    assert_eq!(env.u32(SEM), 3);
    assert!(env.gpu.faults().is_empty());
}

// ---------------------------------------------------------------- faults

#[test]
fn unknown_method_posts_code_37_and_stops_channel() {
    let mut env = Env::new(16, &[]);
    let t0 = monotonic_ns();
    env.submit(&[inc(0, 0x0f0, 1), 0x1234]);
    env.wait_fault();
    let (code, status) = env.notifier_status();
    assert_eq!(status, 0xffff);
    assert_eq!(code, 37);
    assert!(env.notifier_ts() >= t0);
    let f = env.gpu.faults();
    assert_eq!(f.len(), 1);
    assert_eq!((f[0].token, f[0].code), (TOKEN, 37));
    // The dead channel executes nothing more.
    let mut w = Vec::new();
    sem(&mut w, SEM, 9, 1);
    env.submit(&w);
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(env.u32(SEM), 0);
    assert_eq!(env.gpu.faults().len(), 1);
}

#[test]
fn release_to_unmapped_address_is_mmu_fault() {
    let mut env = Env::new(16, &[]);
    let mut w = Vec::new();
    sem(&mut w, UNMAPPED + 0x40, 1, 1);
    env.submit(&w);
    env.wait_fault();
    assert_eq!(env.notifier_status(), (31, 0xffff));
    let f = env.gpu.faults();
    assert_eq!((f[0].code, f[0].address), (31, Some(UNMAPPED + 0x40)));
}

#[test]
fn misaligned_64bit_semaphore_is_pbdma_error() {
    let mut env = Env::new(16, &[]);
    let mut w = Vec::new();
    sem(&mut w, SEM + 4, 1, 0x0100_0001);
    env.submit(&w);
    env.wait_fault();
    assert_eq!(env.notifier_status(), (32, 0xffff));
}

#[test]
fn tlb_invalidate_is_privileged_and_membar_is_fine() {
    let mut env = Env::new(16, &[]);
    let mut w = vec![inc(0, 0x28, 4), 0, 0, 0, 5 << 27];
    sem(&mut w, SEM, 1, 1);
    env.submit(&w);
    env.wait_idle();
    assert_eq!(env.u32(SEM), 1);
    env.submit(&[inc(0, 0x28, 4), 0, 0, 0, 9 << 27]);
    env.wait_fault();
    assert_eq!(env.notifier_status(), (32, 0xffff));
}

#[test]
fn set_object_of_unallocated_class_faults() {
    let mut env = Env::new(16, &[AMPERE_DMA_COPY_B]);
    env.submit(&[inc(1, 0, 1), AMPERE_COMPUTE_B]);
    env.wait_fault();
    assert_eq!(env.notifier_status().1, 0xffff);
    assert_eq!(env.gpu.faults()[0].code, 13);
}

#[test]
fn detach_and_shutdown_return() {
    let mut env = Env::new(16, &[]);
    let mut w = Vec::new();
    sem(&mut w, SEM, 5, 0); // blocks forever
    env.submit(&w);
    std::thread::sleep(Duration::from_millis(20));
    env.gpu.detach_channel(TOKEN);
    env.put_u32(SEM, 5);
    let mut w = Vec::new();
    sem(&mut w, SEM + 0x40, 1, 1);
    env.submit(&w);
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(env.u32(SEM + 0x40), 0, "a detached channel still ran");
    env.gpu.quiesce();
    env.gpu.remove_doorbell(HostPtr(env.bell.as_mut_ptr()));
    env.gpu.shutdown();
    env.gpu.shutdown();
}

// ---------------------------------------------------------------- compute: QMDs

/// Set bits `hi:lo` of a QMD viewed as little-endian dwords (gpu-programming-interface.md §4).
fn set(q: &mut [u32], hi: u32, lo: u32, v: u64) {
    for b in lo..=hi {
        let bitv = (v >> (b - lo)) & 1;
        let w = (b / 32) as usize;
        q[w] = (q[w] & !(1 << (b % 32))) | ((bitv as u32) << (b % 32));
    }
}

struct Launch {
    grid: [u32; 3],
    block: [u32; 3],
    regs: u32,
    shared: u32,
    program: u64,
    cbank: u64,
    cbank_size: u32,
    release: Option<(u64, u32)>,
    /// Per-thread local memory (QMD SHADER_LOCAL_MEMORY_HIGH_SIZE).
    local: u32,
}

/// QMD V03_00 (§4.1).
fn qmd_v03(l: &Launch, minor: u32) -> Vec<u32> {
    let mut q = vec![0u32; 64];
    set(&mut q, 583, 580, 3);
    set(&mut q, 579, 576, u64::from(minor));
    set(&mut q, 415, 384, u64::from(l.grid[0]));
    set(&mut q, 431, 416, u64::from(l.grid[1]));
    set(&mut q, 463, 448, u64::from(l.grid[2]));
    set(&mut q, 607, 592, u64::from(l.block[0]));
    set(&mut q, 623, 608, u64::from(l.block[1]));
    set(&mut q, 639, 624, u64::from(l.block[2]));
    set(&mut q, 656, 648, u64::from(l.regs));
    set(&mut q, 561, 544, u64::from(l.shared));
    set(&mut q, 640, 640, 1);
    set(&mut q, 1055, 1024, l.cbank & 0xffff_ffff);
    set(&mut q, 1072, 1056, l.cbank >> 32);
    set(&mut q, 1087, 1075, u64::from(l.cbank_size >> 4));
    set(&mut q, 1567, 1536, l.program & 0xffff_ffff);
    set(&mut q, 1584, 1568, l.program >> 32);
    set(&mut q, 1623, 1600, u64::from(l.local));
    if let Some((addr, payload)) = l.release {
        set(&mut q, 799, 768, addr & 0xffff_ffff);
        set(&mut q, 807, 800, addr >> 32);
        set(&mut q, 823, 823, 1);
        set(&mut q, 831, 830, 1); // ONE_WORD
        set(&mut q, 863, 832, u64::from(payload));
    }
    q
}

/// QMD V04_00 (§4.3).
fn qmd_v04(l: &Launch, qmd_type: u32) -> Vec<u32> {
    let mut q = vec![0u32; 96];
    set(&mut q, 25, 23, u64::from(qmd_type));
    set(&mut q, 583, 580, 4);
    set(&mut q, 1055, 1024, u64::from(l.grid[0]));
    set(&mut q, 1071, 1056, u64::from(l.grid[1]));
    set(&mut q, 1103, 1088, u64::from(l.grid[2]));
    set(&mut q, 1167, 1152, u64::from(l.block[0]));
    set(&mut q, 1183, 1168, u64::from(l.block[1]));
    set(&mut q, 1199, 1184, u64::from(l.block[2]));
    set(&mut q, 1208, 1200, u64::from(l.regs));
    set(&mut q, 601, 584, u64::from(l.shared));
    set(&mut q, 416, 416, 1);
    set(&mut q, 1567, 1536, (l.cbank >> 6) & 0xffff_ffff);
    set(&mut q, 1586, 1568, l.cbank >> 38);
    set(&mut q, 1599, 1587, u64::from(l.cbank_size >> 4));
    set(&mut q, 1247, 1216, l.program & 0xffff_ffff);
    set(&mut q, 1272, 1248, l.program >> 32);
    set(&mut q, 567, 544, u64::from(l.local));
    if let Some((addr, payload)) = l.release {
        set(&mut q, 320, 320, 1);
        set(&mut q, 322, 321, 1); // ONE_WORD
        set(&mut q, 671, 640, addr & 0xffff_ffff);
        set(&mut q, 696, 672, addr >> 32);
        set(&mut q, 735, 704, u64::from(payload));
    }
    q
}

/// `.text.<name>` bytes of a fixture cubin, extracted here independently of the registry.
fn fixture_code(arch: &str, name: &str) -> Vec<u8> {
    use object::{Object, ObjectSection};
    let path = common::repo_path(format!("tests/fixtures/cubin/kernels.{arch}.cubin"));
    let data = std::fs::read(&path).expect("fixture cubin");
    let file = object::File::parse(&*data).expect("cubin ELF");
    let sec = file
        .section_by_name(&format!(".text.{name}"))
        .expect("kernel section");
    sec.data().expect("section data").to_vec()
}

/// cbank0 for a 1-D launch: dims at 0x0..0x14, stack top at 0x28, then `params` at `param_base`.
fn cbank0(block: [u32; 3], grid: [u32; 3], param_base: usize, params: &[u8]) -> Vec<u8> {
    let mut c = vec![0u8; (param_base + params.len() + 15) & !15];
    for (i, v) in block.iter().chain(grid.iter()).enumerate() {
        c[i * 4..i * 4 + 4].copy_from_slice(&v.to_le_bytes());
    }
    c[0x28..0x2c].copy_from_slice(&0x00ff_fdc0u32.to_le_bytes());
    c[param_base..param_base + params.len()].copy_from_slice(params);
    c
}

fn vector_add_params(a: u64, b: u64, c: u64, n: u32) -> Vec<u8> {
    let mut p = Vec::new();
    p.extend(a.to_le_bytes());
    p.extend(b.to_le_bytes());
    p.extend(c.to_le_bytes());
    p.extend(n.to_le_bytes());
    p
}

/// Compute init (§3.1) on subchannel 1 for `class`.
fn compute_init(class: u32) -> Vec<u32> {
    vec![
        inc(1, 0, 1),
        class,
        inc(1, 0x7b0, 2),
        0xfd,
        0, // local window 0xFD_0000_0000
        inc(1, 0x2a0, 2),
        0xfe,
        0, // shared window 0xFE_0000_0000
    ]
}

fn launch_words(qmd_va: u64) -> Vec<u32> {
    vec![inc(1, 0x2b4, 1), (qmd_va >> 8) as u32, immd(1, 0x2c0, 9)]
}

fn floats(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|f| f.to_le_bytes()).collect()
}

/// Set up vector_add over `n` elements with 64-thread blocks; returns (a, b, c, launch).
fn vector_add_setup(
    env: &Env,
    arch: &str,
    n: u32,
    c_ptr: Option<u64>,
) -> (Vec<f32>, Vec<f32>, u64, Launch) {
    let (a, b, c) = (DATA, DATA + 0x1_0000, c_ptr.unwrap_or(DATA + 0x2_0000));
    let av: Vec<f32> = (0..n).map(|i| i as f32 * 0.5).collect();
    let bv: Vec<f32> = (0..n).map(|i| 1000.0 - i as f32).collect();
    env.write(a, &floats(&av));
    env.write(b, &floats(&bv));
    if c_ptr.is_none() {
        env.write(c, &vec![0xff; n as usize * 4 + 64]);
    }
    let code = fixture_code(arch, "vector_add");
    let program = CODE + 0x100;
    env.write(program, &code);
    let block = [64, 1, 1];
    let grid = [n.div_ceil(64), 1, 1];
    let param_base = if arch == "sm_90" { 0x210 } else { 0x160 };
    let cb = cbank0(block, grid, param_base, &vector_add_params(a, b, c, n));
    env.write(CBANK, &cb);
    let l = Launch {
        grid,
        block,
        regs: 32,
        shared: 0x400,
        program,
        cbank: CBANK,
        cbank_size: cb.len() as u32,
        release: Some((SEM + 0x100, 0x77)),
        local: 0,
    };
    (av, bv, c, l)
}

fn qmd_bytes(q: &[u32]) -> Vec<u8> {
    q.iter().flat_map(|w| w.to_le_bytes()).collect()
}

// ---------------------------------------------------------------- every fixture kernel, both arches

const ARCHES: [(&str, u32); 2] = [("sm_87", AMPERE_COMPUTE_B), ("sm_90", HOPPER_COMPUTE_A)];

/// A compute channel for `arch`, initialised (§3.1).
fn compute_env(arch: &str, class: u32) -> Env {
    let mut env = Env::new(16, &[class]);
    env.submit(&compute_init(class));
    env.wait_idle();
    assert!(!arch.is_empty());
    env
}

/// Launch fixture kernel `name` with `params` (C ABI layout) and wait for it; returns the faults.
fn run_fixture(
    env: &mut Env,
    arch: &str,
    name: &str,
    grid: [u32; 3],
    block: [u32; 3],
    shared: u32,
    params: &[u8],
) -> Vec<tegragpu::emu::hwif::GpuFault> {
    run_fixture_local(env, arch, name, grid, block, shared, 0, params)
}

#[allow(clippy::too_many_arguments)]
fn run_fixture_local(
    env: &mut Env,
    arch: &str,
    name: &str,
    grid: [u32; 3],
    block: [u32; 3],
    shared: u32,
    local: u32,
    params: &[u8],
) -> Vec<tegragpu::emu::hwif::GpuFault> {
    let code = fixture_code(arch, name);
    env.write(CODE, &code);
    let param_base = if arch == "sm_90" { 0x210 } else { 0x160 };
    let cb = cbank0(block, grid, param_base, params);
    env.write(CBANK, &cb);
    let l = Launch {
        grid,
        block,
        regs: 64,
        shared,
        program: CODE,
        cbank: CBANK,
        cbank_size: cb.len() as u32,
        release: Some((SEM + 0x200, 0x5a5a)),
        local,
    };
    env.put_u32(SEM + 0x200, 0);
    let q = if arch == "sm_90" {
        qmd_v04(&l, 2)
    } else {
        qmd_v03(&l, 0)
    };
    env.write(QMD, &qmd_bytes(&q));
    env.submit(&launch_words(QMD));
    env.wait_idle();
    let faults = env.gpu.faults();
    if faults.is_empty() {
        assert_eq!(
            env.u32(SEM + 0x200),
            0x5a5a,
            "{arch} {name}: QMD release not written"
        );
    }
    faults
}

fn u32s(env: &Env, va: u64, n: usize) -> Vec<u32> {
    env.read(va, n * 4)
        .chunks(4)
        .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

fn f32s(env: &Env, va: u64, n: usize) -> Vec<f32> {
    u32s(env, va, n).into_iter().map(f32::from_bits).collect()
}

fn params(parts: &[&[u8]]) -> Vec<u8> {
    parts.concat()
}

#[test]
fn panicking_reference_kernel_is_a_fault_not_a_dead_gpu() {
    fn boom(_: &tegragpu::emu::kernels::LaunchCtx) -> Result<(), tegragpu::emu::hwif::MmuFault> {
        panic!("reference kernel bug")
    }
    let code: Vec<u8> = b"emu-gpu-test-panicking-kernel-code".to_vec();
    tegragpu::emu::kernels::register("boom", code.clone(), boom);
    let mut env = compute_env("sm_87", AMPERE_COMPUTE_B);
    env.write(CODE + 0x2000, &code);
    let cb = cbank0([1, 1, 1], [1, 1, 1], 0x160, &[]);
    env.write(CBANK, &cb);
    let l = Launch {
        grid: [1, 1, 1],
        block: [1, 1, 1],
        regs: 8,
        shared: 0x400,
        program: CODE + 0x2000,
        cbank: CBANK,
        cbank_size: cb.len() as u32,
        release: None,
        local: 0,
    };
    env.write(QMD, &qmd_bytes(&qmd_v03(&l, 0)));
    env.submit(&launch_words(QMD));
    env.wait_fault();
    let f = env.gpu.faults();
    assert_eq!(f[0].code, 13);
    assert!(f[0].what.contains("reference kernel bug"), "{}", f[0].what);
    // The GPU thread still polls doorbells.
    // SAFETY: doorbell word.
    let w = unsafe { &*(env.bell.as_ptr().add(0x90) as *const AtomicU32) };
    w.store(7, Ordering::Release);
    wait_for("the doorbell to be consumed", || {
        w.load(Ordering::Acquire) == 0xffff_ffff
    });
}

#[test]
fn garbage_gp_put_is_pbdma_error() {
    let env = Env::new(16, &[]);
    env.userd_word(0x8c).store(1000, Ordering::Release);
    env.ring();
    env.wait_fault();
    assert_eq!(env.notifier_status(), (32, 0xffff));
}
