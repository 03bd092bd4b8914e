//! Target (a): `module_load`: arbitrary bytes → `tg_module_load` on the emulated Orin, then
//! every kernel and global of the module through the C API.

use super::*;

struct LoadCtx {
    dev: usize,
    queue: usize,
    scratch: usize,
    scratch_va: u64,
    scratch_cpu: *mut u8,
    sm: (u32, u32),
    /// Live handles and open descriptors with the context open and no module loaded.
    open: (usize, usize),
}

struct LoadState {
    ctx: Option<LoadCtx>,
    /// Counts with no context open (taken after a first open/close, so one-time process
    /// set-up is not counted).
    closed: Option<Counts>,
    runs: u64,
}

// SAFETY: scratch_cpu is the CPU mapping of the context's own buffer, used under LOAD's lock.
unsafe impl Send for LoadCtx {}

static LOAD: Mutex<LoadState> = Mutex::new(LoadState {
    ctx: None,
    closed: None,
    runs: 0,
});

impl LoadCtx {
    /// Open the device, its queue and scratch buffer; with `warm_up`, first run the fixtures
    /// through [`LoadCtx::probe`] so that lazily created state (PTX compiler lookup, emulator
    /// tables, allocator pools) exists before a baseline is taken.
    fn open(warm_up: bool) -> LoadCtx {
        let dev = open_emu();
        // SAFETY: all-zero is a valid tg_device_info.
        let mut info: tg_device_info = unsafe { std::mem::zeroed() };
        info.struct_size = std::mem::size_of::<tg_device_info>() as u32;
        assert_eq!(
            c!(tg_device_get_info(dev as *const tg_device, &mut info)),
            tg_status::TG_OK
        );
        let mut q = null_mut();
        assert_eq!(
            c!(tg_queue_create(
                dev as *const tg_device,
                tg_queue_kind_arg(0),
                &mut q
            )),
            tg_status::TG_OK,
            "{}",
            last_error()
        );
        let mut b = null_mut();
        assert_eq!(
            c!(tg_buf_alloc(
                dev as *const tg_device,
                64 << 10,
                TG_BUF_ZEROED,
                &mut b
            )),
            tg_status::TG_OK
        );
        let mut va = 0u64;
        assert_eq!(c!(tg_buf_gpu_address(b, &mut va)), tg_status::TG_OK);
        let mut cpu = null_mut::<c_void>();
        assert_eq!(c!(tg_buf_cpu_ptr(b, &mut cpu)), tg_status::TG_OK);
        let mut ctx = LoadCtx {
            dev,
            queue: q as usize,
            scratch: b as usize,
            scratch_va: va,
            scratch_cpu: cpu as *mut u8,
            sm: (info.sm_major, info.sm_minor),
            open: (0, 0),
        };
        if warm_up {
            for seed in [KERNELS_SM87, GLOBALS_SM87, WARP_PTX, WARP_FATBIN] {
                let faulted = ctx.probe(seed, seed == KERNELS_SM87);
                assert!(!faulted, "the fixture faulted the emulated device");
            }
        }
        ctx.open = (live_handles(), fd_count());
        ctx
    }

    fn close(self) {
        for (f, h) in [(0, self.queue), (1, self.scratch), (2, self.dev)] {
            let st = match f {
                0 => c!(tg_queue_destroy(h as *mut tg_queue)),
                1 => c!(tg_buf_free(h as *mut tg_buf)),
                _ => c!(tg_device_close(h as *mut tg_device)),
            };
            assert_eq!(st, tg_status::TG_OK, "closing the module_load context");
        }
    }

