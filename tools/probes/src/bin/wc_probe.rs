//! Write-combined store probe: what the CPU pays for the stores a launch and a submit make into
//! ring memory, without the doorbell. Video memory (BAR1 on desktop GPUs, the rings' placement)
//! and CPU-cached memory (for comparison) are written in the patterns the submit path uses:
//! fences alone, one dword, a launch's 832-byte QMD + constant-bank image by `memcpy` and by
//! ascending 8-byte stores, and the submit's two ordered publications (entries, store fence,
//! GP_PUT, full fence) with GP_PUT in the same memory or in cached memory.
//! Usage: wc_probe [iterations]   (default 20000; each pattern: median of 7 runs, ns per iteration)

use std::time::Instant;
use tegragpu::core::{Device, MemFlags};

const SLOTS: usize = 8192;
const STRIDE: usize = 2048;

#[inline(always)]
fn store_fence() {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: sfence has no preconditions.
    unsafe {
        std::arch::x86_64::_mm_sfence()
    };
    #[cfg(not(target_arch = "x86_64"))]
    std::sync::atomic::fence(std::sync::atomic::Ordering::Release);
}

#[inline(always)]
fn full_fence() {
    std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
}

struct Mem {
    base: *mut u8,
    /// A word outside the slots (GP_PUT in the same memory).
    put: *mut u32,
    /// A word in cached host memory (GP_PUT as if USERD were there).
    cached_put: *mut u32,
    image: [u8; 832],
}

impl Mem {
    fn slot(&self, i: usize) -> *mut u8 {
        // SAFETY: SLOTS * STRIDE bytes are mapped at base.
        unsafe { self.base.add((i % SLOTS) * STRIDE) }
    }
    /// An 8-byte GPFIFO-like entry in a 4 KiB ring below the slots' end.
    fn entry(&self, i: usize) -> *mut u64 {
        // SAFETY: inside the mapping (the last 4 KiB of the slots).
        unsafe { self.base.add(SLOTS * STRIDE - 4096 + (i % 512) * 8) as *mut u64 }
    }
}

type Pattern = fn(&Mem, usize);

fn p_sfence(_: &Mem, _: usize) {
    store_fence();
}
fn p_mfence(_: &Mem, _: usize) {
    full_fence();
}
fn p_dword(m: &Mem, i: usize) {
    // SAFETY: inside the mapping.
    unsafe { (m.slot(i) as *mut u32).write_volatile(i as u32) };
    store_fence();
}
fn p_image_memcpy(m: &Mem, i: usize) {
    let n = std::hint::black_box(m.image.len());
    // SAFETY: 832 bytes fit in a 2 KiB slot; the image is not in the mapping.
    unsafe { std::ptr::copy_nonoverlapping(m.image.as_ptr(), m.slot(i), n) };
    store_fence();
}
fn p_image_u64(m: &Mem, i: usize) {
    let d = m.slot(i) as *mut u64;
    for k in 0..m.image.len() / 8 {
        // SAFETY: inside the slot; the image is read unaligned.
        unsafe {
            let v = (m.image.as_ptr().add(k * 8) as *const u64).read_unaligned();
            d.add(k).write_volatile(v);
        }
    }
    store_fence();
}
/// A launch into a fresh QMD slot as the library writes it: the constant-bank prefix (528 bytes
/// at +512), the parameters (16 bytes after it) and the QMD (256 bytes at +0), by `copy`.
fn launch_image(m: &Mem, i: usize, copy: unsafe fn(*mut u8, *const u8, usize)) {
    let s = m.slot(i);
    let (a, b, c) = std::hint::black_box((528usize, 16usize, 256usize));
    // SAFETY: all three ranges lie inside the 2 KiB slot; the image is not in the mapping.
    unsafe {
        copy(s.add(512), m.image.as_ptr(), a);
        copy(s.add(512 + a), m.image.as_ptr().add(a), b);
        copy(s, m.image.as_ptr().add(544), c);
    }
    store_fence();
}
unsafe fn libc_copy(d: *mut u8, s: *const u8, n: usize) {
    // SAFETY: the caller's ranges.
    unsafe { std::ptr::copy_nonoverlapping(s, d, n) }
}
unsafe fn u64_copy(d: *mut u8, s: *const u8, n: usize) {
    let mut k = 0;
    while k + 8 <= n {
        // SAFETY: inside the caller's ranges; destinations here are 8-byte aligned.
        unsafe { (d.add(k) as *mut u64).write_volatile((s.add(k) as *const u64).read_unaligned()) };
        k += 8;
    }
}
#[cfg(target_arch = "x86_64")]
unsafe fn sse_copy(d: *mut u8, s: *const u8, n: usize) {
    use std::arch::x86_64::{__m128i, _mm_loadu_si128};
    let mut k = 0;
    while k + 16 <= n {
        // SAFETY: inside the caller's ranges; destinations here are 16-byte aligned.
        unsafe {
            (d.add(k) as *mut __m128i).write_volatile(_mm_loadu_si128(s.add(k) as *const __m128i))
        };
        k += 16;
    }
}
#[cfg(not(target_arch = "x86_64"))]
unsafe fn sse_copy(d: *mut u8, s: *const u8, n: usize) {
    // SAFETY: the caller's ranges.
    unsafe { u64_copy(d, s, n) }
}
fn p_launch_sse(m: &Mem, i: usize) {
    launch_image(m, i, sse_copy);
}
fn p_launch_memcpy(m: &Mem, i: usize) {
    launch_image(m, i, libc_copy);
}
fn p_launch_u64(m: &Mem, i: usize) {
    launch_image(m, i, u64_copy);
}
/// `n` pushbuffer words of `W` bytes each at the start of slot `i * 7`.
fn pushbuffer<W: Copy + From<u8>>(m: &Mem, i: usize, n: usize) {
    let pb = m.slot(i * 7) as *mut W;
    for k in 0..n {
        // SAFETY: n * size_of::<W>() <= 64 bytes, inside the slot.
        unsafe { pb.add(k).write_volatile(W::from(k as u8)) };
    }
}
/// Publish like a submit: the GPFIFO entry, a store fence, GP_PUT at `put`, a full fence.
fn publish(m: &Mem, i: usize, put: *mut u32) {
    // SAFETY: inside the mapping.
    unsafe { m.entry(i).write_volatile(i as u64) };
    store_fence();
    // SAFETY: `put` is one of Mem's two GP_PUT words.
    unsafe { put.write_volatile(i as u32) };
    full_fence();
}
fn p_submit(m: &Mem, i: usize) {
    pushbuffer::<u32>(m, i, 6);
    publish(m, i, m.put);
}
fn p_submit_cached_put(m: &Mem, i: usize) {
    pushbuffer::<u32>(m, i, 6);
    publish(m, i, m.cached_put);
}
/// The submit with its 24 pushbuffer bytes stored as three qwords.
fn p_submit_qwords(m: &Mem, i: usize) {
    pushbuffer::<u64>(m, i, 3);
    publish(m, i, m.put);
}
/// The submit with the pushbuffer line completed to 64 bytes (padding the GPU never fetches).
fn p_submit_full_line(m: &Mem, i: usize) {
    pushbuffer::<u64>(m, i, 8);
    publish(m, i, m.put);
}
/// Pushbuffer words appended to one running line sequence, as the command ring fills.
fn p_submit_running(m: &Mem, i: usize) {
    // SAFETY: inside the mapping (the first 1 MiB), 40 bytes per submit.
    let pb = unsafe { m.base.add((i * 40) % (1 << 20)) } as *mut u32;
    for k in 0..10 {
        // SAFETY: inside the mapping.
        unsafe { pb.add(k).write_volatile(k as u32) };
    }
    publish(m, i, m.put);
}
fn p_replay(m: &Mem, i: usize) {
    publish(m, i, m.put);
}
fn p_replay_cached_put(m: &Mem, i: usize) {
    publish(m, i, m.cached_put);
}

