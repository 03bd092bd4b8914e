//! Real kernels through the full stack (cubin → module → QMD → pushbuffer → doorbell → GPU),
//! checked against CPU results. On the emulated Orin the GPU model runs the reference
//! implementation registered for each kernel's exact code bytes.

mod common;
use common::*;
use tegragpu::core::{AddressMode, LaunchConfig, QueueKind, TexDesc, TexFormat, TexLayout};
use tegragpu::Status;

fn lcg(seed: &mut u64) -> f32 {
    *seed = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    ((*seed >> 40) as f32 / (1u64 << 24) as f32) - 0.5
}

fn fill_f32(b: &tegragpu::core::Buffer, v: &[f32]) {
    unsafe { std::ptr::copy_nonoverlapping(v.as_ptr(), b.cpu_ptr() as *mut f32, v.len()) }
}
fn read_f32(b: &tegragpu::core::Buffer, n: usize) -> Vec<f32> {
    let mut out = vec![0f32; n];
    unsafe { std::ptr::copy_nonoverlapping(b.cpu_ptr() as *const f32, out.as_mut_ptr(), n) };
    out
}

fn run(dev: &tegragpu::core::Device, f: impl FnOnce(&mut tegragpu::core::Queue)) {
    let mut q = dev.create_queue(QueueKind::Compute).unwrap();
    let s = dev.create_signal(0).unwrap();
    f(&mut q);
    q.signal(&s, 1).unwrap();
    q.submit().unwrap();
    s.wait(1, 60 * SEC).unwrap();
}

#[test]
fn vector_add() {
    let dev = device();
    let m = fixtures(&dev);
    let k = m.kernel("vector_add").unwrap();
    let n = 100_003usize;
    let mut seed = 1;
    let a: Vec<f32> = (0..n).map(|_| lcg(&mut seed)).collect();
    let b: Vec<f32> = (0..n).map(|_| lcg(&mut seed)).collect();
    let (ba, bb, bc) = (
        dev.alloc(n as u64 * 4, data_flags()).unwrap(),
        dev.alloc(n as u64 * 4, data_flags()).unwrap(),
        dev.alloc(n as u64 * 4, data_flags()).unwrap(),
    );
    fill_f32(&ba, &a);
    fill_f32(&bb, &b);
    run(&dev, |q| {
        let p = Params::new()
            .u64(ba.gpu_va())
            .u64(bb.gpu_va())
            .u64(bc.gpu_va())
            .u32(n as u32);
        q.launch(&k, &cfg((n as u32).div_ceil(256), 256), p.bytes())
            .unwrap();
    });
    let c = read_f32(&bc, n);
    for i in 0..n {
        assert_eq!(c[i], a[i] + b[i], "element {i}");
    }
}

#[test]
fn saxpy_with_pointer_array_arguments() {
    let dev = device();
    let m = fixtures(&dev);
    let k = m.kernel("saxpy").unwrap();
    let n = 4099usize;
    let mut seed = 7;
    let x: Vec<f32> = (0..n).map(|_| lcg(&mut seed)).collect();
    let y: Vec<f32> = (0..n).map(|_| lcg(&mut seed)).collect();
    let (bx, by) = (
        dev.alloc(n as u64 * 4, data_flags()).unwrap(),
        dev.alloc(n as u64 * 4, data_flags()).unwrap(),
    );
    fill_f32(&bx, &x);
    fill_f32(&by, &y);
    let a = 2.5f32;
    let (xv, yv, nn) = (bx.gpu_va(), by.gpu_va(), n as u32);
    run(&dev, |q| {
        let args: [*const u8; 4] = [
            &a as *const f32 as _,
            &xv as *const u64 as _,
            &yv as *const u64 as _,
            &nn as *const u32 as _,
        ];
        unsafe {
            q.launch_ptrs(&k, &cfg(nn.div_ceil(128), 128), &args)
                .unwrap()
        };
    });
    let out = read_f32(&by, n);
    for i in 0..n {
        assert_eq!(
            out[i],
            a.mul_add(x[i], y[i]),
            "element {i} (the GPU computes a fused multiply-add)"
        );
    }
}

