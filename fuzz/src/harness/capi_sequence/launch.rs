//! `capi_sequence`: launches: the launch configuration and parameter block an op passes, and
//! the launch op itself.

use super::*;

/// The launch configuration an op passes: mostly small and valid, sometimes out of range.
/// Valid launches are kept to at most 2^13 threads (the emulated GPU runs kernels on the CPU).
fn launch_config(inp: &mut Input, k: Option<&KernRec>) -> [u8; 64] {
    let mt = k.map_or(1024, |k| k.max_threads.max(1));
    let max_dyn = k.map_or(0, |k| k.max_dyn);
    let mut grid = [1u32; 3];
    let mut block = [1u32; 3];
    match inp.u8() % 8 {
        0..=5 => {
            grid[0] = 1 + inp.below(8) as u32;
            if inp.chance(4) {
                grid[1] = 1 + inp.below(4) as u32;
                grid[2] = 1 + inp.below(2) as u32;
            }
            block[0] = match inp.u8() % 6 {
                0 => 1,
                1 => 32,
                2 => 64,
                3 => mt.min(128),
                4 => mt,
                _ => mt + 1,
            };
            if inp.chance(4) {
                block[1] = 1 + inp.below(4) as u32;
                block[2] = 1 + inp.below(2) as u32;
            }
        }
        6 => {
            for g in &mut grid {
                *g = inp.u32();
            }
            for b in &mut block {
                *b = inp.u32();
            }
        }
        _ => {
            let edge = [0u32, 65535, 65536, (1 << 31) - 1, 1 << 31, u32::MAX];
            let i = inp.below(6);
            let v = edge[inp.below(edge.len())];
            if i < 3 {
                grid[i] = v;
            } else {
                block[i - 3] = v;
            }
        }
    }
    let valid_dims = grid[0] >= 1
        && grid[0] < 1 << 31
        && (1..=65535).contains(&grid[1])
        && (1..=65535).contains(&grid[2])
        && (1..=1024).contains(&block[0])
        && (1..=1024).contains(&block[1])
        && (1..=64).contains(&block[2]);
    let product = |v: &[u32]| {
        v.iter()
            .fold(1u128, |acc, &x| acc.saturating_mul(u128::from(x)))
    };
    let threads = product(&grid).saturating_mul(product(&block));
    if valid_dims && threads > 1 << 13 {
        grid = [1, 1, 1];
        if product(&block) > 1 << 13 {
            block = [1, 1, 1];
        }
    }
    let bt = block[0].saturating_mul(block[1]).saturating_mul(block[2]);
    let dynamic = match inp.u8() % 8 {
        0..=3 => 0,
        4 => bt.saturating_mul(4).min(max_dyn),
        5 => max_dyn,
        6 => max_dyn.saturating_add(1),
        _ => inp.u32(),
    };
    let flags = match inp.u8() % 16 {
        0 => 1,
        1 => inp.u32(),
        _ => 0,
    };
    let cluster = match inp.u8() % 16 {
        0 => [1, 1, 1],
        1 => [inp.u32(), inp.u32(), inp.u32()],
        _ => [0, 0, 0],
    };
    let struct_size: u32 = match inp.u8() % 16 {
        0 => 32,
        1 => 36,
        2 => 64,
        3 => inp.u32(),
        _ => 48,
    };
    let mut raw = [0u8; 64];
    let words = [
        struct_size,
        grid[0],
        grid[1],
        grid[2],
        block[0],
        block[1],
        block[2],
        dynamic,
        flags,
        cluster[0],
        cluster[1],
        cluster[2],
    ];
    for (i, w) in words.iter().enumerate() {
        raw[4 * i..4 * i + 4].copy_from_slice(&w.to_le_bytes());
    }
    raw
}

