//! What `tg_module_load` accepts besides a cubin (fatbin, host object, PTX), and the
//! per-module / per-kernel queries added for CUDA parity: `__device__` variables, the stack
//! limit, occupancy and cooperative-launch checks. Runs on the device under test (default: the
//! emulated Orin, sm_87).

mod common;

use tegragpu::core::LaunchConfig;
use tegragpu::Status;

/// The committed nvcc cubin `tests/conformance/fixtures/<case>.sm_<XY>.cubin` for the device's
/// SM; it must exist for sm_8x and sm_9x (`None`, with a notice, on other GPUs).
fn conformance_fixture(dev: &tegragpu::core::Device, case: &str) -> Option<Vec<u8>> {
    let i = dev.info();
    let p = common::repo_path("tests/conformance/fixtures")
        .join(format!("{case}.sm_{}{}.cubin", i.sm_major, i.sm_minor));
    match std::fs::read(&p) {
        Ok(b) => Some(b),
        Err(_) => {
            assert!(
                i.sm_major != 8 && i.sm_major != 9,
                "{} is missing",
                p.display()
            );
            eprintln!("NOTICE: no {}", p.display());
            None
        }
    }
}

fn fixture(name: &str) -> Vec<u8> {
    let p = common::repo_path("tests/fixtures").join(name);
    std::fs::read(&p).unwrap_or_else(|e| panic!("reading {}: {e}", p.display()))
}

#[test]
fn fatbins_load_the_sass_for_the_device() {
    let dev = common::device();
    let i = dev.info();
    // warp.fatbin holds sm_80 and sm_90 SASS: both majors this suite runs on (8.x, 9.0).
    for f in [
        "fatbin/warp.fatbin",
        "fatbin/warp.compressed.fatbin",
        "fatbin/warp.nocomp.fatbin",
    ] {
        let m = dev
            .load_module(&fixture(f))
            .unwrap_or_else(|e| panic!("{f} on sm_{}{}: {e:?}", i.sm_major, i.sm_minor));
        assert_eq!(m.kernel_names(), ["warp_reduce"], "{f}");
        let k = m
            .kernel("warp_reduce")
            .expect("warp intrinsics are not refused");
        assert_eq!(k.attributes().params.len(), 2);
    }
    // A host object file (nvcc -c) carries the fatbin in .nv_fatbin.
    let m = dev.load_module(&fixture("fatbin/warp.sm_90.o"));
    if i.sm_major == 9 {
        assert_eq!(m.expect("host object").kernel_names(), ["warp_reduce"]);
    } else {
        let e = m.err().expect("no sm_8x code in the object");
        assert_eq!(e.status, Status::InvalidCubin, "{e:?}");
        assert!(e.message.contains("sm_90"), "{}", e.message);
    }
}

#[test]
fn ptx_is_compiled_for_the_device_or_refused_clearly() {
    let dev = common::device();
    // PTX for compute_80 from nvrtc 12.9 (tests/fixtures/fatbin/README.md): every PTX
    // compiler of CUDA 12.x or a current driver accepts it, for sm_80 and later.
    let ptx = fixture("fatbin/shfl.compute_80.ptx");
    match dev.load_module(&ptx) {
        Ok(m) => {
            let k = m.kernel("k").expect("kernel k");
            assert_eq!(k.attributes().params.len(), 1);
        }
        Err(e) => {
            assert_eq!(e.status, Status::LibraryMissing, "{e:?}");
            assert!(e.message.contains("TEGRAGPU_PTXJIT"), "{}", e.message);
            eprintln!("NOTICE: no PTX compiler library; refusal checked");
        }
    }
}

#[test]
fn stack_limit_defaults_to_libcuda_value_and_is_checked() {
    let dev = common::device();
    assert_eq!(dev.stack_limit(), 1024);
    dev.set_stack_limit(8192).expect("8 KiB stack");
    assert_eq!(dev.stack_limit(), 8192);
    let m = common::fixtures(&dev);
    let k = m.kernel("uses_local").expect("kernel");
    // Every kernel gets at least the limit.
    assert!(k.attributes().local_bytes_per_thread <= 8192);
    let e = dev.set_stack_limit(1 << 40).expect_err("absurd stack");
    assert_eq!(e.status, Status::InvalidArgument);
    assert!(e.message.contains("tg_device_set_limit"), "{}", e.message);
    assert_eq!(dev.stack_limit(), 8192, "a refused value changes nothing");
    dev.set_stack_limit(1024).unwrap();
}