#[test]
fn matmul_tiled_with_shared_memory() {
    let dev = device();
    let m = fixtures(&dev);
    let k = m.kernel("matmul_tiled").unwrap();
    assert!(k.attributes().static_shared_bytes >= 2 * 16 * 16 * 4);
    let n = 80usize;
    let mut seed = 3;
    let a: Vec<f32> = (0..n * n).map(|_| lcg(&mut seed)).collect();
    let b: Vec<f32> = (0..n * n).map(|_| lcg(&mut seed)).collect();
    let bytes = (n * n * 4) as u64;
    let (ba, bb, bc) = (
        dev.alloc(bytes, data_flags()).unwrap(),
        dev.alloc(bytes, data_flags()).unwrap(),
        dev.alloc(bytes, data_flags()).unwrap(),
    );
    fill_f32(&ba, &a);
    fill_f32(&bb, &b);
    run(&dev, |q| {
        let p = Params::new()
            .u64(ba.gpu_va())
            .u64(bb.gpu_va())
            .u64(bc.gpu_va())
            .u32(n as u32);
        let g = (n as u32).div_ceil(16);
        q.launch(
            &k,
            &LaunchConfig {
                grid: [g, g, 1],
                block: [16, 16, 1],
                dynamic_shared_bytes: 0,
                cooperative: false,
                concurrent: false,
                cluster: [0; 3],
            },
            p.bytes(),
        )
        .unwrap();
    });
    let c = read_f32(&bc, n * n);
    for i in 0..n {
        for j in 0..n {
            let mut acc = 0f32;
            for t in 0..n {
                acc += a[i * n + t] * b[t * n + j];
            }
            assert!(
                (c[i * n + j] - acc).abs() <= 1e-4 * (1.0 + acc.abs()),
                "C[{i}][{j}] = {} vs {acc}",
                c[i * n + j]
            );
        }
    }
}

#[test]
fn reduction_with_dynamic_shared_memory() {
    let dev = device();
    let m = fixtures(&dev);
    let k = m.kernel("reduce_sum").unwrap();
    let n = 100_000usize;
    let block = 256u32;
    let blocks = (n as u32).div_ceil(block);
    let input: Vec<f32> = (0..n).map(|i| ((i % 17) as f32) * 0.25).collect();
    let bi = dev.alloc(n as u64 * 4, data_flags()).unwrap();
    let bo = dev.alloc(blocks as u64 * 4, data_flags()).unwrap();
    fill_f32(&bi, &input);
    run(&dev, |q| {
        let p = Params::new()
            .u64(bi.gpu_va())
            .u64(bo.gpu_va())
            .u32(n as u32);
        q.launch(
            &k,
            &LaunchConfig {
                grid: [blocks, 1, 1],
                block: [block, 1, 1],
                dynamic_shared_bytes: block * 4,
                cooperative: false,
                concurrent: false,
                cluster: [0; 3],
            },
            p.bytes(),
        )
        .unwrap();
    });
    let partial = read_f32(&bo, blocks as usize);
    let total: f64 = partial.iter().map(|&x| x as f64).sum();
    let expect: f64 = input.iter().map(|&x| x as f64).sum();
    assert!(
        (total - expect).abs() < 1e-3 * expect,
        "{total} vs {expect}"
    );
    let first: f32 = input[..block as usize].iter().sum();
    assert!(
        (partial[0] - first).abs() < 1e-3,
        "{} vs {first}",
        partial[0]
    );
}

