//! tegragpu-rmprobe: bring-up probe for the RM backend on a real NVIDIA GPU (H100/H200).
//!
//! Opens the device, prints DeviceInfo, allocates/writes/reads/frees buffers, creates a compute
//! and a copy channel, submits hand-assembled pushbuffers (host semaphore release, compute
//! report semaphore, copy-engine semaphore, 64 MiB copy-engine copies), checks the results with
//! 2 s deadlines, tears down, and repeats. `--fault` adds a round that makes a channel fault
//! (semaphore release to an unmapped VA) and checks that `Channel::error()` reports it.
//!
//! Usage: `tegragpu-rmprobe [--fault]` (see `USAGE`; parsed with lexopt).

use std::sync::atomic::{fence, Ordering};
use std::time::{Duration, Instant};
use tegragpu::backend::rm::RmBackend;
use tegragpu::backend::{Allocation, Backend, Channel, ChannelRaw, Engine, MemFlags};
use tegragpu::os::{mapping_count, open_fd_count};
use tegragpu::Result;

const DEADLINE: Duration = Duration::from_secs(2);
const VIDMEM: MemFlags = MemFlags {
    cpu_cached: false,
    write_combined: true,
    zeroed: false,
};
const HOST: MemFlags = MemFlags {
    cpu_cached: true,
    write_combined: false,
    zeroed: true,
};

fn hdr(subch: u32, method: u32, count: u32) -> u32 {
    (1 << 29) | (count << 16) | (subch << 13) | (method >> 2)
}

fn store_fence() {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: sfence has no preconditions.
    unsafe {
        core::arch::x86_64::_mm_sfence()
    };
    #[cfg(not(target_arch = "x86_64"))]
    fence(Ordering::SeqCst);
}

/// A channel plus a bump pointer into a pushbuffer allocation.
struct Sub {
    raw: ChannelRaw,
    put: u32,
    pb_cpu: *mut u32,
    pb_va: u64,
    /// Region of the pushbuffer this channel uses: [pb_base, pb_base + pb_len), cursor pb_pos.
    pb_base: usize,
    pb_len: usize,
    pb_pos: usize,
}

impl Sub {
    fn new(ch: &dyn Channel, pb: &Allocation, off: usize, len: usize) -> Sub {
        Sub {
            raw: ch.raw(),
            put: 0,
            pb_cpu: pb.cpu.cast(),
            pb_va: pb.gpu_va,
            pb_base: off,
            pb_len: len,
            pb_pos: 0,
        }
    }

    /// Copy `words` into the pushbuffer and submit them as one GPFIFO entry.
    fn submit(&mut self, words: &[u32]) {
        let bytes = words.len() * 4;
        assert!(bytes <= self.pb_len, "pushbuffer region too small");
        if self.pb_pos + bytes > self.pb_len {
            self.pb_pos = 0; // every earlier submission has completed (the probe waits)
        }
        let off = self.pb_base + self.pb_pos;
        self.pb_pos += (bytes + 255) & !255;
        // SAFETY: pb_cpu + off .. + bytes lies in the pushbuffer allocation (the caller sizes it).
        unsafe {
            let dst = self.pb_cpu.add(off / 4);
            for (i, w) in words.iter().enumerate() {
                std::ptr::write_volatile(dst.add(i), *w);
            }
            store_fence();
            let va = self.pb_va + off as u64;
            let entry = va | ((words.len() as u64) << 42);
            std::ptr::write_volatile(self.raw.gpfifo.add(self.put as usize), entry);
            store_fence();
            self.put = (self.put + 1) % self.raw.entries;
            std::ptr::write_volatile(self.raw.userd.add(0x8c / 4), self.put);
            fence(Ordering::SeqCst);
            std::ptr::write_volatile(self.raw.doorbell, self.raw.token);
        }
    }

    fn gp_get(&self) -> u32 {
        // SAFETY: USERD is mapped for the channel's lifetime.
        unsafe { std::ptr::read_volatile(self.raw.userd.add(0x88 / 4)) }
    }
}