    /// Load `data`, query everything the module has, launch its kernels when `launch`, destroy
    /// it. Returns whether the device faulted (the context must then be reopened).
    fn probe(&mut self, data: &[u8], launch: bool) -> bool {
        let dev = self.dev as *const tg_device;
        let mut m = null_mut::<tg_module>();
        let st = c!(tg_module_load(
            dev,
            data.as_ptr() as *const c_void,
            data.len(),
            &mut m
        ));
        if st != tg_status::TG_OK {
            assert!(m.is_null(), "tg_module_load wrote *out on failure");
            assert!(
                !data.is_empty() || st == tg_status::TG_ERROR_INVALID_ARGUMENT,
                "empty input: {st:?}"
            );
            return device_faulted(self.dev);
        }
        assert!(!m.is_null());

        // Every name the module has, by three routes: the NOT_FOUND message of the C API, the
        // Rust-level parser on the same bytes, and the PTX entry names.
        let probe = c"\u{1}tegragpu-fuzz-probe";
        let mut k = null_mut::<tg_kernel>();
        let st = c!(tg_module_get_kernel(m, probe.as_ptr(), &mut k));
        assert_eq!(st, tg_status::TG_ERROR_NOT_FOUND, "probe kernel name");
        assert!(k.is_null());
        let mut kernel_names = listed_names(&last_error());
        let mut gpu = 0u64;
        let st = c!(tg_module_get_global(
            m,
            probe.as_ptr(),
            &mut gpu,
            null_mut(),
            null_mut()
        ));
        assert_eq!(st, tg_status::TG_ERROR_NOT_FOUND, "probe global name");
        assert_eq!(gpu, 0, "tg_module_get_global wrote *gpu_address on failure");
        let mut global_names = listed_names(&last_error());
        let parsed = parsed_names(data, self.sm);
        let must_find: Vec<String> = match &parsed {
            Some((ks, gs)) => {
                kernel_names.extend(ks.iter().cloned());
                global_names.extend(gs.iter().cloned());
                ks.iter().chain(gs.iter()).cloned().collect()
            }
            None => Vec::new(),
        };
        kernel_names.extend(ptx_entries(data));
        kernel_names.extend(FIXTURE_KERNELS.iter().take(2).map(|s| s.to_string()));
        global_names.extend(GLOBALS_VARS.iter().take(1).map(|s| s.to_string()));
        kernel_names.sort();
        kernel_names.dedup();
        kernel_names.truncate(128);
        global_names.sort();
        global_names.dedup();
        global_names.truncate(128);

        let mut kernels = Vec::new();
        for name in &kernel_names {
            let Some(cname) = cstring(name) else { continue };
            let mut k = null_mut::<tg_kernel>();
            let st = c!(tg_module_get_kernel(m, cname.as_ptr(), &mut k));
            if st == tg_status::TG_OK {
                assert!(!k.is_null());
                // Texture kernels (tex_fetch_*) take a texture object, which the parameter
                // filling below cannot make: they are probed but not launched.
                kernels.push((k as usize, !name.starts_with("tex_")));
            } else {
                assert!(k.is_null(), "tg_module_get_kernel wrote *out on failure");
                assert!(
                    st != tg_status::TG_ERROR_NOT_FOUND || !must_find.contains(name),
                    "kernel {name:?} parsed from the input is NOT_FOUND in the module: {}",
                    last_error()
                );
            }
        }
        for name in &global_names {
            let Some(cname) = cstring(name) else { continue };
            let (mut gpu, mut cpu, mut size) = (0u64, null_mut::<c_void>(), 0u64);
            let st = c!(tg_module_get_global(
                m,
                cname.as_ptr(),
                &mut gpu,
                &mut cpu,
                &mut size
            ));
            if st == tg_status::TG_OK {
                assert!(
                    !cpu.is_null() && gpu != 0,
                    "{name}: gpu {gpu:#x} cpu {cpu:?}"
                );
                if size > 0 {
                    // The variable's memory must be mapped for `size` bytes: touch both ends.
                    let p = cpu as *mut u8;
                    // SAFETY: tg_module_get_global promises `size` bytes at `cpu`.
                    unsafe {
                        let first = std::ptr::read_volatile(p);
                        std::ptr::write_volatile(p, first);
                        let last = p.add(size as usize - 1);
                        std::ptr::write_volatile(last, std::ptr::read_volatile(last));
                    }
                }
                // NULL out-pointers are allowed.
                let st = c!(tg_module_get_global(
                    m,
                    cname.as_ptr(),
                    null_mut(),
                    null_mut(),
                    null_mut()
                ));
                assert_eq!(st, tg_status::TG_OK);
            } else {
                assert!(
                    (gpu, cpu, size) == (0, null_mut(), 0),
                    "tg_module_get_global wrote an out-parameter on failure"
                );
                assert!(
                    st != tg_status::TG_ERROR_NOT_FOUND || !must_find.contains(name),
                    "global {name:?} parsed from the input is NOT_FOUND in the module: {}",
                    last_error()
                );
            }
        }
        let st = c!(tg_module_get_global(
            m,
            null(),
            null_mut(),
            null_mut(),
            null_mut()
        ));
        assert_eq!(st, tg_status::TG_ERROR_NULL_POINTER);

        // The module handle goes first: the kernels keep its code loaded.
        assert_eq!(c!(tg_module_destroy(m)), tg_status::TG_OK);
        for &(k, launchable) in &kernels {
            // One launch at a time, each on a fresh scratch buffer of 0x01 bytes: a pointer
            // parameter never reads 0 (fixture kernels such as spin_until run until a flag
            // they point to is non-zero).
            // SAFETY: the scratch buffer is 64 KiB, CPU-mapped, and no launch is in flight.
            unsafe { std::ptr::write_bytes(self.scratch_cpu, 1, 64 << 10) };
            if self.probe_kernel(k, launch && launchable) {
                c!(tg_queue_submit(self.queue as *const tg_queue));
                let st = c!(tg_queue_synchronize(self.queue as *const tg_queue, HANG_NS));
                assert!(
                    st != tg_status::TG_ERROR_TIMEOUT,
                    "HANG: a launch did not finish in {} s: {}",
                    HANG_NS / 1_000_000_000,
                    last_error()
                );
                if st != tg_status::TG_OK {
                    break; // the device faulted: nothing more runs on it
                }
            }
        }
        for &(k, _) in &kernels {
            assert_eq!(c!(tg_kernel_destroy(k as *mut tg_kernel)), tg_status::TG_OK);
        }
        device_faulted(self.dev)
    }