#[test]
fn mixed_parameter_types_land_where_the_kernel_reads_them() {
    let dev = device();
    let m = fixtures(&dev);
    let k = m.kernel("mixed_params").unwrap();
    let a = k.attributes();
    let offs: Vec<(u32, u32)> = a.params.iter().map(|p| (p.offset, p.size)).collect();
    assert_eq!(
        offs,
        vec![(0, 1), (2, 2), (4, 4), (8, 8), (16, 8), (24, 16), (40, 8)]
    );
    let out = dev.alloc(4096, data_flags()).unwrap();
    let mut p = vec![0u8; a.param_bytes as usize];
    p[0] = (-5i8) as u8;
    p[2..4].copy_from_slice(&(-300i16).to_le_bytes());
    p[4..8].copy_from_slice(&(-70000i32).to_le_bytes());
    p[8..16].copy_from_slice(&(-(1i64 << 40) - 3).to_le_bytes());
    p[16..24].copy_from_slice(&out.gpu_va().to_le_bytes());
    p[24..28].copy_from_slice(&42i32.to_le_bytes());
    p[28..32].copy_from_slice(&1.5f32.to_le_bytes());
    p[32..40].copy_from_slice(&(-2.25f64).to_le_bytes());
    p[40..48].copy_from_slice(&1e300f64.to_le_bytes());
    run(&dev, |q| q.launch(&k, &cfg(1, 32), &p).unwrap());
    let w: Vec<u32> = (0..11)
        .map(|i| unsafe { std::ptr::read_volatile((out.cpu_ptr() as *const u32).add(i)) })
        .collect();
    assert_eq!(w[0] as i32, -5);
    assert_eq!(w[1] as i32, -300);
    assert_eq!(w[2] as i32, -70000);
    assert_eq!(
        ((w[4] as u64) << 32 | w[3] as u64) as i64,
        -(1i64 << 40) - 3
    );
    assert_eq!(w[5], 42);
    assert_eq!(f32::from_bits(w[6]), 1.5);
    assert_eq!(f64::from_bits((w[8] as u64) << 32 | w[7] as u64), -2.25);
    assert_eq!(f64::from_bits((w[10] as u64) << 32 | w[9] as u64), 1e300);
}

#[test]
fn kernel_with_local_memory() {
    let dev = device();
    let m = fixtures(&dev);
    let k = m.kernel("uses_local").unwrap();
    assert!(
        k.attributes().local_bytes_per_thread >= 256,
        "64 u32 on the stack: {:?}",
        k.attributes()
    );
    let n = 1000u32;
    let idx = dev.alloc(n as u64 * 4, data_flags()).unwrap();
    let out = dev.alloc(n as u64 * 4, data_flags()).unwrap();
    for i in 0..n {
        unsafe { *(idx.cpu_ptr() as *mut u32).add(i as usize) = i * 7 };
    }
    run(&dev, |q| {
        q.launch(
            &k,
            &cfg(n.div_ceil(128), 128),
            Params::new()
                .u64(idx.gpu_va())
                .u64(out.gpu_va())
                .u32(n)
                .bytes(),
        )
        .unwrap()
    });
    for i in 0..n {
        let got = unsafe { *(out.cpu_ptr() as *const u32).add(i as usize) };
        assert_eq!(got, ((i * 7) & 63) * 3 + i, "element {i}");
    }
}

#[test]
fn launches_that_do_not_fit_the_kernel_are_refused() {
    let dev = device();
    let m = fixtures(&dev);
    let bounded = m.kernel("bounded_128").unwrap();
    assert_eq!(bounded.attributes().max_threads_per_block, 128);
    let out = dev.alloc(1 << 20, data_flags()).unwrap();
    let mut q = dev.create_queue(QueueKind::Compute).unwrap();
    let p = Params::new().u64(out.gpu_va());
    let e = q.launch(&bounded, &cfg(1, 256), p.bytes()).unwrap_err();
    assert_eq!(e.status, Status::InvalidLaunch);
    assert!(
        e.message.contains("256") && e.message.contains("128"),
        "{}",
        e.message
    );
    let e = q.launch(&bounded, &cfg(1, 64), &[0u8; 4]).unwrap_err();
    assert_eq!(e.status, Status::InvalidLaunch);
    assert!(
        e.message.contains("8 bytes") && e.message.contains("got 4"),
        "{}",
        e.message
    );
    let red = m.kernel("reduce_sum").unwrap();
    let too_much = red.attributes().max_dynamic_shared_bytes + 1;
    let e = q
        .launch(
            &red,
            &LaunchConfig {
                grid: [1, 1, 1],
                block: [32, 1, 1],
                dynamic_shared_bytes: too_much,
                cooperative: false,
                concurrent: false,
                cluster: [0; 3],
            },
            Params::new().u64(0).u64(0).u32(0).bytes(),
        )
        .unwrap_err();
    assert_eq!(e.status, Status::InvalidLaunch);
    assert!(e.message.contains(&too_much.to_string()), "{}", e.message);
    for bad in [[0, 1, 1], [1, 0, 1]] {
        let e = q
            .launch(
                &bounded,
                &LaunchConfig {
                    grid: bad,
                    block: [32, 1, 1],
                    dynamic_shared_bytes: 0,
                    cooperative: false,
                    concurrent: false,
                    cluster: [0; 3],
                },
                p.bytes(),
            )
            .unwrap_err();
        assert_eq!(e.status, Status::InvalidLaunch);
    }
    // Nothing was submitted by the refused launches; the queue still works.
    run(&dev, |q2| {
        q2.launch(&bounded, &cfg(2, 128), p.bytes()).unwrap()
    });
    assert_eq!(unsafe { *(out.cpu_ptr() as *const u32).add(129) }, 1);
}