const PATTERNS: &[(&str, Pattern)] = &[
    ("store fence alone", p_sfence),
    ("full fence alone", p_mfence),
    ("1 dword + store fence", p_dword),
    ("832 B image, memcpy + store fence", p_image_memcpy),
    ("832 B image, 8-byte stores + store fence", p_image_u64),
    ("launch image 528 + 16 + 256 B, memcpy", p_launch_memcpy),
    ("launch image 528 + 16 + 256 B, 8-byte stores", p_launch_u64),
    (
        "launch image 528 + 16 + 256 B, 16-byte stores",
        p_launch_sse,
    ),
    ("submit: 24 B + entry, sfence, GP_PUT, mfence", p_submit),
    ("  the same, GP_PUT in cached memory", p_submit_cached_put),
    ("  24 B as 3 qword stores", p_submit_qwords),
    (
        "  the pushbuffer line completed to 64 B",
        p_submit_full_line,
    ),
    (
        "  40 B appended to a running command ring",
        p_submit_running,
    ),
    ("replay: entry, sfence, GP_PUT, mfence", p_replay),
    ("  the same, GP_PUT in cached memory", p_replay_cached_put),
];

fn run(label: &str, m: &Mem, iters: usize) {
    println!("{label}: ns per iteration, median of 7 runs of {iters}");
    for (name, f) in PATTERNS {
        let mut v = Vec::with_capacity(7);
        for _ in 0..7 {
            for i in 0..1000 {
                f(m, i);
            }
            full_fence();
            let t = Instant::now();
            for i in 0..iters {
                f(m, i);
            }
            full_fence();
            v.push(t.elapsed().as_nanos() as f64 / iters as f64);
        }
        v.sort_by(f64::total_cmp);
        println!("  {name:<48} {:>8.1}", v[3]);
    }
}

fn main() -> tegragpu::Result<()> {
    let iters: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(20000);
    let dev = Device::open(None)?;
    println!("device: {}", dev.info().name);
    let mut cached_put = Box::new(0u32);
    let mut image = [0u8; 832];
    for (k, b) in image.iter_mut().enumerate() {
        *b = (k * 7) as u8;
    }
    let bytes = (SLOTS * STRIDE + 4096) as u64;
    for (label, flags) in [
        ("video memory (the rings' placement)", MemFlags::default()),
        (
            "CPU-cached host memory",
            MemFlags {
                cpu_cached: true,
                ..Default::default()
            },
        ),
    ] {
        let buf = dev.alloc(bytes, flags)?;
        let base = buf.map_cpu()?;
        let m = Mem {
            base,
            // SAFETY: the word after the slots, inside the allocation.
            put: unsafe { base.add(SLOTS * STRIDE) as *mut u32 },
            cached_put: &mut *cached_put,
            image,
        };
        run(label, &m, iters);
    }
    Ok(())
}