    /// Attribute, parameter and occupancy queries of one kernel, and (when `launch`) one small
    /// launch with pointer parameters aimed at the scratch buffer. Returns whether it launched.
    fn probe_kernel(&mut self, k: usize, launch: bool) -> bool {
        let kp = k as *const tg_kernel;
        const SZ: usize = std::mem::size_of::<tg_kernel_attributes>();
        // struct_size too small: refused, nothing written.
        for small in [0u32, 4, SZ as u32 - 4] {
            let mut raw = [0xA5u8; SZ + 64];
            raw[..4].copy_from_slice(&small.to_le_bytes());
            let st = c!(tg_kernel_get_attributes(
                kp,
                raw.as_mut_ptr() as *mut tg_kernel_attributes
            ));
            assert_eq!(
                st,
                tg_status::TG_ERROR_INVALID_ARGUMENT,
                "struct_size {small}"
            );
            assert!(
                raw[4..].iter().all(|&b| b == 0xA5),
                "tg_kernel_get_attributes wrote into a struct it refused"
            );
        }
        // A larger struct_size: only sizeof(tg_kernel_attributes) bytes are written.
        let mut raw = [0xA5u8; SZ + 64];
        raw[..4].copy_from_slice(&(SZ as u32 + 64).to_le_bytes());
        let st = c!(tg_kernel_get_attributes(
            kp,
            raw.as_mut_ptr() as *mut tg_kernel_attributes
        ));
        assert_eq!(st, tg_status::TG_OK);
        assert!(
            raw[SZ..].iter().all(|&b| b == 0xA5),
            "tg_kernel_get_attributes wrote past sizeof(tg_kernel_attributes)"
        );
        // SAFETY: the library filled a whole tg_kernel_attributes.
        let a: tg_kernel_attributes = unsafe { std::ptr::read_unaligned(raw.as_ptr() as *const _) };
        assert_eq!(a.struct_size as usize, SZ);
        assert!(
            a.max_threads_per_block <= 1024,
            "max_threads_per_block {}",
            a.max_threads_per_block
        );

        let mut params = Vec::new();
        for i in 0..a.num_params.min(4096) {
            let (mut off, mut size) = (0u32, 0u32);
            let st = c!(tg_kernel_get_param(kp, i, &mut off, &mut size));
            assert_eq!(st, tg_status::TG_OK, "param {i} of {}", a.num_params);
            assert!(
                u64::from(off) + u64::from(size) <= u64::from(a.param_bytes),
                "param {i} at {off}+{size} outside the {}-byte parameter block",
                a.param_bytes
            );
            params.push((off, size));
        }
        for i in [a.num_params, u32::MAX] {
            let (mut off, mut size) = (7u32, 7u32);
            let st = c!(tg_kernel_get_param(kp, i, &mut off, &mut size));
            assert_eq!(st, tg_status::TG_ERROR_INVALID_ARGUMENT, "param index {i}");
            assert_eq!((off, size), (7, 7), "out-parameters written on failure");
        }
        let mt = a.max_threads_per_block;
        for t in [0u32, 1, 32, mt, mt.saturating_add(1), u32::MAX] {
            for d in [
                0u32,
                a.max_dynamic_shared_bytes,
                a.max_dynamic_shared_bytes.saturating_add(1),
                u32::MAX,
            ] {
                let mut n = 0xDEADu32;
                let st = c!(tg_kernel_max_active_blocks(kp, t, d, &mut n));
                if t == 0 || t > mt {
                    assert_eq!(
                        st,
                        tg_status::TG_ERROR_INVALID_ARGUMENT,
                        "block_threads {t}"
                    );
                    assert_eq!(n, 0xDEAD);
                } else if st == tg_status::TG_OK {
                    if d > a.max_dynamic_shared_bytes {
                        assert_eq!(n, 0, "occupancy above max_dynamic_shared_bytes");
                    }
                } else {
                    assert_eq!(n, 0xDEAD);
                }
            }
        }
        if !launch || mt == 0 || a.param_bytes > 64 << 10 {
            return false;
        }
        let mut block = vec![0u8; a.param_bytes as usize];
        for &(off, size) in &params {
            let (o, s) = (off as usize, size as usize);
            if s == 8 && o % 8 == 0 {
                block[o..o + 8].copy_from_slice(&self.scratch_va.to_le_bytes());
            } else if s == 4 {
                block[o..o + 4].copy_from_slice(&1u32.to_le_bytes());
            }
        }
        let threads = mt.min(32);
        let cfg = tg_launch_config {
            struct_size: std::mem::size_of::<tg_launch_config>() as u32,
            grid: [1, 1, 1],
            block: [threads, 1, 1],
            dynamic_shared_bytes: a.max_dynamic_shared_bytes.min(4 * threads),
            flags: 0,
            cluster: [0; 3],
        };
        let st = c!(tg_launch(
            self.queue as *const tg_queue,
            kp,
            &cfg,
            block.as_ptr() as *const c_void,
            block.len()
        ));
        st == tg_status::TG_OK
    }
}