#[test]
fn two_kilobyte_by_value_parameter() {
    // A constant bank larger than a queue's QMD slot holds goes through the constant-bank ring.
    let dev = device();
    let m = fixtures(&dev);
    let k = m.kernel("big_params").unwrap();
    assert_eq!(k.attributes().param_bytes, 2056);
    let out = dev.alloc(4096, data_flags()).unwrap();
    let mut q = dev
        .create_queue_with(
            QueueKind::Compute,
            tegragpu::core::QueueConfig { depth: 16 },
        )
        .unwrap();
    let s = dev.create_signal(0).unwrap();
    for round in 0..40u32 {
        let mut p = Vec::with_capacity(2056);
        p.extend_from_slice(&out.gpu_va().to_le_bytes());
        for i in 0..512u32 {
            p.extend_from_slice(&(i.wrapping_mul(2654435761) ^ round).to_le_bytes());
        }
        q.launch(&k, &cfg(4, 128), &p).unwrap();
        q.signal(&s, round as u64 + 1).unwrap();
        q.submit().unwrap();
        s.wait(round as u64 + 1, 30 * SEC).unwrap();
        for i in [0usize, 1, 255, 511] {
            let got = unsafe { std::ptr::read_volatile((out.cpu_ptr() as *const u32).add(i)) };
            assert_eq!(
                got,
                (i as u32).wrapping_mul(2654435761) ^ round,
                "round {round} element {i}"
            );
        }
    }
}

fn tex_desc(layout: TexLayout, address: [AddressMode; 2], border: f32) -> TexDesc {
    TexDesc {
        layout,
        format: TexFormat::F32,
        channels: 1,
        read_normalized_float: false,
        normalized_coords: false,
        linear_filter: false,
        address,
        border: [border, 0.0, 0.0, 0.0],
    }
}

#[test]
fn texture_1d_fetch() {
    let dev = device();
    let m = fixtures(&dev);
    let k = m.kernel("tex_fetch_1d").unwrap();
    let n = 1000usize;
    let v: Vec<f32> = (0..n + 64).map(|i| i as f32 * 0.5 - 7.0).collect();
    let data = std::sync::Arc::new(dev.alloc(v.len() as u64 * 4, data_flags()).unwrap());
    fill_f32(&data, &v);
    // At the start of the buffer and 64 elements (256 bytes) into it.
    for off in [0usize, 64] {
        let t = dev
            .create_texture(
                data.clone(),
                &tex_desc(
                    TexLayout::Linear {
                        address: off as u64 * 4,
                        width: n as u64,
                    },
                    [AddressMode::Clamp; 2],
                    0.0,
                ),
            )
            .unwrap();
        assert!(t.handle() >= 1);
        let out = dev.alloc(2 * n as u64 * 4, data_flags()).unwrap();
        fill_f32(&out, &vec![f32::NAN; 2 * n]);
        run(&dev, |q| {
            let p = Params::new()
                .u64(t.handle())
                .u64(out.gpu_va())
                .u32(n as u32);
            q.launch(&k, &cfg((n as u32).div_ceil(128), 128), p.bytes())
                .unwrap();
        });
        let got = read_f32(&out, 2 * n);
        for i in 0..n {
            assert_eq!(got[i], v[off + n - 1 - i], "offset {off}, element {i}");
            assert_eq!(got[n + i], 0.0, "offset {off}: fetch past the end at {i}");
        }
    }
}