fn host_release(va: u64, payload: u64) -> Vec<u32> {
    vec![
        hdr(0, 0x5c, 5),
        va as u32,
        (va >> 32) as u32,
        payload as u32,
        (payload >> 32) as u32,
        0x0310_0001, // RELEASE | RELEASE_WFI | 64-bit payload | timestamp
    ]
}

/// Poll a 64-bit value until it equals `want` or the deadline passes.
fn poll_u64(p: *const u64, want: u64, ch: &dyn Channel) -> std::result::Result<Duration, String> {
    let t0 = Instant::now();
    loop {
        // SAFETY: p points into a live allocation.
        let v = unsafe { std::ptr::read_volatile(p) };
        if v == want {
            return Ok(t0.elapsed());
        }
        if let Some(e) = ch.error() {
            return Err(format!("channel error while waiting: {e:?} (value {v:#x})"));
        }
        if t0.elapsed() > DEADLINE {
            return Err(format!(
                "timeout after {DEADLINE:?}: value {v:#x}, want {want:#x}"
            ));
        }
        std::hint::spin_loop();
    }
}

fn fill(a: &Allocation, seed: u64) {
    let n = (a.size / 8) as usize;
    let p = a.cpu.cast::<u64>();
    for i in 0..n {
        // SAFETY: i < size/8.
        unsafe {
            std::ptr::write_volatile(
                p.add(i),
                seed ^ (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15),
            )
        };
    }
    store_fence();
}