/// Target (a): `data` → `tg_module_load` on the emulated Orin, then every kernel name found
/// (`tg_module_get_kernel`, `tg_kernel_*` queries, one small launch) and every global
/// (`tg_module_get_global`). Checks the invariants of the module comment after each input.
pub fn module_load(data: &[u8]) {
    let mut st = LOAD.lock().unwrap_or_else(|e| e.into_inner());
    if st.closed.is_none() {
        // First call: one open/close cycle so that process-wide one-time set-up is done.
        LoadCtx::open(true).close();
        st.closed = Some(counts());
    }
    if st.ctx.is_none() {
        st.ctx = Some(LoadCtx::open(false));
    }
    st.runs += 1;
    let ctx = st.ctx.as_mut().expect("context");
    let faulted = ctx.probe(data, true);
    // Handles and descriptors come back at once. Mappings may not: the emulated kernel keeps
    // memory unmapped while a channel is attached for a 1 s grace period (emu/kernel/vm.rs,
    // RETIRE_GRACE), as in-flight GPU accesses could still touch it; they are checked with the
    // device closed below. With `TEGRAGPU_EMU_MEMFD_BACKING` (valgrind, qemu-user) each buffer's
    // pages live in a memfd held as long as the memory is, grace period included: descriptors
    // then come back with the mappings, and are checked with them.
    let now = (live_handles(), fd_count());
    let fds_back_now = !memfd_backing();
    assert!(
        now.0 == ctx.open.0 && (now.1 == ctx.open.1 || !fds_back_now),
        "LEAK after destroying the module: (handles, fds) {now:?}, baseline {:?}; open fds: {:#?}",
        ctx.open,
        open_fds()
    );
    if faulted || st.runs % RECYCLE_RUNS == 0 {
        // After a fault (expected for broken code) the device is unusable: start over. And
        // every RECYCLE_RUNS inputs: close the device, which releases everything, so that the
        // process counts can be compared exactly.
        st.ctx.take().expect("context").close();
        let what = if faulted {
            "closing a faulted device"
        } else {
            "closing the device"
        };
        assert_counts(what, st.closed.as_ref().expect("baseline"));
    }
}

/// How many module_load inputs share one device before it is closed for an exact leak check.
const RECYCLE_RUNS: u64 = 256;

/// Close the module_load target's device (the smoke test does this before the next target).
pub fn module_load_reset() {
    let mut st = LOAD.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(ctx) = st.ctx.take() {
        ctx.close();
        if let Some(closed) = &st.closed {
            assert_counts("closing the module_load device", closed);
        }
    }
}