#[test]
fn texture_2d_clamp_and_border() {
    let dev = device();
    let m = fixtures(&dev);
    let k = m.kernel("tex_fetch_2d").unwrap();
    let (w, h, pitch) = (37usize, 11usize, 256usize);
    let mut img = vec![0f32; pitch / 4 * h];
    let mut seed = 7;
    for y in 0..h {
        for x in 0..w {
            img[y * pitch / 4 + x] = lcg(&mut seed);
        }
    }
    let data = std::sync::Arc::new(dev.alloc((pitch * h) as u64, data_flags()).unwrap());
    fill_f32(&data, &img);
    let layout = TexLayout::Pitch2d {
        address: 0,
        width: w as u64,
        height: h as u64,
        pitch: pitch as u64,
    };
    let clamp = dev
        .create_texture(
            data.clone(),
            &tex_desc(layout, [AddressMode::Clamp; 2], 0.0),
        )
        .unwrap();
    let border = dev
        .create_texture(
            data.clone(),
            &tex_desc(layout, [AddressMode::Clamp, AddressMode::Border], 0.25),
        )
        .unwrap();
    assert_ne!(clamp.handle(), border.handle());
    let outs: Vec<_> = (0..2)
        .map(|_| dev.alloc((w * h * 4) as u64, data_flags()).unwrap())
        .collect();
    run(&dev, |q| {
        for (t, o) in [&clamp, &border].iter().zip(&outs) {
            let p = Params::new()
                .u64(t.handle())
                .u64(o.gpu_va())
                .u32(w as u32)
                .u32(h as u32);
            let mut c = cfg((w as u32).div_ceil(32), 32);
            c.grid[1] = h as u32;
            q.launch(&k, &c, p.bytes()).unwrap();
        }
    });
    let texel = |x: i64, y: i64, border_y: bool| -> f32 {
        let x = x.clamp(0, w as i64 - 1);
        if border_y && !(0..h as i64).contains(&y) {
            return 0.25;
        }
        let y = y.clamp(0, h as i64 - 1);
        img[y as usize * pitch / 4 + x as usize]
    };
    for (o, border_y) in outs.iter().zip([false, true]) {
        let got = read_f32(o, w * h);
        for y in 0..h as i64 {
            for x in 0..w as i64 {
                let want = 2.0f32.mul_add(texel(x - 3, y + 2, border_y), texel(x, y, border_y));
                assert_eq!(
                    got[y as usize * w + x as usize],
                    want,
                    "border {border_y}: texel ({x}, {y})"
                );
            }
        }
    }
}

#[test]
fn texture_slots_are_reused_and_bounded() {
    let dev = device();
    let data = std::sync::Arc::new(dev.alloc(4096, data_flags()).unwrap());
    let desc = tex_desc(
        TexLayout::Linear {
            address: 0,
            width: 1024,
        },
        [AddressMode::Clamp; 2],
        0.0,
    );
    let mut all: Vec<_> = (1..tegragpu::core::TEXTURE_POOL_ENTRIES)
        .map(|_| dev.create_texture(data.clone(), &desc).unwrap())
        .collect();
    let mut handles: Vec<u64> = all.iter().map(|t| t.handle()).collect();
    handles.sort_unstable();
    handles.dedup();
    assert_eq!(
        handles.len() as u32,
        tegragpu::core::TEXTURE_POOL_ENTRIES - 1
    );
    assert_eq!(handles[0], 1);
    let e = dev.create_texture(data.clone(), &desc).unwrap_err();
    assert_eq!(e.status, Status::OutOfMemory, "{e}");
    // No queue has work in flight: a destroyed texture's slot is free at once.
    let freed = all.swap_remove(100).handle();
    let again = dev.create_texture(data.clone(), &desc).unwrap();
    assert_eq!(again.handle(), freed);
    // Bad descriptions name what is wrong and change nothing.
    for (bad, what) in [
        (
            TexDesc {
                layout: TexLayout::Linear {
                    address: 16,
                    width: 8,
                },
                ..desc
            },
            "aligned",
        ),
        (
            TexDesc {
                layout: TexLayout::Linear {
                    address: 0,
                    width: 1025,
                },
                ..desc
            },
            "outside the buffer",
        ),
        (
            TexDesc {
                channels: 3,
                ..desc
            },
            "channels",
        ),
    ] {
        drop(all.pop());
        let e = dev.create_texture(data.clone(), &bad).unwrap_err();
        assert_eq!(e.status, Status::InvalidArgument, "{e}");
        assert!(e.to_string().contains(what), "{e}");
        dev.create_texture(data.clone(), &desc)
            .map(|t| all.push(t))
            .unwrap();
    }
}

