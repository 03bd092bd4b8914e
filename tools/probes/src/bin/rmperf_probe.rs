//! Copy-engine and allocation-cost probe for the RM backend (H200 measurements of the rmperf
//! work). `rmperf_probe ce` lists the logical copy engines and measures D2D copy bandwidth on
//! the GR copy engine, on each async LCE and split over several LCEs; `rmperf_probe alloc`
//! times alloc + free of 256 MiB with lazy and with eager CPU mapping.

use std::time::Instant;
use tegragpu::backend::rm::{RmBackend, COPY_ENGINE_ENV};
use tegragpu::core::{Buffer, Device, MemFlags, Queue, QueueKind, Signal};

const TO: u64 = 20_000_000_000;

fn p50(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

/// Copy `size` bytes b <- a split evenly over `qs`; best GB/s over `iters` (GPU timestamps).
fn copy_bw(
    qs: &mut [Queue],
    sigs: &[(Signal, Signal)],
    a: &Buffer,
    b: &Buffer,
    size: u64,
    iters: usize,
    v: &mut u64,
) -> tegragpu::Result<f64> {
    let k = qs.len() as u64;
    let part = (size / k) & !0xFFF;
    let mut best = f64::MAX;
    for _ in 0..iters {
        *v += 1;
        for (i, q) in qs.iter_mut().enumerate() {
            let off = i as u64 * part;
            let n = if i as u64 == k - 1 { size - off } else { part };
            q.signal(&sigs[i].0, *v)?;
            q.copy(b, off, a, off, n)?;
            q.signal(&sigs[i].1, *v)?;
        }
        for q in qs.iter_mut() {
            q.submit()?;
        }
        for s in sigs {
            s.1.wait(*v, TO)?;
        }
        let t0 = sigs.iter().map(|s| s.0.timestamp()).min().unwrap_or(0);
        let t1 = sigs.iter().map(|s| s.1.timestamp()).max().unwrap_or(0);
        let dt = t1.saturating_sub(t0) as f64 / 1e9;
        if dt > 0.0 {
            best = best.min(dt);
        }
    }
    Ok(size as f64 / best / 1e9)
}

fn queue_on(dev: &Device, cfg: &str) -> tegragpu::Result<Queue> {
    std::env::set_var(COPY_ENGINE_ENV, cfg);
    dev.create_queue(QueueKind::Copy)
}

fn ce() -> tegragpu::Result<()> {
    let lces = {
        let b = RmBackend::open_linux(0)?;
        for e in &b.details().copy_engines {
            println!(
                "LCE{} type {:#x} caps {:02x?}{} pce_mask {:#x} ({} PCEs)",
                e.index,
                e.engine_type,
                e.caps,
                if e.is_grce() { " GRCE" } else { "" },
                e.pce_mask,
                e.pce_count()
            );
        }
        let mut v: Vec<_> = b
            .details()
            .copy_engines
            .iter()
            .filter(|e| !e.is_grce())
            .map(|e| (e.index, e.pce_count()))
            .collect();
        v.sort_by_key(|x| std::cmp::Reverse(x.1));
        v
    };
    let dev = Device::open(Some("rm"))?;
    let big = 1u64 << 30;
    let a = dev.alloc(big, MemFlags::default())?;
    let b = dev.alloc(big, MemFlags::default())?;
    // Correctness: a pattern through a lazily mapped buffer, copied by the default engine.
    {
        let src = dev.alloc(1 << 20, MemFlags::default())?;
        let dst = dev.alloc(1 << 20, MemFlags::default())?;
        let sp = src.map_cpu()? as *mut u32;
        for i in 0..(1 << 18) {
            // SAFETY: 1 MiB mapping, i < 2^18 words.
            unsafe { sp.add(i).write_volatile(i as u32 ^ 0xA5A5_0000) };
        }
        std::env::remove_var(COPY_ENGINE_ENV);
        let mut q = dev.create_queue(QueueKind::Copy)?;
        let s = dev.create_signal(0)?;
        q.copy(&dst, 0, &src, 0, 1 << 20)?;
        q.signal(&s, 1)?;
        q.submit()?;
        s.wait(1, TO)?;
        let dp = dst.map_cpu()? as *const u32;
        let bad = [0usize, 4097, (1 << 18) - 1]
            .iter()
            .filter(|&&i| unsafe { dp.add(i).read_volatile() } != i as u32 ^ 0xA5A5_0000)
            .count();
        println!(
            "auto copy engine correctness: {}",
            if bad == 0 { "OK" } else { "MISMATCH" }
        );
    }
    let mut v = 0u64;
    let mut configs: Vec<String> = vec!["grce".into(), "auto".into()];
    configs.extend(lces.iter().map(|x| x.0.to_string()));
    for cfg in &configs {
        let mut qs = match queue_on(&dev, cfg) {
            Ok(q) => vec![q],
            Err(e) => {
                println!("cfg {cfg}: queue failed: {e}");
                continue;
            }
        };
        let sigs = vec![(dev.create_signal(0)?, dev.create_signal(0)?)];
        for &(size, iters) in &[(64u64 << 20, 10usize), (big, 5)] {
            match copy_bw(&mut qs, &sigs, &a, &b, size, iters, &mut v) {
                Ok(g) => println!("cfg {cfg}: {} MiB: {g:.1} GB/s", size >> 20),
                Err(e) => println!("cfg {cfg}: {} MiB: error {e}", size >> 20),
            }
        }
    }
    // Split over the k LCEs with the most PCEs.
    for k in [2usize, 3, 4, 8] {
        if k > lces.len() {
            break;
        }
        let mut qs = Vec::new();
        for x in &lces[..k] {
            qs.push(queue_on(&dev, &x.0.to_string())?);
        }
        let mut sigs = Vec::new();
        for _ in 0..k {
            sigs.push((dev.create_signal(0)?, dev.create_signal(0)?));
        }
        for &(size, iters) in &[(64u64 << 20, 10usize), (big, 5)] {
            match copy_bw(&mut qs, &sigs, &a, &b, size, iters, &mut v) {
                Ok(g) => println!(
                    "split over {k} LCEs {:?}: {} MiB: {g:.1} GB/s",
                    lces[..k].iter().map(|x| x.0).collect::<Vec<_>>(),
                    size >> 20
                ),
                Err(e) => println!("split {k}: error {e}"),
            }
        }
    }
    std::env::remove_var(COPY_ENGINE_ENV);
    Ok(())
}

fn alloc() -> tegragpu::Result<()> {
    let dev = Device::open(Some("rm"))?;
    for eager in [false, true, false] {
        if eager {
            std::env::set_var("TEGRAGPU_RM_EAGER_CPU_MAP", "1");
        } else {
            std::env::remove_var("TEGRAGPU_RM_EAGER_CPU_MAP");
        }
        let mut t = Vec::new();
        for _ in 0..20 {
            let s = Instant::now();
            let b = dev.alloc(256 << 20, MemFlags::default())?;
            drop(b);
            t.push(s.elapsed().as_secs_f64() * 1e6);
        }
        println!(
            "alloc+free 256 MiB ({} CPU map): p50 {:.1} us",
            if eager { "eager" } else { "lazy" },
            p50(&mut t)
        );
    }
    // Lazy map + first CPU access cost.
    let mut t = Vec::new();
    for _ in 0..5 {
        let b = dev.alloc(256 << 20, MemFlags::default())?;
        let s = Instant::now();
        let p = b.map_cpu()?;
        t.push(s.elapsed().as_secs_f64() * 1e6);
        // SAFETY: the mapping just made.
        unsafe { p.write_volatile(1) };
    }
    println!("first map_cpu of 256 MiB: p50 {:.1} us", p50(&mut t));
    Ok(())
}

fn main() {
    let what = std::env::args().nth(1).unwrap_or_default();
    let r = match what.as_str() {
        "ce" => ce(),
        "alloc" => alloc(),
        _ => {
            eprintln!("usage: rmperf_probe ce|alloc");
            std::process::exit(2)
        }
    };
    if let Err(e) = r {
        println!("error: {e}");
        std::process::exit(1);
    }
}