#[test]
fn device_globals_are_found_by_name() {
    let dev = common::device();
    let i = dev.info();
    let p = common::repo_path(format!(
        "tests/fixtures/cubin/globals.sm_{}{}.cubin",
        i.sm_major, i.sm_minor
    ));
    let Ok(bytes) = std::fs::read(&p) else {
        eprintln!("NOTICE: no {} fixture", p.display());
        return;
    };
    let m = dev.load_module(&bytes).expect("globals cubin");
    let names: Vec<String> = m.global_names();
    assert!(names.iter().all(|n| m.global(n).is_ok()));
    assert!(
        !names.is_empty(),
        "the fixture declares __device__ variables"
    );
    for n in &names {
        let (va, cpu, size) = m.global(n).expect("each listed global resolves");
        assert!(
            va != 0 && !cpu.is_null() && size > 0,
            "{n}: {va:#x} {cpu:?} {size}"
        );
    }
    let e = m.global("no_such_variable").expect_err("unknown name");
    assert_eq!(e.status, Status::NotFound);
    assert!(
        e.message.contains(&names[0]),
        "the message lists the variables: {}",
        e.message
    );
}

#[test]
fn occupancy_follows_registers_warps_and_shared_memory() {
    let dev = common::device();
    let i = dev.info();
    let m = common::fixtures(&dev);
    let k = m.kernel("vector_add").unwrap();
    let a = k.attributes().clone();
    let small = k.max_active_blocks(32, 0).unwrap();
    let big = k.max_active_blocks(a.max_threads_per_block, 0).unwrap();
    assert!(small >= big && big >= 1, "{small} {big}");
    assert!(small <= 32);
    // Warps bound it: blocks × warps per block never exceed the SM's warps.
    assert!(big * a.max_threads_per_block.div_ceil(32) <= i.warps_per_sm);
    // Dynamic shared memory past the kernel's limit: 0 blocks; at the limit: 1 block.
    assert_eq!(
        k.max_active_blocks(32, a.max_dynamic_shared_bytes + 1)
            .unwrap(),
        0
    );
    assert_eq!(
        k.max_active_blocks(32, a.max_dynamic_shared_bytes).unwrap(),
        1
    );
    let e = k.max_active_blocks(0, 0).unwrap_err();
    assert_eq!(e.status, Status::InvalidArgument);
}

/// A preferred carveout configures less shared memory per SM than the largest: CUDA's
/// occupancy counts with that configuration (each block takes at least the 1 KiB reserve), so
/// "prefer L1" (0 %) on an sm_90 SM gives the smallest configuration holding one block, 8 KiB,
/// and 8 blocks of a kernel without shared memory (NVIDIA's libcuda on the H100).
#[test]
fn occupancy_follows_the_preferred_carveout() {
    use tegragpu::core::carveout_shared_per_sm;
    let sm90 = [0, 8, 16, 32, 64, 100, 132, 164, 196, 228];
    assert_eq!(carveout_shared_per_sm(&sm90, None, 1024), 228 * 1024);
    assert_eq!(carveout_shared_per_sm(&sm90, Some(0), 1024), 8 * 1024);
    assert_eq!(carveout_shared_per_sm(&sm90, Some(0), 9 * 1024), 16 * 1024);
    // 50 % of 228 KiB is 114 KiB: the next configuration is 132 KiB.
    assert_eq!(carveout_shared_per_sm(&sm90, Some(50), 1024), 132 * 1024);
    assert_eq!(carveout_shared_per_sm(&sm90, Some(100), 1024), 228 * 1024);
    // More than the largest configuration: the largest (the block does not fit at all).
    assert_eq!(
        carveout_shared_per_sm(&sm90, Some(0), 300 * 1024),
        228 * 1024
    );

    let dev = common::device();
    let m = common::fixtures(&dev);
    let k = m.kernel("vector_add").unwrap();
    let default = k.max_active_blocks(32, 0).unwrap();
    assert_eq!(
        k.max_active_blocks_with_carveout(32, 0, None).unwrap(),
        default
    );
    // 0 %: the 8 KiB configuration, 1 KiB per block.
    assert_eq!(
        k.max_active_blocks_with_carveout(32, 0, Some(0)).unwrap(),
        default.min(8)
    );
    // 4 KiB of dynamic shared memory + the reserve: 5 KiB per block; 8 % of the largest
    // configuration rounds up to the next configuration of the architecture (Orin: 16 of
    // 164 KiB, 3 blocks; Hopper: 32 of 228 KiB, 6 blocks).
    let per_block = 5 * 1024;
    let configs: Vec<u32> = dev
        .arch()
        .smem_carveouts_kib
        .iter()
        .map(|k| k * 1024)
        .collect();
    let largest = *configs.iter().max().unwrap();
    let chosen = *configs
        .iter()
        .find(|&&b| u64::from(b) * 100 >= u64::from(largest) * 8)
        .unwrap();
    let want = carveout_shared_per_sm(dev.arch().smem_carveouts_kib, Some(8), per_block);
    assert_eq!(want, chosen, "8 % of {largest}");
    let free = k.max_active_blocks(32, 4096).unwrap();
    let blocks = k
        .max_active_blocks_with_carveout(32, 4096, Some(8))
        .unwrap();
    assert_eq!(blocks, (chosen / per_block).min(free));
    assert!(
        free > blocks,
        "the carveout limits the blocks ({free} without it)"
    );
    let e = k
        .max_active_blocks_with_carveout(32, 0, Some(101))
        .unwrap_err();
    assert_eq!(e.status, Status::InvalidArgument, "{e}");
}