/// A kernel that writes the texture's memory, then a texture fetch in the same submission: the
/// fetch sees the new data (every grid starts with the texture caches invalidated).
#[test]
fn texture_fetch_sees_data_written_by_an_earlier_kernel() {
    let dev = device();
    let m = fixtures(&dev);
    let (fill, fetch) = (
        m.kernel("fill_u32").unwrap(),
        m.kernel("tex_fetch_1d").unwrap(),
    );
    let n = 4096u32;
    let data = std::sync::Arc::new(dev.alloc(u64::from(n) * 4, data_flags()).unwrap());
    fill_f32(&data, &vec![1.0; n as usize]);
    let t = dev
        .create_texture(
            data.clone(),
            &tex_desc(
                TexLayout::Linear {
                    address: 0,
                    width: u64::from(n),
                },
                [AddressMode::Clamp; 2],
                0.0,
            ),
        )
        .unwrap();
    let out = dev.alloc(2 * u64::from(n) * 4, data_flags()).unwrap();
    let read = |q: &mut tegragpu::core::Queue| {
        let p = Params::new().u64(t.handle()).u64(out.gpu_va()).u32(n);
        q.launch(&fetch, &cfg(n / 128, 128), p.bytes()).unwrap();
    };
    run(&dev, |q| {
        read(q); // the texture cache now holds 1.0
        for v in [2.5f32, -7.25] {
            let p = Params::new().u64(data.gpu_va()).u32(v.to_bits()).u32(n);
            q.launch(&fill, &cfg(n / 128, 128), p.bytes()).unwrap();
            read(q);
        }
    });
    let got = read_f32(&out, n as usize);
    assert!(got.iter().all(|&x| x == -7.25), "{:?}", &got[..8]);
}

/// A destroyed texture's slot is not handed out again while work recorded before the destroy
/// may still read it; once that work is done, it is.
#[test]
fn destroyed_texture_slot_waits_for_queued_work() {
    let dev = device();
    let m = fixtures(&dev);
    let k = m.kernel("tex_fetch_1d").unwrap();
    let data = std::sync::Arc::new(dev.alloc(4096, data_flags()).unwrap());
    let out = dev.alloc(8192, data_flags()).unwrap();
    let desc = tex_desc(
        TexLayout::Linear {
            address: 0,
            width: 1024,
        },
        [AddressMode::Clamp; 2],
        0.0,
    );
    let t = dev.create_texture(data.clone(), &desc).unwrap();
    let old = t.handle();
    let mut q = dev.create_queue(QueueKind::Compute).unwrap();
    let p = Params::new().u64(old).u64(out.gpu_va()).u32(1024);
    q.launch(&k, &cfg(8, 128), p.bytes()).unwrap(); // recorded, not submitted
    drop(t);
    let other = dev.create_texture(data.clone(), &desc).unwrap();
    assert_ne!(
        other.handle(),
        old,
        "slot reused while a recorded launch may read it"
    );
    q.submit().unwrap();
    q.synchronize(60 * SEC).unwrap();
    let again = dev.create_texture(data.clone(), &desc).unwrap();
    assert_eq!(
        again.handle(),
        old,
        "slot not reused after the work completed"
    );
}

/// Thread-block clusters: refused with NOT_SUPPORTED on GPUs without them (the emulated Orin,
/// sm_87); on sm_90, shapes that do not divide the grid or exceed 8 blocks are invalid launches,
/// on queues and in command buffers. (Cluster results: the conformance cases
/// `cluster_ptx*` and `cluster_dsmem_cg`, against libcuda.)
#[test]
fn cluster_launch_checks() {
    let dev = device();
    let m = fixtures(&dev);
    let k = m.kernel("empty_kernel").unwrap();
    let mut q = dev.create_queue(QueueKind::Compute).unwrap();
    let with = |grid: u32, cluster: [u32; 3]| LaunchConfig {
        cluster,
        ..cfg(grid, 32)
    };
    if dev.info().sm_major < 9 {
        let e = q.launch(&k, &with(8, [2, 1, 1]), &[]).unwrap_err();
        assert_eq!(e.status, Status::NotSupported, "{e}");
        assert!(
            e.message.contains("sm_90") && e.message.contains("sm_87"),
            "{e}"
        );
    } else {
        for (grid, c, what) in [(9, [2, 1, 1], "divide"), (32, [16, 1, 1], "8 blocks")] {
            let e = q.launch(&k, &with(grid, c), &[]).unwrap_err();
            assert_eq!(e.status, Status::InvalidLaunch, "{e}");
            assert!(e.message.contains(what), "{e}");
        }
        q.launch(&k, &with(8, [4, 1, 1]), &[]).unwrap();
        q.synchronize(60 * SEC).unwrap();
    }
    // {1, 1, 1} is no cluster.
    q.launch(&k, &with(8, [1, 1, 1]), &[]).unwrap();
    // Command buffers check cluster launches the same way (their replays: tests/cmdbuf.rs).
    let mut cb = dev.create_cmdbuf().unwrap();
    let e = cb.launch(&k, &with(9, [2, 1, 1]), &[]).unwrap_err();
    if dev.info().sm_major < 9 {
        assert_eq!(e.status, Status::NotSupported, "{e}");
    } else {
        assert_eq!(e.status, Status::InvalidLaunch, "{e}");
        assert!(e.message.contains("tg_cmdbuf_launch"), "{e}");
        cb.launch(&k, &with(8, [2, 1, 1]), &[]).unwrap();
    }
    q.synchronize(60 * SEC).unwrap();
}