/// Check every `stride`-th u64 (stride 1 = all) against the fill pattern.
fn check(a: &Allocation, seed: u64, stride: usize) -> std::result::Result<usize, String> {
    let n = (a.size / 8) as usize;
    let p = a.cpu.cast::<u64>();
    let mut checked = 0;
    let mut i = 0;
    while i < n {
        // SAFETY: i < size/8.
        let v = unsafe { std::ptr::read_volatile(p.add(i)) };
        let want = seed ^ (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        if v != want {
            return Err(format!("mismatch at u64 {i}: {v:#x} != {want:#x}"));
        }
        checked += 1;
        i += stride;
    }
    // Always check the last word too.
    // SAFETY: n ≥ 1.
    let v = unsafe { std::ptr::read_volatile(p.add(n - 1)) };
    if v != seed ^ ((n - 1) as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) {
        return Err(format!("mismatch at last u64 {}", n - 1));
    }
    Ok(checked)
}

fn mib(b: u64) -> f64 {
    b as f64 / (1024.0 * 1024.0)
}

fn memory_tests(dev: &RmBackend, round: u32) -> Result<()> {
    for (size, flags, label) in [
        (4096u64, VIDMEM, "vidmem"),
        (64 << 20, VIDMEM, "vidmem"),
        (1 << 30, VIDMEM, "vidmem"),
        (4096, HOST, "host"),
        (64 << 20, HOST, "host"),
    ] {
        let t0 = Instant::now();
        let a = dev.alloc(size, flags)?;
        let t_alloc = t0.elapsed();
        let seed = 0xA5A5_0000_0000_0000 | (round as u64) << 32 | size;
        let t1 = Instant::now();
        fill(&a, seed);
        let t_fill = t1.elapsed();
        let stride = if label == "vidmem" && size > (1 << 20) {
            512
        } else {
            1
        };
        let t2 = Instant::now();
        let r = check(&a, seed, stride);
        let t_check = t2.elapsed();
        println!(
            "  alloc {label:6} {:>8.3} MiB at {:#x}: alloc {:?}, CPU write {:.0} MiB/s, read-check {} ({:?}, stride {stride})",
            mib(a.size),
            a.gpu_va,
            t_alloc,
            mib(a.size) / t_fill.as_secs_f64(),
            match &r {
                Ok(n) => format!("OK {n} words"),
                Err(e) => format!("FAILED {e}"),
            },
            t_check
        );
        let t3 = Instant::now();
        dev.free(&a)?;
        println!("    free {:?}", t3.elapsed());
    }
    // 16 GiB of video memory (2 MiB pages, BAR1-mapped): touch the first and last page.
    let t = Instant::now();
    match dev.alloc(16 << 30, VIDMEM) {
        Ok(a) => {
            let t_alloc = t.elapsed();
            let p = a.cpu.cast::<u64>();
            let last = (a.size / 8 - 1) as usize;
            // SAFETY: within the allocation.
            let ok = unsafe {
                std::ptr::write_volatile(p, 0x1234);
                std::ptr::write_volatile(p.add(last), 0x5678);
                store_fence();
                std::ptr::read_volatile(p) == 0x1234
                    && std::ptr::read_volatile(p.add(last)) == 0x5678
            };
            println!(
                "  alloc vidmem 16 GiB at {:#x}: {t_alloc:?}, first/last word {}",
                a.gpu_va,
                if ok { "OK" } else { "FAILED" }
            );
            dev.free(&a)?;
        }
        Err(e) => println!("  alloc vidmem 16 GiB FAILED: {e:?}"),
    }
    // A forged allocation must be refused, not freed.
    let bogus = Allocation {
        gpu_va: 0x10_0000_0000,
        cpu: std::ptr::null_mut(),
        size: 4096,
        id: 999_999,
    };
    println!(
        "  free(forged allocation) -> {:?}",
        dev.free(&bogus).map_err(|e| e.status)
    );
    // BAR1 read bandwidth on 4 MiB.
    let a = dev.alloc(4 << 20, VIDMEM)?;
    fill(&a, 7);
    let t = Instant::now();
    let r = check(&a, 7, 1);
    println!(
        "  BAR1 full read-check of 4 MiB: {:?}, {:.1} MiB/s",
        r.map(|_| ()),
        4.0 / t.elapsed().as_secs_f64()
    );
    dev.free(&a)?;
    Ok(())
}

fn channel_tests(dev: &RmBackend, round: u32) -> Result<()> {
    let pb = dev.alloc(1 << 20, VIDMEM)?;
    let sem = dev.alloc(4096, HOST)?;
    let semv = dev.alloc(
        4096,
        MemFlags {
            zeroed: true,
            ..VIDMEM
        },
    )?;
    let s64 = sem.cpu.cast::<u64>();
    let info = dev.info();

    let t = Instant::now();
    let comp = dev.create_channel(Engine::Compute, 1024, true)?;
    let r = comp.raw();
    println!(
        "  compute channel: {:?}; class {:#x} subch {} token {:#x} entries {} gpfifo {:p} userd {:p} doorbell {:p}",
        t.elapsed(),
        r.class,
        r.subchannel,
        r.token,
        r.entries,
        r.gpfifo,
        r.userd,
        r.doorbell
    );
    let mut cs = Sub::new(&*comp, &pb, 0, 256 << 10);

    // 1. SET_OBJECT + host semaphore release with timestamp.
    let p1 = 0x1111_0000_0000_0001 + round as u64;
    let mut w = vec![hdr(1, 0, 1), info.compute_class];
    w.extend(host_release(sem.gpu_va, p1));
    cs.submit(&w);
    match poll_u64(s64, p1, &*comp) {
        // SAFETY: sem is 4 KiB.
        Ok(d) => println!(
            "  compute host-semaphore release: OK in {d:?}, GPU timestamp {:#x} ns",
            unsafe { *s64.add(1) }
        ),
        Err(e) => println!(
            "  compute host-semaphore release: FAILED {e} (GP_GET {})",
            cs.gp_get()
        ),
    }

    // 2. Compute-engine report semaphore into video memory, then a host release to host memory.
    let p2: u32 = 0x2222_0000 + round;
    let p3 = 0x3333_0000_0000_0003 + round as u64;
    let mut w = vec![
        hdr(1, 0x1b00, 4),
        (semv.gpu_va >> 32) as u32,
        semv.gpu_va as u32,
        p2,
        0x1000_0000,
    ];
    w.extend(host_release(sem.gpu_va + 16, p3));
    cs.submit(&w);
    // SAFETY: sem is 4 KiB.
    match poll_u64(unsafe { s64.add(2) }, p3, &*comp) {
        Ok(d) => {
            // SAFETY: semv is 4 KiB, CPU-mapped through BAR1.
            let v = unsafe { std::ptr::read_volatile(semv.cpu.cast::<u32>()) };
            println!(
                "  compute report-semaphore to vidmem + host release: {} in {d:?} (vidmem word {v:#x})",
                if v == p2 { "OK" } else { "FAILED (vidmem word wrong)" }
            );
        }
        Err(e) => println!("  compute report semaphore: FAILED {e}"),
    }

    // 3. Copy channel (second channel in the running TSG).
    let t = Instant::now();
    let copy = dev.create_channel(Engine::Copy, 1024, true)?;
    let r = copy.raw();
    println!(
        "  copy channel: {:?}; class {:#x} subch {} token {:#x}",
        t.elapsed(),
        r.class,
        r.subchannel,
        r.token
    );
    let mut ks = Sub::new(&*copy, &pb, 512 << 10, 256 << 10);
    let p4: u32 = 0x4444_0000 + round;
    let sem4 = sem.gpu_va + 32;
    ks.submit(&[
        hdr(4, 0, 1),
        info.copy_class,
        hdr(4, 0x240, 3),
        (sem4 >> 32) as u32,
        sem4 as u32,
        p4,
        hdr(4, 0x300, 1),
        0x14, // FLUSH | SEMAPHORE four-word (payload + timestamp)
    ]);
    // SAFETY: sem is 4 KiB; the four-word semaphore writes payload (32-bit) at +0, timestamp +8.
    match poll_u64(unsafe { s64.add(4) }, p4 as u64, &*copy) {
        Ok(d) => println!(
            "  copy-engine semaphore: OK in {d:?}, timestamp {:#x}",
            unsafe { *s64.add(5) }
        ),
        Err(e) => println!(
            "  copy-engine semaphore: FAILED {e} (GP_GET {})",
            ks.gp_get()
        ),
    }

    // 4. 64 MiB copies: vidmem → host (full check), vidmem → vidmem (sampled check).
    let n: u64 = 64 << 20;
    let src = dev.alloc(n, VIDMEM)?;
    let dsth = dev.alloc(n, HOST)?;
    let dstv = dev.alloc(n, VIDMEM)?;
    fill(&src, 0xC0FFEE ^ round as u64);
    for (i, (dst, label, stride)) in [
        (&dsth, "vidmem->host", 1usize),
        (&dstv, "vidmem->vidmem", 512),
    ]
    .into_iter()
    .enumerate()
    {
        let pay: u32 = 0x5555_0000 + (i as u32) * 0x100 + round;
        let semc = sem.gpu_va + 64 + 16 * i as u64;
        let t = Instant::now();
        ks.submit(&[
            hdr(4, 0x240, 3),
            (semc >> 32) as u32,
            semc as u32,
            pay,
            hdr(4, 0x400, 4),
            (src.gpu_va >> 32) as u32,
            src.gpu_va as u32,
            (dst.gpu_va >> 32) as u32,
            dst.gpu_va as u32,
            hdr(4, 0x418, 1),
            n as u32,
            hdr(4, 0x300, 1),
            0x196, // NON_PIPELINED | FLUSH | four-word semaphore | SRC/DST pitch
        ]);
        // SAFETY: within sem.
        match poll_u64(unsafe { s64.add(8 + 2 * i) }, pay as u64, &*copy) {
            Ok(d) => {
                let gbs = n as f64 / d.as_secs_f64() / 1e9;
                let t2 = Instant::now();
                let r = check(dst, 0xC0FFEE ^ round as u64, stride);
                println!(
                    "  CE copy 64 MiB {label}: done in {d:?} (~{gbs:.1} GB/s incl. submit), verify {} ({:?}); wall {:?}",
                    match r {
                        Ok(k) => format!("OK {k} words"),
                        Err(e) => format!("FAILED {e}"),
                    },
                    t2.elapsed(),
                    t.elapsed()
                );
            }
            Err(e) => println!(
                "  CE copy 64 MiB {label}: FAILED {e} (GP_GET {})",
                ks.gp_get()
            ),
        }
    }

    // 5. Compute channel still works after the copy channel joined the TSG.
    let p5 = 0x6666_0000_0000_0006 + round as u64;
    cs.submit(&host_release(sem.gpu_va + 128, p5));
    // SAFETY: within sem.
    match poll_u64(unsafe { s64.add(16) }, p5, &*comp) {
        Ok(d) => println!("  compute release after copy channel creation: OK in {d:?}"),
        Err(e) => println!("  compute release after copy channel creation: FAILED {e}"),
    }
    // 6. Many submissions (ring use) on both channels.
    let t = Instant::now();
    let mut ok = true;
    for k in 0..200u64 {
        let v = 0x7777_0000_0000_0000 + k;
        cs.submit(&host_release(sem.gpu_va + 160, v));
        // SAFETY: within sem.
        if let Err(e) = poll_u64(unsafe { s64.add(20) }, v, &*comp) {
            println!("  round-trip {k} FAILED {e}");
            ok = false;
            break;
        }
    }
    if ok {
        println!(
            "  200 compute submit+wait round trips: {:?} per round trip",
            t.elapsed() / 200
        );
    }
    // 7. A third channel with a 16-entry ring: 100 round trips wrap it six times.
    {
        let small = dev.create_channel(Engine::Compute, 16, true)?;
        let mut ss = Sub::new(&*small, &pb, 768 << 10, 128 << 10);
        let t = Instant::now();
        let mut res = Ok(Duration::ZERO);
        for k in 0..100u64 {
            let v = 0x8888_0000_0000_0000 + k;
            let mut w = if k == 0 {
                vec![hdr(1, 0, 1), info.compute_class]
            } else {
                Vec::new()
            };
            w.extend(host_release(sem.gpu_va + 192, v));
            ss.submit(&w);
            // SAFETY: within sem.
            res = poll_u64(unsafe { s64.add(24) }, v, &*small);
            if res.is_err() {
                break;
            }
        }
        println!(
            "  third channel (16 entries, token {:#x}), 100 round trips with ring wrap: {} in {:?}; GP_GET {} put {}",
            small.raw().token,
            match &res {
                Ok(_) => "OK".to_string(),
                Err(e) => format!("FAILED {e}"),
            },
            t.elapsed(),
            ss.gp_get(),
            ss.put
        );
    }
    println!(
        "  channel errors: compute {:?}, copy {:?}",
        comp.error(),
        copy.error()
    );
    // SAFETY: usermode region is mapped while dev lives; PTIMER at +0x80/+0x84.
    let (t0, t1) = unsafe {
        (
            std::ptr::read_volatile(dev.usermode_ptr().add(0x20)),
            std::ptr::read_volatile(dev.usermode_ptr().add(0x21)),
        )
    };
    println!("  usermode PTIMER: {:#x}", (t1 as u64) << 32 | t0 as u64);

    drop(comp);
    drop(copy);
    for a in [&pb, &sem, &semv, &src, &dsth, &dstv] {
        dev.free(a)?;
    }
    Ok(())
}

/// After every channel is gone: a copy channel first in a fresh TSG, then compute, twice.
fn channel_recreate_tests(dev: &RmBackend) -> Result<()> {
    let pb = dev.alloc(64 << 10, VIDMEM)?;
    let sem = dev.alloc(4096, HOST)?;
    let s64 = sem.cpu.cast::<u64>();
    for (k, engine) in [Engine::Copy, Engine::Compute, Engine::Copy, Engine::Compute]
        .into_iter()
        .enumerate()
    {
        let t = Instant::now();
        let ch = match dev.create_channel(engine, 64, true) {
            Ok(c) => c,
            Err(e) => {
                println!("  recreate #{k} {engine:?}: create FAILED {e:?}");
                continue;
            }
        };
        let mut sub = Sub::new(&*ch, &pb, 0, 32 << 10);
        let v = 0x9999_0000_0000_0000 + k as u64;
        let w = match engine {
            Engine::Copy => {
                let mut w = vec![hdr(4, 0, 1), dev.info().copy_class];
                w.extend(host_release(sem.gpu_va, v));
                w
            }
            Engine::Compute => {
                let mut w = vec![hdr(1, 0, 1), dev.info().compute_class];
                w.extend(host_release(sem.gpu_va, v));
                w
            }
        };
        sub.submit(&w);
        println!(
            "  recreate #{k} {engine:?} (alone in the TSG): {:?}, created in {:?}",
            poll_u64(s64, v, &*ch),
            t.elapsed()
        );
    }
    dev.free(&pb)?;
    dev.free(&sem)?;
    Ok(())
}

fn fault_round() -> Result<()> {
    println!("== fault round: host semaphore release to an unmapped VA");
    let dev = RmBackend::open_linux(0)?;
    let pb = dev.alloc(64 << 10, VIDMEM)?;
    let comp = dev.create_channel(Engine::Compute, 64, true)?;
    let mut cs = Sub::new(&*comp, &pb, 0, 32 << 10);
    let bad = 0x1F_F000_0000u64;
    let mut w = vec![hdr(1, 0, 1), dev.info().compute_class];
    w.extend(host_release(bad, 1));
    cs.submit(&w);
    let t0 = Instant::now();
    let mut seen = None;
    while t0.elapsed() < Duration::from_secs(3) {
        if let Some(e) = comp.error() {
            seen = Some(e);
            break;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    match seen {
        Some(e) => println!("  channel error reported after {:?}: {e:?}", t0.elapsed()),
        None => println!("  NO channel error within 3 s (GP_GET {})", cs.gp_get()),
    }
    println!(
        "  error() again (cached): {:?}",
        comp.error().map(|e| e.address)
    );
    println!("  fault_log: {:?}", dev.fault_log());
    drop(comp);
    dev.free(&pb)?;
    drop(dev);
    println!("  after fault: reopening and running one semaphore release");
    let dev = RmBackend::open_linux(0)?;
    let pb = dev.alloc(64 << 10, VIDMEM)?;
    let sem = dev.alloc(4096, HOST)?;
    let comp = dev.create_channel(Engine::Compute, 64, true)?;
    let mut cs = Sub::new(&*comp, &pb, 0, 32 << 10);
    let mut w = vec![hdr(1, 0, 1), dev.info().compute_class];
    w.extend(host_release(sem.gpu_va, 42));
    cs.submit(&w);
    println!("  {:?}", poll_u64(sem.cpu.cast(), 42, &*comp));
    drop(comp);
    dev.free(&pb)?;
    dev.free(&sem)?;
    Ok(())
}

fn round(r: u32) -> Result<()> {
    let t = Instant::now();
    let dev = RmBackend::open_linux(0)?;
    println!("== round {r}: open in {:?}", t.elapsed());
    println!("  {:#?}", dev.info());
    let d = dev.details();
    println!(
        "  driver {} (branch {}), gpu_id {:#x}, minor {}, PCI {:04x}:{:02x}:{:02x} device {:#06x}",
        d.version.text,
        d.branch.major(),
        d.gpu_id,
        d.minor,
        d.pci_domain,
        d.pci_bus,
        d.pci_slot,
        d.pci_device_id
    );
    println!(
        "  uuid {}, cores {} sp/sm {} enabled TPCs {}, FB ram {} MiB heap {} MiB free {} MiB, BAR1 {} MiB avail {} MiB, arch impl {:#x}",
        d.uuid.iter().map(|b| format!("{b:02x}")).collect::<String>(),
        d.gpu_core_count,
        d.sp_per_sm,
        d.tpc_count,
        d.fb_ram_kib / 1024,
        d.fb_heap_kib / 1024,
        d.fb_heap_free_kib / 1024,
        d.bar1_kib / 1024,
        d.bar1_avail_kib / 1024,
        d.arch_implementation
    );
    println!(
        "  handles: client {:#x} device {:#x} subdevice {:#x} vaspace {:#x} tsg {:#x} ctxshare {:#x} (subctx {}); {} classes: {}",
        d.client,
        d.device,
        d.subdevice,
        d.vaspace,
        d.tsg,
        d.ctxshare,
        d.subctx_id,
        d.class_list.len(),
        d.class_list.iter().map(|c| format!("{c:x}")).collect::<Vec<_>>().join(" ")
    );
    if let Err(e) = memory_tests(&dev, r) {
        println!("  memory tests FAILED: {e:?}");
    }
    if let Err(e) = channel_tests(&dev, r) {
        println!("  channel tests FAILED: {e:?}");
    }
    if let Err(e) = channel_recreate_tests(&dev) {
        println!("  channel re-creation tests FAILED: {e:?}");
    }
    println!(
        "  outstanding allocations before close: {}",
        dev.allocation_count()
    );
    let t = Instant::now();
    drop(dev);
    println!("  close in {:?}", t.elapsed());
    Ok(())
}

const USAGE: &str = "\
usage: tegragpu-rmprobe [--fault]

Bring-up probe of the RM backend on a desktop NVIDIA GPU: buffers, a compute and a copy
channel, hand-made pushbuffers, teardown, twice.
  --fault        also make a channel fault and check that it is reported
  --help, -h     this text
  --version, -V  the library version";

/// The library's version, `MAJOR.MINOR.PATCH` (what `--version` prints).
fn library_version() -> String {
    use tegragpu::capi::{TG_VERSION_MAJOR, TG_VERSION_MINOR, TG_VERSION_PATCH};
    format!("{TG_VERSION_MAJOR}.{TG_VERSION_MINOR}.{TG_VERSION_PATCH}")
}

/// `arg` as it was written, for messages.
fn arg_text(arg: &lexopt::Arg<'_>) -> String {
    match arg {
        lexopt::Arg::Short(c) => format!("-{c}"),
        lexopt::Arg::Long(l) => format!("--{l}"),
        lexopt::Arg::Value(v) => v.to_string_lossy().into_owned(),
    }
}

/// Parses the command line: whether to run the fault round. `--help` and `--version` print and
/// exit 0; anything else exits 2.
fn parse_args() -> bool {
    use lexopt::prelude::*;
    let unexpected = |what: String| -> ! {
        eprintln!("tegragpu-rmprobe: unexpected argument \"{what}\" (see --help)");
        std::process::exit(2)
    };
    let mut fault = false;
    let mut parser = lexopt::Parser::from_env();
    loop {
        match parser.next() {
            Ok(None) => return fault,
            Ok(Some(Long("fault"))) => fault = true,
            Ok(Some(Long("help") | Short('h'))) => {
                println!("{USAGE}");
                std::process::exit(0)
            }
            Ok(Some(Long("version") | Short('V'))) => {
                println!("tegragpu-rmprobe {}", library_version());
                std::process::exit(0)
            }
            Ok(Some(other)) => unexpected(arg_text(&other)),
            Err(lexopt::Error::UnexpectedValue { option, value }) => {
                unexpected(format!("{option}={}", value.to_string_lossy()))
            }
            Err(e) => unexpected(e.to_string()),
        }
    }
}

fn main() {
    let fault = parse_args();
    let (fd0, map0) = (open_fd_count(), mapping_count());
    println!("start: {fd0} fds, {map0} mappings");
    for r in 0..2 {
        if let Err(e) = round(r) {
            println!("round {r} FAILED: {e:?}");
        }
        println!(
            "after round {r}: {} fds (start {fd0}), {} mappings (start {map0})",
            open_fd_count(),
            mapping_count()
        );
    }
    if fault {
        if let Err(e) = fault_round() {
            println!("fault round FAILED: {e:?}");
        }
        println!(
            "after fault round: {} fds (start {fd0}), {} mappings (start {map0})",
            open_fd_count(),
            mapping_count()
        );
    }
}