#[test]
fn cooperative_grids_larger_than_the_gpu_are_refused() {
    let dev = common::device();
    let i = dev.info();
    let m = common::fixtures(&dev);
    let k = m.kernel("fill_u32").unwrap();
    let per_sm = k.max_active_blocks(256, 0).unwrap();
    let mut q = dev
        .create_queue(tegragpu::core::QueueKind::Compute)
        .unwrap();
    let buf = dev.alloc(4096, Default::default()).unwrap();
    let mut params = vec![0u8; k.attributes().param_bytes as usize];
    params[..8].copy_from_slice(&buf.gpu_va().to_le_bytes());
    let cfg = LaunchConfig {
        grid: [per_sm * i.sm_count + 1, 1, 1],
        block: [256, 1, 1],
        dynamic_shared_bytes: 0,
        cooperative: true,
        concurrent: false,
        cluster: [0; 3],
    };
    let e = q.launch(&k, &cfg, &params).unwrap_err();
    assert_eq!(e.status, Status::InvalidLaunch, "{e:?}");
    assert!(e.message.contains("cooperative"), "{}", e.message);
}

/// nvcc's cubin calling device-side printf and assert loads (the calls resolve to the built-in
/// syscall module). On a GPU the kernels run: `k_printf` prints and returns into the caller
/// (its output is the launch's argument), `k_assert` with a true assertion completes. The
/// emulated Orin cannot run nvcc's code, so there the launch must fail instead of passing.
#[test]
fn printf_and_assert_modules_load_and_run() {
    let dev = common::device();
    let i = dev.info();
    let name = match (i.sm_major, i.sm_minor) {
        (8, 7) => "syscalls/printf_assert.sm_87.cubin",
        (9, 0) => "syscalls/printf_assert.sm_90.cubin",
        _ => {
            eprintln!(
                "NOTICE: no printf/assert fixture for sm_{}{}",
                i.sm_major, i.sm_minor
            );
            return;
        }
    };
    let m = dev
        .load_module(&fixture(name))
        .expect("printf/assert module");
    let mut q = dev
        .create_queue(tegragpu::core::QueueKind::Compute)
        .unwrap();
    let buf = dev.alloc(4096, common::data_flags()).unwrap();
    let emulated = i.emulated;
    for (kernel, v) in [("k_printf", 41u32), ("k_assert", 3), ("k_printf", 42)] {
        let k = m.kernel(kernel).expect(kernel);
        assert_eq!(k.attributes().registers, 24, "{kernel}");
        let p = common::Params::new().u64(buf.gpu_va()).u32(v);
        let r = q
            .launch(&k, &common::cfg(1, 4), p.bytes())
            .and_then(|_| q.submit())
            .and_then(|_| q.synchronize(10 * common::SEC));
        if emulated {
            let e = r.expect_err("the emulator cannot run nvcc's code");
            assert_eq!(e.status, Status::DeviceFault, "{kernel}: {e:?}");
            assert!(e.message.contains("no reference kernel"), "{}", e.message);
            return;
        }
        r.unwrap_or_else(|e| panic!("{kernel}({v}): {e:?}"));
        // SAFETY: 4096 CPU-mapped bytes; the queue has finished.
        let out = unsafe { std::slice::from_raw_parts(buf.cpu_ptr() as *const u32, 4) };
        assert_eq!(out, [v; 4], "{kernel}({v})");
    }
}