/// Grids that read what the grid before them wrote must see the new values even though their
/// SMs cached the old ones: every QMD invalidates the SM's L1 data cache
/// (INVALIDATE_SHADER_DATA_CACHE; without it an H100 read the old value in every load).
/// `count_stale` reads all of x from every block with loads cached in L1.
fn l1_sequence(
    sm_count: u32,
    x: u64,
    n: u32,
    bad: u64,
    k: u32,
) -> [(&'static str, u32, Vec<u8>); 3] {
    let blocks = 4 * sm_count.max(1);
    let count = |expect: u32| {
        Params::new()
            .u64(x)
            .u32(n)
            .u32(expect)
            .u64(bad)
            .bytes()
            .to_vec()
    };
    [
        ("count_stale", blocks, count(k - 1)),
        (
            "fill_u32",
            n.div_ceil(256),
            Params::new().u64(x).u32(k).u32(n).bytes().to_vec(),
        ),
        ("count_stale", blocks, count(k)),
    ]
}

#[test]
fn grids_see_the_previous_grids_writes_not_stale_l1_lines() {
    let dev = device();
    let m = fixtures(&dev);
    let n = 2048u32;
    let x = dev
        .alloc(
            u64::from(n) * 4,
            tegragpu::core::MemFlags {
                zeroed: true,
                ..Default::default()
            },
        )
        .unwrap();
    let bad = dev.alloc(4096, data_flags()).unwrap();
    let sms = dev.info().sm_count;
    // Direct launches, one submission per 10 rounds.
    run(&dev, |q| {
        for k in 1..=100u32 {
            for (name, grid, p) in l1_sequence(sms, x.gpu_va(), n, bad.gpu_va(), k) {
                q.launch(&m.kernel(name).unwrap(), &cfg(grid, 256), &p)
                    .unwrap();
            }
            if k % 10 == 0 {
                q.submit().unwrap();
            }
        }
    });
    let stale = unsafe { std::ptr::read_volatile(bad.cpu_ptr() as *const u32) };
    assert_eq!(
        stale, 0,
        "old values read after a later grid wrote new ones (launches)"
    );
    // The same rounds chained in a command buffer (DEPENDENT_QMD), replayed.
    let mut cb = dev.create_cmdbuf().unwrap();
    let reset = Params::new()
        .u64(x.gpu_va())
        .u32(100)
        .u32(n)
        .bytes()
        .to_vec();
    let fill = m.kernel("fill_u32").unwrap();
    cb.launch(&fill, &cfg(n.div_ceil(256), 256), &reset)
        .unwrap();
    for k in 101..=120u32 {
        for (name, grid, p) in l1_sequence(sms, x.gpu_va(), n, bad.gpu_va(), k) {
            cb.launch(&m.kernel(name).unwrap(), &cfg(grid, 256), &p)
                .unwrap();
        }
    }
    cb.finish().unwrap();
    run(&dev, |q| {
        for _ in 0..10 {
            q.replay(&mut cb).unwrap();
        }
    });
    let stale = unsafe { std::ptr::read_volatile(bad.cpu_ptr() as *const u32) };
    assert_eq!(
        stale, 0,
        "old values read after a later grid wrote new ones (command buffer)"
    );
}