/// A parameter block for kernel `k` launched on a queue of device `dev`: pointers into arena
/// buffers of that device (never another device's: the same address may be the library's own
/// memory there), small counts.
fn param_block(inp: &mut Input, w: &World, dev: usize, k: Option<&KernRec>) -> Vec<u8> {
    let arenas: Vec<u64> = w
        .bufs
        .iter()
        .filter(|b| b.size >= ARENA_MIN && b.dev == dev)
        .map(|b| b.va)
        .collect();
    let Some(k) = k else {
        let n = inp.below(64);
        return inp.bytes(n).to_vec();
    };
    let mut block = vec![0u8; k.param_bytes as usize];
    for &(off, size) in &k.params {
        let (o, s) = (off as usize, size as usize);
        if o + s > block.len() {
            continue;
        }
        if s == 8 {
            let v = match inp.u8() % 16 {
                0 => 0,
                1 => inp.u64(),
                _ if !arenas.is_empty() => {
                    arenas[inp.below(arenas.len())] + 4 * inp.below(16) as u64
                }
                _ => 0,
            };
            block[o..o + 8].copy_from_slice(&v.to_le_bytes());
        } else if s == 4 {
            // Counts stay small: they bound how far the fixture kernels read and write.
            let v = match inp.u8() % 8 {
                0 => 0,
                1 => 1,
                _ => inp.below(65) as u32,
            };
            block[o..o + 4].copy_from_slice(&v.to_le_bytes());
        } else {
            for b in &mut block[o..o + s] {
                *b = inp.u8();
            }
        }
    }
    match inp.u8() % 16 {
        0 => block.truncate(inp.below(block.len() + 1)),
        1 => block.extend_from_slice(&[0u8; 8]),
        _ => {}
    }
    block
}

pub(super) fn op_launch(inp: &mut Input, w: &mut World) {
    let q = w.pick(inp, Kind::Queue);
    let k = w.pick(inp, Kind::Kernel);
    let rec_i = w.kernels.iter().position(|r| r.h == k.h);
    let rec = rec_i.map(|i| &w.kernels[i]);
    // The fixture kernels' memory footprint is bounded only for the fixture kernels with the
    // parameter classes above; anything else launches with pointer parameters of 0.
    let known = rec.is_some_and(|r| !r.name.is_empty());
    let cfg = launch_config(inp, rec);
    let cfg_ptr = if inp.chance(32) {
        null()
    } else {
        cfg.as_ptr() as *const tg_launch_config
    };
    let qdev = w.queues.iter().find(|x| x.0 == q.h).map_or(0, |x| x.1);
    let mut params = if known {
        param_block(inp, w, qdev, rec)
    } else {
        vec![0u8; rec.map_or(0, |r| r.param_bytes as usize)]
    };
    let st = if inp.chance(2) {
        let p = if inp.chance(32) {
            null()
        } else {
            params.as_ptr() as *const c_void
        };
        c!(tg_launch(
            q.h as *const tg_queue,
            k.h as *const tg_kernel,
            cfg_ptr,
            p,
            params.len()
        ))
    } else {
        // cuLaunchKernel style: one pointer per parameter into the block; each may read up to
        // its parameter's size, so every pointer has at least 8 KiB behind it.
        let n = rec.map_or(0, |r| r.params.len());
        let num_args = match inp.u8() % 16 {
            0 => inp.below(64),
            1 => n + 1,
            _ => n,
        };
        params.resize(params.len().max(1) + 8192, 0);
        let mut args: Vec<*mut c_void> = (0..num_args.max(n))
            .map(|i| {
                let off = rec
                    .and_then(|r| r.params.get(i))
                    .map_or(0, |p| p.0 as usize);
                // SAFETY: off < param_bytes <= params.len() - 8192.
                unsafe { params.as_mut_ptr().add(off) as *mut c_void }
            })
            .collect();
        if !args.is_empty() && inp.chance(32) {
            let i = inp.below(args.len());
            args[i] = null_mut();
        }
        let ap = if inp.chance(32) {
            null_mut()
        } else {
            args.as_mut_ptr()
        };
        c!(tg_launch_args(
            q.h as *const tg_queue,
            k.h as *const tg_kernel,
            cfg_ptr,
            ap,
            num_args
        ))
    };
    expect_fail_if_bad("tg_launch", st, &[q, k]);
}