/// A block passes the hardware's register check only with its warps rounded up to a multiple of
/// the 4 register sub-partitions: with 88 registers per thread 640 threads fit, 672 (21 warps)
/// do not, although 21 warps need fewer than 64 Ki registers. Launches above the limit are
/// refused before they reach the GPU (libcuda: CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES).
#[test]
fn register_limited_blocks_count_whole_sub_partitions() {
    let dev = common::device();
    let Some(bytes) = conformance_fixture(&dev, "reg_pressure_maxrreg88") else {
        return;
    };
    let m = dev.load_module(&bytes).expect("reg_pressure_maxrreg88");
    let k = m.kernel("reg_pressure").unwrap();
    assert_eq!(k.attributes().registers, 88);
    assert_eq!(k.attributes().max_threads_per_block, 640);
    assert_eq!(k.max_active_blocks(64, 0).unwrap(), 10);
    let mut q = dev
        .create_queue(tegragpu::core::QueueKind::Compute)
        .unwrap();
    let buf = dev.alloc(1 << 20, common::data_flags()).unwrap();
    let p = common::Params::new().u64(buf.gpu_va()).u64(buf.gpu_va());
    let e = q
        .launch(&k, &common::cfg(1, 672), p.bytes())
        .expect_err("672 threads with 88 registers");
    assert_eq!(e.status, Status::InvalidLaunch, "{e:?}");
    assert!(e.message.contains("640"), "{}", e.message);
}

/// Device `malloc`/`free`: a module that calls them loads (the heap is allocated then, at the
/// size `TG_LIMIT_MALLOC_HEAP_SIZE` had), the heap size is fixed afterwards, and on a GPU the
/// kernel's blocks hold what it writes (`malloc_device`: out[t] = in[t] * 120).
#[test]
fn malloc_heap_is_allocated_at_load_and_kernels_use_it() {
    let dev = common::device();
    let i = dev.info();
    let Some(bytes) = conformance_fixture(&dev, "malloc_device") else {
        return;
    };
    assert_eq!(dev.malloc_heap_size(), 8 << 20);
    for bad in [0u64, 1023, (1 << 36) + 1] {
        let e = dev.set_malloc_heap_size(bad).unwrap_err();
        assert_eq!(e.status, Status::InvalidArgument, "{bad}: {e:?}");
    }
    dev.set_malloc_heap_size(3 << 20).unwrap();
    let m = dev.load_module(&bytes).expect("malloc module");
    assert_eq!(dev.malloc_heap_size(), 3 << 20);
    let e = dev.set_malloc_heap_size(16 << 20).unwrap_err();
    assert_eq!(e.status, Status::InvalidArgument, "{e:?}");
    assert!(e.message.contains("cannot change"), "{}", e.message);
    dev.set_malloc_heap_size(3 << 20).unwrap();
    let k = m.kernel("malloc_device").unwrap();
    let input = dev.alloc(512, common::data_flags()).unwrap();
    let out = dev.alloc(512, common::data_flags()).unwrap();
    let vals: Vec<i32> = (0..128).map(|t| t * 37 - 2000).collect();
    // SAFETY: 512 CPU-mapped bytes, no GPU work yet.
    unsafe { std::ptr::copy_nonoverlapping(vals.as_ptr(), input.cpu_ptr() as *mut i32, 128) };
    let mut q = dev
        .create_queue(tegragpu::core::QueueKind::Compute)
        .unwrap();
    let p = common::Params::new().u64(input.gpu_va()).u64(out.gpu_va());
    let r = q
        .launch(&k, &common::cfg(2, 64), p.bytes())
        .and_then(|_| q.submit())
        .and_then(|_| q.synchronize(10 * common::SEC));
    if i.emulated {
        let e = r.expect_err("the emulator cannot run nvcc's code");
        assert_eq!(e.status, Status::DeviceFault, "{e:?}");
        return;
    }
    r.unwrap();
    // SAFETY: 512 CPU-mapped bytes; the queue has finished.
    let got = unsafe { std::slice::from_raw_parts(out.cpu_ptr() as *const i32, 128) };
    let want: Vec<i32> = vals.iter().map(|v| v * 120).collect();
    assert_eq!(got, &want[..]);
}

const REPO_ROOT_CHILD: &str = "TEGRAGPU_MODULE_LOAD_TEST_REPO_ROOT";

/// The fixtures are read from `$TEGRAGPU_REPO_ROOT` when it is set (test binaries carried to
/// another machine, scripts/device-run.sh): this binary, run from another directory with the
/// variable naming a copy of the repository's `tests/`, loads them from there; with the variable
/// naming a directory without them, the failure names that directory.
#[test]
fn fixtures_come_from_tegragpu_repo_root() {
    if std::env::var_os(REPO_ROOT_CHILD).is_some() {
        let want = std::env::var_os(common::REPO_ROOT_ENV).unwrap();
        let dev = common::device();
        assert!(common::fixture_path(&dev).starts_with(&want));
        common::fixtures(&dev);
        fixture("fatbin/warp.fatbin");
        return;
    }
    let root = std::env::temp_dir().join(format!("tegragpu-repo-root-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(&root).unwrap();
    let run = |repo: &std::path::Path| {
        std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "fixtures_come_from_tegragpu_repo_root",
                "--exact",
                "--nocapture",
                "--test-threads=1",
            ])
            .current_dir(&root)
            .env(REPO_ROOT_CHILD, "1")
            .env(common::REPO_ROOT_ENV, repo)
            .output()
            .unwrap()
    };
    let copy = root.join("repo");
    for d in ["tests/fixtures/cubin", "tests/fixtures/fatbin"] {
        std::fs::create_dir_all(copy.join(d)).unwrap();
        for e in std::fs::read_dir(common::repo_path(d)).unwrap() {
            let e = e.unwrap();
            std::fs::copy(e.path(), copy.join(d).join(e.file_name())).unwrap();
        }
    }
    let out = run(&copy);
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && text.contains("1 passed"), "{text}");
    let empty = root.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let out = run(&empty);
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    let _ = std::fs::remove_dir_all(&root);
    assert!(!out.status.success(), "{text}");
    assert!(
        text.contains(&format!(
            "reading {}",
            empty.join("tests/fixtures/cubin").display()
        )),
        "{text}"
    );
}

/// `Device::load_module_placing`: each `__managed__` variable is put where the caller says
/// (here: buffers of its own), `Module::global` answers that place, and the plain `__device__`
/// variable stays in the module; a placement that fails fails the load with its error.
#[test]
fn managed_variables_go_where_the_loader_places_them() {
    let dev = common::device();
    let i = dev.info();
    let bytes = fixture(&format!(
        "managed/managed.sm_{}{}.cubin",
        i.sm_major, i.sm_minor
    ));
    let mut bufs = Vec::new();
    let mut seen = Vec::new();
    let mut place = |v: &tegragpu::core::ManagedVariable| {
        seen.push((v.name.to_string(), v.size, v.init.to_vec()));
        let b = dev.alloc(v.size, tegragpu::core::MemFlags::default())?;
        let cpu = b.map_cpu()?;
        // SAFETY: the buffer holds at least `size` bytes.
        unsafe { std::ptr::copy_nonoverlapping(v.init.as_ptr(), cpu, v.init.len()) };
        let at = tegragpu::core::ManagedPlace {
            gpu_va: b.gpu_va(),
            cpu: cpu as usize,
        };
        bufs.push(b);
        Ok(at)
    };
    let m = dev
        .load_module_placing(&bytes, &mut place)
        .expect("load with placements");
    seen.sort();
    assert_eq!(
        seen,
        [
            ("m_counter".to_string(), 4, 10u32.to_le_bytes().to_vec()),
            (
                "m_table".to_string(),
                16,
                [1u32, 2, 3, 4]
                    .iter()
                    .flat_map(|v| v.to_le_bytes())
                    .collect()
            ),
            ("m_zero".to_string(), 4, vec![0; 4]),
        ]
    );
    let vas: Vec<u64> = bufs.iter().map(|b| b.gpu_va()).collect();
    for n in ["m_counter", "m_table", "m_zero"] {
        let (va, cpu, _) = m.global(n).expect(n);
        assert!(vas.contains(&va), "{n} at {va:#x}, placed at {vas:x?}");
        let b = bufs.iter().find(|b| b.gpu_va() == va).unwrap();
        assert_eq!(cpu, b.cpu_ptr(), "{n}: the CPU address of the placement");
    }
    let (c, cpu, _) = m.global("m_counter").unwrap();
    assert_eq!(unsafe { (cpu as *const u32).read() }, 10, "{c:#x}");
    let (pv, _, _) = m.global("d_plain").unwrap();
    assert!(!vas.contains(&pv), "d_plain stays in the module");
    // Plain loads keep the managed variables in the module.
    let plain = dev.load_module(&bytes).expect("plain load");
    let (pc, _, _) = plain.global("m_counter").unwrap();
    assert!(!vas.contains(&pc));
    // A failed placement fails the load with its error.
    let mut refuse = |_: &tegragpu::core::ManagedVariable| {
        Err(tegragpu::Error::new(Status::OutOfMemory, "no room here"))
    };
    let e = dev
        .load_module_placing(&bytes, &mut refuse)
        .err()
        .expect("refused placement");
    assert_eq!(e.status, Status::OutOfMemory);
    assert!(e.message.contains("no room here"), "{}", e.message);
}
